//! TSL text → tokens, as tree-search-language v6's lexer (`pkg/parser/lexer.go`) cuts it.
//!
//! Positions are counted in characters, as the Go lexer counts runes, because the API's error
//! text shows them. Letters are `char::is_alphabetic` and digits ASCII digits (Go asks
//! `unicode.IsLetter` and `unicode.IsDigit`, which differ only on scripts no search uses).

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Token {
    pub kind: Tok,
    /// Character index of its first character.
    pub pos: usize,
    /// Byte offset of its first character.
    pub offset: usize,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Str(String),
    /// A number as written (a size suffix included).
    Num(String),
    /// `YYYY-MM-DD`, quoted or not.
    Date(String),
    /// An RFC 3339 text, quoted or not.
    Stamp(String),
    Keyword(Keyword),
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `~=`
    Req,
    /// `~!`
    Rne,
    Eof,
}

/// The keywords, recognised in any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keyword {
    Like,
    ILike,
    And,
    Or,
    Between,
    In,
    Is,
    Null,
    Not,
    True,
    False,
    Len,
    Any,
    All,
    Sum,
}

impl Keyword {
    fn of(word: &str) -> Option<Keyword> {
        const WORDS: [(&str, Keyword); 15] = [
            ("like", Keyword::Like),
            ("ilike", Keyword::ILike),
            ("and", Keyword::And),
            ("or", Keyword::Or),
            ("between", Keyword::Between),
            ("in", Keyword::In),
            ("is", Keyword::Is),
            ("null", Keyword::Null),
            ("not", Keyword::Not),
            ("true", Keyword::True),
            ("false", Keyword::False),
            ("len", Keyword::Len),
            ("any", Keyword::Any),
            ("all", Keyword::All),
            ("sum", Keyword::Sum),
        ];
        WORDS
            .iter()
            .find(|(w, _)| w.len() == word.len() && w.eq_ignore_ascii_case(word))
            .map(|&(_, k)| k)
    }
}

/// A lexing failure: the Go lexer's message and where (character index, byte offset).
#[derive(Debug)]
pub(super) struct LexError {
    pub message: String,
    pub pos: usize,
    pub offset: usize,
}

struct Lexer {
    chars: Vec<(usize, char)>,
    len: usize,
    pos: usize,
    start: usize,
    tokens: Vec<Token>,
}

/// The tokens of `text`, ending with [`Tok::Eof`] (placed where the Go lexer places it: at the
/// start of the last thing scanned, a space included).
pub(super) fn lex(text: &str) -> Result<Vec<Token>, LexError> {
    let mut lexer = Lexer {
        chars: text.char_indices().collect(),
        len: text.len(),
        pos: 0,
        start: 0,
        tokens: Vec::new(),
    };
    while lexer.pos < lexer.chars.len() {
        lexer.start = lexer.pos;
        lexer.scan()?;
    }
    lexer.push(Tok::Eof);
    Ok(lexer.tokens)
}

