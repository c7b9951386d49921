//! enhance_prompt: rewrite a developer's request into an execution-ready prompt, grounded in
//! their repository.
//!
//! [`Enhancer::enhance`] takes a [`ValidatedRequest`] (its paths checked against the workspace by
//! `stages`) and runs: scan the prompt (guard) → retrieve context (active file as primary target,
//! the rest reference only) → scan the retrieved context → render the registry template
//! `enhance_prompt` with the stage outputs as variables → LLM → result. The rewrite itself is an
//! ordinary registry template, so a user folder can shadow it. Retrieval is reached through the
//! [`ContextRetriever`] trait, so this module knows nothing of the retrieval index.
//!
//! Failure semantics: a secret in the prompt or the context, or a scanner failure, **blocks** —
//! no request reaches the LLM; the result names the rule ids and locations (redacted). An LLM
//! that is not configured, fails, times out or answers garbage yields the **original** prompt
//! with a warning saying why. A failed retrieval is a warning. A rewrite template that does not
//! render is an [`EnhanceError`]: the server's prompt folders are broken, not the request.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::ChatClient;
use promptd_base::tokens::count_tokens;
use promptd_base::workspace::Workspace;
use promptd_core::library::Snapshot;
use promptd_core::render::Clock;
use promptd_core::render::RenderError;
use promptd_guard::{Guard, GuardError, ScanInput, SecretFinding};

/// Registry name of the rewrite template.
pub const TEMPLATE: &str = "enhance_prompt";

/// Outcome of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EnhanceStatus {
    /// The LLM rewrote the prompt.
    Enhanced,
    /// The original prompt is returned (LLM not configured or failed); see warnings.
    Original,
    /// A secret or a scanner failure stopped the request before anything was sent.
    Blocked,
}

/// What was retrieved, in numbers.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextSummary {
    pub active_file: Option<String>,
    pub chunks: usize,
    pub tokens: usize,
}

/// The result, as structured content and text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnhanceResult {
    pub status: EnhanceStatus,
    pub enhanced_prompt: String,
    pub warnings: Vec<String>,
    pub findings: Vec<SecretFinding>,
    pub context: ContextSummary,
}

/// Why enhance gave no result. Everything else (a secret, a scanner or LLM failure) is a result
/// status, not an error.
#[derive(Debug, thiserror::Error)]
pub enum EnhanceError {
    /// The rewrite template does not render: the server's prompt folders are at fault.
    #[error("rewrite template `enhance_prompt` failed: {0}")]
    Template(RenderError),
}

impl EnhanceError {
    /// Whether the caller is at fault; no enhance error is (the request was validated before).
    pub fn is_caller_error(&self) -> bool {
        match self {
            EnhanceError::Template(_) => false,
        }
    }
}

/// Why the retrieval stage found no context (it degrades to a warning, never an error).
pub type ContextError = Box<dyn std::error::Error + Send + Sync>;

/// One retrieved piece of the repository, as scanned and counted.
#[derive(Debug, Clone)]
pub struct ContextChunk {
    /// Repository-relative path.
    pub path: String,
    pub start_line: usize,
    pub text: String,
}

/// The retrieval stage's output for one request.
#[derive(Debug, Clone, Default)]
pub struct RetrievedContext {
    /// The sections handed to the template (`=== ACTIVE FILE (PRIMARY TARGET) ===`, then
    /// `=== REFERENCE CONTEXT (for patterns/conventions only) ===`).
    pub formatted: String,
    pub chunks: Vec<ContextChunk>,
    pub warnings: Vec<String>,
}

/// What a [`ContextRetriever`] answers with.
pub type ContextFuture =
    Pin<Box<dyn Future<Output = Result<RetrievedContext, ContextError>> + Send>>;

/// The retrieval stage, as enhance sees it.
pub trait ContextRetriever: Send + Sync {
    /// Retrieves context for `query` in `repo`, with `active_file` (canonical, inside `repo`)
    /// as the primary target. Its blocking work (file reads, indexing) must not run on the
    /// runtime that awaits the answer.
    fn retrieve(
        &self,
        repo: Workspace,
        query: String,
        active_file: Option<PathBuf>,
    ) -> ContextFuture;
}

