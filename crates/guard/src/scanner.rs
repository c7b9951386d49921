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
use regex::bytes::RegexSet;

use super::decode;
use super::rules::{Allowlist, Condition, RegexTarget, Required, Rule, RuleSet};
use super::{Explanation, FindingSource, SecretFinding};

/// How far from a finding (bytes, on its lines) `explain` looks for the keyword that let its
/// rule run: a rule's match holds its keyword, or has it a few words before the secret.
const EXPLAIN_REACH: usize = 256;

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
    /// Each keyword's pattern index in the prefilter.
    keyword_index: std::collections::HashMap<String, usize>,
    /// Each rule's position in the set, by id: its rank among equally specific rules.
    rule_index: std::collections::HashMap<String, usize>,
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
        let keyword_index = words.into_iter().enumerate().map(|(i, w)| (w, i)).collect();
        let mut rule_index = std::collections::HashMap::with_capacity(rules.rules.len());
        for (i, rule) in rules.rules.iter().enumerate() {
            rule_index.entry(rule.id.clone()).or_insert(i);
        }
        Scanner {
            rules,
            keywords,
            keyword_rules,
            unconditional,
            keyword_index,
            rule_index,
        }
    }

    pub(crate) fn rule_count(&self) -> usize {
        self.rules.rules.len()
    }

    /// Why each of `findings` (all of `text`) was reported; see [`Explanation`]. The keywords
    /// present in `text` are found in one pass of the prefilter, then the text around each
    /// finding (at most [`EXPLAIN_REACH`] bytes either side) is searched for its rule's keywords:
    /// linear in the text and in the findings.
    pub(crate) fn explain_all(&self, text: &str, findings: &[SecretFinding]) -> Vec<Explanation> {
        let present = self.keywords_present(text.as_bytes());
        findings
            .iter()
            .map(|f| self.explain_one(text, &present, f))
            .collect()
    }

    /// Which keyword patterns (indices into the prefilter) occur in `text`.
    fn keywords_present(&self, text: &[u8]) -> Vec<bool> {
        let mut seen = vec![false; self.keyword_rules.len()];
        if let Some(ac) = &self.keywords {
            for m in ac.find_overlapping_iter(text) {
                seen[m.pattern().as_usize()] = true;
            }
        }
        seen
    }

    fn explain_one(&self, text: &str, present: &[bool], finding: &SecretFinding) -> Explanation {
        let decoded = finding.encodings.clone();
        let rule = (finding.source == FindingSource::Promptd)
            .then(|| {
                self.rule_index
                    .get(&finding.rule_id)
                    .map(|&i| &self.rules.rules[i])
            })
            .flatten();
        let Some(rule) = rule else {
            let who = match finding.source {
                FindingSource::Gitleaks => "gitleaks reported it with its rule",
                FindingSource::Promptd => "no rule of this set has the id",
            };
            return Explanation {
                rule_id: finding.rule_id.clone(),
                label: finding.label.clone(),
                line: finding.line,
                source: finding.source,
                keyword: None,
                pattern: None,
                secret_group: None,
                entropy: finding.entropy,
                entropy_floor: None,
                allowlists_checked: Vec::new(),
                decoded,
                summary: format!("{who} `{}`", finding.rule_id),
            };
        };
        // The keyword near the finding on its own line(s) if there is one, else one that occurs
        // anywhere in the text (as the prefilter saw it). Near is at most EXPLAIN_REACH bytes
        // either side, stopping at a line end: a minified file is one line holding many
        // findings, and searching the whole line for each would be quadratic.
        let near = near_bytes(text, finding.byte_start..finding.byte_end);
        let contains = |hay: &[u8], k: &str| {
            let k = k.as_bytes();
            !k.is_empty() && hay.windows(k.len()).any(|w| w.eq_ignore_ascii_case(k))
        };
        let keyword = rule
            .keywords
            .iter()
            .find(|k| contains(near, k))
            .or_else(|| {
                rule.keywords.iter().find(|k| {
                    self.keyword_index
                        .get(k.as_str())
                        .is_some_and(|&p| present[p])
                })
            })
            .cloned();
        let allowlists_checked: Vec<String> = rule
            .allowlists
            .iter()
            .map(|a| format!("rule: {}", a.description))
            .chain(
                self.rules
                    .global
                    .iter()
                    .filter(|a| a.targets(&rule.id))
                    .map(|a| format!("global: {}", a.description)),
            )
            .collect();
        let group = rule.regex.as_ref().map(|re| {
            if re.captures_len() == 1 {
                0
            } else {
                rule.secret_group.unwrap_or(1)
            }
        });
        let mut summary = format!("rule `{}` ({})", rule.id, rule.description);
        match (&keyword, rule.keywords.is_empty()) {
            (Some(k), _) => summary.push_str(&format!(": keyword `{k}` occurs in the input")),
            (None, true) => summary.push_str(": a rule without keywords, run on every input"),
            (None, false) => summary.push_str(": its keyword occurs in decoded text"),
        }
        match (&rule.regex, &rule.path) {
            (Some(_), _) => summary.push_str(", its pattern matched"),
            (None, Some(_)) => summary.push_str(", the file's path matched its path pattern"),
            (None, None) => {}
        }
        if let Some(floor) = rule.entropy {
            summary.push_str(&format!(
                ", the value's entropy {:.2} is above its floor {floor}",
                finding.entropy
            ));
        }
        if !allowlists_checked.is_empty() {
            summary.push_str(&format!(
                ", and none of its {} allowlist(s) applied",
                allowlists_checked.len()
            ));
        }
        if !decoded.is_empty() {
            summary.push_str(&format!(" (found after decoding {})", decoded.join(" > ")));
        }
        Explanation {
            rule_id: rule.id.clone(),
            label: finding.label.clone(),
            line: finding.line,
            source: finding.source,
            keyword,
            pattern: rule.regex.as_ref().map(|re| re.as_str().to_string()),
            secret_group: group,
            entropy: finding.entropy,
            entropy_floor: rule.entropy,
            allowlists_checked,
            decoded,
            summary,
        }
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
        let hits = self.decoded_hits(path, &segments, 1);
        // The plain findings of each rule, to skip a decoded hit the plain scan already placed
        // (more precisely).
        let mut plain: std::collections::HashMap<&str, Vec<(usize, usize)>> = Default::default();
        if !hits.is_empty() {
            for f in &findings {
                plain
                    .entry(f.rule_id.as_str())
                    .or_default()
                    .push((f.byte_start, f.byte_end));
            }
        }
        let plain: std::collections::HashMap<&str, Spans> =
            plain.into_iter().map(|(k, v)| (k, Spans::new(v))).collect();
        let mut decoded = Vec::new();
        for (i, hit) in hits {
            let segment = &segments[i];
            let range = segment.range.clone();
            if plain
                .get(hit.rule_id.as_str())
                .is_some_and(|spans| spans.overlaps(range.clone()))
            {
                continue;
            }
            let chain: Vec<&str> = std::iter::once(segment.encoding)
                .chain(hit.encodings.iter().copied())
                .map(decode::Encoding::name)
                .collect();
            let li = lines.get_or_insert_with(|| LineIndex::new(text));
            let at = SecretAt {
                label,
                text,
                lines: li,
                span: range,
            };
            let mut finding = at.finding(
                &hit.rule_id,
                &format!("{} (decoded: {})", hit.description, chain.join(" > ")),
                hit.entropy,
                FindingSource::Promptd,
            );
            finding.encodings = chain.iter().map(|e| e.to_string()).collect();
            decoded.push(finding);
        }
        drop(plain);
        findings.append(&mut decoded);
        let rank = |id: &str| self.rule_index.get(id).copied().unwrap_or(usize::MAX);
        dedupe(&mut findings, rank);
        merge_overlaps(findings, rank, |primary, span| {
            let li = lines.get_or_insert_with(|| LineIndex::new(text));
            let at = SecretAt {
                label,
                text,
                lines: li,
                span,
            };
            let mut merged = at.finding(
                &primary.rule_id,
                &primary.description,
                f64::from(primary.entropy),
                primary.source,
            );
            merged.encodings = primary.encodings.clone();
            merged
        })
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
                        let mut aux = if enabled[q.rule] {
                            let required_rule = &self.rules.rules[q.rule];
                            self.rule_findings(required_rule, label, path, text, lines)
                        } else {
                            Vec::new()
                        };
                        // In (line, column) order: the parts near a finding are one window.
                        aux.sort_by_key(|f| (f.line, f.column_start));
                        auxiliary[q.rule] = Some(aux);
                    }
                }
                let aux_of = |q: &Required| auxiliary[q.rule].as_deref().unwrap_or_default();
                // A kept finding brings along the parts that completed it: they are secrets too,
                // reported beside it (even from a `skipReport` rule) so that redaction covers the
                // whole pair. Each kept finding marks its windows (+1 at the start, -1 past the
                // end); a running sum then tells which parts some kept finding needs.
                let mut marks: Vec<Vec<isize>> = rule
                    .required
                    .iter()
                    .map(|q| vec![0; aux_of(q).len() + 1])
                    .collect();
                let mut kept = Vec::with_capacity(found.len());
                for primary in found {
                    let windows: Vec<std::ops::Range<usize>> = rule
                        .required
                        .iter()
                        .map(|q| proximity_window(aux_of(q), &primary, q))
                        .collect();
                    if windows.iter().all(|w| !w.is_empty()) {
                        for (mark, w) in marks.iter_mut().zip(windows) {
                            mark[w.start] += 1;
                            mark[w.end] -= 1;
                        }
                        kept.push(primary);
                    }
                }
                for (q, mark) in rule.required.iter().zip(&marks) {
                    let mut depth = 0;
                    for (part, m) in aux_of(q).iter().zip(mark) {
                        depth += m;
                        if depth > 0 {
                            findings.push(part.clone());
                        }
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
        if let Some(path_re) = &rule.path {
            match path {
                Some(p) if path_re.is_match(p.as_bytes()) => {}
                _ => return findings,
            }
        }
        let finding = |lines: &LineIndex, span: std::ops::Range<usize>, entropy: f64| {
            let at = SecretAt {
                label,
                text,
                lines,
                span,
            };
            at.finding(&rule.id, &rule.description, entropy, FindingSource::Promptd)
        };
        let Some(re) = &rule.regex else {
            // A path-only rule: the whole input is the finding (e.g. a key file by name).
            let whole = Candidate {
                path,
                secret: "",
                matched: "",
                line: 0..0,
            };
            if !text.is_empty() && !self.allowed(rule, &whole, &mut |_, set| set.is_match(b"")) {
                let li = lines.get_or_insert_with(|| LineIndex::new(text));
                findings.push(finding(li, 0..text.len(), 0.0));
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
        // Line-target allowlist verdicts, one per allowlist for the line(s) last asked about:
        // matches come in order, so every line is searched at most once per allowlist, however
        // many matches it holds.
        let mut line_verdicts: Vec<Option<(std::ops::Range<usize>, bool)>> =
            vec![None; rule.allowlists.len() + self.rules.global.len()];
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
            let li = lines.get_or_insert_with(|| LineIndex::new(text));
            let candidate = Candidate {
                path,
                secret: secret_text,
                matched: &text[match_span.clone()],
                line: li.lines_around(text.len(), match_span),
            };
            let mut line_hit = |slot: usize, set: &RegexSet| match &line_verdicts[slot] {
                Some((range, hit)) if *range == candidate.line => *hit,
                _ => {
                    let hit = set.is_match(&bytes[candidate.line.clone()]);
                    line_verdicts[slot] = Some((candidate.line.clone(), hit));
                    hit
                }
            };
            if self.allowed(rule, &candidate, &mut line_hit) {
                continue;
            }
            findings.push(finding(li, span, entropy));
        }
        findings
    }

    /// Whether the rule's own allowlists, or a global allowlist that targets it, allow the
    /// finding. `line_hit(slot, regexes)` answers a line-target allowlist, `slot` numbering the
    /// rule's allowlists, then the global ones.
    fn allowed(
        &self,
        rule: &Rule,
        c: &Candidate<'_>,
        line_hit: &mut dyn FnMut(usize, &RegexSet) -> bool,
    ) -> bool {
        let own = rule.allowlists.iter().map(Some);
        let global = self
            .rules
            .global
            .iter()
            .map(|a| a.targets(&rule.id).then_some(a));
        own.chain(global).enumerate().any(|(slot, a)| {
            a.is_some_and(|a| allowlist_allows(a, c, &mut |set| line_hit(slot, set)))
        })
    }
}

/// One match as allowlists see it.
struct Candidate<'t> {
    /// The file the text came from, if any.
    path: Option<&'t str>,
    secret: &'t str,
    /// The whole regex match.
    matched: &'t str,
    /// Byte range of the line(s) the match is on.
    line: std::ops::Range<usize>,
}

