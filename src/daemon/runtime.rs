//! The poll loop: every poll_interval, list the resources page by page, decide for each with the
//! compiled rules, and publish a CloudEvent for each one due.
//!
//! Invariants: cycles never overlap (an overrun starts the next at once); `now` is taken once per
//! cycle; pages are evaluated as they arrive, so memory does not grow with the fleet; events are
//! published in the order resources arrive; a resource is published at most once per cycle.
//!
//! Shutdown is cooperative: once the shutdown flag turns true, a page being fetched is abandoned
//! at once, a page being published gets at most [`SHUTDOWN_GRACE`] to finish (its confirms), and
//! no further page is started.

use super::api::{ApiClient, ApiClientConfig, ApiError, search_from_selector};
use super::broker::Publisher;
use super::config::Config;
use super::event::Event;
use super::health::HealthState;
use super::metrics::Metrics;
use super::telemetry::{self, Tracing};
use crate::cel::time::Timestamp;
use crate::resource::{MAX_RESOURCE_BYTES, Resource, TOO_LARGE_REASON, Text};
use crate::rules::Rules;
use opentelemetry::{Context, KeyValue};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::{debug, error, info, warn};

/// How long a page already being published may take to finish once shutdown is requested.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Everything one sentinel loop needs.
pub struct Daemon {
    /// `clusters`, `nodepools`, …
    pub resource_type: String,
    /// The label search built from resource_selector, if any.
    pub search: Option<String>,
    /// The broker topic (for logs and metrics).
    pub topic: String,
    /// How often a cycle starts.
    pub poll_interval: Duration,
    /// The compiled rules.
    pub rules: Arc<Rules>,
    /// The HyperFleet API client.
    pub api: ApiClient,
    /// Where events go.
    pub publisher: Publisher,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// What /healthz and /readyz report.
    pub health: Arc<HealthState>,
}

/// What one cycle did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CycleReport {
    /// Resources evaluated.
    pub total: usize,
    /// Events published (acknowledged when confirms are on).
    pub published: usize,
    /// Resources skipped by the rules (a resource with an empty id is counted only in `total`,
    /// as in Go).
    pub skipped: usize,
    /// Resources due whose publish failed.
    pub failed: usize,
    /// Whether every page was fetched (a fetch error or shutdown abandons the cycle).
    pub completed: bool,
}

