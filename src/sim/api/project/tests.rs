//! Cases after hyperfleet-api `pkg/api/presenters/presenter_test.go` and `slice_filter.go`.

use super::*;
use serde_json::json;

fn cluster(id: &str) -> Json {
    json!({
        "kind": "Cluster", "id": id, "name": "test-cluster", "href": format!("/c/{id}"),
        "labels": {"team": "platform", "env": "prod"},
        "spec": {"region": "us-east-1", "a": {"z": 1, "b": 2}},
        "generation": 1,
        "created_time": "2026-01-25T00:00:00.123456789Z",
        "updated_time": "2026-01-25T10:00:00Z",
        "created_by": "a@example.com", "updated_by": "b@example.com",
        "status": {"conditions": [
            {"type": "Reconciled", "status": "True", "reason": "R", "message": "m",
             "observed_generation": 1, "created_time": "2026-01-25T00:00:00Z",
             "last_updated_time": "2026-01-25T00:00:01.5Z",
             "last_transition_time": "2026-01-25T00:00:00Z"},
            {"type": "Progressing", "status": "False", "observed_generation": 1,
             "created_time": "2026-03-11T00:00:00Z",
             "last_updated_time": "2026-03-11T00:00:00Z",
             "last_transition_time": "2026-03-11T00:00:00Z"},
        ]},
    })
}

fn fields(list: &[&str]) -> Vec<String> {
    requested_fields(list.iter().copied()).unwrap()
}

#[test]
fn fields_are_split_trimmed_and_given_an_id() {
    assert_eq!(requested_fields([]), None);
    assert_eq!(requested_fields([" , "]), None);
    assert_eq!(
        requested_fields(["name, generation", "labels"]).unwrap(),
        ["name", "generation", "labels", "id"]
    );
    assert_eq!(requested_fields(["id,name"]).unwrap(), ["id", "name"]);
}

#[test]
fn top_level_fields_project_with_sorted_keys() {
    let f = fields(&["name", "generation", "labels", "spec"]);
    check(&f, &cluster("c1")).unwrap();
    let projected = project(&f, &cluster("c1"));
    assert_eq!(
        projected.to_string(),
        r#"{"generation":1,"id":"c1","labels":{"env":"prod","team":"platform"},"name":"test-cluster","spec":{"a":{"b":2,"z":1},"region":"us-east-1"}}"#
    );
}

#[test]
fn times_are_whole_seconds_and_a_missing_deleted_time_is_null() {
    let f = fields(&["created_time", "updated_time", "deleted_time", "deleted_by"]);
    check(&f, &cluster("c1")).unwrap();
    assert_eq!(
        project(&f, &cluster("c1")),
        json!({"created_time": "2026-01-25T00:00:00Z", "updated_time": "2026-01-25T10:00:00Z",
               "deleted_time": null, "deleted_by": null, "id": "c1"})
    );
}

#[test]
fn conditions_project_whole_or_by_subfield() {
    let whole = project(&fields(&["status.conditions"]), &cluster("c1"));
    let first = &whole["status"]["conditions"][0];
    assert_eq!(first["last_updated_time"], "2026-01-25T00:00:01Z");
    assert_eq!(first["reason"], "R");
    let second = &whole["status"]["conditions"][1];
    assert_eq!(second["reason"], Json::Null);
    assert_eq!(
        project(&fields(&["status.*"]), &cluster("c1")),
        whole,
        "status.* is status.conditions"
    );
    let f = fields(&[
        "status.conditions.type",
        "status.conditions.last_updated_time",
    ]);
    check(&f, &cluster("c1")).unwrap();
    assert_eq!(
        project(&f, &cluster("c1")).to_string(),
        r#"{"id":"c1","status":{"conditions":[{"last_updated_time":"2026-01-25T00:00:01Z","type":"Reconciled"},{"last_updated_time":"2026-03-11T00:00:00Z","type":"Progressing"}]}}"#
    );
    let mut empty = cluster("c2");
    empty["status"]["conditions"] = json!([]);
    assert_eq!(
        project(&fields(&["status.conditions"]), &empty),
        json!({"id": "c2", "status": {"conditions": []}})
    );
}

#[test]
fn what_does_not_exist_is_refused_as_the_api_refuses_it() {
    let first = cluster("c1");
    let refused = |list: &[&str]| check(&fields(list), &first).unwrap_err();
    assert_eq!(
        refused(&["labels.env"]),
        "The following field(s) doesn't exist in `Resource`: labels.env"
    );
    assert_eq!(
        refused(&["status"]),
        "The following field(s) doesn't exist in `Resource`: status"
    );
    assert_eq!(
        refused(&["spec.region", "nope"]),
        "The following field(s) doesn't exist in `Resource`: nope, spec.region"
    );
    assert_eq!(
        refused(&["status.conditions.nope"]),
        "The following field(s) doesn't exist in `ResourceCondition`: status.conditions.nope"
    );
    assert_eq!(
        refused(&["status.phase"]),
        "The following field(s) doesn't exist in `ResourceStatus`: status.phase"
    );
}

#[test]
fn owner_references_exist_only_when_the_first_item_has_none() {
    let mut nodepool = cluster("n1");
    nodepool["owner_references"] = json!({"id": "c1", "kind": "Cluster", "href": "/c/c1"});
    let f = fields(&["owner_references"]);
    assert_eq!(
        check(&f, &nodepool).unwrap_err(),
        "The following field(s) doesn't exist in `Resource`: owner_references"
    );
    assert_eq!(
        check(&fields(&["owner_references.id"]), &nodepool).unwrap_err(),
        "The following field(s) doesn't exist in ``: owner_references.id"
    );
    // Checked against a first item without owner, the field exists; an item that has one
    // projects to nothing (left out), one without to null.
    check(&f, &cluster("c1")).unwrap();
    assert_eq!(project(&f, &cluster("c1"))["owner_references"], Json::Null);
    assert!(project(&f, &nodepool).get("owner_references").is_none());
}

#[test]
fn the_envelope_has_null_items_when_empty_and_no_kind() {
    assert_eq!(
        String::from_utf8(envelope(Vec::new(), 2, 3)).unwrap(),
        r#"{"items":null,"page":2,"size":0,"total":3}"#
    );
    assert_eq!(
        String::from_utf8(envelope(vec![json!({"id": "a"})], 1, 1)).unwrap(),
        r#"{"items":[{"id":"a"}],"page":1,"size":1,"total":1}"#
    );
}
