//! The sentinel's own OTLP trace exporter: requests already encoded as protobuf
//! (`ExportTraceServiceRequest` bytes) queued and sent by one thread, over HTTP/protobuf (a
//! POST to the traces endpoint) or gRPC (`TraceService/Export` through tonic with a bytes
//! codec).
//!
//! Takes the `OTEL_EXPORTER_OTLP_*` environment, read as `opentelemetry-otlp` 0.33 reads it
//! (which this exporter replaces, so its requests, headers and log lines are that crate's):
//! the endpoint (`…_TRACES_ENDPOINT` as given, else `…_ENDPOINT` plus `/v1/traces` for HTTP),
//! headers (`…_TRACES_HEADERS`, else `…_HEADERS`), timeout (`…_TRACES_TIMEOUT`, else
//! `…_TIMEOUT`, in ms, default 10 s), insecure (gRPC, `…_TRACES_INSECURE`, else `…_INSECURE`);
//! compression is never applied (the crate was built without it, so every value was ignored),
//! and a gRPC `https` endpoint is an error (built without TLS). A failed request is retried as
//! the crate retries it (three times, backoff from 100 ms to 1.6 s with up to 100 ms of
//! jitter, a server's requested delay honoured, never past the timeout).
//!
//! The parts: `config` (the variables), `encode` (a cycle's resource spans straight to
//! protobuf, and the request's envelope), `request` (the encoded request), `queue` (the queue
//! and its thread), `send` (one request over HTTP or gRPC), `retry` (the retry policy).
//!
//! Gives [`Exporter`]: [`Exporter::send`] never blocks and drops a request when the queue holds
//! `OTEL_BSP_MAX_QUEUE_SIZE` spans already; [`Exporter::shutdown`] waits for the queue to drain.
//! Invariant: the cycle never waits on the collector.

mod config;
mod encode;
mod queue;
mod request;
mod retry;
mod send;
mod tls;

pub use config::{ConfigError, OtlpConfig, UNBOUNDED_TIMEOUT};
pub(crate) use encode::{Envelope, Proto};
pub use queue::{Exporter, SdkSpans};
pub use request::Request;
pub use tls::client_tls;

/// How the requests travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP POST with an `application/x-protobuf` body.
    HttpProtobuf,
    /// gRPC `opentelemetry.proto.collector.trace.v1.TraceService/Export`.
    Grpc,
}

pub(super) fn source_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut next = err.source();
    while let Some(cur) = next {
        out.push_str(": ");
        out.push_str(&cur.to_string());
        next = cur.source();
    }
    out
}
