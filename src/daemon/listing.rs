//! One cycle's listing ([`Listing`]): the filtered listing, then, in a full sweep, everything
//! the selector matches that it did not list; each re-listed, on a refusal, with what the API
//! accepts; and what a sweep finds that the filter left out.
//!
//! Takes the API client, the cycle's [`CycleQuery`] and the daemon's [`Query`] (which learns what
//! the API refuses); gives the cycle's pages in order, each tagged with its [`Phase`].
//!
//! Invariants:
//! - a refusal (a 400 to the filter or to `fields`) never costs the cycle: the API is probed
//!   to tell which it refuses ([`probe`]), and the listing goes on without it, yielding no
//!   resource twice ([`crate::api::Pager::then`]);
//! - a full sweep lists the filtered set first and then the rest: what the rest holds that is
//!   due is what the filter left out. Counted as such ([`Listing::left_out`]) is what the
//!   filter does not leave to the sweep by design and the API, asked again at once with the
//!   filter, still leaves out (a resource that became due between the two listings is listed
//!   by the filter when asked again, and is not counted).

use super::metrics::Metrics;
use super::query::{CycleQuery, Finding, Query};
use crate::api::{ApiClient, ApiError, Page, Pager, Paging};
use crate::cel::host::Projection;
use crate::cel::time::Timestamp;
use std::sync::Arc;
use std::time::Duration;
use tracing::warn;

/// Which listing of the cycle a page comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The filtered listing.
    Filtered,
    /// What the selector matches beyond the filtered listing, in a full sweep.
    Remainder,
    /// Everything the selector matches, the cycle's only listing.
    Full,
}

/// What [`Listing::next`] gives.
pub enum Next {
    /// A page, of the listing the phase says.
    Page(Page),
    /// The listing is complete.
    Done,
    /// The listing failed.
    Failed(ApiError),
}

/// What a listing works with: the client, the daemon's query state and metrics, and the time.
pub struct Ctx<'a> {
    /// The API client.
    pub api: &'a ApiClient,
    /// `clusters`, `nodepools`, …
    pub resource_type: &'a str,
    /// What the API accepts, and the sweep schedule.
    pub query: &'a mut Query,
    /// Where the fallbacks show.
    pub metrics: &'a Metrics,
    /// The cycle's monotonic reading.
    pub tick: Duration,
    /// The cycle's `now`.
    pub now: Timestamp,
}

impl Ctx<'_> {
    /// Learns `finding` and shows the fallbacks it leaves in the metrics.
    fn learn(&mut self, finding: Finding) -> bool {
        let changed = self.query.learn(finding, self.tick);
        self.metrics
            .fallbacks(self.query.filter_fallback(), self.query.fields_fallback());
        changed
    }
}

/// One cycle's listing.
pub struct Listing {
    query: CycleQuery,
    pager: Pager,
    phase: Phase,
}

impl Listing {
    /// The listing `query` asks for.
    pub fn new(
        api: &ApiClient,
        resource_type: &str,
        projection: Arc<Projection>,
        query: CycleQuery,
    ) -> Listing {
        let (search, phase) = match &query.filtered {
            Some(search) => (Some(search.as_str()), Phase::Filtered),
            None => (query.selector.as_deref(), Phase::Full),
        };
        let pager = api
            .list_projected(resource_type, search, projection)
            .with_fields(query.fields.clone());
        let pager = match phase {
            Phase::Filtered => pager.paged(query.paging),
            _ => pager,
        };
        Listing {
            query,
            pager,
            phase,
        }
    }

    /// The listing the pages come from now.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the listing, once complete, listed everything the selector matches.
    pub fn is_full_sweep(&self) -> bool {
        self.phase != Phase::Filtered || self.query.full
    }

