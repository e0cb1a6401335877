//! Differential tests: every case runs through the reference interpreter and the JIT, which
//! must agree on the decision, every param's value and every error (kind and message).
//!
//! Cases: the spec's scenarios and a generated fleet through the default rules; `sentinel eval`
//! output with both engines; the expression corpus `tests/data/jit/exprs.cel` over several
//! variable bindings; random well-typed decision programs on random resources (proptest, in
//! `differential/random.rs`); and bad input (overflow, division by zero, bad timestamps, deep and
//! huge expressions). `comparison_catches_a_wrong_result` shows the comparison can fail.
//!
//! Two tables also fix the expected answer, in both engines: `tests/data/jit/cel-go.txt`, the
//! behaviours the CEL spec leaves open as cel-go v0.29.1 answers them, and the value-size limit
//! (`values_past_the_size_limit_are_the_same_error_in_both_engines`).
//!
//! The cel-spec conformance cases (`tests/conformance.rs`) and the oracle's decision corpus
//! (`tests/decisions.rs`) also run every case through the JIT and fail on any disagreement.

#[path = "differential/random.rs"]
mod random;

use sentinel::cel::check::Env;
use sentinel::cel::host::Resource;
use sentinel::cel::interp::{self, Activation};
use sentinel::cel::jit::{self, JitExpr, JitProgram, Nativeness};
use sentinel::cel::time::{Timestamp, parse_duration, parse_timestamp};
use sentinel::cel::types::Type;
use sentinel::cel::value::{ErrorKind, EvalResult, Map, Value, value_bytes};
use sentinel::cel::{check, parse};
use sentinel::resource::corpus::fleet;
use sentinel::rules::decision::{Compiled, DecisionSource, Engine, ParamSource, Program, Scratch};
use serde_json::{Value as Json, json};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

/// Counts this thread's allocations, to show that deciding does not allocate, and the bytes
/// it holds (now and at the peak), to show how much memory one decision takes.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn held(delta: isize) {
    let live = LIVE.with(|l| {
        l.set(l.get() + delta);
        l.get()
    });
    PEAK.with(|p| p.set(p.get().max(live)));
}

#[allow(unsafe_code)] // a counting allocator: unsafe by its trait
// SAFETY: forwards to the system allocator; the counter is a const thread-local without a
// destructor, so touching it never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        held(layout.size() as isize);
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        held(-(layout.size() as isize));
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        held(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The most bytes this thread held at once while `f` ran, above what it held before.
fn peak_bytes_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(Cell::get).saturating_sub(base) as usize)
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// The evaluation time every differential case uses.
pub fn now() -> Timestamp {
    parse_timestamp("2025-10-21T12:00:00Z").expect("valid now")
}

/// Where a decision program's answers differ between the engines, if they do: the decision and
/// every param value, as text that shows value types, error kinds and messages.
pub fn disagreement(
    interp: &Program,
    native: &Program,
    resources: &[Json],
    now: Timestamp,
) -> Option<String> {
    let a = Compiled::new(interp.clone(), Engine::Interp).expect("interp");
    let b = match Compiled::new(native.clone(), Engine::Jit) {
        Ok(b) => b,
        Err(e) => return Some(format!("jit does not compile: {e}")),
    };
    let (mut sa, mut sb) = (Scratch::default(), Scratch::default());
    // The hot path's own scratch: never filled by `explain` (which stores every param for this
    // resource), so a param the fast body failed to store would be read stale.
    let mut sd = Scratch::default();
    for json in resources {
        let r = Arc::new(Resource::from_json(json.clone()));
        let da = a.explain(&r, now, &mut sa);
        let db = b.explain(&r, now, &mut sb);
        let (ta, tb) = (
            format!("{da:?}\n{:?}", sa.slots),
            format!("{db:?}\n{:?}", sb.slots),
        );
        if ta != tb {
            return Some(format!("resource {json}\ninterp: {ta}\njit:    {tb}"));
        }
        // The hot path (no param values kept) decides the same.
        if b.decide(&r, now, &mut sd) != da {
            return Some(format!("resource {json}: decide() differs from evaluate()"));
        }
    }
    None
}

