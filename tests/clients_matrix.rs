//! The MCP client matrix: the real binary driven by real, official MCP client SDKs, each in a
//! program of ours that runs one fixed script of checks (tests/fixtures/clients/matrix_*.{mjs,py})
//! and prints one JSON line per check, `{check, ok, detail}`:
//!
//! - clients: the 1.x TypeScript SDK (`@modelcontextprotocol/sdk`), the 2.x TypeScript client
//!   (`@modelcontextprotocol/client`) and the Python SDK (PyPI `mcp`), at the versions
//!   `scripts/setup-clients` pins;
//! - transports: stdio (the client starts `promptd serve`), streamable HTTP with sessions
//!   (`serve --http`) and stateless HTTP (`serve --http --stateless`);
//! - protocols: 2025-11-25 (the `initialize` lifecycle) and 2026-07-28 (no `initialize`; roots
//!   through multi-round-trip `input_required` results, `list_changed` through
//!   `subscriptions/listen`).
//!
//! The checks: `prompts/list` page by page (`--page-size 4`: several pages; no name twice; the names
//! `promptd list --json` gives for the same folder), `prompts/get` with an argument and without a
//! required one (-32602 naming it), `tools/list` and every tool called right (the SDK validates
//! `structuredContent` against the `outputSchema`) and with a wrong-typed argument (-32602 naming
//! it; the server's directory holds one tool definition, `render_greeting`, listed and called
//! like promptd's own), `compose_prompt` and `enhance_prompt` without a folder argument working in the client's
//! declared root (a small git repository; `enhance_prompt` rewrites through a local
//! OpenAI-compatible stub), `completion/complete` of an `enum` argument, and
//! `notifications/prompts/list_changed` after a prompt file is edited (not promised by a stateless
//! 2025-11-25 server). No SDK may print a warning.
//!
//! Every cell runs; the failing ones are reported together. A cell an SDK cannot run is a
//! documented skip ([`skip_reason`]), printed. The newest MCP Inspector's CLI runs `tools/list`
//! (with `--strict`) and `prompts/list` over stdio and HTTP, and calls the defined tool.
//!
//! They need Node.js, Python and the install: they run with the `system-tests` feature, and fail
//! naming `scripts/setup-clients` when it has not run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::llm_server::{LlmServer, Reply};
use crate::support::mcp;
use crate::support::process::{self, run_bounded};

/// What one client program may take, start to end.
const CLIENT_RUN: Duration = Duration::from_secs(120);
/// How many cells run at once.
const PARALLEL_CELLS: usize = 3;
/// The bearer token of the HTTP servers: an HTTP client's roots count only with it.
const TOKEN: &str = "client-matrix-token-0123456789";
/// A line of the root's AGENTS.md that `compose_prompt` quotes when it works in the root.
const ROOT_MARKER: &str = "Matrix rule: every retry sleeps with jitter.";
/// The tool definition every cell's server serves after promptd's own tools.
const DEFINED_TOOL: &str = "render_greeting";
/// The text the LLM stub answers `enhance_prompt` with.
const ENHANCED: &str = "## Task\nAdd jittered backoff to fetch_with_retry.";

const TS1_ENTRY: &str = "node_modules/@modelcontextprotocol/sdk/package.json";
const TS2_ENTRY: &str = "node_modules/@modelcontextprotocol/client/package.json";
const INSPECTOR_ENTRY: &str =
    "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js";
const PYTHON: &str = "venv/bin/python";

/// The install of scripts/setup-clients (`PROMPTD_CLIENTS_DIR`, else `.deps/clients`).
fn clients_dir() -> PathBuf {
    process::installed(
        "PROMPTD_CLIENTS_DIR",
        "clients",
        &[TS1_ENTRY, TS2_ENTRY, INSPECTOR_ENTRY, PYTHON],
        "the MCP client matrix's clients are",
        "setup-clients",
    )
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sdk {
    Ts1,
    Ts2,
    Python,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Transport {
    Stdio,
    Http,
    Stateless,
}

const PREVIOUS: &str = "2025-11-25";
const NEWEST: &str = "2026-07-28";

#[derive(Clone, Copy, Debug)]
struct Cell {
    sdk: Sdk,
    transport: Transport,
    protocol: &'static str,
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} × {:?} × {}",
            self.sdk, self.transport, self.protocol
        )
    }
}

