//! `broker.googlepubsub.*`: read and validated with the Go library's rules, so a config written
//! for the Go sentinel is judged the same way, even though publishing to Pub/Sub is not
//! supported yet.

use super::{PubSubConfig, Reader};
use serde_yaml::Value;

/// The keys of `broker.googlepubsub`.
pub(super) const KEYS: &[&str] = &[
    "project_id",
    "ack_deadline_seconds",
    "message_retention_duration",
    "expiration_ttl",
    "enable_message_ordering",
    "retry_min_backoff",
    "retry_max_backoff",
    "dead_letter_topic",
    "dead_letter_max_attempts",
    "topic_retention_duration",
    "max_outstanding_messages",
    "max_outstanding_bytes",
    "num_goroutines",
    "create_topic_if_missing",
    "create_subscription_if_missing",
];

const S: &str = "broker.googlepubsub";

/// Reads the section (absent keys take their zero values, as in Go).
pub(super) fn read(r: &mut Reader, value: Option<&Value>) -> PubSubConfig {
    let m = r.section(value, S, KEYS);
    PubSubConfig {
        project_id: r.string(m, S, "project_id"),
        ack_deadline_seconds: r.int(m, S, "ack_deadline_seconds").unwrap_or(0),
        message_retention_duration: r.string(m, S, "message_retention_duration"),
        expiration_ttl: r.string(m, S, "expiration_ttl"),
        enable_message_ordering: r.boolean(m, S, "enable_message_ordering").unwrap_or(false),
        retry_min_backoff: r.string(m, S, "retry_min_backoff"),
        retry_max_backoff: r.string(m, S, "retry_max_backoff"),
        dead_letter_topic: r.string(m, S, "dead_letter_topic"),
        dead_letter_max_attempts: r.int(m, S, "dead_letter_max_attempts").unwrap_or(0),
        topic_retention_duration: r.string(m, S, "topic_retention_duration"),
        max_outstanding_messages: r.int(m, S, "max_outstanding_messages").unwrap_or(0),
        max_outstanding_bytes: r.int(m, S, "max_outstanding_bytes").unwrap_or(0),
        num_goroutines: r.int(m, S, "num_goroutines").unwrap_or(0),
        create_topic_if_missing: r.boolean(m, S, "create_topic_if_missing").unwrap_or(false),
        create_subscription_if_missing: r
            .boolean(m, S, "create_subscription_if_missing")
            .unwrap_or(false),
    }
}

const MINUTE: f64 = 60.0;
const DAY: f64 = 86_400.0;

/// Validates the section for broker.type googlepubsub, pushing one message per problem.
pub(super) fn validate(problems: &mut Vec<String>, p: &PubSubConfig) {
    if p.project_id.is_empty() {
        problems.push(format!(
            "{S}.project_id is required when broker.type is googlepubsub"
        ));
    }
    if p.ack_deadline_seconds != 0 && !(10..=600).contains(&p.ack_deadline_seconds) {
        problems.push(format!(
            "{S}.ack_deadline_seconds must be between 10 and 600 seconds"
        ));
    }
    if p.dead_letter_max_attempts != 0 && !(5..=100).contains(&p.dead_letter_max_attempts) {
        problems.push(format!(
            "{S}.dead_letter_max_attempts must be between 5 and 100"
        ));
    }
    for (key, value) in [
        ("max_outstanding_messages", p.max_outstanding_messages),
        ("max_outstanding_bytes", p.max_outstanding_bytes),
        ("num_goroutines", p.num_goroutines),
    ] {
        if value < 0 {
            problems.push(format!("{S}.{key} must be non-negative"));
        }
    }
    let mut duration = |key: &str, text: &str| -> Option<f64> {
        if text.is_empty() {
            return None;
        }
        let parsed = parse_duration(text);
        if parsed.is_none() {
            problems.push(format!(
                "{S}.{key}: invalid duration '{text}' (use e.g. 600s, 10m, 1h or 7d)"
            ));
        }
        parsed
    };
    let retention = duration("message_retention_duration", &p.message_retention_duration);
    let ttl = duration("expiration_ttl", &p.expiration_ttl);
    let min_backoff = duration("retry_min_backoff", &p.retry_min_backoff);
    let max_backoff = duration("retry_max_backoff", &p.retry_max_backoff);
    let topic_retention = duration("topic_retention_duration", &p.topic_retention_duration);
    check_ranges(
        problems,
        retention,
        ttl,
        (min_backoff, max_backoff),
        topic_retention,
    );
}

fn check_ranges(
    problems: &mut Vec<String>,
    retention: Option<f64>,
    ttl: Option<f64>,
    (min_backoff, max_backoff): (Option<f64>, Option<f64>),
    topic_retention: Option<f64>,
) {
    let in_retention_range = |d: f64| (10.0 * MINUTE..=31.0 * DAY).contains(&d);
    if retention.is_some_and(|d| !in_retention_range(d)) {
        problems.push(format!(
            "{S}.message_retention_duration must be between 10m and 31d"
        ));
    }
    if let Some(ttl) = ttl.filter(|&t| t != 0.0) {
        if ttl < DAY {
            problems.push(format!(
                "{S}.expiration_ttl must be at least 1d or 0 (never expire)"
            ));
        } else if retention.is_some_and(|r| r != 0.0 && ttl < r) {
            problems.push(format!(
                "{S}.expiration_ttl must be greater than or equal to message_retention_duration"
            ));
        }
    }
    for (key, value) in [
        ("retry_min_backoff", min_backoff),
        ("retry_max_backoff", max_backoff),
    ] {
        if value.is_some_and(|d| !(0.0..=600.0).contains(&d)) {
            problems.push(format!("{S}.{key} must be between 0s and 600s"));
        }
    }
    if let (Some(lo), Some(hi)) = (min_backoff, max_backoff)
        && lo > hi
    {
        problems.push(format!(
            "{S}.retry_min_backoff must be less than or equal to retry_max_backoff"
        ));
    }
    if topic_retention.is_some_and(|d| d != 0.0 && !in_retention_range(d)) {
        problems.push(format!(
            "{S}.topic_retention_duration must be between 10m and 31d, or 0 (disabled)"
        ));
    }
}

/// Parses a duration the way the Go library does, in seconds: Go's `time.ParseDuration`
/// (`1h30m`, `1.5s`, `300ms`, `-2m`, `0`) or a whole number of days (`7d`).
pub(super) fn parse_duration(text: &str) -> Option<f64> {
    let text = text.trim();
    if let Some(days) = text.strip_suffix('d') {
        return days.parse::<i64>().ok().map(|d| d as f64 * DAY);
    }
    let (sign, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (-1.0, &text[1..]),
        Some(b'+') => (1.0, &text[1..]),
        _ => (1.0, text),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => MINUTE,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    Some(sign * total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("604800s"), Some(604_800.0));
        assert_eq!(parse_duration("1h30m"), Some(5400.0));
        assert_eq!(parse_duration("1.5s"), Some(1.5));
        assert_eq!(parse_duration("7d"), Some(604_800.0));
        assert_eq!(parse_duration("0"), Some(0.0));
        assert_eq!(parse_duration("-2m"), Some(-120.0));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("1.5d"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("3x"), None);
    }
}
