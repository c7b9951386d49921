//! How a file becomes a template. A prompt file's *dialect* decides its name, its arguments and
//! how a render substitutes them; everything else in the file is served byte for byte.
//!
//! This is text-level knowledge only, in plain parts (a name, [`PlaceholderArgument`]s, a
//! description, directives, [`Segment`]s): the registry assembles them into a prompt template
//! and the renderer substitutes with them. Nothing here depends on either.
//!
//! | dialect | recognised by | placeholders |
//! |---|---|---|
//! | [`Dialect::Jinja`] | any other `*.md` | minijinja (plain fallback), in `render` |
//! | [`Dialect::Plain`] | `engine: plain` | `{{ key }}` |
//! | [`Dialect::Vscode`] | `*.prompt.md`, a `.github/prompts` folder | `${input:x}`, `${file}`, … |
//! | [`Dialect::Claude`] | a `.claude/commands` folder | `$ARGUMENTS`, `$ARGUMENTS[N]`, `$N`, `$name` |
//! | [`Dialect::Codex`] | a `.codex/prompts` folder | `$ARGUMENTS`, `$1`…`$9`, or `$NAME` |
//! | [`Dialect::Gemini`] | `*.toml` under a `.gemini/commands` folder | `{{args}}` |
//! | [`Dialect::Cursor`] | a `.cursor/commands` folder | none |
//! | [`Dialect::Dotprompt`] | `*.prompt` (not `_*.prompt`, a partial) | Handlebars, in `render` |
//! | [`Dialect::Prompty`] | `*.prompty` | Jinja2, in `render` |
//! | [`Dialect::Opencode`] | a `.opencode/command` or `.opencode/commands` folder | `$ARGUMENTS`, `$1`… |
//!
//! The folder decides first (its last two path components), then the file name; frontmatter
//! `engine:` and the config's `dialects` section override both. Each dialect cuts its body into
//! [`Segment`]s: text, kept verbatim, and slots, replaced by a render. A render with every
//! argument supplied therefore replaces exactly the placeholders and nothing else.

pub mod claude;
pub mod cursor;
pub mod dotprompt;
pub mod gemini;
pub mod jinja;
pub mod opencode;
pub mod plain;
pub mod prompty;
pub mod segment;
pub mod vscode;

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use segment::{Key, Segment, Slot, TooLarge, display_value, shell_words, substitute};

/// The format a prompt file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// promptd's own: minijinja over layered variables, plain substitution as fallback.
    Jinja,
    /// `{{ key }}` substitution only (Azure DevOps style prompt files).
    Plain,
    /// VS Code / Copilot prompt files.
    Vscode,
    /// Claude Code commands.
    Claude,
    /// Codex CLI prompts: positional or named `$NAME` placeholders.
    Codex,
    /// Gemini CLI commands (TOML).
    Gemini,
    /// Cursor commands.
    Cursor,
    /// Dotprompt files (`*.prompt`, Firebase Genkit): Handlebars, arguments from `input.schema`.
    Dotprompt,
    /// Prompty files (`*.prompty`): Jinja2, arguments from `inputs`, role lines.
    Prompty,
    /// OpenCode commands.
    Opencode,
}

/// Folder endings (last two components) that decide a dialect.
const FOLDERS: &[(&str, &str, Dialect)] = &[
    (".github", "prompts", Dialect::Vscode),
    (".claude", "commands", Dialect::Claude),
    (".codex", "prompts", Dialect::Codex),
    (".gemini", "commands", Dialect::Gemini),
    (".cursor", "commands", Dialect::Cursor),
    // OpenCode reads both (`{command,commands}/**/*.md`, see `opencode`).
    (".opencode", "command", Dialect::Opencode),
    (".opencode", "commands", Dialect::Opencode),
];

