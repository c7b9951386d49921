//! What a request names, read before searching: the identifiers it quotes (snake_case,
//! camelCase, `dotted.paths`, `Type::method`, calls `name(`, anything in backticks), the file
//! paths and names it mentions (stack-trace frames included), and the kinds of files it asks
//! about. The result is the weighted term list the lexical search runs: every analyzed word of
//! the request once, identifiers weighted up, and in a long request the plain words weighted
//! down so that they cannot drown what the request names.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::kind::KindsAsked;
use super::tokenize;

/// One search term with its weight (1.0 for a plain word).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryTerm {
    /// The analyzed (lower-case, stemmed) term.
    pub text: String,
    pub weight: f32,
}

/// Weights of the terms of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TermWeights {
    /// Weight of a term the request writes as an identifier or path.
    pub identifier: f32,
    /// Plain words beyond this many are weighted down so their weights sum to this many.
    pub plain_words: usize,
    /// How much a term's repetitions in the request raise its weight:
    /// `× (1 + repeated × ln(count))` (0: every term counts once).
    pub repeated: f32,
    /// Read the request as an issue report ([`report_text`]): template boilerplate dropped,
    /// the kinds of files asked about read from its first line only.
    pub read_reports: bool,
    /// With `read_reports`, drop checklist lines too ([`report_text`]).
    pub drop_checklists: bool,
}

/// A request read for searching.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub terms: Vec<QueryTerm>,
    /// Identifiers as written (`find_user`, `Session.send`).
    pub identifiers: Vec<String>,
    /// Paths and file names as written, `/`-separated, without a leading `./`.
    pub paths: Vec<String>,
    pub asked: KindsAsked,
}

const CODE_EXTENSIONS: &str = "py|pyi|go|rs|ts|tsx|mts|cts|js|jsx|mjs|cjs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift|scala|lua|sh|toml|ya?ml|json|md|rst";

fn path_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r"(?:[A-Za-z0-9_.@-]+/)*[A-Za-z0-9_@-][A-Za-z0-9_.-]*\.(?:{CODE_EXTENSIONS})\b"
        ))
        .expect("path pattern")
    })
}

fn identifier_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // A word that is visibly code: inner `_`, a lower→upper change, a dotted or `::` chain,
        // or a call.
        Regex::new(
            r"(?x)
            [A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)+   # a.b.c, A::b
            | [A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+                           # snake_case
            | _[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*                          # _private
            | [a-z]+[A-Z][A-Za-z0-9]*                                      # camelCase
            | [A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*                              # PascalCase
            | [A-Za-z_][A-Za-z0-9_]*\(                                     # call(
            ",
        )
        .expect("identifier pattern")
    })
}

/// A commit-style head naming what it is about: `fix(router)!: …` (Conventional Commits: the
/// type is no identifier, the scope names a part of the code) or `printer: …` (a component).
fn commit_head_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*([A-Za-z][A-Za-z0-9_-]*)(?:\(([^()\n]{1,80})\))?!?:\s")
            .expect("commit head pattern")
    })
}

/// Conventional Commits types: a head's first word that names no component.
const COMMIT_TYPES: &[&str] = &[
    "fix", "feat", "feature", "chore", "docs", "doc", "refactor", "perf", "test", "tests", "build",
    "ci", "style", "revert", "bug", "bugfix", "hotfix", "wip", "release", "deps", "security",
    "note", "warning", "error", "todo",
];

fn html_comment_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)<!--.*?(?:-->|$)").expect("html comment pattern"))
}

/// A line that is only a heading of an issue template: a Markdown heading or a bold line of
/// plain words (`### Steps to reproduce`, `**Expected behavior**`), with nothing code-like.
fn template_heading_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(?:#{1,6}\s+[A-Za-z][A-Za-z ,/'()?-]{0,60}|\*\*[A-Za-z][A-Za-z ,/'()?-]{0,60}\*\*:?)\s*:?\s*$")
            .expect("template heading pattern")
    })
}

/// An issue report without what its template wrote: HTML comments (the template's
/// instructions, `<!-- Summary. -->`), heading lines of plain words and, with
/// `drop_checklists`, checklist lines (`- [x] I have searched …`). Everything else the user
/// wrote, code blocks and tracebacks included, stays.
pub fn report_text(text: &str, drop_checklists: bool) -> String {
    let without_comments = html_comment_pattern().replace_all(text, "\n");
    let mut out = String::with_capacity(without_comments.len());
    for line in without_comments.lines() {
        if template_heading_pattern().is_match(line)
            || (drop_checklists && checklist_pattern().is_match(line))
        {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A checklist line of an issue template: `- [x] I have searched …`, `* [ ] …`.
fn checklist_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^\s*[-*+] \[[ xX]\]\s").expect("checklist pattern"))
}

fn backtick_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"`([^`\n]{1,200})`").expect("backtick pattern"))
}

