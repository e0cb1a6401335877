//! The Go text formats of settings and requests, each parsed or printed once: booleans as
//! `strconv.ParseBool`, durations as `time.ParseDuration` and `time.Duration.String`, the Google
//! Cloud duration strings of the Go `hyperfleet-broker` library (`parseGoogleCloudDuration`:
//! Go's syntax or a whole number of days), and query components as `url.QueryEscape` writes
//! them. (The CloudEvent's bytes, Go's `encoding/json`, stay with their encoder in `event`.)
//!
//! Takes text; gives values (`None` for what Go rejects), or text as Go writes it.
//!
//! Invariant: these functions are exact: no trimming, no extra leniency. Where a loader is more
//! lenient than Go (the config trims the text of a boolean or a duration), it says so at the
//! call, so what Go itself accepts is readable here.

use std::fmt::Write;
use std::time::Duration;

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` are true, `0 f F FALSE false False` false,
/// anything else (including surrounding spaces) is not a boolean.
pub fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration`, in nanoseconds: an optional sign, then one or more
/// `<number><unit>` components (`30m`, `1h30m`, `1.5h`, `.5s`, `5.s`, `300ms`, `-2s`, `+5s`),
/// units `ns us µs μs ms s m h`; a lone `0` (signed or not) is zero; empty text, a number
/// without a unit and an unknown unit are errors, and so is anything outside the `i64` range
/// (about ±292 years).
///
/// As in Go, each component's fraction is scaled through an `f64` and truncated to whole
/// nanoseconds (`0.5ns0.5ns` is 0), and fraction digits past what fits in 63 bits are read but
/// ignored; where Go's unsigned sum wraps (two components of exactly 2^63 ns) the answer is Go's.
pub fn parse_go_duration(text: &str) -> Option<i64> {
    // One implementation of Go's syntax serves CEL's `duration()` and the config.
    let d = crate::cel::time::parse_duration(text).ok()?;
    i64::try_from(d.nanos()).ok()
}

/// The Go `hyperfleet-broker` library's `parseGoogleCloudDuration`, in nanoseconds: surrounding
/// spaces trimmed, then Go's `time.ParseDuration` syntax ([`parse_go_duration`]), else a whole
/// number of days (`7d`, `+7d`, `-1d`; `1.5d` is an error). A day count beyond the `i64`
/// nanosecond range saturates (Go's multiplication wraps to a meaningless value; saturating
/// keeps it out of every valid range, so the range check reports it).
pub fn parse_cloud_duration(text: &str) -> Option<i64> {
    const DAY_NANOS: i64 = 86_400_000_000_000;
    let text = text.trim();
    if let Some(nanos) = parse_go_duration(text) {
        return Some(nanos);
    }
    let days: i64 = text.strip_suffix('d')?.parse().ok()?;
    Some(days.saturating_mul(DAY_NANOS))
}

/// A duration as Go's `time.Duration.String` writes it: `0s`, `1.5µs`, `300ms`, `5s`, `1m30s`,
/// `1h0m0s`.
pub fn go_duration_string(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", decimal(nanos, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", decimal(nanos, 6));
    }
    let secs = nanos / 1_000_000_000;
    let (hours, minutes) = (secs / 3600, secs / 60 % 60);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&decimal(nanos % 60_000_000_000, 9));
    out.push('s');
    out
}

/// `value / 10^digits` written with only the fraction digits needed.
fn decimal(value: u128, digits: u32) -> String {
    let unit = 10u128.pow(digits);
    let (whole, frac) = (value / unit, value % unit);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = digits as usize);
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// A signed nanosecond count in Go's duration syntax, for messages (`-1s`).
pub fn signed_go_duration(nanos: i128) -> String {
    let magnitude = Duration::from_nanos(u64::try_from(nanos.unsigned_abs()).unwrap_or(u64::MAX));
    let sign = if nanos < 0 { "-" } else { "" };
    format!("{sign}{}", go_duration_string(magnitude))
}

