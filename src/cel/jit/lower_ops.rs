//! Lowering of operators and control flow: `!`, `-`, the binary operators, `&&`, `||`, `?:`.
//!
//! Native code handles exactly the error-free cases of scalar arithmetic and comparison (with
//! Cranelift's overflow-reporting instructions); overflow, division by zero, `i64::MIN / -1`,
//! time arithmetic and mixed numeric types take the scalar slow path to [`crate::cel::ops`], and
//! boxed operands the generic one. Division instructions are only reached after their guards,
//! so compiled code never traps.

use super::abi::{Class, OpKind};
use super::lower::{Helper, Lower, Lowered, Lowering, Mode, Origin, bytes_flags, row_flags};
use super::row::Slot;
use super::sites::{self, NoteKind};
use crate::cel::ast::BinaryOp;
use crate::cel::time::OFFSET_BITS;
use crate::cel::typed::{TExpr, TExprKind, Var};
use crate::cel::types::Type;
use crate::cel::value::Value;
use cranelift::codegen::ir::{self, BlockArg};
use cranelift::prelude::{FloatCC, InstBuilder, IntCC, types};
use std::mem::offset_of;

impl Lower<'_, '_> {
    pub(crate) fn lower_not(&mut self, a: &TExpr, e: &TExpr) -> Lowering<Lowered> {
        let la = self.lower(a)?;
        Ok(match la.class {
            Class::Bool => Lowered::new(self.b.ins().bxor_imm_s(la.v, 1), Class::Bool),
            _ => self.generic(OpKind::Not, Class::of(&e.ty), &[la]),
        })
    }

    pub(crate) fn lower_neg(&mut self, a: &TExpr, e: &TExpr) -> Lowering<Lowered> {
        let la = self.lower(a)?;
        let class = Class::of(&e.ty);
        Ok(match la.class {
            Class::Int => {
                let is_min = self.b.ins().icmp_imm_s(IntCC::Equal, la.v, i64::MIN);
                let v = self.guarded(
                    is_min,
                    Class::Int,
                    |l| l.b.ins().ineg(la.v),
                    (OpKind::ScalarNeg(Class::Int), la, None),
                );
                Lowered::new(v, Class::Int)
            }
            Class::Double => Lowered::new(self.b.ins().fneg(la.v), Class::Double),
            Class::Boxed => self.generic(OpKind::Neg, class, &[la]),
            other => {
                let v = self.scalar(OpKind::ScalarNeg(other), class, la, None);
                Lowered::new(v, class)
            }
        })
    }

    pub(crate) fn lower_binary(
        &mut self,
        op: BinaryOp,
        a: &TExpr,
        b: &TExpr,
        e: &TExpr,
    ) -> Lowering<Lowered> {
        let la = self.lower(a)?;
        let lb = self.lower(b)?;
        let class = Class::of(&e.ty);
        let comparison = matches!(
            op,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        );
        let v = match (la.class, lb.class) {
            (Class::Int, Class::Int) => self.int_binary(op, la, lb, class, true),
            (Class::Uint, Class::Uint) => self.int_binary(op, la, lb, class, false),
            (Class::Double, Class::Double) => self.double_binary(op, la, lb, class),
            (Class::Timestamp, Class::Timestamp) if op == BinaryOp::Sub => {
                self.timestamp_diff(la, lb)
            }
            (Class::Bool, Class::Bool) | (Class::Duration, Class::Duration) if comparison => {
                // false < true; durations are signed nanoseconds.
                let signed = la.class != Class::Bool;
                self.b.ins().icmp(int_cc(op, signed), la.v, lb.v)
            }
            (Class::Timestamp, Class::Timestamp) if comparison => {
                // The instants, without the offsets packed below them.
                let (a, b) = (self.timestamp_nanos(la.v), self.timestamp_nanos(lb.v));
                self.b.ins().icmp(int_cc(op, true), a, b)
            }
            (Class::Boxed, Class::Boxed)
                if matches!(op, BinaryOp::Eq | BinaryOp::Ne)
                    && a.ty == Type::String
                    && b.ty == Type::String =>
            {
                let eq = self.string_eq(la, lb, a, b)?;
                if op == BinaryOp::Ne {
                    self.b.ins().bxor_imm_s(eq, 1)
                } else {
                    eq
                }
            }
            (ca, cb) if ca != Class::Boxed && cb != Class::Boxed && class != Class::Boxed => {
                self.scalar(OpKind::Scalar(op, ca, cb), class, la, Some(lb))
            }
            _ => return Ok(self.generic(OpKind::Binary(op), class, &[la, lb])),
        };
        Ok(Lowered::new(v, class))
    }

