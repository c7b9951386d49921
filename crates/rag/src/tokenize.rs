//! Code-aware tokens for the lexical index and for queries. An identifier is kept whole
//! (`parse_http_request`, lower-cased) and also split on snake_case, camelCase, acronym and digit
//! boundaries (`parse`, `http`, `request`), so a prompt saying "HTTP request parsing" meets
//! `parseHttpRequest` and `parse_http_request` alike. English stop words are dropped and the
//! parts are stemmed by tantivy's English stemmer in the analyzer built here.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use compact_str::CompactString;
use hashbrown::HashTable;
use smallvec::SmallVec;

use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};

/// Name under which the analyzer is registered in the tantivy index.
pub const ANALYZER: &str = "promptd_code";
/// Bumped whenever the token stream changes, so persisted indexes get rebuilt.
pub const ANALYZER_VERSION: u32 = 1;

/// Longer runs are hashes, base64 or minified data, never useful search terms.
const MAX_WORD_CHARS: usize = 64;

#[cfg(test)]
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "do", "does", "for",
    "from", "had", "has", "have", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "our", "please", "should", "so", "that", "the", "their", "then", "there", "these",
    "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
];

fn is_stop_word(word: &str) -> bool {
    // Called for every token: a `match` compiles to a length switch and a few comparisons,
    // where the binary search over `STOP_WORDS` showed in indexing profiles. The unit test
    // `stop_word_match_equals_list` keeps the two in step.
    matches!(
        word,
        "a" | "an"
            | "and"
            | "are"
            | "as"
            | "at"
            | "be"
            | "but"
            | "by"
            | "can"
            | "could"
            | "do"
            | "does"
            | "for"
            | "from"
            | "had"
            | "has"
            | "have"
            | "how"
            | "i"
            | "in"
            | "into"
            | "is"
            | "it"
            | "its"
            | "me"
            | "my"
            | "of"
            | "on"
            | "or"
            | "our"
            | "please"
            | "should"
            | "so"
            | "that"
            | "the"
            | "their"
            | "then"
            | "there"
            | "these"
            | "this"
            | "those"
            | "to"
            | "was"
            | "we"
            | "were"
            | "what"
            | "when"
            | "where"
            | "which"
            | "who"
            | "why"
            | "will"
            | "with"
            | "would"
            | "you"
            | "your"
    )
}

/// Calls `emit(token, byte_start, byte_end)` for every code-aware token of `text`: each
/// identifier whole, then its parts when it has several. Tokens are lower-case.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str, usize, usize)) {
    let mut scratch = Scratch::default();
    for (start, word) in words(text) {
        word_tokens(word, &mut scratch, |t, a, b| emit(t, start + a, start + b));
    }
}

/// Buffers reused from one word to the next.
#[derive(Default)]
struct Scratch {
    lower: String,
    parts: Vec<(usize, usize)>,
}

/// The tokens of one identifier (a run from [`words`]) with byte offsets relative to `word`:
/// the identifier whole, then its parts when it has several.
fn word_tokens(word: &str, scratch: &mut Scratch, mut emit: impl FnMut(&str, usize, usize)) {
    if too_long(word) {
        return;
    }
    let Scratch { lower, parts } = scratch;
    lower_into(lower, word);
    let whole = lower.trim_matches('_');
    if whole.is_empty() || is_stop_word(whole) || (whole.len() == 1 && !is_cjk(whole)) {
        // One-letter words are loop variables and articles.
    } else {
        emit(whole, 0, word.len());
    }
    split_parts(word, parts);
    if parts.len() > 1 {
        for &(a, b) in parts.iter() {
            let part = &word[a..b];
            if part.len() < 2 {
                continue;
            }
            lower_into(lower, part);
            if !is_stop_word(lower) {
                emit(lower, a, b);
            }
        }
    }
}

