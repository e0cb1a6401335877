//! The daemon: configuration, the HyperFleet API client, the broker, the poll loop, metrics and
//! health endpoints.

pub mod config;
pub mod health;
pub mod logging;
pub mod metrics;
