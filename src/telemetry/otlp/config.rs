//! The OTLP exporter's own `OTEL_EXPORTER_OTLP_*` variables, read as the OTel Go SDK's
//! `otlptracegrpc` and `otlptracehttp` exporters (v1.44, the Go sentinel's) read them
//! (`internal/otlpconfig/envconfig.go`): a value is trimmed and an empty one is unset; each
//! general variable is read first and its `…_TRACES_…` variant, when set and valid, wins.
//!
//! - Endpoint (`…_ENDPOINT`, `…_TRACES_ENDPOINT`): a URL whose scheme says insecure (`http`,
//!   `unix`) or secure (anything else), whose host and port are where requests go, and whose
//!   path is, for HTTP, `…_ENDPOINT`'s with `/v1/traces` joined to it or `…_TRACES_ENDPOINT`'s
//!   as it is (`/` when empty); its user info and query are dropped, as Go drops them. A value
//!   without `://` is taken as `host:port` (the Go SDK reads it as a URL whose scheme is the
//!   host, and cannot use it). An endpoint that does not parse is an error (Go logs it and
//!   sends to `localhost`).
//! - Insecure (`…_INSECURE`, read after the endpoint): `true` (any case) is insecure, any other
//!   value secure. Insecure HTTP is `http://`, secure `https://`; insecure gRPC is plaintext,
//!   secure is TLS.
//! - TLS (`…_CERTIFICATE`, `…_CLIENT_CERTIFICATE` with `…_CLIENT_KEY`): PEM files, loaded by
//!   `super::tls`. For gRPC, a certificate that loads means TLS whatever insecure says; an
//!   insecure HTTP endpoint with one is an error.
//! - Headers (`…_HEADERS`): `key=value` pairs split at commas; a pair without `=`, with a key
//!   that is not a header token or with a bad `%` escape in its value is left out; the value is
//!   percent-decoded (`+` kept) and trimmed. The traces variable replaces the whole list.
//! - Compression (`…_COMPRESSION`): `gzip` (exactly) compresses requests, any other value not.
//! - Timeout (`…_TIMEOUT`, milliseconds, default 10 s): an integer; not one is a warning and
//!   ignored; zero or less is none in Go, here [`UNBOUNDED_TIMEOUT`] (the Go batch processor's
//!   export timeout, which bounds Go's exports then).
//!
//! Takes the environment lookup; gives [`OtlpConfig`], warnings for ignored values, or a
//! [`ConfigError`] naming the variable.

use super::Protocol;
use crate::telemetry::env::Env;
use http::{HeaderMap, HeaderName, HeaderValue};
use std::str::FromStr as _;
use std::time::Duration;

/// The `User-Agent` `opentelemetry-otlp` 0.33.1 sends (and collectors may have been told of).
const USER_AGENT: &str = "OTel-OTLP-Exporter-Rust/0.33.1";
/// The timeout when the environment gives none.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(10_000);
/// The timeout when the environment gives zero or less (Go's `OTEL_BSP_EXPORT_TIMEOUT`).
pub const UNBOUNDED_TIMEOUT: Duration = Duration::from_secs(30);
const TRACES_PATH: &str = "/v1/traces";

/// Where and how requests go, as read from the environment.
#[derive(Clone, Debug, PartialEq)]
pub struct OtlpConfig {
    pub(super) protocol: Protocol,
    /// `host:port` (or `host`) of the collector.
    pub(super) authority: String,
    /// HTTP's request path (gRPC's is the service's).
    pub(super) path: String,
    /// Plaintext (`http://`, gRPC without TLS) unless a gRPC certificate says otherwise.
    pub(super) insecure: bool,
    /// Sent with every request (the default `User-Agent` first, then the environment's).
    pub(super) headers: HeaderMap,
    pub(super) timeout: Duration,
    /// Requests gzipped.
    pub(super) gzip: bool,
    /// CA certificate files in the order read (variable, path): the last that loads is used.
    pub(super) ca_files: Vec<(&'static str, String)>,
    /// Client certificate and key files in the order read: the last pair that loads is used.
    pub(super) client_files: Vec<ClientFiles>,
}

/// A client certificate and key, with the variables that named them.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ClientFiles {
    pub(super) cert_var: &'static str,
    pub(super) cert: String,
    pub(super) key_var: &'static str,
    pub(super) key: String,
}

