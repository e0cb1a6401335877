//! Building and compiling one native function: a decision (every param in authored order, then
//! the result) or one standalone expression.
//!
//! Takes typed trees; gives a finalized function in its own [`JITModule`], the tables it refers
//! to, what it reads of a resource, and per param whether it runs natively. A param that cannot
//! be lowered (or is too large) runs whole in the interpreter from inside the native function,
//! which reads the earlier params back from the param buffer (every function fills it but the
//! clean body of a decision whose expressions are all native, which runs only when no param
//! value is kept).
//!
//! Invariant: a [`Built`] function's entry has the signature `extern "C" fn(*mut Ctx) -> u32`
//! and returns one of the `RET_*` codes.

use super::JitError;
use super::abi::{self, Class, Ctx, OpKind, Tables};
use super::listing::{self, Listing, Names};
use super::lower::{
    Helper, Lower, Lowered, Lowering, Mode, Origin, ParamVal, Unsupported, row_flags,
};
use super::row::Needs;
use super::sites::{NoteKind, Site, Sites};
use crate::cel::typed::TExpr;
use cranelift::codegen::Context;
use cranelift::codegen::ir::UserFuncName;
use cranelift::codegen::{isa::OwnedTargetIsa, settings};
use cranelift::prelude::{
    AbiParam, Configurable, FunctionBuilder, FunctionBuilderContext, InstBuilder, MemFlagsData,
    StackSlotData, StackSlotKind, types,
};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, default_libcall_names};
use std::collections::HashMap;
use std::mem::offset_of;

/// The result is `false`.
pub(crate) const RET_FALSE: u32 = 0;
/// The result is `true`.
pub(crate) const RET_TRUE: u32 = 1;
/// Param `ctx.failed` failed with `ctx.error`.
pub(crate) const RET_PARAM_FAILED: u32 = 2;
/// The result failed with `ctx.error`.
pub(crate) const RET_FAILED: u32 = 3;
/// The result is the value in `ctx.out` (boxed for decisions, by class for values).
pub(crate) const RET_VALUE: u32 = 4;

/// Expressions with more nodes than this run in the interpreter instead of being compiled.
pub(crate) const MAX_NODES: usize = 20_000;

/// A unit whose compiled expressions add up to more than this (nodes plus [`EXPR_COST`] each)
/// is not compiled at all: code generation time grows faster than linearly with the size of
/// one function, so rules of thousands of params run on the interpreter instead (linear).
pub(crate) const MAX_UNIT_NODES: usize = 24_000;

/// What one expression of a unit costs beyond its nodes (its slot, error checks and blocks).
const EXPR_COST: usize = 16;

/// How compilation runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Run Cranelift's IR verifier on the function (on in debug builds).
    pub verify: bool,
    /// Keep the optimized IR and the machine code listing (for `sentinel ir`).
    pub listing: bool,
    /// Which processor features the code may use.
    pub cpu: Cpu,
}

/// Which processor features compiled code may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpu {
    /// Everything this machine has (what the daemon runs).
    Host,
    /// Only the architecture's baseline (x86-64: SSE2), so that the code, and its listing, is
    /// the same on every machine.
    Baseline,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            verify: cfg!(debug_assertions),
            listing: false,
            cpu: Cpu::Host,
        }
    }
}

/// What a unit's result becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// A decision: bool → `RET_FALSE`/`RET_TRUE`, anything else `RET_VALUE` boxed.
    Decision,
    /// A value: `RET_VALUE` with `ctx.out` by the result's class.
    Value,
}

/// What one native function computes.
pub(crate) struct Unit<'e> {
    /// Params by slot; `None` for params not lowered (not read by the rest).
    pub params: Vec<Option<&'e TExpr>>,
    pub result: &'e TExpr,
    pub mode: Mode,
    pub result_kind: ResultKind,
}

/// How one expression of a unit runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nativeness {
    /// Native code and helper calls.
    Native,
    /// Whole in the interpreter, and why.
    Interpreted(String),
}

/// A compiled function and everything it refers to.
pub(crate) struct Built {
    pub module: JITModule,
    pub entry: *const u8,
    /// The same function for rows without field errors (decisions only; else `entry`).
    pub clean_entry: *const u8,
    /// Whether `clean_entry` stores the params in the param buffer (`entry` always does).
    pub clean_stores_params: bool,
    pub tables: Tables,
    pub needs: Needs,
    /// Per param, then the result.
    pub nativeness: Vec<Nativeness>,
    pub listing: Option<Listing>,
}

