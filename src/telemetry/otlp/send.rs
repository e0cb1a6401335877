//! One request, sent with retries: an HTTP POST (reqwest) or a gRPC unary call (tonic, the
//! body passed through as it is, its answer decoded), over TLS when the configuration says so
//! (`tls`), gzipped when it says so (on the export thread: HTTP here, gRPC in tonic's codec).
//! What the collector answers is read for a partial success; what a failure says reaches the
//! export thread's reports.

use super::config::OtlpConfig;
use super::request::Request;
use super::retry::{GaveUp, Next, with_retries};
use super::{Protocol, source_chain};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message as _;
use prost::bytes::{Buf as _, BufMut as _, Bytes};
use std::sync::Arc;
use std::time::Duration;

/// The most bytes of a collector's answer read (Go's `maxResponseBodySize`: 4 MiB).
const MAX_RESPONSE: usize = 4 << 20;

/// The transport of one exporter.
pub(crate) enum Client {
    Http {
        client: reqwest::Client,
        url: String,
        headers: http::HeaderMap,
        timeout: Duration,
        gzip: bool,
    },
    Grpc {
        channel: tonic::transport::Channel,
        metadata: tonic::metadata::MetadataMap,
        timeout: Duration,
        gzip: bool,
    },
    /// The client could not be built: every export fails with this.
    Broken(String),
}

/// A collector's partial success: spans it rejected and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub(crate) spans: u64,
    pub(crate) message: String,
}

impl Rejected {
    /// The answer's partial success, when it says something (Go's `TracePartialSuccessError`).
    fn of(answer: &ExportTraceServiceResponse) -> Option<Rejected> {
        let partial = answer.partial_success.as_ref()?;
        let spans = u64::try_from(partial.rejected_spans).unwrap_or(0);
        (spans != 0 || !partial.error_message.is_empty()).then(|| Rejected {
            spans,
            message: partial.error_message.clone(),
        })
    }
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = match self.message.as_str() {
            "" => "empty message",
            m => m,
        };
        write!(
            f,
            "OTLP partial success: {message} ({} spans rejected)",
            self.spans
        )
    }
}

/// A request that failed: what the failure said, and the delay the collector asked for.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) throttle: Option<Duration>,
}

impl Client {
    /// The client of `config` with TLS `tls` (inside the export thread's runtime: the gRPC
    /// channel's background task runs there).
    pub(crate) fn new(config: OtlpConfig, tls: Option<Arc<rustls::ClientConfig>>) -> Client {
        let url = config.url(tls.is_some());
        match config.protocol {
            Protocol::HttpProtobuf => {
                let mut builder = reqwest::Client::builder().timeout(config.timeout);
                if let Some(tls) = tls {
                    builder = builder.use_preconfigured_tls(Arc::unwrap_or_clone(tls));
                }
                match builder.build() {
                    Ok(client) => Client::Http {
                        client,
                        url,
                        headers: config.headers,
                        timeout: config.timeout,
                        gzip: config.gzip,
                    },
                    Err(e) => Client::Broken(format!("failed to build the HTTP client: {e}")),
                }
            }
            // The channel is given the plaintext URL (TLS is the connector's, whatever tonic's
            // features), and the real one as the requests' origin (`:scheme https`).
            Protocol::Grpc => match tonic::transport::Endpoint::from_shared(config.url(false)) {
                Ok(endpoint) => Client::Grpc {
                    channel: match url.parse() {
                        Ok(origin) => endpoint.origin(origin),
                        Err(_) => endpoint,
                    }
                    .timeout(config.timeout)
                    .connect_with_connector_lazy(super::tls::Connector { tls }),
                    metadata: tonic::metadata::MetadataMap::from_headers(config.headers),
                    timeout: config.timeout,
                    gzip: config.gzip,
                },
                Err(e) => Client::Broken(format!("invalid endpoint: {e}")),
            },
        }
    }

