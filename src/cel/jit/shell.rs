//! Closing a subtree over its free variables, so that the interpreter can evaluate it from
//! inside compiled code: every variable the interpreter's activation cannot see (a decision's
//! params, which live in native code; a standalone expression's slots, renumbered) becomes a
//! placeholder slot whose value native code passes in.
//!
//! Invariant: evaluating the closed tree with slot `i` bound to the value of `free[i]` gives what
//! evaluating the original subtree gives; `resource`, `now` and `reason` stay as they are (the
//! activation binds them), comprehension variables bound inside the subtree keep their meaning
//! with depths renumbered from 0.

use crate::cel::typed::{TComprehension, TExpr, TExprKind, Var};
use crate::cel::types::Type;

/// A subtree closed over its free variables.
pub(crate) struct Closed {
    /// The tree, its free variables replaced by `Var::Slot(i)`.
    pub expr: TExpr,
    /// The free variables, by placeholder index, with their static types.
    pub free: Vec<(Var, Type)>,
}

/// Closes `e`, whose comprehension variables of depth below `base` are bound outside it.
pub(crate) fn close(e: &TExpr, base: usize) -> Closed {
    let mut free = Vec::new();
    let expr = rewrite(e, base, &mut free);
    Closed { expr, free }
}

fn rewrite(e: &TExpr, base: usize, free: &mut Vec<(Var, Type)>) -> TExpr {
    let sub = |x: &TExpr, free: &mut Vec<(Var, Type)>| Box::new(rewrite(x, base, free));
    let kind = match &e.kind {
        TExprKind::Var(var) => TExprKind::Var(rename(*var, &e.ty, base, free)),
        TExprKind::Const(v) => TExprKind::Const(v.clone()),
        TExprKind::Not(a) => TExprKind::Not(sub(a, free)),
        TExprKind::Neg(a) => TExprKind::Neg(sub(a, free)),
        TExprKind::Binary(op, a, b) => TExprKind::Binary(*op, sub(a, free), sub(b, free)),
        TExprKind::And(a, b) => TExprKind::And(sub(a, free), sub(b, free)),
        TExprKind::Or(a, b) => TExprKind::Or(sub(a, free), sub(b, free)),
        TExprKind::Cond(c, a, b) => TExprKind::Cond(sub(c, free), sub(a, free), sub(b, free)),
        TExprKind::Select(t, f) => TExprKind::Select(sub(t, free), f.clone()),
        TExprKind::Has(t, f) => TExprKind::Has(sub(t, free), f.clone()),
        TExprKind::Index(t, k) => TExprKind::Index(sub(t, free), sub(k, free)),
        TExprKind::Call(f, args) => {
            TExprKind::Call(*f, args.iter().map(|a| rewrite(a, base, free)).collect())
        }
        TExprKind::MatchesConst(s, re) => TExprKind::MatchesConst(sub(s, free), re.clone()),
        TExprKind::List(items) => {
            TExprKind::List(items.iter().map(|a| rewrite(a, base, free)).collect())
        }
        TExprKind::Map(entries) => TExprKind::Map(
            entries
                .iter()
                .map(|(k, v)| (rewrite(k, base, free), rewrite(v, base, free)))
                .collect(),
        ),
        TExprKind::Comprehension(c) => TExprKind::Comprehension(Box::new(TComprehension {
            kind: c.kind,
            range: rewrite(&c.range, base, free),
            depth: c.depth.saturating_sub(base),
            filter: c.filter.as_ref().map(|f| rewrite(f, base, free)),
            body: rewrite(&c.body, base, free),
        })),
    };
    TExpr {
        kind,
        ty: e.ty.clone(),
        span: e.span,
    }
}

fn rename(var: Var, ty: &Type, base: usize, free: &mut Vec<(Var, Type)>) -> Var {
    match var {
        Var::Resource | Var::Now | Var::Reason => var,
        Var::Local(d) if d >= base => Var::Local(d - base),
        Var::Slot(_) | Var::Local(_) => {
            let i = match free.iter().position(|(v, _)| *v == var) {
                Some(i) => i,
                None => {
                    free.push((var, ty.clone()));
                    free.len() - 1
                }
            };
            Var::Slot(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::span::Span;

    fn var(v: Var) -> TExpr {
        TExpr {
            kind: TExprKind::Var(v),
            ty: Type::Int,
            span: Span::default(),
        }
    }

    #[test]
    fn free_variables_become_slots_in_order_of_first_use() {
        let e = TExpr {
            kind: TExprKind::List(vec![
                var(Var::Slot(5)),
                var(Var::Now),
                var(Var::Local(0)),
                var(Var::Slot(5)),
                var(Var::Local(1)),
            ]),
            ty: Type::Dyn,
            span: Span::default(),
        };
        let closed = close(&e, 1);
        let vars: Vec<Var> = closed.free.iter().map(|(v, _)| *v).collect();
        assert_eq!(vars, vec![Var::Slot(5), Var::Local(0)]);
        let TExprKind::List(items) = &closed.expr.kind else {
            panic!("not a list")
        };
        let got: Vec<_> = items
            .iter()
            .map(|i| match i.kind {
                TExprKind::Var(v) => v,
                _ => Var::Reason,
            })
            .collect();
        assert_eq!(
            got,
            vec![
                Var::Slot(0),
                Var::Now,
                Var::Slot(1),
                Var::Slot(0),
                Var::Local(0)
            ]
        );
    }
}
