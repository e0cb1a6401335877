//! `sentinel serve`: the daemon. Startup is strict and in the Go sentinel's order: config, logging,
//! rules, API probe, broker, HTTP servers, then the poll loop until SIGTERM/SIGINT.

use super::CmdError;
use crate::api::ApiClient;
use crate::daemon::VERSION;
use crate::daemon::config::{self, Config, ConfigFlags, LogFormat, LogLevel, LogOutput};
use crate::daemon::health;
use crate::daemon::logging::{self, LogSettings};
use crate::daemon::runtime::{self, Daemon};
use crate::rules::Rules;
use crate::telemetry::{self, Telemetry, TraceSettings};
use crate::{broker, broker::config as broker_config};
use std::sync::Arc;
use tokio::sync::watch;
use tracing::info;

/// Options of `sentinel serve`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The config file and the overrides of its values.
    #[command(flatten)]
    pub flags: ConfigFlags,
    /// Address of the health server (/healthz, /readyz).
    #[arg(
        long = "health-server-bindaddress",
        default_value = ":8080",
        value_name = "ADDR"
    )]
    pub health_addr: String,
    /// Address of the metrics server (/metrics).
    #[arg(
        long = "metrics-server-bindaddress",
        default_value = ":9090",
        value_name = "ADDR"
    )]
    pub metrics_addr: String,
}

/// A startup failure as one line: main prints it on stderr, so multi-line causes (a broker.yaml
/// problem list, an HTML error page in a probe answer) are joined with `; `, except after a
/// line that introduces the next (ends with `:`), which a space follows.
fn startup(what: &str, e: impl std::fmt::Display) -> CmdError {
    CmdError::Startup(format!("{what}: {}", one_line(&e.to_string())))
}

/// `text`'s non-blank lines, trimmed, on one line (see [`startup`]).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

/// The settings the logger takes from the config.
pub fn log_settings(config: &Config) -> LogSettings {
    LogSettings {
        level: match config.log.level {
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Error => tracing::Level::ERROR,
        },
        json: config.log.format == LogFormat::Json,
        stderr: config.log.output == LogOutput::Stderr,
        version: VERSION.to_string(),
    }
}

/// Go's first line: the commit and the log settings as extras.
fn log_start(config: &Config) {
    let log_level = match config.log.level {
        LogLevel::Debug => "debug",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    };
    let log_format = match config.log.format {
        LogFormat::Json => "json",
        LogFormat::Text => "text",
    };
    info!(
        commit = env!("SENTINEL_COMMIT"),
        log_level, log_format, "Starting HyperFleet Sentinel"
    );
}

/// Runs `sentinel serve` to completion (exit 0 after a signal).
pub fn main(args: &ServeArgs) -> Result<(), CmdError> {
    let config = logging::with_startup_logger(VERSION, || load_config(args))?;
    logging::init(&log_settings(&config));
    // The cycle runs on this thread (`block_on`), and so does every task it spawns: the API's
    // pages fetched ahead, the broker's connection. It decodes, decides and publishes; reading
    // the sockets in between is cheaper here than on a worker that parks and wakes it around
    // every page (on a settled million: 2.6–2.8 s of CPU with two workers, 1.6–1.7 s here).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| startup("cannot start the async runtime", e))?;
    // The health and metrics servers (and the signals) have a thread of their own, so that they
    // answer (and `/healthz` reports a stale poll) whatever the cycle's thread is doing, as in
    // Go.
    let servers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("servers")
        .enable_all()
        .build()
        .map_err(|e| startup("cannot start the async runtime", e))?;
    // As in Go, tracing is set up (or reported off) before the first "Starting" line.
    let telemetry = {
        let _inside = runtime.enter();
        init_tracing(config.tracing_enabled)
    };
    let result = (|| {
        log_start(&config);
        config.warnings.iter().for_each(|w| tracing::warn!("{w}"));
        if config.debug_config {
            info!(
                "Debug config enabled - merged configuration:\n{}",
                config::dump(&config)
            );
        }
        let rules = Arc::new(Rules::compile(&config)?);
        rules.log_warnings();
        runtime.block_on(serve(
            args,
            config,
            rules,
            telemetry.as_ref(),
            servers.handle(),
        ))
    })();
    runtime.block_on(shutdown_tracing(telemetry));
    result
}

/// Loads the configuration with Go's two lines around it (logged by the start-up logger, see
/// [`logging::with_startup_logger`]); a config that fails to load gets only the first.
fn load_config(args: &ServeArgs) -> Result<Config, CmdError> {
    let path = config::config_path(&args.flags, &config::process_env);
    info!("Loading configuration from {}", path.display());
    let config = config::load(&args.flags, &config::process_env)?;
    info!(
        "Configuration loaded successfully: name={} resource_type={}",
        config.sentinel.name, config.resource_type
    );
    Ok(config)
}

/// Go's tracing setup: off is one INFO; an exporter that cannot be built is one WARN and the
/// daemon runs untraced. Must run inside the runtime (the gRPC exporter needs it).
pub fn init_tracing(enabled: bool) -> Option<Telemetry> {
    if !enabled {
        info!(tracing_enabled = false, "OpenTelemetry disabled");
        return None;
    }
    let settings = TraceSettings::from_env(&config::process_env);
    settings.warnings.iter().for_each(|w| tracing::warn!("{w}"));
    match telemetry::init(&settings, VERSION) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(error = %e, "Failed to initialize OpenTelemetry");
            None
        }
    }
}

