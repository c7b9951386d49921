//! The long-lived retriever: owns one repository's index, vector cache and (lazily loaded)
//! embedding model, keeps them fresh with background refresh and embedding threads, and answers
//! queries without ever blocking longer than the configured budgets. Without background
//! embedding (a one-shot process) the model is loaded only when cached vectors cover a query's
//! candidates, so a lexical-only index never loads it.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::chunk::{ChunkOptions, chunk_file, tagged_text};
use super::config::{Fusion, RagConfig};
use super::discover::{self, DiscoveredFile};
use super::embed::{self, Embedder, VectorCache, cosine};
use super::error::RagError;
use super::follow;
use super::format::{active_section, chunk_block, format_context, summary_line};
use super::hash::ContentHash;
use super::index::{CodeIndex, FileHit, IndexedChunk, Manifest, RefreshCounts};
use super::kind::{self, RepoLayout};
use super::query::{
    ActiveFileContext, Retrieval, RetrievalMode, RetrievalQuery, RetrievalStats, RetrievedChunk,
};
use super::rank;
use super::request::Request;
use super::store::RagDir;
use super::tokenize;
use super::watch::{Changes, RepoWatcher};
use promptd_base::tokens::count_tokens;
use promptd_base::workspace::{Workspace, WorkspaceError, WorkspacePolicy};

/// Refreshes triggered by queries closer together than this reuse the last one.
const REFRESH_DEBOUNCE: Duration = Duration::from_secs(2);
/// Extra lexical candidates fetched so that dropping the active file's own chunks still leaves
/// `top_k * candidate_multiplier` references.
const ACTIVE_FILE_SLACK: usize = 16;

/// Phase of an index run, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum IndexPhase {
    Scanning,
    Indexing,
    Embedding,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndexProgress {
    pub phase: IndexPhase,
    pub done: usize,
    pub total: usize,
}

/// What an index run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexSummary {
    /// Files in the index afterwards.
    pub files: usize,
    /// Chunks in the index afterwards.
    pub chunks: usize,
    /// Bytes of the indexed files.
    pub bytes: u64,
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    pub unchanged: usize,
    /// Files re-chunked in this run.
    pub rechunked: usize,
    pub skipped_binary: usize,
    /// Whether the whole tree was walked (else the folder watcher named what changed).
    pub full_walk: bool,
    /// Chunk vectors computed in this run.
    pub embedded: usize,
    pub seconds: f64,
    pub embed_seconds: f64,
    pub warnings: Vec<String>,
}

struct State {
    /// The committed manifest, shared with a running refresh until it changes something.
    manifest: Arc<Manifest>,
    refreshing: bool,
    embedding: bool,
    commits: u64,
    /// False while a refresh has committed only part of its work.
    index_complete: bool,
    last_refresh: Option<Instant>,
    last_error: Option<String>,
    /// What the last refresh left out to stay within the index bounds.
    bounds_warning: Option<String>,
    /// The repository layout read from the manifest of that generation
    /// ([`RagConfig::content_kinds`]).
    layout: Option<(u64, Arc<RepoLayout>)>,
}

struct Inner {
    workspace: Workspace,
    repo: PathBuf,
    rag_dir: RagDir,
    config: RagConfig,
    index: CodeIndex,
    state: Mutex<State>,
    changed: Condvar,
    /// Serialises refreshes (tantivy allows one writer).
    writer_turn: Mutex<()>,
    vectors: VectorCache,
    embedder: OnceLock<Result<Arc<Embedder>, String>>,
    open_warnings: Vec<String>,
    shutdown: AtomicBool,
    /// Folder watcher of a long-lived retriever ([`RagConfig::watch`]); none for a repository
    /// on a file system whose events miss changes made elsewhere.
    watcher: Option<RepoWatcher>,
}

/// A repository's retrieval service. `Send + Sync`: share it behind an `Arc`. Dropping it stops
/// background embedding at the next batch.
pub struct Retriever {
    inner: Arc<Inner>,
}

impl Drop for Retriever {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
    }
}

