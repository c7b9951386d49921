//! Compatibility check over prompt collections written for other tools (Claude Code, Codex,
//! Gemini CLI, Cursor, VS Code prompt files, OpenCode commands, Dotprompt and Prompty files).
//!
//! `compat_collections` is ignored by default: it reads folders named by `PROMPTD_COMPAT_DIRS`
//! (a path list, `:`-separated) and drives the real binary over each one, as a new user would
//! with `--prompts DIR`: `list --json`, `get` of every listed prompt with its arguments set as a
//! user of the file's own tool would type them, and `check`. `PROMPTD_COMPAT_BIN` runs another
//! build of promptd instead of this crate's (to compare branches), `PROMPTD_COMPAT_REPORT` names a
//! JSON file that receives every number and every failing file, `PROMPTD_COMPAT_VERBOSE=1` prints
//! the failing files, and `PROMPTD_COMPAT_DISCOVER=1` runs without `--prompts` from the
//! repository each folder lives in (zero-config discovery).
//! `scripts/compat-prompts DIR...` is the short way to run it; `scripts/compat-corpus` runs it on
//! the pinned public collections of `scripts/compat-corpus.txt`.
//!
//! For every file the harness computes, independently of promptd's code, what the file's own
//! tool would send to the model for one invocation (an *oracle*: see [`Call`] and [`expected`];
//! each rule cites the tool's source or documentation it follows), and compares promptd's
//! render with it byte for byte. Per folder it prints: prompt files found and how many are listed
//! exactly once; placeholders the tool would fill and how many are exposed as arguments; renders
//! that succeed; renders equal to the oracle's text (lossless), equal but for leading or trailing
//! whitespace, or different; files the oracle cannot model (a Handlebars block, a Jinja
//! statement); files whose listed description is the file's own and whose `argument-hint` is the
//! string as written; files whose frontmatter is not strict YAML (and how many of those are
//! listed); `check` errors and warnings; list time and peak RSS. The test fails only when the
//! binary crashes (a signal or a timeout), never on a bad number: the numbers are the output.
//!
//! Which tool a file belongs to follows where it lives, as each tool finds its files: under
//! `.claude/commands` Claude Code, `.codex/prompts` Codex, `.gemini/commands` (`*.toml`) Gemini
//! CLI, `.cursor/commands` Cursor, `.opencode/command(s)` OpenCode; elsewhere `*.prompt.md` is a
//! VS Code prompt file, `*.prompt` a Dotprompt file and `*.prompty` a Prompty file.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::support::process::{self, promptd, promptd_at, run_bounded};

/// Time one promptd command may take before it counts as a hang.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// The tool a prompt file was written for, from where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tool {
    VsCode,
    Claude,
    Codex,
    Gemini,
    Cursor,
    OpenCode,
    Dotprompt,
    Prompty,
    Promptd,
}

impl Tool {
    fn of(path: &Path) -> Tool {
        let p = path.to_string_lossy().replace('\\', "/");
        let under =
            |dir: &str| p.contains(&format!("/{dir}/")) || p.starts_with(&format!("{dir}/"));
        if under(".claude/commands") {
            Tool::Claude
        } else if under(".codex/prompts") {
            Tool::Codex
        } else if under(".gemini/commands") && p.ends_with(".toml") {
            Tool::Gemini
        } else if under(".cursor/commands") {
            Tool::Cursor
        } else if under(".opencode/command") || under(".opencode/commands") {
            Tool::OpenCode
        } else if p.ends_with(".prompt.md") {
            Tool::VsCode
        } else if p.ends_with(".prompty") {
            Tool::Prompty
        } else if p.ends_with(".prompt") {
            Tool::Dotprompt
        } else {
            Tool::Promptd
        }
    }

    fn label(self) -> &'static str {
        match self {
            Tool::VsCode => "vscode",
            Tool::Claude => "claude",
            Tool::Codex => "codex",
            Tool::Gemini => "gemini",
            Tool::Cursor => "cursor",
            Tool::OpenCode => "opencode",
            Tool::Dotprompt => "dotprompt",
            Tool::Prompty => "prompty",
            Tool::Promptd => "promptd",
        }
    }
}

/// A file is a prompt file of some tool: Markdown anywhere (in a VS Code prompt folder only
/// `*.prompt.md`), TOML in a Gemini folder, `*.prompt` but not a `_partial.prompt` (Dotprompt
/// loads those as partials), `*.prompty`.
fn is_prompt_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with('.') {
        return false;
    }
    let p = path.to_string_lossy().replace('\\', "/");
    match path.extension().and_then(|e| e.to_str()) {
        // VS Code reads only `*.prompt.md` from its prompt folder (code.visualstudio.com/docs/
        // copilot/customization/prompt-files: "Prompt files are Markdown files with the
        // .prompt.md extension").
        Some("md") => {
            // Gemini CLI reads only `*.toml` from its command folder (FileCommandLoader's
            // `**/*.toml` glob): a README beside the commands is no command.
            (!p.contains(".github/prompts/") || name.ends_with(".prompt.md"))
                && !p.contains(".gemini/commands/")
        }
        Some("toml") => Tool::of(path) == Tool::Gemini,
        Some("prompt") => !name.starts_with('_'),
        Some("prompty") => true,
        _ => false,
    }
}

/// Every prompt file under `dir`, as paths relative to it (`/`-separated), sorted.
fn prompt_files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(root, &path, out);
            } else if (kind.is_file() || (kind.is_symlink() && path.is_file()))
                && is_prompt_file(&path)
            {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The leading `---` frontmatter block of a file (without its fences), and the rest.
fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']).trim_end() == "---" {
            return (Some(&rest[..offset]), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, text)
}

/// The text a tool sends for a file: a TOML command's `prompt` string, else the file without its
/// leading `---` frontmatter block (and without a byte-order mark).
fn body_of(tool: Tool, text: &str) -> Option<String> {
    if tool == Tool::Gemini {
        let table: toml::Table = text.parse().ok()?;
        return table.get("prompt")?.as_str().map(str::to_string);
    }
    Some(split_frontmatter(text).1.to_string())
}

/// A frontmatter parsed as strict YAML (a mapping), or `None` when YAML refuses it.
fn strict_yaml(frontmatter: &str) -> Option<saphyr::Yaml<'_>> {
    let docs = <saphyr::Yaml as saphyr::LoadableYamlNode>::load_from_str(frontmatter).ok()?;
    match docs.into_iter().next() {
        None => Some(saphyr::Yaml::Mapping(Default::default())),
        Some(doc) if doc.as_mapping().is_some() || doc.is_null() => Some(doc),
        Some(_) => None,
    }
}

/// Whether a file has a frontmatter that is not strict YAML (`argument-hint: [a] [b]`,
/// `description: Fix: the thing`), which the tools themselves read line by line.
fn loose_frontmatter(tool: Tool, text: &str) -> bool {
    if tool == Tool::Gemini {
        return false;
    }
    split_frontmatter(text)
        .0
        .is_some_and(|fm| strict_yaml(fm).is_none())
}

/// The value of `key:` as written on its frontmatter line: trimmed, quotes around the whole
/// value removed, `None` for a block scalar or nothing.
fn raw_value(frontmatter: &str, key: &str) -> Option<String> {
    for line in frontmatter.lines() {
        let Some(v) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        let v = v.trim();
        if v.is_empty() || v.starts_with('|') || v.starts_with('>') {
            return None;
        }
        for q in ['"', '\''] {
            if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
                return Some(v[1..v.len() - 1].to_string());
            }
        }
        return Some(v.to_string());
    }
    None
}

/// The file's own description: a TOML command's `description`, the YAML value when the
/// frontmatter is strict YAML, else the text written after `description:`.
fn own_description(tool: Tool, text: &str) -> Option<String> {
    if tool == Tool::Gemini {
        let table: toml::Table = text.parse().ok()?;
        return table
            .get("description")?
            .as_str()
            .map(|s| s.trim().to_string());
    }
    let fm = split_frontmatter(text).0?;
    if let Some(doc) = strict_yaml(fm) {
        return doc
            .as_mapping_get("description")
            .and_then(|d| d.as_str())
            .map(|s| s.trim().to_string());
    }
    raw_value(fm, "description")
}

/// The file's `argument-hint` exactly as written (`[pr-number] [priority]`), quotes removed.
fn own_argument_hint(tool: Tool, text: &str) -> Option<String> {
    if tool == Tool::Gemini {
        return None;
    }
    raw_value(split_frontmatter(text).0?, "argument-hint")
}

/// The frontmatter `name:` value of a Markdown file, if any (quotes removed).
fn frontmatter_name(text: &str) -> Option<String> {
    raw_value(split_frontmatter(text).0?, "name").filter(|n| !n.is_empty())
}

