//! Everything a config compiles to: the message_decision program and the message_data program.
//!
//! Takes the rules' sources ([`RulesSource`]: a [`DecisionSource`] and a [`MessageData`] tree),
//! not the daemon's config: with [`decision`] and [`message_data`] this is one layer, below
//! the daemon, that the daemon's config depends on.
//!
//! Invariant: a [`Rules`] value only exists for a config whose every CEL expression compiled,
//! so the daemon cannot fail later for a name, type or syntax error.

use crate::cel::host::Projection;
use decision::{CompileError, Compiled, DecisionSource, Engine, ExprDiagnostics, Program};
use message_data::{MessageData, MessageDataProgram};
use std::sync::Arc;

pub mod decision;
pub mod filter;
pub mod message_data;
pub mod origin;

/// The compiled rules of one config.
#[derive(Debug)]
pub struct Rules {
    /// message_decision (the default rules when the config has none), ready to decide with its
    /// engine (native code by default).
    pub decision: Compiled,
    /// message_data.
    pub message_data: MessageDataProgram,
    /// What both read of a resource: the page decoder decodes these fields only.
    pub projection: Arc<Projection>,
}

impl Rules {
    /// What compiled but looks wrong, per expression in config order (message_decision first):
    /// printed by `sentinel check`, logged by `serve` at start-up.
    pub fn warnings(&self) -> impl Iterator<Item = &ExprDiagnostics> {
        let decision = self.decision.program().warnings.iter();
        decision.chain(self.message_data.warnings())
    }

    /// Logs every warning (WARN), one event per diagnostic: for `serve` at start-up.
    pub fn log_warnings(&self) {
        for w in self.warnings() {
            for d in &w.diagnostics {
                let notes = d.notes.join("; ");
                tracing::warn!(origin = %w.origin, expr = %w.source, notes = %notes, "{}", d.message);
            }
        }
    }
}

/// The sources the rules compile from, as a config holds them.
#[derive(Clone, Copy, Debug)]
pub struct RulesSource<'a> {
    /// `message_decision`; `None` decides with [`DecisionSource::default_rules`].
    pub decision: Option<&'a DecisionSource>,
    /// `message_data`.
    pub message_data: &'a MessageData,
}

/// An empty `message_data`: no `data` leaves.
static NO_DATA: MessageData = MessageData::Object(Vec::new());

impl RulesSource<'static> {
    /// The built-in default rules with an empty message_data (`sentinel eval` without a config).
    pub const DEFAULT: RulesSource<'static> = RulesSource {
        decision: None,
        message_data: &NO_DATA,
    };
}

/// How compiled rules run: which engine decides, and what the page decoder decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RulesOptions {
    /// The engine of the decision.
    pub engine: Engine,
    /// Whether pages are decoded under the rules' projection or completely.
    pub decode: Decode,
}

/// What the page decoder decodes for a config's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decode {
    /// The fields the rules and the daemon read ([`projection`]): `serve`'s way.
    Projected,
    /// Everything ([`Projection::all`]).
    Complete,
}

impl RulesOptions {
    /// `serve`'s: native code, pages decoded under the rules' projection.
    pub const SERVE: RulesOptions = RulesOptions {
        engine: Engine::Jit,
        decode: Decode::Projected,
    };

    /// The reference every other way must agree with: the interpreter, pages decoded
    /// completely.
    pub const REFERENCE: RulesOptions = RulesOptions {
        engine: Engine::Interp,
        decode: Decode::Complete,
    };
}

impl Rules {
    /// Compiles the rules' expressions (native code for the decision), reporting every problem
    /// of every expression. Takes a [`RulesSource`] or anything that gives one (a loaded config).
    pub fn compile<'a>(source: impl Into<RulesSource<'a>>) -> Result<Rules, CompileError> {
        Rules::compile_with(source, RulesOptions::SERVE)
    }

    /// [`Rules::compile`] to run as `options` say.
    pub fn compile_with<'a>(
        source: impl Into<RulesSource<'a>>,
        options: RulesOptions,
    ) -> Result<Rules, CompileError> {
        let source = source.into();
        let default_rules;
        let decision_source = match source.decision {
            Some(d) => d,
            None => {
                default_rules = DecisionSource::default_rules();
                &default_rules
            }
        };
        let decision = Program::compile(decision_source);
        let message_data = MessageDataProgram::compile(source.message_data);
        match (decision, message_data) {
            (Ok(decision), Ok(message_data)) => Ok(Rules {
                projection: match options.decode {
                    Decode::Projected => projection(&decision, &message_data),
                    Decode::Complete => Arc::new(Projection::all()),
                },
                decision: prepare(decision, options.engine),
                message_data,
            }),
            (d, m) => {
                let mut exprs = Vec::new();
                exprs.extend(d.err().into_iter().flat_map(|e| e.exprs));
                exprs.extend(m.err().into_iter().flat_map(|e| e.exprs));
                Err(CompileError { exprs })
            }
        }
    }

    /// The built-in default rules with an empty message_data, for `sentinel eval` without a
    /// config.
    pub fn defaults() -> Result<Rules, CompileError> {
        Rules::compile(RulesSource::DEFAULT)
    }
}

/// What message_decision and message_data read of a resource, together.
pub fn projection(decision: &Program, message_data: &MessageDataProgram) -> Arc<Projection> {
    let mut p = decision.projection();
    p.union(&message_data.projection());
    Arc::new(p)
}

/// Readies a program for `engine`. Native code generation failing is a bug of the JIT, never of
/// the config: the rules then run on the reference interpreter, with a warning.
fn prepare(program: Program, engine: Engine) -> Compiled {
    if engine == Engine::Interp {
        return Compiled::interpreted(program);
    }
    match Compiled::new(program.clone(), engine) {
        Ok(compiled) => compiled,
        Err(e) => {
            tracing::warn!(error = %e, "native compilation failed; the rules run on the interpreter");
            Compiled::interpreted(program)
        }
    }
}
