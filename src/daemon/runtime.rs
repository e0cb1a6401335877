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

use super::config::Config;
use super::health::HealthState;
use super::listing::{Ctx, Listing, Next, Phase};
use super::logging;
use super::metrics::Metrics;
use crate::api::{ApiClient, ApiClientConfig, ApiError};
use crate::broker::event::Event;
use crate::broker::{Outbound, PublishError, Publisher};
#[cfg(test)]
use crate::cel::host::SharedText;
use crate::cel::host::{MAX_RESOURCE_BYTES, Resource, TOO_LARGE_REASON, Text};
use crate::cel::time::Timestamp;
use crate::rules::Rules;
use crate::rules::decision::Scratch;
use crate::telemetry;
use crate::telemetry::spans::{CycleSpans, Destination, ResourceSpan};
use opentelemetry::{Context, KeyValue};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::{debug, error, info, warn};

/// How long a page already being published may take to finish once shutdown is requested.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The `reason` a resource is skipped with when its item is not a JSON object with a string
/// `id` (the Go sentinel fails the page on it; here it costs that resource only).
pub const UNDECODABLE_REASON: &str = "resource could not be decoded";

/// One sentinel loop: what it lists, how it decides, where it publishes, what it reports.
/// Built by [`Daemon::new`]; read through its accessors.
pub struct Daemon {
    /// `clusters`, `nodepools`, …
    resource_type: String,
    /// What each cycle asks the API for (the selector's search, the server filter, fields),
    /// and what the API accepts of it.
    query: super::query::Query,
    /// The monotonic clock the full sweeps are scheduled on.
    ticks: Ticks,
    /// The broker topic (for logs, metrics and the publish spans).
    topic: String,
    /// How often a cycle starts.
    poll_interval: Duration,
    /// The compiled rules.
    rules: Arc<Rules>,
    /// The HyperFleet API client.
    api: ApiClient,
    /// Where events go.
    publisher: Publisher,
    /// Prometheus metrics.
    metrics: Metrics,
    /// What /healthz and /readyz report.
    health: Arc<HealthState>,
    /// The `Published event` line.
    published_log: logging::PublishedLog,
    /// Cycles run so far: a fetch failure of the first is Go's `Initial trigger failed`.
    cycles: u64,
}

/// A monotonic clock: time since an origin of its own, never going back (the full sweeps'
/// schedule; `simulate` gives its simulated time).
pub type Ticks = Arc<dyn Fn() -> Duration + Send + Sync>;

/// [`Ticks`] on [`Instant`], from now.
pub fn monotonic() -> Ticks {
    let origin = Instant::now();
    Arc::new(move || origin.elapsed())
}

/// What the loop does with one resource.
// Not boxed: a due resource's step is moved once, into the page's vector; a box would be an
// allocation per event.
#[allow(clippy::large_enum_variant)]
enum Step {
    /// A resource without an id: counted in the total only, as in Go.
    Ignored,
    /// Skipped by the rules, or too large to decode.
    Skipped,
    /// Due: its event goes out with the page.
    Publish(Outgoing),
}

/// A due resource's event on its way out, with what travels with it.
pub struct Outgoing {
    event: Event,
    /// The ordering key: the resource's id (a share of the page, no copy).
    key: Text,
    /// The resource's evaluate and publish spans, when the cycle is traced.
    spans: Option<Spans>,
}

/// The spans of one published resource, and what its evaluate span records when it ends.
struct Spans {
    evaluate: ResourceSpan,
    publish: ResourceSpan,
    reason: Arc<str>,
}

impl Outbound for Outgoing {
    fn event(&self) -> &Event {
        &self.event
    }

