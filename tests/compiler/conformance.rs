//! The cel-spec conformance suite, read at test time from `../shared/cel-conformance/*.textproto`
//! and run through our one pipeline: `parser::parse` → `check::check` → `interp::eval`.
//!
//! Each `section`/`test` of each file is a case named `file/section/test`. Cases outside our
//! subset (protobuf messages, containers, enums, …) or still failing are listed in
//! `tests/data/conformance/known_failures.txt` with a reason ([`crate::known_list`]). Invariant:
//! the list may only shrink — the run fails when an unlisted case fails, when a listed case
//! passes, or when a listed name does not exist. `UPDATE_KNOWN_FAILURES=1` rewrites the list,
//! keeping the reasons already written.
//!
//! A case whose expected result is an error also passes when our parser or checker rejects the
//! expression: we have no unchecked evaluation mode, and rejecting a program that can only fail is
//! the checked equivalent. Such passes are counted separately in the per-file summary.

mod textproto;

use crate::known_list::KnownList;
use sentinel::cel::check::{Env, check};
use sentinel::cel::interp::{Activation, eval};
use sentinel::cel::parser::parse;
use sentinel::cel::time::{Duration, Timestamp, format_duration, format_timestamp};
use sentinel::cel::types::Type;
use sentinel::cel::value::{EvalResult, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use textproto::{Message, Node, parse_float, parse_int};

/// Where the conformance files are: `../shared` beside the checkout (CI), else `/work/shared`
/// (a developer worktree whose parent has no `shared/`).
fn conformance_dir() -> PathBuf {
    let beside = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/cel-conformance"
    ));
    let fallback = PathBuf::from("/work/shared/cel-conformance");
    for dir in [&beside, &fallback] {
        if dir.is_dir() {
            return dir.clone();
        }
    }
    panic!(
        "cel-conformance data not found: neither {} nor {} exists",
        beside.display(),
        fallback.display()
    );
}

/// What a case expects.
#[derive(Clone, Debug)]
enum Expect {
    /// A value (also the default, `true`, when the test names no result).
    Value(Value),
    /// Any error.
    Error(String),
    /// A value and its statically deduced type.
    Typed(Value, Type),
}

/// One conformance test, converted into our terms. Conversion problems (a binding or type
/// outside our subset) are kept and make the case fail with that reason.
struct Case {
    id: String,
    expr: String,
    disable_check: bool,
    setup: Result<Setup, String>,
}

struct Setup {
    decls: Vec<(String, Type)>,
    values: Vec<EvalResult>,
    expect: Expect,
}

/// How a case ended.
enum Outcome {
    /// Got the expected value or error; `statically` when an expected error was a parse or
    /// check rejection.
    Pass { statically: bool },
    /// Anything else, described for a person.
    Fail(String),
}

// ---------------------------------------------------------------------------------------------
// cel.expr.Value / cel.expr.Type (as text-format trees) → our values and types
// ---------------------------------------------------------------------------------------------

fn int_of(node: &Node) -> Result<i128, String> {
    match node {
        Node::Number(n) => parse_int(n).ok_or_else(|| format!("bad integer {n}")),
        Node::Ident(s) if s == "NULL_VALUE" => Ok(0),
        other => Err(format!("expected an integer, got {other:?}")),
    }
}

fn text_of(node: &Node) -> Result<String, String> {
    match node {
        Node::Bytes(b) => {
            String::from_utf8(b.clone()).map_err(|_| "string is not UTF-8".to_string())
        }
        other => Err(format!("expected a string, got {other:?}")),
    }
}

/// The one set field of a oneof-style message.
fn only_field(m: &Message) -> Result<(&str, &Node), String> {
    match m.fields.as_slice() {
        [(name, node)] => Ok((name.as_str(), node)),
        [] => Err("empty message".into()),
        _ => Err(format!("expected one field, got {}", m.fields.len())),
    }
}

