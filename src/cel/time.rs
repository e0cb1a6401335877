//! Timestamps and durations: parsing, formatting, checked arithmetic and accessors.
//!
//! Invariant: a [`Timestamp`] is always within 0001-01-01T00:00:00Z..=9999-12-31T23:59:59.999999999Z
//! and a [`Duration`] within ±10000 years; every constructor and operation that could leave those
//! ranges returns an `Overflow` error instead.

use super::value::EvalError;

/// A point in time: nanoseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    nanos: i128,
}

/// A signed span of time in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    nanos: i128,
}

impl Timestamp {
    /// Nanoseconds since the Unix epoch.
    pub fn nanos(self) -> i128 {
        self.nanos
    }
}

impl Duration {
    /// Nanoseconds.
    pub fn nanos(self) -> i128 {
        self.nanos
    }
}
