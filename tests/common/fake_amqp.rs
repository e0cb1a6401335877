//! A fake AMQP 0-9-1 broker on 127.0.0.1:0 for what the real RabbitMQ will not do on demand:
//! confirms out of order, with `multiple`, or nacks; silence; a `tune` of zeros; an oversized
//! frame; `channel.close` 404 while a page larger than the socket buffers is being written;
//! `connection.close` 320; `connection.blocked` / `unblocked` at will.
//!
//! It speaks the broker's side with amq-protocol (no code of the publisher under test), records
//! what each connection's client sent ([`Seen`]) and takes commands per connection.

use amq_protocol::frame::{AMQPFrame, WriteContext, gen_frame, parse_frame};
use amq_protocol::protocol::{AMQPClass, basic, channel, confirm, connection, exchange};
use amq_protocol::types::FieldTable;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How the fake confirms the publishes of each read it takes in.
#[derive(Clone, Debug)]
pub enum Confirms {
    /// One `basic.ack` per message, in order.
    Each,
    /// One `basic.ack` with `multiple` for everything read.
    Multiple,
    /// One `basic.ack` per message, last first.
    Reversed,
    /// Acks, but these delivery tags are nacked.
    Nack(BTreeSet<u64>),
    /// Nothing: a broker that never confirms.
    Never,
}

/// What the fake proposes and how it answers.
#[derive(Clone, Debug)]
pub struct Script {
    /// `connection.tune`'s heartbeat, frame_max and channel_max (0: no limit).
    pub tune: (u16, u32, u16),
    /// How publishes are confirmed.
    pub confirms: Confirms,
    /// On the first publish of a channel: stop reading and close the channel with 404.
    pub close_channel_on_publish: bool,
}

impl Default for Script {
    fn default() -> Script {
        Script {
            tune: (60, 131_072, 2047),
            confirms: Confirms::Each,
            close_channel_on_publish: false,
        }
    }
}

/// What a client sent, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A method: channel, class id, method id.
    Method(u16, u16, u16),
    /// A complete publish (method, header and body), with its delivery tag.
    Published(u64),
    /// A heartbeat.
    Heartbeat,
    /// The client closed the socket.
    Eof,
}

/// `connection.close` (class 10, method 50).
pub const CONNECTION_CLOSE: (u16, u16) = (10, 50);
/// `channel.close-ok` (class 20, method 41).
pub const CHANNEL_CLOSE_OK: (u16, u16) = (20, 41);
/// `connection.close-ok` (class 10, method 51).
pub const CONNECTION_CLOSE_OK: (u16, u16) = (10, 51);

/// A command to one connection.
enum Command {
    Send(Vec<u8>),
    /// Stop (false) or resume (true) reading.
    Read(bool),
}

struct Conn {
    seen: Arc<Mutex<Vec<Seen>>>,
    commands: mpsc::UnboundedSender<Command>,
}

pub struct FakeBroker {
    addr: SocketAddr,
    script: Arc<Mutex<Script>>,
    conns: Arc<Mutex<Vec<Conn>>>,
    accepted: Arc<AtomicUsize>,
}

fn bytes(frame: &AMQPFrame) -> Vec<u8> {
    gen_frame(frame)(WriteContext::from(Vec::new()))
        .expect("encodes")
        .write
}

fn method(channel: u16, class: AMQPClass) -> Vec<u8> {
    bytes(&AMQPFrame::Method(channel, class))
}

