//! RabbitMQ publishing over our own AMQP 0-9-1 publisher, producing exactly what the Go
//! adapters (watermill-amqp) consume.
//!
//! Takes the `broker.rabbitmq` config and the topic; gives [`RabbitPublisher`], which declares
//! the exchange (durable, not auto-delete, the configured type) on first use after every
//! (re)connect and publishes each event persistent (delivery mode 2), without a content type,
//! with the single header `_watermill_message_uuid` = event id, body = the structured CloudEvent.
//! `conn.rs` is the connection as the publisher holds it, `driver.rs` the task that reads and
//! writes its socket on the publisher's own I/O thread, `link.rs` what the two share,
//! `handshake.rs` its opening, `tls.rs` the stream (and `amqps://`'s URL parameters), `wire.rs`
//! the frames.
//!
//! A page is encoded into one reused buffer, handed to the driver whole, and (with publisher
//! confirms) counted published as the broker's `basic.ack`s mark its delivery tags: no future,
//! promise or allocation per event.
//!
//! While the broker blocks the connection (`connection.blocked`, a resource alarm) the
//! connection is kept and nothing is written into it: a page fails at once with
//! [`PublishError::Blocked`], and publishing resumes with the first page after
//! `connection.unblocked`. A lost connection is re-established with Go's backoff (watermill's:
//! 500 ms, ×1.5 per attempt, up to 60 s), jittered upwards only, so that three attempts never
//! fall within a second; the first attempt after a quiet minute is immediate.
//!
//! Invariant: every await here is bounded (connect, declare and confirm waits have timeouts;
//! writes to a dead connection fail at once), and a dead or blocked broker costs the caller an
//! immediate error, not a hang.

mod conn;
mod driver;
mod handshake;
mod link;
mod tls;
mod wire;

use super::config::{ExchangeType, RabbitConfig, parse_url};
use super::{BrokerError, Link, Liveness, Outbound, PublishError};
use crate::broker::io::IoThread;
use crate::common::redact::mask_url;
use amq_protocol::types::ShortString;
use conn::{Connection, Dial};
use lapin::uri::AMQPUri;
use link::Mark;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{Instant, timeout, timeout_at};
use wire::{PublishFrames, Route};

pub use tls::TlsParams;
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
    /// Wait before the second reconnect attempt after a loss; ×1.5 per further attempt.
    pub backoff_initial: Duration,
    /// Longest wait between reconnect attempts.
    pub backoff_max: Duration,
    /// Bound on the close handshake (`close`, and a connection given up).
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
            backoff_max: Duration::from_secs(60),
            close_timeout: Duration::from_secs(5),
            connection_name: "hyperfleet-sentinel".to_owned(),
        }
    }
}

/// When the next connection attempt is allowed: watermill's exponential backoff (×1.5), counted
/// from the start of the last attempt, and forgotten after `backoff_max` without an attempt.
#[derive(Default)]
struct Backoff {
    /// Attempts in the current run of them.
    attempts: u32,
    last_attempt: Option<Instant>,
    not_before: Option<Instant>,
    /// When a channel refused on a live connection may be reopened.
    channel_not_before: Option<Instant>,
    last_error: String,
}

impl Backoff {
    /// The wait after the `attempts`-th attempt of a run: `initial` ×1.5
    /// per attempt up to `max`, times a jitter in [1, 1.5) (Go's is ±50 %, which can put three
    /// attempts within 625 ms).
    fn delay(attempts: u32, opts: &RabbitOptions) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let exponent = i32::try_from(attempts - 1).unwrap_or(i32::MAX).min(64);
        let base = opts.backoff_initial.as_secs_f64() * 1.5f64.powi(exponent);
        let base = base.min(opts.backoff_max.as_secs_f64());
        Duration::from_secs_f64(base * (1.0 + 0.5 * fastrand::f64()))
    }

    /// An attempt starts now: the next one waits its delay (the first attempt after a quiet
    /// `backoff_max` is not delayed; the second waits `initial`). A connection that works and
    /// is lost does not reset it, so a broker that drops every connection after a page still
    /// sees the backoff.
    fn attempt(&mut self, now: Instant, opts: &RabbitOptions) {
        if self
            .last_attempt
            .is_some_and(|last| now - last > opts.backoff_max)
        {
            self.attempts = 0;
        }
        self.last_attempt = Some(now);
        self.attempts = self.attempts.saturating_add(1);
        self.not_before = Some(now + Backoff::delay(self.attempts, opts));
    }
}

