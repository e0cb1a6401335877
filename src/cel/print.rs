//! Human-readable dumps of the front end's output, for debugging rules and for golden tests:
//! [`tokens`] prints one token per line, [`ast`] an indented tree, [`typed`] the typed tree (the
//! checker's output, the back ends' input) for `sentinel ir --stage typed`.
//!
//! Invariant: every printed token and node shows its byte span (`@start..end`), and the output is
//! stable text (it is snapshotted by the golden tests).

use super::ast::{Expr, ExprKind, Literal, UnaryOp};
use super::functions;
use super::lexer::{Token, TokenKind};
use super::span::Span;
use super::typed::{TExpr, TExprKind, Var};
use super::value::Value;
use std::fmt::Write;

/// One token per line: its span, then its kind and decoded value.
pub fn tokens(tokens: &[Token]) -> String {
    let mut out = String::new();
    for token in tokens {
        let span = format!("@{}..{}", token.span.start, token.span.end);
        let _ = writeln!(out, "{span:<12} {}", token_text(&token.kind));
    }
    out
}

fn token_text(kind: &TokenKind) -> String {
    match kind {
        TokenKind::Int(v) => format!("int {v}"),
        TokenKind::Uint(v) => format!("uint {v}"),
        TokenKind::Double(v) => format!("double {v:?}"),
        TokenKind::String(s) => format!("string {s:?}"),
        TokenKind::Bytes(b) => format!("bytes {}", bytes_text(b)),
        TokenKind::Ident(name) => format!("ident {name}"),
        TokenKind::Reserved(word) => format!("reserved {word}"),
        TokenKind::QuotedName(name) => format!("quoted-name `{name}`"),
        TokenKind::True | TokenKind::False | TokenKind::Null | TokenKind::In => {
            format!("keyword {}", kind.symbol().unwrap_or_default())
        }
        other => format!("'{}'", other.symbol().unwrap_or_default()),
    }
}

