//! Secret guard: nothing that contains a secret may leave promptd toward an LLM.
//!
//! This module owns secret detection and what happens to a found secret. Texts (the user's
//! prompt, retrieved context chunks, files given to `promptd scan`) are scanned in process by
//! rules in gitleaks' TOML format: promptd's built-in rules (`builtin.toml`, written for promptd),
//! optionally replaced or extended by a user file (`GITLEAKS_CONFIG` / `--rules`). When a gitleaks
//! binary is configured (`GITLEAKS_BIN` / `--gitleaks`) it runs as a second opinion over the same
//! batch, with a pinned config and fail-closed error handling, and its findings merge with ours.
//!
//! Architecture invariant: a scan either returns a complete [`ScanReport`] or an error; a scanner
//! that fails, times out or cannot start is never reported as "clean", and the caller blocks.
//! Another: the secret itself is never stored in a finding, an error or a log line; findings keep
//! its position and a short preview.
//!
//! Policy ([`Policy`]): `block` (default) refuses any input with a finding; `redact` replaces each
//! secret by `[REDACTED:<rule-id>#n]` ([`Guard::redact`]).

mod decode;
mod external;
mod redact;
mod rules;
mod scanner;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use external::GitleaksRunner;
use rules::RuleSet;
use scanner::Scanner;

/// Default limit for one gitleaks run (it starts quickly; big batches take longer).
pub const DEFAULT_GITLEAKS_TIMEOUT: Duration = Duration::from_secs(30);

/// Errors of the secret guard. Any of them means "not scanned": callers must block.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("cannot read rules file {}: {source}", path.display())]
    RulesRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: invalid TOML: {message}")]
    RulesSyntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}:{line}: {}{message}", rule.as_ref().map(|r| format!("rule `{r}`: ")).unwrap_or_default())]
    RuleInvalid {
        file: String,
        line: usize,
        rule: Option<String>,
        message: String,
    },
    #[error("gitleaks binary {} not found or not a file (set by {origin})", path.display())]
    GitleaksMissing { path: PathBuf, origin: String },
    #[error("cannot start gitleaks {}: {source}", path.display())]
    GitleaksStart {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("gitleaks {} failed ({status}){}", path.display(), if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    GitleaksFailed {
        path: PathBuf,
        status: String,
        /// The end of gitleaks' stderr, with anything our rules flag redacted.
        stderr: String,
    },
    #[error("gitleaks {} timed out after {}s and was killed", path.display(), timeout.as_secs_f32())]
    GitleaksTimeout { path: PathBuf, timeout: Duration },
    #[error("gitleaks {} produced an unreadable report: {message}", path.display())]
    GitleaksReport { path: PathBuf, message: String },
    #[error("gitleaks scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("the secret scan did not complete: {0}")]
    Interrupted(String),
}

/// What happens to an input that contains a secret.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Refuse the whole request.
    #[default]
    Block,
    /// Replace each secret by `[REDACTED:<rule-id>#n]` and go on.
    Redact,
}

/// How a [`Guard`] is built.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardOptions {
    /// A gitleaks-format rules file: replaces the built-in rules, or extends them with
    /// `[extend] useDefault = true`.
    pub rules_file: Option<PathBuf>,
    /// A gitleaks binary to run as a second scanner.
    pub gitleaks_bin: Option<PathBuf>,
    pub policy: Policy,
    /// Limit for one gitleaks run.
    pub timeout: Duration,
}

impl Default for GuardOptions {
    fn default() -> Self {
        GuardOptions {
            rules_file: None,
            gitleaks_bin: None,
            policy: Policy::Block,
            timeout: DEFAULT_GITLEAKS_TIMEOUT,
        }
    }
}

impl GuardOptions {
    /// Options from the environment: `GITLEAKS_CONFIG` (rules file) and `GITLEAKS_BIN`.
    pub fn from_env() -> GuardOptions {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        GuardOptions {
            rules_file: var("GITLEAKS_CONFIG"),
            gitleaks_bin: var("GITLEAKS_BIN"),
            ..GuardOptions::default()
        }
    }
}

