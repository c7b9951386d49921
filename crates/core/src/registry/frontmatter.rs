//! Frontmatter: the YAML header a Markdown file opens with between two fence lines, and the
//! crate's one YAML loader and YAML → JSON conversion.
//!
//! A header opens with a first line of `---` and ends at the next fence line. Finding the fences
//! ([`fence`]) is shared; what a file's header means is not, and the crate reads it two ways on
//! purpose:
//!
//! - **Strict**, for prompt files ([`split_frontmatter`]): a `---` or `...` line closes the
//!   header, a header that is never closed is an error, and the YAML is then parsed with node
//!   positions so every error names the file line at fault (`registry::template`).
//! - **Lenient**, for project rule files ([`LenientFrontmatter`]): the files are written for other
//!   tools (Cursor, Copilot, Windsurf, Claude Code) whose own readers are forgiving, so only a
//!   `---` line closes the header, an unclosed header is no header (the whole text is the body),
//!   a byte-order mark is skipped, and YAML that does not parse (`globs: *.ts`, which YAML reads
//!   as an alias) is read line by line as `key: value` and `- item` lines, as Cursor does. A
//!   lenient reader never fails.
//!
//! YAML is loaded without early scalar resolution ([`load_marked`]), so a caller can keep a
//! scalar's source text (`version: 2.0` stays `2.0`); [`to_json`] resolves plain scalars with
//! YAML 1.2 core-schema rules.

use std::borrow::Cow;
use std::collections::BTreeMap;

use saphyr::{MarkedYaml, Scalar, ScalarStyle, ScanError, YamlData, YamlLoader};
use serde_json::{Map, Number, Value};

/// Which lines close a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closer {
    /// Only a `---` line.
    Dashes,
    /// A `---` line or YAML's document end marker `...`.
    DashesOrDots,
}

impl Closer {
    fn closes(self, line: &str) -> bool {
        match self {
            Closer::Dashes => line == "---",
            Closer::DashesOrDots => line == "---" || line == "...",
        }
    }
}

/// A header and the body after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fenced<'a> {
    /// The header's text, between the fence lines (line endings kept).
    pub yaml: &'a str,
    /// Everything after the closing fence line.
    pub body: &'a str,
    /// 1-based line of `text` on which the body starts.
    pub body_line: usize,
}

/// What [`fence`] found at the start of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence<'a> {
    /// The first line is not `---`: the text has no header.
    Absent,
    /// The first line is `---` but no closing line follows.
    Unclosed,
    Closed(Fenced<'a>),
}

/// Finds a header fenced by a first line of `---` and the next line `closer` accepts (trailing
/// whitespace, `\r` included, is ignored on both).
pub fn fence(text: &str, closer: Closer) -> Fence<'_> {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Fence::Absent;
    };
    if first.trim_end() != "---" {
        return Fence::Absent;
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    let mut line_no = 1;
    for line in lines {
        line_no += 1;
        if closer.closes(line.trim_end()) {
            return Fence::Closed(Fenced {
                yaml: &text[yaml_start..offset],
                body: &text[offset + line.len()..],
                body_line: line_no + 1,
            });
        }
        offset += line.len();
    }
    Fence::Unclosed
}

/// Why a prompt file's header cannot be split off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    #[error("frontmatter opened with `---` is never closed")]
    Unclosed,
}

/// The strict split of a prompt file: `(header, body, body_line)`, where `header` is `None` when
/// the file has none (the body is then the whole text, from line 1). A header opened with `---`
/// and never closed is an error (it is on line 1).
pub fn split_frontmatter(text: &str) -> Result<(Option<&str>, &str, usize), FrontmatterError> {
    match fence(text, Closer::DashesOrDots) {
        Fence::Absent => Ok((None, text, 1)),
        Fence::Unclosed => Err(FrontmatterError::Unclosed),
        Fence::Closed(f) => Ok((Some(f.yaml), f.body, f.body_line)),
    }
}

/// Loads YAML text into nodes that keep their positions, leaving plain scalars unresolved (their
/// source text is kept). Multiple documents are not allowed.
pub fn load_marked(yaml: &str) -> Result<Vec<MarkedYaml<'_>>, ScanError> {
    let mut parser = saphyr_parser::Parser::new_from_str(yaml);
    let mut loader: YamlLoader<'_, MarkedYaml<'_>> = YamlLoader::default();
    loader.early_parse(false);
    let scan = parser.load(&mut loader, false);
    if let Some(e) = scan.err().or_else(|| loader.error().cloned()) {
        return Err(e);
    }
    Ok(loader.into_documents())
}

