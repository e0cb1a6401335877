//! The daemon: configuration, the HyperFleet API client, the broker, the poll loop, metrics and
//! health endpoints.

pub mod api;
pub mod broker;
pub mod config;
pub mod event;
pub mod health;
pub mod logging;
pub mod metrics;
pub mod runtime;
pub mod telemetry;
