//! The daemon end to end, against real parts only: the real RabbitMQ on 127.0.0.1:5672
//! (guest/guest), the fake HyperFleet API (`sentinel::sim::api`) on 127.0.0.1:0, and the real
//! `sentinel` binary with real signals.
//!
//! - In-process cycles (`Daemon::cycle` with a fixed `now`): the exact events of a mixed fleet
//!   (tests/data/daemon/{config.yaml,fleet.json,events.golden}), the AMQP properties, the
//!   resources skipped, the cycle report, the log lines and the metrics; a fetch failure mid-fleet;
//!   paging with prefetch; a broker outage and recovery; shutdown mid-cycle; `Daemon::run`.
//! - Health and readiness over HTTP.
//! - `sentinel serve` as a process: readiness, metrics, events, logs, SIGTERM mid-publish and
//!   SIGINT mid-fetch (exit 0), startup failures (exit 1, one line), `--help`.
//! - Config precedence through `sentinel config-dump`.
//!
//! RabbitMQ missing fails the tests loudly; nothing is skipped. Every wait is a bounded poll whose
//! bound only turns a hang into a failure.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use sentinel::cel::time::{Timestamp, parse_timestamp};
use sentinel::rules::Rules;
use sentinel::sentinel::api::{ApiClient, ApiClientConfig, Backoff};
use sentinel::sentinel::broker::config::{ExchangeType, RabbitConfig};
use sentinel::sentinel::broker::{Publisher, RabbitOptions, RabbitPublisher};
use sentinel::sentinel::config::{ConfigFlags, load_str};
use sentinel::sentinel::health::{self, HealthState};
use sentinel::sentinel::logging::GoFormat;
use sentinel::sentinel::metrics::Metrics;
use sentinel::sentinel::runtime::{CycleReport, Daemon};
use sentinel::sim::api::{
    Collection, FakeApi, Fault, FaultRule, Fleet, ServerHandle, sample_resource, serve,
};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/rig.rs"]
mod rig;
use proxy::Proxy;
use rig::{PATIENCE, rig, unique};

/// broker.yaml's spelling: the trailing `/` is vhost `/`.
const RABBIT_URL: &str = "amqp://guest:guest@127.0.0.1:5672/";
/// The `now` of the in-process cycles; fleet.json's times are relative to it.
const NOW: &str = "2025-06-01T12:00:00Z";
/// The version label of the in-process metrics.
const VERSION: &str = "0.0.0-test";
const CLUSTERS: &str = "/api/hyperfleet/v1/clusters";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/daemon")
        .join(name)
}

fn read_data(name: &str) -> String {
    let path = data(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn now() -> Timestamp {
    parse_timestamp(NOW).expect("NOW is a valid timestamp")
}

/// Polls `check` until it returns `Some`, failing with `what` after [`PATIENCE`].
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
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

// ---------------------------------------------------------------------------------------------
// Reading what the sentinel published.

fn body(msg: &lapin::message::Delivery) -> String {
    String::from_utf8_lossy(&msg.data).into_owned()
}

fn data_id(msg: &lapin::message::Delivery) -> String {
    let event: Json = serde_json::from_slice(&msg.data).expect("event body is JSON");
    event["data"]["id"].as_str().unwrap_or_default().to_string()
}

/// The properties the Go adapters (watermill) expect: persistent, the one UUID header equal to
/// the CloudEvent id, nothing else (no content type).
fn assert_watermill_properties(msg: &lapin::message::Delivery) {
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
// The fake API and in-process daemons.

struct FakeServer {
    api: Arc<FakeApi>,
    base_url: String,
    _server: ServerHandle,
}

async fn fake_api(fleet: Fleet) -> FakeServer {
    let api = Arc::new(FakeApi::new(Arc::new(fleet)));
    let (addr, server) = serve(api.clone(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("fake API listens");
    FakeServer {
        api,
        base_url: format!("http://{addr}"),
        _server: server,
    }
}

impl FakeServer {
    /// The list page numbers requested so far (the probe has none).
    fn pages_requested(&self) -> Vec<u32> {
        self.api
            .requests()
            .iter()
            .filter_map(|r| r.page())
            .collect()
    }
}

/// The resources of tests/data/daemon/fleet.json, in file (= API) order.
fn fixture_fleet() -> Fleet {
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
fn new_clusters(n: u64) -> Fleet {
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

fn cluster_ids(fleet: &Fleet) -> Vec<String> {
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

fn rules() -> Arc<Rules> {
    let config = load_str(
        &read_data("config.yaml"),
        "config.yaml",
        &ConfigFlags::default(),
        &|_| None,
    )
    .expect("tests/data/daemon/config.yaml loads");
    Arc::new(Rules::compile(&config).expect("tests/data/daemon/config.yaml compiles"))
}

fn fast_backoff() -> Backoff {
    Backoff {
        initial: Duration::from_millis(2),
        multiplier: 2.0,
        max_interval: Duration::from_millis(20),
        jitter: 0.1,
        max_elapsed: Duration::from_millis(200),
    }
}

/// How an in-process daemon is put together.
struct Setup<'a> {
    base_url: &'a str,
    amqp_url: &'a str,
    topic: &'a str,
    page_size: u32,
    prefetch: usize,
    poll_interval: Duration,
}

async fn daemon(setup: Setup<'_>) -> Daemon {
    let api = ApiClient::new(ApiClientConfig {
        base_url: setup.base_url.to_string(),
        page_size: setup.page_size,
        prefetch: setup.prefetch,
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .expect("api client");
    let cfg = RabbitConfig {
        url: setup.amqp_url.to_string(),
        exchange_type: ExchangeType::Fanout,
        publisher_confirm: true,
        ..Default::default()
    };
    let options = RabbitOptions {
        backoff_initial: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        ..Default::default()
    };
    let publisher = RabbitPublisher::connect(&cfg, setup.topic, options)
        .await
        .expect("publisher connects");
    Daemon {
        resource_type: "clusters".into(),
        search: None,
        topic: setup.topic.to_string(),
        poll_interval: setup.poll_interval,
        rules: rules(),
        api,
        publisher: Publisher::Rabbit(Box::new(publisher)),
        metrics: Metrics::new(VERSION, "clusters", &[], setup.topic),
        health: HealthState::new(setup.poll_interval),
    }
}

/// A shutdown channel whose sender stays alive (a dropped sender is no shutdown request).
fn no_shutdown() -> (watch::Sender<bool>, watch::Receiver<bool>) {
    watch::channel(false)
}

// ---------------------------------------------------------------------------------------------
// Metrics text and logs.

/// The value of the sample `name{labels}` in Prometheus text, if present. `labels` are the
/// series' labels besides `component` and `version`, compared as a set.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    want.insert("component".into(), "sentinel".into());
    want.insert("version".into(), VERSION.into());
    series(text, name)
        .into_iter()
        .find(|(got, _)| *got == want)
        .map(|(_, value)| value)
}

/// Every sample of metric `name`: its labels and value.
fn series(text: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((head, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (metric, labels) = match head.split_once('{') {
            Some((metric, rest)) => (metric, parse_labels(rest.trim_end_matches('}'))),
            None => (head, BTreeMap::new()),
        };
        if metric == name {
            out.push((labels, value.parse().expect("sample value")));
        }
    }
    out
}

/// `a="x",b="y \"q\""` → {a: x, b: y "q"}.
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut chars = text.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "label {key} in {text}");
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => value.push(match chars.next() {
                    Some('n') => '\n',
                    Some(other) => other,
                    None => break,
                }),
                '"' => break,
                c => value.push(c),
            }
        }
        if chars.peek() == Some(&',') {
            chars.next();
        }
        out.insert(key, value);
    }
    out
}

fn base(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut labels = vec![("resource_type", "clusters"), ("resource_selector", "all")];
    labels.extend_from_slice(extra);
    labels
}

const PUBLISHED: &str = "hyperfleet_sentinel_events_published_total";
const SKIPPED: &str = "hyperfleet_sentinel_resources_skipped_total";
const PENDING: &str = "hyperfleet_sentinel_pending_resources";
const POLLS: &str = "hyperfleet_sentinel_poll_duration_seconds_count";
const LAST_POLL: &str = "hyperfleet_sentinel_last_successful_poll_timestamp_seconds";
const API_ERRORS: &str = "hyperfleet_sentinel_api_errors_total";
const BROKER_ERRORS: &str = "hyperfleet_sentinel_broker_errors_total";
const MATCHED: &str = "message decision matched";

fn published_metric(m: &Metrics) -> f64 {
    sample(&m.render(), PUBLISHED, &base(&[("reason", MATCHED)])).unwrap_or(0.0)
}

fn last_poll(m: &Metrics) -> f64 {
    sample(&m.render(), LAST_POLL, &[]).expect("last successful poll gauge")
}

/// The log lines of this test process, written by the [`GoFormat`] JSON formatter.
///
/// One global subscriber for the whole process: a thread-local one (`set_default`) loses events
/// when other tests hit the same callsites first (tracing caches callsite interest globally).
/// Tests tell their lines apart by the `topic` field, unique per test.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs() -> &'static Logs {
    static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .event_format(GoFormat::new(true, VERSION))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        logs
    })
}

impl Logs {
    /// `(level, message)` of every line logged with this `topic` so far.
    fn lines(&self, topic: &str) -> Vec<(String, String)> {
        let bytes = self.0.lock().expect("logs").clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|line| serde_json::from_str::<Json>(line).expect("log lines are JSON"))
            .filter(|v| v["topic"] == topic)
            .map(|v| {
                let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (field("level"), field("message"))
            })
            .collect()
    }
}

