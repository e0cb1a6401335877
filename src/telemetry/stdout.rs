//! The stdout exporter: one JSON object per span per line, shaped like the Go sentinel's stdout
//! exporter (`Name`, `SpanContext`, `Parent`, `SpanKind`, `StartTime`, `EndTime`, `Attributes`,
//! `Status`, `Resource`, `InstrumentationScope`), for the SDK's spans ([`JsonLinesExporter`])
//! and, a page at a time, for the per-resource spans (`lines`).
//!
//! Invariant: a line is the bytes `serde_json` gave for the same object
//! (`span_lines_are_serde_jsons`).

use super::report::{Loss, Reports};
use crate::common::textfmt::{hex_into, json_str, rfc3339_utc};
use opentelemetry::Value;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::io::Write;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

pub(crate) mod lines;

/// The stdout exporter's writer and resource, shared by the batch processor's exporter (the
/// SDK's spans) and `Sink::JsonLines` (the resource spans).
pub(crate) struct JsonLinesOut {
    out: Mutex<Box<dyn Write + Send>>,
    /// The resource's `[…]` JSON, written into every line.
    resource: RwLock<Arc<[u8]>>,
    /// Where failed writes are reported.
    reports: Arc<Reports>,
}

impl std::fmt::Debug for JsonLinesOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonLinesOut")
    }
}

impl JsonLinesOut {
    pub(crate) fn resource(&self) -> Arc<[u8]> {
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

    /// Writes `bytes` in one write, telling the operator when writes start and stop failing.
    pub(crate) fn write(&self, bytes: &[u8]) -> OTelSdkResult {
        let result = self.write_all(bytes);
        match &result {
            Ok(()) => self.reports.recovered(),
            Err(e) => {
                let spans = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
                self.reports
                    .report(Loss::ExportFailed, 1, spans, &e.to_string());
            }
        }
        result
    }

    fn write_all(&self, bytes: &[u8]) -> OTelSdkResult {
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
        JsonLinesExporter::reporting(out, Arc::default())
    }

    /// Writes to `out`, failed writes reported to `reports` (the provider's).
    pub(crate) fn reporting(
        out: Box<dyn Write + Send>,
        reports: Arc<Reports>,
    ) -> JsonLinesExporter {
        JsonLinesExporter {
            out: Arc::new(JsonLinesOut {
                out: Mutex::new(out),
                resource: RwLock::new(Arc::from(&b"[]"[..])),
                reports,
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
pub(crate) fn span_line_tail(
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

/// One `{"Key":…,"Value":{"Type":"STRING","Value":…}}` of a string attribute.
pub(crate) fn string_attribute(buf: &mut Vec<u8>, first: bool, key: &str, value: &str) {
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
    use crate::telemetry::testing::resource;
    use opentelemetry::trace::{TraceFlags, TraceId, TraceState};
    use opentelemetry::{InstrumentationScope, KeyValue};
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};
    use std::borrow::Cow;
    use std::time::Duration;

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
}
