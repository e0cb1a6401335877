//! HyperFleet Sentinel: polls the HyperFleet API, decides per resource with compiled CEL rules
//! whether it needs reconciling, and publishes CloudEvents to a broker.
//!
//! Module map, in floors from the top; a module names only its own floor and those below it
//! ([`LAYERS`], checked by this file's tests, with ARCHITECTURE.md's code map):
//! - [`cmd`]: the subcommands behind the `sentinel` binary.
//! - [`sim`]: stand-ins for the HyperFleet API, the adapters and their queues, for tests and
//!   `simulate`.
//! - [`daemon`]: the poll loop and its plan, config, health, metrics, logging.
//! - [`api`] and [`broker`]: the HyperFleet API client; publishing to RabbitMQ or Pub/Sub.
//! - [`telemetry`]: OpenTelemetry spans and their exporters.
//! - [`common`]: what the rooms above share (file limits, URL redaction, Go's text formats).
//! - [`rules`]: everything a config compiles to, from its sources: [`rules::decision`]
//!   (message_decision params + result → publish or skip), [`rules::filter`] and
//!   [`rules::message_data`] (the CloudEvent `data` object built per published resource).
//! - [`resource`] and [`tsl`]: a HyperFleet resource decoded from JSON into the object model CEL
//!   reads; the API's search language.
//! - [`cel`]: the CEL compiler (lexer, parser, checker, interpreter, JIT). No I/O.

pub mod api;
pub mod broker;
pub mod cel;
pub mod cmd;
pub mod common;
pub mod daemon;
pub mod resource;
pub mod rules;
pub mod sim;
pub mod telemetry;
pub mod tsl;

/// The dependency rule (ARCHITECTURE.md, Invariants): the layers top to bottom, each with its
/// top-level modules. A module may name (`crate::…`) its own layer and the layers below it,
/// never one above.
pub const LAYERS: &[(&str, &[&str])] = &[
    ("cmd", &["cmd"]),
    ("sim", &["sim"]),
    ("daemon", &["daemon"]),
    ("clients", &["api", "broker"]),
    ("telemetry", &["telemetry"]),
    ("common", &["common"]),
    ("rules", &["rules"]),
    ("data", &["resource", "tsl"]),
    ("cel", &["cel"]),
];

#[cfg(test)]
mod tests {
    use super::LAYERS;
    use std::path::{Path, PathBuf};

    /// The layer (0 = top) of a top-level module.
    fn layer_of(module: &str) -> Option<usize> {
        LAYERS.iter().position(|(_, mods)| mods.contains(&module))
    }

