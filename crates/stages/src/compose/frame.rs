//! The composer's last step: render the stage outputs through registry templates, on one
//! snapshot, and find the cacheable prefix in what they rendered.
//!
//! The system prompt is the registry prompt `compose_system` (or the one a caller names) and the
//! layout is the registry prompt `compose_frame`, both ordinary templates that a user folder can
//! shadow. The layout exists only in that template: Rust knows the blocks' contents (the stage
//! outputs) and that blocks are separated by [`BLOCK_SEPARATOR`], nothing of their headings or
//! order.
//!
//! # Block order versus prompt caching
//! The shipped layout fixes the order `USER: <query>`, system, tools, rules, docs, and also wants
//! the prefix (system + tools + always-on rules) byte-identical across calls so provider prompt
//! caches hit. Provider caches key on the *start* of the request, and the query changes every
//! call, so the two cannot both hold for one flat string. The composer keeps that order in
//! [`ComposedPrompt::text`] (what a single-message consumer sends) and makes the cacheable part
//! a contiguous, query-independent run inside it: inside the rules block always-on rules come
//! first and rules that depend on the current file after them, so system + tools + always-on
//! rules form one run that depends on neither the query nor the current file.
//! [`ComposedPrompt::prefix`] is that run, at [`ComposedPrompt::prefix_start`] in the text; a
//! caller that wants cache hits sends `prefix` first (as the system message, or as the first
//! content block with the cache breakpoint at its end) and [`ComposedPrompt::remainder`] (the
//! query's block followed by the file-dependent rules and the docs) after it. Nothing is lost or
//! reordered inside any block by doing so. The interpretation priority the template states at
//! the top of the system block is part of the prefix too.
//!
//! # Finding the prefix
//! The frame is rendered twice more, on the query- and file-independent stage outputs alone
//! ([`ComposeParts::cacheable`]): once with a mark in place of the query, where the blocks
//! after the query's block (or before it, when that block comes last) are the prefix; and once
//! with the query, which in the shipped layout is the head of the text and ends with the prefix,
//! giving its offset (otherwise the prefix is searched for in the text). The prefix must hold
//! the system prompt, the tools and the always-on rules, and ends with the last of them. A frame
//! that shadows `compose_frame` and keeps them in one run, before or after the query's block,
//! keeps prompt caches hitting; one that does not gets a warning and no prefix instead of a
//! wrong offset.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::docs::DocLedgerEntry;
use super::error::ComposeError;
use super::parts::{ComposeParts, ComposeRequest, gather_parts};
use super::rules::RuleLedgerEntry;
use super::tools::ToolIssue;
use promptd_base::tokens::count_tokens;
use promptd_core::library::Snapshot;
use promptd_core::render::Clock;

/// Registry name of the default system prompt.
pub const DEFAULT_SYSTEM_PROMPT: &str = "compose_system";
/// Registry name of the frame template.
pub const FRAME_TEMPLATE: &str = "compose_frame";

/// Separator between blocks of the composed text.
pub const BLOCK_SEPARATOR: &str = "\n\n---\n\n";

/// Stands in for the query when the frame is rendered to find the prefix: a private-use
/// character run that no template literal holds.
const QUERY_MARK: &str = "\u{E000}promptd:query\u{E000}";

/// Tokens of each block's content (query, system prompt, tools, rules, docs; 0 if empty) and of the whole text (headings and separators count in `total` only).
#[derive(Serialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BlockTokens {
    pub user: usize,
    pub system: usize,
    pub tools: usize,
    pub rules: usize,
    pub docs: usize,
    pub total: usize,
}

/// Why each rule, tool file and doc chunk is in the prompt or not.
#[derive(Serialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ComposeLedger {
    /// Every rule file found, included or not, in discovery order.
    pub rules: Vec<RuleLedgerEntry>,
    /// Tool definition files that were skipped.
    pub tool_issues: Vec<ToolIssue>,
    /// Doc chunks in the docs block, best first.
    pub docs_included: Vec<DocLedgerEntry>,
    /// Doc chunks left out to fit the budget, best first.
    pub docs_dropped: Vec<DocLedgerEntry>,
}

