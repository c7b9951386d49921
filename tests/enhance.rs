//! enhance_prompt end to end: real files, the real retriever and guard, the rewrite template
//! from the registry, and a local OpenAI-compatible server that records every request.

use crate::support;
use crate::support::mcp;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use promptd::catalog::EnhanceRequest;
use promptd::enhance::{EnhanceStatus, Enhancer};
use promptd::guard::Guard;
use promptd::llm::{ChatClient, LlmConfig};
use promptd::rag::RagConfig;
use promptd::stages::{RetrieversUnder, validate_enhance};
use serde_json::json;
use support::guard::{Fake, fake_secret};
use support::llm_server::{LlmServer, Reply};

/// A GitHub token shape, generated at run time so no file holds one.
fn fake_token() -> String {
    fake_secret("github-pat", &mut Fake::new(16)).unwrap()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fill_repo(dir.path());
    dir
}

/// Writes the fixture repository's files under `root`.
fn fill_repo(root: &Path) {
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("http_client.rs"),
        "//! HTTP client with retries.\n\npub struct HttpClient { retries: u32 }\n\nimpl HttpClient {\n    /// Sends a GET request, retrying transient failures.\n    pub fn fetch_with_retry(&self, url: &str) -> Result<String, String> {\n        for _ in 0..self.retries {\n            if let Ok(body) = get(url) { return Ok(body); }\n        }\n        Err(format!(\"giving up on {url}\"))\n    }\n}\n\nfn get(url: &str) -> Result<String, String> { Err(url.to_string()) }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("cache.rs"),
        "/// An in-memory cache of responses.\npub struct ResponseCache { entries: Vec<(String, String)> }\n\nimpl ResponseCache {\n    pub fn lookup(&self, url: &str) -> Option<&str> {\n        self.entries.iter().find(|(u, _)| u == url).map(|(_, b)| b.as_str())\n    }\n}\n",
    )
    .unwrap();
}

fn enhancer(url: Option<&str>, extra: Option<&Path>, timeout: Duration) -> Enhancer {
    let dirs: Vec<PathBuf> = extra.map(Path::to_path_buf).into_iter().collect();
    let rag = RagConfig {
        embeddings: false,
        ..RagConfig::default()
    };
    let library = support::library(&dirs, true, None, "2026-01-15");
    Enhancer {
        snapshot: library.snapshot(),
        clock: *library.clock(),
        guard: Ok(Arc::new(Guard::builtin().unwrap())),
        retriever: Arc::new(RetrieversUnder {
            retrievers: Arc::default(),
            config: rag,
        }),
        llm: url.map(|u| {
            ChatClient::new(LlmConfig {
                url: u.to_string(),
                model: "rewriter-1".into(),
                api_key: Some("sk-local-test".into()),
                timeout,
                max_response_bytes: promptd::limits::Limits::default().max_llm_response_bytes,
            })
        }),
    }
}

fn request(repo: &Path, prompt: &str, active: Option<&str>) -> promptd::enhance::ValidatedRequest {
    let req = EnhanceRequest {
        prompt: prompt.into(),
        active_file: active.map(Into::into),
        working_directory: Some(repo.to_path_buf()),
    };
    validate_enhance(&req, &trusted()).unwrap()
}

fn trusted() -> promptd::workspace::WorkspacePolicy {
    promptd::workspace::WorkspacePolicy::trusted(&Default::default())
}

