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
//! Gives [`Exporter`]: [`Exporter::send`] never blocks and drops a request when the queue holds
//! `OTEL_BSP_MAX_QUEUE_SIZE` spans already; [`Exporter::shutdown`] waits for the queue to drain.
//! Invariant: the cycle never waits on the collector.

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use std::str::FromStr as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `User-Agent` `opentelemetry-otlp` 0.33.1 sends (and collectors may have been told of).
const USER_AGENT: &str = "OTel-OTLP-Exporter-Rust/0.33.1";
/// The timeout when the environment gives none.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(10_000);
const DEFAULT_HTTP_ENDPOINT: &str = "http://localhost:4318";
const DEFAULT_GRPC_ENDPOINT: &str = "http://localhost:4317";
const TRACES_PATH: &str = "/v1/traces";

/// How the requests travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP POST with an `application/x-protobuf` body.
    HttpProtobuf,
    /// gRPC `opentelemetry.proto.collector.trace.v1.TraceService/Export`.
    Grpc,
}

/// Where and how requests go, as read from the environment.
#[derive(Clone, Debug)]
pub struct OtlpConfig {
    protocol: Protocol,
    /// The traces URL (HTTP) or the gRPC endpoint.
    endpoint: String,
    /// Sent with every request (the default `User-Agent` first, then the environment's).
    headers: HeaderMap,
    timeout: Duration,
}

/// The exporter could not be configured (the message names the variable).
#[derive(Debug, thiserror::Error)]
#[error("invalid exporter configuration: {0}")]
pub struct ConfigError(String);

/// The environment as `std::env::var` reads it.
pub type Env<'a> = &'a dyn Fn(&str) -> Result<String, std::env::VarError>;

/// A variable that must be Unicode: unset or empty is `None`.
fn read(env: Env<'_>, name: &str) -> Result<Option<String>, ConfigError> {
    match env(name) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(ConfigError(format!(
            "{name}: environment variable value is not valid Unicode"
        ))),
    }
}

impl OtlpConfig {
    /// Reads the traces exporter's variables through `env`; see the module docs.
    pub fn from_env(protocol: Protocol, env: Env<'_>) -> Result<OtlpConfig, ConfigError> {
        let endpoint = match protocol {
            Protocol::HttpProtobuf => http_endpoint(env)?,
            Protocol::Grpc => grpc_endpoint(env)?,
        };
        let timeout = [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]
        .into_iter()
        .find_map(|name| env(name).ok().and_then(|v| v.parse::<u64>().ok()))
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(USER_AGENT),
        );
        // A set traces variable wins even when empty, as the crate reads it.
        if let Ok(text) =
            env("OTEL_EXPORTER_OTLP_TRACES_HEADERS").or_else(|_| env("OTEL_EXPORTER_OTLP_HEADERS"))
        {
            for (key, value) in parse_headers(&text) {
                if let (Ok(k), Ok(v)) = (HeaderName::from_str(key), HeaderValue::from_str(&value)) {
                    headers.insert(k, v);
                }
            }
        }
        Ok(OtlpConfig {
            protocol,
            endpoint,
            headers,
            timeout,
        })
    }
}

/// `…_TRACES_ENDPOINT` as given, else `…_ENDPOINT` with `/v1/traces` (one slash between).
fn http_endpoint(env: Env<'_>) -> Result<String, ConfigError> {
    let (name, given, url) = if let Some(url) = read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")? {
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url.clone(), url)
    } else {
        let base = read(env, "OTEL_EXPORTER_OTLP_ENDPOINT")?
            .unwrap_or_else(|| DEFAULT_HTTP_ENDPOINT.to_string());
        let path = if base.ends_with('/') {
            &TRACES_PATH[1..]
        } else {
            TRACES_PATH
        };
        let url = format!("{base}{path}");
        ("OTEL_EXPORTER_OTLP_ENDPOINT", base, url)
    };
    match url.parse::<http::Uri>() {
        Ok(_) => Ok(url),
        Err(e) => Err(ConfigError(format!(
            "{name}: invalid endpoint '{given}': {e}"
        ))),
    }
}