/// Bytes as a `b"…"` literal: printable ASCII as is, everything else as `\xNN`.
fn bytes_text(bytes: &[u8]) -> String {
    let mut out = String::from("b\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

/// The tree as indented lines, one node per line with its span; children are indented by two
/// spaces and prefixed by their role where it is not obvious (`target:`, `arg:`, `key:`, …).
///
/// Recurses over the tree: parsed trees are at most [`super::parser::MAX_DEPTH`] deep.
pub fn ast(expr: &Expr) -> String {
    let mut out = String::new();
    node(&mut out, expr, 0, "");
    out
}

fn node(out: &mut String, expr: &Expr, depth: usize, role: &str) {
    let _ = writeln!(
        out,
        "{:indent$}{role}{} {}",
        "",
        head(&expr.kind),
        span(expr.span),
        indent = depth * 2
    );
    let d = depth + 1;
    match &expr.kind {
        ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        ExprKind::Unary(_, e) | ExprKind::Member(e, _) | ExprKind::Has(e, _) => node(out, e, d, ""),
        ExprKind::Binary(_, a, b) => {
            node(out, a, d, "");
            node(out, b, d, "");
        }
        ExprKind::Ternary(c, t, e) => {
            node(out, c, d, "cond: ");
            node(out, t, d, "then: ");
            node(out, e, d, "else: ");
        }
        ExprKind::Index(e, i) => {
            node(out, e, d, "");
            node(out, i, d, "index: ");
        }
        ExprKind::Call { target, args, .. } => {
            if let Some(t) = target {
                node(out, t, d, "target: ");
            }
            args.iter().for_each(|a| node(out, a, d, "arg: "));
        }
        ExprKind::List(items) => items.iter().for_each(|e| node(out, e, d, "")),
        ExprKind::Map(entries) => {
            for (k, v) in entries {
                node(out, k, d, "key: ");
                node(out, v, d, "value: ");
            }
        }
        ExprKind::Comprehension(c) => {
            node(out, &c.range, d, "range: ");
            if let Some(f) = &c.filter {
                node(out, f, d, "filter: ");
            }
            node(out, &c.body, d, "body: ");
        }
    }
}

fn span(span: Span) -> String {
    format!("@{}..{}", span.start, span.end)
}

/// The node's own line, without children: kind and inline details.
fn head(kind: &ExprKind) -> String {
    match kind {
        ExprKind::Literal(lit) => format!("Literal {}", literal_text(lit)),
        ExprKind::Ident(name) => format!("Ident {name}"),
        ExprKind::Unary(UnaryOp::Not, _) => "Unary !".to_owned(),
        ExprKind::Unary(UnaryOp::Neg, _) => "Unary -".to_owned(),
        ExprKind::Binary(op, ..) => format!("Binary {}", op.symbol()),
        ExprKind::Ternary(..) => "Ternary".to_owned(),
        ExprKind::Member(_, field) => format!("Member .{}", field_text(field)),
        ExprKind::Index(..) => "Index".to_owned(),
        ExprKind::Call { name, .. } => format!("Call {name}"),
        ExprKind::List(items) => format!("List len={}", items.len()),
        ExprKind::Map(entries) => format!("Map len={}", entries.len()),
        ExprKind::Has(_, field) => format!("Has .{}", field_text(field)),
        ExprKind::Comprehension(c) => {
            format!(
                "Comprehension {} var={} {}",
                c.kind.name(),
                c.var,
                span(c.var_span)
            )
        }
    }
}

/// A field name as written: in backticks unless it is a plain identifier.
fn field_text(name: &str) -> String {
    let plain = name.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    if plain {
        name.to_owned()
    } else {
        format!("`{name}`")
    }
}

fn literal_text(lit: &Literal) -> String {
    match lit {
        Literal::Null => "null".to_owned(),
        Literal::Bool(b) => format!("bool {b}"),
        Literal::Int(v) => format!("int {v}"),
        Literal::Uint(v) => format!("uint {v}"),
        Literal::Double(v) => format!("double {v:?}"),
        Literal::String(s) => format!("string {s:?}"),
        Literal::Bytes(b) => format!("bytes {}", bytes_text(b)),
    }
}

/// The typed tree as indented lines: `<node> : <type> @start..end`, one node per line with its
/// static type and span, children indented by two spaces and prefixed by their role where it is
/// not obvious, as [`ast`] does.
///
/// Recurses over the tree: typed trees are as deep as the parsed trees they come from, which the
/// parser bounds.
pub fn typed(e: &TExpr) -> String {
    let mut out = String::new();
    typed_node(&mut out, e, 0, "");
    out
}

fn typed_node(out: &mut String, e: &TExpr, depth: usize, role: &str) {
    let _ = writeln!(
        out,
        "{:indent$}{role}{} : {} @{}..{}",
        "",
        typed_head(&e.kind),
        e.ty,
        e.span.start,
        e.span.end,
        indent = depth * 2
    );
    let n = e.children().count();
    for (i, child) in e.children().enumerate() {
        typed_node(out, child, depth + 1, child_role(&e.kind, i, n));
    }
}

/// The role prefix of child `i` of `n` of a node, in the order of [`TExpr::children`].
fn child_role(kind: &TExprKind, i: usize, n: usize) -> &'static str {
    match kind {
        TExprKind::Cond(..) => ["cond: ", "then: ", "else: "][i.min(2)],
        TExprKind::Index(..) if i == 1 => "index: ",
        TExprKind::Call(..) => "arg: ",
        TExprKind::Map(_) if i.is_multiple_of(2) => "key: ",
        TExprKind::Map(_) => "value: ",
        TExprKind::Comprehension(_) if i == 0 => "range: ",
        TExprKind::Comprehension(_) if i + 1 == n => "body: ",
        TExprKind::Comprehension(_) => "filter: ",
        _ => "",
    }
}

fn typed_head(kind: &TExprKind) -> String {
    match kind {
        TExprKind::Const(v) => format!("Const {}", value_text(v)),
        TExprKind::Var(var) => format!("Var {}", var_text(*var)),
        TExprKind::Not(_) => "Not".into(),
        TExprKind::Neg(_) => "Neg".into(),
        TExprKind::Binary(op, ..) => format!("Binary {}", op.symbol()),
        TExprKind::And(..) => "And".into(),
        TExprKind::Or(..) => "Or".into(),
        TExprKind::Cond(..) => "Cond".into(),
        TExprKind::Select(_, f) => format!("Select .{}", f.name),
        TExprKind::Has(_, f) => format!("Has .{}", f.name),
        TExprKind::Index(..) => "Index".into(),
        TExprKind::Call(f, _) => format!("Call {}", functions::name(*f)),
        TExprKind::MatchesConst(_, re) => format!("Matches /{}/", re.as_str()),
        TExprKind::List(items) => format!("List len={}", items.len()),
        TExprKind::Map(entries) => format!("Map len={}", entries.len()),
        TExprKind::Comprehension(c) => format!("Comprehension {} depth={}", c.kind.name(), c.depth),
    }
}

fn var_text(var: Var) -> String {
    match var {
        Var::Resource => "resource".into(),
        Var::Now => "now".into(),
        Var::Reason => "reason".into(),
        Var::Slot(i) => format!("slot {i}"),
        Var::Local(d) => format!("local {d}"),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Timestamp(_) | Value::Duration(_) => {
            functions::to_string(v).unwrap_or_else(|_| v.type_name().into())
        }
        Value::List(items) => format!("list len={}", items.len()),
        Value::Map(m) => format!("map len={}", m.len()),
        Value::Type(t) => format!("type {t}"),
        Value::Double(d) => functions::format_double(*d),
        other => functions::to_string(other).unwrap_or_else(|_| other.type_name().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::{lex, parse};

    #[test]
    fn tokens_one_per_line_with_spans() {
        let toks = lex("a.b + b'\\xff' >= -1.5").unwrap_or_default();
        let expected = "\
@0..1        ident a
@1..2        '.'
@2..3        ident b
@4..5        '+'
@6..13       bytes b\"\\xff\"
@14..16      '>='
@17..18      '-'
@18..21      double 1.5
";
        assert_eq!(tokens(&toks), expected);
    }

    #[test]
    fn ast_is_an_indented_tree() {
        let expr =
            parse("f(x, 'a') ? l.all(v, v) : {1: [true]}").unwrap_or_else(|d| panic!("{d:?}"));
        let expected = "\
Ternary @0..37
  cond: Call f @0..9
    arg: Ident x @2..3
    arg: Literal string \"a\" @5..8
  then: Comprehension all var=v @18..19 @12..23
    range: Ident l @12..13
    body: Ident v @21..22
  else: Map len=1 @26..37
    key: Literal int 1 @27..28
    value: List len=1 @30..36
      Literal bool true @31..35
";
        assert_eq!(ast(&expr), expected);
    }

    #[test]
    fn typed_tree_names_roles_types_and_spans() {
        use crate::cel::check::{Env, check};
        use crate::cel::types::Type;
        let env = Env::with_slots(&[("x".into(), Type::Dyn), ("s".into(), Type::String)]);
        // Every role prefix: cond/then/else, index, key/value, range/filter/body, arg.
        let source = "x ? -x[1] : {'k': [1, 2].map(v, v > 1, v * 2), \
                      'h': has(x.f) && !s.matches('a+'), 'n': s.indexOf('b', 1)}";
        let ast = parse(source).unwrap_or_else(|d| panic!("{d:?}"));
        let t = check(&ast, &env).unwrap_or_else(|d| panic!("{d:?}"));
        let expected = r#"Cond : dyn @0..105
  cond: Var slot 0 : dyn @0..1
  then: Neg : dyn @4..9
    Index : dyn @5..9
      Var slot 0 : dyn @5..6
      index: Const 1 : int @7..8
  else: Map len=3 : map(string, dyn) @12..105
    key: Const "k" : string @13..16
    value: Comprehension map depth=0 : list(int) @18..45
      range: Const list len=2 : list(int) @18..24
      filter: Binary > : bool @32..37
        Var local 0 : int @32..33
        Const 1 : int @36..37
      body: Binary * : int @39..44
        Var local 0 : int @39..40
        Const 2 : int @43..44
    key: Const "h" : string @47..50
    value: And : bool @52..80
      Has .f : bool @52..60
        Var slot 0 : dyn @56..57
      Not : bool @64..80
        Matches /a+/ : bool @65..80
          Var slot 1 : string @65..66
    key: Const "n" : string @82..85
    value: Call indexOf : int @87..104
      arg: Var slot 1 : string @87..88
      arg: Const "b" : string @97..100
      arg: Const 1 : int @102..103
"#;
        assert_eq!(typed(&t), expected);
    }
}
