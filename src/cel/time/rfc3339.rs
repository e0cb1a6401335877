//! RFC 3339 text: `timestamp(string)`, the canonical form of a resource's time fields, and
//! `string(timestamp)`.
//!
//! Invariant: one grammar, the intersection of what cel-go and cel-cpp accept, serves
//! [`parse_timestamp`] and [`canonical_rfc3339`].

use super::{NANOS_PER_SEC, SECS_PER_DAY, Timestamp};
use super::{civil_from_days, days_from_civil, days_in_month, quoted, timestamp_overflow};
use crate::cel::value::EvalError;

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
    /// The femtoseconds beyond `nanos` (fraction digits 10 to 15), 0..1_000_000.
    sub_nanos_fs: u32,
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

    /// Whether the fields name a date and time that exist (leap days; no leap second).
    fn valid(&self) -> bool {
        (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(self.year, self.month)
            && self.hour <= 23
            && self.minute <= 59
            && self.second <= 59
    }

    /// The instant, as [`parse_timestamp`] reads it from the canonical text (`None` outside
    /// year 1..=9999 UTC). The canonical text keeps nine fraction digits at most, so it carries
    /// no sub-nanoseconds.
    fn instant(&self) -> Option<Timestamp> {
        let nanos = i128::from(self.unix_seconds()) * NANOS_PER_SEC + i128::from(self.nanos);
        Timestamp::from_nanos(nanos)
            .ok()
            .map(|t| t.at_offset(self.offset / 60))
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

/// The fields of RFC 3339 text in the grammar [`parse_timestamp`] describes, or None.
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
    let (nanos, sub_nanos_fs) = parse_fraction(&mut c);
    let offset = parse_offset(&mut c)?;
    let f = Rfc3339 {
        year,
        month,
        day,
        hour,
        minute,
        second,
        nanos,
        sub_nanos_fs,
        offset,
    };
    (c.at_end() && f.valid()).then_some(f)
}

/// An optional `.digits` fraction of a second: the nanoseconds, and the femtoseconds beyond them
/// (as far as absl reads); later digits are dropped.
fn parse_fraction(c: &mut Cursor<'_>) -> (u32, u32) {
    if c.peek() != Some(b'.') || !c.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
        return (0, 0);
    }
    c.pos += 1;
    let mut femtos = 0u64;
    let mut scale = 100_000_000_000_000u64;
    while let Some(b @ b'0'..=b'9') = c.peek() {
        femtos += u64::from(b - b'0') * scale;
        scale /= 10;
        c.pos += 1;
    }
    ((femtos / 1_000_000) as u32, (femtos % 1_000_000) as u32)
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

/// Whether the text is RFC 3339 but for a year of five or more digits, at least 10000.
///
/// cel-cpp reads such a year and then reports the time out of range (and the conformance test
/// `timestamp_range/from_string_over` expects a range error for `10000-01-01T00:00:00Z`); Go
/// rejects the text. It is an error either way; this reports it as the range error. The check
/// parses the rest with the year's last four digits, which have the same leap-year status
/// (400 divides 10000).
fn has_year_beyond_9999(text: &str) -> bool {
    let n = text.bytes().take_while(u8::is_ascii_digit).count();
    let significant = text[..n].trim_start_matches('0').len();
    significant > 4 && parse_rfc3339(&text[n - 4..]).is_some()
}

fn invalid_timestamp(text: &str) -> EvalError {
    EvalError::invalid(format!("invalid timestamp {}", quoted(text)))
}

/// `timestamp(string)`: strict RFC 3339, the time kept at the offset written (`string()` shows
/// it again), accepting exactly what both cel-go (Go's
/// `time.Parse(time.RFC3339, …)`) and cel-cpp (absl's `RFC3339_full`) accept:
/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm)` with upper-case `T` and `Z`, a real calendar date
/// (no `02-30`), seconds up to 59 (no leap second), offsets up to ±23:59, nothing around it.
/// Both also take a one-digit hour and a fraction longer than nine digits (truncated), so this
/// does too.
///
/// `InvalidArgument` (`invalid timestamp "…"`) for other text; `Overflow` (`timestamp
/// overflow`) for a time outside year 1..=9999 UTC: `0000-…`, `0001-01-01T00:00:00+00:01`, a
/// five-digit year (cel-cpp reads it), and `9999-12-31T23:59:59.9999999999Z` (cel-cpp reads a
/// quarter nanosecond past the end before truncating).
pub fn parse_timestamp(text: &str) -> Result<Timestamp, EvalError> {
    let Some(fields) = parse_rfc3339(text) else {
        return Err(if has_year_beyond_9999(text) {
            timestamp_overflow()
        } else {
            invalid_timestamp(text)
        });
    };
    let nanos = i128::from(fields.unix_seconds()) * NANOS_PER_SEC + i128::from(fields.nanos);
    // absl keeps quarter nanoseconds (250000 fs), so cel-cpp sees .99999999925 past the end.
    if fields.sub_nanos_fs >= 250_000 && nanos == Timestamp::MAX.nanos() {
        return Err(timestamp_overflow());
    }
    // Kept at the offset it was written with, as Go's `time.Parse` keeps it.
    Timestamp::from_nanos(nanos).map(|t| t.at_offset(fields.offset / 60))
}

