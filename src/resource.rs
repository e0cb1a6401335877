//! JSON → object decoding: one HyperFleet resource decoded once from JSON into the fields rules
//! read (the object model itself is [`crate::cel::host`]), and a list page decoded in one pass
//! under the rules' [`Projection`] ([`decode_items`]).
//!
//! Invariant: decoding never fails. A field with the wrong JSON type or a malformed time holds an
//! error value, so one resource's bad data fails only the expressions that read that field, and
//! only that resource's decision (the Go sentinel fails the whole page instead).
//!
//! A resource over [`MAX_RESOURCE_BYTES`] of JSON is not decoded at all (its memory would grow
//! with its size, several times over): only its id is read, every other field is an error, and
//! [`Resource::too_large`] tells the daemon to skip it with [`TOO_LARGE_REASON`].

pub use crate::cel::host::{
    CONDITION_FIELDS, Condition, Field, MAX_RESOURCE_BYTES, Page, Projection, RESOURCE_FIELDS,
    RawText, Resource, TOO_LARGE_REASON, Text, Time, json_to_value,
};
use crate::cel::host::{Conditions, EMPTY_MAP, EMPTY_PAGE};
use crate::cel::time::{CANONICAL_MAX, canonical_rfc3339_parsed_in, parsed_if_canonical_utc};
use crate::cel::value::{ErrorKind, EvalError, Map, Value};
use serde::Deserialize;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::Arc;

pub mod corpus;
mod page;

/// Decodes a list page's text `{items, total, …}` in one pass under `projection`: the items
/// (sharing the text) and the total, or `None` when the page is not one this fast path reads
/// with certainty (a malformed or unusual envelope): the caller then decodes it completely,
/// which reports its errors.
pub fn decode_items(page: &Page, projection: &Arc<Projection>) -> Option<(Vec<Resource>, i64)> {
    page::scan_page(page, projection)
}

impl Condition {
    /// Decodes one condition object, never failing: bad fields hold errors.
    pub fn from_json(obj: &serde_json::Map<String, Json>) -> Condition {
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| obj.get(*n).filter(|v| !v.is_null()))
        };
        let text = |names: &[&str]| string_field(names[0], field(names));
        let time = |names: &[&str]| time_field(names[0], field(names));
        Condition {
            ty: text(&["type"]),
            status: text(&["status"]),
            reason: text(&["reason"]),
            message: text(&["message"]),
            created_time: time(&["created_time", "createdTime"]),
            last_updated_time: time(&["last_updated_time", "lastUpdatedTime", "lastUpdateTime"]),
            last_transition_time: time(&["last_transition_time", "lastTransitionTime"]),
            observed_generation: int_field(
                "observed_generation",
                field(&["observed_generation", "observedGeneration"]),
            ),
            partial: None,
        }
    }
}

impl Resource {
    /// Decodes a resource from a JSON value. Never fails: a non-object decodes to a resource
    /// whose every field is an error.
    pub fn from_json(json: Json) -> Resource {
        let text = json.to_string();
        if text.len() > MAX_RESOURCE_BYTES {
            return Resource::oversized(&text);
        }
        Resource::decode(&json, RawText::whole(Arc::new(text)))
    }

    /// Decodes a resource from its JSON text without building a JSON tree: the fields rules
    /// read are decoded from borrowed slices of the text. Never fails, as
    /// [`Resource::from_json`].
    pub fn from_text(text: &str) -> Resource {
        Resource::from_page(&Arc::new(text.to_owned()), 0..text.len())
    }

