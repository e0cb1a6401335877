//! `sentinel shards`: whether a set of sentinels covers the fleet exactly once. Lists the fleet
//! once without a selector and reports, per config, how many resources its `resource_selector`
//! covers (read as the API reads the search `serve` sends for it), then the resources no config
//! covers and those several cover.
//!
//! Invariant: read-only and streamed: memory is O(page) plus the ids it prints.

use super::CmdError;
use super::fleet;
use crate::cel::host::{Projection, Resource, ResourceField};
use crate::daemon::config::{Config, ConfigFlags};
use crate::tsl::Tsl;
use std::io::Write;
use std::path::PathBuf;

/// How many ids of the uncovered and of the overlapping resources the text report shows.
const SHOWN_IDS: usize = 20;

/// Options of `sentinel shards`.
#[derive(clap::Args, Debug, Clone)]
pub struct ShardsArgs {
    /// A sentinel's config (give one per sentinel: `--config a.yaml --config b.yaml`). They
    /// must list the same API and resource_type; each one's resource_selector is its shard.
    #[arg(short, long = "config", value_name = "FILE", required = true)]
    pub configs: Vec<PathBuf>,
    /// One JSON object per uncovered or overlapping resource, then `{"summary": …}`.
    #[arg(long)]
    pub json: bool,
}

/// One config's shard: its file and the search its selector sends (`None`: everything).
struct Shard {
    path: String,
    search: Option<Tsl>,
    covered: u64,
}

/// Resources covered by no config or by several, counted with the first ids.
#[derive(Default)]
struct Found {
    count: u64,
    ids: Vec<String>,
}

/// Runs `sentinel shards`: exit 0 when every resource is covered once, 1 when one is covered
/// by none or by several (or a config does not load), 2 when the API fails mid-listing.
pub fn main(args: &ShardsArgs, out: &mut impl Write) -> Result<(), CmdError> {
    let configs = args
        .configs
        .iter()
        .map(|path| {
            let flags = ConfigFlags {
                config: Some(path.clone()),
                ..ConfigFlags::default()
            };
            Ok((path.display().to_string(), super::check::load(&flags)?.0))
        })
        .collect::<Result<Vec<(String, Config)>, CmdError>>()?;
    let first = agreed(&configs)?;
    let mut shards = configs
        .iter()
        .map(|(path, config)| shard(path, config))
        .collect::<Result<Vec<Shard>, CmdError>>()?;
    let mut projection = Projection::base();
    projection.add_field(ResourceField::Labels);
    let now = crate::daemon::runtime::wall_clock();
    let (mut uncovered, mut overlapping) = (Found::default(), Found::default());
    let listed = fleet::list(first, None, projection, |items| {
        for resource in &items {
            let covering: Vec<usize> = (0..shards.len())
                .filter(|&i| shards[i].covers(resource, now))
                .collect();
            covering.iter().for_each(|&i| shards[i].covered += 1);
            let found = match covering.len() {
                0 => &mut uncovered,
                1 => continue,
                _ => &mut overlapping,
            };
            let id = resource.id().map_or("", |t| t.as_str()).to_string();
            if args.json {
                let by: Vec<&str> = covering.iter().map(|&i| shards[i].path.as_str()).collect();
                writeln!(out, "{}", serde_json::json!({"id": id, "covered_by": by}))?;
            }
            found.count += 1;
            if found.ids.len() < SHOWN_IDS {
                found.ids.push(id);
            }
        }
        Ok(())
    })?;
    report(out, args.json, listed, &shards, &uncovered, &overlapping)?;
    match (uncovered.count, overlapping.count) {
        (0, 0) => Ok(()),
        (u, o) => Err(CmdError::Findings(format!(
            "{u} resource{} covered by no config, {o} by several",
            if u == 1 { "" } else { "s" }
        ))),
    }
}

/// The config whose API settings list the fleet, once every config agrees on them.
fn agreed(configs: &[(String, Config)]) -> Result<&Config, CmdError> {
    let key = |c: &Config| {
        let api = &c.clients.hyperfleet_api;
        (
            api.base_url.clone(),
            api.version.clone(),
            c.resource_type.clone(),
        )
    };
    let (first_path, first) = &configs[0];
    for (path, config) in &configs[1..] {
        if key(config) != key(first) {
            let (url, version, kind) = key(config);
            let (first_url, first_version, first_kind) = key(first);
            return Err(CmdError::Input {
                origin: path.clone(),
                message: format!(
                    "lists {kind} from {} ({version}), but {first_path} lists {first_kind} from \
                     {} ({first_version}): shards must list the same API and resource_type",
                    crate::common::redact::mask_url(&url),
                    crate::common::redact::mask_url(&first_url)
                ),
            });
        }
    }
    Ok(first)
}

fn shard(path: &str, config: &Config) -> Result<Shard, CmdError> {
    let text = crate::api::search_from_selector(config.selector_pairs());
    let search = text
        .map(|t| crate::tsl::parse(&t))
        .transpose()
        .map_err(|e| CmdError::Input {
            origin: format!("{path}: resource_selector"),
            message: e.to_string(),
        })?;
    Ok(Shard {
        path: path.to_string(),
        search,
        covered: 0,
    })
}

impl Shard {
    /// Whether the API's answer to this shard's search holds `resource`.
    fn covers(&self, resource: &Resource, now: crate::cel::time::Timestamp) -> bool {
        self.search
            .as_ref()
            .is_none_or(|s| s.eval(resource, now) == Some(true))
    }
}

fn report(
    out: &mut impl Write,
    json: bool,
    listed: u64,
    shards: &[Shard],
    uncovered: &Found,
    overlapping: &Found,
) -> Result<(), CmdError> {
    if json {
        let per_config: serde_json::Map<String, serde_json::Value> = shards
            .iter()
            .map(|s| (s.path.clone(), s.covered.into()))
            .collect();
        let summary = serde_json::json!({"summary": {
            "listed": listed,
            "uncovered": uncovered.count,
            "overlapping": overlapping.count,
            "per_config": per_config,
        }});
        writeln!(out, "{summary}")?;
        return Ok(out.flush()?);
    }
    writeln!(out, "listed {listed}")?;
    for s in shards {
        let selector = s
            .search
            .as_ref()
            .map_or("everything".to_string(), Tsl::to_string);
        writeln!(out, "{}: {} ({selector})", s.path, s.covered)?;
    }
    for (what, found) in [
        ("covered by no config", uncovered),
        ("covered by several", overlapping),
    ] {
        writeln!(out, "{what}: {}", found.count)?;
        for id in &found.ids {
            writeln!(out, "  {id}")?;
        }
        if found.count > found.ids.len() as u64 {
            writeln!(out, "  … and {} more", found.count - found.ids.len() as u64)?;
        }
    }
    Ok(out.flush()?)
}