#[tokio::test]
async fn enhanced_with_the_active_file_as_primary_target() {
    let repo = repo();
    let server =
        LlmServer::start(vec![Reply::Answer("## Task\nAdd jittered backoff.".into())]).await;
    let e = enhancer(Some(&server.url), None, Duration::from_secs(10));
    let req = request(
        repo.path(),
        "make the retries in this file back off",
        Some("src/http_client.rs"),
    );
    let r = e.enhance(&req, Vec::new()).await.unwrap();
    assert_eq!(r.status, EnhanceStatus::Enhanced, "{:?}", r.warnings);
    assert_eq!(r.enhanced_prompt, "## Task\nAdd jittered backoff.");
    assert_eq!(r.context.active_file.as_deref(), Some("src/http_client.rs"));
    assert!(r.context.chunks > 0 && r.context.tokens > 0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    assert_eq!(
        reqs[0].authorization.as_deref(),
        Some("Bearer sk-local-test")
    );
    assert_eq!(body["model"], "rewriter-1");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    let system = body["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        system.contains("The PRIMARY TARGET is `src/http_client.rs`"),
        "{system}"
    );
    assert!(
        system.contains("=== ACTIVE FILE (PRIMARY TARGET) ==="),
        "{system}"
    );
    assert!(system.contains("fetch_with_retry"), "{system}");
    assert!(system.contains("Open Questions"));
    assert_eq!(
        body["messages"][1]["content"],
        "make the retries in this file back off"
    );
}

#[tokio::test]
async fn a_secret_in_the_prompt_blocks_and_nothing_is_sent() {
    let repo = repo();
    let server = LlmServer::start(vec![Reply::Answer("never".into())]).await;
    let e = enhancer(Some(&server.url), None, Duration::from_secs(10));
    let token = fake_token();
    let prompt = format!("use token {token} to call the API in fetch_with_retry");
    let r = e
        .enhance(&request(repo.path(), &prompt, None), Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, EnhanceStatus::Blocked);
    assert_eq!(server.requests().len(), 0, "no request may reach the LLM");
    assert!(!r.findings.is_empty());
    assert_eq!(r.findings[0].label, "prompt");
    let shown = serde_json::to_string(&r).unwrap();
    assert!(!shown.contains(&token), "the secret leaked into the result");
}

#[tokio::test]
async fn a_secret_in_the_retrieved_context_blocks_and_nothing_is_sent() {
    let repo = repo();
    let token = fake_token();
    std::fs::write(
        repo.path().join("src/github_client.rs"),
        format!("/// Client for the GitHub API.\npub fn github_client() -> String {{\n    let token = \"{token}\";\n    token.to_string()\n}}\n"),
    )
    .unwrap();
    let server = LlmServer::start(vec![Reply::Answer("never".into())]).await;
    let e = enhancer(Some(&server.url), None, Duration::from_secs(10));
    let req = request(
        repo.path(),
        "refactor the github client here",
        Some("src/github_client.rs"),
    );
    let r = e.enhance(&req, Vec::new()).await.unwrap();
    assert_eq!(r.status, EnhanceStatus::Blocked, "{:?}", r.warnings);
    assert_eq!(server.requests().len(), 0);
    assert!(
        r.findings
            .iter()
            .any(|f| f.label.starts_with("context:src/github_client.rs")),
        "{:?}",
        r.findings
    );
    assert!(!serde_json::to_string(&r).unwrap().contains(&token));
}

#[tokio::test]
async fn llm_failures_return_the_original_prompt() {
    let repo = repo();
    let prompt = "add a cache lookup before fetch_with_retry";
    for (reply, expect) in [
        (Reply::Status(500, None), "HTTP 500"),
        (
            Reply::Slow(Duration::from_secs(5), "late".into()),
            "timed out",
        ),
        (Reply::Garbage, "malformed"),
    ] {
        let server = LlmServer::start(vec![reply]).await;
        let e = enhancer(Some(&server.url), None, Duration::from_millis(1500));
        let r = e
            .enhance(&request(repo.path(), prompt, None), Vec::new())
            .await
            .unwrap();
        assert_eq!(r.status, EnhanceStatus::Original);
        assert_eq!(r.enhanced_prompt, prompt);
        assert!(
            r.warnings.iter().any(|w| w.contains(expect)),
            "{expect}: {:?}",
            r.warnings
        );
    }
    let e = enhancer(None, None, Duration::from_secs(1));
    let r = e
        .enhance(&request(repo.path(), prompt, None), Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, EnhanceStatus::Original);
    assert!(r.warnings.iter().any(|w| w.contains("LLM not configured")));
}

#[tokio::test]
async fn a_shadowing_template_changes_the_system_message() {
    let repo = repo();
    let prompts = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(prompts.path().join("system")).unwrap();
    std::fs::write(
        prompts.path().join("system/enhance_prompt.md"),
        "---\narguments:\n  user_prompt: {required: true}\n  active_file: {}\n  context: {}\n  repository: {}\n---\nHOUSE STYLE REWRITER for {{ repository }}: {{ user_prompt }}\n",
    )
    .unwrap();
    let server = LlmServer::start(vec![Reply::Answer("ok".into())]).await;
    let e = enhancer(
        Some(&server.url),
        Some(prompts.path()),
        Duration::from_secs(10),
    );
    let r = e
        .enhance(&request(repo.path(), "tidy the cache", None), Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, EnhanceStatus::Enhanced);
    let body = &server.requests()[0].body;
    let system = body["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(system.starts_with("HOUSE STYLE REWRITER for "), "{system}");
}

#[test]
fn validation_names_the_field_at_fault() {
    let repo = repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.rs"), "fn x() {}").unwrap();
    let bad = |active: Option<std::path::PathBuf>, dir: std::path::PathBuf| {
        validate_enhance(
            &EnhanceRequest {
                prompt: "p".into(),
                active_file: active,
                working_directory: Some(dir),
            },
            &trusted(),
        )
        .unwrap_err()
        .to_string()
    };
    let e = bad(Some(outside.path().join("x.rs")), repo.path().into());
    assert!(
        e.starts_with("`activeFile`:") && e.contains("outside"),
        "{e}"
    );
    std::os::unix::fs::symlink(outside.path().join("x.rs"), repo.path().join("src/link.rs"))
        .unwrap();
    let e = bad(Some("src/link.rs".into()), repo.path().into());
    assert!(
        e.starts_with("`activeFile`:") && e.contains("outside"),
        "symlinks are resolved: {e}"
    );
    let e = bad(None, repo.path().join("missing"));
    assert!(e.starts_with("`workingDirectory`:"), "{e}");
    let e = bad(None, repo.path().join("src/cache.rs"));
    assert!(e.contains("not a directory"), "{e}");
}

#[tokio::test]
async fn the_whole_flow_through_the_real_binary_over_mcp() {
    let repo = repo();
    let server = LlmServer::start(vec![Reply::Answer("## Task\nRewritten over MCP.".into())]).await;
    let env = [
        ("LLM_BASE_URL", server.url.as_str()),
        ("LLM_MODEL", "rewriter-mcp"),
        ("LLM_API_KEY", "sk-mcp-test"),
    ];
    let s = mcp::stdio_with_env(repo.path(), &[], &env).await;
    let args = json!({
        "prompt": "add backoff to fetch_with_retry in this file",
        "activeFile": "src/http_client.rs",
        "workingDirectory": repo.path(),
    });
    let result = s.call("enhance_prompt", args).await.unwrap();
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    assert_eq!(structured["status"], "enhanced", "{structured}");
    assert_eq!(structured["enhancedPrompt"], "## Task\nRewritten over MCP.");
    assert_eq!(structured["context"]["activeFile"], "src/http_client.rs");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].body["model"], "rewriter-mcp");

    // A bad field is -32602 naming it.
    let args =
        json!({"prompt": "x", "activeFile": "/etc/hostname", "workingDirectory": repo.path()});
    let err = s.call("enhance_prompt", args).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("-32602") || msg.contains("Invalid params") || msg.contains("activeFile"),
        "{msg}"
    );
    assert!(msg.contains("activeFile"), "{msg}");
    s.close().await;
}

