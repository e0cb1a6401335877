//! The API's projection (`fields=`) as the daemon asks for it and holds the answer to it: the
//! parameter that asks for exactly what a [`Projection`] decodes ([`Fields::of`]), and the
//! check that an answer carries every field asked for ([`Fields::missing`]).
//!
//! Why the check: a field absent from a projected item reads as absent (`""`, `0`), which the
//! rules decide on. An API that honours only part of `fields` would make every resource look
//! as if that field were empty (never due, or always due). The API's contract makes every field
//! the daemon asks for required (a condition's times and `observed_generation`, a resource's
//! `generation`, `kind`, `status`, …) and its projection writes each requested field, `null`
//! when it has no value; so an item of a projected answer without a requested key is an answer
//! that left it out, never data without it.
//!
//! Invariant: [`Fields::param`] and the check are built from one walk of the projection, so
//! what is checked is what was asked for. The check reads keys only (no value is decoded), and
//! allocates nothing.

use super::json::{Skip, blank_end, skip_end, string_close, string_end, token};
use super::page::{CONDITION_KEYS, RESOURCE_KEYS};
use crate::cel::host::{
    CONDITION_SCHEMA, ConditionField, FieldDef, Projection, RESOURCE_SCHEMA, ResourceField,
};

/// What a projected listing asks for: the `fields` parameter and, a bit per schema row, the
/// resource and condition fields an answer must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fields {
    param: String,
    /// Top-level keys, a bit per [`ResourceField`] (`status` when conditions are asked for).
    resource: u32,
    /// Keys of every condition, a bit per [`ConditionField`] (0: conditions not asked for).
    condition: u32,
}

impl Fields {
    /// The fields that ask for exactly what `projection` decodes, or why the API cannot be
    /// asked for it (everything is read, or `owner_references`, which the API cannot project).
    pub fn of(projection: &Projection) -> Result<Fields, String> {
        if projection.is_all() {
            return Err("the rules read the whole resource".into());
        }
        let mut names: Vec<String> = Vec::new();
        let (mut resource, mut condition) = (0u32, 0u32);
        for def in &RESOURCE_SCHEMA {
            if !projection.has_field(def.field) {
                continue;
            }
            resource |= 1 << def.field as u32;
            match def.field {
                ResourceField::OwnerReferences => {
                    return Err(
                        "the rules read owner_references, which the API cannot project".into(),
                    );
                }
                ResourceField::Status if projection.has_every_condition_field() => {
                    names.push("status.conditions".into());
                    condition = CONDITION_SCHEMA
                        .iter()
                        .fold(0, |bits, c| bits | 1 << c.field as u32);
                }
                ResourceField::Status => {
                    for c in &CONDITION_SCHEMA {
                        if c.field == ConditionField::Type
                            || projection.has_condition_field(c.field)
                        {
                            names.push(format!("status.conditions.{}", c.name));
                            condition |= 1 << c.field as u32;
                        }
                    }
                }
                _ => names.push(def.name.to_string()),
            }
        }
        Ok(Fields {
            param: names.join(","),
            resource,
            condition,
        })
    }

    /// The `fields` parameter.
    pub fn param(&self) -> &str {
        &self.param
    }

