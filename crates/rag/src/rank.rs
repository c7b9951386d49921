//! Ranking and filtering of lexical candidates: lexical/vector fusion (linear blend or
//! reciprocal-rank fusion), the weight of each file's kind (tests, docs, changelogs, vendored
//! and generated code below source unless the request asks for them) and of files the request
//! mentions, optional file-level aggregation, action-aware boosts (fix → error-handling code,
//! create → definitions and exports, refactor → large blocks), then the filters in order:
//! relevance threshold, exact/overlapping-range dedupe keeping the higher score, a cap of chunks
//! per file, token budget counted with cl100k_base, `top_k`; the best chunk always survives.

use std::collections::HashMap;

use super::config::{Fusion, RagConfig};
use super::index::{FileHit, IndexedChunk};
use super::kind::{FileKind, RepoLayout};
use super::query::{Action, FilterCounts, RetrievedChunk};
use super::request::Request;
use promptd_base::tokens::count_tokens;

/// Reads the action from the prompt's words.
pub fn detect_action(query: &str) -> Option<Action> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    if has(&[
        "fix",
        "bug",
        "bugs",
        "error",
        "errors",
        "crash",
        "crashes",
        "fails",
        "failing",
        "failure",
        "broken",
        "panic",
        "panics",
        "exception",
        "wrong",
        "incorrect",
        "regression",
        "debug",
    ]) {
        Some(Action::Fix)
    } else if has(&[
        "refactor",
        "restructure",
        "simplify",
        "cleanup",
        "clean",
        "rename",
        "extract",
        "split",
        "deduplicate",
        "reorganize",
    ]) {
        Some(Action::Refactor)
    } else if has(&[
        "add",
        "create",
        "implement",
        "new",
        "build",
        "write",
        "generate",
        "introduce",
        "support",
    ]) {
        Some(Action::Create)
    } else {
        None
    }
}

fn matches_action(action: Action, chunk: &IndexedChunk) -> bool {
    let text = &chunk.text;
    match action {
        Action::Fix => [
            "Err(",
            "Error",
            "error",
            "catch",
            "except",
            "raise ",
            "throw",
            "panic!",
            "unwrap",
            "rescue",
            "err != nil",
            "?;",
        ]
        .iter()
        .any(|m| text.contains(m)),
        Action::Create => {
            chunk.tags.iter().any(|t| !t.starts_with("[Section"))
                || [
                    "export ",
                    "pub fn",
                    "pub struct",
                    "def ",
                    "class ",
                    "func ",
                    "public ",
                ]
                .iter()
                .any(|m| text.contains(m))
        }
        Action::Refactor => chunk.end_line + 1 - chunk.start_line >= 30,
    }
}

const RRF_K: f32 = 60.0;

/// Moves each chunk's score toward its file's. A file scores `whole_file_weight` × its
/// whole-file BM25 (relative to the best file, times the file's weight) plus
/// `1 − whole_file_weight` × its best chunk, all times `1 + file_size_prior × ln(chunks)`; a
/// chunk keeps `1 − file_rank_weight` of its own score. Chunks of the best files come first,
/// each file's best chunk first.
fn rank_by_file(
    scored: &mut [RetrievedChunk],
    files: &[FileHit],
    weights: &HashMap<String, FileWeight>,
    config: &RagConfig,
    request: &Request,
    layout: Option<&RepoLayout>,
) {
    let max_file = files
        .iter()
        .map(|f| f.bm25)
        .fold(0.0f32, f32::max)
        .max(f32::MIN_POSITIVE);
    let mut whole: HashMap<&str, (f32, usize)> = HashMap::new();
    for f in files {
        let weight = weights.get(&f.path).map_or_else(
            || file_weight(&f.path, path_kind(&f.path, layout), config, request),
            |w| w.weight,
        );
        whole.insert(f.path.as_str(), (f.bm25 / max_file * weight, f.chunks));
    }
    let mut best: HashMap<String, f32> = HashMap::new();
    for s in scored.iter() {
        let b = best.entry(s.chunk.path.clone()).or_default();
        *b = b.max(s.score);
    }
    let w = config.whole_file_weight.clamp(0.0, 1.0);
    let share = config.file_rank_weight.clamp(0.0, 1.0);
    for s in scored.iter_mut() {
        let path = s.chunk.path.as_str();
        let (whole_score, chunks) = whole.get(path).copied().unwrap_or((0.0, 1));
        let size = 1.0 + config.file_size_prior * (chunks.max(1) as f32).ln();
        let file = (w * whole_score + (1.0 - w) * best[path]) * size;
        s.score = share * file + (1.0 - share) * s.score;
    }
}

/// A file's kind and the multiplier of its chunks ([`file_weight`]), computed once per file.
#[derive(Clone, Copy)]
struct FileWeight {
    weight: f32,
    kind: FileKind,
}

