//! Discovery: which files of a repository may be indexed. The `ignore` crate applies
//! `.gitignore`, `.ignore`, global git excludes and hidden-file rules; `.rag/indexing-exclude.txt`
//! (gitignore syntax, recreated with a protective default set when missing) adds the user's own
//! exclusions. Exclusion is decided by path only, never by words in a file's content, so code
//! that talks about tokens or passwords stays retrievable while `.env` or `id_rsa` never is read.
//!
//! A walk can record a [`TreeStamp`] (the folders it entered and the ignore files that shaped
//! it, with their mtimes); [`files_by_stat`] then rebuilds the same file list from the last
//! indexed files with one `stat` per file and folder, re-listing only folders whose mtime
//! moved, and asks for a full walk when it cannot be sure (a folder appeared or vanished, an
//! ignore file changed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{WalkBuilder, WalkState};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

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
        IndexBounds::from_limits(&promptd_base::limits::Limits::default())
    }
}

impl IndexBounds {
    /// `limits.maxIndexFiles` and `limits.maxIndexBytes`.
    pub fn from_limits(limits: &promptd_base::limits::Limits) -> IndexBounds {
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
    Ok(list_dir(repo, dir, excludes)?.0)
}

/// [`discover_dir`], plus the folders inside `dir` a walk would enter (relative paths).
fn list_dir(
    repo: &Path,
    dir: &Path,
    excludes: &Gitignore,
) -> Result<(Vec<DiscoveredFile>, Vec<String>), RagError> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in walk_builder(dir).max_depth(Some(1)).build() {
        let entry = entry.map_err(|e| RagError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        if entry.depth() == 0 {
            continue;
        }
        match visit(repo, excludes, &entry) {
            Visit::File(file) => files.push(file),
            Visit::Dir => dirs.extend(entry.path().strip_prefix(repo).ok().and_then(rel_to_string)),
            Visit::Prune | Visit::Nothing => {}
        }
    }
    Ok((files, dirs))
}

/// Size and mtime (ns) of a file.
pub type FileStamp = (u64, u64);

/// A folder mtime this close to the moment it was read may still move within the same clock
/// tick as a later change (file systems keep coarse timestamps): such a folder is recorded as
/// unknown and re-listed next time.
const RACY_WINDOW: Duration = Duration::from_secs(2);
/// The recorded mtime of a folder that must be re-listed.
const UNKNOWN_MTIME: u64 = u64::MAX;
/// The ignore files a walk reads in each folder (besides `.git/info/exclude` at the root).
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// What a full walk saw beyond its files: every folder it entered, and every file whose rules
/// decided what it kept. As long as no folder's mtime moved and no rule file changed, the
/// indexable files are the ones found then (each with its current size and mtime).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeStamp {
    /// Folders entered (relative, `/`-separated, "" for the root) and their mtimes (ns).
    pub dirs: BTreeMap<String, u64>,
    /// Rule files by absolute path: the exclusion file, `.git/info/exclude`, the global git
    /// excludes, the ignore files of the root's parents (`None`: absent then) and those present
    /// in the folders entered.
    pub rules: BTreeMap<String, Option<FileStamp>>,
}

fn stamp_of(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), mtime_of(&meta)))
}

fn mtime_of(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A folder's mtime as recorded at `read_at`: [`UNKNOWN_MTIME`] when gone or too recent.
fn dir_mtime(dir: &Path, read_at: SystemTime) -> u64 {
    let Ok(meta) = std::fs::metadata(dir) else {
        return UNKNOWN_MTIME;
    };
    let mtime = meta.modified().ok();
    match mtime.and_then(|m| read_at.duration_since(m).ok()) {
        Some(age) if age > RACY_WINDOW => mtime_of(&meta),
        _ => UNKNOWN_MTIME,
    }
}

fn path_key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Rule files outside the folders a walk enters: whether each exists, and its stamp.
fn outer_rules(repo: &Path) -> BTreeMap<String, Option<FileStamp>> {
    let mut paths = vec![
        RagDir::of(repo).exclude_file(),
        repo.join(".git/info/exclude"),
    ];
    for parent in repo.ancestors().skip(1) {
        paths.extend(IGNORE_FILES.iter().map(|name| parent.join(name)));
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        paths.push(home.join(".gitconfig"));
        paths.push(home.join(".config/git/ignore"));
    }
    if let Some(config) = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from) {
        paths.push(config.join("git/ignore"));
    }
    paths
        .into_iter()
        .map(|p| (path_key(&p), stamp_of(&p)))
        .collect()
}

/// The ignore files present in `dir`, with their stamps.
fn inner_rules(dir: &Path) -> impl Iterator<Item = (String, Option<FileStamp>)> {
    IGNORE_FILES.into_iter().filter_map(move |name| {
        let path = dir.join(name);
        stamp_of(&path).map(|stamp| (path_key(&path), Some(stamp)))
    })
}

