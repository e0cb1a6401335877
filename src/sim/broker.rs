//! The broker as the simulated adapters see it: one queue per adapter, each receiving every event
//! the sentinel publishes on a topic.
//!
//! - [`InProcessBroker`]: a [`MessageSink`] for [`crate::broker::MemoryPublisher`]
//!   that copies each message into every adapter's queue (a fanout exchange in memory).
//! - [`RabbitQueues`]: real RabbitMQ queues `{topic}-{adapter}` bound to the exchange the
//!   sentinel publishes to (named after the topic, durable, of the type the sentinel's
//!   broker.yaml names, as its publisher declares it), whose deliveries are forwarded to the
//!   adapters' queues. Each queue is bound so it hears every event whatever the type.
//! - [`PubSubQueues`]: Pub/Sub subscriptions `{topic}-{adapter}` (on the emulator named by
//!   `PUBSUB_EMULATOR_HOST`) on the topic the sentinel publishes to, created fresh (so they hold
//!   only this run's events) and streamed with Google's subscriber client; each message is
//!   acknowledged and forwarded to its adapter's queue.
//!
//! Invariant: each queue receives each event once, in publish order; `delivered` counts events,
//! not copies.

use crate::broker::MessageSink;
use crate::broker::config::ExchangeType;
use crate::sim::adapters::Message;
use lapin::options::{
    BasicConsumeOptions, BasicQosOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
    QueueBindOptions, QueueDeclareOptions, QueuePurgeOptions,
};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties, ExchangeKind, message::DeliveryResult};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// The exchange the sentinel publishes to, as its broker.yaml describes it.
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    /// The exchange name (the topic).
    pub name: &'a str,
    /// Its type; declaring it with another type than the sentinel's fails both.
    pub kind: ExchangeType,
    /// The routing key the sentinel publishes with.
    pub routing_key: &'a str,
}

impl Exchange<'_> {
    /// The binding key that delivers every event the sentinel publishes: any for fanout and
    /// headers (no header conditions match everything), `#` for topic, the publisher's key for
    /// direct.
    fn binding_key(&self) -> &str {
        match self.kind {
            ExchangeType::Fanout | ExchangeType::Headers => "",
            ExchangeType::Topic => "#",
            ExchangeType::Direct => self.routing_key,
        }
    }

    fn lapin_kind(&self) -> ExchangeKind {
        match self.kind {
            ExchangeType::Direct => ExchangeKind::Direct,
            ExchangeType::Fanout => ExchangeKind::Fanout,
            ExchangeType::Topic => ExchangeKind::Topic,
            ExchangeType::Headers => ExchangeKind::Headers,
        }
    }
}

/// An in-memory fanout exchange feeding one queue per adapter.
#[derive(Debug)]
pub struct InProcessBroker {
    queues: Vec<mpsc::UnboundedSender<Message>>,
    delivered: AtomicU64,
}

impl InProcessBroker {
    /// A broker with `n` queues, and their receiving ends in the same order.
    pub fn new(n: usize) -> (Arc<InProcessBroker>, Vec<mpsc::UnboundedReceiver<Message>>) {
        let (senders, receivers) = (0..n).map(|_| mpsc::unbounded_channel()).unzip();
        let broker = InProcessBroker {
            queues: senders,
            delivered: AtomicU64::new(0),
        };
        (Arc::new(broker), receivers)
    }

    /// Events delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Acquire)
    }
}

