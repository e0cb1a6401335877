//! What the exporters tell the operator about themselves: one WARN when exports start failing
//! and one INFO when they work again ([`warn_once`]), for the provider's exporter as for the
//! sentinel's own writes ([`WarnOnce`]).
//!
//! Takes export results; gives log lines. Invariant: an outage is one WARN, not a line per
//! batch.

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// An exporter that logs one WARN when exports start failing (an unreachable collector) and one
/// INFO when they work again, instead of nothing or a line per batch. The flag is shared with
/// the resource spans' own writes to stdout; `None` passes results through unlogged.
#[derive(Debug)]
pub(crate) struct WarnOnce<E> {
    pub(crate) inner: E,
    pub(crate) failing: Option<Arc<AtomicBool>>,
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Some(failing) = &self.failing {
            warn_once(failing, &result);
        }
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

/// Logs one WARN when exports start failing and one INFO when they work again.
pub(crate) fn warn_once(failing: &AtomicBool, result: &OTelSdkResult) {
    match result {
        Err(e) if !failing.swap(true, Ordering::Relaxed) => {
            tracing::warn!(error = %e, "Failed to export OpenTelemetry spans; spans are dropped until the exporter recovers");
        }
        Ok(()) if failing.swap(false, Ordering::Relaxed) => {
            tracing::info!("OpenTelemetry span export recovered");
        }
        _ => {}
    }
}
