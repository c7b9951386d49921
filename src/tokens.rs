//! Token counting with a real BPE tokenizer (tiktoken's `cl100k_base`), shared by every stage
//! that budgets text (retrieval, composer, snapshot assertions).

/// Number of `cl100k_base` tokens in `text`.
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// Builds the tokenizer's tables on a background thread (tens of milliseconds), so a caller that
/// counts tokens later, after other work, does not wait for them then.
pub fn load_in_background() {
    std::thread::spawn(|| {
        tiktoken_rs::cl100k_base_singleton();
    });
}
