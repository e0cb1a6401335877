//! The standard and extension functions: their static signatures (for the checker) and their
//! one runtime implementation (for the interpreter and the JIT's helper calls).
//!
//! Invariant: [`resolve`] accepts a call only if [`call`] has an implementation for some runtime
//! values of those static types; everything `dyn` is re-checked by [`call`] at run time.

use super::re2;
use super::strings;
use super::time::{self, TimePart, Timestamp};
use super::typed::Builtin;
use super::types::Type;
use super::value::{EvalError, EvalResult, Value, check_size};
use std::sync::Arc;

/// Why a call did not resolve.
#[derive(Debug, PartialEq, Eq)]
pub enum ResolveError {
    /// No function of that name (in that call style).
    Unknown,
    /// The function exists but not for these argument types.
    NoOverload,
}

/// A parameter pattern of a signature.
#[derive(Clone, Copy)]
enum P {
    Int,
    Str,
    Bytes,
    Ts,
    Dur,
    List,
    ListStr,
    Map,
    Any,
}

impl P {
    fn accepts(self, ty: &Type) -> bool {
        let want = match self {
            P::Any => return true,
            P::Int => Type::Int,
            P::Str => Type::String,
            P::Bytes => Type::Bytes,
            P::Ts => Type::Timestamp,
            P::Dur => Type::Duration,
            P::List => Type::list(Type::Dyn),
            P::ListStr => Type::list(Type::String),
            P::Map => Type::map(Type::Dyn, Type::Dyn),
        };
        ty.assignable_to(&want)
    }
}

