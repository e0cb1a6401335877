//! A fake HyperFleet API over HTTP: the endpoints of the OpenAPI contract
//! (`../shared/hyperfleet-api-openapi.yaml`) that the sentinel and the adapters touch, served
//! from an in-memory [`Fleet`] that aggregates adapter reports as the real API does, with bearer
//! token checking, scripted faults and request recording.
//!
//! Takes an [`Arc<FakeApi>`] and an address; gives the bound address and a [`ServerHandle`].
//! Serves, under `/api/hyperfleet/v1`:
//! - `GET /{clusters|nodepools}?page&size&search&fields&order` → the list envelope
//!   `{kind, page, size, total, items}`; `size` above 100 or below 1 or `page` below 1 → 400
//!   problem+json. `search` is the API's TSL ([`crate::tsl::parse`], ANDed with the
//!   kind filter as the API adds it, [`crate::tsl::scoped`]), refused with the API's
//!   reason (400), or with a reason naming what the fake API does not support; `fields`
//!   projects as the API does ([`project`]); `order` is `id` or `created_time` (the
//!   default, insertion order), each `asc` or `desc` ([`Order`]);
//! - `GET|PATCH|DELETE /clusters/{cluster_id}` and
//!   `…/clusters/{cluster_id}/nodepools/{nodepool_id}` (PATCH `{spec?, labels?}`: a new spec bumps
//!   the generation; DELETE marks the resource deleted and bumps the generation, 202);
//! - `GET /clusters/{cluster_id}/nodepools` (that cluster's nodepools);
//! - `GET|PUT …/{id}/statuses`: adapter reports (PUT answers 201 when stored, 204 when the API
//!   discards it as stale or incomplete);
//! - anything else → 404 problem+json.
//!
//! [`FakeApi::set_quirks`] makes it depart from the contract in the ways of [`Quirks`].
//!
//! With [`FakeApi::set_gzip`] on, every answer (faults included) is gzipped for a client whose
//! `Accept-Encoding` takes gzip, as the real API's `CompressMiddleware` does; off by default, so
//! that a simulation's fleet server spends no CPU compressing unless asked.
//!
//! Invariant: every request is recorded before anything else happens to it, then checked for
//! the token, then given the next matching fault, and only then answered from the fleet.

mod faults;
mod fleet;
pub mod project;
mod quirks;
mod routes;
mod served;
pub mod status;

pub use faults::{Fault, FaultRule, Faults, HOLD_LIMIT, RecordedRequest, Recorder, page_param};
pub use fleet::{
    ACTOR, Collection, ConditionRow, Fleet, FleetError, Found, ListFilter, ListPage, Meta, Order,
    Progress, PutOutcome, Stored, realistic_resource, sample_id, sample_resource, varied_resource,
};
pub use quirks::Quirks;
pub use served::{Listing, Served};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The largest `size` the list endpoints accept, as the real API.
pub const MAX_PAGE_SIZE: u32 = 100;
/// The `size` of a list request without one.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
/// How many requests a [`FakeApi`] remembers.
pub const RECORDED_REQUESTS: usize = 10_000;

/// The fake API's state: the fleet it serves and the knobs tests turn.
#[derive(Debug)]
pub struct FakeApi {
    /// The resources served.
    pub fleet: Arc<Fleet>,
    /// Faults applied to upcoming requests.
    pub faults: Faults,
    /// The requests received.
    pub recorder: Recorder,
    expected_token: Mutex<Option<String>>,
    quirks: Mutex<Quirks>,
    gzip: AtomicBool,
    served: Mutex<served::Counter>,
}

impl FakeApi {
    /// A fake API serving `fleet`, without auth or faults, recording the last
    /// [`RECORDED_REQUESTS`] requests.
    pub fn new(fleet: Arc<Fleet>) -> FakeApi {
        FakeApi::with_recording(fleet, RECORDED_REQUESTS)
    }

