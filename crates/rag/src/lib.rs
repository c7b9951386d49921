//! Repository retrieval: finds the parts of a user's repository that ground a prompt. It owns
//! discovery (which files may be read), code-aware chunking, the persisted BM25 index under
//! `<repo>/.rag/`, the optional embedding model with its on-disk vector cache, ranking and
//! filtering, and the formatted `ACTIVE FILE` / `REFERENCE CONTEXT` sections handed to the LLM.
//!
//! Two ways in: [`Retriever`] is long-lived (a server keeps one per open repository, a bounded
//! number of them: re-indexing and embedding run on background threads, a folder watcher names
//! what changed, and repositories share one loaded model, [`embed::Embedder::shared`]) and
//! [`retrieve`] answers one query and returns. A process that answers once and
//! exits (the `promptd context`, `index`, `enhance` and `compose` commands) runs a retriever
//! with [`RagConfig::one_shot`], as [`retrieve`] does.
//!
//! The modules, from the bottom up: [`error`], [`hash`], [`tokenize`] and [`chunk`] depend on
//! nothing else here; [`store`] (the `.rag/` folder: file names, atomic writes, locks) only on
//! the error; [`discover`], [`config`], [`index`], [`embed`], `watch`, [`query`], [`rank`],
//! `follow` (definitions of the symbols the active file and the best hits use) and
//! [`format`](mod@format) build on those; `retriever` ties them together. This file only
//! declares them and names the public surface.

pub mod chunk;
pub mod config;
pub mod discover;
pub mod embed;
pub mod error;
mod follow;
pub mod format;
pub mod hash;
pub mod index;
pub mod kind;
pub mod query;
pub mod rank;
pub mod request;
mod retriever;
pub mod static_model;
pub mod store;
pub mod tokenize;
mod watch;

pub use chunk::{Chunk, Language};
pub use config::{Fusion, RagConfig};
pub use error::RagError;
pub use index::IndexedChunk;
pub use query::{
    Action, ActiveFileContext, FilterCounts, Retrieval, RetrievalMode, RetrievalQuery,
    RetrievalStats, RetrievalTimings, RetrievedChunk,
};
pub use retriever::{IndexPhase, IndexProgress, IndexSummary, Retriever};

/// One-shot retrieval: opens the index of `repo_dir` with [`RagConfig::one_shot`] settings,
/// refreshes it (waiting at most the index budget, since nothing would finish the work later),
/// answers, and returns. Vectors missing at this point are not computed: run
/// [`Retriever::index`] (`promptd index`) for hybrid ranking.
pub fn retrieve(
    repo_dir: impl AsRef<std::path::Path>,
    config: RagConfig,
    query: &RetrievalQuery,
) -> Result<Retrieval, RagError> {
    Retriever::open(repo_dir.as_ref(), config.one_shot())?.retrieve(query)
}
