//! Hostile input against what a request may read: `compose_prompt.docs`, `workingDirectory` /
//! `dir`, client roots, the repository index (size bounds, damage) and the LLM's answer. Each
//! test drives the real binary, asserts a clear error naming the argument (and the limit's
//! config key), bounded time and memory, and that the server still serves afterwards.
// Roots are deprecated by SEP-2577, yet they are what IDE clients send to say which folder is
// open, and what the server confines a client to.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::guard::{Fake, fake_secret};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::mcp::{self, Lifecycle, Session};
use crate::support::process::{peak_rss_of, promptd, run_bounded};

/// Peak RSS a server may reach in these tests (its baseline is well below).
const RSS_BOUND_MIB: f64 = 400.0;

/// A workspace with code, notes, and a config (`limits` and `rag` as given) at its root.
fn workspace(config: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/http_client.rs"),
        "//! HTTP client with retries.\n\npub struct HttpClient { retries: u32 }\n\nimpl HttpClient {\n    /// Sends a GET request, retrying transient failures.\n    pub fn fetch_with_retry(&self, url: &str) -> Result<String, String> {\n        for _ in 0..self.retries {\n            if let Ok(body) = get(url) { return Ok(body); }\n        }\n        Err(format!(\"giving up on {url}\"))\n    }\n}\n\nfn get(url: &str) -> Result<String, String> { Err(url.to_string()) }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("notes.md"),
        "# Notes\n\nRetries use exponential backoff.\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".ado-mcp-config.json"),
        serde_json::to_string(&config).unwrap(),
    )
    .unwrap();
    dir
}

/// The config of most tests: lexical retrieval (no model), small docs.
fn lexical_config() -> Value {
    json!({"rag": {"embeddings": false}, "limits": {"maxDocBytes": 4096}})
}

fn file_root(dir: &Path) -> rmcp::model::Root {
    rmcp::model::Root::new(format!("file://{}", dir.display()))
}

/// The error message of a failed call, with its JSON-RPC code.
fn call_error(result: Result<rmcp::model::CallToolResult, rmcp::ServiceError>) -> (i32, String) {
    match result {
        Err(rmcp::ServiceError::McpError(e)) => (e.code.0, e.message.to_string()),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn structured(result: Result<rmcp::model::CallToolResult, rmcp::ServiceError>) -> Value {
    result
        .expect("the call succeeds")
        .structured_content
        .expect("structured content")
}

/// `promptd serve --http` in `dir` with a connected client, and the server's pid (for its
/// peak RSS).
async fn http_session(dir: &Path, env: &[(&str, &str)]) -> (Session, u32) {
    let (child, url, stderr) = mcp::http_server_with_env(dir, &[], env).await;
    let pid = child.id().unwrap();
    let (client, changed) = mcp::http_client(&url, None).await;
    let session = Session {
        client,
        changed,
        stderr,
        child: Some(child),
    };
    (session, pid)
}

/// A short compose call that must succeed: the server still serves.
async fn still_serves(s: &Session, dir: &Path) {
    let args = json!({"query": "retries", "dir": dir, "docs": ["notes.md"]});
    let out = structured(s.call("compose_prompt", args).await);
    assert!(
        out["text"]
            .as_str()
            .unwrap()
            .contains("exponential backoff")
    );
}

#[tokio::test]
async fn compose_docs_stay_inside_the_workspace_and_never_read_the_environment() {
    let ws = workspace(lexical_config());
    let root = ws.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "outside the workspace").unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", root.join("environ.md")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("link.md")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero.md")).unwrap();
    std::fs::write(root.join("big.md"), "x".repeat(8192)).unwrap();
    let fifo = std::ffi::CString::new(root.join("pipe.md").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let rel_outside = format!(
        "../{}/secret.md",
        outside.path().file_name().unwrap().to_string_lossy()
    );
    // Values the server holds in its environment: never returned to a client.
    let api_key = format!("sk-{}", "environ-probe-".repeat(2));
    let s = mcp::stdio_with_roots(
        root,
        &[],
        &[("LLM_API_KEY", api_key.as_str())],
        vec![file_root(root)],
    )
    .await;

    let cases: &[(&str, &str)] = &[
        ("/etc/hostname", "outside the workspace"),
        (&rel_outside, "outside the workspace"),
        ("/proc/self/environ", "outside the workspace"),
        ("environ.md", "outside the workspace"),
        ("link.md", "outside the workspace"),
        ("/dev/zero", "outside the workspace"),
        ("zero.md", "outside the workspace"),
        ("src", "not a regular file"),
        ("pipe.md", "not a regular file"),
        ("big.md", "limits.maxDocBytes"),
        ("missing.md", "missing.md"),
    ];
    for (doc, expected) in cases {
        let started = Instant::now();
        let args = json!({"query": "q", "dir": root, "docs": ["notes.md", doc]});
        let (code, message) = call_error(s.call("compose_prompt", args).await);
        assert_eq!(code, -32602, "{doc}: {message}");
        assert!(message.contains("`docs[1]`"), "{doc}: {message}");
        assert!(message.contains(expected), "{doc}: {message}");
        assert!(!message.contains(&api_key), "{doc}: the environment leaked");
        assert!(started.elapsed() < Duration::from_secs(5), "{doc}: slow");
    }
    still_serves(&s, root).await;
    s.close().await;
}

