//! Duration text: `duration(string)` and `string(duration)`, as cel-go reads and prints them
//! (Go's `time.ParseDuration` and `Duration.Seconds`).
//!
//! Invariant: a parsed duration fits Go's `int64` nanoseconds.

use super::{Duration, NANOS_PER_SEC, duration_overflow, quoted};
use crate::cel::value::EvalError;

/// Nanoseconds in one unit of a duration literal, as Go's `time` package names them.
fn unit_nanos(unit: &[u8]) -> Option<u64> {
    Some(match unit {
        b"ns" => 1,
        // `µs` is U+00B5 MICRO SIGN, `μs` U+03BC GREEK SMALL LETTER MU: Go takes both.
        b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
        b"ms" => 1_000_000,
        b"s" => 1_000_000_000,
        b"m" => 60_000_000_000,
        b"h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// 2^63: the magnitude of the most negative duration Go holds.
const LIMIT: u64 = 1 << 63;

/// Go's `leadingInt`: the leading decimal digits as a number, and the rest; `None` past 2^63.
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut x: u64 = 0;
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    for &c in &s[..digits] {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[digits..]))
}

/// Go's `leadingFraction`: the leading decimal digits as a number and its scale (a power of ten,
/// as a double), and the rest; digits past what fits are read and dropped.
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for &c in &s[..digits] {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

fn invalid_duration(text: &str) -> EvalError {
    EvalError::invalid(format!("invalid duration {}", quoted(text)))
}

/// `duration(string)` exactly as cel-go reads it, Go's `time.ParseDuration`: an optional sign,
/// then one or more `<number><unit>` components (`30m`, `1h30m`, `1.5h`, `.5s`, `300ms`, `-2s`,
/// `+5s`), units `ns us µs μs ms s m h`; a lone `0` (signed or not) is zero. Each component is
/// truncated to whole nanoseconds on its own, its fraction scaled through a double as Go does
/// (`0.5ns0.5ns` is 0); the total must fit Go's `int64` nanoseconds, ±2562047h47m16.854775807s
/// (-…808s when negative). Errors: `InvalidArgument` for text that is not a duration,
/// `Overflow` for one beyond that range.
pub fn parse_duration(text: &str) -> Result<Duration, EvalError> {
    let (negative, mut s) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        all => (false, all),
    };
    if s == b"0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid_duration(text));
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return Err(invalid_duration(text));
        }
        let (whole, rest) = leading_int(s).ok_or_else(duration_overflow)?;
        let pre = rest.len() != s.len();
        s = rest;
        let (mut fraction, mut scale, mut post) = (0u64, 1f64, false);
        if let [b'.', rest @ ..] = s {
            (fraction, scale, s) = leading_fraction(rest);
            post = s.len() != rest.len();
        }
        if !pre && !post {
            return Err(invalid_duration(text));
        }
        let unit_len = s
            .iter()
            .position(|c| *c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let unit = unit_nanos(&s[..unit_len]).ok_or_else(|| invalid_duration(text))?;
        s = &s[unit_len..];
        if whole > LIMIT / unit {
            return Err(duration_overflow());
        }
        let mut v = whole * unit;
        if fraction > 0 {
            // Go's arithmetic, double rounding included; below 2^63 + 3.6e12, so no wrap.
            v += (fraction as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(duration_overflow());
            }
        }
        // Go adds in uint64, which wraps when two components of 2^63 meet (then reads 0).
        total = total.wrapping_add(v);
        if total > LIMIT {
            return Err(duration_overflow());
        }
    }
    let nanos = if negative {
        (total as i64).wrapping_neg()
    } else {
        i64::try_from(total).map_err(|_| duration_overflow())?
    };
    Ok(Duration {
        nanos: i128::from(nanos),
    })
}

/// `string(duration)` as cel-go prints it: Go's `Duration.Seconds()` (whole seconds plus the
/// nanoseconds over 1e9, in a double) in the shortest decimal that reads back as that double,
/// never in exponent form, then `s`: `1.5s`, `5400s`, `0.000000001s`,
/// `9223372036.854776s` (the double's precision, as in Go).
pub fn format_duration(d: Duration) -> String {
    let secs = d.nanos / NANOS_PER_SEC;
    let nanos = d.nanos % NANOS_PER_SEC;
    let seconds = secs as f64 + nanos as f64 / 1e9;
    // Rust's `Display` for f64 is the shortest round-trip decimal without an exponent, which is
    // Go's `strconv.FormatFloat(x, 'f', -1, 64)`; `-0` cannot arise (0 ns is `0 + 0/1e9`).
    format!("{seconds}s")
}
