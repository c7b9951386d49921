//! The stage calls both adapters make, built once below them: [`Stages::enhance`] and
//! [`Stages::compose`] take a catalog request ([`EnhanceRequest`], [`ComposeInput`]) and the
//! [`Caller`] (which folders it may use, where its workspace defaults to), resolve and check the
//! workspace, run the pipeline and splice every warning into the result. [`Stages::run`] runs
//! a prompt against the model and records the run ([`run`]). The CLI, the MCP server and the
//! studio only convert to and from these calls.
//!
//! [`Stages`] holds the long-lived collaborators: the secret guard, the open retrievers, and the
//! LLM client. It also owns the policy for long-lived resources: a stage's blocking work runs on
//! the blocking pool ([`blocking`]), never on the runtime serving requests; at most
//! `limits.maxRepositories` repositories stay open ([`RepositoryRetrievers`], least recently used
//! closed first); a client's roots are asked once per session and forgotten when it says they
//! changed ([`ClientRoots`]). Every call reads the settings
//! of one library snapshot (`workspace`, `guard`, `rag`, `compose`, `limits`), so a reloaded
//! config takes effect on the next call: the guard is rebuilt once when the `guard` section
//! changes, and a repository's retriever is reopened when its retrieval settings change.
//!
//! Errors are typed: [`StageError::is_caller_error`] tells a bad request (JSON-RPC -32602) from a
//! server fault such as a broken registry template or config section (-32603).
//!
//! Nothing here is slow at construction: the guard compiles its rules on first use, retrievers
//! open on the first request for their repository, so `promptd serve` starts at once.

pub mod catalog;
pub mod compose;
pub mod enhance;
pub mod llm;
pub mod run;
pub mod tools;

use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lru::LruCache;

use crate::catalog::{ComposeInput, EnhanceRequest};
use crate::compose::{
    ComposeError, ComposeRequest, ComposeSettings, ComposedPrompt, DocChunk, compose_prompt,
};
use crate::enhance::{
    ContextChunk, ContextFuture, ContextRetriever, EnhanceError, EnhanceResult, Enhancer,
    RetrievedContext, ValidatedRequest,
};
use crate::llm::{ChatClient, LlmConfig};
use promptd_base::limits::Limits;
use promptd_base::panics::panic_message;
use promptd_core::library::{PromptLibrary, Snapshot};
use promptd_guard::{Guard, GuardError, GuardSettings, ScanInput, SecretFinding};
use promptd_rag::{
    IndexProgress, IndexSummary, RagConfig, RagError, Retrieval, RetrievalQuery, Retriever,
};

use promptd_base::workspace::{
    ClientOrigin, Workspace, WorkspaceError, WorkspacePolicy, WorkspaceSettings,
};