/// Tool-specific frontmatter keys shown in listings.
pub const TOOL_KEYS: &[&str] = &[
    "agent",
    "mode",
    "model",
    "tools",
    "allowed-tools",
    "argument-hint",
    "disable-model-invocation",
    "arguments",
    // Dotprompt, Prompty and OpenCode model settings and declarations.
    "config",
    "input",
    "output",
    "variant",
    "inputs",
    "outputs",
    "authors",
    "sample",
    "subtask",
];

impl Dialect {
    /// A dialect by the name used in frontmatter `engine:` and in config.
    pub fn parse(name: &str) -> Option<Dialect> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "jinja" | "minijinja" | "jinja2" | "promptd" => Dialect::Jinja,
            "plain" | "ado" => Dialect::Plain,
            "vscode" | "copilot" => Dialect::Vscode,
            "claude" => Dialect::Claude,
            "codex" => Dialect::Codex,
            "gemini" => Dialect::Gemini,
            "cursor" => Dialect::Cursor,
            "dotprompt" | "genkit" => Dialect::Dotprompt,
            "prompty" => Dialect::Prompty,
            "opencode" => Dialect::Opencode,
            _ => return None,
        })
    }

    /// The accepted names, for messages.
    pub const NAMES: &'static str =
        "jinja, plain, vscode, claude, codex, gemini, cursor, dotprompt, prompty or opencode";

    /// The dialect's name in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Jinja => "jinja",
            Dialect::Plain => "plain",
            Dialect::Vscode => "vscode",
            Dialect::Claude => "claude",
            Dialect::Codex => "codex",
            Dialect::Gemini => "gemini",
            Dialect::Cursor => "cursor",
            Dialect::Dotprompt => "dotprompt",
            Dialect::Prompty => "prompty",
            Dialect::Opencode => "opencode",
        }
    }

    /// The dialect a folder's location decides (`…/.claude/commands`), if any.
    pub fn of_folder(dir: &Path) -> Option<Dialect> {
        let mut comps = dir
            .components()
            .rev()
            .map(|c| c.as_os_str().to_string_lossy());
        let last = comps.next()?;
        let parent = comps.next()?;
        FOLDERS
            .iter()
            .find(|(p, l, _)| *p == parent && *l == last)
            .map(|(_, _, d)| *d)
    }

    /// The folder of a dialect under a repository root (`.claude/commands`), when it has one.
    pub fn folders() -> impl Iterator<Item = (String, Dialect)> {
        FOLDERS.iter().map(|(p, l, d)| (format!("{p}/{l}"), *d))
    }

    /// The dialect of a file from its folder's dialect and its name (before frontmatter).
    pub fn recognise(folder: Option<Dialect>, rel_path: &str) -> Dialect {
        if rel_path.ends_with(".toml") {
            return Dialect::Gemini;
        }
        // Their extensions decide, wherever they are (a `prompts/` folder holds them beside
        // promptd's own files).
        if rel_path.ends_with(".prompt") {
            return Dialect::Dotprompt;
        }
        if rel_path.ends_with(".prompty") {
            return Dialect::Prompty;
        }
        match folder {
            Some(d) if d != Dialect::Gemini => d,
            _ if rel_path.ends_with(".prompt.md") => Dialect::Vscode,
            _ => Dialect::Jinja,
        }
    }

    /// Whether files of this dialect are rendered by promptd's template engine (Jinja or its
    /// plain fallback) rather than by the dialect's own substitution.
    pub fn is_promptd(self) -> bool {
        matches!(self, Dialect::Jinja | Dialect::Plain)
    }

    /// Whether a folder of this dialect holds only that tool's files, every subfolder a
    /// namespace (a promptd folder also has `system/` and include folders).
    pub fn nested(self) -> bool {
        !self.is_promptd()
    }

    /// Whether a file of a folder of this dialect is a prompt file.
    pub fn accepts(self, file_name: &str) -> bool {
        match self {
            Dialect::Gemini => file_name.ends_with(".toml"),
            // VS Code loads only `*.prompt.md` from a prompt folder ("Prompt files are Markdown
            // files with the .prompt.md extension", code.visualstudio.com/docs/copilot/
            // customization/prompt-files, the page as published on 2026-11-28): a `README.md`
            // or a partial beside them is not a prompt.
            Dialect::Vscode => file_name.ends_with(".prompt.md"),
            Dialect::Dotprompt => dotprompt::is_prompt_file(file_name),
            Dialect::Prompty => file_name.ends_with(".prompty"),
            _ => file_name.ends_with(".md"),
        }
    }

    /// Whether a file of a promptd folder (`prompts/`, a `--prompts` folder of no other
    /// dialect) is a prompt file: promptd's `*.md`, Dotprompt's `*.prompt` (Genkit loads
    /// `promptDir ?? './prompts'`, firebase/genkit `js/genkit/src/genkit.ts`) but not its
    /// partials (`_x.prompt`), and Prompty's `*.prompty`.
    pub fn promptd_folder_accepts(file_name: &str) -> bool {
        file_name.ends_with(".md")
            || dotprompt::is_prompt_file(file_name)
            || file_name.ends_with(".prompty")
    }

    /// The body cut into verbatim text and slots; `metadata` is the file's frontmatter (Claude
    /// Code's named arguments are declared there).
    pub fn segments<'a>(self, body: &'a str, metadata: &Map<String, Value>) -> Vec<Segment<'a>> {
        match self {
            Dialect::Jinja | Dialect::Plain => plain::segments(body),
            Dialect::Vscode => vscode::segments(body),
            Dialect::Claude => claude::claude_segments(body, &claude::argument_names(metadata)),
            Dialect::Codex => claude::codex_segments(body),
            Dialect::Gemini => gemini::segments(body),
            Dialect::Cursor => cursor::segments(body),
            Dialect::Dotprompt => dotprompt::segments(body),
            Dialect::Prompty => prompty::segments(body),
            Dialect::Opencode => opencode::segments(body),
        }
    }

    /// Whether a render of this dialect runs a template engine (Handlebars, Jinja2) over typed
    /// values rather than substituting text slots.
    pub fn has_engine(self) -> bool {
        matches!(self, Dialect::Dotprompt | Dialect::Prompty)
    }

    /// The top-level names a body of an engine dialect reads (Handlebars `{{x}}`,
    /// `{{#if x}}`, …; Jinja's undeclared variables); none for the other dialects.
    pub fn template_variables(self, body: &str) -> Vec<String> {
        match self {
            Dialect::Dotprompt => dotprompt::top_level_names(body)
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
            Dialect::Prompty => prompty::template_variables(body),
            _ => Vec::new(),
        }
    }

    /// The argument that holds the text typed after the command, when this dialect's tool
    /// appends it to a prompt whose placeholders did not take it.
    fn trailing_argument(self) -> Option<&'static str> {
        match self {
            Dialect::Claude => Some(claude::ARGUMENTS),
            Dialect::Gemini => Some(gemini::ARGS),
            _ => None,
        }
    }

    /// What the tool appends for typed text `value` after a render that used `used` of a body
    /// cut into `segments`:
    /// - Claude Code: `\nARGUMENTS: <text>` when nothing was substituted (2.1.233,
    ///   `utils/argumentSubstitution.ts`; "If `$ARGUMENTS` is not present in the content,
    ///   arguments are appended", code.claude.com/docs/en/skills);
    /// - Gemini CLI: two newlines and the command as typed (`/name text`) when the prompt has
    ///   no `{{args}}` (0.61, `DefaultArgumentProcessor` in
    ///   `packages/cli/src/services/prompt-processors/argumentProcessor.ts`, and "Default
    ///   argument processing" at geminicli.com/docs/cli/custom-commands).
    fn trailing(
        self,
        name: &str,
        segments: &[Segment<'_>],
        used: &[String],
        value: &str,
    ) -> Option<String> {
        if value.is_empty() {
            return None;
        }
        match self {
            Dialect::Claude if used.is_empty() => Some(format!("\nARGUMENTS: {value}")),
            Dialect::Gemini if !segments.iter().any(|s| matches!(s, Segment::Slot { .. })) => {
                Some(format!("\n\n/{name} {value}"))
            }
            _ => None,
        }
    }

    /// The description of an argument a dialect derives, from the file's frontmatter.
    fn argument_hint(self, name: &str, meta: &Map<String, Value>) -> Option<String> {
        match self {
            Dialect::Claude | Dialect::Codex => claude::argument_hint(name, meta),
            Dialect::Vscode => vscode::variable_description(name),
            Dialect::Gemini => gemini::argument_hint(name),
            Dialect::Opencode => {
                (name == opencode::ARGUMENTS).then(|| "the text typed after the command".into())
            }
            _ => None,
        }
    }

    /// The arguments this dialect's placeholders in `body` declare, in order of first
    /// appearance, then the text typed after the command when the tool appends it; `body_line`
    /// is the file line where the body starts, `metadata` the file's frontmatter (some dialects
    /// describe an argument there).
    pub fn placeholder_arguments(
        self,
        body: &str,
        body_line: usize,
        metadata: &Map<String, Value>,
    ) -> Vec<PlaceholderArgument> {
        match self {
            Dialect::Opencode => return opencode::arguments(body, body_line),
            Dialect::Prompty => {
                return prompty::template_variables(body)
                    .into_iter()
                    .map(|name| PlaceholderArgument {
                        line: body
                            .find(name.as_str())
                            .map_or(body_line, |at| line_at(body, at, body_line)),
                        name,
                        required: false,
                        description: None,
                    })
                    .collect();
            }
            _ => {}
        }
        let mut out: Vec<PlaceholderArgument> = Vec::new();
        for seg in self.segments(body, metadata) {
            let Segment::Slot { raw, slot } = seg else {
                continue;
            };
            let Some(name) = slot.key.argument() else {
                continue;
            };
            if let Some(existing) = out.iter_mut().find(|a| a.name == name) {
                existing.required |= slot.required;
                if existing.description.is_none() {
                    existing.description = slot.hint.clone();
                }
                continue;
            }
            let offset = raw.as_ptr() as usize - body.as_ptr() as usize;
            out.push(PlaceholderArgument {
                name: name.to_string(),
                required: slot.required,
                description: slot
                    .hint
                    .clone()
                    .or_else(|| self.argument_hint(name, metadata)),
                line: line_at(body, offset, body_line),
            });
        }
        if let Some(name) = self.trailing_argument()
            && !out.iter().any(|a| a.name == name)
        {
            let appended = match self {
                Dialect::Gemini => "appended after a blank line as the typed command",
                _ => "appended as `ARGUMENTS: …`",
            };
            let hint = self.argument_hint(name, metadata);
            out.push(PlaceholderArgument {
                name: name.to_string(),
                required: false,
                description: Some(match hint {
                    Some(h) => format!("{h} ({appended})"),
                    None => format!("the text typed after the command ({appended})"),
                }),
                line: body_line,
            });
        }
        out
    }

    /// Substitutes the body of command `name` as its tool does: each slot's value from
    /// `lookup`, text verbatim, and typed text appended where the tool appends it.
    pub fn substitute(
        self,
        body: &str,
        command: Command<'_>,
        lookup: impl Fn(&str) -> Option<String>,
        max_len: usize,
    ) -> Result<(String, Vec<String>), TooLarge> {
        self.substitute_wrapped(body, command, lookup, |_, _, v| v, max_len)
    }

    /// Like [`substitute`](Self::substitute), each slot's final value passed through `wrap`
    /// with the argument it comes from and the placeholder's text (a slice of `body`; empty for
    /// a value appended after it) before it is written.
    pub fn substitute_wrapped(
        self,
        body: &str,
        command: Command<'_>,
        lookup: impl Fn(&str) -> Option<String>,
        wrap: impl Fn(&str, &str, String) -> String,
        max_len: usize,
    ) -> Result<(String, Vec<String>), TooLarge> {
        if self == Dialect::Opencode {
            return opencode::substitute_wrapped(body, lookup, wrap, max_len);
        }
        let segments = self.segments(body, command.metadata);
        let (mut text, mut used) = segment::substitute_wrapped(&segments, &lookup, &wrap, max_len)?;
        if let Some(name) = self.trailing_argument()
            && let Some(value) = lookup(name)
            && let Some(tail) =
                self.trailing(command.name, &segments, &used, &wrap(name, "", value))
        {
            if text.len() + tail.len() > max_len {
                return Err(TooLarge { limit: max_len });
            }
            text.push_str(&tail);
            used.push(name.to_string());
        }
        Ok((text, used))
    }
}

