//! The JSON grammar the page decoder reads with: finding the end of a value (validating it,
//! building nothing), of a string, a number, a literal, blanks; comparing keys. Byte-level and
//! iterative: no recursion, no allocation.
//!
//! Invariant: what these functions accept is what serde_json accepts (the `json` fuzz target
//! holds them to it), except where they refuse with `None` for the caller's complete decoder to
//! decide: nesting deeper than 64 levels and, unless `LENIENT`, what serde skips but may
//! refuse to decode (a `\u` surrogate escape, a number it finds out of range).
//!
//! Tactics: `skip_end` keeps the open containers as a stack of bits in a register and looks
//! at each byte between tokens once (`token`); what is rare (blanks, escapes, numbers,
//! literals) is out of line, so that its registers stay with strings and structure, the loop
//! most of a page goes through. Strings are scanned sixteen bytes a step as two words
//! (`special_at`), keys compared a word at a time (`same_bytes`).

/// The deepest nesting skipped (deeper: the complete decoder decides); below serde's 128 and
/// within the 64 bits of `skip_end`'s stack.
pub(super) const MAX_DEPTH: u32 = 64;

/// `a == b`, a word at a time and inline: a key is short, and a call to `memcmp` per key
/// costs more than comparing it.
#[inline(always)]
pub(super) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    // The words at `i` (eight bytes, else four).
    let wide = |s: &[u8], i: usize| {
        s.get(i..i + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    let narrow = |s: &[u8], i: usize| {
        s.get(i..i + 4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    match n {
        // Every eight bytes, the last eight overlapping the word before.
        8.. => {
            (0..n - 8).step_by(8).all(|i| wide(a, i) == wide(b, i))
                && wide(a, n - 8) == wide(b, n - 8)
        }
        4.. => narrow(a, 0) == narrow(b, 0) && narrow(a, n - 4) == narrow(b, n - 4),
        _ => a.iter().zip(b).all(|(x, y)| x == y),
    }
}

/// The end of the JSON value at the start of `b` (after any blanks), validated as JSON, or
/// `None` where it is not one or is one of those this grammar leaves to serde (see the module
/// doc). `lenient`: accept what serde accepts in a value it skips. What the `json` fuzz target
/// holds to serde_json.
pub fn value_end(b: &[u8], lenient: bool) -> Option<usize> {
    match lenient {
        true => skip_end::<true>(b, 0, Skip::Value),
        false => skip_end::<false>(b, 0, Skip::Value),
    }
}

/// A response body as text, as Go's `encoding/json` reads it: a body that is UTF-8 is taken
/// over without a copy; in one that is not, each byte of an invalid sequence becomes U+FFFD
/// (Go's `utf8.DecodeRune` answers `RuneError` of width 1 for it, which `encoding/json`
/// writes into the string it decodes), so one bad byte in one resource's string costs that
/// string's exactness, never the page. A bad byte outside a string stays a syntax error of the
/// page, as in Go. What the `page` fuzz target holds to a byte-by-byte decoding.
pub fn utf8_as_go(body: Vec<u8>) -> String {
    let bytes = match String::from_utf8(body) {
        Ok(text) => return text,
        Err(e) => e.into_bytes(),
    };
    let mut text = String::with_capacity(bytes.len() + 16);
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                // The bytes were just checked to be UTF-8 up to `valid_up_to`.
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                // Every byte of the invalid sequence is one U+FFFD, as in Go (std's lossy
                // conversion writes one per maximal invalid prefix instead).
                let bad = e.error_len().unwrap_or(after.len());
                text.extend(std::iter::repeat_n('\u{FFFD}', bad));
                rest = &after[bad..];
            }
        }
    }
    text
}

