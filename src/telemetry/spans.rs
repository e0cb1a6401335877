//! The per-resource spans of a traced cycle (`sentinel.evaluate` per resource, `<topic>
//! publish` per event) made at the engine's cost, and the stdout exporter's JSON lines.
//!
//! The poll span and the API GETs are made by the OpenTelemetry SDK (a few per cycle). The
//! per-resource spans are not: the SDK's way (a span builder, a sampler call, a `Context` and
//! a locked attribute vector per span, each ended span sent through the batch processor's
//! channel, then turned into a JSON tree) cost ~45,000 instructions per resource. Here
//! [`CycleSpans`] takes the poll span's trace id and sampling decision once per cycle (every
//! sampler `OTEL_TRACES_SAMPLER` names decides a child as its parent: the parent-based ones by
//! definition, `traceidratio` and `always_*` by the trace id they share), draws span ids as the
//! SDK does (random, non-zero), and when an ended span is sampled:
//! - to the stdout exporter, writes its JSON line straight into the page's buffer, written out
//!   once per page ([`CycleSpans::flush`]);
//! - to the OTLP exporter (`telemetry::otlp`), encodes it as OTLP protobuf into the page's
//!   buffer (`otlp`), queued as one request per page (or per export batch);
//! - to any other exporter (tests' and benches'), builds the SDK's `SpanData` as its tracer
//!   would and hands it to the same batch span processor.
//!
//! An unsampled cycle draws the ids the `traceparent` and the log lines carry, when they are
//! read (a settled resource's evaluate span, which nothing reads, gets none: [`Begun`]), and
//! builds nothing else.
//!
//! Invariant: the spans are the SDK's to the byte: names, ids, parents, kinds, attributes (in
//! order), status, scope and resource, the JSON line of a span is `span_line`'s whichever
//! way it came (`resource_spans_are_the_sdks` checks it against spans the SDK made), and its
//! protobuf is the SDK OTLP exporter's (`otlp_spans_are_the_sdk_exporters`).

use super::TraceParent;
use crate::common::textfmt::{hex_into, rfc3339_utc};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SpanData, SpanEvents, SpanExporter, SpanLinks, SpanProcessor,
};
use std::borrow::Cow;
use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

mod protobuf;
pub(crate) use protobuf::Envelope;

/// The name of the per-resource evaluate span.
pub const EVALUATE: &str = "sentinel.evaluate";

/// Where a traced cycle's per-resource spans go: decided when the provider is built.
#[derive(Clone, Debug)]
pub(crate) enum Sink {
    /// Straight to the stdout exporter's writer as JSON lines, a page at a time.
    JsonLines(Arc<JsonLinesOut>),
    /// As OTLP protobuf to the sentinel's own OTLP exporter, a page at a time.
    Otlp(Arc<OtlpSink>),
    /// As `SpanData` into the provider's batch span processor (tests' and benches' exporters).
    Processor(Arc<BatchSpanProcessor>),
}

/// The OTLP exporter's queue, the envelope of the resource spans' requests, and the most spans
/// a request holds (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
#[derive(Debug)]
pub(crate) struct OtlpSink {
    pub(crate) exporter: Arc<super::otlp::Exporter>,
    pub(crate) envelope: Envelope,
    pub(crate) max_batch: usize,
}

/// What a span sink needs beside the spans: the tracer's scope, and the one flag of the
/// export-failure warning.
#[derive(Clone, Debug)]
pub(crate) struct SinkParts {
    pub(crate) sink: Sink,
    pub(crate) scope: InstrumentationScope,
    pub(crate) failing: Arc<AtomicBool>,
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

thread_local! {
    /// The trace id and span id of the resource span current on this thread (see [`Entered`]);
    /// a span id of 0 is one not drawn yet, drawn at its first read (see [`CycleSpans::begin`]).
    static CURRENT: Cell<Option<([u8; 16], u64)>> = const { Cell::new(None) };
}

/// The ids of the resource span current on this thread, if one is (for log lines); a span id
/// not drawn yet is drawn now, and is the span's from then on.
pub(crate) fn current() -> Option<([u8; 16], [u8; 8])> {
    CURRENT.with(|c| {
        let (trace, mut span) = c.get()?;
        if span == 0 {
            span = draw();
            c.set(Some((trace, span)));
        }
        Some((trace, span.to_be_bytes()))
    })
}

/// A resource span made current for this thread's log lines until dropped (never held across
/// an await).
#[must_use = "the span is current only while the guard lives"]
pub struct Entered(Option<([u8; 16], u64)>);

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

impl Entered {
    fn enter(trace: [u8; 16], span: u64) -> Entered {
        Entered(CURRENT.with(|c| c.replace(Some((trace, span)))))
    }
}

/// Makes the ids `(trace, span)` current for this thread's log lines until the guard drops.
#[cfg(test)]
pub(crate) fn enter_ids(trace: [u8; 16], span: [u8; 8]) -> Entered {
    Entered::enter(trace, u64::from_be_bytes(span))
}

/// A span id as the SDK draws one: random, not zero.
fn draw() -> u64 {
    loop {
        let id = fastrand::u64(..);
        if id != 0 {
            return id;
        }
    }
}

/// A span id as the SDK draws one: random, not zero.
pub(crate) fn fresh_span_id() -> SpanId {
    SpanId::from(draw())
}

/// A resource span begun by [`CycleSpans::begin`], current for this thread's log lines until
/// dropped (never held across an await). In an unsampled cycle its id is drawn only when
/// something reads it (a log line, or [`Begun::span`]): a settled resource's span is seen by
/// nothing, and a random id drawn later is as random as one drawn now.
#[must_use = "the span is current only while the guard lives"]
pub struct Begun {
    start: SystemTime,
    _entered: Entered,
}

impl Begun {
    /// The span, its id drawn now if nothing has read it yet (it is the current span: no other
    /// is entered while this guard lives).
    pub fn span(&self) -> ResourceSpan {
        let id = current().map_or(SpanId::INVALID, |(_, span)| SpanId::from_bytes(span));
        debug_assert!(id != SpanId::INVALID, "a begun span is current");
        ResourceSpan {
            id,
            start: self.start,
        }
    }
}

/// One resource span, started: its id and start time (the epoch when the cycle is unsampled,
/// as nothing reads it then).
#[derive(Clone, Copy, Debug)]
pub struct ResourceSpan {
    id: SpanId,
    start: SystemTime,
}

/// The per-resource spans of one cycle, children of its poll span. See the module docs.
pub struct CycleSpans {
    trace_id: TraceId,
    poll_id: SpanId,
    flags: TraceFlags,
    /// `None` when the cycle is not sampled: nothing is recorded.
    recorder: Option<Recorder>,
    resource_type: StringValue,
    topic: StringValue,
    publish_name: Cow<'static, str>,
    messaging_system: &'static str,
    /// The page's JSON lines or OTLP spans, not yet written.
    buf: Vec<u8>,
    /// Spans in `buf`.
    in_buf: usize,
}

/// Where a sampled cycle's spans go, with what that way builds once per cycle.
enum Recorder {
    /// JSON lines to the stdout exporter's writer; `lines`: the parts that are the same in
    /// every line of the cycle.
    JsonLines {
        out: Arc<JsonLinesOut>,
        lines: Lines,
        failing: Arc<AtomicBool>,
    },
    /// OTLP protobuf to the OTLP exporter; `proto`: the cycle's constant fields, encoded.
    Otlp {
        out: Arc<OtlpSink>,
        proto: protobuf::Proto,
    },
    /// `SpanData` to the batch span processor, under the tracer's scope.
    Processor {
        processor: Arc<BatchSpanProcessor>,
        scope: InstrumentationScope,
    },
}

/// What a cycle's publish spans say of where events go.
pub struct Destination<'a> {
    /// `hyperfleet.resource_type`.
    pub resource_type: &'a str,
    /// The topic (`messaging.destination.name`; the publish span is `<topic> publish`).
    pub topic: &'a str,
    /// `messaging.system`.
    pub messaging_system: &'static str,
}

