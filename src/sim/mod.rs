//! Simulation: stand-ins for the systems the sentinel talks to, for tests and `sentinel simulate`.
//!
//! - [`api`]: a fake HyperFleet API over HTTP, serving an in-memory fleet that aggregates adapter
//!   reports, with scripted faults.
//! - [`clock`]: the wall clock, or a hand-moved one for tests.

pub mod api;
pub mod clock;
