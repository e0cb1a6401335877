//! A local OTLP trace receiver for measuring the exporters (docs/performance.md, "Tracing"):
//! the daemon tests' own receivers (`tests/common/otlp.rs`), over HTTP/protobuf and gRPC on
//! 127.0.0.1, answering every export with success. Prints both endpoints, then the spans
//! received so far every five seconds.
//!
//! ```sh
//! cargo run --release --example otlp_receiver
//! ```

#[allow(dead_code)]
#[path = "../tests/common/otlp.rs"]
mod otlp;

#[tokio::main]
async fn main() {
    let http = otlp::http_receiver().await;
    let grpc = otlp::grpc_receiver().await;
    println!("http {}", http.endpoint());
    println!("grpc {}", grpc.endpoint());
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        println!(
            "spans received: http {}, grpc {}",
            http.spans.all().len(),
            grpc.spans.all().len()
        );
    }
}
