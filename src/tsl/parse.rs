//! TSL text → [`Tsl`], accepting what the HyperFleet API accepts on a resource list.
//!
//! Three steps, as the API takes them: tree-search-language v6's lexer ([`lex`]) and grammar
//! (`pkg/parser/parser.y`, here by recursive descent into [`Node`]), then the API's walk
//! (`pkg/db/sql_tsl.go` `TSLToSQL`, here [`walk`]) with its checks and its reasons, which also
//! builds the [`Tsl`].
//!
//! Invariants:
//! - a search the API refuses is refused with the API's reason (its 400 `detail`), a parse
//!   error with the library's message and character position and the search under it;
//! - a search the API accepts but that [`Tsl`] cannot express (`LIKE`, `spec.*`, a column
//!   compared with a column, arithmetic, a literal of a type the column's SQL type would fail
//!   on) is refused with a reason saying so (`… is not supported by sentinel's fake API`),
//!   never given a different meaning;
//! - printing a parsed tree and parsing the text gives the same tree.

use super::Tsl;

mod lex;
mod walk;

use lex::{Keyword, Tok, Token};

/// The longest search the API accepts, in bytes, counted on the text it parses: the caller's
/// search wrapped with the kind filter (see [`scoped`]).
pub const MAX_SEARCH_LEN: usize = 4096;

/// How deeply a search may nest (parentheses, `not`, brackets): the API has no limit of its own
/// below what 4096 characters allow; this one keeps the recursion of every walk over the tree
/// bounded.
pub const MAX_NESTING: usize = 200;

/// Why a search was refused: the API's 400 reason.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct TslError {
    /// The byte offset in the search where it went wrong, when there is one.
    pub offset: Option<usize>,
    /// What the API says.
    pub reason: String,
}

impl TslError {
    fn new(reason: impl Into<String>) -> TslError {
        TslError {
            offset: None,
            reason: reason.into(),
        }
    }
}

/// The text the API parses for a list of `kind` with the caller's `search` (trimmed, as the
/// API trims it): `(<search>) AND kind = '<kind>'`, or the kind filter alone for a blank
/// search; a list under an owner (`/clusters/{id}/nodepools`) adds `AND owner_id = '<id>'`
/// (hyperfleet-api `pkg/services/resource.go` `List`, `ListByOwner`). [`MAX_SEARCH_LEN`] and
/// the positions of parse errors count on this text.
pub fn scoped(search: &str, kind: &str, owner: Option<&str>) -> String {
    let mut filter = format!("kind = '{kind}'");
    if let Some(owner) = owner {
        filter.push_str(&format!(" AND owner_id = '{owner}'"));
    }
    let search = search.trim();
    if search.is_empty() {
        filter
    } else {
        format!("({search}) AND {filter}")
    }
}

/// Parses and validates a search as the API does. A blank search is [`Tsl::True`] (the API
/// never sees one: it always adds the kind filter, see [`scoped`]).
pub fn parse(text: &str) -> Result<Tsl, TslError> {
    if text.len() > MAX_SEARCH_LEN {
        return Err(TslError::new(format!(
            "search query exceeds maximum length of {MAX_SEARCH_LEN} characters"
        )));
    }
    parse_any_length(text)
}

/// The `tsl` fuzz target's oracle (and its regression test's): `text` parses or is refused
/// without a panic, and a parsed tree prints to a text that parses to the same tree (the
/// printed text may be longer than the original, so its length is not checked). Gives the
/// tree when `text` parses.
pub fn check_round_trip(text: &str) -> Result<Option<Tsl>, String> {
    let Ok(tsl) = parse(text) else {
        return Ok(None);
    };
    // A blank search is no search: no text to print (`Tsl::text_at` gives none).
    if tsl == Tsl::True {
        return Ok(Some(tsl));
    }
    let printed = tsl.to_string();
    match parse_any_length(&printed) {
        Ok(again) if again == tsl => Ok(Some(tsl)),
        Ok(again) => Err(format!(
            "{text:?} parses to {tsl:?}, printed {printed:?}, which parses to {again:?}"
        )),
        Err(e) => Err(format!(
            "{text:?} parses to {tsl:?}, printed {printed:?}, which is refused: {e}"
        )),
    }
}

