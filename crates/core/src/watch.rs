//! Hot reload: watches every prompt folder and the config file's folder, debounces bursts of file
//! events, reloads the [`PromptLibrary`], and tells the caller when something a client can see
//! changed.
//!
//! Folders are watched, never files, so every way an editor saves is picked up: write in place,
//! truncate + write, write a temporary file and rename it over the original, delete + re-create.
//! Watches are non-recursive (a prompt root and its `system/` folder only), so pointing
//! `--prompts` at a large tree costs nothing; a folder of another tool's dialect
//! (`.claude/commands`, …) is read with its subfolders, so each of them is watched too. The parent folder of each prompt root is watched
//! too, so a root that is deleted and created again is watched again (and reloaded) as soon as
//! it reappears. The reload itself re-parses only files whose content hash changed, keeps the
//! last good version of a file that stopped parsing, and reports when a changed file was still
//! being written ([`ReloadOutcome::settling`]): then this module reloads again after
//! [`SETTLE_RETRY`] until the file is taken. The paths a burst's events name are handed to the
//! reload ([`Touched`]), so that files no event named are not even `stat`ed; a burst the
//! watcher may have lost events of (its queue overflowed), or that named more than
//! [`MAX_TOUCHED`] paths, and the reloads that follow a settling file or a new watch, check
//! every file instead.
//!
//! File events only show changes made through this machine's kernel. A folder on a network or
//! FUSE file system (NFS, SMB, CephFS, sshfs, 9p: a volume replicas share) is therefore also
//! polled ([`Polling`]): every listed file's stamp (size, modification time, inode, symlinks
//! followed) and the config file's are compared with the previous poll's, and the paths whose
//! stamps differ are reloaded like the paths of a burst of events. This module only decides
//! *when* to reload and logs what the reload found.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hashbrown::HashMap;
use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::library::{PromptLibrary, ReloadOutcome};
use crate::registry::{FileStamp, Touched};

/// How long the folders must stay quiet before a burst of events is reloaded.
pub const DEBOUNCE: Duration = Duration::from_millis(30);
/// A steady stream of events still reloads at least this often.
const MAX_DELAY: Duration = Duration::from_secs(1);
/// How soon a reload that found a file still being written is retried.
pub const SETTLE_RETRY: Duration = Duration::from_millis(200);
/// A burst that changed more paths than this (a branch switch) is reloaded by checking every
/// file's stamp rather than by the paths.
const MAX_TOUCHED: usize = 256;
/// How many times the folders to watch are listed again, after the first listing, while the
/// watches are being added.
const MAX_REWATCH_PASSES: usize = 8;
/// How often the folders are polled under [`Polling::Auto`] when one of them is on a file
/// system whose events miss changes made elsewhere, at most (see [`POLL_DUTY`]).
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);
/// Under [`Polling::Auto`], the wait after a poll is at least this many times as long as the
/// poll took: polling a large library takes no more than a twentieth of a core.
const POLL_DUTY: u32 = 20;

/// Whether the watcher also polls the folders, besides taking their file events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Polling {
    /// Every [`DEFAULT_POLL`] when a watched folder is on a network or FUSE file system
    /// ([`promptd_base::filesystem::remote_folder`]); never otherwise.
    #[default]
    Auto,
    /// At this interval, whatever the file systems.
    Every(Duration),
    /// Never: file events only.
    Never,
}

impl Polling {
    /// `None`: automatic; zero: never; otherwise every that many milliseconds.
    pub fn from_millis(millis: Option<u64>) -> Polling {
        match millis {
            None => Polling::Auto,
            Some(0) => Polling::Never,
            Some(ms) => Polling::Every(Duration::from_millis(ms)),
        }
    }
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot start the file watcher: {0}")]
    Start(#[source] notify::Error),
}

/// A running watcher; dropping it stops watching.
pub struct LibraryWatcher {
    /// True once the folders are watched.
    ready: tokio::sync::watch::Receiver<bool>,
    _watcher: Arc<Mutex<RecommendedWatcher>>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for LibraryWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibraryWatcher")
            .field("watching", &*self.ready.borrow())
            .finish_non_exhaustive()
    }
}

impl LibraryWatcher {
    /// Resolves once the folders are watched (at once if adding the watches failed): a load
    /// that starts after it misses no edit.
    pub fn watching(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut ready = self.ready.clone();
        async move {
            // A dropped sender (the task ended) counts as ready: nothing is watched then.
            let _ = ready.wait_for(|r| *r).await;
        }
    }
}

