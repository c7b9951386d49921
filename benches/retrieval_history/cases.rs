//! Benchmark cases built from a repository's own history at run time. A case is a non-merge
//! commit that fixes something (its subject names a fix, bug, error, crash, failure... or its
//! message says it fixes/closes/resolves an issue) and changes 1–5 source files of the
//! repository's language (tests, docs, changelogs, vendored and generated files do not count).
//! The request is the commit message as written (subject and body) without trailers such as
//! `Signed-off-by:`; the gold files are the changed source files that exist in the parent
//! commit, which is the repository state the case is asked against. A message that says
//! nothing beyond "fix #123" is dropped. The split into a tuning half and a held-out half is
//! the low bit of the SHA-256 of the commit id, so it never changes with the case selection.

use std::collections::HashSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::paths::is_source;
use crate::repos::{Repo, git};

/// Which half of the cases a commit belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    Tuning,
    HeldOut,
}

impl Split {
    pub fn of(sha: &str) -> Split {
        if Sha256::digest(sha.as_bytes())[0] & 1 == 0 {
            Split::Tuning
        } else {
            Split::HeldOut
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Split::Tuning => "tuning",
            Split::HeldOut => "held-out",
        }
    }
}

/// One request with its gold files.
pub struct Case {
    /// The fix commit, or the issue report's instance id.
    pub sha: String,
    /// The tree the request is asked against: the fix's parent, the report's base commit.
    pub parent: String,
    pub request: String,
    pub gold: Vec<String>,
    pub split: Split,
}

impl Case {
    /// How tables name the case: a commit's first 10 hex digits, an instance id whole.
    pub fn label(&self) -> &str {
        if self.sha.len() == 40 && self.sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            &self.sha[..10]
        } else {
            &self.sha
        }
    }
}

/// How many commits each rule let through or dropped (printed, and kept in the JSON).
#[derive(Default, Debug, Serialize)]
pub struct Selection {
    pub commits: usize,
    pub not_a_fix: usize,
    pub release_or_revert: usize,
    pub source_files_not_1_to_5: usize,
    pub gold_absent_in_parent: usize,
    pub message_too_short: usize,
    pub duplicate: usize,
    pub eligible: usize,
    pub kept: usize,
}

const MAX_SOURCE_FILES: usize = 5;
const MIN_CONTENT_WORDS: usize = 3;

static FIX_SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(fix(e[sd]|ing)?|bug(fix)?s?|issues?|errors?|crash(es|ed|ing)?|regressions?|broken|incorrect(ly)?|wrong|fail(s|ed|ure|ures|ing)?|exceptions?|panic(s|ked)?)\b",
    )
    .expect("fix regex")
});
static ISSUE_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(fix(e[sd])?|close[sd]?|resolve[sd]?)\b:?\s+(#|gh-|https://github\.com/[^\s/]+/[^\s/]+/issues/)\d+",
    )
    .expect("issue regex")
});
static NOT_A_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(revert\b|release\b|bump\b|prepare (for )?(the )?release|(version|v)\s*\d+\.\d+|\d+\.\d+(\.\d+)?\b|chore\(release\))",
    )
        .expect("release regex")
});
static TRAILER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)^\s*(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|helped-by|change-id|cc)\s*:.*$|^\s*\(cherry picked from commit [0-9a-f]+\)\s*$",
    )
    .expect("trailer regex")
});
static REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(#|gh-)\d+|https?://\S+").expect("reference regex"));
static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_.]*").expect("word regex"));
const NOT_CONTENT: &[&str] = &[
    "fix", "fixes", "fixed", "fixing", "issue", "bug", "close", "closes", "closed", "resolve",
    "resolves", "resolved", "see", "ref", "refs", "pr", "gh",
];

/// The commit message as a user's request: trailers removed, blank-line runs collapsed.
pub fn request_text(subject: &str, body: &str) -> String {
    let body = TRAILER.replace_all(body, "");
    let mut text = subject.trim().to_string();
    let mut blank = true;
    let mut started = false;
    for line in body.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        text.push_str(if blank || !started { "\n\n" } else { "\n" });
        text.push_str(line);
        blank = false;
        started = true;
    }
    text
}

fn content_words(text: &str) -> usize {
    let without_refs = REFERENCE.replace_all(text, " ");
    WORD.find_iter(&without_refs)
        .filter(|w| !NOT_CONTENT.contains(&w.as_str().to_ascii_lowercase().as_str()))
        .count()
}

/// The cases of `repo` (oldest first), at most `max` of the newest eligible commits.
pub fn build(repo: &Repo, git_dir: &Path, max: usize) -> Result<(Vec<Case>, Selection), String> {
    let dir = git_dir.to_str().ok_or("git dir is not UTF-8")?;
    let log = git(
        None,
        &[
            "--git-dir",
            dir,
            "-c",
            "core.quotepath=false",
            "log",
            "--no-merges",
            "--no-renames",
            "--name-status",
            "--format=%x1e%H %P%x1f%s%x1f%b%x1f",
            repo.pinned,
        ],
    )?;
    let mut selection = Selection::default();
    let mut seen: HashSet<(String, Vec<String>)> = HashSet::new();
    let mut cases = Vec::new();
    for record in log.split('\x1e').skip(1) {
        let mut fields = record.splitn(4, '\x1f');
        let (Some(ids), Some(subject), Some(body), Some(changes)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("{}: unexpected git log record", repo.slug));
        };
        selection.commits += 1;
        let mut ids = ids.split_whitespace();
        let (Some(sha), Some(parent), None) = (ids.next(), ids.next(), ids.next()) else {
            continue; // a root commit has no parent state to ask against
        };
        let message = format!("{subject}\n{body}");
        if !FIX_SUBJECT.is_match(subject) && !ISSUE_REF.is_match(&message) {
            selection.not_a_fix += 1;
            continue;
        }
        if NOT_A_CHANGE.is_match(subject) {
            selection.release_or_revert += 1;
            continue;
        }
        let mut sources = 0;
        let mut gold = Vec::new();
        for line in changes.lines() {
            let Some((status, path)) = line.split_once('\t') else {
                continue;
            };
            if !is_source(path, repo.langs, repo.foreign) {
                continue;
            }
            sources += 1;
            // Added files do not exist in the parent; modified and deleted ones do.
            if !status.starts_with('A') {
                gold.push(path.to_string());
            }
        }
        if sources == 0 || sources > MAX_SOURCE_FILES {
            selection.source_files_not_1_to_5 += 1;
            continue;
        }
        if gold.is_empty() {
            selection.gold_absent_in_parent += 1;
            continue;
        }
        let request = request_text(subject, body);
        if content_words(&request) < MIN_CONTENT_WORDS {
            selection.message_too_short += 1;
            continue;
        }
        gold.sort();
        if !seen.insert((request.clone(), gold.clone())) {
            selection.duplicate += 1;
            continue;
        }
        selection.eligible += 1;
        if cases.len() < max {
            cases.push(Case {
                split: Split::of(sha),
                sha: sha.to_string(),
                parent: parent.to_string(),
                request,
                gold,
            });
        }
    }
    selection.kept = cases.len();
    cases.reverse();
    Ok((cases, selection))
}