/// The current wall-clock time as a CEL timestamp (the epoch if the clock is outside year
/// 1..=9999).
pub fn wall_clock() -> Timestamp {
    Timestamp::from_system_time(std::time::SystemTime::now()).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The API client settings a config gives (tracing off: `serve` sets it when tracing is on).
pub fn api_client_config(config: &Config) -> ApiClientConfig {
    let api = &config.clients.hyperfleet_api;
    ApiClientConfig {
        base_url: api.base_url.clone(),
        version: api.version.clone(),
        timeout: api.timeout,
        page_size: api.page_size,
        token_path: api.auth.as_ref().map(|a| a.token_path.clone()),
        token_cache_ttl: api
            .auth
            .as_ref()
            .map(|a| a.token_cache_ttl)
            .unwrap_or_default(),
        user_agent: format!(
            "hyperfleet-sentinel/{} ({})",
            super::VERSION,
            config.sentinel.name
        ),
        ..ApiClientConfig::default()
    }
}

impl Daemon {
    /// The loop of `config` deciding with `rules`, listing through `api` and publishing to
    /// `publisher` on `config.clients.broker.topic`: the one way `serve` and `simulate` build
    /// it. Its metrics (labelled with [`super::VERSION`], the resource type, the selector and
    /// the topic) and health state are new; serve shares them with its servers
    /// ([`Daemon::metrics`], [`Daemon::health`]).
    pub fn new(config: &Config, rules: Arc<Rules>, api: ApiClient, publisher: Publisher) -> Daemon {
        let selector = config.selector_pairs();
        let topic = config.clients.broker.topic.clone();
        Daemon {
            resource_type: config.resource_type.clone(),
            search: search_from_selector(selector.iter().map(|(l, v)| (l.as_str(), v.as_str()))),
            metrics: Metrics::new(super::VERSION, &config.resource_type, &selector, &topic),
            topic,
            poll_interval: config.poll_interval,
            rules,
            api,
            publisher,
            health: HealthState::new(config.poll_interval),
        }
    }
}

impl Daemon {
    /// Runs cycles until `shutdown` turns true, then closes the publisher (waiting a bounded
    /// time for outstanding confirms).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        info!(subset = %self.resource_type, topic = %self.topic,
            "Starting sentinel resource_type={} poll_interval={}", self.resource_type,
            super::config::go_duration_string(self.poll_interval));
        while !*shutdown.borrow() {
            let started = Instant::now();
            self.cycle(wall_clock(), &mut shutdown).await;
            let next = tokio::time::Instant::from_std(started + self.poll_interval);
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = stopped(&mut shutdown) => {}
            }
        }
        info!("Stopping sentinel due to shutdown signal");
        if let Err(e) = self.publisher.close().await {
            warn!(error = %e, "Closing the broker connection failed");
        }
    }

    /// One cycle at `now`: fetch page by page, decide, publish. Abandons the rest of the cycle on
    /// a fetch error or when `shutdown` turns true (see the module docs for the safe points).
    /// A dropped sender never counts as a shutdown request.
    ///
    /// With the API client's tracing on, the cycle is one trace: a `sentinel.poll` root span
    /// (current while the cycle runs, so its log lines carry its ids), the API GETs, one
    /// `sentinel.evaluate` per resource and one `<topic> publish` per event under it.
    pub async fn cycle(
        &mut self,
        now: Timestamp,
        shutdown: &mut watch::Receiver<bool>,
    ) -> CycleReport {
        use opentelemetry::context::FutureExt as _;
        let tracing = self.api.config().tracing.clone();
        let resource_type = &self.resource_type;
        let poll = tracing.start("sentinel.poll", None, || {
            vec![KeyValue::new(
                "hyperfleet.resource_type",
                resource_type.clone(),
            )]
        });
        let Some(poll) = poll else {
            return self.cycle_in(now, shutdown, None).await;
        };
        let traced = Traced {
            tracing,
            poll: poll.clone(),
            publish_name: Cow::Owned(format!("{} publish", self.topic)),
            messaging_system: self.publisher.messaging_system(),
        };
        let report = self
            .cycle_in(now, shutdown, Some(&traced))
            .with_context(poll.clone())
            .await;
        telemetry::end(&poll);
        report
    }

    async fn cycle_in(
        &mut self,
        now: Timestamp,
        shutdown: &mut watch::Receiver<bool>,
        traced: Option<&Traced>,
    ) -> CycleReport {
        let started = Instant::now();
        let mut report = CycleReport::default();
        // Readiness reads the connection itself from now on; a connection lost since the last
        // cycle is re-established here, so readiness recovers even when nothing is published.
        self.health.watch_broker(self.publisher.liveness());
        tokio::select! {
            biased;
            _ = stopped(shutdown) => return report,
            () = self.publisher.reconnect_if_down() => {}
        }
        let mut pending = 0usize;
        let mut pager = self.api.list_projected(
            &self.resource_type,
            self.search.as_deref(),
            self.rules.projection.clone(),
        );
        let mut scratch = crate::rules::decision::Scratch::default();
        let mut events: Vec<Event> = Vec::new();
        let mut ids: Vec<Text> = Vec::new();
        // (evaluate, publish) span contexts of `events`, in step with them; empty untraced.
        let mut spans: Vec<(Context, Context)> = Vec::new();
        loop {
            let page = tokio::select! {
                biased;
                _ = stopped(shutdown) => {
                    info!(subset = %self.resource_type, "Shutdown requested, abandoning the current cycle");
                    return report;
                }
                page = pager.next_page() => page,
            };
            let page = match page {
                None => break,
                Some(Ok(page)) => page,
                Some(Err(e)) => {
                    if let Some(t) = traced {
                        telemetry::fail(&t.poll, "fetch resources failed");
                    }
                    self.fetch_failed(&e);
                    return report;
                }
            };
            events.clear();
            ids.clear();
            spans.clear();
            for resource in page.items {
                report.total += 1;
                let resource = Arc::new(resource);
                let id = resource.id().map_or("", |t| t.as_str());
                let eval = traced.and_then(|t| t.evaluate(&self.resource_type, id));
                // The evaluate span is current for this resource's log lines (no await inside).
                let _current = eval.clone().map(Context::attach);
                if id.is_empty() {
                    // As in Go: counted in the total only, neither skipped nor in a metric.
                    let kind = resource.kind().map_or("", |t| t.as_str());
                    warn!(subset = %self.resource_type, topic = %self.topic, "Skipping resource with empty ID kind={kind}");
                    continue;
                }
                if let Some(bytes) = resource.too_large() {
                    warn!(subset = %self.resource_type, bytes, limit = MAX_RESOURCE_BYTES,
                        "Skipping resource larger than the limit resource_id={id}");
                    self.metrics.skipped(TOO_LARGE_REASON);
                    report.skipped += 1;
                    if let Some(eval) = &eval {
                        Traced::decided(eval, TOO_LARGE_REASON);
                    }
                    continue;
                }
                let decision = self.rules.decision.decide(&resource, now, &mut scratch);
                let reason = decision.reason.text();
                if let Some(eval) = &eval {
                    Traced::decided(eval, &reason);
                }
                if !decision.publish {
                    self.metrics.skipped(&reason);
                    debug!(decision_reason = %reason, subset = %self.resource_type, "Skipped resource resource_id={id}");
                    report.skipped += 1;
                    continue;
                }
                pending += 1;
                let mut event = self.event(&resource, decision.reason.shared_text());
                if let (Some(t), Some(eval)) = (traced, eval) {
                    let publish = t.publish(&eval, &event);
                    event.traceparent = telemetry::traceparent(&publish);
                    spans.push((eval, publish));
                }
                events.push(event);
                // A share of the page (no copy), as the resource holds it.
                ids.push(resource.id_text());
            }
            if !self
                .publish_or_stop(&events, &ids, &spans, &mut report, shutdown)
                .await
            {
                return report;
            }
        }
        report.completed = true;
        // Go logs this line once the whole listing is in; pages are decided as they arrive
        // here, so it follows the last page.
        info!(subset = %self.resource_type, "Fetched resources count={} label_selectors={}",
            report.total, self.metrics.selector_count());
        self.finish(&report, pending, started);
        report
    }

    fn event(&self, resource: &Arc<Resource>, reason: Arc<str>) -> Event {
        let data = self.rules.message_data.evaluate(resource, &reason, &mut |omitted| {
            warn!(subset = %self.resource_type, "CEL expression evaluation failed for {}: {}", omitted.path, omitted.why);
        });
        let kind = resource.kind().map_or("", |t| t.as_str());
        Event::new(kind, data)
    }

    /// Publishes one page; on a shutdown request meanwhile, lets it finish within
    /// [`SHUTDOWN_GRACE`]. False when the cycle must stop here.
    async fn publish_or_stop(
        &mut self,
        events: &[Event],
        ids: &[Text],
        spans: &[(Context, Context)],
        report: &mut CycleReport,
        shutdown: &mut watch::Receiver<bool>,
    ) -> bool {
        let resource_type = self.resource_type.clone();
        let publishing = self.publish(events, ids, spans, report);
        tokio::pin!(publishing);
        tokio::select! {
            biased;
            () = &mut publishing => true,
            () = stopped(shutdown) => {
                info!(subset = %resource_type, pending = events.len(),
                    "Shutdown requested, waiting for the current page's publishes to finish");
                if tokio::time::timeout(SHUTDOWN_GRACE, publishing).await.is_err() {
                    warn!(subset = %resource_type,
                        "Abandoned publishing after {SHUTDOWN_GRACE:?}; events may be lost or duplicated");
                }
                false
            }
        }
    }

    async fn publish(
        &mut self,
        events: &[Event],
        ids: &[Text],
        spans: &[(Context, Context)],
        report: &mut CycleReport,
    ) {
        if events.is_empty() {
            return;
        }
        let results = self.publisher.publish_batch_keyed(events, ids).await;
        for (i, (id, result)) in ids.iter().zip(results).enumerate() {
            let span = spans.get(i);
            // The result's log line is written under the resource's evaluate span, as in Go.
            let _current = span.map(|(eval, _)| eval.clone().attach());
            if let (Some((_, publish)), Err(_)) = (span, &result) {
                telemetry::fail(publish, "publish failed");
            }
            if let Some((eval, publish)) = span {
                telemetry::end(publish);
                telemetry::end(eval);
            }
            match result {
                Ok(()) => {
                    self.metrics.published("message decision matched");
                    info!(decision_reason = "message decision matched", topic = %self.topic, subset = %self.resource_type,
                        "Published event resource_id={id}");
                    report.published += 1;
                }
                Err(e) => {
                    self.metrics.publish_failed();
                    error!(error = %e, topic = %self.topic, subset = %self.resource_type,
                        "Failed to publish event resource_id={id}");
                    report.failed += 1;
                }
            }
        }
    }

    fn fetch_failed(&self, e: &ApiError) {
        self.metrics.api_error(e.metric_label());
        error!(error = %e, subset = %self.resource_type, topic = %self.topic, "Trigger failed: failed to fetch resources");
    }

    fn finish(&self, report: &CycleReport, pending: usize, started: Instant) {
        let seconds = started.elapsed().as_secs_f64();
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.metrics.cycle(pending, seconds, Some(unix));
        self.health.poll_succeeded();
        info!(subset = %self.resource_type, topic = %self.topic,
            "Trigger cycle completed total={} published={} skipped={} duration={seconds:.3}s",
            report.total, report.published, report.skipped);
    }
}

