//! In-process daemons: a `Daemon` over the rules of tests/data/daemon/config.yaml, a fake API and
//! the real RabbitMQ, whose cycles a test runs by hand with a fixed `now`.

use super::RABBIT_URL;
use super::fake_api::{FakeServer, fake_api};
use crate::common::rig::{Rig, rig};
use sentinel::api::{ApiClient, ApiClientConfig, Backoff};
use sentinel::broker::config::{ExchangeType, RabbitConfig};
use sentinel::broker::{Publisher, RabbitOptions, RabbitPublisher};
use sentinel::daemon::config::{Config, ConfigFlags, load_str};
use sentinel::daemon::runtime::Daemon;
use sentinel::rules::Rules;
use sentinel::sim::api::Fleet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// tests/data/daemon/config.yaml, listing clusters every `poll_interval` to `topic`.
pub fn config(topic: &str, poll_interval: Duration) -> Config {
    let mut config = load_str(
        &super::read_data("config.yaml"),
        "config.yaml",
        &ConfigFlags::default(),
        &|_| None,
    )
    .expect("tests/data/daemon/config.yaml loads");
    config.clients.broker.topic = topic.to_string();
    config.poll_interval = poll_interval;
    config
}

pub fn rules() -> Arc<Rules> {
    let config = config("unused", Duration::from_secs(3600));
    Arc::new(Rules::compile(&config).expect("tests/data/daemon/config.yaml compiles"))
}

pub fn fast_backoff() -> Backoff {
    Backoff {
        initial: Duration::from_millis(2),
        multiplier: 2.0,
        max_interval: Duration::from_millis(20),
        jitter: 0.1,
        max_elapsed: Duration::from_millis(200),
    }
}

/// How an in-process daemon is put together, besides its API and topic.
pub struct Setup {
    /// The broker as broker.yaml would name it: [`RABBIT_URL`] unless a test puts a proxy in
    /// between.
    pub amqp_url: String,
    pub page_size: u32,
    pub prefetch: usize,
    pub poll_interval: Duration,
}

impl Default for Setup {
    /// Pages of 20, one fetched ahead, and a poll interval no test waits for.
    fn default() -> Setup {
        Setup {
            amqp_url: RABBIT_URL.to_string(),
            page_size: 20,
            prefetch: 1,
            poll_interval: Duration::from_secs(3600),
        }
    }
}

/// A daemon listing clusters from `base_url` and publishing to `topic`, connected.
pub async fn daemon(base_url: &str, topic: &str, setup: &Setup) -> Daemon {
    let api = ApiClient::new(ApiClientConfig {
        base_url: base_url.to_string(),
        page_size: setup.page_size,
        prefetch: setup.prefetch,
        backoff: fast_backoff(),
        ..ApiClientConfig::default()
    })
    .expect("api client");
    let cfg = RabbitConfig {
        url: setup.amqp_url.clone(),
        exchange_type: ExchangeType::Fanout,
        publisher_confirm: true,
        ..Default::default()
    };
    let options = RabbitOptions {
        backoff_initial: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        ..Default::default()
    };
    let publisher = RabbitPublisher::connect(&cfg, topic, options)
        .await
        .expect("publisher connects");
    let config = config(topic, setup.poll_interval);
    Daemon::new(
        &config,
        rules(),
        api,
        Publisher::Rabbit(Box::new(publisher)),
    )
}

/// An in-process test's surroundings: the rig, its own exchange (`topic`) with a queue bound to
/// it, the fake API, and the daemon between them.
pub struct InProcess {
    pub rig: Rig,
    pub topic: String,
    pub queue: String,
    pub api: FakeServer,
    pub daemon: Daemon,
}

/// Sets up [`InProcess`] for the test `name` over `fleet`.
pub async fn in_process(name: &str, fleet: Fleet, setup: Setup) -> InProcess {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue(name).await;
    let api = fake_api(fleet).await;
    let daemon = daemon(&api.base_url, &topic, &setup).await;
    InProcess {
        rig,
        topic,
        queue,
        api,
        daemon,
    }
}

/// A shutdown channel whose sender stays alive (a dropped sender is no shutdown request).
pub fn no_shutdown() -> (watch::Sender<bool>, watch::Receiver<bool>) {
    watch::channel(false)
}
