//! Hostile peers, files and environment (issue #28's table, a test per row): a bad resource
//! costs that resource only, every listing ends, the health servers cannot be held, every file
//! and environment value is bounded, and no secret is printed. HTTP peers are raw servers on
//! loopback; every wait is bounded, and no test measures time beyond "it finishes".

use crate::harness::in_process::{config, no_shutdown, rules};
use crate::harness::now;
use crate::harness::serve::{TempDir, free_port, sentinel_cmd};
use sentinel::api::{ApiClient, ApiClientConfig, ApiError, listing_limit};
use sentinel::broker::{MemoryPublisher, MessageSink, Publisher};
use sentinel::daemon::runtime::{Daemon, UNDECODABLE_REASON};
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The page bodies a test's API answers: page number → body.
type Pages = Arc<dyn Fn(u64) -> Vec<u8> + Send + Sync>;

/// A list endpoint on 127.0.0.1:0 answering every GET of the clusters collection with
/// `pages(page)`; returns its base URL and the count of requests.
async fn raw_api(pages: Pages) -> (String, Arc<AtomicU64>) {
    use axum::extract::Query;
    use std::collections::HashMap;
    let requests = Arc::new(AtomicU64::new(0));
    let counted = requests.clone();
    let app = axum::Router::new().route(
        "/api/hyperfleet/v1/clusters",
        axum::routing::get(move |Query(q): Query<HashMap<String, String>>| {
            let pages = pages.clone();
            counted.fetch_add(1, Ordering::Relaxed);
            async move {
                let page = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
                ([("content-type", "application/json")], pages(page))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), requests)
}

/// Collects the ids of the events published.
#[derive(Default)]
struct Collect(Mutex<Vec<String>>);

impl MessageSink for Collect {
    fn deliver(&self, _: uuid::Uuid, body: &[u8]) -> Result<(), String> {
        let event: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let id = event["data"]["id"].as_str().unwrap_or_default().to_string();
        self.0.lock().expect("lock").push(id);
        Ok(())
    }
}

/// An in-process daemon over the test rules, listing from `base_url` in pages of
/// `page_size`, publishing into a [`Collect`].
fn daemon(base_url: &str, page_size: u32, max_listed: u64) -> (Daemon, Arc<Collect>) {
    let api = ApiClient::new(ApiClientConfig {
        base_url: base_url.to_string(),
        page_size,
        max_listed,
        ..ApiClientConfig::default()
    })
    .expect("client");
    let sink = Arc::new(Collect::default());
    let publisher = Publisher::Memory(MemoryPublisher::new(sink.clone()));
    let config = config("hostile", Duration::from_secs(3600));
    (Daemon::new(&config, rules(), api, publisher), sink)
}

/// A new cluster (due in every cycle) with the id's bytes as given.
fn new_cluster(id: &[u8]) -> Vec<u8> {
    let mut item =
        br#"{"kind":"Cluster","generation":1,"status":{"conditions":[]},"id":""#.to_vec();
    item.extend_from_slice(id);
    item.extend_from_slice(br#""}"#);
    item
}

/// A list page of `items` with `total`.
fn page(items: &[Vec<u8>], total: u64) -> Vec<u8> {
    let mut body = br#"{"kind":"ClusterList","items":["#.to_vec();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(format!(r#"],"total":{total}}}"#).as_bytes());
    body
}

/// Row 1: one invalid UTF-8 byte in one resource's id. Go's `encoding/json` reads it as U+FFFD
/// and goes on; so does the sentinel: all 1,000 due resources are published, that one with the
/// replaced id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invalid_utf8_byte_costs_that_id_not_the_fleet() {
    const N: u64 = 1000;
    let pages: Pages = Arc::new(|page| {
        let first = (page - 1) * 100;
        let items: Vec<Vec<u8>> = (first..(first + 100).min(N))
            .map(|i| match i {
                500 => new_cluster(b"c-500-\xff"),
                i => new_cluster(format!("c-{i}").as_bytes()),
            })
            .collect();
        page_body(&items, N)
    });
    let (url, _) = raw_api(pages).await;
    let (mut daemon, sink) = daemon(&url, 100, 1_000_000);
    let (_keep, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert!(report.completed, "{report:?}");
    assert_eq!((report.total, report.published), (N as usize, N as usize));
    let ids = sink.0.lock().expect("lock").clone();
    assert_eq!(ids.len(), N as usize);
    assert!(
        ids.contains(&"c-500-\u{FFFD}".to_string()),
        "{:?}",
        &ids[495..505]
    );
}

fn page_body(items: &[Vec<u8>], total: u64) -> Vec<u8> {
    page(items, total)
}

/// Row 14: an item that is not a resource (a number, an id that is not a string) is skipped
/// with a fixed reason in the skipped metric, not logged as an empty id; the others publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_item_is_counted_as_skipped() {
    let pages: Pages = Arc::new(|_| {
        let items = vec![
            new_cluster(b"a"),
            b"7".to_vec(),
            br#"{"id":12,"kind":"Cluster"}"#.to_vec(),
            new_cluster(b"b"),
        ];
        page(&items, 4)
    });
    let (url, _) = raw_api(pages).await;
    let (mut daemon, sink) = daemon(&url, 100, 1_000_000);
    let (_keep, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert!(report.completed);
    assert_eq!((report.published, report.skipped), (2, 2), "{report:?}");
    assert_eq!(*sink.0.lock().expect("lock"), ["a", "b"]);
    let metrics = daemon.metrics().render();
    let undecodable = count(
        &metrics,
        "hyperfleet_sentinel_resources_skipped_total",
        ("reason", UNDECODABLE_REASON),
    );
    assert_eq!(undecodable, 2.0, "{metrics}");
}

/// The sum of the series of metric `name` with the label `key` = `value`.
fn count(metrics: &str, name: &str, (key, value): (&str, &str)) -> f64 {
    crate::harness::metrics::series(metrics, name)
        .iter()
        .filter(|(labels, _)| labels.get(key).is_some_and(|v| v == value))
        .map(|(_, n)| n)
        .sum()
}

/// Row 2: an API whose listing never ends — pages always full with a `total` of 10^12, or the
/// same ids forever — ends the cycle at the listing bound with a fetch error, and memory
/// stays bounded (the repeated ids are not remembered twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_listing_ends_at_the_bound() {
    // New ids on every page.
    let fresh: Pages = Arc::new(|page| {
        let items: Vec<Vec<u8>> = (0..50)
            .map(|i| new_cluster(format!("p{page}-{i}").as_bytes()))
            .collect();
        page_body(&items, 1_000_000_000_000)
    });
    // The same page forever, its total growing with every page.
    let repeats: Pages = Arc::new(|page| {
        let items: Vec<Vec<u8>> = (0..50)
            .map(|i| new_cluster(format!("r{i}").as_bytes()))
            .collect();
        page_body(&items, page * 50 + 1)
    });
    for (name, pages, max_listed, published) in [
        ("fresh", fresh, 5_000, 5_000),
        ("repeats", repeats, 1_000_000, 50),
    ] {
        let (url, requests) = raw_api(pages).await;
        let (mut daemon, sink) = daemon(&url, 50, max_listed);
        let (_keep, mut shutdown) = no_shutdown();
        let report = daemon.cycle(now(), &mut shutdown).await;
        assert!(!report.completed, "{name}: {report:?}");
        assert_eq!(report.published, published, "{name}");
        assert_eq!(sink.0.lock().expect("lock").len(), published, "{name}");
        let metrics = daemon.metrics().render();
        let errors = count(
            &metrics,
            "hyperfleet_sentinel_api_errors_total",
            ("error_type", "fetch_error"),
        );
        assert_eq!(errors, 1.0, "{name}: {metrics}");
        // Repeats: the bound is twice the first total (51) plus ten pages of 50.
        if name == "repeats" {
            let limit = listing_limit(51, 50, 1_000_000);
            assert!(requests.load(Ordering::Relaxed) <= limit / 50 + 6, "{name}");
        }
    }
}

/// A list endpoint on 127.0.0.1:0 answering every GET of the clusters collection with
/// `Content-Encoding: gzip` and the body `body` makes; returns its base URL and the count of
/// requests.
async fn raw_gzip_api(
    body: impl Fn() -> axum::body::Body + Clone + Send + Sync + 'static,
) -> (String, Arc<AtomicU64>) {
    let requests = Arc::new(AtomicU64::new(0));
    let counted = requests.clone();
    let app = axum::Router::new().route(
        "/api/hyperfleet/v1/clusters",
        axum::routing::get(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            let body = body();
            async move {
                let headers = [
                    ("content-type", "application/json"),
                    ("content-encoding", "gzip"),
                ];
                (headers, body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), requests)
}

/// `bytes` as one gzip member.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).expect("in memory");
    gz.finish().expect("in memory")
}

/// A gzipped page followed by bytes that are not a gzip member (a proxy's error page after a
/// server's answer): Go's reader refuses them, and so does the sentinel. The cycle fails with
/// one counted fetch error, nothing is published, and the page is not retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailing_garbage_after_a_gzipped_page_fails_the_cycle() {
    let mut wire = gzip(&page(&[new_cluster(b"a"), new_cluster(b"b")], 2));
    wire.extend_from_slice(b"<html><body>502 Bad Gateway</body></html>");
    let (url, requests) = raw_gzip_api(move || axum::body::Body::from(wire.clone())).await;
    let (mut daemon, sink) = daemon(&url, 100, 1_000_000);
    let (_keep, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert!(!report.completed, "{report:?}");
    assert_eq!(report.published, 0);
    assert!(sink.0.lock().expect("lock").is_empty());
    let metrics = daemon.metrics().render();
    let errors = count(
        &metrics,
        "hyperfleet_sentinel_api_errors_total",
        ("error_type", "fetch_error"),
    );
    assert_eq!(errors, 1.0, "{metrics}");
    assert_eq!(requests.load(Ordering::Relaxed), 1);
}

/// An endless body of empty gzip members inflates to nothing: it ends at the body bound on the
/// bytes read off the wire, with the oversized body error (not the request timeout, which is
/// set far away so that only the bound can end it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_of_empty_gzip_members_ends_at_the_bound() {
    let members = axum::body::Bytes::from(gzip(b"").repeat(1000));
    let endless = move || {
        let members = members.clone();
        let chunks = move || Ok::<_, std::io::Error>(members.clone());
        axum::body::Body::from_stream(futures_util::stream::repeat_with(chunks))
    };
    let (url, requests) = raw_gzip_api(endless).await;
    let client = ApiClient::new(ApiClientConfig {
        base_url: url,
        page_size: 1,
        timeout: Duration::from_secs(300),
        ..ApiClientConfig::default()
    })
    .expect("client");
    let mut pager = client.list("clusters", None);
    let err = match pager.next_page().await {
        Some(Err(err)) => err,
        other => panic!("not an error: {other:?}"),
    };
    let limit = sentinel::api::max_body_bytes(1);
    assert!(
        matches!(err, ApiError::TooLarge { limit: l, .. } if l == limit),
        "{err}"
    );
    assert_eq!(requests.load(Ordering::Relaxed), 1);
}

/// Rows 4–6: the health server cannot be held. A partial request is closed after the header
/// timeout; past the connection cap the oldest connection is closed and a probe is still
/// answered; shutdown closes idle and partial connections and the server task ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_server_cannot_be_held() {
    use sentinel::daemon::health::{self, HealthState, server};
    let state = HealthState::new(Duration::from_secs(5));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut until = stopped.clone();
    let cap = 8;
    let task = tokio::spawn(server::run(
        listener,
        health::health_router(state),
        async move {
            let _ = until.wait_for(|s| *s).await;
        },
        cap,
    ));
    let probe = || async move {
        tokio::task::spawn_blocking(move || raw_get(addr, "/healthz"))
            .await
            .expect("probe")
    };
    // A partial request and a connection that sends nothing are closed by the server, not
    // held: alone (no other connection evicts them), so by the header timeout.
    let closed = |sent: &'static [u8]| {
        tokio::task::spawn_blocking(move || {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(sent).expect("write");
            s.set_read_timeout(Some(server::HEADER_READ_TIMEOUT * 4))
                .expect("timeout");
            let mut rest = Vec::new();
            // EOF or a reset, never the read timeout.
            match s.read_to_end(&mut rest) {
                Ok(_) => true,
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        })
    };
    let partial = closed(b"GET /healthz HTTP/1.1\r\nHost: x\r\n");
    let silent = closed(b"");
    assert!(
        partial.await.expect("partial"),
        "a partial request was held"
    );
    assert!(
        silent.await.expect("silent"),
        "a silent connection was held"
    );
    // Many more idle connections than the cap: a probe is still answered.
    let idle: Vec<TcpStream> = (0..cap * 4)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();
    assert!(
        probe().await.starts_with("HTTP/1.1 200"),
        "a probe past the cap"
    );
    // Shutdown with partial and idle connections open: the server ends.
    let mut partial = TcpStream::connect(addr).expect("connect");
    partial.write_all(b"GET /hea").expect("write");
    let _ = stop.send(true);
    let ended = tokio::time::timeout(crate::common::rig::PATIENCE, task).await;
    assert!(ended.is_ok(), "the server outlived its shutdown");
    drop(idle);
    drop(stopped);
}

/// A GET over a raw socket: the response's first line and headers.
fn raw_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Row 4: SIGTERM while a client holds a partial request: the process exits; and a second
/// signal during a shutdown held by a page being published exits at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_request_does_not_hold_the_shutdown() {
    let t = crate::harness::serve::serve_rig("hostile-partial", crate::harness::RABBIT_URL).await;
    let mut process = t.start(&[]).await;
    let health: SocketAddr = process
        .health
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let mut partial = TcpStream::connect(health).expect("connect");
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost")
        .expect("write");
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    drop(partial);
    t.rig.cleanup().await;
}

