//! Lowering of the typed tree to Cranelift IR: one context struct ([`Lower`]) with one
//! `lower_<construct>` method per [`TExprKind`] variant; the dispatcher [`Lower::lower`] is a
//! `match` whose arms are one call each. This file holds the context, the dispatcher, constants,
//! variables and the emission utilities; `lower_ops` holds operators and control flow,
//! `lower_access` field access, calls and literals, `lower_macro` comprehensions.
//!
//! Values are held natively by their static type's [`Class`]; errors are not values here but
//! control flow: every fallible operation branches to the current *error target*, a block taking
//! the error pointer. Only the constructs that absorb errors (`&&`, `||`, a param) install a new
//! target, so strict operators cost one predictable branch on the error-free path.
//!
//! Invariant: native code never computes a CEL result the interpreter's functions would compute
//! differently: every case it does not handle exactly (overflow, division by zero, mixed types,
//! anything boxed) goes to a helper that calls those functions.

use super::abi::{Boxed, Class, Ctx, Op, OpKind, Tables};
pub(crate) use super::helpers::Helper;
use super::row::{FieldKey, Needs, Slot};
use super::sites::{self, NoteKind, Sites};
use crate::cel::typed::{TExpr, TExprKind, Var};
use crate::cel::value::Value;
use cranelift::codegen::ir::{self, BlockArg, FuncRef, StackSlot};
use cranelift::prelude::{
    Block, FunctionBuilder, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type,
    Variable, types,
};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Module};
use std::collections::HashMap;
use std::mem::offset_of;

/// Where a value came from, when that lets a later operation read the prepared row instead of
/// computing: `timestamp(ref_time)` reads the pre-parsed time of the condition field `ref_time`
/// holds, and `ref_time != ""` its length from the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    None,
    /// `resource` (decision programs).
    Resource,
    /// `condition("<constant>")`, by condition index.
    Cond(usize),
    /// A string field held in a slot (`ResourceStr` or `CondStr`).
    Str(FieldKey),
}

/// A lowered expression: its native value, how it is held, and where it came from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lowered {
    pub v: ir::Value,
    pub class: Class,
    pub origin: Origin,
}

impl Lowered {
    pub(crate) fn new(v: ir::Value, class: Class) -> Lowered {
        Lowered {
            v,
            class,
            origin: Origin::None,
        }
    }
}

/// A param of a decision program, once lowered: later params read it as `Var::Slot`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParamVal {
    pub var: Variable,
    pub class: Class,
    pub origin: Origin,
}

/// Whether variables are a decision's (resource row, `now`, params as SSA values) or a
/// standalone expression's (everything from the interpreter's activation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Decision,
    Standalone,
}

/// Why an expression cannot be lowered (a bug of the lowering rather than of the rule): the
/// expression then runs in the interpreter, and `sentinel check` reports this text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unsupported(pub String);

/// What lowering gives: the value, or why the expression must run in the interpreter.
pub(crate) type Lowering<T> = Result<T, Unsupported>;

/// The lowering context of one function.
pub(crate) struct Lower<'a, 'm> {
    pub b: FunctionBuilder<'a>,
    pub module: &'m mut JITModule,
    pub helper_ids: &'m HashMap<Helper, FuncId>,
    pub helper_refs: HashMap<Helper, FuncRef>,
    pub ptr: Type,
    /// The `*mut Ctx` argument.
    pub ctx: ir::Value,
    /// The prepared row: `*const Slot` (decision programs).
    pub row: Option<ir::Value>,
    /// 16 bytes where helpers write results.
    pub out: StackSlot,
    pub tables: &'m mut Tables,
    pub needs: &'m mut Needs,
    pub params: Vec<Option<ParamVal>>,
    pub mode: Mode,
    /// Where a failing operation jumps, with the error pointer.
    pub err_target: Block,
    /// The variables of the enclosing comprehensions, by depth.
    pub locals: Vec<ParamVal>,
    /// Lowering the body for rows without field errors ([`crate::cel::jit::Prepared`]'s
    /// `clean`): slot reads skip their error checks.
    pub clean: bool,
    /// Whether each param is stored in the param buffer (`Ctx::params`) as it is computed.
    pub store_params: bool,
    /// Where each instruction comes from (see `sites`).
    pub sites: &'m mut Sites,
    /// The expression being lowered: params by index, then the result.
    pub expr: usize,
}

/// Flags for loads from the prepared row and the context inputs: never trapping, aligned, not
/// written while compiled code runs, and valid anywhere in the function (so unused loads vanish
/// and repeated ones merge).
pub(crate) fn row_flags() -> MemFlagsData {
    let mut f = MemFlagsData::trusted();
    f.set_readonly();
    f.set_can_move();
    f
}