/// One overload: receiver style or global, parameter patterns (receiver first), result type.
struct Sig(bool, &'static [P], fn(&[Type]) -> Type);

fn int(_: &[Type]) -> Type {
    Type::Int
}
fn string(_: &[Type]) -> Type {
    Type::String
}
fn boolean(_: &[Type]) -> Type {
    Type::Bool
}

/// Every builtin but the time accessors (named by [`TimePart`]'s own table), with its name as
/// written in CEL: the one spelling the checker resolves and every printer prints.
const BUILTINS: &[(&str, Builtin)] = {
    use Builtin::*;
    &[
        ("condition", Condition),
        ("size", Size),
        ("contains", Contains),
        ("startsWith", StartsWith),
        ("endsWith", EndsWith),
        ("matches", Matches),
        ("int", ToInt),
        ("uint", ToUint),
        ("double", ToDouble),
        ("string", ToString),
        ("bool", ToBool),
        ("bytes", ToBytes),
        ("timestamp", ToTimestamp),
        ("duration", ToDuration),
        ("dyn", Dyn),
        ("type", TypeOf),
        ("charAt", CharAt),
        ("indexOf", IndexOf),
        ("lastIndexOf", LastIndexOf),
        ("lowerAscii", LowerAscii),
        ("upperAscii", UpperAscii),
        ("replace", Replace),
        ("split", Split),
        ("substring", Substring),
        ("trim", Trim),
        ("join", Join),
        ("strings.quote", Quote),
        ("reverse", Reverse),
        ("format", Format),
    ]
};

/// The builtin a name denotes, before overloads are considered.
fn builtin(name: &str) -> Option<Builtin> {
    BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .or_else(|| TimePart::from_method(name).map(Builtin::TimePart))
}

fn signatures(f: Builtin) -> Vec<Sig> {
    use P::*;
    fn s(recv: bool, params: &'static [P], ret: fn(&[Type]) -> Type) -> Sig {
        Sig(recv, params, ret)
    }
    match f {
        Builtin::Condition => vec![s(false, &[Str], |_| Type::Condition)],
        Builtin::Size => vec![
            s(false, &[Str], int),
            s(false, &[Bytes], int),
            s(false, &[List], int),
            s(false, &[Map], int),
            s(true, &[Str], int),
            s(true, &[Bytes], int),
            s(true, &[List], int),
            s(true, &[Map], int),
        ],
        Builtin::Contains | Builtin::StartsWith | Builtin::EndsWith => {
            vec![s(true, &[Str, Str], boolean)]
        }
        Builtin::Matches => vec![
            s(true, &[Str, Str], boolean),
            s(false, &[Str, Str], boolean),
        ],
        Builtin::ToInt => vec![s(false, &[Any], int)],
        Builtin::ToUint => vec![s(false, &[Any], |_| Type::Uint)],
        Builtin::ToDouble => vec![s(false, &[Any], |_| Type::Double)],
        Builtin::ToString => vec![s(false, &[Any], string)],
        Builtin::ToBool => vec![s(false, &[Any], boolean)],
        Builtin::ToBytes => vec![s(false, &[Any], |_| Type::Bytes)],
        Builtin::ToTimestamp => vec![s(false, &[Any], |_| Type::Timestamp)],
        Builtin::ToDuration => vec![s(false, &[Any], |_| Type::Duration)],
        Builtin::Dyn => vec![s(false, &[Any], |_| Type::Dyn)],
        Builtin::TypeOf => vec![s(false, &[Any], |_| Type::Type)],
        Builtin::TimePart(_) => vec![
            s(true, &[Ts], int),
            s(true, &[Ts, Str], int),
            s(true, &[Dur], int),
        ],
        Builtin::CharAt => vec![s(true, &[Str, Int], string)],
        Builtin::IndexOf | Builtin::LastIndexOf => {
            vec![s(true, &[Str, Str], int), s(true, &[Str, Str, Int], int)]
        }
        Builtin::LowerAscii | Builtin::UpperAscii | Builtin::Trim | Builtin::Reverse => {
            vec![s(true, &[Str], string)]
        }
        Builtin::Replace => vec![
            s(true, &[Str, Str, Str], string),
            s(true, &[Str, Str, Str, Int], string),
        ],
        Builtin::Split => vec![
            s(true, &[Str, Str], |_| Type::list(Type::String)),
            s(true, &[Str, Str, Int], |_| Type::list(Type::String)),
        ],
        Builtin::Substring => vec![
            s(true, &[Str, Int], string),
            s(true, &[Str, Int, Int], string),
        ],
        Builtin::Join => vec![
            s(true, &[ListStr], string),
            s(true, &[ListStr, Str], string),
        ],
        Builtin::Quote => vec![s(false, &[Str], string)],
        Builtin::Format => vec![s(true, &[Str, List], string)],
    }
}

/// Resolves a call by name, style and static argument types (receiver first) to a builtin and
/// its result type.
pub fn resolve(name: &str, receiver: bool, args: &[Type]) -> Result<(Builtin, Type), ResolveError> {
    let f = builtin(name).ok_or(ResolveError::Unknown)?;
    let sigs = signatures(f);
    if !sigs.iter().any(|Sig(r, _, _)| *r == receiver) {
        return Err(ResolveError::Unknown);
    }
    let mut matching = sigs.iter().filter(|Sig(r, params, _)| {
        *r == receiver
            && params.len() == args.len()
            && params.iter().zip(args).all(|(p, t)| p.accepts(t))
    });
    let Some(Sig(_, _, ret)) = matching.next() else {
        return Err(ResolveError::NoOverload);
    };
    // Ambiguous matches only arise from `dyn` arguments; their result is known at run time only.
    let ty = if matching.next().is_some() {
        Type::Dyn
    } else {
        ret(args)
    };
    Ok((f, ty))
}

/// The printable name of a builtin, as written in CEL.
pub fn name(f: Builtin) -> &'static str {
    match f {
        Builtin::TimePart(p) => p.method_name(),
        f => BUILTINS
            .iter()
            .find(|(_, b)| *b == f)
            .map_or("", |(n, _)| n),
    }
}

/// Whether a builtin's result depends only on its arguments (so constant calls can be folded).
pub fn is_pure(f: Builtin) -> bool {
    f != Builtin::Condition
}

fn str_arg(f: Builtin, args: &[Value], i: usize) -> Result<&str, EvalError> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(no_overload(f, args)),
    }
}

fn int_arg(f: Builtin, args: &[Value], i: usize) -> Result<i64, EvalError> {
    match args.get(i) {
        Some(Value::Int(v)) => Ok(*v),
        _ => Err(no_overload(f, args)),
    }
}