/// Re-formats an RFC 3339 time as Go's `t.Format(time.RFC3339Nano)` does after
/// `time.Parse(time.RFC3339, …)`: the written offset is kept (`Z` when it is zero, including
/// `-00:00`), the fraction loses its trailing zeros and disappears when zero, a one-digit hour
/// gets its leading zero. The same grammar as [`parse_timestamp`]; no range check (Go's
/// `time.Time` holds year 0 too), so `0000-01-01T00:00:00Z` is returned as is.
pub fn canonical_rfc3339(text: &str) -> Result<String, EvalError> {
    let mut buf = [0u8; CANONICAL_MAX];
    canonical_rfc3339_in(text, &mut buf).map(str::to_string)
}

/// The longest canonical text: `9999-12-31T23:59:59.123456789+14:00` is 35 bytes.
pub const CANONICAL_MAX: usize = 40;

/// [`canonical_rfc3339`] written into `buf` (no allocation: resources are decoded by the
/// million).
pub fn canonical_rfc3339_in<'b>(
    text: &str,
    buf: &'b mut [u8; CANONICAL_MAX],
) -> Result<&'b str, EvalError> {
    canonical_rfc3339_parsed_in(text, buf).map(|(canonical, _)| canonical)
}

/// [`canonical_rfc3339_in`] and the instant it names, from one parse: the instant is what
/// [`parse_timestamp`] reads from the canonical text (`None` outside year 1..=9999 UTC). The
/// decoder keeps both for every time it reads.
pub fn canonical_rfc3339_parsed_in<'b>(
    text: &str,
    buf: &'b mut [u8; CANONICAL_MAX],
) -> Result<(&'b str, Option<Timestamp>), EvalError> {
    let f = parse_rfc3339(text).ok_or_else(|| invalid_timestamp(text))?;
    Ok((write_canonical(&f, buf), f.instant()))
}