/// The window of `aux` (sorted by line, then column) within a composite rule's distance of
/// `primary`: with neither distance set, all of it; `withinLines` bounds the distance between
/// first lines; `withinColumns` bounds the distance between first columns and, since columns
/// restart on every line, needs the same line (gitleaks' proximity test).
fn proximity_window(
    aux: &[SecretFinding],
    primary: &SecretFinding,
    q: &Required,
) -> std::ops::Range<usize> {
    let (lo, hi) = match (q.within_lines, q.within_columns) {
        (_, Some(n)) => (
            (primary.line, primary.column_start.saturating_sub(n)),
            (primary.line, primary.column_start.saturating_add(n)),
        ),
        (Some(n), None) => (
            (primary.line.saturating_sub(n), 0),
            (primary.line.saturating_add(n), usize::MAX),
        ),
        (None, None) => return 0..aux.len(),
    };
    let key = |f: &SecretFinding| (f.line, f.column_start);
    let start = aux.partition_point(|f| key(f) < lo);
    let end = aux.partition_point(|f| key(f) <= hi);
    start..end.max(start)
}

/// gitleaks' allowlist semantics: with `OR` any present check that matches allows; with `AND`
/// every present check must match. `line_hit` answers the regexes of a line-target allowlist.
fn allowlist_allows(
    a: &Allowlist,
    c: &Candidate<'_>,
    line_hit: &mut dyn FnMut(&RegexSet) -> bool,
) -> bool {
    if a.commits_only {
        return false;
    }
    let mut regex_hit = || {
        a.regexes.as_ref().is_some_and(|r| match a.target {
            RegexTarget::Secret => r.is_match(c.secret.as_bytes()),
            RegexTarget::Match => r.is_match(c.matched.as_bytes()),
            RegexTarget::Line => line_hit(r),
        })
    };
    let stopword_hit = || {
        let lower = c.secret.to_lowercase();
        a.stopwords.iter().any(|w| lower.contains(w.as_str()))
    };
    let path_hit = || {
        c.path
            .is_some_and(|p| a.paths.iter().any(|r| r.is_match(p.as_bytes())))
    };
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

/// Byte ranges sorted by start, with the running maximum of their ends: whether any of them
/// overlaps a range is two binary searches.
struct Spans {
    starts: Vec<usize>,
    max_end: Vec<usize>,
}

impl Spans {
    fn new(mut ranges: Vec<(usize, usize)>) -> Spans {
        ranges.sort_unstable();
        let max_end = ranges
            .iter()
            .scan(0, |m, &(_, e)| {
                *m = (*m).max(e);
                Some(*m)
            })
            .collect();
        Spans {
            starts: ranges.into_iter().map(|(s, _)| s).collect(),
            max_end,
        }
    }

    /// Some range starting before `r.end` also ends after `r.start`.
    fn overlaps(&self, r: std::ops::Range<usize>) -> bool {
        let before_end = self.starts.partition_point(|&s| s < r.end);
        before_end > 0 && self.max_end[before_end - 1] > r.start
    }
}

/// How specific a rule is, by its id: `generic-*` rules (0) know least, `vendor-*` rules (1)
/// know the service from a key name, every other rule (2) knows the token's own format.
fn specificity(rule_id: &str) -> u8 {
    if rule_id.starts_with("generic") {
        0
    } else if rule_id.starts_with("vendor-") {
        1
    } else {
        2
    }
}

/// One finding per secret span: of the findings on the same span (two rules on one secret) the
/// most specific, then the earliest rule of the set (`rank` lower) is kept; and findings whose
/// secret overlaps the finding of a more specific rule (which says more about what leaked) are
/// dropped, as gitleaks does for its generic rule. A finding is never dropped for one that covers
/// less of the text, so redaction still covers every finding's span.
fn dedupe(findings: &mut Vec<SecretFinding>, rank: impl Fn(&str) -> usize) {
    findings.sort_by_cached_key(|f| {
        (
            f.byte_start,
            f.byte_end,
            std::cmp::Reverse(specificity(&f.rule_id)),
            rank(&f.rule_id),
        )
    });
    findings.dedup_by(|later, kept| {
        later.byte_start == kept.byte_start && later.byte_end == kept.byte_end
    });
    // The spans of the findings at or above each level of specificity.
    let at_least = |level: u8| {
        Spans::new(
            findings
                .iter()
                .filter(|f| specificity(&f.rule_id) >= level)
                .map(|f| (f.byte_start, f.byte_end))
                .collect(),
        )
    };
    let above = [at_least(1), at_least(2)];
    findings.retain(|f| match specificity(&f.rule_id) {
        2 => true,
        level => !above[usize::from(level)].overlaps(f.byte_start..f.byte_end),
    });
}

/// One finding per secret for the rules without a format of their own: findings of the same
/// level of specificity below the token rules (two generic rules, or two vendor rules) whose
/// spans overlap read one secret two ways (a quoted value taken whole by one rule and up to a `}`
/// by another, a braced credential and the `Secret=` inside it). They become one finding, of the
/// rule whose span is widest (then the earliest rule, `rank` lower), over the union of their
/// spans, so that redaction still covers each. `rebuild` makes the finding of a rule over a new
/// span. `findings` come sorted by start, as [`dedupe`] leaves them; token rules' findings are
/// kept as they are. One pass over the findings.
fn merge_overlaps(
    findings: Vec<SecretFinding>,
    rank: impl Fn(&str) -> usize,
    mut rebuild: impl FnMut(&SecretFinding, std::ops::Range<usize>) -> SecretFinding,
) -> Vec<SecretFinding> {
    // Each cluster: its members and the end of their union; `open[level]` is the cluster that a
    // finding of that level starting before its end joins.
    let mut clusters: Vec<(Vec<SecretFinding>, usize)> = Vec::new();
    let mut open: [Option<usize>; 2] = [None, None];
    for f in findings {
        let level = usize::from(specificity(&f.rule_id));
        let joins = open
            .get(level)
            .copied()
            .flatten()
            .filter(|&c| f.byte_start < clusters[c].1);
        match joins {
            Some(c) => {
                clusters[c].1 = clusters[c].1.max(f.byte_end);
                clusters[c].0.push(f);
            }
            None => {
                let end = f.byte_end;
                clusters.push((vec![f], end));
                if let Some(slot) = open.get_mut(level) {
                    *slot = Some(clusters.len() - 1);
                }
            }
        }
    }
    let mut out = Vec::with_capacity(clusters.len());
    for (mut members, end) in clusters {
        if members.len() == 1 {
            out.extend(members.pop());
            continue;
        }
        // Members come in order of start: the first starts the union.
        let start = members[0].byte_start;
        let (i, primary) = members
            .iter()
            .enumerate()
            .max_by_key(|(_, f)| {
                (
                    f.byte_end - f.byte_start,
                    std::cmp::Reverse(rank(&f.rule_id)),
                )
            })
            .expect("a cluster has members");
        if primary.byte_start == start && primary.byte_end == end {
            out.push(members.swap_remove(i));
        } else {
            out.push(rebuild(primary, start..end));
        }
    }
    out.sort_by_key(|f| (f.byte_start, f.byte_end));
    out
}

/// The bytes of `text` around `span` (grown to character boundaries) that share its line(s): at
/// most [`EXPLAIN_REACH`] bytes either side, cut after the last line end before the span and at
/// the first line end after it. Byte slices: the cut may fall inside a multi-byte character,
/// which the byte-wise keyword search does not mind.
fn near_bytes(text: &str, span: std::ops::Range<usize>) -> &[u8] {
    let bytes = text.as_bytes();
    let start = text.floor_char_boundary(span.start.min(text.len()));
    let end = text.ceil_char_boundary(span.end.min(text.len())).max(start);
    let reach_start = start.saturating_sub(EXPLAIN_REACH);
    let near_start = bytes[reach_start..start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(reach_start, |i| reach_start + i + 1);
    let reach_end = end.saturating_add(EXPLAIN_REACH).min(text.len());
    let near_end = bytes[end..reach_end]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(reach_end, |i| end + i);
    &bytes[near_start..near_end]
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
    let start = r.start.min(text.len());
    let end = r.end.min(text.len()).max(start);
    text.floor_char_boundary(start)..text.ceil_char_boundary(end)
}

/// Characters per checkpoint of [`LineIndex`]: a column costs at most this many bytes' count.
const CHAR_BLOCK: usize = 4096;

/// Positions in one text, computed in one pass when the text gets its first finding: byte
/// offsets of line starts, and (for non-ASCII text) the number of characters before every
/// [`CHAR_BLOCK`]-byte block. Every position question is then a binary search and at most one
/// block's count, whatever the line length and however many findings it holds.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
    /// `None` for ASCII text, where a character column is a byte distance.
    chars_before_block: Option<Vec<usize>>,
}

/// Characters in `bytes` (a slice of UTF-8 that may cut characters at its ends): the bytes
/// that are not continuation bytes.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        let chars_before_block = (!text.is_ascii()).then(|| {
            let mut before = Vec::with_capacity(bytes.len() / CHAR_BLOCK + 2);
            let mut total = 0;
            for block in bytes.chunks(CHAR_BLOCK) {
                before.push(total);
                total += count_chars(block);
            }
            before.push(total);
            before
        });
        LineIndex {
            starts,
            chars_before_block,
        }
    }

    /// Characters of `text` before byte `offset`.
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        match &self.chars_before_block {
            None => offset,
            Some(before) => {
                let block = offset / CHAR_BLOCK;
                before[block] + count_chars(&text.as_bytes()[block * CHAR_BLOCK..offset])
            }
        }
    }

    /// 1-based line of a byte offset.
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }

    /// 1-based line and 1-based character column of a byte offset.
    pub(crate) fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.line_of(offset);
        let start = self.starts[line - 1];
        (
            line,
            self.chars_before(text, offset) - self.chars_before(text, start) + 1,
        )
    }

    /// The full line(s) a byte range sits on, without their line ends (what an allowlist with
    /// `regexTarget = "line"` is matched against).
    fn lines_around(&self, text_len: usize, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let start = self.starts[self.line_of(r.start) - 1];
        let end = self
            .starts
            .get(self.line_of(r.end))
            .map_or(text_len, |next| next - 1);
        start..end
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

/// Where a secret sits: the input's label, its text and line index, and the secret's byte span.
pub(crate) struct SecretAt<'a> {
    pub label: &'a str,
    pub text: &'a str,
    pub lines: &'a LineIndex,
    pub span: std::ops::Range<usize>,
}

