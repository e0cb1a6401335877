//! Source sites: where each emitted instruction comes from, for `sentinel ir`.
//!
//! Takes what lowering is doing (which expression of the unit, which typed node, and for some
//! instructions what they are for: a row load, a helper call, an error branch); gives each
//! instruction a Cranelift source location that indexes a [`Site`] of the unit's table, so the
//! optimized IR and the machine code (whose buffer maps code offsets back to source locations)
//! can be printed grouped by param and span, each row load named.
//!
//! Invariant: every instruction lowering emits carries the location of a site: the dispatcher
//! [`Lower::lower`] sets the node's location before any of its instructions and restores the
//! parent's after, and [`Lower::noted`] narrows it to a described site for a few instructions.
//! Instructions emitted outside any expression (the entry block) carry the unit's entry site.

use super::abi::OpKind;
use super::lower::Lower;
use super::row::{FieldKey, Needs};
use crate::cel::functions;
use crate::cel::span::Span;
use cranelift::codegen::ir::SourceLoc;

/// What an annotated instruction does, beyond being part of its node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NoteKind {
    /// A load of a field from the prepared row; the text names the field
    /// (`resource.generation`, `condition("Ready").status`).
    RowLoad,
    /// A load of a row slot's error flag (the field could not be read).
    RowError,
    /// A branch to the error handler when a flag or a helper's result says the operation failed.
    ErrorBranch,
    /// A call of a runtime helper; the text names it and what it computes.
    HelperCall,
    /// A constant the code refers to by address.
    Constant,
    /// Storing a param's value, or failing with its error.
    Param,
    /// The function entry: reading the row pointer from the context.
    Entry,
}

/// A note on the instructions of a site.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Note {
    /// What kind of instruction it is.
    pub kind: NoteKind,
    /// What it reads, calls or checks, in the words of the rule.
    pub text: String,
}

/// Where an instruction comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    /// The expression of the unit: its params by index, then the result (`None`: the function
    /// entry, before any expression).
    pub expr: Option<usize>,
    /// The typed node's span in that expression's source.
    pub span: Span,
    /// What the instruction does, when more than being part of the node.
    pub note: Option<Note>,
}

/// The sites of one unit, by source location.
#[derive(Clone, Debug, Default)]
pub struct Sites {
    sites: Vec<Site>,
}

impl Sites {
    /// The source location of `site`, adding it if new.
    pub(crate) fn loc(&mut self, site: Site) -> SourceLoc {
        let i = match self.sites.iter().rposition(|s| *s == site) {
            Some(i) => i,
            None => {
                self.sites.push(site);
                self.sites.len() - 1
            }
        };
        SourceLoc::new(i as u32)
    }

    /// The site of a source location (`None` for the default location).
    pub(crate) fn index(&self, loc: SourceLoc) -> Option<usize> {
        (!loc.is_default() && (loc.bits() as usize) < self.sites.len())
            .then_some(loc.bits() as usize)
    }

    /// The site of node `i` without its note (for instructions attributed to a node by
    /// position, which do not do what the note says).
    pub(crate) fn plain(&self, i: usize) -> usize {
        let Some(site) = self.sites.get(i) else {
            return i;
        };
        self.sites
            .iter()
            .position(|s| s.note.is_none() && s.expr == site.expr && s.span == site.span)
            .unwrap_or(i)
    }

    /// The site of node `at` with the note of site `noted` (a copy the optimizer made of a
    /// noted instruction, placed in another node's code).
    pub(crate) fn renoted(&mut self, at: usize, noted: usize) -> usize {
        let (Some(a), Some(n)) = (self.sites.get(at), self.sites.get(noted)) else {
            return at;
        };
        let site = Site {
            expr: a.expr,
            span: a.span,
            note: n.note.clone(),
        };
        self.loc(site).bits() as usize
    }

    /// Every site, by index.
    pub fn all(&self) -> &[Site] {
        &self.sites
    }
}

