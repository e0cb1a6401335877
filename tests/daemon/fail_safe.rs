//! Server-side filters and projection that fail safe (issue #35's second round, a test per
//! item), against the fake API made hostile by its [`Quirks`]: a search it refuses, `fields` it
//! honours in part, a search that disagrees with the rules, an `order` it ignores, and a
//! filtered set that shrinks while it is listed. In-process daemons publishing in memory, their
//! full sweeps scheduled on a clock the test moves.

use crate::harness::fake_api::{FakeServer, fake_api};
use crate::harness::in_process::{fast_backoff, no_shutdown};
use crate::harness::now;
use sentinel::api::{ApiClient, ApiClientConfig};
use sentinel::broker::{MemoryPublisher, MessageSink, Publisher};
use sentinel::cel::time::Timestamp;
use sentinel::daemon::config::{ConfigFlags, load_str};
use sentinel::daemon::runtime::{CycleReport, Daemon, Ticks};
use sentinel::rules::Rules;
use sentinel::sim::api::{Collection, Fault, FaultRule, Fleet, Quirks, sample_resource};
use serde_json::{Value as Json, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BASE: &str = "resource_type: clusters\nclients:\n  hyperfleet_api:\n    base_url: http://127.0.0.1:1\n  \
                    broker:\n    topic: t\nmessage_data:\n  id: resource.id\n";

/// Rules the API's search can say whole: `auto` needs no sweep for them.
const EXPRESSIBLE: &str =
    "message_decision:\n  params: []\n  result: 'condition(\"Reconciled\").status != \"True\"'\n";

/// Collects the ids of the events published.
#[derive(Default)]
struct Collect(Mutex<Vec<String>>);

impl MessageSink for Collect {
    fn deliver(&self, _: uuid::Uuid, body: &[u8]) -> Result<(), String> {
        let event: Json = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let id = event["data"]["id"].as_str().unwrap_or_default().to_string();
        self.0.lock().expect("lock").push(id);
        Ok(())
    }
}

/// A daemon of `BASE` + `yaml` over a fake API serving `fleet`, its clock in the test's hands.
struct Rig {
    api: FakeServer,
    daemon: Daemon,
    sink: Arc<Collect>,
    /// The daemon's monotonic clock, in seconds.
    seconds: Arc<AtomicU64>,
}

async fn rig(fleet: Fleet, yaml: &str, page_size: u32) -> Rig {
    let text = format!("{BASE}{yaml}");
    let config = load_str(&text, "fail_safe.yaml", &ConfigFlags::default(), &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let rules = Arc::new(Rules::compile(&config).expect("rules compile"));
    let api = fake_api(fleet).await;
    let client = ApiClient::new(ApiClientConfig {
        base_url: api.base_url.clone(),
        page_size,
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .expect("client");
    let sink = Arc::new(Collect::default());
    let publisher = Publisher::Memory(MemoryPublisher::new(sink.clone()));
    let seconds = Arc::new(AtomicU64::new(0));
    let read = seconds.clone();
    let ticks: Ticks = Arc::new(move || Duration::from_secs(read.load(Ordering::SeqCst)));
    let daemon = Daemon::new(&config, rules, client, publisher).with_ticks(ticks);
    Rig {
        api,
        daemon,
        sink,
        seconds,
    }
}

impl Rig {
    /// Moves the daemon's monotonic clock to `minutes` after its start.
    fn at_minute(&self, minutes: u64) {
        self.seconds.store(minutes * 60, Ordering::SeqCst);
    }

    /// One cycle at `now` (the wall clock, which the schedule does not read).
    async fn cycle_at(&mut self, now: Timestamp) -> CycleReport {
        let (_keep, mut shutdown) = no_shutdown();
        self.daemon.cycle(now, &mut shutdown).await
    }

    async fn cycle(&mut self) -> CycleReport {
        self.cycle_at(now()).await
    }

    /// The ids published since the last call, in order.
    fn published(&self) -> Vec<String> {
        std::mem::take(&mut *self.sink.0.lock().expect("lock"))
    }

    /// The value of the daemon's series `name`, if it has one.
    fn metric(&self, name: &str) -> Option<f64> {
        let text = self.daemon.metrics().render();
        crate::harness::metrics::series(&text, name)
            .first()
            .map(|(_, v)| *v)
    }

    /// The list requests since the last call: each one's `search` and `order` parameters.
    fn lists(&self) -> Vec<(Option<String>, Option<String>)> {
        let requests = self.api.requests();
        self.api.api.recorder.clear();
        requests
            .iter()
            .filter(|r| r.path() == crate::harness::CLUSTERS)
            .map(|r| {
                let url = reqwest::Url::parse(&format!("http://x{}", r.uri)).expect("uri");
                let param = |name: &str| {
                    url.query_pairs()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.into_owned())
                };
                (param("search"), param("order"))
            })
            .collect()
    }
}

/// A cluster of the default rules' every kind, at the harness's `now`.
#[derive(Clone, Copy)]
enum Kind {
    /// Generation 1, no conditions: due (new).
    New,
    /// Reconciled True a minute ago at its generation: not due.
    Settled,
    /// Generation 2, reconciled True at it two hours ago: due (stale), and only by its
    /// `last_updated_time`.
    Stale,
    /// Reconciled True a minute ago, but at an older generation: due only by
    /// `generation_mismatch`, which no search can say.
    Mismatch,
}

fn cluster(index: u64, kind: Kind) -> Json {
    let mut r = sample_resource(Collection::Clusters, index, &[]);
    let ago = |minutes: i64| {
        let at = chrono::DateTime::parse_from_rfc3339("2025-06-01T12:00:00Z").expect("now");
        (at - chrono::Duration::minutes(minutes)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let reconciled = |minutes: i64, observed: i64| {
        json!([{"type": "Reconciled", "status": "True", "reason": "Reconciled", "message": "",
            "observed_generation": observed, "created_time": ago(minutes),
            "last_updated_time": ago(minutes), "last_transition_time": ago(minutes)}])
    };
    match kind {
        Kind::New => r["status"] = json!({"conditions": []}),
        Kind::Settled => r["status"]["conditions"] = reconciled(1, 1),
        Kind::Stale => {
            r["generation"] = json!(2);
            r["status"]["conditions"] = reconciled(120, 2);
        }
        Kind::Mismatch => {
            r["generation"] = json!(2);
            r["status"]["conditions"] = reconciled(1, 1);
        }
    }
    r
}

fn fleet(kinds: &[(Kind, u64)]) -> (Fleet, Vec<String>) {
    let fleet = Fleet::new();
    let mut ids = Vec::new();
    let mut index = 0;
    for (kind, n) in kinds {
        for _ in 0..*n {
            let r = cluster(index, *kind);
            ids.push(r["id"].as_str().expect("id").to_string());
            fleet.insert(Collection::Clusters, r).expect("insert");
            index += 1;
        }
    }
    (fleet, ids)
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

const FILTER_FALLBACK: &str = "hyperfleet_sentinel_server_filter_fallback";
const PROJECTION_FALLBACK: &str = "hyperfleet_sentinel_server_projection_fallback";
const SWEEP_AGE: &str = "hyperfleet_sentinel_full_sweep_age_seconds";
const LEFT_OUT: &str = "hyperfleet_sentinel_sweep_left_out_total";

/// Item 2: an API that refuses the derived search (an older version without condition times in
/// its search). The start-up probe finds it: every cycle lists everything and publishes what is
/// due, the fallback shows in a metric, readiness and liveness stay up, and the filter is not
/// sent again until it is probed again a sweep interval later, when it is accepted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_filter_falls_back_to_listing_everything() {
    let (fleet, ids) = fleet(&[(Kind::New, 5), (Kind::Settled, 10), (Kind::Stale, 5)]);
    let due = sorted([&ids[..5], &ids[15..]].concat());
    let yaml = "server_filters: auto\nfull_sweep_interval: 5m\n";
    let mut rig = rig(fleet, yaml, 100).await;
    rig.api.api.set_quirks(Quirks {
        refuse_search: Some("last_updated_time".into()),
        ..Quirks::default()
    });
    rig.daemon.probe_server_side(now()).await;
    assert_eq!(rig.metric(FILTER_FALLBACK), Some(1.0));
    assert!(
        rig.lists().iter().all(|(s, _)| s.is_some()),
        "the probe asks the filter"
    );
    for minute in 0..4 {
        rig.at_minute(minute);
        let report = rig.cycle().await;
        assert!(report.completed && !report.filtered, "{minute}: {report:?}");
        assert_eq!(sorted(rig.published()), due, "minute {minute}");
        let (readiness, _) = rig.daemon.health().readiness();
        assert_eq!(readiness, 200);
        assert_eq!(rig.daemon.health().liveness().0, 200);
    }
    // The filter was asked once, by the probe; never by a cycle.
    let filtered = rig.lists().into_iter().filter(|(s, _)| s.is_some()).count();
    assert_eq!(filtered, 0);
    // Accepted again: found at the next probe, a sweep interval on.
    rig.api.api.set_quirks(Quirks::default());
    rig.at_minute(5);
    rig.cycle().await;
    assert_eq!(rig.metric(FILTER_FALLBACK), Some(0.0));
    rig.published();
    rig.at_minute(6);
    let report = rig.cycle().await;
    assert!(report.completed && report.filtered, "{report:?}");
    assert_eq!(sorted(rig.published()), due);
}

/// Item 2, mid-run: the API starts refusing the filter (a rollback) after cycles that used
/// it. The refused cycle lists everything at once and publishes what is due.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_refused_mid_run_costs_no_cycle() {
    let (fleet, ids) = fleet(&[(Kind::New, 5), (Kind::Settled, 10), (Kind::Stale, 5)]);
    let due = sorted([&ids[..5], &ids[15..]].concat());
    let mut rig = rig(
        fleet,
        "server_filters: auto\nfull_sweep_interval: 5m\n",
        100,
    )
    .await;
    for minute in 0..2 {
        rig.at_minute(minute);
        assert!(rig.cycle().await.completed);
        assert_eq!(sorted(rig.published()), due);
    }
    assert_eq!(rig.metric(FILTER_FALLBACK), Some(0.0));
    rig.api.api.set_quirks(Quirks {
        refuse_search: Some("last_updated_time".into()),
        ..Quirks::default()
    });
    for minute in 2..4 {
        rig.at_minute(minute);
        let report = rig.cycle().await;
        assert!(report.completed, "{report:?}");
        assert_eq!(sorted(rig.published()), due, "minute {minute}");
    }
    assert_eq!(rig.metric(FILTER_FALLBACK), Some(1.0));
    assert_eq!(
        rig.metric("hyperfleet_sentinel_api_errors_total"),
        None,
        "no cycle failed"
    );
}

/// Item 3: an API that leaves `status.conditions.last_updated_time` out of its projected
/// answers would make every stale resource look unreported (never due), and one that leaves
/// out `observed_generation` every settled one look behind its generation (always due). The
/// page is listed again unprojected, and projecting stops, with a metric.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_missing_a_field_is_listed_again_whole() {
    for (left_out, kinds) in [
        ("status.conditions.last_updated_time", (Kind::Stale, 20)),
        ("status.conditions.observed_generation", (Kind::Settled, 20)),
    ] {
        let (fleet, ids) = fleet(&[kinds, (Kind::New, 3)]);
        let due = match kinds.0 {
            Kind::Stale => sorted(ids.clone()),
            _ => sorted(ids[20..].to_vec()),
        };
        let mut rig = rig(fleet, "server_projection: true\n", 10).await;
        rig.api.api.set_quirks(Quirks {
            ignore_fields: vec![left_out.into()],
            ..Quirks::default()
        });
        for cycle in 0..2 {
            let report = rig.cycle().await;
            assert!(report.completed, "{left_out}: {report:?}");
            assert_eq!(sorted(rig.published()), due, "{left_out}, cycle {cycle}");
        }
        assert_eq!(rig.metric(PROJECTION_FALLBACK), Some(1.0), "{left_out}");
        // The second cycle asked for whole resources from its first page on.
        let fields = rig
            .api
            .requests()
            .iter()
            .filter(|r| r.uri.contains("fields="))
            .count();
        assert!(fields <= 2, "{left_out}: {fields} projected requests");
    }
}

/// Item 4: a full sweep that fails is tried again at the next cycle (it counts when it
/// completes), so a resource due only by what the filter leaves to the sweep is published
/// then, not a sweep interval later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sweep_is_tried_again_at_the_next_cycle() {
    let (fleet, ids) = fleet(&[(Kind::Settled, 150), (Kind::Mismatch, 1)]);
    let mut rig = rig(
        fleet,
        "server_filters: auto\nfull_sweep_interval: 5m\n",
        100,
    )
    .await;
    // The sweep's second page fails (after its retries); the filtered listing has one page.
    rig.api
        .api
        .inject(FaultRule::new(Fault::Status(500)).on_page(2).always());
    let report = rig.cycle().await;
    assert!(!report.completed && !report.filtered, "{report:?}");
    rig.api.api.faults.clear();
    rig.at_minute(1);
    let report = rig.cycle().await;
    assert!(
        report.completed && !report.filtered,
        "a sweep again: {report:?}"
    );
    assert_eq!(rig.published(), [ids[150].clone()]);
    rig.at_minute(2);
    assert!(rig.cycle().await.filtered, "swept at minute 1");
}

/// Item 4: the sweeps are scheduled on the monotonic clock: a wall clock stepped back an hour
/// neither postpones the next sweep nor makes one early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_schedule_ignores_wall_clock_steps() {
    let (fleet, ids) = fleet(&[(Kind::Settled, 5), (Kind::Mismatch, 1)]);
    let mut rig = rig(
        fleet,
        "server_filters: auto\nfull_sweep_interval: 5m\n",
        100,
    )
    .await;
    let hour = 3_600_000_000_000;
    let earlier = Timestamp::from_nanos(now().nanos() - hour).expect("an hour earlier");
    let later = Timestamp::from_nanos(now().nanos() + hour).expect("an hour later");
    assert!(!rig.cycle().await.filtered);
    rig.published();
    rig.at_minute(1);
    assert!(
        rig.cycle_at(later).await.filtered,
        "a step forward is no sweep"
    );
    rig.at_minute(6);
    let report = rig.cycle_at(earlier).await;
    assert!(report.completed && !report.filtered, "{report:?}");
    assert!(rig.published().contains(&ids[5]));
}

/// Item 4: a sweep that keeps failing shows: its age in a metric, and readiness fails once the
/// last complete sweep is older than twice the interval (liveness stays up: a restart would
/// not help).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_that_keeps_failing_shows_in_readiness_and_metrics() {
    let (fleet, _) = fleet(&[(Kind::Settled, 150)]);
    let mut rig = rig(
        fleet,
        "server_filters: auto\nfull_sweep_interval: 5m\n",
        100,
    )
    .await;
    assert!(rig.cycle().await.completed);
    rig.api
        .api
        .inject(FaultRule::new(Fault::Status(500)).on_page(2).always());
    for minute in [4, 8] {
        rig.at_minute(minute);
        rig.cycle().await;
        assert_eq!(rig.daemon.health().readiness().0, 200, "minute {minute}");
    }
    rig.at_minute(11);
    let report = rig.cycle().await;
    assert!(!report.completed, "{report:?}");
    assert_eq!(rig.metric(SWEEP_AGE), Some(660.0));
    assert_eq!(
        rig.metric("hyperfleet_sentinel_full_sweep_interval_seconds"),
        Some(300.0)
    );
    let (code, body) = rig.daemon.health().readiness();
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains(r#""full_sweep":"no complete full sweep for 11m0s (due every 5m0s)""#),
        "{body}"
    );
    assert_eq!(rig.daemon.health().liveness().0, 200);
    rig.api.api.faults.clear();
    rig.at_minute(12);
    assert!(rig.cycle().await.completed);
    assert_eq!(rig.metric(SWEEP_AGE), Some(0.0));
    assert_eq!(rig.daemon.health().readiness().0, 200);
}

