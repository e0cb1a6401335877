//! Fuzz target: rule text and resource JSON through the checker, then the interpreter and the
//! JIT, which must agree exactly (the decision, every param's value, every error's kind and
//! message), as `tests/differential.rs` compares them.
//!
//! Input: the bytes before the first NUL are the rule text, one param per line (`p0`, `p1`, ...;
//! each sees the earlier ones), the bytes after it the resource's JSON text. The result is `true`,
//! so every param is evaluated. Rules that do not compile are fine (the checker must not panic);
//! rules that compile must decide the same on both engines.
//!
//! The load-time analysis of constant calls that always fail (`cel::failing`) must be sound:
//! each line is also checked alone without load-time errors, and where the analysis says its
//! value is an error for every resource, evaluating it on this resource must give an error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::cel::failing::failing_calls;
use sentinel::cel::host::Resource;
use sentinel::cel::interp::{Activation, eval};
use sentinel::cel::time::{Timestamp, parse_timestamp};
use sentinel::cel::{Env, check, parse};
use sentinel::rules::decision::{Compiled, DecisionSource, Engine, ParamSource, Program, Scratch};
use std::sync::{Arc, OnceLock};

/// At most this many params per input, so one input stays one small program.
const MAX_PARAMS: usize = 8;

fn now() -> Timestamp {
    static NOW: OnceLock<Timestamp> = OnceLock::new();
    *NOW.get_or_init(|| parse_timestamp("2025-10-21T12:00:00Z").expect("valid now"))
}

fuzz_target!(|data: &[u8]| {
    let (rule, json) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let (Ok(rule), Ok(json)) = (std::str::from_utf8(rule), std::str::from_utf8(json)) else {
        return;
    };
    let params: Vec<ParamSource> = rule
        .split('\n')
        .take(MAX_PARAMS)
        .enumerate()
        .map(|(i, expr)| ParamSource {
            name: format!("p{i}"),
            expr: expr.to_string(),
        })
        .collect();
    let resource = Arc::new(Resource::from_text(json));
    for p in &params {
        failing_analysis_is_sound(&p.expr, &resource);
    }
    let src = DecisionSource {
        params,
        result: "true".into(),
    };
    let Ok(program) = Program::compile(&src) else {
        return;
    };
    let interp = Compiled::new(program.clone(), Engine::Interp).expect("interp never fails");
    let native = Compiled::new(program, Engine::Jit).expect("jit compiles what checks");
    let (mut sa, mut sb) = (Scratch::default(), Scratch::default());
    let da = interp.explain(&resource, now(), &mut sa);
    let db = native.explain(&resource, now(), &mut sb);
    let (ta, tb) = (
        format!("{da:?}\n{:?}", sa.slots),
        format!("{db:?}\n{:?}", sb.slots),
    );
    assert_eq!(
        ta, tb,
        "engines disagree on rule {rule:?} and resource {json:?}"
    );
    let dc = native.decide(&resource, now(), &mut sb);
    assert_eq!(da, dc, "decide() differs from evaluate()");
});

/// Where `cel::failing` finds a call that makes `expr`'s value an error for every resource, the
/// interpreter gives an error for this one too.
fn failing_analysis_is_sound(expr: &str, resource: &Arc<Resource>) {
    let Ok(ast) = parse(expr) else {
        return;
    };
    // No earlier params and no load-time errors: the failing calls stay in the tree.
    let Ok(typed) = check(&ast, &Env::decision(&[])) else {
        return;
    };
    if !failing_calls(&typed).iter().any(|f| f.always) {
        return;
    }
    let act = Activation {
        resource: Some(resource),
        now: Some(now()),
        reason: None,
        slots: &[],
    };
    let value = eval(&typed, &act);
    assert!(
        value.is_err(),
        "{expr:?} is called an error for every resource, but is {value:?}"
    );
}
