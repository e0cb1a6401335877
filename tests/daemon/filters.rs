//! Server-side filters and projection against the fake API, which speaks the real API's list
//! language: nothing the rules publish is missed.
//!
//! The differential: generated rule sets (params over condition statuses and times,
//! generation, observed generation and labels, combined with `&&`, `||`, `!` and `?:`) run in
//! the simulator with `server_filters: auto` (and a full sweep when the derivation needs one),
//! on a fleet stepped through simulated time with adapters reporting. Before each cycle the
//! reference decides every stored resource with the interpreter; after it, the events
//! published are compared: without a sweep they are exactly the reference's; with one, a due
//! resource the filter left out must be published within the sweep's bound (or stop being due
//! first). `server_projection` must change nothing either.

use sentinel::cel::host::Resource;
use sentinel::daemon::config::{self, ConfigFlags};
use sentinel::rules::decision::{DecisionSource, ParamSource, Program};
use sentinel::rules::filter;
use sentinel::sim::api::{Collection, sample_resource};
use sentinel::sim::clock::{Clock, ManualClock, format_time, parse_time, to_timestamp};
use sentinel::sim::simulation::{SimOptions, Simulation};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_secs(5);
const SWEEP: Duration = Duration::from_secs(30);
const CLUSTERS: u64 = 48;
const CYCLES: usize = 36;

