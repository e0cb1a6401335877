//! The ids of the per-resource spans and the span current on this thread: span ids drawn as the
//! SDK draws them (random, not zero), the current ids log lines carry ([`current`]), and the
//! guards that make a span current ([`Entered`], [`Begun`]).
//!
//! Invariant: a span id is drawn at most once; a begun span's id, drawn at its first read, is
//! the one every later read sees.

use opentelemetry::trace::SpanId;
use std::cell::Cell;
use std::time::SystemTime;

thread_local! {
    /// The trace id and span id of the resource span current on this thread (see [`Entered`]);
    /// a span id of 0 is one not drawn yet, drawn at its first read (see [`CycleSpans::begin`]).
    static CURRENT: Cell<Option<([u8; 16], u64)>> = const { Cell::new(None) };
}

/// The ids of the resource span current on this thread, if one is (for log lines); a span id
/// not drawn yet is drawn now, and is the span's from then on.
pub(crate) fn current() -> Option<([u8; 16], [u8; 8])> {
    CURRENT.with(|c| {
        let (trace, mut span) = c.get()?;
        if span == 0 {
            span = draw();
            c.set(Some((trace, span)));
        }
        Some((trace, span.to_be_bytes()))
    })
}

/// A resource span made current for this thread's log lines until dropped (never held across
/// an await).
#[must_use = "the span is current only while the guard lives"]
pub struct Entered(Option<([u8; 16], u64)>);

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

impl Entered {
    pub(super) fn enter(trace: [u8; 16], span: u64) -> Entered {
        Entered(CURRENT.with(|c| c.replace(Some((trace, span)))))
    }
}

/// Makes the ids `(trace, span)` current for this thread's log lines until the guard drops.
#[cfg(test)]
pub(crate) fn enter_ids(trace: [u8; 16], span: [u8; 8]) -> Entered {
    Entered::enter(trace, u64::from_be_bytes(span))
}

/// A span id as the SDK draws one: random, not zero.
pub(super) fn draw() -> u64 {
    loop {
        let id = fastrand::u64(..);
        if id != 0 {
            return id;
        }
    }
}

/// A span id as the SDK draws one: random, not zero.
pub(crate) fn fresh_span_id() -> SpanId {
    SpanId::from(draw())
}

/// A resource span begun by [`super::CycleSpans::begin`], current for this thread's log lines until
/// dropped (never held across an await). In an unsampled cycle its id is drawn only when
/// something reads it (a log line, or [`Begun::span`]): a settled resource's span is seen by
/// nothing, and a random id drawn later is as random as one drawn now.
#[must_use = "the span is current only while the guard lives"]
pub struct Begun {
    pub(super) start: SystemTime,
    pub(super) _entered: Entered,
}

impl Begun {
    /// The span, its id drawn now if nothing has read it yet (it is the current span: no other
    /// is entered while this guard lives).
    pub fn span(&self) -> ResourceSpan {
        let id = current().map_or(SpanId::INVALID, |(_, span)| SpanId::from_bytes(span));
        debug_assert!(id != SpanId::INVALID, "a begun span is current");
        ResourceSpan {
            id,
            start: self.start,
        }
    }
}

/// One resource span, started: its id and start time (the epoch when the cycle is unsampled,
/// as nothing reads it then).
#[derive(Clone, Copy, Debug)]
pub struct ResourceSpan {
    pub(super) id: SpanId,
    pub(super) start: SystemTime,
}
