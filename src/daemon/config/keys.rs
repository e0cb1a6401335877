//! The scalar settings that flags and env vars can override: their dotted paths, flags, env vars
//! and value kinds, and the one parser that turns text into a value of a kind.
//!
//! Invariant: [`SPECS`] is indexed by [`Key`] (`SPECS[key as usize].key == key`), checked by a
//! unit test.

use crate::common::go::{parse_go_bool, parse_go_duration};
use crate::common::yaml::parse_int;

/// An overridable scalar setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Key {
    DebugConfig,
    Name,
    LogLevel,
    LogFormat,
    LogOutput,
    BaseUrl,
    ApiVersion,
    Timeout,
    PageSize,
    TokenPath,
    TokenCacheTtl,
    Topic,
    ResourceType,
    PollInterval,
    TracingEnabled,
    ServerFilters,
    FullSweepInterval,
    ServerProjection,
}

/// How many [`Key`]s there are.
pub(super) const N_KEYS: usize = 18;

/// The type of a scalar setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Bool,
    Int,
    Duration,
    /// A string, or a list of strings (in an env var or a flag: a YAML flow sequence,
    /// `["…", "…"]`).
    Searches,
}

/// A scalar setting's value, before range checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Scalar {
    Text(String),
    Bool(bool),
    Int(i64),
    /// A duration in nanoseconds; may be negative until validated.
    Nanos(i128),
    /// A list of strings ([`Kind::Searches`]).
    Texts(Vec<String>),
}

/// Where a [`Key`] lives and how it is set.
pub(super) struct KeySpec {
    pub key: Key,
    /// Dotted path in the file.
    pub path: &'static str,
    pub kind: Kind,
    /// The long flag, with dashes, if there is one.
    pub flag: Option<&'static str>,
    pub env: &'static str,
    /// Whether the Go sentinel knows the key: its loader (viper's `UnmarshalExact`) refuses a
    /// file with any other key, so a file using one of ours cannot be rolled back to the Go
    /// image, while our env vars can (Go ignores unknown env).
    pub go: bool,
}

const fn spec(
    key: Key,
    path: &'static str,
    kind: Kind,
    flag: Option<&'static str>,
    env: &'static str,
) -> KeySpec {
    KeySpec {
        key,
        path,
        kind,
        flag,
        env,
        go: true,
    }
}

/// A key of this sentinel's own, which the Go sentinel refuses in a file.
const fn ours(spec: KeySpec) -> KeySpec {
    KeySpec { go: false, ..spec }
}

/// Every [`Key`], in declaration order.
pub(super) static SPECS: [KeySpec; N_KEYS] = [
    spec(
        Key::DebugConfig,
        "debug_config",
        Kind::Bool,
        Some("--debug-config"),
        "HYPERFLEET_DEBUG_CONFIG",
    ),
    spec(
        Key::Name,
        "sentinel.name",
        Kind::Text,
        Some("--name"),
        "HYPERFLEET_SENTINEL_NAME",
    ),
    spec(
        Key::LogLevel,
        "log.level",
        Kind::Text,
        Some("--log-level"),
        "HYPERFLEET_LOG_LEVEL",
    ),
    spec(
        Key::LogFormat,
        "log.format",
        Kind::Text,
        Some("--log-format"),
        "HYPERFLEET_LOG_FORMAT",
    ),
    spec(
        Key::LogOutput,
        "log.output",
        Kind::Text,
        Some("--log-output"),
        "HYPERFLEET_LOG_OUTPUT",
    ),
    spec(
        Key::BaseUrl,
        "clients.hyperfleet_api.base_url",
        Kind::Text,
        Some("--hyperfleet-api-base-url"),
        "HYPERFLEET_API_BASE_URL",
    ),
    spec(
        Key::ApiVersion,
        "clients.hyperfleet_api.version",
        Kind::Text,
        Some("--hyperfleet-api-version"),
        "HYPERFLEET_API_VERSION",
    ),
    spec(
        Key::Timeout,
        "clients.hyperfleet_api.timeout",
        Kind::Duration,
        Some("--hyperfleet-api-timeout"),
        "HYPERFLEET_API_TIMEOUT",
    ),
    spec(
        Key::PageSize,
        "clients.hyperfleet_api.page_size",
        Kind::Int,
        Some("--hyperfleet-api-page-size"),
        "HYPERFLEET_API_PAGE_SIZE",
    ),
    spec(
        Key::TokenPath,
        "clients.hyperfleet_api.auth.token_path",
        Kind::Text,
        None,
        "HYPERFLEET_API_AUTH_TOKEN_PATH",
    ),
    spec(
        Key::TokenCacheTtl,
        "clients.hyperfleet_api.auth.token_cache_ttl",
        Kind::Duration,
        None,
        "HYPERFLEET_API_AUTH_TOKEN_CACHE_TTL",
    ),
    spec(
        Key::Topic,
        "clients.broker.topic",
        Kind::Text,
        Some("--broker-topic"),
        "HYPERFLEET_BROKER_TOPIC",
    ),
    spec(
        Key::ResourceType,
        "resource_type",
        Kind::Text,
        Some("--resource-type"),
        "HYPERFLEET_RESOURCE_TYPE",
    ),
    spec(
        Key::PollInterval,
        "poll_interval",
        Kind::Duration,
        Some("--poll-interval"),
        "HYPERFLEET_POLL_INTERVAL",
    ),
    spec(
        Key::TracingEnabled,
        "tracing_enabled",
        Kind::Bool,
        Some("--tracing-enabled"),
        "HYPERFLEET_TRACING_ENABLED",
    ),
    ours(spec(
        Key::ServerFilters,
        "server_filters",
        Kind::Searches,
        None,
        "HYPERFLEET_SERVER_FILTERS",
    )),
    ours(spec(
        Key::FullSweepInterval,
        "full_sweep_interval",
        Kind::Duration,
        None,
        "HYPERFLEET_FULL_SWEEP_INTERVAL",
    )),
    ours(spec(
        Key::ServerProjection,
        "server_projection",
        Kind::Bool,
        None,
        "HYPERFLEET_SERVER_PROJECTION",
    )),
];

