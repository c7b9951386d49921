//! `promptd compose` and the MCP tool `compose_prompt` on a real workspace: rules, the server's
//! own tools in the catalog, docs from `--doc` files or retrieved from the repository.

use crate::support::{mcp, process};

use std::path::Path;

use serde_json::{Value, json};

/// A workspace with an AGENTS.md, a glob-scoped Cursor rule, code and a note.
pub(crate) fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join(".cursor/rules")).unwrap();
    std::fs::create_dir_all(p.join("src/net")).unwrap();
    std::fs::write(
        p.join("AGENTS.md"),
        "Run `cargo test` before every commit.\n",
    )
    .unwrap();
    std::fs::write(
        p.join(".cursor/rules/net.mdc"),
        "---\ndescription: networking rules\nglobs: src/net/**/*.rs\nalwaysApply: false\n---\nEvery request has a timeout.\n",
    )
    .unwrap();
    std::fs::write(
        p.join("src/net/client.rs"),
        "/// Sends a request with retries.\npub fn send_with_retry(url: &str) -> Result<(), String> {\n    Err(url.into())\n}\n",
    )
    .unwrap();
    std::fs::write(
        p.join("notes.md"),
        "# Retry policy\nRetry idempotent requests three times.\n",
    )
    .unwrap();
    dir
}

fn compose(dir: &Path, extra: &[&str]) -> Value {
    process::json_stdout(
        process::promptd()
            .args([
                "compose",
                "--query",
                "add retries to send_with_retry",
                "--dir",
            ])
            .arg(dir)
            .args(extra)
            .arg("--json")
            .current_dir(dir),
    )
}

#[test]
fn cli_with_doc_files() {
    let ws = workspace();
    let v = compose(
        ws.path(),
        &["--file", "src/net/client.rs", "--doc", "notes.md"],
    );
    let text = v["text"].as_str().unwrap();
    assert!(
        text.starts_with("USER: add retries to send_with_retry"),
        "{text}"
    );
    assert!(text.contains("Run `cargo test` before every commit."));
    assert!(
        text.contains("Every request has a timeout."),
        "glob rule applies to the current file"
    );
    assert!(
        text.contains("### Tool: wit-get-prompts"),
        "the server's own tools are in the catalog"
    );
    assert!(text.contains("### Tool: enhance_prompt") && text.contains("### Tool: compose_prompt"));
    assert!(text.contains("### Source: notes.md:1-2"), "{text}");
    let prefix = v["prefix"].as_str().unwrap();
    assert!(
        prefix.contains("Run `cargo test`") && !prefix.contains("Every request has a timeout.")
    );
    assert!(v["prefixTokens"].as_u64().unwrap() > 0);
    let ledger = v["ledger"]["rules"].as_array().unwrap();
    assert_eq!(ledger.len(), 2, "{ledger:?}");

    // Another query and no current file: the same prefix, the glob rule listed but not included.
    let out = process::promptd()
        .args(["compose", "--query", "why is CI red?", "--json", "--dir"])
        .arg(ws.path())
        .output()
        .unwrap();
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        w["prefix"], v["prefix"],
        "the cacheable prefix is byte-identical"
    );
    assert!(
        !w["text"]
            .as_str()
            .unwrap()
            .contains("Every request has a timeout.")
    );
}

#[test]
fn cli_retrieves_docs_from_the_repository() {
    let ws = workspace();
    let v = compose(ws.path(), &["--file", "src/net/client.rs"]);
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains("### Source: src/net/client.rs:"),
        "retrieved chunk missing:\n{text}"
    );
}

#[tokio::test]
async fn mcp_tool_returns_text_and_ledger() {
    let ws = workspace();
    let s = mcp::stdio(ws.path(), &[]).await;
    let args = json!({"query": "add retries", "dir": ws.path(), "file": "src/net/client.rs", "docs": ["notes.md"]});
    let result = s.call("compose_prompt", args).await.unwrap();
    let v = result
        .structured_content
        .clone()
        .expect("structured content");
    assert!(
        v["text"]
            .as_str()
            .unwrap()
            .contains("Every request has a timeout.")
    );
    assert!(
        v["ledger"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["included"] == true)
    );
    s.close().await;
}