/// A query component as Go's `url.QueryEscape` writes it: ASCII alphanumerics and `-_.~` as
/// they are, space as `+`, every other byte as `%XX`.
pub fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            _ => {
                // Writing to a String cannot fail.
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_bools() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_go_bool(t), Some(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_go_bool(f), Some(false), "{f}");
        }
        // The config loader used to call this on trimmed text and broker.yaml's reader had its
        // own copy on untrimmed text; Go's ParseBool does not trim, so neither does this.
        for bad in ["", "yes", "tRUE", " true", "true ", "2"] {
            assert_eq!(parse_go_bool(bad), None, "{bad}");
        }
    }

    const SEC: i64 = 1_000_000_000;

    #[test]
    fn go_durations() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("0s", 0),
            ("5s", 5 * SEC),
            ("30s", 30 * SEC),
            ("1478s", 1478 * SEC),
            ("-5s", -5 * SEC),
            ("+5s", 5 * SEC),
            ("5.0s", 5 * SEC),
            ("5.6s", 5 * SEC + 600_000_000),
            ("5.s", 5 * SEC),
            (".5s", SEC / 2),
            ("1.004s", SEC + 4_000_000),
            ("100.00100s", 100 * SEC + 1_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("15m", 15 * 60 * SEC),
            ("16h", 16 * 3600 * SEC),
            ("3h30m", 12_600 * SEC),
            ("10.5s4m", 250 * SEC + SEC / 2),
            ("-2m3.4s", -(123 * SEC + 400_000_000)),
            ("1h2m3s4ms5us6ns", 3723 * SEC + 4_005_006),
            ("39h9m14.425s", 140_954 * SEC + 425_000_000),
            ("0.3333333333333333333h", 20 * 60 * SEC),
            ("9007199254740993ns", 9_007_199_254_740_993),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("0.100000000000000000000h", 6 * 60 * SEC),
            ("0.830103483285477580700h", 2988 * SEC + 372_539_827),
        ];
        for &(text, want) in cases {
            assert_eq!(parse_go_duration(text), Some(want), "{text}");
        }
        for bad in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "5 s",
            " 5s",
            "1h30",
            "3x",
            "9223372036854775808ns",
            "9223372036854775.808us",
            "9223372036854ms775us808ns",
            "-9223372036854775809ns",
        ] {
            assert_eq!(parse_go_duration(bad), None, "{bad:?}");
        }
        // Go's unsigned sum wraps to 0 here and time.ParseDuration returns 0, as cel-go's
        // duration() does: the one parser both share gives Go's answer.
        assert_eq!(
            parse_go_duration("9223372036854775808ns9223372036854775808ns"),
            Some(0)
        );
    }

    /// The config read durations with the CEL compiler's parser (cel-cpp's rules) and
    /// broker.yaml with a float parser of its own; where they disagreed, this is what Go does.
    #[test]
    fn go_durations_where_the_old_parsers_disagreed() {
        // CEL computes at a quarter nanosecond and truncates once (1ns); Go truncates each
        // component's fraction (0).
        assert_eq!(parse_go_duration("0.5ns0.5ns"), Some(0));
        // CEL accepts up to 10,000 years; Go stops at the i64 range (2562047h47m16.854775807s).
        assert_eq!(parse_go_duration("2562047h"), Some(2_562_047 * 3600 * SEC));
        assert_eq!(parse_go_duration("2562048h"), None);
        // The float parser said 600.0000000001s was over 600s; Go truncates it to 600s.
        assert_eq!(parse_cloud_duration("600.0000000001s"), Some(600 * SEC));
        // The float parser accepted any magnitude; Go's overflows (and then is no day count).
        assert_eq!(parse_cloud_duration("9999999999h"), None);
    }

    #[test]
    fn cloud_durations_parse_like_the_go_broker_library() {
        let cases: &[(&str, i64)] = &[
            ("604800s", 604_800 * SEC),
            ("1h30m", 5400 * SEC),
            ("1.5s", SEC + SEC / 2),
            ("7d", 604_800 * SEC),
            ("+7d", 604_800 * SEC),
            ("-1d", -86_400 * SEC),
            (" 7d ", 604_800 * SEC),
            ("0", 0),
            ("-2m", -120 * SEC),
            ("99999999999d", i64::MAX),
        ];
        for &(text, want) in cases {
            assert_eq!(parse_cloud_duration(text), Some(want), "{text}");
        }
        for bad in ["10", "1.5d", "s", "3x", "d", "1h1d"] {
            assert_eq!(parse_cloud_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn go_duration_strings() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_millis(300), "300ms"),
            (Duration::from_secs(5), "5s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(3_601_500), "1h0m1.5s"),
            (Duration::from_secs(100 * 3600), "100h0m0s"),
        ];
        for (d, want) in cases {
            assert_eq!(go_duration_string(d), want, "{d:?}");
        }
        assert_eq!(signed_go_duration(-1_000_000_000), "-1s");
    }

    #[test]
    fn printed_durations_parse_back() {
        for nanos in [1, 1_500, 300_000_000, 90 * SEC, 3_601_500_000_000, i64::MAX] {
            let text = go_duration_string(Duration::from_nanos(nanos.unsigned_abs()));
            assert_eq!(parse_go_duration(&text), Some(nanos), "{text}");
        }
    }

    #[test]
    fn escaping_matches_go_query_escape() {
        assert_eq!(
            query_escape("labels.env='a b' and x=1/2&y"),
            "labels.env%3D%27a+b%27+and+x%3D1%2F2%26y"
        );
        assert_eq!(query_escape("-_.~Az09"), "-_.~Az09");
        assert_eq!(query_escape("é"), "%C3%A9");
    }
}