#[tokio::test]
async fn a_doc_with_a_secret_is_left_out_with_its_finding() {
    let ws = workspace(lexical_config());
    let root = ws.path();
    let secret = fake_secret("github-pat", &mut Fake::new(14)).unwrap();
    std::fs::write(
        root.join("leak.md"),
        format!("# Deploy\n\nUse this token:\n{secret}\n"),
    )
    .unwrap();
    let s = mcp::stdio_with_roots(root, &[], &[], vec![file_root(root)]).await;
    let args = json!({"query": "deploy", "dir": root, "docs": ["leak.md", "notes.md"]});
    let out = structured(s.call("compose_prompt", args).await);
    let text = out.to_string();
    assert!(!text.contains(&secret), "the secret reached the client");
    let warnings = out["warnings"].to_string();
    assert!(
        warnings.contains("left out doc leak.md:1-4") && warnings.contains("line 4"),
        "{warnings}"
    );
    assert_eq!(out["findings"][0]["ruleId"], "github-pat", "{out}");
    assert!(
        out["text"]
            .as_str()
            .unwrap()
            .contains("exponential backoff")
    );
    assert_eq!(out["ledger"]["docsIncluded"].as_array().unwrap().len(), 1);
    s.close().await;
}

#[tokio::test]
async fn working_directories_outside_the_roots_and_system_folders_are_refused_fast() {
    let ws = workspace(lexical_config());
    let root = ws.path();
    let other = tempfile::tempdir().unwrap();
    let rag_at_root = Path::new("/.rag");
    let rag_before = std::fs::metadata(rag_at_root)
        .and_then(|m| m.modified())
        .ok();
    // The server runs in the workspace; the client declares it, a non-file root, and a root
    // whose `%` precedes a multi-byte character (a decoder that slices inside it panics).
    let roots = vec![
        file_root(root),
        rmcp::model::Root::new("https://example.com/repo"),
        rmcp::model::Root::new("file:///tmp/a%é%2"),
        rmcp::model::Root::new("file:///"),
    ];
    let s = mcp::stdio_with_roots(root, &[], &[], roots).await;
    let mut refused: Vec<(PathBuf, &str)> = vec![
        ("/".into(), "the filesystem root"),
        ("/etc".into(), "a system folder (/etc)"),
        ("/proc/self".into(), "a system folder (/proc)"),
        ("/usr/lib".into(), "a system folder (/usr)"),
        ("/tmp".into(), "a shared folder"),
        (other.path().into(), "not inside a root the client declared"),
    ];
    if let Some(home) = std::env::home_dir().filter(|h| h.is_dir()) {
        refused.push((home, "home directory"));
    }
    for (dir, reason) in &refused {
        for (tool, field, args) in [
            (
                "enhance_prompt",
                "workingDirectory",
                json!({"prompt": "explain", "workingDirectory": dir}),
            ),
            ("compose_prompt", "dir", json!({"query": "q", "dir": dir})),
        ] {
            let started = Instant::now();
            let (code, message) = call_error(s.call(tool, args).await);
            assert_eq!(code, -32602, "{tool} {}: {message}", dir.display());
            assert!(
                message.contains(&format!("`{field}`")) && message.contains(reason),
                "{tool} {}: {message}",
                dir.display()
            );
            assert!(started.elapsed() < Duration::from_secs(2), "{tool}: slow");
        }
    }
    let rag_after = std::fs::metadata(rag_at_root)
        .and_then(|m| m.modified())
        .ok();
    assert_eq!(rag_before, rag_after, "/.rag was created or touched");

    // Without a directory the first usable root is the workspace: the other roots were dropped.
    let out = structured(s.call("compose_prompt", json!({"query": "retries"})).await);
    assert!(out["warnings"].is_array(), "{out}");
    let args = json!({"prompt": "add backoff", "activeFile": "src/http_client.rs"});
    let out = structured(s.call("enhance_prompt", args).await);
    assert_eq!(out["context"]["activeFile"], "src/http_client.rs", "{out}");
    still_serves(&s, root).await;
    s.close().await;
}

