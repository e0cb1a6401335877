//! OpenTelemetry tracing, as the Go sentinel traces: the settings read from the `OTEL_*`
//! environment ([`TraceSettings::from_env`], a pure function of the lookup), the tracer provider
//! with a batch span processor and an OTLP (gRPC or HTTP/protobuf, the sentinel's own:
//! [`otlp`]) or stdout exporter ([`init`]), and the [`Tracing`] handle the poll loop and the API
//! client start spans with.
//!
//! Spans come from the OpenTelemetry API directly (no `tracing` bridge): `sentinel.poll` per
//! cycle, one client span per API GET, `sentinel.evaluate` per resource and `<topic> publish`
//! per event (see `runtime` and `api`).
//!
//! Invariant: with tracing off ([`Tracing::off`], the default) no span, context or attribute is
//! ever built: every entry point checks the one `Option` first and returns `None`.

use crate::common::textfmt::hex_into;
use opentelemetry::propagation::{Injector, TextMapPropagator as _};
use opentelemetry::trace::{
    SpanContext, SpanKind, Status, TraceContextExt as _, TraceFlags, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::BaggagePropagator;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
    SpanProcessor as _,
};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use spans::{CycleSpans, Destination, JsonLinesExporter};
use spans::{Envelope, OtlpSink, SharedProcessor, Sink, SinkParts};

mod batch;
pub mod otlp;
pub mod spans;
pub use batch::{BatchSettings, MAX_QUEUE_SIZE};

/// A W3C trace context: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The span id.
    pub span_id: [u8; 8],
    /// The trace flags (`01` sampled).
    pub flags: u8,
}

impl TraceParent {
    /// The header / extension text, written into `out` without allocating.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"00-");
        hex_into(out, &self.trace_id);
        out.push(b'-');
        hex_into(out, &self.span_id);
        out.push(b'-');
        hex_into(out, &[self.flags]);
    }
}

/// The tracer name (instrumentation scope) of every span.
pub const TRACER_NAME: &str = "hyperfleet-sentinel";
/// `service.name` when `OTEL_SERVICE_NAME` is unset or empty.
pub const DEFAULT_SERVICE_NAME: &str = "hyperfleet-sentinel";
/// How long shutdown waits for the last spans to be exported.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Where spans go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExporterKind {
    /// One JSON object per span per line on standard output (no `OTEL_EXPORTER_OTLP_ENDPOINT`).
    Stdout,
    /// OTLP over gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL` `grpc`, empty or unknown).
    OtlpGrpc,
    /// OTLP over HTTP with protobuf bodies (`http` or `http/protobuf`).
    OtlpHttp,
}

/// The sampler `OTEL_TRACES_SAMPLER` (+ `_ARG`) names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SamplerKind {
    /// `always_on`.
    AlwaysOn,
    /// `always_off`.
    AlwaysOff,
    /// `traceidratio` with its ratio.
    TraceIdRatio(f64),
    /// `parentbased_always_on`.
    ParentBasedAlwaysOn,
    /// `parentbased_always_off`.
    ParentBasedAlwaysOff,
    /// `parentbased_traceidratio` (the default) with its ratio.
    ParentBasedTraceIdRatio(f64),
}

impl SamplerKind {
    /// The SDK sampler.
    pub fn sampler(self) -> Sampler {
        let parent = |root: Sampler| Sampler::ParentBased(Box::new(root));
        match self {
            SamplerKind::AlwaysOn => Sampler::AlwaysOn,
            SamplerKind::AlwaysOff => Sampler::AlwaysOff,
            SamplerKind::TraceIdRatio(r) => Sampler::TraceIdRatioBased(r),
            SamplerKind::ParentBasedAlwaysOn => parent(Sampler::AlwaysOn),
            SamplerKind::ParentBasedAlwaysOff => parent(Sampler::AlwaysOff),
            SamplerKind::ParentBasedTraceIdRatio(r) => parent(Sampler::TraceIdRatioBased(r)),
        }
    }
}

