//! Reading the YAML document into a [`Raw`] configuration: every known key converted to its
//! kind, every unknown key, wrong type, blank `message_data` leaf and malformed
//! `message_decision` reported as a [`Problem`] with its dotted path.
//!
//! Invariant: reading never stops at a problem; it skips the offending value and goes on, so one
//! pass finds them all. Recursion into `message_data` is bounded by [`MAX_DEPTH`].

use super::flags::Override;
use super::keys::{DURATION_HINT, Key, Kind, N_KEYS, Scalar, expectation, parse_text};
use super::{
    LabelSelector, MAX_EXPRESSION_BYTES, MAX_PARAMS, MAX_REPORTED_PROBLEMS, Problem,
    already_reported,
};
use crate::common::yaml::{
    self, Setting, describe, fields, join, scalar_text, setting, suggestion,
};
use crate::rules::decision::{DecisionSource, ParamSource};
use crate::rules::message_data::MessageData;
use std::collections::{HashMap, HashSet};
use yaml_serde::{Mapping, Number, Value};

/// The deepest `message_data` nesting accepted.
pub(super) const MAX_DEPTH: usize = 32;

/// The configuration as written, before defaults and range checks.
#[derive(Default)]
pub(super) struct Raw {
    scalars: [Option<Scalar>; N_KEYS],
    /// The flag or env var each overridden scalar came from.
    sources: [Option<&'static str>; N_KEYS],
    /// `clients.hyperfleet_api.auth` is a mapping in the file or set by an env var.
    pub auth_present: bool,
    pub resource_selector: Vec<LabelSelector>,
    pub message_data: Option<MessageData>,
    pub message_decision: Option<DecisionSource>,
    /// What was accepted but ignored, as `path: what` lines.
    pub warnings: Vec<String>,
}

impl Raw {
    /// The value of `key`, if set anywhere.
    pub(super) fn scalar(&self, key: Key) -> Option<&Scalar> {
        self.scalars[key as usize].as_ref()
    }

    /// The flag or env var `key` came from, if it did not come from the file.
    pub(super) fn source(&self, key: Key) -> Option<&'static str> {
        self.sources[key as usize]
    }

    /// Replaces a file value (or default) with a flag or env var value.
    pub(super) fn set_override(&mut self, o: Override) {
        if matches!(o.key, Key::TokenPath | Key::TokenCacheTtl) {
            self.auth_present = true;
        }
        self.scalars[o.key as usize] = Some(o.value);
        self.sources[o.key as usize] = Some(o.source);
    }
}

