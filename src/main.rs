//! The `sentinel` binary: parses the command line, initialises logging, calls into the library.

use clap::{Parser, Subcommand};
use sentinel::cmd::{self, CmdError};
use sentinel::daemon::config::{self, ConfigFlags};
use std::process::ExitCode;

/// HyperFleet Sentinel: polls the HyperFleet API, decides per resource with CEL rules (compiled
/// to native code) whether it needs reconciling, and publishes CloudEvents to the broker.
#[derive(Parser, Debug)]
#[command(name = "sentinel", version = sentinel::daemon::VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the sentinel: poll the HyperFleet API, decide with the config's rules, publish
    /// CloudEvents to the broker (broker.yaml / BROKER_* env), serve /healthz, /readyz, /metrics.
    Serve(cmd::serve::ServeArgs),
    /// Load, validate and compile a config; print a summary, or every diagnostic (exit 1).
    Check(cmd::check::CheckArgs),
    /// Decide for resources given as JSON (one object, a list page, or JSON lines) and print one
    /// JSON line per resource with the decision, the reason and every param's value.
    Eval(cmd::eval::EvalArgs),
    /// Print one compiler stage (tokens, AST, typed tree, Cranelift IR, machine code) of the
    /// message_decision or one param.
    Ir(cmd::ir::IrArgs),
    /// Check that the engines agree on a fleet of resources, then time each (ns/decision).
    Bench(cmd::bench::BenchArgs),
    /// Run the whole system on this machine: a fake HyperFleet API over HTTP, simulated
    /// adapters, and the real sentinel loop, until the fleet converges; print a summary.
    Simulate(Box<cmd::simulate::SimulateArgs>),
    /// What a change of rules will do: list the fleet once, decide every resource with the new
    /// config's rules and the baseline's, and print each resource whose decision changes.
    Diff(cmd::diff::DiffArgs),
    /// Whether a set of sentinels covers the fleet exactly once: per config, the resources its
    /// resource_selector covers, then those no config covers and those several cover.
    Shards(cmd::shards::ShardsArgs),
    /// Print the merged configuration (file < env < flags, with defaults) as YAML.
    ConfigDump {
        #[command(flatten)]
        flags: ConfigFlags,
    },
    /// Print version, commit and build date.
    Version,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => cmd::serve::main(&args),
        Command::Check(args) => cmd::check::main(&args, &mut std::io::stdout()),
        Command::ConfigDump { flags } => config::load(&flags, &config::process_env)
            .map_err(CmdError::from)
            .and_then(|c| print_out(&config::dump(&c))),
        Command::Eval(args) => cmd::eval::main(&args),
        Command::Ir(args) => cmd::ir::main(&args),
        Command::Bench(args) => cmd::bench::main(&args),
        Command::Simulate(args) => cmd::simulate::main(&args, &mut std::io::stdout()),
        Command::Diff(args) => cmd::diff::main(&args, &mut std::io::stdout().lock()),
        Command::Shards(args) => cmd::shards::main(&args, &mut std::io::stdout().lock()),
        Command::Version => print_out(&format!("{}\n", sentinel::daemon::version_text())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// Writes `text` to stdout; a closed pipe (`sentinel version | head -1`) ends quietly, as the
/// Go binary does, instead of the panic of `print!`.
fn print_out(text: &str) -> Result<(), CmdError> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(CmdError::Write),
    }
}

/// Reports a failed command on stderr as the Go binary does (`Error executing command
/// 'sentinel <args as given>': <error>`, the line CrashLoopBackOff triage and log alerts see);
/// a config whose rules do not compile first gets its rendered diagnostics.
fn report(e: &CmdError) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = if args.is_empty() {
        "(no command)".to_string()
    } else {
        args.join(" ")
    };
    let message = match e {
        CmdError::Compile(c) => {
            let n: usize = c.exprs.iter().map(|x| x.diagnostics.len()).sum();
            eprintln!("{}", c.to_string().trim_end());
            format!(
                "the config's rules have {n} problem{}",
                if n == 1 { "" } else { "s" }
            )
        }
        other => other.to_string().trim_end().to_string(),
    };
    eprintln!("Error executing command 'sentinel {command}': {message}");
}
