//! A varied fleet: clusters of about 2 KB that differ from one another as a production fleet's
//! do, so that a page of them gzips about 12× (the realistic profile's repeat each other and
//! gzip 31×, which flatters the client's inflation).
//!
//! Takes an index, the time and a seed; gives the same cluster for the same three (each cluster
//! draws from its own generator, [`crate::resource::corpus::Rng`], seeded by the seed and the
//! index, so a fleet is built in any order, on any number of threads).
//!
//! What varies: ids (UUIDv7-shaped, time-ordered, random tails), names, labels, cloud accounts,
//! network ranges, versions, domains, generations, and every time to the microsecond, as a
//! database keeps them. What does not: the shape (the keys of [`super::realistic_resource`]
//! plus a domain) and the decisions: every third cluster (`index % 3 == 0`) was
//! last reconciled more than two hours before `now` (the default rules publish its periodic
//! re-check), the others within the last ten minutes (skipped).

use crate::resource::corpus::Rng;
use crate::sim::clock::format_time;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value as Json, json};

const WORDS: [&str; 48] = [
    "apollo", "atlas", "aurora", "beacon", "birch", "cobalt", "comet", "coral", "delta", "ember",
    "falcon", "fern", "glacier", "granite", "harbor", "helix", "indigo", "jade", "juniper",
    "kestrel", "lagoon", "lumen", "maple", "meridian", "nebula", "nimbus", "onyx", "orchid",
    "pegasus", "pine", "quartz", "raven", "redwood", "sable", "saffron", "sequoia", "sierra",
    "solstice", "summit", "tango", "tundra", "umber", "vega", "willow", "xenon", "yarrow",
    "zenith", "zephyr",
];

const REGIONS: [&str; 12] = [
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "eu-west-1",
    "eu-west-2",
    "eu-central-1",
    "eu-north-1",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "ca-central-1",
];

const INSTANCE_TYPES: [&str; 10] = [
    "m6i.xlarge",
    "m6i.2xlarge",
    "m5.xlarge",
    "m7i.xlarge",
    "c6i.2xlarge",
    "r6i.xlarge",
    "m6a.xlarge",
    "m6a.2xlarge",
    "c5.4xlarge",
    "r5.2xlarge",
];

