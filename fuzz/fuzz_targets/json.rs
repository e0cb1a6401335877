//! Bytes → the page decoder's JSON grammar (`sentinel::resource::json::value_end`) against
//! serde_json, the JSON every other part of the sentinel reads with: where the grammar finds a
//! whole value (nothing but blanks after it), serde accepts the text (and, unless lenient,
//! decodes it into a tree); where serde accepts a text, the grammar finds it whole, unless its
//! nesting is deeper than the grammar's bound or (strict) it holds what serde skips but may
//! refuse to decode. Nothing may panic or hang, whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::resource::json::{blanks_after, value_end};

fuzz_target!(|data: &[u8]| {
    // Pages reach the grammar as text: it scans UTF-8 only.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let skips = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    let decodes = serde_json::from_str::<serde_json::Value>(text).is_ok();
    let whole = |end: Option<usize>| end.is_some_and(|e| blanks_after(data, e) == data.len());
    let lenient = whole(value_end(data, true));
    let strict = whole(value_end(data, false));
    if lenient {
        assert!(skips, "the grammar accepts what serde refuses");
    }
    if strict {
        assert!(decodes, "the strict grammar accepts what serde cannot decode");
    }
    if skips && !lenient {
        assert!(depth(data) > 64, "the grammar refuses what serde accepts");
    }
    assert!(!strict || lenient, "strict accepts what lenient refuses");
});

/// The deepest nesting of arrays and objects outside strings.
fn depth(b: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &c in b {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, ..) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                max = max.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
