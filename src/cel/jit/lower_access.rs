//! Lowering of field access, indexing, calls and literals: `e.f`, `has(e.f)`, `e[k]`, builtin
//! calls, `matches`, list and map literals.
//!
//! Reads of the resource the prepared row holds (`resource.generation`, its string fields,
//! `condition("<constant>")` and its fields, the parsed time behind `timestamp(<time field>)`)
//! are plain loads; every other access is a helper call to [`crate::cel::ops`] or
//! [`crate::cel::functions`]. List and map literals compute their elements natively and build
//! the value with the interpreter's own code (a map's entries with their errors caught, since the
//! interpreter checks for duplicate keys between entries).

use super::abi::{Class, OpKind};
use super::lower::{Lower, Lowered, Lowering, Mode, Origin, Unsupported, pair_flags, row_flags};
use super::lower_ops::placeholder;
use super::row::{FieldKey, SLOT_SIZE, Slot};
use super::sites::{self, NoteKind};
use crate::cel::host::{FieldType, condition_field, resource_field};
use crate::cel::typed::{Builtin, TExpr, TExprKind};
use crate::cel::value::Value;
use cranelift::codegen::ir::{self, BlockArg};
use cranelift::prelude::{InstBuilder, types};
use std::mem::offset_of;
use std::sync::Arc;

impl Lower<'_, '_> {
    pub(crate) fn lower_select(
        &mut self,
        target: &TExpr,
        field: &str,
        e: &TExpr,
    ) -> Lowering<Lowered> {
        let lt = self.lower(target)?;
        let class = Class::of(&e.ty);
        let key = match lt.origin {
            Origin::Resource => resource_field(field).and_then(|d| match d.ty {
                FieldType::Int => Some(FieldKey::Generation),
                t if t.is_text() => Some(FieldKey::ResourceStr(d.field)),
                _ => None,
            }),
            Origin::Cond(c) => condition_field(field).map(|d| match d.ty {
                FieldType::Int => FieldKey::CondGeneration(c),
                _ => FieldKey::CondStr(c, d.field),
            }),
            _ => None,
        };
        Ok(match key {
            Some(key @ (FieldKey::Generation | FieldKey::CondGeneration(_))) => {
                let v = self.read_slot(key, types::I64, 0)?;
                Lowered::new(v, Class::Int)
            }
            Some(key) => {
                let v = self.read_slot(key, self.ptr, offset_of!(Slot, boxed))?;
                Lowered {
                    v,
                    class: Class::Boxed,
                    origin: Origin::Str(key),
                }
            }
            None => self.generic(OpKind::Select(Arc::from(field)), class, &[lt]),
        })
    }

    /// The offset of `key`'s slot in the row.
    pub(crate) fn slot_offset(&mut self, key: FieldKey) -> i32 {
        (self.needs.slot(key) * SLOT_SIZE) as i32
    }

    /// Reads a slot: fails with its error, else loads `ty` at `field` within it.
    pub(crate) fn read_slot(
        &mut self,
        key: FieldKey,
        ty: ir::Type,
        field: usize,
    ) -> Lowering<ir::Value> {
        let row = self.row_ptr()?;
        let base = self.slot_offset(key);
        let name = sites::field_text(key, self.needs);
        if !self.clean {
            let ptr = self.ptr;
            self.noted(NoteKind::RowError, name.clone(), |l| {
                let err =
                    l.b.ins()
                        .load(ptr, row_flags(), row, base + offset_of!(Slot, err) as i32);
                l.fail_if(err);
            });
        }
        let flags = if ty == types::I128 {
            pair_flags()
        } else {
            row_flags()
        };
        Ok(self.noted(NoteKind::RowLoad, name, |l| {
            l.b.ins().load(ty, flags, row, base + field as i32)
        }))
    }

    pub(crate) fn lower_has(&mut self, target: &TExpr, field: &str) -> Lowering<Lowered> {
        let lt = self.lower(target)?;
        Ok(self.generic(OpKind::Has(Arc::from(field)), Class::Bool, &[lt]))
    }

    pub(crate) fn lower_index(
        &mut self,
        target: &TExpr,
        key: &TExpr,
        e: &TExpr,
    ) -> Lowering<Lowered> {
        let lt = self.lower(target)?;
        let lk = self.lower(key)?;
        Ok(self.generic(OpKind::Index, Class::of(&e.ty), &[lt, lk]))
    }

