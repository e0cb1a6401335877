//! Lowering of comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`) to native loops:
//! the range's length and elements come from helpers, the body is lowered like any expression
//! with the iteration variable as a Cranelift variable, and the fold is control flow that
//! mirrors the interpreter's: `all`/`exists` keep the first error and let the absorbing value
//! win, `exists_one`, `map` and `filter` fail on the first error.
//!
//! The one value-dependent message of a fold, "no matching overload" for a non-bool predicate,
//! comes from the interpreter itself: it evaluates the same macro over a one-element list of
//! the offending value.

use super::abi::{Class, OpKind};
use super::lower::{Helper, Lower, Lowered, Lowering, ParamVal, Unsupported};
use super::lower_ops::placeholder;
use crate::cel::ast::MacroKind;
use crate::cel::typed::{TComprehension, TExpr, TExprKind, Var};
use crate::cel::types::Type;
use cranelift::codegen::ir::{self, BlockArg};
use cranelift::prelude::{Block, InstBuilder, IntCC, types};

/// The blocks of one loop over a range of `n` elements.
struct Loop {
    header: Block,
    latch: Block,
    exit: Block,
    index: ir::Value,
    /// Where this call's boxed values stood when the element began (`ScopeMark`).
    mark: ir::Value,
}

impl Lower<'_, '_> {
    pub(crate) fn lower_comprehension(&mut self, e: &TExpr) -> Lowering<Lowered> {
        let TExprKind::Comprehension(c) = &e.kind else {
            return Err(Unsupported("not a comprehension".into()));
        };
        if self.locals.len() != c.depth {
            return Err(Unsupported(format!(
                "comprehension depth {} out of order",
                c.depth
            )));
        }
        let range = self.lower(&c.range)?;
        let range = self.boxed(range);
        let n = self.range_len(c, range);
        let class = Class::of(&var_type(&c.range.ty));
        let ty = self.cl_type(class);
        let var = self.b.declare_var(ty);
        self.locals.push(ParamVal {
            var,
            class,
            origin: super::lower::Origin::None,
        });
        let result = match c.kind {
            MacroKind::All | MacroKind::Exists => self.fold_quantifier(c, range, n),
            MacroKind::ExistsOne => self.fold_exists_one(c, range, n),
            MacroKind::Map | MacroKind::Filter => self.fold_list(c, range, n),
        };
        self.locals.pop();
        result
    }