/// A `cel.expr.Value` message to a value.
fn value_of(m: &Message) -> Result<Value, String> {
    let (kind, node) = only_field(m)?;
    let as_msg = || match node {
        Node::Message(inner) => Ok(inner),
        _ => Err(format!("{kind} is not a message")),
    };
    Ok(match kind {
        "null_value" => Value::Null,
        "bool_value" => Value::Bool(matches!(node, Node::Ident(s) if s == "true")),
        "int64_value" => {
            Value::Int(i64::try_from(int_of(node)?).map_err(|_| "int64 out of range")?)
        }
        "uint64_value" => {
            Value::Uint(u64::try_from(int_of(node)?).map_err(|_| "uint64 out of range")?)
        }
        "double_value" => Value::Double(parse_float(node).ok_or("bad double")?),
        "string_value" => Value::string(&text_of(node)?),
        "bytes_value" => match node {
            Node::Bytes(b) => Value::Bytes(Arc::from(b.as_slice())),
            _ => return Err("bytes_value is not a string literal".into()),
        },
        "list_value" => {
            let items = as_msg()?
                .messages("values")
                .map(value_of)
                .collect::<Result<Vec<_>, _>>()?;
            Value::List(items.into())
        }
        "map_value" => {
            let mut entries = Vec::new();
            for e in as_msg()?.messages("entries") {
                let key = value_of(e.message("key").ok_or("map entry without key")?)?;
                let value = value_of(e.message("value").ok_or("map entry without value")?)?;
                entries.push((key, value));
            }
            Value::Map(Arc::new(Map::from_entries(entries)))
        }
        "type_value" => Value::Type(type_named(&text_of(node)?)?),
        "object_value" => object_value(as_msg()?)?,
        other => return Err(format!("unsupported value kind {other}")),
    })
}

/// `object_value { [type.googleapis.com/google.protobuf.Duration] { seconds: 1 nanos: 2 } }`:
/// only Timestamp and Duration are in our subset.
fn object_value(m: &Message) -> Result<Value, String> {
    let (url, node) = only_field(m)?;
    let Node::Message(fields) = node else {
        return Err("object_value without message".into());
    };
    let seconds = fields.get("seconds").map(int_of).transpose()?.unwrap_or(0);
    let nanos = fields.get("nanos").map(int_of).transpose()?.unwrap_or(0);
    let total = seconds * 1_000_000_000 + nanos;
    match url.rsplit('/').next() {
        Some("google.protobuf.Duration") => Duration::from_nanos(total)
            .map(Value::Duration)
            .map_err(|e| e.to_string()),
        Some("google.protobuf.Timestamp") => Timestamp::from_nanos(total)
            .map(Value::Timestamp)
            .map_err(|e| e.to_string()),
        _ => Err(format!("unsupported object_value {url}")),
    }
}

/// A type value by its CEL name.
fn type_named(name: &str) -> Result<Type, String> {
    Type::from_name(name).ok_or_else(|| format!("unsupported type value {name}"))
}

/// A `cel.expr.Type` message to a type.
fn type_of(m: &Message) -> Result<Type, String> {
    let (kind, node) = only_field(m)?;
    let inner = |name: &str| match node {
        Node::Message(inner) => type_of(
            inner
                .message(name)
                .ok_or(format!("{kind} without {name}"))?,
        ),
        _ => Err(format!("{kind} is not a message")),
    };
    let ident = || match node {
        Node::Ident(s) => Ok(s.as_str()),
        _ => Err(format!("{kind} is not an enum value")),
    };
    Ok(match kind {
        "dyn" => Type::Dyn,
        "null" => Type::Null,
        "primitive" => match ident()? {
            "BOOL" => Type::Bool,
            "INT64" => Type::Int,
            "UINT64" => Type::Uint,
            "DOUBLE" => Type::Double,
            "STRING" => Type::String,
            "BYTES" => Type::Bytes,
            other => return Err(format!("unsupported primitive {other}")),
        },
        "well_known" => match ident()? {
            "TIMESTAMP" => Type::Timestamp,
            "DURATION" => Type::Duration,
            other => return Err(format!("unsupported well-known type {other}")),
        },
        "message_type" => match text_of(node)?.as_str() {
            "google.protobuf.Timestamp" => Type::Timestamp,
            "google.protobuf.Duration" => Type::Duration,
            other => return Err(format!("unsupported message type {other}")),
        },
        "list_type" => Type::list(inner("elem_type")?),
        "map_type" => Type::map(inner("key_type")?, inner("value_type")?),
        other => return Err(format!("unsupported type kind {other}")),
    })
}

