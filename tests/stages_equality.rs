//! `promptd compose --json` / `promptd enhance --json` and the MCP tools `compose_prompt` /
//! `enhance_prompt` are one stage call behind two adapters: the same inputs give the same
//! result, field for field, and enhance sends the LLM the same request.
//!
//! What differs is only the transport's framing: over MCP the result is `structuredContent`
//! (compared here with the CLI's JSON) beside a text `content` block (the composed text, or the
//! enhanced prompt with its warnings), and `isError`; the CLI prints the JSON on stdout.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::guard::{Fake, fake_secret};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::mcp::{self, Session};
use crate::support::process::promptd;

/// `compose_cli`'s workspace (rules, code, a note), with lexical retrieval (no model).
fn workspace() -> tempfile::TempDir {
    let dir = crate::compose_cli::workspace();
    std::fs::write(
        dir.path().join(".ado-mcp-config.json"),
        json!({"rag": {"embeddings": false}}).to_string(),
    )
    .unwrap();
    dir
}

/// `promptd <args> --json` in `root` (off the async runtime: the LLM server runs on it).
async fn cli_json(root: &Path, args: Vec<String>, env: Vec<(String, String)>) -> Value {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let out = promptd()
            .args(["--now", "2025-03-15"])
            .args(&args)
            .arg("--json")
            .envs(env)
            .current_dir(&root)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: not JSON ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    })
    .await
    .unwrap()
}

/// The JSON paths where `a` and `b` differ, with both values.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                differences(va, vb, &format!("{path}/{k}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(va, vb, &format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} != {b}")),
        _ => {}
    }
}

/// Asserts that the MCP result equals the CLI's, naming every field that differs.
fn assert_same(mcp: &Value, cli: &Value, what: &str) {
    let mut diff = Vec::new();
    differences(mcp, cli, "", &mut diff);
    assert!(
        diff.is_empty(),
        "{what}: MCP != CLI at\n{}",
        diff.join("\n")
    );
}

/// A tool's `structuredContent` and its text content.
async fn tool(s: &Session, name: &str, args: Value) -> (Value, String) {
    let r = s.call(name, args).await.expect(name);
    assert_eq!(r.is_error, Some(false), "{name}");
    let text = r.content[0].as_text().expect("text content").text.clone();
    (r.structured_content.expect("structured content"), text)
}

#[tokio::test]
async fn compose_gives_the_same_result_through_the_cli_and_mcp() {
    let ws = workspace();
    let root = ws.path();
    let dir = root.to_str().unwrap();
    let query = "add retries to send_with_retry";
    // Retrieval runs first from the CLI, so both answer from the same index.
    let cases = [
        (
            vec!["--file", "src/net/client.rs", "--doc", "notes.md"],
            json!({"query": query, "dir": dir, "file": "src/net/client.rs", "docs": ["notes.md"]}),
        ),
        (
            vec!["--docs-budget", "300"],
            json!({"query": query, "dir": dir, "docsBudget": 300}),
        ),
    ];
    let mut cli = Vec::new();
    for (flags, _) in &cases {
        let mut args = vec!["compose", "--query", query, "--dir", dir];
        args.extend(flags);
        cli.push(
            cli_json(
                root,
                args.iter().map(|a| a.to_string()).collect(),
                Vec::new(),
            )
            .await,
        );
    }
    let s = mcp::stdio(root, &[]).await;
    for ((flags, args), cli) in cases.iter().zip(cli) {
        let (structured, text) = tool(&s, "compose_prompt", args.clone()).await;
        assert_same(&structured, &cli, &format!("compose {flags:?}"));
        assert_eq!(text, structured["text"].as_str().unwrap(), "{flags:?}");
    }
    s.close().await;
}

#[tokio::test]
async fn enhance_gives_the_same_result_and_llm_request_through_the_cli_and_mcp() {
    let ws = workspace();
    let root = ws.path();
    let dir = root.to_str().unwrap();
    let server =
        LlmServer::start(vec![Reply::Answer("## Task\nAdd jittered backoff.".into())]).await;
    let env = [
        ("LLM_BASE_URL", server.url.as_str()),
        ("LLM_MODEL", "rewriter-eq"),
    ];
    let owned_env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let token = fake_secret("github-pat", &mut Fake::new(21)).unwrap();
    let blocked = format!("call the API with {token} in send_with_retry");
    let cases = [
        ("add backoff to send_with_retry in this file", "enhanced"),
        (blocked.as_str(), "blocked"),
    ];
    let mut cli = Vec::new();
    for (prompt, _) in &cases {
        let args = [
            "enhance",
            prompt,
            "--active-file",
            "src/net/client.rs",
            "--dir",
            dir,
        ];
        let args = args.iter().map(|a| a.to_string()).collect();
        cli.push(cli_json(root, args, owned_env.clone()).await);
    }
    let s = mcp::stdio_with_env(root, &[], &env).await;
    for ((prompt, status), cli) in cases.iter().zip(cli) {
        let args =
            json!({"prompt": prompt, "activeFile": "src/net/client.rs", "workingDirectory": dir});
        let (structured, _text) = tool(&s, "enhance_prompt", args).await;
        assert_eq!(structured["status"], *status, "{structured}");
        assert_same(&structured, &cli, &format!("enhance {status}"));
    }
    s.close().await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one LLM request per enhanced prompt");
    assert_eq!(
        requests[0].body, requests[1].body,
        "the CLI and the server send the LLM the same request"
    );
}
