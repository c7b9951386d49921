//! The studio: what a prompt author sees of the library, as plain data the web page ([`web`])
//! prints. Every prompt of every folder and dialect; one prompt's argument form, its render cut
//! into the template's text and the values substituted (each with the layer it came from), its
//! token count, its `check` diagnostics and its `promptd test` cases (run read-only); and the
//! served tool definitions, with a form that calls one ([`tools`]); a prompt's git history and
//! two variants (versions, argument sets or prompts) compared side by side ([`versions`]).
//!
//! It also runs a prompt against the configured model ([`web`]'s run route, through
//! [`promptd_stages::Stages::run`]) and lists the runs recorded for it ([`RunPanel`]). Nothing
//! else writes to disk: test cases run with [`SnapshotUpdate::Nothing`], and a run is recorded
//! by the stage, under the project's `.promptd/runs/`, and [`address`] keeps the studio's
//! port and generated token under `.promptd/studio/` so an open page reconnects after a restart.

pub mod address;
pub mod tools;
pub mod versions;
pub mod web;

/// The studio's routes (the page's and the tool definitions page's) with their token guard;
/// the event stream takes its place from `streams`. The caller puts
/// [`promptd_http::origins::require_site`] in front of them.
pub fn router(
    state: web::StudioState,
    guard: web::WebGuard,
    streams: std::sync::Arc<promptd_http::streams::EventStreams>,
) -> axum::Router {
    let has_token = guard.token.is_some();
    let state = std::sync::Arc::new(state);
    let routes = web::routes(state.clone(), streams)
        .merge(tools::routes(state.clone(), has_token))
        .merge(versions::routes(state));
    web::guarded(routes, std::sync::Arc::new(guard))
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Map, Value};

use promptd_core::library::{Snapshot, Visibility};
use promptd_core::prompt_tests::report::{DiffLine, unified_diff};
use promptd_core::prompt_tests::{
    self, CaseOutcome, DEFAULT_NOW, SnapshotOutcome, SnapshotUpdate, TestOptions, shown_path,
};
use promptd_core::registry::{ArgType, ArgumentSpec, PromptCategory, PromptTemplate, Severity};
use promptd_core::render::{Clock, RenderError, SegmentKind, VariableSource};
use promptd_stages::Stages;
use promptd_stages::llm::ModelSettings;
use promptd_stages::run::RunRecord;

/// Where the studio finds what `promptd test` finds, and which prompts it shows.
#[derive(Debug, Clone)]
pub struct StudioOptions {
    /// The prompts the page shows: those the MCP endpoint beside it serves (system prompts only
    /// with `--expose-system`).
    pub visibility: Visibility,
    /// The folder of case files (`promptd test --cases`), if any.
    pub cases_dir: Option<PathBuf>,
    /// Paths are shown relative to this folder.
    pub base_dir: PathBuf,
    /// `base_dir` with its symlinks resolved, once (paths may be written either way).
    canonical_base: Option<PathBuf>,
    /// The list of the latest snapshot listed, kept until the registry changes.
    list_index: Arc<Mutex<Option<Arc<ListIndex>>>>,
}

impl StudioOptions {
    /// The `promptd test` defaults for a project at `base_dir` (cases in `tests/prompts` when
    /// that folder exists), showing the prompts `visibility` serves.
    pub fn for_project(base_dir: &Path, visibility: Visibility) -> StudioOptions {
        let cases = base_dir.join(prompt_tests::DEFAULT_CASES_DIR);
        StudioOptions {
            visibility,
            cases_dir: cases.is_dir().then_some(cases),
            base_dir: base_dir.to_path_buf(),
            canonical_base: std::fs::canonicalize(base_dir).ok(),
            list_index: Arc::default(),
        }
    }