/// A second SIGTERM while the graceful shutdown waits for a page held by a frozen broker:
/// the process exits at once, with 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once() {
    let proxy = crate::common::proxy::Proxy::start().await;
    let t = crate::harness::serve::serve_rig("hostile-second", &proxy.url()).await;
    let mut process = t.start(&[]).await;
    proxy.freeze(true);
    crate::harness::eventually("a publish held by the frozen broker", async || {
        (proxy.held() > 0).then_some(())
    })
    .await;
    process.signal("TERM");
    crate::harness::eventually("readiness to report the shutdown", async || {
        process
            .health_get("/readyz")
            .await
            .filter(|(c, _)| *c != 200)
    })
    .await;
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(143), "{}", process.output());
    let logs = process.log_messages();
    assert!(
        logs.iter()
            .any(|(l, m)| l == "warn" && m.starts_with("Received a second shutdown signal")),
        "{logs:?}"
    );
    proxy.freeze(false);
    t.rig.cleanup().await;
}

/// Rows 5–6: with the open-files limit at 1024, 1,010 idle connections to the health port,
/// then 15,000 partial requests held at once: `/healthz` and `/metrics` are answered all the
/// while, and the process stays within 256 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_answered_whatever_connections_a_client_holds() {
    use crate::harness::serve::{BIN, Process};
    let t = crate::harness::serve::serve_rig("hostile-fds", crate::harness::RABBIT_URL).await;
    let health = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let broker = t.broker.display().to_string();
    let mut cmd = std::process::Command::new("prlimit");
    cmd.args(["--nofile=1024:1024", BIN, "serve"])
        .arg(format!("--config={}", t.config.display()))
        .arg(format!("--health-server-bindaddress={health}"))
        .arg(format!("--metrics-server-bindaddress={metrics}"))
        .env_clear()
        .env("BROKER_CONFIG_FILE", &broker)
        .env("HYPERFLEET_API_BASE_URL", &t.api.base_url)
        .stdin(std::process::Stdio::null());
    let mut process = Process::spawn(cmd, format!("http://{health}"), format!("http://{metrics}"));
    process.wait_ready().await;
    let addr: SocketAddr = health.parse().expect("addr");
    let hold = |n: usize, sent: &'static [u8]| {
        tokio::task::spawn_blocking(move || {
            (0..n)
                .map(|_| {
                    let mut s = TcpStream::connect(addr).expect("connect");
                    // The server may have closed it already (past its cap): that is fine.
                    let _ = s.write_all(sent);
                    s
                })
                .collect::<Vec<_>>()
        })
    };
    // Bounded: a server that cannot accept would leave the probe waiting forever.
    let answered = async |process: &Process| {
        let patience = crate::common::rig::PATIENCE;
        let healthz = tokio::time::timeout(patience, process.health_get("/healthz")).await;
        let (code, _) = healthz
            .expect("/healthz answered in time")
            .expect("/healthz answered");
        assert_eq!(code, 200);
        let url = format!("{}/metrics", process.metrics);
        let metrics = tokio::time::timeout(patience, crate::harness::get(&url)).await;
        assert_eq!(metrics.expect("/metrics answered in time").0, 200);
    };
    let idle = hold(1010, b"").await.expect("idle connections");
    answered(&process).await;
    drop(idle);
    let partial = hold(
        15_000,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaa",
    )
    .await
    .expect("partial requests");
    answered(&process).await;
    drop(partial);
    answered(&process).await;
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", process.pid())).expect("status");
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    assert!(peak_kib < 256 * 1024, "peak RSS {peak_kib} KiB");
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    t.rig.cleanup().await;
}

