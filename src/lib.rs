//! promptd: a prompt-template registry, renderer and MCP server.
//!
//! Prompts are Markdown files with YAML frontmatter. The [`registry`] loads them from ordered
//! roots (built-ins lowest, user folders shadowing by name), the [`render`] module fills them
//! with layered variables (computed < config < defaults < user arguments) and reports where
//! every value came from, and [`library`] is the single entry point the CLI and the MCP server
//! share, including the `wit-get-prompts` contract.
//!
//! Design principle: *stages produce variables, templates render them*. Higher-level features
//! (enhance, compose) are ordinary registry templates fed by stage outputs, so users can
//! override them by shadowing.

pub mod auth;
pub mod catalog;
pub mod cli;
pub mod compose;
pub mod config;
pub mod dialect;
pub mod enhance;
pub mod filesystem;
pub mod guard;
pub mod library;
pub mod limits;
pub mod lint;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod panics;
pub mod prompt_tests;
pub mod rag;
pub mod registry;
pub mod render;
pub mod stages;
pub mod streams;
pub mod studio;
pub mod tokens;
pub mod watch;
pub mod workspace;