/// Why a cell cannot run, from the SDK's own source.
fn skip_reason(cell: Cell) -> Option<&'static str> {
    (cell.sdk == Sdk::Ts1 && cell.protocol == NEWEST).then_some(
        "@modelcontextprotocol/sdk 1.32.2 speaks only the initialize lifecycle: its \
         dist/esm/types.js sets LATEST_PROTOCOL_VERSION = '2025-11-25' and \
         SUPPORTED_PROTOCOL_VERSIONS = [LATEST_PROTOCOL_VERSION, '2025-06-18', '2025-03-26', \
         '2024-11-05', '2024-10-07'], Client.connect always sends `initialize` with \
         LATEST_PROTOCOL_VERSION (dist/cjs/client/index.js), and nothing in its dist names \
         server/discover or subscriptions/listen ('input_required' is there only as a task \
         status); the 2.x client package has them",
    )
}

/// Checks whose success on 2026-07-28 needs the server to ask for the client's roots through a
/// multi-round-trip result: `tools/call` answered with `resultType: "input_required"` and
/// `inputRequests: {"roots": {"method": "roots/list"}}`, which the SDK fulfils and retries with
/// `inputResponses` (that protocol has no server-to-client requests). Expected to pass over
/// stdio, HTTP and stateless HTTP alike; a server without it fails only these checks, and such
/// cells are listed apart in the failure message.
const ROOTS_OVER_MRTR: &[&str] = &["roots_compose", "roots_enhance"];

/// Every check the scripts run, in order.
const CHECKS: &[&str] = &[
    "connect",
    "prompts_list_paginated",
    "prompts_get_arguments",
    "prompts_get_missing_argument",
    "tools_list",
    "tool_valid:wit-get-prompts",
    "tool_wrong_type:wit-get-prompts",
    "tool_valid:enhance_prompt",
    "tool_wrong_type:enhance_prompt",
    "tool_valid:compose_prompt",
    "tool_wrong_type:compose_prompt",
    "tool_valid:render_greeting",
    "tool_wrong_type:render_greeting",
    "roots_compose",
    "roots_enhance",
    "completion",
    "list_changed",
    "no_warnings",
];

/// One cell's folders: the prompts (a copy of the MCP fixtures, edited by the `list_changed`
/// check), the root the client declares (a git repository), the server's own directory (empty:
/// a tool that ignored the root would work there and miss the root's files) and the config.
struct CellDirs {
    _dir: tempfile::TempDir,
    prompts: PathBuf,
    root: PathBuf,
    server_cwd: PathBuf,
    config: PathBuf,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=matrix",
            "-c",
            "user.email=matrix@localhost",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn cell_dirs() -> CellDirs {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts");
    copy_dir(&mcp::fixture_prompts(), &prompts);
    let root = dir.path().join("workspace");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("AGENTS.md"),
        format!("# Rules\n\n{ROOT_MARKER}\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("src/http_client.rs"),
        "//! HTTP client with retries.\n\npub struct HttpClient { retries: u32 }\n\nimpl HttpClient {\n    /// Sends a GET request, retrying transient failures.\n    pub fn fetch_with_retry(&self, url: &str) -> Result<String, String> {\n        for _ in 0..self.retries {\n            if let Ok(body) = get(url) { return Ok(body); }\n        }\n        Err(format!(\"giving up on {url}\"))\n    }\n}\n\nfn get(url: &str) -> Result<String, String> { Err(url.to_string()) }\n",
    )
    .unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "workspace"]);
    let server_cwd = dir.path().join("server");
    std::fs::create_dir_all(&server_cwd).unwrap();
    // A tool definition served beside promptd's own tools: `render_prompt` with an object
    // output schema, which every SDK checks the structured answer against.
    let tools = server_cwd.join(".promptd/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let definition = json!({
        "toolName": DEFINED_TOOL,
        "description": "Render a registry prompt with arguments.",
        "inputSchema": json!({"type": "object", "properties": {"promptName": {"type": "string"}, "args": {"type": "object"}}, "required": ["promptName"]}).to_string(),
        "outputSchema": json!({"type": "object", "properties": {"promptName": {"type": "string"}, "text": {"type": "string"}}, "required": ["promptName", "text"]}).to_string(),
        "executionType": "predefined_server_function",
        "executionDetails": {"functionName": "render_prompt"},
    });
    std::fs::write(tools.join("render_greeting.json"), definition.to_string()).unwrap();
    let config = dir.path().join("config.json");
    let settings = json!({
        "rag": {"embeddings": false},
        "workspace": {"httpRoots": [&root]},
    });
    std::fs::write(&config, settings.to_string()).unwrap();
    CellDirs {
        _dir: dir,
        prompts,
        root,
        server_cwd,
        config,
    }
}

