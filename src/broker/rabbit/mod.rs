//! RabbitMQ publishing over our own AMQP 0-9-1 publisher, producing exactly what the Go
//! adapters (watermill-amqp) consume.
//!
//! Takes the `broker.rabbitmq` config and the topic; gives [`RabbitPublisher`], which declares
//! the exchange (durable, not auto-delete, the configured type) on first use after every
//! (re)connect and publishes each event persistent (delivery mode 2), without a content type,
//! with the single header `_watermill_message_uuid` = event id, body = the structured CloudEvent.
//! `conn.rs` is the connection (handshake, reader task, confirm window), `wire.rs` the frames.
//!
//! A page is encoded into one reused buffer, written with one `write_all`, and (with publisher
//! confirms) counted published as the broker's `basic.ack`s mark its delivery tags: no future,
//! promise or allocation per event.
//!
//! Invariant: every await here is bounded (connect, declare and confirm waits have timeouts;
//! writes to a dead connection fail at once), and after a connection failure new attempts are
//! spaced by exponential backoff, so a dead broker costs the caller an immediate error, not a hang.

mod conn;
mod wire;

use super::config::{ExchangeType, RabbitConfig, parse_url};
use super::{BrokerError, Link, Liveness, Outbound, PublishError};
use crate::common::redact::mask_url;
use amq_protocol::types::ShortString;
use conn::{Connection, Mark};
use lapin::uri::AMQPUri;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, timeout, timeout_at};
use wire::{PublishFrames, Route};

pub use wire::check_reader as check_frame_reader;

/// The AMQP heartbeat asked for when the URL sets none (`?heartbeat=N`): Go's amqp091 default.
/// The connection is dropped when nothing was heard for two heartbeats, so a black-holed broker
/// turns readiness 503 within ~20 s instead of waiting for a publish to time out.
pub const DEFAULT_HEARTBEAT_SECS: u16 = 10;

/// The largest AMQP frame asked for when the URL sets none (`?frame_max=N`); Go takes the
/// server's 128 KiB. The reader's buffer is one frame; a larger event is sent in several body
/// frames and arrives the same.
pub const DEFAULT_FRAME_MAX: u32 = 16 * 1024;

/// The URL as we connect to it: Go's reading of it ([`parse_url`]) plus the heartbeat and
/// frame size asked for when the URL names none.
fn connection_uri(url: &str) -> Result<AMQPUri, String> {
    let mut uri = parse_url(url)?;
    uri.query.heartbeat.get_or_insert(DEFAULT_HEARTBEAT_SECS);
    uri.query.frame_max.get_or_insert(DEFAULT_FRAME_MAX);
    Ok(uri)
}

/// Bounds and backoff of a [`RabbitPublisher`].
#[derive(Clone, Debug)]
pub struct RabbitOptions {
    /// Bound on connecting, opening the channel and declaring the exchange.
    pub connect_timeout: Duration,
    /// Bound on one batch: writing its messages and waiting for their confirms.
    pub publish_timeout: Duration,
    /// Wait before the second reconnect attempt; doubles per failed attempt.
    pub backoff_initial: Duration,
    /// Longest wait between reconnect attempts.
    pub backoff_max: Duration,
    /// Bound on waiting for outstanding confirms and the close handshake in `close`.
    pub close_timeout: Duration,
    /// The connection name shown in the RabbitMQ management UI.
    pub connection_name: String,
}

impl Default for RabbitOptions {
    fn default() -> RabbitOptions {
        RabbitOptions {
            connect_timeout: Duration::from_secs(10),
            publish_timeout: Duration::from_secs(30),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            close_timeout: Duration::from_secs(5),
            connection_name: "hyperfleet-sentinel".to_owned(),
        }
    }
}

/// When the next (re)connect attempt is allowed.
#[derive(Default)]
struct Backoff {
    not_before: Option<Instant>,
    delay: Duration,
    last_error: String,
}

