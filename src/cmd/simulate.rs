//! `sentinel simulate`: the whole system on one machine with nothing installed. A fake HyperFleet
//! API over HTTP on 127.0.0.1, simulated adapters answering events, and the real sentinel loop;
//! it runs until the fleet has converged (and converged again after a scripted change), or a
//! time limit, and prints a summary. `--api-only` serves just the fleet (and adapters) for a
//! sentinel running elsewhere.

use super::CmdError;
use crate::broker::BrokerError;
use crate::broker::config::{self as broker_config, ExchangeType};
use crate::daemon::config::{self, ConfigFlags};
use crate::daemon::logging::{self, LogSettings};
use crate::sim::adapters::{AdapterSpec, default_adapters, parse_duration};
use crate::sim::api::{Collection, realistic_resource, varied_resource};
use crate::sim::run::{self, ProgressStyle, RunOptions, Summary};
use crate::sim::simulation::{
    BrokerChoice, DEFAULT_CONFIG, DEFAULT_RABBITMQ_URL, Initial, SimOptions, Simulation,
};
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `sentinel simulate`.
#[derive(clap::Args, Debug, Clone)]
pub struct SimulateArgs {
    /// Clusters created at start.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub clusters: u64,
    /// Nodepools created at start (spread over the clusters; watched by a second sentinel).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub nodepools: u64,
    /// Time limit, e.g. 90s (default 120s; with --api-only, none).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Run each sentinel this many cycles, then wait for the adapters and stop (no scripted
    /// change). For measuring cycle time: `--clusters 1000000 --cycles 1 --no-adapters`.
    #[arg(long, value_name = "N")]
    pub cycles: Option<u64>,
    /// How the resources look at start: new (no conditions: published at once), pending
    /// (Reconciled=False: published after the debounce), reconciled (skipped), stale (due for
    /// the periodic re-check).
    #[arg(long, value_enum, default_value = "new")]
    pub initial: InitialArg,
    /// What the clusters look like: sample (small, shaped by --initial), realistic (about
    /// 2.3 KB each: five conditions, labels, spec, owner references; every third due for its
    /// periodic re-check, the others just reconciled) or varied (about 2.4 KB each, the same
    /// shape and decisions, but differing from one another as a production fleet's do: a page
    /// gzips about 12×, realistic's 31×; drawn from --seed). realistic and varied need
    /// --api-only and ignore --initial.
    #[arg(long, value_enum, default_value = "sample")]
    pub profile: ProfileArg,
    /// A cluster adapter, `name[:latency=5ms,fail=0.1,after=validation,silent]`; repeat for
    /// each. `after=X` reports Available=False until X succeeded; `wait=X` reports nothing
    /// until then. Default: validation:latency=2ms, dns:latency=5ms, pullsecret:latency=5ms,
    /// hypershift:latency=10ms.
    #[arg(long = "adapter", value_name = "SPEC")]
    pub adapters: Vec<String>,
    /// A nodepool adapter, same syntax. Default: validation, hypershift.
    #[arg(long = "nodepool-adapter", value_name = "SPEC")]
    pub nodepool_adapters: Vec<String>,
    /// Add a required cluster adapter that never reports (shows the debounce loop).
    #[arg(long = "silent-adapter", value_name = "NAME")]
    pub silent_adapter: Option<String>,
    /// Run no adapters (nothing reports; for measuring the sentinel alone).
    #[arg(long)]
    pub no_adapters: bool,
    /// Adapters fetch resources and report statuses over HTTP (default: in process).
    #[arg(long)]
    pub adapters_http: bool,
    /// Where events go: in-process, rabbitmq (exchange per topic, queues {topic}-{adapter}),
    /// or pubsub (the emulator at PUBSUB_EMULATOR_HOST; subscriptions {topic}-{adapter}).
    #[arg(long, value_enum, default_value = "in-process")]
    pub broker: BrokerArg,
    /// The RabbitMQ URL for --broker rabbitmq.
    #[arg(long, default_value = DEFAULT_RABBITMQ_URL, value_name = "URL")]
    pub rabbitmq_url: String,
    /// The type of the exchange for --broker rabbitmq: direct, fanout, topic or headers. It
    /// must be the sentinel's (RabbitMQ refuses a second declaration with another type).
    /// Default: `broker.rabbitmq.exchange_type` of the broker configuration `sentinel serve`
    /// would load here (BROKER_CONFIG_FILE, broker.yaml, BROKER_* env), else fanout.
    #[arg(long, value_name = "TYPE")]
    pub exchange_type: Option<String>,
    /// The Google Cloud project for --broker pubsub. Default: `broker.googlepubsub.project_id`
    /// of the broker configuration `sentinel serve` would load here, else hyperfleet-simulate.
    #[arg(long, value_name = "PROJECT")]
    pub pubsub_project: Option<String>,
    /// Topics are {prefix}-clusters and {prefix}-nodepools.
    #[arg(long, default_value = "sentinel-simulate", value_name = "PREFIX")]
    pub topic_prefix: String,
    /// A sentinel config file for the rules, poll interval, page size and message_data (its
    /// base URL, resource type and topic are replaced). Default: the default rules, poll 1s,
    /// pages of 100.
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override the poll interval, e.g. 500ms.
    #[arg(long, value_name = "DURATION")]
    pub poll_interval: Option<String>,
    /// Override the page size (1 to 100 for this API).
    #[arg(long, value_name = "N")]
    pub page_size: Option<String>,
    /// Skip the scripted change (10% of clusters get a new spec, 1% are deleted).
    #[arg(long)]
    pub no_change: bool,
    /// Serve only the fleet (and adapters, which need --broker rabbitmq or pubsub to hear a
    /// sentinel running elsewhere).
    #[arg(long)]
    pub api_only: bool,
    /// Where the fake API listens (default 127.0.0.1:0, with --api-only 127.0.0.1:8000).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Gzip the fake API's answers for a client that asks (as the real API does; off by
    /// default, so that the fleet server spends no CPU compressing).
    #[arg(long)]
    pub gzip: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// No progress output.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Seed of the simulated failures and of the varied fleet.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Log level of the sentinel's own logs on stderr.
    #[arg(long, default_value = "warn", value_name = "LEVEL")]
    pub log_level: tracing::Level,
}

