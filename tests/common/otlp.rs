//! Test OTLP trace receivers: one over HTTP/protobuf (`POST /v1/traces`, axum) and one over gRPC
//! (a tonic `TraceService`), both on 127.0.0.1:0, decoding with `opentelemetry-proto`'s
//! generated types (gzipped requests too). Every span received is kept, flattened with its
//! resource. A receiver can answer with a partial success, ask the exporter to wait (429 with
//! `Retry-After`, `RESOURCE_EXHAUSTED` with `RetryInfo`) or fail; serve over TLS requiring a
//! client certificate; and hold its connections unanswered until the test opens it.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// How a receiver answers every export.
#[derive(Clone, Debug, Default)]
pub enum Answer {
    /// Success, the spans kept.
    #[default]
    Success,
    /// A partial success: the spans kept, `rejected` of them said rejected with `message`.
    Partial { rejected: i64, message: String },
    /// HTTP 429 with `Retry-After: <seconds>`; gRPC `RESOURCE_EXHAUSTED` with a `RetryInfo`
    /// of `seconds`.
    Throttle { seconds: u64 },
    /// HTTP 500; gRPC `INTERNAL`: not retried.
    Fail,
}

/// How a receiver is set up.
#[derive(Clone, Default)]
pub struct Options {
    pub answer: Answer,
    /// Serve over TLS with this configuration (which may require client certificates).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Accept no connection until [`Receiver::open`] (connections wait in the listen queue).
    pub gated: bool,
    /// Until [`Receiver::open`], answer every export by asking the exporter to wait a second
    /// (429 `Retry-After: 1`, `RESOURCE_EXHAUSTED` with a `RetryInfo` of 1 s), keeping nothing:
    /// a span arrives only from an exporter that tries again after the opening.
    pub throttled_until_open: bool,
}

/// What a receiver saw: the spans it kept, every request, and each request's encoding.
#[derive(Clone, Default)]
pub struct Seen {
    pub spans: Spans,
    open: Arc<std::sync::atomic::AtomicBool>,
    requests: Arc<AtomicUsize>,
    encodings: Arc<Mutex<Vec<String>>>,
}

impl Seen {
    /// How many export requests arrived (whatever they were answered).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Each request's `Content-Encoding` (HTTP) or `grpc-encoding` (gRPC), `""` for none.
    pub fn encodings(&self) -> Vec<String> {
        self.encodings.lock().expect("encodings").clone()
    }

    fn arrived(&self, encoding: Option<&str>) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        self.encodings
            .lock()
            .expect("encodings")
            .push(encoding.unwrap_or_default().to_string());
    }
}

/// A running receiver: where to point the exporter, and what it received.
pub struct Receiver {
    pub addr: SocketAddr,
    pub spans: Spans,
    pub seen: Seen,
    tls: bool,
    gate: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// `http://127.0.0.1:<port>` (`https://localhost:<port>` over TLS, the name the collector's
    /// certificate has).
    pub fn endpoint(&self) -> String {
        match self.tls {
            false => format!("http://{}", self.addr),
            true => format!("https://localhost:{}", self.addr.port()),
        }
    }

