//! The string extension functions the Go sentinel enables (cel-go `ext.Strings`): `charAt`,
//! `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`,
//! `join`, `quote`, `reverse`, `format`.
//!
//! Takes plain Rust arguments (the dispatcher has already matched the overload) and gives a value
//! or an [`EvalError`]. The semantics are those of cel-go v0.29.1 with the library at its latest
//! version (`ext.Strings()` without options), which is what the Go sentinel runs; `format` is
//! cel-go's second formatter (`formatting_v2.go`: no locale, `%s` prints strings inside lists and
//! maps unquoted). [`check_format`] is the compile-time half of `format` that cel-go's checker runs
//! when the format string is a constant and the argument a list literal.
//!
//! Invariant: indices count Unicode code points, never bytes, as cel-go does.

use super::time::{format_duration, format_timestamp};
use super::types::Type;
use super::value::{ErrorKind, EvalError, ListBuilder, Map, Value, check_size};
use crate::cel::host::CONDITION_FIELDS;

/// The precision `%f` and `%e` use when the clause gives none.
const DEFAULT_PRECISION: usize = 6;

/// The largest precision a `%.Nf` / `%.Ne` clause may ask for, as in cel-go since #1292 (v0.27
/// had no limit); without one a rule could make a single call allocate gigabytes.
const MAX_PRECISION: usize = 100;

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

// ---------------------------------------------------------------------------------------------
// format
// ---------------------------------------------------------------------------------------------

/// One formatting clause, after its `%` and optional `.precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    /// `%s`.
    Str,
    /// `%d`.
    Decimal,
    /// `%f` with its precision.
    Fixed(usize),
    /// `%e` with its precision.
    Scientific(usize),
    /// `%b`.
    Binary,
    /// `%x` (false) or `%X` (true).
    Hex(bool),
    /// `%o`.
    Octal,
}

impl Verb {
    /// The error cel-go gives when the clause gets a value of type `ty`.
    fn type_error(self, ty: &str) -> String {
        let what = match self {
            Verb::Str => {
                "string clause can only be used on strings, bools, bytes, ints, doubles, \
                          maps, lists, types, durations, and timestamps"
            }
            Verb::Decimal => "decimal clause can only be used on ints, uints, and doubles",
            Verb::Fixed(_) => "fixed-point clause can only be used on ints, uints, and doubles",
            Verb::Scientific(_) => "scientific clause can only be used on ints, uints, and doubles",
            Verb::Binary => "only ints, uints, and bools can be formatted as binary",
            Verb::Hex(_) => "only ints, uints, bytes, and strings can be formatted as hex",
            Verb::Octal => "octal clause can only be used on ints and uints",
        };
        format!("error during formatting: {what}, was given {ty}")
    }
}

/// A piece of a format string: literal text or a clause for argument `arg`.
enum Piece<'a> {
    Text(&'a str),
    Clause { arg: usize, verb: Verb },
}

fn syntax_error(message: impl std::fmt::Display) -> EvalError {
    EvalError::invalid(format!("could not parse formatting clause: {message}"))
}

/// Parses the clause after a `%`: returns the bytes it takes and its verb.
fn parse_clause(rest: &str) -> Result<(usize, Verb), EvalError> {
    let bytes = rest.as_bytes();
    let (at, precision) = if bytes.first() == Some(&b'.') {
        let end = 1 + bytes[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if end >= bytes.len() {
            return Err(syntax_error(
                "error while parsing precision: could not find end of precision specifier",
            ));
        }
        (end, parse_precision(&rest[1..end])?)
    } else {
        (0, DEFAULT_PRECISION)
    };
    let verb = match bytes.get(at) {
        Some(b's') => Verb::Str,
        Some(b'd') => Verb::Decimal,
        Some(b'f') => Verb::Fixed(precision),
        Some(b'e') => Verb::Scientific(precision),
        Some(b'b') => Verb::Binary,
        Some(b'x') => Verb::Hex(false),
        Some(b'X') => Verb::Hex(true),
        Some(b'o') => Verb::Octal,
        // cel-go reads one byte and prints it as a code point, so a non-ASCII clause shows its
        // first byte as a Latin-1 character; the same happens here.
        Some(&other) => {
            return Err(syntax_error(format!(
                "unrecognized formatting clause \"{}\"",
                char::from(other)
            )));
        }
        None => return Err(EvalError::invalid("unexpected end of string")),
    };
    Ok((at + 1, verb))
}

/// The digits of a `.precision`, with Go's `strconv.Atoi` errors.
fn parse_precision(digits: &str) -> Result<usize, EvalError> {
    let wrap = |why: String| syntax_error(format!("error while parsing precision: {why}"));
    let value: i64 = digits.parse().map_err(|_| {
        let reason = if digits.is_empty() {
            "invalid syntax"
        } else {
            "value out of range"
        };
        wrap(format!(
            "error while converting precision to integer: strconv.Atoi: parsing \"{digits}\": \
             {reason}"
        ))
    })?;
    match usize::try_from(value) {
        Ok(p) if p <= MAX_PRECISION => Ok(p),
        _ => Err(wrap(format!(
            "precision {value} exceeds maximum allowed precision {MAX_PRECISION}"
        ))),
    }
}

/// Walks a format string as cel-go does, handing each piece to `on_piece`; returns how many
/// clauses it saw. Checks, in cel-go's order: an argument for the clause, then the clause.
fn walk<'a>(
    fmt: &'a str,
    n_args: usize,
    mut on_piece: impl FnMut(Piece<'a>) -> Result<(), EvalError>,
) -> Result<usize, EvalError> {
    let mut i = 0;
    let mut arg = 0;
    while i < fmt.len() {
        let Some(pct) = fmt[i..].find('%').map(|p| i + p) else {
            on_piece(Piece::Text(&fmt[i..]))?;
            break;
        };
        if pct > i {
            on_piece(Piece::Text(&fmt[i..pct]))?;
        }
        if fmt.as_bytes().get(pct + 1) == Some(&b'%') {
            on_piece(Piece::Text("%"))?;
            i = pct + 2;
            continue;
        }
        if arg >= n_args {
            return Err(EvalError::new(
                ErrorKind::IndexOutOfRange,
                format!("index {arg} out of range"),
            ));
        }
        if pct + 1 >= fmt.len() {
            return Err(EvalError::invalid("unexpected end of string"));
        }
        let (taken, verb) = parse_clause(&fmt[pct + 1..])?;
        on_piece(Piece::Clause { arg, verb })?;
        arg += 1;
        i = pct + 1 + taken;
    }
    Ok(arg)
}

/// `fmt.format(args)`: printf-style substitution with cel-go's clauses `%s %d %f %e %b %o %x %X`,
/// an optional `.precision` (used by `%f` and `%e`, default 6) and `%%` for a percent sign.
///
/// Errors: a clause without an argument is `index out of range` (`index N out of range`); a
/// malformed clause is an invalid argument (`could not parse formatting clause: …`); a value the
/// clause does not take is `no matching overload` (`error during formatting: …`); an error
/// reading a resource or condition field being printed is passed on. Extra arguments are
/// ignored at run time (cel-go rejects them only at compile time: see [`check_format`]).
pub fn format(fmt: &str, args: &[Value]) -> Result<String, EvalError> {
    let mut out = String::with_capacity(fmt.len());
    walk(fmt, args.len(), |piece| {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Clause { arg, verb } => format_clause(verb, &args[arg], &mut out)?,
        }
        check_size("string", out.len())
    })?;
    Ok(out)
}

