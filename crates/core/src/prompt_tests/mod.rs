//! `promptd test`: snapshot tests for prompt authors.
//!
//! This module owns test cases ([`cases`]), insta-compatible `.snap` files ([`snapshot_file`]),
//! running a case, and the report ([`report`]). A case renders one prompt with fixed arguments,
//! a frozen clock ([`DEFAULT_NOW`] unless the case sets `now`) and optionally its own config, so
//! the text is the same on every machine. Redactions from the config's `test` section replace
//! volatile parts; the result is checked against the case's assertions (`contains`,
//! `not_contains`, `max_tokens`) and compared with the accepted snapshot.
//!
//! A new or changed snapshot fails the case and is written beside the accepted one as
//! `.snap.new`, where `cargo insta review` finds it; accepting (`--accept`, or insta's
//! `INSTA_UPDATE=always|unseen` outside CI) writes the `.snap` instead. In CI nothing is
//! accepted implicitly and nothing is written unless `--accept` is given.

pub mod cases;
pub mod report;
pub mod snapshot_file;

use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Serialize};

pub use cases::{CaseSpec, Discovery, SNAPSHOTS_DIR, TestCase, discover};
pub use snapshot_file::{SnapshotFile, normalize, pending_path};

use crate::library::Snapshot as LibrarySnapshot;
use crate::render::Clock;
use crate::render::clock::FROZEN_NOW;
use promptd_base::config::ProjectConfig;

/// The frozen clock of a case that does not set `now`: the renderer's [`FROZEN_NOW`].
pub const DEFAULT_NOW: &str = FROZEN_NOW;
/// Where case files are looked for when `--cases` is not given (relative to the working dir).
pub const DEFAULT_CASES_DIR: &str = "tests/prompts";
/// The config section this module owns.
pub const CONFIG_SECTION: &str = "test";

/// Errors of `promptd test`. Each names the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum PromptTestError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    CaseFile {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Examples { path: String, message: String },
    #[error("{path}: duplicate case `{id}` (already declared in {first})")]
    DuplicateCase {
        id: String,
        path: String,
        first: String,
    },
    #[error("{0}")]
    Settings(String),
    #[error("{config}: test.redactions: invalid pattern `{pattern}`: {message}")]
    Redaction {
        config: String,
        pattern: String,
        message: String,
    },
}

/// The `test` section of `.ado-mcp-config.json`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct TestSettings {
    /// Applied in order to every rendered text before assertions and comparison.
    pub redactions: Vec<RedactionRule>,
}

/// One redaction: every match of `pattern` (a regex) becomes `replacement` (`$1` / `${name}`
/// refer to capture groups).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionRule {
    pub pattern: String,
    pub replacement: String,
}

/// Compiled redactions.
#[derive(Debug, Clone, Default)]
pub struct Redactions(Vec<(Regex, String)>);

impl Redactions {
    /// Reads and compiles the `test` section of a config.
    pub fn from_config(config: &ProjectConfig) -> Result<Redactions, PromptTestError> {
        let settings: TestSettings = config
            .section_as(CONFIG_SECTION)
            .map_err(PromptTestError::Settings)?;
        let shown = config
            .path
            .as_ref()
            .map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
        settings
            .redactions
            .into_iter()
            .map(|r| match Regex::new(&r.pattern) {
                Ok(re) => Ok((re, r.replacement)),
                Err(e) => Err(PromptTestError::Redaction {
                    config: shown.clone(),
                    pattern: r.pattern,
                    message: e.to_string(),
                }),
            })
            .collect::<Result<_, _>>()
            .map(Redactions)
    }

    /// The text with every rule applied, in order.
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (re, replacement) in &self.0 {
            out = re.replace_all(&out, replacement.as_str()).into_owned();
        }
        out
    }
}

/// What happens to a new or changed snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotUpdate {
    /// Write it as the accepted `.snap` (`--accept`, `INSTA_UPDATE=always`).
    Accept,
    /// Accept new snapshots, write changed ones as `.snap.new` (`INSTA_UPDATE=unseen`).
    AcceptNew,
    /// Write `.snap.new` for review (the default outside CI).
    Pending,
    /// Write nothing (CI, `INSTA_UPDATE=no`).
    Nothing,
}

impl SnapshotUpdate {
    /// `--accept` wins; in CI nothing is accepted implicitly and nothing else is written;
    /// otherwise insta's `INSTA_UPDATE` is honoured (`always`, `unseen`, `no`; default `new`).
    pub fn decide(accept: bool, ci: bool, insta_update: Option<&str>) -> SnapshotUpdate {
        if accept {
            return SnapshotUpdate::Accept;
        }
        if ci {
            return SnapshotUpdate::Nothing;
        }
        match insta_update.map(str::trim) {
            Some("always") | Some("force") => SnapshotUpdate::Accept,
            Some("unseen") => SnapshotUpdate::AcceptNew,
            Some("no") => SnapshotUpdate::Nothing,
            _ => SnapshotUpdate::Pending,
        }
    }
}

