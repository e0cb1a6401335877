//! Deterministic, API-shaped resources for tests, benches and `simulate`: the sample fleet's
//! and the realistic profile's.

use super::{ACTOR, Collection};
use crate::sim::clock::format_time;
use chrono::{DateTime, Utc};
use serde_json::{Value as Json, json};

/// A deterministic, API-shaped resource number `index` of `collection`: a UUID-like id, name,
/// href, generation 1, creation times one second apart, the mandatory `Reconciled` and
/// `LastKnownReconciled` conditions (True at generation 1) and `labels`. Nodepools belong to the
/// cluster with the same index.
pub fn sample_resource(collection: Collection, index: u64, labels: &[(&str, &str)]) -> Json {
    let id = sample_id(collection, index);
    let time = sample_time(index);
    let condition = |ty: &str| {
        json!({
            "type": ty, "status": "True", "reason": "Reconciled", "message": "all adapters reported",
            "observed_generation": 1, "created_time": time, "last_updated_time": time,
            "last_transition_time": time,
        })
    };
    let labels: serde_json::Map<String, Json> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), Json::from(*v)))
        .collect();
    let owner = sample_id(Collection::Clusters, index);
    let href = match collection {
        Collection::Clusters => format!("/api/hyperfleet/v1/clusters/{id}"),
        Collection::NodePools => format!("/api/hyperfleet/v1/clusters/{owner}/nodepools/{id}"),
    };
    let mut resource = json!({
        "kind": collection.kind(),
        "id": id,
        "href": href,
        "name": format!("{}-{index}", &collection.path()[..collection.path().len() - 1]),
        "labels": labels,
        "spec": {},
        "generation": 1,
        "created_time": time,
        "updated_time": time,
        "created_by": ACTOR,
        "updated_by": ACTOR,
        "status": {"conditions": [condition("Reconciled"), condition("LastKnownReconciled")]},
    });
    if collection == Collection::NodePools {
        resource["owner_references"] = json!({
            "id": owner, "kind": "Cluster", "href": format!("/api/hyperfleet/v1/clusters/{owner}"),
        });
    }
    resource
}

/// A realistic cluster of about 2 KB, as a production HyperFleet serves it, at `now`: five
/// conditions (`Available`, `Applied`, `Health`, `Reconciled`, `LastKnownReconciled`, each with
/// reason and message), five labels, a spec with a network and a node pool, owner references.
/// Every third one (`index % 3 == 0`) was last reconciled two hours before `now` (the default
/// rules publish its periodic re-check); the others just now (skipped): about a third due.
pub fn realistic_resource(index: u64, now: DateTime<Utc>) -> Json {
    // Whole seconds, as the API writes its times.
    let now = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
    let id = sample_id(Collection::Clusters, index);
    let created = format_time(now - chrono::TimeDelta::days(30 + (index % 60) as i64));
    let reconciled = match index % 3 {
        0 => format_time(now - chrono::TimeDelta::hours(2)),
        _ => format_time(now),
    };
    let generation = 1 + (index % 5) as i64;
    let condition = |ty: &str, reason: &str, message: &str| {
        json!({
            "type": ty, "status": "True", "reason": reason, "message": message,
            "observed_generation": generation, "created_time": created,
            "last_updated_time": reconciled, "last_transition_time": reconciled,
        })
    };
    let region = ["us-east-1", "eu-west-1", "ap-south-1"][(index % 3) as usize];
    json!({
        "kind": "Cluster",
        "id": id,
        "href": format!("/api/hyperfleet/v1/clusters/{id}"),
        "name": format!("prod-cluster-{index:06}"),
        "labels": {
            "region": region, "tier": "standard", "team": format!("team-{}", index % 17),
            "environment": "production", "cost-center": format!("cc-{:04}", index % 311),
        },
        "spec": {
            "platform": {"type": "aws", "region": region, "account": format!("{:012}", index * 7919 % 1_000_000_000_000)},
            "release": {"version": "4.17.3", "channel": "stable-4.17"},
            "network": {"type": "OVNKubernetes", "cidr": "10.0.0.0/16", "service_cidr": "172.30.0.0/16", "pod_cidr": "10.128.0.0/14"},
            "nodes": {"replicas": 3 + index % 10, "instance_type": "m6i.xlarge", "autoscaling": {"min": 3, "max": 12}},
        },
        "owner_references": {
            "id": format!("org-{:08x}", index % 97), "kind": "Organization",
            "href": format!("/api/hyperfleet/v1/organizations/org-{:08x}", index % 97),
        },
        "generation": generation,
        "created_time": created,
        "updated_time": reconciled,
        "created_by": ACTOR,
        "updated_by": ACTOR,
        "status": {"conditions": [
            condition("Available", "AllAdaptersAvailable", "all required adapters report Available=True"),
            condition("Applied", "ManifestsApplied", "the cluster manifests were applied by every adapter"),
            condition("Health", "Healthy", "control plane and workers are healthy"),
            condition("Reconciled", "AllAdaptersReconciled", "all required adapters reported at the current generation"),
            condition("LastKnownReconciled", "AllAdaptersReconciled", "last reconciled at the current generation"),
        ]},
    })
}

/// The id [`sample_resource`] gives resource `index` of `collection`.
pub fn sample_id(collection: Collection, index: u64) -> String {
    let tag = match collection {
        Collection::Clusters => 0xc1u8,
        Collection::NodePools => 0x9e,
    };
    format!(
        "019466a0-00{tag:02x}-7000-8000-{:012x}",
        index & 0xffff_ffff_ffff
    )
}

fn sample_time(index: u64) -> String {
    let base = chrono::DateTime::from_timestamp(1_735_689_600, 0).unwrap_or_default();
    let seconds = i64::try_from(index).unwrap_or(i64::MAX / 2) % (100 * 365 * 86_400);
    (base + chrono::TimeDelta::seconds(seconds)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
