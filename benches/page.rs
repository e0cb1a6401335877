//! The daemon's per-page work on a realistic page of 100 clusters (about 2.4 KB each, as
//! `simulate --profile realistic` serves them: five conditions, labels, a spec, owner
//! references; a third due): decoding the response body
//! into resources, decoding plus deciding every resource (JIT, as `serve` runs), and that plus
//! building and encoding the CloudEvent of each resource due; and a gzipped page of the varied
//! fleet (`simulate --profile varied`: 100 clusters of about 2.4 KB, gzipped about 12× as the
//! API gzips them) inflated and decoded as `serve` reads it (`gunzip+decode`, and `gunzip`
//! alone). Criterion reports time per resource. `cargo bench --bench page`.

use criterion::{Criterion, Throughput, criterion_group};
use sentinel::api::{decode_body, decode_page_with, gunzip, max_body_bytes};
use sentinel::broker::event::Event;
use sentinel::cel::time::parse_timestamp;
use sentinel::resource::Fields;
use sentinel::rules::decision::{Compiled, DecisionSource, Engine, Program, Scratch};
use sentinel::rules::message_data::MessageData;
use sentinel::rules::message_data::MessageDataProgram;
use sentinel::sim::api::{realistic_resource, varied_resource};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const PAGE: usize = 100;

fn page_body() -> Vec<u8> {
    let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .expect("valid time")
        .to_utc();
    let items: Vec<_> = (0..PAGE as u64)
        .map(|i| realistic_resource(i, now))
        .collect();
    let body = serde_json::json!({
        "kind": "ClusterList", "page": 1, "size": PAGE, "total": 1_000_000, "items": items,
    });
    serde_json::to_vec(&body).expect("serializable")
}

/// A page of the varied fleet, gzipped at the default level (as the fake API's compression
/// layer and the real API's middleware do).
fn gzipped_page() -> Vec<u8> {
    use std::io::Write as _;
    let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .expect("valid time")
        .to_utc();
    let items: Vec<_> = (0..PAGE as u64)
        .map(|i| varied_resource(i, now, 1))
        .collect();
    let body = serde_json::json!({
        "kind": "ClusterList", "page": 1, "size": PAGE, "total": 1_000_000, "items": items,
    });
    let body = serde_json::to_vec(&body).expect("serializable");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&body).expect("in memory");
    gz.finish().expect("in memory")
}

