//! The sentinel's configuration: YAML file + `HYPERFLEET_*` env vars + command-line flags, merged
//! and validated into a [`Config`], and [`dump`]ed back to YAML.
//!
//! Takes: the flags of `serve`/`config-dump` ([`ConfigFlags`]), an env lookup and the config file
//! (`--config`, else `HYPERFLEET_CONFIG`, else [`DEFAULT_CONFIG_FILE`]). Gives: a [`Config`] whose
//! every field is valid, or a [`ConfigError`] that names the file and the place of every problem.
//!
//! Precedence, field by field: a flag given on the command line > a non-empty env var > the file >
//! the default. CEL text (`message_data` leaves, `message_decision`) is checked for shape only and
//! read into the rules layer's source types ([`MessageData`], [`DecisionSource`]), which
//! [`crate::rules`] compiles: this module depends on the rules, never the reverse.
//!
//! Invariant: bad input never panics, and all problems of a file are reported together rather
//! than the first one only.
//!
//! Where the Go sentinel is loose or silent, this module decides as follows (an operator replacing
//! the Go binary should find every working config still working, and a few broken ones rejected
//! with a clear message instead of misbehaving):
//! - Booleans in env vars and in the file accept what Go's `strconv.ParseBool` accepts
//!   (`1 t T TRUE true True 0 f F FALSE false False`), surrounding spaces trimmed.
//! - Like Go's viper/mapstructure decoding, a string field accepts any YAML scalar (`version: 1`
//!   is `"1"`), an integer field accepts a numeric string (`page_size: "50"`), and a boolean field
//!   accepts the strings above. Mappings and sequences where a scalar belongs are errors.
//! - Durations are Go duration strings (`5s`, `1m30s`, `1.5h`, `300ms`), read by [`crate::common::go`] exactly
//!   as `time.ParseDuration` reads them (so at most about 292 years), surrounding spaces
//!   trimmed. A YAML number is rejected (Go would silently read `poll_interval: 5` as 5
//!   nanoseconds), except `0`, which has no unit to get wrong.
//! - A key with a null value (`poll_interval:` left blank) counts as absent and takes its default,
//!   as in Go, except inside `message_data`, where a null leaf is an error.
//! - `log.level`, `log.format` and `log.output` are matched case-insensitively with surrounding
//!   spaces trimmed, and an empty value means the default, as in Go's logger.
//! - `tracing_enabled` defaults to `true`, as in the Go binary (its docs say `false`).
//! - `resource_type` and `clients.hyperfleet_api.version` must each be one URL path segment of
//!   RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`, not `.` or `..`): they are pasted into
//!   request paths.
//! - `clients.hyperfleet_api.base_url` may carry a path prefix but neither a query nor a fragment;
//!   surrounding spaces and trailing slashes are removed.
//! - A `resource_selector` entry with an empty or missing `label` is dropped, as in Go, and
//!   reported in [`Config::warnings`] (Go drops it silently); `value` may be empty.
//! - Limits, each reported with one clear error naming it (the Go sentinel has none): the file
//!   is at most [`MAX_CONFIG_BYTES`], YAML flow collections (`[`, `{`) nest at most
//!   [`MAX_YAML_DEPTH`] deep (checked by a linear byte scan before the YAML parser runs, whose
//!   flow handling is quadratic in the depth), `message_decision.params` has at most
//!   [`MAX_PARAMS`] entries and every CEL expression is at most [`MAX_EXPRESSION_BYTES`] long. At
//!   most [`MAX_REPORTED_PROBLEMS`] problems are listed, then how many more there are.
//! - Setting `HYPERFLEET_API_AUTH_TOKEN_PATH` or `HYPERFLEET_API_AUTH_TOKEN_CACHE_TTL` turns
//!   `clients.hyperfleet_api.auth` on, as in Go; `auth:` left null counts as absent.

mod dump;
mod flags;
mod keys;
mod schema;
mod validate;

pub use dump::dump;
pub use flags::ConfigFlags;

