//! The ids one listing has yielded, remembered as 64-bit hashes in bounded memory, so that a
//! [`super::Pager`] yields each id at most once however far the offset pages shift.
//!
//! Takes ids; gives "seen before?" answers. Invariant: 8 bytes per id remembered, even while
//! merging, plus a fixed-size batch of the newest ids.
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

    /// Merges the batch into the sorted run in place: the run grows by the batch's length (a
    /// `realloc`, which for a run this large remaps its pages instead of copying them), then the
    /// two are merged from the back. No second run is ever allocated, so the set holds 8 bytes
    /// per id plus the fixed-size batch, even while merging.
    fn merge(&mut self) {
        let mut batch: Vec<u64> = self.batch.drain().collect();
        batch.sort_unstable();
        let old = self.sorted.len();
        self.sorted.reserve_exact(batch.len());
        self.sorted.resize(old + batch.len(), 0);
        let (mut i, mut j) = (old, batch.len());
        for k in (0..old + batch.len()).rev() {
            if j == 0 {
                break; // the rest of the run is already in place
            }
            if i > 0 && self.sorted[i - 1] > batch[j - 1] {
                self.sorted[k] = self.sorted[i - 1];
                i -= 1;
            } else {
                self.sorted[k] = batch[j - 1];
                j -= 1;
            }
        }
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

    #[test]
    fn merging_in_place_keeps_the_run_sorted_exact_and_tight() {
        // Batches that interleave with the run, precede it and follow it.
        let mut seen = SeenIds::new();
        let mut all = std::collections::BTreeSet::new();
        for round in 0..4u64 {
            for v in 0..BATCH as u64 {
                let h = match round {
                    0 => (1 << 40) + v * 4 + 2,
                    1 => (1 << 40) + v * 4 + 1,
                    2 => v,
                    _ => u64::MAX - v,
                };
                seen.batch.insert(h);
                all.insert(h);
            }
            seen.merge();
            assert!(seen.batch.is_empty());
            assert_eq!(
                seen.sorted,
                all.iter().copied().collect::<Vec<_>>(),
                "round {round}"
            );
            assert!(
                seen.sorted.capacity() < seen.sorted.len() + BATCH,
                "round {round}"
            );
        }
    }
}
