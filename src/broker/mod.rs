//! Event publishing: broker.yaml, then a [`Publisher`] that puts [`Event`]s on RabbitMQ or
//! Google Cloud Pub/Sub (or stdout, or an in-process [`MessageSink`]) exactly as the Go
//! sentinel does.
//!
//! Takes a validated [`BrokerConfig`] and the topic (`clients.broker.topic`); gives a publisher
//! whose [`Publisher::publish_batch`] reports one result per event. Startup errors are
//! [`BrokerError`]s (fatal); per-event errors are [`PublishError`]s (counted and logged by the
//! caller, never fatal).
//!
//! Invariant: no publish call blocks without bound. While the broker is unreachable publishes
//! fail fast, and reconnects are attempted on later publishes with exponential backoff.

use crate::broker::event::Event;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod config;
pub mod event;
mod io;
mod memory;
mod pubsub;
mod rabbit;

pub use config::{BrokerConfig, BrokerKind, ExchangeType, RabbitConfig};
pub use memory::{MemoryPublisher, MessageSink};
pub use pubsub::{
    EMULATOR_HOST_VAR, HEALTH_PROBE_TOPIC, PubSubOptions, PubSubPublisher, UUID_ATTRIBUTE,
    emulator_endpoint, topic_path,
};
pub use rabbit::{RabbitOptions, RabbitPublisher, TlsParams, check_frame_reader};

/// A startup problem: the configuration cannot be found, read or accepted, or the broker cannot
/// be reached. Fatal.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// No broker.yaml at any of the searched paths and no `BROKER_*` variable set.
    #[error(
        "no broker configuration: no broker.yaml found (tried {tried}) and no BROKER_* environment \
         variable set; set BROKER_CONFIG_FILE, or BROKER_TYPE=stdout for development"
    )]
    NotFound {
        /// The paths tried, comma-separated.
        tried: String,
    },
    /// The file exists (or was named by `BROKER_CONFIG_FILE`) but cannot be read.
    #[error("cannot read broker configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration has problems, one per line.
    #[error("invalid broker configuration ({origin}):\n  {}", problems.join("\n  "))]
    Invalid {
        /// The file path, or `environment`.
        origin: String,
        /// One lowercase message per problem, naming the key.
        problems: Vec<String>,
    },
    /// The Google Cloud Pub/Sub clients cannot be created (no credentials, a bad endpoint).
    #[error("cannot create google pub/sub client for project '{project}': {reason}")]
    PubSubConnect {
        /// `broker.googlepubsub.project_id`.
        project: String,
        /// The client's error.
        reason: String,
    },
    /// The exchange name would be empty or too long.
    #[error("invalid exchange name '{name}': {reason}")]
    Exchange {
        /// The name (the topic, or `broker.rabbitmq.exchange`).
        name: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// The first connection to RabbitMQ failed.
    #[error("cannot connect to rabbitmq at {url}: {reason}")]
    Connect {
        /// The URL with the password masked.
        url: String,
        /// The connection error.
        reason: String,
    },
}

