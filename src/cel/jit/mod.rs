//! The Cranelift JIT: the checked, typed tree of a whole message_decision (every param and the
//! result) lowered to one native function, compiled once per config for the host.
//!
//! Takes typed trees from [`crate::cel::check()`]; gives a [`JitProgram`] (a decision) or a
//! [`JitExpr`] (one standalone expression) to call any number of times, from any thread, each
//! thread with its own [`Scratch`]. A resource is first [`JitProgram::prepare`]d (before each
//! decision, into the caller's reused [`Prepared`]) into the row the compiled code reads with
//! plain loads.
//!
//! Invariant: for every input, the compiled code's value, error kind and error message equal the
//! reference interpreter's ([`crate::cel::interp`]): it computes natively only pure scalar
//! arithmetic, comparisons and control flow, and calls the interpreter's own functions for the
//! rest (see `abi`). Cranelift types never appear outside this module.

mod abi;
mod arena;
mod compile;
mod helpers;
mod listing;
mod lower;
mod lower_access;
mod lower_macro;
mod lower_ops;
mod row;
mod sites;

pub use abi::Scratch;
pub use compile::{Cpu, Nativeness, Options};
pub use listing::{BodyListing, Line, Listing, Role};
pub use row::Prepared;
pub use sites::{Note, NoteKind, Site};

use crate::cel::host::Resource;
use crate::cel::interp::Activation;
use crate::cel::time::Timestamp;
use crate::cel::typed::TExpr;
use crate::cel::value::{ErrorKind, EvalError, EvalResult, Value};
use abi::{Class, Ctx, Tables};
use compile::{Built, ResultKind, Unit};
use cranelift_jit::JITModule;
use lower::Mode;
use row::Needs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why compiling to native code failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JitError {
    /// Cranelift rejected the function or the host.
    #[error("native code generation failed: {0}")]
    Codegen(String),
    /// The generated IR failed Cranelift's verifier (a bug of the lowering).
    #[error("generated code failed verification:\n{0}")]
    Verifier(String),
    /// A bug of the lowering, reported instead of crashing.
    #[error("internal error of the native compiler: {0}")]
    Internal(String),
}

/// Whether a decision keeps the values of the params it evaluated (for `sentinel eval`) or
/// drops them (the daemon's hot path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    /// Keep every evaluated param's value.
    Keep,
    /// Keep nothing but the outcome.
    Drop,
}

/// How a decision came out, before the rules layer makes it a `Decision`.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The result is a bool.
    Bool(bool),
    /// Param `index` failed (the first failing param decides).
    ParamFailed(usize, EvalError),
    /// The result failed.
    ResultFailed(EvalError),
    /// The result is not a bool (a `dyn` result).
    Value(Value),
}

/// A finalized native function and the JIT module that owns its memory.
struct Code {
    module: Mutex<Option<JITModule>>,
    /// Checks every slot read for a field error and stores every param in the param buffer.
    entry: *const u8,
    /// `entry` compiled without the error checks of slot reads, for clean rows, and storing the
    /// params only if `clean_stores_params`.
    clean_entry: *const u8,
    /// Whether `clean_entry` stores the params (an expression the interpreter evaluates reads
    /// them back).
    clean_stores_params: bool,
    tables: Tables,
}

// SAFETY: `entry` points to finalized, immutable machine code that may run on any thread; the
// module is only touched when dropped (behind a mutex); the tables are immutable after compile.
unsafe impl Send for Code {}
// SAFETY: as above.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        let module = self.module.get_mut().ok().and_then(Option::take);
        if let Some(module) = module {
            // SAFETY: `Code` is being dropped, so no call of its function is running (every call
            // borrows it) and `entry` is never called again.
            unsafe { module.free_memory() };
        }
    }
}

