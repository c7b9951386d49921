//! An unknown prompt name gets the names the caller most likely meant, on every surface: the
//! CLI, MCP (`prompts/get` error data), `wit-get-prompts` (a warning beside the contract's
//! exact error) and the studio.

use std::path::Path;

use crate::support::{mcp, process};

/// A repository whose Claude command `git/fix-issue.md` is served as `git:fix-issue`.
fn repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let commands = repo.path().join(".claude/commands/git");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("fix-issue.md"), "Fix issue $ARGUMENTS\n").unwrap();
    repo
}

fn promptd(cwd: &Path, args: &[&str]) -> std::process::Output {
    process::promptd()
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_cli_names_the_prompt_meant_in_another_namespace_or_misspelt() {
    let repo = repo();
    let out = promptd(repo.path(), &["get", "fix-issue"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown prompt `fix-issue`"), "{stderr}");
    assert!(stderr.contains("did you mean `git:fix-issue`?"), "{stderr}");
    assert!(
        !stderr.contains("wit-get-prompts"),
        "the CLI user is not an agent: {stderr}"
    );

    let out = promptd(repo.path(), &["get", "code_reveiw"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("did you mean `code_review`?"), "{stderr}");

    // Nothing close: no suggestion.
    let out = promptd(repo.path(), &["get", "zzzzzzzz"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("did you mean"), "{stderr}");

    // wit-get-prompts keeps its exact error and adds the suggestion as a warning.
    let out = promptd(repo.path(), &["get", "fix-issue", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["errors"][0],
        "Prompt 'fix-issue' not found. Use wit-get-prompts without promptName to see available prompts."
    );
    assert_eq!(v["warnings"][0], "did you mean `git:fix-issue`?");
}

#[tokio::test]
async fn mcp_prompts_get_carries_the_suggestions_as_error_data() {
    let repo = repo();
    let s = mcp::stdio(repo.path(), &[]).await;
    let err = mcp::within(
        "prompts/get",
        s.client
            .get_prompt(rmcp::model::GetPromptRequestParams::new("fix-issue")),
    )
    .await
    .unwrap_err();
    let rmcp::ServiceError::McpError(e) = err else {
        panic!("expected a JSON-RPC error: {err:?}");
    };
    assert_eq!(e.code.0, -32602);
    assert!(
        e.message.contains("did you mean `git:fix-issue`?"),
        "{}",
        e.message
    );
    assert_eq!(
        e.data,
        Some(serde_json::json!({"suggestions": ["git:fix-issue"]}))
    );
    s.close().await;
}
