//! The boundary between native code and Rust: the `#[repr(C)]` layouts compiled code reads with
//! plain loads, and the `extern "C"` helpers it calls for everything that is not simple
//! arithmetic, comparison or control flow.
//!
//! Invariant: every helper is panic-free at the boundary (a panic is caught and becomes an
//! [`EvalError`]), takes only scalars and pointers, and returns results through out-pointers; the
//! helpers evaluate CEL only by calling the interpreter's own functions ([`ops`], [`functions`],
//! [`interp::eval`]), so there is one implementation of each semantic.

use super::arena::Arena;
use crate::cel::ast::BinaryOp;
use crate::cel::functions;
use crate::cel::host::Resource;
use crate::cel::interp::{self, Activation};
use crate::cel::ops;
use crate::cel::time::{Duration, Timestamp};
use crate::cel::typed::{Builtin, TExpr};
use crate::cel::types::Type;
use crate::cel::value::{ErrorKind, EvalError, EvalResult, ListBuilder, Value};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

mod loops;
pub(crate) use loops::{
    jit_list_finish, jit_list_new, jit_list_push, jit_range_item, jit_range_len, jit_scope_mark,
    jit_scope_release,
};

/// How native code holds a value of a static type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub(crate) enum Class {
    /// `bool` as an `i8` (0 or 1).
    Bool,
    /// `int` as an `i64`.
    Int,
    /// `uint` as an `i64` (bits of the `u64`).
    Uint,
    /// `double` as an `f64`.
    Double,
    /// A timestamp as `i128` nanoseconds since the epoch.
    Timestamp,
    /// A duration as `i128` nanoseconds.
    Duration,
    /// Anything else: a pointer to a [`Boxed`] value.
    Boxed,
}

impl Class {
    /// The class of values of a static type. `dyn` and every non-scalar type are boxed.
    pub(crate) fn of(ty: &Type) -> Class {
        match ty {
            Type::Bool => Class::Bool,
            Type::Int => Class::Int,
            Type::Uint => Class::Uint,
            Type::Double => Class::Double,
            Type::Timestamp => Class::Timestamp,
            Type::Duration => Class::Duration,
            _ => Class::Boxed,
        }
    }

    /// All classes, indexed by their discriminant.
    const ALL: [Class; 7] = [
        Class::Bool,
        Class::Int,
        Class::Uint,
        Class::Double,
        Class::Timestamp,
        Class::Duration,
        Class::Boxed,
    ];

    fn from_code(code: u64) -> Class {
        Class::ALL
            .get(code as usize)
            .copied()
            .unwrap_or(Class::Boxed)
    }
}

/// A value behind a pointer. For strings, `str_ptr`/`str_len` are the string's bytes so that
/// native code compares strings with plain loads; for every other value they are null/0.
///
/// A string field of a prepared row is boxed by [`Boxed::text`]: its bytes are the field's own
/// (in the page), and the [`Value`] helpers read is made from them on first use only — most
/// rules compare such a field, or test its length, with plain loads and never need one.
#[repr(C)]
pub struct Boxed {
    /// The string's bytes (null unless the value is a string).
    pub(crate) str_ptr: *const u8,
    /// The string's length in bytes.
    pub(crate) str_len: usize,
    /// The value itself, or the cell it is made in from the bytes.
    held: Held,
}

enum Held {
    Value(Value),
    Text(OnceLock<Value>),
}

// SAFETY: `str_ptr` points into the `Arc<str>` owned by the value itself, or (for
// [`Boxed::text`]) into bytes its creator keeps alive and unchanged for the box's life, or is
// null; it is never written through, so sharing a `Boxed` is as safe as sharing its `Value`
// (the lazy cell is a `OnceLock`).
unsafe impl Send for Boxed {}
// SAFETY: as above.
unsafe impl Sync for Boxed {}

impl std::fmt::Debug for Boxed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl Boxed {
    /// Boxes a value, exposing a string's bytes.
    pub fn new(value: Value) -> Boxed {
        let (str_ptr, str_len) = match &value {
            Value::String(s) => (s.as_ptr(), s.len()),
            _ => (std::ptr::null(), 0),
        };
        Boxed {
            str_ptr,
            str_len,
            held: Held::Value(value),
        }
    }

