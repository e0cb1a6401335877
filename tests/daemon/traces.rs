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
use std::time::Duration;

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
    let signalled = std::time::Instant::now();
    process.signal("TERM");
    let status = process.wait_exit().await;
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(0), "{}", process.output());
    assert_eq!(
        warned(&process),
        1,
        "one WARN for the outage:\n{}",
        process.output()
    );
    // The contract: the flush gives up after 5 s; the rest of a clean stop is well under 3 s.
    assert!(
        took < telemetry::SHUTDOWN_TIMEOUT + Duration::from_secs(3),
        "shutdown took {took:?}"
    );
    t.rig.cleanup().await;
}