/// Why a stage call failed.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// A request field is missing or empty.
    #[error("`{field}`: {message}")]
    InvalidField {
        field: &'static str,
        message: String,
    },
    /// A request field names a folder or file the caller may not use.
    #[error("`{field}`: {error}")]
    Workspace {
        field: &'static str,
        error: WorkspaceError,
    },
    /// A config section the call needs is invalid (the message names the file and section).
    #[error("{message}")]
    Config {
        section: &'static str,
        message: String,
    },
    /// The config's `rag` section is invalid.
    #[error(transparent)]
    Rag(RagError),
    #[error(transparent)]
    Enhance(#[from] EnhanceError),
    #[error(transparent)]
    Compose(#[from] ComposeError),
}

impl StageError {
    /// Whether the caller is at fault (a bad argument), not the server (a broken template,
    /// config or scanner).
    pub fn is_caller_error(&self) -> bool {
        match self {
            StageError::InvalidField { .. } | StageError::Workspace { .. } => true,
            StageError::Config { .. } | StageError::Rag(_) => false,
            StageError::Enhance(e) => e.is_caller_error(),
            StageError::Compose(e) => e.is_caller_error(),
        }
    }
}

/// A config section of `snap`, its defaults when absent.
fn section<T: serde::de::DeserializeOwned + Default>(
    snap: &Snapshot,
    section: &'static str,
) -> Result<T, StageError> {
    snap.config
        .section_as(section)
        .map_err(|message| StageError::Config { section, message })
}

/// Who calls a stage: which folders it may use as a workspace, and where its workspace is when
/// the request names none. The workspace policy ([`WorkspacePolicy`]) decides which folders
/// each caller may use, and so where retrieval may write its index (`<workspace>/.rag/`).
#[derive(Debug, Clone)]
pub enum Caller {
    /// The local user (the CLI): any folder that is not refused; no folder given means `cwd`.
    Trusted { cwd: PathBuf },
    /// An MCP client: only folders inside the declared roots its `origin` lets count (a stdio
    /// client's all; an HTTP client's only with the server's token and inside
    /// `workspace.httpRoots`), the server's directory or a configured folder. No folder given
    /// means its first honoured root, else the server's directory (with a warning). Roots that
    /// do not count are named in a warning.
    Client {
        roots: Vec<PathBuf>,
        server_dir: Option<PathBuf>,
        origin: ClientOrigin,
    },
}

impl Caller {
    /// The caller's workspace policy under the `workspace` settings.
    pub fn policy(&self, settings: &WorkspaceSettings) -> WorkspacePolicy {
        match self {
            Caller::Trusted { .. } => WorkspacePolicy::trusted(settings),
            Caller::Client {
                roots,
                server_dir,
                origin,
            } => WorkspacePolicy::client(settings, roots, server_dir.as_deref(), *origin),
        }
    }

    /// The folder a call works in: `given` (the request's `field`), else the caller's default
    /// under `policy` (its [`Caller::policy`]); with the warnings to pass on: roots the policy
    /// ignores, and a default that is a guess.
    pub fn dir(
        &self,
        field: &'static str,
        given: Option<PathBuf>,
        policy: &WorkspacePolicy,
    ) -> Result<(PathBuf, Vec<String>), StageError> {
        let mut warnings: Vec<String> = policy
            .ignored_roots()
            .map(str::to_owned)
            .into_iter()
            .collect();
        if let Some(dir) = given {
            return Ok((dir, warnings));
        }
        match self {
            Caller::Trusted { cwd } => Ok((cwd.clone(), warnings)),
            Caller::Client { server_dir, .. } => match (policy.roots().first(), server_dir) {
                (Some(root), _) => Ok((root.clone(), warnings)),
                (None, Some(cwd)) => {
                    warnings.push(format!(
                        "no {field} given and the client offers no roots the server honours: \
                         using the server's directory {}",
                        cwd.display()
                    ));
                    Ok((cwd.clone(), warnings))
                }
                (None, None) => Err(StageError::InvalidField {
                    field,
                    message: "missing, and the client offers no roots the server honours".into(),
                }),
            },
        }
    }
}

/// One client session's roots: asked on the first call that needs them and kept until the
/// client says they changed ([`ClientRoots::changed`], on `notifications/roots/list_changed`).
/// An answer that did not come (an error, a timeout) is not kept: the next call asks again.
#[derive(Debug, Default)]
pub struct ClientRoots {
    /// The roots and the generation they were asked in.
    known: Mutex<(u64, Option<Vec<PathBuf>>)>,
}

impl ClientRoots {
    /// The roots, from `ask` when none are kept (`None` from it: no answer).
    pub async fn get<F>(&self, ask: impl FnOnce() -> F) -> Vec<PathBuf>
    where
        F: std::future::Future<Output = Option<Vec<PathBuf>>>,
    {
        let generation = {
            let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(roots) = &known.1 {
                return roots.clone();
            }
            known.0
        };
        let Some(roots) = ask().await else {
            return Vec::new();
        };
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        // Roots that changed while they were being asked for are asked again next time.
        if known.0 == generation {
            known.1 = Some(roots.clone());
        }
        roots
    }

    /// Forgets the roots: the client changed them.
    pub fn changed(&self) {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        known.0 += 1;
        known.1 = None;
    }
}

/// Checks an enhance request: the prompt is not empty, `workingDirectory` is a workspace
/// `policy` admits, and the active file resolves (symlinks followed) to a file inside it.
pub fn validate_enhance(
    req: &EnhanceRequest,
    policy: &WorkspacePolicy,
) -> Result<ValidatedRequest, StageError> {
    if req.prompt.trim().is_empty() {
        return Err(StageError::InvalidField {
            field: "prompt",
            message: "must not be empty".into(),
        });
    }
    let Some(dir) = req.working_directory.as_deref() else {
        return Err(StageError::InvalidField {
            field: "workingDirectory",
            message: "missing".into(),
        });
    };
    let invalid = |field| move |error| StageError::Workspace { field, error };
    let repo = Workspace::open(dir, policy).map_err(invalid("workingDirectory"))?;
    let (active_file, active_file_rel) = match &req.active_file {
        None => (None, None),
        Some(f) => {
            let (real, rel) = repo.file(f).map_err(invalid("activeFile"))?;
            (Some(real), Some(rel))
        }
    };
    Ok(ValidatedRequest {
        prompt: req.prompt.clone(),
        repo,
        active_file,
        active_file_rel,
    })
}

/// The open retrievers, one per repository, at most [`Limits::max_repositories`] of them: a
/// retriever opens on its repository's first request, and opening one more closes the least
/// recently used (its folder watcher, threads and memory go once its last request is answered).
/// A retriever opened under other retrieval settings than a call's is reopened under the call's.
/// A retriever whose index fails while in use (a search error) is replaced at once by one on a
/// rebuilt index; one that panics is marked damaged, and the next request rebuilds it.
pub struct RepositoryRetrievers {
    open: Mutex<LruCache<PathBuf, Slot>>,
}

enum Slot {
    Open(Arc<Retriever>),
    /// Panicked while answering: the next request opens it on a rebuilt index.
    Damaged(String),
}

impl Default for RepositoryRetrievers {
    fn default() -> RepositoryRetrievers {
        RepositoryRetrievers::new(Limits::default().max_repositories)
    }
}

impl std::fmt::Debug for RepositoryRetrievers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepositoryRetrievers")
            .field("open", &self.slots().len())
            .finish_non_exhaustive()
    }
}

