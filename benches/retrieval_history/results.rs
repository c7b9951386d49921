//! What a benchmark run produces: the names of the configurations compared, each case's
//! answers and scores, and what was done per repository (case selection, indexing time).

use crate::cases::{Case, Selection};
use crate::metrics::{Outcome, Scores};
use crate::repos::Repo;

/// The configurations compared, in table order.
pub const BASELINE: &str = "whole-file BM25";
pub const PREVIOUS: &str = "promptd previous ranking";
pub const LEXICAL: &str = "promptd default, lexical";
/// The shipped lexical configuration with `rag.followHits` from `EVAL_FOLLOW_HITS`.
pub const HITS_FOLLOWED: &str = "promptd lexical, followHits from env";
pub const HYBRID: &str = "promptd default, hybrid";

/// One case's answers from every configuration.
pub struct CaseResult {
    pub repo: &'static Repo,
    pub case: Case,
    pub outcomes: Vec<(&'static str, Outcome, Scores)>,
}

/// What was done for one repository.
pub struct RepoRun {
    pub repo: &'static Repo,
    pub selection: Selection,
    /// Seconds spent bringing the rankers' indexes (and vectors) up to date, over all cases.
    pub index_seconds: f64,
    /// Files in the whole-file index at the last case.
    pub baseline_files: usize,
    /// Cases where the hybrid configuration answered without vectors.
    pub hybrid_fallbacks: usize,
}
