//! What the rules read never changes what is published: for generated configs (random subsets of
//! resource and condition fields read by params, the result and message_data, statically and
//! through dynamic paths such as `resource["href"]`) over a generated fleet of clusters and
//! nodepools, the events `serve`'s pipeline publishes (pages decoded under the rules'
//! projection, native code) are those of the reference pipeline (pages decoded completely, the
//! interpreter): the same `type`, `source` and `data`, for the same resources, in the same
//! order. Both run the real loop (`Daemon::cycle`) against the fake API, publishing in process.

use crate::harness::fake_api::fake_api;
use crate::harness::in_process::fast_backoff;
use crate::harness::now;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use sentinel::api::{ApiClient, ApiClientConfig};
use sentinel::broker::{MemoryPublisher, MessageSink, Publisher};
use sentinel::daemon::config::{ConfigFlags, load_str};
use sentinel::daemon::runtime::{CycleReport, Daemon};
use sentinel::rules::{Rules, RulesOptions};
use sentinel::sim::api::{Collection, Fleet, realistic_resource, sample_resource};
use serde_json::{Value as Json, json};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Boolean params, each reading something of the resource: resource fields and condition fields
/// (statically), whole values, and dynamic reads the projection does not name.
const PARAMS: &[&str] = &[
    "resource.generation > 1",
    r#"resource.generation > condition("Reconciled").observed_generation"#,
    r#"condition("Reconciled").status == "True""#,
    r#"condition("Ready").status != "False""#,
    r#"condition("Available").reason.startsWith("All")"#,
    r#"condition("Reconciled").message.contains("adapters")"#,
    r#"condition("Reconciled").last_transition_time < condition("Reconciled").created_time"#,
    r#"now - timestamp(condition("Reconciled").last_updated_time) > duration("30m")"#,
    r#"resource.name.endsWith("1") || resource.name.endsWith("4")"#,
    "size(resource.href) % 2 == 0",
    r#"resource.kind == "Cluster""#,
    r#"resource.id.endsWith("3") || resource.id.endsWith("a")"#,
    "resource.updated_time > resource.created_time",
    r#""tier" in resource.labels"#,
    r#"resource["hr" + "ef"].endsWith("7")"#,
    r#"resource[["ki", "nd"].join("")] == "NodePool""#,
    "has(resource.owner_references)",
    "has(resource.spec.nodes)",
    "size(resource.status.conditions) > 2",
    r#"resource.status.conditions.exists(c, c.type == "Health" && c.status == "True")"#,
    r#"condition(["Recon", "ciled"].join("")).observed_generation == resource.generation"#,
    r#"resource.owner_references.kind == "Cluster""#,
];

