//! One AMQP 0-9-1 connection with one publishing channel.
//!
//! Takes the broker's URL (as [`super::connection_uri`] completes it); gives a [`Connection`]:
//! the handshake done (PLAIN, or the URL's `auth_mechanism`; TLS for `amqps://`), a reader task
//! that owns the socket's read half, and the write half behind an async mutex that a publish
//! holds for one `write_all` of a whole page.
//!
//! The reader turns frames into shared state: confirms into the [`Window`] of the page in
//! flight, `connection.blocked`/`unblocked` and the connection's end into the
//! [`ConnectionStatus`] readiness reads, the broker's `channel.close` into the channel's error
//! (answered with `close-ok`), and the replies the publisher waits for (`open-ok`, `select-ok`,
//! `declare-ok`). It also sends heartbeats when nothing else was written for half the
//! negotiated interval, and ends the connection when nothing was heard for two intervals.
//!
//! Invariant: nothing here waits without a bound of its own or the caller's (the caller wraps
//! the handshake, requests and publishes in its timeouts; the reader's own writes are
//! best-effort and bounded), and per published event nothing is allocated: a page's confirms
//! are marks in one reused vector.

use super::wire::{self, HEARTBEAT, Inbound, Incoming, PROTOCOL_HEADER, PublishFrames, Route};
use crate::broker::ConnectionStatus;
use amq_protocol::auth::Credentials;
use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{
    AMQPClass, AMQPError, channel, confirm, connection, constants::REPLY_SUCCESS, exchange,
};
use amq_protocol::types::{AMQPValue, FieldTable, ShortString};
use lapin::uri::{AMQPScheme, AMQPUri};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until, timeout};

/// A byte stream to the broker: TCP, or TLS over TCP.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}
type Stream = Box<dyn Io>;

/// The longest the reader spends writing a heartbeat or a `close-ok` (the socket is otherwise
/// writable at once; a stalled one is dropped by the missed-heartbeat rule or the publisher).
const REPLY_BOUND: Duration = Duration::from_secs(5);

/// How a confirm resolved one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mark {
    /// No confirm yet.
    Pending,
    /// `basic.ack`.
    Ack,
    /// `basic.nack`.
    Nack,
}

/// The confirms of the page in flight: one mark per message, delivery tags `first..`.
#[derive(Debug, Default)]
pub(super) struct Window {
    first: u64,
    marks: Vec<Mark>,
    /// Marks before this index are all resolved.
    low: usize,
    unresolved: usize,
}

impl Window {
    /// Starts a page of `n` messages whose first delivery tag is `first`.
    fn begin(&mut self, first: u64, n: usize) {
        self.first = first;
        self.marks.clear();
        self.marks.resize(n, Mark::Pending);
        self.low = 0;
        self.unresolved = n;
    }

    /// Applies a confirm of `tag` (with `multiple`, of every earlier tag too); tags outside the
    /// page are ignored. Whether the page is now fully confirmed.
    fn resolve(&mut self, tag: u64, multiple: bool, mark: Mark) -> bool {
        let Some(idx) = tag
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < self.marks.len())
        else {
            return false;
        };
        let from = if multiple { self.low } else { idx };
        for m in self.marks[from.min(idx)..=idx].iter_mut() {
            if *m == Mark::Pending {
                *m = mark;
                self.unresolved -= 1;
            }
        }
        while self
            .marks
            .get(self.low)
            .is_some_and(|m| *m != Mark::Pending)
        {
            self.low += 1;
        }
        self.unresolved == 0
    }

    /// The marks, one per message of the page.
    pub(super) fn marks(&self) -> &[Mark] {
        &self.marks
    }
}

/// What the reader and the publisher share about the channel and the connection.
#[derive(Default)]
struct State {
    /// Why the connection ended, once it has.
    ended: Option<String>,
    /// The channel publishes go to (0: none open).
    channel: u16,
    /// Why the broker closed `channel`, once it has.
    channel_closed: Option<String>,
    /// The last reply on `channel` the publisher has not taken.
    reply: Option<AMQPClass>,
    window: Window,
}

/// The connection's shared half: state, the wake-up for whoever waits on it, and the writer.
struct Link {
    status: Arc<ConnectionStatus>,
    state: Mutex<State>,
    wake: Notify,
    writer: tokio::sync::Mutex<Writer>,
}

struct Writer {
    io: WriteHalf<Stream>,
    last_write: Instant,
    /// A write was started and not finished (its future dropped, or timed out): the stream may
    /// end in half a frame, so nothing more may be written to it.
    torn: bool,
}