/// Rows 7–8: the token file replaced by a FIFO, or pointing at /dev/zero, or a 1 GiB sparse
/// file: one clear error, no read that holds a worker or fills memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_files_that_are_not_small_regular_files_are_refused() {
    let dir = TempDir::new();
    let fifo = dir.0.join("fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .expect("mkfifo");
    let sparse = dir.0.join("sparse");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    for (path, want) in [
        (fifo.clone(), "not a regular file (a FIFO)"),
        (
            "/dev/zero".into(),
            "not a regular file (a character device)",
        ),
        (
            sparse,
            "file is 1073741824 bytes, larger than the limit of 1048576 bytes",
        ),
    ] {
        let client = ApiClient::new(ApiClientConfig {
            base_url: "http://127.0.0.1:9".into(),
            token_path: Some(path.clone()),
            ..ApiClientConfig::default()
        })
        .expect("client");
        let err = client.probe("clusters").await.expect_err("refused");
        assert_eq!(err.metric_label(), "auth_error");
        assert!(err.to_string().ends_with(want), "{}: {err}", path.display());
    }
}

/// Rows 8–9: broker.yaml at /dev/zero, a sparse 1 GiB file, 500,000 nested flow brackets, or
/// a file of many unknown keys: one clear error or one bounded WARN.
#[test]
fn broker_yaml_is_bounded_like_the_config() {
    use sentinel::broker::config::{load_from, parse};
    let env = |name: &str| (name == "BROKER_CONFIG_FILE").then(|| "set".to_string());
    let dir = TempDir::new();
    let sparse = dir.0.join("sparse.yaml");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    for (path, want) in [
        (std::path::PathBuf::from("/dev/zero"), "not a regular file"),
        (sparse, "larger than the limit of 1048576 bytes"),
    ] {
        let err = load_from(std::slice::from_ref(&path), &env).expect_err("refused");
        assert!(err.to_string().contains(want), "{err}");
    }
    let deep = format!("broker: {}", "[".repeat(500_000));
    let err = parse("deep.yaml", &deep, &|_| None).expect_err("too deep");
    assert!(
        err.to_string().contains("nested more than 64 deep"),
        "{err}"
    );
    let mut many = String::from("broker:\n  type: stdout\n");
    for i in 0..50_000 {
        many.push_str(&format!("k{i}: 1\n"));
    }
    let cfg = parse("many.yaml", &many, &|_| None).expect("loads");
    assert_eq!(cfg.ignored_keys.len(), 101);
    assert_eq!(cfg.ignored_keys[100], "and 49900 more unknown keys");
}

