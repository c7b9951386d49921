//! Stage errors end to end, over a real MCP client: a bad argument is the caller's fault
//! (JSON-RPC -32602), a broken registry template the server's (-32603), for `compose_prompt` and
//! `enhance_prompt` alike; `promptd compose` and `promptd enhance` fail on the same template.

use std::path::Path;

use serde_json::json;

use crate::support::mcp::{self, Session};
use crate::support::process::promptd;

/// A small workspace with lexical retrieval (no model) and a note.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/retry.rs"),
        "/// Retries a request with backoff.\npub fn retry_with_backoff() {}\n",
    )
    .unwrap();
    std::fs::write(root.join("notes.md"), "# Notes\n\nRetries back off.\n").unwrap();
    std::fs::write(
        root.join(".ado-mcp-config.json"),
        json!({"rag": {"embeddings": false}}).to_string(),
    )
    .unwrap();
    dir
}

/// A prompt folder whose system prompt `name` is a Jinja template that does not compile.
fn broken_prompts(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("system")).unwrap();
    std::fs::write(
        dir.path().join(format!("system/{name}.md")),
        "---\nengine: jinja\n---\n{% if query %}\nunclosed\n",
    )
    .unwrap();
    dir
}

/// The JSON-RPC error of a call that must fail.
async fn call_error(s: &Session, tool: &str, args: serde_json::Value) -> (i32, String) {
    match s.call(tool, args).await {
        Err(rmcp::ServiceError::McpError(e)) => (e.code.0, e.message.to_string()),
        other => panic!("{tool}: expected a JSON-RPC error, got {other:?}"),
    }
}

async fn serve(root: &Path, prompts: &Path) -> Session {
    mcp::stdio(root, &["--prompts", prompts.to_str().unwrap()]).await
}

#[tokio::test]
async fn compose_prompt_tells_a_bad_argument_from_a_broken_frame() {
    let ws = workspace();
    let root = ws.path();
    let prompts = broken_prompts("compose_frame");
    let s = serve(root, prompts.path()).await;

    let args = json!({"query": "retries", "dir": root, "docs": ["missing.md"]});
    let (code, message) = call_error(&s, "compose_prompt", args).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("`docs[0]`"), "{message}");

    let args = json!({"query": "retries", "dir": root, "docs": ["notes.md"]});
    let (code, message) = call_error(&s, "compose_prompt", args).await;
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.starts_with("compose_prompt: ") && message.contains("compose_frame.md"),
        "{message}"
    );
    s.close().await;
}

#[tokio::test]
async fn enhance_prompt_tells_a_bad_argument_from_a_broken_rewrite_template() {
    let ws = workspace();
    let root = ws.path();
    let prompts = broken_prompts("enhance_prompt");
    let s = serve(root, prompts.path()).await;

    let args =
        json!({"prompt": "add backoff", "workingDirectory": root, "activeFile": "src/missing.rs"});
    let (code, message) = call_error(&s, "enhance_prompt", args).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("`activeFile`"), "{message}");

    let args = json!({"prompt": "add backoff", "workingDirectory": root, "activeFile": "src"});
    let (code, message) = call_error(&s, "enhance_prompt", args).await;
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("`activeFile`: src is not a file"),
        "{message}"
    );

    let args = json!({"prompt": "add backoff", "workingDirectory": root});
    let (code, message) = call_error(&s, "enhance_prompt", args).await;
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.contains("rewrite template `enhance_prompt` failed")
            && message.contains("enhance_prompt.md"),
        "{message}"
    );
    s.close().await;
}

#[test]
fn the_cli_fails_on_the_same_broken_templates() {
    let ws = workspace();
    let root = ws.path();
    for (name, args, expected) in [
        (
            "compose_frame",
            vec!["compose", "--query", "retries", "--doc", "notes.md"],
            "composer template",
        ),
        (
            "enhance_prompt",
            vec!["enhance", "add backoff"],
            "rewrite template `enhance_prompt` failed",
        ),
    ] {
        let prompts = broken_prompts(name);
        let out = promptd()
            .arg("--prompts")
            .arg(prompts.path())
            .args(&args)
            .current_dir(root)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: nothing printed on stdout");
    }
}
