//! Cases after hyperfleet-api `pkg/db/sql_tsl_test.go` (accepted searches and the reasons of
//! refused ones) and tree-search-language's grammar.

use super::*;
use crate::cel::time::parse_timestamp;
use crate::tsl::{Column, ConditionColumn, Literal, Op, TimeColumn, TimeLit};

fn ok(text: &str) -> Tsl {
    let tsl = parse(text).unwrap_or_else(|e| panic!("{text:?} refused: {e}"));
    let printed = tsl.to_string();
    let again = parse(&printed).unwrap_or_else(|e| panic!("{printed:?} (from {text:?}): {e}"));
    assert_eq!(again, tsl, "round trip of {text:?} through {printed:?}");
    tsl
}

fn refused(text: &str, reason: &str) {
    match parse(text) {
        Ok(tsl) => panic!("{text:?} accepted as {tsl:?}; want {reason:?}"),
        Err(e) => assert!(
            e.reason.contains(reason),
            "{text:?}: {:?} does not contain {reason:?}",
            e.reason
        ),
    }
}

fn unsupported(text: &str) {
    refused(text, "is not supported by sentinel's fake API");
}

fn text(name: &str) -> Column {
    Column::Text(name.into())
}

fn str(s: &str) -> Literal {
    Literal::Str(s.into())
}

fn at(s: &str) -> Literal {
    Literal::Time(TimeLit::At(parse_timestamp(s).unwrap()))
}

fn cond(ty: &str, sub: ConditionColumn) -> Column {
    Column::Condition(ty.into(), sub)
}

#[test]
fn basic_fields_and_logic() {
    assert_eq!(
        ok("id = 'cls-123'"),
        Tsl::Compare(text("id"), Op::Eq, str("cls-123"))
    );
    assert_eq!(
        ok("created_by in ['ooo.openshift']"),
        Tsl::In(text("created_by"), vec![str("ooo.openshift")])
    );
    assert_eq!(
        ok("name = 'a' AND kind = 'b'"),
        Tsl::And(vec![
            Tsl::Compare(text("name"), Op::Eq, str("a")),
            Tsl::Compare(text("kind"), Op::Eq, str("b")),
        ])
    );
    assert_eq!(
        ok("name = 'a' and (kind = 'us' OR status.conditions.Reconciled = 'True')"),
        Tsl::And(vec![
            Tsl::Compare(text("name"), Op::Eq, str("a")),
            Tsl::Or(vec![
                Tsl::Compare(text("kind"), Op::Eq, str("us")),
                Tsl::Compare(
                    Column::ConditionStatus("Reconciled".into()),
                    Op::Eq,
                    str("True")
                ),
            ]),
        ])
    );
    assert_eq!(
        ok("NOT (name = 'a')"),
        Tsl::Not(Box::new(Tsl::Compare(text("name"), Op::Eq, str("a"))))
    );
    assert_eq!(ok("name == 'a'"), ok("name = 'a'"));
    assert_eq!(ok("name <> 'a'"), ok("name != 'a'"));
    assert_eq!(
        ok("a.b.c = 'x' or name = 'y'"
            .replace("a.b.c", "owner_id")
            .as_str()),
        Tsl::Or(vec![
            Tsl::Compare(text("owner_id"), Op::Eq, str("x")),
            Tsl::Compare(text("name"), Op::Eq, str("y")),
        ])
    );
    // Keywords in any case; `and` binds tighter than `or`.
    assert_eq!(
        ok("name = 'a' Or name = 'b' aNd name = 'c'"),
        Tsl::Or(vec![
            Tsl::Compare(text("name"), Op::Eq, str("a")),
            Tsl::And(vec![
                Tsl::Compare(text("name"), Op::Eq, str("b")),
                Tsl::Compare(text("name"), Op::Eq, str("c")),
            ]),
        ])
    );
}

