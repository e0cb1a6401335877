//! Timestamps and durations: parsing, formatting, checked arithmetic and accessors.
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
use chrono::{Offset, TimeZone};
use chrono_tz::Tz;
use std::str::FromStr;

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
    pub const MIN: Timestamp = Timestamp {
        nanos: MIN_UNIX_SECS as i128 * NANOS_PER_SEC,
    };
    /// The latest timestamp, 9999-12-31T23:59:59.999999999Z.
    pub const MAX: Timestamp = Timestamp {
        nanos: MAX_UNIX_SECS as i128 * NANOS_PER_SEC + (NANOS_PER_SEC - 1),
    };
    /// The Unix epoch, 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: Timestamp = Timestamp { nanos: 0 };

    /// A timestamp from nanoseconds since the epoch; `Overflow` outside year 1..=9999.
    pub fn from_nanos(nanos: i128) -> Result<Timestamp, EvalError> {
        if (Self::MIN.nanos..=Self::MAX.nanos).contains(&nanos) {
            Ok(Timestamp { nanos })
        } else {
            Err(timestamp_overflow())
        }
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
        self.nanos
    }

    /// `int(timestamp)`: whole seconds since the epoch, rounded down (1969-12-31T23:59:59.5Z is -1).
    pub fn unix_seconds(self) -> i64 {
        // In range by the type's invariant: |seconds| < 2^38.
        self.nanos.div_euclid(NANOS_PER_SEC) as i64
    }

    /// The nanoseconds within the second, 0..=999_999_999 (also before the epoch).
    pub fn subsec_nanos(self) -> u32 {
        self.nanos.rem_euclid(NANOS_PER_SEC) as u32
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
fn civil_from_days(days: i64) -> (i64, u32, u32) {
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
// RFC 3339 text.
// ---------------------------------------------------------------------------------------------

/// The fields of an RFC 3339 date-time as written, before conversion to an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rfc3339 {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    /// Seconds east of UTC; `Z`, `+00:00` and `-00:00` are all 0.
    offset: i32,
}

impl Rfc3339 {
    /// Unix seconds of the instant (may be outside the timestamp range).
    fn unix_seconds(&self) -> i64 {
        let days = days_from_civil(self.year, self.month, self.day);
        let secs_of_day = i64::from(self.hour * 3600 + self.minute * 60 + self.second);
        days * SECS_PER_DAY + secs_of_day - i64::from(self.offset)
    }
}

/// A cursor over ASCII text for the small parsers below.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek() != Some(byte) {
            return None;
        }
        self.pos += 1;
        Some(())
    }

    /// Between `min` and `max` (at most 9) decimal digits, greedily.
    fn digits(&mut self, min: usize, max: usize) -> Option<u32> {
        let mut value = 0u32;
        let mut count = 0;
        while count < max {
            match self.peek() {
                Some(b @ b'0'..=b'9') => value = value * 10 + u32::from(b - b'0'),
                _ => break,
            }
            self.pos += 1;
            count += 1;
        }
        (count >= min).then_some(value)
    }
}