impl CycleSpans {
    /// The resource spans under the poll span `poll` (trace id, span id and sampling), going to
    /// `sink`; `None` when `poll` has no valid span context.
    pub(crate) fn new(
        poll: &SpanContext,
        sink: &SinkParts,
        to: &Destination<'_>,
    ) -> Option<CycleSpans> {
        if !poll.is_valid() {
            return None;
        }
        let publish_name = format!("{} publish", to.topic);
        let recorder = poll.is_sampled().then(|| match &sink.sink {
            Sink::JsonLines(out) => Recorder::JsonLines {
                lines: Lines::new(poll, to, &publish_name, &out.resource()),
                out: out.clone(),
                failing: sink.failing.clone(),
            },
            Sink::Otlp(out) => Recorder::Otlp {
                proto: protobuf::Proto::new(poll, to, &publish_name),
                out: out.clone(),
            },
            Sink::Processor(processor) => Recorder::Processor {
                processor: processor.clone(),
                scope: sink.scope.clone(),
            },
        });
        let mut buf = Vec::new();
        if let Some(Recorder::Otlp { out, .. }) = &recorder {
            out.envelope.start(&mut buf);
        }
        Some(CycleSpans {
            trace_id: poll.trace_id(),
            poll_id: poll.span_id(),
            flags: poll.trace_flags(),
            recorder,
            resource_type: StringValue::from(Arc::<str>::from(to.resource_type)),
            topic: StringValue::from(Arc::<str>::from(to.topic)),
            publish_name: Cow::Owned(publish_name),
            messaging_system: to.messaging_system,
            buf,
            in_buf: 0,
        })
    }

    /// Starts a span (its parent is given when it ends).
    #[inline]
    pub fn start(&self) -> ResourceSpan {
        let id = fresh_span_id();
        let start = if self.sampled() {
            SystemTime::now()
        } else {
            SystemTime::UNIX_EPOCH
        };
        ResourceSpan { id, start }
    }

    /// Starts a span and makes it current for this thread's log lines until the guard drops;
    /// its id is drawn now in a sampled cycle, else at its first read.
    #[inline]
    pub fn begin(&self) -> Begun {
        let (span, start) = if self.sampled() {
            (draw(), SystemTime::now())
        } else {
            (0, SystemTime::UNIX_EPOCH)
        };
        Begun {
            start,
            _entered: Entered::enter(self.trace_id.to_bytes(), span),
        }
    }

    /// Whether this cycle's spans are recorded (else ending one does nothing).
    #[inline]
    pub fn sampled(&self) -> bool {
        self.recorder.is_some()
    }

    /// Makes `span` current for this thread's log lines until the guard drops.
    #[inline]
    pub fn enter(&self, span: &ResourceSpan) -> Entered {
        Entered::enter(
            self.trace_id.to_bytes(),
            u64::from_be_bytes(span.id.to_bytes()),
        )
    }

    /// The W3C `traceparent` of `span`.
    pub fn traceparent(&self, span: &ResourceSpan) -> TraceParent {
        TraceParent {
            trace_id: self.trace_id.to_bytes(),
            span_id: span.id.to_bytes(),
            flags: self.flags.to_u8(),
        }
    }

    /// Ends the `sentinel.evaluate` span of resource `id`, with the decision's `reason` when
    /// one was made.
    #[inline]
    pub fn end_evaluate(&mut self, span: &ResourceSpan, id: &str, reason: Option<&str>) {
        if self.recorder.is_some() {
            self.end_evaluate_at(span, id, reason, SystemTime::now());
        }
    }

