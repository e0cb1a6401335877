//! A cycle's resource spans as OTLP protobuf: each ended span encoded straight into the page's
//! buffer as one `ScopeSpans.spans` entry, and the buffer wrapped into an
//! `ExportTraceServiceRequest` (→ `ResourceSpans` → `ScopeSpans`) when it is sent.
//!
//! Takes the poll span's context and the cycle's destination; gives the bytes prost gives for
//! the `opentelemetry-proto` messages the SDK's OTLP exporter builds from the same spans. The
//! parts that are the same for every span of the cycle (trace id, the evaluate spans' parent,
//! names, kinds, the constant attributes, status and flags) are encoded once per cycle and
//! copied per span, as the stdout exporter's `Lines` does for JSON; per span only the ids, the two times,
//! the varying attribute values and the lengths in front of them are written.
//!
//! Fields are written as prost writes them: in tag order, fields at their default value left
//! out (a oneof member and a present sub-message always written), lengths as varints
//! (`prost::encode_length_delimiter`). Invariant: `otlp_spans_are_prosts` decodes nothing and
//! compares bytes: the request is byte-for-byte the SDK exporter's for the same `SpanData`.

use super::request::Request;
use crate::telemetry::spans::line::{Destination, EVALUATE, SpanLine};
use opentelemetry::trace::{SpanContext, Status};
use prost::bytes::BufMut as _;

/// `ScopeSpans.spans` (2), `ResourceSpans.scope_spans` (2): a length-delimited field 2.
const FIELD_2: u8 = 0x12;
/// Field 1, length-delimited (`ExportTraceServiceRequest.resource_spans`,
/// `ResourceSpans.resource`, `ScopeSpans.scope`, `Span.trace_id`, `KeyValue.key`, …).
const FIELD_1: u8 = 0x0a;
/// `Span.parent_span_id` (4, bytes).
const PARENT: [u8; 2] = [0x22, 8];
/// `Span.start_time_unix_nano` (7, fixed64).
const START: u8 = 0x39;
/// `Span.end_time_unix_nano` (8, fixed64).
const END: u8 = 0x41;
/// `Span.attributes` (9, repeated message).
const ATTRIBUTE: u8 = 0x4a;

/// The length of a length-delimited field of `len` bytes with a one-byte key.
fn field_len(len: usize) -> usize {
    1 + prost::length_delimiter_len(len) + len
}

/// A length-delimited field: its one-byte key, the length, nothing of the content.
#[inline]
fn open(buf: &mut Vec<u8>, key: u8, len: usize) {
    // The usual length (a key, an id, a value, an attribute entry) is one varint byte.
    if len < 0x80 {
        buf.extend_from_slice(&[key, len as u8]);
        return;
    }
    buf.push(key);
    // Writing a length into a Vec cannot fail (it only fails for want of room).
    let _ = prost::encode_length_delimiter(len, buf);
}

/// A length-delimited field with its content.
fn bytes_field(buf: &mut Vec<u8>, key: u8, bytes: &[u8]) {
    open(buf, key, bytes.len());
    buf.extend_from_slice(bytes);
}

/// The length of a string `KeyValue` message's content.
fn string_kv_len(key: &str, value_len: usize) -> usize {
    field_len(key.len()) + field_len(field_len(value_len))
}

/// A `Span.attributes` entry with a string value, up to (not including) the value's bytes.
fn string_kv_head(buf: &mut Vec<u8>, key: &str, value_len: usize) {
    open(buf, ATTRIBUTE, string_kv_len(key, value_len));
    bytes_field(buf, FIELD_1, key.as_bytes());
    open(buf, FIELD_2, field_len(value_len));
    open(buf, FIELD_1, value_len);
}

/// A whole `Span.attributes` entry with a string value.
fn string_kv(buf: &mut Vec<u8>, key: &str, value: &str) {
    string_kv_head(buf, key, value.len());
    buf.extend_from_slice(value.as_bytes());
}

/// The encoded length of a whole string attribute entry.
fn string_kv_field_len(key: &str, value_len: usize) -> usize {
    field_len(string_kv_len(key, value_len))
}

