//! Encoded segments: base64 (standard and URL-safe), hex and percent-encoding.
//!
//! A secret pasted as a Kubernetes `Secret` value, inside a data URL or percent-encoded in a query
//! string is still a secret. Like gitleaks' `--max-decode-depth` (default 5), the scanner decodes
//! such segments and scans the decoded text again, recursively; a finding there is reported on
//! the encoded segment of the original text, which is what redaction must replace.
//!
//! Only decodings that give text are kept: valid UTF-8 without control characters other than
//! whitespace. Identifiers, git SHAs and lockfile hashes decode to binary noise and are dropped
//! here at the cost of one decode each.

use std::ops::Range;
use std::sync::LazyLock;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::bytes::Regex;

/// How deep decoded text is decoded again (gitleaks' default `--max-decode-depth`).
pub(crate) const MAX_DECODE_DEPTH: usize = 5;

/// Shortest base64 run considered: 12 decoded bytes, shorter than any secret the rules know.
const MIN_BASE64: usize = 16;
/// Shortest hex run considered (16 decoded bytes), even-length, between word boundaries or
/// `-` / `_`.
const MIN_HEX: usize = 32;

/// The encodings recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Base64,
    Hex,
    Percent,
}

impl Encoding {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Encoding::Base64 => "base64",
            Encoding::Hex => "hex",
            Encoding::Percent => "percent",
        }
    }
}

/// One encoded run of a text and the text it decodes to.
#[derive(Debug)]
pub(crate) struct EncodedSegment {
    /// Byte range of the encoded run in the text it was found in.
    pub(crate) range: Range<usize>,
    pub(crate) encoding: Encoding,
    pub(crate) decoded: String,
}

// Byte regexes without Unicode classes: the runs are ASCII, and this keeps the scan a plain DFA.
static BASE64_RUN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?-u)[A-Za-z0-9+/_-]{{{MIN_BASE64},}}={{0,2}}")).expect("valid regex")
});
static PERCENT_RUN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u)[^\s"'<>`%]*(?:%[0-9A-Fa-f]{2}[^\s"'<>`%]*)+"#).expect("valid regex")
});

/// Accepts `=` padding or none, and stray low bits in the last symbol, as encoders vary.
fn lenient(alphabet: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

static STANDARD: LazyLock<GeneralPurpose> = LazyLock::new(|| lenient(&alphabet::STANDARD));
static URL_SAFE: LazyLock<GeneralPurpose> = LazyLock::new(|| lenient(&alphabet::URL_SAFE));

/// Decoded bytes that read as text.
fn as_text(bytes: Vec<u8>) -> Option<String> {
    let s = String::from_utf8(bytes).ok()?;
    let readable = !s.is_empty()
        && s.chars()
            .all(|c| !c.is_control() || c == '\n' || c == '\r' || c == '\t');
    readable.then_some(s)
}

fn decode_base64(run: &str) -> Option<String> {
    let url_safe = run.contains(['-', '_']);
    if url_safe && run.contains(['+', '/']) {
        return None;
    }
    let engine = if url_safe { &*URL_SAFE } else { &*STANDARD };
    as_text(engine.decode(run).ok()?)
}

/// Every encoded segment of `text` that decodes to readable text, in order of position.
pub(crate) fn encoded_segments(text: &str) -> Vec<EncodedSegment> {
    let mut out = Vec::new();
    // One pass finds base64 and hex alike (hex digits are base64 characters).
    for m in BASE64_RUN.find_iter(text.as_bytes()) {
        let run = &text[m.range()];
        let bytes = run.as_bytes();
        // Hex: the whole run, or its pieces between `-` / `_` (`key-<hex>`).
        let mut offset = 0;
        for piece in run.split(['-', '_']) {
            if piece.len() >= MIN_HEX
                && piece.len() % 2 == 0
                && piece.bytes().all(|b| b.is_ascii_hexdigit())
                && let Some(decoded) = hex::decode(piece).ok().and_then(as_text)
            {
                let start = m.start() + offset;
                out.push(EncodedSegment {
                    range: start..start + piece.len(),
                    encoding: Encoding::Hex,
                    decoded,
                });
            }
            offset += piece.len() + 1;
        }
        // Base64: a run of letters only (a long identifier) or digits only is not worth a decode.
        let has_digit_or_symbol = bytes
            .iter()
            .any(|b| b.is_ascii_digit() || b"+/=".contains(b));
        let has_letter = bytes.iter().any(u8::is_ascii_alphabetic);
        if has_digit_or_symbol
            && has_letter
            && let Some(decoded) = decode_base64(run)
        {
            out.push(EncodedSegment {
                range: m.range(),
                encoding: Encoding::Base64,
                decoded,
            });
        }
    }
    if text.contains('%') {
        for m in PERCENT_RUN.find_iter(text.as_bytes()) {
            // The run's ends are ASCII delimiters or the text's ends, so char boundaries.
            let Some(run) = text.get(m.range()) else {
                continue;
            };
            let decoded: Vec<u8> = percent_encoding::percent_decode_str(run).collect();
            if let Some(decoded) = as_text(decoded)
                && decoded != run
            {
                out.push(EncodedSegment {
                    range: m.range(),
                    encoding: Encoding::Percent,
                    decoded,
                });
            }
        }
    }
    out.sort_by_key(|s| s.range.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn finds_each_encoding_and_keeps_text_only() {
        let text = format!(
            "a: {}\nb: {}\nc: https://x.test/?q=user%3Aname%40host\nsha: 3f786850e387550fdab836ed7e6dc881de23001b\nid: averyLongIdentifierWithoutDigits\n",
            b64("hello there, general"),
            hex::encode("a hex encoded sentence"),
        );
        let found: Vec<(Encoding, String)> = encoded_segments(&text)
            .into_iter()
            .map(|s| (s.encoding, s.decoded))
            .collect();
        assert_eq!(
            found,
            vec![
                (Encoding::Base64, "hello there, general".to_string()),
                (Encoding::Hex, "a hex encoded sentence".to_string()),
                (
                    Encoding::Percent,
                    "https://x.test/?q=user:name@host".to_string()
                ),
            ]
        );
    }

    #[test]
    fn url_safe_and_unpadded_base64_decode() {
        let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("??>>??>>??>>??>>");
        assert!(enc.contains(['-', '_']), "{enc}");
        let segs = encoded_segments(&enc);
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].decoded, "??>>??>>??>>??>>");
    }
}
