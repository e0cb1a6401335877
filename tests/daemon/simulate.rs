//! End to end: the real sentinel loop over real HTTP against the fake HyperFleet API, with
//! simulated adapters answering its events, once through the in-process broker and once through
//! the real RabbitMQ on 127.0.0.1:5672 (guest/guest; these tests fail when it is absent).
//!
//! Time is a hand-moved clock shared by the fleet, the adapters and the sentinel's `now`, and
//! cycles are run one at a time, each followed by waiting until every adapter has handled every
//! published event; so the event counts below are exact consequences of the rules, never of
//! timing. The rules are the default ones with a 5 s debounce and a 60 s stale window.

use sentinel::broker::config::ExchangeType;
use sentinel::sim::adapters::AdapterSpec;
use sentinel::sim::api::{Collection, sample_id};
use sentinel::sim::clock::{ManualClock, parse_time};
use sentinel::sim::run::{self, ProgressStyle, RunOptions};
use sentinel::sim::simulation::{
    BrokerChoice, DEFAULT_RABBITMQ_URL, Initial, SimOptions, Simulation,
};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::Duration;

/// Bound on waiting for the adapters; reaching it fails the test.
const PATIENCE: Duration = Duration::from_secs(60);

const RULES: &str = r#"
sentinel:
  name: sentinel-simulate-test
resource_type: clusters
poll_interval: 1s
clients:
  hyperfleet_api:
    base_url: http://127.0.0.1:1
    page_size: 7
  broker:
    topic: replaced
message_data:
  id: resource.id
  kind: resource.kind
  href: resource.href
  generation: resource.generation
message_decision:
  params:
    - name: ref_time
      expr: 'condition("Reconciled").last_updated_time'
    - name: is_reconciled
      expr: 'condition("Reconciled").status == "True"'
    - name: has_ref_time
      expr: 'ref_time != ""'
    - name: is_new_resource
      expr: 'resource.generation == 1 && !has_ref_time'
    - name: generation_mismatch
      expr: 'resource.generation > condition("Reconciled").observed_generation'
    - name: reconciled_and_stale
      expr: 'is_reconciled && has_ref_time && now - timestamp(ref_time) > duration("60s")'
    - name: not_reconciled_and_debounced
      expr: '!is_reconciled && has_ref_time && now - timestamp(ref_time) > duration("5s")'
  result: is_new_resource || generation_mismatch || reconciled_and_stale || not_reconciled_and_debounced
"#;

fn adapters(names: &[&str]) -> Vec<AdapterSpec> {
    names
        .iter()
        .map(|n| AdapterSpec::parse(n).unwrap())
        .collect()
}

struct Rig {
    sim: Simulation,
    clock: Arc<ManualClock>,
    http: reqwest::Client,
}

fn broker(rabbit: bool) -> BrokerChoice {
    match rabbit {
        false => BrokerChoice::InProcess,
        true => BrokerChoice::RabbitMq {
            url: DEFAULT_RABBITMQ_URL.into(),
            exchange_type: ExchangeType::Fanout,
            routing_key: String::new(),
        },
    }
}

async fn rig(clusters: u64, cluster_adapters: &[&str], rabbit: bool) -> Rig {
    let clock = Arc::new(ManualClock::new(
        parse_time("2026-05-01T08:00:00Z").unwrap(),
    ));
    let options = SimOptions {
        clusters,
        cluster_adapters: adapters(cluster_adapters),
        broker: broker(rabbit),
        topic_prefix: format!("sentinel-simulate-test-{}", uuid::Uuid::now_v7()),
        config_yaml: RULES.into(),
        clock: clock.clone(),
        ..SimOptions::default()
    };
    let sim = match Simulation::start(options).await {
        Ok(sim) => sim,
        Err(e) if rabbit => panic!(
            "the RabbitMQ tests need a broker at 127.0.0.1:5672 (guest/guest), start it with \
             `rabbitmq-server -detached`: {e}"
        ),
        Err(e) => panic!("simulation did not start: {e}"),
    };
    Rig {
        sim,
        clock,
        http: reqwest::Client::new(),
    }
}