/// Which body a call runs and what it hands over.
#[derive(Clone, Copy)]
struct Call {
    /// `entry` or `clean_entry` of the code.
    entry: *const u8,
    /// The prepared row (`Prepared::slots` of a row filled for this program), or null.
    row: *const u8,
    /// The param buffer (the scratch's, sized for every param), or null for a body that stores
    /// none.
    params: *mut [u64; 2],
    /// `now`'s packed form.
    now: i128,
    /// The resource, or null.
    resource: *const Arc<Resource>,
    /// A standalone expression's `Activation`, or null.
    activation: *const (),
}

impl Code {
    fn new(built: &mut Option<Built>) -> Option<Code> {
        let b = built.take()?;
        Some(Code {
            module: Mutex::new(Some(b.module)),
            entry: b.entry,
            clean_entry: b.clean_entry,
            clean_stores_params: b.clean_stores_params,
            tables: b.tables,
        })
    }

    /// The param buffer of `scratch`, sized for every param of this code.
    fn param_buffer(&self, scratch: &mut Scratch) -> *mut [u64; 2] {
        let n = self.tables.param_classes.len();
        if scratch.bits.len() < n {
            scratch.bits.resize(n, [0, 0]);
        }
        scratch.bits.as_mut_ptr()
    }

    /// Runs one body of the compiled function; `then` gets its code and outputs in place (no
    /// copy of the `Ctx` on the hot path).
    ///
    /// # Safety
    ///
    /// This is the one place that calls compiled code. It is sound because: `call.entry` is
    /// `entry` or `clean_entry`, finalized functions of the live module `self` owns, built by
    /// `compile::build` with the signature `extern "C" fn(*mut Ctx) -> u32`; the caller passes
    /// `clean_entry` only for a row whose every slot has a null error (so the checks it omits
    /// would all pass) and a null param buffer only to a body that stores no param; `call.row`
    /// is null (standalone expressions, which never read it) or the slots of a [`Prepared`]
    /// filled for this program, borrowed by the caller for the call; the param buffer is
    /// `scratch`'s, sized by [`Code::param_buffer`]; the resource and the activation are null
    /// or borrowed by the caller for the call. Compiled code only reads the row and the inputs,
    /// writes the `Ctx` outputs and the param buffer, and never traps (divisions are guarded);
    /// the helpers it calls reach the tables, the scratch, the resource and the activation
    /// through the `Ctx` (no other reference to the scratch is used during the call) and catch
    /// panics.
    #[inline(always)]
    unsafe fn run<R>(
        &self,
        call: Call,
        scratch: &mut Scratch,
        then: impl FnOnce(u32, &Ctx) -> R,
    ) -> R {
        let mut ctx = Ctx {
            now: [call.now as u64, ((call.now as u128) >> 64) as u64],
            row: call.row,
            error: std::ptr::null(),
            // Outputs written only with the codes that report them: not initialized here.
            failed: std::mem::MaybeUninit::uninit(),
            out: [std::mem::MaybeUninit::uninit(); 2],
            params: call.params,
            tables: &self.tables,
            scratch,
            resource: call.resource,
            activation: call.activation,
        };
        // SAFETY: see the function's `# Safety` section.
        let code = unsafe {
            let f = std::mem::transmute::<*const u8, extern "C" fn(*mut Ctx) -> u32>(call.entry);
            f(&mut ctx)
        };
        then(code, &ctx)
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A message_decision compiled to one native function.
pub struct JitProgram {
    code: Code,
    needs: Needs,
    id: u64,
    nativeness: Vec<Nativeness>,
    /// How a `RET_VALUE` result is held: boxed for decisions, by class for param slices.
    value_class: Class,
    compile_time: Duration,
    listing: Option<Listing>,
}

impl std::fmt::Debug for JitProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitProgram")
            .field("nativeness", &self.nativeness)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

fn internal(what: &str) -> EvalError {
    EvalError::new(
        ErrorKind::NoMatchingOverload,
        format!("internal error: {what}"),
    )
}

/// Reads the error compiled code reported.
#[cold]
fn misprepared() -> Outcome {
    Outcome::ResultFailed(internal("resource prepared for another program"))
}

fn reported_error(ctx: &Ctx) -> EvalError {
    // SAFETY: compiled code sets `error` to a live error (in the scratch arenas, the row or the
    // resource) before returning a failure code; they outlive this read.
    unsafe { ctx.error.as_ref() }
        .cloned()
        .unwrap_or_else(|| internal("missing error"))
}

impl JitProgram {
    /// Compiles a decision: `params` in authored order (param `i` is `Var::Slot(i)` to the
    /// later ones), then `result`.
    pub fn compile(
        params: &[TExpr],
        result: &TExpr,
        opts: &Options,
    ) -> Result<JitProgram, JitError> {
        let unit = Unit {
            params: params.iter().map(Some).collect(),
            result,
            mode: Mode::Decision,
            result_kind: ResultKind::Decision,
        };
        Self::from_unit(&unit, Class::Boxed, opts)
    }

    /// Compiles the slice of a decision that computes param `index` (with the earlier params it
    /// reads), returning that param's value: for `sentinel ir --param`.
    pub fn compile_param(
        params: &[TExpr],
        index: usize,
        opts: &Options,
    ) -> Result<JitProgram, JitError> {
        let Some(target) = params.get(index) else {
            return Err(JitError::Internal(format!("no param {index}")));
        };
        let mut used = vec![false; index];
        mark_slots(target, &mut used);
        for i in (0..index).rev() {
            if used[i] {
                let mut deps = vec![false; i];
                mark_slots(&params[i], &mut deps);
                for (j, d) in deps.into_iter().enumerate() {
                    used[j] |= d;
                }
            }
        }
        let unit = Unit {
            params: params[..index]
                .iter()
                .zip(&used)
                .map(|(p, u)| u.then_some(p))
                .collect(),
            result: target,
            mode: Mode::Decision,
            result_kind: ResultKind::Value,
        };
        Self::from_unit(&unit, Class::of(&target.ty), opts)
    }

    fn from_unit(
        unit: &Unit<'_>,
        value_class: Class,
        opts: &Options,
    ) -> Result<JitProgram, JitError> {
        let start = Instant::now();
        let built = compile::build(unit, opts)?;
        let needs = built.needs.clone();
        let nativeness = built.nativeness.clone();
        let listing = built.listing.clone();
        let code =
            Code::new(&mut Some(built)).ok_or_else(|| JitError::Internal("no code".into()))?;
        Ok(JitProgram {
            code,
            needs,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            nativeness,
            value_class,
            compile_time: start.elapsed(),
            listing,
        })
    }

    /// How each param (in order, then the result) runs. Params left out of a
    /// [`JitProgram::compile_param`] slice are not listed.
    pub fn nativeness(&self) -> &[Nativeness] {
        &self.nativeness
    }

    /// How long compiling took.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// The optimized IR and machine code, when compiled with [`Options::listing`].
    pub fn listing(&self) -> Option<&Listing> {
        self.listing.as_ref()
    }

    /// Prepares a resource for this program (reusing `into`'s memory): the one-time work of
    /// decoding what the compiled code reads.
    #[inline]
    pub fn prepare(&self, resource: &Arc<Resource>, into: &mut Prepared) {
        into.fill(resource, &self.needs);
        into.program = self.id;
    }

    /// A resource prepared for this program in a row of its own (for holding rows of many).
    pub fn prepared(&self, resource: &Arc<Resource>) -> Prepared {
        let mut row = Prepared::default();
        self.prepare(resource, &mut row);
        row
    }

    /// Decides for a prepared resource at `now` (for a [`JitProgram::compile_param`] slice, the
    /// param's value is an [`Outcome::Value`]). With [`Params::Keep`], `scratch.params()` holds
    /// every evaluated param's value afterwards (up to and including a failing one).
    #[inline(always)]
    pub fn decide(
        &self,
        prepared: &Prepared,
        now: Timestamp,
        scratch: &mut Scratch,
        params: Params,
    ) -> Outcome {
        // `prepare` sets `program` after filling; a default `Prepared` has program 0, which no
        // program has.
        if prepared.program != self.id {
            return misprepared();
        }
        debug_assert!(prepared.resource.is_some());
        match params {
            Params::Drop => match self.run_dropping(prepared, now, scratch) {
                Ok(b) => Outcome::Bool(b),
                Err(outcome) => outcome,
            },
            Params::Keep => self.run_keeping(prepared, now, scratch),
        }
    }

    /// Prepares `resource` into `into` and decides at `now`, keeping no param values: the
    /// daemon's path. Gives the result when it is a bool (the native code's return code is the
    /// decision), else the outcome (a failure, or a `dyn` result that is not a bool).
    #[inline(always)]
    pub fn prepare_and_decide(
        &self,
        resource: &Arc<Resource>,
        into: &mut Prepared,
        now: Timestamp,
        scratch: &mut Scratch,
    ) -> Result<bool, Outcome> {
        self.prepare(resource, into);
        self.run_dropping(into, now, scratch)
    }

    /// Runs the body for `prepared` (filled for this program) without keeping param values.
    #[inline(always)]
    fn run_dropping(
        &self,
        prepared: &Prepared,
        now: Timestamp,
        scratch: &mut Scratch,
    ) -> Result<bool, Outcome> {
        scratch.reset();
        let code = &self.code;
        // A row without field errors runs the body that does not check for them, which needs
        // the param buffer only when the interpreter evaluates one of its expressions.
        let (entry, params) = if !prepared.clean {
            (code.entry, code.param_buffer(scratch))
        } else if code.clean_stores_params {
            (code.clean_entry, code.param_buffer(scratch))
        } else {
            (code.clean_entry, std::ptr::null_mut())
        };
        let call = Call {
            entry,
            row: prepared.slots.as_ptr().cast(),
            params,
            now: now.repr(),
            resource: prepared.resource.as_ref().map_or(std::ptr::null(), |r| r),
            activation: std::ptr::null(),
        };
        // SAFETY: `entry` is `clean_entry` only for a clean row, with a null buffer only if that
        // body stores no param; the row was filled for this program (checked or made so by the
        // caller); `prepared` and `scratch` are borrowed for the call.
        unsafe {
            code.run(call, scratch, |code, ctx| match code {
                // The common outcomes stay inline; the rest read the outputs out of line.
                compile::RET_FALSE => Ok(false),
                compile::RET_TRUE => Ok(true),
                _ => Err(self.outcome(code, ctx)),
            })
        }
    }

    /// Runs the checked body (which stores every param) and keeps the evaluated params' values
    /// in `scratch.params()`.
    #[inline(never)]
    fn run_keeping(&self, prepared: &Prepared, now: Timestamp, scratch: &mut Scratch) -> Outcome {
        scratch.reset();
        let code = &self.code;
        let call = Call {
            entry: code.entry,
            row: prepared.slots.as_ptr().cast(),
            params: code.param_buffer(scratch),
            now: now.repr(),
            resource: prepared.resource.as_ref().map_or(std::ptr::null(), |r| r),
            activation: std::ptr::null(),
        };
        // SAFETY: the checked body with the param buffer; the row was filled for this program
        // (checked by `decide`); `prepared` and `scratch` are borrowed for the call.
        let outcome = unsafe {
            code.run(call, scratch, |code, ctx| match code {
                compile::RET_FALSE => Outcome::Bool(false),
                compile::RET_TRUE => Outcome::Bool(true),
                _ => self.outcome(code, ctx),
            })
        };
        let (n, failed) = match &outcome {
            Outcome::ParamFailed(i, e) => (*i, Some(e.clone())),
            _ => (code.tables.param_classes.len(), None),
        };
        // SAFETY: compiled code stored every param before `n` (the first `n` succeeded).
        unsafe { abi::materialize(&code.tables, scratch, n, failed) };
        outcome
    }

    #[cold]
    #[inline(never)]
    fn outcome(&self, code: u32, ctx: &Ctx) -> Outcome {
        match code {
            compile::RET_FALSE => Outcome::Bool(false),
            compile::RET_TRUE => Outcome::Bool(true),
            compile::RET_PARAM_FAILED => {
                // SAFETY: compiled code writes `failed` before returning `RET_PARAM_FAILED`.
                let failed = unsafe { ctx.failed.assume_init() };
                Outcome::ParamFailed(failed as usize, reported_error(ctx))
            }
            compile::RET_FAILED => Outcome::ResultFailed(reported_error(ctx)),
            compile::RET_VALUE => {
                // SAFETY: compiled code writes `out` before returning `RET_VALUE` (its first
                // word only for a boxed decision result, which `result_value` reads alone); a
                // boxed result lives in the scratch arena until the next call.
                match unsafe { abi::result_value(self.value_class, &ctx.out) } {
                    Ok(v) => Outcome::Value(v),
                    Err(e) => Outcome::ResultFailed(e),
                }
            }
            _ => Outcome::ResultFailed(internal("unknown return code")),
        }
    }
}

fn mark_slots(e: &TExpr, used: &mut [bool]) {
    visit(e, &mut |node| {
        if let crate::cel::typed::TExprKind::Var(crate::cel::typed::Var::Slot(i)) = node.kind
            && let Some(u) = used.get_mut(i)
        {
            *u = true;
        }
    });
}

/// Calls `f` on every node (recursion bounded by the parser's depth limit).
fn visit(e: &TExpr, f: &mut impl FnMut(&TExpr)) {
    f(e);
    e.children().for_each(|c| visit(c, f));
}

/// One standalone expression compiled to native code (its variables bound by an
/// [`Activation`], as the interpreter's are).
pub struct JitExpr {
    code: Code,
    class: Class,
    nativeness: Nativeness,
}

impl std::fmt::Debug for JitExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitExpr")
            .field("nativeness", &self.nativeness)
            .finish_non_exhaustive()
    }
}