fn capacity(max: usize) -> NonZeroUsize {
    NonZeroUsize::new(max).unwrap_or(NonZeroUsize::MIN)
}

impl RepositoryRetrievers {
    /// Room for `max` open repositories.
    pub fn new(max: usize) -> RepositoryRetrievers {
        RepositoryRetrievers {
            open: Mutex::new(LruCache::new(capacity(max))),
        }
    }

    fn slots(&self) -> MutexGuard<'_, LruCache<PathBuf, Slot>> {
        // A panic while the map was held cannot leave it torn (each change is one insert).
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps at most `max` repositories open from now on, closing the least recently used.
    pub fn bound(&self, max: usize) {
        let closed: Vec<Slot> = {
            let mut open = self.slots();
            let cap = capacity(max);
            if open.cap() == cap {
                return;
            }
            let mut closed = Vec::new();
            while open.len() > cap.get() {
                closed.extend(open.pop_lru().map(|(_, slot)| slot));
            }
            open.resize(cap);
            closed
        };
        drop(closed);
    }

    /// Remembers `slot` for `repo`; what it pushes out is dropped after the lock is released.
    fn keep(&self, repo: PathBuf, slot: Slot) {
        let pushed_out = self.slots().push(repo, slot);
        drop(pushed_out);
    }

    /// The retriever of a workspace under `config`.
    pub fn get(
        &self,
        workspace: &Workspace,
        config: &RagConfig,
    ) -> Result<Arc<Retriever>, RagError> {
        let repo = workspace.root();
        // Held while opening (opening is fast), so two first requests open one retriever.
        let mut open = self.slots();
        let rebuild = match open.get(repo) {
            Some(Slot::Open(r)) if r.config() == config => return Ok(r.clone()),
            // Opened under other settings: reopened under these.
            Some(Slot::Open(_)) | None => None,
            Some(Slot::Damaged(reason)) => Some(reason.clone()),
        };
        let r = match &rebuild {
            None => Retriever::open_workspace(workspace, config.clone()),
            Some(reason) => Retriever::open_rebuilt(workspace, config.clone(), reason),
        };
        let r = Arc::new(r?);
        let pushed_out = open.push(repo.to_path_buf(), Slot::Open(r.clone()));
        drop(open);
        drop(pushed_out);
        Ok(r)
    }

