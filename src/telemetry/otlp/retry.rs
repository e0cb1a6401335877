//! The retry policy of `opentelemetry-otlp` (which this exporter replaces): what a failed
//! attempt allows ([`Next`]) and the loop that retries within the export timeout.
//!
//! Invariant: no attempt starts past the timeout.

use std::time::{Duration, Instant};

/// Retry policy of `opentelemetry-otlp` (its `RetryPolicy::recommended`).
pub(super) struct Retry;

impl Retry {
    const MAX_RETRIES: usize = 3;
    const INITIAL: Duration = Duration::from_millis(100);
    const MAX_DELAY: Duration = Duration::from_millis(1600);
    const MAX_JITTER_MS: u64 = 100;
    /// The longest delay a server may ask for.
    const MAX_THROTTLE: Duration = Duration::from_secs(30);
}

/// What a failed attempt allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Next {
    Stop,
    Retry,
    /// Retry after the server's delay.
    Throttled(Duration),
}

/// Runs `attempt` until it succeeds, says stop, retries run out or `deadline` passes; logs
/// what `opentelemetry-otlp` logged (target `opentelemetry-otlp`, WARN) when it gives up.
pub(super) async fn with_retries<T, E, F, Fut>(
    deadline: Duration,
    operation: &'static str,
    classify: impl Fn(&E) -> Next,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    let mut tries = 0;
    let mut delay = Retry::INITIAL;
    let mut cap = Retry::MAX_DELAY;
    loop {
        let err = match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if start.elapsed() >= deadline {
            tracing::warn!(name: "Export.Failed.DeadlineExceeded", target: "opentelemetry-otlp",
                name = "Export.Failed.DeadlineExceeded", operation, retries = tries,
                elapsed_ms = start.elapsed().as_millis(),
                message = "OTLP export deadline exceeded - telemetry data will be lost");
            return Err(err);
        }
        let next = classify(&err);
        if next == Next::Stop {
            tracing::warn!(name: "Export.Failed.NonRetryable", target: "opentelemetry-otlp",
                name = "Export.Failed.NonRetryable", operation,
                message = "OTLP export failed with non-retryable error - telemetry data will be lost");
            return Err(err);
        }
        if tries >= Retry::MAX_RETRIES {
            tracing::warn!(name: "Export.Failed.Exhausted", target: "opentelemetry-otlp",
                name = "Export.Failed.Exhausted", operation, retries = tries,
                message = "OTLP export exhausted retries - telemetry data will be lost");
            return Err(err);
        }
        tries += 1;
        if let Next::Throttled(asked) = next {
            let asked = asked.min(Retry::MAX_THROTTLE);
            if asked > cap {
                cap = Retry::MAX_THROTTLE;
            }
            if !asked.is_zero() {
                delay = delay.max(asked);
            }
        }
        let jitter = Duration::from_millis(fastrand::u64(..=Retry::MAX_JITTER_MS));
        let sleep = delay.saturating_add(jitter).min(cap);
        if sleep >= deadline.saturating_sub(start.elapsed()) {
            let message = match next {
                Next::Throttled(_) => {
                    "OTLP export deadline exceeded during throttle - telemetry data will be lost"
                }
                _ => "OTLP export deadline exceeded during backoff - telemetry data will be lost",
            };
            tracing::warn!(name: "Export.Failed.DeadlineExceeded", target: "opentelemetry-otlp",
                name = "Export.Failed.DeadlineExceeded", operation, retries = tries, message);
            return Err(err);
        }
        tokio::time::sleep(sleep).await;
        delay = delay.saturating_mul(2).min(cap);
    }
}
