//! In-process publishing: each event is encoded exactly as for RabbitMQ and handed to a
//! [`MessageSink`] in the same process (the simulation's broker, or a test's collector).
//!
//! Takes a sink; gives [`MemoryPublisher`], which [`super::Publisher::Memory`] wraps so the
//! daemon's publish path is the same code as for RabbitMQ up to the `Publisher` boundary.
//!
//! Invariant: a publish never blocks; the sink's answer is the event's result.

use super::{Outbound, PublishError};
use std::sync::Arc;

/// Where an in-process publisher delivers message bodies.
pub trait MessageSink: Send + Sync {
    /// Takes one message: the structured CloudEvent body (the bytes RabbitMQ would carry) and
    /// the event id (the `_watermill_message_uuid` header). Must not block.
    fn deliver(&self, event_id: uuid::Uuid, body: &[u8]) -> Result<(), String>;
}

/// Publishes events to a [`MessageSink`] in the same process.
pub struct MemoryPublisher {
    sink: Arc<dyn MessageSink>,
    buf: Vec<u8>,
}

impl MemoryPublisher {
    /// A publisher delivering to `sink`.
    pub fn new(sink: Arc<dyn MessageSink>) -> MemoryPublisher {
        MemoryPublisher {
            sink,
            buf: Vec::with_capacity(1024),
        }
    }

    /// Encodes and delivers each event in order; one result per event.
    pub fn publish_batch<M: Outbound>(&mut self, messages: &[M]) -> Vec<Result<(), PublishError>> {
        messages
            .iter()
            .map(|m| {
                let event = m.event();
                self.buf.clear();
                event.encode_into(&mut self.buf);
                self.sink
                    .deliver(event.id, &self.buf)
                    .map_err(PublishError::Memory)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::event::Event;
    use std::sync::Mutex;

    struct Collect(Mutex<Vec<Vec<u8>>>);

    impl MessageSink for Collect {
        fn deliver(&self, _id: uuid::Uuid, body: &[u8]) -> Result<(), String> {
            if body.is_empty() {
                return Err("empty".into());
            }
            self.0.lock().unwrap().push(body.to_vec());
            Ok(())
        }
    }

    #[test]
    fn delivers_the_wire_bytes_in_order() {
        let sink = Arc::new(Collect(Mutex::new(Vec::new())));
        let mut publisher = MemoryPublisher::new(sink.clone());
        let events = [
            Event::new("Cluster", serde_json::json!({"id": "a"})),
            Event::new("Cluster", serde_json::json!({"id": "b"})),
        ];
        let results = publisher.publish_batch(&events);
        assert!(results.iter().all(Result::is_ok));
        let got = sink.0.lock().unwrap();
        assert_eq!(got[0], events[0].to_bytes());
        assert_eq!(got[1], events[1].to_bytes());
    }
}