/// The type name cel-go prints for a value: the Go sentinel sees conditions and the resource as
/// maps.
fn value_type_name(value: &Value) -> &'static str {
    match value {
        Value::Condition(_) | Value::Resource(_) => "map",
        other => other.type_name(),
    }
}

fn format_clause(verb: Verb, value: &Value, out: &mut String) -> Result<(), EvalError> {
    let text = match (verb, value) {
        (Verb::Str, _) => display(value)?,
        (Verb::Decimal, Value::Int(i)) => i.to_string(),
        (Verb::Decimal, Value::Uint(u)) => u.to_string(),
        (Verb::Decimal, Value::Double(d)) => shortest_double(*d),
        (Verb::Fixed(p), Value::Int(i)) => format!("{:.p$}", *i as f64),
        (Verb::Fixed(p), Value::Uint(u)) => format!("{:.p$}", *u as f64),
        (Verb::Fixed(p), Value::Double(d)) => non_finite(*d).unwrap_or_else(|| format!("{d:.p$}")),
        (Verb::Scientific(p), Value::Int(i)) => scientific(*i as f64, p),
        (Verb::Scientific(p), Value::Uint(u)) => scientific(*u as f64, p),
        (Verb::Scientific(p), Value::Double(d)) => scientific(*d, p),
        (Verb::Binary, Value::Bool(b)) => u8::from(*b).to_string(),
        (Verb::Binary, Value::Int(i)) => signed(*i, |u| format!("{u:b}")),
        (Verb::Binary, Value::Uint(u)) => format!("{u:b}"),
        (Verb::Hex(upper), Value::Int(i)) => signed(*i, |u| hex_u64(u, upper)),
        (Verb::Hex(upper), Value::Uint(u)) => hex_u64(*u, upper),
        (Verb::Hex(upper), Value::String(s)) => hex_bytes(s.as_bytes(), upper),
        (Verb::Hex(upper), Value::Bytes(b)) => hex_bytes(b, upper),
        (Verb::Octal, Value::Int(i)) => signed(*i, |u| format!("{u:o}")),
        (Verb::Octal, Value::Uint(u)) => format!("{u:o}"),
        (verb, value) => {
            return Err(EvalError::new(
                ErrorKind::NoMatchingOverload,
                verb.type_error(value_type_name(value)),
            ));
        }
    };
    out.push_str(&text);
    Ok(())
}

