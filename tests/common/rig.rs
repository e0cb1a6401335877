//! A plain lapin connection to the shared RabbitMQ for the tests' side of the wire: it declares
//! exchanges and queues under fresh names, reads messages and deletes what it declared
//! (tests/daemon/). Without a broker it fails loudly, saying how to start one.

use lapin::options::{
    BasicGetOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use std::time::Duration;
use uuid::Uuid;

/// The broker as the rig reaches it (the default vhost spelled out).
pub const RIG_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// How long a test waits for something that should happen.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct Rig {
    pub conn: Connection,
    pub ch: Channel,
    exchanges: Vec<String>,
}

/// Connects, or panics with what to do when no broker answers.
pub async fn rig() -> Rig {
    let connecting = Connection::connect(RIG_URL, ConnectionProperties::default());
    let conn = match tokio::time::timeout(Duration::from_secs(10), connecting).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => panic!(
            "RabbitMQ is not reachable at {RIG_URL} as guest/guest ({e}); these tests need a \
             running broker: start it with `rabbitmq-server -detached`"
        ),
        Err(_) => panic!("RabbitMQ at {RIG_URL} did not answer within 10s; is it running?"),
    };
    let ch = conn.create_channel().await.expect("rig channel");
    Rig {
        conn,
        ch,
        exchanges: Vec::new(),
    }
}

/// A fresh name for a test's exchange or queue.
pub fn unique(what: &str) -> String {
    format!("sentinel-test-{what}-{}", Uuid::now_v7())
}

impl Rig {
    /// A fresh exchange name, deleted by `cleanup`.
    pub fn exchange(&mut self, what: &str) -> String {
        let name = unique(what);
        self.exchanges.push(name.clone());
        name
    }

    /// Declares the exchange the way the publisher does (for binding before the first publish).
    pub async fn declare(&self, exchange: &str, kind: ExchangeKind) {
        let options = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        self.ch
            .exchange_declare(exchange.into(), kind, options, FieldTable::default())
            .await
            .expect("declare");
    }

    /// An exclusive queue bound to `exchange` (which must exist) with `key` and `args`.
    pub async fn bind(&self, exchange: &str, key: &str, args: FieldTable) -> String {
        let queue = unique("queue");
        let options = QueueDeclareOptions {
            exclusive: true,
            auto_delete: true,
            ..Default::default()
        };
        self.ch
            .queue_declare(queue.as_str().into(), options, FieldTable::default())
            .await
            .expect("queue_declare");
        self.ch
            .queue_bind(
                queue.as_str().into(),
                exchange.into(),
                key.into(),
                QueueBindOptions::default(),
                args,
            )
            .await
            .expect("queue_bind");
        queue
    }

    /// A fresh durable fanout exchange (as the publisher declares it) with one exclusive queue
    /// bound to it.
    pub async fn exchange_and_queue(&mut self, what: &str) -> (String, String) {
        let exchange = self.exchange(what);
        self.declare(&exchange, ExchangeKind::Fanout).await;
        let queue = self.bind(&exchange, "", FieldTable::default()).await;
        (exchange, queue)
    }

    /// The next message on `queue`, waiting (bounded) for it to arrive.
    pub async fn next(&self, queue: &str) -> lapin::message::Delivery {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(msg) = self.try_next(queue).await {
                return msg;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no message arrived on {queue}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The next message on `queue` if one is there now.
    pub async fn try_next(&self, queue: &str) -> Option<lapin::message::Delivery> {
        let options = BasicGetOptions { no_ack: true };
        self.ch
            .basic_get(queue.into(), options)
            .await
            .expect("basic_get")
            .map(|m| m.delivery)
    }

    /// Every message on `queue` now. With publisher confirms on, a confirmed publish is already
    /// routed, so after a cycle this is exactly what the cycle published.
    pub async fn drain(&self, queue: &str) -> Vec<lapin::message::Delivery> {
        let mut out = Vec::new();
        while let Some(msg) = self.try_next(queue).await {
            out.push(msg);
        }
        out
    }

    /// Deletes the exchanges it named and closes the connection.
    pub async fn cleanup(self) {
        for exchange in &self.exchanges {
            let _ = self
                .ch
                .exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default())
                .await;
        }
        let _ = self.conn.close(200, "OK".into()).await;
    }
}
