//! The string extension functions the Go sentinel enables (cel-go `ext.Strings`): `charAt`,
//! `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`,
//! `join`, `quote`, `reverse`; `format` has its own module ([`super::format`], re-exported here).
//!
//! Takes plain Rust arguments (the dispatcher has already matched the overload) and gives a value
//! or an [`EvalError`]. The semantics are those of cel-go v0.29.1 with the library at its latest
//! version (`ext.Strings()` without options), which is what the Go sentinel runs. Their expected
//! answers are the tables of `tests/data/eval/strings.txt`, run through both engines.
//!
//! Invariant: indices count Unicode code points, never bytes, as cel-go does.

use super::value::{ErrorKind, EvalError, ListBuilder, Value, check_size};

use super::format::display;
pub use super::format::{FormatCheckError, check_format, format};

fn out_of_range(index: i64) -> EvalError {
    EvalError::new(
        ErrorKind::IndexOutOfRange,
        format!("index out of range: {index}"),
    )
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The byte offset of code point `index`; `index == count` gives `s.len()`, beyond is `None`.
fn byte_offset(s: &str, index: usize) -> Option<usize> {
    s.char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(s.len()))
        .nth(index)
}

/// `s.charAt(i)`: the code point at `i`; `i` equal to the length gives `""`, outside
/// `0..=len` is `index out of range`.
pub fn char_at(s: &str, i: i64) -> Result<String, EvalError> {
    let idx = usize::try_from(i).map_err(|_| out_of_range(i))?;
    match byte_offset(s, idx) {
        Some(b) => Ok(s[b..].chars().next().map(String::from).unwrap_or_default()),
        None => Err(out_of_range(i)),
    }
}

/// `s.indexOf(sub)` / `s.indexOf(sub, start)`: the code-point index of the first occurrence of
/// `sub` at or after `start` (default 0), or -1.
///
/// As in cel-go v0.29: a negative `start` is `index out of range`; an empty `sub` is found at
/// `start`, or at the end when `start` is past it; a non-empty `sub` with `start` at or past
/// the end gives -1.
pub fn index_of(s: &str, sub: &str, start: Option<i64>) -> Result<i64, EvalError> {
    let start = start.unwrap_or(0);
    let from = usize::try_from(start).map_err(|_| out_of_range(start))?;
    if sub.is_empty() {
        return Ok(start.min(to_i64(s.chars().count())));
    }
    let Some((begin, _)) = s.char_indices().nth(from) else {
        return Ok(-1);
    };
    let rest = &s[begin..];
    // A match of valid UTF-8 in valid UTF-8 always starts on a code-point boundary, so a byte
    // search finds exactly the code-point matches.
    Ok(rest
        .find(sub)
        .map_or(-1, |p| start + to_i64(rest[..p].chars().count())))
}

/// `s.lastIndexOf(sub)` / `s.lastIndexOf(sub, start)`: the code-point index of the last
/// occurrence of `sub` beginning at or before `start` (default: the last code point), or -1.
///
/// As in cel-go v0.29: without `start` an empty `sub` gives the length; a negative `start` is
/// `index out of range`; with `start` an empty `sub` is found at `start`, or at the end when
/// `start` is past it; a non-empty `sub` with `start` at or past the end gives -1.
pub fn last_index_of(s: &str, sub: &str, start: Option<i64>) -> Result<i64, EvalError> {
    let len = s.chars().count();
    let start = match start {
        Some(start) => start,
        None if sub.is_empty() => return Ok(to_i64(len)),
        None if s.len() < sub.len() => return Ok(-1),
        None => to_i64(len) - 1,
    };
    let last = usize::try_from(start).map_err(|_| out_of_range(start))?;
    if sub.is_empty() {
        return Ok(start.min(to_i64(len)));
    }
    if last >= len {
        return Ok(-1);
    }
    // A match beginning at or before `last` ends at or before `last + sub_len`.
    let end_char = last.saturating_add(sub.chars().count()).min(len);
    let end = byte_offset(s, end_char).unwrap_or(s.len());
    Ok(s[..end]
        .rfind(sub)
        .map_or(-1, |p| to_i64(s[..p].chars().count())))
}