#[tokio::test]
async fn a_configured_folder_admits_a_workspace_the_client_did_not_declare() {
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("guide.md"), "# Guide\n\nSmall steps.\n").unwrap();
    let mut config = lexical_config();
    config["workspace"] = json!({"allowedFolders": [other.path()]});
    let ws = workspace(config);
    let s = mcp::stdio(ws.path(), &[]).await;
    let args = json!({"query": "q", "dir": other.path(), "docs": ["guide.md"]});
    let out = structured(s.call("compose_prompt", args).await);
    assert!(out["text"].as_str().unwrap().contains("Small steps."));
    s.close().await;
}

/// A folder of another user's project: notes with a marker no answer may carry, and code.
fn private_project(parent: &Path) -> PathBuf {
    let proj = parent.join("alice-proj");
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(
        proj.join("notes.md"),
        "# Private\n\nALICE-PRIVATE-NOTES retries and backoff.\n",
    )
    .unwrap();
    std::fs::write(
        proj.join("src/retry.rs"),
        "/// ALICE-PRIVATE-CODE\npub fn retry_with_backoff() -> u32 { 3 }\n",
    )
    .unwrap();
    proj
}

/// An HTTP client (`token` as its bearer token) offering `roots` to `serve --http ARGS` in
/// `dir`.
async fn http_session_with_roots(
    dir: &Path,
    args: &[&str],
    token: Option<&str>,
    roots: Vec<rmcp::model::Root>,
) -> Session {
    http_session_on(dir, args, token, roots, Lifecycle::Initialize).await
}

/// [`http_session_with_roots`] for a client connected with `lifecycle`.
async fn http_session_on(
    dir: &Path,
    args: &[&str],
    token: Option<&str>,
    roots: Vec<rmcp::model::Root>,
    lifecycle: Lifecycle,
) -> Session {
    let (child, url, stderr) = mcp::http_server(dir, args).await;
    let (client, changed) = mcp::http_client_connected(&url, token, roots, lifecycle).await;
    Session {
        client,
        changed,
        stderr,
        child: Some(child),
    }
}