fn opt_int_arg(f: Builtin, args: &[Value], i: usize) -> Result<Option<i64>, EvalError> {
    if args.len() > i {
        int_arg(f, args, i).map(Some)
    } else {
        Ok(None)
    }
}

fn no_overload(f: Builtin, args: &[Value]) -> EvalError {
    let refs: Vec<&Value> = args.iter().collect();
    EvalError::no_overload(name(f), &refs)
}

/// A string result as a value. Results no longer than an argument can only pass the size limit
/// when the argument came from outside CEL (a resource field); they are held to it all the same,
/// so that no string CEL builds exceeds it.
fn string_value(s: String) -> EvalResult {
    check_size("string", s.len())?;
    Ok(Value::String(Arc::from(s)))
}

/// Calls a builtin other than `condition` (which needs the resource: the evaluators handle it)
/// on argument values, receiver first.
pub fn call(f: Builtin, args: &[Value]) -> EvalResult {
    use Builtin::*;
    match f {
        Size => size(f, args),
        Contains | StartsWith | EndsWith => {
            let (s, t) = (str_arg(f, args, 0)?, str_arg(f, args, 1)?);
            Ok(Value::Bool(match f {
                Contains => s.contains(t),
                StartsWith => s.starts_with(t),
                _ => s.ends_with(t),
            }))
        }
        Matches => {
            let (s, pattern) = (str_arg(f, args, 0)?, str_arg(f, args, 1)?);
            let re = compile_regex(pattern)?;
            Ok(Value::Bool(re.is_match(s)))
        }
        ToInt | ToUint | ToDouble | ToString | ToBool | ToBytes | ToTimestamp | ToDuration => {
            convert(f, args)
        }
        Dyn => args.first().cloned().ok_or_else(|| no_overload(f, args)),
        TypeOf => args
            .first()
            .map(|v| Value::Type(v.runtime_type()))
            .ok_or_else(|| no_overload(f, args)),
        TimePart(part) => time_part(f, part, args),
        Condition => Err(no_overload(f, args)),
        _ => string_ext(f, args),
    }
}

/// Compiles a `matches` pattern: RE2 syntax as cel-go (Go's `regexp`) reads it, translated by
/// [`re2::translate`] for the regex crate.
pub fn compile_regex(pattern: &str) -> Result<regex::Regex, EvalError> {
    let translated = re2::translate(pattern)
        .map_err(|why| EvalError::invalid(format!("invalid regex {pattern:?}: {why}")))?;
    regex::Regex::new(&translated).map_err(|e| {
        // The regex crate's syntax errors draw the pattern over several lines; keep the last,
        // which says what is wrong.
        let text = e.to_string();
        let why = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("invalid syntax");
        EvalError::invalid(format!(
            "invalid regex {pattern:?}: {}",
            why.trim_start_matches("error: ")
        ))
    })
}

fn size(f: Builtin, args: &[Value]) -> EvalResult {
    let n = match args.first() {
        Some(Value::String(s)) => s.chars().count(),
        Some(Value::Bytes(b)) => b.len(),
        Some(Value::List(l)) => l.len(),
        Some(Value::Map(m)) => m.len(),
        _ => return Err(no_overload(f, args)),
    };
    Ok(Value::Int(n as i64))
}

fn time_part(f: Builtin, part: TimePart, args: &[Value]) -> EvalResult {
    let tz = match args.get(1) {
        None => None,
        Some(Value::String(s)) => Some(&**s),
        Some(_) => return Err(no_overload(f, args)),
    };
    match (args.first(), tz) {
        (Some(Value::Timestamp(t)), tz) => time::timestamp_part(*t, part, tz).map(Value::Int),
        (Some(Value::Duration(d)), None) => time::duration_part(*d, part).map(Value::Int),
        _ => Err(no_overload(f, args)),
    }
}

