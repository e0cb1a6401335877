//! A small reader for the protobuf text format, enough for the cel-spec conformance files.
//!
//! Takes the text of a `.textproto` file and gives a generic [`Message`] tree: every field in
//! file order, repeated fields as repeated entries, with no schema. Handles `#` comments, `:`
//! (optional before a message), `{…}` and `<…>` messages, `[…]` lists, `,`/`;` separators,
//! adjacent string literals (concatenated), C escapes (`\n`, octal `\303`, `\x41`, `\u00e9`,
//! `\U0001F600`), signed numbers and `inf`/`nan`, and `[type.googleapis.com/pkg.Msg]` extension
//! or `Any` field names. Invariant: reading never panics, whatever the input; errors name a line.

use std::fmt;

/// A field's value: a scalar token or a nested message.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// An identifier (enum value, `true`, `inf`), possibly signed (`-inf`).
    Ident(String),
    /// A number as written, sign included (`-12`, `0x1F`, `1e+5`, `2.5f`).
    Number(String),
    /// A string literal with escapes decoded; adjacent literals are concatenated.
    Bytes(Vec<u8>),
    /// A nested message.
    Message(Message),
}

/// A message: its fields in file order; a repeated field appears once per element.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    /// `(name, value)` pairs; extension names keep their brackets' content (`type.googleapis.com/…`).
    pub fields: Vec<(String, Node)>,
}

/// Why a file could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// 1-based line of the offending token.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl Message {
    /// Every value of a field, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The last value of a field (protobuf: the last occurrence of a singular field wins).
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.fields
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// A message-valued field.
    pub fn message(&self, name: &str) -> Option<&Message> {
        match self.get(name) {
            Some(Node::Message(m)) => Some(m),
            _ => None,
        }
    }

    /// Every message value of a repeated field.
    pub fn messages<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Message> + 'a {
        self.all(name).filter_map(|n| match n {
            Node::Message(m) => Some(m),
            _ => None,
        })
    }

    /// A string-valued field as UTF-8 text (lossy).
    pub fn text(&self, name: &str) -> Option<String> {
        match self.get(name) {
            Some(Node::Bytes(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }

    /// A bool-valued field (`true`/`false`/`1`/`0`); absent is false.
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some(Node::Ident(s)) if s == "true" || s == "True" || s == "t")
            || matches!(self.get(name), Some(Node::Number(s)) if s == "1")
    }
}

/// Reads a whole file as the fields of its top-level message.
pub fn read(src: &str) -> Result<Message, ReadError> {
    let tokens = tokenize(src)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let msg = p.fields(None)?;
    match p.peek() {
        None => Ok(msg),
        Some(t) => Err(p.error(t.line, format!("unexpected {}", t.kind))),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Punct(char),
    Ident(String),
    Number(String),
    Str(Vec<u8>),
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Punct(c) => write!(f, "'{c}'"),
            Kind::Ident(s) => write!(f, "identifier {s}"),
            Kind::Number(s) => write!(f, "number {s}"),
            Kind::Str(_) => f.write_str("string"),
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    line: usize,
}

fn tokenize(src: &str) -> Result<Vec<Token>, ReadError> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    while let Some(&c) = chars.get(i) {
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                while chars.get(i).is_some_and(|&c| c != '\n') {
                    i += 1;
                }
            }
            ':' | '{' | '}' | '[' | ']' | '<' | '>' | ',' | ';' | '-' | '/' => {
                tokens.push(Token {
                    kind: Kind::Punct(c),
                    line,
                });
                i += 1;
            }
            '"' | '\'' => {
                let (bytes, next) = string_literal(&chars, i, line)?;
                tokens.push(Token {
                    kind: Kind::Str(bytes),
                    line,
                });
                i = next;
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let start = i;
                while let Some(&d) = chars.get(i) {
                    let exponent_sign = (d == '+' || d == '-')
                        && matches!(chars.get(i - 1), Some('e' | 'E'))
                        && !chars[start..i].iter().any(|&x| x == 'x' || x == 'X');
                    if d.is_ascii_alphanumeric() || d == '.' || d == '_' || exponent_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                tokens.push(Token {
                    kind: Kind::Number(chars[start..i].iter().collect()),
                    line,
                });
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|&d| d.is_ascii_alphanumeric() || d == '_' || d == '.')
                {
                    i += 1;
                }
                tokens.push(Token {
                    kind: Kind::Ident(chars[start..i].iter().collect()),
                    line,
                });
            }
            other => {
                return Err(ReadError {
                    line,
                    message: format!("unexpected character {other:?}"),
                });
            }
        }
    }
    Ok(tokens)
}