/// Whether the environment says this is a CI run (`CI` set to anything but `""`, `0`, `false`).
pub fn is_ci(ci_var: Option<&str>) -> bool {
    ci_var.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// How to run the cases.
#[derive(Debug, Clone)]
pub struct TestOptions {
    /// Folder of case files (`None`: frontmatter examples only).
    pub cases_dir: Option<PathBuf>,
    /// Run only cases whose `<prompt>@<case>` contains this text.
    pub filter: Option<String>,
    /// Read the frontmatter `examples` of this prompt only (`None`: of every prompt).
    pub prompt: Option<String>,
    pub update: SnapshotUpdate,
    /// The clock of cases that do not set `now`.
    pub default_now: Clock,
    /// Paths in snapshot headers and messages are shown relative to this folder.
    pub base_dir: PathBuf,
}

/// What happened to a case's snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotOutcome {
    /// The text matches the accepted snapshot.
    Matched,
    /// Nothing was compared (the case could not be rendered).
    NotCompared,
    /// No accepted snapshot exists yet.
    New { snapshot: PathBuf, written: Written },
    /// The text differs from the accepted snapshot.
    Changed {
        snapshot: PathBuf,
        old: String,
        written: Written,
    },
}

/// Where a new or changed snapshot was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Accepted: the `.snap` itself.
    Accepted(PathBuf),
    /// For review: the `.snap.new`.
    Pending(PathBuf),
    /// Not written (CI).
    Nothing,
}

/// The result of one case (or of a declaration that could not be read).
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    /// `<prompt>@<case>`, or the file at fault for an unreadable declaration.
    pub id: String,
    /// The case's arguments as written (empty for an unreadable declaration).
    pub args: serde_json::Map<String, serde_json::Value>,
    /// The snapshot text (after redactions), when the case rendered.
    pub text: Option<String>,
    pub snapshot: SnapshotOutcome,
    /// Render errors, failed assertions, unusable settings.
    pub failures: Vec<String>,
}

impl CaseOutcome {
    /// Passed: no failure, and the snapshot matched or was accepted.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
            && match &self.snapshot {
                SnapshotOutcome::Matched => true,
                SnapshotOutcome::NotCompared => false,
                SnapshotOutcome::New { written, .. } | SnapshotOutcome::Changed { written, .. } => {
                    matches!(written, Written::Accepted(_))
                }
            }
    }
}

/// Counts of a run; displays as the summary line `N passed, N failed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestSummary {
    pub passed: usize,
    pub failed: usize,
}

impl std::fmt::Display for TestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)
    }
}

/// `path` relative to `base` when it is inside it, with `/` separators.
pub fn shown_path(path: &Path, base: &Path) -> String {
    let rel = path
        .strip_prefix(base)
        .map(Path::to_path_buf)
        .ok()
        .or_else(|| {
            let canon = std::fs::canonicalize(base).ok()?;
            path.strip_prefix(canon).map(Path::to_path_buf).ok()
        });
    match rel {
        Some(r) => r
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        None => path.display().to_string(),
    }
}

/// Runs every case of `snapshot`'s prompts (and of `options.cases_dir`), calling `on_case` as
/// each one finishes. Returns the counts; `Err` only when the run cannot start (unreadable
/// cases folder, unusable `test` settings).
pub fn run(
    snapshot: &LibrarySnapshot,
    options: &TestOptions,
    on_case: &mut dyn FnMut(&CaseOutcome),
) -> Result<TestSummary, PromptTestError> {
    let redactions = Redactions::from_config(&snapshot.config)?;
    let found = discover(
        &snapshot.registry,
        options.cases_dir.as_deref(),
        options.prompt.as_deref(),
    )?;
    let mut summary = TestSummary::default();
    let mut record = |outcome: CaseOutcome, summary: &mut TestSummary| {
        if outcome.passed() {
            summary.passed += 1;
        } else {
            summary.failed += 1;
        }
        on_case(&outcome);
    };
    // A declaration that cannot be read fails the run whatever the filter: nobody can tell
    // which cases it meant to declare. It is reported under its file's name.
    for problem in found.problems {
        let id = match &problem {
            PromptTestError::DuplicateCase { id, .. } => {
                if options.filter.as_deref().is_some_and(|f| !id.contains(f)) {
                    continue;
                }
                id.clone()
            }
            PromptTestError::CaseFile { path, .. }
            | PromptTestError::Examples { path, .. }
            | PromptTestError::Io { path, .. } => shown_path(Path::new(path), &options.base_dir),
            PromptTestError::Settings(_) | PromptTestError::Redaction { .. } => {
                "(settings)".to_string()
            }
        };
        record(
            CaseOutcome {
                id,
                args: serde_json::Map::new(),
                text: None,
                snapshot: SnapshotOutcome::NotCompared,
                failures: vec![problem.to_string()],
            },
            &mut summary,
        );
    }
    for case in &found.cases {
        if options
            .filter
            .as_deref()
            .is_some_and(|f| !case.id().contains(f))
        {
            continue;
        }
        let outcome = run_case(snapshot, case, &redactions, options);
        record(outcome, &mut summary);
    }
    Ok(summary)
}

