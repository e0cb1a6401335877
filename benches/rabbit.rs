//! Publishing to the real RabbitMQ on 127.0.0.1:5672 (guest/guest) with publisher confirms, as
//! `serve` publishes: pages of 100 events (the size of `examples/scale.yaml`'s `message_data`),
//! each page one `publish_batch`, every event confirmed.
//!
//! `RABBIT_PAGES=<n>` publishes `n` pages and exits, for counting instructions with callgrind:
//! the difference of two runs with different `n`, divided by 100 × their difference in `n`, is
//! the count per published event (connecting, declaring and closing cancel out). Without it,
//! prints the events per second of 200 pages. `RABBIT_CONFIRM=false` publishes unconfirmed.
//! `cargo bench --bench rabbit`.

use sentinel::broker::event::Event;
use sentinel::broker::{ExchangeType, RabbitConfig, RabbitOptions, RabbitPublisher};
use serde_json::json;
use std::time::Instant;

const PAGE: usize = 100;

/// A page of events as `examples/scale.yaml`'s `message_data` builds them.
fn page(first: u64) -> Vec<Event> {
    (first..first + PAGE as u64)
        .map(|n| {
            let id = format!("2c9f0a1b-{n:04x}-4e5f-8a9b-0c1d2e3f4a5b");
            let data = json!({
                "generation": 1,
                "href": format!("/api/hyperfleet/v1/clusters/{id}"),
                "id": id,
                "kind": "Cluster",
                "reason": "never processed",
            });
            Event::new("Cluster", data)
        })
        .collect()
}

async fn publish(pages: usize, confirm: bool) -> usize {
    let cfg = RabbitConfig {
        url: "amqp://guest:guest@127.0.0.1:5672/".to_owned(),
        exchange_type: ExchangeType::Fanout,
        publisher_confirm: confirm,
        ..Default::default()
    };
    let mut publisher =
        RabbitPublisher::connect(&cfg, "sentinel-bench-publish", RabbitOptions::default())
            .await
            .expect("RabbitMQ on 127.0.0.1:5672");
    // One page published `pages` times: building events is not what is measured.
    let events = page(0);
    let mut published = 0;
    for _ in 0..pages {
        for result in publisher.publish_batch(&events).await {
            result.expect("published");
            published += 1;
        }
    }
    publisher.close().await.expect("closed");
    published
}

fn main() {
    let confirm = std::env::var("RABBIT_CONFIRM").map_or(true, |v| v != "false");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Ok(n) = std::env::var("RABBIT_PAGES") {
        let n: usize = n.parse().expect("RABBIT_PAGES=<n>");
        let published = runtime.block_on(publish(n, confirm));
        println!("rabbit x{n}: {published} published (confirm={confirm})");
        return;
    }
    let start = Instant::now();
    let published = runtime.block_on(publish(200, confirm));
    let secs = start.elapsed().as_secs_f64();
    println!(
        "rabbit: {published} events in {secs:.2} s, {:.0} events/s (confirm={confirm})",
        published as f64 / secs
    );
}