fn string_ext(f: Builtin, args: &[Value]) -> EvalResult {
    use Builtin::*;
    match f {
        Join => {
            let Some(Value::List(items)) = args.first() else {
                return Err(no_overload(f, args));
            };
            let sep = if args.len() > 1 {
                Some(str_arg(f, args, 1)?)
            } else {
                None
            };
            strings::join(items, sep).and_then(string_value)
        }
        Format => {
            let Some(Value::List(items)) = args.get(1) else {
                return Err(no_overload(f, args));
            };
            strings::format(str_arg(f, args, 0)?, items).and_then(string_value)
        }
        Quote => strings::quote(str_arg(f, args, 0)?).and_then(string_value),
        _ => {
            let s = str_arg(f, args, 0)?;
            match f {
                CharAt => strings::char_at(s, int_arg(f, args, 1)?).and_then(string_value),
                IndexOf => strings::index_of(s, str_arg(f, args, 1)?, opt_int_arg(f, args, 2)?)
                    .map(Value::Int),
                LastIndexOf => {
                    strings::last_index_of(s, str_arg(f, args, 1)?, opt_int_arg(f, args, 2)?)
                        .map(Value::Int)
                }
                LowerAscii => string_value(strings::lower_ascii(s)),
                UpperAscii => string_value(strings::upper_ascii(s)),
                Trim => string_value(strings::trim(s)),
                Reverse => string_value(strings::reverse(s)),
                Replace => strings::replace(
                    s,
                    str_arg(f, args, 1)?,
                    str_arg(f, args, 2)?,
                    opt_int_arg(f, args, 3)?,
                )
                .and_then(string_value),
                Split => strings::split(s, str_arg(f, args, 1)?, opt_int_arg(f, args, 2)?),
                Substring => strings::substring(s, int_arg(f, args, 1)?, opt_int_arg(f, args, 2)?)
                    .and_then(string_value),
                _ => Err(no_overload(f, args)),
            }
        }
    }
}

/// A conversion out of the target's range, in cel-go's words: `integer overflow` for `int`,
/// `unsigned integer overflow` for `uint`.
fn range_error(what: &str) -> EvalError {
    match what {
        "uint" => EvalError::overflow("unsigned integer"),
        _ => EvalError::overflow("integer"),
    }
}

/// Text that does not convert, in cel-go's words (`type conversion error from 'string' to
/// 'int'`: Go's `strconv` error is not shown).
fn parse_error(what: &str, _text: &str) -> EvalError {
    EvalError::invalid(time::conversion_error_text(what))
}

/// The type conversions `int uint double string bool bytes timestamp duration`.
fn convert(f: Builtin, args: &[Value]) -> EvalResult {
    use Value::*;
    let [arg] = args else {
        return Err(no_overload(f, args));
    };
    match (f, arg) {
        (Builtin::ToInt, Int(_)) | (Builtin::ToUint, Uint(_)) | (Builtin::ToDouble, Double(_)) => {
            Ok(arg.clone())
        }
        (Builtin::ToString, String(_))
        | (Builtin::ToBool, Bool(_))
        | (Builtin::ToBytes, Bytes(_)) => Ok(arg.clone()),
        (Builtin::ToTimestamp, Timestamp(_)) | (Builtin::ToDuration, Duration(_)) => {
            Ok(arg.clone())
        }
        (Builtin::ToInt, Uint(u)) => i64::try_from(*u).map(Int).map_err(|_| range_error("int")),
        (Builtin::ToInt, Double(d)) => double_to_int(*d).map(Int),
        (Builtin::ToInt, String(s)) => s.parse::<i64>().map(Int).map_err(|_| parse_error("int", s)),
        (Builtin::ToInt, Timestamp(t)) => Ok(Int(t.unix_seconds())),
        // cel-go: the nanoseconds (cel-cpp has no such overload).
        (Builtin::ToInt, Duration(d)) => d.nanos_i64().map(Int),
        (Builtin::ToUint, Int(i)) => u64::try_from(*i).map(Uint).map_err(|_| range_error("uint")),
        (Builtin::ToUint, Double(d)) => double_to_uint(*d).map(Uint),
        // Go's `strconv.ParseUint` takes no sign; Rust's parser would take a `+`.
        (Builtin::ToUint, String(s)) if s.starts_with('+') => Err(parse_error("uint", s)),
        (Builtin::ToUint, String(s)) => s
            .parse::<u64>()
            .map(Uint)
            .map_err(|_| parse_error("uint", s)),
        (Builtin::ToDouble, Int(i)) => Ok(Double(*i as f64)),
        (Builtin::ToDouble, Uint(u)) => Ok(Double(*u as f64)),
        (Builtin::ToDouble, String(s)) => parse_double(s).map(Double),
        (Builtin::ToString, _) => to_string(arg).and_then(string_value),
        (Builtin::ToBool, String(s)) => parse_bool(s).map(Bool),
        (Builtin::ToBytes, String(s)) => {
            check_size("bytes", s.len())?;
            Ok(Bytes(Arc::from(s.as_bytes())))
        }
        (Builtin::ToTimestamp, String(s)) => time::timestamp_from_string(s).map(Timestamp),
        (Builtin::ToTimestamp, Int(i)) => self::Timestamp::from_unix_seconds(*i).map(Timestamp),
        (Builtin::ToDuration, String(s)) => time::duration_from_string(s).map(Duration),
        _ => Err(no_overload(f, args)),
    }
}

