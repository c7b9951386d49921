//! The long-lived collaborators of the stage pipelines (enhance, compose), built once per
//! process and shared by the CLI and the MCP server: the secret guard, one retriever per
//! repository (model loaded once, background indexing), and the LLM client.
//!
//! Nothing here is slow at construction: the guard compiles its rules on first use, retrievers
//! open on the first request for their repository, so `promptd serve` starts at once.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use crate::compose::{
    ComposeError, ComposeRequest, ComposeSettings, ComposedPrompt, DocChunk, ToolDefinition,
    compose_prompt,
};
use crate::config::ProjectConfig;
use crate::enhance::{ContextChunk, ContextRetriever, Enhancer, RetrievedContext};
use crate::guard::{Guard, GuardOptions, GuardSettings, ScanInput, SecretFinding};
use crate::library::PromptLibrary;
use crate::limits::Limits;
use crate::llm::{ChatClient, LlmConfig};
pub use crate::panics::panic_message;
use crate::rag::{RagConfig, RagError, Retrieval, RetrievalQuery, Retriever};
use crate::workspace::{Workspace, WorkspacePolicy, WorkspaceSettings};

/// One retriever per repository, opened on first use and kept for the process's life. A
/// retriever whose index fails while in use (a search error) is replaced at once by one on a
/// rebuilt index; one that panics is marked damaged, and the next request rebuilds it.
#[derive(Default)]
pub struct RepositoryRetrievers {
    config: RagConfig,
    open: Mutex<HashMap<PathBuf, Slot>>,
}

enum Slot {
    Open(Arc<Retriever>),
    /// Panicked while answering: the next request opens it on a rebuilt index.
    Damaged(String),
}

impl std::fmt::Debug for RepositoryRetrievers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RepositoryRetrievers")
            .finish_non_exhaustive()
    }
}

