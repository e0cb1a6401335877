//! The rigs the daemon tests share with the broker and simulation tests (tests/daemon/): the
//! tests' own RabbitMQ connection, a TCP proxy in front of it, a fake AMQP broker for the faults
//! the real one will not make on demand, Google's Pub/Sub emulator, OTLP trace receivers, and
//! TLS (certificates made in the test, a terminator in front of a plain server). Each talks over
//! the wire and shares no code with the sentinel side under test.

pub mod fake_amqp;
pub mod otlp;
pub mod proxy;
pub mod pubsub;
pub mod rig;
pub mod tls;

/// A child process killed (and reaped) however the test that spawned it ends.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
