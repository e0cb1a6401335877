//! Random well-typed decision programs over ints, bools, strings, timestamps, durations and
//! conditions, run on random resources by both engines (proptest).
//!
//! A program has four params of fixed types (`s`: string, `n`: int, `t`: timestamp, `ok`: bool),
//! each able to read the earlier ones, and a bool result; each case compiles one program and
//! decides a handful of random resources, so a run compares thousands of decisions.

use super::{disagreement, now};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value as Json, json};

/// Programs per run; each is compared on `RESOURCES` resources.
const CASES: u32 = 400;
const RESOURCES: usize = 8;

/// How many params are visible (0..=4) to the expression being generated.
type Level = usize;

fn leaf<T: Clone + std::fmt::Debug + 'static>(items: &[T]) -> BoxedStrategy<T> {
    proptest::sample::select(items.to_vec()).boxed()
}

fn int_literal() -> BoxedStrategy<String> {
    prop_oneof![
        leaf(&[
            "0",
            "1",
            "2",
            "-1",
            "7",
            "1000",
            "9223372036854775807",
            "-9223372036854775807"
        ])
        .prop_map(str::to_string),
        (-50i64..50).prop_map(|v| v.to_string()),
    ]
    .boxed()
}

fn str_literal() -> BoxedStrategy<String> {
    leaf(&[
        r#""""#,
        r#""True""#,
        r#""False""#,
        r#""Unknown""#,
        r#""Reconciled""#,
        r#""Ready""#,
        r#""abc""#,
        r#""é日""#,
        r#""2025-10-21T11:00:00Z""#,
        r#""not a time""#,
        r#""a long string, longer than sixteen bytes""#,
    ])
    .prop_map(str::to_string)
    .boxed()
}

