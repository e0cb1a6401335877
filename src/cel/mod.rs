//! The CEL compiler: source text → tokens → AST → typed tree → interpreter or native code.
//!
//! Does no I/O and knows nothing of tokio, HTTP or AMQP.

pub mod ast;
pub mod diag;
pub mod span;
pub mod strings;
pub mod time;
pub mod types;
pub mod value;
pub mod lexer;
mod macros;
pub mod parser;
pub mod print;

pub use lexer::lex;
pub use parser::parse;
