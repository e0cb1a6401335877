//! The HyperFleet API client against the fake API over real HTTP on 127.0.0.1: paging and query
//! strings, search filtering, headers and tokens, retries of each fault kind, streaming order
//! with prefetch, and the connectivity probe.

use crate::harness::CLUSTERS;
use crate::harness::fake_api::{FakeServer, fake_api};
use sentinel::api::{
    ApiClient, ApiClientConfig, ApiError, Backoff, Page, Pager, search_from_selector,
};
use sentinel::sim::api::{Collection, Fault, FaultRule, Fleet, sample_id, sample_resource};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// `n` clusters, labelled `shard=even|odd` and `env=<env>`.
fn clusters(n: u64, env: &str) -> Fleet {
    let fleet = Fleet::new();
    add_clusters(&fleet, 0..n, env);
    fleet
}

fn add_clusters(fleet: &Fleet, range: std::ops::Range<u64>, env: &str) {
    for i in range {
        let shard = if i % 2 == 0 { "even" } else { "odd" };
        let resource = sample_resource(Collection::Clusters, i, &[("shard", shard), ("env", env)]);
        fleet.insert(Collection::Clusters, resource).unwrap();
    }
}

/// Backoff short enough for tests: a few milliseconds per retry, a one-second budget.
fn fast_backoff() -> Backoff {
    Backoff {
        initial: Duration::from_millis(2),
        multiplier: 2.0,
        max_interval: Duration::from_millis(20),
        jitter: 0.1,
        max_elapsed: Duration::from_secs(1),
    }
}

/// The clients these tests make of a fake API.
impl FakeServer {
    fn config(&self, page_size: u32) -> ApiClientConfig {
        ApiClientConfig {
            base_url: self.base_url.clone(),
            page_size,
            user_agent: "hyperfleet-sentinel/9.9.9 (test-sentinel)".to_string(),
            backoff: fast_backoff(),
            prefetch: 1,
            ..ApiClientConfig::default()
        }
    }

    fn client(&self, page_size: u32) -> ApiClient {
        ApiClient::new(self.config(page_size)).unwrap()
    }
}

/// Drains a pager: the pages it yielded and the error that ended it, if any.
async fn drain(mut pager: Pager) -> (Vec<Page>, Option<ApiError>) {
    let mut pages = Vec::new();
    while let Some(next) = pager.next_page().await {
        match next {
            Ok(page) => pages.push(page),
            Err(err) => {
                assert!(
                    pager.next_page().await.is_none(),
                    "pager went on after an error"
                );
                return (pages, Some(err));
            }
        }
    }
    (pages, None)
}

fn ids(pages: &[Page]) -> Vec<String> {
    let items = pages.iter().flat_map(|p| &p.items);
    items
        .map(|r| r.id().unwrap().as_str().to_string())
        .collect()
}

fn cluster_ids(indexes: impl IntoIterator<Item = u64>) -> Vec<String> {
    indexes
        .into_iter()
        .map(|i| sample_id(Collection::Clusters, i))
        .collect()
}

/// A fresh path in the temp directory for a token file.
fn token_file(content: Option<&str>) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("sentinel-api-test-{}-{n}", std::process::id()));
    match content {
        Some(content) => std::fs::write(&path, content).unwrap(),
        None => drop(std::fs::remove_file(&path)),
    }
    path
}

#[tokio::test]
async fn pages_until_total_with_exact_query_strings() {
    let fleet = clusters(250, "prod west");
    add_clusters(&fleet, 250..300, "dev");
    let env = fake_api(fleet).await;
    let search = search_from_selector([("env", "prod west")]);
    let (pages, err) = drain(env.client(100).list("clusters", search.as_deref())).await;
    assert!(err.is_none(), "{err:?}");
    let shape: Vec<_> = pages
        .iter()
        .map(|p| (p.number, p.items.len(), p.total))
        .collect();
    assert_eq!(shape, [(1, 100, 250), (2, 100, 250), (3, 50, 250)]);
    assert_eq!(ids(&pages), cluster_ids(0..250));
    let uris: Vec<String> = env.requests().into_iter().map(|r| r.uri).collect();
    let search = "labels.env%3D%27prod+west%27";
    let expected: Vec<String> = (1..=3)
        .map(|p| format!("{CLUSTERS}?page={p}&size=100&search={search}"))
        .collect();
    assert_eq!(uris, expected);
}

