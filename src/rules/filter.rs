//! The server-side filter derived from the rules: a search (TSL) that every resource the
//! message_decision could publish satisfies, so the API serves only what can matter.
//!
//! Takes a compiled [`Program`]; gives a [`Filter`]: the `sound` search (keeps every resource the
//! rules could publish), the `tight` one (the same with the parts the API cannot express left to
//! a periodic full sweep) and, for each such part, the param it is in and why ([`Blocker`]).
//!
//! How: the typed tree of the result, with params inlined, is read as two sets of resources,
//! where it is `true` and where it is `false` (`Sets`). Each comparison of a field with a
//! constant is a search atom; `&&`, `||`, `!` and `?:` combine the sets exactly as CEL does
//! (an error is neither `true` nor `false`, as SQL's NULL is neither). A time compared with
//! `now` becomes a cutoff resolved at each cycle ([`TimeLit::Cutoff`](crate::tsl::TimeLit::Cutoff)).
//!
//! Invariants:
//! - soundness: for every resource `r` and every `now`, if the rules publish `r` at `now` then
//!   `sound.eval(r, now) == Some(true)`; the same holds for `tight` unless one of the
//!   [`Filter::swept`] parts is what makes the result true;
//! - a part the API cannot express is never guessed: it is `true` in `sound`, and either `true`
//!   (inside a conjunction) or left out and named (inside a disjunction) in `tight`.
//!
//! Assumptions, from the API's contract: a condition's status is `True`, `False` or `Unknown`;
//! a condition is present in the resource's `status.conditions` exactly when the API has its row.

use super::decision::Program;
use super::origin::Origin;
use crate::cel::ast::BinaryOp;
use crate::cel::host::Resource;
use crate::cel::host::{ConditionField, ResourceField, condition_field, resource_field};
use crate::cel::time::Timestamp;
use crate::cel::typed::{Builtin, TExpr, TExprKind, Var};
use crate::cel::value::Value;
use crate::tsl::{Column, ConditionColumn, Literal, Op, TimeColumn, Tsl};
use std::collections::BTreeSet;
use std::sync::Arc;

mod atoms;
mod probe;
use atoms::{
    compare_op, conjoin, is_column, is_condition_type, is_resource, label_term, not_searchable,
    span_text, status_is, time_atom,
};
pub use probe::{Counterexample, counterexample};

/// The statuses a condition can have (the API refuses others).
const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// A part of the rules the API's search cannot express.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocker {
    /// Where it is: `message_decision.params[4] "generation_mismatch"` or
    /// `message_decision.result` (its param's name, when it is in a param:
    /// [`Origin::param`]).
    pub origin: Origin,
    /// The source text of the part.
    pub source: String,
    /// Why the search cannot express it.
    pub reason: String,
}

/// The searches derived from a program.
#[derive(Clone, Debug)]
pub struct Filter {
    /// Keeps every resource the rules could publish.
    pub sound: Tsl,
    /// `sound` without the parts of [`Filter::swept`]: what a daemon with a full sweep sends.
    pub tight: Tsl,
    /// The parts `tight` leaves to the full sweep: a resource that only these make due is
    /// listed (and published) by the next unfiltered cycle only.
    pub swept: Vec<Blocker>,
    /// The parts that make `sound` (and `tight`) keep everything.
    pub unfiltered: Vec<Blocker>,
}

impl Filter {
    /// Whether `tight` misses anything `sound` keeps (a full sweep is needed to use it).
    pub fn needs_sweep(&self) -> bool {
        !self.swept.is_empty()
    }
}

/// The soundness of the derivation on one program, as the `filter` fuzz target and its
/// regression test check it: if the rules publish `resource` at `now`, the sound filter keeps
/// it, and so does the tight one when it needs no sweep; and no resource built from the
/// boundary values (`probes` of them) is published and left out.
pub fn check_soundness(
    program: &Program,
    resource: &Arc<Resource>,
    now: Timestamp,
    probes: usize,
) -> Result<(), String> {
    let filter = derive(program);
    let mut searches = vec![("sound", &filter.sound)];
    if !filter.needs_sweep() {
        searches.push(("tight", &filter.tight));
    }
    let publish = program.interpret(resource, now, &mut Vec::new()).publish;
    for (name, search) in searches {
        if publish && search.eval(resource.as_ref(), now) != Some(true) {
            return Err(format!(
                "the {name} filter {search} leaves out the input resource"
            ));
        }
        if let Some(c) = counterexample(program, search, now, probes, 1) {
            return Err(format!(
                "the {name} filter {search} leaves out {}",
                c.resource
            ));
        }
    }
    Ok(())
}

