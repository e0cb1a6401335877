//! The daemon on Google Pub/Sub (issue 12), against Google's emulator (tests/common/pubsub.rs):
//! an in-process daemon whose emulator stops mid-cycle and restarts, and `sentinel serve` on an
//! emulator of its own, frozen mid-publish when SIGTERM comes (answering again in time, or
//! never).

use crate::common::pubsub;
use crate::common::rig::PATIENCE;
use crate::harness::fake_api::{FakeServer, fake_api};
use crate::harness::in_process::{config, fast_backoff, no_shutdown, rules};
use crate::harness::logs::{logs, messages_starting};
use crate::harness::metrics::{BROKER_ERRORS, base, published_metric, sample};
use crate::harness::serve::{Process, TempDir, assert_clean_stop};
use crate::harness::{cluster_ids, eventually, new_clusters, now, process_fleet, read_data};
use sentinel::api::{ApiClient, ApiClientConfig};
use sentinel::broker::config::PubSubConfig;
use sentinel::broker::{PubSubOptions, PubSubPublisher, Publisher};
use sentinel::daemon::runtime::{CycleReport, Daemon};
use sentinel::sim::api::{Fault, FaultRule};
use serde_json::Value as Json;
use std::time::Duration;

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
    let config = config(topic, poll_interval);
    Daemon::new(
        &config,
        rules(),
        api,
        Publisher::PubSub(Box::new(publisher)),
    )
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
            filtered: false,
            left_out: 0,
        }
    );
    let text = daemon.metrics().render();
    let publish_errors = base(&[("error_type", "publish_error")]);
    assert_eq!(sample(&text, BROKER_ERRORS, &publish_errors), Some(4.0));
    assert_eq!(published_metric(daemon.metrics()), 2.0);
    let lines = logs.lines(&topic);
    assert_eq!(
        messages_starting(&lines, "error", "Failed to publish event resource_id=").len(),
        4,
        "{lines:?}"
    );
    let (code, body) = eventually("readiness to see the emulator gone", async || {
        Some(daemon.health().readiness()).filter(|(c, _)| *c != 200)
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
        (daemon.health().readiness().1 == ready).then_some(())
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
    assert_eq!(published_metric(daemon.metrics()), 8.0);
    daemon.close().await.expect("close");
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
    let emulator_host = emulator.host();
    let mut process = Process::start_env(
        &config,
        &broker,
        &api.base_url,
        &[("PUBSUB_EMULATOR_HOST", &emulator_host)],
    );
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
    // An ERROR line carries Go's `stack_trace`: here the error site in the poll loop.
    for line in process.log_lines().iter().filter(|v| v["level"] == "error") {
        let frames = line["stack_trace"].as_array().map(Vec::as_slice);
        let site = frames.and_then(|f| f.first()).and_then(|f| f.as_str());
        assert!(
            site.is_some_and(|s| s.starts_with("sentinel::") && s.contains(".rs:")),
            "{line}"
        );
    }
    assert_eq!(
        logs.last().map(|(_, m)| m.as_str()),
        Some("Sentinel stopped gracefully"),
        "{}",
        process.output()
    );
}

/// The publisher's network side runs on a thread of its own, as the RabbitMQ publisher's does:
/// readiness follows Pub/Sub whatever the caller's thread is doing. Here the caller's
/// current-thread runtime (the loop's, in `serve`) is blocked (a sleep, not an await) while
/// the emulator stops, and the probe still notices.
#[test]
fn the_probe_runs_while_the_callers_thread_is_blocked() {
    let mut emulator = pubsub::Emulator::start_on(pubsub::free_port());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cfg = PubSubConfig {
        project_id: pubsub::PROJECT.to_string(),
        ..Default::default()
    };
    let options = PubSubOptions {
        emulator_host: Some(emulator.host()),
        probe_interval: Duration::from_millis(100),
        probe_timeout: Duration::from_millis(500),
        ..Default::default()
    };
    let publisher = runtime
        .block_on(PubSubPublisher::connect(&cfg, "probe-blocked", options))
        .expect("pub/sub clients");
    let liveness = publisher.liveness();
    runtime.block_on(eventually("a probe answered", async || {
        liveness.problem().is_none().then_some(())
    }));
    emulator.stop();
    // This thread, the publisher's caller, now blocks without yielding to its runtime.
    let blocked = std::time::Instant::now();
    while liveness.problem().is_none() {
        assert!(
            blocked.elapsed() < PATIENCE,
            "readiness did not see Pub/Sub stop while the caller's thread was blocked"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(publisher);
}
