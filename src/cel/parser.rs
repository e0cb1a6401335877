//! The CEL parser façade: source text → untyped [`Expr`] with macros expanded.
//!
//! Takes one expression's source; gives its syntax tree or every error found (lexical errors,
//! then the first syntax error together with every non-fatal one: reserved words, out-of-range
//! ints, unsupported syntax, bad macro arguments, nesting too deep). The LALRPOP-generated parser
//! (from `grammar/cel.lalrpop`) stays private to this module.
//!
//! Invariant: the tree never nests deeper than [`MAX_DEPTH`] (parentheses count as a level).
//! Depth is computed while the tree is built, so no deeper tree ever exists, and every later
//! stage may recurse over the tree safely.

use super::ast::{BinaryOp, Expr, ExprKind, Literal, UnaryOp};
use super::diag::Diagnostic;
use super::lexer::{self, Token, TokenKind};
use super::macros;
use super::span::Span;
use lalrpop_util::ParseError;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused_qualifications, unreachable_pub)]
    grammar,
    "/cel.rs"
);

/// The deepest an expression may nest; deeper input is rejected with a diagnostic.
pub const MAX_DEPTH: u32 = 200;

/// Parses `src` into a syntax tree with macros expanded, or returns every error found.
pub fn parse(src: &str) -> Result<Expr, Vec<Diagnostic>> {
    let (tokens, lex_diags) = lexer::lex_all(src);
    if !lex_diags.is_empty() {
        return Err(lex_diags);
    }
    let mut builder = Builder::default();
    let input = tokens
        .iter()
        .map(|t| Ok::<_, Diagnostic>((t.span.start as usize, t.kind.clone(), t.span.end as usize)));
    let result = grammar::ExprParser::new().parse(&mut builder, input);
    let mut diags = builder.diags;
    match result {
        Ok(node) if diags.is_empty() => return Ok(node.expr),
        Ok(_) => {}
        Err(err) => diags.push(syntax_error(err, &tokens)),
    }
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    Err(diags)
}

/// A field or function name with its span.
pub(crate) struct Field {
    name: String,
    span: Span,
    /// Written in backticks: valid for a field, not for a function.
    quoted: bool,
}

impl Field {
    pub(crate) fn new(name: String, l: usize, r: usize) -> Field {
        Field {
            name,
            span: Span::new(l, r),
            quoted: false,
        }
    }

    pub(crate) fn quoted(name: String, l: usize, r: usize) -> Field {
        Field {
            quoted: true,
            ..Field::new(name, l, r)
        }
    }
}

/// An expression under construction, with what the builder needs to know about it.
pub(crate) struct Node {
    expr: Expr,
    /// Nesting depth of `expr`, parentheses included; at most [`MAX_DEPTH`].
    depth: u32,
    form: Form,
}

/// How a [`Node`] was written, where that matters to the builder.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    /// Anything else.
    Plain,
    /// A bare int token; `overflow` indexes the diagnostic recorded when it exceeds `i64::MAX`.
    IntToken {
        magnitude: u64,
        overflow: Option<usize>,
    },
    /// A bare double token.
    DoubleToken,
    /// Nested beyond [`MAX_DEPTH`]: `expr` is a leaf placeholder and the diagnostic is recorded.
    TooDeep,
}

impl Node {
    fn leaf(kind: ExprKind, span: Span, form: Form) -> Node {
        Node {
            expr: Expr { kind, span },
            depth: 1,
            form,
        }
    }

    /// A stand-in for a rejected construct whose diagnostic is already recorded.
    fn placeholder(span: Span) -> Node {
        Node::leaf(ExprKind::Literal(Literal::Null), span, Form::Plain)
    }
}

/// The depth of a node over `children`, or `None` when one of them is already too deep.
fn depth_over<'a>(children: impl IntoIterator<Item = &'a Node>) -> Option<u32> {
    let mut depth = 0;
    for child in children {
        if child.form == Form::TooDeep {
            return None;
        }
        depth = depth.max(child.depth);
    }
    Some(depth + 1)
}

fn boxed(node: Node) -> Box<Expr> {
    Box::new(node.expr)
}

