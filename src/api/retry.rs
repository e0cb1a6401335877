//! Exponential backoff for retriable request failures, with the Go sentinel's parameters.
//!
//! Invariant: only errors whose [`ApiError::is_retriable`] holds are retried, and no retry starts
//! once the next wait would end past `max_elapsed` since the first attempt. A response's
//! `Retry-After` ([`ApiError::retry_after`]) replaces the backoff's wait for that retry, within
//! the same budget: a server asking for longer than the budget allows is not retried.

use super::error::ApiError;
use std::future::Future;
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
        let secs = if secs.is_finite() { secs.min(max) } else { max };
        // `max_interval` may be beyond what an f64 of seconds converts back exactly.
        Duration::try_from_secs_f64(secs).unwrap_or(self.max_interval)
    }

    /// `wait` scaled by a random factor in `[1−jitter, 1+jitter]`.
    fn jittered(&self, wait: Duration) -> Duration {
        let jitter = self.jitter.clamp(0.0, 1.0);
        let unit = fastrand::f64();
        let factor = 1.0 - jitter + 2.0 * jitter * unit;
        // A NaN jitter or a product past `Duration::MAX` keeps the wait as it is.
        Duration::try_from_secs_f64(wait.as_secs_f64() * factor).unwrap_or(wait)
    }

    /// The wait before retry number `retry` (0 for the first retry) of a failure that came
    /// `elapsed` after the first attempt: the server's `asked` wait (`Retry-After`) if it gave
    /// one, else the jittered backoff interval. `None` when the retry would start past
    /// `max_elapsed`: give up. Total on every input (a `Retry-After` of `u64::MAX` seconds
    /// after a slow response is a `None`, not an overflow).
    pub fn next_wait(
        &self,
        retry: u32,
        asked: Option<Duration>,
        elapsed: Duration,
    ) -> Option<Duration> {
        let wait = asked.unwrap_or_else(|| self.jittered(self.interval(retry)));
        let start = elapsed.checked_add(wait)?;
        (start <= self.max_elapsed).then_some(wait)
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
            let Some(wait) = self.next_wait(retry, err.retry_after(), start.elapsed()) else {
                return Err(err);
            };
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
    fn next_wait_is_total_and_keeps_the_budget() {
        let b = Backoff::default();
        let secs = Duration::from_secs;
        // A huge Retry-After after a slow first response used to overflow `elapsed + wait`.
        assert_eq!(b.next_wait(0, Some(Duration::MAX), secs(2)), None);
        assert_eq!(b.next_wait(3, Some(secs(u64::MAX)), Duration::MAX), None);
        assert_eq!(b.next_wait(0, Some(secs(5)), secs(25)), Some(secs(5)));
        assert_eq!(b.next_wait(0, Some(secs(5)), secs(26)), None);
        let wait = b.next_wait(1, None, secs(1)).unwrap().as_secs_f64();
        assert!((0.9..=1.1).contains(&wait), "{wait}");
        assert_eq!(b.next_wait(u32::MAX, None, Duration::MAX), None);
        // Parameters at their extremes give the cap or nothing, never a panic.
        let wild = Backoff {
            initial: Duration::MAX,
            multiplier: f64::NAN,
            max_interval: Duration::MAX,
            jitter: f64::NAN,
            max_elapsed: Duration::MAX,
        };
        assert_eq!(wild.next_wait(0, None, Duration::ZERO), Some(Duration::MAX));
        assert_eq!(wild.next_wait(9, None, secs(1)), None);
        let zero = Backoff {
            initial: Duration::ZERO,
            multiplier: f64::INFINITY,
            ..Backoff::default()
        };
        assert!(zero.next_wait(70, None, Duration::ZERO).is_some());
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