/// The final prompt. Also the structured result of the MCP tool `compose_prompt`, whose
/// `outputSchema` is generated from this type.
#[derive(Serialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ComposedPrompt {
    /// The whole prompt: USER, system, tools, rules, docs.
    pub text: String,
    /// System + tools + always-on rules: byte-identical across queries and current files.
    pub prefix: String,
    /// Byte offset of `prefix` inside `text`.
    pub prefix_start: usize,
    /// Tokens (`cl100k_base`) of `prefix`.
    pub prefix_tokens: usize,
    pub tokens_per_block: BlockTokens,
    pub ledger: ComposeLedger,
    /// Problems that did not stop composing (undefined template variables, a frame that breaks
    /// the cacheable prefix, docs left out).
    pub warnings: Vec<String>,
    /// Possible secrets (redacted) in docs that were left out for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<promptd_guard::SecretFinding>,
}

impl ComposedPrompt {
    /// What a cache-aware caller sends after [`Self::prefix`]: the `USER:` block, then whatever
    /// followed the prefix in `text` (file-dependent rules, docs).
    pub fn remainder(&self) -> String {
        let user = &self.text[..self.prefix_start];
        let user = user.strip_suffix(BLOCK_SEPARATOR).unwrap_or(user);
        let after = &self.text[self.prefix_start + self.prefix.len()..];
        format!("{user}{after}")
    }
}

/// Runs the stages and renders the final prompt through the templates of `snapshot` (the
/// system prompt and the frame both come from it, so a reload cannot mix versions).
pub fn compose_prompt(
    snapshot: &Snapshot,
    clock: &Clock,
    request: &ComposeRequest,
    system: Option<&str>,
) -> Result<ComposedPrompt, ComposeError> {
    let parts = gather_parts(request)?;
    let system_name = system.unwrap_or(DEFAULT_SYSTEM_PROMPT);
    let system_prompt = snapshot
        .render(system_name, &Map::new(), clock)
        .map_err(|e| ComposeError::Template(e.to_string()))?;
    let system_text = system_prompt.text.as_str();

    let text = Frame::new(snapshot, clock, system_text, &parts)?.render(&request.query)?;
    let mut warnings = system_prompt.warnings.clone();
    let (prefix_start, prefix) =
        match find_prefix(snapshot, clock, request, system_text, &parts, &text)? {
            Some(found) => found,
            None => {
                warnings.push(format!(
                "the `{FRAME_TEMPLATE}` template does not keep system + tools + always-on rules \
                 contiguous: no cacheable prefix is reported"
            ));
                (0, String::new())
            }
        };
    Ok(ComposedPrompt {
        prefix_tokens: count_tokens(&prefix),
        tokens_per_block: BlockTokens {
            user: count_tokens(&request.query),
            system: count_tokens(system_text),
            tools: parts.tokens.tools,
            rules: parts.tokens.rules,
            docs: parts.tokens.docs,
            total: count_tokens(&text),
        },
        prefix,
        prefix_start,
        text,
        ledger: ComposeLedger {
            rules: parts.rules.ledger,
            tool_issues: parts.tool_issues,
            docs_included: parts.docs_included,
            docs_dropped: parts.docs_dropped,
        },
        warnings,
        findings: Vec::new(),
    })
}

/// The frame template with its variables, but for the query.
struct Frame<'a> {
    snapshot: &'a Snapshot,
    clock: &'a Clock,
    args: Map<String, Value>,
}

impl<'a> Frame<'a> {
    fn new(
        snapshot: &'a Snapshot,
        clock: &'a Clock,
        system_prompt: &str,
        parts: &ComposeParts,
    ) -> Result<Self, ComposeError> {
        let mut args = Map::new();
        args.insert(
            "system_prompt".into(),
            Value::String(system_prompt.to_string()),
        );
        args.insert(
            "stages".into(),
            serde_json::to_value(parts).map_err(|e| ComposeError::Template(e.to_string()))?,
        );
        Ok(Self {
            snapshot,
            clock,
            args,
        })
    }

