//! A cycle's JSON lines cut at what varies from span to span, the rest built once per cycle by
//! the stdout exporter's own pieces.
//!
//! Invariant: a line is the bytes [`super::span_line`] gives for the same span
//! (`resource_spans_are_the_sdks`).

use super::{span_line_tail, string_attribute};
use crate::common::textfmt::{hex_into, json_str, rfc3339_utc};
use crate::telemetry::spans::line::{Destination, EVALUATE, SpanLine};
use opentelemetry::trace::{SpanContext, Status};

/// The evaluate and publish spans' attributes up to the value that varies (the resource id,
/// the event id), opened.
fn attribute_heads(to: &Destination<'_>) -> (Vec<u8>, Vec<u8>) {
    let last = |out: &mut Vec<u8>, key: &str| {
        out.extend_from_slice(b",{\"Key\":");
        json_str(out, key);
        out.extend_from_slice(b",\"Value\":{\"Type\":\"STRING\",\"Value\":");
    };
    let mut evaluate = b"\",\"Attributes\":[".to_vec();
    string_attribute(
        &mut evaluate,
        true,
        "hyperfleet.resource_type",
        to.resource_type,
    );
    last(&mut evaluate, "hyperfleet.resource_id");
    let mut publish = b"\",\"Attributes\":[".to_vec();
    string_attribute(&mut publish, true, "messaging.system", to.messaging_system);
    string_attribute(&mut publish, false, "messaging.operation.type", "publish");
    string_attribute(&mut publish, false, "messaging.destination.name", to.topic);
    last(&mut publish, "messaging.message.id");
    publish.push(b'"');
    (evaluate, publish)
}

/// A cycle's JSON lines cut at what varies from span to span (ids, times, the resource id
/// and reason, the event id, a failed status): the rest is written once per cycle, by
/// [`span_line`]'s own pieces, and copied per span. The bytes are [`span_line`]'s for the
/// same span (`resource_spans_are_the_sdks`).
pub(crate) struct Lines {
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
    pub(crate) fn new(
        poll: &SpanContext,
        to: &Destination<'_>,
        publish_name: &str,
        resource: &[u8],
    ) -> Lines {
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
        let (evaluate_attributes, publish_attributes) = attribute_heads(to);
        let tail = |status: &Status| {
            // span_line's own ending, after an empty attribute list.
            let mut line = Vec::new();
            span_line_tail(
                &mut line,
                status,
                resource,
                crate::telemetry::TRACER_NAME,
                "",
            );
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

    pub(crate) fn evaluate(
        &self,
        buf: &mut Vec<u8>,
        span: &SpanLine<'_>,
        id: &str,
        reason: Option<&str>,
    ) {
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

    pub(crate) fn publish(
        &self,
        buf: &mut Vec<u8>,
        span: &SpanLine<'_>,
        message_id: &str,
        failed: bool,
    ) {
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
