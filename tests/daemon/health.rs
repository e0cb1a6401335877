//! Health and readiness: `/healthz`, `/readyz` and `/metrics` over HTTP following the cycles of
//! an in-process daemon, liveness going stale, readiness following the broker connection itself
//! (cut, black-holed, closed), Go-style `:PORT` listeners on IPv6 and IPv4, and the probes' Go
//! warnings.

use crate::common::proxy::Proxy;
use crate::harness::in_process::{InProcess, Setup, in_process, no_shutdown};
use crate::harness::logs::logs;
use crate::harness::metrics::{MATCHED, PUBLISHED, base, sample};
use crate::harness::{eventually, get, new_clusters, now};
use sentinel::daemon::health::{self, HealthState};
use sentinel::sim::api::Fleet;
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::watch;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_follow_the_cycles() {
    let InProcess {
        rig,
        topic: _,
        queue: _,
        api: _api,
        mut daemon,
    } = in_process("health", new_clusters(1), Setup::default()).await;
    let (stop_servers, servers) = watch::channel(false);
    let until_stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (health_addr, health_task) = health::serve(
        any_port,
        health::health_router(daemon.health().clone()),
        until_stopped(servers.clone()),
    )
    .await
    .expect("health server");
    let (metrics_addr, metrics_task) = health::serve(
        any_port,
        health::metrics_router(daemon.metrics().clone()),
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
    daemon.health().shutting_down();
    let (code, _, body) = get(&readyz).await;
    assert_eq!(code, 503);
    assert_eq!(
        body,
        r#"{"checks":{"broker":"unavailable","sentinel_poll":"unavailable"},"status":"error"}"#
    );
    stop_servers.send(true).expect("servers listen");
    health_task.await.expect("health server stops");
    metrics_task.await.expect("metrics server stops");
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_goes_stale_when_polls_stop() {
    let InProcess {
        rig,
        topic: _,
        queue: _,
        api: _api,
        mut daemon,
    } = in_process(
        "stale",
        new_clusters(1),
        Setup {
            poll_interval: Duration::from_millis(20),
            ..Setup::default()
        },
    )
    .await;
    let (stop_servers, mut servers) = watch::channel(false);
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (addr, task) = health::serve(
        any_port,
        health::health_router(daemon.health().clone()),
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
    daemon.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_broker_connection_without_publishing() {
    let proxy = Proxy::start().await;
    // An empty fleet: no cycle ever publishes, so only the connection itself can move readiness.
    let InProcess {
        rig,
        topic: _,
        queue: _,
        api: _api,
        mut daemon,
    } = in_process(
        "ready-link",
        Fleet::new(),
        Setup {
            // A 1 s heartbeat: lapin gives up on a silent broker after two heartbeats.
            amqp_url: format!("{}?heartbeat=1", proxy.url()),
            ..Setup::default()
        },
    )
    .await;
    let (_keep, mut shutdown) = no_shutdown();
    assert!(daemon.cycle(now(), &mut shutdown).await.completed);
    let ready = r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#;
    assert_eq!(
        daemon.health().readiness(),
        (200.try_into().expect("code"), ready.into())
    );
    let down = r#"{"checks":{"broker":"RabbitMQ connection is not established","sentinel_poll":"ok"},"status":"error"}"#;

    // A cut: 503 as soon as lapin sees the socket close, without a publish or a cycle.
    proxy.cut();
    let body = eventually("readiness to turn 503 after the cut", async || {
        let (code, body) = daemon.health().readiness();
        (code != 200).then_some(body)
    })
    .await;
    assert_eq!(body, down);
    // Back: a cycle that publishes nothing reconnects, and readiness recovers.
    proxy.restore();
    eventually("readiness to recover after the restore", async || {
        daemon.cycle(now(), &mut shutdown).await;
        (daemon.health().readiness().0 == 200).then_some(())
    })
    .await;

    // A black hole (the connection stays open, nothing gets through): the heartbeat notices.
    proxy.freeze(true);
    let body = eventually(
        "readiness to turn 503 on a black-holed broker",
        async || {
            let (code, body) = daemon.health().readiness();
            (code != 200).then_some(body)
        },
    )
    .await;
    assert_eq!(body, down);
    proxy.freeze(false);
    daemon.close().await.expect("close");
    assert_eq!(
        daemon.health().readiness().1,
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
    let stale = logs().with_message("Healthz check failed: poll stale");
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
    let failed = logs().with_message("Readyz check failed");
    assert!(
        failed.iter().any(|v| v["level"] == "warn"
            && v["extra"]["checks"]
                == json!({"broker": "ok", "sentinel_poll": "no successful poll completed yet"})),
        "{failed:?}"
    );
}