impl Link {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection ended (the first reason wins) and wakes the publisher.
    fn end(&self, why: String) {
        self.status.set_connected(false);
        self.state().ended.get_or_insert(why);
        self.wake.notify_one();
    }

    /// Writes `bytes` unless a publish is writing (the reader never waits for the writer).
    async fn write_if_free(&self, bytes: &[u8]) {
        let Ok(mut w) = self.writer.try_lock() else {
            return;
        };
        if w.torn {
            return;
        }
        w.torn = true;
        if let Ok(Ok(())) = timeout(REPLY_BOUND, w.io.write_all(bytes)).await {
            w.torn = false;
            w.last_write = Instant::now();
        }
    }
}

/// What the connection was opened with and agreed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    /// Negotiated heartbeat in seconds (0: none).
    pub heartbeat: u16,
    /// Negotiated largest frame.
    pub frame_max: u32,
    channel_max: u16,
}

/// An open AMQP connection. Dropping it stops the reader and closes the socket.
pub(super) struct Connection {
    link: Arc<Link>,
    reader: JoinHandle<()>,
    tuning: Tuning,
    /// The next delivery tag on the channel.
    next_tag: u64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The smaller of two non-zero limits; when one side says 0 (no limit), the other's.
fn negotiate<T: Ord + Default + Copy>(ours: T, theirs: T) -> T {
    let zero = T::default();
    if ours == zero || theirs == zero {
        ours.max(theirs)
    } else {
        ours.min(theirs)
    }
}

/// A broker's `close` as an error text: lapin's wording (`protocol error: <kind>: <text>`).
fn close_reason(code: u16, text: &ShortString) -> String {
    match AMQPError::from_id(code, text.clone()) {
        Some(e) => format!("protocol error: {e}"),
        None => format!("protocol error: {code} {text}"),
    }
}

fn io_error(e: std::io::Error) -> String {
    e.to_string()
}

impl Connection {
    /// Connects, authenticates, tunes and opens the vhost. The caller bounds it.
    pub(super) async fn open(uri: &AMQPUri, name: &str) -> Result<Connection, String> {
        let stream = dial(uri).await?;
        let (mut rd, mut wr) = tokio::io::split(stream);
        let mut handshake = Handshake {
            rd: &mut rd,
            wr: &mut wr,
            inbound: Inbound::new(uri.query.frame_max.unwrap_or(1 << 20)),
        };
        let tuning = handshake.run(uri, name).await?;
        let mut inbound = handshake.inbound;
        inbound.limit(tuning.frame_max);
        let status = Arc::new(ConnectionStatus::default());
        status.set_connected(true);
        let link = Arc::new(Link {
            status,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            writer: tokio::sync::Mutex::new(Writer {
                io: wr,
                last_write: Instant::now(),
                torn: false,
            }),
        });
        let reader = tokio::spawn(read_loop(rd, inbound, link.clone(), tuning.heartbeat));
        Ok(Connection {
            link,
            reader,
            tuning,
            next_tag: 1,
        })
    }

    /// What was negotiated.
    pub(super) fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// The status readiness reads.
    pub(super) fn status(&self) -> Arc<ConnectionStatus> {
        self.link.status.clone()
    }

    /// Whether the connection is up.
    pub(super) fn is_open(&self) -> bool {
        self.link.status.connected()
    }

    /// Whether the connection and its channel are up.
    pub(super) fn channel_is_open(&self) -> bool {
        let state = self.link.state();
        state.ended.is_none() && state.channel != 0 && state.channel_closed.is_none()
    }

    /// Opens a channel (on a number not used before on this connection) and, with `confirm`,
    /// selects publisher confirms on it. The caller bounds it.
    pub(super) async fn open_channel(&mut self, with_confirms: bool) -> Result<u16, String> {
        let id = {
            let mut state = self.link.state();
            let max = if self.tuning.channel_max == 0 {
                u16::MAX
            } else {
                self.tuning.channel_max
            };
            if state.channel >= max {
                return Err("no channel number left on this connection".to_owned());
            }
            state.channel += 1;
            state.channel_closed = None;
            state.reply = None;
            state.channel
        };
        self.next_tag = 1;
        let open = AMQPClass::Channel(channel::AMQPMethod::Open(channel::Open {}));
        self.call(id, open, |c| {
            matches!(c, AMQPClass::Channel(channel::AMQPMethod::OpenOk(_)))
        })
        .await?;
        if with_confirms {
            let select = AMQPClass::Confirm(confirm::AMQPMethod::Select(confirm::Select {
                nowait: false,
            }));
            self.call(id, select, |c| {
                matches!(c, AMQPClass::Confirm(confirm::AMQPMethod::SelectOk(_)))
            })
            .await?;
        }
        Ok(id)
    }

