//! Runtime values and runtime errors.
//!
//! Invariant: cloning a [`Value`] never copies a string, list, map or object: they are behind
//! `Arc`s, so reading a resource's decoded fields into values costs a reference-count bump.
//! Errors are values too ([`EvalError`]); `&&`, `||` and `?:` decide when they are absorbed.
//!
//! Invariant: no string, bytes, list or map a CEL operation builds holds more than
//! [`MAX_VALUE_BYTES`] (as [`value_bytes`] counts them); an operation that would build a larger
//! one yields a [`ErrorKind::TooLarge`] error instead, checked before it allocates.

use super::time::{Duration, Timestamp};
use super::types::Type;
use crate::cel::host::{Condition, Resource};
use std::fmt;
use std::sync::Arc;

/// A CEL runtime value.
#[derive(Clone, Debug)]
pub enum Value {
    /// `null`.
    Null,
    /// A bool.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    Uint(u64),
    /// A double.
    Double(f64),
    /// A string.
    String(Arc<str>),
    /// Bytes.
    Bytes(Arc<[u8]>),
    /// A point in time.
    Timestamp(Timestamp),
    /// A span of time.
    Duration(Duration),
    /// A list.
    List(Arc<[Value]>),
    /// A map with int, uint, bool or string keys, in insertion order.
    Map(Arc<Map>),
    /// A type value (`type(x)`, `int`).
    Type(Type),
    /// A status condition (from `condition(name)` or `resource.status.conditions`).
    Condition(Arc<Condition>),
    /// The resource being decided on.
    Resource(Arc<Resource>),
}

/// A CEL map: insertion-ordered entries with CEL key equality (`1 == 1u`).
#[derive(Clone, Debug, Default)]
pub struct Map {
    entries: Vec<(Value, Value)>,
}

impl Map {
    /// A map from entries; the caller guarantees keys are distinct under CEL equality.
    pub fn from_entries(entries: Vec<(Value, Value)>) -> Map {
        Map { entries }
    }

    /// The value under `key`, comparing keys with CEL equality.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| k.equals(key))
            .map(|(_, v)| v)
    }

    /// The value under a string key.
    pub fn get_str(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| matches!(k, Value::String(s) if &**s == key))
            .map(|(_, v)| v)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &(Value, Value)> {
        self.entries.iter()
    }
}

/// The kind of a runtime error: both engines must agree on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A map lookup of an absent key or a missing dynamic field.
    NoSuchKey,
    /// An object field that does not exist.
    NoSuchField,
    /// A function or operator applied to argument types it has no overload for.
    NoMatchingOverload,
    /// Integer, uint, timestamp or duration arithmetic or conversion out of range.
    Overflow,
    /// Integer division by zero.
    DivisionByZero,
    /// Integer modulus by zero.
    ModulusByZero,
    /// A list index outside the list.
    IndexOutOfRange,
    /// A malformed argument: a bad timestamp, duration, regex, number text, time zone.
    InvalidArgument,
    /// A field of the resource whose JSON had the wrong type or a malformed value.
    BadResource,
    /// A string, bytes, list or map an operation would build exceeds [`MAX_VALUE_BYTES`].
    TooLarge,
}

/// A runtime error value: a kind both engines agree on and a message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError {
    /// What kind of error.
    pub kind: ErrorKind,
    /// Lowercase text, as reported in decision reasons.
    pub message: String,
}

