//! Repository retrieval: finds the parts of a user's repository that ground a prompt. It owns
//! discovery (which files may be read), code-aware chunking, the persisted BM25 index under
//! `<repo>/.rag/`, the optional embedding model with its on-disk vector cache, ranking and
//! filtering, and the formatted `ACTIVE FILE` / `REFERENCE CONTEXT` sections handed to the LLM.
//!
//! Two ways in: [`Retriever`] is long-lived (an MCP server keeps one per repository: the model is
//! loaded once, re-indexing and embedding run on background threads) and [`retrieve`] is the
//! one-shot convenience used by the CLI.

pub mod chunk;
pub mod discover;
pub mod embed;
pub mod format;
pub mod index;
pub mod lock;
pub mod rank;
mod retriever;
pub mod tokenize;
mod watch;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use chunk::{Chunk, Language};
pub use index::IndexedChunk;
pub use rank::{Action, Fusion};
pub use retriever::{IndexPhase, IndexProgress, IndexSummary, Retriever};

/// Retrieval settings, carried under `"rag"` in `.ado-mcp-config.json`; CLI flags override them.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct RagConfig {
    /// Reference chunks returned.
    pub top_k: usize,
    /// Lines per chunk window when a unit is too long (and the merge limit for small units).
    pub chunk_lines: usize,
    /// Lines shared by consecutive windows of a long unit.
    pub overlap: usize,
    /// Lexical candidates considered per returned chunk (`top_k * candidate_multiplier`).
    pub candidate_multiplier: usize,
    /// How lexical and vector scores combine when vectors exist.
    pub fusion: Fusion,
    /// Weight of the normalised BM25 score in [`Fusion::Blend`].
    pub lexical_weight: f32,
    /// Weight of the cosine similarity in [`Fusion::Blend`].
    pub vector_weight: f32,
    /// BM25 boost of a query term matching a symbol name (function, type, method).
    pub symbol_boost: f32,
    /// BM25 boost of a query term matching a path component.
    pub path_boost: f32,
    /// Share of a file's other matching chunks added to each chunk's score (0 disables
    /// file-level aggregation).
    pub file_aggregation: f32,
    /// Multiplier applied by action-aware boosts (fix → error handling, create → definitions,
    /// refactor → large blocks); 1.0 disables them.
    pub action_boost: f32,
    /// Minimum final score kept (the best chunk is always kept).
    pub threshold: f32,
    /// Token budget of the formatted context (cl100k_base tokens).
    pub token_budget: usize,
    /// Longest a query waits for a first index build before answering from what exists.
    pub index_budget_secs: u64,
    /// Longest a query waits for an incremental refresh of an existing index (0: a long-lived
    /// retriever answers from the cached index at once while the refresh runs in the
    /// background; [`RagConfig::one_shot`] waits up to the index budget instead).
    pub refresh_wait_ms: u64,
    /// Watch the repository's folders so a refresh re-lists only folders with changes (a
    /// long-lived retriever, e.g. under `promptd serve`); otherwise every refresh walks the
    /// whole tree. [`RagConfig::one_shot`] turns it off.
    pub watch: bool,
    /// Use the embedding model when one is available.
    pub embeddings: bool,
    /// Directory holding `model.onnx` + tokenizer files; falls back to `PROMPTD_EMBED_MODEL_DIR`,
    /// then `$PROMPTD_DEPS_DIR/models/all-MiniLM-L6-v2`.
    pub model_dir: Option<PathBuf>,
    /// ONNX Runtime shared library; falls back to `ORT_DYLIB_PATH`, then
    /// `$PROMPTD_DEPS_DIR/onnxruntime/libonnxruntime.so`.
    pub ort_dylib_path: Option<PathBuf>,
    /// A fastembed model name (e.g. `AllMiniLML6V2`) downloaded from the Hugging Face hub when no
    /// model directory is found. Needs the `embed-hub` cargo feature and internet access.
    pub hub_model: Option<String>,
    /// Where hub downloads are cached (fastembed's default when unset).
    pub hub_cache_dir: Option<PathBuf>,
    /// Threads ONNX Runtime uses per embedding call (default: half the cores, at least 1).
    pub embed_threads: Option<usize>,
    /// Chunks per embedding batch.
    pub embed_batch: usize,
    /// How much one index may take (from the `limits` section: `maxIndexFiles`,
    /// `maxIndexBytes`).
    #[serde(skip)]
    pub index_bounds: discover::IndexBounds,
}