/// Publishes events to one exchange, reconnecting as needed. See the module docs.
pub struct RabbitPublisher {
    uri: AMQPUri,
    tls: TlsParams,
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
    /// A page's frames, reused (lent to the driver while it writes them).
    buf: Vec<u8>,
    /// Scratch for a body split over several frames, reused.
    spill: Vec<u8>,
    /// The connection as readiness sees it (see [`Liveness`]).
    link: Arc<Mutex<Link>>,
    /// Where the connections' I/O runs. Declared last: dropped after the connection, whose
    /// close it carries out.
    io: IoThread,
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
        let connect_error = |reason: String| BrokerError::Connect {
            url: url_masked.clone(),
            reason,
        };
        let uri = connection_uri(&cfg.url).map_err(connect_error)?;
        let tls = TlsParams::from_url(&cfg.url);
        if uri.scheme == lapin::uri::AMQPScheme::AMQPS
            && let Some(warning) = tls.warning()
        {
            tracing::warn!("{warning}");
        }
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
        let io = IoThread::start("amqp")
            .map_err(|e| connect_error(format!("cannot start the AMQP I/O thread: {e}")))?;
        let mut publisher = RabbitPublisher {
            uri,
            tls,
            url_masked: url_masked.clone(),
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
            io,
        };
        if let Err(e) = publisher.open().await {
            return Err(connect_error(e.to_string()));
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

    /// Sets the bound on each later batch (tests give a fault step its own bound).
    pub fn set_publish_timeout(&mut self, bound: Duration) {
        self.opts.publish_timeout = bound;
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
    /// bounded by `publish_timeout` (a half-open connection cannot stall it); while the broker
    /// blocks the connection nothing is written and every event fails at once.
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
        if let Some(reason) = conn.blocked() {
            return vec![Err(PublishError::Blocked(reason)); messages.len()];
        }
        // The whole page in one buffer, one job: method, header and body frames per event.
        let mut buf = conn
            .take_spare()
            .unwrap_or_else(|| std::mem::take(&mut self.buf));
        buf.clear();
        for m in messages {
            frames.encode(&mut buf, m.event(), &mut self.spill);
        }
        if self.confirm {
            conn.expect_confirms(messages.len());
        }
        let page = conn.send_page(buf);
        if self.confirm {
            return self.await_confirms(deadline).await;
        }
        let written = timeout_at(deadline, conn.written(page)).await;
        match written {
            Ok(Ok(())) => vec![Ok(()); messages.len()],
            Ok(Err(e)) => {
                self.lost(&format!("publish failed: {e}"));
                vec![Err(PublishError::Publish(e)); messages.len()]
            }
            Err(_) => {
                self.drop_connection("publishing timed out");
                let failure = format!("not written within {:?}", self.opts.publish_timeout);
                vec![Err(PublishError::Publish(failure)); messages.len()]
            }
        }
    }

    /// Waits (until `deadline`) for the confirms of the page just queued: one result per
    /// message from its mark (ack, nack, or still pending when the wait ended).
    async fn await_confirms(&mut self, deadline: Instant) -> Vec<Result<(), PublishError>> {
        let Some(conn) = self.conn.as_ref() else {
            return Vec::new();
        };
        let outcome = timeout_at(deadline, conn.confirms()).await;
        let blocked = conn.blocked();
        let bound = self.opts.publish_timeout;
        let pending = match (&outcome, &blocked) {
            (Ok(Err(_)), Some(reason)) => PublishError::Blocked(reason.clone()),
            (Ok(Ok(())), _) | (Err(_), _) => PublishError::ConfirmTimeout(bound),
            (Ok(Err(why)), None) => PublishError::Unconfirmed(why.clone()),
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
            // Blocked mid-page: the connection is kept; the page's confirms may still come.
            Ok(Err(_)) if blocked.is_some() => {}
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
        let reconnecting = self.conn.is_none();
        let not_before = if reconnecting {
            self.backoff.not_before
        } else {
            self.backoff.channel_not_before
        };
        if let Some(not_before) = not_before {
            let now = Instant::now();
            if now < not_before {
                let reason = self.backoff.last_error.clone();
                return Err(PublishError::Unavailable {
                    reason,
                    retry_in: not_before - now,
                });
            }
        }
        if reconnecting {
            self.backoff.attempt(Instant::now(), &self.opts);
        }
        match self.open_and_declare().await {
            Ok(()) => {
                if reconnecting {
                    tracing::info!(url = %self.url_masked, "reconnected to rabbitmq");
                }
                self.backoff.channel_not_before = None;
                Ok(())
            }
            Err(e) => {
                let now = Instant::now();
                self.backoff.last_error = e.to_string();
                // A channel or declare refused on a live connection is retried on it after
                // the initial backoff; a new connection waits for the connection backoff.
                let retry_at = if self.conn.is_some() {
                    let at = now + self.opts.backoff_initial;
                    self.backoff.channel_not_before = Some(at);
                    at
                } else {
                    self.backoff.not_before.unwrap_or(now)
                };
                let retry_in = retry_at.saturating_duration_since(now);
                tracing::warn!(error = %e, retry_in = ?retry_in, "rabbitmq unavailable");
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
                let connecting = Connection::open(Dial {
                    uri: &self.uri,
                    tls: &self.tls,
                    name: &self.opts.connection_name,
                    io: &self.io,
                    close_bound: self.opts.close_timeout,
                    exchange: self.exchange.as_str(),
                });
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
    /// on the next publish.
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

    /// Gives the connection up: it is closed with `connection.close` (after what is queued,
    /// bounded by `close_timeout`) on the I/O thread.
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

    #[test]
    fn the_backoff_is_go_s_jittered_upwards_and_never_three_attempts_in_a_second() {
        let opts = RabbitOptions::default();
        assert_eq!(Backoff::delay(0, &opts), Duration::ZERO);
        for _ in 0..100 {
            let first = Backoff::delay(1, &opts);
            let second = Backoff::delay(2, &opts);
            assert!(first >= Duration::from_millis(500) && first < Duration::from_millis(750));
            assert!(second >= Duration::from_millis(750) && second < Duration::from_millis(1125));
            assert!(first + second >= Duration::from_secs(1));
            let late = Backoff::delay(40, &opts);
            assert!(late >= Duration::from_secs(60) && late < Duration::from_secs(90));
        }
    }
}
