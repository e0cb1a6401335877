//! Engine tables: the expected answers of the time and string functions, as data
//! (`tests/data/eval/*.txt`, the format documented at the top of each file), run through **both**
//! engines, the reference interpreter and the JIT, which must each give the expected value.
//!
//! Every literal of a case's expression is lifted into a variable before checking (`"abc".size()`
//! becomes `lit0.size()` with `lit0 = "abc"`), so the checker folds nothing and both engines
//! compute the whole expression at run time. A section (`## <name>`) is one test, named
//! `<file>_<name>`; `every_section_is_run` fails on a section no test runs, and
//! `comparison_catches_a_wrong_answer` shows that a wrong expectation fails.

use sentinel::cel::ast::{Expr, ExprKind, Literal};
use sentinel::cel::check::Env;
use sentinel::cel::interp::{self, Activation};
use sentinel::cel::jit::{self, JitExpr};
use sentinel::cel::types::Type;
use sentinel::cel::value::{EvalResult, Value};
use sentinel::cel::{check, parse};
use std::sync::Arc;

/// The sections of each file, in file order: one test each.
const SECTIONS: &[(&str, &[&str])] = &[
    (
        "time",
        &[
            "timestamps",
            "durations",
            "arithmetic",
            "negation",
            "timestamp_parts",
            "time_zones",
            "duration_parts",
        ],
    ),
    (
        "strings",
        &[
            "char_at",
            "index_of",
            "last_index_of",
            "ascii_case",
            "replace",
            "split",
            "substring",
            "trim",
            "join",
            "quote",
            "reverse",
            "format",
            "format_times",
            "format_errors",
            "conversion_errors",
        ],
    ),
];

/// One line of a table.
struct Case {
    line: usize,
    source: String,
    expected: String,
}

/// What a case must give.
enum Expected {
    Value(Value),
    Error(String, Option<String>),
}

fn read(file: &str) -> String {
    let path = format!("{}/tests/data/eval/{file}.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The sections of a table file, in order, with their cases.
fn sections(text: &str) -> Vec<(String, Vec<Case>)> {
    let mut out: Vec<(String, Vec<Case>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(name) = line.strip_prefix("## ") {
            out.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (source, rest) = line
            .split_once("  =>  ")
            .unwrap_or_else(|| panic!("line {}: no `  =>  ` in {line:?}", i + 1));
        let expected = rest.split_once("  # ").map_or(rest, |(e, _)| e);
        let (_, cases) = out
            .last_mut()
            .unwrap_or_else(|| panic!("line {}: a case before the first `## ` section", i + 1));
        cases.push(Case {
            line: i + 1,
            source: source.trim().to_string(),
            expected: expected.trim().to_string(),
        });
    }
    out
}

/// The value and type of a literal lifted into a variable (`null` stays a literal).
fn literal_value(lit: &Literal) -> Option<(Type, Value)> {
    Some(match lit {
        Literal::Null => return None,
        Literal::Bool(b) => (Type::Bool, Value::Bool(*b)),
        Literal::Int(i) => (Type::Int, Value::Int(*i)),
        Literal::Uint(u) => (Type::Uint, Value::Uint(*u)),
        Literal::Double(d) => (Type::Double, Value::Double(*d)),
        Literal::String(s) => (Type::String, Value::string(s)),
        Literal::Bytes(b) => (Type::Bytes, Value::Bytes(Arc::from(b.as_slice()))),
    })
}

/// Replaces every literal of `e` by a fresh variable, recording its declaration and value.
fn lift(e: &mut Expr, decls: &mut Vec<(String, Type)>, values: &mut Vec<EvalResult>) {
    let mut go = |e: &mut Expr| lift(e, decls, values);
    match &mut e.kind {
        ExprKind::Literal(lit) => {
            if let Some((ty, value)) = literal_value(lit) {
                let name = format!("lit{}", decls.len());
                decls.push((name.clone(), ty));
                values.push(Ok(value));
                e.kind = ExprKind::Ident(name);
            }
        }
        ExprKind::Ident(_) => {}
        ExprKind::Unary(_, a) | ExprKind::Member(a, _) | ExprKind::Has(a, _) => go(a),
        ExprKind::Binary(_, a, b) | ExprKind::Index(a, b) => {
            go(a);
            go(b);
        }
        ExprKind::Ternary(c, a, b) => {
            go(c);
            go(a);
            go(b);
        }
        ExprKind::Call { target, args, .. } => {
            if let Some(t) = target {
                go(t);
            }
            args.iter_mut().for_each(go);
        }
        ExprKind::List(items) => items.iter_mut().for_each(go),
        ExprKind::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            go(k);
            go(v);
        }),
        ExprKind::Comprehension(c) => {
            go(&mut c.range);
            if let Some(f) = &mut c.filter {
                go(f);
            }
            go(&mut c.body);
        }
    }
}

fn expected(text: &str) -> Result<Expected, String> {
    if let Some(rest) = text.strip_prefix("error ") {
        let (kind, message) = rest
            .split_once(": ")
            .map_or((rest, None), |(k, m)| (k, Some(m.to_string())));
        return Ok(Expected::Error(kind.to_string(), message));
    }
    let ast = parse(text).map_err(|d| format!("expected value {text:?}: {d:?}"))?;
    let typed = check(&ast, &Env::default()).map_err(|d| format!("expected {text:?}: {d:?}"))?;
    interp::eval_constant(&typed)
        .map(Expected::Value)
        .map_err(|e| format!("expected {text:?}: {e}"))
}

fn matches(want: &Expected, got: &EvalResult) -> bool {
    match (want, got) {
        (Expected::Value(w), Ok(g)) => w.type_name() == g.type_name() && w.equals(g),
        (Expected::Error(kind, message), Err(e)) => {
            format!("{:?}", e.kind) == *kind && message.as_ref().is_none_or(|m| *m == e.message)
        }
        _ => false,
    }
}

/// Runs one case through both engines: a description of each disagreement with the table.
fn run(case: &Case, scratch: &mut jit::Scratch) -> Vec<String> {
    let at = format!("line {}: {}", case.line, case.source);
    let want = match expected(&case.expected) {
        Ok(w) => w,
        Err(e) => return vec![format!("{at}: {e}")],
    };
    let mut ast = match parse(&case.source) {
        Ok(ast) => ast,
        Err(d) => return vec![format!("{at}: does not parse: {d:?}")],
    };
    let (mut decls, mut values) = (Vec::new(), Vec::new());
    lift(&mut ast, &mut decls, &mut values);
    let typed = match check(&ast, &Env::with_slots(&decls)) {
        Ok(t) => t,
        Err(d) => return vec![format!("{at}: does not check: {d:?}")],
    };
    let native = match JitExpr::compile(&typed, &jit::Options::default()) {
        Ok(n) => n,
        Err(e) => return vec![format!("{at}: the JIT does not compile it: {e}")],
    };
    let act = Activation {
        slots: &values,
        ..Activation::default()
    };
    [
        ("interpreter", interp::eval(&typed, &act)),
        ("jit", native.eval(&act, scratch)),
    ]
    .into_iter()
    .filter(|(_, got)| !matches(&want, got))
    .map(|(engine, got)| format!("{at}: {engine} gives {got:?}, the table {}", case.expected))
    .collect()
}

/// Runs section `name` of `file`, failing with every disagreement.
fn run_section(file: &str, name: &str) {
    let text = read(file);
    let all = sections(&text);
    let (_, cases) = all
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{file}.txt has no section {name:?}"));
    assert!(!cases.is_empty(), "{file}.txt section {name:?} is empty");
    let mut scratch = jit::Scratch::default();
    let failures: Vec<String> = cases.iter().flat_map(|c| run(c, &mut scratch)).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases of {file}.txt/{name} fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

macro_rules! sections {
    ($file:literal: $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let test = stringify!($name);
                let section = &test[$file.len() + 1..];
                run_section($file, section);
            }
        )*
    };
}

