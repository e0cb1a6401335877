//! Timestamps and durations: parsing, formatting, checked arithmetic and accessors.
//!
//! This module holds the types, their calendar and their checked arithmetic; `rfc3339` the
//! timestamp text, `duration_text` the duration text, `zones` the accessors and time zones (all
//! re-exported here). Their expected answers are the tables of `tests/data/eval/time.txt`, run
//! through both engines.
//!
//! Takes the text of `timestamp('…')`, `duration('…')` and the time fields of resources; gives
//! [`Timestamp`] and [`Duration`] values, their CEL string forms, the checked operators and the
//! `getHours()`-style accessors. The semantics are those of Google's cel-cpp and cel-go; where the
//! two disagree the choice is documented on the function (the usual rule: accept exactly what both
//! accept, compute exactly where one of them would saturate or round).
//!
//! Invariant: a [`Timestamp`] is always within 0001-01-01T00:00:00Z..=9999-12-31T23:59:59.999999999Z
//! and a [`Duration`] within ±(315576000000 s + 999999999 ns), the protobuf range (±10000 years
//! of 365.25 days) that cel-cpp enforces; every constructor and operation that could leave those
//! ranges returns an `Overflow` error instead. Arithmetic *between* durations and the difference
//! of two timestamps must moreover fit in `i64` nanoseconds (±292 years), as in cel-go and cel-cpp.

use super::value::{ErrorKind, EvalError};

mod duration_text;
mod rfc3339;
#[cfg(test)]
mod tests;
mod zones;

pub use duration_text::{format_duration, parse_duration};
pub use rfc3339::{
    CANONICAL_MAX, canonical_rfc3339, canonical_rfc3339_in, canonical_rfc3339_parsed_in,
    format_timestamp, format_timestamp_utc, parse_timestamp, parsed_if_canonical_utc,
};
pub use zones::{TimePart, duration_part, timestamp_part};

/// Nanoseconds in one second.
const NANOS_PER_SEC: i128 = 1_000_000_000;
/// Seconds in one day.
const SECS_PER_DAY: i64 = 86_400;
/// Unix seconds of 0001-01-01T00:00:00Z.
const MIN_UNIX_SECS: i64 = -62_135_596_800;
/// Unix seconds of 9999-12-31T23:59:59Z.
const MAX_UNIX_SECS: i64 = 253_402_300_799;
/// The largest duration in nanoseconds: protobuf's 315576000000 s plus 999999999 ns.
const MAX_DURATION_NANOS: i128 = 315_576_000_000 * NANOS_PER_SEC + 999_999_999;

/// A point in time (nanoseconds since the Unix epoch) and the UTC offset it is shown at, as a Go
/// `time.Time` keeps the offset it was parsed with: `string()`, the accessors without a zone and
/// JSON show the time at that offset. Equality, order and hashing see only the instant.
///
/// Packed in one `i128` ([`Timestamp::repr`], what the JIT holds): the nanoseconds shifted left by
/// [`OFFSET_BITS`], the offset in minutes plus `OFFSET_BIAS` in the low bits. An arithmetic
/// shift right by [`OFFSET_BITS`] gives the nanoseconds back.
#[derive(Clone, Copy, Debug)]
pub struct Timestamp {
    repr: i128,
}

/// The low bits of [`Timestamp::repr`] that hold the offset.
pub const OFFSET_BITS: u32 = 12;
/// Added to the offset in minutes (±1439) to store it in [`OFFSET_BITS`] unsigned bits.
const OFFSET_BIAS: i128 = 2048;
/// The largest offset in minutes, 23:59.
const MAX_OFFSET_MINUTES: i32 = 23 * 60 + 59;

impl PartialEq for Timestamp {
    fn eq(&self, other: &Timestamp) -> bool {
        self.nanos() == other.nanos()
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Timestamp) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Timestamp) -> std::cmp::Ordering {
        self.nanos().cmp(&other.nanos())
    }
}

