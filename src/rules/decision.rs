//! message_decision: params evaluated in authored order, each seeing the earlier ones, then the
//! result, giving a [`Decision`] to publish or skip.
//!
//! Takes the param and result source texts, compiles them once ([`Program::compile`], and to
//! native code with [`Compiled::new`]) and then decides per resource ([`Program::interpret`],
//! [`Compiled::decide`], [`Compiled::explain`]). Invariant: a `Program` that compiled cannot fail
//! to evaluate for lack of a name or overload: every failure at decision time is a CEL runtime
//! error of that one resource, reported in the decision's reason.

use crate::cel::check::{VarDecl, check_with_warnings};
use crate::cel::diag::{self, Diagnostic};
use crate::cel::host::Resource;
use crate::cel::interp::{self, Activation};
use crate::cel::jit::{self, JitError, JitProgram, Outcome, Params};
use crate::cel::time::Timestamp;
use crate::cel::typed::TExpr;
use crate::cel::typed::Var;
use crate::cel::types::Type;
use crate::cel::value::{EvalError, EvalResult, Value};
use crate::cel::{Env, parser};
use crate::rules::origin::Origin;
use std::fmt;
use std::sync::{Arc, LazyLock};

/// One param as written in the config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSource {
    /// The param's name, visible to later params and the result.
    pub name: String,
    /// Its CEL expression.
    pub expr: String,
}

/// A message_decision section as written: params in authored order and the result expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionSource {
    /// Params in authored order.
    pub params: Vec<ParamSource>,
    /// The result expression.
    pub result: String,
}

impl DecisionSource {
    /// The default rules of the decision engine reference, used when the config has no
    /// message_decision section.
    pub fn default_rules() -> DecisionSource {
        let p = |name: &str, expr: &str| ParamSource {
            name: name.into(),
            expr: expr.into(),
        };
        DecisionSource {
            params: vec![
                p("ref_time", r#"condition("Reconciled").last_updated_time"#),
                p("is_reconciled", r#"condition("Reconciled").status == "True""#),
                p("has_ref_time", r#"ref_time != """#),
                p("is_new_resource", "resource.generation == 1 && !has_ref_time"),
                p("generation_mismatch", r#"resource.generation > condition("Reconciled").observed_generation"#),
                p(
                    "reconciled_and_stale",
                    r#"is_reconciled && has_ref_time && now - timestamp(ref_time) > duration("30m")"#,
                ),
                p(
                    "not_reconciled_and_debounced",
                    r#"!is_reconciled && has_ref_time && now - timestamp(ref_time) > duration("10s")"#,
                ),
            ],
            result: "is_new_resource || generation_mismatch || reconciled_and_stale || not_reconciled_and_debounced"
                .into(),
        }
    }
}

/// The diagnostics of one expression of a config, with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprDiagnostics {
    /// Where the expression is in the config (`message_decision.params[3] "is_new_resource"`).
    pub origin: Origin,
    /// The expression's source text.
    pub source: String,
    /// What is wrong with it.
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for ExprDiagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&diag::render(
            &self.diagnostics,
            &self.origin.to_string(),
            &self.source,
        ))
    }
}

/// Every problem found compiling a config's expressions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct CompileError {
    /// Per expression, in config order.
    pub exprs: Vec<ExprDiagnostics>,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.exprs.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            write!(f, "{}", e.to_string().trim_end())?;
        }
        Ok(())
    }
}

/// Parses and checks one expression, attributing diagnostics to `origin`; its warnings, if any,
/// are added to `warnings`.
pub fn compile_expr(
    source: &str,
    env: &Env,
    origin: Origin,
    warnings: &mut Vec<ExprDiagnostics>,
) -> Result<TExpr, ExprDiagnostics> {
    let located = |diagnostics| ExprDiagnostics {
        origin: origin.clone(),
        source: source.to_string(),
        diagnostics,
    };
    if source.trim().is_empty() {
        return Err(located(vec![Diagnostic::new(
            "expression is empty",
            Default::default(),
        )]));
    }
    let ast = parser::parse(source).map_err(located)?;
    let checked = check_with_warnings(&ast, env).map_err(located)?;
    if !checked.warnings.is_empty() {
        warnings.push(located(checked.warnings));
    }
    Ok(checked.expr)
}