impl FakeBroker {
    pub async fn start(script: Script) -> FakeBroker {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind fake");
        let fake = FakeBroker {
            addr: listener.local_addr().expect("addr"),
            script: Arc::new(Mutex::new(script)),
            conns: Arc::new(Mutex::new(Vec::new())),
            accepted: Arc::new(AtomicUsize::new(0)),
        };
        let (script, conns, accepted) = (
            fake.script.clone(),
            fake.conns.clone(),
            fake.accepted.clone(),
        );
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                let seen = Arc::new(Mutex::new(Vec::new()));
                let (tx, rx) = mpsc::unbounded_channel();
                conns.lock().expect("conns").push(Conn {
                    seen: seen.clone(),
                    commands: tx,
                });
                let script = script.lock().expect("script").clone();
                tokio::spawn(serve(sock, script, seen, rx));
            }
        });
        fake
    }

    pub fn url(&self, query: &str) -> String {
        format!("amqp://guest:guest@{}/{query}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// What the `n`-th connection's client has sent so far.
    pub fn seen(&self, n: usize) -> Vec<Seen> {
        self.conns.lock().expect("conns")[n]
            .seen
            .lock()
            .expect("seen")
            .clone()
    }

    fn command(&self, n: usize, command: Command) {
        let _ = self.conns.lock().expect("conns")[n].commands.send(command);
    }

    /// `connection.blocked` with `reason` on connection `n`.
    pub fn block(&self, n: usize, reason: &str) {
        let blocked = connection::AMQPMethod::Blocked(connection::Blocked {
            reason: reason.into(),
        });
        self.command(n, Command::Send(method(0, AMQPClass::Connection(blocked))));
    }

    /// `connection.unblocked` on connection `n`.
    pub fn unblock(&self, n: usize) {
        let unblocked = connection::AMQPMethod::Unblocked(connection::Unblocked {});
        self.command(
            n,
            Command::Send(method(0, AMQPClass::Connection(unblocked))),
        );
    }

    /// `connection.close` with `code` on connection `n`.
    pub fn close(&self, n: usize, code: u16, text: &str) {
        let close = connection::AMQPMethod::Close(connection::Close {
            reply_code: code,
            reply_text: text.into(),
            class_id: 0,
            method_id: 0,
        });
        self.command(n, Command::Send(method(0, AMQPClass::Connection(close))));
    }

    /// Raw bytes on connection `n` (a malformed or oversized frame).
    pub fn send_raw(&self, n: usize, raw: Vec<u8>) {
        self.command(n, Command::Send(raw));
    }

    /// Resumes reading on connection `n` (after `close_channel_on_publish` stopped it).
    pub fn resume_reading(&self, n: usize) {
        self.command(n, Command::Read(true));
    }

    /// Waits (bounded by `crate::common::rig::PATIENCE`) until connection `n` has sent what
    /// `until` looks for.
    pub async fn wait_seen(&self, n: usize, what: &str, until: impl Fn(&[Seen]) -> bool) {
        let deadline = tokio::time::Instant::now() + crate::common::rig::PATIENCE;
        loop {
            if self.conns.lock().expect("conns").len() > n && until(&self.seen(n)) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "connection {n} never sent {what}: {:?}",
                self.conns.lock().expect("conns").get(n).map(|c| c
                    .seen
                    .lock()
                    .expect("seen")
                    .clone())
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Whether `seen` holds the method `(class, method)`.
pub fn has(seen: &[Seen], (class, method): (u16, u16)) -> bool {
    seen.iter()
        .any(|s| matches!(s, Seen::Method(_, c, m) if *c == class && *m == method))
}

/// The position of the first `(class, method)` in `seen`.
pub fn position(seen: &[Seen], (class, method): (u16, u16)) -> Option<usize> {
    seen.iter()
        .position(|s| matches!(s, Seen::Method(_, c, m) if *c == class && *m == method))
}

/// One connection: the broker's half of the handshake, then frames until the client leaves.
async fn serve(
    mut sock: TcpStream,
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let mut header = [0u8; 8];
    if sock.read_exact(&mut header).await.is_err() {
        return;
    }
    let start = connection::AMQPMethod::Start(connection::Start {
        version_major: 0,
        version_minor: 9,
        server_properties: FieldTable::default(),
        mechanisms: "PLAIN AMQPLAIN".into(),
        locales: "en_US".into(),
    });
    let mut session = Session {
        script,
        seen,
        buf: Vec::new(),
        tag: 0,
        body_left: 0,
        channel: 0,
        confirm: false,
        closed_channels: BTreeSet::new(),
        reading: true,
        out: method(0, AMQPClass::Connection(start)),
    };
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        if !session.out.is_empty() {
            let out = std::mem::take(&mut session.out);
            if sock.write_all(&out).await.is_err() {
                return;
            }
        }
        tokio::select! {
            read = sock.read(&mut chunk), if session.reading => match read {
                Ok(0) | Err(_) => {
                    session.seen.lock().expect("seen").push(Seen::Eof);
                    return;
                }
                Ok(n) => {
                    session.buf.extend_from_slice(&chunk[..n]);
                    session.take_frames();
                }
            },
            command = commands.recv() => match command {
                Some(Command::Send(bytes)) => session.out.extend_from_slice(&bytes),
                Some(Command::Read(on)) => session.reading = on,
                None => return,
            },
        }
    }
}

struct Session {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
    buf: Vec<u8>,
    /// The last delivery tag given.
    tag: u64,
    /// Body bytes of the current publish still to come.
    body_left: u64,
    /// The channel publishes are confirmed on (the last opened).
    channel: u16,
    confirm: bool,
    closed_channels: BTreeSet<u16>,
    reading: bool,
    /// What to write next.
    out: Vec<u8>,
}

impl Session {
    fn record(&self, seen: Seen) {
        self.seen.lock().expect("seen").push(seen);
    }

    /// Handles every complete frame read, then confirms what was published in them.
    fn take_frames(&mut self) {
        let first_tag = self.tag + 1;
        let mut complete = Vec::new();
        while self.buf.len() >= 7 {
            let size = u32::from_be_bytes(self.buf[3..7].try_into().expect("4 bytes")) as usize;
            if self.buf.len() < size + 8 {
                break;
            }
            let frame: Vec<u8> = self.buf.drain(..size + 8).collect();
            let Ok((_, frame)) = parse_frame(frame.as_slice()) else {
                panic!("the client sent a malformed frame: {frame:?}");
            };
            if let Some(tag) = self.frame(frame) {
                complete.push(tag);
            }
            if !self.reading {
                break;
            }
        }
        if self.confirm && !complete.is_empty() {
            self.confirm_tags(first_tag, &complete);
        }
    }

    /// Applies one frame; the delivery tag of a publish it completes.
    fn frame(&mut self, frame: AMQPFrame) -> Option<u64> {
        match frame {
            AMQPFrame::Heartbeat => self.record(Seen::Heartbeat),
            AMQPFrame::Method(ch, class) => return self.method(ch, class),
            AMQPFrame::Header(ch, header) => {
                self.body_left = header.body_size;
                if self.body_left == 0 && !self.closed_channels.contains(&ch) {
                    return self.published();
                }
            }
            AMQPFrame::Body(ch, body) => {
                self.body_left = self.body_left.saturating_sub(body.len() as u64);
                if self.body_left == 0 && !self.closed_channels.contains(&ch) {
                    return self.published();
                }
            }
            _ => {}
        }
        None
    }

    fn published(&mut self) -> Option<u64> {
        self.tag += 1;
        self.record(Seen::Published(self.tag));
        Some(self.tag)
    }

    fn method(&mut self, ch: u16, class: AMQPClass) -> Option<u64> {
        let ids = (class.get_amqp_class_id(), class.get_amqp_method_id());
        self.record(Seen::Method(ch, ids.0, ids.1));
        let reply = match class {
            AMQPClass::Connection(connection::AMQPMethod::StartOk(_)) => {
                let (heartbeat, frame_max, channel_max) = self.script.tune;
                AMQPClass::Connection(connection::AMQPMethod::Tune(connection::Tune {
                    channel_max,
                    frame_max,
                    heartbeat,
                }))
            }
            AMQPClass::Connection(connection::AMQPMethod::Open(_)) => {
                AMQPClass::Connection(connection::AMQPMethod::OpenOk(connection::OpenOk {}))
            }
            AMQPClass::Connection(connection::AMQPMethod::Close(_)) => {
                AMQPClass::Connection(connection::AMQPMethod::CloseOk(connection::CloseOk {}))
            }
            AMQPClass::Channel(channel::AMQPMethod::Open(_)) => {
                self.channel = ch;
                self.confirm = false;
                self.tag = 0;
                AMQPClass::Channel(channel::AMQPMethod::OpenOk(channel::OpenOk {}))
            }
            AMQPClass::Confirm(confirm::AMQPMethod::Select(_)) => {
                self.confirm = true;
                AMQPClass::Confirm(confirm::AMQPMethod::SelectOk(confirm::SelectOk {}))
            }
            AMQPClass::Exchange(exchange::AMQPMethod::Declare(_)) => {
                AMQPClass::Exchange(exchange::AMQPMethod::DeclareOk(exchange::DeclareOk {}))
            }
            AMQPClass::Basic(basic::AMQPMethod::Publish(_))
                if self.script.close_channel_on_publish && !self.closed_channels.contains(&ch) =>
            {
                // Mid-page: stop reading (the client's write of a large page then stalls) and
                // close the channel, as RabbitMQ does for a publish to a missing exchange.
                self.closed_channels.insert(ch);
                self.reading = false;
                self.script.close_channel_on_publish = false;
                AMQPClass::Channel(channel::AMQPMethod::Close(channel::Close {
                    reply_code: 404,
                    reply_text: "NOT_FOUND - no exchange 'gone' in vhost '/'".into(),
                    class_id: 60,
                    method_id: 40,
                }))
            }
            _ => return None,
        };
        self.out.extend_from_slice(&method(ch, reply));
        None
    }

    fn confirm_tags(&mut self, first: u64, tags: &[u64]) {
        let ack = |tag, multiple| {
            AMQPClass::Basic(basic::AMQPMethod::Ack(basic::Ack {
                delivery_tag: tag,
                multiple,
            }))
        };
        let last = *tags.last().expect("a tag");
        let _ = first;
        let confirms: Vec<AMQPClass> = match &self.script.confirms {
            Confirms::Never => Vec::new(),
            Confirms::Each => tags.iter().map(|&t| ack(t, false)).collect(),
            Confirms::Multiple => vec![ack(last, true)],
            Confirms::Reversed => tags.iter().rev().map(|&t| ack(t, false)).collect(),
            Confirms::Nack(nacked) => tags
                .iter()
                .map(|&t| {
                    if nacked.contains(&t) {
                        AMQPClass::Basic(basic::AMQPMethod::Nack(basic::Nack {
                            delivery_tag: t,
                            multiple: false,
                            requeue: false,
                        }))
                    } else {
                        ack(t, false)
                    }
                })
                .collect(),
        };
        for class in confirms {
            self.out.extend_from_slice(&method(self.channel, class));
        }
    }
}