/// `--initial`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitialArg {
    /// No conditions.
    New,
    /// Reconciled=False since creation.
    Pending,
    /// Reconciled just now.
    Reconciled,
    /// Reconciled long ago.
    Stale,
}

/// `--profile`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileArg {
    /// The sample resources (about 900 bytes).
    Sample,
    /// About 2.3 KB each, a third due.
    Realistic,
    /// About 2.4 KB each, a third due, as varied as a production fleet (gzips about 12×).
    Varied,
}

/// `--broker`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokerArg {
    /// In memory.
    InProcess,
    /// A real RabbitMQ.
    Rabbitmq,
    /// Google Cloud Pub/Sub's emulator (`PUBSUB_EMULATOR_HOST`).
    Pubsub,
}

/// Runs `sentinel simulate`, printing the summary to `out`.
pub fn main(args: &SimulateArgs, out: &mut dyn Write) -> Result<(), CmdError> {
    logging::init(&LogSettings {
        level: args.log_level,
        json: false,
        stderr: true,
        version: crate::daemon::VERSION.to_string(),
    });
    let (options, run_options) = options(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CmdError::Startup(format!("cannot start the async runtime: {e}")))?;
    let summary = runtime.block_on(simulate(options, run_options, args))?;
    if args.json {
        let json = serde_json::to_string(&summary).map_err(std::io::Error::other)?;
        writeln!(out, "{json}")?;
    } else {
        write!(out, "{}", summary.table())?;
    }
    Ok(())
}

