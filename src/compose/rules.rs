//! The rules stage: finds the project's agent rule files under a workspace root, decides which
//! apply to the current file, and packages the applied ones whole, with a ledger of every rule
//! file found and why it is in or out. Rules are data: their text is never interpreted, cut or
//! reordered; only the frontmatter of the formats that have one is read (and not repeated).
//!
//! # Formats and when they apply
//! | format | where | applies |
//! | --- | --- | --- |
//! | `agents-md` | `AGENTS.md` at the root | always |
//! | `agents-md` | nearest `AGENTS.md` above the current file | when a current file is given; farther ones on the path are listed as superseded |
//! | `claude-md` | `CLAUDE.md`, `.claude/CLAUDE.md` at the root | always |
//! | `claude-rule` | `.claude/rules/**/*.md` at the root (Claude Code's modular rules, searched recursively, sorted by path) | without `paths` frontmatter → always; with `paths` globs → when they match |
//! | `claude-local-md` | `CLAUDE.local.md` at the root (personal, git-ignored project memory) | always |
//! | `claude-md` / `claude-local-md` | the same three files in each folder between the root and the current file's folder (inclusive) | when a current file is given; see below |
//! | `claude-import` | `@path` imports of any of those files | like their importer; see below |
//! | `cursorrules` / `cursor-legacy` | `.cursorrules`, `.cursor/rules` as a single file | always |
//! | `cursor-mdc` | `.cursor/rules/*.mdc`, `.cursor/rules.d/*.mdc` | `alwaysApply: true` → always; else `globs` → when they match; *agent-requested* (description only) and *manual* (nothing) are listed, not included |
//! | `copilot-instructions` | `.github/copilot-instructions.md` | always |
//! | `copilot-scoped` | `.github/instructions/*.instructions.md` | when `applyTo` matches; without `applyTo` it is manual: listed, not included |
//! | `windsurfrules` | `.windsurfrules` at the root (Windsurf's legacy single file, no frontmatter) | always |
//! | `windsurf-rule` | `.windsurf/rules/*.md` | `trigger: always_on` → always; `glob` → when `globs` match; `model_decision` and `manual` (and a missing trigger) are listed, not included |
//!
//! Agent-requested / model-decision / manual rules depend on a model's choice or a user's
//! `@`-mention, which the composer cannot see, so they are never included; the ledger says so.
//!
//! # Cursor's quirks
//! Cursor's own files are not strict YAML: `globs: *.ts,src/**/*.tsx` (unquoted, which YAML reads
//! as an alias), comma-separated globs, quoted globs, `alwaysApply: "true"` as a string, globs as
//! a YAML list or a bare string. Frontmatter is parsed as YAML first; when that fails it is read
//! line by line (`key: value` and `- item` lines), as Cursor itself does, and the ledger says so.
//! Every glob value is split on commas outside `{…}` braces and stripped of quotes.
//!
//! # Glob semantics
//! Globs match the current file's path relative to the workspace root, with `/` separators
//! (`globset`, `*` does not cross `/`). A pattern without `/` matches the file name at any depth
//! (`*.ts` ≡ `**/*.ts`), as in `.gitignore` and as Cursor users expect; a leading `./` or `/` is
//! dropped.
//!
//! # Claude Code's memory files
//! Claude Code reads, in each folder, the shared `CLAUDE.md` and `.claude/CLAUDE.md` and then the
//! personal `CLAUDE.local.md` (git-ignored; loaded last so it can refine the shared ones). It
//! loads those of the folder it starts in at launch, and those of a subfolder when it works on a
//! file under it — all of them, from the outermost folder down, not just the nearest (unlike
//! `AGENTS.md`, where the nearest file wins). The composer treats the workspace root as the
//! folder Claude Code starts in and the current file as the file it works on: the root's files
//! are always on, and every folder from the root (exclusive) down to the current file's folder
//! (inclusive) contributes its files, in that order, as rules that apply to the current file.
//! Folders off that path are not searched (a subtree's memory is for files in that subtree), so
//! their files are not in the ledger. A personal `CLAUDE.local.md` is read like any other file
//! on disk: the composer runs for the developer whose workspace it is.
//!
//! # CLAUDE.md imports
//! `@path` tokens (at the start of a text run or after whitespace) in a `CLAUDE.md`, a
//! `CLAUDE.local.md` or an imported file import that file, resolved relative to the importing
//! file; `@` inside code spans and code blocks is not an import, as in Claude Code. Imports nest
//! at most 5 hops; a cycle is refused and logged with its chain; an import resolving outside the
//! workspace root (`~/…`, absolute paths elsewhere, `..` escapes, symlinks out) is refused, since
//! the composer may run as a server. A token that names no file (an `@mention`) is logged as not
//! found. The importing file keeps its `@path` text; each imported file follows its importer as
//! its own applied rule.
//!
//! # Order
//! Discovery order is the table's order (root files, then `.mdc` and instruction folders sorted by
//! file name, then the files on the current file's path from the root down: the `AGENTS.md`
//! files, then each folder's `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`; every Claude
//! memory file followed by its imports depth-first). Applied rules are then stably split:
//! always-on rules first, then the ones that depend on the current file, so the always-on head of
//! the rules block is byte-identical across queries and files (see the prompt-caching note in
//! `compose`). A file reached twice (e.g. `CLAUDE.md` importing `@AGENTS.md`) is included once.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSetBuilder};
use pulldown_cmark::{Event, Parser, Tag, TagEnd, TextMergeStream};
use schemars::JsonSchema;
use serde::Serialize;