/// Parses RFC 3339 text, accepting exactly what both Go's `time.Parse(time.RFC3339, …)` (cel-go)
/// and absl's `RFC3339_full` (cel-cpp) accept:
/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm)` with upper-case `T` and `Z`, a validated calendar
/// date, seconds 00..=59 (no leap second), offsets up to ±23:59, no surrounding text.
/// Two leniencies are shared by both and therefore kept: the hour may have one digit, and a
/// fraction longer than nine digits is truncated to nanoseconds.
fn parse_rfc3339(text: &str) -> Option<Rfc3339> {
    let mut c = Cursor::new(text);
    let year = i64::from(c.digits(4, 4)?);
    c.eat(b'-')?;
    let month = c.digits(2, 2)?;
    c.eat(b'-')?;
    let day = c.digits(2, 2)?;
    c.eat(b'T')?;
    let hour = c.digits(1, 2)?;
    c.eat(b':')?;
    let minute = c.digits(2, 2)?;
    c.eat(b':')?;
    let second = c.digits(2, 2)?;
    let nanos = parse_fraction(&mut c);
    let offset = parse_offset(&mut c)?;
    let valid = c.at_end()
        && (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && hour <= 23
        && minute <= 59
        && second <= 59;
    valid.then_some(Rfc3339 {
        year,
        month,
        day,
        hour,
        minute,
        second,
        nanos,
        offset,
    })
}

/// An optional `.digits` fraction of a second; digits past the ninth are dropped.
fn parse_fraction(c: &mut Cursor<'_>) -> u32 {
    if c.peek() != Some(b'.') || !c.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
        return 0;
    }
    c.pos += 1;
    let mut nanos = 0u32;
    let mut scale = 100_000_000u32;
    while let Some(b @ b'0'..=b'9') = c.peek() {
        nanos += u32::from(b - b'0') * scale;
        scale /= 10;
        c.pos += 1;
    }
    nanos
}

/// `Z` or `±hh:mm` (hh <= 23, mm <= 59), as seconds east of UTC.
fn parse_offset(c: &mut Cursor<'_>) -> Option<i32> {
    let sign = match c.peek()? {
        b'Z' => {
            c.pos += 1;
            return Some(0);
        }
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    c.pos += 1;
    let hours = c.digits(2, 2)?;
    c.eat(b':')?;
    let minutes = c.digits(2, 2)?;
    (hours <= 23 && minutes <= 59).then(|| sign * (hours * 3600 + minutes * 60) as i32)
}

fn invalid_timestamp(text: &str) -> EvalError {
    EvalError::invalid(format!("invalid timestamp {}", quoted(text)))
}

/// `timestamp(string)`: RFC 3339 text as Go's `time.Parse(time.RFC3339, …)` reads it (see
/// [`parse_rfc3339`] for the exact grammar). `InvalidArgument` for malformed text, `Overflow`
/// (`timestamp overflow`) for a well-formed time outside year 1..=9999 UTC (`0000-…`, or
/// `0001-01-01T00:00:00+00:01`).
pub fn parse_timestamp(text: &str) -> Result<Timestamp, EvalError> {
    let fields = parse_rfc3339(text).ok_or_else(|| invalid_timestamp(text))?;
    let nanos = i128::from(fields.unix_seconds()) * NANOS_PER_SEC + i128::from(fields.nanos);
    Timestamp::from_nanos(nanos)
}

/// Re-formats an RFC 3339 time as Go's `t.Format(time.RFC3339Nano)` does after
/// `time.Parse(time.RFC3339, …)`: the written offset is kept (`Z` when it is zero, including
/// `-00:00`), the fraction loses its trailing zeros and disappears when zero, a one-digit hour
/// gets its leading zero. The same grammar as [`parse_timestamp`]; no range check (Go's
/// `time.Time` holds year 0 too), so `0000-01-01T00:00:00Z` is returned as is.
pub fn canonical_rfc3339(text: &str) -> Result<String, EvalError> {
    let f = parse_rfc3339(text).ok_or_else(|| invalid_timestamp(text))?;
    let mut out = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}",
        f.year,
        f.month,
        f.day,
        f.hour,
        f.minute,
        f.second,
        fraction_trimmed(f.nanos)
    );
    if f.offset == 0 {
        out.push('Z');
    } else {
        let sign = if f.offset < 0 { '-' } else { '+' };
        let abs = f.offset.unsigned_abs();
        out.push_str(&format!("{sign}{:02}:{:02}", abs / 3600, abs % 3600 / 60));
    }
    Ok(out)
}

/// `.5`, `.123456789`: Go's `.999999999` layout (no trailing zeros, nothing for zero).
fn fraction_trimmed(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let digits = format!(".{nanos:09}");
    digits.trim_end_matches('0').to_string()
}

/// `.500`, `.000001`, `.123456789`: the protobuf/cel-cpp style, in groups of three digits.
fn fraction_grouped(nanos: u32) -> String {
    if nanos == 0 {
        String::new()
    } else if nanos % 1_000_000 == 0 {
        format!(".{:03}", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!(".{:06}", nanos / 1_000)
    } else {
        format!(".{nanos:09}")
    }
}

/// `string(timestamp)`: UTC with `Z`, the fraction in groups of three digits as cel-cpp prints
/// it (`2025-10-21T10:00:00.500Z`, `…T10:00:00.000001Z`, no fraction when zero). cel-go prints
/// `…T10:00:00.5Z` instead; the oracle is cel-cpp.
pub fn format_timestamp(t: Timestamp) -> String {
    let secs = t.unix_seconds();
    let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let sod = secs.rem_euclid(SECS_PER_DAY);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        fraction_grouped(t.subsec_nanos())
    )
}

// ---------------------------------------------------------------------------------------------
// Duration text.
// ---------------------------------------------------------------------------------------------

/// Quarter-nanosecond ticks, absl's internal resolution, in one unit of a duration literal.
fn unit_ticks(unit: &str) -> Option<i128> {
    let nanos: i128 = match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => NANOS_PER_SEC,
        "m" => 60 * NANOS_PER_SEC,
        "h" => 3600 * NANOS_PER_SEC,
        _ => return None,
    };
    Some(nanos * 4)
}

/// One `<number><unit>` component, as quarter-nanosecond ticks, advancing `rest`.
fn duration_component(rest: &mut &str) -> Option<i128> {
    let text = *rest;
    let int_len = text.bytes().take_while(u8::is_ascii_digit).count();
    // The integer part must fit in i64 (absl rejects more; Go rejects more than 2^63).
    let int_part: i128 = if int_len == 0 {
        0
    } else {
        i64::from_str(&text[..int_len]).ok()?.into()
    };
    let mut pos = int_len;
    let (mut frac, mut scale) = (0i128, 1i128);
    if text.as_bytes().get(pos) == Some(&b'.') {
        pos += 1;
        let frac_len = text[pos..].bytes().take_while(u8::is_ascii_digit).count();
        // Like absl, digits beyond the 18th cannot matter at quarter-nanosecond resolution.
        for b in text[pos..pos + frac_len].bytes().take(18) {
            frac = frac * 10 + i128::from(b - b'0');
            scale *= 10;
        }
        if int_len == 0 && frac_len == 0 {
            return None;
        }
        pos += frac_len;
    } else if int_len == 0 {
        return None;
    }
    let unit_len = text[pos..].find(|ch: char| ch == '.' || ch.is_ascii_digit());
    let unit_end = unit_len.map_or(text.len(), |n| pos + n);
    let ticks = unit_ticks(&text[pos..unit_end])?;
    *rest = &text[unit_end..];
    // Exact in i128: |int_part * ticks| < 2^63 * 2^44, and frac * ticks < 10^18 * 2^44.
    Some(int_part * ticks + frac * ticks / scale)
}

fn invalid_duration(text: &str) -> EvalError {
    EvalError::invalid(format!("invalid duration {}", quoted(text)))
}

/// `duration(string)`: Go's `time.ParseDuration` syntax: an optional sign, then one or more
/// `<number><unit>` components (`30m`, `1h30m`, `1.5h`, `.5s`, `300ms`, `-2s`, `+5s`), units
/// `ns us µs μs ms s m h`; a lone `0` (signed or not) is zero; empty text or a number without a unit
/// is `InvalidArgument`.
///
/// Values follow cel-cpp (absl's `ParseDuration`): computed exactly at a quarter of a nanosecond
/// and truncated toward zero at the end (so `0.5ns0.5ns` is 1ns, where Go rounds each component
/// down and gets 0), and accepted up to the protobuf range ±315576000000.999999999s (cel-go
/// stops at ±2562047h47m16.854775807s); beyond that `Overflow` (`duration overflow`). The units
/// `µs`/`μs` are Go's; cel-cpp rejects them.
pub fn parse_duration(text: &str) -> Result<Duration, EvalError> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if body == "0" {
        return Ok(Duration::ZERO);
    }
    if body.is_empty() {
        return Err(invalid_duration(text));
    }
    let mut rest = body;
    let mut ticks: i128 = 0;
    while !rest.is_empty() {
        let component = duration_component(&mut rest).ok_or_else(|| invalid_duration(text))?;
        ticks = ticks.checked_add(component).ok_or_else(duration_overflow)?;
    }
    if ticks > MAX_DURATION_NANOS * 4 {
        return Err(duration_overflow());
    }
    let nanos = ticks / 4;
    Duration::from_nanos(if negative { -nanos } else { nanos })
}

/// `string(duration)`: seconds with an `s` suffix, the fraction in groups of three digits as
/// cel-cpp prints it (`1800s`, `1.500s`, `-0.000000001s`, `0.000100s`). cel-go prints `1.5s`;
/// the oracle is cel-cpp.
pub fn format_duration(d: Duration) -> String {
    let sign = if d.nanos < 0 { "-" } else { "" };
    let abs = d.nanos.unsigned_abs();
    let secs = abs / NANOS_PER_SEC as u128;
    let nanos = (abs % NANOS_PER_SEC as u128) as u32;
    format!("{sign}{secs}{}s", fraction_grouped(nanos))
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
/// 1..=9999. Exact for every duration, as in cel-cpp.
pub fn ts_add_dur(t: Timestamp, d: Duration) -> Result<Timestamp, EvalError> {
    Timestamp::from_nanos(t.nanos + d.nanos)
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

// ---------------------------------------------------------------------------------------------
// Accessors: getFullYear() and friends.
// ---------------------------------------------------------------------------------------------

/// A part of a timestamp or duration that a CEL accessor method returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimePart {
    /// `getFullYear`: the year, e.g. 2009.
    FullYear,
    /// `getMonth`: the month, 0-based (January is 0).
    Month,
    /// `getDate`: the day of the month, 1-based.
    Date,
    /// `getDayOfMonth`: the day of the month, 0-based.
    DayOfMonth,
    /// `getDayOfWeek`: the day of the week, 0 = Sunday.
    DayOfWeek,
    /// `getDayOfYear`: the day of the year, 0-based.
    DayOfYear,
    /// `getHours`: the hour of the day; for a duration, its whole hours.
    Hours,
    /// `getMinutes`: the minute of the hour; for a duration, its whole minutes.
    Minutes,
    /// `getSeconds`: the second of the minute; for a duration, its whole seconds.
    Seconds,
    /// `getMilliseconds`: the millisecond of the second (also for a duration).
    Milliseconds,
}

impl TimePart {
    const ALL: [(TimePart, &'static str); 10] = [
        (TimePart::FullYear, "getFullYear"),
        (TimePart::Month, "getMonth"),
        (TimePart::Date, "getDate"),
        (TimePart::DayOfMonth, "getDayOfMonth"),
        (TimePart::DayOfWeek, "getDayOfWeek"),
        (TimePart::DayOfYear, "getDayOfYear"),
        (TimePart::Hours, "getHours"),
        (TimePart::Minutes, "getMinutes"),
        (TimePart::Seconds, "getSeconds"),
        (TimePart::Milliseconds, "getMilliseconds"),
    ];

    /// The part a CEL method name (`getFullYear`, …, `getMilliseconds`) selects.
    pub fn from_method(name: &str) -> Option<TimePart> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(part, _)| *part)
    }

    /// The CEL method name of this part.
    pub fn method_name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(part, _)| *part == self)
            .map_or("", |(_, n)| n)
    }

    /// Whether a duration has this accessor (`getHours`, `getMinutes`, `getSeconds`,
    /// `getMilliseconds`).
    pub fn applies_to_duration(self) -> bool {
        matches!(
            self,
            TimePart::Hours | TimePart::Minutes | TimePart::Seconds | TimePart::Milliseconds
        )
    }
}

/// A time zone argument of an accessor.
enum Zone {
    /// Seconds east of UTC.
    Fixed(i64),
    /// An IANA zone.
    Named(Tz),
}

fn invalid_zone(tz: &str) -> EvalError {
    EvalError::invalid(format!("invalid time zone {}", quoted(tz)))
}

/// Reads a time zone argument, accepting what both cel-go and cel-cpp accept: the empty string
/// (UTC), an IANA name with its exact spelling (`America/Los_Angeles`, `US/Central`, `UTC`,
/// `EST`), or an offset `[+-]H:M` with one or more digits on each side (`+05:30`, `-02:30`,
/// `02:00`, `0:90`), the sign applying to both parts.
fn parse_zone(tz: &str) -> Result<Zone, EvalError> {
    if tz.is_empty() {
        return Ok(Zone::Fixed(0));
    }
    let Some((hours, minutes)) = tz.split_once(':') else {
        return Tz::from_str(tz)
            .map(Zone::Named)
            .map_err(|_| invalid_zone(tz));
    };
    let (negative, hours) = match hours.as_bytes().first() {
        Some(b'-') => (true, &hours[1..]),
        Some(b'+') => (false, &hours[1..]),
        _ => (false, hours),
    };
    let number = |s: &str| {
        let all_digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        all_digits.then(|| i64::from_str(s).ok()).flatten()
    };
    let (Some(h), Some(m)) = (number(hours), number(minutes)) else {
        return Err(invalid_zone(tz));
    };
    // Offsets of billions of hours are accepted by both engines; keep them from overflowing.
    let secs = h
        .checked_mul(3600)
        .and_then(|s| s.checked_add(m.checked_mul(60)?));
    let secs = secs.ok_or_else(|| invalid_zone(tz))?;
    Ok(Zone::Fixed(if negative { -secs } else { secs }))
}

/// The UTC offset in seconds of an IANA zone at a Unix time.
///
/// chrono-tz's tables end in 2099, while Go and absl continue the zone's last rule forever. After
/// 2099 the lookup therefore moves the instant into a year of 2072..=2099 with the same calendar
/// (leap or not, same weekday on 1 January), whose transitions fall on the same dates.
fn named_offset(tz: Tz, unix_secs: i64) -> i64 {
    let days = unix_secs.div_euclid(SECS_PER_DAY);
    let (year, _, _) = civil_from_days(days);
    let mut secs = unix_secs;
    if year >= 2100 {
        let jan1 = days_from_civil(year, 1, 1);
        let twin = (2072..2100).find(|&y| {
            is_leap_year(y) == is_leap_year(year)
                && weekday(days_from_civil(y, 1, 1)) == weekday(jan1)
        });
        if let Some(twin) = twin {
            secs += (days_from_civil(twin, 1, 1) - jan1) * SECS_PER_DAY;
        }
    }
    match chrono::DateTime::from_timestamp(secs, 0) {
        Some(utc) => i64::from(
            tz.offset_from_utc_datetime(&utc.naive_utc())
                .fix()
                .local_minus_utc(),
        ),
        None => 0, // unreachable for timestamps in range
    }
}

/// `timestamp.getX()` and `timestamp.getX(tz)`: a calendar or clock part of the time in UTC or
/// in the zone `tz` (see [`parse_zone`]); an unknown zone or malformed offset is
/// `InvalidArgument`. `getMonth`, `getDayOfMonth` and `getDayOfYear` are 0-based, `getDate` is
/// 1-based, `getDayOfWeek` is 0 for Sunday. A large offset may move the local year outside
/// 1..=9999 (`getFullYear('+05:00')` of 9999-12-31T23:31:30Z is 10000, as in cel-cpp).
pub fn timestamp_part(t: Timestamp, part: TimePart, tz: Option<&str>) -> Result<i64, EvalError> {
    let utc_secs = t.unix_seconds();
    let offset = match tz.map(parse_zone).transpose()? {
        None => 0,
        Some(Zone::Fixed(secs)) => secs,
        Some(Zone::Named(zone)) => named_offset(zone, utc_secs),
    };
    // i128: an offset of up to i64::MAX seconds must not overflow.
    let local = i128::from(utc_secs) + i128::from(offset);
    let days_i128 = local.div_euclid(i128::from(SECS_PER_DAY));
    let days = i64::try_from(days_i128).map_err(|_| integer_overflow())?;
    let sod = local.rem_euclid(i128::from(SECS_PER_DAY)) as i64;
    let (year, month, day) = civil_from_days(days);
    Ok(match part {
        TimePart::FullYear => year,
        TimePart::Month => i64::from(month) - 1,
        TimePart::Date => i64::from(day),
        TimePart::DayOfMonth => i64::from(day) - 1,
        TimePart::DayOfWeek => weekday(days),
        TimePart::DayOfYear => days - days_from_civil(year, 1, 1),
        TimePart::Hours => sod / 3600,
        TimePart::Minutes => sod % 3600 / 60,
        TimePart::Seconds => sod % 60,
        TimePart::Milliseconds => i64::from(t.subsec_nanos() / 1_000_000),
    })
}

/// `duration.getHours()`, `getMinutes()`, `getSeconds()`: the whole hours, minutes, seconds of
/// the duration, truncated toward zero (`duration('-90m').getHours()` is -1);
/// `getMilliseconds()`: the milliseconds within the second, with the duration's sign
/// (`duration('-1.5s').getMilliseconds()` is -500). The other parts are
/// `NoMatchingOverload`.
pub fn duration_part(d: Duration, part: TimePart) -> Result<i64, EvalError> {
    let n = d.nanos;
    let value = match part {
        TimePart::Hours => n / (3600 * NANOS_PER_SEC),
        TimePart::Minutes => n / (60 * NANOS_PER_SEC),
        TimePart::Seconds => n / NANOS_PER_SEC,
        TimePart::Milliseconds => n / 1_000_000 % 1000,
        _ => {
            let message = format!(
                "no matching overload for '{}' applied to '(google.protobuf.Duration)'",
                part.method_name()
            );
            return Err(EvalError::new(ErrorKind::NoMatchingOverload, message));
        }
    };
    // In range by the type's invariant: |seconds| <= 315576000000.
    Ok(value as i64)
}
