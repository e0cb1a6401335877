//! The Prometheus metrics of the Go sentinel, same names, labels and help texts, exposed in the
//! classic text format (no process or runtime metrics).
//!
//! Invariant: every metric carries the const labels `component="sentinel"` and
//! `version="<version>"`; all `hyperfleet_sentinel_*` metrics but the last-successful-poll gauge
//! are also labelled `resource_type` and `resource_selector`.

use prometheus::{
    Counter, CounterVec, Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, Opts, Registry,
    TextEncoder,
};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The sentinel's metrics, bound to one resource type, selector and topic.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    resource_type: String,
    selector: String,
    n_selectors: usize,
    topic: String,
    pending: GaugeVec,
    published: CounterVec,
    skipped: CounterVec,
    poll_duration: HistogramVec,
    api_errors: CounterVec,
    broker_errors: CounterVec,
    last_success: Gauge,
    broker_published: CounterVec,
    broker_failures: CounterVec,
    /// This sentinel's own (with its server-side settings only): see [`Metrics::fallbacks`],
    /// [`Metrics::full_sweep`], [`Metrics::left_out`].
    server_side: ServerSide,
    /// The series the per-resource path increments, resolved on first use (a label lookup per
    /// resource hashes three strings; a series still appears only once incremented, as in Go).
    skipped_false: OnceLock<Counter>,
    published_matched: OnceLock<(Counter, Counter)>,
}

/// The metrics of the server-side settings (`server_filters`, `server_projection`), which the
/// Go sentinel has not: no series exists unless the setting is on, so that without them the
/// metrics are Go's.
#[derive(Clone)]
struct ServerSide {
    filter_fallback: GaugeVec,
    projection_fallback: GaugeVec,
    sweep_age: GaugeVec,
    sweep_interval: GaugeVec,
    left_out: CounterVec,
}

impl ServerSide {
    fn new(opts: &dyn Fn(&str, &str) -> Opts, labels: &[&str]) -> prometheus::Result<ServerSide> {
        let gauge = |name: &str, help: &str| GaugeVec::new(opts(name, help), labels);
        Ok(ServerSide {
            filter_fallback: gauge(
                "server_filter_fallback",
                "1 while the API refuses the server filter and every resource is listed without it",
            )?,
            projection_fallback: gauge(
                "server_projection_fallback",
                "1 while the API refuses or ignores fields and whole resources are listed",
            )?,
            sweep_age: gauge(
                "full_sweep_age_seconds",
                "Seconds since the last complete full sweep started (since start-up before the first), at the latest cycle's end",
            )?,
            sweep_interval: gauge(
                "full_sweep_interval_seconds",
                "How often a full sweep is due while filtering",
            )?,
            left_out: CounterVec::new(
                opts(
                    "sweep_left_out_total",
                    "Resources a full sweep published that the server filter had left out",
                ),
                labels,
            )?,
        })
    }

    fn collectors(&self) -> [Box<dyn prometheus::core::Collector>; 5] {
        [
            Box::new(self.filter_fallback.clone()),
            Box::new(self.projection_fallback.clone()),
            Box::new(self.sweep_age.clone()),
            Box::new(self.sweep_interval.clone()),
            Box::new(self.left_out.clone()),
        ]
    }
}

/// The reasons of the per-resource hot path.
const RESULT_FALSE: &str = "message decision result is false";
const MATCHED: &str = "message decision matched";

