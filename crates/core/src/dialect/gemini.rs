//! Gemini CLI commands (`.gemini/commands/**/*.toml`): the TOML's `prompt` is the body and its
//! `description` the description; `{{args}}` is the argument `args`. Other keys are kept as
//! metadata.

use serde_json::{Map, Value};

use super::segment::{Key, Segment, Slot};

/// The argument holding everything typed after the command.
pub const ARGS: &str = "args";
const PLACEHOLDER: &str = "{{args}}";

/// A Gemini command file.
#[derive(Debug, Clone)]
pub struct CommandFile {
    pub prompt: String,
    pub description: Option<String>,
    /// Every other key.
    pub metadata: Map<String, Value>,
}

/// Why a command file does not parse, at a line of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct CommandFileError {
    pub line: usize,
    pub message: String,
}

/// Parses a command file; errors name the file line.
pub fn parse(text: &str) -> Result<CommandFile, CommandFileError> {
    let err = |offset: Option<usize>, message: String| {
        let line = offset.map_or(1, |o| text[..o.min(text.len())].matches('\n').count() + 1);
        CommandFileError { line, message }
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        err(
            e.span().map(|s| s.start),
            format!("invalid TOML: {}", e.message()),
        )
    })?;
    let mut metadata = Map::new();
    let mut prompt = None;
    let mut description = None;
    for (k, v) in table {
        let json = serde_json::to_value(&v).unwrap_or(Value::Null);
        match (k.as_str(), v) {
            ("prompt", toml::Value::String(s)) => prompt = Some(s),
            ("prompt", _) => return Err(err(None, "`prompt` must be a string".into())),
            ("description", toml::Value::String(s)) => description = Some(s),
            ("description", _) => {
                return Err(err(None, "`description` must be a string".into()));
            }
            _ => {
                metadata.insert(k, json);
            }
        }
    }
    let prompt = prompt.ok_or_else(|| err(None, "a Gemini command needs a `prompt`".into()))?;
    Ok(CommandFile {
        prompt,
        description,
        metadata,
    })
}

/// The body cut at `{{args}}`.
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut last = 0;
    for (start, raw) in body.match_indices(PLACEHOLDER) {
        if start > last {
            out.push(Segment::Text(&body[last..start]));
        }
        out.push(Segment::Slot {
            raw,
            slot: Slot {
                key: Key::Arg(ARGS.into()),
                keep_when_missing: false,
                required: false,
                hint: None,
            },
        });
        last = start + raw.len();
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// `args` is what the user types after the command.
pub fn argument_hint(name: &str) -> Option<String> {
    (name == ARGS).then(|| "the text typed after the command".to_string())
}