/// Flushes the last spans, bounded by [`telemetry::SHUTDOWN_TIMEOUT`] (an unreachable exporter
/// cannot hold shutdown longer).
pub async fn shutdown_tracing(telemetry: Option<Telemetry>) {
    let Some(telemetry) = telemetry else { return };
    let flush =
        tokio::task::spawn_blocking(move || telemetry.shutdown(telemetry::SHUTDOWN_TIMEOUT));
    let bound = telemetry::SHUTDOWN_TIMEOUT + std::time::Duration::from_millis(500);
    match tokio::time::timeout(bound, flush).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::error!(error = %e, "Failed to shutdown OpenTelemetry"),
        Ok(Err(e)) => tracing::error!(error = %e, "Failed to shutdown OpenTelemetry"),
        Err(_) => tracing::error!("Failed to shutdown OpenTelemetry: timed out"),
    }
}

async fn serve(
    args: &ServeArgs,
    config: Config,
    rules: Arc<Rules>,
    telemetry: Option<&Telemetry>,
    servers: &tokio::runtime::Handle,
) -> Result<(), CmdError> {
    let mut api_settings = runtime::api_client_config(&config);
    if let Some(t) = telemetry {
        api_settings.tracing = t.tracing();
    }
    let api =
        ApiClient::new(api_settings).map_err(|e| startup("invalid API client settings", e))?;
    api.probe(&config.resource_type)
        .await
        .map_err(|e| startup("HyperFleet API connectivity check failed", e))?;
    info!("Initialized HyperFleet client");
    let broker_cfg = broker_config::load(&config::process_env)
        .map_err(|e| startup("cannot load the broker configuration", e))?;
    if broker_cfg.log_config {
        info!("Broker configuration: {}", broker_cfg.masked());
    }
    let publisher = broker::connect(&broker_cfg, &config.clients.broker.topic)
        .await
        .map_err(|e| startup("cannot connect to the broker", e))?;
    info!("Initialized broker publisher");

    let daemon = Daemon::new(&config, rules, api, publisher);
    let health = daemon.health().clone();
    health.watch_broker(daemon.broker_liveness());
    let metrics = daemon.metrics().clone();
    let health_addr = health::parse_bind_address(&args.health_addr)
        .map_err(|e| startup("--health-server-bindaddress", e))?;
    let metrics_addr = health::parse_bind_address(&args.metrics_addr)
        .map_err(|e| startup("--metrics-server-bindaddress", e))?;
    // The servers outlive the loop: readiness reports the shutdown while the loop winds down.
    let (servers_stop, servers_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    info!("Starting health server on {}", args.health_addr);
    let (_, health_task) = health::serve_on(
        servers,
        health_addr,
        health::health_router(health.clone()),
        stopped(servers_rx.clone()),
    )
    .map_err(|e| startup(&format!("cannot listen on {health_addr}"), e))?;
    info!("Starting metrics server on {}", args.metrics_addr);
    let (_, metrics_task) = health::serve_on(
        servers,
        metrics_addr,
        health::metrics_router(metrics.clone()),
        stopped(servers_rx),
    )
    .map_err(|e| startup(&format!("cannot listen on {metrics_addr}"), e))?;

    let (stop_tx, stop_rx) = watch::channel(false);
    let signal_health = health.clone();
    // Registered here, not in the task, so a signal from now on is never the default action;
    // handled on the servers' thread, so that a second signal ends the process even while the
    // loop's thread is blocked.
    let mut signals = {
        let _servers = servers.enter();
        Signals::register()
    };
    servers.spawn(async move {
        signals.wait().await;
        info!("Received shutdown signal");
        signal_health.shutting_down();
        let _ = stop_tx.send(true);
        // A second signal means the operator will not wait for the graceful shutdown (keeping
        // the sender until then: the loop must not take a dropped channel for a signal).
        signals.wait().await;
        tracing::warn!("Received a second shutdown signal, exiting at once");
        std::process::exit(SECOND_SIGNAL_EXIT);
    });

    info!("Starting sentinel loop");
    daemon.run(stop_rx).await;
    let _ = servers_stop.send(true);
    let _ = health_task.await;
    let _ = metrics_task.await;
    info!("Sentinel stopped gracefully");
    Ok(())
}

/// The exit status when a second SIGTERM or SIGINT cuts the graceful shutdown short (128 +
/// SIGTERM's number, what a shell reports for a process the signal ended).
const SECOND_SIGNAL_EXIT: i32 = 143;

/// SIGTERM and SIGINT, registered once.
struct Signals(Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>);

impl Signals {
    fn register() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Signals(Some((term, int))),
            _ => Signals(None),
        }
    }

    async fn wait(&mut self) {
        match &mut self.0 {
            Some((term, int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            // Without signal handlers (not expected on Linux) fall back to Ctrl-C.
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn multi_line_causes_join_into_one_line() {
        assert_eq!(
            one_line("invalid broker configuration (environment):\n  broker.type is required"),
            "invalid broker configuration (environment): broker.type is required"
        );
        assert_eq!(
            one_line("invalid broker configuration (broker.yaml):\n  a\n  b\n"),
            "invalid broker configuration (broker.yaml): a; b"
        );
        assert_eq!(
            one_line("<html>\n\n <body>x</body>\n</html>"),
            "<html>; <body>x</body>; </html>"
        );
        assert_eq!(one_line("plain"), "plain");
    }
}
