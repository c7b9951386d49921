//! Retrieval settings: the `rag` section of `.ado-mcp-config.json` (CLI flags override single
//! fields), the index bounds taken from the `limits` section, and the one-shot policy of a
//! process that answers once and exits.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::discover::IndexBounds;
use super::error::RagError;
use super::kind::FileKind;
use super::request::TermWeights;

/// How lexical and vector evidence combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Fusion {
    /// BM25 only, even when vectors exist.
    Lexical,
    /// `lexical_weight * bm25/max + vector_weight * cosine`.
    Blend,
    /// Reciprocal-rank fusion of the BM25 and cosine orders (k = 60), each weighted by its
    /// `lexicalWeight` / `vectorWeight`, scaled so first in both orders scores 1.0 and last in
    /// both 0.0. The shipped default: best measured Acc@1/MRR.
    #[default]
    Rrf,
}

/// Score multipliers by file kind ([`FileKind`]); source code always weighs 1.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct KindWeights {
    pub test: f32,
    pub docs: f32,
    pub changelog: f32,
    pub vendored: f32,
    pub generated: f32,
    pub other: f32,
}

impl KindWeights {
    /// Every kind level with source code.
    pub const NEUTRAL: KindWeights = KindWeights {
        test: 1.0,
        docs: 1.0,
        changelog: 1.0,
        vendored: 1.0,
        generated: 1.0,
        other: 1.0,
    };

    /// The shipped weights: source first, then configuration and data, then tests, then
    /// vendored, generated and documentation, changelogs last (best on the history benchmark's
    /// tuning half).
    pub const SOURCE_FIRST: KindWeights = KindWeights {
        test: 0.15,
        docs: 0.1,
        changelog: 0.05,
        vendored: 0.1,
        generated: 0.1,
        other: 0.4,
    };

    /// The multiplier of `kind`.
    pub fn of(&self, kind: FileKind) -> f32 {
        match kind {
            FileKind::Source => 1.0,
            FileKind::Test => self.test,
            FileKind::Docs => self.docs,
            FileKind::Changelog => self.changelog,
            FileKind::Vendored => self.vendored,
            FileKind::Generated => self.generated,
            FileKind::Other => self.other,
        }
    }
}

impl Default for KindWeights {
    fn default() -> Self {
        KindWeights::SOURCE_FIRST
    }
}

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
    /// Lexical candidates considered per returned chunk (`top_k * candidate_multiplier`), and
    /// whole files ranked beside them. A pool the size of the file ranking's keeps a file that
    /// ranks well as a whole in the answer although none of its chunks is among the best few
    /// dozen.
    pub candidate_multiplier: usize,
    /// How lexical and vector scores combine when vectors exist.
    pub fusion: Fusion,
    /// Weight of the lexical evidence: of the normalised BM25 score in [`Fusion::Blend`], of
    /// the BM25 order's reciprocal rank in [`Fusion::Rrf`].
    pub lexical_weight: f32,
    /// Weight of the vector evidence: of the cosine in [`Fusion::Blend`], of the cosine
    /// order's reciprocal rank in [`Fusion::Rrf`].
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
    /// Weight of a search term the request writes as an identifier or a path (`find_user`,
    /// `Session.send`, `auth/login.py`); plain words weigh 1.
    pub identifier_weight: f32,
    /// In a request with more plain words than this, plain words are weighted down so that
    /// together they weigh this many (0: never).
    pub plain_words: usize,
    /// How much a term's repetitions in the request raise its weight,
    /// `× (1 + repeatedTermWeight × ln(count))` (0: each term once).
    pub repeated_term_weight: f32,
    /// Read a request as an issue report: drop template boilerplate (HTML comments, heading
    /// lines of plain words, with `drop_checklists` checklist lines) and take the kinds of
    /// files it asks about from its first line.
    pub read_reports: bool,
    /// With `read_reports`, also drop a report's checklist lines (`- [x] I've searched the
    /// existing issues`): a template's boxes the user ticked, not what the report is about.
    pub drop_checklists: bool,
    /// Multiplier of the chunks of a file the request mentions by path or name.
    pub mentioned_file_boost: f32,
    /// Judge file kinds from the repository too, not only from paths: a folder with its own
    /// licence inside the project's code is vendored, a file whose header says it is
    /// generated (or a lock file, or minified code) is generated, and a chunk of test code
    /// in a source file (a Rust test module) weighs as a test.
    pub content_kinds: bool,
    /// Score multipliers of chunks by the kind of their file, for kinds the request does not
    /// ask about by name (source code is 1).
    pub kind_weights: KindWeights,
    /// Share of a file's score in the final score of each of its chunks (0: chunks are ranked on
    /// their own). A file scores by its whole-file BM25 match and its best chunk
    /// ([`RagConfig::whole_file_weight`]).
    pub file_rank_weight: f32,
    /// Share of the whole-file BM25 match in a file's score; the rest is its best chunk's score.
    pub whole_file_weight: f32,
    /// How much a file's size (in chunks) raises its score: `1 + file_size_prior × ln(chunks)`.
    /// Fixes land more often in large, central files.
    pub file_size_prior: f32,
    /// Most chunks returned from one file (0: no limit); more only when nothing else is left.
    pub max_chunks_per_file: usize,
    /// Minimum final score kept (the best chunk is always kept). Low enough that the files
    /// ranked after the best few still fill the answer to a long report.
    pub threshold: f32,
    /// Token budget of the formatted context (cl100k_base tokens).
    pub token_budget: usize,
    /// Most definitions of symbols used by the active file (and the hits named by
    /// `follow_hits`) added as reference chunks, tagged `[Followed: name from path:line]`;
    /// 0 turns following off.
    pub follow_definitions: usize,
    /// Best-ranked chunks whose used symbols are followed too (0: only the active file's).
    /// Off by default: with file-level ranking, following the best three lowered Acc@5 and
    /// Recall@5 on the history benchmark's tuning half.
    pub follow_hits: usize,
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
    /// Compute chunk vectors and rank with the embedding model when one is available. Off by
    /// default: the index is lexical, and `promptd index` embeds only when this is on.
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
    /// Threads ONNX Runtime uses per embedding call (default: one per core).
    pub embed_threads: Option<usize>,
    /// Chunks per embedding batch (progress and shutdown are checked between batches; the
    /// background holds the model for [`super::embed::BACKGROUND_TURN`] chunks at a time).
    pub embed_batch: usize,
    /// Word pieces of each chunk the model sees (at most 256, the model's own limit); vectors
    /// of another window are not reused. A shorter window embeds more chunks per CPU-second
    /// (`RAG_BENCH_EMBED_ONLY=1 RAG_BENCH_EMBED_TOKENS=128,256 cargo bench --bench rag`).
    pub embed_max_tokens: usize,
    /// Compute missing chunk vectors on a background thread after a refresh or a query that
    /// found some missing (a long-lived retriever). [`RagConfig::one_shot`] turns it off: such a
    /// process loads the model only to embed a query whose candidates all have cached vectors.
    pub background_embedding: bool,
    /// How much one index may take (from the `limits` section: `maxIndexFiles`,
    /// `maxIndexBytes`).
    #[serde(skip)]
    pub index_bounds: IndexBounds,
}