/// The instant of `text` when it is canonical in the shape the API writes,
/// `YYYY-MM-DDTHH:MM:SS[.F]Z` (Go's `RFC3339Nano` in UTC: one to nine fraction digits, the
/// last not `0`): `Some(at)` exactly when [`canonical_rfc3339_parsed_in`] returns `text`
/// itself for a text of that shape, with the same `at`. `None` says nothing about any other
/// text, which the general parse then reads. The decoder's fast path: it reads the fields at
/// fixed places and writes no canonical copy to compare.
pub fn parsed_if_canonical_utc(text: &str) -> Option<Option<Timestamp>> {
    let b = text.as_bytes();
    // `YYYY-MM-DDTHH:MM:SS`, then `Z` or `.F…Z`.
    let (head, tail) = b.split_at_checked(19)?;
    let head: &[u8; 19] = head.try_into().ok()?;
    if [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')]
        .iter()
        .any(|&(i, c)| head[i] != c)
    {
        return None;
    }
    let digit = |c: u8| {
        let d = c.wrapping_sub(b'0');
        (d < 10).then_some(u32::from(d))
    };
    let two = |i: usize| Some(digit(head[i])? * 10 + digit(head[i + 1])?);
    let nanos = match tail {
        [b'Z'] => 0,
        [b'.', fraction @ .., b'Z'] if (1..=9).contains(&fraction.len()) => {
            // Canonical: no trailing zero (Go trims them).
            if fraction.last() == Some(&b'0') {
                return None;
            }
            let mut n = 0;
            for &c in fraction {
                n = n * 10 + digit(c)?;
            }
            n * 10u32.pow(9 - fraction.len() as u32)
        }
        _ => return None,
    };
    let f = Rfc3339 {
        year: i64::from(two(0)? * 100 + two(2)?),
        month: two(5)?,
        day: two(8)?,
        hour: two(11)?,
        minute: two(14)?,
        second: two(17)?,
        nanos,
        sub_nanos_fs: 0,
        offset: 0,
    };
    f.valid().then(|| f.instant())
}

fn write_canonical<'b>(f: &Rfc3339, buf: &'b mut [u8; CANONICAL_MAX]) -> &'b str {
    let mut w = Writer { buf, len: 0 };
    w.digits(f.year.unsigned_abs() as u32, 4);
    w.byte(b'-');
    w.digits(f.month, 2);
    w.byte(b'-');
    w.digits(f.day, 2);
    w.byte(b'T');
    w.digits(f.hour, 2);
    w.byte(b':');
    w.digits(f.minute, 2);
    w.byte(b':');
    w.digits(f.second, 2);
    if f.nanos != 0 {
        w.byte(b'.');
        w.digits(f.nanos, 9);
        while w.buf[w.len - 1] == b'0' {
            w.len -= 1;
        }
    }
    if f.offset == 0 {
        w.byte(b'Z');
    } else {
        w.byte(if f.offset < 0 { b'-' } else { b'+' });
        let abs = f.offset.unsigned_abs();
        w.digits(abs / 3600, 2);
        w.byte(b':');
        w.digits(abs % 3600 / 60, 2);
    }
    let len = w.len;
    std::str::from_utf8(&buf[..len]).expect("ASCII digits and punctuation")
}

/// Appends ASCII to a fixed buffer (large enough for any canonical time).
struct Writer<'b> {
    buf: &'b mut [u8; CANONICAL_MAX],
    len: usize,
}

