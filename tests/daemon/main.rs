//! The daemon's tests, one binary, against real parts only: the real RabbitMQ on 127.0.0.1:5672
//! (guest/guest), Google's Pub/Sub emulator (started by the tests), the fake HyperFleet API
//! (`sentinel::sim::api`) on 127.0.0.1:0, and the real `sentinel` binary with real signals.
//! RabbitMQ, the emulator or Prometheus missing fails the tests loudly; nothing is skipped.
//!
//! Module by module:
//! - [`config`]: the configuration (defaults, validation errors, precedence, dumps, limits) and
//!   the regression runner over tests/data/regressions/.
//! - [`api`]: the HyperFleet API client (paging, search, tokens, retries, the probe).
//! - [`broker`]: publishing to RabbitMQ and Pub/Sub, and the broker.yaml table.
//! - [`broker_faults`]: the RabbitMQ publisher against a fake broker's faults and alarms.
//! - [`cycle`]: in-process cycles of a `Daemon` (events, skips, metrics, logs, outages).
//! - [`health`]: health, readiness and metrics over HTTP.
//! - [`hostile`]: hostile peers, files and environment: invalid UTF-8 in an item, endless
//!   listings, held health connections, FIFO and oversized files, AMQP URL and `OTEL_BSP_*`
//!   bounds, masked passwords.
//! - [`process`]: `sentinel serve` as a process, its signals, startup failures and flags.
//! - [`chart`]: the binary run as the Go chart's Deployment runs it.
//! - [`docs`]: the operator docs query only exported metrics, and their claims match the code.
//! - [`prometheus`]: the alert rules under promtool, and the rules and dashboard in a real
//!   Prometheus scraping a live `sentinel serve` (Debian's `prometheus` package, required).
//! - [`on_pubsub`]: the daemon on Google Pub/Sub, in process and as a process.
//! - [`traces`]: OpenTelemetry spans, in process and from `sentinel serve`.
//! - [`simulate`]: the real loop against the fake API with simulated adapters.
//! - [`filters`]: server-side filters and projection never miss what the rules publish.
//! - [`fail_safe`]: and fail safe against an API that refuses or ignores them, disagrees with
//!   the rules, or lists a set that shrinks under it; full sweeps that cannot be skipped.
//! - [`rollout`]: `sentinel diff` and `sentinel shards` against the fake API.
//!
//! [`harness`] holds what they share (fake API, in-process daemons, processes, logs, metrics);
//! tests/common/ the rigs that speak to RabbitMQ, the emulator and OTLP.

#[path = "../common/mod.rs"]
mod common;
mod harness;

mod api;
mod broker;
mod broker_faults;
mod chart;
mod config;
mod cycle;
mod docs;
mod fail_safe;
mod filters;
mod health;
mod hostile;
mod on_pubsub;
mod process;
mod projection;
mod prometheus;
mod rollout;
mod simulate;
mod traces;
