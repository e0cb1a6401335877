//! Event publishing against the real RabbitMQ on 127.0.0.1:5672 (guest/guest), plus the
//! broker.yaml table.
//!
//! The RabbitMQ tests fail (never skip) when the broker is not reachable. Each test uses its own
//! uniquely named exchange and exclusive queues, and deletes the exchange at the end. Outages are
//! made with a TCP proxy in front of RabbitMQ that the test can cut, so no other connection on
//! the shared broker is disturbed.

use lapin::options::{ExchangeDeclareOptions, ExchangeDeleteOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Connection, ExchangeKind};
use sentinel::broker::config::{self, BrokerConfig, BrokerKind, ExchangeType, RabbitConfig};
use sentinel::broker::event::Event;
use sentinel::broker::{
    self, BrokerError, PublishError, Publisher, RabbitOptions, RabbitPublisher, StdoutPublisher,
};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

use crate::common::proxy::Proxy;
use crate::common::rig::{PATIENCE, rig, unique};

/// What broker.yaml would say; the trailing `/` means vhost `/` (Go's reading, not lapin's).
const RABBIT_URL: &str = "amqp://guest:guest@127.0.0.1:5672/";

/// Declares `exchange` on a throwaway channel; Ok when the broker accepts it as equivalent.
async fn redeclare(
    conn: &Connection,
    exchange: &str,
    kind: ExchangeKind,
) -> Result<(), lapin::Error> {
    let ch = conn.create_channel().await?;
    let options = ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    };
    ch.exchange_declare(exchange.into(), kind, options, FieldTable::default())
        .await
}

fn rabbit_cfg(url: &str, exchange_type: ExchangeType, confirm: bool) -> RabbitConfig {
    RabbitConfig {
        url: url.to_owned(),
        exchange_type,
        publisher_confirm: confirm,
        ..Default::default()
    }
}

fn quick() -> RabbitOptions {
    RabbitOptions {
        backoff_initial: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        ..Default::default()
    }
}

fn event(n: u64) -> Event {
    Event::new("Cluster", json!({"id": format!("cls-{n}"), "n": n}))
}

fn all_ok(results: &[Result<(), PublishError>]) {
    for (i, r) in results.iter().enumerate() {
        assert!(r.is_ok(), "event {i}: {r:?}");
    }
}

fn watermill_properties(id: Uuid) -> BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(
        ShortString::from("_watermill_message_uuid"),
        AMQPValue::LongString(id.to_string().into()),
    );
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers)
}

// ---------------------------------------------------------------------------------------------
// Wire format and exchange semantics.

