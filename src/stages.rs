//! The long-lived collaborators of the stage pipelines (enhance, compose), built once per
//! process and shared by the CLI and the MCP server: the secret guard, one retriever per
//! repository (model loaded once, background indexing), and the LLM client.
//!
//! Nothing here is slow at construction: the guard compiles its rules on first use, retrievers
//! open on the first request for their repository, so `promptd serve` starts at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::compose::DocChunk;
use crate::config::ProjectConfig;
use crate::enhance::{ContextChunk, ContextRetriever, Enhancer, RetrievedContext};
use crate::guard::{Guard, GuardOptions, GuardSettings};
use crate::library::PromptLibrary;
use crate::llm::{ChatClient, LlmConfig};
use crate::rag::{RagConfig, Retrieval, RetrievalQuery, Retriever};

/// One retriever per repository, opened on first use and kept for the process's life.
#[derive(Default)]
pub struct RepositoryRetrievers {
    config: RagConfig,
    open: Mutex<HashMap<PathBuf, Arc<Retriever>>>,
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

    /// The retriever of a (canonical) repository root.
    pub fn get(&self, repo: &Path) -> Result<Arc<Retriever>, String> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| "retriever cache poisoned".to_string())?;
        if let Some(r) = open.get(repo) {
            return Ok(r.clone());
        }
        let r = Arc::new(Retriever::open(repo, self.config.clone()).map_err(|e| e.to_string())?);
        open.insert(repo.to_path_buf(), r.clone());
        Ok(r)
    }

    /// Retrieves for `query` in `repo`.
    pub fn retrieval(
        &self,
        repo: &Path,
        query: &str,
        active_file: Option<&Path>,
    ) -> Result<Retrieval, String> {
        let retriever = self.get(repo)?;
        let q = RetrievalQuery {
            query: query.to_string(),
            active_file: active_file.map(Path::to_path_buf),
            top_k: None,
        };
        retriever.retrieve(&q).map_err(|e| e.to_string())
    }

    /// Retrieved chunks as composer docs. The current file selects rules, not docs: retrieval
    /// ranks every file, the current one included, as reference material.
    pub fn docs(&self, repo: &Path, query: &str) -> Result<(Vec<DocChunk>, Vec<String>), String> {
        let r = self.retrieval(repo, query, None)?;
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
        repo: &Path,
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
    /// Builds the collaborators from the project config (`guard` and `rag` sections) and the
    /// environment (`GITLEAKS_*`, `LLM_*`); environment variables win over the config file.
    pub fn new(library: Arc<PromptLibrary>) -> Result<Stages, String> {
        Stages::build(library, false)
    }

    /// For one request and exit (`promptd enhance`, `promptd compose`): no folder watcher on the
    /// repository, whatever the config says; the one refresh walks it.
    pub fn one_shot(library: Arc<PromptLibrary>) -> Result<Stages, String> {
        Stages::build(library, true)
    }

    fn build(library: Arc<PromptLibrary>, one_shot: bool) -> Result<Stages, String> {
        let config: Arc<ProjectConfig> = library.snapshot().config.clone();
        let guard_settings: GuardSettings = config.section_as("guard")?;
        let guard_options = guard_settings.to_options();
        let mut rag: RagConfig = config.section_as("rag")?;
        if one_shot {
            rag.watch = false;
        }
        Ok(Stages {
            library,
            guard_options,
            guard: OnceLock::new(),
            retrievers: Arc::new(RepositoryRetrievers::new(rag)),
            llm: LlmConfig::from_env().map(ChatClient::new),
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

    /// The enhance stage over these collaborators.
    pub fn enhancer(&self) -> Enhancer {
        Enhancer {
            library: self.library.clone(),
            guard: self.guard(),
            retriever: self.retrievers.clone(),
            llm: self.llm.clone(),
        }
    }
}

fn context_chunk(c: &crate::rag::RetrievedChunk) -> ContextChunk {
    ContextChunk {
        path: c.chunk.path.clone(),
        start_line: c.chunk.start_line,
        text: c.chunk.text.clone(),
    }
}
