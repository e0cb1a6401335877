//! RabbitMQ publishing with lapin, producing exactly what the Go adapters (watermill-amqp)
//! consume.
//!
//! Takes the `broker.rabbitmq` config and the topic; gives [`RabbitPublisher`], which declares
//! the exchange (durable, not auto-delete, the configured type) on first use after every
//! (re)connect and publishes each event persistent (delivery mode 2), without a content type,
//! with the single header `_watermill_message_uuid` = event id, body = the structured CloudEvent.
//!
//! Invariant: every await here is bounded (connect, declare and confirm waits have timeouts;
//! writes to a dead connection fail at once), and after a connection failure new attempts are
//! spaced by exponential backoff, so a dead broker costs the caller an immediate error, not a hang.

use super::config::{ExchangeType, RabbitConfig, mask_url, parse_url};
use super::{BrokerError, Link, Liveness, Outbound, PublishError};
use crate::daemon::event::Event;
use futures_util::future::join_all;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::uri::AMQPUri;
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, timeout, timeout_at};

/// The AMQP header watermill reads the message UUID from.
pub const UUID_HEADER: &str = "_watermill_message_uuid";

/// How many publishes [`RabbitPublisher::publish_batch`] joins in one allocation: at most
/// `join_all`'s in-place limit (30), so that a page of 100 is four in-place joins in one.
const JOIN_CHUNK: usize = 25;

/// The AMQP heartbeat asked for when the URL sets none (`?heartbeat=N`): Go's amqp091 default.
/// lapin closes a connection that heard nothing for two heartbeats, so a black-holed broker
/// turns readiness 503 within ~20 s instead of waiting for a publish to time out.
pub const DEFAULT_HEARTBEAT_SECS: u16 = 10;

/// The largest AMQP frame asked for when the URL sets none (`?frame_max=N`). lapin keeps a send
/// and a receive buffer of 32 frames each, zero-filled: at RabbitMQ's default of 128 KiB that is
/// 8 MiB of resident memory for a connection that publishes ~1 KB events. At 16 KiB it is
/// 1 MiB; a larger event is sent in several body frames and arrives the same.
pub const DEFAULT_FRAME_MAX: u32 = 16 * 1024;