impl std::hash::Hash for Timestamp {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.nanos().hash(state);
    }
}

/// A signed span of time in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    nanos: i128,
}

/// cel-go's message for text that does not convert to `to` (`int`, `google.protobuf.Duration`):
/// Go's own parse error is not shown.
pub fn conversion_error_text(to: &str) -> String {
    format!("type conversion error from 'string' to '{to}'")
}

/// `timestamp(string)` as CEL evaluates it: [`parse_timestamp`], with cel-go's message for text
/// that is not a timestamp (`type conversion error from 'string' to
/// 'google.protobuf.Timestamp'`); a time outside the range stays `timestamp overflow`, as in
/// cel-go. The one implementation the interpreter and the JIT's pre-parsed time fields share.
pub fn timestamp_from_string(text: &str) -> Result<Timestamp, EvalError> {
    parse_timestamp(text).map_err(|e| match e.kind {
        ErrorKind::Overflow => e,
        _ => EvalError::new(e.kind, conversion_error_text("google.protobuf.Timestamp")),
    })
}

/// `duration(string)` as CEL evaluates it: [`parse_duration`], with cel-go's message for every
/// failure (`type conversion error from 'string' to 'google.protobuf.Duration'`: Go's
/// `time.ParseDuration` error, out of range included); the kind stays.
pub fn duration_from_string(text: &str) -> Result<Duration, EvalError> {
    parse_duration(text)
        .map_err(|e| EvalError::new(e.kind, conversion_error_text("google.protobuf.Duration")))
}

fn timestamp_overflow() -> EvalError {
    EvalError::overflow("timestamp")
}

fn duration_overflow() -> EvalError {
    EvalError::overflow("duration")
}

fn integer_overflow() -> EvalError {
    EvalError::overflow("integer")
}

/// Quotes user text for an error message, cut short so a huge input cannot bloat the message.
fn quoted(text: &str) -> String {
    const MAX_CHARS: usize = 64;
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

impl Timestamp {
    /// The earliest timestamp, 0001-01-01T00:00:00Z.
    pub const MIN: Timestamp = Timestamp::utc(MIN_UNIX_SECS as i128 * NANOS_PER_SEC);
    /// The latest timestamp, 9999-12-31T23:59:59.999999999Z.
    pub const MAX: Timestamp =
        Timestamp::utc(MAX_UNIX_SECS as i128 * NANOS_PER_SEC + (NANOS_PER_SEC - 1));
    /// The Unix epoch, 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: Timestamp = Timestamp::utc(0);

    /// In UTC, unchecked.
    const fn utc(nanos: i128) -> Timestamp {
        Timestamp {
            repr: nanos << OFFSET_BITS | OFFSET_BIAS,
        }
    }

    /// A timestamp in UTC from nanoseconds since the epoch; `Overflow` outside year 1..=9999.
    pub fn from_nanos(nanos: i128) -> Result<Timestamp, EvalError> {
        if (MIN_UNIX_SECS as i128 * NANOS_PER_SEC..=Self::MAX.nanos()).contains(&nanos) {
            Ok(Timestamp::utc(nanos))
        } else {
            Err(timestamp_overflow())
        }
    }

    /// The same instant shown at `minutes` east of UTC (within ±23:59).
    pub(super) fn at_offset(self, minutes: i32) -> Timestamp {
        debug_assert!(minutes.abs() <= MAX_OFFSET_MINUTES);
        let code = i128::from(minutes.clamp(-MAX_OFFSET_MINUTES, MAX_OFFSET_MINUTES)) + OFFSET_BIAS;
        Timestamp {
            repr: self.nanos() << OFFSET_BITS | code,
        }
    }

    /// The packed form (see [`Timestamp`]).
    pub fn repr(self) -> i128 {
        self.repr
    }

    /// A timestamp from its packed form; `Overflow` for an instant outside year 1..=9999 or an
    /// offset beyond ±23:59.
    pub fn from_repr(repr: i128) -> Result<Timestamp, EvalError> {
        let t = Timestamp { repr };
        let offset_ok = t.offset_minutes().abs() <= MAX_OFFSET_MINUTES;
        Timestamp::from_nanos(t.nanos())
            .ok()
            .filter(|_| offset_ok)
            .map(|_| t)
            .ok_or_else(timestamp_overflow)
    }

    /// `timestamp(int)`: a timestamp from whole seconds since the epoch; `Overflow` outside year
    /// 1..=9999.
    pub fn from_unix_seconds(secs: i64) -> Result<Timestamp, EvalError> {
        Timestamp::from_nanos(secs as i128 * NANOS_PER_SEC)
    }

    /// A timestamp from the system clock's reading; `Overflow` outside year 1..=9999.
    pub fn from_system_time(time: std::time::SystemTime) -> Result<Timestamp, EvalError> {
        let nanos = match time.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => after.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        };
        Timestamp::from_nanos(nanos)
    }

    /// Nanoseconds since the Unix epoch.
    pub fn nanos(self) -> i128 {
        self.repr >> OFFSET_BITS
    }

    /// The offset it is shown at, in minutes east of UTC.
    pub fn offset_minutes(self) -> i32 {
        ((self.repr & ((1 << OFFSET_BITS) - 1)) - OFFSET_BIAS) as i32
    }

    /// `int(timestamp)`: whole seconds since the epoch, rounded down (1969-12-31T23:59:59.5Z is -1).
    pub fn unix_seconds(self) -> i64 {
        // In range by the type's invariant: |seconds| < 2^38.
        self.nanos().div_euclid(NANOS_PER_SEC) as i64
    }

    /// The nanoseconds within the second, 0..=999_999_999 (also before the epoch).
    pub fn subsec_nanos(self) -> u32 {
        self.nanos().rem_euclid(NANOS_PER_SEC) as u32
    }
}

