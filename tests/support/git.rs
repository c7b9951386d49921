//! A prompt project under git, made by the test with the `git` command line: three versions of
//! `prompts/review.md` (tagged `v1`, on branch `first` at the first commit, the second committed,
//! the third only in the working copy) and a prompt `later` added by the second commit.

use std::path::Path;
use std::process::Command;

/// Runs `git args` in `dir` with no user or system config, a fixed author, and commit dates
/// `when` (seconds since the epoch), asserting success; returns its stdout, trimmed.
pub fn git(dir: &Path, args: &[&str], when: u64) -> String {
    let date = format!("@{when} +0000");
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Ada Author")
        .env("GIT_AUTHOR_EMAIL", "ada@example.invalid")
        .env("GIT_COMMITTER_NAME", "Ada Author")
        .env("GIT_COMMITTER_EMAIL", "ada@example.invalid")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The first version's body line.
pub const V1: &str = "Review this {{ language }} change.";
/// The second's.
pub const V2: &str = "Review this {{ language }} change carefully.";
/// The working copy's.
pub const WORKING: &str = "Review this {{ language }} change line by line.";

/// `review.md` with `line` as its first body line.
pub fn review(line: &str) -> String {
    format!(
        "---\ndescription: Review a change\narguments:\n  - name: language\n    required: true\n---\n\
         {line}\nBe kind.\n"
    )
}

/// The project: its folder and the commits (full ids) of the two committed versions.
pub struct Versioned {
    pub dir: tempfile::TempDir,
    pub first: String,
    pub second: String,
}

impl Versioned {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Makes the project (see the module doc).
pub fn versioned() -> Versioned {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let prompts = root.join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    git(root, &["init", "-q", "-b", "main"], 0);
    std::fs::write(prompts.join("review.md"), review(V1)).unwrap();
    std::fs::write(root.join("README.md"), "a project\n").unwrap();
    git(root, &["add", "-A"], 0);
    git(
        root,
        &["commit", "-q", "-m", "First review prompt"],
        1_767_000_000,
    );
    let first = git(root, &["rev-parse", "HEAD"], 0);
    git(root, &["tag", "v1"], 1_767_000_000);
    git(root, &["branch", "first"], 0);
    // A commit that leaves the prompt alone is not in its history.
    std::fs::write(root.join("README.md"), "a project, documented\n").unwrap();
    git(
        root,
        &["commit", "-q", "-am", "Document the project"],
        1_767_000_100,
    );
    std::fs::write(prompts.join("review.md"), review(V2)).unwrap();
    std::fs::write(prompts.join("later.md"), "Added later.\n").unwrap();
    git(root, &["add", "-A"], 0);
    git(
        root,
        &["commit", "-q", "-m", "Review carefully"],
        1_767_000_200,
    );
    let second = git(root, &["rev-parse", "HEAD"], 0);
    std::fs::write(prompts.join("review.md"), review(WORKING)).unwrap();
    Versioned { dir, first, second }
}
