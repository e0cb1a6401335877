//! Timestamps and durations: parsing, formatting, checked arithmetic and accessors.
//!
//! Invariant: a [`Timestamp`] is always within 0001-01-01T00:00:00Z..=9999-12-31T23:59:59.999999999Z
//! and a [`Duration`] within ±10000 years; every constructor and operation that could leave those
//! ranges returns an `Overflow` error instead.

use super::value::EvalError;

/// A point in time: nanoseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    nanos: i128,
}

/// A signed span of time in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    nanos: i128,
}

impl Timestamp {
    /// Nanoseconds since the Unix epoch.
    pub fn nanos(self) -> i128 {
        self.nanos
    }
}

impl Duration {
    /// Nanoseconds.
    pub fn nanos(self) -> i128 {
        self.nanos
    }
}

// ---------------------------------------------------------------------------------------------
// Interface stubs: each returns an "unimplemented" error until filled in.
// ---------------------------------------------------------------------------------------------

fn pending(what: &str) -> EvalError {
    EvalError::invalid(format!("{what} is not implemented yet"))
}

impl Timestamp {
    /// A timestamp from nanoseconds since the epoch; `Overflow` outside year 1..=9999.
    pub fn from_nanos(nanos: i128) -> Result<Timestamp, EvalError> {
        Ok(Timestamp { nanos })
    }
}

impl Duration {
    /// A duration from nanoseconds; `Overflow` beyond ±10000 years.
    pub fn from_nanos(nanos: i128) -> Result<Duration, EvalError> {
        Ok(Duration { nanos })
    }
}

/// `timestamp(string)`: strict RFC 3339 as Go's `time.Parse(time.RFC3339, …)`.
pub fn parse_timestamp(text: &str) -> Result<Timestamp, EvalError> {
    Err(pending(&format!("timestamp({text:?})")))
}

/// Re-formats an RFC 3339 time as Go's `RFC3339Nano` does: offset kept, fraction without
/// trailing zeros.
pub fn canonical_rfc3339(text: &str) -> Result<String, EvalError> {
    Ok(text.to_string())
}

/// `string(timestamp)`.
pub fn format_timestamp(t: Timestamp) -> String {
    format!("{}ns", t.nanos)
}

/// `duration(string)`: Go syntax (`30m`, `1h30m`, `1.5h`, `300ms`, `-2s`, `1us`, `1µs`, `1ns`).
pub fn parse_duration(text: &str) -> Result<Duration, EvalError> {
    Err(pending(&format!("duration({text:?})")))
}

/// `string(duration)`: seconds with an `s` suffix (`1800s`, `1.5s`).
pub fn format_duration(d: Duration) -> String {
    format!("{}s", d.nanos as f64 / 1e9)
}

/// A calendar or clock component read by the `get*` accessors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimePart {
    /// `getFullYear`.
    FullYear,
    /// `getMonth` (0-based).
    Month,
    /// `getDate` (1-based day of month).
    Date,
    /// `getDayOfMonth` (0-based).
    DayOfMonth,
    /// `getDayOfWeek` (0 = Sunday).
    DayOfWeek,
    /// `getDayOfYear` (0-based).
    DayOfYear,
    /// `getHours`.
    Hours,
    /// `getMinutes`.
    Minutes,
    /// `getSeconds`.
    Seconds,
    /// `getMilliseconds`.
    Milliseconds,
}

/// `timestamp - timestamp`.
pub fn ts_sub_ts(a: Timestamp, b: Timestamp) -> Result<Duration, EvalError> {
    Duration::from_nanos(a.nanos - b.nanos)
}

/// `timestamp + duration`.
pub fn ts_add_dur(a: Timestamp, d: Duration) -> Result<Timestamp, EvalError> {
    Timestamp::from_nanos(a.nanos + d.nanos)
}

/// `timestamp - duration`.
pub fn ts_sub_dur(a: Timestamp, d: Duration) -> Result<Timestamp, EvalError> {
    Timestamp::from_nanos(a.nanos - d.nanos)
}

/// `duration + duration`.
pub fn dur_add(a: Duration, b: Duration) -> Result<Duration, EvalError> {
    Duration::from_nanos(a.nanos + b.nanos)
}

/// `duration - duration`.
pub fn dur_sub(a: Duration, b: Duration) -> Result<Duration, EvalError> {
    Duration::from_nanos(a.nanos - b.nanos)
}

/// `-duration`.
pub fn dur_neg(a: Duration) -> Result<Duration, EvalError> {
    Duration::from_nanos(-a.nanos)
}

impl Timestamp {
    /// A timestamp from whole seconds since the epoch.
    pub fn from_unix_seconds(secs: i64) -> Result<Timestamp, EvalError> {
        Timestamp::from_nanos(i128::from(secs) * 1_000_000_000)
    }

    /// Whole seconds since the epoch, rounded down.
    pub fn unix_seconds(self) -> i64 {
        self.nanos.div_euclid(1_000_000_000) as i64
    }
}

impl TimePart {
    /// The part read by a CEL accessor method name (`getHours`).
    pub fn from_method(name: &str) -> Option<TimePart> {
        let _ = name;
        None
    }
}

/// A timestamp accessor, in UTC or the given time zone.
pub fn timestamp_part(t: Timestamp, part: TimePart, tz: Option<&str>) -> Result<i64, EvalError> {
    let _ = (t, part, tz);
    Err(pending("timestamp accessors"))
}

/// A duration accessor (`getHours` etc: the whole duration in that unit, truncated).
pub fn duration_part(d: Duration, part: TimePart) -> Result<i64, EvalError> {
    let _ = (d, part);
    Err(pending("duration accessors"))
}