/// Why one event was not published. Every variant counts as metric `error_type="publish_error"`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// The broker is down and the next reconnect attempt (for Pub/Sub: the next health probe)
    /// is not due yet.
    #[error("broker unavailable ({reason}); next reconnect attempt in {retry_in:?}")]
    Unavailable {
        /// The last connection error.
        reason: String,
        /// Time until the next reconnect attempt.
        retry_in: Duration,
    },
    /// Connecting (or reopening the channel) failed just now.
    #[error("cannot connect to rabbitmq: {0}")]
    Connect(String),
    /// Declaring the exchange failed (e.g. it exists with another type).
    #[error("cannot declare exchange '{exchange}': {reason}")]
    Declare {
        /// The exchange name.
        exchange: String,
        /// The broker's answer.
        reason: String,
    },
    /// Writing the message failed (connection or channel lost).
    #[error("publish failed: {0}")]
    Publish(String),
    /// The broker negatively acknowledged the message.
    #[error("broker rejected the message (nack)")]
    Nacked,
    /// Waiting for the broker's confirm failed (connection or channel lost before the ack).
    #[error("publish not confirmed: {0}")]
    Unconfirmed(String),
    /// No confirm within the bound; the connection is dropped and re-established.
    #[error("no publisher confirm within {0:?}")]
    ConfirmTimeout(Duration),
    /// The broker blocks publishing on the connection (`connection.blocked`, a resource alarm):
    /// nothing is written until it unblocks; the connection is kept. Logged once per alarm by
    /// the publisher, not per event.
    #[error(
        "rabbitmq blocks publishing ({0}); the event is published by a cycle after it unblocks"
    )]
    Blocked(String),
    /// Writing to stdout failed.
    #[error("cannot write event to stdout: {0}")]
    Stdout(String),
    /// The Pub/Sub topic does not exist and `create_topic_if_missing` is false.
    #[error(
        "topic '{topic}' does not exist (create it, or set broker.googlepubsub.create_topic_if_missing)"
    )]
    TopicMissing {
        /// The full topic name.
        topic: String,
    },
    /// Pub/Sub refused or failed the request (the client's error).
    #[error("google pub/sub publish failed: {0}")]
    PubSub(String),
    /// Pub/Sub returned no message id within the bound.
    #[error("no google pub/sub publish response within {0:?}")]
    PublishTimeout(Duration),
    /// The in-process sink refused the message.
    #[error("in-process delivery failed: {0}")]
    Memory(String),
}

impl PublishError {
    /// The `error_type` metric label for this error.
    pub fn error_type(&self) -> &'static str {
        "publish_error"
    }

    /// Whether the publisher has already logged the cause once (a resource alarm), so that the
    /// caller counts the event but does not log it again.
    pub fn logged_by_publisher(&self) -> bool {
        matches!(self, PublishError::Blocked(_))
    }
}

/// Where events go.
pub enum Publisher {
    /// RabbitMQ (boxed: it is much larger than the stdout publisher).
    Rabbit(Box<RabbitPublisher>),
    /// Google Cloud Pub/Sub (boxed, as RabbitMQ).
    PubSub(Box<PubSubPublisher>),
    /// JSON lines on stdout.
    Stdout(StdoutPublisher),
    /// A sink in the same process (`sentinel simulate`, tests).
    Memory(MemoryPublisher),
}

/// Opens the configured publisher; for RabbitMQ the first connection must succeed, for Pub/Sub
/// the clients must be created (credentials found; `PUBSUB_EMULATOR_HOST` selects the emulator).
///
/// `topic` names the exchange unless `broker.rabbitmq.exchange` sets a static one, and the
/// Pub/Sub topic `projects/<project_id>/topics/<topic>`.
pub async fn connect(cfg: &BrokerConfig, topic: &str) -> Result<Publisher, BrokerError> {
    match cfg.kind {
        BrokerKind::Stdout => Ok(Publisher::Stdout(StdoutPublisher::stdout())),
        BrokerKind::GooglePubSub => {
            let publisher =
                PubSubPublisher::connect(&cfg.googlepubsub, topic, PubSubOptions::from_env())
                    .await?;
            Ok(Publisher::PubSub(Box::new(publisher)))
        }
        BrokerKind::RabbitMq => {
            let publisher =
                RabbitPublisher::connect(&cfg.rabbitmq, topic, RabbitOptions::default()).await?;
            Ok(Publisher::Rabbit(Box::new(publisher)))
        }
    }
}

/// What a publisher publishes: an event, and the key that orders it among others (the
/// resource's id) where the broker orders messages.
pub trait Outbound: Sync {
    /// The event.
    fn event(&self) -> &Event;

    /// Its ordering key, if any.
    fn ordering_key(&self) -> Option<&str> {
        None
    }
}

/// An event alone, without an ordering key.
impl Outbound for Event {
    fn event(&self) -> &Event {
        self
    }
}

impl Publisher {
    /// Publishes the messages' events in order; one result per message, in the same order.
    /// A message's ordering key is used by Pub/Sub with `enable_message_ordering`, unused
    /// elsewhere.
    pub async fn publish_batch<M: Outbound>(
        &mut self,
        messages: &[M],
    ) -> Vec<Result<(), PublishError>> {
        match self {
            Publisher::Rabbit(p) => p.publish_batch(messages).await,
            Publisher::PubSub(p) => p.publish_batch(messages).await,
            Publisher::Stdout(p) => p.publish_batch(messages),
            Publisher::Memory(p) => p.publish_batch(messages),
        }
    }