    /// The prompt named `name` when the page shows it.
    pub fn prompt<'a>(
        &self,
        snapshot: &'a Snapshot,
        name: &str,
    ) -> Option<&'a Arc<PromptTemplate>> {
        snapshot.visible(name, self.visibility)
    }

    /// `path` as `promptd test` shows it: relative to the project when inside it (without a
    /// file-system call per path, which a list of 100,000 prompts would pay).
    fn shown(&self, path: &str) -> String {
        let path = Path::new(path);
        let inside = path.strip_prefix(&self.base_dir).ok().or_else(|| {
            self.canonical_base
                .as_ref()
                .and_then(|c| path.strip_prefix(c).ok())
        });
        match inside {
            Some(rel) => shown_path(rel, Path::new("")),
            None => path.display().to_string(),
        }
    }

    /// A load diagnostic as `file:line:col: reason`, its file [`shown`](Self::shown).
    fn located(&self, d: &promptd_core::registry::Diagnostic) -> String {
        format!(
            "{}:{}:{}: {}",
            self.shown(&d.path),
            d.line,
            d.column,
            d.message
        )
    }
}

/// One prompt in the list.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    /// The file's format (`jinja`, `vscode`, `claude`, …).
    pub dialect: &'static str,
    /// The file, as shown (relative to the project when inside it).
    pub file: String,
    pub version_hash: String,
    pub system: bool,
    /// The argument names.
    pub arguments: Vec<String>,
    /// The page of this prompt.
    pub href: String,
    /// What the filter matches, lowercased: name, title, description, dialect, file, arguments.
    pub search: String,
}

impl Entry {
    /// The entry of `t`; its page keeps the list's server-side `query`, if any.
    fn of(t: &PromptTemplate, options: &StudioOptions, query: Option<&str>) -> Entry {
        let file = options.shown(&t.path);
        let search = search_text(t, &file);
        Entry::with_search(t, file, search, query)
    }

    /// The entry of `t` in a list, its file shown as `file` and its filter text `search`
    /// (a [`ListIndex`]'s).
    fn with_search(t: &PromptTemplate, file: String, search: String, query: Option<&str>) -> Entry {
        let description = t.description.clone().unwrap_or_default();
        let arguments: Vec<String> = t.arguments.iter().map(|a| a.name.clone()).collect();
        Entry {
            search,
            href: list_href(&t.name, query),
            name: t.name.clone(),
            title: t.title.clone(),
            description,
            dialect: t.dialect.as_str(),
            file,
            version_hash: t.version_hash.clone(),
            system: t.category == PromptCategory::System,
            arguments,
        }
    }
}

/// What the filter matches of `t` (its file shown as `file`), lowercased: name, title,
/// description, dialect, file, argument names.
fn search_text(t: &PromptTemplate, file: &str) -> String {
    let mut text = format!(
        "{} {} {} {} {}",
        t.name,
        t.title.as_deref().unwrap_or_default(),
        t.description.as_deref().unwrap_or_default(),
        t.dialect.as_str(),
        file,
    );
    for a in &t.arguments {
        text.push(' ');
        text.push_str(&a.name);
    }
    text.to_lowercase()
}

/// The page of the prompt `name`, keeping the list's server-side `query` when there is one.
fn list_href(name: &str, query: Option<&str>) -> String {
    match query.filter(|q| !q.trim().is_empty()) {
        Some(q) => format!("{}&q={}", prompt_href(name), encoded(q)),
        None => prompt_href(name),
    }
}

/// The page of the prompt `name`.
pub(crate) fn prompt_href(name: &str) -> String {
    format!("/?prompt={}", encoded(name))
}

/// `text` percent-encoded for a query value in a link.
pub(crate) fn encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Every prompt of a snapshot, user prompts and system prompts apart, each sorted by name.
#[derive(Debug, Clone, Serialize)]
pub struct PromptList {
    /// The first [`LIST_CAP`] user prompts that match the query.
    pub prompts: Vec<Entry>,
    /// The first [`LIST_CAP`] system prompts that match the query.
    pub system: Vec<Entry>,
    /// How many user and system prompts match the query in all.
    pub prompts_total: usize,
    pub system_total: usize,
    /// The server-side query (`?q=`), when one was given.
    pub query: Option<String>,
    /// The registry's version.
    pub version: String,
    /// Every prompt file whose last read failed.
    pub not_loaded: Vec<LoadProblem>,
}