    /// Boxes the string `s` without copying it: its value is made from the bytes the first
    /// time a helper reads it.
    ///
    /// # Safety
    /// The bytes of `s` stay alive and unchanged for as long as the box does.
    pub(crate) unsafe fn text(s: &str) -> Boxed {
        Boxed {
            str_ptr: s.as_ptr(),
            str_len: s.len(),
            held: Held::Text(OnceLock::new()),
        }
    }

    /// The boxed value.
    pub fn value(&self) -> &Value {
        match &self.held {
            Held::Value(v) => v,
            Held::Text(cell) => cell.get_or_init(|| {
                // SAFETY: `Boxed::text`'s contract: the bytes of a `&str`, still alive.
                let s = unsafe {
                    std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                        self.str_ptr,
                        self.str_len,
                    ))
                };
                Value::String(Arc::from(s))
            }),
        }
    }
}

static NULL_BOX: Boxed = Boxed {
    str_ptr: std::ptr::null(),
    str_len: 0,
    held: Held::Value(Value::Null),
};

/// The one argument of compiled code: inputs, outputs, and the Rust-side environment the
/// helpers use. Offsets are read by native code (see `lower`).
#[repr(C)]
pub struct Ctx {
    /// `now` as nanoseconds (low, high 64 bits).
    pub now: [u64; 2],
    /// The prepared resource (decision programs).
    pub row: *const u8,
    /// The error of the failing param or of the result (output).
    pub error: *const EvalError,
    /// The index of the failing param (output, written before `RET_PARAM_FAILED` only).
    pub failed: std::mem::MaybeUninit<u64>,
    /// The result value by class (output, written before `RET_VALUE` only: both words, or
    /// only the first for a boxed decision result).
    pub out: [std::mem::MaybeUninit<u64>; 2],
    /// Where each param's value is stored by class (`[u64; 2]` per param), for `eval` and for
    /// params evaluated by the interpreter; null for a body that stores none.
    pub params: *mut [u64; 2],
    /// What the helpers see (native code only passes the context on): the program's
    /// [`Tables`].
    pub tables: *const Tables,
    /// The thread's [`Scratch`].
    pub scratch: *mut Scratch,
    /// The decision's resource (an `Arc<Resource>`), or null.
    pub resource: *const Arc<Resource>,
    /// A standalone expression's `Activation` (its variables), or null for a decision.
    pub activation: *const (),
}

/// Which operation a generic helper call performs, with its result class.
#[derive(Debug)]
pub(crate) struct Op {
    /// The operation.
    pub kind: OpKind,
    /// How the result is returned.
    pub class: Class,
    /// Number of boxed arguments.
    pub n_args: usize,
}

/// The operations native code delegates to the interpreter's functions.
#[derive(Debug)]
pub(crate) enum OpKind {
    /// A binary operator ([`ops::binary`]) on boxed operands.
    Binary(BinaryOp),
    /// A binary operator on scalar operands of the given classes (the slow path of native
    /// arithmetic: overflow, division by zero, time arithmetic, mixed numeric comparison).
    Scalar(BinaryOp, Class, Class),
    /// `-x` on a scalar of the given class (the slow path of native negation).
    ScalarNeg(Class),
    /// `!x` ([`ops::not`]).
    Not,
    /// `-x` ([`ops::neg`]).
    Neg,
    /// `x.field` ([`ops::select`]).
    Select(Arc<str>),
    /// `has(x.field)` ([`ops::has`]).
    Has(Arc<str>),
    /// `x[k]` ([`ops::index`]).
    Index,
    /// A builtin other than `condition` ([`functions::call`]).
    Call(Builtin),
    /// `&&`/`||` (by operator) whose operands are not both bool: the error of [`ops::binary`].
    /// A null argument stands for the non-absorbing bool.
    Logic(BinaryOp),
    /// A typed tree the interpreter evaluates with the arguments as its slots.
    Shell(TExpr),
    /// As `Shell`, with each argument followed by its error (null or a live error): the slot
    /// holds the error, which the interpreter raises where it reads the slot.
    ShellCaptured(TExpr),
    /// A typed tree the interpreter evaluates with the call's own slots: the first `n` params of
    /// a decision (read back from the param buffer), or a standalone expression's variables.
    Interp(TExpr, usize),
}

