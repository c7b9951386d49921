//! promptd: a prompt-template registry, renderer and MCP server.
//!
//! This package is the `promptd` binary's command line ([`cli`]). The library it drives lives in
//! the workspace's crates, re-exported here under the names the CLI, the tests and the benches
//! use: `promptd-base` (config, limits, workspaces, tokens, metrics), `promptd-core` (dialects,
//! registry, renderer, library and the `wit-get-prompts` contract), `promptd-guard`,
//! `promptd-rag`, `promptd-stages` (enhance, compose, the tool catalog, the LLM client),
//! `promptd-http`, `promptd-studio` and `promptd-mcp`. ARCHITECTURE.md draws the map.
//!
//! Design principle: *stages produce variables, templates render them*.

pub mod cli;

pub use promptd_base::{config, filesystem, limits, memory, metrics, panics, tokens, workspace};
pub use promptd_core::{
    compare, dialect, library, lint, prompt_tests, registry, render, versions, watch,
};
pub use promptd_guard as guard;
pub use promptd_http::{auth, streams};
pub use promptd_mcp as mcp;
pub use promptd_rag as rag;
pub use promptd_stages as stages;
pub use promptd_stages::{catalog, compose, enhance, llm};
pub use promptd_studio as studio;
pub use promptd_transport as transport;