/// A prompt file whose last read failed.
#[derive(Debug, Clone, Serialize)]
pub struct LoadProblem {
    /// `file:line:col: reason`.
    pub location: String,
    /// The prompt still served from the file's last good version, if any.
    pub served: Option<String>,
    /// The page of that prompt.
    pub served_href: Option<String>,
}

/// The most entries a section of the list holds: a registry of 100,000 prompts is browsed by
/// query, not by one page of all of them.
pub const LIST_CAP: usize = 1000;

/// The prompts a page may list, sorted by name, each with the text the filter matches: built
/// once per registry (a list request of a registry of 100,000 prompts then scans prepared
/// texts instead of describing every prompt again).
#[derive(Debug)]
struct ListIndex {
    /// The registry it lists (a weak reference keeps its address from being reused).
    registry: std::sync::Weak<promptd_core::registry::Registry>,
    prompts: Vec<(Arc<PromptTemplate>, String)>,
    system: Vec<(Arc<PromptTemplate>, String)>,
}

impl ListIndex {
    fn of(snapshot: &Snapshot, options: &StudioOptions) -> ListIndex {
        let mut prompts = Vec::new();
        let mut system = Vec::new();
        // The registry iterates in name order.
        for t in snapshot.registry.prompts() {
            if !options.visibility.shows(t) {
                continue;
            }
            let entry = (t.clone(), search_text(t, &options.shown(&t.path)));
            if t.category == PromptCategory::System {
                system.push(entry);
            } else {
                prompts.push(entry);
            }
        }
        ListIndex {
            registry: Arc::downgrade(&snapshot.registry),
            prompts,
            system,
        }
    }
}

impl StudioOptions {
    /// The list index of `snapshot`: the one kept when it lists the same registry, else one
    /// built under the lock, so that requests arriving together after a reload (the page's
    /// list part and its prompt part) build it once and share it.
    fn list_index(&self, snapshot: &Snapshot) -> Arc<ListIndex> {
        let mut kept = self
            .list_index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let registry = Arc::downgrade(&snapshot.registry);
        if let Some(index) = kept
            .as_ref()
            .filter(|i| std::sync::Weak::ptr_eq(&i.registry, &registry))
        {
            return index.clone();
        }
        let index = Arc::new(ListIndex::of(snapshot, self));
        *kept = Some(index.clone());
        index
    }
}

/// How many user and system prompts the page lists in all.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ListCounts {
    pub prompts: usize,
    pub system: usize,
}

/// How many user and system prompts of `snapshot` the page lists.
pub fn list_counts(snapshot: &Snapshot, options: &StudioOptions) -> ListCounts {
    let index = options.list_index(snapshot);
    ListCounts {
        prompts: index.prompts.len(),
        system: index.system.len(),
    }
}

/// The prompt list of `snapshot`: the prompts whose name, title, description, dialect, file or
/// argument names contain every word of `query` (all when `None`).
pub fn prompt_list(
    snapshot: &Snapshot,
    options: &StudioOptions,
    query: Option<&str>,
) -> PromptList {
    let words: Vec<String> = query
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    // One searcher per word, built once for the whole scan.
    let finders: Vec<memchr::memmem::Finder<'_>> = words
        .iter()
        .map(|w| memchr::memmem::Finder::new(w.as_bytes()))
        .collect();
    let query = query.filter(|q| !q.trim().is_empty());
    let index = options.list_index(snapshot);
    let section = |all: &[(Arc<PromptTemplate>, String)]| {
        let mut total = 0;
        let mut shown = Vec::new();
        for (t, search) in all {
            if finders.iter().all(|f| f.find(search.as_bytes()).is_some()) {
                total += 1;
                if shown.len() < LIST_CAP {
                    shown.push(Entry::with_search(
                        t,
                        options.shown(&t.path),
                        search.clone(),
                        query,
                    ));
                }
            }
        }
        (shown, total)
    };
    let (prompts, prompts_total) = section(&index.prompts);
    let (system, system_total) = section(&index.system);
    PromptList {
        prompts,
        system,
        prompts_total,
        system_total,
        query: query.map(str::to_string),
        version: snapshot.version.clone(),
        not_loaded: snapshot
            .registry
            .failed_files()
            .into_iter()
            .map(|f| LoadProblem {
                location: options.located(f.diagnostic),
                served: f.served.map(str::to_string),
                served_href: f.served.map(prompt_href),
            })
            .collect(),
    }
}