impl Duration {
    /// The zero duration.
    pub const ZERO: Duration = Duration { nanos: 0 };
    /// The largest duration, 315576000000.999999999s.
    pub const MAX: Duration = Duration {
        nanos: MAX_DURATION_NANOS,
    };
    /// The smallest duration, -315576000000.999999999s.
    pub const MIN: Duration = Duration {
        nanos: -MAX_DURATION_NANOS,
    };

    /// A duration from nanoseconds; `Overflow` beyond ±(315576000000 s + 999999999 ns), the
    /// protobuf `Duration` range that cel-cpp accepts from `duration('…')`.
    pub fn from_nanos(nanos: i128) -> Result<Duration, EvalError> {
        if (-MAX_DURATION_NANOS..=MAX_DURATION_NANOS).contains(&nanos) {
            Ok(Duration { nanos })
        } else {
            Err(duration_overflow())
        }
    }

    /// A duration from whole seconds; `Overflow` beyond the protobuf range.
    pub fn from_seconds(secs: i64) -> Result<Duration, EvalError> {
        Duration::from_nanos(secs as i128 * NANOS_PER_SEC)
    }

    /// Nanoseconds.
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// Whole seconds, truncated toward zero (protobuf's `seconds` field).
    pub fn seconds_i64(self) -> i64 {
        // In range by the type's invariant: |seconds| <= 315576000000.
        (self.nanos / NANOS_PER_SEC) as i64
    }

    /// The nanoseconds beyond [`Duration::seconds_i64`], with the same sign (protobuf's `nanos`).
    pub fn subsec_nanos(self) -> i32 {
        (self.nanos % NANOS_PER_SEC) as i32
    }

    /// The duration as `i64` nanoseconds (cel-go's `time.Duration`), or `integer overflow` when it
    /// is longer than about 292 years.
    pub fn nanos_i64(self) -> Result<i64, EvalError> {
        i64::try_from(self.nanos).map_err(|_| integer_overflow())
    }
}

