//! From [`Raw`] to [`Config`]: defaults filled in, required settings present, values in range.
//!
//! Invariant: a problem about a setting set by a flag or env var names that flag or env var, and
//! a setting that already has a type problem is not reported again as missing.

use super::keys::{Key, Scalar};
use super::schema::Raw;
use super::{
    ApiConfig, AuthConfig, BrokerClient, Clients, Config, LogConfig, LogFormat, LogLevel,
    LogOutput, Problem, SentinelConfig, already_reported,
};
use crate::common::go::signed_go_duration;
use std::path::PathBuf;
use std::time::Duration;

const DEFAULT_NAME: &str = "hyperfleet-sentinel";
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(5);
const DEFAULT_VERSION: &str = "v1";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_PAGE_SIZE: i64 = 20;
const MAX_PAGE_SIZE: i64 = 500;
/// The largest `size` the HyperFleet API serves (its list handler validates `max=100`); a
/// larger `page_size` is accepted, as by the Go sentinel, with a warning.
pub const API_MAX_PAGE_SIZE: u32 = 100;

/// Builds the configuration, adding what is wrong to `problems`. The result is meaningful only
/// when `problems` is empty.
pub(super) fn build(raw: &Raw, problems: &mut Vec<Problem>) -> Option<Config> {
    let mut c = Checker { raw, problems };
    let sentinel = SentinelConfig { name: c.name() };
    let resource_type = c.resource_type();
    let poll_interval = c.positive(Key::PollInterval, DEFAULT_POLL_INTERVAL);
    let hyperfleet_api = c.api();
    let mut warnings = raw.warnings.clone();
    warnings.extend(page_size_warning(
        hyperfleet_api.page_size,
        raw.source(Key::PageSize),
    ));
    let topic = c.text(Key::Topic).unwrap_or_default();
    let log = c.log();
    let message_data = c.message_data();
    check_label_keys(&raw.resource_selector, c.problems);
    Some(Config {
        sentinel,
        resource_type,
        poll_interval,
        resource_selector: raw.resource_selector.clone(),
        clients: Clients {
            hyperfleet_api,
            broker: BrokerClient { topic },
        },
        log,
        message_data: message_data?,
        message_decision: raw.message_decision.clone(),
        debug_config: c.flag(Key::DebugConfig).unwrap_or(false),
        tracing_enabled: c.flag(Key::TracingEnabled).unwrap_or(true),
        server_filters: c.server_filters(),
        full_sweep_interval: c
            .nanos(Key::FullSweepInterval)
            .map(|_| c.positive(Key::FullSweepInterval, Duration::ZERO)),
        server_projection: c.flag(Key::ServerProjection).unwrap_or(false),
        warnings,
    })
}

/// A warning for a `page_size` the API refuses: every list request would be a 400.
fn page_size_warning(page_size: u32, source: Option<&str>) -> Option<String> {
    (page_size > API_MAX_PAGE_SIZE).then(|| {
        let from = source.map(|s| format!(" (from {s})")).unwrap_or_default();
        format!(
            "clients.hyperfleet_api.page_size: {page_size}{from} is above {API_MAX_PAGE_SIZE}, \
             the most the HyperFleet API serves per page: it answers every list request with \
             400 (accepted, as by the Go sentinel)"
        )
    })
}

/// Reports selector label keys with characters outside `[A-Za-z0-9._/-]`: the API's search
/// language would read them as syntax (a key holding ` or ` turns the search's AND into an OR).
/// Values are quoted and escaped, so any value is fine; an empty key is reported elsewhere.
fn check_label_keys(selectors: &[super::LabelSelector], problems: &mut Vec<Problem>) {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-');
    for (i, selector) in selectors.iter().enumerate() {
        if !selector.label.is_empty() && !selector.label.chars().all(allowed) {
            problems.push(Problem {
                path: format!("resource_selector[{i}].label"),
                message: format!(
                    "label key {:?} may contain only letters, digits, `.`, `_`, `/` and `-`",
                    selector.label
                ),
                source: None,
            });
        }
    }
}

/// Whether `text` is one URL path segment of RFC 3986 unreserved characters.
fn is_path_segment(text: &str) -> bool {
    let unreserved = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
    !text.is_empty() && text != "." && text != ".." && text.chars().all(unreserved)
}

/// Checks a base URL and returns it without surrounding spaces and trailing slashes.
fn check_base_url(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    // Messages echo the URL with any password masked.
    let text = &crate::common::redact::mask_url(text);
    if trimmed.is_empty() {
        return Err("must not be empty".to_string());
    }
    let url =
        reqwest::Url::parse(trimmed).map_err(|e| format!("not a valid URL ({e}): {text:?}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("must be an http or https URL, got {text:?}"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("must name a host, got {text:?}"));
    }
    if url.query().is_some() {
        return Err(format!("must not have a query, got {text:?}"));
    }
    if url.fragment().is_some() {
        return Err(format!("must not have a fragment, got {text:?}"));
    }
    Ok(trimmed.trim_end_matches('/').to_string())
}

/// A non-negative nanosecond count as a [`Duration`].
fn to_duration(nanos: i128) -> Duration {
    const NANOS_PER_SEC: i128 = 1_000_000_000;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Duration::new(secs, sub)
}

struct Checker<'a> {
    raw: &'a Raw,
    problems: &'a mut Vec<Problem>,
}