/// Builds nodes for the grammar actions and records non-fatal diagnostics.
#[derive(Default)]
pub(crate) struct Builder {
    diags: Vec<Diagnostic>,
}

impl Builder {
    /// Wraps `kind` into a node of `depth` (`None`: a child is too deep), enforcing [`MAX_DEPTH`].
    fn finish(&mut self, depth: Option<u32>, kind: impl FnOnce() -> ExprKind, span: Span) -> Node {
        match depth {
            None => Node {
                form: Form::TooDeep,
                ..Node::placeholder(span)
            },
            Some(d) if d > MAX_DEPTH => self.too_deep(span),
            Some(depth) => Node {
                expr: Expr { kind: kind(), span },
                depth,
                form: Form::Plain,
            },
        }
    }

    fn too_deep(&mut self, span: Span) -> Node {
        let diag = Diagnostic::new("expression nests too deeply", span)
            .with_label(format!("more than {MAX_DEPTH} levels of nesting"))
            .with_note("split the expression into smaller parts");
        self.diags.push(diag);
        Node {
            form: Form::TooDeep,
            ..Node::placeholder(span)
        }
    }

    pub(crate) fn ternary(&mut self, c: Node, t: Node, e: Node, l: usize, r: usize) -> Node {
        let depth = depth_over([&c, &t, &e]);
        self.finish(
            depth,
            || ExprKind::Ternary(boxed(c), boxed(t), boxed(e)),
            Span::new(l, r),
        )
    }

    pub(crate) fn binary(&mut self, op: BinaryOp, a: Node, c: Node, l: usize, r: usize) -> Node {
        let depth = depth_over([&a, &c]);
        self.finish(
            depth,
            || ExprKind::Binary(op, boxed(a), boxed(c)),
            Span::new(l, r),
        )
    }

    /// A run of `count` `!` or `-` before `m`: cel-go applies the operator once when the run is
    /// odd and not at all when it is even (`!!x` is `x`, `--x` is `x`, with no type check of the
    /// operator). A single minus on a numeric literal token becomes a negative literal, which is
    /// how `-9223372036854775808` (out of range when positive) is accepted; in a longer run the
    /// literal stands alone, so `--9223372036854775808` is an invalid int literal, as in cel-go.
    pub(crate) fn unary_run(
        &mut self,
        op: UnaryOp,
        count: usize,
        m: Node,
        l: usize,
        r: usize,
    ) -> Node {
        let span = Span::new(l, r);
        if count.is_multiple_of(2) {
            return m;
        }
        if op == UnaryOp::Neg && count == 1 {
            match (m.form, &m.expr.kind) {
                (
                    Form::IntToken {
                        magnitude,
                        overflow,
                    },
                    _,
                ) => return self.negative_int(magnitude, overflow, span),
                (Form::DoubleToken, ExprKind::Literal(Literal::Double(v))) => {
                    return Node::leaf(ExprKind::Literal(Literal::Double(-v)), span, Form::Plain);
                }
                _ => {}
            }
        }
        let depth = depth_over([&m]);
        self.finish(depth, || ExprKind::Unary(op, boxed(m)), span)
    }

    fn negative_int(&mut self, magnitude: u64, overflow: Option<usize>, span: Span) -> Node {
        let value = match overflow {
            None => i64::try_from(magnitude).map(|v| -v).ok(),
            // The magnitude's diagnostic was the last one recorded (nothing else is reduced between
            // the literal and its minus); -2^63 is in range after all, so withdraw it.
            Some(idx) if magnitude == 1 << 63 && idx + 1 == self.diags.len() => {
                self.diags.pop();
                Some(i64::MIN)
            }
            Some(_) => None,
        };
        match value {
            Some(v) => Node::leaf(ExprKind::Literal(Literal::Int(v)), span, Form::Plain),
            None => Node::placeholder(span),
        }
    }

    pub(crate) fn select(&mut self, m: Node, f: Field, l: usize, r: usize) -> Node {
        let depth = depth_over([&m]);
        self.finish(
            depth,
            || ExprKind::Member(boxed(m), f.name),
            Span::new(l, r),
        )
    }

