//! Code-aware tokens for the lexical index and for queries. An identifier is kept whole
//! (`parse_http_request`, lower-cased) and also split on snake_case, camelCase, acronym and digit
//! boundaries (`parse`, `http`, `request`), so a prompt saying "HTTP request parsing" meets
//! `parseHttpRequest` and `parse_http_request` alike. English stop words are dropped and the
//! parts are stemmed by tantivy's English stemmer in the analyzer built here.

use std::sync::OnceLock;

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
    let mut lower = String::new();
    let mut parts: Vec<(usize, usize)> = Vec::new();
    for (start, word) in words(text) {
        // Bytes bound chars from above: count chars only for long words.
        if word.len() > MAX_WORD_CHARS && word.chars().count() > MAX_WORD_CHARS {
            continue;
        }
        lower.clear();
        if word.is_ascii() {
            lower.push_str(word);
            lower.make_ascii_lowercase();
        } else {
            lower.extend(word.chars().flat_map(char::to_lowercase));
        }
        let whole = lower.trim_matches('_');
        if whole.is_empty() || is_stop_word(whole) || (whole.len() == 1 && !is_cjk(whole)) {
            // One-letter words are loop variables and articles.
        } else {
            emit(whole, start, start + word.len());
        }
        split_parts(word, &mut parts);
        if parts.len() > 1 {
            for &(a, b) in &parts {
                let part = &word[a..b];
                if part.len() < 2 {
                    continue;
                }
                lower.clear();
                if part.is_ascii() {
                    lower.push_str(part);
                    lower.make_ascii_lowercase();
                } else {
                    lower.extend(part.chars().flat_map(char::to_lowercase));
                }
                if !is_stop_word(&lower) {
                    emit(&lower, start + a, start + b);
                }
            }
        }
    }
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

/// Distinct stems remembered per tokenizer before the cache starts afresh (a few MB).
const STEM_CACHE_ENTRIES: usize = 200_000;

/// The tantivy tokenizer: [`for_each_token`] followed by tantivy's English stemmer (the same
/// `frostem` algorithm as `tantivy::tokenizer::Stemmer`, so the terms are identical). Stemming
/// is done here rather than by tantivy's filter so that stems can be cached: identifiers repeat
/// endlessly in code, and stemming each occurrence again was a tenth of indexing time.
#[derive(Default)]
pub struct CodeTokenizer {
    buffer: Vec<Token>,
    /// Keyed with foldhash: SipHash on these short keys cost more than the stemming saved.
    stems: foldhash::HashMap<Box<str>, Box<str>>,
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

pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    index: Option<usize>,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        // Token strings are reused between calls: allocation dominated indexing profiles.
        let mut count = 0;
        let buffer = &mut self.buffer;
        let stems = &mut self.stems;
        for_each_token(text, |t, from, to| {
            let stem: &str = match stems.get(t) {
                Some(stem) => stem,
                None => {
                    if stems.len() >= STEM_CACHE_ENTRIES {
                        stems.clear();
                    }
                    stems.entry(t.into()).or_insert(stemmer().stem(t).into())
                }
            };
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
        });
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

/// Analyzed (stemmed) query terms, de-duplicated in first-seen order.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out: Vec<String> = Vec::new();
    while stream.advance() {
        let t = &stream.token().text;
        if !out.iter().any(|o| o == t) {
            out.push(t.clone());
        }
    }
    out
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
