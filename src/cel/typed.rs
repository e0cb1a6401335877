//! The typed tree: the checker's output and the contract between the front end and both back
//! ends (the interpreter and the JIT).
//!
//! Invariant: every node's `ty` is what evaluating it yields when it does not error (`Dyn` means
//! "checked at run time"); names are resolved (variables to [`Var`], functions to [`Builtin`]),
//! constant calls are folded, and constant regexes are compiled once here.

use super::ast::{BinaryOp, MacroKind};
use super::span::Span;
use super::time::TimePart;
use super::types::Type;
use super::value::Value;
use std::sync::Arc;

/// A typed expression node.
#[derive(Clone, Debug)]
pub struct TExpr {
    /// What the node computes.
    pub kind: TExprKind,
    /// The static type of its value.
    pub ty: Type,
    /// Where it was written.
    pub span: Span,
}

/// A resolved variable reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// `resource`: the resource being decided on.
    Resource,
    /// `now`: the evaluation timestamp (one per decision call).
    Now,
    /// `reason` in message_data expressions: the decision reason.
    Reason,
    /// A named slot of the environment: a message_decision param (in authored order) or a
    /// declared variable of a standalone expression.
    Slot(usize),
    /// A comprehension's iteration variable, by nesting depth (0 = outermost).
    Local(usize),
}

/// A resolved function. Receiver-style calls pass the receiver as the first argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `condition(name)`.
    Condition,
    /// `size(x)` / `x.size()`.
    Size,
    /// `s.contains(t)`.
    Contains,
    /// `s.startsWith(t)`.
    StartsWith,
    /// `s.endsWith(t)`.
    EndsWith,
    /// `s.matches(re)` / `matches(s, re)` with a pattern known only at run time.
    Matches,
    /// `int(x)`.
    ToInt,
    /// `uint(x)`.
    ToUint,
    /// `double(x)`.
    ToDouble,
    /// `string(x)`.
    ToString,
    /// `bool(x)`.
    ToBool,
    /// `bytes(x)`.
    ToBytes,
    /// `timestamp(x)`.
    ToTimestamp,
    /// `duration(x)`.
    ToDuration,
    /// `dyn(x)`.
    Dyn,
    /// `type(x)`.
    TypeOf,
    /// `t.getFullYear()` and the other timestamp/duration accessors, with an optional time zone.
    TimePart(TimePart),
    /// `s.charAt(i)`.
    CharAt,
    /// `s.indexOf(t[, start])`.
    IndexOf,
    /// `s.lastIndexOf(t[, start])`.
    LastIndexOf,
    /// `s.lowerAscii()`.
    LowerAscii,
    /// `s.upperAscii()`.
    UpperAscii,
    /// `s.replace(old, new[, n])`.
    Replace,
    /// `s.split(sep[, n])`.
    Split,
    /// `s.substring(start[, end])`.
    Substring,
    /// `s.trim()`.
    Trim,
    /// `list.join([sep])`.
    Join,
    /// `strings.quote(s)`.
    Quote,
    /// `s.reverse()`.
    Reverse,
    /// `fmt.format(args)`.
    Format,
}

/// A field selection with the field's name, and its position when the receiver's type is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field name as written.
    pub name: Arc<str>,
}

/// A typed comprehension (an expanded macro).
#[derive(Clone, Debug)]
pub struct TComprehension {
    /// Which macro.
    pub kind: MacroKind,
    /// The list or map iterated over (maps iterate their keys).
    pub range: TExpr,
    /// The iteration variable, as [`Var::Local`] of this depth.
    pub depth: usize,
    /// `map(x, p, t)`'s filter.
    pub filter: Option<TExpr>,
    /// The predicate or transform.
    pub body: TExpr,
}