    /// Retrieves for `query` in `workspace` under `config`.
    pub fn retrieval(
        &self,
        workspace: &Workspace,
        config: &RagConfig,
        query: &str,
        active_file: Option<&Path>,
    ) -> Result<Retrieval, RagError> {
        let q = RetrievalQuery {
            query: query.to_string(),
            active_file: active_file.map(Path::to_path_buf),
            top_k: None,
        };
        self.retrieve(workspace, config, &q)
    }

    /// Answers `query` in `workspace` under `config`: the one retrieval path of the CLI
    /// (`promptd context`) and the stages. An index that fails while answering is rebuilt and
    /// the query answered again; a panic marks the retriever damaged and goes on unwinding.
    pub fn retrieve(
        &self,
        workspace: &Workspace,
        config: &RagConfig,
        query: &RetrievalQuery,
    ) -> Result<Retrieval, RagError> {
        self.repairing(workspace, config, |r| r.retrieve(query))
    }

    /// Brings the index of `workspace` up to date under `config` (`promptd index`), rebuilding
    /// it when it fails as retrieval does.
    pub fn index(
        &self,
        workspace: &Workspace,
        config: &RagConfig,
        progress: &(dyn Fn(IndexProgress) + Sync),
    ) -> Result<IndexSummary, RagError> {
        self.repairing(workspace, config, |r| r.index(progress))
    }

    /// Runs `work` on the retriever of `workspace`; when it fails with an index error, on a
    /// retriever over a rebuilt index (whose warning joins its answer).
    fn repairing<T>(
        &self,
        workspace: &Workspace,
        config: &RagConfig,
        work: impl Fn(&Retriever) -> Result<T, RagError>,
    ) -> Result<T, RagError> {
        let repo = workspace.root().to_path_buf();
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.get(workspace, config).map(|r| work(&r))
        }));
        match answer {
            Ok(Err(open_failed)) => Err(open_failed),
            Ok(Ok(Ok(r))) => Ok(r),
            Ok(Ok(Err(e @ RagError::Index { .. }))) => {
                let rebuilt = Arc::new(Retriever::open_rebuilt(
                    workspace,
                    config.clone(),
                    &e.to_string(),
                )?);
                self.keep(repo, Slot::Open(rebuilt.clone()));
                work(&rebuilt)
            }
            Ok(Ok(Err(e))) => Err(e),
            Err(panic) => {
                let reason = format!("panicked: {}", panic_message(panic.as_ref()));
                tracing::error!("retrieval in {}: {reason}", repo.display());
                self.keep(repo, Slot::Damaged(reason));
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Retrieved chunks as composer docs, with the retrieval's warnings. The current file
    /// selects rules, not docs: retrieval ranks every file, the current one included, as
    /// reference material.
    pub fn docs(
        &self,
        workspace: &Workspace,
        config: &RagConfig,
        query: &str,
    ) -> Result<(Vec<DocChunk>, Vec<String>), RagError> {
        let r = self.retrieval(workspace, config, query, None)?;
        let docs = r.chunks.iter().map(DocChunk::retrieved).collect();
        Ok((docs, r.warnings))
    }

    /// Enhance's context: the active file's summary and excerpts first, then the reference
    /// chunks.
    fn context(
        &self,
        repo: &Workspace,
        config: &RagConfig,
        query: &str,
        active_file: Option<&Path>,
    ) -> Result<RetrievedContext, RagError> {
        let r = self.retrieval(repo, config, query, active_file)?;
        let mut chunks: Vec<ContextChunk> = Vec::new();
        if let Some(active) = &r.active_file {
            chunks.push(ContextChunk {
                path: active.path.clone(),
                start_line: 1,
                text: active.summary.clone(),
            });
            chunks.extend(active.excerpts.iter().map(context_chunk));
        }
        chunks.extend(r.chunks.iter().map(context_chunk));
        Ok(RetrievedContext {
            formatted: r.formatted,
            chunks,
            warnings: r.warnings,
        })
    }
}

/// The shared retrievers under one call's settings: the enhance stage's [`ContextRetriever`].
pub struct RetrieversUnder {
    pub retrievers: Arc<RepositoryRetrievers>,
    pub config: RagConfig,
}

impl ContextRetriever for RetrieversUnder {
    fn retrieve(
        &self,
        repo: Workspace,
        query: String,
        active_file: Option<PathBuf>,
    ) -> ContextFuture {
        let (retrievers, config) = (self.retrievers.clone(), self.config.clone());
        Box::pin(async move {
            let context = blocking(move || {
                retrievers.context(&repo, &config, &query, active_file.as_deref())
            })
            .await?;
            Ok(context)
        })
    }
}

/// Runs a stage's blocking work (file reads, indexing, secret scans, rendering) on the blocking
/// pool, never on the runtime that serves requests. A panic there goes on unwinding in the
/// caller, whose panic boundary answers it as a server fault.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(answer) => answer,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            // Cancelled: only when the runtime is shutting down, which ends this call too.
            Err(e) => panic!("blocking stage work cancelled: {e}"),
        },
    }
}

