//! One listing of a collection, page by page ([`Pager`]): by page number with pages fetched
//! ahead (the Go sentinel's requests), or by id ([`Pager::by_id`]) for a set that shrinks while
//! it is listed.
//!
//! Why by id: a filtered listing lists the resources that are due, and they leave the set as
//! they are reconciled, some while the listing is under way. With `page=N` (an offset) every
//! resource that leaves a page already listed moves a later one back into it, out of reach
//! until the next cycle: a backlog of a thousand took five cycles. Asked `order=id` with
//! `id > '<the last id listed>'` ANDed with the search, each request starts after what was
//! listed, whatever left the set meanwhile: a resource in the set when the listing starts and
//! still in it when the listing passes its id is listed. The requests are sequential (each
//! needs the last id of the one before).
//!
//! What the API does not honour, the listing does without and says so ([`Degraded`]): a
//! projected page missing a requested field is listed again unprojected, and so is every
//! later page ([`crate::resource::Fields::missing`]); a page by id whose ids are not in
//! ascending order (an API that ignores `order`) ends paging by id, and the listing starts
//! again by page number (nothing already yielded is yielded again).

use super::{ApiError, Inner, Page, SeenIds, decode_body, url};
use crate::cel::host::{Projection, Resource};
use crate::resource::Fields;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// One page's fetch, a task of its own: the page's body (decoded by [`Pager::next_page`]).
type Fetch = JoinHandle<Result<Vec<u8>, ApiError>>;

/// How a listing pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// `page=N`: Go's requests, fetched ahead.
    ByNumber,
    /// `order=id` and `id > '<the last id listed>'`, one request after the other.
    ById,
}

/// What a listing found the API does not honour, and did without from then on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Degraded {
    /// A requested field an answer left out (`status.conditions.last_updated_time`): the
    /// listing went on unprojected.
    pub projection: Option<&'static str>,
    /// Why paging by id was given up (the API does not order by id): the listing went on by
    /// page number.
    pub by_id: Option<String>,
}

/// The pages of one listing, yielded in order while up to `prefetch` pages are fetched ahead.
///
/// Pages are requested from 1 until the items received reach the `total` of the latest page or a
/// page comes back empty. Once the first page reveals `total`, the next pages are requested
/// concurrently (at most `prefetch` requested or buffered at once); each is yielded only after all
/// earlier ones. After an error the pager yields `None`: the caller abandons the cycle, and the
/// pages fetched ahead are cancelled. Dropping the pager cancels them too.
#[derive(Debug)]
pub struct Pager {
    pub(super) inner: Arc<Inner>,
    pub(super) projection: Arc<Projection>,
    pub(super) collection: String,
    pub(super) search: Option<String>,
    /// The `fields` parameter (the API's projection) and what an answer must carry, if any.
    pub(super) fields: Option<Arc<Fields>>,
    /// Paging by id: the last id listed (`None` before the first page).
    pub(super) by_id: Option<Option<String>>,
    pub(super) next_number: u32,
    /// The trace context the pages' GET spans are children of (the poll span), when tracing.
    pub(super) parent: Option<opentelemetry::Context>,
    /// The pages requested ahead, by number.
    pub(super) in_flight: VecDeque<(u32, Fetch)>,
    /// Items received so far, repeats included.
    pub(super) received: u64,
    /// Items received since the listing (re)started from its first page.
    pub(super) pass: u64,
    /// The most items this listing may receive, set by the first page ([`listing_limit`]).
    pub(super) limit: Option<u64>,
    /// The size of the latest page's text, by which prefetching is bounded.
    pub(super) last_bytes: usize,
    pub(super) seen: SeenIds,
    pub(super) drops: DropLog,
    pub(super) done: bool,
    pub(super) degraded: Degraded,
}

impl Pager {
    /// The same listing asking the API for `fields` only (its `fields` parameter), checking
    /// that every answer carries them.
    pub fn with_fields(mut self, fields: Option<Arc<Fields>>) -> Pager {
        self.fields = fields;
        self
    }

    /// The same listing paged as `paging` says (by number unless told otherwise).
    pub fn paged(mut self, paging: Paging) -> Pager {
        self.by_id = (paging == Paging::ById).then_some(None);
        self
    }