    /// `int` (signed) or `uint` arithmetic and comparison.
    fn int_binary(
        &mut self,
        op: BinaryOp,
        la: Lowered,
        lb: Lowered,
        class: Class,
        signed: bool,
    ) -> ir::Value {
        let (a, b) = (la.v, lb.v);
        let slow = OpKind::Scalar(op, la.class, lb.class);
        let ins = self.b.ins();
        let (v, overflow) = match (op, signed) {
            (BinaryOp::Add, true) => ins.sadd_overflow(a, b),
            (BinaryOp::Add, false) => ins.uadd_overflow(a, b),
            (BinaryOp::Sub, true) => ins.ssub_overflow(a, b),
            (BinaryOp::Sub, false) => ins.usub_overflow(a, b),
            (BinaryOp::Mul, true) => ins.smul_overflow(a, b),
            (BinaryOp::Mul, false) => ins.umul_overflow(a, b),
            (BinaryOp::Div | BinaryOp::Rem, _) => {
                let slow_cond = self.division_guard(a, b, signed);
                let fast = move |l: &mut Self| match (op, signed) {
                    (BinaryOp::Div, true) => l.b.ins().sdiv(a, b),
                    (BinaryOp::Div, false) => l.b.ins().udiv(a, b),
                    (_, true) => l.b.ins().srem(a, b),
                    (_, false) => l.b.ins().urem(a, b),
                };
                return self.guarded(slow_cond, class, fast, (slow, la, Some(lb)));
            }
            (BinaryOp::In | BinaryOp::And | BinaryOp::Or, _) => {
                return self.scalar(slow, class, la, Some(lb));
            }
            _ => return ins.icmp(int_cc(op, signed), a, b),
        };
        self.guarded(overflow, class, move |_| v, (slow, la, Some(lb)))
    }

    /// `timestamp - timestamp`. Within ±9e18 ns the result is exactly the difference of the
    /// nanoseconds (then `time::ts_sub_ts`'s intermediate `seconds * 1e9` cannot overflow
    /// either); beyond that, `time::ts_sub_ts` decides on the slow path.
    fn timestamp_diff(&mut self, la: Lowered, lb: Lowered) -> ir::Value {
        const LIMIT: i128 = 9_000_000_000_000_000_000;
        let (a, b) = (self.timestamp_nanos(la.v), self.timestamp_nanos(lb.v));
        let diff = self.b.ins().isub(a, b);
        // |diff| <= LIMIT, as one unsigned comparison of diff + LIMIT against 2 * LIMIT.
        let limit = self.i128_const(LIMIT);
        let shifted = self.b.ins().iadd(diff, limit);
        let span = self.i128_const(2 * LIMIT);
        let outside = self.b.ins().icmp(IntCC::UnsignedGreaterThan, shifted, span);
        let slow = OpKind::Scalar(BinaryOp::Sub, Class::Timestamp, Class::Timestamp);
        self.guarded(
            outside,
            Class::Duration,
            move |_| diff,
            (slow, la, Some(lb)),
        )
    }

    /// A timestamp's nanoseconds: its packed form (`time::Timestamp::repr`) shifted right past
    /// the offset. Shifted as two 64-bit halves: Cranelift lowers a 128-bit shift as one by a
    /// variable amount (about 17 instructions on x86-64), the halves by a constant take 5.
    fn timestamp_nanos(&mut self, repr: ir::Value) -> ir::Value {
        let bits = i64::from(OFFSET_BITS);
        let (lo, hi) = self.b.ins().isplit(repr);
        let low = self.b.ins().ushr_imm_s(lo, bits);
        let carried = self.b.ins().ishl_imm_s(hi, 64 - bits);
        let low = self.b.ins().bor(low, carried);
        let high = self.b.ins().sshr_imm_s(hi, bits);
        self.b.ins().iconcat(low, high)
    }

