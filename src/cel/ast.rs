//! The untyped syntax tree produced by [`crate::cel::parse`], after macro expansion.
//!
//! Invariant: every node carries the [`Span`] of the source text it was parsed from, and macros
//! (`has`, `all`, `exists`, `exists_one`, `map`, `filter`) appear only as [`ExprKind::Has`] and
//! [`ExprKind::Comprehension`], never as plain calls.

use super::span::Span;

/// An expression node with its source span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What the node is.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// A literal constant as written in the source.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A signed 64-bit integer (negative values come from folding unary minus).
    Int(i64),
    /// An unsigned 64-bit integer (`1u`).
    Uint(u64),
    /// A double (`1.5`, `1e3`).
    Double(f64),
    /// A string after escape processing.
    String(String),
    /// A bytes literal after escape processing.
    Bytes(Vec<u8>),
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `!e`
    Not,
    /// `-e`
    Neg,
}

/// Binary operators, including the logical ones (`&&`, `||`) whose evaluation absorbs errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `in`
    In,
    /// `&&`
    And,
    /// `||`
    Or,
}

impl BinaryOp {
    /// The operator as written in CEL source.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::In => "in",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }
}

/// Which comprehension macro a [`Comprehension`] came from; each has its own fold semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacroKind {
    /// `e.all(x, p)`: folds with `&&`, absorbing errors as `&&` does.
    All,
    /// `e.exists(x, p)`: folds with `||`, absorbing errors as `||` does.
    Exists,
    /// `e.exists_one(x, p)`: counts matches; any error is the result.
    ExistsOne,
    /// `e.map(x, t)` or `e.map(x, p, t)`: builds a list.
    Map,
    /// `e.filter(x, p)`: builds a list of the elements for which `p` holds.
    Filter,
}

impl MacroKind {
    /// The macro's name as written in CEL source.
    pub fn name(self) -> &'static str {
        match self {
            MacroKind::All => "all",
            MacroKind::Exists => "exists",
            MacroKind::ExistsOne => "exists_one",
            MacroKind::Map => "map",
            MacroKind::Filter => "filter",
        }
    }
}

/// An expanded comprehension macro over a list (elements) or map (keys).
#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    /// Which macro.
    pub kind: MacroKind,
    /// The list or map iterated over.
    pub range: Expr,
    /// The iteration variable's name.
    pub var: String,
    /// Span of the iteration variable in the source.
    pub var_span: Span,
    /// `map(x, p, t)`'s filter `p`; `None` for every other form.
    pub filter: Option<Expr>,
    /// The predicate (`all`, `exists`, `exists_one`, `filter`) or transform (`map`).
    pub body: Expr,
}

/// The shape of an expression node.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A constant.
    Literal(Literal),
    /// A plain identifier (`resource`, `now`, a param name, a comprehension variable).
    Ident(String),
    /// `!e`, `-e`.
    Unary(UnaryOp, Box<Expr>),
    /// `a op b`.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `e.field`.
    Member(Box<Expr>, String),
    /// `e[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// `f(args)` (`target` is `None`) or `target.f(args)`.
    Call {
        /// The receiver of a method-style call.
        target: Option<Box<Expr>>,
        /// The function name.
        name: String,
        /// The arguments, receiver excluded.
        args: Vec<Expr>,
    },
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `{k: v, …}`.
    Map(Vec<(Expr, Expr)>),
    /// `has(e.field)`: tests presence of `field` on `e`.
    Has(Box<Expr>, String),
    /// An expanded comprehension macro.
    Comprehension(Box<Comprehension>),
}
