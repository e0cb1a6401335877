//! The rigs the daemon tests share with the broker and simulation tests (tests/daemon/): the
//! tests' own RabbitMQ connection, a TCP proxy in front of it, Google's Pub/Sub emulator and
//! OTLP trace receivers. Each talks to the real thing over the wire and shares no code with the
//! sentinel side under test.

pub mod otlp;
pub mod otlp_tls;
pub mod proxy;
pub mod pubsub;
pub mod rig;
