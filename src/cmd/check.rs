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

/// Options of `sentinel check`.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    /// The config and its overrides, as for `serve`.
    #[command(flatten)]
    pub flags: ConfigFlags,
    /// The time the server filter's cutoffs are shown for, RFC 3339 (default: the current
    /// time).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
}

/// How many resources `check` builds to look for one an operator's `server_filters` misses.
const PROBES: usize = 20_000;

/// Runs `sentinel check` with its options: [`run`], then what each cycle asks the API for.
/// An operator's `server_filters` that leaves out a resource the rules publish, with no full
/// sweep to list it, is an error (exit 1).
pub fn main(args: &CheckArgs, out: &mut impl Write) -> Result<(), CmdError> {
    let now = super::now_arg(args.now.as_deref())?;
    let (config, rules) = run(&args.flags, out)?;
    queries(&config, &rules, now, out)
}

/// The server filter, its cutoffs at `now`, what blocks it, the sweep's bound and the fields.
fn queries(
    config: &Config,
    rules: &Rules,
    now: crate::cel::time::Timestamp,
    out: &mut impl Write,
) -> Result<(), CmdError> {
    use crate::daemon::config::ServerFilters;
    use crate::daemon::plan::{Plan, describe};
    let plan = Plan::new(config, rules);
    let at = crate::cel::time::format_timestamp_utc(now);
    let sweep = config
        .full_sweep_interval
        .map(crate::common::go::go_duration_string);
    let every = match (&sweep, plan.sweep) {
        (Some(s), _) => format!("   full_sweep_interval: {s}"),
        (None, Some(default)) => format!(
            "   full_sweep_interval: {} (default)",
            crate::common::go::go_duration_string(default)
        ),
        (None, None) => String::new(),
    };
    writeln!(out, "server_filters: {}{every}", config.server_filters)?;
    let derived = plan
        .derived
        .clone()
        .unwrap_or_else(|| crate::rules::filter::derive(rules.decision.program()));
    if config.server_filters == ServerFilters::Off {
        writeln!(out, "  every resource the selector matches is listed")?;
    }
    match (&plan.filter, plan.search(now, false)) {
        (Some(filter), Some(search)) => {
            writeln!(out, "  filter: {filter}")?;
            writeln!(out, "  search at {at}: {search}")?;
        }
        _ if config.server_filters == ServerFilters::Off => {
            let would = if derived.tight == crate::tsl::Tsl::True {
                "nothing".to_string()
            } else {
                derived.tight.to_string()
            };
            let with = if derived.needs_sweep() {
                " with a full_sweep_interval"
            } else {
                ""
            };
            writeln!(out, "  auto would filter{with}: {would}")?;
        }
        _ => writeln!(
            out,
            "  no filter: every resource the selector matches is listed"
        )?,
    }
    if matches!(
        config.server_filters,
        ServerFilters::Auto | ServerFilters::Off
    ) {
        for b in &derived.unfiltered {
            writeln!(out, "  blocks the filter: {}", describe(b))?;
        }
        for b in &derived.swept {
            match (&sweep, config.server_filters == ServerFilters::Auto) {
                (Some(s), true) => writeln!(
                    out,
                    "  left to the full sweep (published at most {s} + poll_interval late): {}",
                    describe(b)
                )?,
                _ => writeln!(out, "  needs a full sweep: {}", describe(b))?,
            }
        }
    }
    for w in &plan.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    if let (false, Some(filter)) = (config.server_filters.searches().is_empty(), &plan.filter) {
        let program = rules.decision.program();
        match crate::rules::filter::counterexample(program, filter, now, PROBES, 1) {
            None => writeln!(
                out,
                "  no resource the rules publish is left out ({PROBES} resources built from the \
                 boundary values of every constant of the rules and the search)"
            )?,
            Some(found) => {
                let resource = found.resource.to_string();
                let origin = leaving_out(&config.server_filters, &found.resource, now);
                match &sweep {
                    Some(s) => writeln!(
                        out,
                        "  warning: the search leaves out a resource the rules publish (listed by \
                         the full sweep, at most {s} + poll_interval late): {resource}"
                    )?,
                    None => {
                        return Err(CmdError::Input {
                            origin,
                            message: format!(
                                "the search leaves out a resource the rules publish at {at}, and \
                                 no full_sweep_interval lists it: {resource}"
                            ),
                        });
                    }
                }
            }
        }
    }
    match (&plan.fields, config.server_projection) {
        (Some(fields), _) => writeln!(out, "server_projection: fields={}", fields.param())?,
        (None, false) => writeln!(out, "server_projection: off")?,
        (None, true) => writeln!(out, "server_projection: on, but nothing is projected")?,
    }
    Ok(())
}

/// Which of the operator's searches leaves `resource` out at `now`: `server_filters`, or
/// `server_filters[i]` of a list.
fn leaving_out(
    filters: &crate::daemon::config::ServerFilters,
    resource: &serde_json::Value,
    now: crate::cel::time::Timestamp,
) -> String {
    use crate::daemon::config::ServerFilters;
    let ServerFilters::Searches(list) = filters else {
        return "server_filters".into();
    };
    let resource = crate::cel::host::Resource::from_json(resource.clone());
    let left: Vec<String> = list
        .iter()
        .enumerate()
        .filter(|(_, text)| {
            crate::tsl::parse(text).is_ok_and(|t| t.eval(&resource, now) != Some(true))
        })
        .map(|(i, _)| format!("server_filters[{i}]"))
        .collect();
    match left.is_empty() {
        true => "server_filters".into(),
        false => left.join(", "),
    }
}

/// The widest name column of the summary.
const MAX_NAME_COLUMN: usize = 64;

/// Runs `sentinel check`: the summary, after the warnings of the expressions that compiled.
pub fn run(flags: &ConfigFlags, out: &mut impl Write) -> Result<(Config, Rules), CmdError> {
    let (config, rules) = load(flags)?;
    let path = config::config_path(flags, &config::process_env);
    writeln!(out, "{}: ok", path.display())?;
    for w in &config.warnings {
        writeln!(out, "warning: {w}")?;
    }
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
    Ok((config, rules))
}