    /// A listing by `search` (by page number) that yields no resource this one yielded,
    /// asking for the fields this one asks for now: what a full sweep lists after the
    /// filtered listing. This one ends (it yields nothing more).
    pub fn then(&mut self, search: Option<&str>) -> Pager {
        self.finish(());
        Pager {
            inner: self.inner.clone(),
            projection: self.projection.clone(),
            collection: std::mem::take(&mut self.collection),
            search: search.map(str::to_string),
            fields: self.fields.clone(),
            by_id: None,
            next_number: 1,
            parent: self.parent.clone(),
            in_flight: VecDeque::new(),
            received: 0,
            pass: 0,
            limit: None,
            last_bytes: 0,
            seen: std::mem::replace(&mut self.seen, SeenIds::new()),
            drops: std::mem::take(&mut self.drops),
            done: false,
            degraded: std::mem::take(&mut self.degraded),
        }
    }

    /// What the listing did without so far.
    pub fn degraded(&self) -> &Degraded {
        &self.degraded
    }

    /// The next page in order, an error that ends the listing, or `None` when it is complete.
    pub async fn next_page(&mut self) -> Option<Result<Page, ApiError>> {
        loop {
            if self.done {
                return None;
            }
            if self.in_flight.is_empty() {
                // The first page, or one more page because the collection grew past the total.
                self.spawn_next();
            }
            let (number, task) = self.in_flight.pop_front()?;
            let body = match task.await {
                Ok(Ok(body)) => body,
                Ok(Err(err)) => return Some(Err(self.finish(err))),
                Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
                Err(join) => return Some(Err(self.finish(ApiError::Network(join.to_string())))),
            };
            // Decoded here, on the thread that decides and then drops the page's resources:
            // built on a worker, they were freed across threads (glibc's arena lock, contended
            // on every page) and moved between cores' caches. A decoding error is not retried.
            let decoded = match decode_body(body, &self.projection) {
                Ok(decoded) => decoded,
                Err(err) => return Some(Err(self.finish(err))),
            };
            if let Some(field) = self.left_out(&decoded) {
                // Never decided on: this page again, and every later one, unprojected.
                self.degraded.projection = Some(field);
                self.fields = None;
                self.restart_at(number);
                continue;
            }
            if let Err(err) = self.count(decoded.items.len(), decoded.total) {
                return Some(Err(self.finish(err)));
            }
            self.last_bytes = decoded.bytes;
            self.advance(&decoded.items, decoded.total);
            let items = self.dedupe(number, decoded.items);
            return Some(Ok(Page {
                number,
                items,
                total: decoded.total,
            }));
        }
    }

    /// The first field asked for that an item of a projected page lacks: looked for only when
    /// the decoding's pass found one may (it notes what each item holds as it reads it).
    fn left_out(&self, page: &super::Decoded) -> Option<&'static str> {
        let fields = self.fields.as_ref().filter(|_| page.incomplete)?;
        page.items
            .iter()
            .find_map(|r| fields.missing(r.json_text()))
    }

    /// Counts a page of `n` items against the listing's bound (set by the first page's
    /// `total`).
    fn count(&mut self, n: usize, total: u64) -> Result<(), ApiError> {
        self.received += n as u64;
        self.pass += n as u64;
        let config = &self.inner.config;
        let limit = *self
            .limit
            .get_or_insert_with(|| listing_limit(total, config.page_size, config.max_listed));
        if self.received > limit {
            return Err(ApiError::Endless {
                received: self.received,
                limit,
            });
        }
        Ok(())
    }

    /// After a page of `items` reporting `total`: the end of the listing, or the next pages.
    fn advance(&mut self, items: &[Resource], total: u64) {
        let Some(after) = &self.by_id else {
            if items.is_empty() || self.pass >= total {
                self.finish(());
            } else {
                self.top_up(total);
            }
            return;
        };
        // By id, `total` counts what is left from this page on.
        if items.is_empty() || items.len() as u64 >= total {
            self.finish(());
            return;
        }
        let next = ascending_ids(items, after.as_deref()).and_then(|last| {
            if url::by_id_fits(self.search.as_deref(), &last) {
                Ok(last)
            } else {
                Err(format!(
                    "the search after id {last:?} would be too long for the API"
                ))
            }
        });
        match next {
            Ok(last) => {
                self.by_id = Some(Some(last));
                self.spawn_next();
            }
            Err(why) => {
                tracing::debug!(%why, "listing again by page number");
                self.degraded.by_id = Some(why);
                self.by_id = None;
                self.pass = 0;
                self.restart_at(1);
            }
        }
    }

    /// Cancels the pages fetched ahead; the next request is page `number` (by id: after the
    /// same id as before).
    fn restart_at(&mut self, number: u32) {
        for (_, task) in self.in_flight.drain(..) {
            task.abort();
        }
        self.next_number = number;
    }

    /// Requests pages ahead up to the prefetch bound and the last page `total` implies.
    fn top_up(&mut self, total: u64) {
        let size = u64::from(self.inner.config.page_size.max(1));
        let last_page = total.div_ceil(size);
        let depth = prefetch_depth(self.inner.config.prefetch, self.last_bytes);
        while self.in_flight.len() < depth && u64::from(self.next_number) <= last_page {
            self.spawn_next();
        }
    }

    fn spawn_next(&mut self) {
        let number = self.next_number;
        self.next_number = self.next_number.saturating_add(1);
        let size = self.inner.config.page_size;
        let fields = self.fields.as_deref().map(Fields::param);
        let search = self.search.as_deref();
        let url = match &self.by_id {
            None => url::page_url(&self.collection, number, size, search, fields),
            Some(after) => url::by_id_url(&self.collection, size, search, after.as_deref(), fields),
        };
        let fetch = self.inner.clone().fetch_page(url, number);
        let task = match &self.parent {
            None => tokio::spawn(fetch),
            Some(cx) => {
                use opentelemetry::context::FutureExt as _;
                tokio::spawn(fetch.with_context(cx.clone()))
            }
        };
        self.in_flight.push_back((number, task));
    }

    /// Marks the listing complete and cancels the pages fetched ahead; passes `value` through.
    pub(super) fn finish<T>(&mut self, value: T) -> T {
        self.done = true;
        for (_, task) in self.in_flight.drain(..) {
            task.abort();
        }
        value
    }

    /// Drops resources whose id this pager already yielded, on this page or any before it
    /// (resources without an id are kept).
    pub(super) fn dedupe(&mut self, number: u32, mut items: Vec<Resource>) -> Vec<Resource> {
        let before = items.len();
        self.seen.retain_new(&mut items, |r| match r.id() {
            Ok(id) if !id.as_str().is_empty() => Some(id.as_str()),
            _ => None,
        });
        if items.len() < before {
            let _logged = self.drops.dropped(number, before - items.len());
        }
        items
    }
}