    fn end_evaluate_at(
        &mut self,
        span: &ResourceSpan,
        id: &str,
        reason: Option<&str>,
        end: SystemTime,
    ) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let mut full = false;
        let ctx = SpanLine {
            trace_id: self.trace_id,
            span_id: span.id,
            flags: self.flags,
            parent: self.poll_id,
            start: span.start,
            end,
            status: &Status::Unset,
        };
        match recorder {
            Recorder::JsonLines { lines, .. } => lines.evaluate(&mut self.buf, &ctx, id, reason),
            Recorder::Otlp { out, proto } => {
                proto.evaluate(&mut self.buf, &ctx, id, reason);
                self.in_buf += 1;
                full = self.in_buf >= out.max_batch;
            }
            Recorder::Processor { processor, scope } => {
                let mut attributes = Vec::with_capacity(3);
                attributes.push(KeyValue::new(
                    "hyperfleet.resource_type",
                    self.resource_type.clone(),
                ));
                attributes.push(KeyValue::new("hyperfleet.resource_id", id.to_string()));
                if let Some(reason) = reason {
                    attributes.push(KeyValue::new(
                        "hyperfleet.decision_reason",
                        reason.to_string(),
                    ));
                }
                processor.on_end(ctx.span_data(Cow::Borrowed(EVALUATE), attributes, scope));
            }
        }
        if full {
            self.flush();
        }
    }

    /// Ends the `<topic> publish` span of event `message_id`, child of the evaluate span
    /// `parent`; `failed` marks it failed.
    #[inline]
    pub fn end_publish(
        &mut self,
        span: &ResourceSpan,
        parent: &ResourceSpan,
        message_id: uuid::Uuid,
        failed: bool,
    ) {
        if self.recorder.is_some() {
            self.end_publish_at(span, parent, message_id, failed, SystemTime::now());
        }
    }

    fn end_publish_at(
        &mut self,
        span: &ResourceSpan,
        parent: &ResourceSpan,
        message_id: uuid::Uuid,
        failed: bool,
        end: SystemTime,
    ) {
        let Some(recorder) = &self.recorder else {
            return;
        };
        let mut full = false;
        let failed_status = Status::error("publish failed");
        let ctx = SpanLine {
            trace_id: self.trace_id,
            span_id: span.id,
            flags: self.flags,
            parent: parent.id,
            start: span.start,
            end,
            status: if failed {
                &failed_status
            } else {
                &Status::Unset
            },
        };
        let mut id_bytes = [0u8; uuid::fmt::Hyphenated::LENGTH];
        let id = message_id.hyphenated().encode_lower(&mut id_bytes);
        match recorder {
            Recorder::JsonLines { lines, .. } => lines.publish(&mut self.buf, &ctx, id, failed),
            Recorder::Otlp { out, proto } => {
                proto.publish(&mut self.buf, &ctx, &id_bytes, failed);
                self.in_buf += 1;
                full = self.in_buf >= out.max_batch;
            }
            Recorder::Processor { processor, scope } => {
                let attributes = vec![
                    KeyValue::new("messaging.system", self.messaging_system),
                    KeyValue::new("messaging.operation.type", "publish"),
                    KeyValue::new("messaging.destination.name", self.topic.clone()),
                    KeyValue::new("messaging.message.id", id.to_string()),
                ];
                let name = self.publish_name.clone();
                processor.on_end(ctx.span_data(name, attributes, scope));
            }
        }
        if full {
            self.flush();
        }
    }

    /// Writes the JSON lines of the spans ended since the last flush (one write per page), or
    /// queues them as one OTLP request.
    pub fn flush(&mut self) {
        match &self.recorder {
            Some(Recorder::JsonLines { out, failing, .. }) if !self.buf.is_empty() => {
                super::warn_once(failing, &out.write(&self.buf));
                self.buf.clear();
            }
            Some(Recorder::Otlp { out, .. }) if self.in_buf > 0 => {
                // The page's buffer becomes the request; the next page starts in a new one.
                let next = Vec::with_capacity(self.buf.capacity());
                let page = std::mem::replace(&mut self.buf, next);
                out.exporter.send(out.envelope.finish(page), self.in_buf);
                out.envelope.start(&mut self.buf);
            }
            _ => {}
        }
        self.in_buf = 0;
    }
}

impl Drop for CycleSpans {
    fn drop(&mut self) {
        self.flush();
    }
}

/// What one resource span's line or `SpanData` is made of, beside its attributes.
struct SpanLine<'a> {
    trace_id: TraceId,
    span_id: SpanId,
    flags: TraceFlags,
    parent: SpanId,
    start: SystemTime,
    end: SystemTime,
    status: &'a Status,
}

