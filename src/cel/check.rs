//! The type checker: resolves names and overloads in an [`ast::Expr`], infers every node's
//! [`Type`] and produces the typed tree ([`TExpr`]).
//!
//! Invariant: a tree returned by [`check`] only contains calls and operators that have an
//! implementation for its static types (modulo `dyn`, checked at run time). All problems are
//! collected, each with a span; nothing is reported twice for one cause (an erroneous subtree is
//! typed `dyn` so that its parents do not complain again).

use super::ast::{self, BinaryOp, Expr, ExprKind, Literal, MacroKind, UnaryOp};
use super::diag::{Diagnostic, nearest};
use super::failing::failing_calls;
use super::format;
use super::functions::{self, ResolveError};
use super::interp;
use super::ops;
use super::span::Span;
use super::typed::{Builtin, Field, TComprehension, TExpr, TExprKind, Var};
use super::types::Type;
use super::value::Value;
use std::sync::Arc;

mod env;
pub use env::{Env, VarDecl};

/// Type-checks an expression in an environment (dropping any warnings).
pub fn check(expr: &Expr, env: &Env) -> Result<TExpr, Vec<Diagnostic>> {
    check_with_warnings(expr, env).map(|checked| checked.expr)
}

/// A type-checked expression and the warnings checking it found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The typed tree.
    pub expr: TExpr,
    /// Warnings (never errors), in source order.
    pub warnings: Vec<Diagnostic>,
}

/// Type-checks an expression in an environment, keeping the warnings. On failure returns the
/// errors only: warnings are reported once the expression compiles.
pub fn check_with_warnings(expr: &Expr, env: &Env) -> Result<Checked, Vec<Diagnostic>> {
    let mut checker = Checker {
        env,
        locals: Vec::new(),
        diags: Vec::new(),
        warnings: Vec::new(),
    };
    let typed = checker.expr(expr);
    if env.const_errors {
        checker.failing_calls(&typed);
    }
    if checker.diags.is_empty() {
        checker.warnings.sort_by_key(|d| (d.span.start, d.span.end));
        Ok(Checked {
            expr: typed,
            warnings: checker.warnings,
        })
    } else {
        Err(checker.diags)
    }
}

struct Checker<'e> {
    env: &'e Env,
    locals: Vec<(String, Type)>,
    diags: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

/// The dotted name an identifier or a chain of field selections spells (`google.protobuf`).
fn qualified_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Ident(name) => Some(name.clone()),
        ExprKind::Member(target, field) => qualified_name(target).map(|q| format!("{q}.{field}")),
        _ => None,
    }
}

fn node(kind: TExprKind, ty: Type, span: Span) -> TExpr {
    TExpr { kind, ty, span }
}

fn is_numeric(t: &Type) -> bool {
    matches!(t, Type::Int | Type::Uint | Type::Double)
}