impl Rig {
    /// Moves the clock by `seconds`, runs one cycle, waits for the adapters; gives the number
    /// of events published.
    async fn step(&mut self, seconds: u64) -> usize {
        self.clock.advance(Duration::from_secs(seconds));
        let reports = self.sim.cycle().await;
        assert!(
            reports.iter().all(|r| r.completed && r.failed == 0),
            "{reports:?}"
        );
        self.sim.settle(PATIENCE).await.unwrap();
        reports.iter().map(|r| r.published).sum()
    }

    fn cluster(&self, index: u64) -> String {
        sample_id(Collection::Clusters, index)
    }

    fn resource(&self, index: u64) -> Option<Arc<Json>> {
        self.sim
            .fleet()
            .get(Collection::Clusters, &self.cluster(index))
    }

    fn reconciled(&self, index: u64) -> Json {
        let resource = self.resource(index).unwrap();
        let conditions = resource["status"]["conditions"].as_array().unwrap().clone();
        conditions
            .into_iter()
            .find(|c| c["type"] == "Reconciled")
            .unwrap()
    }

    fn events(&self, index: u64) -> u32 {
        self.sim
            .events_for(Collection::Clusters, &self.cluster(index))
    }

    async fn send(&self, method: reqwest::Method, index: u64, body: Option<Json>) -> u16 {
        let url = format!(
            "{}/api/hyperfleet/v1/clusters/{}",
            self.sim.base_url(),
            self.cluster(index)
        );
        let mut request = self.http.request(method, url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap().status().as_u16()
    }
}

/// New resources: one event each (is_new_resource), all adapters report, all reconciled, and
/// nothing more until the stale window.
async fn new_resources_converge_with_one_event_each(mut rig: Rig) -> Rig {
    assert_eq!(rig.step(0).await, 30);
    let progress = rig.sim.progress();
    assert_eq!((progress.reconciled, progress.total), (30, 30));
    assert!((0..30).all(|i| rig.events(i) == 1));
    for counts in rig.sim.adapter_counts(Collection::Clusters) {
        assert_eq!(
            (counts.received, counts.available, counts.errors),
            (30, 30, 0),
            "{counts:?}"
        );
    }
    assert_eq!(rig.step(1).await, 0);
    assert_eq!(rig.step(10).await, 0);
    rig
}

async fn scenario_converge(rabbit: bool) {
    let rig = rig(
        30,
        &["validation", "dns", "pullsecret", "hypershift"],
        rabbit,
    )
    .await;
    let rig = new_resources_converge_with_one_event_each(rig).await;
    let conditions = rig.resource(0).unwrap()["status"]["conditions"].clone();
    let types: Vec<&str> = conditions
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "Reconciled",
            "LastKnownReconciled",
            "ValidationSuccessful",
            "DnsSuccessful",
            "PullsecretSuccessful",
            "HypershiftSuccessful"
        ]
    );
    rig.sim.shutdown().await;
}

/// A spec change bumps the generation; after the debounce one event re-reconciles it.
async fn scenario_generation_bump(rabbit: bool) {
    let rig = rig(30, &["validation", "dns"], rabbit).await;
    let mut rig = new_resources_converge_with_one_event_each(rig).await;
    for i in [3, 4] {
        let status = rig
            .send(
                reqwest::Method::PATCH,
                i,
                Some(json!({"spec": {"replicas": 5}})),
            )
            .await;
        assert_eq!(status, 200);
    }
    assert_eq!(rig.reconciled(3)["status"], "False");
    assert_eq!(rig.reconciled(3)["observed_generation"], 2);
    assert_eq!(rig.step(5).await, 0, "still within the debounce");
    assert_eq!(rig.step(1).await, 2);
    assert_eq!(rig.reconciled(3)["status"], "True");
    assert_eq!(rig.resource(4).unwrap()["generation"], 2);
    assert_eq!((rig.events(3), rig.events(4), rig.events(5)), (2, 2, 1));
    assert_eq!(rig.step(1).await, 0);
    assert_eq!(rig.sim.progress().reconciled, 30);
    rig.sim.shutdown().await;
}