/// [`check_soundness`] of a fuzz input at 2025-10-21T12:00:00Z with 64 probes: the bytes before
/// the first NUL are the rules, one param per line (`p0`, `p1`, …, at most 8) and the last line
/// the result; the bytes after it a resource's JSON text. Input that is not UTF-8 or rules that
/// do not compile pass.
pub fn check_soundness_of_input(data: &[u8]) -> Result<(), String> {
    use super::decision::{DecisionSource, ParamSource};
    let (rule, json) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let (Ok(rule), Ok(json)) = (std::str::from_utf8(rule), std::str::from_utf8(json)) else {
        return Ok(());
    };
    let mut lines: Vec<&str> = rule.split('\n').take(9).collect();
    let result = lines.pop().unwrap_or("true").to_string();
    let params = lines
        .iter()
        .enumerate()
        .map(|(i, expr)| ParamSource {
            name: format!("p{i}"),
            expr: expr.to_string(),
        })
        .collect();
    let Ok(program) = Program::compile(&DecisionSource { params, result }) else {
        return Ok(());
    };
    let now =
        crate::cel::time::parse_timestamp("2025-10-21T12:00:00Z").map_err(|e| e.message.clone())?;
    let resource = Arc::new(Resource::from_text(json));
    check_soundness(&program, &resource, now, 64)
}

/// Derives the filter of `program`.
pub fn derive(program: &Program) -> Filter {
    let mut d = Deriver {
        program,
        memo: vec![None; program.params.len()],
        origin: None,
        blockers: Vec::new(),
    };
    let sets = d.sets(&program.result);
    let Approx { sound, tight } = sets.t;
    let pick = |ids: &BTreeSet<usize>| ids.iter().map(|&i| d.blockers[i].clone()).collect();
    match tight {
        Tight::Expr(tight, dropped) => Filter {
            unfiltered: if tight == Tsl::True {
                pick(&dropped)
            } else {
                Vec::new()
            },
            swept: if tight == Tsl::True {
                Vec::new()
            } else {
                pick(&dropped)
            },
            sound,
            tight,
        },
        Tight::Blocked(ids) => Filter {
            sound,
            tight: Tsl::True,
            swept: Vec::new(),
            unfiltered: pick(&ids),
        },
    }
}

/// An approximation of a set of resources from above: `sound` holds every member; `tight`
/// too, except members only parts it names (blocked and left out) account for.
#[derive(Clone, Debug)]
struct Approx {
    sound: Tsl,
    tight: Tight,
}

#[derive(Clone, Debug)]
enum Tight {
    /// A search, and the blocked parts it left out.
    Expr(Tsl, BTreeSet<usize>),
    /// Nothing but blocked parts.
    Blocked(BTreeSet<usize>),
}

impl Approx {
    fn exact(tsl: Tsl) -> Approx {
        Approx {
            sound: tsl.clone(),
            tight: Tight::Expr(tsl, BTreeSet::new()),
        }
    }

    fn blocked(id: usize) -> Approx {
        Approx {
            sound: Tsl::True,
            tight: Tight::Blocked(BTreeSet::from([id])),
        }
    }

    fn and(a: Approx, b: Approx) -> Approx {
        let tight = match (a.tight, b.tight) {
            (Tight::Expr(x, mut dx), Tight::Expr(y, dy)) => {
                dx.extend(dy);
                Tight::Expr(conjoin(x, y), dx)
            }
            // A blocked part of a conjunction is `true`: sound, and nothing is left out.
            (Tight::Expr(x, d), Tight::Blocked(_)) | (Tight::Blocked(_), Tight::Expr(x, d)) => {
                Tight::Expr(x, d)
            }
            (Tight::Blocked(mut x), Tight::Blocked(y)) => {
                x.extend(y);
                Tight::Blocked(x)
            }
        };
        Approx {
            sound: conjoin(a.sound, b.sound),
            tight,
        }
    }

