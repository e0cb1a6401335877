//! What each cycle asks the API for: the selector's search, the server-side filter
//! (`server_filters`) with its full sweeps (`full_sweep_interval`), and the fields
//! (`server_projection`).
//!
//! Takes the config and the compiled rules; gives the [`Plan`] (what `sentinel check` prints
//! and `serve` logs at start-up). What a cycle asks for, given what the API accepted so far and
//! when the last full sweep completed, is [`super::query`]'s.
//!
//! Invariants:
//! - with `server_filters` off and `server_projection` false, the requests are the Go
//!   sentinel's byte for byte;
//! - the filter is the rules' sound filter unless a full sweep is configured: the tight one,
//!   which leaves some parts to the sweep ([`crate::rules::filter::Filter::swept`]), is only
//!   sent with a sweep that lists everything at least every `full_sweep_interval`;
//! - whatever filter is sent, a full sweep lists everything at least every
//!   [`DEFAULT_FULL_SWEEP`] (or `full_sweep_interval`): nothing else would bound a divergence
//!   between the API's search and the rules;
//! - a search the API would refuse for its length is never sent: the plan drops the filter and
//!   says so;
//! - `fields` name only what the rules, message_data and the daemon read, so a projected
//!   record never reads outside what the API sent.

use super::config::{Config, ServerFilters};
use crate::cel::host::Resource;
use crate::cel::time::Timestamp;
use crate::resource::Fields;
use crate::rules::Rules;
use crate::rules::filter::{self, Filter};
use crate::tsl::{self, MAX_SEARCH_LEN, Tsl};
use std::sync::Arc;
use std::time::Duration;

/// How often a filtering daemon lists everything when `full_sweep_interval` is not set.
pub const DEFAULT_FULL_SWEEP: Duration = Duration::from_secs(600);

/// What a config's listings ask for, decided once at start-up.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The selector's search (the Go sentinel's), if any.
    pub selector: Option<String>,
    /// The filter ANDed with it in filtered cycles.
    pub filter: Option<Tsl>,
    /// The derived filter, for `server_filters: auto`.
    pub derived: Option<Filter>,
    /// While filtering, a full sweep at least this often: `full_sweep_interval`, else
    /// [`DEFAULT_FULL_SWEEP`]; `None` without a filter.
    pub sweep: Option<Duration>,
    /// Whether `full_sweep_interval` is set: only then may the filter leave to the sweep what
    /// the API's search cannot express.
    pub sweep_set: bool,
    /// The `fields` parameter, and what an answer must carry.
    pub fields: Option<Arc<Fields>>,
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
        let filter = Plan::filter(config, rules, &mut derived, &mut warnings);
        let filter = filter.filter(|f| {
            let len = combined_len(selector.as_deref(), f) + crate::api::BY_ID_SEARCH_SLACK;
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
            match Fields::of(&rules.projection) {
                Ok(fields) => Some(Arc::new(fields)),
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
            sweep: filter.as_ref().map(|_| sweep.unwrap_or(DEFAULT_FULL_SWEEP)),
            sweep_set: sweep.is_some(),
            filter,
            derived,
            fields,
            warnings,
        }
    }

    /// The filter `server_filters` asks for (`None`: none, or one that keeps everything).
    fn filter(
        config: &Config,
        rules: &Rules,
        derived: &mut Option<Filter>,
        warnings: &mut Vec<String>,
    ) -> Option<Tsl> {
        let sweep = config.full_sweep_interval;
        match &config.server_filters {
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
                *derived = Some(f);
                (chosen != Tsl::True).then_some(chosen)
            }
            // Validated at load; a search that no longer parses cannot happen.
            ServerFilters::Search(text) => tsl::parse(text).ok().filter(|t| *t != Tsl::True),
            // ANDed in order, as the Go sentinel's client joins its filters.
            ServerFilters::Searches(list) => {
                let all = Tsl::and(list.iter().filter_map(|text| tsl::parse(text).ok()));
                (all != Tsl::True).then_some(all)
            }
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

    /// Whether the filter leaves `resource` out at `now` by design: a part of the rules it
    /// leaves to a configured full sweep (the tight filter of `auto`, or a search of the
    /// operator's own that `sentinel check` warned about), as opposed to a resource the API's
    /// search left out although the filter, as this sentinel reads it, keeps it.
    pub fn leaves_to_the_sweep(&self, resource: &Resource, now: Timestamp) -> bool {
        let Some(filter) = &self.filter else {
            return false;
        };
        let sound = self.derived.as_ref().map(|d| &d.sound);
        self.sweep_set
            && filter.eval(resource, now) != Some(true)
            && sound.is_none_or(|sound| sound.eval(resource, now) == Some(true))
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