#[tokio::test]
async fn an_http_client_without_the_token_cannot_widen_its_workspace_with_roots() {
    let ws = workspace(lexical_config());
    let other = tempfile::tempdir().unwrap();
    let proj = private_project(other.path());
    for args in [&[][..], &["--stateless"][..]] {
        let s = http_session_with_roots(ws.path(), args, None, vec![file_root(&proj)]).await;
        let calls = [
            (
                "compose_prompt",
                "dir",
                json!({"query": "retries", "dir": proj, "docs": ["notes.md"]}),
            ),
            (
                "compose_prompt",
                "dir",
                json!({"query": "retry backoff", "dir": proj}),
            ),
            (
                "enhance_prompt",
                "workingDirectory",
                json!({"prompt": "add backoff", "workingDirectory": proj}),
            ),
        ];
        for (tool, field, call) in calls {
            let (code, message) = call_error(s.call(tool, call).await);
            assert_eq!(code, -32602, "{args:?} {tool}: {message}");
            assert!(
                message.contains(&format!("`{field}`"))
                    && message.contains("--auth-token")
                    && message.contains("workspace.httpRoots"),
                "{args:?} {tool}: {message}"
            );
            assert!(!message.contains("ALICE-PRIVATE"), "{message}");
        }
        // Without a folder the call works in the server's directory, saying why the client's
        // roots were ignored (a stateless request has no session to ask for roots).
        let out = structured(
            s.call("compose_prompt", json!({"query": "retry backoff"}))
                .await,
        );
        let text = out.to_string();
        assert!(!text.contains("ALICE-PRIVATE"), "{args:?}: {text}");
        assert!(text.contains("fetch_with_retry"), "{args:?}: {text}");
        if args.is_empty() {
            let warnings = out["warnings"].to_string();
            assert!(
                warnings.contains("roots") && warnings.contains("are ignored"),
                "{warnings}"
            );
        }
        assert!(
            !proj.join(".rag").exists(),
            "{args:?}: an index was written"
        );
        still_serves(&s, ws.path()).await;
        s.close().await;
    }
}

/// Over HTTP with sessions on either protocol, and over stateless HTTP on MCP 2026-07-28 (where
/// the server asks for the roots with a `roots/list` input request and the client sends the call
/// again with its answer), an authenticated client's roots inside `workspace.httpRoots` are its
/// workspace. A stateless request on an older protocol has no session to ask: the server's
/// directory is used, with a warning.
#[tokio::test]
async fn an_authenticated_http_client_uses_roots_inside_the_configured_folders() {
    let other = tempfile::tempdir().unwrap();
    let proj = private_project(other.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let stray = private_project(elsewhere.path());
    let mut config = lexical_config();
    config["workspace"] = json!({"httpRoots": [other.path()]});
    let ws = workspace(config);
    let token = "a-long-random-token-for-this-test";
    let cases = [
        (false, Lifecycle::Initialize),
        (false, Lifecycle::Discover),
        (true, Lifecycle::Discover),
        (true, Lifecycle::Initialize),
    ];
    for (stateless, lifecycle) in cases {
        let case = format!("stateless {stateless}, {lifecycle:?}");
        let mut args = vec!["--auth-token", token];
        if stateless {
            args.push("--stateless");
        }
        let roots = vec![file_root(&stray), file_root(&proj)];
        let s = http_session_on(ws.path(), &args, Some(token), roots, lifecycle).await;
        let call = json!({"query": "retries", "docs": ["notes.md"]});
        let out = structured(s.call("compose_prompt", call).await);
        let warnings = out["warnings"].to_string();
        if stateless && lifecycle == Lifecycle::Initialize {
            assert!(!out.to_string().contains("ALICE-PRIVATE"), "{case}: {out}");
            assert!(
                warnings.contains("server's directory"),
                "{case}: {warnings}"
            );
            assert_eq!(s.client.service().roots_asked(), 0, "{case}");
            s.close().await;
            continue;
        }
        // The first honoured root is the default workspace: the root outside `httpRoots` is not.
        assert!(
            out["text"]
                .as_str()
                .unwrap()
                .contains("ALICE-PRIVATE-NOTES"),
            "{case}: {out}"
        );
        assert!(
            warnings.contains(&stray.display().to_string())
                && warnings.contains("workspace.httpRoots"),
            "{case}: {warnings}"
        );
        let (code, message) = call_error(
            s.call("compose_prompt", json!({"query": "q", "dir": stray}))
                .await,
        );
        assert_eq!(code, -32602, "{case}: {message}");
        // Retrieval there writes the index into the configured folder.
        let out = structured(
            s.call("compose_prompt", json!({"query": "retry backoff"}))
                .await,
        );
        assert!(
            out["text"].as_str().unwrap().contains("ALICE-PRIVATE-CODE"),
            "{case}: {out}"
        );
        assert!(proj.join(".rag").is_dir(), "{case}");
        assert!(!stray.join(".rag").exists(), "{case}");
        // A session asks once; without sessions every call that needs a workspace asks.
        let asked = s.client.service().roots_asked();
        match lifecycle {
            Lifecycle::Initialize => assert_eq!(asked, 1, "{case}"),
            Lifecycle::Discover => assert_eq!(asked, 3, "{case}"),
        }
        s.close().await;
    }
}

/// Over stdio, a client on either protocol leads the server to the folder it has open: on MCP
/// 2026-07-28 through its answer to the server's `roots/list` input request.
#[tokio::test]
async fn a_stdio_client_roots_are_its_workspace_on_every_protocol() {
    let ws = workspace(lexical_config());
    let other = tempfile::tempdir().unwrap();
    let proj = private_project(other.path());
    for lifecycle in [Lifecycle::Initialize, Lifecycle::Discover] {
        let s = mcp::stdio_connected(ws.path(), &[], &[], vec![file_root(&proj)], lifecycle).await;
        let call = json!({"query": "retries", "docs": ["notes.md"]});
        let out = structured(s.call("compose_prompt", call).await);
        assert!(
            out["text"]
                .as_str()
                .unwrap()
                .contains("ALICE-PRIVATE-NOTES"),
            "{lifecycle:?}: {out}"
        );
        // A tool without a workspace never asks.
        let listed = s
            .call("wit-get-prompts", json!({"includeContent": false}))
            .await;
        assert!(listed.is_ok(), "{lifecycle:?}");
        assert_eq!(s.client.service().roots_asked(), 1, "{lifecycle:?}");
        s.close().await;
    }
}

/// A client on MCP 2026-07-28 whose answer to the `roots/list` input request is not a roots
/// list gets -32602 naming the field at fault.
#[tokio::test]
async fn a_malformed_roots_answer_names_the_field() {
    use rmcp::model::CallToolRequestParams;
    let ws = workspace(lexical_config());
    let s = mcp::stdio_connected(ws.path(), &[], &[], Vec::new(), Lifecycle::Discover).await;
    let answer = json!({"roots": [{"uri": 7}]});
    let request = CallToolRequestParams::new("compose_prompt")
        .with_arguments(json!({"query": "retries"}).as_object().unwrap().clone())
        .with_input_responses([("roots".to_string(), answer)].into());
    let (code, message) = call_error(s.client.peer().call_tool_once(request).await.map(
        |r| match r {
            rmcp::model::CallToolResponse::Complete(r) => r,
            other => panic!("expected a complete result or an error: {other:?}"),
        },
    ));
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("inputResponses.roots.roots[0].uri"),
        "{message}"
    );
    s.close().await;
}