fn cond_name() -> BoxedStrategy<String> {
    leaf(&[r#""Reconciled""#, r#""Ready""#, r#""Missing""#])
        .prop_map(str::to_string)
        .boxed()
}

fn cond(level: Level) -> BoxedStrategy<String> {
    let dynamic = if level > 0 { "s" } else { r#""Ready""# };
    prop_oneof![
        4 => cond_name().prop_map(|n| format!("condition({n})")),
        1 => Just(format!("condition({dynamic})")),
    ]
    .boxed()
}

fn string(level: Level, depth: u32) -> BoxedStrategy<String> {
    let fields = leaf(&[
        "status",
        "type",
        "reason",
        "last_updated_time",
        "last_transition_time",
    ]);
    let mut leaves = vec![
        str_literal(),
        (cond(level), fields)
            .prop_map(|(c, f)| format!("{c}.{f}"))
            .boxed(),
        leaf(&[
            "resource.kind",
            "resource.name",
            "resource.id",
            "resource.created_time",
        ])
        .prop_map(str::to_string)
        .boxed(),
    ];
    if level > 0 {
        leaves.push(Just("s".to_string()).boxed());
    }
    let base = proptest::strategy::Union::new(leaves).boxed();
    if depth == 0 {
        return base;
    }
    let sub = string(level, depth - 1);
    prop_oneof![
        3 => base,
        1 => (sub.clone(), sub.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
        1 => (boolean(level, depth - 1), sub.clone(), sub.clone())
            .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
        1 => integer(level, depth - 1).prop_map(|i| format!("string({i})")),
        1 => sub.prop_map(|a| format!("{a}.lowerAscii()")),
    ]
    .boxed()
}

fn integer(level: Level, depth: u32) -> BoxedStrategy<String> {
    let mut leaves = vec![
        int_literal(),
        Just("resource.generation".to_string()).boxed(),
        cond(level)
            .prop_map(|c| format!("{c}.observed_generation"))
            .boxed(),
    ];
    if level > 1 {
        leaves.push(Just("n".to_string()).boxed());
    }
    let base = proptest::strategy::Union::new(leaves).boxed();
    if depth == 0 {
        return base;
    }
    let sub = integer(level, depth - 1);
    let op = leaf(&["+", "-", "*", "/", "%"]);
    prop_oneof![
        3 => base,
        3 => (sub.clone(), op, sub.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
        1 => sub.clone().prop_map(|a| format!("(-{a})")),
        1 => (boolean(level, depth - 1), sub.clone(), sub.clone())
            .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
        1 => string(level, depth - 1).prop_map(|s| format!("size({s})")),
        1 => (sub.clone(), sub.clone())
            .prop_map(|(a, b)| format!("[{a}, {b}].map(x, x * 2).filter(y, y % 3 != 0).size()")),
        1 => (string(level, depth - 1), sub.clone(), string(level, depth - 1))
            .prop_map(|(k, v, q)| format!(r#"{{{k}: {v}, "a": 1}}[{q}]"#)),
        1 => timestamp(level, depth - 1).prop_map(|t| format!("{t}.getHours()")),
        1 => duration(level, depth - 1).prop_map(|d| format!("{d}.getSeconds()")),
    ]
    .boxed()
}

fn timestamp(level: Level, depth: u32) -> BoxedStrategy<String> {
    let mut leaves = vec![
        Just("now".to_string()).boxed(),
        Just("now".to_string()).boxed(),
        (
            cond(level),
            leaf(&["last_updated_time", "last_transition_time", "created_time"]),
        )
            .prop_map(|(c, f)| format!("timestamp({c}.{f})"))
            .boxed(),
        leaf(&[
            r#""2025-10-21T11:00:00Z""#,
            r#""2025-10-21T11:59:59.5+01:00""#,
            // Not constant: a constant call that always fails is a load-time error.
            r#"resource.kind + "bad""#,
        ])
        .prop_map(|s| format!("timestamp({s})"))
        .boxed(),
        Just("timestamp(resource.created_time)".to_string()).boxed(),
    ];
    if level > 0 {
        leaves.push(Just("timestamp(s)".to_string()).boxed());
    }
    if level > 2 {
        leaves.push(Just("t".to_string()).boxed());
    }
    let base = proptest::strategy::Union::new(leaves).boxed();
    if depth == 0 {
        return base;
    }
    let sub = timestamp(level, depth - 1);
    let d = duration(level, depth - 1);
    prop_oneof![
        3 => base,
        1 => (sub.clone(), d.clone()).prop_map(|(t, d)| format!("({t} + {d})")),
        1 => (sub, d).prop_map(|(t, d)| format!("({t} - {d})")),
        1 => integer(level, depth - 1).prop_map(|i| format!("timestamp({i})")),
    ]
    .boxed()
}

fn duration(level: Level, depth: u32) -> BoxedStrategy<String> {
    let base = leaf(&[
        r#"duration("30m")"#,
        r#"duration("10s")"#,
        r#"duration("-1h")"#,
        r#"duration("2562047h")"#,
        r#"duration("0s")"#,
    ])
    .prop_map(str::to_string)
    .boxed();
    if depth == 0 {
        return base;
    }
    let sub = duration(level, depth - 1);
    let t = timestamp(level, depth - 1);
    prop_oneof![
        2 => base,
        3 => (t.clone(), t).prop_map(|(a, b)| format!("({a} - {b})")),
        1 => (sub.clone(), sub.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
        1 => (sub.clone(), sub.clone()).prop_map(|(a, b)| format!("({a} - {b})")),
        1 => sub.prop_map(|a| format!("(-{a})")),
    ]
    .boxed()
}

fn boolean(level: Level, depth: u32) -> BoxedStrategy<String> {
    let mut leaves = vec![
        leaf(&[
            "true",
            "false",
            "has(resource.spec)",
            "has(resource.labels)",
        ])
        .prop_map(str::to_string)
        .boxed(),
    ];
    if level > 3 {
        leaves.push(Just("ok".to_string()).boxed());
    }
    let base = proptest::strategy::Union::new(leaves).boxed();
    if depth == 0 {
        return base;
    }
    let d = depth - 1;
    let cmp = leaf(&["==", "!=", "<", "<=", ">", ">="]);
    let sub = boolean(level, d);
    prop_oneof![
        2 => base,
        3 => (integer(level, d), cmp.clone(), integer(level, d))
            .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
        2 => (string(level, d), leaf(&["==", "!="]), string(level, d))
            .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
        1 => (string(level, d), cmp.clone(), string(level, d))
            .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
        2 => (timestamp(level, d), cmp.clone(), timestamp(level, d))
            .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
        2 => (duration(level, d), cmp, duration(level, d))
            .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
        2 => (sub.clone(), sub.clone()).prop_map(|(a, b)| format!("({a} && {b})")),
        2 => (sub.clone(), sub.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
        1 => sub.clone().prop_map(|a| format!("!({a})")),
        1 => (sub.clone(), sub.clone(), sub).prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
        1 => (string(level, d), str_literal()).prop_map(|(a, b)| format!("{a}.startsWith({b})")),
        1 => (leaf(&["exists", "all", "exists_one"]), leaf(&["status", "type", "reason"]), str_literal())
            .prop_map(|(m, f, v)| format!("resource.status.conditions.{m}(c, c.{f} == {v})")),
        1 => (leaf(&["exists", "all", "exists_one"]), integer(level, d), integer(level, d))
            .prop_map(|(m, a, b)| format!("[{a}, {b}, 0].{m}(x, 10 / x > 1)")),
        1 => cond(level).prop_map(|c| format!(r#"({c} == condition("Reconciled"))"#)),
    ]
    .boxed()
}

/// A decision program as its four param sources and its result source.
#[derive(Clone, Debug)]
pub struct Sources {
    params: [String; 4],
    result: String,
}

const NAMES: [&str; 4] = ["s", "n", "t", "ok"];

fn sources() -> impl Strategy<Value = Sources> {
    (
        string(0, 2),
        integer(1, 2),
        timestamp(2, 2),
        boolean(3, 2),
        boolean(4, 2),
    )
        .prop_map(|(s, n, t, ok, result)| Sources {
            params: [s, n, t, ok],
            result,
        })
}

fn time_text() -> BoxedStrategy<Json> {
    prop_oneof![
        8 => (0i64..7200).prop_map(|secs| {
            let t = chrono::DateTime::from_timestamp(1_761_048_000 - secs, 0).unwrap_or_default();
            json!(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        }),
        1 => leaf(&[
            json!(""),
            json!("garbage"),
            json!("2025-13-45T00:00:00Z"),
            json!("0001-01-01T00:00:00Z"),
            json!("9999-12-31T23:59:59.999999999Z"),
            json!(12),
        ]),
    ]
    .boxed()
}

fn condition() -> BoxedStrategy<Json> {
    (
        leaf(&["Reconciled", "Reconciled", "Ready", "Other"]),
        leaf(&[
            json!("True"),
            json!("False"),
            json!("Unknown"),
            json!(""),
            json!(5),
        ]),
        prop_oneof![4 => (0i64..5).prop_map(|g| json!(g)), 1 => Just(json!("x"))],
        time_text(),
        time_text(),
    )
        .prop_map(|(ty, status, observed, updated, transition)| {
            json!({"type": ty, "status": status, "observed_generation": observed,
                   "last_updated_time": updated, "last_transition_time": transition})
        })
        .boxed()
}

fn resource() -> BoxedStrategy<Json> {
    let generation = prop_oneof![
        6 => (0i64..5).prop_map(|g| json!(g)),
        1 => leaf(&[json!(9223372036854775807_i64), json!("x"), json!(null)]),
    ];
    let status = prop_oneof![
        8 => proptest::collection::vec(condition(), 1..5)
            .prop_map(|c| json!({"conditions": c})),
        1 => Just(json!("broken")),
    ];
    (generation, status, time_text(), any::<bool>())
        .prop_map(|(generation, status, created, spec)| {
            let mut r = json!({"id": "r", "kind": "Cluster", "name": "c-1", "generation": generation,
                               "created_time": created, "status": status});
            if spec {
                r["spec"] = json!({"nodes": 3});
            }
            r
        })
        .boxed()
}

fn case() -> impl Strategy<Value = (Sources, Vec<Json>)> {
    (
        sources(),
        proptest::collection::vec(resource(), RESOURCES..=RESOURCES),
    )
}

/// Whether `src` is rejected only for constant calls that always fail.
fn only_constant_failures(src: &Sources) -> bool {
    let params = NAMES
        .iter()
        .zip(&src.params)
        .map(|(n, e)| sentinel::rules::decision::ParamSource {
            name: n.to_string(),
            expr: e.clone(),
        })
        .collect();
    let src = sentinel::rules::decision::DecisionSource {
        params,
        result: src.result.clone(),
    };
    sentinel::rules::decision::Program::compile(&src).is_err_and(|e| {
        e.exprs
            .iter()
            .flat_map(|x| &x.diagnostics)
            .all(|d| d.message.starts_with("this call always fails"))
    })
}

fn compile(src: &Sources, mutate: bool) -> Option<sentinel::rules::decision::Program> {
    let params: Vec<(&str, String)> = NAMES
        .iter()
        .zip(&src.params)
        .map(|(n, e)| {
            let e = if mutate {
                e.replacen(" + ", " - ", 1)
            } else {
                e.clone()
            };
            (*n, e)
        })
        .collect();
    let refs: Vec<(&str, &str)> = params.iter().map(|(n, e)| (*n, e.as_str())).collect();
    let src = sentinel::rules::decision::DecisionSource {
        params: refs
            .iter()
            .map(|(n, e)| sentinel::rules::decision::ParamSource {
                name: n.to_string(),
                expr: e.to_string(),
            })
            .collect(),
        result: src.result.clone(),
    };
    // The generator only produces well-typed programs; a rejection is a generator bug.
    sentinel::rules::decision::Program::compile(&src).ok()
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Every random program decides every random resource the same in both engines.
pub fn run_agreement() {
    let result = runner().run(&case(), |(src, resources)| {
        let Some(p) = compile(&src, false) else {
            // A constant call that always fails (`timestamp(9223372036854775807)`) is a
            // load-time error, not a generator bug.
            if only_constant_failures(&src) {
                return Ok(());
            }
            return Err(TestCaseError::fail(format!(
                "generated program does not check: {src:?}"
            )));
        };
        // The engines agree, and decide the same on a page decoded under the program's
        // projection as on completely decoded resources.
        let d = disagreement(&p, &p, &resources, now())
            .or_else(|| super::projected_disagreement(&p, &resources, now()));
        match d {
            None => Ok(()),
            Some(d) => Err(TestCaseError::fail(format!("{src:#?}\n{d}"))),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Runs the same search with the JIT given a deliberately wrong program (its first `+` made a
/// `-`): the comparison must find a disagreement.
pub fn mutant_is_caught() -> bool {
    let mut runner = runner();
    let strategy = case();
    for _ in 0..CASES {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let (src, resources) = tree.current();
        if !src.params.iter().any(|p| p.contains(" + ")) {
            continue;
        }
        let (Some(right), Some(wrong)) = (compile(&src, false), compile(&src, true)) else {
            continue;
        };
        if disagreement(&right, &wrong, &resources, now()).is_some() {
            return true;
        }
    }
    false
}