/// message_data leaves: `(key, expression)`.
const LEAVES: &[(&str, &str)] = &[
    ("id", "resource.id"),
    ("kind", "resource.kind"),
    ("name", "resource.name"),
    ("href", "resource.href"),
    ("generation", "resource.generation"),
    ("created", "resource.created_time"),
    ("updated", "resource.updated_time"),
    ("labels", "resource.labels"),
    ("region", "resource.labels.region"),
    (
        "statuses",
        r#"resource.status.conditions.filter(c, c.type == "Reconciled").map(c, c.status)"#,
    ),
    (
        "observed",
        "resource.status.conditions.map(c, c.observed_generation)",
    ),
    ("reason", "reason"),
    ("dynamic_name", r#"resource["na" + "me"]"#),
    ("types", "resource.status.conditions.map(c, c.type)"),
    ("spec", "resource.spec"),
    ("owner", "resource.owner_references.id"),
    ("constant", r#""fixed""#),
];

/// One generated config: which params (combined by the result), which leaves.
#[derive(Clone, Debug)]
struct Spec {
    params: Vec<usize>,
    /// For each param after the first: `||` (true) or `&&` (false) with what comes before.
    ors: Vec<bool>,
    negate_first: bool,
    leaves: Vec<usize>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::collection::vec(0..PARAMS.len(), 0..=4),
        prop::collection::vec(any::<bool>(), 4),
        any::<bool>(),
        prop::sample::subsequence((0..LEAVES.len()).collect::<Vec<_>>(), 1..=5),
    )
        .prop_map(|(params, ors, negate_first, leaves)| Spec {
            params,
            ors,
            negate_first,
            leaves,
        })
}

/// The config text of `spec` for `resource_type`.
fn config_text(spec: &Spec, resource_type: &str) -> String {
    let mut text = format!(
        "resource_type: {resource_type}\npoll_interval: 1h\nclients:\n  hyperfleet_api:\n    \
         base_url: http://127.0.0.1:9\n  broker:\n    topic: projection\nmessage_decision:\n  \
         params:\n"
    );
    let mut result = String::new();
    for (i, &p) in spec.params.iter().enumerate() {
        text += &format!(
            "    - name: p{i}\n      expr: '{}'\n",
            PARAMS[p].replace('\'', "''")
        );
        match i {
            0 if spec.negate_first => result += "!p0",
            0 => result += "p0",
            _ => result += &format!(" {} p{i}", if spec.ors[i - 1] { "||" } else { "&&" }),
        }
    }
    if spec.params.is_empty() {
        text += "    - name: always\n      expr: 'true'\n";
        result = "always".into();
    }
    text += &format!("  result: '{result}'\n");
    text += "message_data:\n";
    for &l in &spec.leaves {
        let (key, expr) = LEAVES[l];
        text += &format!("  {key}: '{}'\n", expr.replace('\'', "''"));
    }
    text
}

/// The fleet: realistic and sample clusters and nodepools, varied so that every param and
/// leaf is true for some and false or failing for others (bumped generations, conditions of
/// other statuses or missing, Kubernetes spellings, escapes, a field of the wrong type).
fn fleet() -> Fleet {
    let fleet = Fleet::new();
    let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .expect("time")
        .to_utc();
    for i in 0..24u64 {
        let mut r = match i % 2 {
            0 => realistic_resource(i, now),
            _ => sample_resource(Collection::Clusters, i, &[("tier", "gold")]),
        };
        vary(&mut r, i);
        fleet.insert(Collection::Clusters, r).expect("cluster");
        let mut np = sample_resource(Collection::NodePools, i, &[("region", "eu")]);
        vary(&mut np, i + 7);
        fleet.insert(Collection::NodePools, np).expect("nodepool");
    }
    fleet
}

fn vary(r: &mut Json, i: u64) {
    match i % 8 {
        1 => r["generation"] = json!(2 + i as i64),
        2 => r["status"]["conditions"][0]["status"] = json!("False"),
        3 => r["status"] = json!({"conditions": []}),
        4 => {
            let c = &mut r["status"]["conditions"][0];
            if let Some(t) = c
                .as_object_mut()
                .and_then(|c| c.remove("last_updated_time"))
            {
                c["lastUpdatedTime"] = t;
            }
        }
        5 => r["name"] = json!(format!("n\u{e9}\"{i}")),
        6 => r["labels"] = json!({"tier": "x", "region": "us"}),
        7 if i.is_multiple_of(3) => r["generation"] = json!("two"),
        _ => {}
    }
}

/// Collects the message bodies a daemon publishes, in order.
#[derive(Default)]
struct Sink(Mutex<Vec<Vec<u8>>>);

impl MessageSink for Sink {
    fn deliver(&self, _event_id: uuid::Uuid, body: &[u8]) -> Result<(), String> {
        self.0.lock().expect("sink").push(body.to_vec());
        Ok(())
    }
}

/// One cycle of a daemon with `text`'s config compiled as `options` say, over the fake API at
/// `base_url`: its report and the events it published, each as `(type, source, data)`.
async fn publish(
    text: &str,
    options: RulesOptions,
    base_url: &str,
) -> (CycleReport, Vec<(Json, Json, Json)>) {
    let config = load_str(text, "generated.yaml", &ConfigFlags::default(), &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let rules = Arc::new(Rules::compile_with(&config, options).expect("rules compile"));
    let api = ApiClient::new(ApiClientConfig {
        base_url: base_url.to_string(),
        page_size: 7,
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .expect("api client");
    let sink = Arc::new(Sink::default());
    let publisher = Publisher::Memory(MemoryPublisher::new(sink.clone()));
    let mut daemon = Daemon::new(&config, rules, api, publisher);
    let (_stop, mut shutdown) = watch::channel(false);
    let report = daemon.cycle(now(), &mut shutdown).await;
    let events = sink
        .0
        .lock()
        .expect("sink")
        .iter()
        .map(|body| {
            let event: Json = serde_json::from_slice(body).expect("event JSON");
            (
                event["type"].clone(),
                event["source"].clone(),
                event["data"].clone(),
            )
        })
        .collect();
    (report, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_rules_read_never_changes_what_is_published() {
    let api = fake_api(fleet()).await;
    let mut runner = TestRunner::deterministic();
    let strategy = spec();
    let mut published = 0;
    let mut skipped = 0;
    for case in 0..48 {
        let spec = strategy
            .new_tree(&mut runner)
            .expect("a generated config")
            .current();
        for resource_type in ["clusters", "nodepools"] {
            let text = config_text(&spec, resource_type);
            let (serve, serve_events) = publish(&text, RulesOptions::SERVE, &api.base_url).await;
            let (reference, reference_events) =
                publish(&text, RulesOptions::REFERENCE, &api.base_url).await;
            assert!(reference.completed, "case {case}\n{text}");
            assert_eq!(serve, reference, "case {case}\n{text}");
            assert_eq!(serve_events, reference_events, "case {case}\n{text}");
            let kind = match resource_type {
                "clusters" => "cluster",
                _ => "nodepool",
            };
            let ty = json!(format!("com.redhat.hyperfleet.{kind}.reconcile"));
            // Every event has its resource's type, whatever the config reads (one resource
            // of each collection has no such kind only if the fleet says so: it does not).
            assert!(
                serve_events.iter().all(|(t, _, _)| *t == ty),
                "case {case}\n{text}\n{serve_events:?}"
            );
            published += serve.published;
            skipped += serve.skipped;
        }
    }
    // The generated configs publish some resources and skip others.
    assert!(published > 100 && skipped > 100, "{published} {skipped}");
}

/// The bug this file exists for: a config whose rules and message_data never mention `kind`
/// published `com.redhat.hyperfleet..reconcile` for every resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_that_reads_nothing_publishes_the_right_type() {
    let api = fake_api(fleet()).await;
    let spec = Spec {
        params: Vec::new(),
        ors: Vec::new(),
        negate_first: false,
        leaves: vec![0],
    };
    for (resource_type, ty) in [
        ("clusters", "com.redhat.hyperfleet.cluster.reconcile"),
        ("nodepools", "com.redhat.hyperfleet.nodepool.reconcile"),
    ] {
        let text = config_text(&spec, resource_type);
        let (report, events) = publish(&text, RulesOptions::SERVE, &api.base_url).await;
        assert_eq!(report.published, 24, "{text}");
        for (t, source, data) in &events {
            assert_eq!(t.as_str(), Some(ty));
            assert_eq!(source.as_str(), Some("hyperfleet-sentinel"));
            assert!(
                data["id"].as_str().is_some_and(|id| !id.is_empty()),
                "{data}"
            );
        }
    }
}
