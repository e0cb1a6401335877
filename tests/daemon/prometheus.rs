//! docs/prometheus-rules.yaml and docs/grafana-dashboard.json in a real Prometheus (Debian's
//! `prometheus` package: `prometheus` and `promtool`; `.ci/run` installs it, and these tests
//! fail, saying so, without it).
//!
//! - [`alert_rules_pass_promtool`]: `promtool check rules`, then `promtool test rules` with
//!   tests/data/prometheus/rules.test.yaml: each alert's firing and must-not-fire cases, with the
//!   rules' own `for` durations and windows over synthetic series.
//! - [`alerts_and_dashboard_in_a_real_prometheus`]: one Prometheus per scenario (healthy,
//!   settled fleet, busy fleet, API answering 500, broker cut, process killed), each scraping a
//!   live `sentinel serve` against the fake API every second and evaluating the unchanged rules
//!   every second. Each scenario's alerts must be active (pending or firing: their `for`, minutes
//!   long, is promtool's to prove) and every other alert inactive, and every dashboard query
//!   must return data (or 0).

use crate::common::proxy::Proxy;
use crate::common::rig::unique;
use crate::harness::fake_api::{FakeServer, fake_api};
use crate::harness::serve::{Process, TempDir, free_port};
use crate::harness::{new_clusters, read_data};
use sentinel::sim::api::{Collection, Fault, FaultRule, Fleet, sample_resource};
use serde_json::{Value as Json, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every alert of the rules file: the Go chart's eight, then this sentinel's four for its
/// server-side settings.
const ALERTS: [&str; 12] = [
    "SentinelDown",
    "SentinelPollStale",
    "SentinelAPIErrorRateHigh",
    "SentinelBrokerErrorRateHigh",
    "SentinelSlowPolling",
    "SentinelHighPendingResources",
    "SentinelNoEventsPublished",
    "SentinelHighSkipRatio",
    "SentinelServerFilterRefused",
    "SentinelServerProjectionRefused",
    "SentinelFullSweepOverdue",
    "SentinelServerFilterLeftOut",
];

/// How long a scenario may take to bring its alerts up: the API scenario needs two failed
/// cycles (each ~23.5 s of retries) and 60 s without a completed cycle.
const SCENARIO_LIMIT: Duration = Duration::from_secs(150);

/// The path of a Prometheus tool, or a loud failure saying how to get it.
fn tool(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "`{name}` is not installed: these tests need Debian's `prometheus` package \
             (apt-get install prometheus; .ci/run installs it)"
        )
    })
}

/// The rule groups of docs/prometheus-rules.yaml (the PrometheusRule's `spec`) as a Prometheus
/// rule file, every group evaluated every `interval` (`None`: as written).
fn rule_file(interval: Option<&str>) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus-rules.yaml");
    let text = std::fs::read_to_string(&path).expect("docs/prometheus-rules.yaml");
    let rule: yaml_serde::Value = yaml_serde::from_str(&text).expect("the rules parse");
    let mut spec = rule["spec"].clone();
    if let Some(interval) = interval {
        for group in spec["groups"].as_sequence_mut().expect("groups") {
            group["interval"] = interval.into();
        }
    }
    yaml_serde::to_string(&spec).expect("rules as YAML")
}

/// tests/data/prometheus/rules.test.yaml.
fn promtool_cases() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prometheus/rules.test.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("run a prometheus tool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn alert_rules_pass_promtool() {
    let promtool = tool("promtool");
    let dir = TempDir::new();
    dir.write("rules.yaml", &rule_file(None));
    let tests = dir.write("rules.test.yaml", &promtool_cases());
    let (ok, out) = run(Command::new(&promtool)
        .args(["check", "rules"])
        .arg(dir.0.join("rules.yaml")));
    assert!(ok, "promtool check rules:\n{out}");
    assert!(out.contains("SUCCESS: 12 rules found"), "{out}");
    let (ok, out) = run(Command::new(&promtool).args(["test", "rules"]).arg(&tests));
    assert!(ok, "promtool test rules:\n{out}");

    // Every alert has a firing case and a must-not-fire case there.
    let cases: yaml_serde::Value =
        yaml_serde::from_str(&std::fs::read_to_string(&tests).expect("read")).expect("parses");
    let mut firing = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    for test in cases["tests"].as_sequence().expect("tests") {
        for case in test["alert_rule_test"].as_sequence().into_iter().flatten() {
            let name = case["alertname"].as_str().expect("alertname").to_string();
            let fires = case["exp_alerts"]
                .as_sequence()
                .is_some_and(|a| !a.is_empty());
            if fires { &mut firing } else { &mut quiet }.insert(name);
        }
    }
    let all: BTreeSet<String> = ALERTS.iter().map(|a| a.to_string()).collect();
    assert_eq!(firing, all, "a firing case per alert");
    assert_eq!(quiet, all, "a must-not-fire case per alert");
}

