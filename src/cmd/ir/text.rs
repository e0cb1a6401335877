//! The text of `sentinel ir`: the summary table, and the IR and machine code grouped by the
//! param and source span each line was lowered from.
//!
//! Invariant: in `clif` and `asm`, every printed instruction sits under a group header naming
//! its param (or the result) and span; lines without a site (frame set-up and tear-down, the
//! IR's declarations, constant data) are folded into one count unless `--raw`.

use super::{Body, Native, Stage, View};
use crate::cel::jit::{BodyListing, Line, Nativeness, NoteKind, Role, Site};
use crate::cel::span::Span;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The listing of the body `view` asks for (a standalone unit has only one).
pub(super) fn body<'n>(native: &'n Native<'_>, view: View) -> Option<&'n BodyListing> {
    let bodies = &native.listing.bodies;
    match view.body {
        Body::Clean => bodies.get(1).or(bodies.first()),
        Body::Checked => bodies.first(),
    }
}

/// What the summary says of one expression.
pub(super) struct Row {
    pub name: String,
    pub engine: String,
    pub insns: usize,
    pub calls: BTreeMap<String, usize>,
    pub reads: Vec<String>,
}

/// The summary's rows, in unit order.
pub(super) fn rows(native: &Native<'_>, view: View) -> Vec<Row> {
    let sites = &native.listing.sites;
    let asm = body(native, view).map_or(&[][..], |b| &b.asm[..]);
    native
        .nativeness
        .iter()
        .map(|(expr, how)| {
            let mine = |l: &&Line| {
                l.role == Role::Code && l.site.is_some_and(|s| sites[s].expr == Some(*expr))
            };
            let mut calls = BTreeMap::new();
            for l in asm.iter().filter(mine) {
                if l.text.starts_with("call") {
                    let callee = call_target(l, asm).unwrap_or_else(|| "?".into());
                    *calls.entry(callee).or_insert(0) += 1;
                }
            }
            // The row fields the lowering read for it (the optimizer may merge a load into an
            // earlier param's), less a record whose field is read (`resource` beside
            // `resource.generation`).
            let mut reads: Vec<String> = sites
                .iter()
                .filter(|s| s.expr == Some(*expr))
                .filter_map(|s| s.note.as_ref())
                .filter(|n| n.kind == NoteKind::RowLoad)
                .map(|n| field_of(&n.text))
                .collect();
            reads.sort();
            reads.dedup();
            let fields = reads.clone();
            reads.retain(|r| !fields.iter().any(|f| f.starts_with(&format!("{r}."))));
            Row {
                name: short_name(native, *expr),
                engine: match how {
                    Nativeness::Native => "native".into(),
                    Nativeness::Interpreted(why) => format!("interpreter: {why}"),
                },
                insns: asm.iter().filter(mine).count(),
                calls,
                reads,
            }
        })
        .collect()
}

/// A row load's field without what part of the slot it loads.
fn field_of(text: &str) -> String {
    text.split(" (").next().unwrap_or(text).to_string()
}

/// The helper a `call *%reg` goes to: the relocation of the nearest `movabs` before it.
fn call_target(call: &Line, asm: &[Line]) -> Option<String> {
    let at = asm.iter().position(|l| std::ptr::eq(l, call))?;
    asm[..at]
        .iter()
        .rev()
        .take(8)
        .find_map(|l| l.comment.clone())
        .map(|c| c.trim_start_matches("sentinel_jit_").to_string())
}

fn short_name(native: &Native<'_>, expr: usize) -> String {
    match native.item(expr) {
        Some(item) => item.origin.short().to_string(),
        None => format!("expression {expr}"),
    }
}

