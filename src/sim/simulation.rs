//! The whole system in one process: the fake API over real HTTP on 127.0.0.1, the real sentinel
//! loop ([`Daemon`]) per resource type, a broker (in process or RabbitMQ) and the simulated
//! adapters answering the sentinel's events.
//!
//! Takes [`SimOptions`]; gives a [`Simulation`] that tests drive cycle by cycle
//! ([`Simulation::cycle`], [`Simulation::settle`]) and that [`super::run`] drives in real time.
//!
//! Invariant: the sentinel's side is exactly `sentinel serve`'s: the same config loader, rule
//! compiler, API client, [`Daemon::cycle`] and [`Publisher`]; only the publisher's destination
//! (an in-process sink) and the clock can differ.

use super::adapters::{AdapterCounts, AdapterSet, AdapterSpec, Transport, default_adapters};
use super::api::{Collection, FakeApi, Fleet, FleetError, Progress, ServerHandle, sample_id};
use super::broker::{
    InProcessBroker, PubSubQueues, PubSubSetupError, RabbitQueues, RabbitSetupError,
};
use super::clock::{Clock, WallClock, format_time, to_timestamp};
use crate::api::{ApiClient, ApiError};
use crate::broker::{
    BrokerError, ExchangeType, MemoryPublisher, PubSubOptions, PubSubPublisher, Publisher,
    RabbitConfig, RabbitOptions, RabbitPublisher,
};
use crate::daemon::config::{self, Config, ConfigFlags};
use crate::daemon::runtime::{CycleReport, Daemon, Ticks, api_client_config};
use crate::rules::Rules;
use serde_json::{Value as Json, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The sentinel config `simulate` uses without `--config`: the default rules, a 1 s poll, pages
/// of 100, and the event data the adapters read.
pub const DEFAULT_CONFIG: &str = "\
sentinel:
  name: sentinel-simulate
resource_type: clusters
poll_interval: 1s
clients:
  hyperfleet_api:
    base_url: http://127.0.0.1:8000
    page_size: 100
  broker:
    topic: sentinel-simulate
message_data:
  id: resource.id
  kind: resource.kind
  href: resource.href
  generation: resource.generation
";

/// The RabbitMQ the simulation uses by default (broker.yaml syntax: `/` is the default vhost).
pub const DEFAULT_RABBITMQ_URL: &str = "amqp://guest:guest@127.0.0.1:5672/";

/// Where events travel between the sentinel and the adapters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BrokerChoice {
    /// A [`MemoryPublisher`] feeding in-memory queues.
    InProcess,
    /// Google Cloud Pub/Sub on an emulator: the sentinel's [`PubSubPublisher`] and
    /// subscriptions `{topic}-{adapter}`.
    PubSub {
        /// The emulator's `host:port` (`PUBSUB_EMULATOR_HOST`).
        emulator_host: String,
        /// The project the topics and subscriptions live in.
        project: String,
    },
    /// A real RabbitMQ: the sentinel's [`RabbitPublisher`] and queues `{topic}-{adapter}`.
    RabbitMq {
        /// The AMQP URL, broker.yaml syntax.
        url: String,
        /// The type the exchange is declared with, by the queues and by the simulation's own
        /// sentinels: that of the broker.yaml of the sentinel under test (`exchange_type`), so
        /// their declarations agree.
        exchange_type: ExchangeType,
        /// The routing key the sentinel publishes with (`routing_key`); a `direct` exchange's
        /// queues are bound with it.
        routing_key: String,
    },
}

/// How the resources created at start look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Initial {
    /// Just created, no conditions yet: the default rules publish them at once.
    New,
    /// Just created, conditions as the API computes them without reports (`Reconciled=False`
    /// since creation): the default rules wait for the debounce.
    Pending,
    /// Reconciled just now: the default rules skip them (a steady-state fleet).
    Reconciled,
    /// Reconciled long ago: the default rules publish their periodic re-check.
    Stale,
}

