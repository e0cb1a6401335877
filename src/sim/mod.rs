//! Simulation: stand-ins for the systems the sentinel talks to, for tests and `sentinel simulate`.
//!
//! - [`api`]: a fake HyperFleet API over HTTP, serving an in-memory fleet with scripted faults.

pub mod api;
