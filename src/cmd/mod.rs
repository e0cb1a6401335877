//! The subcommands behind `src/main.rs`: each takes parsed options and its input and output
//! streams, and returns a [`CmdError`] that main prints as one line.

pub mod bench;
pub mod check;
pub mod diff;
pub mod eval;
mod fleet;
pub mod ir;
pub mod serve;
pub mod shards;
pub mod simulate;

use std::path::PathBuf;

/// A failure of a subcommand, printed by main as one line (diagnostics as rendered blocks).
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Input that is not what the command takes.
    #[error("{origin}: {message}")]
    Input {
        /// The file (or `<stdin>`) and place.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// The config file is unreadable or invalid.
    #[error("{0}")]
    Config(#[from] crate::daemon::config::ConfigError),
    /// The rules did not compile.
    #[error("{0}")]
    Compile(#[from] crate::rules::decision::CompileError),
    /// The daemon could not start (API probe, broker, listeners).
    #[error("{0}")]
    Startup(String),
    /// Writing the output failed.
    #[error("cannot write output: {0}")]
    Write(#[from] std::io::Error),
    /// Compiling the rules to native code failed.
    #[error("{0}")]
    Jit(#[from] crate::cel::jit::JitError),
    /// The engines decided differently (`sentinel bench`).
    #[error("engines disagree: {0}")]
    Disagree(String),
    /// The API failed while a read-only tool listed the fleet: nothing it printed is a
    /// complete report.
    #[error("the listing failed after {listed} resources, so no report is complete: {error}")]
    Api {
        /// Resources listed before the failure.
        listed: u64,
        /// The failure.
        error: crate::api::ApiError,
    },
    /// Ctrl-C stopped a listing.
    #[error("interrupted after {listed} resources; no report is complete")]
    Interrupted {
        /// Resources listed before the interrupt.
        listed: u64,
    },
    /// A tool ran and found what it exists to find (`sentinel shards`: a resource covered by
    /// no config, or by several).
    #[error("{0}")]
    Findings(String),
}

impl CmdError {
    /// The process's exit code: 2 when the API failed a listing, 130 after Ctrl-C, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            CmdError::Api { .. } => 2,
            CmdError::Interrupted { .. } => 130,
            _ => 1,
        }
    }
}

/// A `--now RFC3339` option: the time it gives, or the current time without it.
pub fn now_arg(now: Option<&str>) -> Result<crate::cel::time::Timestamp, CmdError> {
    match now {
        Some(text) => crate::cel::time::parse_timestamp(text).map_err(|e| CmdError::Input {
            origin: "--now".into(),
            message: e.message,
        }),
        None => Ok(crate::daemon::runtime::wall_clock()),
    }
}
