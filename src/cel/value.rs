//! Runtime values and runtime errors.
//!
//! Invariant: cloning a [`Value`] never copies a string, list, map or object: they are behind
//! `Arc`s, so reading a resource's decoded fields into values costs a reference-count bump.
//! Errors are values too ([`EvalError`]); `&&`, `||` and `?:` decide when they are absorbed.

use super::time::{Duration, Timestamp};
use super::types::Type;
use crate::resource::{Condition, Resource};
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

    /// `no matching overload for '<function>' applied to '(<types>)'`.
    pub fn no_overload(function: &str, args: &[&Value]) -> EvalError {
        let types: Vec<String> = args.iter().map(|a| a.type_name().to_string()).collect();
        EvalError::new(
            ErrorKind::NoMatchingOverload,
            format!(
                "no matching overload for '{function}' applied to '({})'",
                types.join(", ")
            ),
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
