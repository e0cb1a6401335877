//! The rollout tools against the fake API (which speaks the real API's search): `sentinel diff`
//! (a fleet over several pages, selectors of several labels, text and JSON, a config that does
//! not compile, the API failing mid-listing) and `sentinel shards` (uncovered and overlapping
//! shards, an exact layout, configs that disagree on the API).

use crate::harness::fake_api::{FakeServer, fake_api};
use crate::harness::serve::{TempDir, sentinel_cmd};
use sentinel::sim::api::{Collection, Fault, FaultRule, Fleet, sample_resource};
use serde_json::{Value as Json, json};

const NOW: &str = "2026-12-07T12:00:00Z";

/// 30 new clusters (generation 1, no condition: the default rules publish each), labelled
/// `shard` a, b, c in turn and `region` eu, us in turn.
fn labelled_fleet() -> Fleet {
    let fleet = Fleet::new();
    for i in 0..30u64 {
        let shard = ["a", "b", "c"][(i % 3) as usize];
        let region = ["eu", "us"][(i % 2) as usize];
        let mut r = sample_resource(
            Collection::Clusters,
            i,
            &[("shard", shard), ("region", region)],
        );
        r["status"] = json!({"conditions": []});
        fleet.insert(Collection::Clusters, r).expect("insert");
    }
    fleet
}

/// A config listing clusters from `api` two per page, with `selector` (label, value) pairs and
/// `extra` YAML appended.
fn config(api: &FakeServer, selector: &[(&str, &str)], extra: &str) -> String {
    let mut yaml = format!(
        "resource_type: clusters\nclients:\n  hyperfleet_api:\n    base_url: {}\n    \
         page_size: 2\n  broker:\n    topic: t\nmessage_data:\n  id: resource.id\n",
        api.base_url
    );
    if !selector.is_empty() {
        yaml.push_str("resource_selector:\n");
        for (label, value) in selector {
            yaml.push_str(&format!("  - label: {label}\n    value: {value}\n"));
        }
    }
    yaml + extra
}