impl MessageSink for InProcessBroker {
    fn deliver(&self, _event_id: uuid::Uuid, body: &[u8]) -> Result<(), String> {
        if !self.queues.is_empty() {
            let message: Message = Arc::from(body);
            for queue in &self.queues {
                // A closed queue belongs to an adapter that stopped; the others still get it.
                let _ = queue.send(message.clone());
            }
        }
        self.delivered.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// Why the RabbitMQ side of the simulation could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("rabbitmq at {url}: {what}: {reason}")]
pub struct RabbitSetupError {
    /// The URL, password masked.
    pub url: String,
    /// The step that failed.
    pub what: &'static str,
    /// The broker's or client's message.
    pub reason: String,
}

/// Consumers of `{topic}-{adapter}` queues on a real RabbitMQ.
pub struct RabbitQueues {
    conn: Connection,
    exchange: String,
    delivered: Arc<AtomicU64>,
}

impl RabbitQueues {
    /// Declares `exchange` (durable, of its type, as the sentinel's publisher does), one queue
    /// `{name}-{adapter}` per adapter (emptied, deleted once unused) bound to it, and starts
    /// consuming. Gives the receiving ends in the order of `adapters`.
    pub async fn bind(
        url: &str,
        exchange: &Exchange<'_>,
        adapters: &[String],
    ) -> Result<(RabbitQueues, Vec<mpsc::UnboundedReceiver<Message>>), RabbitSetupError> {
        let masked = crate::common::redact::mask_url(url);
        let fail = |what: &'static str| {
            let url = masked.clone();
            move |e: lapin::Error| RabbitSetupError {
                url,
                what,
                reason: e.to_string(),
            }
        };
        let topic = exchange.name;
        let lapin_url = lapin_url(url);
        let connecting = Connection::connect(&lapin_url, ConnectionProperties::default());
        let conn = match tokio::time::timeout(Duration::from_secs(10), connecting).await {
            Ok(conn) => conn.map_err(fail("connect"))?,
            Err(_) => {
                return Err(RabbitSetupError {
                    url: masked,
                    what: "connect",
                    reason: "no answer within 10s".into(),
                });
            }
        };
        let delivered = Arc::new(AtomicU64::new(0));
        let mut receivers = Vec::with_capacity(adapters.len());
        for (i, adapter) in adapters.iter().enumerate() {
            let channel = conn.create_channel().await.map_err(fail("open channel"))?;
            let durable = ExchangeDeclareOptions {
                durable: true,
                ..Default::default()
            };
            channel
                .exchange_declare(
                    topic.into(),
                    exchange.lapin_kind(),
                    durable,
                    FieldTable::default(),
                )
                .await
                .map_err(fail("declare exchange"))?;
            let queue = format!("{topic}-{adapter}");
            let options = QueueDeclareOptions {
                auto_delete: true,
                ..Default::default()
            };
            channel
                .queue_declare(queue.as_str().into(), options, FieldTable::default())
                .await
                .map_err(fail("declare queue"))?;
            channel
                .queue_purge(queue.as_str().into(), QueuePurgeOptions::default())
                .await
                .map_err(fail("purge queue"))?;
            channel
                .queue_bind(
                    queue.as_str().into(),
                    topic.into(),
                    exchange.binding_key().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(fail("bind queue"))?;
            channel
                .basic_qos(1000, BasicQosOptions::default())
                .await
                .map_err(fail("set qos"))?;
            let consume = BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            };
            let tag = format!("sentinel-simulate-{adapter}");
            let consumer = channel
                .basic_consume(
                    queue.as_str().into(),
                    tag.as_str().into(),
                    consume,
                    FieldTable::default(),
                )
                .await
                .map_err(fail("consume"))?;
            let (tx, rx) = mpsc::unbounded_channel::<Message>();
            let count = (i == 0).then(|| delivered.clone());
            consumer.set_delegate(move |delivery: DeliveryResult| {
                let tx = tx.clone();
                let count = count.clone();
                async move {
                    if let Ok(Some(delivery)) = delivery {
                        if let Some(count) = count {
                            count.fetch_add(1, Ordering::AcqRel);
                        }
                        let _ = tx.send(Arc::from(delivery.data));
                    }
                }
            });
            receivers.push(rx);
        }
        let exchange = topic.to_string();
        let queues = RabbitQueues {
            conn,
            exchange,
            delivered,
        };
        Ok((queues, receivers))
    }

    /// Events delivered to the first adapter's queue so far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Acquire)
    }

    /// Deletes the exchange and closes the connection (the queues go away with their
    /// consumers). A sentinel still publishing to the exchange re-declares it.
    pub async fn close(self) {
        let cleanup = async {
            if let Ok(channel) = self.conn.create_channel().await {
                let options = ExchangeDeleteOptions::default();
                let _ = channel
                    .exchange_delete(self.exchange.as_str().into(), options)
                    .await;
            }
            let _ = self.conn.close(200, "simulation over".into()).await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), cleanup).await;
    }
}

/// Why the Pub/Sub side of the simulation could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("google pub/sub emulator at {host}: {what}: {reason}")]
pub struct PubSubSetupError {
    /// The emulator's `host:port`.
    pub host: String,
    /// The step that failed.
    pub what: &'static str,
    /// The client's message.
    pub reason: String,
}

/// Streaming subscribers of `{topic}-{adapter}` subscriptions on a Pub/Sub emulator.
pub struct PubSubQueues {
    admin: google_cloud_pubsub::client::SubscriptionAdmin,
    subscriptions: Vec<String>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    delivered: Arc<AtomicU64>,
}