/// The user prompts `promptd list --json` lists for `prompts` (what `prompts/list` serves).
fn listed_user_prompts(prompts: &Path) -> Vec<String> {
    let v = process::json_stdout(
        process::promptd()
            .args(["--prompts", prompts.to_str().unwrap(), "list", "--json"])
            .current_dir(prompts),
    );
    let all = v["data"]["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("list --json: {v:#}"));
    all.iter()
        .filter(|p| p["category"] != "system")
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

/// The server's arguments after `serve` (the HTTP ones add the address, token and mode).
fn serve_args(dirs: &CellDirs) -> Vec<String> {
    vec![
        "--prompts".into(),
        dirs.prompts.display().to_string(),
        "--config".into(),
        dirs.config.display().to_string(),
        "--page-size".into(),
        "4".into(),
    ]
}

/// The server's environment: the LLM stub for `enhance_prompt`, quiet logs.
fn server_env(llm: &str) -> Vec<(&'static str, String)> {
    vec![
        ("LLM_BASE_URL", llm.to_string()),
        ("LLM_MODEL", "matrix-rewriter".into()),
        ("LLM_API_KEY", "sk-matrix".into()),
        ("RUST_LOG", "promptd=warn".into()),
        ("PATH", std::env::var("PATH").unwrap_or_default()),
    ]
}

/// What one cell ended with.
struct Outcome {
    cell: Cell,
    /// Checks that failed or never reported, with their detail.
    failed: Vec<(String, Value)>,
    log: String,
}

async fn run_cell(cell: Cell, clients: Arc<PathBuf>, llm: Arc<String>) -> Outcome {
    let dirs = cell_dirs();
    let expected = listed_user_prompts(&dirs.prompts);
    let legacy_stateless = cell.transport == Transport::Stateless && cell.protocol == PREVIOUS;
    let mut config = json!({
        "protocol": cell.protocol,
        "root": dirs.root,
        "promptFile": dirs.prompts.join("dialogue.md"),
        "expectedPrompts": expected,
        // A stateless server on 2025-11-25 keeps no stream to notify on or to ask for roots on:
        // it promises no list_changed and works in its own directory. On 2026-07-28 clients
        // subscribe (`subscriptions/listen`) and roots come through input_required results.
        "expectListChanged": !legacy_stateless,
        "expectRoots": !legacy_stateless,
        "rootMarker": ROOT_MARKER,
    });
    let env = server_env(&llm);
    let mut server = None;
    match cell.transport {
        Transport::Stdio => {
            let mut args: Vec<String> = vec!["--now".into(), "2025-03-15".into(), "serve".into()];
            args.extend(serve_args(&dirs));
            config["transport"] = json!("stdio");
            config["command"] = json!(process::bin());
            config["args"] = json!(args);
            config["cwd"] = json!(dirs.server_cwd);
            config["env"] = env
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        Transport::Http | Transport::Stateless => {
            let mut args = serve_args(&dirs);
            args.extend(["--auth-token".into(), TOKEN.into()]);
            if cell.transport == Transport::Stateless {
                args.push("--stateless".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let (child, url, log) = mcp::http_server_with_env(&dirs.server_cwd, &args, &env).await;
            config["transport"] = json!("http");
            config["url"] = json!(url);
            config["token"] = json!(TOKEN);
            server = Some((child, log));
        }
    }
    let mut cmd = match cell.sdk {
        Sdk::Ts1 | Sdk::Ts2 => {
            let program = if cell.sdk == Sdk::Ts1 {
                "matrix_ts1.mjs"
            } else {
                "matrix_ts2.mjs"
            };
            let mut cmd = Command::new("node");
            cmd.arg(process::repo().join("tests/fixtures/clients").join(program));
            cmd
        }
        Sdk::Python => {
            let mut cmd = Command::new(clients.join(PYTHON));
            cmd.arg(process::repo().join("tests/fixtures/clients/matrix_py.py"));
            cmd
        }
    };
    cmd.arg(config.to_string())
        .env("PROMPTD_CLIENTS_DIR", clients.as_path())
        .current_dir(&dirs.server_cwd);
    process::clear_env(&mut cmd);
    let out = tokio::task::spawn_blocking(move || run_bounded(cmd, b"", CLIENT_RUN))
        .await
        .unwrap();
    let mut log = format!(
        "client exit {:?} after {:.1} s{}\n--- client stderr ---\n{}",
        out.status,
        out.elapsed.as_secs_f64(),
        if out.timed_out { " (timed out)" } else { "" },
        out.stderr
    );
    if let Some((mut child, server_log)) = server {
        let _ = child.start_kill();
        let _ = child.wait().await;
        log.push_str("--- server stderr ---\n");
        log.push_str(&server_log.lock().unwrap());
    }
    let mut reported = std::collections::BTreeMap::new();
    for line in out.stdout.lines().filter(|l| l.starts_with('{')) {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{cell}: a check line that is not JSON ({e}): {line}"));
        reported.insert(v["check"].as_str().unwrap_or("?").to_string(), v);
    }
    let failed = CHECKS
        .iter()
        .filter_map(|check| match reported.get(*check) {
            Some(v) if v["ok"] == true => None,
            Some(v) => Some((check.to_string(), v["detail"].clone())),
            None => Some((check.to_string(), json!("never reported"))),
        })
        .collect();
    Outcome { cell, failed, log }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Node.js, Python and scripts/setup-clients"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_official_client_sdk_passes_the_checks_on_every_transport() {
    let started = Instant::now();
    let clients = Arc::new(clients_dir());
    let llm = LlmServer::start(vec![Reply::Answer(ENHANCED.into())]).await;
    let llm_url = Arc::new(llm.url.clone());
    let mut cells = Vec::new();
    for sdk in [Sdk::Ts1, Sdk::Ts2, Sdk::Python] {
        for transport in [Transport::Stdio, Transport::Http, Transport::Stateless] {
            for protocol in [PREVIOUS, NEWEST] {
                cells.push(Cell {
                    sdk,
                    transport,
                    protocol,
                });
            }
        }
    }
    let gate = Arc::new(tokio::sync::Semaphore::new(PARALLEL_CELLS));
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for cell in cells {
        if let Some(reason) = skip_reason(cell) {
            skipped.push(format!("{cell}: skipped: {reason}"));
            continue;
        }
        let (gate, clients, llm_url) = (gate.clone(), clients.clone(), llm_url.clone());
        runs.push(tokio::spawn(async move {
            let _place = gate.acquire_owned().await.unwrap();
            run_cell(cell, clients, llm_url).await
        }));
    }
    let mut passed = Vec::new();
    let mut failures = Vec::new();
    let mut mrtr_only = Vec::new();
    for run in runs {
        let outcome = run.await.unwrap();
        if outcome.failed.is_empty() {
            passed.push(outcome.cell.to_string());
            continue;
        }
        let list: String = outcome
            .failed
            .iter()
            .map(|(check, detail)| format!("  {check}: {detail}\n"))
            .collect();
        let report = format!("{}: failed:\n{list}{}", outcome.cell, outcome.log);
        let roots_only = outcome.cell.protocol == NEWEST
            && outcome
                .failed
                .iter()
                .all(|(check, _)| ROOTS_OVER_MRTR.contains(&check.as_str()));
        if roots_only {
            mrtr_only.push(report);
        } else {
            failures.push(report);
        }
    }
    for line in &skipped {
        eprintln!("{line}");
    }
    eprintln!(
        "client matrix: {} passed, {} failed, {} skipped in {:.1} s: {passed:?}",
        passed.len(),
        failures.len() + mrtr_only.len(),
        skipped.len(),
        started.elapsed().as_secs_f64()
    );
    // Every rewrite went to the stub, and some carried the root's file as context.
    let requests = llm.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains("fetch_with_retry")),
        "no enhance_prompt request carried the root's source: {} requests",
        requests.len()
    );
    assert!(
        failures.is_empty() && mrtr_only.is_empty(),
        "{} cell(s) failed:\n\n{}\n{}{}",
        failures.len() + mrtr_only.len(),
        failures.join("\n\n"),
        if mrtr_only.is_empty() {
            ""
        } else {
            "\n\nFailing only the roots checks on 2026-07-28 (the server must ask for roots \
             with an input_required result, inputRequests {\"roots\": {\"method\": \
             \"roots/list\"}}):\n\n"
        },
        mrtr_only.join("\n\n")
    );
}

/// The newest Inspector's CLI (`--cli`) against `target` (a command line, or a URL and its
/// options); its exit code and both streams. `tools/list` runs with `--strict` (every tool
/// schema's portability problems in full, exit 6 on an error-severity one); the CLI takes
/// `--strict` with no other method.
fn inspector(clients: &Path, target: &[String], method: &str) -> process::Bounded {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(clients.join(INSPECTOR_ENTRY))
        .args(["--cli", "--format", "json"])
        .args(target)
        .args(["--method", method]);
    if method == "tools/list" {
        cmd.arg("--strict");
    }
    if method == "tools/call" {
        cmd.args(["--tool-name", DEFINED_TOOL])
            .args(["--tool-arg", "promptName=greet"])
            .args(["--tool-arg", r#"args={"who":"Ada"}"#]);
    }
    cmd.env("HOME", home.path())
        .env("MCP_CATALOG_PATH", home.path().join("mcp.json"))
        .env("MCP_CLIENT_CONFIG_PATH", home.path().join("client.json"))
        .current_dir(home.path());
    process::clear_env(&mut cmd);
    run_bounded(cmd, b"", CLIENT_RUN)
}

fn assert_clean(out: &process::Bounded, what: &str) -> Value {
    assert!(
        out.exited() && out.code() == Some(0),
        "inspector {what}: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        out.stdout,
        out.stderr
    );
    let lower = out.stderr.to_lowercase();
    assert!(
        !lower.contains("warn") && !lower.contains("error"),
        "inspector {what} printed a warning:\n{}",
        out.stderr
    );
    let v: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("inspector {what}: {e}: {}", out.stdout));
    v["result"].clone()
}

fn names(listing: &Value, key: &str) -> Vec<String> {
    listing[key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` in {listing:#}"))
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_string())
        .collect()
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Node.js, Python and scripts/setup-clients"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_inspector_cli_lists_tools_and_prompts_strictly_and_calls_a_defined_tool() {
    let clients = Arc::new(clients_dir());
    let dirs = cell_dirs();
    let expected = listed_user_prompts(&dirs.prompts);
    let tools = [
        "wit-get-prompts",
        "enhance_prompt",
        "compose_prompt",
        DEFINED_TOOL,
    ];

    // The Inspector reads options anywhere on its command line (`--config` is one of its own):
    // the server it starts gets only its folder and page size.
    let mut stdio = vec![process::bin().display().to_string()];
    stdio.extend(["--prompts".into(), dirs.prompts.display().to_string()]);
    stdio.extend(["serve".into(), "--page-size".into(), "4".into()]);
    stdio.extend(["--cwd".into(), dirs.server_cwd.display().to_string()]);

    let args = serve_args(&dirs);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (mut child, url, _log) = mcp::http_server(&dirs.server_cwd, &args).await;
    let http = vec![url, "--transport".into(), "http".into()];

    for (transport, target) in [("stdio", stdio), ("http", http)] {
        let clients = clients.clone();
        let (listed_tools, listed_prompts, called) = tokio::task::spawn_blocking(move || {
            (
                inspector(&clients, &target, "tools/list"),
                inspector(&clients, &target, "prompts/list"),
                inspector(&clients, &target, "tools/call"),
            )
        })
        .await
        .unwrap();
        let called = assert_clean(&called, &format!("tools/call over {transport}"));
        assert_eq!(called["isError"], false, "{transport}: {called:#}");
        assert_eq!(
            called["structuredContent"]["promptName"], "greet",
            "{transport}: {called:#}"
        );
        let listed_tools = assert_clean(&listed_tools, &format!("tools/list over {transport}"));
        assert_eq!(names(&listed_tools, "tools"), tools, "{transport}");
        let listed_prompts =
            assert_clean(&listed_prompts, &format!("prompts/list over {transport}"));
        let mut got = names(&listed_prompts, "prompts");
        got.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(got, want, "{transport}: every page of prompts/list");
    }
    child.kill().await.unwrap();
}