    /// Declares `exchange` durable, not auto-delete, of `kind`, on the channel. The caller
    /// bounds it.
    pub(super) async fn declare(
        &mut self,
        exchange: &ShortString,
        kind: &str,
    ) -> Result<(), String> {
        let id = self.link.state().channel;
        let declare = AMQPClass::Exchange(exchange::AMQPMethod::Declare(exchange::Declare {
            exchange: exchange.clone(),
            kind: kind.into(),
            passive: false,
            durable: true,
            auto_delete: false,
            internal: false,
            nowait: false,
            arguments: FieldTable::default(),
        }));
        self.call(id, declare, |c| {
            matches!(c, AMQPClass::Exchange(exchange::AMQPMethod::DeclareOk(_)))
        })
        .await
    }

    /// The publish template for the open channel along `route`.
    pub(super) fn publish_frames(&self, route: &Route) -> Result<PublishFrames, String> {
        let id = self.link.state().channel;
        PublishFrames::new(id, route, self.tuning.frame_max)
    }

    /// Sends `method` on channel `id` and waits for the reply `expected` accepts.
    async fn call(
        &self,
        id: u16,
        method: AMQPClass,
        expected: fn(&AMQPClass) -> bool,
    ) -> Result<(), String> {
        let bytes = wire::control_bytes(&AMQPFrame::Method(id, method))?;
        self.write(&bytes).await.map_err(io_error)?;
        self.wait(|state| {
            let reply = state.reply.take()?;
            Some(if expected(&reply) {
                Ok(())
            } else {
                Err(format!("unexpected reply from the broker: {reply:?}"))
            })
        })
        .await
    }

    /// Waits until `check` gives an answer, or the connection or channel ends.
    async fn wait<T>(
        &self,
        mut check: impl FnMut(&mut State) -> Option<Result<T, String>>,
    ) -> Result<T, String> {
        loop {
            let woken = self.link.wake.notified();
            {
                let mut state = self.link.state();
                if let Some(answer) = check(&mut state) {
                    return answer;
                }
                if let Some(why) = state.ended.as_ref().or(state.channel_closed.as_ref()) {
                    return Err(why.clone());
                }
            }
            woken.await;
        }
    }

    /// Writes `bytes` (whole frames) to the broker. The caller bounds it; a write cut short
    /// leaves the stream unusable, so the caller then drops the connection.
    pub(super) async fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = self.link.writer.lock().await;
        if w.torn {
            let e = std::io::Error::other("an earlier write to the broker was cut short");
            self.link.end(e.to_string());
            return Err(e);
        }
        w.torn = true;
        let written = w.io.write_all(bytes).await;
        w.last_write = Instant::now();
        match &written {
            Ok(()) => w.torn = false,
            Err(e) => self.link.end(e.to_string()),
        }
        written
    }

    /// Starts the confirm window of a page of `n` publishes (before writing them).
    pub(super) fn expect_confirms(&mut self, n: usize) {
        self.link.state().window.begin(self.next_tag, n);
        self.next_tag += n as u64;
    }

    /// Waits until every publish of the page is confirmed, or the connection or channel is lost
    /// (the reason). The caller bounds it; [`Connection::with_marks`] then reads the outcome.
    pub(super) async fn confirms(&self) -> Result<(), String> {
        self.wait(|state| (state.window.unresolved == 0).then_some(Ok(())))
            .await
    }

    /// The page's marks.
    pub(super) fn with_marks<T>(&self, each: impl FnOnce(&[Mark]) -> T) -> T {
        each(self.link.state().window.marks())
    }

    /// Closes the connection (`connection.close`, then waits for `close-ok`). The caller
    /// bounds it.
    pub(super) async fn close(&mut self) -> Result<(), String> {
        if !self.is_open() {
            return Ok(());
        }
        let close = connection::Close {
            reply_code: REPLY_SUCCESS,
            reply_text: "OK".into(),
            class_id: 0,
            method_id: 0,
        };
        let frame = AMQPFrame::Method(
            0,
            AMQPClass::Connection(connection::AMQPMethod::Close(close)),
        );
        let bytes = wire::control_bytes(&frame)?;
        self.write(&bytes).await.map_err(io_error)?;
        loop {
            let woken = self.link.wake.notified();
            if let Some(why) = &self.link.state().ended {
                return if why == CLOSED_BY_US {
                    Ok(())
                } else {
                    Err(why.clone())
                };
            }
            woken.await;
        }
    }
}

