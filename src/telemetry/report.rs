//! What the exporters tell the operator about themselves: spans lost to failed exports, to a
//! collector that asked the exporter to wait, to a collector that rejected some of a request
//! (a partial success), and to a full queue.
//!
//! Takes each loss as it happens ([`Reports::report`], from any thread); gives log lines: the
//! first loss of a kind is a WARN at once, with its error and counts; later ones are counted
//! and written as one WARN per kind per [`REPORT_INTERVAL`] with the counts since the previous
//! line ([`Reports::tick`] writes what is due when nothing new comes), and what is still
//! counted at shutdown is written then ([`Reports::flush`]). When exports work again after a
//! failure WARN, one INFO says so ([`Reports::recovered`]). The provider's own exporter (the
//! stdout writer, the tests' exporters) reports through [`Reported`].
//!
//! Invariant: at most one WARN per kind per interval, however many exports fail.

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The least time between two WARNs of one kind.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(60);

/// One kind of loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loss {
    /// A request failed after its retries (or could not be retried), or a write failed.
    ExportFailed,
    /// The collector asked the exporter to wait (429 or 503 with `Retry-After`, gRPC
    /// `RESOURCE_EXHAUSTED` or `UNAVAILABLE` with `RetryInfo`) longer than the request could.
    Throttled,
    /// The collector accepted a request but rejected some of its spans (a partial success).
    Rejected,
    /// The queue held `OTEL_BSP_MAX_QUEUE_SIZE` spans already.
    QueueFull,
}

const KINDS: [Loss; 4] = [
    Loss::ExportFailed,
    Loss::Throttled,
    Loss::Rejected,
    Loss::QueueFull,
];

impl Loss {
    fn index(self) -> usize {
        self as usize
    }
}

/// What one line says: the kind, the requests and spans since the kind's previous line, and the
/// last error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) loss: Loss,
    pub(crate) requests: u64,
    pub(crate) spans: u64,
    pub(crate) error: String,
}

impl Line {
    fn log(&self, exporter: &str) {
        let (requests, spans, error) = (self.requests, self.spans, self.error.as_str());
        match self.loss {
            Loss::ExportFailed => tracing::warn!(
                error,
                exporter,
                failed_requests = requests,
                dropped_spans = spans,
                "Failed to export OpenTelemetry spans; spans are dropped until the exporter recovers"
            ),
            Loss::Throttled => tracing::warn!(
                error,
                exporter,
                throttled_requests = requests,
                dropped_spans = spans,
                "OpenTelemetry collector asked the exporter to wait; exports are paused"
            ),
            Loss::Rejected => tracing::warn!(
                error,
                exporter,
                partial_successes = requests,
                rejected_spans = spans,
                "OpenTelemetry collector rejected spans"
            ),
            Loss::QueueFull => tracing::warn!(
                error,
                exporter,
                dropped_requests = requests,
                dropped_spans = spans,
                "OpenTelemetry span queue is full; spans are dropped"
            ),
        }
    }
}

/// The counts of one kind since its last line.
#[derive(Debug, Default)]
struct Tally {
    requests: u64,
    spans: u64,
    error: String,
    /// When the kind's last line was written.
    logged_at: Option<Instant>,
}

/// The losses of one exporter, counted and reported; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Reports {
    /// The exporter's name in every line: its URL, or `stdout`.
    exporter: String,
    tallies: [Mutex<Tally>; 4],
    /// An `ExportFailed` WARN was written and no export has worked since.
    failing: AtomicBool,
}

impl Reports {
    /// The reports of the exporter named `exporter` (its URL, or `stdout`).
    pub(crate) fn new(exporter: impl Into<String>) -> Reports {
        Reports {
            exporter: exporter.into(),
            ..Reports::default()
        }
    }

    /// Counts a loss of `requests` requests holding `spans` spans, with its error; writes its line
    /// when one is due.
    pub(crate) fn report(&self, loss: Loss, requests: u64, spans: u64, error: &str) {
        if let Some(line) = self.report_at(loss, requests, spans, error, Instant::now()) {
            line.log(&self.exporter);
        }
    }

    fn report_at(
        &self,
        loss: Loss,
        requests: u64,
        spans: u64,
        error: &str,
        now: Instant,
    ) -> Option<Line> {
        let mut tally = self.tallies[loss.index()]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        tally.requests += requests;
        tally.spans += spans;
        error.clone_into(&mut tally.error);
        self.due(loss, &mut tally, now)
    }