/// Everything compiled code refers to by index or address: it must outlive the code and never
/// move (the constants' addresses are embedded in the code).
#[derive(Debug, Default)]
pub(crate) struct Tables {
    /// Generic operations, by index.
    pub ops: Vec<Op>,
    /// Boxed constants (strings, lists, maps, …), boxed so their addresses never move.
    #[allow(clippy::vec_box)]
    pub consts: Vec<Box<Boxed>>,
    /// The class of each param of a decision (`None`: not computed by this function).
    pub param_classes: Vec<Option<Class>>,
}

/// The per-thread memory of evaluations: reset per call, capacity kept, so steady-state calls
/// do not allocate.
#[derive(Default)]
pub struct Scratch {
    boxes: Arena<Boxed>,
    errors: Arena<EvalError>,
    values: Vec<Value>,
    slots: Vec<EvalResult>,
    pub(crate) params: Vec<EvalResult>,
    /// The param buffer compiled code writes.
    pub(crate) bits: Vec<[u64; 2]>,
    /// Lists being built by `map`/`filter` (capacity reused), `lists_used` of them in use.
    lists: Vec<ListBuilder>,
    lists_used: usize,
    /// Whether a helper ran since the last reset (else there is nothing to reset).
    dirty: bool,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").finish_non_exhaustive()
    }
}

impl Scratch {
    /// Forgets the values of the previous call (keeps the memory).
    #[inline]
    pub(crate) fn reset(&mut self) {
        if self.dirty {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.dirty = false;
        for list in &mut self.lists[..self.lists_used] {
            list.clear();
        }
        self.lists_used = 0;
        self.boxes.reset();
        self.errors.reset();
        self.values.clear();
        self.slots.clear();
        self.params.clear();
    }

    /// The values of the params stored by the last call.
    pub fn params(&self) -> &[EvalResult] {
        &self.params
    }

    /// Moves the stored params into `into` (replacing its contents, swapping memory).
    pub fn take_params(&mut self, into: &mut Vec<EvalResult>) {
        into.clear();
        std::mem::swap(&mut self.params, into);
    }
}

/// What the helpers of one call see: the program's tables, the scratch memory and the
/// interpreter's activation (resource, now, reason, external slots).
pub(crate) struct CallEnv<'a> {
    pub tables: &'a Tables,
    pub scratch: &'a mut Scratch,
    pub resource: Option<&'a Arc<Resource>>,
    pub now: Option<Timestamp>,
    pub reason: Option<&'a Arc<str>>,
    /// External slots (standalone expressions); decision programs use `scratch.params`.
    pub slots: Option<&'a [EvalResult]>,
}

fn join(lo: u64, hi: u64) -> i128 {
    ((u128::from(hi) << 64) | u128::from(lo)) as i128
}

fn split(v: i128) -> [u64; 2] {
    [v as u64, ((v as u128) >> 64) as u64]
}

fn internal(what: &str) -> EvalError {
    EvalError::new(
        ErrorKind::NoMatchingOverload,
        format!("internal error in compiled code: {what}"),
    )
}

/// A value held natively as `lo`/`hi` bits of `class`, as a [`Value`].
///
/// # Safety
/// For [`Class::Boxed`], `lo` is a valid pointer to a live [`Boxed`].
unsafe fn value_of(class: Class, lo: u64, hi: u64) -> EvalResult {
    Ok(match class {
        Class::Bool => Value::Bool(lo & 1 != 0),
        Class::Int => Value::Int(lo as i64),
        Class::Uint => Value::Uint(lo),
        Class::Double => Value::Double(f64::from_bits(lo)),
        Class::Timestamp => Value::Timestamp(Timestamp::from_repr(join(lo, hi))?),
        Class::Duration => Value::Duration(Duration::from_nanos(join(lo, hi))?),
        // SAFETY: the caller guarantees the pointer.
        Class::Boxed => unsafe { (*(lo as *const Boxed)).value().clone() },
    })
}

