//! OpenTelemetry tracing: an in-process traced cycle's span tree over gRPC (a poll root, page
//! GETs carrying its context, an evaluate and a publish span per resource, the `traceparent` of
//! each event, log lines under their spans), a failed listing's failed poll span over
//! OTLP/HTTP, an untraced cycle that adds nothing; and `sentinel serve` exporting from the
//! `OTEL_*` environment over OTLP HTTP and gRPC, disabled, to stdout by default, and with its
//! collector unreachable.

use crate::common::otlp;
use crate::harness::in_process::{InProcess, Setup, in_process, no_shutdown};
use crate::harness::logs::logs;
use crate::harness::serve::{Process, assert_clean_stop, free_port, serve_rig};
use crate::harness::{RABBIT_URL, cluster_ids, eventually, new_clusters, now};
use sentinel::api::ApiClient;
use sentinel::daemon::runtime::Daemon;
use sentinel::sim::api::{Fault, FaultRule};
use sentinel::telemetry::{self, Telemetry, TraceSettings, Tracing};
use serde_json::Value as Json;

/// Settings as an empty environment gives them, with a test service name and resource.
fn trace_settings() -> TraceSettings {
    let env = |name: &str| match name {
        "OTEL_SERVICE_NAME" => Some("sentinel-test".to_string()),
        "OTEL_RESOURCE_ATTRIBUTES" => Some("deployment.environment=test".to_string()),
        _ => None,
    };
    TraceSettings::from_env(&env)
}

/// `daemon` with its API client (and so its loop) tracing with `tracing`.
fn trace(daemon: Daemon, tracing: Tracing) -> Daemon {
    let mut config = daemon.api().config().clone();
    config.tracing = tracing;
    daemon.with_api(ApiClient::new(config).expect("api client"))
}

/// Flushes the provider's last spans (shutdown is blocking: off the async workers).
async fn flush(telemetry: Telemetry) {
    tokio::task::spawn_blocking(move || telemetry.shutdown(telemetry::SHUTDOWN_TIMEOUT))
        .await
        .expect("shutdown task")
        .expect("spans flushed");
}

