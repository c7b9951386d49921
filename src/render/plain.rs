//! Plain `{{ key }}` substitution for prompt files that are not valid Jinja (Handlebars blocks,
//! `{{90_days_ago}}`): every placeholder whose key is a known variable is replaced, everything
//! else is left exactly as written.

use std::sync::LazyLock;

use regex::Regex;

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

/// Whether a placeholder key looks like a variable name (as opposed to `#if X` or `/if`): an
/// identifier, or a computed `<N>_days_ago` date.
pub fn is_identifier(key: &str) -> bool {
    IDENT.is_match(key) || super::clock::days_ago_digits(key).is_some()
}

/// Replaces each placeholder that `lookup` knows; returns the text and the keys replaced.
pub fn substitute(body: &str, lookup: impl Fn(&str) -> Option<String>) -> (String, Vec<String>) {
    let mut used: Vec<String> = Vec::new();
    let text = PLACEHOLDER.replace_all(body, |c: &regex::Captures<'_>| match lookup(&c[1]) {
        Some(v) => {
            if !used.iter().any(|u| u == &c[1]) {
                used.push(c[1].to_string());
            }
            v
        }
        None => c[0].to_string(),
    });
    (text.into_owned(), used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_known_and_keeps_the_rest() {
        let body = "{{#if x}}A {{ name }} {{90_days_ago}}{{/if}}";
        let (text, used) = substitute(body, |k| (k == "name").then(|| "Ada".to_string()));
        assert_eq!(text, "{{#if x}}A Ada {{90_days_ago}}{{/if}}");
        assert_eq!(used, vec!["name"]);
        assert!(!is_identifier("#if x"));
        assert!(is_identifier("90_days_ago"));
        assert!(!is_identifier("90_days"));
    }
}