/// The Go sentinel writes a quote in a selector value doubled (`'it''s'`), but TSL escapes
/// with a backslash: the API reads two strings and refuses the search, as the fake API does.
#[tokio::test]
async fn a_quote_in_a_selector_value_is_refused_by_the_api() {
    let env = fake_api(clusters(3, "it's prod")).await;
    let search = search_from_selector([("env", "it's prod")]);
    assert_eq!(search.as_deref(), Some("labels.env='it''s prod'"));
    let (pages, err) = drain(env.client(100).list("clusters", search.as_deref())).await;
    assert!(pages.is_empty());
    let refused = matches!(&err, Some(ApiError::Http { status: 400, body_excerpt, .. })
        if body_excerpt.contains("failed to parse search query: syntax error"));
    assert!(refused, "{err:?}");
}

#[tokio::test]
async fn no_selector_sends_no_search_and_an_empty_fleet_is_one_page() {
    let env = fake_api(Fleet::new()).await;
    let (pages, err) = drain(env.client(50).list("nodepools", None)).await;
    assert!(err.is_none());
    assert_eq!(pages.len(), 1);
    assert!(pages[0].items.is_empty());
    let uris: Vec<String> = env.requests().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["/api/hyperfleet/v1/nodepools?page=1&size=50"]);
}

#[tokio::test]
async fn search_filters_by_all_labels() {
    let env = fake_api(clusters(40, "prod")).await;
    let search = search_from_selector([("shard", "odd"), ("env", "prod")]);
    assert_eq!(
        search.as_deref(),
        Some("labels.env='prod' and labels.shard='odd'")
    );
    let (pages, err) = drain(env.client(7).list("clusters", search.as_deref())).await;
    assert!(err.is_none());
    assert_eq!(ids(&pages), cluster_ids((0..40).filter(|i| i % 2 == 1)));
    assert_eq!(pages.len(), 3);
    let none = search_from_selector([("env", "staging")]);
    let (pages, _) = drain(env.client(7).list("clusters", none.as_deref())).await;
    assert_eq!((pages.len(), pages[0].total), (1, 0));
}

#[tokio::test]
async fn page_size_over_the_cap_is_a_final_400() {
    let env = fake_api(clusters(5, "prod")).await;
    let (pages, err) = drain(env.client(101).list("clusters", None)).await;
    assert!(pages.is_empty());
    let err = err.unwrap();
    let mentions_size = matches!(&err, ApiError::Http { status: 400, body_excerpt, .. }
        if body_excerpt.contains("size"));
    assert!(mentions_size, "{err}");
    assert!(!err.is_retriable());
    assert_eq!(env.requests().len(), 1);
}

#[tokio::test]
async fn sends_user_agent_and_bearer_token() {
    let env = fake_api(clusters(3, "prod")).await;
    env.api.set_expected_token(Some("secret-1"));
    let path = token_file(Some("  secret-1\n"));
    let config = ApiClientConfig {
        token_path: Some(path.clone()),
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ids(&pages).len(), 3);
    let request = &env.requests()[0];
    assert_eq!(
        request.header("user-agent"),
        Some("hyperfleet-sentinel/9.9.9 (test-sentinel)")
    );
    assert_eq!(request.header("authorization"), Some("Bearer secret-1"));
    // Without the token the fake API refuses, and a 401 is final.
    let (_, err) = drain(env.client(10).list("clusters", None)).await;
    assert!(matches!(err, Some(ApiError::Http { status: 401, .. })));
    // As in Go, `auth_error` is a token-file error only: a 401 or 403 is a `fetch_error`.
    assert_eq!(err.map(|e| e.metric_label()), Some("fetch_error"));
    assert_eq!(env.requests().len(), 2);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn token_is_reread_every_request_with_zero_ttl() {
    let env = fake_api(clusters(3, "prod")).await;
    let path = token_file(Some("one"));
    let config = ApiClientConfig {
        token_path: Some(path.clone()),
        ..env.config(10)
    };
    let client = ApiClient::new(config).unwrap();
    client.probe("clusters").await.unwrap();
    std::fs::write(&path, "two\n").unwrap();
    env.api.set_expected_token(Some("two"));
    client.probe("clusters").await.unwrap();
    let sent: Vec<_> = env
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_string())
        .collect();
    assert_eq!(sent, ["Bearer one", "Bearer two"]);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn token_is_cached_for_its_ttl() {
    let env = fake_api(clusters(3, "prod")).await;
    let path = token_file(Some("one"));
    let config = ApiClientConfig {
        token_path: Some(path.clone()),
        token_cache_ttl: Duration::from_secs(3600),
        ..env.config(10)
    };
    let client = ApiClient::new(config).unwrap();
    client.probe("clusters").await.unwrap();
    std::fs::write(&path, "two").unwrap();
    client.probe("clusters").await.unwrap();
    // Even a deleted file does not matter while the cached token is fresh.
    std::fs::remove_file(&path).unwrap();
    client.probe("clusters").await.unwrap();
    let sent: Vec<_> = env
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_string())
        .collect();
    assert_eq!(sent, ["Bearer one"; 3]);
}