/// Publishes events to one exchange, reconnecting as needed. See the module docs.
pub struct RabbitPublisher {
    uri: AMQPUri,
    url_masked: String,
    exchange: ShortString,
    exchange_type: ExchangeType,
    routing_key: ShortString,
    confirm: bool,
    opts: RabbitOptions,
    conn: Option<Connection>,
    /// The open channel, as the frames a publish on it is made of.
    channel: Option<PublishFrames>,
    declared: bool,
    closed: bool,
    backoff: Backoff,
    /// A page's frames, reused.
    buf: Vec<u8>,
    /// Scratch for a body split over several frames, reused.
    spill: Vec<u8>,
    /// The connection as readiness sees it (see [`Liveness`]).
    link: Arc<Mutex<Link>>,
}

impl RabbitPublisher {
    /// Connects (and opens the channel) once; failure is a startup error. The exchange is named
    /// `cfg.exchange`, or `topic` when that is empty.
    pub async fn connect(
        cfg: &RabbitConfig,
        topic: &str,
        opts: RabbitOptions,
    ) -> Result<RabbitPublisher, BrokerError> {
        let url_masked = mask_url(&cfg.url);
        let uri = connection_uri(&cfg.url).map_err(|reason| BrokerError::Connect {
            url: url_masked.clone(),
            reason,
        })?;
        let name = if cfg.exchange.is_empty() {
            topic
        } else {
            cfg.exchange.as_str()
        };
        let bad_name = |reason| BrokerError::Exchange {
            name: name.to_owned(),
            reason,
        };
        if name.is_empty() {
            return Err(bad_name(
                "empty: set clients.broker.topic or broker.rabbitmq.exchange",
            ));
        }
        let exchange = ShortString::try_new(name).map_err(|_| bad_name("longer than 255 bytes"))?;
        let routing_key =
            ShortString::try_new(cfg.routing_key.as_str()).map_err(|_| BrokerError::Invalid {
                origin: "broker.rabbitmq".to_owned(),
                problems: vec!["broker.rabbitmq.routing_key is longer than 255 bytes".to_owned()],
            })?;
        let mut publisher = RabbitPublisher {
            uri,
            url_masked,
            exchange,
            exchange_type: cfg.exchange_type,
            routing_key,
            confirm: cfg.publisher_confirm,
            opts,
            conn: None,
            channel: None,
            declared: false,
            closed: false,
            backoff: Backoff::default(),
            buf: Vec::with_capacity(1024),
            spill: Vec::new(),
            link: Arc::new(Mutex::new(Link::Down)),
        };
        if let Err(e) = publisher.open().await {
            return Err(BrokerError::Connect {
                url: publisher.url_masked.clone(),
                reason: e.to_string(),
            });
        }
        tracing::info!(url = %publisher.url_masked, exchange = %publisher.exchange, "connected to rabbitmq");
        Ok(publisher)
    }

    /// The exchange events go to.
    pub fn exchange(&self) -> &str {
        self.exchange.as_str()
    }

    /// A live view of the connection for the readiness check.
    pub fn liveness(&self) -> Liveness {
        Liveness::new(self.link.clone())
    }

    /// Reopens a lost connection and channel unless the reconnect backoff says to wait; a
    /// failure is logged and left to the next publish.
    pub async fn reconnect_if_down(&mut self) {
        if !self.closed && !self.is_connected() {
            let _ = self.ready().await;
        }
    }

    fn set_link(&self, link: Link) {
        *self
            .link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = link;
    }

    /// The heartbeat (seconds) negotiated with the broker, while connected.
    pub fn heartbeat(&self) -> Option<u16> {
        self.conn.as_ref().map(|c| c.tuning().heartbeat)
    }

    /// Whether the connection and channel are currently up.
    pub fn is_connected(&self) -> bool {
        self.channel.is_some()
            && self
                .conn
                .as_ref()
                .is_some_and(|c| c.is_open() && c.channel_is_open())
    }