/// Decodes the string literal opening at `start`; returns its bytes and the index after it.
fn string_literal(
    chars: &[char],
    start: usize,
    line: usize,
) -> Result<(Vec<u8>, usize), ReadError> {
    let quote = chars[start];
    let err = |message: &str| ReadError {
        line,
        message: message.to_string(),
    };
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(err("unterminated string"));
        };
        i += 1;
        match c {
            '\n' => return Err(err("newline in string")),
            c if c == quote => return Ok((out, i)),
            '\\' => {
                let Some(&e) = chars.get(i) else {
                    return Err(err("unterminated escape"));
                };
                i += 1;
                match e {
                    'n' => out.push(b'\n'),
                    't' => out.push(b'\t'),
                    'r' => out.push(b'\r'),
                    'a' => out.push(0x07),
                    'b' => out.push(0x08),
                    'f' => out.push(0x0c),
                    'v' => out.push(0x0b),
                    '\\' | '\'' | '"' | '?' => out.push(e as u8),
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match chars.get(i).and_then(|d| d.to_digit(8)) {
                                Some(d) => {
                                    v = v * 8 + d;
                                    i += 1;
                                }
                                None => break,
                            }
                        }
                        out.push(u8::try_from(v).map_err(|_| err("octal escape out of range"))?);
                    }
                    'x' | 'X' => {
                        let (v, n) = hex_digits(chars, i, 2);
                        if n == 0 {
                            return Err(err("\\x without hex digits"));
                        }
                        i += n;
                        out.push(v as u8);
                    }
                    'u' | 'U' => {
                        let want = if e == 'u' { 4 } else { 8 };
                        let (v, n) = hex_digits(chars, i, want);
                        if n != want {
                            return Err(err("short unicode escape"));
                        }
                        i += n;
                        let ch = char::from_u32(v).ok_or_else(|| err("invalid unicode escape"))?;
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    other => return Err(err(&format!("unknown escape \\{other}"))),
                }
            }
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
}

/// Up to `max` hex digits from `start`: their value and how many were read.
fn hex_digits(chars: &[char], start: usize, max: usize) -> (u32, usize) {
    let mut v = 0u32;
    let mut n = 0;
    while n < max {
        match chars.get(start + n).and_then(|d| d.to_digit(16)) {
            Some(d) => {
                v = v * 16 + d;
                n += 1;
            }
            None => break,
        }
    }
    (v, n)
}

/// How deeply messages may nest before the reader gives up (no stack overflow on bad input).
const MAX_DEPTH: usize = 100;

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn at_punct(&self, c: char) -> bool {
        matches!(self.peek(), Some(Token { kind: Kind::Punct(p), .. }) if *p == c)
    }

    fn line(&self) -> usize {
        self.peek().or(self.tokens.last()).map_or(1, |t| t.line)
    }

    fn error(&self, line: usize, message: String) -> ReadError {
        ReadError { line, message }
    }

    /// Fields until `close` (or the end of input for the top level).
    fn fields(&mut self, close: Option<char>) -> Result<Message, ReadError> {
        let mut msg = Message::default();
        loop {
            match (self.peek(), close) {
                (None, None) => return Ok(msg),
                (None, Some(c)) => return Err(self.error(self.line(), format!("missing '{c}'"))),
                (
                    Some(Token {
                        kind: Kind::Punct(p),
                        ..
                    }),
                    Some(c),
                ) if *p == c => {
                    self.pos += 1;
                    return Ok(msg);
                }
                _ => {}
            }
            let name = self.field_name()?;
            let has_colon = self.at_punct(':');
            if has_colon {
                self.pos += 1;
            }
            if self.at_punct('[') {
                self.pos += 1;
                while !self.at_punct(']') {
                    let value = self.value()?;
                    msg.fields.push((name.clone(), value));
                    if self.at_punct(',') {
                        self.pos += 1;
                    } else if !self.at_punct(']') {
                        return Err(self.error(self.line(), "expected ',' or ']' in list".into()));
                    }
                }
                self.pos += 1;
            } else {
                let value = self.value()?;
                msg.fields.push((name, value));
            }
            if self.at_punct(',') || self.at_punct(';') {
                self.pos += 1;
            }
        }
    }

    /// `ident` or `[ext.name/with.slashes]`.
    fn field_name(&mut self) -> Result<String, ReadError> {
        let line = self.line();
        match self.next() {
            Some(Token {
                kind: Kind::Ident(s),
                ..
            }) => Ok(s),
            Some(Token {
                kind: Kind::Punct('['),
                ..
            }) => {
                let mut name = String::new();
                loop {
                    match self.next() {
                        Some(Token {
                            kind: Kind::Ident(s),
                            ..
                        }) => name.push_str(&s),
                        Some(Token {
                            kind: Kind::Punct('/'),
                            ..
                        }) => name.push('/'),
                        Some(Token {
                            kind: Kind::Punct(']'),
                            ..
                        }) if !name.is_empty() => return Ok(name),
                        _ => return Err(self.error(line, "malformed extension name".into())),
                    }
                }
            }
            Some(t) => Err(self.error(t.line, format!("expected a field name, got {}", t.kind))),
            None => Err(self.error(line, "expected a field name".into())),
        }
    }

    fn value(&mut self) -> Result<Node, ReadError> {
        let line = self.line();
        match self.next().map(|t| t.kind) {
            Some(Kind::Punct(open @ ('{' | '<'))) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(self.error(line, "messages nested too deeply".into()));
                }
                let close = if open == '{' { '}' } else { '>' };
                let msg = self.fields(Some(close))?;
                self.depth -= 1;
                Ok(Node::Message(msg))
            }
            Some(Kind::Punct('-')) => match self.next().map(|t| t.kind) {
                Some(Kind::Number(n)) => Ok(Node::Number(format!("-{n}"))),
                Some(Kind::Ident(s)) => Ok(Node::Ident(format!("-{s}"))),
                _ => Err(self.error(line, "expected a number after '-'".into())),
            },
            Some(Kind::Number(n)) => Ok(Node::Number(n)),
            Some(Kind::Ident(s)) => Ok(Node::Ident(s)),
            Some(Kind::Str(mut bytes)) => {
                while let Some(Token {
                    kind: Kind::Str(more),
                    ..
                }) = self.peek()
                {
                    bytes.extend_from_slice(more);
                    self.pos += 1;
                }
                Ok(Node::Bytes(bytes))
            }
            Some(other) => Err(self.error(line, format!("expected a value, got {other}"))),
            None => Err(self.error(line, "expected a value".into())),
        }
    }
}

