//! `sentinel ir`: prints one stage of the compiler for the whole message_decision or one param:
//! the token stream, the AST with spans, the typed tree with types, the Cranelift IR after
//! optimization, or the machine code after register allocation.
//!
//! For a person debugging a rule: every expression is headed by where it comes from in the
//! config; `clif`/`asm` of one param compile the slice of the decision that computes it (the
//! param and the earlier params it reads).

use super::CmdError;
use crate::cel::diag;
use crate::cel::jit::{self, JitProgram};
use crate::cel::{lex, parse, print};
use crate::rules::decision::Program;
use std::io::Write;
use std::path::PathBuf;

/// A stage of the compiler.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The token stream.
    Tokens,
    /// The syntax tree with spans.
    Ast,
    /// The typed tree with types.
    Typed,
    /// Cranelift IR after optimization.
    Clif,
    /// Machine code after register allocation (Cranelift's VCode listing).
    Asm,
}

/// Options of `sentinel ir`.
#[derive(clap::Args, Debug, Clone)]
pub struct IrArgs {
    /// Config file whose message_decision to print (default: the built-in default rules).
    #[arg(short, long)]
    pub config: Option<PathBuf>,
    /// Print only this param (or `result`).
    #[arg(long, value_name = "NAME")]
    pub param: Option<String>,
    /// Which stage to print.
    #[arg(long, value_enum)]
    pub stage: Stage,
}

/// One expression of the decision: its origin, source and index (`None` for the result).
struct Item<'p> {
    origin: String,
    source: &'p str,
    index: Option<usize>,
}

fn items<'p>(program: &'p Program, only: Option<&str>) -> Result<Vec<Item<'p>>, CmdError> {
    let mut all: Vec<Item<'p>> = program
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| Item {
            origin: format!("message_decision.params[{i}] \"{}\"", p.name),
            source: &p.source,
            index: Some(i),
        })
        .collect();
    all.push(Item {
        origin: "message_decision.result".into(),
        source: &program.result_source,
        index: None,
    });
    let Some(name) = only else {
        return Ok(all);
    };
    let found = program.params.iter().position(|p| &*p.name == name);
    match (found, name) {
        (Some(i), _) => Ok(vec![all.swap_remove(i)]),
        (None, "result") => Ok(all.pop().into_iter().collect()),
        (None, _) => Err(CmdError::Input {
            origin: "--param".into(),
            message: format!(
                "no param named \"{name}\" (params: {})",
                program
                    .params
                    .iter()
                    .map(|p| p.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// Prints `stage` of `program` (or of its param `only`) to `out`.
pub fn run(
    program: &Program,
    only: Option<&str>,
    stage: Stage,
    out: &mut impl Write,
) -> Result<(), CmdError> {
    let items = items(program, only)?;
    match stage {
        Stage::Tokens | Stage::Ast | Stage::Typed => {
            for item in &items {
                writeln!(out, "# {}: {}", item.origin, item.source)?;
                out.write_all(front_end(program, item, stage).as_bytes())?;
            }
        }
        Stage::Clif | Stage::Asm => {
            let opts = jit::Options {
                listing: true,
                ..jit::Options::default()
            };
            let params: Vec<_> = program.params.iter().map(|p| p.expr.clone()).collect();
            let (title, native) = match items.as_slice() {
                [
                    Item {
                        index: Some(i),
                        origin,
                        ..
                    },
                ] => (
                    format!("{origin} (with the params it reads)"),
                    JitProgram::compile_param(&params, *i, &opts)?,
                ),
                _ => (
                    "message_decision (all params and the result)".into(),
                    JitProgram::compile(&params, &program.result, &opts)?,
                ),
            };
            let listing = native.listing().cloned().unwrap_or_default();
            writeln!(out, "; {title}")?;
            let text = if stage == Stage::Clif {
                listing.clif
            } else {
                listing.asm
            };
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

fn front_end(program: &Program, item: &Item<'_>, stage: Stage) -> String {
    let rendered = |d: Vec<diag::Diagnostic>| diag::render(&d, &item.origin, item.source);
    match stage {
        Stage::Tokens => lex(item.source).map_or_else(rendered, |t| print::tokens(&t)),
        Stage::Ast => parse(item.source).map_or_else(rendered, |a| print::ast(&a)),
        _ => print::typed(match item.index {
            Some(i) => &program.params[i].expr,
            None => &program.result,
        }),
    }
}

/// Runs `sentinel ir` with its options on stdout.
pub fn main(args: &IrArgs) -> Result<(), CmdError> {
    let rules = super::check::load_rules(args.config.as_deref())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    run(
        rules.decision.program(),
        args.param.as_deref(),
        args.stage,
        &mut out,
    )?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::decision::DecisionSource;

    fn print(param: Option<&str>, stage: Stage) -> String {
        let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
        let mut out = Vec::new();
        run(&program, param, stage, &mut out).expect("prints");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn every_stage_prints_the_whole_decision_or_one_param() {
        let tokens = print(Some("is_reconciled"), Stage::Tokens);
        assert!(
            tokens.starts_with("# message_decision.params[1] \"is_reconciled\""),
            "{tokens}"
        );
        assert!(tokens.contains("ident condition"), "{tokens}");
        let ast = print(Some("is_reconciled"), Stage::Ast);
        assert!(ast.contains("Binary =="), "{ast}");
        let typed = print(None, Stage::Typed);
        assert!(typed.contains("Call condition : Condition @"), "{typed}");
        assert!(typed.contains("# message_decision.result"), "{typed}");
        let clif = print(Some("reconciled_and_stale"), Stage::Clif);
        assert!(
            clif.contains("(with the params it reads)") && clif.contains("function"),
            "{clif}"
        );
        let asm = print(None, Stage::Asm);
        assert!(asm.contains("ret"), "{asm}");
    }

    #[test]
    fn an_unknown_param_is_an_input_error() {
        let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
        let err = run(&program, Some("nope"), Stage::Ast, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("no param named \"nope\""), "{err}");
    }
}
