//! insta's `.snap` file format, read and written byte for byte as insta does, so that
//! `cargo insta review` / `cargo insta accept` work on promptd's snapshots and accepting one with
//! cargo-insta rewrites nothing else.
//!
//! A file is a YAML header between two `---` lines (`source`, `expression`, optionally
//! `description`), then the content. insta compares contents after trimming trailing whitespace
//! and turning CRLF into LF, and writes that normalized content followed by one newline; we do
//! the same ([`normalize`]). A pending (new or changed) snapshot is the same format in a
//! `.snap.new` file beside the `.snap`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::registry::frontmatter::{Closer, Fence, fence, load_marked, to_json};

/// One `.snap` file: its header fields and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    /// Where the snapshot comes from (insta: the test file; here: the case file or prompt file).
    pub source: Option<String>,
    /// What was snapshotted (insta: the asserted expression; here: the prompt and arguments).
    pub expression: Option<String>,
    /// Shown by `cargo insta review`; not written unless set.
    pub description: Option<String>,
    /// The snapshot text as stored (already normalized when read back).
    pub content: String,
}

/// Why a file is not a readable snapshot.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}:{line}: not a valid snapshot file: {message}")]
pub struct SnapshotFileError {
    pub path: String,
    pub line: usize,
    pub message: String,
}

/// Content as insta compares and stores it: trailing whitespace trimmed, CRLF turned into LF.
pub fn normalize(content: &str) -> String {
    content.trim_end().replace("\r\n", "\n")
}

/// The pending file of a snapshot: `x.snap` → `x.snap.new` (what cargo-insta looks for).
pub fn pending_path(snap: &Path) -> PathBuf {
    let mut name = snap.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

impl SnapshotFile {
    /// The file text, exactly as insta's `Snapshot::save` writes it.
    pub fn to_file_text(&self) -> String {
        let mut out = String::from("---\n");
        for (key, value) in [
            ("source", &self.source),
            ("description", &self.description),
            ("expression", &self.expression),
        ] {
            if let Some(v) = value {
                out.push_str(key);
                out.push_str(": ");
                out.push_str(&yaml_string(v));
                out.push('\n');
            }
        }
        out.push_str("---\n");
        out.push_str(&normalize(&self.content));
        out.push('\n');
        out
    }

    /// Parses file text the way insta's `Snapshot::from_file` does: a `---` line opens the YAML
    /// header, the next `---` line closes it, and the remaining lines are the content. (insta's
    /// older header-less format, `key: value` lines up to a blank line, is read too.)
    pub fn parse(text: &str, path: &str) -> Result<SnapshotFile, SnapshotFileError> {
        let mut snapshot = SnapshotFile {
            source: None,
            expression: None,
            description: None,
            content: String::new(),
        };
        let content = match fence(text, Closer::Dashes) {
            Fence::Closed(header) => {
                let fields =
                    parse_header(header.yaml).map_err(|(line, message)| SnapshotFileError {
                        path: path.to_string(),
                        line: line + 1,
                        message,
                    })?;
                let field = |k: &str| fields.get(k).and_then(Value::as_str).map(str::to_string);
                snapshot.source = field("source");
                snapshot.expression = field("expression");
                snapshot.description = field("description");
                header.body
            }
            Fence::Unclosed => {
                return Err(SnapshotFileError {
                    path: path.to_string(),
                    line: 1,
                    message: "the header opened with `---` is never closed".into(),
                });
            }
            Fence::Absent => {
                // insta's legacy format: `key: value` lines up to the first blank line.
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                let blank = lines
                    .iter()
                    .position(|l| l.trim_end().is_empty())
                    .unwrap_or(lines.len());
                for l in &lines[..blank] {
                    if let Some((k, v)) = l.split_once(':') {
                        match k.to_lowercase().as_str() {
                            "source" => snapshot.source = Some(v.trim().to_string()),
                            "expression" => snapshot.expression = Some(v.trim().to_string()),
                            _ => {}
                        }
                    }
                }
                let header_len: usize = lines[..(blank + 1).min(lines.len())]
                    .iter()
                    .map(|l| l.len())
                    .sum();
                &text[header_len..]
            }
        };
        // Like insta: the remaining lines, without their line endings, joined with `\n`.
        snapshot.content = content.lines().collect::<Vec<_>>().join("\n");
        Ok(snapshot)
    }

    /// Reads a snapshot file; `Ok(None)` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<SnapshotFile>, std::io::Error> {
        match std::fs::read_to_string(path) {
            Ok(text) => SnapshotFile::parse(&text, &path.display().to_string())
                .map(Some)
                .map_err(std::io::Error::other),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes the file (creating its folder), as insta would.
    pub fn write(&self, path: &Path) -> Result<(), std::io::Error> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_file_text())
    }

    /// Whether `other` has the same content once both are normalized (headers are not compared,
    /// as in insta).
    pub fn same_content(&self, content: &str) -> bool {
        normalize(&self.content) == normalize(content)
    }
}