/// Everything a simulation is made of.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Clusters created at start.
    pub clusters: u64,
    /// Nodepools created at start, spread over the clusters.
    pub nodepools: u64,
    /// How they look.
    pub initial: Initial,
    /// The adapters answering cluster events (and required for clusters).
    pub cluster_adapters: Vec<AdapterSpec>,
    /// The adapters answering nodepool events (and required for nodepools).
    pub nodepool_adapters: Vec<AdapterSpec>,
    /// Whether to run adapters at all.
    pub adapters: bool,
    /// Adapters fetch and report over HTTP like real ones (else they call the fleet directly,
    /// leaving the CPU to the sentinel).
    pub adapters_http: bool,
    /// The broker.
    pub broker: BrokerChoice,
    /// Topics are `{topic_prefix}-clusters` and `{topic_prefix}-nodepools`.
    pub topic_prefix: String,
    /// The sentinel config (YAML); its base URL, resource type and topic are replaced.
    pub config_yaml: String,
    /// Overrides of config values, as `sentinel serve`'s flags give them.
    pub config_flags: ConfigFlags,
    /// Whether to run the sentinel (false: serve the fleet for a sentinel elsewhere).
    pub sentinel: bool,
    /// Where the fake API listens.
    pub listen: SocketAddr,
    /// The clock of the fleet, the adapters and the sentinel's `now`.
    pub clock: Arc<dyn Clock>,
    /// Seed of the simulated failures.
    pub seed: u64,
}

impl Default for SimOptions {
    fn default() -> SimOptions {
        SimOptions {
            clusters: 10_000,
            nodepools: 0,
            initial: Initial::New,
            cluster_adapters: default_adapters(Collection::Clusters),
            nodepool_adapters: default_adapters(Collection::NodePools),
            adapters: true,
            adapters_http: false,
            broker: BrokerChoice::InProcess,
            topic_prefix: "sentinel-simulate".into(),
            config_yaml: DEFAULT_CONFIG.into(),
            config_flags: ConfigFlags::default(),
            sentinel: true,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            clock: Arc::new(WallClock),
            seed: 1,
        }
    }
}

