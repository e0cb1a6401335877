//! Decision speed on the same realistic fleet: our interpreter, our JIT (on resources prepared
//! at decode, and including the preparation), and the crates.io `cel` crate (cel-rust's
//! interpreter) with `condition()` registered. Each iteration decides one resource, so criterion
//! reports time per decision. Kept short to run on 2 cores: `cargo bench --bench decision`.

use criterion::{Criterion, criterion_group};
use sentinel::cel::host::{CONDITION_FIELDS, Resource};
use sentinel::cel::jit;
use sentinel::cel::time::parse_timestamp;
use sentinel::resource::corpus::fleet;
use sentinel::rules::decision::{Compiled, DecisionSource, Engine, Program, Scratch};
use serde_json::Value as Json;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const FLEET: usize = 1000;

/// The default rules run by the `cel` crate: params evaluated in order, each bound as a
/// variable for the later ones, then the result.
struct CelRules {
    params: Vec<(String, cel::Program)>,
    result: cel::Program,
    context: cel::Context<'static, 'static>,
}

/// A resource as the `cel` crate sees it, with its conditions by type for `condition()`.
struct CelResource {
    value: cel::Value,
    conditions: Arc<HashMap<String, cel::Value>>,
}

thread_local! {
    /// The conditions of the resource being decided, read by the registered `condition()`.
    static CONDITIONS: RefCell<Arc<HashMap<String, cel::Value>>> = RefCell::default();
}

fn cel_value(json: &Json) -> cel::Value {
    match json {
        Json::Null => cel::Value::Null,
        Json::Bool(b) => cel::Value::Bool(*b),
        Json::Number(n) => n.as_i64().map_or_else(
            || cel::Value::Float(n.as_f64().unwrap_or(0.0)),
            cel::Value::Int,
        ),
        Json::String(s) => cel::Value::String(Arc::new(s.clone())),
        Json::Array(items) => cel::Value::List(Arc::new(items.iter().map(cel_value).collect())),
        Json::Object(obj) => {
            let map: HashMap<String, cel::Value> =
                obj.iter().map(|(k, v)| (k.clone(), cel_value(v))).collect();
            cel::Value::from(map)
        }
    }
}

fn zero_condition() -> cel::Value {
    // Every field is an empty string but `observed_generation`, which is 0.
    let mut m: HashMap<String, cel::Value> = CONDITION_FIELDS
        .iter()
        .map(|k| (k.to_string(), cel::Value::String(Arc::new(String::new()))))
        .collect();
    m.insert("observed_generation".into(), cel::Value::Int(0));
    cel::Value::from(m)
}

fn cel_resource(json: &Json) -> CelResource {
    let mut conditions = HashMap::new();
    if let Some(Json::Array(items)) = json.pointer("/status/conditions") {
        for c in items {
            if let Some(Json::String(ty)) = c.get("type") {
                conditions.insert(ty.clone(), cel_value(c));
            }
        }
    }
    CelResource {
        value: cel_value(json),
        conditions: Arc::new(conditions),
    }
}

fn cel_rules() -> CelRules {
    let src = DecisionSource::default_rules();
    let compile = |s: &str| cel::Program::compile(s).expect("the cel crate parses the rules");
    let mut context = cel::Context::default();
    context
        .add_function("condition", |name: Arc<String>| -> cel::Value {
            CONDITIONS
                .with(|c| c.borrow().get(name.as_str()).cloned())
                .unwrap_or_else(zero_condition)
        })
        .expect("condition() registers");
    CelRules {
        params: src
            .params
            .iter()
            .map(|p| (p.name.clone(), compile(&p.expr)))
            .collect(),
        result: compile(&src.result),
        context,
    }
}

/// Decides one resource with the `cel` crate; true = publish.
fn cel_decide(rules: &CelRules, r: &CelResource, now: &cel::Value) -> bool {
    CONDITIONS.with(|c| *c.borrow_mut() = r.conditions.clone());
    let mut ctx = rules.context.new_inner_scope();
    ctx.add_variable_from_value("resource", r.value.clone());
    ctx.add_variable_from_value("now", now.clone());
    for (name, program) in &rules.params {
        match program.execute(&ctx) {
            Ok(v) => ctx.add_variable_from_value(name.as_str(), v),
            Err(_) => return false,
        }
    }
    matches!(rules.result.execute(&ctx), Ok(cel::Value::Bool(true)))
}

