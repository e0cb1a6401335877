//! Test OTLP trace receivers: one over HTTP/protobuf (`POST /v1/traces`, axum) and one over gRPC
//! (a tonic `TraceService`), both on 127.0.0.1:0, decoding with `opentelemetry-proto`'s
//! generated types. Every span received is kept, flattened with its resource.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// One received span with the attributes of its resource, ids as lowercase hex.
#[derive(Clone, Debug)]
pub struct ReceivedSpan {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    /// The OTLP kind number (1 internal, 3 client).
    pub kind: i32,
    pub attributes: Vec<(String, String)>,
    /// The OTLP status code (0 unset, 1 ok, 2 error) and message.
    pub status: (i32, String),
    pub resource: Vec<(String, String)>,
    pub scope: String,
}

impl ReceivedSpan {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn resource_attr(&self, key: &str) -> Option<&str> {
        self.resource
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn pairs(kvs: &[KeyValue]) -> Vec<(String, String)> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

/// The spans received so far, shared by a receiver and the test.
#[derive(Clone, Default)]
pub struct Spans(Arc<Mutex<Vec<ReceivedSpan>>>);

impl Spans {
    pub fn all(&self) -> Vec<ReceivedSpan> {
        self.0.lock().expect("spans").clone()
    }

    pub fn named(&self, name: &str) -> Vec<ReceivedSpan> {
        self.all().into_iter().filter(|s| s.name == name).collect()
    }

    fn add(&self, request: ExportTraceServiceRequest) {
        let mut spans = self.0.lock().expect("spans");
        for rs in request.resource_spans {
            let resource = rs
                .resource
                .map(|r| pairs(&r.attributes))
                .unwrap_or_default();
            for ss in rs.scope_spans {
                let scope = ss.scope.map(|s| s.name).unwrap_or_default();
                for span in ss.spans {
                    spans.push(ReceivedSpan {
                        name: span.name,
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        kind: span.kind,
                        attributes: pairs(&span.attributes),
                        status: span.status.map(|s| (s.code, s.message)).unwrap_or_default(),
                        resource: resource.clone(),
                        scope: scope.clone(),
                    });
                }
            }
        }
    }
}

/// A running receiver: where to point the exporter, and what it received.
pub struct Receiver {
    pub addr: SocketAddr,
    pub spans: Spans,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An OTLP/HTTP receiver: `POST /v1/traces` with an `application/x-protobuf` body.
pub async fn http_receiver() -> Receiver {
    use axum::body::Bytes;
    use axum::extract::State;
    use prost::Message as _;
    let spans = Spans::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the OTLP/HTTP receiver");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(|State(spans): State<Spans>, body: Bytes| async move {
                match ExportTraceServiceRequest::decode(body) {
                    Ok(request) => {
                        spans.add(request);
                        let response = ExportTraceServiceResponse::default().encode_to_vec();
                        (
                            axum::http::StatusCode::OK,
                            [("content-type", "application/x-protobuf")],
                            response,
                        )
                    }
                    Err(e) => (
                        axum::http::StatusCode::BAD_REQUEST,
                        [("content-type", "text/plain")],
                        e.to_string().into_bytes(),
                    ),
                }
            }),
        )
        .with_state(spans.clone());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Receiver { addr, spans, task }
}

struct Collector(Spans);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.add(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// An OTLP/gRPC receiver (the collector's TraceService).
pub async fn grpc_receiver() -> Receiver {
    let spans = Spans::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the OTLP/gRPC receiver");
    let addr = listener.local_addr().expect("addr");
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let service = TraceServiceServer::new(Collector(spans.clone()));
    let task = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await;
    });
    Receiver { addr, spans, task }
}