/// An absolute path for the gitleaks binary: gitleaks runs in a scratch directory with an empty
/// environment, so a relative path or a bare name must be resolved here, against the caller's
/// working directory and `PATH`.
fn resolve_binary(bin: &Path) -> Option<PathBuf> {
    let candidate = if bin.components().count() == 1 && !bin.is_file() {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(bin))
            .find(|p| p.is_file())?
    } else {
        bin.to_path_buf()
    };
    if !candidate.is_file() {
        return None;
    }
    std::fs::canonicalize(candidate).ok()
}

/// The `"guard"` section of the project config file; CLI flags and the environment override it.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(default, rename_all = "camelCase")]
pub struct GuardSettings {
    pub rules_file: Option<PathBuf>,
    pub gitleaks_bin: Option<PathBuf>,
    pub policy: Policy,
    pub timeout_secs: u64,
}

impl Default for GuardSettings {
    fn default() -> Self {
        GuardSettings {
            rules_file: None,
            gitleaks_bin: None,
            policy: Policy::Block,
            timeout_secs: DEFAULT_GITLEAKS_TIMEOUT.as_secs(),
        }
    }
}

impl GuardSettings {
    /// Options from these settings, with `GITLEAKS_CONFIG` / `GITLEAKS_BIN` taking precedence.
    pub fn to_options(&self) -> GuardOptions {
        let env = GuardOptions::from_env();
        GuardOptions {
            rules_file: env.rules_file.or_else(|| self.rules_file.clone()),
            gitleaks_bin: env.gitleaks_bin.or_else(|| self.gitleaks_bin.clone()),
            policy: self.policy,
            timeout: Duration::from_secs(self.timeout_secs.max(1)),
        }
    }
}

/// One text to scan and the label findings will carry (`prompt`, `context:<path>:<line>`, …).
/// Labels should be unique within a batch: findings are tied to their input by label.
#[derive(Clone, PartialEq, Eq)]
pub struct ScanInput<'a> {
    pub label: String,
    pub text: Cow<'a, str>,
    /// The file the text came from, if any: rules and allowlists with `path`/`paths` match it.
    pub path: Option<String>,
}

impl<'a> ScanInput<'a> {
    pub fn new(label: impl Into<String>, text: impl Into<Cow<'a, str>>) -> ScanInput<'a> {
        ScanInput {
            label: label.into(),
            text: text.into(),
            path: None,
        }
    }

    pub fn with_path(mut self, path: impl Into<String>) -> ScanInput<'a> {
        self.path = Some(path.into());
        self
    }
}

/// The text is the thing being guarded: Debug shows its size, not its content.
impl std::fmt::Debug for ScanInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanInput")
            .field("label", &self.label)
            .field("path", &self.path)
            .field("bytes", &self.text.len())
            .finish()
    }
}

/// Which scanner reported a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FindingSource {
    Promptd,
    Gitleaks,
}

/// A secret found in one input. Holds where it is and a short preview, never the secret.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretFinding {
    pub rule_id: String,
    pub description: String,
    /// The label of the [`ScanInput`] it was found in.
    pub label: String,
    /// 1-based line of the secret's first character.
    pub line: usize,
    /// 1-based line of its last character (differs for multi-line secrets such as PEM keys).
    pub end_line: usize,
    /// 1-based character column of the first character, on `line`.
    pub column_start: usize,
    /// 1-based character column of the last character (inclusive), on `end_line`.
    pub column_end: usize,
    /// Shannon entropy of the secret, bits per character.
    pub entropy: f32,
    /// A few leading characters of the secret, then `…`.
    pub redacted: String,
    pub source: FindingSource,
    /// Byte range of the secret within the input text (what [`Guard::redact`] replaces).
    pub byte_start: usize,
    pub byte_end: usize,
    /// Encodings the secret was found under, outermost first (empty: found in plain text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub encodings: Vec<String>,
}