    /// Sends one `ExportTraceServiceRequest`; a partial success is `Ok(Some(_))`.
    pub(crate) async fn export(&self, body: Request) -> Result<Option<Rejected>, Failure> {
        match self {
            Client::Http {
                client,
                url,
                headers,
                timeout,
                gzip,
            } => {
                let body = if *gzip {
                    gzipped(body.message())
                } else {
                    body.into_bytes()
                };
                with_retries(*timeout, classify_http, || {
                    post(client, url, headers, *gzip, body.clone())
                })
                .await
                .map_err(|GaveUp { error, throttle }| Failure {
                    message: error.message,
                    throttle,
                })
            }
            Client::Grpc {
                channel,
                metadata,
                timeout,
                gzip,
            } => {
                let body = body.into_bytes();
                with_retries(*timeout, classify_grpc, || {
                    unary(channel.clone(), metadata.clone(), *gzip, body.clone())
                })
                .await
                .map(|answer| Rejected::of(&answer))
                .map_err(|GaveUp { error, throttle }| Failure {
                    message: grpc_message(&error),
                    throttle,
                })
            }
            Client::Broken(e) => Err(Failure {
                message: e.clone(),
                throttle: None,
            }),
        }
    }
}

/// A gRPC failure as `opentelemetry-otlp` words it.
fn grpc_message(status: &tonic::Status) -> String {
    let mut message = format!(
        "TonicTracesClient export failed with gRPC code: {:?}",
        status.code()
    );
    if !status.message().is_empty() {
        message.push_str(": ");
        message.push_str(status.message());
    }
    if let Some(source) = std::error::Error::source(status) {
        message.push_str(": ");
        message.push_str(&source_chain(source));
    }
    message
}

/// `message` gzipped at the default level (Go's `gzip.NewWriter`).
fn gzipped(message: &[u8]) -> Bytes {
    use std::io::Write as _;
    let mut out = flate2::write::GzEncoder::new(
        Vec::with_capacity(message.len() / 4),
        flate2::Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = out.write_all(message);
    Bytes::from(out.finish().unwrap_or_default())
}

/// A failed POST: its status (0 for no response), `Retry-After`, and the message.
struct HttpError {
    status: u16,
    retry_after: Option<String>,
    message: String,
}

impl HttpError {
    fn other(message: String) -> HttpError {
        HttpError {
            status: 0,
            retry_after: None,
            message,
        }
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &http::HeaderMap,
    gzip: bool,
    body: Bytes,
) -> Result<Option<Rejected>, HttpError> {
    let mut request = client
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/x-protobuf")
        .headers(headers.clone());
    if gzip {
        request = request.header(http::header::CONTENT_ENCODING, "gzip");
    }
    let mut response = request.body(body).send().await.map_err(|e| {
        HttpError::other(format!(
            "HTTP export failed: {}",
            source_chain(&e.without_url())
        ))
    })?;
    let status = response.status().as_u16();
    if !response.status().is_success() {
        let retry_after = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        return Err(HttpError {
            status,
            retry_after,
            message: format!("HTTP export failed with status code: {status}"),
        });
    }
    let protobuf = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/x-protobuf");
    // The answer, up to Go's bound: a longer one fails the request, as in Go.
    let mut answer = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| HttpError::other(format!("reading the answer: {e}")))?
    {
        if answer.len() + chunk.len() > MAX_RESPONSE {
            return Err(HttpError::other(format!(
                "response body too large: exceeded {MAX_RESPONSE} bytes"
            )));
        }
        answer.extend_from_slice(&chunk);
    }
    if !protobuf || answer.is_empty() {
        return Ok(None);
    }
    ExportTraceServiceResponse::decode(answer.as_slice())
        .map(|answer| Rejected::of(&answer))
        .map_err(|e| HttpError::other(format!("decoding the answer: {e}")))
}

/// 429 and 503 wait for `Retry-After` (seconds or an HTTP date, at most 600 s) when given;
/// those, 502, 504 and no answer are retried; anything else is not.
fn classify_http(e: &HttpError) -> Next {
    match e.status {
        429 | 503 => match e.retry_after.as_deref().and_then(retry_after) {
            Some(d) => Next::Throttled(d),
            None => Next::Retry,
        },
        0 | 502 | 504 => Next::Retry,
        _ => Next::Stop,
    }
}

fn retry_after(value: &str) -> Option<Duration> {
    let secs = match value.trim().parse::<u64>() {
        Ok(s) => s,
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
                .as_secs()
        }
    };
    Some(Duration::from_secs(secs.min(600)))
}

