//! Prompts as of a git revision, read in process with gitoxide (no `git` subprocess).
//!
//! `NAME@REV` names the prompt `NAME` as it was at revision `REV` (a tag, a branch, a commit or
//! a unique prefix of one, anything `git rev-parse` takes). [`Versions::roots_at`] gives the
//! prompt roots that read every prompt folder that lies in a git repository from that folder's
//! tree at the commit ([`tree::TreeSource`]), the built-in prompts as they are; the library
//! builds its snapshot at that revision from them with the working copy's loader, dialects,
//! renderer and config file. [`Versions::history`] lists the commits that changed a prompt's file, newest first, with
//! the prompt's version hash (the content hash of the file) at each.
//!
//! Bounded: one repository handle per repository (opened once, kept), at most
//! [`SNAPSHOTS_KEPT`] snapshots at a commit (kept by the library) and [`HISTORIES_KEPT`]
//! histories cached (a commit
//! never changes), at most [`MAX_HISTORY_WALK`] commits walked for one history.

pub mod tree;

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gix::bstr::ByteSlice;
use serde::Serialize;

use crate::registry::{PromptSource, PromptTemplate, content_hash};

/// Snapshots at a commit kept for the next request.
pub const SNAPSHOTS_KEPT: usize = 8;
/// Histories kept (by prompt file and tip commit).
pub const HISTORIES_KEPT: usize = 128;
/// The most commits one history walks; an older change is not listed (the history says so).
pub const MAX_HISTORY_WALK: usize = 100_000;
/// The most versions a history lists unless the caller asks for fewer.
pub const MAX_HISTORY: usize = 500;

/// Why a version could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("`{rev}` is not a revision of the git repository {repo}: {reason}")]
    UnknownRevision {
        rev: String,
        repo: String,
        reason: String,
    },
    #[error("`{rev}`: no prompt folder is inside a git repository")]
    NoRepository { rev: String },
    #[error("prompt `{name}` does not exist at `{rev}` (commit {commit})")]
    MissingAtRevision {
        name: String,
        rev: String,
        commit: String,
    },
    #[error("prompt `{name}` ({path}) is not in a git repository")]
    NotInRepository { name: String, path: String },
    #[error("unknown prompt `{name}`")]
    UnknownPrompt { name: String },
    #[error("`{spec}`: expected NAME@REV with a prompt name and a revision")]
    BadSpec { spec: String },
    #[error("reading git repository {repo}: {reason}")]
    Git { repo: String, reason: String },
}

impl VersionError {
    /// Whether the caller is at fault (a revision or prompt that does not exist).
    pub fn is_caller_error(&self) -> bool {
        !matches!(self, VersionError::Git { .. })
    }
}

/// `NAME@REV` split at its first `@`: `Some((NAME, REV))`, or `None` for a name without one.
/// Both parts must be non-empty (a bad spec is an error).
pub fn split_spec(spec: &str) -> Option<Result<(&str, &str), VersionError>> {
    let (name, rev) = spec.split_once('@')?;
    if name.trim().is_empty() || rev.trim().is_empty() {
        return Some(Err(VersionError::BadSpec {
            spec: spec.to_string(),
        }));
    }
    Some(Ok((name, rev)))
}

/// One commit that changed a prompt's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    /// The full commit id (hex).
    pub commit: String,
    /// Its shortest unique prefix (at least 7 digits).
    pub short: String,
    /// The first line of its message.
    pub summary: String,
    pub author: String,
    /// Commit time, seconds since the Unix epoch.
    pub time: i64,
    /// The same, as `YYYY-MM-DD HH:MM` UTC.
    pub date: String,
    /// The prompt's version hash at this commit (the content hash of its file); `None` when the
    /// commit deleted the file.
    pub version_hash: Option<String>,
}

/// The commits that changed one prompt's file, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    pub prompt: String,
    /// The file's path in its repository.
    pub path: String,
    /// The working copy's version hash.
    pub working: String,
    /// Shared with the kept history of the same file and tip, whatever prompt asks.
    pub versions: Arc<Vec<Version>>,
    /// More changes may be older than the last one listed (the limit, or the walk's bound).
    pub truncated: bool,
}

/// An open repository and where its work tree is.
#[derive(Debug, Clone)]
struct Repo {
    handle: gix::ThreadSafeRepository,
    /// The work tree, canonical.
    workdir: PathBuf,
}

/// A kept history's key: the file's path in its repository, the tip commit, the limit.
type HistoryKey = (String, String, usize);

/// A registry's prompt roots as of a revision ([`Versions::roots_at`]).
pub struct RootsAt {
    pub roots: Vec<Arc<dyn PromptSource>>,
    /// Names the trees read: equal keys, equal roots.
    pub key: String,
    /// The commit, shortened, of the first root read from a tree.
    pub commit: String,
}