#[tokio::test]
async fn missing_or_empty_token_is_an_auth_error_and_nothing_is_sent() {
    let env = fake_api(clusters(3, "prod")).await;
    for content in [None, Some(""), Some(" \n\t")] {
        let path = token_file(content);
        let config = ApiClientConfig {
            token_path: Some(path.clone()),
            ..env.config(10)
        };
        let client = ApiClient::new(config).unwrap();
        let (pages, err) = drain(client.list("clusters", None)).await;
        assert!(pages.is_empty());
        let err = err.unwrap();
        assert!(matches!(err, ApiError::Auth(_)), "{err}");
        assert!(!err.is_retriable());
        assert_eq!(err.metric_label(), "auth_error");
        assert!(matches!(
            client.probe("clusters").await,
            Err(ApiError::Auth(_))
        ));
        let _ = std::fs::remove_file(path);
    }
    assert!(env.requests().is_empty());
}

#[tokio::test]
async fn retriable_statuses_retry_only_the_failing_page() {
    for status in [500, 503, 429, 408] {
        let env = fake_api(clusters(30, "prod")).await;
        env.api
            .inject(FaultRule::new(Fault::Status(status)).on_page(2).times(2));
        let (pages, err) = drain(env.client(10).list("clusters", None)).await;
        assert!(err.is_none(), "{status}: {err:?}");
        assert_eq!(ids(&pages), cluster_ids(0..30), "{status}");
        assert_eq!(env.pages_requested(), [1, 2, 2, 2, 3], "{status}");
    }
}

#[tokio::test]
async fn not_found_is_not_retried() {
    let env = fake_api(clusters(30, "prod")).await;
    env.api.inject(Fault::Status(404));
    let (pages, err) = drain(env.client(10).list("clusters", None)).await;
    assert!(pages.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ApiError::Http { status: 404, .. }), "{err}");
    assert_eq!(err.metric_label(), "fetch_error");
    assert_eq!(env.requests().len(), 1);
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let env = fake_api(clusters(15, "prod")).await;
    env.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(5))).on_page(2));
    let config = ApiClientConfig {
        timeout: Duration::from_millis(300),
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ids(&pages), cluster_ids(0..15));
    assert_eq!(env.pages_requested(), [1, 2, 2]);
}

#[tokio::test]
async fn timeouts_past_the_budget_end_in_a_timeout_error() {
    let env = fake_api(clusters(5, "prod")).await;
    env.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(5))).always());
    let config = ApiClientConfig {
        timeout: Duration::from_millis(100),
        backoff: Backoff {
            max_elapsed: Duration::from_millis(250),
            ..fast_backoff()
        },
        ..env.config(10)
    };
    let (_, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    let err = err.unwrap();
    assert!(matches!(err, ApiError::Timeout(_)), "{err}");
    assert!(err.is_retriable());
    assert!(env.requests().len() >= 2);
}

#[tokio::test]
async fn malformed_json_is_not_retried() {
    let env = fake_api(clusters(5, "prod")).await;
    env.api.inject(Fault::MalformedJson);
    let (_, err) = drain(env.client(10).list("clusters", None)).await;
    let err = err.unwrap();
    assert!(matches!(err, ApiError::Decode(_)), "{err}");
    assert!(!err.is_retriable());
    assert_eq!(env.requests().len(), 1);
}