/// The environment and bindings of a test: `type_env` idents first, then bindings not declared
/// there as `dyn`; each slot holds its binding or an "unbound" error.
fn setup_of(test: &Message) -> Result<Setup, String> {
    let mut decls = Vec::new();
    for d in test.messages("type_env") {
        let name = d.text("name").ok_or("type_env without name")?;
        let ident = d
            .message("ident")
            .ok_or_else(|| format!("type_env {name}: only idents are supported"))?;
        let ty = type_of(ident.message("type").ok_or("ident without type")?)?;
        decls.push((name, ty));
    }
    let mut bound = BTreeMap::new();
    for b in test.messages("bindings") {
        let name = b.text("key").ok_or("binding without key")?;
        let expr_value = b.message("value").ok_or("binding without value")?;
        let value = value_of(
            expr_value
                .message("value")
                .ok_or("binding is not a plain value")?,
        )?;
        if !decls.iter().any(|(n, _)| *n == name) {
            decls.push((name.clone(), Type::Dyn));
        }
        bound.insert(name, value);
    }
    let values = decls
        .iter()
        .map(|(name, _)| {
            bound.get(name).cloned().ok_or_else(|| {
                sentinel::cel::value::EvalError::no_such_key(format!("unbound variable {name}"))
            })
        })
        .collect();
    Ok(Setup {
        decls,
        values,
        expect: expect_of(test)?,
    })
}

fn expect_of(test: &Message) -> Result<Expect, String> {
    if let Some(v) = test.message("value") {
        return Ok(Expect::Value(value_of(v)?));
    }
    if let Some(e) = test.message("eval_error") {
        let messages: Vec<String> = e
            .messages("errors")
            .filter_map(|m| m.text("message"))
            .collect();
        return Ok(Expect::Error(messages.join("; ")));
    }
    if test.get("any_eval_errors").is_some() {
        return Ok(Expect::Error("any error".into()));
    }
    if let Some(t) = test.message("typed_result") {
        let value = value_of(t.message("result").ok_or("typed_result without result")?)?;
        let ty = type_of(
            t.message("deduced_type")
                .ok_or("typed_result without deduced_type")?,
        )?;
        return Ok(Expect::Typed(value, ty));
    }
    for unsupported in ["unknown", "any_unknowns"] {
        if test.get(unsupported).is_some() {
            return Err(format!("{unsupported} results are outside our subset"));
        }
    }
    Ok(Expect::Value(Value::Bool(true)))
}

/// Every case of one file, in file order.
fn cases_of(file: &str, root: &Message) -> Vec<Case> {
    let mut cases = Vec::new();
    for section in root.messages("section") {
        let section_name = section.text("name").unwrap_or_default();
        for test in section.messages("test") {
            let name = test.text("name").unwrap_or_default();
            cases.push(Case {
                id: format!("{file}/{section_name}/{name}"),
                expr: test.text("expr").unwrap_or_default(),
                disable_check: test.flag("disable_check"),
                setup: setup_of(test),
            });
        }
    }
    cases
}

// ---------------------------------------------------------------------------------------------
// Running and comparing
// ---------------------------------------------------------------------------------------------

/// The name `type()` gives a type: containers by their kind only.
fn type_name(t: &Type) -> String {
    match t {
        Type::List(_) => "list".into(),
        Type::Map(..) => "map".into(),
        other => other.to_string(),
    }
}

/// Whether `got` is the expected value: CEL equality plus the same runtime type, all the way
/// down; NaN equals NaN here; type values compare by name.
fn same(expected: &Value, got: &Value) -> bool {
    match (expected, got) {
        (Value::Double(a), Value::Double(b)) => a == b || (a.is_nan() && b.is_nan()),
        (Value::Type(a), Value::Type(b)) => type_name(a) == type_name(b),
        (Value::List(a), Value::List(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same(x, y))
        }
        (Value::Map(a), Value::Map(b)) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| {
                    b.iter().any(|(k2, v2)| {
                        k.type_name() == k2.type_name() && k.equals(k2) && same(v, v2)
                    })
                })
        }
        _ => expected.type_name() == got.type_name() && expected.equals(got),
    }
}

/// A value written as CEL source, for failure messages.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => format!("{u}u"),
        Value::Double(d) => format!("{d:?}"),
        Value::String(s) => format!("{:?}", &**s),
        Value::Bytes(b) => format!("b{:?}", String::from_utf8_lossy(b)),
        Value::Timestamp(t) => format!("timestamp({:?})", format_timestamp(*t)),
        Value::Duration(d) => format!("duration({:?})", format_duration(*d)),
        Value::List(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(m) => {
            let entries: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", show(k), show(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Type(t) => format!("type({})", type_name(t)),
        other => format!("{other:?}"),
    }
}