impl EvalError {
    /// An error of a kind with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> EvalError {
        EvalError {
            kind,
            message: message.into(),
        }
    }

    /// `no such key: <key>`.
    pub fn no_such_key(key: impl fmt::Display) -> EvalError {
        EvalError::new(ErrorKind::NoSuchKey, format!("no such key: {key}"))
    }

    /// `no such field: <name>`.
    pub fn no_such_field(name: &str) -> EvalError {
        EvalError::new(ErrorKind::NoSuchField, format!("no such field: {name}"))
    }

    /// `no such overload: <function>(<types>)`, as cel-go's dispatcher words it
    /// (`no such overload: int(bool)`), with cel-go's type names: conditions and the resource
    /// are maps to the Go sentinel.
    pub fn no_overload(function: &str, args: &[&Value]) -> EvalError {
        let types: Vec<&str> = args
            .iter()
            .map(|a| match a {
                Value::Condition(_) | Value::Resource(_) => "map",
                other => other.type_name(),
            })
            .collect();
        EvalError::new(
            ErrorKind::NoMatchingOverload,
            format!("no such overload: {function}({})", types.join(", ")),
        )
    }

    /// `integer overflow` and friends.
    pub fn overflow(what: &str) -> EvalError {
        EvalError::new(ErrorKind::Overflow, format!("{what} overflow"))
    }

    /// A malformed argument.
    pub fn invalid(message: impl Into<String>) -> EvalError {
        EvalError::new(ErrorKind::InvalidArgument, message)
    }

    /// `<what> exceeds the 1048576-byte limit` ([`MAX_VALUE_BYTES`]).
    pub fn too_large(what: &str) -> EvalError {
        EvalError::new(
            ErrorKind::TooLarge,
            format!("{what} exceeds the {MAX_VALUE_BYTES}-byte limit"),
        )
    }
}

/// The most bytes a string, bytes, list or map built by a CEL operation may hold (1 MiB), as
/// [`value_bytes`] counts them. cel-go has no such limit (only optional cost limits, which the
/// Go sentinel does not set); without one a 400-byte rule can ask for gigabytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// What one list element or one map key or value costs besides its own contents.
const SLOT_BYTES: usize = std::mem::size_of::<Value>();

/// The bytes a value holds, for [`MAX_VALUE_BYTES`]: a string's or bytes' length; for a list,
/// each element's [`value_bytes`] plus a slot each; for a map, each key's and value's plus two
/// slots per entry; nothing for scalars and objects (conditions, the resource), which CEL never
/// builds. A part shared by several references counts once per reference, so this bounds the
/// memory a value could take were nothing shared. The count stops early once it passes
/// [`MAX_VALUE_BYTES`] (the result is then some number above it), so it costs at most
/// `MAX_VALUE_BYTES / SLOT_BYTES` steps however large the value.
pub fn value_bytes(v: &Value) -> usize {
    bytes_within(v, MAX_VALUE_BYTES)
}

/// [`value_bytes`], stopping as soon as the count passes `budget`.
fn bytes_within(v: &Value, budget: usize) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Bytes(b) => b.len(),
        Value::List(items) => {
            let mut total = 0usize;
            for item in items.iter() {
                total = total.saturating_add(SLOT_BYTES);
                total = total.saturating_add(bytes_within(item, budget.saturating_sub(total)));
                if total > budget {
                    break;
                }
            }
            total
        }
        Value::Map(map) => {
            let mut total = 0usize;
            for (k, v) in map.iter() {
                total = total.saturating_add(2 * SLOT_BYTES);
                total = total.saturating_add(bytes_within(k, budget.saturating_sub(total)));
                total = total.saturating_add(bytes_within(v, budget.saturating_sub(total)));
                if total > budget {
                    break;
                }
            }
            total
        }
        _ => 0,
    }
}

/// What one map entry adds to its map's [`value_bytes`].
pub fn map_entry_bytes(key: &Value, value: &Value) -> usize {
    (2 * SLOT_BYTES)
        .saturating_add(value_bytes(key))
        .saturating_add(value_bytes(value))
}

/// Checks that a value of `bytes` bytes (as [`value_bytes`] counts) may be built; `what` names it
/// in the error (`string`, `list`, …).
pub fn check_size(what: &str, bytes: usize) -> Result<(), EvalError> {
    if bytes > MAX_VALUE_BYTES {
        return Err(EvalError::too_large(what));
    }
    Ok(())
}

/// A list built element by element (`map`, `filter`, `split`), held to [`MAX_VALUE_BYTES`] as it
/// grows: the push that would pass the limit fails and stores nothing.
#[derive(Debug, Default)]
pub struct ListBuilder {
    items: Vec<Value>,
    bytes: usize,
}

impl ListBuilder {
    /// An empty builder.
    pub fn new() -> ListBuilder {
        ListBuilder::default()
    }

    /// An empty builder with room for `n` elements.
    pub fn with_capacity(n: usize) -> ListBuilder {
        ListBuilder {
            items: Vec::with_capacity(n),
            bytes: 0,
        }
    }