/// The environment of a config's message_decision: [`Env::decision`] with the resource schema
/// and constant-error checks of configs.
fn decision_env() -> Env {
    Env::decision(&[]).for_config(crate::cel::host::RESOURCE_FIELDS)
}

/// Warns of every `condition("T").status` read when no expression of the decision reads
/// `condition("T").observed_generation`: the status-conditions ADR requires comparing a
/// condition's observed generation with the resource's generation before trusting its status.
fn unchecked_statuses(
    params: &[Param],
    result: &TExpr,
    result_source: &str,
    warnings: &mut Vec<ExprDiagnostics>,
) {
    let exprs = || {
        params
            .iter()
            .enumerate()
            .map(|(index, p)| {
                let origin = Origin::Param {
                    index,
                    name: p.name.clone(),
                };
                (origin, p.source.as_str(), &p.expr)
            })
            .chain(std::iter::once((Origin::Result, result_source, result)))
    };
    let mut observed = std::collections::HashSet::new();
    for (_, _, e) in exprs() {
        condition_reads(e, &mut |name, field, _| {
            if field == "observed_generation" {
                observed.insert(name.to_string());
            }
        });
    }
    for (origin, source, e) in exprs() {
        let mut diagnostics = Vec::new();
        condition_reads(e, &mut |name, field, span| {
            if field == "status" && !observed.contains(name) {
                let d = Diagnostic::warning(
                    format!(
                        "condition \"{name}\"'s status is read but its observed_generation never is"
                    ),
                    span,
                )
                .with_label("may be the status of an older generation")
                .with_note(format!(
                    "a condition's status describes the generation it observed: compare \
                     condition(\"{name}\").observed_generation with resource.generation before \
                     trusting it (status-conditions ADR)"
                ));
                diagnostics.push(d);
            }
        });
        if diagnostics.is_empty() {
            continue;
        }
        // Merge with the expression's other warnings, in source order.
        match warnings.iter_mut().find(|w| w.origin == origin) {
            Some(w) => {
                w.diagnostics.extend(diagnostics);
                w.diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
            }
            None => warnings.push(ExprDiagnostics {
                origin,
                source: source.to_string(),
                diagnostics,
            }),
        }
    }
    warnings.sort_by(|a, b| a.origin.cmp(&b.origin));
}

/// Calls `f(name, field, span)` for every `condition("name").field` in `e`.
fn condition_reads(e: &TExpr, f: &mut impl FnMut(&str, &str, crate::cel::span::Span)) {
    use crate::cel::typed::{Builtin, TExprKind as K};
    if let K::Select(target, field) | K::Has(target, field) = &e.kind
        && let K::Call(Builtin::Condition, args) = &target.kind
        && let [arg] = args.as_slice()
        && let K::Const(Value::String(name)) = &arg.kind
    {
        f(name, &field.name, e.span);
    }
    e.children().for_each(|c| condition_reads(c, f));
}

/// Why a param may not have this name: empty, a duplicate, or a built-in name.
fn name_problem(earlier: &std::collections::HashSet<&str>, name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("param name is empty".into());
    }
    if matches!(name, "resource" | "now" | "condition") {
        return Some(format!(
            "param name \"{name}\" is reserved: it would hide the built-in `{name}`"
        ));
    }
    if earlier.contains(name) {
        return Some(format!("param name \"{name}\" is declared twice"));
    }
    None
}

/// A compiled param.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: Arc<str>,
    /// Its source text.
    pub source: String,
    /// Its typed tree.
    pub expr: TExpr,
}

/// A compiled message_decision.
#[derive(Clone, Debug)]
pub struct Program {
    /// Params in authored order.
    pub params: Vec<Param>,
    /// The result expression's source.
    pub result_source: String,
    /// The result expression.
    pub result: TExpr,
    /// What compiled but looks wrong (unknown resource fields, a condition's status read
    /// without its observed generation), per expression in config order.
    pub warnings: Vec<ExprDiagnostics>,
}

impl Program {
    /// What this program reads of a resource (the page decoder's projection).
    pub fn projection(&self) -> crate::cel::host::Projection {
        let mut p = crate::cel::host::Projection::base();
        for param in &self.params {
            p.add_reads(&param.expr);
        }
        p.add_reads(&self.result);
        p
    }
}

