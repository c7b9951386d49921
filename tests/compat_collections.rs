//! Compatibility check over prompt collections written for other tools (VS Code prompt files,
//! Claude Code and Codex commands, Gemini CLI commands, Cursor commands).
//!
//! `compat_collections` is ignored by default: it reads folders named by `PROMPTD_COMPAT_DIRS`
//! (a path list, `:`-separated) and drives the real binary over each one, as a new user would
//! with `--prompts DIR`: `list --json`, `get` of every listed prompt with every argument set to a
//! marker value, and `check`. `PROMPTD_COMPAT_BIN` runs another build of promptd instead of this
//! crate's (to compare branches), `PROMPTD_COMPAT_REPORT` names a JSON file that receives every
//! number and every failing file, `PROMPTD_COMPAT_VERBOSE=1` prints the failing files, and
//! `PROMPTD_COMPAT_DISCOVER=1` runs without `--prompts` from the repository each folder lives in
//! (zero-config discovery).
//! `scripts/compat-prompts DIR...` is the short way to run it.
//!
//! Per folder it prints: prompt files found and how many are listed exactly once; placeholders
//! the file's own tool would fill and how many are exposed as arguments; renders that succeed;
//! renders that are lossless (the rendered text, with each marker taken back to the placeholder
//! it replaced, equals the file body without frontmatter byte for byte); `check` errors and
//! warnings; and min / median / max of the per-file counts. The test fails only when the binary
//! crashes (a signal or a timeout), never on a bad number: the numbers are the output.
//!
//! What a placeholder is follows the tools' own rules, chosen by where the file lives:
//! `*.prompt.md` is a VS Code prompt file (`${input:name}`, `${input:name:text}`, `${file}` and
//! the other editor variables); a file under `.claude/commands` is a Claude Code command
//! (`$ARGUMENTS`, `$1`..`$9`); under `.codex/prompts` a Codex prompt (those, plus upper-case
//! `$NAME`); a `.toml` under `.gemini/commands` a Gemini CLI command (`{{args}}`, in its
//! `prompt` string); under `.cursor/commands` a Cursor command (none).

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
    Promptd,
}

impl Tool {
    fn of(path: &Path) -> Tool {
        let p = path.to_string_lossy().replace('\\', "/");
        let under =
            |dir: &str| p.contains(&format!("/{dir}/")) || p.starts_with(&format!("{dir}/"));
        if p.ends_with(".prompt.md") {
            Tool::VsCode
        } else if under(".claude/commands") {
            Tool::Claude
        } else if under(".codex/prompts") {
            Tool::Codex
        } else if under(".gemini/commands") && p.ends_with(".toml") {
            Tool::Gemini
        } else if under(".cursor/commands") {
            Tool::Cursor
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
            Tool::Promptd => "promptd",
        }
    }
}

/// A file is a prompt file of some tool: Markdown anywhere, TOML in a Gemini folder.
fn is_prompt_file(path: &Path) -> bool {
    let hidden = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'));
    match path.extension().and_then(|e| e.to_str()) {
        Some("md") => !hidden,
        Some("toml") => !hidden && Tool::of(path) == Tool::Gemini,
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
            } else if kind.is_file() && is_prompt_file(&path) {
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

/// The text a tool sends for a file: a TOML command's `prompt` string, else the file without its
/// leading `---` frontmatter block (and without a byte-order mark).
fn body_of(tool: Tool, text: &str) -> Option<String> {
    if tool == Tool::Gemini {
        let table: toml::Table = text.parse().ok()?;
        return table.get("prompt")?.as_str().map(str::to_string);
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Some(text.to_string());
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']).trim_end() == "---" {
            return Some(rest[offset + line.len()..].to_string());
        }
        offset += line.len();
    }
    Some(text.to_string())
}

/// The frontmatter `name:` value of a Markdown file, if any (quotes removed).
fn frontmatter_name(text: &str) -> Option<String> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    for line in rest.lines() {
        if line.trim_end() == "---" {
            return None;
        }
        if let Some(v) = line.strip_prefix("name:") {
            let v = v.trim().trim_matches(['"', '\'']);
            return (!v.is_empty()).then(|| v.to_string());
        }
    }
    None
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
static DOLLAR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\$|\$(ARGUMENTS|[1-9]|[A-Z][A-Z0-9_]*)").unwrap());
static GEMINI_ARGS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{\{args\}\}").unwrap());

/// What a placeholder asks of the listing: an argument of this name (compared ignoring case),
/// or, for `$1`..`$9`, any argument that carries the position (`arguments`, `1`, `arg1`, ...).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Wanted {
    Named(String),
    Positional(u8),
}