sections!("time":
    time_timestamps,
    time_durations,
    time_arithmetic,
    time_negation,
    time_timestamp_parts,
    time_time_zones,
    time_duration_parts,
);

sections!("strings":
    strings_char_at,
    strings_index_of,
    strings_last_index_of,
    strings_ascii_case,
    strings_replace,
    strings_split,
    strings_substring,
    strings_trim,
    strings_join,
    strings_quote,
    strings_reverse,
    strings_format,
    strings_format_times,
    strings_format_errors,
    strings_conversion_errors,
);

#[test]
fn every_section_is_run() {
    for (file, names) in SECTIONS {
        let text = read(file);
        let found: Vec<String> = sections(&text).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            found, *names,
            "the sections of {file}.txt and the tests that run them"
        );
    }
}

#[test]
fn comparison_catches_a_wrong_answer() {
    let mut scratch = jit::Scratch::default();
    let case = |source: &str, expected: &str| Case {
        line: 0,
        source: source.into(),
        expected: expected.into(),
    };
    // Right answers pass ...
    for (source, expected) in [
        ("string(duration('90m'))", "\"5400s\""),
        (
            "'abc'.charAt(9)",
            "error IndexOutOfRange: index out of range: 9",
        ),
    ] {
        assert!(
            run(&case(source, expected), &mut scratch).is_empty(),
            "{source}"
        );
    }
    // ... and a wrong value, type, error kind or message fails in both engines.
    for (source, expected) in [
        ("string(duration('90m'))", "\"5401s\""),
        ("size('abc')", "3u"),
        ("'abc'.charAt(9)", "error InvalidArgument"),
        (
            "'abc'.charAt(9)",
            "error IndexOutOfRange: index out of range: 8",
        ),
        ("'abc'.charAt(1)", "error IndexOutOfRange"),
    ] {
        assert_eq!(
            run(&case(source, expected), &mut scratch).len(),
            2,
            "{source}"
        );
    }
}

#[test]
fn literals_are_lifted_out_of_reach_of_folding() {
    let mut ast =
        parse("[1, 'a', b'x', 2.5, true, 3u, null].size() + {'k': -4}.size()").expect("parses");
    let (mut decls, mut values) = (Vec::new(), Vec::new());
    lift(&mut ast, &mut decls, &mut values);
    let types: Vec<Type> = decls.into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        types,
        [
            Type::Int,
            Type::String,
            Type::Bytes,
            Type::Double,
            Type::Bool,
            Type::Uint,
            Type::String,
            Type::Int,
        ]
    );
    assert_eq!(values.len(), 8);
}