use crate::common::limits::{MAX_CONFIG_BYTES, MAX_REPORTED_PROBLEMS, MAX_YAML_DEPTH};
use crate::common::yaml::LineCol;

use crate::rules::RulesSource;
use crate::rules::decision::DecisionSource;
use crate::rules::message_data::MessageData;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the config file is read from when neither `--config` nor `HYPERFLEET_CONFIG` is given.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/hyperfleet/config.yaml";

/// The env var naming the config file.
pub const CONFIG_ENV: &str = "HYPERFLEET_CONFIG";

/// The most `message_decision.params` entries accepted.
pub const MAX_PARAMS: usize = 1000;

/// The longest CEL expression accepted (a param's `expr`, the `result`, a `message_data` leaf),
/// in bytes (64 KiB).
pub const MAX_EXPRESSION_BYTES: usize = 64 << 10;

/// The merged, validated configuration of one sentinel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `sentinel`: identity of this sentinel.
    pub sentinel: SentinelConfig,
    /// `resource_type`: the collection polled, one URL path segment (`clusters`, `nodepools`).
    pub resource_type: String,
    /// `poll_interval`: time between polls; positive. Default 5s.
    pub poll_interval: Duration,
    /// `resource_selector`: label filters sent to the API, in authored order; empty = all.
    pub resource_selector: Vec<LabelSelector>,
    /// `clients`: the HyperFleet API client and the broker.
    pub clients: Clients,
    /// `log`: level, format and destination of the daemon's logs.
    pub log: LogConfig,
    /// `message_data`: the CloudEvent `data` payload, as CEL expressions.
    pub message_data: MessageData,
    /// `message_decision`: the publish rule (params in authored order, names non-empty and
    /// unique, expressions non-empty); `None` when the file has none (the rules then use the
    /// built-in [`DecisionSource::default_rules`]).
    pub message_decision: Option<DecisionSource>,
    /// `debug_config`: log the merged configuration at startup. Default false.
    pub debug_config: bool,
    /// `tracing_enabled`: OpenTelemetry tracing switch, accepted for compatibility. Default true.
    pub tracing_enabled: bool,
    /// `server_filters`: what each cycle's request asks the API to filter by, beyond the
    /// selector. Default off (the Go sentinel's behaviour: every resource is listed).
    pub server_filters: ServerFilters,
    /// `full_sweep_interval`: a cycle without `server_filters` at least this often (`None`:
    /// never), so what a filter leaves out is listed at most this late.
    pub full_sweep_interval: Option<Duration>,
    /// `server_projection`: ask the API only for the fields the rules, message_data and the
    /// daemon read (`fields=`). Default false.
    pub server_projection: bool,
    /// What the file holds that was accepted but ignored (an empty-label `resource_selector`
    /// entry), one `file: path: what` line each; `serve` logs them as WARN once logging is up.
    pub warnings: Vec<String>,
}

impl Config {
    /// The resource selector as `(label, value)` pairs, in authored order: the API search and
    /// the metrics' selector label are built from it.
    pub fn selector_pairs(&self) -> Vec<(String, String)> {
        self.resource_selector
            .iter()
            .map(|s| (s.label.clone(), s.value.clone()))
            .collect()
    }
}

/// `server_filters`: `off` (or absent), `auto`, or a search of the operator's own, or a list of
/// them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServerFilters {
    /// List every resource the selector matches, as the Go sentinel does.
    #[default]
    Off,
    /// The search derived from the rules (`crate::rules::filter`).
    Auto,
    /// A TSL search of the operator's own, ANDed with the selector; checked by the API's rules
    /// at load.
    Search(String),
    /// TSL searches of the operator's own (a YAML list), ANDed in order after the selector's
    /// terms, as the Go sentinel's client joins its `additionalFilters`; each checked at load.
    /// Never empty (an empty list is [`ServerFilters::Off`]).
    Searches(Vec<String>),
}

