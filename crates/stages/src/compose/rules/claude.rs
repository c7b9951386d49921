//! Claude Code's memory files, its modular rules and their `@path` imports.
//!
//! # Memory files
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
//! # Modular rules
//! Every `.md` file under the root's `.claude/rules/`, in nested folders too, sorted by path,
//! loaded with `.claude/CLAUDE.md`'s priority (before the personal file). A rule without `paths`
//! frontmatter is always on; one with `paths` (a YAML list of globs, or one comma-separated
//! string, both seen in the wild) applies when a glob matches the current file.
//!
//! # Imports
//! `@path` tokens (at the start of a text run or after whitespace) in a `CLAUDE.md`, a
//! `CLAUDE.local.md` or an imported file import that file, resolved relative to the importing
//! file; `@` inside code spans and code blocks is not an import, as in Claude Code. Imports nest
//! at most [`MAX_IMPORT_DEPTH`] hops; a cycle is refused and logged with its chain; an import
//! resolving outside the workspace root (`~/…`, absolute paths elsewhere, `..` escapes, symlinks
//! out) is refused, since the composer may run as a server. A token that names no file (an
//! `@mention`) is logged as not found. The importing file keeps its `@path` text; each imported
//! file follows its importer, depth-first, as its own applied rule.

use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Parser, Tag, TagEnd, TextMergeStream};

use super::discovery::{Discovery, FrontedRule, RuleFormat, normalize, sorted_files_recursive};
use super::glob::globs;

/// Maximum nesting of `CLAUDE.md` `@path` imports.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// Why an `@path` import is not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ImportRefusal {
    #[error("outside the workspace root, refused")]
    Outside,
    #[error("no such file")]
    NotFound,
}

/// The root's memory files and modular rules, always on.
pub(super) fn root(discovery: &mut Discovery, root: &Path) {
    memory_files(discovery, root, None);
}

/// Memory files of one folder on the current file's path, applying to `current`.
pub(super) fn on_path(discovery: &mut Discovery, dir: &Path, current: &str) {
    memory_files(discovery, dir, Some(current));
}

/// Claude Code's memory files of one folder, in the order Claude Code loads them: the shared
/// `CLAUDE.md` and `.claude/CLAUDE.md` (at the root, then the `.claude/rules/` files), then
/// the personal `CLAUDE.local.md` (loaded last so it can refine them), each followed by its
/// imports. At the root (`current` is `None`) they are always on; in a folder on the path of
/// the current file they apply to that file.
fn memory_files(discovery: &mut Discovery, dir: &Path, current: Option<&str>) {
    for (name, format) in [
        ("CLAUDE.md", RuleFormat::ClaudeMd),
        (".claude/CLAUDE.md", RuleFormat::ClaudeMd),
        ("CLAUDE.local.md", RuleFormat::ClaudeLocalMd),
    ] {
        if format == RuleFormat::ClaudeLocalMd && current.is_none() {
            // Modular rules load with `.claude/CLAUDE.md`'s priority, before the personal file.
            modular_rules(discovery, dir);
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
        let always_on = current.is_none();
        with_imports(
            discovery,
            &file,
            format,
            always_on,
            reason,
            0,
            &mut Vec::new(),
        );
    }
}

/// The `.claude/rules/` files of `dir` (see the module docs).
fn modular_rules(discovery: &mut Discovery, dir: &Path) {
    let format = RuleFormat::ClaudeRule;
    for file in sorted_files_recursive(&dir.join(".claude/rules"), ".md") {
        let Some(FrontedRule { front, body, note }) = discovery.read_fronted(&file, format) else {
            continue;
        };
        let globs = globs(&front, "paths");
        if globs.is_empty() {
            let reason = format!("Claude Code rule without paths: always applied{note}");
            discovery.include(&file, format, true, &body, reason);
        } else {
            discovery.by_globs(&file, format, &body, "paths", &globs, &note);
        }
    }
}

/// Includes a memory file (or an imported file) then its imports, depth-first.
fn with_imports(
    discovery: &mut Discovery,
    file: &Path,
    format: RuleFormat,
    always_on: bool,
    reason: String,
    depth: usize,
    chain: &mut Vec<PathBuf>,
) {
    let Some(text) = discovery.read(file, format) else {
        return;
    };
    if !discovery.include(file, format, always_on, &text, reason) {
        return;
    }
    let importer = discovery.rel(file);
    let canonical = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    chain.push(canonical);
    let dir = file.parent().unwrap_or(&discovery.root).to_path_buf();
    for target in import_targets(&text) {
        let format = RuleFormat::ClaudeImport;
        let resolved = match resolve_import(&discovery.root, &dir, &target) {
            Ok(resolved) => resolved,
            Err(refusal) => {
                discovery.skip(
                    &target,
                    format,
                    format!("imported by {importer}: {refusal}"),
                );
                continue;
            }
        };
        let path = discovery.rel(&resolved);
        if let Some(at) = chain.iter().position(|c| *c == resolved) {
            let mut cycle: Vec<String> = chain[at..].iter().map(|c| discovery.rel(c)).collect();
            cycle.push(path.clone());
            discovery.skip(
                &path,
                format,
                format!(
                    "imported by {importer}: import cycle {} refused",
                    cycle.join(" -> ")
                ),
            );
        } else if depth + 1 > MAX_IMPORT_DEPTH {
            discovery.skip(
                &path,
                format,
                format!(
                    "imported by {importer} at depth {}: deeper than {MAX_IMPORT_DEPTH} hops, \
                     refused",
                    depth + 1
                ),
            );
        } else {
            let reason = format!("imported by {importer} (depth {})", depth + 1);
            with_imports(
                discovery,
                &resolved,
                format,
                always_on,
                reason,
                depth + 1,
                chain,
            );
        }
    }
    chain.pop();
}

/// Resolves an `@path` import made from a file in `dir` to a canonical file inside `root`.
fn resolve_import(root: &Path, dir: &Path, target: &str) -> Result<PathBuf, ImportRefusal> {
    if target.starts_with('~') {
        return Err(ImportRefusal::Outside);
    }
    // "see @docs/style.md." : retry without trailing sentence punctuation.
    let trimmed = target.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
    let mut outside = false;
    for candidate in [target, trimmed] {
        let full = normalize(&dir.join(candidate));
        if !full.starts_with(root) {
            outside = true;
            continue;
        }
        if let Ok(canonical) = full.canonicalize() {
            if !canonical.starts_with(root) {
                outside = true;
            } else if canonical.is_file() {
                return Ok(canonical);
            }
        }
    }
    Err(if outside {
        ImportRefusal::Outside
    } else {
        ImportRefusal::NotFound
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_skip_code_spans_blocks_and_emails() {
        let text = "See @docs/a.md and `@not/span.md`, mail me@example.com.\n\n```\n@not/block.md\n```\n- @b.md\n";
        assert_eq!(import_targets(text), ["docs/a.md", "b.md"]);
    }
}