/// The kind of form control an argument gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    Text,
    Number,
    Integer,
    /// A boolean: a checkbox.
    Toggle,
    /// Declared values only: a select.
    Select,
    /// An array or object, typed as JSON (coerced like `--arg`).
    Json,
}

/// One form field.
#[derive(Debug, Clone, Serialize)]
pub struct Field {
    pub name: String,
    pub description: Option<String>,
    pub control: Control,
    pub required: bool,
    /// The default as it would be passed on the command line.
    pub default: Option<String>,
    /// The declared values of a select.
    pub options: Vec<String>,
    /// What the author typed (empty: the default applies).
    pub value: String,
    /// A toggle's state: the typed value, else the default.
    pub checked: bool,
    /// Why the value was refused.
    pub error: Option<String>,
    /// The argument's line in the prompt file.
    pub line: usize,
}

/// A value as `--arg KEY=VALUE` spells it.
fn as_arg(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn field(a: &ArgumentSpec, typed: &Map<String, Value>) -> Field {
    let enum_values = a.enum_values.clone().or_else(|| {
        a.schema
            .as_ref()
            .and_then(|s| s.get("enum"))
            .and_then(Value::as_array)
            .cloned()
    });
    let control = match (a.declared_type(), &enum_values) {
        (Some(ArgType::Boolean), _) => Control::Toggle,
        (_, Some(_)) => Control::Select,
        (Some(ArgType::Number), _) => Control::Number,
        (Some(ArgType::Integer), _) => Control::Integer,
        (Some(ArgType::Array | ArgType::Object), _) => Control::Json,
        _ => Control::Text,
    };
    let value = typed.get(&a.name).map(as_arg).unwrap_or_default();
    let checked = match typed.get(&a.name) {
        Some(v) => matches!(v, Value::Bool(true)) || as_arg(v).trim() == "true",
        None => matches!(a.default, Some(Value::Bool(true))),
    };
    Field {
        name: a.name.clone(),
        description: a.description.clone(),
        control,
        required: a.required,
        default: a.default.as_ref().map(as_arg),
        options: enum_values.unwrap_or_default().iter().map(as_arg).collect(),
        value,
        checked,
        error: None,
        line: a.line,
    }
}

/// One piece of a rendered message, with the layer its value came from.
#[derive(Debug, Clone, Serialize)]
pub struct Piece {
    pub text: String,
    /// `computed`, `config`, `default`, `user`, `expression`; `None` for the template's text.
    pub layer: Option<&'static str>,
    /// Where the value came from, in words (shown on hover).
    pub source: Option<String>,
    /// The lines of the prompt's file (first, last) whose expression printed the value, when
    /// the render knows them.
    pub lines: Option<(usize, usize)>,
    /// For a frontmatter default: the line of the file that declares its argument.
    pub default_line: Option<usize>,
}

/// One rendered message.
#[derive(Debug, Clone, Serialize)]
pub struct MessageView {
    pub role: String,
    pub pieces: Vec<Piece>,
}

/// One variable the render used.
#[derive(Debug, Clone, Serialize)]
pub struct Used {
    pub name: String,
    pub layer: &'static str,
    pub value: String,
}

/// A render as the page shows it; `error` set (and no messages) when it failed.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Output {
    pub messages: Vec<MessageView>,
    /// Tokens of the whole text, counted as `promptd test` counts them.
    pub tokens: usize,
    pub chars: usize,
    /// The text has carriage returns, which a page's text never shows (HTML reads CR LF as LF).
    pub carriage_returns: bool,
    pub used: Vec<Used>,
    pub warnings: Vec<String>,
    pub error: Option<String>,
    /// Argument → why its value was refused (or that it is missing).
    pub field_errors: BTreeMap<String, String>,
}

