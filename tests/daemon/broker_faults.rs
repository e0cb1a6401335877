//! The RabbitMQ publisher against a fake broker (tests/common/fake_amqp.rs) for the faults the
//! real one will not make on demand: confirms out of order, with `multiple`, nacks; silence; a
//! `tune` of zeros; an oversized frame; `channel.close` 404 in the middle of a page larger than
//! the socket buffers; `connection.close` 320; `connection.blocked` / `unblocked`; and the
//! reconnect backoff. Every test runs on a current-thread runtime, as `serve` runs the loop.

use crate::common::fake_amqp::{
    CHANNEL_CLOSE_OK, CONNECTION_CLOSE, CONNECTION_CLOSE_OK, Confirms, FakeBroker, Script, Seen,
    has, position,
};
use crate::common::rig::PATIENCE;
use sentinel::broker::config::{ExchangeType, RabbitConfig};
use sentinel::broker::event::Event;
use sentinel::broker::{PublishError, RabbitOptions, RabbitPublisher};
use serde_json::json;
use std::time::Duration;

fn event(n: u64) -> Event {
    Event::new("Cluster", json!({"id": format!("cls-{n}"), "n": n}))
}

fn page(n: u64) -> Vec<Event> {
    (1..=n).map(event).collect()
}

async fn publisher(fake: &FakeBroker, query: &str, opts: RabbitOptions) -> RabbitPublisher {
    let cfg = RabbitConfig {
        url: fake.url(query),
        exchange_type: ExchangeType::Fanout,
        publisher_confirm: true,
        ..Default::default()
    };
    RabbitPublisher::connect(&cfg, "faults", opts)
        .await
        .expect("connects to the fake broker")
}

fn quick() -> RabbitOptions {
    RabbitOptions {
        backoff_initial: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        ..Default::default()
    }
}

fn kinds(results: &[Result<(), PublishError>]) -> Vec<&'static str> {
    results
        .iter()
        .map(|r| match r {
            Ok(()) => "ok",
            Err(PublishError::Nacked) => "nack",
            Err(PublishError::Blocked(_)) => "blocked",
            Err(PublishError::ConfirmTimeout(_)) => "timeout",
            Err(PublishError::Unconfirmed(_)) => "unconfirmed",
            Err(_) => "other",
        })
        .collect()
}

