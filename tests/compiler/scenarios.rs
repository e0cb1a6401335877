//! The twelve decision engine scenarios of the spec (../shared/spec/decision-engine.md), run
//! through the compiled default (or custom) rules.

use sentinel::cel::host::Resource;
use sentinel::cel::time::{Duration, Timestamp, parse_timestamp, ts_sub_dur};
use sentinel::cel::value::Value;
use sentinel::rules::decision::{
    Compiled, DecisionSource, Engine, ParamSource, Program, Reason, Scratch,
};
use serde_json::{Value as Json, json};
use std::sync::Arc;

fn now() -> Timestamp {
    parse_timestamp("2025-10-21T12:00:00Z").unwrap()
}

/// RFC 3339 text for `now - secs`.
fn ago(secs: i64) -> String {
    let t = ts_sub_dur(
        now(),
        Duration::from_nanos(i128::from(secs) * 1_000_000_000).unwrap(),
    )
    .unwrap();
    sentinel::cel::time::format_timestamp(t)
}

fn resource(generation: i64, reconciled: Option<(&str, i64, String)>) -> Json {
    let conditions: Vec<Json> = reconciled
        .into_iter()
        .map(|(status, observed, updated)| {
            json!({"type": "Reconciled", "status": status, "observed_generation": observed,
                   "last_updated_time": updated, "last_transition_time": updated})
        })
        .collect();
    json!({"id": "cls-123", "kind": "Cluster", "generation": generation,
           "status": {"conditions": conditions}})
}

struct Outcome {
    publish: bool,
    reason: String,
    params: Vec<(String, Value)>,
}

fn decide(program: &Program, json: Json) -> Outcome {
    let r = Arc::new(Resource::from_json(json));
    let mut slots = Vec::new();
    let d = program.interpret(&r, now(), &mut slots);
    let params = program
        .params
        .iter()
        .zip(&slots)
        .map(|(p, v)| (p.name.to_string(), v.clone().expect("param evaluates")))
        .collect();
    Outcome {
        publish: d.publish,
        reason: d.reason.to_string(),
        params,
    }
}

fn default_program() -> Program {
    Program::compile(&DecisionSource::default_rules()).expect("default rules compile")
}

fn param<'a>(o: &'a Outcome, name: &str) -> &'a Value {
    &o.params
        .iter()
        .find(|(n, _)| n == name)
        .expect("param present")
        .1
}

fn assert_bools(o: &Outcome, expected: &[(&str, bool)]) {
    for (name, want) in expected {
        match param(o, name) {
            Value::Bool(got) => assert_eq!(got, want, "param {name}"),
            other => panic!("param {name} is {other:?}, not bool"),
        }
    }
}

#[test]
fn test1_reconciled_recent_check_skips() {
    let o = decide(
        &default_program(),
        resource(2, Some(("True", 2, ago(5 * 60)))),
    );
    assert!(!o.publish);
    assert_eq!(o.reason, "message decision result is false");
    assert_bools(
        &o,
        &[
            ("is_reconciled", true),
            ("is_new_resource", false),
            ("generation_mismatch", false),
            ("reconciled_and_stale", false),
            ("not_reconciled_and_debounced", false),
        ],
    );
}

#[test]
fn test2_not_reconciled_debounce_elapsed_publishes() {
    let o = decide(&default_program(), resource(2, Some(("False", 2, ago(15)))));
    assert!(o.publish);
    assert_eq!(o.reason, "message decision matched");
    assert_bools(
        &o,
        &[
            ("is_reconciled", false),
            ("is_new_resource", false),
            ("generation_mismatch", false),
            ("reconciled_and_stale", false),
            ("not_reconciled_and_debounced", true),
        ],
    );
}

#[test]
fn test3_not_reconciled_within_debounce_skips() {
    let o = decide(&default_program(), resource(2, Some(("False", 2, ago(5)))));
    assert!(!o.publish);
    assert_bools(
        &o,
        &[
            ("not_reconciled_and_debounced", false),
            ("generation_mismatch", false),
        ],
    );
}

#[test]
fn test4_reconciled_stale_publishes() {
    let o = decide(
        &default_program(),
        resource(2, Some(("True", 2, ago(31 * 60)))),
    );
    assert!(o.publish);
    assert_bools(
        &o,
        &[
            ("reconciled_and_stale", true),
            ("not_reconciled_and_debounced", false),
        ],
    );
}

