//! Discovery: which files of a repository may be indexed. The `ignore` crate applies
//! `.gitignore`, `.ignore`, global git excludes and hidden-file rules; `.rag/indexing-exclude.txt`
//! (gitignore syntax, recreated with a protective default set when missing) adds the user's own
//! exclusions. Exclusion is decided by path only, never by words in a file's content, so code
//! that talks about tokens or passwords stays retrievable while `.env` or `id_rsa` never is read.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{WalkBuilder, WalkState};

use super::error::RagError;
use super::store::{RAG_DIR, RagDir, write_atomic};

/// Files larger than this are never indexed.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The protective default written to `.rag/indexing-exclude.txt` when it is missing.
pub const DEFAULT_EXCLUDES: &str = "\
# promptd retrieval: paths never indexed (gitignore syntax, one pattern a line).
# Recreated with these defaults when missing. Matching is by path, never by file content.

# Secrets and credentials
.env
.env.*
*.env
*.pem
*.key
*.crt
*.p12
*.pfx
*.jks
*.keystore
*.kdbx
*.gpg
id_rsa*
id_dsa*
id_ecdsa*
id_ed25519*
.ssh/
.aws/
.gnupg/
.netrc
.npmrc
.pypirc
.git-credentials
credentials
credentials.json
credentials.y*ml
*credentials*.json
secrets.json
secrets.y*ml
secrets.toml
*.secret
*.secrets

# Dependencies, build output, caches
node_modules/
target/
dist/
build/
vendor/
.venv/
venv/
__pycache__/
.rag/
.deps/

# Lock files
*.lock
package-lock.json
npm-shrinkwrap.json
pnpm-lock.yaml
go.sum

# Minified and generated files
*.min.js
*.min.css
*.map
*.bundle.js
*.pb.go
*_pb2.py
*_pb2_grpc.py
*.generated.*
*.g.dart
*.designer.cs
";

/// A file that passed every exclusion rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredFile {
    /// Path relative to the repository root, `/`-separated.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (0 when unknown).
    pub mtime_ns: u64,
}

/// Writes the default exclusion file when it is missing; returns whether it was created.
pub fn ensure_exclude_file(repo: &Path) -> Result<bool, RagError> {
    let dir = RagDir::of(repo);
    let path = dir.exclude_file();
    if path.exists() {
        return Ok(false);
    }
    dir.create_with_git_ignore()?;
    write_atomic(&path, DEFAULT_EXCLUDES.as_bytes())?;
    tracing::info!(path = %path.display(), "recreated the default indexing exclusions");
    Ok(true)
}

/// Parses `.rag/indexing-exclude.txt` into a matcher rooted at the repository.
pub fn load_excludes(repo: &Path) -> Result<Gitignore, RagError> {
    let path = RagDir::of(repo).exclude_file();
    let text = std::fs::read_to_string(&path).map_err(|e| RagError::io(&path, e))?;
    let mut builder = GitignoreBuilder::new(repo);
    for (number, line) in text.lines().enumerate() {
        builder
            .add_line(Some(path.clone()), line)
            .map_err(|e| RagError::ExcludePattern {
                path: path.clone(),
                line: number + 1,
                message: e.to_string(),
            })?;
    }
    builder.build().map_err(|e| RagError::ExcludePattern {
        path: path.clone(),
        line: 0,
        message: e.to_string(),
    })
}

/// How much one index may take: the most files, and the most bytes of their content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexBounds {
    pub max_files: usize,
    pub max_bytes: u64,
}

impl Default for IndexBounds {
    fn default() -> Self {
        IndexBounds::from_limits(&crate::limits::Limits::default())
    }
}

impl IndexBounds {
    /// `limits.maxIndexFiles` and `limits.maxIndexBytes`.
    pub fn from_limits(limits: &crate::limits::Limits) -> IndexBounds {
        IndexBounds {
            max_files: limits.max_index_files,
            max_bytes: limits.max_index_bytes,
        }
    }

    /// Keeps the longest prefix of `files` (sorted by path) within the bounds; says what was
    /// left out, naming the limit's config key.
    pub fn apply(&self, files: &mut Vec<DiscoveredFile>) -> Option<String> {
        let mut bytes = 0u64;
        let mut keep = 0;
        let mut key = None;
        for file in files.iter() {
            if keep == self.max_files {
                key = Some(("limits.maxIndexFiles", format!("{} files", self.max_files)));
                break;
            }
            if bytes + file.size > self.max_bytes {
                key = Some(("limits.maxIndexBytes", format!("{} bytes", self.max_bytes)));
                break;
            }
            bytes += file.size;
            keep += 1;
        }
        let (key, limit) = key?;
        files.truncate(keep);
        Some(format!(
            "the repository holds more than the {limit} one index may take ({key}): indexed \
             the first {keep} files by path; the rest is not searchable"
        ))
    }
}