impl Checker<'_> {
    fn error(&mut self, d: Diagnostic) -> TExpr {
        let span = d.span;
        self.diags.push(d);
        // An erroneous subtree is `dyn` so that its parents do not report the same cause again.
        node(TExprKind::Const(Value::Null), Type::Dyn, span)
    }

    fn expr(&mut self, e: &Expr) -> TExpr {
        match &e.kind {
            ExprKind::Literal(lit) => self.literal(lit, e.span),
            ExprKind::Ident(name) => self.ident(name, e.span),
            ExprKind::Unary(op, operand) => self.unary(*op, operand, e.span),
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, e.span),
            ExprKind::Ternary(c, a, b) => self.ternary(c, a, b, e.span),
            ExprKind::Member(target, field) => self.select(target, field, e.span, false),
            ExprKind::Has(target, field) => self.select(target, field, e.span, true),
            ExprKind::Index(target, key) => self.index(target, key, e.span),
            ExprKind::Call { target, name, args } => {
                self.call(target.as_deref(), name, args, e.span)
            }
            ExprKind::List(items) => self.list(items, e.span),
            ExprKind::Map(entries) => self.map(entries, e.span),
            ExprKind::Comprehension(c) => self.comprehension(c, e.span),
        }
    }

    fn literal(&mut self, lit: &Literal, span: Span) -> TExpr {
        let (value, ty) = match lit {
            Literal::Null => (Value::Null, Type::Null),
            Literal::Bool(b) => (Value::Bool(*b), Type::Bool),
            Literal::Int(i) => (Value::Int(*i), Type::Int),
            Literal::Uint(u) => (Value::Uint(*u), Type::Uint),
            Literal::Double(d) => (Value::Double(*d), Type::Double),
            Literal::String(s) => (Value::string(s), Type::String),
            Literal::Bytes(b) => (Value::Bytes(Arc::from(b.as_slice())), Type::Bytes),
        };
        node(TExprKind::Const(value), ty, span)
    }

    fn ident(&mut self, name: &str, span: Span) -> TExpr {
        if let Some(depth) = self.locals.iter().rposition(|(n, _)| n == name) {
            let ty = self.locals[depth].1.clone();
            return node(TExprKind::Var(Var::Local(depth)), ty, span);
        }
        if let Some(decl) = self.env.var(name) {
            return node(TExprKind::Var(decl.var), decl.ty.clone(), span);
        }
        if let Some(ty) = Type::from_name(name) {
            return node(TExprKind::Const(Value::Type(ty)), Type::Type, span);
        }
        if self.env.later_params.iter().any(|p| p == name) {
            let current = self.env.current.as_deref().unwrap_or("?");
            let d = Diagnostic::new(
                format!(
                    "param \"{current}\" refers to param \"{name}\", which is declared after it"
                ),
                span,
            )
            .with_label("declared later")
            .with_note(format!(
                "params are evaluated in authored order: declare \"{name}\" before \"{current}\""
            ));
            return self.error(d);
        }
        let mut d = Diagnostic::new(format!("undeclared reference to '{name}'"), span)
            .with_label("not declared");
        let mut candidates: Vec<&str> = self.env.vars().iter().map(|d| d.name.as_str()).collect();
        candidates.extend(self.locals.iter().map(|(n, _)| n.as_str()));
        if let Some(near) = nearest(name, candidates) {
            d = d.with_note(format!("did you mean '{near}'?"));
        }
        self.error(d)
    }

    fn unary(&mut self, op: UnaryOp, operand: &Expr, span: Span) -> TExpr {
        let t = self.expr(operand);
        let (ok, ty) = match op {
            UnaryOp::Not => (t.ty.assignable_to(&Type::Bool), Type::Bool),
            UnaryOp::Neg => (
                matches!(t.ty, Type::Int | Type::Double | Type::Duration | Type::Dyn),
                t.ty.clone(),
            ),
        };
        if !ok {
            let name = if op == UnaryOp::Not { "!_" } else { "-_" };
            return self.no_overload(name, &[&t.ty], span);
        }
        let kind = match op {
            UnaryOp::Not => TExprKind::Not(Box::new(t)),
            UnaryOp::Neg => TExprKind::Neg(Box::new(t)),
        };
        self.fold(node(kind, ty, span))
    }

    fn no_overload(&mut self, name: &str, args: &[&Type], span: Span) -> TExpr {
        let types: Vec<String> = args.iter().map(|t| t.to_string()).collect();
        let d = Diagnostic::new(
            format!(
                "no matching overload for '{name}' applied to '({})'",
                types.join(", ")
            ),
            span,
        );
        self.error(d)
    }

    fn binary(&mut self, op: BinaryOp, l: &Expr, r: &Expr, span: Span) -> TExpr {
        let (l, r) = (self.expr(l), self.expr(r));
        let Some(ty) = binary_type(op, &l.ty, &r.ty) else {
            return self.no_overload(ops::overload_name(op), &[&l.ty, &r.ty], span);
        };
        let (l, r) = (Box::new(l), Box::new(r));
        let kind = match op {
            BinaryOp::And => TExprKind::And(l, r),
            BinaryOp::Or => TExprKind::Or(l, r),
            _ => TExprKind::Binary(op, l, r),
        };
        self.fold(node(kind, ty, span))
    }

    fn ternary(&mut self, c: &Expr, a: &Expr, b: &Expr, span: Span) -> TExpr {
        let (c, a, b) = (self.expr(c), self.expr(a), self.expr(b));
        if !c.ty.assignable_to(&Type::Bool) {
            return self.no_overload("_?_:_", &[&c.ty, &a.ty, &b.ty], span);
        }
        let ty = a.ty.join(&b.ty);
        node(
            TExprKind::Cond(Box::new(c), Box::new(a), Box::new(b)),
            ty,
            span,
        )
    }

    fn select(&mut self, target: &Expr, field: &str, span: Span, has: bool) -> TExpr {
        if !has
            && let Some(ty) =
                qualified_name(target).and_then(|q| Type::from_name(&format!("{q}.{field}")))
        {
            return node(TExprKind::Const(Value::Type(ty)), Type::Type, span);
        }
        let t = self.expr(target);
        if t.ty == Type::Resource {
            self.resource_field(field, span);
        }
        let field_ty = match &t.ty {
            Type::Dyn => Some(Type::Dyn),
            Type::Map(k, v) if k.assignable_to(&Type::String) => Some((**v).clone()),
            ty if ty.is_object() => match ty.field(field) {
                Some(ft) => Some(ft),
                None => {
                    let mut d =
                        Diagnostic::new(format!("undefined field '{field}' on type {ty}"), span);
                    let names = object_fields(ty);
                    if let Some(near) = nearest(field, names.iter().copied()) {
                        d = d.with_note(format!("did you mean '{near}'?"));
                    }
                    return self.error(d);
                }
            },
            _ => None,
        };
        let Some(field_ty) = field_ty else {
            let d = Diagnostic::new(
                format!("type '{}' does not support field selection", t.ty),
                span,
            );
            return self.error(d);
        };
        let f = Field {
            name: Arc::from(field),
        };
        if has {
            node(TExprKind::Has(Box::new(t), f), Type::Bool, span)
        } else {
            node(TExprKind::Select(Box::new(t), f), field_ty, span)
        }
    }

    /// Warns when `field` is not a field of the resource schema.
    fn resource_field(&mut self, field: &str, span: Span) {
        let known = self.env.resource_fields;
        if known.is_empty() || known.contains(&field) {
            return;
        }
        let mut d = Diagnostic::warning(format!("the resource has no field '{field}'"), span)
            .with_label("not in the HyperFleet Cluster or NodePool schema");
        if let Some(near) = nearest(field, known.iter().copied()) {
            d = d.with_note(format!("did you mean `{near}`?"));
        }
        self.warnings.push(d);
    }

    fn index(&mut self, target: &Expr, key: &Expr, span: Span) -> TExpr {
        let (t, k) = (self.expr(target), self.expr(key));
        if t.ty == Type::Resource
            && let TExprKind::Const(Value::String(name)) = &k.kind
        {
            self.resource_field(name, span);
        }
        let ty = match (&t.ty, &k.ty) {
            (Type::List(elem), Type::Int | Type::Uint | Type::Dyn) => Some((**elem).clone()),
            (Type::Map(kt, vt), key_ty)
                if key_ty.assignable_to(kt) || (is_numeric(kt) && is_numeric(key_ty)) =>
            {
                Some((**vt).clone())
            }
            (Type::Dyn, _) => Some(Type::Dyn),
            (Type::Resource, kt) if kt.assignable_to(&Type::String) => Some(Type::Dyn),
            _ => None,
        };
        let Some(ty) = ty else {
            return self.no_overload("_[_]", &[&t.ty, &k.ty], span);
        };
        node(TExprKind::Index(Box::new(t), Box::new(k)), ty, span)
    }

    fn call(&mut self, target: Option<&Expr>, name: &str, args: &[Expr], span: Span) -> TExpr {
        // `strings.quote(s)`: a namespaced function, not a method on a variable named `strings`.
        let namespaced = matches!(target, Some(Expr { kind: ExprKind::Ident(ns), .. })
            if ns == "strings" && self.env.var("strings").is_none());
        let (receiver, full_name) = match target {
            Some(_) if namespaced => (None, format!("strings.{name}")),
            other => (other, name.to_string()),
        };
        let mut typed: Vec<TExpr> = Vec::with_capacity(args.len() + 1);
        if let Some(r) = receiver {
            typed.push(self.expr(r));
        }
        // `'<literal>'.format([<list literal>])`: cel-go's `ext.Strings()` checks the clauses
        // against the list's elements, as Go's checker types them.
        let format_check = match (receiver, name, args) {
            (
                Some(Expr {
                    kind: ExprKind::Literal(Literal::String(fmt)),
                    ..
                }),
                "format",
                [
                    list @ Expr {
                        kind: ExprKind::List(items),
                        ..
                    },
                ],
            ) => {
                let items: Vec<TExpr> = items.iter().map(|i| self.expr(i)).collect();
                let arg_types: Vec<Type> = items.iter().map(format::format_arg_type).collect();
                let item_spans: Vec<Span> = items.iter().map(|i| i.span).collect();
                typed.push(self.finish_list(items, list.span));
                Some((fmt.as_str(), arg_types, item_spans))
            }
            _ => {
                typed.extend(args.iter().map(|a| self.expr(a)));
                None
            }
        };
        let types: Vec<Type> = typed.iter().map(|t| t.ty.clone()).collect();
        let resolved = match functions::resolve(&full_name, receiver.is_some(), &types) {
            Ok((Builtin::Condition, _)) if !self.env.condition => Err(ResolveError::Unknown),
            other => other,
        };
        if let (Ok((Builtin::Format, _)), Some((fmt, arg_types, item_spans))) =
            (&resolved, &format_check)
            && let Err(e) = format::check_format(fmt, arg_types)
        {
            let at = e.arg.and_then(|i| item_spans.get(i)).copied();
            return self.error(Diagnostic::new(e.message, at.unwrap_or(span)));
        }
        match resolved {
            Ok((f, ty)) => self.finish_call(f, typed, ty, span),
            Err(ResolveError::NoOverload) => {
                let refs: Vec<&Type> = types.iter().collect();
                self.no_overload(&full_name, &refs, span)
            }
            Err(ResolveError::Unknown) => {
                let style = if receiver.is_some() {
                    "method"
                } else {
                    "function"
                };
                let d = Diagnostic::new(
                    format!("undeclared reference to {style} '{full_name}'"),
                    span,
                );
                self.error(d)
            }
        }
    }

    fn finish_call(&mut self, f: Builtin, mut args: Vec<TExpr>, ty: Type, span: Span) -> TExpr {
        if f == Builtin::Matches
            && let Some(TExpr {
                kind: TExprKind::Const(Value::String(pattern)),
                ..
            }) = args.get(1)
            // An invalid pattern is left to evaluation, which fails; `failing_calls` reports it.
            && let Ok(re) = functions::compile_regex(pattern)
        {
            let subject = args.swap_remove(0);
            return node(
                TExprKind::MatchesConst(Box::new(subject), Arc::new(re)),
                ty,
                span,
            );
        }
        let call = node(TExprKind::Call(f, args), ty, span);
        if functions::is_pure(f) {
            self.fold(call)
        } else {
            call
        }
    }

    fn list(&mut self, items: &[Expr], span: Span) -> TExpr {
        let typed: Vec<TExpr> = items.iter().map(|i| self.expr(i)).collect();
        self.finish_list(typed, span)
    }

    fn finish_list(&mut self, typed: Vec<TExpr>, span: Span) -> TExpr {
        let elem = join_all(typed.iter().map(|t| &t.ty));
        self.fold(node(TExprKind::List(typed), Type::list(elem), span))
    }

    fn map(&mut self, entries: &[(Expr, Expr)], span: Span) -> TExpr {
        let mut typed = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let (k, v) = (self.expr(k), self.expr(v));
            if !matches!(
                k.ty,
                Type::Int | Type::Uint | Type::Bool | Type::String | Type::Dyn
            ) {
                let d = Diagnostic::new(format!("unsupported map key type: {}", k.ty), k.span);
                self.diags.push(d);
            }
            typed.push((k, v));
        }
        let kt = join_all(typed.iter().map(|(k, _)| &k.ty));
        let vt = join_all(typed.iter().map(|(_, v)| &v.ty));
        let ty = Type::map(kt, vt);
        match constant_map(&typed) {
            Some(value) => node(TExprKind::Const(value), ty, span),
            None => node(TExprKind::Map(typed), ty, span),
        }
    }

    fn comprehension(&mut self, c: &ast::Comprehension, span: Span) -> TExpr {
        let range = self.expr(&c.range);
        let var_ty = match &range.ty {
            Type::List(elem) => (**elem).clone(),
            Type::Map(k, _) => (**k).clone(),
            Type::Dyn => Type::Dyn,
            other => {
                let d = Diagnostic::new(
                    format!("expression of type '{other}' cannot be the range of a comprehension"),
                    c.range.span,
                );
                self.diags.push(d);
                Type::Dyn
            }
        };
        let depth = self.locals.len();
        self.locals.push((c.var.clone(), var_ty.clone()));
        let filter = c.filter.as_ref().map(|f| self.expect_bool(f, c.kind));
        let body = if c.kind == MacroKind::Map {
            self.expr(&c.body)
        } else {
            self.expect_bool(&c.body, c.kind)
        };
        self.locals.pop();
        let ty = match c.kind {
            MacroKind::All | MacroKind::Exists | MacroKind::ExistsOne => Type::Bool,
            MacroKind::Map => Type::list(body.ty.clone()),
            MacroKind::Filter => Type::list(var_ty),
        };
        let comp = TComprehension {
            kind: c.kind,
            range,
            depth,
            filter,
            body,
        };
        node(TExprKind::Comprehension(Box::new(comp)), ty, span)
    }

    fn expect_bool(&mut self, e: &Expr, kind: MacroKind) -> TExpr {
        let t = self.expr(e);
        if !t.ty.assignable_to(&Type::Bool) {
            let d = Diagnostic::new(
                format!(
                    "the predicate of '{}' must be bool, not {}",
                    kind.name(),
                    t.ty
                ),
                e.span,
            );
            return self.error(d);
        }
        t
    }

    /// Folds a node whose operands are all constants into a constant, when it evaluates
    /// without error. An erroring constant expression stays as it is and fails at run time,
    /// exactly as it would unfolded; [`failing_calls`] later decides whether it is a load-time
    /// error ([`Env::const_errors`]).
    fn fold(&mut self, e: TExpr) -> TExpr {
        let operands_const = match &e.kind {
            TExprKind::Not(a) | TExprKind::Neg(a) => is_const(a),
            TExprKind::Binary(_, a, b) | TExprKind::And(a, b) | TExprKind::Or(a, b) => {
                is_const(a) && is_const(b)
            }
            TExprKind::Call(_, args) | TExprKind::List(args) => args.iter().all(is_const),
            _ => false,
        };
        if !operands_const {
            return e;
        }
        match interp::eval_constant(&e) {
            Ok(value) => node(TExprKind::Const(value), e.ty, e.span),
            Err(_) => e,
        }
    }

    /// Reports the constant calls that always fail ([`failing_calls`]): an error where the
    /// expression's value is that error for every resource, else a warning (the call fails
    /// only for the resources whose evaluation reaches it).
    fn failing_calls(&mut self, e: &TExpr) {
        for f in failing_calls(e) {
            let message = if f.regex {
                f.error.message
            } else {
                format!("this call always fails: {}", f.error)
            };
            if f.always && f.regex {
                self.diags.push(Diagnostic::new(message, f.span));
            } else if f.always {
                let d = Diagnostic::new(message, f.span)
                    .with_label("fails for every resource")
                    .with_note(
                        "its arguments are constants, so it is evaluated when the rules load",
                    );
                self.diags.push(d);
            } else {
                let d = Diagnostic::warning(message, f.span)
                    .with_label("fails wherever it is evaluated")
                    .with_note(
                        "the rules load: not every evaluation reaches it (`||`, `&&`, `?:`, a macro \
                         over a list that may be empty); one that does fails with this error",
                    );
                self.warnings.push(d);
            }
        }
    }
}

