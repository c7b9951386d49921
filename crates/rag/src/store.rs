//! The `.rag/` folder under a repository root, where retrieval keeps everything it persists, and
//! the one place that names what is in it:
//!
//! - `indexing-exclude.txt`: the user's exclusions (the only file meant to be edited or
//!   committed), and `.gitignore`, which keeps the rest out of `git status`;
//! - `index/`: the tantivy index, and `manifest.bin` (with `manifest.next.bin` while a commit
//!   is under way): the per-file fingerprints tied to a tantivy commit, in postcard's compact
//!   binary form (`manifest.json`, the JSON form older builds wrote, is read once and replaced);
//! - `index-verified.json`: the index files whose checksums passed, with their size and mtime
//!   then, so opening the index re-checks only files written or touched since;
//! - `tree.json`: the folders and ignore files the last walk saw, for the commit it belongs to,
//!   so a refresh without a watcher can tell by `stat` alone whether it must walk;
//! - `vectors.bin`: the chunk vector cache;
//! - `index.lock`: held for a whole index refresh;
//! - `watch-sync-N`: short-lived markers a folder watcher writes to flush its event queue.
//!
//! Files are replaced with [`write_atomic`] (write-then-rename), so a reader sees the old or the
//! new content, never a torn write. [`RagLock`] keeps two processes (say `promptd index` while
//! `promptd serve` runs) from interleaving their writes: `index.lock` is held for a whole refresh
//! (walk, tantivy delete/add/commit and the manifest) and while an unusable index is rebuilt on
//! open; tantivy's own writer lock only makes a second writer fail, this one makes it wait and
//! then start from the other's manifest. `vectors.bin` is locked through its own handle while
//! its header is checked or written and while a batch of vectors is appended. The locks are
//! advisory OS file locks (`flock` on Unix, `LockFileEx` on Windows) through std's `File::lock`:
//! the OS releases them when the process dies, so a crash never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::error::RagError;

/// The folder's name under the repository root.
pub const RAG_DIR: &str = ".rag";
/// The user-editable exclusion file.
pub const EXCLUDE_FILE: &str = "indexing-exclude.txt";
const GIT_IGNORE: &str = ".gitignore";
const MANIFEST: &str = "manifest.bin";
const MANIFEST_NEXT: &str = "manifest.next.bin";
const LEGACY_MANIFEST: &str = "manifest.json";
const INDEX_DIR: &str = "index";
const INDEX_LOCK: &str = "index.lock";
const INDEX_VERIFIED: &str = "index-verified.json";
const TREE_STAMP: &str = "tree.json";
const VECTORS: &str = "vectors.bin";
/// Prefix of the watcher's marker files.
const SYNC_PREFIX: &str = "watch-sync-";

/// The `.rag/` folder of one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RagDir {
    path: PathBuf,
}

/// What a file directly inside the folder is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// The user's exclusion file.
    ExcludeFile,
    /// The watcher's marker number `n`.
    SyncMarker(u64),
    /// Anything else: the index, the manifest, the vectors, the lock.
    Own,
}

impl RagDir {
    /// The folder of the repository at `repo`.
    pub fn of(repo: &Path) -> RagDir {
        RagDir {
            path: repo.join(RAG_DIR),
        }
    }

