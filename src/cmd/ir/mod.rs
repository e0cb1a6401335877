//! `sentinel ir`: prints one stage of the compiler for the whole message_decision or one param:
//! the token stream, the AST with spans, the typed tree with types, the Cranelift IR after
//! optimization, the machine code (disassembled from the emitted bytes), Cranelift's VCode
//! listing, or a summary; or writes all of them as one HTML page (`--html`).
//!
//! For a person debugging a rule: every stage is headed by the summary table (per param: its
//! engine, native instructions, helper calls, the row fields it reads), and every line of the IR
//! and of the machine code is grouped under the param and source span it was lowered from, each
//! row load naming its field (`text`). `clif`/`asm` of one param compile the slice of the
//! decision that computes it (the param and the earlier params it reads).

mod html;
mod text;

use super::CmdError;
use crate::cel::diag;
use crate::cel::jit::{self, JitError, JitProgram, Listing, Nativeness};
use crate::cel::{lex, parse, print};
use crate::rules::decision::Program;
use crate::rules::origin::Origin;
use std::io::Write;
use std::path::PathBuf;

/// A stage of the compiler.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Per param: engine, native instructions, helper calls, row fields read.
    Summary,
    /// The token stream.
    Tokens,
    /// The syntax tree with spans.
    Ast,
    /// The typed tree with types.
    Typed,
    /// Cranelift IR after optimization, grouped by param and source span.
    Clif,
    /// The machine code disassembled from the emitted bytes, grouped by param and source span.
    Asm,
    /// Cranelift's listing after register allocation, before encoding (unwind pseudo-ops and
    /// all).
    Vcode,
}

/// Which of a decision's two compiled bodies `clif`, `asm` and `vcode` show.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// The body that runs for rows without field errors (almost every resource).
    Clean,
    /// The body that checks every row slot's error flag.
    Checked,
}

/// Which processor features the shown code may use.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpu {
    /// This machine's (the code `serve` runs here).
    Host,
    /// The x86-64 baseline: the same code, and listing, on every machine.
    Baseline,
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
    #[arg(long, value_enum, default_value = "summary")]
    pub stage: Stage,
    /// Which compiled body to show.
    #[arg(long, value_enum, default_value = "clean")]
    pub body: Body,
    /// Show frame set-up and tear-down and the IR's declarations instead of folding them.
    #[arg(long)]
    pub raw: bool,
    /// Compile for this machine's processor features or for the baseline.
    #[arg(long, value_enum, default_value = "host")]
    pub cpu: Cpu,
    /// Write every stage as one self-contained HTML page to FILE (source on the left, a stage
    /// on the right, spans and instructions highlighting each other) instead of printing.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// How to show the stages (the options beside the stage itself).
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// Which compiled body.
    pub body: Body,
    /// Frame set-up unfolded.
    pub raw: bool,
    /// Which processor features.
    pub cpu: Cpu,
}

impl Default for View {
    fn default() -> Self {
        View {
            body: Body::Clean,
            raw: false,
            cpu: Cpu::Host,
        }
    }
}

/// One expression of the decision: its origin and source.
struct Item<'p> {
    origin: Origin,
    source: &'p str,
}

fn items<'p>(program: &'p Program, only: Option<&str>) -> Result<Vec<Item<'p>>, CmdError> {
    let mut all: Vec<Item<'p>> = program
        .params
        .iter()
        .enumerate()
        .map(|(index, p)| Item {
            origin: Origin::Param {
                index,
                name: p.name.clone(),
            },
            source: &p.source,
        })
        .collect();
    all.push(Item {
        origin: Origin::Result,
        source: &program.result_source,
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

/// The decision (or the slice of it for one param) compiled with its listing, and what its
/// expressions are: the unit's expression `i` below the last is param `i`, the last is the
/// result (or the one param asked for).
struct Native<'p> {
    title: String,
    /// The unit's expressions, by index (`None`: a param the slice does not compute).
    exprs: Vec<Option<Item<'p>>>,
    /// How each computed expression runs, in unit order (params the slice leaves out skipped).
    nativeness: Vec<(usize, Nativeness)>,
    listing: Listing,
}

impl Native<'_> {
    fn item(&self, expr: usize) -> Option<&Item<'_>> {
        self.exprs.get(expr).and_then(Option::as_ref)
    }
}