#[tokio::test]
async fn mcp_tool_structured_content_matches_its_output_schema() {
    let ws = workspace();
    let p = ws.path();
    // Every kind of ledger entry: a rule listed but not included (agent-requested), a skipped
    // tool definition file, a doc chunk dropped to fit the budget.
    std::fs::write(
        p.join(".cursor/rules/review.mdc"),
        "---\ndescription: code review checklist\n---\nCheck every error path.\n",
    )
    .unwrap();
    std::fs::create_dir_all(p.join(".promptd/tools")).unwrap();
    std::fs::write(p.join(".promptd/tools/broken.json"), "{ not json").unwrap();
    let s = mcp::stdio(p, &[]).await;

    let tool = mcp::listed_tool(&s, "compose_prompt").await;
    let schema = tool.output_schema.as_deref().expect("outputSchema");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required fields")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for field in [
        "text",
        "prefix",
        "prefixStart",
        "prefixTokens",
        "tokensPerBlock",
        "ledger",
        "warnings",
    ] {
        assert!(
            required.contains(&field),
            "{field} not required: {schema:?}"
        );
    }
    let validator = mcp::output_validator(&tool);

    let args = json!({
        "query": "add retries",
        "dir": p,
        "file": "src/net/client.rs",
        "docs": ["notes.md", "src/net/client.rs"],
        "docsBudget": 30,
    });
    let result = s.call("compose_prompt", args).await.unwrap();
    let full = result.structured_content.expect("structured content");
    let ledger = &full["ledger"];
    assert!(
        ledger["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["included"] == false),
        "{ledger:#}"
    );
    for list in ["toolIssues", "docsIncluded", "docsDropped"] {
        assert!(
            !ledger[list].as_array().unwrap().is_empty(),
            "{list}: {ledger:#}"
        );
    }
    mcp::assert_matches_schema(&validator, &full, "compose_prompt with every ledger kind");

    // No current file and a zero docs budget: no docs block, nothing included, still valid.
    let args = json!({"query": "why is CI red?", "dir": p, "docsBudget": 0});
    let result = s.call("compose_prompt", args).await.unwrap();
    let bare = result.structured_content.expect("structured content");
    assert_eq!(bare["tokensPerBlock"]["docs"], 0);
    assert_eq!(bare["ledger"]["docsIncluded"], json!([]));
    mcp::assert_matches_schema(&validator, &bare, "compose_prompt without a file");

    // The schema is not vacuous: a missing block count or an unknown rule format is refused.
    let mut broken = full.clone();
    broken.as_object_mut().unwrap().remove("tokensPerBlock");
    assert!(
        !validator.is_valid(&broken),
        "missing tokensPerBlock accepted"
    );
    let mut broken = full.clone();
    broken["ledger"]["rules"][0]["format"] = json!("not-a-format");
    assert!(!validator.is_valid(&broken), "unknown rule format accepted");
    s.close().await;
}

/// The tools block lists what the server's tool registry serves: the definitions of the
/// server's `.promptd/tools` and of the folders `tools.folders` adds, with the files that did not
/// load; `promptd compose`, `compose_prompt` and `tools/list` agree.
#[tokio::test]
async fn the_tools_block_lists_the_served_definitions_of_configured_folders() {
    let ws = workspace();
    let p = ws.path();
    let echo = |name: &str| {
        json!({"toolName": name, "description": format!("{name} from a folder"),
            "inputSchema": "{\"type\":\"object\"}", "executionType": "predefined_server_function",
            "executionDetails": {"functionName": "echoTool"}})
        .to_string()
    };
    std::fs::create_dir_all(p.join("shared/tools")).unwrap();
    std::fs::create_dir_all(p.join(".promptd/tools")).unwrap();
    std::fs::write(p.join("shared/tools/lookup.json"), echo("lookup")).unwrap();
    std::fs::write(p.join(".promptd/tools/local.json"), echo("local")).unwrap();
    std::fs::write(
        p.join(".promptd/tools/broken.json"),
        "{\n  \"toolName\": 3\n}",
    )
    .unwrap();
    std::fs::write(
        p.join(".ado-mcp-config.json"),
        json!({"tools": {"folders": ["shared/tools"]}}).to_string(),
    )
    .unwrap();

    let check = |v: &Value, surface: &str| {
        let text = v["text"].as_str().unwrap();
        for name in ["local", "lookup"] {
            assert!(
                text.contains(&format!("### Tool: {name}\n")),
                "{surface}: {text}"
            );
        }
        let issues = v["ledger"]["toolIssues"].as_array().unwrap();
        assert_eq!(issues.len(), 1, "{surface}: {issues:?}");
        assert_eq!(issues[0]["path"], ".promptd/tools/broken.json");
        assert_eq!(issues[0]["line"], 2, "{surface}: {issues:?}");
    };
    check(&compose(p, &["--doc", "notes.md"]), "promptd compose");

    let s = mcp::stdio(p, &[]).await;
    let args = json!({"query": "add retries", "dir": p, "docs": ["notes.md"]});
    let result = s.call("compose_prompt", args).await.unwrap();
    check(
        &result.structured_content.clone().unwrap(),
        "compose_prompt",
    );
    let listed = s.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| &*t.name).collect();
    assert!(
        names.contains(&"lookup") && names.contains(&"local"),
        "{names:?}"
    );
    s.close().await;
}
