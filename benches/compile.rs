//! Compile time of the default config: the front end (parse + check) and the JIT (lowering,
//! Cranelift optimization and code generation, finalizing). `cargo bench --bench compile`.

use criterion::{Criterion, criterion_group, criterion_main};
use sentinel::cel::jit::{JitProgram, Options};
use sentinel::rules::decision::{DecisionSource, Program};
use std::hint::black_box;
use std::time::Duration;

fn compile(c: &mut Criterion) {
    let src = DecisionSource::default_rules();
    let program = Program::compile(&src).expect("default rules");
    let params: Vec<_> = program.params.iter().map(|p| p.expr.clone()).collect();
    let opts = Options {
        verify: false,
        listing: false,
        ..Options::default()
    };
    let mut group = c.benchmark_group("compile");
    group.bench_function("front_end", |b| {
        b.iter(|| black_box(Program::compile(&src).is_ok()))
    });
    group.bench_function("jit", |b| {
        b.iter(|| black_box(JitProgram::compile(&params, &program.result, &opts).is_ok()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = compile
}
criterion_main!(benches);
