//! Test support shared by the integration tests (the `it` binary); benches and the
//! `guard_scratch` binary include single files of it with `#[path]`.
//!
//! - [`process`]: the `promptd` binary as a child process, through one command builder with one
//!   environment policy, and runs bounded in time with their peak memory;
//! - [`mcp`]: MCP sessions with the real server over stdio or HTTP, and the protocol checks both
//!   transports share;
//! - [`stdio`]: the real server over stdio driven with raw JSON-RPC lines;
//! - [`guard`]: fake secrets generated from specs, and the two guard corpora, generated from
//!   data in `tests/fixtures/guard/corpus/`;
//! - [`rag`]: the retrieval fixture repository and the embedding model's location;
//! - [`llm_server`]: a local OpenAI-compatible server that records every request;
//! - [`tool_target`]: a loopback HTTP server that tool definitions call, recording requests;
//! - [`browser`]: a real headless Chromium over the DevTools protocol, with screenshots;
//!   [`browser_page`]: a studio served with a token and a tab opened on it;
//! - [`fuse`]: a real FUSE mount (bindfs), whose writes from outside send no file events;
//! - [`git`]: a prompt project with a git history, made with the `git` command line;
//! - here: a prompt library over fixture folders, and path redaction for snapshots.

pub mod browser;
pub mod browser_page;
pub mod fuse;
pub mod git;
pub mod guard;
pub mod llm_server;
pub mod mcp;
pub mod process;
pub mod rag;
pub mod stdio;
pub mod studio;
pub mod tool_target;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use promptd::library::{LibraryOptions, PromptLibrary};
use promptd::registry::{BuiltinSource, DirSource, PromptSource};
use promptd::render::Clock;

/// Opens a library over fixture folders (no built-ins unless asked), with an optional config.
pub fn library(
    dirs: &[PathBuf],
    builtins: bool,
    config: Option<&Path>,
    now: &str,
) -> PromptLibrary {
    let mut roots: Vec<Arc<dyn PromptSource>> = Vec::new();
    if builtins {
        roots.push(Arc::new(BuiltinSource));
    }
    for d in dirs {
        roots.push(Arc::new(DirSource::new(d)));
    }
    let opts = LibraryOptions {
        prompt_dirs: Vec::new(),
        config_path: config.map(Path::to_path_buf),
        cwd: std::env::temp_dir().join("promptd-no-config-here"),
        clock: Clock::parse(now).unwrap(),
        ..Default::default()
    };
    PromptLibrary::open_with_roots(opts, roots).unwrap()
}

/// Replaces machine-specific absolute paths in text with stable placeholders.
pub fn redact(text: &str, dir: &Path) -> String {
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    text.replace(&canon.display().to_string(), "<case>")
        .replace(&dir.display().to_string(), "<case>")
}
