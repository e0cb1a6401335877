//! The CEL compiler: source text → tokens → AST → typed tree → interpreter or native code.
//!
//! Stages, each a module named for what it produces: [`lexer`] (`lex`), [`parser`] (`parse`,
//! with macro expansion), [`mod@check`] (`check`: the typed tree of [`typed`]), [`interp`] (`eval`)
//! and [`jit`] (`JitProgram::compile`: the same semantics as native code).
//! Does no I/O and knows nothing of tokio, HTTP or AMQP.

pub mod ast;
pub mod check;
pub mod diag;
pub mod failing;
pub mod format;
pub mod functions;
pub mod host;
pub mod interp;
// The one place with `unsafe`: calling compiled code and the helpers it calls back.
#[allow(unsafe_code)]
pub mod jit;
pub mod json;
pub mod lexer;
mod macros;
pub mod ops;
pub mod parser;
pub mod print;
pub mod re2;
pub mod span;
pub mod strings;
pub mod time;
pub mod typed;
pub mod types;
pub mod value;

pub use check::{Env, check};
pub use interp::{Activation, eval};
pub use lexer::lex;
pub use parser::parse;