#[tokio::test]
async fn hidden_folders_of_a_home_directory_are_refused_for_every_caller() {
    let ws = workspace(lexical_config());
    let home = tempfile::tempdir().unwrap();
    let ssh = home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("notes.md"), "ALICE-PRIVATE-KEY\n").unwrap();
    let home_var = home.path().to_str().unwrap();
    // A stdio client declaring the folder as its root.
    let s =
        mcp::stdio_with_roots(ws.path(), &[], &[("HOME", home_var)], vec![file_root(&ssh)]).await;
    for args in [
        json!({"query": "keys", "dir": ssh, "docs": ["notes.md"]}),
        json!({"query": "keys", "docs": ["notes.md"]}),
    ] {
        let (code, message) = call_error(s.call("compose_prompt", args).await);
        assert_eq!(code, -32602, "{message}");
        assert!(
            message.contains("hidden folder of a home directory")
                && message.contains("workspace.allowedFolders"),
            "{message}"
        );
        assert!(!message.contains("ALICE-PRIVATE"), "{message}");
    }
    // Another stdio root is honoured as before.
    let other = tempfile::tempdir().unwrap();
    let proj = private_project(other.path());
    s.close().await;
    let s = mcp::stdio_with_roots(
        ws.path(),
        &[],
        &[("HOME", home_var)],
        vec![file_root(&proj)],
    )
    .await;
    let out = structured(
        s.call(
            "compose_prompt",
            json!({"query": "q", "docs": ["notes.md"]}),
        )
        .await,
    );
    assert!(
        out["text"]
            .as_str()
            .unwrap()
            .contains("ALICE-PRIVATE-NOTES")
    );
    s.close().await;
    // The CLI user too.
    let mut cmd = promptd();
    cmd.current_dir(ws.path()).env("HOME", home_var).args([
        "context",
        "--dir",
        ssh.to_str().unwrap(),
        "keys",
    ]);
    let run = run_bounded(cmd, b"", Duration::from_secs(60));
    assert_ne!(run.code(), Some(0), "{}", run.stdout);
    assert!(
        run.stderr.contains("hidden folder of a home directory"),
        "{}",
        run.stderr
    );
    assert!(
        !ssh.join(".rag").exists(),
        "an index was written into ~/.ssh"
    );
}