impl ServerFilters {
    /// The searches of the operator's own, in order (none for `off` and `auto`).
    pub fn searches(&self) -> &[String] {
        match self {
            ServerFilters::Search(s) => std::slice::from_ref(s),
            ServerFilters::Searches(list) => list,
            ServerFilters::Off | ServerFilters::Auto => &[],
        }
    }
}

/// The setting as written: `off`, `auto`, the search, or the list in YAML's flow form.
impl std::fmt::Display for ServerFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerFilters::Off => f.write_str("off"),
            ServerFilters::Auto => f.write_str("auto"),
            ServerFilters::Search(s) => f.write_str(s),
            ServerFilters::Searches(list) => {
                let quoted: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
                write!(f, "[{}]", quoted.join(", "))
            }
        }
    }
}

/// `sentinel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentinelConfig {
    /// `sentinel.name`: component name, sent as the CloudEvent source. Default
    /// `hyperfleet-sentinel`; never empty.
    pub name: String,
}

/// One `resource_selector` entry: resources must carry label `label` with value `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSelector {
    /// The label key; never empty.
    pub label: String,
    /// The required value; may be empty.
    pub value: String,
}

/// `clients`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clients {
    /// `clients.hyperfleet_api`.
    pub hyperfleet_api: ApiConfig,
    /// `clients.broker`.
    pub broker: BrokerClient,
}

/// `clients.hyperfleet_api`: how to reach the HyperFleet API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiConfig {
    /// `base_url`: `http` or `https` URL with a host, no query or fragment, no trailing `/`.
    pub base_url: String,
    /// `version`: API version path segment. Default `v1`.
    pub version: String,
    /// `timeout`: per-request timeout; positive. Default 10s.
    pub timeout: Duration,
    /// `page_size`: resources per page, 1..=500. Default 20.
    pub page_size: u32,
    /// `auth`: bearer-token authentication, when configured.
    pub auth: Option<AuthConfig>,
}

/// `clients.hyperfleet_api.auth`: a bearer token read from a file (a projected service account
/// token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    /// `token_path`: absolute path of the token file.
    pub token_path: PathBuf,
    /// `token_cache_ttl`: how long a read token is reused; zero means read it for every request.
    /// Default 0.
    pub token_cache_ttl: Duration,
}

/// `clients.broker`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerClient {
    /// `topic`: where events are published. Default empty.
    pub topic: String,
}

/// `log`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// `log.level`. Default info.
    pub level: LogLevel,
    /// `log.format`. Default json.
    pub format: LogFormat,
    /// `log.output`. Default stdout.
    pub output: LogOutput,
}

/// `log.level`: the least severe level written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warn` (also spelled `warning`).
    Warn,
    /// `error`.
    Error,
}

/// `log.format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// `json`: one JSON object per line.
    Json,
    /// `text`: human-readable lines.
    Text,
}

/// `log.output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogOutput {
    /// `stdout`.
    Stdout,
    /// `stderr`.
    Stderr,
}

impl LogLevel {
    /// The canonical spelling, as written by [`dump`].
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

impl LogFormat {
    /// The canonical spelling, as written by [`dump`].
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Json => "json",
            LogFormat::Text => "text",
        }
    }
}

