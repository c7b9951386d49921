//! CLI for retrieval: `promptd index` builds or refreshes a repository's index (progress bar on
//! a terminal, then a summary) and `promptd context "QUERY"` prints the formatted context or
//! its JSON form. Both open the repository as a workspace under the configured policy and run
//! the retriever one-shot ([`RagConfig::one_shot`]) through the stages' retrievers
//! ([`RepositoryRetrievers`]), so an index that fails is rebuilt as it is under the server.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::common::command_line_file;
use crate::rag::{IndexPhase, IndexProgress, RagConfig, RagError, RetrievalQuery};
use crate::stages::RepositoryRetrievers;
use crate::workspace::{Workspace, WorkspacePolicy};

/// What the retrieval subcommands take from the config.
#[derive(Debug, Clone)]
pub struct RagSettings {
    /// The `rag` section with the `limits` index bounds.
    pub config: RagConfig,
    /// Which folders may be a repository (`workspace.allowedFolders`, the refusals).
    pub policy: WorkspacePolicy,
}

impl RagSettings {
    /// `dir` as a workspace under [`RagSettings::policy`].
    fn workspace(&self, dir: &std::path::Path) -> Result<Workspace, RagError> {
        Workspace::open(dir, &self.policy).map_err(RagError::Workspace)
    }
}

/// Errors of the retrieval subcommands.
#[derive(Debug, thiserror::Error)]
pub enum CliRagError {
    #[error(transparent)]
    Rag(#[from] RagError),
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    #[error("encoding JSON: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Args, Debug, Clone)]
pub struct IndexArgs {
    /// Repository to index (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Skip computing embedding vectors even when `rag.embeddings` is on (lexical index only).
    #[arg(long, conflicts_with = "embed")]
    pub no_embed: bool,
    /// Compute embedding vectors this time even when `rag.embeddings` is off (needs an
    /// installed model; queries use them only with `rag.embeddings` on).
    #[arg(long)]
    pub embed: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ContextArgs {
    /// The prompt to find context for.
    pub query: String,
    /// Repository to search (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// The file being edited: shown first as the primary target.
    #[arg(long, value_name = "FILE")]
    pub active_file: Option<PathBuf>,
    /// Reference chunks to return (overrides the configured topK).
    #[arg(long, value_name = "N")]
    pub top_k: Option<usize>,
    /// Minimum relevance score kept (overrides the configured threshold).
    #[arg(long, value_name = "SCORE")]
    pub threshold: Option<f32>,
    /// Token budget of the context (overrides the configured tokenBudget).
    #[arg(long, value_name = "TOKENS")]
    pub token_budget: Option<usize>,
    /// Rank with BM25 only, ignoring embeddings.
    #[arg(long)]
    pub lexical: bool,
    /// Print JSON instead of the formatted sections.
    #[arg(long)]
    pub json: bool,
}

impl ContextArgs {
    /// `config` with this invocation's flags applied.
    pub fn apply(&self, config: RagConfig) -> RagConfig {
        RagConfig {
            threshold: self.threshold.unwrap_or(config.threshold),
            token_budget: self.token_budget.unwrap_or(config.token_budget),
            fusion: if self.lexical {
                crate::rag::Fusion::Lexical
            } else {
                config.fusion
            },
            ..config
        }
    }
}

fn progress_sink(show: bool) -> (Option<ProgressBar>, impl Fn(IndexProgress) + Sync) {
    let bar = show.then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{msg:>9} [{bar:40}] {pos}/{len} ({elapsed})")
                .expect("static progress template")
                .progress_chars("=> "),
        );
        bar
    });
    let phase = Mutex::new(None);
    let handle = bar.clone();
    let sink = move |p: IndexProgress| {
        let Some(bar) = handle.as_ref() else {
            return;
        };
        let mut current = phase.lock().expect("progress lock");
        if *current != Some(p.phase) {
            *current = Some(p.phase);
            bar.reset();
            bar.set_message(match p.phase {
                IndexPhase::Scanning => "scanning",
                IndexPhase::Indexing => "indexing",
                IndexPhase::Embedding => "embedding",
            });
        }
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    };
    (bar, sink)
}

