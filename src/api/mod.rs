//! The HyperFleet API client: the startup connectivity probe and the paged, streaming list of a
//! resource collection.
//!
//! Takes an [`ApiClientConfig`]; gives [`ApiClient::probe`] and [`ApiClient::list`], whose
//! [`Pager`] yields the collection page by page, in page order, while fetching a few pages ahead
//! (or, listed by id, one after the other: `pager.rs` says why); and the one-request questions
//! a daemon asks of a listing: whether the API accepts its search and fields
//! ([`ApiClient::try_listing`]) and which ids it holds now ([`ApiClient::kept`]).
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
//!   collision can only skip a resource for one cycle (see `seen.rs`). [`Pager::then`] carries
//!   them over into the listing after it;
//! - a projected page is yielded only when each item carries every field asked for
//!   ([`crate::resource::Fields::missing`]); else it is listed again without `fields`.

mod body;
mod error;
mod gunzip;
mod pager;
mod retry;
mod seen;
mod token;
mod url;

pub use body::{PAGE_ENVELOPE_SLACK, max_body_bytes};
pub use error::{ApiError, BODY_EXCERPT_LEN, TokenError, parse_retry_after};
pub use gunzip::{GunzipError, GzipError, gunzip};

pub use pager::{Degraded, MAX_LISTED_RESOURCES, PREFETCH_BYTES, Pager, Paging, listing_limit};
pub use retry::Backoff;
pub use url::{BY_ID_SEARCH_SLACK, search_from_selector};

use crate::cel::host::{Projection, Resource};
use crate::common::redact::mask_url;
use crate::resource::Fields;
use crate::telemetry::{HttpSpan, Tracing};
use reqwest::header::{ACCEPT_ENCODING, AUTHORIZATION, HeaderMap, HeaderValue, USER_AGENT};
use seen::SeenIds;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use token::TokenSource;

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
            fields: None,
            by_id: None,
            next_number: 1,
            parent: self
                .inner
                .config
                .tracing
                .is_on()
                .then(opentelemetry::Context::current),
            in_flight: VecDeque::new(),
            received: 0,
            pass: 0,
            limit: None,
            last_bytes: 0,
            seen: SeenIds::new(),
            drops: Default::default(),
            done: false,
            degraded: Degraded::default(),
        }
    }

    /// The first request of a listing by `search` asking for `fields` and paged as `paging`
    /// says, for one item, retried as a page is: `Ok(None)` when the API accepts it and its
    /// item (if any) carries every field asked for, `Ok(Some(field))` when the item lacks
    /// `field`, and the error (a 400 for a search or a field the API refuses) otherwise.
    pub async fn try_listing(
        &self,
        resource_type: &str,
        search: Option<&str>,
        fields: Option<&Fields>,
        paging: Paging,
    ) -> Result<Option<&'static str>, ApiError> {
        let collection = self.collection_url(resource_type);
        let param = fields.map(Fields::param);
        let url = match paging {
            Paging::ById => url::by_id_url(&collection, 1, search, None, param),
            Paging::ByNumber => url::page_url(&collection, 1, 1, search, param),
        };
        let body = self.inner.clone().fetch_page(url, 1).await?;
        let page = decode_body(body, &Arc::new(Projection::base()))?;
        Ok(fields.and_then(|f| page.items.iter().find_map(|r| f.missing(r.json_text()))))
    }

    /// Which of `ids` a listing by `search` holds now: `search` ANDed with `id in [...]`, in as
    /// many requests as the API's bounds on a search and a page need, each retried as a page
    /// is.
    pub async fn kept(
        &self,
        resource_type: &str,
        search: Option<&str>,
        ids: &[String],
    ) -> Result<Vec<String>, ApiError> {
        let collection = self.collection_url(resource_type);
        let most = self.inner.config.page_size.clamp(1, 100) as usize;
        let mut kept = Vec::new();
        let mut rest = ids;
        while !rest.is_empty() {
            let (search, n) = url::id_in_search(search, rest, most);
            let n = n.max(1);
            let url = url::page_url(&collection, 1, n as u32, Some(&search), None);
            let body = self.inner.clone().fetch_page(url, 1).await?;
            let page = decode_body(body, &Arc::new(Projection::base()))?;
            kept.extend(
                page.items
                    .iter()
                    .filter_map(|r| r.id().ok().map(|id| id.as_str().to_string())),
            );
            rest = &rest[n.min(rest.len())..];
        }
        Ok(kept)
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
    /// Whether an item may lack a field the projection decodes ([`crate::resource::DecodedList`]).
    pub incomplete: bool,
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
        incomplete: page.incomplete,
    })
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