    /// A fake API serving `fleet` that remembers the last `capacity` requests (0: none, which
    /// spares a busy simulation the bookkeeping).
    pub fn with_recording(fleet: Arc<Fleet>, capacity: usize) -> FakeApi {
        FakeApi {
            fleet,
            faults: Faults::default(),
            recorder: Recorder::new(capacity),
            expected_token: Mutex::new(None),
            quirks: Mutex::new(Quirks::default()),
            gzip: AtomicBool::new(false),
            served: Mutex::new(served::Counter::default()),
        }
    }

    /// What the list endpoints served so far: totals, and the listings finished since the last
    /// [`FakeApi::take_listings`].
    pub fn served(&self) -> Served {
        self.served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .totals()
    }

    /// The listings finished since the last call (a listing of a collection runs from a page 1
    /// request to the next page 1 request of that collection), oldest first.
    pub fn take_listings(&self) -> Vec<Listing> {
        self.served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take_finished()
    }

    /// Counts a list page served (`items` resources in `bytes` bytes of body, before gzip).
    fn count_served(&self, path: &str, page: u32, items: usize, bytes: usize) {
        self.served.lock().unwrap_or_else(|e| e.into_inner()).page(
            path,
            page,
            items as u64,
            bytes as u64,
        );
    }

    /// Gzips answers from now on for a client that accepts it (`Accept-Encoding: gzip`, or `*`,
    /// with a positive q), as the real API does; `false`: never.
    pub fn set_gzip(&self, on: bool) {
        self.gzip.store(on, Ordering::Relaxed);
    }

    /// Requires `Authorization: Bearer <token>` on every request from now on (`None`: no auth).
    pub fn set_expected_token(&self, token: Option<&str>) {
        *self
            .expected_token
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = token.map(str::to_string);
    }

    /// Departs from the contract as `quirks` says, from now on.
    pub fn set_quirks(&self, quirks: Quirks) {
        *self.quirks.lock().unwrap_or_else(|e| e.into_inner()) = quirks;
    }