/// `promptd index`: returns the process exit code.
pub fn run_index(
    args: &IndexArgs,
    settings: &RagSettings,
    out: &mut dyn Write,
) -> Result<i32, CliRagError> {
    let config = RagConfig {
        embeddings: (settings.config.embeddings || args.embed) && !args.no_embed,
        ..settings.config.clone()
    };
    let workspace = settings.workspace(&args.dir)?;
    let retrievers = RepositoryRetrievers::default();
    let (bar, sink) = progress_sink(std::io::stderr().is_terminal());
    let summary = retrievers.index(&workspace, &config.one_shot(), &sink)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    for w in &summary.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(
        out,
        "indexed {} files, {} chunks, {} bytes in {:.2} s ({} added, {} changed, {} removed, {} unchanged)",
        summary.files,
        summary.chunks,
        summary.bytes,
        summary.seconds,
        summary.added,
        summary.changed,
        summary.removed,
        summary.unchanged
    )?;
    if summary.embedded > 0 {
        writeln!(
            out,
            "embedded {} chunks in {:.2} s",
            summary.embedded, summary.embed_seconds
        )?;
    }
    Ok(0)
}

#[derive(Serialize)]
struct JsonChunk<'a> {
    path: &'a str,
    start_line: usize,
    end_line: usize,
    score: f32,
    lexical: f32,
    vector: Option<f32>,
    tags: &'a [String],
}

#[derive(Serialize)]
struct JsonActiveFile<'a> {
    path: &'a str,
    summary: &'a str,
    excerpts: Vec<JsonChunk<'a>>,
}

#[derive(Serialize)]
struct JsonContext<'a> {
    query: &'a str,
    mode: crate::rag::RetrievalMode,
    active_file: Option<JsonActiveFile<'a>>,
    chunks: Vec<JsonChunk<'a>>,
    filtered: [usize; 4],
    warnings: &'a [String],
    /// Whether the embedding model was loaded to answer.
    model_loaded: bool,
    tokens: usize,
    formatted: &'a str,
}

fn json_chunk(c: &crate::rag::RetrievedChunk) -> JsonChunk<'_> {
    JsonChunk {
        path: &c.chunk.path,
        start_line: c.chunk.start_line,
        end_line: c.chunk.end_line,
        score: c.score,
        lexical: c.lexical,
        vector: c.vector,
        tags: &c.chunk.tags,
    }
}

/// `promptd context`: returns the process exit code.
pub fn run_context(
    args: &ContextArgs,
    settings: &RagSettings,
    out: &mut dyn Write,
) -> Result<i32, CliRagError> {
    let workspace = settings.workspace(&args.dir)?;
    let config = args.apply(settings.config.clone()).one_shot();
    let retrievers = RepositoryRetrievers::default();
    let active_file = args.active_file.as_deref().map(command_line_file);
    let query = RetrievalQuery {
        query: args.query.clone(),
        active_file,
        top_k: args.top_k,
    };
    let result = retrievers.retrieve(&workspace, &config, &query)?;
    if args.json {
        let f = result.stats.filter;
        let doc = JsonContext {
            query: &args.query,
            mode: result.stats.mode,
            active_file: result.active_file.as_ref().map(|a| JsonActiveFile {
                path: &a.path,
                summary: &a.summary,
                excerpts: a.excerpts.iter().map(json_chunk).collect(),
            }),
            chunks: result.chunks.iter().map(json_chunk).collect(),
            filtered: [
                f.candidates,
                f.after_threshold,
                f.after_dedup,
                f.after_budget,
            ],
            warnings: &result.warnings,
            model_loaded: result.stats.model_loaded,
            tokens: result.tokens,
            formatted: &result.formatted,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        for w in &result.warnings {
            tracing::warn!("{w}");
        }
        write!(out, "{}", result.formatted)?;
    }
    // The process ends after this answer: the OS reclaims the index state (on a large
    // repository, freeing it one allocation at a time is slow) and releases
    // its file locks. Nothing is pending: a one-shot refresh has committed before answering.
    std::mem::forget(retrievers);
    Ok(0)
}