/// `…_TRACES_ENDPOINT`, else `…_ENDPOINT`, with `http://` (insecure) or `https://` put in
/// front of one without a scheme; `https` is refused (no TLS, as the crate was built).
fn grpc_endpoint(env: Env<'_>) -> Result<String, ConfigError> {
    let (name, endpoint) = match read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")? {
        Some(e) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", e),
        None => match read(env, "OTEL_EXPORTER_OTLP_ENDPOINT")? {
            Some(e) => ("OTEL_EXPORTER_OTLP_ENDPOINT", e),
            None => ("endpoint", DEFAULT_GRPC_ENDPOINT.to_string()),
        },
    };
    let has_scheme = endpoint
        .split_once("://")
        .is_some_and(|(scheme, _)| !scheme.contains(['/', '?', '#']));
    let insecure = env("OTEL_EXPORTER_OTLP_TRACES_INSECURE")
        .or_else(|_| env("OTEL_EXPORTER_OTLP_INSECURE"))
        .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let endpoint = match (has_scheme, insecure) {
        (true, _) => endpoint,
        (false, true) => format!("http://{endpoint}"),
        (false, false) => format!("https://{endpoint}"),
    };
    let parsed = tonic::transport::Endpoint::from_shared(endpoint.clone()).map_err(|e| {
        ConfigError(format!(
            "{name}: invalid endpoint '{endpoint}': {}",
            source_chain(&e)
        ))
    })?;
    if parsed.uri().scheme() == Some(&http::uri::Scheme::HTTPS) {
        return Err(ConfigError(format!(
            "{name}: endpoint '{endpoint}' uses HTTPS but no TLS feature is enabled; enable one \
             of the `tls-ring`, `tls-aws-lc`, or `tls-provider-agnostic` features on \
             `opentelemetry-otlp`"
        )));
    }
    Ok(endpoint)
}

/// `key=value` pairs separated by commas, values percent-decoded (kept as written when the
/// decoding fails); pairs with an empty key or value are left out.
fn parse_headers(text: &str) -> impl Iterator<Item = (&str, String)> {
    text.split_terminator(',')
        .map(str::trim)
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let (key, value) = (key.trim(), value.trim());
            let value = url_decode(value).unwrap_or_else(|| value.to_string());
            (!key.is_empty() && !value.is_empty()).then_some((key, value))
        })
}

/// `%XX` escapes decoded; `None` when an escape is cut short or not hex, or the bytes are not
/// UTF-8 (where the crate's decoder answers `None`, the value is kept as written).
fn url_decode(value: &str) -> Option<String> {
    let escapes_whole = value.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_whole {
        return None;
    }
    percent_encoding::percent_decode_str(value)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

fn source_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut next = err.source();
    while let Some(cur) = next {
        out.push_str(": ");
        out.push_str(&cur.to_string());
        next = cur.source();
    }
    out
}

mod send;

/// A queued request and how many spans it holds.
enum Job {
    Export {
        body: Request,
        spans: usize,
    },
    /// Answered once every request queued before it has been tried.
    Flush(std::sync::mpsc::Sender<()>),
}

