use super::*;
use crate::cel::host::Resource;
use crate::rules::decision::{DecisionSource, ParamSource};
use std::sync::Arc;

fn program(params: &[(&str, &str)], result: &str) -> Program {
    let src = DecisionSource {
        params: params
            .iter()
            .map(|(name, expr)| ParamSource {
                name: name.to_string(),
                expr: expr.to_string(),
            })
            .collect(),
        result: result.to_string(),
    };
    Program::compile(&src).unwrap_or_else(|e| panic!("{result}: {e}"))
}

fn now() -> Timestamp {
    crate::cel::time::parse_timestamp("2026-12-02T10:00:00.250Z").unwrap()
}

#[test]
fn the_default_rules_leave_generation_mismatch_to_the_sweep() {
    let program = Program::compile(&DecisionSource::default_rules()).unwrap();
    let filter = derive(&program);
    assert_eq!(filter.sound, Tsl::True);
    assert_eq!(filter.swept.len(), 1, "{:?}", filter.swept);
    let blocker = &filter.swept[0];
    assert_eq!(blocker.origin.param(), Some("generation_mismatch"));
    assert_eq!(
        blocker.source,
        r#"resource.generation > condition("Reconciled").observed_generation"#
    );
    assert!(blocker.reason.contains("two fields"), "{}", blocker.reason);
    assert_eq!(
        filter.tight.text_at(now()).unwrap(),
        "(generation = 1 and status.conditions.Reconciled IS NULL) \
         or (status.conditions.Reconciled = 'True' \
         and status.conditions.Reconciled.last_updated_time < '2026-12-02T09:30:01Z') \
         or ((status.conditions.Reconciled = 'False' or status.conditions.Reconciled = 'Unknown') \
         and status.conditions.Reconciled.last_updated_time < '2026-12-02T09:59:51Z')"
    );
    // The sound filter misses nothing; the tight one misses exactly what only the generation
    // mismatch makes due.
    assert!(counterexample(&program, &filter.sound, now(), 5_000, 1).is_none());
    let missed = counterexample(&program, &filter.tight, now(), 5_000, 1)
        .expect("a resource only generation_mismatch publishes");
    let r = Arc::new(Resource::from_json(missed.resource.clone()));
    let gen_only = self::program(
        &[],
        r#"resource.generation > condition("Reconciled").observed_generation"#,
    );
    assert!(
        gen_only.interpret(&r, now(), &mut Vec::new()).publish,
        "{}",
        missed.resource
    );
}

#[test]
fn comparisons_become_search_atoms() {
    let cases: &[(&str, &str)] = &[
        (
            r#"condition("Ready").status == "True""#,
            "status.conditions.Ready = 'True'",
        ),
        (
            r#"condition("Ready").status != "True""#,
            "status.conditions.Ready = 'False' or status.conditions.Ready = 'Unknown' \
             or status.conditions.Ready IS NULL",
        ),
        (r#"condition("Ready").status == "Bogus""#, "id IS NULL"),
        (
            r#"condition("Ready").observed_generation < 3"#,
            "status.conditions.Ready.observed_generation < 3 or status.conditions.Ready IS NULL",
        ),
        (r#"3 < resource.generation"#, "generation > 3"),
        (r#"resource.labels["env"] == "prod""#, "labels.env = 'prod'"),
        (r#"resource.labels.env != "it's""#, r"labels.env != 'it\'s'"),
        (
            r#"timestamp(condition("Ready").last_transition_time) + duration("1h") < now"#,
            "status.conditions.Ready.last_transition_time < '2026-12-02T09:00:01Z'",
        ),
        (
            r#"timestamp(resource.created_time) >= timestamp("2026-01-01T00:00:00.5Z")"#,
            "created_time >= '2026-01-01T00:00:00Z'",
        ),
        (
            r#"!(condition("A").status == "True" && resource.generation == 2)"#,
            "status.conditions.A = 'False' or status.conditions.A = 'Unknown' \
             or status.conditions.A IS NULL or generation != 2",
        ),
        (
            r#"resource.generation > 1 ? condition("A").status == "True" : false"#,
            "generation > 1 and status.conditions.A = 'True'",
        ),
        (
            r#"condition("A").status in ["True", "Unknown"]"#,
            "status.conditions.A = 'True' or status.conditions.A = 'Unknown'",
        ),
        (r#"now > timestamp("2020-01-01T00:00:00Z")"#, ""),
    ];
    for (rule, want) in cases {
        let program = self::program(&[], rule);
        let filter = derive(&program);
        let got = filter.sound.text_at(now()).unwrap_or_default();
        assert_eq!(&got, want, "{rule}");
        assert!(
            filter.swept.is_empty() && filter.unfiltered.is_empty(),
            "{rule}: {filter:?}"
        );
        assert!(
            counterexample(&program, &filter.sound, now(), 3_000, 7).is_none(),
            "{rule}: {got}"
        );
    }
}

#[test]
fn what_the_search_cannot_say_is_named_and_never_guessed() {
    let program = self::program(
        &[
            ("odd", r#"resource.name.startsWith("x")"#),
            ("ready", r#"condition("Ready").status == "True""#),
        ],
        "ready && odd",
    );
    let filter = derive(&program);
    // In a conjunction the unsayable part is `true`: nothing is left to a sweep.
    assert_eq!(filter.tight, filter.sound);
    assert_eq!(filter.sound.to_string(), "status.conditions.Ready = 'True'");
    assert!(filter.swept.is_empty());

    let program = self::program(
        &[("odd", r#"resource.name.startsWith("x")"#)],
        r#"odd || condition("Ready").status == "False""#,
    );
    let filter = derive(&program);
    assert_eq!(filter.sound, Tsl::True);
    assert_eq!(
        filter.tight.to_string(),
        "status.conditions.Ready = 'False'"
    );
    assert_eq!(
        filter.swept[0].origin.to_string(),
        "message_decision.params[0] \"odd\""
    );

    let program = self::program(&[], r#"resource.name.startsWith("x")"#);
    let filter = derive(&program);
    assert_eq!(
        (filter.sound.clone(), filter.tight.clone()),
        (Tsl::True, Tsl::True)
    );
    assert_eq!(filter.unfiltered.len(), 1);
    assert_eq!(filter.unfiltered[0].origin, Origin::Result);
}