impl Default for RagConfig {
    fn default() -> Self {
        Self {
            top_k: 6,
            chunk_lines: 48,
            overlap: 8,
            candidate_multiplier: 20,
            fusion: Fusion::Rrf,
            lexical_weight: 0.5,
            vector_weight: 0.5,
            symbol_boost: 2.0,
            path_boost: 2.0,
            file_aggregation: 0.0,
            action_boost: 1.1,
            identifier_weight: 2.0,
            plain_words: 0,
            repeated_term_weight: 0.5,
            read_reports: true,
            drop_checklists: true,
            mentioned_file_boost: 2.0,
            content_kinds: false,
            kind_weights: KindWeights::SOURCE_FIRST,
            max_chunks_per_file: 1,
            file_rank_weight: 0.5,
            whole_file_weight: 0.8,
            file_size_prior: 0.25,
            threshold: 0.15,
            token_budget: 8000,
            follow_definitions: 3,
            follow_hits: 0,
            index_budget_secs: 20,
            refresh_wait_ms: 0,
            watch: true,
            embeddings: false,
            model_dir: None,
            ort_dylib_path: None,
            hub_model: None,
            hub_cache_dir: None,
            embed_threads: None,
            embed_batch: 16,
            embed_max_tokens: 128,
            background_embedding: true,
            index_bounds: IndexBounds::default(),
        }
    }
}

impl RagConfig {
    /// The retrieval settings of a project config: its `rag` section, with the index bounds of
    /// its `limits` (`limits` is the config's own, as a library snapshot holds it).
    pub fn from_config(
        config: &promptd_base::config::ProjectConfig,
        limits: &promptd_base::limits::Limits,
    ) -> Result<RagConfig, RagError> {
        let mut rag: RagConfig = config.section_as("rag").map_err(RagError::Section)?;
        rag.index_bounds = IndexBounds::from_limits(limits);
        Ok(rag)
    }

    /// How the terms of a request are weighted.
    pub fn term_weights(&self) -> TermWeights {
        TermWeights {
            identifier: self.identifier_weight,
            plain_words: self.plain_words,
            repeated: self.repeated_term_weight,
            read_reports: self.read_reports,
            drop_checklists: self.drop_checklists,
        }
    }

    /// These settings for a process that answers once and exits (`promptd context`, `index`,
    /// `enhance`, `compose`): no folder watcher, a query waits for the refresh of an existing
    /// index up to the index budget, since no later query would see it finish, and no
    /// background embedding (the embedding model is loaded only when cached vectors can rank
    /// the answer).
    pub fn one_shot(self) -> RagConfig {
        RagConfig {
            refresh_wait_ms: self.index_budget_secs.saturating_mul(1000),
            watch: false,
            background_embedding: false,
            ..self
        }
    }
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
        assert_eq!(config.candidate_multiplier, 20);
        assert_eq!(config.threshold, 0.15);
        let json = serde_json::to_value(RagConfig::default()).unwrap();
        assert_eq!(json["indexBudgetSecs"], 20);
        assert_eq!(json["fusion"], "rrf");
        assert!(
            !config.embeddings,
            "the index is lexical unless embeddings are turned on"
        );
        assert!(config.read_reports);
        assert!(config.drop_checklists);
        assert_eq!(json["repeatedTermWeight"], 0.5);
        let opted: RagConfig = serde_json::from_str(r#"{"embeddings": true}"#).unwrap();
        assert!(opted.embeddings);
    }

    #[test]
    fn one_shot_turns_off_the_watcher_and_background_embedding() {
        let config = RagConfig::default().one_shot();
        assert!(!config.watch);
        assert!(!config.background_embedding);
        assert_eq!(config.refresh_wait_ms, 20_000);
        assert!(RagConfig::default().background_embedding);
    }
}
