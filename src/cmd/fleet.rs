//! One read-only listing of the live fleet for the rollout tools (`diff`, `shards`): the API
//! client `serve` builds from a config (token, gzip, retries, page size), streamed page by
//! page, with a progress line on a terminal's stderr and Ctrl-C as a clean stop.
//!
//! Takes a config's API settings, a search and a projection; gives each page's resources to
//! the caller, then how many were listed. Invariant: memory is O(page), and a listing that did
//! not reach its end (an API failure, Ctrl-C) is an error, never a short report of a complete
//! one.

use super::CmdError;
use crate::api::ApiClient;
use crate::cel::host::{Projection, Resource};
use crate::daemon::config::Config;
use std::io::IsTerminal as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the progress line is rewritten on a terminal.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Lists `config.resource_type` from `config`'s API with `search`, decoding `projection`, and
/// calls `page` with each page's resources in API order; returns how many were listed.
pub fn list(
    config: &Config,
    search: Option<&str>,
    projection: Projection,
    mut page: impl FnMut(Vec<Resource>) -> Result<(), CmdError>,
) -> Result<u64, CmdError> {
    let api = ApiClient::new(crate::daemon::runtime::api_client_config(config))
        .map_err(|e| CmdError::Startup(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CmdError::Startup(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let mut pager = api.list_projected(&config.resource_type, search, Arc::new(projection));
        let mut progress = Progress::new(&config.resource_type);
        let mut listed = 0u64;
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        loop {
            let next = tokio::select! {
                biased;
                _ = &mut interrupted => return Err(CmdError::Interrupted { listed }),
                next = pager.next_page() => next,
            };
            match next {
                None => break,
                Some(Err(e)) => return Err(CmdError::Api { listed, error: e }),
                Some(Ok(p)) => {
                    listed += p.items.len() as u64;
                    progress.update(listed, p.total);
                    page(p.items)?;
                }
            }
        }
        progress.clear();
        Ok(listed)
    })
}

/// The progress line on stderr, when stderr is a terminal.
struct Progress<'a> {
    what: &'a str,
    on: bool,
    last: Instant,
    shown: bool,
}

impl<'a> Progress<'a> {
    fn new(what: &'a str) -> Progress<'a> {
        Progress {
            what,
            on: std::io::stderr().is_terminal(),
            last: Instant::now(),
            shown: false,
        }
    }

    fn update(&mut self, listed: u64, total: u64) {
        if self.on && self.last.elapsed() >= PROGRESS_EVERY {
            eprint!("\r\x1b[Klisted {listed} of about {total} {}", self.what);
            self.last = Instant::now();
            self.shown = true;
        }
    }

    fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
        }
    }
}