impl SpanLine<'_> {
    fn span_data(
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

/// A cycle's JSON lines cut at what varies from span to span (ids, times, the resource id
/// and reason, the event id, a failed status): the rest is written once per cycle, by
/// [`span_line`]'s own pieces, and copied per span. The bytes are [`span_line`]'s for the
/// same span (`resource_spans_are_the_sdks`).
struct Lines {
    /// `{"Name":"sentinel.evaluate","SpanContext":{"TraceID":"…","SpanID":"`.
    evaluate_head: Vec<u8>,
    /// `","TraceFlags":"01"},"Parent":{"TraceID":"…","SpanID":"<poll>","Remote":false},"SpanKind":1,"StartTime":"`.
    evaluate_parent: Vec<u8>,
    /// `","Attributes":[<resource_type>,{"Key":"hyperfleet.resource_id","Value":{"Type":"STRING","Value":`.
    evaluate_attributes: Vec<u8>,
    /// `{"Name":"<topic> publish","SpanContext":{"TraceID":"…","SpanID":"`.
    publish_head: Vec<u8>,
    /// `","TraceFlags":"01"},"Parent":{"TraceID":"…","SpanID":"`.
    publish_parent: Vec<u8>,
    /// `","Attributes":[<system>,<operation>,<destination>,{"Key":"messaging.message.id","Value":{"Type":"STRING","Value":"`.
    publish_attributes: Vec<u8>,
    /// `}}],"Status":{"Code":"Unset","Description":""},"Resource":[…],"InstrumentationScope":{…}}` and a newline.
    tail_unset: Vec<u8>,
    /// The same with the failed publish's status.
    tail_failed: Vec<u8>,
}

const PARENT_TAIL: &[u8] = b"\",\"Remote\":false},\"SpanKind\":1,\"StartTime\":\"";
const END_TIME: &[u8] = b"\",\"EndTime\":\"";
const REASON: &[u8] =
    b"}},{\"Key\":\"hyperfleet.decision_reason\",\"Value\":{\"Type\":\"STRING\",\"Value\":";

impl Lines {
    fn new(poll: &SpanContext, to: &Destination<'_>, publish_name: &str, resource: &[u8]) -> Lines {
        let trace = poll.trace_id().to_bytes();
        let head = |name: &str| {
            let mut out = b"{\"Name\":".to_vec();
            json_str(&mut out, name);
            out.extend_from_slice(b",\"SpanContext\":{\"TraceID\":\"");
            hex_into(&mut out, &trace);
            out.extend_from_slice(b"\",\"SpanID\":\"");
            out
        };
        let mut publish_parent = b"\",\"TraceFlags\":\"".to_vec();
        hex_into(&mut publish_parent, &[poll.trace_flags().to_u8()]);
        publish_parent.extend_from_slice(b"\"},\"Parent\":{\"TraceID\":\"");
        hex_into(&mut publish_parent, &trace);
        publish_parent.extend_from_slice(b"\",\"SpanID\":\"");
        let mut evaluate_parent = publish_parent.clone();
        hex_into(&mut evaluate_parent, &poll.span_id().to_bytes());
        evaluate_parent.extend_from_slice(PARENT_TAIL);
        let last = |out: &mut Vec<u8>, key: &str| {
            out.extend_from_slice(b",{\"Key\":");
            json_str(out, key);
            out.extend_from_slice(b",\"Value\":{\"Type\":\"STRING\",\"Value\":");
        };
        let mut evaluate_attributes = b"\",\"Attributes\":[".to_vec();
        string_attribute(
            &mut evaluate_attributes,
            true,
            "hyperfleet.resource_type",
            to.resource_type,
        );
        last(&mut evaluate_attributes, "hyperfleet.resource_id");
        let mut publish_attributes = b"\",\"Attributes\":[".to_vec();
        string_attribute(
            &mut publish_attributes,
            true,
            "messaging.system",
            to.messaging_system,
        );
        string_attribute(
            &mut publish_attributes,
            false,
            "messaging.operation.type",
            "publish",
        );
        string_attribute(
            &mut publish_attributes,
            false,
            "messaging.destination.name",
            to.topic,
        );
        last(&mut publish_attributes, "messaging.message.id");
        publish_attributes.push(b'"');
        let tail = |status: &Status| {
            // span_line's own ending, after an empty attribute list.
            let mut line = Vec::new();
            span_line_tail(&mut line, status, resource, super::TRACER_NAME, "");
            let mut out = b"}}".to_vec();
            out.extend_from_slice(&line);
            out
        };
        Lines {
            evaluate_head: head(EVALUATE),
            evaluate_parent,
            evaluate_attributes,
            publish_head: head(publish_name),
            publish_parent,
            publish_attributes,
            tail_unset: tail(&Status::Unset),
            tail_failed: tail(&Status::error("publish failed")),
        }
    }

    fn times(buf: &mut Vec<u8>, span: &SpanLine<'_>) {
        rfc3339_utc(buf, span.start);
        buf.extend_from_slice(END_TIME);
        rfc3339_utc(buf, span.end);
    }

    fn evaluate(&self, buf: &mut Vec<u8>, span: &SpanLine<'_>, id: &str, reason: Option<&str>) {
        buf.extend_from_slice(&self.evaluate_head);
        hex_into(buf, &span.span_id.to_bytes());
        buf.extend_from_slice(&self.evaluate_parent);
        Lines::times(buf, span);
        buf.extend_from_slice(&self.evaluate_attributes);
        json_str(buf, id);
        if let Some(reason) = reason {
            buf.extend_from_slice(REASON);
            json_str(buf, reason);
        }
        buf.extend_from_slice(&self.tail_unset);
    }

    fn publish(&self, buf: &mut Vec<u8>, span: &SpanLine<'_>, message_id: &str, failed: bool) {
        buf.extend_from_slice(&self.publish_head);
        hex_into(buf, &span.span_id.to_bytes());
        buf.extend_from_slice(&self.publish_parent);
        hex_into(buf, &span.parent.to_bytes());
        buf.extend_from_slice(PARENT_TAIL);
        Lines::times(buf, span);
        buf.extend_from_slice(&self.publish_attributes);
        buf.extend_from_slice(message_id.as_bytes());
        buf.push(b'"');
        buf.extend_from_slice(if failed {
            &self.tail_failed
        } else {
            &self.tail_unset
        });
    }
}

/// The stdout exporter's writer and resource, shared by the batch processor's exporter (the
/// SDK's spans) and [`Sink::JsonLines`] (the resource spans).
pub(crate) struct JsonLinesOut {
    out: Mutex<Box<dyn Write + Send>>,
    /// The resource's `[…]` JSON, written into every line.
    resource: RwLock<Arc<[u8]>>,
}

impl std::fmt::Debug for JsonLinesOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonLinesOut")
    }
}

impl JsonLinesOut {
    fn resource(&self) -> Arc<[u8]> {
        self.resource
            .read()
            .map_or_else(|e| e.into_inner().clone(), |r| r.clone())
    }

