//! The per-resource spans of a traced cycle (`sentinel.evaluate` per resource, `<topic>
//! publish` per event) made at the engine's cost.
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
//!   buffer (`otlp::encode`), queued as one request per page (or per export batch);
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
use super::otlp::Proto;
use super::sink::{OtlpSink, Sink};
use super::stdout::JsonLinesOut;
use super::stdout::lines::Lines;
use opentelemetry::trace::{SpanContext, SpanId, Status, TraceFlags, TraceId};
use opentelemetry::{InstrumentationScope, KeyValue, StringValue};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanProcessor as _};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

mod ids;
pub(crate) mod line;

use ids::draw;
#[cfg(test)]
pub(crate) use ids::enter_ids;
pub use ids::{Begun, Entered, ResourceSpan};
pub(crate) use ids::{current, fresh_span_id};
use line::SpanLine;
pub use line::{Destination, EVALUATE};

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
    },
    /// OTLP protobuf to the OTLP exporter; `proto`: the cycle's constant fields, encoded.
    Otlp { out: Arc<OtlpSink>, proto: Proto },
    /// `SpanData` to the batch span processor, under the tracer's scope.
    Processor {
        processor: Arc<BatchSpanProcessor>,
        scope: InstrumentationScope,
    },
}

impl CycleSpans {
    /// The resource spans under the poll span `poll` (trace id, span id and sampling), going to
    /// `sink`; `None` when `poll` has no valid span context.
    pub(crate) fn new(poll: &SpanContext, sink: &Sink, to: &Destination<'_>) -> Option<CycleSpans> {
        if !poll.is_valid() {
            return None;
        }
        let publish_name = format!("{} publish", to.topic);
        let recorder = poll.is_sampled().then(|| match sink {
            Sink::JsonLines(out) => Recorder::JsonLines {
                lines: Lines::new(poll, to, &publish_name, &out.resource()),
                out: out.clone(),
            },
            Sink::Otlp(out) => Recorder::Otlp {
                proto: Proto::new(poll, to, &publish_name),
                out: out.clone(),
            },
            Sink::Processor { processor, scope } => Recorder::Processor {
                processor: processor.clone(),
                scope: scope.clone(),
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
            Some(Recorder::JsonLines { out, .. }) if !self.buf.is_empty() => {
                let _ = out.write(&self.buf);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::stdout::{JsonLinesExporter, span_data_line};
    use crate::telemetry::testing::{Bytes, Keep, resource};
    use opentelemetry::Value;
    use opentelemetry::trace::TraceContextExt as _;
    use opentelemetry_sdk::trace::SpanData;

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
        exporter.shared().set_resource(&resource());
        let sink = Sink::JsonLines(exporter.shared());
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
        let json = exporter.shared().resource();
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
