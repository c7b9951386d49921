//! What a benchmark run produces: the names of the configurations compared, each case's
//! answers and scores, and what was done per repository (case selection, indexing time).

use serde::Serialize;

use crate::cases::{Case, Selection};
use crate::issues::IssueSelection;
use crate::metrics::{Outcome, Scores};
use crate::repos::Repo;

/// The configurations compared, in table order.
pub const BASELINE: &str = "whole-file BM25";
pub const PREVIOUS: &str = "promptd previous ranking";
pub const LEXICAL: &str = "promptd default, lexical";
/// The shipped lexical configuration with `rag.followHits` from `EVAL_FOLLOW_HITS`.
pub const HITS_FOLLOWED: &str = "promptd lexical, followHits from env";
pub const HYBRID: &str = "promptd default, hybrid";
/// Whole-file BM25 over the files that are not tests (by promptd's file kinds).
pub const BASELINE_NO_TESTS: &str = "whole-file BM25, no tests";

/// How a repository's cases were selected, by request kind.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Selected {
    Commits(Selection),
    Issues(IssueSelection),
}

impl Selected {
    /// The counts in the order of [`Selected::header`].
    pub fn line(&self) -> String {
        match self {
            Selected::Commits(s) => format!(
                "{} / {} / {} / {} / {} / {} / {} → {} → {}",
                s.commits,
                s.not_a_fix,
                s.release_or_revert,
                s.source_files_not_1_to_5,
                s.gold_absent_in_parent,
                s.message_too_short,
                s.duplicate,
                s.eligible,
                s.kept
            ),
            Selected::Issues(s) => format!(
                "{} / {} / {} → {} → {}",
                s.instances, s.empty_report, s.no_source_gold, s.eligible, s.kept
            ),
        }
    }
}

/// One case's answers from every configuration.
pub struct CaseResult {
    pub repo: &'static Repo,
    pub case: Case,
    pub outcomes: Vec<(&'static str, Outcome, Scores)>,
}

/// What was done for one repository.
pub struct RepoRun {
    pub repo: &'static Repo,
    pub selection: Selected,
    /// Seconds spent bringing the rankers' indexes (and vectors) up to date, over all cases.
    pub index_seconds: f64,
    /// Files in the whole-file index at the last case.
    pub baseline_files: usize,
    /// Cases where the hybrid configuration answered without vectors.
    pub hybrid_fallbacks: usize,
}
