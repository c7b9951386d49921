//! The in-process scanner: runs a compiled [`RuleSet`] over text.
//!
//! Speed comes from doing little: one Aho-Corasick pass (ASCII case-insensitive) finds which rule
//! keywords occur in the input, and only the rules owning one of them (plus rules without
//! keywords) run their regex, compiled once at start-up. For each match the secret (the
//! `secretGroup`, else the first non-empty group, else the whole match) is checked against the
//! rule's entropy floor and allowlists, then turned into a [`SecretFinding`] that keeps only the
//! secret's position and a short redacted preview, never the secret itself. A composite rule's
//! finding is kept only when each rule it requires also matches within the stated distance, and
//! then the required matches are reported beside it (so redaction covers every part); `skipReport`
//! rules are otherwise matched only on a composite rule's behalf.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::decode;
use super::rules::{Allowlist, Condition, RegexTarget, Required, Rule, RuleSet};
use super::{FindingSource, SecretFinding};

/// A secret found in decoded text, before it is placed on the original text's encoded segment.
struct DecodedHit {
    rule_id: String,
    description: String,
    entropy: f64,
    /// Encodings nested inside the outermost one, outermost first.
    encodings: Vec<decode::Encoding>,
}

/// Rules ready to run, with the keyword prefilter built over them.
#[derive(Debug)]
pub(crate) struct Scanner {
    rules: RuleSet,
    /// All distinct keywords; `None` when no rule has one.
    keywords: Option<AhoCorasick>,
    /// For each keyword pattern, the rules it enables.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules that have no keyword and so always run.
    unconditional: Vec<usize>,
}

impl Scanner {
    pub(crate) fn new(rules: RuleSet) -> Scanner {
        let mut words: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut unconditional = Vec::new();
        for (i, rule) in rules.rules.iter().enumerate() {
            if rule.keywords.is_empty() {
                unconditional.push(i);
                continue;
            }
            for k in &rule.keywords {
                match words.iter().position(|w| w == k) {
                    Some(p) => keyword_rules[p].push(i),
                    None => {
                        words.push(k.clone());
                        keyword_rules.push(vec![i]);
                    }
                }
            }
        }
        let keywords = if words.is_empty() {
            None
        } else {
            Some(
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .build(&words)
                    .expect("keyword automaton is small enough to build"),
            )
        };
        Scanner {
            rules,
            keywords,
            keyword_rules,
            unconditional,
        }
    }

    pub(crate) fn rule_count(&self) -> usize {
        self.rules.rules.len()
    }

    /// Which rules may match `text`: a bit per rule.
    fn enabled_rules(&self, text: &[u8]) -> Vec<bool> {
        let mut enabled = vec![false; self.rules.rules.len()];
        for &i in &self.unconditional {
            enabled[i] = true;
        }
        if let Some(ac) = &self.keywords {
            let mut seen = vec![false; self.keyword_rules.len()];
            let mut remaining = seen.len();
            // Overlapping search, so that a keyword inside another ("sk" in "sk_live_") is seen.
            for m in ac.find_overlapping_iter(text) {
                let p = m.pattern().as_usize();
                if !seen[p] {
                    seen[p] = true;
                    for &r in &self.keyword_rules[p] {
                        enabled[r] = true;
                    }
                    remaining -= 1;
                    if remaining == 0 {
                        break;
                    }
                }
            }
        }
        enabled
    }

