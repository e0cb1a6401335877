//! `sentinel bench`: generates a realistic fleet (or reads one), checks that the interpreter and
//! the JIT agree on every decision and every param value, then times each engine over the fleet
//! and prints ns/decision (median of several passes), decisions/s, the speed-up and the compile
//! time of the config.
//!
//! Resources are decoded before timing (as the daemon decodes a page once); for the JIT they are
//! also prepared ([`JitProgram::prepare`], the once-per-resource part of decoding), and the cost
//! of preparing is reported separately. A disagreement is an error (exit 1).
//!
//! The daemon decides each page of 100 right after decoding it, so the fleet is timed the same
//! way: page by page, each page touched first (prepared for the JIT, decided once for the
//! interpreter) and then its decisions timed. One sweep over the whole prepared fleet is reported
//! too: beyond a few thousand resources its rows no longer fit in the caches, and that sweep
//! measures memory more than code.

use super::CmdError;
use crate::cel::host::Resource;
use crate::cel::jit::{self, JitProgram};
use crate::cel::time::{self, Timestamp};
use crate::resource::corpus::{STATES, fleet};
use crate::rules::decision::{Compiled, Decision, Engine, Program, Scratch};
use serde_json::{Value as Json, json};
use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Options of `sentinel bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Config file whose message_decision to time (default: the built-in default rules).
    #[arg(short, long)]
    pub config: Option<PathBuf>,
    /// The evaluation time, RFC 3339 (default: the current time).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Generate a fleet of N resources (default 100000).
    #[arg(long, value_name = "N", conflicts_with = "input")]
    pub resources: Option<usize>,
    /// Read the fleet from FILE instead (any input form `eval` takes; `-` for stdin).
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The engines to time, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "interp,jit")]
    pub engine: Vec<Engine>,
    /// Timed passes over the fleet per engine (the median is reported).
    #[arg(long, default_value_t = 7)]
    pub passes: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One engine's timing.
#[derive(Clone, Copy, Debug)]
struct Timing {
    ns_per_decision: f64,
    published: usize,
}

/// The page size the daemon decides in (the API's largest).
const PAGE: usize = 100;

/// Runs `pass` `passes` times and returns the median time per decision; `pass` returns the
/// number published and the nanoseconds to count (the timed parts of the pass).
fn time_timed_passes(n: usize, passes: usize, mut pass: impl FnMut() -> (usize, u128)) -> Timing {
    let mut times = Vec::with_capacity(passes);
    let mut published = 0;
    for _ in 0..passes.max(1) {
        let (p, nanos) = pass();
        published = black_box(p);
        times.push(nanos as f64 / n.max(1) as f64);
    }
    times.sort_by(f64::total_cmp);
    Timing {
        ns_per_decision: times[times.len() / 2],
        published,
    }
}

/// Times `decide` page by page: `touch` readies a page untimed, then its decisions are timed.
fn time_pages<T>(
    items: &mut [T],
    passes: usize,
    mut touch: impl FnMut(&mut [T]),
    mut decide: impl FnMut(&T) -> bool,
) -> Timing {
    let n = items.len();
    time_timed_passes(n, passes, || {
        let (mut published, mut nanos) = (0, 0);
        for page in items.chunks_mut(PAGE) {
            touch(page);
            let start = Instant::now();
            published += page.iter().filter(|item| decide(item)).count();
            nanos += start.elapsed().as_nanos();
        }
        (published, nanos)
    })
}

/// Runs `pass` `passes` times and returns the median time per decision.
fn time_passes(n: usize, passes: usize, mut pass: impl FnMut() -> usize) -> Timing {
    let mut times = Vec::with_capacity(passes);
    let mut published = 0;
    for _ in 0..passes.max(1) {
        let start = Instant::now();
        published = black_box(pass());
        times.push(start.elapsed().as_nanos() as f64 / n.max(1) as f64);
    }
    times.sort_by(f64::total_cmp);
    Timing {
        ns_per_decision: times[times.len() / 2],
        published,
    }
}

/// Compares both engines on every resource (decision and param values).
fn check_agreement(
    interp: &Compiled,
    native: &Compiled,
    fleet: &[Arc<Resource>],
    now: Timestamp,
) -> Result<usize, CmdError> {
    let (mut a, mut b) = (Scratch::default(), Scratch::default());
    let mut published = 0;
    for r in fleet {
        let da = interp.explain(r, now, &mut a);
        let db = native.explain(r, now, &mut b);
        let (sa, sb) = (format!("{:?}", a.slots), format!("{:?}", b.slots));
        if da != db || sa != sb {
            let id = r.json_field("id").unwrap_or(Json::Null);
            return Err(CmdError::Disagree(format!(
                "resource {id}: interp decided {da:?} with params {sa}, jit decided {db:?} with params {sb}"
            )));
        }
        published += usize::from(da.publish);
    }
    Ok(published)
}

fn load_fleet(args: &BenchArgs, now: Timestamp) -> Result<(Vec<Arc<Resource>>, String), CmdError> {
    let Some(path) = &args.input else {
        let n = args.resources.unwrap_or(100_000);
        let jsons = fleet(n, now, 42);
        let mix: Vec<String> = STATES
            .iter()
            .map(|(name, share)| format!("{share}% {name}"))
            .collect();
        let fleet = jsons
            .into_iter()
            .map(|j| Arc::new(Resource::from_json(j)))
            .collect();
        return Ok((fleet, format!("generated ({})", mix.join(", "))));
    };
    let mut fleet = Vec::new();
    let mut push = |r| {
        fleet.push(Arc::new(r));
        Ok(())
    };
    let origin = path.display().to_string();
    if path.as_os_str() == "-" {
        super::eval::for_each_resource(std::io::stdin().lock(), "<stdin>", &mut push)?;
    } else {
        let file = std::fs::File::open(path).map_err(|source| CmdError::Read {
            path: path.clone(),
            source,
        })?;
        super::eval::for_each_resource(std::io::BufReader::new(file), &origin, &mut push)?;
    }
    Ok((fleet, format!("read from {origin}")))
}

/// The measurements of one run.
struct Report {
    resources: usize,
    fleet: String,
    published: usize,
    compile: std::time::Duration,
    native: String,
    timings: Vec<(Engine, Timing)>,
    prepare_ns: f64,
    with_prepare_ns: f64,
    /// The JIT over the whole prepared fleet in one sweep, when timed.
    sweep_ns: Option<f64>,
}

fn measure(program: &Program, args: &BenchArgs, now: Timestamp) -> Result<Report, CmdError> {
    let (fleet, origin) = load_fleet(args, now)?;
    let interp = Compiled::new(program.clone(), Engine::Interp)?;
    let compiled = Compiled::new(program.clone(), Engine::Jit)?;
    let Some(native) = compiled.jit() else {
        return Err(CmdError::Disagree("no native program".into()));
    };
    let published = check_agreement(&interp, &compiled, &fleet, now)?;
    let n = fleet.len();
    let mut timings = Vec::new();
    for engine in Engine::ALL.into_iter().filter(|e| args.engine.contains(e)) {
        let t = match engine {
            Engine::Interp => time_interp(&interp, &fleet, now, args.passes),
            Engine::Jit => time_jit(&compiled, native, &fleet, now, args.passes),
        };
        timings.push((engine, t));
    }
    let (prepare_ns, with_prepare_ns) = time_prepare(&compiled, native, &fleet, now, args.passes);
    let sweep_ns = args
        .engine
        .contains(&Engine::Jit)
        .then(|| time_jit_sweep(&compiled, native, &fleet, now, args.passes).ns_per_decision);
    let total = native.nativeness().len().saturating_sub(1);
    let all_native = native.nativeness()[..total]
        .iter()
        .filter(|n| **n == jit::Nativeness::Native)
        .count();
    Ok(Report {
        resources: n,
        fleet: origin,
        published,
        compile: native.compile_time(),
        native: format!("{all_native}/{total} params native"),
        timings,
        prepare_ns,
        with_prepare_ns,
        sweep_ns,
    })
}

fn time_interp(
    interp: &Compiled,
    fleet: &[Arc<Resource>],
    now: Timestamp,
    passes: usize,
) -> Timing {
    let mut scratch = Scratch::default();
    let mut fleet = fleet.to_vec();
    let mut warm = Scratch::default();
    time_pages(
        &mut fleet,
        passes,
        |page| {
            for r in page.iter() {
                black_box(interp.decide(r, now, &mut warm));
            }
        },
        |r| interp.decide(r, now, &mut scratch).publish,
    )
}

/// Times decisions on prepared resources, page by page (the daemon decodes a page, then prepares
/// and decides each of its resources right after).
fn time_jit(
    compiled: &Compiled,
    native: &JitProgram,
    fleet: &[Arc<Resource>],
    now: Timestamp,
    passes: usize,
) -> Timing {
    let mut rows: Vec<(Arc<Resource>, jit::Prepared)> = fleet
        .iter()
        .map(|r| (r.clone(), jit::Prepared::default()))
        .collect();
    let mut scratch = jit::Scratch::default();
    time_pages(
        &mut rows,
        passes,
        |page| {
            for (r, p) in page.iter_mut() {
                native.prepare(r, p);
            }
        },
        |(_, p)| {
            let outcome = native.decide(p, now, &mut scratch, crate::cel::jit::Params::Drop);
            compiled.conclude_outcome(outcome).publish
        },
    )
}

/// Times one sweep of the JIT over the whole fleet, every row prepared beforehand.
fn time_jit_sweep(
    compiled: &Compiled,
    native: &JitProgram,
    fleet: &[Arc<Resource>],
    now: Timestamp,
    passes: usize,
) -> Timing {
    let prepared: Vec<jit::Prepared> = fleet.iter().map(|r| native.prepared(r)).collect();
    let mut scratch = jit::Scratch::default();
    time_passes(fleet.len(), passes, || {
        prepared
            .iter()
            .map(|p| {
                compiled.conclude_outcome(native.decide(
                    p,
                    now,
                    &mut scratch,
                    crate::cel::jit::Params::Drop,
                ))
            })
            .filter(|d: &Decision| d.publish)
            .count()
    })
}

/// The cost of preparing a resource alone, and of preparing then deciding, page by page on
/// resources just touched (the daemon prepares a resource right after decoding it).
fn time_prepare(
    compiled: &Compiled,
    native: &JitProgram,
    fleet: &[Arc<Resource>],
    now: Timestamp,
    passes: usize,
) -> (f64, f64) {
    let mut fleet = fleet.to_vec();
    let mut warm = jit::Prepared::default();
    let mut touch = |page: &mut [Arc<Resource>]| {
        for r in page.iter() {
            native.prepare(r, &mut warm);
        }
    };
    let mut p = jit::Prepared::default();
    let prepare = time_pages(&mut fleet, passes, &mut touch, |r| {
        native.prepare(r, &mut p);
        false
    });
    let mut scratch = Scratch::default();
    let both = time_pages(&mut fleet, passes, &mut touch, |r| {
        compiled.decide(r, now, &mut scratch).publish
    });
    (prepare.ns_per_decision, both.ns_per_decision)
}

fn per_sec(ns: f64) -> f64 {
    if ns > 0.0 { 1e9 / ns } else { 0.0 }
}

fn speedup(report: &Report) -> Option<f64> {
    let ns = |e| {
        report
            .timings
            .iter()
            .find(|(x, _)| *x == e)
            .map(|(_, t)| t.ns_per_decision)
    };
    Some(ns(Engine::Interp)? / ns(Engine::Jit)?)
}

fn write_text(r: &Report, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "rules: compiled to native code in {:.3} ms ({})",
        r.compile.as_secs_f64() * 1e3,
        r.native
    )?;
    writeln!(out, "fleet: {} resources, {}", r.resources, r.fleet)?;
    writeln!(
        out,
        "agree: both engines decided all {} resources identically ({} publish)",
        r.resources, r.published
    )?;
    writeln!(
        out,
        "{:<8} {:>14} {:>16}   (page by page, {PAGE} at a time, as the daemon decides)",
        "engine", "ns/decision", "decisions/s"
    )?;
    for (engine, t) in &r.timings {
        writeln!(
            out,
            "{:<8} {:>14.1} {:>16.0}",
            engine.name(),
            t.ns_per_decision,
            per_sec(t.ns_per_decision)
        )?;
        let _ = t.published;
    }
    if let Some(s) = speedup(r) {
        writeln!(out, "speed-up: {s:.1}x (jit vs interp)")?;
    }
    if let Some(sweep) = r.sweep_ns {
        writeln!(
            out,
            "jit, one sweep over all {} prepared rows: {sweep:.1} ns/decision (memory-bound once the rows outgrow the caches)",
            r.resources
        )?;
    }
    writeln!(
        out,
        "jit prepare (once per resource, before its decision): {:.1} ns/resource; prepare + decide: {:.1} ns",
        r.prepare_ns, r.with_prepare_ns
    )
}

fn to_json(r: &Report) -> Json {
    let mut engines = serde_json::Map::new();
    for (engine, t) in &r.timings {
        let mut e = json!({
            "ns_per_decision": t.ns_per_decision,
            "decisions_per_sec": per_sec(t.ns_per_decision),
        });
        if *engine == Engine::Jit {
            e["prepare_ns_per_resource"] = json!(r.prepare_ns);
            e["ns_per_decision_with_prepare"] = json!(r.with_prepare_ns);
            e["ns_per_decision_one_sweep"] = json!(r.sweep_ns);
        }
        engines.insert(engine.name().into(), e);
    }
    json!({
        "engines": engines,
        "resources": r.resources,
        "agree": true,
        "published": r.published,
        "speedup": speedup(r),
        "compile_ms": r.compile.as_secs_f64() * 1e3,
    })
}

/// Runs `sentinel bench` with its options, printing to stdout.
pub fn main(args: &BenchArgs) -> Result<(), CmdError> {
    let rules = super::check::load_rules(args.config.as_deref())?;
    let now = match &args.now {
        Some(text) => time::parse_timestamp(text).map_err(|e| CmdError::Input {
            origin: "--now".into(),
            message: e.message,
        })?,
        None => crate::daemon::runtime::wall_clock(),
    };
    let report = measure(rules.decision.program(), args, now)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", to_json(&report))?;
    } else {
        write_text(&report, &mut out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(n: usize) -> BenchArgs {
        BenchArgs {
            config: None,
            now: None,
            resources: Some(n),
            input: None,
            engine: Engine::ALL.to_vec(),
            passes: 1,
            json: true,
        }
    }

    #[test]
    fn json_report_has_both_engines_and_agreement() {
        let program = Program::compile(&crate::rules::decision::DecisionSource::default_rules())
            .expect("default rules");
        let now = time::parse_timestamp("2025-10-21T12:00:00Z").expect("now");
        let report = measure(&program, &args(40), now).expect("engines agree");
        let j = to_json(&report);
        assert_eq!(j["resources"], json!(40));
        assert_eq!(j["agree"], json!(true));
        assert!(j["engines"]["interp"]["ns_per_decision"].is_number(), "{j}");
        assert!(j["engines"]["jit"]["ns_per_decision"].is_number(), "{j}");
        assert!(
            j["engines"]["jit"]["ns_per_decision_one_sweep"].is_number(),
            "{j}"
        );
        // Both engines were timed on every resource: page by page, the same published count.
        for (_, t) in &report.timings {
            assert_eq!(t.published, report.published);
        }
        let mut text = Vec::new();
        write_text(&report, &mut text).expect("writes");
        let text = String::from_utf8(text).expect("utf-8");
        assert!(text.contains("speed-up:"), "{text}");
        assert!(
            text.contains("one sweep over all 40 prepared rows"),
            "{text}"
        );
    }
}
