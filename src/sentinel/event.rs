//! The reconcile CloudEvent and its wire encoding.
//!
//! Takes the resource kind and the evaluated `message_data` object; gives the structured-mode
//! CloudEvents 1.0 JSON body the Go sentinel puts on the wire, written into a caller-owned buffer.
//!
//! Invariant: [`Event::encode_into`] produces exactly the bytes Go's `encoding/json` would: keys in
//! the order `specversion, id, source, type, datacontenttype, data`, object keys inside `data`
//! sorted bytewise at every level, `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c`-style
//! sequences, and floats formatted like `strconv.AppendFloat(f, 'f' or 'e', -1, 64)` (`3` not
//! `3.0`, `1e+21` not `1e21`). No `time` attribute, compact, no trailing newline. The only
//! extension, `traceparent` (set only when tracing is on), follows `data`: extensions come after
//! `data`, sorted by name; without one the bytes are exactly the untraced ones.

use serde_json::{Map, Number, Value};
use std::io::Write;
use uuid::Uuid;

/// The CloudEvents `source` attribute of every event the sentinel publishes.
pub const SOURCE: &str = "hyperfleet-sentinel";

/// One reconcile event: a fresh id, its CloudEvents type and the `message_data` payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The CloudEvents `id`; also the `_watermill_message_uuid` AMQP header.
    pub id: Uuid,
    /// The CloudEvents `type`: `com.redhat.hyperfleet.<kind>.reconcile`.
    pub ty: String,
    /// The CloudEvents `data`: the evaluated `message_data` object.
    pub data: Value,
    /// The `traceparent` extension: the publish span, when tracing is on.
    pub traceparent: Option<TraceParent>,
}

/// A W3C trace context: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The span id.
    pub span_id: [u8; 8],
    /// The trace flags (`01` sampled).
    pub flags: u8,
}

impl TraceParent {
    /// The header / extension text, written into `out` without allocating.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"00-");
        hex_into(out, &self.trace_id);
        out.push(b'-');
        hex_into(out, &self.span_id);
        out.push(b'-');
        hex_into(out, &[self.flags]);
    }

    /// The text as a string.
    pub fn to_text(&self) -> String {
        let mut out = Vec::with_capacity(55);
        self.write(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn hex_into(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 0xf)]);
    }
}

/// The CloudEvents type for a resource kind: `com.redhat.hyperfleet.<lowercased kind>.reconcile`.
pub fn event_type(kind: &str) -> String {
    format!("com.redhat.hyperfleet.{}.reconcile", kind.to_lowercase())
}

impl Event {
    /// A reconcile event for a resource of `kind` (e.g. `Cluster`) with a fresh UUID v7 id.
    pub fn new(kind: &str, data: Value) -> Event {
        Event::with_id(Uuid::now_v7(), kind, data)
    }

    /// A reconcile event with a given id (for tests and replays).
    pub fn with_id(id: Uuid, kind: &str, data: Value) -> Event {
        Event {
            id,
            ty: event_type(kind),
            data,
            traceparent: None,
        }
    }

    /// Appends the structured JSON body to `buf` (which the caller clears and reuses).
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
        buf.extend_from_slice(br#"{"specversion":"1.0","id":""#);
        buf.extend_from_slice(self.id.hyphenated().encode_lower(&mut id).as_bytes());
        buf.extend_from_slice(br#"","source":""#);
        buf.extend_from_slice(SOURCE.as_bytes());
        buf.extend_from_slice(br#"","type":"#);
        write_str(buf, &self.ty);
        buf.extend_from_slice(br#","datacontenttype":"application/json","data":"#);
        write_value(buf, &self.data);
        if let Some(tp) = &self.traceparent {
            buf.extend_from_slice(br#","traceparent":""#);
            tp.write(buf);
            buf.push(b'"');
        }
        buf.push(b'}');
    }

    /// The structured JSON body as a fresh vector (convenience for tests and logs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(256);
        self.encode_into(&mut buf);
        buf
    }
}

/// Writes a JSON value the way Go's `encoding/json` marshals the equivalent `interface{}`.
///
/// The value is built by the program (message_data evaluation), whose nesting is bounded by the
/// size of the CEL expressions, so the recursion here is bounded too.
fn write_value(buf: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => buf.extend_from_slice(b"null"),
        Value::Bool(true) => buf.extend_from_slice(b"true"),
        Value::Bool(false) => buf.extend_from_slice(b"false"),
        Value::Number(n) => write_number(buf, n),
        Value::String(s) => write_str(buf, s),
        Value::Array(items) => {
            buf.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_value(buf, item);
            }
            buf.push(b']');
        }
        Value::Object(map) => write_object(buf, map),
    }
}

/// Writes an object with its keys in bytewise order, as Go sorts map keys. Maps already in order
/// (the usual case: message_data arrives sorted) are written without allocating.
fn write_object(buf: &mut Vec<u8>, map: &Map<String, Value>) {
    let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a < b);
    let write_entry = |buf: &mut Vec<u8>, i: usize, key: &str, value: &Value| {
        if i > 0 {
            buf.push(b',');
        }
        write_str(buf, key);
        buf.push(b':');
        write_value(buf, value);
    };
    buf.push(b'{');
    if sorted {
        for (i, (key, value)) in map.iter().enumerate() {
            write_entry(buf, i, key, value);
        }
    } else {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        for (i, (key, value)) in entries.into_iter().enumerate() {
            write_entry(buf, i, key, value);
        }
    }
    buf.push(b'}');
}