/// A propagator `OTEL_PROPAGATORS` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagatorKind {
    /// W3C `traceparent` / `tracestate`.
    TraceContext,
    /// W3C `baggage`.
    Baggage,
}

/// Everything the `OTEL_*` environment decides, plus the warnings for values it ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSettings {
    /// The exporter.
    pub exporter: ExporterKind,
    /// The sampler.
    pub sampler: SamplerKind,
    /// The propagators, in order (empty for `none`).
    pub propagators: Vec<PropagatorKind>,
    /// `service.name`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, decoded, in order (`service.name` among them is overridden).
    pub resource: Vec<(String, String)>,
    /// `OTEL_BSP_*`, validated and capped.
    pub batch: BatchSettings,
    /// The endpoint variables as set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`): an
    /// error that echoes one has its password masked with them.
    pub endpoints: Vec<String>,
    /// One line per ignored value (logged as WARN by the caller).
    pub warnings: Vec<String>,
}

const DEFAULT_RATIO: f64 = 1.0;

impl TraceSettings {
    /// Reads the settings through `env` (the process environment in `serve`). Bad values are
    /// warnings and the defaults, never errors.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> TraceSettings {
        let var = |name: &str| env(name).map(|v| v.trim().to_string());
        let mut warnings = Vec::new();
        let exporter = match var("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|e| !e.is_empty()) {
            None => ExporterKind::Stdout,
            Some(_) => {
                let protocol = var("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_default();
                match protocol.to_lowercase().as_str() {
                    "http" | "http/protobuf" => ExporterKind::OtlpHttp,
                    "grpc" | "" => ExporterKind::OtlpGrpc,
                    _ => {
                        warnings.push(format!(
                            "Unrecognized OTEL_EXPORTER_OTLP_PROTOCOL {protocol:?}, using default grpc"
                        ));
                        ExporterKind::OtlpGrpc
                    }
                }
            }
        };
        let mut ratio = || match var("OTEL_TRACES_SAMPLER_ARG").filter(|a| !a.is_empty()) {
            None => DEFAULT_RATIO,
            Some(arg) => match arg.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => r,
                _ => {
                    warnings.push(format!(
                        "Invalid OTEL_TRACES_SAMPLER_ARG value={arg:?}, using default: {DEFAULT_RATIO}"
                    ));
                    DEFAULT_RATIO
                }
            },
        };
        let name = var("OTEL_TRACES_SAMPLER")
            .unwrap_or_default()
            .to_lowercase();
        let sampler = match name.as_str() {
            "always_on" => SamplerKind::AlwaysOn,
            "always_off" => SamplerKind::AlwaysOff,
            "traceidratio" => SamplerKind::TraceIdRatio(ratio()),
            "parentbased_always_on" => SamplerKind::ParentBasedAlwaysOn,
            "parentbased_always_off" => SamplerKind::ParentBasedAlwaysOff,
            "parentbased_traceidratio" | "" => SamplerKind::ParentBasedTraceIdRatio(ratio()),
            _ => {
                let ratio = ratio();
                warnings.push(format!("Unrecognized sampler {name:?}, using default"));
                SamplerKind::ParentBasedTraceIdRatio(ratio)
            }
        };
        let propagators = propagators(var("OTEL_PROPAGATORS"), &mut warnings);
        let service_name = var("OTEL_SERVICE_NAME")
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
        let resource = resource_attributes(&var("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default());
        let batch = BatchSettings::from_env(&var, &mut warnings);
        let endpoints = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .into_iter()
        .filter_map(|name| env(name).filter(|e| !e.is_empty()))
        .collect();
        TraceSettings {
            exporter,
            sampler,
            propagators,
            service_name,
            resource,
            batch,
            endpoints,
            warnings,
        }
    }
}

const DEFAULT_PROPAGATORS: [PropagatorKind; 2] =
    [PropagatorKind::TraceContext, PropagatorKind::Baggage];

/// `OTEL_PROPAGATORS`: a comma-separated list of `tracecontext`, `baggage` or `none`; unset or
/// empty is `tracecontext,baggage`; a name this sentinel does not implement is a warning and the
/// default.
fn propagators(value: Option<String>, warnings: &mut Vec<String>) -> Vec<PropagatorKind> {
    let value = value.unwrap_or_default();
    if value.is_empty() {
        return DEFAULT_PROPAGATORS.to_vec();
    }
    let mut out = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let kind = match name.to_lowercase().as_str() {
            "tracecontext" => PropagatorKind::TraceContext,
            "baggage" => PropagatorKind::Baggage,
            "none" => continue,
            _ => {
                warnings.push(format!(
                    "Unsupported OTEL_PROPAGATORS entry {name:?}, using default tracecontext,baggage"
                ));
                return DEFAULT_PROPAGATORS.to_vec();
            }
        };
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    out
}

/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs separated by commas, percent-decoded; a pair
/// without `=` or with an empty key is ignored, as the SDKs do.
fn resource_attributes(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (percent_decode(key), percent_decode(value.trim())))
        })
        .collect()
}