/// The `json` fuzz target's oracle (and the regression test's): holds [`value_end`] to
/// serde_json on `text`. Where the grammar finds a whole value (nothing but blanks after it),
/// serde accepts the text, and decodes it into a tree unless the grammar was lenient; where
/// serde accepts it, the grammar finds it whole unless it nests deeper than 64. Texts that name
/// serde_json's private tokens (`$serde_json::private::…`, which its `Value` reads as embedded
/// JSON, not as the key they are) are outside the comparison.
pub fn check_against_serde(text: &str) -> Result<(), &'static str> {
    if text.contains("$serde_json::private::") {
        return Ok(());
    }
    let data = text.as_bytes();
    let skips = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
    let decodes = serde_json::from_str::<serde_json::Value>(text).is_ok();
    let whole = |end: Option<usize>| end.is_some_and(|e| blank_end(data, e) == data.len());
    let lenient = whole(value_end(data, true));
    let strict = whole(value_end(data, false));
    if lenient && !skips {
        return Err("the grammar accepts what serde refuses");
    }
    if strict && !decodes {
        return Err("the strict grammar accepts what serde cannot decode");
    }
    if skips && !lenient && nesting(data) <= MAX_DEPTH as usize {
        return Err("the grammar refuses what serde accepts");
    }
    if strict && !lenient {
        return Err("strict accepts what lenient refuses");
    }
    Ok(())
}

/// The deepest nesting of arrays and objects outside strings.
fn nesting(b: &[u8]) -> usize {
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

/// Where [`skip_end`] starts.
#[derive(Clone, Copy)]
pub(super) enum Skip {
    /// At a value: skip it.
    Value,
    /// Inside an object, after one of its values: skip the rest of the object (through its
    /// `}`), failing at a second member named `type` (which would change the condition's
    /// type).
    RestOfCondition,
}

/// The end of what `from` says is at `i` in `b`, validated as JSON. Iterative: the open
/// containers are a stack of bits (an object is a 1), at most [`MAX_DEPTH`] deep (deeper: the
/// complete decoder decides). Everything stays in locals and each byte between tokens is looked
/// at once ([`token`]); what is rare (blanks, escapes, numbers, literals) is out of line, so
/// the registers stay with strings and structure: this is the loop most of a page goes through.
/// `LENIENT`: accept what serde accepts in a value it skips but may refuse in one it decodes
/// (a `\u` surrogate escape, [`escape_end`]; a number out of range, [`number_end`]); the item-end
/// fallback of the page scanner is lenient, a projected item is not.
#[inline(never)]
pub(super) fn skip_end<const LENIENT: bool>(b: &[u8], mut i: usize, from: Skip) -> Option<usize> {
    // `watch`: the depth whose keys may not be `type` (none for a value: no depth reaches it).
    let (mut open, mut depth, watch, mut at_value): (u64, u32, u32, bool) = match from {
        Skip::Value => (0, 0, u32::MAX, true),
        Skip::RestOfCondition => (1, 1, 1, false),
    };
    loop {
        if at_value {
            let (c, at) = token(b, i)?;
            if c == b'"' {
                i = string_close::<LENIENT>(b, at + 1)? + 1;
            } else if c == b'{' || c == b'[' {
                let (next, at) = token(b, at + 1)?;
                // `{` + 2 is `}`, `[` + 2 is `]`.
                if next == c + 2 {
                    i = at + 1;
                } else {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return None;
                    }
                    let object = c == b'{';
                    open = open << 1 | u64::from(object);
                    i = match object {
                        true => key_end::<LENIENT>(b, next, at, depth == watch)?,
                        false => at,
                    };
                    continue;
                }
            } else {
                i = scalar_end::<LENIENT>(b, at)?;
            }
        }
        at_value = true;
        // After a value: close the containers it ends.
        loop {
            if depth == 0 {
                return Some(i);
            }
            let object = open & 1 == 1;
            let (c, at) = token(b, i)?;
            i = at + 1;
            if c == b',' {
                if object {
                    let (c, at) = token(b, i)?;
                    i = key_end::<LENIENT>(b, c, at, depth == watch)?;
                    // The usual member, a string, stays in this loop.
                    if b.get(i) == Some(&b'"') {
                        i = string_close::<LENIENT>(b, i + 1)? + 1;
                        continue;
                    }
                }
                break;
            }
            if c != if object { b'}' } else { b']' } {
                return None;
            }
            open >>= 1;
            depth -= 1;
        }
    }
}

/// The first byte at or after `i` that is not a blank, and where it is.
#[inline(always)]
pub(super) fn token(b: &[u8], i: usize) -> Option<(u8, usize)> {
    match *b.get(i)? {
        // Compact JSON (what the API writes) has no blanks.
        c if c > b' ' => Some((c, i)),
        _ => {
            let at = blanks_end(b, i);
            Some((*b.get(at)?, at))
        }
    }
}

