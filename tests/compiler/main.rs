//! The compiler's tests, one binary: everything that runs CEL text through `parse`, `check` and
//! the engines without a daemon around it.
//!
//! - [`ir`]: `sentinel ir`'s annotated stages against tests/data/ir/*.out, and its HTML page in
//!   headless Chromium.
//! - [`golden`]: tests/data/{parse,check}/*.cel against their `.out` files (`UPDATE_EXPECT=1`
//!   rewrites them).
//! - [`conformance`]: the cel-spec conformance files read from ../shared/cel-conformance.
//! - [`decisions`]: the decision corpus tests/data/decisions/cases.jsonl against the answers of
//!   Google's cel-cpp (../shared/oracle).
//! - [`scenarios`]: the spec's twelve decision-engine scenarios, and how compiling scales.
//! - [`known_list`]: the shrink-only list of known failures that conformance and decisions share
//!   (tests/data/conformance/known_failures.txt, tests/data/decisions/deviations.txt).
//!
//! - [`eval_tables`]: the engine tables tests/data/eval/*.txt (expression ⇒ expected value or
//!   error: the time and string functions), run through the interpreter AND the JIT.
//!
//! The interpreter-vs-JIT differential tests are
//! tests/differential.rs, a binary of their own for their counting allocator; this binary's
//! allocator is the per-thread counting one of [`scenarios`].

mod conformance;
mod decisions;
mod eval_tables;
mod golden;
mod ir;
mod known_list;
mod scenarios;
