//! The binary run as the Go chart's Deployment runs it (issue 10, operator parity).
//!
//! The Deployment (charts/templates/deployment.yaml of the Go repo, default values) runs the
//! image's entrypoint `/app/sentinel` with args `serve --config=/etc/hyperfleet/config.yaml`,
//! env BROKER_CONFIG_FILE=/etc/hyperfleet/broker.yaml, BROKER_RABBITMQ_URL (from its Secret) and
//! HYPERFLEET_TRACING_ENABLED="false", the rendered ConfigMaps mounted read-only, a read-only
//! root filesystem, and probes on ports 8080 (/healthz, /readyz) and 9090 (/metrics) that the
//! binary's default bind addresses serve. The test runs the rendered files of tests/data/chart
//! at their checked-in paths (the args keep the `--config=` form), substitutes loopback hosts
//! through the env the chart's keys answer to (HYPERFLEET_API_BASE_URL; BROKER_RABBITMQ_URL is
//! the chart's own), a unique HYPERFLEET_BROKER_TOPIC so parallel runs do not share an exchange,
//! and free ports for the two servers (binding :8080 and :9090 here could collide with other
//! test runs; that the defaults are those ports is checked from `serve --help`).
//!
//! "A working directory it cannot write": the tests run as root, for whom a 0555 directory is
//! still writable, so the test checks what matters on a read-only root filesystem instead: the
//! child runs in an empty 0555 directory and must leave it empty (it neither needs nor creates
//! a file in its working directory).

use crate::common::rig::rig;
use crate::harness::fake_api::fake_api;
use crate::harness::metrics::{self, LAST_POLL, MATCHED, PUBLISHED};
use crate::harness::serve::{Process, TempDir, assert_clean_stop, free_port, sentinel_cmd};
use crate::harness::{RABBIT_URL, assert_watermill_properties, data_id, get, process_fleet};
use lapin::types::FieldTable;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

fn chart_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/chart")
        .join(name)
}

#[test]
fn chart_probe_ports_are_the_serve_defaults() {
    let output = sentinel_cmd(&["serve", "--help"], &[])
        .output()
        .expect("run sentinel serve --help");
    let help = String::from_utf8_lossy(&output.stdout);
    for (flag, default) in [
        ("--health-server-bindaddress", "[default: :8080]"),
        ("--metrics-server-bindaddress", "[default: :9090]"),
    ] {
        let line = help
            .lines()
            .skip_while(|l| !l.contains(flag))
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(line.contains(default), "{flag} {default} in:\n{help}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_as_the_go_charts_deployment_runs_it() {
    let mut rig = rig().await;
    // The chart's exchange_type is topic: the sentinel declares its exchange so; bind to all.
    let topic = rig.exchange("chart");
    rig.declare(&topic, lapin::ExchangeKind::Topic).await;
    let queue = rig.bind(&topic, "#", FieldTable::default()).await;
    let (fleet, due) = process_fleet();
    let api = fake_api(fleet).await;

    let cwd = TempDir::new();
    let set_mode = |mode| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cwd.0, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    set_mode(0o555);
    let (health, metrics) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let config_flag = format!("--config={}", chart_data("config.yaml").display());
    let broker_file = chart_data("broker.yaml").display().to_string();
    let mut cmd = sentinel_cmd(
        &[
            "serve",
            &config_flag,
            &format!("--health-server-bindaddress={health}"),
            &format!("--metrics-server-bindaddress={metrics}"),
        ],
        &[
            ("BROKER_CONFIG_FILE", &broker_file),
            ("BROKER_RABBITMQ_URL", RABBIT_URL),
            ("HYPERFLEET_TRACING_ENABLED", "false"),
            ("HYPERFLEET_API_BASE_URL", &api.base_url),
            ("HYPERFLEET_BROKER_TOPIC", &topic),
        ],
    );
    cmd.current_dir(&cwd.0);
    let mut process = Process::spawn(cmd, format!("http://{health}"), format!("http://{metrics}"));
    process.wait_ready().await;

    // Probes: liveness and readiness as the kubelet asks for them.
    let (code, body) = process.health_get("/healthz").await.expect("healthz");
    assert_eq!((code, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (code, _) = process.health_get("/readyz").await.expect("readyz");
    assert_eq!(code, 200);

    // Events: the two due clusters, as CloudEvents; the source is Go's constant, not the
    // chart's sentinel.name.
    let mut published = Vec::new();
    for _ in 0..due.len() {
        let msg = rig.next(&queue).await;
        assert_watermill_properties(&msg);
        let event: Json = serde_json::from_slice(&msg.data).expect("JSON");
        assert_eq!(event["type"], "com.redhat.hyperfleet.cluster.reconcile");
        assert_eq!(event["source"], "hyperfleet-sentinel");
        let keys: Vec<&str> = event["data"]
            .as_object()
            .expect("data")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["generation", "href", "id", "kind"]);
        published.push(data_id(&msg));
    }
    assert_eq!(published, due);

    // Metrics, as the chart's ServiceMonitor scrapes them.
    let (code, _, text) = get(&format!("{}/metrics", process.metrics)).await;
    assert_eq!(code, 200);
    let scraped = metrics::parse(&text);
    let labels = metrics::served(&[("reason", MATCHED)]);
    assert_eq!(
        scraped.get(PUBLISHED, &labels),
        Some(2.0),
        "{labels:?} in\n{text}"
    );
    assert!(!scraped.series(LAST_POLL).is_empty(), "{text}");

    // Pod termination: SIGTERM, exit 0, a clean stop; nothing written to the working directory.
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    let left: Vec<_> = std::fs::read_dir(&cwd.0)
        .expect("read cwd")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the sentinel wrote to its working directory: {left:?}"
    );
    set_mode(0o755);
    rig.cleanup().await;
}