/// [`discover_with`], also returning the [`TreeStamp`] of the walk.
pub fn discover_stamped(
    repo: &Path,
    bounds: IndexBounds,
    entering: &(dyn Fn(&Path) + Sync),
) -> Result<(Vec<DiscoveredFile>, TreeStamp), RagError> {
    let read_at = SystemTime::now();
    let stamp = Mutex::new(TreeStamp {
        dirs: BTreeMap::new(),
        rules: outer_rules(repo),
    });
    let files = discover_with(repo, bounds, &|dir| {
        entering(dir);
        let Some(rel) = dir.strip_prefix(repo).ok().and_then(rel_to_string) else {
            return;
        };
        let mtime = dir_mtime(dir, read_at);
        let mut stamp = stamp.lock().expect("tree stamp lock");
        stamp.dirs.insert(rel, mtime);
        stamp.rules.extend(inner_rules(dir));
    })?;
    Ok((files, stamp.into_inner().expect("tree stamp lock")))
}

/// The stamp saved with [`save_stamp`] for the index commit `generation`, if that is the
/// last one saved.
pub fn load_stamp(repo: &Path, generation: u64) -> Option<TreeStamp> {
    let bytes = std::fs::read(RagDir::of(repo).tree_stamp()).ok()?;
    let saved: SavedStamp = serde_json::from_slice(&bytes).ok()?;
    (saved.generation == generation).then_some(saved.stamp)
}

/// Keeps `stamp` as the one of index commit `generation` (a cache: failing to write it only
/// means a walk next time).
pub fn save_stamp(repo: &Path, generation: u64, stamp: TreeStamp) {
    let saved = SavedStamp { generation, stamp };
    if let Ok(bytes) = serde_json::to_vec(&saved) {
        let _ = write_atomic(&RagDir::of(repo).tree_stamp(), &bytes);
    }
}

#[derive(Serialize, Deserialize)]
struct SavedStamp {
    generation: u64,
    stamp: TreeStamp,
}

/// A folder opened once, so its entries are `stat`ed relative to it instead of by their full
/// paths (on large trees, the kernel's path lookups dominated a one-shot refresh).
struct Folder {
    #[cfg(unix)]
    fd: rustix::fd::OwnedFd,
    #[cfg(not(unix))]
    path: PathBuf,
    mtime: u64,
}

impl Folder {
    /// The folder at `path` (symbolic links followed, as `std::fs::metadata` does); `None` when
    /// it is gone or not a folder.
    #[cfg(unix)]
    fn open(path: PathBuf) -> Option<Folder> {
        use rustix::fs::{Mode, OFlags};
        // On Linux a path-only handle: no read access is set up, `fstat` and `fstatat` work.
        #[cfg(target_os = "linux")]
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        #[cfg(not(target_os = "linux"))]
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(&path, flags, Mode::empty()).ok()?;
        let mtime = stat_mtime(&rustix::fs::fstat(&fd).ok()?);
        Some(Folder { fd, mtime })
    }

    #[cfg(not(unix))]
    fn open(path: PathBuf) -> Option<Folder> {
        let meta = std::fs::metadata(&path).ok().filter(|m| m.is_dir())?;
        Some(Folder {
            mtime: mtime_of(&meta),
            path,
        })
    }

    fn mtime(&self) -> u64 {
        self.mtime
    }

    /// Whether the entry `name` is a regular file (symbolic links not followed), its size and
    /// its mtime (ns); `None` when it is gone.
    #[cfg(unix)]
    fn entry(&self, name: &str) -> Option<(bool, u64, u64)> {
        use rustix::fs::{AtFlags, FileType};
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let is_file = FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
        Some((is_file, st.st_size as u64, stat_mtime(&st)))
    }

    #[cfg(not(unix))]
    fn entry(&self, name: &str) -> Option<(bool, u64, u64)> {
        let meta = std::fs::symlink_metadata(self.path.join(name)).ok()?;
        Some((meta.is_file(), meta.len(), mtime_of(&meta)))
    }
}

/// A `stat` result's mtime in ns since the epoch, as [`mtime_of`] reads it (0 before 1970).
#[cfg(unix)]
// The nanoseconds field is unsigned on some targets and signed on others.
#[allow(clippy::unnecessary_cast)]
fn stat_mtime(st: &rustix::fs::Stat) -> u64 {
    u64::try_from(st.st_mtime).map_or(0, |secs| secs * 1_000_000_000 + st.st_mtime_nsec as u64)
}

/// What the `stat` pass learned of one known file.
#[derive(Clone, Copy)]
enum Stated {
    /// A regular file within the size limit: its size and mtime (ns).
    File(u64, u64),
    /// In a folder whose mtime moved: the folder's listing says whether it is still there.
    Relisted,
    /// Nothing the stamp can vouch for: a walk decides.
    Unknown,
}

