//! Lowering of field access, indexing, calls, and the constructs evaluated by the interpreter's
//! functions: `e.f`, `has(e.f)`, `e[k]`, builtin calls, `matches`, list and map literals,
//! comprehensions.
//!
//! Reads of the resource the prepared row holds (`resource.generation`, its string fields,
//! `condition("<constant>")` and its fields, the parsed time behind `timestamp(<time field>)`)
//! are plain loads; every other access is a helper call to [`crate::cel::ops`] or
//! [`crate::cel::functions`]. List literals run the interpreter on their natively computed
//! elements; map literals and comprehensions run in the interpreter whole (closed over their
//! free variables, see `shell`).

use super::abi::{Class, OpKind};
use super::lower::{Lower, Lowered, Mode, Origin, pair_flags, row_flags};
use super::lower_ops::placeholder;
use super::row::{
    CONDITION_STRS, CondRow, IntField, RESOURCE_STRS, Row, StrField, TimeField,
    condition_time_index, resource_time_index,
};
use super::shell;
use crate::cel::typed::{Builtin, TExpr, TExprKind};
use crate::cel::types::Type;
use crate::cel::value::Value;
use cranelift::codegen::ir;
use cranelift::prelude::{InstBuilder, types};
use std::mem::{offset_of, size_of};
use std::sync::Arc;

impl Lower<'_, '_> {
    pub(crate) fn lower_select(&mut self, target: &TExpr, field: &str, e: &TExpr) -> Lowered {
        let lt = self.lower(target);
        let class = Class::of(&e.ty);
        match lt.origin {
            Origin::Resource if field == "generation" => {
                let row = self.row_ptr();
                self.int_field(row, offset_of!(Row, generation) as i32)
            }
            Origin::Resource => match RESOURCE_STRS.iter().position(|f| *f == field) {
                Some(i) => {
                    self.needs.strs[i] = true;
                    let row = self.row_ptr();
                    let offset = offset_of!(Row, strs) + i * size_of::<StrField>();
                    let v = self.str_field(row, offset as i32);
                    Lowered {
                        v,
                        class: Class::Boxed,
                        origin: Origin::ResourceField(i),
                    }
                }
                None => self.generic(OpKind::Select(Arc::from(field)), class, &[lt]),
            },
            Origin::Cond(k) if field == "observed_generation" => {
                let base = self.cond_ptr(k);
                self.int_field(base, offset_of!(CondRow, observed_generation) as i32)
            }
            Origin::Cond(k) => match CONDITION_STRS.iter().position(|f| *f == field) {
                Some(i) => {
                    self.needs.conds[k].strs[i] = true;
                    let base = self.cond_ptr(k);
                    let offset = offset_of!(CondRow, strs) + i * size_of::<StrField>();
                    let v = self.str_field(base, offset as i32);
                    Lowered {
                        v,
                        class: Class::Boxed,
                        origin: Origin::CondField(k, i),
                    }
                }
                None => self.generic(OpKind::Select(Arc::from(field)), class, &[lt]),
            },
            _ => self.generic(OpKind::Select(Arc::from(field)), class, &[lt]),
        }
    }

    /// The address of constant condition `k`'s row.
    fn cond_ptr(&mut self, k: usize) -> ir::Value {
        let row = self.row_ptr();
        let conds = self
            .b
            .ins()
            .load(self.ptr, row_flags(), row, offset_of!(Row, conds) as i32);
        self.b
            .ins()
            .iadd_imm_s(conds, (k * size_of::<CondRow>()) as i64)
    }

    /// An int field at `base + offset`: fails with its error, else its value.
    fn int_field(&mut self, base: ir::Value, offset: i32) -> Lowered {
        let err = self.b.ins().load(
            self.ptr,
            row_flags(),
            base,
            offset + offset_of!(IntField, err) as i32,
        );
        self.fail_if(err);
        let v = self.b.ins().load(
            types::I64,
            row_flags(),
            base,
            offset + offset_of!(IntField, value) as i32,
        );
        Lowered::new(v, Class::Int)
    }

    /// A string field at `base + offset`: fails with its error, else the boxed string's address.
    fn str_field(&mut self, base: ir::Value, offset: i32) -> ir::Value {
        let err = self.b.ins().load(
            self.ptr,
            row_flags(),
            base,
            offset + offset_of!(StrField, err) as i32,
        );
        self.fail_if(err);
        self.b
            .ins()
            .iadd_imm_s(base, i64::from(offset) + offset_of!(StrField, boxed) as i64)
    }

    /// A parsed time field at `base + offset`: fails with the parse error, else the nanoseconds.
    fn time_field(&mut self, base: ir::Value, offset: i32) -> Lowered {
        let err = self.b.ins().load(
            self.ptr,
            row_flags(),
            base,
            offset + offset_of!(TimeField, err) as i32,
        );
        self.fail_if(err);
        let v = self.b.ins().load(
            types::I128,
            pair_flags(),
            base,
            offset + offset_of!(TimeField, nanos) as i32,
        );
        Lowered::new(v, Class::Timestamp)
    }

    pub(crate) fn lower_has(&mut self, target: &TExpr, field: &str) -> Lowered {
        let lt = self.lower(target);
        self.generic(OpKind::Has(Arc::from(field)), Class::Bool, &[lt])
    }

