//! `promptd test` end to end, with the real binary on real files. Each folder under
//! `tests/fixtures/prompt_tests/` holds a `project/` (prompts, case files, snapshots, config) and
//! a `runs.json` listing command lines to run in a temporary copy of it; the insta snapshot is
//! every run's exit code, output, and the files it created, changed or removed.
//!
//! A pending snapshot that is part of a fixture is stored as `*.snap.pending` and copied as
//! `*.snap.new`: a real `.snap.new` in this repository would be picked up (and accepted) by
//! `cargo insta accept`, which scans the whole workspace.

use crate::support::{self, process};

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use promptd::prompt_tests::SnapshotFile;
use serde_json::Value;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let name = match name.strip_suffix(".snap.pending") {
            Some(stem) => format!("{stem}.snap.new"),
            None => name,
        };
        let target = to.join(name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `dir`: relative path → content.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.insert(
                    rel.replace('\\', "/"),
                    std::fs::read_to_string(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The binary in `cwd`, isolated from the caller's environment (CI runs these tests with
/// CI=true).
fn promptd(cwd: &Path) -> Command {
    let mut cmd = process::promptd();
    cmd.current_dir(cwd);
    cmd
}

fn run_scenario(runs_file: &Path) -> String {
    let project = runs_file.parent().unwrap().join("project");
    let runs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(runs_file).unwrap())
        .expect("runs.json is a list of {args, env?}");
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&project, tmp.path());
    let mut out = String::new();
    for run in &runs {
        let args: Vec<&str> = run["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let env: Vec<(&str, &str)> = run["env"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        let before = tree(tmp.path());
        let output = promptd(tmp.path())
            .args(&args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let after = tree(tmp.path());
        let env_shown: String = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        writeln!(out, "$ {env_shown}promptd {}", args.join(" ")).unwrap();
        writeln!(out, "exit: {}", output.status.code().unwrap_or(-1)).unwrap();
        writeln!(
            out,
            "--- stdout\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
        .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !stderr.is_empty() {
            writeln!(out, "--- stderr\n{stderr}").unwrap();
        }
        for (path, content) in &after {
            match before.get(path) {
                None => writeln!(out, "--- created {path}\n{content}").unwrap(),
                Some(old) if old != content => {
                    writeln!(out, "--- modified {path}\n{content}").unwrap()
                }
                Some(_) => {}
            }
        }
        for path in before.keys().filter(|p| !after.contains_key(*p)) {
            writeln!(out, "--- removed {path}").unwrap();
        }
        writeln!(out).unwrap();
    }
    support::redact(&out, tmp.path())
}

#[test]
fn prompt_test_fixtures() {
    insta::glob!("fixtures/prompt_tests/*/runs.json", |path| {
        insta::assert_snapshot!(run_scenario(path));
    });
}

/// Our `.snap` and `.snap.new` files are insta's: insta reads them, and saving them again with
/// insta (what `cargo insta accept` does) produces the very same bytes.
#[test]
fn snapshot_files_are_read_and_rewritten_identically_by_insta() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/prompt_tests/redaction/project"),
        tmp.path(),
    );
    let snapshots = tmp.path().join("tests/prompts/snapshots");
    std::fs::remove_dir_all(&snapshots).unwrap();
    // Pending files first (a plain run), then accepted ones.
    let o = promptd(tmp.path())
        .args(["--prompts", "prompts", "test"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let pending: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pending.len(), 3, "{pending:?}");
    let o = promptd(tmp.path())
        .args(["--prompts", "prompts", "test", "--accept"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let accepted: Vec<PathBuf> = std::fs::read_dir(&snapshots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        accepted.len(),
        3,
        "--accept replaces pending files: {accepted:?}"
    );
    for path in pending.iter().chain(&accepted) {
        let Ok(ours) = std::fs::read_to_string(path) else {
            continue; // the pending file was replaced by the accepted one
        };
        let theirs = insta::Snapshot::from_file(path).expect("insta reads our file");
        let mine = SnapshotFile::parse(&ours, "x").unwrap();
        assert_eq!(theirs.metadata().source(), mine.source.as_deref());
        assert_eq!(theirs.metadata().expression(), mine.expression.as_deref());
        assert_eq!(
            theirs.as_text().unwrap().to_string(),
            mine.content,
            "same content for {}",
            path.display()
        );
        let resaved = tmp.path().join("resaved.snap");
        theirs.save(&resaved).unwrap();
        assert_eq!(std::fs::read_to_string(&resaved).unwrap(), ours);
    }
}

/// Every built-in prompt has at least one case in `tests/prompts/`, run by `promptd test` in CI.
#[test]
fn every_builtin_prompt_has_cases() {
    let lib = support::library(&[], true, None, "2026-01-15");
    let snap = lib.snapshot();
    let cases_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prompts");
    let found = promptd::prompt_tests::discover(&snap.registry, Some(&cases_dir), None).unwrap();
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    for prompt in snap.registry.prompts() {
        let cases = found
            .cases
            .iter()
            .filter(|c| c.prompt == prompt.name)
            .count();
        assert!(
            cases > 0,
            "built-in prompt `{}` has no test case",
            prompt.name
        );
        for case in found.cases.iter().filter(|c| c.prompt == prompt.name) {
            assert!(
                case.snapshot.is_file(),
                "{} has no accepted snapshot",
                case.id()
            );
        }
    }
}

/// This repository's own prompts, as a user of the checkout sees them: `promptd check` finds no
/// error and every case in `tests/prompts/` matches its accepted snapshot. Run as CI runs it
/// (`CI=true`): a new or changed snapshot fails without writing a pending file into the tree;
/// `promptd test --accept` in the checkout accepts it.
#[test]
fn the_repositorys_prompts_pass_check_and_their_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = promptd(root).arg("check").output().unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "promptd check:\n{out}");
    assert!(out.contains(" 0 error(s)"), "{out}");

    let test = promptd(root)
        .env("CI", "true")
        .arg("test")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&test.stdout);
    assert_eq!(
        test.status.code(),
        Some(0),
        "promptd test:\n{out}\n{}",
        String::from_utf8_lossy(&test.stderr)
    );
    let summary = out.lines().last().unwrap_or_default();
    let passed: usize = summary
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `N passed, 0 failed` summary:\n{out}"));
    let cases = std::fs::read_dir(root.join("tests/prompts/snapshots"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("snap".as_ref()))
        .count();
    assert_eq!(passed, cases, "one accepted snapshot a case:\n{out}");
}
