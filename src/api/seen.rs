//! The ids one listing has yielded, remembered as 64-bit hashes in bounded memory, so that a
//! [`super::Pager`] yields each id at most once however far the offset pages shift.
//!
//! Takes ids; gives "seen before?" answers. Invariant: 8 bytes per id remembered, even while
//! merging, plus a fixed-size batch of the newest ids and, once the sorted run is large, a
//! fixed-size index into it ([`INDEX_BUCKETS`] offsets, 256 KiB).
//!
//! Why the index: a binary search of a run of a million hashes (8 MiB) misses the cache at each
//! of its last ten or so steps, which made the lookup a fifth of a decide-and-skip cycle's CPU
//! (`perf record` of the million-resource cycle in docs/performance.md). The hashes are uniform, so their top 16 bits split the
//! run into buckets of about equal size; the index holds where each bucket starts, and a lookup
//! searches only its bucket (~15 hashes, two cache lines, at a million ids).
//!
//! Why a page at a time ([`SeenIds::retain_new`]): even so, each lookup missed the cache twice,
//! once in the index and once in its bucket, one id after the other (13 % of that cycle's
//! CPU). A page's ids are hashed first and their index entries and buckets read [`AHEAD`] at a
//! time, loads that do not wait for one another, so their misses overlap; the searches that
//! follow find the lines cached.
//!
//! A hash collision between two different ids makes the second look seen: it is skipped for
//! this listing only. Each [`SeenIds`] draws a fresh hash key (foldhash's `quality::RandomState`:
//! a per-process random seed and one per instance), so the next cycle's listing hashes the two
//! ids independently and the same pair does not collide again. foldhash, not std's SipHash: an
//! id is hashed once per resource, and SipHash cost ~260 instructions on a 36-byte id. With
//! 64-bit hashes, a listing of a million ids has a collision with probability about 3·10⁻⁸
//! (n²/2⁶⁵).

use foldhash::quality::RandomState;
use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// How many of the newest hashes are kept in a hash set before they are merged into the
/// sorted run. (A merge moves the whole run and grows it by a `realloc`: 2¹⁴ was measured
/// too, saving ~0.5 MiB of peak RSS at a million ids for 0.3 s more CPU per cycle.)
const BATCH: usize = 1 << 16;

/// How many buckets the index splits the sorted run into (by the hashes' top 16 bits).
const INDEX_BUCKETS: usize = 1 << 16;

/// The run length from which the index is kept: below it the run is small enough for the
/// cache, and the index would be larger than the run it indexes.
const INDEXED_RUN: usize = 2 * INDEX_BUCKETS;

/// How many ids' index entries (then buckets) [`SeenIds::retain_new`] reads before using any:
/// about as many cache misses as a core keeps in flight.
const AHEAD: usize = 16;

/// The set of ids seen by one listing.
#[derive(Debug)]
pub(super) struct SeenIds {
    keys: RandomState,
    /// Hashes of all but the newest ids, sorted, exactly sized.
    sorted: Vec<u64>,
    /// Hashes of the newest ids (fewer than [`BATCH`]).
    batch: HashSet<u64, BuildHasherDefault<Prehashed>>,
    /// Empty, or (for a run of at least [`INDEXED_RUN`]) where in `sorted` each bucket of
    /// hashes starts, and the run's length last: bucket `b` is `sorted[index[b]..index[b + 1]]`.
    index: Vec<u32>,
    /// The hashes of the page being deduplicated (reused across pages; `None`: no id).
    page: Vec<Option<u64>>,
}

impl SeenIds {
    /// An empty set with its own hash key.
    pub(super) fn new() -> SeenIds {
        SeenIds {
            keys: RandomState::default(),
            sorted: Vec::new(),
            batch: HashSet::default(),
            index: Vec::new(),
            page: Vec::new(),
        }
    }

    /// Keeps the items that `id` says have an id not seen before (or none), remembering those
    /// ids: [`SeenIds::insert`] on each item in turn, but with the run's places of the page's
    /// ids read ahead of the searches (see the module docs).
    pub(super) fn retain_new<T>(&mut self, items: &mut Vec<T>, id: impl Fn(&T) -> Option<&str>) {
        let mut page = std::mem::take(&mut self.page);
        page.clear();
        page.extend(
            items
                .iter()
                .map(|item| id(item).map(|id| self.keys.hash_one(id))),
        );
        self.read_ahead(&page);
        let mut hashes = page.iter();
        items.retain(|_| match hashes.next() {
            Some(Some(hash)) => self.insert_hash(*hash),
            _ => true,
        });
        self.page = page;
    }

    /// Reads the index entries, then the bucket ends and middles, of `hashes`, [`AHEAD`] at a
    /// time, so that the cache misses of a page's lookups overlap. Only the cache changes.
    fn read_ahead(&self, hashes: &[Option<u64>]) {
        if self.index.is_empty() {
            return; // a run this short stays cached
        }
        let mut sum = 0u64;
        for chunk in hashes.chunks(AHEAD) {
            let mut places = [(0, 0); AHEAD];
            for (place, hash) in places.iter_mut().zip(chunk) {
                *place = self.place(hash.unwrap_or(0));
            }
            for &(start, end) in &places[..chunk.len()] {
                for at in [start, (start + end) / 2, end.saturating_sub(1)] {
                    sum = sum.wrapping_add(self.sorted.get(at).copied().unwrap_or(0));
                }
            }
        }
        // The loads are what matters: keep them from being optimized away.
        std::hint::black_box(sum);
    }

    /// Remembers `id`; true if it was not seen before (or, rarely, collides with one that was).
    #[cfg(test)]
    pub(super) fn insert(&mut self, id: &str) -> bool {
        self.insert_hash(self.keys.hash_one(id))
    }