    fn or(a: Approx, b: Approx) -> Approx {
        let tight = match (a.tight, b.tight) {
            (Tight::Expr(x, mut dx), Tight::Expr(y, dy)) => {
                dx.extend(dy);
                Tight::Expr(Tsl::or([x, y]), dx)
            }
            // A blocked part of a disjunction is left out, and named.
            (Tight::Expr(x, mut d), Tight::Blocked(b))
            | (Tight::Blocked(b), Tight::Expr(x, mut d)) => {
                if x != Tsl::True {
                    d.extend(b);
                }
                Tight::Expr(x, d)
            }
            (Tight::Blocked(mut x), Tight::Blocked(y)) => {
                x.extend(y);
                Tight::Blocked(x)
            }
        };
        Approx {
            sound: Tsl::or([a.sound, b.sound]),
            tight,
        }
    }
}

/// Where a boolean expression is `true` and where it is `false` (an error is in neither).
#[derive(Clone, Debug)]
struct Sets {
    t: Approx,
    f: Approx,
}

impl Sets {
    fn exact(t: Tsl, f: Tsl) -> Sets {
        Sets {
            t: Approx::exact(t),
            f: Approx::exact(f),
        }
    }

    fn constant(b: bool) -> Sets {
        let (t, f) = if b {
            (Tsl::True, Tsl::False)
        } else {
            (Tsl::False, Tsl::True)
        };
        Sets::exact(t, f)
    }

    fn not(self) -> Sets {
        Sets {
            t: self.f,
            f: self.t,
        }
    }

    fn and(a: Sets, b: Sets) -> Sets {
        Sets {
            t: Approx::and(a.t, b.t),
            f: Approx::or(a.f, b.f),
        }
    }

    fn or(a: Sets, b: Sets) -> Sets {
        Sets {
            t: Approx::or(a.t, b.t),
            f: Approx::and(a.f, b.f),
        }
    }

    fn cond(c: Sets, x: Sets, y: Sets) -> Sets {
        let branch = |ct: Approx, cf: Approx, xs: Approx, ys: Approx| {
            Approx::or(Approx::and(ct, xs), Approx::and(cf, ys))
        };
        Sets {
            t: branch(c.t.clone(), c.f.clone(), x.t, y.t),
            f: branch(c.t, c.f, x.f, y.f),
        }
    }
}

/// What a non-boolean expression is, as far as the search can tell.
#[derive(Clone, Debug)]
enum Term {
    /// A constant.
    Const(Value),
    /// `condition("T").status`
    Status(String),
    /// A time's text: `condition("T").<time>` (`""` without the condition) or
    /// `resource.created_time`, `resource.updated_time`.
    TimeText(Column),
    /// `condition("T").observed_generation`: 0 without the condition.
    ObservedGeneration(String),
    /// `resource.generation`
    Generation,
    /// `resource.labels["k"]` (an error without the label)
    Label(String),
    /// A timestamp (`kind` 1) or a duration (`kind` 0), linear in one time column and `now`.
    Linear(Linear),
    /// Anything else.
    Other,
}

/// `column·k + now·n + c` nanoseconds, with `k, n` in -1..=1.
#[derive(Clone, Debug, PartialEq)]
struct Linear {
    column: Option<(Column, i8)>,
    now: i8,
    c: i128,
    /// Whether the value is a timestamp (else a duration).
    timestamp: bool,
}

impl Linear {
    fn constant(c: i128, timestamp: bool) -> Linear {
        Linear {
            column: None,
            now: 0,
            c,
            timestamp,
        }
    }