/// What a render of another tool's command knows besides its arguments: the command's name
/// (Gemini CLI appends the typed command) and its frontmatter (Claude Code's named arguments).
#[derive(Debug, Clone, Copy)]
pub struct Command<'a> {
    pub name: &'a str,
    pub metadata: &'a Map<String, Value>,
}

/// An argument a dialect's frontmatter declares with its type and values (Dotprompt's
/// `input.schema`, Prompty's `inputs`): the registry makes an argument of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredArgument {
    pub name: String,
    pub required: bool,
    pub description: Option<String>,
    /// A JSON Schema type name (`string`, `integer`, `array`, …).
    pub arg_type: Option<String>,
    pub enum_values: Option<Vec<Value>>,
    pub default: Option<Value>,
    pub examples: Vec<Value>,
    /// The whole JSON Schema of a structured value (array items, object properties).
    pub schema: Option<Value>,
    /// 1-based file line.
    pub line: usize,
}

impl DeclaredArgument {
    /// An optional argument with nothing declared but its name.
    pub fn named(name: &str, line: usize) -> DeclaredArgument {
        DeclaredArgument {
            name: name.to_string(),
            required: false,
            description: None,
            arg_type: None,
            enum_values: None,
            default: None,
            examples: Vec::new(),
            schema: None,
            line,
        }
    }
}

