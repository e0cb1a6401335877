//! The accessors (`getFullYear()` and friends) of timestamps and durations, in UTC, an IANA time
//! zone or a fixed offset.
//!
//! Invariant: a zone is what both cel-go and cel-cpp accept; anything else is an invalid
//! argument, never a guess.

use super::{Duration, NANOS_PER_SEC, SECS_PER_DAY, Timestamp};
use super::{civil_from_days, days_from_civil, integer_overflow, quoted, weekday};
use crate::cel::value::{ErrorKind, EvalError};
use chrono::{Offset, TimeZone};
use chrono_tz::Tz;
use std::str::FromStr;

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
    pub(crate) const ALL: [(TimePart, &'static str); 10] = [
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

/// Reads a time zone argument as [`timestamp_part`] describes; the sign of an offset applies to
/// both its parts.
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
/// chrono-tz's tables end in 2099, while Go and absl continue the zone's last rule forever. For a
/// zone that still changes its clocks in 2099, a later instant is therefore moved into a year of
/// 2088..=2099 whose calendar matches from the same anchor on (1 January for January and
/// February, 1 March after), so that weekday-based transitions fall on the same dates. The late
/// years keep clear of the rules tzdata spells out year by year until 2087 (Morocco's and
/// Palestine's Ramadan changes). A zone without daylight saving time in 2099 keeps the table's
/// last offset.
fn named_offset(tz: Tz, unix_secs: i64) -> i64 {
    let days = unix_secs.div_euclid(SECS_PER_DAY);
    let (year, month, _) = civil_from_days(days);
    let january = days_from_civil(2099, 1, 15) * SECS_PER_DAY;
    let july = days_from_civil(2099, 7, 15) * SECS_PER_DAY;
    if year < 2100 || table_offset(tz, january) == table_offset(tz, july) {
        return table_offset(tz, unix_secs);
    }
    let anchor_month = if month <= 2 { 1 } else { 3 };
    let anchor = days_from_civil(year, anchor_month, 1);
    let twin = (2088..2100)
        .map(|y| days_from_civil(y, anchor_month, 1))
        .find(|&twin| weekday(twin) == weekday(anchor))
        .unwrap_or(anchor); // twelve consecutive years cover every weekday
    table_offset(tz, unix_secs + (twin - anchor) * SECS_PER_DAY)
}

/// The UTC offset in seconds of an IANA zone at a Unix time, from chrono-tz's table.
fn table_offset(tz: Tz, unix_secs: i64) -> i64 {
    match chrono::DateTime::from_timestamp(unix_secs, 0) {
        Some(utc) => i64::from(
            tz.offset_from_utc_datetime(&utc.naive_utc())
                .fix()
                .local_minus_utc(),
        ),
        None => 0, // unreachable for timestamps in range
    }
}

/// `timestamp.getX()` and `timestamp.getX(tz)`: a calendar or clock part of the time at its own
/// offset (as cel-go reads it: UTC unless it was parsed from text with another offset; cel-cpp
/// reads UTC) or in the zone `tz`. A zone is what both cel-go and cel-cpp accept: the empty string (UTC), an
/// IANA name spelt exactly (`America/Los_Angeles`, `US/Central`, `UTC`), or an offset `[+-]H:M`
/// with one or more digits on each side (`+05:30`, `-02:30`, `02:00`, `0:90`); anything else is
/// `InvalidArgument` (`invalid time zone "…"`). `getMonth`, `getDayOfMonth` and `getDayOfYear` are 0-based, `getDate` is
/// 1-based, `getDayOfWeek` is 0 for Sunday. A large offset may move the local year outside
/// 1..=9999 (`getFullYear('+05:00')` of 9999-12-31T23:31:30Z is 10000, as in cel-cpp).
pub fn timestamp_part(t: Timestamp, part: TimePart, tz: Option<&str>) -> Result<i64, EvalError> {
    let utc_secs = t.unix_seconds();
    let offset = match tz.map(parse_zone).transpose()? {
        // cel-go reads the time at its own offset (Go's `Time.Hour()` in the time's location).
        None => i64::from(t.offset_minutes()) * 60,
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
                "no such overload: {}(google.protobuf.Duration)",
                part.method_name()
            );
            return Err(EvalError::new(ErrorKind::NoMatchingOverload, message));
        }
    };
    // In range by the type's invariant: |seconds| <= 315576000000.
    Ok(value as i64)
}
