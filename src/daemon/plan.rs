//! What each cycle asks the API for: the selector's search, the server-side filter
//! (`server_filters`) with its full sweeps (`full_sweep_interval`), and the fields
//! (`server_projection`).
//!
//! Takes the config and the compiled rules; gives the [`Plan`] (what `sentinel check` prints
//! and `serve` logs at start-up) and the per-cycle [`Query`].
//!
//! Invariants:
//! - with `server_filters` off and `server_projection` false, the requests are the Go
//!   sentinel's byte for byte;
//! - the filter is the rules' sound filter unless a full sweep is configured: the tight one,
//!   which leaves some parts to the sweep ([`crate::rules::filter::Filter::swept`]), is only
//!   sent with a sweep that lists everything at least every `full_sweep_interval`;
//! - a search the API would refuse for its length is never sent: the plan drops the filter and
//!   says so;
//! - `fields` name only what the rules, message_data and the daemon read, so a projected
//!   record never reads outside what the API sent.

use super::config::{Config, ServerFilters};
use crate::cel::host::{CONDITION_SCHEMA, Projection, RESOURCE_SCHEMA, ResourceField};
use crate::cel::time::Timestamp;
use crate::rules::Rules;
use crate::rules::filter::{self, Filter};
use crate::tsl::{self, MAX_SEARCH_LEN, Tsl};
use std::time::Duration;

/// What a config's listings ask for, decided once at start-up.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The selector's search (the Go sentinel's), if any.
    pub selector: Option<String>,
    /// The filter ANDed with it in filtered cycles.
    pub filter: Option<Tsl>,
    /// The derived filter, for `server_filters: auto`.
    pub derived: Option<Filter>,
    /// A cycle without the filter at least this often.
    pub sweep: Option<Duration>,
    /// The `fields` parameter.
    pub fields: Option<String>,
    /// What the operator should know (logged as WARN by `serve`, printed by `check`).
    pub warnings: Vec<String>,
}

impl Plan {
    /// The plan of `config` with its compiled `rules`.
    pub fn new(config: &Config, rules: &Rules) -> Plan {
        let selector = crate::api::search_from_selector(config.selector_pairs());
        let mut warnings = Vec::new();
        let sweep = config.full_sweep_interval;
        let mut derived = None;
        let filter = match &config.server_filters {
            ServerFilters::Off => None,
            ServerFilters::Auto => {
                let f = filter::derive(rules.decision.program());
                let chosen = if sweep.is_some() {
                    f.tight.clone()
                } else {
                    f.sound.clone()
                };
                if chosen == Tsl::True {
                    let mut why: Vec<String> = f.unfiltered.iter().map(describe).collect();
                    if sweep.is_none() && f.needs_sweep() {
                        why.push(format!(
                            "without full_sweep_interval the filter must keep what {} can \
                             publish",
                            names(&f.swept)
                        ));
                    }
                    warnings.push(format!(
                        "server_filters: auto filters nothing for these rules: {}",
                        why.join("; ")
                    ));
                }
                derived = Some(f);
                (chosen != Tsl::True).then_some(chosen)
            }
            // Validated at load; a search that no longer parses cannot happen.
            ServerFilters::Search(text) => tsl::parse(text).ok().filter(|t| *t != Tsl::True),
        };
        let filter = filter.filter(|f| {
            let len = combined_len(selector.as_deref(), f);
            let fits = len <= MAX_SEARCH_LEN;
            if !fits {
                warnings.push(format!(
                    "server_filters: the search would be {len} characters, above the API's \
                     {MAX_SEARCH_LEN}: every resource is listed"
                ));
            }
            fits
        });
        if filter.is_none() && sweep.is_some() {
            warnings.push("full_sweep_interval has no effect without a server filter".into());
        }
        let fields = if config.server_projection {
            match fields(&rules.projection) {
                Ok(fields) => Some(fields),
                Err(why) => {
                    warnings.push(format!("server_projection: not projected: {why}"));
                    None
                }
            }
        } else {
            None
        };
        Plan {
            selector,
            filter,
            derived,
            sweep,
            fields,
            warnings,
        }
    }

    /// The search of a cycle at `now`: the selector's, ANDed with the filter unless `full`.
    pub fn search(&self, now: Timestamp, full: bool) -> Option<String> {
        let filter = self.filter.as_ref().filter(|_| !full);
        match (&self.selector, filter) {
            (selector, None) => selector.clone(),
            (None, Some(f)) => f.text_at(now),
            (Some(s), Some(f)) => f.text_at(now).map(|f| format!("{s} and ({f})")),
        }
    }
}

/// The length of the selector ANDed with `filter` (its cutoffs have a fixed width).
fn combined_len(selector: Option<&str>, filter: &Tsl) -> usize {
    let f = filter.max_text_len();
    selector.map_or(f, |s| s.len() + " and ()".len() + f)
}

/// One blocked part, for people: `param "x" (`source`): reason`.
pub fn describe(b: &filter::Blocker) -> String {
    format!("{} `{}`: {}", b.origin, b.source, b.reason)
}

fn names(blockers: &[filter::Blocker]) -> String {
    let names: Vec<String> = blockers.iter().map(|b| b.origin.to_string()).collect();
    names.join(", ")
}

/// The `fields` parameter that asks for exactly what `projection` decodes, or why there is none.
pub fn fields(projection: &Projection) -> Result<String, String> {
    if projection.is_all() {
        return Err("the rules read the whole resource".into());
    }
    let mut out: Vec<String> = Vec::new();
    for def in &RESOURCE_SCHEMA {
        if !projection.has_field(def.field) {
            continue;
        }
        match def.field {
            ResourceField::OwnerReferences => {
                return Err("the rules read owner_references, which the API cannot project".into());
            }
            ResourceField::Status if projection.has_every_condition_field() => {
                out.push("status.conditions".into());
            }
            ResourceField::Status => {
                for c in &CONDITION_SCHEMA {
                    if c.name == "type" || projection.has_condition_field(c.field) {
                        out.push(format!("status.conditions.{}", c.name));
                    }
                }
            }
            _ => out.push(def.name.to_string()),
        }
    }
    Ok(out.join(","))
}

/// The per-cycle state: when the last full sweep was.
#[derive(Debug)]
pub struct Query {
    plan: Plan,
    last_sweep: Option<Timestamp>,
}

/// What one cycle asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct CycleQuery {
    /// The `search` parameter.
    pub search: Option<String>,
    /// Whether the cycle lists without the filter (a full sweep, or no filter at all).
    pub full: bool,
}

impl Query {
    /// Listings by `plan`.
    pub fn new(plan: Plan) -> Query {
        Query {
            plan,
            last_sweep: None,
        }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// What the cycle at `now` asks for: without the filter when there is none and, with
    /// `full_sweep_interval`, at the first cycle and whenever that long has passed since the
    /// last full one.
    pub fn cycle(&mut self, now: Timestamp) -> CycleQuery {
        let due = match (self.plan.sweep, self.last_sweep) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(every), Some(last)) => {
                let every = i128::try_from(every.as_nanos()).unwrap_or(i128::MAX);
                now.nanos().saturating_sub(last.nanos()) >= every
            }
        };
        let full = self.plan.filter.is_none() || due;
        if full {
            self.last_sweep = Some(now);
        }
        CycleQuery {
            search: self.plan.search(now, full),
            full,
        }
    }
}
