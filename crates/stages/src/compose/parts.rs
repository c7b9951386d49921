//! The composer's stages for one request: [`rules`](super::rules) (project rules discovered in
//! the workspace, applied whole), [`tools`](super::tools) (the MCP server's own tools plus
//! the tool definitions the server serves) and [`docs`](super::docs) (retrieved or
//! `--doc` chunks fitted into a token budget), gathered into [`ComposeParts`]: the variables
//! the `compose_frame` template renders.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::docs::{DocChunk, DocLedgerEntry, fit_docs};
use super::error::ComposeError;
use super::rules::{RulesReport, discover_rules};
use super::tools::{ToolDefinition, ToolIssue, offered_tools};
use crate::tools::ServedTools;
use promptd_base::tokens::count_tokens;

/// Default token budget of the docs block.
pub const DEFAULT_DOCS_BUDGET: usize = 2048;

/// Composer settings, carried under `"compose"` in `.ado-mcp-config.json`; CLI flags override.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct ComposeSettings {
    /// Token budget of the docs block.
    pub docs_budget: usize,
}

impl Default for ComposeSettings {
    fn default() -> Self {
        Self {
            docs_budget: DEFAULT_DOCS_BUDGET,
        }
    }
}

/// What an IDE extension or agent asks the composer for.
#[derive(Clone, Debug)]
pub struct ComposeRequest {
    /// The user's current request (rendered by the frame, not by the stages).
    pub query: String,
    /// Workspace root: rules are found under it.
    pub workspace_root: PathBuf,
    /// The file the user is in, absolute or relative to the workspace root.
    pub current_file: Option<PathBuf>,
    /// Chunks from the retrieval stage and/or whole `--doc` files ([`DocChunk::read`]).
    pub docs: Vec<DocChunk>,
    /// Token budget of the docs block ([`DEFAULT_DOCS_BUDGET`] by default).
    pub docs_budget: usize,
    /// The MCP server's own tools, listed before the tool definitions.
    pub server_tools: Vec<ToolDefinition>,
    /// The tool definitions the server serves ([`crate::Stages::served_tools`]).
    pub defined_tools: Arc<ServedTools>,
}

impl ComposeRequest {
    /// A request with no current file, no docs, no server tools and the default budget.
    pub fn new(query: impl Into<String>, workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            query: query.into(),
            workspace_root: workspace_root.into(),
            current_file: None,
            docs: Vec::new(),
            docs_budget: DEFAULT_DOCS_BUDGET,
            server_tools: Vec::new(),
            defined_tools: Arc::default(),
        }
    }
}

/// Tokens (`cl100k_base`) of each stage block, as produced by the stages.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PartTokens {
    pub tools: usize,
    pub rules: usize,
    pub docs: usize,
}

/// Everything the frame template needs, as variables. Blocks are empty strings when there is
/// nothing to show, so the template omits them with `{% if … %}`.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ComposeParts {
    /// Applied rules, always-on ones first, each preceded by `### Rule: path (…)`.
    pub rules_block: String,
    /// The always-on head of `rules_block` (a prefix of it): the part that belongs to the
    /// cacheable prefix.
    pub rules_always_on_block: String,
    /// One `### Tool: name` section per valid tool (server tools first).
    pub tools_block: String,
    /// Docs chunks that fit the budget, best first, each preceded by `### Source: path:a-b`.
    pub docs_block: String,
    /// Applied rules and the ledger of every rule file found.
    pub rules: RulesReport,
    /// Valid tools, in block order.
    pub tools: Vec<ToolDefinition>,
    /// Tool definition files that were skipped, with their path and reason.
    pub tool_issues: Vec<ToolIssue>,
    pub docs_included: Vec<DocLedgerEntry>,
    pub docs_dropped: Vec<DocLedgerEntry>,
    pub docs_budget: usize,
    pub tokens: PartTokens,
}

impl ComposeParts {
    /// The outputs that depend on neither the query nor the current file: the same tools, the
    /// always-on rules as the whole rules block, no docs, and no ledger of rules (which records
    /// decisions about the current file). What the frame renders from these, without the
    /// query's block, is the cacheable prefix.
    pub fn cacheable(&self) -> ComposeParts {
        ComposeParts {
            rules_block: self.rules_always_on_block.clone(),
            rules_always_on_block: self.rules_always_on_block.clone(),
            tools_block: self.tools_block.clone(),
            docs_block: String::new(),
            rules: RulesReport {
                current_file: None,
                applied: (self.rules.applied.iter())
                    .filter(|r| r.always_on)
                    .cloned()
                    .collect(),
                ledger: Vec::new(),
            },
            tools: self.tools.clone(),
            tool_issues: self.tool_issues.clone(),
            docs_included: Vec::new(),
            docs_dropped: Vec::new(),
            docs_budget: self.docs_budget,
            tokens: PartTokens {
                tools: self.tokens.tools,
                rules: count_tokens(&self.rules_always_on_block),
                docs: 0,
            },
        }
    }
}

/// Runs the rules, tools and docs stages for one request.
pub fn gather_parts(request: &ComposeRequest) -> Result<ComposeParts, ComposeError> {
    let rules = discover_rules(&request.workspace_root, request.current_file.as_deref())?;
    let tools = offered_tools(&request.server_tools, &request.defined_tools);
    let docs = fit_docs(&request.docs, request.docs_budget);
    let rules_block = rules.render_block();
    let rules_always_on_block = rules.render_always_on_block();
    debug_assert!(rules_block.starts_with(&rules_always_on_block));
    let tools_block = tools.render_block();
    Ok(ComposeParts {
        tokens: PartTokens {
            tools: count_tokens(&tools_block),
            rules: count_tokens(&rules_block),
            docs: docs.tokens,
        },
        rules_block,
        rules_always_on_block,
        tools_block,
        docs_block: docs.text,
        rules,
        tools: tools.tools,
        tool_issues: tools.issues,
        docs_included: docs.included,
        docs_dropped: docs.dropped,
        docs_budget: request.docs_budget,
    })
}