impl Retriever {
    /// Opens (creating or repairing) the index of `repo_dir`, a folder a trusted caller chose
    /// (the refusals of [`Workspace::open`] apply). Fast: no file is read beyond the manifest;
    /// indexing happens on [`Retriever::index`] or on the first query.
    pub fn open(repo_dir: &Path, config: RagConfig) -> Result<Retriever, RagError> {
        let settings = promptd_base::workspace::WorkspaceSettings::default();
        let workspace = Workspace::open(repo_dir, &WorkspacePolicy::trusted(&settings))
            .map_err(RagError::Workspace)?;
        Retriever::open_workspace(&workspace, config)
    }

    /// [`Retriever::open`] on a checked workspace.
    pub fn open_workspace(workspace: &Workspace, config: RagConfig) -> Result<Retriever, RagError> {
        Retriever::open_with(workspace, config, None)
    }

    /// Opens the workspace's retriever on a new, empty index (the first query rebuilds it):
    /// for an index that failed while in use, for `reason`.
    pub fn open_rebuilt(
        workspace: &Workspace,
        config: RagConfig,
        reason: &str,
    ) -> Result<Retriever, RagError> {
        Retriever::open_with(workspace, config, Some(reason))
    }

    fn open_with(
        workspace: &Workspace,
        config: RagConfig,
        rebuild: Option<&str>,
    ) -> Result<Retriever, RagError> {
        if config.top_k == 0 || config.chunk_lines < 4 || config.overlap >= config.chunk_lines {
            return Err(RagError::Config(format!(
                "topK must be ≥ 1, chunkLines ≥ 4 and overlap < chunkLines (got {}, {}, {})",
                config.top_k, config.chunk_lines, config.overlap
            )));
        }
        let repo = workspace.root().to_path_buf();
        let rag_dir = RagDir::of(&repo);
        discover::ensure_exclude_file(&repo)?;
        // Every answer is fitted to the token budget: the tokenizer loads while the index opens.
        promptd_base::tokens::load_in_background();
        let mut open_warnings = Vec::new();
        let (index, manifest) = match rebuild {
            None => CodeIndex::open(&rag_dir, chunk_options(&config), &mut open_warnings)?,
            Some(reason) => {
                CodeIndex::rebuild(&rag_dir, chunk_options(&config), reason, &mut open_warnings)?
            }
        };
        tracing::debug!(files = manifest.files.len(), "index opened");
        let watcher = if !config.watch {
            None
        } else if let Some(remote) = promptd_base::filesystem::remote_folder(&repo) {
            tracing::info!("{remote}: not watched; refreshes look at the files on disk");
            None
        } else {
            match RepoWatcher::start(&repo) {
                Ok(w) => Some(w),
                Err(e) => {
                    // Still correct without it: every refresh walks the tree.
                    tracing::warn!("{e}; refreshes will walk the whole repository");
                    None
                }
            }
        };
        let inner = Inner {
            vectors: VectorCache::new(rag_dir.path()),
            workspace: workspace.clone(),
            repo,
            rag_dir,
            config,
            index,
            state: Mutex::new(State {
                manifest: Arc::new(manifest),
                refreshing: false,
                embedding: false,
                commits: 0,
                index_complete: true,
                last_refresh: None,
                last_error: None,
                bounds_warning: None,
                layout: None,
            }),
            changed: Condvar::new(),
            writer_turn: Mutex::new(()),
            embedder: OnceLock::new(),
            open_warnings,
            shutdown: AtomicBool::new(false),
            watcher,
        };
        Ok(Retriever {
            inner: Arc::new(inner),
        })
    }

    /// The canonical repository root.
    pub fn repo(&self) -> &Path {
        &self.inner.repo
    }

    pub fn config(&self) -> &RagConfig {
        &self.inner.config
    }

    /// Brings the index up to date now, then (when embeddings are enabled and a model is
    /// available) computes the vectors of new chunks. Blocks until both are done.
    pub fn index(
        &self,
        progress: &(dyn Fn(IndexProgress) + Sync),
    ) -> Result<IndexSummary, RagError> {
        let mut summary = self.inner.run_refresh(None, progress)?;
        if self.inner.config.embeddings {
            match self.inner.embedder() {
                Ok(_) => {
                    let started = Instant::now();
                    summary.embedded = self.inner.embed_missing(progress)?;
                    summary.embed_seconds = started.elapsed().as_secs_f64();
                }
                Err(e) => summary.warnings.push(no_model_warning(&e)),
            }
        }
        Ok(summary)
    }

