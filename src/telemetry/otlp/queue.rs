//! The export queue and its thread: requests already encoded as protobuf queued by the loop
//! (and by the batch processor's exporter, [`SdkSpans`]) and sent one at a time by a thread
//! of its own (a current-thread runtime: the loop's thread blocked or busy never holds an
//! export), requests queued while one was in flight joined into one.
//!
//! A collector that asks the exporter to wait (`Retry-After`, gRPC `RetryInfo`) longer than a
//! request can is honoured by the whole exporter: nothing is sent until the delay has passed,
//! requests wait in the queue meanwhile (those that would overflow it are dropped), and a
//! shutdown during the wait drops what is queued rather than send it. Every loss (failed,
//! throttled, rejected by a partial success, dropped for a full queue) is counted and reported
//! (`telemetry::report`).
//!
//! Invariant: [`Exporter::send`] never blocks: a request that would take the queue past
//! `OTEL_BSP_MAX_QUEUE_SIZE` spans is dropped and counted.

use super::config::OtlpConfig;
use super::request::Request;
use super::send::{Client, Failure};
use crate::telemetry::report::{Loss, REPORT_INTERVAL, Reports};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

/// A queued request and how many spans it holds.
enum Job {
    Export {
        body: Request,
        spans: usize,
    },
    /// Answered once every request queued before it has been tried (or dropped).
    Flush(std::sync::mpsc::Sender<()>),
}

/// The queue and its sending thread. See the module docs.
#[derive(Debug)]
pub struct Exporter {
    jobs: mpsc::UnboundedSender<Job>,
    /// Spans queued and not yet tried.
    queued: Arc<AtomicUsize>,
    max_queue: usize,
    closed: Arc<AtomicBool>,
    /// Wakes the thread from a collector's wait when the exporter shuts down.
    closing: Arc<Notify>,
    reports: Arc<Reports>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl Exporter {
    /// Starts the sending thread over `config` (with TLS `tls`, `None` for plaintext); losses
    /// go to `reports`. The queue holds at most `batch.max_queue_size` spans; requests queued
    /// while one was sent go out together, up to `batch.max_export_batch_size` spans.
    pub(crate) fn start(
        config: OtlpConfig,
        tls: Option<Arc<rustls::ClientConfig>>,
        batch: &crate::telemetry::BatchSettings,
        reports: Arc<Reports>,
    ) -> std::io::Result<Exporter> {
        let (jobs, rx) = mpsc::unbounded_channel::<Job>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let exporter = Exporter {
            jobs,
            queued: Arc::default(),
            max_queue: batch.max_queue_size,
            closed: Arc::default(),
            closing: Arc::default(),
            reports,
            thread: Mutex::new(None),
        };
        let mut sender = Sender {
            rx,
            next: None,
            max_batch: batch.max_export_batch_size,
            queued: exporter.queued.clone(),
            closed: exporter.closed.clone(),
            closing: exporter.closing.clone(),
            reports: exporter.reports.clone(),
            paused_until: None,
        };
        let thread = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let client = Client::new(config, tls);
                    sender.run(&client).await;
                });
            })?;
        if let Ok(mut t) = exporter.thread.lock() {
            *t = Some(thread);
        }
        Ok(exporter)
    }

    /// Queues a request of `spans` spans; drops it when the queue is full or shut down.
    pub fn send(&self, body: Request, spans: usize) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let before = self.queued.fetch_add(spans, Ordering::Relaxed);
        if before + spans > self.max_queue {
            self.queued.fetch_sub(spans, Ordering::Relaxed);
            let error = format!("the queue holds {} spans at most", self.max_queue);
            self.reports
                .report(Loss::QueueFull, 1, spans as u64, &error);
            return;
        }
        if self.jobs.send(Job::Export { body, spans }).is_err() {
            self.queued.fetch_sub(spans, Ordering::Relaxed);
        }
    }

    /// Sends what is queued, waiting at most `timeout`; later requests are dropped. What was
    /// lost and not reported yet is reported now.
    pub fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        if self.closed.swap(true, Ordering::Relaxed) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        self.closing.notify_one();
        let (done, flushed) = std::sync::mpsc::channel();
        if self.jobs.send(Job::Flush(done)).is_err() {
            return Err(OTelSdkError::InternalFailure("export thread gone".into()));
        }
        let result = match flushed.recv_timeout(timeout) {
            Ok(()) => {
                // The thread is idle: it ends when the handle drops the channel.
                if let Ok(mut t) = self.thread.lock() {
                    t.take();
                }
                Ok(())
            }
            Err(_) => Err(OTelSdkError::Timeout(timeout)),
        };
        self.reports.flush();
        result
    }
}

