//! Ranking with the shipped defaults on a fixture project whose prose, changelog and tests
//! share the request's words with the source (`tests/fixtures/rag/ranking/`): source code comes
//! before them unless the request asks for them, a file the request names comes first, a
//! commit-style component head (`printer: …`) finds that component, and the file-level ranking
//! returns each file's best chunks together. The same checks run through the real binary.

use std::path::Path;

use promptd::rag::kind::FileKind;
use promptd::rag::{Retrieval, RetrievalQuery, retrieve};

use crate::support::process::{json_stdout, promptd};
use crate::support::rag::{copy_tree, lexical_config};

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rag/ranking"),
        dir.path(),
    );
    dir
}

fn ask(repo: &Path, text: &str) -> Retrieval {
    retrieve(repo, lexical_config(), &RetrievalQuery::new(text)).unwrap()
}

/// Distinct files of the returned chunks, best first.
fn files(r: &Retrieval) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in &r.chunks {
        if !out.contains(&c.chunk.path.as_str()) {
            out.push(&c.chunk.path);
        }
    }
    out
}

#[test]
fn source_comes_before_prose_changelog_and_tests() {
    let repo = project();
    let r = ask(repo.path(), "cookies are lost on redirect");
    let files = files(&r);
    assert!(
        files[..2].contains(&"src/shop/session.py") && files[..2].contains(&"src/shop/cookies.py"),
        "{files:?}"
    );
    let first_other = files
        .iter()
        .position(|f| FileKind::of(f) != FileKind::Source)
        .unwrap_or(files.len());
    let last_source = files
        .iter()
        .rposition(|f| FileKind::of(f) == FileKind::Source)
        .unwrap();
    assert!(
        last_source < first_other,
        "every source file before any other kind: {files:?}"
    );
}

#[test]
fn a_request_about_tests_or_docs_gets_them() {
    let repo = project();
    let r = ask(repo.path(), "add a test for cookies lost on redirect");
    let tests = files(&r);
    assert!(
        tests[..2].contains(&"tests/test_session.py"),
        "tests asked for: {tests:?}"
    );
    let r = ask(repo.path(), "update the docs about cookies on redirect");
    let docs = files(&r);
    assert!(
        docs[..2].contains(&"docs/cookies.md"),
        "docs asked for: {docs:?}"
    );
}

#[test]
fn a_named_file_comes_first() {
    let repo = project();
    let r = ask(
        repo.path(),
        "Traceback (most recent call last):\n  File \"/srv/app/shop/legacy/compat.py\", line 6, in to_text\nUnicodeDecodeError: cookies on redirect",
    );
    assert_eq!(files(&r)[0], "src/shop/legacy/compat.py");
}

#[test]
fn a_component_head_finds_the_component() {
    let repo = project();
    let r = ask(repo.path(), "printer: long lines are cut at the width");
    assert_eq!(files(&r)[0], "src/shop/printer.py", "{:?}", files(&r));
}

#[test]
fn the_binary_ranks_the_same() {
    let repo = project();
    let dir = repo.path().to_str().unwrap();
    let json = json_stdout(promptd().args([
        "context",
        "cookies are lost on redirect",
        "--dir",
        dir,
        "--json",
    ]));
    let paths: Vec<&str> = json["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    let library = retrieve(
        repo.path(),
        lexical_config(),
        &RetrievalQuery::new("cookies are lost on redirect"),
    )
    .unwrap();
    let expected: Vec<&str> = library
        .chunks
        .iter()
        .map(|c| c.chunk.path.as_str())
        .collect();
    assert_eq!(paths, expected);
    assert!(
        paths.iter().all(|p| FileKind::of(p) == FileKind::Source),
        "{paths:?}"
    );
}