/// `Span.status` then `Span.flags` (16, fixed32): the end of every resource span.
fn tail(status: &Status, flags: u32) -> Vec<u8> {
    let mut status_msg = Vec::new();
    if let Status::Error { description } = status {
        if !description.is_empty() {
            bytes_field(&mut status_msg, FIELD_2, description.as_bytes()); // message (2)
        }
        status_msg.extend_from_slice(&[0x18, 2]); // code (3): STATUS_CODE_ERROR
    } else if let Status::Ok = status {
        status_msg.extend_from_slice(&[0x18, 1]);
    }
    let mut out = Vec::new();
    bytes_field(&mut out, 0x7a, &status_msg);
    out.extend_from_slice(&[0x85, 0x01]);
    out.extend_from_slice(&flags.to_le_bytes());
    out
}

/// A time as the SDK exporter's `to_nanos` gives it: since the epoch, 0 before it.
fn nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The length of a fixed64 time field: none at all for 0, which prost leaves out.
fn time_len(nanos: u64) -> usize {
    if nanos == 0 { 0 } else { 9 }
}

fn time_field(buf: &mut Vec<u8>, key: u8, nanos: u64) {
    if nanos != 0 {
        buf.push(key);
        buf.extend_from_slice(&nanos.to_le_bytes());
    }
}

/// A cycle's OTLP spans cut at what varies from span to span; see the module docs.
pub(crate) struct Proto {
    /// `trace_id` (1) and the key and length of `span_id` (2).
    head: Vec<u8>,
    /// The evaluate span's `parent_span_id` (the poll), `name` and `kind`.
    evaluate_mid: Vec<u8>,
    /// The publish span's `name` and `kind` (its parent varies).
    publish_mid: Vec<u8>,
    /// `hyperfleet.resource_type`.
    evaluate_type: Vec<u8>,
    /// `messaging.system`, `messaging.operation.type`, `messaging.destination.name`, and
    /// `messaging.message.id` up to its value (a UUID, always 36 bytes).
    publish_attributes: Vec<u8>,
    /// Status unset, and flags.
    tail_unset: Vec<u8>,
    /// The failed publish's status, and flags.
    tail_failed: Vec<u8>,
}

const RESOURCE_ID: &str = "hyperfleet.resource_id";
const REASON: &str = "hyperfleet.decision_reason";
const UUID_LEN: usize = uuid::fmt::Hyphenated::LENGTH;

impl Proto {
    pub(crate) fn new(poll: &SpanContext, to: &Destination<'_>, publish_name: &str) -> Proto {
        let mut head = Vec::with_capacity(20);
        bytes_field(&mut head, FIELD_1, &poll.trace_id().to_bytes());
        head.extend_from_slice(&[FIELD_2, 8]);
        // name (5), kind (6) internal.
        let mid = |name: &str| {
            let mut out = Vec::new();
            bytes_field(&mut out, 0x2a, name.as_bytes());
            out.extend_from_slice(&[0x30, 1]);
            out
        };
        let mut evaluate_mid = PARENT.to_vec();
        evaluate_mid.extend_from_slice(&poll.span_id().to_bytes());
        evaluate_mid.extend_from_slice(&mid(EVALUATE));
        let mut evaluate_type = Vec::new();
        string_kv(
            &mut evaluate_type,
            "hyperfleet.resource_type",
            to.resource_type,
        );
        let mut publish_attributes = Vec::new();
        string_kv(
            &mut publish_attributes,
            "messaging.system",
            to.messaging_system,
        );
        string_kv(
            &mut publish_attributes,
            "messaging.operation.type",
            "publish",
        );
        string_kv(
            &mut publish_attributes,
            "messaging.destination.name",
            to.topic,
        );
        string_kv_head(&mut publish_attributes, "messaging.message.id", UUID_LEN);
        // The flags the SDK exporter writes: the trace flags, and "whether the parent is
        // remote" known (it is not).
        let flags = u32::from(poll.trace_flags().to_u8()) | 0x100;
        Proto {
            head,
            evaluate_mid,
            publish_mid: mid(publish_name),
            evaluate_type,
            publish_attributes,
            tail_unset: tail(&Status::Unset, flags),
            tail_failed: tail(&Status::error("publish failed"), flags),
        }
    }

    /// The start and end times (7, 8) of `span`, and their encoded length.
    fn times(span: &SpanLine<'_>) -> (u64, u64, usize) {
        let (start, end) = (nanos(span.start), nanos(span.end));
        (start, end, time_len(start) + time_len(end))
    }

    fn write_times(buf: &mut Vec<u8>, (start, end, _): (u64, u64, usize)) {
        time_field(buf, START, start);
        time_field(buf, END, end);
    }