    /// The OpenTelemetry `messaging.system` of the publish spans: `rabbitmq` (as Go names it);
    /// the stdout and in-process publishers have no standard name and say what they are.
    pub fn messaging_system(&self) -> &'static str {
        match self {
            Publisher::Rabbit(_) => "rabbitmq",
            Publisher::Stdout(_) => "stdout",
            Publisher::Memory(_) => "memory",
            Publisher::PubSub(_) => "gcp_pubsub",
        }
    }

    /// Publishes one event.
    pub async fn publish(&mut self, event: &Event) -> Result<(), PublishError> {
        self.publish_batch(std::slice::from_ref(event))
            .await
            .pop()
            .unwrap_or(Ok(()))
    }

    /// Whether the publisher currently holds a working connection (for health checks).
    pub fn is_connected(&self) -> bool {
        match self {
            Publisher::Rabbit(p) => p.is_connected(),
            Publisher::PubSub(p) => p.is_connected(),
            Publisher::Stdout(_) | Publisher::Memory(_) => true,
        }
    }

    /// A live view of the broker connection for the readiness check: it follows the connection
    /// itself (a drop, a missed heartbeat, a `connection.blocked`), not the last publish.
    pub fn liveness(&self) -> Liveness {
        match self {
            Publisher::Rabbit(p) => p.liveness(),
            Publisher::PubSub(p) => p.liveness(),
            Publisher::Stdout(_) | Publisher::Memory(_) => Liveness::default(),
        }
    }

    /// Re-establishes a lost broker connection (when the reconnect backoff allows), so readiness
    /// recovers even in cycles that publish nothing. A failure is logged, and the next publish
    /// tries again.
    pub async fn reconnect_if_down(&mut self) {
        if let Publisher::Rabbit(p) = self {
            p.reconnect_if_down().await;
        }
    }

    /// Waits (bounded) for outstanding confirms, then closes the connection.
    pub async fn close(&mut self) -> Result<(), PublishError> {
        match self {
            Publisher::Rabbit(p) => p.close().await,
            Publisher::PubSub(p) => p.close().await,
            Publisher::Stdout(p) => p.flush(),
            Publisher::Memory(_) => Ok(()),
        }
    }
}

/// The state of a publisher's broker link, as [`Liveness`] reads it.
#[derive(Clone, Debug)]
pub(crate) enum Link {
    /// No connection (lost, or never established).
    Down,
    /// A connection; its reader keeps the status current (closed on a socket error, a missed
    /// heartbeat or the broker's `connection.close`, blocked while the broker says
    /// `connection.blocked`).
    Up(Arc<ConnectionStatus>),
    /// The outcome of the last health probe (Pub/Sub, whose client holds no connection to
    /// watch): `None` when the broker answered, else what is wrong.
    Probed(Option<String>),
    /// The publisher was closed.
    Closed,
}

/// What readiness needs to know of an AMQP connection, kept current by the connection's driver.
#[derive(Debug, Default)]
pub(crate) struct ConnectionStatus {
    connected: AtomicBool,
    blocked: AtomicBool,
    /// The broker's reason for `connection.blocked`, while blocked.
    blocked_reason: Mutex<Option<String>>,
}

impl ConnectionStatus {
    /// Whether the connection is open.
    pub(crate) fn connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// Whether the broker has said `connection.blocked` (and not yet `unblocked`).
    pub(crate) fn blocked(&self) -> bool {
        self.blocked.load(Ordering::Acquire)
    }

    pub(crate) fn set_connected(&self, connected: bool) {
        self.connected.store(connected, Ordering::Release);
    }

    /// The broker's reason for blocking the connection, while it does.
    pub(crate) fn blocked_reason(&self) -> Option<String> {
        if !self.blocked() {
            return None;
        }
        let reason = self
            .blocked_reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(reason.clone().unwrap_or_default())
    }

