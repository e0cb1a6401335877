//! `sentinel serve` as a process, with real signals: readiness, metrics, events and logs of a
//! running process; SIGTERM mid-publish and SIGINT mid-fetch (exit 0, a clean stop); startup
//! failures (exit 1, one line on stderr); `--help`; the Go sentinel's log lines; and config
//! precedence (flag, env, file) through `sentinel config-dump`; the health and metrics servers
//! answering while the loop's thread is blocked.

use crate::common::proxy::Proxy;
use crate::common::rig::{rig, unique};
use crate::harness::fake_api::fake_api;
use crate::harness::logs::messages_starting;
use crate::harness::metrics::{self, LAST_POLL, MATCHED, POLLS, PUBLISHED};
use crate::harness::serve::{
    Process, TempDir, assert_clean_stop, free_port, sentinel_cmd, serve_files, serve_rig,
};
use crate::harness::{
    CLUSTERS, RABBIT_URL, assert_watermill_properties, data_id, eventually, get, process_fleet,
    read_data,
};
use sentinel::sim::api::{Fault, FaultRule};
use serde_json::Value as Json;
use std::path::Path;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_publishes_and_stops_cleanly_on_sigterm_mid_publish() {
    let proxy = Proxy::start().await;
    let t = serve_rig("serve", &proxy.url()).await;
    let mut process = t.start(&[]).await;

    // The first cycle published the two due clusters, in API order, as CloudEvents.
    let first: Vec<String> = [t.rig.next(&t.queue).await, t.rig.next(&t.queue).await]
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
    assert_eq!(first, t.due);

    let (code, body) = process.health_get("/healthz").await.expect("healthz");
    assert_eq!((code, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (code, _, text) = get(&format!("{}/metrics", process.metrics)).await;
    assert_eq!(code, 200);
    let scraped = metrics::parse(&text);
    let labels = metrics::served(&[("reason", MATCHED)]);
    assert!(
        scraped.get(PUBLISHED, &labels).is_some(),
        "{labels:?} missing in\n{text}"
    );
    assert!(!scraped.series(POLLS).is_empty(), "{text}");
    assert!(!scraped.series(LAST_POLL).is_empty(), "{text}");

    // The logs: one line per published event, the empty id warned about, a cycle summary.
    let logs = process.log_messages();
    for id in &t.due {
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
    t.rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stops_on_sigint_while_a_page_is_held() {
    let t = serve_rig("sigint", RABBIT_URL).await;
    let mut process = t.start(&[]).await;
    // Page 3 now takes two minutes (the client timeout is 60s, the test's patience 30s): the
    // process can only exit in time by abandoning the cycle.
    t.api.api.recorder.clear();
    t.api
        .api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(120))).on_page(3));
    eventually("a cycle waiting for page 3", async || {
        t.api.api.recorder.saw_page(3).then_some(())
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
    t.rig.cleanup().await;
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
    // Go's line: the command as given, then the error.
    let given = format!("Error executing command 'sentinel {}': ", args.join(" "));
    assert!(lines[0].starts_with(&given), "{stderr}");
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
    // The problem list joins its heading with a space, not a stray `:;`.
    let heading = format!("invalid broker configuration ({}): ", no_url.display());
    assert!(line.contains(&heading) && !line.contains(":;"), "{line}");
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
fn config_dump(config: &Path, flags: &[&str], env: &[(&str, &str)]) -> yaml_serde::Value {
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
    yaml_serde::from_str(&stdout).expect("config-dump prints YAML")
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
    let pick = |v: &yaml_serde::Value| {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_the_go_lines_and_only_its_own_debug_records() {
    let t = serve_rig("golines", RABBIT_URL).await;
    let mut process = Process::start_anywhere(
        &t.config,
        &t.broker,
        &t.api.base_url,
        &[
            ("HYPERFLEET_LOG_LEVEL", "debug"),
            ("HYPERFLEET_DEBUG_CONFIG", "true"),
        ],
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
    // Go's two configuration lines come first, from its default logger (JSON, info).
    assert_eq!(
        lines[0]["message"],
        format!("Loading configuration from {}", t.config.display()),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1]["message"],
        "Configuration loaded successfully: name=sentinel-e2e resource_type=clusters",
        "{}",
        lines[1]
    );
    let first = &lines[2];
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
    // `debug_config`: the merged configuration, in Go's words.
    assert!(
        infos
            .iter()
            .any(|m| m.starts_with("Debug config enabled - merged configuration:\n")),
        "{infos:#?}"
    );
    let mut at = 0;
    for expected in &in_order {
        let found = infos[at..].iter().position(|m| m == expected);
        at += found.unwrap_or_else(|| panic!("{expected:?} missing or out of order in {infos:#?}"))
            + 1;
    }
    // Debug shows the sentinel's own records (Go's `Starting trigger cycle` and a skipped
    // resource), not those of its libraries.
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
    assert!(debug.contains(&"Starting trigger cycle"), "{debug:?}");
    let foreign: Vec<&&str> = debug
        .iter()
        .filter(|m| {
            !m.starts_with("Skipped resource resource_id=") && **m != "Starting trigger cycle"
        })
        .collect();
    assert!(foreign.is_empty(), "third-party debug records: {foreign:?}");
    t.rig.cleanup().await;
}

/// The health and metrics servers answer while the loop's thread is blocked, as Go's do (its
/// servers are goroutines of their own): here the loop is stuck writing events to a stdout
/// nobody reads. `/healthz` then reports the stale poll, and the metrics still scrape. A
/// sentinel whose servers shared the loop's thread would answer neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_answer_while_the_loop_is_blocked() {
    // 100 due clusters: a cycle writes ~40 KB of events, so the first completes and the second
    // fills the pipe (64 KiB) and blocks.
    let api = fake_api(crate::harness::new_clusters(100)).await;
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &read_data("serve.yaml")
            .replace("{topic}", "blocked")
            .replace("page_size: 1", "page_size: 100"),
    );
    let config_flag = format!("--config={}", config.display());
    let health = format!("http://127.0.0.1:{}", free_port());
    let metrics = format!("http://127.0.0.1:{}", free_port());
    let health_flag = format!("--health-server-bindaddress={}", &health[7..]);
    let metrics_flag = format!("--metrics-server-bindaddress={}", &metrics[7..]);
    let env = [
        ("BROKER_TYPE", "stdout"),
        ("HYPERFLEET_API_BASE_URL", api.base_url.as_str()),
        ("HYPERFLEET_TRACING_ENABLED", "false"),
        // The log lines (the probes' warnings among them) to stderr: stdout is what blocks.
        ("HYPERFLEET_LOG_OUTPUT", "stderr"),
    ];
    let mut cmd = sentinel_cmd(&["serve", &config_flag, &health_flag, &metrics_flag], &env);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = crate::common::Killed(cmd.spawn().expect("spawn sentinel serve"));
    // Held open and never read.
    let _stdout = child.0.stdout.take().expect("stdout");
    let pid = child.0.id();

    // The loop runs on the process's main thread; it ends up in a `write` to fd 1 (the
    // syscall's number and first argument, as /proc shows a thread blocked in one).
    // `write`'s number differs by architecture.
    #[cfg(target_arch = "x86_64")]
    const WRITE_TO_STDOUT: &str = "1 0x1 ";
    #[cfg(target_arch = "aarch64")]
    const WRITE_TO_STDOUT: &str = "64 0x1 ";
    let syscall = format!("/proc/{pid}/task/{pid}/syscall");
    let blocked =
        || std::fs::read_to_string(&syscall).is_ok_and(|s| s.starts_with(WRITE_TO_STDOUT));
    eventually("the loop's thread blocked writing to stdout", async || {
        blocked().then_some(())
    })
    .await;
    // A server that does not answer fails the request (and the test), not hangs it.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let answer = async |url: String| {
        let response = http
            .get(&url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    };
    let stale = eventually("/healthz to report the stale poll", async || {
        let (status, body) = answer(format!("{health}/healthz")).await;
        (status == 503).then_some(body)
    })
    .await;
    assert_eq!(stale, r#"{"status":"poll stale"}"#);
    // Still blocked: the answers above came while the loop could not have served them.
    assert!(
        blocked(),
        "{}",
        std::fs::read_to_string(&syscall).unwrap_or_default()
    );
    let (code, text) = answer(format!("{metrics}/metrics")).await;
    assert_eq!(code, 200);
    assert!(
        text.contains("hyperfleet_sentinel_poll_duration_seconds_count"),
        "{text}"
    );
    let (code, _) = answer(format!("{health}/readyz")).await;
    assert_eq!(code, 200, "a completed poll and a stdout broker: ready");

    // A second signal ends the process at once, blocked loop or not (143, as a shell reports
    // SIGTERM); the first asks for a graceful stop, which the blocked loop cannot make.
    let kill = |signal: &str| {
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal}");
    };
    kill("-TERM");
    eventually("readiness to report the shutdown", async || {
        let (code, body) = answer(format!("{health}/readyz")).await;
        (code == 503 && body.contains("unavailable")).then_some(())
    })
    .await;
    kill("-TERM");
    let status = eventually("the second signal to end the process", async || {
        child.0.try_wait().expect("try_wait")
    })
    .await;
    assert_eq!(status.code(), Some(143), "{status}");
}