/// The export thread's side of the queue.
struct Sender {
    rx: mpsc::UnboundedReceiver<Job>,
    /// A job taken while joining requests that could not join.
    next: Option<Job>,
    max_batch: usize,
    queued: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
    closing: Arc<Notify>,
    reports: Arc<Reports>,
    /// No request is sent before this (a collector's requested delay).
    paused_until: Option<Instant>,
}

impl Sender {
    /// Sends until the exporter is dropped; reports what is due at least once per interval.
    async fn run(&mut self, client: &Client) {
        loop {
            let job = match self.next.take() {
                Some(job) => job,
                None => match tokio::time::timeout(REPORT_INTERVAL, self.rx.recv()).await {
                    Ok(Some(job)) => job,
                    Ok(None) => break,
                    Err(_) => {
                        self.reports.tick();
                        continue;
                    }
                },
            };
            let (body, spans) = match job {
                Job::Export { body, spans } => self.join(body, spans),
                Job::Flush(done) => {
                    let _ = done.send(());
                    continue;
                }
            };
            self.wait_out_pause().await;
            if self.paused_until.is_some() {
                // Shut down while the collector asked to wait: not sent.
                let error = "shut down while the collector asked the exporter to wait";
                self.reports.report(Loss::Throttled, 1, spans as u64, error);
            } else {
                self.export(client, body, spans).await;
            }
            self.queued.fetch_sub(spans, Ordering::Relaxed);
            self.reports.tick();
        }
    }

    /// `body` and the requests queued behind it, up to the export batch: two requests end to
    /// end are one request with the spans of both (protobuf merges repeated fields).
    fn join(&mut self, mut body: Request, mut spans: usize) -> (Request, usize) {
        while let Ok(job) = self.rx.try_recv() {
            match job {
                Job::Export {
                    body: more,
                    spans: n,
                } if spans + n <= self.max_batch => {
                    body.append(&more);
                    spans += n;
                }
                other => {
                    self.next = Some(other);
                    break;
                }
            }
        }
        (body, spans)
    }

    /// Sleeps until the collector's delay has passed, reporting meanwhile; returns early, the
    /// pause kept, when the exporter shuts down.
    async fn wait_out_pause(&mut self) {
        while let Some(until) = self.paused_until {
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            let tick = Instant::now() + REPORT_INTERVAL;
            tokio::select! {
                () = tokio::time::sleep_until(until.min(tick)) => {
                    if Instant::now() >= until {
                        self.paused_until = None;
                    }
                    self.reports.tick();
                }
                () = self.closing.notified() => {}
            }
        }
    }

    /// Sends one request and reports what it lost.
    async fn export(&mut self, client: &Client, body: Request, spans: usize) {
        match client.export(body).await {
            Ok(None) => self.reports.recovered(),
            Ok(Some(rejected)) => {
                self.reports.recovered();
                let message = rejected.to_string();
                self.reports
                    .report(Loss::Rejected, 1, rejected.spans, &message);
            }
            Err(Failure {
                message,
                throttle: Some(delay),
            }) => {
                self.paused_until = Some(Instant::now() + delay);
                let error = format!("{message} (asked to wait {}s)", delay.as_secs());
                self.reports
                    .report(Loss::Throttled, 1, spans as u64, &error);
            }
            Err(Failure {
                message,
                throttle: None,
            }) => {
                self.reports
                    .report(Loss::ExportFailed, 1, spans as u64, &message);
            }
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
