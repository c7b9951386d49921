//! Redaction policy: replacing found secrets by `[REDACTED:<rule-id>#n]` placeholders.
//!
//! Overlapping findings (two rules, or promptd and gitleaks, on the same secret) are merged into
//! one placeholder named after the earliest, longest finding. `n` numbers the distinct secret
//! values of a rule within one text, so the same secret repeated gets the same placeholder and a
//! reader (or an LLM) can still tell that two places use the same credential.

use std::collections::HashMap;

use super::SecretFinding;
use super::scanner::widen_to_chars;

/// Replaces every finding's span in `text`. Findings must come from scanning this very text
/// (filter a batch report by label first); spans past the end are clamped.
pub(crate) fn redact(text: &str, findings: &[SecretFinding]) -> String {
    let mut spans: Vec<(std::ops::Range<usize>, &str)> = findings
        .iter()
        .map(|f| {
            (
                widen_to_chars(text, f.byte_start..f.byte_end),
                f.rule_id.as_str(),
            )
        })
        .filter(|(r, _)| r.start < r.end)
        .collect();
    spans.sort_by(|a, b| a.0.start.cmp(&b.0.start).then(b.0.end.cmp(&a.0.end)));

    let mut merged: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    for (r, id) in spans {
        match merged.last_mut() {
            Some((last, _)) if r.start < last.end => last.end = last.end.max(r.end),
            _ => merged.push((r, id)),
        }
    }

    let mut numbers: HashMap<(&str, &str), usize> = HashMap::new();
    let mut per_rule: HashMap<&str, usize> = HashMap::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (r, id) in merged {
        out.push_str(&text[at..r.start]);
        let secret = &text[r.clone()];
        let n = *numbers.entry((id, secret)).or_insert_with(|| {
            let next = per_rule.entry(id).or_insert(0);
            *next += 1;
            *next
        });
        out.push_str(&format!("[REDACTED:{id}#{n}]"));
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}