#[test]
fn typed_fields() {
    assert_eq!(
        ok("generation = 5"),
        Tsl::Compare(Column::Generation, Op::Eq, Literal::Num(5.0))
    );
    assert_eq!(
        ok("generation IN [1, 2, 3,]"),
        Tsl::In(
            Column::Generation,
            vec![Literal::Num(1.0), Literal::Num(2.0), Literal::Num(3.0)]
        )
    );
    assert_eq!(
        ok("created_time > '2026-01-01T00:00:00Z'"),
        Tsl::Compare(
            Column::Time(TimeColumn::Created),
            Op::Gt,
            at("2026-01-01T00:00:00Z")
        )
    );
    assert_eq!(
        ok("created_time > '2026-01-01'"),
        Tsl::Compare(
            Column::Time(TimeColumn::Created),
            Op::Gt,
            at("2026-01-01T00:00:00Z")
        )
    );
    assert_eq!(
        ok("updated_time <= 2026-01-01T02:00:00+02:00"),
        Tsl::Compare(
            Column::Time(TimeColumn::Updated),
            Op::Le,
            at("2026-01-01T00:00:00Z")
        )
    );
    assert_eq!(
        ok("deleted_time IS NULL"),
        Tsl::IsNull(Column::Time(TimeColumn::Deleted), false)
    );
    assert_eq!(
        ok("deleted_time IS NOT NULL"),
        Tsl::IsNull(Column::Time(TimeColumn::Deleted), true)
    );
    assert_eq!(
        ok("'2026-01-01T00:00:00Z' < created_time"),
        Tsl::Compare(
            Column::Time(TimeColumn::Created),
            Op::Gt,
            at("2026-01-01T00:00:00Z")
        )
    );
    assert_eq!(
        ok("generation = 2k"),
        Tsl::Compare(Column::Generation, Op::Eq, Literal::Num(2000.0))
    );
    refused(
        "generation = 'abc'",
        "field 'generation' expects an integer",
    );
    refused(
        "created_time = 'not-a-date'",
        "field 'created_time' expects an RFC3339 timestamp (e.g. 2026-01-01T00:00:00Z)",
    );
    refused(
        "generation IN [1, 'abc']",
        "field 'generation' expects an integer",
    );
    refused(
        "'abc' = generation",
        "field 'generation' expects an integer",
    );
    refused("generation = -1", "field 'generation' expects an integer");
    refused(
        "generation > status.conditions.Reconciled.observed_generation",
        "field 'generation' expects an integer",
    );
    refused(
        "status.conditions.Reconciled.observed_generation < generation",
        "field 'generation' expects an integer",
    );
}

#[test]
fn condition_status() {
    let ready = || Column::ConditionStatus("Reconciled".into());
    assert_eq!(
        ok("status.conditions.Reconciled = 'True'"),
        Tsl::Compare(ready(), Op::Eq, str("True"))
    );
    assert_eq!(
        ok("'False' = status.conditions.Reconciled"),
        Tsl::Compare(ready(), Op::Eq, str("False"))
    );
    assert_eq!(
        ok("status.conditions.Reconciled IS NULL"),
        Tsl::IsNull(ready(), false)
    );
    refused(
        "status.conditions.Reconciled = 'Invalid'",
        "condition status 'Invalid' is invalid: must be True, False, or Unknown",
    );
    refused(
        "'Invalid' = status.conditions.Reconciled",
        "condition status 'Invalid' is invalid",
    );
    refused("status.conditions.ready = 'True'", "must be PascalCase");
    refused(
        "status.conditions.Reconciled_Status = 'True'",
        "condition type 'Reconciled_Status' is invalid: must be PascalCase (e.g., Reconciled, Available)",
    );
    refused(
        "status.conditions.Reconciled != 'True'",
        "only equality operator (=) is supported for condition status queries",
    );
    refused(
        "status.conditions. = 'True'",
        "condition type cannot be empty",
    );
    refused(
        "status.conditions.A.b.c = 'True'",
        "invalid condition format: expected status.conditions.<Type> or status.conditions.<Type>.<subfield>",
    );
    // `IS NOT NULL` is a `not` around `IS NULL`, which the API refuses on a condition.
    refused(
        "status.conditions.Reconciled IS NOT NULL",
        "NOT operator is not supported with condition queries",
    );
}

