//! The list endpoints' `fields` projection, as the real API applies it after the database read
//! (hyperfleet-api `pkg/handlers/list_params.go` `normalizeList`, `ensureIDField`;
//! `pkg/api/presenters/slice_filter.go` `SliceFilter`).
//!
//! Takes the `fields` parameters and a page of stored resources; gives the projected page
//! `{"items":[…]|null,"page":…,"size":…,"total":…}` (no `kind`), each item an object with sorted
//! keys (a Go map), or the API's 400 when a field does not exist.
//!
//! The API projects the generated `openapi.Resource` struct by reflection, and the rules follow
//! from its field types, which this module restates per field (`Shape`):
//! - top-level names; a time (`created_time`, `updated_time`, `deleted_time`) is written as RFC
//!   3339 whole seconds, and left out when absent (`deleted_time` absent is `null`);
//! - `status` is a struct: `status.conditions`, `status.conditions.<subfield>` and `status.*`
//!   project; bare `status` does not exist for the check;
//! - maps (`labels`, `spec`, `references`, `tenancy`) project whole; `labels.x` does not exist;
//! - `owner_references` is a pointer to a struct without JSON names: when the first item has
//!   one, neither it nor a sub-field exists; when absent it projects as `null`;
//!
//! Invariant: fields are checked against the page's first item only, as the API checks them,
//! and an empty page is `items: null` without any check.

use crate::cel::time::{Timestamp, format_timestamp_utc, parse_timestamp};
use serde_json::{Map, Value as Json};
use std::collections::{BTreeMap, BTreeSet};

/// The fields a request asks for: every `fields` parameter split on commas, trimmed, blanks
/// dropped, `id` added; `None` when none is asked (no projection).
pub fn requested_fields<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Vec<String>> {
    let mut fields: Vec<String> = values
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    if fields.is_empty() {
        return None;
    }
    if !fields.iter().any(|f| f == "id") {
        fields.push("id".into());
    }
    Some(fields)
}

/// How the API's struct holds a field, which decides how it is checked and written.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// A string, a number, a map or a nil pointer: projected as stored.
    Value(Zero),
    /// A `time.Time`: whole seconds, absent when zero.
    Time,
    /// A `*time.Time`: whole seconds, `null` when absent.
    TimePtr,
    /// `status`, a struct.
    Status,
    /// `owner_references`, a pointer to a struct without JSON names.
    OwnerRef,
}

/// What a value field is when the stored resource lacks it.
#[derive(Clone, Copy, PartialEq)]
enum Zero {
    Null,
    Text,
    Number,
}

const RESOURCE: [(&str, Shape); 16] = [
    ("created_by", Shape::Value(Zero::Text)),
    ("created_time", Shape::Time),
    ("deleted_by", Shape::Value(Zero::Null)),
    ("deleted_time", Shape::TimePtr),
    ("generation", Shape::Value(Zero::Number)),
    ("href", Shape::Value(Zero::Null)),
    ("id", Shape::Value(Zero::Text)),
    ("kind", Shape::Value(Zero::Text)),
    ("labels", Shape::Value(Zero::Null)),
    ("name", Shape::Value(Zero::Text)),
    ("owner_references", Shape::OwnerRef),
    ("references", Shape::Value(Zero::Null)),
    ("spec", Shape::Value(Zero::Null)),
    ("status", Shape::Status),
    ("tenancy", Shape::Value(Zero::Null)),
    ("updated_by", Shape::Value(Zero::Text)),
];

const CONDITION: [(&str, Shape); 8] = [
    ("created_time", Shape::Time),
    ("last_transition_time", Shape::Time),
    ("last_updated_time", Shape::Time),
    ("message", Shape::Value(Zero::Null)),
    ("observed_generation", Shape::Value(Zero::Number)),
    ("reason", Shape::Value(Zero::Null)),
    ("status", Shape::Value(Zero::Text)),
    ("type", Shape::Value(Zero::Text)),
];

fn resource_fields() -> impl Iterator<Item = (&'static str, Shape)> {
    RESOURCE
        .into_iter()
        .chain(std::iter::once(("updated_time", Shape::Time)))
}

fn not_found(model: &str, mut fields: Vec<String>) -> String {
    fields.sort();
    format!(
        "The following field(s) doesn't exist in `{model}`: {}",
        fields.join(", ")
    )
}

/// `validate`: the API's 400 `detail` when a field does not exist in `first` (the page's first
/// item, whose optional parts decide what exists).
pub fn check(fields: &[String], first: &Json) -> Result<(), String> {
    let mut left: BTreeSet<&str> = fields.iter().map(String::as_str).collect();
    for (name, shape) in resource_fields() {
        let nested = |left: &BTreeSet<&str>| -> Vec<String> {
            let prefix = format!("{name}.");
            left.iter()
                .filter(|f| f.starts_with(&prefix))
                .map(|f| f.to_string())
                .collect()
        };
        match shape {
            Shape::Status => {
                left.remove("status.*");
                let sub = nested(&left);
                if !sub.is_empty() {
                    check_status(&sub)?;
                    for f in &sub {
                        left.remove(f.as_str());
                    }
                }
            }
            Shape::OwnerRef if first.get(name).is_some_and(|o| !o.is_null()) => {
                left.remove("owner_references.*");
                let sub = nested(&left);
                if !sub.is_empty() {
                    return Err(not_found("", sub));
                }
            }
            _ => {
                left.remove(name);
            }
        }
    }
    if left.is_empty() {
        return Ok(());
    }
    Err(not_found(
        "Resource",
        left.into_iter().map(str::to_string).collect(),
    ))
}

