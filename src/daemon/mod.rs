//! The daemon: configuration, the HyperFleet API client, the broker, the poll loop, metrics and
//! health endpoints.

pub mod api;
pub mod broker;
pub mod config;
pub mod event;
pub mod health;
pub mod logging;
pub mod metrics;
pub mod query;
pub mod runtime;
pub mod spans;
pub mod telemetry;
pub mod textfmt;

/// The crate version: `--version`, the User-Agent, the `build_info` metric, the log lines and
/// the telemetry resource.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `sentinel version`: the Go sentinel's three lines (`Version:`, `Commit:`, `Build Date:`,
/// values aligned as Go prints them), then which implementation this is.
pub fn version_text() -> String {
    format!(
        "Version:    {VERSION}\nCommit:     {}\nBuild Date: {}\nImplementation: sentinel (Rust)",
        env!("SENTINEL_COMMIT"),
        env!("SENTINEL_BUILD_DATE")
    )
}
