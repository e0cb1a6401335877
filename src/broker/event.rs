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

use crate::rules::message_data::DataJson;
#[cfg(test)]
use crate::rules::message_data::encode::write_json as write_value;
use crate::rules::message_data::encode::write_str;
use crate::telemetry::TraceParent;
#[cfg(test)]
use serde_json::Map;
use serde_json::Value;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};
use uuid::Uuid;

/// The CloudEvents `source` attribute of every event the sentinel publishes.
pub const SOURCE: &str = "hyperfleet-sentinel";

/// One reconcile event: a fresh id, its CloudEvents type and the `message_data` payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The CloudEvents `id`; also the `_watermill_message_uuid` AMQP header.
    pub id: Uuid,
    /// The CloudEvents `type`: `com.redhat.hyperfleet.<kind>.reconcile`.
    pub ty: EventType,
    /// The CloudEvents `data`: the evaluated `message_data` object, as its wire bytes.
    pub data: Data,
    /// The `traceparent` extension: the publish span, when tracing is on.
    pub traceparent: Option<TraceParent>,
}

/// The `data` of an event: its JSON bytes as they go on the wire (written straight from the
/// evaluated values, or from a JSON tree), read back as a tree only on demand (tests, logs).
pub struct Data {
    json: Vec<u8>,
    tree: OnceLock<Value>,
}

impl Data {
    /// The JSON bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.json
    }

    /// The JSON as a tree (parsed on first use).
    pub fn tree(&self) -> &Value {
        self.tree
            .get_or_init(|| serde_json::from_slice(&self.json).unwrap_or(Value::Null))
    }
}

impl From<DataJson> for Data {
    fn from(data: DataJson) -> Data {
        Data {
            json: data.0,
            tree: OnceLock::new(),
        }
    }
}

/// A JSON tree, encoded as Go's `encoding/json` would.
impl From<Value> for Data {
    fn from(tree: Value) -> Data {
        let mut json = Vec::with_capacity(64);
        crate::rules::message_data::encode::write_json(&mut json, &tree);
        let cell = OnceLock::new();
        let _ = cell.set(tree);
        Data { json, tree: cell }
    }
}

impl Clone for Data {
    fn clone(&self) -> Data {
        Data {
            json: self.json.clone(),
            tree: self.tree.clone(),
        }
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.json == other.json
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        String::from_utf8_lossy(&self.json).fmt(f)
    }
}

/// `data["key"]`: a field of the tree (`null` when absent), as `serde_json::Value` indexes.
impl std::ops::Index<&str> for Data {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        &self.tree()[key]
    }
}

/// The CloudEvents `type` of an event with its JSON string, shared by the events of one kind:
/// made once per kind and thread ([`EventType::of`]), not once per event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventType(Arc<TypeText>);

#[derive(Debug, PartialEq, Eq)]
struct TypeText {
    text: String,
    /// `text` as a JSON string, as the event's bytes carry it.
    json: Vec<u8>,
}

thread_local! {
    /// The kind of the last event made on this thread and its type: a listing is of one kind.
    static LAST_TYPE: RefCell<Option<(String, EventType)>> = const { RefCell::new(None) };
}

impl EventType {
    /// The type of events for resources of `kind` ([`event_type`]).
    pub fn of(kind: &str) -> EventType {
        let made = || {
            let text = event_type(kind);
            let mut json = Vec::with_capacity(text.len() + 2);
            write_str(&mut json, &text);
            EventType(Arc::new(TypeText { text, json }))
        };
        LAST_TYPE.with(|last| {
            let Ok(mut last) = last.try_borrow_mut() else {
                return made();
            };
            match &*last {
                Some((of, ty)) if of == kind => ty.clone(),
                _ => {
                    let ty = made();
                    *last = Some((kind.to_owned(), ty.clone()));
                    ty
                }
            }
        })
    }

    /// The type's text.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }
}

impl std::ops::Deref for EventType {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<&str> for EventType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The CloudEvents type for a resource kind: `com.redhat.hyperfleet.<lowercased kind>.reconcile`.
pub fn event_type(kind: &str) -> String {
    const PREFIX: &str = "com.redhat.hyperfleet.";
    const SUFFIX: &str = ".reconcile";
    let mut ty = String::with_capacity(PREFIX.len() + kind.len() + SUFFIX.len());
    ty.push_str(PREFIX);
    if kind.is_ascii() {
        ty.extend(kind.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        ty.push_str(&kind.to_lowercase());
    }
    ty.push_str(SUFFIX);
    ty
}

impl Event {
    /// A reconcile event for a resource of `kind` (e.g. `Cluster`) with a fresh UUID v7 id
    /// (its random bits from a per-thread generator: no system call per event).
    pub fn new(kind: &str, data: impl Into<Data>) -> Event {
        Event::with_id(Uuid::now_v7(), kind, data)
    }

    /// A reconcile event with a given id (for tests and replays).
    pub fn with_id(id: Uuid, kind: &str, data: impl Into<Data>) -> Event {
        Event {
            id,
            ty: EventType::of(kind),
            data: data.into(),
            traceparent: None,
        }
    }

    /// Appends the structured JSON body to `buf` (which the caller clears and reuses).
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
        buf.reserve(160 + self.ty.len() + self.data.json.len());
        buf.extend_from_slice(br#"{"specversion":"1.0","id":""#);
        buf.extend_from_slice(self.id.hyphenated().encode_lower(&mut id).as_bytes());
        buf.extend_from_slice(br#"","source":""#);
        buf.extend_from_slice(SOURCE.as_bytes());
        buf.extend_from_slice(br#"","type":"#);
        buf.extend_from_slice(&self.ty.0.json);
        buf.extend_from_slice(br#","datacontenttype":"application/json","data":"#);
        buf.extend_from_slice(&self.data.json);
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
