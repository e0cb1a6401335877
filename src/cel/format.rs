//! `fmt.format(args)` of the cel-go string extensions: cel-go's second formatter
//! (`formatting_v2.go`: no locale, `%s` prints strings inside lists and maps unquoted), and
//! [`check_format`], the compile-time half cel-go's checker runs (the `ext.Strings()`
//! validator) when the format string is a literal and the argument a list literal; the
//! checker calls it with the elements' types as Go's checker knows them.
//!
//! Takes the format string and the argument values; gives the text or an [`EvalError`] with
//! cel-go's message. Its expected answers are the `format` sections of
//! `tests/data/eval/strings.txt`, run through both engines.
//!
//! Invariant: no output grows past [`crate::cel::value::MAX_VALUE_BYTES`]; the check comes before
//! each piece is appended.

use super::ast::{BinaryOp, MacroKind};
use super::time::{format_duration, format_timestamp_utc};
use super::typed::{Builtin, TExpr, TExprKind, Var};
use super::types::Type;
use super::value::{ErrorKind, EvalError, Map, Value, check_size};
use crate::cel::host::CONDITION_FIELDS;

/// The precision `%f` and `%e` use when the clause gives none.
const DEFAULT_PRECISION: usize = 6;

/// The largest precision a `%.Nf` / `%.Ne` clause may ask for, as in cel-go since #1292 (v0.27
/// had no limit); without one a rule could make a single call allocate gigabytes.
const MAX_PRECISION: usize = 100;

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

/// Who walks a format string: they check a clause's pieces in different orders.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walker {
    /// Evaluation: an argument for the clause first (cel-go's `formatListArgs.Arg` fails on a
    /// missing one), then the rest of the clause.
    Eval,
    /// cel-go's checker, whose `Arg` never fails: a `%` ending the text first, then the
    /// argument, then the clause.
    Check,
}

/// Walks a format string as cel-go does, handing each piece to `on_piece`; returns how many
/// clauses it saw. Checks, in cel-go's order for `walker`: an argument for the clause and the
/// text after the `%`, then the clause.
fn walk<'a>(
    fmt: &'a str,
    n_args: usize,
    walker: Walker,
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
        let at_end = pct + 1 >= fmt.len();
        if walker == Walker::Check && at_end {
            return Err(EvalError::invalid("unexpected end of string"));
        }
        if arg >= n_args {
            return Err(EvalError::new(
                ErrorKind::IndexOutOfRange,
                format!("index {arg} out of range"),
            ));
        }
        if at_end {
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
    walk(fmt, args.len(), Walker::Eval, |piece| {
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
/// doubles shortest, timestamps as `string()` gives them but in UTC, durations as `string()`
/// gives them, type values by name,
/// lists `[a, b]`, maps `{k: v, …}` sorted by the rendered key.
pub(super) fn display(value: &Value) -> Result<String, EvalError> {
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
        // In UTC, unlike `string()`, as cel-go's formatter does.
        Value::Timestamp(t) => format_timestamp_utc(*t),
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
/// `dyn` to the Go checker); the checker passes `dyn` for every element whose type Go's checker
/// could not know (`format_arg_type`), so that rules Go accepts are not rejected here. Unlike
/// cel-go this does not look inside nested list or map literals given to `%s` (every type fits
/// `%s` here anyway).
pub fn check_format(fmt: &str, arg_types: &[Type]) -> Result<(), FormatCheckError> {
    let mut bad_arg = None;
    let seen = walk(fmt, arg_types.len(), Walker::Check, |piece| {
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

/// The static type cel-go's checker gives a `format` argument, as far as the clause check
/// cares (its kind): the Go sentinel declares `resource` and every param `dyn` and its
/// `condition()` returns `dyn`, so whatever is read from them is `dyn` there however precisely
/// this checker types it; the clause check must not reject what Go's accepts. Lists and maps
/// built here are lists and maps to Go's checker too; anything else is given its type only
/// when Go's checker knows it ([`go_knows`]), else `dyn`.
pub(super) fn format_arg_type(e: &TExpr) -> Type {
    let kind_known = match &e.kind {
        TExprKind::List(_) | TExprKind::Map(_) => true,
        TExprKind::Comprehension(c) => matches!(c.kind, MacroKind::Map | MacroKind::Filter),
        _ => go_knows(e),
    };
    if kind_known { e.ty.clone() } else { Type::Dyn }
}

/// Whether cel-go's checker, in the Go sentinel's environment, types `e` as precisely as this
/// one (false when unsure: a `dyn` there only makes the clause check accept more).
fn go_knows(e: &TExpr) -> bool {
    match &e.kind {
        TExprKind::Const(_) => true,
        TExprKind::Var(var) => matches!(var, Var::Now | Var::Reason),
        TExprKind::Not(_)
        | TExprKind::And(..)
        | TExprKind::Or(..)
        | TExprKind::Has(..)
        | TExprKind::MatchesConst(..) => true,
        TExprKind::Binary(op, a, b) => {
            matches!(
                op,
                BinaryOp::Eq
                    | BinaryOp::Ne
                    | BinaryOp::Lt
                    | BinaryOp::Le
                    | BinaryOp::Gt
                    | BinaryOp::Ge
                    | BinaryOp::In
            ) || (go_knows(a) && go_knows(b))
        }
        TExprKind::Neg(a) => go_knows(a),
        TExprKind::Cond(_, a, b) => go_knows(a) && go_knows(b),
        // A field or element of something Go's checker types fully.
        TExprKind::Select(target, _) | TExprKind::Index(target, _) => {
            go_knows(target) && !target.ty.is_object()
        }
        // Every overload of a builtin other than `condition` has one result type.
        TExprKind::Call(f, _) => *f != Builtin::Condition,
        TExprKind::List(items) => items.iter().all(go_knows),
        TExprKind::Map(entries) => entries.iter().all(|(k, v)| go_knows(k) && go_knows(v)),
        TExprKind::Comprehension(c) => match c.kind {
            MacroKind::All | MacroKind::Exists | MacroKind::ExistsOne => true,
            MacroKind::Filter => go_knows(&c.range),
            // The iteration variable's type comes from the range: unknown here.
            MacroKind::Map => false,
        },
    }
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
mod tests {
    //! What the tables of `tests/data/eval/strings.txt` cannot say: conditions and resources as
    //! `%s` arguments (they are not CEL literals), and the compile-time check.

    use super::*;
    use std::sync::Arc;

    fn err(kind: ErrorKind, message: &str) -> EvalError {
        EvalError::new(kind, message)
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
}
