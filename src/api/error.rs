//! The API client's error: one enum the poll loop branches on (retry or not, which metric label).
//!
//! Invariant: every failure of a request maps to exactly one variant, and `is_retriable` is the
//! single place that decides what the retry loop retries.

use std::time::Duration;

/// How many bytes of an error response body an [`ApiError::Http`] keeps for the log.
pub const BODY_EXCERPT_LEN: usize = 512;

/// A failure talking to the HyperFleet API.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The bearer token could not be read; no request was sent.
    #[error("token unavailable: {0}")]
    Auth(#[from] TokenError),
    /// The API answered with a status other than the expected 200.
    #[error("api answered http {status}: {body_excerpt}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The first [`BODY_EXCERPT_LEN`] bytes of the response body, lossily decoded.
        body_excerpt: String,
        /// How long the response's `Retry-After` header asks to wait (a 429 or 503), if it has
        /// a valid one.
        retry_after: Option<Duration>,
    },
    /// The request could not be sent or its response not read (connection refused, reset, …).
    #[error("network error: {0}")]
    Network(String),
    /// No complete response arrived within the per-request timeout.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The response body grew past the bound on what one request may read
    /// ([`super::max_body_bytes`]); reading stopped there.
    #[error(
        "response body is larger than the limit of {limit} bytes (page_size × the {resource_limit}-byte resource limit + {slack} bytes for the envelope)"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
        /// The per-resource limit it is derived from ([`crate::cel::host::MAX_RESOURCE_BYTES`]).
        resource_limit: usize,
        /// The envelope slack it adds ([`super::PAGE_ENVELOPE_SLACK`]).
        slack: usize,
    },
    /// The listing went on past the bound of one cycle ([`super::listing_limit`]): an API
    /// whose pages never end.
    #[error(
        "listing did not end: {received} resources received, past the bound of {limit} (twice the first page's total plus ten pages)"
    )]
    Endless {
        /// Resources received, repeats included.
        received: u64,
        /// The bound.
        limit: u64,
    },
    /// A gzipped response body is not a gzip stream Go's reader reads; the text is the Go
    /// sentinel's for it (`failed to read response body: gzip: invalid header`).
    #[error("failed to read response body: {0}")]
    Gzip(super::GzipError),
    /// The response body is not the expected JSON list envelope.
    #[error("invalid response body: {0}")]
    Decode(#[source] serde_json::Error),
    /// The client configuration is unusable (bad base URL, header value, TLS setup).
    #[error("invalid api client config: {0}")]
    Config(String),
}

/// The bearer token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read.
    #[error("reading token file {path}: {source}")]
    Read {
        /// The token file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file holds only whitespace.
    #[error("token file {path} is empty")]
    Empty {
        /// The token file.
        path: String,
    },
}

impl ApiError {
    /// Whether retrying the same request may succeed: network errors, timeouts, 5xx, 408 and 429.
    pub fn is_retriable(&self) -> bool {
        match self {
            ApiError::Network(_) | ApiError::Timeout(_) => true,
            ApiError::Http { status, .. } => matches!(status, 500..=599 | 408 | 429),
            // The same page would be as large, or as badly gzipped, again (Go retries no body
            // it could not read either): the next cycle tries anew.
            ApiError::Auth(_)
            | ApiError::TooLarge { .. }
            | ApiError::Endless { .. }
            | ApiError::Gzip(_)
            | ApiError::Decode(_)
            | ApiError::Config(_) => false,
        }
    }

    /// Whether the API refused the request itself (a 4xx other than 401, 403, 404, 408 and
    /// 429): a search or a field it does not support, a URL too long for it. What the daemon
    /// falls back from (its server filter, `fields`), never an outage.
    pub fn is_refusal(&self) -> bool {
        matches!(self, ApiError::Http { status, .. }
            if (400..500).contains(status) && !matches!(status, 401 | 403 | 404 | 408 | 429))
    }

