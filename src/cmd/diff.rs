//! `sentinel diff`: what a change of rules will do, before it ships. Lists the fleet once (the
//! new config's API settings and selector, as `serve` lists it), decides every resource with
//! the new rules and the baseline's at the same `now`, and prints each resource whose decision
//! changes, then a summary.
//!
//! Invariant: read-only (no event is published, nothing is written to the API), and streamed:
//! memory is O(page) whatever the fleet.

use super::CmdError;
use super::fleet;
use crate::cel::host::Resource;
use crate::cel::time::Timestamp;
use crate::daemon::config::ConfigFlags;
use crate::rules::Rules;
use crate::rules::decision::{Decision, Scratch};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Options of `sentinel diff`.
#[derive(clap::Args, Debug, Clone)]
pub struct DiffArgs {
    /// The config to roll out: its rules are the new ones, and its API settings and
    /// resource_selector say what is listed.
    #[arg(short, long, value_name = "NEW.yaml")]
    pub config: PathBuf,
    /// The config running today: only its message_decision is used.
    #[arg(long, value_name = "OLD.yaml")]
    pub baseline: PathBuf,
    /// The time both rule sets decide at, RFC 3339 (default: the current time, taken once).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// One JSON object per changed resource, then `{"summary": …}`, instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What a listing decided.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Resources listed.
    pub listed: u64,
    /// Published now under the baseline's rules.
    pub baseline_publish: u64,
    /// Published now under the new rules.
    pub new_publish: u64,
    /// Published under the new rules only.
    pub newly_published: u64,
    /// Published under the baseline's rules only.
    pub no_longer_published: u64,
}

/// Runs `sentinel diff`: exit 0 when it ran, 1 when a config does not load or compile, 2 when
/// the API fails mid-listing.
pub fn main(args: &DiffArgs, out: &mut impl Write) -> Result<(), CmdError> {
    let now = super::now_arg(args.now.as_deref())?;
    let load = |path: &PathBuf| {
        let flags = ConfigFlags {
            config: Some(path.clone()),
            ..ConfigFlags::default()
        };
        super::check::load(&flags)
    };
    let (config, new) = load(&args.config)?;
    let (_, baseline) = load(&args.baseline)?;
    let search = crate::api::search_from_selector(config.selector_pairs());
    let mut projection = (*new.projection).clone();
    projection.union(&baseline.projection);
    let mut diff = Diff {
        rules: [&baseline, &new],
        scratch: Scratch::default(),
        now,
        json: args.json,
        summary: Summary::default(),
    };
    diff.summary.listed = fleet::list(&config, search.as_deref(), projection, |items| {
        items
            .into_iter()
            .try_for_each(|r| diff.resource(Arc::new(r), out))
    })?;
    diff.finish(out)
}

struct Diff<'r> {
    /// The baseline's rules, then the new ones.
    rules: [&'r Rules; 2],
    scratch: Scratch,
    now: Timestamp,
    json: bool,
    summary: Summary,
}

impl Diff<'_> {
    fn resource(&mut self, resource: Arc<Resource>, out: &mut impl Write) -> Result<(), CmdError> {
        let Some([old, new]) = self.decide(&resource) else {
            return Ok(());
        };
        let s = &mut self.summary;
        s.baseline_publish += u64::from(old.publish);
        s.new_publish += u64::from(new.publish);
        if old.publish == new.publish {
            return Ok(());
        }
        if new.publish {
            s.newly_published += 1;
        } else {
            s.no_longer_published += 1;
        }
        let id = resource.id().map_or("", |t| t.as_str());
        let kind = resource.kind().map_or("", |t| t.as_str());
        if self.json {
            let side = |d: &Decision| serde_json::json!({"decision": verdict(d), "reason": d.reason.text()});
            let line = serde_json::json!({
                "id": id, "kind": kind, "baseline": side(&old), "new": side(&new),
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(
                out,
                "{id}  {kind}  {} -> {}  baseline: {}; new: {}",
                verdict(&old),
                verdict(&new),
                old.reason.text(),
                new.reason.text()
            )?;
        }
        Ok(())
    }

    /// Both decisions, for a resource `serve` decides (one it skips before deciding, as
    /// undecodable, without an id or too large, is skipped alike by any rules).
    fn decide(&mut self, resource: &Arc<Resource>) -> Option<[Decision; 2]> {
        let id = resource.id().ok()?;
        if id.as_str().is_empty() || resource.too_large().is_some() {
            return None;
        }
        Some(
            self.rules
                .map(|rules| rules.decision.decide(resource, self.now, &mut self.scratch)),
        )
    }

    fn finish(self, out: &mut impl Write) -> Result<(), CmdError> {
        let s = &self.summary;
        let changed = s.newly_published + s.no_longer_published;
        if self.json {
            let line = serde_json::json!({"summary": {
                "listed": s.listed,
                "baseline_publish": s.baseline_publish,
                "new_publish": s.new_publish,
                "changed": changed,
            }});
            writeln!(out, "{line}")?;
        } else {
            writeln!(
                out,
                "listed {}; publish now: baseline {}, new {}; changed {} (newly published {}, \
                 no longer published {})",
                s.listed,
                s.baseline_publish,
                s.new_publish,
                changed,
                s.newly_published,
                s.no_longer_published
            )?;
        }
        out.flush()?;
        Ok(())
    }
}

fn verdict(d: &Decision) -> &'static str {
    if d.publish { "publish" } else { "skip" }
}
