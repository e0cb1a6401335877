//! The complete decoder's second way: a resource read from a JSON tree, field by field as the
//! schema's table names them (each field by its name, then its aliases; a null is absent).
//! The way every item that the byte scanner is unsure of takes (a field of the wrong type, a
//! duplicate key, an escaped key, deep nesting), so it is the one that says which field is
//! wrong.
//!
//! Invariant: decoding never fails. A field with the wrong JSON type or a malformed time holds
//! an error value, so one resource's bad data fails only the expressions that read that field.
//! Of duplicate keys the last wins, as in Go.

use crate::cel::host::{
    CONDITION_SCHEMA, Condition, ConditionFields, Conditions, EMPTY_MAP, EMPTY_TEXT, Field,
    FieldDef, FieldType, JsonText, RESOURCE_SCHEMA, Resource, ResourceFields, Text, Time,
};
use crate::cel::value::{ErrorKind, EvalError, Map, Value};
use serde_json::{Map as Object, Value as Json};
use std::sync::Arc;

/// The resource whose JSON text is `raw`.
pub(super) fn resource(raw: JsonText) -> Resource {
    let json: Json = serde_json::from_str(raw.get()).unwrap_or(Json::Null);
    let Some(obj) = json.as_object() else {
        let err = EvalError::new(
            ErrorKind::BadResource,
            format!("resource is not a JSON object but {}", json_kind(&json)),
        );
        return Resource::new(ResourceFields::failed(&err), raw);
    };
    let mut fields = ResourceFields::absent();
    for def in &RESOURCE_SCHEMA {
        let value = member(obj, def);
        match def.ty {
            FieldType::Str => fields.texts[def.slot] = string_field(def.name, value),
            FieldType::Time => fields.times[def.slot] = time_field(def.name, value),
            FieldType::Int => fields.ints[def.slot] = int_field(def.name, value),
            FieldType::Labels => fields.labels = labels_field(value),
            FieldType::Status => fields.conditions = conditions_field(value),
            FieldType::Reference | FieldType::Dyn => {}
        }
    }
    Resource::new(fields, raw)
}

/// The condition whose JSON text is `raw` (not an object: every field absent; the scanner hands
/// over only objects).
pub(super) fn condition(raw: &JsonText) -> Condition {
    match serde_json::from_str::<Json>(raw.get()) {
        Ok(Json::Object(obj)) => condition_of(&obj),
        _ => Condition::new(ConditionFields::absent()),
    }
}

fn condition_of(obj: &Object<String, Json>) -> Condition {
    let mut fields = ConditionFields::absent();
    for def in &CONDITION_SCHEMA {
        let value = member(obj, def);
        match def.ty {
            FieldType::Str => fields.texts[def.slot] = string_field(def.name, value),
            FieldType::Time => fields.times[def.slot] = time_field(def.name, value),
            FieldType::Int => fields.ints[def.slot] = int_field(def.name, value),
            _ => {}
        }
    }
    Condition::new(fields)
}

/// The member of `obj` that is field `def`: by its name, else its aliases in order; a null is
/// absent (and gives way to another spelling).
fn member<'a, F>(obj: &'a Object<String, Json>, def: &FieldDef<F>) -> Option<&'a Json> {
    std::iter::once(&def.name)
        .chain(def.aliases)
        .find_map(|n| obj.get(*n).filter(|v| !v.is_null()))
}

fn json_kind(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "a bool",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn bad_field(name: &str, want: &str, got: &Json) -> EvalError {
    EvalError::new(
        ErrorKind::BadResource,
        format!(
            "invalid field '{name}': expected {want}, got {}",
            json_kind(got)
        ),
    )
}

fn string_field(name: &str, json: Option<&Json>) -> Field<Text> {
    match json {
        None => Ok(Text::empty()),
        Some(Json::String(s)) => Ok(Text::owned(s.as_str())),
        Some(other) => Err(bad_field(name, "a string", other)),
    }
}

fn time_field(name: &str, json: Option<&Json>) -> Field<Time> {
    match json {
        None => Ok(Time::empty()),
        Some(Json::String(s)) => Time::canonical(name, s, &EMPTY_TEXT),
        Some(other) => Err(bad_field(name, "an RFC 3339 time string", other)),
    }
}

fn int_field(name: &str, json: Option<&Json>) -> Field<i64> {
    match json {
        None => Ok(0),
        // As Go's encoding/json for an int64 field: no fraction, no exponent, in range.
        Some(Json::Number(n)) => n
            .as_i64()
            .ok_or_else(|| bad_field(name, "an integer", &Json::Number(n.clone()))),
        Some(other) => Err(bad_field(name, "an integer", other)),
    }
}

fn labels_field(json: Option<&Json>) -> Field<Arc<Map>> {
    match json {
        None => Ok(EMPTY_MAP.clone()),
        Some(Json::Object(obj)) => {
            let mut entries = Vec::with_capacity(obj.len());
            for (k, v) in obj {
                match v {
                    Json::String(s) => entries.push((Value::string(k), Value::string(s))),
                    other => return Err(bad_field(&format!("labels.{k}"), "a string", other)),
                }
            }
            Ok(Arc::new(Map::from_entries(entries)))
        }
        Some(other) => Err(bad_field("labels", "an object", other)),
    }
}

fn conditions_field(status: Option<&Json>) -> Field<Conditions> {
    let status = match status {
        None => return Ok(Conditions::default()),
        Some(Json::Object(status)) => status,
        Some(other) => return Err(bad_field("status", "an object", other)),
    };
    let items = match status.get("conditions") {
        None | Some(Json::Null) => return Ok(Conditions::default()),
        Some(Json::Array(items)) => items,
        Some(other) => return Err(bad_field("status.conditions", "an array", other)),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Json::Object(c) => Ok(Arc::new(condition_of(c))),
            other => Err(bad_field(
                &format!("status.conditions[{i}]"),
                "an object",
                other,
            )),
        })
        .collect()
}
