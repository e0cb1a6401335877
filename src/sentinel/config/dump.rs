//! The merged configuration written back as YAML, for `sentinel config-dump` and the
//! `debug_config` startup log.
//!
//! Invariant: the output uses the file's key names and Go duration strings, so loading it again
//! gives the same [`Config`] (with no flags or env vars set), except that a config without
//! `message_decision` comes back with the built-in rules written out (the same rules), and a
//! password in `base_url` is masked (`http://user:****@host`), since the dump is printed and logged.

use super::Config;
use crate::decision::DecisionSource;
use crate::message_data::MessageData;
use crate::sentinel::broker::config::mask_url;
use serde_yaml::{Mapping, Value};
use std::time::Duration;

/// The configuration as a YAML document, keys in the Go sentinel's order; `auth` appears only
/// when set, `message_decision` always (the built-in rules when the file has none, as in Go). `message_data` leaves are written as their CEL text,
/// so a number given as `count: 3` comes back as `count: '3'`, which is the same expression.
pub fn dump(config: &Config) -> String {
    let api = &config.clients.hyperfleet_api;
    let mut hyperfleet_api = vec![
        ("base_url", text(&mask_url(&api.base_url))),
        ("version", text(&api.version)),
        ("timeout", duration(api.timeout)),
        ("page_size", Value::from(api.page_size)),
    ];
    if let Some(auth) = &api.auth {
        let token_path = text(&auth.token_path.to_string_lossy());
        let ttl = duration(auth.token_cache_ttl);
        hyperfleet_api.push((
            "auth",
            mapping(vec![("token_path", token_path), ("token_cache_ttl", ttl)]),
        ));
    }
    let clients = mapping(vec![
        ("hyperfleet_api", mapping(hyperfleet_api)),
        (
            "broker",
            mapping(vec![("topic", text(&config.clients.broker.topic))]),
        ),
    ]);
    let log = mapping(vec![
        ("level", text(config.log.level.as_str())),
        ("format", text(config.log.format.as_str())),
        ("output", text(config.log.output.as_str())),
    ]);
    let selectors = config
        .resource_selector
        .iter()
        .map(|s| mapping(vec![("label", text(&s.label)), ("value", text(&s.value))]));
    let mut root = vec![
        ("log", log),
        (
            "sentinel",
            mapping(vec![("name", text(&config.sentinel.name))]),
        ),
        ("resource_type", text(&config.resource_type)),
        ("clients", clients),
        ("message_data", message_data(&config.message_data)),
    ];
    // As Go's config-dump does, the built-in rules are printed when the file has none.
    let decision = config
        .message_decision
        .clone()
        .unwrap_or_else(DecisionSource::default_rules);
    root.push(("message_decision", message_decision(&decision)));
    root.extend([
        ("resource_selector", Value::Sequence(selectors.collect())),
        ("poll_interval", duration(config.poll_interval)),
        ("debug_config", Value::Bool(config.debug_config)),
        ("tracing_enabled", Value::Bool(config.tracing_enabled)),
    ]);
    // Serializing a plain value tree has no failure mode in practice; say so rather than panic.
    serde_yaml::to_string(&mapping(root))
        .unwrap_or_else(|e| format!("# cannot render the configuration: {e}\n"))
}

fn text(s: &str) -> Value {
    Value::String(s.to_string())
}

fn duration(d: Duration) -> Value {
    Value::String(go_duration_string(d))
}

fn mapping(entries: Vec<(&str, Value)>) -> Value {
    let mut map = Mapping::new();
    for (key, value) in entries {
        map.insert(text(key), value);
    }
    Value::Mapping(map)
}

fn message_data(data: &MessageData) -> Value {
    match data {
        MessageData::Leaf(cel) => text(cel),
        MessageData::Object(fields) => {
            let mut map = Mapping::new();
            for (key, value) in fields {
                map.insert(text(key), message_data(value));
            }
            Value::Mapping(map)
        }
    }
}

fn message_decision(decision: &DecisionSource) -> Value {
    let params = decision
        .params
        .iter()
        .map(|p| mapping(vec![("name", text(&p.name)), ("expr", text(&p.expr))]));
    mapping(vec![
        ("params", Value::Sequence(params.collect())),
        ("result", text(&decision.result)),
    ])
}

/// A duration as Go's `time.Duration.String` writes it: `0s`, `1.5µs`, `300ms`, `5s`, `1m30s`,
/// `1h0m0s`.
pub fn go_duration_string(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", decimal(nanos, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", decimal(nanos, 6));
    }
    let secs = nanos / 1_000_000_000;
    let (hours, minutes) = (secs / 3600, secs / 60 % 60);
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&decimal(nanos % 60_000_000_000, 9));
    out.push('s');
    out
}

/// `value / 10^digits` written with only the fraction digits needed.
fn decimal(value: u128, digits: u32) -> String {
    let unit = 10u128.pow(digits);
    let (whole, frac) = (value / unit, value % unit);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = digits as usize);
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// A signed nanosecond count in Go's duration syntax, for messages (`-1s`).
pub(super) fn signed_go_duration(nanos: i128) -> String {
    let magnitude = Duration::from_nanos(u64::try_from(nanos.unsigned_abs()).unwrap_or(u64::MAX));
    let sign = if nanos < 0 { "-" } else { "" };
    format!("{sign}{}", go_duration_string(magnitude))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_duration_strings() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_millis(300), "300ms"),
            (Duration::from_secs(5), "5s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(3_601_500), "1h0m1.5s"),
            (Duration::from_secs(100 * 3600), "100h0m0s"),
        ];
        for (d, want) in cases {
            assert_eq!(go_duration_string(d), want, "{d:?}");
        }
        assert_eq!(signed_go_duration(-1_000_000_000), "-1s");
    }
}
