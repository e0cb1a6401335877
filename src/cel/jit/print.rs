//! A human-readable dump of the typed tree (the checker's output, the JIT's input), for
//! `sentinel ir --stage typed`.
//!
//! Invariant: one node per line with its static type and span, children indented by two spaces
//! and prefixed by their role where it is not obvious, as the front end's AST printer does.

use crate::cel::functions;
use crate::cel::typed::{TExpr, TExprKind, Var};
use crate::cel::value::Value;
use std::fmt::Write;

/// The typed tree as indented lines: `<node> : <type> @start..end`.
///
/// Recurses over the tree: typed trees are as deep as the parsed trees they come from, which the
/// parser bounds.
pub fn typed(e: &TExpr) -> String {
    let mut out = String::new();
    node(&mut out, e, 0, "");
    out
}

fn node(out: &mut String, e: &TExpr, depth: usize, role: &str) {
    let _ = writeln!(
        out,
        "{:indent$}{role}{} : {} @{}..{}",
        "",
        head(&e.kind),
        e.ty,
        e.span.start,
        e.span.end,
        indent = depth * 2
    );
    let d = depth + 1;
    match &e.kind {
        TExprKind::Const(_) | TExprKind::Var(_) => {}
        TExprKind::Not(a)
        | TExprKind::Neg(a)
        | TExprKind::Select(a, _)
        | TExprKind::Has(a, _)
        | TExprKind::MatchesConst(a, _) => node(out, a, d, ""),
        TExprKind::Binary(_, a, b) | TExprKind::And(a, b) | TExprKind::Or(a, b) => {
            node(out, a, d, "");
            node(out, b, d, "");
        }
        TExprKind::Cond(c, a, b) => {
            node(out, c, d, "cond: ");
            node(out, a, d, "then: ");
            node(out, b, d, "else: ");
        }
        TExprKind::Index(t, k) => {
            node(out, t, d, "");
            node(out, k, d, "index: ");
        }
        TExprKind::Call(_, args) => args.iter().for_each(|a| node(out, a, d, "arg: ")),
        TExprKind::List(items) => items.iter().for_each(|i| node(out, i, d, "")),
        TExprKind::Map(entries) => {
            for (k, v) in entries {
                node(out, k, d, "key: ");
                node(out, v, d, "value: ");
            }
        }
        TExprKind::Comprehension(c) => {
            node(out, &c.range, d, "range: ");
            if let Some(f) = &c.filter {
                node(out, f, d, "filter: ");
            }
            node(out, &c.body, d, "body: ");
        }
    }
}

fn head(kind: &TExprKind) -> String {
    match kind {
        TExprKind::Const(v) => format!("Const {}", value_text(v)),
        TExprKind::Var(var) => format!("Var {}", var_text(*var)),
        TExprKind::Not(_) => "Not".into(),
        TExprKind::Neg(_) => "Neg".into(),
        TExprKind::Binary(op, ..) => format!("Binary {}", op.symbol()),
        TExprKind::And(..) => "And".into(),
        TExprKind::Or(..) => "Or".into(),
        TExprKind::Cond(..) => "Cond".into(),
        TExprKind::Select(_, f) => format!("Select .{}", f.name),
        TExprKind::Has(_, f) => format!("Has .{}", f.name),
        TExprKind::Index(..) => "Index".into(),
        TExprKind::Call(f, _) => format!("Call {}", functions::name(*f)),
        TExprKind::MatchesConst(_, re) => format!("Matches /{}/", re.as_str()),
        TExprKind::List(items) => format!("List len={}", items.len()),
        TExprKind::Map(entries) => format!("Map len={}", entries.len()),
        TExprKind::Comprehension(c) => format!("Comprehension {} depth={}", c.kind.name(), c.depth),
    }
}

fn var_text(var: Var) -> String {
    match var {
        Var::Resource => "resource".into(),
        Var::Now => "now".into(),
        Var::Reason => "reason".into(),
        Var::Slot(i) => format!("slot {i}"),
        Var::Local(d) => format!("local {d}"),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Timestamp(_) | Value::Duration(_) => {
            functions::to_string(v).unwrap_or_else(|_| v.type_name().into())
        }
        Value::List(items) => format!("list len={}", items.len()),
        Value::Map(m) => format!("map len={}", m.len()),
        Value::Type(t) => format!("type {t}"),
        Value::Double(d) => functions::format_double(*d),
        other => functions::to_string(other).unwrap_or_else(|_| other.type_name().into()),
    }
}
