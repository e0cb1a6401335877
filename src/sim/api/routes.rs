//! The fake API's resource handlers: list, get, patch, delete, and the adapter statuses of
//! clusters and of the nodepools nested under them.
//!
//! Takes requests already past the record → auth → fault front; gives the contract's answers:
//! JSON bodies, `application/problem+json` errors (400 bad input, 404 unknown resource, 409
//! change to a resource being deleted), 201 for a stored status report and 204 for one the API
//! discards.
//!
//! Invariant: a nodepool is only found under the cluster that owns it.

use super::fleet::{Collection, FleetError, ListFilter, Order, PutOutcome};
use super::project;
use super::status::StatusReport;
use super::{DEFAULT_PAGE_SIZE, FakeApi, MAX_PAGE_SIZE, problem};
use crate::sim::clock::parse_time;
use crate::tsl;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value as Json, json};
use std::sync::Arc;

type QueryParams = Result<Query<Vec<(String, String)>>, QueryRejection>;
type Api = State<Arc<FakeApi>>;

/// Where a single resource is addressed: a cluster, or a nodepool under its cluster.
#[derive(Clone, Debug)]
struct Target {
    collection: Collection,
    id: String,
    owner: Option<String>,
}

impl Target {
    fn cluster(id: String) -> Target {
        Target {
            collection: Collection::Clusters,
            id,
            owner: None,
        }
    }

    fn nodepool((cluster_id, id): (String, String)) -> Target {
        Target {
            collection: Collection::NodePools,
            id,
            owner: Some(cluster_id),
        }
    }

    fn instance(&self) -> String {
        match &self.owner {
            None => format!("/api/hyperfleet/v1/clusters/{}", self.id),
            Some(owner) => format!("/api/hyperfleet/v1/clusters/{owner}/nodepools/{}", self.id),
        }
    }

    /// Whether the resource exists where it is addressed.
    fn exists(&self, api: &FakeApi) -> bool {
        api.fleet
            .lookup(self.collection, &self.id)
            .is_some_and(|found| found.owner.as_deref() == self.owner.as_deref())
    }

    fn missing(&self) -> Response {
        let detail = format!("{} with id='{}' not found", self.collection.kind(), self.id);
        problem(
            StatusCode::NOT_FOUND,
            "Resource Not Found",
            &detail,
            &self.instance(),
        )
    }

    fn error(&self, err: &FleetError) -> Response {
        let (status, title) = match err {
            FleetError::NotFound { .. } => return self.missing(),
            FleetError::Deleted { .. } => (StatusCode::CONFLICT, "Resource Conflict"),
            _ => (StatusCode::BAD_REQUEST, "Bad Request"),
        };
        problem(status, title, &err.to_string(), &self.instance())
    }
}

pub(super) async fn list_clusters(State(api): Api, params: QueryParams) -> Response {
    list(&api, Collection::Clusters, None, params)
}

pub(super) async fn list_nodepools(State(api): Api, params: QueryParams) -> Response {
    list(&api, Collection::NodePools, None, params)
}

pub(super) async fn list_cluster_nodepools(
    State(api): Api,
    Path(cluster_id): Path<String>,
    params: QueryParams,
) -> Response {
    let cluster = Target::cluster(cluster_id);
    if !cluster.exists(&api) {
        return cluster.missing();
    }
    list(&api, Collection::NodePools, Some(cluster.id), params)
}

pub(super) async fn get_cluster(State(api): Api, Path(id): Path<String>) -> Response {
    get(&api, Target::cluster(id))
}

pub(super) async fn get_nodepool(State(api): Api, Path(ids): Path<(String, String)>) -> Response {
    get(&api, Target::nodepool(ids))
}

pub(super) async fn patch_cluster(
    State(api): Api,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    patch(&api, Target::cluster(id), &body)
}

pub(super) async fn patch_nodepool(
    State(api): Api,
    Path(ids): Path<(String, String)>,
    body: Bytes,
) -> Response {
    patch(&api, Target::nodepool(ids), &body)
}

