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
//! | `claude-md` / `claude-local-md` | the same three files in each folder between the root and the current file's folder (inclusive) | when a current file is given; see `claude` |
//! | `claude-import` | `@path` imports of any of those files | like their importer; see `claude` |
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
//! Each format's reader is its own module (`agents`, `claude`, `cursor`, `copilot`, `windsurf`),
//! which documents its format's details; rule frontmatter is read leniently
//! ([`promptd_core::registry::frontmatter::LenientFrontmatter`]) and globs are matched by `glob`.
//! `discovery` holds what they share: reading a rule file, applying it or logging why not. The
//! root's sources are one table (`SOURCES`), in discovery order.
//!
//! # Order
//! Discovery order is the table's order (root files, then `.mdc` and instruction folders sorted by
//! file name, then the files on the current file's path from the root down: the `AGENTS.md`
//! files, then each folder's `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`; every Claude
//! memory file followed by its imports depth-first). Applied rules are then stably split:
//! always-on rules first, then the ones that depend on the current file, so the always-on head of
//! the rules block is byte-identical across queries and files (see the prompt-caching note in
//! `compose`). A file reached twice (e.g. `CLAUDE.md` importing `@AGENTS.md`) is included once.

use std::path::{Component, Path};

use serde::Serialize;

use super::error::ComposeError;
use discovery::{Discovery, normalize, slash_path, sorted_files};

pub use claude::MAX_IMPORT_DEPTH;
pub use discovery::{AppliedRule, MAX_RULE_BYTES, RuleFormat, RuleLedgerEntry};

mod agents;
mod claude;
mod copilot;
mod cursor;
mod discovery;
mod glob;
mod windsurf;

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

/// Where the workspace root's rules are looked for, in discovery order.
enum Source {
    /// One file, always on when it exists; `what` starts its ledger reason.
    Always {
        path: &'static str,
        format: RuleFormat,
        what: &'static str,
    },
    /// The files of a folder whose names end with `suffix`, sorted by name, each read by `read`.
    Folder {
        dir: &'static str,
        suffix: &'static str,
        read: fn(&mut Discovery, &Path),
    },
    /// A reader given the root (Claude Code's memory files and modular rules).
    Root(fn(&mut Discovery, &Path)),
}

/// The root's rule sources; the files on the current file's path follow them.
const SOURCES: &[Source] = &[
    Source::Always {
        path: "AGENTS.md",
        format: RuleFormat::AgentsMd,
        what: "AGENTS.md at the workspace root",
    },
    Source::Root(claude::root),
    Source::Always {
        path: ".cursorrules",
        format: RuleFormat::Cursorrules,
        what: "legacy .cursorrules",
    },
    Source::Always {
        path: ".cursor/rules",
        format: RuleFormat::CursorLegacy,
        what: "legacy single-file .cursor/rules",
    },
    Source::Folder {
        dir: ".cursor/rules",
        suffix: ".mdc",
        read: cursor::mdc,
    },
    Source::Folder {
        dir: ".cursor/rules.d",
        suffix: ".mdc",
        read: cursor::mdc,
    },
    Source::Always {
        path: ".github/copilot-instructions.md",
        format: RuleFormat::CopilotInstructions,
        what: "repository-wide Copilot instructions",
    },
    Source::Folder {
        dir: ".github/instructions",
        suffix: ".instructions.md",
        read: copilot::scoped,
    },
    Source::Always {
        path: ".windsurfrules",
        format: RuleFormat::Windsurfrules,
        what: "legacy .windsurfrules",
    },
    Source::Folder {
        dir: ".windsurf/rules",
        suffix: ".md",
        read: windsurf::rule,
    },
];

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
    let mut discovery = Discovery::new(root.clone(), current.clone());
    for source in SOURCES {
        match source {
            Source::Always { path, format, what } => {
                discovery.always_file(&root.join(path), *format, what);
            }
            Source::Folder { dir, suffix, read } => {
                for file in sorted_files(&root.join(dir), suffix) {
                    read(&mut discovery, &file);
                }
            }
            Source::Root(read) => read(&mut discovery, &root),
        }
    }
    if let Some(current) = &current {
        on_current_path(&mut discovery, current);
    }
    let (mut always, conditional): (Vec<_>, Vec<_>) =
        discovery.applied.into_iter().partition(|r| r.always_on);
    always.extend(conditional);
    Ok(RulesReport {
        current_file: current,
        applied: always,
        ledger: discovery.ledger,
    })
}

/// `AGENTS.md` (nearest wins) and Claude Code's memory files (all) in the folders between the
/// root (exclusive) and the current file (its folder inclusive), root side first.
fn on_current_path(discovery: &mut Discovery, current: &str) {
    let mut dirs = Vec::new();
    let mut dir = discovery.root.clone();
    let parent = Path::new(current).parent().unwrap_or(Path::new(""));
    for component in parent.components() {
        dir.push(component);
        dirs.push(dir.clone());
    }
    agents::nearest(discovery, current, &dirs);
    for dir in &dirs {
        claude::on_path(discovery, dir, current);
    }
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
