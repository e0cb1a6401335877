//! The HyperFleet API's `search` language (TSL, Tree Search Language) in the subset the API
//! accepts on a resource list (hyperfleet-api `pkg/db/sql_tsl.go`): the expression tree, its
//! text, and its meaning over a resource as the API's SQL gives it.
//!
//! Takes a search as text ([`parse`]) or as built by the rules' filter derivation; gives the
//! text a request carries ([`Tsl::text_at`]) and whether a resource is listed ([`Tsl::eval`],
//! over any [`Subject`]: the daemon's [`Resource`] records and the fake API's stored resources).
//!
//! Invariants:
//! - meaning is SQL's three-valued logic: a comparison with an absent column or a missing
//!   condition row is unknown (`None`), `not` of unknown is unknown, and a resource is listed
//!   only when the whole search is `Some(true)`;
//! - a time cutoff relative to `now` ([`TimeLit::Cutoff`]) is rounded outward to whole seconds
//!   when it is resolved, so the text carries no fraction and the search keeps at least what
//!   the exact cutoff would;
//! - [`parse`] accepts exactly what the API accepts and refuses with the API's reason what it
//!   refuses (400), so a search the daemon sends the fake API behaves as against the real one.

use crate::cel::host::{ConditionField, Resource, ResourceField};
use crate::cel::time::{Timestamp, format_duration, format_timestamp_utc};
use std::borrow::Cow;
use std::fmt;

mod parse;
pub use parse::{MAX_NESTING, MAX_SEARCH_LEN, TslError, check_round_trip, parse, scoped};

/// A search expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Tsl {
    /// Every resource (no search); only ever at the top, never printed inside an expression.
    True,
    /// No resource; printed as `id IS NULL` (an id is never null).
    False,
    /// Every part holds.
    And(Vec<Tsl>),
    /// Some part holds.
    Or(Vec<Tsl>),
    /// `not (…)`: the API refuses it around a label or a condition.
    Not(Box<Tsl>),
    /// `<column> <op> <literal>`.
    Compare(Column, Op, Literal),
    /// `<column> IS NULL`, or `IS NOT NULL` when `negated`.
    IsNull(Column, bool),
    /// `<column> in [<literal>, …]`.
    In(Column, Vec<Literal>),
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    /// The operator's text.
    pub fn text(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    /// The operator that holds exactly when this one does not (on known values).
    pub fn negated(self) -> Op {
        match self {
            Op::Eq => Op::Ne,
            Op::Ne => Op::Eq,
            Op::Lt => Op::Ge,
            Op::Le => Op::Gt,
            Op::Gt => Op::Le,
            Op::Ge => Op::Lt,
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> Op {
        match self {
            Op::Eq => Op::Eq,
            Op::Ne => Op::Ne,
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
        }
    }

    /// Whether `ordering` (left against right) satisfies the operator.
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Op::Eq => ordering == Equal,
            Op::Ne => ordering != Equal,
            Op::Lt => ordering == Less,
            Op::Le => ordering != Greater,
            Op::Gt => ordering == Greater,
            Op::Ge => ordering != Less,
        }
    }
}

/// A column a search can name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    /// `labels.<key>`: the label's value, NULL when the resource has no such label.
    Label(String),
    /// `status.conditions.<Type>`: the condition's status, NULL without such a condition.
    ConditionStatus(String),
    /// `status.conditions.<Type>.<subfield>`: `last_updated_time`, `last_transition_time` or
    /// `observed_generation`, NULL without such a condition.
    Condition(String, ConditionColumn),
    /// `generation` (numeric literals only).
    Generation,
    /// `created_time`, `updated_time`, `deleted_time` (timestamp literals only).
    Time(TimeColumn),
    /// Another top-level column, compared as text (`id`, `name`, `kind`, `href`, …).
    Text(String),
}

/// A condition subfield a search can compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionColumn {
    /// `last_updated_time`
    LastUpdatedTime,
    /// `last_transition_time`
    LastTransitionTime,
    /// `observed_generation` (an int32)
    ObservedGeneration,
}