/// Walks `repo` (already canonical) and returns the indexable files sorted by path. Runs the
/// walk on several threads: on large trees the `stat` calls dominate re-index time. The walk
/// stops once it has found more than `bounds` allow (see [`IndexBounds::apply`]).
pub fn discover(repo: &Path, bounds: IndexBounds) -> Result<Vec<DiscoveredFile>, RagError> {
    discover_with(repo, bounds, &|_| {})
}

/// [`discover`], calling `entering(dir)` for the root and every folder the walk enters, before
/// its entries are listed (a watcher registers the folder there).
pub fn discover_with(
    repo: &Path,
    bounds: IndexBounds,
    entering: &(dyn Fn(&Path) + Sync),
) -> Result<Vec<DiscoveredFile>, RagError> {
    ensure_exclude_file(repo)?;
    let excludes = load_excludes(repo)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    entering(repo);
    let walker = walk_builder(repo).threads(threads).build_parallel();
    let found = Mutex::new(Vec::new());
    let excludes = &excludes;
    let (count, bytes) = (AtomicUsize::new(0), AtomicU64::new(0));
    walker.run(|| {
        let (found, count, bytes) = (&found, &count, &bytes);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            match visit(repo, excludes, &entry) {
                Visit::File(file) => {
                    let size = file.size;
                    found.lock().expect("walk result lock").push(file);
                    let over_files = count.fetch_add(1, Ordering::Relaxed) + 1 > bounds.max_files;
                    let over_bytes =
                        bytes.fetch_add(size, Ordering::Relaxed) + size > bounds.max_bytes;
                    if over_files || over_bytes {
                        WalkState::Quit
                    } else {
                        WalkState::Continue
                    }
                }
                Visit::Dir => {
                    entering(entry.path());
                    WalkState::Continue
                }
                Visit::Prune => WalkState::Skip,
                Visit::Nothing => WalkState::Continue,
            }
        })
    });
    let mut files = found.into_inner().expect("walk result lock");
    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    Ok(files)
}

/// The indexable files directly inside `dir` (a folder of `repo` the full walk enters), with
/// the same rules as [`discover`]: the ignore files of `dir` and its parents apply.
pub fn discover_dir(
    repo: &Path,
    dir: &Path,
    excludes: &Gitignore,
) -> Result<Vec<DiscoveredFile>, RagError> {
    let mut files = Vec::new();
    for entry in walk_builder(dir).max_depth(Some(1)).build() {
        let entry = entry.map_err(|e| RagError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        if entry.depth() == 0 {
            continue;
        }
        if let Visit::File(file) = visit(repo, excludes, &entry) {
            files.push(file);
        }
    }
    Ok(files)
}

fn walk_builder(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false);
    builder
}

enum Visit {
    File(DiscoveredFile),
    /// A folder to descend into.
    Dir,
    /// An excluded folder.
    Prune,
    Nothing,
}

/// What the walk does with `entry`.
fn visit(repo: &Path, excludes: &Gitignore, entry: &ignore::DirEntry) -> Visit {
    let Some(file_type) = entry.file_type() else {
        return Visit::Nothing;
    };
    let Ok(rel) = entry.path().strip_prefix(repo) else {
        return Visit::Nothing;
    };
    if rel.as_os_str().is_empty() {
        return Visit::Nothing;
    }
    let is_dir = file_type.is_dir();
    if rel.starts_with(RAG_DIR)
        // Parents were matched (and pruned) when the walk entered them.
        || excludes.matched(rel, is_dir).is_ignore()
    {
        return if is_dir { Visit::Prune } else { Visit::Nothing };
    }
    if is_dir {
        return Visit::Dir;
    }
    if !file_type.is_file() {
        return Visit::Nothing;
    }
    let Ok(meta) = entry.metadata() else {
        return Visit::Nothing;
    };
    if meta.len() > MAX_FILE_BYTES {
        return Visit::Nothing;
    }
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    let Some(rel_path) = rel_to_string(rel) else {
        return Visit::Nothing;
    };
    Visit::File(DiscoveredFile {
        rel_path,
        abs_path: entry.path().to_path_buf(),
        size: meta.len(),
        mtime_ns,
    })
}

/// `/`-separated UTF-8 form of a relative path (non-UTF-8 paths are skipped).
pub fn rel_to_string(rel: &Path) -> Option<String> {
    let mut out = String::new();
    for (i, part) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(part.as_os_str().to_str()?);
    }
    Some(out)
}

/// True when the first 8 KiB contain a NUL byte, git's heuristic for binary content.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}
