//! What each cycle asks the API for, given the [`Plan`], what the API turned out to accept, and
//! when the last full sweep completed ([`Query`]).
//!
//! Takes the plan and, each cycle, a monotonic reading (time since the daemon started: never
//! the wall clock, so that a clock step neither postpones nor hastens a sweep) and the cycle's
//! `now` (for the filter's cutoffs); gives the cycle's [`CycleQuery`].
//!
//! Invariants:
//! - a full sweep counts when it completes, never when it starts: a sweep that fails is tried
//!   again at the next cycle, and one that keeps failing shows in [`Query::sweep_age`];
//! - what the API refuses is not asked again until it is probed again (every full sweep
//!   interval): a refused filter means listing everything, refused or ignored `fields` listing
//!   unprojected, each said once (WARN) when it starts and once (INFO) when it ends.

use super::plan::Plan;
use crate::api::Paging;
use crate::cel::time::Timestamp;
use crate::resource::Fields;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// The per-cycle state of a daemon's listings.
#[derive(Debug)]
pub struct Query {
    plan: Plan,
    /// The latest monotonic reading (a reading below it counts as it).
    latest: Duration,
    /// When the last full sweep completed.
    last_sweep: Option<Duration>,
    /// Why the API refuses the filter, while it does.
    filter_refused: Option<String>,
    /// Why the API refuses or ignores `fields`, while it does.
    fields_refused: Option<String>,
    /// Why listing by id was given up (for good).
    by_id_refused: Option<String>,
    /// When to probe what is refused again.
    next_probe: Option<Duration>,
}

/// What one cycle asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct CycleQuery {
    /// The filtered listing's search (the selector's ANDed with the filter), when the cycle
    /// lists with the filter.
    pub filtered: Option<String>,
    /// Whether the cycle lists everything the selector matches (after the filtered listing,
    /// if any): a full sweep.
    pub full: bool,
    /// The selector's search, the unfiltered listing's.
    pub selector: Option<String>,
    /// The fields to ask for.
    pub fields: Option<Arc<Fields>>,
    /// How the filtered listing pages (by id, unless the API does not list by id).
    pub paging: Paging,
}

/// What a probe or a listing found about the API.
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// The API answers the filtered search.
    FilterAccepted,
    /// The API refuses the filtered search, for this reason.
    FilterRefused(String),
    /// The API answers `fields` with every field asked for.
    FieldsAccepted,
    /// The API refuses `fields`, or leaves out a field asked for.
    FieldsRefused(String),
    /// The API does not list by id in order (or refuses to).
    ByIdRefused(String),
}

impl Query {
    /// Listings by `plan`.
    pub fn new(plan: Plan) -> Query {
        Query {
            plan,
            latest: Duration::ZERO,
            last_sweep: None,
            filter_refused: None,
            fields_refused: None,
            by_id_refused: None,
            next_probe: None,
        }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// What the cycle at `now` (`tick` on the monotonic clock) asks for: with the filter unless
    /// it is refused; everything at the first cycle, and whenever a full sweep is due (its
    /// interval since the last one that completed).
    pub fn cycle(&mut self, tick: Duration, now: Timestamp) -> CycleQuery {
        let tick = self.observe(tick);
        let filtering = self.plan.filter.is_some() && self.filter_refused.is_none();
        let due = match (self.plan.sweep, self.last_sweep) {
            (None, _) | (_, None) => true,
            (Some(every), Some(last)) => tick.saturating_sub(last) >= every,
        };
        CycleQuery {
            filtered: filtering.then(|| self.plan.search(now, false)).flatten(),
            full: !filtering || due,
            selector: self.plan.selector.clone(),
            fields: self
                .plan
                .fields
                .clone()
                .filter(|_| self.fields_refused.is_none()),
            paging: match self.by_id_refused {
                None => Paging::ById,
                Some(_) => Paging::ByNumber,
            },
        }
    }

    /// A full listing completed at `tick`.
    pub fn swept(&mut self, tick: Duration) {
        self.last_sweep = Some(self.observe(tick));
    }

    /// With a filter: how long since the last complete full sweep (since start-up before the
    /// first), and the interval sweeps are due at.
    pub fn sweep_age(&mut self, tick: Duration) -> Option<(Duration, Duration)> {
        let every = self.plan.sweep?;
        let tick = self.observe(tick);
        Some((
            tick.saturating_sub(self.last_sweep.unwrap_or_default()),
            every,
        ))
    }

    /// Whether what the API refused is due to be probed again.
    pub fn probe_due(&self, tick: Duration) -> bool {
        self.next_probe.is_some_and(|at| tick >= at)
    }

    /// Whether the filter is planned and refused (1), planned and sent (0), or not planned.
    pub fn filter_fallback(&self) -> Option<bool> {
        self.plan.filter.as_ref()?;
        Some(self.filter_refused.is_some())
    }

    /// Whether `fields` is planned and refused (1), planned and sent (0), or not planned.
    pub fn fields_fallback(&self) -> Option<bool> {
        self.plan.fields.as_ref()?;
        Some(self.fields_refused.is_some())
    }

    /// Whether listing by id was given up.
    pub fn by_id_refused(&self) -> bool {
        self.by_id_refused.is_some()
    }

    /// Learns `finding` at `tick`: logs a change (WARN when the API starts refusing something,
    /// INFO when it accepts it again) and schedules the next probe. Whether anything changed.
    pub fn learn(&mut self, finding: Finding, tick: Duration) -> bool {
        let changed = match finding {
            Finding::FilterAccepted => {
                let was = self.filter_refused.take();
                if was.is_some() {
                    info!("The API accepts the server filter again: listing with it");
                }
                was.is_some()
            }
            Finding::FilterRefused(why) if self.plan.filter.is_some() => {
                let new = self.filter_refused.is_none();
                if new {
                    warn!(error = %why, "The API refuses the server filter: listing every resource \
                        without it until it accepts it again (probed every full sweep interval)");
                }
                self.filter_refused = Some(why);
                new
            }
            Finding::FieldsAccepted => {
                let was = self.fields_refused.take();
                if was.is_some() {
                    info!("The API honours fields again: listing only the fields the rules read");
                }
                was.is_some()
            }
            Finding::FieldsRefused(why) if self.plan.fields.is_some() => {
                let new = self.fields_refused.is_none();
                if new {
                    warn!(error = %why, "The API does not honour fields: listing whole resources \
                        until it does (probed every full sweep interval)");
                }
                self.fields_refused = Some(why);
                new
            }
            Finding::ByIdRefused(why) => {
                let new = self.by_id_refused.is_none();
                if new {
                    warn!(error = %why, "The API does not list by id: the filtered listing pages \
                        by number, and resources leaving the filtered set while it is listed may \
                        wait for a later cycle");
                }
                self.by_id_refused = Some(why);
                new
            }
            Finding::FilterRefused(_) | Finding::FieldsRefused(_) => false,
        };
        self.probed(tick);
        changed
    }

    /// The API was probed at `tick`: while it refuses something, it is probed again a full
    /// sweep interval later.
    pub fn probed(&mut self, tick: Duration) {
        let refused = self.filter_refused.is_some() || self.fields_refused.is_some();
        let every = self.plan.sweep.unwrap_or(super::plan::DEFAULT_FULL_SWEEP);
        let tick = self.observe(tick);
        self.next_probe = refused.then(|| tick + every);
    }

    /// `tick`, or the latest reading if it is later (the clock is monotonic; a test's need not
    /// be).
    fn observe(&mut self, tick: Duration) -> Duration {
        self.latest = self.latest.max(tick);
        self.latest
    }
}