    pub(crate) fn set_resource(&self, resource: &Resource) {
        let mut json = Vec::new();
        json.push(b'[');
        for (i, (key, value)) in resource.iter().enumerate() {
            attribute(&mut json, i == 0, key.as_str(), value);
        }
        json.push(b']');
        match self.resource.write() {
            Ok(mut r) => *r = json.into(),
            Err(e) => *e.into_inner() = json.into(),
        }
    }

    fn write(&self, bytes: &[u8]) -> OTelSdkResult {
        let mut out = self
            .out
            .lock()
            .map_err(|_| OTelSdkError::InternalFailure("poisoned".into()))?;
        out.write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))
    }
}

/// A span exporter writing one JSON object per span per line, shaped like the Go sentinel's
/// stdout exporter (`Name`, `SpanContext`, `Parent`, `SpanKind`, `StartTime`, `EndTime`,
/// `Attributes`, `Status`, `Resource`, `InstrumentationScope`).
pub struct JsonLinesExporter {
    out: Arc<JsonLinesOut>,
    buf: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for JsonLinesExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonLinesExporter")
    }
}

impl JsonLinesExporter {
    /// Writes to standard output.
    pub fn stdout() -> JsonLinesExporter {
        JsonLinesExporter::to_writer(Box::new(std::io::stdout()))
    }

    /// Writes to `out` (tests).
    pub fn to_writer(out: Box<dyn Write + Send>) -> JsonLinesExporter {
        JsonLinesExporter {
            out: Arc::new(JsonLinesOut {
                out: Mutex::new(out),
                resource: RwLock::new(Arc::from(&b"[]"[..])),
            }),
            buf: Mutex::new(Vec::new()),
        }
    }

    /// The writer and resource the resource spans share.
    pub(crate) fn shared(&self) -> Arc<JsonLinesOut> {
        self.out.clone()
    }
}

impl SpanExporter for JsonLinesExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let resource = self.out.resource();
        let mut buf = self
            .buf
            .lock()
            .map_err(|_| OTelSdkError::InternalFailure("poisoned".into()))?;
        buf.clear();
        for span in &batch {
            span_data_line(&mut buf, span, &resource);
        }
        self.out.write(&buf)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.out.set_resource(resource);
    }
}

/// Everything of a span line but its attributes.
struct LineParts<'a> {
    name: &'a str,
    span_context: &'a SpanContext,
    parent: SpanId,
    parent_remote: bool,
    kind: &'a SpanKind,
    start: SystemTime,
    end: SystemTime,
    status: &'a Status,
    resource: &'a [u8],
    scope_name: &'a str,
    scope_version: &'a str,
}

/// The JSON line of an SDK span.
pub(crate) fn span_data_line(buf: &mut Vec<u8>, span: &SpanData, resource: &[u8]) {
    span_line(
        buf,
        &LineParts {
            name: &span.name,
            span_context: &span.span_context,
            parent: span.parent_span_id,
            parent_remote: span.parent_span_is_remote,
            kind: &span.span_kind,
            start: span.start_time,
            end: span.end_time,
            status: &span.status,
            resource,
            scope_name: span.instrumentation_scope.name(),
            scope_version: span.instrumentation_scope.version().unwrap_or(""),
        },
        |buf| {
            for (i, kv) in span.attributes.iter().enumerate() {
                attribute(buf, i == 0, kv.key.as_str(), &kv.value);
            }
        },
    );
}

/// One span's JSON line (with its newline), the keys in the Go stdout exporter's order, strings
/// escaped as serde_json escapes them: the bytes `serde_json` gave for the same object.
fn span_line(buf: &mut Vec<u8>, p: &LineParts<'_>, attributes: impl FnOnce(&mut Vec<u8>)) {
    let sc = p.span_context;
    let trace_id = sc.trace_id().to_bytes();
    buf.extend_from_slice(b"{\"Name\":");
    json_str(buf, p.name);
    buf.extend_from_slice(b",\"SpanContext\":{\"TraceID\":\"");
    hex_into(buf, &trace_id);
    buf.extend_from_slice(b"\",\"SpanID\":\"");
    hex_into(buf, &sc.span_id().to_bytes());
    buf.extend_from_slice(b"\",\"TraceFlags\":\"");
    hex_into(buf, &[sc.trace_flags().to_u8()]);
    buf.extend_from_slice(b"\"},\"Parent\":{\"TraceID\":\"");
    if p.parent == SpanId::INVALID {
        buf.extend_from_slice(&[b'0'; 32]);
    } else {
        hex_into(buf, &trace_id);
    }
    buf.extend_from_slice(b"\",\"SpanID\":\"");
    hex_into(buf, &p.parent.to_bytes());
    buf.extend_from_slice(if p.parent_remote {
        b"\",\"Remote\":true},\"SpanKind\":"
    } else {
        b"\",\"Remote\":false},\"SpanKind\":"
    });
    buf.push(match p.kind {
        SpanKind::Internal => b'1',
        SpanKind::Server => b'2',
        SpanKind::Client => b'3',
        SpanKind::Producer => b'4',
        SpanKind::Consumer => b'5',
    });
    buf.extend_from_slice(b",\"StartTime\":\"");
    rfc3339_utc(buf, p.start);
    buf.extend_from_slice(b"\",\"EndTime\":\"");
    rfc3339_utc(buf, p.end);
    buf.extend_from_slice(b"\",\"Attributes\":[");
    attributes(buf);
    span_line_tail(buf, p.status, p.resource, p.scope_name, p.scope_version);
}

