//! The operators on runtime values: equality, ordering, arithmetic, membership, indexing.
//!
//! Invariant: this is the one implementation of each operator's CEL semantics; the interpreter
//! calls it for every operator and the JIT calls it for everything it does not emit natively.

use super::ast::BinaryOp;
use super::time;
use super::value::{ErrorKind, EvalError, EvalResult, Map, Value, check_size, value_bytes};
use std::cmp::Ordering;
use std::sync::Arc;

impl Value {
    /// CEL heterogeneous equality: numbers compare across int/uint/double, other types only
    /// with their own type (values of different types are unequal, never an error).
    pub fn equals(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Timestamp(a), Timestamp(b)) => a == b,
            (Duration(a), Duration(b)) => a == b,
            (Type(a), Type(b)) => a == b,
            (List(a), List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y))
            }
            (Map(a), Map(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.equals(w)))
            }
            (Condition(a), Condition(b)) => {
                Arc::ptr_eq(a, b)
                    || crate::cel::host::CONDITION_FIELDS.iter().all(|f| {
                        match (a.get(f), b.get(f)) {
                            (Ok(x), Ok(y)) => x.equals(&y),
                            _ => false,
                        }
                    })
            }
            (Resource(a), Resource(b)) => Arc::ptr_eq(a, b) || a.json() == b.json(),
            _ => numeric_cmp(self, other) == Some(Ordering::Equal),
        }
    }
}

/// Compares two numbers of any numeric types (ints with ints exactly, ints with doubles as
/// doubles); `None` for non-numbers and NaN.
pub fn numeric_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Uint(x), Uint(y)) => Some(x.cmp(y)),
        (Double(x), Double(y)) => x.partial_cmp(y),
        (Int(x), Uint(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Uint(x), Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        // CEL compares an integer with a double by converting the integer to double, as cel-go
        // and cel-cpp do (so 2^63 - 1 equals 2^63 as a double).
        (Int(x), Double(y)) => (*x as f64).partial_cmp(y),
        (Uint(x), Double(y)) => (*x as f64).partial_cmp(y),
        (Double(x), Int(y)) => x.partial_cmp(&(*y as f64)),
        (Double(x), Uint(y)) => x.partial_cmp(&(*y as f64)),
        _ => None,
    }
}

/// `<`, `<=`, `>`, `>=`: numbers across types, and strings, bytes, bools, timestamps and
/// durations with their own type.
pub fn compare(op: BinaryOp, a: &Value, b: &Value) -> EvalResult {
    use Value::*;
    let ord = match (a, b) {
        (String(x), String(y)) => Some(x.cmp(y)),
        (Bytes(x), Bytes(y)) => Some(x.cmp(y)),
        (Bool(x), Bool(y)) => Some(x.cmp(y)),
        (Timestamp(x), Timestamp(y)) => Some(x.cmp(y)),
        (Duration(x), Duration(y)) => Some(x.cmp(y)),
        (Int(_) | Uint(_) | Double(_), Int(_) | Uint(_) | Double(_)) => {
            match numeric_cmp(a, b) {
                Some(o) => Some(o),
                // NaN compares false with everything.
                None => return Ok(Bool(false)),
            }
        }
        _ => None,
    };
    let Some(ord) = ord else {
        return Err(EvalError::no_overload(overload_name(op), &[a, b]));
    };
    Ok(Bool(match op {
        BinaryOp::Lt => ord == Ordering::Less,
        BinaryOp::Le => ord != Ordering::Greater,
        BinaryOp::Gt => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    }))
}

/// The CEL overload name of an operator, as error messages print it (`_+_`).
pub fn overload_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "_+_",
        BinaryOp::Sub => "_-_",
        BinaryOp::Mul => "_*_",
        BinaryOp::Div => "_/_",
        BinaryOp::Rem => "_%_",
        BinaryOp::Eq => "_==_",
        BinaryOp::Ne => "_!=_",
        BinaryOp::Lt => "_<_",
        BinaryOp::Le => "_<=_",
        BinaryOp::Gt => "_>_",
        BinaryOp::Ge => "_>=_",
        BinaryOp::In => "@in",
        BinaryOp::And => "_&&_",
        BinaryOp::Or => "_||_",
    }
}

