//! The CEL lexer: source text → [`Token`]s with byte spans and decoded literal values.
//!
//! Takes one expression's source; gives its tokens, or every lexical error found (bad escapes,
//! unterminated strings, out-of-range numbers, stray characters). Invariant: every token carries
//! the byte span of its source text, and string/bytes/number values are fully decoded, so later
//! stages never look at raw literal text again.
//!
//! The logos-derived `RawToken` stays private; [`TokenKind`] is its public mirror.

use super::diag::Diagnostic;
use super::span::Span;
use logos::Logos;
use std::fmt;

/// One token of CEL source.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What the token is, with its decoded value.
    pub kind: TokenKind,
    /// Where it was written.
    pub span: Span,
}

/// The kinds of CEL tokens. Literal values are already decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    /// An integer literal without `u` suffix, as a magnitude: values above `i64::MAX` are only
    /// valid as the operand of a unary minus (`-9223372036854775808`), which the parser checks.
    Int(u64),
    /// An unsigned literal (`1u`, `0x1FU`).
    Uint(u64),
    /// A double literal (`1.5`, `1e3`, `.5`).
    Double(f64),
    /// A string literal after escape processing.
    String(String),
    /// A bytes literal after escape processing.
    Bytes(Vec<u8>),
    /// `true`
    True,
    /// `false`
    False,
    /// `null`
    Null,
    /// An identifier.
    Ident(String),
    /// A reserved word (`if`, `let`, …): allowed as a field name after `.`, never as an identifier.
    Reserved(&'static str),
    /// A quoted field name (`` m.`content-type` ``), without its backticks: only valid after `.`.
    QuotedName(String),
    /// `in`
    In,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `==`
    EqEq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `!`
    Bang,
    /// `?`
    Question,
    /// `:`
    Colon,
    /// `.`
    Dot,
    /// `,`
    Comma,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
}

/// Words CEL reserves: rejected as identifiers, accepted as field names after `.`.
pub const RESERVED_WORDS: [&str; 17] = [
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

impl TokenKind {
    /// The fixed source text of a punctuation or keyword token, `None` for tokens with a value.
    pub fn symbol(&self) -> Option<&'static str> {
        use TokenKind::*;
        Some(match self {
            Int(_) | Uint(_) | Double(_) | String(_) | Bytes(_) | Ident(_) | QuotedName(_) => {
                return None;
            }
            Reserved(word) => word,
            True => "true",
            False => "false",
            Null => "null",
            In => "in",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            EqEq => "==",
            NotEq => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            AndAnd => "&&",
            OrOr => "||",
            Bang => "!",
            Question => "?",
            Colon => ":",
            Dot => ".",
            Comma => ",",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
        })
    }
}

/// Short human wording of a token for diagnostics: `')'`, `identifier 'foo'`, `int literal 3`.
impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenKind::Int(v) => write!(f, "int literal {v}"),
            TokenKind::Uint(v) => write!(f, "uint literal {v}u"),
            TokenKind::Double(v) => write!(f, "double literal {v:?}"),
            TokenKind::String(_) => f.write_str("string literal"),
            TokenKind::Bytes(_) => f.write_str("bytes literal"),
            TokenKind::Ident(name) => write!(f, "identifier '{name}'"),
            TokenKind::Reserved(word) => write!(f, "reserved word '{word}'"),
            TokenKind::QuotedName(name) => write!(f, "quoted name `{name}`"),
            other => write!(f, "'{}'", other.symbol().unwrap_or_default()),
        }
    }
}

/// Splits `src` into tokens, or returns every lexical error found.
pub fn lex(src: &str) -> Result<Vec<Token>, Vec<Diagnostic>> {
    let (tokens, diags) = lex_all(src);
    if diags.is_empty() {
        Ok(tokens)
    } else {
        Err(diags)
    }
}

/// Lexes the whole input, keeping going after errors: the tokens that could be made and the
/// diagnostics, sorted by position.
pub(crate) fn lex_all(src: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let mut lexer = RawToken::lexer(src);
    let mut tokens = Vec::new();
    while let Some(next) = lexer.next() {
        let range = lexer.span();
        match next {
            Ok(raw) => tokens.push(Token {
                kind: raw.into_kind(),
                span: Span::new(range.start, range.end),
            }),
            Err(()) => {
                let diag = stray_character(src, range.start);
                lexer.extras.push(diag);
            }
        }
    }
    let mut diags = lexer.extras;
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    (tokens, diags)
}