/// The shape of a typed node.
#[derive(Clone, Debug)]
pub enum TExprKind {
    /// A constant (literals and folded constant calls).
    Const(Value),
    /// A variable.
    Var(Var),
    /// `!e`.
    Not(Box<TExpr>),
    /// `-e`.
    Neg(Box<TExpr>),
    /// Arithmetic, comparison or `in` (never `&&`/`||`).
    Binary(BinaryOp, Box<TExpr>, Box<TExpr>),
    /// `a && b`: false if either is false, else an error if either errs.
    And(Box<TExpr>, Box<TExpr>),
    /// `a || b`: true if either is true, else an error if either errs.
    Or(Box<TExpr>, Box<TExpr>),
    /// `c ? a : b`: evaluates only the chosen branch.
    Cond(Box<TExpr>, Box<TExpr>, Box<TExpr>),
    /// `e.f`.
    Select(Box<TExpr>, Field),
    /// `has(e.f)`.
    Has(Box<TExpr>, Field),
    /// `e[i]`.
    Index(Box<TExpr>, Box<TExpr>),
    /// A function call, receiver first.
    Call(Builtin, Vec<TExpr>),
    /// `s.matches(re)` with a constant pattern, compiled once at check time.
    MatchesConst(Box<TExpr>, Arc<regex::Regex>),
    /// `[a, b]`.
    List(Vec<TExpr>),
    /// `{k: v}`.
    Map(Vec<(TExpr, TExpr)>),
    /// An expanded macro.
    Comprehension(Box<TComprehension>),
}

impl TExpr {
    /// The node's direct children, in the order they are written (a comprehension's range, its
    /// filter if any, then its body; a map's keys and values alternating). Walkers that only
    /// need to visit every node use this instead of matching every variant.
    pub fn children(&self) -> impl Iterator<Item = &TExpr> {
        type Fixed<'a> = [Option<&'a TExpr>; 3];
        let none: Fixed<'_> = [None; 3];
        let (fixed, items, entries): (Fixed<'_>, &[TExpr], &[(TExpr, TExpr)]) = match &self.kind {
            TExprKind::Const(_) | TExprKind::Var(_) => (none, &[], &[]),
            TExprKind::Not(a)
            | TExprKind::Neg(a)
            | TExprKind::Select(a, _)
            | TExprKind::Has(a, _)
            | TExprKind::MatchesConst(a, _) => ([Some(a), None, None], &[], &[]),
            TExprKind::Binary(_, a, b)
            | TExprKind::And(a, b)
            | TExprKind::Or(a, b)
            | TExprKind::Index(a, b) => ([Some(a), Some(b), None], &[], &[]),
            TExprKind::Cond(c, a, b) => ([Some(c), Some(a), Some(b)], &[], &[]),
            TExprKind::Call(_, items) | TExprKind::List(items) => (none, items, &[]),
            TExprKind::Map(entries) => (none, &[], entries),
            TExprKind::Comprehension(c) => {
                ([Some(&c.range), c.filter.as_ref(), Some(&c.body)], &[], &[])
            }
        };
        fixed
            .into_iter()
            .flatten()
            .chain(items)
            .chain(entries.iter().flat_map(|(k, v)| [k, v]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::check::{Env, check};
    use crate::cel::parse;

    fn typed(source: &str) -> TExpr {
        let env = Env::with_slots(&[("x".into(), Type::Dyn)]);
        check(&parse(source).expect("parses"), &env).expect("checks")
    }

    /// The spans of a node's children, as source text.
    fn children_text<'s>(source: &'s str, e: &TExpr) -> Vec<&'s str> {
        e.children()
            .map(|c| &source[c.span.start as usize..c.span.end as usize])
            .collect()
    }

    #[test]
    fn children_come_in_written_order() {
        let cases: &[(&str, &[&str])] = &[
            ("x", &[]),
            ("!x", &["x"]),
            ("x + 1", &["x", "1"]),
            ("x ? x.a : x[1]", &["x", "x.a", "x[1]"]),
            ("x[2]", &["x", "2"]),
            ("[x, x.b, 3]", &["x", "x.b", "3"]),
            ("{x: 1, 'k': x}", &["x", "1", "'k'", "x"]),
            ("x.size()", &["x"]),
        ];
        for &(source, expected) in cases {
            let e = typed(source);
            assert_eq!(children_text(source, &e), expected, "{source}");
        }
    }

    #[test]
    fn a_comprehension_yields_range_filter_body() {
        let source = "x.map(v, v > 1, v * 2)";
        let e = typed(source);
        assert!(matches!(e.kind, TExprKind::Comprehension(_)));
        assert_eq!(children_text(source, &e), ["x", "v > 1", "v * 2"]);
        let source = "x.all(v, v)";
        let e = typed(source);
        assert_eq!(children_text(source, &e), ["x", "v"]);
    }
}
