//! Recall and false positives of the built-in rules on the coverage corpus (several hundred
//! generated secrets across every rule family, and realistic non-secrets), and the same corpus
//! through the real gitleaks binary with its default rules, for comparison.

use crate::support::guard;

use guard::{CorpusItem, coverage, scan_inputs};
use promptd::guard::{FindingSource, Guard, GuardOptions, ScanInput, SecretFinding};

/// The coverage corpus as (positives, negatives).
fn positives_and_negatives() -> (Vec<CorpusItem>, Vec<CorpusItem>) {
    coverage().into_iter().partition(CorpusItem::is_positive)
}

/// Whether `findings` has the expected rule's finding over the secret.
fn found(case: &CorpusItem, findings: &[SecretFinding]) -> bool {
    let secret = case.secret.as_deref().unwrap();
    findings.iter().any(|f| {
        let covered = &case.text[f.byte_start..f.byte_end];
        Some(f.rule_id.as_str()) == case.expect.as_deref()
            && (covered.contains(secret) || secret.contains(covered))
    })
}

#[test]
fn recall_is_at_least_98_percent_and_no_negative_is_flagged() {
    let guard = Guard::builtin().unwrap();
    let (positives, negatives) = positives_and_negatives();
    let mut misses = Vec::new();
    for case in &positives {
        let report = guard
            .scan(&[ScanInput::new(case.name.clone(), case.text.as_str())])
            .unwrap();
        if !found(case, &report.findings) {
            let got: Vec<&str> = report.findings.iter().map(|f| f.rule_id.as_str()).collect();
            misses.push(format!(
                "{}: expected {}, got {got:?}",
                case.name,
                case.expect.as_deref().unwrap()
            ));
        }
    }
    let mut false_positives = Vec::new();
    for case in &negatives {
        let report = guard
            .scan(&[ScanInput::new(case.name.clone(), case.text.as_str())])
            .unwrap();
        for f in &report.findings {
            false_positives.push(format!(
                "{}: {} at {}:{} ({})",
                case.name, f.rule_id, f.line, f.column_start, f.redacted
            ));
        }
    }
    let recall = 1.0 - misses.len() as f64 / positives.len() as f64;
    eprintln!(
        "promptd: recall {recall:.3} ({} of {} positives), {} false positives on {} negatives",
        positives.len() - misses.len(),
        positives.len(),
        false_positives.len(),
        negatives.len()
    );
    assert!(positives.len() >= 300, "{} positives", positives.len());
    assert!(negatives.len() >= 300, "{} negatives", negatives.len());
    assert!(
        recall >= 0.98,
        "recall {recall:.3}; missed:\n{}",
        misses.join("\n")
    );
    assert!(
        false_positives.is_empty(),
        "false positives:\n{}",
        false_positives.join("\n")
    );
}

#[test]
fn every_rule_family_has_positives() {
    let guard_rules: Vec<String> = {
        let toml: toml::Value =
            toml::from_str(include_str!("../crates/guard/src/builtin.toml")).unwrap();
        toml["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r.get("regex").is_some())
            // A skipReport rule is never reported on its own: the composite that requires it
            // has the positive.
            .filter(|r| r.get("skipReport").and_then(toml::Value::as_bool) != Some(true))
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    let positives = coverage();
    let legacy = guard::corpus();
    let uncovered: Vec<&String> = guard_rules
        .iter()
        .filter(|id| {
            !positives.iter().any(|c| c.expect.as_ref() == Some(*id))
                && !legacy.iter().any(|c| c.expect.as_ref() == Some(*id))
        })
        .collect();
    assert!(
        uncovered.is_empty(),
        "rules without a positive: {uncovered:?}"
    );
}

/// gitleaks' default rules on the same corpus: its recall is printed for comparison, not held
/// to ours (it is another scanner); the run must complete and find secrets.
#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs gitleaks (scripts/setup installs it)"
)]
#[test]
fn gitleaks_default_rules_on_the_coverage_corpus() {
    let bin = guard::require_gitleaks();
    let guard = Guard::new(GuardOptions {
        gitleaks_bin: Some(bin),
        ..GuardOptions::default()
    })
    .unwrap();
    let (positives, negatives) = positives_and_negatives();
    let report = guard
        .scan(&scan_inputs(positives.iter().chain(&negatives)))
        .unwrap();
    let theirs = |c: &CorpusItem| {
        report
            .findings_for(&c.name)
            .any(|f| f.source == FindingSource::Gitleaks)
    };
    let hits = positives.iter().filter(|c| theirs(c)).count();
    let flagged = negatives.iter().filter(|c| theirs(c)).count();
    eprintln!(
        "gitleaks (default rules): recall {:.3} ({hits} of {} positives), {flagged} of {} negatives flagged",
        hits as f64 / positives.len() as f64,
        positives.len(),
        negatives.len()
    );
    assert!(
        hits > 0,
        "gitleaks found none of the {} secrets",
        positives.len()
    );
}

/// Writes the coverage corpus as one file per item under `$EVAL_GUARD_GENERATED_DIR/coverage/`
/// (`pos/<rule>/<n>/sample.txt`, `neg/<group>/<n>/sample.txt`, `index.json`), for
/// `scripts/eval-guard` to scan with promptd and gitleaks beside the corpora it fetches.
#[test]
#[ignore = "run by scripts/eval-guard"]
fn write_the_coverage_corpus_for_eval_guard() {
    let dir = std::path::PathBuf::from(
        std::env::var_os("EVAL_GUARD_GENERATED_DIR").expect("EVAL_GUARD_GENERATED_DIR is set"),
    );
    let mut index = Vec::new();
    let mut counts = std::collections::HashMap::<(bool, String), usize>::new();
    for item in coverage() {
        let positive = item.is_positive();
        let family = match &item.expect {
            Some(rule) => rule.clone(),
            None => item
                .name
                .split('/')
                .next()
                .unwrap_or("negative")
                .to_string(),
        };
        let safe: String = family
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let n = counts.entry((positive, safe.clone())).or_default();
        let label = if positive { "pos" } else { "neg" };
        let rel = format!("coverage/{label}/{safe}/{n}/sample.txt");
        *n += 1;
        let path = dir.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &item.text).unwrap();
        index.push(serde_json::json!({"file": rel, "label": label, "family": family}));
    }
    let doc = serde_json::json!({"samples": index, "skipped": 0});
    std::fs::write(dir.join("coverage/index.json"), doc.to_string()).unwrap();
}
