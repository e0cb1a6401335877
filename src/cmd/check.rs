//! `sentinel check`: loads, validates and compiles a config, printing a summary or every
//! diagnostic.

use super::CmdError;
use crate::decision::{DecisionSource, Program};
use std::io::Write;
use std::path::Path;

/// Everything a config compiles to.
#[derive(Debug)]
pub struct Rules {
    /// Where the rules came from (`built-in default rules` or the file).
    pub origin: String,
    /// The compiled message_decision.
    pub decision: Program,
}

/// Loads and compiles the rules: the config file's when given, else the built-in defaults.
pub fn load_rules(config: Option<&Path>) -> Result<Rules, CmdError> {
    match config {
        None => Ok(Rules {
            origin: "built-in default rules".into(),
            decision: Program::compile(&DecisionSource::default_rules())?,
        }),
        Some(path) => Err(CmdError::Input {
            origin: path.display().to_string(),
            message: "config files are not supported yet".into(),
        }),
    }
}

/// Runs `sentinel check`.
pub fn run(config: Option<&Path>, out: &mut impl Write) -> Result<(), CmdError> {
    let rules = load_rules(config)?;
    writeln!(out, "{}: ok", rules.origin)?;
    writeln!(out, "message_decision:")?;
    for p in &rules.decision.params {
        writeln!(
            out,
            "  {:<30} {:<10} {}",
            p.name,
            p.expr.ty.to_string(),
            p.source
        )?;
    }
    writeln!(
        out,
        "  {:<30} {:<10} {}",
        "result",
        rules.decision.result.ty.to_string(),
        rules.decision.result_source
    )?;
    Ok(())
}