/// Flags for loads of string bytes: valid (after the length test that guards them) and
/// immutable, but not aligned.
pub(crate) fn bytes_flags() -> MemFlagsData {
    let mut f = MemFlagsData::new();
    f.set_notrap();
    f.set_readonly();
    f
}

/// Flags for 16-byte loads of 8-aligned pairs in the row or the context inputs.
pub(crate) fn pair_flags() -> MemFlagsData {
    let mut f = MemFlagsData::new();
    f.set_notrap();
    f.set_readonly();
    f.set_can_move();
    f
}

impl Lower<'_, '_> {
    /// Lowers an expression; its errors jump to the current error target.
    pub(crate) fn lower(&mut self, e: &TExpr) -> Lowering<Lowered> {
        let parent = self.enter(e.span);
        let lowered = self.lower_node(e);
        self.set_loc(parent);
        lowered
    }

    fn lower_node(&mut self, e: &TExpr) -> Lowering<Lowered> {
        match &e.kind {
            TExprKind::Const(v) => self.lower_const(v, e),
            TExprKind::Var(var) => self.lower_var(*var, e),
            TExprKind::Not(a) => self.lower_not(a, e),
            TExprKind::Neg(a) => self.lower_neg(a, e),
            TExprKind::Binary(op, a, b) => self.lower_binary(*op, a, b, e),
            TExprKind::And(a, b) => self.lower_and(a, b),
            TExprKind::Or(a, b) => self.lower_or(a, b),
            TExprKind::Cond(c, a, b) => self.lower_cond(c, a, b, e),
            TExprKind::Select(target, field) => self.lower_select(target, &field.name, e),
            TExprKind::Has(target, field) => self.lower_has(target, &field.name),
            TExprKind::Index(target, key) => self.lower_index(target, key, e),
            TExprKind::Call(f, args) => self.lower_call(*f, args, e),
            TExprKind::MatchesConst(subject, re) => self.lower_matches(subject, re, e),
            TExprKind::List(items) => self.lower_list(items, e),
            TExprKind::Map(_) => self.lower_map(e),
            TExprKind::Comprehension(_) => self.lower_comprehension(e),
        }
    }

    /// The Cranelift type of a class.
    pub(crate) fn cl_type(&self, class: Class) -> Type {
        match class {
            Class::Bool => types::I8,
            Class::Int | Class::Uint => types::I64,
            Class::Double => types::F64,
            Class::Timestamp | Class::Duration => types::I128,
            Class::Boxed => self.ptr,
        }
    }

    fn lower_const(&mut self, v: &Value, e: &TExpr) -> Lowering<Lowered> {
        let class = Class::of(&e.ty);
        let ins = self.b.ins();
        let v = match (class, v) {
            (Class::Bool, Value::Bool(b)) => ins.iconst(types::I8, i64::from(*b)),
            (Class::Int, Value::Int(i)) => ins.iconst(types::I64, *i),
            (Class::Uint, Value::Uint(u)) => ins.iconst(types::I64, *u as i64),
            (Class::Double, Value::Double(d)) => ins.f64const(*d),
            (Class::Timestamp, Value::Timestamp(t)) => self.i128_const(t.repr()),
            (Class::Duration, Value::Duration(d)) => self.i128_const(d.nanos()),
            (Class::Boxed, v) => self.boxed_const(v.clone()),
            _ => return Err(Unsupported(format!("constant {v:?} of type {}", e.ty))),
        };
        Ok(Lowered::new(v, class))
    }

    pub(crate) fn i128_const(&mut self, n: i128) -> ir::Value {
        let lo = self.b.ins().iconst(types::I64, n as u64 as i64);
        let hi = self
            .b
            .ins()
            .iconst(types::I64, ((n as u128) >> 64) as u64 as i64);
        self.b.ins().iconcat(lo, hi)
    }

    /// A boxed constant owned by the program's tables; its address is embedded in the code.
    pub(crate) fn boxed_const(&mut self, v: Value) -> ir::Value {
        let boxed = Box::new(Boxed::new(v));
        let addr = &*boxed as *const Boxed as i64;
        let k = self.tables.consts.len();
        self.tables.consts.push(boxed);
        let ptr = self.ptr;
        self.noted(NoteKind::Constant, format!("constant #{k}"), |l| {
            l.b.ins().iconst(ptr, addr)
        })
    }