use super::ComposeError;
use crate::registry::frontmatter::{LenientFrontmatter as Frontmatter, unquote};

/// Rule files larger than this are listed but not included (a rule is never cut).
pub const MAX_RULE_BYTES: u64 = 1024 * 1024;

/// Maximum nesting of `CLAUDE.md` `@path` imports.
pub const MAX_IMPORT_DEPTH: usize = 5;

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

/// The rules stage's output.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RulesReport {
    /// The current file, workspace-relative, when one was given.
    pub current_file: Option<String>,
    /// Always-on rules first, then file-dependent ones, each group in discovery order.
    pub applied: Vec<AppliedRule>,
    /// Discovery order.
    pub ledger: Vec<RuleLedgerEntry>,
}

impl RulesReport {
    /// All applied rules, each under a `### Rule:` header, separated by a blank line.
    pub fn render_block(&self) -> String {
        self.render(|_| true)
    }

    /// The always-on rules only: a prefix of [`Self::render_block`].
    pub fn render_always_on_block(&self) -> String {
        self.render(|rule| rule.always_on)
    }

    fn render(&self, keep: impl Fn(&AppliedRule) -> bool) -> String {
        let mut block = String::new();
        for rule in self.applied.iter().filter(|r| keep(r)) {
            if !block.is_empty() {
                block.push('\n');
            }
            let scope = match (&self.current_file, rule.always_on) {
                (Some(file), false) => format!("applies to {file}"),
                _ => "always on".to_string(),
            };
            block.push_str(&format!(
                "### Rule: {} ({}, {scope})\n",
                rule.path,
                rule.format.as_str()
            ));
            block.push_str(&rule.text);
            if !rule.text.ends_with('\n') {
                block.push('\n');
            }
        }
        block
    }
}

/// Finds the rule files under `workspace_root` and applies them to `current_file` (absolute or
/// workspace-relative; it need not exist yet).
pub fn discover_rules(
    workspace_root: &Path,
    current_file: Option<&Path>,
) -> Result<RulesReport, ComposeError> {
    let root = workspace_root
        .canonicalize()
        .map_err(|source| ComposeError::WorkspaceRoot {
            path: workspace_root.to_path_buf(),
            source,
        })?;
    if !root.is_dir() {
        return Err(ComposeError::WorkspaceRootNotDir(
            workspace_root.to_path_buf(),
        ));
    }
    let current = current_file
        .map(|file| relative_current_file(&root, workspace_root, file))
        .transpose()?;
    let mut discovery = Discovery {
        root,
        current,
        applied: Vec::new(),
        ledger: Vec::new(),
        included: Vec::new(),
    };
    discovery.run();
    let Discovery {
        current,
        applied,
        ledger,
        ..
    } = discovery;
    let (mut always, conditional): (Vec<_>, Vec<_>) =
        applied.into_iter().partition(|r| r.always_on);
    always.extend(conditional);
    Ok(RulesReport {
        current_file: current,
        applied: always,
        ledger,
    })
}