impl Lower<'_, '_> {
    /// Makes the following instructions part of node `span` of the current expression;
    /// returns the location to restore.
    pub(crate) fn enter(&mut self, span: Span) -> SourceLoc {
        let loc = self.sites.loc(Site {
            expr: Some(self.expr),
            span,
            note: None,
        });
        self.set_loc(loc)
    }

    /// Sets the location of the following instructions; returns the previous one.
    pub(crate) fn set_loc(&mut self, loc: SourceLoc) -> SourceLoc {
        let saved = self.b.srcloc();
        self.b.set_srcloc(loc);
        saved
    }

    /// The note of the current location, if any.
    pub(crate) fn current_note(&self) -> Option<Note> {
        let i = self.sites.index(self.b.srcloc())?;
        self.sites.all()[i].note.clone()
    }

    /// What a branch to the error target at the current location checks.
    pub(crate) fn error_branch_text(&self) -> String {
        match self.current_note() {
            Some(Note {
                kind: NoteKind::RowError,
                text,
            }) => format!("fails if {text} could not be read"),
            Some(Note {
                kind: NoteKind::HelperCall,
                text,
            }) => format!("fails if {text} failed"),
            _ => "fails with the error of the call".into(),
        }
    }

    /// Runs `f` with its instructions noted as `kind`/`text` within the current node.
    pub(crate) fn noted<R>(
        &mut self,
        kind: NoteKind,
        text: impl Into<String>,
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let current = self
            .sites
            .index(self.b.srcloc())
            .map(|i| self.sites.all()[i].clone());
        let (expr, span) = current.map_or((Some(self.expr), Span::default()), |s| (s.expr, s.span));
        let loc = self.sites.loc(Site {
            expr,
            span,
            note: Some(Note {
                kind,
                text: text.into(),
            }),
        });
        let saved = self.set_loc(loc);
        let r = f(self);
        self.set_loc(saved);
        r
    }
}

/// The rule's words for a row field (`resource.generation`,
/// `condition("Reconciled").observed_generation`).
pub(crate) fn field_text(key: FieldKey, needs: &Needs) -> String {
    let cond = |c: usize| format!("condition({:?})", needs.conds.get(c).map_or("?", |n| &**n));
    match key {
        FieldKey::Resource => "resource".into(),
        FieldKey::Generation => "resource.generation".into(),
        FieldKey::ResourceStr(f) => format!("resource.{}", f.def().name),
        FieldKey::ResourceTime(f) => format!("resource.{} (parsed time)", f.def().name),
        FieldKey::Cond(c) => cond(c),
        FieldKey::CondStr(c, f) => format!("{}.{}", cond(c), f.def().name),
        FieldKey::CondTime(c, f) => format!("{}.{} (parsed time)", cond(c), f.def().name),
        FieldKey::CondGeneration(c) => format!("{}.observed_generation", cond(c)),
    }
}

/// What a generic operation computes, for the note on its helper call.
pub(crate) fn op_text(kind: &OpKind) -> String {
    match kind {
        OpKind::Binary(op) => format!("`{}` on boxed values", op.symbol()),
        OpKind::Scalar(op, ..) => format!("`{}` slow path (overflow, mixed types)", op.symbol()),
        OpKind::ScalarNeg(_) => "`-` slow path (overflow)".into(),
        OpKind::Not => "`!`".into(),
        OpKind::Neg => "`-`".into(),
        OpKind::Select(f) => format!("select `.{f}`"),
        OpKind::Has(f) => format!("`has(.{f})`"),
        OpKind::Index => "index `[]`".into(),
        OpKind::Call(f) => format!("builtin `{}`", functions::name(*f)),
        OpKind::Logic(op) => format!("`{}` on non-bool operands (error)", op.symbol()),
        OpKind::Shell(_) | OpKind::ShellCaptured(_) => "the interpreter on this node".into(),
        OpKind::Interp(..) => "the interpreter on the whole expression".into(),
    }
}