/// The kind of `path`: from the repository's layout when there is one, else from the path.
fn path_kind(path: &str, layout: Option<&RepoLayout>) -> FileKind {
    layout.map_or_else(|| FileKind::of(path), |l| l.kind(path))
}

/// The multiplier of `kind`: 1 for source code and for a kind the request asks about, else
/// the configured weight.
fn kind_weight(kind: FileKind, config: &RagConfig, request: &Request) -> f32 {
    if request.asked.includes(kind) {
        1.0
    } else {
        config.kind_weights.of(kind)
    }
}

/// The multiplier of every chunk of `path`, a file of `kind`: the kind's weight, times the
/// mentioned-file boost when the request names it.
fn file_weight(path: &str, kind: FileKind, config: &RagConfig, request: &Request) -> f32 {
    let mut weight = kind_weight(kind, config, request);
    if request.mentions(path) {
        weight *= config.mentioned_file_boost;
    }
    weight
}

/// Scores candidates (in BM25 order) for `request` and sorts them best first. `vectors[i]` is
/// the cosine of candidate `i` when every candidate has one; `files` are the best whole-file
/// matches with their BM25 scores (empty when file-level ranking is off). With a `layout`
/// (the repository's, [`RagConfig::content_kinds`]) file kinds come from it and from what each
/// chunk's content says ([`IndexedChunk::content_kind`]); without, from paths alone.
pub fn fuse(
    candidates: Vec<IndexedChunk>,
    vectors: Option<Vec<f32>>,
    files: &[FileHit],
    config: &RagConfig,
    request: &Request,
    action: Option<Action>,
    layout: Option<&RepoLayout>,
) -> Vec<RetrievedChunk> {
    let max_bm25 = candidates
        .iter()
        .map(|c| c.bm25)
        .fold(0.0f32, f32::max)
        .max(f32::MIN_POSITIVE);
    let count = candidates.len();
    let vector_rank: Option<Vec<usize>> = vectors.as_ref().map(|v| {
        let mut order: Vec<usize> = (0..v.len()).collect();
        order.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
        let mut rank = vec![0; v.len()];
        for (r, i) in order.into_iter().enumerate() {
            rank[i] = r;
        }
        rank
    });
    let mut scored: Vec<RetrievedChunk> = candidates
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let lexical = chunk.bm25 / max_bm25;
            let vector = vectors.as_ref().map(|v| v[i]);
            let score = match (config.fusion, vector, vector_rank.as_ref()) {
                (Fusion::Blend, Some(cos), _) => {
                    config.lexical_weight * lexical + config.vector_weight * cos
                }
                (Fusion::Rrf, Some(_), Some(rank)) => {
                    // Each order weighs its configured share. Min-max over the possible range:
                    // first in both orders scores 1, last in both 0, so the relevance
                    // threshold keeps its meaning.
                    let (lw, vw) = (config.lexical_weight, config.vector_weight);
                    let rrf = |r: usize| 1.0 / (RRF_K + 1.0 + r as f32);
                    let best = (lw + vw) * rrf(0);
                    let worst = (lw + vw) * rrf(count.saturating_sub(1));
                    let raw = lw * rrf(i) + vw * rrf(rank[i]);
                    if best > worst {
                        (raw - worst) / (best - worst)
                    } else {
                        1.0
                    }
                }
                _ => lexical,
            };
            RetrievedChunk {
                chunk,
                lexical,
                vector,
                score,
            }
        })
        .collect();
    let mut file_weights: HashMap<String, FileWeight> = HashMap::new();
    for s in &mut scored {
        let content = layout.and(s.chunk.content_kind);
        let file = match file_weights.get(&s.chunk.path) {
            Some(file) => *file,
            None => {
                let path = &s.chunk.path;
                // A generated file's header marks every one of its chunks.
                let kind = match content {
                    Some(FileKind::Generated) => FileKind::Generated,
                    _ => path_kind(path, layout),
                };
                let file = FileWeight {
                    weight: file_weight(path, kind, config, request),
                    kind,
                };
                file_weights.insert(path.clone(), file);
                file
            }
        };
        s.score *= file.weight;
        // A test module in a source file weighs as a test, its file as source.
        if content == Some(FileKind::Test) && file.kind == FileKind::Source {
            s.score *= kind_weight(FileKind::Test, config, request);
        }
    }
    if config.file_rank_weight > 0.0 {
        rank_by_file(&mut scored, files, &file_weights, config, request, layout);
    }
    if config.file_aggregation > 0.0 {
        let mut per_file: HashMap<String, f32> = HashMap::new();
        for s in &scored {
            *per_file.entry(s.chunk.path.clone()).or_default() += s.score;
        }
        for s in &mut scored {
            let others = per_file[&s.chunk.path] - s.score;
            s.score += config.file_aggregation * others;
        }
    }
    if let Some(action) = action
        && config.action_boost != 1.0
    {
        for s in &mut scored {
            if matches_action(action, &s.chunk) {
                s.score *= config.action_boost;
            }
        }
    }
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    scored
}