impl LogOutput {
    /// The canonical spelling, as written by [`dump`].
    pub fn as_str(self) -> &'static str {
        match self {
            LogOutput::Stdout => "stdout",
            LogOutput::Stderr => "stderr",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for LogOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'a> From<&'a Config> for RulesSource<'a> {
    /// The config's `message_decision` and `message_data`, for [`crate::rules::Rules::compile`].
    fn from(config: &'a Config) -> RulesSource<'a> {
        RulesSource {
            decision: config.message_decision.as_ref(),
            message_data: &config.message_data,
        }
    }
}

/// One thing wrong with a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Dotted path of the offending key (`clients.hyperfleet_api.base_url`,
    /// `message_decision.params[2].name`); empty when the whole document is wrong.
    pub path: String,
    /// What is wrong: lowercase, no trailing period.
    pub message: String,
    /// The flag or env var the value came from, when it did not come from the file.
    pub source: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, " (set by {source})")?;
        }
        Ok(())
    }
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {file}: {source}")]
    Unreadable {
        /// The path as given.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error(
        "{file}: config file is {size} bytes, larger than the limit of {MAX_CONFIG_BYTES} bytes"
    )]
    TooLarge {
        /// The path as given.
        file: String,
        /// The file's size in bytes.
        size: u64,
    },
    /// The file is not well-formed YAML.
    #[error("{}: invalid YAML: {message}", located(.file, .position))]
    Syntax {
        /// The path as given.
        file: String,
        /// Where the parser stopped, when it says.
        position: Option<LineCol>,
        /// The parser's message, without the position.
        message: String,
    },
    /// The file parsed but its content is wrong; one line per problem.
    #[error("{}", render_problems(.file, .problems))]
    Invalid {
        /// The path as given.
        file: String,
        /// Every problem found, in document order as far as it is known.
        problems: Vec<Problem>,
    },
    /// A flag or env var holds a value of the wrong type (a bad duration, integer or boolean).
    #[error("invalid value {value:?} for {name}: {reason}")]
    BadValue {
        /// The flag (`--poll-interval`) or env var (`HYPERFLEET_POLL_INTERVAL`).
        name: String,
        /// The value given.
        value: String,
        /// What was expected.
        reason: String,
    },
}

/// Whether a problem already covers `path`: one at `path`, under it or at an ancestor (a wrong
/// type there), or a misspelling of its last segment in the same mapping. Saying `required` as
/// well would only repeat it.
fn already_reported(problems: &[Problem], path: &str) -> bool {
    fn parent_of(p: &str) -> &str {
        p.rsplit_once('.').map_or("", |(parent, _)| parent)
    }
    let leaf = path.rsplit_once('.').map_or(path, |(_, leaf)| leaf);
    // `b` is `a` or lies under it (`a.x`, `a[0]`).
    let related = |a: &str, b: &str| {
        a.is_empty()
            || b.strip_prefix(a)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    let hints_leaf = |message: &str| {
        message
            .strip_suffix("`?")
            .and_then(|m| m.strip_suffix(leaf))
            .is_some_and(|m| m.ends_with("did you mean `"))
    };
    problems.iter().any(|p| {
        related(&p.path, path)
            || related(path, &p.path)
            || (hints_leaf(&p.message) && parent_of(&p.path) == parent_of(path))
    })
}

fn located(file: &str, position: &Option<LineCol>) -> String {
    match position {
        Some(p) => format!("{file}:{p}"),
        None => file.to_string(),
    }
}

fn render_problems(file: &str, problems: &[Problem]) -> String {
    let mut lines: Vec<String> = problems
        .iter()
        .take(MAX_REPORTED_PROBLEMS)
        .map(|p| format!("{file}: {p}"))
        .collect();
    if let Some(more) = problems
        .len()
        .checked_sub(MAX_REPORTED_PROBLEMS)
        .filter(|n| *n > 0)
    {
        lines.push(format!("{file}: and {more} more problems"));
    }
    lines.join("\n")
}

/// Reads an env var from the process environment; a value that is not UTF-8 counts as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The config file to read: `--config`, else a non-empty `HYPERFLEET_CONFIG`, else
/// [`DEFAULT_CONFIG_FILE`].
pub fn config_path(flags: &ConfigFlags, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(path) = &flags.config {
        return path.clone();
    }
    match env(CONFIG_ENV).filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(DEFAULT_CONFIG_FILE),
    }
}

/// Loads the configuration: reads the file named by [`config_path`], merges env vars (looked up
/// with `env`, e.g. [`process_env`]) and flags over it, and validates the result.
pub fn load(
    flags: &ConfigFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let path = config_path(flags, env);
    let overrides = flags::resolve(flags, env)?;
    let file = path.display().to_string();
    let text = read_file(&path, &file)?;
    merge(&text, &file, overrides)
}