    /// True when a division must not be executed: by zero, or `i64::MIN / -1`.
    fn division_guard(&mut self, a: ir::Value, b: ir::Value, signed: bool) -> ir::Value {
        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
        if !signed {
            return zero;
        }
        let min = self.b.ins().icmp_imm_s(IntCC::Equal, a, i64::MIN);
        let minus_one = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
        let both = self.b.ins().band(min, minus_one);
        self.b.ins().bor(zero, both)
    }

    /// IEEE double arithmetic and comparison (NaN compares false, `!=` true).
    fn double_binary(&mut self, op: BinaryOp, la: Lowered, lb: Lowered, class: Class) -> ir::Value {
        let (a, b) = (la.v, lb.v);
        let ins = self.b.ins();
        match op {
            BinaryOp::Add => ins.fadd(a, b),
            BinaryOp::Sub => ins.fsub(a, b),
            BinaryOp::Mul => ins.fmul(a, b),
            BinaryOp::Div => ins.fdiv(a, b),
            BinaryOp::Eq => ins.fcmp(FloatCC::Equal, a, b),
            BinaryOp::Ne => ins.fcmp(FloatCC::NotEqual, a, b),
            BinaryOp::Lt => ins.fcmp(FloatCC::LessThan, a, b),
            BinaryOp::Le => ins.fcmp(FloatCC::LessThanOrEqual, a, b),
            BinaryOp::Gt => ins.fcmp(FloatCC::GreaterThan, a, b),
            BinaryOp::Ge => ins.fcmp(FloatCC::GreaterThanOrEqual, a, b),
            _ => self.scalar(OpKind::Scalar(op, la.class, lb.class), class, la, Some(lb)),
        }
    }

    /// Byte equality of two strings: lengths first, then the bytes (inline against a short
    /// constant, else by a helper).
    fn string_eq(&mut self, la: Lowered, lb: Lowered, a: &TExpr, b: &TExpr) -> Lowering<ir::Value> {
        let constant = |e: &TExpr| match &e.kind {
            TExprKind::Const(Value::String(s)) if s.len() <= 16 => Some(s.clone()),
            _ => None,
        };
        if let Some(c) = constant(b) {
            return self.string_eq_const(la, c.as_bytes());
        }
        if let Some(c) = constant(a) {
            return self.string_eq_const(lb, c.as_bytes());
        }
        let flags = bytes_flags();
        let pa = self.b.ins().load(self.ptr, flags, la.v, 0);
        let na = self.b.ins().load(types::I64, flags, la.v, 8);
        let pb = self.b.ins().load(self.ptr, flags, lb.v, 0);
        let nb = self.b.ins().load(types::I64, flags, lb.v, 8);
        Ok(self.call(Helper::BytesEq, &[pa, na, pb, nb]).unwrap_or(na))
    }

    /// A string's length, and its first 8 bytes when it sits in a row slot.
    fn string_len(&mut self, l: Lowered) -> Lowering<(ir::Value, Option<ir::Value>)> {
        if let Origin::Str(key) = l.origin {
            let row = self.row_ptr()?;
            let base = self.slot_offset(key) + offset_of!(Slot, w) as i32;
            let name = sites::field_text(key, self.needs);
            return Ok(self.noted(
                NoteKind::RowLoad,
                format!("{name} (length, first 8 bytes)"),
                |l| {
                    let len = l.b.ins().load(types::I64, row_flags(), row, base);
                    let prefix = l.b.ins().load(types::I64, row_flags(), row, base + 8);
                    (len, Some(prefix))
                },
            ));
        }
        Ok((self.b.ins().load(types::I64, bytes_flags(), l.v, 8), None))
    }