/// Reads a protobuf integer literal (decimal, `0x` hex or leading-zero octal, optional sign).
pub fn parse_int(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let magnitude = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i128::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse::<i128>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Reads a protobuf floating-point literal, including `inf`, `infinity`, `nan` and a `f` suffix.
pub fn parse_float(node: &Node) -> Option<f64> {
    let text = match node {
        Node::Number(s) | Node::Ident(s) => s.as_str(),
        _ => return None,
    };
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let magnitude = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => match lower.trim_end_matches('f').parse::<f64>() {
            Ok(v) => v,
            Err(_) => parse_int(&lower)? as f64,
        },
    };
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_messages_lists_and_comments() {
        let m = read(
            "# header\nname: \"basic\"\nsection { name: 'a' test { expr: \"1\" value: < int64_value: -3 > } }\n\
             values: [ { x: 1 }, { x: 2 } ]; flag: true",
        )
        .unwrap();
        assert_eq!(m.text("name").as_deref(), Some("basic"));
        let section = m.message("section").unwrap();
        let value = section.message("test").unwrap().message("value").unwrap();
        assert_eq!(value.get("int64_value"), Some(&Node::Number("-3".into())));
        assert_eq!(m.messages("values").count(), 2);
        assert!(m.flag("flag"));
    }

    #[test]
    fn decodes_escapes_and_joins_adjacent_strings() {
        let m = read(r#"a: "\303\251\x41\n\'" 'b\"' "\u00e9""#).unwrap();
        assert_eq!(
            m.get("a"),
            Some(&Node::Bytes("éA\n'b\"é".as_bytes().to_vec()))
        );
    }

    #[test]
    fn reads_extension_names() {
        let m =
            read("object_value { [type.googleapis.com/google.protobuf.Duration] { seconds: 1 } }")
                .unwrap();
        let obj = m.message("object_value").unwrap();
        assert!(
            obj.message("type.googleapis.com/google.protobuf.Duration")
                .is_some()
        );
    }

    #[test]
    fn numbers_and_special_floats() {
        assert_eq!(
            parse_int("-9223372036854775808"),
            Some(-9223372036854775808)
        );
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_float(&Node::Number("1e+15".into())), Some(1e15));
        assert_eq!(
            parse_float(&Node::Ident("-inf".into())),
            Some(f64::NEG_INFINITY)
        );
        assert!(parse_float(&Node::Ident("nan".into())).unwrap().is_nan());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for src in [
            "a: \"unterminated",
            "a {",
            "a: [1, 2",
            "a: \\",
            "[x",
            "a: \"\\400\"",
            "a: -",
            "{",
        ] {
            assert!(read(src).is_err(), "{src:?} should not read");
        }
        let deep = "a {".repeat(10_000);
        assert!(read(&deep).is_err());
    }
}
