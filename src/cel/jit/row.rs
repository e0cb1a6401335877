//! The prepared resource: one [`Resource`] laid out for the compiled code of one program as an
//! array of 32-byte [`Slot`]s, one per field the program reads, read with plain loads:
//! `resource`, `resource.generation`, its string fields, `condition("<constant>")` and that
//! condition's fields, and the time fields the rules pass to `timestamp(…)`, already parsed.
//!
//! Invariant: a [`Prepared`] is filled once per resource (at decode), by the resource's own
//! accessors ([`Resource::condition`], [`Resource::text`], …, which decode a field outside the
//! resource's projection on first read) and the one timestamp parser ([`timestamp_from_string`]), so a
//! load from it yields exactly what the interpreter computes from the resource. The slots are
//! named by the fields of the schema ([`crate::cel::host::RESOURCE_SCHEMA`]), never by position.

use super::abi::Boxed;
use crate::cel::host::{
    Condition, ConditionField, EMPTY, Field, Resource, ResourceField, TextField, TextRef, Time,
    TimeField,
};
use crate::cel::time::timestamp_from_string;
use crate::cel::value::{EvalError, Value};
use std::sync::{Arc, LazyLock};

/// What one slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FieldKey {
    /// `resource`: `boxed`.
    Resource,
    /// `resource.generation`: `w[0]`, `err`.
    Generation,
    /// A text field of the resource: see [`Slot`].
    ResourceStr(ResourceField),
    /// That field parsed as a timestamp: `w` nanoseconds, `err`.
    ResourceTime(ResourceField),
    /// `condition(<name #c>)`: `boxed`, `err` (the resource's conditions error).
    Cond(usize),
    /// A text field of constant condition `c`.
    CondStr(usize, ConditionField),
    /// That field parsed as a timestamp.
    CondTime(usize, ConditionField),
    /// `observed_generation` of constant condition `c`.
    CondGeneration(usize),
}

/// One field as compiled code reads it. For strings `w[0]` is the length in bytes and `w[1]`
/// the first 8 bytes (zero-padded), so comparing with a short constant needs no pointer chase;
/// `boxed` is the value for helpers. `err` is non-null when reading the field fails.
#[repr(C)]
pub(crate) struct Slot {
    pub w: [u64; 2],
    pub err: *const EvalError,
    pub boxed: *const Boxed,
}

/// The size of a slot: compiled code addresses slot `i` at `row + i * SLOT_SIZE`.
pub(crate) const SLOT_SIZE: usize = std::mem::size_of::<Slot>();

/// What a program reads from a resource: a slot per field, assigned while lowering.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// The field of each slot.
    pub slots: Vec<FieldKey>,
    /// Constant condition names, by index.
    pub conds: Vec<Arc<str>>,
    /// How many slots hold a box (counted as slots are added, not per fill).
    boxes: usize,
}

impl Needs {
    /// The slot holding `key`, allocating it on first use.
    pub(crate) fn slot(&mut self, key: FieldKey) -> usize {
        match self.slots.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                self.boxes += usize::from(key.is_boxed());
                self.slots.push(key);
                self.slots.len() - 1
            }
        }
    }

    /// The index of constant condition name `name`.
    pub(crate) fn cond(&mut self, name: &str) -> usize {
        match self.conds.iter().position(|c| &**c == name) {
            Some(i) => i,
            None => {
                self.conds.push(Arc::from(name));
                self.conds.len() - 1
            }
        }
    }
}

impl FieldKey {
    /// Whether the slot of this field holds a box.
    fn is_boxed(self) -> bool {
        matches!(
            self,
            FieldKey::Resource
                | FieldKey::ResourceStr(_)
                | FieldKey::Cond(_)
                | FieldKey::CondStr(..)
        )
    }
}