/// What a mapping may contain: key name and what its value is.
type Entry = (&'static str, Node);

#[derive(Clone, Copy)]
enum Node {
    Section(&'static [Entry]),
    /// `clients.hyperfleet_api.auth`: a section whose presence matters.
    Auth(&'static [Entry]),
    Scalar(Key),
    MessageData,
    MessageDecision,
    ResourceSelector,
}

const TOP: &[Entry] = &[
    ("log", Node::Section(LOG)),
    ("sentinel", Node::Section(SENTINEL)),
    ("resource_type", Node::Scalar(Key::ResourceType)),
    ("clients", Node::Section(CLIENTS)),
    ("message_data", Node::MessageData),
    ("message_decision", Node::MessageDecision),
    ("resource_selector", Node::ResourceSelector),
    ("poll_interval", Node::Scalar(Key::PollInterval)),
    ("debug_config", Node::Scalar(Key::DebugConfig)),
    ("tracing_enabled", Node::Scalar(Key::TracingEnabled)),
    ("server_filters", Node::Scalar(Key::ServerFilters)),
    ("full_sweep_interval", Node::Scalar(Key::FullSweepInterval)),
    ("server_projection", Node::Scalar(Key::ServerProjection)),
];
const LOG: &[Entry] = &[
    ("level", Node::Scalar(Key::LogLevel)),
    ("format", Node::Scalar(Key::LogFormat)),
    ("output", Node::Scalar(Key::LogOutput)),
];
const SENTINEL: &[Entry] = &[("name", Node::Scalar(Key::Name))];
const CLIENTS: &[Entry] = &[
    ("hyperfleet_api", Node::Section(API)),
    ("broker", Node::Section(BROKER)),
];
const API: &[Entry] = &[
    ("base_url", Node::Scalar(Key::BaseUrl)),
    ("version", Node::Scalar(Key::ApiVersion)),
    ("timeout", Node::Scalar(Key::Timeout)),
    ("page_size", Node::Scalar(Key::PageSize)),
    ("auth", Node::Auth(AUTH)),
];
const AUTH: &[Entry] = &[
    ("token_path", Node::Scalar(Key::TokenPath)),
    ("token_cache_ttl", Node::Scalar(Key::TokenCacheTtl)),
];
const BROKER: &[Entry] = &[("topic", Node::Scalar(Key::Topic))];

/// Reads a parsed document, adding what is wrong with it to `problems`.
pub(super) fn read(document: &Value, problems: &mut Vec<Problem>) -> Raw {
    let mut reader = Reader {
        raw: Raw::default(),
        problems,
    };
    match document {
        // An empty file: everything at its default, so the required keys get reported.
        Value::Null => {}
        Value::Mapping(map) => reader.entries(map, "", TOP),
        other => reader.problem(
            "",
            format!(
                "expected a mapping of configuration keys, got {}",
                describe(other)
            ),
        ),
    }
    reader.raw
}

/// A `message_data` path: `parent.key`, or `parent["a.b"]` when the key is not a plain word.
fn data_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        join(parent, key)
    } else {
        format!("{parent}[{key:?}]")
    }
}

/// The CEL literal text of a YAML number: `5`, `-3`, `18446744073709551615u`, `1.5`, `1e300`.
/// Non-finite floats have no CEL literal.
fn number_literal(n: &Number) -> Option<String> {
    if let Some(i) = n.as_i64() {
        return Some(i.to_string());
    }
    if let Some(u) = n.as_u64() {
        return Some(format!("{u}u"));
    }
    // Debug formatting always keeps a `.` or an exponent, so CEL reads a double.
    n.as_f64()
        .filter(|f| f.is_finite())
        .map(|f| format!("{f:?}"))
}

/// The problem of a CEL expression over [`MAX_EXPRESSION_BYTES`].
fn too_long(text: &str) -> String {
    format!(
        "CEL expression is {} bytes, longer than the limit of {MAX_EXPRESSION_BYTES} bytes",
        text.len()
    )
}

/// A YAML number as a scalar of `kind`.
fn number_scalar(kind: Kind, n: &Number) -> Result<Scalar, String> {
    match kind {
        Kind::Text | Kind::Searches => Ok(Scalar::Text(n.to_string())),
        Kind::Int => n.as_i64().map(Scalar::Int).ok_or_else(|| expectation(kind)),
        Kind::Bool => Err(expectation(kind)),
        Kind::Duration if n.as_f64() == Some(0.0) => Ok(Scalar::Nanos(0)),
        Kind::Duration => Err(format!(
            "expected {DURATION_HINT} (a bare number has no unit)"
        )),
    }
}

struct Reader<'p> {
    raw: Raw,
    problems: &'p mut Vec<Problem>,
}

