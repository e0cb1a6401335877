//! `matches` patterns: RE2 syntax, as Go's `regexp` (what cel-go runs) reads it, translated to
//! the syntax of the `regex` crate, which implements the same automata but differs in the
//! details.
//!
//! Takes a pattern and gives an equivalent pattern for the `regex` crate, or why RE2 rejects it.
//! What changes: `\d \s \w \b` (and their negations) are ASCII-only, as in RE2; `\Q…\E` quotes
//! literal text; octal escapes (`\012`) become hex; a `{` that is not a repeat is a literal; `[`,
//! `&&`, `--` and `~~` inside a class are literals (the crate reads nested classes and set
//! operations there). What is rejected as RE2 rejects it: stacked repetition (`a**`, `a++`,
//! `a{2}*`), repeat counts over 1000 (alone or multiplied through nested repeats), flags other
//! than `imsU`, escapes RE2 does not define (`\e`, `\u`, `\<` is a literal `<` there, …). `\C`
//! (any byte) is not supported: Go rejects it too.
//!
//! Invariant: the translation never changes what an accepted pattern matches: every construct
//! it does not rewrite means the same in both syntaxes.

use std::fmt::Write as _;

/// RE2's limit on a repeat count (and on counts multiplied through nested repeats).
const MAX_REPEAT: u64 = 1000;

/// RE2's `\d`, `\s`, `\w` as ASCII ranges (without the brackets).
fn perl_class(c: char) -> Option<(&'static str, bool)> {
    Some(match c {
        'd' => ("0-9", false),
        'D' => ("0-9", true),
        's' => ("\\t\\n\\f\\r ", false),
        'S' => ("\\t\\n\\f\\r ", true),
        'w' => ("0-9A-Za-z_", false),
        'W' => ("0-9A-Za-z_", true),
        _ => return None,
    })
}

/// Translates an RE2 pattern; the error says what RE2 rejects (lowercase, no pattern).
pub fn translate(pattern: &str) -> Result<String, String> {
    Translator {
        chars: pattern.chars().collect(),
        pos: 0,
        out: String::with_capacity(pattern.len() + 16),
        groups: vec![1],
        last: None,
    }
    .run()
}

struct Translator {
    chars: Vec<char>,
    pos: usize,
    out: String,
    /// Per open group (the whole pattern first): the largest repeat weight inside it.
    groups: Vec<u64>,
    /// The weight of the last atom (1, or its repeat counts multiplied), `None` right after a
    /// repetition operator (so a second one is stacked) or where nothing can be repeated.
    last: Option<Last>,
}

#[derive(Clone, Copy)]
enum Last {
    Atom(u64),
    Repeat,
}

