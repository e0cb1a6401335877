//! Text the daemon writes on its hot paths (span lines, log lines), straight into a byte buffer:
//! JSON strings (one writer for both), lowercase hex and a wall-clock time as RFC 3339 UTC with
//! chrono's `SecondsFormat::AutoSi` (the Go sentinel's `time.RFC3339Nano` as its logger and stdout exporter print it: no
//! fraction, or 3, 6 or 9 digits, the fewest that hold every non-zero sub-second digit).
//!
//! Invariant: the bytes are exactly chrono's `to_rfc3339_opts(AutoSi, true)` for every time
//! from 1970 through 9999 (`rfc3339_is_chronos` checks it), without chrono's formatting
//! machinery (a tenth of the instructions).

use std::time::SystemTime;

/// Appends `bytes` as lowercase hex.
pub fn hex_into(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(16) {
        let mut text = [0u8; 32];
        let n = hex_digits(&mut text, chunk);
        out.extend_from_slice(&text[..n]);
    }
}

/// The two lowercase hex digits of every byte value.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        pairs[b] = [HEX[b >> 4], HEX[b & 0xf]];
        b += 1;
    }
    pairs
};

/// The hex digits of `bytes` (at most 16) into `text`; how many. A byte's pair at a time.
fn hex_digits(text: &mut [u8; 32], bytes: &[u8]) -> usize {
    let n = bytes.len().min(16);
    for (pair, &b) in text.chunks_exact_mut(2).zip(&bytes[..n]) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(b)]);
    }
    2 * n
}

/// `bytes` (at most 16) as lowercase hex, in `text`.
pub fn hex<'t>(text: &'t mut [u8; 32], bytes: &[u8]) -> &'t str {
    let n = hex_digits(text, bytes);
    std::str::from_utf8(&text[..n]).unwrap_or_default()
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether a word has a byte below `n` (`n` at most 128; exact as a yes or no).
fn has_below(word: u64, n: u8) -> bool {
    word.wrapping_sub(ONES * u64::from(n)) & !word & HIGHS != 0
}

/// Whether a word has the byte `b`.
fn has_byte(word: u64, b: u8) -> bool {
    has_below(word ^ (ONES * u64::from(b)), 1)
}

/// Whether `text` holds no byte a JSON string escapes (controls, `"`, `\\`): then it is
/// written as it is. Eight bytes at a time.
pub fn json_plain(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if json_special(u64::from_le_bytes(word)) {
            return false;
        }
    }
    words
        .remainder()
        .iter()
        .all(|&b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// Whether a word has a control byte, `"` or `\\` (exact as a yes or no). `w ^ 0x02` maps `"`
/// to 0x20 and the control bytes among themselves, so one "below 0x21" test finds both; bytes
/// from 0x80 are excluded by `!word` (the xors keep the high bit). A borrow can flag a byte
/// above a true one, never one below: a flag means there is one.
fn json_special(word: u64) -> bool {
    let quote_or_control = (word ^ (ONES * 0x02)).wrapping_sub(ONES * 0x21);
    let backslash = (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    (quote_or_control | backslash) & !word & HIGHS != 0
}

/// A buffer [`json_str`] appends to: the span lines' bytes or the log lines' text.
pub trait TextBuf {
    /// Appends `text` as it is.
    fn push_text(&mut self, text: &str);
    /// Appends `text` between quotes, as it is.
    fn push_quoted(&mut self, text: &str) {
        self.push_text("\"");
        self.push_text(text);
        self.push_text("\"");
    }
    /// Appends `text` as a JSON string, quotes and escapes as serde_json writes them.
    fn push_json_escaped(&mut self, text: &str);
}

impl TextBuf for Vec<u8> {
    fn push_text(&mut self, text: &str) {
        self.extend_from_slice(text.as_bytes());
    }

    fn push_quoted(&mut self, text: &str) {
        self.reserve(text.len() + 2);
        self.push(b'"');
        self.extend_from_slice(text.as_bytes());
        self.push(b'"');
    }

    fn push_json_escaped(&mut self, text: &str) {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(self, text);
    }
}

impl TextBuf for String {
    fn push_text(&mut self, text: &str) {
        self.push_str(text);
    }

    fn push_json_escaped(&mut self, text: &str) {
        self.push_str(&serde_json::to_string(text).unwrap_or_default());
    }
}

/// `text` as a JSON string, escaped as serde_json escapes it; text with nothing to escape (the
/// usual case, [`json_plain`]) is copied as it is.
pub fn json_str(out: &mut impl TextBuf, text: &str) {
    if json_plain(text) {
        out.push_quoted(text);
    } else {
        out.push_json_escaped(text);
    }
}

/// Whether `text` is printable ASCII only (0x20..0x7f). Eight bytes at a time.
pub fn printable_ascii(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        if word & HIGHS != 0 || has_below(word, 0x20) || has_byte(word, 0x7f) {
            return false;
        }
    }
    words.remainder().iter().all(|b| (0x20..0x7f).contains(b))
}

thread_local! {
    /// The last whole second written on this thread and its text (`2006-01-02T15:04:05`):
    /// lines come many to a second, and the calendar arithmetic is most of a time's cost.
    static LAST_SECOND: std::cell::Cell<(u64, [u8; 19])> = const { std::cell::Cell::new((u64::MAX, [0; 19])) };
}

/// Appends `t` as RFC 3339 UTC (`2006-01-02T15:04:05.999Z`, AutoSi sub-seconds). A time before
/// 1970 (a clock set wrong) is written as 1970-01-01T00:00:00Z, as no time the daemon
/// produces is.
pub fn rfc3339_utc(out: &mut Vec<u8>, t: SystemTime) {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let nanos = since.subsec_nanos();
    let (last, text) = LAST_SECOND.get();
    if last == secs {
        out.extend_from_slice(&text);
    } else {
        let text = seconds_text(secs);
        LAST_SECOND.set((secs, text));
        out.extend_from_slice(&text);
    }
    // The fraction is the leading 3, 6 or 9 of the nanoseconds' nine digits (none when 0).
    let digits = if nanos == 0 {
        0
    } else if nanos.is_multiple_of(1_000_000) {
        3
    } else if nanos.is_multiple_of(1_000) {
        6
    } else {
        9
    };
    let mut frac = [b'.'; 11];
    nine_digits(&mut frac[1..10], nanos);
    frac[digits + 1] = b'Z';
    // No fraction: only the `Z` (frac[1]).
    let start = usize::from(digits == 0);
    out.extend_from_slice(&frac[start..digits + 2]);
}

/// The two decimal digits of every value below 100.
static DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0u8; 2]; 100];
    let mut n = 0;
    while n < 100 {
        pairs[n] = [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8];
        n += 1;
    }
    pairs
};

