//! A connection's driver: the one task that reads and writes its socket, on the publisher's I/O
//! thread (see `broker::io`).
//!
//! Takes the stream after the handshake and the [`Link`] it shares with the publisher; turns
//! frames into the link's state (confirms, replies, `channel.close`, `connection.blocked`), and
//! writes, one after the other and each whole, what the publisher queued (pages, control frames,
//! our `connection.close`), its own replies to the broker (`close-ok`) and heartbeats.
//!
//! Writes never interleave: a reply the broker asks for while a page is going out is written
//! right after that page, never skipped. A connection ends on a socket error, the broker's
//! `connection.close` (once our `close-ok` is out), our own `close` answered, a frame error
//! (answered with `connection.close` 501), or nothing heard for two heartbeat intervals, judged
//! only after reading whatever had arrived; every end past a close has the close bound.
//!
//! Invariant: this task never waits on the publisher (it only takes what is queued), so the
//! broker hears heartbeats and answers while the caller's thread is blocked.

use super::handshake::close_reason;
use super::link::{Job, Link, Mark};
use super::tls::Stream;
use super::wire::{self, HEARTBEAT, Inbound, Incoming};
use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, AMQPHardError, channel, connection, constants};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf, ReadHalf, WriteHalf};
use tokio::time::{Instant, sleep_until};

/// The reason a connection ended by our own `close` records.
pub(super) const CLOSED_BY_US: &str = "connection closed";

/// The stream and what the handshake agreed.
pub(super) struct Io {
    /// The read half.
    pub rd: ReadHalf<Stream>,
    /// The write half.
    pub wr: WriteHalf<Stream>,
    /// The frame reader, holding what arrived after the handshake.
    pub inbound: Inbound,
    /// The negotiated heartbeat in seconds (0: none).
    pub heartbeat: u16,
    /// How long to wait for the broker's `close-ok`, or to finish writing before our close.
    pub close_bound: Duration,
    /// The exchange, for the log lines.
    pub exchange: String,
}

/// What is being written: its bytes, how far, and what it is.
struct Out {
    bytes: Vec<u8>,
    pos: usize,
    kind: OutKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OutKind {
    /// A page the publisher queued: given back and counted when written.
    Page,
    /// Anything else the publisher or the driver queued.
    Frame,
    /// Our `connection.close`: the bound starts when it is written.
    Close,
}

/// What a frame asks of the driver.
enum Action {
    None,
    /// Write this reply after what is being written.
    Reply(Vec<u8>),
    /// The broker closed the connection: write its `close-ok`, then end for this reason.
    Closed(String, Vec<u8>),
    /// End now, for this reason.
    End(String),
}

/// Runs the connection until it ends, then marks the link ended.
pub(super) async fn drive(io: Io, link: Arc<Link>) {
    let mut driver = Driver {
        beat: Duration::from_secs(io.heartbeat.into()),
        close_bound: io.close_bound,
        exchange: io.exchange,
        rd: io.rd,
        wr: io.wr,
        inbound: io.inbound,
        replies: VecDeque::new(),
        writing: None,
        ending: None,
        deadline: None,
        unreadable: false,
        link,
    };
    let why = driver.run().await;
    driver.link.end(why);
}

struct Driver {
    rd: ReadHalf<Stream>,
    wr: WriteHalf<Stream>,
    inbound: Inbound,
    link: Arc<Link>,
    beat: Duration,
    close_bound: Duration,
    exchange: String,
    /// Our replies to the broker, written before anything else queued.
    replies: VecDeque<Vec<u8>>,
    writing: Option<Out>,
    /// Why the connection ends once what must still be written is out.
    ending: Option<String>,
    /// When to end regardless: our close unanswered, or an end whose writes do not finish.
    deadline: Option<Instant>,
    /// A frame error made the rest of the stream unreadable.
    unreadable: bool,
}

impl Driver {
    async fn run(&mut self) -> String {
        let mut heard = Instant::now();
        let mut last_write = heard;
        let mut tick = heard + self.beat / 2;
        loop {
            if !self.unreadable
                && let Some(why) = self.take_frames()
            {
                return why;
            }
            if self.writing.is_none() {
                self.writing = self.next_out();
            }
            if self.writing.is_none()
                && let Some(why) = self.ending.take()
            {
                return why;
            }
            let deadline = self.deadline;
            tokio::select! {
                biased;
                read = self.rd.read(self.inbound.spare()), if !self.unreadable => {
                    match read {
                        Ok(n) if n > 0 => self.inbound.filled(n),
                        // The broker's own reason, when it closed the connection first.
                        _ if self.ending.is_some() => return self.ending.take().unwrap_or_default(),
                        Ok(_) => return "the broker closed the connection".to_owned(),
                        Err(e) => return e.to_string(),
                    }
                    heard = Instant::now();
                }
                done = write_some(&mut self.wr, &mut self.writing) => {
                    last_write = Instant::now();
                    match done {
                        Ok(true) => self.written(last_write),
                        Ok(false) => {}
                        Err(e) => return e.to_string(),
                    }
                }
                () = self.link.work.notified(), if self.writing.is_none() => {}
                () = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    return self.ending.take().unwrap_or_else(|| format!(
                        "the broker did not answer connection.close within {:?}", self.close_bound
                    ));
                }
                () = sleep_until(tick), if !self.beat.is_zero() => {
                    let now = Instant::now();
                    if now - heard >= self.beat * 2 {
                        // This thread may have been held up: read what arrived before judging.
                        match self.read_now().await {
                            Some(Ok(())) => heard = Instant::now(),
                            Some(Err(why)) => return why,
                            None => return format!(
                                "missed heartbeats from the broker (nothing heard for {:?})",
                                now - heard
                            ),
                        }
                    }
                    tick = now + self.beat / 2;
                    if self.writing.is_none() && now - last_write >= self.beat / 2 {
                        self.writing = Some(frame(HEARTBEAT.to_vec()));
                    }
                }
            }
        }
    }