/// `^\d{4}-\d{2}-\d{2}$`
pub(super) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`
pub(super) fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || !is_date(&s[..10]) || b[10] != b'T' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19)) {
        return false;
    }
    let mut i = 19;
    if b[i] == b'.' {
        let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        i += 1 + n;
    }
    match &b[i..] {
        [b'Z'] => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|&(_, c)| c)
    }

    fn peek_next(&self) -> Option<char> {
        self.chars.get(self.pos + 1).map(|&(_, c)| c)
    }

    fn offset_of(&self, pos: usize) -> usize {
        self.chars.get(pos).map_or(self.len, |&(o, _)| o)
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.chars[from..to].iter().map(|&(_, c)| c).collect()
    }

    fn push(&mut self, kind: Tok) {
        let offset = self.offset_of(self.start);
        self.tokens.push(Token {
            kind,
            pos: self.start,
            offset,
        });
    }

    fn fail(&self, message: String) -> LexError {
        LexError {
            message,
            pos: self.start,
            offset: self.offset_of(self.start),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn scan(&mut self) -> Result<(), LexError> {
        let c = self.chars[self.pos].1;
        self.pos += 1;
        let kind = match c {
            ' ' | '\r' | '\t' | '\n' | '\u{c}' | '\u{b}' => return Ok(()),
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '[' => Tok::LBracket,
            ']' => Tok::RBracket,
            ',' => Tok::Comma,
            '+' => Tok::Plus,
            '-' => Tok::Minus,
            '*' => Tok::Star,
            '/' => Tok::Slash,
            '%' => Tok::Percent,
            '=' => {
                self.eat('=');
                Tok::Eq
            }
            '<' if self.eat('=') => Tok::Le,
            '<' if self.eat('>') => Tok::Ne,
            '<' => Tok::Lt,
            '>' if self.eat('=') => Tok::Ge,
            '>' => Tok::Gt,
            '!' if self.eat('=') => Tok::Ne,
            '~' if self.eat('=') => Tok::Req,
            '~' if self.eat('!') => Tok::Rne,
            '\'' | '"' | '`' => return self.string(c),
            c if c.is_ascii_digit() => {
                self.pos -= 1;
                return if self.date_ahead() {
                    self.date_time()
                } else {
                    self.number()
                };
            }
            c if c.is_alphabetic() || c == '_' => {
                self.pos -= 1;
                return self.identifier();
            }
            c => return Err(self.fail(format!("Unexpected character '{c}'"))),
        };
        self.push(kind);
        Ok(())
    }

    /// Whether a date or an RFC 3339 time starts here (Go's `isDateTimePattern`).
    fn date_ahead(&self) -> bool {
        let rest = &self.chars[self.pos..];
        if rest.len() < 10 || !is_date(&self.text(self.pos, self.pos + 10)) {
            return false;
        }
        if rest.len() == 10 || rest[10].1 != 'T' {
            return true;
        }
        let end = rest[10..]
            .iter()
            .position(|&(_, c)| matches!(c, ' ' | '\t' | '\n' | ')' | ','))
            .map_or(rest.len(), |i| i + 10);
        is_rfc3339(&self.text(self.pos, self.pos + end))
    }

    fn date_time(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, ' ' | '\t' | '\n' | ')' | ',' | ']') {
                break;
            }
            self.pos += 1;
        }
        let value = self.text(start, self.pos);
        if is_rfc3339(&value) {
            self.push(Tok::Stamp(value));
        } else if is_date(&value) {
            self.push(Tok::Date(value));
        } else {
            self.pos = start;
            return self.number();
        }
        Ok(())
    }

    fn string(&mut self, quote: char) -> Result<(), LexError> {
        let mut value = String::new();
        loop {
            match self.peek() {
                None => return Err(self.fail("Unterminated string".into())),
                Some(c) if c == quote => break,
                Some('\\') if self.pos + 1 < self.chars.len() => {
                    let escaped = self.chars[self.pos + 1].1;
                    self.pos += 2;
                    value.push(match escaped {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        other => other,
                    });
                }
                Some(c) => {
                    self.pos += 1;
                    value.push(c);
                }
            }
        }
        self.pos += 1;
        let kind = if is_date(&value) {
            Tok::Date(value)
        } else if is_rfc3339(&value) {
            Tok::Stamp(value)
        } else {
            Tok::Str(value)
        };
        self.push(kind);
        Ok(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    fn number(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        self.digits();
        if self.peek() == Some('.') && self.peek_next().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
            self.digits();
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            self.digits();
        }
        if matches!(
            self.peek(),
            Some('k' | 'K' | 'm' | 'M' | 'g' | 'G' | 't' | 'T' | 'p' | 'P')
        ) {
            self.pos += 1;
            if matches!(self.peek(), Some('i' | 'I')) {
                self.pos += 1;
            }
        }
        let value = self.text(start, self.pos);
        self.push(Tok::Num(value));
        Ok(())
    }

    fn identifier(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        self.pos += 1;
        while let Some(c) = self.peek() {
            if c.is_alphabetic() || c.is_ascii_digit() || matches!(c, '_' | '.' | '/') {
                self.pos += 1;
            } else if c == '[' {
                self.pos += 1;
                while self.peek().is_some_and(|c| c != ']') {
                    self.pos += 1;
                }
                self.eat(']');
            } else {
                break;
            }
        }
        let value = self.text(start, self.pos);
        let kind = match Keyword::of(&value) {
            Some(k) => Tok::Keyword(k),
            None => Tok::Ident(value),
        };
        self.push(kind);
        Ok(())
    }
}

/// The value of a number token as tree-search-language computes it (`parseSizeValue`): a
/// float, times 1000^n for `k M G T P` or 1024^n for `Ki Mi Gi Ti Pi`; 0 for text Go's
/// `strconv.ParseFloat` refuses or finds out of range.
pub(super) fn number_value(text: &str) -> f64 {
    let parse = |s: &str| match s.parse::<f64>() {
        Ok(v) if v.is_finite() => v,
        _ => 0.0,
    };
    let power = |c: u8| match c.to_ascii_lowercase() {
        b'k' => Some(1),
        b'm' => Some(2),
        b'g' => Some(3),
        b't' => Some(4),
        b'p' => Some(5),
        _ => None,
    };
    let b = text.as_bytes();
    let Some(&last) = b.last() else {
        return 0.0;
    };
    if let Some(n) = power(last) {
        return parse(&text[..text.len() - 1]) * 1000f64.powi(n);
    }
    if matches!(last, b'i' | b'I')
        && b.len() >= 2
        && let Some(n) = power(b[b.len() - 2])
    {
        return parse(&text[..text.len() - 2]) * 1024f64.powi(n);
    }
    parse(text)
}