    /// Decodes the item at `range` of a list page's text (which the resource then shares).
    /// A range that is not within the text, or not on character boundaries, decodes as a
    /// resource that is not a JSON object.
    pub fn from_page(page: &Page, range: std::ops::Range<usize>) -> Resource {
        let Some(text) = page.get(range.clone()) else {
            return Resource::decode(&Json::Null, RawText::owned("null"));
        };
        if text.len() > MAX_RESOURCE_BYTES {
            return Resource::oversized(text);
        }
        let Some(raw) = RawText::range(page, range.start, range.end) else {
            return Resource::decode(&Json::Null, RawText::owned("null"));
        };
        // serde would also read a JSON array as a struct: only objects take the fast path.
        let wire = match text.trim_start().starts_with('{') {
            true => serde_json::from_str::<Wire<'_>>(text).ok(),
            false => None,
        };
        let Some(w) = wire else {
            // Not an object, or one the typed fast path cannot read (a field of the wrong type,
            // a duplicate key): the slow path through a JSON tree reports exactly which field
            // is wrong, and keeps the last of duplicate keys as Go does.
            let json: Json = serde_json::from_str(text).unwrap_or(Json::Null);
            return Resource::decode(&json, raw);
        };
        Resource {
            id: wire_str(page, &w.id),
            kind: wire_str(page, &w.kind),
            name: wire_str(page, &w.name),
            href: wire_str(page, &w.href),
            created_time: wire_time("created_time", page, &w.created_time),
            updated_time: wire_time("updated_time", page, &w.updated_time),
            generation: Ok(w.generation.unwrap_or(0)),
            labels: Ok(Arc::new(Map::from_entries(
                w.labels.map_or_else(Vec::new, |l| l.0),
            ))),
            conditions: Ok(w
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .map(|c| Arc::new(c.decode(page)))
                .collect()),
            raw,
            oversize: None,
            partial: None,
        }
    }

    /// A resource over [`MAX_RESOURCE_BYTES`]: its id alone is read (serde skips the rest
    /// without building anything), every other field is an error naming the size.
    fn oversized(text: &str) -> Resource {
        #[derive(Deserialize)]
        struct IdOnly<'a> {
            #[serde(borrow, default)]
            id: Option<Cow<'a, str>>,
        }
        let err = EvalError::new(
            ErrorKind::BadResource,
            format!(
                "resource is {} bytes of JSON, more than the limit of {MAX_RESOURCE_BYTES}",
                text.len()
            ),
        );
        let id = match serde_json::from_str::<IdOnly<'_>>(text) {
            Ok(IdOnly { id: Some(id) }) => Ok(Text::owned(&id)),
            _ => Err(err.clone()),
        };
        let mut resource = Resource::decode(&Json::Null, RawText::owned("null"));
        resource.id = id;
        resource.set_all_but_id(&err);
        resource.oversize = Some(text.len());
        resource
    }

    fn set_all_but_id(&mut self, err: &EvalError) {
        self.kind = Err(err.clone());
        self.name = Err(err.clone());
        self.href = Err(err.clone());
        self.created_time = Err(err.clone());
        self.updated_time = Err(err.clone());
        self.generation = Err(err.clone());
        self.labels = Err(err.clone());
        self.conditions = Err(err.clone());
    }

    fn decode(json: &Json, raw: RawText) -> Resource {
        let Some(obj) = json.as_object() else {
            let err = EvalError::new(
                ErrorKind::BadResource,
                format!("resource is not a JSON object but {}", json_kind(json)),
            );
            return Resource {
                id: Err(err.clone()),
                kind: Err(err.clone()),
                name: Err(err.clone()),
                href: Err(err.clone()),
                created_time: Err(err.clone()),
                updated_time: Err(err.clone()),
                generation: Err(err.clone()),
                labels: Err(err.clone()),
                conditions: Err(err),
                raw,
                oversize: None,
                partial: None,
            };
        };
        let field = |name: &str| obj.get(name).filter(|v| !v.is_null());
        Resource {
            id: string_field("id", field("id")),
            kind: string_field("kind", field("kind")),
            name: string_field("name", field("name")),
            href: string_field("href", field("href")),
            created_time: time_field("created_time", field("created_time")),
            updated_time: time_field("updated_time", field("updated_time")),
            generation: int_field("generation", field("generation")),
            labels: labels_field(field("labels")),
            conditions: conditions_field(obj),
            raw,
            oversize: None,
            partial: None,
        }
    }
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
        Some(Json::String(s)) => canonical_time(name, s, &EMPTY_PAGE),
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