/// A required adapter that never reports: the resource is re-published once per debounce
/// period (5 s: at +6 s, +12 s, … since each event's reports refresh `last_updated_time`), and
/// never in between.
async fn scenario_silent_adapter(rabbit: bool) {
    let mut rig = rig(3, &["validation", "dns", "quiet:silent"], rabbit).await;
    assert_eq!(rig.step(0).await, 3);
    assert_eq!(rig.reconciled(0)["status"], "False");
    let mut published_at = Vec::new();
    for second in 1..=30 {
        let published = rig.step(1).await;
        if published > 0 {
            assert_eq!(published, 3, "at +{second}s");
            published_at.push(second);
        }
    }
    assert_eq!(published_at, [6, 12, 18, 24, 30]);
    assert!((0..3).all(|i| rig.events(i) == 6));
    let silent = &rig.sim.adapter_counts(Collection::Clusters)[2];
    assert_eq!(
        (silent.received, silent.available + silent.unavailable),
        (18, 0)
    );
    rig.sim.shutdown().await;
}

/// DELETE marks the resource (generation + 1); after the debounce its event makes every
/// adapter report Finalized=True, and the API hard-deletes it.
async fn scenario_deletion(rabbit: bool) {
    let rig = rig(30, &["validation", "hypershift"], rabbit).await;
    let mut rig = new_resources_converge_with_one_event_each(rig).await;
    assert_eq!(rig.send(reqwest::Method::DELETE, 7, None).await, 202);
    assert_eq!(rig.send(reqwest::Method::DELETE, 8, None).await, 202);
    let marked = rig.resource(7).unwrap();
    assert!(marked["deleted_time"].is_string());
    assert_eq!(marked["generation"], 2);
    assert_eq!(rig.sim.progress().deleting, 2);
    assert_eq!(rig.step(3).await, 0);
    assert_eq!(rig.step(3).await, 2);
    assert!(rig.resource(7).is_none() && rig.resource(8).is_none());
    assert_eq!(rig.send(reqwest::Method::GET, 7, None).await, 404);
    let progress = rig.sim.progress();
    assert_eq!(
        (progress.total, progress.reconciled, progress.deleting),
        (28, 28, 0)
    );
    assert_eq!(rig.step(10).await, 0);
    rig.sim.shutdown().await;
}