/// A map literal of constant keys and values as one constant, when it evaluates without error
/// (supported, distinct keys). Linear: keys are compared through a hash set, so a literal of
/// thousands of entries folds as fast as it parses (and the back ends see one constant).
fn constant_map(entries: &[(TExpr, TExpr)]) -> Option<Value> {
    /// A key under CEL equality: `1`, `1u` (and `1.0`, not a valid key) are one key.
    #[derive(PartialEq, Eq, Hash)]
    enum Key<'a> {
        Num(i128),
        Bool(bool),
        Str(&'a str),
    }
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let (TExprKind::Const(key), TExprKind::Const(value)) = (&k.kind, &v.kind) else {
            return None;
        };
        let canonical = match key {
            Value::Int(i) => Key::Num(i128::from(*i)),
            Value::Uint(u) => Key::Num(i128::from(*u)),
            Value::Bool(b) => Key::Bool(*b),
            Value::String(s) => Key::Str(s),
            // Not a map key: left to evaluation, which reports it.
            _ => return None,
        };
        if !seen.insert(canonical) {
            return None;
        }
        out.push((key.clone(), value.clone()));
    }
    Some(Value::Map(Arc::new(super::value::Map::from_entries(out))))
}

/// What [`Checker::error`] leaves in place of an erroneous subtree (or `dyn(null)`).
pub(super) fn is_error_placeholder(e: &TExpr) -> bool {
    matches!(e.kind, TExprKind::Const(Value::Null)) && e.ty.is_dyn()
}