fn relative_current_file(
    root: &Path,
    given_root: &Path,
    file: &Path,
) -> Result<String, ComposeError> {
    let outside = || ComposeError::CurrentFileOutsideRoot {
        file: file.to_path_buf(),
        root: given_root.to_path_buf(),
    };
    let relative = if file.is_absolute() {
        let resolved = file.canonicalize().unwrap_or_else(|_| normalize(file));
        resolved
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .or_else(|_| file.strip_prefix(given_root).map(Path::to_path_buf))
            .map_err(|_| outside())?
    } else {
        file.to_path_buf()
    };
    let normalized = normalize(&relative);
    if normalized
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(outside());
    }
    Ok(slash_path(&normalized))
}

/// Lexical normalization (`.` dropped, `..` pops), for paths that may not exist.
fn normalize(path: &Path) -> PathBuf {
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

fn slash_path(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

struct Discovery {
    root: PathBuf,
    current: Option<String>,
    applied: Vec<AppliedRule>,
    ledger: Vec<RuleLedgerEntry>,
    /// Canonical paths already applied, with the path they were applied as.
    included: Vec<(PathBuf, String)>,
}

impl Discovery {
    fn run(&mut self) {
        let root = self.root.clone();
        self.always_file(
            &root.join("AGENTS.md"),
            RuleFormat::AgentsMd,
            "AGENTS.md at the workspace root",
        );
        self.claude_dir(&root, None);
        self.always_file(
            &root.join(".cursorrules"),
            RuleFormat::Cursorrules,
            "legacy .cursorrules",
        );
        self.always_file(
            &root.join(".cursor/rules"),
            RuleFormat::CursorLegacy,
            "legacy single-file .cursor/rules",
        );
        for dir in [".cursor/rules", ".cursor/rules.d"] {
            for file in sorted_files(&root.join(dir), ".mdc") {
                self.cursor_mdc(&file);
            }
        }
        self.always_file(
            &root.join(".github/copilot-instructions.md"),
            RuleFormat::CopilotInstructions,
            "repository-wide Copilot instructions",
        );
        for file in sorted_files(&root.join(".github/instructions"), ".instructions.md") {
            self.copilot_scoped(&file);
        }
        self.always_file(
            &root.join(".windsurfrules"),
            RuleFormat::Windsurfrules,
            "legacy .windsurfrules",
        );
        for file in sorted_files(&root.join(".windsurf/rules"), ".md") {
            self.windsurf(&file);
        }
        self.on_current_path();
    }

    fn rel(&self, file: &Path) -> String {
        slash_path(file.strip_prefix(&self.root).unwrap_or(file))
    }

    fn skip(&mut self, path: &str, format: RuleFormat, reason: impl Into<String>) {
        self.ledger.push(RuleLedgerEntry {
            path: path.to_string(),
            format,
            included: false,
            reason: reason.into(),
        });
    }

    /// Reads a rule file whole, or logs why it cannot be used.
    fn read(&mut self, file: &Path, format: RuleFormat) -> Option<String> {
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

    /// Applies a rule unless its body is empty or the same file was already applied.
    fn include(
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

    fn always_file(&mut self, file: &Path, format: RuleFormat, what: &str) {
        if !file.is_file() {
            return;
        }
        if let Some(text) = self.read(file, format) {
            self.include(file, format, true, &text, format!("{what}: always applied"));
        }
    }

    /// Includes a rule whose applicability is a list of globs against the current file.
    fn by_globs(
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

    fn cursor_mdc(&mut self, file: &Path) {
        let Some(text) = self.read(file, RuleFormat::CursorMdc) else {
            return;
        };
        let (front, body) = Frontmatter::split(&text);
        let note = note(&front);
        let globs = globs(&front, "globs");
        if front.flag("alwaysApply") {
            self.include(
                file,
                RuleFormat::CursorMdc,
                true,
                body,
                format!("alwaysApply: true{note}"),
            );
        } else if !globs.is_empty() {
            self.by_globs(file, RuleFormat::CursorMdc, body, "globs", &globs, &note);
        } else if !front.text("description").is_empty() {
            let path = self.rel(file);
            self.skip(&path, RuleFormat::CursorMdc, format!(
                "agent-requested (description only): Cursor lets the model decide; listed, not included{note}"
            ));
        } else {
            let path = self.rel(file);
            self.skip(&path, RuleFormat::CursorMdc, format!(
                "manual (no alwaysApply, globs or description): applies only when @-mentioned; listed, not included{note}"
            ));
        }
    }

    fn copilot_scoped(&mut self, file: &Path) {
        let Some(text) = self.read(file, RuleFormat::CopilotScoped) else {
            return;
        };
        let (front, body) = Frontmatter::split(&text);
        let note = note(&front);
        let globs = globs(&front, "applyTo");
        if globs.is_empty() {
            let path = self.rel(file);
            self.skip(
                &path,
                RuleFormat::CopilotScoped,
                format!("no applyTo: attached manually only; listed, not included{note}"),
            );
        } else {
            self.by_globs(
                file,
                RuleFormat::CopilotScoped,
                body,
                "applyTo",
                &globs,
                &note,
            );
        }
    }

    fn windsurf(&mut self, file: &Path) {
        let Some(text) = self.read(file, RuleFormat::WindsurfRule) else {
            return;
        };
        let (front, body) = Frontmatter::split(&text);
        let note = note(&front);
        let path = self.rel(file);
        let format = RuleFormat::WindsurfRule;
        match front.text("trigger").as_str() {
            "always_on" => {
                self.include(file, format, true, body, format!("trigger: always_on{note}"));
            }
            "glob" => {
                let globs = globs(&front, "globs");
                if globs.is_empty() {
                    self.skip(&path, format, format!("trigger: glob without globs; listed, not included{note}"));
                } else {
                    self.by_globs(file, format, body, "globs", &globs, &note);
                }
            }
            "model_decision" => self.skip(&path, format, format!(
                "trigger: model_decision: Windsurf lets the model decide from the description; listed, not included{note}"
            )),
            "manual" => self.skip(&path, format, format!(
                "trigger: manual: applies only when @-mentioned; listed, not included{note}"
            )),
            "" => self.skip(&path, format, format!("no trigger: treated as manual; listed, not included{note}")),
            other => self.skip(&path, format, format!("unknown trigger `{other}`; listed, not included{note}")),
        }
    }

    /// `AGENTS.md` (nearest wins) and `CLAUDE.md` (all) in folders between the root and the
    /// current file, root side first.
    fn on_current_path(&mut self) {
        let Some(current) = self.current.clone() else {
            return;
        };
        let mut dirs = Vec::new();
        let mut dir = self.root.clone();
        let parent = Path::new(&current).parent().unwrap_or(Path::new(""));
        for component in parent.components() {
            dir.push(component);
            dirs.push(dir.clone());
        }
        let agents: Vec<PathBuf> = dirs
            .iter()
            .map(|d| d.join("AGENTS.md"))
            .filter(|f| f.is_file())
            .collect();
        if let Some((nearest, farther)) = agents.split_last() {
            let nearest_rel = self.rel(nearest);
            for file in farther {
                let path = self.rel(file);
                self.skip(
                    &path,
                    RuleFormat::AgentsMd,
                    format!(
                        "on the path of {current}, but the nearer {nearest_rel} takes precedence"
                    ),
                );
            }
            if let Some(text) = self.read(nearest, RuleFormat::AgentsMd) {
                self.include(
                    nearest,
                    RuleFormat::AgentsMd,
                    false,
                    &text,
                    format!("nearest AGENTS.md above {current}"),
                );
            }
        }
        for dir in &dirs {
            self.claude_dir(dir, Some(&current));
        }
    }

    /// Claude Code's memory files of one folder, in the order Claude Code loads them: the shared
    /// `CLAUDE.md` and `.claude/CLAUDE.md` (at the root, then the `.claude/rules/` files), then
    /// the personal `CLAUDE.local.md` (loaded last so it can refine them), each followed by its
    /// imports. At the root (`current` is `None`) they are always on; in a folder on the path of
    /// the current file they apply to that file.
    fn claude_dir(&mut self, dir: &Path, current: Option<&str>) {
        for (name, format) in [
            ("CLAUDE.md", RuleFormat::ClaudeMd),
            (".claude/CLAUDE.md", RuleFormat::ClaudeMd),
            ("CLAUDE.local.md", RuleFormat::ClaudeLocalMd),
        ] {
            if format == RuleFormat::ClaudeLocalMd && current.is_none() {
                // Modular rules load with `.claude/CLAUDE.md`'s priority, before the personal file.
                self.claude_rules(dir);
            }
            let file = dir.join(name);
            if !file.is_file() {
                continue;
            }
            let reason = match current {
                None if format == RuleFormat::ClaudeLocalMd => {
                    "CLAUDE.local.md at the workspace root (personal project memory, \
                     git-ignored): always applied"
                        .to_string()
                }
                None => format!("{name} at the workspace root: always applied"),
                Some(current) => format!("{name} in a folder on the path of {current}"),
            };
            self.claude_file(&file, format, current.is_none(), reason, 0, &mut Vec::new());
        }
    }

    /// Claude Code's modular project rules: every `.md` file under `.claude/rules/`, in nested
    /// folders too, sorted by path. A rule without `paths` frontmatter is always on; one with
    /// `paths` (a YAML list of globs, or one comma-separated string, both seen in the wild)
    /// applies when a glob matches the current file.
    fn claude_rules(&mut self, dir: &Path) {
        let format = RuleFormat::ClaudeRule;
        for file in sorted_files_recursive(&dir.join(".claude/rules"), ".md") {
            let Some(text) = self.read(&file, format) else {
                continue;
            };
            let (front, body) = Frontmatter::split(&text);
            let note = note(&front);
            let globs = globs(&front, "paths");
            if globs.is_empty() {
                let reason = format!("Claude Code rule without paths: always applied{note}");
                self.include(&file, format, true, body, reason);
            } else {
                self.by_globs(&file, format, body, "paths", &globs, &note);
            }
        }
    }

    /// Includes a `CLAUDE.md` (or an imported file) then its imports, depth-first.
    fn claude_file(
        &mut self,
        file: &Path,
        format: RuleFormat,
        always_on: bool,
        reason: String,
        depth: usize,
        chain: &mut Vec<PathBuf>,
    ) {
        let Some(text) = self.read(file, format) else {
            return;
        };
        if !self.include(file, format, always_on, &text, reason) {
            return;
        }
        let importer = self.rel(file);
        let canonical = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
        chain.push(canonical);
        let dir = file.parent().unwrap_or(&self.root).to_path_buf();
        for target in import_targets(&text) {
            let format = RuleFormat::ClaudeImport;
            let resolved = match self.resolve_import(&dir, &target) {
                Ok(resolved) => resolved,
                Err(reason) => {
                    self.skip(&target, format, format!("imported by {importer}: {reason}"));
                    continue;
                }
            };
            let path = self.rel(&resolved);
            if let Some(at) = chain.iter().position(|c| *c == resolved) {
                let mut cycle: Vec<String> = chain[at..].iter().map(|c| self.rel(c)).collect();
                cycle.push(path.clone());
                self.skip(
                    &path,
                    format,
                    format!(
                        "imported by {importer}: import cycle {} refused",
                        cycle.join(" -> ")
                    ),
                );
            } else if depth + 1 > MAX_IMPORT_DEPTH {
                self.skip(&path, format, format!(
                    "imported by {importer} at depth {}: deeper than {MAX_IMPORT_DEPTH} hops, refused",
                    depth + 1
                ));
            } else {
                let reason = format!("imported by {importer} (depth {})", depth + 1);
                self.claude_file(&resolved, format, always_on, reason, depth + 1, chain);
            }
        }
        chain.pop();
    }

    /// Resolves an `@path` import to a canonical file inside the workspace.
    fn resolve_import(&self, dir: &Path, target: &str) -> Result<PathBuf, String> {
        if target.starts_with('~') {
            return Err("outside the workspace root, refused".into());
        }
        // "see @docs/style.md." : retry without trailing sentence punctuation.
        let trimmed = target.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
        let mut outside = false;
        for candidate in [target, trimmed] {
            let full = normalize(&dir.join(candidate));
            if !full.starts_with(&self.root) {
                outside = true;
                continue;
            }
            if let Ok(canonical) = full.canonicalize() {
                if !canonical.starts_with(&self.root) {
                    outside = true;
                } else if canonical.is_file() {
                    return Ok(canonical);
                }
            }
        }
        Err(if outside {
            "outside the workspace root, refused".into()
        } else {
            "no such file".into()
        })
    }
}

/// `@path` import tokens of a Markdown text, skipping code spans and code blocks.
fn import_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code_block = false;
    for event in TextMergeStream::new(Parser::new(text)) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Text(run) if !in_code_block => {
                let mut previous = None;
                for (at, ch) in run.char_indices() {
                    if ch == '@' && previous.is_none_or(char::is_whitespace) {
                        let token: String = run[at + 1..]
                            .chars()
                            .take_while(|c| !c.is_whitespace())
                            .collect();
                        if !token.is_empty() {
                            targets.push(token);
                        }
                    }
                    previous = Some(ch);
                }
            }
            _ => {}
        }
    }
    targets
}

fn sorted_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
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
fn sorted_files_recursive(dir: &Path, suffix: &str) -> Vec<PathBuf> {
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

/// The current-file matcher built from a rule's globs.
struct GlobMatcher {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

impl GlobMatcher {
    fn new(patterns: &[String]) -> Result<Self, String> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let mut anchored = pattern
                .trim_start_matches("./")
                .trim_start_matches('/')
                .to_string();
            if !anchored.contains('/') {
                anchored = format!("**/{anchored}");
            }
            let glob = GlobBuilder::new(&anchored)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("invalid glob `{pattern}`: {}", e.kind()))?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| format!("invalid globs: {e}"))?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set,
        })
    }

    fn first_match(&self, path: &str) -> Option<&str> {
        self.set
            .matches(path)
            .first()
            .map(|&i| self.patterns[i].as_str())
    }
}

