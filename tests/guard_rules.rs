//! User rule files in gitleaks' format, fixture-driven (minijinja style): each
//! `tests/fixtures/guard/*.toml` is a rules file; `<name>.txt` beside it is the text scanned with
//! it. `{{fake:<kind>}}` in a text is replaced at test time by a generated fake secret (so no
//! fixture holds one), and put back in the snapshot wherever a fake survived redaction.
//! `err_*.toml` files must be rejected: their error text (naming file and line) is the snapshot.

use crate::support::guard;

use std::path::Path;

use guard::{Fake, fake_secret};
use promptd::guard::{Guard, GuardOptions, ScanInput};
use serde::Serialize;

#[derive(Serialize)]
struct FindingView {
    rule: String,
    line: usize,
    columns: String,
    redacted: String,
}

#[derive(Serialize)]
struct ScanView {
    findings: Vec<FindingView>,
    redacted_text: String,
}

/// Replaces `{{fake:<kind>}}` markers; returns the text and the (marker, value) pairs.
fn expand(raw: &str, g: &mut Fake) -> (String, Vec<(String, String)>) {
    let mut text = String::new();
    let mut fakes = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find("{{fake:") {
        let end = start + rest[start..].find("}}").expect("closed marker");
        let kind = &rest[start + "{{fake:".len()..end];
        let value = fake_secret(kind, g).unwrap_or_else(|| panic!("unknown fake kind {kind}"));
        text.push_str(&rest[..start]);
        text.push_str(&value);
        fakes.push((rest[start..end + 2].to_string(), value));
        rest = &rest[end + 2..];
    }
    text.push_str(rest);
    (text, fakes)
}

#[test]
fn rules_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    insta::glob!("fixtures/guard/*.toml", |path| {
        // Relative paths keep the snapshots (and error messages) machine-independent.
        let rel = path.strip_prefix(root).unwrap().to_path_buf();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let guard = Guard::new(GuardOptions {
            rules_file: Some(rel.clone()),
            ..GuardOptions::default()
        });
        if name.starts_with("err_") {
            let err = guard.expect_err("err_ fixtures must be rejected");
            insta::assert_snapshot!(err.to_string());
            return;
        }
        let guard = guard.unwrap_or_else(|e| panic!("{e}"));
        let input_rel = rel.with_extension("txt");
        let raw = std::fs::read_to_string(root.join(&input_rel)).unwrap();
        let (text, fakes) = expand(&raw, &mut Fake::new(42));
        // The file name alone as the path: the fixture folder is a test folder, which the
        // built-in test-path allowlist skips for its shapeless rules and JWTs.
        let file_name = input_rel.file_name().unwrap().to_string_lossy().to_string();
        let input = ScanInput::new("input", text.as_str()).with_path(file_name);
        let report = guard.scan(std::slice::from_ref(&input)).unwrap();
        let mut redacted_text = guard.redact_input(&input, &report);
        for (marker, value) in &fakes {
            redacted_text = redacted_text.replace(value.as_str(), marker);
        }
        let view = ScanView {
            findings: report
                .findings
                .iter()
                .map(|f| FindingView {
                    rule: f.rule_id.clone(),
                    line: f.line,
                    columns: format!("{}-{}", f.column_start, f.column_end),
                    redacted: f.redacted.clone(),
                })
                .collect(),
            redacted_text,
        };
        insta::assert_yaml_snapshot!(view);
    });
}

#[derive(Serialize)]
struct ExplainedView {
    rule: String,
    line: usize,
    redacted: String,
    why: String,
}

#[derive(Serialize)]
struct BuiltinView {
    findings: Vec<ExplainedView>,
    redacted_text: String,
}

/// Replaces `{{spec:<spec>}}` markers by a value built from the spec (see `support::guard`), so
/// that no fixture holds a secret; returns the text and the (marker, value) pairs.
fn expand_specs(raw: &str, g: &mut Fake) -> (String, Vec<(String, String)>) {
    let mut text = String::new();
    let mut values = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find("{{spec:") {
        let end = start + rest[start..].find("}}").expect("closed marker");
        let value = g.token(&rest[start + "{{spec:".len()..end]);
        text.push_str(&rest[..start]);
        text.push_str(&value);
        values.push((rest[start..end + 2].to_string(), value));
        rest = &rest[end + 2..];
    }
    text.push_str(rest);
    (text, values)
}

/// The built-in rules, fixture-driven: each `tests/fixtures/guard/builtin/*.txt` holds secrets
/// that must be found (as `{{spec:…}}` markers, built at test time) and look-alikes that must
/// not; the snapshot lists each finding with its explanation and the redacted text. A first
/// line `path: <p>` scans the text as the file `<p>` (for path allowlists); otherwise it has no
/// path, as a prompt.
#[test]
fn builtin_rules_fixtures() {
    let guard = Guard::builtin().unwrap();
    insta::glob!("fixtures/guard/builtin/*.txt", |path| {
        let raw = std::fs::read_to_string(path).unwrap();
        let (path_line, body) = match raw.strip_prefix("path: ") {
            Some(rest) => {
                let (p, body) = rest.split_once('\n').unwrap_or((rest, ""));
                (Some(p.trim().to_string()), body.to_string())
            }
            None => (None, raw.clone()),
        };
        let (text, values) = expand_specs(&body, &mut Fake::new(7));
        let mut input = ScanInput::new("input", text.as_str());
        if let Some(p) = path_line {
            input = input.with_path(p);
        }
        let report = guard.scan(std::slice::from_ref(&input)).unwrap();
        let mut redacted_text = guard.redact_input(&input, &report);
        for (marker, value) in &values {
            redacted_text = redacted_text.replace(value.as_str(), marker);
        }
        let view = BuiltinView {
            findings: report
                .findings
                .iter()
                .map(|f| ExplainedView {
                    rule: f.rule_id.clone(),
                    line: f.line,
                    redacted: f.redacted.clone(),
                    why: guard.explain(&text, f).summary,
                })
                .collect(),
            redacted_text,
        };
        insta::assert_yaml_snapshot!(view);
    });
}