enum Attempt {
    Done(Box<Built>),
    /// Expression `i` (params, then the result) cannot be lowered.
    Retry(usize, String),
}

/// Builds and compiles a unit, moving expressions that cannot be lowered to the interpreter.
pub(crate) fn build(unit: &Unit<'_>, opts: &Options) -> Result<Built, JitError> {
    let n = unit.params.len();
    let mut fallback: Vec<Option<String>> = unit
        .params
        .iter()
        .map(|p| p.map_or(0, count_nodes))
        .chain(std::iter::once(count_nodes(unit.result)))
        .map(|nodes| (nodes > MAX_NODES).then(|| format!("too large to compile ({nodes} nodes)")))
        .collect();
    let total: usize = unit
        .params
        .iter()
        .map(|p| p.map_or(0, count_nodes))
        .chain(std::iter::once(count_nodes(unit.result)))
        .filter(|nodes| *nodes <= MAX_NODES)
        .map(|nodes| nodes + EXPR_COST)
        .sum();
    if total > MAX_UNIT_NODES {
        return Err(JitError::Codegen(format!(
            "the rules are too large for native code ({total} weighted nodes, at most {MAX_UNIT_NODES})"
        )));
    }
    // Each retry moves one more of the n + 1 expressions to the interpreter, and the attempt
    // after the last move succeeds: at most n + 2 attempts.
    for _ in 0..n + 2 {
        let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            attempt(unit, &fallback, opts)
        }))
        .map_err(|p| JitError::Internal(panic_text(&*p)))??;
        match attempt {
            Attempt::Done(built) => return Ok(*built),
            Attempt::Retry(i, why) if fallback[i].is_none() => fallback[i] = Some(why),
            Attempt::Retry(_, why) => return Err(JitError::Internal(why)),
        }
    }
    Err(JitError::Internal("lowering did not converge".into()))
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    let text = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("code generator panicked: {text}")
}

/// Counts the nodes of a tree (recursion bounded by the parser's depth limit).
pub(crate) fn count_nodes(e: &TExpr) -> usize {
    1 + e.children().map(count_nodes).sum::<usize>()
}

fn isa(opts: &Options) -> Result<OwnedTargetIsa, JitError> {
    let mut flags = settings::builder();
    let set = |flags: &mut settings::Builder, k: &str, v: &str| {
        flags
            .set(k, v)
            .map_err(|e| JitError::Codegen(format!("setting {k}: {e}")))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "is_pic", "false")?;
    set(
        &mut flags,
        "enable_verifier",
        if opts.verify { "true" } else { "false" },
    )?;
    let builder = cranelift_native::builder_with_options(opts.cpu == Cpu::Host)
        .map_err(|e| JitError::Codegen(format!("host machine is not supported: {e}")))?;
    builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| JitError::Codegen(e.to_string()))
}

fn module_error(e: cranelift_module::ModuleError) -> JitError {
    JitError::Codegen(format!("{e:?}"))
}

/// A JIT module for the host with the helpers declared.
fn new_module(opts: &Options) -> Result<(JITModule, HashMap<Helper, FuncId>), JitError> {
    let mut builder = JITBuilder::with_isa(isa(opts)?, default_libcall_names());
    for h in Helper::ALL {
        let def = h.def();
        builder.symbol(def.symbol, def.address);
    }
    let mut module = JITModule::new(builder);
    let mut helper_ids = HashMap::new();
    for h in Helper::ALL {
        let sig = h.signature(&module);
        let id = module
            .declare_function(h.symbol(), Linkage::Import, &sig)
            .map_err(module_error)?;
        helper_ids.insert(h, id);
    }
    Ok((module, helper_ids))
}

/// Declares the entry function `extern "C" fn(*mut Ctx) -> u32` and a context to build it in.
fn declare_entry(
    module: &mut JITModule,
    name: &str,
    opts: &Options,
) -> Result<(FuncId, Context), JitError> {
    let mut sig = module.make_signature();
    sig.params
        .push(AbiParam::new(module.target_config().pointer_type()));
    sig.returns.push(AbiParam::new(types::I32));
    let func_id = module
        .declare_function(name, Linkage::Local, &sig)
        .map_err(module_error)?;
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, func_id.as_u32());
    ctx.set_disasm(opts.listing);
    Ok((func_id, ctx))
}