/// Parses one YAML document into JSON (YAML 1.2 core schema); empty input is `null`.
pub fn yaml_to_json(yaml: &str) -> Result<Value, String> {
    let docs = load_marked(yaml).map_err(|e| e.to_string())?;
    Ok(docs.first().map_or(Value::Null, to_json))
}

/// A scalar node's text as written (plain scalars unresolved); `None` for other nodes.
pub fn scalar_text<'a>(node: &'a MarkedYaml<'_>) -> Option<Cow<'a, str>> {
    match &node.data {
        YamlData::Representation(s, ..) => Some(Cow::Borrowed(s.as_ref())),
        YamlData::Value(Scalar::String(s)) => Some(Cow::Borrowed(s.as_ref())),
        YamlData::Value(Scalar::Integer(i)) => Some(Cow::Owned(i.to_string())),
        YamlData::Value(Scalar::Boolean(b)) => Some(Cow::Owned(b.to_string())),
        _ => None,
    }
}

/// Converts a YAML node to JSON, resolving plain scalars with YAML 1.2 core-schema rules.
pub fn to_json(node: &MarkedYaml<'_>) -> Value {
    match &node.data {
        YamlData::Representation(s, style, tag) => {
            let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
            if *style != ScalarStyle::Plain || is_str_tag {
                Value::String(s.to_string())
            } else {
                scalar_to_json(Scalar::parse_from_cow(Cow::Borrowed(s.as_ref())))
            }
        }
        YamlData::Value(s) => scalar_to_json(s.clone()),
        YamlData::Sequence(items) => Value::Array(items.iter().map(to_json).collect()),
        YamlData::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = scalar_text(k).map_or_else(|| to_json(k).to_string(), Cow::into_owned);
                out.insert(key, to_json(v));
            }
            Value::Object(out)
        }
        YamlData::Tagged(_, inner) => to_json(inner),
        YamlData::Alias(_) | YamlData::BadValue => Value::Null,
    }
}

fn scalar_to_json(s: Scalar<'_>) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(b),
        Scalar::Integer(i) => Value::Number(i.into()),
        Scalar::FloatingPoint(f) => {
            Number::from_f64(f.into_inner()).map_or(Value::Null, Value::Number)
        }
        Scalar::String(s) => Value::String(s.into_owned()),
    }
}

/// A header value, whatever YAML (or the line reader) made of it.
#[derive(Debug, Clone, PartialEq)]
enum FrontValue {
    Text(String),
    List(Vec<String>),
}

/// The header of a rule file, read leniently (see the module docs): top-level scalars as text,
/// sequences as lists of their scalar items; anything else is left out.
#[derive(Debug, Default)]
pub struct LenientFrontmatter {
    fields: BTreeMap<String, FrontValue>,
    /// The YAML parser refused the header and it was read line by line.
    line_read: bool,
}

impl LenientFrontmatter {
    /// Splits a `---`-fenced header from the body; a text without one (or whose header is never
    /// closed) is all body, returned as given.
    pub fn split(text: &str) -> (Self, &str) {
        let content = text.strip_prefix('\u{feff}').unwrap_or(text);
        match fence(content, Closer::Dashes) {
            Fence::Closed(f) => (Self::parse(f.yaml), f.body),
            Fence::Absent | Fence::Unclosed => (Self::default(), text),
        }
    }

    fn parse(yaml: &str) -> Self {
        match yaml_to_json(yaml) {
            Ok(Value::Object(map)) => Self {
                fields: map
                    .iter()
                    .filter_map(|(key, value)| Some((key.clone(), front_value(value)?)))
                    .collect(),
                line_read: false,
            },
            Ok(Value::Null) => Self::default(),
            _ => Self::parse_lines(yaml),
        }
    }

