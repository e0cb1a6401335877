//! The retry policy of `opentelemetry-otlp` (which this exporter replaces): what a failed
//! attempt allows ([`Next`]) and the loop that retries within the export timeout. A server's
//! requested delay that does not fit in the timeout ends the request, and is handed back for
//! the whole exporter to honour (`queue`).
//!
//! Invariant: no attempt starts past the timeout; nothing is logged here (the export thread
//! reports what a request lost).

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

/// How a request that did not succeed ended: its last error, and the delay the server asked
/// for when it ended waiting on one.
#[derive(Debug)]
pub(super) struct GaveUp<E> {
    pub(super) error: E,
    pub(super) throttle: Option<Duration>,
}

/// Runs `attempt` until it succeeds, says stop, retries run out or `deadline` passes.
pub(super) async fn with_retries<T, E, F, Fut>(
    deadline: Duration,
    classify: impl Fn(&E) -> Next,
    mut attempt: F,
) -> Result<T, GaveUp<E>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    let mut tries = 0;
    let mut delay = Retry::INITIAL;
    let mut cap = Retry::MAX_DELAY;
    loop {
        let error = match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let next = classify(&error);
        let throttle = match next {
            Next::Throttled(asked) => Some(asked),
            _ => None,
        };
        let gave_up = |error| Err(GaveUp { error, throttle });
        if next == Next::Stop || tries >= Retry::MAX_RETRIES || start.elapsed() >= deadline {
            return gave_up(error);
        }
        tries += 1;
        if let Some(asked) = throttle {
            if asked > Retry::MAX_THROTTLE {
                return gave_up(error);
            }
            if asked > cap {
                cap = Retry::MAX_THROTTLE;
            }
            delay = delay.max(asked);
        }
        let jitter = Duration::from_millis(fastrand::u64(..=Retry::MAX_JITTER_MS));
        let sleep = delay.saturating_add(jitter).min(cap);
        if sleep >= deadline.saturating_sub(start.elapsed()) {
            return gave_up(error);
        }
        tokio::time::sleep(sleep).await;
        delay = delay.saturating_mul(2).min(cap);
    }
}