#[test]
fn condition_subfields() {
    let lut = || cond("Reconciled", ConditionColumn::LastUpdatedTime);
    assert_eq!(
        ok("status.conditions.Reconciled.last_updated_time < '2026-03-06T00:00:00Z'"),
        Tsl::Compare(lut(), Op::Lt, at("2026-03-06T00:00:00Z"))
    );
    assert_eq!(
        ok("status.conditions.Available.last_transition_time > '2026-03-06T00:00:00.5Z'"),
        Tsl::Compare(
            cond("Available", ConditionColumn::LastTransitionTime),
            Op::Gt,
            at("2026-03-06T00:00:00.5Z")
        )
    );
    assert_eq!(
        ok("status.conditions.Reconciled.observed_generation < 5"),
        Tsl::Compare(
            cond("Reconciled", ConditionColumn::ObservedGeneration),
            Op::Lt,
            Literal::Num(5.0)
        )
    );
    assert_eq!(
        ok("status.conditions.Reconciled.observed_generation >= -1"),
        Tsl::Compare(
            cond("Reconciled", ConditionColumn::ObservedGeneration),
            Op::Ge,
            Literal::Num(-1.0)
        )
    );
    assert_eq!(
        ok("status.conditions.Reconciled.last_updated_time IS NULL AND name = 'x'"),
        Tsl::And(vec![
            Tsl::IsNull(lut(), false),
            Tsl::Compare(text("name"), Op::Eq, str("x")),
        ])
    );
    refused(
        "status.conditions.Reconciled.unknown_field < '2026-03-06T00:00:00Z'",
        "condition subfield 'unknown_field' is not supported; use last_updated_time, \
         last_transition_time, or observed_generation",
    );
    refused(
        "status.conditions.Reconciled.last_updated_time < 'not-a-timestamp'",
        "invalid timestamp for condition subfield: expected RFC3339 format (e.g., 2026-01-01T00:00:00Z)",
    );
    refused(
        "status.conditions.Reconciled.last_updated_time < '2026-03-06'",
        "expected RFC3339 format",
    );
    refused(
        "status.conditions.Reconciled.observed_generation < 3.5",
        "expected integer value for condition subfield 'observed_generation', got 3.5",
    );
    refused(
        "status.conditions.Reconciled.observed_generation < 3000000000",
        "value 3e+09 is out of 32-bit integer range for condition subfield 'observed_generation'",
    );
    refused(
        "status.conditions.A.last_updated_time < status.conditions.B.last_updated_time",
        "invalid timestamp for condition subfield",
    );
}