    /// Cursor's own reading: `key: value` lines, `- item` lines under an empty key.
    fn parse_lines(yaml: &str) -> Self {
        let mut fields = BTreeMap::new();
        let mut last_key: Option<String> = None;
        for line in yaml.lines() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if let Some(item) = trimmed
                .strip_prefix('-')
                .filter(|_| line.starts_with([' ', '\t', '-']))
            {
                if let Some(FrontValue::List(items)) =
                    last_key.as_ref().and_then(|k| fields.get_mut(k))
                {
                    items.push(item.trim().to_string());
                }
                continue;
            }
            if let Some((key, value)) = line.split_once(':') {
                let key = key.trim().to_string();
                let value = value.trim();
                let value = if value.is_empty() {
                    FrontValue::List(Vec::new())
                } else {
                    FrontValue::Text(value.to_string())
                };
                fields.insert(key.clone(), value);
                last_key = Some(key);
            }
        }
        Self {
            fields,
            line_read: true,
        }
    }

    /// Whether the header was not strict YAML and was read line by line.
    pub fn line_read(&self) -> bool {
        self.line_read
    }

    /// A text value, unquoted; empty when absent or a list.
    pub fn text(&self, key: &str) -> String {
        match self.fields.get(key) {
            Some(FrontValue::Text(text)) => unquote(text).to_string(),
            _ => String::new(),
        }
    }

    /// `true`, `"true"`, `'True'`… all count.
    pub fn flag(&self, key: &str) -> bool {
        self.text(key).eq_ignore_ascii_case("true")
    }

    /// A value as raw items: a list's items, or a text value (trimmed, a `[…]` flow list written
    /// as text unbracketed) as one item. Items are neither split nor unquoted.
    pub fn items(&self, key: &str) -> Vec<&str> {
        match self.fields.get(key) {
            Some(FrontValue::Text(text)) => {
                let text = text.trim();
                vec![
                    text.strip_prefix('[')
                        .and_then(|t| t.strip_suffix(']'))
                        .unwrap_or(text),
                ]
            }
            Some(FrontValue::List(items)) => items.iter().map(String::as_str).collect(),
            None => Vec::new(),
        }
    }
}

/// YAML indicators that make an unquoted value fail to parse.
fn has_yaml_indicator(value: &str) -> bool {
    value.contains(|c| "{}[]*&#!|>%@`".contains(c)) || value.contains(": ")
}