#[tokio::test]
async fn unreachable_api_is_a_retriable_network_error() {
    // Bind a port, then free it: nothing listens there any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = ApiClientConfig {
        base_url: format!("http://{addr}"),
        backoff: Backoff {
            max_elapsed: Duration::from_millis(100),
            ..fast_backoff()
        },
        ..ApiClientConfig::default()
    };
    let client = ApiClient::new(config).unwrap();
    let (_, err) = drain(client.list("clusters", None)).await;
    let err = err.unwrap();
    assert!(matches!(err, ApiError::Network(_)), "{err}");
    assert!(err.is_retriable());
    assert!(matches!(
        client.probe("clusters").await,
        Err(ApiError::Network(_))
    ));
}

#[tokio::test]
async fn a_page_failing_mid_fleet_yields_the_earlier_pages_then_the_error() {
    let env = fake_api(clusters(50, "prod")).await;
    env.api
        .inject(FaultRule::new(Fault::Status(500)).on_page(3).always());
    let config = ApiClientConfig {
        prefetch: 4,
        backoff: Backoff {
            max_elapsed: Duration::from_millis(100),
            ..fast_backoff()
        },
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert_eq!(pages.iter().map(|p| p.number).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(ids(&pages), cluster_ids(0..20));
    assert!(
        matches!(err, Some(ApiError::Http { status: 500, .. })),
        "{err:?}"
    );
    let requested = env.pages_requested();
    assert!(
        requested.iter().filter(|&&p| p == 3).count() >= 2,
        "{requested:?}"
    );
    assert_eq!(requested.iter().filter(|&&p| p == 1).count(), 1);
}

#[tokio::test]
async fn prefetch_yields_pages_in_order() {
    let env = fake_api(clusters(400, "prod")).await;
    // Slow down a few early pages so later ones finish first.
    for page in [2, 3, 7] {
        env.api
            .inject(FaultRule::new(Fault::Delay(Duration::from_millis(50))).on_page(page));
    }
    let config = ApiClientConfig {
        prefetch: 4,
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    let numbers: Vec<u32> = pages.iter().map(|p| p.number).collect();
    assert_eq!(numbers, (1..=40).collect::<Vec<_>>());
    assert_eq!(ids(&pages), cluster_ids(0..400));
    let mut requested = env.pages_requested();
    requested.sort_unstable();
    assert_eq!(requested, (1..=40).collect::<Vec<_>>());
}

#[tokio::test]
async fn prefetch_has_several_pages_in_flight() {
    let env = fake_api(clusters(100, "prod")).await;
    // Page 2 is answered only once page 5 was requested: a serial pager would get a 409.
    env.api
        .inject(FaultRule::new(Fault::HoldUntilPage(5)).on_page(2));
    let config = ApiClientConfig {
        prefetch: 4,
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ids(&pages), cluster_ids(0..100));
}

#[tokio::test]
async fn follows_a_total_that_grows_during_the_listing() {
    let env = fake_api(clusters(20, "prod")).await;
    let mut pager = env.client(10).list("clusters", None);
    let first = pager.next_page().await.unwrap().unwrap();
    assert_eq!(first.total, 20);
    add_clusters(&env.api.fleet, 20..35, "prod");
    let (rest, err) = drain(pager).await;
    assert!(err.is_none());
    let shape: Vec<_> = rest.iter().map(|p| (p.number, p.total)).collect();
    assert_eq!(shape, [(2, 35), (3, 35), (4, 35)]);
    let mut all = ids(&[first]);
    all.extend(ids(&rest));
    assert_eq!(all, cluster_ids(0..35));
}

#[tokio::test]
async fn probe_sends_the_go_sentinel_request_once() {
    let env = fake_api(clusters(3, "prod")).await;
    let client = env.client(100);
    client.probe("nodepools").await.unwrap();
    assert_eq!(
        env.requests()[0].uri,
        "/api/hyperfleet/v1/nodepools?search=labels.non_existing_label%3D%27value%27&size=1"
    );
    env.api.inject(Fault::Status(503));
    let err = client.probe("clusters").await.unwrap_err();
    assert!(matches!(err, ApiError::Http { status: 503, .. }));
    assert!(err.to_string().contains("503"), "{err}");
    assert_eq!(env.requests().len(), 2, "the probe is not retried");
}

/// GETs `path` from the fake API: status, content type and JSON body.
async fn get_json(env: &FakeServer, path: &str) -> (u16, String, serde_json::Value) {
    let response = reqwest::get(format!("{}{path}", env.base_url))
        .await
        .unwrap();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    (
        response.status().as_u16(),
        content_type,
        response.json().await.unwrap(),
    )
}

#[tokio::test]
async fn fake_api_serves_single_resources_and_problems() {
    let fleet = clusters(2, "prod");
    fleet
        .insert(
            Collection::NodePools,
            sample_resource(Collection::NodePools, 1, &[]),
        )
        .unwrap();
    let env = fake_api(fleet).await;
    let cluster = sample_id(Collection::Clusters, 1);
    let pool = sample_id(Collection::NodePools, 1);
    let (status, _, body) = get_json(&env, &format!("{CLUSTERS}/{cluster}")).await;
    assert_eq!((status, body["id"].as_str()), (200, Some(cluster.as_str())));
    let (status, _, body) = get_json(&env, &format!("{CLUSTERS}/{cluster}/nodepools/{pool}")).await;
    assert_eq!((status, body["kind"].as_str()), (200, Some("NodePool")));
    let (status, _, body) = get_json(&env, &format!("{CLUSTERS}/{cluster}/nodepools")).await;
    assert_eq!((status, body["total"].as_u64()), (200, Some(1)));
    let (status, kind, body) = get_json(&env, &format!("{CLUSTERS}/nope")).await;
    assert_eq!((status, kind.as_str()), (404, "application/problem+json"));
    assert_eq!(body["status"], 404);
    let refused = "status.conditions.Reconciled%21%3D%27True%27";
    let (status, _, body) = get_json(&env, &format!("{CLUSTERS}?search={refused}")).await;
    assert_eq!((status, body["title"].as_str()), (400, Some("Bad Request")));
    assert_eq!(
        body["detail"],
        "only equality operator (=) is supported for condition status queries"
    );
    let (status, _, body) = get_json(&env, &format!("{CLUSTERS}?size=2&page=1")).await;
    assert_eq!(
        (status, body["kind"].as_str(), body["size"].as_u64()),
        (200, Some("ClusterList"), Some(2))
    );
    assert_eq!(body["total"], 2);
}

/// A 429's `Retry-After` replaces the backoff's wait: `0` retries at once although the backoff
/// would wait an hour (past the budget, so ignoring the header would give up).
#[tokio::test]
async fn retry_after_is_honoured() {
    let env = fake_api(clusters(5, "prod")).await;
    env.api.inject(Fault::RetryAfter(429, "0".into()));
    let config = ApiClientConfig {
        backoff: Backoff {
            initial: Duration::from_secs(3600),
            max_interval: Duration::from_secs(3600),
            max_elapsed: Duration::from_secs(600),
            ..fast_backoff()
        },
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ids(&pages), cluster_ids(0..5));
    assert_eq!(env.pages_requested(), [1, 1]);
}

/// A `Retry-After` past the retry budget ends the listing with that 429 at once, where the
/// backoff alone would have retried within a few milliseconds.
#[tokio::test]
async fn retry_after_past_the_budget_gives_up() {
    let env = fake_api(clusters(5, "prod")).await;
    env.api
        .inject(FaultRule::new(Fault::RetryAfter(429, "120".into())).always());
    let (pages, err) = drain(env.client(10).list("clusters", None)).await;
    assert!(pages.is_empty());
    let err = err.unwrap();
    assert!(matches!(err, ApiError::Http { status: 429, .. }), "{err}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(120)));
    assert_eq!(env.pages_requested(), [1]);
}

/// A page without an `items` array is a (counted, not retried) decode error, not the end of the
/// listing.
#[tokio::test]
async fn a_page_without_items_is_a_fetch_error() {
    let env = fake_api(clusters(30, "prod")).await;
    env.api.inject(
        FaultRule::new(Fault::Body(
            r#"{"kind":"ClusterList","page":2,"size":0,"total":30}"#.into(),
        ))
        .on_page(2),
    );
    let (pages, err) = drain(env.client(10).list("clusters", None)).await;
    assert_eq!(ids(&pages), cluster_ids(0..10));
    let err = err.expect("an error, not the end of the listing");
    assert!(matches!(err, ApiError::Decode(_)), "{err}");
    assert!(err.to_string().contains("items"), "{err}");
    assert_eq!(err.metric_label(), "fetch_error");
}

// ---- response body bound and Retry-After extremes ----

/// A valid empty page padded with spaces to exactly `len` bytes.
fn padded_empty_page(len: usize) -> String {
    let mut body = r#"{"items":[],"total":0}"#.to_string();
    body.push_str(&" ".repeat(len - body.len()));
    body
}

/// A 200 body of exactly `max_body_bytes(page_size)` is read; one byte more (declared by its
/// Content-Length) is a counted, final fetch error that names the limit.
#[tokio::test]
async fn a_page_body_past_the_limit_is_a_fetch_error() {
    let limit = sentinel::api::max_body_bytes(1);
    let env = fake_api(clusters(3, "prod")).await;
    env.api
        .inject(FaultRule::new(Fault::Body(padded_empty_page(limit))).on_page(1));
    let (pages, err) = drain(env.client(1).list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(pages.len(), 1);
    assert!(pages[0].items.is_empty());

    let env = fake_api(clusters(3, "prod")).await;
    env.api
        .inject(FaultRule::new(Fault::Body(padded_empty_page(limit + 1))).on_page(2));
    let (pages, err) = drain(env.client(1).list("clusters", None)).await;
    assert_eq!(ids(&pages), cluster_ids(0..1));
    let err = err.expect("an error, not the end of the listing");
    assert!(
        matches!(err, ApiError::TooLarge { limit: l, .. } if l == limit),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains(&format!("limit of {limit} bytes")), "{text}");
    assert_eq!(err.metric_label(), "fetch_error");
    assert!(!err.is_retriable());
    assert_eq!(env.pages_requested(), [1, 2]);
}

/// A server on 127.0.0.1 answering every request with `status_line` and a chunked body (no
/// Content-Length) that never ends: `{"items":[` and then spaces, 64 KiB per chunk, until the
/// client goes away.
async fn endless_body_server(status_line: &'static str) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 {status_line}\r\ncontent-type: application/json\r\n\
                     transfer-encoding: chunked\r\n\r\n"
                );
                let first = "{\"items\":[";
                let first = format!("{:x}\r\n{first}\r\n", first.len());
                let spaces = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
                if conn.write_all(head.as_bytes()).await.is_err()
                    || conn.write_all(first.as_bytes()).await.is_err()
                {
                    return;
                }
                while conn.write_all(spaces.as_bytes()).await.is_ok() {}
            });
        }
    });
    (url, task)
}