    /// A string equal to constant bytes: from the row slot's length and prefix alone for up to
    /// 8 bytes, else the length and then the bytes.
    fn string_eq_const(&mut self, l: Lowered, c: &[u8]) -> Lowering<ir::Value> {
        let (len, prefix) = self.string_len(l)?;
        if c.is_empty() {
            return Ok(self.b.ins().icmp_imm_s(IntCC::Equal, len, 0));
        }
        let same_len = self.b.ins().icmp_imm_s(IntCC::Equal, len, c.len() as i64);
        if let (Some(prefix), true) = (prefix, c.len() <= 8) {
            let mut bytes = [0u8; 8];
            bytes[..c.len()].copy_from_slice(c);
            let expected = u64::from_le_bytes(bytes) as i64;
            let same = self.b.ins().icmp_imm_s(IntCC::Equal, prefix, expected);
            return Ok(self.b.ins().band(same_len, same));
        }
        let compare = self.b.create_block();
        let done = self.b.create_block();
        let result = self.b.append_block_param(done, types::I8);
        let no = self.b.ins().iconst(types::I8, 0);
        self.b
            .ins()
            .brif(same_len, compare, &[], done, &[BlockArg::from(no)]);
        // The length test is the only way into `compare`.
        self.b.seal_block(compare);
        self.b.switch_to_block(compare);
        let p = self.b.ins().load(self.ptr, bytes_flags(), l.v, 0);
        let eq = self.bytes_eq_const(p, c);
        self.b.ins().jump(done, &[BlockArg::from(eq)]);
        // Both the length test and the byte comparison have jumped to `done`.
        self.b.seal_block(done);
        self.b.switch_to_block(done);
        Ok(result)
    }

    /// Compares 1..=16 bytes at `p` with `c`, with at most two (overlapping) loads per side.
    fn bytes_eq_const(&mut self, p: ir::Value, c: &[u8]) -> ir::Value {
        let n = c.len();
        let chunks: Vec<(usize, usize)> = match n {
            1..=3 => (0..n).map(|i| (i, 1)).collect(),
            4..=7 => vec![(0, 4), (n - 4, 4)],
            8 => vec![(0, 8)],
            _ => vec![(0, 8), (n - 8, 8)],
        };
        let mut all = None;
        for (offset, width) in chunks {
            let ty = match width {
                1 => types::I8,
                4 => types::I32,
                _ => types::I64,
            };
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(&c[offset..offset + width]);
            let expected = u64::from_le_bytes(bytes) as i64;
            let loaded = self.b.ins().load(ty, bytes_flags(), p, offset as i32);
            let wide = if ty == types::I64 {
                loaded
            } else {
                self.b.ins().uextend(types::I64, loaded)
            };
            let eq = self.b.ins().icmp_imm_s(IntCC::Equal, wide, expected);
            all = Some(match all {
                None => eq,
                Some(prev) => self.b.ins().band(prev, eq),
            });
        }
        all.unwrap_or_else(|| self.b.ins().iconst(types::I8, 1))
    }

    pub(crate) fn lower_and(&mut self, a: &TExpr, b: &TExpr) -> Lowering<Lowered> {
        self.lower_logic(a, b, BinaryOp::And)
    }

    pub(crate) fn lower_or(&mut self, a: &TExpr, b: &TExpr) -> Lowering<Lowered> {
        self.lower_logic(a, b, BinaryOp::Or)
    }

    /// What a logic operand is: its bool as 0/1 or 2 for "not a bool", and a pointer to it when
    /// it is not a bool (else null).
    fn truth(&mut self, l: Lowered) -> (ir::Value, ir::Value) {
        if l.class == Class::Bool {
            let null = self.b.ins().iconst(self.ptr, 0);
            return (l.v, null);
        }
        let boxed = self.boxed(l);
        let t = self.call(Helper::Truth, &[boxed]).unwrap_or(boxed);
        let other = self.b.ins().icmp_imm_s(IntCC::Equal, t, 2);
        let null = self.b.ins().iconst(self.ptr, 0);
        let ptr = self.b.ins().select(other, boxed, null);
        (t, ptr)
    }

    /// Branches on a bool: to `hit` with `args` when it equals `absorbing`, else to `miss`.
    fn branch_on(
        &mut self,
        v: ir::Value,
        absorbing: i64,
        hit: (ir::Block, &[BlockArg]),
        miss: (ir::Block, &[BlockArg]),
    ) {
        if absorbing == 1 {
            self.b.ins().brif(v, hit.0, hit.1, miss.0, miss.1);
        } else {
            self.b.ins().brif(v, miss.0, miss.1, hit.0, hit.1);
        }
    }

