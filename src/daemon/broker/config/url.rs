//! AMQP URLs: parsing with Go's `amqp091` meaning and masking the password for logs.
//!
//! Invariant: nothing here puts the password into an error message.

use lapin::uri::AMQPUri;

/// The URL with its password replaced by `****` (`amqp://guest:****@host:5672/`), as Go's
/// `url.Redacted` does; the one function every URL we print goes through (config dump, the
/// `debug_config` log, API and broker errors). A URL without a password comes back unchanged.
///
/// It works on the text, not on a parse, so a malformed URL is masked too: the userinfo is what
/// lies between the authority's start (after `scheme://`, after `scheme:/`, or the start of the
/// text when it has no scheme) and the last `@`, and everything after its first `:` is masked.
/// Taking the last `@` of the whole text means a password holding `@`, `/`, `?` or `#` is still
/// masked whole, at the price of masking a little too much when a path or query holds an `@`
/// after a `:` (`http://h:80/a@b` → `http://h:****@b`).
pub fn mask_url(url: &str) -> String {
    let start = authority_start(url);
    let Some(at) = url[start..].rfind('@').map(|i| start + i) else {
        return url.to_owned();
    };
    match url[start..at].find(':') {
        Some(colon) => format!("{}:****{}", &url[..start + colon], &url[at..]),
        None => url.to_owned(),
    }
}

/// Where the authority begins: after `scheme://` or `scheme:/` (any number of slashes), else 0.
fn authority_start(url: &str) -> usize {
    let scheme_len = url
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        .count();
    let rest = &url[scheme_len..];
    match rest.strip_prefix(':') {
        Some(after) if after.starts_with('/') => url.len() - after.trim_start_matches('/').len(),
        _ => 0,
    }
}

/// Parses an `amqp://` or `amqps://` URL into lapin's form, fixing up the two places where lapin
/// and Go's `amqp091` (which the Go sentinel uses) read the same URL differently:
/// - `amqp://host/` (path `/`) is the default vhost `/` in Go; lapin would take the empty vhost;
/// - bracketed IPv6 hosts (`amqp://[::1]:5672`), which lapin would replace by `localhost`.
pub(in crate::daemon::broker) fn parse_url(url: &str) -> Result<AMQPUri, String> {
    if !url.starts_with("amqp://") && !url.starts_with("amqps://") {
        return Err("must start with 'amqp://' or 'amqps://'".to_owned());
    }
    // Rejects what the url crate would quietly accept but a connection cannot use.
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain whitespace".to_owned());
    }
    let mut uri: AMQPUri = url.parse().map_err(|e: String| {
        // The url crate's messages name the faulty part, never echo the URL; lapin's own
        // "Invalid URL: '<url>'" would, so replace it.
        if e.contains(url) {
            "not a valid URL".to_owned()
        } else {
            e
        }
    })?;
    if uri.vhost.is_empty() {
        uri.vhost = "/".to_owned();
    }
    if let Some(inner) = host_port(url)
        .strip_prefix('[')
        .and_then(|h| h.split(']').next())
    {
        uri.authority.host = inner.to_owned();
    }
    Ok(uri)
}

/// The `host[:port]` part of the authority.
fn host_port(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let authority = &url[start..end];
    authority
        .rfind('@')
        .map_or(authority, |at| &authority[at + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_password_only() {
        assert_eq!(
            mask_url("amqp://guest:guest@localhost:5672/"),
            "amqp://guest:****@localhost:5672/"
        );
        assert_eq!(
            mask_url("amqps://u:p@ss@h/vh?heartbeat=5"),
            "amqps://u:****@h/vh?heartbeat=5"
        );
        assert_eq!(
            mask_url("amqp://guest@localhost/"),
            "amqp://guest@localhost/"
        );
        assert_eq!(mask_url("amqp://localhost/a@b"), "amqp://localhost/a@b");
        assert_eq!(mask_url("not a url"), "not a url");
        assert_eq!(mask_url("http://user:pass@host"), "http://user:****@host");
    }

    #[test]
    fn masks_malformed_urls_too() {
        for (url, masked) in [
            ("amqp:/guest:pw@host", "amqp:/guest:****@host"),
            ("amqp:guest:pw@host", "amqp:****@host"),
            ("guest:pw@host:5672", "guest:****@host:5672"),
            ("amqp://u:p/w@host/vh", "amqp://u:****@host/vh"),
            ("amqp://u:p#w@host", "amqp://u:****@host"),
            ("amqp://u:p?w@host", "amqp://u:****@host"),
            ("amqp://:pw@host", "amqp://:****@host"),
            ("://u:pw@h", "://u:****@h"),
            ("amqp:///u:pw@h", "amqp:///u:****@h"),
            ("é://u:pw@h", "é:****@h"),
            ("@", "@"),
            (":@", ":****@"),
            ("", ""),
        ] {
            assert_eq!(mask_url(url), masked, "{url:?}");
            assert!(!mask_url(url).contains("pw"), "{url:?}");
        }
    }

    #[test]
    fn vhosts_follow_go() {
        let vhost = |u: &str| {
            parse_url(u)
                .map(|u| u.vhost)
                .unwrap_or_else(|e| format!("error: {e}"))
        };
        assert_eq!(vhost("amqp://guest:guest@localhost:5672/"), "/");
        assert_eq!(vhost("amqp://localhost"), "/");
        assert_eq!(vhost("amqp://localhost/%2f"), "/");
        assert_eq!(vhost("amqp://localhost/prod"), "prod");
    }

    #[test]
    fn hosts_and_errors() {
        let host = |u: &str| {
            parse_url(u)
                .map(|u| u.authority.host)
                .unwrap_or_else(|e| format!("error: {e}"))
        };
        assert_eq!(host("amqp://127.0.0.1:5672"), "127.0.0.1");
        assert_eq!(host("amqp://u:p@[::1]:5672/"), "::1");
        assert_eq!(host("amqp://rabbit.example.com"), "rabbit.example.com");
        assert!(host("http://x").starts_with("error: must start"));
        let err = parse_url("amqp://u:secret@host:notaport/")
            .err()
            .unwrap_or_default();
        assert!(!err.contains("secret"), "{err}");
        assert!(!err.is_empty());
    }
}
