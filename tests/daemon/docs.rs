//! The operator docs against the code: docs/prometheus-rules.yaml's alerts and
//! docs/grafana-dashboard.json's queries name only exported metrics, every alert has its runbook
//! section at an absolute URL, docs/metrics.md lists every metric family, and the docs' other
//! mechanical claims hold. What the alerts and panels show in a real Prometheus is
//! prometheus.rs's to prove.

use crate::harness::VERSION;
use crate::harness::metrics;
use openmetrics_parser::PrometheusType;
use sentinel::daemon::metrics::Metrics;
use serde_json::Value as Json;
use std::path::Path;
use std::time::Duration;

/// The metric names `sentinel serve` exports, every series made to appear once; a histogram
/// counts as its `_bucket`, `_sum` and `_count` series.
fn exported_metric_names() -> Vec<String> {
    let m = Metrics::new(VERSION, "clusters", &[], "topic");
    m.published("message decision matched");
    m.skipped("message decision result is false");
    m.publish_failed();
    m.api_error("fetch_error");
    m.cycle(1, 0.5, Some(1.0));
    m.fallbacks(Some(false), Some(false));
    m.full_sweep(Duration::from_secs(1), Duration::from_secs(600));
    m.left_out(0);
    let mut names = Vec::new();
    for (name, kind) in metrics::parse(&m.render()).families {
        names.push(name.clone());
        if kind == PrometheusType::Histogram {
            names.extend(["_bucket", "_sum", "_count"].map(|s| format!("{name}{s}")));
        }
    }
    names
}

/// The sentinel metric names an expression uses.
fn queried_metrics(expr: &str) -> Vec<String> {
    let name = regex::Regex::new(r"\bhyperfleet_[a-z_]+").expect("regex");
    name.find_iter(expr)
        .map(|m| m.as_str().to_string())
        .collect()
}

fn docs(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn alert_rules_and_dashboard_query_only_exported_metrics() {
    let exported = exported_metric_names();
    assert!(exported.len() >= 14, "{exported:?}");
    let unknown = |exprs: &[String]| -> Vec<String> {
        exprs
            .iter()
            .flat_map(|e| queried_metrics(e))
            .filter(|n| !exported.contains(n))
            .collect()
    };

    let rules: yaml_serde::Value =
        yaml_serde::from_str(&docs("prometheus-rules.yaml")).expect("prometheus-rules.yaml parses");
    assert_eq!(rules["kind"].as_str(), Some("PrometheusRule"));
    let alerts = rules["spec"]["groups"][0]["rules"]
        .as_sequence()
        .expect("rules");
    let runbook = docs("runbook.md");
    let mut exprs = Vec::new();
    for alert in alerts {
        let name = alert["alert"].as_str().expect("alert name");
        let expr = alert["expr"].as_str().expect("expr").to_string();
        assert!(
            name == "SentinelDown" || !queried_metrics(&expr).is_empty(),
            "{name}: {expr}"
        );
        assert!(
            runbook.contains(&format!("\n## {name}\n")),
            "runbook.md has no section for {name}"
        );
        // Absolute, so that Alertmanager and Grafana can follow it.
        let url = format!(
            "https://example.com/hyperfleet-sentinel/docs/runbook.md#{}",
            name.to_lowercase()
        );
        assert_eq!(
            alert["annotations"]["runbook_url"].as_str(),
            Some(url.as_str())
        );
        exprs.push(expr);
    }
    assert_eq!(
        alerts.len(),
        12,
        "the Go chart's eight alerts and four of this sentinel's own"
    );
    assert_eq!(
        unknown(&exprs),
        Vec::<String>::new(),
        "prometheus-rules.yaml"
    );

    let dashboard: Json = serde_json::from_str(&docs("grafana-dashboard.json"))
        .expect("grafana-dashboard.json parses");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            exprs.push(target["expr"].as_str().expect("expr").to_string());
        }
    }
    if let Some(vars) = dashboard["templating"]["list"].as_array() {
        exprs.extend(
            vars.iter()
                .filter_map(|v| v["query"].as_str().map(String::from)),
        );
    }
    assert!(exprs.len() >= 8, "{exprs:?}");
    assert_eq!(
        unknown(&exprs),
        Vec::<String>::new(),
        "grafana-dashboard.json"
    );

    // The reference lists every metric family.
    let reference = docs("metrics.md");
    for name in exported
        .iter()
        .filter(|n| !n.ends_with("_bucket") && !n.ends_with("_sum") && !n.ends_with("_count"))
    {
        assert!(
            reference.contains(&format!("`{name}`")),
            "metrics.md lacks {name}"
        );
    }
}