impl Wanted {
    fn met_by(&self, args: &[String]) -> bool {
        match self {
            Wanted::Named(n) => args.iter().any(|a| a.eq_ignore_ascii_case(n)),
            Wanted::Positional(i) => args.iter().any(|a| {
                a.eq_ignore_ascii_case("arguments")
                    || a.trim_start_matches(|c: char| !c.is_ascii_digit()) == i.to_string()
            }),
        }
    }
}

/// The placeholders the file's own tool fills in `body`, once each.
fn placeholders(tool: Tool, body: &str) -> BTreeSet<Wanted> {
    let mut out = BTreeSet::new();
    match tool {
        Tool::VsCode => {
            for c in INPUT.captures_iter(body) {
                out.insert(Wanted::Named(c[1].to_string()));
            }
            for c in EDITOR_VAR.captures_iter(body) {
                out.insert(Wanted::Named(c[1].to_string()));
            }
        }
        Tool::Claude | Tool::Codex => {
            for c in DOLLAR.captures_iter(body) {
                let Some(m) = c.get(1) else { continue };
                let s = m.as_str();
                if s == "ARGUMENTS" {
                    out.insert(Wanted::Named("arguments".into()));
                } else if let Ok(i) = s.parse::<u8>() {
                    out.insert(Wanted::Positional(i));
                } else if tool == Tool::Codex {
                    out.insert(Wanted::Named(s.to_string()));
                }
            }
        }
        Tool::Gemini => {
            if GEMINI_ARGS.is_match(body) {
                out.insert(Wanted::Named("args".into()));
            }
        }
        Tool::Cursor | Tool::Promptd => {}
    }
    out
}

/// How many placeholder occurrences of its tool `body` has (each one a render must replace).
fn occurrences(tool: Tool, body: &str) -> usize {
    match tool {
        Tool::VsCode => INPUT.find_iter(body).count() + EDITOR_VAR.find_iter(body).count(),
        Tool::Claude | Tool::Codex => DOLLAR
            .captures_iter(body)
            .filter_map(|c| c.get(1))
            .filter(|m| {
                let s = m.as_str();
                tool == Tool::Codex || s == "ARGUMENTS" || s.parse::<u8>().is_ok()
            })
            .count(),
        Tool::Gemini => GEMINI_ARGS.find_iter(body).count(),
        Tool::Cursor | Tool::Promptd => 0,
    }
}

/// The marker a render receives for argument `name`.
fn marker(name: &str) -> String {
    format!("\u{27e6}{name}\u{27e7}")
}

static MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\u{27e6}[^\u{27e6}\u{27e7}\n]{0,200}\u{27e7}").unwrap());

/// Text a marker may stand for: any placeholder form of any of the dialects.
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:\$\{input:[^}\n]*\}|\$\{[A-Za-z][A-Za-z0-9_]*\}|\$ARGUMENTS(?:\[\d+\])?|\$[1-9]|\$[A-Za-z_][A-Za-z0-9_]*|\{\{-?[^{}\n]*?-?\}\})",
    )
    .unwrap()
});

/// Placeholders that may render as nothing with every argument supplied: positions past the
/// words of a shell-split argument.
static EMPTY_OK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\$[1-9]").unwrap());

/// How a render compares with the file body.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fidelity {
    /// Byte for byte, markers taken back to their placeholders.
    Lossless,
    /// Equal except for leading or trailing whitespace (a trimmed blank line or final newline).
    WhitespaceOnly,
    /// Text was dropped, rewritten or added; `at` is the byte offset in the body where the two
    /// first part ways.
    Lost { at: usize },
}

/// The outcome of aligning a render with a body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Alignment {
    fidelity: Fidelity,
    /// Placeholders a marker replaced.
    substituted: usize,
    /// `$$` rendered as `$`.
    escapes: usize,
    /// Positional placeholders rendered as nothing.
    emptied: usize,
}