impl ConditionColumn {
    /// The subfield's name.
    pub fn name(self) -> &'static str {
        match self {
            ConditionColumn::LastUpdatedTime => "last_updated_time",
            ConditionColumn::LastTransitionTime => "last_transition_time",
            ConditionColumn::ObservedGeneration => "observed_generation",
        }
    }

    /// The object model's field for it.
    pub fn field(self) -> ConditionField {
        match self {
            ConditionColumn::LastUpdatedTime => ConditionField::LastUpdatedTime,
            ConditionColumn::LastTransitionTime => ConditionField::LastTransitionTime,
            ConditionColumn::ObservedGeneration => ConditionField::ObservedGeneration,
        }
    }

    /// The subfield of an object-model field, if a search can compare it.
    pub fn of(field: ConditionField) -> Option<ConditionColumn> {
        Some(match field {
            ConditionField::LastUpdatedTime => ConditionColumn::LastUpdatedTime,
            ConditionField::LastTransitionTime => ConditionColumn::LastTransitionTime,
            ConditionField::ObservedGeneration => ConditionColumn::ObservedGeneration,
            _ => return None,
        })
    }
}

/// A timestamp column of the resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeColumn {
    /// `created_time`
    Created,
    /// `updated_time` (changes on create, PATCH and delete, not on status reports)
    Updated,
    /// `deleted_time`
    Deleted,
}

impl TimeColumn {
    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            TimeColumn::Created => "created_time",
            TimeColumn::Updated => "updated_time",
            TimeColumn::Deleted => "deleted_time",
        }
    }

    /// The object model's field for it.
    pub fn field(self) -> ResourceField {
        match self {
            TimeColumn::Created => ResourceField::CreatedTime,
            TimeColumn::Updated => ResourceField::UpdatedTime,
            TimeColumn::Deleted => ResourceField::DeletedTime,
        }
    }
}

/// A literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `'text'` (a quote or a backslash inside escaped with a backslash).
    Str(String),
    /// A number (TSL numbers are floats).
    Num(f64),
    /// A timestamp, written as a quoted RFC 3339 text.
    Time(TimeLit),
}

/// A timestamp literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeLit {
    /// A fixed instant.
    At(Timestamp),
    /// `now + offset` (nanoseconds, usually negative), resolved per cycle and rounded to a whole
    /// second: up when `up` (for `<`, `<=`: a later cutoff keeps more), else down.
    Cutoff {
        /// Nanoseconds from `now`.
        offset: i128,
        /// Round up to the next whole second, else down.
        up: bool,
    },
}

impl TimeLit {
    /// The instant at `now`.
    pub fn at(self, now: Timestamp) -> Timestamp {
        match self {
            TimeLit::At(t) => t,
            TimeLit::Cutoff { offset, up } => {
                const SEC: i128 = 1_000_000_000;
                let exact = now.nanos().saturating_add(offset);
                let whole = exact.div_euclid(SEC) * SEC;
                let rounded = if up && whole != exact {
                    whole + SEC
                } else {
                    whole
                };
                let bounded = rounded.clamp(Timestamp::MIN.nanos(), Timestamp::MAX.nanos());
                Timestamp::from_nanos(bounded).unwrap_or(Timestamp::MAX)
            }
        }
    }
}

/// A value of a column, as a [`Subject`] hands it over.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    /// A text column, a label or a condition status.
    Text(Cow<'a, str>),
    /// An integer column.
    Int(i64),
    /// A timestamp column.
    Time(Timestamp),
}

/// What a search reads of a resource. `None` is SQL's NULL: no such label, no such condition,
/// no value in the column.
pub trait Subject {
    /// The value of `column`.
    fn cell(&self, column: &Column) -> Option<Cell<'_>>;
}