#[tokio::test]
async fn wire_format_is_what_watermill_consumes() {
    let mut rig = rig().await;
    let topic = rig.exchange("wire");
    // No exchange_type configured: watermill's durable pub/sub default, fanout.
    let cfg = rabbit_cfg(RABBIT_URL, ExchangeType::default(), true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    assert_eq!(publisher.exchange(), topic);
    // The exchange is declared on first use; bind after a first publish.
    all_ok(&publisher.publish_batch(&[event(0)]).await);
    let queue = rig.bind(&topic, "", FieldTable::default()).await;

    let id = Uuid::parse_str("01936f0e-1c2d-7a3b-8c4d-5e6f7a8b9c0d").expect("uuid");
    let data = json!({"generation": 3, "href": "/api/hyperfleet/v1/clusters/c1?x=<&>", "id": "c1", "ratio": 2.0});
    let ev = Event::with_id(id, "Cluster", data);
    all_ok(&publisher.publish_batch(std::slice::from_ref(&ev)).await);

    let msg = rig.next(&queue).await;
    let golden = r#"{"specversion":"1.0","id":"01936f0e-1c2d-7a3b-8c4d-5e6f7a8b9c0d","source":"hyperfleet-sentinel","type":"com.redhat.hyperfleet.cluster.reconcile","datacontenttype":"application/json","data":{"generation":3,"href":"/api/hyperfleet/v1/clusters/c1?x=\u003c\u0026\u003e","id":"c1","ratio":2}}"#;
    assert_eq!(String::from_utf8_lossy(&msg.data), golden);
    // Exactly: persistent, the one header, and nothing else (no content type).
    assert_eq!(msg.properties, watermill_properties(id));
    assert_eq!(msg.properties.content_type(), &None);
    assert_eq!(msg.exchange.as_str(), topic);
    assert_eq!(msg.routing_key.as_str(), "");

    // Durable fanout: an equivalent declare succeeds, a conflicting one is refused.
    redeclare(&rig.conn, &topic, ExchangeKind::Fanout)
        .await
        .expect("durable fanout exchange");
    let conflict = redeclare(&rig.conn, &topic, ExchangeKind::Direct).await;
    assert!(
        conflict.is_err(),
        "a direct declare of a fanout exchange must fail"
    );

    publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test]
async fn routing_follows_exchange_type_and_routing_key() {
    let mut rig = rig().await;
    let headers_match_all = || {
        let mut args = FieldTable::default();
        args.insert("x-match".into(), AMQPValue::LongString("all".into()));
        args
    };
    // (type, lapin kind, routing_key, binding that matches, binding that does not)
    let cases: [(ExchangeType, ExchangeKind, &str, &str, Option<&str>); 4] = [
        (
            ExchangeType::Topic,
            ExchangeKind::Topic,
            "hyperfleet.cluster.reconcile",
            "hyperfleet.#",
            Some("other.#"),
        ),
        (
            ExchangeType::Direct,
            ExchangeKind::Direct,
            "reconcile",
            "reconcile",
            Some("other"),
        ),
        (
            ExchangeType::Fanout,
            ExchangeKind::Fanout,
            "ignored",
            "",
            None,
        ),
        (ExchangeType::Headers, ExchangeKind::Headers, "", "", None),
    ];
    for (ty, kind, routing_key, good, bad) in cases {
        let topic = rig.exchange(ty.as_str());
        let cfg = RabbitConfig {
            routing_key: routing_key.to_owned(),
            ..rabbit_cfg(RABBIT_URL, ty, true)
        };
        rig.declare(&topic, kind.clone()).await;
        let args = if ty == ExchangeType::Headers {
            headers_match_all()
        } else {
            FieldTable::default()
        };
        let good_queue = rig.bind(&topic, good, args).await;
        let bad_queue = match bad {
            Some(key) => Some(rig.bind(&topic, key, FieldTable::default()).await),
            None => None,
        };
        let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
            .await
            .expect("connect");
        let ev = event(1);
        all_ok(&publisher.publish_batch(std::slice::from_ref(&ev)).await);
        let msg = rig.next(&good_queue).await;
        assert_eq!(msg.data, ev.to_bytes(), "{ty:?}");
        assert_eq!(msg.routing_key.as_str(), routing_key, "{ty:?}");
        // Confirmed means routed: a queue that does not match has nothing, deterministically.
        if let Some(queue) = bad_queue {
            assert!(
                rig.try_next(&queue).await.is_none(),
                "{ty:?}: {routing_key} must not reach the other queue"
            );
        }
        redeclare(&rig.conn, &topic, kind)
            .await
            .unwrap_or_else(|e| panic!("{ty:?} exchange: {e}"));
        publisher.close().await.expect("close");
    }
    rig.cleanup().await;
}

#[tokio::test]
async fn static_exchange_overrides_topic() {
    let mut rig = rig().await;
    let topic = rig.exchange("unused-topic");
    let fixed = rig.exchange("static");
    let cfg = RabbitConfig {
        exchange: fixed.clone(),
        ..rabbit_cfg(RABBIT_URL, ExchangeType::Topic, true)
    };
    rig.declare(&fixed, ExchangeKind::Topic).await;
    let queue = rig.bind(&fixed, "#", FieldTable::default()).await;
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    assert_eq!(publisher.exchange(), fixed);
    all_ok(&publisher.publish_batch(&[event(7)]).await);
    assert_eq!(rig.next(&queue).await.exchange.as_str(), fixed);
    // The topic-named exchange was never declared.
    let ch = rig.conn.create_channel().await.expect("channel");
    let passive = ExchangeDeclareOptions {
        passive: true,
        ..Default::default()
    };
    let probe = ch
        .exchange_declare(
            topic.as_str().into(),
            ExchangeKind::Topic,
            passive,
            FieldTable::default(),
        )
        .await;
    assert!(probe.is_err(), "exchange {topic} must not exist");
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test]
async fn batches_keep_order_with_and_without_confirms() {
    let mut rig = rig().await;
    for confirm in [true, false] {
        let topic = rig.exchange(if confirm { "confirm-on" } else { "confirm-off" });
        rig.declare(&topic, ExchangeKind::Fanout).await;
        let queue = rig.bind(&topic, "", FieldTable::default()).await;
        let cfg = rabbit_cfg(RABBIT_URL, ExchangeType::Fanout, confirm);
        let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
            .await
            .expect("connect");
        // A full page: more than join_all's small-batch path, so the order is tested at scale.
        let events: Vec<Event> = (0..100).map(event).collect();
        let results = publisher.publish_batch(&events).await;
        assert_eq!(results.len(), events.len());
        all_ok(&results);
        for ev in &events {
            let msg = rig.next(&queue).await;
            assert_eq!(msg.data, ev.to_bytes(), "confirm={confirm}");
            assert_eq!(msg.properties, watermill_properties(ev.id));
        }
        assert!(publisher.publish_batch::<Event>(&[]).await.is_empty());
        publisher.close().await.expect("close waits for confirms");
        let after = publisher.publish_batch(&[event(99)]).await;
        assert!(
            matches!(after.as_slice(), [Err(PublishError::Publish(_))]),
            "{after:?}"
        );
    }
    rig.cleanup().await;
}

#[tokio::test]
async fn conflicting_exchange_type_is_a_publish_error() {
    let mut rig = rig().await;
    let topic = rig.exchange("conflict");
    rig.declare(&topic, ExchangeKind::Direct).await;
    let cfg = rabbit_cfg(RABBIT_URL, ExchangeType::Topic, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    let results = publisher.publish_batch(&[event(1), event(2)]).await;
    for r in &results {
        match r {
            Err(PublishError::Declare { exchange, reason }) => {
                assert_eq!(exchange, &topic);
                assert!(reason.contains("PRECONDITION_FAILED"), "{reason}");
            }
            other => panic!("expected a declare error, got {other:?}"),
        }
    }
    assert_eq!(
        results[0].as_ref().map_err(PublishError::error_type),
        Err("publish_error")
    );
    // The connection survives a channel error; the next attempt waits for the backoff.
    let again = publisher.publish_batch(&[event(3)]).await;
    assert!(matches!(
        again.as_slice(),
        [Err(
            PublishError::Unavailable { .. } | PublishError::Declare { .. }
        )]
    ));
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

/// A closed channel's number is not used again on its connection, so refused declares use up
/// the connection's `channel_max`; the publisher then starts a new connection instead of
/// failing for good, and publishes once the conflict is gone.
#[tokio::test]
async fn a_connection_out_of_channel_numbers_is_replaced() {
    let mut rig = rig().await;
    let topic = rig.exchange("channels");
    rig.declare(&topic, ExchangeKind::Direct).await;
    let url = format!("{RABBIT_URL}?channel_max=2");
    let cfg = rabbit_cfg(&url, ExchangeType::Topic, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    // More refused declares than the connection has channel numbers.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut refused = 0;
    while refused < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {refused} declares refused"
        );
        match publisher.publish_batch(&[event(refused)]).await.as_slice() {
            [Err(PublishError::Declare { .. })] => refused += 1,
            [Err(PublishError::Unavailable { .. } | PublishError::Connect(_))] => {}
            other => panic!("expected a declare error, got {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    rig.ch
        .exchange_delete(topic.as_str().into(), ExchangeDeleteOptions::default())
        .await
        .expect("delete");
    rig.declare(&topic, ExchangeKind::Topic).await;
    loop {
        let results = publisher.publish_batch(&[event(99)]).await;
        if results[0].is_ok() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never published after the conflict went: {results:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

// ---------------------------------------------------------------------------------------------
// Failures and recovery.

async fn wait_disconnected(publisher: &RabbitPublisher) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while publisher.is_connected() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "publisher never noticed the cut connection"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn reconnects_after_the_connection_drops() {
    for confirm in [true, false] {
        let mut rig = rig().await;
        let proxy = Proxy::start().await;
        let topic = rig.exchange("reconnect");
        rig.declare(&topic, ExchangeKind::Fanout).await;
        let queue = rig.bind(&topic, "", FieldTable::default()).await;
        let cfg = rabbit_cfg(&proxy.url(), ExchangeType::Fanout, confirm);
        let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
            .await
            .expect("connect via proxy");
        let before = event(1);
        all_ok(&publisher.publish_batch(std::slice::from_ref(&before)).await);
        assert_eq!(rig.next(&queue).await.data, before.to_bytes());

        proxy.cut();
        wait_disconnected(&publisher).await;
        let during = publisher.publish_batch(&[event(2), event(3)]).await;
        assert_eq!(during.len(), 2);
        for r in &during {
            assert!(
                matches!(
                    r,
                    Err(PublishError::Connect(_) | PublishError::Unavailable { .. })
                ),
                "confirm={confirm}: {r:?}"
            );
        }

        proxy.restore();
        let after = event(4);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            match publisher
                .publish_batch(std::slice::from_ref(&after))
                .await
                .pop()
            {
                Some(Ok(())) => break,
                other => assert!(
                    tokio::time::Instant::now() < deadline,
                    "never recovered: {other:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(publisher.is_connected());
        assert_eq!(
            rig.next(&queue).await.data,
            after.to_bytes(),
            "confirm={confirm}"
        );
        publisher.close().await.expect("close");
        rig.cleanup().await;
    }
}

#[tokio::test]
async fn backoff_makes_publishes_fail_fast_while_down() {
    let mut rig = rig().await;
    let proxy = Proxy::start().await;
    let topic = rig.exchange("backoff");
    let cfg = rabbit_cfg(&proxy.url(), ExchangeType::Fanout, true);
    let opts = RabbitOptions {
        backoff_initial: Duration::from_secs(3600),
        backoff_max: Duration::from_secs(7200),
        ..quick()
    };
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, opts)
        .await
        .expect("connect via proxy");
    all_ok(&publisher.publish_batch(&[event(1)]).await);
    proxy.cut();
    wait_disconnected(&publisher).await;
    // The first publish after the loss tries to reconnect at once, and fails.
    let first = publisher.publish_batch(&[event(2)]).await;
    assert!(
        matches!(first.as_slice(), [Err(PublishError::Connect(_))]),
        "{first:?}"
    );
    // Within the backoff window no connection is attempted at all.
    proxy.restore();
    let second = publisher.publish_batch(&[event(3)]).await;
    match second.as_slice() {
        [Err(e @ PublishError::Unavailable { retry_in, .. })] => {
            assert!(*retry_in > Duration::from_secs(60), "{e}");
            assert!(e.to_string().starts_with("broker unavailable"), "{e}");
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    assert!(!publisher.is_connected());
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test]
async fn a_silent_connection_times_out_and_is_replaced() {
    let mut rig = rig().await;
    let proxy = Proxy::start().await;
    let topic = rig.exchange("half-open");
    rig.declare(&topic, ExchangeKind::Fanout).await;
    let queue = rig.bind(&topic, "", FieldTable::default()).await;
    let cfg = rabbit_cfg(&proxy.url(), ExchangeType::Fanout, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect via proxy");
    all_ok(&publisher.publish_batch(&[event(1)]).await);
    rig.next(&queue).await;

    // The broker never hears the publishes, so no confirm comes back: the batch gives up at
    // the bound instead of waiting forever, and the connection is abandoned. The short bound is
    // the faulty step's alone.
    proxy.freeze(true);
    publisher.set_publish_timeout(Duration::from_millis(300));
    let stalled = publisher.publish_batch(&[event(2), event(3)]).await;
    publisher.set_publish_timeout(RabbitOptions::default().publish_timeout);
    for r in &stalled {
        assert!(
            matches!(
                r,
                Err(PublishError::ConfirmTimeout(_) | PublishError::Publish(_))
            ),
            "{r:?}"
        );
    }
    assert!(!publisher.is_connected());

    // The old link's held bytes may still reach the broker once thawed; skip past them.
    proxy.freeze(false);
    let ev = event(4);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match publisher
            .publish_batch(std::slice::from_ref(&ev))
            .await
            .pop()
        {
            Some(Ok(())) => break,
            other => assert!(
                tokio::time::Instant::now() < deadline,
                "never recovered: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    while rig.next(&queue).await.data != ev.to_bytes() {}
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test]
async fn recovers_when_the_broker_closes_the_channel() {
    let mut rig = rig().await;
    let topic = rig.exchange("channel-close");
    rig.declare(&topic, ExchangeKind::Fanout).await;
    let queue = rig.bind(&topic, "", FieldTable::default()).await;
    let cfg = rabbit_cfg(RABBIT_URL, ExchangeType::Fanout, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    all_ok(&publisher.publish_batch(&[event(1)]).await);
    rig.next(&queue).await;

    // Deleting the exchange behind the publisher's back: its next publish makes the broker
    // close the channel (404 NOT_FOUND), which fails that publish's confirm.
    rig.ch
        .exchange_delete(topic.as_str().into(), ExchangeDeleteOptions::default())
        .await
        .expect("delete");
    let lost = publisher.publish_batch(&[event(2)]).await;
    assert!(
        matches!(
            lost.as_slice(),
            [Err(PublishError::Unconfirmed(_) | PublishError::Publish(_))]
        ),
        "{lost:?}"
    );

    rig.declare(&topic, ExchangeKind::Fanout).await;
    let queue = rig.bind(&topic, "", FieldTable::default()).await;
    let ev = event(3);
    all_ok(&publisher.publish_batch(std::slice::from_ref(&ev)).await);
    assert_eq!(rig.next(&queue).await.data, ev.to_bytes());
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

#[tokio::test]
async fn startup_connection_errors_are_fatal_and_masked() {
    let rig = rig().await;
    // Nothing listens on port 1; wrong credentials are refused by the real broker.
    for url in [
        "amqp://guest:s3cret@127.0.0.1:1/",
        "amqp://guest:s3cret@127.0.0.1:5672/",
    ] {
        let cfg = rabbit_cfg(url, ExchangeType::Fanout, false);
        match RabbitPublisher::connect(&cfg, "sentinel-test-never", quick()).await {
            Err(e @ BrokerError::Connect { .. }) => {
                let text = e.to_string();
                assert!(text.contains("guest:****@127.0.0.1"), "{text}");
                assert!(!text.contains("s3cret"), "{text}");
            }
            Err(e) => panic!("{url}: expected a connect error, got {e}"),
            Ok(_) => panic!("{url}: connected"),
        }
    }
    let cfg = rabbit_cfg(RABBIT_URL, ExchangeType::Fanout, false);
    let empty = RabbitPublisher::connect(&cfg, "", quick())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        empty.as_deref().is_some_and(|e| e.contains("empty")),
        "{empty:?}"
    );
    let long = RabbitPublisher::connect(&cfg, &"x".repeat(256), quick())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        long.as_deref().is_some_and(|e| e.contains("255")),
        "{long:?}"
    );
    rig.cleanup().await;
}

#[tokio::test]
async fn connect_dispatches_on_broker_type() {
    let mut rig = rig().await;
    let topic = rig.exchange("dispatch");
    let parse = |yaml: &str| config::parse("test.yaml", yaml, &|_| None).expect("valid config");
    let rabbit = parse(&format!(
        "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: {RABBIT_URL}\n"
    ));
    let mut publisher = broker::connect(&rabbit, &topic).await.expect("connect");
    assert!(matches!(publisher, Publisher::Rabbit(_)));
    assert!(publisher.is_connected());
    publisher.publish(&event(1)).await.expect("publish");
    publisher.close().await.expect("close");

    let stdout = parse("broker:\n  type: stdout\n");
    assert!(matches!(
        broker::connect(&stdout, &topic).await,
        Ok(Publisher::Stdout(_))
    ));
    rig.cleanup().await;
}

#[tokio::test]
async fn stdout_publisher_writes_json_lines() {
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let out = Shared::default();
    let mut publisher = Publisher::Stdout(StdoutPublisher::to_writer(Box::new(out.clone())));
    let events = [event(1), event(2)];
    all_ok(&publisher.publish_batch(&events).await);
    let mut want = events[0].to_bytes();
    want.push(b'\n');
    want.extend(events[1].to_bytes());
    want.push(b'\n');
    assert_eq!(*out.0.lock().expect("buffer"), want);
    publisher.close().await.expect("flush");
}

// ---------------------------------------------------------------------------------------------
// broker.yaml.

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn parse_with(yaml: &str, env: &[(&str, &str)]) -> Result<BrokerConfig, BrokerError> {
    config::parse("broker.yaml", yaml, &env_of(env))
}

/// The problems of an invalid config, or a panic naming what was expected.
fn problems(yaml: &str, env: &[(&str, &str)]) -> Vec<String> {
    match parse_with(yaml, env) {
        Err(BrokerError::Invalid { problems, .. }) => problems,
        other => panic!("expected an invalid config for {yaml:?}, got {other:?}"),
    }
}

const FULL: &str = r#"
log_config: true
broker:
  type: rabbitmq
  rabbitmq:
    url: amqp://user:pa55@rabbit:5672/prod
    exchange: hyperfleet
    exchange_type: topic
    routing_key: hyperfleet.reconcile
    publisher_confirm: true
    queue: q
    prefetch_count: 5
    prefetch_size: 1024
    consumer_tag: tag
  googlepubsub:
    project_id: proj
    ack_deadline_seconds: 60
    message_retention_duration: 604800s
    expiration_ttl: 31d
    enable_message_ordering: true
    retry_min_backoff: 10s
    retry_max_backoff: 600s
    dead_letter_topic: dlq
    dead_letter_max_attempts: 5
    topic_retention_duration: 1d
    max_outstanding_messages: 1000
    max_outstanding_bytes: 104857600
    num_goroutines: 10
    create_topic_if_missing: true
    create_subscription_if_missing: false
subscriber:
  parallelism: 4
"#;

#[test]
fn every_key_is_read() {
    let cfg = parse_with(FULL, &[]).expect("valid");
    assert_eq!(cfg.origin, "broker.yaml");
    assert!(cfg.log_config);
    assert_eq!(cfg.kind, BrokerKind::RabbitMq);
    let r = &cfg.rabbitmq;
    assert_eq!(
        *r,
        RabbitConfig {
            url: "amqp://user:pa55@rabbit:5672/prod".into(),
            exchange: "hyperfleet".into(),
            exchange_type: ExchangeType::Topic,
            routing_key: "hyperfleet.reconcile".into(),
            publisher_confirm: true,
            queue: "q".into(),
            prefetch_count: 5,
            prefetch_size: 1024,
            consumer_tag: "tag".into(),
        }
    );
    let g = &cfg.googlepubsub;
    assert_eq!(
        (g.project_id.as_str(), g.ack_deadline_seconds),
        ("proj", 60)
    );
    assert_eq!(g.message_retention_duration, "604800s");
    assert_eq!(
        (g.expiration_ttl.as_str(), g.enable_message_ordering),
        ("31d", true)
    );
    assert_eq!(
        (g.retry_min_backoff.as_str(), g.retry_max_backoff.as_str()),
        ("10s", "600s")
    );
    assert_eq!(
        (g.dead_letter_topic.as_str(), g.dead_letter_max_attempts),
        ("dlq", 5)
    );
    assert_eq!(g.topic_retention_duration, "1d");
    assert_eq!(
        (
            g.max_outstanding_messages,
            g.max_outstanding_bytes,
            g.num_goroutines
        ),
        (1000, 104_857_600, 10)
    );
    assert_eq!(
        (g.create_topic_if_missing, g.create_subscription_if_missing),
        (true, false)
    );
    assert_eq!(cfg.subscriber.parallelism, 4);
    // The googlepubsub section is valid too: switching the type is all it takes.
    let pubsub = parse_with(FULL, &[("BROKER_TYPE", "googlepubsub")]).expect("valid");
    assert_eq!(pubsub.kind, BrokerKind::GooglePubSub);
}

#[test]
fn defaults() {
    let cfg = parse_with(
        "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://localhost\n",
        &[],
    )
    .expect("valid");
    assert!(!cfg.log_config);
    assert_eq!(
        cfg.rabbitmq,
        RabbitConfig {
            url: "amqp://localhost".into(),
            ..Default::default()
        }
    );
    assert_eq!(cfg.rabbitmq.exchange_type, ExchangeType::Fanout);
    // Confirms are on unless turned off (Go's default is off).
    assert!(cfg.rabbitmq.publisher_confirm);
    let off = parse_with(
        "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n    publisher_confirm: false\n",
        &[],
    )
    .expect("valid");
    assert!(!off.rabbitmq.publisher_confirm);
    assert_eq!(cfg.subscriber.parallelism, 10);
    let empty_type = parse_with(
        "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n    exchange_type: ''\n    exchange:\n",
        &[],
    )
    .expect("valid");
    assert_eq!(empty_type.rabbitmq.exchange_type, ExchangeType::Fanout);
    assert_eq!(empty_type.rabbitmq.exchange, "");
}

#[test]
fn env_overrides_win_over_the_file() {
    let env = [
        ("BROKER_TYPE", "rabbitmq"),
        ("BROKER_RABBITMQ_URL", "amqps://env:pw@envhost:5671/"),
        ("BROKER_RABBITMQ_EXCHANGE", "env-exchange"),
        ("BROKER_RABBITMQ_EXCHANGE_TYPE", "direct"),
        ("BROKER_RABBITMQ_ROUTING_KEY", "env.key"),
        ("BROKER_RABBITMQ_PUBLISHER_CONFIRM", "false"),
        ("LOG_CONFIG", "false"),
        ("BROKER_RABBITMQ_PREFETCH_COUNT", "7"),
        ("SUBSCRIBER_PARALLELISM", "3"),
        ("BROKER_GOOGLEPUBSUB_PROJECT_ID", ""), // empty: unset, as in viper
    ];
    let cfg = parse_with(FULL, &env).expect("valid");
    let r = &cfg.rabbitmq;
    assert_eq!(r.url, "amqps://env:pw@envhost:5671/");
    assert_eq!(
        (r.exchange.as_str(), r.exchange_type),
        ("env-exchange", ExchangeType::Direct)
    );
    assert_eq!(
        (r.routing_key.as_str(), r.publisher_confirm),
        ("env.key", false)
    );
    assert_eq!((r.prefetch_count, r.queue.as_str()), (7, "q"));
    assert!(!cfg.log_config);
    assert_eq!(cfg.subscriber.parallelism, 3);
    assert_eq!(cfg.googlepubsub.project_id, "proj");
    let stdout =
        parse_with(FULL, &[("BROKER_TYPE", "stdout"), ("LOG_CONFIG", "1")]).expect("valid");
    assert_eq!((stdout.kind, stdout.log_config), (BrokerKind::Stdout, true));
}

/// (broker.yaml, environment, a problem the result must contain)
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn invalid_configs_name_every_problem() {
    let cases: &[Case] = &[
        (
            "broker:\n  type: rabbitmq\n",
            &[],
            "broker.rabbitmq.url is required",
        ),
        (
            "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: http://h\n",
            &[],
            "must start with 'amqp://' or 'amqps://'",
        ),
        (
            "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://u:pw@h:99999/\n",
            &[],
            "broker.rabbitmq.url amqp://u:****@h:99999/",
        ),
        (
            "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n    exchange_type: x\n",
            &[],
            "exchange_type must be one of: direct, fanout, topic, headers; got 'x'",
        ),
        (
            "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n    prefetch_count: -1\n",
            &[],
            "broker.rabbitmq.prefetch_count must be non-negative",
        ),
        (
            "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n    prefetch_size: many\n",
            &[],
            "broker.rabbitmq.prefetch_size must be an integer, got 'many'",
        ),
        (
            "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n",
            &[("BROKER_RABBITMQ_PUBLISHER_CONFIRM", "yes")],
            "BROKER_RABBITMQ_PUBLISHER_CONFIRM must be a boolean (true or false), got 'yes'",
        ),
        (
            "broker:\n  type: rabbitmg\n",
            &[],
            "unsupported broker type 'rabbitmg', expected rabbitmq, googlepubsub or stdout (did you mean 'rabbitmq'?)",
        ),
        (
            "broker: {}\n",
            &[],
            "broker.type is required: rabbitmq, googlepubsub or stdout (or set BROKER_TYPE)",
        ),
        (
            "broker:\n  type: [a]\n",
            &[],
            "broker.type must be a scalar",
        ),
        ("broker: 3\n", &[], "broker must be a mapping"),
        ("- a\n", &[], "the document must be a mapping"),
        (
            "broker:\n  type: stdout\n  1: x\n",
            &[],
            "broker: keys must be strings, got 1",
        ),
        ("broker: {type: stdout\n", &[], "not valid YAML"),
        (
            "broker:\n  type: googlepubsub\n",
            &[],
            "broker.googlepubsub.project_id is required",
        ),
        (
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: p\n    ack_deadline_seconds: 5\n",
            &[],
            "ack_deadline_seconds must be between 10 and 600 seconds",
        ),
        (
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: p\n    expiration_ttl: soon\n",
            &[],
            "broker.googlepubsub.expiration_ttl: invalid duration 'soon'",
        ),
        (
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: p\n    message_retention_duration: 1m\n",
            &[],
            "message_retention_duration must be between 10m and 31d",
        ),
        (
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: p\n    retry_min_backoff: 60s\n    retry_max_backoff: 10s\n",
            &[],
            "retry_min_backoff must be less than or equal to retry_max_backoff",
        ),
        (
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: p\n    dead_letter_max_attempts: 200\n",
            &[],
            "dead_letter_max_attempts must be between 5 and 100",
        ),
        (
            "broker:\n  type: googlepubsub\n  googlepubsub:\n    project_id: p\n    num_goroutines: -2\n",
            &[],
            "num_goroutines must be non-negative",
        ),
        (
            "broker:\n  type: stdout\nsubscriber:\n  parallelism: -1\n",
            &[],
            "subscriber.parallelism must be non-negative",
        ),
    ];
    for (yaml, env, want) in cases {
        let found = problems(yaml, env);
        assert!(
            found.iter().any(|p| p.contains(want)),
            "{yaml:?}: want {want:?} among {found:#?}"
        );
        assert!(
            found.iter().all(|p| !p.contains("pw@")),
            "password leaked: {found:#?}"
        );
    }
    // All problems at once (an unknown key is not one), and the error renders one per line.
    let many = "broker:\n  type: rabbitmq\n  rabbitmq:\n    exchange_type: x\n    prefetch_count: -1\n    queu: q\n    prefetch_size: -1\n";
    assert_eq!(problems(many, &[]).len(), 4, "{:#?}", problems(many, &[]));
    let text = parse_with(many, &[])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        text.starts_with("invalid broker configuration (broker.yaml):\n  "),
        "{text}"
    );
    assert_eq!(text.lines().count(), 5, "{text}");
}

#[test]
fn weakly_typed_values_are_accepted_like_viper() {
    let yaml = "broker:\n  type: rabbitmq\n  rabbitmq:\n    url: amqp://h\n    publisher_confirm: 'true'\n    prefetch_count: '5'\n    exchange: 42\n";
    let cfg = parse_with(yaml, &[]).expect("valid");
    assert!(cfg.rabbitmq.publisher_confirm);
    assert_eq!(
        (cfg.rabbitmq.prefetch_count, cfg.rabbitmq.exchange.as_str()),
        (5, "42")
    );
    // An empty file with the type from the environment.
    let env_only = parse_with("", &[("BROKER_TYPE", "stdout")]).expect("valid");
    assert_eq!(env_only.kind, BrokerKind::Stdout);
}

#[test]
fn masked_config_hides_the_password() {
    let cfg = parse_with(FULL, &[]).expect("valid");
    let masked = cfg.masked();
    assert!(
        masked.contains(r#""url":"amqp://user:****@rabbit:5672/prod""#),
        "{masked}"
    );
    assert!(!masked.contains("pa55"), "{masked}");
    assert!(masked.contains(r#""type":"rabbitmq""#), "{masked}");
    assert!(masked.contains(r#""exchange_type":"topic""#), "{masked}");
    assert!(masked.contains(r#""log_config":true"#), "{masked}");
    assert_eq!(
        sentinel::common::redact::mask_url("amqp://guest:guest@host/"),
        "amqp://guest:****@host/"
    );
}

#[test]
fn load_finds_the_file_or_explains_why_not() {
    let dir = std::env::temp_dir().join(unique("config"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("broker.yaml");
    std::fs::write(&file, "log_config: true\nbroker:\n  type: stdout\n").expect("write");
    let path = file.display().to_string();

    let cfg = config::load(&env_of(&[("BROKER_CONFIG_FILE", &path)])).expect("load");
    assert_eq!(
        (cfg.kind, cfg.origin.as_str(), cfg.log_config),
        (BrokerKind::Stdout, path.as_str(), true)
    );
    let overridden = config::load(&env_of(&[
        ("BROKER_CONFIG_FILE", &path),
        ("LOG_CONFIG", "false"),
    ]))
    .expect("load");
    assert!(!overridden.log_config);

    // A named file that does not exist is an error, even with other variables set.
    let missing = dir.join("absent.yaml").display().to_string();
    let err = config::load(&env_of(&[
        ("BROKER_CONFIG_FILE", &missing),
        ("BROKER_TYPE", "stdout"),
    ]));
    assert!(
        matches!(&err, Err(BrokerError::Read { path, .. }) if path.display().to_string() == missing),
        "{err:?}"
    );

    // The first existing candidate wins; none at all (and no BROKER_* variable) is an error
    // naming every path tried.
    let (first, second) = (dir.join("first.yaml"), dir.join("second.yaml"));
    std::fs::write(&second, "broker:\n  type: stdout\n").expect("write");
    let found = config::load_from(&[first.clone(), second.clone()], &env_of(&[])).expect("load");
    assert_eq!(found.origin, second.display().to_string());
    let absent = dir.join("absent.yaml");
    match config::load_from(
        &[first.clone(), absent.clone()],
        &env_of(&[("LOG_CONFIG", "1")]),
    ) {
        Err(e @ BrokerError::NotFound { .. }) => {
            let text = e.to_string();
            let tried = format!("{}, {}", first.display(), absent.display());
            assert!(text.contains(&tried), "{text}");
            assert!(text.contains("BROKER_CONFIG_FILE"), "{text}");
        }
        other => panic!("expected not found, got {other:?}"),
    }
    let paths = config::candidate_paths(&env_of(&[]));
    assert_eq!(
        paths.last().map(|p| p.display().to_string()),
        Some("broker.yaml".to_owned())
    );
    assert_eq!(paths.len(), 2, "{paths:?}");

    // No file, but the environment configures the broker.
    let env = env_of(&[
        ("BROKER_TYPE", "rabbitmq"),
        ("BROKER_RABBITMQ_URL", RABBIT_URL),
    ]);
    let from_env = config::load_from(&[absent], &env);
    let from_env = from_env.expect("env-only config");
    assert_eq!(
        (from_env.origin.as_str(), from_env.rabbitmq.url.as_str()),
        ("environment", RABBIT_URL)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Operator parity (issue 10): a short heartbeat, so a black-holed broker is noticed.

#[tokio::test]
async fn the_heartbeat_is_go_amqp091_s_unless_the_url_sets_one() {
    let topic = unique("heartbeat");
    let cfg = rabbit_cfg(RABBIT_URL, ExchangeType::Fanout, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    // RabbitMQ proposes 60 s; the lower of the two wins.
    assert_eq!(publisher.heartbeat(), Some(10));
    publisher.close().await.expect("close");
    let cfg = rabbit_cfg(
        &format!("{RABBIT_URL}?heartbeat=3"),
        ExchangeType::Fanout,
        true,
    );
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    assert_eq!(publisher.heartbeat(), Some(3));
    publisher.close().await.expect("close");
}

/// An idle publisher keeps its connection: it sends heartbeats when it has nothing else to
/// write, so the broker (which drops a client silent for two intervals) keeps it open.
#[tokio::test]
async fn an_idle_connection_is_kept_open_by_heartbeats() {
    let mut rig = rig().await;
    let topic = rig.exchange("idle");
    rig.declare(&topic, ExchangeKind::Fanout).await;
    let queue = rig.bind(&topic, "", FieldTable::default()).await;
    let cfg = rabbit_cfg(
        &format!("{RABBIT_URL}?heartbeat=1"),
        ExchangeType::Fanout,
        true,
    );
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect");
    let liveness = publisher.liveness();
    all_ok(&publisher.publish_batch(&[event(1)]).await);
    rig.next(&queue).await;
    // Four intervals of silence from our side but for heartbeats.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(publisher.is_connected(), "{:?}", liveness.problem());
    assert_eq!(liveness.problem(), None);
    let after = event(2);
    all_ok(&publisher.publish_batch(std::slice::from_ref(&after)).await);
    assert_eq!(rig.next(&queue).await.data, after.to_bytes());
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

/// As the Go broker library (viper) does, unknown keys are ignored, not fatal: the Go repo's own
/// example broker.yaml has a `publisher:` section no setting reads. They are listed (with a
/// suggestion) for the one WARN the loader logs.
#[test]
fn unknown_keys_are_ignored_and_listed() {
    let yaml = "broker:\n  type: rabbitmq\n  rabbit: {}\n  rabbitmq:\n    url: amqp://guest:guest@localhost:5672/\n    \
                exchange_type: topic\n    exchnage: e\npublisher:\nsubscriber:\n  parallelism: 1\n  \
                paralelism: 2\nlog_config: false\n";
    let cfg = parse_with(yaml, &[]).expect("unknown keys are not fatal");
    assert_eq!(cfg.kind, BrokerKind::RabbitMq);
    assert_eq!(cfg.rabbitmq.exchange_type, ExchangeType::Topic);
    assert_eq!(cfg.subscriber.parallelism, 1);
    assert_eq!(
        cfg.ignored_keys,
        [
            "publisher: unknown key",
            "broker.rabbit: unknown key (did you mean 'rabbitmq'?)",
            "broker.rabbitmq.exchnage: unknown key (did you mean 'exchange'?)",
            "subscriber.paralelism: unknown key (did you mean 'parallelism'?)",
        ]
    );
    let clean = parse_with("broker:\n  type: stdout\n", &[]).expect("valid");
    assert!(clean.ignored_keys.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Readiness follows `connection.blocked` (the broker's resource alarm) end to end.

/// Polls `liveness` until its problem is `want`, for at most 10 s.
async fn wait_problem(liveness: &broker::Liveness, want: Option<&str>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while liveness.problem().as_deref() != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "liveness stayed {:?}, expected {want:?}",
            liveness.problem()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn readiness_follows_connection_blocked_and_unblocked() {
    let mut rig = rig().await;
    let proxy = Proxy::start().await;
    let topic = rig.exchange("blocked");
    rig.declare(&topic, ExchangeKind::Fanout).await;
    let queue = rig.bind(&topic, "", FieldTable::default()).await;
    let cfg = rabbit_cfg(&proxy.url(), ExchangeType::Fanout, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connect via proxy");
    all_ok(&publisher.publish_batch(&[event(1)]).await);
    rig.next(&queue).await;
    let liveness = publisher.liveness();
    assert_eq!(liveness.problem(), None);

    // The handshake is done and the connection idle: the broker "raises its memory alarm".
    proxy.inject_blocked("low on memory");
    wait_problem(
        &liveness,
        Some("RabbitMQ connection is blocked by the broker: low on memory"),
    )
    .await;
    assert!(publisher.is_connected(), "blocked is not disconnected");

    proxy.inject_unblocked();
    wait_problem(&liveness, None).await;
    // The injected frames left the stream intact: the connection still publishes.
    let after = event(2);
    all_ok(&publisher.publish_batch(std::slice::from_ref(&after)).await);
    assert_eq!(rig.next(&queue).await.data, after.to_bytes());
    assert!(publisher.is_connected());
    publisher.close().await.expect("close");
    rig.cleanup().await;
}

// ---- google pub/sub (against Google's emulator, started by tests/common/pubsub.rs) ----

use crate::common::pubsub;
use sentinel::broker::config::PubSubConfig;
use sentinel::broker::{PubSubOptions, PubSubPublisher};

fn pubsub_cfg(create_topic_if_missing: bool, enable_message_ordering: bool) -> PubSubConfig {
    PubSubConfig {
        project_id: pubsub::PROJECT.to_string(),
        create_topic_if_missing,
        enable_message_ordering,
        ..Default::default()
    }
}

fn pubsub_options(emulator: &pubsub::Emulator) -> PubSubOptions {
    PubSubOptions {
        emulator_host: Some(emulator.host()),
        probe_interval: Duration::from_millis(100),
        ..Default::default()
    }
}

/// An event with its resource id as the ordering key, as the daemon publishes it.
struct Keyed(Event, String);

impl sentinel::broker::Outbound for Keyed {
    fn event(&self) -> &Event {
        &self.0
    }

    fn ordering_key(&self) -> Option<&str> {
        Some(&self.1)
    }
}

fn keyed(events: &[Event]) -> Vec<Keyed> {
    events
        .iter()
        .map(|e| {
            Keyed(
                e.clone(),
                e.data["id"].as_str().expect("event data id").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn pubsub_page_is_the_rabbitmq_body_with_the_watermill_attribute() {
    let emulator = pubsub::shared();
    let topic = pubsub::unique("page");
    emulator.create_topic(&topic).await;
    let sub = format!("{topic}-adapter");
    emulator.subscribe(&topic, &sub, false).await;
    let mut publisher =
        PubSubPublisher::connect(&pubsub_cfg(false, false), &topic, pubsub_options(emulator))
            .await
            .expect("pub/sub clients");
    assert_eq!(
        publisher.topic(),
        format!("projects/{}/topics/{topic}", pubsub::PROJECT)
    );
    let events: Vec<Event> = (0..25).map(event).collect();
    // Ordering is off: the ids are not used as ordering keys.
    all_ok(&publisher.publish_batch(&keyed(&events)).await);
    let pulled = emulator
        .pull_exactly(&sub, events.len(), Duration::from_secs(30))
        .await;
    let by_id: HashMap<String, &pubsub::Pulled> = pulled
        .iter()
        .map(|m| (m.attributes["_watermill_message_uuid"].clone(), m))
        .collect();
    assert_eq!(by_id.len(), events.len(), "one message per event");
    for e in &events {
        let m = by_id[&e.id.to_string()];
        assert_eq!(m.data, e.to_bytes(), "data of {}", e.id);
        let want: std::collections::BTreeMap<String, String> =
            [("_watermill_message_uuid".to_string(), e.id.to_string())].into();
        assert_eq!(m.attributes, want);
        assert_eq!(m.ordering_key, "");
        assert!(!m.message_id.is_empty());
    }
    // The same event through the RabbitMQ publisher's encoder: the very same bytes.
    let mut body = Vec::new();
    events[0].encode_into(&mut body);
    assert_eq!(by_id[&events[0].id.to_string()].data, body);
    publisher.close().await.expect("close");
    assert_eq!(
        publisher.liveness().problem().as_deref(),
        Some("google pub/sub publisher is closed")
    );
}

#[tokio::test]
async fn pubsub_missing_topic_fails_every_publish_until_it_exists() {
    let emulator = pubsub::shared();
    let topic = pubsub::unique("missing");
    let mut publisher =
        PubSubPublisher::connect(&pubsub_cfg(false, false), &topic, pubsub_options(emulator))
            .await
            .expect("pub/sub clients");
    let events = [event(1), event(2), event(3)];
    let full = format!("projects/{}/topics/{topic}", pubsub::PROJECT);
    for _ in 0..2 {
        let results = publisher.publish_batch(&events).await;
        assert_eq!(results.len(), events.len());
        for r in &results {
            assert_eq!(
                r,
                &Err(PublishError::TopicMissing {
                    topic: full.clone()
                })
            );
        }
    }
    assert_eq!(
        PublishError::TopicMissing {
            topic: full.clone()
        }
        .to_string(),
        format!(
            "topic '{full}' does not exist (create it, or set broker.googlepubsub.create_topic_if_missing)"
        )
    );
    assert!(!emulator.topic_exists(&topic).await, "not created");
    // Once someone creates it, the next publish (the next cycle) goes out.
    emulator.create_topic(&topic).await;
    let sub = format!("{topic}-adapter");
    emulator.subscribe(&topic, &sub, false).await;
    all_ok(&publisher.publish_batch(&events).await);
    assert_eq!(
        emulator
            .pull_exactly(&sub, events.len(), Duration::from_secs(30))
            .await
            .len(),
        3
    );
    publisher.close().await.expect("close");
}

#[tokio::test]
async fn pubsub_missing_topic_is_created_when_configured() {
    let emulator = pubsub::shared();
    let topic = pubsub::unique("create");
    let mut publisher =
        PubSubPublisher::connect(&pubsub_cfg(true, false), &topic, pubsub_options(emulator))
            .await
            .expect("pub/sub clients");
    assert!(!emulator.topic_exists(&topic).await);
    // Pub/Sub keeps messages only for subscriptions that exist when they are published, so
    // this first one is published to the new topic and heard by nobody.
    all_ok(&publisher.publish_batch(&[event(1)]).await);
    assert!(emulator.topic_exists(&topic).await, "created on first use");
    let sub = format!("{topic}-adapter");
    emulator.subscribe(&topic, &sub, false).await;
    let second = event(2);
    all_ok(&publisher.publish_batch(std::slice::from_ref(&second)).await);
    let pulled = emulator
        .pull_exactly(&sub, 1, Duration::from_secs(30))
        .await;
    assert_eq!(pulled[0].data, second.to_bytes());
    publisher.close().await.expect("close");
}

#[tokio::test]
async fn pubsub_ordering_key_is_the_resource_id_when_enabled() {
    let emulator = pubsub::shared();
    let topic = pubsub::unique("ordered");
    emulator.create_topic(&topic).await;
    let sub = format!("{topic}-adapter");
    emulator.subscribe(&topic, &sub, true).await;
    let mut publisher =
        PubSubPublisher::connect(&pubsub_cfg(false, true), &topic, pubsub_options(emulator))
            .await
            .expect("pub/sub clients");
    // Two events per resource, the second page after the first.
    let first: Vec<Event> = (0..4).map(event).collect();
    let second: Vec<Event> = (0..4).map(event).collect();
    all_ok(&publisher.publish_batch(&keyed(&first)).await);
    all_ok(&publisher.publish_batch(&keyed(&second)).await);
    let pulled = emulator
        .pull_exactly(&sub, 8, Duration::from_secs(30))
        .await;
    let mut per_key: HashMap<String, Vec<String>> = HashMap::new();
    for m in &pulled {
        let data: serde_json::Value = serde_json::from_slice(&m.data).expect("JSON");
        assert_eq!(m.ordering_key, data["data"]["id"].as_str().expect("id"));
        per_key
            .entry(m.ordering_key.clone())
            .or_default()
            .push(m.attributes["_watermill_message_uuid"].clone());
    }
    assert_eq!(per_key.len(), 4);
    for (i, (a, b)) in first.iter().zip(&second).enumerate() {
        let key = format!("cls-{i}");
        assert_eq!(
            per_key[&key],
            vec![a.id.to_string(), b.id.to_string()],
            "one resource's events in publish order"
        );
    }
    publisher.close().await.expect("close");
}

#[tokio::test]
async fn pubsub_readiness_probe_needs_an_answer_not_the_probe_topic() {
    let emulator = pubsub::shared();
    let topic = pubsub::unique("probe");
    let publisher =
        PubSubPublisher::connect(&pubsub_cfg(false, false), &topic, pubsub_options(emulator))
            .await
            .expect("pub/sub clients");
    // hyperfleet-health-probe does not exist: NotFound is an answer, so healthy.
    wait_problem(&publisher.liveness(), None).await;
    assert!(publisher.is_connected());

    // Nothing listens on this port: the probe fails and says so.
    let nowhere = PubSubOptions {
        emulator_host: Some(format!("127.0.0.1:{}", pubsub::free_port())),
        probe_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let mut down = PubSubPublisher::connect(&pubsub_cfg(false, false), &topic, nowhere)
        .await
        .expect("clients are created without I/O");
    let liveness = down.liveness();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let problem = liveness.problem().unwrap_or_default();
        if problem.starts_with("google pub/sub health check failed: ") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "probe said {problem:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!down.is_connected());
    // Unreachable (no answer at all): publishes fail at once, naming the probe's finding,
    // instead of each page waiting out the publish timeout.
    let results = down.publish_batch(&[event(1), event(2)]).await;
    assert_eq!(results.len(), 2);
    for r in results {
        match r {
            Err(PublishError::Unavailable { reason, .. }) => {
                assert!(
                    reason.starts_with("google pub/sub health check failed: "),
                    "{reason}"
                )
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
}

#[test]
fn pubsub_example_broker_yaml_parses() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/broker/googlepubsub.yaml");
    let text = std::fs::read_to_string(&path).expect("examples/broker/googlepubsub.yaml");
    let cfg = config::parse("googlepubsub.yaml", &text, &|_| None).expect("the example parses");
    assert_eq!(cfg.kind, BrokerKind::GooglePubSub);
    assert_eq!(cfg.googlepubsub.project_id, "my-gcp-project");
    assert!(!cfg.googlepubsub.create_topic_if_missing);
    assert!(!cfg.googlepubsub.enable_message_ordering);
}

// ---------------------------------------------------------------------------------------------
// The loop's thread blocked: the broker connection lives on (issue 34, item 1).

/// `sentinel serve` whose stdout (its log lines) nobody reads: the loop's thread blocks in a
/// write to the full pipe for longer than RabbitMQ's heartbeat timeout (`?heartbeat=2`: the
/// broker drops a client silent for two intervals). The connection's I/O runs on its own thread,
/// so heartbeats go on; once the pipe is read again the next cycle publishes on the same
/// connection: no reconnect, no failed publish.
#[tokio::test]
async fn a_stalled_loop_thread_keeps_the_broker_connection() {
    use crate::harness::fake_api::fake_api;
    use crate::harness::serve::{TempDir, free_port, sentinel_cmd};
    use crate::harness::{eventually, new_clusters, read_data};
    use std::io::Read;

    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("stalled-loop").await;
    let proxy = Proxy::start().await;
    let api = fake_api(new_clusters(100)).await;
    let dir = TempDir::new();
    let config = dir.write(
        "config.yaml",
        &read_data("serve.yaml")
            .replace("{topic}", &topic)
            .replace("page_size: 1", "page_size: 100"),
    );
    let url = format!("{}?heartbeat=2", proxy.url());
    let broker = dir.write(
        "broker.yaml",
        &read_data("broker.yaml").replace("{url}", &url),
    );
    let config_flag = format!("--config={}", config.display());
    let health_flag = format!("--health-server-bindaddress=127.0.0.1:{}", free_port());
    let metrics_flag = format!("--metrics-server-bindaddress=127.0.0.1:{}", free_port());
    let broker_file = broker.display().to_string();
    let env = [
        ("BROKER_CONFIG_FILE", broker_file.as_str()),
        ("HYPERFLEET_API_BASE_URL", api.base_url.as_str()),
        ("HYPERFLEET_TRACING_ENABLED", "false"),
    ];
    let mut cmd = sentinel_cmd(&["serve", &config_flag, &health_flag, &metrics_flag], &env);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = crate::common::Killed(cmd.spawn().expect("spawn sentinel serve"));
    let mut stdout = child.0.stdout.take().expect("stdout");
    let pid = child.0.id();
    #[cfg(target_arch = "x86_64")]
    const WRITE_TO_STDOUT: &str = "1 0x1 ";
    #[cfg(target_arch = "aarch64")]
    const WRITE_TO_STDOUT: &str = "64 0x1 ";
    let syscall = format!("/proc/{pid}/task/{pid}/syscall");
    let blocked =
        || std::fs::read_to_string(&syscall).is_ok_and(|s| s.starts_with(WRITE_TO_STDOUT));
    eventually("the loop's thread blocked writing to stdout", async || {
        blocked().then_some(())
    })
    .await;
    // Five heartbeat intervals with the loop's thread blocked: without heartbeats RabbitMQ
    // closes the connection after two.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(blocked(), "the loop stayed blocked through the stall");
    let before = rig.drain(&queue).await.len();
    assert!(before >= 100, "the cycles before the stall published");

    // Read the pipe from now on: the loop goes on, and its next cycles publish.
    let output = Arc::new(Mutex::new(Vec::new()));
    let sink = output.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 64 * 1024];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().expect("output").extend_from_slice(&chunk[..n]);
        }
    });
    let mut after = 0;
    eventually("a full cycle published after the stall", async || {
        after += rig.drain(&queue).await.len();
        (after >= 200).then_some(())
    })
    .await;
    assert_eq!(proxy.connections(), 1, "the same connection throughout");
    let text = String::from_utf8_lossy(&output.lock().expect("output")).into_owned();
    for sign in [
        "dropping rabbitmq connection",
        "reconnected to rabbitmq",
        "Failed to publish event",
        "missed heartbeats",
    ] {
        assert!(!text.contains(sign), "{sign}: {text}");
    }
    drop(child);
    rig.cleanup().await;
}

// ---------------------------------------------------------------------------------------------
// amqps with the URL's TLS parameters, through a TLS terminator in front of the shared broker.

fn amqps_url(
    port: u16,
    host: &str,
    params: &[(&str, &std::path::Path)],
    sni: Option<&str>,
) -> String {
    let mut query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", v.display()))
        .collect();
    if let Some(name) = sni {
        query.push(format!("server_name_indication={name}"));
    }
    format!("amqps://guest:guest@{host}:{port}/?{}", query.join("&"))
}

/// The right CA and a client certificate: the terminator (which requires one) lets the
/// publisher through, and `server_name_indication` is the name sent and verified (the server's
/// certificate names `rabbit.internal` only; the URL's host is an IP address).
#[tokio::test]
async fn amqps_uses_the_url_s_ca_client_certificate_and_server_name() {
    use crate::common::tls::{pki, terminator};
    let pki = pki(&["rabbit.internal"]);
    let tls = terminator(&pki, "127.0.0.1:5672", true).await;
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue("amqps").await;
    let files = [
        ("cacertfile", pki.ca.as_path()),
        ("certfile", pki.client_cert.as_path()),
        ("keyfile", pki.client_key.as_path()),
    ];
    let url = amqps_url(
        tls.addr.port(),
        "127.0.0.1",
        &files,
        Some("rabbit.internal"),
    );
    let cfg = rabbit_cfg(&url, ExchangeType::Fanout, true);
    let mut publisher = RabbitPublisher::connect(&cfg, &topic, quick())
        .await
        .expect("connects through TLS");
    let ev = event(1);
    all_ok(&publisher.publish_batch(std::slice::from_ref(&ev)).await);
    assert_eq!(rig.next(&queue).await.data, ev.to_bytes());
    assert_eq!(
        tls.names.lock().expect("names").as_slice(),
        [Some("rabbit.internal".to_owned())]
    );
    publisher.close().await.expect("close");

    // Without the server name the certificate does not match the address: a clear error.
    let url = amqps_url(tls.addr.port(), "127.0.0.1", &files, None);
    let err = RabbitPublisher::connect(
        &rabbit_cfg(&url, ExchangeType::Fanout, true),
        &topic,
        quick(),
    )
    .await
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("TLS handshake with 127.0.0.1"), "{err}");
    assert!(err.contains("invalid peer certificate"), "{err}");
    rig.cleanup().await;
}

/// A CA that did not sign the server's certificate fails the connection with the handshake's
/// reason (not a timeout); so does a missing client certificate where the server wants one.
#[tokio::test]
async fn amqps_with_the_wrong_ca_or_no_client_certificate_fails_the_handshake() {
    use crate::common::tls::{pki, terminator};
    let pki = pki(&["localhost"]);
    let tls = terminator(&pki, "127.0.0.1:5672", true).await;
    let port = tls.addr.port();
    let connect = async |url: String| {
        RabbitPublisher::connect(
            &rabbit_cfg(&url, ExchangeType::Fanout, true),
            "amqps",
            quick(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
    };
    let wrong_ca = connect(amqps_url(
        port,
        "localhost",
        &[("cacertfile", &pki.other_ca)],
        None,
    ))
    .await;
    assert!(
        wrong_ca.contains("TLS handshake with localhost"),
        "{wrong_ca}"
    );
    assert!(wrong_ca.contains("UnknownIssuer"), "{wrong_ca}");
    assert!(!wrong_ca.contains("timed out"), "{wrong_ca}");
    let no_client = connect(amqps_url(
        port,
        "localhost",
        &[("cacertfile", &pki.ca)],
        None,
    ))
    .await;
    assert!(
        !no_client.is_empty() && !no_client.contains("timed out"),
        "{no_client}"
    );
}

/// A missing or invalid TLS file is a start-up error naming the parameter and the file, never
/// printing what the file holds.
#[tokio::test]
async fn amqps_file_errors_name_the_file_without_its_contents() {
    let pki = crate::common::tls::pki(&["localhost"]);
    let missing = pki.dir.join("missing.pem");
    let garbage = pki.dir.join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN PRIVATE KEY-----\nU0VDUkVUU0VDUkVU\n-----END PRIVATE KEY-----\n",
    )
    .expect("write");
    let key = std::fs::read_to_string(&pki.client_key).expect("key");
    let key_line = key.lines().nth(1).unwrap_or_default().to_owned();
    for (params, names) in [
        (
            vec![("cacertfile", missing.as_path())],
            ("cacertfile", "missing.pem"),
        ),
        (
            vec![("cacertfile", pki.client_key.as_path())],
            ("cacertfile", "client-key.pem"),
        ),
        (
            vec![
                ("cacertfile", pki.ca.as_path()),
                ("certfile", pki.client_cert.as_path()),
                ("keyfile", garbage.as_path()),
            ],
            ("keyfile", "garbage.pem"),
        ),
        (
            vec![
                ("cacertfile", pki.ca.as_path()),
                ("certfile", pki.client_key.as_path()),
                ("keyfile", pki.client_key.as_path()),
            ],
            ("certfile", "client-key.pem"),
        ),
    ] {
        // Nothing listens on port 1: the files are read before any connection.
        let url = amqps_url(1, "localhost", &params, None);
        let err = RabbitPublisher::connect(
            &rabbit_cfg(&url, ExchangeType::Fanout, true),
            "amqps",
            quick(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            err.contains(names.0) && err.contains(names.1),
            "{params:?}: {err}"
        );
        assert!(
            !err.contains("U0VDUkVU") && !err.contains(&key_line),
            "{err}"
        );
    }
}