async fn simulate(
    options: SimOptions,
    run_options: RunOptions,
    args: &SimulateArgs,
) -> Result<Summary, CmdError> {
    let api_only = args.api_only;
    let (mut clusters, nodepools) = (options.clusters, options.nodepools);
    let started = std::time::Instant::now();
    let sim = Simulation::start(options)
        .await
        .map_err(|e| CmdError::Startup(e.to_string()))?;
    sim.api().set_gzip(args.gzip);
    // `--profile realistic` or `varied` (checked to come with --api-only): the clusters are
    // added now, before any sentinel can list them.
    let (now, n, seed) = (sim.fleet().clock().now(), args.clusters, args.seed);
    let populated = match args.profile {
        ProfileArg::Sample => Ok(()),
        ProfileArg::Realistic => {
            let make = |i| realistic_resource(i, now);
            sim.fleet().populate(Collection::Clusters, n, make)
        }
        ProfileArg::Varied => {
            let make = |i| varied_resource(i, now, seed);
            sim.fleet().populate(Collection::Clusters, n, make)
        }
    };
    populated.map_err(|e| CmdError::Startup(e.to_string()))?;
    if args.profile != ProfileArg::Sample {
        clusters = n;
    }
    if run_options.progress != ProgressStyle::Quiet {
        eprintln!(
            "fleet of {clusters} clusters and {nodepools} nodepools ready in {:.1}s; fake HyperFleet API at {}",
            started.elapsed().as_secs_f64(),
            sim.base_url()
        );
        if api_only {
            for collection in [Collection::Clusters, Collection::NodePools] {
                if let Some(topic) = sim.topic(collection) {
                    eprintln!("  {}: topic {topic}", collection.path());
                }
            }
            eprintln!(
                "  e.g. HYPERFLEET_API_BASE_URL={} HYPERFLEET_RESOURCE_TYPE=clusters BROKER_TYPE=stdout sentinel serve -c config.yaml",
                sim.base_url()
            );
        }
    }
    Ok(run::run(sim, run_options).await)
}

/// The simulation and run options the arguments ask for.
fn options(args: &SimulateArgs) -> Result<(SimOptions, RunOptions), CmdError> {
    let input = |message: String| CmdError::Input {
        origin: "simulate".into(),
        message,
    };
    let specs = |texts: &[String], collection| -> Result<Vec<AdapterSpec>, CmdError> {
        if texts.is_empty() {
            return Ok(default_adapters(collection));
        }
        let parsed = texts.iter().map(|t| AdapterSpec::parse(t));
        parsed
            .collect::<Result<_, _>>()
            .map_err(|e| input(e.to_string()))
    };
    let mut cluster_adapters = specs(&args.adapters, Collection::Clusters)?;
    if let Some(name) = &args.silent_adapter {
        let spec =
            AdapterSpec::parse(&format!("{name}:silent")).map_err(|e| input(e.to_string()))?;
        cluster_adapters.push(spec);
    }
    let config_yaml = match &args.config {
        Some(path) => std::fs::read_to_string(path).map_err(|source| CmdError::Read {
            path: path.clone(),
            source,
        })?,
        None => DEFAULT_CONFIG.to_string(),
    };
    let duration = match &args.duration {
        Some(text) => Some(
            parse_duration(text)
                .ok_or_else(|| input(format!("--duration {text:?} is not a duration")))?,
        ),
        None if args.api_only => None,
        None => Some(Duration::from_secs(120)),
    };
    let broker = match args.broker {
        BrokerArg::InProcess => BrokerChoice::InProcess,
        BrokerArg::Rabbitmq => {
            let (exchange_type, routing_key) = rabbit_exchange(args.exchange_type.as_deref())?;
            BrokerChoice::RabbitMq {
                url: args.rabbitmq_url.clone(),
                exchange_type,
                routing_key,
            }
        }
        BrokerArg::Pubsub => {
            let var = crate::broker::EMULATOR_HOST_VAR;
            let emulator_host = std::env::var(var)
                .ok()
                .filter(|h| !h.trim().is_empty())
                .ok_or_else(|| {
                    input(format!(
                        "--broker pubsub needs the emulator's address in {var} (e.g. {var}=127.0.0.1:8085 \
                         after `gcloud beta emulators pubsub start --host-port=127.0.0.1:8085`)"
                    ))
                })?;
            BrokerChoice::PubSub {
                emulator_host,
                project: pubsub_project(args.pubsub_project.as_deref()),
            }
        }
    };
    // In-process queues cannot hear a sentinel in another process.
    let adapters = !(args.no_adapters || args.api_only && broker == BrokerChoice::InProcess);
    let default_listen = if args.api_only {
        ([127, 0, 0, 1], 8000)
    } else {
        ([127, 0, 0, 1], 0)
    };
    if args.profile != ProfileArg::Sample && !args.api_only {
        return Err(input(
            "--profile realistic and varied need --api-only".into(),
        ));
    }
    let options = SimOptions {
        // The realistic clusters are added once the API is up (see `simulate`).
        clusters: match args.profile {
            ProfileArg::Sample => args.clusters,
            ProfileArg::Realistic | ProfileArg::Varied => 0,
        },
        nodepools: args.nodepools,
        initial: match args.initial {
            InitialArg::New => Initial::New,
            InitialArg::Pending => Initial::Pending,
            InitialArg::Reconciled => Initial::Reconciled,
            InitialArg::Stale => Initial::Stale,
        },
        cluster_adapters,
        nodepool_adapters: specs(&args.nodepool_adapters, Collection::NodePools)?,
        adapters,
        adapters_http: args.adapters_http,
        broker,
        topic_prefix: args.topic_prefix.clone(),
        config_yaml,
        config_flags: ConfigFlags {
            poll_interval: args.poll_interval.clone(),
            hyperfleet_api_page_size: args.page_size.clone(),
            ..ConfigFlags::default()
        },
        sentinel: !args.api_only,
        listen: args.listen.unwrap_or(SocketAddr::from(default_listen)),
        seed: args.seed,
        ..SimOptions::default()
    };
    let progress = if args.quiet {
        ProgressStyle::Quiet
    } else if std::io::stderr().is_terminal() {
        ProgressStyle::Live
    } else {
        ProgressStyle::Lines
    };
    let run_options = RunOptions {
        duration,
        cycles: args.cycles,
        change: (!args.no_change && args.cycles.is_none()).then_some((0.10, 0.01)),
        progress,
    };
    Ok((options, run_options))
}

