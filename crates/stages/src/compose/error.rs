//! The composer's one error type, shared by its stages and the frame.

use std::path::PathBuf;

/// Errors of the composer. Problems inside the workspace (a bad rule file, an invalid tool
/// definition) are not errors: they are reported in the ledger / tool issues and skipped.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("workspace root {path}: {source}")]
    WorkspaceRoot {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("workspace root {0} is not a directory")]
    WorkspaceRootNotDir(PathBuf),
    #[error("current file {file} is outside the workspace root {root}")]
    CurrentFileOutsideRoot { file: PathBuf, root: PathBuf },
    #[error("doc file {path}: {source}")]
    DocFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("composer template: {0}")]
    Template(String),
    /// A `docs` entry (or `--doc` file) that may not be read: outside the workspace, not a
    /// regular file, over `limits.maxDocBytes`, or not UTF-8 text.
    #[error("`{entry}` ({path}): {message}")]
    Doc {
        entry: String,
        path: PathBuf,
        message: String,
    },
    /// The `compose` config section is invalid.
    #[error("compose settings: {0}")]
    Settings(String),
    /// The secret guard could not run; no doc is composed unscanned.
    #[error("secret scanner unavailable: {0}; no docs were composed")]
    Guard(String),
}

impl ComposeError {
    /// Whether the caller is at fault (a bad argument), not the server (a broken template,
    /// config or scanner).
    pub fn is_caller_error(&self) -> bool {
        !matches!(
            self,
            ComposeError::Template(_) | ComposeError::Settings(_) | ComposeError::Guard(_)
        )
    }
}