/// Rows 10–11: a vhost of 256 bytes or a frame_max of 2^30 in BROKER_RABBITMQ_URL: a clear
/// start-up error naming the bound, exit 1, no panic or abort, no password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amqp_url_bounds_are_start_up_errors() {
    let (api, _) = raw_api(Arc::new(|_| page(&[], 0))).await;
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &crate::harness::read_data("serve.yaml").replace("{topic}", "t"),
    );
    for (url, want) in [
        (
            format!("amqp://user:s3cret@127.0.0.1:1/{}", "v".repeat(256)),
            "vhost is 256 bytes, longer than AMQP's limit of 255",
        ),
        (
            "amqp://user:s3cret@127.0.0.1:1/?frame_max=1073741824".to_string(),
            "frame_max=1073741824 is outside 4096..=1048576 bytes",
        ),
    ] {
        let health = format!("--health-server-bindaddress=127.0.0.1:{}", free_port());
        let output = sentinel_cmd(
            &["serve", &format!("--config={}", config.display()), &health],
            &[
                ("BROKER_TYPE", "rabbitmq"),
                ("BROKER_RABBITMQ_URL", url.as_str()),
                ("HYPERFLEET_API_BASE_URL", api.as_str()),
                ("HYPERFLEET_TRACING_ENABLED", "false"),
            ],
        )
        .output()
        .expect("run sentinel");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(!stderr.contains("s3cret"), "{stderr}");
    }
}