    /// The first field asked for that the item `json` (an object's text) lacks, as the
    /// parameter names it (`status.conditions.last_updated_time`); `None` when it has them all,
    /// `null` ones included, or when it is not an object this check can read (its decoding says
    /// what it is).
    pub fn missing(&self, json: &str) -> Option<&'static str> {
        let b = json.as_bytes();
        let keys = &*RESOURCE_KEYS;
        let mut seen = 0u32;
        let mut missing = None;
        let read = members(b, blank_end(b, 0), |key, at| {
            let Some(def) = keys.get(key) else {
                return skip(b, at);
            };
            seen |= 1 << def.field as u32;
            if def.field == ResourceField::Status && self.condition != 0 {
                let (end, found) = self.status(b, at)?;
                missing = missing.or(found);
                return Some(end);
            }
            skip(b, at)
        });
        read?;
        if let Some(found) = missing {
            return Some(found);
        }
        let left = self.resource & !seen;
        (left != 0).then(|| first(&RESOURCE_SCHEMA, left))
    }

    /// `status` (its value at `at`): where it ends, and a condition field asked for that one of
    /// its conditions lacks (or `conditions` itself).
    fn status(&self, b: &[u8], at: usize) -> Option<(usize, Option<&'static str>)> {
        if b.get(at) == Some(&b'n') {
            return Some((skip(b, at)?, None));
        }
        let mut conditions = false;
        let mut missing = None;
        let end = members(b, at, |key, at| {
            if key != b"conditions" {
                return skip(b, at);
            }
            conditions = true;
            if b.get(at) != Some(&b'[') {
                return skip(b, at);
            }
            let (end, found) = self.conditions(b, at)?;
            missing = missing.or(found);
            Some(end)
        })?;
        if !conditions {
            return Some((end, Some("status.conditions")));
        }
        Some((end, missing))
    }

    /// The conditions array (at its `[`): where it ends, and the first field asked for that a
    /// condition lacks.
    fn conditions(&self, b: &[u8], at: usize) -> Option<(usize, Option<&'static str>)> {
        let mut missing = None;
        let keys = &*CONDITION_KEYS;
        let mut i = blank_end(b, at + 1);
        if b.get(i) == Some(&b']') {
            return Some((i + 1, None));
        }
        loop {
            let mut seen = 0u32;
            i = members(b, i, |key, at| {
                if let Some(def) = keys.get(key) {
                    seen |= 1 << def.field as u32;
                }
                skip(b, at)
            })?;
            let left = self.condition & !seen;
            if left != 0 && missing.is_none() {
                missing = Some(CONDITION_NAMES[first_bit(left)]);
            }
            let (c, at) = token(b, i)?;
            match c {
                b',' => i = blank_end(b, at + 1),
                b']' => return Some((at + 1, missing)),
                _ => return None,
            }
        }
    }
}

impl Fields {
    /// The `page` fuzz target's oracle (and its regression test's): [`Fields::missing`] on
    /// `json` answers as the same rules read over serde_json's tree of it (duplicate keys
    /// kept) answer: the condition field a condition lacks first, else `status.conditions`
    /// when a `status` object lacks it, else the first top-level field in schema order; nothing
    /// for a text that is not an object or whose `status` or conditions are not objects. Past
    /// 60 levels of nesting the scanner may leave the text to the decoder (no answer).
    pub fn check_against_serde(&self, json: &str) -> Result<(), String> {
        let Ok(tree) = serde_json::from_str::<oracle::Tree>(json) else {
            return Ok(());
        };
        let want = oracle::missing(self, &tree);
        let got = self.missing(json);
        if got == want || (got.is_none() && tree.depth() > 60) {
            return Ok(());
        }
        Err(format!("missing {got:?}, serde's reading {want:?}"))
    }
}

/// The check's rules over serde_json's reading, for [`Fields::check_against_serde`].
mod oracle {
    use super::{CONDITION_NAMES, CONDITION_SCHEMA, FieldDef, Fields, RESOURCE_SCHEMA};
    use super::{ResourceField, first, first_bit};
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    /// A JSON value with every member of an object, duplicates kept, in order.
    pub(super) enum Tree {
        Object(Vec<(String, Tree)>),
        Array(Vec<Tree>),
        Null,
        Scalar,
    }

    impl Tree {
        pub(super) fn depth(&self) -> usize {
            match self {
                Tree::Object(m) => 1 + m.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
                Tree::Array(a) => 1 + a.iter().map(Tree::depth).max().unwrap_or(0),
                _ => 0,
            }
        }
    }

    impl<'de> Deserialize<'de> for Tree {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tree, D::Error> {
            d.deserialize_any(TreeVisitor)
        }
    }

    struct TreeVisitor;