/// `%XX` escapes decoded (others kept as written), invalid UTF-8 replaced.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TelemetryError(String);

/// A running tracer provider: its [`Tracing`] handle, and the provider (and OTLP exporter) to
/// flush at shutdown.
pub struct Telemetry {
    provider: SdkTracerProvider,
    otlp: Option<Arc<otlp::Exporter>>,
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
            let exporter = JsonLinesExporter::stdout();
            let out = exporter.shared();
            return Ok(provider(exporter, settings, version, Own::JsonLines(out)));
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
    let config = otlp::OtlpConfig::from_env(protocol, &|name| std::env::var(name))
        .map_err(|e| masked(&e))?;
    let failing = Arc::new(AtomicBool::new(false));
    let exporter = otlp::Exporter::start(config, &settings.batch, failing.clone())
        .map_err(|e| masked(&format!("exporter initialization failed: {e}")))?;
    let exporter = Arc::new(exporter);
    let sdk_spans = otlp::SdkSpans::new(exporter.clone());
    Ok(provider(
        sdk_spans,
        settings,
        version,
        Own::Otlp { exporter, failing },
    ))
}

/// Where the per-resource spans go beside the provider's exporter.
enum Own {
    /// Into the provider's processor as `SpanData`.
    None,
    /// Straight to the stdout exporter's writer.
    JsonLines(Arc<spans::JsonLinesOut>),
    /// Straight to the OTLP exporter's queue (whose failures set `failing`).
    Otlp {
        exporter: Arc<otlp::Exporter>,
        failing: Arc<AtomicBool>,
    },
}

/// A provider over any exporter (tests and benches bring their own), with a batch span processor
/// whose queue drops spans when full rather than blocking (the SDK defaults, `OTEL_BSP_*`).
pub fn with_exporter<E: SpanExporter + 'static>(
    exporter: E,
    settings: &TraceSettings,
    version: &str,
) -> Telemetry {
    provider(exporter, settings, version, Own::None)
}

/// The provider: the SDK's spans through the batch processor to `exporter`; the per-resource
/// spans straight to the stdout writer or the OTLP queue when `own` is one, else as `SpanData`
/// into the same processor (see `spans`).
fn provider<E: SpanExporter + 'static>(
    mut exporter: E,
    settings: &TraceSettings,
    version: &str,
    own: Own,
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
    let failing = match &own {
        Own::Otlp { failing, .. } => failing.clone(),
        _ => Arc::new(AtomicBool::new(false)),
    };
    // The OTLP exporter's thread warns itself (its `export` only queues).
    let exporter = WarnOnce {
        inner: exporter,
        failing: (!matches!(own, Own::Otlp { .. })).then(|| failing.clone()),
    };
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
    let scope = opentelemetry::InstrumentationScope::builder(TRACER_NAME).build();
    let mut otlp = None;
    let sink = match own {
        Own::JsonLines(out) => Sink::JsonLines(out),
        Own::Otlp { exporter, .. } => {
            otlp = Some(exporter.clone());
            Sink::Otlp(Arc::new(OtlpSink {
                exporter,
                envelope: Envelope::new(&resource, &scope),
                max_batch: settings.batch.max_export_batch_size,
            }))
        }
        Own::None => Sink::Processor(processor),
    };
    let sink = SinkParts {
        sink,
        scope,
        failing,
    };
    let tracing = Tracing(Some(Arc::new(Active {
        tracer: provider.tracer(TRACER_NAME),
        propagators: settings.propagators.clone(),
        sink,
    })));
    Telemetry {
        provider,
        otlp,
        tracing,
    }
}

