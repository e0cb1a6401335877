//! A checked-in list of the cases a corpus knowingly does not pass, one `name  # reason` a line,
//! shared by [`crate::conformance`] and [`crate::decisions`].
//!
//! Invariant: the list may only shrink. [`KnownList::enforce`] fails the run when a case fails
//! that is not listed, when a listed case passes, and when a listed name is no case at all.
//! `UPDATE_KNOWN_FAILURES=1` rewrites the file instead, keeping the reasons already written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// One corpus's list and how its report words things.
pub struct KnownList {
    /// The checked-in file.
    pub path: PathBuf,
    /// The comment block a rewrite puts at the top.
    pub header: &'static str,
    /// The reason written for a newly listed case, from how it failed.
    pub default_reason: fn(&str) -> String,
    /// The report's word for a case that fails unlisted (`FAIL`, `DIFFERS`).
    pub failed: &'static str,
    /// The report's word for a listed case that passes (`PASS`, `AGREES`), and what it means.
    pub passed: (&'static str, &'static str),
}

impl KnownList {
    /// The listed names and their reasons; blank lines and lines starting with `#` are comments.
    pub fn read(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| match l.split_once('#') {
                Some((name, reason)) => (name.trim().to_string(), reason.trim().to_string()),
                None => (l.to_string(), String::new()),
            })
            .collect()
    }

    /// Rewrites the file to list exactly `failures`, keeping the reasons of `old`.
    fn write(&self, failures: &BTreeMap<String, String>, old: &BTreeMap<String, String>) {
        let mut out = String::from(self.header);
        for (name, failure) in failures {
            let reason = old
                .get(name)
                .filter(|r| !r.is_empty())
                .cloned()
                .unwrap_or_else(|| (self.default_reason)(failure));
            out.push_str(&format!("{name}  # {reason}\n"));
        }
        std::fs::write(&self.path, out)
            .unwrap_or_else(|e| panic!("write {}: {e}", self.path.display()));
    }

    /// Everything that breaks the list's contract, one line each: `failures` (name → how it
    /// failed) not listed in `known`, and names of `known` that pass or are not in `names`.
    pub fn problems(
        &self,
        known: &BTreeMap<String, String>,
        failures: &BTreeMap<String, String>,
        names: &BTreeSet<String>,
    ) -> Vec<String> {
        let file = self
            .path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut problems = Vec::new();
        for (name, why) in failures {
            if !known.contains_key(name) {
                problems.push(format!("{} {name}: {why}", self.failed));
            }
        }
        for name in known.keys() {
            if !names.contains(name) {
                problems.push(format!("UNKNOWN {name}: listed in {file} but no such case"));
            } else if !failures.contains_key(name) {
                let (word, meaning) = self.passed;
                problems.push(format!("{word} {name}: {meaning}"));
            }
        }
        problems
    }

    /// The end of a corpus run over the cases `names`, of which `failures` failed: with
    /// prints `summary`, then with `UPDATE_KNOWN_FAILURES=1` rewrites the list; otherwise prints
    /// every problem, and fails when there is one.
    pub fn enforce(
        &self,
        failures: &BTreeMap<String, String>,
        names: &BTreeSet<String>,
        summary: &str,
    ) {
        println!("{summary}");
        let known = self.read();
        if std::env::var_os("UPDATE_KNOWN_FAILURES").is_some_and(|v| v == "1") {
            self.write(failures, &known);
            println!(
                "rewrote {} with {} entries",
                self.path.display(),
                failures.len()
            );
            return;
        }
        let problems = self.problems(&known, failures, names);
        for p in &problems {
            println!("{p}");
        }
        assert!(
            problems.is_empty(),
            "{summary}; {} unexpected results (listed above)",
            problems.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> KnownList {
        KnownList {
            path: PathBuf::from("/nonexistent/known.txt"),
            header: "",
            default_reason: str::to_string,
            failed: "FAIL",
            passed: ("PASS", "now passes"),
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The list can fail each way: an unlisted failure, a listed pass, a listed non-case; and a
    /// listed case that still fails is no problem.
    #[test]
    fn only_shrinking_is_allowed() {
        let names: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
        let known = map(&[("a", "why a"), ("b", "why b"), ("gone", "")]);
        let failures = map(&[("a", "still wrong"), ("c", "newly wrong")]);
        let problems = list().problems(&known, &failures, &names);
        assert_eq!(
            problems,
            [
                "FAIL c: newly wrong",
                "PASS b: now passes",
                "UNKNOWN gone: listed in known.txt but no such case",
            ]
        );
        let listed = map(&[("a", "")]);
        let only_a = map(&[("a", "still wrong")]);
        assert!(list().problems(&listed, &only_a, &names).is_empty());
    }
}
