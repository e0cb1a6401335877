//! One request, sent with retries: an HTTP POST (reqwest) or a gRPC unary call (tonic, the
//! body passed through as it is), errors worded as `opentelemetry-otlp` words them (they reach
//! the export-failure WARN).

use super::Protocol;
use super::config::OtlpConfig;
use super::request::Request;
use super::retry::{Next, with_retries};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use prost::bytes::{Buf as _, BufMut as _};
use std::time::Duration;

/// The transport of one exporter.
pub(crate) enum Client {
    Http {
        client: reqwest::Client,
        url: String,
        headers: http::HeaderMap,
        timeout: Duration,
    },
    Grpc {
        channel: tonic::transport::Channel,
        metadata: tonic::metadata::MetadataMap,
        timeout: Duration,
    },
    /// The client could not be built: every export fails with this.
    Broken(String),
}

impl Client {
    /// The client of `config` (inside the export thread's runtime: the gRPC channel's
    /// background task runs there).
    pub(crate) fn new(config: OtlpConfig) -> Client {
        match config.protocol {
            Protocol::HttpProtobuf => {
                match reqwest::Client::builder().timeout(config.timeout).build() {
                    Ok(client) => Client::Http {
                        client,
                        url: config.endpoint,
                        headers: config.headers,
                        timeout: config.timeout,
                    },
                    Err(e) => Client::Broken(format!("failed to build the HTTP client: {e}")),
                }
            }
            Protocol::Grpc => match tonic::transport::Endpoint::from_shared(config.endpoint) {
                Ok(endpoint) => Client::Grpc {
                    channel: endpoint.timeout(config.timeout).connect_lazy(),
                    metadata: tonic::metadata::MetadataMap::from_headers(config.headers),
                    timeout: config.timeout,
                },
                Err(e) => Client::Broken(format!("invalid endpoint: {e}")),
            },
        }
    }

    /// Sends one `ExportTraceServiceRequest`.
    pub(crate) async fn export(&self, body: Request) -> OTelSdkResult {
        match self {
            Client::Http {
                client,
                url,
                headers,
                timeout,
            } => {
                let body = body.into_bytes();
                with_retries(*timeout, "HttpTracesClient.Export", classify_http, || {
                    post(client, url, headers, body.clone())
                })
                .await
                .map_err(|e| OTelSdkError::InternalFailure(e.message))
            }
            Client::Grpc {
                channel,
                metadata,
                timeout,
            } => {
                let body = body.into_bytes();
                with_retries(*timeout, "TonicTracesClient.Export", classify_grpc, || {
                    unary(channel.clone(), metadata.clone(), body.clone())
                })
                .await
                .map_err(|status| {
                    let mut message = format!(
                        "TonicTracesClient export failed with gRPC code: {:?}",
                        status.code()
                    );
                    if let Some(source) = std::error::Error::source(&status) {
                        message.push_str(": ");
                        message.push_str(&super::source_chain(source));
                    }
                    OTelSdkError::InternalFailure(message)
                })
            }
            Client::Broken(e) => Err(OTelSdkError::InternalFailure(e.clone())),
        }
    }
}

/// A failed POST: its status (0 for no response), `Retry-After`, and the message.
struct HttpError {
    status: u16,
    retry_after: Option<String>,
    message: String,
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &http::HeaderMap,
    body: prost::bytes::Bytes,
) -> Result<(), HttpError> {
    let response = client
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/x-protobuf")
        .headers(headers.clone())
        .body(body)
        .send()
        .await
        .map_err(|_| HttpError {
            status: 0,
            retry_after: None,
            message: "HTTP export failed: network error".to_string(),
        })?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        // The answer (a possible partial success) is read, a chunk at a time and not kept
        // (a collector's answer of any length holds no memory), and not acted on.
        let mut response = response;
        while let Ok(Some(_)) = response.chunk().await {}
        return Ok(());
    }
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Err(HttpError {
        status,
        retry_after,
        message: format!("HTTP export failed with status code: {status}"),
    })
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
    body: prost::bytes::Bytes,
) -> Result<(), tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
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
    grpc.unary::<_, (), _>(request, path, Raw).await.map(drop)
}

/// A codec passing encoded request bytes through and skipping the response's.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl tonic::codec::Codec for Raw {
    type Encode = prost::bytes::Bytes;
    type Decode = ();
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
    type Item = prost::bytes::Bytes;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: prost::bytes::Bytes,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = ();
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<()>, tonic::Status> {
        src.advance(src.remaining());
        Ok(Some(()))
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
}