/// `s.lowerAscii()`: ASCII letters lower-cased, everything else kept.
pub fn lower_ascii(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// `s.upperAscii()`: ASCII letters upper-cased, everything else kept.
pub fn upper_ascii(s: &str) -> String {
    s.to_ascii_uppercase()
}

/// `s.replace(old, new)` / `s.replace(old, new, n)`: Go's `strings.Replace`. At most `n`
/// replacements, all when `n` is absent or negative, none when 0; an empty `old` matches before
/// every code point and at the end. A result longer than [`MAX_VALUE_BYTES`](crate::cel::value::MAX_VALUE_BYTES) is an error,
/// found by counting the matches before anything is built.
pub fn replace(s: &str, old: &str, new: &str, n: Option<i64>) -> Result<String, EvalError> {
    let limit = match n.map(usize::try_from) {
        None | Some(Err(_)) => usize::MAX,
        Some(Ok(limit)) => limit,
    };
    if new.len() > old.len() {
        let matches = if old.is_empty() {
            s.chars().count().saturating_add(1).min(limit)
        } else {
            s.matches(old).take(limit).count()
        };
        let grown = matches.saturating_mul(new.len() - old.len());
        check_size("string", s.len().saturating_add(grown))?;
    }
    Ok(if limit == usize::MAX {
        s.replace(old, new)
    } else {
        s.replacen(old, new, limit)
    })
}

/// `s.split(sep)` / `s.split(sep, n)`: Go's `strings.SplitN`. At most `n` parts (the last holds
/// the rest), all when `n` is absent or negative, none when 0; an empty `sep` splits into code
/// points; an empty `s` with a non-empty `sep` gives `[""]`. The list is held to
/// [`MAX_VALUE_BYTES`](crate::cel::value::MAX_VALUE_BYTES) as it is built (a 1 MiB string split into code points passes it).
pub fn split(s: &str, sep: &str, n: Option<i64>) -> Result<Value, EvalError> {
    let mut out = ListBuilder::new();
    let limit = match n.map(usize::try_from) {
        Some(Ok(0)) => return Ok(out.finish()),
        Some(Ok(limit)) => limit,
        None | Some(Err(_)) => usize::MAX,
    };
    if !sep.is_empty() {
        for part in s.splitn(limit, sep) {
            out.push(Value::string(part))?;
        }
        return Ok(out.finish());
    }
    // Go's explode: the first `limit - 1` code points alone, then the rest (if any is left).
    let mut chars = s.char_indices();
    for _ in 1..limit {
        let Some((at, c)) = chars.next() else {
            return Ok(out.finish());
        };
        out.push(Value::string(&s[at..at + c.len_utf8()]))?;
    }
    if let Some((at, _)) = chars.next() {
        out.push(Value::string(&s[at..]))?;
    }
    Ok(out.finish())
}

/// `s.substring(start)` / `s.substring(start, end)`: code points `start..end` (end defaults to
/// the length). `start > end` is `invalid substring range`; either outside `0..=len` is
/// `index out of range`.
pub fn substring(s: &str, start: i64, end: Option<i64>) -> Result<String, EvalError> {
    if let Some(end) = end
        && start > end
    {
        return Err(EvalError::invalid(format!(
            "invalid substring range. start: {start}, end: {end}"
        )));
    }
    let position = |i: i64| usize::try_from(i).ok().and_then(|i| byte_offset(s, i));
    let begin = position(start).ok_or_else(|| out_of_range(start))?;
    let finish = match end {
        Some(end) => position(end).ok_or_else(|| out_of_range(end))?,
        None => s.len(),
    };
    Ok(s[begin..finish].to_string())
}

/// `s.trim()`: leading and trailing Unicode white space removed (Go's `strings.TrimSpace`; the
/// zero-width spaces are not white space).
pub fn trim(s: &str) -> String {
    s.trim().to_string()
}

/// `list.join()` / `list.join(sep)`: the strings concatenated with `sep` (default `""`) between.
/// A non-string element is `no matching overload` (`join: invalid input: <element>`).
pub fn join(items: &[Value], sep: Option<&str>) -> Result<String, EvalError> {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        let Value::String(text) = item else {
            let shown = display(item).unwrap_or_else(|_| item.type_name().to_string());
            return Err(EvalError::new(
                ErrorKind::NoMatchingOverload,
                format!("join: invalid input: {shown}"),
            ));
        };
        let sep = if i > 0 { sep.unwrap_or("") } else { "" };
        check_size("string", out.len() + sep.len() + text.len())?;
        out.push_str(sep);
        out.push_str(text);
    }
    Ok(out)
}