/// Like [`load`], with the file's content given as `yaml` and its name for messages as
/// `file_name`; `flags.config` and `HYPERFLEET_CONFIG` are ignored.
pub fn load_str(
    yaml: &str,
    file_name: &str,
    flags: &ConfigFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let overrides = flags::resolve(flags, env)?;
    merge(yaml, file_name, overrides)
}

/// Reads the file, refusing one over [`MAX_CONFIG_BYTES`] without reading more than one byte past
/// the limit (a file may grow, or be a pipe, after it is measured).
fn read_file(path: &Path, file: &str) -> Result<String, ConfigError> {
    use std::io::Read;
    let unreadable = |source| ConfigError::Unreadable {
        file: file.to_string(),
        source,
    };
    let handle = std::fs::File::open(path).map_err(unreadable)?;
    let size = handle.metadata().map_err(unreadable)?.len();
    let too_large = |size| ConfigError::TooLarge {
        file: file.to_string(),
        size,
    };
    if size > MAX_CONFIG_BYTES as u64 {
        return Err(too_large(size));
    }
    let mut text = String::new();
    handle
        .take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(unreadable)?;
    if text.len() > MAX_CONFIG_BYTES {
        return Err(too_large(text.len() as u64));
    }
    Ok(text)
}

fn merge(yaml: &str, file: &str, overrides: Vec<flags::Override>) -> Result<Config, ConfigError> {
    if yaml.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            file: file.to_string(),
            size: yaml.len() as u64,
        });
    }
    if let Some(position) = crate::common::yaml::depth::too_deep(yaml, MAX_YAML_DEPTH) {
        return Err(ConfigError::Syntax {
            file: file.to_string(),
            position: Some(position),
            message: format!(
                "flow collections (`[`, `{{`) nested more than {MAX_YAML_DEPTH} deep, the limit"
            ),
        });
    }
    let document = parse_yaml(yaml, file)?;
    let mut problems = Vec::new();
    let mut raw = schema::read(&document, &mut problems);
    for o in overrides {
        raw.set_override(o);
    }
    match validate::build(&raw, &mut problems) {
        Some(mut config) if problems.is_empty() => {
            for warning in &mut config.warnings {
                *warning = format!("{file}: {warning}");
            }
            Ok(config)
        }
        _ => {
            sort_like_document(&mut problems, &document);
            Err(ConfigError::Invalid {
                file: file.to_string(),
                problems,
            })
        }
    }
}

/// Orders problems by where their top-level key appears in the document (keys it lacks last),
/// keeping the order within a key. Positions inside the file are not known, so this is as close
/// to document order as the problems get.
fn sort_like_document(problems: &mut [Problem], document: &yaml_serde::Value) {
    let mut top_keys: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    if let yaml_serde::Value::Mapping(map) = document {
        for (i, key) in map.keys().filter_map(|k| k.as_str()).enumerate() {
            top_keys.entry(key).or_insert(i);
        }
    }
    problems.sort_by_cached_key(|p| {
        let top = p.path.split(['.', '[']).next().unwrap_or_default();
        match top_keys.get(top) {
            _ if p.path.is_empty() => 0,
            Some(i) => i + 1,
            None => usize::MAX,
        }
    });
}

/// Parses YAML text into a value with `<<` merge keys applied.
fn parse_yaml(yaml: &str, file: &str) -> Result<yaml_serde::Value, ConfigError> {
    let syntax = |e: yaml_serde::Error| {
        let position = e.location().map(|l| LineCol {
            line: l.line(),
            column: l.column(),
        });
        let mut message = e.to_string();
        if let Some(p) = position {
            // yaml_serde appends the position to its message; it is already in the prefix.
            message = message.replacen(&format!(" at line {} column {}", p.line, p.column), "", 1);
        }
        ConfigError::Syntax {
            file: file.to_string(),
            position,
            message,
        }
    };
    let mut document: yaml_serde::Value = yaml_serde::from_str(yaml).map_err(syntax)?;
    document.apply_merge().map_err(syntax)?;
    Ok(document)
}