fn attempt(
    unit: &Unit<'_>,
    fallback: &[Option<String>],
    opts: &Options,
) -> Result<Attempt, JitError> {
    let (mut module, helper_ids) = new_module(opts)?;
    let mut tables = Tables {
        param_classes: vec![None; unit.params.len()],
        ..Tables::default()
    };
    let mut needs = Needs::default();
    let mut sites = Sites::default();
    let mut parts = Parts {
        module: &mut module,
        helper_ids: &helper_ids,
        tables: &mut tables,
        needs: &mut needs,
        sites: &mut sites,
    };
    let (func_id, listing, nativeness) = match body(&mut parts, unit, fallback, opts, false)? {
        Ok(built) => built,
        Err(retry) => return Ok(retry),
    };
    // Decisions get a second body for the common row without field errors: the same lowering
    // with the error checks of slot reads left out, chosen per call by `Prepared::clean`.
    let clean = match unit.mode {
        Mode::Decision => match body(&mut parts, unit, fallback, opts, true)? {
            Ok((id, clean_listing, _)) => Some((id, clean_listing)),
            Err(retry) => return Ok(retry),
        },
        Mode::Standalone => None,
    };
    let entry = module.get_finalized_function(func_id);
    let clean_entry = clean
        .as_ref()
        .map_or(entry, |(id, _)| module.get_finalized_function(*id));
    let listing = listing.map(|general| Listing {
        sites: sites.all().to_vec(),
        bodies: std::iter::once(general)
            .chain(clean.and_then(|(_, c)| c))
            .collect(),
    });
    Ok(Attempt::Done(Box::new(Built {
        module,
        entry,
        clean_entry,
        clean_stores_params: clean_stores_params(fallback),
        tables,
        needs,
        nativeness,
        listing,
    })))
}

/// What the bodies of one module share.
struct Parts<'m> {
    module: &'m mut JITModule,
    helper_ids: &'m HashMap<Helper, FuncId>,
    tables: &'m mut Tables,
    needs: &'m mut Needs,
    sites: &'m mut Sites,
}

type Body = Result<(FuncId, Option<listing::BodyListing>, Vec<Nativeness>), Attempt>;

/// Lowers, compiles and finalizes one function computing `unit`: every param in order, then
/// the result; `Err` asks to retry with one more expression in the interpreter.
fn body(
    parts: &mut Parts<'_>,
    unit: &Unit<'_>,
    fallback: &[Option<String>],
    opts: &Options,
    clean: bool,
) -> Result<Body, JitError> {
    let name = if clean { "decide_clean" } else { "decide" };
    let (func_id, mut ctx) = declare_entry(parts.module, name, opts)?;
    let mut fctx = FunctionBuilderContext::new();
    let mut nativeness = Vec::with_capacity(unit.params.len() + 1);
    {
        let b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let mut l = start(b, parts, unit);
        l.clean = clean;
        l.store_params = !clean || clean_stores_params(fallback);
        let n = unit.params.len();
        for (i, p) in unit.params.iter().enumerate() {
            let Some(p) = p else { continue };
            if let Err(Unsupported(why)) = lower_param(&mut l, i, p, fallback[i].as_deref()) {
                return Ok(Err(Attempt::Retry(i, why)));
            }
            nativeness.push(report(fallback[i].as_deref()));
        }
        if let Err(Unsupported(why)) = lower_result(&mut l, unit, fallback[n].as_deref()) {
            return Ok(Err(Attempt::Retry(n, why)));
        }
        nativeness.push(report(fallback[n].as_deref()));
        let Lower { b, .. } = l;
        b.finalize(parts.module.target_config());
    }
    let listing = define(parts, &mut ctx, (func_id, name), opts)?;
    Ok(Ok((func_id, listing, nativeness)))
}

/// The lowering context positioned at the start of the function body (after the entry block,
/// which loads the row pointer).
fn start<'a, 'm>(
    mut b: FunctionBuilder<'a>,
    parts: &'m mut Parts<'_>,
    unit: &Unit<'_>,
) -> Lower<'a, 'm> {
    let ptr = parts.module.target_config().pointer_type();
    let entry = b.create_block();
    b.set_srcloc(parts.sites.loc(Site {
        expr: None,
        span: Default::default(),
        note: Some(super::sites::Note {
            kind: NoteKind::Entry,
            text: "reads the row pointer from the context".into(),
        }),
    }));
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    // The entry block has no predecessors.
    b.seal_block(entry);
    let ctx = b.block_params(entry)[0];
    let out = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
    let row = (unit.mode == Mode::Decision).then(|| {
        b.ins()
            .load(ptr, row_flags(), ctx, offset_of!(Ctx, row) as i32)
    });
    let body = b.create_block();
    b.ins().jump(body, &[]);
    // The entry block's jump is the only way into the body.
    b.seal_block(body);
    // The initial error target is never used: every expression installs its own.
    let err_target = b.create_block();
    b.switch_to_block(err_target);
    b.append_block_param(err_target, ptr);
    b.seal_block(err_target);
    let code = b.ins().iconst(types::I32, i64::from(RET_FAILED));
    b.ins().return_(&[code]);
    b.switch_to_block(body);
    Lower {
        b,
        module: parts.module,
        helper_ids: parts.helper_ids,
        helper_refs: HashMap::new(),
        ptr,
        ctx,
        row,
        out,
        tables: parts.tables,
        needs: parts.needs,
        params: vec![None; unit.params.len()],
        mode: unit.mode,
        err_target,
        locals: Vec::new(),
        clean: false,
        store_params: true,
        sites: parts.sites,
        expr: 0,
    }
}

