//! One retrieval's question and answer: a [`RetrievalQuery`] in, a [`Retrieval`] out (the
//! active file's context, the scored reference chunks, what the ranking did and the formatted
//! text for the LLM).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::index::IndexedChunk;

/// One retrieval request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrievalQuery {
    /// The user's prompt (free text, stack traces, identifiers and paths welcome).
    pub query: String,
    /// The file the user is editing (absolute or relative to the repository).
    pub active_file: Option<PathBuf>,
    /// Overrides [`RagConfig::top_k`](super::config::RagConfig::top_k).
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

/// What the prompt asks for, guessed from its verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Fix,
    Create,
    Refactor,
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
    /// Following the used symbols to their definitions (part of `rank_ms`).
    pub follow_ms: f64,
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
    /// Whether this process had the embedding model loaded when the query was answered.
    pub model_loaded: bool,
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

#[cfg(test)]
mod tests {
    use super::*;

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
                content_kind: None,
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