/// Without `workingDirectory`, the repository is the client's first MCP root (a `file://` URI,
/// percent-encoded); a client without roots gets the server's directory and a warning.
#[tokio::test]
async fn a_long_retrieval_never_holds_up_the_other_requests() {
    // Enough files that the first index of the repository takes a while.
    let repo = tempfile::tempdir().unwrap();
    let src = repo.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..600 {
        let body: String = (0..20)
            .map(|j| {
                format!("def handler_{i}_{j}(request):\n    return parse_{j}(request.body)\n\n")
            })
            .collect();
        std::fs::write(src.join(format!("module_{i}.py")), body).unwrap();
    }
    let s = mcp::stdio(repo.path(), &[]).await;
    let started = std::time::Instant::now();
    let enhance = async {
        let r = s
            .call(
                "enhance_prompt",
                json!({ "prompt": "fix the request parser", "workingDirectory": repo.path() }),
            )
            .await;
        (r, started.elapsed())
    };
    let probe = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sent = std::time::Instant::now();
        s.client.list_prompts(None).await.expect("prompts/list");
        (sent.elapsed(), started.elapsed())
    };
    let ((result, enhanced_after), (latency, probed_after)) = tokio::join!(enhance, probe);
    result.expect("enhance_prompt");
    eprintln!(
        "enhance_prompt took {enhanced_after:?}; prompts/list sent during it answered in {latency:?}"
    );
    assert!(
        enhanced_after > probed_after,
        "the retrieval was too short to test anything ({enhanced_after:?})"
    );
    assert!(
        latency < Duration::from_millis(500),
        "prompts/list waited {latency:?}"
    );
    s.close().await;
}