/// The guard built from one `guard` section, or why it could not be (a broken rules file).
struct BuiltGuard {
    settings: GuardSettings,
    guard: Result<Arc<Guard>, Arc<GuardError>>,
}

/// The shared collaborators.
pub struct Stages {
    library: Arc<PromptLibrary>,
    /// One request and exit: no folder watcher on a repository.
    one_shot: bool,
    /// The guard of the last `guard` section seen, built on first use.
    guard: Mutex<Option<BuiltGuard>>,
    retrievers: Arc<RepositoryRetrievers>,
    /// From the environment (`LLM_*`); its response cap is set per call from the limits.
    llm: Option<ChatClient>,
    /// The served tool definitions.
    tools: tools::ToolRegistry,
    /// The HTTP client of the last `tools.http` settings seen.
    http: Mutex<Option<tools::http::HttpExecutor>>,
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages")
            .field("llm", &self.llm.as_ref().map(ChatClient::config))
            .finish_non_exhaustive()
    }
}

impl Stages {
    /// The collaborators over `library`, for a long-lived server. The config's `guard` and `rag`
    /// sections are checked now, so a broken one stops the server from starting; later calls
    /// read them again from the snapshot they run on. The environment (`GITLEAKS_*`, `LLM_*`)
    /// wins over the config file.
    pub fn new(library: Arc<PromptLibrary>) -> Result<Stages, StageError> {
        Stages::build(library, false)
    }

    /// For one request and exit (`promptd enhance`, `promptd compose`): retrieval runs
    /// [`RagConfig::one_shot`], whatever the config says.
    pub fn one_shot(library: Arc<PromptLibrary>) -> Result<Stages, StageError> {
        Stages::build(library, true)
    }

    fn build(library: Arc<PromptLibrary>, one_shot: bool) -> Result<Stages, StageError> {
        let stages = Stages {
            library,
            one_shot,
            guard: Mutex::new(None),
            retrievers: Arc::default(),
            llm: LlmConfig::from_env().map(ChatClient::new),
            tools: tools::ToolRegistry::default(),
            http: Mutex::new(None),
        };
        let snap = stages.library.snapshot();
        section::<GuardSettings>(&snap, "guard")?;
        stages.rag_config(&snap)?;
        section::<tools::ToolsSettings>(&snap, tools::SECTION)?;
        Ok(stages)
    }

    /// The library the stages render from.
    pub fn library(&self) -> &Arc<PromptLibrary> {
        &self.library
    }

    /// Retrieval settings of `snap`: its `rag` section, bounded by its limits (which also bound
    /// how many repositories stay open).
    fn rag_config(&self, snap: &Snapshot) -> Result<RagConfig, StageError> {
        self.retrievers.bound(snap.limits.max_repositories);
        let rag = RagConfig::from_config(&snap.config, &snap.limits).map_err(StageError::Rag)?;
        Ok(if self.one_shot { rag.one_shot() } else { rag })
    }