    fn insert_hash(&mut self, hash: u64) -> bool {
        if self.in_run(hash) || !self.batch.insert(hash) {
            return false;
        }
        if self.batch.len() >= BATCH {
            self.merge();
        }
        true
    }

    /// Whether `hash` is in the sorted run: in its bucket when the run is indexed.
    fn in_run(&self, hash: u64) -> bool {
        let (start, end) = self.place(hash);
        let run = self.sorted.get(start..end).unwrap_or(&[]);
        run.binary_search(&hash).is_ok()
    }

    /// Where in the run `hash` would be: its bucket when the run is indexed, else all of it.
    fn place(&self, hash: u64) -> (usize, usize) {
        let bucket = (hash >> 48) as usize;
        match self.index.get(bucket..bucket + 2) {
            Some(&[start, end]) => (start as usize, end as usize),
            _ => (0, self.sorted.len()),
        }
    }

    /// Rebuilds the index of the run (or drops it: a run too short, or too long for `u32`
    /// offsets, is searched whole).
    fn reindex(&mut self) {
        self.index.clear();
        let n = self.sorted.len();
        if n < INDEXED_RUN || u32::try_from(n).is_err() {
            return;
        }
        self.index.reserve_exact(INDEX_BUCKETS + 1);
        let mut at = 0;
        for bucket in 0..INDEX_BUCKETS as u64 {
            while at < n && self.sorted[at] >> 48 < bucket {
                at += 1;
            }
            self.index.push(at as u32);
        }
        self.index.push(n as u32);
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
        self.reindex();
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

    /// A page at a time keeps what one id at a time keeps: the first of each id, on the page
    /// and across pages, items without an id always; with the run indexed or not.
    #[test]
    fn pages_keep_what_ids_one_by_one_keep() {
        let mut paged = SeenIds::new();
        let mut single = SeenIds::new();
        let n = INDEXED_RUN + BATCH + 500;
        let mut kept = 0;
        for (page, first) in (0..n + 300).step_by(100).enumerate() {
            // Each page repeats ids of pages long past, of the one before, and its own.
            let mut items: Vec<Option<String>> = (first..first + 100)
                .map(|i| match i % 10 {
                    3 => Some(format!("id-{}", i / 2)),
                    5 => Some(format!("id-{}", i.saturating_sub(150))),
                    7 => Some(format!("id-{}", first + 1)),
                    9 => None,
                    _ => Some(format!("id-{i}")),
                })
                .collect();
            let want: Vec<Option<String>> = items
                .iter()
                .filter(|id| id.as_deref().is_none_or(|id| single.insert(id)))
                .cloned()
                .collect();
            paged.retain_new(&mut items, |id| id.as_deref());
            assert_eq!(items, want, "page {page}");
            kept += items.len();
        }
        assert!(!paged.index.is_empty());
        assert_eq!(paged.len(), single.len());
        assert!(kept > n / 2);
    }

    #[test]
    fn remembers_every_id_across_merges() {
        let mut seen = SeenIds::new();
        // Past the indexed run length, so later lookups go through the index.
        let n = INDEXED_RUN + BATCH * 2 + 10;
        for i in 0..n {
            assert!(seen.insert(&format!("id-{i}")), "{i}");
        }
        assert_eq!(seen.len(), n);
        assert!(seen.sorted.len() >= INDEXED_RUN + BATCH);
        assert!(!seen.index.is_empty());
        assert!(seen.sorted.windows(2).all(|w| w[0] < w[1]));
        for i in (0..n).step_by(997) {
            assert!(!seen.insert(&format!("id-{i}")), "{i}");
        }
        assert!(seen.insert("another"));
    }

    /// The indexed lookup answers as a search of the whole run: every hash of the run, and
    /// its neighbours (absent), found or not alike, in buckets full, empty and at both ends.
    #[test]
    fn the_index_finds_what_the_whole_run_holds() {
        let mut seen = SeenIds::new();
        // Spread over every bucket, plus a crowd in a few and none in others.
        let mut hashes: Vec<u64> = (0..INDEXED_RUN as u64 * 2)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
            .collect();
        hashes.extend((0..5000u64).map(|i| (7 << 48) + i * 2 + 1));
        hashes.extend([1, 3, u64::MAX, u64::MAX - 2]);
        hashes.retain(|h| h >> 48 != 9);
        hashes.sort_unstable();
        hashes.dedup();
        seen.sorted = hashes.clone();
        seen.reindex();
        assert_eq!(seen.index.len(), INDEX_BUCKETS + 1);
        for &h in &hashes {
            assert!(seen.in_run(h), "{h:#x}");
            for near in [h.wrapping_sub(1), h.wrapping_add(1)] {
                assert_eq!(
                    seen.in_run(near),
                    hashes.binary_search(&near).is_ok(),
                    "{near:#x}"
                );
            }
        }
        for probe in [0, 2, 9 << 48, (9 << 48) + 1, (10 << 48) - 1, u64::MAX - 1] {
            assert_eq!(
                seen.in_run(probe),
                hashes.binary_search(&probe).is_ok(),
                "{probe:#x}"
            );
        }
        // A short run is searched whole, with no index.
        seen.sorted.truncate(INDEXED_RUN - 1);
        seen.reindex();
        assert!(seen.index.is_empty());
        assert!(seen.in_run(hashes[0]));
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
            assert!(all.iter().all(|&h| seen.in_run(h)), "round {round}");
            assert_eq!(seen.index.is_empty(), seen.sorted.len() < INDEXED_RUN);
            assert!(
                seen.sorted.capacity() < seen.sorted.len() + BATCH,
                "round {round}"
            );
        }
    }
}