/// Replaces `buffer` with `text` lower-cased (ASCII without decoding chars).
fn lower_into(buffer: &mut String, text: &str) {
    buffer.clear();
    if text.is_ascii() {
        buffer.push_str(text);
        buffer.make_ascii_lowercase();
    } else {
        buffer.extend(text.chars().flat_map(char::to_lowercase));
    }
}

/// Longer than [`MAX_WORD_CHARS`]: never a token, never cached.
fn too_long(word: &str) -> bool {
    // Bytes bound chars from above: count chars only for long words.
    word.len() > MAX_WORD_CHARS && word.chars().count() > MAX_WORD_CHARS
}

fn is_cjk(s: &str) -> bool {
    s.chars().any(|c| c as u32 >= 0x2E80)
}

/// Runs of identifier characters (`[\p{Alphabetic}\p{Nd}_]`), with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        loop {
            let (c, len) = char_at(text, pos)?;
            if is_word_char(c) {
                break;
            }
            pos += len;
        }
        let start = pos;
        while let Some((c, len)) = char_at(text, pos) {
            if !is_word_char(c) {
                break;
            }
            pos += len;
        }
        Some((start, &text[start..pos]))
    })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The char at byte `i` (a char boundary) and its length; ASCII without decoding.
fn char_at(text: &str, i: usize) -> Option<(char, usize)> {
    let b = *text.as_bytes().get(i)?;
    if b.is_ascii() {
        return Some((b as char, 1));
    }
    let c = text[i..].chars().next()?;
    Some((c, c.len_utf8()))
}

/// Splits an identifier into byte ranges at `_`, lower→Upper (`parseHttp`), acronym ends
/// (`HTTPRequest` → `HTTP`, `Request`) and letter/digit changes (`utf8` → `utf`, `8`).
fn split_parts(word: &str, parts: &mut Vec<(usize, usize)>) {
    parts.clear();
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let before = prev.replace(c);
        if c == '_' {
            if let Some(s) = start.take() {
                parts.push((s, i));
            }
            continue;
        }
        let (Some(s), Some(prev)) = (start, before) else {
            start = Some(i);
            continue;
        };
        let next = chars.peek().map(|&(_, n)| n);
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
            || (prev.is_alphabetic() && c.is_numeric())
            || (prev.is_numeric() && c.is_alphabetic());
        if boundary && prev != '_' {
            parts.push((s, i));
            start = Some(i);
        }
    }
    if let Some(s) = start {
        parts.push((s, word.len()));
    }
}

/// All tokens of `text` as owned strings (before stemming); handy for queries and tests.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t, _, _| out.push(t.to_string()));
    out
}

/// Distinct identifiers remembered per tokenizer generation (see [`WordCache`]).
const WORD_CACHE_GENERATION: usize = 50_000;

/// The stemmed tokens of one identifier: `stems` concatenated, and per token the end of its
/// stem in `stems` and its byte range in the identifier (identifiers are at most
/// [`MAX_WORD_CHARS`] chars, so 256 bytes). Short identifiers and their stems are stored inline,
/// so a cache hit reads one table slot instead of chasing three heap pointers.
struct CachedWord {
    word: CompactString,
    stems: CompactString,
    spans: SmallVec<[[u16; 3]; 2]>,
}

/// Identifier → stemmed tokens, in two generations: hits in the old generation move to the new
/// one, and when the new one is full the old one is dropped. Frequent identifiers (`self`,
/// `String`, `Result`) survive every turn, where a single map cleared when full lost them all.
#[derive(Default)]
struct WordCache {
    // foldhash (hashbrown's default): SipHash on these short keys cost more than the work the
    // cache saves.
    hasher: hashbrown::DefaultHashBuilder,
    young: HashTable<CachedWord>,
    old: HashTable<CachedWord>,
}