    /// Starts a refresh (and then embedding) on a background thread unless one is running.
    pub fn refresh_in_background(&self) {
        Inner::spawn_refresh(&self.inner, None);
    }

    /// Starts computing missing chunk vectors on a background thread unless already running.
    pub fn embed_in_background(&self) {
        Inner::spawn_embedding(&self.inner);
    }

    /// Waits until no background refresh or embedding runs (or `timeout` passes); returns
    /// whether everything is idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let state = self.inner.lock_state();
        let (_state, waited) = self
            .inner
            .changed
            .wait_timeout_while(state, timeout, |s| s.refreshing || s.embedding)
            .expect("retriever state lock");
        !waited.timed_out()
    }

    /// Number of chunk vectors cached.
    pub fn cached_vectors(&self) -> usize {
        self.inner.vectors.len()
    }

    /// Answers a query from the index as it is now (refreshing it within the budgets).
    pub fn retrieve(&self, query: &RetrievalQuery) -> Result<Retrieval, RagError> {
        self.inner.retrieve(query)
    }
}

fn chunk_options(config: &RagConfig) -> ChunkOptions {
    ChunkOptions {
        chunk_lines: config.chunk_lines,
        overlap: config.overlap,
    }
}

/// Whether a query can be embedded against cached vectors.
enum QueryModel {
    /// Every candidate has a vector: here is the model.
    Ready(Arc<Embedder>),
    /// This many candidates have no vector yet.
    Missing(usize),
    /// No model could be loaded, for this reason.
    Unavailable(String),
}

fn no_model_warning(reason: &str) -> String {
    format!("embedding model unavailable ({reason}); ranking is lexical only")
}

