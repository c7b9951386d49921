//! Cross-process locks on what retrieval writes under `<repo>/.rag/`, so two processes (say
//! `promptd index` while `promptd serve` runs) never interleave their writes:
//!
//! - `.rag/index.lock` is held for a whole index refresh (walk, tantivy delete/add/commit and the
//!   manifest), and while an unusable index is rebuilt on open. tantivy's own writer lock only
//!   makes a second writer fail; this one makes it wait, then start from the other's manifest.
//! - `vectors.bin` itself is locked while its header is checked or written and while a batch of
//!   vectors is appended, so records from two writers never interleave and a truncation of a torn
//!   tail never races an append.
//!
//! The locks are advisory OS file locks (`flock` on Unix, `LockFileEx` on Windows) through std's
//! `File::lock`: the OS releases them when the process dies, so a crash never leaves a stale
//! lock behind.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::RagError;

/// File under `.rag/` locked for index refreshes.
pub const INDEX_LOCK: &str = "index.lock";

/// An exclusive lock, released when dropped.
#[derive(Debug)]
pub struct RagLock {
    file: File,
}

impl RagLock {
    /// Blocks until the exclusive lock on `path` (created when missing) is held.
    pub fn exclusive(path: &Path) -> Result<RagLock, RagError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| RagError::io(path, e))?;
        file.lock().map_err(|e| RagError::io(path, e))?;
        Ok(RagLock { file })
    }

    /// The index lock of `rag_dir`.
    pub fn index(rag_dir: &Path) -> Result<RagLock, RagError> {
        Self::exclusive(&rag_dir.join(INDEX_LOCK))
    }
}

impl Drop for RagLock {
    fn drop(&mut self) {
        // Closing the file releases the lock as well; unlocking first makes it immediate.
        let _ = self.file.unlock();
    }
}