/// gRPC codes as the crate classifies them, a `RetryInfo` delay honoured.
fn classify_grpc(status: &tonic::Status) -> Next {
    use tonic::Code;
    use tonic_types::StatusExt as _;
    let asked = status
        .get_details_retry_info()
        .and_then(|info| info.retry_delay)
        .map(|d| d.min(Duration::from_secs(600)));
    match status.code() {
        Code::ResourceExhausted => asked.map_or(Next::Stop, Next::Throttled),
        Code::Unavailable => asked
            .filter(|d| !d.is_zero())
            .map_or(Next::Retry, Next::Throttled),
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::DataLoss => Next::Retry,
        _ => Next::Stop,
    }
}

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

async fn unary(
    channel: tonic::transport::Channel,
    metadata: tonic::metadata::MetadataMap,
    gzip: bool,
    body: Bytes,
) -> Result<ExportTraceServiceResponse, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    if gzip {
        grpc = grpc.send_compressed(tonic::codec::CompressionEncoding::Gzip);
    }
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unknown(format!("Service was not ready: {e}")))?;
    let mut request = tonic::Request::new(body);
    *request.metadata_mut() = metadata;
    request.extensions_mut().insert(tonic::GrpcMethod::new(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        "Export",
    ));
    let path = http::uri::PathAndQuery::from_static(EXPORT_PATH);
    grpc.unary(request, path, Raw)
        .await
        .map(tonic::Response::into_inner)
}

/// A codec passing encoded request bytes through and decoding the answer.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl tonic::codec::Codec for Raw {
    type Encode = Bytes;
    type Decode = ExportTraceServiceResponse;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl tonic::codec::Encoder for Raw {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Bytes,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = ExportTraceServiceResponse;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<ExportTraceServiceResponse>, tonic::Status> {
        let answer = ExportTraceServiceResponse::decode(src.copy_to_bytes(src.remaining()))
            .map_err(|e| tonic::Status::internal(format!("decoding the answer: {e}")))?;
        Ok(Some(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_answers_are_classified_as_the_crate_does() {
        let e = |status, retry_after: Option<&str>| HttpError {
            status,
            retry_after: retry_after.map(str::to_string),
            message: String::new(),
        };
        assert_eq!(classify_http(&e(0, None)), Next::Retry);
        assert_eq!(classify_http(&e(502, None)), Next::Retry);
        assert_eq!(classify_http(&e(503, None)), Next::Retry);
        assert_eq!(
            classify_http(&e(429, Some("30"))),
            Next::Throttled(Duration::from_secs(30))
        );
        assert_eq!(
            classify_http(&e(503, Some("900"))),
            Next::Throttled(Duration::from_secs(600))
        );
        assert_eq!(classify_http(&e(429, Some("soon"))), Next::Retry);
        assert_eq!(classify_http(&e(400, Some("1"))), Next::Stop);
        assert_eq!(classify_http(&e(500, None)), Next::Stop);
        assert_eq!(classify_grpc(&tonic::Status::unavailable("x")), Next::Retry);
        assert_eq!(
            classify_grpc(&tonic::Status::resource_exhausted("x")),
            Next::Stop
        );
        assert_eq!(classify_grpc(&tonic::Status::internal("x")), Next::Stop);
        assert_eq!(classify_grpc(&tonic::Status::aborted("x")), Next::Retry);
    }

    #[test]
    fn partial_successes_are_worded_as_go_words_them() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess;
        let answer = |rejected_spans, message: &str| ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans,
                error_message: message.to_string(),
            }),
        };
        assert_eq!(Rejected::of(&ExportTraceServiceResponse::default()), None);
        assert_eq!(
            Rejected::of(&answer(0, "")),
            None,
            "an empty one is a success"
        );
        let rejected = Rejected::of(&answer(3, "too old")).expect("partial");
        assert_eq!(
            rejected.to_string(),
            "OTLP partial success: too old (3 spans rejected)"
        );
        let rejected = Rejected::of(&answer(2, "")).expect("partial");
        assert_eq!(
            rejected.to_string(),
            "OTLP partial success: empty message (2 spans rejected)"
        );
    }
}
