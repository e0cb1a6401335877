//! Differential tests: every case runs through the reference interpreter and the JIT, which
//! must agree on the decision, every param's value and every error (kind and message).

use sentinel::cel::time::{Timestamp, parse_timestamp};
use sentinel::decision::{Compiled, DecisionSource, Engine, ParamSource, Program, Scratch};
use sentinel::resource::Resource;
use serde_json::{Value as Json, json};
use std::sync::Arc;

fn now() -> Timestamp {
    parse_timestamp("2025-10-21T12:00:00Z").expect("valid now")
}

/// Both engines' answers for one resource, as comparable text.
fn answers(program: &Program, resource: &Json, now: Timestamp) -> [String; 2] {
    let r = Arc::new(Resource::from_json(resource.clone()));
    Engine::ALL.map(|engine| {
        let compiled = Compiled::new(program.clone(), engine).expect("compiles");
        let mut scratch = Scratch::default();
        let d = compiled.evaluate(&r, now, &mut scratch);
        format!("{d:?}\n{:?}", scratch.slots)
    })
}

fn program(params: &[(&str, &str)], result: &str) -> Program {
    let src = DecisionSource {
        params: params
            .iter()
            .map(|(n, e)| ParamSource {
                name: n.to_string(),
                expr: e.to_string(),
            })
            .collect(),
        result: result.to_string(),
    };
    Program::compile(&src).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn default_rules_agree_on_scenarios() {
    let p = Program::compile(&DecisionSource::default_rules()).expect("compiles");
    let cases = [
        json!({"id": "a", "generation": 1}),
        json!({"id": "b", "generation": 2, "status": {"conditions": [
            {"type": "Reconciled", "status": "True", "observed_generation": 2,
             "last_updated_time": "2025-10-21T11:00:00Z"}]}}),
        json!({"id": "c", "generation": 2, "status": {"conditions": [
            {"type": "Reconciled", "status": "False", "observed_generation": 2,
             "last_updated_time": "2025-10-21T11:59:55Z"}]}}),
        json!({"id": "d", "generation": "x"}),
        json!({"id": "e", "status": "broken"}),
        json!([1, 2]),
    ];
    for c in cases {
        let [i, j] = answers(&p, &c, now());
        assert_eq!(i, j, "resource {c}");
    }
}

#[test]
fn arithmetic_errors_agree() {
    let p = program(
        &[
            ("a", "resource.generation + 9223372036854775807"),
            ("b", "1 / (resource.generation - 1)"),
        ],
        "a > 0 || b > 0",
    );
    for g in [0, 1, 2] {
        let [i, j] = answers(&p, &json!({"generation": g}), now());
        assert_eq!(i, j, "generation {g}");
    }
}
