//! Following the code: adds to a ranking the definitions of the symbols that the file being
//! edited and the best hits use (`rag.followHits` of them), the way a reader jumps from a call
//! to the function it calls. The uses come from tree-sitter tag queries ([`symbol_tags`]); where
//! each used name is defined comes from the index's symbol field
//! ([`CodeIndex::chunks_with_symbol_words`], at most [`MAX_CHUNKS_READ`] chunks read a query).
//!
//! Which definitions are worth their place is a weighting in the spirit of Aider's repo map
//! (its def/ref graph, without the PageRank iterations: here every use starts at the active file
//! or at a hit, one step away from its definition). A name's weight is, summed over the places
//! that use it, the score of that place times the square root of its uses there; a name the
//! request itself mentions counts [`MENTIONED`] times more. The weight is divided among the
//! files defining the name (fewer definitions, more specific), and a name defined in more than
//! [`MAX_DEFINING_FILES`] files, or carried by the symbols of more than [`MAX_SYMBOL_CHUNKS`]
//! chunks (`get`, `new`, `run`), is not followed at all. Names the active file defines itself,
//! and definitions already ranked at least as high, are not added again.
//!
//! A followed definition enters the ranking as a reference chunk scored
//! [`FOLLOW_DISCOUNT`] × (the score of the place using it, the active file counting as the best
//! hit) × (its weight relative to the best followed one), tagged
//! `[Followed: name, other_name from path:line]` (the names it defines that are followed, and
//! where the best of them is first used); the usual threshold, dedupe, budget and `top_k` filters
//! then apply to it like to any other chunk.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::chunk::{Language, MAX_PARSED_BYTES, TagRole, symbol_tags};
use super::error::RagError;
use super::index::{CodeIndex, IndexedChunk};
use super::query::RetrievedChunk;
use super::tokenize;

/// Weight multiplier of a name the request mentions.
pub const MENTIONED: f32 = 4.0;
/// Names defined in more files than this are too ambiguous to follow.
pub const MAX_DEFINING_FILES: usize = 3;
/// Names whose words make up the symbols of more chunks than this are too common to follow
/// (and their chunks are not read).
pub const MAX_SYMBOL_CHUNKS: usize = 48;
/// A followed definition ranks below the place that uses it.
pub const FOLLOW_DISCOUNT: f32 = 0.9;
/// Used names looked up in the index, best weighted first.
const MAX_NAMES: usize = 24;
/// Stored chunks read per query while looking names up (best weighted names first): bounds
/// the cost on large trees, where a name's words can sit in the symbols of dozens of chunks.
const MAX_CHUNKS_READ: usize = 256;
/// Names shorter than this (`i`, `ok`, `id`) say too little to follow.
const MIN_NAME_CHARS: usize = 3;

/// Source that uses names: the active file (whole) or one ranked chunk.
pub struct FollowSource<'a> {
    pub path: &'a str,
    pub text: &'a str,
    /// Line number of the first line of `text`.
    pub first_line: usize,
    /// The source's score in this ranking (the active file counts as the best hit).
    pub score: f32,
}

/// What to follow and how much of it to add.
pub struct FollowRequest<'a> {
    /// The request's text (names it mentions weigh more).
    pub query: &'a str,
    /// The active file (path relative to the repository, and on disk), when there is one.
    pub active: Option<(&'a str, &'a Path)>,
    /// Ranked chunks whose uses are followed, from the top.
    pub hits: usize,
    /// Most definitions added.
    pub max: usize,
}

/// Evidence for following one name.
#[derive(Debug)]
struct UsedName {
    weight: f32,
    /// Best score among the sources using the name.
    origin: f32,
    /// `path:line` of its first use in the best-scored source.
    used_at: String,
}

/// A definition worth adding.
#[derive(Debug)]
struct Candidate {
    chunk: IndexedChunk,
    weight: f32,
    origin: f32,
    /// The followed names it defines, best weighted first.
    names: Vec<String>,
    used_at: String,
}

/// The names `sources` use, weighted (see the module doc); names in `skip` are left out.
fn used_names(
    sources: &[FollowSource],
    skip: &HashSet<String>,
    query: &str,
) -> HashMap<String, UsedName> {
    let mentioned: HashSet<String> = tokenize::tokens(query)
        .into_iter()
        .map(|t| t.to_lowercase())
        .collect();
    let mut names: HashMap<String, UsedName> = HashMap::new();
    for source in sources {
        let tags = symbol_tags(
            Language::from_path(source.path),
            source.text,
            source.first_line,
        );
        let defined: HashSet<&str> = tags
            .iter()
            .filter(|t| t.role == TagRole::Definition)
            .map(|t| t.name.as_str())
            .collect();
        let mut uses: HashMap<&str, (usize, usize)> = HashMap::new();
        for t in tags.iter().filter(|t| t.role == TagRole::Reference) {
            if t.name.chars().count() < MIN_NAME_CHARS
                || defined.contains(t.name.as_str())
                || skip.contains(&t.name)
            {
                continue;
            }
            uses.entry(&t.name).or_insert((0, t.line)).0 += 1;
        }
        for (name, (count, line)) in uses {
            let weight = source.score * (count as f32).sqrt();
            let used_at = format!("{}:{line}", source.path);
            match names.get_mut(name) {
                Some(u) => {
                    u.weight += weight;
                    if source.score > u.origin {
                        u.origin = source.score;
                        u.used_at = used_at;
                    }
                }
                None => {
                    names.insert(
                        name.to_string(),
                        UsedName {
                            weight,
                            origin: source.score,
                            used_at,
                        },
                    );
                }
            }
        }
    }
    for (name, used) in &mut names {
        if mentioned.contains(&name.to_lowercase()) {
            used.weight *= MENTIONED;
        }
    }
    names
}