/// Item 5: with rules the search can say whole, `auto` still lists everything every 10
/// minutes (and at the first cycle). An API whose search disagrees with the rules (it never
/// matches a missing condition, so new resources are never listed by the filter) has what the
/// filter leaves out published by the sweep, and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_that_disagrees_with_the_rules_is_caught_by_the_sweep() {
    let program =
        sentinel::rules::decision::Program::compile(&sentinel::rules::decision::DecisionSource {
            params: vec![],
            result: r#"condition("Reconciled").status != "True""#.into(),
        })
        .expect("compiles");
    let derived = sentinel::rules::filter::derive(&program);
    assert!(!derived.needs_sweep() && derived.sound != sentinel::tsl::Tsl::True);
    for hostile in [true, false] {
        let (fleet, _) = fleet(&[(Kind::Settled, 10)]);
        let mut rig = rig(fleet, &format!("{EXPRESSIBLE}server_filters: auto\n"), 100).await;
        rig.api.api.set_quirks(Quirks {
            null_conditions_unmatched: hostile,
            ..Quirks::default()
        });
        let report = rig.cycle().await;
        assert!(
            report.completed && !report.filtered,
            "the first cycle lists everything"
        );
        let mut fresh = Vec::new();
        for i in 100..105 {
            let r = cluster(i, Kind::New);
            fresh.push(r["id"].as_str().expect("id").to_string());
            rig.api
                .api
                .fleet
                .insert(Collection::Clusters, r)
                .expect("insert");
        }
        let mut published = Vec::new();
        for minute in 1..=10 {
            rig.at_minute(minute);
            let report = rig.cycle().await;
            assert!(report.completed, "{report:?}");
            assert_eq!(report.filtered, minute < 10, "minute {minute}");
            let expected_left_out = if hostile && minute == 10 { 5 } else { 0 };
            assert_eq!(report.left_out, expected_left_out, "minute {minute}");
            published.extend(rig.published());
        }
        published.sort();
        published.dedup();
        assert_eq!(published, fresh, "hostile: {hostile}");
        let left_out = if hostile { 5.0 } else { 0.0 };
        assert_eq!(rig.metric(LEFT_OUT), Some(left_out), "hostile: {hostile}");
    }
}