    /// `&&` and `||` on two bools: the absorbing value (false for `&&`, true for `||`) on either
    /// side decides; else the left error, then the right error, else the other value.
    fn lower_logic_bool(&mut self, a: &TExpr, b: &TExpr, absorbing: i64) -> Lowering<Lowered> {
        let done = self.b.create_block();
        let result = self.b.append_block_param(done, types::I8);
        let right = self.b.create_block();
        let left_err = self.b.append_block_param(right, self.ptr);
        let null = self.b.ins().iconst(self.ptr, 0);
        let absorbed = self.b.ins().iconst(types::I8, absorbing);
        let kept = self.b.ins().iconst(types::I8, 1 - absorbing);

        let on_left_err = self.b.create_block();
        let left_e = self.b.append_block_param(on_left_err, self.ptr);
        let la = self.lower_catching(a, on_left_err)?;
        self.branch_on(
            la.v,
            absorbing,
            (done, &[BlockArg::from(absorbed)]),
            (right, &[BlockArg::from(null)]),
        );
        self.b.switch_to_block(on_left_err);
        self.b.ins().jump(right, &[BlockArg::from(left_e)]);
        // The left operand's failures and outcomes are all emitted: they are every way into
        // `on_left_err` and `right`.
        self.b.seal_block(on_left_err);
        self.b.seal_block(right);

        self.b.switch_to_block(right);
        let on_right_err = self.b.create_block();
        let right_e = self.b.append_block_param(on_right_err, self.ptr);
        let lb = self.lower_catching(b, on_right_err)?;
        let settle = self.b.create_block();
        self.branch_on(
            lb.v,
            absorbing,
            (done, &[BlockArg::from(absorbed)]),
            (settle, &[]),
        );
        // The right operand's test is the only way into `settle`.
        self.b.seal_block(settle);
        self.b.switch_to_block(settle);
        let target = self.err_target;
        self.b.ins().brif(
            left_err,
            target,
            &[BlockArg::from(left_err)],
            done,
            &[BlockArg::from(kept)],
        );

        self.b.switch_to_block(on_right_err);
        let has_left = self.b.ins().icmp_imm_s(IntCC::NotEqual, left_err, 0);
        let first = self.b.ins().select(has_left, left_err, right_e);
        self.b.ins().jump(target, &[BlockArg::from(first)]);
        // The right operand's failures and every outcome have been emitted.
        self.b.seal_block(on_right_err);
        self.b.seal_block(done);
        self.b.switch_to_block(done);
        Ok(Lowered::new(result, Class::Bool))
    }

    /// `&&` and `||` with CEL's commutative error absorption: the absorbing value (false for
    /// `&&`, true for `||`) on either side decides; else the left error, then the right error,
    /// then a non-bool operand's "no matching overload".
    fn lower_logic(&mut self, a: &TExpr, b: &TExpr, op: BinaryOp) -> Lowering<Lowered> {
        let absorbing = i64::from(op == BinaryOp::Or);
        if self.infallible(a) && self.infallible(b) {
            // Two bools that cannot fail: no control flow needed (evaluating both is cheap and
            // cannot change the result).
            let (la, lb) = (self.lower(a)?, self.lower(b)?);
            let v = if absorbing == 1 {
                self.b.ins().bor(la.v, lb.v)
            } else {
                self.b.ins().band(la.v, lb.v)
            };
            return Ok(Lowered::new(v, Class::Bool));
        }
        if Class::of(&a.ty) == Class::Bool && Class::of(&b.ty) == Class::Bool {
            return self.lower_logic_bool(a, b, absorbing);
        }
        self.lower_logic_dyn(a, b, op)
    }