    /// Scans one text; `path` (when the text came from a file) feeds `path` rules and
    /// allowlists. Encoded segments are decoded and scanned too (see [`decode`]): a secret found
    /// inside one is reported on the encoded segment, its description naming the encodings.
    pub(crate) fn scan(&self, label: &str, path: Option<&str>, text: &str) -> Vec<SecretFinding> {
        // One line index of `text`, built on the first finding, for plain and decoded ones alike.
        let mut lines: Option<LineIndex> = None;
        let mut findings = self.scan_text(label, path, text, false, &mut lines);
        let segments = decode::encoded_segments(text);
        for (i, hit) in self.decoded_hits(path, &segments, 1) {
            let segment = &segments[i];
            let range = segment.range.clone();
            // The plain scan already placed this secret more precisely.
            if findings.iter().any(|f| {
                f.rule_id == hit.rule_id && f.byte_start < range.end && range.start < f.byte_end
            }) {
                continue;
            }
            let chain: Vec<&str> = std::iter::once(segment.encoding)
                .chain(hit.encodings.iter().copied())
                .map(decode::Encoding::name)
                .collect();
            let li = lines.get_or_insert_with(|| LineIndex::new(text));
            findings.push(finding_at(
                &hit.rule_id,
                &format!("{} (decoded: {})", hit.description, chain.join(" > ")),
                label,
                text,
                li,
                range,
                hit.entropy,
                FindingSource::Promptd,
            ));
        }
        dedupe(&mut findings);
        findings
    }

    /// Secrets in the decoded texts of `segments`, and (up to [`decode::MAX_DECODE_DEPTH`]) in
    /// the segments encoded within them, each with the index of its segment. The decoded texts
    /// are scanned as one text, a blank line apart, so that many small segments cost one pass of
    /// the rules, not one each; a match is attributed to the segment it starts in.
    fn decoded_hits(
        &self,
        path: Option<&str>,
        segments: &[decode::EncodedSegment],
        depth: usize,
    ) -> Vec<(usize, DecodedHit)> {
        if segments.is_empty() {
            return Vec::new();
        }
        let mut joined = String::new();
        let mut starts = Vec::with_capacity(segments.len());
        for segment in segments {
            starts.push(joined.len());
            joined.push_str(&segment.decoded);
            joined.push_str("\n\n");
        }
        let owner = |offset: usize| starts.partition_point(|&s| s <= offset) - 1;
        let mut hits: Vec<(usize, DecodedHit)> = self
            .scan_text("decoded", path, &joined, true, &mut None)
            .into_iter()
            .map(|f| {
                (
                    owner(f.byte_start),
                    DecodedHit {
                        rule_id: f.rule_id,
                        description: f.description,
                        entropy: f64::from(f.entropy),
                        encodings: Vec::new(),
                    },
                )
            })
            .collect();
        if depth < decode::MAX_DECODE_DEPTH {
            let inner = decode::encoded_segments(&joined);
            for (j, mut hit) in self.decoded_hits(path, &inner, depth + 1) {
                hit.encodings.insert(0, inner[j].encoding);
                hits.push((owner(inner[j].range.start), hit));
            }
        }
        hits
    }

    /// The rules over one text, without decoding and before [`dedupe`] (which [`Self::scan`]
    /// runs once over everything). `decoded` texts skip path-only rules (the file itself was
    /// judged by its own scan). `lines` is `text`'s line index, built on the first finding.
    fn scan_text(
        &self,
        label: &str,
        path: Option<&str>,
        text: &str,
        decoded: bool,
        lines: &mut Option<LineIndex>,
    ) -> Vec<SecretFinding> {
        let enabled = self.enabled_rules(text.as_bytes());
        // Findings of rules required by composite rules, computed once per text on first need.
        let mut auxiliary: Vec<Option<Vec<SecretFinding>>> = Vec::new();
        let mut findings = Vec::new();
        for (ri, rule) in self.rules.rules.iter().enumerate() {
            if !enabled[ri] || rule.skip_report || (decoded && rule.regex.is_none()) {
                continue;
            }
            let mut found = self.rule_findings(rule, label, path, text, lines);
            if !rule.required.is_empty() && !found.is_empty() {
                auxiliary.resize_with(self.rules.rules.len(), || None);
                for q in &rule.required {
                    if auxiliary[q.rule].is_none() {
                        let aux = if enabled[q.rule] {
                            let required_rule = &self.rules.rules[q.rule];
                            self.rule_findings(required_rule, label, path, text, lines)
                        } else {
                            Vec::new()
                        };
                        auxiliary[q.rule] = Some(aux);
                    }
                }
                // A kept finding brings along the parts that completed it: they are secrets too,
                // reported beside it (even from a `skipReport` rule) so that redaction covers the
                // whole pair.
                let mut kept = Vec::with_capacity(found.len());
                for primary in found {
                    let mut parts = Vec::new();
                    let complete = rule.required.iter().all(|q| {
                        let before = parts.len();
                        parts.extend(
                            auxiliary[q.rule]
                                .as_deref()
                                .unwrap_or_default()
                                .iter()
                                .filter(|aux| within_proximity(&primary, aux, q))
                                .cloned(),
                        );
                        parts.len() > before
                    });
                    if complete {
                        findings.extend(parts);
                        kept.push(primary);
                    }
                }
                found = kept;
            }
            findings.extend(found);
        }
        findings
    }

