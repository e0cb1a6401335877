//! One ended resource span as its encoders read it ([`SpanLine`]), where a cycle's events go
//! ([`Destination`]), and the SDK's `SpanData` of the same span, for the batch processor of
//! the tests' and benches' exporters.
//!
//! Invariant: the `SpanData` is what the SDK's tracer would have made of the span.

use opentelemetry::InstrumentationScope;
use opentelemetry::KeyValue;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use std::borrow::Cow;
use std::time::SystemTime;

/// The name of the per-resource evaluate span.
pub const EVALUATE: &str = "sentinel.evaluate";

/// What a cycle's publish spans say of where events go.
pub struct Destination<'a> {
    /// `hyperfleet.resource_type`.
    pub resource_type: &'a str,
    /// The topic (`messaging.destination.name`; the publish span is `<topic> publish`).
    pub topic: &'a str,
    /// `messaging.system`.
    pub messaging_system: &'static str,
}

/// What one resource span's line or `SpanData` is made of, beside its attributes.
pub(crate) struct SpanLine<'a> {
    pub(crate) trace_id: TraceId,
    pub(crate) span_id: SpanId,
    pub(crate) flags: TraceFlags,
    pub(crate) parent: SpanId,
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
    pub(crate) status: &'a Status,
}

impl SpanLine<'_> {
    pub(crate) fn span_data(
        &self,
        name: Cow<'static, str>,
        attributes: Vec<KeyValue>,
        scope: &InstrumentationScope,
    ) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                self.trace_id,
                self.span_id,
                self.flags,
                false,
                TraceState::NONE,
            ),
            parent_span_id: self.parent,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name,
            start_time: self.start,
            end_time: self.end,
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: self.status.clone(),
            instrumentation_scope: scope.clone(),
        }
    }
}
