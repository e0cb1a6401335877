//! The OTLP exporter's own `OTEL_EXPORTER_OTLP_*` variables: endpoint, headers, timeout,
//! insecure; see [`super`] for how they are read.
//!
//! Takes the environment lookup; gives [`OtlpConfig`] or a [`ConfigError`] naming the variable.

use super::{Protocol, source_chain};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::str::FromStr as _;
use std::time::Duration;

/// The `User-Agent` `opentelemetry-otlp` 0.33.1 sends (and collectors may have been told of).
const USER_AGENT: &str = "OTel-OTLP-Exporter-Rust/0.33.1";
/// The timeout when the environment gives none.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(10_000);
const DEFAULT_HTTP_ENDPOINT: &str = "http://localhost:4318";
const DEFAULT_GRPC_ENDPOINT: &str = "http://localhost:4317";
const TRACES_PATH: &str = "/v1/traces";

/// Where and how requests go, as read from the environment.
#[derive(Clone, Debug)]
pub struct OtlpConfig {
    pub(super) protocol: Protocol,
    /// The traces URL (HTTP) or the gRPC endpoint.
    pub(super) endpoint: String,
    /// Sent with every request (the default `User-Agent` first, then the environment's).
    pub(super) headers: HeaderMap,
    pub(super) timeout: Duration,
}

/// The exporter could not be configured (the message names the variable).
#[derive(Debug, thiserror::Error)]
#[error("invalid exporter configuration: {0}")]
pub struct ConfigError(String);

/// The environment as `std::env::var` reads it.
pub type Env<'a> = &'a dyn Fn(&str) -> Result<String, std::env::VarError>;

/// A variable that must be Unicode: unset or empty is `None`.
fn read(env: Env<'_>, name: &str) -> Result<Option<String>, ConfigError> {
    match env(name) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(ConfigError(format!(
            "{name}: environment variable value is not valid Unicode"
        ))),
    }
}

impl OtlpConfig {
    /// Reads the traces exporter's variables through `env`; see the module docs.
    pub fn from_env(protocol: Protocol, env: Env<'_>) -> Result<OtlpConfig, ConfigError> {
        let endpoint = match protocol {
            Protocol::HttpProtobuf => http_endpoint(env)?,
            Protocol::Grpc => grpc_endpoint(env)?,
        };
        let timeout = [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]
        .into_iter()
        .find_map(|name| env(name).ok().and_then(|v| v.parse::<u64>().ok()))
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(USER_AGENT),
        );
        // A set traces variable wins even when empty, as the crate reads it.
        if let Ok(text) =
            env("OTEL_EXPORTER_OTLP_TRACES_HEADERS").or_else(|_| env("OTEL_EXPORTER_OTLP_HEADERS"))
        {
            for (key, value) in parse_headers(&text) {
                if let (Ok(k), Ok(v)) = (HeaderName::from_str(key), HeaderValue::from_str(&value)) {
                    headers.insert(k, v);
                }
            }
        }
        Ok(OtlpConfig {
            protocol,
            endpoint,
            headers,
            timeout,
        })
    }
}

/// `…_TRACES_ENDPOINT` as given, else `…_ENDPOINT` with `/v1/traces` (one slash between).
fn http_endpoint(env: Env<'_>) -> Result<String, ConfigError> {
    let (name, given, url) = if let Some(url) = read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")? {
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url.clone(), url)
    } else {
        let base = read(env, "OTEL_EXPORTER_OTLP_ENDPOINT")?
            .unwrap_or_else(|| DEFAULT_HTTP_ENDPOINT.to_string());
        let path = if base.ends_with('/') {
            &TRACES_PATH[1..]
        } else {
            TRACES_PATH
        };
        let url = format!("{base}{path}");
        ("OTEL_EXPORTER_OTLP_ENDPOINT", base, url)
    };
    match url.parse::<http::Uri>() {
        Ok(_) => Ok(url),
        Err(e) => Err(ConfigError(format!(
            "{name}: invalid endpoint '{given}': {e}"
        ))),
    }
}

/// `…_TRACES_ENDPOINT`, else `…_ENDPOINT`, with `http://` (insecure) or `https://` put in
/// front of one without a scheme; `https` is refused (no TLS, as the crate was built).
fn grpc_endpoint(env: Env<'_>) -> Result<String, ConfigError> {
    let (name, endpoint) = match read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")? {
        Some(e) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", e),
        None => match read(env, "OTEL_EXPORTER_OTLP_ENDPOINT")? {
            Some(e) => ("OTEL_EXPORTER_OTLP_ENDPOINT", e),
            None => ("endpoint", DEFAULT_GRPC_ENDPOINT.to_string()),
        },
    };
    let has_scheme = endpoint
        .split_once("://")
        .is_some_and(|(scheme, _)| !scheme.contains(['/', '?', '#']));
    let insecure = env("OTEL_EXPORTER_OTLP_TRACES_INSECURE")
        .or_else(|_| env("OTEL_EXPORTER_OTLP_INSECURE"))
        .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let endpoint = match (has_scheme, insecure) {
        (true, _) => endpoint,
        (false, true) => format!("http://{endpoint}"),
        (false, false) => format!("https://{endpoint}"),
    };
    let parsed = tonic::transport::Endpoint::from_shared(endpoint.clone()).map_err(|e| {
        ConfigError(format!(
            "{name}: invalid endpoint '{endpoint}': {}",
            source_chain(&e)
        ))
    })?;
    if parsed.uri().scheme() == Some(&http::uri::Scheme::HTTPS) {
        return Err(ConfigError(format!(
            "{name}: endpoint '{endpoint}' uses HTTPS but no TLS feature is enabled; enable one \
             of the `tls-ring`, `tls-aws-lc`, or `tls-provider-agnostic` features on \
             `opentelemetry-otlp`"
        )));
    }
    Ok(endpoint)
}

