//! In-process cycles (`Daemon::cycle` with a fixed `now`) against the fake API and the real
//! RabbitMQ: the exact events of a mixed fleet (tests/data/daemon/{config.yaml,fleet.json,
//! events.golden}), the AMQP properties, the resources skipped, the cycle report, the log lines
//! and the metrics; a fetch failure mid-fleet; paging with prefetch; a broker outage and
//! recovery; shutdown mid-cycle; `Daemon::run`.

use crate::common::proxy::Proxy;
use crate::common::rig::PATIENCE;
use crate::harness::in_process::{InProcess, Setup, in_process, no_shutdown};
use crate::harness::logs::{logs, messages_starting};
use crate::harness::metrics::{
    API_ERRORS, BROKER_ERRORS, Labels, MATCHED, PENDING, POLLS, PUBLISHED, SKIPPED, base,
    last_poll, published_metric, sample, series,
};
use crate::harness::{
    assert_watermill_properties, body, cluster_ids, data_id, eventually, fixture_fleet,
    new_clusters, now, read_data,
};
use sentinel::daemon::runtime::CycleReport;
use sentinel::sim::api::{Fault, FaultRule};
use serde_json::Value as Json;
use std::time::Duration;
use tokio::sync::watch;
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_publishes_exactly_the_due_resources() {
    let InProcess {
        rig,
        topic,
        queue,
        api: _api,
        mut daemon,
    } = in_process(
        "cycle",
        fixture_fleet(),
        Setup {
            page_size: 3,
            prefetch: 2,
            ..Setup::default()
        },
    )
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
        filtered: false,
        left_out: 0,
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
    let text = daemon.metrics().render();
    assert_eq!(
        sample(&text, PUBLISHED, &base(&[("reason", MATCHED)])),
        Some(4.0)
    );
    let skipped = series(&text, SKIPPED);
    let reason_of = |(labels, value): &(Labels, f64)| {
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
    let last = last_poll(daemon.metrics());
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
    assert_eq!(published_metric(daemon.metrics()), 8.0);
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_failure_abandons_the_cycle() {
    let fleet = new_clusters(6);
    let ids = cluster_ids(&fleet);
    let InProcess {
        rig,
        topic: _,
        queue,
        api,
        mut daemon,
    } = in_process(
        "fetch-failure",
        fleet,
        Setup {
            page_size: 2,
            prefetch: 2,
            ..Setup::default()
        },
    )
    .await;
    let (_keep, mut shutdown) = no_shutdown();

    let first = daemon.cycle(now(), &mut shutdown).await;
    assert!(first.completed && first.published == 6, "{first:?}");
    assert_eq!(rig.drain(&queue).await.len(), 6);
    let last_success = last_poll(daemon.metrics());
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
            filtered: false,
            left_out: 0,
        }
    );
    let page_one: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(page_one, ids[..2], "page 1 published once, nothing after");
    let text = daemon.metrics().render();
    let fetch_errors = base(&[("error_type", "fetch_error")]);
    assert_eq!(sample(&text, API_ERRORS, &fetch_errors), Some(1.0));
    assert_eq!(
        last_poll(daemon.metrics()),
        last_success,
        "last success moved"
    );
    // pending_resources and poll_duration are observed on completed cycles only, as in Go.
    assert_eq!(sample(&text, POLLS, &base(&[])), Some(1.0));
    assert_eq!(sample(&text, PENDING, &base(&[])), Some(6.0));

    // The API recovers: the next cycle completes and moves the timestamp again.
    api.api.faults.clear();
    let third = daemon.cycle(now(), &mut shutdown).await;
    assert!(third.completed && third.published == 6, "{third:?}");
    assert_eq!(rig.drain(&queue).await.len(), 6);
    assert_eq!(
        sample(&daemon.metrics().render(), POLLS, &base(&[])),
        Some(2.0)
    );
    assert!(last_poll(daemon.metrics()) >= last_success);
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

/// Go's `Start` logs the first cycle's failure as `Initial trigger failed: …` and the later
/// ones' as `Trigger failed: …`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_failed_cycle_is_the_initial_trigger() {
    let InProcess {
        rig,
        topic,
        queue: _,
        api,
        mut daemon,
    } = in_process("initial-trigger", new_clusters(2), Setup::default()).await;
    let logs = logs();
    let (_keep, mut shutdown) = no_shutdown();
    api.api
        .inject(FaultRule::new(Fault::Status(500)).on_page(1).always());
    for _ in 0..2 {
        let report = daemon.cycle(now(), &mut shutdown).await;
        assert!(!report.completed, "{report:?}");
    }
    let errors: Vec<(String, String)> = logs
        .lines(&topic)
        .into_iter()
        .filter(|(level, _)| level == "error")
        .collect();
    let messages: Vec<&str> = errors.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Initial trigger failed: failed to fetch resources",
            "Trigger failed: failed to fetch resources"
        ]
    );
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_fetched_ahead_are_published_in_api_order() {
    let fleet = new_clusters(23);
    let ids = cluster_ids(&fleet);
    let InProcess {
        rig,
        topic: _,
        queue,
        api,
        mut daemon,
    } = in_process(
        "paging",
        fleet,
        Setup {
            page_size: 4,
            prefetch: 3,
            ..Setup::default()
        },
    )
    .await;
    // Page 2 is answered only once page 4 has been requested: proof that pages are fetched
    // ahead while earlier ones are outstanding, and yet published in order.
    api.api
        .inject(FaultRule::new(Fault::HoldUntilPage(4)).on_page(2));
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
            filtered: false,
            left_out: 0,
        }
    );
    let published: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(published, ids);
    let mut pages = api.pages_requested();
    pages.sort_unstable();
    assert_eq!(pages, [1, 2, 3, 4, 5, 6], "each page requested once");
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_failures_are_counted_and_the_next_cycle_recovers() {
    let proxy = Proxy::start().await;
    let fleet = new_clusters(3);
    let ids = cluster_ids(&fleet);
    let InProcess {
        rig,
        topic,
        queue,
        api: _api,
        mut daemon,
    } = in_process(
        "outage",
        fleet,
        Setup {
            amqp_url: proxy.url(),
            ..Setup::default()
        },
    )
    .await;
    let (_keep, mut shutdown) = no_shutdown();
    assert_eq!(daemon.cycle(now(), &mut shutdown).await.published, 3);
    assert_eq!(rig.drain(&queue).await.len(), 3);
    let ready = r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#;
    assert_eq!(daemon.health().readiness().1, ready);

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
            filtered: false,
            left_out: 0,
        }
    );
    let text = daemon.metrics().render();
    let publish_errors = base(&[("error_type", "publish_error")]);
    assert_eq!(sample(&text, BROKER_ERRORS, &publish_errors), Some(3.0));
    // The broker library's counter uses its own value, `publish` (hyperfleet-broker's
    // `RecordError(topic, "publish")`).
    let library = [("topic", topic.as_str()), ("error_type", "publish")];
    assert_eq!(
        sample(&text, "hyperfleet_broker_errors_total", &library),
        Some(3.0)
    );
    assert_eq!(published_metric(daemon.metrics()), 3.0);
    // Due resources count as pending whether or not their publish succeeded.
    assert_eq!(sample(&text, PENDING, &base(&[])), Some(3.0));
    let (code, body) = daemon.health().readiness();
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
    assert_eq!(daemon.health().readiness().1, ready);
    assert_eq!(published_metric(daemon.metrics()), 6.0);
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_mid_fetch_abandons_the_cycle() {
    let fleet = new_clusters(4);
    let ids = cluster_ids(&fleet);
    let InProcess {
        rig,
        topic: _,
        queue,
        api,
        mut daemon,
    } = in_process(
        "stop-mid-cycle",
        fleet,
        Setup {
            page_size: 2,
            ..Setup::default()
        },
    )
    .await;
    // Page 2 takes far longer than the wait below: only abandoning it ends the cycle in time.
    api.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_secs(120))).on_page(2));
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
            filtered: false,
            left_out: 0,
        }
    );
    let published: Vec<String> = rig.drain(&queue).await.iter().map(data_id).collect();
    assert_eq!(published, ids[..2]);
    assert_eq!(
        sample(&daemon.metrics().render(), POLLS, &base(&[])),
        None,
        "an abandoned cycle is not a completed poll"
    );
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_polls_every_interval_until_shutdown() {
    let fleet = new_clusters(2);
    let InProcess {
        rig,
        topic: _,
        queue,
        api,
        daemon,
    } = in_process(
        "run",
        fleet,
        Setup {
            poll_interval: Duration::from_millis(50),
            ..Setup::default()
        },
    )
    .await;
    // Every listing takes longer than the poll interval: overlapping cycles would pile up
    // requests, sequential ones make exactly one per cycle.
    api.api
        .inject(FaultRule::new(Fault::Delay(Duration::from_millis(100))).always());
    let metrics = daemon.metrics().clone();
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
