//! Retrieval benchmark on real repositories' history: for fix commits of public projects, does
//! a configuration rank a file the fix changed? Cases are built at run time from bare git
//! repositories (never committed; see `repos.rs` for the list, pinned commits and where they
//! are looked for), each asked against its parent commit's tree, checked out case after case
//! into one scratch clone per repository, where every ranker indexes it anew. Configurations in
//! the same run: whole-file BM25 (the naive baseline), promptd's previous ranking (file kinds,
//! request analysis, file-level ranking and following off), promptd's shipped defaults with a
//! lexical index, the same following the symbols of another number of best hits to their
//! definitions (`rag.followHits`, `EVAL_FOLLOW_HITS`: 3 by default, against the shipped 0),
//! and (with `EVAL_HYBRID=1` and the embedding model installed) the shipped
//! defaults with vectors. Prints Acc@1, Acc@5, Chunks@6, Recall@5, MRR@10 and latency per
//! configuration for the held-out half (the number to report) and the tuning half, with
//! per-repository and per-language breakdowns and the kinds of files that crowd the shipped
//! lexical ranking when it misses; writes everything to `target/eval-history/results.json`
//! (one object per request kind).
//!
//!
//! A second request kind, issue reports (`EVAL_KINDS=issues`, or `both` for the two in one
//! run): real bug reports and feature requests from published localisation and
//! issue-resolution datasets, Python and Rust, Go, Java, JavaScript (see `issues.rs`), each asked against the base commit it was filed at, with the source files of
//! its merged fix as gold. Its halves are whole repositories; whole-file BM25 over all files
//! and over the files that are not tests, promptd's shipped lexical default and the
//! `EVAL_VARIANTS` answer each report, and the tree is indexed once per base commit.
//!
//! Run it with `scripts/eval-retrieval`. Environment:
//! - `EVAL_HISTORY_MIRRORS`: folder of bare repositories (default `/work/.mirror` when it
//!   exists, else `target/eval-history/mirrors`); `EVAL_HISTORY_CLONE=1` clones missing ones
//!   from GitHub there.
//! - `EVAL_HISTORY_CASES`: newest eligible cases kept per repository (default 100).
//! - `EVAL_HISTORY_REPOS`: comma-separated short names (`requests,cobra`) to run a subset.
//! - `EVAL_HYBRID=1`: add the hybrid configuration (needs `. .deps/env.sh`).
//! - `EVAL_HISTORY_WORK`: the scratch folder of work trees and results (default
//!   `target/eval-history`).
//! - `EVAL_HISTORY_OUT`: the JSON file (default `<work>/results.json`).
//! - `EVAL_FOLLOW_HITS`: best hits whose used symbols the third configuration follows
//!   (default 0; the shipped configuration follows 3).
//! - `EVAL_VERBOSE=1`: one line per case (each configuration's rank of the first gold file, `*`
//!   when a gold file is among the six chunks' files).
//! - `EVAL_VARIANTS`: extra lexical configurations to compare, `name={json};name2={json}`, each
//!   a `rag` config section applied over the shipped defaults (e.g.
//!   `nocap={"maxChunksPerFile":0}`).
//! - `EVAL_SPLIT`: `tuning` or `held-out` to run only that half (tune on `tuning`).
//! - `EVAL_KINDS`: `commits` (the default), `issues` or `both`.
//! - `EVAL_ISSUE_CASES`: issue reports kept per repository (default 30; sympy alone has 137,
//!   and its tree is the slowest to index).
//! - `EVAL_REUSE_INDEX=1`: the issue reports' index is brought up to date from one base
//!   commit to the next instead of built anew for each (promptd merges the segments of
//!   replaced chunks after every refresh); much faster on large trees.
//! - `EVAL_ACCEPTANCE=1`: also the acceptance repositories' issue reports, in a table of their
//!   own (`issues::Half::Acceptance`).

mod baseline;
mod cases;
mod issues;
mod metrics;
mod paths;
mod report;
mod repos;
mod results;

use std::path::{Path, PathBuf};
use std::time::Instant;

use promptd::rag::config::KindWeights;
use promptd::rag::store::RagDir;
use promptd::rag::{RagConfig, RetrievalMode, RetrievalQuery, Retriever};

