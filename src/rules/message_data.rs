//! message_data: the CloudEvent `data` object, one CEL expression per leaf, compiled once and
//! evaluated per published resource with `resource` and `reason` in scope.
//!
//! Invariant: evaluation never fails as a whole. As in the Go sentinel, a leaf whose expression
//! errors or yields null is omitted (and reported to the caller for a warning), and an object
//! whose leaves are all omitted is omitted too.

use super::origin::Origin;
use crate::cel::host::Resource;
use crate::cel::host::{FieldType, ResourceField, resource_field};
use crate::cel::json::{DurationStyle, to_json};
use crate::cel::typed::{TExpr, TExprKind, Var};
use crate::cel::value::{EvalError, Value};
use crate::cel::{Activation, Env, eval};
use crate::rules::decision::{CompileError, ExprDiagnostics, compile_expr};
use serde_json::{Map as JsonMap, Value as Json};
use std::sync::Arc;

/// `message_data` as written: a tree whose leaves are CEL source text. The daemon's config loader
/// builds it (the config depends on this layer, never the reverse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageData {
    /// CEL source text. A YAML number or boolean leaf becomes its CEL literal text (`5`, `1.5`,
    /// `true`; an integer above `i64::MAX` gets a `u` suffix).
    Leaf(String),
    /// A nested object, sorted by key (byte order); never empty. Keys keep their case.
    Object(Vec<(String, MessageData)>),
}
pub mod encode;

/// The `data` object of one event as JSON bytes, exactly as Go's `encoding/json` writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataJson(pub Vec<u8>);

/// A compiled message_data tree.
#[derive(Clone, Debug)]
pub struct MessageDataProgram {
    fields: Vec<(Key, Node)>,
    warnings: Vec<ExprDiagnostics>,
}

/// An object key, with its JSON text (`"name":`) written once at compile time.
#[derive(Clone, Debug)]
struct Key {
    name: String,
    json: Vec<u8>,
}

impl Key {
    fn new(name: &str) -> Key {
        let mut json = Vec::with_capacity(name.len() + 3);
        encode::write_str(&mut json, name);
        json.push(b':');
        Key {
            name: name.to_string(),
            json,
        }
    }
}

#[derive(Clone, Debug)]
enum Node {
    Leaf {
        path: String,
        source: String,
        expr: TExpr,
        /// The leaf read straight from the resource, when the expression is one field of it.
        direct: Option<Direct>,
    },
    Object(Vec<(Key, Node)>),
}

/// A leaf that is one field of the resource or `reason`, found at compile time: written from
/// the decoded field itself, without building a CEL value (its bytes are those `eval` would
/// give; a field that holds an error goes through `eval`, which reports it).
#[derive(Clone, Copy, Debug)]
enum Direct {
    /// `resource.<f>` of a text or time field.
    Text(ResourceField),
    /// `resource.<f>` of an integer field (each reads its own slot: a second integer field is
    /// never written from another's).
    Int(ResourceField),
    /// `reason`.
    Reason,
}