fn show_expect(e: &Expect) -> String {
    match e {
        Expect::Value(v) => show(v),
        Expect::Error(msg) => format!("error ({msg})"),
        Expect::Typed(v, t) => format!("{} of type {t}", show(v)),
    }
}

fn run(case: &Case) -> Outcome {
    let setup = match &case.setup {
        Ok(s) => s,
        Err(why) => return Outcome::Fail(format!("outside our subset: {why}")),
    };
    let expects_error = matches!(setup.expect, Expect::Error(_));
    let rejected = |stage: &str, diags: Vec<sentinel::cel::diag::Diagnostic>| {
        if expects_error {
            return Outcome::Pass { statically: true };
        }
        let first = diags.first().map_or(String::new(), |d| d.message.clone());
        let note = if stage == "check" && case.disable_check {
            " (test disables checking)"
        } else {
            ""
        };
        Outcome::Fail(format!("{stage} error{note}: {first}"))
    };
    let ast = match parse(&case.expr) {
        Ok(ast) => ast,
        Err(diags) => return rejected("parse", diags),
    };
    let texpr = match check(&ast, &Env::with_slots(&setup.decls)) {
        Ok(t) => t,
        Err(diags) => return rejected("check", diags),
    };
    let act = Activation {
        slots: &setup.values,
        ..Default::default()
    };
    let got = eval(&texpr, &act);
    // Every case also runs through the JIT, which must agree with the interpreter exactly.
    let native = sentinel::cel::jit::JitExpr::compile(&texpr, &Default::default())
        .map(|j| j.eval(&act, &mut sentinel::cel::jit::Scratch::default()));
    match native {
        Ok(n) if format!("{n:?}") == format!("{got:?}") => {}
        other => return Outcome::Fail(format!("jit disagrees: interp {got:?}, jit {other:?}")),
    }
    let ok = match (&setup.expect, &got) {
        (Expect::Error(_), Err(_)) => true,
        (Expect::Value(want), Ok(v)) => same(want, v),
        (Expect::Typed(want, ty), Ok(v)) => same(want, v) && texpr.ty == *ty,
        _ => false,
    };
    if ok {
        return Outcome::Pass { statically: false };
    }
    let got_text = match (&got, &setup.expect) {
        (Ok(v), Expect::Typed(..)) => format!("{} of type {}", show(v), texpr.ty),
        (Ok(v), _) => show(v),
        (Err(e), _) => format!("error: {e}"),
    };
    Outcome::Fail(format!(
        "expected {}, got {got_text}",
        show_expect(&setup.expect)
    ))
}

/// Runs one case, turning a panic in our implementation into a failure.
fn run_guarded(case: &Case) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| run(case))) {
        Ok(outcome) => outcome,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Outcome::Fail(format!("panicked: {msg}"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The known-failures list
// ---------------------------------------------------------------------------------------------

/// A short reason for a newly listed failure, from the first line of what went wrong.
fn default_reason(failure: &str) -> String {
    let one_line = failure.lines().next().unwrap_or("");
    let mut reason: String = one_line.chars().take(90).collect();
    if reason.len() < one_line.len() {
        reason.push('…');
    }
    reason
}

const HEADER: &str = "\
# cel-spec conformance cases we do not pass, one `file/section/test` a line with the reason.
# This list may only shrink: tests/compiler/conformance.rs fails when a listed case passes or does
# not exist. Regenerate with UPDATE_KNOWN_FAILURES=1 cargo test --test compiler conformance
# (reasons of existing lines are kept).
";

fn known_failures() -> KnownList {
    KnownList {
        path: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/conformance/known_failures.txt"
        )),
        header: HEADER,
        default_reason,
        failed: "FAIL",
        passed: ("PASS", "now passes, remove it from the list"),
    }
}

/// Per-file tallies.
#[derive(Default)]
struct Tally {
    total: usize,
    passed: usize,
    statically: usize,
}

fn run_all() -> (
    BTreeMap<String, Tally>,
    BTreeMap<String, String>,
    BTreeSet<String>,
) {
    let dir = conformance_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read conformance dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "textproto"))
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "no .textproto files in {}",
        dir.display()
    );
    let mut tallies = BTreeMap::new();
    let mut failures = BTreeMap::new();
    let mut names = BTreeSet::new();
    for path in paths {
        let file = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_string();
        let src = std::fs::read_to_string(&path).expect("read textproto");
        let root = textproto::read(&src).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let tally: &mut Tally = tallies.entry(file.clone()).or_default();
        for case in cases_of(&file, &root) {
            assert!(
                names.insert(case.id.clone()),
                "duplicate case name {}",
                case.id
            );
            tally.total += 1;
            match run_guarded(&case) {
                Outcome::Pass { statically } => {
                    tally.passed += 1;
                    tally.statically += usize::from(statically);
                }
                Outcome::Fail(why) => {
                    failures.insert(case.id.clone(), format!("{why}\n    expr: {}", case.expr));
                }
            }
        }
    }
    (tallies, failures, names)
}