    pub(crate) fn lower_call(
        &mut self,
        f: Builtin,
        args: &[TExpr],
        e: &TExpr,
    ) -> Lowering<Lowered> {
        let class = Class::of(&e.ty);
        if let (Builtin::Condition, Mode::Decision, [arg]) = (f, self.mode, args)
            && let TExprKind::Const(Value::String(name)) = &arg.kind
        {
            return self.constant_condition(name);
        }
        let lowered = args
            .iter()
            .map(|a| self.lower(a))
            .collect::<Lowering<Vec<Lowered>>>()?;
        if let (Builtin::ToTimestamp, [l]) = (f, lowered.as_slice())
            && let Some(t) = self.parsed_time(l.origin)?
        {
            return Ok(t);
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
            return Ok(self.generic(OpKind::Shell(shell), class, &lowered));
        }
        Ok(self.generic(OpKind::Call(f), class, &lowered))
    }

    /// `condition("<name>")`: the condition's slot (the resource's conditions error, if any).
    fn constant_condition(&mut self, name: &str) -> Lowering<Lowered> {
        let c = self.needs.cond(name);
        let v = self.read_slot(FieldKey::Cond(c), self.ptr, offset_of!(Slot, boxed))?;
        Ok(Lowered {
            v,
            class: Class::Boxed,
            origin: Origin::Cond(c),
        })
    }

    /// `timestamp(x)` where `x` is a time field of the row: its pre-parsed value.
    fn parsed_time(&mut self, origin: Origin) -> Lowering<Option<Lowered>> {
        let key = match origin {
            Origin::Str(FieldKey::ResourceStr(f)) if f.def().ty == FieldType::Time => {
                FieldKey::ResourceTime(f)
            }
            Origin::Str(FieldKey::CondStr(c, f)) if f.def().ty == FieldType::Time => {
                FieldKey::CondTime(c, f)
            }
            _ => return Ok(None),
        };
        let v = self.read_slot(key, types::I128, offset_of!(Slot, w))?;
        Ok(Some(Lowered::new(v, Class::Timestamp)))
    }

    pub(crate) fn lower_matches(
        &mut self,
        subject: &TExpr,
        re: &Arc<regex::Regex>,
        e: &TExpr,
    ) -> Lowering<Lowered> {
        let ls = self.lower(subject)?;
        let shell = TExpr {
            kind: TExprKind::MatchesConst(
                Box::new(placeholder(0, subject.ty.clone(), subject)),
                re.clone(),
            ),
            ty: e.ty.clone(),
            span: e.span,
        };
        Ok(self.generic(OpKind::Shell(shell), Class::Bool, &[ls]))
    }

    pub(crate) fn lower_list(&mut self, items: &[TExpr], e: &TExpr) -> Lowering<Lowered> {
        let lowered = items
            .iter()
            .map(|i| self.lower(i))
            .collect::<Lowering<Vec<Lowered>>>()?;
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
        Ok(self.generic(OpKind::Shell(shell), Class::Boxed, &lowered))
    }

    /// Map literals: entries computed natively with their errors caught, then the interpreter's
    /// map construction, which checks keys between entries and so decides which error wins.
    pub(crate) fn lower_map(&mut self, e: &TExpr) -> Lowering<Lowered> {
        let TExprKind::Map(entries) = &e.kind else {
            return Err(Unsupported("not a map literal".into()));
        };
        let mut args = Vec::with_capacity(entries.len() * 4);
        let mut shell_entries = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            for part in [k, v] {
                let (value, err) = self.lower_captured(part)?;
                args.extend([value, err]);
            }
            let slot = shell_entries.len() * 2;
            shell_entries.push((
                placeholder(slot, k.ty.clone(), k),
                placeholder(slot + 1, v.ty.clone(), v),
            ));
        }
        let shell = TExpr {
            kind: TExprKind::Map(shell_entries),
            ty: e.ty.clone(),
            span: e.span,
        };
        Ok(self.generic_raw(OpKind::ShellCaptured(shell), Class::Boxed, &args))
    }

    /// Lowers `e` with its error caught: (boxed value or null, error or null).
    fn lower_captured(&mut self, e: &TExpr) -> Lowering<(ir::Value, ir::Value)> {
        let handler = self.b.create_block();
        let err = self.b.append_block_param(handler, self.ptr);
        let join = self.b.create_block();
        let value = self.b.append_block_param(join, self.ptr);
        let error = self.b.append_block_param(join, self.ptr);
        let l = self.lower_catching(e, handler)?;
        let p = self.boxed(l);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b
            .ins()
            .jump(join, &[BlockArg::from(p), BlockArg::from(null)]);
        self.b.switch_to_block(handler);
        let null = self.b.ins().iconst(self.ptr, 0);
        self.b
            .ins()
            .jump(join, &[BlockArg::from(null), BlockArg::from(err)]);
        // Every failure of `e` and its success have been emitted.
        self.b.seal_block(handler);
        self.b.seal_block(join);
        self.b.switch_to_block(join);
        Ok((value, error))
    }
}