/// Walks `body` and `rendered` together: equal bytes pass, a marker in `rendered` must stand
/// where `body` has a placeholder, `$$` may render as `$`, `$1`..`$9` as nothing.
fn align_exact(body: &str, rendered: &str) -> Result<Alignment, usize> {
    let (b, r) = (body.as_bytes(), rendered.as_bytes());
    let (mut i, mut j) = (0usize, 0usize);
    let mut out = Alignment {
        fidelity: Fidelity::Lossless,
        substituted: 0,
        escapes: 0,
        emptied: 0,
    };
    while j < r.len() {
        if let Some(m) = MARKER.find_at(rendered, j).filter(|m| m.start() == j) {
            let Some(p) = PLACEHOLDER.find(&body[i..]) else {
                return Err(i);
            };
            i += p.end();
            j = m.end();
            out.substituted += 1;
            continue;
        }
        if b[i..].starts_with(b"$$") && r[j] == b'$' {
            // Served verbatim, or the escape taken to one `$`.
            if r[j..].starts_with(b"$$") {
                j += 2;
            } else {
                j += 1;
                out.escapes += 1;
            }
            i += 2;
            continue;
        }
        if i < b.len() && b[i] == r[j] {
            i += 1;
            j += 1;
            continue;
        }
        if let Some(p) = EMPTY_OK.find(&body[i..]) {
            i += p.end();
            out.emptied += 1;
            continue;
        }
        return Err(i);
    }
    while let Some(p) = EMPTY_OK.find(&body[i..]) {
        i += p.end();
        out.emptied += 1;
    }
    if i == b.len() { Ok(out) } else { Err(i) }
}

/// Compares a render with the body of the file it came from.
fn align(body: &str, rendered: &str) -> Alignment {
    match align_exact(body, rendered) {
        Ok(a) => a,
        Err(at) => {
            let trimmed = align_exact(body.trim(), rendered.trim());
            match trimmed {
                Ok(a) => Alignment {
                    fidelity: Fidelity::WhitespaceOnly,
                    ..a
                },
                Err(_) => Alignment {
                    fidelity: Fidelity::Lost { at },
                    substituted: 0,
                    escapes: 0,
                    emptied: 0,
                },
            }
        }
    }
}

