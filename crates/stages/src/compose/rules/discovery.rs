//! One discovery run's state and the steps every rule format shares: reading a rule file (inside
//! the workspace, at most [`MAX_RULE_BYTES`], UTF-8), applying it whole or logging why not, and
//! deciding a glob-scoped rule against the current file. The format readers (`agents`, `claude`,
//! `cursor`, `copilot`, `windsurf`) call these; the ledger they fill is in discovery order.

use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

use super::glob::GlobMatcher;
use promptd_core::registry::frontmatter::LenientFrontmatter;

/// Rule files larger than this are listed but not included (a rule is never cut).
pub const MAX_RULE_BYTES: u64 = 1024 * 1024;

/// The kind of rule file, which decides how it applies.
#[derive(Serialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RuleFormat {
    AgentsMd,
    ClaudeMd,
    ClaudeRule,
    ClaudeLocalMd,
    ClaudeImport,
    Cursorrules,
    CursorLegacy,
    CursorMdc,
    CopilotInstructions,
    CopilotScoped,
    Windsurfrules,
    WindsurfRule,
}

impl RuleFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgentsMd => "agents-md",
            Self::ClaudeMd => "claude-md",
            Self::ClaudeRule => "claude-rule",
            Self::ClaudeLocalMd => "claude-local-md",
            Self::ClaudeImport => "claude-import",
            Self::Cursorrules => "cursorrules",
            Self::CursorLegacy => "cursor-legacy",
            Self::CursorMdc => "cursor-mdc",
            Self::CopilotInstructions => "copilot-instructions",
            Self::CopilotScoped => "copilot-scoped",
            Self::Windsurfrules => "windsurfrules",
            Self::WindsurfRule => "windsurf-rule",
        }
    }
}

/// A rule included in the prompt.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AppliedRule {
    /// Workspace-relative path, `/`-separated.
    pub path: String,
    pub format: RuleFormat,
    /// True when the rule applies whatever the current file (part of the cacheable prefix).
    pub always_on: bool,
    /// The rule's text, verbatim (without its frontmatter, for formats that have one).
    pub text: String,
}

/// Every rule file found, included or not, and why.
#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RuleLedgerEntry {
    /// Workspace-relative path, `/`-separated (for an import that names no file: the token).
    pub path: String,
    pub format: RuleFormat,
    pub included: bool,
    pub reason: String,
}

/// A rule file of a format with frontmatter.
pub(super) struct FrontedRule {
    /// The frontmatter, read leniently.
    pub front: LenientFrontmatter,
    /// The text after the frontmatter, verbatim.
    pub body: String,
    /// What every ledger reason about the file adds: how its frontmatter was read.
    pub note: String,
}

/// The state of one discovery run.
pub(super) struct Discovery {
    /// The workspace root, canonical.
    pub root: PathBuf,
    /// The current file, workspace-relative and `/`-separated.
    pub current: Option<String>,
    /// Applied rules, in discovery order.
    pub applied: Vec<AppliedRule>,
    pub ledger: Vec<RuleLedgerEntry>,
    /// Canonical paths already applied, with the path they were applied as.
    included: Vec<(PathBuf, String)>,
}

impl Discovery {
    pub fn new(root: PathBuf, current: Option<String>) -> Self {
        Self {
            root,
            current,
            applied: Vec::new(),
            ledger: Vec::new(),
            included: Vec::new(),
        }
    }

    /// `file` relative to the root, `/`-separated.
    pub fn rel(&self, file: &Path) -> String {
        slash_path(file.strip_prefix(&self.root).unwrap_or(file))
    }

    /// Logs a rule file that is not included.
    pub fn skip(&mut self, path: &str, format: RuleFormat, reason: impl Into<String>) {
        self.ledger.push(RuleLedgerEntry {
            path: path.to_string(),
            format,
            included: false,
            reason: reason.into(),
        });
    }