#[test]
fn test5_brand_new_resource_publishes_immediately() {
    let o = decide(&default_program(), resource(1, None));
    assert!(o.publish);
    assert!(matches!(param(&o, "ref_time"), Value::String(s) if s.is_empty()));
    assert_bools(
        &o,
        &[
            ("is_reconciled", false),
            ("has_ref_time", false),
            ("is_new_resource", true),
            ("generation_mismatch", true),
            ("reconciled_and_stale", false),
            ("not_reconciled_and_debounced", false),
        ],
    );
}

#[test]
fn test6_generation_mismatch_publishes() {
    let o = decide(&default_program(), resource(2, Some(("False", 1, ago(15)))));
    assert!(o.publish);
    assert_bools(
        &o,
        &[
            ("generation_mismatch", true),
            ("not_reconciled_and_debounced", true),
        ],
    );
}

#[test]
fn test7_missing_condition_is_zero_value() {
    let o = decide(&default_program(), json!({"id": "x", "generation": 1}));
    assert!(o.publish);
    assert_bools(&o, &[("is_reconciled", false), ("is_new_resource", true)]);
}

#[test]
fn test8_invalid_expression_fails_at_startup_naming_the_param() {
    let mut src = DecisionSource::default_rules();
    src.params[2].expr = "ref_time !=".into();
    let err = Program::compile(&src).unwrap_err().to_string();
    assert!(
        err.contains("message_decision.params[2] \"has_ref_time\""),
        "{err}"
    );
}

#[test]
fn test9_param_referencing_a_later_param_fails_at_startup() {
    let src = DecisionSource {
        params: vec![
            ParamSource {
                name: "a".into(),
                expr: "b && true".into(),
            },
            ParamSource {
                name: "b".into(),
                expr: "true".into(),
            },
        ],
        result: "a".into(),
    };
    let err = Program::compile(&src).unwrap_err().to_string();
    assert!(
        err.contains("param \"a\" refers to param \"b\", which is declared after it"),
        "{err}"
    );
}

#[test]
fn test10_no_condition_generation_two_publishes_via_mismatch() {
    let o = decide(&default_program(), resource(2, None));
    assert!(o.publish);
    assert_bools(
        &o,
        &[
            ("is_reconciled", false),
            ("is_new_resource", false),
            ("has_ref_time", false),
            ("generation_mismatch", true),
        ],
    );
}

#[test]
fn test11_default_rules_are_the_documented_seven_params() {
    let p = default_program();
    let names: Vec<&str> = p.params.iter().map(|p| &*p.name).collect();
    assert_eq!(
        names,
        [
            "ref_time",
            "is_reconciled",
            "has_ref_time",
            "is_new_resource",
            "generation_mismatch",
            "reconciled_and_stale",
            "not_reconciled_and_debounced"
        ]
    );
}

