//! `sentinel ir`: golden files of its annotated stages, and its HTML page in a real browser.
//!
//! The goldens (tests/data/ir/<config>.<stage>.out, `UPDATE_EXPECT=1` rewrites them) are of the
//! default rules and of tests/data/ir/helpers.yaml (helpers, macros, and a param too large to
//! compile, which runs in the interpreter), compiled for the x86-64 baseline (`--cpu
//! baseline`) so the machine code is the same on every machine for this Cranelift version.
//! The page is loaded by Debian's headless Chromium (`.ci/run` installs it; the test fails
//! without it), which clicks a source span through the page's URL fragment; the test reads the
//! DOM Chromium dumps and checks which lines are highlighted, and writes a screenshot to
//! target/ir-html.png.

use sentinel::cmd::ir::{self, Body, Cpu, Stage, View};
use sentinel::rules::decision::Program;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ir")
        .join(name)
}

/// A param of this many list elements has more nodes than the JIT compiles (20,000).
const TOO_LARGE: usize = 20_001;

/// helpers.yaml with its last param, `too_large`, appended: a list of 20,001 reads of a param,
/// too large to compile, and too long to keep in the file.
fn helpers_config(dir: &Path) -> PathBuf {
    let mut yaml = std::fs::read_to_string(data("helpers.yaml")).expect("helpers.yaml");
    let list = vec!["g"; TOO_LARGE].join(",");
    let _ = write!(yaml, "    - name: too_large\n      expr: '[{list}]'\n");
    let path = dir.join("helpers.yaml");
    std::fs::write(&path, yaml).expect("writes the config");
    path
}

fn program(config: Option<&Path>) -> Program {
    let rules = sentinel::cmd::check::load_rules(config).expect("config loads");
    rules.decision.program().clone()
}

fn baseline() -> View {
    View {
        body: Body::Clean,
        raw: false,
        cpu: Cpu::Baseline,
    }
}

fn print(program: &Program, stage: Stage, view: View) -> String {
    let mut out = Vec::new();
    ir::run(program, None, stage, view, &mut out).expect("ir prints");
    String::from_utf8(out).expect("utf-8")
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Compares (or with `UPDATE_EXPECT=1` rewrites) `tests/data/ir/<name>`.
fn golden(name: &str, actual: &str, failures: &mut String) {
    let path = data(name);
    if std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1") {
        std::fs::write(&path, actual).expect("writes the golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        let _ = writeln!(
            failures,
            "{}: differs from line {} (expected {:?}, got {:?})",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

#[test]
fn annotated_stages_match_their_goldens() {
    let dir = scratch_dir("ir-golden");
    let configs = [
        ("default", program(None)),
        ("helpers", program(Some(&helpers_config(&dir)))),
    ];
    let mut failures = String::new();
    for (name, program) in &configs {
        for (stage, suffix) in [
            (Stage::Summary, "summary"),
            (Stage::Clif, "clif"),
            (Stage::Asm, "asm"),
        ] {
            let text = print(program, stage, baseline());
            golden(&format!("{name}.{suffix}.out"), &text, &mut failures);
        }
        let checked = View {
            body: Body::Checked,
            ..baseline()
        };
        let text = print(program, Stage::Asm, checked);
        golden(&format!("{name}.checked.asm.out"), &text, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "golden mismatches (rerun with UPDATE_EXPECT=1 to accept):\n{failures}"
    );
}

/// Every code line of `clif`/`asm` sits under a group header of a param or the result, and
/// every load from the row names its field.
fn assert_every_line_attributed(text: &str) {
    let mut in_group = false;
    let mut in_body = false;
    for line in text.lines() {
        if line.starts_with("; body ") {
            in_body = true;
            continue;
        }
        if !in_body {
            continue;
        }
        if let Some(head) = line.strip_prefix("; ") {
            in_group = head.starts_with("message_decision.");
            if !in_group {
                assert!(head.contains("folded"), "a line outside any param: {line}");
            }
            continue;
        }
        assert!(in_group, "a code line outside any param and span: {line}");
    }
}

#[test]
fn every_line_belongs_to_a_param_and_a_span_and_row_loads_are_named() {
    let dir = scratch_dir("ir-attributed");
    for config in [None, Some(helpers_config(&dir))] {
        let program = program(config.as_deref());
        for body in [Body::Clean, Body::Checked] {
            let view = View { body, ..baseline() };
            for stage in [Stage::Clif, Stage::Asm] {
                let text = print(&program, stage, view);
                assert_every_line_attributed(&text);
            }
        }
    }
    let program = program(None);
    let clif = print(&program, Stage::Clif, baseline());
    // Each row load of the IR is a `load` from the row pointer, and says which field it reads.
    let row_loads: Vec<&str> = clif
        .lines()
        .filter(|l| l.contains(" = load.") && l.contains("can_move v1+"))
        .collect();
    assert!(!row_loads.is_empty(), "{clif}");
    for l in &row_loads {
        assert!(
            l.contains("; resource") || l.contains("; condition(\""),
            "an unnamed row load: {l}"
        );
    }
    assert!(
        clif.contains("; condition(\"Reconciled\").observed_generation"),
        "{clif}"
    );
    let asm = print(&program, Stage::Asm, baseline());
    assert!(asm.contains("; resource.generation"), "{asm}");
}

#[test]
fn the_summary_says_which_param_runs_in_the_interpreter_and_why() {
    let dir = scratch_dir("ir-summary");
    let program = program(Some(&helpers_config(&dir)));
    let summary = print(&program, Stage::Summary, baseline());
    let line = summary
        .lines()
        .find(|l| l.contains("\"too_large\""))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(line.contains("interpreter: too large to compile"), "{line}");
    // Every other stage is headed by the same table.
    let asm = print(&program, Stage::Asm, baseline());
    assert!(asm.starts_with(&summary), "{asm}");
}

/// The path of Chromium, or a loud failure saying how to get it.
fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "`chromium` is not installed: this test needs Debian's `chromium` package \
             (apt-get install chromium; .ci/run installs it)"
        )
    })
}

