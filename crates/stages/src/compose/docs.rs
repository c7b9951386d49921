//! The docs stage: retrieved chunks (or whole `--doc` files) rendered under
//! `### Source: path:start-end` headers and fitted into a token budget.
//!
//! Only docs are ever cut to fit. Chunks are ranked by score (highest first; ties keep the order
//! they were given in, so `--doc` files stay in command-line order) and kept as the longest
//! run of top-ranked chunks whose rendered block fits the budget: the lowest-ranked chunk is
//! always the first dropped, and a higher-ranked chunk is never dropped while a lower-ranked one
//! is kept. A chunk is never cut inside.
//!
//! # Counting in linear time
//! The reported count is exact — what the real tokenizer gives for the whole block — yet each
//! chunk is tokenized on its own, once, and the counts are summed, instead of re-tokenizing the
//! growing block for every candidate (which made fitting quadratic in the chunks kept). Sums are
//! exact because of where the chunks meet: `cl100k_base` splits text into pre-tokens with a regex
//! and encodes each pre-token independently, and a rendered chunk always starts with `###` right
//! after a newline, which always starts a new pre-token. So the block `c1 \n c2 \n … ck` counts
//! `tokens(c1 + "\n") + … + tokens(c(k-1) + "\n") + tokens(ck)`: the separator is counted with the
//! chunk before it, because it merges with that chunk's final newline (`\n\n` is one token).
//! The unit tests check the sum against the whole block's count on awkward chunk endings.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::ComposeError;
use promptd_base::tokens::count_tokens;
use promptd_base::workspace::Workspace;

/// One piece of documentation offered to the composer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DocChunk {
    /// Path as shown in the `### Source:` header (workspace-relative when possible).
    pub path: String,
    /// First line of the chunk, 1-based.
    pub start_line: usize,
    /// Last line of the chunk, inclusive.
    pub end_line: usize,
    pub text: String,
    /// Retrieval score; higher ranks first.
    pub score: f32,
}

impl DocChunk {
    /// A retrieved chunk as a doc, with its retrieval score.
    pub fn retrieved(c: &promptd_rag::RetrievedChunk) -> DocChunk {
        DocChunk {
            path: c.chunk.path.clone(),
            start_line: c.chunk.start_line,
            end_line: c.chunk.end_line,
            text: c.chunk.text.clone(),
            score: c.score,
        }
    }

    /// A whole file as one chunk (the `--doc` case), scored 1.0. `path` (absolute, or relative
    /// to the workspace root) must resolve, symlinks followed, to a regular file inside the
    /// workspace of at most `max_bytes` bytes of UTF-8 text; it is shown relative to the root.
    /// `entry` names the argument in errors (`docs[0]`).
    pub fn read(
        workspace: &Workspace,
        entry: &str,
        path: &Path,
        max_bytes: u64,
    ) -> Result<Self, ComposeError> {
        let fail = |message: String| ComposeError::Doc {
            entry: entry.to_string(),
            path: path.to_path_buf(),
            message,
        };
        let (full, shown) = workspace
            .resolve_inside(path)
            .map_err(|e| fail(e.to_string()))?;
        let text = promptd_base::limits::read_text_capped(&full, max_bytes, "limits.maxDocBytes")
            .map_err(|e| fail(e.to_string()))?;
        Ok(Self {
            path: shown,
            start_line: 1,
            end_line: text.lines().count().max(1),
            text,
            score: 1.0,
        })
    }

    /// The chunk as it appears in the docs block.
    pub fn render(&self) -> String {
        let mut piece = format!(
            "### Source: {}:{}-{}\n{}",
            self.path, self.start_line, self.end_line, self.text
        );
        if !piece.ends_with('\n') {
            piece.push('\n');
        }
        piece
    }
}

/// A chunk in the docs ledger: which one, its rank and what it cost.
#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DocLedgerEntry {
    pub path: String,
    pub start_line: usize,
    pub end_line: usize,
    pub score: f32,
    /// 1-based rank after sorting by score.
    pub rank: usize,
    /// Tokens of the chunk rendered alone (header included).
    pub tokens: usize,
}

/// The docs stage's output.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DocsBlock {
    /// Included chunks, best first, separated by a blank line; empty when none fit.
    pub text: String,
    /// Tokens of `text`; never above the budget.
    pub tokens: usize,
    pub included: Vec<DocLedgerEntry>,
    pub dropped: Vec<DocLedgerEntry>,
}