/// Threshold, dedupe, the per-file cap and the budget. `render` gives the text a chunk adds to
/// the formatted context; `available_tokens` is what the budget leaves after the active-file
/// section; `max_per_file` (0: no cap) chunks of one file are taken before any beyond the cap,
/// which only fill places nothing else took.
pub fn filter(
    scored: Vec<RetrievedChunk>,
    threshold: f32,
    top_k: usize,
    max_per_file: usize,
    available_tokens: usize,
    render: impl Fn(&RetrievedChunk) -> String,
) -> (Vec<RetrievedChunk>, FilterCounts) {
    let mut counts = FilterCounts {
        candidates: scored.len(),
        ..FilterCounts::default()
    };
    let mut kept: Vec<RetrievedChunk> = Vec::new();
    for (i, s) in scored.into_iter().enumerate() {
        // The best chunk always survives the threshold.
        if i == 0 || s.score >= threshold {
            kept.push(s);
        }
    }
    counts.after_threshold = kept.len();
    let mut unique: Vec<RetrievedChunk> = Vec::with_capacity(kept.len());
    for s in kept {
        let overlaps = unique.iter().any(|u| {
            u.chunk.path == s.chunk.path
                && u.chunk.start_line <= s.chunk.end_line
                && s.chunk.start_line <= u.chunk.end_line
        });
        if !overlaps {
            unique.push(s);
        }
    }
    counts.after_dedup = unique.len();
    // Within the cap first, then the rest, each in score order.
    let mut per_file: HashMap<&str, usize> = HashMap::new();
    let within_cap: Vec<bool> = unique
        .iter()
        .map(|s| {
            let n = per_file.entry(s.chunk.path.as_str()).or_default();
            *n += 1;
            max_per_file == 0 || *n <= max_per_file
        })
        .collect();
    let (first, rest): (Vec<_>, Vec<_>) = unique
        .into_iter()
        .zip(within_cap)
        .partition(|(_, within)| *within);
    let mut used = 0usize;
    let mut within: Vec<RetrievedChunk> = Vec::new();
    for (s, _) in first.into_iter().chain(rest) {
        if within.len() >= top_k.max(1) {
            break;
        }
        let tokens = count_tokens(&render(&s));
        if within.is_empty() || used + tokens <= available_tokens {
            used += tokens;
            within.push(s);
        }
    }
    within.sort_by(|a, b| b.score.total_cmp(&a.score));
    counts.after_budget = within.len();
    tracing::debug!(
        "Filtered: {} → {} (threshold) → {} (dedup) → {} (cap and budget)",
        counts.candidates,
        counts.after_threshold,
        counts.after_dedup,
        counts.after_budget
    );
    (within, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(path: &str, start: usize, end: usize, bm25: f32) -> IndexedChunk {
        IndexedChunk {
            path: path.into(),
            start_line: start,
            end_line: end,
            language: "rust".into(),
            tags: vec![],
            symbols: vec![],
            text: format!("fn f{start}() {{}}"),
            hash: [0; 16],
            bm25,
            content_kind: None,
        }
    }

    #[test]
    fn filters_count_each_stage_and_keep_best() {
        let config = RagConfig {
            action_boost: 1.0,
            ..RagConfig::default()
        };
        let candidates = vec![
            chunk("a.rs", 1, 10, 10.0),
            chunk("a.rs", 5, 20, 9.0),
            chunk("b.rs", 1, 10, 8.0),
            chunk("c.rs", 1, 10, 1.0),
        ];
        let scored = fuse(
            candidates,
            None,
            &[],
            &config,
            &Request::default(),
            None,
            None,
        );
        let (kept, counts) = filter(scored, 0.3, 6, 0, 10_000, |s| s.chunk.text.clone());
        assert_eq!(
            counts,
            FilterCounts {
                candidates: 4,
                after_threshold: 3,
                after_dedup: 2,
                after_budget: 2
            }
        );
        assert_eq!(kept[0].chunk.path, "a.rs");
        let (kept, counts) = filter(
            fuse(
                vec![chunk("z.rs", 1, 2, 1.0)],
                None,
                &[],
                &config,
                &Request::default(),
                None,
                None,
            ),
            2.0,
            6,
            0,
            0,
            |s| s.chunk.text.clone(),
        );
        assert_eq!((kept.len(), counts.after_budget), (1, 1));
    }

    #[test]
    fn actions_from_verbs() {
        assert_eq!(detect_action("fix the crash in login"), Some(Action::Fix));
        assert_eq!(detect_action("add a retry option"), Some(Action::Create));
        assert_eq!(detect_action("refactor the parser"), Some(Action::Refactor));
        assert_eq!(detect_action("where is the parser"), None);
    }
}