fn applied_rules() -> Program {
    let p = |n: &str, e: &str| ParamSource {
        name: n.into(),
        expr: e.into(),
    };
    Program::compile(&DecisionSource {
        params: vec![
            p("ref_time", r#"condition("Applied").last_updated_time"#),
            p("is_applied", r#"condition("Applied").status == "True""#),
            p(
                "age_exceeded",
                r#"is_applied && now - timestamp(ref_time) > duration("5m")"#,
            ),
        ],
        result: "age_exceeded".into(),
    })
    .expect("custom rules compile")
}

#[test]
fn test12_custom_condition_types() {
    let applied = json!({"id": "x", "generation": 1, "status": {"conditions": [
        {"type": "Applied", "status": "True", "last_updated_time": ago(600)}]}});
    let o = decide(&applied_rules(), applied);
    assert!(o.publish);
    assert_bools(&o, &[("is_applied", true), ("age_exceeded", true)]);
    // Applied missing: && short-circuits before timestamp("") is evaluated.
    let o = decide(&applied_rules(), json!({"id": "x", "generation": 1}));
    assert!(!o.publish);
    assert_eq!(o.reason, "message decision result is false");
}

/// Every warning of a program as `origin: message`.
fn warnings(p: &Program) -> Vec<String> {
    p.warnings
        .iter()
        .flat_map(|w| {
            w.diagnostics
                .iter()
                .map(move |d| format!("{}: {}", w.origin, d.message))
        })
        .collect()
}

#[test]
fn default_rules_check_the_observed_generation() {
    assert_eq!(warnings(&default_program()), Vec::<String>::new());
}

#[test]
fn test12_rules_warn_that_applied_status_is_read_without_its_generation() {
    let w = warnings(&applied_rules());
    assert_eq!(
        w,
        [
            r#"message_decision.params[1] "is_applied": condition "Applied"'s status is read but its observed_generation never is"#
        ]
    );
    let d = &applied_rules().warnings[0].diagnostics[0];
    assert!(d.notes[0].contains("resource.generation"), "{:?}", d.notes);
    assert_eq!((d.span.start, d.span.end), (0, 27));
}

#[test]
fn reading_the_observed_generation_in_any_param_clears_the_warning() {
    let p = |n: &str, e: &str| ParamSource {
        name: n.into(),
        expr: e.into(),
    };
    let program = Program::compile(&DecisionSource {
        params: vec![
            p("ok", r#"condition("Applied").status == "True""#),
            p(
                "fresh",
                r#"condition("Applied").observed_generation == resource.generation"#,
            ),
        ],
        result: r#"ok && fresh && condition("Ready").status == "True""#.into(),
    })
    .expect("compiles");
    assert_eq!(
        warnings(&program),
        [
            r#"message_decision.result: condition "Ready"'s status is read but its observed_generation never is"#
        ]
    );
}

#[test]
fn unknown_resource_fields_warn_with_a_suggestion() {
    let p = |n: &str, e: &str| ParamSource {
        name: n.into(),
        expr: e.into(),
    };
    let program = Program::compile(&DecisionSource {
        params: vec![p(
            "g",
            r#"resource.genration > 1 || resource["lables"] == {} || has(resource.spec)"#,
        )],
        result: "g".into(),
    })
    .expect("a warning does not fail compilation");
    let w = &program.warnings[0].diagnostics;
    let got: Vec<(&str, &str)> = w
        .iter()
        .map(|d| (d.message.as_str(), d.notes[0].as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "the resource has no field 'genration'",
                "did you mean `generation`?"
            ),
            (
                "the resource has no field 'lables'",
                "did you mean `labels`?"
            ),
        ]
    );
    assert!(w.iter().all(|d| !d.is_error()));
}

#[test]
fn a_constant_call_that_always_fails_is_a_load_time_error() {
    let p = |n: &str, e: &str| ParamSource {
        name: n.into(),
        expr: e.into(),
    };
    let err = Program::compile(&DecisionSource {
        params: vec![p("d", r#"duration("30x")"#), p("t", r#"timestamp("nope")"#)],
        result: r#"now - t > d"#.into(),
    })
    .expect_err("constant failures are load-time errors");
    let got: Vec<(String, u32, u32)> = err
        .exprs
        .iter()
        .flat_map(|e| e.diagnostics.iter())
        .map(|d| (d.message.clone(), d.span.start, d.span.end))
        .collect();
    assert_eq!(
        got,
        [
            (
                "this call always fails: type conversion error from 'string' to \
                 'google.protobuf.Duration'"
                    .to_string(),
                0,
                15
            ),
            (
                "this call always fails: type conversion error from 'string' to \
                 'google.protobuf.Timestamp'"
                    .to_string(),
                0,
                17
            ),
        ]
    );
}

/// Valid CEL whose constant call always fails but is not always evaluated (an operand of
/// `||`/`&&`, a `?:` branch, a macro body over an empty list) loads, with a warning, and
/// answers as cel-go does on both engines: the call fails only where it is reached.
#[test]
fn an_unreached_failing_call_loads_and_answers_as_cel_go() {
    let cases: &[(&str, Result<bool, &str>)] = &[
        (r#"true || duration("x") > duration("1s")"#, Ok(true)),
        (r#"int("x") > 0 || true"#, Ok(true)),
        (r#"false && int("x") > 0"#, Ok(false)),
        (r#"[].exists(x, int("x") > 0)"#, Ok(false)),
        (
            r#"resource.generation > 0 ? true : timestamp("nope") > now"#,
            Ok(true),
        ),
        (
            r#"resource.generation > 5 ? true : timestamp("nope") > now"#,
            Err("result evaluation failed: "),
        ),
        (r#"resource.name.matches("[a-") || true"#, Ok(true)),
    ];
    let r = Arc::new(Resource::from_json(json!({"id": "x", "generation": 1})));
    for (result, expected) in cases {
        let program = Program::compile(&DecisionSource {
            params: Vec::new(),
            result: result.to_string(),
        })
        .unwrap_or_else(|e| panic!("{result}: {e}"));
        let w = warnings(&program);
        assert_eq!(w.len(), 1, "{result}: {w:?}");
        assert!(
            w[0].contains("always fails") || w[0].contains("invalid regex"),
            "{w:?}"
        );
        for engine in Engine::ALL {
            let compiled = Compiled::new(program.clone(), engine).expect("compiles");
            let d = compiled.explain(&r, now(), &mut Scratch::default());
            match expected {
                Ok(publish) => assert_eq!(
                    (d.publish, &d.reason),
                    (
                        *publish,
                        if *publish {
                            &Reason::Matched
                        } else {
                            &Reason::ResultFalse
                        }
                    ),
                    "{result} on {engine}"
                ),
                Err(prefix) => assert!(
                    !d.publish && d.reason.to_string().starts_with(prefix),
                    "{result} on {engine}: {}",
                    d.reason
                ),
            }
        }
    }
}

/// `format`'s clauses are checked at load against a list literal's elements as cel-go's
/// `ext.Strings()` does, with the types Go's checker gives them: a param is `dyn` there (so
/// `%d` of a string param loads and fails at run time, as in Go), a literal is not.
#[test]
fn format_clauses_are_checked_against_the_types_go_knows() {
    let p = |n: &str, e: &str| ParamSource {
        name: n.into(),
        expr: e.into(),
    };
    let src = |result: &str| DecisionSource {
        params: vec![p("s", r#""text""#)],
        result: result.into(),
    };
    let program = Program::compile(&src(r#""%d".format([s]) == """#)).expect("dyn in Go");
    let r = Arc::new(Resource::from_json(json!({"id": "x"})));
    let d = program.interpret(&r, now(), &mut Vec::new());
    assert_eq!(
        d.reason.to_string(),
        "result evaluation failed: error during formatting: decimal clause can only be used on \
         ints, uints, and doubles, was given string"
    );
    let err = Program::compile(&src(r#""%d".format(["text"]) == """#)).expect_err("string");
    assert!(err.to_string().contains("decimal clause"), "{err}");
}

/// Counts this thread's allocations, to bound how compiling scales without a clock.
struct Counting;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[allow(unsafe_code)] // a counting allocator: unsafe by its trait
// SAFETY: forwards to the system allocator; the counter is a const thread-local without a
// destructor, so touching it never allocates.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: forwarded.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The allocations of compiling a chain of `n` params and an `n`-entry map literal.
fn compile_allocations(n: usize) -> usize {
    let params: Vec<ParamSource> = (0..n)
        .map(|i| ParamSource {
            name: format!("p{i}"),
            expr: if i == 0 {
                "resource.generation".into()
            } else {
                format!("p{} + 1", i - 1)
            },
        })
        .collect();
    let chain = DecisionSource {
        params,
        result: format!("p{} > 0", n - 1),
    };
    let entries: Vec<String> = (0..n).map(|i| format!("\"k{i}\": {i}")).collect();
    let map = DecisionSource {
        params: vec![ParamSource {
            name: "m".into(),
            expr: format!("{{{}}}", entries.join(", ")),
        }],
        result: format!("size(m) == {n}"),
    };
    let before = ALLOCATIONS.with(std::cell::Cell::get);
    let chain = Program::compile(&chain).expect("compiles");
    let map = Program::compile(&map).expect("compiles");
    let used = ALLOCATIONS.with(std::cell::Cell::get) - before;
    assert_eq!(chain.params.len(), n);
    // A constant map literal folds to one constant.
    assert!(matches!(
        map.params[0].expr.kind,
        sentinel::cel::typed::TExprKind::Const(_)
    ));
    used
}

/// Compiling thousands of params or map entries is linear: 50 times the params take at most
/// 60 times the allocations (the quadratic scope copies took thousands of times more).
#[test]
fn thousands_of_params_and_map_entries_compile_linearly() {
    let (small, large) = (compile_allocations(160), compile_allocations(8000));
    assert!(
        large <= small * 60,
        "160 → {small} allocations, 8000 → {large}"
    );
}

#[test]
fn a_failing_param_names_itself_as_the_reason() {
    let p = |n: &str, e: &str| ParamSource {
        name: n.into(),
        expr: e.into(),
    };
    let program = Program::compile(&DecisionSource {
        params: vec![p("t", r#"timestamp(condition("Ready").last_updated_time)"#)],
        result: "now > t".into(),
    })
    .unwrap();
    let r = Arc::new(Resource::from_json(json!({"id": "x"})));
    let d = program.interpret(&r, now(), &mut Vec::new());
    assert!(!d.publish);
    assert!(matches!(&d.reason, Reason::ParamFailed { name, .. } if &**name == "t"));
    assert!(
        d.reason
            .to_string()
            .starts_with("param \"t\" evaluation failed: "),
        "{}",
        d.reason
    );
}