impl CallEnv<'_> {
    /// Writes a value into `out` as `class` holds it.
    fn put(&mut self, class: Class, value: Value, out: &mut [u64; 2]) -> Result<(), EvalError> {
        *out = match (class, value) {
            (Class::Bool, Value::Bool(b)) => [u64::from(b), 0],
            (Class::Int, Value::Int(i)) => [i as u64, 0],
            (Class::Uint, Value::Uint(u)) => [u, 0],
            (Class::Double, Value::Double(d)) => [d.to_bits(), 0],
            (Class::Timestamp, Value::Timestamp(t)) => split(t.repr()),
            (Class::Duration, Value::Duration(d)) => split(d.nanos()),
            (Class::Boxed, v) => [self.scratch.boxes.alloc(Boxed::new(v)) as u64, 0],
            (class, v) => {
                return Err(internal(&format!(
                    "expected {class:?}, got {}",
                    v.type_name()
                )));
            }
        };
        Ok(())
    }

    fn error(&mut self, e: EvalError) -> *const EvalError {
        self.scratch.errors.alloc(e)
    }

    /// Returns a result through `out`, or its error.
    fn finish(&mut self, class: Class, result: EvalResult, out: &mut [u64; 2]) -> *const EvalError {
        match result.and_then(|v| self.put(class, v, out)) {
            Ok(()) => std::ptr::null(),
            Err(e) => self.error(e),
        }
    }

    fn activation<'s>(&'s self, slots: &'s [EvalResult]) -> Activation<'s> {
        Activation {
            resource: self.resource,
            now: self.now,
            reason: self.reason,
            slots,
        }
    }

    /// Runs a generic operation on boxed arguments.
    ///
    /// # Safety
    /// `args` holds `op.n_args` pointers, each null or to a live [`Boxed`].
    unsafe fn generic(&mut self, op: &Op, args: *const *const Boxed) -> EvalResult {
        let arg = |i: usize| -> Option<&Value> {
            // SAFETY: the caller guarantees `n_args` readable pointers, null or valid.
            unsafe { (*args.add(i)).as_ref().map(Boxed::value) }
        };
        let first = || arg(0).ok_or_else(|| internal("missing argument"));
        match &op.kind {
            OpKind::Binary(bop) => ops::binary(*bop, first()?, arg(1).unwrap_or(&Value::Null)),
            OpKind::Not => ops::not(first()?),
            OpKind::Neg => ops::neg(first()?),
            OpKind::Select(field) => ops::select(first()?, field),
            OpKind::Has(field) => ops::has(first()?, field),
            OpKind::Index => ops::index(first()?, arg(1).unwrap_or(&Value::Null)),
            OpKind::Call(f) => {
                let mut values = std::mem::take(&mut self.scratch.values);
                // SAFETY: forwarded from the caller.
                values.extend((0..op.n_args).map(|i| unsafe { boxed_arg(args, i).clone() }));
                let result = functions::call(*f, &values);
                values.clear();
                self.scratch.values = values;
                result
            }
            OpKind::Logic(bop) => {
                let other = Value::Bool(*bop == BinaryOp::And);
                let l = arg(0).unwrap_or(&other);
                let r = arg(1).unwrap_or(&other);
                ops::binary(*bop, l, r)
            }
            OpKind::Shell(expr) => {
                // SAFETY: forwarded from the caller.
                let slots = (0..op.n_args).map(|i| unsafe { Ok(boxed_arg(args, i).clone()) });
                self.shell(expr, slots)
            }
            OpKind::ShellCaptured(expr) => {
                let slots = (0..op.n_args / 2).map(|i| {
                    // SAFETY: the odd arguments are null or point to live errors.
                    let err = unsafe { (*args.add(2 * i + 1) as *const EvalError).as_ref() };
                    match err {
                        Some(e) => Err(e.clone()),
                        // SAFETY: forwarded from the caller.
                        None => Ok(unsafe { boxed_arg(args, 2 * i) }.clone()),
                    }
                });
                self.shell(expr, slots)
            }
            OpKind::Interp(expr, n) => match self.slots {
                Some(slots) => interp::eval(expr, &self.activation(slots)),
                None => {
                    // SAFETY: compiled code stored params `0..n` before evaluating this one.
                    unsafe { materialize(self.tables, self.scratch, *n, None) };
                    interp::eval(expr, &self.activation(&self.scratch.params))
                }
            },
            OpKind::Scalar(..) | OpKind::ScalarNeg(_) => Err(internal("scalar op on boxed values")),
        }
    }

    /// Evaluates `expr` in the interpreter with `slots` bound (scratch memory reused).
    fn shell(&mut self, expr: &TExpr, slots: impl Iterator<Item = EvalResult>) -> EvalResult {
        let mut bound = std::mem::take(&mut self.scratch.slots);
        bound.extend(slots);
        let result = interp::eval(expr, &self.activation(&bound));
        bound.clear();
        self.scratch.slots = bound;
        result
    }

    /// Runs a scalar slow-path operation.
    fn scalar(&mut self, op: &Op, a: [u64; 2], b: [u64; 2]) -> EvalResult {
        match &op.kind {
            OpKind::Scalar(bop, ca, cb) => {
                // SAFETY: scalar classes never dereference.
                let (x, y) = unsafe { (value_of(*ca, a[0], a[1])?, value_of(*cb, b[0], b[1])?) };
                ops::binary(*bop, &x, &y)
            }
            OpKind::ScalarNeg(c) => {
                // SAFETY: scalar classes never dereference.
                let x = unsafe { value_of(*c, a[0], a[1])? };
                ops::neg(&x)
            }
            _ => Err(internal("boxed op on scalar values")),
        }
    }
}

