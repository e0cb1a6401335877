//! The reference interpreter: evaluates a typed tree against an activation.
//!
//! This is the definition of correct: CEL semantics as cel-go implements them (the Go sentinel's
//! engine; cel-cpp where README says we chose otherwise). Errors are
//! values; `&&`, `||` and the `all`/`exists` macros absorb them exactly as CEL specifies, `?:`
//! evaluates only the chosen branch. Invariant: evaluation never panics and its recursion depth is
//! the tree's depth, which the parser bounds.

use super::ast::{BinaryOp, MacroKind};
use super::functions;
use super::ops;
use super::time::Timestamp;
use super::typed::{Builtin, TComprehension, TExpr, TExprKind, Var};
use super::value::{
    ErrorKind, EvalError, EvalResult, ListBuilder, Map, Value, check_size, map_entry_bytes,
};
use crate::cel::host::Resource;
use std::sync::Arc;

/// What the variables of an expression are bound to for one evaluation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Activation<'a> {
    /// `resource` (and what `condition(name)` reads).
    pub resource: Option<&'a Arc<Resource>>,
    /// `now`.
    pub now: Option<Timestamp>,
    /// `reason` (message_data expressions).
    pub reason: Option<&'a Arc<str>>,
    /// The slots: params evaluated so far (errors included), or declared variables.
    pub slots: &'a [EvalResult],
}

/// Evaluates a typed expression.
pub fn eval(e: &TExpr, act: &Activation<'_>) -> EvalResult {
    Evaluator {
        act,
        locals: Vec::new(),
    }
    .eval(e)
}

/// Evaluates an expression that refers to no variables (constant folding at check time).
pub fn eval_constant(e: &TExpr) -> EvalResult {
    eval(e, &Activation::default())
}

fn unbound(what: &str) -> EvalError {
    EvalError::new(ErrorKind::NoSuchKey, format!("no value bound to '{what}'"))
}

struct Evaluator<'a, 'b> {
    act: &'b Activation<'a>,
    locals: Vec<Value>,
}

impl Evaluator<'_, '_> {
    fn eval(&mut self, e: &TExpr) -> EvalResult {
        match &e.kind {
            TExprKind::Const(v) => Ok(v.clone()),
            TExprKind::Var(var) => self.var(*var),
            TExprKind::Not(a) => ops::not(&self.eval(a)?),
            TExprKind::Neg(a) => ops::neg(&self.eval(a)?),
            TExprKind::Binary(op, a, b) => self.binary(*op, a, b),
            TExprKind::And(a, b) => self.logic(a, b, false),
            TExprKind::Or(a, b) => self.logic(a, b, true),
            TExprKind::Cond(c, a, b) => match self.eval(c)? {
                Value::Bool(true) => self.eval(a),
                Value::Bool(false) => self.eval(b),
                other => Err(EvalError::no_overload("_?_:_", &[&other])),
            },
            TExprKind::Select(target, field) => ops::select(&self.eval(target)?, &field.name),
            TExprKind::Has(target, field) => ops::has(&self.eval(target)?, &field.name),
            TExprKind::Index(target, key) => {
                let t = self.eval(target)?;
                ops::index(&t, &self.eval(key)?)
            }
            TExprKind::Call(f, args) => self.call(*f, args),
            TExprKind::MatchesConst(subject, re) => match self.eval(subject)? {
                Value::String(s) => Ok(Value::Bool(re.is_match(&s))),
                other => Err(EvalError::no_overload("matches", &[&other])),
            },
            TExprKind::List(items) => {
                let mut list = ListBuilder::with_capacity(items.len());
                for item in items {
                    list.push(self.eval(item)?)?;
                }
                Ok(list.finish())
            }
            TExprKind::Map(entries) => self.map(entries),
            TExprKind::Comprehension(c) => self.comprehension(c),
        }
    }

    fn var(&self, var: Var) -> EvalResult {
        match var {
            Var::Resource => self
                .act
                .resource
                .map(|r| Value::Resource(r.clone()))
                .ok_or_else(|| unbound("resource")),
            Var::Now => self
                .act
                .now
                .map(Value::Timestamp)
                .ok_or_else(|| unbound("now")),
            Var::Reason => self
                .act
                .reason
                .map(|r| Value::String(r.clone()))
                .ok_or_else(|| unbound("reason")),
            Var::Slot(i) => self
                .act
                .slots
                .get(i)
                .cloned()
                .unwrap_or_else(|| Err(unbound("param"))),
            Var::Local(depth) => self
                .locals
                .get(depth)
                .cloned()
                .ok_or_else(|| unbound("variable")),
        }
    }

    fn binary(&mut self, op: BinaryOp, a: &TExpr, b: &TExpr) -> EvalResult {
        let a = self.eval(a)?;
        let b = self.eval(b)?;
        ops::binary(op, &a, &b)
    }

