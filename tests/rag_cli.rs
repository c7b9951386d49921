//! The `promptd index` and `promptd context` subcommands, run as the real binary.

use crate::support::{process, rag};

use rag::fixture_repo;

fn promptd(args: &[&str]) -> std::process::Output {
    process::promptd()
        .args(args)
        // No model: the CLI must still work, lexically.
        .env("PROMPTD_EMBED_MODEL_DIR", "/nonexistent/model")
        .output()
        .unwrap()
}

#[test]
fn index_prints_a_summary() {
    let repo = fixture_repo();
    let dir = repo.path().to_str().unwrap();
    let out = promptd(&["index", "--dir", dir, "--no-embed"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout.lines().last().unwrap();
    assert!(line.starts_with("indexed 13 files, "), "{stdout}");
    assert!(
        line.contains(" chunks, ") && line.contains(" bytes in "),
        "{stdout}"
    );
    assert!(
        line.contains("(13 added, 0 changed, 0 removed, 0 unchanged)"),
        "{stdout}"
    );

    let again = promptd(&["index", "--dir", dir, "--no-embed"]);
    let stdout = String::from_utf8(again.stdout).unwrap();
    assert!(
        stdout.contains("(0 added, 0 changed, 0 removed, 13 unchanged)"),
        "{stdout}"
    );
}

#[test]
fn context_prints_sections_or_json() {
    let repo = fixture_repo();
    let dir = repo.path().to_str().unwrap();
    let out = promptd(&[
        "context",
        "fix the crash when the ring buffer is full",
        "--dir",
        dir,
        "--active-file",
        "native/ringbuf.c",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("=== ACTIVE FILE (PRIMARY TARGET) ===\nFile: native/ringbuf.c\n"),
        "{text}"
    );
    // The index is lexical unless the config turns embeddings on: no model is looked for.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("embedding model unavailable"), "{stderr}");

    let out = promptd(&[
        "context",
        "multiply two matrices",
        "--dir",
        dir,
        "--top-k",
        "2",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chunks = json["chunks"].as_array().unwrap();
    assert!(!chunks.is_empty() && chunks.len() <= 2);
    let first = chunks[0].as_object().unwrap();
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "end_line",
            "lexical",
            "path",
            "score",
            "start_line",
            "tags",
            "vector"
        ]
    );
    assert_eq!(first["path"], "native/matrix.cpp");
    assert_eq!(first["tags"][0], "[Function: matrix_multiply]");
    assert_eq!(json["mode"], "lexical");
    assert!(
        json["formatted"]
            .as_str()
            .unwrap()
            .contains("=== REFERENCE CONTEXT")
    );
}

#[test]
fn context_with_an_active_file_outside_the_repository_fails_naming_it() {
    let repo = fixture_repo();
    let out = promptd(&[
        "context",
        "anything",
        "--dir",
        repo.path().to_str().unwrap(),
        "--active-file",
        "/etc/hostname",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(
            "error: active file /etc/hostname resolves to /etc/hostname, outside the repository"
        ),
        "{stderr}"
    );
}