#[test]
fn the_metric_guard_can_fail() {
    let exported = exported_metric_names();
    let bogus = queried_metrics("rate(hyperfleet_sentinel_no_such_thing_total[5m]) > 0");
    assert_eq!(bogus, ["hyperfleet_sentinel_no_such_thing_total"]);
    assert!(!exported.contains(&bogus[0]));
}

/// The row of docs/metrics.md's table for `metric`.
fn metrics_row(reference: &str, metric: &str) -> String {
    let start = format!("| `{metric}` |");
    reference
        .lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("metrics.md has no row for {metric}"))
        .to_string()
}

/// The docs' mechanical claims against the code: the selector label's form, the page size the
/// API serves, which failures are `auth_error`, when the cycle metrics are observed.
#[test]
fn the_docs_claims_match_the_code() {
    use sentinel::api::{ApiError, TokenError};
    use sentinel::daemon::metrics::selector_label;

    let guide: Vec<(String, String)> = [
        "metrics.md",
        "multi-instance.md",
        "runbook.md",
        "operator-guide.md",
    ]
    .iter()
    .map(|n| (n.to_string(), docs(n)))
    .collect();

    // `resource_selector` is `label:value`, as `selector_label` writes it.
    let shard = selector_label(&[("shard".into(), "0".into())]);
    assert_eq!(shard, "shard:0");
    let reference = docs("metrics.md");
    assert!(reference.contains("`label:value`"), "metrics.md");
    assert!(
        docs("multi-instance.md").contains(&format!("(`{shard}`)")),
        "multi-instance.md"
    );
    let equals_form = regex::Regex::new(r"`(label=value|shard=\d+)`").expect("regex");
    for (name, text) in &guide {
        assert!(
            !equals_form.is_match(text),
            "{name} writes a selector with `=`"
        );
    }

    // The API serves at most MAX_PAGE_SIZE per page: every "up to N" said of the page size is
    // that, and no doc suggests a larger page.
    let max = sentinel::sim::api::MAX_PAGE_SIZE.to_string();
    let up_to = regex::Regex::new(r"(?s)page[ _]size[^.]{0,80}?up to (\d+)").expect("regex");
    let larger = regex::Regex::new(r"page_size: *(\d+)").expect("regex");
    for (name, text) in &guide {
        for c in up_to.captures_iter(text) {
            assert_eq!(c[1], max, "{name}: {}", &c[0]);
        }
        for c in larger.captures_iter(text) {
            let n: u32 = c[1].parse().expect("number");
            assert!(n <= sentinel::sim::api::MAX_PAGE_SIZE, "{name}: {}", &c[0]);
        }
    }

    // `auth_error` is a token-file error; 401 and 403 are `fetch_error`.
    for status in [401, 403] {
        assert_eq!(
            ApiError::http(status, b"", None).metric_label(),
            "fetch_error"
        );
    }
    let token = ApiError::from(TokenError::Empty { path: "/t".into() });
    assert_eq!(token.metric_label(), "auth_error");
    let row = metrics_row(&reference, "hyperfleet_sentinel_api_errors_total");
    assert!(
        row.contains("401 and 403 included") && row.contains("token file"),
        "{row}"
    );
    assert!(
        docs("runbook.md").contains("any HTTP error status including 401 and 403"),
        "runbook.md"
    );

    // Both cycle metrics are observed on completed cycles only (cycle.rs tests the behaviour).
    for metric in [
        "hyperfleet_sentinel_pending_resources",
        "hyperfleet_sentinel_poll_duration_seconds",
    ] {
        let row = metrics_row(&reference, metric);
        assert!(row.contains("**completed**"), "{row}");
    }

    // The broker library's error_type is `publish`.
    let row = metrics_row(&reference, "hyperfleet_broker_errors_total");
    assert!(row.contains("(`publish`"), "{row}");
}