#[tokio::test]
async fn the_cli_prints_every_line_of_the_prompt_on_stdout_and_warnings_on_stderr() {
    let repo = repo();
    let answer = "## Task\nwarning: keep the retry budget\nBLOCKED is a state name here.";
    let server = LlmServer::start(vec![Reply::Answer(answer.into())]).await;
    let url = server.url.clone();
    let dir = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        support::process::promptd()
            .args(["enhance", "add backoff to fetch_with_retry", "--dir"])
            .arg(&dir)
            .env("LLM_BASE_URL", &url)
            .env("LLM_MODEL", "rewriter-cli")
            .current_dir(&dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, format!("{answer}\n"), "stderr: {stderr}");
    assert!(!stderr.contains("keep the retry budget"), "{stderr}");
}

#[test]
fn context_and_enhance_resolve_a_relative_active_file_alike() {
    let repo = repo();
    let cwd = repo.path().join("src");
    let run = |args: &[&str]| {
        support::process::promptd()
            .args(args)
            .arg("--dir")
            .arg(repo.path())
            .args(["--active-file", "http_client.rs", "--json"])
            .current_dir(&cwd)
            .output()
            .unwrap()
    };
    for out in [
        run(&["context", "backoff in fetch_with_retry"]),
        run(&["enhance", "add backoff to fetch_with_retry"]),
    ] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("src/http_client.rs"), "{stdout}");
    }
}

#[tokio::test]
async fn a_misspelled_field_is_refused_naming_it() {
    let repo = repo();
    let s = mcp::stdio(repo.path(), &[]).await;
    let e = s
        .call(
            "enhance_prompt",
            json!({ "prompt": "add backoff", "workingDir": repo.path() }),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("-32602") && e.contains("unknown field `workingDir`"),
        "{e}"
    );
    s.close().await;
}

