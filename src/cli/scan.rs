//! `promptd scan`: the secret guard on files or standard input, for people and CI.
//!
//! A thin adapter over [`crate::guard`]: it reads the inputs, runs one [`Guard::scan`] over all of
//! them, and prints findings (always redacted) as text or JSON. Exit status: 0 clean, 1 secrets
//! found, 2 the scan could not be completed (bad rules file, unreadable input, gitleaks failure).
//! With `--policy redact` the redacted texts are printed instead of the finding list (JSON
//! carries both); the exit status still says whether secrets were found. `--explain` adds, for
//! each finding, the rule and why it fired (keyword, pattern, entropy floor, allowlists checked).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::guard::{
    Explanation, Guard, GuardOptions, Policy, ScanInput, ScanReport, SecretFinding,
};

/// Exit status: no secret found.
pub const EXIT_CLEAN: i32 = 0;
/// Exit status: at least one secret found.
pub const EXIT_SECRETS: i32 = 1;
/// Exit status: the scan could not be completed; treat as "not clean".
pub const EXIT_ERROR: i32 = 2;

/// Scan files or standard input for secrets.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ScanArgs {
    /// Files to scan; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    pub files: Vec<PathBuf>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
    /// gitleaks-format rules file (default: $GITLEAKS_CONFIG, else the built-in rules).
    #[arg(long, value_name = "F")]
    pub rules: Option<PathBuf>,
    /// Also run this gitleaks binary (default: $GITLEAKS_BIN, else none).
    #[arg(long, value_name = "PATH")]
    pub gitleaks: Option<PathBuf>,
    /// block: report findings; redact: print the inputs with secrets replaced.
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Seconds gitleaks may run before the scan fails.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Say why each finding fired: its rule, the keyword that let the rule run, the pattern,
    /// the entropy floor and the allowlists that did not apply.
    #[arg(long)]
    pub explain: bool,
}

/// `--policy`: the guard's [`Policy`] as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyArg {
    /// Refuse the whole request.
    Block,
    /// Replace each secret by `[REDACTED:<rule-id>#n]` and go on.
    Redact,
}

impl From<PolicyArg> for Policy {
    fn from(arg: PolicyArg) -> Policy {
        match arg {
            PolicyArg::Block => Policy::Block,
            PolicyArg::Redact => Policy::Redact,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    clean: bool,
    scanners: &'a [String],
    findings: &'a [SecretFinding],
    #[serde(skip_serializing_if = "Option::is_none")]
    redacted: Option<Vec<RedactedInput>>,
    /// With `--explain`: one per finding, in the same order.
    #[serde(skip_serializing_if = "Option::is_none")]
    explanations: Option<Vec<Explanation>>,
}

#[derive(Serialize)]
struct RedactedInput {
    label: String,
    text: String,
}

#[derive(Serialize)]
struct JsonError {
    error: String,
}

/// Runs `promptd scan`; returns the process exit status.
pub fn run_scan(args: &ScanArgs, stdin: &mut dyn Read, out: &mut dyn Write) -> i32 {
    match scan(args, stdin) {
        Ok((guard, inputs, report)) => {
            let written = print_report(args, &guard, &inputs, &report, out);
            if let Err(e) = written {
                tracing::error!("cannot write the report: {e}");
                return EXIT_ERROR;
            }
            if report.is_clean() {
                EXIT_CLEAN
            } else {
                EXIT_SECRETS
            }
        }
        Err(message) => {
            tracing::error!("{message}");
            let _ = if args.json {
                serde_json::to_writer(&mut *out, &JsonError { error: message })
                    .map_err(std::io::Error::from)
                    .and_then(|_| writeln!(out))
            } else {
                writeln!(out, "error: {message}")
            };
            EXIT_ERROR
        }
    }
}

type Scanned = (Guard, Vec<ScanInput<'static>>, ScanReport);

fn scan(args: &ScanArgs, stdin: &mut dyn Read) -> Result<Scanned, String> {
    let mut opts = GuardOptions::from_env();
    if let Some(rules) = &args.rules {
        opts.rules_file = Some(rules.clone());
    }
    if let Some(bin) = &args.gitleaks {
        opts.gitleaks_bin = Some(bin.clone());
    }
    if let Some(policy) = args.policy {
        opts.policy = policy.into();
    }
    if let Some(secs) = args.timeout {
        opts.timeout = Duration::from_secs(secs.max(1));
    }
    let guard = Guard::new(opts).map_err(|e| e.to_string())?;

    let mut inputs = Vec::new();
    let files: Vec<PathBuf> = if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files.clone()
    };
    let mut stdin_read = false;
    for file in &files {
        if file.as_os_str() == "-" {
            if stdin_read {
                continue;
            }
            stdin_read = true;
            let mut bytes = Vec::new();
            stdin
                .read_to_end(&mut bytes)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            inputs.push(ScanInput::new(
                "stdin",
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        } else {
            let bytes =
                std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let name = file.display().to_string();
            inputs.push(
                ScanInput::new(name.clone(), String::from_utf8_lossy(&bytes).into_owned())
                    .with_path(name),
            );
        }
    }
    let report = guard.scan(&inputs).map_err(|e| e.to_string())?;
    Ok((guard, inputs, report))
}

fn print_report(
    args: &ScanArgs,
    guard: &Guard,
    inputs: &[ScanInput<'_>],
    report: &ScanReport,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let redact = guard.policy() == Policy::Redact;
    let redacted = || {
        inputs
            .iter()
            .map(|i| RedactedInput {
                label: i.label.clone(),
                text: guard.redact_input(i, report),
            })
            .collect::<Vec<_>>()
    };
    let explanations = if args.explain {
        guard.explain_report(inputs, report)
    } else {
        Vec::new()
    };
    if args.json {
        let json = JsonReport {
            clean: report.is_clean(),
            scanners: &report.scanners,
            findings: &report.findings,
            redacted: redact.then(redacted),
            explanations: args.explain.then_some(explanations),
        };
        serde_json::to_writer_pretty(&mut *out, &json)?;
        return writeln!(out);
    }
    if redact {
        for f in &report.findings {
            tracing::warn!(
                "{}:{}:{}: {} redacted",
                f.label,
                f.line,
                f.column_start,
                f.rule_id
            );
        }
        let texts = redacted();
        let many = texts.len() > 1;
        for r in texts {
            if many {
                writeln!(out, "==> {} <==", r.label)?;
            }
            out.write_all(r.text.as_bytes())?;
            if many && !r.text.ends_with('\n') {
                writeln!(out)?;
            }
        }
        return Ok(());
    }
    for (i, f) in report.findings.iter().enumerate() {
        writeln!(
            out,
            "{}:{}:{}: {} {} ({}) [{}]",
            f.label,
            f.line,
            f.column_start,
            f.rule_id,
            f.redacted,
            f.description,
            match f.source {
                crate::guard::FindingSource::Promptd => "promptd",
                crate::guard::FindingSource::Gitleaks => "gitleaks",
            }
        )?;
        if let Some(why) = explanations.get(i) {
            writeln!(out, "  why: {}", why.summary)?;
        }
    }
    let scanners = report.scanners.join(", ");
    if report.is_clean() {
        writeln!(
            out,
            "no secrets found in {} input(s) (scanners: {scanners})",
            inputs.len()
        )
    } else {
        let mut labels: Vec<&str> = report.findings.iter().map(|f| f.label.as_str()).collect();
        labels.dedup();
        writeln!(
            out,
            "{} secret(s) found in {} of {} input(s) (scanners: {scanners})",
            report.findings.len(),
            labels.len(),
            inputs.len()
        )
    }
}