impl Tsl {
    /// The conjunction of `parts`, flattened, with `True` dropped and `False` absorbing.
    pub fn and(parts: impl IntoIterator<Item = Tsl>) -> Tsl {
        let mut out = Vec::new();
        for part in parts {
            match part {
                Tsl::True => {}
                Tsl::False => return Tsl::False,
                Tsl::And(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        dedup(&mut out);
        match out.len() {
            0 => Tsl::True,
            1 => out.pop().unwrap_or(Tsl::True),
            _ => Tsl::And(out),
        }
    }

    /// The disjunction of `parts`, flattened, with `False` dropped and `True` absorbing.
    pub fn or(parts: impl IntoIterator<Item = Tsl>) -> Tsl {
        let mut out = Vec::new();
        for part in parts {
            match part {
                Tsl::False => {}
                Tsl::True => return Tsl::True,
                Tsl::Or(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        dedup(&mut out);
        match out.len() {
            0 => Tsl::False,
            1 => out.pop().unwrap_or(Tsl::False),
            _ => Tsl::Or(out),
        }
    }

    /// Whether the search keeps `subject` at `now` (which only [`TimeLit::Cutoff`] reads):
    /// `Some(true)` keeps it, `Some(false)` and `None` (SQL's unknown) do not.
    pub fn eval(&self, subject: &impl Subject, now: Timestamp) -> Option<bool> {
        match self {
            Tsl::True => Some(true),
            Tsl::False => Some(false),
            Tsl::And(parts) => {
                let mut result = Some(true);
                for part in parts {
                    match part.eval(subject, now) {
                        Some(false) => return Some(false),
                        None => result = None,
                        Some(true) => {}
                    }
                }
                result
            }
            Tsl::Or(parts) => {
                let mut result = Some(false);
                for part in parts {
                    match part.eval(subject, now) {
                        Some(true) => return Some(true),
                        None => result = None,
                        Some(false) => {}
                    }
                }
                result
            }
            Tsl::Not(inner) => inner.eval(subject, now).map(|b| !b),
            Tsl::IsNull(column, negated) => Some(subject.cell(column).is_none() != *negated),
            Tsl::Compare(column, op, literal) => {
                let cell = subject.cell(column)?;
                compare(&cell, literal, now).map(|ordering| op.holds(ordering))
            }
            Tsl::In(column, literals) => {
                let cell = subject.cell(column)?;
                let mut result = Some(false);
                for literal in literals {
                    match compare(&cell, literal, now) {
                        Some(std::cmp::Ordering::Equal) => return Some(true),
                        None => result = None,
                        Some(_) => {}
                    }
                }
                result
            }
        }
    }

    /// The search's text at `now` (cutoffs resolved), as a request carries it; `None` for
    /// [`Tsl::True`] (no search).
    pub fn text_at(&self, now: Timestamp) -> Option<String> {
        if *self == Tsl::True {
            return None;
        }
        let mut out = String::new();
        self.write(&mut out, Some(now), false);
        Some(out)
    }

    /// The longest text the search can have at any `now` (cutoffs take a fixed width).
    pub fn max_text_len(&self) -> usize {
        self.text_at(Timestamp::UNIX_EPOCH).map_or(0, |t| t.len())
    }

    fn write(&self, out: &mut String, now: Option<Timestamp>, nested: bool) {
        use std::fmt::Write as _;
        let group = |out: &mut String, parts: &[Tsl], sep: &str| {
            if nested {
                out.push('(');
            }
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                part.write(out, now, true);
            }
            if nested {
                out.push(')');
            }
        };
        match self {
            Tsl::True => out.push_str("id IS NOT NULL"),
            Tsl::False => out.push_str("id IS NULL"),
            Tsl::And(parts) => group(out, parts, " and "),
            Tsl::Or(parts) => group(out, parts, " or "),
            Tsl::Not(inner) => {
                // `not` binds tighter than a comparison (`not a = 1` is `(not a) = 1`), so its
                // operand is always parenthesised.
                out.push_str("not (");
                inner.write(out, now, false);
                out.push(')');
            }
            Tsl::IsNull(column, negated) => {
                let _ = write!(out, "{column} IS ");
                out.push_str(if *negated { "NOT NULL" } else { "NULL" });
            }
            Tsl::Compare(column, op, literal) => {
                let _ = write!(out, "{column} {} ", op.text());
                literal.write(out, now);
            }
            Tsl::In(column, literals) => {
                let _ = write!(out, "{column} in [");
                for (i, literal) in literals.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    literal.write(out, now);
                }
                out.push(']');
            }
        }
    }
}

/// Drops repeated parts, keeping the first of each.
fn dedup(parts: &mut Vec<Tsl>) {
    let mut i = 0;
    while i < parts.len() {
        if parts[..i].contains(&parts[i]) {
            parts.remove(i);
        } else {
            i += 1;
        }
    }
}

/// A cell against a literal: `None` when SQL could not compare them.
fn compare(cell: &Cell<'_>, literal: &Literal, now: Timestamp) -> Option<std::cmp::Ordering> {
    match (cell, literal) {
        (Cell::Text(a), Literal::Str(b)) => Some(a.as_ref().cmp(b.as_str())),
        (Cell::Int(a), Literal::Num(b)) => (*a as f64).partial_cmp(b),
        (Cell::Time(a), Literal::Time(b)) => Some(a.cmp(&b.at(now))),
        _ => None,
    }
}

/// The search's text with cutoffs written relative to `now` (`'now - 30m0s'`): for people
/// (`sentinel check`), not for requests.
impl fmt::Display for Tsl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write(&mut out, None, false);
        f.write_str(&out)
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Column::Label(key) => write!(f, "labels.{key}"),
            Column::ConditionStatus(ty) => write!(f, "status.conditions.{ty}"),
            Column::Condition(ty, sub) => write!(f, "status.conditions.{ty}.{}", sub.name()),
            Column::Generation => f.write_str("generation"),
            Column::Time(t) => f.write_str(t.name()),
            Column::Text(name) => f.write_str(name),
        }
    }
}

impl Literal {
    fn write(&self, out: &mut String, now: Option<Timestamp>) {
        use std::fmt::Write as _;
        match self {
            Literal::Str(s) => {
                // TSL escapes with a backslash (`\'`, `\\`); a doubled quote would end the text.
                out.push('\'');
                for c in s.chars() {
                    if matches!(c, '\'' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('\'');
            }
            Literal::Num(n) => {
                if n.fract() == 0.0 && n.abs() < 1e15 {
                    let _ = write!(out, "{}", *n as i64);
                } else {
                    let _ = write!(out, "{n}");
                }
            }
            Literal::Time(t) => match (t, now) {
                (TimeLit::At(at), _) => {
                    let _ = write!(out, "'{}'", format_timestamp_utc(*at));
                }
                (cutoff, Some(now)) => {
                    let _ = write!(out, "'{}'", format_timestamp_utc(cutoff.at(now)));
                }
                (TimeLit::Cutoff { offset, .. }, None) => {
                    let sign = if *offset < 0 { '-' } else { '+' };
                    let d = crate::cel::time::Duration::from_nanos(offset.abs())
                        .map(format_duration)
                        .unwrap_or_else(|_| format!("{}ns", offset.abs()));
                    let _ = write!(out, "'now {sign} {d}'");
                }
            },
        }
    }
}

/// The daemon's records as the API's rows: a condition that is absent (the zero condition) is
/// a missing row, a time that does not parse and a field that failed to decode are NULL.
impl Subject for Resource {
    fn cell(&self, column: &Column) -> Option<Cell<'_>> {
        match column {
            Column::Label(key) => {
                let labels = self.labels().as_ref().ok()?;
                match labels.get_str(key)? {
                    crate::cel::value::Value::String(s) => Some(Cell::Text(Cow::Borrowed(s))),
                    _ => None,
                }
            }
            Column::ConditionStatus(ty) | Column::Condition(ty, _) => {
                let condition = self.condition(ty).ok()?;
                // `condition(…)` gives the zero condition, typed "", for an absent one.
                if condition.text(ConditionField::Type)?.ok()?.as_str() != ty {
                    return None;
                }
                match column {
                    Column::Condition(_, ConditionColumn::ObservedGeneration) => {
                        condition.generation().as_ref().ok().map(|g| Cell::Int(*g))
                    }
                    Column::Condition(_, sub) => {
                        let time = condition.time(sub.field())?.ok()?;
                        time.at.map(Cell::Time)
                    }
                    _ => {
                        let status = condition.text(ConditionField::Status)?.ok()?;
                        Some(Cell::Text(Cow::Owned(status.as_str().to_string())))
                    }
                }
            }
            Column::Generation => self.generation().as_ref().ok().map(|g| Cell::Int(*g)),
            Column::Time(t) => self.time(t.field())?.ok()?.at.map(Cell::Time),
            Column::Text(name) => {
                let def = crate::cel::host::resource_field(name)?;
                let text = self.text(def.field)?.ok()?.as_str();
                (!text.is_empty()).then_some(Cell::Text(Cow::Borrowed(text)))
            }
        }
    }
}