    /// The next page: the filtered listing's, then (in a full sweep) the rest's.
    pub async fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        loop {
            let page = self.pager.next_page().await;
            self.learn_degraded(ctx);
            match page {
                Some(Ok(page)) => return Next::Page(page),
                None if self.phase == Phase::Filtered && self.query.full => {
                    self.go_on(None, Phase::Remainder);
                }
                None => return Next::Done,
                Some(Err(e)) if e.is_refusal() && self.asks_more() => {
                    if !probe(ctx).await {
                        return Next::Failed(e);
                    }
                    self.relist(ctx);
                }
                Some(Err(e)) => return Next::Failed(e),
            }
        }
    }

    /// Of the resources the rest of a full sweep published, `ids`, how many the filter left
    /// out: those the API, asked with the filter, still does not list (all of them when it
    /// cannot be asked).
    pub async fn left_out(&self, ctx: &mut Ctx<'_>, ids: &[String]) -> usize {
        let Some(search) = &self.query.filtered else {
            return 0;
        };
        let kept = match ctx.api.kept(ctx.resource_type, Some(search), ids).await {
            Ok(kept) => kept,
            Err(e) => {
                warn!(error = %e, "Could not ask the API whether the server filter lists what \
                    the full sweep published: counting it as left out");
                Vec::new()
            }
        };
        let left: Vec<&String> = ids.iter().filter(|id| !kept.contains(id)).collect();
        if let Some(first) = left.first() {
            warn!(resources = left.len(), first = %first, search = %search,
                "The full sweep published resources the server filter left out: the API's \
                 search and the rules disagree");
        }
        left.len()
    }

    /// Whether the current listing asks for more than Go's request does (the filter or
    /// `fields`), which the API may refuse.
    fn asks_more(&self) -> bool {
        self.phase == Phase::Filtered || self.pager_asks_fields()
    }

    fn pager_asks_fields(&self) -> bool {
        self.query.fields.is_some()
    }

    /// Learns what the pager did without (a field left out, an order not kept).
    fn learn_degraded(&mut self, ctx: &mut Ctx<'_>) {
        let degraded = self.pager.degraded();
        let left_out = degraded.projection.filter(|_| self.query.fields.is_some());
        let by_id = degraded
            .by_id
            .clone()
            .filter(|_| !ctx.query.by_id_refused());
        if let Some(field) = left_out {
            self.query.fields = None;
            let why = format!("an answer to fields left out {field}");
            ctx.learn(Finding::FieldsRefused(why));
        }
        if let Some(why) = by_id {
            ctx.learn(Finding::ByIdRefused(why));
        }
    }

    /// Goes on with what the API accepts after a refusal (learned by [`probe`]): the filtered
    /// listing without what it refused, or everything.
    fn relist(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.query.cycle(ctx.tick, ctx.now);
        self.query.fields = now.fields.clone();
        self.query.paging = now.paging;
        match (self.phase, now.filtered) {
            (Phase::Filtered, Some(search)) => self.go_on(Some(search), Phase::Filtered),
            (Phase::Filtered, None) => {
                self.query.filtered = None;
                self.go_on(None, Phase::Full);
            }
            (phase, _) => self.go_on(None, phase),
        }
    }

    /// The listing by `search` (`None`: the selector's), as `phase`, after what was listed.
    fn go_on(&mut self, search: Option<String>, phase: Phase) {
        let search = search.or_else(|| self.query.selector.clone());
        let pager = self
            .pager
            .then(search.as_deref())
            .with_fields(self.query.fields.clone());
        self.pager = match phase {
            Phase::Filtered => pager.paged(self.query.paging),
            _ => pager,
        };
        self.phase = phase;
    }
}

/// Asks the API, one item each, whether it accepts the filtered search (by id, unless that was
/// given up) and `fields`, and learns the answers. Whether anything changed. An answer that is
/// no refusal (the API down, a timeout) teaches nothing.
pub async fn probe(ctx: &mut Ctx<'_>) -> bool {
    let query = ctx.query.cycle(ctx.tick, ctx.now);
    let mut changed = false;
    if let Some(search) = ctx.query.plan().search(ctx.now, false) {
        let paging = query.paging;
        let api = ctx.api;
        let rt = ctx.resource_type;
        let first = api.try_listing(rt, Some(&search), None, paging).await;
        let finding = match first {
            Ok(_) => Some(Finding::FilterAccepted),
            Err(e) if e.is_refusal() && paging == Paging::ById => {
                match api
                    .try_listing(rt, Some(&search), None, Paging::ByNumber)
                    .await
                {
                    Ok(_) => {
                        changed |= ctx.learn(Finding::ByIdRefused(e.to_string()));
                        Some(Finding::FilterAccepted)
                    }
                    Err(e) if e.is_refusal() => Some(Finding::FilterRefused(e.to_string())),
                    Err(_) => None,
                }
            }
            Err(e) if e.is_refusal() => Some(Finding::FilterRefused(e.to_string())),
            Err(_) => None,
        };
        if let Some(finding) = finding {
            changed |= ctx.learn(finding);
        }
    }
    if let Some(fields) = ctx.query.plan().fields.clone() {
        let selector = ctx.query.plan().selector.clone();
        let answer = ctx
            .api
            .try_listing(
                ctx.resource_type,
                selector.as_deref(),
                Some(&fields),
                Paging::ByNumber,
            )
            .await;
        let finding = match answer {
            Ok(None) => Some(Finding::FieldsAccepted),
            Ok(Some(field)) => Some(Finding::FieldsRefused(format!(
                "an answer to fields left out {field}"
            ))),
            Err(e) if e.is_refusal() => Some(Finding::FieldsRefused(e.to_string())),
            Err(_) => None,
        };
        if let Some(finding) = finding {
            changed |= ctx.learn(finding);
        }
    }
    ctx.query.probed(ctx.tick);
    changed
}
