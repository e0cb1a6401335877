//! The prepared resource: one [`Resource`] laid out for plain loads by the compiled code of one
//! program: `generation`, the string fields, and for each constant name the rules pass to
//! `condition("…")` that condition's fields, with the time fields the rules parse already parsed.
//!
//! Invariant: a [`Prepared`] is filled once per resource (at decode), by the resource's own
//! accessors ([`Resource::condition`]) and the one timestamp parser ([`parse_timestamp`]), so a
//! load from it yields exactly what the interpreter computes from the resource.

use super::abi::Boxed;
use crate::cel::time::parse_timestamp;
use crate::cel::value::{EvalError, Value};
use crate::resource::{Condition, Field, Resource};
use std::sync::Arc;

/// The resource fields read as strings by plain loads, in [`Row::strs`] order.
pub(crate) const RESOURCE_STRS: [&str; 6] =
    ["id", "kind", "name", "href", "created_time", "updated_time"];

/// The condition fields read as strings, in [`CondRow::strs`] order (all but
/// `observed_generation`).
pub(crate) const CONDITION_STRS: [&str; 7] = [
    "type",
    "status",
    "reason",
    "message",
    "created_time",
    "last_updated_time",
    "last_transition_time",
];

/// The index among the time fields (`times`) of a string field that holds a time, if any.
pub(crate) fn resource_time_index(str_idx: usize) -> Option<usize> {
    str_idx.checked_sub(4).filter(|i| *i < 2)
}

/// As [`resource_time_index`], for condition fields.
pub(crate) fn condition_time_index(str_idx: usize) -> Option<usize> {
    str_idx.checked_sub(4).filter(|i| *i < 3)
}

/// A string field: its boxed value, or its error (non-null).
#[repr(C)]
pub(crate) struct StrField {
    pub boxed: Boxed,
    pub err: *const EvalError,
}

/// An int field.
#[repr(C)]
pub(crate) struct IntField {
    pub value: i64,
    pub err: *const EvalError,
}

/// A time field parsed with `timestamp(…)`'s parser: nanoseconds (low, high), or the parse error.
#[repr(C)]
pub(crate) struct TimeField {
    pub nanos: [u64; 2],
    pub err: *const EvalError,
}

/// One condition selected by a constant name.
#[repr(C)]
pub(crate) struct CondRow {
    pub cond: Boxed,
    pub strs: [StrField; 7],
    pub observed_generation: IntField,
    pub times: [TimeField; 3],
}

/// The resource as compiled code reads it.
#[repr(C)]
pub(crate) struct Row {
    pub resource: Boxed,
    pub generation: IntField,
    pub strs: [StrField; 6],
    pub times: [TimeField; 2],
    /// The error of `status.conditions` (then every `condition(…)` fails with it).
    pub conditions_err: *const EvalError,
    pub conds: *const CondRow,
}

/// What a program reads from a resource: filled while lowering, used by [`Prepared::fill`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// Resource string fields, by [`RESOURCE_STRS`] index.
    pub strs: [bool; 6],
    /// Resource time fields to parse.
    pub times: [bool; 2],
    /// Constant condition names, each with the fields read.
    pub conds: Vec<CondNeeds>,
}

/// What a program reads from one condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CondNeeds {
    pub name: Arc<str>,
    pub strs: [bool; 7],
    pub times: [bool; 3],
}

impl Needs {
    /// The slot of `condition(name)`, allocating one for a new name.
    pub(crate) fn cond_slot(&mut self, name: &str) -> usize {
        if let Some(i) = self.conds.iter().position(|c| &*c.name == name) {
            return i;
        }
        self.conds.push(CondNeeds {
            name: Arc::from(name),
            strs: [false; 7],
            times: [false; 3],
        });
        self.conds.len() - 1
    }
}

fn null_err() -> *const EvalError {
    std::ptr::null()
}

fn str_field(f: &Field<Arc<str>>) -> StrField {
    match f {
        Ok(s) => StrField {
            boxed: Boxed::new(Value::String(s.clone())),
            err: null_err(),
        },
        Err(e) => StrField {
            boxed: Boxed::new(Value::Null),
            err: e,
        },
    }
}

fn int_field(f: &Field<i64>) -> IntField {
    match f {
        Ok(v) => IntField {
            value: *v,
            err: null_err(),
        },
        Err(e) => IntField { value: 0, err: e },
    }
}

fn empty_str() -> StrField {
    StrField {
        boxed: Boxed::new(Value::Null),
        err: null_err(),
    }
}

