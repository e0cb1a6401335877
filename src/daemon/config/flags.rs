//! The command-line flags of `serve` and `config-dump`, and how flags and env vars become
//! overrides: per setting, a flag given on the command line wins over a non-empty env var.
//!
//! Invariant: every field of [`ConfigFlags`] is optional, so "given on the command line" is
//! distinguishable from "left at its default".

use super::ConfigError;
use super::keys::{Key, SPECS, Scalar, parse_text};
use crate::common::go::parse_go_bool;
use std::path::PathBuf;

/// The configuration flags shared by `serve` and `config-dump`; embed with
/// `#[command(flatten)]`. A flag that is given overrides its env var and the file.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigFlags {
    /// Path to the configuration file (YAML) [env: HYPERFLEET_CONFIG] [default:
    /// /etc/hyperfleet/config.yaml]
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Sentinel component name [env: HYPERFLEET_SENTINEL_NAME]
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub name: Option<String>,
    /// Log level: debug, info, warn, error [env: HYPERFLEET_LOG_LEVEL]
    #[arg(short = 'l', long = "log-level", value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log format: text, json [env: HYPERFLEET_LOG_FORMAT]
    #[arg(short = 'f', long = "log-format", value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Log output: stdout, stderr [env: HYPERFLEET_LOG_OUTPUT]
    #[arg(long = "log-output", value_name = "OUTPUT")]
    pub log_output: Option<String>,
    /// HyperFleet API base URL [env: HYPERFLEET_API_BASE_URL]
    #[arg(long = "hyperfleet-api-base-url", value_name = "URL")]
    pub hyperfleet_api_base_url: Option<String>,
    /// HyperFleet API version [env: HYPERFLEET_API_VERSION]
    #[arg(long = "hyperfleet-api-version", value_name = "VERSION")]
    pub hyperfleet_api_version: Option<String>,
    /// HyperFleet API timeout, e.g. 10s [env: HYPERFLEET_API_TIMEOUT]
    #[arg(long = "hyperfleet-api-timeout", value_name = "DURATION")]
    pub hyperfleet_api_timeout: Option<String>,
    /// Resources per API page, 1 to 500 (the HyperFleet API serves at most 100) [env:
    /// HYPERFLEET_API_PAGE_SIZE]
    #[arg(long = "hyperfleet-api-page-size", value_name = "N")]
    pub hyperfleet_api_page_size: Option<String>,
    /// Broker topic [env: HYPERFLEET_BROKER_TOPIC]
    #[arg(long = "broker-topic", value_name = "TOPIC")]
    pub broker_topic: Option<String>,
    /// Resource type to watch, e.g. clusters [env: HYPERFLEET_RESOURCE_TYPE]
    #[arg(long = "resource-type", value_name = "TYPE")]
    pub resource_type: Option<String>,
    /// Poll interval, e.g. 5s [env: HYPERFLEET_POLL_INTERVAL]
    #[arg(long = "poll-interval", value_name = "DURATION")]
    pub poll_interval: Option<String>,
    /// Log the merged configuration at startup; `--debug-config=false` turns it off
    /// [env: HYPERFLEET_DEBUG_CONFIG]
    #[arg(
        long = "debug-config",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = bool_flag
    )]
    pub debug_config: Option<bool>,
    /// Enable OpenTelemetry tracing; `--tracing-enabled=false` turns it off
    /// [env: HYPERFLEET_TRACING_ENABLED]
    #[arg(
        long = "tracing-enabled",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = bool_flag
    )]
    pub tracing_enabled: Option<bool>,
}

/// The clap value parser of the boolean flags (clap wants the error as something displayable).
fn bool_flag(text: &str) -> Result<bool, String> {
    parse_go_bool(text).ok_or_else(|| "expected true, false, 1, 0, t or f".to_string())
}

/// One setting taken from a flag or env var instead of the file.
pub(super) struct Override {
    pub key: Key,
    /// The flag (`--poll-interval`) or env var it came from.
    pub source: &'static str,
    pub value: Scalar,
}

/// A flag's value as given on the command line.
enum FlagValue<'a> {
    Text(&'a str),
    Bool(bool),
}

fn flag_value(flags: &ConfigFlags, key: Key) -> Option<FlagValue<'_>> {
    let text = match key {
        Key::DebugConfig => return flags.debug_config.map(FlagValue::Bool),
        Key::TracingEnabled => return flags.tracing_enabled.map(FlagValue::Bool),
        Key::TokenPath
        | Key::TokenCacheTtl
        | Key::ServerFilters
        | Key::FullSweepInterval
        | Key::ServerProjection => None,
        Key::Name => flags.name.as_deref(),
        Key::LogLevel => flags.log_level.as_deref(),
        Key::LogFormat => flags.log_format.as_deref(),
        Key::LogOutput => flags.log_output.as_deref(),
        Key::BaseUrl => flags.hyperfleet_api_base_url.as_deref(),
        Key::ApiVersion => flags.hyperfleet_api_version.as_deref(),
        Key::Timeout => flags.hyperfleet_api_timeout.as_deref(),
        Key::PageSize => flags.hyperfleet_api_page_size.as_deref(),
        Key::Topic => flags.broker_topic.as_deref(),
        Key::ResourceType => flags.resource_type.as_deref(),
        Key::PollInterval => flags.poll_interval.as_deref(),
    };
    text.map(FlagValue::Text)
}

/// The effective override of every setting that has one: the flag if given (even empty), else
/// the env var if set and non-empty. Only effective values are parsed, so a bad env var hidden
/// by a flag is no error. The first value of the wrong type is a [`ConfigError::BadValue`].
pub(super) fn resolve(
    flags: &ConfigFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Override>, ConfigError> {
    let mut overrides = Vec::new();
    for spec in &SPECS {
        let flag_name = spec.flag.unwrap_or(spec.env);
        let (source, text) = match flag_value(flags, spec.key) {
            Some(FlagValue::Bool(b)) => {
                overrides.push(Override {
                    key: spec.key,
                    source: flag_name,
                    value: Scalar::Bool(b),
                });
                continue;
            }
            Some(FlagValue::Text(text)) => (flag_name, text.to_string()),
            None => match env(spec.env).filter(|v| !v.is_empty()) {
                Some(text) => (spec.env, text),
                None => continue,
            },
        };
        let value = parse_text(spec.kind, &text).map_err(|reason| ConfigError::BadValue {
            name: source.to_string(),
            value: text.clone(),
            reason,
        })?;
        overrides.push(Override {
            key: spec.key,
            source,
            value,
        });
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_beats_env_and_empty_env_is_ignored() {
        let flags = ConfigFlags {
            name: Some("from-flag".into()),
            ..ConfigFlags::default()
        };
        let env = |name: &str| match name {
            "HYPERFLEET_SENTINEL_NAME" => Some("from-env".to_string()),
            "HYPERFLEET_BROKER_TOPIC" => Some(String::new()),
            _ => None,
        };
        let overrides = resolve(&flags, &env).expect("valid overrides");
        assert_eq!(overrides.len(), 1);
        assert_eq!(overrides[0].source, "--name");
        assert_eq!(overrides[0].value, Scalar::Text("from-flag".into()));
    }
}