/// Item 6: a filtered set that shrinks while it is listed (each resource reconciled as soon as
/// it is served) is listed whole: every resource due at the start of the cycle is published in
/// it, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shrinking_filtered_set_is_listed_whole() {
    let (fleet, ids) = fleet(&[(Kind::Settled, 1000)]);
    let mut rig = rig(fleet, &format!("{EXPRESSIBLE}server_filters: auto\n"), 100).await;
    assert_eq!(rig.cycle().await.published, 0);
    rig.api.api.set_quirks(Quirks {
        reconcile_listed: true,
        ..Quirks::default()
    });
    for id in &ids {
        rig.api.api.fleet.update(Collection::Clusters, id, |r| {
            r["status"]["conditions"][0]["status"] = json!("False");
        });
    }
    rig.at_minute(1);
    let report = rig.cycle().await;
    assert!(report.completed && report.filtered, "{report:?}");
    assert_eq!(report.published, 1000);
    assert_eq!(sorted(rig.published()), sorted(ids));
    let lists = rig.lists();
    assert!(
        lists
            .iter()
            .all(|(s, order)| s.is_none() || order.as_deref() == Some("id")),
        "{lists:?}"
    );
}

/// Item 6: an API that ignores `order` is found out by the first page listed by id whose ids
/// do not ascend; the listing goes on by page number (nothing lost, nothing twice), and later
/// filtered listings page by number from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_ignoring_order_is_listed_by_page_number() {
    // Inserted in descending id order, so that insertion order is not id order.
    let fleet = Fleet::new();
    let mut ids = Vec::new();
    for i in (0..250).rev() {
        let r = cluster(i, Kind::New);
        ids.push(r["id"].as_str().expect("id").to_string());
        fleet.insert(Collection::Clusters, r).expect("insert");
    }
    let mut rig = rig(fleet, &format!("{EXPRESSIBLE}server_filters: auto\n"), 100).await;
    rig.api.api.set_quirks(Quirks {
        ignore_order: true,
        ..Quirks::default()
    });
    for minute in 0..2 {
        rig.at_minute(minute);
        let report = rig.cycle().await;
        assert!(report.completed, "{report:?}");
        assert_eq!(
            sorted(rig.published()),
            sorted(ids.clone()),
            "minute {minute}"
        );
    }
    let lists = rig.lists();
    let by_id = lists.iter().filter(|(_, o)| o.is_some()).count();
    assert_eq!(by_id, 1, "only the first page was asked by id: {lists:?}");
}
