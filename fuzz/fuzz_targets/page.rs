//! Page bytes → the daemon's page decoder → every resource decided by the default rules, as the
//! daemon does with a list page, once decoded completely and once under the rules' projection
//! (the one-pass skipper): both must accept or refuse the page alike and decide every resource
//! alike, and every completely decoded item must read as the JSON-tree decoder reads its text; the same bytes as an error response's body (its excerpt) and,
//! as text, as a `Retry-After` header value → the retry decision at a time into the retries
//! taken from the first bytes; and the first 20 bytes through the decoder's fast path for
//! canonical UTC times, which must say what the general RFC 3339 parse says; and the bytes'
//! reading as text (invalid UTF-8 replaced as Go's `encoding/json` replaces it, each bad byte a
//! U+FFFD) against a byte-by-byte decoding, with the page decoded from the bytes as from that
//! text; and the bytes as a gzipped body, inflated as Go's gzip reader reads one (every member,
//! trailing bytes refused) within a bound on the inflated bytes that no member count gets past,
//! what inflates decoded as a page; and each item against the default rules' `fields`, the
//! check that a projected answer carries every field asked for reading as serde_json's tree of
//! it reads. Nothing may panic, hang or blow up, whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::api::{
    ApiError, Backoff, GunzipError, decode_page, decode_page_with, gunzip, parse_retry_after,
};
use sentinel::cel::time::{
    CANONICAL_MAX, canonical_rfc3339_parsed_in, parse_timestamp, parsed_if_canonical_utc,
};
use sentinel::resource::json::utf8_as_go;
use sentinel::resource::{Fields, decode_tree};
use sentinel::rules::Rules;
use sentinel::rules::decision::Scratch;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    static RULES: OnceLock<Rules> = OnceLock::new();
    static FIELDS: OnceLock<Fields> = OnceLock::new();
    let rules = RULES.get_or_init(|| Rules::defaults().expect("the default rules compile"));
    let fields = FIELDS.get_or_init(|| Fields::of(&rules.projection).expect("projectable"));
    retry_after(data);
    canonical_time(data);
    gzipped(data);
    let text = utf8_as_go(data.to_vec());
    assert_eq!(
        text,
        sentinel::resource::json::go_decode_reference(data),
        "invalid UTF-8 is replaced byte by byte"
    );
    let complete = decode_page(data);
    let projected = decode_page_with(data, &rules.projection);
    if std::str::from_utf8(data).is_err() {
        // The bytes decode as their text does (the text is valid UTF-8: the rest of this
        // target takes that path again with it as the input).
        let from_text = decode_page(text.as_bytes());
        assert_eq!(
            format!("{:?}", complete.as_ref().map(|p| p.items.len())),
            format!("{:?}", from_text.as_ref().map(|p| p.items.len())),
            "the bytes decode as their text"
        );
    }
    let (complete, projected) = match (complete, projected) {
        (Ok(c), Ok(p)) => (c, p),
        (Err(c), Err(p)) => {
            assert_eq!(
                c.to_string(),
                p.to_string(),
                "the two decoders refuse alike"
            );
            return;
        }
        (c, p) => panic!(
            "one decoder refused the page: {:?} / {:?}",
            c.err(),
            p.err()
        ),
    };
    assert_eq!(
        (complete.items.len(), complete.total),
        (projected.items.len(), projected.total)
    );
    // A page the projected pass found whole has no item without a field it decodes (a
    // condition of a type it does not read aside).
    if !projected.incomplete {
        for item in &projected.items {
            if let Some(field) = fields.missing(item.json_text()) {
                assert!(
                    field.starts_with("status.conditions."),
                    "{field} left out unnoticed"
                );
            }
        }
    }
    let now = parse_timestamp("2025-10-21T12:00:00Z").expect("a valid timestamp");
    let mut scratch = Scratch::default();
    let mut decide = |r| {
        format!(
            "{:?}",
            rules.decision.explain(&Arc::new(r), now, &mut scratch)
        )
    };
    for (c, p) in complete.items.into_iter().zip(projected.items) {
        if let Err(why) = fields.check_against_serde(c.json_text()) {
            panic!("the fields check reads the item as serde does: {why}");
        }
        if c.too_large().is_none() {
            let tree = decode_tree(c.json_text());
            assert_eq!(
                format!("{c:?}"),
                format!("{tree:?}"),
                "the complete decoder's two ways agree"
            );
        }
        let c = decide(c);
        assert_eq!(
            c,
            decide(p),
            "the projected resource is decided as the complete one"
        );
    }
});

/// The header and error-body parsers on `data`; the retry decision with an elapsed time and a
/// retry number from its first 9 bytes (as a slow or failing API would make them).
fn retry_after(data: &[u8]) {
    static NOW: OnceLock<chrono::DateTime<chrono::Utc>> = OnceLock::new();
    let now = *NOW.get_or_init(|| {
        chrono::DateTime::parse_from_rfc3339("2025-10-21T12:00:00Z")
            .expect("a valid time")
            .with_timezone(&chrono::Utc)
    });
    let err = ApiError::http(429, data, None);
    let _ = err.to_string();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let asked = parse_retry_after(text, now);
    let mut head = [0u8; 9];
    let n = data.len().min(9);
    head[..n].copy_from_slice(&data[..n]);
    let elapsed = Duration::from_nanos(u64::from_le_bytes(head[..8].try_into().expect("8 bytes")));
    let retry = u32::from(head[8]);
    let backoff = Backoff::default();
    if let Some(wait) = backoff.next_wait(retry, asked, elapsed) {
        assert!(
            elapsed + wait <= backoff.max_elapsed,
            "a retry past the budget"
        );
    }
}

/// The bytes as a gzipped body, under a small bound (a bomb costs little): what inflates is
/// never past the bound, and decodes as a page without panicking; the same bytes under a bound
/// of what they inflated to read the same, and one byte less is too large.
fn gzipped(data: &[u8]) {
    const LIMIT: usize = 1 << 20;
    let Ok(body) = gunzip(data, LIMIT) else {
        return;
    };
    assert!(body.len() <= LIMIT, "past the bound: {}", body.len());
    assert_eq!(
        gunzip(data, body.len()).as_ref(),
        Ok(&body),
        "the bound is inclusive"
    );
    if let Some(less) = body.len().checked_sub(1) {
        assert_eq!(
            gunzip(data, less),
            Err(GunzipError::TooLarge),
            "one byte over the bound"
        );
    }
    let _ = decode_page(&body);
}

/// The fast path for times in the API's shape against the general parse, on the first 20 to 30
/// bytes (the lengths the fast path reads: no fraction, or one of one to nine digits).
fn canonical_time(data: &[u8]) {
    for n in 20..=30 {
        if let Some(text) = data.get(..n).and_then(|b| std::str::from_utf8(b).ok()) {
            canonical_time_of(text);
        }
    }
}

fn canonical_time_of(text: &str) {
    let mut buf = [0u8; CANONICAL_MAX];
    let general = match canonical_rfc3339_parsed_in(text, &mut buf) {
        Ok((canonical, at)) if canonical == text => Some(at),
        _ => None,
    };
    assert_eq!(
        parsed_if_canonical_utc(text),
        general,
        "the fast path for canonical times is the general parse: {text:?}"
    );
}