    fn ordering_key(&self) -> Option<&str> {
        Some(self.key.as_str())
    }
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
    /// Whether the listing carried the server filter (`false`: every resource the selector
    /// matches was listed).
    pub filtered: bool,
    /// Resources a full sweep published that the filtered listing had left out (and the API,
    /// asked again, still left out): 0 unless the API's search and the rules disagree.
    pub left_out: usize,
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
        let plan = super::plan::Plan::new(config, &rules);
        for w in &plan.warnings {
            warn!("{w}");
        }
        if let Some(filter) = &plan.filter {
            let sweep = plan.sweep.map(crate::common::go::go_duration_string);
            info!(filter = %filter, full_sweep_interval = sweep.as_deref().unwrap_or("none"),
                "Listing with a server-side filter");
        }
        if let Some(fields) = &plan.fields {
            info!(fields = %fields.param(), "Listing only the fields the rules read");
        }
        let metrics = Metrics::new(super::VERSION, &config.resource_type, &selector, &topic);
        let query = super::query::Query::new(plan);
        metrics.fallbacks(query.filter_fallback(), query.fields_fallback());
        if query.plan().filter.is_some() {
            metrics.left_out(0);
        }
        Daemon {
            resource_type: config.resource_type.clone(),
            query,
            ticks: monotonic(),
            metrics,
            published_log: logging::PublishedLog::new(&topic, &config.resource_type),
            cycles: 0,
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
    /// `clusters`, `nodepools`, …
    pub fn resource_type(&self) -> &str {
        &self.resource_type
    }

    /// How often a cycle starts.
    pub fn poll_interval(&self) -> Duration {
        self.poll_interval
    }

    /// The HyperFleet API client it lists with.
    pub fn api(&self) -> &ApiClient {
        &self.api
    }

    /// The same loop listing through `api` (another client of the same API: tests use it to
    /// turn tracing on).
    pub fn with_api(self, api: ApiClient) -> Daemon {
        Daemon { api, ..self }
    }

    /// The same loop scheduling its full sweeps on `ticks` (`simulate` and tests: their own
    /// time).
    pub fn with_ticks(self, ticks: Ticks) -> Daemon {
        Daemon { ticks, ..self }
    }

    /// Asks the API whether it accepts what the plan sends beyond Go's requests (the server
    /// filter, `fields`), one item each, and goes without what it refuses: before the first
    /// cycle ([`Daemon::run_with`]), after a cycle's request is refused, and every full sweep
    /// interval while something is refused. Nothing without those settings.
    pub async fn probe_server_side(&mut self, now: Timestamp) {
        let plan = self.query.plan();
        if plan.filter.is_none() && plan.fields.is_none() {
            return;
        }
        let mut ctx = Ctx {
            api: &self.api,
            resource_type: &self.resource_type,
            query: &mut self.query,
            metrics: &self.metrics,
            tick: (self.ticks)(),
            now,
        };
        super::listing::probe(&mut ctx).await;
    }

    /// The compiled rules it decides with.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Its Prometheus metrics (shared with the `/metrics` server).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// What /healthz and /readyz report (shared with the health server).
    pub fn health(&self) -> &Arc<HealthState> {
        &self.health
    }

    /// The publisher's connection, as readiness reads it.
    pub fn broker_liveness(&self) -> crate::broker::Liveness {
        self.publisher.liveness()
    }

    /// Closes the publisher, waiting a bounded time for outstanding confirms.
    pub async fn close(&mut self) -> Result<(), PublishError> {
        self.publisher.close().await
    }

    /// Runs cycles until `shutdown` turns true, then closes the publisher (waiting a bounded
    /// time for outstanding confirms): `serve`'s loop, on the wall clock.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        info!(subset = %self.resource_type, topic = %self.topic,
            "Starting sentinel resource_type={} poll_interval={}", self.resource_type,
            crate::common::go::go_duration_string(self.poll_interval));
        self.run_with(wall_clock, |_, _| ControlFlow::Continue(()), &mut shutdown)
            .await;
        info!("Stopping sentinel due to context cancellation");
        if let Err(e) = self.close().await {
            warn!(error = %e, "Closing the broker connection failed");
        }
    }

    /// The loop: the server-side settings probed ([`Daemon::probe_server_side`]), then a cycle
    /// at `clock()` every `poll_interval` (at once after an overrun), each one's report and
    /// duration handed to `on_cycle`, until `shutdown` turns true or `on_cycle` breaks.
    /// [`Daemon::run`] runs it on the wall clock; `simulate` on its simulated clock.
    pub async fn run_with(
        &mut self,
        clock: impl Fn() -> Timestamp,
        mut on_cycle: impl FnMut(CycleReport, Duration) -> ControlFlow<()>,
        shutdown: &mut watch::Receiver<bool>,
    ) {
        tokio::select! {
            biased;
            _ = stopped(shutdown) => return,
            () = self.probe_server_side(clock()) => {}
        }
        while !*shutdown.borrow() {
            let started = Instant::now();
            let report = self.cycle(clock(), shutdown).await;
            if on_cycle(report, started.elapsed()).is_break() || *shutdown.borrow() {
                return;
            }
            let next = tokio::time::Instant::from_std(started + self.poll_interval);
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = stopped(shutdown) => return,
            }
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
        let report = self.cycle_traced(now, shutdown).await;
        self.cycles += 1;
        report
    }

    async fn cycle_traced(
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
        let to = Destination {
            resource_type,
            topic: &self.topic,
            messaging_system: self.publisher.messaging_system(),
        };
        let Some(spans) = tracing.cycle_spans(&poll, &to) else {
            telemetry::end(&poll);
            return self.cycle_in(now, shutdown, None).await;
        };
        let mut traced = Traced {
            poll: poll.clone(),
            spans,
        };
        let report = self
            .cycle_in(now, shutdown, Some(&mut traced))
            .with_context(poll.clone())
            .await;
        // The resource spans' last lines go out before the poll span ends.
        drop(traced);
        telemetry::end(&poll);
        report
    }

    async fn cycle_in(
        &mut self,
        now: Timestamp,
        shutdown: &mut watch::Receiver<bool>,
        mut traced: Option<&mut Traced>,
    ) -> CycleReport {
        let started = Instant::now();
        let mut report = CycleReport::default();
        debug!(subset = %self.resource_type, topic = %self.topic, "Starting trigger cycle");
        // Readiness reads the connection itself from now on; a connection lost since the last
        // cycle is re-established here, so readiness recovers even when nothing is published.
        self.health.watch_broker(self.publisher.liveness());
        tokio::select! {
            biased;
            _ = stopped(shutdown) => return report,
            () = self.publisher.reconnect_if_down() => {}
        }
        let mut pending = 0usize;
        let tick = (self.ticks)();
        if self.query.probe_due(tick) {
            self.probe_server_side(now).await;
        }
        let query = self.query.cycle(tick, now);
        report.filtered = !query.full;
        let projection = self.rules.projection.clone();
        let mut listing = Listing::new(&self.api, &self.resource_type, projection, query);
        let mut work = PageWork::default();
        loop {
            let mut ctx = self.ctx(tick, now);
            let next = tokio::select! {
                biased;
                _ = stopped(shutdown) => None,
                next = listing.next(&mut ctx) => Some(next),
            };
            let page = match next {
                None => {
                    info!(subset = %self.resource_type, "Shutdown requested, abandoning the current cycle");
                    return report;
                }
                Some(Next::Done) => break,
                Some(Next::Page(page)) => page,
                Some(Next::Failed(e)) => {
                    if let Some(t) = &traced {
                        telemetry::fail(&t.poll, "fetch resources failed");
                    }
                    self.fetch_failed(&e);
                    self.sweep_status(tick);
                    return report;
                }
            };
            pending += self.decide_page(
                page.items,
                now,
                listing.phase(),
                &mut work,
                &mut report,
                traced.as_deref_mut(),
            );
            let published = self
                .publish_or_stop(&work.outgoing, &mut report, shutdown, traced.as_deref_mut())
                .await;
            if let Some(t) = traced.as_deref_mut() {
                t.spans.flush();
            }
            if !published {
                return report;
            }
            if !work.suspects.is_empty() {
                let mut ctx = self.ctx(tick, now);
                let left_out = tokio::select! {
                    biased;
                    _ = stopped(shutdown) => return report,
                    n = listing.left_out(&mut ctx, &work.suspects) => n,
                };
                self.metrics.left_out(left_out);
                report.left_out += left_out;
            }
        }
        if listing.is_full_sweep() {
            self.query.swept(tick);
        }
        self.sweep_status(tick);
        report.completed = true;
        // Go logs this line once the whole listing is in; pages are decided as they arrive
        // here, so it follows the last page.
        info!(subset = %self.resource_type, "Fetched resources count={} label_selectors={}",
            report.total, self.metrics.selector_count());
        self.finish(&report, pending, started);
        report
    }

    /// What a listing works with (see [`Ctx`]).
    fn ctx(&mut self, tick: Duration, now: Timestamp) -> Ctx<'_> {
        Ctx {
            api: &self.api,
            resource_type: &self.resource_type,
            query: &mut self.query,
            metrics: &self.metrics,
            tick,
            now,
        }
    }

    /// Decides for a page's resources, into `work`'s events (and, for the rest of a full
    /// sweep, the ids of those published that the filter does not leave to it by design: what
    /// it may have left out); counts them in `report`. How many are due.
    fn decide_page(
        &self,
        items: Vec<Resource>,
        now: Timestamp,
        phase: Phase,
        work: &mut PageWork,
        report: &mut CycleReport,
        mut traced: Option<&mut Traced>,
    ) -> usize {
        work.outgoing.clear();
        work.suspects.clear();
        for resource in items {
            report.total += 1;
            let resource = Arc::new(resource);
            let swept = (phase == Phase::Remainder).then(|| resource.clone());
            match self.step(resource, now, &mut work.scratch, traced.as_deref_mut()) {
                Step::Ignored => {}
                Step::Skipped => report.skipped += 1,
                Step::Publish(out) => {
                    if swept.is_some_and(|r| !self.query.plan().leaves_to_the_sweep(&r, now)) {
                        work.suspects.push(out.key.as_str().to_string());
                    }
                    work.outgoing.push(out);
                }
            }
        }
        work.outgoing.len()
    }

    /// Decides for one resource: logs, counts and traces the decision, and builds the event
    /// of a due one.
    fn step(
        &self,
        resource: Arc<Resource>,
        now: Timestamp,
        scratch: &mut Scratch,
        mut traced: Option<&mut Traced>,
    ) -> Step {
        let id = resource.id().map_or("", |t| t.as_str());
        // The evaluate span is current for this resource's log lines (no await inside).
        let evaluate = traced.as_deref().map(|t| t.spans.begin());
        let mut end = |reason: Option<&str>| {
            if let (Some(t), Some(begun)) = (traced.as_deref_mut(), &evaluate)
                && t.spans.sampled()
            {
                t.spans.end_evaluate(&begun.span(), id, reason);
            }
        };
        if let Err(e) = resource.id() {
            // Not an object, or an id that is not a string: Go fails the whole page on it.
            warn!(subset = %self.resource_type, error = %e.message,
                "Skipping resource that could not be decoded");
            self.metrics.skipped(UNDECODABLE_REASON);
            end(Some(UNDECODABLE_REASON));
            return Step::Skipped;
        }
        if id.is_empty() {
            // As in Go: counted in the total only, neither skipped nor in a metric.
            let kind = resource.kind().map_or("", |t| t.as_str());
            warn!(subset = %self.resource_type, topic = %self.topic, "Skipping resource with empty ID kind={kind}");
            end(None);
            return Step::Ignored;
        }
        if let Some(bytes) = resource.too_large() {
            warn!(subset = %self.resource_type, bytes, limit = MAX_RESOURCE_BYTES,
                "Skipping resource larger than the limit resource_id={id}");
            self.metrics.skipped(TOO_LARGE_REASON);
            end(Some(TOO_LARGE_REASON));
            return Step::Skipped;
        }
        let decision = self.rules.decision.decide(&resource, now, scratch);
        if !decision.publish {
            let reason = decision.reason.text();
            self.metrics.skipped(&reason);
            debug!(decision_reason = %reason, subset = %self.resource_type, "Skipped resource resource_id={id}");
            end(Some(&reason));
            return Step::Skipped;
        }
        let reason = decision.reason.shared_text();
        let mut event = self.event(&resource, reason.clone());
        let spans = match (traced, &evaluate) {
            (Some(t), Some(begun)) => {
                let publish = t.spans.start();
                event.traceparent = Some(t.spans.traceparent(&publish));
                Some(Spans {
                    evaluate: begun.span(),
                    publish,
                    reason,
                })
            }
            _ => None,
        };
        Step::Publish(Outgoing {
            event,
            key: resource.id_text(),
            spans,
        })
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
        outgoing: &[Outgoing],
        report: &mut CycleReport,
        shutdown: &mut watch::Receiver<bool>,
        traced: Option<&mut Traced>,
    ) -> bool {
        let resource_type = self.resource_type.clone();
        let publishing = self.publish(outgoing, report, traced);
        tokio::pin!(publishing);
        tokio::select! {
            biased;
            () = &mut publishing => true,
            () = stopped(shutdown) => {
                info!(subset = %resource_type, pending = outgoing.len(),
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
        outgoing: &[Outgoing],
        report: &mut CycleReport,
        mut traced: Option<&mut Traced>,
    ) {
        if outgoing.is_empty() {
            return;
        }
        let results = self.publisher.publish_batch(outgoing).await;
        for (out, result) in outgoing.iter().zip(results) {
            let id = &out.key;
            // The result's log line is written under the resource's evaluate span, as in Go.
            let _current = match (traced.as_deref_mut(), &out.spans) {
                (Some(t), Some(spans)) => {
                    let spans_of = &mut t.spans;
                    let publish = &spans.publish;
                    spans_of.end_publish(publish, &spans.evaluate, out.event.id, result.is_err());
                    spans_of.end_evaluate(&spans.evaluate, id.as_str(), Some(&spans.reason));
                    Some(spans_of.enter(&spans.evaluate))
                }
                _ => None,
            };
            match result {
                Ok(()) => {
                    self.metrics.published("message decision matched");
                    self.published_log.log(id.as_str());
                    report.published += 1;
                }
                Err(e) => {
                    self.metrics.publish_failed();
                    // A resource alarm is logged once by the publisher, not per event.
                    if !e.logged_by_publisher() {
                        error!(error = %e, topic = %self.topic, subset = %self.resource_type,
                            "Failed to publish event resource_id={id}");
                    }
                    report.failed += 1;
                }
            }
        }
    }

    fn fetch_failed(&self, e: &ApiError) {
        self.metrics.api_error(e.metric_label());
        // Go's `Start` words the first cycle's failure apart from the later ones'.
        if self.cycles == 0 {
            error!(error = %e, subset = %self.resource_type, topic = %self.topic, "Initial trigger failed: failed to fetch resources");
        } else {
            error!(error = %e, subset = %self.resource_type, topic = %self.topic, "Trigger failed: failed to fetch resources");
        }
    }

    /// With a filter: how long since the last complete full sweep, in the metrics and
    /// readiness.
    fn sweep_status(&mut self, tick: Duration) {
        if let Some((age, interval)) = self.query.sweep_age(tick) {
            self.metrics.full_sweep(age, interval);
            self.health.full_sweep(age, interval);
        }
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

/// What a cycle reuses from page to page: the decisions' scratch, the page's events, and the
/// ids the rest of a full sweep published that the filter may have left out.
#[derive(Default)]
struct PageWork {
    scratch: Scratch,
    outgoing: Vec<Outgoing>,
    suspects: Vec<String>,
}

/// A traced cycle: its poll span and its resources' spans.
struct Traced {
    poll: Context,
    spans: CycleSpans,
}

/// Resolves once the shutdown flag is true (at once if it already is); never resolves when the
/// sender is gone without having requested a shutdown.
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::{MemoryPublisher, MessageSink};
    use crate::daemon::config::{ConfigFlags, load_str};

    struct Discard;

    impl MessageSink for Discard {
        fn deliver(&self, _: uuid::Uuid, _: &[u8]) -> Result<(), String> {
            Ok(())
        }
    }

    /// What the daemon reads itself (the id, the kind for the event type) and what static reads
    /// of the rules read is decoded with the page: deciding and building the event never
    /// decodes a resource whole, whether the config reads nothing or some fields.
    #[tokio::test]
    async fn the_daemon_reads_nothing_outside_the_projection() {
        let page = crate::resource::corpus::fleet(20, wall_clock(), 7);
        let body: SharedText =
            Arc::new(serde_json::json!({"items": page, "total": page.len()}).to_string());
        for (params, data) in [
            ("[{name: a, expr: 'true'}]", "{c: '\"x\"'}"),
            (
                "[{name: a, expr: 'resource.generation > condition(\"Reconciled\").observed_generation || true'}]",
                "{id: resource.id, g: resource.generation}",
            ),
        ] {
            let text = format!(
                "resource_type: clusters\nclients:\n  hyperfleet_api:\n    base_url: http://127.0.0.1:9\n  \
                 broker:\n    topic: t\nmessage_decision:\n  params: {params}\n  result: a\nmessage_data: {data}\n"
            );
            let config = load_str(&text, "c.yaml", &ConfigFlags::default(), &|_| None)
                .unwrap_or_else(|e| panic!("{e}"));
            let rules = Arc::new(Rules::compile(&config).expect("compiles"));
            let api = ApiClient::new(ApiClientConfig::default()).expect("client");
            let publisher = Publisher::Memory(MemoryPublisher::new(Arc::new(Discard)));
            let daemon = Daemon::new(&config, rules.clone(), api, publisher);
            let decoded = crate::resource::decode_list(&body, &rules.projection).expect("page");
            let mut scratch = Scratch::default();
            let mut published = 0;
            for resource in decoded.items {
                let resource = Arc::new(resource);
                assert!(resource.projection().is_some(), "{text}");
                if let Step::Publish(out) =
                    daemon.step(resource.clone(), wall_clock(), &mut scratch, None)
                {
                    assert_eq!(out.event.ty, "com.redhat.hyperfleet.cluster.reconcile");
                    published += 1;
                }
                assert!(!resource.read_outside_projection(), "{text}");
            }
            assert_eq!(published, 20, "{text}");
        }
    }
}