/// A resource prepared for one program's compiled code. Reuse one per thread with
/// [`crate::cel::jit::JitProgram::prepare`] to avoid allocation.
#[derive(Default)]
pub struct Prepared {
    pub(crate) slots: Vec<Slot>,
    /// The boxed values the slots point to (capacity reserved before filling: never moves).
    boxes: Vec<Boxed>,
    /// Parse errors of time fields (boxed: their addresses are in the slots).
    #[allow(clippy::vec_box)]
    owned: Vec<Box<EvalError>>,
    /// The parse error of an empty time (a condition not reported yet: common), kept across
    /// fills so that preparing such a resource does not allocate.
    empty_time_err: Option<Box<EvalError>>,
    conds: Vec<Field<Arc<Condition>>>,
    pub(crate) resource: Option<Arc<Resource>>,
    /// The program it was prepared for (the slots depend on the program).
    pub(crate) program: u64,
    /// No slot holds an error: the compiled code may skip its error checks.
    pub(crate) clean: bool,
}

// SAFETY: every raw pointer in the slots points into `resource` (an `Arc` kept alive here), into
// `conds` (whose `Arc`s keep the conditions alive), into `boxes`, `owned` or `empty_time_err`
// (heap memory owned here), or into a boxed value's own string; none is written through after
// `fill`.
unsafe impl Send for Prepared {}
// SAFETY: as above; compiled code only reads the slots.
unsafe impl Sync for Prepared {}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("resource", &self.resource.as_ref().map(|r| r.id()))
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

fn null_err() -> *const EvalError {
    std::ptr::null()
}

fn empty_slot() -> Slot {
    Slot {
        w: [0, 0],
        err: null_err(),
        boxed: std::ptr::null(),
    }
}

impl Prepared {
    /// Whether no field the program reads holds an error: the call then runs the body compiled
    /// without error checks.
    pub fn is_clean(&self) -> bool {
        self.clean
    }

    /// Fills the slots from `resource` for a program that reads `needs`.
    pub(crate) fn fill(&mut self, resource: &Arc<Resource>, needs: &Needs) {
        self.slots.clear();
        self.boxes.clear();
        self.owned.clear();
        self.conds.clear();
        self.boxes.reserve(needs.boxes);
        let r = &**resource;
        // Taken out for the fill, so that the slots borrow its conditions (a clone of each
        // condition's `Arc` per slot was two atomic operations, a third of this fill's time).
        let mut conds = std::mem::take(&mut self.conds);
        conds.extend(needs.conds.iter().map(|name| r.condition(name)));
        for key in &needs.slots {
            let slot = self.slot(r, resource, &conds, *key);
            self.slots.push(slot);
        }
        self.conds = conds;
        self.clean = self.slots.iter().all(|s| s.err.is_null());
        self.resource = Some(resource.clone());
    }

    fn boxed(&mut self, v: Value) -> *const Boxed {
        self.push_box(Boxed::new(v))
    }

    fn push_box(&mut self, b: Boxed) -> *const Boxed {
        // Capacity was reserved for every boxed slot, so this push never moves earlier boxes.
        self.boxes.push(b);
        self.boxes.as_ptr().wrapping_add(self.boxes.len() - 1)
    }