    fn lower_var(&mut self, var: Var, e: &TExpr) -> Lowering<Lowered> {
        let class = Class::of(&e.ty);
        match (self.mode, var) {
            (Mode::Decision, Var::Resource) => {
                let row = self.row_ptr()?;
                let offset = self.slot_offset(FieldKey::Resource) + offset_of!(Slot, boxed) as i32;
                let ptr = self.ptr;
                let v = self.noted(NoteKind::RowLoad, "resource", |l| {
                    l.b.ins().load(ptr, row_flags(), row, offset)
                });
                Ok(Lowered {
                    v,
                    class: Class::Boxed,
                    origin: Origin::Resource,
                })
            }
            (Mode::Decision, Var::Now) => {
                let v = self.b.ins().load(
                    types::I128,
                    pair_flags(),
                    self.ctx,
                    offset_of!(Ctx, now) as i32,
                );
                Ok(Lowered::new(v, Class::Timestamp))
            }
            (Mode::Decision, Var::Slot(i)) => match self.params.get(i).copied().flatten() {
                Some(p) => Ok(Lowered {
                    v: self.b.use_var(p.var),
                    class: p.class,
                    origin: p.origin,
                }),
                None => Err(Unsupported(format!("param {i} is not available"))),
            },
            (_, Var::Local(d)) => match self.locals.get(d).copied() {
                Some(local) => Ok(Lowered::new(self.b.use_var(local.var), local.class)),
                None => Err(Unsupported(
                    "comprehension variable outside a comprehension".into(),
                )),
            },
            // Everything else is bound by the interpreter's activation.
            _ => Ok(self.generic(OpKind::Interp(e.clone(), 0), class, &[])),
        }
    }

    /// The prepared row's pointer (decision programs only).
    pub(crate) fn row_ptr(&self) -> Lowering<ir::Value> {
        self.row
            .ok_or_else(|| Unsupported("resource row outside a decision".into()))
    }

    // ---- emission utilities ----------------------------------------------------------------

    /// Calls a helper, returning its result (if any).
    pub(crate) fn call(&mut self, h: Helper, args: &[ir::Value]) -> Option<ir::Value> {
        let f = match self.helper_refs.get(&h) {
            Some(f) => *f,
            None => {
                let id = self.helper_ids[&h];
                let f = self.module.declare_func_in_func(id, self.b.func);
                self.helper_refs.insert(h, f);
                f
            }
        };
        let text = match self.current_note() {
            Some(n) if n.kind == NoteKind::HelperCall => format!("{}: {}", h.symbol(), n.text),
            _ => format!("{}: {}", h.symbol(), h.def().text),
        };
        let inst = self.noted(NoteKind::HelperCall, text, |l| l.b.ins().call(f, args));
        self.b.inst_results(inst).first().copied()
    }

    /// Continues in a new block if `err` is null, else jumps to the error target with it.
    pub(crate) fn fail_if(&mut self, err: ir::Value) {
        let cont = self.b.create_block();
        let target = self.err_target;
        let text = self.error_branch_text();
        self.noted(NoteKind::ErrorBranch, text, |l| {
            l.b.ins()
                .brif(err, target, &[BlockArg::from(err)], cont, &[])
        });
        // The branch just emitted is the only predecessor of `cont`.
        self.b.seal_block(cont);
        self.b.switch_to_block(cont);
    }

    /// Lowers `e` with its errors jumping to `target` instead of the current error target.
    pub(crate) fn lower_catching(&mut self, e: &TExpr, target: Block) -> Lowering<Lowered> {
        let saved = std::mem::replace(&mut self.err_target, target);
        let l = self.lower(e);
        self.err_target = saved;
        l
    }

    pub(crate) fn out_addr(&mut self) -> ir::Value {
        self.b.ins().stack_addr(self.ptr, self.out, 0)
    }

    /// Loads a helper's result of `class` from the out slot.
    pub(crate) fn load_out(&mut self, class: Class) -> ir::Value {
        let ty = self.cl_type(class);
        self.b.ins().stack_load(self.ptr, ty, self.out, 0)
    }

    /// A value's bits as two `i64`s (for helpers).
    pub(crate) fn split(&mut self, l: Lowered) -> (ir::Value, ir::Value) {
        let zero = self.b.ins().iconst(types::I64, 0);
        match l.class {
            Class::Bool => (self.b.ins().uextend(types::I64, l.v), zero),
            Class::Int | Class::Uint | Class::Boxed => (l.v, zero),
            Class::Double => (
                self.b.ins().bitcast(types::I64, MemFlagsData::new(), l.v),
                zero,
            ),
            Class::Timestamp | Class::Duration => self.b.ins().isplit(l.v),
        }
    }

    /// A pointer to the value boxed (scalars are boxed by a helper).
    pub(crate) fn boxed(&mut self, l: Lowered) -> ir::Value {
        if l.class == Class::Boxed {
            return l.v;
        }
        let (lo, hi) = self.split(l);
        let class = self.b.ins().iconst(types::I64, l.class as i64);
        let ctx = self.ctx;
        self.call(Helper::Box, &[ctx, class, lo, hi]).unwrap_or(lo)
    }