    /// The folder at `path` itself ([`RagDir::of`] finds it under a repository root).
    pub fn at(path: &Path) -> RagDir {
        RagDir {
            path: path.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the folder when missing.
    pub fn create(&self) -> Result<(), RagError> {
        std::fs::create_dir_all(&self.path).map_err(|e| RagError::io(&self.path, e))
    }

    /// Creates the folder and its `.gitignore` when missing: everything but the exclusion list
    /// (which may be committed) stays out of the user's `git status`.
    pub fn create_with_git_ignore(&self) -> Result<(), RagError> {
        self.create()?;
        let git_ignore = self.path.join(GIT_IGNORE);
        if !git_ignore.exists() {
            let rules = format!("*\n!{GIT_IGNORE}\n!{EXCLUDE_FILE}\n");
            write_atomic(&git_ignore, rules.as_bytes())?;
        }
        Ok(())
    }

    pub fn exclude_file(&self) -> PathBuf {
        self.path.join(EXCLUDE_FILE)
    }

    pub fn index_dir(&self) -> PathBuf {
        self.path.join(INDEX_DIR)
    }

    pub fn manifest(&self) -> PathBuf {
        self.path.join(MANIFEST)
    }

    /// The manifest in the JSON form older builds wrote (read when [`RagDir::manifest`] is
    /// missing, then replaced by it).
    pub fn legacy_manifest(&self) -> PathBuf {
        self.path.join(LEGACY_MANIFEST)
    }

    /// The manifest of a commit under way (renamed to [`RagDir::manifest`] once committed).
    pub fn manifest_next(&self) -> PathBuf {
        self.path.join(MANIFEST_NEXT)
    }

    /// The index files whose checksums passed, with their size and mtime at the time.
    pub fn index_verified(&self) -> PathBuf {
        self.path.join(INDEX_VERIFIED)
    }

    /// The folders and ignore files of the last walk ([`super::discover::TreeStamp`]).
    pub fn tree_stamp(&self) -> PathBuf {
        self.path.join(TREE_STAMP)
    }

    /// The chunk vector cache.
    pub fn vectors(&self) -> PathBuf {
        self.path.join(VECTORS)
    }

    /// The watcher's marker file number `n`.
    pub fn sync_marker(&self, n: u64) -> PathBuf {
        self.path.join(format!("{SYNC_PREFIX}{n}"))
    }

    /// What `path` is when it lies directly inside the folder; `None` for any other path.
    pub fn entry(&self, path: &Path) -> Option<Entry> {
        if path.parent() != Some(self.path.as_path()) {
            return None;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == EXCLUDE_FILE {
            return Some(Entry::ExcludeFile);
        }
        let marker = name
            .strip_prefix(SYNC_PREFIX)
            .and_then(|n| n.parse::<u64>().ok());
        Some(marker.map_or(Entry::Own, Entry::SyncMarker))
    }

    /// Blocks until this process holds the index lock.
    pub fn lock_index(&self) -> Result<RagLock, RagError> {
        RagLock::exclusive(&self.path.join(INDEX_LOCK))
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// readers see the old or the new content, never a torn write.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RagError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| RagError::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| RagError::io(path, e))?;
    tmp.as_file()
        .sync_data()
        .map_err(|e| RagError::io(path, e))?;
    tmp.persist(path).map_err(|e| RagError::io(path, e.error))?;
    Ok(())
}

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
}

impl Drop for RagLock {
    fn drop(&mut self) {
        // Closing the file releases the lock as well; unlocking first makes it immediate.
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_told_apart_by_name_directly_inside_the_folder() {
        let dir = RagDir::of(Path::new("/repo"));
        assert_eq!(dir.path(), Path::new("/repo/.rag"));
        assert_eq!(dir.entry(&dir.exclude_file()), Some(Entry::ExcludeFile));
        assert_eq!(dir.entry(&dir.sync_marker(42)), Some(Entry::SyncMarker(42)));
        assert_eq!(dir.entry(&dir.manifest()), Some(Entry::Own));
        assert_eq!(
            dir.entry(Path::new("/repo/.rag/watch-sync-x")),
            Some(Entry::Own)
        );
        assert_eq!(dir.entry(&dir.index_dir().join("meta.json")), None);
        assert_eq!(dir.entry(Path::new("/repo/indexing-exclude.txt")), None);
    }

    #[test]
    fn the_git_ignore_keeps_all_but_the_exclusion_list_out_of_git() {
        let repo = tempfile::tempdir().unwrap();
        let dir = RagDir::of(repo.path());
        dir.create_with_git_ignore().unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".gitignore")).unwrap(),
            "*\n!.gitignore\n!indexing-exclude.txt\n"
        );
    }
}
