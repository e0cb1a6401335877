//! What a connection's two sides share: the publisher's [`super::conn::Connection`] and its
//! driver task (`driver.rs`) on the I/O thread.
//!
//! Takes nothing; gives the [`Link`] (the status readiness reads, the [`State`] behind a mutex,
//! and the two wake-ups), the [`Job`]s the publisher queues for the driver, and the confirm
//! [`Window`] of the page in flight.
//!
//! Invariant: neither side holds the state's lock across an await, so neither waits on the other.

use crate::broker::ConnectionStatus;
use amq_protocol::protocol::AMQPClass;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::Notify;

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
    pub(super) fn begin(&mut self, first: u64, n: usize) {
        self.first = first;
        self.marks.clear();
        self.marks.resize(n, Mark::Pending);
        self.low = 0;
        self.unresolved = n;
    }

    /// Applies a confirm of `tag` (with `multiple`, of every earlier tag too); tags outside the
    /// page are ignored. Whether the page is now fully confirmed.
    pub(super) fn resolve(&mut self, tag: u64, multiple: bool, mark: Mark) -> bool {
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

    /// Whether every message of the page is confirmed (acked or nacked).
    pub(super) fn complete(&self) -> bool {
        self.unresolved == 0
    }
}

/// What the driver writes, in the order queued.
pub(super) enum Job {
    /// A page of publishes: the publisher's buffer, given back through [`State::spare`].
    Page(Vec<u8>),
    /// A control frame (`channel.open`, `confirm.select`, `exchange.declare`).
    Control(Vec<u8>),
    /// Our `connection.close`, after everything queued before it; the driver then ends when
    /// the broker answers `close-ok`, or at its bound.
    Close,
}

/// What the driver and the publisher share about the channel and the connection.
#[derive(Default)]
pub(super) struct State {
    /// Why the connection ended, once it has.
    pub(super) ended: Option<String>,
    /// The channel publishes go to (0: none open).
    pub(super) channel: u16,
    /// Why the broker closed `channel`, once it has.
    pub(super) channel_closed: Option<String>,
    /// The last reply on `channel` the publisher has not taken.
    pub(super) reply: Option<AMQPClass>,
    /// The confirms of the page in flight.
    pub(super) window: Window,
    /// What the publisher queued for the driver to write.
    pub(super) outbox: VecDeque<Job>,
    /// Pages written so far (a page's number is the count queued before it, plus one).
    pub(super) written: u64,
    /// A page buffer the driver has written, for the publisher's next page.
    pub(super) spare: Option<Vec<u8>>,
    /// Our `connection.close` is queued (the publisher gave the connection up, or closes).
    closing: bool,
}

/// The connection's shared half: its status, the state, and the two wake-ups.
pub(super) struct Link {
    /// What readiness reads.
    pub(super) status: Arc<ConnectionStatus>,
    state: Mutex<State>,
    /// Wakes the publisher: a reply, a confirm, a page written, a block, the end.
    pub(super) wake: Notify,
    /// Wakes the driver: something queued.
    pub(super) work: Notify,
}

impl Link {
    /// A link for a connection just opened.
    pub(super) fn new(status: Arc<ConnectionStatus>) -> Link {
        Link {
            status,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            work: Notify::new(),
        }
    }

    /// The shared state.
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection ended (the first reason wins) and wakes the publisher.
    pub(super) fn end(&self, why: String) {
        self.status.set_connected(false);
        self.state().ended.get_or_insert(why);
        self.wake.notify_one();
    }

    /// Queues `job` for the driver.
    pub(super) fn push(&self, job: Job) {
        self.state().outbox.push_back(job);
        self.work.notify_one();
    }

    /// Queues our `connection.close` once, unless the connection has ended.
    pub(super) fn close(&self) {
        let mut state = self.state();
        if state.ended.is_some() || state.closing {
            return;
        }
        state.closing = true;
        state.outbox.push_back(Job::Close);
        drop(state);
        self.work.notify_one();
    }
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
}
