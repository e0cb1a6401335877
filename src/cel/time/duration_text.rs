//! Duration text: `duration(string)` (Go's `time.ParseDuration` syntax, cel-cpp's values) and
//! `string(duration)`.
//!
//! Invariant: a parsed duration is exact at a quarter of a nanosecond until the final
//! truncation, as absl computes it.

use super::rfc3339::fraction_grouped;
use super::{Duration, MAX_DURATION_NANOS, NANOS_PER_SEC, duration_overflow, quoted};
use crate::cel::value::EvalError;
use std::str::FromStr;

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
