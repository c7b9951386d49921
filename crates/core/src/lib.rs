//! The prompt library: dialects (how each tool's prompt files are read), the registry (ordered
//! folders, shadowing, content hashes), the renderer (layered variables and where each value
//! came from), the library every adapter calls (including the `wit-get-prompts` contract), the
//! linter, prompt tests and the folder watcher.
//!
//! **Invariant:** depends only on `promptd-base`; knows nothing of retrieval, the guard, MCP or
//! HTTP.

pub mod compare;
pub mod dialect;
pub mod library;
pub mod lint;
pub mod prompt_tests;
pub mod registry;
pub mod render;
pub mod versions;
pub mod watch;