/// The queue and its sending thread. See the module docs.
#[derive(Debug)]
pub struct Exporter {
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    /// Spans queued and not yet tried.
    queued: Arc<AtomicUsize>,
    max_queue: usize,
    closed: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Exporter {
    /// Starts the sending thread; a failed export sets `failing` and logs one WARN (see
    /// `telemetry::warn_once`). The queue holds at most `batch.max_queue_size` spans; requests
    /// queued while one was sent go out together, up to `batch.max_export_batch_size` spans.
    pub fn start(
        config: OtlpConfig,
        batch: &super::BatchSettings,
        failing: Arc<AtomicBool>,
    ) -> std::io::Result<Exporter> {
        let (max_queue, max_batch) = (batch.max_queue_size, batch.max_export_batch_size);
        let (jobs, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let queued = Arc::new(AtomicUsize::new(0));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let in_queue = queued.clone();
        let thread = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let client = send::Client::new(config);
                    let mut next = None;
                    loop {
                        let job = match next.take() {
                            Some(job) => job,
                            None => match rx.recv().await {
                                Some(job) => job,
                                None => break,
                            },
                        };
                        let (mut body, mut spans) = match job {
                            Job::Export { body, spans } => (body, spans),
                            Job::Flush(done) => {
                                let _ = done.send(());
                                continue;
                            }
                        };
                        // Two requests end to end are one request with the spans of both
                        // (protobuf merges repeated fields).
                        while let Ok(job) = rx.try_recv() {
                            match job {
                                Job::Export {
                                    body: more,
                                    spans: n,
                                } if spans + n <= max_batch => {
                                    body.append(&more);
                                    spans += n;
                                }
                                other => {
                                    next = Some(other);
                                    break;
                                }
                            }
                        }
                        let result = client.export(body).await;
                        in_queue.fetch_sub(spans, Ordering::Relaxed);
                        super::warn_once(&failing, &result);
                    }
                });
            })?;
        Ok(Exporter {
            jobs,
            queued,
            max_queue,
            closed: AtomicBool::new(false),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues a request of `spans` spans; drops it when the queue is full or shut down.
    pub fn send(&self, body: Request, spans: usize) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let before = self.queued.fetch_add(spans, Ordering::Relaxed);
        if before + spans > self.max_queue {
            self.queued.fetch_sub(spans, Ordering::Relaxed);
            return;
        }
        if self.jobs.send(Job::Export { body, spans }).is_err() {
            self.queued.fetch_sub(spans, Ordering::Relaxed);
        }
    }

    /// Sends what is queued, waiting at most `timeout`; later requests are dropped.
    pub fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        if self.closed.swap(true, Ordering::Relaxed) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        let (done, flushed) = std::sync::mpsc::channel();
        if self.jobs.send(Job::Flush(done)).is_err() {
            return Err(OTelSdkError::InternalFailure("export thread gone".into()));
        }
        match flushed.recv_timeout(timeout) {
            Ok(()) => {
                // The thread is idle: it ends when the handle drops the channel.
                if let Ok(mut t) = self.thread.lock() {
                    t.take();
                }
                Ok(())
            }
            Err(_) => Err(OTelSdkError::Timeout(timeout)),
        }
    }
}

/// The batch span processor's exporter (the poll span, the API GETs): each batch encoded as
/// the SDK's OTLP exporter encodes it, and queued with the resource spans' requests.
#[derive(Debug)]
pub struct SdkSpans {
    exporter: Arc<Exporter>,
    resource: opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema,
}

impl SdkSpans {
    /// Queues onto `exporter`.
    pub fn new(exporter: Arc<Exporter>) -> SdkSpans {
        SdkSpans {
            exporter,
            resource: Default::default(),
        }
    }
}

/// `spans` as the `ExportTraceServiceRequest` the SDK's OTLP exporter sends.
pub(crate) fn sdk_request(
    spans: Vec<opentelemetry_sdk::trace::SpanData>,
    resource: &opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema,
) -> Vec<u8> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use prost::Message as _;
    let resource_spans = group_spans_by_resource_and_scope(spans, resource);
    ExportTraceServiceRequest { resource_spans }.encode_to_vec()
}

impl opentelemetry_sdk::trace::SpanExporter for SdkSpans {
    async fn export(&self, batch: Vec<opentelemetry_sdk::trace::SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let request = Request::whole(sdk_request(batch, &self.resource));
        self.exporter.send(request, spans);
        Ok(())
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.resource = resource.into();
    }
}

/// Retry policy of `opentelemetry-otlp` (its `RetryPolicy::recommended`).
struct Retry;

