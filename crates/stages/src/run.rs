//! Runs: a prompt rendered as `get` renders it, its messages sent to the configured model
//! (the LLM client and configuration `enhance` uses, streamed), and the exchange recorded.
//!
//! A run is one JSON file under the project's `.promptd/runs/` ([`RunStore`]), a folder that
//! ignores itself for git (its `.gitignore` holds `*`). The file holds what makes the run
//! reproducible and comparable: the prompt's name and version hash, the arguments, the model and
//! its settings, the messages sent, the answer (or why there is none), the token counts and the
//! timings. The model settings come from the prompt's frontmatter ([`ModelSettings::of_prompt`]:
//! a `model:` name, Prompty's `model` section, Dotprompt's `model` and `config`), a caller's
//! choice winning. The API key stays in the client: it is in no record and no event.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::{ChatClient, ChatMessage, ModelSettings};
use promptd_core::compare::RenderedVariant;
use promptd_core::library::{Snapshot, Visibility};
use promptd_core::registry::PromptTemplate;
use promptd_core::render::{Clock, PromptMessage, RenderError};

/// Where runs are recorded, under the project folder.
pub const RUNS_DIR: &str = ".promptd/runs";
/// The most runs [`RunStore::list`] reads for one prompt (the newest).
pub const RUNS_LISTED: usize = 50;

/// Why a run could not start or be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Version(#[from] promptd_core::versions::VersionError),
    #[error("no model is configured: set LLM_BASE_URL and LLM_MODEL (as for enhance)")]
    NotConfigured,
    #[error("cannot record the run in {path}: {source}")]
    Record {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    /// Whether the caller is at fault (an unknown prompt, a bad argument).
    pub fn is_caller_error(&self) -> bool {
        match self {
            RunError::Render(e) => e.is_caller_error(),
            RunError::Version(e) => e.is_caller_error(),
            _ => false,
        }
    }
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// `NAME`, or `NAME@REV` for the prompt as of a git revision.
    pub prompt: String,
    /// As `get` takes them (strings are coerced to the declared types).
    pub arguments: Map<String, Value>,
    /// Settings that win over the prompt's frontmatter.
    pub settings: ModelSettings,
}

/// One recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// The file name's stem: the start time and a short hash, sortable by time.
    pub id: String,
    pub prompt: String,
    /// The git revision the prompt was read at (`NAME@REV`); none for the working copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub version_hash: String,
    pub arguments: Map<String, Value>,
    /// The model that answered (as the gateway names it), else the one asked for.
    pub model: String,
    pub settings: ModelSettings,
    pub messages: Vec<ChatMessage>,
    /// Empty when the call failed.
    pub answer: String,
    pub error: Option<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The counts are promptd's (`tokens`), not the gateway's: it reported none.
    pub tokens_estimated: bool,
    /// Request sent → first byte of the answer.
    pub first_byte_ms: f64,
    /// Request sent → end of the answer.
    pub latency_ms: f64,
}

