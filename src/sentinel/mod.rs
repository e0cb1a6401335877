//! The daemon: configuration, the HyperFleet API client, the broker, the poll loop, metrics and
//! health endpoints.

pub mod broker;
pub mod event;