/// Words of an argument string split as a shell does (quotes group and are removed).
fn shell_split(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            None => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// The marker a render receives for argument `name`.
fn marker(name: &str) -> String {
    format!("\u{27e6}{name}\u{27e7}")
}

/// What a user types after a command: two words, so positions past the second stay unfilled
/// and tools that append the typed text when the body has no placeholder do so.
fn typed_words() -> String {
    format!("{} {}", marker("first"), marker("second"))
}

/// One invocation of a file in its own tool: what the user types, and the values the tool fills
/// by name. promptd receives the same: the whole typed text in its argument standing for it
/// (`arguments`, `args`), a named value in the argument of that name.
#[derive(Debug, Clone, Default, PartialEq)]
struct Call {
    /// The text typed after the command (`/name <text>`).
    text: String,
    /// Values filled by name (Codex `NAME=value`, VS Code inputs, template variables, Claude
    /// named arguments: the word at their position).
    named: BTreeMap<String, String>,
    /// The command as typed, for a tool that appends it (Gemini CLI).
    command: String,
}

/// What the file's own tool sends, or why the harness cannot say.
#[derive(Debug, Clone, PartialEq)]
enum Oracle {
    Text(String),
    /// The file uses template logic the oracle does not model (a Handlebars block or helper,
    /// a Jinja statement or filter): its render is not compared.
    Unmodelled(String),
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Digits at the start of `s`.
fn leading_digits(s: &str) -> &str {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    &s[..n]
}

/// Claude Code's named arguments: frontmatter `arguments:` as a list (of names, or of mappings
/// with a `name`) or a space-separated string; their order gives their positions.
fn claude_argument_names(text: &str) -> Vec<String> {
    let Some(fm) = split_frontmatter(text).0 else {
        return Vec::new();
    };
    if let Some(doc) = strict_yaml(fm) {
        return match doc.as_mapping_get("arguments") {
            Some(a) if a.as_str().is_some() => a
                .as_str()
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            Some(a) => a
                .as_sequence()
                .map(|s| {
                    s.iter()
                        .filter_map(|x| {
                            x.as_str()
                                .or_else(|| x.as_mapping_get("name").and_then(|n| n.as_str()))
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            None => Vec::new(),
        };
    }
    raw_value(fm, "arguments")
        .map(|v| {
            v.trim_start_matches('[')
                .trim_end_matches(']')
                .split([',', ' '])
                .map(|s| s.trim().trim_matches(['"', '\'']).to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Claude Code 2.1.2xx, `utils/argumentSubstitution.ts` as documented at
/// code.claude.com/docs/en/skills ("Pass arguments to skills"):
/// - `$ARGUMENTS` is the whole argument string as typed;
/// - `$ARGUMENTS[N]` and `$N` (`\$(\d+)(?!\w)`) are the N-th word, 0-based, of the arguments
///   split like a shell; an index with no word is kept as written (`$5,000`, `$10M` and `$87.40`
///   stay when fewer words are given);
/// - `$name` for a name of frontmatter `arguments:` is the word at that name's position;
/// - `\$` before any of these (and not itself after a backslash) is a literal `$`: the backslash
///   goes, the placeholder stays as written;
/// - a name with no word is empty (it still counts as substituted);
/// - when nothing was substituted and the argument text is not empty, `\nARGUMENTS: <text>` is
///   appended.
fn claude_expand(body: &str, names: &[String], text: &str) -> String {
    /// What a `$` starts: its length after the `$` and the text it becomes (`None`: kept).
    enum Hit<'a> {
        Value(usize, &'a str),
        Missing,
    }
    let words = shell_split(text);
    // Longest name first, so `$file_path` is not read as `$file` followed by text.
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(names[k].len()));
    let word = |n: &str| n.parse::<usize>().ok().and_then(|n| words.get(n));
    let mut out = String::with_capacity(body.len());
    let mut substituted = 0;
    let mut i = 0;
    let b = body.as_bytes();
    while let Some(off) = body[i..].find('$') {
        let j = i + off;
        let rest = &body[j + 1..];
        let escaped = j > 0 && b[j - 1] == b'\\' && !(j > 1 && b[j - 2] == b'\\');
        let named = order.iter().find_map(|&k| {
            let n = &names[k];
            let ends = !rest
                .as_bytes()
                .get(n.len())
                .is_some_and(|c| is_word_byte(*c) || *c == b'[');
            (!n.is_empty() && rest.starts_with(n.as_str()) && ends)
                .then(|| Hit::Value(n.len(), words.get(k).map_or("", String::as_str)))
        });
        let indexed = || {
            let r = rest.strip_prefix("ARGUMENTS[")?;
            let d = leading_digits(r);
            (!d.is_empty() && r[d.len()..].starts_with(']')).then(|| match word(d) {
                Some(w) => Hit::Value(10 + d.len() + 1, w.as_str()),
                None => Hit::Missing,
            })
        };
        let shorthand = || {
            let d = leading_digits(rest);
            let ends = !rest
                .as_bytes()
                .get(d.len())
                .is_some_and(|c| is_word_byte(*c));
            (!d.is_empty() && ends).then(|| match word(d) {
                Some(w) => Hit::Value(d.len(), w.as_str()),
                None => Hit::Missing,
            })
        };
        let whole = || {
            rest.starts_with("ARGUMENTS")
                .then_some(Hit::Value("ARGUMENTS".len(), text))
        };
        let hit = named.or_else(indexed).or_else(shorthand).or_else(whole);
        match hit {
            Some(_) if escaped => {
                out.push_str(&body[i..j - 1]);
                out.push('$');
                i = j + 1;
            }
            Some(Hit::Value(len, v)) => {
                out.push_str(&body[i..j]);
                out.push_str(v);
                substituted += 1;
                i = j + 1 + len;
            }
            Some(Hit::Missing) | None => {
                out.push_str(&body[i..=j]);
                i = j + 1;
            }
        }
    }
    out.push_str(&body[i..]);
    if substituted == 0 && !text.is_empty() {
        out.push_str("\nARGUMENTS: ");
        out.push_str(text);
    }
    out
}

/// Codex CLI, `codex-rs/tui/src/bottom_pane/prompt_args.rs` (openai/codex at 09e67f209eb3):
/// - a prompt with a named placeholder `$[A-Z][A-Z0-9_]*` other than `$ARGUMENTS` and not
///   preceded by `$` (`prompt_argument_names`) takes `KEY=value` inputs and only those are filled
///   (`expand_named_placeholders_with_elements`); `$1` and `$ARGUMENTS` stay as written;
/// - otherwise (`expand_numeric_placeholders`) `$1`..`$9` are the 1-based words (shlex), empty
///   when missing; `$ARGUMENTS` is the words joined with one space; `$$` stays `$$`;
/// - nothing is appended.
fn codex_named(body: &str) -> Vec<String> {
    static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$[A-Z][A-Z0-9_]*").unwrap());
    let mut out = Vec::new();
    for m in NAME.find_iter(body) {
        if m.start() > 0 && body.as_bytes()[m.start() - 1] == b'$' {
            continue;
        }
        let name = &body[m.start() + 1..m.end()];
        if name != "ARGUMENTS" && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

fn codex_expand(body: &str, call: &Call) -> String {
    static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$[A-Z][A-Z0-9_]*").unwrap());
    if !codex_named(body).is_empty() {
        let mut out = String::new();
        let mut cursor = 0;
        for m in NAME.find_iter(body) {
            if m.start() > 0 && body.as_bytes()[m.start() - 1] == b'$' {
                out.push_str(&body[cursor..m.end()]);
                cursor = m.end();
                continue;
            }
            out.push_str(&body[cursor..m.start()]);
            cursor = m.end();
            match call.named.get(&body[m.start() + 1..m.end()]) {
                Some(v) => out.push_str(v),
                None => out.push_str(m.as_str()),
            }
        }
        out.push_str(&body[cursor..]);
        return out;
    }
    let words = shell_split(&call.text);
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    while let Some(off) = body[i..].find('$') {
        let j = i + off;
        out.push_str(&body[i..j]);
        let rest = &body.as_bytes()[j..];
        match rest.get(1) {
            Some(b'$') => {
                out.push_str("$$");
                i = j + 2;
                continue;
            }
            Some(d @ b'1'..=b'9') => {
                if let Some(w) = words.get(usize::from(d - b'1')) {
                    out.push_str(w);
                }
                i = j + 2;
                continue;
            }
            _ => {}
        }
        if body[j + 1..].starts_with("ARGUMENTS") {
            out.push_str(&words.join(" "));
            i = j + 1 + "ARGUMENTS".len();
            continue;
        }
        out.push('$');
        i = j + 1;
    }
    out.push_str(&body[i..]);
    out
}

/// Gemini CLI (google-gemini/gemini-cli 0.56.0-nightly, 5411f113cafa):
/// `packages/cli/src/services/FileCommandLoader.ts` substitutes `{{args}}`
/// (`SHORTHAND_ARGS_PLACEHOLDER`, prompt-processors/types.ts) with the arguments as typed
/// (`ShellProcessor`: raw outside `!{...}`, shell-escaped inside); a prompt without `{{args}}`
/// gets `DefaultArgumentProcessor` (prompt-processors/argumentProcessor.ts), which appends the
/// whole typed command (`invocation.raw`, `/name args`) after `\n\n` (`appendToLastTextPart`,
/// packages/core/src/utils/partUtils.ts) when arguments were given.
fn gemini_expand(body: &str, call: &Call) -> String {
    const ARGS: &str = "{{args}}";
    if !body.contains(ARGS) {
        if call.text.is_empty() {
            return body.to_string();
        }
        return format!("{body}\n\n{}", call.command);
    }
    // Inside `!{...}` the value is shell-escaped (single quotes, as `escapeShellArg` does for
    // bash).
    let escaped = format!("'{}'", call.text.replace('\'', r"'\''"));
    let mut out = String::new();
    let mut i = 0;
    while i < body.len() {
        if body[i..].starts_with("!{") {
            // The injection runs to its matching brace.
            let mut depth = 0usize;
            let mut end = body.len();
            for (k, c) in body[i + 1..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i + 1 + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push_str(&body[i..end].replace(ARGS, &escaped));
            i = end;
            continue;
        }
        if body[i..].starts_with(ARGS) {
            out.push_str(&call.text);
            i += ARGS.len();
            continue;
        }
        let c = body[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// OpenCode (anomalyco/opencode, formerly sst/opencode, `packages/opencode/src/session/prompt.ts`
/// `command()`; the template is the Markdown body trimmed, `config.ts` `loadCommand`:
/// `template: md.content.trim()`):
/// - `$N` (`/\$(\d+)/g`) is the N-th word, 1-based (words: quoted strings or runs of non-space,
///   quotes trimmed); empty when there is no such word; the highest-numbered placeholder takes
///   that word and every later one, joined with spaces;
/// - `$ARGUMENTS` is the arguments as typed;
/// - a template with neither gets `\n\n<arguments>` appended when arguments were given.
fn opencode_expand(body: &str, text: &str) -> String {
    static POS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$(\d+)").unwrap());
    let template = body.trim();
    let args = shell_split(text);
    let last = POS
        .captures_iter(template)
        .filter_map(|c| c[1].parse::<usize>().ok())
        .max();
    let with_args = POS.replace_all(template, |c: &regex::Captures| {
        let position: usize = c[1].parse().unwrap_or(usize::MAX);
        let Some(idx) = position.checked_sub(1) else {
            // `$0`: `args[-1]` is undefined in JavaScript, and replaceAll writes "undefined"
            // (unless `$0` is the only placeholder, where the slice from -1 is the last word).
            return if last == Some(0) {
                args.last().cloned().unwrap_or_default()
            } else {
                "undefined".to_string()
            };
        };
        if idx >= args.len() {
            String::new()
        } else if Some(position) == last {
            args[idx..].join(" ")
        } else {
            args[idx].clone()
        }
    });
    let uses_arguments = template.contains("$ARGUMENTS");
    let mut out = with_args.replace("$ARGUMENTS", text);
    if last.is_none() && !uses_arguments && !text.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(text);
    }
    out
}

/// `${input:name}`, `${input:name:placeholder}`, and `${input:name|choice}` (seen in the wild:
/// the name ends at `|`).
static INPUT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{input:([^}:|\n]+)(?:[:|][^}\n]*)?\}").unwrap());
static EDITOR_VAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\$\{(selection|selectedText|file|fileBasename|fileDirname|fileBasenameNoExtension|workspaceFolder|workspaceFolderBasename)\}",
    )
    .unwrap()
});

/// VS Code prompt files (code.visualstudio.com/docs/copilot/customization/prompt-files,
/// "Variables"): `${input:name}` and `${input:name:placeholder}` take the value the user gives
/// for `name`; `${file}`, `${selection}` and the other editor variables take the editor's
/// values; the typed text goes with the prompt, not into it (nothing is appended).
fn vscode_expand(body: &str, call: &Call) -> String {
    let value = |name: &str| call.named.get(name).cloned().unwrap_or_default();
    let out = INPUT.replace_all(body, |c: &regex::Captures| value(&c[1]));
    EDITOR_VAR
        .replace_all(&out, |c: &regex::Captures| value(&c[1]))
        .into_owned()
}

/// `{{ name }}` (or `{{{name}}}`) with a plain or dotted name, and anything else in braces.
static MUSTACHE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\{?-?\s*([^{}]*?)\s*-?\}?\}\}").unwrap());
/// A Jinja2 expression: no triple braces (`{{x}}}` is `{{x}}` and a `}`).
static JINJA_EXPR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{-?\s*([^{}]*?)\s*-?\}\}").unwrap());
static PLAIN_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").unwrap());

/// The variables a Dotprompt or Prompty file declares: the keys of Dotprompt's
/// `input.schema` (Picoschema: `name?: type, description` is `name`) or of Prompty's `inputs`
/// (a mapping, or a list of `name:` entries) and older `sample`.
fn declared_variables(tool: Tool, text: &str) -> Vec<String> {
    let Some(doc) = split_frontmatter(text).0.and_then(strict_yaml) else {
        return Vec::new();
    };
    let keys = |y: Option<&saphyr::Yaml>| -> Vec<String> {
        let Some(y) = y else { return Vec::new() };
        if let Some(m) = y.as_mapping() {
            return m
                .keys()
                .filter_map(|k| k.as_str())
                .map(|k| k.split(['?', '(']).next().unwrap_or(k).trim().to_string())
                .collect();
        }
        y.as_sequence()
            .map(|s| {
                s.iter()
                    .filter_map(|x| x.as_mapping_get("name").and_then(|n| n.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    match tool {
        Tool::Dotprompt => {
            let schema = doc
                .as_mapping_get("input")
                .and_then(|i| i.as_mapping_get("schema"));
            // Picoschema names the fields at the top; a JSON Schema (`type: object`) under
            // `properties`.
            match schema.and_then(|s| s.as_mapping_get("properties")) {
                Some(p) if schema.and_then(|s| s.as_mapping_get("type")).is_some() => keys(Some(p)),
                _ => keys(schema),
            }
        }
        Tool::Prompty => {
            let mut v = keys(doc.as_mapping_get("inputs"));
            for k in keys(doc.as_mapping_get("sample")) {
                if !v.contains(&k) {
                    v.push(k);
                }
            }
            v
        }
        _ => Vec::new(),
    }
}

/// Dotprompt (google/dotprompt, Handlebars with `noEscape`) and Prompty (microsoft/prompty,
/// Jinja2): `{{ name }}` is the value of `name`, an undeclared or missing name renders empty
/// (both engines' default). Blocks, partials, helpers, filters and statements are not modelled.
fn template_expand(tool: Tool, body: &str, call: &Call) -> Oracle {
    let logic = match tool {
        Tool::Dotprompt => ["{{#", "{{/", "{{>", "{{else", "{{^"]
            .iter()
            .find(|s| body.contains(**s))
            .map(|s| format!("Handlebars `{s}`")),
        _ => ["{%", "{#"]
            .iter()
            .find(|s| body.contains(**s))
            .map(|s| format!("Jinja `{s}`")),
    };
    if let Some(why) = logic {
        return Oracle::Unmodelled(why);
    }
    let expr: &Regex = match tool {
        Tool::Dotprompt => &MUSTACHE,
        _ => &JINJA_EXPR,
    };
    for c in expr.captures_iter(body) {
        if !PLAIN_NAME.is_match(&c[1]) {
            return Oracle::Unmodelled(format!("expression `{}`", &c[0]));
        }
    }
    let out = expr.replace_all(body, |c: &regex::Captures| {
        call.named.get(&c[1]).cloned().unwrap_or_default()
    });
    Oracle::Text(out.into_owned())
}

/// The command name a tool gives the file at `rel`: its path without the extension, folders
/// joined with `:` (Claude Code and Gemini CLI namespacing).
fn command_name(rel: &str) -> String {
    let stem = [".prompt.md", ".md", ".toml", ".prompty", ".prompt"]
        .iter()
        .find_map(|e| rel.strip_suffix(e))
        .unwrap_or(rel);
    stem.replace('/', ":")
}

/// The invocation the harness makes of the file at `rel` in its own tool.
fn call_for(tool: Tool, rel: &str, text: &str, body: &str) -> Call {
    let mut call = Call {
        command: format!("/{}", command_name(rel)),
        ..Default::default()
    };
    match tool {
        Tool::Claude | Tool::OpenCode | Tool::Gemini => call.text = typed_words(),
        Tool::Codex => {
            let named = codex_named(body);
            if named.is_empty() {
                call.text = typed_words();
            } else {
                for n in named {
                    call.named.insert(n.clone(), marker(&n));
                }
                call.text = call
                    .named
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
        Tool::VsCode => {
            for c in INPUT
                .captures_iter(body)
                .chain(EDITOR_VAR.captures_iter(body))
            {
                call.named.insert(c[1].to_string(), marker(&c[1]));
            }
        }
        // A caller passes what the file declares; a file that declares nothing takes whatever
        // it is given (Dotprompt's input and Prompty's inputs go to the template as they are),
        // so the caller passes the names its template reads.
        Tool::Dotprompt | Tool::Prompty => {
            let mut names = declared_variables(tool, text);
            if names.is_empty() {
                let expr: &Regex = if tool == Tool::Dotprompt {
                    &MUSTACHE
                } else {
                    &JINJA_EXPR
                };
                for c in expr.captures_iter(body) {
                    if PLAIN_NAME.is_match(&c[1]) && !names.iter().any(|n| n == &c[1]) {
                        names.push(c[1].to_string());
                    }
                }
            }
            for n in names {
                call.named.insert(n.clone(), marker(&n));
            }
        }
        // promptd's own files declare their arguments (`arguments:` with a `name` each).
        Tool::Promptd => {
            for n in claude_argument_names(text) {
                call.named.insert(n.clone(), marker(&n));
            }
        }
        Tool::Cursor => {}
    }
    if tool == Tool::Claude {
        let words = shell_split(&call.text);
        for (i, n) in claude_argument_names(text).into_iter().enumerate() {
            if let Some(w) = words.get(i) {
                call.named.insert(n, w.clone());
            }
        }
    }
    if !call.text.is_empty() {
        call.command = format!("{} {}", call.command, call.text);
    }
    call
}

/// What the file's own tool sends for `call`.
fn expected(tool: Tool, text: &str, body: &str, call: &Call) -> Oracle {
    match tool {
        Tool::Claude => Oracle::Text(claude_expected(text, body, &call.text)),
        Tool::Codex => Oracle::Text(codex_expand(body, call)),
        Tool::Gemini => Oracle::Text(gemini_expand(body, call)),
        Tool::OpenCode => Oracle::Text(opencode_expand(body, &call.text)),
        Tool::VsCode => Oracle::Text(vscode_expand(body, call)),
        // promptd's own files: `{{ name }}` of a declared argument, as Jinja renders it.
        // Dotprompt trims its template (dotprompt 1.1.2 `parseDocument`); Prompty's starts at
        // the first non-blank character after the header (prompty 2.1.0 `_yaml_regex`).
        Tool::Dotprompt => template_expand(tool, body.trim(), call),
        Tool::Prompty => template_expand(tool, body.trim_start(), call),
        Tool::Promptd => template_expand(tool, body, call),
        // Cursor sends the command file as written (cursor.com/docs/agent/chat/commands: "plain
        // Markdown files").
        Tool::Cursor => Oracle::Text(body.to_string()),
    }
}

fn claude_expected(text: &str, body: &str, typed: &str) -> String {
    let names = claude_argument_names(text);
    claude_expand(body, &names, typed)
}

/// What a placeholder asks of the listing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Wanted {
    /// The whole typed text (`$ARGUMENTS`, `{{args}}`, or text the tool appends): an argument
    /// `arguments` or `args`.
    Text,
    /// An argument of this name (compared ignoring case).
    Named(String),
    /// A word of the typed text (`$1`, `$ARGUMENTS[0]`, a Claude named argument): the argument
    /// carrying the typed text, or one carrying the position or name (`1`, `arg1`, `name`).
    Word(String),
}

impl Wanted {
    fn met_by(&self, args: &[String]) -> bool {
        let text =
            |a: &String| a.eq_ignore_ascii_case("arguments") || a.eq_ignore_ascii_case("args");
        match self {
            Wanted::Text => args.iter().any(text),
            Wanted::Named(n) => args.iter().any(|a| a.eq_ignore_ascii_case(n)),
            Wanted::Word(w) => args.iter().any(|a| {
                text(a)
                    || a.eq_ignore_ascii_case(w)
                    || a.trim_start_matches(|c: char| !c.is_ascii_digit()) == w.as_str()
            }),
        }
    }
}

static CLAUDE_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$ARGUMENTS\[(\d+)\]|\$(\d+)").unwrap());
static OPENCODE_WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$(\d+)").unwrap());
static CODEX_WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$([1-9])").unwrap());

/// The placeholders the file's own tool fills in `body` for `call`, once each (see
/// [`expected`] for the rules).
fn placeholders(tool: Tool, text: &str, body: &str, call: &Call) -> BTreeSet<Wanted> {
    let mut out = BTreeSet::new();
    let changed = |call: &Call| match expected(tool, text, body, call) {
        Oracle::Text(t) => t != body,
        Oracle::Unmodelled(_) => false,
    };
    match tool {
        Tool::VsCode | Tool::Dotprompt | Tool::Prompty => {
            for n in call.named.keys() {
                out.insert(Wanted::Named(n.clone()));
            }
        }
        Tool::Codex if !codex_named(body).is_empty() => {
            for n in codex_named(body) {
                out.insert(Wanted::Named(n));
            }
        }
        Tool::Claude | Tool::Codex | Tool::OpenCode => {
            if body.contains("$ARGUMENTS") {
                out.insert(Wanted::Text);
            }
            let re: &Regex = match tool {
                Tool::Claude => &CLAUDE_WORD,
                Tool::Codex => &CODEX_WORD,
                _ => &OPENCODE_WORD,
            };
            for c in re.captures_iter(body) {
                let n = c.get(1).or_else(|| c.get(2)).unwrap().as_str();
                out.insert(Wanted::Word(n.to_string()));
            }
            if tool == Tool::Claude {
                for n in claude_argument_names(text) {
                    if body.contains(&format!("${n}")) {
                        out.insert(Wanted::Word(n));
                    }
                }
            }
            // Text the tool appends when the body takes none.
            if out.is_empty() && tool != Tool::Codex && changed(call) {
                out.insert(Wanted::Text);
            }
        }
        Tool::Gemini => {
            if body.contains("{{args}}") || changed(call) {
                out.insert(Wanted::Text);
            }
        }
        Tool::Cursor | Tool::Promptd => {}
    }
    out
}

/// How a render compares with the text the file's own tool sends.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fidelity {
    /// Byte for byte.
    Lossless,
    /// Equal except for leading or trailing whitespace (a trimmed blank line or final newline).
    WhitespaceOnly,
    /// Text was dropped, rewritten or added; `at` is the byte offset in the expected text where
    /// the two first part ways.
    Lost { at: usize },
}

fn compare(expected: &str, rendered: &str) -> Fidelity {
    if expected == rendered {
        return Fidelity::Lossless;
    }
    if expected.trim() == rendered.trim() {
        return Fidelity::WhitespaceOnly;
    }
    let at = expected
        .bytes()
        .zip(rendered.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    Fidelity::Lost {
        at: expected.floor_char_boundary(at),
    }
}

/// Characters of `expected` missing from `rendered`, by a bounded character diff.
fn chars_lost(expected: &str, rendered: &str) -> usize {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(Duration::from_secs(2))
        .diff_chars(expected, rendered);
    diff.iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Delete)
        .map(|c| c.value().chars().count())
        .sum()
}

/// Names a prompt could carry for the file at `rel`: its path with `/` or `:` between folders,
/// with and without the extension (and `.prompt`), then its frontmatter name.
fn name_candidates(rel: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stems = vec![rel.to_string()];
    for ext in [".prompt.md", ".md", ".toml", ".prompty", ".prompt"] {
        if let Some(s) = rel.strip_suffix(ext) {
            stems.push(s.to_string());
        }
    }
    for s in stems {
        out.push(s.replace('/', ":"));
        out.push(s.clone());
    }
    if let Some(n) = frontmatter_name(text) {
        out.push(n);
    }
    out
}

/// The first value under `key` anywhere in `v` (depth first).
fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m
            .get(key)
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

/// The `argument-hint` promptd lists for a prompt: `toolMetadata["argument-hint"]`, else any
/// `argument-hint` key of the listing.
fn listed_argument_hint(p: &Value) -> Option<&Value> {
    find_key(p, "toolMetadata")
        .and_then(|t| t.get("argument-hint"))
        .or_else(|| find_key(p, "argument-hint"))
}

/// One promptd command's result, or the reason it counts as a crash.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    peak_rss_mib: f64,
}

/// Runs promptd with `args` in `cwd`; a signal or a timeout is a crash (recorded, not returned).
fn run(bin: Option<&Path>, cwd: &Path, args: &[String], crashes: &mut Vec<String>) -> Option<Run> {
    let mut cmd: Command = match bin {
        Some(b) => promptd_at(b),
        None => promptd(),
    };
    cmd.current_dir(cwd).args(args);
    let out = run_bounded(cmd, b"", COMMAND_TIMEOUT);
    if !out.exited() {
        crashes.push(format!(
            "promptd {} (timed out: {}, status {:?}): {}",
            args.join(" "),
            out.timed_out,
            out.status,
            out.stderr.lines().last().unwrap_or("")
        ));
        return None;
    }
    Some(Run {
        code: out.code(),
        stdout: out.stdout,
        stderr: out.stderr,
        elapsed: out.elapsed,
        peak_rss_mib: out.peak_rss_mib,
    })
}

/// The prompts of a `list --json` envelope.
fn listed(run: &Run) -> Vec<Value> {
    serde_json::from_str::<Value>(&run.stdout)
        .ok()
        .and_then(|v| v["data"]["prompts"].as_array().cloned())
        .unwrap_or_default()
}

/// `(errors, warnings)` from `check`'s summary line.
fn check_counts(run: &Run) -> (usize, usize) {
    static SUMMARY: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\d+) error\(s\), (\d+) warning\(s\)").unwrap());
    SUMMARY
        .captures(&run.stdout)
        .map(|c| (c[1].parse().unwrap_or(0), c[2].parse().unwrap_or(0)))
        .unwrap_or((0, 0))
}

/// A relative source path the listing gives for a prompt, under any key naming a file or
/// source (at the prompt's top level or one object down).
fn listed_source(prompt: &Value, files: &BTreeSet<String>) -> Option<String> {
    let mut found = None;
    let mut visit = |obj: &Map<String, Value>| {
        for (k, v) in obj {
            let key = k.to_ascii_lowercase();
            let Some(s) = v.as_str() else { continue };
            if !(key.contains("source") || key.contains("file") || key.contains("path")) {
                continue;
            }
            let s = s.replace('\\', "/");
            let s = s.trim_start_matches("./");
            // The file itself, else the longest file path the value ends with.
            let f = files.get(s).or_else(|| {
                files
                    .iter()
                    .filter(|f| s.ends_with(&format!("/{f}")))
                    .max_by_key(|f| f.len())
            });
            if let Some(f) = f {
                found = Some(f.clone());
            }
        }
    };
    if let Some(obj) = prompt.as_object() {
        visit(obj);
        for v in obj.values() {
            if let Some(inner) = v.as_object() {
                visit(inner);
            }
        }
    }
    found
}

/// min / median / max of `values`, or `-` when there are none.
fn spread(values: &mut [usize]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.sort_unstable();
    format!(
        "{}/{}/{}",
        values[0],
        values[values.len() / 2],
        values[values.len() - 1]
    )
}

/// Everything measured for one folder.
#[derive(Debug, Default)]
struct Report {
    label: String,
    /// The tool most of the folder's files belong to.
    tool: String,
    files: usize,
    listed: usize,
    listed_once: usize,
    unlisted: Vec<String>,
    /// Files more than one prompt maps to.
    listed_twice: Vec<String>,
    /// Prompts of the folder no file maps to.
    unmapped: Vec<String>,
    placeholders: usize,
    exposed: usize,
    missing: Vec<String>,
    /// Arguments that stand for no placeholder of the file's tool.
    extra: Vec<String>,
    rendered: usize,
    render_failed: Vec<String>,
    /// Renders equal to the oracle's text.
    lossless: usize,
    whitespace_only: Vec<String>,
    lost: Vec<String>,
    /// Files whose tool behaviour the oracle does not model (not compared).
    unmodelled: Vec<String>,
    render_warnings: usize,
    /// Files with a description of their own, and those promptd lists with exactly it.
    with_description: usize,
    own_description: usize,
    description_differs: Vec<String>,
    /// Files with an `argument-hint`, and those listed with it as written.
    with_hint: usize,
    own_hint: usize,
    hint_differs: Vec<String>,
    /// Files whose frontmatter is not strict YAML, and those of them promptd lists.
    loose_yaml: usize,
    loose_listed: usize,
    loose_unlisted: Vec<String>,
    check_errors: usize,
    check_warnings: usize,
    per_file_placeholders: Vec<usize>,
    per_prompt_arguments: Vec<usize>,
    per_render_chars_lost: Vec<usize>,
    by_tool: BTreeMap<&'static str, usize>,
    /// Wall time of `list --json`, and the highest peak RSS of any command, for the folder.
    list_ms: u128,
    peak_rss_mib: f64,
}
/// A short label for a folder: its nearest ancestor that is neither hidden nor a dialect folder.
fn label_of(dir: &Path) -> String {
    // scripts/compat-corpus exports each collection under `owner+name`; a folder that is not a
    // tool's hidden one adds its last two components (two folders of one repository).
    if let Some(repo) = dir.ancestors().find(|a| {
        a.file_name().is_some_and(|n| {
            n.to_string_lossy().contains('+') && !n.to_string_lossy().starts_with('.')
        })
    }) {
        let name = repo.file_name().unwrap().to_string_lossy().into_owned();
        let below: Vec<String> = dir
            .strip_prefix(repo)
            .map(|r| {
                r.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if below.is_empty() || below.iter().any(|c| c.starts_with('.')) {
            return name;
        }
        return format!(
            "{name}/{}",
            below[below.len().saturating_sub(2)..].join("/")
        );
    }
    dir.ancestors()
        .filter_map(|a| a.file_name().map(|n| n.to_string_lossy().into_owned()))
        .find(|n| !n.starts_with('.') && !["commands", "command", "prompts"].contains(&n.as_str()))
        .unwrap_or_else(|| dir.display().to_string())
}

fn excerpt(text: &str, at: usize) -> String {
    let start = text.floor_char_boundary(at.saturating_sub(20));
    let end = text.ceil_char_boundary((at + 40).min(text.len()));
    format!("{:?}", &text[start..end])
}

/// How a folder is handed to promptd: `--prompts DIR` from an empty working directory, or
/// (discovery) no flag, from the repository the dialect folder lives in.
struct Invocation {
    cwd: PathBuf,
    prefix: Vec<String>,
    _empty: Option<tempfile::TempDir>,
}

impl Invocation {
    fn new(dir: &Path, discover: bool) -> Invocation {
        if discover {
            return Invocation {
                cwd: repository_of(dir),
                prefix: Vec::new(),
                _empty: None,
            };
        }
        let empty = tempfile::tempdir().unwrap();
        Invocation {
            cwd: empty.path().to_path_buf(),
            prefix: vec!["--prompts".into(), dir.to_string_lossy().into_owned()],
            _empty: Some(empty),
        }
    }

    fn args(&self, rest: &[&str]) -> Vec<String> {
        let mut out = self.prefix.clone();
        out.extend(rest.iter().map(|s| s.to_string()));
        out
    }
}

/// The repository a dialect folder belongs to: the parent of its outermost hidden folder
/// (`repo` for `repo/.claude/commands`), else the folder's parent.
fn repository_of(dir: &Path) -> PathBuf {
    dir.ancestors()
        .filter(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .last()
        .and_then(Path::parent)
        .or_else(|| dir.parent())
        .unwrap_or(dir)
        .to_path_buf()
}

/// Measures one folder against the built-in prompts in `builtin` (name and version hash).
fn measure(
    bin: Option<&Path>,
    discover: bool,
    dir: &Path,
    builtin: &BTreeSet<(String, String)>,
    builtin_check: (usize, usize),
    crashes: &mut Vec<String>,
) -> Report {
    let at = Invocation::new(dir, discover);
    let mut rep = Report {
        label: label_of(dir),
        ..Default::default()
    };
    let files = prompt_files(dir);
    rep.files = files.len();
    let texts: HashMap<&str, String> = files
        .iter()
        .map(|f| {
            let raw = std::fs::read(dir.join(f)).unwrap_or_default();
            (f.as_str(), String::from_utf8_lossy(&raw).into_owned())
        })
        .collect();
    let file_set: BTreeSet<String> = files.iter().cloned().collect();
    let tool_of = |f: &str| Tool::of(&dir.join(f));
    for f in &files {
        *rep.by_tool.entry(tool_of(f).label()).or_default() += 1;
    }
    rep.tool = rep
        .by_tool
        .iter()
        .max_by_key(|(_, n)| **n)
        .map_or("-".to_string(), |(t, _)| t.to_string());

    let Some(list) = run(bin, &at.cwd, &at.args(&["list", "--json"]), crashes) else {
        return rep;
    };
    let prompts: Vec<Value> = listed(&list)
        .into_iter()
        .filter(|p| {
            let key = (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["version_hash"].as_str().unwrap_or_default().to_string(),
            );
            !builtin.contains(&key)
        })
        .collect();
    rep.listed = prompts.len();
    rep.list_ms = list.elapsed.as_millis();
    rep.peak_rss_mib = list.peak_rss_mib;

    // Which file each prompt came from: the listing's own source path, else its name.
    let mut by_name: HashMap<String, Vec<&str>> = HashMap::new();
    for f in &files {
        for n in name_candidates(f, &texts[f.as_str()]) {
            let v = by_name.entry(n).or_default();
            if !v.contains(&f.as_str()) {
                v.push(f);
            }
        }
    }
    let mut file_of: Vec<Option<String>> = Vec::new();
    let mut hits: HashMap<String, usize> = HashMap::new();
    for p in &prompts {
        let name = p["name"].as_str().unwrap_or_default();
        let f = listed_source(p, &file_set).or_else(|| match by_name.get(name) {
            Some(v) if v.len() == 1 => Some(v[0].to_string()),
            _ => None,
        });
        match &f {
            Some(f) => *hits.entry(f.clone()).or_default() += 1,
            None => rep.unmapped.push(name.to_string()),
        }
        file_of.push(f);
    }
    let prompt_of = |f: &str| {
        file_of
            .iter()
            .position(|x| x.as_deref() == Some(f))
            .map(|i| &prompts[i])
    };
    for f in &files {
        match hits.get(f).copied().unwrap_or(0) {
            0 => rep.unlisted.push(f.clone()),
            1 => rep.listed_once += 1,
            _ => rep.listed_twice.push(f.clone()),
        }
    }

    let args_of = |p: &Value| -> Vec<String> {
        p["arguments"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut calls: HashMap<&str, Call> = HashMap::new();
    for f in &files {
        let tool = tool_of(f);
        let text = &texts[f.as_str()];
        let body = body_of(tool, text).unwrap_or_default();
        let call = call_for(tool, f, text, &body);
        let prompt = prompt_of(f);

        // Placeholders against the arguments of the prompt the file became.
        let wanted = placeholders(tool, text, &body, &call);
        rep.placeholders += wanted.len();
        rep.per_file_placeholders.push(wanted.len());
        let args = prompt.map(args_of).unwrap_or_default();
        for w in &wanted {
            if w.met_by(&args) {
                rep.exposed += 1;
            } else {
                rep.missing.push(format!("{f}: {w:?}"));
            }
        }
        // Arguments the file's own tool would never fill (promptd files declare theirs).
        if tool != Tool::Promptd {
            for a in &args {
                if !wanted.iter().any(|w| w.met_by(std::slice::from_ref(a))) {
                    rep.extra.push(format!("{f}: {a}"));
                }
            }
        }

        // The description and argument-hint as the file's own.
        if let Some(d) = own_description(tool, text).filter(|d| !d.is_empty()) {
            rep.with_description += 1;
            let listed = prompt
                .and_then(|p| p["description"].as_str())
                .map(str::trim);
            if listed == Some(d.as_str()) {
                rep.own_description += 1;
            } else {
                rep.description_differs
                    .push(format!("{f}: file {d:?}, listed {listed:?}"));
            }
        }
        if let Some(h) = own_argument_hint(tool, text) {
            rep.with_hint += 1;
            let listed = prompt.and_then(listed_argument_hint);
            if listed.and_then(Value::as_str) == Some(h.as_str()) {
                rep.own_hint += 1;
            } else {
                rep.hint_differs.push(format!(
                    "{f}: file {h:?}, listed {}",
                    listed.map_or("none".to_string(), Value::to_string)
                ));
            }
        }
        if loose_frontmatter(tool, text) {
            rep.loose_yaml += 1;
            if prompt.is_some() {
                rep.loose_listed += 1;
            } else {
                rep.loose_unlisted.push(f.clone());
            }
        }
        calls.insert(f.as_str(), call);
    }

    // Renders with each argument set as the file's own tool was invoked.
    for (p, f) in prompts.iter().zip(&file_of) {
        let name = p["name"].as_str().unwrap_or_default();
        let args = p["arguments"].as_array().cloned().unwrap_or_default();
        rep.per_prompt_arguments.push(args.len());
        let call = f.as_deref().and_then(|f| calls.get(f));
        let mut values = Map::new();
        for a in &args {
            let Some(an) = a["name"].as_str() else {
                continue;
            };
            let given = call.and_then(|c| {
                if an.eq_ignore_ascii_case("arguments") || an.eq_ignore_ascii_case("args") {
                    return Some(c.text.clone());
                }
                c.named
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(an))
                    .map(|(_, v)| v.clone())
            });
            let v = match (given, a["type"].as_str()) {
                (Some(v), _) => json!(v),
                (None, Some("integer" | "number")) => json!(7),
                (None, Some("boolean")) => json!(true),
                (None, _) => json!(marker(an)),
            };
            values.insert(an.to_string(), v);
        }
        let values = Value::Object(values).to_string();
        let get_args = at.args(&["get", name, "--json", "--args-json", &values]);
        let Some(get) = run(bin, &at.cwd, &get_args, crashes) else {
            continue;
        };
        rep.peak_rss_mib = rep.peak_rss_mib.max(get.peak_rss_mib);
        let env: Value = serde_json::from_str(&get.stdout).unwrap_or(Value::Null);
        rep.render_warnings += env["warnings"].as_array().map_or(0, Vec::len);
        let content = env["data"]["prompt"]["content"].as_str();
        let ok = get.code == Some(0) && env["success"] == json!(true);
        let Some(content) = content.filter(|_| ok) else {
            let why = env["errors"]
                .get(0)
                .map(|e| e.to_string())
                .unwrap_or_else(|| get.stderr.lines().last().unwrap_or("").to_string());
            rep.render_failed.push(format!("{name}: {why}"));
            continue;
        };
        rep.rendered += 1;
        let (Some(f), Some(call)) = (f, call) else {
            continue;
        };
        let tool = tool_of(f);
        let text = &texts[f.as_str()];
        let Some(body) = body_of(tool, text) else {
            continue;
        };
        let want = match expected(tool, text, &body, call) {
            Oracle::Text(t) => t,
            Oracle::Unmodelled(why) => {
                rep.unmodelled.push(format!("{f}: {why}"));
                continue;
            }
        };
        match compare(&want, content) {
            Fidelity::Lossless => rep.lossless += 1,
            Fidelity::WhitespaceOnly => rep.whitespace_only.push(f.clone()),
            Fidelity::Lost { at } => {
                let lost = chars_lost(&want, content);
                rep.per_render_chars_lost.push(lost);
                let got_at = content.floor_char_boundary(at.min(content.len()));
                rep.lost.push(format!(
                    "{f}: ~{lost} chars differ; first difference at byte {at}: tool {} promptd {}",
                    excerpt(&want, at),
                    excerpt(content, got_at)
                ));
            }
        }
    }

    if let Some(check) = run(bin, &at.cwd, &at.args(&["check"]), crashes) {
        rep.peak_rss_mib = rep.peak_rss_mib.max(check.peak_rss_mib);
        let (e, w) = check_counts(&check);
        rep.check_errors = e.saturating_sub(builtin_check.0);
        rep.check_warnings = w.saturating_sub(builtin_check.1);
    }
    rep
}

impl Report {
    fn row(&mut self) -> String {
        let frac = |a: usize, b: usize| format!("{a}/{b}");
        format!(
            "{:<44} {:<9} {:>5} {:>6} {:>5} {:>11} {:>5} {:>6} {:>6} {:>6} {:>5} {:>5} {:>5} {:>9} {:>9} {:>9} {:>5}/{:<5} {:>11} {:>11} {:>7} {:>6.0}",
            self.label,
            self.tool,
            self.files,
            self.listed,
            self.listed_once,
            frac(self.exposed, self.placeholders),
            self.extra.len(),
            self.rendered,
            self.lossless,
            self.whitespace_only.len(),
            self.lost.len(),
            self.unmodelled.len(),
            self.render_failed.len(),
            frac(self.own_description, self.with_description),
            frac(self.own_hint, self.with_hint),
            frac(self.loose_listed, self.loose_yaml),
            self.check_errors,
            self.check_warnings,
            spread(&mut self.per_file_placeholders),
            spread(&mut self.per_prompt_arguments),
            self.list_ms,
            self.peak_rss_mib,
        )
    }

    fn json(&self) -> Value {
        json!({
            "label": self.label,
            "tool": self.tool,
            "files": self.files,
            "byTool": self.by_tool,
            "listed": self.listed,
            "listedOnce": self.listed_once,
            "unlisted": self.unlisted,
            "listedTwice": self.listed_twice,
            "unmappedPrompts": self.unmapped,
            "placeholders": self.placeholders,
            "exposed": self.exposed,
            "missingArguments": self.missing,
            "extraArguments": self.extra,
            "rendered": self.rendered,
            "renderFailed": self.render_failed,
            "lossless": self.lossless,
            "whitespaceOnly": self.whitespace_only,
            "lost": self.lost,
            "unmodelled": self.unmodelled,
            "renderWarnings": self.render_warnings,
            "withDescription": self.with_description,
            "ownDescription": self.own_description,
            "descriptionDiffers": self.description_differs,
            "withArgumentHint": self.with_hint,
            "ownArgumentHint": self.own_hint,
            "argumentHintDiffers": self.hint_differs,
            "looseYaml": self.loose_yaml,
            "looseYamlListed": self.loose_listed,
            "looseYamlUnlisted": self.loose_unlisted,
            "checkErrors": self.check_errors,
            "checkWarnings": self.check_warnings,
            "perRenderCharsLost": self.per_render_chars_lost,
            "listMs": self.list_ms,
            "peakRssMib": self.peak_rss_mib,
        })
    }
}

/// The table's two header lines, in the widths of [`Report::row`].
fn header() -> String {
    let line = |c: [&str; 21]| {
        format!(
            "{:<44} {:<9} {:>5} {:>6} {:>5} {:>11} {:>5} {:>6} {:>6} {:>6} {:>5} {:>5} {:>5} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>7} {:>6}",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            c[8],
            c[9],
            c[10],
            c[11],
            c[12],
            c[13],
            c[14],
            c[15],
            c[16],
            c[17],
            c[18],
            c[19],
            c[20]
        )
    };
    format!(
        "{}\n{}",
        line([
            "folder",
            "tool",
            "files",
            "listed",
            "once",
            "args",
            "extra",
            "render",
            "lossls",
            "wsonly",
            "diff",
            "n/a",
            "rfail",
            "own desc",
            "own hint",
            "loose",
            "check E/W",
            "phold/file",
            "args/prompt",
            "list ms",
            "peakMiB",
        ]),
        line([
            "",
            "",
            "",
            "",
            "",
            "exposed/all",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "same/has",
            "same/has",
            "listed/all",
            "",
            "min/med/max",
            "min/med/max",
            "",
            "",
        ])
    )
}
/// Measures every folder in `dirs` with `bin` (this crate's binary when `None`); returns the
/// reports and the crashes.
fn measure_all(bin: Option<&Path>, discover: bool, dirs: &[PathBuf]) -> (Vec<Report>, Vec<String>) {
    let mut crashes = Vec::new();
    let empty = tempfile::tempdir().unwrap();
    let empty_arg = empty.path().to_string_lossy().into_owned();
    let list_args = ["--prompts", &empty_arg, "list", "--json"].map(String::from);
    let check_args = ["--prompts", &empty_arg, "check"].map(String::from);
    let builtin: BTreeSet<(String, String)> = run(bin, empty.path(), &list_args, &mut crashes)
        .map(|r| {
            listed(&r)
                .iter()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_string(),
                        p["version_hash"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let builtin_check = run(bin, empty.path(), &check_args, &mut crashes)
        .map(|r| check_counts(&r))
        .unwrap_or((0, 0));
    let reports = dirs
        .iter()
        .map(|d| measure(bin, discover, d, &builtin, builtin_check, &mut crashes))
        .collect();
    (reports, crashes)
}

#[test]
#[ignore = "needs prompt collections on disk: PROMPTD_COMPAT_DIRS (see scripts/compat-prompts)"]
fn compat_collections() {
    let Some(dirs) = std::env::var_os("PROMPTD_COMPAT_DIRS") else {
        eprintln!("PROMPTD_COMPAT_DIRS is not set: nothing to measure");
        return;
    };
    let dirs: Vec<PathBuf> = std::env::split_paths(&dirs)
        .filter(|d| !d.as_os_str().is_empty())
        .collect();
    let bin = std::env::var_os("PROMPTD_COMPAT_BIN").map(PathBuf::from);
    let verbose = std::env::var_os("PROMPTD_COMPAT_VERBOSE").is_some_and(|v| v != "0");
    let discover = std::env::var_os("PROMPTD_COMPAT_DISCOVER").is_some_and(|v| v != "0");
    let (mut reports, crashes) = measure_all(bin.as_deref(), discover, &dirs);

    println!(
        "binary: {}",
        bin.as_deref().map_or_else(
            || process::bin().display().to_string(),
            |b| b.display().to_string()
        )
    );
    println!(
        "mode: {}",
        if discover {
            "discovery (no --prompts, run in the repository)"
        } else {
            "--prompts DIR"
        }
    );
    println!("{}", header());
    let mut total = Report {
        label: "TOTAL".into(),
        ..Default::default()
    };
    for r in &mut reports {
        println!("{}", r.row());
        total.files += r.files;
        total.listed += r.listed;
        total.listed_once += r.listed_once;
        total.placeholders += r.placeholders;
        total.exposed += r.exposed;
        total.extra.extend(r.extra.iter().cloned());
        total.rendered += r.rendered;
        total.lossless += r.lossless;
        total.unmodelled.extend(r.unmodelled.iter().cloned());
        total.with_description += r.with_description;
        total.own_description += r.own_description;
        total.with_hint += r.with_hint;
        total.own_hint += r.own_hint;
        total.loose_yaml += r.loose_yaml;
        total.loose_listed += r.loose_listed;
        total
            .whitespace_only
            .extend(r.whitespace_only.iter().cloned());
        total.lost.extend(r.lost.iter().cloned());
        total.render_failed.extend(r.render_failed.iter().cloned());
        total.check_errors += r.check_errors;
        total.check_warnings += r.check_warnings;
        total.list_ms += r.list_ms;
        total.peak_rss_mib = total.peak_rss_mib.max(r.peak_rss_mib);
        total.per_file_placeholders.extend(&r.per_file_placeholders);
        total.per_prompt_arguments.extend(&r.per_prompt_arguments);
        total.per_render_chars_lost.extend(&r.per_render_chars_lost);
    }
    println!("{}", total.row());
    if verbose {
        for r in &reports {
            println!("\n== {} {} ({:?})", r.label, r.tool, r.by_tool);
            for (what, items) in [
                ("unlisted file", &r.unlisted),
                ("listed twice", &r.listed_twice),
                ("prompt without a file", &r.unmapped),
                ("placeholder not an argument", &r.missing),
                ("argument the tool would not fill", &r.extra),
                ("render failed", &r.render_failed),
                ("whitespace changed", &r.whitespace_only),
                ("not what the tool sends", &r.lost),
                ("not modelled", &r.unmodelled),
                ("description not the file's", &r.description_differs),
                ("argument-hint not as written", &r.hint_differs),
                ("loose frontmatter, unlisted", &r.loose_unlisted),
            ] {
                for i in items {
                    println!("  {what}: {i}");
                }
            }
        }
    }
    if let Some(path) = std::env::var_os("PROMPTD_COMPAT_REPORT") {
        let doc = json!({
            "binary": bin.as_deref().map(|b| b.display().to_string()),
            "folders": reports.iter().map(Report::json).collect::<Vec<_>>(),
            "crashes": crashes,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
    for c in &crashes {
        println!("CRASH: {c}");
    }
    assert!(
        crashes.is_empty(),
        "{} promptd command(s) crashed",
        crashes.len()
    );
}

#[test]
fn body_drops_frontmatter_and_keeps_every_other_byte() {
    let md = "---\ndescription: d\nname: Shown Title\n---\n\nBody $ARGUMENTS\n";
    assert_eq!(body_of(Tool::Claude, md).unwrap(), "\nBody $ARGUMENTS\n");
    assert_eq!(frontmatter_name(md).as_deref(), Some("Shown Title"));
    assert_eq!(
        body_of(Tool::Cursor, "no frontmatter").unwrap(),
        "no frontmatter"
    );
    assert_eq!(
        body_of(Tool::Claude, "\u{feff}---\r\na: 1\r\n---\r\nx").unwrap(),
        "x"
    );
    let toml = "description = \"d\"\nprompt = \"\"\"\nDo {{args}} now\"\"\"\n";
    assert_eq!(body_of(Tool::Gemini, toml).unwrap(), "Do {{args}} now");
    assert_eq!(own_description(Tool::Gemini, toml).as_deref(), Some("d"));
}

#[test]
fn tools_follow_where_a_file_lives() {
    let t = |p: &str| Tool::of(Path::new(p));
    assert_eq!(t("/x/.github/prompts/a.prompt.md"), Tool::VsCode);
    assert_eq!(t("/x/.claude/commands/tools/a.md"), Tool::Claude);
    assert_eq!(t("/x/.codex/prompts/spec:new.md"), Tool::Codex);
    assert_eq!(t("/x/.gemini/commands/git/a.toml"), Tool::Gemini);
    assert_eq!(t("/x/.cursor/commands/a.md"), Tool::Cursor);
    assert_eq!(t("/x/.opencode/command/a.md"), Tool::OpenCode);
    assert_eq!(t("/x/.opencode/commands/a.md"), Tool::OpenCode);
    assert_eq!(t("/x/prompts/a.prompt"), Tool::Dotprompt);
    assert_eq!(t("/x/prompts/a.prompty"), Tool::Prompty);
    assert_eq!(t("/x/prompts/a.md"), Tool::Promptd);
    assert!(!is_prompt_file(Path::new("/x/.claude/commands/s/run.py")));
    assert!(!is_prompt_file(Path::new("/x/prompts/config.toml")));
    assert!(!is_prompt_file(Path::new("/x/.github/prompts/README.md")));
    assert!(!is_prompt_file(Path::new("/x/prompts/_partial.prompt")));
}

#[test]
fn frontmatter_that_is_not_strict_yaml_is_read_as_written() {
    let md = "---\ndescription: Fix: the thing\nargument-hint: [pr-number] [priority]\n---\nx";
    assert!(loose_frontmatter(Tool::Claude, md));
    assert_eq!(
        own_description(Tool::Claude, md).as_deref(),
        Some("Fix: the thing")
    );
    assert_eq!(
        own_argument_hint(Tool::Claude, md).as_deref(),
        Some("[pr-number] [priority]")
    );
    let strict = "---\ndescription: \"Quoted: fine\"\nargument-hint: '<file>'\n---\nx";
    assert!(!loose_frontmatter(Tool::Claude, strict));
    assert_eq!(
        own_description(Tool::Claude, strict).as_deref(),
        Some("Quoted: fine")
    );
    assert_eq!(
        own_argument_hint(Tool::Claude, strict).as_deref(),
        Some("<file>")
    );
}

fn claude(text: &str, typed: &str) -> String {
    let body = body_of(Tool::Claude, text).unwrap();
    claude_expected(text, &body, typed)
}

#[test]
fn claude_oracle_follows_argument_substitution() {
    // `$N` and `$ARGUMENTS[N]` are 0-based words; `$ARGUMENTS` is the text as typed.
    assert_eq!(claude("Fix $0 then $1", "a 'b c'"), "Fix a then b c");
    assert_eq!(
        claude("All: $ARGUMENTS; first $ARGUMENTS[0]", "a  b"),
        "All: a  b; first a"
    );
    // A missing index is kept as written: prices stay.
    assert_eq!(
        claude("Budget $5,000 or $10M at $87.40 for $0", "x y"),
        "Budget $5,000 or $10M at $87.40 for x"
    );
    // Named arguments map to positions.
    assert_eq!(
        claude(
            "---\narguments: [issue, branch]\n---\nFix $issue on $branch",
            "12 main"
        ),
        "Fix 12 on main"
    );
    assert_eq!(
        claude("---\narguments: issue branch\n---\n$branch", "12 main"),
        "main"
    );
    // `\$` escapes (the backslash goes), `\\$` does not; `$HOME` is text.
    assert_eq!(
        claude(r"Keep \$ARGUMENTS, use $0", "a"),
        "Keep $ARGUMENTS, use a"
    );
    assert_eq!(claude(r"Keep \\$0", "a"), r"Keep \\a");
    // A named argument with no word is empty.
    assert_eq!(
        claude("---\narguments: [issue, branch]\n---\n[$branch]", "12"),
        "[]"
    );
    // Nothing substituted and text given: appended.
    assert_eq!(
        claude("Review $HOME", "a b"),
        "Review $HOME\nARGUMENTS: a b"
    );
    assert_eq!(claude("Only $7", "a"), "Only $7\nARGUMENTS: a");
    assert_eq!(claude("Plain", ""), "Plain");
}

#[test]
fn codex_oracle_follows_prompt_args() {
    let call = |text: &str| Call {
        text: text.into(),
        ..Default::default()
    };
    assert_eq!(
        codex_expand(
            "$1 and $2, all $ARGUMENTS, $$ stays, $3 gone",
            &call("a 'b c'")
        ),
        "a and b c, all a b c, $$ stays,  gone"
    );
    // A named placeholder switches to key=value: `$1` and `$ARGUMENTS` stay.
    let mut named = call("TICKET=7");
    named.named.insert("TICKET".into(), "7".into());
    assert_eq!(
        codex_expand("Fix $TICKET; $1 $ARGUMENTS $$TICKET", &named),
        "Fix 7; $1 $ARGUMENTS $$TICKET"
    );
    assert_eq!(codex_named("$$HOME $ARGUMENTS $A_1 $A_1"), ["A_1"]);
}

#[test]
fn gemini_oracle_substitutes_args_or_appends_the_command() {
    let c = Call {
        text: "x y".into(),
        command: "/git:commit x y".into(),
        ..Default::default()
    };
    assert_eq!(gemini_expand("Do {{args}}.", &c), "Do x y.");
    assert_eq!(
        gemini_expand("Run !{grep {{args}}}", &c),
        "Run !{grep 'x y'}"
    );
    assert_eq!(gemini_expand("Plain", &c), "Plain\n\n/git:commit x y");
    assert_eq!(gemini_expand("Plain", &Call::default()), "Plain");
}

#[test]
fn opencode_oracle_numbers_from_one_and_the_last_takes_the_rest() {
    assert_eq!(opencode_expand("\n$1 then $2\n", "a b c"), "a then b c");
    assert_eq!(opencode_expand("$1 and $3", "a"), "a and ");
    assert_eq!(opencode_expand("All $ARGUMENTS", "a 'b'"), "All a 'b'");
    assert_eq!(opencode_expand("Plain\n", "a b"), "Plain\n\na b");
    assert_eq!(opencode_expand("Costs $5,000", "a"), "Costs ,000");
}

#[test]
fn template_oracles_fill_declared_variables() {
    let prompt = "---\ninput:\n  schema:\n    topic: string\n    style?: string, how\n---\nWrite on {{topic}} {{ style }} {{other}}.";
    let body = body_of(Tool::Dotprompt, prompt).unwrap();
    let call = call_for(Tool::Dotprompt, "a.prompt", prompt, &body);
    assert_eq!(
        call.named.keys().cloned().collect::<Vec<_>>(),
        ["style", "topic"]
    );
    assert_eq!(
        expected(Tool::Dotprompt, prompt, &body, &call),
        Oracle::Text(format!(
            "Write on {} {} .",
            marker("topic"),
            marker("style")
        ))
    );
    let json_schema = "---\ninput:\n  schema:\n    type: object\n    properties:\n      userName: string\n---\nHi {{userName}}";
    assert_eq!(
        declared_variables(Tool::Dotprompt, json_schema),
        ["userName"]
    );
    assert!(matches!(
        template_expand(Tool::Dotprompt, "{{#if x}}y{{/if}}", &call),
        Oracle::Unmodelled(_)
    ));
    let prompty = "---\ninputs:\n  question:\n    type: string\n---\nsystem:\nAnswer {{question}}";
    let body = body_of(Tool::Prompty, prompty).unwrap();
    let call = call_for(Tool::Prompty, "a.prompty", prompty, &body);
    assert_eq!(
        expected(Tool::Prompty, prompty, &body, &call),
        Oracle::Text(format!("system:\nAnswer {}", marker("question")))
    );
}

#[test]
fn placeholders_are_the_ones_each_tool_fills() {
    let wanted = |tool: Tool, rel: &str, text: &str| {
        let body = body_of(tool, text).unwrap();
        let call = call_for(tool, rel, text, &body);
        placeholders(tool, text, &body, &call)
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        wanted(
            Tool::VsCode,
            "a.prompt.md",
            "Use ${input:topic:the topic} on ${file} at ${input:Level|High}; `${count}`, $HOME stay"
        ),
        [
            Wanted::Named("Level".into()),
            Wanted::Named("file".into()),
            Wanted::Named("topic".into())
        ]
    );
    assert_eq!(
        wanted(
            Tool::Claude,
            "a.md",
            "Fix $ARGUMENTS, first $0; $WORK_DIR is shell"
        ),
        [Wanted::Text, Wanted::Word("0".into())]
    );
    // No placeholder, but the tool appends what is typed.
    assert_eq!(wanted(Tool::Claude, "a.md", "Plain"), [Wanted::Text]);
    assert_eq!(
        wanted(Tool::Gemini, "a.toml", "prompt = \"Plain\""),
        [Wanted::Text]
    );
    assert!(wanted(Tool::Cursor, "a.md", "Plain $1").is_empty());
    assert_eq!(
        wanted(Tool::Codex, "a.md", "Ticket $TICKET_ID, literal $$1"),
        [Wanted::Named("TICKET_ID".into())]
    );
    assert!(Wanted::Word("2".into()).met_by(&["arg2".into()]));
    assert!(Wanted::Word("2".into()).met_by(&["arguments".into()]));
    assert!(Wanted::Text.met_by(&["args".into()]));
    assert!(!Wanted::Named("topic".into()).met_by(&["other".into()]));
}

#[test]
fn comparison_tells_lossless_from_whitespace_and_loss() {
    assert_eq!(compare("a b\n", "a b\n"), Fidelity::Lossless);
    assert_eq!(compare("\nText\n", "Text"), Fidelity::WhitespaceOnly);
    assert_eq!(
        compare("Keep all of this", "Keep all"),
        Fidelity::Lost { at: 8 }
    );
    assert_eq!(chars_lost("Keep all of this", "Keep all"), 8);
    assert_eq!(spread(&mut [5, 1, 3]), "1/3/5");
    let listed = json!({"_meta": {"toolMetadata": {"argument-hint": "[a] [b]"}}});
    assert_eq!(listed_argument_hint(&listed), Some(&json!("[a] [b]")));
}

#[test]
fn names_map_files_by_path_and_frontmatter() {
    let c = name_candidates("tools/api-scaffold.md", "body");
    assert!(c.contains(&"tools:api-scaffold".to_string()));
    assert!(c.contains(&"tools/api-scaffold".to_string()));
    let c = name_candidates("review.prompt.md", "---\nname: code_review\n---\nx");
    assert!(c.contains(&"review".to_string()));
    assert!(c.contains(&"review.prompt".to_string()));
    assert!(c.contains(&"code_review".to_string()));
    let files: BTreeSet<String> = ["a.md".to_string(), "tools/a.md".to_string()].into();
    let p = json!({"name": "tools:a", "_meta": {"sourceFile": "tools/a.md"}});
    assert_eq!(listed_source(&p, &files).as_deref(), Some("tools/a.md"));
    let p = json!({"name": "a", "source": "a.md"});
    assert_eq!(listed_source(&p, &files).as_deref(), Some("a.md"));
    let p = json!({"name": "x", "source": "/abs/dir/tools/a.md"});
    assert_eq!(listed_source(&p, &files).as_deref(), Some("tools/a.md"));
    assert_eq!(
        label_of(Path::new("/tmp/compat/suite/.claude/commands")),
        "suite"
    );
    assert_eq!(
        label_of(Path::new("/tmp/c/microsoft+prompty/spec/fixtures")),
        "microsoft+prompty/spec/fixtures"
    );
    assert_eq!(label_of(Path::new("/tmp/c/a+b/.claude/commands")), "a+b");
    assert_eq!(
        repository_of(Path::new("/r/repo/.gemini/commands/git")),
        Path::new("/r/repo")
    );
    assert_eq!(
        repository_of(Path::new("/r/repo/prompts")),
        Path::new("/r/repo")
    );
}

/// The harness over a folder of promptd's own Jinja prompts (written here): every file listed
/// once, every render lossless, nothing crashes. Holds for any build that keeps promptd's dialect.

#[test]
fn harness_measures_a_folder_of_promptd_prompts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("compat_greet.md"),
        "---\narguments:\n  - name: who\n    required: true\n---\nHello {{ who }}, welcome.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("compat_plain.md"),
        "---\ndescription: No arguments.\n---\nNothing to fill in here.\n",
    )
    .unwrap();
    let (mut reports, crashes) = measure_all(None, false, &[dir.path().to_path_buf()]);
    assert!(crashes.is_empty(), "{crashes:?}");
    let r = &mut reports[0];
    assert_eq!((r.files, r.listed, r.listed_once), (2, 2, 2), "{r:?}");
    assert_eq!((r.rendered, r.lossless), (2, 2), "{r:?}");
    assert!(r.lost.is_empty() && r.render_failed.is_empty(), "{r:?}");
    assert!(r.missing.is_empty() && r.extra.is_empty(), "{r:?}");
    assert_eq!(r.check_errors, 0, "{r:?}");
    assert!(r.row().starts_with(&r.label));
}