    /// One rule's findings in `text`, after its entropy floor and allowlists; composite
    /// requirements are the caller's business (as in gitleaks, a required rule's own
    /// requirements are not followed).
    fn rule_findings(
        &self,
        rule: &Rule,
        label: &str,
        path: Option<&str>,
        text: &str,
        lines: &mut Option<LineIndex>,
    ) -> Vec<SecretFinding> {
        let bytes = text.as_bytes();
        let mut findings = Vec::new();
        let mut push = |span: std::ops::Range<usize>, entropy: f64| {
            let li = lines.get_or_insert_with(|| LineIndex::new(text));
            findings.push(make_finding(
                rule,
                label,
                text,
                li,
                span,
                entropy,
                FindingSource::Promptd,
            ));
        };
        if let Some(path_re) = &rule.path {
            match path {
                Some(p) if path_re.is_match(p.as_bytes()) => {}
                _ => return findings,
            }
        }
        let Some(re) = &rule.regex else {
            // A path-only rule: the whole input is the finding (e.g. a key file by name).
            if !text.is_empty() && !self.allowed(rule, path, "", "", "") {
                push(0..text.len(), 0.0);
            }
            return findings;
        };
        // (whole match, secret) pairs. A regex without capture groups is answered by the DFA
        // alone; the capture engines run only when a group says where the secret is.
        let spans: Box<dyn Iterator<Item = (regex::bytes::Match, regex::bytes::Match)>> =
            if re.captures_len() == 1 {
                Box::new(re.find_iter(bytes).map(|m| (m, m)))
            } else {
                Box::new(re.captures_iter(bytes).map(|caps| {
                    let whole = caps.get(0).expect("group 0 always participates");
                    let secret = match rule.secret_group {
                        Some(g) => caps.get(g),
                        None => (1..caps.len())
                            .filter_map(|g| caps.get(g))
                            .find(|m| !m.is_empty()),
                    }
                    .unwrap_or(whole);
                    (whole, secret)
                }))
            };
        for (whole, secret) in spans {
            if secret.is_empty() {
                continue;
            }
            let span = widen_to_chars(text, secret.start()..secret.end());
            let match_span = widen_to_chars(text, whole.start()..whole.end());
            let secret_text = &text[span.clone()];
            let entropy = shannon_entropy(secret_text);
            if let Some(floor) = rule.entropy
                && entropy <= floor
            {
                continue;
            }
            let line_span = line_around(text, match_span.clone());
            if self.allowed(rule, path, secret_text, &text[match_span], &text[line_span]) {
                continue;
            }
            push(span, entropy);
        }
        findings
    }

    /// Whether the rule's own allowlists, or a global allowlist that targets it, allow the
    /// finding.
    fn allowed(&self, rule: &Rule, path: Option<&str>, secret: &str, m: &str, line: &str) -> bool {
        let check = |a: &Allowlist| allowlist_allows(a, path, secret, m, line);
        rule.allowlists.iter().any(check)
            || self.rules.global.iter().any(|a| {
                (a.target_rules.is_empty() || a.target_rules.iter().any(|t| t == &rule.id))
                    && check(a)
            })
    }
}