/// The summary table, as `;` comments: the header of every stage.
pub(super) fn summary(native: &Native<'_>, view: View) -> String {
    let rows = rows(native, view);
    let mut out = String::new();
    let native_n = rows.iter().filter(|r| r.engine == "native").count();
    let body_name = body(native, view).map_or("", |b| b.name.as_str());
    let size = body(native, view).map_or(0, |b| b.code_size);
    let _ = writeln!(
        out,
        "; {}: {native_n}/{} expressions native; body {body_name}: {size} bytes of machine code",
        native.title,
        rows.len()
    );
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            let calls = if r.calls.is_empty() {
                "-".to_string()
            } else {
                r.calls
                    .iter()
                    .map(|(h, n)| format!("{h}×{n}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let reads = if r.reads.is_empty() {
                "-".to_string()
            } else {
                r.reads.join(", ")
            };
            [
                r.name.clone(),
                r.engine.clone(),
                r.insns.to_string(),
                calls,
                reads,
            ]
        })
        .collect();
    let head = [
        "expression".to_string(),
        "engine".into(),
        "insns".into(),
        "helper calls".into(),
        "row fields read".into(),
    ];
    let widths: Vec<usize> = (0..4)
        .map(|c| {
            std::iter::once(&head)
                .chain(&table)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(&head).chain(&table) {
        let mut line = String::from(";");
        for (c, cell) in r.iter().enumerate() {
            match widths.get(c) {
                Some(w) => {
                    let pad = w - cell.chars().count();
                    let _ = write!(line, " {cell}{:pad$} ", "");
                }
                None => {
                    let _ = write!(line, " {cell}");
                }
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// Line and column (1-based, in characters) of byte `at` of `source`.
pub(super) fn line_col(source: &str, at: usize) -> (usize, usize) {
    let at = at.min(source.len());
    let before = source.get(..at).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// A group's header: the expression, the span as `line:col-line:col`, and its source text.
pub(super) fn group_header(native: &Native<'_>, site: &Site) -> String {
    let Some(expr) = site.expr else {
        return "; function entry".into();
    };
    let Some(item) = native.item(expr) else {
        return format!("; expression {expr}");
    };
    let (l0, c0) = line_col(item.source, site.span.start as usize);
    let (l1, c1) = line_col(item.source, site.span.end as usize);
    format!(
        "; {} {l0}:{c0}-{l1}:{c1}: {}",
        item.origin,
        snippet(item.source, site.span)
    )
}

/// The source text of a span on one line (its first line and `…` if longer).
pub(super) fn snippet(source: &str, span: Span) -> String {
    let text = source.get(span.range()).unwrap_or("");
    let first = text.lines().next().unwrap_or("");
    let first = if first.chars().count() > 100 {
        format!("{}…", first.chars().take(100).collect::<String>())
    } else {
        first.to_string()
    };
    if first.len() < text.trim_end().len() {
        format!("{first} …")
    } else {
        first
    }
}

/// A line's comment: what its site's note says, and what it refers to.
pub(super) fn comment(site: Option<&Site>, line: &Line) -> String {
    // In machine code a located run also holds the register moves around the load: only the
    // instruction reading memory is the load.
    let moves = (line.offset.is_some() && !line.text.contains("(%")) || line.role == Role::Label;
    let note = site
        .and_then(|s| s.note.as_ref())
        .filter(|n| !(moves && matches!(n.kind, NoteKind::RowLoad | NoteKind::RowError)));
    let note = note.map(|n| match n.kind {
        NoteKind::RowLoad => n.text.clone(),
        NoteKind::RowError => format!("error flag of {}", n.text),
        NoteKind::HelperCall => format!("helper: {}", n.text),
        _ => n.text.clone(),
    });
    let parts: Vec<String> = note
        .into_iter()
        .chain(line.comment.iter().map(|c| format!("→ {c}")))
        .collect();
    parts.join("; ")
}

/// The IR, machine code or VCode listing of the body `view` asks for.
pub(super) fn code(native: &Native<'_>, stage: Stage, view: View) -> String {
    let Some(b) = body(native, view) else {
        return "; no code\n".into();
    };
    let mut out = format!("\n; body {}\n", b.name);
    let lines = match stage {
        Stage::Clif => &b.clif,
        Stage::Asm => &b.asm,
        _ => {
            out.push_str(&b.vcode);
            return out;
        }
    };
    let sites = &native.listing.sites;
    let mut current: Option<(Option<usize>, Span)> = None;
    let mut folded = 0;
    for line in lines {
        let site = line.site.map(|s| &sites[s]);
        let entry = site.is_some_and(|s| s.expr.is_none());
        if (line.site.is_none() || entry) && !view.raw {
            folded += 1;
            continue;
        }
        let key = site.map(|s| (s.expr, s.span));
        if key != current {
            if let Some(s) = site {
                let _ = writeln!(out, "{}", group_header(native, s));
            } else {
                out.push_str("; frame set-up and tear-down\n");
            }
            current = key;
        }
        let text = match line.offset {
            Some(o) => format!("  {o:5x}:  {}", line.text),
            None => line.text.clone(),
        };
        let note = comment(site, line);
        if note.is_empty() {
            let _ = writeln!(out, "{text}");
        } else {
            let _ = writeln!(out, "{text:<60} ; {note}");
        }
    }
    if folded > 0 {
        let _ = writeln!(
            out,
            "; {folded} lines of frame set-up and tear-down folded (--raw shows them)"
        );
    }
    out
}