fn is_const(e: &TExpr) -> bool {
    matches!(e.kind, TExprKind::Const(_))
}

fn join_all<'a>(mut types: impl Iterator<Item = &'a Type>) -> Type {
    let Some(first) = types.next() else {
        return Type::Dyn;
    };
    types.fold(first.clone(), |acc, t| acc.join(t))
}

fn object_fields(ty: &Type) -> Vec<&'static str> {
    match ty {
        Type::Condition => crate::cel::host::CONDITION_FIELDS.to_vec(),
        Type::ResourceStatus => crate::cel::host::STATUS_FIELDS.to_vec(),
        Type::ObjectReference => crate::cel::host::OBJECT_REFERENCE_FIELDS.to_vec(),
        _ => Vec::new(),
    }
}

/// The result type of a binary operator on static operand types, or `None` when no overload
/// applies.
fn binary_type(op: BinaryOp, l: &Type, r: &Type) -> Option<Type> {
    let dyn_either = l.is_dyn() || r.is_dyn();
    match op {
        BinaryOp::And | BinaryOp::Or => {
            (l.assignable_to(&Type::Bool) && r.assignable_to(&Type::Bool)).then_some(Type::Bool)
        }
        BinaryOp::Eq | BinaryOp::Ne => {
            let ok = l.assignable_to(r)
                || (is_numeric(l) && is_numeric(r))
                || (matches!(l, Type::Null) && (r.is_object() || r.is_dyn()))
                || (matches!(r, Type::Null) && (l.is_object() || l.is_dyn()));
            ok.then_some(Type::Bool)
        }
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let ok = dyn_either
                || (is_numeric(l) && is_numeric(r))
                || (l == r
                    && matches!(
                        l,
                        Type::String | Type::Bytes | Type::Bool | Type::Timestamp | Type::Duration
                    ));
            ok.then_some(Type::Bool)
        }
        BinaryOp::In => {
            let ok = match r {
                Type::Dyn => true,
                Type::List(elem) => l.assignable_to(elem) || (is_numeric(l) && is_numeric(elem)),
                Type::Map(k, _) => l.assignable_to(k) || (is_numeric(l) && is_numeric(k)),
                Type::Resource => l.assignable_to(&Type::String),
                _ => false,
            };
            ok.then_some(Type::Bool)
        }
        _ if dyn_either => arithmetic_with_dyn(op, l, r),
        _ => arithmetic(op, l, r),
    }
}

