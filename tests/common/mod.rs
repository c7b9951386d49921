//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod llm_server;
pub mod process;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use promptd::config::ProjectConfig;
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

/// An empty config.
pub fn no_config() -> ProjectConfig {
    ProjectConfig::default()
}