/// `value` as a YAML double-quoted scalar.
fn double_quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Claude Code's second reading of a header its YAML parser refused (2.1.233,
/// `utils/frontmatterParser.ts`, `quoteProblematicValues`): each `key: value` line (key of
/// letters, `_` and `-` at the line start) whose value is not already quoted and holds a YAML
/// indicator (`{}[]*&#!|>%@` and a backtick, or `: `) gets its value double-quoted, so
/// `argument-hint: [pr-number] [priority]` and `description: Fix: the bug` read as text. Lines
/// keep their numbers.
pub fn quote_problematic_values(yaml: &str) -> String {
    yaml.split('\n')
        .map(|line| {
            let Some((key, value)) = top_level_pair(line) else {
                return line.to_string();
            };
            let quoted = ['"', '\'']
                .iter()
                .any(|q| value.starts_with(*q) && value.ends_with(*q));
            if quoted || value.is_empty() || !has_yaml_indicator(value) {
                line.to_string()
            } else {
                format!("{key}: {}", double_quoted(value))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line `key: value` with `key` of letters, `_` and `-` at the line start and a value after
/// at least one space (Claude Code's `^([a-zA-Z_-]+):\s+(.+)$`), the value trimmed.
fn top_level_pair(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = line.split_once(':')?;
    let ok_key = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-');
    let value = rest.trim_end_matches('\r');
    (ok_key && value.starts_with(char::is_whitespace) && !value.trim().is_empty())
        .then(|| (key, value.trim()))
}

/// The last reading of a header no YAML reading accepts, as tools that read `key: value` lines
/// do (Codex 0.171, `codex-rs/core/src/custom_prompts.rs`, reads `description` and
/// `argument-hint` this way): each top-level `key: value` line is a text value, `- item` lines
/// under a key without a value are its list, every other line is skipped, and a repeated key
/// keeps its first value. The result is strict YAML with the same line numbers.
pub fn key_value_yaml(yaml: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut list_open = false;
    yaml.split('\n')
        .map(|raw| {
            let line = raw.trim_end_matches('\r');
            if list_open
                && line.starts_with([' ', '\t', '-'])
                && let Some(item) = line.trim_start().strip_prefix('-')
            {
                return format!("  - {}", double_quoted(unquote(item)));
            }
            list_open = false;
            let Some((key, value)) = line.split_once(':') else {
                return String::new();
            };
            let key_ok = !key.is_empty()
                && !key.starts_with(char::is_whitespace)
                && !key.starts_with(['-', '#'])
                && !seen.contains(&key);
            if !key_ok {
                return String::new();
            }
            seen.push(key);
            let value = value.trim();
            if value.is_empty() {
                list_open = true;
                format!("{}:", double_quoted(key))
            } else {
                format!("{}: {}", double_quoted(key), double_quoted(unquote(value)))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn yaml_scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn front_value(value: &Value) -> Option<FrontValue> {
    match value {
        Value::Array(items) => Some(FrontValue::List(
            items.iter().filter_map(yaml_scalar).collect(),
        )),
        other => yaml_scalar(other).map(FrontValue::Text),
    }
}

/// `text` trimmed, without one pair of surrounding `"` or `'` quotes.
pub fn unquote(text: &str) -> &str {
    let text = text.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_split_closes_on_dashes_or_dots_and_counts_the_body_line() {
        assert_eq!(
            split_frontmatter("---\na: 1\n...\nbody\n"),
            Ok((Some("a: 1\n"), "body\n", 4))
        );
        assert_eq!(
            split_frontmatter("---\r\na: 1\r\n---\r\nbody"),
            Ok((Some("a: 1\r\n"), "body", 4))
        );
        assert_eq!(
            split_frontmatter("no header\n"),
            Ok((None, "no header\n", 1))
        );
        assert_eq!(split_frontmatter(""), Ok((None, "", 1)));
        assert_eq!(
            split_frontmatter("---\na: 1\n"),
            Err(FrontmatterError::Unclosed)
        );
        assert_eq!(split_frontmatter("---"), Err(FrontmatterError::Unclosed));
    }

    #[test]
    fn lenient_split_skips_a_bom_and_keeps_unclosed_or_dotted_headers_as_body() {
        let (front, body) = LenientFrontmatter::split("\u{feff}---\nalwaysApply: true\n---\nBody");
        assert!(front.flag("alwaysApply"));
        assert_eq!(body, "Body");
        let unclosed = "---\nalwaysApply: true\nBody";
        let (front, body) = LenientFrontmatter::split(unclosed);
        assert!(!front.flag("alwaysApply"));
        assert_eq!(body, unclosed);
        let dotted = "---\nalwaysApply: true\n...\nBody";
        assert_eq!(LenientFrontmatter::split(dotted).1, dotted);
    }

    #[test]
    fn yaml_that_does_not_parse_is_read_line_by_line() {
        let (front, body) = LenientFrontmatter::split(
            "---\nglobs: *.ts,src/**/*.{ts,tsx}\nalwaysApply: false\n---\nBody\n",
        );
        assert!(front.line_read());
        assert_eq!(front.items("globs"), ["*.ts,src/**/*.{ts,tsx}"]);
        assert!(!front.flag("alwaysApply"));
        assert_eq!(body, "Body\n");
    }

    #[test]
    fn lists_flow_lists_and_string_flags() {
        let (front, _) = LenientFrontmatter::split(
            "---\nglobs:\n  - \"a/*.rs\"\n  - 'b/*.rs, c/*.rs'\nalwaysApply: \"true\"\npaths: '[x, y]'\n---\n",
        );
        assert!(!front.line_read());
        assert_eq!(front.items("globs"), ["a/*.rs", "b/*.rs, c/*.rs"]);
        assert_eq!(front.items("paths"), ["x, y"]);
        assert!(front.flag("alwaysApply"));
        assert!(front.items("absent").is_empty());
    }

    #[test]
    fn problematic_values_are_quoted_as_claude_code_quotes_them() {
        let yaml = "argument-hint: [pr-number] [priority]\ndescription: Fix: the bug\nname: \"kept\"\ntime: 12:30\n  nested: a: b";
        let quoted = quote_problematic_values(yaml);
        assert_eq!(
            quoted,
            "argument-hint: \"[pr-number] [priority]\"\ndescription: \"Fix: the bug\"\nname: \"kept\"\ntime: 12:30\n  nested: a: b"
        );
        assert_eq!(
            yaml_to_json(&quote_problematic_values(
                "argument-hint: <optional: a \"b\">"
            ))
            .unwrap(),
            serde_json::json!({"argument-hint": "<optional: a \"b\">"})
        );
    }

    #[test]
    fn key_value_lines_read_what_no_yaml_reading_accepts() {
        let yaml = "description: a: b: [c\n  stray: x\ntools:\n  - Read\n  - 'Bash(git *)'\ndescription: second\n{broken";
        let strict = key_value_yaml(yaml);
        assert_eq!(strict.split('\n').count(), yaml.split('\n').count());
        assert_eq!(
            yaml_to_json(&strict).unwrap(),
            serde_json::json!({"description": "a: b: [c", "tools": ["Read", "Bash(git *)"]})
        );
    }

    #[test]
    fn yaml_to_json_resolves_plain_scalars_only() {
        assert_eq!(
            yaml_to_json("a: 2.0\nb: '30'\nc: true\nd: [1, x]\n").unwrap(),
            serde_json::json!({"a": 2.0, "b": "30", "c": true, "d": [1, "x"]})
        );
        assert_eq!(yaml_to_json("").unwrap(), Value::Null);
        assert!(yaml_to_json("a: [unclosed").is_err());
    }
}