/// The diagnostic for a character that starts no token, spanning the whole (UTF-8) character.
fn stray_character(src: &str, start: usize) -> Diagnostic {
    let c = src
        .get(start..)
        .and_then(|s| s.chars().next())
        .unwrap_or('\u{fffd}');
    let span = Span::new(start, start + c.len_utf8());
    let diag = Diagnostic::new(format!("unexpected character {c:?}"), span);
    let hint = match c {
        '&' => Some("did you mean '&&'?"),
        '|' => Some("did you mean '||'?"),
        '=' => Some("did you mean '=='?"),
        '`' => Some(
            "a quoted field name is written `name` after '.', with letters, digits, '_', '.', '-', '/' or spaces",
        ),
        _ => None,
    };
    match hint {
        Some(h) => diag.with_note(h),
        None => diag,
    }
}

/// A decoded quoted literal, before it becomes a [`TokenKind`].
#[derive(Clone, Debug, PartialEq)]
enum Quoted {
    Text(String),
    Bytes(Vec<u8>),
}

/// The logos token set. Callbacks decode values and push errors into the extras.
#[derive(Logos, Clone, Debug, PartialEq)]
#[logos(extras = Vec<Diagnostic>)]
#[logos(skip r"[ \t\r\n\x0C]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
enum RawToken {
    #[regex(r"[0-9]+", |lex| decimal(lex, 0))]
    #[regex(r"0x[0-9a-fA-F]+", |lex| hex(lex, 0))]
    Int(u64),
    #[regex(r"[0-9]+[uU]", |lex| decimal(lex, 1))]
    #[regex(r"0x[0-9a-fA-F]+[uU]", |lex| hex(lex, 1))]
    Uint(u64),
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?", double)]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+", double)]
    #[regex(r"\.[0-9]+([eE][+-]?[0-9]+)?", double)]
    Double(f64),
    #[regex(r#"[bB]?[rR]?("|'|"""|''')"#, quoted)]
    Quoted(Quoted),
    #[regex(r"[_a-zA-Z][_a-zA-Z0-9]*", |lex| lex.slice().to_owned())]
    Word(String),
    #[regex(r"`[_a-zA-Z0-9.\-/ ]+`", |lex| lex.slice().trim_matches('`').to_owned())]
    QuotedName(String),
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("!")]
    Bang,
    #[token("?")]
    Question,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token(",")]
    Comma,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
}

impl RawToken {
    /// The public token kind; words are classified into keywords, reserved words and identifiers.
    fn into_kind(self) -> TokenKind {
        use TokenKind as K;
        match self {
            RawToken::Int(v) => K::Int(v),
            RawToken::Uint(v) => K::Uint(v),
            RawToken::Double(v) => K::Double(v),
            RawToken::Quoted(Quoted::Text(s)) => K::String(s),
            RawToken::Quoted(Quoted::Bytes(b)) => K::Bytes(b),
            RawToken::Word(w) => classify_word(w),
            RawToken::QuotedName(n) => K::QuotedName(n),
            RawToken::Plus => K::Plus,
            RawToken::Minus => K::Minus,
            RawToken::Star => K::Star,
            RawToken::Slash => K::Slash,
            RawToken::Percent => K::Percent,
            RawToken::EqEq => K::EqEq,
            RawToken::NotEq => K::NotEq,
            RawToken::Lt => K::Lt,
            RawToken::Le => K::Le,
            RawToken::Gt => K::Gt,
            RawToken::Ge => K::Ge,
            RawToken::AndAnd => K::AndAnd,
            RawToken::OrOr => K::OrOr,
            RawToken::Bang => K::Bang,
            RawToken::Question => K::Question,
            RawToken::Colon => K::Colon,
            RawToken::Dot => K::Dot,
            RawToken::Comma => K::Comma,
            RawToken::LParen => K::LParen,
            RawToken::RParen => K::RParen,
            RawToken::LBracket => K::LBracket,
            RawToken::RBracket => K::RBracket,
            RawToken::LBrace => K::LBrace,
            RawToken::RBrace => K::RBrace,
        }
    }
}

