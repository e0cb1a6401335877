//! The log lines of this test process, written by the sentinel's own [`GoFormat`] JSON
//! formatter into memory.
//!
//! One global subscriber for the whole process: a thread-local one (`set_default`) loses events
//! when other tests hit the same callsites first (tracing caches callsite interest globally).
//! Tests tell their lines apart by the `topic` field, unique per test.

use super::VERSION;
use sentinel::daemon::logging::GoFormat;
use serde_json::Value as Json;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process's logs, capturing from the first call on.
pub fn logs() -> &'static Logs {
    static LOGS: OnceLock<Logs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .event_format(GoFormat::new(true, VERSION))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        logs
    })
}

impl Logs {
    /// Every line so far, as JSON.
    fn json(&self) -> Vec<Json> {
        let bytes = self.0.lock().expect("logs").clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|line| serde_json::from_str::<Json>(line).expect("log lines are JSON"))
            .collect()
    }

    /// The JSON lines so far that `keep` keeps (lines without a topic, e.g. the exporters').
    pub fn matching(&self, keep: impl Fn(&Json) -> bool) -> Vec<Json> {
        self.json().into_iter().filter(keep).collect()
    }

    /// The raw JSON lines logged with `topic` so far.
    pub fn raw(&self, topic: &str) -> Vec<Json> {
        self.json()
            .into_iter()
            .filter(|v| v["topic"] == topic)
            .collect()
    }

    /// `(level, message)` of every line logged with this `topic` so far.
    pub fn lines(&self, topic: &str) -> Vec<(String, String)> {
        self.raw(topic)
            .iter()
            .map(|v| {
                let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (field("level"), field("message"))
            })
            .collect()
    }

    /// Every line logged so far (any topic) with `message`.
    pub fn with_message(&self, message: &str) -> Vec<Json> {
        self.json()
            .into_iter()
            .filter(|v| v["message"] == message)
            .collect()
    }
}

/// The messages of `lines` at `level` that start with `prefix`.
pub fn messages_starting(lines: &[(String, String)], level: &str, prefix: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|(l, m)| l == level && m.starts_with(prefix))
        .map(|(_, m)| m.clone())
        .collect()
}
