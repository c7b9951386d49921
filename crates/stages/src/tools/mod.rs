//! Tool definitions that run: the Plandex-shaped `.promptd/tools/*.json` files of the server's
//! folder (and of the folders `tools.folders` adds) loaded into one registry, served beside
//! promptd's own tools, and called: the arguments checked against the tool's `inputSchema`
//! (a mismatch is the caller's error, naming the field), the tool executed (an HTTP request,
//! [`http`], or a predefined function, [`functions`]), the answer scanned by the secret guard
//! (a secret is redacted and reported), checked against the `outputSchema` when there is one,
//! and returned as text plus structured content. An execution that fails (a timeout, an HTTP
//! error status, a refused address, a body over the cap, a function's error) is a result with
//! `is_error`, its message saying what to do.
//!
//! The registry ([`ToolRegistry`]) reads its folders again when their files' stamps change: a
//! file that stops loading keeps its last good definition served and is reported with its
//! `file:line:col`; a name may be taken once, and never one of promptd's own tools. The
//! composer's tools block lists the definitions this registry serves. [`invocation`] reads the
//! reply shape of models without native tool calling.

pub mod definition;
pub mod functions;
pub mod http;
pub mod invocation;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Map, Value, json};

pub use definition::{DefinedTool, Execution};
pub use http::HttpSettings;
pub use invocation::{Invocation, InvocationError, parse_invocation};

use definition::{TOOLS_DIR, ToolIssue};

/// The config section of tool settings.
pub const SECTION: &str = "tools";

/// The `tools` settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ToolsSettings {
    /// More folders of definitions, after `<server dir>/.promptd/tools` (relative paths from the
    /// server's directory).
    pub folders: Vec<PathBuf>,
    pub http: HttpSettings,
    /// Arguments larger than this (as JSON) are refused.
    pub max_input_bytes: usize,
    /// Whether the studio may call `http` tools (its form calls predefined functions only
    /// otherwise).
    pub studio_calls_http: bool,
}

impl ToolsSettings {
    /// Whether the studio may call `tool`: a predefined function always, an `http` tool only
    /// with `tools.studioCallsHttp`.
    pub fn studio_may_call(&self, tool: &DefinedTool) -> bool {
        self.studio_calls_http || !matches!(tool.execution, Execution::Http(_))
    }
}

impl Default for ToolsSettings {
    fn default() -> ToolsSettings {
        ToolsSettings {
            folders: Vec::new(),
            http: HttpSettings::default(),
            max_input_bytes: 256 * 1024,
            studio_calls_http: false,
        }
    }
}

/// The definitions served now, and the files that did not load.
#[derive(Debug, Default)]
pub struct ServedTools {
    pub tools: Vec<DefinedTool>,
    pub issues: Vec<ToolIssue>,
    /// The folders read, in order.
    pub folders: Vec<PathBuf>,
}

impl ServedTools {
    pub fn find(&self, name: &str) -> Option<&DefinedTool> {
        self.tools.iter().find(|t| t.name() == name)
    }
}

/// One file's stamp: size, modification time.
type Stamp = (PathBuf, u64, Option<SystemTime>);

#[derive(Default)]
struct RegistryState {
    stamps: Option<Vec<Stamp>>,
    last_good: HashMap<PathBuf, DefinedTool>,
    served: Arc<ServedTools>,
}

/// The `tools` section of one config, parsed once.
type ParsedSettings = (
    Arc<promptd_base::config::ProjectConfig>,
    Result<Arc<ToolsSettings>, ToolCallError>,
);

/// The served definitions, read again when their files change, and the `tools` settings of the
/// config last seen (parsed again only when the config changes).
#[derive(Default)]
pub struct ToolRegistry {
    state: Mutex<RegistryState>,
    settings: Mutex<Option<ParsedSettings>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry").finish_non_exhaustive()
    }
}

/// The names promptd's own tools take.
pub fn reserved_names() -> Vec<&'static str> {
    crate::catalog::catalog().iter().map(|t| t.name).collect()
}

/// The definition files of `folders`: each folder's `*.json`, sorted by name.
pub fn definition_files(folders: &[PathBuf]) -> (Vec<PathBuf>, Vec<ToolIssue>) {
    let mut files = Vec::new();
    let mut issues = Vec::new();
    for dir in folders {
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                let mut here: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
                    .collect();
                here.sort();
                files.extend(here);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => issues.push(ToolIssue::new(
                dir.display().to_string(),
                format!("cannot list folder: {e}"),
            )),
        }
    }
    (files, issues)
}