fn layer_name(s: VariableSource) -> &'static str {
    match s {
        VariableSource::Computed => "computed",
        VariableSource::Config => "config",
        VariableSource::Default => "default",
        VariableSource::User => "user",
    }
}

fn layer_words(s: VariableSource) -> &'static str {
    match s {
        VariableSource::Computed => "computed by promptd (clock)",
        VariableSource::Config => "from the config file",
        VariableSource::Default => "the frontmatter default",
        VariableSource::User => "your argument",
    }
}

/// Renders `prompt` with the author's `args` (strings, coerced to the declared types as the
/// CLI's `--arg` values are).
pub fn render(
    snapshot: &Snapshot,
    prompt: &PromptTemplate,
    args: &Map<String, Value>,
    clock: &Clock,
) -> Output {
    let rendered = snapshot
        .renderer
        .render_marked(prompt, args, &snapshot.config, clock);
    let (rendered, marked) = match rendered {
        Ok(r) => r,
        Err(e) => {
            let mut out = Output::default();
            match &e {
                RenderError::InvalidArgument {
                    argument, message, ..
                } => {
                    out.field_errors.insert(argument.clone(), message.clone());
                }
                RenderError::MissingArguments { names, .. } => {
                    for n in names {
                        out.field_errors.insert(n.clone(), "required".into());
                    }
                }
                _ => {}
            }
            out.error = Some(e.to_string());
            return out;
        }
    };
    let messages = marked
        .into_iter()
        .map(|m| MessageView {
            role: m.role,
            pieces: m
                .segments
                .into_iter()
                .map(|s| {
                    let default_line = match &s.kind {
                        SegmentKind::Variable { name }
                            if rendered.provenance.get(name) == Some(&VariableSource::Default) =>
                        {
                            prompt
                                .arguments
                                .iter()
                                .find(|a| &a.name == name)
                                .map(|a| a.line)
                                .filter(|l| *l > 0)
                        }
                        _ => None,
                    };
                    let (layer, source) = match &s.kind {
                        SegmentKind::Text => (None, None),
                        SegmentKind::Expression => (
                            Some("expression"),
                            Some("computed by a template expression".to_string()),
                        ),
                        SegmentKind::Variable { name } => match rendered.provenance.get(name) {
                            Some(l) => (
                                Some(layer_name(*l)),
                                Some(format!("{name}: {}", layer_words(*l))),
                            ),
                            None => (Some("expression"), Some(name.clone())),
                        },
                    };
                    Piece {
                        text: s.text,
                        layer,
                        source,
                        lines: s.lines,
                        default_line,
                    }
                })
                .collect(),
        })
        .collect();
    let used = rendered
        .template_args_used
        .iter()
        .map(|name| Used {
            name: name.clone(),
            layer: rendered
                .provenance
                .get(name)
                .map_or("computed", |l| layer_name(*l)),
            value: rendered.values.get(name).map(as_arg).unwrap_or_default(),
        })
        .collect();
    Output {
        messages,
        tokens: promptd_base::tokens::count_tokens(&rendered.text),
        chars: rendered.text.chars().count(),
        carriage_returns: rendered.text.contains('\r'),
        used,
        warnings: rendered.warnings,
        error: None,
        field_errors: BTreeMap::new(),
    }
}

/// One diagnostic of the prompt's file.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub severity: &'static str,
    pub line: usize,
    pub column: usize,
    pub code: &'static str,
    pub message: String,
}