    /// A global call (`target` is `None`) or receiver call; macros are expanded here.
    pub(crate) fn call(
        &mut self,
        target: Option<Node>,
        f: Field,
        args: Vec<Node>,
        l: usize,
        r: usize,
    ) -> Node {
        let span = Span::new(l, r);
        if f.quoted {
            let diag = Diagnostic::new("a quoted name cannot be a function name", f.span)
                .with_label("quoted name")
                .with_note("backticks are only for field names, as in m.`content-type`");
            self.diags.push(diag);
        }
        let depth = depth_over(target.iter().chain(&args));
        if depth.is_none_or(|d| d > MAX_DEPTH) {
            return self.finish(depth, || ExprKind::Literal(Literal::Null), span);
        }
        let target = target.map(|t| t.expr);
        let args = args.into_iter().map(|a| a.expr).collect();
        let call = macros::Call {
            target,
            name: f.name,
            args,
        };
        let kind = macros::expand(call, &mut self.diags);
        self.finish(depth, || kind, span)
    }

    pub(crate) fn index(&mut self, m: Node, i: Node, l: usize, r: usize) -> Node {
        let depth = depth_over([&m, &i]);
        self.finish(
            depth,
            || ExprKind::Index(boxed(m), boxed(i)),
            Span::new(l, r),
        )
    }

    pub(crate) fn message(&mut self, _m: Node, l: usize, r: usize) -> Node {
        let span = Span::new(l, r);
        let diag = Diagnostic::new("message construction is not supported", span)
            .with_label("protobuf message literal")
            .with_note("use a map literal such as {'field': value} instead");
        self.diags.push(diag);
        Node::placeholder(span)
    }

    pub(crate) fn leading_dot(&mut self, l: usize, r: usize) -> Node {
        let span = Span::new(l, r);
        let diag = Diagnostic::new("leading '.' in a name is not supported", span)
            .with_label("root-scoped name")
            .with_note("write the name without the leading '.'");
        self.diags.push(diag);
        Node::placeholder(span)
    }

    pub(crate) fn ident(&mut self, name: String, l: usize, r: usize) -> Node {
        Node::leaf(ExprKind::Ident(name), Span::new(l, r), Form::Plain)
    }

    fn reserved_diag(&mut self, word: &str, span: Span, what: &str) {
        let diag = Diagnostic::new(
            format!("'{word}' is a reserved word and cannot be used as {what}"),
            span,
        )
        .with_label("reserved word");
        self.diags.push(diag);
    }

    /// A reserved word where an identifier should be: reported, then treated as an identifier
    /// so that it causes no further errors (e.g. as a macro variable).
    pub(crate) fn reserved(&mut self, word: &'static str, l: usize, r: usize) -> Node {
        let span = Span::new(l, r);
        self.reserved_diag(word, span, "an identifier");
        Node::leaf(ExprKind::Ident(word.to_owned()), span, Form::Plain)
    }

    pub(crate) fn reserved_name(&mut self, word: &'static str, l: usize, r: usize) -> Field {
        let field = Field::new(word.to_owned(), l, r);
        self.reserved_diag(word, field.span, "a function name");
        field
    }

    /// Parentheses add a nesting level but no node: the inner expression keeps its own span.
    pub(crate) fn paren(&mut self, e: Node, l: usize, r: usize) -> Node {
        let span = Span::new(l, r);
        match depth_over([&e]) {
            None => e,
            Some(d) if d > MAX_DEPTH => self.too_deep(span),
            Some(depth) => Node {
                expr: e.expr,
                depth,
                form: Form::Plain,
            },
        }
    }

    pub(crate) fn list(&mut self, items: Vec<Node>, l: usize, r: usize) -> Node {
        let depth = depth_over(&items);
        self.finish(
            depth,
            || ExprKind::List(items.into_iter().map(|n| n.expr).collect()),
            Span::new(l, r),
        )
    }

    pub(crate) fn map(&mut self, entries: Vec<(Node, Node)>, l: usize, r: usize) -> Node {
        let depth = depth_over(entries.iter().flat_map(|(k, v)| [k, v]));
        let kind = || ExprKind::Map(entries.into_iter().map(|(k, v)| (k.expr, v.expr)).collect());
        self.finish(depth, kind, Span::new(l, r))
    }

