//! What the fake API's list endpoints served: every page counted (resources and body bytes,
//! before gzip), and grouped into listings, a listing of a collection running from a page 1
//! request to the next page 1 request of the same path.
//!
//! Invariant: the totals are the sum of the finished listings, the open ones and nothing else.

use std::collections::HashMap;

/// Totals over every list request served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// List pages served.
    pub pages: u64,
    /// Resources in them.
    pub items: u64,
    /// Body bytes (before gzip).
    pub bytes: u64,
}

/// One listing of a collection: its pages from page 1 on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The list path (`/api/hyperfleet/v1/clusters`).
    pub path: String,
    /// Pages served.
    pub pages: u64,
    /// Resources in them.
    pub items: u64,
    /// Body bytes (before gzip).
    pub bytes: u64,
}

/// The bookkeeping behind [`super::FakeApi::served`].
#[derive(Debug, Default)]
pub(super) struct Counter {
    totals: Served,
    open: HashMap<String, Listing>,
    finished: Vec<Listing>,
}

/// How many finished listings are kept for [`super::FakeApi::take_listings`] when nobody
/// takes them.
const KEPT: usize = 10_000;

impl Counter {
    pub(super) fn page(&mut self, path: &str, page: u32, items: u64, bytes: u64) {
        self.totals.pages += 1;
        self.totals.items += items;
        self.totals.bytes += bytes;
        if page == 1
            && let Some(done) = self.open.remove(path)
        {
            self.finish(done);
        }
        let listing = self
            .open
            .entry(path.to_string())
            .or_insert_with(|| Listing {
                path: path.to_string(),
                pages: 0,
                items: 0,
                bytes: 0,
            });
        listing.pages += 1;
        listing.items += items;
        listing.bytes += bytes;
    }

    fn finish(&mut self, listing: Listing) {
        if self.finished.len() >= KEPT {
            self.finished.remove(0);
        }
        self.finished.push(listing);
    }

    pub(super) fn totals(&self) -> Served {
        self.totals
    }

    pub(super) fn take_finished(&mut self) -> Vec<Listing> {
        std::mem::take(&mut self.finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_ends_at_the_next_first_page_of_its_path() {
        let mut c = Counter::default();
        c.page("/c", 1, 100, 1000);
        c.page("/n", 1, 5, 50);
        c.page("/c", 2, 3, 30);
        assert!(c.take_finished().is_empty());
        c.page("/c", 1, 7, 70);
        let done = c.take_finished();
        assert_eq!(
            done,
            [Listing {
                path: "/c".into(),
                pages: 2,
                items: 103,
                bytes: 1030
            }]
        );
        assert_eq!(
            c.totals(),
            Served {
                pages: 4,
                items: 115,
                bytes: 1150
            }
        );
    }
}