impl Writer<'_> {
    fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `value` in exactly `width` decimal digits, zero-padded (`value` fits: callers know).
    fn digits(&mut self, mut value: u32, width: usize) {
        for i in (0..width).rev() {
            self.buf[self.len + i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
        self.len += width;
    }
}

/// `.5`, `.123456789`: Go's `.999999999` layout (no trailing zeros, nothing for zero).
pub(super) fn fraction_trimmed(nanos: u32) -> String {
    if nanos == 0 {
        return String::new();
    }
    let digits = format!(".{nanos:09}");
    digits.trim_end_matches('0').to_string()
}

/// `string(timestamp)` as cel-go prints it, Go's `t.Format(time.RFC3339Nano)`: the time at its
/// own offset (`Z` for UTC), the fraction without trailing zeros and none when zero:
/// `2024-01-01T10:00:00.5+05:00`, `2025-10-21T10:00:00Z`.
pub fn format_timestamp(t: Timestamp) -> String {
    rfc3339_nano(t, t.offset_minutes())
}

/// `%s` of a timestamp in `format`, as cel-go prints it: RFC3339Nano in UTC
/// (`2024-01-01T05:00:00.5Z` for the time above).
pub fn format_timestamp_utc(t: Timestamp) -> String {
    rfc3339_nano(t, 0)
}

fn rfc3339_nano(t: Timestamp, offset_minutes: i32) -> String {
    let secs = t.unix_seconds() + i64::from(offset_minutes) * 60;
    let (year, month, day) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
    let sod = secs.rem_euclid(SECS_PER_DAY);
    let fraction = fraction_trimmed(t.subsec_nanos());
    let zone = match offset_minutes {
        0 => "Z".to_string(),
        m => {
            let sign = if m < 0 { '-' } else { '+' };
            format!("{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60)
        }
    };
    // Go prints the local year with four digits at least (a year 0 or 10000 can arise only at
    // an offset across the ends of the range).
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}{zone}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the general parse says of `text`, in the fast path's terms: `Some(at)` when it
    /// returns `text` itself as the canonical form.
    fn general(text: &str) -> Option<Option<Timestamp>> {
        let mut buf = [0u8; CANONICAL_MAX];
        match canonical_rfc3339_parsed_in(text, &mut buf) {
            Ok((canonical, at)) if canonical == text => Some(at),
            _ => None,
        }
    }

    /// The fast path agrees with the general parse on every text of its shape it accepts, and
    /// accepts every such text the general parse finds canonical: the calendar's edges (leap
    /// days, month ends, years 0000 and 9999, 23:59:59 and one past each field), and each
    /// place of a valid time replaced by each of a few bytes.
    #[test]
    fn the_canonical_utc_fast_path_is_the_general_parse() {
        let mut texts = Vec::new();
        for year in [0, 1, 4, 100, 400, 1900, 1970, 2000, 2024, 2025, 2100, 9999] {
            for month in [0, 1, 2, 4, 12, 13] {
                for day in [0, 1, 28, 29, 30, 31, 32] {
                    for (h, m, sec) in [(0, 0, 0), (23, 59, 59), (24, 0, 0), (0, 60, 0), (0, 0, 60)]
                    {
                        texts.push(format!(
                            "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{sec:02}Z"
                        ));
                    }
                }
            }
        }
        for base in [
            "2026-12-02T01:26:23Z",
            "2026-12-02T01:26:23.5Z",
            "2026-12-02T01:26:23.312276917Z",
            "2026-12-02T01:26:23.000001Z",
        ] {
            for i in 0..base.len() {
                for c in [
                    '0', '5', '9', '-', ':', 'T', 'Z', 'z', 't', ' ', '/', '.', '+',
                ] {
                    let mut t = base.to_string();
                    t.replace_range(i..=i, &c.to_string());
                    texts.push(t);
                }
            }
        }
        texts.extend(
            [
                "2026-12-02T01:26:23.50Z",
                "2026-12-02T01:26:23.Z",
                "2026-12-02T01:26:23.1234567891Z",
                "2026-12-02T01:26:23.000000000Z",
                "2026-12-02T01:26:23.5+01:00",
                "2026-12-02T1:26:23Z",
                "2026-12-02T01:26:23+00:00",
                "2026-12-02 01:26:23Z",
                "",
            ]
            .map(String::from),
        );
        let mut accepted = 0;
        for text in &texts {
            let fast = parsed_if_canonical_utc(text);
            let slow = general(text);
            // Of its shape (ends in `Z`, a fraction of one to nine digits if any): the same
            // answer; of any other, none.
            let b = text.as_bytes();
            let shaped = b.len() >= 20
                && b.last() == Some(&b'Z')
                && (b.len() == 20 || (b[19] == b'.' && (22..=30).contains(&b.len())));
            if shaped {
                assert_eq!(fast, slow, "{text:?}");
            } else {
                assert_eq!(fast, None, "{text:?}");
            }
            accepted += usize::from(fast.is_some());
        }
        assert!(accepted > 450, "{accepted}");
        assert_eq!(parsed_if_canonical_utc("0000-01-01T00:00:00Z"), Some(None));
    }

    proptest::proptest! {
        /// The same on random texts of 20 to 30 bytes, near-valid ones most of all.
        #[test]
        fn the_canonical_utc_fast_path_agrees_with_the_general_parse(
            text in "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](\\.[0-9]{0,10})?Z|[0-9TZtz:. +-]{20,30}"
        ) {
            proptest::prop_assert_eq!(parsed_if_canonical_utc(&text), general(&text));
        }
    }
}