/// An exporter that drops every span.
#[derive(Debug)]
struct Noop;

impl opentelemetry_sdk::trace::SpanExporter for Noop {
    async fn export(
        &self,
        _: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

/// Row 12: OTEL_BSP_MAX_QUEUE_SIZE of 2^64-1, 10^8 or 10^6: a WARN and the capped queue, the
/// daemon starts (no panic, abort or preallocated gigabytes).
#[test]
fn otel_bsp_sizes_are_capped() {
    use sentinel::telemetry::{MAX_QUEUE_SIZE, TraceSettings};
    for huge in ["18446744073709551615", "100000000", "1000000"] {
        let env = |name: &str| (name == "OTEL_BSP_MAX_QUEUE_SIZE").then(|| huge.to_string());
        let settings = TraceSettings::from_env(&env);
        assert_eq!(settings.batch.max_queue_size, MAX_QUEUE_SIZE, "{huge}");
        assert_eq!(
            settings.warnings.len(),
            1,
            "{huge}: {:?}",
            settings.warnings
        );
        // Building the provider with it neither panics nor aborts.
        let telemetry = sentinel::telemetry::with_exporter(Noop, &settings, "test");
        let _ = telemetry.shutdown(Duration::from_secs(1));
    }
}

/// Rows 13–14: a percent-encoded colon in the userinfo of the API base URL and the broker URL
/// is masked by config-dump, the debug_config log and the broker start-up error; an
/// unparsable OTLP endpoint with a password is masked in the "Failed to initialize
/// OpenTelemetry" WARN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_is_printed() {
    let (api, _) = raw_api(Arc::new(|_| page(&[], 0))).await;
    let api = api.replace("http://", "http://user%3APASS@");
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &(crate::harness::read_data("serve.yaml").replace("{topic}", "t") + "debug_config: true\n"),
    );
    let config_flag = format!("--config={}", config.display());
    let dump = sentinel_cmd(
        &["config-dump", &config_flag],
        &[("HYPERFLEET_API_BASE_URL", api.as_str())],
    )
    .output()
    .expect("config-dump");
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(
        text.contains("user:****@127.0.0.1:") && !text.contains("PASS"),
        "{text}"
    );
    let health = format!("--health-server-bindaddress=127.0.0.1:{}", free_port());
    let serve = sentinel_cmd(
        &["serve", &config_flag, &health],
        &[
            ("HYPERFLEET_API_BASE_URL", api.as_str()),
            ("BROKER_TYPE", "rabbitmq"),
            ("BROKER_RABBITMQ_URL", "amqp://user%3APASS@127.0.0.1:1/"),
            ("HYPERFLEET_TRACING_ENABLED", "true"),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://u:hunter2@bad host:4317",
            ),
        ],
    )
    .output()
    .expect("serve");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&serve.stdout),
        String::from_utf8_lossy(&serve.stderr)
    );
    assert_eq!(serve.status.code(), Some(1), "{all}");
    assert!(
        all.contains("cannot connect to rabbitmq at amqp://user:****@127.0.0.1:1/"),
        "{all}"
    );
    assert!(
        all.contains("user:****@127.0.0.1:"),
        "the debug_config dump: {all}"
    );
    assert!(!all.contains("PASS") && !all.contains("hunter2"), "{all}");
}