#[tokio::test]
#[allow(deprecated)] // MCP roots (SEP-2577): still what IDE clients send.
async fn without_working_directory_the_clients_first_root_is_the_repository() {
    let base = tempfile::tempdir().unwrap();
    let repo = base.path().join("my repo");
    fill_repo(&repo);
    let elsewhere = tempfile::tempdir().unwrap();
    let server = LlmServer::start(vec![
        Reply::Answer("## Task\nFrom the root.".into()),
        Reply::Answer("## Task\nFrom the server's directory.".into()),
    ])
    .await;
    let env = [
        ("LLM_BASE_URL", server.url.as_str()),
        ("LLM_MODEL", "rewriter-roots"),
    ];
    let uri = format!("file://{}", repo.display()).replace(' ', "%20");
    let roots = vec![
        rmcp::model::Root::new(uri).with_name("my repo"),
        rmcp::model::Root::new(format!("file://{}", elsewhere.path().display())),
    ];
    // The server runs elsewhere: only the root can lead it to the repository.
    let s = mcp::stdio_with_roots(elsewhere.path(), &[], &env, roots).await;
    let args = json!({
        "prompt": "add backoff to fetch_with_retry in this file",
        "activeFile": "src/http_client.rs",
    });
    let result = s.call("enhance_prompt", args).await.unwrap();
    let structured = result.structured_content.expect("structured content");
    assert_eq!(structured["status"], "enhanced", "{structured}");
    assert_eq!(structured["context"]["activeFile"], "src/http_client.rs");
    assert!(
        !structured["warnings"]
            .to_string()
            .contains("server's directory"),
        "{structured}"
    );
    let system = server.requests()[0].body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("fetch_with_retry"),
        "the active file from the root's repository reached the template: {system}"
    );
    s.close().await;

    // No roots: the server's own directory, said in a warning.
    let s = mcp::stdio_with_env(elsewhere.path(), &[], &env).await;
    let args = json!({"prompt": "explain the layout"});
    let result = s.call("enhance_prompt", args).await.unwrap();
    let structured = result.structured_content.expect("structured content");
    let warnings = structured["warnings"].to_string();
    assert!(
        warnings.contains("offers no roots") && warnings.contains("server's directory"),
        "{structured}"
    );
    s.close().await;
}

#[tokio::test]
async fn mcp_structured_content_matches_the_output_schema_for_every_status() {
    let repo = repo();
    // The first rewrite succeeds; every later LLM answer is garbage (status `original`).
    let server = LlmServer::start(vec![
        Reply::Answer("## Task\nRewritten over MCP.".into()),
        Reply::Garbage,
    ])
    .await;
    let env = [
        ("LLM_BASE_URL", server.url.as_str()),
        ("LLM_MODEL", "rewriter-schema"),
        ("LLM_API_KEY", "sk-schema-test"),
    ];
    let s = mcp::stdio_with_env(repo.path(), &[], &env).await;
    let tool = mcp::listed_tool(&s, "enhance_prompt").await;
    let validator = mcp::output_validator(&tool);

    let token = fake_token();
    let blocked_prompt = format!("use {token} to call the API in this file");
    for (prompt, status) in [
        ("add backoff to fetch_with_retry in this file", "enhanced"),
        (blocked_prompt.as_str(), "blocked"),
        ("add a cache lookup before fetch_with_retry", "original"),
    ] {
        let args = json!({
            "prompt": prompt,
            "activeFile": "src/http_client.rs",
            "workingDirectory": repo.path(),
        });
        let result = s.call("enhance_prompt", args).await.unwrap();
        let structured = result.structured_content.expect("structured content");
        assert_eq!(structured["status"], status, "{structured:#}");
        if status == "blocked" {
            assert!(!structured["findings"].as_array().unwrap().is_empty());
        }
        mcp::assert_matches_schema(&validator, &structured, status);
    }
    // The schema is not vacuous: an unknown status is refused.
    let mut broken = json!({
        "status": "rewritten",
        "enhancedPrompt": "x",
        "warnings": [],
        "findings": [],
        "context": {"activeFile": null, "chunks": 0, "tokens": 0},
    });
    assert!(!validator.is_valid(&broken), "unknown status accepted");
    broken["status"] = json!("original");
    mcp::assert_matches_schema(&validator, &broken, "a hand-written original result");
    s.close().await;
}