/// The reason a connection ended by our own `close` records.
const CLOSED_BY_US: &str = "connection closed";

/// Opens the TCP (and, for `amqps://`, TLS) stream.
async fn dial(uri: &AMQPUri) -> Result<Stream, String> {
    let host = uri.authority.host.as_str();
    let tcp = TcpStream::connect((host, uri.authority.port))
        .await
        .map_err(io_error)?;
    // A page goes out in one write and then waits for confirms: no reason to let Nagle hold
    // its last segment.
    tcp.set_nodelay(true).map_err(io_error)?;
    match uri.scheme {
        AMQPScheme::AMQP => Ok(Box::new(tcp)),
        AMQPScheme::AMQPS => {
            let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                .map_err(|e| format!("invalid TLS server name '{host}': {e}"))?;
            let tls = tokio_rustls::TlsConnector::from(tls_config()?)
                .connect(name, tcp)
                .await
                .map_err(io_error)?;
            Ok(Box::new(tls))
        }
    }
}

/// rustls with the platform's trust store (on Linux the system's CA certificates), as lapin's
/// `rustls` feature verified servers (rustls-connector with rustls-platform-verifier).
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_platform_verifier())
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// What the sentinel tells the broker about itself: its name and version, the capabilities a
/// publisher uses, and the connection name shown in the management UI.
fn client_properties(name: &str) -> FieldTable {
    let mut capabilities = FieldTable::default();
    for capability in [
        "publisher_confirms",
        "basic.nack",
        "connection.blocked",
        "authentication_failure_close",
    ] {
        capabilities.insert(capability.into(), AMQPValue::Boolean(true));
    }
    let mut props = FieldTable::default();
    props.insert(
        "product".into(),
        AMQPValue::LongString("hyperfleet-sentinel".into()),
    );
    props.insert(
        "version".into(),
        AMQPValue::LongString(env!("CARGO_PKG_VERSION").into()),
    );
    props.insert("platform".into(), AMQPValue::LongString("rust".into()));
    props.insert("capabilities".into(), AMQPValue::FieldTable(capabilities));
    props.insert("connection_name".into(), AMQPValue::LongString(name.into()));
    props
}

/// The connection's opening, before the reader task takes the read half.
struct Handshake<'a> {
    rd: &'a mut ReadHalf<Stream>,
    wr: &'a mut WriteHalf<Stream>,
    inbound: Inbound,
}