impl Request {
    /// Reads `text` with the given weights.
    pub fn parse(text: &str, weights: TermWeights) -> Request {
        let cleaned;
        let text = if weights.read_reports {
            cleaned = report_text(text, weights.drop_checklists);
            cleaned.as_str()
        } else {
            text
        };
        let mut paths: Vec<String> = Vec::new();
        for m in path_pattern().find_iter(text) {
            let p = m.as_str().trim_start_matches("./").to_string();
            // A version number or a sentence's last word followed by `.md` is no path; a dotted
            // identifier (`requests.models`) has no code extension and is not matched here.
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
        let mut identifiers: Vec<String> = Vec::new();
        let mut push = |s: &str| {
            let s = s.trim_end_matches('(').trim_matches('.');
            if s.len() >= 2 && !identifiers.iter().any(|i| i == s) {
                identifiers.push(s.to_string());
            }
        };
        let mut body = text;
        if let Some(head) = commit_head_pattern().captures(text) {
            let kind = head[1].to_ascii_lowercase();
            if !COMMIT_TYPES.contains(&kind.as_str()) {
                push(&head[1]);
            }
            if let Some(scope) = head.get(2) {
                for part in scope.as_str().split([',', ' ', '/']) {
                    push(part.trim());
                }
            }
            body = &text[head.get(0).map_or(0, |m| m.end())..];
        }
        for m in identifier_pattern().find_iter(body) {
            push(m.as_str());
        }
        for c in backtick_pattern().captures_iter(text) {
            for m in identifier_pattern().find_iter(&c[1]) {
                push(m.as_str());
            }
            // A single plain word in backticks is an identifier too.
            let inner = c[1].trim();
            if !inner.is_empty() && inner.chars().all(|ch| ch.is_alphanumeric() || ch == '_') {
                push(inner);
            }
        }
        let mut weight_of: HashMap<String, f32> = HashMap::new();
        for ident in identifiers.iter().chain(&paths) {
            for part in ident.split(['.', ':', '/']).filter(|p| !p.is_empty()) {
                for term in tokenize::query_terms(part) {
                    weight_of.insert(term, weights.identifier);
                }
            }
        }
        let counted = tokenize::query_term_counts(text);
        let plain = counted
            .iter()
            .filter(|(t, _)| !weight_of.contains_key(t))
            .count();
        let plain_weight = if weights.plain_words > 0 && plain > weights.plain_words {
            weights.plain_words as f32 / plain as f32
        } else {
            1.0
        };
        // In a report, "tests pass" or "the docs say" somewhere in the text asks for no kind;
        // its first line (a title, a commit subject) says what it is about.
        let asked_from = if weights.read_reports {
            text.trim_start().lines().next().unwrap_or("")
        } else {
            text
        };
        // A report naming its test runner (`pytest`, `unittest`) is about running tests, or
        // about the runner itself, not asking for a test file.
        let words = asked_from
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_lowercase)
            .filter(|w| !weights.read_reports || !matches!(w.as_str(), "pytest" | "unittest"))
            .collect::<Vec<_>>();
        Request {
            terms: counted
                .into_iter()
                .map(|(t, count)| QueryTerm {
                    weight: weight_of.get(&t).copied().unwrap_or(plain_weight)
                        * (1.0 + weights.repeated * (count as f32).ln()),
                    text: t,
                })
                .collect(),
            identifiers,
            paths,
            asked: KindsAsked::from_words(words.iter().map(String::as_str)),
        }
    }

    /// The analyzed terms, without weights.
    pub fn term_texts(&self) -> Vec<String> {
        self.terms.iter().map(|t| t.text.clone()).collect()
    }