    pub(crate) fn lower_index(&mut self, target: &TExpr, key: &TExpr, e: &TExpr) -> Lowered {
        let lt = self.lower(target);
        let lk = self.lower(key);
        self.generic(OpKind::Index, Class::of(&e.ty), &[lt, lk])
    }

    pub(crate) fn lower_call(&mut self, f: Builtin, args: &[TExpr], e: &TExpr) -> Lowered {
        let class = Class::of(&e.ty);
        if let (Builtin::Condition, Mode::Decision, [arg]) = (f, self.mode, args)
            && let TExprKind::Const(Value::String(name)) = &arg.kind
        {
            return self.constant_condition(name);
        }
        let lowered: Vec<Lowered> = args.iter().map(|a| self.lower(a)).collect();
        if let (Builtin::ToTimestamp, [l]) = (f, lowered.as_slice())
            && let Some(t) = self.parsed_time(l.origin)
        {
            return t;
        }
        if f == Builtin::Condition {
            // `condition` reads the activation's resource: the interpreter evaluates the call.
            let shell = TExpr {
                kind: TExprKind::Call(
                    f,
                    args.iter()
                        .enumerate()
                        .map(|(i, a)| placeholder(i, a.ty.clone(), a))
                        .collect(),
                ),
                ty: e.ty.clone(),
                span: e.span,
            };
            return self.generic(OpKind::Shell(shell), class, &lowered);
        }
        self.generic(OpKind::Call(f), class, &lowered)
    }

    /// `condition("<name>")`: the condition's row (the resource's conditions error, if any).
    fn constant_condition(&mut self, name: &str) -> Lowered {
        let k = self.needs.cond_slot(name);
        let row = self.row_ptr();
        let err = self.b.ins().load(
            self.ptr,
            row_flags(),
            row,
            offset_of!(Row, conditions_err) as i32,
        );
        self.fail_if(err);
        let base = self.cond_ptr(k);
        let v = self
            .b
            .ins()
            .iadd_imm_s(base, offset_of!(CondRow, cond) as i64);
        Lowered {
            v,
            class: Class::Boxed,
            origin: Origin::Cond(k),
        }
    }

    /// `timestamp(x)` where `x` is a time field of the row: its pre-parsed value.
    fn parsed_time(&mut self, origin: Origin) -> Option<Lowered> {
        match origin {
            Origin::ResourceField(i) => {
                let t = resource_time_index(i)?;
                self.needs.times[t] = true;
                let row = self.row_ptr();
                let offset = offset_of!(Row, times) + t * size_of::<TimeField>();
                Some(self.time_field(row, offset as i32))
            }
            Origin::CondField(k, i) => {
                let t = condition_time_index(i)?;
                self.needs.conds[k].times[t] = true;
                let base = self.cond_ptr(k);
                let offset = offset_of!(CondRow, times) + t * size_of::<TimeField>();
                Some(self.time_field(base, offset as i32))
            }
            _ => None,
        }
    }

    pub(crate) fn lower_matches(
        &mut self,
        subject: &TExpr,
        re: &Arc<regex::Regex>,
        e: &TExpr,
    ) -> Lowered {
        let ls = self.lower(subject);
        let shell = TExpr {
            kind: TExprKind::MatchesConst(
                Box::new(placeholder(0, subject.ty.clone(), subject)),
                re.clone(),
            ),
            ty: e.ty.clone(),
            span: e.span,
        };
        self.generic(OpKind::Shell(shell), Class::Bool, &[ls])
    }

    pub(crate) fn lower_list(&mut self, items: &[TExpr], e: &TExpr) -> Lowered {
        let lowered: Vec<Lowered> = items.iter().map(|i| self.lower(i)).collect();
        let shell = TExpr {
            kind: TExprKind::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| placeholder(i, item.ty.clone(), item))
                    .collect(),
            ),
            ty: e.ty.clone(),
            span: e.span,
        };
        self.generic(OpKind::Shell(shell), Class::Boxed, &lowered)
    }

    /// Map literals run in the interpreter: their keys are checked for duplicates between the
    /// entries' evaluations, which decides which error wins.
    pub(crate) fn lower_map(&mut self, e: &TExpr) -> Lowered {
        self.interpreted
            .push(format!("map literal at {}", span_text(e)));
        self.lower_closed(e)
    }

    pub(crate) fn lower_comprehension(&mut self, e: &TExpr) -> Lowered {
        self.interpreted
            .push(format!("comprehension at {}", span_text(e)));
        self.lower_closed(e)
    }

    /// Evaluates a whole subtree in the interpreter, passing its free variables.
    fn lower_closed(&mut self, e: &TExpr) -> Lowered {
        let closed = shell::close(e, 0);
        let free: Vec<Lowered> = closed
            .free
            .iter()
            .map(|(var, ty)| {
                let node = TExpr {
                    kind: TExprKind::Var(*var),
                    ty: ty.clone(),
                    span: e.span,
                };
                self.lower(&node)
            })
            .collect();
        self.generic(OpKind::Shell(closed.expr), Class::of(&e.ty), &free)
    }
}

fn span_text(e: &TExpr) -> String {
    format!("{}..{}", e.span.start, e.span.end)
}

/// Whether a type is a scalar class (not boxed).
#[allow(dead_code)]
fn is_scalar(ty: &Type) -> bool {
    Class::of(ty) != Class::Boxed
}
