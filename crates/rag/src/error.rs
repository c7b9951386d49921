//! What goes wrong in retrieval: one error type for every step of it, each variant naming the
//! path or setting at fault. A missing embedding model is not an error (ranking degrades to
//! lexical with a warning).

use std::path::PathBuf;

/// What went wrong in retrieval. Missing models are not errors (retrieval degrades to lexical
/// with a warning); these are.
#[derive(Debug, thiserror::Error)]
pub enum RagError {
    #[error("repository directory {0}")]
    Workspace(promptd_base::workspace::WorkspaceError),
    #[error("active file {path} does not exist: {source}")]
    ActiveFileMissing {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("active file {path} resolves to {resolved}, outside the repository {repo}")]
    ActiveFileOutside {
        path: PathBuf,
        resolved: PathBuf,
        repo: PathBuf,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("exclusion file {path} line {line}: {message}")]
    ExcludePattern {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("search index in {path}: {message}")]
    Index { path: PathBuf, message: String },
    #[error("watching {path} for changes: {message}")]
    Watch { path: PathBuf, message: String },
    #[error("embedding model: {0}")]
    Embed(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The config file's `rag` section cannot be read (the message names the file).
    #[error("{0}")]
    Section(String),
}

impl RagError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RagError::Io {
            path: path.into(),
            source,
        }
    }
}
