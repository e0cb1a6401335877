//! JSON → the object model: a HyperFleet list page decoded in one pass under the rules'
//! [`Projection`] ([`decode_list`]), and one resource decoded completely
//! ([`Resource::from_page`]). The records themselves are [`crate::cel::host`]'s.
//!
//! Two decoders, split by job: the byte scanner (`page.rs`, over the JSON grammar of [`json`]),
//! which reads a page under a projection and, under [`Projection::all`], is the complete
//! decoder's first choice; and the JSON tree (`tree.rs`), which the complete decoder falls back
//! to for an item the scanner is unsure of, walking the schema's table for names and aliases.
//! A page whose envelope the scanner is unsure of is read by serde, which reports its errors,
//! and its items by the complete decoder.
//!
//! Invariant: decoding never fails. A field with the wrong JSON type or a malformed time holds an
//! error value, so one resource's bad data fails only the expressions that read that field, and
//! only that resource's decision (the Go sentinel fails the whole page instead).
//!
//! A resource over [`MAX_RESOURCE_BYTES`] of JSON is not decoded at all (its memory would grow
//! with its size, several times over): only its id is read, every other field is an error, and
//! [`Resource::too_large`] tells the daemon to skip it with [`TOO_LARGE_REASON`](crate::cel::host::TOO_LARGE_REASON).

use crate::cel::host::{
    Condition, JsonText, MAX_RESOURCE_BYTES, Projection, Resource, SharedText, Text,
};
pub use fields::Fields;
use serde::Deserialize;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

pub mod corpus;
mod fields;
pub mod json;
mod page;
mod tree;

/// A list page `{items, total, …}` decoded.
#[derive(Debug)]
pub struct DecodedList {
    /// The items, in page order (sharing the page's text).
    pub items: Vec<Resource>,
    /// The `total` the API reported.
    pub total: i64,
    /// Whether an item may lack a field the projection decodes (`null` counts as held): for an
    /// answer to `fields`, one the API may have left a field out of, which
    /// [`Fields::missing`] names. Always true when an item was decoded by the complete decoder.
    pub incomplete: bool,
}

/// Decodes a list page's text under `projection`: one pass of the byte scanner, or, for a
/// page whose envelope it is unsure of, serde (whose error this is: `items` and `total` are
/// required, `items` an array) with each item decoded completely.
pub fn decode_list(
    text: &SharedText,
    projection: &Arc<Projection>,
) -> Result<DecodedList, serde_json::Error> {
    if let Some((items, total, incomplete)) = page::scan_page(text, projection) {
        return Ok(DecodedList {
            items,
            total,
            incomplete,
        });
    }
    /// The list envelope; `page`, `size`, `kind` and any other field are ignored. `items` is
    /// required; `null` is an empty page (the API's projected answer when nothing matched,
    /// which Go's `encoding/json` reads as an empty slice).
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, deserialize_with = "nullable")]
        items: Option<Vec<&'a serde_json::value::RawValue>>,
        total: i64,
    }
    fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(d)
    }
    let envelope: Envelope<'_> = serde_json::from_str(text)?;
    Ok(DecodedList {
        // A page the scanner is unsure of is rare: each item gets a text of its own.
        items: envelope
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| Resource::from_text(item.get()))
            .collect(),
        total: envelope.total,
        incomplete: true,
    })
}

impl Resource {
    /// Decodes a resource from a JSON value. Never fails: a non-object decodes to a resource
    /// whose every field is an error.
    pub fn from_json(json: Json) -> Resource {
        Resource::from_text(&json.to_string())
    }

    /// Decodes a resource from its JSON text. Never fails, as [`Resource::from_json`].
    pub fn from_text(text: &str) -> Resource {
        Resource::from_page(&Arc::new(text.to_owned()), 0..text.len())
    }

    /// The complete decoder: decodes the item at `range` of a list page's text (which the
    /// resource then shares), with the byte scanner under [`Projection::all`], else through a
    /// JSON tree. A range that is not within the text, or not on character boundaries, decodes
    /// as a resource that is not a JSON object.
    pub fn from_page(page: &SharedText, range: Range<usize>) -> Resource {
        let Some(raw) = JsonText::range(page, range.start, range.end) else {
            return tree::resource(JsonText::owned("null"));
        };
        if range.len() > MAX_RESOURCE_BYTES {
            return oversized(raw.get());
        }
        page::scan_resource(page, range, &page::ALL).unwrap_or_else(|| tree::resource(raw))
    }
}

/// The complete decoder's JSON-tree way alone: what the byte scanner's reading of `text` under
/// [`Projection::all`] must equal wherever it reads it (the `page` fuzz target and the page
/// regression test hold them to each other).
pub fn decode_tree(text: &str) -> Resource {
    tree::resource(JsonText::owned(text))
}

/// The complete decoding of a projected resource's text (what it falls back to).
fn complete_resource(raw: &JsonText) -> Resource {
    let (page, range) = raw.parts();
    Resource::from_page(page, range)
}