/// `key=value` pairs separated by commas, values percent-decoded (kept as written when the
/// decoding fails); pairs with an empty key or value are left out.
fn parse_headers(text: &str) -> impl Iterator<Item = (&str, String)> {
    text.split_terminator(',')
        .map(str::trim)
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let (key, value) = (key.trim(), value.trim());
            let value = url_decode(value).unwrap_or_else(|| value.to_string());
            (!key.is_empty() && !value.is_empty()).then_some((key, value))
        })
}

/// `%XX` escapes decoded; `None` when an escape is cut short or not hex, or the bytes are not
/// UTF-8 (where the crate's decoder answers `None`, the value is kept as written).
fn url_decode(value: &str) -> Option<String> {
    let escapes_whole = value.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_whole {
        return None;
    }
    percent_encoding::percent_decode_str(value)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Result<String, std::env::VarError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned().ok_or(std::env::VarError::NotPresent)
    }

    fn config(protocol: Protocol, vars: &[(&str, &str)]) -> Result<OtlpConfig, ConfigError> {
        OtlpConfig::from_env(protocol, &env(vars))
    }

    #[test]
    fn endpoints_as_the_crate_resolves_them() {
        use Protocol::*;
        type Vars<'a> = &'a [(&'a str, &'a str)];
        let cases: [(Protocol, Vars<'_>, &str); 8] = [
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c/otlp")],
                "http://c/otlp/v1/traces",
            ),
            (
                HttpProtobuf,
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"),
                ],
                "http://t:1/x",
            ),
            (
                HttpProtobuf,
                &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")],
                "http://localhost:4318/v1/traces",
            ),
            (
                Grpc,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")],
                "http://c:4317",
            ),
            (
                Grpc,
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4317"),
                    ("OTEL_EXPORTER_OTLP_INSECURE", "TRUE"),
                ],
                "http://c:4317",
            ),
            (
                Grpc,
                &[
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9"),
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ],
                "http://t:9",
            ),
        ];
        for (protocol, vars, want) in cases {
            let c = config(protocol, vars).expect("valid");
            assert_eq!(c.endpoint, want, "{vars:?}");
        }
        // No scheme and not insecure: https, which has no TLS here.
        let e = config(Grpc, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4317")]).expect_err("https");
        assert!(e.to_string().contains("uses HTTPS"), "{e}");
        let e = config(
            HttpProtobuf,
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a b")],
        )
        .expect_err("bad URL");
        assert!(e.to_string().starts_with("invalid exporter configuration: OTEL_EXPORTER_OTLP_ENDPOINT: invalid endpoint 'http://a b'"), "{e}");
    }

    #[test]
    fn headers_and_timeout() {
        let c = config(
            Protocol::HttpProtobuf,
            &[
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "a=1, api-key = s%20e%2Ccret ,bad, =x,empty=,pct=%zz",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ],
        )
        .expect("valid");
        let pairs: Vec<(String, String)> = c
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("user-agent".to_string(), USER_AGENT.to_string()),
                ("a".to_string(), "1".to_string()),
                ("api-key".to_string(), "s e,cret".to_string()),
                ("pct".to_string(), "%zz".to_string()),
            ]
        );
        assert_eq!(c.timeout, Duration::from_millis(2500));
        // The traces variables win, an empty traces header list included.
        let c = config(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", ""),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "x"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "300"),
            ],
        )
        .expect("valid");
        assert_eq!(c.headers.len(), 1);
        assert_eq!(c.timeout, Duration::from_millis(300));
        let c = config(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
            ],
        )
        .expect("valid");
        assert_eq!(c.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn header_values_decode_as_the_crate_decodes_them() {
        for (value, want) in [
            ("a%20b", Some("a b")),
            ("%e2%9c%93", Some("✓")),
            ("100%", None),
            ("%4", None),
            ("%zz", None),
            ("%ff", None),
            ("plain", Some("plain")),
        ] {
            assert_eq!(url_decode(value).as_deref(), want, "{value}");
        }
    }

    proptest::proptest! {
        /// Whatever the variables say, reading them answers (an error at worst).
        #[test]
        fn any_environment_reads(
            endpoint in ".{0,40}",
            headers in ".{0,60}",
            timeout in ".{0,12}",
            insecure in proptest::bool::ANY,
        ) {
            for protocol in [Protocol::HttpProtobuf, Protocol::Grpc] {
                let insecure = if insecure { "true" } else { "false" };
                let _ = config(protocol, &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
                    ("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str()),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", timeout.as_str()),
                    ("OTEL_EXPORTER_OTLP_INSECURE", insecure),
                ]);
            }
        }
    }
}