/// Argument `i` of a generic call (`null` when the pointer is null).
///
/// # Safety
/// `args` holds at least `i + 1` pointers, each null or to a live [`Boxed`].
unsafe fn boxed_arg<'a>(args: *const *const Boxed, i: usize) -> &'a Value {
    // SAFETY: forwarded from the caller.
    unsafe { (*args.add(i)).as_ref() }.map_or(NULL_BOX.value(), Boxed::value)
}

/// Runs `body` with the call's environment, turning a panic into an error. The environment is
/// made here from the context, on a helper call only: a decision that calls no helper never
/// builds one.
///
/// # Safety
/// `ctx` is the live context of the running call.
unsafe fn with_env(
    ctx: *mut Ctx,
    body: impl FnOnce(&mut CallEnv<'_>) -> *const EvalError,
) -> *const EvalError {
    // SAFETY: the caller guarantees `ctx`, whose pointers the one caller of compiled code
    // (`Code::run`) set from references that outlive the call: the tables, the thread's scratch
    // (native code only writes its param buffer, never while a helper runs), the resource (or
    // null), and a standalone expression's activation (or null). Native code never reads them.
    let (c, act) = unsafe { (&*ctx, (*ctx).activation.cast::<Activation<'_>>().as_ref()) };
    let (resource, now, reason, slots) = match act {
        Some(act) => (act.resource, act.now, act.reason, Some(act.slots)),
        None => (
            // SAFETY: as above.
            unsafe { c.resource.as_ref() },
            Timestamp::from_repr(join(c.now[0], c.now[1])).ok(),
            None,
            None,
        ),
    };
    let mut env = CallEnv {
        // SAFETY: as above.
        tables: unsafe { &*c.tables },
        // SAFETY: as above.
        scratch: unsafe { &mut *c.scratch },
        resource,
        now,
        reason,
        slots,
    };
    env.scratch.dirty = true;
    match catch_unwind(AssertUnwindSafe(|| body(&mut env))) {
        Ok(e) => e,
        Err(_) => env.error(internal("a helper panicked")),
    }
}

/// Generic operation `op` of the program's tables on boxed arguments; the result goes to `out`
/// by the op's class. Returns null or the error.
pub(crate) extern "C" fn jit_generic(
    ctx: *mut Ctx,
    op: u64,
    args: *const *const Boxed,
    out: *mut [u64; 2],
) -> *const EvalError {
    // SAFETY: called by compiled code with its own context, an args array of the op's arity and
    // a writable out slot.
    unsafe {
        with_env(ctx, |env| {
            let Some(op) = env.tables.ops.get(op as usize) else {
                return env.error(internal("unknown op"));
            };
            let result = env.generic(op, args);
            env.finish(op.class, result, &mut *out)
        })
    }
}

/// Scalar slow path `op` on `a` and `b` (bits by the op's classes).
pub(crate) extern "C" fn jit_scalar(
    ctx: *mut Ctx,
    op: u64,
    a_lo: u64,
    a_hi: u64,
    b_lo: u64,
    b_hi: u64,
    out: *mut [u64; 2],
) -> *const EvalError {
    // SAFETY: called by compiled code with its own context and a writable out slot.
    unsafe {
        with_env(ctx, |env| {
            let Some(op) = env.tables.ops.get(op as usize) else {
                return env.error(internal("unknown op"));
            };
            let result = env.scalar(op, [a_lo, a_hi], [b_lo, b_hi]);
            env.finish(op.class, result, &mut *out)
        })
    }
}

/// Boxes a scalar of `class` (for a generic helper's argument or a `dyn` position).
pub(crate) extern "C" fn jit_box(ctx: *mut Ctx, class: u64, lo: u64, hi: u64) -> *const Boxed {
    let mut boxed: *const Boxed = &NULL_BOX;
    // SAFETY: called by compiled code with its own context; scalar classes never dereference.
    unsafe {
        with_env(ctx, |env| {
            match value_of(Class::from_code(class), lo, hi) {
                Ok(v) => boxed = env.scratch.boxes.alloc(Boxed::new(v)),
                Err(_) => boxed = &NULL_BOX,
            }
            std::ptr::null()
        });
    }
    boxed
}

/// What a boxed value is to `&&`, `||` and `?:`: 0 false, 1 true, 2 not a bool.
pub(crate) extern "C" fn jit_truth(boxed: *const Boxed) -> u8 {
    // SAFETY: compiled code passes a live boxed value.
    match unsafe { (*boxed).value() } {
        Value::Bool(false) => 0,
        Value::Bool(true) => 1,
        _ => 2,
    }
}

/// Byte equality of two strings.
pub(crate) extern "C" fn jit_bytes_eq(a: *const u8, a_len: u64, b: *const u8, b_len: u64) -> u8 {
    if a_len != b_len {
        return 0;
    }
    if a_len == 0 {
        return 1;
    }
    // SAFETY: compiled code passes the bytes of two live strings.
    let (x, y) = unsafe {
        (
            std::slice::from_raw_parts(a, a_len as usize),
            std::slice::from_raw_parts(b, b_len as usize),
        )
    };
    u8::from(x == y)
}

/// Converts a result of compiled code back to a value: `out` by `class` (the second word is
/// read only for a class that is not boxed).
///
/// # Safety
/// Compiled code wrote `out[0]`, and `out[1]` unless `class` is [`Class::Boxed`]; for
/// [`Class::Boxed`], `out[0]` points to a live [`Boxed`].
pub(crate) unsafe fn result_value(
    class: Class,
    out: &[std::mem::MaybeUninit<u64>; 2],
) -> EvalResult {
    // SAFETY: forwarded from the caller: the words read were written.
    let (lo, hi) = unsafe {
        let hi = match class {
            Class::Boxed => 0,
            _ => out[1].assume_init(),
        };
        (out[0].assume_init(), hi)
    };
    // SAFETY: forwarded from the caller.
    unsafe { value_of(class, lo, hi) }
}

/// Turns the param buffer's first `n` entries into `scratch.params` (entries for params the
/// function does not compute become null), then `failed`'s error if a param failed.
///
/// # Safety
/// Compiled code has stored the first `n` computed params in `scratch.bits`, and their boxed
/// values are live.
pub(crate) unsafe fn materialize(
    tables: &Tables,
    scratch: &mut Scratch,
    n: usize,
    failed: Option<EvalError>,
) {
    scratch.dirty = true;
    scratch.params.clear();
    for i in 0..n {
        let value = match (
            tables.param_classes.get(i).copied().flatten(),
            scratch.bits.get(i),
        ) {
            // SAFETY: forwarded from the caller.
            (Some(class), Some(bits)) => unsafe { value_of(class, bits[0], bits[1]) },
            _ => Ok(Value::Null),
        };
        scratch.params.push(value);
    }
    if let Some(e) = failed {
        scratch.params.push(Err(e));
    }
}
