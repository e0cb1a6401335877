//! One AMQP 0-9-1 connection with one publishing channel, as the publisher holds it.
//!
//! Takes the broker's URL (as [`super::connection_uri`] completes it), its TLS parameters and the
//! publisher's I/O thread (`broker::io`); gives a [`Connection`]: the handshake done (PLAIN, or the URL's
//! `auth_mechanism`; TLS for `amqps://`) and a driver task (`driver.rs`) that owns the socket on
//! the I/O thread. The publisher's side only queues what is to be written (a page of publishes
//! in one buffer, a control frame) and waits on the state the driver keeps: the confirms in the
//! [`Window`] of the page in flight, `connection.blocked` and the connection's end in the
//! [`ConnectionStatus`] readiness reads, the broker's `channel.close`, and the replies the
//! publisher waits for (`open-ok`, `select-ok`, `declare-ok`).
//!
//! Invariant: the connection's I/O never waits on the caller's thread: whatever the caller's
//! thread is doing (blocked in a write to a full pipe, a long page), the driver reads, answers
//! and sends heartbeats. Nothing here waits without a bound of its own or the caller's, and per
//! published event nothing is allocated: a page's buffer goes to the driver and comes back, its
//! confirms are marks in one reused vector.

use super::driver;
use super::handshake::{self, Tuning};
use super::link::{Job, Link, Mark, State};
use super::tls::{self, TlsParams};
use super::wire::{self, PublishFrames, Route};
use crate::broker::ConnectionStatus;
use crate::broker::io::IoThread;
use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, channel, confirm, exchange};
use amq_protocol::types::{FieldTable, ShortString};
use lapin::uri::AMQPUri;
use std::sync::Arc;
use std::time::Duration;

/// An open AMQP connection. Dropping it closes it with `connection.close` (after what is queued,
/// within the driver's bound), as lapin and amqp091 do, never with a bare TCP close.
pub(super) struct Connection {
    link: Arc<Link>,
    tuning: Tuning,
    /// The next delivery tag on the channel.
    next_tag: u64,
    /// Pages queued so far.
    queued: u64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.link.close();
    }
}

/// What a connection needs to open: where, how, as whom, on which thread.
pub(super) struct Dial<'a> {
    /// The URL, completed.
    pub uri: &'a AMQPUri,
    /// Its TLS parameters.
    pub tls: &'a TlsParams,
    /// The connection name shown in the management UI.
    pub name: &'a str,
    /// Where the connection's I/O runs.
    pub io: &'a IoThread,
    /// How long the driver waits for the broker's `close-ok`.
    pub close_bound: Duration,
    /// The exchange, for the driver's log lines.
    pub exchange: &'a str,
}

impl Connection {
    /// Connects, authenticates, tunes and opens the vhost, on the I/O thread; the driver then
    /// runs there. The caller bounds it (a handshake given up is aborted).
    pub(super) async fn open(dial: Dial<'_>) -> Result<Connection, String> {
        let (uri, tls, name) = (dial.uri.clone(), dial.tls.clone(), dial.name.to_owned());
        let (close_bound, exchange) = (dial.close_bound, dial.exchange.to_owned());
        let task = dial.io.run(async move {
            let stream = tls::dial(&uri, &tls).await?;
            let (mut rd, mut wr) = tokio::io::split(stream);
            let (tuning, inbound) = handshake::handshake(&mut rd, &mut wr, &uri, &name).await?;
            let status = Arc::new(ConnectionStatus::default());
            status.set_connected(true);
            let link = Arc::new(Link::new(status));
            let io = driver::Io {
                rd,
                wr,
                inbound,
                heartbeat: tuning.heartbeat,
                close_bound,
                exchange,
            };
            tokio::spawn(driver::drive(io, link.clone()));
            Ok::<_, String>((link, tuning))
        });
        let (link, tuning) = task
            .await
            .ok_or_else(|| "the AMQP I/O thread is gone".to_string())??;
        Ok(Connection {
            link,
            tuning,
            next_tag: 1,
            queued: 0,
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

    /// Why the broker blocks publishing (`connection.blocked`), while it does.
    pub(super) fn blocked(&self) -> Option<String> {
        self.link.status.blocked_reason()
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
        self.link.push(Job::Control(bytes));
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

    /// A buffer for the next page: the last page's, once the driver has written it.
    pub(super) fn take_spare(&self) -> Option<Vec<u8>> {
        self.link.state().spare.take()
    }

    /// Queues a page (whole frames) for the driver; its number for [`Connection::written`].
    pub(super) fn send_page(&mut self, page: Vec<u8>) -> u64 {
        self.queued += 1;
        self.link.push(Job::Page(page));
        self.queued
    }

    /// Waits until page `n` is written to the socket. The caller bounds it.
    pub(super) async fn written(&self, n: u64) -> Result<(), String> {
        self.wait(|state| (state.written >= n).then_some(Ok(())))
            .await
    }

    /// Starts the confirm window of a page of `n` publishes (before queueing them).
    pub(super) fn expect_confirms(&mut self, n: usize) {
        self.link.state().window.begin(self.next_tag, n);
        self.next_tag += n as u64;
    }

    /// Waits until every publish of the page is confirmed, or the connection or channel is lost
    /// (the reason), or the broker blocks the connection (then [`Connection::blocked`] says
    /// why). The caller bounds it; [`Connection::with_marks`] then reads the outcome.
    pub(super) async fn confirms(&self) -> Result<(), String> {
        let status = self.link.status.clone();
        self.wait(|state| {
            if state.window.complete() {
                Some(Ok(()))
            } else if status.blocked() {
                Some(Err("blocked by the broker".to_owned()))
            } else {
                None
            }
        })
        .await
    }

    /// The page's marks.
    pub(super) fn with_marks<T>(&self, each: impl FnOnce(&[Mark]) -> T) -> T {
        each(self.link.state().window.marks())
    }

    /// Closes the connection (`connection.close` after what is queued, then `close-ok`). The
    /// caller bounds it; the driver bounds it too.
    pub(super) async fn close(&mut self) -> Result<(), String> {
        self.link.close();
        loop {
            let woken = self.link.wake.notified();
            if let Some(why) = &self.link.state().ended {
                return if why == driver::CLOSED_BY_US {
                    Ok(())
                } else {
                    Err(why.clone())
                };
            }
            woken.await;
        }
    }
}
