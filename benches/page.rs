//! The daemon's per-page work on a realistic page of 100 clusters: decoding the response body
//! into resources, and decoding plus deciding every resource (JIT, as `serve` runs). Criterion
//! reports time per resource. `cargo bench --bench page`.

use criterion::{Criterion, Throughput, criterion_group};
use sentinel::cel::time::parse_timestamp;
use sentinel::decision::{Compiled, DecisionSource, Engine, Program, Scratch};
use sentinel::resource::corpus::fleet;
use sentinel::sentinel::api::decode_page_with;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const PAGE: usize = 100;

fn page_body() -> Vec<u8> {
    let now = parse_timestamp("2026-01-01T00:00:00Z").expect("valid time");
    let items = fleet(PAGE, now, 7);
    let body = serde_json::json!({
        "kind": "ClusterList", "page": 1, "size": PAGE, "total": 1_000_000, "items": items,
    });
    serde_json::to_vec(&body).expect("serializable")
}

fn page(c: &mut Criterion) {
    let body = page_body();
    let now = parse_timestamp("2026-01-01T00:00:00Z").expect("valid time");
    let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
    // As `serve` decodes: under the rules' projection.
    let projection = Arc::new(program.projection());
    let rules = Compiled::new(program, Engine::Jit).expect("native code");
    let mut group = c.benchmark_group("page");
    group.throughput(Throughput::Elements(PAGE as u64));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    group.bench_function("decode", |b| {
        b.iter(|| decode_page_with(black_box(&body), &projection).expect("decodes"))
    });
    let mut scratch = Scratch::default();
    group.bench_function("decode+decide", |b| {
        b.iter(|| {
            let page = decode_page_with(black_box(&body), &projection).expect("decodes");
            let mut published = 0;
            for resource in page.items {
                let resource = Arc::new(resource);
                published += usize::from(rules.decide(&resource, now, &mut scratch).publish);
            }
            published
        })
    });
    group.finish();
}

/// `PAGE_PASSES=<decode|decide>:<n>`: instead of timing, decodes (and decides) the page `n`
/// times and exits, for counting instructions with callgrind: the difference of two runs with
/// different `n` divided by 100 × their difference in `n` is the count per resource.
fn passes(spec: &str) {
    let (what, n) = spec
        .split_once(':')
        .expect("PAGE_PASSES=<decode|decide>:<n>");
    let n: usize = n.parse().expect("a count");
    let body = page_body();
    let now = parse_timestamp("2026-01-01T00:00:00Z").expect("valid time");
    let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
    let projection = Arc::new(program.projection());
    let rules = Compiled::new(program, Engine::Jit).expect("native code");
    let mut scratch = Scratch::default();
    let mut published = 0;
    for _ in 0..n {
        let page = decode_page_with(black_box(&body), &projection).expect("decodes");
        if what == "decide" {
            for resource in page.items {
                let resource = Arc::new(resource);
                published += usize::from(rules.decide(&resource, now, &mut scratch).publish);
            }
        }
    }
    println!("{what} x{n}: {published} published");
}

criterion_group!(benches, page);

fn main() {
    match std::env::var("PAGE_PASSES") {
        Ok(spec) => passes(&spec),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