/// One test case of the prompt.
#[derive(Debug, Clone, Serialize)]
pub struct CaseView {
    pub id: String,
    pub passed: bool,
    /// `matched`, `new`, `changed`, `not compared`.
    pub snapshot: &'static str,
    pub failures: Vec<String>,
    /// The unified diff of a changed (or new) snapshot: (`+`, `-`, ` `, `@`, `h`) and the line.
    pub diff: Vec<(&'static str, String)>,
    /// The page of the prompt with the form filled from the case's arguments ("use this
    /// case"); `None` for an unreadable declaration.
    pub use_href: Option<String>,
}

/// The page of the prompt `name` with each argument in the form: a string as written, any
/// other value as its JSON text (which the form coerces back to the declared type).
fn case_href(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut pairs = vec![("prompt".to_string(), name.to_string())];
    pairs.extend(args.iter().map(|(k, v)| {
        let value = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        (format!("a.{k}"), value)
    }));
    format!(
        "/?{}",
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    )
}

fn case_view(c: CaseOutcome, prompt: &str) -> CaseView {
    let passed = c.passed();
    let use_href =
        c.id.starts_with(&format!("{prompt}@"))
            .then(|| case_href(prompt, &c.args));
    let (snapshot, diff) = match &c.snapshot {
        SnapshotOutcome::Matched => ("matched", Vec::new()),
        SnapshotOutcome::NotCompared => ("not compared", Vec::new()),
        SnapshotOutcome::New { .. } => (
            "new",
            unified_diff(
                "",
                c.text.as_deref().unwrap_or_default(),
                "(none)",
                "rendered",
            ),
        ),
        SnapshotOutcome::Changed { old, .. } => (
            "changed",
            unified_diff(
                old,
                c.text.as_deref().unwrap_or_default(),
                "snapshot",
                "rendered",
            ),
        ),
    };
    let diff = diff
        .into_iter()
        .map(|l| match l {
            DiffLine::Header(s) => ("h", s),
            DiffLine::Hunk(s) => ("@", s),
            DiffLine::Removed(s) => ("-", s),
            DiffLine::Added(s) => ("+", s),
            DiffLine::Context(s) => (" ", s),
        })
        .collect();
    CaseView {
        id: c.id,
        passed,
        snapshot,
        failures: c.failures,
        diff,
        use_href,
    }
}

/// Runs the prompt's `promptd test` cases without writing anything. Cases that set no `now`
/// run at `clock` when it is frozen (the server's `--now`, as `promptd test --now`), else at
/// the frozen default `promptd test` uses.
pub fn cases(
    snapshot: &Snapshot,
    prompt: &PromptTemplate,
    clock: &Clock,
    options: &StudioOptions,
) -> Vec<CaseView> {
    let own = format!("{}@", prompt.name);
    let file = options.shown(&prompt.path);
    let test_options = TestOptions {
        cases_dir: options.cases_dir.clone(),
        // Only this prompt's cases are rendered (the filter matches `<prompt>@` anywhere in a
        // case's id; the exact ones are kept below).
        filter: Some(own.clone()),
        prompt: Some(prompt.name.clone()),
        update: SnapshotUpdate::Nothing,
        default_now: if clock.is_fixed() {
            *clock
        } else {
            Clock::parse(DEFAULT_NOW).unwrap_or_else(|_| Clock::system())
        },
        base_dir: options.base_dir.clone(),
    };
    let mut out = Vec::new();
    let run = prompt_tests::run(snapshot, &test_options, &mut |c| {
        if c.id.starts_with(&own) || c.id == file {
            out.push(case_view(c.clone(), &prompt.name));
        }
    });
    if let Err(e) = run {
        out.push(CaseView {
            id: "(settings)".into(),
            passed: false,
            snapshot: "not compared",
            failures: vec![e.to_string()],
            diff: Vec::new(),
            use_href: None,
        });
    }
    out
}

/// Everything the page shows of one prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptView {
    pub entry: Entry,
    pub fields: Vec<Field>,
    /// Changes when the arguments' declarations change (the form must be rebuilt).
    pub form_key: String,
    pub output: Output,
    pub findings: Vec<Finding>,
    /// Why the file on disk does not load (its last good version is served), as
    /// `file:line:col: message`.
    pub load_errors: Vec<String>,
    pub cases: Vec<CaseView>,
    pub cases_passed: usize,
    pub source: SourceView,
    /// The prompt's git history, and Compare with it on the left.
    pub history_href: String,
    pub compare_href: String,
}