impl Checker<'_> {
    fn report(&mut self, key: Key, message: impl Into<String>) {
        let source = self.raw.source(key).map(str::to_string);
        self.problems.push(Problem {
            path: key.path().to_string(),
            message: message.into(),
            source,
        });
    }

    /// Reports a missing required setting, saying where it can be set.
    fn required(&mut self, key: Key) {
        if already_reported(self.problems, key.path()) {
            return;
        }
        let spec = key.spec();
        let how = match spec.flag {
            Some(flag) => format!("set it in the file, with {flag} or with {}", spec.env),
            None => format!("set it in the file or with {}", spec.env),
        };
        // The Go sentinel's wording for the one required key it names ("token_path is
        // required"), so operators searching for it find it.
        let what = match key {
            Key::TokenPath => "token_path is required",
            _ => "required",
        };
        self.report(key, format!("{what}; {how}"));
    }

    fn text(&self, key: Key) -> Option<String> {
        match self.raw.scalar(key) {
            Some(Scalar::Text(text)) => Some(text.clone()),
            _ => None,
        }
    }

    fn flag(&self, key: Key) -> Option<bool> {
        match self.raw.scalar(key) {
            Some(Scalar::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    fn nanos(&self, key: Key) -> Option<i128> {
        match self.raw.scalar(key) {
            Some(Scalar::Nanos(n)) => Some(*n),
            _ => None,
        }
    }

    fn name(&mut self) -> String {
        let name = self
            .text(Key::Name)
            .unwrap_or_else(|| DEFAULT_NAME.to_string());
        if name.trim().is_empty() {
            self.report(Key::Name, "must not be empty");
        }
        name
    }

    /// A required path segment (`resource_type`), or an optional one with a default.
    fn segment(&mut self, key: Key, default: Option<&str>) -> String {
        let Some(text) = self.text(key).or_else(|| default.map(str::to_string)) else {
            self.required(key);
            return String::new();
        };
        if text.is_empty() {
            self.report(key, "must not be empty");
        } else if !is_path_segment(&text) {
            let message = format!(
                "must be one URL path segment of letters, digits, `-`, `.`, `_` or `~`, got {text:?}"
            );
            self.report(key, message);
        }
        text
    }

    fn resource_type(&mut self) -> String {
        self.segment(Key::ResourceType, None)
    }

    fn positive(&mut self, key: Key, default: Duration) -> Duration {
        match self.nanos(key) {
            None => default,
            Some(n) if n <= 0 => {
                self.report(
                    key,
                    format!("must be positive, got {}", signed_go_duration(n)),
                );
                default
            }
            Some(n) => to_duration(n),
        }
    }

    /// `server_filters`: `off`, `auto`, a search the API would accept, or a list of them (blank
    /// ones dropped, as Go drops an empty filter).
    fn server_filters(&mut self) -> super::ServerFilters {
        use super::ServerFilters;
        if let Some(Scalar::Texts(list)) = self.raw.scalar(Key::ServerFilters) {
            let mut searches = Vec::new();
            for (i, text) in list.iter().enumerate() {
                let search = text.trim();
                if search.is_empty() {
                    continue;
                }
                let why = match search {
                    "off" | "auto" => "off and auto are settings of their own, not searches".into(),
                    _ => match crate::tsl::parse(search) {
                        Ok(_) => {
                            searches.push(search.to_string());
                            continue;
                        }
                        Err(e) => format!("is not a search the API accepts: {e}"),
                    },
                };
                let source = self.raw.source(Key::ServerFilters).map(str::to_string);
                self.problems.push(Problem {
                    path: format!("{}[{i}]", Key::ServerFilters.path()),
                    message: why,
                    source,
                });
            }
            return match searches.is_empty() {
                true => ServerFilters::Off,
                false => ServerFilters::Searches(searches),
            };
        }
        let Some(text) = self.text(Key::ServerFilters) else {
            return ServerFilters::Off;
        };
        match text.trim() {
            "" | "off" => ServerFilters::Off,
            "auto" => ServerFilters::Auto,
            search => match crate::tsl::parse(search) {
                Ok(_) => ServerFilters::Search(search.to_string()),
                Err(e) => {
                    self.report(
                        Key::ServerFilters,
                        format!("is neither off, auto nor a search the API accepts: {e}"),
                    );
                    ServerFilters::Off
                }
            },
        }
    }

    fn api(&mut self) -> ApiConfig {
        let base_url = match self.text(Key::BaseUrl) {
            None => {
                self.required(Key::BaseUrl);
                String::new()
            }
            Some(text) => check_base_url(&text).unwrap_or_else(|message| {
                self.report(Key::BaseUrl, message);
                String::new()
            }),
        };
        let version = self.segment(Key::ApiVersion, Some(DEFAULT_VERSION));
        let timeout = self.positive(Key::Timeout, DEFAULT_TIMEOUT);
        ApiConfig {
            base_url,
            version,
            timeout,
            page_size: self.page_size(),
            auth: self.auth(),
        }
    }

    fn page_size(&mut self) -> u32 {
        let size = match self.raw.scalar(Key::PageSize) {
            Some(Scalar::Int(n)) => *n,
            _ => DEFAULT_PAGE_SIZE,
        };
        if !(1..=MAX_PAGE_SIZE).contains(&size) {
            self.report(
                Key::PageSize,
                format!("must be between 1 and {MAX_PAGE_SIZE}, got {size}"),
            );
        }
        u32::try_from(size).unwrap_or(0)
    }

    fn auth(&mut self) -> Option<AuthConfig> {
        if !self.raw.auth_present {
            return None;
        }
        let token_path = match self.text(Key::TokenPath) {
            None => {
                self.required(Key::TokenPath);
                PathBuf::new()
            }
            Some(path) if path.trim().is_empty() => {
                self.report(Key::TokenPath, "token_path is required; must not be empty");
                PathBuf::new()
            }
            Some(path) => {
                if !std::path::Path::new(&path).is_absolute() {
                    self.report(
                        Key::TokenPath,
                        format!("token_path must be an absolute path, got {path:?}"),
                    );
                }
                PathBuf::from(path)
            }
        };
        let ttl = self.nanos(Key::TokenCacheTtl).unwrap_or(0);
        if ttl < 0 {
            let message = format!(
                "token_cache_ttl must not be negative, got {}",
                signed_go_duration(ttl)
            );
            self.report(Key::TokenCacheTtl, message);
        }
        Some(AuthConfig {
            token_path,
            token_cache_ttl: to_duration(ttl.max(0)),
        })
    }

    fn log(&mut self) -> LogConfig {
        let level = self.choice(
            Key::LogLevel,
            LogLevel::Info,
            ("log level", "debug, info, warn, error"),
            |s| match s {
                "debug" => Some(LogLevel::Debug),
                "info" => Some(LogLevel::Info),
                "warn" | "warning" => Some(LogLevel::Warn),
                "error" => Some(LogLevel::Error),
                _ => None,
            },
        );
        let format = self.choice(
            Key::LogFormat,
            LogFormat::Json,
            ("log format", "json, text"),
            |s| match s {
                "json" => Some(LogFormat::Json),
                "text" => Some(LogFormat::Text),
                _ => None,
            },
        );
        let output = self.choice(
            Key::LogOutput,
            LogOutput::Stdout,
            ("log output", "stdout, stderr"),
            |s| match s {
                "stdout" => Some(LogOutput::Stdout),
                "stderr" => Some(LogOutput::Stderr),
                _ => None,
            },
        );
        LogConfig {
            level,
            format,
            output,
        }
    }

    /// One of a few words, matched case-insensitively without surrounding spaces; empty means
    /// the default. `(what, words)` name the setting as Go's logger does (`unknown log output`)
    /// and list the words.
    fn choice<T: Copy>(
        &mut self,
        key: Key,
        default: T,
        (what, words): (&str, &str),
        pick: impl Fn(&str) -> Option<T>,
    ) -> T {
        let Some(text) = self.text(key) else {
            return default;
        };
        let word = text.trim().to_ascii_lowercase();
        if word.is_empty() {
            return default;
        }
        pick(&word).unwrap_or_else(|| {
            self.report(
                key,
                format!("unknown {what} {text:?}; must be one of {words}"),
            );
            default
        })
    }

    fn message_data(&mut self) -> Option<crate::rules::message_data::MessageData> {
        if self.raw.message_data.is_none() && !already_reported(self.problems, "message_data") {
            self.problems.push(Problem {
                path: "message_data".to_string(),
                message: "required; a mapping of CloudEvent data keys to CEL expressions"
                    .to_string(),
                source: None,
            });
        }
        self.raw.message_data.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments() {
        assert!(is_path_segment("clusters"));
        assert!(is_path_segment("node-pools_v1.2~x"));
        for bad in ["", ".", "..", "a/b", "a b", "a?b", "%2F", "é"] {
            assert!(!is_path_segment(bad), "{bad:?}");
        }
    }

    #[test]
    fn base_urls() {
        assert_eq!(
            check_base_url("http://api:8000/").as_deref(),
            Ok("http://api:8000")
        );
        assert_eq!(
            check_base_url(" https://h/prefix// ").as_deref(),
            Ok("https://h/prefix")
        );
        for bad in [
            "",
            "api:8000",
            "ftp://h",
            "http://h/?a=1",
            "http://h#x",
            "/relative",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad:?}");
        }
    }
}
