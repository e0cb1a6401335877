//! The `sentinel` binary: parses the command line, initialises logging, calls into the library.

use clap::{Parser, Subcommand};
use sentinel::cmd::{self, CmdError};
use std::path::PathBuf;
use std::process::ExitCode;

/// HyperFleet Sentinel: polls the HyperFleet API, decides per resource with CEL rules (compiled
/// to native code) whether it needs reconciling, and publishes CloudEvents to the broker.
#[derive(Parser, Debug)]
#[command(name = "sentinel", version = cmd::VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load, validate and compile a config; print a summary, or every diagnostic (exit 1).
    Check {
        /// Config file (else $HYPERFLEET_CONFIG, else /etc/hyperfleet/config.yaml).
        #[arg(short, long)]
        config: Option<PathBuf>,
    },
    /// Decide for resources given as JSON (one object, a list page, or JSON lines) and print one
    /// JSON line per resource with the decision, the reason and every param's value.
    Eval(cmd::eval::EvalArgs),
    /// Print version, commit and build date.
    Version,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { config } => cmd::check::run(config.as_deref(), &mut std::io::stdout()),
        Command::Eval(args) => cmd::eval::main(&args),
        Command::Version => {
            println!("{}", cmd::version_text());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            ExitCode::FAILURE
        }
    }
}

fn report(e: &CmdError) {
    let text = e.to_string();
    eprintln!("error: {}", text.trim_end());
}