impl Default for RagConfig {
    fn default() -> Self {
        Self {
            top_k: 6,
            chunk_lines: 48,
            overlap: 8,
            candidate_multiplier: 12,
            fusion: Fusion::Rrf,
            lexical_weight: 0.5,
            vector_weight: 0.5,
            symbol_boost: 2.0,
            path_boost: 1.0,
            file_aggregation: 0.0,
            action_boost: 1.1,
            threshold: 0.3,
            token_budget: 8000,
            index_budget_secs: 20,
            refresh_wait_ms: 0,
            watch: true,
            embeddings: true,
            model_dir: None,
            ort_dylib_path: None,
            hub_model: None,
            hub_cache_dir: None,
            embed_threads: None,
            embed_batch: 16,
            index_bounds: discover::IndexBounds::default(),
        }
    }
}

impl RagConfig {
    /// The retrieval settings of a project config: its `rag` section, with the index bounds of
    /// its `limits` (`limits` is the config's own, as a library snapshot holds it).
    pub fn from_config(
        config: &crate::config::ProjectConfig,
        limits: &crate::limits::Limits,
    ) -> Result<RagConfig, RagError> {
        let mut rag: RagConfig = config.section_as("rag").map_err(RagError::Section)?;
        rag.index_bounds = discover::IndexBounds::from_limits(limits);
        Ok(rag)
    }

    /// These settings for a process that answers once and exits (`promptd context`, `index`,
    /// `enhance`, `compose`): no folder watcher, and a query waits for the refresh of an
    /// existing index up to the index budget, since no later query would see it finish.
    pub fn one_shot(self) -> RagConfig {
        RagConfig {
            refresh_wait_ms: self.index_budget_secs.saturating_mul(1000),
            watch: false,
            ..self
        }
    }
}

/// What went wrong in retrieval. Missing models are not errors (retrieval degrades to lexical
/// with a warning); these are.
#[derive(Debug, thiserror::Error)]
pub enum RagError {
    #[error("repository directory {0}")]
    Workspace(crate::workspace::WorkspaceError),
    #[error("active file {path} does not exist: {source}")]
    ActiveFileMissing {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("active file {path} resolves to {resolved}, outside the repository {repo}")]
    ActiveFileOutside {
        path: PathBuf,
        resolved: PathBuf,
        repo: PathBuf,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("exclusion file {path} line {line}: {message}")]
    ExcludePattern {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("search index in {path}: {message}")]
    Index { path: PathBuf, message: String },
    #[error("watching {path} for changes: {message}")]
    Watch { path: PathBuf, message: String },
    #[error("embedding model: {0}")]
    Embed(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The config file's `rag` section cannot be read (the message names the file).
    #[error("{0}")]
    Section(String),
}

impl RagError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RagError::Io {
            path: path.into(),
            source,
        }
    }
}

/// One retrieval request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrievalQuery {
    /// The user's prompt (free text, stack traces, identifiers and paths welcome).
    pub query: String,
    /// The file the user is editing (absolute or relative to the repository).
    pub active_file: Option<PathBuf>,
    /// Overrides [`RagConfig::top_k`].
    pub top_k: Option<usize>,
}

impl RetrievalQuery {
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            ..Self::default()
        }
    }
}

/// A scored chunk: a ranking candidate, then a chunk chosen as reference context. Serialized
/// flat: the chunk's fields, then the scores.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetrievedChunk {
    #[serde(flatten)]
    pub chunk: IndexedChunk,
    /// Final score after fusion, aggregation and boosts.
    pub score: f32,
    /// BM25 normalised by the best candidate (0..=1).
    pub lexical: f32,
    /// Cosine similarity to the query, when vectors were used.
    pub vector: Option<f32>,
}

