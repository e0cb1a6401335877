use super::*;

fn t(s: &str) -> DateTime<Utc> {
    parse_time(&format!("2026-01-01T00:00:{s}Z")).unwrap()
}

fn report(adapter: &str, generation: i64, available: &str, extra: &[(&str, &str)]) -> StatusReport {
    let mut conditions = vec![
        json!({"type": "Available", "status": available, "reason": "R", "message": "M"}),
        json!({"type": "Applied", "status": "True"}),
        json!({"type": "Health", "status": "True"}),
    ];
    for (ty, status) in extra {
        conditions.push(json!({"type": ty, "status": status}));
    }
    serde_json::from_value(json!({
        "adapter": adapter, "observed_generation": generation,
        "observed_time": "2026-01-01T00:00:00Z", "conditions": conditions,
    }))
    .unwrap()
}

fn stored(adapter: &str, generation: i64, available: &str, at: &str) -> AdapterStatus {
    accept(
        &report(adapter, generation, available, &[]),
        t(at),
        None,
        generation,
    )
    .unwrap()
}

fn required() -> Vec<String> {
    ["validation", "dns"].map(String::from).to_vec()
}

fn run(generation: i64, deleted: bool, previous: &[Json], statuses: &[AdapterStatus]) -> Vec<Json> {
    aggregate(&AggregateInput {
        generation,
        updated_time: t("05"),
        deleted,
        previous,
        required: &required(),
        statuses,
    })
}

fn find<'a>(conditions: &'a [Json], ty: &str) -> &'a Json {
    conditions.iter().find(|c| c["type"] == ty).unwrap()
}

#[test]
fn reports_are_discarded_as_the_api_does() {
    let first = stored("dns", 2, "True", "10");
    let stale = report("dns", 1, "True", &[]);
    assert_eq!(
        accept(&stale, t("11"), Some(&first), 2),
        Err(Discard::Stale)
    );
    let future = report("dns", 3, "True", &[]);
    assert_eq!(
        accept(&future, t("11"), Some(&first), 2),
        Err(Discard::FromTheFuture)
    );
    let unknown = report("dns", 2, "Unknown", &[]);
    assert_eq!(
        accept(&unknown, t("11"), None, 2),
        Err(Discard::AvailableUnknown)
    );
    let mut missing = report("dns", 2, "True", &[]);
    missing.conditions.retain(|c| c.ty != "Health");
    assert_eq!(
        accept(&missing, t("11"), None, 2),
        Err(Discard::MissingCondition("Health"))
    );
}

#[test]
fn transition_times_carry_over_while_the_status_holds() {
    let first = stored("dns", 1, "True", "10");
    let again = accept(&report("dns", 1, "True", &[]), t("20"), Some(&first), 1).unwrap();
    assert_eq!(
        again.condition("Available").unwrap().last_transition_time,
        t("10")
    );
    assert_eq!(
        (again.created_time, again.last_report_time),
        (t("10"), t("20"))
    );
    let flipped = accept(&report("dns", 1, "False", &[]), t("30"), Some(&again), 1).unwrap();
    assert_eq!(
        flipped.condition("Available").unwrap().last_transition_time,
        t("30")
    );
    assert_eq!(
        flipped.condition("Applied").unwrap().last_transition_time,
        t("10")
    );
}

#[test]
fn without_reports_nothing_is_reconciled_and_times_fall_back_to_updated_time() {
    let conditions = run(1, false, &[], &[]);
    assert_eq!(conditions.len(), 2);
    let r = find(&conditions, "Reconciled");
    assert_eq!(r["status"], "False");
    assert_eq!(r["observed_generation"], 1);
    assert_eq!(r["last_updated_time"], "2026-01-01T00:00:05Z");
    assert_eq!(
        r["message"],
        "Required adapters not reporting Available=True: [validation, dns]"
    );
    assert_eq!(find(&conditions, "LastKnownReconciled")["status"], "False");
}

