//! The export queue and its thread: requests already encoded as protobuf queued by the loop
//! (and by the batch processor's exporter, [`SdkSpans`]) and sent one at a time, requests
//! queued while one was in flight joined into one.
//!
//! Invariant: [`Exporter::send`] never blocks: a request that would take the queue past
//! `OTEL_BSP_MAX_QUEUE_SIZE` spans is dropped.

use super::config::OtlpConfig;
use super::request::Request;
use super::send;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
        batch: &crate::telemetry::BatchSettings,
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
                        crate::telemetry::report::warn_once(&failing, &result);
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