    /// The `error_type` label of the fetch-error metric: `auth_error` for token failures,
    /// `fetch_error` for everything else.
    pub fn metric_label(&self) -> &'static str {
        match self {
            ApiError::Auth(_) => "auth_error",
            _ => "fetch_error",
        }
    }

    /// Maps a transport error; `timeout` is the configured per-request timeout it reports.
    pub(crate) fn from_reqwest(err: reqwest::Error, timeout: Duration) -> ApiError {
        if err.is_timeout() {
            return ApiError::Timeout(timeout);
        }
        // reqwest's messages carry the request URL, and with it any password of the base URL.
        let mut text = error_chain(&err);
        if let Some(url) = err.url().map(|u| u.as_str()).filter(|u| u.contains('@')) {
            text = text.replace(url, &crate::common::redact::mask_url(url));
        }
        if err.is_builder() {
            return ApiError::Config(text);
        }
        ApiError::Network(text)
    }

    /// How long the server asked to wait before retrying (`Retry-After`), if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// An [`ApiError::Http`] from a status, the (possibly long) response body and the
    /// `Retry-After` header's wait.
    /// Public so that the page fuzz target feeds it hostile bodies.
    pub fn http(status: u16, body: &[u8], retry_after: Option<Duration>) -> ApiError {
        let mut end = body.len().min(BODY_EXCERPT_LEN);
        // Cut on a character boundary when the body is UTF-8, so the excerpt has no stray U+FFFD.
        while end > 0 && end < body.len() && std::str::from_utf8(&body[..end]).is_err() {
            end -= 1;
        }
        let excerpt = String::from_utf8_lossy(&body[..end]).trim().to_string();
        ApiError::Http {
            status,
            body_excerpt: excerpt,
            retry_after,
        }
    }
}

/// The wait a `Retry-After` header value asks for: delay-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, relative to `now`; a past date is no wait). `None` for
/// anything else. Total on every input (public so that the page fuzz target feeds it).
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A number too large for u64 is an absurd wait: the retry budget refuses it anyway.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    // Any of RFC 9110's three HTTP-date forms (IMF-fixdate, RFC 850, asctime).
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(std::time::SystemTime::from(now))
            .unwrap_or(Duration::ZERO),
    )
}

/// An error with its sources, "outer: inner: root", because reqwest keeps the useful part
/// ("connection refused") in the source chain rather than in its own message.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retriable_statuses_match_the_go_sentinel() {
        let http = |status| ApiError::Http {
            status,
            body_excerpt: String::new(),
            retry_after: None,
        };
        for status in [500, 502, 503, 504, 408, 429] {
            assert!(http(status).is_retriable(), "{status}");
        }
        for status in [400, 401, 403, 404, 409, 422] {
            assert!(!http(status).is_retriable(), "{status}");
        }
        assert!(ApiError::Timeout(Duration::from_secs(1)).is_retriable());
        assert!(ApiError::Network("reset".into()).is_retriable());
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:28:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let secs = |s| parse_retry_after(s, now).map(|d| d.as_secs());
        assert_eq!(secs("120"), Some(120));
        assert_eq!(secs(" 0 "), Some(0));
        assert_eq!(secs("Wed, 21 Oct 2015 07:28:30 GMT"), Some(30));
        // RFC 9110's obsolete forms, which a recipient must accept too.
        assert_eq!(secs("Wednesday, 21-Oct-15 07:28:45 GMT"), Some(45));
        assert_eq!(secs("Wed Oct 21 07:29:00 2015"), Some(60));
        assert_eq!(secs("Wed, 21 Oct 2015 07:00:00 GMT"), Some(0));
        assert_eq!(secs("99999999999999999999999"), Some(u64::MAX));
        for bad in ["", "-1", "1.5", "soon", "Wed, 99 Oct 2015"] {
            assert_eq!(secs(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn token_errors_are_auth_errors_and_final() {
        let err = ApiError::from(TokenError::Empty { path: "/t".into() });
        assert!(!err.is_retriable());
        assert_eq!(err.metric_label(), "auth_error");
        assert_eq!(err.to_string(), "token unavailable: token file /t is empty");
        assert_eq!(
            ApiError::http(503, b"x", None).metric_label(),
            "fetch_error"
        );
    }

    #[test]
    fn body_excerpt_is_bounded_and_cut_on_a_char_boundary() {
        let body = "é".repeat(BODY_EXCERPT_LEN);
        let ApiError::Http { body_excerpt, .. } = ApiError::http(500, body.as_bytes(), None) else {
            panic!("not an http error");
        };
        assert_eq!(body_excerpt.len(), BODY_EXCERPT_LEN);
        assert!(!body_excerpt.contains('\u{FFFD}'));
    }
}