    /// Applies the complete frames read so far; `Some(reason)` when the connection ends now.
    fn take_frames(&mut self) -> Option<String> {
        loop {
            match self.inbound.next() {
                Ok(Some(incoming)) => match handle(incoming, &self.link, &self.exchange) {
                    Action::None => {}
                    Action::Reply(bytes) => self.replies.push_back(bytes),
                    Action::Closed(why, close_ok) => {
                        self.replies.push_back(close_ok);
                        self.end_after_writes(why);
                    }
                    Action::End(why) => return Some(why),
                },
                Ok(None) => return None,
                Err(e) => {
                    // AMQP's answer to a frame error: connection.close 501, then the end (what
                    // follows on the stream cannot be read).
                    let why = e.to_string();
                    let close = close_frame(AMQPHardError::FRAMEERROR.get_id(), &why);
                    self.replies.push_back(close);
                    self.end_after_writes(why);
                    // What follows on the stream cannot be read; the writes go out (bounded).
                    self.unreadable = true;
                    return None;
                }
            }
        }
    }

    fn end_after_writes(&mut self, why: String) {
        self.ending.get_or_insert(why);
        self.deadline
            .get_or_insert_with(|| Instant::now() + self.close_bound);
    }

    /// The next thing to write: our replies first, then what the publisher queued (nothing
    /// more of the publisher's once the connection is ending).
    fn next_out(&mut self) -> Option<Out> {
        if let Some(bytes) = self.replies.pop_front() {
            return Some(frame(bytes));
        }
        if self.ending.is_some() {
            return None;
        }
        let job = self.link.state().outbox.pop_front()?;
        Some(match job {
            Job::Page(bytes) => Out {
                bytes,
                pos: 0,
                kind: OutKind::Page,
            },
            Job::Control(bytes) => frame(bytes),
            Job::Close => Out {
                bytes: close_frame(constants::REPLY_SUCCESS, "OK"),
                pos: 0,
                kind: OutKind::Close,
            },
        })
    }

    /// `self.writing` is out.
    fn written(&mut self, now: Instant) {
        let Some(out) = self.writing.take() else {
            return;
        };
        match out.kind {
            OutKind::Page => {
                let mut state = self.link.state();
                state.written += 1;
                state.spare = Some(out.bytes);
                drop(state);
                self.link.wake.notify_one();
            }
            OutKind::Close => {
                self.deadline.get_or_insert(now + self.close_bound);
            }
            OutKind::Frame => {}
        }
    }