impl PubSubQueues {
    /// Creates `projects/{project}/topics/{topic}` if missing and one fresh subscription
    /// `{topic}-{adapter}` per adapter (an old one of that name is deleted first), and starts
    /// streaming them. Gives the receiving ends in the order of `adapters`.
    pub async fn bind(
        emulator_host: &str,
        project: &str,
        topic: &str,
        adapters: &[String],
    ) -> Result<(PubSubQueues, Vec<mpsc::UnboundedReceiver<Message>>), PubSubSetupError> {
        use google_cloud_gax::error::rpc::Code;
        use google_cloud_pubsub::client::{Subscriber, SubscriptionAdmin, TopicAdmin};
        let fail = |what: &'static str| {
            let host = emulator_host.to_string();
            move |e: &dyn std::fmt::Display| PubSubSetupError {
                host,
                what,
                reason: e.to_string(),
            }
        };
        let endpoint = crate::broker::emulator_endpoint(emulator_host);
        let anonymous = || google_cloud_auth::credentials::anonymous::Builder::new().build();
        let setup = async {
            let topics = TopicAdmin::builder()
                .with_endpoint(endpoint.clone())
                .with_credentials(anonymous())
                .build()
                .await
                .map_err(|e| fail("topic client")(&e))?;
            let admin = SubscriptionAdmin::builder()
                .with_endpoint(endpoint.clone())
                .with_credentials(anonymous())
                .build()
                .await
                .map_err(|e| fail("subscription client")(&e))?;
            let subscriber = Subscriber::builder()
                .with_endpoint(endpoint.clone())
                .with_credentials(anonymous())
                .build()
                .await
                .map_err(|e| fail("subscriber client")(&e))?;
            let topic_path = crate::broker::topic_path(project, topic);
            match topics
                .create_topic()
                .set_name(topic_path.clone())
                .send()
                .await
            {
                Ok(_) => {}
                Err(e) if e.status().is_some_and(|s| s.code == Code::AlreadyExists) => {}
                Err(e) => return Err(fail("create topic")(&e)),
            }
            let mut subscriptions = Vec::with_capacity(adapters.len());
            for adapter in adapters {
                let name = format!("projects/{project}/subscriptions/{topic}-{adapter}");
                match admin
                    .delete_subscription()
                    .set_subscription(name.clone())
                    .send()
                    .await
                {
                    Ok(()) => {}
                    Err(e) if e.status().is_some_and(|s| s.code == Code::NotFound) => {}
                    Err(e) => return Err(fail("delete old subscription")(&e)),
                }
                admin
                    .create_subscription()
                    .set_name(name.clone())
                    .set_topic(topic_path.clone())
                    .send()
                    .await
                    .map_err(|e| fail("create subscription")(&e))?;
                subscriptions.push(name);
            }
            Ok((admin, subscriber, subscriptions))
        };
        let (admin, subscriber, subscriptions) =
            match tokio::time::timeout(Duration::from_secs(10), setup).await {
                Ok(done) => done?,
                Err(_) => {
                    return Err(PubSubSetupError {
                        host: emulator_host.to_string(),
                        what: "connect",
                        reason: "no answer within 10s".into(),
                    });
                }
            };
        let delivered = Arc::new(AtomicU64::new(0));
        let mut receivers = Vec::with_capacity(subscriptions.len());
        let mut tasks = Vec::with_capacity(subscriptions.len());
        for (i, name) in subscriptions.iter().enumerate() {
            let (tx, rx) = mpsc::unbounded_channel::<Message>();
            let count = (i == 0).then(|| delivered.clone());
            let mut stream = subscriber.subscribe(name.clone()).build();
            tasks.push(tokio::spawn(async move {
                while let Some(received) = stream.next().await {
                    // A stream error is retried by the client; an Err item is only reported.
                    let Ok((message, handler)) = received else {
                        continue;
                    };
                    handler.ack();
                    if let Some(count) = &count {
                        count.fetch_add(1, Ordering::AcqRel);
                    }
                    let _ = tx.send(Arc::from(&message.data[..]));
                }
            }));
            receivers.push(rx);
        }
        let queues = PubSubQueues {
            admin,
            subscriptions,
            tasks,
            delivered,
        };
        Ok((queues, receivers))
    }

    /// Events delivered to the first adapter's subscription so far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Acquire)
    }

    /// Stops streaming and deletes the subscriptions (the topic stays: the sentinel may still
    /// publish to it).
    pub async fn close(self) {
        for task in &self.tasks {
            task.abort();
        }
        let cleanup = async {
            for name in &self.subscriptions {
                let _ = self
                    .admin
                    .delete_subscription()
                    .set_subscription(name.clone())
                    .send()
                    .await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), cleanup).await;
    }
}

/// The broker.yaml reading of an AMQP URL for lapin: a bare trailing `/` means vhost `/`.
fn lapin_url(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(i) if i + 1 == after_scheme.len() => format!("{url}%2f"),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_queue_gets_every_event_once() {
        let (broker, mut queues) = InProcessBroker::new(2);
        broker.deliver(uuid::Uuid::nil(), b"one").unwrap();
        broker.deliver(uuid::Uuid::nil(), b"two").unwrap();
        assert_eq!(broker.delivered(), 2);
        for queue in &mut queues {
            assert_eq!(&*queue.try_recv().unwrap(), b"one");
            assert_eq!(&*queue.try_recv().unwrap(), b"two");
            assert!(queue.try_recv().is_err());
        }
        let (alone, _) = InProcessBroker::new(0);
        alone.deliver(uuid::Uuid::nil(), b"x").unwrap();
        assert_eq!(alone.delivered(), 1);
    }

    #[test]
    fn a_trailing_slash_is_the_default_vhost() {
        assert_eq!(lapin_url("amqp://g:g@h:5672/"), "amqp://g:g@h:5672/%2f");
        assert_eq!(lapin_url("amqp://g:g@h:5672/v"), "amqp://g:g@h:5672/v");
        assert_eq!(lapin_url("amqp://h"), "amqp://h");
    }
}