/// A decision program from `(name, expression)` params and a result expression.
pub fn program(params: &[(&str, &str)], result: &str) -> Program {
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

fn default_program() -> Program {
    Program::compile(&DecisionSource::default_rules()).expect("default rules compile")
}

fn assert_agree(p: &Program, resources: &[Json]) {
    if let Some(d) = disagreement(p, p, resources, now()) {
        panic!("engines disagree:\n{d}");
    }
}

/// Resources with every kind of bad data the decoder keeps as field errors.
fn odd_resources() -> Vec<Json> {
    let cond = |status: Json, observed: Json, updated: Json| {
        json!({"type": "Reconciled", "status": status, "observed_generation": observed,
               "last_updated_time": updated})
    };
    vec![
        json!({"id": "a", "generation": 1}),
        json!({"id": "b", "generation": 2, "status": {"conditions": [
            cond(json!("True"), json!(2), json!("2025-10-21T11:00:00Z"))]}}),
        json!({"id": "c", "generation": 2, "status": {"conditions": [
            cond(json!("False"), json!(2), json!("2025-10-21T11:59:55Z"))]}}),
        json!({"id": "d", "generation": "x"}),
        json!({"id": "e", "status": "broken"}),
        json!({"id": "f", "generation": 3, "status": {"conditions": [
            cond(json!(5), json!("x"), json!("yesterday"))]}}),
        json!({"id": "g", "generation": 9223372036854775807_i64, "status": {"conditions": [
            cond(json!("True"), json!(-9223372036854775807_i64), json!("0001-01-01T00:00:00Z"))]}}),
        json!({"id": "h", "generation": 2, "status": {"conditions": [
            cond(json!("True"), json!(2), json!("9999-12-31T23:59:59.999999999Z")),
            {"type": "Reconciled", "status": "Unknown"}]}}),
        json!({"id": "i", "generation": 2, "status": {"conditions": [
            cond(json!("True"), json!(2), json!("2025-10-21T12:30:00+05:30"))]}}),
        json!([1, 2]),
        json!(null),
    ]
}

#[test]
fn default_rules_agree_on_odd_resources() {
    assert_agree(&default_program(), &odd_resources());
}

/// A row without field errors runs the body compiled without error checks, any other row the
/// general body; both bodies are exercised (and agree, above) on the odd resources.
#[test]
fn rows_with_field_errors_take_the_checked_body() {
    let compiled = Compiled::new(default_program(), Engine::Jit).expect("jit");
    let native = compiled.jit().expect("native");
    let clean: Vec<bool> = odd_resources()
        .into_iter()
        .map(|json| {
            let mut row = jit::Prepared::default();
            native.prepare(&Arc::new(Resource::from_json(json)), &mut row);
            row.is_clean()
        })
        .collect();
    // a: no Reconciled condition, so its empty time fails to parse; d, e, f: bad fields; h: the
    // last Reconciled condition has no time; the last two are not objects.
    let expected = [
        false, true, true, false, false, false, true, false, true, false, false,
    ];
    assert_eq!(clean, expected);
}

#[test]
fn default_rules_agree_on_a_generated_fleet() {
    assert_agree(&default_program(), &fleet(400, now(), 7));
}

#[test]
fn default_rules_compile_to_all_native_code() {
    let p = default_program();
    let compiled = Compiled::new(p, Engine::Jit).expect("compiles");
    let native = compiled.jit().expect("native");
    assert!(
        native.nativeness().iter().all(|n| *n == Nativeness::Native),
        "{:?}",
        native.nativeness()
    );
}

#[test]
fn deciding_does_not_allocate() {
    let compiled = Compiled::new(default_program(), Engine::Jit).expect("compiles");
    let native = compiled.jit().expect("native");
    let resources: Vec<Arc<Resource>> = fleet(300, now(), 13)
        .into_iter()
        .map(|j| Arc::new(Resource::from_json(j)))
        .collect();
    let mut scratch = Scratch::default();
    let mut prepared = jit::Prepared::default();
    let mut native_scratch = jit::Scratch::default();
    let mut run = || {
        let mut published = 0;
        for r in &resources {
            // The daemon's path: prepare (at decode) and decide.
            published += usize::from(compiled.decide(r, now(), &mut scratch).publish);
            native.prepare(r, &mut prepared);
            let outcome = native.decide(
                &prepared,
                now(),
                &mut native_scratch,
                sentinel::cel::jit::Params::Drop,
            );
            published += usize::from(compiled.conclude_outcome(outcome).publish);
        }
        published
    };
    let warm = run();
    let before = allocations();
    assert_eq!(run(), warm);
    assert_eq!(allocations() - before, 0, "allocations in steady state");
}

/// As [`deciding_does_not_allocate`], on resources the projected page decoder made, whose
/// strings are ranges of the page: preparing the row boxes them without copying (the value a
/// helper would read is made from the bytes on first use only).
#[test]
fn deciding_on_a_decoded_page_does_not_allocate() {
    let program = default_program();
    let projection = Arc::new(program.projection());
    let body = serde_json::to_vec(&json!({"items": fleet(300, now(), 13), "total": 300}))
        .expect("serializable");
    let page = sentinel::api::decode_page_with(&body, &projection).expect("decodes");
    let resources: Vec<Arc<Resource>> = page.items.into_iter().map(Arc::new).collect();
    assert!(resources.iter().all(|r| r.projection().is_some()));
    let compiled = Compiled::new(program, Engine::Jit).expect("compiles");
    let mut scratch = Scratch::default();
    let mut run = || {
        let published: usize = resources
            .iter()
            .map(|r| usize::from(compiled.decide(r, now(), &mut scratch).publish))
            .sum();
        published
    };
    let warm = run();
    assert!(warm > 0 && warm < resources.len(), "{warm} published");
    let before = allocations();
    assert_eq!(run(), warm);
    assert_eq!(allocations() - before, 0, "allocations in steady state");
}

#[test]
fn compiled_programs_are_shareable_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Compiled>();
    shareable::<JitProgram>();
    shareable::<jit::Prepared>();
}