/// Evaluates a binary operator other than `&&` / `||` on two values.
pub fn binary(op: BinaryOp, a: &Value, b: &Value) -> EvalResult {
    match op {
        BinaryOp::Add => add(a, b),
        BinaryOp::Sub => sub(a, b),
        BinaryOp::Mul => mul(a, b),
        BinaryOp::Div => div(a, b),
        BinaryOp::Rem => rem(a, b),
        BinaryOp::Eq => Ok(Value::Bool(a.equals(b))),
        BinaryOp::Ne => Ok(Value::Bool(!a.equals(b))),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => compare(op, a, b),
        BinaryOp::In => contains(b, a),
        BinaryOp::And | BinaryOp::Or => Err(EvalError::no_overload(overload_name(op), &[a, b])),
    }
}

fn int_overflow() -> EvalError {
    EvalError::overflow("integer")
}

fn uint_overflow() -> EvalError {
    EvalError::overflow("unsigned integer")
}

/// `a + b`.
pub fn add(a: &Value, b: &Value) -> EvalResult {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => x.checked_add(*y).map(Int).ok_or_else(int_overflow),
        (Uint(x), Uint(y)) => x.checked_add(*y).map(Uint).ok_or_else(uint_overflow),
        (Double(x), Double(y)) => Ok(Double(x + y)),
        (String(x), String(y)) => {
            check_size("string", x.len().saturating_add(y.len()))?;
            let mut s = std::string::String::with_capacity(x.len() + y.len());
            s.push_str(x);
            s.push_str(y);
            Ok(String(Arc::from(s)))
        }
        (Bytes(x), Bytes(y)) => {
            check_size("bytes", x.len().saturating_add(y.len()))?;
            Ok(Bytes(x.iter().chain(y.iter()).copied().collect()))
        }
        (List(x), List(y)) => {
            check_size("list", value_bytes(a).saturating_add(value_bytes(b)))?;
            Ok(List(x.iter().chain(y.iter()).cloned().collect()))
        }
        (Timestamp(t), Duration(d)) | (Duration(d), Timestamp(t)) => {
            time::ts_add_dur(*t, *d).map(Timestamp)
        }
        (Duration(x), Duration(y)) => time::dur_add(*x, *y).map(Duration),
        _ => Err(EvalError::no_overload("_+_", &[a, b])),
    }
}

/// `a - b`.
pub fn sub(a: &Value, b: &Value) -> EvalResult {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => x.checked_sub(*y).map(Int).ok_or_else(int_overflow),
        (Uint(x), Uint(y)) => x.checked_sub(*y).map(Uint).ok_or_else(uint_overflow),
        (Double(x), Double(y)) => Ok(Double(x - y)),
        (Timestamp(x), Timestamp(y)) => time::ts_sub_ts(*x, *y).map(Duration),
        (Timestamp(t), Duration(d)) => time::ts_sub_dur(*t, *d).map(Timestamp),
        (Duration(x), Duration(y)) => time::dur_sub(*x, *y).map(Duration),
        _ => Err(EvalError::no_overload("_-_", &[a, b])),
    }
}

/// `a * b`.
pub fn mul(a: &Value, b: &Value) -> EvalResult {
    use Value::*;
    match (a, b) {
        (Int(x), Int(y)) => x.checked_mul(*y).map(Int).ok_or_else(int_overflow),
        (Uint(x), Uint(y)) => x.checked_mul(*y).map(Uint).ok_or_else(uint_overflow),
        (Double(x), Double(y)) => Ok(Double(x * y)),
        _ => Err(EvalError::no_overload("_*_", &[a, b])),
    }
}

fn division_by_zero() -> EvalError {
    EvalError::new(ErrorKind::DivisionByZero, "division by zero")
}

fn modulus_by_zero() -> EvalError {
    EvalError::new(ErrorKind::ModulusByZero, "modulus by zero")
}

/// `a / b`: integer division truncates; by zero and `i64::MIN / -1` are errors.
pub fn div(a: &Value, b: &Value) -> EvalResult {
    use Value::*;
    match (a, b) {
        (Int(_), Int(0)) | (Uint(_), Uint(0)) => Err(division_by_zero()),
        (Int(x), Int(y)) => x.checked_div(*y).map(Int).ok_or_else(int_overflow),
        (Uint(x), Uint(y)) => Ok(Uint(x / y)),
        (Double(x), Double(y)) => Ok(Double(x / y)),
        _ => Err(EvalError::no_overload("_/_", &[a, b])),
    }
}

/// `a % b`: the result takes the dividend's sign; by zero is an error.
pub fn rem(a: &Value, b: &Value) -> EvalResult {
    use Value::*;
    match (a, b) {
        (Int(_), Int(0)) | (Uint(_), Uint(0)) => Err(modulus_by_zero()),
        (Int(x), Int(y)) => x.checked_rem(*y).map(Int).ok_or_else(int_overflow),
        (Uint(x), Uint(y)) => Ok(Uint(x % y)),
        _ => Err(EvalError::no_overload("_%_", &[a, b])),
    }
}

