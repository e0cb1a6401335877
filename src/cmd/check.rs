//! `sentinel check`: loads, validates and compiles a config, printing a one-screen summary or
//! every diagnostic.

use super::CmdError;
use crate::daemon::config::{self, Config, ConfigFlags};
use crate::rules::Rules;
use std::io::Write;
use std::path::Path;

/// Loads and validates the config file (flags and env merged as for `serve`), then compiles
/// every expression of it.
pub fn load(flags: &ConfigFlags) -> Result<(Config, Rules), CmdError> {
    let config = config::load(flags, &config::process_env)?;
    let rules = Rules::compile(&config)?;
    Ok((config, rules))
}

/// The rules `sentinel eval` uses: the config file's when given (the whole file must
/// validate), else the built-in defaults.
pub fn load_rules(config: Option<&Path>) -> Result<Rules, CmdError> {
    match config {
        None => Ok(Rules::defaults()?),
        Some(path) => {
            let flags = ConfigFlags {
                config: Some(path.to_path_buf()),
                ..ConfigFlags::default()
            };
            Ok(load(&flags)?.1)
        }
    }
}

/// The widest name column of the summary.
const MAX_NAME_COLUMN: usize = 64;

/// Runs `sentinel check`: the summary, after the warnings of the expressions that compiled.
pub fn run(flags: &ConfigFlags, out: &mut impl Write) -> Result<(), CmdError> {
    let (config, rules) = load(flags)?;
    let path = config::config_path(flags, &config::process_env);
    writeln!(out, "{}: ok", path.display())?;
    for w in rules.warnings() {
        write!(out, "{w}")?;
    }
    writeln!(
        out,
        "resource_type: {}   poll_interval: {:?}   selector: {}",
        config.resource_type,
        config.poll_interval,
        crate::daemon::metrics::selector_label(&config.selector_pairs())
    )?;
    let origin = if config.message_decision.is_some() {
        ""
    } else {
        " (default rules)"
    };
    writeln!(out, "message_decision{origin}:")?;
    let program = rules.decision.program();
    // The name column fits the longest name up to a bound: a longer name overflows its column
    // (a formatting width must stay below 65,536).
    let width = program
        .params
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, MAX_NAME_COLUMN);
    for p in &program.params {
        writeln!(
            out,
            "  {:<width$}  {:<25}  {}",
            p.name,
            p.expr.ty.to_string(),
            p.source
        )?;
    }
    let result = program;
    writeln!(
        out,
        "  {:<width$}  {:<25}  {}",
        "result",
        result.result.ty.to_string(),
        result.result_source
    )?;
    write!(out, "{}", rules.decision.native_summary())?;
    writeln!(out, "message_data:")?;
    for (path, source, ty) in rules.message_data.leaves() {
        writeln!(out, "  {path} ({ty}): {source}")?;
    }
    Ok(())
}