/// The exporter could not be configured (the message names the variable).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("invalid exporter configuration: {0}")]
pub struct ConfigError(pub(super) String);

/// A general variable and its traces variant, in the order the Go SDK applies them.
fn both(name: &str) -> [(String, bool); 2] {
    [
        (format!("OTEL_EXPORTER_OTLP_{name}"), false),
        (format!("OTEL_EXPORTER_OTLP_TRACES_{name}"), true),
    ]
}

impl OtlpConfig {
    /// Reads the traces exporter's variables through `env`; see the module docs. Values it
    /// ignores are pushed to `warnings`.
    pub fn from_env(
        protocol: Protocol,
        env: Env<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<OtlpConfig, ConfigError> {
        let get = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let default_port = match protocol {
            Protocol::HttpProtobuf => 4318,
            Protocol::Grpc => 4317,
        };
        let mut config = OtlpConfig {
            protocol,
            authority: format!("localhost:{default_port}"),
            path: TRACES_PATH.to_string(),
            insecure: false,
            headers: HeaderMap::new(),
            timeout: DEFAULT_TIMEOUT,
            gzip: false,
            ca_files: Vec::new(),
            client_files: Vec::new(),
        };
        for (name, per_signal) in both("ENDPOINT") {
            if let Some(value) = get(&name) {
                config.set_endpoint(&name, &value, per_signal)?;
            }
        }
        for (name, _) in both("INSECURE") {
            if let Some(value) = get(&name) {
                config.insecure = value.eq_ignore_ascii_case("true");
            }
        }
        config.headers = headers(
            both("HEADERS")
                .iter()
                .filter_map(|(n, _)| get(n))
                .next_back(),
        );
        for (name, _) in both("COMPRESSION") {
            if let Some(value) = get(&name) {
                config.gzip = value == "gzip";
            }
        }
        for (name, _) in both("TIMEOUT") {
            let Some(value) = get(&name) else { continue };
            match value.parse::<i64>() {
                Ok(ms) if ms > 0 => config.timeout = Duration::from_millis(ms as u64),
                Ok(_) => config.timeout = UNBOUNDED_TIMEOUT,
                Err(e) => warnings.push(format!("{name}: parse duration {value:?}: {e}")),
            }
        }
        config.read_tls_files(&get);
        Ok(config)
    }

    /// The endpoint variable `name` set to `value`; see the module docs.
    fn set_endpoint(
        &mut self,
        name: &str,
        value: &str,
        per_signal: bool,
    ) -> Result<(), ConfigError> {
        let invalid = |e: &dyn std::fmt::Display| {
            ConfigError(format!("{name}: invalid endpoint '{value}': {e}"))
        };
        // A value without a scheme is `host:port[/path]`, and says nothing of insecure.
        let with_scheme = value.contains("://");
        let url = match with_scheme {
            true => reqwest::Url::parse(value),
            false => reqwest::Url::parse(&format!("http://{value}")),
        };
        let url = url.map_err(|e| invalid(&e))?;
        let host = url.host_str().filter(|h| !h.is_empty());
        let host = host.ok_or_else(|| invalid(&"no host"))?;
        if with_scheme {
            self.insecure = matches!(url.scheme(), "http" | "unix");
        }
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let path = url.path().to_string();
        if authority.parse::<http::uri::Authority>().is_err() {
            return Err(invalid(&"not a host and port"));
        }
        self.authority = authority;
        self.path = match (per_signal, path.is_empty()) {
            (true, true) => "/".to_string(),
            (true, false) => path,
            (false, _) => join(&path, TRACES_PATH),
        };
        Ok(())
    }

    /// The certificate variables, in the order the Go SDK reads them.
    fn read_tls_files(&mut self, get: &dyn Fn(&str) -> Option<String>) {
        for var in [
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        ] {
            if let Some(path) = get(var) {
                self.ca_files.push((var, path));
            }
        }
        for (cert_var, key_var) in [
            (
                "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
                "OTEL_EXPORTER_OTLP_CLIENT_KEY",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
                "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
            ),
        ] {
            if let (Some(cert), Some(key)) = (get(cert_var), get(key_var)) {
                self.client_files.push(ClientFiles {
                    cert_var,
                    cert,
                    key_var,
                    key,
                });
            }
        }
    }

    /// The URL requests go to: HTTP's traces URL, or gRPC's `scheme://host:port` (`tls` says
    /// which scheme: a gRPC channel with a certificate is TLS whatever insecure says).
    pub fn url(&self, tls: bool) -> String {
        let scheme = if tls { "https" } else { "http" };
        match self.protocol {
            Protocol::HttpProtobuf => format!("{scheme}://{}{}", self.authority, self.path),
            Protocol::Grpc => format!("{scheme}://{}", self.authority),
        }
    }
}

/// `base` and `tail` joined and cleaned as Go's `path.Join` does (no empty or `.` segments,
/// `..` taking one off), always absolute.
fn join(base: &str, tail: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in base.split('/').chain(tail.split('/')) {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    format!("/{}", segments.join("/"))
}

/// The headers of `text` (the last header variable set), after the default `User-Agent`.
fn headers(text: Option<String>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::USER_AGENT,
        HeaderValue::from_static(USER_AGENT),
    );
    for pair in text.as_deref().unwrap_or_default().split(',') {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let (Ok(key), Some(value)) = (HeaderName::from_str(key.trim()), path_unescape(value))
        else {
            continue;
        };
        if let Ok(value) = HeaderValue::from_bytes(value.trim_ascii()) {
            headers.insert(key, value);
        }
    }
    headers
}

/// Go's `url.PathUnescape`: `%XX` escapes decoded, `+` kept; `None` when an escape is cut
/// short or not hex.
fn path_unescape(value: &str) -> Option<Vec<u8>> {
    let escapes_whole = value.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    escapes_whole.then(|| percent_encoding::percent_decode_str(value).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(
        protocol: Protocol,
        vars: &[(&str, &str)],
    ) -> (Result<OtlpConfig, ConfigError>, Vec<String>) {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        let mut warnings = Vec::new();
        let env = |name: &str| map.get(name).map(|v| v.to_string());
        (
            OtlpConfig::from_env(protocol, &env, &mut warnings),
            warnings,
        )
    }

    fn config(protocol: Protocol, vars: &[(&str, &str)]) -> OtlpConfig {
        read(protocol, vars).0.expect("valid")
    }

    /// The Go SDK's resolution (`envconfig.go`'s `getOptionsFromEnv`): endpoint scheme, then
    /// insecure; the traces variables after the general ones; empty is unset.
    #[test]
    fn endpoints_resolve_as_the_go_sdk_resolves_them() {
        use Protocol::*;
        type Vars<'a> = &'a [(&'a str, &'a str)];
        let ep = "OTEL_EXPORTER_OTLP_ENDPOINT";
        let traces = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
        let insecure = "OTEL_EXPORTER_OTLP_INSECURE";
        let cases: &[(Protocol, Vars<'_>, &str)] = &[
            (
                HttpProtobuf,
                &[(ep, "http://c:4318")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c:4318/")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c/otlp")],
                "http://c/otlp/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c/a//b/../x/")],
                "http://c/a/x/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "https://u:p@c:1/?q=1")],
                "https://c:1/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c:4318"), (traces, "http://t:1/x")],
                "http://t:1/x",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c:4318"), (traces, "http://t:1")],
                "http://t:1/",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c:4318"), (traces, "  ")],
                "http://c:4318/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(traces, "")],
                "https://localhost:4318/v1/traces",
            ),
            // Insecure is read after the endpoint and decides the scheme either way.
            (
                HttpProtobuf,
                &[(ep, "https://c"), (insecure, "TRUE")],
                "http://c/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c"), (insecure, "false")],
                "https://c/v1/traces",
            ),
            (
                HttpProtobuf,
                &[(ep, "http://c"), (insecure, "1")],
                "https://c/v1/traces",
            ),
            (
                HttpProtobuf,
                &[
                    (ep, "https://c"),
                    (insecure, "true"),
                    ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "no"),
                ],
                "https://c/v1/traces",
            ),
            (Grpc, &[(ep, "http://c:4317")], "http://c:4317"),
            (Grpc, &[(ep, "https://c:4317")], "https://c:4317"),
            (Grpc, &[(ep, "grpc://c:4317")], "https://c:4317"),
            (Grpc, &[(ep, "c:4317")], "https://c:4317"),
            (Grpc, &[(ep, "c:4317"), (insecure, "true")], "http://c:4317"),
            (
                Grpc,
                &[(traces, "http://t:9"), (ep, "https://c:4317")],
                "http://t:9",
            ),
            (Grpc, &[(ep, "http://[::1]:4317")], "http://[::1]:4317"),
        ];
        for (protocol, vars, want) in cases {
            let c = config(*protocol, vars);
            assert_eq!(c.url(!c.insecure), *want, "{protocol:?} {vars:?}");
        }
        for bad in ["http://a b", "http://", "c d:1"] {
            let (e, _) = read(HttpProtobuf, &[(ep, bad)]);
            let e = e.expect_err(bad).to_string();
            assert!(
                e.starts_with(&format!(
                    "invalid exporter configuration: OTEL_EXPORTER_OTLP_ENDPOINT: invalid endpoint '{bad}'"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn headers_compression_and_timeout_as_the_go_sdk_reads_them() {
        let c = config(
            Protocol::HttpProtobuf,
            &[
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "a=1, api-key = s%20e%2Ccret ,bad, =x,empty=,pct=%zz,plus=a+b,bad key=1",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ],
        );
        let pairs: Vec<(String, String)> = c
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
            .collect();
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            pairs,
            [
                pair("user-agent", USER_AGENT),
                pair("a", "1"),
                pair("api-key", "s e,cret"),
                pair("empty", ""),
                pair("plus", "a+b"),
            ]
        );
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert!(c.gzip);
        // The traces variables replace the general ones when set; empty is unset.
        let (c, warnings) = read(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
                ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "GZIP"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon"),
            ],
        );
        let c = c.expect("valid");
        assert_eq!(c.headers.get("b").map(|v| v.as_bytes()), Some(&b"2"[..]));
        assert!(c.headers.get("a").is_none());
        assert!(!c.gzip, "only `gzip` itself compresses");
        assert_eq!(
            c.timeout,
            Duration::from_millis(2500),
            "a bad value is ignored"
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let c = config(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", " "),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "0"),
            ],
        );
        assert_eq!(c.headers.get("a").map(|v| v.as_bytes()), Some(&b"1"[..]));
        assert_eq!(c.timeout, UNBOUNDED_TIMEOUT);
        assert_eq!(config(Protocol::Grpc, &[]).timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn certificate_files_are_read_in_the_go_sdks_order() {
        let c = config(
            Protocol::Grpc,
            &[
                ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/t/ca.pem"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem"),
                ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/c.pem"),
                ("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem"),
                ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "/t/c.pem"),
            ],
        );
        let cas: Vec<&str> = c.ca_files.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(cas, ["/ca.pem", "/t/ca.pem"]);
        let clients: Vec<(&str, &str)> = c
            .client_files
            .iter()
            .map(|f| (f.cert.as_str(), f.key.as_str()))
            .collect();
        assert_eq!(clients, [("/c.pem", "/k.pem")], "a pair needs both files");
    }

    proptest::proptest! {
        /// Whatever the variables say, reading them answers (an error at worst).
        #[test]
        fn any_environment_reads(
            endpoint in ".{0,40}",
            headers in ".{0,60}",
            timeout in ".{0,12}",
            insecure in ".{0,6}",
        ) {
            for protocol in [Protocol::HttpProtobuf, Protocol::Grpc] {
                if let (Ok(c), _) = read(protocol, &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
                    ("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str()),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", timeout.as_str()),
                    ("OTEL_EXPORTER_OTLP_INSECURE", insecure.as_str()),
                ]) {
                    // A configuration read is one the transports accept.
                    proptest::prop_assert!(c.url(true).parse::<http::Uri>().is_ok(), "{}", c.url(true));
                }
            }
        }
    }
}
