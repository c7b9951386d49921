//! The prompt composer: one prompt for an IDE extension or agent, built from the workspace's
//! project rules, the tools the model may call, retrieved docs, a system prompt and the user's
//! query.
//!
//! Design principle: *stages produce variables, templates render them*. [`gather_parts`]
//! (module `parts`) runs the stages — [`rules`] (project rules discovered in the workspace,
//! applied whole), [`tools`] (the MCP server's own tools plus the tool definitions the server
//! serves) and [`docs`] (retrieved or `--doc` chunks fitted into a token
//! budget) — and returns [`ComposeParts`], a `Serialize` (camelCase) value. [`compose_prompt`]
//! (module `frame`) hands it to the registry template `compose_frame`, the only place the layout
//! is written, and finds the cacheable prefix in what the template rendered.

pub mod docs;
mod error;
mod frame;
mod parts;
pub mod rules;
pub mod tools;

pub use docs::{DocChunk, DocLedgerEntry, DocsBlock, fit_docs};
pub use error::ComposeError;
pub use frame::{
    BLOCK_SEPARATOR, BlockTokens, ComposeLedger, ComposedPrompt, DEFAULT_SYSTEM_PROMPT,
    FRAME_TEMPLATE, compose_prompt,
};
pub use parts::{
    ComposeParts, ComposeRequest, ComposeSettings, DEFAULT_DOCS_BUDGET, PartTokens, gather_parts,
};
pub use rules::{AppliedRule, RuleFormat, RuleLedgerEntry, RulesReport, discover_rules};
pub use tools::{ModelTools, ToolDefinition, ToolIssue, ToolOrigin, offered_tools};
