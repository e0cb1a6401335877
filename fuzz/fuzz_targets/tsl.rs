//! Bytes → the API's search language (`sentinel::tsl::parse`): nothing may panic or
//! hang; a parsed tree prints to a text that parses to the same tree
//! (`sentinel::tsl::check_round_trip`); evaluating it never panics, over the
//! resources of a page (the bytes after the first NUL, when they decode as one, else a fixed
//! page) and over the fake API's stored resources.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::api::decode_page;
use sentinel::sim::api::{Collection, Fleet, ListFilter, sample_resource};
use sentinel::tsl::check_round_trip;
use std::sync::LazyLock;

const PAGE: &str = r#"{"kind":"ClusterList","page":1,"size":2,"total":2,"items":[
{"id":"a","kind":"Cluster","name":"a","generation":2,"labels":{"env":"prod","x.y/z":"1"},
 "created_time":"2025-01-01T00:00:00Z","updated_time":"2025-01-02T00:00:00.5Z",
 "status":{"conditions":[{"type":"Reconciled","status":"True","observed_generation":2,
 "last_updated_time":"2025-01-02T00:00:00Z","last_transition_time":"2025-01-01T00:00:00Z"}]}},
{"id":"b","kind":"Cluster","generation":1,"deleted_time":"2025-01-03T00:00:00Z",
 "status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}]}"#;

static FLEET: LazyLock<Fleet> = LazyLock::new(|| {
    let fleet = Fleet::new();
    for i in 0..4 {
        let labels = [("env", if i % 2 == 0 { "prod" } else { "dev" })];
        let _ = fleet.insert(
            Collection::Clusters,
            sample_resource(Collection::Clusters, i, &labels),
        );
    }
    fleet
});

fuzz_target!(|data: &[u8]| {
    let (search, page) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, PAGE.as_bytes()),
    };
    let Ok(text) = std::str::from_utf8(search) else {
        return;
    };
    let tsl = match check_round_trip(text) {
        Ok(Some(tsl)) => tsl,
        Ok(None) => return,
        Err(why) => panic!("{why}"),
    };
    let page = decode_page(page).or_else(|_| decode_page(PAGE.as_bytes()));
    let now = sentinel::cel::time::Timestamp::UNIX_EPOCH;
    for resource in page.map(|p| p.items).unwrap_or_default() {
        let _ = tsl.eval(&resource, now);
    }
    let filter = ListFilter {
        search: tsl,
        owner: None,
    };
    let _ = FLEET.list(Collection::Clusters, &filter, 1, 100);
});