    /// Reads a rule file whole, or logs why it cannot be used.
    pub fn read(&mut self, file: &Path, format: RuleFormat) -> Option<String> {
        let path = self.rel(file);
        // A rule file symlinked out of the workspace is not read: the composer may run as a
        // server, and a rule must not become a way to quote arbitrary files.
        if file
            .canonicalize()
            .is_ok_and(|canonical| !canonical.starts_with(&self.root))
        {
            self.skip(&path, format, "links outside the workspace root, refused");
            return None;
        }
        match std::fs::metadata(file) {
            Ok(meta) if meta.len() > MAX_RULE_BYTES => {
                self.skip(
                    &path,
                    format,
                    format!(
                        "larger than {MAX_RULE_BYTES} bytes: not included (a rule is never cut)"
                    ),
                );
                return None;
            }
            Err(err) => {
                self.skip(&path, format, format!("cannot read: {err}"));
                return None;
            }
            Ok(_) => {}
        }
        match std::fs::read(file).map(String::from_utf8) {
            Ok(Ok(text)) => Some(text),
            Ok(Err(_)) => {
                self.skip(&path, format, "not valid UTF-8");
                None
            }
            Err(err) => {
                self.skip(&path, format, format!("cannot read: {err}"));
                None
            }
        }
    }

    /// Reads a rule file of a format with frontmatter, or logs why it cannot be used.
    pub fn read_fronted(&mut self, file: &Path, format: RuleFormat) -> Option<FrontedRule> {
        let text = self.read(file, format)?;
        let (front, body) = LenientFrontmatter::split(&text);
        let note = if front.line_read() {
            " (frontmatter is not strict YAML: read line by line)".to_string()
        } else {
            String::new()
        };
        Some(FrontedRule {
            body: body.to_string(),
            front,
            note,
        })
    }

    /// Applies a rule unless its body is empty or the same file was already applied.
    pub fn include(
        &mut self,
        file: &Path,
        format: RuleFormat,
        always_on: bool,
        text: &str,
        reason: String,
    ) -> bool {
        let path = self.rel(file);
        if text.trim().is_empty() {
            self.skip(&path, format, "empty rule: nothing to include");
            return false;
        }
        let canonical = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
        if let Some((_, first)) = self.included.iter().find(|(c, _)| *c == canonical) {
            let reason = format!("already included as {first}");
            self.skip(&path, format, reason);
            return false;
        }
        self.included.push((canonical, path.clone()));
        self.ledger.push(RuleLedgerEntry {
            path: path.clone(),
            format,
            included: true,
            reason,
        });
        self.applied.push(AppliedRule {
            path,
            format,
            always_on,
            text: text.to_string(),
        });
        true
    }

    /// Applies `file` as an always-on rule when it exists.
    pub fn always_file(&mut self, file: &Path, format: RuleFormat, what: &str) {
        if !file.is_file() {
            return;
        }
        if let Some(text) = self.read(file, format) {
            self.include(file, format, true, &text, format!("{what}: always applied"));
        }
    }

    /// Includes a rule whose applicability is a list of globs against the current file.
    /// `key` names the frontmatter field in the ledger; `note` is appended to every reason.
    pub fn by_globs(
        &mut self,
        file: &Path,
        format: RuleFormat,
        body: &str,
        key: &str,
        globs: &[String],
        note: &str,
    ) {
        let path = self.rel(file);
        let shown = globs
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let matcher = match GlobMatcher::new(globs) {
            Ok(matcher) => matcher,
            Err(reason) => return self.skip(&path, format, format!("{reason}{note}")),
        };
        let Some(current) = self.current.clone() else {
            return self.skip(
                &path,
                format,
                format!("{key} {shown} need a current file; none given{note}"),
            );
        };
        match matcher.first_match(&current) {
            Some(glob) => {
                let reason = format!("{key} `{glob}` matches {current}{note}");
                self.include(file, format, false, body, reason);
            }
            None => self.skip(
                &path,
                format,
                format!("{key} {shown} do not match {current}{note}"),
            ),
        }
    }
}

/// Lexical normalization (`.` dropped, `..` pops), for paths that may not exist.
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with `/` separators.
pub(super) fn slash_path(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The files of `dir` whose names end with `suffix`, sorted by name.
pub(super) fn sorted_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
        })
        .collect();
    files.sort();
    files
}

/// [`sorted_files`] in `dir` and its subfolders (symlinked folders are not followed), sorted
/// by path.
pub(super) fn sorted_files_recursive(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(path),
                _ if path.is_file()
                    && path
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().ends_with(suffix)) =>
                {
                    files.push(path)
                }
                _ => {}
            }
        }
    }
    files.sort();
    files
}
