//! Golden tests: every `tests/data/<stage>/*.cel` file is run through a stage and its output is
//! compared with the sibling `.out` file. Set `UPDATE_EXPECT=1` to rewrite the `.out` files
//! instead of comparing.
//!
//! Stages: `parse` prints the AST of a successful parse, or the rendered diagnostics; `check`
//! prints the type of a checked expression, or the rendered diagnostics.
//! Add a stage by writing a `fn(&str, &str) -> String` and calling [`check_dir`] with it.

use sentinel::cel::{diag, parse, print};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The `parse` stage: the printed AST, or the diagnostics rendered against the file.
fn parse_stage(file_name: &str, src: &str) -> String {
    match parse(src) {
        Ok(expr) => print::ast(&expr),
        Err(diags) => diag::render(&diags, file_name, src),
    }
}

/// The `check` stage: the expression checked in a config's message_decision environment
/// (`resource` with its schema, `now`, `condition`): any warnings and its type, or the rendered
/// diagnostics.
fn check_stage(file_name: &str, src: &str) -> String {
    let env = sentinel::cel::Env::decision(&[]).for_config(sentinel::cel::host::RESOURCE_FIELDS);
    match parse(src).and_then(|ast| sentinel::cel::check::check_with_warnings(&ast, &env)) {
        Ok(checked) => format!(
            "{}type: {}\n",
            diag::render(&checked.warnings, file_name, src),
            checked.expr.ty
        ),
        Err(diags) => diag::render(&diags, file_name, src),
    }
}

#[test]
fn check_golden() {
    check_dir("check", check_stage);
}

#[test]
fn parse_golden() {
    check_dir("parse", parse_stage);
}

/// Runs `stage(file_name, source)` on every `*.cel` file of `tests/data/<dir>` (in name order)
/// and compares with the `.out` file beside it; panics listing every mismatch. One trailing
/// newline of the `.cel` file is not part of the source.
fn check_dir(dir: &str, stage: impl Fn(&str, &str) -> String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(dir);
    let update = std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1");
    let mut failures = String::new();
    let cases = cel_files(&root);
    assert!(!cases.is_empty(), "no .cel files in {}", root.display());
    for path in &cases {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let raw =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let src = raw.strip_suffix('\n').unwrap_or(&raw);
        let actual = stage(name, src);
        let out_path = path.with_extension("out");
        if update {
            std::fs::write(&out_path, &actual)
                .unwrap_or_else(|e| panic!("{}: {e}", out_path.display()));
            continue;
        }
        let expected = std::fs::read_to_string(&out_path).unwrap_or_default();
        if let Some(diff) = compare(&expected, &actual) {
            let _ = writeln!(
                failures,
                "--- {} (- expected, + actual)\n{diff}",
                out_path.display()
            );
        }
    }
    assert!(
        failures.is_empty(),
        "golden mismatches (rerun with UPDATE_EXPECT=1 to accept):\n{failures}"
    );
}

fn cel_files(root: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cel"))
        .collect();
    files.sort();
    files
}

/// `None` when equal, else a line diff: common lines prefixed by two spaces, removed by `- `,
/// added by `+ ` (longest common subsequence, fine for the small files here).
fn compare(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    if out.lines().all(|l| l.starts_with("  ")) {
        out.push_str("(texts differ only in trailing newlines)\n");
    }
    Some(out)
}

#[test]
fn compare_reports_mismatches() {
    assert_eq!(compare("a\nb\n", "a\nb\n"), None);
    let diff = compare("a\nb\nc\n", "a\nx\nc\n").unwrap_or_default();
    assert_eq!(diff, "  a\n- b\n+ x\n  c\n");
    assert!(compare("a\n", "a").is_some_and(|d| d.contains("trailing newlines")));
    assert_eq!(compare("", "a\n").as_deref(), Some("+ a\n"));
}

#[test]
fn parse_stage_reports_errors_and_trees() {
    assert!(parse_stage("t.cel", "1 + ").contains("t.cel:1:4"));
    assert!(parse_stage("t.cel", "1 + 2").starts_with("Binary + @0..5"));
}