/// Compiles the built function into the module and finalizes it; the listing if asked for.
fn define(
    parts: &mut Parts<'_>,
    ctx: &mut Context,
    (func_id, name): (FuncId, &str),
    opts: &Options,
) -> Result<Option<listing::BodyListing>, JitError> {
    let module = &mut *parts.module;
    module.define_function(func_id, ctx).map_err(|e| match e {
        cranelift_module::ModuleError::Compilation(cranelift::codegen::CodegenError::Verifier(
            errors,
        )) => JitError::Verifier(cranelift::codegen::print_errors::pretty_verifier_error(
            &ctx.func, None, errors,
        )),
        other => module_error(other),
    })?;
    let listing = match (opts.listing, ctx.compiled_code()) {
        (true, Some(code)) => {
            let funcs: HashMap<FuncId, &'static str> = parts
                .helper_ids
                .iter()
                .map(|(h, id)| (*id, h.symbol()))
                .collect();
            let mut names = Names {
                sites: parts.sites,
                consts: parts
                    .tables
                    .consts
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (&**c as *const abi::Boxed as i64, k))
                    .collect(),
                funcs: &funcs,
            };
            Some(listing::body(name, &ctx.func, code, &mut names))
        }
        _ => None,
    };
    module.clear_context(ctx);
    module.finalize_definitions().map_err(module_error)?;
    Ok(listing)
}

/// Whether the clean body stores the params. It runs only for decisions that keep no param
/// values (`Params::Drop`), so it stores them only when an expression runs in the interpreter,
/// which reads the earlier params back from the buffer.
fn clean_stores_params(fallback: &[Option<String>]) -> bool {
    fallback.iter().any(Option::is_some)
}

fn report(fallback: Option<&str>) -> Nativeness {
    match fallback {
        Some(why) => Nativeness::Interpreted(why.to_string()),
        None => Nativeness::Native,
    }
}

/// Lowers an expression, or has the interpreter evaluate it whole (after `n` params).
fn lower_or_interpret(
    l: &mut Lower<'_, '_>,
    e: &TExpr,
    n: usize,
    fallback: Option<&str>,
) -> Lowering<Lowered> {
    match fallback {
        Some(_) => Ok(l.generic_raw(OpKind::Interp(e.clone(), n), Class::of(&e.ty), &[])),
        None => l.lower(e),
    }
}

/// Param `i`: evaluated in order and stored in the param buffer (when the body stores them); its
/// failure ends the function (the first failing param decides).
fn lower_param(l: &mut Lower<'_, '_>, i: usize, p: &TExpr, fallback: Option<&str>) -> Lowering<()> {
    l.expr = i;
    l.enter(p.span);
    let handler = l.b.create_block();
    let err = l.b.append_block_param(handler, l.ptr);
    l.err_target = handler;
    let v = lower_or_interpret(l, p, i, fallback)?;
    l.tables.param_classes[i] = Some(v.class);
    if l.store_params {
        store_param(l, i, v);
    }
    let ty = l.cl_type(v.class);
    let var = l.b.declare_var(ty);
    l.b.def_var(var, v.v);
    l.params[i] = Some(ParamVal {
        var,
        class: v.class,
        origin: if fallback.is_some() {
            Origin::None
        } else {
            v.origin
        },
    });
    let cont = l.b.create_block();
    l.b.ins().jump(cont, &[]);

    // Every failure of the param has been emitted.
    l.b.seal_block(handler);
    l.b.switch_to_block(handler);
    l.noted(
        NoteKind::Param,
        format!("param {i} failed: returns its error"),
        |l| {
            let flags = MemFlagsData::trusted();
            l.b.ins()
                .store(flags, err, l.ctx, offset_of!(Ctx, error) as i32);
            let idx = l.b.ins().iconst(types::I64, i as i64);
            l.b.ins()
                .store(flags, idx, l.ctx, offset_of!(Ctx, failed) as i32);
            let code = l.b.ins().iconst(types::I32, i64::from(RET_PARAM_FAILED));
            l.b.ins().return_(&[code]);
        },
    );

    // Only the success path above reaches `cont`.
    l.b.seal_block(cont);
    l.b.switch_to_block(cont);
    Ok(())
}