    /// `&&` / `||` with a `dyn` operand: as [`Lower::lower_logic_bool`], each side may also be a
    /// non-bool, which fails with the interpreter's error when nothing absorbs and no side failed.
    fn lower_logic_dyn(&mut self, a: &TExpr, b: &TExpr, op: BinaryOp) -> Lowering<Lowered> {
        let absorbing = i64::from(op == BinaryOp::Or);
        let done = self.b.create_block();
        let result = self.b.append_block_param(done, types::I8);
        let right = self.b.create_block();
        let left_err = self.b.append_block_param(right, self.ptr);
        let left_other = self.b.append_block_param(right, self.ptr);
        let null = self.b.ins().iconst(self.ptr, 0);
        let absorbed = self.b.ins().iconst(types::I8, absorbing);

        // The left operand: absorbing → done; else evaluate the right with what the left was.
        let on_left_err = self.b.create_block();
        let left_e = self.b.append_block_param(on_left_err, self.ptr);
        let la = self.lower_catching(a, on_left_err)?;
        let (t, other) = self.truth(la);
        let is_abs = self.b.ins().icmp_imm_s(IntCC::Equal, t, absorbing);
        self.b.ins().brif(
            is_abs,
            done,
            &[BlockArg::from(absorbed)],
            right,
            &[BlockArg::from(null), BlockArg::from(other)],
        );
        self.b.switch_to_block(on_left_err);
        self.b
            .ins()
            .jump(right, &[BlockArg::from(left_e), BlockArg::from(null)]);
        // Every failure of the left operand has been emitted, and so has every way into `right`.
        self.b.seal_block(on_left_err);
        self.b.seal_block(right);

        // The right operand.
        self.b.switch_to_block(right);
        let on_right_err = self.b.create_block();
        let right_e = self.b.append_block_param(on_right_err, self.ptr);
        let lb = self.lower_catching(b, on_right_err)?;
        let (t, right_other) = self.truth(lb);
        let is_abs = self.b.ins().icmp_imm_s(IntCC::Equal, t, absorbing);
        let settle = self.b.create_block();
        self.b
            .ins()
            .brif(is_abs, done, &[BlockArg::from(absorbed)], settle, &[]);
        // The absorbing test is the only way into `settle`.
        self.b.seal_block(settle);
        self.b.switch_to_block(settle);
        self.settle_logic(op, done, left_err, [left_other, right_other]);

        // A failing right operand: the left error wins if there is one.
        self.b.switch_to_block(on_right_err);
        let has_left = self.b.ins().icmp_imm_s(IntCC::NotEqual, left_err, 0);
        let first = self.b.ins().select(has_left, left_err, right_e);
        let target = self.err_target;
        self.b.ins().jump(target, &[BlockArg::from(first)]);
        // The right operand's failures and every outcome have been emitted.
        self.b.seal_block(on_right_err);
        self.b.seal_block(done);
        self.b.switch_to_block(done);
        Ok(Lowered::new(result, Class::Bool))
    }

    /// Neither side of a logic operator absorbs: the left error, else a non-bool's error, else
    /// the non-absorbing bool (to `done`).
    fn settle_logic(
        &mut self,
        op: BinaryOp,
        done: ir::Block,
        left_err: ir::Value,
        others: [ir::Value; 2],
    ) {
        let absorbing = i64::from(op == BinaryOp::Or);
        let target = self.err_target;
        let no_left_err = self.b.create_block();
        self.b.ins().brif(
            left_err,
            target,
            &[BlockArg::from(left_err)],
            no_left_err,
            &[],
        );
        // The error test is the only way into `no_left_err`.
        self.b.seal_block(no_left_err);
        self.b.switch_to_block(no_left_err);
        let l_other = self.b.ins().icmp_imm_s(IntCC::NotEqual, others[0], 0);
        let r_other = self.b.ins().icmp_imm_s(IntCC::NotEqual, others[1], 0);
        let any_other = self.b.ins().bor(l_other, r_other);
        let mismatch = self.b.create_block();
        let kept = self.b.ins().iconst(types::I8, 1 - absorbing);
        self.b
            .ins()
            .brif(any_other, mismatch, &[], done, &[BlockArg::from(kept)]);
        // The test is the only way into `mismatch`.
        self.b.seal_block(mismatch);
        self.b.switch_to_block(mismatch);
        let v = self.generic_raw(OpKind::Logic(op), Class::Bool, &others).v;
        self.b.ins().jump(done, &[BlockArg::from(v)]);
    }