/// Why a resource is published or skipped. Displays as the exact reason text of the Go sentinel.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// `message decision matched`.
    Matched,
    /// `message decision result is false`.
    ResultFalse,
    /// `param "<name>" evaluation failed: <error>`.
    ParamFailed {
        /// The param's name.
        name: Arc<str>,
        /// Its error.
        error: EvalError,
    },
    /// `result evaluation failed: <error>`.
    ResultFailed(EvalError),
    /// `result expression did not return bool, got <type>`.
    NotBool(&'static str),
}

impl Reason {
    /// The reason text, borrowed for the two fixed reasons (no allocation on the hot path).
    pub fn text(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Reason::Matched => "message decision matched".into(),
            Reason::ResultFalse => "message decision result is false".into(),
            other => other.to_string().into(),
        }
    }

    /// The reason text as the CEL string message_data's `reason` reads: shared, not allocated,
    /// for the two fixed reasons (every published event's is `message decision matched`).
    pub fn shared_text(&self) -> Arc<str> {
        static MATCHED: LazyLock<Arc<str>> =
            LazyLock::new(|| Arc::from("message decision matched"));
        static FALSE: LazyLock<Arc<str>> =
            LazyLock::new(|| Arc::from("message decision result is false"));
        match self {
            Reason::Matched => MATCHED.clone(),
            Reason::ResultFalse => FALSE.clone(),
            other => Arc::from(other.to_string()),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Matched => f.write_str("message decision matched"),
            Reason::ResultFalse => f.write_str("message decision result is false"),
            Reason::ParamFailed { name, error } => {
                write!(f, "param \"{name}\" evaluation failed: {error}")
            }
            Reason::ResultFailed(error) => write!(f, "result evaluation failed: {error}"),
            Reason::NotBool(ty) => write!(f, "result expression did not return bool, got {ty}"),
        }
    }
}

/// The outcome for one resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Whether to publish a reconcile event.
    pub publish: bool,
    /// Why.
    pub reason: Reason,
}

impl Program {
    /// Compiles a message_decision: every param in authored order (each sees `resource`, `now`,
    /// `condition` and the params before it, typed as inferred), then the result. Reports every
    /// problem of every expression.
    pub fn compile(src: &DecisionSource) -> Result<Program, CompileError> {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let mut params = Vec::with_capacity(src.params.len());
        // One environment grows param by param (linear in the number of params).
        let mut env = decision_env();
        env.later_params = src.params.iter().rev().map(|q| q.name.clone()).collect();
        let mut seen = std::collections::HashSet::with_capacity(src.params.len());
        for (i, p) in src.params.iter().enumerate() {
            env.later_params.pop();
            let origin = Origin::Param {
                index: i,
                name: Arc::from(p.name.as_str()),
            };
            if let Some(problem) = name_problem(&seen, &p.name) {
                let d = Diagnostic::new(problem, Default::default());
                errors.push(ExprDiagnostics {
                    origin: origin.clone(),
                    source: p.expr.clone(),
                    diagnostics: vec![d],
                });
            }
            seen.insert(p.name.as_str());
            env.current = Some(p.name.clone());
            let ty = match compile_expr(&p.expr, &env, origin, &mut warnings) {
                Ok(expr) => {
                    let ty = expr.ty.clone();
                    params.push(Param {
                        name: Arc::from(p.name.as_str()),
                        source: p.expr.clone(),
                        expr,
                    });
                    ty
                }
                Err(e) => {
                    // Later params still see the name, typed dyn, so one mistake is reported once.
                    errors.push(e);
                    Type::Dyn
                }
            };
            env.push(VarDecl {
                name: p.name.clone(),
                ty,
                var: Var::Slot(i),
            });
        }
        env.current = None;
        let result = match compile_expr(&src.result, &env, Origin::Result, &mut warnings) {
            Ok(expr) if !expr.ty.assignable_to(&Type::Bool) => {
                let d = Diagnostic::new(
                    format!("result must be bool, but its type is {}", expr.ty),
                    expr.span,
                );
                errors.push(ExprDiagnostics {
                    origin: Origin::Result,
                    source: src.result.clone(),
                    diagnostics: vec![d],
                });
                None
            }
            Ok(expr) => Some(expr),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        match result {
            Some(result) if errors.is_empty() => {
                unchecked_statuses(&params, &result, &src.result, &mut warnings);
                Ok(Program {
                    params,
                    result_source: src.result.clone(),
                    result,
                    warnings,
                })
            }
            _ => Err(CompileError { exprs: errors }),
        }
    }

    /// Decides for one resource on the reference interpreter, filling `slots` with the values
    /// of the params evaluated, in authored order. As in the Go sentinel, the first param that fails decides: the resource
    /// is skipped with that param named, and later params are not evaluated. `slots` is cleared
    /// first; pass the same vector for every resource to avoid allocation.
    pub fn interpret(
        &self,
        resource: &Arc<Resource>,
        now: Timestamp,
        slots: &mut Vec<EvalResult>,
    ) -> Decision {
        slots.clear();
        for p in &self.params {
            let act = Activation {
                resource: Some(resource),
                now: Some(now),
                reason: None,
                slots,
            };
            let value = interp::eval(&p.expr, &act);
            if let Err(error) = &value {
                let reason = Reason::ParamFailed {
                    name: p.name.clone(),
                    error: error.clone(),
                };
                slots.push(value);
                return Decision {
                    publish: false,
                    reason,
                };
            }
            slots.push(value);
        }
        let act = Activation {
            resource: Some(resource),
            now: Some(now),
            reason: None,
            slots,
        };
        conclude(interp::eval(&self.result, &act))
    }
}

/// Turns the result's value into a decision.
pub fn conclude(result: EvalResult) -> Decision {
    match result {
        Ok(Value::Bool(true)) => Decision {
            publish: true,
            reason: Reason::Matched,
        },
        Ok(Value::Bool(false)) => Decision {
            publish: false,
            reason: Reason::ResultFalse,
        },
        Ok(other) => Decision {
            publish: false,
            reason: Reason::NotBool(other.type_name()),
        },
        Err(error) => Decision {
            publish: false,
            reason: Reason::ResultFailed(error),
        },
    }
}

/// Which back end decides: the reference interpreter or native code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The reference interpreter ([`crate::cel::interp`]).
    Interp,
    /// The Cranelift JIT ([`crate::cel::jit`]): the whole message_decision as one native
    /// function.
    #[default]
    Jit,
}

