//! Exponential backoff for retriable request failures, with the Go sentinel's parameters.
//!
//! Invariant: only errors whose [`ApiError::is_retriable`] holds are retried, and no retry starts
//! once the next wait would end past `max_elapsed` since the first attempt. A response's
//! `Retry-After` ([`ApiError::retry_after`]) replaces the backoff's wait for that retry, within
//! the same budget: a server asking for longer than the budget allows is not retried.

use super::error::ApiError;
use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

/// Backoff parameters. The defaults are the Go sentinel's: 500 ms initial wait, doubling, at most
/// 8 s between attempts, ±10 % jitter, give up 30 s after the first attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub initial: Duration,
    /// The factor each wait grows by.
    pub multiplier: f64,
    /// The longest single wait.
    pub max_interval: Duration,
    /// The relative jitter: a wait `w` becomes uniform in `[w·(1−j), w·(1+j)]`.
    pub jitter: f64,
    /// No retry starts once this much time would have passed since the first attempt.
    pub max_elapsed: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            initial: Duration::from_millis(500),
            multiplier: 2.0,
            max_interval: Duration::from_secs(8),
            jitter: 0.1,
            max_elapsed: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The wait before retry number `retry` (0 for the first retry), jitter not applied.
    fn interval(&self, retry: u32) -> Duration {
        let factor = self.multiplier.max(1.0).powi(retry.min(64) as i32);
        let secs = self.initial.as_secs_f64() * factor;
        let max = self.max_interval.as_secs_f64();
        Duration::from_secs_f64(if secs.is_finite() { secs.min(max) } else { max })
    }

    /// `wait` scaled by a random factor in `[1−jitter, 1+jitter]`.
    fn jittered(&self, wait: Duration) -> Duration {
        let jitter = self.jitter.clamp(0.0, 1.0);
        // RandomState is seeded randomly per instance: enough randomness for spreading retries,
        // without a dependency on a random number crate.
        let unit = RandomState::new().build_hasher().finish() as f64 / u64::MAX as f64;
        wait.mul_f64(1.0 - jitter + 2.0 * jitter * unit)
    }

    /// Runs `attempt` until it succeeds, fails with a non-retriable error, or the elapsed-time
    /// budget is spent; returns the last result. `on_retry` is told of each retried failure.
    pub(crate) async fn retry<T, F, Fut>(
        &self,
        mut attempt: F,
        mut on_retry: impl FnMut(u32, &ApiError, Duration),
    ) -> Result<T, ApiError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let start = Instant::now();
        let mut retry = 0;
        loop {
            let err = match attempt().await {
                Ok(value) => return Ok(value),
                Err(err) if !err.is_retriable() => return Err(err),
                Err(err) => err,
            };
            let wait = match err.retry_after() {
                Some(asked) => asked,
                None => self.jittered(self.interval(retry)),
            };
            if start.elapsed() + wait > self.max_elapsed {
                return Err(err);
            }
            on_retry(retry + 1, &err, wait);
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_double_up_to_the_cap() {
        let b = Backoff::default();
        let secs: Vec<f64> = (0..7).map(|i| b.interval(i).as_secs_f64()).collect();
        assert_eq!(secs, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(b.interval(u32::MAX), Duration::from_secs(8));
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        let b = Backoff::default();
        for _ in 0..100 {
            let w = b.jittered(Duration::from_secs(1)).as_secs_f64();
            assert!((0.9..=1.1).contains(&w), "{w}");
        }
    }
}