/// Snapshot files (`.snap`, and `.snap.new` awaiting review) in the snapshot folders of the
/// run's cases that no case produces any more: a renamed or deleted case leaves its snapshot
/// behind, as `cargo insta test --unreferenced` reports. `None` when a declaration could not be
/// read: nobody can tell which snapshots it meant to keep.
pub fn unreferenced_snapshots(
    snapshot: &LibrarySnapshot,
    options: &TestOptions,
) -> Result<Option<Vec<PathBuf>>, PromptTestError> {
    let found = discover(
        &snapshot.registry,
        options.cases_dir.as_deref(),
        options.prompt.as_deref(),
    )?;
    if !found.problems.is_empty() {
        return Ok(None);
    }
    let referenced: std::collections::HashSet<&Path> =
        found.cases.iter().map(|c| c.snapshot.as_path()).collect();
    let mut folders: std::collections::BTreeSet<PathBuf> = found
        .cases
        .iter()
        .filter_map(|c| c.snapshot.parent().map(Path::to_path_buf))
        .collect();
    if let Some(dir) = &options.cases_dir {
        folders.insert(dir.join(SNAPSHOTS_DIR));
    }
    let mut stale = Vec::new();
    for folder in folders {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(PromptTestError::Io {
                    path: folder.display().to_string(),
                    source,
                });
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let accepted = match name.strip_suffix(".new") {
                Some(pending) if pending.ends_with(".snap") => path.with_file_name(pending),
                _ if name.ends_with(".snap") => path.clone(),
                _ => continue,
            };
            if !referenced.contains(accepted.as_path()) {
                stale.push(path);
            }
        }
    }
    stale.sort();
    Ok(Some(stale))
}

/// Renders one case, checks its assertions and compares (and maybe writes) its snapshot.
pub fn run_case(
    snapshot: &LibrarySnapshot,
    case: &TestCase,
    redactions: &Redactions,
    options: &TestOptions,
) -> CaseOutcome {
    let mut outcome = CaseOutcome {
        id: case.id(),
        args: case.spec.args.clone(),
        text: None,
        snapshot: SnapshotOutcome::NotCompared,
        failures: Vec::new(),
    };
    let declared_in = shown_path(&case.declared_in, &options.base_dir);
    let clock = match &case.spec.now {
        Some(now) => match Clock::parse(now) {
            Ok(c) => c,
            Err(e) => {
                outcome.failures.push(format!("{declared_in}: `now`: {e}"));
                return outcome;
            }
        },
        None => options.default_now,
    };
    // A case's own config replaces the project's, so the case renders alike on every machine.
    let case_config;
    let config = match &case.spec.config {
        None => &*snapshot.config,
        Some(map) => {
            let text = serde_json::Value::Object(map.clone()).to_string();
            match ProjectConfig::parse(&text, Some(&case.declared_in)) {
                Ok(c) => {
                    case_config = c;
                    &case_config
                }
                Err(e) => {
                    outcome.failures.push(format!("`config`: {e}"));
                    return outcome;
                }
            }
        }
    };
    let rendered = match snapshot
        .renderer
        .render(&case.prompt, &case.spec.args, config, &clock)
    {
        Ok(r) => r,
        Err(e) => {
            outcome.failures.push(format!("render error: {e}"));
            return outcome;
        }
    };
    let text = redactions.apply(&rendered.text);

    for needle in &case.spec.contains {
        if !text.contains(needle.as_str()) {
            outcome
                .failures
                .push(format!("assertion failed: contains {needle:?}"));
        }
    }
    for needle in &case.spec.not_contains {
        if text.contains(needle.as_str()) {
            outcome
                .failures
                .push(format!("assertion failed: not_contains {needle:?}"));
        }
    }
    if let Some(max) = case.spec.max_tokens {
        let tokens = promptd_base::tokens::count_tokens(&rendered.text);
        if tokens > max {
            outcome.failures.push(format!(
                "assertion failed: max_tokens {max}: the rendered text has {tokens} tokens"
            ));
        }
    }

    outcome.snapshot = compare(case, &text, &declared_in, options, &mut outcome.failures);
    outcome.text = Some(text);
    outcome
}

