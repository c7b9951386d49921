//! Ranking with the shipped defaults on a fixture project whose prose, changelog and tests
//! share the request's words with the source (`tests/fixtures/rag/ranking/`): source code comes
//! before them unless the request asks for them, a file the request names comes first, a
//! commit-style component head (`printer: …`) finds that component, and the file-level ranking
//! returns each file's best chunks together. The same checks run through the real binary.

use std::path::Path;

use promptd::rag::kind::FileKind;
use promptd::rag::{Retrieval, RetrievalQuery, retrieve};

use crate::support::process::{json_stdout, promptd};
use crate::support::rag::{copy_tree, lexical_config, write_files};

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

/// Top files for `text` in a project made of `files`, with `config`.
fn ask_in(tree: &[(&str, String)], config: promptd::rag::RagConfig, text: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), tree);
    let r = retrieve(dir.path(), config, &RetrievalQuery::new(text)).unwrap();
    files(&r).into_iter().map(String::from).collect()
}

#[test]
fn file_kinds_from_the_repository() {
    // A copy of another project inside the package (its own licence) and a Rust test module
    // share the request's words with the project's own code.
    let own =
        "def parse_header(line):\n    name, value = line.split(':', 1)\n    return name, value\n"
            .to_string();
    let copy = "def parse_header(line):\n    # parse the header line into name and value\n    \
                name, value = line.split(':', 1)\n    header = (name, value)\n    return header\n"
        .to_string();
    let files = [
        ("shop/__init__.py", String::new()),
        ("shop/http.py", own),
        ("shop/compat/__init__.py", String::new()),
        ("shop/compat/headers/LICENSE", "MIT License\n".to_string()),
        ("shop/compat/headers/parse.py", copy),
    ];
    let on = promptd::rag::RagConfig {
        content_kinds: true,
        ..lexical_config()
    };
    let request = "parse_header splits the header line wrongly";
    let with = ask_in(&files, on.clone(), request);
    assert_eq!(with[0], "shop/http.py", "{with:?}");
    let off = ask_in(
        &files,
        promptd::rag::RagConfig {
            content_kinds: false,
            ..lexical_config()
        },
        request,
    );
    assert_eq!(off[0], "shop/compat/headers/parse.py", "{off:?}");

    let mut rust =
        String::from("pub fn width(line: &str) -> usize {\n    line.chars().count()\n}\n");
    rust.push_str(&"\n".repeat(60));
    rust.push_str(
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn width_of_wide_line() {\n        \
         let line = \"wide line width\";\n        assert_eq!(super::width(line), 15);\n    }\n}\n",
    );
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &[("src/width.rs", rust)]);
    let r = retrieve(
        dir.path(),
        on,
        &RetrievalQuery::new("width of a wide line is wrong"),
    )
    .unwrap();
    assert_eq!(r.chunks[0].chunk.start_line, 1, "{:?}", r.chunks[0].chunk);
}
