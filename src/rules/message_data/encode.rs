//! JSON bytes exactly as Go's `encoding/json` writes them, straight from values: CEL values (the
//! evaluated `message_data` leaves) and JSON trees (events built by hand). No intermediate tree
//! is built for a CEL value that has a direct form.
//!
//! Invariant: [`write_cel`] writes exactly the bytes of [`write_json`] applied to
//! [`to_json`]`(value, DurationStyle::Nanos)`: object keys sorted bytewise at every level, `<`,
//! `>`, `&`, U+2028 and U+2029 escaped as `\u003c`-style sequences, floats formatted like
//! `strconv.AppendFloat(f, 'f' or 'e', -1, 64)`. A value without a direct form (bytes, a type,
//! a condition, the resource, a map with a non-string key) goes through [`to_json`] itself.

use crate::cel::functions::format_double;
use crate::cel::json::{DurationStyle, to_json};
use crate::cel::time::format_timestamp;
use crate::cel::value::Value;
use serde_json::{Map, Number, Value as Json};
use std::io::Write;

/// Writes a CEL value as the CloudEvent `data` carries it.
///
/// The value is built by the program (message_data evaluation), whose nesting is bounded by the
/// size of the CEL expressions, so the recursion here is bounded too.
pub fn write_cel(buf: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => buf.extend_from_slice(b"null"),
        Value::Bool(true) => buf.extend_from_slice(b"true"),
        Value::Bool(false) => buf.extend_from_slice(b"false"),
        Value::Int(i) => write_i64(buf, *i),
        Value::Uint(u) => write_u64(buf, *u),
        Value::Double(d) if d.is_finite() => write_f64(buf, *d),
        Value::Double(d) => write_str(buf, &format_double(*d)),
        Value::String(s) => write_str(buf, s),
        Value::Timestamp(t) => write_str(buf, &format_timestamp(*t)),
        Value::Duration(d) => match i64::try_from(d.nanos()) {
            Ok(n) => write_i64(buf, n),
            Err(_) => buf.extend_from_slice(b"null"),
        },
        Value::List(items) => write_array(buf, items.iter(), write_cel),
        Value::Map(map) => {
            // String keys of a CEL map are distinct: sorting them is all Go does. Any other
            // key goes through the tree, which spells it as Go does.
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map.iter() {
                match k {
                    Value::String(k) => entries.push((&**k, v)),
                    _ => return write_json(buf, &to_json(value, DurationStyle::Nanos)),
                }
            }
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            buf.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_str(buf, k);
                buf.push(b':');
                write_cel(buf, v);
            }
            buf.push(b'}');
        }
        other => write_json(buf, &to_json(other, DurationStyle::Nanos)),
    }
}

/// Writes `items` as a JSON array, each by `write`.
fn write_array<'a, T: 'a>(
    buf: &mut Vec<u8>,
    items: impl IntoIterator<Item = &'a T>,
    write: fn(&mut Vec<u8>, &T),
) {
    buf.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write(buf, item);
    }
    buf.push(b']');
}

/// Writes a JSON value the way Go's `encoding/json` marshals the equivalent `interface{}`.
///
/// Bounded recursion: serde_json's parser limits nesting to 128, and trees built in code are
/// built by the program.
pub fn write_json(buf: &mut Vec<u8>, value: &Json) {
    match value {
        Json::Null => buf.extend_from_slice(b"null"),
        Json::Bool(true) => buf.extend_from_slice(b"true"),
        Json::Bool(false) => buf.extend_from_slice(b"false"),
        Json::Number(n) => write_number(buf, n),
        Json::String(s) => write_str(buf, s),
        Json::Array(items) => write_array(buf, items, write_json),
        Json::Object(map) => write_object(buf, map),
    }
}