    /// An int token; above `i64::MAX` it is an error unless a minus folds it (see [`Self::unary`]).
    pub(crate) fn int(&mut self, magnitude: u64, l: usize, r: usize) -> Node {
        let span = Span::new(l, r);
        let overflow = match i64::try_from(magnitude) {
            Ok(_) => None,
            Err(_) => {
                let diag = Diagnostic::new("invalid int literal", span)
                    .with_label("does not fit in a 64-bit int")
                    .with_note("ints range from -9223372036854775808 to 9223372036854775807; add a 'u' suffix for a uint");
                self.diags.push(diag);
                Some(self.diags.len() - 1)
            }
        };
        let value = i64::try_from(magnitude).unwrap_or(0);
        Node::leaf(
            ExprKind::Literal(Literal::Int(value)),
            span,
            Form::IntToken {
                magnitude,
                overflow,
            },
        )
    }

    pub(crate) fn literal(&mut self, lit: Literal, l: usize, r: usize) -> Node {
        let form = if matches!(lit, Literal::Double(_)) {
            Form::DoubleToken
        } else {
            Form::Plain
        };
        Node::leaf(ExprKind::Literal(lit), Span::new(l, r), form)
    }
}

/// Turns LALRPOP's error into a diagnostic: the unexpected token, its span, what would do.
fn syntax_error(err: ParseError<usize, TokenKind, Diagnostic>, tokens: &[Token]) -> Diagnostic {
    let (found, span, expected) = match err {
        ParseError::User { error } => return error,
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => (tok.to_string(), Span::new(l, r), expected),
        ParseError::UnrecognizedEof { location, expected } => (
            "end of input".to_owned(),
            Span::new(location, location),
            expected,
        ),
        ParseError::ExtraToken { token: (l, tok, r) } => {
            (tok.to_string(), Span::new(l, r), Vec::new())
        }
        ParseError::InvalidToken { location } => (
            "token".to_owned(),
            Span::new(location, location),
            Vec::new(),
        ),
    };
    let message = format!(
        "unexpected {found}, expected {}",
        describe_expected(&expected)
    );
    let mut diag = Diagnostic::new(message, span).with_label(format!("unexpected {found}"));
    if let Some(note) = dangling_dot_hint(tokens, span) {
        diag = diag.with_note(note);
    }
    diag
}

/// Terminals that can start an expression (names as written in the grammar).
/// (Only tokens that can start nothing else: `ident`, `(`, `[`, `-` also follow operands or `.`.)
const EXPR_STARTS: [&str; 9] = [
    "int", "uint", "double", "string", "bytes", "true", "false", "null", "!",
];
/// Binary operators: expected after a complete operand.
const OPERATORS: [&str; 14] = [
    "+", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||", "?",
];
/// Punctuation named one by one when expected.
const CLOSERS: [&str; 5] = [")", "]", "}", ",", ":"];