/// Ranks `chunks` and keeps the top-ranked run that fits `budget` tokens.
pub fn fit_docs(chunks: &[DocChunk], budget: usize) -> DocsBlock {
    let mut ranked: Vec<&DocChunk> = chunks.iter().collect();
    // Stable sort: equal scores keep their input order.
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));

    let mut block = DocsBlock::default();
    // Tokens of the kept chunks, each followed by the separating newline (see the module docs):
    // the block plus the next chunk counts `separated + tokens(next chunk)`.
    let mut separated = 0;
    let mut full = false;
    for (index, chunk) in ranked.into_iter().enumerate() {
        let piece = chunk.render();
        let alone = count_tokens(&piece);
        let entry = DocLedgerEntry {
            path: chunk.path.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            score: chunk.score,
            rank: index + 1,
            tokens: alone,
        };
        if !full {
            let tokens = separated + alone;
            if tokens <= budget {
                block.text.push_str(&piece);
                block.text.push('\n');
                separated += count_tokens(&block.text[block.text.len() - piece.len() - 1..]);
                block.tokens = tokens;
                block.included.push(entry);
                continue;
            }
            // Once a chunk does not fit, everything ranked below it goes too, so a lower-ranked
            // chunk never displaces a higher-ranked one.
            full = true;
        }
        block.dropped.push(entry);
    }
    // The separator after the last kept chunk is not part of the block.
    block.text.pop();
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(path: &str, score: f32, text: &str) -> DocChunk {
        DocChunk {
            path: path.into(),
            start_line: 1,
            end_line: 1,
            text: text.into(),
            score,
        }
    }

    #[test]
    fn drops_lowest_ranked_first_and_never_a_higher_one() {
        let chunks = [
            chunk("low.md", 0.1, "tiny"),
            chunk("high.md", 0.9, "high ranked text"),
            chunk("mid.md", 0.5, &"mid ranked words ".repeat(40)),
        ];
        let fitted = fit_docs(&chunks, 40);
        let kept: Vec<_> = fitted.included.iter().map(|e| e.path.as_str()).collect();
        let dropped: Vec<_> = fitted.dropped.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(kept, ["high.md"]);
        // `low.md` would fit on its own, but keeping it while dropping `mid.md` would break rank.
        assert_eq!(dropped, ["mid.md", "low.md"]);
        assert!(fitted.tokens <= 40);
        assert_eq!(fitted.tokens, count_tokens(&fitted.text));
    }

    /// The fitting as it was first written: re-count the whole candidate block for every chunk.
    /// Slow (quadratic) but obviously right; the linear fitting must agree with it exactly.
    fn fit_docs_by_recounting(chunks: &[DocChunk], budget: usize) -> DocsBlock {
        let mut ranked: Vec<&DocChunk> = chunks.iter().collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut block = DocsBlock::default();
        let mut full = false;
        for (index, chunk) in ranked.into_iter().enumerate() {
            let piece = chunk.render();
            let entry = DocLedgerEntry {
                path: chunk.path.clone(),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                score: chunk.score,
                rank: index + 1,
                tokens: count_tokens(&piece),
            };
            if !full {
                let candidate = if block.text.is_empty() {
                    piece
                } else {
                    format!("{}\n{}", block.text, piece)
                };
                let tokens = count_tokens(&candidate);
                if tokens <= budget {
                    block.text = candidate;
                    block.tokens = tokens;
                    block.included.push(entry);
                    continue;
                }
                full = true;
            }
            block.dropped.push(entry);
        }
        block
    }

    #[test]
    fn summed_counts_equal_recounting_the_block_on_awkward_endings() {
        // Endings where a naive sum of separate counts would be off: trailing spaces and tabs,
        // punctuation that absorbs following newlines (`}\n\n` is one pre-token), blank and
        // whitespace-only last lines, CRLF, no final newline, digits, a special-token literal,
        // non-ASCII text.
        let endings = [
            "fn main() {}\n",
            "    }\n}",
            "trailing spaces   ",
            "tab\t\n",
            "blank lines after\n\n\n",
            "whitespace line\n   \n",
            "windows\r\n",
            "numbers 1234567",
            "<|endoftext|>",
            "émoji 🚀 and ünïcode",
            "",
            "@@ -1,3 +1,4 @@\n",
            "   ",
        ];
        let chunks: Vec<DocChunk> = endings
            .iter()
            .enumerate()
            .map(|(i, end)| {
                chunk(
                    &format!("doc{i}.md"),
                    1.0 - i as f32 / 100.0,
                    &format!("Line {i} of the doc.\n{end}"),
                )
            })
            .collect();
        let all = fit_docs(&chunks, usize::MAX);
        assert_eq!(all.included.len(), chunks.len());
        assert_eq!(all.tokens, count_tokens(&all.text));
        // Every budget from nothing to everything takes the same decisions as recounting.
        for budget in 0..=all.tokens + 1 {
            assert_eq!(
                fit_docs(&chunks, budget),
                fit_docs_by_recounting(&chunks, budget),
                "budget {budget}"
            );
        }
    }

    #[test]
    fn zero_budget_keeps_nothing() {
        let fitted = fit_docs(&[chunk("a.md", 1.0, "x")], 0);
        assert!(fitted.text.is_empty());
        assert_eq!(fitted.dropped.len(), 1);
    }
}