/// Writes an object with its keys in bytewise order, as Go sorts map keys. Maps already in order
/// (the usual case) are written without allocating.
fn write_object(buf: &mut Vec<u8>, map: &Map<String, Json>) {
    let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a < b);
    let write_entry = |buf: &mut Vec<u8>, i: usize, key: &str, value: &Json| {
        if i > 0 {
            buf.push(b',');
        }
        write_str(buf, key);
        buf.push(b':');
        write_json(buf, value);
    };
    buf.push(b'{');
    if sorted {
        for (i, (key, value)) in map.iter().enumerate() {
            write_entry(buf, i, key, value);
        }
    } else {
        let mut entries: Vec<(&String, &Json)> = map.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        for (i, (key, value)) in entries.into_iter().enumerate() {
            write_entry(buf, i, key, value);
        }
    }
    buf.push(b'}');
}

/// What byte `b` becomes in a Go JSON string: 0 for itself, 1 for a `\u00XX` escape, 2 for the
/// start of a possible U+2028 / U+2029, else the letter of its short escape.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 1;
        b += 1;
    }
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'<' as usize] = 1;
    t[b'>' as usize] = 1;
    t[b'&' as usize] = 1;
    t[0xe2] = 2;
    t
};

/// The index of the first byte of `b` that [`ESCAPE`] does not keep as it is, eight bytes at a
/// time: a word of ASCII without `"`, `\\`, `<`, `>`, `&` or control bytes is skipped whole (the
/// last few bytes as the last eight, overlapping the word before).
fn next_escape(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let eq = |w: u64, c: u8| {
        let x = w ^ (ONES * u64::from(c));
        x.wrapping_sub(ONES) & !x
    };
    // Any byte >= 0x80 (maybe the start of U+2028) or any candidate: look byte by byte.
    let hit = |at: usize| {
        let w = u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        (w | w.wrapping_sub(ONES * 0x20)
            | eq(w, b'"')
            | eq(w, b'\\')
            | eq(w, b'<')
            | eq(w, b'>')
            | eq(w, b'&'))
            & HIGH
            != 0
    };
    let exact = |from: usize| {
        b[from..]
            .iter()
            .position(|&c| ESCAPE[usize::from(c)] != 0)
            .map(|n| from + n)
    };
    let mut i = 0;
    while i + 8 <= b.len() {
        if hit(i) {
            return exact(i);
        }
        i += 8;
    }
    match b.len() {
        n if n == i => None,
        n if n >= 8 => match hit(n - 8) {
            true => exact(i),
            false => None,
        },
        _ => exact(i),
    }
}

/// Writes a string with Go's HTML-safe escaping (`encoding/json` default since Go 1.22): runs
/// of bytes that need no escape are copied at once.
pub fn write_str(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    buf.reserve(bytes.len() + 2);
    buf.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while let Some(n) = next_escape(&bytes[i..]) {
        i += n;
        let b = bytes[i];
        match ESCAPE[usize::from(b)] {
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8; Go escapes them for JSONP.
            2 => {
                if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9))
                {
                    buf.extend_from_slice(&bytes[start..i]);
                    buf.extend_from_slice(if bytes[i + 2] == 0xa8 {
                        br"\u2028"
                    } else {
                        br"\u2029"
                    });
                    i += 3;
                    start = i;
                } else {
                    i += 1;
                }
                continue;
            }
            1 => {
                buf.extend_from_slice(&bytes[start..i]);
                buf.extend_from_slice(br"\u00");
                buf.push(HEX[usize::from(b >> 4)]);
                buf.push(HEX[usize::from(b & 0xf)]);
            }
            letter => {
                buf.extend_from_slice(&bytes[start..i]);
                buf.push(b'\\');
                buf.push(letter);
            }
        }
        i += 1;
        start = i;
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

/// Writes an integer in decimal (no formatting machinery: events are built by the million).
pub fn write_i64(buf: &mut Vec<u8>, i: i64) {
    if i < 0 {
        buf.push(b'-');
    }
    write_u64(buf, i.unsigned_abs());
}

/// Writes an unsigned integer in decimal.
pub fn write_u64(buf: &mut Vec<u8>, mut u: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[at..]);
}

