//! The simulation's clock: the wall clock for `sentinel simulate`, a hand-moved clock for tests,
//! so the fake API's timestamps, the adapters' `observed_time` and the sentinel's `now` can all
//! come from one source.
//!
//! Invariant: a [`ManualClock`] only moves when told to, so a test that drives cycles by hand
//! decides exactly how much time passes between them.

use crate::cel::time::Timestamp;
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use std::fmt::Debug;
use std::sync::Mutex;

/// A source of the current time.
pub trait Clock: Send + Sync + Debug {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that stands still until [`ManualClock::advance`] or [`ManualClock::set`] moves it.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        let by = TimeDelta::from_std(by).unwrap_or(TimeDelta::MAX);
        let mut now = self.lock();
        *now = now.checked_add_signed(by).unwrap_or(*now);
    }

    /// Puts the clock at `to`.
    pub fn set(&self, to: DateTime<Utc>) {
        *self.lock() = to;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // The guarded value is a plain timestamp, valid even after a panic elsewhere.
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

/// A time as the API writes it (Go's `time.RFC3339Nano` in UTC): `Z`, and fractional seconds
/// only when present, without trailing zeros.
pub fn format_time(time: DateTime<Utc>) -> String {
    let mut text = time.to_rfc3339_opts(SecondsFormat::Nanos, true);
    text.pop(); // the `Z`
    let kept = text.trim_end_matches('0').trim_end_matches('.').len();
    text.truncate(kept);
    text.push('Z');
    text
}

/// Parses an RFC 3339 time as the API reads it.
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A time as a CEL timestamp, for the sentinel's `now`.
pub fn to_timestamp(time: DateTime<Utc>) -> Timestamp {
    let nanos = time.timestamp_nanos_opt().map_or(0, i128::from);
    Timestamp::from_nanos(nanos).unwrap_or_else(|_| crate::daemon::runtime::wall_clock())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = parse_time("2026-01-01T00:00:00Z").unwrap();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(std::time::Duration::from_millis(1500));
        assert_eq!(format_time(clock.now()), "2026-01-01T00:00:01.5Z");
        // Go's RFC3339Nano: no fraction when whole, no trailing zeros otherwise.
        assert_eq!(format_time(start), "2026-01-01T00:00:00Z");
        for text in ["2026-01-01T00:00:00.12Z", "2026-01-01T00:00:00.000000001Z"] {
            assert_eq!(format_time(parse_time(text).unwrap()), text);
        }
        assert_eq!(to_timestamp(clock.now()).nanos(), 1_767_225_601_500_000_000);
    }
}
