//! Constant calls that always fail, and whether CEL evaluates them for every input.
//!
//! Takes a typed tree (constants already folded by the checker, so a constant call still in the
//! tree is one whose folding failed); gives every such call with its error, each marked with
//! whether the whole expression's value is an error for every binding of its variables
//! ([`Failing::always`]). The checker makes the first kind a load-time error and the second a
//! warning: CEL's `||` and `&&` absorb an error from either side, `?:` evaluates one branch and a
//! macro over an empty list never evaluates its body, so cel-go compiles such an expression and
//! answers true or false wherever the call is not reached.
//!
//! The decision follows CEL's own evaluation rules over an abstract value per node: a constant,
//! "an error for every input" (with the failing calls that make it one) or unknown. Strict
//! operations (calls, operators, selections, literals) fail when an operand fails; `||`/`&&`
//! fail only when neither side can absorb; `?:` fails when its condition fails or both branches
//! do; a macro fails when its range fails, or when its range is a constant non-empty list or map
//! and its body fails whatever the element. Unknown is always a safe answer: it only turns an
//! error into a warning.
//!
//! Invariant: the walk visits every node once (recursion bounded by the tree's depth, which
//! the parser bounds) and evaluates only calls whose arguments are all constants, as the
//! checker's folding already did.

use super::ast::MacroKind;
use super::check::is_error_placeholder;
use super::functions;
use super::interp;
use super::span::Span;
use super::typed::{Builtin, TComprehension, TExpr, TExprKind};
use super::value::{EvalError, Value};

/// A constant call that fails whenever it is evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failing {
    /// The call (for an invalid `matches` pattern: the pattern).
    pub span: Span,
    /// What evaluating it gives.
    pub error: EvalError,
    /// Whether it makes the whole expression an error for every input (a load-time error);
    /// otherwise the expression may not evaluate it, and it fails only where it is reached.
    pub always: bool,
    /// Whether it is an invalid constant `matches` pattern (reported in the regex's own words).
    pub regex: bool,
}

/// Every constant call of `e` that fails whenever evaluated, in the order of the walk (calls
/// before their parents, left to right).
pub fn failing_calls(e: &TExpr) -> Vec<Failing> {
    let mut walk = Walk { found: Vec::new() };
    let root = walk.node(e);
    if let Abs::Fails(causes) = root {
        for i in causes {
            walk.found[i].always = true;
        }
    }
    walk.found
}

/// What is known of a node's value for every input.
#[derive(Clone, Debug)]
enum Abs {
    /// This value, whatever the input.
    Known(Value),
    /// An error, whatever the input; the indices (in [`Walk::found`], sorted, distinct) of the
    /// failing calls that make it one.
    Fails(Vec<usize>),
    /// Anything else: a value for some inputs, maybe an error for others.
    Unknown,
}

struct Walk {
    found: Vec<Failing>,
}

/// The union of two sorted sets of causes.
fn union(mut a: Vec<usize>, b: Vec<usize>) -> Vec<usize> {
    a.extend(b);
    a.sort_unstable();
    a.dedup();
    a
}