/// `-a`.
pub fn neg(a: &Value) -> EvalResult {
    match a {
        Value::Int(x) => x.checked_neg().map(Value::Int).ok_or_else(int_overflow),
        Value::Double(x) => Ok(Value::Double(-x)),
        Value::Duration(d) => time::dur_neg(*d).map(Value::Duration),
        _ => Err(EvalError::no_overload("-_", &[a])),
    }
}

/// `!a`.
pub fn not(a: &Value) -> EvalResult {
    match a {
        Value::Bool(b) => Ok(Value::Bool(!b)),
        _ => Err(EvalError::no_overload("!_", &[a])),
    }
}

/// `elem in container`: list membership by CEL equality, map key presence.
pub fn contains(container: &Value, elem: &Value) -> EvalResult {
    match container {
        Value::List(items) => Ok(Value::Bool(items.iter().any(|v| v.equals(elem)))),
        Value::Map(map) => Ok(Value::Bool(map_key_ok(elem) && map.get(elem).is_some())),
        Value::Resource(r) => match elem {
            Value::String(k) => Ok(Value::Bool(r.has(k))),
            _ => Ok(Value::Bool(false)),
        },
        _ => Err(EvalError::no_overload("@in", &[elem, container])),
    }
}

fn map_key_ok(key: &Value) -> bool {
    matches!(
        key,
        Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::String(_) | Value::Double(_)
    )
}

/// `container[key]`: list by integral index, map by key (`no such key` when absent).
pub fn index(container: &Value, key: &Value) -> EvalResult {
    match container {
        Value::List(items) => {
            let i = match key {
                Value::Int(i) => Some(*i),
                Value::Uint(u) => i64::try_from(*u).ok(),
                Value::Double(d) if d.fract() == 0.0 && d.is_finite() => Some(*d as i64),
                _ => return Err(EvalError::no_overload("_[_]", &[container, key])),
            };
            match i
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| items.get(i))
            {
                Some(v) => Ok(v.clone()),
                None => Err(EvalError::new(
                    ErrorKind::IndexOutOfRange,
                    format!("index out of bounds: {}", display_key(key)),
                )),
            }
        }
        Value::Map(map) => lookup(map, key),
        Value::Resource(r) => match key {
            Value::String(k) => r.get(k),
            _ => Err(EvalError::no_overload("_[_]", &[container, key])),
        },
        Value::Condition(c) => match key {
            Value::String(k) => c.get(k),
            _ => Err(EvalError::no_overload("_[_]", &[container, key])),
        },
        _ => Err(EvalError::no_overload("_[_]", &[container, key])),
    }
}

fn lookup(map: &Map, key: &Value) -> EvalResult {
    if !map_key_ok(key) {
        return Err(EvalError::no_overload(
            "_[_]",
            &[&Value::Map(Arc::new(map.clone())), key],
        ));
    }
    map.get(key)
        .cloned()
        .ok_or_else(|| EvalError::no_such_key(display_key(key)))
}

fn display_key(key: &Value) -> String {
    match key {
        Value::String(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => format!("{u}u"),
        Value::Bool(b) => b.to_string(),
        Value::Double(d) => d.to_string(),
        other => other.type_name().to_string(),
    }
}

/// `e.field`: a map entry, an object field, or the resource's field.
pub fn select(value: &Value, field: &str) -> EvalResult {
    match value {
        Value::Map(map) => map
            .get_str(field)
            .cloned()
            .ok_or_else(|| EvalError::no_such_key(field)),
        Value::Condition(c) => c.get(field),
        Value::Resource(r) => r.get(field),
        _ => Err(EvalError::new(
            ErrorKind::NoMatchingOverload,
            format!(
                "type '{}' does not support field selection",
                value.type_name()
            ),
        )),
    }
}

/// `has(e.field)`.
pub fn has(value: &Value, field: &str) -> EvalResult {
    match value {
        Value::Map(map) => Ok(Value::Bool(map.get_str(field).is_some())),
        Value::Condition(c) => c.get(field).map(|_| Value::Bool(true)),
        Value::Resource(r) => Ok(Value::Bool(r.has(field))),
        _ => Err(EvalError::new(
            ErrorKind::NoMatchingOverload,
            format!(
                "type '{}' does not support field selection",
                value.type_name()
            ),
        )),
    }
}