/// The git side of a library: its repositories and what was read from them.
#[derive(Debug, Default)]
pub struct Versions {
    /// By folder asked about (a prompt folder, a file's folder): its repository, if any.
    repos: Mutex<HashMap<PathBuf, Option<Repo>>>,
    /// By git dir: the one handle of each repository.
    handles: Mutex<HashMap<PathBuf, Repo>>,
    histories: Mutex<Option<lru::LruCache<HistoryKey, Arc<History>>>>,
}

fn git_error(repo: &Path) -> impl Fn(gix::Error) -> VersionError + '_ {
    move |e| VersionError::Git {
        repo: repo.display().to_string(),
        reason: e.to_string(),
    }
}

impl Versions {
    pub fn new() -> Versions {
        Versions::default()
    }

    /// The repository whose work tree holds `folder` (canonical), opened once.
    fn repo_of(&self, folder: &Path) -> Option<Repo> {
        let mut repos = self.repos.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = repos.get(folder) {
            return known.clone();
        }
        let found = gix::ThreadSafeRepository::discover(folder)
            .ok()
            .and_then(|handle| {
                let workdir = std::fs::canonicalize(handle.work_dir()?).ok()?;
                let git_dir = handle.git_dir().to_path_buf();
                let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
                Some(
                    handles
                        .entry(git_dir)
                        .or_insert_with(|| Repo { handle, workdir })
                        .clone(),
                )
            });
        // Bounded by the folders a library has (its roots and its prompts' folders).
        if repos.len() < 4096 {
            repos.insert(folder.to_path_buf(), found.clone());
        }
        found
    }

    /// The commit `rev` names in `repo`, with its shortest unique prefix.
    fn commit_of(
        repo: &Repo,
        rev: &str,
    ) -> Result<(gix::ObjectId, String, gix::ObjectId), VersionError> {
        let local = repo.handle.to_thread_local();
        let unknown = |reason: String| VersionError::UnknownRevision {
            rev: rev.to_string(),
            repo: repo.workdir.display().to_string(),
            reason,
        };
        let id = local
            .rev_parse_single(rev.as_bytes().as_bstr())
            .map_err(|e| unknown(e.to_string()))?;
        let commit = id
            .object()
            .and_then(|o| o.peel_to_commit())
            .map_err(|e| unknown(format!("not a commit: {e}")))?;
        let tree = commit.tree_id().map_err(git_error(&repo.workdir))?.detach();
        let short = commit.id().shorten_or_id().to_string();
        Ok((commit.id, short, tree))
    }