/// An argument a dialect's placeholders declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderArgument {
    pub name: String,
    /// Some placeholder of it must be given (`${input:x}`, a Codex `$NAME`).
    pub required: bool,
    /// From the placeholder (`${input:x:description}`), else from the dialect's frontmatter.
    pub description: Option<String>,
    /// 1-based file line of its first placeholder.
    pub line: usize,
}

/// The file line of byte `offset` of a body that starts at `body_line`.
fn line_at(body: &str, offset: usize, body_line: usize) -> usize {
    body_line + body[..offset.min(body.len())].matches('\n').count()
}

/// A prompt's name from its root-relative path: the file name without `.md`, `.toml` or
/// `.prompt.md` (or Dotprompt's `.prompt`, Prompty's `.prompty`), subfolders joined with `:` (`tools/api-scaffold.md` → `tools:api-scaffold`),
/// characters other than letters, digits, `_`, `-`, `.` and `:` replaced by `-`. A file that
/// names its own namespace (`svelte/svelte:test.md`, the Codex habit) is not namespaced twice.
pub fn name_from_path(rel_path: &str) -> String {
    let rel = [".prompt.md", ".md", ".toml", ".prompty", ".prompt"]
        .iter()
        .find_map(|ext| rel_path.strip_suffix(ext).filter(|s| !s.is_empty()))
        .unwrap_or(rel_path);
    let mut parts: Vec<&str> = rel.split('/').collect();
    if let [.., folder, file] = parts.as_slice()
        && file.split(':').next() == Some(*folder)
        && file.contains(':')
    {
        parts.remove(parts.len() - 2);
    }
    parts
        .iter()
        .flat_map(|p| p.split(':'))
        .map(sanitize_segment)
        .collect::<Vec<_>>()
        .join(":")
}