impl Drop for LibraryWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The folders to watch: each on-disk prompt root and every folder below it, and the folder of
/// the config file (whether or not the file exists yet).
pub fn watch_targets(library: &PromptLibrary) -> Vec<PathBuf> {
    let mut out = BTreeSet::new();
    for root in library.roots() {
        if let Some(dir) = root.dir() {
            out.insert(dir.to_path_buf());
            subfolders(dir, &mut out);
            let system = dir.join("system");
            if system.is_dir() {
                out.insert(system);
            }
        }
    }
    let config = library.config_path();
    if let Some(parent) = config.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        out.insert(std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf()));
    }
    out.into_iter().filter(|p| p.is_dir()).collect()
}

/// Every folder below `dir` that its listing reads: symlinked folders are not followed, and
/// folders whose name is not UTF-8 or that cannot be read (a path too long) are left out, as
/// the listing leaves them out (their removal is an event of the folder above).
fn subfolders(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        if d != dir {
            out.insert(d);
        }
        for entry in entries.flatten() {
            let name = entry.file_name();
            let listed = name.to_str().is_some_and(|n| !n.starts_with('.'));
            if listed && entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
}

/// The on-disk prompt roots.
fn root_dirs(library: &PromptLibrary) -> Vec<PathBuf> {
    library
        .roots()
        .iter()
        .filter_map(|r| r.dir().map(Path::to_path_buf))
        .collect()
}

/// Starts watching. Must be called inside a tokio runtime. The watches are added in the
/// background ([`LibraryWatcher::watching`] resolves once they are); what was read before then
/// (the config file, and every file of a library already read) is checked once the library is
/// loaded, for edits made before. `on_change` runs after every reload
/// whose outcome has `changed` set (not after a no-op save); problems are logged to stderr as
/// `file:line: reason`. With `polling`, the folders are also polled (see the module's docs).
pub fn spawn<F, Fut>(
    library: Arc<PromptLibrary>,
    polling: Polling,
    on_change: F,
) -> Result<LibraryWatcher, WatchError>
where
    F: Fn(ReloadOutcome) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<notify::Event>();
    let watcher =
        notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(event) => {
                let _ = tx.send(event);
            }
            Err(e) => tracing::warn!("file watcher: {e}"),
        })
        .map_err(WatchError::Start)?;
    let watcher = Arc::new(Mutex::new(watcher));
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    let roots = root_dirs(&library);
    let config_name = library.config_path().file_name().map(|n| n.to_os_string());
    let task_watcher = watcher.clone();
    let task = tokio::spawn(async move {
        // Adding a watch makes the kernel visit every cached entry of the folder (slow for a
        // folder of many thousand prompts): done on a blocking thread, beside the handshake.
        let adding = (library.clone(), task_watcher.clone(), roots.clone());
        let watching = tokio::task::spawn_blocking(move || {
            let (library, watcher, roots) = adding;
            let mut watched = Vec::new();
            // A folder created after the targets were listed but before its parent was watched
            // sent no event: the targets are listed again until no new one appears (whatever
            // appears later, under a watched parent, is an event).
            for _ in 0..=MAX_REWATCH_PASSES {
                if !rewatch(&watcher, &watch_targets(&library), &mut watched) {
                    break;
                }
            }
            tracing::debug!(?watched, "watching for prompt changes");
            // A root's parent shows the root being deleted and created again.
            let mut parents = Vec::new();
            for parent in roots.iter().filter_map(|r| r.parent()) {
                if parent.is_dir() && !watched.iter().any(|w| w == parent) {
                    add_watch(&watcher, parent, &mut parents);
                }
            }
            tracing::debug!(?parents, "watching prompt roots' parents");
            // The first stamps are taken before the library is read (a deferred one is read
            // once this is done): a change after them is seen by the first poll.
            let poller = poll_interval(polling, &watched).map(|every| {
                let mut stamps = Stamps::default();
                stamps.poll(&library);
                Poller {
                    every,
                    stretch: polling == Polling::Auto,
                    stamps,
                    next: tokio::time::Instant::now() + every,
                }
            });
            (watched, poller)
        });
        let (mut task_watched, mut poller) = match watching.await {
            Ok(watching) => watching,
            Err(e) => {
                tracing::error!("adding the file watches failed: {e}");
                return;
            }
        };
        // What was read before the folders were watched is checked once they are and the
        // library is loaded, as a burst of its own: the config file, read when the library was
        // opened, and every file of a library read before too (one opened deferred is read
        // after its folders are watched).
        let mut owed = Some(if library.is_loaded() {
            None
        } else {
            Some(vec![library.config_path().to_path_buf()])
        });
        ready_tx.send_replace(true);
        library.wait_loaded().await;
        let mut retry: Option<tokio::time::Instant> = None;
        loop {
            // The paths this burst changed; `None`: check every file.
            let mut touched: Option<Vec<PathBuf>> = None;
            if let Some(owed) = owed.take() {
                touched = owed;
            } else {
                let deadline = match (retry, poller.as_ref().map(|p| p.next)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let event = match deadline {
                    Some(at) => match tokio::time::timeout_at(at, rx.recv()).await {
                        Ok(Some(event)) => Some(event),
                        Ok(None) => return,
                        Err(_) => None,
                    },
                    None => match rx.recv().await {
                        Some(event) => Some(event),
                        None => return,
                    },
                };
                let now = tokio::time::Instant::now();
                if event.is_none()
                    && retry.is_none_or(|at| at > now)
                    && let Some(poller) = poller.as_mut()
                {
                    // The poll's deadline passed.
                    let lib = library.clone();
                    let mut stamps = std::mem::take(&mut poller.stamps);
                    let poll = move || {
                        let moved = stamps.poll(&lib);
                        // What the listing allocated and freed, on this pool thread's heap.
                        promptd_base::memory::collect();
                        (stamps, moved)
                    };
                    let Ok((stamps, moved)) = tokio::task::spawn_blocking(poll).await else {
                        tracing::error!("polling the prompt folders failed");
                        return;
                    };
                    poller.stamps = stamps;
                    poller.scheduled_after(now.elapsed());
                    if moved.is_empty() {
                        continue;
                    }
                    tracing::debug!(paths = moved.len(), "polling found changed files");
                    // A reload after a settling file checks every file.
                    if retry.is_none() && moved.len() <= MAX_TOUCHED {
                        touched = Some(moved);
                    }
                } else if let Some(event) = event {
                    if !is_relevant(&event, config_name.as_deref(), &roots) {
                        continue;
                    }
                    let mut paths = Some(Vec::new());
                    note_paths(&mut paths, &event);
                    // Wait for the burst to end: an editor's save is several events.
                    let started = tokio::time::Instant::now();
                    loop {
                        let remaining = MAX_DELAY.saturating_sub(started.elapsed());
                        match tokio::time::timeout(DEBOUNCE.min(remaining), rx.recv()).await {
                            Ok(Some(event)) if !remaining.is_zero() => {
                                note_paths(&mut paths, &event)
                            }
                            Ok(None) => return,
                            _ => break,
                        }
                    }
                    // A reload after a settling file checks every file.
                    if retry.is_none() {
                        touched = paths;
                    }
                }
            }
            retry = None;
            // A folder that appeared (a `system/` folder, a root created again) is watched
            // before a second reload, which picks up what was written into it meanwhile.
            let mut touched = touched.map(Touched::new);
            for _ in 0..2 {
                let lib = library.clone();
                let paths = touched.take();
                let reload = move || lib.reload_touched(paths.as_ref());
                let outcome = match tokio::task::spawn_blocking(reload).await {
                    Ok(o) => o,
                    Err(e) => {
                        tracing::error!("reload failed: {e}");
                        break;
                    }
                };
                for problem in &outcome.problems {
                    tracing::warn!("{problem}");
                }
                if outcome.settling {
                    retry = Some(tokio::time::Instant::now() + SETTLE_RETRY);
                }
                if outcome.changed {
                    tracing::info!("prompts changed; notifying clients");
                    on_change(outcome).await;
                }
                // What the reload freed sits in its blocking-pool thread's heap, which a
                // collection on the runtime's thread cannot reach: that thread (the pool's one
                // idle thread, as a rule) collects it.
                tokio::task::spawn_blocking(promptd_base::memory::collect);
                if !rewatch(&task_watcher, &watch_targets(&library), &mut task_watched) {
                    break;
                }
            }
        }
    });
    Ok(LibraryWatcher {
        ready,
        _watcher: watcher,
        task,
    })
}

