//! AMQP URLs: parsing with Go's `amqp091` meaning and masking the password for logs.
//!
//! Invariant: nothing here puts the password into an error message.

use lapin::uri::AMQPUri;

/// The URL with its password replaced by `****` (`amqp://guest:****@host:5672/`), as Go's
/// `url.Redacted` does; the one function every URL we print goes through (config dump, the
/// `debug_config` log, API and broker errors, the OpenTelemetry endpoint). A URL without a
/// password comes back unchanged.
///
/// It works on the text, not on a parse, so a malformed URL is masked too: the userinfo is what
/// lies between the authority's start (after `scheme://`, after `scheme:/`, or the start of the
/// text when it has no scheme) and the last `@`, and everything after its first `:` is masked.
/// Taking the last `@` of the whole text means a password holding `@`, `/`, `?` or `#` is still
/// masked whole, at the price of masking a little too much when a path or query holds an `@`
/// after a `:` (`http://h:80/a@b` → `http://h:****@b`). A percent-encoded colon (`%3A`)
/// separates too (`user%3APASS@host` → `user:****@host`): HTTP clients decode the userinfo
/// before sending it as Basic credentials, so what follows it is a password all the same.
pub fn mask_url(url: &str) -> String {
    match password_range(url) {
        Some((user_end, password)) => {
            format!("{}:****{}", &url[..user_end], &url[password.end..])
        }
        None => url.to_owned(),
    }
}

/// `text` (an error message, say) with every copy of `url`'s password masked: the URL itself
/// as [`mask_url`] masks it, then the password wherever else it appears, as written or
/// percent-decoded (a library may echo the URL reformatted, or its parts).
pub fn mask_url_in(text: &str, url: &str) -> String {
    let Some((_, password)) = password_range(url) else {
        return text.to_owned();
    };
    let mut out = text.replace(url, &mask_url(url));
    let written = &url[password];
    let decoded = percent_encoding::percent_decode_str(written).decode_utf8_lossy();
    for secret in [written, decoded.as_ref()] {
        if !secret.is_empty() {
            out = out.replace(secret, "****");
        }
    }
    out
}

/// Where the user name ends and the password's byte range (up to the last `@`), when the URL's
/// userinfo holds a `:` or `%3A` (see [`mask_url`]).
fn password_range(url: &str) -> Option<(usize, std::ops::Range<usize>)> {
    let start = authority_start(url);
    let at = url[start..].rfind('@').map(|i| start + i)?;
    let userinfo = &url[start..at];
    let colon = userinfo.find(':');
    let encoded = userinfo
        .as_bytes()
        .windows(3)
        .position(|w| w[0] == b'%' && w[1] == b'3' && w[2].eq_ignore_ascii_case(&b'a'));
    let (sep, len) = match (colon, encoded) {
        (Some(c), Some(e)) if e < c => (e, 3),
        (Some(c), _) => (c, 1),
        (None, Some(e)) => (e, 3),
        (None, None) => return None,
    };
    Some((start + sep, start + sep + len..at))
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

/// The longest vhost AMQP can name (a short string).
pub const MAX_VHOST_BYTES: usize = 255;

/// The frame sizes a URL may ask for (`?frame_max=N`): from AMQP's minimum frame size to 1 MiB
/// (the publisher's reader holds one frame of buffer; RabbitMQ's default is 128 KiB).
pub const FRAME_MAX_RANGE: std::ops::RangeInclusive<u32> = 4096..=1 << 20;

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
    // AMQP carries the vhost as a short string (at most 255 bytes), and the publisher's reader
    // allocates its buffer from frame_max: refuse what cannot work.
    if uri.vhost.len() > MAX_VHOST_BYTES {
        return Err(format!(
            "vhost is {} bytes, longer than AMQP's limit of {MAX_VHOST_BYTES}",
            uri.vhost.len()
        ));
    }
    if let Some(frame_max) = uri.query.frame_max
        && !FRAME_MAX_RANGE.contains(&frame_max)
    {
        return Err(format!(
            "frame_max={frame_max} is outside {}..={} bytes",
            FRAME_MAX_RANGE.start(),
            FRAME_MAX_RANGE.end()
        ));
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
    fn masks_percent_encoded_colons() {
        for (url, masked) in [
            ("http://user%3APASS@host", "http://user:****@host"),
            ("amqp://user%3aPASS@host/", "amqp://user:****@host/"),
            ("amqp://u%3Ap:q@host", "amqp://u:****@host"),
            ("amqp://u:p%3Aq@host", "amqp://u:****@host"),
            ("amqp://user%3@host", "amqp://user%3@host"),
            ("not a url user%3APASS@h", "not a url user:****@h"),
        ] {
            assert_eq!(mask_url(url), masked, "{url:?}");
        }
    }

    #[test]
    fn masks_a_password_wherever_a_message_repeats_it() {
        let url = "http://u:p%40ss@collector:4317";
        let text = format!("invalid uri {url}: bad; user u password p@ss; raw p%40ss");
        let masked = mask_url_in(&text, url);
        assert_eq!(
            masked,
            "invalid uri http://u:****@collector:4317: bad; user u password ****; raw ****"
        );
        assert_eq!(mask_url_in("nothing", "http://h"), "nothing");
        // An unparsable endpoint is masked all the same.
        let bad = "h t t p://u:hunter2@x";
        assert!(!mask_url_in(&format!("bad endpoint {bad}"), bad).contains("hunter2"));
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
    fn vhost_and_frame_max_are_bounded() {
        let err = |u: &str| parse_url(u).err().unwrap_or_default();
        let long = format!("amqp://u:secret@h/{}", "v".repeat(256));
        assert_eq!(
            err(&long),
            "vhost is 256 bytes, longer than AMQP's limit of 255"
        );
        assert!(parse_url(&format!("amqp://h/{}", "v".repeat(255))).is_ok());
        // Percent-encoded, the vhost is counted decoded.
        let encoded = format!("amqp://h/{}", "%41".repeat(256));
        assert!(
            err(&encoded).starts_with("vhost is 256 bytes"),
            "{}",
            err(&encoded)
        );
        for (frame, ok) in [
            ("4096", true),
            ("1048576", true),
            ("1073741824", false),
            ("4095", false),
            ("0", false),
        ] {
            let url = format!("amqp://h/?frame_max={frame}");
            assert_eq!(parse_url(&url).is_ok(), ok, "{frame}: {}", err(&url));
        }
        assert_eq!(
            err("amqp://h/?frame_max=1073741824"),
            "frame_max=1073741824 is outside 4096..=1048576 bytes"
        );
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