/// The prompt's file as the page shows it beside the render.
#[derive(Debug, Clone, Serialize)]
pub struct SourceView {
    pub lines: Vec<SourceLine>,
    /// Why only the body is shown (the file changed since it was read, or cannot be read).
    pub note: Option<String>,
}

/// One line of the prompt's file.
#[derive(Debug, Clone, Serialize)]
pub struct SourceLine {
    pub number: usize,
    pub text: String,
    /// Whether the line is part of the frontmatter (before the body).
    pub frontmatter: bool,
}

/// The file `prompt` was read from, line by line; only its body (numbered as in the file) when
/// the file no longer holds what is served.
pub fn source_view(snapshot: &Snapshot, prompt: &PromptTemplate) -> SourceView {
    let numbered = |text: &str, first: usize| -> Vec<SourceLine> {
        text.split('\n')
            .enumerate()
            .map(|(i, line)| SourceLine {
                number: first + i,
                text: line.strip_suffix('\r').unwrap_or(line).to_string(),
                frontmatter: first + i < prompt.body_line,
            })
            .collect()
    };
    match snapshot.registry.source_text(prompt) {
        Some(text) => {
            let mut lines = numbered(&text, 1);
            // A final newline ends the last line; it starts none.
            if text.ends_with('\n') {
                lines.pop();
            }
            SourceView { lines, note: None }
        }
        None => SourceView {
            lines: numbered(&prompt.body, prompt.body_line),
            note: Some(
                "The file no longer holds the version served (or cannot be read): its body as \
                 served is shown."
                    .into(),
            ),
        },
    }
}

/// The view of the prompt named `name` with the author's `args`; `None` for an unknown name.
pub fn prompt_view(
    snapshot: &Snapshot,
    name: &str,
    args: &Map<String, Value>,
    clock: &Clock,
    options: &StudioOptions,
) -> Option<PromptView> {
    let prompt = options.prompt(snapshot, name)?;
    let output = render(snapshot, prompt, args, clock);
    let mut fields: Vec<Field> = prompt.arguments.iter().map(|a| field(a, args)).collect();
    for f in &mut fields {
        f.error = output.field_errors.get(&f.name).cloned();
    }
    let findings: Vec<Finding> = promptd_core::lint::check_prompt_file(snapshot, prompt)
        .into_iter()
        .map(|d| Finding {
            severity: match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            line: d.line,
            column: d.column,
            code: d.code,
            message: d.message,
        })
        .collect();
    let load_errors = snapshot
        .registry
        .diagnostics()
        .iter()
        .filter(|d| d.path == prompt.path && d.severity == Severity::Error)
        .map(|d| options.located(d))
        .collect();
    let cases = cases(snapshot, prompt, clock, options);
    let form_key = {
        let spec = serde_json::to_string(&prompt.arguments).unwrap_or_default();
        promptd_core::registry::content_hash(spec.as_bytes())
    };
    Some(PromptView {
        history_href: versions::history_href(&prompt.name),
        compare_href: versions::compare_href(&prompt.name),
        entry: Entry::of(prompt, options, None),
        source: source_view(snapshot, prompt),
        cases_passed: cases.iter().filter(|c| c.passed).count(),
        load_errors,
        fields,
        form_key,
        output,
        findings,
        cases,
    })
}

/// The author's arguments from form pairs `a.NAME=VALUE`: strings, as `--arg` gives them; an
/// empty value is left out (the default applies).
pub fn form_args<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix("a.")?;
            (!name.is_empty() && !v.is_empty())
                .then(|| (name.to_string(), Value::String(v.to_string())))
        })
        .collect()
}