fn double_to_int(d: f64) -> Result<i64, EvalError> {
    // Valid doubles lie strictly inside (-2^63 - 1, 2^63): both ends are out of range, as in cel-go.
    if d.is_nan() || d <= -9223372036854775809.0 || d >= 9223372036854775807.0 {
        return Err(range_error("int"));
    }
    Ok(d as i64)
}

fn double_to_uint(d: f64) -> Result<u64, EvalError> {
    // As cel-go: any negative double is out of range, even one that truncates to 0 (`-0.5`);
    // `-0.0` is not negative, and NaN is in no range.
    if !(0.0..18446744073709551615.0).contains(&d) {
        return Err(range_error("uint"));
    }
    Ok(d as u64)
}

/// `double(string)` as cel-go parses it (Go's `strconv.ParseFloat`): decimal or hexadecimal
/// (`0x1.8p1`, the `p` exponent required) floating-point text with optional `_` between digits;
/// `inf`/`infinity` with an optional sign and `nan` without one, in any case; no white space; a
/// finite number too large for a double is an error, not an infinity.
fn parse_double(s: &str) -> Result<f64, EvalError> {
    let fail = || parse_error("double", s);
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Ok(sign * f64::INFINITY);
    }
    if body.eq_ignore_ascii_case("nan") && body.len() == s.len() {
        return Ok(f64::NAN);
    }
    let owned;
    let body = if body.contains('_') {
        if !go_underscores_ok(body) {
            return Err(fail());
        }
        owned = body.replace('_', "");
        owned.as_str()
    } else {
        body
    };
    // Rust's parser takes its own spellings of infinity and NaN; those were handled above.
    if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(fail());
    }
    let magnitude = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) => parse_hex_float(hex).ok_or_else(fail)?,
        None => body.parse::<f64>().map_err(|_| fail())?,
    };
    if magnitude.is_infinite() {
        return Err(fail());
    }
    Ok(sign * magnitude)
}