    /// The slot of `key` for `resource` (`r`), whose constant conditions are `conds`: error
    /// pointers into `conds` stay valid once it is back in `self.conds` (its heap buffer does
    /// not move).
    fn slot(
        &mut self,
        r: &Resource,
        resource: &Arc<Resource>,
        conds: &[Field<Arc<Condition>>],
        key: FieldKey,
    ) -> Slot {
        let condition = |c: usize| conds.get(c).and_then(|f| f.as_ref().ok());
        let resource_str = |f: ResourceField| r.text(f).unwrap_or(Ok(not_text()));
        let resource_time = |f: ResourceField| r.time(f).unwrap_or(Ok(&NOT_TIME));
        match key {
            FieldKey::Resource => Slot {
                boxed: self.boxed(Value::Resource(resource.clone())),
                ..empty_slot()
            },
            FieldKey::Generation => int_slot(r.generation()),
            FieldKey::ResourceStr(f) => self.str_slot(resource_str(f)),
            FieldKey::ResourceTime(f) => self.time_slot(resource_time(f)),
            FieldKey::Cond(c) => match conds.get(c) {
                Some(Ok(cond)) => Slot {
                    boxed: self.boxed(Value::Condition(cond.clone())),
                    ..empty_slot()
                },
                // Into `conds`, which is not touched again before the next fill.
                Some(Err(e)) => Slot {
                    err: e,
                    ..empty_slot()
                },
                None => empty_slot(),
            },
            // A condition that failed is never read: its `Cond` slot fails first.
            FieldKey::CondStr(c, f) => match condition(c) {
                Some(cond) => self.str_slot(condition_str(cond, f)),
                None => empty_slot(),
            },
            FieldKey::CondTime(c, f) => match condition(c) {
                Some(cond) => self.time_slot(cond.time(f).unwrap_or(Ok(&NOT_TIME))),
                None => empty_slot(),
            },
            FieldKey::CondGeneration(c) => match condition(c) {
                Some(cond) => int_slot(cond.generation()),
                None => empty_slot(),
            },
        }
    }

    fn str_slot(&mut self, f: TextField<'_>) -> Slot {
        match f {
            Ok(text) => {
                let s = text.as_str();
                let mut prefix = [0u8; 8];
                let n = s.len().min(8);
                prefix[..n].copy_from_slice(&s.as_bytes()[..n]);
                let boxed = match text.shared() {
                    Some(shared) => self.boxed(Value::String(shared)),
                    // SAFETY: `s` is in the resource (its page, its own strings or its full
                    // decoding) or in one of its conditions, which `resource` and `conds` keep
                    // alive and unchanged until the next fill, which drops the boxes first.
                    None => self.push_box(unsafe { Boxed::text(s) }),
                };
                Slot {
                    w: [s.len() as u64, u64::from_le_bytes(prefix)],
                    err: null_err(),
                    boxed,
                }
            }
            Err(e) => Slot {
                err: e,
                ..empty_slot()
            },
        }
    }
}

/// What a slot of a field that is not text (or not a time) reads: "" (never: slot keys name
/// text and time fields only).
fn not_text() -> TextRef<'static> {
    TextRef::whole(&EMPTY)
}

static NOT_TIME: LazyLock<Time> = LazyLock::new(Time::empty);

fn condition_str(c: &Condition, f: ConditionField) -> TextField<'_> {
    c.text(f).unwrap_or(Ok(not_text()))
}

fn int_slot(f: &Field<i64>) -> Slot {
    match f {
        Ok(v) => Slot {
            w: [*v as u64, 0],
            ..empty_slot()
        },
        Err(e) => Slot {
            err: e,
            ..empty_slot()
        },
    }
}

impl Prepared {
    /// A time field as `timestamp(…)` reads it: the value parsed at decode, or the parser's
    /// error, boxed (its address goes in the slot). Only a failing parse is redone here, to
    /// get its error.
    fn time_slot(&mut self, f: TimeField<'_>) -> Slot {
        // A field that failed to decode is never parsed: reading it fails first.
        let Ok(time) = f else {
            return empty_slot();
        };
        if let Some(t) = time.at {
            let n = t.repr();
            return Slot {
                w: [n as u64, ((n as u128) >> 64) as u64],
                ..empty_slot()
            };
        }
        let text = time.text.as_str();
        if text.is_empty()
            && let Some(e) = &self.empty_time_err
        {
            return Slot {
                err: &**e,
                ..empty_slot()
            };
        }
        match timestamp_from_string(text) {
            Ok(t) => {
                let n = t.repr();
                Slot {
                    w: [n as u64, ((n as u128) >> 64) as u64],
                    ..empty_slot()
                }
            }
            Err(e) => {
                let boxed = Box::new(e);
                let err: *const EvalError = &*boxed;
                if text.is_empty() {
                    self.empty_time_err = Some(boxed);
                } else {
                    self.owned.push(boxed);
                }
                Slot {
                    err,
                    ..empty_slot()
                }
            }
        }
    }
}