/// `strings.quote(s)`: `s` in double quotes with `\a \b \f \n \r \t \v \\ \"` escaped and every
/// other code point kept as it is; longer than [`MAX_VALUE_BYTES`](crate::cel::value::MAX_VALUE_BYTES) is an error.
pub fn quote(s: &str) -> Result<String, EvalError> {
    let escapes = s
        .bytes()
        .filter(|b| matches!(b, 7..=13 | b'\\' | b'"'))
        .count();
    check_size("string", s.len().saturating_add(escapes).saturating_add(2))?;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            other => out.push(other),
        }
    }
    out.push('"');
    Ok(out)
}

/// `s.reverse()`: the code points in reverse order.
pub fn reverse(s: &str) -> String {
    s.chars().rev().collect()
}

#[cfg(test)]
mod tests {
    //! What the tables of `tests/data/eval/strings.txt` cannot say: the list a split builds, and
    //! results past the value-size limit.

    use super::*;

    fn s(text: &str) -> Value {
        Value::string(text)
    }

    fn list(items: Vec<Value>) -> Value {
        Value::List(items.into())
    }

    fn err(kind: ErrorKind, message: &str) -> EvalError {
        EvalError::new(kind, message)
    }

    #[test]
    fn split_result_as_a_list_value() {
        let Value::List(items) = split("a,b", ",", None).expect("small") else {
            panic!("not a list");
        };
        let texts: Vec<&str> = items
            .iter()
            .map(|v| match v {
                Value::String(s) => &**s,
                _ => "?",
            })
            .collect();
        assert_eq!(texts, ["a", "b"]);
    }

    #[test]
    fn results_past_the_value_limit_are_errors() {
        use crate::cel::value::MAX_VALUE_BYTES;
        let too_large = |what: &str| {
            err(
                ErrorKind::TooLarge,
                &format!("{what} exceeds the 1048576-byte limit"),
            )
        };
        let half = "a".repeat(MAX_VALUE_BYTES / 2);
        // replace counts its matches before building: doubling half the limit is exactly the
        // limit, one more byte is not.
        assert_eq!(
            replace(&half, "a", "aa", None).map(|r| r.len()),
            Ok(MAX_VALUE_BYTES)
        );
        assert_eq!(
            replace(&format!("{half}a"), "a", "aa", None).err(),
            Some(too_large("string"))
        );
        assert!(replace(&half, "", "xyz", None).is_err());
        assert_eq!(
            replace(&half, "", "xyz", Some(1)).map(|r| r.len()),
            Ok(half.len() + 3)
        );
        // Shrinking replacements are never refused.
        assert!(replace(&half, "aa", "", None).is_ok());
        // split into code points: one slot per part passes the limit long before the text does.
        assert_eq!(split(&half, "", None).err(), Some(too_large("list")));
        assert!(split(&half, "", Some(2)).is_ok());
        // join and format refuse the piece that passes the limit.
        let halves = [s(&half), s(&half), s("a")];
        assert_eq!(
            join(&halves[..2], None).map(|j| j.len()),
            Ok(MAX_VALUE_BYTES)
        );
        assert_eq!(join(&halves, None).err(), Some(too_large("string")));
        assert_eq!(format("%s%s%s", &halves).err(), Some(too_large("string")));
        // `%x` doubles its argument: exactly the limit, then one byte past it.
        assert!(format("%x", &[s(&half)]).is_ok());
        assert_eq!(format("%x!", &[s(&half)]).err(), Some(too_large("string")));
        let nested = format("[%s]", &[list(halves.to_vec())]);
        assert_eq!(nested.err(), Some(too_large("string")));
        let quotes = "\"".repeat(MAX_VALUE_BYTES / 2);
        assert_eq!(quote(&quotes).err(), Some(too_large("string")));
    }
}
