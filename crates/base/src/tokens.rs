//! Token counting with a real BPE tokenizer (tiktoken's `cl100k_base`), shared by every stage
//! that budgets text (retrieval, composer, snapshot assertions). Counting never fails: text the
//! tokenizer's pattern gives up on (a whitespace run past its backtracking limit) is counted in
//! parts.

use tiktoken_rs::CoreBPE;

/// Whitespace runs longer than this many bytes are counted in parts. The pattern's
/// `\s+(?!\S)` backtracks over a whole run, and the regex engine gives up on a run of about a
/// million characters; below this bound the counts are exact.
const MAX_WHITESPACE_RUN: usize = 4096;

/// Number of `cl100k_base` tokens in `text`.
pub fn count_tokens(text: &str) -> usize {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    encoded_len(bpe, text).unwrap_or_else(|| count_in_parts(bpe, text))
}

/// The tokens of `text`, or `None` when the tokenizer gives up on it.
fn encoded_len(bpe: &CoreBPE, text: &str) -> Option<usize> {
    bpe.encode(text, &bpe.special_tokens())
        .ok()
        .map(|(tokens, _)| tokens.len())
}

/// The tokens of `text` counted in parts cut inside whitespace runs every
/// [`MAX_WHITESPACE_RUN`] bytes; a part the tokenizer still gives up on counts a token per four
/// bytes.
fn count_in_parts(bpe: &CoreBPE, text: &str) -> usize {
    let count = |part: &str| encoded_len(bpe, part).unwrap_or_else(|| part.len().div_ceil(4));
    let mut total = 0;
    let mut start = 0;
    let mut run_start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if !c.is_whitespace() {
            run_start = None;
            continue;
        }
        let run = *run_start.get_or_insert(i);
        if i - run >= MAX_WHITESPACE_RUN {
            total += count(&text[start..i]);
            start = i;
            run_start = Some(i);
        }
    }
    total + count(&text[start..])
}

/// Builds the tokenizer's tables on a background thread (which takes a moment), so a caller that
/// counts tokens later, after other work, does not wait for them then.
pub fn load_in_background() {
    std::thread::spawn(|| {
        tiktoken_rs::cl100k_base_singleton();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_runs_past_the_patterns_limit_are_counted_without_panicking() {
        assert_eq!(count_tokens("hello world"), 2);
        for ws in [" ", "\n", "\t", "\u{3000}"] {
            let text = format!("retry{}backoff", ws.repeat(1 << 20));
            let started = std::time::Instant::now();
            let n = count_tokens(&text);
            assert!(n >= 2 && n < text.len(), "{n}");
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
        }
        // Below the bound the parts add up to the exact count.
        let text = format!("a{}b", " ".repeat(3 * MAX_WHITESPACE_RUN));
        let exact = count_tokens(&text);
        let parts = count_in_parts(tiktoken_rs::cl100k_base_singleton(), &text);
        assert!(exact.abs_diff(parts) <= 3, "{exact} vs {parts}");
    }
}
