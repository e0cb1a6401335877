//! broker.yaml: where it is looked for, its schema, environment overrides and validation.
//!
//! Takes the file text (if any) and an environment lookup; gives a [`BrokerConfig`] or a
//! [`BrokerError`] listing every problem found. The schema is the Go `hyperfleet-broker` library's
//! (`broker.{type, rabbitmq.*, googlepubsub.*}`, `subscriber.*`, `log_config`), plus the broker
//! type `stdout`. Every key can be overridden by the environment variable named by its path in
//! upper case with dots as underscores (`broker.rabbitmq.url` → `BROKER_RABBITMQ_URL`), as
//! viper's `AutomaticEnv` does; empty variables count as unset.
//!
//! Invariant: as in the Go library (viper ignores them), unknown keys are not errors: they are
//! collected in [`BrokerConfig::ignored_keys`] (with a "did you mean" suggestion) and logged as
//! one WARN, so the Go repo's own example broker.yaml (with its `publisher:` section) loads. A
//! URL's password never appears in an error message or in [`BrokerConfig::masked`].

use super::BrokerError;
use crate::common::file::read_regular;
use crate::common::go::parse_go_bool;
use crate::common::limits::{MAX_CONFIG_BYTES, MAX_REPORTED_PROBLEMS, MAX_YAML_DEPTH};
use crate::common::redact::mask_url;
use crate::common::yaml::depth;
use crate::common::yaml::{self, Setting, fields, join, parse_int, suggestion};
use serde::Serialize;
use std::path::{Path, PathBuf};
use yaml_serde::{Mapping, Value};

mod pubsub;
mod url;

pub(in crate::broker) use url::parse_url;

/// The environment lookup the loader reads: variable name → value.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Which broker events go to (`broker.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrokerKind {
    /// RabbitMQ over AMQP 0-9-1.
    RabbitMq,
    /// Google Cloud Pub/Sub.
    GooglePubSub,
    /// Events printed to stdout as JSON lines, for development without a broker.
    Stdout,
}

/// RabbitMQ exchange types (`broker.rabbitmq.exchange_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExchangeType {
    /// Routes on an exact routing-key match.
    Direct,
    /// Routes to every bound queue; the default, as in watermill's durable pub/sub config.
    #[default]
    Fanout,
    /// Routes on routing-key patterns.
    Topic,
    /// Routes on message headers.
    Headers,
}

impl ExchangeType {
    /// The AMQP name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ExchangeType::Direct => "direct",
            ExchangeType::Fanout => "fanout",
            ExchangeType::Topic => "topic",
            ExchangeType::Headers => "headers",
        }
    }
}

/// `broker.rabbitmq.*`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RabbitConfig {
    /// `amqp://` or `amqps://` URL with credentials (required for type rabbitmq).
    pub url: String,
    /// A static exchange name; empty means the exchange is named after the topic.
    pub exchange: String,
    /// The exchange type the publisher declares.
    pub exchange_type: ExchangeType,
    /// A static routing key; empty means the empty routing key.
    pub routing_key: String,
    /// Count a publish only once the broker confirms it. Default true (Go's default is false,
    /// under which a broker crash loses events that logs and metrics count as published); an
    /// explicit `publisher_confirm: false` is honoured.
    pub publisher_confirm: bool,
    /// Consumer side (accepted for compatibility; the sentinel only publishes).
    pub queue: String,
    /// Consumer side QoS prefetch count.
    pub prefetch_count: i64,
    /// Consumer side QoS prefetch size.
    pub prefetch_size: i64,
    /// Consumer side consumer tag.
    pub consumer_tag: String,
}

impl Default for RabbitConfig {
    fn default() -> RabbitConfig {
        RabbitConfig {
            url: String::new(),
            exchange: String::new(),
            exchange_type: ExchangeType::default(),
            routing_key: String::new(),
            publisher_confirm: true,
            queue: String::new(),
            prefetch_count: 0,
            prefetch_size: 0,
            consumer_tag: String::new(),
        }
    }
}