fn conditions_field(obj: &serde_json::Map<String, Json>) -> Field<Conditions> {
    let status = match obj.get("status") {
        None | Some(Json::Null) => return Ok(Conditions::default()),
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
            Json::Object(c) => Ok(Arc::new(Condition::from_json(c))),
            other => Err(bad_field(
                &format!("status.conditions[{i}]"),
                "an object",
                other,
            )),
        })
        .collect()
}

/// The fields of a resource the rules read, as the API sends them, with strings borrowed from
/// the item's JSON text where they have no escapes. Reading fails on any surprise (a wrong
/// type, a duplicate key), sending the item down the slow path; a null is as absent.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    href: Option<Cow<'a, str>>,
    #[serde(borrow)]
    created_time: Option<Cow<'a, str>>,
    #[serde(borrow)]
    updated_time: Option<Cow<'a, str>>,
    generation: Option<i64>,
    labels: Option<WireLabels>,
    #[serde(borrow)]
    status: Option<WireStatus<'a>>,
}

#[derive(Deserialize)]
struct WireStatus<'a> {
    #[serde(borrow)]
    conditions: Option<Vec<WireCondition<'a>>>,
}

/// One condition; the aliases are those of [`Condition::from_json`] (two spellings of one field
/// in one condition is a duplicate key: the slow path picks between them).
#[derive(Deserialize)]
struct WireCondition<'a> {
    #[serde(borrow, rename = "type")]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "createdTime")]
    created_time: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "lastUpdatedTime", alias = "lastUpdateTime")]
    last_updated_time: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "lastTransitionTime")]
    last_transition_time: Option<Cow<'a, str>>,
    #[serde(alias = "observedGeneration")]
    observed_generation: Option<i64>,
}

impl WireCondition<'_> {
    fn decode(&self, page: &Page) -> Condition {
        let time = |name, t| wire_time(name, page, t);
        Condition {
            ty: wire_str(page, &self.ty),
            status: wire_str(page, &self.status),
            reason: wire_str(page, &self.reason),
            message: wire_str(page, &self.message),
            created_time: time("created_time", &self.created_time),
            last_updated_time: time("last_updated_time", &self.last_updated_time),
            last_transition_time: time("last_transition_time", &self.last_transition_time),
            observed_generation: Ok(self.observed_generation.unwrap_or(0)),
            partial: None,
        }
    }
}

/// `labels` as CEL map entries in JSON order; a non-string value or a repeated key fails.
struct WireLabels(Vec<(Value, Value)>);

impl<'de> Deserialize<'de> for WireLabels {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = WireLabels;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<WireLabels, A::Error> {
                let mut entries: Vec<(Value, Value)> = Vec::new();
                let mut keys = Vec::new();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, Cow<'de, str>>()? {
                    entries.push((Value::string(&k), Value::string(&v)));
                    keys.push(k);
                }
                // Sorted, not compared pairwise: a 1 MiB resource can hold ~100,000 labels.
                keys.sort_unstable();
                if keys.windows(2).any(|w| w[0] == w[1]) {
                    return Err(serde::de::Error::custom("duplicate label"));
                }
                Ok(WireLabels(entries))
            }
        }
        d.deserialize_map(Entries)
    }
}

/// A borrowed string of the page is kept as its range; an unescaped one is copied.
fn wire_str(page: &Page, text: &Option<Cow<'_, str>>) -> Field<Text> {
    Ok(match text {
        None => Text::empty(),
        Some(Cow::Borrowed(s)) => Text::within(page, s),
        Some(Cow::Owned(s)) => Text::owned(s.as_str()),
    })
}