fn parse_any_length(text: &str) -> Result<Tsl, TslError> {
    if text.trim().is_empty() {
        return Ok(Tsl::True);
    }
    let syntax_error = |message: &str, pos: usize, offset: usize| {
        let pointer = " ".repeat(pos);
        TslError {
            offset: Some(offset),
            reason: format!(
                "failed to parse search query: {message} at position {pos}:\n{text}\n{pointer}^"
            ),
        }
    };
    let tokens = lex::lex(text).map_err(|e| syntax_error(&e.message, e.pos, e.offset))?;
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    let node = parser.expr().and_then(|node| match parser.peek() {
        Tok::Eof => Ok(node),
        _ => Err(Syntax::Error),
    });
    let node = match node {
        Ok(node) => node,
        Err(Syntax::Error) => {
            let token = &parser.tokens[parser.at.min(parser.tokens.len() - 1)];
            return Err(syntax_error("syntax error", token.pos, token.offset));
        }
        Err(Syntax::TooDeep) => return Err(too_deep()),
    };
    if height(&node) > MAX_NESTING {
        return Err(too_deep());
    }
    walk::walk(&node)
}

fn too_deep() -> TslError {
    TslError::new(format!(
        "a search nesting deeper than {MAX_NESTING} levels is not supported by sentinel's fake API"
    ))
}

/// How deep the walks over `node` recurse: a chain of one `and` (or one `or`) counts as one
/// level, because the walk and [`Tsl`] take such a chain as a list.
fn height(node: &Node) -> usize {
    match node {
        Node::Binary(op @ (BinOp::And | BinOp::Or), left, right) => {
            let mut h = height(right);
            let mut spine = left;
            while let Node::Binary(inner, l, r) = spine.as_ref() {
                if inner != op {
                    break;
                }
                h = h.max(height(r));
                spine = l;
            }
            h.max(height(spine))
        }
        Node::Binary(_, left, right) => 1 + height(left).max(height(right)),
        Node::Unary(_, inner) => 1 + height(inner),
        Node::Array(items) => 1 + items.iter().map(height).max().unwrap_or(0),
        _ => 1,
    }
}

/// The library's syntax tree (`pkg/parser/ast.go`), what the API's walk reads.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Node {
    Ident(String),
    Str(String),
    /// The number's value (see [`lex::number_value`]).
    Num(f64),
    Bool(bool),
    /// `YYYY-MM-DD`, kept as text.
    Date(String),
    /// An RFC 3339 text as written.
    Stamp(String),
    /// The right side of `IS NULL`.
    Null,
    Binary(BinOp, Box<Node>, Box<Node>),
    Unary(UnOp, Box<Node>),
    Array(Vec<Node>),
}

/// The binary operators of the grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BinOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Req,
    Rne,
    Like,
    ILike,
    And,
    Or,
    In,
    Between,
    Is,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// The unary operators of the grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnOp {
    Not,
    Neg,
    Len,
    Any,
    All,
    Sum,
}

enum Syntax {
    Error,
    TooDeep,
}

type Parsed = Result<Node, Syntax>;

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

fn binary(op: BinOp, left: Node, right: Node) -> Node {
    Node::Binary(op, Box::new(left), Box::new(right))
}

fn not(node: Node) -> Node {
    Node::Unary(UnOp::Not, Box::new(node))
}

impl Parser {
    fn peek(&self) -> &Tok {
        // The token list always ends with `Eof`, and `bump` never moves past it.
        &self.tokens[self.at.min(self.tokens.len() - 1)].kind
    }

    fn bump(&mut self) -> Tok {
        let tok = self.peek().clone();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        tok
    }

    fn keyword(&self, k: Keyword) -> bool {
        *self.peek() == Tok::Keyword(k)
    }

