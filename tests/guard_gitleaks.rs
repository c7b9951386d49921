//! The real gitleaks binary as second scanner: promptd's verdict is never weaker than gitleaks'
//! on any corpus item, findings map back onto their inputs, the config is pinned, and every way
//! the external scanner can fail is an error (fail closed), never "clean".
//!
//! Needs the binary: `scripts/setup-gitleaks` (or `GITLEAKS_BIN`).

use crate::support::{guard, process};

use std::path::PathBuf;
use std::time::Duration;

use guard::{Fake, corpus, fake_secret, require_gitleaks, scan_inputs};
use promptd::guard::{FindingSource, Guard, GuardError, GuardOptions, ScanInput};

fn with_gitleaks(bin: PathBuf) -> GuardOptions {
    GuardOptions {
        gitleaks_bin: Some(bin),
        ..GuardOptions::default()
    }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn promptd_verdict_is_never_weaker_than_gitleaks_on_the_corpus() {
    let guard = Guard::new(with_gitleaks(require_gitleaks())).unwrap();
    let items = corpus();
    // One gitleaks process for the whole corpus.
    let report = guard.scan(&scan_inputs(&items)).unwrap();
    assert_eq!(report.scanners, vec!["promptd", "gitleaks"]);

    let mut weaker = Vec::new();
    let mut gitleaks_positives = 0;
    let mut stricter = Vec::new();
    let mut misplaced = Vec::new();
    for item in &items {
        let theirs: Vec<&str> = report
            .findings_for(&item.name)
            .filter(|f| f.source == FindingSource::Gitleaks)
            .map(|f| f.rule_id.as_str())
            .collect();
        let ours = report
            .findings_for(&item.name)
            .any(|f| f.source == FindingSource::Promptd);
        if !theirs.is_empty() && !ours {
            weaker.push(format!(
                "{}: gitleaks found {theirs:?}, promptd nothing",
                item.name
            ));
        }
        if ours && theirs.is_empty() {
            stricter.push(item.name.as_str());
        }
        if item.is_positive() && !theirs.is_empty() {
            gitleaks_positives += 1;
        }
        // gitleaks' findings land on the input and the line the secret is on.
        if let (Some(secret), false) = (&item.secret, theirs.is_empty()) {
            let secret_line = item.text[..item.text.find(secret.as_str()).unwrap()]
                .matches('\n')
                .count()
                + 1;
            let placed = report
                .findings_for(&item.name)
                .filter(|f| f.source == FindingSource::Gitleaks)
                .any(|f| f.line <= secret_line && secret_line <= f.end_line);
            if !placed {
                misplaced.push(item.name.as_str());
            }
        }
    }
    eprintln!(
        "gitleaks flagged {gitleaks_positives} positives; promptd alone flagged {} items gitleaks did not: {stricter:?}",
        stricter.len()
    );
    assert!(weaker.is_empty(), "{}", weaker.join("\n"));
    assert!(
        misplaced.is_empty(),
        "gitleaks findings off the secret's line: {misplaced:?}"
    );
    let positives = items.iter().filter(|i| i.expect.is_some()).count();
    assert!(
        gitleaks_positives * 2 >= positives,
        "gitleaks found only {gitleaks_positives} of {positives} positives: is the stream mapping broken?"
    );
    // No negative is flagged by either scanner.
    for item in items.iter().filter(|i| i.expect.is_none()) {
        assert_eq!(report.findings_for(&item.name).count(), 0, "{}", item.name);
    }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn gitleaks_findings_point_at_the_secret_so_redaction_removes_it() {
    let guard = Guard::new(with_gitleaks(require_gitleaks())).unwrap();
    let mut g = Fake::new(7);
    let token = fake_secret("github-pat", &mut g).unwrap();
    let password = fake_secret("password", &mut g).unwrap();
    // Multi-byte characters before the secret, a later input, and lines after the first: the
    // column conventions gitleaks uses must all be undone.
    let first = "héllo wörld\nnothing here\n".to_string();
    let second = format!("ééé café\n  token = \"{token}\" # note\n");
    let third = format!("[db]\napi_key = \"{password}\"\n");
    let inputs = [
        ScanInput::new("first", first.as_str()),
        ScanInput::new("second", second.as_str()),
        ScanInput::new("third", third.as_str()),
    ];
    let report = guard.scan(&inputs).unwrap();
    assert_eq!(report.findings_for("first").count(), 0);
    let theirs: Vec<_> = report
        .findings_for("second")
        .filter(|f| f.source == FindingSource::Gitleaks)
        .cloned()
        .collect();
    assert_eq!(theirs.len(), 1, "{:?}", report.findings);
    assert_eq!(theirs[0].line, 2);
    assert_eq!(&second[theirs[0].byte_start..theirs[0].byte_end], token);
    let redacted = guard.redact(&second, &theirs);
    assert!(!redacted.contains(&token));
    assert!(redacted.contains("[REDACTED:github-pat#1]"), "{redacted}");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn the_pinned_config_ignores_environment_ignore_files_and_allow_comments() {
    let bin = require_gitleaks();
    let mut g = Fake::new(11);
    let token = fake_secret("github-pat", &mut g).unwrap();
    let work = tempfile::tempdir().unwrap();
    // Everything a scanned folder or the environment could use to silence gitleaks.
    std::fs::write(
        work.path().join(".gitleaksignore"),
        ":github-pat:1\n:github-pat:2\n",
    )
    .unwrap();
    let allow_all = "[allowlist]\nregexes = ['''.*''']\n";
    std::fs::write(work.path().join(".gitleaks.toml"), allow_all).unwrap();
    let input = format!("token = \"{token}\" # gitleaks:allow\n");
    let mut cmd = process::promptd();
    cmd.args(["scan", "--json", "--gitleaks"])
        .arg(&bin)
        .arg("-")
        .current_dir(work.path())
        .env("GITLEAKS_CONFIG_TOML", allow_all);
    let out = process::output_with_input(cmd, input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["source"].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"gitleaks"), "{json}");
    assert!(sources.contains(&"promptd"), "{json}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&token));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&token));
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn a_user_rules_file_is_the_config_gitleaks_runs_with() {
    let bin = require_gitleaks();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rules]]\nid = \"acme-internal-token\"\ndescription = \"ACME token\"\nregex = '''\\b(acme_[0-9a-f]{32})\\b'''\nkeywords = [\"acme_\"]\n",
    )
    .unwrap();
    let guard = Guard::new(GuardOptions {
        rules_file: Some(rules),
        ..with_gitleaks(bin)
    })
    .unwrap();
    let mut g = Fake::new(3);
    let acme = fake_secret("acme", &mut g).unwrap();
    let pat = fake_secret("github-pat", &mut g).unwrap();
    let text = format!("a = {acme}\nb = {pat}\n");
    let report = guard.scan(&[ScanInput::new("t", text.as_str())]).unwrap();
    let mut got: Vec<(String, FindingSource)> = report
        .findings
        .iter()
        .map(|f| (f.rule_id.clone(), f.source))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0).then((a.1 as u8).cmp(&(b.1 as u8))));
    // Without `[extend] useDefault`, both scanners run only the user's rule.
    assert_eq!(
        got,
        vec![
            ("acme-internal-token".to_string(), FindingSource::Promptd),
            ("acme-internal-token".to_string(), FindingSource::Gitleaks),
        ]
    );
}