impl Handshake<'_> {
    /// Protocol header, `start`/`start-ok` (the URL's mechanism, PLAIN unless it says
    /// otherwise), `tune`/`tune-ok` (each limit the smaller non-zero of ours and the broker's),
    /// `open`/`open-ok` on the URL's vhost.
    async fn run(&mut self, uri: &AMQPUri, name: &str) -> Result<Tuning, String> {
        self.wr.write_all(PROTOCOL_HEADER).await.map_err(io_error)?;
        let start = self
            .reply(|m| match m {
                connection::AMQPMethod::Start(s) => Ok(s),
                other => Err(other),
            })
            .await?;
        let mechanism = uri.query.auth_mechanism.unwrap_or_default();
        let offered = start.mechanisms.to_string();
        if !offered.split_whitespace().any(|m| m == mechanism.name()) {
            return Err(format!(
                "the broker does not offer the {mechanism} mechanism (it offers {offered})"
            ));
        }
        let user = &uri.authority.userinfo;
        let credentials =
            Credentials::new(user.username.as_str().into(), user.password.as_str().into());
        self.send(connection::AMQPMethod::StartOk(connection::StartOk {
            client_properties: client_properties(name),
            mechanism: mechanism.name().into(),
            response: credentials.sasl_auth_string(mechanism),
            locale: "en_US".into(),
        }))
        .await?;
        let tune = self
            .reply(|m| match m {
                connection::AMQPMethod::Tune(t) => Ok(t),
                other => Err(other),
            })
            .await?;
        let tuning = Tuning {
            heartbeat: negotiate(uri.query.heartbeat.unwrap_or(0), tune.heartbeat),
            frame_max: negotiate(uri.query.frame_max.unwrap_or(0), tune.frame_max)
                .max(wire::FRAME_MIN),
            channel_max: negotiate(uri.query.channel_max.unwrap_or(0), tune.channel_max),
        };
        self.send(connection::AMQPMethod::TuneOk(connection::TuneOk {
            channel_max: tuning.channel_max,
            frame_max: tuning.frame_max,
            heartbeat: tuning.heartbeat,
        }))
        .await?;
        let virtual_host = ShortString::try_new(uri.vhost.as_str())
            .map_err(|_| "vhost longer than 255 bytes".to_owned())?;
        self.send(connection::AMQPMethod::Open(connection::Open {
            virtual_host,
        }))
        .await?;
        self.reply(|m| match m {
            connection::AMQPMethod::OpenOk(ok) => Ok(ok),
            other => Err(other),
        })
        .await?;
        Ok(tuning)
    }

    /// Sends a connection-class method on channel 0.
    async fn send(&mut self, method: connection::AMQPMethod) -> Result<(), String> {
        let bytes = wire::control_bytes(&AMQPFrame::Method(0, AMQPClass::Connection(method)))?;
        self.wr.write_all(&bytes).await.map_err(io_error)
    }

    /// Reads until the broker's next connection method, which `want` accepts or gives back; a
    /// `connection.close` instead is answered and becomes the error.
    async fn reply<T>(
        &mut self,
        want: impl Fn(connection::AMQPMethod) -> Result<T, connection::AMQPMethod>,
    ) -> Result<T, String> {
        loop {
            while let Some(frame) = self.inbound.next().map_err(|e| e.to_string())? {
                let method = match frame {
                    Incoming::Method(0, AMQPClass::Connection(method)) => method,
                    Incoming::Heartbeat => continue,
                    other => {
                        return Err(format!("unexpected frame during the handshake: {other:?}"));
                    }
                };
                return match want(method) {
                    Ok(answer) => Ok(answer),
                    Err(connection::AMQPMethod::Close(close)) => {
                        let ok = connection::AMQPMethod::CloseOk(connection::CloseOk {});
                        let _ = self.send(ok).await;
                        Err(close_reason(close.reply_code, &close.reply_text))
                    }
                    Err(other) => Err(format!("unexpected method during the handshake: {other:?}")),
                };
            }
            match self.rd.read(self.inbound.spare()).await.map_err(io_error)? {
                0 => return Err("the broker closed the connection during the handshake".to_owned()),
                n => self.inbound.filled(n),
            }
        }
    }
}

/// The reader task: frames in until the connection ends, heartbeats out when idle.
async fn read_loop(rd: ReadHalf<Stream>, inbound: Inbound, link: Arc<Link>, heartbeat: u16) {
    let why = read_frames(rd, inbound, &link, heartbeat).await;
    link.end(why);
}

async fn read_frames(
    mut rd: ReadHalf<Stream>,
    mut inbound: Inbound,
    link: &Link,
    heartbeat: u16,
) -> String {
    let beat = Duration::from_secs(heartbeat.into());
    let mut heard = Instant::now();
    let mut tick = heard + beat / 2;
    loop {
        // The frames read so far: the last read's, or what came after the handshake's last
        // answer in the same read.
        loop {
            match inbound.next() {
                Ok(Some(frame)) => {
                    if let Some(why) = handle(frame, link).await {
                        return why;
                    }
                }
                Ok(None) => break,
                Err(e) => return e.to_string(),
            }
        }
        let ticking = async {
            if heartbeat == 0 {
                std::future::pending::<()>().await;
            }
            sleep_until(tick).await;
        };
        tokio::select! {
            read = rd.read(inbound.spare()) => {
                match read {
                    Ok(0) => return "the broker closed the connection".to_owned(),
                    Ok(n) => inbound.filled(n),
                    Err(e) => return e.to_string(),
                }
                heard = Instant::now();
            }
            () = ticking => {
                let now = Instant::now();
                if now - heard >= beat * 2 {
                    return format!("missed heartbeats from the broker (nothing heard for {:?})", now - heard);
                }
                tick = now + beat / 2;
                let idle = link
                    .writer
                    .try_lock()
                    .is_ok_and(|w| now - w.last_write >= beat / 2);
                if idle {
                    link.write_if_free(&HEARTBEAT).await;
                }
            }
        }
    }
}