fn arithmetic(op: BinaryOp, l: &Type, r: &Type) -> Option<Type> {
    match (op, l, r) {
        (BinaryOp::Rem, Type::Int, Type::Int) | (BinaryOp::Rem, Type::Uint, Type::Uint) => {
            Some(l.clone())
        }
        (BinaryOp::Rem, _, _) => None,
        (_, Type::Int, Type::Int)
        | (_, Type::Uint, Type::Uint)
        | (_, Type::Double, Type::Double) => Some(l.clone()),
        (BinaryOp::Add, Type::String, Type::String) | (BinaryOp::Add, Type::Bytes, Type::Bytes) => {
            Some(l.clone())
        }
        (BinaryOp::Add, Type::List(a), Type::List(b)) => Some(Type::list(a.join(b))),
        (BinaryOp::Add, Type::Timestamp, Type::Duration)
        | (BinaryOp::Add, Type::Duration, Type::Timestamp) => Some(Type::Timestamp),
        (BinaryOp::Add, Type::Duration, Type::Duration)
        | (BinaryOp::Sub, Type::Duration, Type::Duration) => Some(Type::Duration),
        (BinaryOp::Sub, Type::Timestamp, Type::Timestamp) => Some(Type::Duration),
        (BinaryOp::Sub, Type::Timestamp, Type::Duration) => Some(Type::Timestamp),
        _ => None,
    }
}

/// With a `dyn` operand the overload is chosen at run time; reject only operand types that no
/// overload of the operator accepts at all.
fn arithmetic_with_dyn(op: BinaryOp, l: &Type, r: &Type) -> Option<Type> {
    let usable = |t: &Type| match op {
        BinaryOp::Add => matches!(
            t,
            Type::Dyn
                | Type::Int
                | Type::Uint
                | Type::Double
                | Type::String
                | Type::Bytes
                | Type::List(_)
                | Type::Timestamp
                | Type::Duration
        ),
        BinaryOp::Sub => matches!(
            t,
            Type::Dyn | Type::Int | Type::Uint | Type::Double | Type::Timestamp | Type::Duration
        ),
        BinaryOp::Rem => matches!(t, Type::Dyn | Type::Int | Type::Uint),
        _ => matches!(t, Type::Dyn | Type::Int | Type::Uint | Type::Double),
    };
    if !(usable(l) && usable(r)) {
        return None;
    }
    // The same concrete type on the known side gives the result for the numeric operators.
    let known = if l.is_dyn() { r } else { l };
    match (op, known) {
        (BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem, Type::Int | Type::Uint | Type::Double) => {
            Some(known.clone())
        }
        _ => Some(Type::Dyn),
    }
}