    /// The frame rendered for `query`. Trailing whitespace is template layout, not content.
    fn render(&mut self, query: &str) -> Result<String, ComposeError> {
        self.args
            .insert("query".into(), Value::String(query.to_string()));
        let frame = self
            .snapshot
            .render(FRAME_TEMPLATE, &self.args, self.clock)
            .map_err(|e| ComposeError::Template(e.to_string()))?;
        Ok(frame.text.trim_end().to_string())
    }
}

/// Finds the cacheable prefix in `text` (see the module docs): its byte offset and text, or
/// `None` when the frame does not keep it in one run.
fn find_prefix(
    snapshot: &Snapshot,
    clock: &Clock,
    request: &ComposeRequest,
    system_prompt: &str,
    parts: &ComposeParts,
    text: &str,
) -> Result<Option<(usize, String)>, ComposeError> {
    let mut probe = Frame::new(snapshot, clock, system_prompt, &parts.cacheable())?;
    let marked = probe.render(QUERY_MARK)?;
    let Some(prefix) = query_free_run(&marked) else {
        return Ok(None);
    };
    // In prefix order; the prefix ends with the last of them that is not empty (a heading the
    // frame writes after it, such as an empty block's, is not part of the run in the text).
    let parts = [
        system_prompt.trim(),
        parts.tools_block.trim(),
        parts.rules_always_on_block.trim(),
    ];
    if prefix.is_empty() || !parts.iter().all(|part| prefix.contains(part)) {
        return Ok(None);
    }
    let prefix = match parts.iter().rev().find(|part| !part.is_empty()) {
        Some(last) => &prefix[..prefix.rfind(last).unwrap_or(0) + last.len()],
        None => prefix,
    };
    let head = probe.render(&request.query)?;
    let start = if text.starts_with(&head) && head.ends_with(prefix) {
        Some(head.len() - prefix.len())
    } else {
        text.find(prefix)
    };
    Ok(start.map(|start| (start, prefix.to_string())))
}

/// The part of a frame rendered with [`QUERY_MARK`] that holds no query: the blocks after the
/// query's block, or the blocks before it when it is the last block. `None` when the query
/// appears more than once or its block is the only one.
fn query_free_run(marked: &str) -> Option<&str> {
    let mut marks = marked.match_indices(QUERY_MARK);
    let Some((at, _)) = marks.next() else {
        return Some(marked);
    };
    if marks.next().is_some() {
        return None;
    }
    let after = &marked[at + QUERY_MARK.len()..];
    if let Some(end) = after.find(BLOCK_SEPARATOR) {
        return Some(&after[end + BLOCK_SEPARATOR.len()..]);
    }
    let before = &marked[..at];
    before.rfind(BLOCK_SEPARATOR).map(|start| &before[..start])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_free_run_is_after_the_query_block_or_before_a_last_one() {
        let m = QUERY_MARK;
        let first = format!("USER: {m}{BLOCK_SEPARATOR}## System{BLOCK_SEPARATOR}## Tools");
        assert_eq!(
            query_free_run(&first),
            Some(format!("## System{BLOCK_SEPARATOR}## Tools").as_str())
        );
        let last = format!("## System{BLOCK_SEPARATOR}## Tools{BLOCK_SEPARATOR}Q: {m}\nThanks");
        assert_eq!(
            query_free_run(&last),
            Some(format!("## System{BLOCK_SEPARATOR}## Tools").as_str())
        );
        assert_eq!(query_free_run("## System"), Some("## System"));
        assert_eq!(query_free_run(&format!("USER: {m}")), None);
        assert_eq!(
            query_free_run(&format!("{m}{BLOCK_SEPARATOR}again {m}")),
            None
        );
    }
}