impl Translator {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn run(mut self) -> Result<String, String> {
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '\\' => self.escape()?,
                '[' => {
                    self.class()?;
                    self.atom(1);
                }
                '(' => self.open_group()?,
                ')' => {
                    // An unmatched `)` is left for the crate to report.
                    let inner = if self.groups.len() > 1 {
                        self.groups.pop().unwrap_or(1)
                    } else {
                        1
                    };
                    self.out.push(')');
                    self.atom(inner);
                }
                '*' | '+' | '?' => self.repetition(c.to_string(), None)?,
                '{' => match self.repeat_count() {
                    Some((text, count)) => self.repetition(text, Some(count))?,
                    None => {
                        self.out.push_str("\\{");
                        self.atom(1);
                    }
                },
                '|' => {
                    self.out.push('|');
                    self.last = None;
                }
                '^' | '$' => {
                    self.out.push(c);
                    self.atom(1);
                }
                other => {
                    self.out.push(other);
                    self.atom(1);
                }
            }
        }
        Ok(self.out)
    }

    /// Records an atom of weight `w` (its nested repeat counts multiplied).
    fn atom(&mut self, w: u64) {
        self.last = Some(Last::Atom(w));
        if let Some(g) = self.groups.last_mut() {
            *g = (*g).max(w);
        }
    }

    /// `*`, `+`, `?` or `{…}` (then an optional `?` for non-greedy).
    fn repetition(&mut self, op: String, count: Option<u64>) -> Result<(), String> {
        let lazy = self.peek(0) == Some('?');
        let shown = if lazy { format!("{op}?") } else { op.clone() };
        let weight = match self.last {
            Some(Last::Atom(w)) => w,
            Some(Last::Repeat) => {
                return Err(format!("invalid nested repetition operator: `{shown}`"));
            }
            None => {
                return Err(format!(
                    "missing argument to repetition operator: `{shown}`"
                ));
            }
        };
        if let Some(count) = count.filter(|c| *c > 0)
            && weight.saturating_mul(count) > MAX_REPEAT
        {
            return Err(format!("invalid repeat count: `{op}`"));
        }
        let weight = weight.saturating_mul(count.unwrap_or(1).max(1));
        if let Some(g) = self.groups.last_mut() {
            *g = (*g).max(weight);
        }
        self.out.push_str(&op);
        if lazy {
            self.pos += 1;
            self.out.push('?');
        }
        // A repetition right after this one is stacked, which RE2 rejects.
        self.last = Some(Last::Repeat);
        Ok(())
    }

    /// After `{`: a repeat `{n}`, `{n,}` or `{n,m}` (its text and the count that bounds it), or
    /// `None` when the brace is a literal (nothing consumed).
    fn repeat_count(&mut self) -> Option<(String, u64)> {
        let body: String = self.chars[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == ',')
            .collect();
        if self.chars.get(self.pos + body.len()) != Some(&'}') {
            return None;
        }
        let body = body.as_str();
        let (min, max) = match body.split_once(',') {
            Some((min, max)) => (min, Some(max)),
            None => (body, None),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(min) || max.is_some_and(|m| !m.is_empty() && !digits(m)) {
            return None;
        }
        self.pos += body.len() + 1;
        let min_n: u64 = min.parse().unwrap_or(u64::MAX);
        let max_n = match max {
            None => Some(min_n),
            Some("") => None,
            Some(m) => Some(m.parse().unwrap_or(u64::MAX)),
        };
        // Counts RE2 refuses outright (`{1001}`, `{2,1}`) weigh more than the limit.
        let bad = min_n > MAX_REPEAT || max_n.is_some_and(|m| m > MAX_REPEAT || m < min_n);
        let count = if bad {
            u64::MAX
        } else {
            max_n.unwrap_or(min_n)
        };
        Some((format!("{{{body}}}"), count))
    }

    fn open_group(&mut self) -> Result<(), String> {
        self.out.push('(');
        if self.peek(0) == Some('?') {
            self.pos += 1;
            self.out.push('?');
            match (self.peek(0), self.peek(1)) {
                (Some('P'), Some('<')) | (Some('<'), _) => {
                    // A named group: the name runs to `>`; the crate checks its characters.
                    while let Some(c) = self.peek(0) {
                        self.pos += 1;
                        self.out.push(c);
                        if c == '>' {
                            break;
                        }
                    }
                }
                _ => loop {
                    let Some(c) = self.peek(0) else {
                        // Unterminated: the crate reports it.
                        return Ok(());
                    };
                    self.pos += 1;
                    match c {
                        'i' | 'm' | 's' | 'U' | '-' => self.out.push(c),
                        ':' => break self.out.push(':'),
                        ')' => {
                            // `(?flags)` sets flags for the rest of the group: no group opens.
                            self.out.push(')');
                            self.last = None;
                            return Ok(());
                        }
                        _ => return Err("invalid or unsupported Perl syntax: `(?`".into()),
                    }
                },
            }
        }
        self.groups.push(1);
        self.last = None;
        Ok(())
    }

    /// After a `\` outside a class.
    fn escape(&mut self) -> Result<(), String> {
        let Some(c) = self.peek(0) else {
            // A trailing backslash: the crate reports it.
            self.out.push('\\');
            return Ok(());
        };
        self.pos += 1;
        match c {
            'Q' => {
                let mut literal = String::new();
                while let Some(c) = self.peek(0) {
                    if c == '\\' && self.peek(1) == Some('E') {
                        self.pos += 2;
                        break;
                    }
                    self.pos += 1;
                    literal.push(c);
                }
                // An empty `\Q\E` is nothing at all: it cannot be repeated.
                if literal.is_empty() {
                    return Ok(());
                }
                // Only the last character is the atom a following repetition applies to.
                let last_len = literal.chars().last().map_or(0, char::len_utf8);
                let (head, tail) = literal.split_at(literal.len() - last_len);
                self.out.push_str(&regex::escape(head));
                self.out.push_str(&regex::escape(tail));
                self.atom(1);
                return Ok(());
            }
            'b' | 'B' => {
                let _ = write!(self.out, "(?-u:\\{c})");
                self.atom(1);
                return Ok(());
            }
            'A' | 'z' => {
                let _ = write!(self.out, "\\{c}");
                self.atom(1);
                return Ok(());
            }
            _ => {}
        }
        if let Some((ranges, negated)) = perl_class(c) {
            let caret = if negated { "^" } else { "" };
            let _ = write!(self.out, "[{caret}{ranges}]");
        } else {
            let text = self.char_escape(c)?;
            self.out.push_str(&text);
        }
        self.atom(1);
        Ok(())
    }

    /// An escape that stands for characters, in or out of a class: `\pN`, `\p{Greek}`, `\x41`,
    /// `\x{263a}`, octal, `\a \f \t \n \r \v`, escaped punctuation. Returns its translation.
    fn char_escape(&mut self, c: char) -> Result<String, String> {
        Ok(match c {
            'p' | 'P' => {
                // RE2 negates a braced class with `^` too (`\p{^Greek}`); the crate does not.
                let negate = self.peek(0) == Some('{') && self.peek(1) == Some('^');
                let letter = match (c, negate) {
                    ('p', true) => 'P',
                    ('P', true) => 'p',
                    _ => c,
                };
                let mut text = format!("\\{letter}");
                if negate {
                    self.pos += 2;
                    text.push('{');
                }
                if negate || self.peek(0) == Some('{') {
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        text.push(n);
                        if n == '}' {
                            break;
                        }
                    }
                } else if let Some(n) = self.peek(0) {
                    self.pos += 1;
                    text.push(n);
                }
                text
            }
            'x' => {
                let mut text = String::from("\\x");
                let braced = self.peek(0) == Some('{');
                let mut taken = 0;
                while let Some(n) = self.peek(0) {
                    if !braced && taken == 2 {
                        break;
                    }
                    self.pos += 1;
                    taken += 1;
                    text.push(n);
                    if braced && n == '}' {
                        break;
                    }
                }
                text
            }
            'a' => "\\x07".into(),
            'f' | 't' | 'n' | 'r' | 'v' => format!("\\{c}"),
            '0'..='7' => {
                // RE2: `\0` and two- or three-digit octal are codes; `\1`…`\7` alone would be
                // back-references, which RE2 does not have.
                let mut value = c.to_digit(8).unwrap_or(0);
                let mut digits = 1;
                while digits < 3 {
                    match self.peek(0).and_then(|n| n.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            self.pos += 1;
                            digits += 1;
                        }
                        None => break,
                    }
                }
                if c != '0' && digits == 1 {
                    return Err(format!("invalid escape sequence: `\\{c}`"));
                }
                format!("\\x{{{value:x}}}")
            }
            'C' => return Err("`\\C` (any byte) is not supported".into()),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => format!("\\x{{{:x}}}", c as u32),
            c => return Err(format!("invalid escape sequence: `\\{c}`")),
        })
    }

    /// After `[`: a character class up to its `]`.
    fn class(&mut self) -> Result<(), String> {
        self.out.push('[');
        if self.peek(0) == Some('^') {
            self.pos += 1;
            self.out.push('^');
        }
        // A `]` first in the class is a literal.
        if self.peek(0) == Some(']') {
            self.pos += 1;
            self.out.push_str("\\]");
        }
        loop {
            let Some(c) = self.peek(0) else {
                // Unclosed: the crate reports it (`unclosed character class`).
                return Ok(());
            };
            self.pos += 1;
            match c {
                ']' => break,
                '[' if self.peek(0) == Some(':') => {
                    // A POSIX class `[:alpha:]` (ASCII in both syntaxes).
                    let rest: String = self.chars[self.pos..].iter().take(12).collect();
                    let name_ok = |name: &str| {
                        let name = name.strip_prefix('^').unwrap_or(name);
                        !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase())
                    };
                    match rest
                        .find(":]")
                        .filter(|end| *end > 0 && name_ok(&rest[1..*end]))
                    {
                        Some(end) => {
                            let _ = write!(self.out, "[{}:]", &rest[..end]);
                            self.pos += rest[..end].chars().count() + 2;
                        }
                        None => self.out.push_str("\\["),
                    }
                }
                '[' => self.out.push_str("\\["),
                '&' | '~' => {
                    let _ = write!(self.out, "\\x{{{:x}}}", c as u32);
                }
                '-' if self.peek(0) == Some('-') => {
                    // `a--` is a range ending in `-` in RE2, a set difference to the crate.
                    self.pos += 1;
                    self.out.push_str("-\\x{2d}");
                }
                '\\' => {
                    let Some(e) = self.peek(0) else {
                        self.out.push('\\');
                        return Ok(());
                    };
                    self.pos += 1;
                    if let Some((ranges, negated)) = perl_class(e) {
                        if negated {
                            let _ = write!(self.out, "[^{ranges}]");
                        } else {
                            self.out.push_str(ranges);
                        }
                    } else {
                        let text = self.char_escape(e)?;
                        self.out.push_str(&text);
                    }
                }
                other => self.out.push(other),
            }
        }
        self.out.push(']');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Table tests against RE2's documented syntax (google/re2 `doc/syntax.txt`) and Go's
    //! `regexp/syntax`, which is what cel-go compiles `matches` patterns with.

    use super::translate;

    fn is_match(pattern: &str, text: &str) -> Result<bool, String> {
        let translated = translate(pattern)?;
        regex::Regex::new(&translated)
            .map(|re| re.is_match(text))
            .map_err(|e| format!("crate rejects {translated:?}: {e}"))
    }

    #[test]
    fn perl_classes_and_word_boundaries_are_ascii() {
        let cases: &[(&str, &str, bool)] = &[
            (r"^\w+$", "abc_09", true),
            (r"^\w+$", "é", false),
            (r"^\W$", "é", true),
            (r"^\d$", "٣", false), // ARABIC-INDIC DIGIT THREE
            (r"^\d+$", "0123456789", true),
            (r"^\D$", "٣", true),
            (r"^\s$", "\u{a0}", false), // NO-BREAK SPACE
            (r"^\s$", "\u{b}", false),  // RE2's \s has no \v
            (r"^\s+$", " \t\n\r\u{c}", true),
            (r"^\S$", "\u{a0}", true),
            (r"\bé", "é", false),
            (r"\ba", "éa", true),
            (r"a\B", "aé", false),
            (r"^[\w-]+$", "a-b_c", true),
            (r"^[\w]+$", "é", false),
            (r"^[^\d]$", "٣", true),
            (r"^[\D]$", "5", false),
            (r"^[x\S]$", " ", false),
            (r"^\pL$", "é", true),
            (r"^\p{Greek}+$", "αβ", true),
            (r"^\PL$", "é", false),
            (r"^[[:alpha:]]+$", "abc", true),
            (r"^[[:alpha:]]$", "é", false),
            (r"^[[:^digit:]]$", "a", true),
            (r"^[[:word:]]+$", "a_1", true),
            (r"^\p{^Greek}$", "a", true),
            (r"^\p{^Greek}$", "α", false),
            (r"^[\p{Greek}\d]+$", "α1", true),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(
                is_match(pattern, text),
                Ok(*want),
                "{pattern:?} on {text:?}"
            );
        }
    }

    #[test]
    fn what_re2_accepts_is_accepted() {
        let cases: &[(&str, &str, bool)] = &[
            (r"\Qa.b*c\E", "xa.b*cx", true),
            (r"\Qa.b\E", "axb", false),
            (r"\Qa+", "a+", true),        // \Q without \E runs to the end
            (r"^\Qab\E+$", "abbb", true), // the repetition binds to the last character
            (r"^a{2}$", "aa", true),
            (r"^a{2,}$", "aaa", true),
            (r"^a{1,2}$", "aaa", false),
            (r"^a{1000}$", &"a".repeat(1000), true),
            (r"^(a{10}){100}$", &"a".repeat(1000), true),
            (r"^a{,2}$", "a{,2}", true), // not a repeat in RE2: literal text
            (r"^a{x}$", "a{x}", true),
            (r"^{$", "{", true),
            (r"^a*?b$", "aab", true),
            (r"^a+?$", "a", true),
            (r"(?i)^abc$", "ABC", true),
            (r"(?i:a)b", "Ab", true),
            (r"(?s)^.$", "\n", true),
            (r"(?m)^b$", "a\nb", true),
            (r"(?U)^a+$", "aa", true),
            // RE2's doc lists `(?<name>` as unsupported; Go's regexp takes it since Go 1.22,
            // and the Go sentinel builds with Go 1.26.
            (r"(?P<x>a)(?<y>b)", "ab", true),
            (r"^\141\x62\x{63}$", "abc", true), // octal and hex escapes
            (r"^\0$", "\0", true),
            (r"^\012$", "\n", true),
            (r"^\.\+\-\<\>$", ".+-<>", true), // escaped punctuation is literal
            (r"^\a\f\t\n\r\v$", "\u{7}\u{c}\t\n\r\u{b}", true),
            (r"^[]a]+$", "]a", true),
            (r"^[^]a]$", "b", true),
            (r"^[[a]+$", "[a", true), // `[` in a class is literal
            (r"^[a&&b]+$", "a&b", true),
            (r"^[a~~b]+$", "~", true),
            (r"^[+--]+$", ",-", true), // the range + to -
            (r"^[\-]$", "-", true),
            (r"^[\]]$", "]", true),
            (r"\Aab\z", "ab", true),
            (r"a|b|", "", true),
            (r"()", "", true),
            (r"^(a*)*$", "aa", true),
            (r"^é+$", "éé", true),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(
                is_match(pattern, text),
                Ok(*want),
                "{pattern:?} on {text:?}"
            );
        }
    }

    #[test]
    fn what_re2_rejects_is_rejected() {
        let cases: &[(&str, &str)] = &[
            ("a**", "invalid nested repetition operator: `*`"),
            ("a++", "invalid nested repetition operator: `+`"),
            ("a*+", "invalid nested repetition operator: `+`"),
            ("a?*", "invalid nested repetition operator: `*`"),
            ("a*??", "invalid nested repetition operator: `?`"),
            ("a{2}{3}", "invalid nested repetition operator: `{3}`"),
            ("a{2}*", "invalid nested repetition operator: `*`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("a{1001,}", "invalid repeat count: `{1001,}`"),
            ("a{0,1001}", "invalid repeat count: `{0,1001}`"),
            ("a{2,1}", "invalid repeat count: `{2,1}`"),
            ("(a{11}){100}", "invalid repeat count: `{100}`"),
            ("((a{2}){2}){251}", "invalid repeat count: `{251}`"),
            ("*a", "missing argument to repetition operator: `*`"),
            ("(|+)", "missing argument to repetition operator: `+`"),
            (r"\C", "`\\C` (any byte) is not supported"),
            (r"\1", "invalid escape sequence: `\\1`"),
            (r"(a)\1", "invalid escape sequence: `\\1`"),
            (r"\8", "invalid escape sequence: `\\8`"),
            (r"\e", "invalid escape sequence: `\\e`"),
            (r"\u0041", "invalid escape sequence: `\\u`"),
            (r"\Z", "invalid escape sequence: `\\Z`"),
            (r"\G", "invalid escape sequence: `\\G`"),
            (r"\cK", "invalid escape sequence: `\\c`"),
            (r"\o{12}", "invalid escape sequence: `\\o`"),
            (r"(?P=name)", "invalid or unsupported Perl syntax: `(?`"),
            (r"(?#comment)", "invalid or unsupported Perl syntax: `(?`"),
            (r"(?>a)", "invalid or unsupported Perl syntax: `(?`"),
            (r"[\Q]\E]", "invalid escape sequence: `\\Q`"),
            (r"[\b]", "invalid escape sequence: `\\b`"),
            ("(?x)a b", "invalid or unsupported Perl syntax: `(?`"),
            ("(?u)a", "invalid or unsupported Perl syntax: `(?`"),
            ("(?=a)", "invalid or unsupported Perl syntax: `(?`"),
        ];
        for (pattern, want) in cases {
            assert_eq!(translate(pattern), Err(want.to_string()), "{pattern:?}");
        }
        // What is malformed for both is left to the crate, which says so in its own words.
        for pattern in ["(a", "a)", "[a", "[a-", "a\\", "[a\\", "(?i"] {
            let e = is_match(pattern, "").expect_err(pattern);
            assert!(e.starts_with("crate rejects"), "{pattern:?}: {e}");
        }
        assert!(is_match(r"\x{110000}", "").is_err());
    }

    #[test]
    fn weights_do_not_leak_across_alternatives_and_groups() {
        // Each repeat is checked against what it actually repeats.
        assert!(translate("a{1000}|b{1000}").is_ok());
        assert!(translate("(a{500})b{2}").is_ok());
        assert!(translate("(a{500}|b){2}").is_ok());
        assert!(translate("(a{500}|b){3}").is_err());
        assert!(translate("(?i)a{1000}").is_ok());
    }

    #[test]
    fn never_panics_on_short_patterns() {
        // Every pattern of one to three characters over the syntax's special characters: the
        // translation and the crate both answer (a value or an error), never a panic.
        let alphabet: Vec<String> = "\\[](){}*+?|^$-&~:P<>QEdb1,pxé"
            .chars()
            .map(String::from)
            .collect();
        let mut n = 0;
        for a in &alphabet {
            for b in std::iter::once("").chain(alphabet.iter().map(String::as_str)) {
                for c in std::iter::once("").chain(alphabet.iter().map(String::as_str)) {
                    let pattern = format!("{a}{b}{c}");
                    if let Ok(t) = translate(&pattern) {
                        let _ = regex::Regex::new(&t);
                    }
                    n += 1;
                }
            }
        }
        assert!(n > 20_000, "{n}");
    }
}