/// Why a finding was reported: the rule, what let it run and what it checked. Holds the rule's
/// pattern and thresholds, never the secret.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub rule_id: String,
    pub label: String,
    pub line: usize,
    pub source: FindingSource,
    /// The rule keyword found in the input, which let the rule run (`None`: the rule has no
    /// keywords and always runs, or the finding is gitleaks').
    pub keyword: Option<String>,
    /// The rule's regex as written (`None` for a path-only rule or a gitleaks finding).
    pub pattern: Option<String>,
    /// Which capture group held the secret (`0`: the whole match).
    pub secret_group: Option<usize>,
    /// The secret's entropy and the rule's floor it exceeded.
    pub entropy: f32,
    pub entropy_floor: Option<f64>,
    /// Allowlists that were checked and did not apply: the rule's own, then global ones that
    /// target it.
    pub allowlists_checked: Vec<String>,
    /// Encodings the secret was found under, outermost first (empty: plain text).
    pub decoded: Vec<String>,
    /// One sentence saying the above.
    pub summary: String,
}

/// Result of scanning one batch.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanReport {
    /// Ordered by input, then position.
    pub findings: Vec<SecretFinding>,
    /// The scanners that ran to completion: `promptd`, and `gitleaks` when configured.
    pub scanners: Vec<String>,
}

impl ScanReport {
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Findings of one input.
    pub fn findings_for<'r>(&'r self, label: &'r str) -> impl Iterator<Item = &'r SecretFinding> {
        self.findings.iter().filter(move |f| f.label == label)
    }
}

/// The largest batch (bytes of text) [`Guard::scan_async`] scans on the calling task: a few
/// kilobytes, a tool's typical answer, whose scan holds the runtime about as long as handing it
/// to the blocking pool and back would.
pub const INLINE_SCAN_BYTES: usize = 4 * 1024;

/// The secret guard: compiled rules, optionally a gitleaks runner, and the policy.
pub struct Guard {
    scanner: Scanner,
    gitleaks: Option<GitleaksRunner>,
    policy: Policy,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("rules", &self.scanner.rule_count())
            .field("gitleaks", &self.gitleaks.as_ref().map(|g| g.path()))
            .field("policy", &self.policy)
            .finish()
    }
}

impl Guard {
    /// Loads and compiles the rules, and checks that a configured gitleaks binary exists.
    pub fn new(opts: GuardOptions) -> Result<Guard, GuardError> {
        let (rules, rules_text) = match &opts.rules_file {
            Some(path) => {
                let text = rules::read_rules_file(path)?;
                let set = RuleSet::from_toml(&text, &path.display().to_string(), path.parent())?;
                (set, Some(text))
            }
            None => (RuleSet::builtin()?, None),
        };
        let gitleaks = match &opts.gitleaks_bin {
            Some(bin) => {
                let resolved = resolve_binary(bin).ok_or_else(|| GuardError::GitleaksMissing {
                    path: bin.clone(),
                    origin: "GITLEAKS_BIN or --gitleaks".to_string(),
                })?;
                Some(GitleaksRunner::new(
                    resolved,
                    rules_text.zip(opts.rules_file.clone()),
                    opts.timeout,
                ))
            }
            None => None,
        };
        tracing::debug!(
            rules = rules.rules.len(),
            gitleaks = gitleaks.is_some(),
            "secret guard ready"
        );
        Ok(Guard {
            scanner: Scanner::new(rules),
            gitleaks,
            policy: opts.policy,
        })
    }