/// The last id of a page listed by id, or why the page shows the API does not order by id:
/// every id (items without one aside) above `after` and above the one before it.
fn ascending_ids(items: &[Resource], after: Option<&str>) -> Result<String, String> {
    let mut last = after;
    for item in items {
        let Ok(id) = item.id() else { continue };
        let id = id.as_str();
        if id.is_empty() {
            continue;
        }
        if last.is_some_and(|last| id <= last) {
            return Err(format!(
                "the API does not list by id in ascending order: {id:?} after {:?}",
                last.unwrap_or_default()
            ));
        }
        last = Some(id);
    }
    match last {
        Some(id) if Some(id) != after => Ok(id.to_string()),
        _ => Err("a page listed by id has no id to go on from".into()),
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.finish(());
    }
}

/// The "dropped resources already seen" line, at most once per [`DROP_LOG_EVERY`] per listing
/// (an API repeating its pages would otherwise log a line per page), with what it stands for.
#[derive(Debug, Default)]
pub(super) struct DropLog {
    /// Resources dropped since the last line, and on how many pages.
    dropped: usize,
    pages: u32,
    last: Option<std::time::Instant>,
}

/// How often a listing logs the resources it dropped as already seen.
const DROP_LOG_EVERY: Duration = Duration::from_secs(10);

impl DropLog {
    /// Counts `n` resources dropped on `page`; logs them (and those since the last line) when
    /// no line was logged for [`DROP_LOG_EVERY`]. Whether it logged.
    fn dropped(&mut self, page: u32, n: usize) -> bool {
        self.dropped += n;
        self.pages += 1;
        if self.last.is_some_and(|at| at.elapsed() < DROP_LOG_EVERY) {
            return false;
        }
        // Expected when deletions shift the pages under an offset-paged listing, and for
        // what a full sweep finds the filtered listing before it already listed.
        tracing::info!(
            page,
            dropped = self.dropped,
            pages = self.pages,
            "dropped resources already seen this cycle"
        );
        self.last = Some(std::time::Instant::now());
        self.dropped = 0;
        self.pages = 0;
        true
    }
}

/// The most resources one listing receives by default, however its `total` grows (five times
/// the largest fleet measured on one instance, docs/multi-instance.md; its ids cost 40 MB).
pub const MAX_LISTED_RESOURCES: u64 = 5_000_000;

/// The most resources a listing whose first page reported `total` may receive, repeats
/// included: twice that total plus ten pages (a fleet does not double during one cycle), and
/// never more than `max_listed`. An API whose listing never ends (pages always full, a `total`
/// that grows, the same ids forever) ends there with [`ApiError::Endless`].
pub fn listing_limit(total: u64, page_size: u32, max_listed: u64) -> u64 {
    let pages = 10 * u64::from(page_size.max(1));
    total
        .saturating_mul(2)
        .saturating_add(pages)
        .min(max_listed)
}

