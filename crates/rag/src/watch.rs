//! Change tracking for a long-lived retriever: notify watches every folder the discovery walk
//! entered (non-recursively, added as the walk enters them, so nothing changes unseen between the
//! listing and the watch), and records the paths that events name. A refresh then re-lists only
//! the folders holding those paths instead of walking and `stat`-ing the whole tree.
//!
//! Anything the path list cannot describe safely falls back to the full walk: the watcher's
//! start, a queue overflow or watcher error, a folder created, removed or renamed, a changed
//! `.gitignore` / `.ignore` / `.rag/indexing-exclude.txt`, or events that do not arrive in time.
//! Before each refresh a marker file is created under `.rag/` and its event awaited: inotify
//! delivers one queue in order, so once the marker is seen every earlier change has been
//! recorded.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use notify::event::ModifyKind;
use notify::{Config, Event, EventKind, EventKindMask, RecommendedWatcher, RecursiveMode, Watcher};

use super::error::RagError;
use super::store::{Entry, RagDir};

/// Longest wait for the marker's event before falling back to a full walk.
const SYNC_WAIT: Duration = Duration::from_millis(500);

/// What changed since the last refresh.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Changes {
    /// Unknown: walk the whole repository.
    Walk,
    /// Only these (absolute) paths may have been created, changed or deleted.
    Paths(BTreeSet<PathBuf>),
}

#[derive(Default)]
struct Pending {
    paths: BTreeSet<PathBuf>,
    walk: bool,
    /// Highest marker number seen.
    synced: u64,
    /// Folders with a watch.
    watched: HashSet<PathBuf>,
}

struct Shared {
    pending: Mutex<Pending>,
    marker_seen: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().expect("watch state lock")
    }
}

/// The watcher of one repository.
pub(crate) struct RepoWatcher {
    rag_dir: RagDir,
    watcher: Mutex<RecommendedWatcher>,
    shared: Arc<Shared>,
    markers: AtomicU64,
}

impl RepoWatcher {
    /// Starts watching `repo` (canonical). Until the first full walk has registered the
    /// folders, [`RepoWatcher::changes`] answers [`Changes::Walk`].
    pub fn start(repo: &Path) -> Result<RepoWatcher, RagError> {
        let rag_dir = RagDir::of(repo);
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending {
                walk: true,
                ..Pending::default()
            }),
            marker_seen: Condvar::new(),
        });
        let handler = {
            let shared = Arc::clone(&shared);
            let rag_dir = rag_dir.clone();
            move |event: notify::Result<Event>| record(&shared, &rag_dir, event)
        };
        let watch_error = |e: notify::Error| RagError::Watch {
            path: repo.to_path_buf(),
            message: e.to_string(),
        };
        let mut watcher = RecommendedWatcher::new(
            handler,
            Config::default().with_event_kinds(EventKindMask::CORE),
        )
        .map_err(watch_error)?;
        watcher
            .watch(rag_dir.path(), RecursiveMode::NonRecursive)
            .map_err(watch_error)?;
        Ok(RepoWatcher {
            rag_dir,
            watcher: Mutex::new(watcher),
            shared,
            markers: AtomicU64::new(0),
        })
    }

    /// Watches `dir` (a folder the walk is entering) unless it is watched already. A folder
    /// that cannot be watched makes the next refresh walk again.
    pub fn watch_dir(&self, dir: &Path) {
        if !self.shared.lock().watched.insert(dir.to_path_buf()) {
            return;
        }
        let result = self
            .watcher
            .lock()
            .expect("watcher lock")
            .watch(dir, RecursiveMode::NonRecursive);
        if let Err(e) = result {
            tracing::debug!(dir = %dir.display(), "cannot watch: {e}; the next refresh walks");
            let mut pending = self.shared.lock();
            pending.watched.remove(dir);
            pending.walk = true;
        }
    }

    /// Whether `dir` has a watch.
    pub fn is_watched(&self, dir: &Path) -> bool {
        self.shared.lock().watched.contains(dir)
    }

    /// Nothing recorded since the last [`RepoWatcher::changes`] (events still in flight aside).
    pub fn is_clean(&self) -> bool {
        let pending = self.shared.lock();
        !pending.walk && pending.paths.is_empty()
    }

    /// Makes the next refresh walk (after a failed refresh, whose changes were taken).
    pub fn force_walk(&self) {
        self.shared.lock().walk = true;
    }

    /// Takes what changed since the last call, after flushing the event queue.
    pub fn changes(&self) -> Changes {
        let number = self.markers.fetch_add(1, Ordering::SeqCst) + 1;
        let marker = self.rag_dir.sync_marker(number);
        let flushed = std::fs::write(&marker, b"").is_ok() && {
            let pending = self.shared.lock();
            let (_pending, waited) = self
                .shared
                .marker_seen
                .wait_timeout_while(pending, SYNC_WAIT, |p| p.synced < number)
                .expect("watch state lock");
            !waited.timed_out()
        };
        let _ = std::fs::remove_file(&marker);
        let mut pending = self.shared.lock();
        let paths = std::mem::take(&mut pending.paths);
        if !flushed {
            tracing::debug!("file watcher did not answer in time; walking the repository");
        }
        if std::mem::take(&mut pending.walk) || !flushed {
            Changes::Walk
        } else {
            Changes::Paths(paths)
        }
    }
}

/// The event handler (notify's thread): records paths, markers and reasons to walk.
fn record(shared: &Shared, rag_dir: &RagDir, event: notify::Result<Event>) {
    let mut pending = shared.lock();
    let event = match event {
        Ok(event) => event,
        Err(e) => {
            tracing::debug!("file watcher error: {e}; the next refresh walks");
            pending.walk = true;
            return;
        }
    };
    if event.need_rescan() {
        pending.walk = true;
    }
    if matches!(event.kind, EventKind::Access(_)) {
        return;
    }
    for path in event.paths {
        match rag_dir.entry(&path) {
            Some(Entry::SyncMarker(n)) => {
                pending.synced = pending.synced.max(n);
                shared.marker_seen.notify_all();
                continue;
            }
            Some(Entry::ExcludeFile) => {
                pending.walk = true;
                continue;
            }
            // The index, manifest and vectors are ours.
            Some(Entry::Own) => continue,
            None if path.starts_with(rag_dir.path()) => continue,
            None => {}
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if matches!(name, ".gitignore" | ".ignore") {
            // Rules changed: which files are indexable is a question for the whole walk.
            pending.walk = true;
        }
        if matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        ) && pending.watched.remove(&path)
        {
            // A watched folder went away or was renamed: its watch is gone with it.
            pending.walk = true;
        }
        pending.paths.insert(path);
    }
}