pub(super) async fn delete_cluster(State(api): Api, Path(id): Path<String>) -> Response {
    delete(&api, Target::cluster(id))
}

pub(super) async fn delete_nodepool(
    State(api): Api,
    Path(ids): Path<(String, String)>,
) -> Response {
    delete(&api, Target::nodepool(ids))
}

pub(super) async fn cluster_statuses(State(api): Api, Path(id): Path<String>) -> Response {
    statuses(&api, Target::cluster(id))
}

pub(super) async fn nodepool_statuses(
    State(api): Api,
    Path(ids): Path<(String, String)>,
) -> Response {
    statuses(&api, Target::nodepool(ids))
}

pub(super) async fn put_cluster_status(
    State(api): Api,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    put_status(&api, Target::cluster(id), &body)
}

pub(super) async fn put_nodepool_status(
    State(api): Api,
    Path(ids): Path<(String, String)>,
    body: Bytes,
) -> Response {
    put_status(&api, Target::nodepool(ids), &body)
}

fn get(api: &FakeApi, target: Target) -> Response {
    match api.fleet.lookup(target.collection, &target.id) {
        Some(found) if found.owner.as_deref() == target.owner.as_deref() => bytes(found.body),
        _ => target.missing(),
    }
}

fn patch(api: &FakeApi, target: Target, body: &[u8]) -> Response {
    if !target.exists(api) {
        return target.missing();
    }
    let patch: Json = match serde_json::from_slice(body) {
        Ok(patch) => patch,
        Err(e) => return target.error(&FleetError::BadPatch(e.to_string())),
    };
    match api.fleet.patch(target.collection, &target.id, &patch) {
        Ok(body) => bytes(body),
        Err(e) => target.error(&e),
    }
}

fn delete(api: &FakeApi, target: Target) -> Response {
    if !target.exists(api) {
        return target.missing();
    }
    match api.fleet.delete(target.collection, &target.id) {
        Ok(body) => (StatusCode::ACCEPTED, bytes(body)).into_response(),
        Err(e) => target.error(&e),
    }
}

fn statuses(api: &FakeApi, target: Target) -> Response {
    if !target.exists(api) {
        return target.missing();
    }
    let items: Vec<Json> = api
        .fleet
        .statuses(target.collection, &target.id)
        .unwrap_or_default()
        .iter()
        .map(|s| s.to_json())
        .collect();
    let body = json!({"kind": "AdapterStatusList", "page": 1, "size": items.len(),
        "total": items.len(), "items": items});
    bytes(Arc::from(body.to_string().into_bytes()))
}

fn put_status(api: &FakeApi, target: Target, body: &[u8]) -> Response {
    if !target.exists(api) {
        return target.missing();
    }
    let bad = |detail: String| {
        let instance = format!("{}/statuses", target.instance());
        problem(StatusCode::BAD_REQUEST, "Bad Request", &detail, &instance)
    };
    let report: StatusReport = match serde_json::from_slice(body) {
        Ok(report) => report,
        Err(e) => return bad(format!("invalid adapter status: {e}")),
    };
    if report.adapter.is_empty() {
        return bad("adapter must not be empty".into());
    }
    let Some(observed_time) = parse_time(&report.observed_time) else {
        let detail = format!("observed_time {:?} is not RFC 3339", report.observed_time);
        return bad(detail);
    };
    match api
        .fleet
        .put_status(target.collection, &target.id, &report, observed_time)
    {
        Ok(PutOutcome::Stored { status, .. }) => {
            let body = status.to_json().to_string();
            let content_type = [(header::CONTENT_TYPE, "application/json")];
            (StatusCode::CREATED, content_type, body).into_response()
        }
        Ok(PutOutcome::Discarded(_)) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => target.error(&e),
    }
}

