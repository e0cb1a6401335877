//! Reading a response body within a size bound, chunk by chunk, so that no answer of the API —
//! however large, or endless — makes the sentinel big; and inflating a gzipped one as Go's HTTP
//! transport does.
//!
//! Takes a response and its limit; gives the body of a 200 (at most `limit` bytes) or the first
//! [`BODY_EXCERPT_LEN`] bytes of any other answer (all an [`ApiError::Http`] keeps).
//!
//! The client asks for gzip (`Accept-Encoding: gzip`, the header Go's transport adds; the API
//! gzips list pages for a client that asks) and, as Go's transport, inflates a body whose
//! `Content-Encoding` is `gzip` (in any case) and no other. A gzipped body is read whole off the
//! wire, then inflated in one go ([`super::gunzip`]: every member, as Go's reader) into the
//! buffer the page decoder reads. Both counts are bounded by `limit`: the inflated bytes, so
//! that a gzip bomb, small on the wire, is the same [`ApiError::TooLarge`] as an oversized
//! plain body; and the bytes on the wire (any page within the limit deflates to fewer), so that
//! an endless series of empty members ends too. A gzip stream Go's reader refuses is an
//! [`ApiError::Gzip`] with Go's text.
//!
//! Invariant: at most `limit` bytes off the wire (plus one chunk being looked at) and, for a
//! gzipped body, `limit + 1` inflated bytes are ever held; a body past the limit is an
//! [`ApiError::TooLarge`] as soon as it is known to be past it: from its `Content-Length`
//! before any byte is read, else at the chunk that crosses the limit, else as it inflates.

use super::error::{ApiError, BODY_EXCERPT_LEN};
use super::gunzip::{self, GunzipError};
use crate::cel::host::MAX_RESOURCE_BYTES;
use std::time::Duration;

/// What a list page may hold beyond its resources: the envelope's `kind`, `page`, `size` and
/// `total`, the commas between items and any whitespace a pretty-printing server adds.
pub const PAGE_ENVELOPE_SLACK: usize = 64 * 1024;

/// The largest response body read for a request of `page_size` resources:
/// `page_size × MAX_RESOURCE_BYTES + PAGE_ENVELOPE_SLACK` (20 MiB + 64 KiB with the default
/// page size of 20).
///
/// Why this bound: any page whose resources are each within [`MAX_RESOURCE_BYTES`] — every page
/// the sentinel can decide all of — fits, so the bound refuses nothing that would otherwise be
/// decided; a page past it must hold a resource over the per-resource limit, which would be
/// skipped anyway. Memory per listing is then bounded by the page being decided plus those
/// fetched ahead, which are fewer while pages are large ([`super::PREFETCH_BYTES`]): two such
/// bodies when resources are near their limit.
pub fn max_body_bytes(page_size: u32) -> usize {
    usize::try_from(page_size.max(1))
        .unwrap_or(usize::MAX)
        .saturating_mul(MAX_RESOURCE_BYTES)
        .saturating_add(PAGE_ENVELOPE_SLACK)
}

/// The error for a body past `limit`.
fn too_large(limit: usize) -> ApiError {
    ApiError::TooLarge {
        limit,
        resource_limit: MAX_RESOURCE_BYTES,
        slack: PAGE_ENVELOPE_SLACK,
    }
}

/// The most bytes of a gzipped error answer read off the wire for its excerpt (an API's error
/// body deflates to far fewer; a stream that does not give the excerpt's bytes within them
/// gives what it gave).
const EXCERPT_WIRE_BYTES: usize = 8 * BODY_EXCERPT_LEN;

/// Whether Go's transport would inflate this answer: its (first) `Content-Encoding` is `gzip`,
/// in any case.
fn gzipped(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"))
}

/// Reads the body of `response`: all of it for a 200 (an error past `limit`), else only as much
/// as an error excerpt needs (the rest is never read; the connection is then not reused). A
/// gzipped body is inflated. `timeout` is the per-request timeout a transport error reports.
pub(super) async fn read(
    response: reqwest::Response,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, ApiError> {
    let whole = response.status() == reqwest::StatusCode::OK;
    // An error excerpt keeps a few bytes past its length, so that `ApiError::http` can see
    // whether its cut falls inside a character.
    let keep = if whole { limit } else { BODY_EXCERPT_LEN + 4 };
    if !gzipped(response.headers()) {
        return read_wire(response, keep, whole, timeout).await;
    }
    if whole {
        let wire = read_wire(response, limit, true, timeout).await?;
        return gunzip::gunzip(&wire, limit).map_err(|refused| match refused {
            GunzipError::TooLarge => too_large(limit),
            GunzipError::Gzip(err) => ApiError::Gzip(err),
        });
    }
    let wire = read_wire(response, EXCERPT_WIRE_BYTES, false, timeout).await?;
    let mut excerpt = Vec::new();
    // An excerpt is what inflates before an error or its length, whichever comes first.
    let _partial = gunzip::gunzip_into(&wire, keep, &mut excerpt);
    excerpt.truncate(keep);
    Ok(excerpt)
}

/// The room first made for a body of no declared length (grown by doubling past it).
const UNDECLARED_ROOM: usize = 64 * 1024;

/// The bytes of `response` as they came over the wire: all of them, or an error past `keep`
/// when `whole`; else the first `keep`.
async fn read_wire(
    mut response: reqwest::Response,
    keep: usize,
    whole: bool,
    timeout: Duration,
) -> Result<Vec<u8>, ApiError> {
    let transport = |e| ApiError::from_reqwest(e, timeout);
    // A length past usize is past any limit.
    let declared = response
        .content_length()
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if whole && declared.is_some_and(|n| n > keep) {
        return Err(too_large(keep));
    }
    // Without a length (a gzipped page comes chunked), room for a typical page's wire bytes at
    // once, doubled as it fills: no run of small regrowths, each copying what came before.
    let mut body = Vec::with_capacity(declared.unwrap_or(UNDECLARED_ROOM).min(keep));
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        let room = keep - body.len();
        if chunk.len() > room {
            if whole {
                return Err(too_large(keep));
            }
            body.extend_from_slice(&chunk[..room]);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{CONTENT_ENCODING, HeaderMap, HeaderValue};

    #[test]
    fn the_limit_is_page_size_resources_plus_slack() {
        assert_eq!(max_body_bytes(20), 20 * (1 << 20) + 64 * 1024);
        assert_eq!(max_body_bytes(0), max_body_bytes(1));
        assert_eq!(max_body_bytes(1), (1 << 20) + 65_536);
        assert!(max_body_bytes(u32::MAX) >= u32::MAX as usize);
        assert_eq!(
            too_large(max_body_bytes(1)).to_string(),
            "response body is larger than the limit of 1114112 bytes (page_size × the \
             1048576-byte resource limit + 65536 bytes for the envelope)"
        );
    }

    /// As Go's transport (`EqualFold(resp.Header.Get("Content-Encoding"), "gzip")`): `gzip` in
    /// any case, as the first value, and nothing else.
    #[test]
    fn only_gzip_is_inflated() {
        let with = |values: &[&'static str]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(CONTENT_ENCODING, HeaderValue::from_static(v));
            }
            gzipped(&headers)
        };
        assert!(with(&["gzip"]));
        assert!(with(&["GZip"]));
        assert!(with(&["gzip", "br"]));
        for other in [
            &[][..],
            &["x-gzip"],
            &["deflate"],
            &["gzip, br"],
            &["br", "gzip"],
        ] {
            assert!(!with(other), "{other:?}");
        }
    }
}