fn traceparent_of(event: &Json) -> Option<&str> {
    event.get("traceparent").and_then(Json::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_cycle_exports_its_span_tree_over_grpc() {
    use opentelemetry_otlp::WithExportConfig as _;
    let InProcess {
        rig,
        topic,
        queue,
        api,
        daemon,
    } = in_process(
        "traced",
        new_clusters(3),
        Setup {
            page_size: 2,
            prefetch: 2,
            ..Setup::default()
        },
    )
    .await;
    let receiver = otlp::grpc_receiver().await;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(receiver.endpoint())
        .build()
        .expect("gRPC exporter");
    let telemetry = telemetry::with_exporter(exporter, &trace_settings(), "9.9.9");
    let mut daemon = trace(daemon, telemetry.tracing());
    let logs = logs();
    let (_tx, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!((report.total, report.published), (3, 3), "{report:?}");
    let events: Vec<Json> = [
        rig.next(&queue).await,
        rig.next(&queue).await,
        rig.next(&queue).await,
    ]
    .iter()
    .map(|msg| serde_json::from_slice(&msg.data).expect("event JSON"))
    .collect();
    flush(telemetry).await;
    let spans = eventually("the cycle's spans at the receiver", async || {
        let all = receiver.spans.all();
        (all.iter().filter(|s| s.name.ends_with(" publish")).count() == 3).then_some(all)
    })
    .await;
    let _ = logs;

    // One root per cycle, with the resource the provider was given.
    let polls: Vec<_> = spans.iter().filter(|s| s.name == "sentinel.poll").collect();
    assert_eq!(polls.len(), 1, "{spans:#?}");
    let poll = polls[0];
    assert_eq!(poll.parent_span_id, "");
    assert_eq!(poll.attr("hyperfleet.resource_type"), Some("clusters"));
    assert_eq!(poll.status.0, 0, "unset status");
    for span in &spans {
        assert_eq!(
            span.trace_id, poll.trace_id,
            "one trace per cycle: {span:?}"
        );
        assert_eq!(span.scope, "hyperfleet-sentinel");
        assert_eq!(span.resource_attr("service.name"), Some("sentinel-test"));
        assert_eq!(span.resource_attr("service.version"), Some("9.9.9"));
        assert_eq!(span.resource_attr("deployment.environment"), Some("test"));
    }

    // The page GETs: client spans under the poll, and the requests carried their context.
    let gets: Vec<_> = spans.iter().filter(|s| s.name == "HTTP GET").collect();
    let page_requests: Vec<_> = api
        .api
        .requests()
        .into_iter()
        .filter(|r| r.page().is_some())
        .collect();
    assert_eq!(gets.len(), page_requests.len(), "{spans:#?}");
    assert_eq!(gets.len(), 2, "3 clusters in pages of 2");
    for get in &gets {
        assert_eq!(get.kind, 3, "client span");
        assert_eq!(get.parent_span_id, poll.span_id);
        assert_eq!(get.attr("http.request.method"), Some("GET"));
        assert_eq!(get.attr("http.response.status_code"), Some("200"));
        assert!(
            get.attr("url.full")
                .is_some_and(|u| u.contains("/clusters?")),
            "{get:?}"
        );
    }
    for request in &page_requests {
        let header = request.header("traceparent").expect("traceparent header");
        let parts: Vec<&str> = header.split('-').collect();
        assert_eq!(parts.len(), 4, "{header}");
        assert_eq!(parts[0], "00");
        assert_eq!(
            parts[1], poll.trace_id,
            "the request carries the poll's trace"
        );
        assert!(
            gets.iter().any(|g| g.span_id == parts[2]),
            "names its GET span: {header}"
        );
        assert_eq!(parts[3], "01");
        // As Go's propagator: no `tracestate` when the state is empty.
        assert_eq!(request.header("tracestate"), None);
    }

    // One evaluate span per resource under the poll; one publish span under each.
    let ids = cluster_ids(&new_clusters(3));
    let evaluates: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "sentinel.evaluate")
        .collect();
    assert_eq!(evaluates.len(), 3);
    let publish_name = format!("{topic} publish");
    for event in &events {
        let id = event["data"]["id"].as_str().expect("data.id");
        assert!(ids.iter().any(|i| i == id));
        let eval = evaluates
            .iter()
            .find(|s| s.attr("hyperfleet.resource_id") == Some(id))
            .expect("an evaluate span per resource");
        assert_eq!(eval.parent_span_id, poll.span_id);
        assert_eq!(eval.attr("hyperfleet.resource_type"), Some("clusters"));
        assert_eq!(
            eval.attr("hyperfleet.decision_reason"),
            Some("message decision matched")
        );
        let publish = spans
            .iter()
            .find(|s| s.name == publish_name && s.parent_span_id == eval.span_id)
            .expect("a publish span under the evaluate span");
        assert_eq!(publish.attr("messaging.system"), Some("rabbitmq"));
        assert_eq!(publish.attr("messaging.operation.type"), Some("publish"));
        assert_eq!(
            publish.attr("messaging.destination.name"),
            Some(topic.as_str())
        );
        assert_eq!(publish.attr("messaging.message.id"), event["id"].as_str());
        assert_eq!(publish.status.0, 0);
        // The event names its publish span, and the extension follows `data`.
        let want = format!("00-{}-{}-01", poll.trace_id, publish.span_id);
        assert_eq!(traceparent_of(event), Some(want.as_str()));
        let keys: Vec<&String> = event.as_object().expect("object").keys().collect();
        assert_eq!(
            keys.last().map(|k| k.as_str()),
            Some("traceparent"),
            "{keys:?}"
        );

        // Its log line was written under the evaluate span.
        let line = format!("Published event resource_id={id}");
        let logged = logs
            .raw(&topic)
            .into_iter()
            .find(|v| v["message"] == line.as_str())
            .expect("published line");
        assert_eq!(logged["trace_id"], poll.trace_id.as_str());
        assert_eq!(logged["span_id"], eval.span_id.as_str());
    }
    // The cycle summary was written under the poll span.
    let summary = logs
        .raw(&topic)
        .into_iter()
        .find(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Trigger cycle completed"))
        })
        .expect("summary line");
    assert_eq!(summary["span_id"], poll.span_id.as_str());
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_listing_marks_the_poll_span_failed() {
    let InProcess {
        rig,
        topic: _,
        queue: _,
        api,
        daemon,
    } = in_process(
        "traced-fail",
        new_clusters(1),
        Setup {
            page_size: 2,
            ..Setup::default()
        },
    )
    .await;
    api.api
        .inject(FaultRule::new(Fault::Status(500)).on_page(1).always());
    let receiver = otlp::http_receiver().await;
    let exporter = {
        use opentelemetry_otlp::{Protocol, WithExportConfig as _};
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{}/v1/traces", receiver.endpoint()))
            .build()
            .expect("HTTP exporter")
    };
    let telemetry = telemetry::with_exporter(exporter, &trace_settings(), "9.9.9");
    let mut daemon = trace(daemon, telemetry.tracing());
    let (_tx, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert!(!report.completed);
    flush(telemetry).await;
    let poll = eventually("the poll span over OTLP/HTTP", async || {
        receiver.spans.named("sentinel.poll").pop()
    })
    .await;
    assert_eq!(poll.status, (2, "fetch resources failed".to_string()));
    assert_eq!(poll.resource_attr("service.name"), Some("sentinel-test"));
    let gets = receiver.spans.named("HTTP GET");
    assert!(!gets.is_empty());
    for get in &gets {
        assert_eq!(get.parent_span_id, poll.span_id);
        assert_eq!(get.attr("http.response.status_code"), Some("500"));
        assert_eq!(get.status.0, 2, "a 500 fails the client span");
    }
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untraced_cycle_adds_no_traceparent_and_no_trace_fields() {
    let InProcess {
        rig,
        topic,
        queue,
        api,
        mut daemon,
    } = in_process(
        "untraced",
        new_clusters(2),
        Setup {
            page_size: 10,
            ..Setup::default()
        },
    )
    .await;
    let _ = logs();
    let (_tx, mut shutdown) = no_shutdown();
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!(report.published, 2);
    for _ in 0..2 {
        let event: Json = serde_json::from_slice(&rig.next(&queue).await.data).expect("JSON");
        assert_eq!(traceparent_of(&event), None, "{event}");
        assert_eq!(
            event.as_object().map(|o| o.keys().next_back().cloned()),
            Some(Some("data".to_string()))
        );
    }
    for request in api.api.requests() {
        assert_eq!(request.header("traceparent"), None);
        assert_eq!(request.header("baggage"), None);
    }
    let lines = logs().raw(&topic);
    assert!(!lines.is_empty());
    for line in lines {
        assert!(
            line.get("trace_id").is_none() && line.get("span_id").is_none(),
            "{line}"
        );
    }
    rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_over_otlp_http_from_the_environment() {
    serve_exports_from_the_environment(otlp::http_receiver().await, "http/protobuf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_over_otlp_grpc_from_the_environment() {
    serve_exports_from_the_environment(otlp::grpc_receiver().await, "grpc").await;
}

async fn serve_exports_from_the_environment(receiver: otlp::Receiver, protocol: &str) {
    let t = serve_rig("serve-otlp", RABBIT_URL).await;
    let endpoint = receiver.endpoint();
    let mut process = t
        .start(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
            ("OTEL_SERVICE_NAME", "sentinel-e2e"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=e2e,team=fleet",
            ),
            ("OTEL_TRACES_SAMPLER", "always_on"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ])
        .await;
    let first: Vec<Json> = [t.rig.next(&t.queue).await, t.rig.next(&t.queue).await]
        .iter()
        .map(|msg| serde_json::from_slice(&msg.data).expect("JSON"))
        .collect();
    let ids: Vec<&str> = first
        .iter()
        .map(|e| e["data"]["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, t.due);
    let publish_name = format!("{} publish", t.topic);
    for event in &first {
        let tp = traceparent_of(event).expect("traceparent").to_string();
        let span_id = tp.split('-').nth(2).unwrap_or_default().to_string();
        let publish = eventually("the event's publish span at the receiver", async || {
            receiver
                .spans
                .all()
                .into_iter()
                .find(|s| s.span_id == span_id)
        })
        .await;
        assert_eq!(publish.name, publish_name);
        assert_eq!(
            tp,
            format!("00-{}-{}-01", publish.trace_id, publish.span_id)
        );
        assert_eq!(publish.attr("messaging.message.id"), event["id"].as_str());
        assert_eq!(publish.resource_attr("service.name"), Some("sentinel-e2e"));
        assert_eq!(
            publish.resource_attr("service.version"),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(publish.resource_attr("deployment.environment"), Some("e2e"));
        assert_eq!(publish.resource_attr("team"), Some("fleet"));
    }
    // The probe's GET is a root of its own (exported by the batch processor on its own
    // schedule, so it may arrive after the cycle's spans); nothing went to stdout but logs.
    eventually("the startup probe's span at the receiver", async || {
        receiver
            .spans
            .named("HTTP GET")
            .into_iter()
            .find(|s| s.parent_span_id.is_empty())
    })
    .await;
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    assert!(process.span_lines().is_empty(), "{}", process.output());
    // Log lines of the cycles carry the trace ids; startup lines do not.
    let logs = process.log_lines();
    let published: Vec<&Json> = logs
        .iter()
        .filter(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Published event"))
        })
        .collect();
    assert!(!published.is_empty());
    for line in published {
        let span_id = line["span_id"].as_str().expect("span_id");
        let trace_id = line["trace_id"].as_str().expect("trace_id");
        assert!(receiver.spans.all().iter().any(|s| s.span_id == span_id
            && s.trace_id == trace_id
            && s.name == "sentinel.evaluate"));
    }
    let start = logs
        .iter()
        .find(|v| v["message"] == "Starting HyperFleet Sentinel")
        .expect("start line");
    assert!(start.get("trace_id").is_none());
    t.rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_tracing_disabled_exports_nothing() {
    let t = serve_rig("serve-untraced", RABBIT_URL).await;
    let receiver = otlp::http_receiver().await;
    let endpoint = receiver.endpoint();
    let mut process = t
        .start(&[
            ("HYPERFLEET_TRACING_ENABLED", "false"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ])
        .await;
    for _ in 0..2 {
        let event: Json = serde_json::from_slice(&t.rig.next(&t.queue).await.data).expect("JSON");
        assert_eq!(traceparent_of(&event), None, "{event}");
    }
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    assert!(receiver.spans.all().is_empty(), "nothing exported");
    assert!(process.span_lines().is_empty());
    let logs = process.log_lines();
    let disabled: Vec<&Json> = logs
        .iter()
        .filter(|v| v["message"] == "OpenTelemetry disabled")
        .collect();
    assert_eq!(disabled.len(), 1, "{logs:?}");
    assert_eq!(disabled[0]["level"], "info");
    assert_eq!(disabled[0]["extra"]["tracing_enabled"], false);
    for line in &logs {
        assert!(line.get("trace_id").is_none(), "{line}");
    }
    for request in t.api.api.requests() {
        assert_eq!(request.header("traceparent"), None);
    }
    t.rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_traces_to_stdout_by_default() {
    let t = serve_rig("serve-stdout", RABBIT_URL).await;
    let mut process = t.start(&[("OTEL_BSP_SCHEDULE_DELAY", "100")]).await;
    let event: Json = serde_json::from_slice(&t.rig.next(&t.queue).await.data).expect("JSON");
    let tp = traceparent_of(&event).expect("traceparent").to_string();
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_clean_stop(&process);
    let spans = process.span_lines();
    let publish = spans
        .iter()
        .find(|s| tp.contains(s["SpanContext"]["SpanID"].as_str().unwrap_or("-")))
        .expect("the publish span on stdout");
    assert_eq!(publish["Name"], format!("{} publish", t.topic));
    assert!(spans.iter().any(|s| s["Name"] == "sentinel.poll"));
    assert!(spans.iter().all(|s| {
        s["Resource"].as_array().is_some_and(|r| {
            r.iter().any(|kv| {
                kv["Key"] == "service.name" && kv["Value"]["Value"] == "hyperfleet-sentinel"
            })
        })
    }));
    t.rig.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_keeps_publishing_when_the_collector_is_unreachable() {
    let t = serve_rig("serve-nocollector", RABBIT_URL).await;
    let started = std::time::Instant::now();
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let mut process = t
        .start(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ])
        .await;
    // Three cycles' worth of events (two due per cycle, 1 s apart) while exports fail.
    for _ in 0..6 {
        let event: Json = serde_json::from_slice(&t.rig.next(&t.queue).await.data).expect("JSON");
        assert!(traceparent_of(&event).is_some());
    }
    let warned = |process: &Process| {
        process
            .log_lines()
            .iter()
            .filter(|v| {
                v["level"] == "warn"
                    && v["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("Failed to export OpenTelemetry spans"))
            })
            .count()
    };
    eventually("the export failure warned", async || {
        (warned(&process) > 0).then_some(())
    })
    .await;
    process.signal("TERM");
    let status = process.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{}", process.output());
    // One WARN when the outage began, then at most one a minute with the counts since, and
    // the last counts at shutdown.
    let minutes = started.elapsed().as_secs() / 60;
    let lines = warned(&process);
    assert!(
        (1..=2 + minutes as usize).contains(&lines),
        "{lines} WARNs for the outage in {minutes} min:\n{}",
        process.output()
    );
    t.rig.cleanup().await;
}

/// Tracing through the sentinel's own OTLP exporter, configured by `vars` as the whole
/// `OTEL_*` environment.
fn otlp_telemetry(vars: &[(&str, &str)]) -> Result<Telemetry, telemetry::TelemetryError> {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let settings = TraceSettings::from_env(&|name| map.get(name).cloned());
    assert!(settings.warnings.is_empty(), "{:?}", settings.warnings);
    telemetry::init(&settings, "9.9.9")
}

/// One request of one `sentinel.evaluate` span (for resource `id`), queued at once (its poll
/// span a remote one, so that the SDK has no span of its own to export).
fn export_one(tracing: &Tracing, id: &str) {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };
    let poll = opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from(fastrand::u128(1..)),
        SpanId::from(fastrand::u64(1..)),
        TraceFlags::SAMPLED,
        false,
        TraceState::NONE,
    ));
    let to = telemetry::Destination {
        resource_type: "clusters",
        topic: "otlp-test",
        messaging_system: "rabbitmq",
    };
    let mut spans = tracing.cycle_spans(&poll, &to).expect("a valid poll span");
    assert!(spans.sampled());
    let span = spans.start();
    spans.end_evaluate(&span, id, None);
    spans.flush();
}

/// The exporter's report lines with `message` (logged by its URL, `exporter`), in order.
fn reports(exporter: &str, message: &str) -> Vec<Json> {
    logs().matching(|v| v["extra"]["exporter"] == exporter && v["message"] == message)
}

/// The sum of a count over report lines.
fn total(lines: &[Json], count: &str) -> u64 {
    lines
        .iter()
        .map(|v| v["extra"][count].as_u64().unwrap_or(0))
        .sum()
}

/// At most one report line per kind per minute (and one more, the counts written at
/// shutdown), whatever the run took.
fn assert_rate_limited(lines: &[Json], started: std::time::Instant) {
    let minutes = started.elapsed().as_secs() / 60;
    assert!(
        !lines.is_empty() && lines.len() as u64 <= 2 + minutes,
        "{} lines in {minutes} min: {lines:#?}",
        lines.len()
    );
}

/// The receiver's OTLP endpoint URL as the exporter names itself in its reports.
fn exporter_url(receiver: &otlp::Receiver, grpc: bool) -> String {
    match grpc {
        true => receiver.endpoint(),
        false => format!("{}/v1/traces", receiver.endpoint()),
    }
}

async fn receiver(grpc: bool, options: otlp::Options) -> otlp::Receiver {
    match grpc {
        true => otlp::grpc_receiver_with(options).await,
        false => otlp::http_receiver_with(options).await,
    }
}

fn protocol(grpc: bool) -> &'static str {
    if grpc { "grpc" } else { "http/protobuf" }
}

/// Waits until the receiver has seen `n` requests.
async fn requests_seen(receiver: &otlp::Receiver, n: usize) {
    eventually("the receiver to see the requests", async || {
        (receiver.seen.requests() >= n).then_some(())
    })
    .await;
}

async fn partial_successes_are_reported(grpc: bool) {
    let receiver = receiver(
        grpc,
        otlp::Options {
            answer: otlp::Answer::Partial {
                rejected: 2,
                message: "too old".into(),
            },
            ..otlp::Options::default()
        },
    )
    .await;
    let started = std::time::Instant::now();
    let endpoint = receiver.endpoint();
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol(grpc)),
    ])
    .expect("exporter");
    let _ = logs();
    for i in 1..=3 {
        export_one(&t.tracing(), &format!("c{i}"));
        requests_seen(&receiver, i).await;
    }
    flush(t).await;
    let lines = reports(
        &exporter_url(&receiver, grpc),
        "OpenTelemetry collector rejected spans",
    );
    assert_rate_limited(&lines, started);
    assert_eq!(
        lines[0]["error"],
        "OTLP partial success: too old (2 spans rejected)"
    );
    assert_eq!(lines[0]["level"], "warn");
    assert_eq!(total(&lines, "rejected_spans"), 6, "{lines:#?}");
    assert_eq!(total(&lines, "partial_successes"), 3, "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_partial_successes_are_reported_with_counts() {
    partial_successes_are_reported(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_grpc_partial_successes_are_reported_with_counts() {
    partial_successes_are_reported(true).await;
}

/// A collector asking the exporter to wait ten minutes (429 with `Retry-After: 600`, or
/// `RESOURCE_EXHAUSTED` with a `RetryInfo` of 600 s) gets no request until then: the requests
/// queued meanwhile wait, and are dropped and counted when the exporter shuts down first.
async fn a_collector_asking_to_wait_pauses_the_exporter(grpc: bool) {
    let receiver = receiver(
        grpc,
        otlp::Options {
            answer: otlp::Answer::Throttle { seconds: 600 },
            ..otlp::Options::default()
        },
    )
    .await;
    let started = std::time::Instant::now();
    let endpoint = receiver.endpoint();
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol(grpc)),
    ])
    .expect("exporter");
    let _ = logs();
    let url = exporter_url(&receiver, grpc);
    let message = "OpenTelemetry collector asked the exporter to wait; exports are paused";
    export_one(&t.tracing(), "c0");
    requests_seen(&receiver, 1).await;
    eventually("the first request's report", async || {
        (!reports(&url, message).is_empty()).then_some(())
    })
    .await;
    for i in 1..=3 {
        export_one(&t.tracing(), &format!("c{i}"));
    }
    flush(t).await;
    assert_eq!(
        receiver.seen.requests(),
        1,
        "nothing sent while asked to wait"
    );
    let lines = reports(&url, message);
    assert_rate_limited(&lines, started);
    assert!(
        lines[0]["error"]
            .as_str()
            .is_some_and(|e| e.ends_with("(asked to wait 600s)")),
        "{lines:#?}"
    );
    assert_eq!(total(&lines, "dropped_spans"), 4, "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_retry_after_pauses_the_whole_exporter() {
    a_collector_asking_to_wait_pauses_the_exporter(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_grpc_resource_exhausted_retry_info_pauses_the_whole_exporter() {
    a_collector_asking_to_wait_pauses_the_exporter(true).await;
}

/// Ten failed exports are one WARN (with their counts written at shutdown), not ten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_export_failures_are_rate_limited_warnings_with_counts() {
    let receiver = otlp::http_receiver_with(otlp::Options {
        answer: otlp::Answer::Fail,
        ..otlp::Options::default()
    })
    .await;
    let started = std::time::Instant::now();
    let endpoint = receiver.endpoint();
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    ])
    .expect("exporter");
    let _ = logs();
    for i in 1..=10 {
        export_one(&t.tracing(), &format!("c{i}"));
        requests_seen(&receiver, i).await;
    }
    flush(t).await;
    let lines = reports(
        &exporter_url(&receiver, false),
        "Failed to export OpenTelemetry spans; spans are dropped until the exporter recovers",
    );
    assert_rate_limited(&lines, started);
    assert_eq!(
        lines[0]["error"],
        "HTTP export failed with status code: 500"
    );
    assert_eq!(total(&lines, "failed_requests"), 10, "{lines:#?}");
    assert_eq!(total(&lines, "dropped_spans"), 10, "{lines:#?}");
}

/// Spans that find the queue full are dropped, counted and reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_spans_dropped_for_a_full_queue_are_reported() {
    let receiver = otlp::http_receiver_with(otlp::Options {
        gated: true,
        ..otlp::Options::default()
    })
    .await;
    let endpoint = receiver.endpoint();
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "2"),
        // The first request waits on the closed receiver for as long as the test needs.
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "600000"),
    ])
    .expect("exporter");
    let _ = logs();
    // Two spans fill the queue (the one in flight counts until it is answered).
    for i in 1..=5 {
        export_one(&t.tracing(), &format!("c{i}"));
    }
    let url = exporter_url(&receiver, false);
    let message = "OpenTelemetry span queue is full; spans are dropped";
    let first = eventually("the full queue's report", async || {
        reports(&url, message).into_iter().next()
    })
    .await;
    assert_eq!(first["extra"]["dropped_spans"], 1, "{first}");
    assert_eq!(first["error"], "the queue holds 2 spans at most");
    receiver.open();
    flush(t).await;
    assert_eq!(receiver.spans.named("sentinel.evaluate").len(), 2);
    assert_eq!(total(&reports(&url, message), "dropped_spans"), 3);
}