impl Direct {
    fn of(expr: &TExpr) -> Option<Direct> {
        match &expr.kind {
            TExprKind::Var(Var::Reason) => Some(Direct::Reason),
            TExprKind::Select(target, field)
                if matches!(target.kind, TExprKind::Var(Var::Resource)) =>
            {
                let def = resource_field(&field.name)?;
                match def.ty {
                    FieldType::Str | FieldType::Time => Some(Direct::Text(def.field)),
                    FieldType::Int => Some(Direct::Int(def.field)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Writes the leaf; false (nothing written) when the field holds an error.
    fn write(self, act: &Activation<'_>, out: &mut Vec<u8>) -> bool {
        match (self, act.resource, act.reason) {
            (Direct::Reason, _, Some(reason)) => encode::write_str(out, reason),
            (Direct::Text(f), Some(r), _) => match r.text(f) {
                Some(Ok(text)) => encode::write_str(out, text.as_str()),
                _ => return false,
            },
            (Direct::Int(f), Some(r), _) => match r.int(f) {
                Some(Ok(i)) => encode::write_i64(out, *i),
                _ => return false,
            },
            _ => return false,
        }
        true
    }
}

/// A leaf left out of one event, for the caller's warning.
#[derive(Clone, Debug, PartialEq)]
pub struct Omitted {
    /// The dotted path of the leaf (`message_data.region`).
    pub path: String,
    /// Why: its error, or `evaluated to null`.
    pub why: String,
}

impl MessageDataProgram {
    /// What the leaves read of a resource (the page decoder's projection).
    pub fn projection(&self) -> crate::cel::host::Projection {
        fn walk(nodes: &[(Key, Node)], p: &mut crate::cel::host::Projection) {
            for (_, node) in nodes {
                match node {
                    Node::Leaf { expr, .. } => p.add_reads(expr),
                    Node::Object(children) => walk(children, p),
                }
            }
        }
        let mut p = crate::cel::host::Projection::base();
        walk(&self.fields, &mut p);
        p
    }
}

impl MessageDataProgram {
    /// Compiles every leaf (each sees `resource` and `reason`), reporting every problem.
    pub fn compile(data: &MessageData) -> Result<MessageDataProgram, CompileError> {
        let env = Env::message_data().for_config(crate::cel::host::RESOURCE_FIELDS);
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let fields = match data {
            MessageData::Object(fields) => {
                compile_fields(fields, "message_data", &env, &mut errors, &mut warnings)
            }
            MessageData::Leaf(_) => {
                let mut out = Vec::new();
                if let Some(node) =
                    compile_node(data, "message_data", &env, &mut errors, &mut warnings)
                {
                    out.push((Key::new("message_data"), node));
                }
                out
            }
        };
        if errors.is_empty() {
            Ok(MessageDataProgram { fields, warnings })
        } else {
            Err(CompileError { exprs: errors })
        }
    }

    /// What compiled but looks wrong (unknown resource fields), per leaf in key order.
    pub fn warnings(&self) -> &[ExprDiagnostics] {
        &self.warnings
    }

    /// The leaves as `(dotted path, source, type)`, in key order, for `sentinel check`.
    pub fn leaves(&self) -> Vec<(&str, &str, String)> {
        let mut out = Vec::new();
        collect_leaves(&self.fields, &mut out);
        out
    }

    /// Builds the `data` object for one resource and decision reason, written straight to
    /// its JSON bytes. Leaves that error or are null are omitted and passed to `omitted`.
    pub fn evaluate(
        &self,
        resource: &Arc<Resource>,
        reason: &Arc<str>,
        omitted: &mut dyn FnMut(Omitted),
    ) -> DataJson {
        let mut out = Vec::with_capacity(256);
        self.evaluate_into(resource, reason, &mut out, omitted);
        DataJson(out)
    }

    /// [`MessageDataProgram::evaluate`] appending to `out`.
    pub fn evaluate_into(
        &self,
        resource: &Arc<Resource>,
        reason: &Arc<str>,
        out: &mut Vec<u8>,
        omitted: &mut dyn FnMut(Omitted),
    ) {
        let act = Activation {
            resource: Some(resource),
            reason: Some(reason),
            ..Activation::default()
        };
        write_fields(&self.fields, &act, out, omitted);
    }

    /// The `data` object as a JSON tree (what [`MessageDataProgram::evaluate`] writes the
    /// bytes of).
    pub fn evaluate_tree(
        &self,
        resource: &Arc<Resource>,
        reason: &Arc<str>,
        omitted: &mut dyn FnMut(Omitted),
    ) -> Json {
        let act = Activation {
            resource: Some(resource),
            reason: Some(reason),
            ..Activation::default()
        };
        Json::Object(eval_fields(&self.fields, &act, omitted))
    }
}

fn compile_fields(
    fields: &[(String, MessageData)],
    path: &str,
    env: &Env,
    errors: &mut Vec<ExprDiagnostics>,
    warnings: &mut Vec<ExprDiagnostics>,
) -> Vec<(Key, Node)> {
    fields
        .iter()
        .filter_map(|(key, value)| {
            let child = format!("{path}.{key}");
            compile_node(value, &child, env, errors, warnings).map(|node| (Key::new(key), node))
        })
        .collect()
}

fn compile_node(
    data: &MessageData,
    path: &str,
    env: &Env,
    errors: &mut Vec<ExprDiagnostics>,
    warnings: &mut Vec<ExprDiagnostics>,
) -> Option<Node> {
    match data {
        MessageData::Leaf(source) => {
            match compile_expr(source, env, Origin::MessageData(path.to_string()), warnings) {
                Ok(expr) => Some(Node::Leaf {
                    path: path.to_string(),
                    source: source.clone(),
                    direct: Direct::of(&expr),
                    expr,
                }),
                Err(e) => {
                    errors.push(e);
                    None
                }
            }
        }
        MessageData::Object(fields) => Some(Node::Object(compile_fields(
            fields, path, env, errors, warnings,
        ))),
    }
}

fn collect_leaves<'a>(fields: &'a [(Key, Node)], out: &mut Vec<(&'a str, &'a str, String)>) {
    for (_, node) in fields {
        match node {
            Node::Leaf {
                path, source, expr, ..
            } => out.push((path, source, expr.ty.to_string())),
            Node::Object(children) => collect_leaves(children, out),
        }
    }
}

/// Writes an object of `fields` to `out` (Go's bytes: keys in byte order) and tells whether it
/// has an entry. Config objects arrive sorted; one that is not (or has a repeated key) is built
/// as a tree first, which sorts it as Go does.
fn write_fields(
    fields: &[(Key, Node)],
    act: &Activation<'_>,
    out: &mut Vec<u8>,
    omitted: &mut dyn FnMut(Omitted),
) -> bool {
    if !fields.windows(2).all(|w| w[0].0.name < w[1].0.name) {
        let obj = eval_fields(fields, act, omitted);
        let any = !obj.is_empty();
        encode::write_json(out, &Json::Object(obj));
        return any;
    }
    out.push(b'{');
    let mut any = false;
    for (key, node) in fields {
        let mark = out.len();
        let entry = |out: &mut Vec<u8>| {
            if any {
                out.push(b',');
            }
            out.extend_from_slice(&key.json);
        };
        match node {
            Node::Leaf {
                path, expr, direct, ..
            } => {
                if let Some(direct) = direct {
                    entry(out);
                    if direct.write(act, out) {
                        any = true;
                        continue;
                    }
                    out.truncate(mark);
                }
                match eval(expr, act) {
                    Ok(Value::Null) => omitted(Omitted {
                        path: path.clone(),
                        why: "evaluated to null".into(),
                    }),
                    Ok(v) => {
                        entry(out);
                        encode::write_cel(out, &v);
                        any = true;
                    }
                    Err(EvalError { message, .. }) => omitted(Omitted {
                        path: path.clone(),
                        why: message,
                    }),
                }
            }
            Node::Object(children) => {
                entry(out);
                if write_fields(children, act, out, omitted) {
                    any = true;
                } else {
                    out.truncate(mark);
                }
            }
        }
    }
    out.push(b'}');
    any
}

fn eval_fields(
    fields: &[(Key, Node)],
    act: &Activation<'_>,
    omitted: &mut dyn FnMut(Omitted),
) -> JsonMap<String, Json> {
    let mut obj = JsonMap::with_capacity(fields.len());
    for (key, node) in fields {
        let value = match node {
            Node::Leaf { path, expr, .. } => match eval(expr, act) {
                Ok(Value::Null) => {
                    omitted(Omitted {
                        path: path.clone(),
                        why: "evaluated to null".into(),
                    });
                    continue;
                }
                Ok(v) => to_json(&v, DurationStyle::Nanos),
                Err(EvalError { message, .. }) => {
                    omitted(Omitted {
                        path: path.clone(),
                        why: message,
                    });
                    continue;
                }
            },
            Node::Object(children) => {
                let nested = eval_fields(children, act, omitted);
                if nested.is_empty() {
                    continue;
                }
                Json::Object(nested)
            }
        };
        obj.insert(key.name.clone(), value);
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_those_of_the_tree() {
        let leaf = |s: &str| MessageData::Leaf(s.to_string());
        let obj = |fields: Vec<(&str, MessageData)>| {
            MessageData::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            )
        };
        let datas = [
            obj(vec![
                ("a", leaf("resource.id")),
                ("b", obj(vec![("x", leaf("null")), ("y", leaf("1 / 0"))])),
                ("c", obj(vec![("k", leaf("reason")), ("z", leaf("null"))])),
                (
                    "d",
                    leaf(r#"{"z": 1, "a": [1.5, "<&>", duration("1s")], 2: true}"#),
                ),
                ("e", leaf("resource.labels")),
                ("f", leaf("resource.status.conditions[0]")),
            ]),
            // Out of order and repeated keys (not what the config loader gives): as the tree.
            obj(vec![("z", leaf("1")), ("a", leaf("2")), ("a", leaf("3"))]),
            obj(vec![("only", leaf("null"))]),
            leaf("resource.generation"),
            // The leaves written straight from the resource (and what `eval` says of them).
            obj(vec![
                ("created", leaf("resource.created_time")),
                ("generation", leaf("resource.generation")),
                ("href", leaf("resource.href")),
                ("id", leaf("resource.id")),
                ("kind", leaf("resource.kind")),
                ("name", leaf("resource.name")),
                ("reason", leaf("reason")),
                ("updated", leaf("resource.updated_time")),
            ]),
        ];
        let texts = [
            r#"{"id":"c\u00e9-1","generation":2,"labels":{"b":"2","a":"1"},
                "status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
            r#"{"id":"x","kind":"K\"<x>","href":"/a&b","name":"n\u2028","generation":-3,
                "created_time":"2025-01-01T00:00:00.500+02:00","updated_time":"2025-01-01T00:00:00Z"}"#,
            r#"{"id":"bad","kind":5,"generation":"two","created_time":"yesterday","name":null}"#,
        ];
        let mut resources: Vec<Resource> = texts.iter().map(|t| Resource::from_text(t)).collect();
        // Decoded under a projection that reads none of them (each decoded on first use).
        let page: crate::cel::host::SharedText =
            Arc::new(format!(r#"{{"items":[{}],"total":3}}"#, texts.join(",")));
        let projection = Arc::new(crate::cel::host::Projection::base());
        let items = crate::resource::decode_list(&page, &projection)
            .expect("decodes")
            .items;
        resources.extend(items);
        let reason: Arc<str> = Arc::from("why <now>");
        for (data, resource) in datas
            .iter()
            .flat_map(|d| resources.iter().map(move |r| (d, Arc::new(r.clone()))))
        {
            let program = MessageDataProgram::compile(data).expect("compiles");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let bytes = program.evaluate(&resource, &reason, &mut |o| a.push(o));
            let tree = program.evaluate_tree(&resource, &reason, &mut |o| b.push(o));
            let mut want = Vec::new();
            encode::write_json(&mut want, &tree);
            assert_eq!(
                String::from_utf8_lossy(&bytes.0),
                String::from_utf8_lossy(&want),
                "{data:?} {resource:?}"
            );
            assert_eq!(a, b);
        }
    }

    #[test]
    fn each_direct_leaf_reads_its_own_field() {
        use crate::cel::host::RESOURCE_SCHEMA;
        let mut direct = 0;
        for def in RESOURCE_SCHEMA.iter() {
            let leaf = MessageData::Leaf(format!("resource.{}", def.name));
            let data = MessageData::Object(vec![("x".to_string(), leaf)]);
            let program = MessageDataProgram::compile(&data).expect("compiles");
            let Some((_, Node::Leaf { direct: leaf, .. })) = program.fields.first() else {
                panic!("one leaf");
            };
            let read = match leaf {
                Some(Direct::Text(f) | Direct::Int(f)) => *f,
                Some(Direct::Reason) => panic!("resource.{} read as reason", def.name),
                None => continue,
            };
            assert_eq!(
                read, def.field,
                "resource.{} is written from another field",
                def.name
            );
            direct += 1;
        }
        assert!(direct >= 7, "only {direct} direct leaves");
    }
}