/// Compares with the accepted snapshot and writes what the update mode asks for.
fn compare(
    case: &TestCase,
    text: &str,
    declared_in: &str,
    options: &TestOptions,
    failures: &mut Vec<String>,
) -> SnapshotOutcome {
    let snap_path = &case.snapshot;
    let pending = pending_path(snap_path);
    let shown = shown_path(snap_path, &options.base_dir);
    let old = match SnapshotFile::read(snap_path) {
        Ok(old) => old,
        Err(e) => {
            failures.push(format!("{shown}: {e}"));
            return SnapshotOutcome::NotCompared;
        }
    };
    if let Some(old) = &old
        && old.same_content(text)
    {
        // Like insta: a passing case leaves no stale pending file behind.
        if pending.exists()
            && options.update != SnapshotUpdate::Nothing
            && let Err(e) = std::fs::remove_file(&pending)
        {
            tracing::warn!("{}: cannot remove: {e}", pending.display());
        }
        return SnapshotOutcome::Matched;
    }
    let accept = match options.update {
        SnapshotUpdate::Accept => true,
        SnapshotUpdate::AcceptNew => old.is_none(),
        SnapshotUpdate::Pending | SnapshotUpdate::Nothing => false,
    };
    let file = SnapshotFile {
        source: Some(declared_in.to_string()),
        expression: Some(expression(case)),
        description: None,
        content: text.to_string(),
    };
    let mut write = |path: &Path| match file.write(path) {
        Ok(()) => true,
        Err(e) => {
            failures.push(format!("{}: cannot write: {e}", path.display()));
            false
        }
    };
    let written = if accept {
        if write(snap_path) {
            let _ = std::fs::remove_file(&pending);
            Written::Accepted(snap_path.clone())
        } else {
            Written::Nothing
        }
    } else if options.update != SnapshotUpdate::Nothing && write(&pending) {
        Written::Pending(pending)
    } else {
        Written::Nothing
    };
    match old {
        None => SnapshotOutcome::New {
            snapshot: snap_path.clone(),
            written,
        },
        Some(old) => SnapshotOutcome::Changed {
            snapshot: snap_path.clone(),
            old: old.content,
            written,
        },
    }
}

/// The snapshot header's `expression`: what was rendered, in one readable line
/// (`code_review focus=security target=src/lib.rs now=2026-03-01`); long or multi-line values
/// are shortened, the case file has them in full.
fn expression(case: &TestCase) -> String {
    const MAX: usize = 40;
    let mut e = case.prompt.clone();
    for (k, v) in &case.spec.args {
        let full = crate::dialect::display_value(v);
        let first = full.lines().next().unwrap_or_default();
        let mut shown: String = first.chars().take(MAX).collect();
        if shown.len() < full.len() {
            shown.push('…');
        }
        e.push_str(&format!(" {k}={shown}"));
    }
    if let Some(now) = &case.spec.now {
        e.push_str(&format!(" now={now}"));
    }
    if case.spec.config.is_some() {
        e.push_str(" (case config)");
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_mode() {
        use SnapshotUpdate::*;
        assert_eq!(SnapshotUpdate::decide(true, true, None), Accept);
        assert_eq!(SnapshotUpdate::decide(false, true, Some("always")), Nothing);
        assert_eq!(SnapshotUpdate::decide(false, false, Some("always")), Accept);
        assert_eq!(
            SnapshotUpdate::decide(false, false, Some("unseen")),
            AcceptNew
        );
        assert_eq!(SnapshotUpdate::decide(false, false, None), Pending);
        assert!(is_ci(Some("true")) && is_ci(Some("1")));
        assert!(!is_ci(Some("false")) && !is_ci(Some("")) && !is_ci(None));
    }

    #[test]
    fn redactions_apply_in_order_with_groups() {
        let cfg = ProjectConfig::parse(
            r#"{"test": {"redactions": [
                {"pattern": "\\d{4}-\\d{2}-\\d{2}", "replacement": "[date]"},
                {"pattern": "id=(\\w+)", "replacement": "id=<$1>"}
            ]}}"#,
            None,
        )
        .unwrap();
        let r = Redactions::from_config(&cfg).unwrap();
        assert_eq!(r.apply("on 2026-01-15 id=abc"), "on [date] id=<abc>");
    }

    #[test]
    fn bad_redaction_names_the_pattern() {
        let cfg = ProjectConfig::parse(
            r#"{"test": {"redactions": [{"pattern": "(", "replacement": ""}]}}"#,
            None,
        )
        .unwrap();
        let e = Redactions::from_config(&cfg).unwrap_err().to_string();
        assert!(e.contains("invalid pattern `(`"), "{e}");
    }
}