    /// Publishes the events in order, then (with publisher confirms) waits for the broker's
    /// confirms of the whole batch; one result per event. Writing and confirming the batch is
    /// bounded by `publish_timeout` (a blocked or half-open connection cannot stall it).
    pub async fn publish_batch<M: Outbound>(
        &mut self,
        messages: &[M],
    ) -> Vec<Result<(), PublishError>> {
        if messages.is_empty() {
            return Vec::new();
        }
        if let Err(e) = self.ready().await {
            return vec![Err(e); messages.len()];
        }
        let deadline = Instant::now() + self.opts.publish_timeout;
        let (Some(conn), Some(frames)) = (self.conn.as_mut(), self.channel.as_ref()) else {
            let failure = PublishError::Publish("no channel".to_owned());
            return vec![Err(failure); messages.len()];
        };
        // The whole page in one buffer, one write: method, header and body frames per event.
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for m in messages {
            frames.encode(&mut buf, m.event(), &mut self.spill);
        }
        if self.confirm {
            conn.expect_confirms(messages.len());
        }
        let written = timeout_at(deadline, conn.write(&buf)).await;
        self.buf = buf;
        match written {
            Ok(Ok(())) if self.confirm => self.await_confirms(deadline).await,
            Ok(Ok(())) => vec![Ok(()); messages.len()],
            Ok(Err(e)) => {
                let failure = e.to_string();
                self.lost(&format!("publish failed: {failure}"));
                vec![Err(PublishError::Publish(failure)); messages.len()]
            }
            Err(_) => {
                // A write cut short leaves half a frame on the wire: the connection is spent.
                self.drop_connection("publishing timed out");
                let failure = format!("not written within {:?}", self.opts.publish_timeout);
                vec![Err(PublishError::Publish(failure)); messages.len()]
            }
        }
    }