/// The `resource_selector` label as the Go sentinel writes it: `label:value` pairs (a colon, not
/// `=`) joined by commas in config order, or `all` for an empty selector.
pub fn selector_label(selector: &[(String, String)]) -> String {
    if selector.is_empty() {
        return "all".into();
    }
    selector
        .iter()
        .map(|(l, v)| format!("{l}:{v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new(
        version: &str,
        resource_type: &str,
        selector: &[(String, String)],
        topic: &str,
    ) -> Metrics {
        let registry = Registry::new();
        let consts: HashMap<String, String> = [
            ("component".to_string(), "sentinel".to_string()),
            ("version".to_string(), version.to_string()),
        ]
        .into();
        let opts = |name: &str, help: &str| {
            Opts::new(name, help)
                .subsystem("hyperfleet_sentinel")
                .const_labels(consts.clone())
        };
        let base = ["resource_type", "resource_selector"];
        let with = |extra: &'static str| [base[0], base[1], extra];
        let build = || -> prometheus::Result<Metrics> {
            let pending = GaugeVec::new(
                opts(
                    "pending_resources",
                    "Number of resources pending reconciliation based on max age or generation change",
                ),
                &base,
            )?;
            let published = CounterVec::new(
                opts(
                    "events_published_total",
                    "Total number of reconciliation events published to the message broker",
                ),
                &with("reason"),
            )?;
            let skipped = CounterVec::new(
                opts(
                    "resources_skipped_total",
                    "Total number of resources skipped (preconditions not met or already reconciled)",
                ),
                &with("reason"),
            )?;
            let poll_duration = HistogramVec::new(
                HistogramOpts::from(opts(
                    "poll_duration_seconds",
                    "Duration of each polling cycle in seconds",
                ))
                .buckets(prometheus::DEFAULT_BUCKETS.to_vec()),
                &base,
            )?;
            let api_errors = CounterVec::new(
                opts(
                    "api_errors_total",
                    "Total number of errors when calling the HyperFleet API",
                ),
                &with("error_type"),
            )?;
            let broker_errors = CounterVec::new(
                opts(
                    "broker_errors_total",
                    "Total number of errors when publishing events to the message broker",
                ),
                &with("error_type"),
            )?;
            let last_success = Gauge::with_opts(opts(
                "last_successful_poll_timestamp_seconds",
                "Unix timestamp of the last successfully completed polling cycle",
            ))?;
            let broker_opts = |name: &str, help: &str| {
                Opts::new(name, help)
                    .subsystem("hyperfleet_broker")
                    .const_labels(consts.clone())
            };
            let broker_published = CounterVec::new(
                broker_opts(
                    "messages_published_total",
                    "Total number of messages published to the broker.",
                ),
                &["topic"],
            )?;
            let broker_failures = CounterVec::new(
                broker_opts("errors_total", "Total number of message processing errors."),
                &["topic", "error_type"],
            )?;
            let server_side = ServerSide::new(&opts, &base)?;
            for c in [
                Box::new(pending.clone()) as Box<dyn prometheus::core::Collector>,
                Box::new(published.clone()),
                Box::new(skipped.clone()),
                Box::new(poll_duration.clone()),
                Box::new(api_errors.clone()),
                Box::new(broker_errors.clone()),
                Box::new(last_success.clone()),
                Box::new(broker_published.clone()),
                Box::new(broker_failures.clone()),
            ]
            .into_iter()
            .chain(server_side.collectors())
            {
                registry.register(c)?;
            }
            Ok(Metrics {
                registry: registry.clone(),
                resource_type: resource_type.to_string(),
                selector: selector_label(selector),
                n_selectors: selector.len(),
                topic: topic.to_string(),
                pending,
                published,
                skipped,
                poll_duration,
                api_errors,
                broker_errors,
                last_success,
                broker_published,
                broker_failures,
                server_side,
                skipped_false: OnceLock::new(),
                published_matched: OnceLock::new(),
            })
        };
        // Registration only fails on duplicate or malformed names, which are constants here.
        build().expect("metric definitions are valid")
    }

    /// How many `label: value` pairs the resource selector has (Go's `label_selectors=` log field).
    pub fn selector_count(&self) -> usize {
        self.n_selectors
    }

    /// One event published, with the decision reason.
    pub fn published(&self, reason: &str) {
        if reason == MATCHED {
            let (published, broker) = self.published_matched.get_or_init(|| {
                (
                    self.published.with_label_values(&[
                        &self.resource_type,
                        &self.selector,
                        MATCHED,
                    ]),
                    self.broker_published.with_label_values(&[&self.topic]),
                )
            });
            published.inc();
            broker.inc();
            return;
        }
        self.published
            .with_label_values(&[&self.resource_type, &self.selector, reason])
            .inc();
        self.broker_published
            .with_label_values(&[&self.topic])
            .inc();
    }

    /// One resource skipped, with the decision reason.
    pub fn skipped(&self, reason: &str) {
        if reason == RESULT_FALSE {
            self.skipped_false
                .get_or_init(|| {
                    self.skipped.with_label_values(&[
                        &self.resource_type,
                        &self.selector,
                        RESULT_FALSE,
                    ])
                })
                .inc();
            return;
        }
        self.skipped
            .with_label_values(&[&self.resource_type, &self.selector, reason])
            .inc();
    }

    /// One failed publish: `error_type="publish_error"` on the sentinel's counter (Go's
    /// sentinel), `error_type="publish"` on the broker library's (hyperfleet-broker's
    /// `RecordError(topic, "publish")`).
    pub fn publish_failed(&self) {
        self.broker_errors
            .with_label_values(&[&self.resource_type, &self.selector, "publish_error"])
            .inc();
        self.broker_failures
            .with_label_values(&[&self.topic, "publish"])
            .inc();
    }

    /// One failed fetch (`fetch_error` or `auth_error`).
    pub fn api_error(&self, error_type: &str) {
        self.api_errors
            .with_label_values(&[&self.resource_type, &self.selector, error_type])
            .inc();
    }

    /// The end of a cycle: how many resources were due, how long it took, and whether it
    /// completed (then the last-success timestamp moves).
    pub fn cycle(&self, pending: usize, seconds: f64, completed_at_unix: Option<f64>) {
        self.pending
            .with_label_values(&[&self.resource_type, &self.selector])
            .set(pending as f64);
        self.poll_duration
            .with_label_values(&[&self.resource_type, &self.selector])
            .observe(seconds);
        if let Some(t) = completed_at_unix {
            self.last_success.set(t);
        }
    }

    /// Whether the API's refusals make the daemon list without the server filter and without
    /// `fields` (`None`: the setting is off, no series).
    pub fn fallbacks(&self, filter: Option<bool>, projection: Option<bool>) {
        let labels = [self.resource_type.as_str(), self.selector.as_str()];
        let m = &self.server_side;
        for (gauge, on) in [
            (&m.filter_fallback, filter),
            (&m.projection_fallback, projection),
        ] {
            if let Some(on) = on {
                gauge
                    .with_label_values(&labels)
                    .set(f64::from(u8::from(on)));
            }
        }
    }

    /// How long since the last complete full sweep, and how often one is due (with a filter).
    pub fn full_sweep(&self, age: std::time::Duration, interval: std::time::Duration) {
        let labels = [self.resource_type.as_str(), self.selector.as_str()];
        let m = &self.server_side;
        m.sweep_age
            .with_label_values(&labels)
            .set(age.as_secs_f64());
        m.sweep_interval
            .with_label_values(&labels)
            .set(interval.as_secs_f64());
    }

    /// `n` resources a full sweep published that the filter had left out (0 makes the series
    /// appear).
    pub fn left_out(&self, n: usize) {
        let labels = [self.resource_type.as_str(), self.selector.as_str()];
        self.server_side
            .left_out
            .with_label_values(&labels)
            .inc_by(n as f64);
    }

    /// The metrics in the Prometheus text exposition format (`text/plain; version=0.0.4`).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding metric families into memory cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_match_the_go_sentinel() {
        let m = Metrics::new(
            "1.2.3",
            "clusters",
            &[("shard".into(), "1".into())],
            "clusters",
        );
        m.published("message decision matched");
        m.skipped("message decision result is false");
        // A clone shares the series, through the cached ones too.
        let clone = m.clone();
        clone.published("message decision matched");
        clone.skipped("message decision result is false");
        m.skipped(r#"param "x" evaluation failed: no such key: x"#);
        m.api_error("fetch_error");
        m.publish_failed();
        m.cycle(3, 0.2, Some(1700000000.0));
        let text = m.render();
        for needle in [
            r#"hyperfleet_sentinel_events_published_total{component="sentinel",reason="message decision matched",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 2"#,
            r#"hyperfleet_sentinel_resources_skipped_total{component="sentinel",reason="message decision result is false",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 2"#,
            r#"hyperfleet_sentinel_resources_skipped_total{component="sentinel",reason="param \"x\" evaluation failed: no such key: x",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 1"#,
            r#"hyperfleet_sentinel_pending_resources{component="sentinel",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 3"#,
            r#"hyperfleet_sentinel_api_errors_total{component="sentinel",error_type="fetch_error",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 1"#,
            r#"hyperfleet_sentinel_broker_errors_total{component="sentinel",error_type="publish_error",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 1"#,
            r#"hyperfleet_sentinel_last_successful_poll_timestamp_seconds{component="sentinel",version="1.2.3"} 1700000000"#,
            r#"hyperfleet_sentinel_poll_duration_seconds_bucket{component="sentinel",resource_selector="shard:1",resource_type="clusters",version="1.2.3",le="0.25"} 1"#,
            r#"hyperfleet_broker_messages_published_total{component="sentinel",topic="clusters",version="1.2.3"} 2"#,
            r#"hyperfleet_broker_errors_total{component="sentinel",error_type="publish",topic="clusters",version="1.2.3"} 1"#,
            "# HELP hyperfleet_broker_messages_published_total Total number of messages published to the broker.\n",
            "# HELP hyperfleet_broker_errors_total Total number of message processing errors.\n",
        ] {
            assert!(text.contains(needle), "missing {needle}\n{text}");
        }
        assert!(!text.contains("process_"), "no process metrics");
        // Without the server-side settings, nothing of theirs: the metrics are Go's.
        assert!(
            !text.contains("fallback") && !text.contains("sweep"),
            "{text}"
        );
        m.fallbacks(Some(true), None);
        m.full_sweep(
            std::time::Duration::from_secs(90),
            std::time::Duration::from_secs(600),
        );
        m.left_out(0);
        m.left_out(2);
        let text = m.render();
        for needle in [
            r#"hyperfleet_sentinel_server_filter_fallback{component="sentinel",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 1"#,
            r#"hyperfleet_sentinel_full_sweep_age_seconds{component="sentinel",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 90"#,
            r#"hyperfleet_sentinel_full_sweep_interval_seconds{component="sentinel",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 600"#,
            r#"hyperfleet_sentinel_sweep_left_out_total{component="sentinel",resource_selector="shard:1",resource_type="clusters",version="1.2.3"} 2"#,
        ] {
            assert!(text.contains(needle), "missing {needle}\n{text}");
        }
        assert!(!text.contains("projection_fallback{"), "{text}");
    }

    #[test]
    fn cached_reasons_are_the_decision_reasons() {
        use crate::rules::decision::Reason;
        assert_eq!(Reason::ResultFalse.text(), RESULT_FALSE);
        assert_eq!(Reason::Matched.text(), MATCHED);
    }

    #[test]
    fn selector_label_is_go_format_or_all() {
        assert_eq!(selector_label(&[]), "all");
        assert_eq!(
            selector_label(&[("a".into(), "1".into()), ("b".into(), "2".into())]),
            "a:1,b:2"
        );
        // Config order, not sorted.
        assert_eq!(
            selector_label(&[
                ("shard".into(), "1".into()),
                ("region".into(), "us-east".into())
            ]),
            "shard:1,region:us-east"
        );
    }
}