/// `OTEL_EXPORTER_OTLP_COMPRESSION=gzip` gzips the requests of both protocols.
async fn requests_are_gzipped(grpc: bool) {
    let receiver = receiver(grpc, otlp::Options::default()).await;
    let endpoint = receiver.endpoint();
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol(grpc)),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
    ])
    .expect("exporter");
    export_one(&t.tracing(), "gzipped");
    flush(t).await;
    let span = receiver
        .spans
        .named("sentinel.evaluate")
        .pop()
        .expect("span");
    assert_eq!(span.attr("hyperfleet.resource_id"), Some("gzipped"));
    assert_eq!(receiver.seen.encodings(), ["gzip"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_requests_are_gzipped() {
    requests_are_gzipped(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_grpc_requests_are_gzipped() {
    requests_are_gzipped(true).await;
}

/// TLS with the CA of `OTEL_EXPORTER_OTLP_CERTIFICATE` and the client certificate the
/// collector requires; for gRPC a certificate means TLS even with an `http://` endpoint, as
/// the Go SDK has it.
async fn exports_over_tls(grpc: bool) {
    let _ = logs();
    let certs = crate::common::tls::pki(&["localhost", "127.0.0.1"]);
    let receiver = receiver(
        grpc,
        otlp::Options {
            tls: Some(certs.server_config(true)),
            ..otlp::Options::default()
        },
    )
    .await;
    let endpoint = match grpc {
        true => format!("http://localhost:{}", receiver.addr.port()),
        false => receiver.endpoint(),
    };
    let path = |p: &std::path::Path| p.display().to_string();
    let (ca, cert, key) = (
        path(&certs.ca),
        path(&certs.client_cert),
        path(&certs.client_key),
    );
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol(grpc)),
        ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", &ca),
        ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", &cert),
        ("OTEL_EXPORTER_OTLP_CLIENT_KEY", &key),
    ])
    .expect("exporter");
    export_one(&t.tracing(), "over-tls");
    flush(t).await;
    let span = receiver.spans.named("sentinel.evaluate").pop();
    assert_eq!(
        span.as_ref().and_then(|s| s.attr("hyperfleet.resource_id")),
        Some("over-tls")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_exports_over_tls_with_a_client_certificate() {
    exports_over_tls(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_grpc_exports_over_tls_with_a_client_certificate() {
    exports_over_tls(true).await;
}

/// As the Go SDK: a certificate file that cannot be read is a WARN and is left out (the
/// exporter still exports); a certificate with an insecure HTTP endpoint fails the exporter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_certificate_files_are_read_as_the_go_sdk_reads_them() {
    let receiver = otlp::http_receiver().await;
    let endpoint = receiver.endpoint();
    let missing = format!("/nonexistent/ca-{}.pem", std::process::id());
    let _ = logs();
    let t = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", &missing),
    ])
    .expect("exporter");
    export_one(&t.tracing(), "plain");
    flush(t).await;
    assert_eq!(receiver.spans.named("sentinel.evaluate").len(), 1);
    let warned = logs().matching(|v| {
        v["level"] == "warn"
            && v["message"].as_str().is_some_and(|m| {
                m.starts_with("OTEL_EXPORTER_OTLP_CERTIFICATE: read tls ca cert file")
                    && m.contains(&missing)
            })
    });
    assert_eq!(warned.len(), 1, "{warned:#?}");

    let certs = crate::common::tls::pki(&["localhost", "127.0.0.1"]);
    let ca = certs.ca.display().to_string();
    let e = otlp_telemetry(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca),
    ])
    .err()
    .expect("an insecure endpoint with a certificate");
    assert_eq!(
        e.to_string(),
        "invalid exporter configuration: insecure HTTP endpoint cannot use TLS client configuration"
    );
}