fn write_number(buf: &mut Vec<u8>, n: &Number) {
    if let Some(i) = n.as_i64() {
        write_i64(buf, i);
    } else if let Some(u) = n.as_u64() {
        write_u64(buf, u);
    } else if let Some(f) = n.as_f64() {
        write_f64(buf, f);
    }
}

/// The shortest decimal digits that round-trip to `abs` (a finite non-negative float), and the
/// decimal exponent of the first digit, chosen as Go's strconv chooses them.
///
/// Rust's `{:e}` finds the shortest digit count Go finds, but when the float lies exactly halfway
/// between two shortest candidates it may pick the upper one, where Go rounds to even. Re-formatting with that
/// many digits at fixed precision rounds half to even, as Go does; it is kept only if it still
/// round-trips (a tie never breaks that, it is checked to be safe).
fn shortest_digits(abs: f64, digits: &mut [u8; 40]) -> (usize, i32) {
    let mut tmp = [0u8; 48];
    let (n, exp) = split_exp(format_exp(&mut tmp, abs, None), digits);
    if n > 1 {
        let mut tmp = [0u8; 48];
        let text = format_exp(&mut tmp, abs, Some(n - 1));
        if std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            == Some(abs)
        {
            return split_exp(text, digits);
        }
    }
    (n, exp)
}

/// `abs` in Rust's exponent notation (`1.25e-7`), shortest or with `precision` fraction digits.
fn format_exp(tmp: &mut [u8; 48], abs: f64, precision: Option<usize>) -> &[u8] {
    let mut cursor = std::io::Cursor::new(&mut tmp[..]);
    // At most 17 significant digits plus sign, point and a 4-character exponent: it fits.
    let _ = match precision {
        None => write!(cursor, "{abs:e}"),
        Some(p) => write!(cursor, "{abs:.p$e}"),
    };
    let len = usize::try_from(cursor.position()).unwrap_or(0);
    &tmp[..len]
}

/// Splits `d.ddde±x` into its digits (into `digits`) and exponent: (digit count, exponent).
fn split_exp(text: &[u8], digits: &mut [u8; 40]) -> (usize, i32) {
    let e_pos = text.iter().position(|&c| c == b'e').unwrap_or(text.len());
    let exp = text
        .get(e_pos + 1..)
        .and_then(|t| std::str::from_utf8(t).ok());
    let exp = exp.and_then(|t| t.parse().ok()).unwrap_or(0);
    let mut n = 0;
    for &c in text[..e_pos].iter().filter(|c| c.is_ascii_digit()) {
        if let Some(slot) = digits.get_mut(n) {
            *slot = c;
            n += 1;
        }
    }
    if n == 0 {
        digits[0] = b'0';
        n = 1;
    }
    (n, exp)
}

