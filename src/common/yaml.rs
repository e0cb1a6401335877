//! The YAML walk both loaders share, the config file's (`daemon::config`) and broker.yaml's
//! (`broker::config`): dotted paths, sections (null is absent), a mapping's keys sorted into
//! the names a section reads and unknown ones (with the nearest name, for a typo), and scalars
//! read as text the way Go's viper/mapstructure weak typing reads them (`version: 1` is `"1"`).
//!
//! Takes `yaml_serde` values; gives what each one is. Each loader words its own messages: the
//! Go sentinel rejects an unknown config key, while the Go broker library ignores unknown keys,
//! so broker.yaml only warns.
//!
//! Invariant: nothing here reports a problem; the callers decide what one is and how it reads,
//! and this module only what a key, a path and a scalar are, so the loaders cannot drift apart
//! on those.

pub mod depth;

use crate::cel::diag::nearest;
use std::fmt;
use yaml_serde::{Mapping, Value};

/// A line and column in a YAML file, both 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// `parent.key`, or `key` at the top.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The text of a string, number or boolean, as a Go string setting reads it; `None` for null,
/// a sequence, a mapping or a tagged value.
pub fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// What a setting's slot holds, read as Go's viper/mapstructure weak typing reads a string
/// setting: nothing (missing or null: the default applies), the text of a scalar, or a value
/// where no scalar can be (a sequence, a mapping, a tagged value).
pub enum Setting<'v> {
    /// Missing or null.
    Absent,
    /// A string, number or boolean as text ([`scalar_text`]).
    Text(String),
    /// Not a scalar.
    Compound(&'v Value),
}

/// The [`Setting`] at `value`.
pub fn setting(value: Option<&Value>) -> Setting<'_> {
    match value {
        None | Some(Value::Null) => Setting::Absent,
        Some(value) => scalar_text(value).map_or(Setting::Compound(value), Setting::Text),
    }
}

/// A value as the tail of `got …` in messages.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Sequence(_) => "a sequence".to_string(),
        Value::Mapping(_) => "a mapping".to_string(),
        Value::Tagged(t) => format!("a value tagged {}", t.tag),
    }
}

/// A section's value: `Ok(None)` when absent or null (as in Go, a blank section takes its
/// defaults), `Ok(Some(map))` for a mapping, `Err(value)` for anything else.
pub fn section(value: Option<&Value>) -> Result<Option<&Mapping>, &Value> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Mapping(map)) => Ok(Some(map)),
        Some(other) => Err(other),
    }
}

/// The text of an integer setting, as both loaders read it: decimal `i64`, surrounding spaces
/// ignored.
pub fn parse_int(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

/// One entry of a section's mapping, in document order.
pub struct Field<'v> {
    /// The key as written.
    pub key: &'v Value,
    /// The key as text: a scalar as written, anything else described.
    pub name: String,
    /// The dotted path of the entry.
    pub path: String,
    /// The entry's value.
    pub value: &'v Value,
    /// The index of `name` among the names the section reads, `None` for an unknown key.
    pub known: Option<usize>,
}

/// The entries of the mapping at `path`, each sorted into one of the `names` the section reads
/// or an unknown key.
pub fn fields<'v, 'a>(
    map: &'v Mapping,
    path: &'a str,
    names: &'a [&'static str],
) -> impl Iterator<Item = Field<'v>> + 'a
where
    'v: 'a,
{
    map.iter().map(move |(key, value)| {
        let name = scalar_text(key).unwrap_or_else(|| describe(key));
        Field {
            key,
            path: join(path, &name),
            known: names.iter().position(|n| *n == name),
            name,
            value,
        }
    })
}

/// The known name nearest to an unknown key, if it is a plausible typo of one.
pub fn suggestion(key: &str, names: &[&'static str]) -> Option<&'static str> {
    // No name a section reads is near a key this long (names are at most 42 bytes, and
    // `nearest` allows a third of the key's length in edits, less than the difference);
    // measuring the distance would only cost time.
    const NEAR_LEN: usize = 64;
    (key.len() <= NEAR_LEN)
        .then(|| nearest(key, names.iter().copied()))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sort_keys_into_known_and_unknown() {
        let doc: Value = yaml_serde::from_str("a: 1\nbb: x\n5: y\ntrue: z\n").expect("yaml");
        let map = doc.as_mapping().expect("mapping");
        let got: Vec<(String, String, Option<usize>)> = fields(map, "top", &["bb", "a"])
            .map(|f| (f.name, f.path, f.known))
            .collect();
        let want = [
            ("a", "top.a", Some(1)),
            ("bb", "top.bb", Some(0)),
            ("5", "top.5", None),
            ("true", "top.true", None),
        ]
        .map(|(name, path, known)| (name.to_string(), path.to_string(), known));
        assert_eq!(got, want);
        let top: Vec<String> = fields(map, "", &[]).map(|f| f.path).collect();
        assert_eq!(top, ["a", "bb", "5", "true"]);
    }

    #[test]
    fn suggestions_only_for_plausible_typos() {
        let names = &["exchange_type", "routing_key"];
        assert_eq!(suggestion("exchange_typ", names), Some("exchange_type"));
        assert_eq!(suggestion("zzz", names), None);
        assert_eq!(suggestion(&"x".repeat(65), names), None);
    }

    #[test]
    fn sections_and_scalars() {
        let doc: Value = yaml_serde::from_str("m: {a: 1}\nn: null\ns: [1]\n").expect("yaml");
        assert!(matches!(section(doc.get("m")), Ok(Some(_))));
        assert!(matches!(section(doc.get("n")), Ok(None)));
        assert!(matches!(section(doc.get("absent")), Ok(None)));
        assert!(section(doc.get("s")).is_err());
        assert_eq!(scalar_text(&Value::from(1.5)).as_deref(), Some("1.5"));
        assert_eq!(scalar_text(&Value::Bool(true)).as_deref(), Some("true"));
        assert_eq!(scalar_text(&Value::Null), None);
        assert!(matches!(setting(doc.get("n")), Setting::Absent));
        assert!(matches!(setting(None), Setting::Absent));
        assert!(matches!(setting(doc.get("s")), Setting::Compound(_)));
        let one = Value::from(1);
        assert!(matches!(setting(Some(&one)), Setting::Text(t) if t == "1"));
        assert_eq!(parse_int(" 42 "), Some(42));
        assert_eq!(parse_int("4x"), None);
    }
}