/// `broker.googlepubsub.*`: validated like the Go library does; the publisher uses `project_id`,
/// `create_topic_if_missing` and `enable_message_ordering` (the rest is subscriber-side).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PubSubConfig {
    /// GCP project id (required for type googlepubsub).
    pub project_id: String,
    /// Subscription ack deadline, 10..=600 seconds or 0 for the default.
    pub ack_deadline_seconds: i64,
    /// How long unacknowledged messages are kept (10m..31d).
    pub message_retention_duration: String,
    /// Inactivity before the subscription expires (0 or at least 1d).
    pub expiration_ttl: String,
    /// Ordered delivery by ordering key.
    pub enable_message_ordering: bool,
    /// Minimum redelivery backoff (0s..600s).
    pub retry_min_backoff: String,
    /// Maximum redelivery backoff (0s..600s).
    pub retry_max_backoff: String,
    /// Dead letter topic name.
    pub dead_letter_topic: String,
    /// Delivery attempts before dead-lettering, 5..=100 or 0 for the default.
    pub dead_letter_max_attempts: i64,
    /// How long the topic keeps messages (0 or 10m..31d).
    pub topic_retention_duration: String,
    /// Receiver flow control: messages in flight.
    pub max_outstanding_messages: i64,
    /// Receiver flow control: bytes in flight.
    pub max_outstanding_bytes: i64,
    /// Receiver goroutines.
    pub num_goroutines: i64,
    /// Create the topic when it is missing.
    pub create_topic_if_missing: bool,
    /// Create the subscription when it is missing.
    pub create_subscription_if_missing: bool,
}

/// `subscriber.*` (consumer side; accepted for compatibility).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubscriberConfig {
    /// Parallel message handlers; default 10.
    pub parallelism: i64,
}

impl Default for SubscriberConfig {
    fn default() -> SubscriberConfig {
        SubscriberConfig { parallelism: 10 }
    }
}

/// The merged broker configuration (file, then environment overrides), validated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BrokerConfig {
    /// Where the configuration came from: a file path, or `environment`.
    #[serde(skip)]
    pub origin: String,
    /// `log_config`: log the merged configuration (password masked) at startup.
    pub log_config: bool,
    /// `broker.type`.
    #[serde(rename = "type")]
    pub kind: BrokerKind,
    /// `broker.rabbitmq`.
    pub rabbitmq: RabbitConfig,
    /// `broker.googlepubsub`.
    pub googlepubsub: PubSubConfig,
    /// `subscriber`.
    pub subscriber: SubscriberConfig,
    /// Keys the file holds that no setting reads (`publisher`, a misspelling), as
    /// `path: unknown key (did you mean '…'?)`, in document order; ignored like Go ignores them.
    #[serde(skip)]
    pub ignored_keys: Vec<String>,
}

impl BrokerConfig {
    /// The merged configuration as one line of JSON with the URL password replaced by `****`.
    pub fn masked(&self) -> String {
        let mut copy = self.clone();
        copy.rabbitmq.url = mask_url(&self.rabbitmq.url);
        serde_json::to_string(&copy).unwrap_or_else(|e| format!("<unprintable broker config: {e}>"))
    }
}

/// The paths searched for broker.yaml, in order: `$BROKER_CONFIG_FILE` alone when set, else
/// `broker.yaml` beside the (symlink-resolved) executable, then `./broker.yaml`.
pub fn candidate_paths(env: Env) -> Vec<PathBuf> {
    if let Some(path) = env("BROKER_CONFIG_FILE").filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(path)];
    }
    let mut paths = Vec::new();
    let exe = std::env::current_exe().and_then(std::fs::canonicalize);
    if let Some(dir) = exe.ok().as_deref().and_then(Path::parent) {
        paths.push(dir.join("broker.yaml"));
    }
    paths.push(PathBuf::from("broker.yaml"));
    paths
}

/// Finds, reads, merges and validates the broker configuration; logs it (masked) when
/// `log_config` is set.
///
/// A missing file is fine when the environment sets some `broker.*` key (e.g. `BROKER_TYPE`),
/// except that a file named by `BROKER_CONFIG_FILE` must exist.
pub fn load(env: Env) -> Result<BrokerConfig, BrokerError> {
    load_from(&candidate_paths(env), env)
}