/// Writes a finite float like Go's `encoding/json`: shortest round-trip digits, plain notation
/// for magnitudes in [1e-6, 1e21), otherwise exponent notation with a sign and no zero padding
/// for negative exponents (`1e+21`, `1.5e-7`).
pub fn write_f64(buf: &mut Vec<u8>, f: f64) {
    let mut digits = [0u8; 40];
    let (n_digits, exp) = shortest_digits(f.abs(), &mut digits);
    let digits = &digits[..n_digits];
    if f.is_sign_negative() {
        buf.push(b'-');
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        buf.push(digits[0]);
        if digits.len() > 1 {
            buf.push(b'.');
            buf.extend_from_slice(&digits[1..]);
        }
        buf.push(b'e');
        buf.push(if exp < 0 { b'-' } else { b'+' });
        write_u64(buf, u64::from(exp.unsigned_abs()));
    } else if exp < 0 {
        buf.extend_from_slice(b"0.");
        buf.extend(std::iter::repeat_n(b'0', exp.unsigned_abs() as usize - 1));
        buf.extend_from_slice(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            buf.extend_from_slice(digits);
            buf.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
        } else {
            buf.extend_from_slice(&digits[..int_len]);
            buf.push(b'.');
            buf.extend_from_slice(&digits[int_len..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::value::Map as CelMap;
    use std::sync::Arc;

    fn via_tree(v: &Value) -> Vec<u8> {
        let mut buf = Vec::new();
        write_json(&mut buf, &to_json(v, DurationStyle::Nanos));
        buf
    }

    #[test]
    fn cel_values_write_as_their_json_trees() {
        let s = |t: &str| Value::string(t);
        let map =
            |entries: Vec<(Value, Value)>| Value::Map(Arc::new(CelMap::from_entries(entries)));
        let values = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(i64::MIN),
            Value::Int(0),
            Value::Uint(u64::MAX),
            Value::Double(0.1 + 0.2),
            Value::Double(-0.0),
            Value::Double(1e21),
            Value::Double(f64::NAN),
            Value::Double(f64::NEG_INFINITY),
            s("a\"b\\c\n<>&\u{2028}\u{2029}\u{e2}x\u{1}é😀"),
            s(""),
            Value::Bytes(Arc::from(&b"\xff\x00ab"[..])),
            Value::Timestamp(
                crate::cel::time::parse_timestamp("2025-01-01T00:00:00.5+02:00").unwrap(),
            ),
            Value::Duration(crate::cel::time::Duration::from_nanos(-1_500_000_000).unwrap()),
            Value::Duration(
                crate::cel::time::Duration::from_nanos(315_576_000_000 * 1_000_000_000).unwrap(),
            ),
            Value::List(Arc::from(vec![
                s("x"),
                Value::Int(1),
                Value::List(Arc::from(vec![])),
            ])),
            map(vec![
                (s("z"), Value::Int(1)),
                (s("a"), map(vec![(s("y"), s("<")), (s("b"), Value::Null)])),
            ]),
            map(vec![
                (Value::Int(2), s("two")),
                (s("1"), s("one")),
                (Value::Bool(true), s("t")),
            ]),
            map(vec![]),
            Value::Type(crate::cel::types::Type::Int),
        ];
        for v in &values {
            let mut direct = Vec::new();
            write_cel(&mut direct, v);
            assert_eq!(
                String::from_utf8_lossy(&direct),
                String::from_utf8_lossy(&via_tree(v)),
                "{v:?}"
            );
        }
    }

    #[test]
    fn runs_without_escapes_are_copied_whole() {
        // Every byte value, alone and between plain runs: the same as escaping byte by byte.
        for b in 0u8..=255 {
            let text = [b'a', b'b', b, b'c'];
            if let Ok(s) = std::str::from_utf8(&text) {
                let mut buf = Vec::new();
                write_str(&mut buf, s);
                let want = serde_json::to_string(s).unwrap_or_default();
                let want = want
                    .replace('<', "\\u003c")
                    .replace('>', "\\u003e")
                    .replace('&', "\\u0026");
                assert_eq!(String::from_utf8_lossy(&buf), want, "{b:#x}");
            }
        }
        // E2 80 A7 (U+2027) is not escaped; E2 80 A8 is.
        let mut buf = Vec::new();
        write_str(&mut buf, "\u{2027}\u{2028}x");
        assert_eq!(buf, "\"\u{2027}\\u2028x\"".as_bytes());
    }

    #[test]
    fn the_word_scan_finds_the_first_escape() {
        let naive = |b: &[u8]| b.iter().position(|&c| ESCAPE[usize::from(c)] != 0);
        for special in [b'"', b'\\', b'<', b'>', b'&', 0x00, 0x1f, 0xe2] {
            for filler in [b'a', b' ', 0x21, 0x3b, 0x3d, 0x3f, 0x5b, 0x7f, 0x80, 0xff] {
                for len in 0..20 {
                    for at in 0..=len {
                        let mut b = vec![filler; len];
                        if at < len {
                            b[at] = special;
                        }
                        assert_eq!(next_escape(&b), naive(&b), "{b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn integers_write_in_decimal() {
        for i in [0, 1, -1, 9, 10, 99, 100, i64::MAX, i64::MIN, -1234567890] {
            let mut buf = Vec::new();
            write_i64(&mut buf, i);
            assert_eq!(String::from_utf8_lossy(&buf), i.to_string());
        }
    }
}