/// Keywords become their own tokens, reserved words a [`TokenKind::Reserved`], the rest identifiers.
fn classify_word(word: String) -> TokenKind {
    match word.as_str() {
        "true" => TokenKind::True,
        "false" => TokenKind::False,
        "null" => TokenKind::Null,
        "in" => TokenKind::In,
        w => match RESERVED_WORDS.iter().find(|r| **r == w) {
            Some(r) => TokenKind::Reserved(r),
            None => TokenKind::Ident(word),
        },
    }
}

/// The span of the current logos match.
fn current_span(lex: &logos::Lexer<'_, RawToken>) -> Span {
    let r = lex.span();
    Span::new(r.start, r.end)
}

/// A decimal literal's value; `suffix` is the length of the `u` suffix to strip.
fn decimal(lex: &mut logos::Lexer<'_, RawToken>, suffix: usize) -> u64 {
    let text = lex.slice();
    let digits = &text[..text.len() - suffix];
    number(lex, digits.parse::<u64>().ok(), suffix)
}

/// A `0x` literal's value; `suffix` is the length of the `u` suffix to strip.
fn hex(lex: &mut logos::Lexer<'_, RawToken>, suffix: usize) -> u64 {
    let text = lex.slice();
    let digits = &text[2..text.len() - suffix];
    number(lex, u64::from_str_radix(digits, 16).ok(), suffix)
}

/// Reports a literal that does not fit in 64 bits (and yields 0 so lexing goes on).
fn number(lex: &mut logos::Lexer<'_, RawToken>, value: Option<u64>, suffix: usize) -> u64 {
    match value {
        Some(v) => v,
        None => {
            let what = if suffix == 0 { "int" } else { "uint" };
            let diag = Diagnostic::new(format!("invalid {what} literal"), current_span(lex))
                .with_label(format!("does not fit in a 64-bit {what}"));
            lex.extras.push(diag);
            0
        }
    }
}

/// A double literal's value (`1e400` is infinity, as in other CEL implementations).
fn double(lex: &mut logos::Lexer<'_, RawToken>) -> f64 {
    // The regexes only admit text Rust's float parser accepts; 0.0 is a never-taken fallback.
    lex.slice().parse().unwrap_or(0.0)
}

/// How a quoted literal was opened: `b`/`r` prefixes, quote character, triple or not.
#[derive(Clone, Copy, Debug)]
struct QuoteStyle {
    bytes: bool,
    raw: bool,
    quote: u8,
    triple: bool,
}

impl QuoteStyle {
    fn from_prefix(prefix: &str) -> QuoteStyle {
        let lower = prefix.to_ascii_lowercase();
        let quote = *prefix.as_bytes().last().unwrap_or(&b'"');
        QuoteStyle {
            bytes: lower.starts_with('b'),
            raw: lower.contains('r'),
            quote,
            triple: prefix.ends_with("'''") || prefix.ends_with("\"\"\""),
        }
    }
}

/// Where a quoted literal's body ends in the text after its opening quote.
struct BodyEnd {
    /// Length of the body in bytes.
    body: usize,
    /// Bytes to consume after the opening quote (body plus closing quote if any).
    consumed: usize,
    /// Whether a closing quote was found.
    terminated: bool,
}

/// Finds the closing quote. Single-quoted literals stop (unterminated) at a line break; in
/// non-raw literals a backslash hides the next character from the search.
fn find_body_end(rest: &str, style: QuoteStyle) -> BodyEnd {
    let bytes = rest.as_bytes();
    let closing = if style.triple { 3 } else { 1 };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if bytes[i..].len() >= closing && bytes[i..i + closing].iter().all(|&q| q == style.quote) {
            return BodyEnd {
                body: i,
                consumed: i + closing,
                terminated: true,
            };
        }
        if !style.triple && (b == b'\n' || b == b'\r') {
            return BodyEnd {
                body: i,
                consumed: i,
                terminated: false,
            };
        }
        let escapes_next = b == b'\\' && !style.raw;
        let next_is_break = matches!(bytes.get(i + 1), Some(b'\n' | b'\r'));
        i += if escapes_next && (style.triple || !next_is_break) {
            2
        } else {
            1
        };
    }
    BodyEnd {
        body: bytes.len(),
        consumed: bytes.len(),
        terminated: false,
    }
}