/// [`load`] with the search list given: the first existing file of `tried` is read. A missing
/// file is skipped unless `BROKER_CONFIG_FILE` is set (then it names the only candidate).
pub fn load_from(tried: &[PathBuf], env: Env) -> Result<BrokerConfig, BrokerError> {
    let explicit = env("BROKER_CONFIG_FILE").is_some_and(|p| !p.is_empty());
    for path in tried {
        // As the config file: at most its size, and never from a FIFO or device.
        match read_regular(path, MAX_CONFIG_BYTES) {
            Ok(text) => return finish(parse(&path.display().to_string(), &text, env)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => continue,
            Err(source) => {
                return Err(BrokerError::Read {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    if !env_sets_broker_key(env) {
        let tried = tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(BrokerError::NotFound { tried });
    }
    finish(parse("environment", "", env))
}

fn finish(result: Result<BrokerConfig, BrokerError>) -> Result<BrokerConfig, BrokerError> {
    if let Ok(cfg) = &result
        && !cfg.ignored_keys.is_empty()
    {
        tracing::warn!(
            origin = %cfg.origin,
            "broker configuration: ignoring unknown keys: {}",
            cfg.ignored_keys.join("; ")
        );
    }
    if let Ok(cfg) = &result
        && cfg.log_config
    {
        tracing::info!(origin = %cfg.origin, config = %cfg.masked(), "broker configuration");
    }
    result
}

/// Whether the environment overrides any `broker.*` key.
fn env_sets_broker_key(env: Env) -> bool {
    let rabbit = RABBIT_KEYS.iter().map(|k| format!("broker.rabbitmq.{k}"));
    let pubsub = pubsub::KEYS
        .iter()
        .map(|k| format!("broker.googlepubsub.{k}"));
    std::iter::once("broker.type".to_owned())
        .chain(rabbit)
        .chain(pubsub)
        .any(|path| env(&env_name(&path)).is_some_and(|v| !v.is_empty()))
}

/// The environment variable overriding a key path: `broker.rabbitmq.url` → `BROKER_RABBITMQ_URL`.
pub fn env_name(path: &str) -> String {
    path.replace('.', "_").to_uppercase()
}

const TOP_KEYS: &[&str] = &["broker", "subscriber", "log_config"];
const BROKER_KEYS: &[&str] = &["type", "rabbitmq", "googlepubsub"];
const RABBIT_KEYS: &[&str] = &[
    "url",
    "exchange",
    "exchange_type",
    "queue",
    "routing_key",
    "prefetch_count",
    "prefetch_size",
    "consumer_tag",
    "publisher_confirm",
];
const SUBSCRIBER_KEYS: &[&str] = &["parallelism"];

/// Parses and validates broker.yaml text (empty text: an empty file) with environment
/// overrides; `origin` names the source in errors.
pub fn parse(origin: &str, text: &str, env: Env) -> Result<BrokerConfig, BrokerError> {
    let mut r = Reader {
        env,
        problems: Vec::new(),
        ignored: Vec::new(),
        more_ignored: 0,
    };
    // The config file's bounds, checked before the YAML parser runs (its flow handling is
    // quadratic in the depth).
    let root: Value = if text.len() > MAX_CONFIG_BYTES {
        r.problems.push(format!(
            "file is {} bytes, larger than the limit of {MAX_CONFIG_BYTES} bytes",
            text.len()
        ));
        Value::Null
    } else if let Some(at) = depth::too_deep(text, MAX_YAML_DEPTH) {
        r.problems.push(format!(
            "line {} column {}: flow collections (`[`, `{{`) nested more than {MAX_YAML_DEPTH} deep, the limit",
            at.line, at.column
        ));
        Value::Null
    } else {
        match yaml_serde::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                r.problems.push(format!("not valid YAML: {e}"));
                Value::Null
            }
        }
    };
    let top = r.section(Some(&root), "", TOP_KEYS);
    let broker = r.section(top.and_then(|m| m.get("broker")), "broker", BROKER_KEYS);
    let kind = r.kind(broker);
    let cfg = BrokerConfig {
        origin: origin.to_owned(),
        log_config: r.boolean(top, "", "log_config").unwrap_or(false),
        // A placeholder when the type is missing or invalid: that is reported as a problem.
        kind: kind.unwrap_or(BrokerKind::Stdout),
        rabbitmq: r.rabbit(broker.and_then(|m| m.get("rabbitmq"))),
        googlepubsub: pubsub::read(&mut r, broker.and_then(|m| m.get("googlepubsub"))),
        subscriber: r.subscriber(top.and_then(|m| m.get("subscriber"))),
        ignored_keys: std::mem::take(&mut r.ignored),
    };
    let mut cfg = cfg;
    if r.more_ignored > 0 {
        cfg.ignored_keys
            .push(format!("and {} more unknown keys", r.more_ignored));
    }
    match kind {
        Some(BrokerKind::RabbitMq) => validate_rabbit(&mut r.problems, &cfg.rabbitmq),
        Some(BrokerKind::GooglePubSub) => pubsub::validate(&mut r.problems, &cfg.googlepubsub),
        Some(BrokerKind::Stdout) | None => {}
    }
    if r.problems.len() > MAX_REPORTED_PROBLEMS {
        let more = r.problems.len() - MAX_REPORTED_PROBLEMS;
        r.problems.truncate(MAX_REPORTED_PROBLEMS);
        r.problems.push(format!("and {more} more problems"));
    }
    if r.problems.is_empty() {
        Ok(cfg)
    } else {
        Err(BrokerError::Invalid {
            origin: origin.to_owned(),
            problems: r.problems,
        })
    }
}

fn validate_rabbit(problems: &mut Vec<String>, rabbit: &RabbitConfig) {
    if rabbit.url.is_empty() {
        problems.push(format!(
            "broker.rabbitmq.url is required when broker.type is rabbitmq (or set {})",
            env_name("broker.rabbitmq.url")
        ));
    } else if let Err(e) = parse_url(&rabbit.url) {
        problems.push(format!(
            "broker.rabbitmq.url {}: {e}",
            mask_url(&rabbit.url)
        ));
    }
    for (key, value) in [
        ("prefetch_count", rabbit.prefetch_count),
        ("prefetch_size", rabbit.prefetch_size),
    ] {
        if value < 0 {
            problems.push(format!(
                "broker.rabbitmq.{key} must be non-negative, got {value}"
            ));
        }
    }
    for (key, value) in [
        ("exchange", &rabbit.exchange),
        ("routing_key", &rabbit.routing_key),
    ] {
        if value.len() > 255 {
            problems.push(format!("broker.rabbitmq.{key} is longer than 255 bytes"));
        }
    }
}

/// Reads typed values out of the YAML tree with environment overrides, collecting problems.
struct Reader<'a> {
    env: Env<'a>,
    problems: Vec<String>,
    /// Unknown keys, ignored as the Go library ignores them (the first
    /// [`MAX_REPORTED_PROBLEMS`]).
    ignored: Vec<String>,
    /// How many unknown keys there are past those.
    more_ignored: usize,
}

impl<'a> Reader<'a> {
    /// The mapping at `value` (None for absent or null), noting unknown keys and reporting
    /// non-mappings.
    fn section<'v>(
        &mut self,
        value: Option<&'v Value>,
        path: &str,
        keys: &[&'static str],
    ) -> Option<&'v Mapping> {
        let what = if path.is_empty() {
            "the document"
        } else {
            path
        };
        let map = match yaml::section(value) {
            Ok(map) => map?,
            Err(_) => {
                self.problems.push(format!("{what} must be a mapping"));
                return None;
            }
        };
        for field in fields(map, path, keys) {
            // viper reads string keys only; a number or boolean key is a mistake worth an error.
            if !field.key.is_string() {
                let key = yaml_text(field.key);
                self.problems
                    .push(format!("{what}: keys must be strings, got {key}"));
                continue;
            }
            if field.known.is_none() {
                if self.ignored.len() >= MAX_REPORTED_PROBLEMS {
                    self.more_ignored += 1;
                    continue;
                }
                let mut msg = format!("{}: unknown key", field.path);
                if let Some(near) = suggestion(&field.name, keys) {
                    msg.push_str(&format!(" (did you mean '{near}'?)"));
                }
                self.ignored.push(msg);
            }
        }
        Some(map)
    }

    /// The raw text for `section.key`: the environment override if set, else the YAML scalar.
    /// Returns the text and where it came from (for messages).
    fn raw(&mut self, map: Option<&Mapping>, section: &str, key: &str) -> Option<(String, String)> {
        let path = join(section, key);
        let var = env_name(&path);
        if let Some(v) = (self.env)(&var).filter(|v| !v.is_empty()) {
            return Some((v, var));
        }
        match yaml::setting(map?.get(key)) {
            Setting::Absent => None,
            Setting::Text(text) => Some((text, path)),
            Setting::Compound(_) => {
                self.problems
                    .push(format!("{path} must be a scalar, not a list or mapping"));
                None
            }
        }
    }

    fn string(&mut self, map: Option<&Mapping>, section: &str, key: &str) -> String {
        self.raw(map, section, key)
            .map(|(v, _)| v)
            .unwrap_or_default()
    }

    /// A boolean setting; `None` when it is absent (or invalid, which is reported).
    fn boolean(&mut self, map: Option<&Mapping>, section: &str, key: &str) -> Option<bool> {
        let (text, from) = self.raw(map, section, key)?;
        // Go's strconv.ParseBool, which viper uses for weakly typed input (untrimmed, as in Go).
        let parsed = parse_go_bool(&text);
        if parsed.is_none() {
            self.problems.push(format!(
                "{from} must be a boolean (true or false), got '{text}'"
            ));
        }
        parsed
    }

    fn int(&mut self, map: Option<&Mapping>, section: &str, key: &str) -> Option<i64> {
        let (text, from) = self.raw(map, section, key)?;
        let parsed = parse_int(&text);
        if parsed.is_none() {
            self.problems
                .push(format!("{from} must be an integer, got '{text}'"));
        }
        parsed
    }

    fn kind(&mut self, broker: Option<&Mapping>) -> Option<BrokerKind> {
        let Some((text, from)) = self.raw(broker, "broker", "type") else {
            self.problems.push(format!(
                "broker.type is required: rabbitmq, googlepubsub or stdout (or set {})",
                env_name("broker.type")
            ));
            return None;
        };
        match text.as_str() {
            "rabbitmq" => Some(BrokerKind::RabbitMq),
            "googlepubsub" => Some(BrokerKind::GooglePubSub),
            "stdout" => Some(BrokerKind::Stdout),
            other => {
                let mut msg = format!(
                    "{from}: unsupported broker type '{other}', expected rabbitmq, googlepubsub or stdout"
                );
                if let Some(near) = suggestion(other, &["rabbitmq", "googlepubsub", "stdout"]) {
                    msg.push_str(&format!(" (did you mean '{near}'?)"));
                }
                self.problems.push(msg);
                None
            }
        }
    }

    fn rabbit(&mut self, value: Option<&Value>) -> RabbitConfig {
        const S: &str = "broker.rabbitmq";
        let m = self.section(value, S, RABBIT_KEYS);
        RabbitConfig {
            url: self.string(m, S, "url"),
            exchange: self.string(m, S, "exchange"),
            exchange_type: self.exchange_type(m),
            routing_key: self.string(m, S, "routing_key"),
            publisher_confirm: self.boolean(m, S, "publisher_confirm").unwrap_or(true),
            queue: self.string(m, S, "queue"),
            prefetch_count: self.int(m, S, "prefetch_count").unwrap_or(0),
            prefetch_size: self.int(m, S, "prefetch_size").unwrap_or(0),
            consumer_tag: self.string(m, S, "consumer_tag"),
        }
    }

    fn exchange_type(&mut self, m: Option<&Mapping>) -> ExchangeType {
        let Some((text, from)) = self.raw(m, "broker.rabbitmq", "exchange_type") else {
            return ExchangeType::default();
        };
        match text.as_str() {
            "" | "fanout" => ExchangeType::Fanout,
            "direct" => ExchangeType::Direct,
            "topic" => ExchangeType::Topic,
            "headers" => ExchangeType::Headers,
            other => {
                self.problems.push(format!(
                    "{from} must be one of: direct, fanout, topic, headers; got '{other}'"
                ));
                ExchangeType::default()
            }
        }
    }

    fn subscriber(&mut self, value: Option<&Value>) -> SubscriberConfig {
        let m = self.section(value, "subscriber", SUBSCRIBER_KEYS);
        let parallelism = self.int(m, "subscriber", "parallelism").unwrap_or(10);
        if parallelism < 0 {
            self.problems.push(format!(
                "subscriber.parallelism must be non-negative, got {parallelism}"
            ));
        }
        SubscriberConfig { parallelism }
    }
}

/// A YAML key rendered for an error message.
fn yaml_text(value: &Value) -> String {
    yaml_serde::to_string(value)
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "?".to_owned())
}