fn messages_starting(lines: &[(String, String)], level: &str, prefix: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|(l, m)| l == level && m.starts_with(prefix))
        .map(|(_, m)| m.clone())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// In-process cycles.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_publishes_exactly_the_due_resources() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("cycle").await;
    let api = fake_api(fixture_fleet()).await;
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 3,
        prefetch: 2,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let logs = logs();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();

    // The sender is dropped at once: that must not read as a shutdown request.
    let (_, mut shutdown) = watch::channel(false);
    let report = daemon.cycle(now(), &mut shutdown).await;
    let expected_report = CycleReport {
        total: 8,
        published: 4,
        skipped: 3,
        failed: 0,
        completed: true,
    };
    assert_eq!(report, expected_report);

    // Exactly the four due resources, in API order, byte for byte.
    let golden: Vec<String> = read_data("events.golden")
        .lines()
        .map(str::to_string)
        .collect();
    let messages = rig.drain(&queue).await;
    let ids: Vec<String> = messages.iter().map(data_id).collect();
    assert_eq!(
        ids,
        ["cls-new", "cls-stale", "cls-unreconciled", "cls-bumped"]
    );
    for (msg, expected) in messages.iter().zip(&golden) {
        let event: Json = serde_json::from_slice(&msg.data).expect("JSON body");
        let id = event["id"].as_str().expect("id");
        let uuid = Uuid::parse_str(id).expect("event id is a UUID");
        assert_eq!(uuid.get_version_num(), 7, "{id}");
        assert_eq!(body(msg), expected.replace("{id}", id));
        assert_watermill_properties(msg);
        assert_eq!(msg.exchange.as_str(), topic);
    }

    // Metrics by name and labels.
    let text = daemon.metrics.render();
    assert_eq!(
        sample(&text, PUBLISHED, &base(&[("reason", MATCHED)])),
        Some(4.0)
    );
    let skipped = series(&text, SKIPPED);
    let reason_of = |(labels, value): &(BTreeMap<String, String>, f64)| {
        (labels.get("reason").cloned().unwrap_or_default(), *value)
    };
    let mut reasons: Vec<(String, f64)> = skipped.iter().map(reason_of).collect();
    reasons.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(reasons.len(), 2, "{text}");
    assert_eq!(reasons[0], ("message decision result is false".into(), 2.0));
    assert!(
        reasons[1]
            .0
            .starts_with("param \"ref_time\" evaluation failed: invalid field 'last_updated_time'"),
        "{reasons:?}"
    );
    assert_eq!(reasons[1].1, 1.0);
    assert_eq!(sample(&text, PENDING, &base(&[])), Some(4.0));
    assert_eq!(sample(&text, POLLS, &base(&[])), Some(1.0));
    assert!(series(&text, API_ERRORS).is_empty(), "{text}");
    assert!(series(&text, BROKER_ERRORS).is_empty(), "{text}");
    let last = last_poll(&daemon.metrics);
    assert!(last >= before.floor(), "last poll {last} before {before}");
    let broker_published = "hyperfleet_broker_messages_published_total";
    assert_eq!(
        sample(&text, broker_published, &[("topic", &topic)]),
        Some(4.0)
    );

    // Logs: one line per published event, the empty id warned about, one cycle summary.
    let lines = logs.lines(&topic);
    let published = messages_starting(&lines, "info", "Published event resource_id=");
    assert_eq!(
        published,
        [
            "Published event resource_id=cls-new",
            "Published event resource_id=cls-stale",
            "Published event resource_id=cls-unreconciled",
            "Published event resource_id=cls-bumped",
        ]
    );
    let empty = messages_starting(&lines, "warn", "Skipping resource with empty ID kind=");
    assert_eq!(empty.len(), 1, "{lines:?}");
    let summary = messages_starting(&lines, "info", "Trigger cycle completed");
    assert_eq!(summary.len(), 1, "{lines:?}");
    assert!(
        summary[0].starts_with("Trigger cycle completed total=8 published=4 skipped=3 duration="),
        "{}",
        summary[0]
    );
    assert!(summary[0].ends_with('s'), "{}", summary[0]);

    // The same `now` decides the same way: the next cycle publishes the same set again.
    let mut shutdown = no_shutdown().1;
    let again = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!(again, expected_report);
    let ids: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(
        ids,
        ["cls-new", "cls-stale", "cls-unreconciled", "cls-bumped"]
    );
    assert_eq!(published_metric(&daemon.metrics), 8.0);
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_failure_abandons_the_cycle() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("fetch-failure").await;
    let fleet = new_clusters(6);
    let ids = cluster_ids(&fleet);
    let api = fake_api(fleet).await;
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 2,
        prefetch: 2,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let (_keep, mut shutdown) = no_shutdown();

    let first = daemon.cycle(now(), &mut shutdown).await;
    assert!(first.completed && first.published == 6, "{first:?}");
    assert_eq!(rig.drain(&queue).await.len(), 6);
    let last_success = last_poll(&daemon.metrics);
    assert!(last_success > 0.0);

    // Page 2 fails on every attempt (retried, then given up): the cycle stops there.
    api.api
        .inject(FaultRule::new(Fault::Status(500)).on_page(2).always());
    let failed = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!(
        failed,
        CycleReport {
            total: 2,
            published: 2,
            skipped: 0,
            failed: 0,
            completed: false,
        }
    );
    let page_one: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(page_one, ids[..2], "page 1 published once, nothing after");
    let text = daemon.metrics.render();
    let fetch_errors = base(&[("error_type", "fetch_error")]);
    assert_eq!(sample(&text, API_ERRORS, &fetch_errors), Some(1.0));
    assert_eq!(
        last_poll(&daemon.metrics),
        last_success,
        "last success moved"
    );
    assert_eq!(sample(&text, POLLS, &base(&[])), Some(1.0));

    // The API recovers: the next cycle completes and moves the timestamp again.
    api.api.faults.clear();
    let third = daemon.cycle(now(), &mut shutdown).await;
    assert!(third.completed && third.published == 6, "{third:?}");
    assert_eq!(rig.drain(&queue).await.len(), 6);
    assert_eq!(
        sample(&daemon.metrics.render(), POLLS, &base(&[])),
        Some(2.0)
    );
    assert!(last_poll(&daemon.metrics) >= last_success);
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_fetched_ahead_are_published_in_api_order() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("paging").await;
    let fleet = new_clusters(23);
    let ids = cluster_ids(&fleet);
    let api = fake_api(fleet).await;
    // Page 2 is answered only once page 4 has been requested: proof that pages are fetched
    // ahead while earlier ones are outstanding, and yet published in order.
    api.api
        .inject(FaultRule::new(Fault::HoldUntilPage(4)).on_page(2));
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 4,
        prefetch: 3,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let (_keep, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!(
        report,
        CycleReport {
            total: 23,
            published: 23,
            skipped: 0,
            failed: 0,
            completed: true,
        }
    );
    let published: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(published, ids);
    let mut pages = api.pages_requested();
    pages.sort_unstable();
    assert_eq!(pages, [1, 2, 3, 4, 5, 6], "each page requested once");
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_failures_are_counted_and_the_next_cycle_recovers() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("outage").await;
    let proxy = Proxy::start().await;
    let fleet = new_clusters(3);
    let ids = cluster_ids(&fleet);
    let api = fake_api(fleet).await;
    let amqp_url = proxy.url();
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: &amqp_url,
        topic: &topic,
        page_size: 20,
        prefetch: 1,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let (_keep, mut shutdown) = no_shutdown();
    assert_eq!(daemon.cycle(now(), &mut shutdown).await.published, 3);
    assert_eq!(rig.drain(&queue).await.len(), 3);
    let ready = r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#;
    assert_eq!(daemon.health.readiness().1, ready);

    proxy.cut();
    let down = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!(
        down,
        CycleReport {
            total: 3,
            published: 0,
            skipped: 0,
            failed: 3,
            completed: true,
        }
    );
    let text = daemon.metrics.render();
    let publish_errors = base(&[("error_type", "publish_error")]);
    assert_eq!(sample(&text, BROKER_ERRORS, &publish_errors), Some(3.0));
    assert_eq!(published_metric(&daemon.metrics), 3.0);
    // Due resources count as pending whether or not their publish succeeded.
    assert_eq!(sample(&text, PENDING, &base(&[])), Some(3.0));
    let (code, body) = daemon.health.readiness();
    assert_eq!(code, 503);
    assert_eq!(
        body,
        r#"{"checks":{"broker":"RabbitMQ connection is not established","sentinel_poll":"ok"},"status":"error"}"#
    );

    // Back up: a later cycle (after the reconnect backoff) publishes everything again.
    proxy.restore();
    let recovered = eventually("a cycle publishing after the outage", async || {
        let report = daemon.cycle(now(), &mut shutdown).await;
        (report.published > 0).then_some(report)
    })
    .await;
    assert_eq!(recovered.published, 3, "{recovered:?}");
    let after: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(after, ids);
    assert_eq!(daemon.health.readiness().1, ready);
    assert_eq!(published_metric(&daemon.metrics), 6.0);
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_mid_fetch_abandons_the_cycle() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("stop-mid-cycle").await;
    let fleet = new_clusters(4);
    let ids = cluster_ids(&fleet);
    let api = fake_api(fleet).await;
    // Page 2 takes far longer than the wait below: only abandoning it ends the cycle in time.
    api.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(120))).on_page(2));
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 2,
        prefetch: 1,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let (stop, mut shutdown) = no_shutdown();
    let api_state = api.api.clone();
    let cycle = tokio::spawn(async move {
        let report = daemon.cycle(now(), &mut shutdown).await;
        (report, daemon)
    });
    eventually("page 2 requested", async || {
        api_state.recorder.saw_page(2).then_some(())
    })
    .await;
    stop.send(true).expect("daemon listens");
    let (report, mut daemon) = tokio::time::timeout(PATIENCE, cycle)
        .await
        .expect("the cycle stops without waiting for the held page")
        .expect("cycle task");
    assert_eq!(
        report,
        CycleReport {
            total: 2,
            published: 2,
            skipped: 0,
            failed: 0,
            completed: false,
        }
    );
    let published: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(published, ids[..2]);
    assert_eq!(
        sample(&daemon.metrics.render(), POLLS, &base(&[])),
        None,
        "an abandoned cycle is not a completed poll"
    );
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_polls_every_interval_until_shutdown() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("run").await;
    let fleet = new_clusters(2);
    let api = fake_api(fleet).await;
    // Every listing takes longer than the poll interval: overlapping cycles would pile up
    // requests, sequential ones make exactly one per cycle.
    api.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_millis(100))).always());
    let daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 20,
        prefetch: 1,
        poll_interval: Duration::from_millis(50),
    })
    .await;
    let metrics = daemon.metrics.clone();
    let (stop, shutdown) = no_shutdown();
    let running = tokio::spawn(daemon.run(shutdown));
    // Every cycle lists page 1 once; three cycles publish both resources three times.
    eventually("three cycles", async || {
        let cycles = api.pages_requested().len();
        (cycles >= 3 && published_metric(&metrics) >= 6.0).then_some(())
    })
    .await;
    stop.send(true).expect("daemon listens");
    tokio::time::timeout(PATIENCE, running)
        .await
        .expect("run returns after the shutdown request")
        .expect("run task");
    let cycles = sample(&metrics.render(), POLLS, &base(&[])).expect("polls");
    assert!(cycles >= 3.0, "{cycles}");
    // One request per completed cycle, plus at most the one abandoned at shutdown.
    let requests = api.pages_requested().len();
    assert!(
        requests == cycles as usize || requests == cycles as usize + 1,
        "{requests} listings for {cycles} cycles: cycles overlapped"
    );
    assert_eq!(published_metric(&metrics), 2.0 * cycles);
    assert_eq!(rig.drain(&queue).await.len(), 2 * cycles as usize);
    rig.cleanup().await;
}

// ---------------------------------------------------------------------------------------------
// Health and readiness over HTTP.