/// One recorded run, as the page lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub id: String,
    pub started_at: String,
    pub model: String,
    pub version: String,
    pub arguments: String,
    pub answer: String,
    pub error: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_estimated: bool,
    pub latency_ms: u64,
    /// This run against the one recorded before it (set by the run panel).
    pub diff_href: Option<String>,
}

impl RunView {
    pub fn of(r: &RunRecord) -> RunView {
        RunView {
            id: r.id.clone(),
            started_at: r.started_at.clone(),
            model: r.model.clone(),
            version: r.version_hash.chars().take(12).collect(),
            arguments: r
                .arguments
                .iter()
                .map(|(k, v)| format!("{k}={}", as_arg(v)))
                .collect::<Vec<_>>()
                .join(" "),
            answer: r.answer.clone(),
            error: r.error.clone(),
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            tokens_estimated: r.tokens_estimated,
            latency_ms: r.latency_ms.round() as u64,
            diff_href: None,
        }
    }
}

/// The run panel of one prompt: the model a run asks for, and the recorded runs.
#[derive(Debug, Clone, Serialize)]
pub struct RunPanel {
    /// Whether a model is configured (`LLM_*`).
    pub configured: bool,
    /// The model preselected: the frontmatter's, else the configured one.
    pub model: String,
    /// Where the preselected model comes from: `frontmatter` or `configured`.
    pub model_from: &'static str,
    pub runs: Vec<RunView>,
}

/// The run panel of `prompt`.
pub fn run_panel(stages: &Stages, prompt: &PromptTemplate) -> RunPanel {
    let declared = ModelSettings::of_prompt(prompt).model;
    let configured = stages.default_model();
    RunPanel {
        configured: configured.is_some(),
        model_from: if declared.is_some() {
            "frontmatter"
        } else {
            "configured"
        },
        model: declared
            .or_else(|| configured.map(str::to_string))
            .unwrap_or_default(),
        runs: {
            let runs = stages.runs().list(&prompt.name);
            runs.iter()
                .enumerate()
                .map(|(i, r)| RunView {
                    diff_href: runs
                        .get(i + 1)
                        .map(|older| versions::run_diff_href(&prompt.name, &older.id, &r.id)),
                    ..RunView::of(r)
                })
                .collect()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptd_core::registry::{BuiltinSource, Registry};

    fn builtin_snapshot() -> Snapshot {
        let registry = Registry::load(vec![Arc::new(BuiltinSource)]);
        Snapshot::new(registry, Arc::default())
    }

    #[test]
    fn requests_together_share_one_list_index_per_registry() {
        let options = StudioOptions::for_project(Path::new("."), Visibility::All);
        let snapshot = builtin_snapshot();
        let indexes: Vec<Arc<ListIndex>> = std::thread::scope(|s| {
            let calls: Vec<_> = (0..4)
                .map(|_| s.spawn(|| options.list_index(&snapshot)))
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert!(indexes.iter().all(|i| Arc::ptr_eq(i, &indexes[0])));
        assert!(!indexes[0].prompts.is_empty());
        // Another registry (a reload) gets an index of its own.
        let reloaded = builtin_snapshot();
        assert!(!Arc::ptr_eq(&options.list_index(&reloaded), &indexes[0]));
    }

    #[test]
    fn a_listed_entry_is_the_entry_of_its_prompt() {
        let options = StudioOptions::for_project(Path::new("."), Visibility::All);
        let snapshot = builtin_snapshot();
        let list = prompt_list(&snapshot, &options, Some("a"));
        let listed = list.prompts.first().expect("a built-in prompt matches");
        let prompt = options.prompt(&snapshot, &listed.name).unwrap();
        let entry = Entry::of(prompt, &options, Some("a"));
        assert_eq!(
            serde_json::to_value(listed).unwrap(),
            serde_json::to_value(&entry).unwrap()
        );
    }
}