/// An exporter that logs one WARN when exports start failing (an unreachable collector) and one
/// INFO when they work again, instead of nothing or a line per batch. The flag is shared with
/// the resource spans' own writes to stdout; `None` passes results through unlogged.
#[derive(Debug)]
struct WarnOnce<E> {
    inner: E,
    failing: Option<Arc<AtomicBool>>,
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Some(failing) = &self.failing {
            warn_once(failing, &result);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The handle spans are started with: off (the default) or a tracer and the propagators. Cheap
/// to clone.
#[derive(Clone, Default)]
pub struct Tracing(Option<Arc<Active>>);

struct Active {
    tracer: SdkTracer,
    /// `OTEL_PROPAGATORS`, in order.
    propagators: Vec<PropagatorKind>,
    sink: SinkParts,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Tracing(on)"
        } else {
            "Tracing(off)"
        })
    }
}

impl Tracing {
    /// Tracing off: every method returns `None` and builds nothing.
    pub fn off() -> Tracing {
        Tracing(None)
    }

    /// Whether spans are started at all.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Starts an internal span `name` under `parent` (a root span for `None`) and returns the
    /// context holding it; `None` when tracing is off (then `attributes` is never called).
    pub fn start(
        &self,
        name: impl Into<Cow<'static, str>>,
        parent: Option<&Context>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Option<Context> {
        self.start_kind(name, SpanKind::Internal, parent, attributes)
    }

    /// [`Tracing::start`] with a span kind.
    pub fn start_kind(
        &self,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        parent: Option<&Context>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Option<Context> {
        let active = self.0.as_ref()?;
        let root = Context::new();
        let parent = parent.unwrap_or(&root);
        let parent_span = parent.span();
        let up = parent_span.span_context();
        if up.is_valid() && !up.is_sampled() {
            // Every sampler `OTEL_TRACES_SAMPLER` names decides a child as its parent (see
            // `spans`): the SDK would make a non-recording span with a fresh id and the
            // parent's trace, flags and state, after building its attributes and asking the
            // sampler. Made here without either.
            let context = SpanContext::new(
                up.trace_id(),
                spans::fresh_span_id(),
                up.trace_flags(),
                false,
                up.trace_state().clone(),
            );
            return Some(parent.with_remote_span_context(context));
        }
        let span = active
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(&active.tracer, parent);
        Some(parent.with_span(span))
    }

    /// The per-resource spans of the cycle whose poll span `poll` holds; `None` when tracing
    /// is off or `poll` holds no valid span.
    pub fn cycle_spans(&self, poll: &Context, to: &Destination<'_>) -> Option<CycleSpans> {
        let active = self.0.as_ref()?;
        let span = poll.span();
        CycleSpans::new(span.span_context(), &active.sink, to)
    }

    /// Writes the propagation headers of `cx` into `headers`, as Go's propagators do: for
    /// `tracecontext`, `traceparent` (flags other than sampled cleared) and, when not empty,
    /// `tracestate`; for `baggage`, `baggage` when there is any.
    pub fn inject(&self, cx: &Context, headers: &mut reqwest::header::HeaderMap) {
        let Some(active) = &self.0 else { return };
        for kind in &active.propagators {
            match kind {
                PropagatorKind::TraceContext => {
                    let span = cx.span();
                    let sc = span.span_context();
                    if !sc.is_valid() {
                        continue;
                    }
                    let mut text = Vec::with_capacity(55);
                    TraceParent {
                        trace_id: sc.trace_id().to_bytes(),
                        span_id: sc.span_id().to_bytes(),
                        flags: sc.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8(),
                    }
                    .write(&mut text);
                    if let Ok(value) = reqwest::header::HeaderValue::from_bytes(&text) {
                        headers.insert(
                            reqwest::header::HeaderName::from_static("traceparent"),
                            value,
                        );
                    }
                    let state = sc.trace_state().header();
                    if !state.is_empty() {
                        HeaderInjector(headers).set("tracestate", state);
                    }
                }
                PropagatorKind::Baggage => {
                    BaggagePropagator::new().inject_context(cx, &mut HeaderInjector(headers));
                }
            }
        }
    }
}

/// The client span of one API GET (named `HTTP GET`, as Go's otelhttp transport names it), child
/// of the current context's span; inert when tracing is off. Ends when dropped.
pub struct HttpSpan<'a> {
    tracing: &'a Tracing,
    cx: Option<Context>,
}

impl<'a> HttpSpan<'a> {
    /// Starts the span for a GET of `url` (credentials in the URL are not recorded).
    pub fn start(tracing: &'a Tracing, url: &str) -> HttpSpan<'a> {
        let cx = tracing.0.as_ref().and_then(|_| {
            let parent = Context::current();
            tracing.start_kind("HTTP GET", SpanKind::Client, Some(&parent), || {
                let mut attrs = vec![KeyValue::new("http.request.method", "GET")];
                if let Ok(mut parsed) = reqwest::Url::parse(url) {
                    let _ = parsed.set_password(None);
                    let _ = parsed.set_username("");
                    if let Some(host) = parsed.host_str() {
                        attrs.push(KeyValue::new("server.address", host.to_string()));
                    }
                    if let Some(port) = parsed.port_or_known_default() {
                        attrs.push(KeyValue::new("server.port", i64::from(port)));
                    }
                    attrs.push(KeyValue::new("url.full", parsed.to_string()));
                }
                attrs
            })
        });
        HttpSpan { tracing, cx }
    }

    /// Adds the propagation headers of this span to the request.
    pub fn inject(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.cx {
            None => request,
            Some(cx) => {
                let mut headers = reqwest::header::HeaderMap::new();
                self.tracing.inject(cx, &mut headers);
                request.headers(headers)
            }
        }
    }

    /// Records the response status (`None`: no response, a transport error). A status of 400 or
    /// more, or no response, marks the span failed.
    pub fn answered(&self, status: Option<u16>) {
        let Some(cx) = &self.cx else { return };
        let span = cx.span();
        match status {
            Some(code) => {
                span.set_attribute(KeyValue::new("http.response.status_code", i64::from(code)));
                if code >= 400 {
                    span.set_attribute(KeyValue::new("error.type", code.to_string()));
                    span.set_status(Status::error(""));
                }
            }
            None => {
                span.set_attribute(KeyValue::new("error.type", "transport"));
                span.set_status(Status::error("request failed"));
            }
        }
    }
}

impl Drop for HttpSpan<'_> {
    fn drop(&mut self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

struct HeaderInjector<'a>(&'a mut reqwest::header::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(key.as_bytes()),
            reqwest::header::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Marks the span of `cx` failed with `description`.
pub fn fail(cx: &Context, description: &'static str) {
    cx.span().set_status(Status::error(description));
}

/// Ends the span of `cx`.
pub fn end(cx: &Context) {
    cx.span().end();
}

/// The W3C `traceparent` of the span of `cx` (`00-<trace>-<span>-<flags>`), when its span
/// context is valid.
pub fn traceparent(cx: &Context) -> Option<TraceParent> {
    let span = cx.span();
    let sc: &SpanContext = span.span_context();
    sc.is_valid().then(|| TraceParent {
        trace_id: sc.trace_id().to_bytes(),
        span_id: sc.span_id().to_bytes(),
        flags: sc.trace_flags().to_u8(),
    })
}

/// The trace and span id of the current resource span (`CycleSpans::enter`), else of the
/// current context's span, when valid (for log lines).
pub fn current_ids() -> Option<([u8; 16], [u8; 8])> {
    if let Some(ids) = spans::current() {
        return Some(ids);
    }
    Context::map_current(|cx| {
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid()
            .then(|| (sc.trace_id().to_bytes(), sc.span_id().to_bytes()))
    })
}

/// Logs one WARN when exports start failing and one INFO when they work again.
pub(crate) fn warn_once(failing: &AtomicBool, result: &OTelSdkResult) {
    match result {
        Err(e) if !failing.swap(true, Ordering::Relaxed) => {
            tracing::warn!(error = %e, "Failed to export OpenTelemetry spans; spans are dropped until the exporter recovers");
        }
        Ok(()) if failing.swap(false, Ordering::Relaxed) => {
            tracing::info!("OpenTelemetry span export recovered");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> TraceSettings {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TraceSettings::from_env(&|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_without_environment() {
        let s = settings(&[]);
        assert_eq!(s.exporter, ExporterKind::Stdout);
        assert_eq!(s.sampler, SamplerKind::ParentBasedTraceIdRatio(1.0));
        assert_eq!(
            s.propagators,
            [PropagatorKind::TraceContext, PropagatorKind::Baggage]
        );
        assert_eq!(s.service_name, "hyperfleet-sentinel");
        assert!(s.resource.is_empty());
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn protocol_matrix() {
        let ep = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317");
        let cases = [
            (None, ExporterKind::OtlpGrpc, false),
            (Some(""), ExporterKind::OtlpGrpc, false),
            (Some("grpc"), ExporterKind::OtlpGrpc, false),
            (Some("GRPC"), ExporterKind::OtlpGrpc, false),
            (Some("http"), ExporterKind::OtlpHttp, false),
            (Some("http/protobuf"), ExporterKind::OtlpHttp, false),
            (Some("HTTP/Protobuf"), ExporterKind::OtlpHttp, false),
            (Some("http/json"), ExporterKind::OtlpGrpc, true),
            (Some("thrift"), ExporterKind::OtlpGrpc, true),
        ];
        for (protocol, want, warns) in cases {
            let mut vars = vec![ep];
            if let Some(p) = protocol {
                vars.push(("OTEL_EXPORTER_OTLP_PROTOCOL", p));
            }
            let s = settings(&vars);
            assert_eq!(s.exporter, want, "{protocol:?}");
            assert_eq!(
                s.warnings.len(),
                usize::from(warns),
                "{protocol:?}: {:?}",
                s.warnings
            );
        }
        // Without an endpoint the protocol does not matter: stdout.
        let s = settings(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http")]);
        assert_eq!(s.exporter, ExporterKind::Stdout);
        let s = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "")]);
        assert_eq!(s.exporter, ExporterKind::Stdout);
        let unknown = settings(&[ep, ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")]);
        assert_eq!(
            unknown.warnings,
            ["Unrecognized OTEL_EXPORTER_OTLP_PROTOCOL \"thrift\", using default grpc"]
        );
    }

    #[test]
    fn sampler_matrix() {
        use SamplerKind::*;
        let cases: [(&str, Option<&str>, SamplerKind, usize); 17] = [
            ("", None, ParentBasedTraceIdRatio(1.0), 0),
            ("always_on", None, AlwaysOn, 0),
            ("ALWAYS_ON", None, AlwaysOn, 0),
            ("always_off", None, AlwaysOff, 0),
            ("traceidratio", None, TraceIdRatio(1.0), 0),
            ("traceidratio", Some("0.25"), TraceIdRatio(0.25), 0),
            ("traceidratio", Some("0"), TraceIdRatio(0.0), 0),
            ("traceidratio", Some("1"), TraceIdRatio(1.0), 0),
            ("traceidratio", Some("1.5"), TraceIdRatio(1.0), 1),
            ("traceidratio", Some("-0.1"), TraceIdRatio(1.0), 1),
            ("traceidratio", Some("half"), TraceIdRatio(1.0), 1),
            ("parentbased_always_on", None, ParentBasedAlwaysOn, 0),
            ("parentbased_always_off", None, ParentBasedAlwaysOff, 0),
            (
                "parentbased_traceidratio",
                Some("0.5"),
                ParentBasedTraceIdRatio(0.5),
                0,
            ),
            (
                "parentbased_traceidratio",
                Some("NaN"),
                ParentBasedTraceIdRatio(1.0),
                1,
            ),
            ("jaeger_remote", None, ParentBasedTraceIdRatio(1.0), 1),
            (
                "jaeger_remote",
                Some("0.5"),
                ParentBasedTraceIdRatio(0.5),
                1,
            ),
        ];
        for (name, arg, want, warnings) in cases {
            let mut vars = vec![("OTEL_TRACES_SAMPLER", name)];
            if let Some(a) = arg {
                vars.push(("OTEL_TRACES_SAMPLER_ARG", a));
            }
            let s = settings(&vars);
            assert_eq!(s.sampler, want, "{name} {arg:?}");
            assert_eq!(
                s.warnings.len(),
                warnings,
                "{name} {arg:?}: {:?}",
                s.warnings
            );
        }
        // The argument is only read by the samplers that take one.
        let s = settings(&[
            ("OTEL_TRACES_SAMPLER", "always_on"),
            ("OTEL_TRACES_SAMPLER_ARG", "x"),
        ]);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn propagator_matrix() {
        use PropagatorKind::*;
        let cases: [(&str, &[PropagatorKind], usize); 7] = [
            ("tracecontext", &[TraceContext], 0),
            ("baggage", &[Baggage], 0),
            ("baggage, tracecontext", &[Baggage, TraceContext], 0),
            ("tracecontext,tracecontext", &[TraceContext], 0),
            ("none", &[], 0),
            ("b3", &[TraceContext, Baggage], 1),
            ("tracecontext,xray", &[TraceContext, Baggage], 1),
        ];
        for (value, want, warnings) in cases {
            let s = settings(&[("OTEL_PROPAGATORS", value)]);
            assert_eq!(s.propagators, want, "{value}");
            assert_eq!(s.warnings.len(), warnings, "{value}");
        }
    }

    #[test]
    fn service_name_and_resource_attributes() {
        let s = settings(&[
            ("OTEL_SERVICE_NAME", "sentinel-a"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod, k8s.pod.name=p%2C1,broken,=x,service.name=ignored",
            ),
        ]);
        assert_eq!(s.service_name, "sentinel-a");
        assert_eq!(
            s.resource,
            [
                ("deployment.environment".to_string(), "prod".to_string()),
                ("k8s.pod.name".to_string(), "p,1".to_string()),
                ("service.name".to_string(), "ignored".to_string()),
            ]
        );
        assert_eq!(
            settings(&[("OTEL_SERVICE_NAME", "")]).service_name,
            DEFAULT_SERVICE_NAME
        );
    }

    /// An exporter dropping what it is given.
    #[derive(Debug)]
    struct Drop;

    impl SpanExporter for Drop {
        async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
            Ok(())
        }
    }

    /// Under every sampler, a child of an unsampled cycle (its poll span, a root the same
    /// sampler decided) is what the SDK would make, a non-recording span with the parent's
    /// trace, flags and state and a fresh id, made without building its attributes.
    #[test]
    fn children_of_unsampled_roots_are_the_sdks_without_the_sdk() {
        use SamplerKind::*;
        for kind in [
            AlwaysOn,
            AlwaysOff,
            TraceIdRatio(0.5),
            ParentBasedAlwaysOn,
            ParentBasedAlwaysOff,
            ParentBasedTraceIdRatio(0.5),
        ] {
            let mut s = settings(&[]);
            s.sampler = kind;
            let telemetry = with_exporter(Drop, &s, "1.0");
            let tracing = telemetry.tracing();
            let active = tracing.0.as_ref().expect("on");
            let mut unsampled = 0;
            for _ in 0..64 {
                let poll = tracing.start("sentinel.poll", None, Vec::new).expect("on");
                let up = poll.span().span_context().clone();
                // What the SDK makes of the child.
                let sdk = active
                    .tracer
                    .span_builder("HTTP GET")
                    .with_kind(SpanKind::Client)
                    .start_with_context(&active.tracer, &poll);
                let sdk = opentelemetry::trace::Span::span_context(&sdk).clone();
                if up.is_sampled() {
                    continue;
                }
                unsampled += 1;
                assert!(!sdk.is_sampled(), "{kind:?}: the SDK samples the child");
                let mut called = false;
                let ours = tracing
                    .start_kind("HTTP GET", SpanKind::Client, Some(&poll), || {
                        called = true;
                        Vec::new()
                    })
                    .expect("on");
                assert!(!called, "{kind:?}: attributes built for an unsampled span");
                let ours = ours.span().span_context().clone();
                assert_eq!(ours.trace_id(), sdk.trace_id());
                assert_eq!(ours.trace_flags(), sdk.trace_flags());
                assert_eq!(ours.is_remote(), sdk.is_remote());
                assert_eq!(ours.trace_state(), sdk.trace_state());
                assert!(ours.is_valid());
                assert_ne!(ours.span_id(), up.span_id());
            }
            let expect_some = !matches!(kind, AlwaysOn | ParentBasedAlwaysOn);
            assert_eq!(unsampled > 0, expect_some, "{kind:?}");
            let _ = telemetry.shutdown(Duration::from_secs(1));
        }
    }

    /// The propagation headers are Go's: `traceparent` with only the sampled flag,
    /// `tracestate` only when there is one, `baggage` only when there is some.
    #[test]
    fn injected_headers_are_gos() {
        use opentelemetry::baggage::BaggageExt as _;
        use opentelemetry::trace::{SpanId, TraceId, TraceState};
        let telemetry = with_exporter(Drop, &settings(&[]), "1.0");
        let tracing = telemetry.tracing();
        let context = |flags: u8, state: TraceState| {
            Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from(0x0af7651916cd43dd8448eb211c80319c),
                SpanId::from(0xb7ad6b7169203331),
                TraceFlags::new(flags),
                false,
                state,
            ))
        };
        let headers = |cx: &Context| {
            let mut map = reqwest::header::HeaderMap::new();
            tracing.inject(cx, &mut map);
            let mut pairs: Vec<(String, String)> = map
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
                .collect();
            pairs.sort();
            pairs
        };
        let tp = |flags: &str| {
            (
                "traceparent".to_string(),
                format!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-{flags}"),
            )
        };
        assert_eq!(headers(&context(0, TraceState::NONE)), [tp("00")]);
        assert_eq!(headers(&context(0xff, TraceState::NONE)), [tp("01")]);
        let state = TraceState::from_key_value([("k", "v")]).expect("state");
        assert_eq!(
            headers(&context(1, state)),
            [tp("01"), ("tracestate".into(), "k=v".into())]
        );
        let bag = context(1, TraceState::NONE).with_baggage([KeyValue::new("b", "1 2")]);
        assert_eq!(
            headers(&bag),
            [("baggage".into(), "b=1%202".into()), tp("01")]
        );
        assert!(headers(&Context::new()).is_empty());
        let none = with_exporter(Drop, &settings(&[("OTEL_PROPAGATORS", "none")]), "1.0");
        let mut map = reqwest::header::HeaderMap::new();
        none.tracing().inject(&bag, &mut map);
        assert!(map.is_empty());
        let _ = telemetry.shutdown(Duration::from_secs(1));
        let _ = none.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn off_builds_nothing() {
        let off = Tracing::off();
        assert!(!off.is_on());
        let mut called = false;
        assert!(
            off.start("x", None, || {
                called = true;
                Vec::new()
            })
            .is_none()
        );
        assert!(!called, "attributes are not built when tracing is off");
    }
}