/// A path as users see it: relative to `base` when inside it.
pub fn shown_path(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

impl ToolRegistry {
    /// The definitions served now.
    pub fn served(&self) -> Arc<ServedTools> {
        self.lock().served.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads `folders` again when a file's stamp changed (or a file came or went); returns
    /// whether the served definitions changed (a new issue alone is logged, not a change).
    /// `base` is the folder paths are shown relative to.
    pub fn reload(&self, folders: &[PathBuf], base: &Path) -> bool {
        let (files, mut issues) = definition_files(folders);
        let stamps: Vec<Stamp> = files
            .iter()
            .map(|f| {
                let meta = std::fs::metadata(f).ok();
                (
                    f.clone(),
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                )
            })
            .collect();
        let mut state = self.lock();
        if state.stamps.as_ref() == Some(&stamps) && state.served.folders == folders {
            return false;
        }
        let reserved = reserved_names();
        let mut tools: Vec<DefinedTool> = Vec::new();
        let mut last_good = HashMap::new();
        for file in &files {
            let shown = shown_path(file, base);
            let loaded = match definition::load_file(file, &shown, &reserved) {
                Ok(tool) => Some(tool),
                Err(e) => {
                    let kept = state.last_good.get(file).cloned();
                    let reason = if kept.is_some() {
                        format!("{}; its last good version is still served", e.problem)
                    } else {
                        e.problem.to_string()
                    };
                    issues.push(ToolIssue {
                        path: e.path,
                        line: Some(e.line),
                        column: Some(e.column),
                        reason,
                    });
                    kept
                }
            };
            let Some(tool) = loaded else { continue };
            if let Some(first) = tools.iter().find(|t| t.name() == tool.name()) {
                issues.push(ToolIssue::new(
                    shown,
                    format!(
                        "duplicate tool name `{}` (first defined in {})",
                        tool.name(),
                        first.path()
                    ),
                ));
                continue;
            }
            last_good.insert(file.clone(), tool.clone());
            tools.push(tool);
        }
        if state.served.issues != issues {
            for issue in &issues {
                tracing::warn!("tool definition {issue}");
            }
        }
        let changed = {
            let before = &state.served;
            before.tools.len() != tools.len()
                || before
                    .tools
                    .iter()
                    .zip(&tools)
                    .any(|(a, b)| a.definition != b.definition)
        };
        state.stamps = Some(stamps);
        state.last_good = last_good;
        state.served = Arc::new(ServedTools {
            tools,
            issues,
            folders: folders.to_vec(),
        });
        changed
    }
}

/// Why a tool call did not run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolCallError {
    #[error("unknown tool `{name}`")]
    Unknown { name: String },
    /// The arguments do not fit the tool (the field is a JSON pointer, empty for the whole).
    #[error("{tool}: `{field}`: {message}")]
    Input {
        tool: String,
        field: String,
        message: String,
    },
    /// The tool may not be called from where the call came (the studio and an `http` tool
    /// without `tools.studioCallsHttp`).
    #[error("{tool}: {message}")]
    Refused { tool: String, message: String },
    /// A server fault: a config section that does not parse, a guard that cannot start.
    #[error("{tool}: {message}")]
    Server { tool: String, message: String },
}

impl ToolCallError {
    /// Whether the caller is at fault (JSON-RPC -32602), not the server (-32603).
    pub fn is_caller_error(&self) -> bool {
        !matches!(self, ToolCallError::Server { .. })
    }
}

/// A tool call's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    /// The answer as text (a string answer as is, anything else as compact JSON), or the
    /// failure's message.
    pub text: String,
    /// The answer as an object: itself when it is one, else `{"result": answer}`; `None` for a
    /// failure.
    pub structured: Option<Value>,
    pub is_error: bool,
    /// What the guard redacted, and other notes; also appended to `text`.
    pub warnings: Vec<String>,
}

impl ToolOutcome {
    fn failed(message: String) -> ToolOutcome {
        ToolOutcome {
            text: message,
            structured: None,
            is_error: true,
            warnings: Vec::new(),
        }
    }
}

