//! What the tables of `tests/data/eval/time.txt` cannot say: the canonical text of resource time
//! fields (Go 1.19's `time` package; each disagreement with cel-cpp marked where the table holds
//! it), the constructors and accessors of the types, error messages, and properties (proptest).

use super::rfc3339::fraction_trimmed;
use super::*;
use crate::cel::value::ErrorKind;
use ErrorKind::{InvalidArgument, NoMatchingOverload, Overflow};
use proptest::prelude::*;

fn ts(text: &str) -> Timestamp {
    parse_timestamp(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn dur(text: &str) -> Duration {
    parse_duration(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn kind<T>(result: Result<T, EvalError>) -> Result<T, ErrorKind> {
    result.map_err(|e| e.kind)
}

/// (text, `canonical_rfc3339(text)` or None for an error): the inputs of the `timestamps`
/// section of `tests/data/eval/time.txt`. `canonical_rfc3339` (the form of a resource's time
/// fields, Go's `RFC3339Nano` after `time.Parse`) is not a CEL function, so its table stays here.
#[rustfmt::skip]
const CANONICAL: &[(&str, Option<&str>)] = &[
("2009-02-13T23:31:30Z", Some("2009-02-13T23:31:30Z")),
("9999-12-31T23:59:59.999999999Z", Some("9999-12-31T23:59:59.999999999Z")),
("0001-01-01T00:00:00Z", Some("0001-01-01T00:00:00Z")),
("1970-01-01T00:00:00Z", Some("1970-01-01T00:00:00Z")),
("1969-12-31T23:59:59.999999999Z", Some("1969-12-31T23:59:59.999999999Z")),
("1969-12-31T23:59:59.5Z", Some("1969-12-31T23:59:59.5Z")),
("2025-10-21T12:00:00.5+02:00", Some("2025-10-21T12:00:00.5+02:00")),
("2025-10-21T12:00:00.500000000+02:00", Some("2025-10-21T12:00:00.5+02:00")),
("2025-10-21T12:00:00.123456789Z", Some("2025-10-21T12:00:00.123456789Z")),
("2025-10-21T12:00:00.120Z", Some("2025-10-21T12:00:00.12Z")),
("2025-10-21T12:00:00.000001Z", Some("2025-10-21T12:00:00.000001Z")),
("2025-10-21T12:00:00.0000001Z", Some("2025-10-21T12:00:00.0000001Z")),
("2025-10-21T12:00:00.1Z", Some("2025-10-21T12:00:00.1Z")),
("2025-10-21T12:00:00.12Z", Some("2025-10-21T12:00:00.12Z")),
("2025-10-21T12:00:00.1234Z", Some("2025-10-21T12:00:00.1234Z")),
("2025-10-21T12:00:00.000Z", Some("2025-10-21T12:00:00Z")),
("2023-01-01T00:00:00.1234567891Z", Some("2023-01-01T00:00:00.123456789Z")),
("2023-01-01T00:00:00.9999999999Z", Some("2023-01-01T00:00:00.999999999Z")),
("9999-12-31T23:59:59.9999999990Z", Some("9999-12-31T23:59:59.999999999Z")),
("9999-12-31T23:59:59.9999999999Z", Some("9999-12-31T23:59:59.999999999Z")), // cel-cpp: out of range; Go: .999999999
("9999-12-31T23:59:59.99999999925Z", Some("9999-12-31T23:59:59.999999999Z")), // likewise
("9999-12-31T23:59:59.999999999249999Z", Some("9999-12-31T23:59:59.999999999Z")),
("9999-12-31T23:59:59.9999999992499999999Z", Some("9999-12-31T23:59:59.999999999Z")),
("9999-12-31T23:59:59.9999999999+00:00", Some("9999-12-31T23:59:59.999999999Z")),
("9999-12-31T22:59:59.99999999901-01:00", Some("9999-12-31T22:59:59.999999999-01:00")),
("2023-01-01T0:00:00Z", Some("2023-01-01T00:00:00Z")),
("2023-01-01T9:59:59-09:30", Some("2023-01-01T09:59:59-09:30")),
("2023-01-01T00:00:00+23:59", Some("2023-01-01T00:00:00+23:59")),
("2023-01-01T00:00:00-23:59", Some("2023-01-01T00:00:00-23:59")),
("2023-01-01T00:00:00-00:00", Some("2023-01-01T00:00:00Z")),
("2023-01-01T00:00:00+00:00", Some("2023-01-01T00:00:00Z")),
("2024-02-29T00:00:00Z", Some("2024-02-29T00:00:00Z")),
("2000-02-29T12:00:00Z", Some("2000-02-29T12:00:00Z")),
("2024-12-31T23:59:59Z", Some("2024-12-31T23:59:59Z")),
("2023-12-31T23:59:59+01:00", Some("2023-12-31T23:59:59+01:00")),
("2023-03-31T00:00:00Z", Some("2023-03-31T00:00:00Z")),
("2023-04-30T00:00:00Z", Some("2023-04-30T00:00:00Z")),
("2023-02-28T23:59:59Z", Some("2023-02-28T23:59:59Z")),
("1600-02-29T00:00:00Z", Some("1600-02-29T00:00:00Z")),
("0004-02-29T00:00:00Z", Some("0004-02-29T00:00:00Z")),
("0001-01-01T00:00:00-00:01", Some("0001-01-01T00:00:00-00:01")),
("9999-12-31T23:59:59+00:01", Some("9999-12-31T23:59:59+00:01")),
("9999-12-31T23:59:59.999999999Z", Some("9999-12-31T23:59:59.999999999Z")),
("2262-04-11T23:47:16.854775807Z", Some("2262-04-11T23:47:16.854775807Z")),
("1677-09-21T00:12:43.145224192Z", Some("1677-09-21T00:12:43.145224192Z")),
("0000-01-01T00:00:00Z", Some("0000-01-01T00:00:00Z")),
("0000-12-31T23:59:59Z", Some("0000-12-31T23:59:59Z")),
("0001-01-01T00:00:00+00:01", Some("0001-01-01T00:00:00+00:01")),
("9999-12-31T23:59:59-00:01", Some("9999-12-31T23:59:59-00:01")),
("9999-12-31T23:59:59.999999999-00:01", Some("9999-12-31T23:59:59.999999999-00:01")),
("2023-02-29T00:00:00Z", None),
("2023-02-30T00:00:00Z", None),
("1900-02-29T00:00:00Z", None),
("2100-02-29T00:00:00Z", None),
("2023-04-31T00:00:00Z", None),
("2023-06-31T00:00:00Z", None),
("2023-09-31T00:00:00Z", None),
("2023-11-31T00:00:00Z", None),
("2023-01-32T00:00:00Z", None),
("2023-13-01T00:00:00Z", None),
("2023-00-01T00:00:00Z", None),
("2023-01-00T00:00:00Z", None),
("2023-01-01T24:00:00Z", None),
("2023-01-01T23:60:00Z", None),
("2023-01-01T23:59:61Z", None),
("2023-01-01T00:00:00+24:00", None), // only Go parses it
("2023-01-01T00:00:00+00:60", None), // only Go parses it
("2023-01-01T00:00:00+99:00", None), // only Go parses it
("2023-01-01T00:00:00.Z", None),
("2023-01-01T00:00:00,5Z", None), // only Go parses it
("2023-01-01 00:00:00Z", None),
("2023-01-01T00:00:00", None),
("2023-01-01T00:00Z", None),
("2023-01-01", None),
("2023-01-01T00:00:00UTC", None),
("2023-01-01T00:00:00Zjunk", None),
("2023-01-01T00:00:00+02:00:00", None), // only cel-cpp parses it
("+2023-01-01T00:00:00Z", None),
("-2023-01-01T00:00:00Z", None), // only cel-cpp parses it
("2023-01-01T000:00:00Z", None),
("2023-01-01T00:0:00Z", None), // only cel-cpp parses it
("2023-01-01T00:00:0Z", None), // only cel-cpp parses it
("2023-01-01T00:00:00.-1Z", None),
("2023-01-01T00:00:00+2:00", None),
("2023-01-01T00:00:00+02:0", None),
("2023-01-01T00:00:00.5.5Z", None),
("2023-01-01T00:00:00Z+02:00", None),
("2023-01-01T00:00:00ZZ", None),
("20230101T000000Z", None),
("2023/01/01T00:00:00Z", None),
("２023-01-01T00:00:00Z", None),
("2023-01-01T00:00:00Ｚ", None),
("2023-01-01t00:00:00Z", None), // only cel-cpp parses it
("2023-01-01T00:00:00z", None), // only cel-cpp parses it
("2016-12-31T23:59:60Z", None), // only cel-cpp parses it
(" 2023-01-01T00:00:00Z", None), // only cel-cpp parses it
("2023-01-01T00:00:00Z ", None), // only cel-cpp parses it
("2023-1-01T00:00:00Z", None), // only cel-cpp parses it
("2023-01-01T00:00:00+0200", None), // only cel-cpp parses it
("2023-01-01T00:00:00+02", None), // only cel-cpp parses it
("02023-01-01T00:00:00Z", None), // only cel-cpp parses it
("10000-01-01T00:00:00Z", None), // only cel-cpp parses it; see has_year_beyond_9999
("", None),
];

#[test]
fn canonical_text_is_what_go_prints() {
    for &(text, canonical) in CANONICAL {
        let got = canonical_rfc3339(text).ok();
        assert_eq!(got.as_deref(), canonical, "canonical_rfc3339({text:?})");
        // One parse gives the canonical text and the instant parse_timestamp reads from it.
        let mut buf = [0u8; CANONICAL_MAX];
        let both = canonical_rfc3339_parsed_in(text, &mut buf).ok();
        let want = canonical.map(|c| (c, parse_timestamp(c).ok()));
        assert_eq!(both, want, "canonical_rfc3339_parsed_in({text:?})");
    }
}

const PARTS: [TimePart; 10] = [
    TimePart::FullYear,
    TimePart::Month,
    TimePart::Date,
    TimePart::DayOfMonth,
    TimePart::DayOfWeek,
    TimePart::DayOfYear,
    TimePart::Hours,
    TimePart::Minutes,
    TimePart::Seconds,
    TimePart::Milliseconds,
];

#[test]
fn huge_fixed_offsets_do_not_overflow() {
    let t = Timestamp::MAX;
    let tz = Some("9223372036854775807:9223372036854775807");
    assert_eq!(
        kind(timestamp_part(t, TimePart::Hours, tz)),
        Err(InvalidArgument)
    );
    let tz = Some("-2562047788015215:00");
    assert!(timestamp_part(t, TimePart::FullYear, tz).is_ok());
}

#[test]
fn calendar_parts_of_a_duration_have_no_overload() {
    for part in PARTS.into_iter().filter(|p| !p.applies_to_duration()) {
        let err = duration_part(dur("1s"), part).unwrap_err();
        assert_eq!(err.kind, NoMatchingOverload);
        assert!(err.message.contains(part.method_name()), "{}", err.message);
    }
}

#[test]
fn method_names_select_parts() {
    for part in PARTS {
        assert_eq!(TimePart::from_method(part.method_name()), Some(part));
    }
    assert_eq!(
        TimePart::from_method("getDayOfMonth"),
        Some(TimePart::DayOfMonth)
    );
    assert_eq!(TimePart::from_method("getYear"), None);
    assert_eq!(TimePart::from_method("gethours"), None);
}

#[test]
fn constructors_enforce_the_ranges() {
    assert_eq!(
        Timestamp::from_unix_seconds(-62_135_596_800)
            .map(format_timestamp)
            .as_deref(),
        Ok("0001-01-01T00:00:00Z")
    );
    assert_eq!(
        Timestamp::from_unix_seconds(253_402_300_799)
            .map(format_timestamp)
            .as_deref(),
        Ok("9999-12-31T23:59:59Z")
    );
    // Conformance timestamp_range/from_int_under and from_int_over.
    assert_eq!(
        kind(Timestamp::from_unix_seconds(-62_135_596_801)),
        Err(Overflow)
    );
    assert_eq!(
        kind(Timestamp::from_unix_seconds(253_402_300_800)),
        Err(Overflow)
    );
    assert_eq!(kind(Timestamp::from_unix_seconds(i64::MIN)), Err(Overflow));
    assert_eq!(
        kind(Timestamp::from_nanos(Timestamp::MIN.nanos() - 1)),
        Err(Overflow)
    );
    assert_eq!(
        kind(Timestamp::from_nanos(Timestamp::MAX.nanos() + 1)),
        Err(Overflow)
    );
    assert_eq!(
        Timestamp::from_nanos(Timestamp::MAX.nanos()),
        Ok(Timestamp::MAX)
    );
    assert_eq!(Duration::from_nanos(MAX_DURATION_NANOS), Ok(Duration::MAX));
    assert_eq!(Duration::from_nanos(-MAX_DURATION_NANOS), Ok(Duration::MIN));
    assert_eq!(
        kind(Duration::from_nanos(MAX_DURATION_NANOS + 1)),
        Err(Overflow)
    );
    assert_eq!(
        kind(Duration::from_nanos(-MAX_DURATION_NANOS - 1)),
        Err(Overflow)
    );
    assert_eq!(
        Duration::from_seconds(-90).map(format_duration).as_deref(),
        Ok("-90s")
    );
    let epoch = Timestamp::from_system_time(std::time::UNIX_EPOCH);
    assert_eq!(epoch, Ok(Timestamp::UNIX_EPOCH));
    let before = std::time::UNIX_EPOCH - std::time::Duration::from_nanos(1_500_000_000);
    assert_eq!(
        Timestamp::from_system_time(before).map(|t| t.nanos()),
        Ok(-1_500_000_000)
    );
}

#[test]
fn accessors_split_seconds_and_nanoseconds() {
    let t = ts("1969-12-31T23:59:59.25Z");
    assert_eq!((t.unix_seconds(), t.subsec_nanos()), (-1, 250_000_000));
    assert_eq!(ts("2009-02-13T23:31:30.9Z").unix_seconds(), 1_234_567_890);
    let d = dur("-1.25s");
    assert_eq!(
        (d.seconds_i64(), d.subsec_nanos(), d.nanos()),
        (-1, -250_000_000, -1_250_000_000)
    );
    assert_eq!(dur("-9223372036.854775808s").nanos_i64(), Ok(i64::MIN));
    let beyond_i64 = Duration::from_nanos(i128::from(i64::MAX) + 1).unwrap();
    assert_eq!(kind(beyond_i64.nanos_i64()), Err(Overflow));
}

#[test]
fn error_messages_are_short_and_lowercase() {
    let message = |r: Result<Timestamp, EvalError>| r.unwrap_err().message;
    assert_eq!(
        message(parse_timestamp("2023-02-30T00:00:00Z")),
        "invalid timestamp \"2023-02-30T00:00:00Z\""
    );
    assert_eq!(
        message(parse_timestamp("0000-01-01T00:00:00Z")),
        "timestamp overflow"
    );
    assert_eq!(
        parse_duration("5").unwrap_err().message,
        "invalid duration \"5\""
    );
    assert_eq!(
        parse_duration("320000000000s").unwrap_err().message,
        "duration overflow"
    );
    let overflow = ts_sub_ts(ts("2025-10-21T12:00:00Z"), Timestamp::MIN).unwrap_err();
    assert_eq!(overflow.message, "integer overflow");
    let long = "x".repeat(1000);
    let cut = message(parse_timestamp(&long));
    assert_eq!(cut, format!("invalid timestamp \"{}\"…", "x".repeat(64)));
    assert_eq!(
        message(parse_timestamp("\u{e9}\"\n")),
        "invalid timestamp \"\u{e9}\\\"\\n\""
    );
}

/// The cases of ../shared/cel-conformance/timestamps.textproto and conversions.textproto
/// that these functions decide, each named after its test.
#[test]
fn conformance_cases() {
    let t = ts("2009-02-13T23:31:30Z");
    let get = |t: Timestamp, p: &str, tz: Option<&str>| {
        timestamp_part(t, TimePart::from_method(p).unwrap(), tz)
    };
    // timestamp_conversions, conversions/int/timestamp
    assert_eq!(t.unix_seconds(), 1_234_567_890);
    assert_eq!(ts("2004-09-16T23:59:59Z").unix_seconds(), 1_095_379_199);
    assert_eq!(format_timestamp(t), "2009-02-13T23:31:30Z");
    assert_eq!(
        format_timestamp(ts("9999-12-31T23:59:59.999999999Z")),
        "9999-12-31T23:59:59.999999999Z"
    );
    // duration_conversions
    assert_eq!(format_duration(dur("1000000s")), "1000000s");
    // timestamp_selectors
    for (p, want) in [
        ("getDate", 13),
        ("getDayOfMonth", 12),
        ("getDayOfWeek", 5),
        ("getDayOfYear", 43),
        ("getFullYear", 2009),
        ("getHours", 23),
        ("getMinutes", 31),
        ("getMonth", 1),
        ("getSeconds", 30),
    ] {
        assert_eq!(get(t, p, None), Ok(want), "{p}");
    }
    assert_eq!(
        get(
            ts("2009-02-13T23:31:20.123456789Z"),
            "getMilliseconds",
            None
        ),
        Ok(123)
    );
    // timestamp_selectors_tz
    let early = ts("2009-02-13T02:00:00Z");
    for (at, p, tz, want) in [
        (t, "getDate", "Australia/Sydney", 14),
        (t, "getDayOfMonth", "US/Central", 12),
        (t, "getDayOfMonth", "+11:00", 13),
        (early, "getDayOfMonth", "-02:30", 11),
        (early, "getDayOfMonth", "America/St_Johns", 11),
        (t, "getDayOfWeek", "UTC", 5),
        (t, "getDayOfYear", "US/Central", 43),
        (t, "getFullYear", "-09:30", 2009),
        (t, "getHours", "02:00", 1),
        (t, "getMinutes", "Asia/Kathmandu", 16),
        (t, "getMonth", "UTC", 1),
        (t, "getSeconds", "-00:00", 30),
    ] {
        assert_eq!(get(at, p, Some(tz)), Ok(want), "{p}({tz})");
    }
    // timestamp_equality, duration_equality, comparisons
    assert_eq!(t, ts("2009-02-13T23:31:30Z"));
    assert_ne!(ts("2009-02-13T23:31:29Z"), t);
    assert_ne!(ts("2000-01-01T00:00:00Z"), ts("2001-01-01T00:00:00Z"));
    assert_eq!(dur("123s"), dur("123s"));
    assert_ne!(dur("60s"), dur("3600s"));
    assert_ne!(dur("86400s"), dur("86164s"));
    assert!(ts("2009-02-13T23:00:00Z") <= ts("2009-02-13T23:00:00Z"));
    assert!(ts("2009-02-13T23:00:00Z") > ts("2009-02-13T22:59:59Z"));
    assert!(ts("2009-02-13T23:00:00Z") < ts("2009-03-13T23:00:00Z"));
    assert!(dur("300s") > dur("200s") && dur("120s") < dur("200s"));
    // timestamp_arithmetic
    let plus = |a: &str, b: &str| ts_add_dur(ts(a), dur(b));
    assert_eq!(
        plus("2009-02-13T23:00:00Z", "240s"),
        Ok(ts("2009-02-13T23:04:00Z"))
    );
    assert_eq!(
        plus("2009-02-13T23:01:00Z", "120s"),
        Ok(ts("2009-02-13T23:03:00Z"))
    );
    assert_eq!(dur_add(dur("600s"), dur("50s")), Ok(dur("650s")));
    assert_eq!(
        plus("0001-01-01T00:00:01.000000001Z", "-999999999ns"),
        Ok(ts("0001-01-01T00:00:00.000000002Z"))
    );
    assert_eq!(
        plus("0001-01-01T00:00:01.999999999Z", "999999999ns"),
        Ok(ts("0001-01-01T00:00:02.999999998Z"))
    );
    assert_eq!(
        ts_sub_dur(ts("2009-02-13T23:10:00Z"), dur("600s")),
        Ok(ts("2009-02-13T23:00:00Z"))
    );
    assert_eq!(
        ts_sub_ts(ts("2009-02-13T23:31:00Z"), ts("2009-02-13T23:29:00Z")),
        Ok(dur("120s"))
    );
    assert_eq!(dur_sub(dur("900s"), dur("42s")), Ok(dur("858s")));
    // duration_converters (get_milliseconds binds seconds: 123, nanos: 321456789)
    assert_eq!(duration_part(dur("10000s"), TimePart::Hours), Ok(2));
    assert_eq!(
        duration_part(dur("123.321456789s"), TimePart::Milliseconds),
        Ok(321)
    );
    assert_eq!(duration_part(dur("3730s"), TimePart::Minutes), Ok(62));
    assert_eq!(duration_part(dur("3730s"), TimePart::Seconds), Ok(3730));
    // timestamp_range
    assert_eq!(kind(parse_timestamp("0000-01-01T00:00:00Z")), Err(Overflow));
    assert_eq!(
        kind(parse_timestamp("10000-01-01T00:00:00Z")),
        Err(Overflow)
    );
    assert_eq!(
        kind(Timestamp::from_unix_seconds(-62_135_596_801)),
        Err(Overflow)
    );
    assert_eq!(
        kind(Timestamp::from_unix_seconds(253_402_300_800)),
        Err(Overflow)
    );
    assert_eq!(kind(plus("0001-01-01T00:00:00Z", "-1s")), Err(Overflow));
    assert_eq!(kind(plus("9999-12-31T23:59:59Z", "1s")), Err(Overflow));
    assert_eq!(
        kind(plus("9999-12-31T23:59:59.999999999Z", "1ns")),
        Err(Overflow)
    );
    assert_eq!(kind(plus("0001-01-01T00:00:00Z", "-1ns")), Err(Overflow));
    let (min, max) = (ts("0001-01-01T00:00:00Z"), ts("9999-12-31T23:59:59Z"));
    assert_eq!(kind(ts_sub_ts(max, min)), Err(Overflow));
    assert_eq!(kind(ts_sub_ts(min, max)), Err(Overflow));
    // duration_range
    assert_eq!(kind(parse_duration("-320000000000s")), Err(Overflow));
    assert_eq!(kind(parse_duration("320000000000s")), Err(Overflow));
    // Go's time.ParseDuration does not read 200000000000s (beyond its i64 nanoseconds).
    assert_eq!(kind(parse_duration("200000000000s")), Err(Overflow));
    let big = Duration::from_seconds(200_000_000_000).unwrap();
    let neg_big = Duration::from_seconds(-200_000_000_000).unwrap();
    assert_eq!(kind(dur_add(neg_big, neg_big)), Err(Overflow));
    assert_eq!(kind(dur_add(big, big)), Err(Overflow));
    assert_eq!(kind(dur_sub(neg_big, big)), Err(Overflow));
    assert_eq!(kind(dur_sub(big, neg_big)), Err(Overflow));
}

#[test]
fn the_sentinel_staleness_rule() {
    // now - timestamp(ref_time) > duration("30m"), around the boundary.
    let now = ts("2025-10-21T12:31:00Z");
    let stale = |r: &str| ts_sub_ts(now, ts(r)).map(|d| d > dur("30m"));
    assert_eq!(stale("2025-10-21T12:00:00Z"), Ok(true));
    assert_eq!(stale("2025-10-21T12:01:00Z"), Ok(false));
    assert_eq!(stale("2025-10-21T12:00:59.999999999Z"), Ok(true));
    assert_eq!(stale("2025-10-21T14:00:59.999999999+02:00"), Ok(true));
    assert_eq!(stale("2025-10-21T12:31:00.5Z"), Ok(false));
    assert_eq!(kind(stale("0001-01-01T00:00:00Z")), Err(Overflow));
}

proptest! {
    #[test]
    fn civil_dates_agree_with_chrono(days in -719_162i64..=2_932_896) {
        let (y, m, d) = civil_from_days(days);
        let date = chrono::NaiveDate::from_ymd_opt(y as i32, m, d).unwrap();
        let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
        prop_assert_eq!((date - epoch).num_days(), days);
        prop_assert_eq!(days_from_civil(y, m, d), days);
        use chrono::Datelike;
        prop_assert_eq!(weekday(days), i64::from(date.weekday().num_days_from_sunday()));
    }

    #[test]
    fn timestamps_round_trip_through_text(
        nanos in Timestamp::MIN.nanos()..=Timestamp::MAX.nanos(),
        offset_min in -1439i32..=1439,
    ) {
        let t = Timestamp::from_nanos(nanos).unwrap();
        let text = format_timestamp(t);
        prop_assert_eq!(parse_timestamp(&text), Ok(t));
        prop_assert_eq!(canonical_rfc3339(&text).map(|c| parse_timestamp(&c)), Ok(Ok(t)));
        // The same instant written with an offset, as Go would print it.
        let local = nanos + i128::from(offset_min) * 60 * NANOS_PER_SEC;
        let secs = local.div_euclid(NANOS_PER_SEC) as i64;
        let (y, mo, d) = civil_from_days(secs.div_euclid(SECS_PER_DAY));
        prop_assume!((1..=9999).contains(&y));
        let sod = secs.rem_euclid(SECS_PER_DAY);
        let sign = if offset_min < 0 { '-' } else { '+' };
        let (oh, om) = (offset_min.abs() / 60, offset_min.abs() % 60);
        let frac = fraction_trimmed(local.rem_euclid(NANOS_PER_SEC) as u32);
        let zone = if offset_min == 0 { "Z".to_string() } else { format!("{sign}{oh:02}:{om:02}") };
        let written = format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}{frac}{zone}",
            sod / 3600, sod % 3600 / 60, sod % 60);
        prop_assert_eq!(parse_timestamp(&written), Ok(t));
        prop_assert_eq!(canonical_rfc3339(&written), Ok(written.clone()));
    }

    /// `string(duration)` loses only what Go's double of seconds loses (a relative 2^-52),
    /// and reads back with `duration()` (but for the last microseconds of the range, which
    /// round up past it).
    #[test]
    fn durations_round_trip_through_text(nanos in i64::MIN..=i64::MAX) {
        let d = Duration::from_nanos(nanos.into()).unwrap();
        let text = format_duration(d);
        match parse_duration(&text) {
            Ok(back) => {
                let error = (back.nanos() - d.nanos()).unsigned_abs();
                prop_assert!(error <= 1.max(nanos.unsigned_abs() as u128 >> 51), "{text}");
            }
            Err(_) => prop_assert!(nanos.unsigned_abs() > (i64::MAX as u64) - 10_000, "{text}"),
        }
    }

    #[test]
    fn difference_then_sum_is_identity(
        a in Timestamp::MIN.nanos()..=Timestamp::MAX.nanos(),
        delta in i64::MIN..=i64::MAX,
    ) {
        let t = Timestamp::from_nanos(a).unwrap();
        if let Ok(u) = ts_add_dur(t, Duration::from_nanos(delta.into()).unwrap()) {
            let got = ts_sub_ts(u, t).map(|d| d.nanos());
            // Within the last second of the i64 range the whole-second difference alone may
            // overflow, as in cel-go and cel-cpp.
            let near_edge = delta.unsigned_abs() > 9_223_372_036_000_000_000;
            prop_assert!(got == Ok(i128::from(delta)) || near_edge && got.is_err());
        }
    }

    #[test]
    fn parsers_never_panic(text in "\\PC{0,40}") {
        let _ = parse_timestamp(&text);
        let _ = canonical_rfc3339(&text);
        let _ = parse_duration(&text);
        let _ = timestamp_part(Timestamp::UNIX_EPOCH, TimePart::Hours, Some(&text));
    }
}