/// The promtool tests can fail: the same cases against a rule file whose skip-ratio alert is
/// Go's (the `+` that matches nothing while nothing was published) fail.
#[test]
fn the_promtool_cases_catch_gos_skip_ratio() {
    let promtool = tool("promtool");
    let dir = TempDir::new();
    let ours = "+ (\n                  sum by (resource_type, resource_selector) \
                (rate(hyperfleet_sentinel_events_published_total[10m]))\n                  \
                or sum by (resource_type, resource_selector) \
                (rate(hyperfleet_sentinel_resources_skipped_total[10m])) * 0\n                )";
    let gos = "+ sum by (resource_type, resource_selector) \
               (rate(hyperfleet_sentinel_events_published_total[10m]))";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus-rules.yaml");
    let text = std::fs::read_to_string(&path).expect("docs/prometheus-rules.yaml");
    assert!(text.contains(ours), "the skip ratio's fallback moved");
    let broken = text.replace(ours, gos);
    let rule: yaml_serde::Value = yaml_serde::from_str(&broken).expect("parses");
    dir.write(
        "rules.yaml",
        &yaml_serde::to_string(&rule["spec"]).expect("YAML"),
    );
    let tests = dir.write("rules.test.yaml", &promtool_cases());
    let (ok, out) = run(Command::new(&promtool).args(["test", "rules"]).arg(&tests));
    assert!(!ok, "{out}");
    assert!(out.contains("alertname: SentinelHighSkipRatio"), "{out}");
}

// ---- a real Prometheus ----

/// A Prometheus on a free port of 127.0.0.1 scraping one target every second, with the rules
/// evaluated every second; killed on drop.
struct Prometheus {
    child: Child,
    url: String,
    http: reqwest::Client,
    dir: TempDir,
}

