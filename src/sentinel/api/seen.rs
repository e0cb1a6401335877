//! The ids one listing has yielded, remembered as 64-bit hashes in bounded memory, so that a
//! [`super::Pager`] yields each id at most once however far the offset pages shift.
//!
//! Takes ids; gives "seen before?" answers. Invariant: at most 16 bytes per id remembered, even
//! while merging (8 bytes per id at rest, plus a fixed-size batch of the newest ids).
//!
//! A hash collision between two different ids makes the second look seen: it is skipped for
//! this listing only. Each [`SeenIds`] draws a fresh hash key (std's `RandomState`, keyed per
//! process and per instance), so the next cycle's listing hashes the two ids independently and
//! the same pair does not collide again. With 64-bit hashes, a listing of a million ids has a
//! collision with probability about 3·10⁻⁸ (n²/2⁶⁵).

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// How many of the newest hashes are kept in a hash set before they are merged into the
/// sorted run.
const BATCH: usize = 1 << 16;

/// The set of ids seen by one listing.
#[derive(Debug)]
pub(super) struct SeenIds {
    keys: RandomState,
    /// Hashes of all but the newest ids, sorted, exactly sized.
    sorted: Vec<u64>,
    /// Hashes of the newest ids (fewer than [`BATCH`]).
    batch: HashSet<u64, BuildHasherDefault<Prehashed>>,
}

impl SeenIds {
    /// An empty set with its own hash key.
    pub(super) fn new() -> SeenIds {
        SeenIds {
            keys: RandomState::new(),
            sorted: Vec::new(),
            batch: HashSet::default(),
        }
    }

    /// Remembers `id`; true if it was not seen before (or, rarely, collides with one that was).
    pub(super) fn insert(&mut self, id: &str) -> bool {
        let hash = self.keys.hash_one(id);
        if self.sorted.binary_search(&hash).is_ok() || !self.batch.insert(hash) {
            return false;
        }
        if self.batch.len() >= BATCH {
            self.merge();
        }
        true
    }

    /// How many ids are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.sorted.len() + self.batch.len()
    }

    /// Merges the batch into the sorted run: a new exactly-sized run, so a merge holds at most
    /// two runs' worth (16 bytes per id) at once.
    fn merge(&mut self) {
        let mut batch: Vec<u64> = self.batch.drain().collect();
        batch.sort_unstable();
        let mut merged = Vec::with_capacity(self.sorted.len() + batch.len());
        let (mut a, mut b) = (self.sorted.iter().peekable(), batch.iter().peekable());
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            if x <= y {
                merged.push(**x);
                a.next();
            } else {
                merged.push(**y);
                b.next();
            }
        }
        merged.extend(a);
        merged.extend(b);
        self.sorted = merged;
    }
}

/// The hasher of a set of values that are already keyed hashes: uses the value itself.
#[derive(Default)]
pub(super) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64s are hashed with this hasher; fold anything else in anyway.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_every_id_across_merges() {
        let mut seen = SeenIds::new();
        let n = BATCH * 2 + 10;
        for i in 0..n {
            assert!(seen.insert(&format!("id-{i}")), "{i}");
        }
        assert_eq!(seen.len(), n);
        assert!(seen.sorted.len() >= BATCH * 2);
        assert!(seen.sorted.windows(2).all(|w| w[0] < w[1]));
        for i in (0..n).step_by(997) {
            assert!(!seen.insert(&format!("id-{i}")), "{i}");
        }
        assert!(seen.insert("another"));
    }
}