/// Adds the paths of a non-read `event` to `paths`; an event that says events were lost, too
/// many paths, or a path that is a symbolic link turn it into `None` (check every file). Files
/// reached through a link change when it is pointed elsewhere, and no event names them: a
/// Kubernetes volume (ConfigMap, Secret) is updated by swapping one link, `..data`, to a new
/// folder its files' links pass through.
fn note_paths(paths: &mut Option<Vec<PathBuf>>, event: &notify::Event) {
    let Some(list) = paths else {
        return;
    };
    if event.need_rescan()
        || list.len() + event.paths.len() > MAX_TOUCHED
        || (!is_read(event) && event.paths.iter().any(|p| is_symlink(p)))
    {
        *paths = None;
        return;
    }
    if !is_read(event) {
        list.extend(event.paths.iter().cloned());
    }
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Forgets watched folders that no longer exist (their watch died with them) and watches every
/// target not watched yet. Returns whether a watch was added.
fn rewatch(
    watcher: &Mutex<RecommendedWatcher>,
    targets: &[PathBuf],
    watched: &mut Vec<PathBuf>,
) -> bool {
    watched.retain(|dir| dir.is_dir());
    let before = watched.len();
    for dir in targets {
        if !watched.contains(dir) {
            // A stale watch on a folder deleted and created again is dropped first.
            let _ = watcher
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unwatch(dir);
            add_watch(watcher, dir, watched);
        }
    }
    watched.len() > before
}

fn add_watch(watcher: &Mutex<RecommendedWatcher>, dir: &Path, watched: &mut Vec<PathBuf>) {
    let mut w = watcher.lock().unwrap_or_else(|e| e.into_inner());
    match w.watch(dir, RecursiveMode::NonRecursive) {
        Ok(()) => watched.push(dir.to_path_buf()),
        Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
    }
}

/// Whether an event only reports a read (an access other than closing a file written to).
fn is_read(event: &notify::Event) -> bool {
    matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write))
}