/// A schema violation as (field, message): the field as a JSON pointer (empty for the whole
/// input). A missing required property names the property itself, not the object that lacks it.
pub(crate) fn input_error(e: &jsonschema::ValidationError<'_>) -> (String, String) {
    let mut path = e.instance_path().to_string();
    if let jsonschema::error::ValidationErrorKind::Required {
        property: Value::String(property),
    } = e.kind()
    {
        path.push('/');
        path.push_str(&property.replace('~', "~0").replace('/', "~1"));
    }
    (path, e.to_string())
}

/// The output schema a client is shown: an object schema only (MCP's requirement).
pub fn listed_output_schema(tool: &DefinedTool) -> Option<&Map<String, Value>> {
    tool.definition
        .output_schema
        .as_ref()
        .filter(|s| s.get("type").and_then(Value::as_str) == Some("object"))
        .and_then(Value::as_object)
}

/// An answer as text and structured content.
fn outcome(answer: Value, warnings: Vec<String>) -> ToolOutcome {
    let mut text = match &answer {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for w in &warnings {
        text.push_str("\n\n[promptd] ");
        text.push_str(w);
    }
    let structured = match answer {
        Value::Object(_) => answer,
        other => json!({ "result": other }),
    };
    ToolOutcome {
        text,
        structured: Some(structured),
        is_error: false,
        warnings,
    }
}

impl crate::Stages {
    /// The `tools` settings of the current snapshot: parsed when the section changes, not per
    /// call or poll.
    pub fn tools_settings(&self) -> Result<Arc<ToolsSettings>, ToolCallError> {
        let config = self.library().snapshot().config.clone();
        let mut kept = self
            .tools
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, parsed)) = kept.as_mut()
            && (Arc::ptr_eq(seen, &config) || seen.raw.get(SECTION) == config.raw.get(SECTION))
        {
            *seen = config;
            return parsed.clone();
        }
        let parsed = config
            .section_as::<ToolsSettings>(SECTION)
            .map(Arc::new)
            .map_err(|message| ToolCallError::Server {
                tool: SECTION.into(),
                message,
            });
        *kept = Some((config, parsed.clone()));
        parsed
    }

    /// The folders definitions are read from: the server's `.promptd/tools`, then
    /// `tools.folders` of `settings` (none when the section does not parse).
    fn tool_folders(&self, settings: Option<&ToolsSettings>) -> Vec<PathBuf> {
        let cwd = self.library().cwd();
        let mut folders = vec![cwd.join(TOOLS_DIR)];
        if let Some(settings) = settings {
            folders.extend(settings.folders.iter().map(|f| cwd.join(f)));
        }
        folders
    }

    /// Reads the definitions again if their files changed; whether what is served changed.
    pub fn reload_tools(&self) -> bool {
        let settings = self.tools_settings().ok();
        let folders = self.tool_folders(settings.as_deref());
        self.tools.reload(&folders, self.library().cwd())
    }

    /// The definitions served now (read on first use).
    pub fn served_tools(&self) -> Arc<ServedTools> {
        let served = self.tools.served();
        if served.folders.is_empty() {
            self.reload_tools();
            return self.tools.served();
        }
        served
    }

    /// Reads the definition folders, then polls them every `every` and calls `changed` when
    /// what is served changed; stops when the returned task is aborted.
    pub fn watch_tools<F, Fut>(
        self: &Arc<Self>,
        every: std::time::Duration,
        changed: F,
    ) -> tokio::task::JoinHandle<()>
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let stages = Arc::clone(self);
        tokio::spawn(async move {
            // What is served at start is no change.
            let first = stages.clone();
            crate::blocking(move || first.reload_tools()).await;
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let s = stages.clone();
                if crate::blocking(move || s.reload_tools()).await {
                    changed().await;
                }
            }
        })
    }

    /// The HTTP client of `settings` (kept while the settings stay the same).
    fn http_executor(&self, settings: &HttpSettings) -> http::HttpExecutor {
        let mut kept = self.http.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = kept.as_ref().filter(|e| e.settings() == settings) {
            return e.clone();
        }
        let built = http::HttpExecutor::new(settings.clone());
        *kept = Some(built.clone());
        built
    }

    /// Calls the served tool `name` with `args` for `caller`: checked against its input
    /// schema, executed, its answer guarded and checked against its output schema.
    pub async fn call_tool(
        self: &Arc<Self>,
        name: &str,
        args: Map<String, Value>,
        caller: crate::Caller,
    ) -> Result<ToolOutcome, ToolCallError> {
        self.call_served(name, args, caller, false).await
    }

    /// Calls `name` for the studio's form: as [`call_tool`](Self::call_tool), except that an
    /// `http` tool is refused unless `tools.studioCallsHttp` allows it
    /// ([`ToolsSettings::studio_may_call`]).
    pub async fn call_tool_from_studio(
        self: &Arc<Self>,
        name: &str,
        args: Map<String, Value>,
        caller: crate::Caller,
    ) -> Result<ToolOutcome, ToolCallError> {
        self.call_served(name, args, caller, true).await
    }

    /// The served tool `name` run for `caller`; from the studio only what
    /// [`ToolsSettings::studio_may_call`] allows.
    async fn call_served(
        self: &Arc<Self>,
        name: &str,
        args: Map<String, Value>,
        caller: crate::Caller,
        from_studio: bool,
    ) -> Result<ToolOutcome, ToolCallError> {
        let served = self.served_tools();
        let Some(tool) = served.find(name) else {
            return Err(ToolCallError::Unknown { name: name.into() });
        };
        let settings = self.tools_settings()?;
        if from_studio && !settings.studio_may_call(tool) {
            return Err(ToolCallError::Refused {
                tool: name.into(),
                message: "an `http` tool is called from the studio only when the config allows \
                          it: set `tools.studioCallsHttp` to `true` in the config file (MCP \
                          clients and `promptd tools call` are not affected)"
                    .into(),
            });
        }
        self.run_tool(tool, &settings, args, caller).await
    }

    /// Runs `tool` under `settings`: the arguments capped and checked, the execution, the
    /// guard, the output schema.
    async fn run_tool(
        self: &Arc<Self>,
        tool: &DefinedTool,
        settings: &ToolsSettings,
        args: Map<String, Value>,
        caller: crate::Caller,
    ) -> Result<ToolOutcome, ToolCallError> {
        let name = tool.name();
        let input_error_of = |field: String, message: String| ToolCallError::Input {
            tool: name.into(),
            field,
            message,
        };
        let args = Value::Object(args);
        let size = args.to_string().len();
        if size > settings.max_input_bytes {
            return Err(input_error_of(
                String::new(),
                format!(
                    "the arguments are {size} bytes of JSON, over the limit of {} \
                     (tools.maxInputBytes)",
                    settings.max_input_bytes
                ),
            ));
        }
        if let Err(e) = tool.input.validate(&args) {
            let (field, message) = input_error(&e);
            return Err(input_error_of(field, message));
        }
        let Value::Object(args) = args else {
            return Err(input_error_of(String::new(), "must be an object".into()));
        };
        let answer = match &tool.execution {
            Execution::Http(request) => {
                let executor = self.http_executor(&settings.http);
                match executor.execute(request, &args).await {
                    Ok(answer) => {
                        let json = answer
                            .content_type
                            .as_deref()
                            .is_some_and(|c| c.contains("json"));
                        match json.then(|| serde_json::from_str::<Value>(&answer.body)) {
                            Some(Ok(v)) => v,
                            Some(Err(e)) => {
                                return Ok(ToolOutcome::failed(format!(
                                    "{name}: the answer says it is JSON but does not parse: {e}"
                                )));
                            }
                            None => Value::String(answer.body),
                        }
                    }
                    Err(http::HttpFailure::Input { field, message }) => {
                        return Err(input_error_of(format!("/{field}"), message));
                    }
                    Err(http::HttpFailure::Failed(message)) => {
                        // The message may quote the target's error body: guarded too.
                        let (text, _) = self
                            .guard_answer(name, Value::String(format!("{name}: {message}")))
                            .await?;
                        let text = match text {
                            Value::String(t) => t,
                            other => other.to_string(),
                        };
                        return Ok(ToolOutcome::failed(text));
                    }
                }
            }
            Execution::Function(function) => {
                let stages = Arc::clone(self);
                let call = function.call;
                let input = Value::Object(args);
                let answer = crate::blocking(move || {
                    call(
                        &functions::FunctionContext {
                            stages: &stages,
                            caller: &caller,
                        },
                        &input,
                    )
                })
                .await;
                match answer {
                    Ok(v) => v,
                    Err(message) => return Ok(ToolOutcome::failed(format!("{name}: {message}"))),
                }
            }
        };
        let (answer, warnings) = self.guard_answer(name, answer).await?;
        if let Some(output) = &tool.output
            && let Err(e) = output.validate(&answer)
        {
            let (field, message) = input_error(&e);
            return Ok(ToolOutcome::failed(format!(
                "{name}: the answer does not match the tool's outputSchema at `{field}`: \
                 {message}; the tool definition or its target needs fixing"
            )));
        }
        Ok(outcome(answer, warnings))
    }

    /// Scans an answer for secrets; a secret found is redacted and named in a warning.
    async fn guard_answer(
        &self,
        name: &str,
        answer: Value,
    ) -> Result<(Value, Vec<String>), ToolCallError> {
        let snap = self.library().snapshot();
        let server = |message: String| ToolCallError::Server {
            tool: name.into(),
            message,
        };
        let guard = self
            .guard(&snap)
            .map_err(|e| server(e.to_string()))?
            .map_err(|e| server(format!("the secret guard cannot start: {e}")))?;
        let text = match &answer {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let label = format!("tool:{name}");
        let scanned = text.clone();
        let report = guard
            .scan_async(vec![promptd_guard::ScanInput::new(label, scanned)])
            .await
            .map_err(|e| server(format!("the secret guard failed: {e}")))?;
        if report.is_clean() {
            return Ok((answer, Vec::new()));
        }
        let redacted = guard.redact(&text, &report.findings);
        let rules: Vec<String> = report
            .findings
            .iter()
            .map(|f| format!("{} at line {}", f.rule_id, f.line))
            .collect();
        let warning = format!(
            "possible secret(s) in the answer were redacted: {}",
            rules.join(", ")
        );
        let answer = match answer {
            Value::String(_) => Value::String(redacted),
            _ => serde_json::from_str(&redacted).unwrap_or(Value::String(redacted)),
        };
        Ok((answer, vec![warning]))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use promptd_core::library::{LibraryOptions, PromptLibrary};
    use promptd_core::registry::{BuiltinSource, PromptSource};

    #[test]
    fn the_tools_section_is_parsed_when_it_changes_not_per_poll_or_call() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".ado-mcp-config.json");
        std::fs::write(&config, r#"{"tools": {"maxInputBytes": 1000}}"#).unwrap();
        let roots: Vec<Arc<dyn PromptSource>> = vec![Arc::new(BuiltinSource)];
        let options = LibraryOptions {
            cwd: dir.path().to_path_buf(),
            ..Default::default()
        };
        let library = Arc::new(PromptLibrary::open_with_roots(options, roots).unwrap());
        let stages = crate::Stages::new(library.clone()).unwrap();
        let first = stages.tools_settings().unwrap();
        assert_eq!(first.max_input_bytes, 1000);
        for _ in 0..3 {
            stages.reload_tools();
        }
        // A poll reads the settings parsed before: the same value, not a new parse.
        assert!(Arc::ptr_eq(&first, &stages.tools_settings().unwrap()));
        // Another section changing keeps them too.
        std::fs::write(
            &config,
            r#"{"tools": {"maxInputBytes": 1000}, "project": "p"}"#,
        )
        .unwrap();
        library.reload();
        assert!(Arc::ptr_eq(&first, &stages.tools_settings().unwrap()));
        // The section changing is read again, once.
        std::fs::write(&config, r#"{"tools": {"maxInputBytes": 2000}}"#).unwrap();
        library.reload();
        let changed = stages.tools_settings().unwrap();
        assert_eq!(changed.max_input_bytes, 2000);
        stages.reload_tools();
        assert!(Arc::ptr_eq(&changed, &stages.tools_settings().unwrap()));
    }

    pub(crate) fn stages() -> crate::Stages {
        let dir = std::env::temp_dir();
        let roots: Vec<Arc<dyn PromptSource>> = vec![Arc::new(BuiltinSource)];
        let options = LibraryOptions {
            cwd: dir,
            ..Default::default()
        };
        let library = Arc::new(PromptLibrary::open_with_roots(options, roots).unwrap());
        crate::Stages::new(library).unwrap()
    }
}
