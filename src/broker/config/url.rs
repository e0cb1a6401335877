//! AMQP URLs: parsing with Go's `amqp091` meaning.
//!
//! Invariant: nothing here puts the password into an error message.

use lapin::uri::AMQPUri;

/// The longest vhost AMQP can name (a short string).
pub const MAX_VHOST_BYTES: usize = 255;

/// The frame sizes a URL may ask for (`?frame_max=N`): from AMQP's minimum frame size to 1 MiB
/// (the publisher's reader holds one frame of buffer; RabbitMQ's default is 128 KiB).
pub const FRAME_MAX_RANGE: std::ops::RangeInclusive<u32> = 4096..=1 << 20;

/// Parses an `amqp://` or `amqps://` URL into lapin's form, fixing up the two places where lapin
/// and Go's `amqp091` (which the Go sentinel uses) read the same URL differently:
/// - `amqp://host/` (path `/`) is the default vhost `/` in Go; lapin would take the empty vhost;
/// - bracketed IPv6 hosts (`amqp://[::1]:5672`), which lapin would replace by `localhost`.
pub(in crate::broker) fn parse_url(url: &str) -> Result<AMQPUri, String> {
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