/// Whether an event can change what is served: a `*.md` file, a `*.toml`, `*.prompt` or
/// `*.prompty` file of a prompt root,
/// the config file, a symbolic link (files may be reached through it), a
/// folder (a `system/` folder, a subfolder of a dialect folder, a prompt root) appearing or
/// disappearing; and an event that says events were lost (the watcher's queue overflowed: it
/// names no path), after which every file is checked. Reads (access events) never count.
fn is_relevant(
    event: &notify::Event,
    config_name: Option<&std::ffi::OsStr>,
    roots: &[PathBuf],
) -> bool {
    if event.need_rescan() {
        return true;
    }
    if is_read(event) {
        return false;
    }
    if matches!(
        event.kind,
        EventKind::Create(notify::event::CreateKind::Folder)
            | EventKind::Remove(notify::event::RemoveKind::Folder)
    ) {
        return true;
    }
    event.paths.iter().any(|p| {
        roots.iter().any(|r| r == p)
            || p.extension().is_some_and(|e| e == "md")
            || (p
                .extension()
                .is_some_and(|e| e == "toml" || e == "prompt" || e == "prompty")
                && roots.iter().any(|r| p.starts_with(r)))
            || p.file_name()
                .is_some_and(|n| Some(n) == config_name || n == "system")
            || is_symlink(p)
    })
}

/// How often to poll, under `polling`, folders among which `watched` are watched (under
/// [`Polling::Auto`], at most: see [`POLL_DUTY`]).
fn poll_interval(polling: Polling, watched: &[PathBuf]) -> Option<Duration> {
    match polling {
        Polling::Never => None,
        Polling::Every(every) => {
            tracing::info!("polling the prompt folders every {every:?}");
            Some(every)
        }
        Polling::Auto => {
            let remote = watched
                .iter()
                .find_map(|dir| promptd_base::filesystem::remote_folder(dir))?;
            tracing::info!(
                "{remote}: the prompt folders are polled every {DEFAULT_POLL:?} (--watch-poll \
                 sets the interval; 0 turns polling off)"
            );
            Some(DEFAULT_POLL)
        }
    }
}

/// The folders' poll: how often, the stamps it found last, and when it is due next.
#[derive(Debug)]
struct Poller {
    every: Duration,
    /// Under [`Polling::Auto`]: the wait after a poll is at least [`POLL_DUTY`] times as long as
    /// the poll took.
    stretch: bool,
    stamps: Stamps,
    next: tokio::time::Instant,
}

impl Poller {
    /// Sets when the next poll is due, after one that `took` this long.
    fn scheduled_after(&mut self, took: Duration) {
        let wait = if self.stretch {
            self.every.max(took * POLL_DUTY)
        } else {
            self.every
        };
        self.next = tokio::time::Instant::now() + wait;
    }
}