/// An endless 200 body stops with the size error at the limit — not a timeout, which is what
/// reading it whole would end in.
#[tokio::test]
async fn an_endless_chunked_page_stops_at_the_limit() {
    let (url, server) = endless_body_server("200 OK").await;
    let client = ApiClient::new(ApiClientConfig {
        base_url: url,
        page_size: 2,
        timeout: Duration::from_secs(120),
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .unwrap();
    let (pages, err) = drain(client.list("clusters", None)).await;
    server.abort();
    assert!(pages.is_empty());
    let err = err.expect("an error");
    let limit = sentinel::api::max_body_bytes(2);
    assert!(
        matches!(err, ApiError::TooLarge { limit: l, .. } if l == limit),
        "{err}"
    );
}

/// An endless error body is read only as far as the excerpt: the 500 is retried within the
/// budget and ends the listing as that 500, with a bounded excerpt.
#[tokio::test]
async fn an_endless_error_body_is_read_only_for_its_excerpt() {
    let (url, server) = endless_body_server("500 Internal Server Error").await;
    let client = ApiClient::new(ApiClientConfig {
        base_url: url,
        timeout: Duration::from_secs(120),
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .unwrap();
    let (pages, err) = drain(client.list("clusters", None)).await;
    server.abort();
    assert!(pages.is_empty());
    let err = err.expect("an error");
    let ApiError::Http {
        status: 500,
        body_excerpt,
        ..
    } = &err
    else {
        panic!("not the 500: {err}");
    };
    assert_eq!(body_excerpt, "{\"items\":[");
}

/// A `Retry-After` of u64::MAX seconds arriving more than a second into the retries gives up
/// with that 429; it used to overflow `elapsed + wait` and panic the page task.
#[tokio::test]
async fn a_huge_retry_after_late_in_the_retries_gives_up() {
    let env = fake_api(clusters(5, "prod")).await;
    env.api.inject(Fault::RetryAfter(503, "1".into()));
    env.api.inject(Fault::RetryAfter(429, u64::MAX.to_string()));
    let config = ApiClientConfig {
        backoff: Backoff {
            max_elapsed: Duration::from_secs(600),
            ..fast_backoff()
        },
        ..env.config(10)
    };
    let (pages, err) = drain(ApiClient::new(config).unwrap().list("clusters", None)).await;
    assert!(pages.is_empty());
    let err = err.expect("the 429");
    assert!(matches!(err, ApiError::Http { status: 429, .. }), "{err}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(u64::MAX)));
    assert_eq!(env.pages_requested(), [1, 1]);
}

// ---- gzip ----

/// As Go's transport, the client asks for gzip and reads a gzipped page as the plain one; the
/// fake API, like the real one, gzips when asked (checked here with a client that does not
/// inflate).
#[tokio::test]
async fn pages_are_asked_for_gzipped_and_read_as_plain() {
    let env = fake_api(clusters(25, "prod")).await;
    env.api.set_gzip(true);
    let (pages, err) = drain(env.client(10).list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ids(&pages), cluster_ids(0..25));
    for request in env.requests() {
        assert_eq!(
            request.header("accept-encoding"),
            Some("gzip"),
            "{request:?}"
        );
    }

    let raw = reqwest::Client::builder().no_gzip().build().unwrap();
    let url = format!("{}{CLUSTERS}?page=1&size=10", env.base_url);
    let answer = |accept: &'static str| {
        let request = raw.get(&url).header("accept-encoding", accept);
        async move {
            let response = request.send().await.unwrap();
            let encoding = response
                .headers()
                .get("content-encoding")
                .map(|v| v.to_str().unwrap().to_string());
            (encoding, response.bytes().await.unwrap())
        }
    };
    let (encoding, gzipped) = answer("gzip").await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    assert_eq!(&gzipped[..2], [0x1f, 0x8b], "the gzip magic");
    let (encoding, plain) = answer("identity").await;
    assert_eq!(encoding, None);
    assert!(
        gzipped.len() * 3 < plain.len(),
        "{} vs {}",
        gzipped.len(),
        plain.len()
    );
}

/// The body limit counts inflated bytes: a gzip bomb (a few KiB on the wire, one byte over the
/// limit inflated) is the same final fetch error as an oversized plain body, and a body of
/// exactly the limit still reads.
#[tokio::test]
async fn a_gzip_bomb_is_the_oversized_body_error() {
    let limit = sentinel::api::max_body_bytes(1);
    let env = fake_api(clusters(3, "prod")).await;
    env.api.set_gzip(true);
    env.api
        .inject(FaultRule::new(Fault::Body(padded_empty_page(limit))).on_page(1));
    let (pages, err) = drain(env.client(1).list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(pages.len(), 1);

    env.api
        .inject(FaultRule::new(Fault::Body(padded_empty_page(limit + 1))).on_page(1));
    let (pages, err) = drain(env.client(1).list("clusters", None)).await;
    assert!(pages.is_empty());
    let err = err.expect("the size error");
    assert!(
        matches!(err, ApiError::TooLarge { limit: l, .. } if l == limit),
        "{err}"
    );
    assert_eq!(err.metric_label(), "fetch_error");
    assert!(!err.is_retriable());
}

/// `bytes` gzipped (the default level) as `members` members, one after the other: what a proxy
/// that concatenates gzip streams, or a server flushing a member per chunk, sends.
fn gzip_members(bytes: &[u8], members: usize) -> Vec<u8> {
    use std::io::Write as _;
    let part = bytes.len().div_ceil(members.max(1)).max(1);
    let mut wire = Vec::new();
    for chunk in bytes.chunks(part) {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(chunk).unwrap();
        wire.extend(gz.finish().unwrap());
    }
    wire
}

/// Page 1 of `size` as the fake API serves it uncompressed.
async fn plain_page(env: &FakeServer, size: u32) -> Vec<u8> {
    let raw = reqwest::Client::builder().no_gzip().build().unwrap();
    let url = format!("{}{CLUSTERS}?page=1&size={size}", env.base_url);
    let response = raw.get(&url).send().await.unwrap();
    assert_eq!(response.headers().get("content-encoding"), None);
    response.bytes().await.unwrap().to_vec()
}

/// Go's gzip reader reads every member of a body to its end; so does the client: a page
/// gzipped as three members reads as the plain page.
#[tokio::test]
async fn every_member_of_a_gzipped_page_is_read() {
    let env = fake_api(clusters(25, "prod")).await;
    let plain = plain_page(&env, 30).await;
    let wire = gzip_members(&plain, 3);
    env.api
        .inject(FaultRule::new(Fault::Gzipped(wire)).on_page(1));
    let (pages, err) = drain(env.client(30).list("clusters", None)).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(ids(&pages), cluster_ids(0..25));
    // The plain page fetched above, then the client's one request.
    assert_eq!(env.pages_requested(), [1, 1]);
}

/// Bytes after the last member that do not begin one are refused as Go's reader refuses them:
/// ten or more are an invalid header, fewer an unexpected EOF; the error's text is the Go
/// sentinel's, and, as there, the page is not retried.
#[tokio::test]
async fn trailing_bytes_after_a_gzipped_page_are_refused_as_in_go() {
    for (tail, text) in [
        (
            &b"<html><body>502 Bad Gateway</body></html>"[..],
            "failed to read response body: gzip: invalid header",
        ),
        (b"\r\n", "failed to read response body: unexpected EOF"),
    ] {
        let env = fake_api(clusters(5, "prod")).await;
        let mut wire = gzip_members(&plain_page(&env, 10).await, 1);
        wire.extend_from_slice(tail);
        env.api
            .inject(FaultRule::new(Fault::Gzipped(wire)).on_page(1).times(2));
        let (pages, err) = drain(env.client(10).list("clusters", None)).await;
        assert!(pages.is_empty());
        let err = err.expect("the gzip error");
        assert!(matches!(err, ApiError::Gzip(_)), "{tail:?}: {err:?}");
        assert_eq!(err.to_string(), text);
        assert!(!err.is_retriable());
        assert_eq!(err.metric_label(), "fetch_error");
        // The plain page fetched above, then the client's one request: not retried.
        assert_eq!(env.pages_requested(), [1, 1]);
    }
}

/// The inflated-bytes bound holds over all the members of a body together: members each far
/// under the limit whose sum is one byte over it are the oversized body error, and the same
/// members summing to the limit still read.
#[tokio::test]
async fn a_gzip_bomb_spread_over_members_is_the_oversized_body_error() {
    let limit = sentinel::api::max_body_bytes(1);
    for (len, fits) in [(limit, true), (limit + 1, false)] {
        let env = fake_api(clusters(3, "prod")).await;
        let wire = gzip_members(padded_empty_page(len).as_bytes(), 64);
        assert!(wire.len() < limit / 100, "{} bytes on the wire", wire.len());
        env.api
            .inject(FaultRule::new(Fault::Gzipped(wire)).on_page(1));
        let (pages, err) = drain(env.client(1).list("clusters", None)).await;
        if fits {
            assert!(err.is_none(), "{err:?}");
            assert_eq!(pages.len(), 1);
        } else {
            let err = err.expect("the size error");
            assert!(
                matches!(err, ApiError::TooLarge { limit: l, .. } if l == limit),
                "{err}"
            );
            assert!(!err.is_retriable());
        }
    }
}

/// An error answer gzipped (the API gzips every answer for a client that asks) keeps its
/// excerpt as text: it is inflated as far as the excerpt goes.
#[tokio::test]
async fn a_gzipped_error_answer_keeps_an_inflated_excerpt() {
    let env = fake_api(clusters(3, "prod")).await;
    env.api.set_gzip(true);
    env.api
        .inject(FaultRule::new(Fault::Status(404)).on_page(1));
    let (pages, err) = drain(env.client(10).list("clusters", None)).await;
    assert!(pages.is_empty());
    let Some(ApiError::Http {
        status: 404,
        body_excerpt,
        ..
    }) = &err
    else {
        panic!("not the 404: {err:?}");
    };
    assert!(
        body_excerpt.starts_with('{') && body_excerpt.contains("injected fault"),
        "{body_excerpt}"
    );
}