use crate::baseline::WholeFileBm25;
use crate::issues::{Half, ISSUE_REPOS, IssueRepo};
use crate::metrics::{Outcome, TOP_FILES};
use crate::paths::FileKind;
use crate::repos::{REPOS, Repo, WorkTree};
use crate::results::{
    BASELINE, BASELINE_NO_TESTS, CaseResult, HITS_FOLLOWED, HYBRID, LEXICAL, PREVIOUS, RepoRun,
    Selected,
};

// The allocator the `promptd` binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v == "1")
}

/// The shipped configuration as a one-shot or long-lived caller gets it, with the index
/// refreshed explicitly (no folder watcher) and vectors only when asked for.
fn shipped(embeddings: bool) -> RagConfig {
    RagConfig {
        embeddings,
        watch: false,
        ..RagConfig::default()
    }
}

/// The ranking promptd shipped before file kinds, request analysis and file-level ranking:
/// the shipped configuration with those turned off, the baseline the changes are measured
/// against.
fn previous() -> RagConfig {
    RagConfig {
        symbol_boost: 2.0,
        path_boost: 1.0,
        identifier_weight: 1.0,
        plain_words: 0,
        repeated_term_weight: 0.0,
        read_reports: false,
        mentioned_file_boost: 1.0,
        kind_weights: KindWeights::NEUTRAL,
        file_rank_weight: 0.0,
        file_size_prior: 0.0,
        max_chunks_per_file: 0,
        follow_hits: 0,
        ..shipped(false)
    }
}

/// The named configurations of `EVAL_VARIANTS`, each its JSON over the shipped lexical one.
fn variants() -> Result<Vec<(&'static str, RagConfig)>, String> {
    let Ok(spec) = std::env::var("EVAL_VARIANTS") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in spec.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, json) = entry
            .split_once('=')
            .ok_or_else(|| format!("EVAL_VARIANTS: `{entry}` is not name={{json}}"))?;
        let mut base = serde_json::to_value(shipped(false)).map_err(|e| e.to_string())?;
        let over: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("EVAL_VARIANTS {name}: {e}"))?;
        let serde_json::Value::Object(over) = over else {
            return Err(format!("EVAL_VARIANTS {name}: not a JSON object"));
        };
        for (k, v) in over {
            base[k] = v;
        }
        let config: RagConfig =
            serde_json::from_value(base).map_err(|e| format!("EVAL_VARIANTS {name}: {e}"))?;
        out.push((
            &*Box::leak(name.trim().to_string().into_boxed_str()),
            config,
        ));
    }
    Ok(out)
}

/// Best-ranked chunks whose used symbols the `hits_followed` configuration follows to their
/// definitions (`EVAL_FOLLOW_HITS`, default 3: what following the best hits would add to the
/// shipped ranking, which follows none).
fn follow_hits() -> usize {
    std::env::var("EVAL_FOLLOW_HITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// `config` following the symbols of another number of best hits (there is no active file
/// here, so that is all it follows).
fn hits_followed(config: RagConfig) -> RagConfig {
    RagConfig {
        follow_hits: follow_hits(),
        ..config
    }
}

/// The same ranking with the output filters lifted (no threshold, no token budget, 40 chunks),
/// so file-level metrics see ten files.
fn deep(config: RagConfig) -> RagConfig {
    RagConfig {
        top_k: 40,
        threshold: 0.0,
        token_budget: 1_000_000,
        ..config
    }
}

fn distinct_files<'a>(paths: impl Iterator<Item = &'a str>, limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        if out.len() >= limit {
            break;
        }
        if !out.iter().any(|o| o == p) {
            out.push(p.to_string());
        }
    }
    out
}

fn rag(e: promptd::rag::RagError) -> String {
    e.to_string()
}

/// Asks the shipped retriever (timed: the latency) and the deep one (the file ranking).
fn promptd_outcome(
    shipped: &Retriever,
    deep: &Retriever,
    request: &str,
    hybrid: bool,
) -> Result<(Outcome, bool), String> {
    let started = Instant::now();
    let answer = shipped
        .retrieve(&RetrievalQuery::new(request))
        .map_err(rag)?;
    let latency_ms = started.elapsed().as_secs_f64() * 1e3;
    let ranked = deep.retrieve(&RetrievalQuery::new(request)).map_err(rag)?;
    let fell_back = hybrid
        && (answer.stats.mode != RetrievalMode::Hybrid
            || ranked.stats.mode != RetrievalMode::Hybrid);
    Ok((
        Outcome {
            files: distinct_files(
                ranked.chunks.iter().map(|c| c.chunk.path.as_str()),
                TOP_FILES,
            ),
            chunk_files: answer.chunks.iter().map(|c| c.chunk.path.clone()).collect(),
            latency_ms,
        },
        fell_back,
    ))
}

