//! The HyperFleet API client: the startup connectivity probe and the paged, streaming list of a
//! resource collection.
//!
//! Takes an [`ApiClientConfig`]; gives [`ApiClient::probe`] and [`ApiClient::list`], whose
//! [`Pager`] yields the collection page by page, in page order, while fetching a few pages ahead.
//!
//! Invariants:
//! - memory does not grow with the fleet: at most `prefetch` pages are buffered, fewer while
//!   pages are large (about [`PREFETCH_BYTES`] of page text ahead, at least one page), and a
//!   page's resources are dropped once the caller is done with it;
//! - every listing ends: past [`listing_limit`] resources (twice the first page's `total` plus
//!   ten pages, at most [`ApiClientConfig::max_listed`]) it is an [`ApiError::Endless`];
//! - a response body is read chunk by chunk and never past [`max_body_bytes`] of the page size,
//!   as sent nor inflated (an [`ApiError::TooLarge`] there), an error response's only as far as
//!   its excerpt;
//! - a retriable failure retries the failing page only, never the pages already yielded;
//! - within one [`Pager`] no resource id is yielded twice when the collection shifts between
//!   page requests (an insertion ahead of the cursor pushes items from one page onto the next,
//!   however many pages later): every id yielded is remembered as a 64-bit hash for the whole
//!   listing, 8 bytes per id (merged in place), so a million resources cost 8 MB. A hash
//!   collision can only skip a resource for one cycle (see `seen.rs`).

mod body;
mod error;
mod gunzip;
mod retry;
mod seen;
mod token;
mod url;

pub use body::{PAGE_ENVELOPE_SLACK, max_body_bytes};
pub use error::{ApiError, BODY_EXCERPT_LEN, TokenError, parse_retry_after};
pub use gunzip::{GunzipError, GzipError, gunzip};

pub use retry::Backoff;
pub use url::search_from_selector;

use crate::cel::host::{Projection, Resource};
use crate::common::redact::mask_url;
use crate::telemetry::{HttpSpan, Tracing};
use reqwest::header::{ACCEPT_ENCODING, AUTHORIZATION, HeaderMap, HeaderValue, USER_AGENT};
use seen::SeenIds;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use token::TokenSource;
use tokio::task::JoinHandle;

/// What the client needs from the sentinel configuration.
#[derive(Clone, Debug)]
pub struct ApiClientConfig {
    /// The API's base URL, e.g. `http://hyperfleet-api:8000` (a trailing `/` is ignored).
    pub base_url: String,
    /// The API version path segment, `v1` by default.
    pub version: String,
    /// The timeout of each HTTP request, from connecting to the end of the body.
    pub timeout: Duration,
    /// Resources per list page, the `size` query parameter (the API serves at most 100, though
    /// its OpenAPI description sets no maximum; a config accepts 1 to 500, as Go's).
    pub page_size: u32,
    /// A file holding the bearer token; no `Authorization` header when `None`.
    pub token_path: Option<PathBuf>,
    /// How long a token read from `token_path` is reused; zero re-reads it for every request.
    pub token_cache_ttl: Duration,
    /// The `User-Agent` header, `hyperfleet-sentinel/<version> (<sentinel name>)`.
    pub user_agent: String,
    /// Retry parameters for retriable failures.
    pub backoff: Backoff,
    /// How many list pages may be requested or buffered ahead of the caller (at least 1; fewer
    /// when pages are large: see [`PREFETCH_BYTES`]).
    pub prefetch: usize,
    /// The most resources one listing may return, whatever the API's `total` says (see
    /// [`listing_limit`]); [`MAX_LISTED_RESOURCES`] by default.
    pub max_listed: u64,
    /// Tracing (off by default): one client span per GET, with `traceparent`/`baggage` headers;
    /// the poll loop of a daemon using this client traces with it too.
    pub tracing: Tracing,
}

