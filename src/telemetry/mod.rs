//! OpenTelemetry tracing, as the Go sentinel traces: the settings read once from the `OTEL_*`
//! environment ([`mod@env`]), the tracer provider with a batch span processor and an OTLP (gRPC or
//! HTTP/protobuf, the sentinel's own: [`otlp`]) or stdout ([`stdout`]) exporter ([`init`]), and
//! the [`Tracing`] handle the poll loop and the API client start spans with (`handle`).
//!
//! Spans come from the OpenTelemetry API directly (no `tracing` bridge): `sentinel.poll` per
//! cycle, one client span per API GET, `sentinel.evaluate` per resource and `<topic> publish`
//! per event (see `runtime` and `api`). The per-resource ones are made by [`spans`] at a
//! fraction of the SDK's cost and go to the one `sink` the provider chose.
//!
//! Invariant: with tracing off ([`Tracing::off`], the default) no span, context or attribute is
//! ever built: every entry point checks the one `Option` first and returns `None`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracerProvider, SpanExporter, SpanProcessor as _,
};
use std::sync::Arc;
use std::time::Duration;

mod batch;
pub mod env;
mod handle;
pub mod otlp;
mod report;
mod sink;
pub mod spans;
pub mod stdout;
#[cfg(test)]
mod testing;

pub use batch::{BatchSettings, MAX_QUEUE_SIZE};
pub use env::{DEFAULT_SERVICE_NAME, ExporterKind, PropagatorKind, SamplerKind, TraceSettings};
pub use handle::{HttpSpan, TraceParent, Tracing, current_ids, end, fail, traceparent};
use otlp::Envelope;
use report::{Reported, Reports};
use sink::{OtlpSink, SharedProcessor, Sink};
pub use spans::{CycleSpans, Destination};
pub use stdout::JsonLinesExporter;

/// The tracer name (instrumentation scope) of every span.
pub const TRACER_NAME: &str = "hyperfleet-sentinel";
/// How long shutdown waits for the last spans to be exported.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TelemetryError(String);

/// A running tracer provider: its [`Tracing`] handle, and the provider (and OTLP exporter) to
/// flush at shutdown.
pub struct Telemetry {
    provider: SdkTracerProvider,
    otlp: Option<Arc<otlp::Exporter>>,
    /// The exporters' losses, the last counts written at shutdown.
    reports: Arc<Reports>,
    tracing: Tracing,
}

impl Telemetry {
    /// The handle spans are started with.
    pub fn tracing(&self) -> Tracing {
        self.tracing.clone()
    }

    /// Flushes the spans still queued and stops the exporter, waiting at most `timeout`
    /// (blocking: call it off the async workers, e.g. in `spawn_blocking`).
    pub fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        let deadline = std::time::Instant::now() + timeout;
        let provider = self.provider.shutdown_with_timeout(timeout);
        // The provider's last spans went into the OTLP queue: it is flushed after them.
        let queue = match &self.otlp {
            Some(exporter) => {
                exporter.shutdown(deadline.saturating_duration_since(std::time::Instant::now()))
            }
            None => Ok(()),
        };
        self.reports.flush();
        provider.and(queue)
    }
}

