//! The per-resource cost of tracing, as the poll loop pays it: under one `sentinel.poll` span,
//! 100 resources each get a `sentinel.evaluate` span with `hyperfleet.resource_type` and
//! `hyperfleet.resource_id`, then `hyperfleet.decision_reason`, and end (the decide-and-skip
//! path). Cases: tracing off (the `Tracing::off` check the loop makes); the OpenTelemetry API
//! directly (what the sentinel uses) with `always_off`, and with ratio 1.0 into a batch processor
//! whose exporter drops every batch; and the same spans through `tracing` +
//! `tracing-opentelemetry`, the alternative the choice was measured against. Criterion reports
//! time per resource. `cargo bench --bench tracing`.

use criterion::{Criterion, Throughput, criterion_group};
use opentelemetry::KeyValue;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, Sampler, SdkTracerProvider, SpanData, SpanExporter,
};
use sentinel::telemetry::{self, SamplerKind, TraceSettings, Tracing};
use std::hint::black_box;
use std::time::Duration;

const PAGE: usize = 100;

/// An exporter that drops every batch: the cost measured is the sentinel's, not a collector's.
#[derive(Debug)]
struct Drop_;

impl SpanExporter for Drop_ {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        black_box(batch.len());
        Ok(())
    }
}

fn settings(sampler: SamplerKind) -> TraceSettings {
    TraceSettings {
        sampler,
        ..TraceSettings::from_env(&|_| None)
    }
}

fn ids() -> Vec<String> {
    (0..PAGE).map(|i| format!("cls-{i:08}")).collect()
}

/// The loop's per-resource span work through the sentinel's own handle.
fn page_otel(tracing: &Tracing, ids: &[String]) {
    let poll = tracing.start("sentinel.poll", None, || {
        vec![KeyValue::new("hyperfleet.resource_type", "clusters")]
    });
    for id in ids {
        let eval = poll.as_ref().and_then(|poll| {
            tracing.start("sentinel.evaluate", Some(poll), || {
                vec![
                    KeyValue::new("hyperfleet.resource_type", "clusters"),
                    KeyValue::new("hyperfleet.resource_id", id.clone()),
                ]
            })
        });
        let _current = eval.clone().map(opentelemetry::Context::attach);
        if let Some(eval) = &eval {
            eval.span().set_attribute(KeyValue::new(
                "hyperfleet.decision_reason",
                "generation already reconciled",
            ));
        }
        black_box(&eval);
    }
    if let Some(poll) = &poll {
        telemetry::end(poll);
    }
}

/// The same spans through `tracing` + `tracing-opentelemetry`.
fn page_bridge(ids: &[String]) {
    let poll = tracing::info_span!("sentinel.poll", hyperfleet.resource_type = "clusters");
    let _poll = poll.enter();
    for id in ids {
        let eval = tracing::info_span!(
            "sentinel.evaluate",
            hyperfleet.resource_type = "clusters",
            hyperfleet.resource_id = id.as_str(),
            hyperfleet.decision_reason = tracing::field::Empty,
        );
        let _eval = eval.enter();
        eval.record(
            "hyperfleet.decision_reason",
            "generation already reconciled",
        );
        black_box(&eval);
    }
}

fn bridge_subscriber(
    sampler: Sampler,
) -> (impl tracing::Subscriber + Send + Sync, SdkTracerProvider) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Drop_).build())
        .with_sampler(sampler)
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("hyperfleet-sentinel"));
    (tracing_subscriber::registry().with(layer), provider)
}

fn tracing_cost(c: &mut Criterion) {
    let ids = ids();
    let mut group = c.benchmark_group("tracing");
    group.throughput(Throughput::Elements(PAGE as u64));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));

    let off = Tracing::off();
    group.bench_function("off", |b| b.iter(|| page_otel(&off, &ids)));

    let always_off = telemetry::with_exporter(Drop_, &settings(SamplerKind::AlwaysOff), "bench");
    let tracing = always_off.tracing();
    group.bench_function("otel/always_off", |b| b.iter(|| page_otel(&tracing, &ids)));

    let sampled =
        telemetry::with_exporter(Drop_, &settings(SamplerKind::TraceIdRatio(1.0)), "bench");
    let tracing = sampled.tracing();
    group.bench_function("otel/ratio_1_drop", |b| {
        b.iter(|| page_otel(&tracing, &ids))
    });

    let (subscriber, bridge_off) = bridge_subscriber(Sampler::AlwaysOff);
    tracing::subscriber::with_default(subscriber, || {
        group.bench_function("bridge/always_off", |b| b.iter(|| page_bridge(&ids)));
    });
    let (subscriber, bridge_on) = bridge_subscriber(Sampler::TraceIdRatioBased(1.0));
    tracing::subscriber::with_default(subscriber, || {
        group.bench_function("bridge/ratio_1_drop", |b| b.iter(|| page_bridge(&ids)));
    });
    group.finish();
    for provider in [bridge_off, bridge_on] {
        let _ = provider.shutdown();
    }
    let _ = always_off.shutdown(Duration::from_secs(1));
    let _ = sampled.shutdown(Duration::from_secs(1));
}

criterion_group!(benches, tracing_cost);

/// `SENTINEL_TRACING_BENCH=<case>:<pages>` runs one case for that many pages and exits, for
/// counting instructions under callgrind (difference two page counts for a per-resource figure).
/// Otherwise criterion runs.
fn main() {
    let Ok(spec) = std::env::var("SENTINEL_TRACING_BENCH") else {
        benches();
        Criterion::default().configure_from_args().final_summary();
        return;
    };
    let (case, pages) = spec.split_once(':').unwrap_or((spec.as_str(), "1"));
    let pages: usize = pages.parse().unwrap_or(1);
    let ids = ids();
    match case {
        "off" => (0..pages).for_each(|_| page_otel(&Tracing::off(), &ids)),
        "otel/always_off" | "otel/ratio_1_drop" => {
            let sampler = if case == "otel/always_off" {
                SamplerKind::AlwaysOff
            } else {
                SamplerKind::TraceIdRatio(1.0)
            };
            let t = telemetry::with_exporter(Drop_, &settings(sampler), "bench");
            let tracing = t.tracing();
            (0..pages).for_each(|_| page_otel(&tracing, &ids));
            let _ = t.shutdown(Duration::from_secs(5));
        }
        "bridge/always_off" | "bridge/ratio_1_drop" => {
            let sampler = if case == "bridge/always_off" {
                Sampler::AlwaysOff
            } else {
                Sampler::TraceIdRatioBased(1.0)
            };
            let (subscriber, provider) = bridge_subscriber(sampler);
            tracing::subscriber::with_default(subscriber, || {
                (0..pages).for_each(|_| page_bridge(&ids));
            });
            let _ = provider.shutdown();
        }
        other => eprintln!("unknown case {other}"),
    }
}