#[test]
fn labels_and_not() {
    assert_eq!(
        ok("labels.env = 'prod'"),
        Tsl::Compare(Column::Label("env".into()), Op::Eq, str("prod"))
    );
    assert_eq!(
        ok("labels.env IN ['prod', 'staging']"),
        Tsl::In(
            Column::Label("env".into()),
            vec![str("prod"), str("staging")]
        )
    );
    assert_eq!(
        ok("labels.app.kubernetes.io/name != 'x'"),
        Tsl::Compare(
            Column::Label("app.kubernetes.io/name".into()),
            Op::Ne,
            str("x")
        )
    );
    assert_eq!(
        ok(r"labels.env = 'it\'s a \\ test'"),
        Tsl::Compare(Column::Label("env".into()), Op::Eq, str(r"it's a \ test"))
    );
    assert_eq!(
        ok(r#"labels.env = "double" or labels.env = `back`"#),
        Tsl::Or(vec![
            Tsl::Compare(Column::Label("env".into()), Op::Eq, str("double")),
            Tsl::Compare(Column::Label("env".into()), Op::Eq, str("back")),
        ])
    );
    assert_eq!(
        ok("labels.day = '2026-01-01'"),
        Tsl::Compare(Column::Label("day".into()), Op::Eq, str("2026-01-01"))
    );
    refused("labels. = 'x'", "label key cannot be empty");
    refused(
        "NOT (status.conditions.Reconciled = 'True')",
        "NOT operator is not supported with condition queries",
    );
    refused(
        "NOT (status.conditions.Reconciled.last_updated_time < '2026-03-06T00:00:00Z')",
        "NOT operator is not supported",
    );
    refused(
        "NOT (labels.env = 'prod')",
        "NOT operator is not supported with label queries",
    );
    refused(
        "not (name = 'a' or (labels.env = 'prod'))",
        "NOT operator is not supported with label queries",
    );
    refused(
        "labels.env IS NOT NULL",
        "NOT operator is not supported with label queries",
    );
    refused(
        "labels.env NOT IN ['a']",
        "NOT operator is not supported with label queries",
    );
}

#[test]
fn rejected_operators_on_conditions() {
    refused(
        "status.conditions.Reconciled IN ['True', 'False']",
        "IN is not supported for condition queries; use comparison operators (=, !=, <, <=, >, >=)",
    );
    refused(
        "status.conditions.Reconciled LIKE 'Tr%'",
        "LIKE/ILIKE is not supported for condition queries",
    );
    refused(
        "status.conditions.Reconciled.last_updated_time BETWEEN '2026-01-01T00:00:00Z' AND '2026-02-01T00:00:00Z'",
        "BETWEEN is not supported for condition queries",
    );
}

#[test]
fn between_is_two_comparisons() {
    assert_eq!(
        ok("generation BETWEEN 1 AND 10"),
        Tsl::And(vec![
            Tsl::Compare(Column::Generation, Op::Ge, Literal::Num(1.0)),
            Tsl::Compare(Column::Generation, Op::Le, Literal::Num(10.0)),
        ])
    );
    assert_eq!(
        ok("name not between 'a' and 'm'"),
        Tsl::Not(Box::new(Tsl::And(vec![
            Tsl::Compare(text("name"), Op::Ge, str("a")),
            Tsl::Compare(text("name"), Op::Le, str("m")),
        ])))
    );
}

#[test]
fn field_names() {
    refused(
        "properties.owner = 'team_a'",
        "properties is not a related resource of Resource",
    );
    refused(
        "creator.UserName = 'alice'",
        "creator.UserName is not a valid field name",
    );
    refused("Generation = 1", "Generation is not a valid field name");
    refused("foo = 'x'", "invalid field in search or order query");
    refused(
        "spec.ReleaseImage = 'x'",
        "spec field segment 'ReleaseImage' is invalid: must contain only lowercase letters, digits, and underscores",
    );
    refused("spec. = 'x'", "spec field segment cannot be empty");
    unsupported("spec.region = 'us-east-1'");
    unsupported("conditions.status = 'x'");
}

#[test]
fn what_the_fake_api_does_not_support() {
    unsupported("name LIKE 'test%'");
    unsupported("name ILIKE 'test%'");
    unsupported("name = id");
    unsupported("1 = 1");
    unsupported("labels.env = 5");
    unsupported("name");
    unsupported("name in []");
    unsupported("created_time > '2026-13-01T00:00:00Z'");
    unsupported(
        "status.conditions.A.observed_generation = status.conditions.B.observed_generation",
    );
    refused("name = 'a' + 'b'", "unsupported comparison operator: ADD");
    refused("name ~= 'a'", "unsupported comparison operator: REQ");
    refused("len name", "unsupported comparison operator: LEN");
    refused("len generation", "missing value for field 'generation'");
    refused("name in 'a'", "expected array on right side of IN");
}

#[test]
fn syntax_errors_carry_the_library_message_and_position() {
    let err = parse("name = ").unwrap_err();
    assert_eq!(
        err.reason,
        "failed to parse search query: syntax error at position 6:\nname = \n      ^"
    );
    refused("name = 'a", "Unterminated string at position 7");
    refused("name ! 'a'", "Unexpected character '!' at position 5");
    refused("name = null", "syntax error at position 7");
    refused("(name = 'a'", "syntax error");
    refused("name = 'a')", "syntax error at position 10");
}

#[test]
fn length_and_depth_limits() {
    let long = format!("name = '{}'", "x".repeat(MAX_SEARCH_LEN));
    refused(
        &long,
        "search query exceeds maximum length of 4096 characters",
    );
    let deep = format!("{}name = 'a'{}", "(".repeat(1000), ")".repeat(1000));
    unsupported(&deep);
    let chain = vec!["name = 'a'"; 250].join(" or ");
    assert!(matches!(ok(&chain), Tsl::Or(parts) if parts.len() == 250));
    let arithmetic = vec!["1"; 1500].join("+");
    unsupported(&format!("generation = {arithmetic}"));
}

#[test]
fn scoped_text_is_what_the_api_parses() {
    assert_eq!(scoped("  ", "Cluster", None), "kind = 'Cluster'");
    assert_eq!(
        scoped(" labels.a = 'b' ", "NodePool", Some("c1")),
        "(labels.a = 'b') AND kind = 'NodePool' AND owner_id = 'c1'"
    );
    assert_eq!(
        ok(&scoped("generation = 1", "Cluster", None)),
        Tsl::And(vec![
            Tsl::Compare(Column::Generation, Op::Eq, Literal::Num(1.0)),
            Tsl::Compare(text("kind"), Op::Eq, str("Cluster")),
        ])
    );
}