impl Retry {
    const MAX_RETRIES: usize = 3;
    const INITIAL: Duration = Duration::from_millis(100);
    const MAX_DELAY: Duration = Duration::from_millis(1600);
    const MAX_JITTER_MS: u64 = 100;
    /// The longest delay a server may ask for.
    const MAX_THROTTLE: Duration = Duration::from_secs(30);
}

/// What a failed attempt allows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Next {
    Stop,
    Retry,
    /// Retry after the server's delay.
    Throttled(Duration),
}

/// Runs `attempt` until it succeeds, says stop, retries run out or `deadline` passes; logs
/// what `opentelemetry-otlp` logged (target `opentelemetry-otlp`, WARN) when it gives up.
async fn with_retries<T, E, F, Fut>(
    deadline: Duration,
    operation: &'static str,
    classify: impl Fn(&E) -> Next,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    let mut tries = 0;
    let mut delay = Retry::INITIAL;
    let mut cap = Retry::MAX_DELAY;
    loop {
        let err = match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if start.elapsed() >= deadline {
            tracing::warn!(name: "Export.Failed.DeadlineExceeded", target: "opentelemetry-otlp",
                name = "Export.Failed.DeadlineExceeded", operation, retries = tries,
                elapsed_ms = start.elapsed().as_millis(),
                message = "OTLP export deadline exceeded - telemetry data will be lost");
            return Err(err);
        }
        let next = classify(&err);
        if next == Next::Stop {
            tracing::warn!(name: "Export.Failed.NonRetryable", target: "opentelemetry-otlp",
                name = "Export.Failed.NonRetryable", operation,
                message = "OTLP export failed with non-retryable error - telemetry data will be lost");
            return Err(err);
        }
        if tries >= Retry::MAX_RETRIES {
            tracing::warn!(name: "Export.Failed.Exhausted", target: "opentelemetry-otlp",
                name = "Export.Failed.Exhausted", operation, retries = tries,
                message = "OTLP export exhausted retries - telemetry data will be lost");
            return Err(err);
        }
        tries += 1;
        if let Next::Throttled(asked) = next {
            let asked = asked.min(Retry::MAX_THROTTLE);
            if asked > cap {
                cap = Retry::MAX_THROTTLE;
            }
            if !asked.is_zero() {
                delay = delay.max(asked);
            }
        }
        let jitter = Duration::from_millis(fastrand::u64(..=Retry::MAX_JITTER_MS));
        let sleep = delay.saturating_add(jitter).min(cap);
        if sleep >= deadline.saturating_sub(start.elapsed()) {
            let message = match next {
                Next::Throttled(_) => {
                    "OTLP export deadline exceeded during throttle - telemetry data will be lost"
                }
                _ => "OTLP export deadline exceeded during backoff - telemetry data will be lost",
            };
            tracing::warn!(name: "Export.Failed.DeadlineExceeded", target: "opentelemetry-otlp",
                name = "Export.Failed.DeadlineExceeded", operation, retries = tries, message);
            return Err(err);
        }
        tokio::time::sleep(sleep).await;
        delay = delay.saturating_mul(2).min(cap);
    }
}

/// An encoded `ExportTraceServiceRequest`, after the unused part of its buffer.
#[derive(Debug)]
pub struct Request {
    buf: Vec<u8>,
    /// Where the message starts in `buf`.
    at: usize,
}

impl Request {
    /// The message that starts at `at` in `buf`.
    pub(crate) fn at(buf: Vec<u8>, at: usize) -> Request {
        Request { buf, at }
    }

    /// A message that is all of `buf`.
    pub fn whole(buf: Vec<u8>) -> Request {
        Request { buf, at: 0 }
    }

    /// The message.
    pub fn message(&self) -> &[u8] {
        &self.buf[self.at..]
    }

    /// Appends the resource spans of `other` (protobuf merges repeated fields: the two
    /// requests end to end are one request with the spans of both).
    pub fn append(&mut self, other: &Request) {
        self.buf.extend_from_slice(other.message());
    }