/// Why a simulation could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The sentinel config is invalid.
    #[error("{0}")]
    Config(#[from] config::ConfigError),
    /// Its rules do not compile.
    #[error("{0}")]
    Compile(#[from] crate::rules::decision::CompileError),
    /// The fake API cannot listen.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The sentinel's API client cannot be built.
    #[error("api client: {0}")]
    Api(#[from] ApiError),
    /// The sentinel's publisher cannot connect.
    #[error("{0}")]
    Broker(#[from] BrokerError),
    /// The adapters' queues cannot be set up.
    #[error("{0}")]
    Rabbit(#[from] RabbitSetupError),
    /// The adapters' subscriptions cannot be set up.
    #[error("{0}")]
    PubSub(#[from] PubSubSetupError),
    /// The fleet rejected a resource.
    #[error("{0}")]
    Fleet(#[from] FleetError),
    /// The adapters' HTTP client cannot be built.
    #[error("adapter transport: {0}")]
    Transport(String),
    /// The adapters did not answer every published event in time.
    #[error("adapters of {collection} handled {handled} of {published} events within {waited:?}")]
    Unsettled {
        /// The resource type.
        collection: &'static str,
        /// Events handled by the slowest adapter.
        handled: u64,
        /// Events published.
        published: u64,
        /// How long it waited.
        waited: Duration,
    },
}

/// The queues' owner, kept alive for the simulation's lifetime.
// Built once per simulation: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
enum Queues {
    InProcess(Arc<InProcessBroker>),
    Rabbit {
        queues: RabbitQueues,
        url: String,
    },
    PubSub {
        queues: PubSubQueues,
        emulator_host: String,
        project: String,
    },
}

/// One resource type: its sentinel, its broker side and its adapters.
pub(super) struct Lane {
    pub(super) collection: Collection,
    pub(super) topic: String,
    pub(super) daemon: Option<Daemon>,
    pub(super) published: u64,
    pub(super) adapters: AdapterSet,
    queues: Queues,
    pub(super) stop: watch::Receiver<bool>,
}

impl Lane {
    /// Events that reached the adapters' side of the broker.
    pub(super) fn delivered(&self) -> u64 {
        match &self.queues {
            Queues::InProcess(broker) => broker.delivered(),
            Queues::Rabbit { queues, .. } => queues.delivered(),
            Queues::PubSub { queues, .. } => queues.delivered(),
        }
    }
}

/// A running simulation. See the module docs.
pub struct Simulation {
    pub(super) fleet: Arc<Fleet>,
    pub(super) api: Arc<FakeApi>,
    pub(super) base_url: String,
    server: Option<ServerHandle>,
    pub(super) lanes: Vec<Lane>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) stop_tx: watch::Sender<bool>,
    pub(super) options: SimOptions,
}

impl Simulation {
    /// Creates the fleet, serves it, and starts the adapters and (unless `sentinel` is off) one
    /// sentinel per resource type that has resources.
    pub async fn start(options: SimOptions) -> Result<Simulation, SimError> {
        let clock = options.clock.clone();
        let fleet = Arc::new(Fleet::with_clock(clock.clone()));
        populate(&fleet, &options)?;
        let api = Arc::new(FakeApi::with_recording(fleet.clone(), 0));
        let (addr, server) = super::api::serve(api.clone(), options.listen)
            .await
            .map_err(|source| SimError::Listen {
                addr: options.listen,
                source,
            })?;
        let base_url = format!("http://{addr}");
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut lanes = Vec::new();
        for (collection, count) in [
            (Collection::Clusters, options.clusters),
            (Collection::NodePools, options.nodepools),
        ] {
            if count > 0 {
                let lane = start_lane(&options, &fleet, &base_url, collection, stop_rx.clone());
                lanes.push(lane.await?);
            }
        }
        Ok(Simulation {
            fleet,
            api,
            base_url,
            server: Some(server),
            lanes,
            clock,
            stop_tx,
            options,
        })
    }

    /// The fleet.
    pub fn fleet(&self) -> &Arc<Fleet> {
        &self.fleet
    }

    /// The fake API (faults, recorded requests).
    pub fn api(&self) -> &Arc<FakeApi> {
        &self.api
    }

    /// The fake API's base URL, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The topic of `collection`'s events.
    pub fn topic(&self, collection: Collection) -> Option<&str> {
        self.lane(collection).map(|l| l.topic.as_str())
    }

    /// Runs one cycle of every sentinel at the clock's current time; one report per resource
    /// type (clusters first).
    pub async fn cycle(&mut self) -> Vec<CycleReport> {
        let now = to_timestamp(self.clock.now());
        let mut reports = Vec::new();
        for lane in &mut self.lanes {
            if let Some(daemon) = &mut lane.daemon {
                let report = daemon.cycle(now, &mut lane.stop).await;
                lane.published += report.published as u64;
                reports.push(report);
            }
        }
        reports
    }

    /// Waits until every adapter has handled every event published so far.
    pub async fn settle(&self, patience: Duration) -> Result<(), SimError> {
        let deadline = tokio::time::Instant::now() + patience;
        for lane in &self.lanes {
            while !lane.adapters.is_empty() && lane.adapters.min_handled() < lane.published {
                if tokio::time::Instant::now() >= deadline {
                    return Err(SimError::Unsettled {
                        collection: lane.collection.path(),
                        handled: lane.adapters.min_handled(),
                        published: lane.published,
                        waited: patience,
                    });
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        Ok(())
    }

    /// Events the sentinel published for `collection` so far.
    pub fn published(&self, collection: Collection) -> u64 {
        self.lane(collection).map_or(0, |l| l.published)
    }

    /// Events about resource `id` of `collection` that its adapters handled.
    pub fn events_for(&self, collection: Collection, id: &str) -> u32 {
        self.lane(collection)
            .map_or(0, |l| l.adapters.events_for(id))
    }

    /// What each adapter of `collection` did.
    pub fn adapter_counts(&self, collection: Collection) -> Vec<AdapterCounts> {
        self.lane(collection)
            .map_or_else(Vec::new, |l| l.adapters.counts())
    }

    /// The progress of every simulated resource type together.
    pub fn progress(&self) -> Progress {
        let mut total = Progress::default();
        for lane in &self.lanes {
            let p = self.fleet.progress(lane.collection);
            total.total += p.total;
            total.reconciled += p.reconciled;
            total.deleting += p.deleting;
        }
        total
    }

    /// The scripted change: of the clusters, every `1/patch_fraction`-th gets a new spec
    /// (generation + 1) and every `1/delete_fraction`-th is deleted (with its nodepools).
    /// Returns how many were patched and deleted.
    pub fn change(&self, patch_fraction: f64, delete_fraction: f64) -> (u64, u64) {
        let every =
            |fraction: f64| (fraction > 0.0).then(|| (1.0 / fraction).round().max(1.0) as usize);
        let (patch_every, delete_every) = (every(patch_fraction), every(delete_fraction));
        let ids = self.fleet.ids(Collection::Clusters);
        let (mut patched, mut deleted) = (0, 0);
        let now = format_time(self.clock.now());
        for (i, id) in ids.iter().enumerate() {
            if delete_every.is_some_and(|n| i % n == 0) {
                deleted += u64::from(self.fleet.delete(Collection::Clusters, id).is_ok());
            } else if patch_every.is_some_and(|n| i % n == 1 % n) {
                let spec = json!({"spec": {"revision": now, "replicas": 3}});
                patched += u64::from(self.fleet.patch(Collection::Clusters, id, &spec).is_ok());
            }
        }
        (patched, deleted)
    }

    /// Stops the sentinels, closes the broker connections and the fake API.
    pub async fn shutdown(mut self) {
        let _ = self.stop_tx.send(true);
        for lane in self.lanes.drain(..) {
            if let Some(mut daemon) = lane.daemon {
                let _ = daemon.close().await;
            }
            match lane.queues {
                Queues::Rabbit { queues, .. } => queues.close().await,
                Queues::PubSub { queues, .. } => queues.close().await,
                Queues::InProcess(_) => {}
            }
        }
        if let Some(server) = self.server.take() {
            let _ = server.shutdown().await;
        }
    }

    fn lane(&self, collection: Collection) -> Option<&Lane> {
        self.lanes.iter().find(|l| l.collection == collection)
    }
}

/// Creates the clusters and nodepools of `options` in the fleet.
fn populate(fleet: &Fleet, options: &SimOptions) -> Result<(), FleetError> {
    if options.adapters {
        let names = |specs: &[AdapterSpec]| specs.iter().map(|s| s.name.clone()).collect();
        fleet.set_required_adapters(Collection::Clusters, names(&options.cluster_adapters));
        fleet.set_required_adapters(Collection::NodePools, names(&options.nodepool_adapters));
    }
    let now = format_time(options.clock.now());
    let clusters = options.clusters;
    fleet.populate(Collection::Clusters, clusters, |i| {
        initial_resource(Collection::Clusters, i, clusters, options.initial, &now)
    })?;
    fleet.populate(Collection::NodePools, options.nodepools, |i| {
        initial_resource(Collection::NodePools, i, clusters, options.initial, &now)
    })?;
    if options.initial == Initial::Pending {
        for collection in [Collection::Clusters, Collection::NodePools] {
            for id in fleet.ids(collection) {
                fleet.reaggregate(collection, &id)?;
            }
        }
    }
    Ok(())
}

/// Resource `index` of `collection` in its initial state; nodepools belong to clusters round
/// robin.
fn initial_resource(
    collection: Collection,
    index: u64,
    clusters: u64,
    initial: Initial,
    now: &str,
) -> Json {
    let mut resource = super::api::sample_resource(collection, index, &[]);
    if collection == Collection::NodePools && clusters > 0 {
        let owner = sample_id(Collection::Clusters, index % clusters);
        let id = resource["id"].as_str().unwrap_or_default().to_string();
        resource["href"] = json!(format!(
            "/api/hyperfleet/v1/clusters/{owner}/nodepools/{id}"
        ));
        resource["owner_references"] = json!({
            "id": owner, "kind": "Cluster", "href": format!("/api/hyperfleet/v1/clusters/{owner}"),
        });
    }
    if initial == Initial::Stale {
        return resource;
    }
    resource["created_time"] = json!(now);
    resource["updated_time"] = json!(now);
    match initial {
        Initial::New | Initial::Pending => resource["status"]["conditions"] = json!([]),
        _ => {
            if let Some(conditions) = resource["status"]["conditions"].as_array_mut() {
                for c in conditions {
                    for key in ["created_time", "last_updated_time", "last_transition_time"] {
                        c[key] = json!(now);
                    }
                }
            }
        }
    }
    resource
}

/// The config of the sentinel watching `collection`: `options.config_yaml` pointed at the fake
/// API and the lane's topic.
fn lane_config(
    options: &SimOptions,
    base_url: &str,
    collection: Collection,
    topic: &str,
) -> Result<Config, SimError> {
    let flags = ConfigFlags {
        hyperfleet_api_base_url: Some(base_url.to_string()),
        resource_type: Some(collection.path().to_string()),
        broker_topic: Some(topic.to_string()),
        ..options.config_flags.clone()
    };
    Ok(config::load_str(
        &options.config_yaml,
        "simulate config",
        &flags,
        &|_| None,
    )?)
}

async fn start_lane(
    options: &SimOptions,
    fleet: &Arc<Fleet>,
    base_url: &str,
    collection: Collection,
    stop: watch::Receiver<bool>,
) -> Result<Lane, SimError> {
    let topic = format!("{}-{}", options.topic_prefix, collection.path());
    let specs: &[AdapterSpec] = match (options.adapters, collection) {
        (false, _) => &[],
        (true, Collection::Clusters) => &options.cluster_adapters,
        (true, Collection::NodePools) => &options.nodepool_adapters,
    };
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let (queues, receivers) = match &options.broker {
        BrokerChoice::InProcess => {
            let (broker, receivers) = InProcessBroker::new(specs.len());
            (Queues::InProcess(broker), receivers)
        }
        BrokerChoice::RabbitMq {
            url,
            exchange_type,
            routing_key,
        } => {
            let exchange = super::broker::Exchange {
                name: &topic,
                kind: *exchange_type,
                routing_key,
            };
            let (queues, receivers) = RabbitQueues::bind(url, &exchange, &names).await?;
            let url = url.clone();
            (Queues::Rabbit { queues, url }, receivers)
        }
        BrokerChoice::PubSub {
            emulator_host,
            project,
        } => {
            let (queues, receivers) =
                PubSubQueues::bind(emulator_host, project, &topic, &names).await?;
            let queues = Queues::PubSub {
                queues,
                emulator_host: emulator_host.clone(),
                project: project.clone(),
            };
            (queues, receivers)
        }
    };
    let transport = if options.adapters_http {
        Transport::http(base_url).map_err(|e| SimError::Transport(e.to_string()))?
    } else {
        Transport::Direct(fleet.clone())
    };
    let seed = options.seed ^ (collection as u64).wrapping_mul(0x5bd1_e995);
    let adapters = AdapterSet::start(specs, receivers, transport, options.clock.clone(), seed);
    let daemon = match options.sentinel {
        true => Some(daemon(options, base_url, collection, &topic, &queues).await?),
        false => None,
    };
    Ok(Lane {
        collection,
        topic,
        daemon,
        published: 0,
        adapters,
        queues,
        stop,
    })
}

/// The sentinel for one lane, built as `sentinel serve` builds it.
async fn daemon(
    options: &SimOptions,
    base_url: &str,
    collection: Collection,
    topic: &str,
    queues: &Queues,
) -> Result<Daemon, SimError> {
    let config = lane_config(options, base_url, collection, topic)?;
    let rules = Arc::new(Rules::compile(&config)?);
    let api = ApiClient::new(api_client_config(&config))?;
    let publisher = match queues {
        Queues::InProcess(broker) => Publisher::Memory(MemoryPublisher::new(broker.clone())),
        Queues::Rabbit { url, .. } => {
            let (exchange_type, routing_key) = match &options.broker {
                BrokerChoice::RabbitMq {
                    exchange_type,
                    routing_key,
                    ..
                } => (*exchange_type, routing_key.clone()),
                BrokerChoice::InProcess | BrokerChoice::PubSub { .. } => {
                    (ExchangeType::Fanout, String::new())
                }
            };
            let rabbit = RabbitConfig {
                url: url.clone(),
                exchange_type,
                routing_key,
                publisher_confirm: true,
                ..RabbitConfig::default()
            };
            let opts = RabbitOptions {
                connection_name: format!("sentinel-simulate-{}", collection.path()),
                ..RabbitOptions::default()
            };
            Publisher::Rabbit(Box::new(
                RabbitPublisher::connect(&rabbit, topic, opts).await?,
            ))
        }
        Queues::PubSub {
            emulator_host,
            project,
            ..
        } => {
            let cfg = crate::broker::config::PubSubConfig {
                project_id: project.clone(),
                create_topic_if_missing: true,
                ..Default::default()
            };
            let opts = PubSubOptions {
                emulator_host: Some(emulator_host.clone()),
                ..PubSubOptions::default()
            };
            Publisher::PubSub(Box::new(PubSubPublisher::connect(&cfg, topic, opts).await?))
        }
    };
    // The full sweeps are scheduled on the simulation's time, as `now` is.
    let clock = options.clock.clone();
    let origin = clock.now();
    let ticks: Ticks = Arc::new(move || (clock.now() - origin).to_std().unwrap_or_default());
    Ok(Daemon::new(&config, rules, api, publisher).with_ticks(ticks))
}
