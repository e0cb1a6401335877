//! Redaction of secrets in URLs: the one way every URL the sentinel prints (config dump, the
//! `debug_config` log, API and broker errors, the OpenTelemetry endpoint) is masked.
//!
//! Invariant: a password never survives [`mask_url`] or [`mask_url_in`].

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
}