/// The page texts buffered ahead of the caller stay within about this many bytes: pages are
/// prefetched `prefetch` deep only while they are small (a page of 100 resources of 1 MiB is
/// fetched one ahead, not four).
pub const PREFETCH_BYTES: usize = 32 << 20;

/// How many pages to keep requested or buffered ahead, the latest page being `last_bytes`.
fn prefetch_depth(prefetch: usize, last_bytes: usize) -> usize {
    let by_bytes = PREFETCH_BYTES / last_bytes.max(1);
    prefetch.min(by_bytes).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ApiClient, ApiClientConfig};

    #[test]
    fn a_pager_never_yields_an_id_twice() {
        let client = ApiClient::new(ApiClientConfig::default()).unwrap();
        let mut pager = client.list("clusters", None);
        let page = |ids: &[&str]| {
            ids.iter()
                .map(|id| Resource::from_json(serde_json::json!({"id": id})))
                .collect()
        };
        let ids = |items: Vec<Resource>| -> Vec<String> {
            items
                .iter()
                .map(|r| r.id().unwrap().as_str().to_string())
                .collect()
        };
        assert_eq!(ids(pager.dedupe(1, page(&["a", "b", ""]))), ["a", "b", ""]);
        assert_eq!(ids(pager.dedupe(2, page(&["b", "c", "", "c"]))), ["c", ""]);
        // However many pages later: "a" comes back 6 pages after page 1.
        for n in 3..8 {
            let id = format!("x{n}");
            assert_eq!(ids(pager.dedupe(n, page(&[id.as_str()]))), [id]);
        }
        assert_eq!(ids(pager.dedupe(8, page(&["a", "x3", "d"]))), ["d"]);
        // The listing after it (a full sweep after the filtered one) yields none of them.
        let mut then = pager.then(Some("labels.a='b'"));
        assert!(pager.done);
        assert_eq!(ids(then.dedupe(1, page(&["a", "e", "d"]))), ["e"]);
        // A new listing starts afresh.
        let mut again = client.list("clusters", None);
        assert_eq!(ids(again.dedupe(1, page(&["a"]))), ["a"]);
    }

    #[test]
    fn pages_by_id_must_ascend() {
        let page = |ids: &[&str]| -> Vec<Resource> {
            ids.iter()
                .map(|id| Resource::from_json(serde_json::json!({"id": id})))
                .collect()
        };
        assert_eq!(ascending_ids(&page(&["a", "b", ""]), None), Ok("b".into()));
        assert_eq!(ascending_ids(&page(&["c", "d"]), Some("b")), Ok("d".into()));
        assert!(ascending_ids(&page(&["b", "a"]), None).is_err());
        assert!(ascending_ids(&page(&["a", "a"]), None).is_err());
        assert!(ascending_ids(&page(&["c"]), Some("c")).is_err());
        assert!(ascending_ids(&page(&[""]), None).is_err());
    }

    /// An API repeating its pages would log a line per page: one line per 10 s instead, with
    /// the count since the last.
    #[test]
    fn dropped_resources_are_logged_at_most_every_ten_seconds() {
        let mut log = DropLog::default();
        assert!(log.dropped(2, 5));
        for page in 3..1000 {
            assert!(!log.dropped(page, 5), "{page}");
        }
        assert_eq!((log.dropped, log.pages), (5 * 997, 997));
        log.last = Some(std::time::Instant::now() - DROP_LOG_EVERY);
        assert!(log.dropped(1000, 1));
        assert_eq!((log.dropped, log.pages), (0, 0));
    }

    #[test]
    fn listings_are_bounded_by_the_first_total() {
        assert_eq!(listing_limit(1000, 100, MAX_LISTED_RESOURCES), 3000);
        assert_eq!(listing_limit(0, 20, MAX_LISTED_RESOURCES), 200);
        assert_eq!(
            listing_limit(u64::MAX, 100, MAX_LISTED_RESOURCES),
            MAX_LISTED_RESOURCES
        );
        assert_eq!(listing_limit(10u64.pow(12), 100, 500), 500);
    }

    #[test]
    fn prefetch_is_bounded_by_bytes() {
        assert_eq!(prefetch_depth(4, 0), 4);
        assert_eq!(prefetch_depth(4, 100 * 1024), 4);
        assert_eq!(prefetch_depth(4, 100 << 20), 1);
        assert_eq!(prefetch_depth(4, 12 << 20), 2);
        assert_eq!(prefetch_depth(0, 1), 1);
    }
}