/// One atom of a generated rule, over what the simulated fleet has.
fn atom(rng: &mut fastrand::Rng) -> String {
    let ty = ["Reconciled", "LastKnownReconciled"][rng.usize(..2)];
    let status = ["True", "False", "Unknown", ""][rng.usize(..4)];
    let secs = [5, 10, 20, 45][rng.usize(..4)];
    match rng.usize(..11) {
        0 => format!(r#"condition("{ty}").status == "{status}""#),
        1 => format!(r#"condition("{ty}").status != "{status}""#),
        2 => format!(r#"condition("{ty}").last_updated_time != """#),
        3 => {
            format!(r#"now - timestamp(condition("{ty}").last_updated_time) > duration("{secs}s")"#)
        }
        4 => format!(
            r#"timestamp(condition("{ty}").last_transition_time) + duration("{secs}s") <= now"#
        ),
        5 => format!("resource.generation == {}", rng.usize(1..3)),
        6 => format!("resource.generation > {}", rng.usize(0..3)),
        7 => format!(
            r#"condition("{ty}").observed_generation < {}"#,
            rng.usize(0..3)
        ),
        8 => r#"resource.generation > condition("Reconciled").observed_generation"#.into(),
        9 => format!(
            r#"resource.labels["shard"] == "{}""#,
            ["a", "b"][rng.usize(..2)]
        ),
        _ => r#"resource.name.endsWith("7")"#.into(),
    }
}

fn expr(rng: &mut fastrand::Rng, depth: u32, params: &[String]) -> String {
    let leaf = |rng: &mut fastrand::Rng| {
        if !params.is_empty() && rng.bool() {
            params[rng.usize(..params.len())].clone()
        } else {
            atom(rng)
        }
    };
    if depth == 0 {
        return leaf(rng);
    }
    match rng.usize(..6) {
        0 => format!("!({})", expr(rng, depth - 1, params)),
        1 | 2 => format!(
            "({}) && ({})",
            expr(rng, depth - 1, params),
            expr(rng, depth - 1, params)
        ),
        3 | 4 => format!(
            "({}) || ({})",
            expr(rng, depth - 1, params),
            expr(rng, depth - 1, params)
        ),
        _ => format!(
            "({}) ? ({}) : ({})",
            expr(rng, depth - 1, params),
            expr(rng, depth - 1, params),
            expr(rng, depth - 1, params)
        ),
    }
}

fn rules(seed: u64) -> DecisionSource {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut names = Vec::new();
    let mut params = Vec::new();
    for i in 0..rng.usize(1..4) {
        let e = expr(&mut rng, 2, &names);
        let name = format!("p{i}");
        params.push(ParamSource {
            name: name.clone(),
            expr: e,
        });
        names.push(name);
    }
    let result = expr(&mut rng, 1, &names);
    DecisionSource { params, result }
}

fn config_yaml(rules: &DecisionSource, sweep: bool, projection: bool) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut y = String::from(
        "sentinel:\n  name: filters-test\nresource_type: clusters\npoll_interval: 5s\n\
         clients:\n  hyperfleet_api:\n    base_url: http://127.0.0.1:1\n    page_size: 100\n\
         \x20 broker:\n    topic: replaced\n\
         message_data:\n  id: resource.id\n  generation: resource.generation\n\
         server_filters: auto\nmessage_decision:\n  params:\n",
    );
    for p in &rules.params {
        y += &format!("    - name: {}\n      expr: {}\n", p.name, quote(&p.expr));
    }
    y += &format!("  result: {}\n", quote(&rules.result));
    if sweep {
        y += "full_sweep_interval: 30s\n";
    }
    if projection {
        y += "server_projection: true\n";
    }
    y
}

/// Rewrites the status, generation and times of about a third of the clusters at random: each
/// condition absent or with any status, times up to a minute old in whole seconds, observed
/// generations from 0 to 3.
fn scramble(sim: &Simulation, rng: &mut fastrand::Rng, now: chrono::DateTime<chrono::Utc>) {
    let ago =
        |rng: &mut fastrand::Rng| format_time(now - chrono::Duration::seconds(rng.i64(0..60)));
    for id in sim.fleet().ids(Collection::Clusters) {
        if rng.u8(..3) != 0 {
            continue;
        }
        let mut conditions = Vec::new();
        for ty in ["Reconciled", "LastKnownReconciled"] {
            if rng.u8(..5) == 0 {
                continue;
            }
            let status = ["True", "False", "Unknown"][rng.usize(..3)];
            conditions.push(serde_json::json!({
                "type": ty,
                "status": status,
                "reason": "Scrambled", "message": "",
                "created_time": ago(rng),
                "last_updated_time": ago(rng),
                "last_transition_time": ago(rng),
                "observed_generation": rng.i64(0..4),
            }));
        }
        let generation = rng.i64(1..4);
        sim.fleet().update(Collection::Clusters, &id, |r| {
            r["generation"] = serde_json::json!(generation);
            r["status"]["conditions"] = serde_json::json!(conditions);
        });
    }
}

/// What one rule set did over a run.
#[derive(Debug, Default)]
struct Outcome {
    /// Cycles that listed with the filter.
    filtered_cycles: usize,
    /// Due resources a filtered cycle left out (all published later, within the bound).
    deferred: usize,
    /// Events published.
    published: usize,
}

/// Runs one rule set through the simulator and checks every cycle against the reference.
async fn differential(seed: u64, projection: bool) -> Outcome {
    let source = rules(seed);
    let program = Program::compile(&source).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let derived = filter::derive(&program);
    let sweep = derived.needs_sweep();
    let yaml = config_yaml(&source, sweep, projection);
    let clock = Arc::new(ManualClock::new(
        parse_time("2026-05-01T08:00:00Z").unwrap(),
    ));
    let options = SimOptions {
        clusters: CLUSTERS,
        config_yaml: yaml.clone(),
        clock: clock.clone(),
        seed,
        ..SimOptions::default()
    };
    // The config itself is valid: the simulation loads it the same way.
    config::load_str(&yaml, "filters test", &ConfigFlags::default(), &|_| None)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{yaml}"));
    let mut sim = Simulation::start(options).await.expect("simulation starts");
    let ids = sim.fleet().ids(Collection::Clusters);
    // Labels on some clusters, so that label atoms select something.
    for (i, id) in ids.iter().enumerate() {
        let shard = ["a", "b", ""][i % 3];
        if !shard.is_empty() {
            sim.fleet().update(Collection::Clusters, id, |r| {
                r["labels"] = serde_json::json!({"shard": shard});
            });
        }
    }
    let context = format!(
        "seed {seed} projection {projection}\n{yaml}filter: {}",
        derived.tight
    );
    let bound_cycles = (SWEEP.as_secs() / POLL.as_secs()) as usize + 1;
    let mut owed: BTreeMap<String, usize> = BTreeMap::new();
    let mut outcome = Outcome::default();
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut slots = Vec::new();
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed);
    for cycle in 0..CYCLES {
        if cycle == CYCLES / 2 {
            // A spec change on some clusters: generation + 1, Reconciled goes False.
            sim.change(0.25, 0.0);
        }
        // Statuses change on their own too (adapters answering earlier events, other
        // writers), so the rules' every branch meets resources.
        scramble(&sim, &mut rng, clock.now());
        if cycle % 3 == 1 {
            // New clusters keep arriving: no conditions yet, generation 1.
            for k in 0..2 {
                let index = 1_000 + (cycle * 2 + k) as u64;
                let mut r = sample_resource(Collection::Clusters, index, &[("shard", "a")]);
                let at = format_time(clock.now());
                r["status"]["conditions"] = serde_json::json!([]);
                r["created_time"] = serde_json::json!(at);
                r["updated_time"] = serde_json::json!(at);
                sim.fleet()
                    .insert(Collection::Clusters, r)
                    .expect("a new cluster");
            }
        }
        let now = to_timestamp(clock.now());
        let due: BTreeSet<String> = sim
            .fleet()
            .ids(Collection::Clusters)
            .iter()
            .filter(|id| {
                let json = sim.fleet().get(Collection::Clusters, id).expect("stored");
                let resource = Arc::new(Resource::from_json((*json).clone()));
                program.interpret(&resource, now, &mut slots).publish
            })
            .map(|id| id.to_string())
            .collect();
        let report = sim.cycle().await.remove(0);
        assert!(report.completed, "{context}\ncycle {cycle}: {report:?}");
        sim.settle(PATIENCE).await.expect("adapters settle");
        let mut published = BTreeSet::new();
        for id in sim.fleet().ids(Collection::Clusters) {
            let n = sim.events_for(Collection::Clusters, &id);
            let before = counts.insert(id.to_string(), n).unwrap_or(0);
            if n > before {
                published.insert(id.to_string());
            }
        }
        outcome.published += published.len();
        assert!(
            published.is_subset(&due),
            "{context}\ncycle {cycle}: published but not due: {:?}",
            published.difference(&due).collect::<Vec<_>>()
        );
        if report.filtered {
            outcome.filtered_cycles += 1;
        }
        let missed: Vec<&String> = due.difference(&published).collect();
        if !sweep || !report.filtered {
            assert!(
                missed.is_empty(),
                "{context}\ncycle {cycle} (filtered: {}): due but not published: {missed:?}",
                report.filtered
            );
        }
        // What was owed is settled by a publish, or by no longer being due.
        owed.retain(|id, _| due.contains(id) && !published.contains(id));
        for id in missed {
            outcome.deferred += 1;
            owed.entry(id.clone()).or_insert(cycle);
        }
        for (id, since) in &owed {
            assert!(
                cycle - since < bound_cycles,
                "{context}\n{id} due since cycle {since} and still not published at {cycle}"
            );
        }
        clock.advance(POLL);
    }
    sim.shutdown().await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_filters_never_miss_what_the_rules_publish() {
    let (mut filtered, mut deferred, mut published, mut swept_sets) = (0, 0, 0, 0);
    for seed in 1..=16 {
        let o = differential(seed, false).await;
        filtered += o.filtered_cycles;
        deferred += o.deferred;
        published += o.published;
        swept_sets +=
            usize::from(filter::derive(&Program::compile(&rules(seed)).unwrap()).needs_sweep());
    }
    // The runs exercised what they check: filtered cycles, publishes, and deferrals that the
    // sweep settled.
    assert!(filtered > 100, "filtered cycles: {filtered}");
    assert!(published > 100, "published: {published}");
    assert!(
        swept_sets > 0 && deferred > 0,
        "sweeps: {swept_sets}, deferred: {deferred}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projection_changes_no_decision() {
    for seed in 101..=106 {
        differential(seed, true).await;
    }
}

#[test]
fn the_generated_rule_sets_are_sound_on_boundary_resources() {
    let now = sentinel::cel::time::parse_timestamp("2026-05-01T08:00:00Z").unwrap();
    for seed in 1..=100 {
        let program = Program::compile(&rules(seed)).unwrap();
        let derived = filter::derive(&program);
        if let Some(c) = filter::counterexample(&program, &derived.sound, now, 400, seed) {
            panic!("seed {seed}: {} misses {}", derived.sound, c.resource);
        }
        if !derived.needs_sweep()
            && let Some(c) = filter::counterexample(&program, &derived.tight, now, 400, seed)
        {
            panic!("seed {seed}: {} misses {}", derived.tight, c.resource);
        }
    }
}

fn check(yaml: &str, now: &str) -> (bool, String) {
    let dir = std::env::temp_dir().join(format!("sentinel-filters-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sentinel"))
        .args(["check", "-c"])
        .arg(&file)
        .args(["--now", now])
        .output()
        .expect("sentinel runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

const BASE: &str = "resource_type: clusters\nclients:\n  hyperfleet_api:\n    base_url: http://127.0.0.1:1\n  \
                    broker:\n    topic: t\nmessage_data:\n  id: resource.id\n";

#[test]
fn check_explains_the_filter_its_cutoffs_and_what_blocks_it() {
    let now = "2026-12-02T10:00:00.4Z";
    let (ok, text) = check(
        &format!("{BASE}server_filters: auto\nfull_sweep_interval: 5m\n"),
        now,
    );
    assert!(ok, "{text}");
    for want in [
        "server_filters: auto   full_sweep_interval: 5m0s",
        "search at 2026-12-02T10:00:00.4Z: (generation = 1 and status.conditions.Reconciled IS NULL) \
         or (status.conditions.Reconciled = 'True' and \
         status.conditions.Reconciled.last_updated_time < '2026-12-02T09:30:01Z')",
        "left to the full sweep (published at most 5m0s + poll_interval late): \
         message_decision.params[4] \"generation_mismatch\"",
        "server_projection: off",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // The file's own keys would stop a rolled-back Go image: check says so, naming the env.
    assert!(
        text.contains("config.yaml: server_filters: the Go sentinel refuses this key in a file")
            && text.contains("set HYPERFLEET_FULL_SWEEP_INTERVAL instead"),
        "{text}"
    );
    // Without a sweep the default rules cannot be filtered: said, not guessed.
    let (ok, text) = check(
        &format!("{BASE}server_filters: auto\nserver_projection: true\n"),
        now,
    );
    assert!(ok, "{text}");
    assert!(
        text.contains("warning: server_filters: auto filters nothing"),
        "{text}"
    );
    assert!(
        text.contains("server_projection: fields=generation,id,kind,status.conditions.type,"),
        "{text}"
    );
    // Off: what auto would do.
    let (ok, text) = check(BASE, now);
    assert!(ok, "{text}");
    assert!(
        text.contains("auto would filter with a full_sweep_interval: (generation = 1"),
        "{text}"
    );
}

#[test]
fn check_refuses_an_operator_search_that_misses_what_the_rules_publish() {
    let now = "2026-12-02T10:00:00Z";
    // Misses the new clusters (no Reconciled condition yet) the default rules publish.
    let narrow = "server_filters: \"status.conditions.Reconciled = 'False'\"\n";
    let (ok, text) = check(&format!("{BASE}{narrow}"), now);
    assert!(!ok, "{text}");
    assert!(
        text.contains("the search leaves out a resource the rules publish"),
        "{text}"
    );
    // With a sweep it is listed late, not never: a warning.
    let (ok, text) = check(&format!("{BASE}{narrow}full_sweep_interval: 10m\n"), now);
    assert!(ok, "{text}");
    assert!(
        text.contains("warning: the search leaves out a resource"),
        "{text}"
    );
    // A search as wide as the rules: nothing found.
    let rules =
        "message_decision:\n  params: []\n  result: 'condition(\"Ready\").status == \"False\"'\n";
    let wide = "server_filters: \"status.conditions.Ready = 'False' or status.conditions.Ready = 'Unknown'\"\n";
    let (ok, text) = check(&format!("{BASE}{rules}{wide}"), now);
    assert!(ok, "{text}");
    assert!(
        text.contains("no resource the rules publish is left out"),
        "{text}"
    );
    // A search the API would refuse is a config error, with the API's reason.
    let bad = "server_filters: \"status.conditions.Ready != 'True'\"\n";
    let (ok, text) = check(&format!("{BASE}{bad}"), now);
    assert!(!ok, "{text}");
    assert!(text.contains("server_filters"), "{text}");
}

fn load(yaml: &str, env: &[(&str, &str)]) -> Result<config::Config, String> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    config::load_str(yaml, "config.yaml", &ConfigFlags::default(), &lookup)
        .map_err(|e| e.to_string())
}

/// Issue #38 item 4: `server_filters` as a YAML list of searches (upstream's planned form: its
/// client joins `additionalFilters ...string` with ` and ` after the label terms), from the
/// file or as a flow sequence in `HYPERFLEET_SERVER_FILTERS`; each checked at load, ANDed in
/// order, blank ones dropped as Go drops them; `config-dump` writes it back as a list.
#[test]
fn server_filters_as_a_list_are_anded_in_order() {
    use sentinel::daemon::config::ServerFilters;
    use sentinel::daemon::plan::Plan;
    let selector = "resource_selector:\n  - label: shard\n    value: '1'\n";
    let list =
        "server_filters:\n  - \"status.conditions.Ready = 'False'\"\n  - ''\n  - generation > 1\n";
    let env_list = r#"["status.conditions.Ready = 'False'", "generation > 1"]"#;
    let from_file = load(&format!("{BASE}{selector}{list}"), &[]).expect("loads");
    let from_env = load(
        &format!("{BASE}{selector}"),
        &[("HYPERFLEET_SERVER_FILTERS", env_list)],
    )
    .expect("loads");
    let searches = ServerFilters::Searches(vec![
        "status.conditions.Ready = 'False'".into(),
        "generation > 1".into(),
    ]);
    for config in [&from_file, &from_env] {
        assert_eq!(config.server_filters, searches);
        let rules = sentinel::rules::Rules::compile(config).expect("compiles");
        let plan = Plan::new(config, &rules);
        let now = sentinel::cel::time::parse_timestamp("2026-12-02T10:00:00Z").unwrap();
        assert_eq!(
            plan.search(now, false).as_deref(),
            Some("labels.shard='1' and (status.conditions.Ready = 'False' and generation > 1)")
        );
    }
    // The env form, set, is no rollback hazard; the file's key is.
    assert!(from_env.warnings.is_empty(), "{:?}", from_env.warnings);
    let dumped = config::dump(&from_file);
    assert!(
        dumped.contains("server_filters:\n- status.conditions.Ready = 'False'\n- generation > 1\n"),
        "{dumped}"
    );
    assert_eq!(
        load(&dumped, &[]).expect("reloads").server_filters,
        searches
    );
    // Each search is checked, and named by its place.
    for (list, want) in [
        (
            "server_filters:\n  - generation > 1\n  - \"status.conditions.Ready != 'True'\"\n",
            "server_filters[1]: is not a search the API accepts",
        ),
        (
            "server_filters:\n  - auto\n",
            "server_filters[0]: off and auto are settings",
        ),
        (
            "server_filters:\n  - {a: 1}\n",
            "server_filters[0]: expected a string",
        ),
    ] {
        let err = load(&format!("{BASE}{list}"), &[]).expect_err(list);
        assert!(err.contains(want), "{list}: {err}");
    }
    let err = load(BASE, &[("HYPERFLEET_SERVER_FILTERS", "[1, [2]]")]).expect_err("a bad list");
    assert!(err.contains("HYPERFLEET_SERVER_FILTERS"), "{err}");
    // An empty list (or one of blanks) filters nothing.
    for list in ["server_filters: []\n", "server_filters: ['', ' ']\n"] {
        let config = load(&format!("{BASE}{list}"), &[]).expect(list);
        assert_eq!(config.server_filters, ServerFilters::Off, "{list}");
    }
}

/// `sentinel check` probes a list as one search, and names the searches of it that leave out a
/// resource the rules publish.
#[test]
fn check_names_the_search_of_a_list_that_misses_what_the_rules_publish() {
    let now = "2026-12-02T10:00:00Z";
    let rules =
        "message_decision:\n  params: []\n  result: 'condition(\"Ready\").status == \"False\"'\n";
    let wide = "server_filters:\n  - \"status.conditions.Ready = 'False' or status.conditions.Ready = 'Unknown'\"\n  - generation > 0\n";
    let (ok, text) = check(&format!("{BASE}{rules}{wide}"), now);
    assert!(ok, "{text}");
    assert!(
        text.contains("no resource the rules publish is left out"),
        "{text}"
    );
    assert!(
        text.contains(r#"server_filters: ["status.conditions.Ready = 'False' or"#),
        "{text}"
    );
    let narrow = "server_filters:\n  - \"status.conditions.Ready = 'False'\"\n  - generation > 3\n";
    let (ok, text) = check(&format!("{BASE}{rules}{narrow}"), now);
    assert!(!ok, "{text}");
    assert!(
        text.contains("server_filters[1]") && !text.contains("server_filters[0]"),
        "{text}"
    );
}