    /// Whether `path` (relative, `/`-separated) is a file the request mentions: they end in the
    /// same components, all of the shorter one's or at least a folder and the file name
    /// (`sessions.py` or `requests/sessions.py` for `src/requests/sessions.py`; a stack trace's
    /// `…/site-packages/requests/sessions.py` for it too).
    pub fn mentions(&self, path: &str) -> bool {
        self.paths.iter().any(|m| {
            let common = m
                .rsplit('/')
                .zip(path.rsplit('/'))
                .take_while(|(a, b)| a == b)
                .count();
            let shorter = m.split('/').count().min(path.split('/').count());
            common >= shorter.min(2)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEIGHTS: TermWeights = TermWeights {
        identifier: 3.0,
        plain_words: 8,
        repeated: 0.0,
        read_reports: false,
        drop_checklists: false,
    };

    #[test]
    fn repeated_terms_weigh_more_when_asked() {
        let text = "widget widget widget frame";
        let flat = Request::parse(text, WEIGHTS);
        assert_eq!(weight(&flat, "widget"), weight(&flat, "frame"));
        let counted = Request::parse(
            text,
            TermWeights {
                repeated: 0.5,
                ..WEIGHTS
            },
        );
        let expected = 1.0 + 0.5 * 3f32.ln();
        assert!((weight(&counted, "widget") - expected).abs() < 1e-5);
        assert_eq!(weight(&counted, "frame"), 1.0);
    }
    const REPORTS: TermWeights = TermWeights {
        read_reports: true,
        ..WEIGHTS
    };

    #[test]
    fn reports_lose_their_template() {
        let report = "<!-- Summary. Describe the bug, keep it short. -->\n### Steps to reproduce\n\
                      Calling `Session.send` raises\n**Expected behavior**\n\
                      ## `parse_args()` ignores --notes\n<!-- unterminated";
        assert_eq!(
            report_text(report, false),
            "\n\nCalling `Session.send` raises\n## `parse_args()` ignores --notes\n\n"
        );
        let r = Request::parse(report, REPORTS);
        let template = tokenize::query_terms("Summary describe reproduce expected");
        assert_eq!(template.len(), 4);
        assert!(
            r.terms.iter().all(|t| !template.contains(&t.text)),
            "{:?}",
            r.terms
        );
        assert!(
            Request::parse(report, WEIGHTS)
                .terms
                .iter()
                .any(|t| template.contains(&t.text))
        );
        assert!(r.identifiers.iter().any(|i| i == "Session.send"));
    }

    #[test]
    fn checklists_dropped_when_asked() {
        let report = "- [x] I've verified that I have updated yt-dlp\n* [ ] searched the bugtracker\n\
                      `--cookies-from-browser` fails\n- [link](x) stays";
        assert_eq!(
            report_text(report, true),
            "`--cookies-from-browser` fails\n- [link](x) stays\n"
        );
        assert!(report_text(report, false).contains("verified"));
    }

    #[test]
    fn reports_ask_for_kinds_in_their_first_line_only() {
        let body = "crash in the parser\n\nThe tests pass, and the docs say it should work.";
        assert!(Request::parse(body, WEIGHTS).asked.tests);
        let asked = Request::parse(body, REPORTS).asked;
        assert!(!asked.tests && !asked.docs);
        assert!(
            Request::parse("add a test for retries\n\nbody", REPORTS)
                .asked
                .tests
        );
        assert!(
            !Request::parse("pytest crashes on collection", REPORTS)
                .asked
                .tests
        );
    }

    fn weight(r: &Request, term: &str) -> f32 {
        r.terms
            .iter()
            .find(|t| t.text == term)
            .unwrap_or_else(|| panic!("no term {term} in {:?}", r.terms))
            .weight
    }

    #[test]
    fn identifiers_paths_and_calls() {
        let r = Request::parse(
            "Fix crash in `Session.send` when find_user() returns None; see src/auth/login.py and parseHttpRequest",
            WEIGHTS,
        );
        for ident in ["Session.send", "find_user", "parseHttpRequest"] {
            assert!(
                r.identifiers.iter().any(|i| i == ident),
                "{ident}: {:?}",
                r.identifiers
            );
        }
        assert_eq!(r.paths, ["src/auth/login.py"]);
        assert_eq!(weight(&r, "find_us"), 3.0);
        assert_eq!(weight(&r, "send"), 3.0);
        assert_eq!(weight(&r, "login"), 3.0);
        assert_eq!(weight(&r, "crash"), 1.0);
        assert!(r.mentions("src/auth/login.py"));
        assert!(!r.mentions("src/auth/xlogin.py"));
    }

    #[test]
    fn commit_heads_name_a_scope_not_a_call() {
        let r = Request::parse("fix(jsx): keep the key of a fragment", WEIGHTS);
        assert_eq!(r.identifiers, ["jsx"]);
        assert_eq!(weight(&r, "jsx"), 3.0);
        assert_eq!(weight(&r, "fix"), 1.0);
        let r = Request::parse("feat!: drop the old router", WEIGHTS);
        assert!(r.identifiers.is_empty());
        let r = Request::parse("printer: fix a panic on long lines", WEIGHTS);
        assert_eq!(r.identifiers, ["printer"]);
    }

    #[test]
    fn stack_trace_frames_name_files() {
        let r = Request::parse(
            "Traceback:\n  File \"/usr/lib/python3/site-packages/requests/adapters.py\", line 12, in send\n  ValueError",
            WEIGHTS,
        );
        assert!(r.mentions("requests/adapters.py"));
        assert!(r.mentions("adapters.py"));
        assert!(r.mentions("src/requests/adapters.py"));
        assert!(!r.mentions("src/httpx/adapters.py"));
    }

    #[test]
    fn long_requests_weigh_plain_words_down() {
        let text = "the session object should keep the configured proxies when a redirect \
                    happens across hosts and also when the environment changes between calls \
                    to merge_environment_settings";
        let r = Request::parse(text, WEIGHTS);
        let plain: Vec<&QueryTerm> = r.terms.iter().filter(|t| t.weight < 3.0).collect();
        assert!(plain.len() > 8);
        let sum: f32 = plain.iter().map(|t| t.weight).sum();
        assert!((sum - 8.0).abs() < 1e-3, "{sum}");
        assert_eq!(weight(&r, "merge_environment_set"), 3.0);
    }

    #[test]
    fn asks_for_tests_and_docs() {
        assert!(
            Request::parse("add a test for retries", WEIGHTS)
                .asked
                .tests
        );
        assert!(Request::parse("Fix typo in the docs", WEIGHTS).asked.docs);
        let plain = Request::parse("fix the retry loop", WEIGHTS).asked;
        assert!(!plain.tests && !plain.docs && !plain.changelog);
    }
}