    /// The guard of `snap`'s `guard` section: built on first use, rebuilt when the section
    /// changes. A broken rules file is an error every time (fail closed).
    fn guard(&self, snap: &Snapshot) -> Result<Result<Arc<Guard>, Arc<GuardError>>, StageError> {
        let settings: GuardSettings = section(snap, "guard")?;
        // A panic while building leaves no guard behind: the next call builds again.
        let mut built = self.guard.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(b) = built.as_ref().filter(|b| b.settings == settings) {
            return Ok(b.guard.clone());
        }
        let guard = Guard::new(settings.to_options())
            .map(Arc::new)
            .map_err(Arc::new);
        *built = Some(BuiltGuard {
            settings,
            guard: guard.clone(),
        });
        Ok(guard)
    }

    /// The LLM client under `snap`'s limits.
    fn llm(&self, snap: &Snapshot) -> Option<ChatClient> {
        self.llm
            .clone()
            .map(|c| c.with_max_response_bytes(snap.limits.max_llm_response_bytes))
    }

    /// Runs a prompt against the configured model (`LLM_*`, as `enhance`): rendered from the
    /// current snapshot, or for `NAME@REV` the snapshot at that git revision (only a prompt
    /// `visibility` serves), each piece of the answer handed to
    /// `on_text` as it streams, the run recorded under the project's `.promptd/runs/` (a failed
    /// call too: its record says why).
    pub async fn run(
        self: &Arc<Self>,
        req: run::RunRequest,
        visibility: promptd_core::library::Visibility,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<run::RunRecord, run::RunError> {
        let stages = Arc::clone(self);
        let (prepared, llm) = blocking(move || {
            // `NAME@REV`: rendered from the snapshot at the revision.
            let promptd_core::library::Resolved {
                snapshot: snap,
                name,
                revision,
            } = stages.library.resolve(&req.prompt)?;
            let req = run::RunRequest {
                prompt: name,
                ..req
            };
            let mut prepared = run::prepare(&snap, &req, visibility, stages.library.clock())?;
            prepared.revision = revision;
            Ok::<_, run::RunError>((prepared, stages.llm(&snap)))
        })
        .await?;
        self.call_and_record(prepared, llm, on_text).await
    }

    /// Runs a variant a comparison already rendered ([`render_variant`]) as [`run`](Self::run)
    /// runs its spec with the variant's arguments and `settings`: the same messages and record,
    /// from the snapshot the variant was rendered from, without rendering it again.
    ///
    /// [`render_variant`]: promptd_core::compare::render_variant
    pub async fn run_rendered(
        &self,
        variant: &promptd_core::compare::RenderedVariant,
        settings: &crate::llm::ModelSettings,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<run::RunRecord, run::RunError> {
        let prepared = run::prepare_rendered(variant, settings);
        let llm = self.llm(&variant.render.snapshot);
        self.call_and_record(prepared, llm, on_text).await
    }

    /// Calls the model with a prepared run and records it.
    async fn call_and_record(
        &self,
        prepared: run::PreparedRun,
        llm: Option<ChatClient>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<run::RunRecord, run::RunError> {
        let llm = llm.ok_or(run::RunError::NotConfigured)?;
        let record = run::call(&llm, prepared, on_text).await;
        let store = self.runs();
        let saved = record.clone();
        blocking(move || store.save(&saved)).await?;
        Ok(record)
    }

    /// The recorded runs of the library's project.
    pub fn runs(&self) -> run::RunStore {
        run::RunStore::for_project(self.library.cwd())
    }

    /// The model a run asks for when neither the prompt nor the caller names one; `None` when
    /// no model is configured.
    pub fn default_model(&self) -> Option<&str> {
        self.llm.as_ref().map(|c| c.config().model.as_str())
    }

    /// The folder a call asks to work in: the request's `field` (`given`), else the caller's
    /// default; the policy it is checked against, the caller's under `snap`'s `workspace`
    /// section; and the caller's warnings (ignored roots, a guessed folder).
    fn requested_dir(
        &self,
        snap: &Snapshot,
        caller: &Caller,
        field: &'static str,
        given: Option<PathBuf>,
    ) -> Result<(PathBuf, WorkspacePolicy, Vec<String>), StageError> {
        let settings =
            WorkspaceSettings::from_config(&snap.config).map_err(|message| StageError::Config {
                section: promptd_base::workspace::SECTION,
                message,
            })?;
        let policy = caller.policy(&settings);
        let (dir, warnings) = caller.dir(field, given, &policy)?;
        Ok((dir, policy, warnings))
    }

    /// Rewrites `req.prompt` into an execution-ready prompt grounded in its repository
    /// (`workingDirectory`, else the caller's default). The caller's warnings (ignored roots, a
    /// guessed folder) come first among the result's warnings. Checking the workspace, building
    /// the guard and retrieving run on the blocking pool; the LLM call is awaited.
    pub async fn enhance(
        self: &Arc<Self>,
        req: EnhanceRequest,
        caller: Caller,
    ) -> Result<EnhanceResult, StageError> {
        let stages = Arc::clone(self);
        let (enhancer, validated, warnings) =
            blocking(move || stages.enhancer(req, &caller)).await?;
        Ok(enhancer.enhance(&validated, warnings).await?)
    }

    /// The enhance pipeline for `req` (its workspace checked, the guard built), with the
    /// caller's warnings.
    fn enhancer(
        &self,
        mut req: EnhanceRequest,
        caller: &Caller,
    ) -> Result<(Enhancer, ValidatedRequest, Vec<String>), StageError> {
        let snap = self.library.snapshot();
        let given = req.working_directory.take();
        let (dir, policy, warnings) =
            self.requested_dir(&snap, caller, "workingDirectory", given)?;
        req.working_directory = Some(dir);
        let validated = validate_enhance(&req, &policy)?;
        let enhancer = Enhancer {
            snapshot: snap.clone(),
            clock: *self.library.clock(),
            guard: self.guard(&snap)?,
            retriever: Arc::new(RetrieversUnder {
                retrievers: self.retrievers.clone(),
                config: self.rag_config(&snap)?,
            }),
            llm: self.llm(&snap),
        };
        Ok((enhancer, validated, warnings))
    }

    /// Composes the prompt for `input` in its workspace (`dir`, else the caller's default):
    /// docs from `input.docs` (each checked: a regular file inside the workspace, at most
    /// `limits.maxDocBytes`), else retrieved from the workspace (a failed retrieval is a
    /// warning). Every doc passes the secret guard; one with a finding is left out, with a
    /// warning and its (redacted) findings in the result. The caller's warning comes first,
    /// then retrieval's and the guard's, then the composer's. Runs on the blocking pool.
    pub async fn compose(
        self: &Arc<Self>,
        input: ComposeInput,
        caller: Caller,
    ) -> Result<ComposedPrompt, StageError> {
        let stages = Arc::clone(self);
        blocking(move || stages.compose_blocking(input, &caller)).await
    }

    fn compose_blocking(
        &self,
        input: ComposeInput,
        caller: &Caller,
    ) -> Result<ComposedPrompt, StageError> {
        let snapshot = self.library.snapshot();
        let (dir, policy, mut warnings) =
            self.requested_dir(&snapshot, caller, "dir", input.dir.clone())?;
        let workspace = Workspace::open(&dir, &policy).map_err(|error| StageError::Workspace {
            field: "dir",
            error,
        })?;
        let settings: ComposeSettings = snapshot
            .config
            .section_as("compose")
            .map_err(ComposeError::Settings)?;
        let docs: Vec<DocChunk> = if input.docs.is_empty() {
            let config = self.rag_config(&snapshot)?;
            match self.retrievers.docs(&workspace, &config, &input.query) {
                Ok((docs, w)) => {
                    warnings.extend(w);
                    docs
                }
                Err(e) => {
                    warnings.push(format!("retrieval failed: {e}; composing without docs"));
                    Vec::new()
                }
            }
        } else {
            input
                .docs
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    DocChunk::read(
                        &workspace,
                        &format!("docs[{i}]"),
                        f,
                        snapshot.limits.max_doc_bytes,
                    )
                })
                .collect::<Result<_, _>>()?
        };
        let (docs, findings) = self.guard_docs(&snapshot, docs, &mut warnings)?;
        let mut request = ComposeRequest::new(&input.query, workspace.root());
        request.current_file = input.file;
        request.docs = docs;
        request.docs_budget = input.docs_budget.unwrap_or(settings.docs_budget);
        request.server_tools = crate::catalog::server_tool_definitions();
        request.defined_tools = self.served_tools();
        let mut composed = compose_prompt(
            &snapshot,
            self.library.clock(),
            &request,
            input.system.as_deref(),
        )?;
        composed.warnings.splice(0..0, warnings);
        composed.findings = findings;
        Ok(composed)
    }

    /// Scans every doc; keeps the clean ones, and for each other says why it was left out.
    fn guard_docs(
        &self,
        snap: &Snapshot,
        docs: Vec<DocChunk>,
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<DocChunk>, Vec<SecretFinding>), StageError> {
        if docs.is_empty() {
            return Ok((docs, Vec::new()));
        }
        let guard = self
            .guard(snap)?
            .map_err(|e| ComposeError::Guard(e.to_string()))?;
        let mut kept = Vec::with_capacity(docs.len());
        let mut findings = Vec::new();
        for doc in docs {
            let label = format!("doc:{}:{}", doc.path, doc.start_line);
            let input = ScanInput::new(label, doc.text.as_str()).with_path(doc.path.clone());
            let report = guard
                .scan(&[input])
                .map_err(|e| ComposeError::Guard(e.to_string()))?;
            if report.is_clean() {
                kept.push(doc);
                continue;
            }
            let rules: Vec<String> = report
                .findings
                .iter()
                .map(|f| {
                    format!(
                        "{} at line {}",
                        f.rule_id,
                        doc.start_line + f.line.saturating_sub(1)
                    )
                })
                .collect();
            warnings.push(format!(
                "left out doc {}:{}-{}: possible secret(s) ({}); see findings",
                doc.path,
                doc.start_line,
                doc.end_line,
                rules.join(", ")
            ));
            findings.extend(report.findings);
        }
        Ok((kept, findings))
    }
}

fn context_chunk(c: &promptd_rag::RetrievedChunk) -> ContextChunk {
    ContextChunk {
        path: c.chunk.path.clone(),
        start_line: c.chunk.start_line,
        text: c.chunk.text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptd_core::library::LibraryOptions;
    use promptd_core::registry::{BuiltinSource, PromptSource};

    #[test]
    fn the_guard_is_rebuilt_once_per_changed_guard_section() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(promptd_base::config::CONFIG_FILE_NAME);
        let write = |v: serde_json::Value| std::fs::write(&config, v.to_string()).unwrap();
        write(serde_json::json!({"guard": {"timeoutSecs": 5}}));
        let roots: Vec<Arc<dyn PromptSource>> = vec![Arc::new(BuiltinSource)];
        let options = LibraryOptions {
            cwd: dir.path().to_path_buf(),
            config_path: Some(config.clone()),
            ..Default::default()
        };
        let library = Arc::new(PromptLibrary::open_with_roots(options, roots).unwrap());
        let stages = Stages::new(library.clone()).unwrap();
        let guard = || stages.guard(&library.snapshot()).unwrap().unwrap();
        let first = guard();
        assert!(Arc::ptr_eq(&first, &guard()), "built once");
        write(serde_json::json!({"guard": {"timeoutSecs": 5}, "compose": {"docsBudget": 99}}));
        assert!(library.reload().changed);
        assert!(Arc::ptr_eq(&first, &guard()), "another section changed");
        write(serde_json::json!({"guard": {"timeoutSecs": 9}}));
        assert!(library.reload().changed);
        let second = guard();
        assert!(!Arc::ptr_eq(&first, &second), "the guard section changed");
        assert!(Arc::ptr_eq(&second, &guard()));
        // A guard section that does not parse is the server's fault, named by its section.
        write(serde_json::json!({"guard": {"timeoutSecs": "soon"}}));
        assert!(library.reload().changed);
        let e = stages.guard(&library.snapshot()).unwrap_err();
        assert!(
            !e.is_caller_error() && e.to_string().contains("`guard`"),
            "{e}"
        );
    }
}