/// Inflates and decodes a gzipped page as `serve` does: into the buffer that becomes the
/// page's text.
fn gunzip_page(wire: &[u8], projection: &Arc<sentinel::cel::host::Projection>) -> usize {
    let body = gunzip(black_box(wire), max_body_bytes(PAGE as u32)).expect("inflates");
    decode_body(body, projection).expect("decodes").items.len()
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
    let wire = gzipped_page();
    group.bench_function("gunzip+decode", |b| {
        b.iter(|| gunzip_page(&wire, &projection))
    });
    group.bench_function("gunzip", |b| {
        b.iter(|| gunzip(black_box(&wire), max_body_bytes(PAGE as u32)).expect("inflates"))
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

/// `PAGE_PASSES=<decode|decide|publish|gunzip|gunzip+decode|fields|fields+decode>:<n>`: instead
/// of timing, decodes (and decides, and builds and encodes the events due) the page `n` times
/// and exits, for counting instructions with callgrind: the difference of two runs with
/// different `n` divided by 100 × their difference in `n` is the count per resource (`publish`
/// − `decide`, divided by the events per pass instead: per event). `gunzip` inflates the varied
/// fleet's gzipped page, `gunzip+decode` inflates and decodes it. `fields+decode` decodes the
/// page as the API projects it for the default rules' `fields`, and `fields` checks each item
/// of that projected page for every field asked for (what a projected listing adds per
/// resource).
fn passes(spec: &str) {
    let (what, n) = spec.split_once(':').expect(
        "PAGE_PASSES=<decode|decide|publish|gunzip|gunzip+decode|fields|fields+decode>:<n>",
    );
    let n: usize = n.parse().expect("a count");
    let body = page_body();
    let now = parse_timestamp("2026-01-01T00:00:00Z").expect("valid time");
    let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
    let projection = Arc::new(program.projection());
    if what.starts_with("gunzip") {
        let wire = gzipped_page();
        let mut items = 0;
        for _ in 0..n {
            items += match what {
                "gunzip" => gunzip(black_box(&wire), max_body_bytes(PAGE as u32))
                    .expect("inflates")
                    .len(),
                _ => gunzip_page(&wire, &projection),
            };
        }
        println!("{what} x{n}: {items}");
        return;
    }
    if what.starts_with("fields") {
        let fields = Fields::of(&projection).expect("the default rules project");
        let projected = projected_body(&body, &fields);
        let page = decode_page_with(&projected, &projection).expect("decodes");
        let mut missing = 0;
        for _ in 0..n {
            if what == "fields" {
                for r in &page.items {
                    missing += usize::from(fields.missing(black_box(r.json_text())).is_some());
                }
            } else {
                missing += decode_page_with(black_box(&projected), &projection)
                    .expect("decodes")
                    .items
                    .len();
            }
        }
        println!("{what} x{n}: {missing}");
        return;
    }
    let data = message_data();
    let mut scratch = Scratch::default();
    let mut published = 0;
    if what == "publish" {
        // Under the projection `serve` decodes with: the rules' and message_data's.
        let projection = sentinel::rules::projection(&program, &data);
        let rules = Compiled::new(program, Engine::Jit).expect("native code");
        let mut buf = Vec::new();
        for _ in 0..n {
            published += publish_page(&body, &projection, &rules, &data, &mut scratch, &mut buf);
        }
        println!("{what} x{n}: {published} published");
        return;
    }
    let rules = Compiled::new(program, Engine::Jit).expect("native code");
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

/// `body` as the API answers it asked for `fields` (the fake API's projection, the real one's).
fn projected_body(body: &[u8], fields: &Fields) -> Vec<u8> {
    use sentinel::sim::api::project;
    let page: serde_json::Value = serde_json::from_slice(body).expect("JSON");
    let asked = project::requested_fields([fields.param()]).expect("fields");
    let items = page["items"].as_array().expect("items");
    let projected = items.iter().map(|i| project::project(&asked, i)).collect();
    project::envelope(projected, 1, items.len() as u64)
}

/// The `message_data` of `examples/scale.yaml`.
fn message_data() -> MessageDataProgram {
    let leaf = |k: &str, v: &str| (k.to_string(), MessageData::Leaf(v.to_string()));
    let data = MessageData::Object(vec![
        leaf("generation", "resource.generation"),
        leaf("href", "resource.href"),
        leaf("id", "resource.id"),
        leaf("kind", "resource.kind"),
        leaf("reason", "reason"),
    ]);
    MessageDataProgram::compile(&data).expect("message_data compiles")
}

/// Decodes the page (under the projection of the rules and `data`), decides each resource and
/// builds and encodes the event of each one due into `buf`, as `serve` does; the events built.
fn publish_page(
    body: &[u8],
    projection: &Arc<sentinel::cel::host::Projection>,
    rules: &Compiled,
    data: &MessageDataProgram,
    scratch: &mut Scratch,
    buf: &mut Vec<u8>,
) -> usize {
    let now = parse_timestamp("2026-01-01T00:00:00Z").expect("valid time");
    let page = decode_page_with(black_box(body), projection).expect("decodes");
    let mut published = 0;
    for resource in page.items {
        let resource = Arc::new(resource);
        let decision = rules.decide(&resource, now, scratch);
        if decision.publish {
            // As `serve`: the shared text of the reason.
            let reason = decision.reason.shared_text();
            let json = data.evaluate(&resource, &reason, &mut |_| {});
            let kind = resource.kind().map_or("", |t| t.as_str());
            let event = Event::new(kind, json);
            buf.clear();
            event.encode_into(buf);
            published += 1;
        }
    }
    published
}

fn publish(c: &mut Criterion) {
    let body = page_body();
    let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
    let data = message_data();
    let projection = sentinel::rules::projection(&program, &data);
    let rules = Compiled::new(program, Engine::Jit).expect("native code");
    let mut group = c.benchmark_group("page");
    group.throughput(Throughput::Elements(PAGE as u64));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    let mut scratch = Scratch::default();
    let mut buf = Vec::new();
    group.bench_function("decode+decide+publish", |b| {
        b.iter(|| publish_page(&body, &projection, &rules, &data, &mut scratch, &mut buf))
    });
    group.finish();
}

criterion_group!(benches, page, publish);

fn main() {
    match std::env::var("PAGE_PASSES") {
        Ok(spec) => passes(&spec),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
