//! What the room's tests share: an exporter and a writer that keep what they are given, and a
//! resource with a value of every type.

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// An exporter keeping what it is given.
#[derive(Clone, Debug, Default)]
pub(crate) struct Keep(pub(crate) Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Keep {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().expect("lock").extend(batch);
        Ok(())
    }
}

/// A writer keeping what it is given.
#[derive(Clone, Default)]
pub(crate) struct Bytes(pub(crate) Arc<Mutex<Vec<u8>>>);

impl Write for Bytes {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn resource() -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", "s\"1"),
            KeyValue::new("n", 3_i64),
            KeyValue::new("b", true),
            KeyValue::new("f", 1.5),
        ])
        .build()
}