/// gitleaks' proximity test for a composite rule: with neither distance set, anywhere in the same
/// text; `withinLines` bounds the distance between first lines; `withinColumns` bounds the
/// distance between first columns and, since columns restart on every line, needs the same line.
fn within_proximity(primary: &SecretFinding, aux: &SecretFinding, q: &Required) -> bool {
    if let Some(n) = q.within_lines
        && primary.line.abs_diff(aux.line) > n
    {
        return false;
    }
    if let Some(n) = q.within_columns
        && (primary.line != aux.line || primary.column_start.abs_diff(aux.column_start) > n)
    {
        return false;
    }
    true
}

/// gitleaks' allowlist semantics: with `OR` any present check that matches allows; with `AND`
/// every present check must match.
fn allowlist_allows(a: &Allowlist, path: Option<&str>, secret: &str, m: &str, line: &str) -> bool {
    if a.commits_only {
        return false;
    }
    let target = match a.target {
        RegexTarget::Secret => secret,
        RegexTarget::Match => m,
        RegexTarget::Line => line,
    };
    let regex_hit = || {
        a.regexes
            .as_ref()
            .is_some_and(|r| r.is_match(target.as_bytes()))
    };
    let stopword_hit = || {
        let lower = secret.to_lowercase();
        a.stopwords.iter().any(|w| lower.contains(w.as_str()))
    };
    let path_hit = || path.is_some_and(|p| a.paths.iter().any(|r| r.is_match(p.as_bytes())));
    match a.condition {
        Condition::Or => {
            (a.regexes.is_some() && regex_hit())
                || (!a.stopwords.is_empty() && stopword_hit())
                || (!a.paths.is_empty() && path_hit())
        }
        Condition::And => {
            (a.regexes.is_none() || regex_hit())
                && (a.stopwords.is_empty() || stopword_hit())
                && (a.paths.is_empty() || path_hit())
        }
    }
}

/// Drops exact duplicates and generic findings whose secret overlaps a specific rule's finding
/// (the specific rule says more about what leaked), as gitleaks does.
fn dedupe(findings: &mut Vec<SecretFinding>) {
    findings.sort_by(|a, b| {
        (a.byte_start, a.byte_end, &a.rule_id).cmp(&(b.byte_start, b.byte_end, &b.rule_id))
    });
    findings.dedup_by(|a, b| {
        a.rule_id == b.rule_id && a.byte_start == b.byte_start && a.byte_end == b.byte_end
    });
    // Specific findings sorted by start, with the running maximum of their ends: a generic
    // finding overlaps one of them iff some specific finding starting before its end also ends
    // after its start.
    let mut specific: Vec<(usize, usize)> = findings
        .iter()
        .filter(|f| !f.rule_id.starts_with("generic"))
        .map(|f| (f.byte_start, f.byte_end))
        .collect();
    if specific.is_empty() {
        return;
    }
    specific.sort_unstable();
    let max_end: Vec<usize> = specific
        .iter()
        .scan(0, |m, &(_, e)| {
            *m = (*m).max(e);
            Some(*m)
        })
        .collect();
    findings.retain(|f| {
        if !f.rule_id.starts_with("generic") {
            return true;
        }
        let before_end = specific.partition_point(|&(s, _)| s < f.byte_end);
        before_end == 0 || max_end[before_end - 1] <= f.byte_start
    });
}