    /// `self + sign·other`, when it stays within the form.
    fn combine(self, other: Linear, sign: i8) -> Option<Linear> {
        let timestamp = match (self.timestamp, other.timestamp, sign) {
            (true, false, _) => true,
            (false, true, 1) => true,
            (true, true, -1) => false,
            (false, false, _) => false,
            _ => return None,
        };
        let column = match (self.column, other.column) {
            (None, None) => None,
            (Some(a), None) => Some(a),
            (None, Some((col, k))) => Some((col, k * sign)),
            (Some((a, k)), Some((b, l))) if a == b => {
                let sum = k + l * sign;
                (sum != 0).then_some((a, sum))
            }
            _ => return None,
        };
        if column.as_ref().is_some_and(|(_, k)| k.abs() > 1) {
            return None;
        }
        let now = self.now + other.now * sign;
        if now.abs() > 1 {
            return None;
        }
        Some(Linear {
            column,
            now,
            c: self.c.checked_add(other.c.checked_mul(i128::from(sign))?)?,
            timestamp,
        })
    }
}

struct Deriver<'a> {
    program: &'a Program,
    memo: Vec<Option<Sets>>,
    /// The param being read (`None`: the result).
    origin: Option<usize>,
    blockers: Vec<Blocker>,
}

impl Deriver<'_> {
    fn block(&mut self, e: &TExpr, reason: String) -> Sets {
        let (origin, source) = match self.origin {
            Some(index) => {
                let p = &self.program.params[index];
                let name = p.name.clone();
                (Origin::Param { index, name }, span_text(&p.source, e.span))
            }
            None => (
                Origin::Result,
                span_text(&self.program.result_source, e.span),
            ),
        };
        let blocker = Blocker {
            origin,
            source,
            reason,
        };
        let id = match self.blockers.iter().position(|b| *b == blocker) {
            Some(id) => id,
            None => {
                self.blockers.push(blocker);
                self.blockers.len() - 1
            }
        };
        Sets {
            t: Approx::blocked(id),
            f: Approx::blocked(id),
        }
    }

    /// Reads param `i` with itself as the origin of what blocks.
    fn in_param<T>(&mut self, i: usize, read: impl FnOnce(&mut Self, &TExpr) -> T) -> T {
        let outer = self.origin.replace(i);
        let program = self.program;
        let out = read(self, &program.params[i].expr);
        self.origin = outer;
        out
    }

    fn sets(&mut self, e: &TExpr) -> Sets {
        match &e.kind {
            TExprKind::Const(Value::Bool(b)) => Sets::constant(*b),
            TExprKind::Var(Var::Slot(i)) if *i < self.program.params.len() => {
                if let Some(sets) = &self.memo[*i] {
                    return sets.clone();
                }
                let sets = self.in_param(*i, |d, expr| d.sets(expr));
                self.memo[*i] = Some(sets.clone());
                sets
            }
            TExprKind::Not(a) => self.sets(a).not(),
            TExprKind::And(a, b) => {
                let a = self.sets(a);
                Sets::and(a, self.sets(b))
            }
            TExprKind::Or(a, b) => {
                let a = self.sets(a);
                Sets::or(a, self.sets(b))
            }
            TExprKind::Cond(c, x, y) => {
                let c = self.sets(c);
                let x = self.sets(x);
                Sets::cond(c, x, self.sets(y))
            }
            TExprKind::Binary(op, a, b) => match compare_op(*op) {
                Some(cmp) => self.compare(e, *op, cmp, a, b),
                None if *op == BinaryOp::In => self.membership(e, a, b),
                None => self.block(e, not_searchable()),
            },
            _ => self.block(e, not_searchable()),
        }
    }

    fn term(&mut self, e: &TExpr) -> Term {
        match &e.kind {
            TExprKind::Const(Value::Timestamp(t)) => {
                Term::Linear(Linear::constant(t.nanos(), true))
            }
            TExprKind::Const(Value::Duration(d)) => {
                Term::Linear(Linear::constant(d.nanos(), false))
            }
            TExprKind::Const(v) => Term::Const(v.clone()),
            TExprKind::Var(Var::Now) => Term::Linear(Linear {
                column: None,
                now: 1,
                c: 0,
                timestamp: true,
            }),
            TExprKind::Var(Var::Slot(i)) if *i < self.program.params.len() => {
                self.in_param(*i, |d, expr| d.term(expr))
            }
            TExprKind::Select(inner, field) => self.select(inner, &field.name),
            TExprKind::Index(inner, key) => match (&inner.kind, &key.kind) {
                (TExprKind::Select(resource, labels), TExprKind::Const(Value::String(k)))
                    if is_resource(resource) && &*labels.name == "labels" =>
                {
                    label_term(k)
                }
                _ => Term::Other,
            },
            TExprKind::Call(Builtin::ToTimestamp, args) if args.len() == 1 => {
                let Term::TimeText(column) = self.term(&args[0]) else {
                    return Term::Other;
                };
                Term::Linear(Linear {
                    column: Some((column, 1)),
                    now: 0,
                    c: 0,
                    timestamp: true,
                })
            }
            TExprKind::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), a, b) => {
                let sign = if *op == BinaryOp::Add { 1 } else { -1 };
                match (self.term(a), self.term(b)) {
                    (Term::Linear(x), Term::Linear(y)) => {
                        x.combine(y, sign).map_or(Term::Other, Term::Linear)
                    }
                    _ => Term::Other,
                }
            }
            TExprKind::Neg(a) => match self.term(a) {
                Term::Linear(x) if !x.timestamp => Linear::constant(0, false)
                    .combine(x, -1)
                    .map_or(Term::Other, Term::Linear),
                _ => Term::Other,
            },
            _ => Term::Other,
        }
    }

    fn select(&mut self, inner: &TExpr, name: &str) -> Term {
        if is_resource(inner) {
            return match resource_field(name).map(|d| d.field) {
                Some(ResourceField::Generation) => Term::Generation,
                Some(ResourceField::CreatedTime) => {
                    Term::TimeText(Column::Time(TimeColumn::Created))
                }
                Some(ResourceField::UpdatedTime) => {
                    Term::TimeText(Column::Time(TimeColumn::Updated))
                }
                _ => Term::Other,
            };
        }
        if let TExprKind::Select(resource, labels) = &inner.kind
            && is_resource(resource)
            && &*labels.name == "labels"
        {
            return label_term(name);
        }
        let TExprKind::Call(Builtin::Condition, args) = &inner.kind else {
            return Term::Other;
        };
        let [arg] = args.as_slice() else {
            return Term::Other;
        };
        let TExprKind::Const(Value::String(ty)) = &arg.kind else {
            return Term::Other;
        };
        if !is_condition_type(ty) {
            return Term::Other;
        }
        let ty = ty.to_string();
        match condition_field(name).map(|d| d.field) {
            Some(ConditionField::Status) => Term::Status(ty),
            Some(ConditionField::ObservedGeneration) => Term::ObservedGeneration(ty),
            Some(f) => match ConditionColumn::of(f) {
                Some(sub) => Term::TimeText(Column::Condition(ty, sub)),
                None => Term::Other,
            },
            None => Term::Other,
        }
    }

    fn compare(&mut self, e: &TExpr, binary: BinaryOp, op: Op, a: &TExpr, b: &TExpr) -> Sets {
        // `x == true`, `x != false`: the boolean itself.
        for (x, y, op) in [(a, b, op), (b, a, op)] {
            if let TExprKind::Const(Value::Bool(v)) = y.kind
                && matches!(op, Op::Eq | Op::Ne)
                && x.ty.assignable_to(&crate::cel::types::Type::Bool)
                && !matches!(x.kind, TExprKind::Const(_))
            {
                let sets = self.sets(x);
                return if v == (op == Op::Eq) {
                    sets
                } else {
                    sets.not()
                };
            }
        }
        let (left, right) = (self.term(a), self.term(b));
        let (term, op, constant) = match (left, right) {
            (Term::Linear(x), Term::Linear(y)) => {
                return match x.combine(y, -1) {
                    Some(diff) => self.linear(e, op, diff),
                    None => self.block(e, "compares two times in a way the search cannot".into()),
                };
            }
            (Term::Const(x), Term::Const(y)) => {
                return match crate::cel::ops::compare(binary, &x, &y) {
                    Ok(Value::Bool(b)) => Sets::constant(b),
                    // An error: neither true nor false.
                    _ => Sets::exact(Tsl::False, Tsl::False),
                };
            }
            (Term::Const(c), t) => (t, op.flipped(), c),
            (t, Term::Const(c)) => (t, op, c),
            (x, y) if is_column(&x) && is_column(&y) => {
                return self.block(
                    e,
                    "compares two fields of the resource: the API's search compares a field \
                     only with a literal"
                        .into(),
                );
            }
            _ => return self.block(e, not_searchable()),
        };
        match (term, constant) {
            (Term::Status(ty), Value::String(s)) if matches!(op, Op::Eq | Op::Ne) => {
                let sets = status_is(&ty, &s);
                if op == Op::Eq { sets } else { sets.not() }
            }
            (Term::TimeText(Column::Condition(ty, _)), Value::String(s))
                if s.is_empty() && matches!(op, Op::Eq | Op::Ne) =>
            {
                // The time's text is "" exactly without the condition (the API requires it).
                let sets = status_is(&ty, "");
                if op == Op::Eq { sets } else { sets.not() }
            }
            (Term::ObservedGeneration(ty), Value::Int(n)) if i32::try_from(n).is_ok() => {
                let side = |op: Op| {
                    let column = Column::Condition(ty.clone(), ConditionColumn::ObservedGeneration);
                    let row = Tsl::Compare(column, op, Literal::Num(n as f64));
                    // Without the condition, `observed_generation` reads 0.
                    let absent = op.holds(0.cmp(&n));
                    if absent {
                        Tsl::or([row, Tsl::IsNull(Column::ConditionStatus(ty.clone()), false)])
                    } else {
                        row
                    }
                };
                Sets::exact(side(op), side(op.negated()))
            }
            (Term::Generation, Value::Int(n)) if n.unsigned_abs() < 1 << 53 => {
                let side = |op: Op| Tsl::Compare(Column::Generation, op, Literal::Num(n as f64));
                Sets::exact(side(op), side(op.negated()))
            }
            (Term::Label(key), Value::String(v)) if matches!(op, Op::Eq | Op::Ne) => {
                // A missing label is an error in CEL and NULL in SQL: in neither set.
                let side = |op: Op| {
                    Tsl::Compare(Column::Label(key.clone()), op, Literal::Str(v.to_string()))
                };
                Sets::exact(side(op), side(op.negated()))
            }
            _ => self.block(e, not_searchable()),
        }
    }

    /// `x in [..]` of a status or a label in a constant list: one equality per element.
    fn membership(&mut self, e: &TExpr, a: &TExpr, b: &TExpr) -> Sets {
        let items: Vec<Value> = match &b.kind {
            TExprKind::Const(Value::List(items)) => items.to_vec(),
            TExprKind::List(items) => {
                let mut values = Vec::new();
                for item in items {
                    let TExprKind::Const(v) = &item.kind else {
                        return self.block(e, not_searchable());
                    };
                    values.push(v.clone());
                }
                values
            }
            _ => return self.block(e, not_searchable()),
        };
        let term = self.term(a);
        let mut sets = Sets::constant(false);
        for item in items {
            let one = match (&term, &item) {
                (Term::Status(ty), Value::String(s)) => status_is(ty, s),
                (Term::Label(key), Value::String(v)) => {
                    let side = |op| {
                        Tsl::Compare(Column::Label(key.clone()), op, Literal::Str(v.to_string()))
                    };
                    Sets::exact(side(Op::Eq), side(Op::Ne))
                }
                _ => return self.block(e, not_searchable()),
            };
            sets = Sets::or(sets, one);
        }
        sets
    }

    /// `diff op 0` for `diff = column·k + now·n + c`.
    fn linear(&mut self, e: &TExpr, op: Op, diff: Linear) -> Sets {
        match diff.column {
            None if diff.now == 0 => Sets::constant(op.holds(diff.c.cmp(&0))),
            // Depends on `now` only: the same for every resource of a cycle.
            None => Sets {
                t: Approx::exact(Tsl::True),
                f: Approx::exact(Tsl::True),
            },
            Some((column, k)) if diff.now == -k || diff.now == 0 => {
                // k·(column − n·now) + c op 0  ⇔  column op' now·n − c/k.
                let (op, offset) = if k == 1 {
                    (op, -diff.c)
                } else {
                    (op.flipped(), diff.c)
                };
                let relative = diff.now != 0;
                let side = |op: Op| time_atom(&column, op, offset, relative);
                Sets::exact(side(op), side(op.negated()))
            }
            Some(_) => self.block(e, "compares a time with a sum of times".into()),
        }
    }
}

#[cfg(test)]
mod tests;