impl WordCache {
    fn get_or_insert(&mut self, word: &str, scratch: &mut Scratch) -> &CachedWord {
        if self.young.len() >= WORD_CACHE_GENERATION {
            self.old = std::mem::take(&mut self.young);
        }
        let hash = self.hasher.hash_one(word);
        match self.young.find_entry(hash, |c| c.word == word) {
            Ok(found) => found.into_mut(),
            Err(absent) => {
                let cached = match self.old.find_entry(hash, |c| c.word == word) {
                    Ok(found) => found.remove().0,
                    Err(_) => stemmed_word(word, scratch),
                };
                let hasher = &self.hasher;
                absent
                    .into_table()
                    .insert_unique(hash, cached, |c| hasher.hash_one(c.word.as_str()))
                    .into_mut()
            }
        }
    }
}

/// The tantivy tokenizer: [`for_each_token`] followed by tantivy's English stemmer (the same
/// `frostem` algorithm as `tantivy::tokenizer::Stemmer`, so the terms are identical).
///
/// Identifiers repeat endlessly in code, so the stemmed tokens of each distinct identifier are
/// cached: a repeated identifier costs one hash lookup instead of lower-casing, splitting,
/// stop-word checks and stemming of every part.
#[derive(Default)]
pub struct CodeTokenizer {
    buffer: Vec<Token>,
    words: WordCache,
    scratch: Scratch,
}

impl Clone for CodeTokenizer {
    // tantivy clones the registered tokenizer for every segment writer: clones start empty.
    fn clone(&self) -> Self {
        Self::default()
    }
}

fn stemmer() -> &'static frostem::Stemmer {
    static STEMMER: OnceLock<frostem::Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| frostem::Stemmer::new(frostem::Algorithm::English))
}

/// The stemmed tokens of `word`, for the cache.
fn stemmed_word(word: &str, scratch: &mut Scratch) -> CachedWord {
    let mut stems = CompactString::default();
    let mut spans = SmallVec::new();
    word_tokens(word, scratch, |t, from, to| {
        stems.push_str(&stemmer().stem(t));
        spans.push([stems.len() as u16, from as u16, to as u16]);
    });
    CachedWord {
        word: word.into(),
        stems,
        spans,
    }
}

pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    index: Option<usize>,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        // Token strings are reused between calls: allocation dominated indexing profiles.
        let mut count = 0;
        let Self {
            buffer,
            words: cache,
            scratch,
        } = self;
        for (start, word) in words(text) {
            if too_long(word) {
                continue;
            }
            let cached = cache.get_or_insert(word, scratch);
            let mut stem_start = 0;
            for &[stem_end, from, to] in cached.spans.iter() {
                let stem = &cached.stems[stem_start..stem_end as usize];
                stem_start = stem_end as usize;
                let (from, to) = (start + from as usize, start + to as usize);
                if let Some(token) = buffer.get_mut(count) {
                    token.text.clear();
                    token.text.push_str(stem);
                    token.offset_from = from;
                    token.offset_to = to;
                    token.position = count;
                    token.position_length = 1;
                } else {
                    buffer.push(Token {
                        offset_from: from,
                        offset_to: to,
                        position: count,
                        text: stem.to_string(),
                        position_length: 1,
                    });
                }
                count += 1;
            }
        }
        CodeTokenStream {
            tokens: &mut self.buffer[..count],
            index: None,
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let next = self.index.map_or(0, |i| i + 1);
        self.index = Some(next);
        next < self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.index.unwrap_or(0)]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index.unwrap_or(0)]
    }
}

/// The analyzer used for every indexed text field and for queries (tokens stemmed).
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::from(CodeTokenizer::default())
}

/// Analyzed (stemmed) query terms with how often each occurs, in first-seen order.
pub fn query_term_counts(text: &str) -> Vec<(String, usize)> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out: Vec<(String, usize)> = Vec::new();
    while stream.advance() {
        let t = &stream.token().text;
        match at.get(t) {
            Some(&i) => out[i].1 += 1,
            None => {
                at.insert(t.clone(), out.len());
                out.push((t.clone(), 1));
            }
        }
    }
    out
}