fn open(tree: &Path, config: RagConfig) -> Result<Retriever, String> {
    Retriever::open(tree, config).map_err(rag)
}

/// Brings the retriever's index (and, when it uses them, its vectors) up to date.
fn index(retriever: &Retriever) -> Result<(), String> {
    let summary = retriever.index(&|_| {}).map_err(rag)?;
    for w in &summary.warnings {
        eprintln!("  {}: {w}", retriever.repo().display());
    }
    Ok(())
}

/// Removes promptd's index (tantivy folder and manifest) from the work tree so the next
/// retriever builds it anew; the vector cache stays (vectors are keyed by chunk content). An
/// index refreshed along the history ranks differently from one built on the same tree
/// (tantivy counts deleted documents in BM25 statistics until segments merge, and merges run
/// in the background), which made two runs disagree on the order of many cases.
fn fresh_index(tree: &Path) -> Result<(), String> {
    let rag_dir = RagDir::of(tree);
    for file in [rag_dir.manifest(), rag_dir.manifest_next()] {
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", file.display()));
            }
            _ => {}
        }
    }
    let index = rag_dir.index_dir();
    match std::fs::remove_dir_all(&index) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("{}: {e}", index.display()))
        }
        _ => Ok(()),
    }
}

fn run_repo(
    repo: &'static Repo,
    work_root: &Path,
    max_cases: usize,
    hybrid: bool,
    variants: &[(&'static str, RagConfig)],
    split: Option<cases::Split>,
    results: &mut Vec<CaseResult>,
) -> Result<RepoRun, String> {
    let git_dir = repos::git_dir(repo, work_root)?;
    let (mut cases, selection) = cases::build(repo, &git_dir, max_cases)?;
    if let Some(split) = split {
        cases.retain(|c| c.split == split);
    }
    eprintln!(
        "{}: {} eligible fix commits, {} kept ({} held-out) from {}",
        repo.slug,
        selection.eligible,
        cases.len(),
        cases
            .iter()
            .filter(|c| c.split == cases::Split::HeldOut)
            .count(),
        git_dir.display()
    );
    let tree = WorkTree::prepare(repo, &git_dir, work_root)?;
    let mut run = RepoRun {
        repo,
        selection: Selected::Commits(selection),
        index_seconds: 0.0,
        baseline_files: 0,
        hybrid_fallbacks: 0,
    };
    let started = Instant::now();
    let total = cases.len();
    for (i, case) in cases.into_iter().enumerate() {
        tree.checkout(&case.parent)?;
        let tracked = tree.files_at(&case.parent)?;
        let indexing = Instant::now();
        let baseline = WholeFileBm25::build(&tree.dir, &tracked, repo.langs)?;
        fresh_index(&tree.dir)?;
        let lexical_shipped = open(&tree.dir, shipped(false))?;
        index(&lexical_shipped)?;
        let lexical_deep = open(&tree.dir, deep(shipped(false)))?;
        index(&lexical_deep)?;
        let following_shipped = open(&tree.dir, hits_followed(shipped(false)))?;
        index(&following_shipped)?;
        let following_deep = open(&tree.dir, hits_followed(deep(shipped(false))))?;
        index(&following_deep)?;
        run.index_seconds += indexing.elapsed().as_secs_f64();
        run.baseline_files = baseline.files();

        let mut outcomes = Vec::new();
        let t = Instant::now();
        let files = baseline.search(&case.request, TOP_FILES)?;
        let latency_ms = t.elapsed().as_secs_f64() * 1e3;
        outcomes.push((
            BASELINE,
            Outcome {
                chunk_files: files.iter().take(metrics::TOP_CHUNKS).cloned().collect(),
                files,
                latency_ms,
            },
        ));
        let (lexical, _) = promptd_outcome(&lexical_shipped, &lexical_deep, &case.request, false)?;
        outcomes.push((LEXICAL, lexical));
        let (followed, _) =
            promptd_outcome(&following_shipped, &following_deep, &case.request, false)?;
        outcomes.push((HITS_FOLLOWED, followed));
        let indexing = Instant::now();
        let previous_shipped = open(&tree.dir, previous())?;
        index(&previous_shipped)?;
        let previous_deep = open(&tree.dir, deep(previous()))?;
        index(&previous_deep)?;
        run.index_seconds += indexing.elapsed().as_secs_f64();
        let (outcome, _) =
            promptd_outcome(&previous_shipped, &previous_deep, &case.request, false)?;
        outcomes.push((PREVIOUS, outcome));
        for (name, config) in variants {
            let indexing = Instant::now();
            let shipped = open(&tree.dir, config.clone())?;
            index(&shipped)?;
            let deep = open(&tree.dir, deep(config.clone()))?;
            index(&deep)?;
            run.index_seconds += indexing.elapsed().as_secs_f64();
            let (outcome, _) = promptd_outcome(&shipped, &deep, &case.request, false)?;
            outcomes.push((*name, outcome));
        }
        if hybrid {
            // The deep retriever opens after the shipped one embedded the new chunks: each
            // keeps its own in-memory vector cache, loaded from disk with its model.
            let indexing = Instant::now();
            let h_shipped = open(&tree.dir, shipped(true))?;
            index(&h_shipped)?;
            let h_deep = open(&tree.dir, deep(shipped(true)))?;
            index(&h_deep)?;
            run.index_seconds += indexing.elapsed().as_secs_f64();
            let (outcome, fell_back) = promptd_outcome(&h_shipped, &h_deep, &case.request, true)?;
            run.hybrid_fallbacks += usize::from(fell_back);
            outcomes.push((HYBRID, outcome));
        }
        record(results, repo, case, outcomes, (i, total, started), true);
    }
    Ok(run)
}

/// Scores one case's outcomes against its gold files, prints its line (`EVAL_VERBOSE`; with
/// the repository when `show_repo`) and the progress every 25 cases (`i` of `total`, since
/// `started`), and records it.
fn record(
    results: &mut Vec<CaseResult>,
    repo: &'static Repo,
    case: cases::Case,
    outcomes: Vec<(&'static str, Outcome)>,
    (i, total, started): (usize, usize, Instant),
    show_repo: bool,
) {
    let outcomes: Vec<_> = outcomes
        .into_iter()
        .map(|(name, o)| {
            let s = metrics::score(&o, &case.gold);
            (name, o, s)
        })
        .collect();
    if env_flag("EVAL_VERBOSE") {
        let ranks: Vec<String> = outcomes
            .iter()
            .map(|(n, _, s)| {
                let rank = s.rank.map_or("-".into(), |r| r.to_string());
                // `*`: a gold file among the six chunks' files (Chunks@6).
                let chunks6 = if s.chunks6 { "*" } else { "" };
                format!("{n}: {rank}{chunks6}")
            })
            .collect();
        let shown = if show_repo {
            format!(" {:<8}", repo.short())
        } else {
            String::new()
        };
        eprintln!(
            "  {}{shown} {:<9} gold {:?}  {}",
            case.label(),
            case.split.label(),
            case.gold,
            ranks.join("  ")
        );
    }
    if (i + 1) % 25 == 0 || i + 1 == total {
        eprintln!(
            "  {}: {}/{} cases ({:.0} s)",
            repo.short(),
            i + 1,
            total,
            started.elapsed().as_secs_f64()
        );
    }
    results.push(CaseResult {
        repo,
        case,
        outcomes,
    });
}

/// The lexical rankers of one tree: a configuration as shipped (timed) and deep (ranking).
struct Rankers {
    name: &'static str,
    shipped: Retriever,
    deep: Retriever,
}

fn rankers(tree: &Path, name: &'static str, config: &RagConfig) -> Result<Rankers, String> {
    let shipped = open(tree, config.clone())?;
    index(&shipped)?;
    let deep = open(tree, deep(config.clone()))?;
    index(&deep)?;
    Ok(Rankers {
        name,
        shipped,
        deep,
    })
}

/// The issue-report cases of one repository: the tree is checked out and indexed once per
/// base commit; whole-file BM25 (all files, and without tests), the shipped lexical default
/// and the `EVAL_VARIANTS` answer each report.
fn run_issue_repo(
    repo: &'static IssueRepo,
    reports: &[issues::Report],
    work_root: &Path,
    max_cases: usize,
    variants: &[(&'static str, RagConfig)],
    split: Option<cases::Split>,
    results: &mut Vec<CaseResult>,
) -> Result<RepoRun, String> {
    let git_dir = repos::git_dir(&repo.repo, work_root)?;
    let tree = WorkTree::prepare(&repo.repo, &git_dir, work_root)?;
    let mut tracked_at = |sha: &str| -> Result<std::collections::HashSet<String>, String> {
        Ok(tree.files_at(sha)?.into_iter().collect())
    };
    let (mut cases, selection) = issues::build(repo, reports, max_cases, &mut tracked_at)?;
    if let Some(split) = split {
        cases.retain(|c| c.split == split);
    }
    let datasets: std::collections::BTreeSet<&str> = reports.iter().map(|r| r.dataset).collect();
    eprintln!(
        "{}: {} issue reports ({}), {} kept ({:?}), {} asked in this run",
        repo.repo.slug,
        selection.eligible,
        datasets.into_iter().collect::<Vec<_>>().join(", "),
        selection.kept,
        repo.half,
        cases.len(),
    );
    let mut run = RepoRun {
        repo: &repo.repo,
        selection: Selected::Issues(selection),
        index_seconds: 0.0,
        baseline_files: 0,
        hybrid_fallbacks: 0,
    };
    let started = Instant::now();
    let total = cases.len();
    let mut current: Option<(String, WholeFileBm25, WholeFileBm25, Vec<Rankers>)> = None;
    for (i, case) in cases.into_iter().enumerate() {
        if current.as_ref().is_none_or(|(sha, ..)| *sha != case.parent) {
            // The previous tree's retrievers close before its index is removed.
            drop(current.take());
            tree.checkout(&case.parent)?;
            let tracked = tree.files_at(&case.parent)?;
            let indexing = Instant::now();
            let baseline = WholeFileBm25::build(&tree.dir, &tracked, repo.repo.langs)?;
            let untested: Vec<String> = tracked
                .iter()
                .filter(|p| paths::classify(p, repo.repo.foreign) != FileKind::Test)
                .cloned()
                .collect();
            let no_tests = WholeFileBm25::build(&tree.dir, &untested, repo.repo.langs)?;
            if !env_flag("EVAL_REUSE_INDEX") {
                fresh_index(&tree.dir)?;
            }
            let mut all = vec![rankers(&tree.dir, LEXICAL, &shipped(false))?];
            for (name, config) in variants {
                all.push(rankers(&tree.dir, name, config)?);
            }
            run.index_seconds += indexing.elapsed().as_secs_f64();
            run.baseline_files = baseline.files();
            current = Some((case.parent.clone(), baseline, no_tests, all));
        }
        let (_, baseline, no_tests, all) = current.as_ref().expect("indexed above");
        let mut outcomes = Vec::new();
        for (name, bm25) in [(BASELINE, baseline), (BASELINE_NO_TESTS, no_tests)] {
            let t = Instant::now();
            let files = bm25.search(&case.request, TOP_FILES)?;
            let latency_ms = t.elapsed().as_secs_f64() * 1e3;
            outcomes.push((
                name,
                Outcome {
                    chunk_files: files.iter().take(metrics::TOP_CHUNKS).cloned().collect(),
                    files,
                    latency_ms,
                },
            ));
        }
        for r in all {
            let (outcome, _) = promptd_outcome(&r.shipped, &r.deep, &case.request, false)?;
            outcomes.push((r.name, outcome));
        }
        record(
            results,
            &repo.repo,
            case,
            outcomes,
            (i, total, started),
            false,
        );
    }
    Ok(run)
}

/// Which request kinds a run measures (`EVAL_KINDS`: `commits`, `issues` or `both`).
struct Kinds {
    commits: bool,
    issues: bool,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn write_out(out: &Path, report: &serde_json::Value) {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).expect("results folder");
    }
    std::fs::write(
        out,
        serde_json::to_vec_pretty(report).expect("results JSON"),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    println!("results: {}", out.display());
}

fn main() {
    let work_root = std::env::var_os("EVAL_HISTORY_WORK")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/eval-history"));
    let max_cases = env_usize("EVAL_HISTORY_CASES", 100);
    let max_issues = env_usize("EVAL_ISSUE_CASES", 30);
    let only: Option<Vec<String>> = std::env::var("EVAL_HISTORY_REPOS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let selected = |short: &str| only.as_ref().is_none_or(|o| o.iter().any(|s| s == short));
    let kinds = match std::env::var("EVAL_KINDS").as_deref() {
        Err(_) | Ok("commits") => Kinds {
            commits: true,
            issues: false,
        },
        Ok("issues") => Kinds {
            commits: false,
            issues: true,
        },
        Ok("both") => Kinds {
            commits: true,
            issues: true,
        },
        Ok(other) => {
            eprintln!("eval-history: EVAL_KINDS is commits, issues or both, not {other}");
            std::process::exit(2);
        }
    };
    let acceptance = env_flag("EVAL_ACCEPTANCE");
    let hybrid = env_flag("EVAL_HYBRID");
    let variants = variants().unwrap_or_else(|e| {
        eprintln!("eval-history: {e}");
        std::process::exit(2);
    });
    let split = match std::env::var("EVAL_SPLIT").as_deref() {
        Err(_) => None,
        Ok("tuning") => Some(cases::Split::Tuning),
        Ok("held-out") => Some(cases::Split::HeldOut),
        Ok(other) => {
            eprintln!("eval-history: EVAL_SPLIT is tuning or held-out, not {other}");
            std::process::exit(2);
        }
    };
    let out = std::env::var_os("EVAL_HISTORY_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| work_root.join("results.json"));
    let fail = |e: String| -> ! {
        eprintln!("eval-history: {e}");
        std::process::exit(1);
    };
    let mut json = serde_json::Map::new();
    if kinds.commits {
        let started = Instant::now();
        let mut results = Vec::new();
        let mut runs = Vec::new();
        for repo in REPOS.iter().filter(|r| selected(r.short())) {
            match run_repo(
                repo,
                &work_root,
                max_cases,
                hybrid,
                &variants,
                split,
                &mut results,
            ) {
                Ok(run) => runs.push(run),
                Err(e) => fail(e),
            }
        }
        let mut configs = vec![BASELINE, PREVIOUS, LEXICAL, HITS_FOLLOWED];
        configs.extend(variants.iter().map(|(name, _)| *name));
        if hybrid {
            configs.push(HYBRID);
        }
        let report = report::Report {
            title: "real fix commits (request: the commit message)",
            selection_header: "commits / not a fix / release-revert / source files not 1–5 / gold not in parent / message too short / duplicate → eligible → kept",
            configs: &configs,
            runs: &runs,
            results: &results,
            max_cases,
            seconds: started.elapsed().as_secs_f64(),
        };
        print!("{}", report.text());
        json.insert("commit_messages".into(), report.json());
    }
    if kinds.issues {
        let reports = issues::read_dumps(&work_root).unwrap_or_else(|e| fail(e));
        let mut configs = vec![BASELINE, BASELINE_NO_TESTS, LEXICAL];
        configs.extend(variants.iter().map(|(name, _)| *name));
        let halves: &[(&str, &str, &[Half])] = &[
            (
                "issue_reports",
                "real issue reports (request: the report as filed)",
                &[Half::Tuning, Half::HeldOut],
            ),
            (
                "issue_reports_acceptance",
                "real issue reports, ACCEPTANCE repositories (never tuned on; the held-out column is theirs)",
                &[Half::Acceptance],
            ),
        ];
        for (key, title, wanted) in halves {
            if wanted.contains(&Half::Acceptance) && !acceptance {
                continue;
            }
            let started = Instant::now();
            let mut results = Vec::new();
            let mut runs = Vec::new();
            for repo in ISSUE_REPOS.iter().filter(|r| {
                // A run of one half needs no mirror of the other's repositories.
                wanted.contains(&r.half)
                    && split.is_none_or(|s| r.half.split() == s)
                    && selected(r.repo.short())
            }) {
                let mine = reports
                    .get(&repo.repo.slug.to_ascii_lowercase())
                    .map_or(&[][..], Vec::as_slice);
                match run_issue_repo(
                    repo,
                    mine,
                    &work_root,
                    max_issues,
                    &variants,
                    split,
                    &mut results,
                ) {
                    Ok(run) => runs.push(run),
                    Err(e) => fail(e),
                }
            }
            let report = report::Report {
                title,
                selection_header: "reports / empty / no source file of the fix at the base commit → eligible → kept",
                configs: &configs,
                runs: &runs,
                results: &results,
                max_cases: max_issues,
                seconds: started.elapsed().as_secs_f64(),
            };
            print!("\n{}", report.text());
            json.insert((*key).into(), report.json());
        }
    }
    write_out(&out, &serde_json::Value::Object(json));
}