impl JitExpr {
    /// Compiles an expression.
    pub fn compile(expr: &TExpr, opts: &Options) -> Result<JitExpr, JitError> {
        let unit = Unit {
            params: Vec::new(),
            result: expr,
            mode: Mode::Standalone,
            result_kind: ResultKind::Value,
        };
        let mut built = compile::build(&unit, opts)?;
        let nativeness = built.nativeness.pop().unwrap_or(Nativeness::Native);
        let code =
            Code::new(&mut Some(built)).ok_or_else(|| JitError::Internal("no code".into()))?;
        Ok(JitExpr {
            code,
            class: Class::of(&expr.ty),
            nativeness,
        })
    }

    /// How the expression runs.
    pub fn nativeness(&self) -> &Nativeness {
        &self.nativeness
    }

    /// Evaluates the expression; the result equals [`crate::cel::interp::eval`]'s.
    pub fn eval(&self, act: &Activation<'_>, scratch: &mut Scratch) -> EvalResult {
        scratch.reset();
        let call = Call {
            entry: self.code.entry,
            row: std::ptr::null(),
            params: std::ptr::null_mut(),
            now: act.now.unwrap_or(Timestamp::UNIX_EPOCH).repr(),
            resource: act.resource.map_or(std::ptr::null(), |r| r),
            activation: (act as *const Activation<'_>).cast(),
        };
        let then = |code, ctx: &Ctx| match code {
            compile::RET_VALUE => {
                // SAFETY: compiled code writes both words of `out` before returning
                // `RET_VALUE` for a value; a boxed result lives in the scratch arena until the
                // next call.
                unsafe { abi::result_value(self.class, &ctx.out) }
            }
            _ => Err(reported_error(ctx)),
        };
        // SAFETY: a standalone expression's checked body reads no row and stores no param (it
        // has none); `act` and `scratch` are borrowed for the call.
        unsafe { self.code.run(call, scratch, then) }
    }
}