    /// Appends the `sentinel.evaluate` span of resource `id`.
    pub(crate) fn evaluate(
        &self,
        buf: &mut Vec<u8>,
        span: &SpanLine<'_>,
        id: &str,
        reason: Option<&str>,
    ) {
        let times = Proto::times(span);
        let len = self.head.len()
            + 8
            + self.evaluate_mid.len()
            + times.2
            + self.evaluate_type.len()
            + string_kv_field_len(RESOURCE_ID, id.len())
            + reason.map_or(0, |r| string_kv_field_len(REASON, r.len()))
            + self.tail_unset.len();
        open(buf, FIELD_2, len);
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(&span.span_id.to_bytes());
        buf.extend_from_slice(&self.evaluate_mid);
        Proto::write_times(buf, times);
        buf.extend_from_slice(&self.evaluate_type);
        string_kv(buf, RESOURCE_ID, id);
        if let Some(reason) = reason {
            string_kv(buf, REASON, reason);
        }
        buf.extend_from_slice(&self.tail_unset);
    }

    /// Appends the `<topic> publish` span of event `message_id` (a hyphenated UUID).
    pub(crate) fn publish(
        &self,
        buf: &mut Vec<u8>,
        span: &SpanLine<'_>,
        message_id: &[u8; UUID_LEN],
        failed: bool,
    ) {
        let tail = if failed {
            &self.tail_failed
        } else {
            &self.tail_unset
        };
        let times = Proto::times(span);
        let len = self.head.len()
            + 8
            + PARENT.len()
            + 8
            + self.publish_mid.len()
            + times.2
            + self.publish_attributes.len()
            + UUID_LEN
            + tail.len();
        open(buf, FIELD_2, len);
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(&span.span_id.to_bytes());
        buf.extend_from_slice(&PARENT);
        buf.extend_from_slice(&span.parent.to_bytes());
        buf.extend_from_slice(&self.publish_mid);
        Proto::write_times(buf, times);
        buf.extend_from_slice(&self.publish_attributes);
        buf.extend_from_slice(message_id);
        buf.extend_from_slice(tail);
    }
}

/// The parts of every request around its spans: the resource's and the scope's fields,
/// encoded once (by prost, from the messages the SDK exporter builds).
#[derive(Debug)]
pub(crate) struct Envelope {
    /// `ResourceSpans.resource` (1): key, length, message.
    resource: Vec<u8>,
    /// `ResourceSpans.schema_url` (3), after the scope spans; empty when there is none.
    resource_schema: Vec<u8>,
    /// `ScopeSpans.scope` (1): key, length, message.
    scope: Vec<u8>,
    /// `ScopeSpans.schema_url` (3), after the spans; empty when there is none.
    scope_schema: Vec<u8>,
}

impl Envelope {
    /// The envelope of spans of `scope` from a provider with `resource`.
    pub(crate) fn new(
        resource: &opentelemetry_sdk::Resource,
        scope: &opentelemetry::InstrumentationScope,
    ) -> Envelope {
        use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
        use opentelemetry_proto::tonic::resource::v1::Resource;
        use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
        use prost::Message as _;
        let with_schema = ResourceAttributesWithSchema::from(resource);
        let message = Resource {
            attributes: with_schema.attributes.0,
            dropped_attributes_count: 0,
            entity_refs: vec![],
        };
        let schema = |url: Option<&str>| {
            let mut out = Vec::new();
            if let Some(url) = url.filter(|u| !u.is_empty()) {
                bytes_field(&mut out, 0x1a, url.as_bytes());
            }
            out
        };
        let mut resource = Vec::new();
        bytes_field(&mut resource, FIELD_1, &message.encode_to_vec());
        let mut scope_field = Vec::new();
        let scope_message = InstrumentationScope::from((scope, None));
        bytes_field(&mut scope_field, FIELD_1, &scope_message.encode_to_vec());
        Envelope {
            resource,
            resource_schema: schema(with_schema.schema_url.as_deref()),
            scope: scope_field,
            scope_schema: schema(scope.schema_url()),
        }
    }

    /// The bytes kept in front of a page's spans for the envelope's head: the two opening
    /// keys with lengths of any size, the resource and the scope.
    fn head_room(&self) -> usize {
        2 * (1 + MAX_LENGTH_LEN) + self.resource.len() + self.scope.len()
    }

    /// Starts a page in `buf` (emptied): room for the head, then the page's spans are appended.
    pub(crate) fn start(&self, buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(self.head_room(), 0);
    }