impl Key {
    /// Where this key lives and how it is set.
    pub(super) fn spec(self) -> &'static KeySpec {
        &SPECS[self as usize]
    }

    /// Dotted path in the file.
    pub(super) fn path(self) -> &'static str {
        self.spec().path
    }
}

/// What a duration looks like, for messages.
pub(super) const DURATION_HINT: &str = "a duration such as \"5s\", \"1m30s\" or \"300ms\"";

/// Parses the text of a flag, env var or YAML string as a value of `kind`. Errors are the
/// expectation, for messages. Non-text kinds ignore surrounding spaces (Go's parsers do not:
/// a documented leniency of the config, see the module doc of `config`).
pub(super) fn parse_text(kind: Kind, text: &str) -> Result<Scalar, String> {
    match kind {
        Kind::Text => Ok(Scalar::Text(text.to_string())),
        Kind::Bool => parse_go_bool(text.trim())
            .map(Scalar::Bool)
            .ok_or_else(|| expectation(kind)),
        Kind::Int => parse_int(text)
            .map(Scalar::Int)
            .ok_or_else(|| expectation(kind)),
        Kind::Duration => parse_go_duration(text.trim())
            .map(|nanos| Scalar::Nanos(nanos.into()))
            .ok_or_else(|| expectation(kind)),
        // A search never starts with `[`: such a text is the list form.
        Kind::Searches if text.trim_start().starts_with('[') => {
            yaml_serde::from_str::<Vec<String>>(text)
                .map(Scalar::Texts)
                .map_err(|e| format!("{}: {e}", expectation(kind)))
        }
        Kind::Searches => Ok(Scalar::Text(text.to_string())),
    }
}

/// What a value of `kind` looks like, for messages: `expected …`.
pub(super) fn expectation(kind: Kind) -> String {
    match kind {
        Kind::Text => "expected a string".to_string(),
        Kind::Bool => "expected a boolean (true, false, 1, 0, t or f)".to_string(),
        Kind::Int => "expected an integer".to_string(),
        Kind::Duration => format!("expected {DURATION_HINT}"),
        Kind::Searches => {
            "expected a string or a list of strings (as a flow sequence: [\"…\", \"…\"])"
                .to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_indexed_by_key() {
        for (i, spec) in SPECS.iter().enumerate() {
            assert_eq!(spec.key as usize, i, "{}", spec.path);
        }
    }

    #[test]
    fn parse_text_by_kind() {
        assert_eq!(parse_text(Kind::Int, " 42 "), Ok(Scalar::Int(42)));
        assert!(parse_text(Kind::Int, "4x").is_err());
        assert_eq!(parse_text(Kind::Bool, "T"), Ok(Scalar::Bool(true)));
        assert!(parse_text(Kind::Bool, "yes").is_err());
        assert_eq!(parse_text(Kind::Duration, "0"), Ok(Scalar::Nanos(0)));
        // Trimmed (the config's leniency), then read exactly as Go's time.ParseDuration.
        assert_eq!(
            parse_text(Kind::Duration, " 1.5s "),
            Ok(Scalar::Nanos(1_500_000_000))
        );
        assert!(parse_text(Kind::Duration, "2562048h").is_err());
        assert_eq!(parse_text(Kind::Bool, " true "), Ok(Scalar::Bool(true)));
        assert_eq!(
            parse_text(Kind::Searches, "generation = 1"),
            Ok(Scalar::Text("generation = 1".into()))
        );
        assert_eq!(
            parse_text(Kind::Searches, r#" ["a = 'x'", 'b in [1]']"#),
            Ok(Scalar::Texts(vec!["a = 'x'".into(), "b in [1]".into()]))
        );
        assert!(parse_text(Kind::Searches, "[1, [2]]").is_err());
        assert_eq!(
            parse_text(Kind::Text, " a "),
            Ok(Scalar::Text(" a ".into()))
        );
    }
}