/// A cluster of the varied fleet (see the module doc), number `index`, at `now`.
pub fn varied_resource(index: u64, now: DateTime<Utc>, seed: u64) -> Json {
    let rng = &mut Rng::new(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    // Creation a year before `now`, a second apart in index order, to the microsecond: the
    // ids' time prefix then grows with the index, so no two ids are alike.
    let created = now - TimeDelta::days(365)
        + TimeDelta::seconds(index as i64)
        + micros(rng.below(1_000_000));
    let id = uuid_v7(created, rng);
    let word = |rng: &mut Rng| WORDS[rng.below(WORDS.len() as u64) as usize];
    let name = format!("{}-{}-{}", word(rng), word(rng), base36(rng, 5));
    let region = REGIONS[rng.below(REGIONS.len() as u64) as usize];
    let env = ["production", "staging", "development"][rng.below(3) as usize];
    let domain = format!("{}.{}.example.com", base36(rng, 6), word(rng));
    let generation = 1 + rng.below(40) as i64;
    let due = index.is_multiple_of(3);
    let reconciled = if due {
        now - TimeDelta::hours(2) - micros(rng.below(3_600_000_000))
    } else {
        now - micros(rng.below(600_000_000))
    };
    let minor = 14 + rng.below(5);
    let cidr = rng.below(256);
    let (min, max) = (2 + rng.below(4), 6 + rng.below(20));
    let org = format!(
        "{:08x}",
        rng.below(97).wrapping_mul(0x2545_f491) & 0xffff_ffff
    );
    let updated_by = format!("{}@example.com", word(rng));
    let conditions = conditions(rng, generation, created, reconciled);
    json!({
        "kind": "Cluster",
        "id": id,
        "href": format!("/api/hyperfleet/v1/clusters/{id}"),
        "name": name,
        "labels": {
            "region": region, "team": format!("team-{}", word(rng)), "environment": env,
            "cost-center": format!("cc-{:04}", rng.below(10_000)),
        },
        "spec": {
            "platform": {"type": "aws", "region": region, "account": format!("{:012}", rng.below(1_000_000_000_000))},
            "release": {"version": format!("4.{minor}.{}", rng.below(40)), "channel": format!("stable-4.{minor}")},
            "network": {"type": "OVNKubernetes", "cidr": format!("10.{cidr}.0.0/16"),
                        "service_cidr": format!("172.{}.0.0/16", 16 + rng.below(16)),
                        "pod_cidr": format!("10.{}.0.0/14", 128 + rng.below(32) * 4), "host_prefix": 23},
            "nodes": {"replicas": min + rng.below(max - min + 1),
                      "instance_type": INSTANCE_TYPES[rng.below(INSTANCE_TYPES.len() as u64) as usize],
                      "autoscaling": {"min": min, "max": max}},
            "dns": {"base_domain": domain},
        },
        "owner_references": {
            "id": format!("org-{org}"), "kind": "Organization",
            "href": format!("/api/hyperfleet/v1/organizations/org-{org}"),
        },
        "generation": generation,
        "created_time": format_time(created),
        "updated_time": format_time(reconciled),
        "created_by": format!("{}@example.com", word(rng)),
        "updated_by": updated_by,
        "status": {"conditions": conditions},
    })
}

/// The five conditions of a cluster at `generation`, reconciled at `reconciled`.
fn conditions(
    rng: &mut Rng,
    generation: i64,
    created: DateTime<Utc>,
    reconciled: DateTime<Utc>,
) -> Vec<Json> {
    let adapters = 3 + rng.below(5);
    let manifests = 10 + rng.below(90);
    let kinds = [
        (
            "Available",
            "AllAdaptersAvailable",
            format!("{adapters} of {adapters} required adapters report Available=True"),
        ),
        (
            "Applied",
            "ManifestsApplied",
            format!("{manifests} manifests applied"),
        ),
        (
            "Health",
            "Healthy",
            format!(
                "{} control plane and {} worker nodes healthy",
                3,
                2 + rng.below(40)
            ),
        ),
        (
            "Reconciled",
            "AllAdaptersReconciled",
            format!("{adapters} adapters reported generation {generation}"),
        ),
        (
            "LastKnownReconciled",
            "AllAdaptersReconciled",
            format!("last reconciled at generation {generation}"),
        ),
    ];
    // The conditions turned True together and were last updated at `reconciled` (the time the
    // rules read), but `Health`, which its adapter reports on its own schedule.
    let transition = created + micros(rng.below(86_400_000_000));
    let health = reconciled - micros(rng.below(60_000_000));
    kinds
        .into_iter()
        .map(|(ty, reason, message)| {
            let updated = if ty == "Health" { health } else { reconciled };
            json!({
                "type": ty, "status": "True", "reason": reason, "message": message,
                "observed_generation": generation, "created_time": format_time(created),
                "last_updated_time": format_time(updated),
                "last_transition_time": format_time(transition),
            })
        })
        .collect()
}

fn micros(n: u64) -> TimeDelta {
    TimeDelta::microseconds(n as i64)
}

/// A UUIDv7-shaped id: the 48-bit millisecond time of `at`, then random bits.
fn uuid_v7(at: DateTime<Utc>, rng: &mut Rng) -> String {
    let ms = at.timestamp_millis() as u64 & 0xffff_ffff_ffff;
    let (a, b) = (rng.next_u64(), rng.next_u64());
    format!(
        "{:08x}-{:04x}-7{:03x}-{:x}{:03x}-{:012x}",
        ms >> 16,
        ms & 0xffff,
        a & 0xfff,
        8 + (a >> 12 & 3),
        a >> 14 & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

/// `n` random lowercase letters and digits.
fn base36(rng: &mut Rng, n: usize) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..n)
        .map(|_| char::from(DIGITS[rng.below(36) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .expect("a time")
            .to_utc()
    }

    fn page(seed: u64) -> Vec<u8> {
        let items: Vec<Json> = (0..100).map(|i| varied_resource(i, now(), seed)).collect();
        let body =
            json!({"kind": "ClusterList", "page": 1, "size": 100, "total": 100, "items": items});
        serde_json::to_vec(&body).expect("serializable")
    }

    #[test]
    fn clusters_are_deterministic_for_a_seed_and_vary() {
        assert_eq!(page(1), page(1));
        assert_ne!(page(1), page(2));
        let ids: std::collections::HashSet<String> = (0..10_000)
            .map(|i| {
                varied_resource(i, now(), 1)["id"]
                    .as_str()
                    .expect("id")
                    .to_string()
            })
            .collect();
        assert_eq!(ids.len(), 10_000);
    }

    #[test]
    fn a_page_is_about_2_kb_a_cluster_and_gzips_about_12_times() {
        use std::io::Write as _;
        let body = page(1);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&body).expect("in memory");
        let gzipped = gz.finish().expect("in memory");
        let per_cluster = body.len() / 100;
        let ratio = body.len() as f64 / gzipped.len() as f64;
        eprintln!("{per_cluster} bytes a cluster, {ratio:.1}×");
        assert!(
            (1800..2600).contains(&per_cluster),
            "{per_cluster} bytes a cluster"
        );
        assert!((10.0..14.0).contains(&ratio), "gzips {ratio:.1}×");
    }
}