/// The complete decoding of a projected condition's text (what it falls back to).
fn complete_condition(raw: &JsonText) -> Condition {
    let (page, range) = raw.parts();
    page::scan_condition(page, range).unwrap_or_else(|| tree::condition(raw))
}

/// A resource over [`MAX_RESOURCE_BYTES`]: its id alone is read (serde skips the rest without
/// building anything).
fn oversized(text: &str) -> Resource {
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
    }
    let id = match serde_json::from_str::<IdOnly<'_>>(text) {
        Ok(IdOnly { id: Some(id) }) => Some(Text::owned(&id)),
        _ => None,
    };
    Resource::oversized(id, text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::host::{CONDITION_FIELDS, RESOURCE_FIELDS};
    use crate::cel::value::ErrorKind;

    #[test]
    fn a_resource_over_the_limit_is_not_decoded() {
        let condition =
            r#"{"type":"Ready","status":"True","last_updated_time":"2025-01-01T00:00:00Z"},"#;
        let n = MAX_RESOURCE_BYTES / condition.len() + 1;
        let big = format!(
            r#"{{"status":{{"conditions":[{}{{}}]}},"id":"big","generation":2}}"#,
            condition.repeat(n)
        );
        let page: SharedText = Arc::new(format!(r#"[{big},{{"id":"small"}}]"#));
        let resource = Resource::from_page(&page, 1..1 + big.len());
        assert_eq!(resource.too_large(), Some(big.len()));
        assert_eq!(resource.id().ok().map(|t| t.as_str()), Some("big"));
        let err = resource.generation().clone().unwrap_err();
        assert!(
            err.message.contains("more than the limit of 1048576"),
            "{err:?}"
        );
        assert!(resource.conditions().is_err());
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
        assert_eq!(resource.generation().clone().ok(), Some(3));
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
        assert_eq!(format!("{:?}", c.get("status")), r#"Ok(String("True"))"#);
        assert_eq!(c.generation(), &Ok(2));
        let z = r.condition("Reconciled").unwrap();
        assert_eq!(format!("{:?}", z.get("status")), r#"Ok(String(""))"#);
        assert_eq!(z.generation(), &Ok(0));
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

    /// The complete decoder's two ways agree: the byte scanner under everything, where it
    /// reads an item, and the JSON tree.
    #[test]
    fn scanner_and_tree_decoding_agree() {
        let mut scanned = 0;
        for &text in ODD_TEXTS {
            let page: SharedText = Arc::new(text.to_string());
            let tree = tree::resource(JsonText::whole(page.clone()));
            if let Some(r) = page::scan_resource(&page, 0..text.len(), &page::ALL) {
                scanned += 1;
                assert_eq!(format!("{r:?}"), format!("{tree:?}"), "{text}");
            }
            assert_eq!(
                format!("{:?}", Resource::from_text(text)),
                format!("{tree:?}"),
                "{text}"
            );
        }
        // Both ways were taken.
        assert!(scanned > 0 && scanned < ODD_TEXTS.len(), "{scanned}");
    }

    #[test]
    fn bad_fields_are_errors_not_decode_failures() {
        let r = Resource::from_json(json!({"generation": "two", "status": "broken"}));
        assert_eq!(
            r.generation().as_ref().unwrap_err().kind,
            ErrorKind::BadResource
        );
        assert!(r.condition("Reconciled").is_err());
        assert_eq!(r.id().map(|t| t.as_str()), Ok(""));
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
        let mut some = Projection::base();
        some.add_field(R::Generation);
        some.add_field(R::Kind);
        some.add_condition(Some("Reconciled"));
        some.add_condition(Some("A"));
        some.add_condition_field(Some(C::Status));
        some.add_condition_field(Some(C::LastUpdatedTime));
        let mut labels = Projection::base();
        labels.add_field(R::Labels);
        labels.add_field(R::UpdatedTime);
        labels.add_condition(None);
        labels.add_condition_field(Some(C::ObservedGeneration));
        vec![Projection::base(), some, labels, Projection::all()]
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
        let too_deep: SharedText = Arc::new(format!(r#"{{"items":[{}],"total":1}}"#, nested(65)));
        assert!(page::scan_page(&too_deep, &Arc::new(Projection::base())).is_none());
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
                let page: SharedText =
                    Arc::new(format!(r#"{{"items":[{text}, {text}],"total":2}}"#));
                let (items, total, _) =
                    page::scan_page(&page, &p).unwrap_or_else(|| panic!("{text}"));
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
                page::scan_page(&Arc::new(page.to_string()), &p).is_none(),
                "{page}"
            );
        }
        let (items, total, _) = page::scan_page(
            &Arc::new(r#"{"kind":"L","items":[],"page":1,"total":-3}"#.to_string()),
            &p,
        )
        .unwrap();
        assert_eq!((items.len(), total), (0, -3));
    }
}