    /// Waits (until `deadline`) for the confirms of the page just written: one result per
    /// message from its mark (ack, nack, or still pending when the wait ended).
    async fn await_confirms(&mut self, deadline: Instant) -> Vec<Result<(), PublishError>> {
        let Some(conn) = self.conn.as_ref() else {
            return Vec::new();
        };
        let outcome = timeout_at(deadline, conn.confirms()).await;
        let bound = self.opts.publish_timeout;
        let pending = match &outcome {
            Ok(Ok(())) => PublishError::ConfirmTimeout(bound),
            Ok(Err(why)) => PublishError::Unconfirmed(why.clone()),
            Err(_) => PublishError::ConfirmTimeout(bound),
        };
        let results = conn.with_marks(|marks| {
            marks
                .iter()
                .map(|mark| match mark {
                    Mark::Ack => Ok(()),
                    Mark::Nack => Err(PublishError::Nacked),
                    Mark::Pending => Err(pending.clone()),
                })
                .collect()
        });
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(why)) => self.lost(&format!("confirm failed: {why}")),
            // The connection may be half-open; start over with a fresh one.
            Err(_) => self.drop_connection("publisher confirm timed out"),
        }
        results
    }

    /// Closes the connection, waiting up to `close_timeout` for the broker's `close-ok`. Every
    /// page's confirms were awaited by its `publish_batch`, so none is outstanding. Later
    /// publishes fail.
    pub async fn close(&mut self) -> Result<(), PublishError> {
        self.closed = true;
        self.set_link(Link::Closed);
        self.channel = None;
        if let Some(mut conn) = self.conn.take() {
            let _ = timeout(self.opts.close_timeout, conn.close()).await;
        }
        Ok(())
    }

    /// Makes sure a channel with the exchange declared is open, (re)establishing what is
    /// missing unless the backoff says to wait.
    async fn ready(&mut self) -> Result<(), PublishError> {
        if self.closed {
            return Err(PublishError::Publish("publisher is closed".to_owned()));
        }
        self.forget_dead();
        if self.channel.is_some() && self.declared {
            return Ok(());
        }
        if let Some(not_before) = self.backoff.not_before {
            let now = Instant::now();
            if now < not_before {
                let reason = self.backoff.last_error.clone();
                return Err(PublishError::Unavailable {
                    reason,
                    retry_in: not_before - now,
                });
            }
        }
        let reconnecting = self.backoff.not_before.is_some();
        match self.open_and_declare().await {
            Ok(()) => {
                if reconnecting {
                    tracing::info!(url = %self.url_masked, "reconnected to rabbitmq");
                }
                self.backoff = Backoff::default();
                Ok(())
            }
            Err(e) => {
                let b = &mut self.backoff;
                b.delay = (b.delay * 2)
                    .max(self.opts.backoff_initial)
                    .min(self.opts.backoff_max);
                b.not_before = Some(Instant::now() + b.delay);
                b.last_error = e.to_string();
                tracing::warn!(error = %e, retry_in = ?b.delay, "rabbitmq unavailable");
                Err(e)
            }
        }
    }

    async fn open_and_declare(&mut self) -> Result<(), PublishError> {
        self.open().await?;
        if self.declared {
            return Ok(());
        }
        let bound = self.opts.connect_timeout;
        let declared = match self.conn.as_mut() {
            Some(conn) => {
                timeout(
                    bound,
                    conn.declare(&self.exchange, self.exchange_type.as_str()),
                )
                .await
            }
            None => Ok(Err("connection lost".to_owned())),
        };
        let declare_error = |reason: String| PublishError::Declare {
            exchange: self.exchange.to_string(),
            reason,
        };
        match declared {
            Ok(Ok(())) => {
                self.declared = true;
                Ok(())
            }
            Ok(Err(e)) => {
                // The broker closes the channel on a failed declare.
                let err = declare_error(e);
                self.channel = None;
                Err(err)
            }
            Err(_) => {
                let err = declare_error(format!("timed out after {bound:?}"));
                self.drop_connection("exchange declare timed out");
                Err(err)
            }
        }
    }

    /// Opens the connection and the channel (with confirms selected) if missing.
    async fn open(&mut self) -> Result<(), PublishError> {
        let bound = self.opts.connect_timeout;
        let timed_out = || PublishError::Connect(format!("timed out after {bound:?}"));
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => {
                let connecting = Connection::open(&self.uri, &self.opts.connection_name);
                self.channel = None;
                timeout(bound, connecting)
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(PublishError::Connect)?
            }
        };
        self.set_link(Link::Up(conn.status()));
        let conn = self.conn.insert(conn);
        if self.channel.is_some() {
            return Ok(());
        }
        let frames = match timeout(bound, conn.open_channel(self.confirm)).await {
            Ok(Ok(_)) => {
                let route = Route {
                    exchange: &self.exchange,
                    routing_key: &self.routing_key,
                };
                conn.publish_frames(&route).map_err(PublishError::Publish)?
            }
            Ok(Err(e)) => {
                // A channel's number is not used again on its connection (the broker may still
                // be closing it), so a connection can run out of them: a new one starts afresh.
                self.drop_connection("cannot open a channel");
                return Err(PublishError::Connect(format!("cannot open channel: {e}")));
            }
            Err(_) => {
                self.drop_connection("opening the channel timed out");
                return Err(timed_out());
            }
        };
        self.declared = false;
        self.channel = Some(frames);
        Ok(())
    }

    /// Forgets a connection or channel the broker or network has closed.
    fn forget_dead(&mut self) {
        if self.conn.as_ref().is_some_and(|c| !c.is_open()) {
            self.drop_connection("connection lost");
        }
        if self.conn.as_ref().is_some_and(|c| !c.channel_is_open()) {
            self.channel = None;
            self.declared = false;
        }
    }

    /// After a failed publish or confirm: reopen the channel (and, if it is down, the connection)
    /// on the next publish, which is attempted at once.
    fn lost(&mut self, why: &str) {
        if self.channel.take().is_some() {
            tracing::warn!(
                reason = why,
                "rabbitmq channel lost; reopening on next publish"
            );
        }
        self.declared = false;
        self.forget_dead();
    }

    fn drop_connection(&mut self, why: &str) {
        if !self.closed {
            self.set_link(Link::Down);
        }
        if self.conn.take().is_some() {
            tracing::warn!(reason = why, url = %self.url_masked, "dropping rabbitmq connection");
        }
        self.channel = None;
        self.declared = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_and_frame_size_default_unless_the_url_sets_them() {
        let uri = connection_uri("amqp://guest:guest@localhost:5672/").unwrap_or_default();
        assert_eq!(uri.query.heartbeat, Some(DEFAULT_HEARTBEAT_SECS));
        assert_eq!(uri.query.frame_max, Some(DEFAULT_FRAME_MAX));
        let uri =
            connection_uri("amqp://localhost/?heartbeat=30&frame_max=131072").unwrap_or_default();
        assert_eq!(uri.query.heartbeat, Some(30));
        assert_eq!(uri.query.frame_max, Some(131_072));
        assert!(connection_uri("http://localhost/").is_err());
    }
}