#[test]
fn eval_output_is_identical_for_both_engines() {
    let mut input = Vec::new();
    for r in odd_resources().into_iter().chain(fleet(50, now(), 3)) {
        serde_json::to_writer(&mut input, &r).expect("json");
        input.push(b'\n');
    }
    let outputs = Engine::ALL.map(|engine| {
        let compiled = Compiled::new(default_program(), engine).expect("compiles");
        let mut out = Vec::new();
        sentinel::cmd::eval::run(&compiled, now(), &input[..], "test", &mut out).expect("eval");
        String::from_utf8(out).expect("utf-8")
    });
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0].lines().count(), 61);
}

#[test]
fn custom_rules_with_errors_and_helpers_agree() {
    let p = program(
        &[
            ("a", "resource.generation + 9223372036854775806"),
            ("b", "1 / (resource.generation - 2)"),
            ("c", r#"condition("Reconciled").status.lowerAscii()"#),
            ("d", r#"condition(c).type + resource.kind"#),
            (
                "e",
                r#"resource.labels["tier"] == "standard" || has(resource.spec.nodes)"#,
            ),
            ("f", r#"[a, b].exists(x, x > 1) && {"k": c}.k != """#),
            (
                "g",
                r#"timestamp(condition("Reconciled").last_updated_time) + duration("1h") > now"#,
            ),
        ],
        "a > 0 || b > 0 || g",
    );
    let mut resources = odd_resources();
    resources.extend(fleet(40, now(), 11));
    assert_agree(&p, &resources);
}

#[test]
fn dyn_results_agree() {
    let p = program(&[("n", "resource.spec.nodes")], "n");
    assert_agree(&p, &fleet(20, now(), 5));
    let p = program(&[("n", "resource.spec")], "n.nodes > 5");
    assert_agree(&p, &fleet(20, now(), 5));
}

/// The variables of the expression corpus.
fn decls() -> Vec<(String, Type)> {
    [
        ("i", Type::Int),
        ("j", Type::Int),
        ("u", Type::Uint),
        ("v", Type::Uint),
        ("d", Type::Double),
        ("e", Type::Double),
        ("s", Type::String),
        ("t", Type::String),
        ("b", Type::Bool),
        ("c", Type::Bool),
        ("ts", Type::Timestamp),
        ("ts2", Type::Timestamp),
        ("du", Type::Duration),
        ("l", Type::list(Type::Int)),
        ("m", Type::map(Type::String, Type::Int)),
        ("x", Type::Dyn),
    ]
    .into_iter()
    .map(|(n, t)| (n.to_string(), t))
    .collect()
}

fn ts(text: &str) -> Value {
    Value::Timestamp(parse_timestamp(text).expect("valid timestamp"))
}

fn dur(text: &str) -> Value {
    Value::Duration(parse_duration(text).expect("valid duration"))
}

fn list(items: &[i64]) -> Value {
    Value::List(items.iter().map(|i| Value::Int(*i)).collect())
}

fn map(entries: &[(&str, i64)]) -> Value {
    let entries = entries
        .iter()
        .map(|(k, v)| (Value::string(k), Value::Int(*v)))
        .collect();
    Value::Map(Arc::new(Map::from_entries(entries)))
}

/// Value sets for the corpus variables, in `decls` order: ordinary, extreme and empty values.
fn bindings() -> Vec<Vec<Value>> {
    let s = Value::string;
    vec![
        vec![
            Value::Int(1),
            Value::Int(2),
            Value::Uint(3),
            Value::Uint(4),
            Value::Double(1.5),
            Value::Double(-0.0),
            s("abc"),
            s("True"),
            Value::Bool(true),
            Value::Bool(false),
            ts("2025-10-21T12:00:00Z"),
            ts("0001-01-01T00:00:00Z"),
            dur("30m"),
            list(&[1, 2, 3]),
            map(&[("a", 1)]),
            Value::Int(1),
        ],
        vec![
            Value::Int(i64::MAX),
            Value::Int(-1),
            Value::Uint(u64::MAX),
            Value::Uint(0),
            Value::Double(f64::NAN),
            Value::Double(f64::INFINITY),
            s(""),
            s("ü日本"),
            Value::Bool(false),
            Value::Bool(true),
            ts("9999-12-31T23:59:59.999999999Z"),
            ts("1970-01-01T00:00:00Z"),
            dur("-10s"),
            list(&[]),
            map(&[]),
            s("str"),
        ],
        vec![
            Value::Int(i64::MIN),
            Value::Int(-1),
            Value::Uint(0),
            Value::Uint(0),
            Value::Double(f64::NEG_INFINITY),
            Value::Double(0.0),
            s("True"),
            s("True"),
            Value::Bool(true),
            Value::Bool(true),
            ts("1677-09-21T00:12:43.145224192Z"),
            ts("1970-01-01T00:00:00Z"),
            dur("-2562047h47m16.854775808s"),
            list(&[0, 1, 2]),
            map(&[("a", 0), ("b", 1)]),
            Value::List(Arc::from(vec![Value::Int(1)])),
        ],
        vec![
            Value::Int(0),
            Value::Int(0),
            Value::Uint(1),
            Value::Uint(1),
            Value::Double(1e300),
            Value::Double(1e300),
            s("abcdefghijklmnopqr"),
            s("2025-10-21T12:00:00Z"),
            Value::Bool(false),
            Value::Bool(false),
            ts("2025-10-21T11:30:00Z"),
            ts("2262-04-11T23:47:16.854775807Z"),
            dur("2562047h47m16.854775807s"),
            list(&[5]),
            map(&[("b", 2)]),
            Value::Null,
        ],
        // One instant at two offsets (kept by both engines, ignored by comparisons).
        vec![
            Value::Int(3),
            Value::Int(-3),
            Value::Uint(7),
            Value::Uint(2),
            Value::Double(-2.5),
            Value::Double(0.5),
            s("2025-10-21T17:30:00.5+05:30"),
            s("1.5h"),
            Value::Bool(true),
            Value::Bool(false),
            ts("2025-10-21T17:30:00.5+05:30"),
            ts("2025-10-21T12:00:00.5Z"),
            dur("-90m"),
            list(&[2, 4]),
            map(&[("a", 3)]),
            s("x"),
        ],
    ]
}

fn corpus() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jit/exprs.cel");
    std::fs::read_to_string(path)
        .expect("corpus readable")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Compiles a standalone expression over the corpus variables for both engines.
fn standalone(src: &str) -> (sentinel::cel::typed::TExpr, JitExpr) {
    standalone_in(src, &Env::with_slots(&decls()))
}

/// Compiles a standalone expression in `env` for both engines.
fn standalone_in(src: &str, env: &Env) -> (sentinel::cel::typed::TExpr, JitExpr) {
    let ast = parse(src).unwrap_or_else(|d| panic!("{src}: {d:?}"));
    let typed = check(&ast, env).unwrap_or_else(|d| panic!("{src}: {d:?}"));
    let native =
        JitExpr::compile(&typed, &jit::Options::default()).unwrap_or_else(|e| panic!("{src}: {e}"));
    (typed, native)
}

#[test]
fn expression_corpus_agrees_on_every_binding() {
    let mut scratch = jit::Scratch::default();
    let mut failures = Vec::new();
    let exprs = corpus();
    assert!(exprs.len() > 150, "corpus has {} expressions", exprs.len());
    for src in &exprs {
        let (typed, native) = standalone(src);
        for (k, values) in bindings().into_iter().enumerate() {
            let slots: Vec<EvalResult> = values.into_iter().map(Ok).collect();
            let act = Activation {
                slots: &slots,
                ..Activation::default()
            };
            let want = format!("{:?}", interp::eval(&typed, &act));
            let got = format!("{:?}", native.eval(&act, &mut scratch));
            if want != got {
                failures.push(format!(
                    "{src} (binding {k}):\n  interp: {want}\n  jit:    {got}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn standalone_errors_are_the_interpreters() {
    // Unbound variables (an empty activation) fail the same way in both engines.
    let mut scratch = jit::Scratch::default();
    for src in ["i + 1", "s == \"x\"", "b || c", "ts - ts2 > du"] {
        let (typed, native) = standalone(src);
        let act = Activation::default();
        assert_eq!(
            format!("{:?}", interp::eval(&typed, &act)),
            format!("{:?}", native.eval(&act, &mut scratch)),
            "{src}"
        );
    }
}

/// A balanced sum of `2^levels` terms `resource.generation` (wide, but only `levels` deep).
fn wide_sum(levels: u32) -> String {
    if levels == 0 {
        return "resource.generation".into();
    }
    let half = wide_sum(levels - 1);
    format!("({half} + {half})")
}

#[test]
fn deep_and_huge_expressions_compile_or_fall_back_without_crashing() {
    // As deep as the parser allows.
    let deep = format!("{}1{}", "(".repeat(150), ")".repeat(150));
    let p = program(
        &[("deep", &format!("resource.generation + {deep}"))],
        "deep > 0",
    );
    assert_agree(&p, &odd_resources());
    // Large: compiled natively (2047 nodes).
    let p = program(&[("sum", &wide_sum(10))], "sum > 0");
    assert_agree(&p, &odd_resources()[..3]);
    // Too large to compile (32767 nodes): that param runs in the interpreter, and says so.
    let p = program(
        &[("small", "resource.generation"), ("huge", &wide_sum(14))],
        "huge > small",
    );
    let compiled = Compiled::new(p.clone(), Engine::Jit).expect("compiles");
    let status = compiled.jit().expect("native").nativeness().to_vec();
    assert_eq!(status[0], Nativeness::Native);
    assert!(
        matches!(&status[1], Nativeness::Interpreted(why) if why.contains("too large")),
        "{status:?}"
    );
    assert_agree(&p, &odd_resources()[..3]);
}

/// The hot path keeps no param values, so its body stores none, except when an expression runs
/// in the interpreter, which reads the earlier params back: deciding with a fresh scratch (no
/// values left by an earlier call) shows that the interpreted param sees them.
#[test]
fn an_interpreted_param_reads_the_earlier_params_on_the_hot_path() {
    let huge = format!("{} - small", wide_sum(14));
    let p = program(
        &[("small", "resource.generation"), ("huge", &huge)],
        "huge == small * 16383",
    );
    let interp = Compiled::new(p.clone(), Engine::Interp).expect("interp");
    let native = Compiled::new(p, Engine::Jit).expect("compiles");
    let status = native.jit().expect("native").nativeness().to_vec();
    assert!(
        matches!(&status[1], Nativeness::Interpreted(why) if why.contains("too large")),
        "{status:?}"
    );
    for json in fleet(20, now(), 5) {
        let r = Arc::new(Resource::from_json(json));
        let expected = interp.decide(&r, now(), &mut Scratch::default());
        assert!(expected.publish, "{expected:?}");
        assert_eq!(native.decide(&r, now(), &mut Scratch::default()), expected);
    }
}

#[test]
fn comprehensions_and_map_literals_are_native() {
    let p = program(
        &[
            (
                "ready",
                r#"resource.status.conditions.exists(c, c.type == "Ready" && c.status == "True")"#,
            ),
            (
                "types",
                r#"resource.status.conditions.map(c, c.type).filter(t, t != "Ready")"#,
            ),
            (
                "one",
                r#"resource.status.conditions.exists_one(c, c.status == "True")"#,
            ),
            (
                "all",
                r#"resource.status.conditions.all(c, int(c.observed_generation) >= 0)"#,
            ),
            (
                "labels",
                r#"{"tier": resource.labels.tier, "n": string(size(types))}"#,
            ),
            ("plain", "resource.generation > 1"),
        ],
        "ready || plain || one || all",
    );
    let compiled = Compiled::new(p.clone(), Engine::Jit).expect("compiles");
    let status = compiled.jit().expect("native").nativeness().to_vec();
    assert!(
        status.iter().all(|s| *s == Nativeness::Native),
        "{status:?}"
    );
    let mut resources = odd_resources();
    resources.extend(fleet(30, now(), 9));
    assert_agree(&p, &resources);
}

#[test]
fn generated_code_passes_the_verifier() {
    let opts = jit::Options {
        verify: true,
        listing: true,
        ..jit::Options::default()
    };
    let p = default_program();
    let params: Vec<_> = p.params.iter().map(|q| q.expr.clone()).collect();
    let native = JitProgram::compile(&params, &p.result, &opts).expect("verifies");
    let listing = native.listing().expect("listing kept");
    let body = listing.bodies.first().expect("a body");
    assert!(
        body.clif.iter().any(|l| l.text.starts_with("function")),
        "{body:?}"
    );
    assert!(!body.asm.is_empty());
    for i in 0..params.len() {
        JitProgram::compile_param(&params, i, &opts).expect("slice verifies");
    }
    for src in corpus() {
        let (typed, _) = standalone(&src);
        JitExpr::compile(&typed, &opts).unwrap_or_else(|e| panic!("{src}: {e}"));
    }
}

/// The resident set size of this process, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A macro that reads a resource field in its body, over a list in the same resource: each
/// element's reading of `resource.spec` shares one decoding of the field, and what an element
/// makes is dropped at its end, so one decision over a 50 KB resource holds well under a few
/// MB in either engine (it held the field once per element: hundreds of MB, growing with the
/// square of the size).
#[test]
fn a_macro_over_a_resource_field_decides_in_memory_of_the_resources_size() {
    let items: Vec<i64> = (0..9000).collect();
    let json = json!({"id": "c1", "kind": "Cluster", "generation": 1,
        "spec": {"items": items, "limit": 9, "names": items.iter().map(|i| format!("n{i}")).collect::<Vec<_>>()}});
    let size = json.to_string().len();
    assert!(size > 50_000, "{size} bytes");
    let rules = [
        "resource.spec.items.all(x, x <= resource.spec.limit * 1000000.0)",
        "!resource.spec.items.exists(x, x > resource.spec.limit * 1000000.0)",
        "resource.spec.items.map(x, x + resource.spec.limit).size() == 9000",
        "resource.spec.names.filter(n, n == 'n' + string(resource.spec.limit)).size() == 1",
        "resource.spec.items.all(x, resource.spec.names.exists(n, n == 'n0') && has(resource.spec))",
    ];
    for rule in rules {
        let p = program(&[("ok", rule)], "ok");
        assert_agree(&p, std::slice::from_ref(&json));
        for engine in [Engine::Interp, Engine::Jit] {
            let compiled = Compiled::new(p.clone(), engine).expect("compiles");
            let mut scratch = Scratch::default();
            let r = Arc::new(Resource::from_json(json.clone()));
            let (decision, peak) = peak_bytes_of(|| compiled.decide(&r, now(), &mut scratch));
            assert!(decision.publish, "{rule} ({engine:?}): {decision:?}");
            assert!(
                peak < 4 << 20,
                "{rule} ({engine:?}) held {peak} bytes for a {size}-byte resource"
            );
        }
    }
}

#[test]
fn recompiling_does_not_leak_code_memory() {
    let p = default_program();
    let params: Vec<_> = p.params.iter().map(|q| q.expr.clone()).collect();
    let opts = jit::Options {
        verify: false,
        listing: false,
        ..jit::Options::default()
    };
    let compile = || JitProgram::compile(&params, &p.result, &opts).expect("compiles");
    for _ in 0..50 {
        drop(compile());
    }
    let before = rss();
    for _ in 0..400 {
        drop(compile());
    }
    let grown = rss().saturating_sub(before);
    // Leaked code would cost at least a page per compile (400 pages = 1.6 MB).
    assert!(
        grown < 1_200_000,
        "RSS grew by {grown} bytes over 400 compiles"
    );
}

#[test]
fn comparison_catches_a_wrong_result() {
    let resources = odd_resources();
    // A wrong value.
    let right = program(&[("n", "resource.generation + 1")], "n > 2");
    let wrong = program(&[("n", "resource.generation - 1")], "n > 2");
    assert!(disagreement(&right, &wrong, &resources, now()).is_some());
    // The same failure, but a different error kind and message.
    let right = program(&[("n", "1 / (resource.generation - 1)")], "n > 0");
    let wrong = program(&[("n", "1 % (resource.generation - 1)")], "n > 0");
    let d = disagreement(&right, &wrong, &resources, now()).expect("caught");
    assert!(
        d.contains("DivisionByZero") && d.contains("ModulusByZero"),
        "{d}"
    );
    // The random search finds a deliberately wrong engine too.
    assert!(random::mutant_is_caught());
}

/// `text` with `.replace("a", "aaaaaaaaaa")` applied `times` times: each multiplies its `a`s by 10.
fn tenfold(text: &str, times: usize) -> String {
    format!("{text}{}", r#".replace("a", "aaaaaaaaaa")"#.repeat(times))
}

#[test]
fn values_past_the_size_limit_are_the_same_error_in_both_engines() {
    // `s` is "abc" (binding 0): `tenfold("s", 6)` is 10^6 + 2 bytes, just under the limit.
    let big = tenfold("s", 6);
    let ten = r#"(s + "aaaaaaaaaa")"#;
    let letters = format!(r#"{}.split("")"#, tenfold(ten, 3)); // 11004 one-letter strings
    let sep = tenfold(ten, 1);
    let block = tenfold(ten, 4);
    let quotes = format!(
        r#"(s + '""""""""""'){}"#,
        r#".replace('"', '""""""""""')"#.repeat(5)
    );
    let cases: Vec<(String, &str)> = vec![
        // The issue's chain, on a variable and (folded at check time) on a constant.
        (tenfold(ten, 9), "string"),
        (tenfold(r#""a""#, 10), "string"),
        (format!("{big} + {big}"), "string"),
        (format!("bytes({big}) + bytes({big})"), "bytes"),
        (format!(r#"{}.split("")"#, tenfold(ten, 4)), "list"),
        (format!("{letters}.map(x, [x, x, x])"), "list"),
        (format!("{letters} + {letters} + {letters}"), "list"),
        (format!("{letters}.join({sep})"), "string"),
        (
            format!(r#""%x%x%x%x%x".format([{block}, {block}, {block}, {block}, {block}])"#),
            "string",
        ),
        (format!("strings.quote({quotes})"), "string"),
        (format!("[{big}, {big}]"), "list"),
        (format!(r#"{{"a": {big}, "b": {big}}}"#), "map"),
    ];
    let slots: Vec<EvalResult> = bindings().swap_remove(0).into_iter().map(Ok).collect();
    let act = Activation {
        slots: &slots,
        ..Activation::default()
    };
    let mut scratch = jit::Scratch::default();
    for (src, what) in &cases {
        let (typed, native) = standalone(src);
        let want = format!("{what} exceeds the 1048576-byte limit");
        for (engine, got) in [
            ("interp", interp::eval(&typed, &act)),
            ("jit", native.eval(&act, &mut scratch)),
        ] {
            match got {
                Err(e) => assert!(
                    e.kind == ErrorKind::TooLarge && e.message == want,
                    "{engine}: {src}: {e:?}"
                ),
                Ok(v) => panic!("{engine}: {src}: a value of {} bytes", value_bytes(&v)),
            }
        }
    }
    // Just under the limit is a value in both engines.
    let (typed, native) = standalone(&format!("size({big})"));
    assert_eq!(
        format!("{:?}", interp::eval(&typed, &act)),
        format!("{:?}", native.eval(&act, &mut scratch))
    );
    assert!(matches!(
        interp::eval(&typed, &act),
        Ok(Value::Int(1_000_002))
    ));
}

#[test]
fn random_programs_agree_on_random_resources() {
    random::run_agreement();
}

/// One line of `tests/data/jit/cel-go.txt`: what an expression must give.
enum Expected {
    Value(Value),
    Error(String, Option<String>),
}

fn expected(text: &str) -> Expected {
    if let Some(rest) = text.strip_prefix("error ") {
        let (kind, message) = rest
            .split_once(": ")
            .map_or((rest, None), |(k, m)| (k, Some(m.to_string())));
        return Expected::Error(kind.to_string(), message);
    }
    let (typed, _) = standalone(text);
    Expected::Value(interp::eval_constant(&typed).unwrap_or_else(|e| panic!("{text}: {e}")))
}

/// The resource `tests/data/jit/cel-go.txt` reads (its comment there says what it holds).
fn table_resource() -> Arc<Resource> {
    Arc::new(Resource::from_json(json!({
        "id": "c1", "kind": "Cluster", "generation": 2,
        "spec": {"replicas": 3, "ratio": 1.5, "list": [1, 2], "nested": {"n": 2},
                 "big": 9007199254740993_i64},
        "metadata": {"count": 5},
        "status": {"conditions": [{"type": "Ready", "status": "True", "observed_generation": 2,
            "last_updated_time": "2025-10-21T11:00:00Z",
            "last_transition_time": "2025-10-21T11:00:00Z"}]}
    })))
}

#[test]
fn open_behaviours_follow_cel_go_in_both_engines() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jit/cel-go.txt");
    let text = std::fs::read_to_string(path).expect("table readable");
    let slots: Vec<EvalResult> = bindings().swap_remove(0).into_iter().map(Ok).collect();
    let resource = table_resource();
    let act = Activation {
        slots: &slots,
        resource: Some(&resource),
        ..Activation::default()
    };
    let mut scratch = jit::Scratch::default();
    let mut failures = Vec::new();
    let mut n = 0;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (src, want) = line
            .split_once("  =>  ")
            .unwrap_or_else(|| panic!("no `  =>  ` in {line:?}"));
        n += 1;
        let want = expected(want.trim());
        // The corpus variables, and `resource`, `now` and `condition()` as a decision has them.
        let (typed, native) = standalone_in(src.trim(), &Env::decision(&decls()));
        for (engine, got) in [
            ("interp", interp::eval(&typed, &act)),
            ("jit", native.eval(&act, &mut scratch)),
        ] {
            let ok = match (&want, &got) {
                (Expected::Value(w), Ok(g)) => w.type_name() == g.type_name() && w.equals(g),
                (Expected::Error(kind, message), Err(e)) => {
                    format!("{:?}", e.kind) == *kind
                        && message.as_ref().is_none_or(|m| *m == e.message)
                }
                _ => false,
            };
            if !ok {
                failures.push(format!("{engine}: {line}\n  got {got:?}"));
            }
        }
    }
    assert!(n > 50, "only {n} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_integers_beyond_int64_are_doubles_in_both_engines() {
    // cel-go sees the spec as Go's encoding/json decodes it into `interface{}`: every number a
    // float64, so an integer beyond int64 is the nearest double (not an error, not a uint).
    let p = program(
        &[
            ("big", "resource.spec.big"),
            (
                "is_double",
                "type(big) == double && big == 18446744073709551616.0",
            ),
            ("neg", "resource.spec.neg == -9223372036854775809.0"),
        ],
        "is_double && neg",
    );
    let text = r#"{"id": "x", "kind": "Cluster", "generation": 1,
        "spec": {"big": 18446744073709551616, "neg": -9223372036854775809}}"#;
    let resources = [serde_json::from_str::<Json>(text).expect("valid JSON")];
    assert_agree(&p, &resources);
    let compiled = Compiled::new(p, Engine::Jit).expect("jit");
    let r = Arc::new(Resource::from_json(resources[0].clone()));
    let mut scratch = Scratch::default();
    compiled.explain(&r, now(), &mut scratch);
    assert!(
        matches!(
            scratch.slots.as_slice(),
            [
                Ok(Value::Double(_)),
                Ok(Value::Bool(true)),
                Ok(Value::Bool(true))
            ]
        ),
        "{:?}",
        scratch.slots
    );
}

// ---- projected page decoding ----

/// Where deciding on resources decoded from one page under the program's projection differs
/// from deciding on completely decoded ones, for either engine.
pub fn projected_disagreement(p: &Program, resources: &[Json], now: Timestamp) -> Option<String> {
    use sentinel::api::decode_page_with;
    let body = serde_json::to_vec(&json!({"items": resources, "total": resources.len()}))
        .expect("serializable");
    let projection = Arc::new(p.projection());
    let page = match decode_page_with(&body, &projection) {
        Ok(page) => page,
        Err(e) => return Some(format!("page does not decode: {e}")),
    };
    let projected: Vec<Arc<Resource>> = page.items.into_iter().map(Arc::new).collect();
    for engine in [Engine::Interp, Engine::Jit] {
        let c = match Compiled::new(p.clone(), engine) {
            Ok(c) => c,
            Err(e) => return Some(format!("does not compile: {e}")),
        };
        let (mut sa, mut sb) = (Scratch::default(), Scratch::default());
        for (json, r) in resources.iter().zip(&projected) {
            let full = Arc::new(Resource::from_json(json.clone()));
            let da = c.explain(&full, now, &mut sa);
            let db = c.explain(r, now, &mut sb);
            let (ta, tb) = (
                format!("{da:?}\n{:?}", sa.slots),
                format!("{db:?}\n{:?}", sb.slots),
            );
            if ta != tb {
                return Some(format!(
                    "{engine:?} on {json}\ncomplete:  {ta}\nprojected: {tb}"
                ));
            }
            if c.decide(r, now, &mut sb) != da {
                return Some(format!("{engine:?} on {json}: decide() differs"));
            }
        }
    }
    None
}

fn assert_projected_agree(p: &Program, resources: &[Json]) {
    if let Some(d) = projected_disagreement(p, resources, now()) {
        panic!("projected decoding disagrees:\n{d}");
    }
}

#[test]
fn projected_pages_decide_as_complete_decoding() {
    let mut resources = odd_resources();
    resources.extend(fleet(60, now(), 5));
    assert_projected_agree(&default_program(), &resources);
    let custom = program(
        &[
            ("a", "resource.generation + 9223372036854775806"),
            ("c", r#"condition("Reconciled").status.lowerAscii()"#),
            ("d", r#"condition(c).type + resource.kind"#),
            (
                "e",
                r#"resource.labels["tier"] == "standard" || has(resource.spec.nodes)"#,
            ),
            (
                "s",
                "resource.status.conditions.all(c, int(c.observed_generation) >= 0)",
            ),
            // Helpers reading string fields of the row (page ranges when projected).
            (
                "r",
                r#"condition("Reconciled").reason + "/" + resource.name + resource.href"#,
            ),
            (
                "n",
                r#"size(resource.kind) > 3 && condition("Reconciled").last_updated_time.startsWith("20")"#,
            ),
        ],
        "a > 0 || e || s || n",
    );
    assert_projected_agree(&custom, &resources);
}

/// A config reading a field outside its projection through a dynamic path (`resource[k]` with
/// a computed key) still sees it: the projected resource decodes it from its JSON text on first
/// read.
#[test]
fn reads_outside_the_projection_see_the_field() {
    use sentinel::cel::host::ResourceField;
    let p = program(
        &[("k", r#"["hr", "ef"].join("")"#), ("href", "resource[k]")],
        r#"resource.generation > 0 && href == "/clusters/x""#,
    );
    let projection = p.projection();
    assert!(!projection.has_field(ResourceField::Href), "{projection:?}");
    let resources = vec![
        json!({"id": "x", "kind": "Cluster", "generation": 1, "href": "/clusters/x",
        "status": {"conditions": [{"type": "Ready", "reason": "Because"}]}}),
    ];
    assert_projected_agree(&p, &resources);
    let body = serde_json::to_vec(&json!({"items": resources, "total": 1})).expect("json");
    let page = sentinel::api::decode_page_with(&body, &Arc::new(projection)).expect("decodes");
    let resource = Arc::new(page.items.into_iter().next().expect("one item"));
    let compiled = Compiled::new(p, Engine::Jit).expect("jit");
    assert!(!resource.read_outside_projection());
    let decision = compiled.decide(&resource, now(), &mut Scratch::default());
    assert!(decision.publish, "{decision:?}");
    // The dynamic read decoded the resource whole: what no static read ever does.
    assert!(resource.read_outside_projection());
}

// ---- #13 part B ----

/// Fields outside the projection read through dynamic paths (`resource["spec"]`, a computed
/// `resource[k]` of a time and of the labels, iterating the labels map so read, `has()` on a
/// computed path, `condition(<computed>)`) are seen, by both engines, on pages decoded by the
/// projected decoder: the decision is the one that needs every one of them, and agrees with
/// complete decoding.
#[test]
fn dynamic_reads_outside_the_projection_see_the_fields() {
    use sentinel::cel::host::ResourceField;
    let p = program(
        &[
            ("spec", r#"resource["spec"]"#),
            ("nodes", r#"spec.nodes == 3 && has(resource["spec"].nodes)"#),
            ("labels", r#"resource[["lab", "els"].join("")]"#),
            (
                "tier",
                r#"labels.exists(k, k == "tier" && labels[k] == "gold")"#,
            ),
            (
                "created",
                r#"resource[["created", "_time"].join("")] == "2025-01-01T00:00:00Z""#,
            ),
            (
                "reason",
                r#"condition(["Rea", "dy"].join("")).reason == "Because""#,
            ),
            ("owner", r#"has(resource["owner_references"].id)"#),
        ],
        "resource.generation == 2 && nodes && tier && created && reason && owner",
    );
    let projection = p.projection();
    for f in [
        ResourceField::Labels,
        ResourceField::CreatedTime,
        ResourceField::Spec,
    ] {
        assert!(!projection.has_field(f), "{f:?} in {projection:?}");
    }
    let seen = json!({"id": "x", "kind": "Cluster", "generation": 2,
        "created_time": "2025-01-01T00:00:00Z", "labels": {"region": "eu", "tier": "gold"},
        "spec": {"nodes": 3}, "owner_references": {"id": "o"},
        "status": {"conditions": [{"type": "Ready", "reason": "Because"},
            {"type": "Reconciled", "status": "True"}]}});
    let mut unseen = seen.clone();
    unseen["labels"]["tier"] = json!("bronze");
    let resources = vec![seen, unseen];
    assert_projected_agree(&p, &resources);
    let body = serde_json::to_vec(&json!({"items": resources, "total": 2})).expect("json");
    let page = sentinel::api::decode_page_with(&body, &Arc::new(projection)).expect("decodes");
    let items: Vec<Arc<Resource>> = page.items.into_iter().map(Arc::new).collect();
    assert!(items.iter().all(|r| r.projection().is_some()));
    for engine in [Engine::Interp, Engine::Jit] {
        let compiled = Compiled::new(p.clone(), engine).expect("compiles");
        let published: Vec<bool> = items
            .iter()
            .map(|r| compiled.decide(r, now(), &mut Scratch::default()).publish)
            .collect();
        assert_eq!(published, [true, false], "{engine:?}");
    }
}