/// A name for two files that would otherwise share one: the whole root-relative path.
pub fn qualified_name(rel_path: &str) -> String {
    rel_path
        .split(['/', ':'])
        .map(sanitize_segment)
        .collect::<Vec<_>>()
        .join(":")
}

fn sanitize_segment(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if out.is_empty() || out == "." || out == ".." {
        "_".into()
    } else {
        out
    }
}

/// The description of a prompt without a `description`: its first non-empty body line.
pub fn first_line_description(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .filter(|l| !l.is_empty())
}

/// The description of a Dotprompt or Prompty file without a `description`: its first body line
/// that is text, not only template tags (`{{role "system"}}`, `{% if x %}`) nor a Prompty role
/// line (`system:`).
pub fn first_text_line_description(body: &str) -> Option<String> {
    static TAGS_ONLY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"^(?:\s*(?:\{\{[^{}]*\}\}|\{%[^%]*%\}))+\s*$|^\s*#?\s*(?i:system|user|assistant|developer)\s*:\s*$",
        )
        .expect("tags-only regex")
    });
    body.lines()
        .filter(|l| !TAGS_ONLY.is_match(l))
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .filter(|l| !l.is_empty())
}

static BANG_BACKTICK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"!`[^`\n]+`").expect("shell directive regex"));
static BANG_BRACE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"!\{[^}\n]*\}").expect("shell directive regex"));
static AT_BRACE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)(?:^|[\s(])@\{[^}\n]+\}").expect("file directive regex"));
static AT_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?:^|[\s(])@[\w~.-]*[/.][\w~./-]*\w").expect("file directive regex")
});