/// After a skipped object's key (`c`, at `at`: its quote) and its colon; `watched`: a key
/// `type` (or any key with an escape, which may spell it) fails.
#[inline(always)]
fn key_end<const LENIENT: bool>(b: &[u8], c: u8, at: usize, watched: bool) -> Option<usize> {
    if c != b'"' {
        return None;
    }
    let end = special_at(b, at + 1);
    let end = match *b.get(end)? {
        b'"' if !watched || b.get(at + 1..end)? != b"type" => end,
        _ if !watched => escaped_string_end::<LENIENT>(b, end)?.0,
        _ => return None,
    };
    match token(b, end + 1)? {
        (b':', at) => Some(at + 1),
        _ => None,
    }
}

/// After the blanks at `i`.
#[inline(always)]
pub(super) fn blank_end(b: &[u8], i: usize) -> usize {
    // Compact JSON (what the API writes) has none.
    if b.get(i).is_some_and(|&c| c > b' ') {
        return i;
    }
    blanks_end(b, i)
}

/// [`blank_end`] at a blank.
#[cold]
#[inline(never)]
fn blanks_end(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// The closing quote of the string whose content starts at `i`, and whether it has escapes.
#[inline(always)]
pub(super) fn string_end<const LENIENT: bool>(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let end = special_at(b, i);
    match *b.get(end)? {
        b'"' => Some((end, false)),
        _ => escaped_string_end::<LENIENT>(b, end),
    }
}

/// [`string_end`] without whether it has escapes.
#[inline(always)]
pub(super) fn string_close<const LENIENT: bool>(b: &[u8], i: usize) -> Option<usize> {
    string_end::<LENIENT>(b, i).map(|(end, _)| end)
}

/// [`string_end`] from `at`, a backslash or a control byte.
#[cold]
#[inline(never)]
fn escaped_string_end<const LENIENT: bool>(b: &[u8], mut at: usize) -> Option<(usize, bool)> {
    loop {
        match *b.get(at)? {
            b'"' => return Some((at, true)),
            b'\\' => at = escape_end::<LENIENT>(b, at + 1)?,
            _ => return None,
        }
        at = special_at(b, at);
    }
}

/// After the escape sequence whose backslash is before `i`. A surrogate (`\uD800`–`\uDFFF`,
/// paired or not) is accepted only when `LENIENT`, as serde accepts it in what it skips: in a
/// string it decodes serde refuses a lone one, so a projected item holding one anywhere goes to
/// the complete decoder, which says what the item is.
fn escape_end<const LENIENT: bool>(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 1),
        b'u' => {
            let hex = b.get(i + 1..i + 5)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            // `D800`–`DFFF`: a `d` (either case), then a hex digit past `7`.
            let surrogate = hex[0].eq_ignore_ascii_case(&b'd') && !matches!(hex[1], b'0'..=b'7');
            (LENIENT || !surrogate).then_some(i + 5)
        }
        _ => None,
    }
}

/// After the number or literal at `i`, validated as JSON (out of line: a page has few).
#[inline(never)]
fn scalar_end<const LENIENT: bool>(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b't' => literal_end(b, i, b"true"),
        b'f' => literal_end(b, i, b"false"),
        b'n' => literal_end(b, i, b"null"),
        _ => number_end::<LENIENT>(b, i),
    }
}

/// After the number at `i`, validated as JSON. Unless `LENIENT` (what serde accepts in a value
/// it skips), a number serde may find out of range when it decodes it (an exponent, or more
/// than 300 characters) fails, so that the complete decoder says what it is.
#[inline]
pub(super) fn number_end<const LENIENT: bool>(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    // At least one digit.
    let digit = |i: usize| {
        b.get(i)
            .is_some_and(u8::is_ascii_digit)
            .then(|| digits(i + 1))
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i + 1),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digit(i + 1)?;
    }
    if !LENIENT && i - start > 300 {
        return None;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        if !LENIENT {
            return None;
        }
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = digit(i)?;
    }
    Some(i)
}

/// After `word` at `i`.
#[inline(always)]
pub(super) fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    let end = i + word.len();
    (b.get(i..end)? == word).then_some(end)
}