    fn expect(&mut self, tok: Tok) -> Result<(), Syntax> {
        if *self.peek() == tok {
            self.bump();
            Ok(())
        } else {
            Err(Syntax::Error)
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Parser) -> Parsed) -> Parsed {
        if self.depth >= MAX_NESTING {
            return Err(Syntax::TooDeep);
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn expr(&mut self) -> Parsed {
        let mut left = self.and_expr()?;
        while self.keyword(Keyword::Or) {
            self.bump();
            left = binary(BinOp::Or, left, self.and_expr()?);
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Parsed {
        let mut left = self.comparison()?;
        while self.keyword(Keyword::And) {
            self.bump();
            left = binary(BinOp::And, left, self.comparison()?);
        }
        Ok(left)
    }

    fn comparison(&mut self) -> Parsed {
        let mut left = self.additive()?;
        loop {
            let op = match self.peek() {
                Tok::Eq => BinOp::Eq,
                Tok::Ne => BinOp::Ne,
                Tok::Lt => BinOp::Lt,
                Tok::Le => BinOp::Le,
                Tok::Gt => BinOp::Gt,
                Tok::Ge => BinOp::Ge,
                Tok::Req => BinOp::Req,
                Tok::Rne => BinOp::Rne,
                Tok::Keyword(Keyword::Like) => BinOp::Like,
                Tok::Keyword(Keyword::ILike) => BinOp::ILike,
                Tok::Keyword(Keyword::In) => BinOp::In,
                Tok::Keyword(Keyword::Between) => {
                    self.bump();
                    left = self.between(left)?;
                    continue;
                }
                Tok::Keyword(Keyword::Is) => {
                    self.bump();
                    let negated = self.keyword(Keyword::Not);
                    if negated {
                        self.bump();
                    }
                    self.expect(Tok::Keyword(Keyword::Null))?;
                    let is = binary(BinOp::Is, left, Node::Null);
                    left = if negated { not(is) } else { is };
                    continue;
                }
                Tok::Keyword(Keyword::Not) => {
                    left = self.negated_comparison(left)?;
                    continue;
                }
                _ => return Ok(left),
            };
            self.bump();
            left = binary(op, left, self.additive()?);
        }
    }

    /// `NOT LIKE`, `NOT ILIKE`, `NOT BETWEEN`, `NOT IN` after `left`.
    fn negated_comparison(&mut self, left: Node) -> Parsed {
        self.bump();
        let op = match self.peek() {
            Tok::Keyword(Keyword::Like) => BinOp::Like,
            Tok::Keyword(Keyword::ILike) => BinOp::ILike,
            Tok::Keyword(Keyword::In) => BinOp::In,
            Tok::Keyword(Keyword::Between) => {
                self.bump();
                return Ok(not(self.between(left)?));
            }
            _ => return Err(Syntax::Error),
        };
        self.bump();
        Ok(not(binary(op, left, self.additive()?)))
    }

    /// `<low> AND <high>` after `left BETWEEN`.
    fn between(&mut self, left: Node) -> Parsed {
        let low = self.additive()?;
        self.expect(Tok::Keyword(Keyword::And))?;
        let high = self.additive()?;
        Ok(binary(BinOp::Between, left, Node::Array(vec![low, high])))
    }

    fn additive(&mut self) -> Parsed {
        let mut left = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(left),
            };
            self.bump();
            left = binary(op, left, self.multiplicative()?);
        }
    }

    fn multiplicative(&mut self) -> Parsed {
        let mut left = self.prefixed()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Mod,
                _ => return Ok(left),
            };
            self.bump();
            left = binary(op, left, self.prefixed()?);
        }
    }

    /// `not`, `len`, `any`, `all`, `sum` before an operand.
    fn prefixed(&mut self) -> Parsed {
        let op = match self.peek() {
            Tok::Keyword(Keyword::Not) => UnOp::Not,
            Tok::Keyword(Keyword::Len) => UnOp::Len,
            Tok::Keyword(Keyword::Any) => UnOp::Any,
            Tok::Keyword(Keyword::All) => UnOp::All,
            Tok::Keyword(Keyword::Sum) => UnOp::Sum,
            _ => return self.unary(),
        };
        self.bump();
        self.nested(|p| Ok(Node::Unary(op, Box::new(p.prefixed()?))))
    }

    fn unary(&mut self) -> Parsed {
        match self.peek() {
            Tok::Minus => {
                self.bump();
                self.nested(|p| Ok(Node::Unary(UnOp::Neg, Box::new(p.unary()?))))
            }
            Tok::Plus => {
                self.bump();
                self.nested(Parser::unary)
            }
            Tok::LParen => {
                self.bump();
                let inner = self.nested(Parser::expr)?;
                self.expect(Tok::RParen)?;
                Ok(inner)
            }
            Tok::LBracket => {
                self.bump();
                self.nested(Parser::array)
            }
            _ => self.primary(),
        }
    }

    /// The elements after `[`, through `]` (a trailing comma allowed).
    fn array(&mut self) -> Parsed {
        let mut elements = Vec::new();
        loop {
            if *self.peek() == Tok::RBracket {
                self.bump();
                return Ok(Node::Array(elements));
            }
            elements.push(self.expr()?);
            match self.peek() {
                Tok::Comma => {}
                Tok::RBracket => {
                    self.bump();
                    return Ok(Node::Array(elements));
                }
                _ => return Err(Syntax::Error),
            }
            self.bump();
        }
    }

    fn primary(&mut self) -> Parsed {
        let node = match self.peek() {
            Tok::Num(text) => Node::Num(lex::number_value(text)),
            Tok::Str(s) => Node::Str(s.clone()),
            Tok::Ident(name) => Node::Ident(name.clone()),
            Tok::Stamp(s) => Node::Stamp(s.clone()),
            Tok::Date(s) => Node::Date(s.clone()),
            Tok::Keyword(Keyword::True) => Node::Bool(true),
            Tok::Keyword(Keyword::False) => Node::Bool(false),
            _ => return Err(Syntax::Error),
        };
        self.bump();
        Ok(node)
    }
}

#[cfg(test)]
mod tests;