/// `validate` of `ResourceStatus` with the `status.`-prefixed fields.
fn check_status(fields: &[String]) -> Result<(), String> {
    let mut left: BTreeSet<&str> = fields.iter().map(String::as_str).collect();
    left.remove("status.conditions");
    left.remove("status.conditions.*");
    let sub: Vec<&str> = left
        .iter()
        .copied()
        .filter(|f| f.starts_with("status.conditions."))
        .collect();
    if !sub.is_empty() {
        let unknown: Vec<String> = sub
            .iter()
            .filter(|f| {
                let name = &f["status.conditions.".len()..];
                !CONDITION.iter().any(|(n, _)| *n == name)
            })
            .map(|f| f.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(not_found("ResourceCondition", unknown));
        }
        for f in sub {
            left.remove(f);
        }
    }
    if left.is_empty() {
        return Ok(());
    }
    Err(not_found(
        "ResourceStatus",
        left.into_iter().map(str::to_string).collect(),
    ))
}

/// A time as the API's projection writes it: RFC 3339 whole seconds (in UTC, the zone the
/// API's database driver reads times in); None when absent or unreadable.
fn whole_seconds(value: Option<&Json>) -> Option<Json> {
    let at = parse_timestamp(value?.as_str()?).ok()?;
    let whole = Timestamp::from_unix_seconds(at.unix_seconds()).ok()?;
    Some(Json::String(format_timestamp_utc(whole)))
}

/// A JSON value with every object's keys sorted, as Go writes a map.
fn sorted(value: &Json) -> Json {
    match value {
        Json::Object(map) => {
            let by_key: BTreeMap<&String, Json> = map.iter().map(|(k, v)| (k, sorted(v))).collect();
            Json::Object(by_key.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Json::Array(items) => Json::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `structToMap` over `table` with the fields `wanted(name)` says are asked for.
fn project_fields(
    item: &Json,
    table: impl Iterator<Item = (&'static str, Shape)>,
    wanted: impl Fn(&str) -> bool,
    out: &mut BTreeMap<String, Json>,
) {
    for (name, shape) in table {
        if !wanted(name) {
            continue;
        }
        let value = item.get(name).filter(|v| !v.is_null());
        let projected = match (shape, value) {
            (Shape::Value(_), Some(v)) => Some(sorted(v)),
            (Shape::Value(Zero::Null), None) => Some(Json::Null),
            (Shape::Value(Zero::Text), None) => Some(Json::String(String::new())),
            (Shape::Value(Zero::Number), None) => Some(Json::from(0)),
            (Shape::Time, v) => whole_seconds(v),
            (Shape::TimePtr, None) | (Shape::OwnerRef, None) => Some(Json::Null),
            (Shape::TimePtr, v) => whole_seconds(v).or(Some(Json::Null)),
            // A struct without JSON names projects to nothing, which the API leaves out.
            (Shape::OwnerRef, Some(_)) | (Shape::Status, _) => None,
        };
        if let Some(v) = projected {
            out.insert(name.to_string(), v);
        }
    }
}

/// The projection of one stored resource.
pub fn project(fields: &[String], item: &Json) -> Json {
    let asked = |f: &str| fields.iter().any(|x| x == f);
    let mut out = BTreeMap::new();
    project_fields(item, resource_fields(), |n| asked(n), &mut out);
    // `status.conditions`: asked by itself, with `.*`, with `status.*`, or by a subfield.
    let all = asked("status.conditions") || asked("status.conditions.*") || asked("status.*");
    let some = fields.iter().any(|f| f.starts_with("status.conditions."));
    if all || some {
        let conditions = item
            .pointer("/status/conditions")
            .and_then(Json::as_array)
            .map_or(&[][..], Vec::as_slice);
        let wanted = |n: &str| all || asked(&format!("status.conditions.{n}"));
        let projected: Vec<Json> = conditions
            .iter()
            .filter_map(|c| {
                let mut row = BTreeMap::new();
                project_fields(c, CONDITION.into_iter(), wanted, &mut row);
                (!row.is_empty()).then(|| Json::Object(row.into_iter().collect::<Map<_, _>>()))
            })
            .collect();
        // An empty list is written when asked for; a non-empty one that projects to nothing
        // is left out, and so is `status` with it.
        if conditions.is_empty() || !projected.is_empty() {
            let status = Map::from_iter([("conditions".to_string(), Json::Array(projected))]);
            out.insert("status".into(), Json::Object(status));
        }
    }
    Json::Object(out.into_iter().collect())
}

/// The projected list body: `{"items":…,"page":…,"size":…,"total":…}` in that order (a Go
/// struct), `items` null when the page is empty.
pub fn envelope(items: Vec<Json>, page: u32, total: u64) -> Vec<u8> {
    let size = items.len();
    let items = if items.is_empty() {
        "null".to_string()
    } else {
        Json::Array(items).to_string()
    };
    format!(r#"{{"items":{items},"page":{page},"size":{size},"total":{total}}}"#).into_bytes()
}

#[cfg(test)]
mod tests;