    /// The `ExportTraceServiceRequest` of a page [`Envelope::start`]ed in `buf` and holding
    /// the encoded `ScopeSpans.spans` entries after that: the tail appended and the head written
    /// just before the spans, in place (the spans are never copied).
    pub(crate) fn finish(&self, mut buf: Vec<u8>) -> Request {
        let room = self.head_room();
        let spans = buf.len().saturating_sub(room);
        buf.extend_from_slice(&self.scope_schema);
        buf.extend_from_slice(&self.resource_schema);
        let scope_spans = self.scope.len() + spans + self.scope_schema.len();
        let resource_spans =
            self.resource.len() + field_len(scope_spans) + self.resource_schema.len();
        // The head ends where the spans start: written forward from where that puts it.
        let head_len = 2
            + prost::length_delimiter_len(resource_spans)
            + self.resource.len()
            + prost::length_delimiter_len(scope_spans)
            + self.scope.len();
        let at = room - head_len;
        let mut head = &mut buf[at..room];
        head.put_u8(FIELD_1);
        let _ = prost::encode_length_delimiter(resource_spans, &mut head);
        head.put_slice(&self.resource);
        head.put_u8(FIELD_2);
        let _ = prost::encode_length_delimiter(scope_spans, &mut head);
        head.put_slice(&self.scope);
        Request::at(buf, at)
    }

    /// An `ExportTraceServiceRequest` of the encoded `ScopeSpans.spans` entries `spans`.
    #[cfg(test)]
    pub(crate) fn request(&self, spans: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        self.start(&mut buf);
        buf.extend_from_slice(spans);
        self.finish(buf).message().to_vec()
    }
}