    /// The line of `tally` when one is due at `now` (the kind's first, or an interval after
    /// its last), its counts then started again.
    fn due(&self, loss: Loss, tally: &mut Tally, now: Instant) -> Option<Line> {
        let counted = tally.requests > 0 || tally.spans > 0;
        let due = tally
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= REPORT_INTERVAL);
        if !(counted && due) {
            return None;
        }
        tally.logged_at = Some(now);
        if loss == Loss::ExportFailed {
            self.failing.store(true, Ordering::Relaxed);
        }
        Some(take(loss, tally))
    }

    /// Writes the lines that came due with no new loss (the export thread calls it at least
    /// once per interval).
    pub(crate) fn tick(&self) {
        for line in self.tick_at(Instant::now()) {
            line.log(&self.exporter);
        }
    }

    fn tick_at(&self, now: Instant) -> Vec<Line> {
        KINDS
            .iter()
            .filter_map(|&loss| {
                let mut tally = self.tallies[loss.index()]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                self.due(loss, &mut tally, now)
            })
            .collect()
    }

    /// Writes every count not written yet, due or not (at shutdown).
    pub(crate) fn flush(&self) {
        for line in self.flush_lines() {
            line.log(&self.exporter);
        }
    }

    fn flush_lines(&self) -> Vec<Line> {
        KINDS
            .iter()
            .filter_map(|&loss| {
                let mut tally = self.tallies[loss.index()]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                (tally.requests > 0 || tally.spans > 0).then(|| take(loss, &mut tally))
            })
            .collect()
    }

    /// An export worked: after a failure WARN, one INFO with what failed since that WARN.
    pub(crate) fn recovered(&self) {
        if let Some((requests, spans)) = self.recover() {
            tracing::info!(
                exporter = self.exporter,
                failed_requests = requests,
                dropped_spans = spans,
                "OpenTelemetry span export recovered"
            );
        }
    }

    fn recover(&self) -> Option<(u64, u64)> {
        if !self.failing.swap(false, Ordering::Relaxed) {
            return None;
        }
        let mut tally = self.tallies[Loss::ExportFailed.index()]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let line = take(Loss::ExportFailed, &mut tally);
        Some((line.requests, line.spans))
    }
}

/// The line of `tally`'s counts, which start again from zero.
fn take(loss: Loss, tally: &mut Tally) -> Line {
    let line = Line {
        loss,
        requests: tally.requests,
        spans: tally.spans,
        error: std::mem::take(&mut tally.error),
    };
    tally.requests = 0;
    tally.spans = 0;
    line
}

/// The provider's exporter, its failures reported: one `ExportFailed` per failed batch (the
/// stdout writer's and the tests' exporters; the OTLP exporter's thread reports for itself).
#[derive(Debug)]
pub(crate) struct Reported<E> {
    pub(crate) inner: E,
    pub(crate) reports: Arc<Reports>,
}

impl<E: SpanExporter> SpanExporter for Reported<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.inner.export(batch).await;
        self.reports.result(&result, spans);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl Reports {
    /// Reports the result of exporting (or writing) `spans` spans.
    pub(crate) fn result(&self, result: &OTelSdkResult, spans: u64) {
        match result {
            Ok(()) => self.recovered(),
            Err(e) => self.report(Loss::ExportFailed, 1, spans, &e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_kind_per_interval_with_the_counts_since_the_last() {
        let reports = Reports::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let line = |loss, requests, spans, error: &str| Line {
            loss,
            requests,
            spans,
            error: error.to_string(),
        };
        // The first loss of a kind is written at once.
        assert_eq!(
            reports.report_at(Loss::ExportFailed, 1, 10, "refused", at(0)),
            Some(line(Loss::ExportFailed, 1, 10, "refused"))
        );
        // More within the interval are counted, each kind on its own.
        for s in 1..50 {
            assert_eq!(
                reports.report_at(Loss::ExportFailed, 1, 10, "reset", at(s)),
                None
            );
        }
        assert_eq!(
            reports.report_at(Loss::QueueFull, 2, 5, "queue of 4 spans", at(3)),
            Some(line(Loss::QueueFull, 2, 5, "queue of 4 spans"))
        );
        // Nothing due before the interval; then the counts since the last line.
        assert!(reports.tick_at(at(59)).is_empty());
        assert_eq!(
            reports.tick_at(at(60)),
            [line(Loss::ExportFailed, 49, 490, "reset")]
        );
        assert!(reports.tick_at(at(200)).is_empty(), "nothing counted since");
        // A loss after a quiet interval is written at once.
        assert_eq!(
            reports.report_at(Loss::ExportFailed, 1, 1, "x", at(200)),
            Some(line(Loss::ExportFailed, 1, 1, "x"))
        );
        assert_eq!(reports.report_at(Loss::QueueFull, 1, 1, "q", at(62)), None);
        assert_eq!(
            reports.flush_lines(),
            [line(Loss::QueueFull, 1, 1, "q")],
            "what is counted is written at shutdown"
        );
        assert!(reports.flush_lines().is_empty());
    }

    #[test]
    fn recovery_follows_a_written_failure_once() {
        let reports = Reports::default();
        let t0 = Instant::now();
        assert_eq!(reports.recover(), None, "nothing failed");
        reports.report_at(Loss::ExportFailed, 1, 3, "e", t0);
        reports.report_at(Loss::ExportFailed, 1, 4, "e", t0);
        assert_eq!(
            reports.recover(),
            Some((1, 4)),
            "what failed after the WARN"
        );
        assert_eq!(reports.recover(), None);
        // A failure within the interval is counted without a WARN, so no INFO follows it.
        reports.report_at(Loss::ExportFailed, 1, 5, "e", t0 + Duration::from_secs(1));
        assert_eq!(reports.recover(), None);
        // Throttling, rejections and a full queue are not export failures.
        reports.report_at(Loss::Throttled, 1, 5, "429", t0);
        assert_eq!(reports.recover(), None);
    }
}