/// `n` (below 10⁹) as nine digits, zero-padded, into `out`: two digits a division, not one.
fn nine_digits(out: &mut [u8], n: u32) {
    let pair = |n: u32| DIGIT_PAIRS[n as usize % 100];
    let (high, low) = (n / 100_000, n % 100_000);
    out[0..2].copy_from_slice(&pair(high / 100));
    out[2..4].copy_from_slice(&pair(high % 100));
    out[4] = b'0' + (low / 10_000 % 10) as u8;
    out[5..7].copy_from_slice(&pair(low / 100 % 100));
    out[7..9].copy_from_slice(&pair(low % 100));
}

/// `2006-01-02T15:04:05` of a count of seconds since the epoch.
fn seconds_text(secs: u64) -> [u8; 19] {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (year, month, day) = crate::cel::time::civil_from_days(days);
    let rem = (secs % 86_400) as u32;
    // Years past 9999 are four digits in no format Go or chrono writes; clamp as they never come.
    let year = year.clamp(0, 9999) as u32;
    let mut text = *b"0000-00-00T00:00:00";
    let mut put = |at: usize, n: u32, width: usize| {
        let mut n = n;
        for i in (0..width).rev() {
            text[at + i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, rem / 3600, 2);
    put(14, rem / 60 % 60, 2);
    put(17, rem % 60, 2);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn chrono_text(t: SystemTime) -> String {
        chrono::DateTime::<chrono::Utc>::from(t)
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
    }

    proptest::proptest! {
        /// Into bytes or text, a JSON string is serde_json's.
        #[test]
        fn json_strings_are_serde_jsons(text in "\\PC{0,40}|[\\x00-\\x7f]{0,40}") {
            let want = serde_json::to_string(&text).expect("a string");
            let mut bytes = Vec::new();
            json_str(&mut bytes, &text);
            proptest::prop_assert_eq!(String::from_utf8_lossy(&bytes), want.as_str());
            let mut line = String::new();
            json_str(&mut line, &text);
            proptest::prop_assert_eq!(line, want);
        }
    }

    #[test]
    fn rfc3339_is_chronos() {
        let mut cases = vec![
            SystemTime::UNIX_EPOCH,
            SystemTime::now(),
            SystemTime::UNIX_EPOCH + Duration::new(951_782_400, 0), // 2000-02-29
            SystemTime::UNIX_EPOCH + Duration::new(253_402_300_799, 999_999_999), // 9999-12-31
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let secs = seed % 253_402_300_800;
            // Every sub-second shape: whole, milli, micro and nano.
            let nanos = match seed % 4 {
                0 => 0,
                1 => (seed as u32 % 1000) * 1_000_000,
                2 => (seed as u32 % 1_000_000) * 1_000,
                _ => seed as u32 % 1_000_000_000,
            };
            let t = SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
            // The same second again, with another fraction (the cached second's text).
            cases.extend([t, t + Duration::from_nanos(1), t + Duration::from_millis(1)]);
        }
        for t in cases {
            let mut out = Vec::new();
            rfc3339_utc(&mut out, t);
            assert_eq!(String::from_utf8_lossy(&out), chrono_text(t), "{t:?}");
        }
    }

    #[test]
    fn word_scans_agree_with_byte_scans() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        // With the neighbours of the bytes escaped (`!`, `#`, `[`, `]`, 0x1e).
        let alphabet = b"ab \"\\\x1f\x7f\x00~\x20\xc3\xa9!#[]\x1e";
        for len in 0..40 {
            for _ in 0..200 {
                let mut text = Vec::new();
                for _ in 0..len {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // Mostly plain letters, so that long plain runs are tried too.
                    let b = if seed.is_multiple_of(4) {
                        alphabet[(seed >> 8) as usize % alphabet.len()]
                    } else {
                        b'a' + (seed >> 8) as u8 % 26
                    };
                    text.push(b);
                }
                let text = String::from_utf8_lossy(&text).into_owned();
                let plain = text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
                assert_eq!(json_plain(&text), plain, "{text:?}");
                let printable = text.bytes().all(|b| (0x20..0x7f).contains(&b));
                assert_eq!(printable_ascii(&text), printable, "{text:?}");
            }
        }
    }

    #[test]
    fn hex_is_lowercase_and_padded() {
        let mut out = Vec::new();
        hex_into(&mut out, &[0x00, 0x0f, 0xa0, 0xff]);
        assert_eq!(out, b"000fa0ff");
        let long: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        hex_into(&mut out, &long);
        let want: String = long.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(String::from_utf8_lossy(&out), want);
    }
}