#[test]
fn reconciled_when_every_required_adapter_is_available_at_the_generation() {
    let partial = run(1, false, &[], &[stored("validation", 1, "True", "10")]);
    let r = find(&partial, "Reconciled");
    assert_eq!(
        (r["status"].as_str(), r["last_updated_time"].as_str()),
        (Some("False"), Some("2026-01-01T00:00:10Z"))
    );
    assert_eq!(find(&partial, "ValidationSuccessful")["status"], "True");

    let both = [
        stored("validation", 1, "True", "10"),
        stored("dns", 1, "True", "12"),
    ];
    let done = run(1, false, &partial, &both);
    let r = find(&done, "Reconciled");
    assert_eq!(r["status"], "True");
    assert_eq!(
        r["last_updated_time"], "2026-01-01T00:00:10Z",
        "the oldest report"
    );
    assert_eq!(r["last_transition_time"], "2026-01-01T00:00:10Z");
    assert_eq!(
        r["created_time"], "2026-01-01T00:00:05Z",
        "kept from the first aggregation"
    );
    let lkr = find(&done, "LastKnownReconciled");
    assert_eq!(
        (lkr["status"].as_str(), lkr["observed_generation"].as_i64()),
        (Some("True"), Some(1))
    );
    let types: Vec<&str> = done.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "Reconciled",
            "LastKnownReconciled",
            "ValidationSuccessful",
            "DnsSuccessful"
        ]
    );

    // A later report with the same outcome keeps the transition time.
    let later = [
        stored("validation", 1, "True", "20"),
        stored("dns", 1, "True", "22"),
    ];
    let again = run(1, false, &done, &later);
    let r = find(&again, "Reconciled");
    assert_eq!(r["last_updated_time"], "2026-01-01T00:00:20Z");
    assert_eq!(r["last_transition_time"], "2026-01-01T00:00:10Z");
}

#[test]
fn a_generation_bump_unreconciles_but_last_known_reconciled_sticks() {
    let gen1 = [
        stored("validation", 1, "True", "01"),
        stored("dns", 1, "True", "02"),
    ];
    let done = run(1, false, &[], &gen1);
    let bumped = run(2, false, &done, &gen1);
    let r = find(&bumped, "Reconciled");
    assert_eq!(r["status"], "False");
    assert_eq!(r["observed_generation"], 2);
    assert_eq!(
        r["last_updated_time"], "2026-01-01T00:00:05Z",
        "updated_time: nobody reported at 2"
    );
    assert_eq!(r["last_transition_time"], "2026-01-01T00:00:05Z");
    let lkr = find(&bumped, "LastKnownReconciled");
    assert_eq!(
        (lkr["status"].as_str(), lkr["observed_generation"].as_i64()),
        (Some("True"), Some(1))
    );

    // A failure at the new generation does not touch the tracked generation.
    let mixed = [
        stored("validation", 2, "False", "30"),
        stored("dns", 1, "True", "02"),
    ];
    let lkr_after = run(2, false, &bumped, &mixed);
    assert_eq!(find(&lkr_after, "LastKnownReconciled")["status"], "True");
    assert_eq!(
        find(&lkr_after, "Reconciled")["last_updated_time"],
        "2026-01-01T00:00:30Z"
    );
    assert_eq!(find(&lkr_after, "ValidationSuccessful")["status"], "False");
}

#[test]
fn deletion_is_reconciled_by_finalized_reports() {
    let accept_at = |adapter: &str, finalized: &str| {
        accept(
            &report(adapter, 2, "True", &[("Finalized", finalized)]),
            t("40"),
            None,
            2,
        )
        .unwrap()
    };
    let half = run(
        2,
        true,
        &[],
        &[accept_at("validation", "True"), accept_at("dns", "False")],
    );
    let r = find(&half, "Reconciled");
    assert_eq!(r["status"], "False");
    assert_eq!(
        r["message"],
        "Required adapters not reporting Finalized=True: [dns]"
    );
    let all = run(
        2,
        true,
        &half,
        &[accept_at("validation", "True"), accept_at("dns", "True")],
    );
    assert_eq!(find(&all, "Reconciled")["status"], "True");
}

#[test]
fn adapter_names_become_condition_types() {
    assert_eq!(adapter_condition_type("dns"), "DnsSuccessful");
    assert_eq!(
        adapter_condition_type("gcp-provisioner"),
        "GcpProvisionerSuccessful"
    );
    assert_eq!(adapter_condition_type("a--b"), "ABSuccessful");
}