    /// Reads what the socket holds now, without waiting, after letting the runtime take in its
    /// pending I/O events: `Some(Ok)` when something was read, `None` when nothing is there.
    async fn read_now(&mut self) -> Option<Result<(), String>> {
        tokio::task::yield_now().await;
        let (rd, inbound) = (&mut self.rd, &mut self.inbound);
        let read = poll_fn(|cx| {
            let mut buf = ReadBuf::new(inbound.spare());
            Poll::Ready(match Pin::new(&mut *rd).poll_read(cx, &mut buf) {
                Poll::Pending => None,
                Poll::Ready(Ok(())) => Some(Ok(buf.filled().len())),
                Poll::Ready(Err(e)) => Some(Err(e)),
            })
        })
        .await?;
        Some(match read {
            Ok(0) => Err("the broker closed the connection".to_owned()),
            Ok(n) => {
                self.inbound.filled(n);
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        })
    }
}

fn frame(bytes: Vec<u8>) -> Out {
    Out {
        bytes,
        pos: 0,
        kind: OutKind::Frame,
    }
}

fn close_frame(code: u16, text: &str) -> Vec<u8> {
    let text: String = text.chars().take(200).collect();
    let close = connection::Close {
        reply_code: code,
        reply_text: text.as_str().into(),
        class_id: 0,
        method_id: 0,
    };
    let frame = AMQPFrame::Method(
        0,
        AMQPClass::Connection(connection::AMQPMethod::Close(close)),
    );
    wire::control_bytes(&frame).unwrap_or_default()
}

/// Writes some of `out` (pending forever when there is nothing to write); `Ok(true)` once all
/// of it is written and flushed. Cancel-safe: progress is recorded in `out` as it is made.
async fn write_some(wr: &mut WriteHalf<Stream>, out: &mut Option<Out>) -> std::io::Result<bool> {
    let Some(out) = out.as_mut() else {
        return std::future::pending().await;
    };
    if out.pos < out.bytes.len() {
        let n = wr.write(&out.bytes[out.pos..]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        out.pos += n;
        if out.pos < out.bytes.len() {
            return Ok(false);
        }
    }
    // TLS may hold the last records until flushed.
    wr.flush().await?;
    Ok(true)
}

/// Applies one frame to the link; what the driver must do about it.
fn handle(frame: Incoming, link: &Link, exchange: &str) -> Action {
    match frame {
        Incoming::Ack {
            channel,
            tag,
            multiple,
        } => confirm(link, channel, tag, multiple, Mark::Ack),
        Incoming::Nack {
            channel,
            tag,
            multiple,
        } => confirm(link, channel, tag, multiple, Mark::Nack),
        Incoming::Heartbeat | Incoming::Content(_) => Action::None,
        Incoming::Method(0, AMQPClass::Connection(method)) => {
            connection_method(method, link, exchange)
        }
        Incoming::Method(id, AMQPClass::Channel(channel::AMQPMethod::Close(close))) => {
            let ok = AMQPClass::Channel(channel::AMQPMethod::CloseOk(channel::CloseOk {}));
            let mut state = link.state();
            if state.channel == id {
                state.channel_closed = Some(close_reason(close.reply_code, &close.reply_text));
                drop(state);
                link.wake.notify_one();
            }
            match wire::control_bytes(&AMQPFrame::Method(id, ok)) {
                Ok(bytes) => Action::Reply(bytes),
                Err(_) => Action::None,
            }
        }
        Incoming::Method(id, class) => {
            let mut state = link.state();
            if state.channel == id {
                state.reply = Some(class);
                drop(state);
                link.wake.notify_one();
            }
            Action::None
        }
    }
}

fn connection_method(method: connection::AMQPMethod, link: &Link, exchange: &str) -> Action {
    match method {
        connection::AMQPMethod::Close(close) => {
            let ok = AMQPClass::Connection(connection::AMQPMethod::CloseOk(connection::CloseOk {}));
            let why = close_reason(close.reply_code, &close.reply_text);
            let bytes = wire::control_bytes(&AMQPFrame::Method(0, ok)).unwrap_or_default();
            Action::Closed(why, bytes)
        }
        connection::AMQPMethod::CloseOk(_) => Action::End(CLOSED_BY_US.to_owned()),
        connection::AMQPMethod::Blocked(blocked) => {
            let reason = blocked.reason.to_string();
            tracing::warn!(reason = %reason, exchange,
                "RabbitMQ blocked the connection (resource alarm); publishing paused until it unblocks");
            link.status.set_blocked(Some(reason));
            link.wake.notify_one();
            Action::None
        }
        connection::AMQPMethod::Unblocked(_) => {
            tracing::info!(
                exchange,
                "RabbitMQ unblocked the connection; publishing resumes"
            );
            link.status.set_blocked(None);
            link.wake.notify_one();
            Action::None
        }
        _ => Action::None,
    }
}

fn confirm(link: &Link, channel: u16, tag: u64, multiple: bool, mark: Mark) -> Action {
    let mut state = link.state();
    if state.channel == channel && state.window.resolve(tag, multiple, mark) {
        drop(state);
        link.wake.notify_one();
    }
    Action::None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::ConnectionStatus;
    use tokio::net::{TcpListener, TcpStream};

    /// The driver's thread held up for more than two heartbeat intervals while the broker's
    /// heartbeat arrived: it is read before the missed-heartbeat judgement, and the connection
    /// lives. With nothing arriving, the same judgement ends it, naming missed heartbeats.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stall_reads_what_arrived_before_judging_heartbeats_missed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (mut broker, _) = listener.accept().await.expect("accept");
        let stream: Stream = Box::new(client);
        let (rd, wr) = tokio::io::split(stream);
        let link = Arc::new(Link::new(Arc::new(ConnectionStatus::default())));
        let io = Io {
            rd,
            wr,
            inbound: Inbound::new(0),
            heartbeat: 1,
            close_bound: Duration::from_secs(1),
            exchange: "x".to_owned(),
        };
        let driver = tokio::spawn(drive(io, link.clone()));
        tokio::task::yield_now().await;
        broker.write_all(&HEARTBEAT).await.expect("heartbeat");
        // This thread, the driver's, is held up for 2.5 heartbeat intervals.
        std::thread::sleep(Duration::from_millis(2500));
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert_eq!(link.state().ended, None, "the stall cost the connection");
        // Silence from now on: the driver ends the connection for missed heartbeats.
        driver.await.expect("driver");
        let ended = link.state().ended.clone().unwrap_or_default();
        assert!(ended.starts_with("missed heartbeats"), "{ended}");
    }
}