/// Characters of `body` missing from `rendered` (markers aside), by a bounded character diff.
fn chars_lost(body: &str, rendered: &str) -> usize {
    let rendered = MARKER.replace_all(rendered, "");
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(Duration::from_secs(2))
        .diff_chars(body, rendered.as_ref());
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
    for ext in [".prompt.md", ".md", ".toml"] {
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
    lossless: usize,
    /// Lossless renders that also replaced every placeholder occurrence of the file's tool.
    filled: usize,
    /// Lossless renders that left some placeholder of the file's tool as it was.
    unfilled: Vec<String>,
    whitespace_only: Vec<String>,
    lost: Vec<String>,
    render_warnings: usize,
    /// Lossless renders that took `$$` to `$`, and that rendered `$1`..`$9` as nothing.
    escaped: Vec<String>,
    emptied: Vec<String>,
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
    dir.ancestors()
        .filter_map(|a| a.file_name().map(|n| n.to_string_lossy().into_owned()))
        .find(|n| !n.starts_with('.') && !["commands", "prompts"].contains(&n.as_str()))
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
    for f in &files {
        match hits.get(f).copied().unwrap_or(0) {
            0 => rep.unlisted.push(f.clone()),
            1 => rep.listed_once += 1,
            _ => rep.listed_twice.push(f.clone()),
        }
        *rep.by_tool
            .entry(Tool::of(&dir.join(f)).label())
            .or_default() += 1;
    }

    // Placeholders against the arguments of the prompt each file became.
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
    for f in &files {
        let tool = Tool::of(&dir.join(f));
        let body = body_of(tool, &texts[f.as_str()]).unwrap_or_default();
        let wanted = placeholders(tool, &body);
        rep.placeholders += wanted.len();
        rep.per_file_placeholders.push(wanted.len());
        let prompt = file_of
            .iter()
            .position(|x| x.as_deref() == Some(f.as_str()))
            .map(|i| &prompts[i]);
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
    }

    // Renders with a marker in every argument.
    for (p, f) in prompts.iter().zip(&file_of) {
        let name = p["name"].as_str().unwrap_or_default();
        let args = p["arguments"].as_array().cloned().unwrap_or_default();
        rep.per_prompt_arguments.push(args.len());
        let mut values = Map::new();
        for a in &args {
            let Some(an) = a["name"].as_str() else {
                continue;
            };
            let v = match a["type"].as_str() {
                Some("integer") | Some("number") => json!(7),
                Some("boolean") => json!(true),
                _ => json!(marker(an)),
            };
            values.insert(an.to_string(), v);
        }
        let values = Value::Object(values).to_string();
        let args = at.args(&["get", name, "--json", "--args-json", &values]);
        let Some(get) = run(bin, &at.cwd, &args, crashes) else {
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
        let Some(f) = f else { continue };
        let tool = Tool::of(&dir.join(f));
        let Some(body) = body_of(tool, &texts[f.as_str()]) else {
            continue;
        };
        let a = align(&body, content);
        match a.fidelity {
            Fidelity::Lossless => {
                rep.lossless += 1;
                if a.escapes > 0 {
                    rep.escaped
                        .push(format!("{f}: {} `$$` rendered as `$`", a.escapes));
                }
                if a.emptied > 0 {
                    rep.emptied
                        .push(format!("{f}: {} positional(s) rendered empty", a.emptied));
                }
                let want = occurrences(tool, &body);
                if a.substituted + a.emptied >= want {
                    rep.filled += 1;
                } else {
                    rep.unfilled.push(format!(
                        "{f}: {} of {want} placeholder(s) replaced",
                        a.substituted + a.emptied
                    ));
                }
            }
            Fidelity::WhitespaceOnly => rep.whitespace_only.push(f.clone()),
            Fidelity::Lost { at } => {
                let lost = chars_lost(&body, content);
                rep.per_render_chars_lost.push(lost);
                rep.lost.push(format!(
                    "{f}: ~{lost} chars lost; first difference at byte {at}: {}",
                    excerpt(&body, at)
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
        format!(
            "{:<22} {:>5} {:>6} {:>5} {:>6} {:>7} {:>5} {:>6} {:>6} {:>6} {:>6} {:>5} {:>5} {:>5}/{:<5} {:>11} {:>11} {:>11} {:>7} {:>6.0}",
            self.label,
            self.files,
            self.listed,
            self.listed_once,
            self.placeholders,
            self.exposed,
            self.extra.len(),
            self.rendered,
            self.lossless,
            self.filled,
            self.whitespace_only.len(),
            self.lost.len(),
            self.render_failed.len(),
            self.check_errors,
            self.check_warnings,
            spread(&mut self.per_file_placeholders),
            spread(&mut self.per_prompt_arguments),
            spread(&mut self.per_render_chars_lost),
            self.list_ms,
            self.peak_rss_mib,
        )
    }

    fn json(&self) -> Value {
        json!({
            "label": self.label,
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
            "filled": self.filled,
            "unfilled": self.unfilled,
            "whitespaceOnly": self.whitespace_only,
            "lost": self.lost,
            "renderWarnings": self.render_warnings,
            "escaped": self.escaped,
            "emptied": self.emptied,
            "checkErrors": self.check_errors,
            "checkWarnings": self.check_warnings,
            "listMs": self.list_ms,
            "peakRssMib": self.peak_rss_mib,
        })
    }
}

const HEADER: &str = "\
folder                 files listed  once  phold exposed extra render lossls filled wsonly  lost rfail check E/W   phold/file args/prompt  lost chars list ms peakMiB
                                                                                                           min/med/max min/med/max min/med/max";

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
    println!("{HEADER}");
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
        total.filled += r.filled;
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
            println!("\n== {} ({:?})", r.label, r.by_tool);
            for (what, items) in [
                ("unlisted file", &r.unlisted),
                ("listed twice", &r.listed_twice),
                ("prompt without a file", &r.unmapped),
                ("placeholder not an argument", &r.missing),
                ("argument the tool would not fill", &r.extra),
                ("render failed", &r.render_failed),
                ("whitespace changed", &r.whitespace_only),
                ("placeholder left in place", &r.unfilled),
                ("escape taken", &r.escaped),
                ("positional emptied", &r.emptied),
                ("lost", &r.lost),
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
}

#[test]
fn tools_follow_where_a_file_lives() {
    let t = |p: &str| Tool::of(Path::new(p));
    assert_eq!(t("/x/.github/prompts/a.prompt.md"), Tool::VsCode);
    assert_eq!(t("/x/.claude/commands/tools/a.md"), Tool::Claude);
    assert_eq!(t("/x/.codex/prompts/spec:new.md"), Tool::Codex);
    assert_eq!(t("/x/.gemini/commands/git/a.toml"), Tool::Gemini);
    assert_eq!(t("/x/.cursor/commands/a.md"), Tool::Cursor);
    assert_eq!(t("/x/prompts/a.md"), Tool::Promptd);
    assert!(!is_prompt_file(Path::new("/x/.claude/commands/s/run.py")));
    assert!(!is_prompt_file(Path::new("/x/prompts/config.toml")));
}

#[test]
fn placeholders_are_the_ones_each_tool_fills() {
    let vs = placeholders(
        Tool::VsCode,
        "Use ${input:topic:the topic} on ${file} at ${input:Level|High}; `${count}`, $HOME stay",
    );
    assert_eq!(
        vs.into_iter().collect::<Vec<_>>(),
        [
            Wanted::Named("Level".into()),
            Wanted::Named("file".into()),
            Wanted::Named("topic".into())
        ]
    );
    let claude = placeholders(Tool::Claude, "Fix $ARGUMENTS, first $1; $WORK_DIR is shell");
    assert_eq!(
        claude.into_iter().collect::<Vec<_>>(),
        [Wanted::Named("arguments".into()), Wanted::Positional(1)]
    );
    let codex = placeholders(Tool::Codex, "Ticket $TICKET_ID, literal $$1");
    assert_eq!(
        codex.into_iter().collect::<Vec<_>>(),
        [Wanted::Named("TICKET_ID".into())]
    );
    let gemini = placeholders(Tool::Gemini, "Review {{args}}; keep {{ other }}");
    assert_eq!(gemini.len(), 1);
    assert_eq!(occurrences(Tool::Codex, "$1 and $1, $$2, $FILE"), 3);
    assert_eq!(occurrences(Tool::Claude, "$ARGUMENTS $1 $HOME"), 2);
    assert_eq!(
        occurrences(Tool::VsCode, "${input:a} ${input:a:x} ${file} ${x}"),
        3
    );
    assert!(Wanted::Positional(2).met_by(&["arg2".into()]));
    assert!(Wanted::Positional(2).met_by(&["arguments".into()]));
    assert!(!Wanted::Named("topic".into()).met_by(&["other".into()]));
}

#[test]
fn alignment_accepts_substitution_and_catches_every_loss() {
    let body = "Review ${input:file:path} for $ARGUMENTS.\n";
    let ok = align(
        body,
        &format!("Review {} for {}.\n", marker("file"), marker("arguments")),
    );
    assert_eq!(ok.fidelity, Fidelity::Lossless);
    assert_eq!(ok.substituted, 2);

    // `$$` may render as `$`; a positional past the supplied words may render as nothing.
    let esc = align("Cost $$5, then $2 here", "Cost $5, then  here");
    assert_eq!(
        (esc.fidelity, esc.escapes, esc.emptied),
        (Fidelity::Lossless, 1, 1)
    );

    // A trimmed final newline or leading blank line is whitespace-only, not lossless.
    assert_eq!(align("\nText\n", "Text").fidelity, Fidelity::WhitespaceOnly);

    // Jinja eating a GitHub Actions expression, or an unknown `{{ x }}` rendered empty, is lost.
    let gha = "runs-on: ${{ matrix.os }}\nend\n";
    assert_eq!(
        align(gha, "runs-on: $\nend\n").fidelity,
        Fidelity::Lost { at: 10 }
    );
    assert_eq!(
        align("Hi {{ name }}!", "Hi !").fidelity,
        Fidelity::Lost { at: 3 }
    );
    // A marker where the body has no placeholder is added text.
    assert!(matches!(
        align("Plain text", &format!("Plain {}", marker("x"))).fidelity,
        Fidelity::Lost { .. }
    ));
    // Text after the last thing rendered is lost.
    assert_eq!(
        align("Keep all of this", "Keep all").fidelity,
        Fidelity::Lost { at: 8 }
    );
    assert_eq!(chars_lost("Keep all of this", "Keep all"), 8);
    assert_eq!(spread(&mut [5, 1, 3]), "1/3/5");
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
    assert_eq!((r.rendered, r.lossless, r.filled), (2, 2, 2), "{r:?}");
    assert!(r.lost.is_empty() && r.render_failed.is_empty(), "{r:?}");
    assert!(r.missing.is_empty() && r.extra.is_empty(), "{r:?}");
    assert_eq!(r.check_errors, 0, "{r:?}");
    assert!(r.row().starts_with(&r.label));
}