/// What a poll compares: the stamp of every file the roots list and of the config file, by
/// path, as the previous poll found them.
#[derive(Debug, Default)]
struct Stamps {
    by_path: HashMap<String, Stamped>,
    /// The number of the last poll.
    polls: u64,
}

#[derive(Debug)]
struct Stamped {
    stamp: Option<FileStamp>,
    /// The last poll that listed the file.
    seen: u64,
}

impl Stamps {
    /// Lists the roots (a root that cannot be listed holds no file) and the config file, keeps
    /// their stamps, and returns the paths listed now or before only, or whose stamps differ.
    fn poll(&mut self, library: &PromptLibrary) -> Vec<PathBuf> {
        self.polls += 1;
        let mut moved = Vec::new();
        let mut note = |path: String, stamp: Option<FileStamp>| match self.by_path.get_mut(&path) {
            Some(known) => {
                known.seen = self.polls;
                if known.stamp != stamp {
                    known.stamp = stamp;
                    moved.push(PathBuf::from(path));
                }
            }
            None => {
                moved.push(PathBuf::from(&path));
                let seen = self.polls;
                self.by_path.insert(path, Stamped { stamp, seen });
            }
        };
        for root in library.roots().iter().filter(|r| r.dir().is_some()) {
            for (file, stamp) in root.list_stamped().into_iter().flatten() {
                note(file.display_path, stamp);
            }
        }
        let config = library.config_path();
        if let Some(stamp) = FileStamp::of_path(&config) {
            note(config.display().to_string(), Some(stamp));
        }
        let polls = self.polls;
        self.by_path.retain(|path, known| {
            let listed = known.seen == polls;
            if !listed {
                moved.push(PathBuf::from(path));
            }
            listed
        });
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, ModifyKind, RenameMode};

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        let mut e = notify::Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        e
    }

    #[test]
    fn a_burst_names_its_paths_unless_events_were_lost_or_too_many() {
        let modify = EventKind::Modify(ModifyKind::Any);
        let mut paths = Some(Vec::new());
        note_paths(&mut paths, &event(modify, &["/p/a.md"]));
        let read = EventKind::Access(AccessKind::Open(notify::event::AccessMode::Read));
        note_paths(&mut paths, &event(read, &["/p/b.md"]));
        assert_eq!(paths, Some(vec![PathBuf::from("/p/a.md")]));
        let lost = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        note_paths(&mut paths, &lost);
        assert_eq!(paths, None, "events were lost: every file is checked");
        note_paths(&mut paths, &event(modify, &["/p/c.md"]));
        assert_eq!(paths, None);
        let mut paths = Some(Vec::new());
        for i in 0..=MAX_TOUCHED {
            note_paths(&mut paths, &event(modify, &[&format!("/p/{i}.md")]));
        }
        assert_eq!(paths, None, "a branch switch: every file is checked");
    }

    #[test]
    fn relevance() {
        let cfg = Some(std::ffi::OsStr::new(".ado-mcp-config.json"));
        let create = EventKind::Create(CreateKind::File);
        assert!(is_relevant(&event(create, &["/p/a.md"]), cfg, &[]));
        assert!(is_relevant(
            &event(create, &["/p/.ado-mcp-config.json"]),
            cfg,
            &[]
        ));
        assert!(is_relevant(&event(create, &["/p/system"]), cfg, &[]));
        assert!(!is_relevant(&event(create, &["/p/.a.md.swp"]), cfg, &[]));
        assert!(!is_relevant(&event(create, &["/p/Cargo.toml"]), cfg, &[]));
        let rename = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert!(is_relevant(
            &event(rename, &["/p/a.md.tmp", "/p/a.md"]),
            cfg,
            &[]
        ));
        let read = EventKind::Access(AccessKind::Open(notify::event::AccessMode::Read));
        assert!(!is_relevant(&event(read, &["/p/a.md"]), cfg, &[]));
        let roots = [PathBuf::from("/p/prompts")];
        assert!(is_relevant(&event(create, &["/p/prompts"]), cfg, &roots));
        assert!(!is_relevant(&event(create, &["/p/other"]), cfg, &roots));
        assert!(is_relevant(
            &event(create, &["/p/prompts/a.prompt"]),
            cfg,
            &roots
        ));
        assert!(is_relevant(
            &event(create, &["/p/prompts/_part.prompt"]),
            cfg,
            &roots
        ));
        assert!(is_relevant(
            &event(create, &["/p/prompts/b.prompty"]),
            cfg,
            &roots
        ));
        assert!(!is_relevant(&event(create, &["/p/x.prompt"]), cfg, &roots));
        assert!(is_relevant(
            &event(create, &["/p/prompts/git/commit.toml"]),
            cfg,
            &roots
        ));
        let folder = EventKind::Create(CreateKind::Folder);
        assert!(is_relevant(
            &event(folder, &["/p/prompts/new"]),
            cfg,
            &roots
        ));
        // The queue overflowed: no path, and whatever was lost may have been a prompt.
        let lost = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        assert!(is_relevant(&lost, cfg, &roots));
    }

    #[tokio::test]
    async fn a_library_read_before_its_folders_are_watched_is_checked_once_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "First.\n").unwrap();
        let library = Arc::new(
            PromptLibrary::open(crate::library::LibraryOptions {
                cwd: dir.path().to_path_buf(),
                prompt_dirs: vec![dir.path().to_path_buf()],
                ..Default::default()
            })
            .unwrap(),
        );
        // Edited after the read, before any watch exists: no event will ever name it.
        std::fs::write(&file, "Second, and longer.\n").unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let watcher = spawn(library.clone(), Polling::Never, move |outcome| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(outcome.changed);
            }
        })
        .unwrap();
        watcher.watching().await;
        let changed = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("no reload after the folders were watched");
        assert_eq!(changed, Some(true));
        let snapshot = library.snapshot();
        let prompt = snapshot.registry.get("a").unwrap();
        assert!(prompt.body.contains("Second"), "{}", prompt.body);
    }
    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_relevant_and_makes_its_burst_check_every_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("v1")).unwrap();
        let link = dir.path().join("..data");
        std::os::unix::fs::symlink("v1", &link).unwrap();
        let link = link.to_str().unwrap();
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        let swap = event(renamed, &[&format!("{}_tmp", link), link]);
        assert!(is_relevant(&swap, None, &[dir.path().to_path_buf()]));
        let mut paths = Some(Vec::new());
        note_paths(&mut paths, &swap);
        assert_eq!(
            paths, None,
            "files reached through the link: every file is checked"
        );
        // A plain folder is relevant too, but names its own paths.
        let folder = dir.path().join("v1");
        let created = event(
            EventKind::Create(CreateKind::Folder),
            &[folder.to_str().unwrap()],
        );
        let mut paths = Some(Vec::new());
        note_paths(&mut paths, &created);
        assert_eq!(paths, Some(vec![folder]));
    }

    #[test]
    fn folders_on_local_file_systems_are_not_polled_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            poll_interval(Polling::Auto, &[dir.path().to_path_buf()]),
            None
        );
        assert_eq!(poll_interval(Polling::Never, &[]), None);
        let every = Duration::from_millis(250);
        assert_eq!(poll_interval(Polling::Every(every), &[]), Some(every));
        assert_eq!(Polling::from_millis(None), Polling::Auto);
        assert_eq!(Polling::from_millis(Some(0)), Polling::Never);
        assert_eq!(Polling::from_millis(Some(250)), Polling::Every(every));
    }

    #[test]
    fn a_poll_names_files_added_removed_and_restamped_but_not_the_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["same", "edited", "removed"] {
            std::fs::write(dir.path().join(format!("{name}.md")), name).unwrap();
        }
        let library = PromptLibrary::open_deferred(crate::library::LibraryOptions {
            cwd: dir.path().to_path_buf(),
            prompt_dirs: vec![dir.path().to_path_buf()],
            ..Default::default()
        })
        .unwrap();
        let mut stamps = Stamps::default();
        assert_eq!(
            stamps.poll(&library).len(),
            3,
            "the first poll names every file"
        );
        assert!(stamps.poll(&library).is_empty());
        // Same length, an older modification time: only the stamp's inode and time tell.
        let edited = dir.path().join("edited.md");
        let replacement = dir.path().join("edited.tmp");
        std::fs::write(&replacement, "EDITED").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(&replacement)
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::rename(&replacement, &edited).unwrap();
        std::fs::remove_file(dir.path().join("removed.md")).unwrap();
        std::fs::write(dir.path().join("added.md"), "added").unwrap();
        std::fs::write(dir.path().join(".ado-mcp-config.json"), "{}").unwrap();
        let mut moved = stamps.poll(&library);
        moved.sort();
        let named: Vec<_> = moved
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            named,
            [
                ".ado-mcp-config.json",
                "added.md",
                "edited.md",
                "removed.md"
            ]
        );
    }
}