#[test]
fn conformance() {
    // A large stack: deeply nested cases must hit our parser's depth limit, not the test
    // thread's small default stack.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(run_all)
        .expect("spawn");
    let (tallies, failures, names) = worker.join().expect("conformance run panicked");
    let (mut total, mut passed) = (0, 0);
    for (file, t) in &tallies {
        let note = if t.statically > 0 {
            format!(" ({} by static rejection)", t.statically)
        } else {
            String::new()
        };
        println!("{file}: {}/{} passed{note}", t.passed, t.total);
        total += t.total;
        passed += t.passed;
    }
    let summary = format!(
        "conformance: {passed}/{total} passed, {} failed",
        total - passed
    );
    known_failures().enforce(&failures, &names, &summary);
}

/// The comparison can fail: a wrong expected value, a wrong type, a missing error.
#[test]
fn comparison_detects_mismatches() {
    assert!(!same(&Value::Int(1), &Value::Uint(1)));
    assert!(!same(&Value::Int(1), &Value::Double(1.0)));
    assert!(!same(
        &Value::List(vec![Value::Int(1)].into()),
        &Value::List(vec![Value::Double(1.0)].into())
    ));
    assert!(same(&Value::Double(f64::NAN), &Value::Double(f64::NAN)));
    assert!(same(
        &Value::Type(Type::list(Type::Int)),
        &Value::Type(Type::list(Type::Dyn))
    ));
    let case = |expect: &str| {
        let src = format!("section {{ name: 's' test {{ name: 't' expr: '1 + 1' {expect} }} }}");
        cases_of("f", &textproto::read(&src).unwrap())
            .pop()
            .unwrap()
    };
    // The pipeline itself may be incomplete in a branch: only a passing case proves the runner
    // agrees, so compare the two outcomes relative to each other.
    let right = run_guarded(&case("value: { int64_value: 2 }"));
    for wrong in [
        "value: { int64_value: 3 }",
        "value: { uint64_value: 2 }",
        "eval_error: {}",
    ] {
        let outcome = run_guarded(&case(wrong));
        if matches!(right, Outcome::Pass { .. }) {
            assert!(
                matches!(outcome, Outcome::Fail(_)),
                "{wrong} should not pass"
            );
        }
    }
}

#[test]
fn expectations_convert() {
    let src = r#"section { name: "s"
        test { name: "a" expr: "x" type_env { name: "x" ident { type { map_type { key_type { primitive: STRING } value_type { primitive: INT64 } } } } }
               bindings { key: "x" value { value { map_value { entries { key { string_value: "k" } value { int64_value: -1 } } } } } }
               value { object_value { [type.googleapis.com/google.protobuf.Duration] { seconds: 1 nanos: 5 } } } }
        test { name: "b" expr: "y" eval_error { errors { message: "boom" } } }
        test { name: "c" expr: "z" } }"#;
    let cases = cases_of("f", &textproto::read(src).unwrap());
    let a = cases[0].setup.as_ref().unwrap();
    assert_eq!(
        a.decls,
        vec![("x".to_string(), Type::map(Type::String, Type::Int))]
    );
    assert!(matches!(&a.values[0], Ok(Value::Map(m)) if m.len() == 1));
    assert!(matches!(&a.expect, Expect::Value(Value::Duration(d)) if d.nanos() == 1_000_000_005));
    let b = cases[1].setup.as_ref().unwrap();
    assert!(matches!(&b.expect, Expect::Error(m) if m == "boom"));
    assert!(matches!(
        cases[2].setup.as_ref().unwrap().expect,
        Expect::Value(Value::Bool(true))
    ));
}