/// Parses the YAML header into its top-level fields. Errors carry the 1-based header line.
fn parse_header(yaml: &str) -> Result<serde_json::Map<String, Value>, (usize, String)> {
    let docs = load_marked(yaml).map_err(|e| {
        (
            e.marker().line(),
            format!("invalid YAML header: {}", e.info()),
        )
    })?;
    match docs.first().map(to_json) {
        None | Some(Value::Null) => Ok(serde_json::Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err((0, "the header must be a YAML mapping".into())),
    }
}

/// A YAML scalar exactly as insta's emitter writes a string: plain when safe, else a
/// double-quoted string with JSON-style escapes.
fn yaml_string(s: &str) -> String {
    if !needs_quotes(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// insta's (yaml-rust's) rule for when a string scalar must be quoted.
fn needs_quotes(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "yes", "Yes", "YES", "no", "No", "NO", "True", "TRUE", "true", "False", "FALSE", "false",
        "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~",
    ];
    s.is_empty()
        || s.starts_with(' ')
        || s.ends_with(' ')
        || s.starts_with(['&', '*', '?', '|', '-', '<', '>', '=', '!', '%', '@'])
        || s.contains(|c: char| {
            matches!(
                c,
                ':' | '{'
                    | '}'
                    | '['
                    | ']'
                    | ','
                    | '#'
                    | '`'
                    | '"'
                    | '\''
                    | '\\'
                    | '\0'..='\x06'
                    | '\t'
                    | '\n'
                    | '\r'
                    | '\x0e'..='\x1a'
                    | '\x1c'..='\x1f'
            )
        })
        || RESERVED.contains(&s)
        || s.starts_with('.')
        || s.starts_with("0x")
        || s.parse::<i64>().is_ok()
        || s.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(content: &str) -> SnapshotFile {
        SnapshotFile {
            source: Some("tests/prompts/review.yaml".into()),
            expression: Some(r#"code_review {"target":"src/lib.rs"}"#.into()),
            description: None,
            content: content.into(),
        }
    }

    #[test]
    fn writes_insta_layout() {
        assert_eq!(
            snap("Hello\nworld\n\n").to_file_text(),
            "---\nsource: tests/prompts/review.yaml\nexpression: \"code_review {\\\"target\\\":\\\"src/lib.rs\\\"}\"\n---\nHello\nworld\n"
        );
    }

    #[test]
    fn round_trips_and_compares_normalized() {
        let s = snap("\n  leading blank line kept\r\nlast");
        let back = SnapshotFile::parse(&s.to_file_text(), "x.snap").unwrap();
        assert_eq!(back.source, s.source);
        assert_eq!(back.expression, s.expression);
        assert_eq!(back.content, "\n  leading blank line kept\nlast");
        assert!(back.same_content("\n  leading blank line kept\nlast\n\n"));
        assert!(!back.same_content("leading blank line kept\nlast"));
    }

    #[test]
    fn quoting_follows_insta() {
        assert_eq!(yaml_string("plain text"), "plain text");
        assert_eq!(yaml_string("a: b"), "\"a: b\"");
        assert_eq!(yaml_string("true"), "\"true\"");
        assert_eq!(yaml_string("2.0"), "\"2.0\"");
        assert_eq!(yaml_string("-x"), "\"-x\"");
        assert_eq!(yaml_string(""), "\"\"");
    }

    #[test]
    fn unclosed_header_is_an_error() {
        let e = SnapshotFile::parse("---\nsource: x\n", "x.snap").unwrap_err();
        assert!(e.to_string().contains("never closed"), "{e}");
    }

    #[test]
    fn pending_path_appends_new() {
        assert_eq!(
            pending_path(Path::new("s/a@b.snap")),
            PathBuf::from("s/a@b.snap.new")
        );
    }
}