/// A request whose paths were checked.
#[derive(Debug, Clone)]
pub struct ValidatedRequest {
    pub prompt: String,
    /// The repository: a checked, canonical workspace.
    pub repo: Workspace,
    /// Canonical active file, inside `repo`.
    pub active_file: Option<PathBuf>,
    /// The active file relative to `repo`, for the template.
    pub active_file_rel: Option<String>,
}

/// The enhance stage with its collaborators.
pub struct Enhancer {
    /// The snapshot the request runs on: its `enhance_prompt` template renders the rewrite.
    pub snapshot: Arc<Snapshot>,
    /// The clock of computed variables.
    pub clock: Clock,
    /// The guard, or why it could not be built (a broken rules file): then every request is
    /// blocked, never sent unscanned.
    pub guard: Result<Arc<Guard>, Arc<GuardError>>,
    pub retriever: Arc<dyn ContextRetriever>,
    /// `None`: the LLM is not configured.
    pub llm: Option<ChatClient>,
}

impl Enhancer {
    /// Runs the pipeline on a validated request. `warnings` carries notes from the caller (e.g.
    /// "no workingDirectory given"). A rewrite template that does not render is an error.
    pub async fn enhance(
        &self,
        req: &ValidatedRequest,
        mut warnings: Vec<String>,
    ) -> Result<EnhanceResult, EnhanceError> {
        let original = |status, warnings, findings, context| {
            Ok(EnhanceResult {
                status,
                enhanced_prompt: req.prompt.clone(),
                warnings,
                findings,
                context,
            })
        };

        let guard = match &self.guard {
            Ok(g) => g,
            Err(e) => {
                warnings.push(format!("secret scanner unavailable: {e}; nothing was sent"));
                return original(
                    EnhanceStatus::Blocked,
                    warnings,
                    Vec::new(),
                    ContextSummary::default(),
                );
            }
        };
        // 1. The prompt itself.
        match guard
            .scan_async(vec![ScanInput::new("prompt", req.prompt.clone())])
            .await
        {
            Err(e) => {
                warnings.push(format!(
                    "secret scan of the prompt failed: {e}; nothing was sent"
                ));
                return original(
                    EnhanceStatus::Blocked,
                    warnings,
                    Vec::new(),
                    ContextSummary::default(),
                );
            }
            Ok(report) if !report.is_clean() => {
                warnings.push(blocked_message("prompt", &report.findings));
                // The prompt goes back with its secrets replaced: no response carries a secret.
                return Ok(EnhanceResult {
                    status: EnhanceStatus::Blocked,
                    enhanced_prompt: guard.redact(&req.prompt, &report.findings),
                    warnings,
                    findings: report.findings,
                    context: ContextSummary::default(),
                });
            }
            Ok(_) => {}
        }

        // 2. Retrieval: a failure degrades to no context, it does not block.
        let retrieved = self
            .retriever
            .retrieve(
                req.repo.clone(),
                req.prompt.clone(),
                req.active_file.clone(),
            )
            .await
            .map_err(|e| e.to_string());
        let context = match retrieved {
            Ok(c) => c,
            Err(e) => {
                warnings.push(format!(
                    "repository retrieval failed: {e}; continuing without context"
                ));
                RetrievedContext::default()
            }
        };
        warnings.extend(context.warnings.iter().cloned());

        // 3. Render the rewrite template with the stage outputs (on the blocking pool, with the
        //    context's token count).
        let mut args = Map::new();
        args.insert("user_prompt".into(), Value::String(req.prompt.clone()));
        if let Some(rel) = &req.active_file_rel {
            args.insert("active_file".into(), Value::String(rel.clone()));
        }
        if !context.formatted.trim().is_empty() {
            args.insert("context".into(), Value::String(context.formatted.clone()));
        }
        if let Some(name) = req.repo.root().file_name() {
            args.insert(
                "repository".into(),
                Value::String(name.to_string_lossy().into_owned()),
            );
        }
        let (snapshot, clock, formatted) =
            (self.snapshot.clone(), self.clock, context.formatted.clone());
        let (tokens, rendered) = crate::blocking(move || {
            let tokens = count_tokens(&formatted);
            (tokens, snapshot.render(TEMPLATE, &args, &clock))
        })
        .await;
        let summary = ContextSummary {
            active_file: req.active_file_rel.clone(),
            chunks: context.chunks.len(),
            tokens,
        };
        let rendered = rendered.map_err(EnhanceError::Template)?;
        warnings.extend(rendered.warnings);
        let system = rendered.text;

        // 4. The retrieved context, chunk by chunk for precise locations, then the whole system
        //    message as the last gate: nothing leaves unless it is clean.
        let mut inputs: Vec<ScanInput<'static>> = context
            .chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                ScanInput::new(
                    format!("context:{}:{}#{i}", c.path, c.start_line),
                    c.text.clone(),
                )
                .with_path(c.path.clone())
            })
            .collect();
        inputs.push(ScanInput::new("context", system.clone()));
        match guard.scan_async(inputs).await {
            Err(e) => {
                warnings.push(format!(
                    "secret scan of the context failed: {e}; nothing was sent"
                ));
                return original(EnhanceStatus::Blocked, warnings, Vec::new(), summary);
            }
            Ok(report) if !report.is_clean() => {
                let mut findings: Vec<SecretFinding> = report
                    .findings
                    .iter()
                    .filter(|f| f.label != "context")
                    .cloned()
                    .map(|mut f| {
                        // Drop the batch index: `context:<path>:<line>`.
                        if let Some((label, _)) = f.label.rsplit_once('#') {
                            f.label = label.to_string();
                        }
                        f
                    })
                    .collect();
                if findings.is_empty() {
                    findings = report.findings.clone();
                }
                warnings.push(blocked_message("retrieved context", &findings));
                return original(EnhanceStatus::Blocked, warnings, findings, summary);
            }
            Ok(_) => {}
        }

        // 5. The LLM.
        let Some(llm) = &self.llm else {
            warnings.push(
                "LLM not configured (set LLM_BASE_URL and LLM_MODEL): returning the original prompt"
                    .into(),
            );
            return original(EnhanceStatus::Original, warnings, Vec::new(), summary);
        };
        match llm.complete(&system, &req.prompt).await {
            Ok(text) => Ok(EnhanceResult {
                status: EnhanceStatus::Enhanced,
                enhanced_prompt: text.trim().to_string(),
                warnings,
                findings: Vec::new(),
                context: summary,
            }),
            Err(e) => {
                warnings.push(format!("{e}: returning the original prompt"));
                original(EnhanceStatus::Original, warnings, Vec::new(), summary)
            }
        }
    }
}

fn blocked_message(what: &str, findings: &[SecretFinding]) -> String {
    let list: Vec<String> = findings
        .iter()
        .map(|f| format!("{} at {}:{}", f.rule_id, f.label, f.line))
        .collect();
    format!(
        "blocked: possible secret(s) in the {what} ({}); nothing was sent to the LLM",
        list.join(", ")
    )
}

/// The result's own text: the prompt to hand on, or what blocked it.
pub fn result_body(r: &EnhanceResult) -> String {
    let mut out = String::new();
    match r.status {
        EnhanceStatus::Blocked => {
            out.push_str("BLOCKED: nothing was sent to the LLM.\n");
            for f in &r.findings {
                out.push_str(&format!(
                    "- {} ({}) at {} line {}: {}\n",
                    f.rule_id, f.description, f.label, f.line, f.redacted
                ));
            }
        }
        _ => {
            out.push_str(&r.enhanced_prompt);
            out.push('\n');
        }
    }
    out
}

/// The result as text for MCP text content: its body, then a `warning: ` line per warning.
pub fn result_text(r: &EnhanceResult) -> String {
    let mut out = result_body(r);
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