/// The URL as lapin connects to it: Go's reading of it ([`parse_url`]) plus the heartbeat and
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
    channel: Option<Channel>,
    declared: bool,
    closed: bool,
    backoff: Backoff,
    buf: Vec<u8>,
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
        self.conn.as_ref().map(|c| c.configuration().heartbeat())
    }

    /// Whether the connection and channel are currently up.
    pub fn is_connected(&self) -> bool {
        let conn_up = self.conn.as_ref().is_some_and(|c| c.status().connected());
        conn_up
            && self
                .channel
                .as_ref()
                .is_some_and(|c| c.status().connected())
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
        let channel = match self.ready().await {
            Ok(channel) => channel,
            Err(e) => return vec![Err(e); messages.len()],
        };
        let deadline = Instant::now() + self.opts.publish_timeout;
        // Every event of the batch is encoded into one buffer, then all publishes are queued
        // at once (lapin queues a publish's frames, in order, on its first poll) and awaited
        // together: the I/O loop writes the page in a few syscalls, not one round trip per
        // event.
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let mut ends = Vec::with_capacity(messages.len());
        for m in messages {
            m.event().encode_into(&mut buf);
            ends.push(buf.len());
        }
        let written = timeout_at(deadline, self.write_all(&channel, messages, &buf, &ends)).await;
        self.buf = buf;
        let mut results = Vec::with_capacity(messages.len());
        let mut pending = Vec::with_capacity(if self.confirm { messages.len() } else { 0 });
        match written {
            Ok(written) => {
                let mut lost = None;
                for outcome in written {
                    match outcome {
                        Ok(confirm) => {
                            if self.confirm {
                                pending.push((results.len(), confirm));
                            }
                            results.push(Ok(()));
                        }
                        Err(e) => {
                            let failure = e.to_string();
                            lost.get_or_insert_with(|| failure.clone());
                            results.push(Err(PublishError::Publish(failure)));
                        }
                    }
                }
                if let Some(failure) = lost {
                    self.lost(&format!("publish failed: {failure}"));
                }
            }
            Err(_) => {
                self.drop_connection("publishing timed out");
                let failure = format!("not written within {:?}", self.opts.publish_timeout);
                results.resize(messages.len(), Err(PublishError::Publish(failure)));
                return results;
            }
        }
        self.await_confirms(deadline, pending, &mut results).await;
        results
    }

    /// Queues one `basic.publish` per message (payload `buf[ends[i - 1]..ends[i]]`) and waits
    /// until lapin has written them all; one confirm (or error) per message, in order.
    ///
    /// The publishes are joined in chunks of [`JOIN_CHUNK`], each chunk's futures held in one
    /// allocation and polled in place, rather than by one `join_all` over the page, which above
    /// 30 futures gives every future a task of its own in a `FuturesOrdered`.
    async fn write_all<M: Outbound>(
        &self,
        channel: &Channel,
        messages: &[M],
        buf: &[u8],
        ends: &[usize],
    ) -> Vec<lapin::Result<lapin::PublisherConfirm>> {
        let publish = |(m, i): (&M, usize)| {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            channel.basic_publish(
                self.exchange.clone(),
                self.routing_key.clone(),
                BasicPublishOptions::default(),
                &buf[start..ends[i]],
                properties(m.event()),
            )
        };
        let chunks = messages.chunks(JOIN_CHUNK).enumerate().map(|(c, chunk)| {
            let first = c * JOIN_CHUNK;
            join_all(chunk.iter().zip(first..).map(publish))
        });
        let written = join_all(chunks).await;
        written.into_iter().flatten().collect()
    }

    /// Waits (until `deadline`) for the confirms of one batch and records them: one timer for
    /// the batch, each confirm awaited in order (most have arrived by the time it is polled).
    async fn await_confirms(
        &mut self,
        deadline: Instant,
        mut pending: Vec<(usize, lapin::PublisherConfirm)>,
        results: &mut [Result<(), PublishError>],
    ) {
        let mut confirmed = 0;
        let mut failure = None;
        let waiting = async {
            for (idx, confirm) in pending.iter_mut() {
                results[*idx] = match confirm.await {
                    Ok(Confirmation::Ack(_) | Confirmation::NotRequested) => Ok(()),
                    Ok(Confirmation::Nack(_)) => Err(PublishError::Nacked),
                    Err(e) => {
                        failure.get_or_insert_with(|| e.to_string());
                        Err(PublishError::Unconfirmed(e.to_string()))
                    }
                };
                confirmed += 1;
            }
        };
        let timed_out = timeout_at(deadline, waiting).await.is_err();
        if let Some(e) = failure {
            self.lost(&format!("confirm failed: {e}"));
        }
        if timed_out {
            let bound = self.opts.publish_timeout;
            for (idx, _) in &pending[confirmed..] {
                results[*idx] = Err(PublishError::ConfirmTimeout(bound));
            }
            // The connection may be half-open; start over with a fresh one.
            self.drop_connection("publisher confirm timed out");
        }
    }

    /// Waits up to `close_timeout` for outstanding confirms, then closes the connection. Later
    /// publishes fail.
    pub async fn close(&mut self) -> Result<(), PublishError> {
        self.closed = true;
        self.set_link(Link::Closed);
        let bound = self.opts.close_timeout;
        let result = match &self.channel {
            Some(channel) if self.confirm && channel.status().connected() => {
                match timeout(bound, channel.wait_for_confirms()).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(PublishError::Unconfirmed(e.to_string())),
                    Err(_) => Err(PublishError::ConfirmTimeout(bound)),
                }
            }
            _ => Ok(()),
        };
        // Close the channel before the connection: a channel still open (or dropped, hence
        // closing) when the connection closes makes lapin log a spurious "Connection error".
        if let Some(channel) = self.channel.take()
            && channel.status().connected()
        {
            let _ = timeout(bound, channel.close(200, ShortString::from("OK"))).await;
        }
        if let Some(conn) = self.conn.take()
            && conn.status().connected()
        {
            let _ = timeout(bound, conn.close(200, ShortString::from("OK"))).await;
        }
        result
    }

    /// A channel with the exchange declared, (re)establishing what is missing unless the
    /// backoff says to wait.
    async fn ready(&mut self) -> Result<Channel, PublishError> {
        if self.closed {
            return Err(PublishError::Publish("publisher is closed".to_owned()));
        }
        self.forget_dead();
        if let Some(channel) = &self.channel
            && self.declared
        {
            return Ok(channel.clone());
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
            Ok(channel) => {
                if reconnecting {
                    tracing::info!(url = %self.url_masked, "reconnected to rabbitmq");
                }
                self.backoff = Backoff::default();
                Ok(channel)
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

    async fn open_and_declare(&mut self) -> Result<Channel, PublishError> {
        let channel = self.open().await?;
        if !self.declared {
            let options = ExchangeDeclareOptions {
                durable: true,
                auto_delete: false,
                ..Default::default()
            };
            let declare = channel.exchange_declare(
                self.exchange.clone(),
                self.exchange_kind(),
                options,
                FieldTable::default(),
            );
            let declare_error = |reason: String| PublishError::Declare {
                exchange: self.exchange.to_string(),
                reason,
            };
            match timeout(self.opts.connect_timeout, declare).await {
                Ok(Ok(())) => self.declared = true,
                Ok(Err(e)) => {
                    // The broker closes the channel on a failed declare.
                    let err = declare_error(e.to_string());
                    self.channel = None;
                    return Err(err);
                }
                Err(_) => {
                    let err =
                        declare_error(format!("timed out after {:?}", self.opts.connect_timeout));
                    self.drop_connection("exchange declare timed out");
                    return Err(err);
                }
            }
        }
        Ok(channel)
    }

    /// Opens the connection and the channel (with confirms selected) if missing.
    async fn open(&mut self) -> Result<Channel, PublishError> {
        let bound = self.opts.connect_timeout;
        let timed_out = || PublishError::Connect(format!("timed out after {bound:?}"));
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => {
                let name = self.opts.connection_name.as_str().into();
                let props = ConnectionProperties::default().with_connection_name(name);
                let connecting = Connection::connect_uri(self.uri.clone(), props);
                timeout(bound, connecting)
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(|e| PublishError::Connect(e.to_string()))?
            }
        };
        self.set_link(Link::Up(conn.status().clone()));
        let conn = self.conn.insert(conn);
        if let Some(channel) = &self.channel {
            return Ok(channel.clone());
        }
        let confirm = self.confirm;
        let opening = async {
            let channel = conn.create_channel().await?;
            if confirm {
                channel
                    .confirm_select(ConfirmSelectOptions::default())
                    .await?;
            }
            Ok::<_, lapin::Error>(channel)
        };
        let channel = match timeout(bound, opening).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(e)) => return Err(PublishError::Connect(format!("cannot open channel: {e}"))),
            Err(_) => {
                self.drop_connection("opening the channel timed out");
                return Err(timed_out());
            }
        };
        self.declared = false;
        Ok(self.channel.insert(channel).clone())
    }

    fn exchange_kind(&self) -> ExchangeKind {
        match self.exchange_type {
            ExchangeType::Direct => ExchangeKind::Direct,
            ExchangeType::Fanout => ExchangeKind::Fanout,
            ExchangeType::Topic => ExchangeKind::Topic,
            ExchangeType::Headers => ExchangeKind::Headers,
        }
    }

    /// Forgets a connection or channel the broker or network has closed.
    fn forget_dead(&mut self) {
        if self.conn.as_ref().is_some_and(|c| !c.status().connected()) {
            self.drop_connection("connection lost");
        }
        if self
            .channel
            .as_ref()
            .is_some_and(|c| !c.status().connected())
        {
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

/// Persistent, no content type, one header: the event id as watermill's message UUID.
fn properties(event: &Event) -> BasicProperties {
    let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let id = event.id.hyphenated().encode_lower(&mut id);
    let mut headers = FieldTable::default();
    headers.insert(
        ShortString::from(UUID_HEADER),
        AMQPValue::LongString(id.as_bytes().to_vec().into()),
    );
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers)
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