impl ModelSettings {
    /// The model settings a prompt's frontmatter declares: `model: NAME`; Prompty's
    /// `model: {configuration: {name | azure_deployment | model}, parameters: {temperature,
    /// max_tokens}}` (or `id` and `options`); Dotprompt's `config: {temperature,
    /// maxOutputTokens}`.
    pub fn of_prompt(prompt: &PromptTemplate) -> ModelSettings {
        let meta = &prompt.metadata;
        let text = |v: &Value| {
            v.as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let mut out = ModelSettings::default();
        match meta.get("model") {
            Some(v @ Value::String(_)) => out.model = text(v),
            Some(Value::Object(m)) => {
                let conf = m.get("configuration").cloned().unwrap_or_default();
                out.model = ["name", "azure_deployment", "model", "id"]
                    .iter()
                    .find_map(|k| conf.get(k).and_then(text))
                    .or_else(|| m.get("id").and_then(text))
                    .or_else(|| m.get("name").and_then(text));
                for section in ["parameters", "options"] {
                    let Some(p) = m.get(section) else { continue };
                    out.temperature = out.temperature.or(p["temperature"].as_f64());
                    out.max_tokens = out.max_tokens.or(p["max_tokens"].as_u64());
                }
            }
            _ => {}
        }
        if let Some(c) = meta.get("config") {
            out.temperature = out.temperature.or(c["temperature"].as_f64());
            out.max_tokens = out.max_tokens.or(c["maxOutputTokens"].as_u64());
        }
        out
    }

    /// `self`, with each setting `over` has replacing it.
    pub fn overridden_by(&self, over: &ModelSettings) -> ModelSettings {
        ModelSettings {
            model: over.model.clone().or_else(|| self.model.clone()),
            temperature: over.temperature.or(self.temperature),
            max_tokens: over.max_tokens.or(self.max_tokens),
        }
    }
}

/// A prompt rendered for a run, before the model is called.
#[derive(Debug, Clone)]
pub struct PreparedRun {
    pub prompt: String,
    pub revision: Option<String>,
    pub version_hash: String,
    pub arguments: Map<String, Value>,
    pub settings: ModelSettings,
    pub messages: Vec<ChatMessage>,
}

/// Renders `req.prompt` (one `visibility` serves) from `snapshot` for a run.
pub fn prepare(
    snapshot: &Snapshot,
    req: &RunRequest,
    visibility: Visibility,
    clock: &Clock,
) -> Result<PreparedRun, RunError> {
    let prompt =
        snapshot
            .visible(&req.prompt, visibility)
            .ok_or_else(|| RenderError::UnknownPrompt {
                name: req.prompt.clone(),
            })?;
    let rendered = snapshot.render_template(prompt, &req.arguments, clock)?;
    Ok(PreparedRun::of(
        prompt,
        None,
        &req.arguments,
        &req.settings,
        rendered.messages,
    ))
}

/// The run of a variant already rendered ([`render_variant`]): what [`prepare`] makes of the
/// same prompt, arguments and settings, without rendering it again.
///
/// [`render_variant`]: promptd_core::compare::render_variant
pub fn prepare_rendered(variant: &RenderedVariant, settings: &ModelSettings) -> PreparedRun {
    let render = &variant.render;
    PreparedRun::of(
        &render.prompt,
        render.revision.clone(),
        &variant.arguments,
        settings,
        render.messages.clone(),
    )
}

impl PreparedRun {
    /// The run of `prompt` (read at `revision`) rendered as `messages` from `arguments`, with
    /// the caller's `settings` over the frontmatter's.
    fn of(
        prompt: &PromptTemplate,
        revision: Option<String>,
        arguments: &Map<String, Value>,
        settings: &ModelSettings,
        messages: Vec<PromptMessage>,
    ) -> PreparedRun {
        PreparedRun {
            prompt: prompt.name.clone(),
            revision,
            version_hash: prompt.version_hash.clone(),
            arguments: arguments.clone(),
            settings: ModelSettings::of_prompt(prompt).overridden_by(settings),
            messages: messages.into_iter().map(chat_message).collect(),
        }
    }
}

/// A rendered message as the model gets it: a system section (a user message that starts with
/// its marker, as MCP has no system role) becomes a system message without the marker.
fn chat_message(m: PromptMessage) -> ChatMessage {
    match promptd_core::render::system_section(&m) {
        Some(text) => ChatMessage {
            role: "system".into(),
            content: text.to_string(),
        },
        None => ChatMessage {
            role: m.role,
            content: m.text,
        },
    }
}

/// Calls the model with a prepared run, streaming each piece of the answer to `on_text`; the
/// record (not yet saved) says what happened, a failed call included.
pub async fn call(
    llm: &ChatClient,
    run: PreparedRun,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> RunRecord {
    let started = chrono::Utc::now();
    let answer = llm.stream(&run.messages, &run.settings, on_text).await;
    let model = llm.model_for(&run.settings).to_string();
    let id = {
        let stamp = started.format("%Y%m%dT%H%M%S%.3fZ");
        static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = format!("{stamp}{}{}{n}", run.prompt, std::process::id());
        let hash = promptd_core::registry::content_hash(
            format!(
                "{seed}{}",
                serde_json::to_string(&run.arguments).unwrap_or_default()
            )
            .as_bytes(),
        );
        format!("{stamp}-{}", &hash[..8])
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (answer, error, usage, model, first_byte, total) = match answer {
        Ok(a) => (
            a.text,
            None,
            a.usage,
            a.model,
            ms(a.first_byte),
            ms(a.total),
        ),
        Err(e) => (String::new(), Some(e.to_string()), None, model, 0.0, 0.0),
    };
    let (tokens_in, tokens_out, estimated) = match usage {
        Some(u) => (u.prompt_tokens, u.completion_tokens, false),
        None => (
            promptd_base::tokens::count_tokens(&sent_text(&run.messages)) as u64,
            promptd_base::tokens::count_tokens(&answer) as u64,
            true,
        ),
    };
    RunRecord {
        id,
        prompt: run.prompt,
        revision: run.revision,
        version_hash: run.version_hash,
        arguments: run.arguments,
        model,
        settings: run.settings,
        messages: run.messages,
        answer,
        error,
        started_at: started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        tokens_in,
        tokens_out,
        tokens_estimated: estimated,
        first_byte_ms: first_byte,
        latency_ms: total,
    }
}

/// The text sent, as counted when the gateway reports no usage: the messages, a line apart.
pub fn sent_text(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The runs of one project: `<project>/.promptd/runs/<prompt>/<id>.json`.
#[derive(Debug, Clone)]
pub struct RunStore {
    dir: PathBuf,
}

impl RunStore {
    /// The runs of the project at `project`.
    pub fn for_project(project: &Path) -> RunStore {
        RunStore {
            dir: project.join(RUNS_DIR),
        }
    }

    /// The folder runs are recorded in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder of `prompt`'s runs: its name with every character but letters, digits, `.`,
    /// `_` and `-` written as `_` (a `:` namespace included).
    fn prompt_dir(&self, prompt: &str) -> PathBuf {
        let safe: String = prompt
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let safe = safe.trim_start_matches('.');
        self.dir.join(if safe.is_empty() { "_" } else { safe })
    }

    /// Writes `run`; the first run also writes the folder's `.gitignore`.
    pub fn save(&self, run: &RunRecord) -> Result<PathBuf, RunError> {
        let fail = |path: &Path| {
            let path = path.display().to_string();
            move |source| RunError::Record { path, source }
        };
        promptd_base::filesystem::create_ignored_dir(
            &self.dir,
            "# promptd's recorded runs: local, never committed.\n*\n",
        )
        .map_err(fail(&self.dir))?;
        let folder = self.prompt_dir(&run.prompt);
        std::fs::create_dir_all(&folder).map_err(fail(&folder))?;
        let path = folder.join(format!("{}.json", run.id));
        let json = serde_json::to_string_pretty(run).unwrap_or_default();
        std::fs::write(&path, json + "\n").map_err(fail(&path))?;
        Ok(path)
    }

    /// The run `id` of `prompt`; `None` when there is none (or `id` is not a run id: letters,
    /// digits, `.` and `-` only, so it names a file of the prompt's folder and nothing else).
    pub fn get(&self, prompt: &str, id: &str) -> Option<RunRecord> {
        let safe = !id.is_empty()
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
        if !safe {
            return None;
        }
        let path = self.prompt_dir(prompt).join(format!("{id}.json"));
        let bytes = promptd_base::limits::read_text_capped(&path, 64 << 20, "runs").ok()?;
        serde_json::from_str::<RunRecord>(&bytes)
            .ok()
            .filter(|r| r.prompt == prompt && r.id == id)
    }

    /// The newest [`RUNS_LISTED`] runs of `prompt`, newest first; a file that does not parse is
    /// skipped.
    pub fn list(&self, prompt: &str) -> Vec<RunRecord> {
        let Ok(entries) = std::fs::read_dir(self.prompt_dir(prompt)) else {
            return Vec::new();
        };
        let mut names: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        names.reverse();
        names
            .into_iter()
            .take(RUNS_LISTED)
            .filter_map(|p| serde_json::from_slice::<RunRecord>(&std::fs::read(p).ok()?).ok())
            .filter(|r| r.prompt == prompt)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_folders_are_safe_names() {
        let store = RunStore::for_project(Path::new("/p"));
        assert_eq!(
            store.prompt_dir("team:review"),
            Path::new("/p/.promptd/runs/team_review")
        );
        assert_eq!(store.prompt_dir("../x"), Path::new("/p/.promptd/runs/_x"));
        assert_eq!(store.prompt_dir(".."), Path::new("/p/.promptd/runs/_"));
    }

    #[test]
    fn a_run_is_read_back_by_its_id_and_an_id_that_is_a_path_reads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::for_project(dir.path());
        let record = RunRecord {
            id: "20261202T000000.000Z-0123abcd".into(),
            prompt: "team:review".into(),
            revision: Some("v1".into()),
            version_hash: "h".into(),
            arguments: Map::new(),
            model: "m".into(),
            settings: ModelSettings::default(),
            messages: Vec::new(),
            answer: "ok".into(),
            error: None,
            started_at: "2026-12-02T00:00:00.000Z".into(),
            tokens_in: 1,
            tokens_out: 1,
            tokens_estimated: true,
            first_byte_ms: 1.0,
            latency_ms: 2.0,
        };
        store.save(&record).unwrap();
        assert_eq!(store.get("team:review", &record.id), Some(record.clone()));
        assert_eq!(store.get("other", &record.id), None);
        std::fs::write(dir.path().join(".promptd/x.json"), "{}").unwrap();
        for id in ["../x", "..", "", "/etc/passwd", "a/b"] {
            assert_eq!(store.get("team:review", id), None, "{id}");
        }
    }

    fn settings_of(path: &str, text: &str) -> ModelSettings {
        let t = promptd_core::registry::parse_prompt_file(
            text,
            path,
            path,
            promptd_core::registry::PromptCategory::User,
        )
        .unwrap();
        ModelSettings::of_prompt(&t)
    }

    #[test]
    fn the_frontmatter_names_the_model_in_each_tools_way() {
        let s = settings_of("a.md", "---\nmodel: GPT-4o\n---\nHi\n");
        assert_eq!(s.model.as_deref(), Some("GPT-4o"));
        let s = settings_of(
            "b.prompty",
            "---\nname: B\nmodel:\n  api: chat\n  configuration:\n    type: azure_openai\n    \
             azure_deployment: gpt-35-turbo\n  parameters:\n    temperature: 0.3\n    \
             max_tokens: 200\n---\nuser:\nHi\n",
        );
        assert_eq!(s.model.as_deref(), Some("gpt-35-turbo"));
        assert_eq!(s.temperature, Some(0.3));
        assert_eq!(s.max_tokens, Some(200));
        let s = settings_of(
            "c.prompt",
            "---\nmodel: googleai/gemini-2.0-flash\nconfig:\n  temperature: 0.9\n  \
             maxOutputTokens: 50\n---\nHi\n",
        );
        assert_eq!(s.model.as_deref(), Some("googleai/gemini-2.0-flash"));
        assert_eq!((s.temperature, s.max_tokens), (Some(0.9), Some(50)));
        assert_eq!(settings_of("d.md", "Hi\n"), ModelSettings::default());
    }

    #[test]
    fn a_system_section_reaches_the_model_as_a_system_message() {
        let messages = promptd_core::render::split_roles(
            "<!-- role: system -->\nBe brief.\n<!-- role: user -->\nHi <!-- role: system --> there\n",
            true,
        );
        let sent: Vec<(String, String)> = messages
            .into_iter()
            .map(chat_message)
            .map(|m| (m.role, m.content))
            .collect();
        assert_eq!(
            sent,
            vec![
                ("system".to_string(), "Be brief.".to_string()),
                ("user".into(), "Hi".into()),
                ("system".into(), "there".into()),
            ]
        );
        // A user's text that only mentions the marker later stays the user's.
        let m = PromptMessage {
            role: "user".into(),
            text: "See <!-- role: system --> here".into(),
        };
        assert_eq!(chat_message(m).role, "user");
        // Dotprompt writes the marker with the text right after it.
        let m = PromptMessage {
            role: "user".into(),
            text: "<!-- role: system -->Be kind.\n".into(),
        };
        let sent = chat_message(m);
        assert_eq!(
            (sent.role.as_str(), sent.content.as_str()),
            ("system", "Be kind.\n")
        );
    }

    #[test]
    fn a_rendered_variant_runs_as_its_request_would() {
        let dir = tempfile::tempdir().unwrap();
        let prompts = dir.path().join("prompts");
        std::fs::create_dir(&prompts).unwrap();
        std::fs::write(
            prompts.join("ask.md"),
            "---\nroles: true\nmodel: front-model\narguments:\n  \
             question: { required: true }\n---\n<!-- role: system -->\nBe brief.\n\
             <!-- role: user -->\n{{ question }}\n",
        )
        .unwrap();
        let options = promptd_core::library::LibraryOptions {
            prompt_dirs: vec![prompts],
            cwd: dir.path().to_path_buf(),
            no_discover: true,
            no_builtin_prompts: true,
            ..Default::default()
        };
        let library = promptd_core::library::PromptLibrary::open(options).unwrap();
        let mut arguments = Map::new();
        arguments.insert("question".into(), Value::String("Why?".into()));
        let settings = ModelSettings {
            model: Some("asked-model".into()),
            ..ModelSettings::default()
        };
        let variant =
            promptd_core::compare::render_variant(&library, "ask", &arguments, Visibility::All)
                .unwrap();
        let once = prepare_rendered(&variant, &settings);
        let req = RunRequest {
            prompt: "ask".into(),
            arguments,
            settings,
        };
        let again = prepare(&library.snapshot(), &req, Visibility::All, library.clock()).unwrap();
        assert_eq!(
            (
                &once.prompt,
                &once.revision,
                &once.version_hash,
                &once.arguments
            ),
            (
                &again.prompt,
                &again.revision,
                &again.version_hash,
                &again.arguments
            )
        );
        assert_eq!(once.settings, again.settings);
        assert_eq!(once.settings.model.as_deref(), Some("asked-model"));
        assert_eq!(once.messages, again.messages);
        assert_eq!(once.messages[0].role, "system");
    }

    #[test]
    fn a_caller_setting_wins_over_the_frontmatter() {
        let front = ModelSettings {
            model: Some("a".into()),
            temperature: Some(0.1),
            max_tokens: None,
        };
        let over = ModelSettings {
            model: Some("b".into()),
            ..ModelSettings::default()
        };
        let s = front.overridden_by(&over);
        assert_eq!(s.model.as_deref(), Some("b"));
        assert_eq!(s.temperature, Some(0.1));
    }
}