impl Inner {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("retriever state lock")
    }

    fn embedder(&self) -> Result<Arc<Embedder>, String> {
        self.embedder
            .get_or_init(|| {
                let embedder = Embedder::shared(&self.config).map_err(|e| e.to_string())?;
                let dim = embedder
                    .embed_query("dimension probe")
                    .map_err(|e| e.to_string())?
                    .len();
                if let Some(w) = self
                    .vectors
                    .load(embedder.model_id, dim)
                    .map_err(|e| e.to_string())?
                {
                    tracing::warn!("{w}");
                }
                Ok(embedder)
            })
            .clone()
    }

    /// The model to embed a query whose `candidates` all have cached vectors. Without background
    /// embedding the cached vectors are looked up first, by the model's key, and the model is
    /// loaded only when they cover every candidate.
    fn query_embedder(&self, candidates: &[IndexedChunk]) -> QueryModel {
        let missing = || {
            candidates
                .iter()
                .filter(|c| !self.vectors.contains(&c.hash))
                .count()
        };
        if !self.config.background_embedding && self.embedder.get().is_none() {
            let Some(key) = embed::model_key(&self.config) else {
                return QueryModel::Unavailable(
                    "no model found (set PROMPTD_EMBED_MODEL_DIR or run scripts/setup-model)"
                        .into(),
                );
            };
            if let Err(e) = self.vectors.load_existing(key) {
                tracing::warn!("{e}");
            }
            let missing = missing();
            if missing > 0 {
                return QueryModel::Missing(missing);
            }
        }
        match self.embedder() {
            Ok(embedder) => match missing() {
                0 => QueryModel::Ready(embedder),
                n => QueryModel::Missing(n),
            },
            Err(e) => QueryModel::Unavailable(e),
        }
    }

    /// Ends a failed refresh: it no longer counts as under way, and the next refresh walks the
    /// whole tree (the watcher's pending changes were already taken by this one).
    fn refresh_failed(&self, e: RagError) -> RagError {
        self.lock_state().index_complete = true;
        if let Some(w) = &self.watcher {
            w.force_walk();
        }
        e
    }

    /// Discovers files and refreshes the index; `checkpoint` forces an intermediate commit.
    fn run_refresh(
        &self,
        checkpoint: Option<Instant>,
        progress: &(dyn Fn(IndexProgress) + Sync),
    ) -> Result<IndexSummary, RagError> {
        let _turn = self.writer_turn.lock().expect("index writer lock");
        let started = Instant::now();
        progress(IndexProgress {
            phase: IndexPhase::Scanning,
            done: 0,
            total: 0,
        });
        // Another process (`promptd index`, a second server) may refresh the same index: wait
        // for it, then start from what it committed.
        let _lock = self.rag_dir.lock_index()?;
        let mut manifest = {
            let mut state = self.lock_state();
            state.index_complete = false;
            if let Some(newer) = self.index.newer_manifest(&state.manifest)? {
                state.manifest = Arc::new(newer);
            }
            Arc::clone(&state.manifest)
        };
        let generation_before = manifest.generation;
        let (mut files, full_walk, tree_stamp) = self
            .files_now(&manifest)
            .map_err(|e| self.refresh_failed(e))?;
        let bounds_warning = self.config.index_bounds.apply(&mut files);
        if let Some(w) = &bounds_warning {
            tracing::warn!("{}: {w}", self.repo.display());
        }
        self.lock_state().bounds_warning = bounds_warning.clone();
        let counts: Result<RefreshCounts, RagError> = self.index.refresh(
            &self.repo,
            &mut manifest,
            &files,
            chunk_options(&self.config),
            checkpoint,
            |m, complete| {
                let mut state = self.lock_state();
                if state.manifest.generation != m.generation {
                    state.manifest = Arc::new(m.clone());
                }
                state.commits += 1;
                state.index_complete = complete;
                self.changed.notify_all();
            },
            &|done, total| {
                progress(IndexProgress {
                    phase: IndexPhase::Indexing,
                    done,
                    total,
                })
            },
        );
        let counts = counts.map_err(|e| self.refresh_failed(e))?;
        if let Some((stamp, changed)) = tree_stamp
            && (changed || manifest.generation != generation_before)
        {
            discover::save_stamp(&self.repo, manifest.generation, stamp);
        }
        // After the commit queries already answer from: merging only rewrites segments.
        match self.index.compact() {
            Ok(0) => {}
            Ok(merged) => tracing::debug!(merged, "index segments merged"),
            Err(e) => tracing::warn!("merging index segments failed: {e}"),
        }
        let summary = IndexSummary {
            files: manifest.files.len(),
            chunks: self.index.num_chunks(),
            bytes: manifest.byte_count(),
            added: counts.added,
            changed: counts.changed,
            removed: counts.removed,
            unchanged: counts.unchanged,
            rechunked: counts.chunked,
            skipped_binary: counts.skipped_binary,
            full_walk,
            embedded: 0,
            seconds: started.elapsed().as_secs_f64(),
            embed_seconds: 0.0,
            warnings: self
                .open_warnings
                .iter()
                .chain(&bounds_warning)
                .cloned()
                .collect(),
        };
        let mut state = self.lock_state();
        state.manifest = manifest;
        state.last_refresh = Some(Instant::now());
        tracing::debug!(?counts, "index refreshed");
        Ok(summary)
    }

    /// The indexable files as they are now: the full walk, or — when the watcher can say what
    /// changed — the manifest's files with only the folders holding changed paths re-listed,
    /// or — without a watcher, when the tree stamp of the last walk still holds
    /// ([`discover::files_by_stat`]) — the manifest's files `stat`ed one by one. The bool says
    /// whether the whole tree was walked; without a watcher, the tree stamp to keep and whether
    /// it differs from the one kept.
    #[allow(clippy::type_complexity)]
    fn files_now(
        &self,
        manifest: &Manifest,
    ) -> Result<
        (
            Vec<DiscoveredFile>,
            bool,
            Option<(discover::TreeStamp, bool)>,
        ),
        RagError,
    > {
        let bounds = self.config.index_bounds;
        let Some(watcher) = &self.watcher else {
            if let Some(stamp) = discover::load_stamp(&self.repo, manifest.generation) {
                let known: Vec<&str> = manifest.files.keys().map(String::as_str).collect();
                if let Some((files, next)) = discover::files_by_stat(&self.repo, &stamp, &known)? {
                    let changed = next != stamp;
                    return Ok((files, false, Some((next, changed))));
                }
            }
            let (files, stamp) = discover::discover_stamped(&self.repo, bounds, &|_| {})?;
            return Ok((files, true, Some((stamp, true))));
        };
        let walk = || {
            discover::discover_with(&self.repo, bounds, &|dir| watcher.watch_dir(dir))
                .map(|f| (f, true, None))
        };
        let paths = match watcher.changes() {
            Changes::Walk => return walk(),
            Changes::Paths(paths) => paths,
        };
        // Folders (relative, `/`-separated; "" is the root) whose entries are re-listed.
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        for path in &paths {
            let Some(rel) = path
                .strip_prefix(&self.repo)
                .ok()
                .and_then(discover::rel_to_string)
            else {
                continue;
            };
            if rel.is_empty() {
                continue;
            }
            let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
            if is_dir && watcher.is_watched(path) {
                // Events about a known folder itself (attributes); its entries report their own.
                continue;
            }
            let prefix = format!("{rel}/");
            let was_dir = manifest
                .files
                .range(prefix.clone()..)
                .next()
                .is_some_and(|(p, _)| p.starts_with(&prefix));
            if is_dir || was_dir {
                // A folder appeared, vanished or moved: only a walk knows what it holds.
                return walk();
            }
            let parent = rel.rsplit_once('/').map_or("", |(d, _)| d);
            let parent_abs = self.repo.join(parent);
            if !parent_abs.is_dir() || !watcher.is_watched(&parent_abs) {
                return walk();
            }
            dirs.insert(parent.to_string());
        }
        let excludes = discover::load_excludes(&self.repo)?;
        let mut files: Vec<DiscoveredFile> = manifest
            .files
            .iter()
            .filter(|(rel, _)| !dirs.contains(rel.rsplit_once('/').map_or("", |(d, _)| d)))
            .map(|(rel, record)| DiscoveredFile {
                rel_path: rel.clone(),
                size: record.size,
                mtime_ns: record.mtime_ns,
            })
            .collect();
        for dir in &dirs {
            files.extend(discover::discover_dir(
                &self.repo,
                &self.repo.join(dir),
                &excludes,
            )?);
        }
        files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        Ok((files, false, None))
    }

    fn spawn_refresh(this: &Arc<Inner>, checkpoint: Option<Instant>) -> bool {
        {
            let mut state = this.lock_state();
            if state.refreshing {
                return true;
            }
            match &this.watcher {
                // The watcher knows whether anything changed: no debounce needed.
                Some(w) if w.is_clean() => return false,
                Some(_) => {}
                None if state
                    .last_refresh
                    .is_some_and(|t| t.elapsed() < REFRESH_DEBOUNCE) =>
                {
                    return false;
                }
                None => {}
            }
            state.refreshing = true;
            state.index_complete = false;
        }
        let inner = Arc::clone(this);
        std::thread::spawn(move || {
            let result = inner.run_refresh(checkpoint, &|_| {});
            let embed = {
                let mut state = inner.lock_state();
                state.refreshing = false;
                state.last_error = result.as_ref().err().map(|e| e.to_string());
                if let Err(e) = &result {
                    tracing::warn!("background index refresh failed: {e}");
                }
                inner.changed.notify_all();
                result.is_ok()
                    && inner.config.embeddings
                    && inner.config.background_embedding
                    && inner.config.fusion != Fusion::Lexical
            };
            if embed && inner.embedder().is_ok() {
                Inner::spawn_embedding(&inner);
            }
        });
        true
    }

    fn spawn_embedding(this: &Arc<Inner>) {
        {
            let mut state = this.lock_state();
            if state.embedding {
                return;
            }
            state.embedding = true;
        }
        let inner = Arc::clone(this);
        std::thread::spawn(move || {
            if let Err(e) = inner.embed_missing(&|_| {}) {
                tracing::warn!("background embedding failed: {e}");
            }
            inner.lock_state().embedding = false;
            inner.changed.notify_all();
        });
    }

    /// Computes and caches vectors for every indexed chunk that lacks one.
    fn embed_missing(&self, progress: &(dyn Fn(IndexProgress) + Sync)) -> Result<usize, RagError> {
        let Ok(embedder) = self.embedder() else {
            return Ok(0);
        };
        let mut seen = HashSet::new();
        let mut missing: Vec<(ContentHash, String)> = Vec::new();
        self.index.for_each_chunk(|c| {
            if !self.vectors.contains(&c.hash) && seen.insert(c.hash) {
                missing.push((c.hash, tagged_text(&c.tags, &c.text)));
            }
            true
        })?;
        // Shortest first: each batch pads to the longest text in it.
        missing.sort_by_key(|(_, text)| text.len());
        let total = missing.len();
        let batch = self.config.embed_batch.max(1);
        let mut done = 0;
        progress(IndexProgress {
            phase: IndexPhase::Embedding,
            done,
            total,
        });
        for group in missing.chunks(batch) {
            if self.shutdown.load(Ordering::SeqCst) {
                break;
            }
            let texts: Vec<&str> = group.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder.embed_in_background(&texts, batch)?;
            self.vectors
                .insert(group.iter().map(|(h, _)| *h).zip(vectors).collect())?;
            done += group.len();
            progress(IndexProgress {
                phase: IndexPhase::Embedding,
                done,
                total,
            });
        }
        Ok(done)
    }

    /// The layout of the indexed files ([`RepoLayout`]), read again when the manifest changed:
    /// built from a snapshot of the manifest outside the state lock, the newest generation's
    /// kept.
    fn layout(&self) -> Arc<RepoLayout> {
        let manifest = {
            let state = self.lock_state();
            if let Some((g, layout)) = &state.layout
                && *g == state.manifest.generation
            {
                return Arc::clone(layout);
            }
            Arc::clone(&state.manifest)
        };
        let layout = Arc::new(RepoLayout::from_paths(
            manifest.files.keys().map(String::as_str),
        ));
        let mut state = self.lock_state();
        if state
            .layout
            .as_ref()
            .is_none_or(|(g, _)| *g < manifest.generation)
        {
            state.layout = Some((manifest.generation, Arc::clone(&layout)));
        }
        layout
    }

    /// Makes sure the index is as fresh as the budgets allow; returns warnings and the number
    /// of files indexed at that point.
    fn freshen(this: &Arc<Inner>) -> (Vec<String>, usize) {
        let mut warnings = Vec::new();
        let (empty, commits_before) = {
            let state = this.lock_state();
            (state.manifest.files.is_empty(), state.commits)
        };
        let budget = Duration::from_secs(this.config.index_budget_secs);
        let wait = if empty {
            budget
        } else {
            Duration::from_millis(this.config.refresh_wait_ms)
        };
        let running = Inner::spawn_refresh(this, Some(Instant::now() + budget));
        if !running {
            let state = this.lock_state();
            warnings.extend(state.bounds_warning.clone());
            return (warnings, state.manifest.files.len());
        }
        let wait = wait + Duration::from_millis(if empty { 500 } else { 0 });
        let state = this.lock_state();
        let (state, _) = this
            .changed
            .wait_timeout_while(state, wait, |s| {
                let partial_ready =
                    empty && s.commits > commits_before && !s.manifest.files.is_empty();
                s.refreshing && !s.index_complete && !partial_ready
            })
            .expect("retriever state lock");
        if let Some(e) = state.last_error.clone() {
            warnings.push(format!("index refresh failed: {e}"));
        }
        warnings.extend(state.bounds_warning.clone());
        // A routine refresh running behind an existing index is the design, not a degradation:
        // only a partial first build is worth a warning.
        if state.refreshing && !state.index_complete {
            if empty {
                warnings.push(format!(
                    "index build still running after the {} s budget: answered from the {} files indexed so far",
                    budget.as_secs(),
                    state.manifest.files.len()
                ));
            } else {
                tracing::debug!("answering from the cached index while a refresh runs");
            }
        }
        (warnings, state.manifest.files.len())
    }

    fn retrieve(self: &Arc<Self>, query: &RetrievalQuery) -> Result<Retrieval, RagError> {
        let started = Instant::now();
        let config = &self.config;
        let top_k = query.top_k.unwrap_or(config.top_k).max(1);
        let mut warnings = self.open_warnings.clone();
        let active = match &query.active_file {
            Some(p) => {
                let rel = self.resolve_active(p)?;
                if kind::is_prose_file(&rel) {
                    warnings.push(format!(
                        "{rel} is documentation; not used as the active file"
                    ));
                    None
                } else {
                    Some(rel)
                }
            }
            None => None,
        };
        let (freshness, indexed_files) = Inner::freshen(self);
        warnings.extend(freshness);
        let mut stats = RetrievalStats {
            action: rank::detect_action(&query.query),
            indexed_files,
            indexed_chunks: self.index.num_chunks(),
            ..RetrievalStats::default()
        };
        stats.timings.wait_for_index_ms = ms(started);

        let lexical_started = Instant::now();
        let request = Request::parse(&query.query, config.term_weights());
        let terms = request.term_texts();
        if terms.is_empty() {
            warnings.push("the query has no searchable words".into());
        }
        let limit = top_k * config.candidate_multiplier.max(1);
        let mut candidates = self.index.search(
            &request.terms,
            config.symbol_boost,
            config.path_boost,
            limit
                + if active.is_some() {
                    ACTIVE_FILE_SLACK
                } else {
                    0
                },
            &[],
        )?;
        if let Some(rel) = &active {
            candidates.retain(|c| &c.path != rel);
        }
        candidates.truncate(limit);
        let files = self.file_candidates(&request, active.as_deref(), top_k, &mut candidates)?;
        stats.timings.lexical_ms = ms(lexical_started);

        // Vector scores only when every candidate already has a cached vector: mixing ranked
        // and unranked candidates would bias the order.
        let embed_started = Instant::now();
        let mut query_vector = None;
        if config.embeddings && config.fusion != Fusion::Lexical && !candidates.is_empty() {
            match self.query_embedder(&candidates) {
                QueryModel::Ready(embedder) => {
                    query_vector = Some(embedder.embed_query(&query.query)?);
                }
                QueryModel::Missing(missing) if config.background_embedding => {
                    warnings.push(format!(
                        "vectors for {missing} of {} candidates are not computed yet (background embedding runs); ranking is lexical for now",
                        candidates.len()
                    ));
                    Inner::spawn_embedding(self);
                }
                QueryModel::Missing(missing) => warnings.push(format!(
                    "vectors for {missing} of {} candidates are not cached (`promptd index` computes them); ranking is lexical",
                    candidates.len()
                )),
                QueryModel::Unavailable(e) => warnings.push(no_model_warning(&e)),
            }
        }
        stats.model_loaded = self.embedder.get().is_some_and(Result::is_ok);
        stats.timings.embed_query_ms = ms(embed_started);

        let rank_started = Instant::now();
        let cosines = query_vector.as_ref().map(|q| {
            candidates
                .iter()
                .map(|c| self.vectors.with(&c.hash, |v| cosine(q, v)).unwrap_or(0.0))
                .collect::<Vec<f32>>()
        });
        if cosines.is_some() {
            stats.mode = RetrievalMode::Hybrid;
        }
        let layout = config.content_kinds.then(|| self.layout());
        let mut scored = rank::fuse(
            candidates,
            cosines,
            &files,
            config,
            &request,
            stats.action,
            layout.as_deref(),
        );
        let follow_started = Instant::now();
        let active_abs = active.as_ref().map(|rel| self.repo.join(rel));
        follow::add_definitions(
            &self.index,
            &mut scored,
            &follow::FollowRequest {
                query: &query.query,
                active: active.as_deref().zip(active_abs.as_deref()),
                hits: config.follow_hits,
                max: config.follow_definitions,
            },
        )?;
        stats.timings.follow_ms = ms(follow_started);

        let active_context = match &active {
            Some(rel) => Some(self.active_context(rel, &terms, query_vector.as_deref())?),
            None => None,
        };
        let active_tokens = active_context
            .as_ref()
            .map_or(0, |a| count_tokens(&active_section(a)));
        let available = config.token_budget.saturating_sub(active_tokens + 16);
        let (kept, filter) = rank::filter(
            scored,
            config.threshold,
            top_k,
            config.max_chunks_per_file,
            available,
            |s| chunk_block(&s.chunk),
        );
        stats.filter = filter;
        let chunks = kept;
        let formatted = format_context(active_context.as_ref(), &chunks);
        let tokens = count_tokens(&formatted);
        stats.timings.rank_ms = ms(rank_started);
        stats.timings.total_ms = ms(started);
        Ok(Retrieval {
            active_file: active_context,
            chunks,
            stats,
            warnings,
            formatted,
            tokens,
        })
    }

    /// The whole files that best match `request` (the active file left out), with their BM25
    /// scores, when file-level ranking is on; the best `top_k` of them that no candidate chunk
    /// comes from get their best-matching chunks added to `candidates` (kept in BM25 order).
    fn file_candidates(
        &self,
        request: &Request,
        active: Option<&str>,
        top_k: usize,
        candidates: &mut Vec<IndexedChunk>,
    ) -> Result<Vec<FileHit>, RagError> {
        let config = &self.config;
        if config.file_rank_weight <= 0.0 {
            return Ok(Vec::new());
        }
        let limit = top_k * config.candidate_multiplier.max(1);
        let mut files = self.index.search_files(&request.terms, limit + 1)?;
        files.retain(|f| Some(f.path.as_str()) != active);
        files.truncate(limit);
        let missing: Vec<&str> = files
            .iter()
            .take(top_k)
            .map(|f| f.path.as_str())
            .filter(|p| !candidates.iter().any(|c| c.path == *p))
            .collect();
        if !missing.is_empty() {
            candidates.extend(self.index.search(
                &request.terms,
                config.symbol_boost,
                config.path_boost,
                missing.len() * 2,
                &missing,
            )?);
            candidates.sort_by(|a, b| b.bm25.total_cmp(&a.bm25));
        }
        Ok(files)
    }

    /// Path of the active file relative to the repository; it must be a file inside it.
    fn resolve_active(&self, path: &Path) -> Result<String, RagError> {
        let (resolved, rel) = self.workspace.resolve_inside(path).map_err(|e| match e {
            WorkspaceError::Missing { source, .. } => RagError::ActiveFileMissing {
                path: path.to_path_buf(),
                source,
            },
            WorkspaceError::Outside { resolved, .. } => RagError::ActiveFileOutside {
                path: path.to_path_buf(),
                resolved,
                repo: self.repo.clone(),
            },
            other => RagError::Workspace(other),
        })?;
        if rel.is_empty() || !resolved.is_file() {
            return Err(RagError::ActiveFileOutside {
                path: path.to_path_buf(),
                resolved,
                repo: self.repo.clone(),
            });
        }
        Ok(rel)
    }

    /// Summary and the (up to) two excerpts of the active file that best match the query.
    fn active_context(
        &self,
        rel: &str,
        terms: &[String],
        query_vector: Option<&[f32]>,
    ) -> Result<ActiveFileContext, RagError> {
        let abs = self.repo.join(rel);
        let bytes = std::fs::read(&abs).map_err(|e| RagError::io(&abs, e))?;
        let text = String::from_utf8_lossy(&bytes);
        // Chunked from disk, not from the index: the file being edited is the one most likely
        // to have changed since the last refresh.
        let chunks: Vec<IndexedChunk> = chunk_file(rel, &text, chunk_options(&self.config))
            .into_iter()
            .map(|c| IndexedChunk::from_chunk(rel, c))
            .collect();
        let wanted: HashSet<&str> = terms.iter().map(String::as_str).collect();
        let mut scored: Vec<(f32, IndexedChunk)> = chunks
            .into_iter()
            .map(|c| {
                let mut seen = HashSet::new();
                let body = format!("{}\n{}", c.symbols.join(" "), c.text);
                for t in tokenize::query_terms(&body) {
                    if wanted.contains(t.as_str()) {
                        seen.insert(t);
                    }
                }
                let lexical = seen.len() as f32 / wanted.len().max(1) as f32;
                let vector = query_vector
                    .and_then(|q| self.vectors.with(&c.hash, |v| cosine(q, v)))
                    .unwrap_or(0.0);
                (lexical + vector, c)
            })
            .collect();
        // Stable sort keeps earlier chunks first among equals (the file's head when nothing
        // matches).
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.truncate(2);
        scored.sort_by_key(|(_, c)| c.start_line);
        let excerpts = scored
            .into_iter()
            .map(|(score, c)| RetrievedChunk {
                lexical: 0.0,
                vector: None,
                score,
                chunk: c,
            })
            .collect();
        Ok(ActiveFileContext {
            path: rel.to_string(),
            summary: summary_line(&text),
            excerpts,
        })
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}