/// Go's rule for `_` in number text (after the sign): only between digits, or between a base
/// prefix and a digit.
fn go_underscores_ok(body: &str) -> bool {
    let bytes = body.as_bytes();
    let hex = bytes.len() >= 2 && bytes[0] == b'0' && matches!(bytes[1], b'x' | b'X');
    let (mut saw, start) = if hex { (b'0', 2) } else { (b'^', 0) };
    for &b in &bytes[start..] {
        if b.is_ascii_digit() || (hex && b.is_ascii_hexdigit()) {
            saw = b'0';
        } else if b == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

/// The digits of a hexadecimal float after `0x`: a mantissa with an optional point, then a
/// required `p` and a signed decimal exponent of two. Rounds to nearest, as Go does, keeping a
/// sticky bit for digits beyond the 32 that fit in a `u128`.
fn parse_hex_float(text: &str) -> Option<f64> {
    let (mantissa, exponent) = text.split_once(['p', 'P'])?;
    let exponent: i64 = match exponent.strip_prefix('+') {
        Some(digits) if !digits.starts_with(['+', '-']) => digits.parse().ok()?,
        _ => exponent.parse().ok()?,
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let (mut m, mut scale, mut sticky) = (0u128, 0i64, false);
    for (i, c) in int_part.chars().chain(frac_part.chars()).enumerate() {
        let digit = u128::from(c.to_digit(16)?);
        let fractional = i >= int_part.len();
        if m >> 124 == 0 {
            m = m << 4 | digit;
            scale -= if fractional { 4 } else { 0 };
        } else {
            sticky |= digit != 0;
            scale += if fractional { 0 } else { 4 };
        }
    }
    let exponent = exponent.clamp(-100_000, 100_000) + scale;
    let m = (m | u128::from(sticky)) as f64;
    // Scale in steps that cannot overflow or underflow an intermediate on their own.
    let mut value = m;
    let mut e = exponent;
    while e != 0 && value != 0.0 && value.is_finite() {
        let step = e.clamp(-1000, 1000);
        value *= 2f64.powi(step as i32);
        e -= step;
    }
    Some(value)
}

/// `bool(string)` as Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Result<bool, EvalError> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(parse_error("bool", s)),
    }
}

/// `string(x)` for the scalar types.
pub fn to_string(v: &Value) -> Result<String, EvalError> {
    Ok(match v {
        Value::String(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Bool(b) => b.to_string(),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => {
                return Err(EvalError::invalid(
                    "invalid UTF-8 in bytes, cannot convert to string",
                ));
            }
        },
        Value::Timestamp(t) => time::format_timestamp(*t),
        Value::Duration(d) => time::format_duration(*d),
        _ => return Err(EvalError::no_overload("string", &[v])),
    })
}

/// Formats a double as cel-go (`strconv.FormatFloat(d, 'g', -1, 64)`) and cel-cpp do: the
/// shortest round-trip digits, in exponent form when the decimal exponent is below -4 or at
/// least 6 (`1e+06`, `1.5e-07`, `123456`).
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits with the exponent: `1.2345e5`.
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if d != 0.0 && !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{d}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::value::{ErrorKind, MAX_VALUE_BYTES};

    #[test]
    fn each_builtin_has_one_name_and_resolves_by_it() {
        let parts = TimePart::ALL.iter().map(|(p, _)| Builtin::TimePart(*p));
        let all: Vec<Builtin> = BUILTINS.iter().map(|(_, f)| *f).chain(parts).collect();
        let mut names: Vec<&str> = all.iter().map(|f| name(*f)).collect();
        for (f, n) in all.iter().zip(&names) {
            assert!(!n.is_empty(), "{f:?} has no name");
            assert_eq!(builtin(n), Some(*f), "{n}");
            assert!(!signatures(*f).is_empty(), "{n} has no signature");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len(), "a name given twice");
        assert_eq!(builtin("getYear"), None);
    }

    #[test]
    fn results_from_oversized_input_are_held_to_the_limit_too() {
        // Only text from outside CEL (a resource field) can be this large; what CEL builds from
        // it is still bounded.
        let big = Value::string(&"a".repeat(MAX_VALUE_BYTES + 1));
        for (f, what) in [
            (Builtin::LowerAscii, "string"),
            (Builtin::Trim, "string"),
            (Builtin::Reverse, "string"),
            (Builtin::ToBytes, "bytes"),
        ] {
            let err = call(f, std::slice::from_ref(&big)).expect_err("too large");
            assert_eq!(err.kind, ErrorKind::TooLarge, "{f:?}");
            assert_eq!(
                err.message,
                format!("{what} exceeds the 1048576-byte limit")
            );
        }
        // Identity conversions build nothing.
        assert!(call(Builtin::ToString, std::slice::from_ref(&big)).is_ok());
        let small = Value::string("aB");
        assert!(matches!(call(Builtin::UpperAscii, &[small]), Ok(Value::String(s)) if &*s == "AB"));
    }
}