impl Default for ApiClientConfig {
    fn default() -> ApiClientConfig {
        ApiClientConfig {
            base_url: "http://localhost:8000".to_string(),
            version: "v1".to_string(),
            timeout: Duration::from_secs(10),
            page_size: 20,
            token_path: None,
            token_cache_ttl: Duration::ZERO,
            user_agent: format!("hyperfleet-sentinel/{}", env!("CARGO_PKG_VERSION")),
            backoff: Backoff::default(),
            prefetch: 4,
            max_listed: MAX_LISTED_RESOURCES,
            tracing: Tracing::off(),
        }
    }
}

/// A HyperFleet API client. Cheap to clone; clones share connections and the token cache.
#[derive(Clone, Debug)]
pub struct ApiClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    config: ApiClientConfig,
    token: Option<TokenSource>,
}

/// One page of a listed collection.
#[derive(Debug)]
pub struct Page {
    /// The page number, from 1.
    pub number: u32,
    /// The page's resources in API order, minus any already yielded by this pager.
    pub items: Vec<Resource>,
    /// The collection size the API reported with this page.
    pub total: u64,
}

impl ApiClient {
    /// Builds a client. Fails on a base URL that is not an absolute http(s) URL or a user agent
    /// that is not a valid header value.
    pub fn new(config: ApiClientConfig) -> Result<ApiClient, ApiError> {
        let masked = mask_url(&config.base_url);
        let base = reqwest::Url::parse(&config.base_url)
            .map_err(|e| ApiError::Config(format!("base url {masked:?}: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") {
            let reason = format!("base url {masked:?}: scheme is not http or https");
            return Err(ApiError::Config(reason));
        }
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .map_err(|e| ApiError::Config(format!("user agent {:?}: {e}", config.user_agent)))?;
        let mut headers = HeaderMap::new();
        headers.insert(USER_AGENT, user_agent);
        // The header Go's transport adds to every request; it inflates the answer itself, and
        // so does `body::read`: reqwest's own decoders stay off, whatever another crate enables.
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .no_gzip()
            .no_brotli()
            .no_zstd()
            .no_deflate()
            .timeout(config.timeout)
            .build()
            .map_err(|e| ApiError::Config(e.to_string()))?;
        let token = config
            .token_path
            .clone()
            .map(|path| TokenSource::new(path, config.token_cache_ttl));
        Ok(ApiClient {
            inner: Arc::new(Inner {
                http,
                config,
                token,
            }),
        })
    }

    /// The configuration the client was built from.
    pub fn config(&self) -> &ApiClientConfig {
        &self.inner.config
    }

    /// Checks at startup that the API answers: one request, not retried, for a label no resource
    /// has. Only a 200 passes; any other status is an [`ApiError::Http`] carrying it.
    pub async fn probe(&self, resource_type: &str) -> Result<(), ApiError> {
        let url = url::probe_url(&self.collection_url(resource_type));
        self.inner.get(&url, |_| Ok(())).await
    }

    /// Starts listing `resource_type` (`clusters`, `nodepools`), filtered by the TSL `search`
    /// expression (see [`search_from_selector`]). Nothing is requested until the first
    /// [`Pager::next_page`].
    pub fn list(&self, resource_type: &str, search: Option<&str>) -> Pager {
        self.list_projected(resource_type, search, Arc::new(Projection::all()))
    }

    /// [`ApiClient::list`] decoding each page under `projection` (the rules' reads).
    pub fn list_projected(
        &self,
        resource_type: &str,
        search: Option<&str>,
        projection: Arc<Projection>,
    ) -> Pager {
        Pager {
            projection,
            inner: self.inner.clone(),
            collection: self.collection_url(resource_type),
            search: search.map(str::to_string),
            next_number: 1,
            parent: self
                .inner
                .config
                .tracing
                .is_on()
                .then(opentelemetry::Context::current),
            in_flight: VecDeque::new(),
            received: 0,
            limit: None,
            last_bytes: 0,
            seen: SeenIds::new(),
            drops: DropLog::default(),
            done: false,
            fields: None,
        }
    }

    fn collection_url(&self, resource_type: &str) -> String {
        let config = &self.inner.config;
        url::collection_url(&config.base_url, &config.version, resource_type)
    }
}

impl Inner {
    /// One GET, not retried here: `parse` applied to the body of a 200 response, or the error.
    async fn get<T>(
        &self,
        url: &str,
        parse: impl FnOnce(Vec<u8>) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut request = self.http.get(url);
        let span = HttpSpan::start(&self.config.tracing, url);
        request = span.inject(request);
        if let Some(token) = &self.token {
            // Read before sending: a token failure means no request goes out at all.
            let token = token.get()?;
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let timeout = self.config.timeout;
        let transport = |e| ApiError::from_reqwest(e, timeout);
        let response = request.send().await.map_err(transport);
        span.answered(response.as_ref().map(|r| r.status().as_u16()).ok());
        let response = response?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| error::parse_retry_after(v, chrono::Utc::now()));
        let limit = body::max_body_bytes(self.config.page_size);
        let body = body::read(response, limit, timeout).await?;
        if status != reqwest::StatusCode::OK {
            return Err(ApiError::http(status.as_u16(), &body, retry_after));
        }
        parse(body)
    }

    /// Fetches one list page's body, retrying retriable failures of this page only (decoding
    /// it is [`Pager::next_page`]'s: see there).
    async fn fetch_page(self: Arc<Inner>, url: String, number: u32) -> Result<Vec<u8>, ApiError> {
        let attempt = || self.get(&url, Ok);
        let on_retry = |retry: u32, err: &ApiError, wait: Duration| {
            tracing::warn!(page = number, retry, wait_ms = wait.as_millis() as u64, error = %err,
                "retrying hyperfleet api request");
        };
        self.config.backoff.retry(attempt, on_retry).await
    }
}

/// A list page as decoded from the response body.
#[derive(Debug)]
pub struct Decoded {
    /// The page's resources, in response order.
    pub items: Vec<Resource>,
    /// The `total` the API reported (negative counts as 0).
    pub total: u64,
    /// The size of the page's text, which its resources share (what buffering it costs).
    pub bytes: usize,
}

/// Decodes one list page completely ([`decode_page_with`] under [`Projection::all`]).
pub fn decode_page(body: &[u8]) -> Result<Decoded, ApiError> {
    static ALL: std::sync::LazyLock<Arc<Projection>> =
        std::sync::LazyLock::new(|| Arc::new(Projection::all()));
    decode_page_with(body, &ALL)
}

/// Decodes one list page under the rules' projection (public for the page-decoding bench and
/// the fuzz target). The body is copied into a shared text that the page's resources keep
/// their JSON in ([`decode_body`], which `serve` calls with the body it read, takes it over
/// without this copy); the JSON is the resource layer's ([`crate::resource::decode_list`]).
pub fn decode_page_with(body: &[u8], projection: &Arc<Projection>) -> Result<Decoded, ApiError> {
    decode_body(body.to_vec(), projection)
}

/// [`decode_page_with`] of a body read into `body`, which becomes the page's shared text
/// without a copy. Invalid UTF-8 is read as Go's `encoding/json` reads it, each bad byte a
/// U+FFFD ([`crate::resource::json::utf8_as_go`]): a bad byte inside one resource's string
/// changes that string, and the rest of the page is decided as usual.
pub fn decode_body(body: Vec<u8>, projection: &Arc<Projection>) -> Result<Decoded, ApiError> {
    let text: crate::cel::host::SharedText = Arc::new(crate::resource::json::utf8_as_go(body));
    let page = crate::resource::decode_list(&text, projection).map_err(ApiError::Decode)?;
    Ok(Decoded {
        items: page.items,
        total: page.total.max(0) as u64,
        bytes: text.len(),
    })
}

/// One page's fetch, a task of its own: the page's body (decoded by [`Pager::next_page`]).
type Fetch = JoinHandle<Result<Vec<u8>, ApiError>>;

/// The pages of one listing, yielded in order while up to `prefetch` pages are fetched ahead.
///
/// Pages are requested from 1 until the items received reach the `total` of the latest page or a
/// page comes back empty. Once the first page reveals `total`, the next pages are requested
/// concurrently (at most `prefetch` requested or buffered at once); each is yielded only after all
/// earlier ones. After an error the pager yields `None`: the caller abandons the cycle, and the
/// pages fetched ahead are cancelled. Dropping the pager cancels them too.
#[derive(Debug)]
pub struct Pager {
    inner: Arc<Inner>,
    projection: Arc<Projection>,
    collection: String,
    search: Option<String>,
    /// The `fields` parameter (the API's projection), if any.
    fields: Option<String>,
    next_number: u32,
    /// The trace context the pages' GET spans are children of (the poll span), when tracing.
    parent: Option<opentelemetry::Context>,
    /// The pages requested ahead, by number.
    in_flight: VecDeque<(u32, Fetch)>,
    /// Items received so far, repeats included.
    received: u64,
    /// The most items this listing may receive, set by the first page ([`listing_limit`]).
    limit: Option<u64>,
    /// The size of the latest page's text, by which prefetching is bounded.
    last_bytes: usize,
    seen: SeenIds,
    drops: DropLog,
    done: bool,
}

impl Pager {
    /// The same listing asking the API for `fields` only (its `fields` parameter).
    pub fn with_fields(mut self, fields: Option<&str>) -> Pager {
        self.fields = fields.map(str::to_string);
        self
    }

    /// The next page in order, an error that ends the listing, or `None` when it is complete.
    pub async fn next_page(&mut self) -> Option<Result<Page, ApiError>> {
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
        // Decoded here, on the thread that decides and then drops the page's resources: built
        // on a worker, they were freed across threads (glibc's arena lock, contended on every
        // page) and moved between cores' caches. A decoding error is not retried either way.
        let decoded = match decode_body(body, &self.projection) {
            Ok(decoded) => decoded,
            Err(err) => return Some(Err(self.finish(err))),
        };
        self.received += decoded.items.len() as u64;
        self.last_bytes = decoded.bytes;
        let config = &self.inner.config;
        let limit = *self.limit.get_or_insert_with(|| {
            listing_limit(decoded.total, config.page_size, config.max_listed)
        });
        if self.received > limit {
            let err = ApiError::Endless {
                received: self.received,
                limit,
            };
            return Some(Err(self.finish(err)));
        }
        if decoded.items.is_empty() || self.received >= decoded.total {
            self.finish(());
        } else {
            self.top_up(decoded.total);
        }
        let items = self.dedupe(number, decoded.items);
        Some(Ok(Page {
            number,
            items,
            total: decoded.total,
        }))
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
        let url = url::page_url(
            &self.collection,
            number,
            size,
            self.search.as_deref(),
            self.fields.as_deref(),
        );
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
    fn finish<T>(&mut self, value: T) -> T {
        self.done = true;
        for (_, task) in self.in_flight.drain(..) {
            task.abort();
        }
        value
    }

    /// Drops resources whose id this pager already yielded, on this page or any before it
    /// (resources without an id are kept).
    fn dedupe(&mut self, number: u32, mut items: Vec<Resource>) -> Vec<Resource> {
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

/// The "dropped resources already seen" line, at most once per [`DROP_LOG_EVERY`] per listing
/// (an API repeating its pages would otherwise log a line per page), with what it stands for.
#[derive(Debug, Default)]
struct DropLog {
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
        // Expected when deletions shift the pages under an offset-paged listing.
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

impl Drop for Pager {
    fn drop(&mut self) {
        self.finish(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_tolerates_extra_fields() {
        let page =
            decode_page(br#"{"kind":"ClusterList","page":1,"size":0,"total":0,"items":[],"x":1}"#);
        let page = page.unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.total, 0);
        let page =
            decode_page(br#"{"items":[{"id":"a"},7, {"id":"\u00e9", "spec":{"n":1}}],"total":9}"#)
                .unwrap();
        assert_eq!(page.items.len(), 3);
        assert!(page.items[1].id().is_err());
        // Each resource keeps exactly its own item's text.
        assert_eq!(page.items[0].json(), serde_json::json!({"id": "a"}));
        assert_eq!(
            page.items[2].json(),
            serde_json::json!({"id": "é", "spec": {"n": 1}})
        );
    }

    #[test]
    fn a_body_without_total_or_items_is_a_decode_error() {
        let err = decode_page(br#"{"items":[]}"#).unwrap_err();
        assert!(matches!(err, ApiError::Decode(_)));
        assert!(!err.is_retriable());
        for body in [&br#"{"total":3}"#[..], br#"{"items":{},"total":3}"#] {
            let err = decode_page(body).unwrap_err();
            assert!(matches!(err, ApiError::Decode(_)), "{err}");
            assert_eq!(err.metric_label(), "fetch_error");
        }
        assert!(decode_page(b"{\"items\": [").is_err());
        // `null` items: the API's projected answer for an empty page.
        let empty = decode_page(br#"{"items":null,"total":3}"#).unwrap();
        assert!(empty.items.is_empty());
        assert_eq!(empty.total, 3);
        // Outside a string a bad byte is a syntax error of the page, as in Go.
        let outside = decode_page(b"{\"items\":[{\"id\":\"a\"}\xff],\"total\":1}").unwrap_err();
        assert!(matches!(outside, ApiError::Decode(_)), "{outside}");
    }

    /// One invalid byte in one resource's id costs that id its exactness (U+FFFD, as Go's
    /// `encoding/json`), not the page: every other resource decodes as before, under both
    /// decoders.
    #[test]
    fn invalid_utf8_inside_an_item_is_replaced_as_go_does() {
        let body = b"{\"items\":[{\"id\":\"a\xffb\",\"kind\":\"Cluster\"},{\"id\":\"c\",\"generation\":2}],\"total\":2}";
        let projected = Arc::new(Projection::base());
        for page in [decode_page(body), decode_page_with(body, &projected)] {
            let page = page.unwrap();
            let ids: Vec<String> = page
                .items
                .iter()
                .map(|r| r.id().unwrap().as_str().to_string())
                .collect();
            assert_eq!(ids, ["a\u{FFFD}b", "c"]);
            assert_eq!(page.total, 2);
        }
    }

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
        // A new listing starts afresh.
        let mut again = client.list("clusters", None);
        assert_eq!(ids(again.dedupe(1, page(&["a"]))), ["a"]);
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

    #[tokio::test]
    async fn errors_mask_the_base_url_password() {
        let bad = ApiClientConfig {
            base_url: "ftp://user:s3cret@h".into(),
            ..Default::default()
        };
        let text = ApiClient::new(bad).unwrap_err().to_string();
        assert!(
            text.contains("user:****@h") && !text.contains("s3cret"),
            "{text}"
        );
        // Nothing listens on port 1: the transport error names the URL, masked.
        let client = ApiClient::new(ApiClientConfig {
            base_url: "http://user:s3cret@127.0.0.1:1".into(),
            ..Default::default()
        })
        .unwrap();
        let text = client.probe("clusters").await.unwrap_err().to_string();
        assert!(!text.contains("s3cret"), "{text}");
    }

    #[test]
    fn bad_configs_are_rejected() {
        let bad_url = ApiClientConfig {
            base_url: "not a url".into(),
            ..Default::default()
        };
        assert!(matches!(ApiClient::new(bad_url), Err(ApiError::Config(_))));
        let ftp = ApiClientConfig {
            base_url: "ftp://h".into(),
            ..Default::default()
        };
        assert!(matches!(ApiClient::new(ftp), Err(ApiError::Config(_))));
        let bad_ua = ApiClientConfig {
            user_agent: "a\nb".into(),
            ..Default::default()
        };
        assert!(matches!(ApiClient::new(bad_ua), Err(ApiError::Config(_))));
    }
}