async fn get(url: &str) -> (u16, String, String) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_follow_the_cycles() {
    let mut rig = rig().await;
    let (topic, _queue) = rig.exchange_and_queue("health").await;
    let api = fake_api(new_clusters(1)).await;
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 20,
        prefetch: 1,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let (stop_servers, servers) = watch::channel(false);
    let until_stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (health_addr, health_task) = health::serve(
        any_port,
        health::health_router(daemon.health.clone()),
        until_stopped(servers.clone()),
    )
    .await
    .expect("health server");
    let (metrics_addr, metrics_task) = health::serve(
        any_port,
        health::metrics_router(daemon.metrics.clone()),
        until_stopped(servers),
    )
    .await
    .expect("metrics server");
    let readyz = format!("http://{health_addr}/readyz");
    let healthz = format!("http://{health_addr}/healthz");

    let (code, content_type, body) = get(&readyz).await;
    assert_eq!((code, content_type.as_str()), (503, "application/json"));
    assert_eq!(
        body,
        r#"{"checks":{"broker":"ok","sentinel_poll":"no successful poll completed yet"},"status":"error"}"#
    );
    let (_keep, mut shutdown) = no_shutdown();
    assert!(daemon.cycle(now(), &mut shutdown).await.completed);
    let (code, _, body) = get(&readyz).await;
    assert_eq!(code, 200);
    assert_eq!(
        body,
        r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#
    );
    let (code, content_type, body) = get(&healthz).await;
    assert_eq!(
        (code, content_type.as_str(), body.as_str()),
        (200, "application/json", r#"{"status":"ok"}"#)
    );
    let (code, content_type, text) = get(&format!("http://{metrics_addr}/metrics")).await;
    assert_eq!(code, 200);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert_eq!(
        sample(&text, PUBLISHED, &base(&[("reason", MATCHED)])),
        Some(1.0)
    );

    // Shutting down: every check unavailable at once.
    daemon.health.shutting_down();
    let (code, _, body) = get(&readyz).await;
    assert_eq!(code, 503);
    assert_eq!(
        body,
        r#"{"checks":{"broker":"unavailable","sentinel_poll":"unavailable"},"status":"error"}"#
    );
    stop_servers.send(true).expect("servers listen");
    health_task.await.expect("health server stops");
    metrics_task.await.expect("metrics server stops");
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_goes_stale_when_polls_stop() {
    let mut rig = rig().await;
    let (topic, _queue) = rig.exchange_and_queue("stale").await;
    let api = fake_api(new_clusters(1)).await;
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 20,
        prefetch: 1,
        poll_interval: Duration::from_millis(20),
    })
    .await;
    let (stop_servers, mut servers) = watch::channel(false);
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (addr, task) = health::serve(
        any_port,
        health::health_router(daemon.health.clone()),
        async move {
            let _ = servers.wait_for(|s| *s).await;
        },
    )
    .await
    .expect("health server");
    let (_keep, mut shutdown) = no_shutdown();
    assert!(daemon.cycle(now(), &mut shutdown).await.completed);
    // No further cycle runs: after three poll intervals the liveness probe fails.
    let healthz = format!("http://{addr}/healthz");
    let (code, body) = eventually("healthz turning stale", async || {
        let (code, _, body) = get(&healthz).await;
        (code != 200).then_some((code, body))
    })
    .await;
    assert_eq!((code, body.as_str()), (503, r#"{"status":"poll stale"}"#));
    stop_servers.send(true).expect("server listens");
    task.await.expect("server stops");
    daemon.publisher.close().await.expect("close");
    rig.cleanup().await;
}

// ---------------------------------------------------------------------------------------------
// `sentinel serve` as a process.

const BIN: &str = env!("CARGO_BIN_EXE_sentinel");

/// A temp directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(unique("daemon"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write temp file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// config.yaml and broker.yaml from the fixtures, for `topic` and the AMQP `url`.
fn serve_files(dir: &TempDir, topic: &str, amqp_url: &str) -> (PathBuf, PathBuf) {
    let config = read_data("serve.yaml").replace("{topic}", topic);
    let broker = read_data("broker.yaml").replace("{url}", amqp_url);
    (
        dir.write("config.yaml", &config),
        dir.write("broker.yaml", &broker),
    )
}

/// A free port on 127.0.0.1 (bound, then released for the child to take).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `sentinel` with a clean environment plus `env`.
fn sentinel_cmd(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_clear();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// A running `sentinel serve`: killed on drop if still running; its output collected by
/// threads.
struct Process {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    health: String,
    metrics: String,
}

/// Reads `stream` line by line on a thread until it closes.
fn collect(
    stream: impl std::io::Read + Send + 'static,
) -> (Arc<Mutex<Vec<String>>>, std::thread::JoinHandle<()>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            sink.lock().expect("lines").push(line);
        }
    });
    (lines, reader)
}

impl Process {
    fn start(config: &Path, broker: &Path, api_url: &str) -> Process {
        Process::start_env(config, broker, api_url, &[])
    }