/// Whether `a` and `b` share a line of the same file.
fn overlaps(a: &IndexedChunk, b: &IndexedChunk) -> bool {
    a.path == b.path && a.start_line <= b.end_line && b.start_line <= a.end_line
}

/// The definitions of the names the active file and the first `request.hits` chunks of
/// `ranked` (sorted best first) use, added to `ranked` as described in the module doc, which
/// comes back sorted best first again. Returns how many definitions were added or raised.
pub fn add_definitions(
    index: &CodeIndex,
    ranked: &mut Vec<RetrievedChunk>,
    request: &FollowRequest,
) -> Result<usize, RagError> {
    if request.max == 0 || (request.active.is_none() && request.hits == 0) {
        return Ok(0);
    }
    let best = ranked.first().map_or(1.0, |s| s.score);
    // Read from disk, as the active-file section is: the file being edited is the one most
    // likely to have changed since the last refresh.
    let active_text = request
        .active
        .and_then(|(path, abs)| Some((path, std::fs::read(abs).ok()?)))
        .filter(|(_, bytes)| bytes.len() <= MAX_PARSED_BYTES);
    let active_text = active_text
        .as_ref()
        .map(|(path, bytes)| (*path, String::from_utf8_lossy(bytes)));
    let mut sources: Vec<FollowSource> = Vec::new();
    let mut skip: HashSet<String> = HashSet::new();
    if let Some((path, text)) = &active_text {
        // What the active file defines is already in front of the reader.
        skip.extend(
            symbol_tags(Language::from_path(path), text, 1)
                .into_iter()
                .filter(|t| t.role == TagRole::Definition)
                .map(|t| t.name),
        );
        sources.push(FollowSource {
            path,
            text,
            first_line: 1,
            score: best,
        });
    }
    sources.extend(ranked.iter().take(request.hits).map(|s| FollowSource {
        path: &s.chunk.path,
        text: &s.chunk.text,
        first_line: s.chunk.start_line,
        score: s.score,
    }));
    let mut names: Vec<(String, UsedName)> = used_names(&sources, &skip, request.query)
        .into_iter()
        .collect();
    names.sort_by(|a, b| b.1.weight.total_cmp(&a.1.weight).then(a.0.cmp(&b.0)));
    names.truncate(MAX_NAMES);

    let sources_ranked: Vec<IndexedChunk> = ranked
        .iter()
        .take(request.hits)
        .map(|s| s.chunk.clone())
        .collect();
    let active_path = request.active.map(|(p, _)| p);
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut budget = MAX_CHUNKS_READ;
    for (name, used) in names {
        let limit = MAX_SYMBOL_CHUNKS.min(budget);
        let Some(chunks) = index.chunks_with_symbol_words(&name, limit)? else {
            continue;
        };
        budget -= chunks.len();
        // The first chunk of each file defining the name (a long definition spans windows);
        // none in the active file or in a chunk that uses it.
        let mut per_file: Vec<IndexedChunk> = Vec::new();
        for chunk in chunks {
            if !chunk.symbols.contains(&name)
                || Some(chunk.path.as_str()) == active_path
                || sources_ranked.iter().any(|s| overlaps(s, &chunk))
            {
                continue;
            }
            if !per_file.iter().any(|c| c.path == chunk.path) {
                per_file.push(chunk);
            }
        }
        if per_file.is_empty() || per_file.len() > MAX_DEFINING_FILES {
            continue;
        }
        let weight = used.weight / per_file.len() as f32;
        for chunk in per_file {
            match candidates
                .iter_mut()
                .find(|c| c.chunk.path == chunk.path && c.chunk.start_line == chunk.start_line)
            {
                Some(c) => {
                    c.weight += weight;
                    c.origin = c.origin.max(used.origin);
                    c.names.push(name.clone());
                }
                None => candidates.push(Candidate {
                    chunk,
                    weight,
                    origin: used.origin,
                    names: vec![name.clone()],
                    used_at: used.used_at.clone(),
                }),
            }
        }
    }
    candidates.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then_with(|| a.chunk.path.cmp(&b.chunk.path))
    });
    let Some(top_weight) = candidates.first().map(|c| c.weight) else {
        return Ok(0);
    };
    let mut added = 0;
    for c in candidates {
        if added >= request.max {
            break;
        }
        let score = FOLLOW_DISCOUNT * c.origin * c.weight / top_weight;
        let tag = format!("[Followed: {} from {}]", c.names.join(", "), c.used_at);
        match ranked.iter_mut().find(|s| overlaps(&s.chunk, &c.chunk)) {
            // Already ranked at least as high: nothing to add.
            Some(s) if s.score >= score => {}
            Some(s) => {
                s.score = score;
                s.chunk.tags.push(tag);
                added += 1;
            }
            None => {
                let mut chunk = c.chunk;
                chunk.tags.push(tag);
                ranked.push(RetrievedChunk {
                    chunk,
                    score,
                    lexical: 0.0,
                    vector: None,
                });
                added += 1;
            }
        }
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(added)
}