impl RepositoryRetrievers {
    pub fn new(config: RagConfig) -> RepositoryRetrievers {
        RepositoryRetrievers {
            config,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<PathBuf, Slot>> {
        // A panic while the map was held cannot leave it torn (each change is one insert).
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The retriever of a workspace.
    pub fn get(&self, workspace: &Workspace) -> Result<Arc<Retriever>, String> {
        let mut open = self.slots();
        let repo = workspace.root();
        let rebuild = match open.get(repo) {
            Some(Slot::Open(r)) => return Ok(r.clone()),
            Some(Slot::Damaged(reason)) => Some(reason.clone()),
            None => None,
        };
        let config = self.config.clone();
        let r = match &rebuild {
            None => Retriever::open_workspace(workspace, config),
            Some(reason) => Retriever::open_rebuilt(workspace, config, reason),
        };
        let r = Arc::new(r.map_err(|e| e.to_string())?);
        open.insert(repo.to_path_buf(), Slot::Open(r.clone()));
        Ok(r)
    }

    /// Retrieves for `query` in `workspace`.
    pub fn retrieval(
        &self,
        workspace: &Workspace,
        query: &str,
        active_file: Option<&Path>,
    ) -> Result<Retrieval, String> {
        let q = RetrievalQuery {
            query: query.to_string(),
            active_file: active_file.map(Path::to_path_buf),
            top_k: None,
        };
        let repo = workspace.root().to_path_buf();
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.get(workspace).map(|r| r.retrieve(&q))
        }));
        match answer {
            Ok(Err(open_failed)) => Err(open_failed),
            Ok(Ok(Ok(r))) => Ok(r),
            Ok(Ok(Err(e @ RagError::Index { .. }))) => {
                let rebuilt =
                    Retriever::open_rebuilt(workspace, self.config.clone(), &e.to_string())
                        .map(Arc::new)
                        .map_err(|e| e.to_string())?;
                self.slots().insert(repo, Slot::Open(rebuilt.clone()));
                rebuilt.retrieve(&q).map_err(|e| e.to_string())
            }
            Ok(Ok(Err(e))) => Err(e.to_string()),
            Err(panic) => {
                let reason = format!("panicked: {}", panic_message(panic.as_ref()));
                tracing::error!("retrieval in {}: {reason}", repo.display());
                self.slots().insert(repo, Slot::Damaged(reason));
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Retrieved chunks as composer docs. The current file selects rules, not docs: retrieval
    /// ranks every file, the current one included, as reference material.
    pub fn docs(
        &self,
        workspace: &Workspace,
        query: &str,
    ) -> Result<(Vec<DocChunk>, Vec<String>), String> {
        let r = self.retrieval(workspace, query, None)?;
        let docs = r
            .chunks
            .iter()
            .map(|c| DocChunk {
                path: c.chunk.path.clone(),
                start_line: c.chunk.start_line,
                end_line: c.chunk.end_line,
                text: c.chunk.text.clone(),
                score: c.score,
            })
            .collect();
        Ok((docs, r.warnings))
    }
}

impl ContextRetriever for RepositoryRetrievers {
    fn retrieve(
        &self,
        repo: &Workspace,
        query: &str,
        active_file: Option<&Path>,
    ) -> Result<RetrievedContext, String> {
        let r = self.retrieval(repo, query, active_file)?;
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

/// The shared collaborators.
pub struct Stages {
    pub library: Arc<PromptLibrary>,
    pub limits: Limits,
    guard_options: GuardOptions,
    guard: OnceLock<Result<Arc<Guard>, String>>,
    pub retrievers: Arc<RepositoryRetrievers>,
    pub llm: Option<ChatClient>,
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages")
            .field("llm", &self.llm.as_ref().map(ChatClient::config))
            .finish_non_exhaustive()
    }
}

impl Stages {
    /// Builds the collaborators from the project config (`guard`, `rag` and `limits` sections)
    /// and the environment (`GITLEAKS_*`, `LLM_*`); environment variables win over the config
    /// file.
    pub fn new(library: Arc<PromptLibrary>) -> Result<Stages, String> {
        Stages::build(library, false)
    }

    /// For one request and exit (`promptd enhance`, `promptd compose`): retrieval runs
    /// [`RagConfig::one_shot`], whatever the config says.
    pub fn one_shot(library: Arc<PromptLibrary>) -> Result<Stages, String> {
        Stages::build(library, true)
    }

    fn build(library: Arc<PromptLibrary>, one_shot: bool) -> Result<Stages, String> {
        let config: Arc<ProjectConfig> = library.snapshot().config.clone();
        let guard_settings: GuardSettings = config.section_as("guard")?;
        let guard_options = guard_settings.to_options();
        let limits = config.limits()?;
        let rag = RagConfig::from_config(&config, &limits).map_err(|e| e.to_string())?;
        let rag = if one_shot { rag.one_shot() } else { rag };
        let llm = LlmConfig::from_env().map(|mut c| {
            c.max_response_bytes = limits.max_llm_response_bytes;
            ChatClient::new(c)
        });
        Ok(Stages {
            library,
            limits,
            guard_options,
            guard: OnceLock::new(),
            retrievers: Arc::new(RepositoryRetrievers::new(rag)),
            llm,
        })
    }

    /// The guard, built on first use. A broken rules file is an error every time (fail closed).
    pub fn guard(&self) -> Result<Arc<Guard>, String> {
        self.guard
            .get_or_init(|| {
                Guard::new(self.guard_options.clone())
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// The `workspace` section of the config as it is now.
    pub fn workspace_settings(&self) -> Result<WorkspaceSettings, String> {
        WorkspaceSettings::from_config(&self.library.snapshot().config)
    }

    /// The workspace policy for a trusted caller (the CLI user).
    pub fn trusted_policy(&self) -> Result<WorkspacePolicy, String> {
        Ok(WorkspacePolicy::trusted(&self.workspace_settings()?))
    }

    /// The enhance stage over these collaborators.
    pub fn enhancer(&self) -> Enhancer {
        Enhancer {
            library: self.library.clone(),
            guard: self.guard(),
            retriever: self.retrievers.clone(),
            llm: self.llm.clone(),
        }
    }

    /// Composes the prompt for `input` in `workspace`: docs from `input.docs` (each checked: a
    /// regular file inside the workspace, at most `limits.maxDocBytes`), else retrieved from
    /// the workspace (a failed retrieval is a warning). Every doc passes the secret guard; one
    /// with a finding is left out, with a warning and its (redacted) findings in the result.
    pub fn compose(
        &self,
        workspace: &Workspace,
        input: &ComposeInput,
        server_tools: Vec<ToolDefinition>,
    ) -> Result<ComposedPrompt, ComposeError> {
        let snapshot = self.library.snapshot();
        let settings: ComposeSettings = snapshot
            .config
            .section_as("compose")
            .map_err(ComposeError::Settings)?;
        let mut warnings = Vec::new();
        let docs: Vec<DocChunk> = if input.docs.is_empty() {
            match self.retrievers.docs(workspace, &input.query) {
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
                        workspace,
                        &format!("docs[{i}]"),
                        f,
                        self.limits.max_doc_bytes,
                    )
                })
                .collect::<Result<_, _>>()?
        };
        let (docs, findings) = self.guard_docs(docs, &mut warnings)?;
        let mut request = ComposeRequest::new(&input.query, workspace.root());
        request.current_file = input.file.clone();
        request.docs = docs;
        request.docs_budget = input.docs_budget.unwrap_or(settings.docs_budget);
        request.server_tools = server_tools;
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
        docs: Vec<DocChunk>,
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<DocChunk>, Vec<SecretFinding>), ComposeError> {
        if docs.is_empty() {
            return Ok((docs, Vec::new()));
        }
        let guard = self.guard().map_err(ComposeError::Guard)?;
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

/// What a compose call asks for besides its workspace (`promptd compose` and the MCP tool
/// `compose_prompt` alike).
#[derive(Debug, Clone, Default)]
pub struct ComposeInput {
    pub query: String,
    /// The file the user is in.
    pub file: Option<PathBuf>,
    /// Files to use as the docs instead of retrieving.
    pub docs: Vec<PathBuf>,
    pub docs_budget: Option<usize>,
    /// System prompt name.
    pub system: Option<String>,
}

fn context_chunk(c: &crate::rag::RetrievedChunk) -> ContextChunk {
    ContextChunk {
        path: c.chunk.path.clone(),
        start_line: c.chunk.start_line,
        text: c.chunk.text.clone(),
    }
}
