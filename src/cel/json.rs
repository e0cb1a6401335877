//! CEL values as JSON, for `sentinel eval` output and CloudEvent data.
//!
//! Invariant: the conversion is total: every value has a JSON form (bytes as base64, as Go's
//! encoding/json writes `[]byte`; non-finite doubles as strings).

use super::functions::format_double;
use super::time;
use super::value::Value;
use serde_json::{Map as JsonMap, Number, Value as Json};

/// How durations are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationStyle {
    /// Seconds with an `s` suffix (`"1800s"`), as CEL's `string(duration)`: `sentinel eval`.
    Seconds,
    /// Integer nanoseconds, as Go's encoding/json writes `time.Duration`: CloudEvent data.
    Nanos,
}

/// Converts a value to JSON.
pub fn to_json(value: &Value, style: DurationStyle) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Uint(u) => Json::from(*u),
        Value::Double(d) => {
            Number::from_f64(*d).map_or_else(|| Json::String(format_double(*d)), Json::Number)
        }
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => Json::String(base64(b)),
        Value::Timestamp(t) => Json::String(time::format_timestamp(*t)),
        Value::Duration(d) => match style {
            DurationStyle::Seconds => Json::String(time::format_duration(*d)),
            DurationStyle::Nanos => i64::try_from(d.nanos()).map_or(Json::Null, Json::from),
        },
        Value::List(items) => Json::Array(items.iter().map(|v| to_json(v, style)).collect()),
        Value::Map(map) => {
            let mut obj = JsonMap::with_capacity(map.len());
            for (k, v) in map.iter() {
                let key = match k {
                    Value::String(s) => s.to_string(),
                    other => match to_json(other, style) {
                        Json::String(s) => s,
                        j => j.to_string(),
                    },
                };
                obj.insert(key, to_json(v, style));
            }
            Json::Object(obj)
        }
        Value::Type(t) => Json::String(t.to_string()),
        Value::Condition(c) => {
            let mut obj = JsonMap::new();
            for name in crate::cel::host::CONDITION_FIELDS {
                if let Ok(v) = c.get(name) {
                    obj.insert(name.to_string(), to_json(&v, style));
                }
            }
            Json::Object(obj)
        }
        Value::Resource(r) => r.json(),
    }
}

/// Standard base64 with padding, as Go's `encoding/json` writes `[]byte`.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_go() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xff, 0xfe]), "//4=");
    }
}
