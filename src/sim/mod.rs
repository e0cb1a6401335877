//! Simulation: stand-ins for the systems the sentinel talks to, for tests and `sentinel simulate`.
//!
//! - [`api`]: a fake HyperFleet API over HTTP, serving an in-memory fleet that aggregates adapter
//!   reports, with scripted faults.
//! - [`clock`]: the wall clock, or a hand-moved one for tests.
//! - [`adapters`]: simulated adapters answering the sentinel's events with status reports.
//! - [`broker`]: the adapters' queues, in process or on RabbitMQ.
//! - [`simulation`]: all of it in one process around the real sentinel loop, driven by hand
//!   (tests) or in real time by [`run`] (`sentinel simulate`).

pub mod adapters;
pub mod api;
pub mod broker;
pub mod clock;
pub mod run;
pub mod simulation;