    impl<'de> Visitor<'de> for TreeVisitor {
        type Value = Tree;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_unit<E>(self) -> Result<Tree, E> {
            Ok(Tree::Null)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Tree, E> {
            Ok(Tree::Scalar)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Tree, E> {
            Ok(Tree::Scalar)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Tree, E> {
            Ok(Tree::Scalar)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Tree, E> {
            Ok(Tree::Scalar)
        }
        fn visit_str<E>(self, _: &str) -> Result<Tree, E> {
            Ok(Tree::Scalar)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Tree::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
            let mut members = Vec::new();
            while let Some(member) = map.next_entry::<String, Tree>()? {
                members.push(member);
            }
            Ok(Tree::Object(members))
        }
    }

    /// The row whose name or alias is `key` (a plain search, not the scanner's table).
    fn lookup<F>(schema: &'static [FieldDef<F>], key: &[u8]) -> Option<&'static FieldDef<F>> {
        let named = |def: &&FieldDef<F>| {
            def.name.as_bytes() == key || def.aliases.iter().any(|a| a.as_bytes() == key)
        };
        schema.iter().find(named)
    }

    /// What [`Fields::missing`] should say of `tree`.
    pub(super) fn missing(fields: &Fields, tree: &Tree) -> Option<&'static str> {
        let Tree::Object(members) = tree else {
            return None;
        };
        let mut seen = 0u32;
        let mut found = None;
        for (key, value) in members {
            let Some(def) = lookup(&RESOURCE_SCHEMA, key.as_bytes()) else {
                continue;
            };
            seen |= 1 << def.field as u32;
            if def.field != ResourceField::Status || fields.condition == 0 {
                continue;
            }
            let status = match value {
                Tree::Null => continue,
                Tree::Object(status) => status,
                _ => return None,
            };
            let mut conditions = false;
            for (key, value) in status {
                if key != "conditions" {
                    continue;
                }
                conditions = true;
                let Tree::Array(items) = value else { continue };
                for item in items {
                    let Tree::Object(members) = item else {
                        return None;
                    };
                    let bits = members
                        .iter()
                        .filter_map(|(k, _)| lookup(&CONDITION_SCHEMA, k.as_bytes()))
                        .fold(0, |bits, d| bits | 1 << d.field as u32);
                    let left = fields.condition & !bits;
                    if left != 0 && found.is_none() {
                        found = Some(CONDITION_NAMES[first_bit(left)]);
                    }
                }
            }
            if !conditions && found.is_none() {
                found = Some("status.conditions");
            }
        }
        let left = fields.resource & !seen;
        found.or_else(|| (left != 0).then(|| first(&RESOURCE_SCHEMA, left)))
    }
}

/// `status.conditions.<name>` for each condition field, by [`ConditionField`] order.
const CONDITION_NAMES: [&str; CONDITION_SCHEMA.len()] = [
    "status.conditions.type",
    "status.conditions.status",
    "status.conditions.reason",
    "status.conditions.message",
    "status.conditions.created_time",
    "status.conditions.last_updated_time",
    "status.conditions.last_transition_time",
    "status.conditions.observed_generation",
];

/// The name of the row of the lowest bit of `bits`.
fn first<F>(schema: &'static [FieldDef<F>], bits: u32) -> &'static str {
    schema[first_bit(bits)].name
}

fn first_bit(bits: u32) -> usize {
    bits.trailing_zeros() as usize
}

/// After the value at `at`: a string (what most members hold) here, anything else through
/// [`skip_end`].
#[inline(always)]
fn skip(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at)? {
        b'"' => string_close::<true>(b, at + 1).map(|close| close + 1),
        _ => skip_end::<true>(b, at, Skip::Value),
    }
}

/// Calls `f` with each key of the object at `at` (its `{`, after blanks) and where its value
/// starts; `f` gives where the value ends. After the object's `}`. A key with an escape is
/// passed as written (no schema name has one).
fn members(b: &[u8], at: usize, mut f: impl FnMut(&[u8], usize) -> Option<usize>) -> Option<usize> {
    let (b'{', open) = token(b, at)? else {
        return None;
    };
    let (c, mut i) = token(b, open + 1)?;
    if c == b'}' {
        return Some(i + 1);
    }
    loop {
        let (b'"', quote) = token(b, i)? else {
            return None;
        };
        let (close, _) = string_end::<true>(b, quote + 1)?;
        let key = &b[quote + 1..close];
        let (b':', colon) = token(b, close + 1)? else {
            return None;
        };
        let end = f(key, blank_end(b, colon + 1))?;
        let (c, at) = token(b, end)?;
        match c {
            b',' => i = at + 1,
            b'}' => return Some(at + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::host::ConditionField as C;

    /// The page decoder notes, as it reads, whether an item may lack a field its projection
    /// decodes, so that [`Fields::missing`] runs only on such a page.
    #[test]
    fn the_page_decoder_says_when_an_item_may_lack_a_field() {
        let mut p = Projection::base();
        p.add_field(ResourceField::Generation);
        p.add_condition(Some("Reconciled"));
        p.add_condition_field(Some(C::LastUpdatedTime));
        let p = std::sync::Arc::new(p);
        let fields = Fields::of(&p).unwrap();
        let page = |items: &str| -> (bool, Option<&'static str>) {
            let text = std::sync::Arc::new(format!(r#"{{"items":[{items}],"total":1}}"#));
            let page = crate::resource::decode_list(&text, &p).unwrap();
            let missing = page
                .items
                .iter()
                .find_map(|r| fields.missing(r.json_text()));
            (page.incomplete, missing)
        };
        let whole = r#"{"generation":1,"id":"a","kind":"C","status":{"conditions":[
            {"last_updated_time":null,"type":"Reconciled"},{"type":"Ready"}]}}"#;
        // A condition of a type the rules do not read is not read: nothing is decided on it.
        assert_eq!(
            page(whole),
            (false, Some("status.conditions.last_updated_time"))
        );
        let whole = whole.replace(
            r#"{"type":"Ready"}"#,
            r#"{"last_updated_time":"","type":"R"}"#,
        );
        assert_eq!(page(&whole), (false, None));
        for (item, field) in [
            (
                r#"{"id":"a","kind":"C","status":{"conditions":[]}}"#,
                "generation",
            ),
            (
                r#"{"generation":1,"id":"a","kind":"C","status":{}}"#,
                "status.conditions",
            ),
            (
                r#"{"generation":1,"id":"a","kind":"C","status":{"conditions":[{"type":"Reconciled"}]}}"#,
                "status.conditions.last_updated_time",
            ),
            (r#"{"generation":1,"id":"a","kind":"C"}"#, "status"),
        ] {
            assert_eq!(page(item), (true, Some(field)), "{item}");
        }
    }

    #[test]
    fn condition_names_are_the_schema_rows() {
        for (def, name) in CONDITION_SCHEMA.iter().zip(CONDITION_NAMES) {
            assert_eq!(format!("status.conditions.{}", def.name), name);
            assert_eq!(CONDITION_NAMES[def.field as usize], name);
        }
    }

    #[test]
    fn the_parameter_names_what_the_projection_decodes() {
        let mut p = Projection::base();
        p.add_field(ResourceField::Generation);
        let fields = Fields::of(&p).unwrap();
        assert_eq!(fields.param(), "generation,id,kind");
        p.add_condition(Some("Reconciled"));
        let fields = Fields::of(&p).unwrap();
        assert_eq!(fields.param(), "generation,id,kind,status.conditions.type");
        p.add_condition_field(None);
        assert_eq!(
            Fields::of(&p).unwrap().param(),
            "generation,id,kind,status.conditions"
        );
        assert!(Fields::of(&Projection::all()).is_err());
        let mut owner = Projection::base();
        owner.add_field(ResourceField::OwnerReferences);
        assert!(Fields::of(&owner).unwrap_err().contains("owner_references"));
    }

    #[test]
    fn an_answer_missing_a_requested_field_is_named() {
        let fields = Fields {
            param: String::new(),
            resource: 1 << ResourceField::Id as u32
                | 1 << ResourceField::Kind as u32
                | 1 << ResourceField::Generation as u32
                | 1 << ResourceField::Status as u32,
            condition: 1 << C::Type as u32 | 1 << C::LastUpdatedTime as u32,
        };
        let whole = r#"{"generation":2,"id":"a","kind":"Cluster","status":{"conditions":[
            {"type":"Reconciled","last_updated_time":"2025-01-01T00:00:00Z"},
            {"lastUpdatedTime":null,"type":"Ready","x":{"y":[1,"]"]}}]}}"#;
        assert_eq!(fields.missing(whole), None);
        // `null` is present, for `status` as for any field.
        let nulls = r#"{"generation":null,"id":"a","kind":"C","status":null}"#;
        assert_eq!(fields.missing(nulls), None);
        for (json, want) in [
            (
                r#"{"id":"a","kind":"Cluster","status":{"conditions":[]}}"#,
                "generation",
            ),
            (
                r#"{"generation":1,"id":"a","kind":"C","status":{"conditions":[{"type":"R"}]}}"#,
                "status.conditions.last_updated_time",
            ),
            (
                r#"{"generation":1,"id":"a","kind":"C","status":{}}"#,
                "status.conditions",
            ),
            (r#"{"generation":1,"id":"a","kind":"C"}"#, "status"),
        ] {
            assert_eq!(fields.missing(json), Some(want), "{json}");
        }
        // What the check cannot read is left to the decoder.
        for json in ["7", "{", r#"{"id":"a""#, "[]", ""] {
            assert_eq!(fields.missing(json), None, "{json}");
        }
        // The fuzz target's oracle agrees on all of these, and can disagree.
        for json in [
            whole,
            nulls,
            r#"{"status":{"conditions":[1]}}"#,
            r#"{"id":1,"id":2}"#,
        ] {
            fields.check_against_serde(json).unwrap();
        }
        let other = Fields {
            resource: 1 << ResourceField::Name as u32,
            ..fields.clone()
        };
        assert!(other.check_against_serde(whole).is_ok());
        assert_eq!(
            oracle::missing(&other, &serde_json::from_str(whole).unwrap()),
            Some("name")
        );
    }
}