/// What a traced cycle starts its spans with.
struct Traced {
    tracing: Tracing,
    poll: Context,
    publish_name: Cow<'static, str>,
    messaging_system: &'static str,
}

impl Traced {
    /// The `sentinel.evaluate` span of resource `id`, child of the poll span.
    fn evaluate(&self, resource_type: &str, id: &str) -> Option<Context> {
        self.tracing
            .start("sentinel.evaluate", Some(&self.poll), || {
                vec![
                    KeyValue::new("hyperfleet.resource_type", resource_type.to_string()),
                    KeyValue::new("hyperfleet.resource_id", id.to_string()),
                ]
            })
    }

    /// Records the decision on the evaluate span (a skipped resource's span ends when its
    /// context is dropped, at the end of the resource's iteration).
    fn decided(eval: &Context, reason: &str) {
        use opentelemetry::trace::TraceContextExt as _;
        eval.span().set_attribute(KeyValue::new(
            "hyperfleet.decision_reason",
            reason.to_string(),
        ));
    }

    /// The `<topic> publish` span of `event`, child of its evaluate span.
    fn publish(&self, eval: &Context, event: &Event) -> Context {
        let topic = self.publish_name.strip_suffix(" publish").unwrap_or("");
        self.tracing
            .start(self.publish_name.clone(), Some(eval), || {
                vec![
                    KeyValue::new("messaging.system", self.messaging_system),
                    KeyValue::new("messaging.operation.type", "publish"),
                    KeyValue::new("messaging.destination.name", topic.to_string()),
                    KeyValue::new("messaging.message.id", event.id.to_string()),
                ]
            })
            .unwrap_or_else(|| eval.clone())
    }
}

/// Resolves once the shutdown flag is true (at once if it already is); never resolves when the
/// sender is gone without having requested a shutdown.
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}