/// Builds the provider the settings describe (batch span processor, the settings' exporter,
/// sampler, propagators and resource). The OTLP exporter reads the other standard
/// `OTEL_EXPORTER_OTLP_*` variables (headers, timeout, per-signal endpoint) from the process
/// environment itself ([`otlp::OtlpConfig::from_env`]).
pub fn init(settings: &TraceSettings, version: &str) -> Result<Telemetry, TelemetryError> {
    let protocol = match settings.exporter {
        ExporterKind::Stdout => {
            // The stdout writer reports its own failures (`JsonLinesOut::write`).
            let reports = Arc::new(Reports::new("stdout"));
            let exporter =
                JsonLinesExporter::reporting(Box::new(std::io::stdout()), reports.clone());
            let out = exporter.shared();
            return Ok(provider(exporter, settings, version, reports, |_, _, _| {
                Sink::JsonLines(out)
            }));
        }
        ExporterKind::OtlpGrpc => otlp::Protocol::Grpc,
        ExporterKind::OtlpHttp => otlp::Protocol::HttpProtobuf,
    };
    // The exporter's errors may echo the endpoint, password and all.
    let masked = |e: &dyn std::fmt::Display| {
        let text = settings.endpoints.iter().fold(e.to_string(), |text, url| {
            crate::common::redact::mask_url_in(&text, url)
        });
        TelemetryError(text)
    };
    let config = match &settings.otlp {
        Some(Ok(config)) => config.clone(),
        Some(Err(e)) => return Err(masked(e)),
        None => return Err(TelemetryError(format!("no OTLP settings for {protocol:?}"))),
    };
    let mut warnings = Vec::new();
    let tls = otlp::client_tls(&config, &mut warnings);
    for warning in &warnings {
        tracing::warn!("{}", masked(warning));
    }
    let tls = tls.map_err(|e| masked(&e))?;
    let reports = Arc::new(Reports::new(config.url(tls.is_some())));
    let exporter = otlp::Exporter::start(config, tls, &settings.batch, reports.clone())
        .map_err(|e| masked(&format!("exporter initialization failed: {e}")))?;
    let exporter = Arc::new(exporter);
    // The export thread reports its losses (the processor's exporter only queues).
    let sdk_spans = otlp::SdkSpans::new(exporter.clone());
    let max_batch = settings.batch.max_export_batch_size;
    let queue = exporter.clone();
    let mut telemetry = provider(
        sdk_spans,
        settings,
        version,
        reports,
        |resource, scope, _| {
            Sink::Otlp(Arc::new(OtlpSink {
                exporter: queue,
                envelope: Envelope::new(resource, scope),
                max_batch,
            }))
        },
    );
    telemetry.otlp = Some(exporter);
    Ok(telemetry)
}

/// A provider over any exporter (tests and benches bring their own), with a batch span processor
/// whose queue drops spans when full rather than blocking (the SDK defaults, `OTEL_BSP_*`); the
/// per-resource spans go to the same processor as `SpanData`.
pub fn with_exporter<E: SpanExporter + 'static>(
    exporter: E,
    settings: &TraceSettings,
    version: &str,
) -> Telemetry {
    let reports = Arc::new(Reports::new("the provider's exporter"));
    let exporter = Reported {
        inner: exporter,
        reports: reports.clone(),
    };
    provider(
        exporter,
        settings,
        version,
        reports,
        |_, scope, processor| Sink::Processor {
            processor: processor.clone(),
            scope: scope.clone(),
        },
    )
}

/// The provider: the SDK's spans through the batch processor to `exporter`; the per-resource
/// spans to the sink `sink` makes of the provider's resource, the tracer's scope and the
/// processor (see `spans`).
fn provider<E: SpanExporter + 'static>(
    mut exporter: E,
    settings: &TraceSettings,
    version: &str,
    reports: Arc<Reports>,
    sink: impl FnOnce(&Resource, &InstrumentationScope, &Arc<BatchSpanProcessor>) -> Sink,
) -> Telemetry {
    let mut attributes: Vec<KeyValue> = settings
        .resource
        .iter()
        .filter(|(k, _)| k != "service.name" && k != "service.version")
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    attributes.push(KeyValue::new("service.name", settings.service_name.clone()));
    attributes.push(KeyValue::new("service.version", version.to_string()));
    let resource = Resource::builder_empty()
        .with_attributes(attributes)
        .build();
    // The processor is shared with the resource spans, so it is given the resource now, before
    // it is shared (the provider's later call on the shared handle does nothing).
    exporter.set_resource(&resource);
    let mut processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(settings.batch.config())
        .build();
    processor.set_resource(&resource);
    let processor = Arc::new(processor);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(SharedProcessor(processor.clone()))
        .with_sampler(settings.sampler.sampler())
        .with_resource(resource.clone())
        .build();
    let scope = InstrumentationScope::builder(TRACER_NAME).build();
    let sink = sink(&resource, &scope, &processor);
    let tracing = Tracing::on(
        provider.tracer(TRACER_NAME),
        settings.propagators.clone(),
        sink,
    );
    Telemetry {
        provider,
        otlp: None,
        reports,
        tracing,
    }
}