fn headless(page: &Path, fragment: &str, extra: &[&str], profile: &Path) -> String {
    let url = format!("file://{}#{fragment}", page.display());
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--window-size=1400,900",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `<div class="l" …>` lines of stage `name` in a dumped DOM: (expr, start, end,
/// highlighted).
fn code_lines(dom: &str, name: &str) -> Vec<(String, u32, u32, bool)> {
    let start = dom
        .find(&format!("id=\"stage-{name}\""))
        .unwrap_or_else(|| panic!("no stage {name} in the DOM"));
    let rest = &dom[start..];
    let end = rest[1..]
        .find("class=\"stage\"")
        .map_or(rest.len(), |e| e + 1);
    let attr = |tag: &str, key: &str| {
        let at = tag.find(&format!("{key}=\""))? + key.len() + 2;
        Some(tag[at..].split('"').next()?.to_string())
    };
    rest[..end]
        .split("<div ")
        .filter(|tag| tag.starts_with("class=\"l"))
        .filter_map(|tag| {
            let tag = &tag[..tag.find('>')?];
            let class = attr(tag, "class")?;
            Some((
                attr(tag, "data-e")?,
                attr(tag, "data-a")?.parse().ok()?,
                attr(tag, "data-b")?.parse().ok()?,
                class.split(' ').any(|c| c == "hl"),
            ))
        })
        .collect()
}

#[test]
fn the_html_page_highlights_a_spans_instructions_in_headless_chromium() {
    let dir = scratch_dir("ir-html");
    let program = program(None);
    let mut page = Vec::new();
    ir::write_html(&program, None, Stage::Asm, baseline(), &mut page).expect("writes the page");
    let page_text = String::from_utf8(page).expect("utf-8");
    assert!(
        !page_text.contains("http://")
            && !page_text.contains("https://")
            && !page_text.contains(" src="),
        "the page refers to something outside itself"
    );
    let path = dir.join("default.html");
    std::fs::write(&path, &page_text).expect("writes the page");

    // `generation_mismatch` is params[4]: `resource.generation > condition("Reconciled")…`;
    // click the span of the whole comparison (bytes 0..65: its operands' loads are folded into
    // the `cmp`, so they have no lines of their own).
    let source = &program.params[4].source;
    assert_eq!(
        &source[0..65],
        "resource.generation > condition(\"Reconciled\").observed_generation"
    );
    let profile = dir.join("profile");
    let dom = headless(&path, "stage=asm&click=4:0:65", &["--dump-dom"], &profile);
    assert!(!dom.contains("data-error"), "the page reported an error");
    let lines = code_lines(&dom, "asm");
    assert!(!lines.is_empty(), "no asm lines in the DOM");
    let expected: Vec<bool> = lines
        .iter()
        .map(|(e, _, b, _)| e == "4" && *b <= 65)
        .collect();
    let got: Vec<bool> = lines.iter().map(|l| l.3).collect();
    assert!(
        expected.iter().any(|x| *x),
        "no asm line comes from the span"
    );
    assert_eq!(got, expected, "highlighted lines differ from the span's");
    assert!(
        dom.contains("class=\"s sel\" data-e=\"4\" data-a=\"0\" data-b=\"65\""),
        "the clicked span is not marked"
    );

    // The reverse: clicking the first code line of the clif stage marks its span.
    let dom = headless(&path, "stage=clif&line=0", &["--dump-dom"], &profile);
    let clif = code_lines(&dom, "clif");
    let first = clif.first().expect("clif lines").clone();
    assert!(first.3, "the clicked line is not highlighted");
    assert!(
        dom.contains(&format!(
            "class=\"s sel\" data-e=\"{}\" data-a=\"{}\" data-b=\"{}\"",
            first.0, first.1, first.2
        )),
        "the clicked line's span is not marked"
    );

    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ir-html.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &path,
        "stage=asm&click=4:0:65",
        &[&format!("--screenshot={}", shot.display())],
        &profile,
    );
    assert!(shot.is_file(), "no screenshot at {}", shot.display());
}
