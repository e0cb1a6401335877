//! Where a traced cycle's per-resource spans go, decided when the provider is built: the stdout
//! exporter's writer, the sentinel's OTLP exporter, or the provider's batch span processor
//! (shared with the provider through [`SharedProcessor`]).
//!
//! Invariant: the sink is chosen once; a cycle never asks again.

use super::otlp::{Envelope, Exporter};
use super::stdout::JsonLinesOut;
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanProcessor};
use std::sync::Arc;

/// Where a traced cycle's per-resource spans go: decided when the provider is built.
#[derive(Clone, Debug)]
pub(crate) enum Sink {
    /// Straight to the stdout exporter's writer as JSON lines, a page at a time.
    JsonLines(Arc<JsonLinesOut>),
    /// As OTLP protobuf to the sentinel's own OTLP exporter, a page at a time.
    Otlp(Arc<OtlpSink>),
    /// As `SpanData` under the tracer's `scope` into the provider's batch span processor (the
    /// tests' and benches' exporters).
    Processor {
        processor: Arc<BatchSpanProcessor>,
        scope: InstrumentationScope,
    },
}

/// The OTLP exporter's queue, the envelope of the resource spans' requests, and the most spans
/// a request holds (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
#[derive(Debug)]
pub(crate) struct OtlpSink {
    pub(crate) exporter: Arc<Exporter>,
    pub(crate) envelope: Envelope,
    pub(crate) max_batch: usize,
}

/// The provider's batch span processor shared with [`Sink::Processor`]: the provider owns one
/// handle, the resource spans the other.
#[derive(Debug)]
pub(crate) struct SharedProcessor(pub(crate) Arc<BatchSpanProcessor>);

impl SpanProcessor for SharedProcessor {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        self.0.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    // The resource was given to the processor before it was shared (`telemetry::provider`).
    fn set_resource(&mut self, _resource: &Resource) {}
}