#[tokio::test]
async fn one_index_takes_at_most_the_configured_files() {
    let mut config = lexical_config();
    config["limits"]["maxIndexFiles"] = json!(5);
    let ws = workspace(config);
    for i in 0..40 {
        std::fs::write(
            ws.path().join(format!("src/mod_{i:02}.rs")),
            format!("pub fn retry_policy_{i}() -> u32 {{ {i} }}\n"),
        )
        .unwrap();
    }
    let (s, pid) = http_session(ws.path(), &[]).await;
    let args = json!({"query": "retry policy", "dir": ws.path()});
    let out = structured(s.call("compose_prompt", args).await);
    let warnings = out["warnings"].to_string();
    assert!(
        warnings.contains("limits.maxIndexFiles") && warnings.contains("first 5 files"),
        "{warnings}"
    );
    let manifest = promptd::rag::index::Manifest::from_bytes(
        &std::fs::read(ws.path().join(".rag/manifest.bin")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest.files.len(), 5);
    let rss = peak_rss_of(pid).unwrap();
    assert!(rss < RSS_BOUND_MIB, "peak RSS {rss:.0} MiB");
    s.close().await;
}

/// The segment files of an index, largest first.
fn segment_files(repo: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(repo.join(".rag/index"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| (std::fs::metadata(&p).unwrap().len(), p))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files.into_iter().map(|(_, p)| p).collect()
}

fn cli(dir: &Path, args: &[&str]) -> crate::support::process::Bounded {
    let mut cmd = promptd();
    cmd.current_dir(dir).args(args);
    run_bounded(cmd, b"", Duration::from_secs(60))
}

#[tokio::test]
async fn a_damaged_index_is_rebuilt_on_the_next_run() {
    let ws = workspace(lexical_config());
    let root = ws.path();
    let dir = root.to_str().unwrap();
    let first = cli(root, &["index", "--dir", dir]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    // Random overwrites inside every segment file.
    let mut g = Fake::new(10);
    for ext in ["idx", "term", "store", "pos", "fieldnorm"] {
        for file in segment_files(root, ext) {
            let mut bytes = std::fs::read(&file).unwrap();
            let n = bytes.len();
            for _ in 0..(n / 8).max(4) {
                let at = (g.next_u64() as usize) % n;
                bytes[at] = g.next_u64() as u8;
            }
            std::fs::write(&file, bytes).unwrap();
        }
    }
    let context = cli(root, &["context", "--dir", dir, "fetch with retry"]);
    assert!(context.exited(), "context crashed: {}", context.stderr);
    assert_eq!(context.code(), Some(0), "{}", context.stderr);
    assert!(
        context.stderr.contains("damaged") && context.stderr.contains("rebuilding"),
        "{}",
        context.stderr
    );
    assert!(
        context.stdout.contains("fetch_with_retry"),
        "{}",
        context.stdout
    );
    // The rebuilt index is whole: the next run finds nothing to repair.
    let again = cli(root, &["index", "--dir", dir]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr);
    assert!(!again.stderr.contains("rebuilding"), "{}", again.stderr);

    // The same damage under a server: enhance_prompt answers.
    for file in segment_files(root, "idx") {
        std::fs::write(
            &file,
            vec![0xFF; std::fs::metadata(&file).unwrap().len() as usize],
        )
        .unwrap();
    }
    let s = mcp::stdio_with_roots(root, &[], &[], vec![file_root(root)]).await;
    let args =
        json!({"prompt": "add backoff to fetch_with_retry", "activeFile": "src/http_client.rs"});
    let out = structured(s.call("enhance_prompt", args).await);
    assert_eq!(out["status"], "original", "{out}");
    assert!(out["warnings"].to_string().contains("rebuilding"), "{out}");
    s.close().await;
}

#[tokio::test]
async fn deleted_segment_files_are_rebuilt_by_the_cli() {
    let ws = workspace(lexical_config());
    let root = ws.path();
    let dir = root.to_str().unwrap();
    let first = cli(root, &["index", "--dir", dir]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    // `promptd index` finds the files gone, rebuilds and says so.
    let pos = segment_files(root, "pos");
    assert!(!pos.is_empty());
    for file in &pos {
        std::fs::remove_file(file).unwrap();
    }
    let index = cli(root, &["index", "--dir", dir]);
    assert_eq!(index.code(), Some(0), "{}", index.stderr);
    assert!(
        index.stdout.contains(".pos (missing)")
            && index.stdout.contains("rebuilding")
            && index.stdout.contains("(2 added"),
        "{}",
        index.stdout
    );
    let context = cli(root, &["context", "--dir", dir, "fetch with retry"]);
    assert_eq!(context.code(), Some(0), "{}", context.stderr);
    assert!(
        context.stdout.contains("fetch_with_retry"),
        "{}",
        context.stdout
    );
    assert!(!context.stderr.contains("rebuilding"), "{}", context.stderr);
    // `promptd context` finds another kind gone, rebuilds and answers.
    for file in segment_files(root, "store") {
        std::fs::remove_file(file).unwrap();
    }
    for _ in 0..2 {
        let context = cli(root, &["context", "--dir", dir, "fetch with retry"]);
        assert_eq!(context.code(), Some(0), "{}", context.stderr);
        assert!(
            context.stdout.contains("fetch_with_retry"),
            "{}",
            context.stdout
        );
    }
    let again = cli(root, &["index", "--dir", dir]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr);
    assert!(!again.stdout.contains("rebuilding"), "{}", again.stdout);
    assert!(again.stdout.contains("2 unchanged"), "{}", again.stdout);
}

/// Rewrites the CRC32 in a tantivy file's footer so that it matches the (damaged) body: damage
/// that checksums cannot show.
fn fix_footer_checksum(file: &Path) {
    let bytes = std::fs::read(file).unwrap();
    let n = bytes.len();
    let footer_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let body_end = n - 8 - footer_len;
    let mut footer: Value = serde_json::from_slice(&bytes[body_end..n - 8]).unwrap();
    footer["crc"] = json!(crc32fast::hash(&bytes[..body_end]));
    let footer = serde_json::to_vec(&footer).unwrap();
    let mut out = bytes[..body_end].to_vec();
    out.extend_from_slice(&footer);
    out.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    out.extend_from_slice(&bytes[n - 4..]);
    std::fs::write(file, out).unwrap();
}

#[tokio::test]
async fn a_panic_in_retrieval_is_a_server_fault_and_the_next_call_is_served() {
    let ws = workspace(lexical_config());
    let root = ws.path();
    let dir = root.to_str().unwrap();
    let first = cli(root, &["index", "--dir", dir]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    // Postings that decode past their end, behind valid checksums: the search itself fails.
    for file in segment_files(root, "idx") {
        let mut bytes = std::fs::read(&file).unwrap();
        let n = bytes.len();
        bytes[..n / 2].fill(0xFF);
        std::fs::write(&file, bytes).unwrap();
        fix_footer_checksum(&file);
    }
    let s = mcp::stdio_with_roots(root, &[], &[], vec![file_root(root)]).await;
    let args = json!({"prompt": "add backoff to fetch_with_retry retries"});
    let started = Instant::now();
    let (code, message) = call_error(s.call("enhance_prompt", args.clone()).await);
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.contains("enhance_prompt: internal error"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The next call rebuilds the index and answers.
    let out = structured(s.call("enhance_prompt", args).await);
    assert_eq!(out["status"], "original", "{out}");
    assert!(out["context"]["chunks"].as_u64().unwrap() > 0, "{out}");
    still_serves(&s, root).await;
    s.close().await;
}

#[tokio::test]
async fn an_llm_answer_over_the_cap_returns_the_original_prompt() {
    let mut config = lexical_config();
    config["limits"]["maxLlmResponseBytes"] = json!(64 * 1024);
    let ws = workspace(config);
    let server = LlmServer::start(vec![
        Reply::Huge(64 * 1024 * 1024),
        Reply::Answer("## Task\nSmall answer.".into()),
    ])
    .await;
    let env = [("LLM_BASE_URL", server.url.as_str()), ("LLM_MODEL", "huge")];
    let (s, pid) = http_session(ws.path(), &env).await;
    let args = json!({"prompt": "add backoff", "workingDirectory": ws.path()});
    let started = Instant::now();
    let out = structured(s.call("enhance_prompt", args.clone()).await);
    assert_eq!(out["status"], "original", "{out}");
    assert!(
        out["warnings"]
            .to_string()
            .contains("limits.maxLlmResponseBytes"),
        "{out}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let rss = peak_rss_of(pid).unwrap();
    assert!(rss < RSS_BOUND_MIB, "peak RSS {rss:.0} MiB");
    let out = structured(s.call("enhance_prompt", args).await);
    assert_eq!(out["status"], "enhanced", "{out}");
    s.close().await;
}

#[test]
fn a_megabyte_whitespace_run_is_counted_without_a_panic() {
    let mut config = lexical_config();
    config["limits"]["maxDocBytes"] = json!(4 << 20);
    let ws = workspace(config);
    let root = ws.path();
    let spaced = format!("retry{}backoff", " ".repeat(1 << 20));
    std::fs::write(root.join("spaced.md"), format!("{spaced}\n")).unwrap();
    // Over MCP (stdio): the run in the query, with retrieved docs and with a given doc.
    let call = |id: u64, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "compose_prompt", "arguments": args}})
        .to_string()
    };
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        call(1, json!({"query": spaced, "dir": root})),
        call(
            2,
            json!({"query": spaced, "dir": root, "docs": ["notes.md"]}),
        ),
        call(
            3,
            json!({"query": "retry backoff", "dir": root, "docs": ["spaced.md"]}),
        ),
    ];
    let started = Instant::now();
    let mut child = promptd()
        .current_dir(root)
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for request in &requests {
        use std::io::Write;
        writeln!(stdin, "{request}").unwrap();
    }
    let mut replies: Vec<Value> = Vec::new();
    while replies.iter().filter(|r| r["id"] != 0).count() < 3 {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no answer in time; so far {replies:?}"));
        replies.push(serde_json::from_str(&line).unwrap());
    }
    let peak = peak_rss_of(child.id()).unwrap();
    drop(stdin);
    let (_, _, timed_out) = crate::support::process::wait_bounded(&mut child, mcp::STEP);
    assert!(!timed_out, "the server did not exit");
    for id in 1..=3 {
        let reply = replies.iter().find(|r| r["id"] == id).unwrap();
        let out = &reply["result"]["structuredContent"];
        let text = out["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{id}: {reply}"));
        assert!(text.contains("backoff"), "{id}");
        let user = out["tokensPerBlock"]["user"].as_u64().unwrap();
        assert!(user >= 2, "{id}: {}", out["tokensPerBlock"]);
    }
    eprintln!(
        "megabyte whitespace over MCP: {:?}, peak RSS {peak:.1} MiB",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(90));
    assert!(peak < RSS_BOUND_MIB, "{peak:.1} MiB");
    // The CLI: an argument cannot hold a megabyte, so the doc carries the run.
    let mut cmd = promptd();
    cmd.current_dir(root).args([
        "compose",
        "--query",
        "retry backoff",
        "--doc",
        "spaced.md",
        "--json",
    ]);
    let run = run_bounded(cmd, b"", Duration::from_secs(60));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let ledger = &out["ledger"];
    assert_eq!(
        ledger["docsIncluded"].as_array().unwrap().len()
            + ledger["docsDropped"].as_array().unwrap().len(),
        1,
        "{ledger}"
    );
    assert!(
        run.peak_rss_mib < RSS_BOUND_MIB,
        "{:.1} MiB",
        run.peak_rss_mib
    );
}