/// Exports go on while the loop's thread is blocked (here writing events to a stdout nobody
/// reads, as `process::the_servers_answer_while_the_loop_is_blocked` blocks it): the first
/// cycle's spans, queued before the block, reach a collector that asks the exporter to wait a
/// second until the loop is blocked and only then takes them, over each protocol (so every
/// span it keeps was sent again after the block). A collector never sees the sentinel go quiet
/// because of what the loop's thread is doing.
async fn exports_go_on_while_the_loop_is_blocked(grpc: bool) {
    use crate::harness::fake_api::fake_api;
    use crate::harness::read_data;
    use crate::harness::serve::{TempDir, sentinel_cmd};
    let receiver = receiver(
        grpc,
        otlp::Options {
            throttled_until_open: true,
            ..otlp::Options::default()
        },
    )
    .await;
    // 100 due clusters: a cycle writes ~40 KB of events, so the first completes and the second
    // fills the pipe (64 KiB) and blocks.
    let api = fake_api(crate::harness::new_clusters(100)).await;
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &read_data("serve.yaml")
            .replace("{topic}", "otlp-blocked")
            .replace("page_size: 1", "page_size: 100"),
    );
    let config_flag = format!("--config={}", config.display());
    let health = format!("--health-server-bindaddress=127.0.0.1:{}", free_port());
    let metrics = format!("--metrics-server-bindaddress=127.0.0.1:{}", free_port());
    let endpoint = receiver.endpoint();
    let env = [
        ("BROKER_TYPE", "stdout"),
        ("HYPERFLEET_API_BASE_URL", api.base_url.as_str()),
        ("HYPERFLEET_TRACING_ENABLED", "true"),
        ("HYPERFLEET_LOG_OUTPUT", "stderr"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol(grpc)),
        ("OTEL_TRACES_SAMPLER", "always_on"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "16384"),
        // The first request waits on the closed collector for as long as the test needs.
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "600000"),
    ];
    let mut cmd = sentinel_cmd(&["serve", &config_flag, &health, &metrics], &env);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = crate::common::Killed(cmd.spawn().expect("spawn sentinel serve"));
    // Held open and never read.
    let _stdout = child.0.stdout.take().expect("stdout");
    let pid = child.0.id();
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
    assert!(
        receiver.spans.all().is_empty(),
        "the collector kept nothing yet"
    );
    receiver.open();
    // The first cycle's spans, or (had the exporter given them up while asked to wait) the
    // second cycle's page GET, which the batch processor's thread queues after the block.
    eventually("spans at the collector", async || {
        (!receiver.spans.all().is_empty()).then_some(())
    })
    .await;
    assert!(
        blocked(),
        "still blocked: {}",
        std::fs::read_to_string(&syscall).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_exports_go_on_while_the_loop_is_blocked() {
    exports_go_on_while_the_loop_is_blocked(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_grpc_exports_go_on_while_the_loop_is_blocked() {
    exports_go_on_while_the_loop_is_blocked(true).await;
}