// ---------------------------------------------------------------------------------------------
// Calendar arithmetic on the proleptic Gregorian calendar (Howard Hinnant's algorithms).
// ---------------------------------------------------------------------------------------------

/// Days since 1970-01-01 of a civil date; `month` 1..=12, `day` 1..=31.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month 1..=12, day 1..=31) of a count of days since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Day of the week of a count of days since 1970-01-01 (a Thursday), 0 = Sunday.
fn weekday(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

// ---------------------------------------------------------------------------------------------
// Checked arithmetic.
// ---------------------------------------------------------------------------------------------

/// `timestamp - timestamp`: the difference must fit in `i64` nanoseconds, else `integer
/// overflow`. Computed as cel-go and cel-cpp do (whole seconds scaled to nanoseconds with an
/// overflow check, then the nanosecond difference added), so a difference of exactly
/// -9223372036.854775808s is an error when the minuend's nanoseconds exceed the subtrahend's
/// (`1677-09-21T00:12:43.145224192Z - 1970-01-01T00:00:00Z`) and fine otherwise.
pub fn ts_sub_ts(a: Timestamp, b: Timestamp) -> Result<Duration, EvalError> {
    let secs = a.unix_seconds() - b.unix_seconds(); // |each| < 2^38: no overflow
    let nanos = i64::from(a.subsec_nanos()) - i64::from(b.subsec_nanos());
    let scaled = secs
        .checked_mul(1_000_000_000)
        .ok_or_else(integer_overflow)?;
    let total = scaled.checked_add(nanos).ok_or_else(integer_overflow)?;
    Ok(Duration {
        nanos: total.into(),
    })
}

/// `timestamp + duration` (and `duration + timestamp`): `timestamp overflow` outside year
/// 1..=9999. Exact for every duration, as in cel-cpp; the result keeps `t`'s offset, as in cel-go.
pub fn ts_add_dur(t: Timestamp, d: Duration) -> Result<Timestamp, EvalError> {
    // The offset stays, as Go's `Time.Add` keeps the location.
    Timestamp::from_nanos(t.nanos() + d.nanos).map(|sum| sum.at_offset(t.offset_minutes()))
}

/// `timestamp - duration`: the duration is negated first, so it must fit in `i64` nanoseconds
/// and not be its minimum (`integer overflow`, as in cel-go and cel-cpp); then `timestamp
/// overflow` outside year 1..=9999. cel-cpp saturates a longer duration to ±2^63 ns and
/// subtracts that; we report the overflow instead.
pub fn ts_sub_dur(t: Timestamp, d: Duration) -> Result<Timestamp, EvalError> {
    ts_add_dur(t, dur_neg(d)?)
}

/// `duration + duration`: operands and result in `i64` nanoseconds, else `integer overflow`
/// (cel-cpp saturates an operand longer than ±2^63 ns instead; we report the overflow).
pub fn dur_add(a: Duration, b: Duration) -> Result<Duration, EvalError> {
    let sum = a
        .nanos_i64()?
        .checked_add(b.nanos_i64()?)
        .ok_or_else(integer_overflow)?;
    Ok(Duration { nanos: sum.into() })
}

/// `duration - duration`: operands and result in `i64` nanoseconds, else `integer overflow`.
pub fn dur_sub(a: Duration, b: Duration) -> Result<Duration, EvalError> {
    let diff = a
        .nanos_i64()?
        .checked_sub(b.nanos_i64()?)
        .ok_or_else(integer_overflow)?;
    Ok(Duration { nanos: diff.into() })
}

/// `-duration` (cel-go's negation; cel-cpp has no such overload): in `i64` nanoseconds, else
/// `integer overflow`.
pub fn dur_neg(d: Duration) -> Result<Duration, EvalError> {
    let negated = d.nanos_i64()?.checked_neg().ok_or_else(integer_overflow)?;
    Ok(Duration {
        nanos: negated.into(),
    })
}
