//! The search atoms the deriver builds from: a time compared with a cutoff, a condition's
//! status as a set, a label or field as a column, and their combinations.

use super::{Linear, STATUSES, Sets, Term};
use crate::cel::ast::BinaryOp;
use crate::cel::span::Span;
use crate::cel::time::Timestamp;
use crate::cel::typed::{TExpr, TExprKind, Var};
use crate::tsl::{Column, Literal, Op, TimeLit, Tsl};
use std::collections::BTreeSet;

/// `column op (now if relative, else the epoch) + offset`, rounded outward to whole seconds.
pub(super) fn time_atom(column: &Column, op: Op, offset: i128, relative: bool) -> Tsl {
    let literal = |up: bool| {
        let cutoff = TimeLit::Cutoff { offset, up };
        Literal::Time(if relative {
            cutoff
        } else {
            TimeLit::At(cutoff.at(Timestamp::UNIX_EPOCH))
        })
    };
    let atom = |op: Op, up: bool| Tsl::Compare(column.clone(), op, literal(up));
    match op {
        Op::Lt | Op::Le => atom(op, true),
        Op::Gt | Op::Ge => atom(op, false),
        Op::Eq => Tsl::and([atom(Op::Ge, false), atom(Op::Le, true)]),
        // Every time but one instant: the search keeps all (a NULL is an error in CEL too).
        Op::Ne => Tsl::IsNull(column.clone(), true),
    }
}

/// `a and b`, with the constraints on one condition's status merged: `(T = 'False' or T IS NULL)
/// and (T = 'True' or T = 'False')` is `T = 'False'`, and a comparison of one of `T`'s
/// subfields (false or unknown without the row) drops `T IS NULL`.
pub(super) fn conjoin(a: Tsl, b: Tsl) -> Tsl {
    let parts = match Tsl::and([a, b]) {
        Tsl::And(parts) => parts,
        other => return other,
    };
    let mut masks: Vec<(String, u8)> = Vec::new();
    let mut rows: BTreeSet<String> = BTreeSet::new();
    for part in &parts {
        if let Some((ty, mask)) = status_mask(part) {
            match masks.iter_mut().find(|(t, _)| *t == ty) {
                Some((_, m)) => *m &= mask,
                None => masks.push((ty, mask)),
            }
        } else if let Tsl::Compare(Column::Condition(ty, _), ..) = part {
            rows.insert(ty.clone());
        }
    }
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match status_mask(&part) {
            None => out.push(part),
            Some((ty, _)) => {
                let Some(i) = masks.iter().position(|(t, _)| *t == ty) else {
                    continue; // merged into the first part on `ty`
                };
                let (ty, mut mask) = masks.remove(i);
                if rows.contains(&ty) {
                    mask &= !NULL;
                }
                out.push(status_in(&ty, mask));
            }
        }
    }
    Tsl::and(out)
}

/// The bit of an absent condition in a status mask (the statuses are bits 0..3).
const NULL: u8 = 1 << 3;

/// The statuses (bit `i` for `STATUSES[i]`, [`NULL`] for an absent condition) a part allows, when
/// it only constrains one condition's status.
fn status_mask(part: &Tsl) -> Option<(String, u8)> {
    match part {
        Tsl::Compare(Column::ConditionStatus(ty), Op::Eq, Literal::Str(s)) => {
            let i = STATUSES.iter().position(|x| x == s)?;
            Some((ty.clone(), 1 << i))
        }
        Tsl::IsNull(Column::ConditionStatus(ty), false) => Some((ty.clone(), NULL)),
        Tsl::Or(parts) => {
            let mut acc: Option<(String, u8)> = None;
            for p in parts {
                let (ty, m) = status_mask(p)?;
                match &mut acc {
                    None => acc = Some((ty, m)),
                    Some((t, a)) if *t == ty => *a |= m,
                    Some(_) => return None,
                }
            }
            acc
        }
        _ => None,
    }
}

/// The search for "condition `ty`'s status is in `mask`".
fn status_in(ty: &str, mask: u8) -> Tsl {
    let column = || Column::ConditionStatus(ty.to_string());
    let mut parts: Vec<Tsl> = STATUSES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, s)| Tsl::Compare(column(), Op::Eq, Literal::Str(s.to_string())))
        .collect();
    if mask & NULL != 0 {
        parts.push(Tsl::IsNull(column(), false));
    }
    if mask == ((1 << STATUSES.len()) - 1) | NULL {
        return Tsl::True;
    }
    Tsl::or(parts)
}

/// Where `condition(ty).status == s` is true and false (`""`: the condition is absent).
pub(super) fn status_is(ty: &str, s: &str) -> Sets {
    let column = || Column::ConditionStatus(ty.to_string());
    let one = |s: &str| {
        if s.is_empty() {
            Tsl::IsNull(column(), false)
        } else if STATUSES.contains(&s) {
            Tsl::Compare(column(), Op::Eq, Literal::Str(s.to_string()))
        } else {
            Tsl::False
        }
    };
    let others = STATUSES
        .iter()
        .copied()
        .chain([""])
        .filter(|o| *o != s)
        .map(one);
    Sets::exact(one(s), Tsl::or(others))
}

pub(super) fn compare_op(op: BinaryOp) -> Option<Op> {
    Some(match op {
        BinaryOp::Eq => Op::Eq,
        BinaryOp::Ne => Op::Ne,
        BinaryOp::Lt => Op::Lt,
        BinaryOp::Le => Op::Le,
        BinaryOp::Gt => Op::Gt,
        BinaryOp::Ge => Op::Ge,
        _ => return None,
    })
}

pub(super) fn is_resource(e: &TExpr) -> bool {
    matches!(e.kind, TExprKind::Var(Var::Resource))
}

pub(super) fn is_column(t: &Term) -> bool {
    matches!(
        t,
        Term::Status(_)
            | Term::TimeText(_)
            | Term::ObservedGeneration(_)
            | Term::Generation
            | Term::Label(_)
            | Term::Linear(Linear {
                column: Some(_),
                ..
            })
    )
}

/// A label the search can name (`labels.<key>`: letters, digits and `_`).
pub(super) fn label_term(key: &str) -> Term {
    let ok = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Term::Label(key.to_string())
    } else {
        Term::Other
    }
}

/// A condition type the search can name: `^[A-Z][a-zA-Z0-9]*$`.
pub(super) fn is_condition_type(ty: &str) -> bool {
    let mut bytes = ty.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_uppercase()) && bytes.all(|b| b.is_ascii_alphanumeric())
}

pub(super) fn not_searchable() -> String {
    "the API's search cannot express it (it compares labels, condition statuses, condition \
     times and observed generations, and generation, each with a literal)"
        .to_string()
}

pub(super) fn span_text(source: &str, span: Span) -> String {
    source
        .get(span.start as usize..span.end as usize)
        .unwrap_or(source)
        .to_string()
}