/// A reconciled resource is re-checked only once its last report is older than the stale
/// window (60 s, strictly).
async fn scenario_stale_window(rabbit: bool) {
    let rig = rig(30, &["validation", "dns"], rabbit).await;
    let mut rig = new_resources_converge_with_one_event_each(rig).await;
    // The reports were filed at +0 s; new_resources_… already moved the clock to +11 s.
    assert_eq!(rig.step(49).await, 0, "+60 s is not older than 60 s");
    assert_eq!(rig.step(1).await, 30, "+61 s");
    assert!((0..30).all(|i| rig.events(i) == 2));
    assert_eq!(rig.reconciled(0)["status"], "True");
    assert_eq!(rig.step(1).await, 0, "the re-check refreshed the reports");
    assert_eq!(rig.step(59).await, 0);
    rig.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_new_resources_converge() {
    scenario_converge(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_generation_bump_re_reconciles() {
    scenario_generation_bump(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_silent_adapter_loops_once_per_debounce() {
    scenario_silent_adapter(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_deletion_ends_in_hard_delete() {
    scenario_deletion(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_stale_window() {
    scenario_stale_window(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_new_resources_converge() {
    scenario_converge(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_generation_bump_re_reconciles() {
    scenario_generation_bump(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_silent_adapter_loops_once_per_debounce() {
    scenario_silent_adapter(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_deletion_ends_in_hard_delete() {
    scenario_deletion(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rabbitmq_stale_window() {
    scenario_stale_window(true).await;
}

/// Adapters that talk HTTP, a precondition, failures and nodepools: all converge, with the
/// extra events the rules imply for the reports that were not Available=True.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_adapters_preconditions_and_failures_converge() {
    let clock = Arc::new(ManualClock::new(
        parse_time("2026-05-01T08:00:00Z").unwrap(),
    ));
    let options = SimOptions {
        clusters: 40,
        nodepools: 20,
        cluster_adapters: adapters(&["validation", "dns:after=validation", "flaky:fail=0.3"]),
        nodepool_adapters: adapters(&["validation", "hypershift"]),
        adapters_http: true,
        config_yaml: RULES.into(),
        clock: clock.clone(),
        ..SimOptions::default()
    };
    let mut sim = Simulation::start(options).await.unwrap();
    let mut rounds = 0;
    while !sim.progress().converged() {
        rounds += 1;
        assert!(
            rounds <= 30,
            "not converged after 30 debounce periods: {:?}",
            sim.progress()
        );
        sim.cycle().await;
        sim.settle(PATIENCE).await.unwrap();
        clock.advance(Duration::from_secs(6));
    }
    assert!(sim.published(Collection::NodePools) >= 20);
    let nodepool_counts = sim.adapter_counts(Collection::NodePools);
    assert!(
        nodepool_counts
            .iter()
            .all(|c| c.unavailable == 0 && c.errors == 0)
    );
    let counts = sim.adapter_counts(Collection::Clusters);
    let flaky = &counts[2];
    assert!(flaky.unavailable > 0 && flaky.errors == 0, "{flaky:?}");
    // Every event beyond the first per cluster answers a report that was not Available=True.
    let extra = sim.published(Collection::Clusters) - 40;
    let not_available: u64 = counts.iter().map(|c| c.unavailable).sum();
    assert!(
        extra > 0 && extra <= not_available,
        "{extra} extra events, {not_available} failures"
    );
    let np = sim
        .fleet()
        .get(Collection::NodePools, &sample_id(Collection::NodePools, 3))
        .unwrap();
    assert_eq!(
        np["owner_references"]["id"],
        sample_id(Collection::Clusters, 3)
    );
    sim.shutdown().await;
}

/// The scale run in small: one cycle over 2,000 clusters in pages of 100, no adapters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cycle_over_two_thousand_clusters() {
    for (initial, published) in [
        (Initial::New, 2000),
        (Initial::Reconciled, 0),
        (Initial::Stale, 2000),
    ] {
        let options = SimOptions {
            clusters: 2000,
            initial,
            adapters: false,
            ..SimOptions::default()
        };
        let sim = Simulation::start(options).await.unwrap();
        let run_options = RunOptions {
            duration: Some(Duration::from_secs(300)),
            cycles: Some(1),
            change: None,
            progress: ProgressStyle::Quiet,
        };
        let summary = run::run(sim, run_options).await;
        assert_eq!(
            (summary.resources, summary.cycles),
            (2000, 1),
            "{initial:?}"
        );
        assert_eq!(summary.events_published, published, "{initial:?}");
        assert!(summary.peak_rss_mib > 0.0);
    }
}

/// `sentinel simulate` in small, in real time: converge, scripted change, converge again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_time_run_converges_through_the_scripted_change() {
    let fast = RULES
        .replace("poll_interval: 1s", "poll_interval: 100ms")
        .replace("duration(\"5s\")", "duration(\"1s\")");
    let options = SimOptions {
        clusters: 200,
        config_yaml: fast,
        ..SimOptions::default()
    };
    let sim = Simulation::start(options).await.unwrap();
    let run_options = RunOptions {
        duration: Some(Duration::from_secs(300)),
        cycles: None,
        change: Some((0.1, 0.01)),
        progress: ProgressStyle::Quiet,
    };
    let summary = run::run(sim, run_options).await;
    assert!(summary.converged, "{summary:?}");
    assert_eq!((summary.patched, summary.deleted), (20, 2));
    assert_eq!((summary.remaining, summary.reconciled), (198, 198));
    assert!(summary.events_published >= 222, "{summary:?}");
    let json = serde_json::to_value(&summary).unwrap();
    for key in [
        "resources",
        "reconciled",
        "events_published",
        "converged",
        "time_to_converge_s",
        "cycle_ms_p50",
        "cycle_ms_p99",
        "peak_rss_mib",
    ] {
        assert!(
            json.get(key).is_some_and(|v| !v.is_null()),
            "{key} in {json}"
        );
    }
}

/// The adapter-facing endpoints: statuses 201/204/400/404, PATCH 400/409, list size cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_patch_and_delete_endpoints_follow_the_contract() {
    let options = SimOptions {
        clusters: 3,
        adapters: false,
        sentinel: false,
        ..SimOptions::default()
    };
    let sim = Simulation::start(options).await.unwrap();
    let http = reqwest::Client::new();
    let base = format!("{}/api/hyperfleet/v1/clusters", sim.base_url());
    let id = sample_id(Collection::Clusters, 1);
    let now = sim.fleet().clock().now().to_rfc3339();
    let report = |adapter: &str, generation: i64| {
        json!({"adapter": adapter, "observed_generation": generation, "observed_time": now,
            "conditions": [{"type": "Available", "status": "True"}, {"type": "Applied", "status": "True"},
                {"type": "Health", "status": "True"}, {"type": "Finalized", "status": "True"}]})
    };
    let put = |url: String, body: Json| http.put(url).json(&body).send();
    let statuses = format!("{base}/{id}/statuses");
    let created = put(statuses.clone(), report("validation", 1))
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let body: Json = created.json().await.unwrap();
    assert_eq!(
        (
            body["adapter"].as_str(),
            body["last_report_time"].is_string()
        ),
        (Some("validation"), true)
    );
    assert_eq!(
        put(statuses.clone(), report("validation", 5))
            .await
            .unwrap()
            .status(),
        204
    );
    let bad = put(statuses.clone(), json!({"adapter": "x"}))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.headers()["content-type"], "application/problem+json");
    assert_eq!(
        put(format!("{base}/nope/statuses"), report("validation", 1))
            .await
            .unwrap()
            .status(),
        404
    );
    let list: Json = http
        .get(&statuses)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"][0]["adapter"], "validation");

    let patch = |body: Json| http.patch(format!("{base}/{id}")).json(&body).send();
    assert_eq!(patch(json!({"name": "x"})).await.unwrap().status(), 400);
    let patched: Json = patch(json!({"spec": {"a": 1}}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(patched["generation"], 2);
    let deleted = http.delete(format!("{base}/{id}")).send().await.unwrap();
    assert_eq!(deleted.status(), 202);
    assert_eq!(patch(json!({"spec": {}})).await.unwrap().status(), 409);
    for adapter in ["validation", "dns", "pullsecret", "hypershift"] {
        assert_eq!(
            put(statuses.clone(), report(adapter, 3))
                .await
                .unwrap()
                .status(),
            201
        );
    }
    assert_eq!(
        http.get(format!("{base}/{id}"))
            .send()
            .await
            .unwrap()
            .status(),
        404,
        "hard-deleted"
    );
    let too_big = http.get(format!("{base}?size=101")).send().await.unwrap();
    assert_eq!(too_big.status(), 400);
    sim.shutdown().await;
}

/// `simulate --api-only --broker rabbitmq` for a sentinel in another process: the exchange is
/// declared with the type of that sentinel's broker.yaml (here the chart's `topic`), so the
/// sentinel's own declaration agrees and its events reach the adapters; and the fleet keeps
/// being served after it converges (until interrupted), since the sentinel under test still
/// polls it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_only_serves_past_convergence_on_the_sentinels_exchange_type() {
    use lapin::options::{BasicPublishOptions, ExchangeDeclareOptions, ExchangeDeleteOptions};
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties, ExchangeKind};

    let options = SimOptions {
        clusters: 3,
        cluster_adapters: adapters(&["validation", "dns"]),
        broker: BrokerChoice::RabbitMq {
            url: DEFAULT_RABBITMQ_URL.into(),
            exchange_type: ExchangeType::Topic,
            routing_key: String::new(),
        },
        topic_prefix: format!("sentinel-simulate-test-{}", uuid::Uuid::now_v7()),
        config_yaml: RULES.into(),
        sentinel: false,
        ..SimOptions::default()
    };
    let sim = Simulation::start(options)
        .await
        .expect("starts (RabbitMQ on 5672?)");
    let topic = sim.topic(Collection::Clusters).unwrap().to_string();
    let fleet = sim.fleet().clone();
    let base_url = sim.base_url().to_string();
    let run_options = RunOptions {
        duration: None,
        cycles: None,
        change: None,
        progress: ProgressStyle::Quiet,
    };
    let run = run::run(sim, run_options);
    tokio::pin!(run);
    let sentinel_side = async {
        // The sentinel under test, as its publisher does: declare (durable, type topic), publish.
        let conn = Connection::connect(
            "amqp://guest:guest@127.0.0.1:5672/%2f",
            ConnectionProperties::default(),
        )
        .await
        .expect("connect");
        let channel = conn.create_channel().await.expect("channel");
        let durable = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        channel
            .exchange_declare(
                topic.as_str().into(),
                ExchangeKind::Topic,
                durable,
                FieldTable::default(),
            )
            .await
            .expect("the sentinel's declaration (type topic) agrees with the simulation's");
        for i in 0..3 {
            let body =
                json!({"data": {"id": sample_id(Collection::Clusters, i), "kind": "Cluster"}});
            channel
                .basic_publish(
                    topic.as_str().into(),
                    "".into(),
                    BasicPublishOptions::default(),
                    body.to_string().as_bytes(),
                    BasicProperties::default(),
                )
                .await
                .expect("publish")
                .await
                .expect("confirm");
        }
        let deadline = std::time::Instant::now() + PATIENCE;
        while !fleet.progress(Collection::Clusters).converged() {
            assert!(
                std::time::Instant::now() < deadline,
                "the adapters never heard the events"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Converged; the run used to end within a progress tick (250 ms) of this.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let listing = reqwest::get(format!("{base_url}/api/hyperfleet/v1/clusters"))
            .await
            .expect("the fake API still answers");
        assert!(listing.status().is_success());
        (conn, channel)
    };
    let (conn, channel) = tokio::select! {
        summary = &mut run => panic!("the API went away once the fleet converged: {summary:?}"),
        sides = sentinel_side => sides,
    };
    let _ = channel
        .exchange_delete(topic.as_str().into(), ExchangeDeleteOptions::default())
        .await;
    let _ = conn.close(200, "done".into()).await;
}

// ---- google pub/sub (issue 12; Google's emulator, tests/common/pubsub.rs) ----

use crate::common::pubsub;

async fn pubsub_rig(clusters: u64, cluster_adapters: &[&str]) -> Rig {
    let emulator = pubsub::shared();
    let clock = Arc::new(ManualClock::new(
        parse_time("2026-05-01T08:00:00Z").unwrap(),
    ));
    let options = SimOptions {
        clusters,
        cluster_adapters: adapters(cluster_adapters),
        broker: BrokerChoice::PubSub {
            emulator_host: emulator.host(),
            project: pubsub::PROJECT.into(),
        },
        topic_prefix: pubsub::unique("simulate"),
        config_yaml: RULES.into(),
        clock: clock.clone(),
        ..SimOptions::default()
    };
    let sim = Simulation::start(options)
        .await
        .unwrap_or_else(|e| panic!("simulation on the pub/sub emulator did not start: {e}"));
    Rig {
        sim,
        clock,
        http: reqwest::Client::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_new_resources_converge() {
    let rig = pubsub_rig(30, &["validation", "dns", "pullsecret", "hypershift"]).await;
    let rig = new_resources_converge_with_one_event_each(rig).await;
    rig.sim.shutdown().await;
}