/// `sentinel eval` reads a resource as text, never as a JSON tree: one resource of ~60 MB
/// (200,000 conditions) is decided as `serve` decides it (skipped, too large) within 256 MiB of
/// address space, and a value past eval's own limit is refused with a clear error, within the
/// same bound, before it is read whole.
#[test]
fn eval_reads_a_huge_resource_in_bounded_memory() {
    let dir = TempDir::new();
    let condition = r#"{"type":"C","status":"True","observed_generation":1,"last_updated_time":"2025-01-01T00:00:00Z","reason":"a reason of some length, as adapters write them","message":"and a message of about the same length as well"}"#;
    let mut big =
        String::from(r#"{"id":"big","kind":"Cluster","generation":1,"status":{"conditions":["#);
    for i in 0..200_000 {
        if i > 0 {
            big.push(',');
        }
        big.push_str(condition);
    }
    big.push_str("]}}");
    assert!(big.len() > 40 << 20, "{}", big.len());
    let over = format!(
        r#"{{"id":"over","spec":{{"pad":"{}"}}}}"#,
        "a".repeat(sentinel::cmd::eval::MAX_INPUT_VALUE_BYTES)
    );
    let run = |name: &str, text: &str| {
        let file = dir.write(name, text);
        let out = std::process::Command::new("prlimit")
            .arg(format!("--as={}", 256u64 << 20))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_sentinel"))
            .args(["eval", "--now", "2025-10-21T12:00:00Z"])
            .arg(&file)
            .output()
            .expect("prlimit (util-linux) runs sentinel");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let (code, text) = run("big.json", &big);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        text.trim_end(),
        r#"{"id":"big","decision":"skip","reason":"resource larger than 1048576 bytes of JSON","params":{}}"#
    );
    drop(big);
    let (code, text) = run("over.json", &over);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("over.json: value 1 is longer than 67108864 bytes, the most eval reads as one resource or list page"),
        "{text}"
    );
}