/// Shannon entropy of the secret in bits per character.
pub(crate) fn shannon_entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let term = |count: usize, n: f64| {
        let p = count as f64 / n;
        -p * p.log2()
    };
    if s.is_ascii() {
        // Secrets are almost always ASCII: count bytes in a table, no hashing.
        let mut counts = [0usize; 128];
        for b in s.bytes() {
            counts[usize::from(b)] += 1;
        }
        let n = s.len() as f64;
        return counts.iter().filter(|&&c| c > 0).map(|&c| term(c, n)).sum();
    }
    let mut counts = std::collections::HashMap::<char, usize>::new();
    let mut n = 0usize;
    for c in s.chars() {
        *counts.entry(c).or_default() += 1;
        n += 1;
    }
    counts.values().map(|&c| term(c, n as f64)).sum()
}

/// Grows a byte range to the nearest character boundaries (a byte-level regex may start or end
/// inside a multi-byte character).
pub(crate) fn widen_to_chars(text: &str, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let mut start = r.start.min(text.len());
    let mut end = r.end.min(text.len()).max(start);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// The full line(s) a match sits on, for `regexTarget = "line"`.
fn line_around(text: &str, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let start = text[..r.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[r.end..].find('\n').map_or(text.len(), |i| r.end + i);
    start..end
}

/// Byte offsets of line starts, built once per input that has a finding.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// 1-based line and 1-based character column of a byte offset.
    pub(crate) fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }

    /// Byte offset where a 1-based line starts, if the text has that line.
    pub(crate) fn line_start(&self, line: usize) -> Option<usize> {
        line.checked_sub(1)
            .and_then(|l| self.starts.get(l).copied())
    }

    pub(crate) fn line_count(&self) -> usize {
        self.starts.len()
    }
}

/// A short preview of a secret: a few leading characters (at most a quarter of it) then `…`.
pub(crate) fn preview(secret: &str) -> String {
    let n = secret.chars().count();
    let keep = (n / 4).min(4);
    let mut out: String = secret.chars().take(keep).collect();
    out.push('…');
    out
}

/// Builds a finding for the secret at `span` of `text`. The secret text is read here for the
/// preview only; the finding keeps positions, never the value.
pub(crate) fn make_finding(
    rule: &Rule,
    label: &str,
    text: &str,
    lines: &LineIndex,
    span: std::ops::Range<usize>,
    entropy: f64,
    source: FindingSource,
) -> SecretFinding {
    finding_at(
        &rule.id,
        &rule.description,
        label,
        text,
        lines,
        span,
        entropy,
        source,
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn finding_at(
    rule_id: &str,
    description: &str,
    label: &str,
    text: &str,
    lines: &LineIndex,
    span: std::ops::Range<usize>,
    entropy: f64,
    source: FindingSource,
) -> SecretFinding {
    let (line, column_start) = lines.position(text, span.start);
    let last = if span.end > span.start {
        text[..span.end]
            .char_indices()
            .next_back()
            .map_or(span.start, |(i, _)| i)
    } else {
        span.start
    };
    let (end_line, column_end) = lines.position(text, last);
    SecretFinding {
        rule_id: rule_id.to_string(),
        description: description.to_string(),
        label: label.to_string(),
        line,
        end_line,
        column_start,
        column_end,
        entropy: (entropy * 1000.0).round() as f32 / 1000.0,
        redacted: preview(&text[span.clone()]),
        source,
        byte_start: span.start,
        byte_end: span.end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_uniform_strings() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
        assert!((shannon_entropy("0123456789abcdef") - 4.0).abs() < 1e-9);
    }

    #[test]
    fn preview_keeps_at_most_a_quarter() {
        assert_eq!(preview("abc"), "…");
        assert_eq!(preview("abcdefgh"), "ab…");
        assert_eq!(preview("abcdefghijklmnopqrstuvwxyz"), "abcd…");
        assert_eq!(preview("ééééééééé"), "éé…");
    }

    #[test]
    fn positions_are_one_based_characters() {
        let text = "ab\néx yz\n";
        let li = LineIndex::new(text);
        assert_eq!(li.position(text, 0), (1, 1));
        assert_eq!(li.position(text, 3), (2, 1));
        assert_eq!(li.position(text, 6), (2, 3));
    }
}
