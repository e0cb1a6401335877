//! Reading metrics: the Prometheus text exposition (an in-process `Metrics::render` or a scraped
//! `/metrics`) decoded by `openmetrics-parser` into series, each a name, a label set and a value.
//! A histogram is read as it is scraped: its `_count` and `_sum` are series of their own.
//!
//! Text that does not parse fails the test: the exposition itself is under test too.

use openmetrics_parser::prometheus::parse_prometheus;
use openmetrics_parser::{PrometheusType, PrometheusValue};
use sentinel::daemon::metrics::Metrics;
use std::collections::BTreeMap;

pub const PUBLISHED: &str = "hyperfleet_sentinel_events_published_total";
pub const SKIPPED: &str = "hyperfleet_sentinel_resources_skipped_total";
pub const PENDING: &str = "hyperfleet_sentinel_pending_resources";
pub const POLLS: &str = "hyperfleet_sentinel_poll_duration_seconds_count";
pub const LAST_POLL: &str = "hyperfleet_sentinel_last_successful_poll_timestamp_seconds";
pub const API_ERRORS: &str = "hyperfleet_sentinel_api_errors_total";
pub const BROKER_ERRORS: &str = "hyperfleet_sentinel_broker_errors_total";
pub const MATCHED: &str = "message decision matched";

/// A series' labels, by name.
pub type Labels = BTreeMap<String, String>;

/// One decoded exposition.
pub struct Exposition {
    /// Family name and type, in name order.
    pub families: Vec<(String, PrometheusType)>,
    /// Every series: name, labels, value.
    pub series: Vec<(String, Labels, f64)>,
}

/// Decodes Prometheus text.
pub fn parse(text: &str) -> Exposition {
    let exposition =
        parse_prometheus(text).unwrap_or_else(|e| panic!("metrics do not parse ({e}):\n{text}"));
    let mut families = Vec::new();
    let mut series = Vec::new();
    for (name, family) in &exposition.families {
        families.push((name.clone(), family.family_type.clone()));
        for sample in family.iter_samples() {
            let labels: Labels = sample
                .get_labelset()
                .expect("a parsed sample has its family's label names")
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut push = |suffix: &str, value: f64| {
                series.push((format!("{name}{suffix}"), labels.clone(), value));
            };
            match &sample.value {
                PrometheusValue::Unknown(n) | PrometheusValue::Gauge(n) => push("", n.as_f64()),
                PrometheusValue::Counter(c) => push("", c.value.as_f64()),
                PrometheusValue::Histogram(h) => {
                    if let Some(count) = h.count {
                        push("_count", count as f64);
                    }
                    if let Some(sum) = h.sum {
                        push("_sum", sum.as_f64());
                    }
                }
                PrometheusValue::Summary(s) => {
                    if let Some(count) = s.count {
                        push("_count", count as f64);
                    }
                    if let Some(sum) = s.sum {
                        push("_sum", sum.as_f64());
                    }
                }
            }
        }
    }
    families.sort_by(|a, b| a.0.cmp(&b.0));
    Exposition { families, series }
}

impl Exposition {
    /// Every series named `name`: its labels and value.
    pub fn series(&self, name: &str) -> Vec<(Labels, f64)> {
        self.series
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, labels, value)| (labels.clone(), *value))
            .collect()
    }

    /// The value of the series `name` whose labels are exactly `labels`, if present.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: Labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.series(name)
            .into_iter()
            .find(|(got, _)| *got == want)
            .map(|(_, value)| value)
    }
}

/// `labels` with the const labels of the in-process metrics (`component`, `version`).
fn with_consts<'a>(labels: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut all = labels.to_vec();
    all.extend([
        ("component", "sentinel"),
        ("version", sentinel::daemon::VERSION),
    ]);
    all
}

/// The value of the sample `name{labels}` in in-process metrics text, if present. `labels` are
/// the series' labels besides `component` and `version`, compared as a set.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    parse(text).get(name, &with_consts(labels))
}

/// Every sample of metric `name` in `text`: its labels and value.
pub fn series(text: &str, name: &str) -> Vec<(Labels, f64)> {
    parse(text).series(name)
}

/// The labels every `hyperfleet_sentinel_*` series of the in-process daemons has, plus `extra`.
pub fn base(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut labels = vec![("resource_type", "clusters"), ("resource_selector", "all")];
    labels.extend_from_slice(extra);
    labels
}

/// The labels of every `hyperfleet_sentinel_*` series of a `sentinel serve` process (whose
/// version label is the crate's), plus `extra`.
pub fn served<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut labels = vec![
        ("component", "sentinel"),
        ("resource_selector", "all"),
        ("resource_type", "clusters"),
        ("version", env!("CARGO_PKG_VERSION")),
    ];
    labels.extend_from_slice(extra);
    labels
}

pub fn published_metric(m: &Metrics) -> f64 {
    sample(&m.render(), PUBLISHED, &base(&[("reason", MATCHED)])).unwrap_or(0.0)
}

pub fn last_poll(m: &Metrics) -> f64 {
    sample(&m.render(), LAST_POLL, &[]).expect("last successful poll gauge")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader can fail: it finds a series only under its exact labels, decodes escaped
    /// label values (the skip reasons carry quotes), and reads a histogram's count.
    #[test]
    fn the_metric_reader_decodes_names_labels_and_values() {
        let text = "\
# HELP m_total A counter.
# TYPE m_total counter
m_total{a=\"x\",reason=\"param \\\"t\\\" failed: a, b\"} 3
# HELP h A histogram.
# TYPE h histogram
h_bucket{a=\"x\",le=\"1\"} 1
h_bucket{a=\"x\",le=\"+Inf\"} 2
h_sum{a=\"x\"} 0.5
h_count{a=\"x\"} 2
";
        let exposition = parse(text);
        let reason = ("reason", "param \"t\" failed: a, b");
        assert_eq!(exposition.get("m_total", &[("a", "x"), reason]), Some(3.0));
        assert_eq!(exposition.get("m_total", &[("a", "x")]), None);
        assert_eq!(exposition.get("m_total", &[("a", "y"), reason]), None);
        assert_eq!(exposition.get("h_count", &[("a", "x")]), Some(2.0));
        assert_eq!(exposition.get("h_sum", &[("a", "x")]), Some(0.5));
        let families: Vec<&str> = exposition.families.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(families, ["h", "m_total"]);
    }
}