    /// The prompt roots `roots` as of `rev`: every folder root inside a git repository that
    /// knows `rev` read from its tree at that commit ([`tree::TreeSource`]), other folders left
    /// out, the built-in prompts kept; with a key naming what was read (equal keys, equal
    /// roots: a commit never changes).
    pub fn roots_at(
        &self,
        roots: &[Arc<dyn PromptSource>],
        rev: &str,
    ) -> Result<RootsAt, VersionError> {
        let mut at: Vec<Arc<dyn PromptSource>> = Vec::new();
        let mut key = String::new();
        let mut first_error = None;
        let mut any_repo = false;
        let mut commit_shown = None;
        for root in roots {
            let Some(dir) = root.dir() else {
                at.push(root.clone());
                key.push_str("builtin;");
                continue;
            };
            let folder = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            let Some(repo) = self.repo_of(&folder) else {
                continue;
            };
            any_repo = true;
            let (commit, short, tree) = match Self::commit_of(&repo, rev) {
                Ok(c) => c,
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            let prefix = folder
                .strip_prefix(&repo.workdir)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            key.push_str(&format!("{}:{prefix}@{commit};", repo.workdir.display()));
            commit_shown.get_or_insert_with(|| short.clone());
            at.push(Arc::new(
                tree::TreeSource::new(&repo.handle, tree, &prefix, &short, root.dialect())
                    .map_err(git_error(&repo.workdir))?,
            ));
        }
        if !any_repo {
            return Err(VersionError::NoRepository {
                rev: rev.to_string(),
            });
        }
        match (commit_shown, first_error) {
            (Some(commit), _) => Ok(RootsAt {
                roots: at,
                key,
                commit,
            }),
            (None, Some(e)) => Err(e),
            (None, None) => Err(VersionError::NoRepository {
                rev: rev.to_string(),
            }),
        }
    }

    /// The commits reachable from `HEAD` that changed the file of `prompt` (a prompt of the
    /// working copy), newest first (by commit time), at most `limit` (capped at
    /// [`MAX_HISTORY`]). A commit counts when the file's content differs from that of every
    /// parent (git's default history: a merge that took one side's file unchanged is left
    /// out).
    pub fn history(
        &self,
        prompt: &PromptTemplate,
        limit: usize,
    ) -> Result<Arc<History>, VersionError> {
        let limit = limit.clamp(1, MAX_HISTORY);
        let not_in_repo = || VersionError::NotInRepository {
            name: prompt.name.clone(),
            path: prompt.path.clone(),
        };
        let file = std::fs::canonicalize(&prompt.path).map_err(|_| not_in_repo())?;
        let folder = file.parent().ok_or_else(not_in_repo)?;
        let repo = self.repo_of(folder).ok_or_else(not_in_repo)?;
        let rel = file
            .strip_prefix(&repo.workdir)
            .map_err(|_| not_in_repo())?
            .to_string_lossy()
            .replace('\\', "/");
        let mut local = repo.handle.to_thread_local();
        // Trees and commits are looked up again and again in a walk.
        local.object_cache_size_if_unset(16 * 1024 * 1024);
        let err = git_error(&repo.workdir);
        let head = match local.head_id() {
            Ok(id) => id.detach(),
            // A repository without commits: no history yet.
            Err(_) => {
                return Ok(Arc::new(History {
                    prompt: prompt.name.clone(),
                    path: rel,
                    working: prompt.version_hash.clone(),
                    versions: Arc::default(),
                    truncated: false,
                }));
            }
        };
        let key = (rel.clone(), head.to_string(), limit);
        {
            let mut kept = self.histories.lock().unwrap_or_else(|e| e.into_inner());
            let kept = kept.get_or_insert_with(|| {
                lru::LruCache::new(NonZeroUsize::new(HISTORIES_KEPT).expect("non-zero"))
            });
            if let Some(h) = kept.get(&key) {
                return Ok(Arc::new(History {
                    prompt: prompt.name.clone(),
                    path: h.path.clone(),
                    working: prompt.version_hash.clone(),
                    versions: h.versions.clone(),
                    truncated: h.truncated,
                }));
            }
        }
        let path = Path::new(&rel);
        // The file's blob at each commit seen (parents are looked up again by their children).
        let mut blob_at: HashMap<gix::ObjectId, Option<gix::ObjectId>> = HashMap::new();
        let mut lookup = |id: gix::ObjectId| -> Result<Option<gix::ObjectId>, VersionError> {
            if let Some(b) = blob_at.get(&id) {
                return Ok(*b);
            }
            let commit = local.find_commit(id).map_err(&err)?;
            let tree = commit.tree().map_err(&err)?;
            let blob = tree
                .lookup_entry_by_path(path)
                .map_err(&err)?
                .filter(|e| e.mode().is_blob())
                .map(|e| e.object_id());
            blob_at.insert(id, blob);
            Ok(blob)
        };
        let walk = local
            .rev_walk([head])
            .sorting(gix::revision::walk::Sorting::ByCommitTime(
                gix::revision::walk::CommitTimeOrder::NewestFirst,
            ))
            .all()
            .map_err(&err)?;
        let mut changed = Vec::new();
        let mut truncated = false;
        for (walked, info) in walk.enumerate() {
            if walked >= MAX_HISTORY_WALK {
                truncated = true;
                break;
            }
            let info = info.map_err(&err)?;
            let id = info.id;
            let parents: Vec<gix::ObjectId> = info.parent_ids.iter().copied().collect();
            let root = parents.is_empty();
            let here = lookup(id)?;
            let mut differs = true;
            for p in parents {
                if lookup(p)? == here {
                    differs = false;
                    break;
                }
            }
            // A root commit without the file did not change it.
            if differs && !(here.is_none() && root) {
                if changed.len() == limit {
                    truncated = true;
                    break;
                }
                changed.push((id, here));
            }
        }
        let mut versions = Vec::with_capacity(changed.len());
        for (id, blob) in changed {
            let commit = local.find_commit(id).map_err(&err)?;
            let summary = commit
                .message()
                .map(|m| m.summary().to_str_lossy().into_owned())
                .unwrap_or_default();
            let author = commit
                .author()
                .map(|a| a.name.to_str_lossy().into_owned())
                .unwrap_or_default();
            let time = commit.time().map(|t| t.seconds).unwrap_or_default();
            let version_hash = match blob {
                Some(b) => Some(content_hash(&local.find_blob(b).map_err(&err)?.data)),
                None => None,
            };
            versions.push(Version {
                commit: id.to_string(),
                short: commit.id().shorten_or_id().to_string(),
                summary,
                author,
                time,
                date: chrono::DateTime::from_timestamp(time, 0)
                    .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
                    .unwrap_or_default(),
                version_hash,
            });
        }
        let history = Arc::new(History {
            prompt: prompt.name.clone(),
            path: rel,
            working: prompt.version_hash.clone(),
            versions: Arc::new(versions),
            truncated,
        });
        let mut kept = self.histories.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = kept.as_mut() {
            kept.put(key, history.clone());
        }
        Ok(history)
    }
}