    /// Appends `item`, or fails with `list exceeds the … limit`.
    pub fn push(&mut self, item: Value) -> Result<(), EvalError> {
        let remaining = MAX_VALUE_BYTES.saturating_sub(self.bytes);
        let cost = SLOT_BYTES.saturating_add(bytes_within(&item, remaining));
        let bytes = self.bytes.saturating_add(cost);
        check_size("list", bytes)?;
        self.bytes = bytes;
        self.items.push(item);
        Ok(())
    }

    /// The list so far, leaving the builder empty (its memory kept for the next list).
    pub fn finish(&mut self) -> Value {
        self.bytes = 0;
        Value::List(self.items.drain(..).collect())
    }

    /// Forgets the elements (keeps the memory).
    pub fn clear(&mut self) {
        self.items.clear();
        self.bytes = 0;
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// What evaluating an expression yields: a value or an error value.
pub type EvalResult = Result<Value, EvalError>;

impl Value {
    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    /// The runtime type name, as CEL's `type()` would print it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Type(_) => "type",
            Value::Condition(_) => "Condition",
            Value::Resource(_) => "Resource",
        }
    }

    /// The runtime type as a [`Type`] value (containers are `list(dyn)` / `map(dyn, dyn)`).
    pub fn runtime_type(&self) -> Type {
        match self {
            Value::Null => Type::Null,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Uint(_) => Type::Uint,
            Value::Double(_) => Type::Double,
            Value::String(_) => Type::String,
            Value::Bytes(_) => Type::Bytes,
            Value::Timestamp(_) => Type::Timestamp,
            Value::Duration(_) => Type::Duration,
            Value::List(_) => Type::list(Type::Dyn),
            Value::Map(_) => Type::map(Type::Dyn, Type::Dyn),
            Value::Type(_) => Type::Type,
            Value::Condition(_) => Type::Condition,
            Value::Resource(_) => Type::Resource,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Value {
        Value::string(&"a".repeat(n))
    }

    #[test]
    fn value_bytes_counts_contents_and_slots() {
        assert_eq!(value_bytes(&Value::Int(7)), 0);
        assert_eq!(value_bytes(&text(10)), 10);
        assert_eq!(value_bytes(&Value::Bytes(Arc::from(&b"xyz"[..]))), 3);
        let list = Value::List(Arc::from(vec![text(10), Value::Int(1)]));
        assert_eq!(value_bytes(&list), 2 * SLOT_BYTES + 10);
        let map = Map::from_entries(vec![(text(2), list.clone())]);
        assert_eq!(
            value_bytes(&Value::Map(Arc::new(map))),
            2 * SLOT_BYTES + 2 + value_bytes(&list)
        );
    }

    #[test]
    fn value_bytes_stops_early_on_shared_parts() {
        // A list holding the same large string many times counts it per reference, and the
        // count gives up as soon as it passes the limit.
        let big = text(MAX_VALUE_BYTES / 2);
        let list = Value::List(Arc::from(vec![big; 1000]));
        let n = value_bytes(&list);
        assert!(n > MAX_VALUE_BYTES && n < 2 * MAX_VALUE_BYTES, "{n}");
    }

    #[test]
    fn list_builder_refuses_the_push_past_the_limit() {
        let mut list = ListBuilder::new();
        list.push(text(MAX_VALUE_BYTES - SLOT_BYTES))
            .expect("exactly at the limit");
        let err = list.push(Value::Int(1)).expect_err("one slot too many");
        assert_eq!(err.kind, ErrorKind::TooLarge);
        assert_eq!(err.message, "list exceeds the 1048576-byte limit");
        let Value::List(items) = list.finish() else {
            panic!("not a list");
        };
        assert_eq!(items.len(), 1);
        // The builder starts over after `finish`.
        list.push(Value::Int(1)).expect("empty again");
    }

    #[test]
    fn check_size_allows_exactly_the_limit() {
        assert!(check_size("string", MAX_VALUE_BYTES).is_ok());
        let err = check_size("string", MAX_VALUE_BYTES + 1).expect_err("over");
        assert_eq!(err.to_string(), "string exceeds the 1048576-byte limit");
    }
}