impl Engine {
    /// Both engines, interpreter first.
    pub const ALL: [Engine; 2] = [Engine::Interp, Engine::Jit];

    /// The engine's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Interp => "interp",
            Engine::Jit => "jit",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An engine name that is not `interp` or `jit`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine '{0}' (expected interp or jit)")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for Engine {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Engine, UnknownEngine> {
        Engine::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEngine(s.to_string()))
    }
}

/// A [`Program`] ready to decide with one engine; the JIT's native code is compiled once here.
pub struct Compiled {
    program: Program,
    jit: Option<JitProgram>,
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("engine", &self.engine())
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

/// Per-thread memory for deciding: the param values of the last decision and the JIT's
/// scratch space. Reuse one per thread: steady-state decisions do not allocate.
#[derive(Debug, Default)]
pub struct Scratch {
    /// The params evaluated by the last [`Compiled::explain`] (or, on the interpreter, the last
    /// decision), in authored order (up to and including a failing one).
    pub slots: Vec<EvalResult>,
    jit: jit::Scratch,
    prepared: jit::Prepared,
}

impl Compiled {
    /// Prepares `program` for `engine` (compiling it to native code for [`Engine::Jit`]).
    pub fn new(program: Program, engine: Engine) -> Result<Compiled, JitError> {
        let jit = match engine {
            Engine::Interp => None,
            Engine::Jit => {
                let params: Vec<TExpr> = program.params.iter().map(|p| p.expr.clone()).collect();
                Some(JitProgram::compile(
                    &params,
                    &program.result,
                    &jit::Options::default(),
                )?)
            }
        };
        Ok(Compiled { program, jit })
    }