fn wire_time(name: &str, page: &Page, text: &Option<Cow<'_, str>>) -> Field<Time> {
    match text {
        None => Ok(Time::empty()),
        Some(Cow::Borrowed(s)) => canonical_time(name, s, page),
        Some(Cow::Owned(s)) => canonical_time(name, s, &EMPTY_PAGE),
    }
}

/// A time field in canonical RFC 3339 with its parsed value, or the error reading it gives.
/// The text is `text` itself (a range of `src` when it is a slice of it) when it is already
/// canonical, the usual case; else a copy of the canonical form.
pub(crate) fn canonical_time(name: &str, text: &str, src: &Page) -> Field<Time> {
    if let Some(at) = parsed_if_canonical_utc(text) {
        return Ok(Time {
            text: Text::within(src, text),
            at,
        });
    }
    let mut buf = [0u8; CANONICAL_MAX];
    let (canonical, at) = canonical_rfc3339_parsed_in(text, &mut buf).map_err(|e| {
        EvalError::new(
            ErrorKind::BadResource,
            format!("invalid field '{name}': {e}"),
        )
    })?;
    let text = match canonical == text {
        true => Text::within(src, text),
        false => Text::owned(canonical),
    };
    Ok(Time { text, at })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_over_the_limit_is_not_decoded() {
        let condition =
            r#"{"type":"Ready","status":"True","last_updated_time":"2025-01-01T00:00:00Z"},"#;
        let n = MAX_RESOURCE_BYTES / condition.len() + 1;
        let big = format!(
            r#"{{"status":{{"conditions":[{}{{}}]}},"id":"big","generation":2}}"#,
            condition.repeat(n)
        );
        let page: Page = Arc::new(format!(r#"[{big},{{"id":"small"}}]"#));
        let resource = Resource::from_page(&page, 1..1 + big.len());
        assert_eq!(resource.too_large(), Some(big.len()));
        assert_eq!(resource.id.as_deref().ok(), Some("big"));
        let err = resource.generation.clone().unwrap_err();
        assert!(
            err.message.contains("more than the limit of 1048576"),
            "{err:?}"
        );
        assert!(resource.conditions.is_err());
        // At the limit it decodes as usual.
        let shell = r#"{"id":"s","generation":3,"pad":""}"#;
        let at_limit = shell.replace(
            r#""pad":"""#,
            &format!(
                r#""pad":"{}""#,
                "x".repeat(MAX_RESOURCE_BYTES - shell.len())
            ),
        );
        assert_eq!(at_limit.len(), MAX_RESOURCE_BYTES);
        let resource = Resource::from_text(&at_limit);
        assert_eq!(resource.too_large(), None);
        assert_eq!(resource.generation.ok(), Some(3));
        let json: Json = serde_json::from_str(&big).unwrap();
        assert_eq!(Resource::from_json(json).too_large(), Some(big.len()));
    }
    use serde_json::json;

    #[test]
    fn last_condition_of_a_type_wins_and_missing_is_zero() {
        let r = Resource::from_json(json!({"generation": 2, "status": {"conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "Ready", "status": "True", "observedGeneration": 2},
        ]}}));
        let c = r.condition("Ready").unwrap();
        assert_eq!(c.status.as_deref().unwrap(), "True");
        assert_eq!(c.observed_generation, Ok(2));
        let z = r.condition("Reconciled").unwrap();
        assert_eq!(z.status.as_deref().unwrap(), "");
        assert_eq!(z.observed_generation, Ok(0));
    }

    /// Odd resources both decoders must read alike (shared by the decoding-agreement tests).
    const ODD_TEXTS: &[&str] = &[
        r#"{"id":"a","kind":"Cluster","generation":3,"labels":{"x":"y"},"spec":{"n":1},
            "status":{"conditions":[{"type":"Ready","status":"True","observedGeneration":3,
            "lastTransitionTime":"2025-01-01T00:00:00.500+02:00"}]}}"#,
        r#"{"id":7,"generation":2.0,"status":"broken","created_time":"2025-13-01T00:00:00Z"}"#,
        r#"{"id":"dup","id":"dup2"}"#,
        r#"[1,2]"#,
        r#"{"id":"esc\u00e9\n","labels":{"a":1}}"#,
        // Nulls are absent; escapes decode; duplicate labels keep the last value.
        r#"{"id":null,"kind":"K\"x","name":"n","href":null,"generation":null,
            "updated_time":"2025-01-01T1:02:03.120Z","labels":{"a":"1","b":"2","a":"3"},
            "status":{"conditions":null}}"#,
        // Two spellings of one condition field; a null spelling gives way to the other.
        r#"{"status":{"conditions":[{"type":"A","last_updated_time":null,
            "lastUpdatedTime":"2025-01-01T00:00:00-00:00","observed_generation":1,
            "observedGeneration":2}],"phase":"x"}}"#,
        // A bad time is an error of that field only; a non-object condition fails them all.
        r#"{"id":"t","updated_time":"yesterday","status":{"conditions":[{"type":"A",
            "created_time":"2025-01-01"}]}}"#,
        r#"{"id":"c","status":{"conditions":[{"type":"A"},3]}}"#,
        r#"{"generation":9223372036854775808,"labels":[]}"#,
    ];

    #[test]
    fn raw_and_tree_decoding_agree() {
        for &text in ODD_TEXTS {
            let a = Resource::from_text(text);
            let b = Resource::from_json(serde_json::from_str(text).unwrap());
            assert_eq!(
                format!(
                    "{:?}",
                    (
                        (&a.id, &a.kind, &a.name, &a.href, &a.generation, &a.labels),
                        (&a.created_time, &a.updated_time)
                    )
                ),
                format!(
                    "{:?}",
                    (
                        (&b.id, &b.kind, &b.name, &b.href, &b.generation, &b.labels),
                        (&b.created_time, &b.updated_time)
                    )
                ),
                "{text}"
            );
            assert_eq!(
                format!("{:?}", a.conditions),
                format!("{:?}", b.conditions),
                "{text}"
            );
            assert_eq!(a.json(), b.json(), "{text}");
        }
    }

    #[test]
    fn bad_fields_are_errors_not_decode_failures() {
        let r = Resource::from_json(json!({"generation": "two", "status": "broken"}));
        assert_eq!(
            r.generation.as_ref().unwrap_err().kind,
            ErrorKind::BadResource
        );
        assert!(r.condition("Reconciled").is_err());
        assert_eq!(r.id.as_deref().unwrap(), "");
    }

    // ---- projected page decoding ----

    /// Every read of a resource, as text.
    fn view(r: &Resource) -> String {
        let mut out = String::new();
        for name in RESOURCE_FIELDS.iter().chain(&["other", "phase"]) {
            out += &format!("{name}={:?} has={}\n", r.get(name), r.has(name));
        }
        for ty in ["A", "Ready", "Reconciled", "K\"x", ""] {
            match r.condition(ty) {
                Ok(c) => {
                    for f in CONDITION_FIELDS {
                        out += &format!("{ty}.{f}={:?}\n", c.get(f));
                    }
                }
                Err(e) => out += &format!("{ty}: {e:?}\n"),
            }
        }
        out + &format!("{:?} {:?} {:?}", r.too_large(), r.to_map(), r.json())
    }

    fn projections() -> Vec<Projection> {
        use crate::cel::host::{ConditionField as C, ResourceField as R};
        let mut some = Projection::none();
        some.add_field(R::Generation);
        some.add_field(R::Kind);
        some.add_condition(Some("Reconciled"));
        some.add_condition(Some("A"));
        some.add_condition_field(Some(C::Status));
        some.add_condition_field(Some(C::LastUpdatedTime));
        let mut labels = Projection::none();
        labels.add_field(R::Labels);
        labels.add_field(R::UpdatedTime);
        labels.add_condition(None);
        labels.add_condition_field(Some(C::ObservedGeneration));
        vec![Projection::none(), some, labels, Projection::all()]
    }

    #[test]
    fn projected_pages_read_as_complete_decoding() {
        let mut texts = vec![
            r#"{"id":"a","kind":"Cluster","generation":3,"labels":{"x":"y"},"spec":{"n":[1,2.5e3,-0,true,null,"s\\"]},
                "status":{"phase":"x","conditions":[{"type":"Ready","status":"True","observedGeneration":3,
                "lastTransitionTime":"2025-01-01T00:00:00.500+02:00","reason":"r\u00e9"},
                {"type":"Reconciled","status":"False","last_updated_time":"2025-01-01T00:00:00Z"},
                {"type":"A","created_time":"bad","message":null}]}}"#,
            r#"{"id":"b","status":{"conditions":[{"type":"A","status":"1"},{"type":"A","status":"2"}]}}"#,
            r#"{"id":"k\"x","kind":"K\"x","status":{"conditions":[{"type":"K\"x","status":"True"}]},"labels":null}"#,
            r#" { "id" : "ws" , "generation" : -7 , "status" : { "conditions" : [ ] } } "#,
            r#"{"id":"dupspelling","status":{"conditions":[{"type":"A","observed_generation":1,"observedGeneration":2}]}}"#,
            r#"{"id":"nulltype","status":{"conditions":[{"type":null,"status":"True"},{"status":"False"}]}}"#,
        ];
        texts.extend(ODD_TEXTS);
        texts.extend([r#"null"#, r#""text""#]);
        // A condition of a type not read is skipped once its type is known: a second `type`
        // (which makes it one that is read), wrong types and nesting in its rest.
        texts.extend([
            r#"{"id":"dt","status":{"conditions":[{"type":"Other","status":"x","type":"Reconciled","status":"True"}]}}"#,
            r#"{"id":"dt2","status":{"conditions":[{"type":"Other","a":{"type":"A"},"type":"A"}]}}"#,
            r#"{"id":"dt3","status":{"conditions":[{"type":"Other","typ\u0065":"Reconciled","status":"True"}]}}"#,
            r#"{"id":"dt4","status":{"conditions":[{"type":"Other","st\u0061tus":"x"},{"type":"A","st\u0061tus":"y"}]}}"#,
            r#"{"id":"dv","status":{"conditions":[{"type":"Other","status":5,"observed_generation":"x",
                "last_updated_time":[1,{"a":null,"b":[true,false,-1.5E+3]}],"reason":"\"\u00e9"},
                {"type":"A","status":"True"}]}}"#,
            r#"{"id":"de","status":{"conditions":[{"type":"Other"},{"type":"Other" , "x" : { } },{}]}}"#,
            r#"{"id":"sk","spec":{"a":[{},[],{"b":[]}],"c":"x\u00e9\"y","d":[[[[0]]]],"e":""}}"#,
            // Surrogate escapes, lone (which serde refuses in a string it decodes) and paired,
            // in skipped values and conditions (found by the page fuzz target).
            r#"{"id":"ls","status":{"conditions":[{"type":"Other","message":"m \udddd"}]}}"#,
            r#"{"id":"ls2","spec":{"m":"\ud800"},"labels":{"k":"\udc00x"}}"#,
            r#"{"id":"ls3","status":{"conditions":[{"type":"Reconciled","status":"True","message":"\ud83d\ude00"}]}}"#,
            r#"{"id":"ls4","name":"\ud83d\ude00","spec":{"m":"\uD83D\uDE00 \uDBFF\uDFFF \ud7ff\ue000"}}"#,
            // Numbers serde finds out of range when it decodes them, not when it skips them.
            r#"{"id":"nr","spec":{"max":120E8888825674,"min":1e-400,"e":1.5e3}}"#,
            r#"{"id":"nr2","status":{"conditions":[{"type":"Other","observed_generation":2E999}]}}"#,
            // `-0`, which serde reads as a float, not an integer (found by the page fuzz
            // target): a bad `generation` / `observed_generation` to the complete decoder.
            r#"{"id":"nz","generation":-0}"#,
            r#"{"id":"nz2","generation":1,"status":{"conditions":[{"type":"Reconciled","observed_generation":-0}]}}"#,
        ]);
        // Nesting up to the skipper's depth (past it the whole page is left to serde).
        let nested = |n: usize| {
            format!(
                r#"{{"id":"n{n}","spec":{}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        let deep: Vec<String> = [63, 64].into_iter().map(nested).collect();
        texts.extend(deep.iter().map(String::as_str));
        let too_deep: Page = Arc::new(format!(r#"{{"items":[{}],"total":1}}"#, nested(65)));
        assert!(decode_items(&too_deep, &Arc::new(Projection::none())).is_none());
        // Repeated label keys, apart and among many (found by sorting, not pairwise).
        texts.push(r#"{"id":"dup","labels":{"a":"1","b":"2","c":"3","a":"4"}}"#);
        let keys = |n: usize| {
            (0..n)
                .map(|i| format!(r#""k{i}":"{i}""#))
                .collect::<Vec<_>>()
        };
        let many = format!(r#"{{"id":"many","labels":{{{}}}}}"#, keys(3000).join(","));
        let many_dup = format!(
            r#"{{"id":"manydup","labels":{{{},"k0":"again"}}}}"#,
            keys(3000).join(",")
        );
        texts.extend([many.as_str(), many_dup.as_str()]);
        let now = crate::cel::time::parse_timestamp("2026-01-01T00:00:00Z").unwrap();
        let fleet: Vec<String> = corpus::fleet(30, now, 3)
            .iter()
            .map(|j| j.to_string())
            .collect();
        texts.extend(fleet.iter().map(String::as_str));
        for p in projections() {
            let p = Arc::new(p);
            for text in &texts {
                let page: Page = Arc::new(format!(r#"{{"items":[{text}, {text}],"total":2}}"#));
                let (items, total) = decode_items(&page, &p).unwrap_or_else(|| panic!("{text}"));
                assert_eq!((items.len(), total), (2, 2));
                let want = view(&Resource::from_text(text));
                for r in &items {
                    assert_eq!(view(r), want, "{text} under {p:?}");
                }
                // The generated fleet takes the fast path (its resources keep the projection).
                if fleet.iter().any(|f| f == text) {
                    assert_eq!(items[0].projection().is_some(), !p.is_all(), "{text}");
                }
            }
        }
    }

    #[test]
    fn unusual_envelopes_are_left_to_serde() {
        let p = Arc::new(Projection::all());
        for page in [
            r#"{"items":[],"total":1.5}"#,
            r#"{"items":[],"items":[],"total":1}"#,
            r#"{"items":null,"total":1}"#,
            r#"{"total":1}"#,
            r#"{"items":[]}"#,
            r#"{"items":[{"id":"a"}],"total":1} x"#,
            r#"{"items":[{"id":"a"},],"total":1}"#,
            r#"{"items":[{"id":"a" "b":1}],"total":1}"#,
            r#"{"items":[{"id":"a","x":[1,]}],"total":1}"#,
            r#"{"items":[{"id":"a","x":01}],"total":1}"#,
            r#"{"items":[{"id":"a","x":"\q"}],"total":1}"#,
            r#"{"items":[{"id":"a","x":tru}],"total":1}"#,
            "{\"items\":[{\"id\":\"a\tb\"}],\"total\":1}",
            r#"{"it\u0065ms":[],"total":1}"#,
            r#"[]"#,
        ] {
            assert!(
                decode_items(&Arc::new(page.to_string()), &p).is_none(),
                "{page}"
            );
        }
        let (items, total) = decode_items(
            &Arc::new(r#"{"kind":"L","items":[],"page":1,"total":-3}"#.to_string()),
            &p,
        )
        .unwrap();
        assert_eq!((items.len(), total), (0, -3));
    }
}