/// The project of `--pubsub-project`, else of the sentinel's broker configuration, else
/// `hyperfleet-simulate`.
fn pubsub_project(flag: Option<&str>) -> String {
    if let Some(project) = flag {
        return project.to_string();
    }
    match broker_config::load(&config::process_env) {
        Ok(cfg) if !cfg.googlepubsub.project_id.is_empty() => cfg.googlepubsub.project_id,
        _ => "hyperfleet-simulate".to_string(),
    }
}

/// The exchange type and routing key the sentinel under test publishes with: from its broker
/// configuration when one is found (the type overridden by `--exchange-type`), else fanout and
/// the empty key, the broker library's defaults.
fn rabbit_exchange(flag: Option<&str>) -> Result<(ExchangeType, String), CmdError> {
    let input = |message: String| CmdError::Input {
        origin: "simulate".into(),
        message,
    };
    let (mut kind, routing_key) = match broker_config::load(&config::process_env) {
        Ok(cfg) => (cfg.rabbitmq.exchange_type, cfg.rabbitmq.routing_key),
        Err(BrokerError::NotFound { .. }) => (ExchangeType::Fanout, String::new()),
        Err(e) if flag.is_some() => {
            tracing::warn!("broker configuration not used: {e}");
            (ExchangeType::Fanout, String::new())
        }
        Err(e) => {
            let lines: Vec<String> = e
                .to_string()
                .lines()
                .map(str::trim)
                .map(String::from)
                .collect();
            return Err(input(format!(
                "cannot read the sentinel's broker configuration for the exchange type (pass \
                 --exchange-type): {}",
                lines.join("; ")
            )));
        }
    };
    if let Some(text) = flag {
        kind = match text.trim().to_ascii_lowercase().as_str() {
            "direct" => ExchangeType::Direct,
            "fanout" => ExchangeType::Fanout,
            "topic" => ExchangeType::Topic,
            "headers" => ExchangeType::Headers,
            _ => {
                return Err(input(format!(
                    "--exchange-type {text:?}: expected direct, fanout, topic or headers"
                )));
            }
        };
    }
    Ok((kind, routing_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_type_flag_is_one_of_the_amqp_types() {
        for (text, kind) in [
            ("topic", ExchangeType::Topic),
            (" Fanout ", ExchangeType::Fanout),
            ("direct", ExchangeType::Direct),
            ("headers", ExchangeType::Headers),
        ] {
            assert_eq!(rabbit_exchange(Some(text)).map(|(k, _)| k).ok(), Some(kind));
        }
        let err = rabbit_exchange(Some("x-delayed")).map(|(k, _)| k);
        assert!(
            matches!(&err, Err(CmdError::Input { message, .. }) if message.contains("expected direct, fanout, topic or headers")),
            "{err:?}"
        );
    }
}