    /// A guard with the built-in rules only.
    pub fn builtin() -> Result<Guard, GuardError> {
        Guard::new(GuardOptions::default())
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Number of compiled rules.
    pub fn rule_count(&self) -> usize {
        self.scanner.rule_count()
    }

    /// The gitleaks binary in use, if any.
    pub fn gitleaks_bin(&self) -> Option<&Path> {
        self.gitleaks.as_ref().map(|g| g.path())
    }

    /// Scans a batch: every input with promptd's rules, then (if configured) all of them in one
    /// gitleaks run. `Err` means a scanner failed and nothing may be sent.
    pub fn scan(&self, inputs: &[ScanInput<'_>]) -> Result<ScanReport, GuardError> {
        let mut findings = Vec::new();
        for input in inputs {
            findings.extend(
                self.scanner
                    .scan(&input.label, input.path.as_deref(), &input.text),
            );
        }
        let mut scanners = vec!["promptd".to_string()];
        if let Some(runner) = &self.gitleaks {
            let mut theirs = runner.scan(inputs, &self.scanner)?;
            findings.append(&mut theirs);
            scanners.push("gitleaks".to_string());
        }
        let mut order = std::collections::HashMap::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            order.entry(input.label.as_str()).or_insert(i);
        }
        let key = |f: &SecretFinding| {
            (
                order.get(f.label.as_str()).copied(),
                f.byte_start,
                f.source as u8,
            )
        };
        findings.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.rule_id.cmp(&b.rule_id)));
        for f in &findings {
            tracing::info!(
                rule = %f.rule_id,
                label = %f.label,
                line = f.line,
                source = ?f.source,
                "secret found"
            );
        }
        Ok(ScanReport { findings, scanners })
    }

    /// [`Guard::scan`] for an async caller; a panic is a failed scan ([`GuardError::Interrupted`]).
    /// A batch of at most [`INLINE_SCAN_BYTES`] that only promptd's rules read is scanned on the
    /// calling task: that is quicker than handing it to another thread and back. Anything larger,
    /// or a gitleaks run, goes to tokio's blocking pool, so a long scan never stalls the task
    /// that awaits it nor the other requests of its runtime.
    pub async fn scan_async(
        self: &Arc<Self>,
        inputs: Vec<ScanInput<'static>>,
    ) -> Result<ScanReport, GuardError> {
        let size: usize = inputs.iter().map(|i| i.text.len()).sum();
        if self.gitleaks.is_none() && size <= INLINE_SCAN_BYTES {
            // A panic is a failed scan here too, as it is on the blocking pool: fail closed.
            return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.scan(&inputs)))
                .map_err(|_| GuardError::Interrupted("the scan panicked".into()))?;
        }
        let guard = Arc::clone(self);
        tokio::task::spawn_blocking(move || guard.scan(&inputs))
            .await
            .map_err(|e| GuardError::Interrupted(e.to_string()))?
    }

    /// `text` with every finding replaced by `[REDACTED:<rule-id>#n]`. The findings must be those
    /// of this text (use [`ScanReport::findings_for`] on a batch).
    pub fn redact(&self, text: &str, findings: &[SecretFinding]) -> String {
        redact::redact(text, findings)
    }

    /// Why `finding` was reported: its rule's keyword that occurs in `text` (the input the
    /// finding came from), pattern, entropy floor and the allowlists that did not apply.
    pub fn explain(&self, text: &str, finding: &SecretFinding) -> Explanation {
        self.scanner
            .explain_all(text, std::slice::from_ref(finding))
            .remove(0)
    }

    /// The explanation of every finding of a scanned batch, in the report's order. Each input's
    /// keywords are searched once, whatever the number of its findings.
    pub fn explain_report(
        &self,
        inputs: &[ScanInput<'_>],
        report: &ScanReport,
    ) -> Vec<Explanation> {
        let texts: std::collections::HashMap<&str, &str> = inputs
            .iter()
            .map(|i| (i.label.as_str(), i.text.as_ref()))
            .collect();
        let mut by_label: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        for (i, f) in report.findings.iter().enumerate() {
            by_label.entry(f.label.as_str()).or_default().push(i);
        }
        let mut out: Vec<Option<Explanation>> = vec![None; report.findings.len()];
        for (label, indices) in by_label {
            let text = texts.get(label).copied().unwrap_or("");
            let findings: Vec<SecretFinding> = indices
                .iter()
                .map(|&i| report.findings[i].clone())
                .collect();
            for (i, why) in indices
                .into_iter()
                .zip(self.scanner.explain_all(text, &findings))
            {
                out[i] = Some(why);
            }
        }
        out.into_iter().flatten().collect()
    }

    /// Redacts one input of a scanned batch with its own findings.
    pub fn redact_input(&self, input: &ScanInput<'_>, report: &ScanReport) -> String {
        let mine: Vec<SecretFinding> = report.findings_for(&input.label).cloned().collect();
        redact::redact(&input.text, &mine)
    }

    /// Redacts the secrets our own rules find in `text`: used to clean scanner diagnostics
    /// before they go into errors or logs.
    pub(crate) fn scrub(scanner: &Scanner, text: &str) -> String {
        let findings = scanner.scan("diagnostic", None, text);
        redact::redact(text, &findings)
    }
}