/// Which directives of its tool a body contains: `shell` (`!`cmd`` for Claude Code and Codex,
/// `!{cmd}` for Gemini CLI) and `file` (`@path` for Claude Code, Codex and Cursor, `@{path}` for
/// Gemini CLI, each at the start of a word). They are never run or read: the listing only says
/// they are there.
pub fn directives(dialect: Dialect, body: &str) -> Vec<&'static str> {
    let (shell, file): (Option<&Regex>, Option<&Regex>) = match dialect {
        Dialect::Claude | Dialect::Codex | Dialect::Opencode => {
            (Some(&BANG_BACKTICK), Some(&AT_PATH))
        }
        Dialect::Cursor => (None, Some(&AT_PATH)),
        Dialect::Gemini => (Some(&BANG_BRACE), Some(&AT_BRACE)),
        Dialect::Jinja
        | Dialect::Plain
        | Dialect::Vscode
        | Dialect::Dotprompt
        | Dialect::Prompty => (None, None),
    };
    let mut out = Vec::new();
    if shell.is_some_and(|r| r.is_match(body)) {
        out.push("shell");
    }
    // `@name` inside a code block is code (a Python decorator, an npm scope), not a file.
    if file.is_some_and(|r| r.is_match(&outside_code_blocks(body))) {
        out.push("file");
    }
    out
}

/// The Markdown text with its code blocks blanked out (same length elsewhere).
fn outside_code_blocks(body: &str) -> String {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    let mut start = None;
    for (event, range) in Parser::new(body).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) if start.is_none() => start = Some(range.start),
            Event::End(TagEnd::CodeBlock) => {
                if let Some(from) = start.take() {
                    out.push_str(&body[last..from]);
                    out.push('\n');
                    last = range.end;
                }
            }
            _ => {}
        }
    }
    out.push_str(&body[last..]);
    out
}

/// Whether a frontmatter key is one of [`tool_metadata`]'s.
pub fn is_tool_key(key: &str) -> bool {
    TOOL_KEYS.contains(&key)
}

/// The tool-specific keys of a file's frontmatter, for listings.
pub fn tool_metadata(metadata: &Map<String, Value>) -> Map<String, Value> {
    metadata
        .iter()
        .filter(|(k, _)| is_tool_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests;