/// The indexable files of `repo` without walking it, when `stamp` (from the walk or check that
/// produced `known`, the files indexed then) shows that nothing but the files' own contents
/// can have changed: every rule file is as it was and every folder is still there. Folders
/// whose mtime moved (a file added, removed or renamed in them) are re-listed; every other
/// file of `known` is `stat`ed for its size and mtime. `None`: a full walk is needed. Returns
/// the files, sorted by path, and the stamp to keep for the next check.
pub fn files_by_stat(
    repo: &Path,
    stamp: &TreeStamp,
    known: &[&str],
) -> Result<Option<(Vec<DiscoveredFile>, TreeStamp)>, RagError> {
    let read_at = SystemTime::now();
    let outer = outer_rules(repo);
    let inner_unchanged = stamp
        .rules
        .par_iter()
        .filter(|(path, _)| !outer.contains_key(*path))
        .all(|(path, was)| stamp_of(Path::new(path)) == *was);
    let outer_unchanged = outer
        .iter()
        .all(|(path, now)| stamp.rules.get(path) == Some(now));
    if !(inner_unchanged && outer_unchanged) {
        return Ok(None);
    }
    // Each known file (by its place in `known`) under its folder.
    let mut by_dir: hashbrown::HashMap<&str, Vec<usize>> = hashbrown::HashMap::new();
    for (i, rel) in known.iter().enumerate() {
        let parent = rel.rsplit_once('/').map_or("", |(d, _)| d);
        by_dir.entry(parent).or_default().push(i);
    }
    // Every folder opened once: its mtime, and (when it held still) its known files `stat`ed
    // relative to it, so no file's full path is looked up again.
    // Each folder with its mtime now ([`UNKNOWN_MTIME`] if it moved) and its files.
    type Checked<'a> = (&'a String, u64, Vec<(usize, Stated)>);
    let dirs: Vec<Checked> = stamp
        .dirs
        .par_iter()
        .map(|(rel, &was)| {
            let in_dir = by_dir.get(rel.as_str()).map_or(&[][..], Vec::as_slice);
            let folder = Folder::open(repo.join(rel));
            let now = folder.as_ref().map_or(UNKNOWN_MTIME, Folder::mtime);
            if now != was {
                let relisted = in_dir.iter().map(|&i| (i, Stated::Relisted)).collect();
                return (rel, UNKNOWN_MTIME, relisted);
            }
            let stated = in_dir
                .iter()
                .map(|&i| {
                    let name = known[i].rsplit_once('/').map_or(known[i], |(_, n)| n);
                    let entry = folder.as_ref().and_then(|f| f.entry(name));
                    let stated = match entry {
                        Some((true, size, mtime_ns)) if size <= MAX_FILE_BYTES => {
                            Stated::File(size, mtime_ns)
                        }
                        _ => Stated::Unknown,
                    };
                    (i, stated)
                })
                .collect();
            (rel, was, stated)
        })
        .collect();
    // `Unknown` stays for a file the stamp cannot vouch for: its folder unknown to the stamp,
    // or the file gone or grown past the size limit while its folder held still.
    let mut stated = vec![Stated::Unknown; known.len()];
    let mut next_dirs = Vec::with_capacity(dirs.len());
    let mut files = Vec::new();
    let mut excludes = None;
    for (rel, mtime, in_dir) in dirs {
        for (i, s) in in_dir {
            stated[i] = s;
        }
        if mtime != UNKNOWN_MTIME {
            next_dirs.push((rel.clone(), mtime));
            continue;
        }
        let abs = repo.join(rel);
        if !abs.is_dir() {
            return Ok(None);
        }
        let excludes = match &excludes {
            Some(e) => e,
            None => excludes.insert(load_excludes(repo)?),
        };
        next_dirs.push((rel.clone(), dir_mtime(&abs, read_at)));
        let (listed, subdirs) = list_dir(repo, &abs, excludes)?;
        // A new folder, or a new ignore file (its rules reach into subfolders): walk.
        if subdirs.iter().any(|d| !stamp.dirs.contains_key(d))
            || inner_rules(&abs).any(|(path, _)| !stamp.rules.contains_key(&path))
        {
            return Ok(None);
        }
        files.extend(listed);
    }
    let relisted = files.len();
    let mut stated_files = Vec::with_capacity(known.len() + relisted);
    for (rel, s) in known.iter().zip(stated) {
        match s {
            Stated::File(size, mtime_ns) => stated_files.push(DiscoveredFile {
                rel_path: (*rel).to_string(),
                size,
                mtime_ns,
            }),
            Stated::Relisted => {}
            Stated::Unknown => return Ok(None),
        }
    }
    // `known` is in path order; the few re-listed files join it by a merge of the two runs.
    stated_files.append(&mut files);
    let mut files = stated_files;
    if relisted > 0 {
        files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    }
    let next = TreeStamp {
        // In path order already: built in one pass.
        dirs: BTreeMap::from_iter(next_dirs),
        rules: stamp.rules.clone(),
    };
    tracing::debug!(files = files.len(), "files checked by stat");
    Ok(Some((files, next)))
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
    let mtime_ns = mtime_of(&meta);
    let Some(rel_path) = rel_to_string(rel) else {
        return Visit::Nothing;
    };
    Visit::File(DiscoveredFile {
        rel_path,
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