fn decision(c: &mut Criterion) {
    let now = parse_timestamp("2025-10-21T12:00:00Z").expect("valid now");
    let jsons = fleet(FLEET, now, 42);
    let resources: Vec<Arc<Resource>> = jsons
        .iter()
        .map(|j| Arc::new(Resource::from_json(j.clone())))
        .collect();
    let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
    let interp = Compiled::new(program.clone(), Engine::Interp).expect("interp");
    let compiled = Compiled::new(program, Engine::Jit).expect("jit compiles");
    let native = compiled.jit().expect("native program");
    let prepared: Vec<jit::Prepared> = resources.iter().map(|r| native.prepared(r)).collect();
    let rules = cel_rules();
    let cel_fleet: Vec<CelResource> = jsons.iter().map(cel_resource).collect();
    let cel_now = cel::Value::Timestamp(
        chrono::DateTime::parse_from_rfc3339("2025-10-21T12:00:00Z").expect("valid now"),
    );
    // The three engines do the same work: they agree on every decision.
    let mut scratch = Scratch::default();
    for (r, cr) in resources.iter().zip(&cel_fleet) {
        let ours = interp.decide(r, now, &mut scratch).publish;
        assert_eq!(ours, compiled.decide(r, now, &mut scratch).publish);
        assert_eq!(
            ours,
            cel_decide(&rules, cr, &cel_now),
            "cel crate disagrees on {:?}",
            r.id()
        );
    }

    let mut group = c.benchmark_group("decision");
    let mut i = 0usize;
    group.bench_function("interp", |b| {
        let mut scratch = Scratch::default();
        b.iter(|| {
            i = (i + 1) % FLEET;
            black_box(interp.decide(&resources[i], now, &mut scratch).publish)
        })
    });
    group.bench_function("jit", |b| {
        let mut scratch = jit::Scratch::default();
        b.iter(|| {
            i = (i + 1) % FLEET;
            let outcome = native.decide(
                &prepared[i],
                now,
                &mut scratch,
                sentinel::cel::jit::Params::Drop,
            );
            black_box(compiled.conclude_outcome(outcome).publish)
        })
    });
    group.bench_function("jit_one_hot_resource", |b| {
        let mut scratch = jit::Scratch::default();
        let hot = &prepared[1];
        b.iter(|| {
            let outcome = native.decide(
                black_box(hot),
                now,
                &mut scratch,
                sentinel::cel::jit::Params::Drop,
            );
            black_box(compiled.conclude_outcome(outcome).publish)
        })
    });
    group.bench_function("jit_with_prepare", |b| {
        let mut scratch = Scratch::default();
        b.iter(|| {
            i = (i + 1) % FLEET;
            black_box(compiled.decide(&resources[i], now, &mut scratch).publish)
        })
    });
    group.bench_function("cel_crate", |b| {
        b.iter(|| {
            i = (i + 1) % FLEET;
            black_box(cel_decide(&rules, &cel_fleet[i], &cel_now))
        })
    });
    group.finish();
}

/// `DECISION_PASSES=<decide|prepared>:<mix|settled>:<n>`: instead of timing, decides every
/// resource of a fleet `n` times and exits, for counting instructions with callgrind: the
/// difference of two runs with different `n`, divided by the fleet's size times their difference
/// in `n`, is the count per decision. `decide` is the daemon's path ([`Compiled::decide`]:
/// preparing the row, the native code and the Rust around it); `prepared` decides on rows
/// prepared before the passes (the native code and the Rust around it only). `mix` is the
/// generated fleet of the other benches; `settled` a fleet of realistic clusters all reconciled
/// at `now`, as a steady-state daemon sees them (every decision a skip, every param evaluated).
/// Both are decoded as `serve` decodes a page: under the rules' projection.
fn passes(spec: &str) {
    let usage = "DECISION_PASSES=<decide|prepared>:<mix|settled>:<n>";
    let mut parts = spec.split(':');
    let (what, which, n) = match (parts.next(), parts.next(), parts.next()) {
        (Some(w), Some(f), Some(n)) => (w, f, n.parse::<usize>().expect(usage)),
        _ => panic!("{usage}"),
    };
    let now = parse_timestamp("2026-01-01T00:00:00Z").expect("valid time");
    let items: Vec<Json> = match which {
        "mix" => fleet(FLEET, now, 42),
        "settled" => {
            let at = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
                .expect("valid time")
                .to_utc();
            // Every third realistic cluster is due; the others were reconciled at `now`.
            (0..FLEET as u64 * 3 / 2)
                .filter(|i| i % 3 != 0)
                .map(|i| sentinel::sim::api::realistic_resource(i, at))
                .collect()
        }
        _ => panic!("{usage}"),
    };
    let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
    let projection = Arc::new(program.projection());
    let body = serde_json::to_vec(&serde_json::json!({"items": items, "total": items.len()}))
        .expect("serializable");
    let page = sentinel::api::decode_page_with(&body, &projection).expect("decodes");
    let resources: Vec<Arc<Resource>> = page.items.into_iter().map(Arc::new).collect();
    let compiled = Compiled::new(program, Engine::Jit).expect("jit compiles");
    let native = compiled.jit().expect("native program");
    let mut published = 0;
    match what {
        "decide" => {
            let mut scratch = Scratch::default();
            for _ in 0..n {
                for r in &resources {
                    published += usize::from(compiled.decide(r, now, &mut scratch).publish);
                }
            }
        }
        "prepared" => {
            let prepared: Vec<jit::Prepared> =
                resources.iter().map(|r| native.prepared(r)).collect();
            let mut scratch = jit::Scratch::default();
            for _ in 0..n {
                for p in &prepared {
                    let outcome = native.decide(p, now, &mut scratch, jit::Params::Drop);
                    published += usize::from(compiled.conclude_outcome(outcome).publish);
                }
            }
        }
        _ => panic!("{usage}"),
    }
    println!(
        "{what} {which} x{n}: {} resources, {published} published",
        resources.len()
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = decision
}

fn main() {
    match std::env::var("DECISION_PASSES") {
        Ok(spec) => passes(&spec),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
