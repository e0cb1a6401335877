//! The merged configuration written back as YAML, for `sentinel config-dump` and the
//! `debug_config` startup log.
//!
//! Invariant: the output uses the file's key names and Go duration strings, so loading it again
//! gives the same [`Config`] (with no flags or env vars set), except that a config without
//! `message_decision` comes back with the built-in rules written out (the same rules), and a
//! password in `base_url` is masked (`http://user:****@host`), since the dump is printed and logged.

use super::Config;
use crate::common::go::go_duration_string;
use crate::common::redact::mask_url;
use crate::rules::decision::DecisionSource;
use crate::rules::message_data::MessageData;
use std::time::Duration;
use yaml_serde::{Mapping, Value};

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
    // The settings of our own (not the Go sentinel's), only when set: a Go config dumps as Go's.
    match &config.server_filters {
        super::ServerFilters::Off => {}
        super::ServerFilters::Searches(list) => {
            let list = list.iter().map(|s| text(s)).collect();
            root.push(("server_filters", Value::Sequence(list)));
        }
        other => root.push(("server_filters", text(&other.to_string()))),
    }
    if let Some(sweep) = config.full_sweep_interval {
        root.push(("full_sweep_interval", duration(sweep)));
    }
    if config.server_projection {
        root.push(("server_projection", Value::Bool(true)));
    }
    // Serializing a plain value tree has no failure mode in practice; say so rather than panic.
    yaml_serde::to_string(&mapping(root))
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