/// What a ledger reason adds for a rule whose frontmatter was read line by line.
fn note(front: &Frontmatter) -> String {
    if front.line_read() {
        " (frontmatter is not strict YAML: read line by line)".to_string()
    } else {
        String::new()
    }
}

/// The globs of frontmatter field `key`, split and unquoted; empty when absent.
fn globs(front: &Frontmatter, key: &str) -> Vec<String> {
    front
        .items(key)
        .into_iter()
        .flat_map(split_top_level_commas)
        .map(|glob| unquote(glob.trim()).trim().to_string())
        .filter(|glob| !glob.is_empty())
        .collect()
}

/// Splits on commas that are not inside `{…}` alternations (`src/**/*.{ts,tsx}` stays whole).
fn split_top_level_commas(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, ch) in text.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_star_globs_fall_back_to_the_line_reader() {
        let (front, body) = Frontmatter::split(
            "---\nglobs: *.ts,src/**/*.{ts,tsx}\nalwaysApply: false\n---\nBody\n",
        );
        assert!(front.line_read());
        assert_eq!(globs(&front, "globs"), ["*.ts", "src/**/*.{ts,tsx}"]);
        assert!(!front.flag("alwaysApply"));
        assert_eq!(body, "Body\n");
    }

    #[test]
    fn quoted_and_listed_globs_and_string_flags() {
        let (front, _) = Frontmatter::split(
            "---\nglobs:\n  - \"a/*.rs\"\n  - 'b/*.rs, c/*.rs'\nalwaysApply: \"true\"\n---\n",
        );
        assert!(!front.line_read());
        assert_eq!(globs(&front, "globs"), ["a/*.rs", "b/*.rs", "c/*.rs"]);
        assert!(front.flag("alwaysApply"));
    }

    #[test]
    fn imports_skip_code_spans_blocks_and_emails() {
        let text = "See @docs/a.md and `@not/span.md`, mail me@example.com.\n\n```\n@not/block.md\n```\n- @b.md\n";
        assert_eq!(import_targets(text), ["docs/a.md", "b.md"]);
    }

    #[test]
    fn bare_globs_match_at_any_depth_and_slashed_ones_from_the_root() {
        let matcher = GlobMatcher::new(&["*.ts".into(), "src/*.rs".into()]).unwrap();
        assert_eq!(matcher.first_match("web/app/x.ts"), Some("*.ts"));
        assert_eq!(matcher.first_match("src/main.rs"), Some("src/*.rs"));
        assert_eq!(matcher.first_match("src/deep/main.rs"), None);
    }
}
