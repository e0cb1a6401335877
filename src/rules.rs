//! Everything a config compiles to: the message_decision program and the message_data program.
//!
//! Invariant: a [`Rules`] value only exists for a config whose every CEL expression compiled,
//! so the daemon cannot fail later for a name, type or syntax error.

use crate::decision::{CompileError, DecisionSource, ParamSource, Program};
use crate::message_data::MessageDataProgram;
use crate::sentinel::config::{Config, MessageData};

/// The compiled rules of one config.
#[derive(Debug)]
pub struct Rules {
    /// message_decision (the default rules when the config has none).
    pub decision: Program,
    /// message_data.
    pub message_data: MessageDataProgram,
}

impl Rules {
    /// Compiles a loaded config's expressions, reporting every problem of every expression.
    pub fn compile(config: &Config) -> Result<Rules, CompileError> {
        let source = match &config.message_decision {
            Some(md) => DecisionSource {
                params: md
                    .params
                    .iter()
                    .map(|p| ParamSource {
                        name: p.name.clone(),
                        expr: p.expr.clone(),
                    })
                    .collect(),
                result: md.result.clone(),
            },
            None => DecisionSource::default_rules(),
        };
        let decision = Program::compile(&source);
        let message_data = MessageDataProgram::compile(&config.message_data);
        match (decision, message_data) {
            (Ok(decision), Ok(message_data)) => Ok(Rules {
                decision,
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
        Ok(Rules {
            decision: Program::compile(&DecisionSource::default_rules())?,
            message_data: MessageDataProgram::compile(&MessageData::Object(Vec::new()))?,
        })
    }
}