    /// `program` on the reference interpreter (cannot fail).
    pub fn interpreted(program: Program) -> Compiled {
        Compiled { program, jit: None }
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The engine that decides.
    pub fn engine(&self) -> Engine {
        if self.jit.is_some() {
            Engine::Jit
        } else {
            Engine::Interp
        }
    }

    /// The native program, for the JIT engine.
    pub fn jit(&self) -> Option<&JitProgram> {
        self.jit.as_ref()
    }

    /// How the message_decision compiles to native code, for `sentinel check`: `7/7 params
    /// native`, the compile time, and a line per param (or the result) that runs in the
    /// interpreter. Uses the native program this one already has, else compiles one.
    pub fn native_summary(&self) -> String {
        let program = &self.program;
        let fresh;
        let native = match &self.jit {
            Some(native) => native,
            None => {
                let params: Vec<_> = program.params.iter().map(|p| p.expr.clone()).collect();
                match JitProgram::compile(&params, &program.result, &jit::Options::default()) {
                    Ok(native) => {
                        fresh = native;
                        &fresh
                    }
                    Err(e) => return format!("native code: not compiled ({e})\n"),
                }
            }
        };
        let status = native.nativeness();
        let n = program.params.len();
        let full = status[..n.min(status.len())]
            .iter()
            .filter(|s| **s == jit::Nativeness::Native)
            .count();
        let mut text = format!(
            "native code: {full}/{n} params native, compiled in {:.2} ms\n",
            native.compile_time().as_secs_f64() * 1e3
        );
        let names = program
            .params
            .iter()
            .map(|p| p.name.to_string())
            .chain(std::iter::once("result".to_string()));
        for (name, s) in names.zip(status) {
            match s {
                jit::Nativeness::Native => {}
                jit::Nativeness::Interpreted(why) => {
                    text.push_str(&format!("  {name}: runs in the interpreter ({why})\n"))
                }
            }
        }
        text
    }

    /// Decides for one resource, leaving every evaluated param's value in `scratch.slots` (as
    /// [`Program::interpret`] does): what `sentinel eval` prints.
    pub fn explain(
        &self,
        resource: &Arc<Resource>,
        now: Timestamp,
        scratch: &mut Scratch,
    ) -> Decision {
        let Some(native) = &self.jit else {
            return self.program.interpret(resource, now, &mut scratch.slots);
        };
        native.prepare(resource, &mut scratch.prepared);
        let outcome = native.decide(&scratch.prepared, now, &mut scratch.jit, Params::Keep);
        scratch.jit.take_params(&mut scratch.slots);
        self.conclude_outcome(outcome)
    }

    /// Decides for one resource without keeping param values (the daemon's hot path): on the
    /// JIT, `scratch.slots` is left as it was.
    #[inline]
    pub fn decide(
        &self,
        resource: &Arc<Resource>,
        now: Timestamp,
        scratch: &mut Scratch,
    ) -> Decision {
        let Some(native) = &self.jit else {
            return self.program.interpret(resource, now, &mut scratch.slots);
        };
        match native.prepare_and_decide(resource, &mut scratch.prepared, now, &mut scratch.jit) {
            Ok(true) => Decision {
                publish: true,
                reason: Reason::Matched,
            },
            Ok(false) => Decision {
                publish: false,
                reason: Reason::ResultFalse,
            },
            Err(outcome) => self.conclude_failure(outcome),
        }
    }

    /// Turns the native code's outcome into a decision, as [`Program::interpret`] would.
    #[inline(always)]
    pub fn conclude_outcome(&self, outcome: Outcome) -> Decision {
        match outcome {
            Outcome::Bool(true) => Decision {
                publish: true,
                reason: Reason::Matched,
            },
            Outcome::Bool(false) => Decision {
                publish: false,
                reason: Reason::ResultFalse,
            },
            other => self.conclude_failure(other),
        }
    }

    #[cold]
    #[inline(never)]
    fn conclude_failure(&self, outcome: Outcome) -> Decision {
        match outcome {
            Outcome::Bool(b) => conclude(Ok(Value::Bool(b))),
            Outcome::Value(v) => conclude(Ok(v)),
            Outcome::ResultFailed(e) => conclude(Err(e)),
            Outcome::ParamFailed(i, error) => Decision {
                publish: false,
                reason: Reason::ParamFailed {
                    name: self
                        .program
                        .params
                        .get(i)
                        .map_or_else(|| Arc::from("?"), |p| p.name.clone()),
                    error,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_reason_texts_are_the_texts_and_fixed_ones_are_shared() {
        let fixed = [Reason::Matched, Reason::ResultFalse];
        for r in &fixed {
            assert_eq!(*r.shared_text(), *r.text());
            assert!(Arc::ptr_eq(&r.shared_text(), &r.shared_text()), "{r}");
        }
        let other = Reason::NotBool("int");
        assert_eq!(*other.shared_text(), *other.text());
    }

    #[test]
    fn check_summary_counts_native_params() {
        let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
        let compiled = Compiled::new(program, Engine::Interp).expect("interp engine");
        let text = compiled.native_summary();
        assert!(text.starts_with("native code: 7/7 params native"), "{text}");
    }
}