/// Writes a string with Go's HTML-safe escaping (`encoding/json` default since Go 1.22).
fn write_str(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    buf.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let short: &[u8] = match b {
            b'"' => br#"\""#,
            b'\\' => br"\\",
            b'\n' => br"\n",
            b'\r' => br"\r",
            b'\t' => br"\t",
            0x08 => br"\b",
            0x0c => br"\f",
            b'<' | b'>' | b'&' | 0x00..=0x1f => b"",
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8; Go escapes them for JSONP.
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                buf.extend_from_slice(&bytes[start..i]);
                buf.extend_from_slice(if bytes[i + 2] == 0xa8 {
                    br"\u2028"
                } else {
                    br"\u2029"
                });
                i += 3;
                start = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        buf.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            buf.extend_from_slice(br"\u00");
            buf.push(HEX[usize::from(b >> 4)]);
            buf.push(HEX[usize::from(b & 0xf)]);
        } else {
            buf.extend_from_slice(short);
        }
        i += 1;
        start = i;
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

fn write_number(buf: &mut Vec<u8>, n: &Number) {
    // Writing into a Vec cannot fail.
    if let Some(i) = n.as_i64() {
        let _ = write!(buf, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(buf, "{u}");
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
fn write_f64(buf: &mut Vec<u8>, f: f64) {
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
        let _ = write!(
            buf,
            "e{}{}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
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
    use serde_json::json;

    fn encode(v: &Value) -> String {
        let mut buf = Vec::new();
        write_value(&mut buf, v);
        String::from_utf8(buf).unwrap_or_default()
    }

    #[test]
    fn golden_event_bytes() {
        let id = Uuid::parse_str("0190b6a4-5c3e-7d2a-9f10-1234567890ab").unwrap_or_default();
        let data = json!({"id": "cls-123", "kind": "Cluster", "generation": 2});
        let event = Event::with_id(id, "Cluster", data);
        let body = String::from_utf8(event.to_bytes()).unwrap_or_default();
        assert_eq!(
            body,
            r#"{"specversion":"1.0","id":"0190b6a4-5c3e-7d2a-9f10-1234567890ab","source":"hyperfleet-sentinel","type":"com.redhat.hyperfleet.cluster.reconcile","datacontenttype":"application/json","data":{"generation":2,"id":"cls-123","kind":"Cluster"}}"#
        );
    }

    #[test]
    fn encode_into_appends_to_reused_buffer() {
        let event = Event::new("NodePool", json!({}));
        let mut buf = b"x".to_vec();
        event.encode_into(&mut buf);
        assert!(buf.starts_with(br#"x{"specversion":"1.0","id":""#));
        assert!(buf.ends_with(br#""type":"com.redhat.hyperfleet.nodepool.reconcile","datacontenttype":"application/json","data":{}}"#));
        assert_eq!(event.id.get_version_num(), 7);
    }

    #[test]
    fn strings_escape_like_go() {
        let s = "a\"b\\c\n\r\t\u{8}\u{c}\u{1}\u{1f}<>&\u{7f}é\u{2028}\u{2029}😀";
        assert_eq!(
            encode(&json!(s)),
            r#""a\"b\\c\n\r\t\b\f\u0001\u001f\u003c\u003e\u0026"#.to_owned()
                + "\u{7f}é"
                + r#"\u2028\u2029"#
                + "😀\""
        );
    }

    #[test]
    fn floats_format_like_go() {
        let cases = [
            (3.0, "3"),
            (-0.0, "-0"),
            (0.0, "0"),
            (0.5, "0.5"),
            (123.456, "123.456"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (0.000001, "0.000001"),
            (0.0000015, "0.0000015"),
            (1.5e-7, "1.5e-7"),
            (1e-10, "1e-10"),
            (-2.5e-320, "-2.5e-320"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157e+308"),
            // 1533979136307259.25, exactly halfway between ...259.2 and ...259.3: Go rounds to even.
            (f64::from_bits(0x4315_cc95_660c_c0ed), "1533979136307259.2"),
        ];
        for (f, want) in cases {
            assert_eq!(encode(&json!(f)), want, "{f:e}");
        }
        assert_eq!(encode(&json!(i64::MIN)), "-9223372036854775808");
        assert_eq!(encode(&json!(u64::MAX)), "18446744073709551615");
    }

    #[test]
    fn nested_objects_are_sorted() {
        let mut inner = Map::new();
        inner.insert("b".into(), json!(1));
        inner.insert("a".into(), json!([true, null, {"z": 1, "y": 2}]));
        let mut outer = Map::new();
        outer.insert("z".into(), Value::Object(inner));
        outer.insert("B".into(), json!("x"));
        assert_eq!(
            encode(&Value::Object(outer)),
            r#"{"B":"x","z":{"a":[true,null,{"y":2,"z":1}],"b":1}}"#
        );
    }

    // ---- traceparent extension ----

    #[test]
    fn traceparent_follows_data_and_untraced_bytes_are_unchanged() {
        let id = Uuid::parse_str("0190b6a4-5c3e-7d2a-9f10-1234567890ab").unwrap_or_default();
        let mut event = Event::with_id(id, "Cluster", json!({"id": "c1"}));
        let untraced = event.to_bytes();
        event.traceparent = Some(TraceParent {
            trace_id: [0xab; 16],
            span_id: [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef],
            flags: 1,
        });
        let traced = String::from_utf8(event.to_bytes()).unwrap_or_default();
        assert_eq!(
            traced,
            r#"{"specversion":"1.0","id":"0190b6a4-5c3e-7d2a-9f10-1234567890ab","source":"hyperfleet-sentinel","type":"com.redhat.hyperfleet.cluster.reconcile","datacontenttype":"application/json","data":{"id":"c1"},"traceparent":"00-abababababababababababababababab-0123456789abcdef-01"}"#
        );
        event.traceparent = None;
        assert_eq!(event.to_bytes(), untraced);
    }
}
