//! The daemon's top floor: the poll loop (`runtime`), what it asks the API for (`plan`, decided
//! once; `query`, each cycle, with what the API accepts) and how a cycle lists (`listing`), the
//! configuration, the health endpoints, metrics and logging. The rooms it drives
//! (`crate::api`, `crate::broker`, `crate::telemetry`) sit on the floors beneath it.

pub mod config;
pub mod health;
pub mod listing;
pub mod logging;
pub mod metrics;
pub mod plan;
pub mod query;
pub mod runtime;

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
