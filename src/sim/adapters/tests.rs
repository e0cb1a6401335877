use super::*;
use crate::sim::api::{sample_id, sample_resource};

#[test]
fn specs_parse_with_options() {
    let spec = AdapterSpec::parse("dns:latency=15ms,fail=0.25,after=validation").unwrap();
    assert_eq!(spec.name, "dns");
    assert_eq!(spec.latency, Duration::from_millis(15));
    assert_eq!(spec.failure_rate, 0.25);
    assert_eq!(spec.after.as_deref(), Some("validation"));
    assert!(AdapterSpec::parse("quiet:silent").unwrap().silent);
    let waits = AdapterSpec::parse("dns:wait=validation").unwrap();
    assert!(waits.silent_while_waiting && waits.after.as_deref() == Some("validation"));
    assert_eq!(
        AdapterSpec::parse("plain").unwrap(),
        AdapterSpec::new("plain", Duration::ZERO)
    );
    for bad in [
        "",
        "a b",
        "x:latency=fast",
        "x:fail=2",
        "x:loud",
        "x:after=",
        "x:latency=-1s",
    ] {
        assert!(AdapterSpec::parse(bad).is_err(), "{bad}");
    }
}

fn resource(generation: i64, conditions: Json) -> Json {
    let mut r = sample_resource(Collection::Clusters, 1, &[]);
    r["generation"] = json!(generation);
    r["status"]["conditions"] = conditions;
    r
}

fn available(report: &Json) -> (&str, &str) {
    let c = &report["conditions"][0];
    assert_eq!(c["type"], "Available");
    (c["status"].as_str().unwrap(), c["reason"].as_str().unwrap())
}

#[test]
fn reports_follow_the_adapter_contract() {
    let now = "2026-01-01T00:00:00Z";
    let plain = AdapterSpec::new("pullsecret", Duration::ZERO);
    let report = report_for(&plain, &resource(3, json!([])), 0.5, now).unwrap();
    assert_eq!(available(&report), ("True", "JobSucceeded"));
    assert_eq!(
        (
            report["observed_generation"].as_i64(),
            report["observed_time"].as_str()
        ),
        (Some(3), Some(now))
    );
    let types: Vec<&str> = report["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["Available", "Applied", "Health"]);

    let flaky = AdapterSpec {
        failure_rate: 0.3,
        ..plain.clone()
    };
    assert_eq!(
        available(&report_for(&flaky, &resource(1, json!([])), 0.29, now).unwrap()).0,
        "False"
    );
    assert_eq!(
        available(&report_for(&flaky, &resource(1, json!([])), 0.3, now).unwrap()).0,
        "True"
    );

    let silent = AdapterSpec {
        silent: true,
        ..plain.clone()
    };
    assert!(report_for(&silent, &resource(1, json!([])), 0.0, now).is_none());

    let dns = AdapterSpec {
        after: Some("validation".into()),
        ..AdapterSpec::new("dns", Duration::ZERO)
    };
    let waiting = report_for(&dns, &resource(2, json!([])), 0.9, now).unwrap();
    assert_eq!(available(&waiting), ("False", "PreconditionsNotMet"));
    let old = json!([{"type": "ValidationSuccessful", "status": "True", "observed_generation": 1}]);
    assert_eq!(
        available(&report_for(&dns, &resource(2, old), 0.9, now).unwrap()).1,
        "PreconditionsNotMet"
    );
    let done =
        json!([{"type": "ValidationSuccessful", "status": "True", "observed_generation": 2}]);
    assert_eq!(
        available(&report_for(&dns, &resource(2, done.clone()), 0.9, now).unwrap()).0,
        "True"
    );
    let quiet = AdapterSpec {
        silent_while_waiting: true,
        ..dns.clone()
    };
    assert!(report_for(&quiet, &resource(2, json!([])), 0.9, now).is_none());
    assert!(report_for(&quiet, &resource(2, done), 0.9, now).is_some());

    let mut deleted = resource(4, json!([]));
    deleted["deleted_time"] = json!(now);
    let finalizing = report_for(&dns, &deleted, 0.0, now).unwrap();
    assert_eq!(finalizing["conditions"][3]["type"], "Finalized");
    assert_eq!(finalizing["conditions"][3]["status"], "True");
}

#[test]
fn events_name_their_resource() {
    let cluster = sample_id(Collection::Clusters, 7);
    let nodepool = sample_id(Collection::NodePools, 7);
    let event =
        |data: Json, ty: &str| serde_json::to_vec(&json!({"type": ty, "data": data})).unwrap();
    let cluster_type = "com.redhat.hyperfleet.cluster.reconcile";
    let by_type = Address::from_event(&event(json!({"id": cluster}), cluster_type)).unwrap();
    assert_eq!(
        by_type.path(),
        format!("/api/hyperfleet/v1/clusters/{cluster}")
    );
    let href = format!("/api/hyperfleet/v1/clusters/{cluster}/nodepools/{nodepool}");
    let np = Address::from_event(&event(json!({"id": nodepool, "href": href}), "x")).unwrap();
    assert_eq!(
        (np.collection, np.owner.as_deref()),
        (Collection::NodePools, Some(cluster.as_str()))
    );
    assert_eq!(np.path(), href);
    let owned = json!({"id": nodepool, "kind": "NodePool", "owner_references": {"id": cluster}});
    assert_eq!(Address::from_event(&event(owned, "x")).unwrap(), np);
    assert!(
        Address::from_event(&event(json!({"id": nodepool, "kind": "NodePool"}), "x")).is_none()
    );
    assert!(Address::from_event(&event(json!({"kind": "Cluster"}), "x")).is_none());
    assert!(Address::from_event(b"not json").is_none());
}

#[test]
fn the_generator_is_uniform_enough_and_reproducible() {
    let mut a = SplitMix64(42);
    let draws: Vec<f64> = (0..10_000).map(|_| a.next_f64()).collect();
    assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
    let below = draws.iter().filter(|d| **d < 0.1).count();
    assert!((800..1200).contains(&below), "{below}");
    assert_eq!(SplitMix64(42).next_u64(), SplitMix64(42).next_u64());
}