impl Reader<'_> {
    fn problem(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.to_string(),
            message: message.into(),
            source: None,
        });
    }

    fn unknown_key(&mut self, path: &str, key: &str, names: &[&'static str]) {
        if self.problems.len() >= MAX_REPORTED_PROBLEMS {
            // Past what is listed, a suggestion would never be read.
            return self.problem(path, "unknown key");
        }
        let message = match suggestion(key, names) {
            Some(near) => format!("unknown key, did you mean `{near}`?"),
            None => {
                let all: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                format!("unknown key, expected one of {}", all.join(", "))
            }
        };
        self.problem(path, message);
    }

    fn entries(&mut self, map: &Mapping, path: &str, entries: &'static [Entry]) {
        let names: Vec<&'static str> = entries.iter().map(|(n, _)| *n).collect();
        for field in fields(map, path, &names) {
            match field.known {
                Some(i) => self.node(field.value, &field.path, entries[i].1),
                None => self.unknown_key(&field.path, &field.name, &names),
            }
        }
    }

    fn node(&mut self, value: &Value, path: &str, node: Node) {
        match node {
            Node::Section(fields) => {
                if let Some(map) = self.mapping(value, path) {
                    self.entries(map, path, fields);
                }
            }
            Node::Auth(fields) => {
                if let Some(map) = self.mapping(value, path) {
                    self.raw.auth_present = true;
                    self.entries(map, path, fields);
                }
            }
            Node::Scalar(key) => self.scalar(value, path, key),
            Node::MessageData => self.raw.message_data = self.message_data_root(value, path),
            Node::MessageDecision => self.raw.message_decision = self.message_decision(value, path),
            Node::ResourceSelector => {
                self.raw.resource_selector = self.resource_selector(value, path)
            }
        }
    }

    /// A mapping; null counts as absent.
    fn mapping<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Mapping> {
        yaml::section(Some(value)).unwrap_or_else(|other| {
            self.problem(path, format!("expected a mapping, got {}", describe(other)));
            None
        })
    }

    fn scalar(&mut self, value: &Value, path: &str, key: Key) {
        let kind = key.spec().kind;
        let parsed = match value {
            Value::Null => return,
            Value::String(s) => parse_text(kind, s),
            Value::Number(n) => number_scalar(kind, n),
            Value::Bool(b) if kind == Kind::Bool => Ok(Scalar::Bool(*b)),
            Value::Bool(b) if matches!(kind, Kind::Text | Kind::Searches) => {
                Ok(Scalar::Text(b.to_string()))
            }
            Value::Sequence(items) if kind == Kind::Searches => {
                Ok(Scalar::Texts(self.texts(items, path)))
            }
            _ => Err(expectation(kind)),
        };
        match parsed {
            Ok(scalar) => self.raw.scalars[key as usize] = Some(scalar),
            Err(expected) => self.problem(path, format!("{expected}, got {}", describe(value))),
        }
        let spec = key.spec();
        if !spec.go {
            self.raw.warnings.push(format!(
                "{path}: the Go sentinel refuses this key in a file (its loader rejects unknown \
                 keys), so rolling back to the Go image would fail with this file; set {} \
                 instead, which Go ignores",
                spec.env
            ));
        }
    }

    /// The strings of a list (`path[i]`), each other item reported.
    fn texts(&mut self, items: &[Value], path: &str) -> Vec<String> {
        let mut texts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => texts.push(s.clone()),
                other => {
                    let message = format!("expected a string, got {}", describe(other));
                    self.problem(&format!("{path}[{i}]"), message);
                }
            }
        }
        texts
    }

    /// A string-valued field outside the [`Key`] table; null counts as absent.
    fn text(&mut self, value: &Value, path: &str) -> Option<String> {
        match setting(Some(value)) {
            Setting::Absent => None,
            Setting::Text(text) => Some(text),
            Setting::Compound(other) => {
                self.problem(path, format!("expected a string, got {}", describe(other)));
                None
            }
        }
    }

    /// A required, non-blank string field of an entry: reports `required` or `must not be empty`.
    /// Problems about the field can only be among those reported since index `since` (where its
    /// entry began), so only those are searched: many entries stay linear.
    fn required_text(&mut self, value: Option<String>, path: &str, since: usize) -> String {
        match value {
            Some(text) if text.trim().is_empty() => self.problem(path, "must not be empty"),
            Some(text) => return text,
            None if already_reported(&self.problems[since..], path) => {}
            None => self.problem(path, "required"),
        }
        String::new()
    }

    /// A required CEL expression: [`Reader::required_text`], at most [`MAX_EXPRESSION_BYTES`].
    fn required_expr(&mut self, value: Option<String>, path: &str, since: usize) -> String {
        let text = self.required_text(value, path, since);
        if text.len() > MAX_EXPRESSION_BYTES {
            self.problem(path, too_long(&text));
            return String::new();
        }
        text
    }

    /// The entries of a sequence setting (none when null); anything else is a problem, worded
    /// `expected a sequence of <entries> entries, got <what>`.
    fn sequence<'v>(&mut self, value: &'v Value, path: &str, entries: &str) -> &'v [Value] {
        match value {
            Value::Null => &[],
            Value::Sequence(items) => items,
            other => {
                let got = describe(other);
                self.problem(
                    path,
                    format!("expected a sequence of {entries} entries, got {got}"),
                );
                &[]
            }
        }
    }

    fn resource_selector(&mut self, value: &Value, path: &str) -> Vec<LabelSelector> {
        let items = self.sequence(value, path, "{label, value}");
        let mut selectors = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{i}]");
            let Some(map) = self.entry_mapping(item, &item_path) else {
                continue;
            };
            let (mut label, mut value) = (None, None);
            const NAMES: &[&str] = &["label", "value"];
            for f in fields(map, &item_path, NAMES) {
                match f.name.as_str() {
                    "label" => label = self.text(f.value, &f.path),
                    "value" => value = self.text(f.value, &f.path),
                    _ => self.unknown_key(&f.path, &f.name, NAMES),
                }
            }
            // Like Go, an entry without a label selects nothing and is dropped; unlike Go, we say so.
            let Some(label) = label.filter(|l| !l.trim().is_empty()) else {
                self.raw.warnings.push(format!(
                    "{item_path}: entry with an empty label dropped (as the Go sentinel does)"
                ));
                continue;
            };
            selectors.push(LabelSelector {
                label,
                value: value.unwrap_or_default(),
            });
        }
        selectors
    }

    /// A list entry that must be a mapping (null included).
    fn entry_mapping<'v>(&mut self, item: &'v Value, path: &str) -> Option<&'v Mapping> {
        match item {
            Value::Mapping(map) => Some(map),
            other => {
                self.problem(path, format!("expected a mapping, got {}", describe(other)));
                None
            }
        }
    }

    fn message_decision(&mut self, value: &Value, path: &str) -> Option<DecisionSource> {
        let since = self.problems.len();
        let map = self.mapping(value, path)?;
        let (mut params, mut result) = (Vec::new(), None);
        const NAMES: &[&str] = &["params", "result"];
        for f in fields(map, path, NAMES) {
            match f.name.as_str() {
                "params" => params = self.params(f.value, &f.path),
                "result" => result = self.text(f.value, &f.path),
                _ => self.unknown_key(&f.path, &f.name, NAMES),
            }
        }
        let result = self.required_expr(result, &join(path, "result"), since);
        Some(DecisionSource { params, result })
    }

    fn params(&mut self, value: &Value, path: &str) -> Vec<ParamSource> {
        let items = self.sequence(value, path, "{name, expr}");
        if items.len() > MAX_PARAMS {
            let message = format!(
                "{} params, more than the limit of {MAX_PARAMS}",
                items.len()
            );
            self.problem(path, message);
            return Vec::new();
        }
        let mut params: Vec<ParamSource> = Vec::with_capacity(items.len());
        let mut first_of: HashMap<String, usize> = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{i}]");
            let since = self.problems.len();
            let Some(map) = self.entry_mapping(item, &item_path) else {
                continue;
            };
            let (mut name, mut expr) = (None, None);
            const NAMES: &[&str] = &["name", "expr"];
            for f in fields(map, &item_path, NAMES) {
                match f.name.as_str() {
                    "name" => name = self.text(f.value, &f.path),
                    "expr" => expr = self.text(f.value, &f.path),
                    _ => self.unknown_key(&f.path, &f.name, NAMES),
                }
            }
            let name_path = join(&item_path, "name");
            let name = self.required_text(name, &name_path, since);
            if !name.is_empty() {
                let first = *first_of.entry(name.clone()).or_insert(params.len());
                if first != params.len() {
                    let message = format!(
                        "param {name:?} is defined more than once, first at {path}[{first}]"
                    );
                    self.problem(&name_path, message);
                }
            }
            let expr = self.required_expr(expr, &join(&item_path, "expr"), since);
            params.push(ParamSource { name, expr });
        }
        params
    }

    fn message_data_root(&mut self, value: &Value, path: &str) -> Option<MessageData> {
        match value {
            Value::Null => None,
            Value::Mapping(map) => self.message_object(map, path, 0),
            other => {
                let got = describe(other);
                self.problem(
                    path,
                    format!("expected a mapping of keys to CEL expressions, got {got}"),
                );
                None
            }
        }
    }

    fn message_data(&mut self, value: &Value, path: &str, depth: usize) -> Option<MessageData> {
        const LEAF: &str = "every leaf must be a non-empty CEL expression";
        let leaf = match value {
            Value::Mapping(map) => return self.message_object(map, path, depth),
            Value::String(s) if s.trim().is_empty() => {
                Err(format!("empty CEL expression is not allowed; {LEAF}"))
            }
            Value::String(s) => Ok(s.clone()),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Number(n) => number_literal(n)
                .ok_or_else(|| format!("{n} is not a finite number; CEL has no literal for it")),
            Value::Null => Err(format!(
                "null value is not allowed (was it left blank?); {LEAF}"
            )),
            other => Err(format!(
                "expected a CEL expression, number, boolean or mapping, got {}",
                describe(other)
            )),
        };
        let leaf = leaf.and_then(|text| match text.len() > MAX_EXPRESSION_BYTES {
            true => Err(too_long(&text)),
            false => Ok(text),
        });
        match leaf {
            Ok(text) => Some(MessageData::Leaf(text)),
            Err(message) => {
                self.problem(path, message);
                None
            }
        }
    }

    fn message_object(&mut self, map: &Mapping, path: &str, depth: usize) -> Option<MessageData> {
        if depth >= MAX_DEPTH {
            self.problem(path, format!("nested more than {MAX_DEPTH} levels deep"));
            return None;
        }
        if map.is_empty() {
            self.problem(path, "must not be empty");
            return None;
        }
        let (mut fields, mut seen, mut complete) = (Vec::new(), HashSet::new(), true);
        for (k, v) in map {
            let Some(key) = scalar_text(k) else {
                self.problem(path, format!("keys must be strings, got {}", describe(k)));
                complete = false;
                continue;
            };
            let child = data_path(path, &key);
            if !seen.insert(key.clone()) {
                self.problem(&child, "duplicate key");
                complete = false;
            }
            match self.message_data(v, &child, depth + 1) {
                Some(data) => fields.push((key, data)),
                None => complete = false,
            }
        }
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        complete.then_some(MessageData::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_literals_are_cel_literals() {
        let lit = |yaml: &str| {
            let value: Value = yaml_serde::from_str(yaml).expect("yaml");
            match value {
                Value::Number(n) => number_literal(&n),
                _ => None,
            }
        };
        assert_eq!(lit("5").as_deref(), Some("5"));
        assert_eq!(lit("-3").as_deref(), Some("-3"));
        assert_eq!(
            lit("18446744073709551615").as_deref(),
            Some("18446744073709551615u")
        );
        assert_eq!(lit("1.5").as_deref(), Some("1.5"));
        assert_eq!(lit("2.0").as_deref(), Some("2.0"));
        assert_eq!(lit("1e300").as_deref(), Some("1e300"));
        assert_eq!(lit(".inf"), None);
        assert_eq!(lit(".nan"), None);
    }

    #[test]
    fn data_paths_quote_odd_keys() {
        assert_eq!(data_path("message_data", "Id"), "message_data.Id");
        assert_eq!(data_path("message_data", "a.b"), "message_data[\"a.b\"]");
        assert_eq!(data_path("message_data", ""), "message_data[\"\"]");
    }
}