/// The most bytes a length takes as a varint (of a `usize` on 64 bits).
const MAX_LENGTH_LEN: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::TRACER_NAME;
    use crate::telemetry::otlp::queue::sdk_request;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry::{InstrumentationScope, KeyValue};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SpanData;
    use proptest::prelude::*;
    use std::borrow::Cow;
    use std::time::{Duration, SystemTime};

    fn destination() -> Destination<'static> {
        Destination {
            resource_type: "clusters",
            topic: "hyperfleet-clusters",
            messaging_system: "rabbitmq",
        }
    }

    fn resource() -> Resource {
        Resource::builder_empty()
            .with_attributes([
                KeyValue::new("deployment.environment", "e2e"),
                KeyValue::new("service.name", "sentinel"),
                KeyValue::new("service.version", "1.2.3"),
            ])
            .build()
    }

    /// One span to encode both ways.
    #[derive(Debug)]
    enum Case {
        Evaluate(String, Option<String>),
        Publish(uuid::Uuid, bool),
    }

    /// The request `Proto` and `Envelope` give for `cases`, and the SDK exporter's for the
    /// `SpanData` the `Processor` sink makes of the same spans.
    fn both(cases: &[Case], start: SystemTime, took: Duration) -> (Vec<u8>, Vec<u8>) {
        let poll = SpanContext::new(
            TraceId::from(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c),
            SpanId::from(0xb7ad_6b71_6920_3331),
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        );
        let to = destination();
        let publish_name = format!("{} publish", to.topic);
        let proto = Proto::new(&poll, &to, &publish_name);
        let scope = InstrumentationScope::builder(TRACER_NAME).build();
        let mut buf = Vec::new();
        let mut spans = Vec::new();
        let failed = Status::error("publish failed");
        for (i, case) in cases.iter().enumerate() {
            let id = SpanId::from(0x1000 + i as u64);
            let mut line = SpanLine {
                trace_id: poll.trace_id(),
                span_id: id,
                flags: poll.trace_flags(),
                parent: poll.span_id(),
                start,
                end: start + took,
                status: &Status::Unset,
            };
            let data = match case {
                Case::Evaluate(resource_id, reason) => {
                    proto.evaluate(&mut buf, &line, resource_id, reason.as_deref());
                    let mut attributes = vec![
                        KeyValue::new("hyperfleet.resource_type", to.resource_type),
                        KeyValue::new(RESOURCE_ID, resource_id.clone()),
                    ];
                    if let Some(r) = reason {
                        attributes.push(KeyValue::new(REASON, r.clone()));
                    }
                    line.span_data(Cow::Borrowed(super::EVALUATE), attributes, &scope)
                }
                Case::Publish(message_id, is_failed) => {
                    line.parent = SpanId::from(0x0fff);
                    if *is_failed {
                        line.status = &failed;
                    }
                    let mut text = [0u8; UUID_LEN];
                    message_id.hyphenated().encode_lower(&mut text);
                    proto.publish(&mut buf, &line, &text, *is_failed);
                    let attributes = vec![
                        KeyValue::new("messaging.system", to.messaging_system),
                        KeyValue::new("messaging.operation.type", "publish"),
                        KeyValue::new("messaging.destination.name", to.topic),
                        KeyValue::new("messaging.message.id", message_id.to_string()),
                    ];
                    line.span_data(Cow::Owned(publish_name.clone()), attributes, &scope)
                }
            };
            spans.push(data);
        }
        let resource = resource();
        let ours = Envelope::new(&resource, &scope).request(&buf);
        let theirs = sdk_request(spans, &(&resource).into());
        (ours, theirs)
    }

    /// Equal bytes, shown decoded when they differ.
    fn assert_same(ours: &[u8], theirs: &[u8]) {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use prost::Message as _;
        let decoded = ExportTraceServiceRequest::decode(ours).expect("ours decodes");
        let want = ExportTraceServiceRequest::decode(theirs).expect("the SDK's decodes");
        assert_eq!(decoded, want);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn otlp_spans_are_the_sdk_exporters() {
        let start = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 120_000_007);
        let long = "c".repeat(300);
        let cases = [
            Case::Evaluate("c1".into(), Some("generation already reconciled".into())),
            Case::Publish(uuid::Uuid::now_v7(), true),
            Case::Evaluate("c2".into(), Some("message decision matched".into())),
            Case::Evaluate(String::new(), None),
            Case::Publish(uuid::Uuid::now_v7(), false),
            Case::Evaluate(long.clone(), Some(long)),
            Case::Evaluate("caf\u{e9} \"1\"\n".into(), Some(String::new())),
        ];
        let (ours, theirs) = both(&cases, start, Duration::new(0, 1_234));
        assert_same(&ours, &theirs);
        // Times before the epoch (0, as the SDK writes them). (A request of no spans is never
        // made: `CycleSpans::flush` sends nothing then.)
        let before = SystemTime::UNIX_EPOCH - Duration::from_secs(5);
        let (ours, theirs) = both(&cases[..2], before, Duration::ZERO);
        assert_same(&ours, &theirs);
    }

    #[test]
    fn the_envelope_carries_schema_urls() {
        let resource = Resource::builder_empty()
            .with_schema_url([KeyValue::new("k", 1_i64)], "https://schema/r")
            .build();
        let scope = InstrumentationScope::builder("s")
            .with_version("2")
            .with_schema_url("https://schema/s")
            .build();
        let span = SpanData {
            span_context: SpanContext::new(
                TraceId::from(1),
                SpanId::from(2),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: opentelemetry::trace::SpanKind::Internal,
            name: Cow::Borrowed("x"),
            start_time: SystemTime::UNIX_EPOCH,
            end_time: SystemTime::UNIX_EPOCH,
            attributes: vec![],
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Ok,
            instrumentation_scope: scope.clone(),
        };
        let theirs = sdk_request(vec![span], &(&resource).into());
        // The one span as the SDK encodes it, cut out of its own request: the envelope must put
        // the same bytes around it.
        let span_bytes = {
            use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
            use prost::Message as _;
            let request = ExportTraceServiceRequest::decode(&theirs[..]).expect("decodes");
            let span = &request.resource_spans[0].scope_spans[0].spans[0];
            let mut out = Vec::new();
            bytes_field(&mut out, FIELD_2, &span.encode_to_vec());
            out
        };
        let ours = Envelope::new(&resource, &scope).request(&span_bytes);
        assert_same(&ours, &theirs);
    }

    proptest! {
        #[test]
        fn any_spans_encode_as_the_sdk_exporter_does(
            spans in proptest::collection::vec(
                prop_oneof![
                    (".{0,200}", proptest::option::of(".{0,200}"))
                        .prop_map(|(id, reason)| Case::Evaluate(id, reason)),
                    (any::<u128>(), any::<bool>())
                        .prop_map(|(id, failed)| Case::Publish(uuid::Uuid::from_u128(id), failed)),
                ],
                1..20,
            ),
            secs in 0u64..4_000_000_000,
            nanos in 0u32..1_000_000_000,
            took in 0u64..10_000_000_000,
        ) {
            let start = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
            let (ours, theirs) = both(&spans, start, Duration::from_nanos(took));
            prop_assert_eq!(ours, theirs);
        }
    }
}