    /// Converts to `class` (only ever scalar → boxed, for `dyn` positions).
    pub(crate) fn coerce(&mut self, l: Lowered, class: Class) -> Lowering<ir::Value> {
        if l.class == class {
            Ok(l.v)
        } else if class == Class::Boxed {
            Ok(self.boxed(l))
        } else {
            Err(Unsupported(format!(
                "cannot hold {:?} as {class:?}",
                l.class
            )))
        }
    }

    /// Registers a generic operation and calls it on boxed arguments.
    pub(crate) fn generic(&mut self, kind: OpKind, class: Class, args: &[Lowered]) -> Lowered {
        let ptrs: Vec<ir::Value> = args.iter().map(|a| self.boxed(*a)).collect();
        self.generic_raw(kind, class, &ptrs)
    }

    /// As [`Lower::generic`], with argument pointers already boxed (or null).
    pub(crate) fn generic_raw(
        &mut self,
        kind: OpKind,
        class: Class,
        ptrs: &[ir::Value],
    ) -> Lowered {
        let idx = self.tables.ops.len();
        let what = sites::op_text(&kind);
        self.tables.ops.push(Op {
            kind,
            class,
            n_args: ptrs.len(),
        });
        self.noted(NoteKind::HelperCall, what, |l| {
            l.generic_call(idx, class, ptrs)
        })
    }

    fn generic_call(&mut self, idx: usize, class: Class, ptrs: &[ir::Value]) -> Lowered {
        let size = (ptrs.len().max(1) * 8) as u32;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            size,
            3,
        ));
        for (i, p) in ptrs.iter().enumerate() {
            self.b.ins().stack_store(self.ptr, *p, slot, (i * 8) as i32);
        }
        let args = self.b.ins().stack_addr(self.ptr, slot, 0);
        let op = self.b.ins().iconst(types::I64, idx as i64);
        let out = self.out_addr();
        let ctx = self.ctx;
        if let Some(err) = self.call(Helper::Generic, &[ctx, op, args, out]) {
            self.fail_if(err);
        }
        let v = self.load_out(class);
        Lowered::new(v, class)
    }

    /// Registers a scalar slow-path operation and calls it on the bits of `a` (and `b`).
    pub(crate) fn scalar(
        &mut self,
        kind: OpKind,
        class: Class,
        a: Lowered,
        b: Option<Lowered>,
    ) -> ir::Value {
        let idx = self.tables.ops.len();
        let what = sites::op_text(&kind);
        self.tables.ops.push(Op {
            kind,
            class,
            n_args: 0,
        });
        self.noted(NoteKind::HelperCall, what, |l| {
            l.scalar_call(idx, class, a, b)
        })
    }

    fn scalar_call(
        &mut self,
        idx: usize,
        class: Class,
        a: Lowered,
        b: Option<Lowered>,
    ) -> ir::Value {
        let (alo, ahi) = self.split(a);
        let (blo, bhi) = match b {
            Some(b) => self.split(b),
            None => {
                let z = self.b.ins().iconst(types::I64, 0);
                (z, z)
            }
        };
        let op = self.b.ins().iconst(types::I64, idx as i64);
        let out = self.out_addr();
        let ctx = self.ctx;
        if let Some(err) = self.call(Helper::Scalar, &[ctx, op, alo, ahi, blo, bhi, out]) {
            self.fail_if(err);
        }
        self.load_out(class)
    }

    /// Emits `fast` when `slow_cond` is false, else the scalar slow path of `kind`; both meet
    /// in one value. The slow block is cold.
    pub(crate) fn guarded(
        &mut self,
        slow_cond: ir::Value,
        class: Class,
        fast: impl FnOnce(&mut Self) -> ir::Value,
        slow: (OpKind, Lowered, Option<Lowered>),
    ) -> ir::Value {
        let fast_block = self.b.create_block();
        let slow_block = self.b.create_block();
        let merge = self.b.create_block();
        let ty = self.cl_type(class);
        let result = self.b.append_block_param(merge, ty);
        self.b
            .ins()
            .brif(slow_cond, slow_block, &[], fast_block, &[]);
        // Both blocks have the branch above as their only predecessor.
        self.b.seal_block(fast_block);
        self.b.seal_block(slow_block);
        self.b.set_cold_block(slow_block);

        self.b.switch_to_block(fast_block);
        let v = fast(self);
        self.b.ins().jump(merge, &[BlockArg::from(v)]);

        self.b.switch_to_block(slow_block);
        let (kind, a, b) = slow;
        let v = self.scalar(kind, class, a, b);
        self.b.ins().jump(merge, &[BlockArg::from(v)]);
        // Both arms have jumped to `merge`.
        self.b.seal_block(merge);
        self.b.switch_to_block(merge);
        result
    }
}