    /// The message as shared bytes, without a copy.
    pub fn into_bytes(self) -> prost::bytes::Bytes {
        prost::bytes::Bytes::from(self.buf).slice(self.at..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Result<String, std::env::VarError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned().ok_or(std::env::VarError::NotPresent)
    }

    fn config(protocol: Protocol, vars: &[(&str, &str)]) -> Result<OtlpConfig, ConfigError> {
        OtlpConfig::from_env(protocol, &env(vars))
    }

    #[test]
    fn endpoints_as_the_crate_resolves_them() {
        use Protocol::*;
        type Vars<'a> = &'a [(&'a str, &'a str)];
        let cases: [(Protocol, Vars<'_>, &str); 8] = [
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c/otlp")],
                "http://c/otlp/v1/traces",
            ),
            (
                HttpProtobuf,
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
                ],
                "http://t:1/x",
            ),
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")],
                "http://localhost:4318/v1/traces",
            ),
            (
                Grpc,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")],
                "http://c:4317",
            ),
            (
                Grpc,
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4317"),
                    ("OTEL_EXPORTER_OTLP_INSECURE", "TRUE"),
                ],
                "http://c:4317",
            ),
            (
                Grpc,
                &[
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9"),
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ],
                "http://t:9",
            ),
        ];
        for (protocol, vars, want) in cases {
            let c = config(protocol, vars).expect("valid");
            assert_eq!(c.endpoint, want, "{vars:?}");
        }
        // No scheme and not insecure: https, which has no TLS here.
        let e = config(Grpc, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4317")]).expect_err("https");
        assert!(e.to_string().contains("uses HTTPS"), "{e}");
        let e = config(
            HttpProtobuf,
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a b")],
        )
        .expect_err("bad URL");
        assert!(e.to_string().starts_with("invalid exporter configuration: OTEL_EXPORTER_OTLP_ENDPOINT: invalid endpoint 'http://a b'"), "{e}");
    }

    #[test]
    fn headers_and_timeout() {
        let c = config(
            Protocol::HttpProtobuf,
            &[
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "a=1, api-key = s%20e%2Ccret ,bad, =x,empty=,pct=%zz",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ],
        )
        .expect("valid");
        let pairs: Vec<(String, String)> = c
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("user-agent".to_string(), USER_AGENT.to_string()),
                ("a".to_string(), "1".to_string()),
                ("api-key".to_string(), "s e,cret".to_string()),
                ("pct".to_string(), "%zz".to_string()),
            ]
        );
        assert_eq!(c.timeout, Duration::from_millis(2500));
        // The traces variables win, an empty traces header list included.
        let c = config(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", ""),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "x"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "300"),
            ],
        )
        .expect("valid");
        assert_eq!(c.headers.len(), 1);
        assert_eq!(c.timeout, Duration::from_millis(300));
        let c = config(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
            ],
        )
        .expect("valid");
        assert_eq!(c.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn header_values_decode_as_the_crate_decodes_them() {
        for (value, want) in [
            ("a%20b", Some("a b")),
            ("%e2%9c%93", Some("✓")),
            ("100%", None),
            ("%4", None),
            ("%zz", None),
            ("%ff", None),
            ("plain", Some("plain")),
        ] {
            assert_eq!(url_decode(value).as_deref(), want, "{value}");
        }
    }

    proptest::proptest! {
        /// Whatever the variables say, reading them answers (an error at worst).
        #[test]
        fn any_environment_reads(
            endpoint in ".{0,40}",
            headers in ".{0,60}",
            timeout in ".{0,12}",
            insecure in proptest::bool::ANY,
        ) {
            for protocol in [Protocol::HttpProtobuf, Protocol::Grpc] {
                let insecure = if insecure { "true" } else { "false" };
                let _ = config(protocol, &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
                    ("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str()),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", timeout.as_str()),
                    ("OTEL_EXPORTER_OTLP_INSECURE", insecure),
                ]);
            }
        }
    }
}