fn compile<'p>(program: &'p Program, only: Option<&str>, cpu: Cpu) -> Result<Native<'p>, CmdError> {
    let selected = items(program, only)?;
    let opts = jit::Options {
        listing: true,
        cpu: match cpu {
            Cpu::Host => jit::Cpu::Host,
            Cpu::Baseline => jit::Cpu::Baseline,
        },
        ..jit::Options::default()
    };
    let params: Vec<_> = program.params.iter().map(|p| p.expr.clone()).collect();
    let mut all = items(program, None)?;
    let (title, native, exprs) = match selected.as_slice() {
        [
            Item {
                origin: origin @ Origin::Param { index: i, .. },
                ..
            },
        ] => {
            let native = JitProgram::compile_param(&params, *i, &opts)?;
            let mut exprs: Vec<Option<Item<'p>>> = all.drain(..=*i).map(Some).collect();
            // The target param is the slice's result.
            let target = exprs.pop().flatten();
            exprs.push(target);
            (
                format!("{origin} (with the params it reads)"),
                native,
                exprs,
            )
        }
        _ => (
            "message_decision (all params and the result)".to_string(),
            JitProgram::compile(&params, &program.result, &opts)?,
            all.into_iter().map(Some).collect(),
        ),
    };
    let listing = native
        .listing()
        .cloned()
        .ok_or_else(|| JitError::Internal("no listing".into()))?;
    let n = exprs.len();
    // The slice lists only the params it computes: those its sites name, then the result.
    let mut computed: Vec<usize> = (0..n - 1)
        .filter(|e| listing.sites.iter().any(|s| s.expr == Some(*e)))
        .collect();
    if native.nativeness().len() != computed.len() + 1 {
        computed = (0..n - 1).collect();
    }
    computed.push(n - 1);
    let nativeness = computed
        .into_iter()
        .zip(native.nativeness().iter().cloned())
        .collect();
    Ok(Native {
        title,
        exprs,
        nativeness,
        listing,
    })
}

/// Prints `stage` of `program` (or of its param `only`) to `out`.
pub fn run(
    program: &Program,
    only: Option<&str>,
    stage: Stage,
    view: View,
    out: &mut impl Write,
) -> Result<(), CmdError> {
    let items = items(program, only)?;
    let native = compile(program, only, view.cpu)?;
    out.write_all(text::summary(&native, view).as_bytes())?;
    match stage {
        Stage::Summary => {}
        Stage::Tokens | Stage::Ast | Stage::Typed => {
            for item in &items {
                writeln!(out, "\n# {}: {}", item.origin, item.source)?;
                out.write_all(front_end(program, item, stage).as_bytes())?;
            }
        }
        Stage::Clif | Stage::Asm | Stage::Vcode => {
            out.write_all(text::code(&native, stage, view).as_bytes())?;
        }
    }
    Ok(())
}

fn front_end(program: &Program, item: &Item<'_>, stage: Stage) -> String {
    let origin = item.origin.to_string();
    let rendered = |d: Vec<diag::Diagnostic>| diag::render(&d, &origin, item.source);
    match stage {
        Stage::Tokens => lex(item.source).map_or_else(rendered, |t| print::tokens(&t)),
        Stage::Ast => parse(item.source).map_or_else(rendered, |a| print::ast(&a)),
        _ => print::typed(match item.origin.param_index() {
            Some(i) => &program.params[i].expr,
            None => &program.result,
        }),
    }
}

/// Writes the HTML page of `program` (or of its param `only`): every stage, source beside it.
pub fn write_html(
    program: &Program,
    only: Option<&str>,
    stage: Stage,
    view: View,
    out: &mut impl Write,
) -> Result<(), CmdError> {
    let items = items(program, only)?;
    let native = compile(program, only, view.cpu)?;
    let stages: Vec<(Stage, String)> = [Stage::Tokens, Stage::Ast, Stage::Typed]
        .into_iter()
        .map(|s| {
            let text: String = items
                .iter()
                .map(|item| format!("# {}\n{}", item.origin, front_end(program, item, s)))
                .collect();
            (s, text)
        })
        .collect();
    out.write_all(html::page(&items, &native, &stages, stage, view).as_bytes())?;
    Ok(())
}

/// Runs `sentinel ir` with its options on stdout (or into the `--html` file).
pub fn main(args: &IrArgs) -> Result<(), CmdError> {
    let rules = super::check::load_rules(args.config.as_deref())?;
    let view = View {
        body: args.body,
        raw: args.raw,
        cpu: args.cpu,
    };
    let program = rules.decision.program();
    if let Some(path) = &args.html {
        let mut page = Vec::new();
        write_html(program, args.param.as_deref(), args.stage, view, &mut page)?;
        std::fs::write(path, page)?;
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    run(program, args.param.as_deref(), args.stage, view, &mut out)?;
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
        run(&program, param, stage, View::default(), &mut out).expect("prints");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn every_stage_prints_the_whole_decision_or_one_param() {
        let tokens = print(Some("is_reconciled"), Stage::Tokens);
        assert!(
            tokens.contains("# message_decision.params[1] \"is_reconciled\""),
            "{tokens}"
        );
        assert!(tokens.contains("ident condition"), "{tokens}");
        let ast = print(Some("is_reconciled"), Stage::Ast);
        assert!(ast.contains("Binary =="), "{ast}");
        let typed = print(None, Stage::Typed);
        assert!(typed.contains("Call condition : Condition @"), "{typed}");
        assert!(typed.contains("# message_decision.result"), "{typed}");
        let clif = print(Some("reconciled_and_stale"), Stage::Clif);
        assert!(clif.contains("(with the params it reads)"), "{clif}");
        let asm = print(None, Stage::Asm);
        assert!(asm.contains("ret"), "{asm}");
        let vcode = print(None, Stage::Vcode);
        assert!(vcode.contains("block0"), "{vcode}");
    }

    #[test]
    fn an_unknown_param_is_an_input_error() {
        let program = Program::compile(&DecisionSource::default_rules()).expect("default rules");
        let err = run(
            &program,
            Some("nope"),
            Stage::Ast,
            View::default(),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no param named \"nope\""), "{err}");
    }
}
