//! Plain `{{ key }}` substitution (`engine: plain`, and the fallback for prompt files that are
//! not valid Jinja: Handlebars blocks, `{{90_days_ago}}`): every placeholder whose key is a known
//! variable is replaced, everything else is left exactly as written.

use std::sync::LazyLock;

use regex::Regex;

use super::segment::{Key, Segment, Slot, TooLarge};

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\s*([^{}]*?)\s*\}\}").expect("placeholder regex"));
static IDENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").expect("identifier regex"));

/// Every placeholder key in `body`, in order of first appearance, without duplicates.
pub fn placeholders(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in PLACEHOLDER.captures_iter(body) {
        let k = c[1].to_string();
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// Whether a placeholder key is an identifier (`name`, as opposed to `#if X` or `/if`).
pub fn is_identifier(key: &str) -> bool {
    IDENT.is_match(key)
}

/// The body cut at `{{ key }}` placeholders whose key is a variable name; a placeholder that
/// has no value stays verbatim.
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut last = 0;
    for c in PLACEHOLDER.captures_iter(body) {
        let m = c.get(0).expect("whole match");
        if m.start() > last {
            out.push(Segment::Text(&body[last..m.start()]));
        }
        out.push(Segment::Slot {
            raw: m.as_str(),
            slot: Slot {
                key: Key::Arg(c[1].to_string()),
                keep_when_missing: true,
                required: false,
                hint: None,
            },
        });
        last = m.end();
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// Replaces each placeholder that `lookup` knows; returns the text and the keys replaced. The
/// text never grows past `max_len` bytes: the substitution stops with [`TooLarge`] before.
pub fn substitute(
    body: &str,
    lookup: impl Fn(&str) -> Option<String>,
    max_len: usize,
) -> Result<(String, Vec<String>), TooLarge> {
    super::segment::substitute(&segments(body), lookup, max_len)
}

/// Like [`substitute`], each value passed through `wrap` with its key before it is written.
pub fn substitute_wrapped(
    body: &str,
    lookup: impl Fn(&str) -> Option<String>,
    wrap: impl Fn(&str, &str, String) -> String,
    max_len: usize,
) -> Result<(String, Vec<String>), TooLarge> {
    super::segment::substitute_wrapped(&segments(body), lookup, wrap, max_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_known_and_keeps_the_rest() {
        let body = "{{#if x}}A {{ name }} {{90_days_ago}}{{/if}}";
        let (text, used) =
            substitute(body, |k| (k == "name").then(|| "Ada".to_string()), 1000).unwrap();
        assert_eq!(text, "{{#if x}}A Ada {{90_days_ago}}{{/if}}");
        assert_eq!(used, vec!["name"]);
        assert!(!is_identifier("#if x"));
        assert!(is_identifier("name_2"));
        assert!(!is_identifier("90_days_ago"));
    }

    #[test]
    fn substitution_stops_at_its_limit() {
        let body = "{{x}}".repeat(1000);
        let big = "y".repeat(1000);
        let err = substitute(&body, |_| Some(big.clone()), 64 * 1024).unwrap_err();
        assert_eq!(err, TooLarge { limit: 64 * 1024 });
        assert!(substitute(&body, |_| Some(big.clone()), 1_000_000).is_ok());
    }
}
