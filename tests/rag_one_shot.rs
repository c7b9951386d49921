//! One-shot retrieval through the real binary: `promptd context`, `promptd enhance` and
//! `promptd compose` each answer from an index brought up to date with the repository as it is
//! when they run, not from the index as an earlier `promptd index` left it.

use crate::support;

use std::path::Path;
use std::process::Output;

use support::llm_server::{LlmServer, Reply};
use support::process::promptd;

/// A word only the edit brings into the repository.
const MARKER: &str = "PELICAN_LANTERN_7731";

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("ledger.rs"),
        "//! The ledger of accounts.\n\n/// Adds an entry.\npub fn record_entry(amount: i64) -> i64 {\n    amount\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("report.rs"),
        "//! Monthly reports.\n\n/// Sums the month.\npub fn monthly_total(values: &[i64]) -> i64 {\n    values.iter().sum()\n}\n",
    )
    .unwrap();
    dir
}

/// Runs promptd in `dir` without an embedding model (ranking stays lexical) and with `env`.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = promptd();
    cmd.args(args)
        .current_dir(dir)
        .env("PROMPTD_EMBED_MODEL_DIR", "/nonexistent/model")
        .env_remove("PROMPTD_DEPS_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "promptd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Indexes the repository, then adds a function whose body holds [`MARKER`] to a file the index
/// already knows.
fn indexed_then_edited() -> tempfile::TempDir {
    let repo = repo();
    let dir = repo.path().to_str().unwrap().to_string();
    run(repo.path(), &["index", "--dir", &dir, "--no-embed"], &[]);
    let mut text = std::fs::read_to_string(repo.path().join("src/ledger.rs")).unwrap();
    text.push_str(&format!(
        "\n/// Closes the quarter.\npub fn close_quarter_books() -> &'static str {{\n    \"{MARKER}\"\n}}\n"
    ));
    std::fs::write(repo.path().join("src/ledger.rs"), text).unwrap();
    repo
}

const QUERY: &str = "explain close_quarter_books";

#[test]
fn context_sees_an_edit_made_after_indexing() {
    let repo = indexed_then_edited();
    let dir = repo.path().to_str().unwrap();
    let out = run(repo.path(), &["context", QUERY, "--dir", dir], &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(MARKER), "{text}");
}

#[test]
fn compose_sees_an_edit_made_after_indexing() {
    let repo = indexed_then_edited();
    let dir = repo.path().to_str().unwrap();
    let out = run(
        repo.path(),
        &["compose", "--query", QUERY, "--dir", dir, "--json"],
        &[],
    );
    let composed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = composed["text"].as_str().unwrap();
    assert!(text.contains(MARKER), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enhance_sends_an_edit_made_after_indexing() {
    let repo = indexed_then_edited();
    let server = LlmServer::start(vec![Reply::Answer("## Task\nClose the books.".into())]).await;
    let url = server.url.clone();
    let root = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let dir = root.to_str().unwrap();
        run(
            &root,
            &["enhance", QUERY, "--dir", dir, "--json"],
            &[
                ("LLM_BASE_URL", &url),
                ("LLM_MODEL", "rewriter-one-shot"),
                ("LLM_API_KEY", "sk-one-shot-test"),
            ],
        )
    })
    .await
    .unwrap();
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "enhanced", "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].body.to_string();
    assert!(sent.contains(MARKER), "{sent}");
}
