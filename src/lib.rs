//! HyperFleet Sentinel: polls the HyperFleet API, decides per resource with compiled CEL rules
//! whether it needs reconciling, and publishes CloudEvents to a broker.
//!
//! Module map, in layers from the top; a module names only its own layer and those below it
//! ([`LAYERS`], checked by this file's tests):
//! - [`cmd`]: the subcommands behind the `sentinel` binary.
//! - [`sim`]: stand-ins for the HyperFleet API, the adapters and their queues, for tests and
//!   `simulate`.
//! - [`daemon`]: the daemon: config, API client, broker, loop, metrics, health.
//! - [`rules`]: everything a config compiles to, from its sources: [`rules::decision`]
//!   (message_decision params + result → publish or skip) and [`rules::message_data`] (the
//!   CloudEvent `data` object built per published resource).
//! - [`resource`]: a HyperFleet resource decoded from JSON into the object model CEL reads.
//! - [`cel`]: the CEL compiler (lexer, parser, checker, interpreter, JIT). No I/O.

pub mod cel;
pub mod cmd;
pub mod daemon;
pub mod resource;
pub mod rules;
pub mod sim;

/// The dependency rule (ARCHITECTURE.md, Invariants): the layers top to bottom, each with its
/// top-level modules. A module may name (`crate::…`) its own layer and the layers below it,
/// never one above.
pub const LAYERS: &[(&str, &[&str])] = &[
    ("cmd", &["cmd"]),
    ("sim", &["sim"]),
    ("daemon", &["daemon"]),
    ("rules", &["rules"]),
    ("resource", &["resource"]),
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
}