/// Analyzed (stemmed) query terms, de-duplicated in first-seen order.
pub fn query_terms(text: &str) -> Vec<String> {
    query_term_counts(text)
        .into_iter()
        .map(|(t, _)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn stop_word_match_equals_list() {
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
        }
        for w in ["parse", "http", "x", "thee", "wit", "ours", "thisx"] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn stems_equal_tantivys_stemmer_filter() {
        use tantivy::tokenizer::{Language, Stemmer};
        let text = "Parsing parsers parseHTTPRequest2 running_quickly généralement Größe 数据 \
                    connections connected xs_yz CamelCaseWords utf8Decoder";
        let mut reference = TextAnalyzer::builder(TokenizerOnly::default())
            .filter(Stemmer::new(Language::English))
            .build();
        let mut expected = Vec::new();
        let mut stream = reference.token_stream(text);
        while stream.advance() {
            let t = stream.token();
            expected.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
        }
        let mut ours = analyzer();
        for _ in 0..2 {
            // The second round is answered from the cache.
            let mut got = Vec::new();
            let mut stream = ours.token_stream(text);
            while stream.advance() {
                let t = stream.token();
                got.push((t.text.clone(), t.offset_from, t.offset_to, t.position));
            }
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn cache_generations_turn_over_without_changing_tokens() {
        use tantivy::tokenizer::{Language, Stemmer};
        // More distinct identifiers than two generations hold, with common words recurring so
        // that they move from the old generation to the young one.
        let mut text = String::new();
        for i in 0..(WORD_CACHE_GENERATION * 5 / 2) {
            text.push_str(&format!("parseHttpRequest{i} running_connections "));
            if i % 7 == 0 {
                text.push_str("Result String self ");
            }
        }
        let tokens_of = |analyzer: &mut TextAnalyzer| {
            let mut out = Vec::new();
            let mut stream = analyzer.token_stream(&text);
            while stream.advance() {
                let t = stream.token();
                out.push((t.text.clone(), t.offset_from, t.offset_to));
            }
            out
        };
        let mut reference = TextAnalyzer::builder(TokenizerOnly::default())
            .filter(Stemmer::new(Language::English))
            .build();
        let expected = tokens_of(&mut reference);
        let mut ours = analyzer();
        assert_eq!(tokens_of(&mut ours), expected);
        assert_eq!(tokens_of(&mut ours), expected);
    }

    /// [`for_each_token`] without stemming, the way the analyzer was built before stems were
    /// cached.
    #[derive(Clone, Default)]
    struct TokenizerOnly(Vec<Token>);

    impl Tokenizer for TokenizerOnly {
        type TokenStream<'a> = CodeTokenStream<'a>;

        fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
            self.0.clear();
            let buffer = &mut self.0;
            for_each_token(text, |t, from, to| {
                let position = buffer.len();
                buffer.push(Token {
                    offset_from: from,
                    offset_to: to,
                    position,
                    text: t.to_string(),
                    position_length: 1,
                });
            });
            CodeTokenStream {
                tokens: &mut self.0[..],
                index: None,
            }
        }
    }

    #[test]
    fn identifiers_whole_and_split() {
        assert_eq!(
            tokens("parseHTTPRequest2 snake_case_name utf8"),
            [
                "parsehttprequest2",
                "parse",
                "http",
                "request",
                "snake_case_name",
                "snake",
                "case",
                "name",
                "utf8",
                "utf"
            ]
        );
    }

    #[test]
    fn stop_words_and_single_letters_dropped() {
        assert_eq!(tokens("how do I fix the x loop"), ["fix", "loop"]);
    }

    #[test]
    fn query_terms_are_stemmed_and_unique() {
        assert_eq!(query_terms("parsing parsers parse"), ["pars", "parser"]);
    }
}