    /// The range's length; a range that is neither list nor map fails as the interpreter says.
    fn range_len(&mut self, c: &TComprehension, range: ir::Value) -> ir::Value {
        let n = self.call(Helper::RangeLen, &[range]).unwrap_or(range);
        let bad = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, n, 0);
        let fail = self.b.create_block();
        let ok = self.b.create_block();
        self.b.ins().brif(bad, fail, &[], ok, &[]);
        // The branch is the only way into `fail`.
        self.b.seal_block(fail);
        self.b.set_cold_block(fail);
        self.b.switch_to_block(fail);
        let shell = TExpr {
            kind: TExprKind::Comprehension(Box::new(TComprehension {
                kind: c.kind,
                range: placeholder(0, c.range.ty.clone(), &c.range),
                depth: 0,
                filter: None,
                body: null_of(&c.body),
            })),
            ty: Type::Dyn,
            span: c.range.span,
        };
        self.generic_raw(OpKind::Shell(shell), Class::Boxed, &[range]);
        self.b.ins().jump(ok, &[]);
        // The branch and the (never taken) end of `fail` are the ways into `ok`.
        self.b.seal_block(ok);
        self.b.switch_to_block(ok);
        n
    }

    /// Starts a loop over `0..n`: the current block becomes the body, with the element bound.
    fn loop_begin(&mut self, range: ir::Value, n: ir::Value) -> Lowering<Loop> {
        let header = self.b.create_block();
        let index = self.b.append_block_param(header, types::I64);
        let body = self.b.create_block();
        let latch = self.b.create_block();
        let exit = self.b.create_block();
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.ins().jump(header, &[BlockArg::from(zero)]);
        self.b.switch_to_block(header);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, index, n);
        self.b.ins().brif(more, body, &[], exit, &[]);
        // The header's test is the only way into `body`.
        self.b.seal_block(body);
        self.b.switch_to_block(body);
        let Some(local) = self.locals.last().copied() else {
            return Err(Unsupported("loop without a variable".into()));
        };
        let ctx = self.ctx;
        // What the element makes is dropped at its end (in the latch), so that one decision's
        // memory does not grow with the number of elements.
        let mark = self.call(Helper::ScopeMark, &[ctx]).unwrap_or(ctx);
        let class = self.b.ins().iconst(types::I64, local.class as i64);
        let out = self.out_addr();
        if let Some(err) = self.call(Helper::RangeItem, &[ctx, range, index, class, out]) {
            self.fail_if(err);
        }
        let item = self.load_out(local.class);
        self.b.def_var(local.var, item);
        Ok(Loop {
            header,
            latch,
            exit,
            index,
            mark,
        })
    }

    /// Ends the body (every path to the next element jumps to the latch, which drops what the
    /// element made) and continues in the exit block.
    fn loop_end(&mut self, lp: Loop) {
        // Every `continue` of the body has been emitted.
        self.b.seal_block(lp.latch);
        self.b.switch_to_block(lp.latch);
        let ctx = self.ctx;
        self.call(Helper::ScopeRelease, &[ctx, lp.mark]);
        let next = self.b.ins().iadd_imm_s(lp.index, 1);
        self.b.ins().jump(lp.header, &[BlockArg::from(next)]);
        // The entry jump and the latch are the header's predecessors; the header's test is the
        // only way into the exit.
        self.b.seal_block(lp.header);
        self.b.seal_block(lp.exit);
        self.b.switch_to_block(lp.exit);
    }

    /// Fails with the interpreter's error for a non-bool predicate `value` of `kind`.
    fn non_bool(&mut self, kind: MacroKind, value: ir::Value, like: &TExpr) {
        let shell = TExpr {
            kind: TExprKind::Comprehension(Box::new(TComprehension {
                kind,
                range: TExpr {
                    kind: TExprKind::List(vec![placeholder(0, Type::Dyn, like)]),
                    ty: Type::list(Type::Dyn),
                    span: like.span,
                },
                depth: 0,
                filter: None,
                body: TExpr {
                    kind: TExprKind::Var(Var::Local(0)),
                    ty: Type::Dyn,
                    span: like.span,
                },
            })),
            ty: Type::Dyn,
            span: like.span,
        };
        self.generic_raw(OpKind::Shell(shell), Class::Boxed, &[value]);
    }

    /// A predicate's truth (0/1 in an `i8`), failing (to the current error target) on a
    /// non-bool with the error of `kind`.
    fn predicate(&mut self, e: &TExpr, kind: MacroKind) -> Lowering<ir::Value> {
        let l = self.lower(e)?;
        if l.class == Class::Bool {
            return Ok(l.v);
        }
        let boxed = self.boxed(l);
        let t = self.call(Helper::Truth, &[boxed]).unwrap_or(boxed);
        let is_other = self.b.ins().icmp_imm_s(IntCC::Equal, t, 2);
        let bad = self.b.create_block();
        let good = self.b.create_block();
        self.b.ins().brif(is_other, bad, &[], good, &[]);
        // The branch is the only way into `bad`.
        self.b.seal_block(bad);
        self.b.set_cold_block(bad);
        self.b.switch_to_block(bad);
        self.non_bool(kind, boxed, e);
        self.b.ins().jump(good, &[]);
        // The branch and the (never taken) end of `bad` are the ways into `good`.
        self.b.seal_block(good);
        self.b.switch_to_block(good);
        Ok(t)
    }

    /// `all` / `exists`: the absorbing value (false / true) ends the loop; errors and non-bools
    /// are remembered (the first one) and become the result if nothing absorbs.
    fn fold_quantifier(
        &mut self,
        c: &TComprehension,
        range: ir::Value,
        n: ir::Value,
    ) -> Lowering<Lowered> {
        let absorbing = i64::from(c.kind == MacroKind::Exists);
        let first_err = self.b.declare_var(self.ptr);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b.def_var(first_err, null);
        let done = self.b.create_block();
        let result = self.b.append_block_param(done, types::I8);
        let lp = self.loop_begin(range, n)?;

        let on_err = self.b.create_block();
        let err = self.b.append_block_param(on_err, self.ptr);
        let saved = std::mem::replace(&mut self.err_target, on_err);
        let t = self.predicate(&c.body, c.kind);
        self.err_target = saved;
        let t = t?;
        let absorbed = self.b.ins().iconst(types::I8, absorbing);
        let is_abs = self.b.ins().icmp_imm_s(IntCC::Equal, t, absorbing);
        self.b
            .ins()
            .brif(is_abs, done, &[BlockArg::from(absorbed)], lp.latch, &[]);

        // A failing element: remember the first error and go on.
        // Every failure of the body (and of a non-bool's report) has been emitted.
        self.b.seal_block(on_err);
        self.b.switch_to_block(on_err);
        let seen = self.b.use_var(first_err);
        let has = self.b.ins().icmp_imm_s(IntCC::NotEqual, seen, 0);
        let keep = self.b.ins().select(has, seen, err);
        self.b.def_var(first_err, keep);
        self.b.ins().jump(lp.latch, &[]);
        self.loop_end(lp);

        let seen = self.b.use_var(first_err);
        let target = self.err_target;
        let kept = self.b.ins().iconst(types::I8, 1 - absorbing);
        self.b.ins().brif(
            seen,
            target,
            &[BlockArg::from(seen)],
            done,
            &[BlockArg::from(kept)],
        );
        // The loop's absorbing exits and its end are every way into `done`.
        self.b.seal_block(done);
        self.b.switch_to_block(done);
        Ok(Lowered::new(result, Class::Bool))
    }

    /// `exists_one`: counts true elements; the first error or non-bool is the result.
    fn fold_exists_one(
        &mut self,
        c: &TComprehension,
        range: ir::Value,
        n: ir::Value,
    ) -> Lowering<Lowered> {
        let count = self.b.declare_var(types::I64);
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(count, zero);
        let lp = self.loop_begin(range, n)?;
        let t = self.predicate(&c.body, c.kind)?;
        let wide = self.b.ins().uextend(types::I64, t);
        let so_far = self.b.use_var(count);
        let sum = self.b.ins().iadd(so_far, wide);
        self.b.def_var(count, sum);
        self.b.ins().jump(lp.latch, &[]);
        self.loop_end(lp);
        let total = self.b.use_var(count);
        let one = self.b.ins().icmp_imm_s(IntCC::Equal, total, 1);
        Ok(Lowered::new(one, Class::Bool))
    }

    /// `map` (with its optional filter) and `filter`: builds a list; the first error or
    /// non-bool predicate is the result.
    fn fold_list(
        &mut self,
        c: &TComprehension,
        range: ir::Value,
        n: ir::Value,
    ) -> Lowering<Lowered> {
        let ctx = self.ctx;
        let handle = self.call(Helper::ListNew, &[ctx]).unwrap_or(n);
        let lp = self.loop_begin(range, n)?;
        let local = self.locals.last().copied();
        let predicate = match c.kind {
            MacroKind::Map => c.filter.as_ref(),
            _ => Some(&c.body),
        };
        if let Some(p) = predicate {
            let t = self.predicate(p, MacroKind::Filter)?;
            let keep = self.b.create_block();
            self.b.ins().brif(t, keep, &[], lp.latch, &[]);
            // The predicate's test is the only way into `keep`.
            self.b.seal_block(keep);
            self.b.switch_to_block(keep);
        }
        let item = match (c.kind, local) {
            (MacroKind::Map, _) => self.lower(&c.body)?,
            (_, Some(local)) => Lowered::new(self.b.use_var(local.var), local.class),
            (_, None) => return Err(Unsupported("loop without a variable".into())),
        };
        let boxed = self.boxed(item);
        if let Some(err) = self.call(Helper::ListPush, &[ctx, handle, boxed]) {
            self.fail_if(err);
        }
        self.b.ins().jump(lp.latch, &[]);
        self.loop_end(lp);
        let list = self
            .call(Helper::ListFinish, &[ctx, handle])
            .unwrap_or(handle);
        Ok(Lowered::new(list, Class::Boxed))
    }
}

/// The type of a comprehension's variable over a range of `ty`.
fn var_type(ty: &Type) -> Type {
    match ty {
        Type::List(elem) => (**elem).clone(),
        Type::Map(key, _) => (**key).clone(),
        _ => Type::Dyn,
    }
}

/// A `null` standing for a body the interpreter will not evaluate.
fn null_of(like: &TExpr) -> TExpr {
    TExpr {
        kind: TExprKind::Const(crate::cel::value::Value::Null),
        ty: Type::Dyn,
        span: like.span,
    }
}