/// A span line from the end of its attributes: status, resource, scope, newline.
fn span_line_tail(
    buf: &mut Vec<u8>,
    status: &Status,
    resource: &[u8],
    scope_name: &str,
    scope_version: &str,
) {
    let (code, description) = match status {
        Status::Unset => ("Unset", ""),
        Status::Ok => ("Ok", ""),
        Status::Error { description } => ("Error", description.as_ref()),
    };
    buf.extend_from_slice(b"],\"Status\":{\"Code\":\"");
    buf.extend_from_slice(code.as_bytes());
    buf.extend_from_slice(b"\",\"Description\":");
    json_str(buf, description);
    buf.extend_from_slice(b"},\"Resource\":");
    buf.extend_from_slice(resource);
    buf.extend_from_slice(b",\"InstrumentationScope\":{\"Name\":");
    json_str(buf, scope_name);
    buf.extend_from_slice(b",\"Version\":");
    json_str(buf, scope_version);
    buf.extend_from_slice(b"}}\n");
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn json_str(buf: &mut Vec<u8>, s: &str) {
    if crate::common::textfmt::json_plain(s) {
        buf.push(b'"');
        buf.extend_from_slice(s.as_bytes());
        buf.push(b'"');
    } else {
        let _ = serde_json::to_writer(buf, s);
    }
}

/// One `{"Key":…,"Value":{"Type":"STRING","Value":…}}` of a string attribute.
fn string_attribute(buf: &mut Vec<u8>, first: bool, key: &str, value: &str) {
    if !first {
        buf.push(b',');
    }
    buf.extend_from_slice(b"{\"Key\":");
    json_str(buf, key);
    buf.extend_from_slice(b",\"Value\":{\"Type\":\"STRING\",\"Value\":");
    json_str(buf, value);
    buf.extend_from_slice(b"}}");
}

/// One attribute of any value type.
fn attribute(buf: &mut Vec<u8>, first: bool, key: &str, value: &Value) {
    let ty = match value {
        Value::String(s) => return string_attribute(buf, first, key, s.as_str()),
        Value::Bool(_) => "BOOL",
        Value::I64(_) => "INT64",
        Value::F64(_) => "FLOAT64",
        other => return string_attribute(buf, first, key, &other.to_string()),
    };
    if !first {
        buf.push(b',');
    }
    buf.extend_from_slice(b"{\"Key\":");
    json_str(buf, key);
    buf.extend_from_slice(b",\"Value\":{\"Type\":\"");
    buf.extend_from_slice(ty.as_bytes());
    buf.extend_from_slice(b"\",\"Value\":");
    match value {
        Value::Bool(b) => buf.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::I64(i) => {
            let _ = write!(buf, "{i}");
        }
        Value::F64(f) => {
            let _ = serde_json::to_writer(&mut *buf, &serde_json::json!(f));
        }
        _ => {}
    }
    buf.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt as _;
    use std::time::Duration;

    /// An exporter keeping what it is given.
    #[derive(Clone, Debug, Default)]
    struct Keep(Arc<Mutex<Vec<SpanData>>>);

    impl SpanExporter for Keep {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            self.0.lock().expect("lock").extend(batch);
            Ok(())
        }
    }

    /// A writer keeping what it is given.
    #[derive(Clone, Default)]
    struct Bytes(Arc<Mutex<Vec<u8>>>);

    impl Write for Bytes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn resource() -> Resource {
        Resource::builder_empty()
            .with_attributes([
                KeyValue::new("service.name", "s\"1"),
                KeyValue::new("n", 3_i64),
                KeyValue::new("b", true),
                KeyValue::new("f", 1.5),
            ])
            .build()
    }

    /// The stdout exporter's line as it was first written: a serde_json tree, printed. The
    /// encoder must give the same bytes.
    fn line_through_serde(span: &SpanData, resource: &Resource) -> String {
        use serde_json::json;
        let attrs = |kvs: Vec<(&str, &Value)>| -> serde_json::Value {
            kvs.into_iter()
                .map(|(k, v)| {
                    let (ty, value) = match v {
                        Value::Bool(b) => ("BOOL", json!(b)),
                        Value::I64(i) => ("INT64", json!(i)),
                        Value::F64(f) => ("FLOAT64", json!(f)),
                        Value::String(s) => ("STRING", json!(s.as_str())),
                        other => ("STRING", json!(other.to_string())),
                    };
                    json!({"Key": k, "Value": {"Type": ty, "Value": value}})
                })
                .collect()
        };
        let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let time = |t: SystemTime| {
            chrono::DateTime::<chrono::Utc>::from(t)
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        };
        let sc = &span.span_context;
        let (code, description) = match &span.status {
            Status::Unset => ("Unset", String::new()),
            Status::Ok => ("Ok", String::new()),
            Status::Error { description } => ("Error", description.to_string()),
        };
        let kind = match span.span_kind {
            SpanKind::Internal => 1,
            SpanKind::Server => 2,
            SpanKind::Client => 3,
            SpanKind::Producer => 4,
            SpanKind::Consumer => 5,
        };
        let parent_valid = span.parent_span_id != SpanId::INVALID;
        let line = json!({
            "Name": span.name,
            "SpanContext": {
                "TraceID": hex(&sc.trace_id().to_bytes()),
                "SpanID": hex(&sc.span_id().to_bytes()),
                "TraceFlags": format!("{:02x}", sc.trace_flags().to_u8()),
            },
            "Parent": {
                "TraceID": if parent_valid { hex(&sc.trace_id().to_bytes()) } else { "0".repeat(32) },
                "SpanID": hex(&span.parent_span_id.to_bytes()),
                "Remote": span.parent_span_is_remote,
            },
            "SpanKind": kind,
            "StartTime": time(span.start_time),
            "EndTime": time(span.end_time),
            "Attributes": attrs(span.attributes.iter().map(|kv| (kv.key.as_str(), &kv.value)).collect()),
            "Status": {"Code": code, "Description": description},
            "Resource": attrs(resource.iter().map(|(k, v)| (k.as_str(), v)).collect()),
            "InstrumentationScope": {
                "Name": span.instrumentation_scope.name(),
                "Version": span.instrumentation_scope.version().unwrap_or(""),
            },
        });
        format!("{line}\n")
    }

    fn sdk_span(
        name: &'static str,
        parent: SpanId,
        attributes: Vec<KeyValue>,
        status: Status,
    ) -> SpanData {
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 120_000_000);
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c),
                SpanId::from(0xb7ad_6b71_6920_3331),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: parent,
            parent_span_is_remote: false,
            span_kind: SpanKind::Client,
            name: Cow::Borrowed(name),
            start_time: t,
            end_time: t + Duration::new(0, 1_234),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: InstrumentationScope::builder("scope")
                .with_version("1.2")
                .build(),
        }
    }

    #[test]
    fn span_lines_are_serde_jsons() {
        let resource = resource();
        let exporter = JsonLinesExporter::to_writer(Box::new(std::io::sink()));
        exporter.out.set_resource(&resource);
        let json = exporter.out.resource();
        let cases = [
            sdk_span("HTTP GET", SpanId::INVALID, vec![], Status::Unset),
            sdk_span(
                "a \"quoted\"\nname <&>",
                SpanId::from(7),
                vec![
                    KeyValue::new("s", "caf\u{e9} \u{1b}\\"),
                    KeyValue::new("i", -42_i64),
                    KeyValue::new("b", false),
                    KeyValue::new("f", f64::NAN),
                    KeyValue::new("g", 0.1),
                    KeyValue::new("a", Value::Array(opentelemetry::Array::I64(vec![1, 2]))),
                ],
                Status::error("it \"failed\""),
            ),
            sdk_span("ok", SpanId::from(9), vec![], Status::Ok),
        ];
        for span in &cases {
            let mut line = Vec::new();
            span_data_line(&mut line, span, &json);
            assert_eq!(
                String::from_utf8_lossy(&line),
                line_through_serde(span, &resource)
            );
        }
    }

    fn destination() -> Destination<'static> {
        Destination {
            resource_type: "clusters",
            topic: "hyperfleet-clusters",
            messaging_system: "rabbitmq",
        }
    }

    /// A span as compared: everything but its own id and times, its parent named.
    fn shape(span: &SpanData, parents: &[(SpanId, &str)]) -> String {
        let parent = parents
            .iter()
            .find(|(id, _)| *id == span.parent_span_id)
            .map_or("?", |(_, name)| name);
        format!(
            "{} trace={} flags={:?} remote={} parent={parent} kind={:?} attrs={:?} status={:?} \
             scope={:?} dropped={} events={} links={}",
            span.name,
            span.span_context.trace_id(),
            span.span_context.trace_flags(),
            span.span_context.is_remote(),
            span.span_kind,
            span.attributes
                .iter()
                .map(|kv| {
                    let ty = match &kv.value {
                        Value::String(_) => "string",
                        Value::I64(_) => "i64",
                        _ => "other",
                    };
                    format!("{}={}:{ty}", kv.key.as_str(), kv.value.as_str())
                })
                .collect::<Vec<_>>(),
            span.status,
            span.instrumentation_scope,
            span.dropped_attributes_count,
            span.events.len(),
            span.links.len(),
        )
    }

    /// The spans a traced cycle makes for a skipped resource, a published one whose publish
    /// failed, and one without an id: once through [`CycleSpans`], once through the SDK's
    /// tracer as the loop made them before, under the same poll span.
    #[test]
    fn resource_spans_are_the_sdks() {
        use crate::telemetry::{self, TraceSettings};
        let keep = Keep::default();
        let settings = TraceSettings::from_env(&|_| None);
        let t = telemetry::with_exporter(keep.clone(), &settings, "1");
        let tracing = t.tracing();
        let poll = tracing.start("sentinel.poll", None, Vec::new).expect("on");
        let poll_id = poll.span().span_context().span_id();
        let message = uuid::Uuid::now_v7();
        let reasons = ["generation already reconciled", "message decision matched"];

        let mut spans = tracing
            .cycle_spans(&poll, &destination())
            .expect("valid poll");
        let skipped = spans.start();
        spans.end_evaluate(&skipped, "c1", Some(reasons[0]));
        let evaluate = spans.start();
        let publish = spans.start();
        assert_eq!(
            spans.traceparent(&publish).span_id,
            publish.id.to_bytes(),
            "the event carries the publish span"
        );
        spans.end_publish(&publish, &evaluate, message, true);
        spans.end_evaluate(&evaluate, "c2", Some(reasons[1]));
        let nameless = spans.start();
        spans.end_evaluate(&nameless, "", None);
        drop(spans);

        let attrs = |id: &str, reason: Option<&str>| {
            let mut a = vec![
                KeyValue::new("hyperfleet.resource_type", "clusters"),
                KeyValue::new("hyperfleet.resource_id", id.to_string()),
            ];
            if let Some(r) = reason {
                a.push(KeyValue::new("hyperfleet.decision_reason", r.to_string()));
            }
            a
        };
        let sdk = |parent: &opentelemetry::Context, id: &str, reason: Option<&str>| {
            let cx = tracing
                .start(EVALUATE, Some(parent), || attrs(id, None))
                .expect("on");
            if let Some(r) = reason {
                cx.span()
                    .set_attribute(KeyValue::new("hyperfleet.decision_reason", r.to_string()));
            }
            cx
        };
        let sdk_skipped = sdk(&poll, "c1", Some(reasons[0]));
        telemetry::end(&sdk_skipped);
        let sdk_eval = sdk(&poll, "c2", Some(reasons[1]));
        let sdk_publish = tracing
            .start("hyperfleet-clusters publish", Some(&sdk_eval), || {
                vec![
                    KeyValue::new("messaging.system", "rabbitmq"),
                    KeyValue::new("messaging.operation.type", "publish"),
                    KeyValue::new("messaging.destination.name", "hyperfleet-clusters"),
                    KeyValue::new("messaging.message.id", message.to_string()),
                ]
            })
            .expect("on");
        telemetry::fail(&sdk_publish, "publish failed");
        telemetry::end(&sdk_publish);
        telemetry::end(&sdk_eval);
        let sdk_nameless = sdk(&poll, "", None);
        telemetry::end(&sdk_nameless);
        t.shutdown(telemetry::SHUTDOWN_TIMEOUT).expect("flushed");

        let all = keep.0.lock().expect("lock").clone();
        let sdk_eval_id = sdk_eval.span().span_context().span_id();
        let parents = [
            (poll_id, "poll"),
            (evaluate.id, "evaluate"),
            (sdk_eval_id, "evaluate"),
        ];
        let ours: Vec<String> = all
            .iter()
            .filter(|s| {
                [skipped.id, evaluate.id, publish.id, nameless.id]
                    .contains(&s.span_context.span_id())
            })
            .map(|s| shape(s, &parents))
            .collect();
        let theirs: Vec<String> = all
            .iter()
            .filter(|s| s.name != "sentinel.poll")
            .filter(|s| {
                ![skipped.id, evaluate.id, publish.id, nameless.id]
                    .contains(&s.span_context.span_id())
            })
            .map(|s| shape(s, &parents))
            .collect();
        assert_eq!(ours.len(), 4, "{all:#?}");
        assert_eq!(ours, theirs);
        // The JSON lines of the stdout sink are those of the same SpanData.
        let bytes = Bytes::default();
        let exporter = JsonLinesExporter::to_writer(Box::new(bytes.clone()));
        exporter.out.set_resource(&resource());
        let sink = SinkParts {
            sink: Sink::JsonLines(exporter.shared()),
            scope: InstrumentationScope::builder(telemetry::TRACER_NAME).build(),
            failing: Arc::default(),
        };
        let mut lines =
            CycleSpans::new(poll.span().span_context(), &sink, &destination()).expect("valid poll");
        let end = SystemTime::now();
        lines.end_evaluate_at(&skipped, "c1", Some(reasons[0]), end);
        lines.end_publish_at(&publish, &evaluate, message, true, end);
        lines.end_evaluate_at(&evaluate, "c2", Some(reasons[1]), end);
        lines.end_evaluate_at(&nameless, "", None, end);
        // A publish that worked, and a resource id that needs escaping.
        lines.end_publish_at(&publish, &evaluate, message, false, end);
        lines.end_evaluate_at(&skipped, "c\"1\n", Some(reasons[0]), end);
        lines.flush();
        let mut want = Vec::new();
        let json = exporter.out.resource();
        let span = |id: SpanId| {
            let mut span = all
                .iter()
                .find(|s| s.span_context.span_id() == id)
                .expect("span")
                .clone();
            span.end_time = end;
            span
        };
        for id in [skipped.id, publish.id, evaluate.id, nameless.id] {
            span_data_line(&mut want, &span(id), &json);
        }
        let mut worked = span(publish.id);
        worked.status = Status::Unset;
        span_data_line(&mut want, &worked, &json);
        let mut escaped = span(skipped.id);
        escaped.attributes[1] = KeyValue::new("hyperfleet.resource_id", "c\"1\n");
        span_data_line(&mut want, &escaped, &json);
        assert_eq!(
            String::from_utf8_lossy(&bytes.0.lock().expect("lock")),
            String::from_utf8_lossy(&want)
        );
    }

    #[test]
    fn an_unsampled_cycle_records_nothing_but_carries_its_ids() {
        use crate::telemetry::{self, SamplerKind, TraceSettings};
        let keep = Keep::default();
        let settings = TraceSettings {
            sampler: SamplerKind::ParentBasedTraceIdRatio(0.0),
            ..TraceSettings::from_env(&|_| None)
        };
        let t = telemetry::with_exporter(keep.clone(), &settings, "1");
        let tracing = t.tracing();
        let poll = tracing.start("sentinel.poll", None, Vec::new).expect("on");
        let mut spans = tracing
            .cycle_spans(&poll, &destination())
            .expect("valid poll");
        let evaluate = spans.start();
        let tp = spans.traceparent(&evaluate);
        assert_eq!(
            tp.trace_id,
            poll.span().span_context().trace_id().to_bytes()
        );
        assert_eq!(tp.flags, 0, "not sampled");
        assert_ne!(tp.span_id, [0; 8]);
        {
            let _entered = spans.enter(&evaluate);
            assert_eq!(telemetry::current_ids(), Some((tp.trace_id, tp.span_id)));
        }
        assert_eq!(telemetry::current_ids(), None);
        spans.end_evaluate(&evaluate, "c1", Some("r"));

        // A begun span's id is drawn at its first read, then kept: what a log line saw is the
        // span's, and what the span carries is what later log lines see.
        let trace = tp.trace_id;
        let mut ids = Vec::new();
        for read_first in [true, false, true] {
            let begun = spans.begin();
            assert!(!spans.sampled());
            let (seen, span) = if read_first {
                let seen = telemetry::current_ids().expect("current");
                (seen, begun.span())
            } else {
                let span = begun.span();
                (telemetry::current_ids().expect("current"), span)
            };
            assert_eq!(seen, (trace, span.id.to_bytes()));
            assert_ne!(span.id, SpanId::INVALID);
            assert_eq!(telemetry::current_ids(), Some(seen), "drawn once");
            assert_eq!(begun.span().id, span.id);
            ids.push(span.id);
            {
                // A span entered inside, and left, gives the begun one back.
                let inner = spans.start();
                let _inner = spans.enter(&inner);
                assert_eq!(telemetry::current_ids(), Some((trace, inner.id.to_bytes())));
            }
            assert_eq!(telemetry::current_ids(), Some(seen));
            drop(begun);
            assert_eq!(telemetry::current_ids(), None);
        }
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        drop(spans);
        telemetry::end(&poll);
        t.shutdown(telemetry::SHUTDOWN_TIMEOUT).expect("flushed");
        assert!(keep.0.lock().expect("lock").is_empty());
    }
}