/// Lexes a string or bytes literal after its opening quote: finds its end, decodes escapes and
/// reports every problem into the extras.
fn quoted(lex: &mut logos::Lexer<'_, RawToken>) -> Quoted {
    let prefix = lex.slice();
    let style = QuoteStyle::from_prefix(prefix);
    let token_start = lex.span().start;
    let body_start = lex.span().end;
    let rest = lex.remainder();
    let end = find_body_end(rest, style);
    let body = &rest[..end.body];
    let mut out = Vec::with_capacity(body.len());
    if style.raw {
        out.extend_from_slice(body.as_bytes());
    } else {
        decode_escapes(body, body_start, style.bytes, &mut out, &mut lex.extras);
    }
    if !end.terminated {
        let span = Span::new(token_start, body_start + end.consumed);
        let mut diag =
            Diagnostic::new("unterminated string literal", span).with_label("no closing quote");
        if !style.triple && end.consumed < rest.len() {
            diag = diag.with_note("a quoted literal ends at the end of its line; use ''' or \"\"\" for text over several lines");
        }
        lex.extras.push(diag);
    }
    lex.bump(end.consumed);
    if style.bytes {
        Quoted::Bytes(out)
    } else {
        // Only whole characters are pushed in text mode, so this conversion cannot fail.
        Quoted::Text(
            String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
    }
}

/// Decodes the escapes of a non-raw literal body into `out` (UTF-8 for strings, raw bytes for
/// bytes literals). `base` is the body's byte offset in the source, for diagnostic spans.
fn decode_escapes(
    body: &str,
    base: usize,
    bytes: bool,
    out: &mut Vec<u8>,
    diags: &mut Vec<Diagnostic>,
) {
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            push_char(out, c);
            continue;
        }
        let (len, decoded) = escape(&body[i..], bytes);
        for _ in 1..body[i..i + len].chars().count() {
            chars.next();
        }
        match decoded {
            Ok(Escaped::Char(c)) => push_char(out, c),
            Ok(Escaped::Byte(b)) => out.push(b),
            Err(message) => {
                let span = Span::new(base + i, base + i + len);
                diags.push(Diagnostic::new(message, span).with_label("invalid escape"));
            }
        }
    }
}

