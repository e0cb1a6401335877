//! `broker.googlepubsub.*`: read and validated with the Go library's rules (its durations by
//! [`parse_cloud_duration`], compared in nanoseconds as Go compares `time.Duration`s), so a
//! config written for the Go sentinel is judged the same way, subscriber-side keys included.

use super::{PubSubConfig, Reader};
use crate::common::go::parse_cloud_duration;
use yaml_serde::Value;

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

/// Durations are compared in nanoseconds, as Go's `time.Duration`s are.
const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const DAY: i64 = 86_400 * SECOND;

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
    let mut duration = |key: &str, text: &str| -> Option<i64> {
        if text.is_empty() {
            return None;
        }
        let parsed = parse_cloud_duration(text);
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
    retention: Option<i64>,
    ttl: Option<i64>,
    (min_backoff, max_backoff): (Option<i64>, Option<i64>),
    topic_retention: Option<i64>,
) {
    let in_retention_range = |d: i64| (10 * MINUTE..=31 * DAY).contains(&d);
    if retention.is_some_and(|d| !in_retention_range(d)) {
        problems.push(format!(
            "{S}.message_retention_duration must be between 10m and 31d"
        ));
    }
    if let Some(ttl) = ttl.filter(|&t| t != 0) {
        if ttl < DAY {
            problems.push(format!(
                "{S}.expiration_ttl must be at least 1d or 0 (never expire)"
            ));
        } else if retention.is_some_and(|r| r != 0 && ttl < r) {
            problems.push(format!(
                "{S}.expiration_ttl must be greater than or equal to message_retention_duration"
            ));
        }
    }
    for (key, value) in [
        ("retry_min_backoff", min_backoff),
        ("retry_max_backoff", max_backoff),
    ] {
        if value.is_some_and(|d| !(0..=600 * SECOND).contains(&d)) {
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
    if topic_retention.is_some_and(|d| d != 0 && !in_retention_range(d)) {
        problems.push(format!(
            "{S}.topic_retention_duration must be between 10m and 31d, or 0 (disabled)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(config: PubSubConfig) -> Vec<String> {
        let mut problems = Vec::new();
        validate(&mut problems, &config);
        problems
    }

    /// The float parser this module had judged these differently from the Go library.
    #[test]
    fn durations_are_judged_as_the_go_library_judges_them() {
        let base = PubSubConfig {
            project_id: "p".into(),
            ..PubSubConfig::default()
        };
        // Go truncates the fraction to whole nanoseconds: exactly 600s, in range.
        let in_range = PubSubConfig {
            retry_max_backoff: "600.0000000001s".into(),
            ..base.clone()
        };
        assert_eq!(problems(in_range), Vec::<String>::new());
        // Past Go's i64 range, and no day count either: invalid, not out of range.
        let too_big = PubSubConfig {
            message_retention_duration: "9999999999h".into(),
            ..base.clone()
        };
        assert_eq!(
            problems(too_big),
            [
                "broker.googlepubsub.message_retention_duration: invalid duration '9999999999h' \
              (use e.g. 600s, 10m, 1h or 7d)"
            ]
        );
        // Day counts, as the Go library's own extension, and their range check.
        let days = PubSubConfig {
            message_retention_duration: "32d".into(),
            expiration_ttl: "32d".into(),
            ..base
        };
        assert_eq!(
            problems(days),
            ["broker.googlepubsub.message_retention_duration must be between 10m and 31d"]
        );
    }
}