/// The index of the first quote, backslash or control byte at or after `i` (`b.len()` when
/// there is none), sixteen bytes at a time as two words (a string is scanned inside the page,
/// so almost always sixteen bytes remain: the last few go byte by byte).
#[inline(always)]
pub(super) fn special_at(b: &[u8], i: usize) -> usize {
    let Some(mut rest) = b.get(i..) else {
        return b.len();
    };
    while let Some((chunk, tail)) = rest.split_first_chunk::<16>() {
        let (lo, hi) = chunk.split_at(8);
        let lo = special_bytes(u64::from_le_bytes(lo.try_into().unwrap_or_default()));
        let hi = special_bytes(u64::from_le_bytes(hi.try_into().unwrap_or_default()));
        if lo | hi != 0 {
            // The lowest flagged byte is a true one (a false flag only ever sits above a true
            // one, where a borrow ran into it).
            let at = b.len() - rest.len();
            return match lo {
                0 => at + 8 + (hi.trailing_zeros() / 8) as usize,
                _ => at + (lo.trailing_zeros() / 8) as usize,
            };
        }
        rest = tail;
    }
    special_tail(b, b.len() - rest.len())
}

/// [`special_at`] over the last bytes of `b`, from `i`.
#[cold]
#[inline(never)]
fn special_tail(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map_or(b.len(), |n| i + n)
}

/// The high bit of each byte of `w` below 0x20 or equal to '"' or '\\' (above a flagged byte a
/// flag may be false). `w ^ 0x02` maps '"' to 0x20 and the control bytes among themselves, so
/// one "below 0x21" test finds both; bytes >= 0x80 are excluded by `!w` (the xors keep the
/// high bit).
#[inline(always)]
fn special_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote_or_control = (w ^ (ONES * 0x02)).wrapping_sub(ONES * 0x21);
    let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    (quote_or_control | backslash) & !w & HIGH
}

/// Go's `utf8.DecodeRune` loop, one rune or one `RuneError` (U+FFFD) of width 1 at a time: the
/// slow reference [`utf8_as_go`] is held to (its unit test and the `page` fuzz target).
pub fn go_decode_reference(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let one = (1..=4).find_map(|n| {
            let s = std::str::from_utf8(bytes.get(i..i + n)?).ok()?;
            (s.chars().count() == 1).then_some((s, n))
        });
        match one {
            Some((s, n)) => {
                out.push_str(s);
                i += n;
            }
            None => {
                out.push('\u{FFFD}');
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{go_decode_reference as go_decode, same_bytes, special_at, utf8_as_go};

    #[test]
    fn invalid_utf8_is_replaced_byte_by_byte_as_go_does() {
        for bytes in [
            &b"plain"[..],
            b"\xff",
            b"a\xffb",
            b"\xe2\x82A", // a 3-byte sequence cut after 2: two U+FFFD in Go, one in std
            b"\xf0\x90\x80", // cut at the end
            b"\xed\xa0\x80", // an encoded surrogate
            b"\xc0\xaf",  // overlong
            b"\xf4\x90\x80\x80", // past U+10FFFF
            "é€😀".as_bytes(),
            b"\x80\x80\xe2\x82\xac\xe2",
        ] {
            assert_eq!(utf8_as_go(bytes.to_vec()), go_decode(bytes), "{bytes:?}");
        }
        assert_eq!(utf8_as_go(b"\xe2\x82A".to_vec()), "\u{FFFD}\u{FFFD}A");
    }

    #[test]
    fn keys_compare_as_bytes() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(same_bytes(&a, &a.clone()));
            if n > 0 {
                assert!(!same_bytes(&a, &a[..n - 1]));
            }
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same_bytes(&a, &b), "{n} {at}");
            }
        }
    }

    #[test]
    fn the_scan_finds_the_first_special_byte() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        // Every byte among fillers (the bytes next to the specials' values among them).
        for special_byte in 0..=255u8 {
            for filler in [
                b'a', b' ', 0x21, 0x23, 0x5b, 0x5d, 0x5e, 0x7f, 0x80, 0x82, 0xa0, 0xff, 0xa2, 0xdc,
            ] {
                // Both words of a step, the next step and the byte-by-byte tail, from two
                // starts.
                for len in 0..40 {
                    for at in 0..=len {
                        let mut b = vec![filler; len];
                        if at < len {
                            b[at] = special_byte;
                        }
                        for start in [0, 3] {
                            let expected = naive(b.get(start..).unwrap_or_default())
                                .map_or(len, |n| start + n);
                            assert_eq!(special_at(&b, start), expected, "{b:?}");
                        }
                    }
                }
            }
        }
    }
}