/// A negative integer as Go prints it in another base: a minus sign, then the magnitude.
fn signed(i: i64, digits: impl Fn(u64) -> String) -> String {
    let magnitude = digits(i.unsigned_abs());
    if i < 0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

fn hex_u64(u: u64, upper: bool) -> String {
    if upper {
        format!("{u:X}")
    } else {
        format!("{u:x}")
    }
}

fn hex_bytes(bytes: &[u8], upper: bool) -> String {
    bytes
        .iter()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

/// `NaN`, `Infinity` and `-Infinity` as cel-go prints them; `None` for finite numbers.
fn non_finite(d: f64) -> Option<String> {
    if d.is_nan() {
        Some("NaN".to_string())
    } else if d.is_infinite() {
        Some(if d > 0.0 { "Infinity" } else { "-Infinity" }.to_string())
    } else {
        None
    }
}

/// Go's `strconv.FormatFloat(d, 'f', -1, 64)`: the shortest decimal that reads back as `d`, never
/// in exponent form. Rust's `Display` for `f64` is exactly that.
fn shortest_double(d: f64) -> String {
    non_finite(d).unwrap_or_else(|| d.to_string())
}

/// Go's `%.Ne`: `d.ddde+XX`, the exponent signed and at least two digits.
fn scientific(d: f64, precision: usize) -> String {
    if let Some(text) = non_finite(d) {
        return text;
    }
    let rust = format!("{d:.precision$e}");
    let (mantissa, exponent) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// The `%s` rendering of a value (cel-go's `formatStringV2`): strings and bytes as their text,
/// doubles shortest, timestamps and durations as `string()` gives them, type values by name,
/// lists `[a, b]`, maps `{k: v, …}` sorted by the rendered key.
fn display(value: &Value) -> Result<String, EvalError> {
    Ok(match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => shortest_double(*d),
        Value::String(s) => s.to_string(),
        // cel-go appends the raw bytes; a Rust string must stay UTF-8, so invalid sequences
        // become U+FFFD.
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Timestamp(t) => format_timestamp(*t),
        Value::Duration(d) => format_duration(*d),
        Value::Type(ty) => type_value_name(ty).to_string(),
        Value::List(items) => {
            let mut out = String::from("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&display(item)?);
                check_size("string", out.len())?;
            }
            out.push(']');
            out
        }
        Value::Map(map) => display_map(map)?,
        Value::Condition(condition) => {
            let entries = CONDITION_FIELDS
                .iter()
                .map(|name| Ok((Value::string(name), condition.get(name)?)))
                .collect::<Result<Vec<_>, EvalError>>()?;
            display_map(&Map::from_entries(entries))?
        }
        Value::Resource(resource) => display(&resource.to_map()?)?,
    })
}

fn display_map(map: &Map) -> Result<String, EvalError> {
    let mut bytes = 0usize;
    let mut entries = map
        .iter()
        .map(|(k, v)| {
            let (k, v) = (display(k)?, display(v)?);
            bytes = bytes.saturating_add(k.len() + v.len() + 4);
            check_size("string", bytes)?;
            Ok((k, v))
        })
        .collect::<Result<Vec<(String, String)>, EvalError>>()?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let parts: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    Ok(format!("{{{}}}", parts.join(", ")))
}

/// The name cel-go gives a type value: containers without parameters, and the sentinel's
/// objects as the maps they are in Go.
fn type_value_name(ty: &Type) -> String {
    match ty {
        Type::List(_) => "list".to_string(),
        Type::Map(..)
        | Type::Condition
        | Type::Resource
        | Type::ResourceStatus
        | Type::ObjectReference => "map".to_string(),
        other => other.to_string(),
    }
}

/// Why a constant format string does not fit the list literal given to it: the compile-time
/// error cel-go's checker reports for `'<constant>'.format([<literal>, …])`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FormatCheckError {
    /// The list element the error is about, when it is about one (cel-go reports it there).
    pub arg: Option<usize>,
    /// cel-go's message.
    pub message: String,
}

/// Checks a constant format string against the static types of the elements of the list
/// literal passed to it, as cel-go's `format` validator does: clause syntax, an element for
/// every clause, no element left over, and each element's type fitting its clause.
///
/// `dyn` fits every clause, and so do the sentinel's condition and resource types (they are
/// `dyn` to the Go checker); the checker should likewise pass `dyn` for every element whose
/// type Go's checker could not know, or rules Go accepts would be rejected here. Unlike cel-go
/// this does not look inside nested list or map literals given to `%s` (every type fits `%s`
/// here anyway).
pub fn check_format(fmt: &str, arg_types: &[Type]) -> Result<(), FormatCheckError> {
    let mut bad_arg = None;
    let seen = walk(fmt, arg_types.len(), |piece| {
        let Piece::Clause { arg, verb } = piece else {
            return Ok(());
        };
        let ty = &arg_types[arg];
        if fits(verb, ty) {
            return Ok(());
        }
        bad_arg = Some(arg);
        Err(EvalError::new(
            ErrorKind::NoMatchingOverload,
            verb.type_error(&type_value_name(ty)),
        ))
    })
    .map_err(|e| FormatCheckError {
        arg: bad_arg,
        message: e.message,
    })?;
    if arg_types.len() > seen {
        return Err(FormatCheckError {
            arg: None,
            message: format!(
                "too many arguments supplied to string.format (expected {seen}, got {})",
                arg_types.len()
            ),
        });
    }
    Ok(())
}

/// Whether a value of static type `ty` can fit the clause.
fn fits(verb: Verb, ty: &Type) -> bool {
    let numeric = matches!(ty, Type::Int | Type::Uint | Type::Double);
    match ty {
        Type::Dyn
        | Type::Condition
        | Type::Resource
        | Type::ResourceStatus
        | Type::ObjectReference => true,
        _ => match verb {
            Verb::Str => true,
            Verb::Decimal | Verb::Fixed(_) | Verb::Scientific(_) => numeric,
            Verb::Binary => matches!(ty, Type::Bool | Type::Int | Type::Uint),
            Verb::Hex(_) => matches!(ty, Type::Int | Type::Uint | Type::String | Type::Bytes),
            Verb::Octal => matches!(ty, Type::Int | Type::Uint),
        },
    }
}

#[cfg(test)]
// The tables keep cel-go's sample numbers (2.71828, 3.14), which clippy takes for e and pi.
#[allow(clippy::approx_constant)]
mod tests {
    //! Table tests ported from cel-go's `ext/strings_test.go` and `ext/formatting_v2_test.go`
    //! (rewritten as Rust tables; the expectations are cel-go's unless a comment says why not).

    use super::*;
    use crate::cel::time::{Duration, Timestamp};
    use std::sync::Arc;

    fn s(text: &str) -> Value {
        Value::string(text)
    }

    fn list(items: Vec<Value>) -> Value {
        Value::List(items.into())
    }

    fn map(entries: Vec<(Value, Value)>) -> Value {
        Value::Map(Arc::new(Map::from_entries(entries)))
    }

    /// `(text, needle, start, expected index or error message)`.
    type SearchCase<'a> = (&'a str, &'a str, Option<i64>, Result<i64, &'a str>);

    /// `(text, start, end, expected substring or error)`.
    type SubstringCase<'a> = (&'a str, i64, Option<i64>, Result<&'a str, EvalError>);

    fn err(kind: ErrorKind, message: &str) -> EvalError {
        EvalError::new(kind, message)
    }

    #[test]
    fn char_at_counts_code_points() {
        let cases: &[(&str, i64, Result<&str, &str>)] = &[
            ("tacocat", 3, Ok("o")),
            ("tacocat", 7, Ok("")),
            ("©αT", 0, Ok("©")),
            ("©αT", 1, Ok("α")),
            ("©αT", 2, Ok("T")),
            ("hello", 4, Ok("o")),
            ("hello", 5, Ok("")),
            ("", 0, Ok("")),
            ("tacocat", 30, Err("index out of range: 30")),
            ("hello", -1, Err("index out of range: -1")),
            ("", 1, Err("index out of range: 1")),
        ];
        for (text, i, want) in cases {
            let want = want
                .map(String::from)
                .map_err(|m| err(ErrorKind::IndexOutOfRange, m));
            assert_eq!(char_at(text, *i), want, "{text:?}.charAt({i})");
        }
    }

    #[test]
    fn index_of_follows_cel_go() {
        let cases: &[SearchCase] = &[
            ("tacocat", "", None, Ok(0)),
            ("tacocat", "ac", None, Ok(1)),
            ("tacocat", "none", None, Ok(-1)),
            ("tacocat", "", Some(3), Ok(3)),
            ("tacocat", "a", Some(3), Ok(5)),
            ("tacocat", "at", Some(3), Ok(5)),
            ("ta©o©αT", "©", None, Ok(2)),
            ("ta©o©αT", "©", Some(3), Ok(4)),
            ("ta©o©αT", "©αT", Some(3), Ok(4)),
            ("ta©o©αT", "©α", Some(5), Ok(-1)),
            ("ijk", "k", None, Ok(2)),
            ("hello wello", "hello wello", None, Ok(0)),
            ("hello wello", "ello", Some(6), Ok(7)),
            ("hello wello", "elbo room!!", None, Ok(-1)),
            ("hello wello", "elbo room!!!", None, Ok(-1)),
            ("hello mellow", "", None, Ok(0)),
            ("hello mellow", "ello", None, Ok(1)),
            ("hello mellow", "jello", None, Ok(-1)),
            ("hello mellow", "", Some(2), Ok(2)),
            ("hello mellow", "ello", Some(2), Ok(7)),
            // cel-go issue 1051, fixed before v0.27: searching an empty string is not an error.
            ("", "foo", None, Ok(-1)),
            ("", "", None, Ok(0)),
            // A start past the end gives -1 for a non-empty needle.
            ("tacocat", "a", Some(30), Ok(-1)),
            ("tacocat", "a", Some(7), Ok(-1)),
            // cel-go v0.29 (#1335): the empty string is clamped to the end, and a negative
            // offset is an error for it too.
            ("tacocat", "", Some(7), Ok(7)),
            ("tacocat", "", Some(30), Ok(7)),
            ("tacocat", "", Some(-1), Err("index out of range: -1")),
            ("tacocat", "a", Some(-1), Err("index out of range: -1")),
        ];
        for (text, sub, start, want) in cases {
            let want = want.map_err(|m| err(ErrorKind::IndexOutOfRange, m));
            assert_eq!(
                index_of(text, sub, *start),
                want,
                "{text:?}.indexOf({sub:?}, {start:?})"
            );
        }
    }

    #[test]
    fn last_index_of_follows_cel_go() {
        let cases: &[SearchCase] = &[
            ("tacocat", "", None, Ok(7)),
            ("tacocat", "at", None, Ok(5)),
            ("tacocat", "none", None, Ok(-1)),
            ("tacocat", "", Some(3), Ok(3)),
            ("tacocat", "a", Some(3), Ok(1)),
            ("ta©o©αT", "©", None, Ok(4)),
            ("ta©o©αT", "©", Some(3), Ok(2)),
            ("ta©o©αT", "©α", Some(4), Ok(4)),
            ("hello wello", "ello", Some(6), Ok(1)),
            ("hello wello", "low", None, Ok(-1)),
            ("hello wello", "elbo room!!", None, Ok(-1)),
            ("hello wello", "elbo room!!!", None, Ok(-1)),
            ("hello wello", "hello wello", None, Ok(0)),
            ("bananananana", "nana", Some(7), Ok(6)),
            ("hello mellow", "", None, Ok(12)),
            ("hello mellow", "ello", None, Ok(7)),
            ("hello mellow", "jello", None, Ok(-1)),
            ("hello mellow", "ello", Some(6), Ok(1)),
            ("", "a", None, Ok(-1)),
            ("", "", None, Ok(0)),
            ("tacocat", "a", Some(30), Ok(-1)),
            ("tacocat", "t", Some(6), Ok(6)),
            ("tacocat", "", Some(7), Ok(7)),
            ("tacocat", "", Some(30), Ok(7)),
            ("tacocat", "", Some(-1), Err("index out of range: -1")),
            ("tacocat", "a", Some(-1), Err("index out of range: -1")),
            (
                "hello mellow",
                "ello",
                Some(-1),
                Err("index out of range: -1"),
            ),
        ];
        for (text, sub, start, want) in cases {
            let want = want.map_err(|m| err(ErrorKind::IndexOutOfRange, m));
            let got = last_index_of(text, sub, *start);
            assert_eq!(got, want, "{text:?}.lastIndexOf({sub:?}, {start:?})");
        }
    }

    #[test]
    fn ascii_case_leaves_other_letters() {
        assert_eq!(lower_ascii("TacoCat"), "tacocat");
        assert_eq!(lower_ascii("TacoCÆt"), "tacocÆt");
        assert_eq!(lower_ascii("TacoCÆt Xii"), "tacocÆt xii");
        assert_eq!(upper_ascii("tacoCat"), "TACOCAT");
        assert_eq!(upper_ascii("tacoCαt"), "TACOCαT");
        assert_eq!(upper_ascii("TacoCÆt Xii"), "TACOCÆT XII");
    }

    #[test]
    fn replace_follows_go() {
        let cases: &[(&str, &str, &str, Option<i64>, &str)] = &[
            ("12 days 12 hours", "{0}", "2", None, "12 days 12 hours"),
            ("{0} days {0} hours", "{0}", "2", None, "2 days 2 hours"),
            (
                "{0} days {0} hours",
                "{0}",
                "2",
                Some(1),
                "2 days {0} hours",
            ),
            ("1 ©αT taco", "αT", "o©α", None, "1 ©o©α taco"),
            ("hello hello", "he", "we", None, "wello wello"),
            ("hello hello", "he", "we", Some(-1), "wello wello"),
            ("hello hello", "he", "we", Some(1), "wello hello"),
            ("hello hello", "he", "we", Some(0), "hello hello"),
            ("abc", "", "-", None, "-a-b-c-"),
            ("a©c", "", "-", Some(2), "-a-©c"),
        ];
        for (text, old, new, n, want) in cases {
            assert_eq!(
                replace(text, old, new, *n).as_deref(),
                Ok(*want),
                "{text:?}.replace({old:?}, {new:?}, {n:?})"
            );
        }
        let once = replace("{0} days {0} hours", "{0}", "2", Some(1));
        let chained = once.and_then(|once| replace(&once, "{0}", "23", None));
        assert_eq!(chained.as_deref(), Ok("2 days 23 hours"));
    }

    #[test]
    fn split_follows_go() {
        let cases: &[(&str, &str, Option<i64>, &[&str])] = &[
            ("hello world", " ", None, &["hello", "world"]),
            ("hello world events!", " ", Some(0), &[]),
            (
                "hello world events!",
                " ",
                Some(1),
                &["hello world events!"],
            ),
            ("o©o©o©o", "©", Some(-1), &["o", "o", "o", "o"]),
            ("hello hello hello", " ", Some(2), &["hello", "hello hello"]),
            ("a,b,", ",", None, &["a", "b", ""]),
            ("", ",", None, &[""]),
            ("", "", None, &[]),
            ("a©c", "", None, &["a", "©", "c"]),
            ("a©c", "", Some(2), &["a", "©c"]),
            ("a©c", "", Some(9), &["a", "©", "c"]),
        ];
        for (text, sep, n, want) in cases {
            let want = list(want.iter().map(|w| s(w)).collect());
            let got = split(text, sep, *n).expect("split within the limit");
            assert!(got.equals(&want), "{text:?}.split({sep:?}, {n:?}): {got:?}");
        }
    }

    #[test]
    fn substring_counts_code_points() {
        let cases: &[SubstringCase] = &[
            ("tacocat", 4, None, Ok("cat")),
            ("tacocat", 7, None, Ok("")),
            ("tacocat", 0, Some(4), Ok("taco")),
            ("tacocat", 4, Some(4), Ok("")),
            ("ta©o©αT", 2, Some(6), Ok("©o©α")),
            ("ta©o©αT", 7, Some(7), Ok("")),
            (
                "tacocat",
                40,
                None,
                Err(err(ErrorKind::IndexOutOfRange, "index out of range: 40")),
            ),
            (
                "tacocat",
                -1,
                None,
                Err(err(ErrorKind::IndexOutOfRange, "index out of range: -1")),
            ),
            (
                "tacocat",
                1,
                Some(50),
                Err(err(ErrorKind::IndexOutOfRange, "index out of range: 50")),
            ),
            (
                "tacocat",
                49,
                Some(50),
                Err(err(ErrorKind::IndexOutOfRange, "index out of range: 49")),
            ),
            (
                "tacocat",
                4,
                Some(3),
                Err(err(
                    ErrorKind::InvalidArgument,
                    "invalid substring range. start: 4, end: 3",
                )),
            ),
        ];
        for (text, start, end, want) in cases {
            let want = want.clone().map(String::from);
            assert_eq!(
                substring(text, *start, *end),
                want,
                "{text:?}.substring({start}, {end:?})"
            );
        }
    }

    #[test]
    fn trim_uses_unicode_white_space_only() {
        assert_eq!(trim(" \u{c}\n\r\t\u{b}text  "), "text");
        assert_eq!(trim("\u{85}\u{a0}\u{1680}text"), "text");
        assert_eq!(
            trim(
                "text\u{2000}\u{2001}\u{2002}\u{2003}\u{2004}\u{2004}\u{2006}\u{2007}\u{2008}\u{2009}"
            ),
            "text"
        );
        assert_eq!(
            trim("\u{200a}text\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}"),
            "text"
        );
        let zero_width = "\u{180e}text\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}";
        assert_eq!(trim(zero_width), zero_width);
        assert_eq!(trim("  \ttrim\n    "), "trim");
    }

    #[test]
    fn join_needs_strings() {
        assert_eq!(join(&[s("x"), s("y")], None), Ok("xy".to_string()));
        assert_eq!(join(&[s("x"), s("y")], Some("-")), Ok("x-y".to_string()));
        assert_eq!(join(&[], None), Ok(String::new()));
        assert_eq!(join(&[], Some("-")), Ok(String::new()));
        assert_eq!(
            join(&[s("hello"), s("mellow")], Some(" ")),
            Ok("hello mellow".to_string())
        );
        assert_eq!(
            join(&[s("x"), Value::Int(5)], Some("-")),
            Err(err(ErrorKind::NoMatchingOverload, "join: invalid input: 5"))
        );
    }

    #[test]
    fn quote_escapes_as_cel_go() {
        let cases: &[(&str, &str)] = &[
            ("first\nsecond", "\"first\\nsecond\""),
            ("bell\u{7}", "\"bell\\a\""),
            ("\u{8}backspace", "\"\\bbackspace\""),
            ("\u{c}form feed", "\"\\fform feed\""),
            ("carriage \r return", "\"carriage \\r return\""),
            ("horizontal tab\t", "\"horizontal tab\\t\""),
            ("vertical \u{b} tab", "\"vertical \\v tab\""),
            ("double \\\\ slash", "\"double \\\\\\\\ slash\""),
            (
                "two escape sequences \u{7}\n",
                "\"two escape sequences \\a\\n\"",
            ),
            ("verbatim", "\"verbatim\""),
            ("ends with \\", "\"ends with \\\\\""),
            ("\\ starts with", "\"\\\\ starts with\""),
            ("printable unicode😀", "\"printable unicode😀\""),
            ("mid string \" quote", "\"mid string \\\" quote\""),
            (
                "single-quote with \"double quote\"",
                "\"single-quote with \\\"double quote\\\"\"",
            ),
            ("size('ÿ')", "\"size('ÿ')\""),
            ("size('πέντε')", "\"size('πέντε')\""),
            ("завтра", "\"завтра\""),
            (
                "\u{1F431}\u{1F600}\u{1F61B}",
                "\"\u{1F431}\u{1F600}\u{1F61B}\"",
            ),
            ("ta©o©αT", "\"ta©o©αT\""),
        ];
        for (text, want) in cases {
            assert_eq!(quote(text).as_deref(), Ok(*want), "strings.quote({text:?})");
        }
    }

    #[test]
    fn reverse_by_code_point() {
        assert_eq!(reverse("gums"), "smug");
        assert_eq!(reverse("John Smith"), "htimS nhoJ");
        assert_eq!(reverse("ta©o©αT"), "Tα©o©at");
        assert_eq!(reverse(""), "");
    }

    #[test]
    fn format_renders_as_cel_go() {
        let nan = Value::Double(f64::NAN);
        let inf = Value::Double(f64::INFINITY);
        let neg_inf = Value::Double(f64::NEG_INFINITY);
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            ("no substitution", vec![], "no substitution"),
            (
                "str is %s and some more",
                vec![s("filler")],
                "str is filler and some more",
            ),
            ("%% and also %%", vec![], "% and also %"),
            ("%%%s%%", vec![s("text")], "%text%"),
            (
                "%s%%",
                vec![s("percent on the right")],
                "percent on the right%",
            ),
            (
                "%%%s",
                vec![s("percent on the left")],
                "%percent on the left",
            ),
            (
                "%d %d %d, %s %s %s, %d %d %d, %s %s %s",
                vec![
                    Value::Int(1),
                    Value::Int(2),
                    Value::Int(3),
                    s("A"),
                    s("B"),
                    s("C"),
                    Value::Int(4),
                    Value::Int(5),
                    Value::Int(6),
                    s("D"),
                    s("E"),
                    s("F"),
                ],
                "1 2 3, A B C, 4 5 6, D E F",
            ),
            ("%.3f", vec![Value::Double(1.2345)], "1.234"),
            (
                "%.3f + %.2f",
                vec![Value::Int(1), Value::Uint(1)],
                "1.000 + 1.00",
            ),
            (
                "this is 5 in binary: %b",
                vec![Value::Int(5)],
                "this is 5 in binary: 101",
            ),
            (
                "this is -5 in binary: %b",
                vec![Value::Int(-5)],
                "this is -5 in binary: -101",
            ),
            (
                "unsigned 64 in binary: %b",
                vec![Value::Uint(64)],
                "unsigned 64 in binary: 1000000",
            ),
            (
                "bit set from bool: %b",
                vec![Value::Bool(true)],
                "bit set from bool: 1",
            ),
            ("%b", vec![Value::Bool(false)], "0"),
            ("%o", vec![Value::Int(11)], "13"),
            ("%o", vec![Value::Int(-11)], "-13"),
            (
                "this is an unsigned octal: %o",
                vec![Value::Uint(65535)],
                "this is an unsigned octal: 177777",
            ),
            (
                "%x is 30 in hexadecimal",
                vec![Value::Int(30)],
                "1e is 30 in hexadecimal",
            ),
            (
                "%X is 20 in hexadecimal",
                vec![Value::Int(30)],
                "1E is 20 in hexadecimal",
            ),
            (
                "%x is -30 in hexadecimal",
                vec![Value::Int(-30)],
                "-1e is -30 in hexadecimal",
            ),
            (
                "%X is 6000 in hexadecimal",
                vec![Value::Uint(6000)],
                "1770 is 6000 in hexadecimal",
            ),
            ("%x", vec![Value::Int(i64::MIN)], "-8000000000000000"),
            ("%x", vec![s("Hello world!")], "48656c6c6f20776f726c6421"),
            ("%X", vec![s("Hello world!")], "48656C6C6F20776F726C6421"),
            (
                "%x",
                vec![Value::Bytes(b"byte string".as_slice().into())],
                "6279746520737472696e67",
            ),
            (
                "%x",
                vec![Value::Bytes(b"\x00\x00byte string\x00".as_slice().into())],
                "00006279746520737472696e6700",
            ),
            (
                "%X",
                vec![Value::Bytes(b"byte string".as_slice().into())],
                "6279746520737472696E67",
            ),
            ("%.6e", vec![Value::Double(1052.032911275)], "1.052033e+03"),
            ("%.4e", vec![Value::Uint(1052)], "1.0520e+03"),
            ("%.5e", vec![Value::Int(1052)], "1.05200e+03"),
            ("%e", vec![Value::Double(0.000123)], "1.230000e-04"),
            ("%.0e", vec![Value::Double(5.0)], "5e+00"),
            ("%e", vec![Value::Double(1e300)], "1.000000e+300"),
            ("%f", vec![Value::Double(2.71828)], "2.718280"),
            ("%e", vec![Value::Double(2.71828)], "2.718280e+00"),
            ("%s", vec![Value::Double(2.71)], "2.71"),
            ("%s", vec![list(vec![Value::Double(2.71)])], "[2.71]"),
            ("%s", vec![Value::Double(0.000000002)], "0.000000002"),
            (
                "%s",
                vec![list(vec![Value::Double(0.000000002)])],
                "[0.000000002]",
            ),
            ("%s", vec![Value::Double(1e21)], "1000000000000000000000"),
            ("%f", vec![nan.clone()], "NaN"),
            ("%f", vec![inf.clone()], "Infinity"),
            ("%f", vec![neg_inf.clone()], "-Infinity"),
            ("%s", vec![nan.clone()], "NaN"),
            ("%s", vec![inf.clone()], "Infinity"),
            ("%s", vec![neg_inf.clone()], "-Infinity"),
            (
                "%s",
                vec![list(vec![nan.clone(), inf.clone(), neg_inf.clone()])],
                "[NaN, Infinity, -Infinity]",
            ),
            ("%d", vec![Value::Uint(64)], "64"),
            ("null: %s", vec![Value::Null], "null: null"),
            ("%s", vec![Value::Int(999999999999)], "999999999999"),
            (
                "some bytes: %s",
                vec![Value::Bytes(b"xyz".as_slice().into())],
                "some bytes: xyz",
            ),
            (
                "type is %s",
                vec![Value::Type(Type::String)],
                "type is string",
            ),
            ("%s", vec![Value::Type(Type::list(Type::Dyn))], "list"),
            (
                "%s",
                vec![Value::Type(Type::Timestamp)],
                "google.protobuf.Timestamp",
            ),
            (
                "true bool: %s, false bool: %s",
                vec![Value::Bool(true), Value::Bool(false)],
                "true bool: true, false bool: false",
            ),
            (
                "dynIntStr: %s dynDoubleStr: %s",
                vec![Value::Int(32), Value::Double(56.8)],
                "dynIntStr: 32 dynDoubleStr: 56.8",
            ),
            (
                "dynamic hex int: %x",
                vec![Value::Int(22)],
                "dynamic hex int: 16",
            ),
            (
                "dynamic hex int: %X (uppercase)",
                vec![Value::Int(26)],
                "dynamic hex int: 1A (uppercase)",
            ),
            (
                "dynamic hex int: %x (unsigned)",
                vec![Value::Uint(500)],
                "dynamic hex int: 1f4 (unsigned)",
            ),
            (
                "dynamic double: %.3f",
                vec![Value::Double(4.5)],
                "dynamic double: 4.500",
            ),
            (
                "NaN: %d, infinity: %d, -infinity: %d",
                vec![nan.clone(), inf.clone(), neg_inf.clone()],
                "NaN: NaN, infinity: Infinity, -infinity: -Infinity",
            ),
            (
                "NaN: %e, infinity: %e, -infinity: %e",
                vec![nan, inf, neg_inf],
                "NaN: NaN, infinity: Infinity, -infinity: -Infinity",
            ),
            ("%d", vec![Value::Double(2.5)], "2.5"),
            ("%.1f", vec![Value::Double(0.25)], "0.2"),
            ("%.2f", vec![Value::Double(-0.0)], "-0.00"),
            ("%.2d", vec![Value::Int(7)], "7"),
            (
                "%s",
                vec![list(vec![list(vec![
                    Value::Int(1),
                    Value::Int(2),
                    list(vec![Value::Double(3.0), Value::Int(4)]),
                ])])],
                "[[1, 2, [3, 4]]]",
            ),
            (
                "%s",
                vec![list(vec![s("abc"), Value::Double(3.14), Value::Null])],
                "[abc, 3.14, null]",
            ),
            ("%s", vec![list(vec![])], "[]"),
            ("%s", vec![map(vec![])], "{}"),
            (
                "map with multiple key types: %s",
                vec![map(vec![
                    (Value::Int(1), s("value1")),
                    (Value::Uint(2), s("value2")),
                    (Value::Bool(true), Value::Double(f64::NAN)),
                ])],
                "map with multiple key types: {1: value1, 2: value2, true: NaN}",
            ),
            (
                "%s",
                vec![map(vec![
                    (s("key1"), Value::Bytes(b"xyz".as_slice().into())),
                    (s("key5"), Value::Null),
                    (s("key4"), Value::Bool(true)),
                    (s("key3"), Value::Double(2.71828)),
                ])],
                "{key1: xyz, key3: 2.71828, key4: true, key5: null}",
            ),
            ("ünïcödé %s ✓", vec![s("ok")], "ünïcödé ok ✓"),
            (
                "extra args are ignored: %s",
                vec![s("a"), s("b")],
                "extra args are ignored: a",
            ),
        ];
        for (fmt, args, want) in cases {
            assert_eq!(
                format(fmt, &args),
                Ok(want.to_string()),
                "{fmt:?}.format({args:?})"
            );
        }
    }

    #[test]
    fn format_delegates_times_to_the_time_module() {
        let ts = Timestamp::from_nanos(1_675_467_080_000_000_000).expect("in range");
        let dur = Duration::from_nanos(6_347_000_000_000).expect("in range");
        let args = [Value::Timestamp(ts), Value::Duration(dur)];
        let want = format!("{} {}", format_timestamp(ts), format_duration(dur));
        assert_eq!(format("%s %s", &args), Ok(want));
        let nested = [list(vec![s("abc"), Value::Timestamp(ts)])];
        assert_eq!(
            format("%s", &nested),
            Ok(format!("[abc, {}]", format_timestamp(ts)))
        );
        let keyed = [map(vec![
            (Value::Int(6), Value::Duration(dur)),
            (s("strKey"), s("x")),
        ])];
        assert_eq!(
            format("%s", &keyed),
            Ok(format!("{{6: {}, strKey: x}}", format_duration(dur)))
        );
    }

    #[test]
    fn format_prints_conditions_and_resources_as_maps() {
        use crate::cel::host::{Condition, Resource};
        let zero = [Value::Condition(Condition::zero())];
        assert_eq!(
            format("%s", &zero),
            Ok(
                "{created_time: , last_transition_time: , last_updated_time: , message: , \
                observed_generation: 0, reason: , status: , type: }"
                    .to_string()
            )
        );
        let json = serde_json::json!({"id": "c1", "generation": 2, "labels": {"env": "dev"}});
        let resource = [Value::Resource(Arc::new(Resource::from_json(json)))];
        assert_eq!(
            format("%s", &resource),
            Ok("{generation: 2, id: c1, labels: {env: dev}}".to_string())
        );
        assert_eq!(
            format("%d", &zero),
            Err(err(
                ErrorKind::NoMatchingOverload,
                "error during formatting: decimal clause can only be used on ints, uints, and \
                 doubles, was given map"
            ))
        );
    }

    #[test]
    fn format_errors_as_cel_go() {
        use ErrorKind::{IndexOutOfRange, InvalidArgument, NoMatchingOverload};
        let dur = Value::Duration(Duration::from_nanos(1_802_000_000_000).expect("in range"));
        let cases: Vec<(&str, Vec<Value>, ErrorKind, &str)> = vec![
            (
                "%a",
                vec![Value::Int(1)],
                InvalidArgument,
                "could not parse formatting clause: unrecognized formatting clause \"a\"",
            ),
            (
                "double is %E",
                vec![Value::Double(0.5)],
                InvalidArgument,
                "could not parse formatting clause: unrecognized formatting clause \"E\"",
            ),
            (
                "%d %d %d",
                vec![Value::Int(0), Value::Int(1)],
                IndexOutOfRange,
                "index 2 out of range",
            ),
            (
                "%s %s",
                vec![s("abc")],
                IndexOutOfRange,
                "index 1 out of range",
            ),
            ("filler %", vec![], IndexOutOfRange, "index 0 out of range"),
            (
                "filler %",
                vec![s("x")],
                InvalidArgument,
                "unexpected end of string",
            ),
            (
                "double is %.34",
                vec![Value::Double(5.0)],
                InvalidArgument,
                "could not parse formatting clause: error while parsing precision: could not find end of precision specifier",
            ),
            (
                "%.f",
                vec![Value::Double(5.0)],
                InvalidArgument,
                "could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing \"\": invalid syntax",
            ),
            (
                "%.99999999999999999999f",
                vec![Value::Double(5.0)],
                InvalidArgument,
                "could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing \"99999999999999999999\": value out of range",
            ),
            (
                "%.9999999f",
                vec![Value::Double(3.14)],
                InvalidArgument,
                "could not parse formatting clause: error while parsing precision: precision 9999999 exceeds maximum allowed precision 100",
            ),
            (
                "%é",
                vec![Value::Int(1)],
                InvalidArgument,
                "could not parse formatting clause: unrecognized formatting clause \"Ã\"",
            ),
            (
                "string is %b",
                vec![s("abc")],
                NoMatchingOverload,
                "error during formatting: only ints, uints, and bools can be formatted as binary, was given string",
            ),
            (
                "%d",
                vec![dur],
                NoMatchingOverload,
                "error during formatting: decimal clause can only be used on ints, uints, and doubles, was given google.protobuf.Duration",
            ),
            (
                "octal: %o",
                vec![s("a string")],
                NoMatchingOverload,
                "error during formatting: octal clause can only be used on ints and uints, was given string",
            ),
            (
                "double is %x",
                vec![Value::Double(0.5)],
                NoMatchingOverload,
                "error during formatting: only ints, uints, bytes, and strings can be formatted as hex, was given double",
            ),
            (
                "null: %d",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: decimal clause can only be used on ints, uints, and doubles, was given null_type",
            ),
            (
                "null: %e",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: scientific clause can only be used on ints, uints, and doubles, was given null_type",
            ),
            (
                "null: %f",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: fixed-point clause can only be used on ints, uints, and doubles, was given null_type",
            ),
            (
                "null: %x",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: only ints, uints, bytes, and strings can be formatted as hex, was given null_type",
            ),
            (
                "null: %X",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: only ints, uints, bytes, and strings can be formatted as hex, was given null_type",
            ),
            (
                "null: %b",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: only ints, uints, and bools can be formatted as binary, was given null_type",
            ),
            (
                "null: %o",
                vec![Value::Null],
                NoMatchingOverload,
                "error during formatting: octal clause can only be used on ints and uints, was given null_type",
            ),
            (
                "double is %f",
                vec![Value::Bool(true)],
                NoMatchingOverload,
                "error during formatting: fixed-point clause can only be used on ints, uints, and doubles, was given bool",
            ),
            (
                "%d",
                vec![list(vec![])],
                NoMatchingOverload,
                "error during formatting: decimal clause can only be used on ints, uints, and doubles, was given list",
            ),
        ];
        for (fmt, args, kind, message) in cases {
            assert_eq!(
                format(fmt, &args),
                Err(err(kind, message)),
                "{fmt:?}.format({args:?})"
            );
        }
    }

    #[test]
    fn check_format_is_the_compile_time_half() {
        let fail = |arg: Option<usize>, message: &str| {
            Err(FormatCheckError {
                arg,
                message: message.to_string(),
            })
        };
        assert_eq!(
            check_format("%s and %d", &[Type::String, Type::Int]),
            Ok(())
        );
        assert_eq!(
            check_format("%d %f %e", &[Type::Dyn, Type::Uint, Type::Double]),
            Ok(())
        );
        assert_eq!(check_format("%x", &[Type::Resource]), Ok(()));
        assert_eq!(check_format("%s", &[Type::list(Type::Int)]), Ok(()));
        assert_eq!(
            check_format("%s %s", &[Type::String, Type::String, Type::String]),
            fail(
                None,
                "too many arguments supplied to string.format (expected 2, got 3)"
            )
        );
        assert_eq!(
            check_format("%s %s", &[Type::String]),
            fail(None, "index 1 out of range")
        );
        assert_eq!(
            check_format("%j", &[Type::Int]),
            fail(
                None,
                "could not parse formatting clause: unrecognized formatting clause \"j\""
            )
        );
        assert_eq!(
            check_format("int is %d", &[Type::Null]),
            fail(
                Some(0),
                "error during formatting: decimal clause can only be used on ints, uints, and doubles, was given null_type"
            )
        );
        assert_eq!(
            check_format("%s %o", &[Type::String, Type::Double]),
            fail(
                Some(1),
                "error during formatting: octal clause can only be used on ints and uints, was given double"
            )
        );
        assert_eq!(
            check_format("%X is a double", &[Type::map(Type::String, Type::Int)]),
            fail(
                Some(0),
                "error during formatting: only ints, uints, bytes, and strings can be formatted as hex, was given map"
            )
        );
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