impl Walk {
    fn node(&mut self, e: &TExpr) -> Abs {
        match &e.kind {
            TExprKind::Const(_) if is_error_placeholder(e) => Abs::Unknown,
            TExprKind::Const(v) => Abs::Known(v.clone()),
            TExprKind::Var(_) => Abs::Unknown,
            TExprKind::And(a, b) => self.logic(a, b, false),
            TExprKind::Or(a, b) => self.logic(a, b, true),
            TExprKind::Cond(c, a, b) => {
                let (c, a, b) = (self.node(c), self.node(a), self.node(b));
                match (c, a, b) {
                    (Abs::Known(Value::Bool(true)), a, _) => a,
                    (Abs::Known(Value::Bool(false)), _, b) => b,
                    (Abs::Fails(c), _, _) => Abs::Fails(c),
                    (Abs::Unknown, Abs::Fails(a), Abs::Fails(b)) => Abs::Fails(union(a, b)),
                    _ => Abs::Unknown,
                }
            }
            TExprKind::Comprehension(c) => self.comprehension(c),
            TExprKind::Call(Builtin::Matches, args) => self.matches(args),
            TExprKind::Call(f, args) => match self.strict(args.iter()) {
                Some(causes) => Abs::Fails(causes),
                None => self.call(*f, args, e),
            },
            TExprKind::Not(a) => match self.node(a) {
                Abs::Known(Value::Bool(v)) => Abs::Known(Value::Bool(!v)),
                Abs::Fails(causes) => Abs::Fails(causes),
                _ => Abs::Unknown,
            },
            // Every other node is strict in all its operands.
            _ => self.strict(e.children()).map_or(Abs::Unknown, Abs::Fails),
        }
    }