    /// [`Process::start`] with more environment variables.
    fn start_env(config: &Path, broker: &Path, api_url: &str, env: &[(&str, &str)]) -> Process {
        let (health_port, metrics_port) = (free_port(), free_port());
        let health = format!("127.0.0.1:{health_port}");
        let metrics = format!("127.0.0.1:{metrics_port}");
        let config_flag = format!("--config={}", config.display());
        let health_flag = format!("--health-server-bindaddress={health}");
        let metrics_flag = format!("--metrics-server-bindaddress={metrics}");
        let broker_file = broker.display().to_string();
        let mut child = sentinel_cmd(
            &["serve", &config_flag, &health_flag, &metrics_flag],
            &[
                &[
                    ("BROKER_CONFIG_FILE", broker_file.as_str()),
                    ("HYPERFLEET_API_BASE_URL", api_url),
                ],
                env,
            ]
            .concat(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sentinel serve");
        let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
        let (stderr, err_reader) = collect(child.stderr.take().expect("stderr"));
        Process {
            child,
            stdout,
            stderr,
            readers: vec![out_reader, err_reader],
            health: format!("http://{health}"),
            metrics: format!("http://{metrics}"),
        }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// GET on the health server; `None` while nothing listens.
    async fn health_get(&self, path: &str) -> Option<(u16, String)> {
        let response = reqwest::get(format!("{}{path}", self.health)).await.ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    }

    async fn wait_ready(&mut self) {
        let mut tries = 0;
        loop {
            if let Some((200, _)) = self.health_get("/readyz").await {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "sentinel exited ({status}) before ready:\n{}",
                    self.output()
                );
            }
            tries += 1;
            assert!(tries < 1500, "never ready:\n{}", self.output());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (bounded) for the process to exit, then for its output to be read to the end.
    async fn wait_exit(&mut self) -> ExitStatus {
        let status = eventually("sentinel to exit", async || {
            self.child.try_wait().expect("try_wait")
        })
        .await;
        for reader in self.readers.drain(..) {
            // The pipes are closed once the process is gone, so the readers end.
            let _ = tokio::task::block_in_place(|| reader.join());
        }
        status
    }

    fn log_messages(&self) -> Vec<(String, String)> {
        self.stdout
            .lock()
            .expect("stdout")
            .iter()
            .filter_map(|line| serde_json::from_str::<Json>(line).ok())
            // Log lines only: the stdout span exporter's lines (tracing is on by default) have
            // no level.
            .filter(|v| v.get("level").is_some())
            .map(|v| {
                let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (field("level"), field("message"))
            })
            .collect()
    }

    fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.lock().expect("stdout").join("\n"),
            self.stderr.lock().expect("stderr").join("\n")
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The end of a clean shutdown: the signal logged, no error logged, nothing on stderr, and
/// `Sentinel stopped` last.
fn assert_clean_stop(process: &Process) {
    let logs = process.log_messages();
    assert!(
        logs.iter()
            .any(|(_, m)| m == "Received shutdown signal, stopping"),
        "{logs:?}"
    );
    let errors: Vec<_> = logs.iter().filter(|(l, _)| l == "error").collect();
    assert!(errors.is_empty(), "{}", process.output());
    assert_eq!(
        logs.last().map(|(_, m)| m.as_str()),
        Some("Sentinel stopped")
    );
    let stderr = process.stderr.lock().expect("stderr").clone();
    assert!(stderr.is_empty(), "{}", process.output());
}

/// A fleet for the process: two new clusters (due every cycle), one with an empty id and one
/// reconciled just now (skipped), one per page.
fn process_fleet() -> (Fleet, Vec<String>) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_publishes_and_stops_cleanly_on_sigterm_mid_publish() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("serve").await;
    let proxy = Proxy::start().await;
    let (fleet, due) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, &proxy.url());
    let mut process = Process::start(&config, &broker, &api.base_url);
    process.wait_ready().await;

    // The first cycle published the two due clusters, in API order, as CloudEvents.
    let first: Vec<String> = [rig.next(&queue).await, rig.next(&queue).await]
        .iter()
        .map(|msg| {
            assert_watermill_properties(msg);
            let event: Json = serde_json::from_slice(&msg.data).expect("JSON");
            assert_eq!(event["type"], "com.redhat.hyperfleet.cluster.reconcile");
            assert_eq!(event["source"], "hyperfleet-sentinel");
            assert_eq!(event["data"]["kind"], "Cluster");
            assert_eq!(event["data"]["generation"], 1);
            data_id(msg)
        })
        .collect();
    assert_eq!(first, due);

    let (code, body) = process.health_get("/healthz").await.expect("healthz");
    assert_eq!((code, body.as_str()), (200, r#"{"status":"ok"}"#));
    let metrics = get(&format!("{}/metrics", process.metrics)).await;
    assert_eq!(metrics.0, 200);
    let version = env!("CARGO_PKG_VERSION");
    let text = metrics.2;
    let labels = format!(
        r#"component="sentinel",reason="message decision matched",resource_selector="all",resource_type="clusters",version="{version}""#
    );
    assert!(
        text.contains(&format!("{PUBLISHED}{{{labels}}} ")),
        "{labels} missing in\n{text}"
    );
    assert!(text.contains(&format!("{POLLS}{{")), "{text}");
    assert!(text.contains(&format!("{LAST_POLL}{{")), "{text}");

    // The logs: one line per published event, the empty id warned about, a cycle summary.
    let logs = process.log_messages();
    for id in &due {
        let line = format!("Published event resource_id={id}");
        assert!(
            logs.iter().any(|(l, m)| l == "info" && *m == line),
            "{logs:?}"
        );
    }
    assert!(!messages_starting(&logs, "warn", "Skipping resource with empty ID kind=").is_empty());
    let summaries = messages_starting(&logs, "info", "Trigger cycle completed");
    assert!(
        summaries[0].starts_with("Trigger cycle completed total=4 published=2 skipped=1 duration="),
        "{summaries:?}"
    );

    // Freeze the broker link: a publish (or the confirm of one already sent) is held, so a
    // cycle is stuck mid-publish. SIGTERM then: readiness turns 503 while the page finishes.
    proxy.freeze(true);
    eventually("a publish held by the frozen broker", async || {
        (proxy.held() > 0).then_some(())
    })
    .await;
    process.signal("TERM");
    let (code, body) = eventually("readiness to report the shutdown", async || {
        process
            .health_get("/readyz")
            .await
            .filter(|(c, _)| *c != 200)
    })
    .await;
    assert_eq!(code, 503);
    assert_eq!(
        body,
        r#"{"checks":{"broker":"unavailable","sentinel_poll":"unavailable"},"status":"error"}"#
    );
    proxy.freeze(false);
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    assert!(
        process.health_get("/readyz").await.is_none(),
        "servers closed"
    );
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stops_on_sigint_while_a_page_is_held() {
    let mut rig = rig().await;
    let (topic, _queue) = rig.exchange_and_queue("sigint").await;
    let (fleet, _) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);
    let mut process = Process::start(&config, &broker, &api.base_url);
    process.wait_ready().await;
    // Page 3 now takes two minutes (the client timeout is 60s, the test's patience 30s): the
    // process can only exit in time by abandoning the cycle.
    api.api.recorder.clear();
    api.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(120))).on_page(3));
    eventually("a cycle waiting for page 3", async || {
        api.api.recorder.saw_page(3).then_some(())
    })
    .await;
    process.signal("INT");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    // Stopped while fetching (the page is abandoned) or while publishing page 1 (that page
    // finishes first): either way without waiting for the held page, and without errors.
    let logs = process.log_messages();
    assert!(
        logs.iter()
            .any(|(_, m)| m.starts_with("Shutdown requested")),
        "{logs:?}"
    );
    assert_clean_stop(&process);
    rig.cleanup().await;
}

/// Runs `sentinel serve` expecting a startup failure; returns its one stderr line.
async fn startup_failure(config: &Path, broker: &Path, api_url: &str) -> String {
    let health = format!("127.0.0.1:{}", free_port());
    startup_failure_with(config, broker, api_url, &health).await
}

/// [`startup_failure`] with the health server's address.
async fn startup_failure_with(config: &Path, broker: &Path, api_url: &str, health: &str) -> String {
    let config_flag = format!("--config={}", config.display());
    let broker_file = broker.display().to_string();
    let health_flag = format!("--health-server-bindaddress={health}");
    let metrics_flag = format!("--metrics-server-bindaddress=127.0.0.1:{}", free_port());
    let args = [
        "serve",
        config_flag.as_str(),
        health_flag.as_str(),
        metrics_flag.as_str(),
    ];
    let env = [
        ("BROKER_CONFIG_FILE", broker_file.as_str()),
        ("HYPERFLEET_API_BASE_URL", api_url),
    ];
    let mut cmd = sentinel_cmd(&args, &env);
    // A blocking wait on the child is fine: the fake API runs on the other worker thread.
    let output = tokio::task::block_in_place(|| cmd.output()).expect("run sentinel serve");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on stderr, got:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    lines[0].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_failures_exit_1_with_one_line() {
    let rig = rig().await;
    let (fleet, _) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let topic = unique("never-used");
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);

    // The API probe: one request, never retried, and the status in the message.
    for status in [404, 500] {
        api.api.recorder.clear();
        api.api.inject(
            FaultRule::new(Fault::Status(status))
                .on_path(CLUSTERS)
                .always(),
        );
        let line = startup_failure(&config, &broker, &api.base_url).await;
        assert!(
            line.contains("HyperFleet API connectivity check failed")
                && line.contains(&status.to_string()),
            "{line}"
        );
        assert_eq!(api.api.requests().len(), 1, "the probe is not retried");
        api.api.faults.clear();
    }

    // The broker: nothing listens on the port.
    let closed = format!("amqp://guest:guest@127.0.0.1:{}/", free_port());
    let dead_broker = dir.write(
        "dead-broker.yaml",
        &read_data("broker.yaml").replace("{url}", &closed),
    );
    let line = startup_failure(&config, &dead_broker, &api.base_url).await;
    assert!(line.contains("cannot connect to the broker"), "{line}");
    assert!(
        line.contains("guest:****@127.0.0.1"),
        "password masked: {line}"
    );

    // A broker.yaml problem: after the probe, one line naming the key.
    api.api.recorder.clear();
    let no_url = dir.write(
        "no-url.yaml",
        "broker:\n  type: rabbitmq\n  rabbitmq:\n    exchange_type: fanout\n",
    );
    let line = startup_failure(&config, &no_url, &api.base_url).await;
    assert!(line.contains("broker.rabbitmq.url"), "{line}");
    assert_eq!(api.api.requests().len(), 1, "the probe comes first");

    // A taken health port: the servers start last, after the broker connected.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_addr = taken.local_addr().expect("addr").to_string();
    let line = startup_failure_with(&config, &broker, &api.base_url, &taken_addr).await;
    assert!(
        line.contains(&format!("cannot listen on {taken_addr}")),
        "{line}"
    );

    // An invalid config names the key, and nothing is contacted.
    api.api.recorder.clear();
    let bad = read_data("serve.yaml").replace("poll_interval: 1s", "poll_interval: soon");
    let bad_config = dir.write("bad.yaml", &bad);
    let line = startup_failure(&bad_config, &broker, &api.base_url).await;
    assert!(line.contains("poll_interval"), "{line}");
    assert!(line.contains("bad.yaml"), "{line}");
    assert!(api.api.requests().is_empty(), "{:?}", api.api.requests());

    // A rules error is a startup failure too (rendered diagnostics, then one summary line).
    let broken = read_data("serve.yaml").replace("id: resource.id", "id: resource.idd +");
    let broken_config = dir.write("broken.yaml", &broken);
    let config_flag = format!("--config={}", broken_config.display());
    api.api.recorder.clear();
    let output = sentinel_cmd(
        &["serve", config_flag.as_str()],
        &[("HYPERFLEET_API_BASE_URL", api.base_url.as_str())],
    )
    .output()
    .expect("run sentinel serve");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("message_data.id"), "{stderr}");
    assert!(
        api.api.requests().is_empty(),
        "rules compile before the probe"
    );
    rig.cleanup().await;
}

#[test]
fn serve_help_lists_every_flag() {
    let output = sentinel_cmd(&["serve", "--help"], &[])
        .output()
        .expect("run sentinel serve --help");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--config",
        "--name",
        "--log-level",
        "--log-format",
        "--log-output",
        "--hyperfleet-api-base-url",
        "--hyperfleet-api-version",
        "--hyperfleet-api-timeout",
        "--hyperfleet-api-page-size",
        "--broker-topic",
        "--resource-type",
        "--poll-interval",
        "--debug-config",
        "--tracing-enabled",
        "--health-server-bindaddress",
        "--metrics-server-bindaddress",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    for short in [
        "-c, --config",
        "-n, --name",
        "-l, --log-level",
        "-f, --log-format",
    ] {
        assert!(help.contains(short), "{short} missing from:\n{help}");
    }
}

// ---------------------------------------------------------------------------------------------
// Config precedence through the binary.

/// `sentinel config-dump` output, parsed.
fn config_dump(config: &Path, flags: &[&str], env: &[(&str, &str)]) -> serde_yaml::Value {
    let config_flag = format!("--config={}", config.display());
    let mut args = vec!["config-dump", config_flag.as_str()];
    args.extend_from_slice(flags);
    let output = sentinel_cmd(&args, env)
        .output()
        .expect("run sentinel config-dump");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_yaml::from_str(&stdout).expect("config-dump prints YAML")
}

#[test]
fn config_precedence_is_flag_then_env_then_file() {
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &read_data("serve.yaml").replace("{topic}", "file-topic"),
    );
    let env = [
        ("HYPERFLEET_POLL_INTERVAL", "7s"),
        ("HYPERFLEET_BROKER_TOPIC", "env-topic"),
        ("HYPERFLEET_API_PAGE_SIZE", "30"),
        ("HYPERFLEET_LOG_LEVEL", "warn"),
    ];
    let flags = ["--poll-interval=9s", "--log-level", "debug"];
    let pick = |v: &serde_yaml::Value| {
        (
            v["poll_interval"].as_str().unwrap_or_default().to_string(),
            v["clients"]["broker"]["topic"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            v["clients"]["hyperfleet_api"]["page_size"]
                .as_u64()
                .unwrap_or_default(),
            v["log"]["level"].as_str().unwrap_or_default().to_string(),
        )
    };
    let file_only = pick(&config_dump(&config, &[], &[]));
    assert_eq!(
        file_only,
        ("1s".into(), "file-topic".into(), 1, "info".into())
    );
    let with_env = pick(&config_dump(&config, &[], &env));
    assert_eq!(
        with_env,
        ("7s".into(), "env-topic".into(), 30, "warn".into())
    );
    let with_flags = pick(&config_dump(&config, &flags, &env));
    assert_eq!(
        with_flags,
        ("9s".into(), "env-topic".into(), 30, "debug".into())
    );
    // An empty env var does not override the file.
    let empty = pick(&config_dump(
        &config,
        &[],
        &[("HYPERFLEET_BROKER_TOPIC", "")],
    ));
    assert_eq!(empty.1, "file-topic");
}

// ---------------------------------------------------------------------------------------------
// Operator parity (issue 10): readiness from the broker connection, dual-stack listeners, the
// probes' warnings, and the Go sentinel's log lines.

/// Every JSON line logged in this process (any topic) with `message`.
fn logged(message: &str) -> Vec<Json> {
    let bytes = logs().0.lock().expect("logs").clone();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| serde_json::from_str::<Json>(line).ok())
        .filter(|v| v["message"] == message)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_broker_connection_without_publishing() {
    let mut rig = rig().await;
    let (topic, _queue) = rig.exchange_and_queue("ready-link").await;
    let proxy = Proxy::start().await;
    // An empty fleet: no cycle ever publishes, so only the connection itself can move readiness.
    let api = fake_api(Fleet::new()).await;
    // A 1 s heartbeat: lapin gives up on a silent broker after two heartbeats.
    let amqp_url = format!("{}?heartbeat=1", proxy.url());
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: &amqp_url,
        topic: &topic,
        page_size: 20,
        prefetch: 1,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let (_keep, mut shutdown) = no_shutdown();
    assert!(daemon.cycle(now(), &mut shutdown).await.completed);
    let ready = r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#;
    assert_eq!(
        daemon.health.readiness(),
        (200.try_into().expect("code"), ready.into())
    );
    let down = r#"{"checks":{"broker":"RabbitMQ connection is not established","sentinel_poll":"ok"},"status":"error"}"#;

    // A cut: 503 as soon as lapin sees the socket close, without a publish or a cycle.
    proxy.cut();
    let body = eventually("readiness to turn 503 after the cut", async || {
        let (code, body) = daemon.health.readiness();
        (code != 200).then_some(body)
    })
    .await;
    assert_eq!(body, down);
    // Back: a cycle that publishes nothing reconnects, and readiness recovers.
    proxy.restore();
    eventually("readiness to recover after the restore", async || {
        daemon.cycle(now(), &mut shutdown).await;
        (daemon.health.readiness().0 == 200).then_some(())
    })
    .await;

    // A black hole (the connection stays open, nothing gets through): the heartbeat notices.
    proxy.freeze(true);
    let body = eventually(
        "readiness to turn 503 on a black-holed broker",
        async || {
            let (code, body) = daemon.health.readiness();
            (code != 200).then_some(body)
        },
    )
    .await;
    assert_eq!(body, down);
    proxy.freeze(false);
    daemon.publisher.close().await.expect("close");
    assert_eq!(
        daemon.health.readiness().1,
        r#"{"checks":{"broker":"RabbitMQ connection is closed","sentinel_poll":"ok"},"status":"error"}"#
    );
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_style_addresses_listen_on_ipv6_and_ipv4() {
    let state = HealthState::new(Duration::from_secs(3600));
    let addr = health::parse_bind_address(":0").expect(":0");
    let (bound, task) = health::serve(addr, health::health_router(state), std::future::pending())
        .await
        .expect("health server");
    for host in ["[::1]", "127.0.0.1"] {
        let url = format!("http://{host}:{}/healthz", bound.port());
        let (code, _, body) = get(&url).await;
        assert_eq!((code, body.as_str()), (200, r#"{"status":"ok"}"#), "{url}");
    }
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_probes_log_go_warnings() {
    logs();
    // Liveness: ok until the first poll completes, however long that takes; then stale.
    let state = HealthState::new(Duration::from_millis(1));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(state.liveness().0, 200);
    state.poll_succeeded();
    eventually("liveness to go stale", async || {
        (state.liveness().0 == 503).then_some(())
    })
    .await;
    let stale = logged("Healthz check failed: poll stale");
    let line = stale
        .iter()
        .find(|v| v["extra"]["threshold"] == "3ms")
        .unwrap_or_else(|| panic!("no stale warning with threshold 3ms: {stale:?}"));
    assert_eq!(line["level"], "warn");
    assert!(
        line["extra"]["staleness"]
            .as_str()
            .is_some_and(|s| s.ends_with('s')),
        "{line}"
    );
    // Readiness: the failing checks as extras, Go's `checks` map.
    let state = HealthState::new(Duration::from_secs(3600));
    assert_eq!(state.readiness().0, 503);
    let failed = logged("Readyz check failed");
    assert!(
        failed.iter().any(|v| v["level"] == "warn"
            && v["extra"]["checks"]
                == json!({"broker": "ok", "sentinel_poll": "no successful poll completed yet"})),
        "{failed:?}"
    );
}

impl Process {
    /// `sentinel serve` listening on Go-style `:PORT` addresses (every interface, dual-stack),
    /// with extra environment.
    fn start_anywhere(
        config: &Path,
        broker: &Path,
        api_url: &str,
        env: &[(&str, &str)],
    ) -> Process {
        let (health_port, metrics_port) = (free_port(), free_port());
        let config_flag = format!("--config={}", config.display());
        let health_flag = format!("--health-server-bindaddress=:{health_port}");
        let metrics_flag = format!("--metrics-server-bindaddress=:{metrics_port}");
        let broker_file = broker.display().to_string();
        let mut all_env = vec![
            ("BROKER_CONFIG_FILE", broker_file.as_str()),
            ("HYPERFLEET_API_BASE_URL", api_url),
        ];
        all_env.extend_from_slice(env);
        let mut child = sentinel_cmd(
            &["serve", &config_flag, &health_flag, &metrics_flag],
            &all_env,
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sentinel serve");
        let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
        let (stderr, err_reader) = collect(child.stderr.take().expect("stderr"));
        Process {
            child,
            stdout,
            stderr,
            readers: vec![out_reader, err_reader],
            health: format!("http://[::1]:{health_port}"),
            metrics: format!("http://127.0.0.1:{metrics_port}"),
        }
    }

    /// Every stdout line as JSON.
    fn json_lines(&self) -> Vec<Json> {
        self.stdout
            .lock()
            .expect("stdout")
            .iter()
            .filter_map(|line| serde_json::from_str::<Json>(line).ok())
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_the_go_lines_and_only_its_own_debug_records() {
    let mut rig = rig().await;
    let (topic, _queue) = rig.exchange_and_queue("golines").await;
    let (fleet, _) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);
    let mut process = Process::start_anywhere(
        &config,
        &broker,
        &api.base_url,
        &[("HYPERFLEET_LOG_LEVEL", "debug")],
    );
    // Ready over IPv6 ([::1]); the metrics over IPv4, from the same `:PORT` listeners.
    process.wait_ready().await;
    let (code, _, _) = get(&format!("{}/metrics", process.metrics)).await;
    assert_eq!(code, 200);
    eventually("a cycle summary", async || {
        (!messages_starting(&process.log_messages(), "info", "Trigger cycle completed").is_empty())
            .then_some(())
    })
    .await;
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());

    let lines = process.json_lines();
    let first = &lines[0];
    assert_eq!(first["message"], "Starting HyperFleet Sentinel", "{first}");
    assert_eq!(first["extra"]["log_level"], "debug", "{first}");
    assert_eq!(first["extra"]["log_format"], "json", "{first}");
    assert!(first["extra"]["commit"].is_string(), "{first}");
    let infos: Vec<String> = lines
        .iter()
        .filter(|v| v["level"] == "info")
        .map(|v| v["message"].as_str().unwrap_or_default().to_string())
        .collect();
    let health_port = process.health.rsplit(':').next().expect("port");
    let metrics_port = process.metrics.rsplit(':').next().expect("port");
    let in_order = [
        "Starting HyperFleet Sentinel".to_string(),
        "Initialized HyperFleet client".into(),
        "Initialized broker publisher".into(),
        format!("Starting health server on :{health_port}"),
        format!("Starting metrics server on :{metrics_port}"),
        "Starting sentinel loop".into(),
        "Starting sentinel resource_type=clusters poll_interval=1s".into(),
        "Fetched resources count=4 label_selectors=0".into(),
    ];
    let mut at = 0;
    for expected in &in_order {
        let found = infos[at..].iter().position(|m| m == expected);
        at += found.unwrap_or_else(|| panic!("{expected:?} missing or out of order in {infos:#?}"))
            + 1;
    }
    // Debug shows the sentinel's own records (a skipped resource), not those of its libraries.
    let debug: Vec<&str> = lines
        .iter()
        .filter(|v| v["level"] == "debug")
        .map(|v| v["message"].as_str().unwrap_or_default())
        .collect();
    assert!(
        debug
            .iter()
            .any(|m| m.starts_with("Skipped resource resource_id=")),
        "{debug:?}"
    );
    let foreign: Vec<&&str> = debug
        .iter()
        .filter(|m| !m.starts_with("Skipped resource resource_id="))
        .collect();
    assert!(foreign.is_empty(), "third-party debug records: {foreign:?}");
    rig.cleanup().await;
}

// =============================================================================================
// BEGIN issue 10 (operator parity): the binary run as the Go chart's Deployment runs it.
//
// The Deployment (charts/templates/deployment.yaml of the Go repo, default values) runs the
// image's entrypoint `/app/sentinel` with args `serve --config=/etc/hyperfleet/config.yaml`,
// env BROKER_CONFIG_FILE=/etc/hyperfleet/broker.yaml, BROKER_RABBITMQ_URL (from its Secret) and
// HYPERFLEET_TRACING_ENABLED="false", the rendered ConfigMaps mounted read-only, a read-only
// root filesystem, and probes on ports 8080 (/healthz, /readyz) and 9090 (/metrics) that the
// binary's default bind addresses serve. The test runs the rendered files of tests/data/chart
// at their checked-in paths (the args keep the `--config=` form), substitutes loopback hosts
// through the env the chart's keys answer to (HYPERFLEET_API_BASE_URL; BROKER_RABBITMQ_URL is
// the chart's own), a unique HYPERFLEET_BROKER_TOPIC so parallel runs do not share an exchange,
// and free ports for the two servers (binding :8080 and :9090 here could collide with other
// test runs; that the defaults are those ports is checked from `serve --help`).
//
// "A working directory it cannot write": the tests run as root, for whom a 0555 directory is
// still writable, so the test checks what matters on a read-only root filesystem instead: the
// child runs in an empty 0555 directory and must leave it empty (it neither needs nor creates
// a file in its working directory).
// =============================================================================================

fn chart_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/chart")
        .join(name)
}

#[test]
fn chart_probe_ports_are_the_serve_defaults() {
    let output = sentinel_cmd(&["serve", "--help"], &[])
        .output()
        .expect("run sentinel serve --help");
    let help = String::from_utf8_lossy(&output.stdout);
    for (flag, default) in [
        ("--health-server-bindaddress", "[default: :8080]"),
        ("--metrics-server-bindaddress", "[default: :9090]"),
    ] {
        let line = help
            .lines()
            .skip_while(|l| !l.contains(flag))
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(line.contains(default), "{flag} {default} in:\n{help}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_as_the_go_charts_deployment_runs_it() {
    let mut rig = rig().await;
    // The chart's exchange_type is topic: the sentinel declares its exchange so; bind to all.
    let topic = rig.exchange("chart");
    rig.declare(&topic, lapin::ExchangeKind::Topic).await;
    let queue = rig.bind(&topic, "#", FieldTable::default()).await;
    let (fleet, due) = process_fleet();
    let api = fake_api(fleet).await;

    let cwd = TempDir::new();
    let set_mode = |mode| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cwd.0, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    set_mode(0o555);
    let (health, metrics) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let config_flag = format!("--config={}", chart_data("config.yaml").display());
    let broker_file = chart_data("broker.yaml").display().to_string();
    let child = sentinel_cmd(
        &[
            "serve",
            &config_flag,
            &format!("--health-server-bindaddress={health}"),
            &format!("--metrics-server-bindaddress={metrics}"),
        ],
        &[
            ("BROKER_CONFIG_FILE", &broker_file),
            ("BROKER_RABBITMQ_URL", RABBIT_URL),
            ("HYPERFLEET_TRACING_ENABLED", "false"),
            ("HYPERFLEET_API_BASE_URL", &api.base_url),
            ("HYPERFLEET_BROKER_TOPIC", &topic),
        ],
    )
    .current_dir(&cwd.0)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn sentinel serve");
    let mut child = child;
    let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
    let (stderr, err_reader) = collect(child.stderr.take().expect("stderr"));
    let mut process = Process {
        child,
        stdout,
        stderr,
        readers: vec![out_reader, err_reader],
        health: format!("http://{health}"),
        metrics: format!("http://{metrics}"),
    };
    process.wait_ready().await;

    // Probes: liveness and readiness as the kubelet asks for them.
    let (code, body) = process.health_get("/healthz").await.expect("healthz");
    assert_eq!((code, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (code, _) = process.health_get("/readyz").await.expect("readyz");
    assert_eq!(code, 200);

    // Events: the two due clusters, as CloudEvents; the source is Go's constant, not the
    // chart's sentinel.name.
    let mut published = Vec::new();
    for _ in 0..due.len() {
        let msg = rig.next(&queue).await;
        assert_watermill_properties(&msg);
        let event: Json = serde_json::from_slice(&msg.data).expect("JSON");
        assert_eq!(event["type"], "com.redhat.hyperfleet.cluster.reconcile");
        assert_eq!(event["source"], "hyperfleet-sentinel");
        let keys: Vec<&str> = event["data"]
            .as_object()
            .expect("data")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["generation", "href", "id", "kind"]);
        published.push(data_id(&msg));
    }
    assert_eq!(published, due);

    // Metrics, as the chart's ServiceMonitor scrapes them.
    let (code, _, text) = get(&format!("{}/metrics", process.metrics)).await;
    assert_eq!(code, 200);
    let version = env!("CARGO_PKG_VERSION");
    let labels = format!(
        r#"component="sentinel",reason="message decision matched",resource_selector="all",resource_type="clusters",version="{version}""#
    );
    assert!(
        text.contains(&format!("{PUBLISHED}{{{labels}}} 2")),
        "{labels} missing in\n{text}"
    );
    assert!(text.contains(&format!("{LAST_POLL}{{")), "{text}");

    // Pod termination: SIGTERM, exit 0, a clean stop; nothing written to the working directory.
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    let left: Vec<_> = std::fs::read_dir(&cwd.0)
        .expect("read cwd")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the sentinel wrote to its working directory: {left:?}"
    );
    set_mode(0o755);
    rig.cleanup().await;
}

/// The metric names `sentinel serve` exports, every series made to appear once; a histogram
/// counts as its `_bucket`, `_sum` and `_count` series.
fn exported_metric_names() -> Vec<String> {
    let m = Metrics::new(VERSION, "clusters", &[], "topic");
    m.published("message decision matched");
    m.skipped("message decision result is false");
    m.publish_failed();
    m.api_error("fetch_error");
    m.cycle(1, 0.5, Some(1.0));
    let mut names = Vec::new();
    for line in m.render().lines() {
        let mut words = line.split_whitespace();
        if let (Some("#"), Some("TYPE"), Some(name), Some(kind)) =
            (words.next(), words.next(), words.next(), words.next())
        {
            names.push(name.to_string());
            if kind == "histogram" {
                names.extend(["_bucket", "_sum", "_count"].map(|s| format!("{name}{s}")));
            }
        }
    }
    names
}

/// The sentinel metric names an expression uses.
fn queried_metrics(expr: &str) -> Vec<String> {
    let name = regex::Regex::new(r"\bhyperfleet_[a-z_]+").expect("regex");
    name.find_iter(expr)
        .map(|m| m.as_str().to_string())
        .collect()
}

fn docs(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn alert_rules_and_dashboard_query_only_exported_metrics() {
    let exported = exported_metric_names();
    assert!(exported.len() >= 9, "{exported:?}");
    let unknown = |exprs: &[String]| -> Vec<String> {
        exprs
            .iter()
            .flat_map(|e| queried_metrics(e))
            .filter(|n| !exported.contains(n))
            .collect()
    };

    let rules: serde_yaml::Value =
        serde_yaml::from_str(&docs("prometheus-rules.yaml")).expect("prometheus-rules.yaml parses");
    assert_eq!(rules["kind"].as_str(), Some("PrometheusRule"));
    let alerts = rules["spec"]["groups"][0]["rules"]
        .as_sequence()
        .expect("rules");
    let runbook = docs("runbook.md");
    let mut exprs = Vec::new();
    for alert in alerts {
        let name = alert["alert"].as_str().expect("alert name");
        let expr = alert["expr"].as_str().expect("expr").to_string();
        assert!(
            name == "SentinelDown" || !queried_metrics(&expr).is_empty(),
            "{name}: {expr}"
        );
        assert!(
            runbook.contains(&format!("\n## {name}\n")),
            "runbook.md has no section for {name}"
        );
        let anchor = format!("docs/runbook.md#{}", name.to_lowercase());
        assert_eq!(
            alert["annotations"]["runbook_url"].as_str(),
            Some(anchor.as_str())
        );
        exprs.push(expr);
    }
    assert_eq!(alerts.len(), 8, "the Go chart's eight alerts");
    assert_eq!(
        unknown(&exprs),
        Vec::<String>::new(),
        "prometheus-rules.yaml"
    );

    let dashboard: Json = serde_json::from_str(&docs("grafana-dashboard.json"))
        .expect("grafana-dashboard.json parses");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            exprs.push(target["expr"].as_str().expect("expr").to_string());
        }
    }
    if let Some(vars) = dashboard["templating"]["list"].as_array() {
        exprs.extend(
            vars.iter()
                .filter_map(|v| v["query"].as_str().map(String::from)),
        );
    }
    assert!(exprs.len() >= 8, "{exprs:?}");
    assert_eq!(
        unknown(&exprs),
        Vec::<String>::new(),
        "grafana-dashboard.json"
    );

    // The reference lists every metric family.
    let reference = docs("metrics.md");
    for name in exported
        .iter()
        .filter(|n| !n.ends_with("_bucket") && !n.ends_with("_sum") && !n.ends_with("_count"))
    {
        assert!(
            reference.contains(&format!("`{name}`")),
            "metrics.md lacks {name}"
        );
    }
}

#[test]
fn the_metric_guard_can_fail() {
    let exported = exported_metric_names();
    let bogus = queried_metrics("rate(hyperfleet_sentinel_no_such_thing_total[5m]) > 0");
    assert_eq!(bogus, ["hyperfleet_sentinel_no_such_thing_total"]);
    assert!(!exported.contains(&bogus[0]));
}

// END issue 10 (operator parity).
// =============================================================================================

// ---- google pub/sub (issue 12; against Google's emulator, tests/common/pubsub.rs) ----

#[path = "common/pubsub.rs"]
mod pubsub;

use sentinel::sentinel::broker::config::PubSubConfig;
use sentinel::sentinel::broker::{PubSubOptions, PubSubPublisher};

/// An in-process daemon publishing to `topic` on the emulator at `emulator_host`.
async fn pubsub_daemon(
    base_url: &str,
    emulator_host: String,
    topic: &str,
    page_size: u32,
) -> Daemon {
    let api = ApiClient::new(ApiClientConfig {
        base_url: base_url.to_string(),
        page_size,
        prefetch: 0,
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .expect("api client");
    let cfg = PubSubConfig {
        project_id: pubsub::PROJECT.to_string(),
        create_topic_if_missing: true,
        ..Default::default()
    };
    let options = PubSubOptions {
        emulator_host: Some(emulator_host),
        probe_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let publisher = PubSubPublisher::connect(&cfg, topic, options)
        .await
        .expect("pub/sub clients");
    let poll_interval = Duration::from_secs(3600);
    Daemon {
        resource_type: "clusters".into(),
        search: None,
        topic: topic.to_string(),
        poll_interval,
        rules: rules(),
        api,
        publisher: Publisher::PubSub(Box::new(publisher)),
        metrics: Metrics::new(VERSION, "clusters", &[], topic),
        health: HealthState::new(poll_interval),
    }
}

fn pulled_ids(pulled: &[pubsub::Pulled]) -> Vec<String> {
    pulled
        .iter()
        .map(|m| {
            let event: Json = serde_json::from_slice(&m.data).expect("event data is JSON");
            event["data"]["id"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_emulator_stopped_mid_cycle_and_restarted() {
    let logs = logs();
    // Its own emulator: this test kills it.
    let mut emulator =
        tokio::task::block_in_place(|| pubsub::Emulator::start_on(pubsub::free_port()));
    let port = emulator.port;
    let topic = pubsub::unique("outage");
    let sub = format!("{topic}-adapter");
    emulator.create_topic(&topic).await;
    emulator.subscribe(&topic, &sub, false).await;
    let fleet = new_clusters(6);
    let ids = cluster_ids(&fleet);
    let api = fake_api(fleet).await;
    // Page 2 arrives late, so the emulator can be stopped after page 1 went out: mid-cycle.
    api.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(2))).on_page(2));
    let mut daemon = pubsub_daemon(&api.base_url, emulator.host(), &topic, 2).await;
    let ready = r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#;
    let (_keep, mut shutdown) = no_shutdown();

    let (report, first) = tokio::join!(daemon.cycle(now(), &mut shutdown), async {
        let first = emulator.pull_exactly(&sub, 2, PATIENCE).await;
        tokio::task::block_in_place(|| emulator.stop());
        first
    });
    assert_eq!(pulled_ids(&first), ids[..2]);
    assert_eq!(
        report,
        CycleReport {
            total: 6,
            published: 2,
            skipped: 0,
            failed: 4,
            completed: true,
        }
    );
    let text = daemon.metrics.render();
    let publish_errors = base(&[("error_type", "publish_error")]);
    assert_eq!(sample(&text, BROKER_ERRORS, &publish_errors), Some(4.0));
    assert_eq!(published_metric(&daemon.metrics), 2.0);
    let lines = logs.lines(&topic);
    assert_eq!(
        messages_starting(&lines, "error", "Failed to publish event resource_id=").len(),
        4,
        "{lines:?}"
    );
    let (code, body) = eventually("readiness to see the emulator gone", async || {
        Some(daemon.health.readiness()).filter(|(c, _)| *c != 200)
    })
    .await;
    assert_eq!(code, 503);
    let checks: Json = serde_json::from_str(&body).expect("readiness JSON");
    let broker = checks["checks"]["broker"].as_str().unwrap_or_default();
    assert!(
        broker.starts_with("google pub/sub health check failed: "),
        "{body}"
    );
    assert_eq!(checks["checks"]["sentinel_poll"], "ok");

    // Restarted (empty, as the emulator keeps nothing): the adapter's subscription comes back
    // and readiness recovers without a cycle.
    let emulator = tokio::task::block_in_place(|| pubsub::Emulator::start_on(port));
    emulator.create_topic(&topic).await;
    emulator.subscribe(&topic, &sub, false).await;
    eventually("readiness to recover", async || {
        (daemon.health.readiness().1 == ready).then_some(())
    })
    .await;
    // The next cycle publishes every resource still due, each once.
    let again = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!((again.published, again.failed), (6, 0), "{again:?}");
    let mut after = pulled_ids(&emulator.pull_exactly(&sub, 6, PATIENCE).await);
    after.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(after, want, "every due resource once");
    assert_eq!(published_metric(&daemon.metrics), 8.0);
    daemon.publisher.close().await.expect("close");
}

/// `sentinel serve` publishing to the emulator at `emulator_host` (as `PUBSUB_EMULATOR_HOST`).
fn start_pubsub_process(
    config: &Path,
    broker: &Path,
    api_url: &str,
    emulator_host: &str,
) -> Process {
    let (health_port, metrics_port) = (free_port(), free_port());
    let health = format!("127.0.0.1:{health_port}");
    let metrics = format!("127.0.0.1:{metrics_port}");
    let config_flag = format!("--config={}", config.display());
    let health_flag = format!("--health-server-bindaddress={health}");
    let metrics_flag = format!("--metrics-server-bindaddress={metrics}");
    let broker_file = broker.display().to_string();
    let mut child = sentinel_cmd(
        &["serve", &config_flag, &health_flag, &metrics_flag],
        &[
            ("BROKER_CONFIG_FILE", &broker_file),
            ("HYPERFLEET_API_BASE_URL", api_url),
            ("PUBSUB_EMULATOR_HOST", emulator_host),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn sentinel serve");
    let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
    let (stderr, err_reader) = collect(child.stderr.take().expect("stderr"));
    Process {
        child,
        stdout,
        stderr,
        readers: vec![out_reader, err_reader],
        health: format!("http://{health}"),
        metrics: format!("http://{metrics}"),
    }
}

/// `serve` on an emulator of its own (the test may freeze it), its topic subscribed, over the
/// process fleet; ready.
struct ServeOnPubSub {
    emulator: pubsub::Emulator,
    sub: String,
    due: Vec<String>,
    api: FakeServer,
    _dir: TempDir,
    process: Process,
}

async fn serve_on_own_emulator(name: &str) -> ServeOnPubSub {
    let emulator = tokio::task::block_in_place(|| pubsub::Emulator::start_on(pubsub::free_port()));
    let topic = pubsub::unique(name);
    let sub = format!("{topic}-adapter");
    emulator.create_topic(&topic).await;
    emulator.subscribe(&topic, &sub, false).await;
    let (fleet, due) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &read_data("serve.yaml").replace("{topic}", &topic),
    );
    let broker = dir.write(
        "broker.yaml",
        &format!(
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: {}\n",
            pubsub::PROJECT
        ),
    );
    let mut process = start_pubsub_process(&config, &broker, &api.base_url, &emulator.host());
    process.wait_ready().await;
    ServeOnPubSub {
        emulator,
        sub,
        due,
        api,
        _dir: dir,
        process,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_pubsub_stops_cleanly_on_sigterm_mid_publish() {
    // Its own emulator: this test freezes it.
    let ServeOnPubSub {
        emulator,
        sub,
        due,
        api,
        _dir,
        mut process,
    } = serve_on_own_emulator("serve").await;
    // Every cycle (1 s) publishes the two due clusters, and only those.
    let first = emulator.pull_at_least(&sub, 2, PATIENCE).await;
    for id in pulled_ids(&first) {
        assert!(due.contains(&id), "{id} is not due");
    }

    // Freeze the emulator (SIGSTOP): the next cycle's first publish is held, unanswered.
    emulator.freeze(true);
    let before = api.pages_requested().len();
    eventually("the next cycle to fetch its first page", async || {
        (api.pages_requested().len() > before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    process.signal("TERM");
    let (code, body) = eventually("readiness to report the shutdown", async || {
        process
            .health_get("/readyz")
            .await
            .filter(|(c, _)| *c != 200)
    })
    .await;
    assert_eq!(code, 503);
    assert_eq!(
        body,
        r#"{"checks":{"broker":"unavailable","sentinel_poll":"unavailable"},"status":"error"}"#
    );
    // The emulator answers again within the publish timeout: the held publish finishes, then
    // the process exits 0 with no error logged.
    tokio::time::sleep(Duration::from_secs(1)).await;
    emulator.freeze(false);
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    // No "Failed to publish" was logged (assert_clean_stop): the held publish went out.
    let held = emulator.pull_at_least(&sub, 1, PATIENCE).await;
    for id in pulled_ids(&held) {
        assert!(due.contains(&id), "{id} is not due");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_pubsub_exits_0_when_a_held_publish_times_out_after_sigterm() {
    // Its own emulator: this test freezes it for good.
    let ServeOnPubSub {
        emulator,
        sub,
        api,
        _dir,
        mut process,
        ..
    } = serve_on_own_emulator("held").await;
    emulator.pull_at_least(&sub, 2, PATIENCE).await;
    emulator.freeze(true);
    let before = api.pages_requested().len();
    eventually("the next cycle to fetch its first page", async || {
        (api.pages_requested().len() > before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    process.signal("TERM");
    // The emulator never answers: the held publish times out (5 s), is logged as failed, and
    // the process still exits 0.
    let status = process.wait_exit().await;
    emulator.freeze(false);
    assert_eq!(status.code(), Some(0), "{}", process.output());
    let logs = process.log_messages();
    assert!(
        !messages_starting(&logs, "error", "Failed to publish event resource_id=").is_empty(),
        "{}",
        process.output()
    );
    assert_eq!(
        logs.last().map(|(_, m)| m.as_str()),
        Some("Sentinel stopped"),
        "{}",
        process.output()
    );
}

// ---- OpenTelemetry tracing ----

#[path = "common/otlp.rs"]
mod otlp;
use sentinel::sentinel::telemetry::{self, Telemetry, TraceSettings, Tracing};

/// Settings as an empty environment gives them, with a test service name and resource.
fn trace_settings() -> TraceSettings {
    let env = |name: &str| match name {
        "OTEL_SERVICE_NAME" => Some("sentinel-test".to_string()),
        "OTEL_RESOURCE_ATTRIBUTES" => Some("deployment.environment=test".to_string()),
        _ => None,
    };
    TraceSettings::from_env(&env)
}

/// A daemon of `setup` whose API client (and so its loop) traces with `tracing`.
async fn traced_daemon(setup: Setup<'_>, tracing: Tracing) -> Daemon {
    let mut daemon = daemon(Setup { ..setup }).await;
    let mut config = daemon.api.config().clone();
    config.tracing = tracing;
    daemon.api = ApiClient::new(config).expect("api client");
    daemon
}

/// Flushes the provider's last spans (shutdown is blocking: off the async workers).
async fn flush(telemetry: Telemetry) {
    tokio::task::spawn_blocking(move || telemetry.shutdown(telemetry::SHUTDOWN_TIMEOUT))
        .await
        .expect("shutdown task")
        .expect("spans flushed");
}

/// The raw JSON log lines logged in-process with `topic`.
fn raw_log_lines(topic: &str) -> Vec<Json> {
    let bytes = logs().0.lock().expect("logs").clone();
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(|line| serde_json::from_str::<Json>(line).expect("log lines are JSON"))
        .filter(|v| v["topic"] == topic)
        .collect()
}

fn traceparent_of(event: &Json) -> Option<&str> {
    event.get("traceparent").and_then(Json::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_cycle_exports_its_span_tree_over_grpc() {
    use opentelemetry_otlp::WithExportConfig as _;
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("traced").await;
    let api = fake_api(new_clusters(3)).await;
    let receiver = otlp::grpc_receiver().await;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(receiver.endpoint())
        .build()
        .expect("gRPC exporter");
    let telemetry = telemetry::with_exporter(exporter, &trace_settings(), "9.9.9");
    let setup = Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 2,
        prefetch: 2,
        poll_interval: Duration::from_secs(3600),
    };
    let mut daemon = traced_daemon(setup, telemetry.tracing()).await;
    let logs = logs();
    let (_tx, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!((report.total, report.published), (3, 3), "{report:?}");
    let events: Vec<Json> = [
        rig.next(&queue).await,
        rig.next(&queue).await,
        rig.next(&queue).await,
    ]
    .iter()
    .map(|msg| serde_json::from_slice(&msg.data).expect("event JSON"))
    .collect();
    flush(telemetry).await;
    let spans = eventually("the cycle's spans at the receiver", async || {
        let all = receiver.spans.all();
        (all.iter().filter(|s| s.name.ends_with(" publish")).count() == 3).then_some(all)
    })
    .await;
    let _ = logs;

    // One root per cycle, with the resource the provider was given.
    let polls: Vec<_> = spans.iter().filter(|s| s.name == "sentinel.poll").collect();
    assert_eq!(polls.len(), 1, "{spans:#?}");
    let poll = polls[0];
    assert_eq!(poll.parent_span_id, "");
    assert_eq!(poll.attr("hyperfleet.resource_type"), Some("clusters"));
    assert_eq!(poll.status.0, 0, "unset status");
    for span in &spans {
        assert_eq!(
            span.trace_id, poll.trace_id,
            "one trace per cycle: {span:?}"
        );
        assert_eq!(span.scope, "hyperfleet-sentinel");
        assert_eq!(span.resource_attr("service.name"), Some("sentinel-test"));
        assert_eq!(span.resource_attr("service.version"), Some("9.9.9"));
        assert_eq!(span.resource_attr("deployment.environment"), Some("test"));
    }

    // The page GETs: client spans under the poll, and the requests carried their context.
    let gets: Vec<_> = spans.iter().filter(|s| s.name == "HTTP GET").collect();
    let page_requests: Vec<_> = api
        .api
        .requests()
        .into_iter()
        .filter(|r| r.page().is_some())
        .collect();
    assert_eq!(gets.len(), page_requests.len(), "{spans:#?}");
    assert_eq!(gets.len(), 2, "3 clusters in pages of 2");
    for get in &gets {
        assert_eq!(get.kind, 3, "client span");
        assert_eq!(get.parent_span_id, poll.span_id);
        assert_eq!(get.attr("http.request.method"), Some("GET"));
        assert_eq!(get.attr("http.response.status_code"), Some("200"));
        assert!(
            get.attr("url.full")
                .is_some_and(|u| u.contains("/clusters?")),
            "{get:?}"
        );
    }
    for request in &page_requests {
        let header = request.header("traceparent").expect("traceparent header");
        let parts: Vec<&str> = header.split('-').collect();
        assert_eq!(parts.len(), 4, "{header}");
        assert_eq!(parts[0], "00");
        assert_eq!(
            parts[1], poll.trace_id,
            "the request carries the poll's trace"
        );
        assert!(
            gets.iter().any(|g| g.span_id == parts[2]),
            "names its GET span: {header}"
        );
        assert_eq!(parts[3], "01");
    }

    // One evaluate span per resource under the poll; one publish span under each.
    let ids = cluster_ids(&new_clusters(3));
    let evaluates: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "sentinel.evaluate")
        .collect();
    assert_eq!(evaluates.len(), 3);
    let publish_name = format!("{topic} publish");
    for event in &events {
        let id = event["data"]["id"].as_str().expect("data.id");
        assert!(ids.iter().any(|i| i == id));
        let eval = evaluates
            .iter()
            .find(|s| s.attr("hyperfleet.resource_id") == Some(id))
            .expect("an evaluate span per resource");
        assert_eq!(eval.parent_span_id, poll.span_id);
        assert_eq!(eval.attr("hyperfleet.resource_type"), Some("clusters"));
        assert_eq!(
            eval.attr("hyperfleet.decision_reason"),
            Some("message decision matched")
        );
        let publish = spans
            .iter()
            .find(|s| s.name == publish_name && s.parent_span_id == eval.span_id)
            .expect("a publish span under the evaluate span");
        assert_eq!(publish.attr("messaging.system"), Some("rabbitmq"));
        assert_eq!(publish.attr("messaging.operation.type"), Some("publish"));
        assert_eq!(
            publish.attr("messaging.destination.name"),
            Some(topic.as_str())
        );
        assert_eq!(publish.attr("messaging.message.id"), event["id"].as_str());
        assert_eq!(publish.status.0, 0);
        // The event names its publish span, and the extension follows `data`.
        let want = format!("00-{}-{}-01", poll.trace_id, publish.span_id);
        assert_eq!(traceparent_of(event), Some(want.as_str()));
        let keys: Vec<&String> = event.as_object().expect("object").keys().collect();
        assert_eq!(
            keys.last().map(|k| k.as_str()),
            Some("traceparent"),
            "{keys:?}"
        );

        // Its log line was written under the evaluate span.
        let line = format!("Published event resource_id={id}");
        let logged = raw_log_lines(&topic)
            .into_iter()
            .find(|v| v["message"] == line.as_str())
            .expect("published line");
        assert_eq!(logged["trace_id"], poll.trace_id.as_str());
        assert_eq!(logged["span_id"], eval.span_id.as_str());
    }
    // The cycle summary was written under the poll span.
    let summary = raw_log_lines(&topic)
        .into_iter()
        .find(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Trigger cycle completed"))
        })
        .expect("summary line");
    assert_eq!(summary["span_id"], poll.span_id.as_str());
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_listing_marks_the_poll_span_failed() {
    let api = fake_api(new_clusters(1)).await;
    api.api
        .inject(FaultRule::new(Fault::Status(500)).on_page(1).always());
    let receiver = otlp::http_receiver().await;
    let exporter = {
        use opentelemetry_otlp::{Protocol, WithExportConfig as _};
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{}/v1/traces", receiver.endpoint()))
            .build()
            .expect("HTTP exporter")
    };
    let telemetry = telemetry::with_exporter(exporter, &trace_settings(), "9.9.9");
    let mut rig = rig().await;
    let (topic, _queue) = rig.exchange_and_queue("traced-fail").await;
    let setup = Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 2,
        prefetch: 1,
        poll_interval: Duration::from_secs(3600),
    };
    let mut daemon = traced_daemon(setup, telemetry.tracing()).await;
    let (_tx, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert!(!report.completed);
    flush(telemetry).await;
    let poll = eventually("the poll span over OTLP/HTTP", async || {
        receiver.spans.named("sentinel.poll").pop()
    })
    .await;
    assert_eq!(poll.status, (2, "fetch resources failed".to_string()));
    assert_eq!(poll.resource_attr("service.name"), Some("sentinel-test"));
    let gets = receiver.spans.named("HTTP GET");
    assert!(!gets.is_empty());
    for get in &gets {
        assert_eq!(get.parent_span_id, poll.span_id);
        assert_eq!(get.attr("http.response.status_code"), Some("500"));
        assert_eq!(get.status.0, 2, "a 500 fails the client span");
    }
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untraced_cycle_adds_no_traceparent_and_no_trace_fields() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("untraced").await;
    let api = fake_api(new_clusters(2)).await;
    let mut daemon = daemon(Setup {
        base_url: &api.base_url,
        amqp_url: RABBIT_URL,
        topic: &topic,
        page_size: 10,
        prefetch: 1,
        poll_interval: Duration::from_secs(3600),
    })
    .await;
    let _ = logs();
    let (_tx, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!(report.published, 2);
    for _ in 0..2 {
        let event: Json = serde_json::from_slice(&rig.next(&queue).await.data).expect("JSON");
        assert_eq!(traceparent_of(&event), None, "{event}");
        assert_eq!(
            event.as_object().map(|o| o.keys().next_back().cloned()),
            Some(Some("data".to_string()))
        );
    }
    for request in api.api.requests() {
        assert_eq!(request.header("traceparent"), None);
        assert_eq!(request.header("baggage"), None);
    }
    let lines = raw_log_lines(&topic);
    assert!(!lines.is_empty());
    for line in lines {
        assert!(
            line.get("trace_id").is_none() && line.get("span_id").is_none(),
            "{line}"
        );
    }
    rig.cleanup().await;
}

/// The JSON objects `sentinel serve` wrote on stdout that are not log lines (spans).
fn span_lines(process: &Process) -> Vec<Json> {
    process
        .stdout
        .lock()
        .expect("stdout")
        .iter()
        .filter_map(|line| serde_json::from_str::<Json>(line).ok())
        .filter(|v| v.get("level").is_none())
        .collect()
}

fn log_lines(process: &Process) -> Vec<Json> {
    process
        .stdout
        .lock()
        .expect("stdout")
        .iter()
        .filter_map(|line| serde_json::from_str::<Json>(line).ok())
        .filter(|v| v.get("level").is_some())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_over_otlp_http_from_the_environment() {
    serve_exports_from_the_environment(otlp::http_receiver().await, "http/protobuf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_over_otlp_grpc_from_the_environment() {
    serve_exports_from_the_environment(otlp::grpc_receiver().await, "grpc").await;
}

async fn serve_exports_from_the_environment(receiver: otlp::Receiver, protocol: &str) {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("serve-otlp").await;
    let (fleet, due) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);
    let endpoint = receiver.endpoint();
    let mut process = Process::start_env(
        &config,
        &broker,
        &api.base_url,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
            ("OTEL_SERVICE_NAME", "sentinel-e2e"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=e2e,team=fleet",
            ),
            ("OTEL_TRACES_SAMPLER", "always_on"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    process.wait_ready().await;
    let first: Vec<Json> = [rig.next(&queue).await, rig.next(&queue).await]
        .iter()
        .map(|msg| serde_json::from_slice(&msg.data).expect("JSON"))
        .collect();
    let ids: Vec<&str> = first
        .iter()
        .map(|e| e["data"]["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, due);
    let publish_name = format!("{topic} publish");
    for event in &first {
        let tp = traceparent_of(event).expect("traceparent").to_string();
        let span_id = tp.split('-').nth(2).unwrap_or_default().to_string();
        let publish = eventually("the event's publish span at the receiver", async || {
            receiver
                .spans
                .all()
                .into_iter()
                .find(|s| s.span_id == span_id)
        })
        .await;
        assert_eq!(publish.name, publish_name);
        assert_eq!(
            tp,
            format!("00-{}-{}-01", publish.trace_id, publish.span_id)
        );
        assert_eq!(publish.attr("messaging.message.id"), event["id"].as_str());
        assert_eq!(publish.resource_attr("service.name"), Some("sentinel-e2e"));
        assert_eq!(
            publish.resource_attr("service.version"),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(publish.resource_attr("deployment.environment"), Some("e2e"));
        assert_eq!(publish.resource_attr("team"), Some("fleet"));
    }
    // The probe's GET is a root of its own; nothing went to stdout but logs.
    let probe = receiver
        .spans
        .named("HTTP GET")
        .into_iter()
        .find(|s| s.parent_span_id.is_empty());
    assert!(probe.is_some(), "the startup probe is traced");
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    assert!(span_lines(&process).is_empty(), "{}", process.output());
    // Log lines of the cycles carry the trace ids; startup lines do not.
    let logs = log_lines(&process);
    let published: Vec<&Json> = logs
        .iter()
        .filter(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Published event"))
        })
        .collect();
    assert!(!published.is_empty());
    for line in published {
        let span_id = line["span_id"].as_str().expect("span_id");
        let trace_id = line["trace_id"].as_str().expect("trace_id");
        assert!(receiver.spans.all().iter().any(|s| s.span_id == span_id
            && s.trace_id == trace_id
            && s.name == "sentinel.evaluate"));
    }
    let start = logs
        .iter()
        .find(|v| v["message"] == "Starting HyperFleet Sentinel")
        .expect("start line");
    assert!(start.get("trace_id").is_none());
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_tracing_disabled_exports_nothing() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("serve-untraced").await;
    let (fleet, _) = process_fleet();
    let api = fake_api(fleet).await;
    let receiver = otlp::http_receiver().await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);
    let endpoint = receiver.endpoint();
    let mut process = Process::start_env(
        &config,
        &broker,
        &api.base_url,
        &[
            ("HYPERFLEET_TRACING_ENABLED", "false"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    process.wait_ready().await;
    for _ in 0..2 {
        let event: Json = serde_json::from_slice(&rig.next(&queue).await.data).expect("JSON");
        assert_eq!(traceparent_of(&event), None, "{event}");
    }
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    assert!(receiver.spans.all().is_empty(), "nothing exported");
    assert!(span_lines(&process).is_empty());
    let logs = log_lines(&process);
    let disabled: Vec<&Json> = logs
        .iter()
        .filter(|v| v["message"] == "OpenTelemetry disabled")
        .collect();
    assert_eq!(disabled.len(), 1, "{logs:?}");
    assert_eq!(disabled[0]["level"], "info");
    assert_eq!(disabled[0]["extra"]["tracing_enabled"], false);
    for line in &logs {
        assert!(line.get("trace_id").is_none(), "{line}");
    }
    for request in api.api.requests() {
        assert_eq!(request.header("traceparent"), None);
    }
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_traces_to_stdout_by_default() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("serve-stdout").await;
    let (fleet, _) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);
    let mut process = Process::start_env(
        &config,
        &broker,
        &api.base_url,
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    process.wait_ready().await;
    let event: Json = serde_json::from_slice(&rig.next(&queue).await.data).expect("JSON");
    let tp = traceparent_of(&event).expect("traceparent").to_string();
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    let spans = span_lines(&process);
    let publish = spans
        .iter()
        .find(|s| tp.contains(s["SpanContext"]["SpanID"].as_str().unwrap_or("-")))
        .expect("the publish span on stdout");
    assert_eq!(publish["Name"], format!("{topic} publish"));
    assert!(spans.iter().any(|s| s["Name"] == "sentinel.poll"));
    assert!(spans.iter().all(|s| {
        s["Resource"].as_array().is_some_and(|r| {
            r.iter().any(|kv| {
                kv["Key"] == "service.name" && kv["Value"]["Value"] == "hyperfleet-sentinel"
            })
        })
    }));
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_keeps_publishing_when_the_collector_is_unreachable() {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("serve-nocollector").await;
    let (fleet, _) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, RABBIT_URL);
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let mut process = Process::start_env(
        &config,
        &broker,
        &api.base_url,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    process.wait_ready().await;
    // Three cycles' worth of events (two due per cycle, 1 s apart) while exports fail.
    for _ in 0..6 {
        let event: Json = serde_json::from_slice(&rig.next(&queue).await.data).expect("JSON");
        assert!(traceparent_of(&event).is_some());
    }
    let warned = |process: &Process| {
        log_lines(process)
            .iter()
            .filter(|v| {
                v["level"] == "warn"
                    && v["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("Failed to export OpenTelemetry spans"))
            })
            .count()
    };
    eventually("the export failure warned", async || {
        (warned(&process) > 0).then_some(())
    })
    .await;
    let signalled = std::time::Instant::now();
    process.signal("TERM");
    let status = process.wait_exit().await;
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_eq!(
        warned(&process),
        1,
        "one WARN for the outage:\n{}",
        process.output()
    );
    // The contract: the flush gives up after 5 s; the rest of a clean stop is well under 3 s.
    assert!(
        took < telemetry::SHUTDOWN_TIMEOUT + Duration::from_secs(3),
        "shutdown took {took:?}"
    );
    rig.cleanup().await;
}
