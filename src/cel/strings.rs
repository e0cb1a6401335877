//! The string extension functions the Go sentinel enables (cel-go `ext.Strings`): `charAt`,
//! `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`,
//! `join`, `quote`, `reverse`, `format`.
//!
//! Invariant: indices count Unicode code points, never bytes, as cel-go does.

use super::value::{EvalError, Value};

fn pending(what: &str) -> EvalError {
    EvalError::invalid(format!("{what} is not implemented yet"))
}

/// `s.charAt(i)`.
pub fn char_at(s: &str, i: i64) -> Result<String, EvalError> {
    let _ = (s, i);
    Err(pending("charAt"))
}

/// `s.indexOf(sub[, start])`.
pub fn index_of(s: &str, sub: &str, start: Option<i64>) -> Result<i64, EvalError> {
    let _ = (s, sub, start);
    Err(pending("indexOf"))
}

/// `s.lastIndexOf(sub[, start])`.
pub fn last_index_of(s: &str, sub: &str, start: Option<i64>) -> Result<i64, EvalError> {
    let _ = (s, sub, start);
    Err(pending("lastIndexOf"))
}

/// `s.lowerAscii()`.
pub fn lower_ascii(s: &str) -> String {
    s.to_ascii_lowercase()
}

/// `s.upperAscii()`.
pub fn upper_ascii(s: &str) -> String {
    s.to_ascii_uppercase()
}

/// `s.replace(old, new[, n])`.
pub fn replace(s: &str, old: &str, new: &str, n: Option<i64>) -> String {
    let _ = n;
    s.replace(old, new)
}

/// `s.split(sep[, n])`.
pub fn split(s: &str, sep: &str, n: Option<i64>) -> Vec<String> {
    let _ = n;
    s.split(sep).map(str::to_string).collect()
}

/// `s.substring(start[, end])`.
pub fn substring(s: &str, start: i64, end: Option<i64>) -> Result<String, EvalError> {
    let _ = (s, start, end);
    Err(pending("substring"))
}

/// `s.trim()`.
pub fn trim(s: &str) -> String {
    s.trim().to_string()
}

/// `list.join([sep])`.
pub fn join(items: &[Value], sep: Option<&str>) -> Result<String, EvalError> {
    let _ = (items, sep);
    Err(pending("join"))
}

/// `strings.quote(s)`.
pub fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// `s.reverse()`.
pub fn reverse(s: &str) -> String {
    s.chars().rev().collect()
}

/// `fmt.format(args)`.
pub fn format(fmt: &str, args: &[Value]) -> Result<String, EvalError> {
    let _ = (fmt, args);
    Err(pending("format"))
}
