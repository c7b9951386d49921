//! Rule globs: reading them from a rule file's frontmatter and matching them against the
//! current file.
//!
//! Globs match the current file's path relative to the workspace root, with `/` separators
//! (`globset`, `*` does not cross `/`). A pattern without `/` matches the file name at any depth
//! (`*.ts` ≡ `**/*.ts`), as in `.gitignore` and as Cursor users expect; a leading `./` or `/` is
//! dropped. A frontmatter value may hold several globs: a list, a comma-separated string (commas
//! inside `{…}` alternations do not split), a flow list written as text, each possibly quoted.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use promptd_core::registry::frontmatter::{LenientFrontmatter, unquote};

/// Why a rule's globs cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GlobError {
    #[error("invalid glob `{pattern}`: {kind}")]
    Pattern {
        pattern: String,
        kind: globset::ErrorKind,
    },
    #[error("invalid globs: {0}")]
    Set(globset::Error),
}

/// The current-file matcher built from a rule's globs.
pub struct GlobMatcher {
    patterns: Vec<String>,
    set: GlobSet,
}

impl GlobMatcher {
    pub fn new(patterns: &[String]) -> Result<Self, GlobError> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let mut anchored = pattern
                .trim_start_matches("./")
                .trim_start_matches('/')
                .to_string();
            if !anchored.contains('/') {
                anchored = format!("**/{anchored}");
            }
            let glob = GlobBuilder::new(&anchored)
                .literal_separator(true)
                .build()
                .map_err(|e| GlobError::Pattern {
                    pattern: pattern.clone(),
                    kind: e.kind().clone(),
                })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(GlobError::Set)?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set,
        })
    }

    /// The first pattern (in the rule's order) that matches `path`.
    pub fn first_match(&self, path: &str) -> Option<&str> {
        self.set
            .matches(path)
            .first()
            .map(|&i| self.patterns[i].as_str())
    }
}

/// The globs of frontmatter field `key`, split and unquoted; empty when absent.
pub fn globs(front: &LenientFrontmatter, key: &str) -> Vec<String> {
    front
        .items(key)
        .into_iter()
        .flat_map(split_top_level_commas)
        .map(|glob| unquote(glob.trim()).trim().to_string())
        .filter(|glob| !glob.is_empty())
        .collect()
}

/// Splits on commas that are not inside `{…}` alternations (`src/**/*.{ts,tsx}` stays whole).
fn split_top_level_commas(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, ch) in text.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_star_globs_fall_back_to_the_line_reader() {
        let (front, body) = LenientFrontmatter::split(
            "---\nglobs: *.ts,src/**/*.{ts,tsx}\nalwaysApply: false\n---\nBody\n",
        );
        assert!(front.line_read());
        assert!(!front.flag("alwaysApply"));
        assert_eq!(body, "Body\n");
        assert_eq!(globs(&front, "globs"), ["*.ts", "src/**/*.{ts,tsx}"]);
    }

    #[test]
    fn quoted_and_listed_globs_and_string_flags() {
        let (front, _) = LenientFrontmatter::split(
            "---\nglobs:\n  - \"a/*.rs\"\n  - 'b/*.rs, c/*.rs'\nalwaysApply: \"true\"\n---\n",
        );
        assert!(!front.line_read());
        assert!(front.flag("alwaysApply"));
        assert_eq!(globs(&front, "globs"), ["a/*.rs", "b/*.rs", "c/*.rs"]);
    }

    #[test]
    fn bare_globs_match_at_any_depth_and_slashed_ones_from_the_root() {
        let matcher = GlobMatcher::new(&["*.ts".into(), "src/*.rs".into()]).unwrap();
        assert_eq!(matcher.first_match("web/app/x.ts"), Some("*.ts"));
        assert_eq!(matcher.first_match("src/main.rs"), Some("src/*.rs"));
        assert_eq!(matcher.first_match("src/deep/main.rs"), None);
    }

    #[test]
    fn an_invalid_glob_is_named() {
        let err = GlobMatcher::new(&["src/[".into()]).err().unwrap();
        assert!(
            err.to_string().starts_with("invalid glob `src/[`: "),
            "{err}"
        );
    }
}
