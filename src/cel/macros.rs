//! Macro expansion: calls named like CEL macros become [`ExprKind::Has`] or
//! [`ExprKind::Comprehension`] nodes.
//!
//! Takes one parsed call (receiver, name, arguments); gives the node kind it stands for.
//! Invariant: only the exact macro shapes expand — `has(e.f)` without receiver, and
//! `e.all(x, p)`, `e.exists(x, p)`, `e.exists_one(x, p)`, `e.map(x, t)`, `e.map(x, p, t)`,
//! `e.filter(x, p)` with a receiver; a macro name with another shape stays a plain
//! [`ExprKind::Call`], as in cel-go. A macro shape with a bad argument (`has(x)`, `e.all(x.y, p)`)
//! records a diagnostic.

use super::ast::{Comprehension, Expr, ExprKind, MacroKind};
use super::diag::Diagnostic;

/// A call as parsed, before expansion.
pub(crate) struct Call {
    /// The receiver of a method-style call.
    pub(crate) target: Option<Expr>,
    /// The function name.
    pub(crate) name: String,
    /// The arguments, receiver excluded.
    pub(crate) args: Vec<Expr>,
}

impl Call {
    fn into_kind(self) -> ExprKind {
        ExprKind::Call {
            target: self.target.map(Box::new),
            name: self.name,
            args: self.args,
        }
    }
}

/// The comprehension macro a receiver call with `n_args` arguments stands for, if any.
fn comprehension_kind(name: &str, n_args: usize) -> Option<MacroKind> {
    match (name, n_args) {
        ("all", 2) => Some(MacroKind::All),
        ("exists", 2) => Some(MacroKind::Exists),
        ("exists_one", 2) => Some(MacroKind::ExistsOne),
        ("map", 2 | 3) => Some(MacroKind::Map),
        ("filter", 2) => Some(MacroKind::Filter),
        _ => None,
    }
}

/// Expands `call` if it is a macro; otherwise returns it as a plain call. Bad macro arguments
/// are reported into `diags` (the call is then returned unexpanded).
pub(crate) fn expand(call: Call, diags: &mut Vec<Diagnostic>) -> ExprKind {
    match call {
        Call {
            target: None,
            name,
            args,
        } if name == "has" && args.len() == 1 => expand_has(name, args, diags),
        Call {
            target: Some(range),
            name,
            args,
        } => match comprehension_kind(&name, args.len()) {
            Some(kind) => expand_comprehension(range, kind, args, diags),
            None => Call {
                target: Some(range),
                name,
                args,
            }
            .into_kind(),
        },
        call => call.into_kind(),
    }
}

/// `has(e.f)`: the argument must be a field selection.
fn expand_has(name: String, mut args: Vec<Expr>, diags: &mut Vec<Diagnostic>) -> ExprKind {
    match args.pop() {
        Some(Expr {
            kind: ExprKind::Member(operand, field),
            ..
        }) => ExprKind::Has(operand, field),
        Some(arg) => {
            let mut diag = Diagnostic::new("has() argument must be a field selection", arg.span)
                .with_label("not a field selection")
                .with_note("write has(e.f) to test whether e has the field f");
            if matches!(arg.kind, ExprKind::Index(..)) {
                diag = diag.with_note("to test for a map key, write 'key' in m");
            }
            diags.push(diag);
            Call {
                target: None,
                name,
                args: vec![arg],
            }
            .into_kind()
        }
        None => Call {
            target: None,
            name,
            args,
        }
        .into_kind(),
    }
}

/// `e.all(x, p)` and friends (`args` holds 2 arguments, or 3 for `map(x, p, t)`): the first
/// argument must be a plain identifier.
fn expand_comprehension(
    range: Expr,
    kind: MacroKind,
    args: Vec<Expr>,
    diags: &mut Vec<Diagnostic>,
) -> ExprKind {
    let unexpanded = |range: Expr, args: Vec<Expr>| Call {
        target: Some(range),
        name: kind.name().to_owned(),
        args,
    };
    let (var, filter, body) = match <[Expr; 3]>::try_from(args) {
        Ok([var, filter, body]) => (var, Some(filter), body),
        Err(args) => match <[Expr; 2]>::try_from(args) {
            Ok([var, body]) => (var, None, body),
            Err(args) => return unexpanded(range, args).into_kind(),
        },
    };
    let ExprKind::Ident(name) = &var.kind else {
        let message = format!("{}() variable must be a simple name", kind.name());
        let diag = Diagnostic::new(message, var.span)
            .with_label("not a simple name")
            .with_note(format!(
                "write e.{}(x, …) with a plain name such as x",
                kind.name()
            ));
        diags.push(diag);
        let args = [Some(var), filter, Some(body)]
            .into_iter()
            .flatten()
            .collect();
        return unexpanded(range, args).into_kind();
    };
    let comprehension = Comprehension {
        kind,
        range,
        var: name.clone(),
        var_span: var.span,
        filter,
        body,
    };
    ExprKind::Comprehension(Box::new(comprehension))
}

#[cfg(test)]
mod tests {
    use crate::cel::ast::{ExprKind, MacroKind};
    use crate::cel::parse;

    fn kind(src: &str) -> ExprKind {
        parse(src)
            .unwrap_or_else(|d| panic!("parse({src:?}) failed: {d:?}"))
            .kind
    }

    fn comprehension(src: &str) -> (MacroKind, String, bool) {
        match kind(src) {
            ExprKind::Comprehension(c) => (c.kind, c.var, c.filter.is_some()),
            other => panic!("{src:?} did not expand: {other:?}"),
        }
    }

    #[test]
    fn comprehension_macros_expand() {
        assert_eq!(
            comprehension("l.all(x, x > 0)"),
            (MacroKind::All, "x".into(), false)
        );
        assert_eq!(
            comprehension("l.exists(y, y)"),
            (MacroKind::Exists, "y".into(), false)
        );
        assert_eq!(
            comprehension("l.exists_one(z, z)"),
            (MacroKind::ExistsOne, "z".into(), false)
        );
        assert_eq!(
            comprehension("l.map(x, x * 2)"),
            (MacroKind::Map, "x".into(), false)
        );
        assert_eq!(
            comprehension("l.map(x, x > 0, x * 2)"),
            (MacroKind::Map, "x".into(), true)
        );
        assert_eq!(
            comprehension("l.filter(x, x > 0)"),
            (MacroKind::Filter, "x".into(), false)
        );
    }

    #[test]
    fn has_expands() {
        assert!(matches!(kind("has(a.b)"), ExprKind::Has(_, f) if f == "b"));
    }

    #[test]
    fn other_shapes_stay_calls() {
        for src in [
            "l.all(x)",
            "all(x, y)",
            "x.has(y.z)",
            "has(a, b)",
            "l.map(a, b, c, d)",
            "l.filter(x)",
        ] {
            assert!(matches!(kind(src), ExprKind::Call { .. }), "{src}");
        }
    }

    #[test]
    fn bad_macro_arguments_are_diagnosed() {
        let message = |src: &str| {
            parse(src)
                .err()
                .map(|d| d[0].message.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            message("has(a)"),
            "has() argument must be a field selection"
        );
        assert_eq!(
            message("has(m['k'])"),
            "has() argument must be a field selection"
        );
        assert_eq!(
            message("l.all(x.y, true)"),
            "all() variable must be a simple name"
        );
        assert_eq!(
            message("l.map(1, 2)"),
            "map() variable must be a simple name"
        );
    }
}
