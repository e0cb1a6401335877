//! Compile-time diagnostics: what went wrong, where, and how to render it for a person.
//!
//! Every stage (lexer, parser, checker) reports [`Diagnostic`]s with a [`Span`] and keeps going
//! where it can, so a config shows all its errors at once. [`render`] draws the source line with
//! a caret under the span, headed by the origin of the expression (e.g.
//! `message_decision.params[3] "is_new_resource"`) and its line:col.

use super::span::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The expression does not compile.
    #[default]
    Error,
    /// The expression compiles (the Go sentinel accepts it) but very likely does not do what
    /// its author meant; printed by `sentinel check` and logged at `serve` start-up.
    Warning,
}

/// One compile-time problem in one expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// One lowercase line: what is wrong.
    pub message: String,
    /// The offending source text.
    pub span: Span,
    /// A short text under the caret (may be empty).
    pub label: String,
    /// Extra lines: hints and suggestions (`did you mean 'now'?`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic with a message and a span, no label or notes.
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            notes: Vec::new(),
        }
    }

    /// A warning with a message and a span.
    pub fn warning(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::new(message, span)
        }
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Adds the text shown under the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

/// Renders diagnostics of one expression as plain text (no colour): `error:` or `warning:` and
/// the message, the origin with line:col, the source line and a caret under the span, then any
/// notes.
pub fn render(diags: &[Diagnostic], origin: &str, source: &str) -> String {
    let file = SimpleFile::new(origin, source);
    let config = Config::default();
    let mut out = String::new();
    for d in diags {
        // Clamp the span to the source so a stray span can never make rendering fail.
        let end = (d.span.end as usize).min(source.len());
        let start = (d.span.start as usize).min(end);
        let head = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        };
        let cs = head
            .with_message(&d.message)
            .with_labels(vec![Label::primary((), start..end).with_message(&d.label)])
            .with_notes(d.notes.clone());
        if term::emit_to_string(&mut out, &config, &file, &cs).is_err() {
            // Rendering into memory only fails on a span codespan cannot place; fall back to text.
            let level = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            out.push_str(&format!("{level}: {} at {origin}\n", d.message));
        }
    }
    out
}

/// Levenshtein distance, for "did you mean" suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The candidate nearest to `name`, if it is near enough to be a plausible typo.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_finds_typos() {
        assert_eq!(nearest("nwo", ["now", "resource"]), Some("now"));
        assert_eq!(nearest("resourse", ["now", "resource"]), Some("resource"));
        assert_eq!(nearest("zzzzzz", ["now", "resource"]), None);
    }

    #[test]
    fn render_shows_caret_and_origin() {
        let d = Diagnostic::new("undeclared reference to 'nwo'", Span::new(4, 7))
            .with_note("did you mean 'now'?");
        let text = render(&[d], "message_decision.params[0] \"x\"", "1 + nwo");
        assert!(
            text.contains("message_decision.params[0] \"x\":1:5"),
            "{text}"
        );
        assert!(text.contains("^^^"), "{text}");
        assert!(text.contains("did you mean 'now'?"), "{text}");
    }
}
