//! A refresh without a folder watcher (every one-shot command) walks the repository only when
//! it must: while the folders and ignore files the last walk saw are as they were, it `stat`s
//! the indexed files and re-lists only folders whose mtime moved, and still sees every file
//! added, removed or edited since.

use crate::support::rag::{lexical_config, write_files};

use std::path::Path;
use std::time::{Duration, SystemTime};

use promptd::rag::{IndexSummary, Retriever};

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ("src/ledger.rs", "pub fn record_entry() {}\n".to_string()),
            ("src/report.rs", "pub fn monthly_total() {}\n".to_string()),
            ("lib/audit.rs", "pub fn audit_trail() {}\n".to_string()),
        ],
    );
    dir
}

/// Sets the mtime of every file and folder under `root` (but `.rag/`) an hour back, as on a
/// tree last touched well before the index saw it.
fn age(root: &Path) {
    let past = SystemTime::now() - Duration::from_secs(3600);
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() == ".rag" {
            continue;
        }
        if path.is_dir() {
            age(&path);
        }
        std::fs::File::open(&path)
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    std::fs::File::open(root)
        .unwrap()
        .set_modified(past)
        .unwrap();
}

fn refresh(repo: &Path) -> IndexSummary {
    Retriever::open(repo, lexical_config().one_shot())
        .unwrap()
        .index(&|_| {})
        .unwrap()
}

/// An index built by a walk, then refreshed over the aged tree (every folder's mtime moved:
/// each is re-listed, none is new, so no walk) to record mtimes older than the racy window.
fn indexed() -> tempfile::TempDir {
    let repo = repo();
    assert!(refresh(repo.path()).full_walk);
    age(repo.path());
    let summary = refresh(repo.path());
    assert!(!summary.full_walk);
    assert_eq!((summary.files, summary.rechunked), (3, 0));
    repo
}

#[test]
fn an_unchanged_tree_is_checked_without_a_walk() {
    let repo = indexed();
    let summary = refresh(repo.path());
    assert!(!summary.full_walk);
    assert_eq!((summary.unchanged, summary.files), (3, 3));
}

#[test]
fn files_added_removed_and_edited_are_seen_without_a_walk() {
    let repo = indexed();
    let root = repo.path();
    // Added and removed: `src/` is re-listed.
    write_files(
        root,
        &[("src/closing.rs", "pub fn close_books() {}\n".into())],
    );
    std::fs::remove_file(root.join("src/ledger.rs")).unwrap();
    // Edited in place to the same size: only the file's own stat shows it.
    write_files(
        root,
        &[("lib/audit.rs", "pub fn audit_traiL() {}\n".into())],
    );
    let summary = refresh(root);
    assert!(!summary.full_walk);
    assert_eq!(
        (summary.added, summary.removed, summary.changed),
        (1, 1, 1),
        "{summary:?}"
    );
    // The stamp kept after that refresh holds too.
    let again = refresh(root);
    assert!(!again.full_walk);
    assert_eq!((again.unchanged, again.files), (3, 3));
}

#[test]
fn a_new_folder_or_a_changed_ignore_file_means_a_walk() {
    let repo = indexed();
    let root = repo.path();
    write_files(root, &[("pkg/tax.rs", "pub fn tax_rate() {}\n".into())]);
    let summary = refresh(root);
    assert!(summary.full_walk);
    assert_eq!(summary.added, 1);

    age(root);
    refresh(root);
    std::fs::write(root.join("src/.gitignore"), "report.rs\n").unwrap();
    let summary = refresh(root);
    assert!(summary.full_walk);
    assert_eq!(summary.removed, 1, "{summary:?}");

    age(root);
    refresh(root);
    // Edited in place: the folder's mtime stays, the ignore file's own does not.
    std::fs::write(root.join("src/.gitignore"), "ledger.rs\n").unwrap();
    let summary = refresh(root);
    assert!(summary.full_walk);
    assert_eq!((summary.added, summary.removed), (1, 1), "{summary:?}");
}
