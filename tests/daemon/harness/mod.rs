//! What the daemon tests share: the fixtures of tests/data/daemon, fleets, bounded waits, reading
//! what was published, and one setup for each kind of test: [`fake_api`] (the fake HyperFleet API
//! on 127.0.0.1:0), [`in_process`] (a `Daemon` stepped by hand), [`serve`] (`sentinel serve` as
//! a process), with [`logs`] and [`metrics`] to read what they report.
//!
//! Every wait is a bounded poll whose bound only turns a hang into a failure.

pub mod fake_api;
pub mod in_process;
pub mod logs;
pub mod metrics;
pub mod serve;

use crate::common::rig::PATIENCE;
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use sentinel::cel::time::{Timestamp, parse_timestamp};
use sentinel::sim::api::{Collection, Fleet, sample_resource};
use serde_json::{Value as Json, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// broker.yaml's spelling: the trailing `/` is vhost `/`.
pub const RABBIT_URL: &str = "amqp://guest:guest@127.0.0.1:5672/";
/// The `now` of the in-process cycles; fleet.json's times are relative to it.
const NOW: &str = "2025-06-01T12:00:00Z";
/// The version label of the in-process metrics.
pub const VERSION: &str = "0.0.0-test";
pub const CLUSTERS: &str = "/api/hyperfleet/v1/clusters";

/// A file of tests/data/daemon.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/daemon")
        .join(name)
}

pub fn read_data(name: &str) -> String {
    let path = data(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn now() -> Timestamp {
    parse_timestamp(NOW).expect("NOW is a valid timestamp")
}

/// Polls `check` until it returns `Some`, failing with `what` after [`PATIENCE`].
pub async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A GET: status, content type and body.
pub async fn get(url: &str) -> (u16, String, String) {
    let response = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (
        status,
        content_type,
        response.text().await.expect("response body"),
    )
}

// ---------------------------------------------------------------------------------------------
// Reading what the sentinel published.

pub fn body(msg: &lapin::message::Delivery) -> String {
    String::from_utf8_lossy(&msg.data).into_owned()
}

pub fn data_id(msg: &lapin::message::Delivery) -> String {
    let event: Json = serde_json::from_slice(&msg.data).expect("event body is JSON");
    event["data"]["id"].as_str().unwrap_or_default().to_string()
}

/// The properties the Go adapters (watermill) expect: persistent, the one UUID header equal to
/// the CloudEvent id, nothing else (no content type).
pub fn assert_watermill_properties(msg: &lapin::message::Delivery) {
    let event: Json = serde_json::from_slice(&msg.data).expect("event body is JSON");
    let id = event["id"].as_str().expect("event id");
    let mut headers = FieldTable::default();
    headers.insert(
        ShortString::from("_watermill_message_uuid"),
        AMQPValue::LongString(id.to_string().into()),
    );
    let expected = BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers);
    assert_eq!(msg.properties, expected, "properties of {id}");
    assert_eq!(msg.properties.content_type(), &None);
}

// ---------------------------------------------------------------------------------------------
// Fleets.

/// The resources of tests/data/daemon/fleet.json, in file (= API) order.
pub fn fixture_fleet() -> Fleet {
    let fleet = Fleet::new();
    let items: Vec<Json> = serde_json::from_str(&read_data("fleet.json")).expect("fleet.json");
    for item in items {
        fleet
            .insert(Collection::Clusters, item)
            .expect("fleet.json resource");
    }
    fleet
}

/// `n` clusters that are new (generation 1, never reconciled): due in every cycle.
pub fn new_clusters(n: u64) -> Fleet {
    let fleet = Fleet::new();
    for i in 0..n {
        let mut resource = sample_resource(Collection::Clusters, i, &[]);
        resource["status"] = json!({"conditions": []});
        fleet
            .insert(Collection::Clusters, resource)
            .expect("sample cluster");
    }
    fleet
}

pub fn cluster_ids(fleet: &Fleet) -> Vec<String> {
    let all = fleet.list(Collection::Clusters, &Default::default(), 1, u32::MAX);
    all.items
        .iter()
        .map(|bytes| {
            let r: serde_json::Value =
                serde_json::from_slice(bytes).expect("stored resource is JSON");
            r["id"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

/// A fleet for the process: two new clusters (due every cycle), one with an empty id and one
/// reconciled just now (skipped), one per page.
pub fn process_fleet() -> (Fleet, Vec<String>) {
    let fleet = Fleet::new();
    let just_now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut fresh = sample_resource(Collection::Clusters, 2, &[]);
    fresh["status"]["conditions"][0]["last_updated_time"] = json!(just_now);
    let new = |i| {
        let mut r = sample_resource(Collection::Clusters, i, &[]);
        r["status"] = json!({"conditions": []});
        r
    };
    let mut empty = new(9);
    empty["id"] = json!("");
    let (a, b) = (new(1), new(3));
    let due = vec![
        a["id"].as_str().expect("id").to_string(),
        b["id"].as_str().expect("id").to_string(),
    ];
    for r in [a, empty, fresh, b] {
        fleet.insert(Collection::Clusters, r).expect("insert");
    }
    (fleet, due)
}