/// What one escape sequence stands for.
enum Escaped {
    Char(char),
    Byte(u8),
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// Decodes the escape at the start of `text` (which begins with `\`): its length in bytes and
/// value, or an error message. `\x` and octal escapes are bytes in bytes literals and code points
/// in strings; `\u` and `\U` are code points and only allowed in strings.
fn escape(text: &str, bytes: bool) -> (usize, Result<Escaped, String>) {
    let Some(c) = text[1..].chars().next() else {
        return (
            1,
            Err("invalid escape sequence at end of literal".to_owned()),
        );
    };
    let simple = match c {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '"' | '\'' | '\\' | '?' | '`' => Some(c),
        _ => None,
    };
    if let Some(v) = simple {
        return (2, Ok(Escaped::Char(v)));
    }
    match c {
        'x' | 'X' => byte_escape(text, 16, 2, bytes),
        '0'..='3' => byte_escape(text, 8, 3, bytes),
        'u' | 'U' => unicode_escape(text, if c == 'u' { 4 } else { 8 }, bytes),
        '4'..='9' => (
            2,
            Err(format!(
                "invalid escape sequence '\\{c}': octal escapes are \\000 to \\377"
            )),
        ),
        _ => {
            let len = 1 + c.len_utf8();
            let shown: String = if c.is_control() {
                c.escape_default().collect()
            } else {
                c.to_string()
            };
            (len, Err(format!("invalid escape sequence '\\{shown}'")))
        }
    }
}

/// Counts the leading digits of `text` in `radix`, at most `max`.
fn digits(text: &str, radix: u32, max: usize) -> usize {
    text.chars()
        .take(max)
        .take_while(|c| c.is_digit(radix))
        .count()
}

/// `\xHH` (radix 16, after the `x`) or `\ooo` (radix 8, the first digit included).
fn byte_escape(text: &str, radix: u32, n: usize, bytes: bool) -> (usize, Result<Escaped, String>) {
    let start = if radix == 16 { 2 } else { 1 };
    let found = digits(&text[start..], radix, n);
    let len = start + found;
    if found < n {
        let what = if radix == 16 {
            "2 hex digits"
        } else {
            "3 octal digits (\\000 to \\377)"
        };
        return (
            len,
            Err(format!(
                "invalid escape sequence '{}': needs {what}",
                &text[..len]
            )),
        );
    }
    // At most two hex or three octal digits starting 0-3: always below 256.
    let v = u8::from_str_radix(&text[start..len], radix).unwrap_or(0);
    (
        len,
        Ok(if bytes {
            Escaped::Byte(v)
        } else {
            Escaped::Char(char::from(v))
        }),
    )
}

/// `\uHHHH` (n = 4) or `\UHHHHHHHH` (n = 8).
fn unicode_escape(text: &str, n: usize, bytes: bool) -> (usize, Result<Escaped, String>) {
    let found = digits(&text[2..], 16, n);
    let len = 2 + found;
    let seq = &text[..len];
    if bytes {
        return (
            len,
            Err(format!(
                "invalid escape sequence '{seq}': unicode escapes are not allowed in bytes literals"
            )),
        );
    }
    if found < n {
        return (
            len,
            Err(format!(
                "invalid escape sequence '{seq}': needs {n} hex digits"
            )),
        );
    }
    let code = u32::from_str_radix(&text[2..len], 16).unwrap_or(u32::MAX);
    match char::from_u32(code) {
        Some(c) => (len, Ok(Escaped::Char(c))),
        None => (
            len,
            Err(format!(
                "invalid escape sequence '{seq}': not a unicode scalar value"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind as K;

    fn kinds(src: &str) -> Vec<TokenKind> {
        match lex(src) {
            Ok(tokens) => tokens.into_iter().map(|t| t.kind).collect(),
            Err(d) => panic!("lex({src:?}) failed: {d:?}"),
        }
    }

    fn one(src: &str) -> TokenKind {
        let mut k = kinds(src);
        assert_eq!(k.len(), 1, "{src:?} gave {k:?}");
        k.remove(0)
    }

    fn errors(src: &str) -> Vec<(String, std::ops::Range<usize>)> {
        match lex(src) {
            Ok(t) => panic!("lex({src:?}) succeeded: {t:?}"),
            Err(d) => d.into_iter().map(|d| (d.message, d.span.range())).collect(),
        }
    }

    fn text(s: &str) -> TokenKind {
        K::String(s.to_owned())
    }

    #[test]
    fn ints_and_uints() {
        assert_eq!(one("0"), K::Int(0));
        assert_eq!(one("007"), K::Int(7));
        assert_eq!(one("0x1F"), K::Int(31));
        assert_eq!(one("0xff"), K::Int(255));
        assert_eq!(one("9223372036854775808"), K::Int(1 << 63));
        assert_eq!(one("18446744073709551615"), K::Int(u64::MAX));
        assert_eq!(one("1u"), K::Uint(1));
        assert_eq!(one("1U"), K::Uint(1));
        assert_eq!(one("0x1Fu"), K::Uint(31));
        assert_eq!(one("18446744073709551615u"), K::Uint(u64::MAX));
    }

    #[test]
    fn numbers_out_of_range() {
        assert_eq!(
            errors("18446744073709551616"),
            [("invalid int literal".to_owned(), 0..20)]
        );
        assert_eq!(
            errors("1 + 18446744073709551616u"),
            [("invalid uint literal".to_owned(), 4..25)]
        );
        assert_eq!(
            errors("0x10000000000000000"),
            [("invalid int literal".to_owned(), 0..19)]
        );
    }

    #[test]
    fn doubles() {
        assert_eq!(one("1.5"), K::Double(1.5));
        assert_eq!(one("1e3"), K::Double(1000.0));
        assert_eq!(one("1E-3"), K::Double(0.001));
        assert_eq!(one(".5"), K::Double(0.5));
        assert_eq!(one(".5e1"), K::Double(5.0));
        assert_eq!(one("0e+0"), K::Double(0.0));
        assert_eq!(one("1e400"), K::Double(f64::INFINITY));
    }

    #[test]
    fn numbers_next_to_dots_and_letters() {
        // `1.` is not a double: it is an int and a dot (cel-spec), so `1.size()` is a call.
        assert_eq!(kinds("1."), [K::Int(1), K::Dot]);
        assert_eq!(
            kinds("1.size()"),
            [
                K::Int(1),
                K::Dot,
                K::Ident("size".into()),
                K::LParen,
                K::RParen
            ]
        );
        assert_eq!(kinds("1.e3"), [K::Int(1), K::Dot, K::Ident("e3".into())]);
        assert_eq!(kinds("1e"), [K::Int(1), K::Ident("e".into())]);
        assert_eq!(kinds("0x"), [K::Int(0), K::Ident("x".into())]);
        assert_eq!(kinds("1.0u"), [K::Double(1.0), K::Ident("u".into())]);
        assert_eq!(
            kinds("a.b"),
            [K::Ident("a".into()), K::Dot, K::Ident("b".into())]
        );
    }

    #[test]
    fn words() {
        assert_eq!(
            kinds("true false null in"),
            [K::True, K::False, K::Null, K::In]
        );
        assert_eq!(one("_x9"), K::Ident("_x9".into()));
        assert_eq!(one("rb"), K::Ident("rb".into()));
        for word in RESERVED_WORDS {
            assert_eq!(one(word), K::Reserved(word));
        }
        assert_eq!(one("iff"), K::Ident("iff".into()));
    }

    #[test]
    fn quoted_names() {
        assert_eq!(
            kinds("m.`a-b/c.d e_1`"),
            [
                K::Ident("m".into()),
                K::Dot,
                K::QuotedName("a-b/c.d e_1".into())
            ]
        );
        assert_eq!(errors("m.`a`b`").len(), 1);
        assert_eq!(errors("m.`a!`").len(), 2);
        assert_eq!(errors("m.``").len(), 2);
    }

    #[test]
    fn operators() {
        let src = "+ - * / % == != < <= > >= && || ! ? : . , ( ) [ ] { }";
        let expected = [
            K::Plus,
            K::Minus,
            K::Star,
            K::Slash,
            K::Percent,
            K::EqEq,
            K::NotEq,
            K::Lt,
            K::Le,
            K::Gt,
            K::Ge,
            K::AndAnd,
            K::OrOr,
            K::Bang,
            K::Question,
            K::Colon,
            K::Dot,
            K::Comma,
            K::LParen,
            K::RParen,
            K::LBracket,
            K::RBracket,
            K::LBrace,
            K::RBrace,
        ];
        assert_eq!(kinds(src), expected);
        for (kind, text) in kinds(src).iter().zip(src.split(' ')) {
            assert_eq!(kind.symbol(), Some(text));
        }
        assert_eq!(
            kinds("a<=b"),
            [K::Ident("a".into()), K::Le, K::Ident("b".into())]
        );
    }

    #[test]
    fn spans_are_byte_ranges() {
        let tokens = lex("é + 'é'").err().map(|d| d.len());
        assert_eq!(tokens, Some(1), "é is not an identifier");
        let tokens = lex("x + 'é' // c\n+ 12").unwrap_or_default();
        let spans: Vec<_> = tokens.iter().map(|t| t.span.range()).collect();
        assert_eq!(spans, [0..1, 2..3, 4..8, 14..15, 16..18]);
    }

    #[test]
    fn comments_and_whitespace() {
        assert_eq!(
            kinds("1 // one\n+\t2\r\x0C// end"),
            [K::Int(1), K::Plus, K::Int(2)]
        );
        // A carriage return alone does not end a comment.
        assert_eq!(kinds("1 // c\r+ 2"), [K::Int(1)]);
        assert_eq!(kinds("// only"), []);
    }

    #[test]
    fn string_quotes() {
        assert_eq!(one("'a'"), text("a"));
        assert_eq!(one("\"a\""), text("a"));
        assert_eq!(one("'''a'b'''"), text("a'b"));
        assert_eq!(one("\"\"\"a\"b\nc\"\"\""), text("a\"b\nc"));
        assert_eq!(one("''"), text(""));
        assert_eq!(one("''''''"), text(""));
        assert_eq!(one("'\"'"), text("\""));
        assert_eq!(kinds("'' ''"), [text(""), text("")]);
    }

    #[test]
    fn string_escapes() {
        assert_eq!(
            one(r#"'\a\b\f\n\r\t\v\\\"\'\`\?'"#),
            text("\x07\x08\x0c\n\r\t\x0b\\\"'`?")
        );
        assert_eq!(one(r"'\x41\X4a\101\177\000'"), text("AJA\x7f\0"));
        assert_eq!(one(r"'\xff\377'"), text("\u{ff}\u{ff}"));
        assert_eq!(one(r"'\u270c\U0001f431'"), text("\u{270c}\u{1f431}"));
        assert_eq!(one(r"'''\''''"), text("'"));
        assert_eq!(one("'\u{88888}'"), text("\u{88888}"));
    }

    #[test]
    fn raw_strings() {
        assert_eq!(one(r"r'\n\x41'"), text(r"\n\x41"));
        assert_eq!(one(r#"R"\u0000""#), text(r"\u0000"));
        assert_eq!(one(r"r'''a\'b'''"), text(r"a\'b"));
        // No escapes in raw strings: the backslash does not hide the quote.
        assert_eq!(
            errors(r"r'\''"),
            [("unterminated string literal".to_owned(), 4..5)]
        );
    }

    #[test]
    fn bytes() {
        assert_eq!(one("b'abc'"), K::Bytes(b"abc".to_vec()));
        assert_eq!(one(r"B'\xff\377\000'"), K::Bytes(vec![0xff, 0xff, 0]));
        assert_eq!(one("b'\u{ff}'"), K::Bytes(vec![0xc3, 0xbf]));
        assert_eq!(one(r"br'\xff'"), K::Bytes(br"\xff".to_vec()));
        assert_eq!(one(r#"bR"""\n""""#), K::Bytes(br"\n".to_vec()));
        assert_eq!(one(r"b'\a\?'"), K::Bytes(vec![7, b'?']));
    }

    #[test]
    fn bad_escapes() {
        assert_eq!(
            errors(r"'\z'"),
            [("invalid escape sequence '\\z'".to_owned(), 1..3)]
        );
        let e = errors(r"'\x4' + '\400' + b'\u0041' + '\uD800' + '\U00110000'");
        let messages: Vec<&str> = e.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "invalid escape sequence '\\x4': needs 2 hex digits",
                "invalid escape sequence '\\4': octal escapes are \\000 to \\377",
                "invalid escape sequence '\\u0041': unicode escapes are not allowed in bytes literals",
                "invalid escape sequence '\\uD800': not a unicode scalar value",
                "invalid escape sequence '\\U00110000': not a unicode scalar value",
            ]
        );
        assert_eq!(e[0].1, 1..4);
        assert_eq!(
            errors(r"'\é'"),
            [("invalid escape sequence '\\é'".to_owned(), 1..4)]
        );
    }

    #[test]
    fn unterminated_strings() {
        assert_eq!(
            errors("'abc"),
            [("unterminated string literal".to_owned(), 0..4)]
        );
        assert_eq!(
            errors("'abc\n+ x"),
            [("unterminated string literal".to_owned(), 0..4)]
        );
        assert_eq!(
            errors("x + '''abc\n"),
            [("unterminated string literal".to_owned(), 4..11)]
        );
        assert_eq!(
            errors(r"'abc\'"),
            [("unterminated string literal".to_owned(), 0..6)]
        );
        // The first ''' closes the string; the last quote opens an unterminated one.
        assert_eq!(
            errors("'''a''''"),
            [("unterminated string literal".to_owned(), 7..8)]
        );
    }

    #[test]
    fn stray_characters() {
        let e = errors("a & b # c = d é");
        let messages: Vec<&str> = e.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "unexpected character '&'",
                "unexpected character '#'",
                "unexpected character '='",
                "unexpected character 'é'"
            ]
        );
        assert_eq!(e[3].1, 14..16);
    }

    #[test]
    fn token_descriptions() {
        assert_eq!(K::RParen.to_string(), "')'");
        assert_eq!(K::Ident("x".into()).to_string(), "identifier 'x'");
        assert_eq!(K::Int(3).to_string(), "int literal 3");
        assert_eq!(K::Reserved("if").to_string(), "reserved word 'if'");
        assert_eq!(K::In.to_string(), "'in'");
    }
}