/// Stores param `i` in the param buffer (for `Params::Keep` and for an expression the
/// interpreter evaluates).
fn store_param(l: &mut Lower<'_, '_>, i: usize, v: Lowered) {
    l.noted(
        NoteKind::Param,
        format!("stores param {i} in the param buffer"),
        |l| {
            let buf =
                l.b.ins()
                    .load(l.ptr, row_flags(), l.ctx, offset_of!(Ctx, params) as i32);
            // Stored as held (a bool's upper bytes are stale: readers mask them).
            l.b.ins()
                .store(MemFlagsData::trusted(), v.v, buf, (i * 16) as i32);
        },
    );
}

/// The result: returned as a decision or a value.
fn lower_result(l: &mut Lower<'_, '_>, unit: &Unit<'_>, fallback: Option<&str>) -> Lowering<()> {
    let handler = l.b.create_block();
    let err = l.b.append_block_param(handler, l.ptr);
    l.err_target = handler;
    l.expr = unit.params.len();
    l.enter(unit.result.span);
    let v = lower_or_interpret(l, unit.result, unit.params.len(), fallback)?;
    let flags = MemFlagsData::trusted();
    let out = offset_of!(Ctx, out) as i32;
    let code = match (unit.result_kind, v.class) {
        (ResultKind::Decision, Class::Bool) => l.b.ins().uextend(types::I32, v.v),
        (ResultKind::Decision, _) => {
            let p = l.boxed(v);
            l.b.ins().store(flags, p, l.ctx, out);
            l.b.ins().iconst(types::I32, i64::from(RET_VALUE))
        }
        (ResultKind::Value, _) => {
            let (lo, hi) = l.split(v);
            l.b.ins().store(flags, lo, l.ctx, out);
            l.b.ins().store(flags, hi, l.ctx, out + 8);
            l.b.ins().iconst(types::I32, i64::from(RET_VALUE))
        }
    };
    l.b.ins().return_(&[code]);
    // Every failure of the result has been emitted.
    l.b.seal_block(handler);
    l.b.switch_to_block(handler);
    l.b.ins()
        .store(flags, err, l.ctx, offset_of!(Ctx, error) as i32);
    let code = l.b.ins().iconst(types::I32, i64::from(RET_FAILED));
    l.b.ins().return_(&[code]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{JitExpr, JitProgram, Scratch};
    use super::*;
    use crate::cel::interp::{self, Activation};
    use crate::cel::span::Span;
    use crate::cel::typed::{TExprKind, Var};
    use crate::cel::types::Type;
    use crate::cel::value::Value;

    fn node(kind: TExprKind, ty: Type) -> TExpr {
        TExpr {
            kind,
            ty,
            span: Span::default(),
        }
    }

    /// A comprehension variable outside any comprehension: no checker builds it, so lowering
    /// reports it `Unsupported`, and the expression runs in the interpreter instead.
    fn stray_local() -> TExpr {
        node(TExprKind::Var(Var::Local(0)), Type::Int)
    }

    #[test]
    fn an_unsupported_expression_runs_in_the_interpreter() {
        let e = stray_local();
        let native = JitExpr::compile(&e, &Options::default()).expect("compiles with a fallback");
        assert_eq!(
            native.nativeness(),
            &Nativeness::Interpreted("comprehension variable outside a comprehension".into())
        );
        let act = Activation::default();
        let got = native.eval(&act, &mut Scratch::default());
        assert_eq!(format!("{got:?}"), format!("{:?}", interp::eval(&e, &act)));
    }

    #[test]
    fn only_the_unsupported_param_falls_back() {
        let one = node(TExprKind::Const(Value::Int(1)), Type::Int);
        let result = node(TExprKind::Const(Value::Bool(true)), Type::Bool);
        let program = JitProgram::compile(&[one, stray_local()], &result, &Options::default())
            .expect("compiles with a fallback");
        assert_eq!(
            program.nativeness(),
            [
                Nativeness::Native,
                Nativeness::Interpreted("comprehension variable outside a comprehension".into()),
                Nativeness::Native,
            ]
        );
    }
}
