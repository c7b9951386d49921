//! Token counting with a real BPE tokenizer (tiktoken's `cl100k_base`), shared by every stage
//! that budgets text (retrieval, composer, snapshot assertions).

/// Number of `cl100k_base` tokens in `text`.
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}