/// Summarises LALRPOP's expected-terminal list in words: "an expression", "an operator or ')'".
fn describe_expected(expected: &[String]) -> String {
    let names: Vec<&str> = expected.iter().map(|e| e.trim_matches('"')).collect();
    let has = |t: &str| names.contains(&t);
    let mut parts: Vec<String> = Vec::new();
    if EXPR_STARTS.iter().any(|t| has(t)) {
        parts.push("an expression".to_owned());
    } else if has("ident") || has("reserved") || has("quoted") {
        parts.push("a name".to_owned());
    }
    if OPERATORS.iter().any(|t| has(t)) {
        parts.push("an operator".to_owned());
    }
    parts.extend(CLOSERS.iter().filter(|t| has(t)).map(|t| format!("'{t}'")));
    match parts.len() {
        // Nothing but the end of input would do.
        0 => "end of input".to_owned(),
        1 => parts.remove(0),
        n => format!("{} or {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

/// `1.` is not a double in CEL; when a syntax error follows `<int>.` say how to write one.
fn dangling_dot_hint(tokens: &[Token], at: Span) -> Option<String> {
    let k = tokens
        .iter()
        .position(|t| t.span.start >= at.start)
        .unwrap_or(tokens.len());
    let (num, dot) = (tokens.get(k.checked_sub(2)?)?, tokens.get(k - 1)?);
    let numeric = matches!(num.kind, TokenKind::Int(_) | TokenKind::Uint(_));
    let adjacent = num.span.end == dot.span.start;
    (numeric && adjacent && dot.kind == TokenKind::Dot)
        .then(|| "a double literal needs digits after the '.': write 1.0, not 1.".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(src: &str) -> Expr {
        parse(src).unwrap_or_else(|d| panic!("parse({src:?}) failed: {d:?}"))
    }

    fn messages(src: &str) -> Vec<String> {
        match parse(src) {
            Ok(e) => panic!("parse({src:?}) succeeded: {e:?}"),
            Err(d) => d.into_iter().map(|d| d.message).collect(),
        }
    }

    fn lit(src: &str) -> Literal {
        match ok(src).kind {
            ExprKind::Literal(l) => l,
            other => panic!("{src:?} is not a literal: {other:?}"),
        }
    }

    #[test]
    fn minus_folds_into_numeric_literals() {
        assert_eq!(lit("-1"), Literal::Int(-1));
        assert_eq!(lit("- 1"), Literal::Int(-1));
        assert_eq!(lit("-9223372036854775808"), Literal::Int(i64::MIN));
        assert_eq!(lit("-0x8000000000000000"), Literal::Int(i64::MIN));
        assert_eq!(lit("-2.5"), Literal::Double(-2.5));
        assert_eq!(ok("-1").span, Span::new(0, 2));
        // Only a minus written directly on the literal folds.
        assert!(matches!(ok("-(1)").kind, ExprKind::Unary(UnaryOp::Neg, _)));
        assert!(matches!(ok("-1u").kind, ExprKind::Unary(UnaryOp::Neg, _)));
        // A run of minuses is applied once when odd, not at all when even (cel-go's parser).
        assert_eq!(lit("--1"), Literal::Int(1));
        assert!(matches!(ok("---1").kind, ExprKind::Unary(UnaryOp::Neg, _)));
        assert!(matches!(ok("--x").kind, ExprKind::Ident(_)));
        assert!(matches!(ok("!!x").kind, ExprKind::Ident(_)));
        assert!(matches!(ok("!!!x").kind, ExprKind::Unary(UnaryOp::Not, _)));
        assert!(parse("-!x").is_err() && parse("!-x").is_err());
    }

    #[test]
    fn int_range_is_checked_with_its_sign() {
        let out_of_range = ["invalid int literal"];
        assert_eq!(messages("9223372036854775808"), out_of_range);
        // Only a single minus makes -2^63 a literal, as in cel-go's grammar.
        assert_eq!(messages("--9223372036854775808"), out_of_range);
        assert_eq!(messages("---9223372036854775808"), out_of_range);
        assert_eq!(messages("- - 9223372036854775808"), out_of_range);
        assert_eq!(messages("-(9223372036854775808)"), out_of_range);
        assert_eq!(messages("-9223372036854775809"), out_of_range);
        assert_eq!(messages("1 - 9223372036854775808"), out_of_range);
        assert_eq!(messages("-9223372036854775808.x"), out_of_range);
        assert_eq!(lit("9223372036854775807"), Literal::Int(i64::MAX));
    }

    #[test]
    fn syntax_errors_name_the_token_and_what_was_expected() {
        let diags = parse("(1 + )").err().unwrap_or_default();
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].message, "unexpected ')', expected an expression");
        assert_eq!(diags[0].span, Span::new(5, 6));
        assert_eq!(
            messages("1 +"),
            ["unexpected end of input, expected an expression"]
        );
        assert_eq!(
            messages("f(1,)"),
            ["unexpected ')', expected an expression"]
        );
        assert_eq!(
            messages("(1 2"),
            ["unexpected int literal 2, expected an operator or ')'"]
        );
        assert_eq!(messages("a."), ["unexpected end of input, expected a name"]);
        assert_eq!(
            messages("[1 2]"),
            ["unexpected int literal 2, expected an operator, ']' or ','"]
        );
    }

    #[test]
    fn non_fatal_errors_are_all_reported() {
        let m = messages("if + 9223372036854775808 + has(x) + a.B{} + .c");
        assert_eq!(
            m,
            [
                "'if' is a reserved word and cannot be used as an identifier",
                "invalid int literal",
                "has() argument must be a field selection",
                "message construction is not supported",
                "leading '.' in a name is not supported",
            ]
        );
        // A syntax error comes with the non-fatal errors found before it.
        assert_eq!(messages("while(1) )").len(), 2);
    }

    #[test]
    fn trailing_commas() {
        assert!(matches!(ok("[1, 2,]").kind, ExprKind::List(ref v) if v.len() == 2));
        assert!(matches!(ok("{1: 2,}").kind, ExprKind::Map(ref v) if v.len() == 1));
        assert_eq!(messages("f(1,)").len(), 1);
        assert_eq!(messages("[,]").len(), 1);
    }

    #[test]
    fn reserved_words_are_fields_but_not_identifiers() {
        assert!(matches!(ok("a.if").kind, ExprKind::Member(_, ref f) if f == "if"));
        assert!(matches!(ok("a.while()").kind, ExprKind::Call { ref name, .. } if name == "while"));
        assert_eq!(
            messages("let"),
            ["'let' is a reserved word and cannot be used as an identifier"]
        );
        assert_eq!(
            messages("void(1)"),
            ["'void' is a reserved word and cannot be used as a function name"]
        );
    }

    /// Sources 100,000 levels deep must give one nesting diagnostic, never a stack overflow
    /// (neither while parsing nor while dropping a tree).
    #[test]
    fn very_deep_input_is_a_diagnostic() {
        const N: usize = 100_000;
        let sources = [
            format!("{}1{}", "(".repeat(N), ")".repeat(N)),
            vec!["1"; N].join("+"),
            format!("{}x{}", "!(".repeat(N), ")".repeat(N)),
            format!("a{}", ".b".repeat(N)),
            format!("a{}", "[0]".repeat(N)),
            format!("{}1{}", "-(".repeat(N), ")".repeat(N)),
            format!("{}{}", "[".repeat(N), "]".repeat(N)),
            format!("{}1{}", "f(".repeat(N), ")".repeat(N)),
            format!("{}c", "a ? b : ".repeat(N)),
            format!("{}x", "a.all(x, ".repeat(N)) + &")".repeat(N),
        ];
        for src in &sources {
            let m = messages(src);
            assert_eq!(m, ["expression nests too deeply"], "for {}…", &src[..20]);
        }
    }

    #[test]
    fn a_run_of_unary_operators_is_one_level() {
        const N: usize = 100_000;
        assert!(matches!(
            ok(&format!("{}x", "!".repeat(N))).kind,
            ExprKind::Ident(_)
        ));
        let odd = ok(&format!("{}x", "-".repeat(N + 1)));
        assert!(matches!(odd.kind, ExprKind::Unary(UnaryOp::Neg, ref m)
            if matches!(m.kind, ExprKind::Ident(_))));
    }

    #[test]
    fn depth_limit_is_exact() {
        let nested = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        // The literal is one level and each pair of parentheses another.
        assert!(parse(&nested(MAX_DEPTH as usize - 1)).is_ok());
        assert_eq!(
            messages(&nested(MAX_DEPTH as usize)),
            ["expression nests too deeply"]
        );
        let chain = |n: usize| vec!["1"; n].join("+");
        assert!(parse(&chain(MAX_DEPTH as usize)).is_ok());
        assert!(parse(&chain(MAX_DEPTH as usize + 1)).is_err());
    }

    #[test]
    fn lexical_errors_stop_before_parsing() {
        assert_eq!(messages("'\\z' + )"), ["invalid escape sequence '\\z'"]);
    }

    #[test]
    fn spans_cover_the_source_of_each_node() {
        let e = ok("a.b(c) + x[0]");
        assert_eq!(e.span, Span::new(0, 13));
        let ExprKind::Binary(BinaryOp::Add, l, r) = e.kind else {
            panic!("not an addition")
        };
        assert_eq!((l.span, r.span), (Span::new(0, 6), Span::new(9, 13)));
        assert_eq!(ok("(a)").span, Span::new(1, 2));
    }

    #[test]
    fn dangling_dot_gets_a_hint() {
        let diags = parse("1.").err().unwrap_or_default();
        assert_eq!(diags[0].message, "unexpected end of input, expected a name");
        assert!(diags[0].notes[0].contains("write 1.0"));
    }
}