/// Polls `check` until it holds, for at most [`PATIENCE`].
async fn until(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn confirms_out_of_order_with_multiple_and_nacks_resolve_each_event() {
    for (confirms, want) in [
        (Confirms::Reversed, vec!["ok"; 6]),
        (Confirms::Multiple, vec!["ok"; 6]),
        (
            Confirms::Nack([2, 5].into()),
            vec!["ok", "nack", "ok", "ok", "nack", "ok"],
        ),
    ] {
        let fake = FakeBroker::start(Script {
            confirms: confirms.clone(),
            ..Script::default()
        })
        .await;
        let mut publisher = publisher(&fake, "", quick()).await;
        let results = publisher.publish_batch(&page(6)).await;
        assert_eq!(kinds(&results), want, "{confirms:?}");
        // The next page's tags continue; its confirms are its own.
        let results = publisher.publish_batch(&page(3)).await;
        assert_eq!(kinds(&results), ["ok"; 3], "{confirms:?}");
        publisher.close().await.expect("close");
    }
}

#[tokio::test]
async fn a_tune_of_zeros_takes_our_limits() {
    let fake = FakeBroker::start(Script {
        tune: (0, 0, 0),
        ..Script::default()
    })
    .await;
    let mut publisher = publisher(&fake, "", quick()).await;
    assert_eq!(
        publisher.heartbeat(),
        Some(10),
        "ours, when the broker has none"
    );
    let big = Event::new("Cluster", json!({"id": "big", "pad": "x".repeat(100_000)}));
    let results = publisher.publish_batch(&[big, event(2)]).await;
    assert_eq!(kinds(&results), ["ok", "ok"]);
    publisher.close().await.expect("close");
}

/// A broker that stops answering: the publish fails at its own bound (the faulty step's alone),
/// and the connection given up is closed with `connection.close`, then (no `close-ok` coming)
/// the socket, never with a bare TCP close.
#[tokio::test]
async fn a_silent_broker_fails_the_page_and_the_connection_is_closed_with_connection_close() {
    let fake = FakeBroker::start(Script {
        confirms: Confirms::Never,
        ..Script::default()
    })
    .await;
    let opts = RabbitOptions {
        close_timeout: Duration::from_millis(300),
        ..quick()
    };
    let mut publisher = publisher(&fake, "", opts).await;
    publisher.set_publish_timeout(Duration::from_millis(300));
    let results = publisher.publish_batch(&page(2)).await;
    assert_eq!(kinds(&results), ["timeout", "timeout"]);
    assert!(!publisher.is_connected());
    fake.wait_seen(0, "connection.close then EOF", |seen| {
        seen.last() == Some(&Seen::Eof)
    })
    .await;
    let seen = fake.seen(0);
    let close = position(&seen, CONNECTION_CLOSE).expect("connection.close sent");
    assert!(close < seen.len() - 1, "{seen:?}");
    assert_eq!(seen.iter().filter(|s| **s == Seen::Published(2)).count(), 1);
}

/// A frame larger than the negotiated maximum ends the connection with AMQP's answer to a frame
/// error (`connection.close`); the next publish connects afresh.
#[tokio::test]
async fn an_oversized_frame_ends_the_connection_with_connection_close() {
    let fake = FakeBroker::start(Script::default()).await;
    let mut publisher = publisher(&fake, "?frame_max=4096", quick()).await;
    assert_eq!(kinds(&publisher.publish_batch(&page(1)).await), ["ok"]);
    let mut huge = vec![3u8, 0, 1];
    huge.extend_from_slice(&100_000u32.to_be_bytes());
    huge.resize(7 + 100_000, b'x');
    huge.push(0xCE);
    fake.send_raw(0, huge);
    fake.wait_seen(0, "connection.close", |seen| has(seen, CONNECTION_CLOSE))
        .await;
    until("the publisher sees the connection gone", || {
        !publisher.is_connected()
    })
    .await;
    let results = publisher.publish_batch(&page(1)).await;
    assert_eq!(kinds(&results), ["ok"]);
    assert_eq!(fake.connections(), 2);
    publisher.close().await.expect("close");
}

/// The broker's `connection.close` (320, a forced close) is answered with `close-ok`; readiness
/// says so, and the next publish reconnects.
#[tokio::test]
async fn connection_close_320_is_answered_and_the_publisher_reconnects() {
    let fake = FakeBroker::start(Script::default()).await;
    let mut publisher = publisher(&fake, "", quick()).await;
    let liveness = publisher.liveness();
    assert_eq!(kinds(&publisher.publish_batch(&page(1)).await), ["ok"]);
    fake.close(
        0,
        320,
        "CONNECTION_FORCED - broker forced connection closure",
    );
    fake.wait_seen(0, "connection.close-ok", |seen| {
        has(seen, CONNECTION_CLOSE_OK)
    })
    .await;
    until("readiness to see the close", || {
        liveness.problem().is_some()
    })
    .await;
    assert_eq!(
        liveness.problem().as_deref(),
        Some("RabbitMQ connection is not established")
    );
    assert_eq!(
        kinds(&publisher.publish_batch(&page(2)).await),
        ["ok", "ok"]
    );
    assert_eq!(fake.connections(), 2);
    assert_eq!(liveness.problem(), None);
    publisher.close().await.expect("close");
}

/// The broker closes the channel (404) while a page larger than the socket buffers is still
/// being written: the `close-ok` is written right after the page, never skipped, and the next
/// page goes out on a new channel of the same connection.
#[tokio::test]
async fn channel_close_404_in_the_middle_of_a_page_is_answered_after_it() {
    let fake = FakeBroker::start(Script {
        close_channel_on_publish: true,
        ..Script::default()
    })
    .await;
    let mut publisher = publisher(&fake, "", quick()).await;
    // ~24 MB: more than the two sockets' buffers hold while the broker does not read.
    let pad = "x".repeat(12_000);
    let big: Vec<Event> = (0..2_000)
        .map(|n| Event::new("Cluster", json!({"id": format!("c{n}"), "pad": pad})))
        .collect();
    let resume = async {
        fake.wait_seen(0, "the first publish", |seen| {
            seen.iter().any(|s| matches!(s, Seen::Method(_, 60, 40)))
        })
        .await;
        // The page is still being written (the broker reads nothing); let it read on.
        tokio::time::sleep(Duration::from_millis(200)).await;
        fake.resume_reading(0);
    };
    let (results, ()) = tokio::join!(publisher.publish_batch(&big), resume);
    assert!(
        kinds(&results).iter().all(|k| *k == "unconfirmed"),
        "{:?}",
        &results[..1]
    );
    fake.wait_seen(0, "channel.close-ok", |seen| has(seen, CHANNEL_CLOSE_OK))
        .await;
    let seen = fake.seen(0);
    let publishes = seen
        .iter()
        .filter(|s| matches!(s, Seen::Method(_, 60, 40)))
        .count();
    assert_eq!(publishes, 2_000, "the whole page went out");
    let last_publish = seen
        .iter()
        .rposition(|s| matches!(s, Seen::Method(_, 60, 40)))
        .unwrap_or_default();
    assert!(position(&seen, CHANNEL_CLOSE_OK) > Some(last_publish));
    let after = publisher.publish_batch(&page(2)).await;
    assert_eq!(kinds(&after), ["ok", "ok"], "{after:?}");
    assert_eq!(fake.connections(), 1, "the same connection");
    publisher.close().await.expect("close");
}

/// A resource alarm: while the broker blocks the connection nothing is written into it, every
/// page fails at once with the broker's reason, readiness says why, and the connection is kept;
/// the first page after `connection.unblocked` publishes on it.
#[tokio::test]
async fn a_blocked_connection_fails_pages_fast_and_is_kept_until_unblocked() {
    let fake = FakeBroker::start(Script::default()).await;
    let mut publisher = publisher(&fake, "", quick()).await;
    let liveness = publisher.liveness();
    assert_eq!(kinds(&publisher.publish_batch(&page(1)).await), ["ok"]);
    fake.block(0, "low on memory");
    until("readiness to report the alarm", || {
        liveness.problem().is_some()
    })
    .await;
    assert_eq!(
        liveness.problem().as_deref(),
        Some("RabbitMQ connection is blocked by the broker: low on memory")
    );
    for _ in 0..3 {
        let results = publisher.publish_batch(&page(5)).await;
        assert_eq!(kinds(&results), ["blocked"; 5]);
        let Err(e) = &results[0] else { unreachable!() };
        assert!(e.to_string().contains("low on memory"), "{e}");
        assert!(e.logged_by_publisher());
    }
    assert!(publisher.is_connected());
    let published = |seen: &[Seen]| {
        seen.iter()
            .filter(|s| matches!(s, Seen::Published(_)))
            .count()
    };
    fake.unblock(0);
    until("readiness to recover", || liveness.problem().is_none()).await;
    assert_eq!(
        kinds(&publisher.publish_batch(&page(2)).await),
        ["ok", "ok"]
    );
    assert_eq!(fake.connections(), 1, "the same connection throughout");
    // Confirmed, so the broker has read everything before it: nothing was written while blocked.
    assert_eq!(
        published(&fake.seen(0)),
        1 + 2,
        "only the pages before and after"
    );
    publisher.close().await.expect("close");
}

/// Blocked while a page waits for its confirms: the wait ends at once with the alarm (not the
/// publish timeout), and the connection is kept.
#[tokio::test]
async fn a_block_during_the_confirm_wait_ends_it_with_the_alarm() {
    let fake = FakeBroker::start(Script {
        confirms: Confirms::Never,
        ..Script::default()
    })
    .await;
    let mut publisher = publisher(&fake, "", quick()).await;
    let block = async {
        fake.wait_seen(0, "the page", |seen| seen.contains(&Seen::Published(3)))
            .await;
        fake.block(0, "disk alarm");
    };
    let events = page(3);
    let (results, ()) = tokio::join!(publisher.publish_batch(&events), block);
    assert_eq!(kinds(&results), ["blocked"; 3]);
    assert!(publisher.is_connected());
    assert_eq!(fake.connections(), 1);
    publisher.close().await.expect("close");
}

/// A broker that closes every connection: reconnects follow Go's backoff (500 ms, then ×1.5),
/// so the churn never makes three connections within a second.
#[tokio::test]
async fn reconnects_back_off_and_never_churn() {
    let fake = FakeBroker::start(Script::default()).await;
    let mut publisher = publisher(&fake, "", RabbitOptions::default()).await;
    assert_eq!(kinds(&publisher.publish_batch(&page(1)).await), ["ok"]);
    let started = tokio::time::Instant::now();
    let mut closed = 0;
    while started.elapsed() < Duration::from_secs(1) {
        while closed < fake.connections() {
            fake.close(closed, 320, "CONNECTION_FORCED - churn");
            closed += 1;
        }
        let _ = publisher.publish_batch(&page(1)).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The first connection, one reconnect at once, the next only 500–750 ms later, the third
    // reconnect no sooner than 750 ms after that.
    assert!(
        fake.connections() <= 3,
        "{} connections",
        fake.connections()
    );
    assert!(fake.connections() >= 2, "it did reconnect");
}

/// A resource alarm seen from the daemon: the cycle fails its due events at once and counts them,
/// the alarm is logged once (no per-event error line), readiness is 503 with the broker's
/// reason, and the first cycle after `connection.unblocked` publishes what is due.
#[tokio::test]
async fn a_cycle_under_a_resource_alarm_counts_logs_once_and_recovers() {
    use crate::harness::fake_api::fake_api;
    use crate::harness::in_process::{Setup, daemon};
    use crate::harness::logs::logs;
    use crate::harness::metrics::{BROKER_ERRORS, base, sample};
    use crate::harness::{new_clusters, now};

    let logs = logs();
    let fake = FakeBroker::start(Script::default()).await;
    let api = fake_api(new_clusters(5)).await;
    let topic = crate::common::rig::unique("alarm");
    let setup = Setup {
        amqp_url: fake.url(""),
        ..Setup::default()
    };
    let mut daemon = daemon(&api.base_url, &topic, &setup).await;
    let (_stop, mut shutdown) = tokio::sync::watch::channel(false);
    assert_eq!(daemon.cycle(now(), &mut shutdown).await.published, 5);

    fake.block(0, "low on memory");
    let liveness = daemon.broker_liveness();
    until("the alarm to reach the publisher", || {
        liveness.problem().is_some()
    })
    .await;
    for _ in 0..2 {
        let report = daemon.cycle(now(), &mut shutdown).await;
        assert_eq!((report.published, report.failed), (0, 5));
    }
    let (status, body) = daemon.health().readiness();
    assert_eq!(status.as_u16(), 503);
    assert!(
        body.contains(r#""broker":"RabbitMQ connection is blocked by the broker: low on memory""#),
        "{body}"
    );
    let errors = sample(
        &daemon.metrics().render(),
        BROKER_ERRORS,
        &base(&[("error_type", "publish_error")]),
    );
    assert_eq!(errors, Some(10.0));
    let alarms: Vec<_> = logs
        .with_message(
            "RabbitMQ blocked the connection (resource alarm); publishing paused until it unblocks",
        )
        .into_iter()
        .filter(|line| line["extra"]["exchange"] == topic.as_str())
        .collect();
    assert_eq!(alarms.len(), 1, "once per alarm");
    assert_eq!(alarms[0]["extra"]["reason"], "low on memory");
    let per_event = logs
        .lines(&topic)
        .into_iter()
        .filter(|(_, m)| m.starts_with("Failed to publish event"))
        .count();
    assert_eq!(per_event, 0, "no line per event");

    fake.unblock(0);
    until("the alarm to clear", || liveness.problem().is_none()).await;
    let report = daemon.cycle(now(), &mut shutdown).await;
    assert_eq!((report.published, report.failed), (5, 0));
    assert_eq!(fake.connections(), 1);
    daemon.close().await.expect("close");
}
