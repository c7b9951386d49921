//! The integration tests, linked into one binary: one link instead of two dozen, one process that
//! runs every test in one thread pool, and a fraction of the disk (each test binary carries all of
//! promptd's dependencies). Each module is a file beside this one, as its own test crate once was;
//! the helpers shared between them are in `support/`.
//!
//! `guard_scratch.rs` stays a binary of its own: it redirects the process-wide temp directory.

mod support;

mod check_fixtures;
mod cli;
mod clients_agents;
mod clients_inspector;
mod clients_matrix;
mod compat_collections;
mod compose_cli;
mod compose_frame;
mod compose_stages;
mod dialect_discovery;
mod dialect_features;
mod dialects;
mod enhance;
mod fuzz;
mod get_prompts;
mod guard_cli;
mod guard_corpus;
mod guard_coverage;
mod guard_gitleaks;
mod guard_redact;
mod guard_rules;
mod hostile_contract;
mod hostile_dialects;
mod hostile_folders;
mod hostile_guard;
mod hostile_http;
mod hostile_jsonrpc;
mod hostile_render;
mod hostile_workspace;
mod library_reload;
mod llm;
mod mcp_http;
mod mcp_replicas;
mod mcp_stdio;
mod prompt_tests;
mod rag_chunk;
mod rag_cli;
mod rag_cli_workspace;
mod rag_embed;
mod rag_eval;
mod rag_follow;
mod rag_index_history;
mod rag_model_load;
mod rag_one_shot;
mod rag_ranking;
mod rag_retrieval;
mod rag_stat_refresh;
mod rag_watch;
mod render_fixtures;
mod shipped_files;
mod stage_resources;
mod stages_catalog;
mod stages_equality;
mod stages_errors;
mod stages_reload;
mod studio_browser;
mod studio_collections;
mod studio_http;
mod studio_navigation;
mod studio_playground;
mod studio_tools;
mod studio_versions;
mod suggestions;
mod tools_defined;
mod versions;
