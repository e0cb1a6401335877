//! A generated fleet of realistic HyperFleet cluster resources (JSON), for `sentinel bench`, the
//! criterion benches, the differential tests and the decoder's tests.
//!
//! Takes a size, the evaluation time and a seed; gives the same resources for the same three
//! (a splitmix64 generator, no dependency). It lives in the resource layer so every layer that
//! decodes resources, and the decoder's own tests, can use it.

use crate::cel::time::{self, Duration, Timestamp};
use serde_json::{Value as Json, json};

/// A small deterministic generator (splitmix64), so fleets are reproducible without a
/// dependency (the simulator's varied fleet draws from it too).
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`: the same seed draws the same numbers.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The states of a generated fleet, with their share in percent (they add up to 100).
pub const STATES: [(&str, u64); 7] = [
    ("new", 8),
    ("reconciled, recent", 34),
    ("reconciled, stale", 14),
    ("not reconciled, within debounce", 10),
    ("not reconciled, debounced", 16),
    ("generation changed", 14),
    ("other conditions only", 4),
];

fn ago(now: Timestamp, secs: u64) -> String {
    let d = Duration::from_nanos(i128::from(secs) * 1_000_000_000);
    match d.and_then(|d| time::ts_sub_dur(now, d)) {
        Ok(t) => time::format_timestamp(t),
        Err(_) => time::format_timestamp(now),
    }
}

/// A realistic fleet of `n` cluster resources at `now`: a mix of new, reconciled (recently or
/// long ago), failing (within or past the debounce) and changed resources, each with a few
/// conditions, labels and a spec. Deterministic for a seed.
pub fn fleet(n: usize, now: Timestamp, seed: u64) -> Vec<Json> {
    let mut rng = Rng::new(seed);
    (0..n).map(|i| resource(i, now, &mut rng)).collect()
}

fn resource(i: usize, now: Timestamp, rng: &mut Rng) -> Json {
    let mut pick = rng.below(100);
    let state = STATES
        .iter()
        .position(|(_, share)| {
            let hit = pick < *share;
            pick = pick.saturating_sub(*share);
            hit
        })
        .unwrap_or(0);
    let generation = 1 + rng.below(7) as i64 + i64::from(state != 0);
    let (status, observed, age) = match state {
        1 => ("True", generation, rng.below(29 * 60)),
        2 => ("True", generation, 31 * 60 + rng.below(6 * 3600)),
        3 => ("False", generation, rng.below(10)),
        4 => ("False", generation, 11 + rng.below(3600)),
        5 => ("True", generation - 1, rng.below(3600)),
        _ => ("Unknown", generation, rng.below(600)),
    };
    let updated = ago(now, age);
    let created = ago(now, age + 86_400 + rng.below(30 * 86_400));
    let condition = |ty: &str, status: &str| {
        json!({"type": ty, "status": status, "reason": "AsExpected", "message": "",
               "observed_generation": observed, "created_time": created,
               "last_updated_time": updated, "last_transition_time": updated})
    };
    let mut conditions = vec![condition("Available", "True"), condition("Ready", status)];
    if state != 0 && state != 6 {
        conditions.push(condition("Reconciled", status));
    }
    if state == 0 {
        conditions.clear();
    }
    let region = ["us-east-1", "eu-west-1", "ap-south-1"][i % 3];
    json!({
        "id": format!("cls-{i:07}"),
        "kind": "Cluster",
        "name": format!("cluster-{i}"),
        "href": format!("/api/hyperfleet/v1/clusters/cls-{i:07}"),
        "generation": generation,
        "created_time": created,
        "updated_time": updated,
        "labels": {"region": region, "tier": "standard"},
        "spec": {"version": "4.17", "nodes": 3 + rng.below(10)},
        "status": {"conditions": conditions},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleets_are_deterministic_and_mixed() {
        let now = time::parse_timestamp("2025-10-21T12:00:00Z").expect("now");
        let a = fleet(300, now, 1);
        assert_eq!(a, fleet(300, now, 1));
        let new = a.iter().filter(|r| r["generation"] == json!(1)).count();
        assert!(new > 0 && new < 300, "{new} new resources");
    }
}