    /// The top-level modules a text names through `crate::`, with their line numbers: the
    /// first segment of every `crate::x` path, and each name of a `crate::{x, y::z}` group.
    fn named_modules(text: &str) -> Vec<(usize, String)> {
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        let mut out = Vec::new();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let Some(group) = rest.strip_prefix('{') else {
                out.push((line_of(at), ident(rest)));
                continue;
            };
            // Names at the group's top level: after `{` and after each `,` there.
            let mut depth = 0;
            let mut starts = vec![0];
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => starts.push(i + 1),
                    _ => {}
                }
            }
            let group_at = at + "crate::{".len();
            for s in starts {
                let name = group[s..].trim_start();
                let offset = group_at + s + (group.len() - s - name.len());
                out.push((line_of(offset), ident(name)));
            }
        }
        out.retain(|(_, m)| !m.is_empty());
        out
    }

    /// Every place in `text`, a file of top-level module `module`, that names a module of a
    /// higher layer (or of no layer).
    fn violations(module: &str, text: &str) -> Vec<String> {
        let Some(own) = layer_of(module) else {
            return vec![format!("module `{module}` is in no layer of LAYERS")];
        };
        named_modules(text)
            .into_iter()
            .filter(|(_, m)| layer_of(m).is_none_or(|l| l < own))
            .map(|(line, m)| format!("line {line}: `{module}` imports `crate::{m}`"))
            .collect()
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn no_module_imports_a_higher_layer() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        let mut problems = Vec::new();
        for file in &files {
            let relative = file.strip_prefix(&src).expect("under src/");
            let first = relative.components().next().expect("a path");
            let module = first.as_os_str().to_string_lossy();
            let module = module.trim_end_matches(".rs");
            // The crate root and the binary stand above every layer.
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(file).expect("a source file is readable");
            for v in violations(module, &text) {
                problems.push(format!("src/{}: {v}", relative.display()));
            }
        }
        assert!(
            files.len() > 50,
            "only {} files found under src/",
            files.len()
        );
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn every_module_of_the_crate_has_a_layer() {
        let lib = include_str!("lib.rs");
        let declared: Vec<&str> = lib
            .lines()
            .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
            .collect();
        assert!(declared.len() >= 6, "{declared:?}");
        for m in declared {
            assert!(
                layer_of(m).is_some(),
                "module `{m}` is in no layer of LAYERS"
            );
        }
    }

    #[test]
    fn the_scan_catches_an_upward_import() {
        // A line that breaks the rule, as the resource layer once had it.
        let bad = "let fleet = crate::cmd::bench::fleet(30, now, 3);";
        assert_eq!(
            violations("resource", bad),
            ["line 1: `resource` imports `crate::cmd`"]
        );
        let group = "use crate::{\n    cel::time, sim::clock};\nuse crate::{rules::Rules, x};";
        assert_eq!(
            named_modules(group),
            [
                (2, "cel".to_string()),
                (2, "sim".to_string()),
                (3, "rules".to_string()),
                (3, "x".to_string())
            ]
        );
        assert_eq!(
            violations("rules", "use crate::{cel::time, daemon::config};"),
            ["line 1: `rules` imports `crate::daemon`"]
        );
        // Downward and sideways are fine; so is a module's own layer.
        assert!(violations("sim", "use crate::daemon::runtime::Daemon;").is_empty());
        assert!(violations("rules", "use crate::rules::decision::compile_expr;").is_empty());
        assert!(violations("cel", "use crate::cel::value::Value;").is_empty());
        assert_eq!(violations("cel", "crate::resource::Resource").len(), 1);
        assert_eq!(violations("nowhere", "").len(), 1);
    }

    /// The module path of a file under `src/` (`api/url.rs` → `api::url`, `api/mod.rs` → `api`).
    fn module_of(relative: &Path) -> Vec<String> {
        let mut parts: Vec<String> = relative
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        parts
    }

    /// Every path a text names from the crate root, groups expanded
    /// (`crate::a::{b, c::d}` → `a::b`, `a::c::d`), and every `super::` path resolved against
    /// `module` (the file's own module; a file's test module is left out, being no part of
    /// what the file imports).
    fn named_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
        // Comments (doc links among them) name modules without importing them.
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .flat_map(|l| [l, "\n"])
            .collect();
        let text = code.as_str();
        let mut out = Vec::new();
        for (start, base) in [("crate::", 0usize), ("super::", 1)] {
            for (at, _) in text.match_indices(start) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let mut rest = &text[at + start.len()..];
                let mut prefix: Vec<String> = module[..module.len().saturating_sub(base)].to_vec();
                if base == 0 {
                    prefix.clear();
                }
                while let Some(r) = rest.strip_prefix("super::") {
                    prefix.pop();
                    rest = r;
                }
                expand(rest, prefix, &mut out);
            }
        }
        out
    }

    /// The paths of `text` (what follows `crate::`) under `prefix`, into `out`.
    fn expand(text: &str, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut rest = text;
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0;
                let mut item = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            expand(group[item..i].trim_start(), prefix.clone(), out);
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            expand(group[item..i].trim_start(), prefix.clone(), out);
                            item = i + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            prefix.push(ident.clone());
            rest = &rest[ident.len()..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        if !prefix.is_empty() {
            out.push(prefix);
        }
    }

    /// The file a module path lives in: the longest prefix that is a module of `modules`.
    fn file_of(path: &[String], modules: &[Vec<String>]) -> Option<usize> {
        (1..=path.len())
            .rev()
            .find_map(|n| modules.iter().position(|m| m.as_slice() == &path[..n]))
    }

    #[test]
    fn no_two_files_import_each_other() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        let modules: Vec<Vec<String>> = files
            .iter()
            .map(|f| module_of(f.strip_prefix(&src).expect("under src/")))
            .collect();
        let mut edges = std::collections::BTreeSet::new();
        for (from, file) in files.iter().enumerate() {
            let module = &modules[from];
            if module
                .first()
                .is_none_or(|m| m == "cel" || m == "lib" || m == "main")
            {
                continue;
            }
            let text = std::fs::read_to_string(file).expect("a source file is readable");
            for path in named_paths(module, &text) {
                let Some(to) = file_of(&path, &modules) else {
                    continue;
                };
                // A module reaching into its own children is containment, not an import.
                if !modules[to].starts_with(module) {
                    edges.insert((from, to));
                }
            }
        }
        let name = |i: usize| modules[i].join("::");
        let circles: Vec<String> = edges
            .iter()
            .filter(|&&(a, b)| a < b && edges.contains(&(b, a)))
            .map(|&(a, b)| format!("{} <-> {}", name(a), name(b)))
            .collect();
        assert!(edges.len() > 100, "only {} imports found", edges.len());
        assert!(
            circles.is_empty(),
            "files that import each other:\n{}",
            circles.join("\n")
        );
    }

    #[test]
    fn the_import_scan_resolves_groups_and_super() {
        let module = ["telemetry".to_string(), "spans".to_string()];
        let paths = named_paths(
            &module,
            "use crate::{api::url, broker::{event::Event, Liveness}};\nuse super::TraceParent;\n\
             let x = super::super::cmd::run;",
        );
        let text: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
        assert_eq!(
            text,
            [
                "api::url",
                "broker::event::Event",
                "broker::Liveness",
                "telemetry::TraceParent",
                "cmd::run"
            ]
        );
    }

    #[test]
    fn the_code_map_names_every_room_and_fuzz_target() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |p: &str| std::fs::read_to_string(root.join(p)).expect("readable");
        let architecture = read("ARCHITECTURE.md");
        let map = architecture
            .split("## Code map")
            .nth(1)
            .and_then(|m| m.split("\n## ").next())
            .expect("ARCHITECTURE.md has a code map");
        let mut rooms: Vec<&str> = map
            .lines()
            .filter_map(|l| l.strip_prefix("- `src/")?.split_once("/`").map(|(r, _)| r))
            .collect();
        rooms.sort();
        let mut modules: Vec<&str> = LAYERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
        modules.sort();
        assert_eq!(
            rooms, modules,
            "the code map's rooms are the crate's top-level modules"
        );
        // The floors' picture names every floor, top to bottom, as LAYERS does.
        let floors = architecture
            .split("## The floors")
            .nth(1)
            .and_then(|f| f.split("```").nth(1))
            .expect("ARCHITECTURE.md draws the floors");
        let drawn: Vec<String> = floors
            .lines()
            .filter(|l| !l.trim().is_empty() && l.trim() != "▼")
            .map(|l| l.split("  ").next().unwrap_or("").trim().to_string())
            .collect();
        let layers: Vec<String> = LAYERS.iter().map(|(_, m)| m.join(" · ")).collect();
        assert_eq!(drawn, layers, "the floors drawn are LAYERS");

        let manifest = read("fuzz/Cargo.toml");
        let mut targets: Vec<String> = manifest
            .split("[[bin]]")
            .skip(1)
            .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("name = ")))
            .map(|n| n.trim_matches('"').to_string())
            .collect();
        targets.sort();
        let fuzz = map
            .split("- `fuzz/`")
            .nth(1)
            .expect("the code map has fuzz/");
        let listed = fuzz.split("(docs/fuzzing.md)").next().unwrap_or("");
        let mut mapped: Vec<String> = listed
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        mapped.sort();
        assert_eq!(
            mapped, targets,
            "the code map's fuzz targets are fuzz/Cargo.toml's"
        );
        let fuzzing = read("docs/fuzzing.md");
        let mut documented: Vec<String> = fuzzing
            .lines()
            .filter_map(|l| {
                l.strip_prefix("| `")?
                    .split_once('`')
                    .map(|(n, _)| n.to_string())
            })
            .collect();
        documented.sort();
        assert_eq!(
            documented, targets,
            "docs/fuzzing.md's table lists every fuzz target"
        );
    }
}