    /// How it departs from the contract now.
    pub fn quirks(&self) -> Quirks {
        self.quirks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Adds a fault rule (a bare [`Fault`] fires once, on the next request).
    pub fn inject(&self, rule: impl Into<FaultRule>) {
        self.faults.push(rule);
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.recorder.requests()
    }

    fn token_accepted(&self, authorization: Option<&HeaderValue>) -> bool {
        let expected = self
            .expected_token
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(expected) = expected.as_deref() else {
            return true;
        };
        let sent = authorization.and_then(|v| v.to_str().ok());
        sent.and_then(|v| v.strip_prefix("Bearer ")) == Some(expected)
    }
}

/// A running fake API. Dropping it stops the server at once; [`ServerHandle::shutdown`] stops it
/// gracefully.
#[derive(Debug)]
pub struct ServerHandle {
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl ServerHandle {
    /// Stops accepting connections and waits for the requests in progress to finish.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Serves `api` on `addr` (port 0 picks a free port) until the handle is shut down or dropped.
pub async fn serve(
    api: Arc<FakeApi>,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, ServerHandle)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let (tx, rx) = oneshot::channel::<()>();
    let server = axum::serve(listener, router(api)).with_graceful_shutdown(async move {
        let _ = rx.await;
    });
    let task = tokio::spawn(async move { server.await });
    Ok((
        local,
        ServerHandle {
            shutdown: Some(tx),
            task: Some(task),
        },
    ))
}

/// The fake API's routes, behind the record → auth → fault front.
pub fn router(api: Arc<FakeApi>) -> Router {
    const V1: &str = "/api/hyperfleet/v1";
    const CLUSTER: &str = "/api/hyperfleet/v1/clusters/{cluster_id}";
    const NODEPOOL: &str = "/api/hyperfleet/v1/clusters/{cluster_id}/nodepools/{nodepool_id}";
    Router::new()
        .route(&format!("{V1}/clusters"), get(routes::list_clusters))
        .route(&format!("{V1}/nodepools"), get(routes::list_nodepools))
        .route(
            CLUSTER,
            get(routes::get_cluster)
                .patch(routes::patch_cluster)
                .delete(routes::delete_cluster),
        )
        .route(
            &format!("{CLUSTER}/statuses"),
            get(routes::cluster_statuses).put(routes::put_cluster_status),
        )
        .route(
            &format!("{CLUSTER}/nodepools"),
            get(routes::list_cluster_nodepools),
        )
        .route(
            NODEPOOL,
            get(routes::get_nodepool)
                .patch(routes::patch_nodepool)
                .delete(routes::delete_nodepool),
        )
        .route(
            &format!("{NODEPOOL}/statuses"),
            get(routes::nodepool_statuses).put(routes::put_nodepool_status),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(api.clone(), front))
        .layer(gzip_layer(api.clone()))
        .with_state(api)
}

/// The real API's `CompressMiddleware`: gzip for every answer (whatever its size or type) when
/// the client accepts it, while [`FakeApi::set_gzip`] is on.
fn gzip_layer(
    api: Arc<FakeApi>,
) -> tower_http::compression::CompressionLayer<impl tower_http::compression::Predicate> {
    let on = move |_: StatusCode,
                   _: axum::http::Version,
                   _: &axum::http::HeaderMap,
                   _: &axum::http::Extensions| { api.gzip.load(Ordering::Relaxed) };
    tower_http::compression::CompressionLayer::new()
        .gzip(true)
        .compress_when(on)
}

/// Records the request, checks the token, and applies the next matching fault.
async fn front(State(api): State<Arc<FakeApi>>, request: Request, next: Next) -> Response {
    if api.recorder.capacity() > 0 {
        api.recorder.record(recorded(&request));
    }
    let path = request.uri().path().to_string();
    if !api.token_accepted(request.headers().get(header::AUTHORIZATION)) {
        let detail = "Account authentication could not be verified";
        return problem(
            StatusCode::UNAUTHORIZED,
            "Authentication Required",
            detail,
            &path,
        );
    }
    match api
        .faults
        .take(&path, page_param(request.uri().query().unwrap_or("")))
    {
        None => next.run(request).await,
        Some(Fault::Delay(delay)) => {
            tokio::time::sleep(delay).await;
            next.run(request).await
        }
        Some(Fault::HoldUntilPage(page)) => {
            let start = std::time::Instant::now();
            while !api.recorder.saw_page(page) {
                if start.elapsed() > HOLD_LIMIT {
                    let detail = format!("page {page} was never requested while this one was held");
                    return problem(StatusCode::CONFLICT, "Conflict", &detail, &path);
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            next.run(request).await
        }
        Some(Fault::MalformedJson) => {
            let body = r#"{"kind":"ClusterList","page":1,"size":1,"total":1,"items":[{"id":"#;
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let title = status.canonical_reason().unwrap_or("Injected Fault");
            problem(status, title, "injected fault", &path)
        }
        Some(Fault::RetryAfter(code, value)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::TOO_MANY_REQUESTS);
            let title = status.canonical_reason().unwrap_or("Injected Fault");
            let mut response = problem(status, title, "injected fault", &path);
            if let Ok(value) = header::HeaderValue::from_str(&value) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
        Some(Fault::Body(body)) => {
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Some(Fault::Gzipped(bytes)) => {
            let headers = [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONTENT_ENCODING, "gzip"),
            ];
            (headers, bytes).into_response()
        }
    }
}

fn recorded(request: &Request) -> RecordedRequest {
    let uri = request
        .uri()
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_string();
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    RecordedRequest {
        method: request.method().to_string(),
        uri,
        headers,
    }
}

async fn not_found(request: Request) -> Response {
    let path = request.uri().path();
    problem(StatusCode::NOT_FOUND, "Not Found", "no such endpoint", path)
}

/// An RFC 9457 problem response shaped like the contract's `ProblemDetails`.
pub(super) fn problem(status: StatusCode, title: &str, detail: &str, instance: &str) -> Response {
    let slug = title.to_ascii_lowercase().replace(' ', "-");
    let body = json!({
        "type": format!("https://api.hyperfleet.io/errors/{slug}"),
        "title": title,
        "status": status.as_u16(),
        "detail": detail,
        "instance": instance,
        "code": format!("HYPERFLEET-SIM-{:03}", status.as_u16()),
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    let content_type = [(header::CONTENT_TYPE, "application/problem+json")];
    (status, content_type, body.to_string()).into_response()
}