    /// `&&` (`absorbing` = false) and `||` (`absorbing` = true): the absorbing value on either
    /// side decides; otherwise the first error, then a non-bool operand, is the result.
    fn logic(&mut self, a: &TExpr, b: &TExpr, absorbing: bool) -> EvalResult {
        let name = if absorbing { "_||_" } else { "_&&_" };
        let left = self.eval(a);
        if matches!(left, Ok(Value::Bool(v)) if v == absorbing) {
            return Ok(Value::Bool(absorbing));
        }
        let right = self.eval(b);
        match (left, right) {
            (_, Ok(Value::Bool(v))) if v == absorbing => Ok(Value::Bool(absorbing)),
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!absorbing)),
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(l), Ok(r)) => Err(EvalError::no_overload(name, &[&l, &r])),
        }
    }

    fn call(&mut self, f: Builtin, args: &[TExpr]) -> EvalResult {
        let values = args
            .iter()
            .map(|a| self.eval(a))
            .collect::<Result<Vec<_>, _>>()?;
        if f == Builtin::Condition {
            let resource = self.act.resource.ok_or_else(|| unbound("resource"))?;
            return match values.as_slice() {
                [Value::String(name)] => resource.condition(name).map(Value::Condition),
                _ => Err(EvalError::no_overload(
                    "condition",
                    &values.iter().collect::<Vec<_>>(),
                )),
            };
        }
        functions::call(f, &values)
    }

    fn map(&mut self, entries: &[(TExpr, TExpr)]) -> EvalResult {
        let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
        let mut bytes = 0usize;
        for (k, v) in entries {
            let key = self.eval(k)?;
            let value = self.eval(v)?;
            if !matches!(
                key,
                Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::String(_)
            ) {
                return Err(EvalError::new(
                    ErrorKind::InvalidArgument,
                    format!("unsupported key type: {}", key.type_name()),
                ));
            }
            if out.iter().any(|(existing, _)| existing.equals(&key)) {
                return Err(EvalError::invalid(format!(
                    "duplicate map key: {}",
                    key_text(&key)
                )));
            }
            bytes = bytes.saturating_add(map_entry_bytes(&key, &value));
            check_size("map", bytes)?;
            out.push((key, value));
        }
        Ok(Value::Map(Arc::new(Map::from_entries(out))))
    }

    fn comprehension(&mut self, c: &TComprehension) -> EvalResult {
        let range = self.eval(&c.range)?;
        let items: Vec<Value> = match &range {
            Value::List(items) => items.to_vec(),
            Value::Map(map) => map.iter().map(|(k, _)| k.clone()).collect(),
            other => return Err(EvalError::no_overload(c.kind.name(), &[other])),
        };
        debug_assert_eq!(self.locals.len(), c.depth);
        self.locals.truncate(c.depth);
        self.locals.push(Value::Null);
        let result = self.fold(c, items);
        self.locals.truncate(c.depth);
        result
    }

    fn fold(&mut self, c: &TComprehension, items: Vec<Value>) -> EvalResult {
        match c.kind {
            MacroKind::All | MacroKind::Exists => {
                let absorbing = c.kind == MacroKind::Exists;
                let mut error = None;
                for item in items {
                    self.locals[c.depth] = item;
                    match self.eval(&c.body) {
                        Ok(Value::Bool(v)) if v == absorbing => return Ok(Value::Bool(absorbing)),
                        Ok(Value::Bool(_)) => {}
                        Ok(other) => {
                            error.get_or_insert(EvalError::no_overload(c.kind.name(), &[&other]));
                        }
                        Err(e) => {
                            error.get_or_insert(e);
                        }
                    }
                }
                error.map_or(Ok(Value::Bool(!absorbing)), Err)
            }
            MacroKind::ExistsOne => {
                let mut count = 0usize;
                for item in items {
                    self.locals[c.depth] = item;
                    match self.eval(&c.body)? {
                        Value::Bool(true) => count += 1,
                        Value::Bool(false) => {}
                        other => return Err(EvalError::no_overload("exists_one", &[&other])),
                    }
                }
                Ok(Value::Bool(count == 1))
            }
            MacroKind::Map | MacroKind::Filter => {
                let mut out = ListBuilder::new();
                for item in items {
                    self.locals[c.depth] = item.clone();
                    if let Some(filter) = &c.filter
                        && !self.predicate(filter)?
                    {
                        continue;
                    }
                    if c.kind == MacroKind::Map {
                        out.push(self.eval(&c.body)?)?;
                    } else if self.predicate(&c.body)? {
                        out.push(item)?;
                    }
                }
                Ok(out.finish())
            }
        }
    }

    fn predicate(&mut self, e: &TExpr) -> Result<bool, EvalError> {
        match self.eval(e)? {
            Value::Bool(b) => Ok(b),
            other => Err(EvalError::no_overload("filter", &[&other])),
        }
    }
}

fn key_text(key: &Value) -> String {
    functions::to_string(key).unwrap_or_else(|_| key.type_name().to_string())
}