// ------------------------------------------------------------------------------------------
// Failure modes: each is an error, never a clean report.
// ------------------------------------------------------------------------------------------

fn one_input() -> Vec<ScanInput<'static>> {
    vec![ScanInput::new("prompt", "nothing secret here\n")]
}

#[test]
fn a_missing_binary_is_an_error_at_start_up() {
    let err = Guard::new(with_gitleaks(PathBuf::from("/nonexistent/gitleaks"))).unwrap_err();
    assert!(matches!(err, GuardError::GitleaksMissing { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/gitleaks"), "{err}");
}

#[test]
fn a_binary_that_cannot_start_fails_the_scan() {
    // A real file without execute permission.
    let dir = tempfile::tempdir().unwrap();
    let not_exec = dir.path().join("gitleaks");
    std::fs::write(&not_exec, "not a program").unwrap();
    let guard = Guard::new(with_gitleaks(not_exec)).unwrap();
    let err = guard.scan(&one_input()).unwrap_err();
    assert!(matches!(err, GuardError::GitleaksStart { .. }), "{err}");
}

#[test]
fn an_error_exit_fails_the_scan() {
    // `false` exits 1, which is also gitleaks' own error status.
    let guard = Guard::new(with_gitleaks(PathBuf::from("/bin/false"))).unwrap();
    let err = guard.scan(&one_input()).unwrap_err();
    assert!(matches!(err, GuardError::GitleaksFailed { .. }), "{err}");
    assert!(err.to_string().contains("exit status 1"), "{err}");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn gitleaks_rejecting_its_config_fails_the_scan() {
    // Valid for promptd (Rust's regex knows the `u` flag), rejected by the RE2 engine gitleaks
    // uses ("bad perl operator"): the real binary exits with its error status.
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rules]]\nid = \"rust-only-syntax\"\nregex = '''(?u:acme)_[0-9a-f]{8}'''\n",
    )
    .unwrap();
    let guard = Guard::new(GuardOptions {
        rules_file: Some(rules),
        ..with_gitleaks(require_gitleaks())
    });
    match guard {
        Ok(guard) => {
            let err = guard.scan(&one_input()).unwrap_err();
            assert!(matches!(err, GuardError::GitleaksFailed { .. }), "{err}");
        }
        // If promptd itself rejects it, the guard never exists: also fail closed.
        Err(e) => assert!(matches!(e, GuardError::RuleInvalid { .. }), "{e}"),
    }
}

#[test]
fn a_silent_exit_without_report_fails_the_scan() {
    // `true` exits 0 but prints no report: not proof of "clean".
    let guard = Guard::new(with_gitleaks(PathBuf::from("/bin/true"))).unwrap();
    let err = guard.scan(&one_input()).unwrap_err();
    assert!(matches!(err, GuardError::GitleaksReport { .. }), "{err}");
}

#[test]
fn a_timeout_kills_gitleaks_and_fails_the_scan() {
    // A gitleaks that never answers: the scan fails at the timeout, long before it would exit.
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("gitleaks");
    std::fs::write(&slow, "#!/bin/sh\nexec sleep 30\n").unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let guard = Guard::new(GuardOptions {
        timeout: Duration::from_millis(300),
        ..with_gitleaks(slow)
    })
    .unwrap();
    let started = std::time::Instant::now();
    let err = guard.scan(&one_input()).unwrap_err();
    assert!(matches!(err, GuardError::GitleaksTimeout { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not killed at the timeout"
    );
}