/// Applies one frame; `Some(reason)` when it ends the connection.
async fn handle(frame: Incoming, link: &Link) -> Option<String> {
    match frame {
        Incoming::Ack {
            channel,
            tag,
            multiple,
        } => apply_confirm(link, channel, tag, multiple, Mark::Ack),
        Incoming::Nack {
            channel,
            tag,
            multiple,
        } => apply_confirm(link, channel, tag, multiple, Mark::Nack),
        Incoming::Heartbeat | Incoming::Content(_) => None,
        Incoming::Method(0, AMQPClass::Connection(method)) => match method {
            connection::AMQPMethod::Close(close) => {
                let ok =
                    AMQPClass::Connection(connection::AMQPMethod::CloseOk(connection::CloseOk {}));
                if let Ok(bytes) = wire::control_bytes(&AMQPFrame::Method(0, ok)) {
                    link.write_if_free(&bytes).await;
                }
                Some(close_reason(close.reply_code, &close.reply_text))
            }
            connection::AMQPMethod::CloseOk(_) => Some(CLOSED_BY_US.to_owned()),
            connection::AMQPMethod::Blocked(_) => {
                link.status.set_blocked(true);
                None
            }
            connection::AMQPMethod::Unblocked(_) => {
                link.status.set_blocked(false);
                None
            }
            _ => None,
        },
        Incoming::Method(id, AMQPClass::Channel(channel::AMQPMethod::Close(close))) => {
            let ok = AMQPClass::Channel(channel::AMQPMethod::CloseOk(channel::CloseOk {}));
            if let Ok(bytes) = wire::control_bytes(&AMQPFrame::Method(id, ok)) {
                link.write_if_free(&bytes).await;
            }
            let mut state = link.state();
            if state.channel == id {
                state.channel_closed = Some(close_reason(close.reply_code, &close.reply_text));
                drop(state);
                link.wake.notify_one();
            }
            None
        }
        Incoming::Method(id, class) => {
            let mut state = link.state();
            if state.channel == id {
                state.reply = Some(class);
                drop(state);
                link.wake.notify_one();
            }
            None
        }
    }
}

fn apply_confirm(
    link: &Link,
    channel: u16,
    tag: u64,
    multiple: bool,
    mark: Mark,
) -> Option<String> {
    let mut state = link.state();
    if state.channel == channel && state.window.resolve(tag, multiple, mark) {
        drop(state);
        link.wake.notify_one();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_honours_multiple_and_ignores_strangers() {
        let mut w = Window::default();
        w.begin(11, 5);
        assert!(!w.resolve(12, false, Mark::Ack));
        assert!(!w.resolve(10, true, Mark::Ack), "before the page");
        assert!(!w.resolve(16, true, Mark::Ack), "after the page");
        assert!(!w.resolve(13, true, Mark::Nack));
        assert_eq!(
            w.marks(),
            [
                Mark::Nack,
                Mark::Ack,
                Mark::Nack,
                Mark::Pending,
                Mark::Pending
            ]
        );
        assert!(!w.resolve(14, false, Mark::Ack));
        assert!(w.resolve(15, true, Mark::Ack));
        assert_eq!(
            w.marks(),
            [Mark::Nack, Mark::Ack, Mark::Nack, Mark::Ack, Mark::Ack]
        );
        // A repeated confirm changes nothing.
        assert!(w.resolve(15, true, Mark::Nack));
        assert_eq!(w.marks()[4], Mark::Ack);
    }

    /// `amqps://` speaks TLS first: to a server that answers in plain AMQP, the handshake fails
    /// with rustls's error (nothing AMQP is sent or read), and the trust store loads.
    #[tokio::test]
    async fn amqps_handshakes_tls_before_amqp() {
        assert!(tls_config().is_ok());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let server = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.expect("accept");
            let mut hello = [0u8; 5];
            sock.read_exact(&mut hello).await.expect("client hello");
            let _ = sock.write_all(PROTOCOL_HEADER).await;
            hello
        });
        let uri: AMQPUri = format!("amqps://guest:guest@localhost:{port}/")
            .parse()
            .expect("uri");
        let err = Connection::open(&uri, "test")
            .await
            .err()
            .unwrap_or_default();
        // A TLS record: handshake (22), TLS 1.x.
        assert_eq!(server.await.expect("server")[..2], [22, 3]);
        assert!(!err.is_empty() && !err.contains("AMQP"), "{err}");
    }

    #[test]
    fn limits_are_the_smaller_non_zero() {
        assert_eq!(negotiate(10u16, 60), 10);
        assert_eq!(negotiate(0u16, 60), 60);
        assert_eq!(negotiate(3u16, 0), 3);
        assert_eq!(negotiate(16_384u32, 131_072), 16_384);
    }
}