    /// Starts accepting connections (a gated receiver's).
    pub fn open(&self) {
        self.seen.open.store(true, Ordering::SeqCst);
        self.gate.notify_one();
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An OTLP/HTTP receiver answering success.
pub async fn http_receiver() -> Receiver {
    http_receiver_with(Options::default()).await
}

/// An OTLP/gRPC receiver answering success.
pub async fn grpc_receiver() -> Receiver {
    grpc_receiver_with(Options::default()).await
}

/// An OTLP/HTTP receiver: `POST /v1/traces` with an `application/x-protobuf` body, gzipped or
/// not.
pub async fn http_receiver_with(options: Options) -> Receiver {
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    let seen = Seen::default();
    let answer = options.answer.clone();
    let held = options.throttled_until_open;
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(
                move |State(seen): State<Seen>, headers: HeaderMap, body: axum::body::Bytes| {
                    let answer = answer.clone();
                    async move {
                        let encoding = headers
                            .get("content-encoding")
                            .and_then(|v| v.to_str().ok());
                        seen.arrived(encoding);
                        let body = match encoding {
                            Some("gzip") => gunzip(&body),
                            _ => Ok(body.to_vec()),
                        };
                        let request = body.and_then(|b| {
                            ExportTraceServiceRequest::decode(b.as_slice())
                                .map_err(|e| e.to_string())
                        });
                        let request = match request {
                            Ok(r) => r,
                            Err(e) => {
                                return http_answer(StatusCode::BAD_REQUEST, &[], e.into_bytes());
                            }
                        };
                        if held && !seen.open.load(Ordering::SeqCst) {
                            let wait = otlp_answer_throttle(1);
                            return http_reply(&seen, request, &wait);
                        }
                        http_reply(&seen, request, &answer)
                    }
                },
            ),
        )
        .with_state(seen.clone());
    start(options, seen, app).await
}

use prost::Message as _;

fn gunzip(body: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

type HttpAnswer = axum::http::Response<axum::body::Body>;

fn http_answer(
    status: axum::http::StatusCode,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> HttpAnswer {
    let mut response = axum::http::Response::builder().status(status);
    for (k, v) in headers {
        response = response.header(*k, v);
    }
    response
        .body(axum::body::Body::from(body))
        .expect("a response")
}

fn http_reply(seen: &Seen, request: ExportTraceServiceRequest, answer: &Answer) -> HttpAnswer {
    use axum::http::StatusCode;
    let protobuf = ("content-type", "application/x-protobuf".to_string());
    match answer {
        Answer::Throttle { seconds } => http_answer(
            StatusCode::TOO_MANY_REQUESTS,
            &[("retry-after", seconds.to_string())],
            Vec::new(),
        ),
        Answer::Fail => http_answer(StatusCode::INTERNAL_SERVER_ERROR, &[], Vec::new()),
        Answer::Success | Answer::Partial { .. } => {
            seen.spans.add(request);
            http_answer(
                StatusCode::OK,
                &[protobuf],
                response(answer).encode_to_vec(),
            )
        }
    }
}

/// The answer's `ExportTraceServiceResponse`.
fn response(answer: &Answer) -> ExportTraceServiceResponse {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess;
    match answer {
        Answer::Partial { rejected, message } => ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans: *rejected,
                error_message: message.clone(),
            }),
        },
        _ => ExportTraceServiceResponse::default(),
    }
}

fn otlp_answer_throttle(seconds: u64) -> Answer {
    Answer::Throttle { seconds }
}

struct Collector(Seen, Answer, bool);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let encoding = request
            .metadata()
            .get("grpc-encoding")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        self.0.arrived(encoding.as_deref());
        let wait = otlp_answer_throttle(1);
        let answer = match self.2 && !self.0.open.load(Ordering::SeqCst) {
            true => &wait,
            false => &self.1,
        };
        match answer {
            Answer::Throttle { seconds } => {
                use tonic_types::{ErrorDetails, StatusExt as _};
                let details =
                    ErrorDetails::with_retry_info(Some(std::time::Duration::from_secs(*seconds)));
                Err(tonic::Status::with_error_details(
                    tonic::Code::ResourceExhausted,
                    "slow down",
                    details,
                ))
            }
            Answer::Fail => Err(tonic::Status::internal("broken")),
            answer => {
                self.0.spans.add(request.into_inner());
                Ok(tonic::Response::new(response(answer)))
            }
        }
    }
}

/// An OTLP/gRPC receiver (the collector's TraceService), accepting gzip.
pub async fn grpc_receiver_with(options: Options) -> Receiver {
    let seen = Seen::default();
    let service = TraceServiceServer::new(Collector(
        seen.clone(),
        options.answer.clone(),
        options.throttled_until_open,
    ))
    .accept_compressed(tonic::codec::CompressionEncoding::Gzip);
    start(options, seen, service).await
}

/// A stream of either kind.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// Serves `service` on 127.0.0.1:0 as `options` say: HTTP/1 or HTTP/2, over TLS or not, from
/// the start or once opened.
async fn start<S, B>(options: Options, seen: Seen, service: S) -> Receiver
where
    S: tower_service::Service<
            axum::http::Request<hyper::body::Incoming>,
            Response = axum::http::Response<B>,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the OTLP receiver");
    let addr = listener.local_addr().expect("addr");
    let gate = Arc::new(tokio::sync::Notify::new());
    let tls = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let opened = gate.clone();
    let gated = options.gated;
    let task = tokio::spawn(async move {
        if gated {
            opened.notified().await;
        }
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (service, tls) = (service.clone(), tls.clone());
            tokio::spawn(async move {
                let io: Box<dyn Io> = match tls {
                    None => Box::new(tcp),
                    Some(acceptor) => match acceptor.accept(tcp).await {
                        Ok(stream) => Box::new(stream),
                        Err(_) => return,
                    },
                };
                let builder = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                );
                let _ = builder
                    .serve_connection(
                        hyper_util::rt::TokioIo::new(io),
                        hyper_util::service::TowerToHyperService::new(service),
                    )
                    .await;
            });
        }
    });
    Receiver {
        addr,
        spans: seen.spans.clone(),
        seen,
        tls: options.tls.is_some(),
        gate,
        task,
    }
}