    /// `c ? a : b`: only the chosen branch runs; a non-bool condition is the interpreter's error.
    pub(crate) fn lower_cond(
        &mut self,
        c: &TExpr,
        a: &TExpr,
        b: &TExpr,
        e: &TExpr,
    ) -> Lowering<Lowered> {
        let lc = self.lower(c)?;
        let class = Class::of(&e.ty);
        let then_block = self.b.create_block();
        let else_block = self.b.create_block();
        let merge = self.b.create_block();
        let ty = self.cl_type(class);
        let result = self.b.append_block_param(merge, ty);
        let cond = if lc.class == Class::Bool {
            lc.v
        } else {
            let (t, other) = self.truth(lc);
            let is_other = self.b.ins().icmp_imm_s(IntCC::NotEqual, other, 0);
            let bad = self.b.create_block();
            let good = self.b.create_block();
            self.b.ins().brif(is_other, bad, &[], good, &[]);
            // One branch leads into each.
            self.b.seal_block(bad);
            self.b.seal_block(good);
            self.b.set_cold_block(bad);
            self.b.switch_to_block(bad);
            let shell = TExpr {
                kind: TExprKind::Cond(
                    Box::new(placeholder(0, c.ty.clone(), c)),
                    Box::new(null_node(a)),
                    Box::new(null_node(b)),
                ),
                ty: Type::Dyn,
                span: e.span,
            };
            // The interpreter reports the non-bool condition; nothing follows an error.
            self.generic_raw(OpKind::Shell(shell), Class::Boxed, &[other]);
            self.b.ins().jump(else_block, &[]);
            self.b.switch_to_block(good);
            t
        };
        self.b.ins().brif(cond, then_block, &[], else_block, &[]);
        // `then_block` has one predecessor; `else_block` also the (dead) end of `bad`.
        self.b.seal_block(then_block);
        self.b.seal_block(else_block);
        for (block, branch) in [(then_block, a), (else_block, b)] {
            self.b.switch_to_block(block);
            let l = self.lower(branch)?;
            let v = self.coerce(l, class)?;
            self.b.ins().jump(merge, &[BlockArg::from(v)]);
        }
        // Both branches have jumped to `merge`.
        self.b.seal_block(merge);
        self.b.switch_to_block(merge);
        Ok(Lowered::new(result, class))
    }
}

impl Lower<'_, '_> {
    /// Whether `e` is a bool computed natively without any way to fail or call a helper:
    /// constants, params already computed, and comparisons and logic over those.
    pub(crate) fn infallible(&self, e: &TExpr) -> bool {
        self.cannot_fail(e) && Class::of(&e.ty) == Class::Bool
    }

    fn cannot_fail(&self, e: &TExpr) -> bool {
        let scalar = |x: &TExpr| !matches!(Class::of(&x.ty), Class::Boxed);
        match &e.kind {
            TExprKind::Const(_) => true,
            TExprKind::Var(Var::Slot(i)) => {
                self.mode == Mode::Decision && self.params.get(*i).is_some_and(Option::is_some)
            }
            TExprKind::Var(Var::Now) => self.mode == Mode::Decision,
            TExprKind::Not(a) => self.infallible(a),
            TExprKind::And(a, b) | TExprKind::Or(a, b) => self.infallible(a) && self.infallible(b),
            TExprKind::Binary(op, a, b) if is_comparison(*op) => {
                let same_scalar = scalar(a) && Class::of(&a.ty) == Class::of(&b.ty);
                let strings = a.ty == Type::String && b.ty == Type::String;
                let equality = matches!(op, BinaryOp::Eq | BinaryOp::Ne);
                (same_scalar || (strings && equality)) && self.cannot_fail(a) && self.cannot_fail(b)
            }
            _ => false,
        }
    }
}

fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
    )
}

/// The condition code of a comparison operator.
fn int_cc(op: BinaryOp, signed: bool) -> IntCC {
    match (op, signed) {
        (BinaryOp::Eq, _) => IntCC::Equal,
        (BinaryOp::Ne, _) => IntCC::NotEqual,
        (BinaryOp::Lt, true) => IntCC::SignedLessThan,
        (BinaryOp::Le, true) => IntCC::SignedLessThanOrEqual,
        (BinaryOp::Gt, true) => IntCC::SignedGreaterThan,
        (BinaryOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (BinaryOp::Lt, false) => IntCC::UnsignedLessThan,
        (BinaryOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (BinaryOp::Gt, false) => IntCC::UnsignedGreaterThan,
        _ => IntCC::UnsignedGreaterThanOrEqual,
    }
}

/// `Var::Slot(i)` standing for an operand computed natively, typed and placed as `like`.
pub(crate) fn placeholder(i: usize, ty: Type, like: &TExpr) -> TExpr {
    TExpr {
        kind: TExprKind::Var(Var::Slot(i)),
        ty,
        span: like.span,
    }
}

/// A `null` standing for a subtree the interpreter will not evaluate.
fn null_node(like: &TExpr) -> TExpr {
    TExpr {
        kind: TExprKind::Const(Value::Null),
        ty: Type::Dyn,
        span: like.span,
    }
}