fn empty_time() -> TimeField {
    TimeField {
        nanos: [0, 0],
        err: null_err(),
    }
}

/// A resource prepared for one program's compiled code. Reuse one per thread with
/// [`crate::cel::jit::JitProgram::prepare`] to avoid allocation.
pub struct Prepared {
    pub(crate) row: Row,
    conds: Vec<CondRow>,
    /// Parse errors of time fields (boxed: their addresses are in the row).
    owned: Vec<Box<EvalError>>,
    pub(crate) resource: Option<Arc<Resource>>,
    /// The program it was prepared for (its row layout depends on the program's needs).
    pub(crate) program: u64,
}

// SAFETY: every raw pointer in the row points into `resource` (an `Arc` kept alive here), into
// `conds` or `owned` (heap memory owned here), or into a boxed value's own string; none is written
// through after `fill`.
unsafe impl Send for Prepared {}
// SAFETY: as above; compiled code only reads the row.
unsafe impl Sync for Prepared {}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("resource", &self.resource.as_ref().map(|r| &r.id))
            .finish_non_exhaustive()
    }
}

impl Default for Prepared {
    fn default() -> Self {
        Prepared {
            row: Row {
                resource: Boxed::new(Value::Null),
                generation: IntField {
                    value: 0,
                    err: null_err(),
                },
                strs: std::array::from_fn(|_| empty_str()),
                times: std::array::from_fn(|_| empty_time()),
                conditions_err: null_err(),
                conds: std::ptr::null(),
            },
            conds: Vec::new(),
            owned: Vec::new(),
            resource: None,
            program: 0,
        }
    }
}

impl Prepared {
    /// Fills the row from `resource` with what `needs` says the program reads.
    pub(crate) fn fill(&mut self, resource: &Arc<Resource>, needs: &Needs) {
        self.owned.clear();
        let r = &**resource;
        self.row.resource = Boxed::new(Value::Resource(resource.clone()));
        self.row.generation = int_field(&r.generation);
        let strs = [
            &r.id,
            &r.kind,
            &r.name,
            &r.href,
            &r.created_time,
            &r.updated_time,
        ];
        for (i, f) in strs.iter().enumerate() {
            if needs.strs[i] {
                self.row.strs[i] = str_field(f);
            }
        }
        for (i, f) in [&r.created_time, &r.updated_time].iter().enumerate() {
            if needs.times[i] {
                self.row.times[i] = time_field(f, &mut self.owned);
            }
        }
        self.row.conditions_err = match &r.conditions {
            Ok(_) => null_err(),
            Err(e) => e,
        };
        self.conds.clear();
        for n in &needs.conds {
            let row = match r.condition(&n.name) {
                Ok(c) => cond_row(c, n, &mut self.owned),
                // Unread: `conditions_err` is checked before any condition field.
                Err(_) => cond_row(Condition::zero(), n, &mut self.owned),
            };
            self.conds.push(row);
        }
        self.row.conds = self.conds.as_ptr();
        self.resource = Some(resource.clone());
    }
}

fn time_field(f: &Field<Arc<str>>, owned: &mut Vec<Box<EvalError>>) -> TimeField {
    // A field that failed to decode is never parsed: reading it fails first.
    let Ok(text) = f else {
        return empty_time();
    };
    match parse_timestamp(text) {
        Ok(t) => {
            let n = t.nanos();
            TimeField {
                nanos: [n as u64, ((n as u128) >> 64) as u64],
                err: null_err(),
            }
        }
        Err(e) => {
            let boxed = Box::new(e);
            let err: *const EvalError = &*boxed;
            owned.push(boxed);
            TimeField { nanos: [0, 0], err }
        }
    }
}

fn cond_row(c: Arc<Condition>, needs: &CondNeeds, owned: &mut Vec<Box<EvalError>>) -> CondRow {
    let fields = [
        &c.ty,
        &c.status,
        &c.reason,
        &c.message,
        &c.created_time,
        &c.last_updated_time,
        &c.last_transition_time,
    ];
    let strs = std::array::from_fn(|i| {
        if needs.strs[i] {
            str_field(fields[i])
        } else {
            empty_str()
        }
    });
    let times = std::array::from_fn(|i| {
        if needs.times[i] {
            time_field(fields[4 + i], owned)
        } else {
            empty_time()
        }
    });
    let observed_generation = int_field(&c.observed_generation);
    CondRow {
        cond: Boxed::new(Value::Condition(c)),
        strs,
        observed_generation,
        times,
    }
}