    /// `Some(reason)` on `connection.blocked`, `None` on `connection.unblocked`.
    pub(crate) fn set_blocked(&self, reason: Option<String>) {
        let blocked = reason.is_some();
        *self
            .blocked_reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = reason;
        self.blocked.store(blocked, Ordering::Release);
    }
}

/// What readiness says while the broker blocks the connection, before the broker's reason.
pub const BLOCKED: &str = "RabbitMQ connection is blocked by the broker";

/// A live view of a publisher's broker connection, shared with the health server. The default
/// (stdout and in-process publishers) is always healthy.
#[derive(Clone, Debug, Default)]
pub struct Liveness(Option<Arc<Mutex<Link>>>);

impl Liveness {
    pub(crate) fn new(link: Arc<Mutex<Link>>) -> Liveness {
        Liveness(Some(link))
    }

    /// `None` when the connection is healthy, else what is wrong (the Go broker library's
    /// messages where it has one).
    pub fn problem(&self) -> Option<String> {
        let link = self.0.as_ref()?;
        let link = link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let problem = match &*link {
            Link::Probed(problem) => return problem.clone(),
            Link::Closed => "RabbitMQ connection is closed",
            Link::Down => "RabbitMQ connection is not established",
            Link::Up(status) if !status.connected() => "RabbitMQ connection is not established",
            Link::Up(status) => {
                let reason = status.blocked_reason()?;
                return Some(format!("{BLOCKED}: {reason}"));
            }
        };
        Some(problem.to_string())
    }
}

/// Writes each event's JSON body as one line, for development without a broker.
pub struct StdoutPublisher {
    out: Box<dyn Write + Send>,
    buf: Vec<u8>,
}

impl StdoutPublisher {
    /// Writes to the process's stdout.
    pub fn stdout() -> StdoutPublisher {
        StdoutPublisher::to_writer(Box::new(std::io::stdout()))
    }

    /// Writes to any writer (tests).
    pub fn to_writer(out: Box<dyn Write + Send>) -> StdoutPublisher {
        StdoutPublisher {
            out,
            buf: Vec::with_capacity(1024),
        }
    }

    /// Writes one line per event and flushes once at the end.
    pub fn publish_batch<M: Outbound>(&mut self, messages: &[M]) -> Vec<Result<(), PublishError>> {
        let mut results: Vec<Result<(), PublishError>> = messages
            .iter()
            .map(|m| {
                self.buf.clear();
                m.event().encode_into(&mut self.buf);
                self.buf.push(b'\n');
                self.out
                    .write_all(&self.buf)
                    .map_err(|e| PublishError::Stdout(e.to_string()))
            })
            .collect();
        if let Err(e) = self.flush() {
            for r in results.iter_mut().filter(|r| r.is_ok()) {
                *r = Err(e.clone());
            }
        }
        results
    }

    /// Flushes the writer.
    pub fn flush(&mut self) -> Result<(), PublishError> {
        self.out
            .flush()
            .map_err(|e| PublishError::Stdout(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_names_what_is_wrong_with_the_link() {
        assert_eq!(Liveness::default().problem(), None);
        let link = Arc::new(Mutex::new(Link::Down));
        let liveness = Liveness::new(link.clone());
        let not_established = Some("RabbitMQ connection is not established".to_string());
        assert_eq!(liveness.problem(), not_established);
        // A connection its reader has not (or no longer) marked connected.
        let status = Arc::new(ConnectionStatus::default());
        *link.lock().unwrap() = Link::Up(status.clone());
        assert_eq!(liveness.problem(), not_established);
        status.set_connected(true);
        assert_eq!(liveness.problem(), None);
        status.set_blocked(Some("low on memory".to_owned()));
        assert_eq!(
            liveness.problem(),
            Some("RabbitMQ connection is blocked by the broker: low on memory".to_string())
        );
        status.set_blocked(None);
        assert_eq!(liveness.problem(), None);
        *link.lock().unwrap() = Link::Closed;
        assert_eq!(
            liveness.problem(),
            Some("RabbitMQ connection is closed".to_string())
        );
    }
}
