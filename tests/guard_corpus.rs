//! The built-in rules over the generated corpus: every positive found with its rule, no
//! look-alike flagged, batch scans equal to single scans, and the secret absent from every
//! output (findings, JSON, Debug, redacted text).

use crate::support::guard;

use guard::{CorpusItem, REQUIRED_KINDS, corpus, scan_inputs};
use promptd::guard::{Guard, ScanInput, SecretFinding};

fn scan_one(guard: &Guard, item: &CorpusItem) -> Vec<SecretFinding> {
    guard
        .scan(&[ScanInput::new(item.name.clone(), item.text.as_str())])
        .expect("in-process scan cannot fail")
        .findings
}

#[test]
fn corpus_covers_every_required_kind_and_has_enough_negatives() {
    let items = corpus();
    let positives = items.iter().filter(|i| i.is_positive()).count();
    let negatives = items.len() - positives;
    assert!(
        negatives >= positives,
        "{negatives} negatives < {positives} positives"
    );
    for kind in REQUIRED_KINDS {
        assert!(
            items.iter().any(|i| i.expect.as_deref() == Some(*kind)),
            "no positive for required kind {kind}"
        );
    }
    let mut names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), items.len(), "corpus names must be unique");
}

#[test]
fn every_positive_is_found_with_its_rule() {
    let guard = Guard::builtin().unwrap();
    let mut failures = Vec::new();
    for item in corpus().iter().filter(|i| i.is_positive()) {
        let expect = item.expect.as_deref().unwrap();
        let findings = scan_one(&guard, item);
        let secret = item.secret.as_deref().unwrap();
        let hit = findings.iter().find(|f| f.rule_id == expect);
        match hit {
            None => failures.push(format!(
                "{}: expected {expect}, got {:?}",
                item.name,
                findings.iter().map(|f| &f.rule_id).collect::<Vec<_>>()
            )),
            Some(f) => {
                // The finding's span covers the secret (and so redaction removes it).
                let covered = &item.text[f.byte_start..f.byte_end];
                if !covered.contains(secret) && !secret.contains(covered) {
                    failures.push(format!(
                        "{}: finding span does not cover the secret (span {}..{})",
                        item.name, f.byte_start, f.byte_end
                    ));
                }
                let line_of_secret = item.text[..item.text.find(secret).unwrap()]
                    .matches('\n')
                    .count()
                    + 1;
                if f.line > line_of_secret || f.end_line < line_of_secret {
                    failures.push(format!(
                        "{}: finding lines {}..={} miss the secret's line {line_of_secret}",
                        item.name, f.line, f.end_line
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_look_alike_is_flagged() {
    let guard = Guard::builtin().unwrap();
    let mut failures = Vec::new();
    for item in corpus().iter().filter(|i| !i.is_positive()) {
        let findings = scan_one(&guard, item);
        for f in findings {
            failures.push(format!(
                "{}: false positive {} at {}:{} ({})",
                item.name, f.rule_id, f.line, f.column_start, f.redacted
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn one_batch_scan_equals_scanning_each_input() {
    let guard = Guard::builtin().unwrap();
    let items = corpus();
    let report = guard.scan(&scan_inputs(&items)).unwrap();
    assert_eq!(report.scanners, vec!["promptd".to_string()]);
    for item in &items {
        let batch: Vec<SecretFinding> = report.findings_for(&item.name).cloned().collect();
        assert_eq!(batch, scan_one(&guard, item), "{}", item.name);
    }
}

#[test]
fn the_secret_never_appears_in_findings_json_debug_or_redacted_text() {
    let guard = Guard::builtin().unwrap();
    for item in corpus().iter().filter(|i| i.is_positive()) {
        let secret = item.secret.as_deref().unwrap();
        let findings = scan_one(&guard, item);
        assert!(!findings.is_empty(), "{}", item.name);
        let json = serde_json::to_string(&findings).unwrap();
        let debug = format!("{findings:?}");
        let redacted = guard.redact(&item.text, &findings);
        // Any 8-character window of the secret would already say too much.
        let chars: Vec<char> = secret.chars().collect();
        for window in chars.windows(8.min(chars.len())) {
            let w: String = window.iter().collect();
            if w.chars().all(|c| c.is_ascii_alphanumeric()) && w.chars().any(|c| c.is_ascii_digit())
            {
                assert!(!json.contains(&w), "{}: JSON leaks {w:?}…", item.name);
                assert!(!debug.contains(&w), "{}: Debug leaks", item.name);
            }
        }
        assert!(
            !redacted.contains(secret),
            "{}: redaction left the secret",
            item.name
        );
        assert!(redacted.contains("[REDACTED:"), "{}", item.name);
        for f in &findings {
            assert!(f.redacted.ends_with('…'), "{}", item.name);
            assert!(f.redacted.chars().count() <= 5, "{}", item.name);
        }
    }
}

#[test]
fn findings_serialize_in_camel_case() {
    let guard = Guard::builtin().unwrap();
    let item = corpus()
        .into_iter()
        .find(|i| i.expect.as_deref() == Some("github-pat"))
        .unwrap();
    let findings = scan_one(&guard, &item);
    let v = serde_json::to_value(&findings[0]).unwrap();
    for key in [
        "ruleId",
        "description",
        "label",
        "line",
        "endLine",
        "columnStart",
        "columnEnd",
        "entropy",
        "redacted",
        "source",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["source"], "promptd");
    assert_eq!(v["ruleId"], "github-pat");
}

#[test]
fn format_string_placeholders_are_not_secrets() {
    let guard = Guard::builtin().unwrap();
    let text = "url = f\"postgres://{user}:{password}@{host}/app\"\nlet dsn = format!(\"redis://:{pass}@cache\");\n";
    let report = guard.scan(&[ScanInput::new("code", text)]).unwrap();
    assert!(report.is_clean(), "{:?}", report.findings);
}