impl SecretAt<'_> {
    /// The finding of `rule_id` for this secret. The secret text is read here for the preview
    /// only; the finding keeps positions, never the value.
    pub(crate) fn finding(
        &self,
        rule_id: &str,
        description: &str,
        entropy: f64,
        source: FindingSource,
    ) -> SecretFinding {
        let (text, span) = (self.text, &self.span);
        let (line, column_start) = self.lines.position(text, span.start);
        let last = if span.end > span.start {
            text[..span.end]
                .char_indices()
                .next_back()
                .map_or(span.start, |(i, _)| i)
        } else {
            span.start
        };
        let (end_line, column_end) = self.lines.position(text, last);
        SecretFinding {
            rule_id: rule_id.to_string(),
            description: description.to_string(),
            label: self.label.to_string(),
            line,
            end_line,
            column_start,
            column_end,
            entropy: (entropy * 1000.0).round() as f32 / 1000.0,
            redacted: preview(&text[span.clone()]),
            source,
            byte_start: span.start,
            byte_end: span.end,
            encodings: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_widen_to_whole_characters() {
        let text = "aé€b";
        // `é` is bytes 1..3, `€` 3..6.
        assert_eq!(widen_to_chars(text, 2..4), 1..6);
        assert_eq!(widen_to_chars(text, 1..3), 1..3);
        // A range ending before it starts becomes the character at its start.
        let (start, end) = (5, 2);
        assert_eq!(widen_to_chars(text, start..end), 3..6);
        assert_eq!(widen_to_chars(text, 4..99), 3..7);
    }

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
    fn an_explanation_names_the_keyword_floor_and_allowlists_never_the_secret() {
        let scanner = Scanner::new(RuleSet::builtin().unwrap());
        // Built from pieces so that no secret is written in the source.
        let secret = [
            "gh",
            "p_",
            "Zq3",
            "Lr2Tv8Kp4Wz",
            "Ny6Hd3JqXb5",
            "Mc7Fg1Sn0Ru",
        ]
        .concat();
        let text = format!("export GITHUB_TOKEN={secret}\n");
        let findings = scanner.scan("t", None, &text);
        let f = findings.iter().find(|f| f.rule_id == "github-pat").unwrap();
        let why = scanner
            .explain_all(&text, std::slice::from_ref(f))
            .remove(0);
        assert_eq!(why.keyword.as_deref(), Some("ghp_"));
        assert_eq!(why.entropy_floor, Some(3.0));
        assert!(why.pattern.as_deref().unwrap().contains("ghp_"));
        assert!(why.decoded.is_empty());
        assert!(why.summary.contains("keyword `ghp_`"), "{}", why.summary);
        assert!(!format!("{why:?}").contains(&secret));

        // A shapeless rule lists the global allowlists that target it.
        let value = ["Qm9x", "Lr2Tv8", "Kp4Wz", "Ny6Hd3", "Jq"].concat();
        let text = format!("api_secret = \"{value}\"\n");
        let findings = scanner.scan("t", None, &text);
        let f = findings
            .iter()
            .find(|f| f.rule_id == "generic-secret")
            .unwrap();
        let why = scanner
            .explain_all(&text, std::slice::from_ref(f))
            .remove(0);
        assert!(
            why.allowlists_checked
                .iter()
                .any(|a| a.starts_with("global: names"))
        );
        assert!(!format!("{why:?}").contains(&value));
    }

    #[test]
    fn one_finding_per_span() {
        let scanner = Scanner::new(RuleSet::builtin().unwrap());
        // Built from pieces so that no secret is written in the source.
        let password = ["Qz7", "Lr2Tv8", "Kp4Wz"].concat();
        let text = format!("DATABASE_URL=postgres://app:{password}@db.internal:5432/app\n");
        let findings = scanner.scan("t", None, &text);
        // database-url-password and url-credentials both match the password: the rule that
        // comes first in the set (and knows it is a database) reports it, alone.
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].rule_id, "database-url-password");
    }

    #[test]
    fn one_finding_for_a_secret_two_generic_rules_read_differently() {
        let scanner = Scanner::new(RuleSet::builtin().unwrap());
        // generic-secret stops at the `}`, generic-keyed-credential takes the quoted value whole.
        let value = [
            "CQcxzQhT70xd",
            "Dr8J6zGDpTY4Iv3ro1",
            "}XLr0DyMXgnxMCqx4m92bg",
        ]
        .concat();
        let text = format!("acme_secret: \"{value}\"\n");
        let findings = scanner.scan("t", None, &text);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let start = text.find(&value).unwrap();
        assert_eq!(
            (findings[0].byte_start, findings[0].byte_end),
            (start, start + value.len())
        );
        // A braced credential and the `Secret=` inside it: one finding over the braces.
        let secret = ["G4jQ3GmcsYqlLk", "kG8uoIVbx08PZIJSdfB/7"].concat();
        let braced =
            format!("{{Endpoint=https://acme.azconfig.io;Id=eO04L+/m9rYn;Secret={secret}}}");
        let text = format!("<secret>{braced}</secret>\n");
        let findings = scanner.scan("t", None, &text);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let start = text.find(&braced).unwrap();
        assert!(findings[0].byte_start <= start + braced.find(&secret).unwrap());
        assert!(findings[0].byte_end >= start + braced.len() - 1);
    }

    #[test]
    fn merged_findings_keep_the_widest_rule_and_cover_the_union() {
        let f = |rule: &str, start: usize, end: usize| SecretFinding {
            rule_id: rule.to_string(),
            description: String::new(),
            label: "t".to_string(),
            line: 1,
            end_line: 1,
            column_start: start + 1,
            column_end: end,
            entropy: 4.0,
            redacted: String::new(),
            source: FindingSource::Promptd,
            byte_start: start,
            byte_end: end,
            encodings: Vec::new(),
        };
        let rank = |id: &str| usize::from(id != "generic-secret");
        let rebuilt = |p: &SecretFinding, span: std::ops::Range<usize>| {
            f(&format!("{}+", p.rule_id), span.start, span.end)
        };
        // Contained: the wider finding is kept as it is.
        let out = merge_overlaps(
            vec![
                f("generic-secret", 0, 30),
                f("generic-keyed-credential", 5, 20),
            ],
            rank,
            rebuilt,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].rule_id.as_str(), out[0].byte_end),
            ("generic-secret", 30)
        );
        // Crossing: the wider rule over the union.
        let out = merge_overlaps(
            vec![
                f("generic-secret", 0, 10),
                f("generic-keyed-credential", 4, 30),
            ],
            rank,
            rebuilt,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].rule_id, "generic-keyed-credential+");
        assert_eq!((out[0].byte_start, out[0].byte_end), (0, 30));
        // Apart, or a token rule's finding: kept.
        let out = merge_overlaps(
            vec![
                f("generic-secret", 0, 10),
                f("aws-access-key-id", 5, 25),
                f("generic-secret", 40, 50),
            ],
            rank,
            rebuilt,
        );
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn decoded_findings_carry_their_encodings_and_explain_reads_them() {
        use base64::Engine as _;
        let scanner = Scanner::new(RuleSet::builtin().unwrap());
        let secret = ["gh", "p_", "Zq3Lr2Tv8Kp4Wz", "Ny6Hd3JqXb5", "Mc7Fg1Sn0Ru"].concat();
        let blob = base64::engine::general_purpose::STANDARD.encode(format!("token={secret}"));
        let text = format!("payload: {blob}\n");
        let findings = scanner.scan("t", None, &text);
        let f = findings.iter().find(|f| f.rule_id == "github-pat").unwrap();
        assert_eq!(f.encodings, vec!["base64".to_string()]);
        let why = scanner
            .explain_all(&text, std::slice::from_ref(f))
            .remove(0);
        assert_eq!(why.decoded, f.encodings);
        assert!(
            why.summary.contains("after decoding base64"),
            "{}",
            why.summary
        );
    }

    #[test]
    fn explain_all_keeps_the_order_of_its_findings() {
        let scanner = Scanner::new(RuleSet::builtin().unwrap());
        let a = ["gh", "p_", "Zq3Lr2Tv8Kp4Wz", "Ny6Hd3JqXb5", "Mc7Fg1Sn0Ru"].concat();
        let b = ["npm", "_", "Qm9xLr2Tv8Kp4Wz", "Ny6Hd3JqXb5", "Mc7Fg1Sn0R"].concat();
        let text = format!("one {a}\ntwo {b}\n");
        let findings = scanner.scan("t", None, &text);
        let ids: Vec<&str> = findings.iter().map(|f| f.rule_id.as_str()).collect();
        assert_eq!(ids, ["github-pat", "npm-access-token"]);
        let why = scanner.explain_all(&text, &findings);
        assert_eq!(why[0].keyword.as_deref(), Some("ghp_"));
        assert_eq!(why[1].keyword.as_deref(), Some("npm_"));
    }

    #[test]
    fn near_bytes_stay_on_the_findings_lines_within_reach() {
        // What the line index gives: the finding's line(s), cut to EXPLAIN_REACH either side.
        let by_lines = |text: &str, span: std::ops::Range<usize>| {
            let start = text.floor_char_boundary(span.start);
            let end = text.ceil_char_boundary(span.end);
            let around = LineIndex::new(text).lines_around(text.len(), start..end);
            let from = around.start.max(start.saturating_sub(EXPLAIN_REACH));
            let to = around.end.max(end).min(end + EXPLAIN_REACH);
            text.as_bytes()[from..to].to_vec()
        };
        let long = "é".repeat(300);
        let texts = [
            String::from("head\nkey=SECRET tail\nnext"),
            format!("{long}key=SECRET{long}"),
            format!("{}\n{long}SECRET\n", "x".repeat(20)),
            format!("a\n{}SECRET{}\nb", "y".repeat(255), "z".repeat(256)),
            String::from("SECRET"),
            String::from("\nSECRET\n"),
        ];
        for text in &texts {
            let at = text.find("SECRET").unwrap();
            // Spans inside a character too: the finding grows to its boundaries.
            for span in [at..at + 6, at.saturating_sub(1)..at + 3] {
                assert_eq!(
                    near_bytes(text, span.clone()),
                    by_lines(text, span.clone()).as_slice(),
                    "{text:?} {span:?}"
                );
            }
        }
        assert_eq!(
            near_bytes("head\nkey=SECRET tail\nnext", 9..15),
            b"key=SECRET tail"
        );
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