/// The file being edited: the primary target of the prompt.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ActiveFileContext {
    pub path: String,
    /// First meaningful line of the file.
    pub summary: String,
    /// Up to two parts of the file most relevant to the prompt.
    pub excerpts: Vec<RetrievedChunk>,
}

/// How the final ranking was made.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub enum RetrievalMode {
    #[default]
    Lexical,
    Hybrid,
}

/// How many chunks survived each filter, as logged in `Filtered: 20 → 18 (threshold) → …`.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FilterCounts {
    pub candidates: usize,
    pub after_threshold: usize,
    pub after_dedup: usize,
    pub after_budget: usize,
}

/// Where the time went (milliseconds).
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetrievalTimings {
    pub wait_for_index_ms: f64,
    pub lexical_ms: f64,
    pub embed_query_ms: f64,
    pub rank_ms: f64,
    pub total_ms: f64,
}

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetrievalStats {
    pub mode: RetrievalMode,
    pub action: Option<Action>,
    pub filter: FilterCounts,
    pub timings: RetrievalTimings,
    /// Files in the index when the query ran.
    pub indexed_files: usize,
    /// Chunks in the index when the query ran.
    pub indexed_chunks: usize,
}

/// The result of one retrieval: structured data for callers plus the formatted text for the LLM.
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Retrieval {
    pub active_file: Option<ActiveFileContext>,
    pub chunks: Vec<RetrievedChunk>,
    pub stats: RetrievalStats,
    /// Degradations the caller should know about (no model, partial index, …).
    pub warnings: Vec<String>,
    /// `=== ACTIVE FILE (PRIMARY TARGET) ===` / `=== REFERENCE CONTEXT … ===` sections.
    pub formatted: String,
    /// cl100k_base tokens in `formatted`.
    pub tokens: usize,
}

/// One-shot retrieval: opens the index of `repo_dir`, refreshes it (waiting at most the index
/// budget, since nothing would finish the work later), answers, and returns. Vectors missing at
/// this point are not computed: run [`Retriever::index`] (`promptd index`) for hybrid ranking.
pub fn retrieve(
    repo_dir: impl AsRef<std::path::Path>,
    config: RagConfig,
    query: &RetrievalQuery,
) -> Result<Retrieval, RagError> {
    Retriever::open(repo_dir.as_ref(), config.one_shot())?.retrieve(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_reads_camel_case_with_defaults() {
        let config: RagConfig =
            serde_json::from_str(r#"{"topK": 3, "fusion": "blend", "tokenBudget": 500}"#).unwrap();
        assert_eq!(config.top_k, 3);
        assert_eq!(config.fusion, Fusion::Blend);
        assert_eq!(config.token_budget, 500);
        assert_eq!(config.chunk_lines, 48);
        assert_eq!(config.candidate_multiplier, 12);
        assert_eq!(config.threshold, 0.3);
        let json = serde_json::to_value(RagConfig::default()).unwrap();
        assert_eq!(json["indexBudgetSecs"], 20);
        assert_eq!(json["fusion"], "rrf");
    }

    #[test]
    fn retrieved_chunk_serializes_flat_without_hash_or_bm25() {
        let chunk = RetrievedChunk {
            chunk: IndexedChunk {
                path: "src/a.rs".into(),
                start_line: 3,
                end_line: 9,
                language: "rust".into(),
                tags: vec!["[Function: a]".into()],
                symbols: vec!["a".into()],
                text: "fn a() {}".into(),
                hash: [7; 16],
                bm25: 4.5,
            },
            score: 0.75,
            lexical: 1.0,
            vector: None,
        };
        assert_eq!(
            serde_json::to_string(&chunk).unwrap(),
            r#"{"path":"src/a.rs","startLine":3,"endLine":9,"language":"rust","tags":["[Function: a]"],"symbols":["a"],"text":"fn a() {}","score":0.75,"lexical":1.0,"vector":null}"#
        );
    }
}
