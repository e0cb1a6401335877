use super::*;
use crate::sim::clock::ManualClock;
use crate::tsl::parse;

fn fleet_of(n: u64) -> Fleet {
    let fleet = Fleet::new();
    for i in 0..n {
        let shard = if i % 2 == 0 { "even" } else { "odd" };
        fleet
            .insert(
                Collection::Clusters,
                sample_resource(Collection::Clusters, i, &[("shard", shard)]),
            )
            .unwrap();
    }
    fleet
}

fn ids(page: &ListPage) -> Vec<String> {
    page.items
        .iter()
        .map(|b| {
            serde_json::from_slice::<Json>(b).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn lists_pages_of_the_filtered_collection() {
    let fleet = fleet_of(7);
    let all = ListFilter::default();
    let page = fleet.list(Collection::Clusters, &all, 3, 3);
    assert_eq!((page.items.len(), page.total), (1, 7));
    let odd = ListFilter {
        search: parse("labels.shard='odd'").unwrap(),
        owner: None,
    };
    let page = fleet.list(Collection::Clusters, &odd, 1, 2);
    assert_eq!(page.total, 3);
    assert_eq!(ids(&page)[0], sample_id(Collection::Clusters, 1));
    assert!(
        fleet
            .list(Collection::Clusters, &all, 9, 3)
            .items
            .is_empty()
    );
}

#[test]
fn insert_update_remove_keep_the_index_consistent() {
    let fleet = fleet_of(4);
    let id1 = sample_id(Collection::Clusters, 1);
    let id3 = sample_id(Collection::Clusters, 3);
    assert!(fleet.remove(Collection::Clusters, &id1).is_some());
    assert!(fleet.update(Collection::Clusters, &id3, |r| r["generation"] = json!(2)));
    assert_eq!(
        fleet.get(Collection::Clusters, &id3).unwrap()["generation"],
        2
    );
    assert_eq!(
        fleet.meta(Collection::Clusters, &id3).unwrap().generation,
        2
    );
    assert!(fleet.update(Collection::Clusters, &id3, |r| r["id"] = json!("other")));
    assert!(fleet.get(Collection::Clusters, &id3).is_some());
    assert_eq!(fleet.len(Collection::Clusters), 3);
    let listed = ids(&fleet.list(Collection::Clusters, &ListFilter::default(), 1, 10));
    assert_eq!(listed[2], id3);
    assert_eq!(
        fleet.insert(Collection::Clusters, json!([])),
        Err(FleetError::NotAnObject)
    );
    assert_eq!(
        fleet.insert(Collection::Clusters, json!({})),
        Err(FleetError::MissingId)
    );
    assert!(fleet.is_empty(Collection::NodePools));
}

#[test]
fn sample_resources_decode_cleanly() {
    use crate::cel::host::ResourceField;
    let r = crate::cel::host::Resource::from_json(sample_resource(Collection::NodePools, 5, &[]));
    assert_eq!(r.kind().map(|t| t.as_str()), Ok("NodePool"));
    let text = |f| {
        r.text(f)
            .and_then(Result::ok)
            .map(|t| t.as_str().to_string())
    };
    assert_eq!(
        text(ResourceField::CreatedTime).as_deref(),
        Some("2025-01-01T00:00:05Z")
    );
    assert_eq!(r.condition("Reconciled").unwrap().generation(), &Ok(1));
    let owner = sample_id(Collection::Clusters, 5);
    assert_eq!(
        text(ResourceField::Href),
        Some(format!(
            "/api/hyperfleet/v1/clusters/{owner}/nodepools/{}",
            sample_id(Collection::NodePools, 5)
        ))
    );
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        parse_time("2026-03-01T12:00:00Z").unwrap(),
    ))
}

fn report(adapter: &str, generation: i64, finalized: bool) -> StatusReport {
    let mut conditions = vec![
        json!({"type": "Available", "status": "True"}),
        json!({"type": "Applied", "status": "True"}),
        json!({"type": "Health", "status": "True"}),
    ];
    if finalized {
        conditions.push(json!({"type": "Finalized", "status": "True"}));
    }
    serde_json::from_value(json!({
        "adapter": adapter, "observed_generation": generation,
        "observed_time": "2026-03-01T12:00:00Z", "conditions": conditions,
    }))
    .unwrap()
}

fn new_fleet(clock: &Arc<ManualClock>) -> (Fleet, String) {
    let fleet = Fleet::with_clock(clock.clone());
    fleet.set_required_adapters(Collection::Clusters, vec!["a".into(), "b".into()]);
    let mut resource = sample_resource(Collection::Clusters, 0, &[]);
    resource["status"]["conditions"] = json!([]);
    let id = resource["id"].as_str().unwrap().to_string();
    fleet.insert(Collection::Clusters, resource).unwrap();
    (fleet, id)
}

#[test]
fn reports_reconcile_and_a_patch_bumps_the_generation() {
    let clock = clock();
    let (fleet, id) = new_fleet(&clock);
    let c = Collection::Clusters;
    let now = clock.now();
    let outcome = fleet
        .put_status(c, &id, &report("a", 1, false), now)
        .unwrap();
    assert!(matches!(
        outcome,
        PutOutcome::Stored {
            hard_deleted: false,
            ..
        }
    ));
    assert!(!fleet.meta(c, &id).unwrap().reconciled);
    fleet
        .put_status(c, &id, &report("b", 1, false), now)
        .unwrap();
    assert!(fleet.meta(c, &id).unwrap().reconciled);
    assert_eq!(
        fleet.progress(c),
        Progress {
            total: 1,
            reconciled: 1,
            deleting: 0
        }
    );

    // Labels alone keep the generation; a new spec bumps it and unreconciles.
    fleet.patch(c, &id, &json!({"labels": {"x": "y"}})).unwrap();
    assert_eq!(fleet.meta(c, &id).unwrap().generation, 1);
    clock.advance(std::time::Duration::from_secs(3));
    fleet
        .patch(c, &id, &json!({"spec": {"replicas": 3}}))
        .unwrap();
    let meta = fleet.meta(c, &id).unwrap();
    assert_eq!((meta.generation, meta.reconciled), (2, false));
    let resource = fleet.get(c, &id).unwrap();
    assert_eq!(resource["updated_time"], "2026-03-01T12:00:03Z");
    assert_eq!(
        resource["status"]["conditions"][0]["last_updated_time"],
        "2026-03-01T12:00:03Z"
    );
    // The same spec again changes nothing.
    fleet
        .patch(c, &id, &json!({"spec": {"replicas": 3}}))
        .unwrap();
    assert_eq!(fleet.meta(c, &id).unwrap().generation, 2);
    let stale = fleet
        .put_status(c, &id, &report("a", 3, false), now)
        .unwrap();
    assert_eq!(stale, PutOutcome::Discarded(Discard::FromTheFuture));

    for bad in [
        json!({}),
        json!({"name": "x"}),
        json!({"spec": 1}),
        json!({"labels": {"a": 1}}),
        json!([]),
    ] {
        assert!(
            matches!(fleet.patch(c, &id, &bad), Err(FleetError::BadPatch(_))),
            "{bad}"
        );
    }
    assert!(matches!(
        fleet.patch(c, "nope", &json!({"spec": {}})),
        Err(FleetError::NotFound { .. })
    ));
}

#[test]
fn deletion_cascades_and_ends_in_hard_delete_once_finalized() {
    let clock = clock();
    let (fleet, id) = new_fleet(&clock);
    fleet.set_required_adapters(Collection::NodePools, vec!["a".into()]);
    let mut nodepool = sample_resource(Collection::NodePools, 0, &[]);
    nodepool["status"]["conditions"] = json!([]);
    let np = nodepool["id"].as_str().unwrap().to_string();
    fleet.insert(Collection::NodePools, nodepool).unwrap();

    let c = Collection::Clusters;
    fleet.delete(c, &id).unwrap();
    fleet.delete(c, &id).unwrap();
    let meta = fleet.meta(c, &id).unwrap();
    assert_eq!((meta.generation, meta.deleted), (2, true));
    assert!(fleet.meta(Collection::NodePools, &np).unwrap().deleted);
    assert_eq!(fleet.progress(c).deleting, 1);
    assert!(matches!(
        fleet.patch(c, &id, &json!({"spec": {}})),
        Err(FleetError::Deleted { .. })
    ));

    let now = clock.now();
    // Available alone does not finish a deletion.
    fleet
        .put_status(c, &id, &report("a", 2, false), now)
        .unwrap();
    fleet
        .put_status(c, &id, &report("b", 2, true), now)
        .unwrap();
    assert!(fleet.meta(c, &id).is_some());
    let last = fleet
        .put_status(c, &id, &report("a", 2, true), now)
        .unwrap();
    assert!(matches!(
        last,
        PutOutcome::Stored {
            hard_deleted: true,
            ..
        }
    ));
    assert!(fleet.meta(c, &id).is_none());
    assert!(fleet.progress(c).converged());

    let np_done = fleet
        .put_status(Collection::NodePools, &np, &report("a", 2, true), now)
        .unwrap();
    assert!(matches!(
        np_done,
        PutOutcome::Stored {
            hard_deleted: true,
            ..
        }
    ));
    assert!(fleet.is_empty(Collection::NodePools));
}