    /// Walks every operand; the causes when one of them fails for every input.
    fn strict<'e>(&mut self, operands: impl Iterator<Item = &'e TExpr>) -> Option<Vec<usize>> {
        let mut failed: Option<Vec<usize>> = None;
        for operand in operands {
            if let Abs::Fails(causes) = self.node(operand) {
                failed = Some(match failed {
                    Some(earlier) => union(earlier, causes),
                    None => causes,
                });
            }
        }
        failed
    }

    /// A call whose operands do not fail: evaluated when they are all constants (the checker
    /// could not fold it, so it fails).
    fn call(&mut self, f: Builtin, args: &[TExpr], e: &TExpr) -> Abs {
        let constant =
            |a: &TExpr| matches!(a.kind, TExprKind::Const(_)) && !is_error_placeholder(a);
        if !functions::is_pure(f) || !args.iter().all(constant) {
            return Abs::Unknown;
        }
        match interp::eval_constant(e) {
            Ok(v) => Abs::Known(v),
            Err(error) => Abs::Fails(vec![self.record(e.span, error, false)]),
        }
    }

    /// `matches` with a pattern known only at run time, or an invalid constant one (a valid
    /// constant pattern is compiled by the checker into `MatchesConst`).
    fn matches(&mut self, args: &[TExpr]) -> Abs {
        let failed = self.strict(args.iter());
        let bad_pattern = match args.get(1).map(|p| (&p.kind, p.span)) {
            Some((TExprKind::Const(Value::String(pattern)), span)) => {
                functions::compile_regex(pattern)
                    .err()
                    .map(|error| (span, error))
            }
            _ => None,
        };
        match (failed, bad_pattern) {
            // The subject's error or the pattern's, but an error for every input either way.
            (failed, Some((span, error))) => {
                let mine = vec![self.record(span, error, true)];
                Abs::Fails(match failed {
                    Some(causes) => union(causes, mine),
                    None => mine,
                })
            }
            (Some(causes), None) => Abs::Fails(causes),
            (None, None) => Abs::Unknown,
        }
    }

    /// Records a failing call; its index in `found`.
    fn record(&mut self, span: Span, error: EvalError, regex: bool) -> usize {
        self.found.push(Failing {
            span,
            error,
            always: false,
            regex,
        });
        self.found.len() - 1
    }

    /// `a && b` (`absorbing` false) and `a || b` (`absorbing` true): the absorbing value on
    /// either side decides; an error stays only where the other side fails too or is the
    /// non-absorbing constant.
    fn logic(&mut self, a: &TExpr, b: &TExpr, absorbing: bool) -> Abs {
        let (a, b) = (self.node(a), self.node(b));
        let is = |x: &Abs, v: bool| matches!(x, Abs::Known(Value::Bool(b)) if *b == v);
        if is(&a, absorbing) || is(&b, absorbing) {
            return Abs::Known(Value::Bool(absorbing));
        }
        match (a, b) {
            (Abs::Fails(x), Abs::Fails(y)) => Abs::Fails(union(x, y)),
            (Abs::Fails(x), other) | (other, Abs::Fails(x)) if is(&other, !absorbing) => {
                Abs::Fails(x)
            }
            (x, y) if is(&x, !absorbing) && is(&y, !absorbing) => {
                Abs::Known(Value::Bool(!absorbing))
            }
            _ => Abs::Unknown,
        }
    }

    /// A macro: it fails when its range fails, or when its range is a constant that is not
    /// empty and its filter or body fails whatever the element.
    fn comprehension(&mut self, c: &TComprehension) -> Abs {
        let range = self.node(&c.range);
        let filter = c.filter.as_ref().map(|f| self.node(f));
        let body = self.node(&c.body);
        let len = match &range {
            Abs::Fails(causes) => return Abs::Fails(causes.clone()),
            Abs::Known(Value::List(items)) => items.len(),
            Abs::Known(Value::Map(map)) => map.len(),
            _ => return Abs::Unknown,
        };
        if len == 0 {
            return Abs::Known(match c.kind {
                MacroKind::All => Value::Bool(true),
                MacroKind::Exists | MacroKind::ExistsOne => Value::Bool(false),
                MacroKind::Map | MacroKind::Filter => Value::List(Vec::new().into()),
            });
        }
        match (filter, body) {
            (Some(Abs::Fails(causes)), _) => Abs::Fails(causes),
            (Some(Abs::Known(Value::Bool(true))) | None, Abs::Fails(causes)) => Abs::Fails(causes),
            _ => Abs::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::check::{Env, check};
    use crate::cel::parse;
    use crate::cel::types::Type;
    use crate::cel::value::Value;
    use proptest::prelude::*;

    /// The failing calls of `source` as (source text, always) pairs, checked with a dyn
    /// variable `x` and without load-time errors (so that the calls stay in the tree).
    fn failing(source: &str) -> Vec<(&str, bool)> {
        let env = Env::with_slots(&[("x".into(), Type::Dyn)]);
        let e = check(&parse(source).expect("parses"), &env).expect("checks");
        failing_calls(&e)
            .into_iter()
            .map(|f| {
                (
                    &source[f.span.start as usize..f.span.end as usize],
                    f.always,
                )
            })
            .collect()
    }

    #[test]
    fn an_error_absorbed_by_logic_is_not_always_an_error() {
        let bad = r#"int("x")"#;
        for source in [
            r#"true || int("x") > 0"#,
            r#"int("x") > 0 || true"#,
            r#"false && int("x") > 0"#,
            r#"int("x") > 0 && false"#,
            r#"x || int("x") > 0"#,
            r#"int("x") > 0 && x"#,
            r#"x ? int("x") : 0"#,
            r#"x ? 0 : int("x")"#,
            r#"[].exists(v, int("x") > 0)"#,
            r#"x.all(v, int("x") > 0)"#,
            r#"[1, 2].map(v, v > 1, int("x"))"#,
            r#"true ? 1 : int("x")"#,
            r#"(int("x") > 0 || true) && x"#,
        ] {
            assert_eq!(failing(source), [(bad, false)], "{source}");
        }
    }

    #[test]
    fn an_error_every_evaluation_reaches_is_always_an_error() {
        let bad = r#"int("x")"#;
        for source in [
            r#"int("x")"#,
            r#"int("x") + x"#,
            r#"x + int("x")"#,
            r#"[x, int("x")]"#,
            r#"{"k": int("x")}"#,
            r#"int("x") > 0 || false"#,
            r#"false || int("x") > 0"#,
            r#"true && int("x") > 0"#,
            r#"false ? 1 : int("x")"#,
            r#"int("x") > 0 ? x : x"#,
            r#"[1].exists(v, int("x") > v)"#,
            r#"[1].all(v, int("x") > v)"#,
            r#"{"a": 1}.exists_one(k, int("x") > 0)"#,
            r#"[1].filter(v, int("x") > v)"#,
            r#"!(int("x") > 0)"#,
            r#"-int("x")"#,
            r#"[int("x")][0]"#,
            r#"size(string(int("x")))"#,
            r#"(true || x) && int("x") > 0"#,
        ] {
            assert_eq!(failing(source), [(bad, true)], "{source}");
        }
    }

    #[test]
    fn both_sides_failing_is_always_an_error() {
        assert_eq!(
            failing(r#"int("a") > 0 || int("b") > 0"#),
            [(r#"int("a")"#, true), (r#"int("b")"#, true)]
        );
        assert_eq!(
            failing(r#"x ? int("a") : int("b")"#),
            [(r#"int("a")"#, true), (r#"int("b")"#, true)]
        );
        // One side absorbs: neither is always an error.
        assert_eq!(
            failing(r#"(int("a") > 0 || int("b") > 0) || x"#),
            [(r#"int("a")"#, false), (r#"int("b")"#, false)]
        );
        // Only the branch every input takes.
        assert_eq!(
            failing(r#"true ? int("a") : int("b")"#),
            [(r#"int("a")"#, true), (r#"int("b")"#, false)]
        );
    }

    #[test]
    fn an_invalid_constant_pattern_fails_whatever_the_subject() {
        assert_eq!(failing(r#"x.matches("(")"#), [(r#""(""#, true)]);
        assert_eq!(failing(r#"x || "a".matches("(")"#), [(r#""(""#, false)]);
        assert_eq!(failing(r#"x.matches("a(b)")"#), []);
    }

    #[test]
    fn calls_with_unknown_operands_are_not_evaluated() {
        assert_eq!(failing(r#"int(x)"#), []);
        assert_eq!(failing(r#"[1].map(v, int("a" + string(v)))"#), []);
        assert_eq!(failing(r#"1 / 0"#), []);
    }
    /// A boolean expression over `x` (dyn) built from constants, `x`, calls that always fail,
    /// `||`, `&&`, `?:`, `!` and macros over constant and variable ranges.
    fn expression() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("true".to_string()),
            Just("false".to_string()),
            Just("x == 1".to_string()),
            Just("x".to_string()),
            Just(r#"int("a") > 0"#.to_string()),
            Just(r#"duration("b") > duration("1s")"#.to_string()),
            Just(r#""s".matches("(")"#.to_string()),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} && {b})")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
                inner.clone().prop_map(|a| format!("!{a}")),
                inner.clone().prop_map(|a| format!("[].exists(v, {a})")),
                inner.clone().prop_map(|a| format!("[1, 2].all(v, {a})")),
                inner
                    .clone()
                    .prop_map(|a| format!("[x].exists_one(v, {a})")),
                inner.prop_map(|a| format!("x.exists(v, {a})")),
            ]
        })
    }

    proptest::proptest! {
        /// Soundness: where the analysis says the expression is an error for every input, the
        /// interpreter gives an error for each of a set of values of `x`.
        #[test]
        fn always_means_an_error_for_every_input(source in expression()) {
            let env = Env::with_slots(&[("x".into(), Type::Dyn)]);
            let Ok(e) = check(&parse(&source).expect("parses"), &env) else {
                return Ok(());
            };
            if !failing_calls(&e).iter().any(|f| f.always) {
                return Ok(());
            }
            let xs = [
                Value::Bool(true),
                Value::Bool(false),
                Value::Int(1),
                Value::List(vec![].into()),
                Value::List(vec![Value::Bool(true)].into()),
            ];
            for x in xs {
                let slots = [Ok(x.clone())];
                let act = crate::cel::interp::Activation {
                    slots: &slots,
                    ..Default::default()
                };
                let value = crate::cel::interp::eval(&e, &act);
                proptest::prop_assert!(value.is_err(), "{} with x = {:?}: {:?}", source, x, value);
            }
        }
    }
}