impl Prometheus {
    /// Starts one, on a port picked free just before: when another process takes that port
    /// first (Prometheus then exits), it starts again on another. It is ready once *this*
    /// Prometheus answers (its flags name this config file), not whatever holds the port.
    async fn start(job: &str, target: &str) -> Prometheus {
        let dir = TempDir::new();
        dir.write("rules.yaml", &rule_file(Some("1s")));
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n\
             rule_files: [rules.yaml]\n\
             scrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: \
             ['{target}']\n        labels: {{namespace: hyperfleet-system}}\n"
        );
        let config = dir.write("prometheus.yml", &config);
        let http = reqwest::Client::new();
        for _ in 0..5 {
            let port = free_port();
            let log = std::fs::File::create(dir.0.join("prometheus.log")).expect("log file");
            let mut child = Command::new(tool("prometheus"))
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.0.join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start prometheus");
            let url = format!("http://127.0.0.1:{port}");
            let flags = format!("{url}/api/v1/status/flags");
            let mine = wait_for(
                "prometheus to be ready",
                Duration::from_secs(30),
                async || {
                    if child.try_wait().expect("try_wait").is_some() {
                        return Some(false);
                    }
                    let r = http.get(&flags).send().await.ok()?;
                    let body: Json = r.json().await.ok()?;
                    (body["data"]["config.file"] == config.display().to_string()).then_some(true)
                },
            )
            .await;
            if mine {
                return Prometheus {
                    child,
                    url,
                    http,
                    dir,
                };
            }
            let log = std::fs::read_to_string(dir.0.join("prometheus.log")).unwrap_or_default();
            eprintln!("prometheus on port {port} exited, starting it again:\n{log}");
        }
        panic!("prometheus did not start in five tries");
    }

    /// What this Prometheus says of its scrape target, and its log's end (for a failure).
    async fn diagnosis(&self) -> String {
        let targets = self.api("targets", &[]).await;
        let log = std::fs::read_to_string(self.dir.0.join("prometheus.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "targets: {}\nprometheus log:\n{}",
            targets["activeTargets"],
            tail.join("\n")
        )
    }

    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Json {
        let url = format!("{}/api/v1/{path}", self.url);
        let response = self.http.get(&url).query(query).send().await;
        let body: Json = response
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        assert_eq!(body["status"], "success", "{path} {query:?}: {body}");
        body["data"].clone()
    }

    /// The samples of an instant query.
    async fn query(&self, expr: &str) -> Vec<Json> {
        let data = self.api("query", &[("query", expr)]).await;
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// The names of the alerts now pending or firing.
    async fn active_alerts(&self) -> BTreeSet<String> {
        let data = self.api("alerts", &[]).await;
        data["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["state"] == "pending" || a["state"] == "firing")
            .filter_map(|a| a["labels"]["alertname"].as_str().map(String::from))
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` every 200 ms until it gives `Some`, failing with `what` after `limit`.
async fn wait_for<T>(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < limit, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One scenario: a fleet, what is done to the running sentinel, and the alerts it must raise.
struct Scenario {
    name: &'static str,
    fleet: Fleet,
    poll_interval: &'static str,
    fault: Trouble,
    expected: &'static [&'static str],
}

/// What a scenario does once its sentinel is up.
#[derive(Clone, Copy, PartialEq)]
enum Trouble {
    None,
    /// Every API request answers 500 from then on.
    Api500,
    /// The broker connection is cut (and stays refused).
    BrokerCut,
    /// The process is killed.
    Kill,
}

/// `reconciled` clusters reconciled just now (skipped for 30 min) and `new` ones (due in every
/// cycle).
fn fleet(reconciled: u64, new: u64) -> Fleet {
    let fleet = new_clusters(new);
    let just_now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for i in new..new + reconciled {
        let mut r = sample_resource(Collection::Clusters, i, &[]);
        r["status"]["conditions"][0]["last_updated_time"] = json!(just_now);
        fleet.insert(Collection::Clusters, r).expect("cluster");
    }
    fleet
}

/// The dashboard's queries (panels and the variable), Grafana's `$resource_type` as "All".
fn dashboard_queries() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/grafana-dashboard.json");
    let dashboard: Json =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("parses");
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            queries.push((title.to_string(), expr.replace("$resource_type", ".*")));
        }
    }
    queries
}

/// Runs one scenario to its end: the alerts it must raise active, all others inactive, every
/// dashboard query answered with data.
async fn run_scenario(scenario: Scenario) -> Result<(), String> {
    let name = scenario.name;
    let proxy = Proxy::start().await;
    let api: FakeServer = fake_api(scenario.fleet).await;
    let dir = TempDir::new();
    let topic = unique(&format!("prom-{name}"));
    let config = read_data("serve.yaml")
        .replace("{topic}", &topic)
        .replace(
            "poll_interval: 1s",
            &format!("poll_interval: {}", scenario.poll_interval),
        )
        .replace("page_size: 1", "page_size: 100");
    let config = dir.write("config.yaml", &config);
    let broker = dir.write(
        "broker.yaml",
        &read_data("broker.yaml").replace("{url}", &proxy.url()),
    );
    let env = [("HYPERFLEET_TRACING_ENABLED", "false")];
    let mut process = Process::start_env(&config, &broker, &api.base_url, &env);
    process.wait_ready().await;
    let target = process.metrics.trim_start_matches("http://").to_string();
    let job = format!("sentinel-{name}");
    let prometheus = Prometheus::start(&job, &target).await;
    // Two scrapes make a rate; then two rule evaluations (1 s apart) settle what a rule saw
    // with one sample only (a rate that does not exist yet, at any Prometheus start).
    let has_rates = "rate(hyperfleet_sentinel_poll_duration_seconds_count[1m])";
    let start = Instant::now();
    while prometheus.query(has_rates).await.is_empty() {
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "{name}: no two scrapes of the sentinel in 60 s\n{}\nsentinel output:\n{}",
                prometheus.diagnosis().await,
                process.output()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    match scenario.fault {
        Trouble::None => {}
        Trouble::Api500 => api.api.inject(FaultRule::new(Fault::Status(500)).always()),
        Trouble::BrokerCut => proxy.cut(),
        Trouble::Kill => process.signal("KILL"),
    }

    // Until the expected alerts are active, every alert ever active is noted; then the others
    // must be quiet now.
    let expected: BTreeSet<String> = scenario.expected.iter().map(|a| a.to_string()).collect();
    let start = Instant::now();
    let mut seen = BTreeSet::new();
    let active = loop {
        let active = prometheus.active_alerts().await;
        seen.extend(active.iter().cloned());
        // A scenario whose fault ends a fleet's fresh cycles (the API) is done once the stale
        // pending count has aged out (60 s); the rest once their alerts are up.
        let aged = scenario.fault != Trouble::Api500 || start.elapsed() > Duration::from_secs(70);
        if expected.is_subset(&active) && aged {
            break active;
        }
        if start.elapsed() > SCENARIO_LIMIT {
            return Err(format!(
                "{name}: expected {expected:?} active, have {active:?} (ever: {seen:?})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    if active != expected {
        return Err(format!(
            "{name}: expected {expected:?} active, have {active:?}"
        ));
    }
    // In the steady scenarios nothing else was ever active, not even for a moment.
    if matches!(scenario.fault, Trouble::None) && seen != expected {
        return Err(format!(
            "{name}: {seen:?} were active, expected only {expected:?}"
        ));
    }

    for (panel, expr) in dashboard_queries() {
        if prometheus.query(&expr).await.is_empty() {
            return Err(format!("{name}: panel {panel:?} has no data: {expr}"));
        }
    }
    let series = prometheus
        .api(
            "series",
            &[("match[]", "hyperfleet_sentinel_poll_duration_seconds_count")],
        )
        .await;
    if !series
        .as_array()
        .is_some_and(|s| s.iter().any(|s| s["resource_type"] == "clusters"))
    {
        return Err(format!("{name}: the $resource_type variable has no values"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_and_dashboard_in_a_real_prometheus() {
    tool("prometheus");
    let scenarios = vec![
        // Publishes some, skips most: nothing to say.
        Scenario {
            name: "healthy",
            fleet: fleet(10, 4),
            poll_interval: "1s",
            fault: Trouble::None,
            expected: &[],
        },
        // Everything reconciled: every decision skips (Go's skip ratio never fired here).
        Scenario {
            name: "settled",
            fleet: fleet(12, 0),
            poll_interval: "1s",
            fault: Trouble::None,
            expected: &["SentinelHighSkipRatio"],
        },
        // 150 due in every cycle, no adapter reporting back.
        Scenario {
            name: "busy",
            fleet: fleet(0, 150),
            poll_interval: "1s",
            fault: Trouble::None,
            expected: &["SentinelHighPendingResources"],
        },
        // The API answers 500 after the first cycle, which found 150 due: the API alerts, not
        // the pending ones (Go's read the frozen 150 and blamed the adapters and the broker).
        Scenario {
            name: "api500",
            fleet: fleet(0, 150),
            poll_interval: "5s",
            fault: Trouble::Api500,
            expected: &["SentinelAPIErrorRateHigh", "SentinelPollStale"],
        },
        // The broker connection is cut: four publishes fail in every cycle.
        Scenario {
            name: "broker",
            fleet: fleet(10, 4),
            poll_interval: "1s",
            fault: Trouble::BrokerCut,
            expected: &["SentinelBrokerErrorRateHigh"],
        },
        // The process is killed: its target stays and fails.
        Scenario {
            name: "killed",
            fleet: fleet(10, 4),
            poll_interval: "1s",
            fault: Trouble::Kill,
            expected: &["SentinelDown"],
        },
    ];
    // All at once, on this task: the test lasts as long as its slowest scenario.
    let results = futures_util::future::join_all(scenarios.into_iter().map(run_scenario)).await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