/// A list page of `collection`, optionally only the nodepools owned by cluster `owner`.
fn list(
    api: &FakeApi,
    collection: Collection,
    owner: Option<String>,
    params: QueryParams,
) -> Response {
    let path = match &owner {
        None => format!("/api/hyperfleet/v1/{}", collection.path()),
        Some(owner) => format!("/api/hyperfleet/v1/clusters/{owner}/nodepools"),
    };
    let bad = |title: &str, detail: String| problem(StatusCode::BAD_REQUEST, title, &detail, &path);
    let Query(params) = match params {
        Ok(params) => params,
        Err(rejection) => return bad("Bad Request", rejection.body_text()),
    };
    // As Go's `url.Values.Get`: the first value of a repeated parameter.
    let first = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let page = match number_param(first("page"), "page", 1, u32::MAX) {
        Ok(page) => page,
        Err(detail) => return bad("Bad Request", detail),
    };
    let size = match number_param(first("size"), "size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE) {
        Ok(size) => size,
        Err(detail) => return bad("Bad Request", detail),
    };
    let quirks = api.quirks();
    let order = match Order::parse(first("order")) {
        Ok(_) if quirks.ignore_order => Order::Created,
        Ok(order) => order,
        Err(detail) => return bad("Bad Request", detail),
    };
    if let Some(detail) = first("search").and_then(|s| quirks.refuses(s)) {
        return bad("Bad Request", detail);
    }
    let text = tsl::scoped(
        first("search").unwrap_or(""),
        collection.kind(),
        owner.as_deref(),
    );
    let search = match tsl::parse(&text) {
        Ok(search) => quirks.applied(search),
        Err(err) => return bad("Bad Request", err.reason),
    };
    let fields = project::requested_fields(
        params
            .iter()
            .filter(|(k, _)| k == "fields")
            .map(|(_, v)| v.as_str()),
    );
    let filter = ListFilter {
        search,
        owner: None,
    };
    let listed = api
        .fleet
        .list_ordered(collection, &filter, order, page, size);
    let body = match fields {
        Some(fields) => match projected(&fields, &listed.items, page, listed.total, &quirks) {
            Ok(body) => body,
            Err(detail) => return bad("Validation Failed", detail),
        },
        None => envelope(collection, page, &listed.items, listed.total),
    };
    if first("search").is_some() {
        quirks.listed(&api.fleet, collection, &listed.items);
    }
    api.count_served(&path, page, listed.items.len(), body.len());
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The list body as stored: `{kind, page, size, total, items}`.
fn envelope(collection: Collection, page: u32, items: &[Arc<[u8]>], total: u64) -> Vec<u8> {
    let head = format!(
        r#"{{"kind":"{}List","page":{page},"size":{},"total":{total},"items":["#,
        collection.kind(),
        items.len(),
    );
    let len = head.len() + items.iter().map(|i| i.len() + 1).sum::<usize>() + 2;
    let mut body = Vec::with_capacity(len);
    body.extend_from_slice(head.as_bytes());
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    body
}

/// The list body projected on `fields`, checked against the first item as the API checks.
fn projected(
    fields: &[String],
    items: &[Arc<[u8]>],
    page: u32,
    total: u64,
    quirks: &super::Quirks,
) -> Result<Vec<u8>, String> {
    // The store serialized every body from a `Json`, so each parses.
    let decoded: Vec<Json> = items
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap_or(Json::Null))
        .collect();
    if let Some(first) = decoded.first() {
        project::check(fields, first)?;
    }
    let projected = decoded
        .iter()
        .map(|item| quirks.projected(project::project(fields, item)))
        .collect();
    Ok(project::envelope(projected, page, total))
}

/// A numeric query parameter in `1..=max`, `default` when absent.
fn number_param(text: Option<&str>, name: &str, default: u32, max: u32) -> Result<u32, String> {
    let Some(text) = text else {
        return Ok(default);
    };
    match text.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{name} must be an integer between 1 and {max}, got {text:?}"
        )),
    }
}

fn bytes(body: Arc<[u8]>) -> Response {
    let body = Bytes::from_owner(body);
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