/// Publishes the clusters in `eu` only.
const EU_ONLY: &str =
    "message_decision:\n  params: []\n  result: 'resource.labels[\"region\"] == \"eu\"'\n";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn sentinel(args: &[&str]) -> Run {
    let out = sentinel_cmd(args, &[]).output().expect("sentinel runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn diff(dir: &TempDir, new: &str, baseline: &str, json: bool) -> Run {
    let new = dir.write("new.yaml", new);
    let baseline = dir.write("old.yaml", baseline);
    let (new, baseline) = (new.display().to_string(), baseline.display().to_string());
    let mut args = vec![
        "diff",
        "--config",
        &new,
        "--baseline",
        &baseline,
        "--now",
        NOW,
    ];
    if json {
        args.push("--json");
    }
    tokio::task::block_in_place(|| sentinel(&args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_lists_once_and_reports_every_changed_decision() {
    let api = fake_api(labelled_fleet()).await;
    let dir = TempDir::new();
    // The whole fleet, 15 pages: the default rules publish all 30, the new ones the 15 in eu.
    let run = diff(
        &dir,
        &config(&api, &[], EU_ONLY),
        &config(&api, &[], ""),
        false,
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 16, "{}", run.stdout);
    assert!(
        lines[..15].iter().all(|l| l.ends_with(
            "  Cluster  publish -> skip  baseline: message decision matched; new: message \
             decision result is false"
        )),
        "{}",
        run.stdout
    );
    assert_eq!(
        lines[15],
        "listed 30; publish now: baseline 30, new 15; changed 15 (newly published 0, no longer \
         published 15)"
    );
    // The listing is the one `serve` makes (pages fetched ahead), once: 15 pages of 2.
    let mut pages = api.pages_requested();
    pages.sort();
    assert_eq!(pages, (1..=15).collect::<Vec<u32>>());

    // The new config's selector (two labels) says what is listed: shard a in us, 5 clusters.
    api.api.recorder.clear();
    let selector = [("shard", "a"), ("region", "us")];
    let run = diff(
        &dir,
        &config(&api, &selector, EU_ONLY),
        &config(&api, &[], ""),
        true,
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let objects: Vec<Json> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert_eq!(objects.len(), 6, "{}", run.stdout);
    for o in &objects[..5] {
        assert_eq!(o["kind"], "Cluster", "{o}");
        assert_eq!(
            o["baseline"],
            json!({"decision": "publish", "reason": "message decision matched"})
        );
        assert_eq!(
            o["new"],
            json!({"decision": "skip", "reason": "message decision result is false"})
        );
    }
    assert_eq!(
        objects[5],
        json!({"summary": {"listed": 5, "baseline_publish": 5, "new_publish": 0, "changed": 5}})
    );
    let searches: Vec<String> = api
        .requests()
        .iter()
        .map(|r| r.query().to_string())
        .collect();
    assert!(
        searches
            .iter()
            .all(|q| q.contains("search=labels.region%3D%27us%27+and+labels.shard%3D%27a%27")),
        "{searches:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_fails_clearly_on_bad_rules_and_on_an_api_failure() {
    let api = fake_api(labelled_fleet()).await;
    let dir = TempDir::new();
    let broken = "message_decision:\n  params: []\n  result: 'resource.nope +'\n";
    let run = diff(
        &dir,
        &config(&api, &[], broken),
        &config(&api, &[], ""),
        false,
    );
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("message_decision.result"),
        "{}",
        run.stderr
    );
    assert!(
        api.requests().is_empty(),
        "nothing is listed for rules that do not compile"
    );

    // Page 3 is refused: exit 2, the error says the report is incomplete, and no summary is
    // printed as if the listing had ended.
    api.api
        .inject(FaultRule::new(Fault::Status(400)).on_page(3).always());
    let run = diff(
        &dir,
        &config(&api, &[], EU_ONLY),
        &config(&api, &[], ""),
        false,
    );
    assert_eq!(run.code, Some(2), "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("listed"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("the listing failed after 4 resources, so no report is complete"),
        "{}",
        run.stderr
    );
}

fn shards(dir: &TempDir, configs: &[String], json: bool) -> Run {
    let paths: Vec<String> = configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            dir.write(&format!("shard-{i}.yaml"), c)
                .display()
                .to_string()
        })
        .collect();
    let mut args = vec!["shards"];
    for p in &paths {
        args.extend(["--config", p.as_str()]);
    }
    if json {
        args.push("--json");
    }
    tokio::task::block_in_place(|| sentinel(&args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_finds_what_no_config_covers_and_what_several_do() {
    let api = fake_api(labelled_fleet()).await;
    let dir = TempDir::new();
    // a, b, and b-in-eu: shard c is uncovered (10), b-in-eu is covered twice (5).
    let layout = [
        config(&api, &[("shard", "a")], ""),
        config(&api, &[("shard", "b")], ""),
        config(&api, &[("shard", "b"), ("region", "eu")], ""),
    ];
    let run = shards(&dir, &layout, false);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "listed 30", "{}", run.stdout);
    assert!(
        lines[1].ends_with("shard-0.yaml: 10 (labels.shard = 'a')"),
        "{}",
        run.stdout
    );
    assert!(
        lines[2].ends_with("shard-1.yaml: 10 (labels.shard = 'b')"),
        "{}",
        run.stdout
    );
    assert!(
        lines[3].ends_with(": 5 (labels.region = 'eu' and labels.shard = 'b')"),
        "{}",
        run.stdout
    );
    assert_eq!(lines[4], "covered by no config: 10", "{}", run.stdout);
    assert!(
        lines[5..15].iter().all(|l| l.starts_with("  ")),
        "{}",
        run.stdout
    );
    assert_eq!(lines[15], "covered by several: 5", "{}", run.stdout);
    assert_eq!(lines.len(), 21, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("10 resources covered by no config, 5 by several"),
        "{}",
        run.stderr
    );
    // The listing has no selector: the whole fleet, once.
    assert!(
        api.requests()
            .iter()
            .all(|r| !r.query().contains("search="))
    );

    let run = shards(&dir, &layout, true);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    let objects: Vec<Json> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert_eq!(objects.len(), 16, "{}", run.stdout);
    let summary = &objects[15]["summary"];
    assert_eq!(summary["listed"], 30);
    assert_eq!(summary["uncovered"], 10);
    assert_eq!(summary["overlapping"], 5);
    let per_config: Vec<u64> = summary["per_config"]
        .as_object()
        .expect("per config")
        .values()
        .map(|v| v.as_u64().expect("a count"))
        .collect();
    assert_eq!(per_config, [10, 10, 5]);

    // a, b, c: every cluster exactly once.
    let exact = [
        config(&api, &[("shard", "a")], ""),
        config(&api, &[("shard", "b")], ""),
        config(&api, &[("shard", "c")], ""),
    ];
    let run = shards(&dir, &exact, false);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("covered by no config: 0\ncovered by several: 0\n"),
        "{}",
        run.stdout
    );

    // Configs of different collections cannot be shards of one fleet.
    let nodepools =
        config(&api, &[], "").replace("resource_type: clusters", "resource_type: nodepools");
    let run = shards(&dir, &[exact[0].clone(), nodepools], false);
    assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("shards must list the same API and resource_type"),
        "{}",
        run.stderr
    );
}

/// Ctrl-C stops a listing cleanly: exit 130, said on stderr, and no summary printed. On a
/// terminal, a progress line is written while the listing runs (here a page held 3 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_stops_on_ctrl_c_and_shows_progress_on_a_terminal() {
    use std::time::Duration;
    let api = fake_api(labelled_fleet()).await;
    let dir = TempDir::new();
    let new = dir.write("new.yaml", &config(&api, &[], EU_ONLY));
    let old = dir.write("old.yaml", &config(&api, &[], ""));
    api.api.inject(
        FaultRule::new(Fault::Delay(Duration::from_secs(3600)))
            .on_page(4)
            .always(),
    );
    let child = sentinel_cmd(&["diff", "--now", NOW], &[])
        .arg("--config")
        .arg(&new)
        .arg("--baseline")
        .arg(&old)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sentinel runs");
    crate::harness::eventually("page 4 requested", async || {
        api.pages_requested().contains(&4).then_some(())
    })
    .await;
    let pid = child.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    assert!(kill.expect("kill runs").success());
    let out = tokio::task::block_in_place(|| child.wait_with_output()).expect("exits");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(130), "{stdout}{stderr}");
    // Pages are fetched ahead: page 4 may be asked for before page 3 is decided.
    let listed = stderr
        .split("interrupted after ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" resources; no report is complete\n"))
        .and_then(|n| n.parse::<u32>().ok());
    assert!(listed.is_some_and(|n| n <= 6), "{stderr}");
    assert!(!stdout.contains("listed"), "{stdout}");

    // On a terminal (script(1) gives the child one), the progress line.
    api.api.faults.clear();
    api.api.inject(
        FaultRule::new(Fault::Delay(Duration::from_secs(3)))
            .on_page(2)
            .times(1),
    );
    let command = format!(
        "{} diff --now {NOW} --config {} --baseline {}",
        env!("CARGO_BIN_EXE_sentinel"),
        new.display(),
        old.display()
    );
    let script = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output();
    let out = script.expect("script(1) (util-linux) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("of about 30 clusters"), "{text}");
    assert!(
        text.contains("listed 30; publish now: baseline 30, new 15"),
        "{text}"
    );
}
