//! Smoke tests with real agent CLIs (installed by `scripts/setup-agents` into `.deps/agents`):
//! each registers promptd the way the README shows, connects to the real binary over stdio
//! and over streamable HTTP (with a bearer token), and the test asserts on what the CLI
//! prints: the connection status, promptd's tool names and, where the CLI shows them, its
//! prompts. None of them logs in or calls a model.
//!
//! - Gemini CLI: `gemini mcp add`, `gemini mcp list` (a status per server; tools are shown
//!   only in a session, which needs a login).
//! - Claude Code: `claude mcp add`, `claude mcp list`, and `claude -p /mcp` with
//!   `--output-format stream-json`, whose first message lists the MCP tools and the MCP
//!   prompts (as slash commands) before any model call.
//! - Codex: `codex mcp add`, `codex mcp list`, and its app server's `mcpServerStatus/list`,
//!   which starts every configured server and returns its tools.
//! - mcp-use (Python): `MCPClient` from a config dict, `list_tools`, `list_prompts`,
//!   `get_prompt` (tests/fixtures/clients/mcp_use_list.py).
//!
//! Each CLI runs with its own throwaway home and config directory, with update checks and
//! telemetry off and every model key removed from its environment. They run with the
//! `system-tests` feature (scripts/test), and fail naming the setup script when it has not run.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::mcp::fixture_prompts;
use crate::support::process::{self, Bounded, run_bounded};

/// The tools promptd serves, in the order it lists them.
const TOOLS: [&str; 3] = ["wit-get-prompts", "enhance_prompt", "compose_prompt"];

/// The bearer token of the HTTP servers these tests start.
const TOKEN: &str = "agents-smoke-test-token";

/// How long one CLI run may take.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Model credentials and settings a developer's shell may hold: removed, so no run can reach
/// a model.
const MODEL_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "CODEX_HOME",
];

/// The install directory (these tests run with the `system-tests` feature, after
/// scripts/setup).
fn agents_dir() -> PathBuf {
    process::installed(
        "PROMPTD_AGENTS_DIR",
        "agents",
        &[".pins"],
        "the agent CLIs are",
        "setup-agents",
    )
}

/// A throwaway home and project folder for one CLI, and the commands that run it there.
struct Agent {
    dir: PathBuf,
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Agent {
    fn new() -> Agent {
        let agent = Agent {
            dir: agents_dir(),
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        };
        // Gemini CLI's user settings: no update check, no usage statistics.
        let gemini = agent.home.path().join(".gemini");
        std::fs::create_dir_all(&gemini).unwrap();
        std::fs::write(
            gemini.join("settings.json"),
            json!({
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
            })
            .to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(agent.home.path().join(".codex")).unwrap();
        agent
    }

    /// `program` (an npm CLI's name, or a path) in the project folder, with the throwaway
    /// home and the environment described in the module doc.
    fn command(&self, program: &str) -> Command {
        let bin = self.dir.join("npm/node_modules/.bin").join(program);
        let mut cmd = Command::new(if bin.exists() {
            bin
        } else {
            PathBuf::from(program)
        });
        process::clear_env(&mut cmd);
        for var in MODEL_ENV {
            cmd.env_remove(var);
        }
        let home = self.home.path();
        cmd.current_dir(self.project.path())
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("CODEX_HOME", home.join(".codex"))
            // Claude Code: no update, telemetry or error reports.
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            // Gemini CLI: the project folder is trusted (no dialog; stdio servers are started
            // only in a trusted folder), and the CLI runs in its own process.
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env("GEMINI_CLI_NO_RELAUNCH", "true")
            .env("GEMINI_TELEMETRY_ENABLED", "false")
            .env("MCP_USE_ANONYMIZED_TELEMETRY", "false")
            .env("NO_UPDATE_NOTIFIER", "1");
        cmd
    }

    /// Runs `program args`, bounded in time; requires exit code 0.
    fn run(&self, program: &str, args: &[&str]) -> Bounded {
        let mut cmd = self.command(program);
        cmd.args(args);
        let out = run_bounded(cmd, b"", RUN_LIMIT);
        assert!(
            out.exited() && out.code() == Some(0),
            "{program} {args:?}: {:?} (timed out: {})\nstdout: {}\nstderr: {}",
            out.status,
            out.timed_out,
            out.stdout,
            out.stderr
        );
        out
    }
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// A `promptd serve --http` on a free loopback port with [`TOKEN`]; its `/mcp` URL.
async fn http_server(cwd: &Path) -> (tokio::process::Child, String) {
    let prompts = fixture_prompts();
    let (child, url, _log) = crate::support::mcp::http_server(
        cwd,
        &[
            "--no-watch",
            "--prompts",
            utf8(&prompts),
            "--auth-token",
            TOKEN,
        ],
    )
    .await;
    (child, url)
}

/// The first line of a CLI's server list that holds `server: ` (the name, after a status mark).
fn server_line<'a>(out: &'a str, server: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(&format!("{server}: ")))
        .unwrap_or_else(|| panic!("no line for {server} in:\n{out}"))
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the agent CLIs (Node.js, Python) (scripts/setup installs them)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_connects_to_promptd_over_stdio_and_http() {
    let agent = Agent::new();
    let (mut server, url) = http_server(agent.project.path()).await;
    let out = tokio::task::spawn_blocking(move || {
        let bin = utf8(process::bin()).to_owned();
        let prompts = fixture_prompts();
        let bearer = format!("Authorization: Bearer {TOKEN}");
        let version = agent.run("gemini", &["--version"]);
        assert_eq!(version.stdout.trim(), "0.61.0");
        agent.run(
            "gemini",
            &[
                "mcp",
                "add",
                "promptd",
                &bin,
                "serve",
                "--prompts",
                utf8(&prompts),
            ],
        );
        agent.run(
            "gemini",
            &[
                "mcp",
                "add",
                "--transport",
                "http",
                "promptd-http",
                &url,
                "--header",
                &bearer,
            ],
        );
        // Without the token: the control that shows a failed connection is reported.
        agent.run(
            "gemini",
            &["mcp", "add", "--transport", "http", "no-token", &url],
        );
        // Project scope by default: the servers are in the project's settings.
        let settings: Value = serde_json::from_str(
            &std::fs::read_to_string(agent.project.path().join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            settings["mcpServers"]["promptd"],
            json!({"command": bin, "args": ["serve", "--prompts", utf8(&prompts)]})
        );
        let listed = agent.run("gemini", &["mcp", "list"]);
        (url, listed)
    })
    .await
    .unwrap();
    server.kill().await.unwrap();
    let (url, listed) = out;
    // The list goes to stderr.
    let all = format!("{}{}", listed.stdout, listed.stderr);
    let stdio = server_line(&all, "promptd");
    assert!(
        stdio.starts_with("✓ promptd: ") && stdio.ends_with("(stdio) - Connected"),
        "{all}"
    );
    assert_eq!(
        server_line(&all, "promptd-http"),
        format!("✓ promptd-http: {url} (http) - Connected"),
        "{all}"
    );
    assert_eq!(
        server_line(&all, "no-token"),
        format!("✗ no-token: {url} (http) - Disconnected"),
        "{all}"
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the agent CLIs (Node.js, Python) (scripts/setup installs them)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_lists_promptd_tools_and_prompts_over_stdio_and_http() {
    let agent = Agent::new();
    let (mut server, url) = http_server(agent.project.path()).await;
    let out = tokio::task::spawn_blocking(move || {
        let bin = utf8(process::bin()).to_owned();
        let prompts = fixture_prompts();
        let bearer = format!("Authorization: Bearer {TOKEN}");
        let version = agent.run("claude", &["--version"]);
        assert_eq!(version.stdout.trim(), "2.1.332 (Claude Code)");
        agent.run(
            "claude",
            &[
                "mcp",
                "add",
                "promptd",
                "--",
                &bin,
                "serve",
                "--prompts",
                utf8(&prompts),
            ],
        );
        agent.run(
            "claude",
            &[
                "mcp",
                "add",
                "--transport",
                "http",
                "promptd-http",
                &url,
                "--header",
                &bearer,
            ],
        );
        let listed = agent.run("claude", &["mcp", "list"]);
        let got = agent.run("claude", &["mcp", "get", "promptd-http"]);
        // A local command in print mode: answered before any model call.
        let session = agent.run(
            "claude",
            &["-p", "/mcp", "--output-format", "stream-json", "--verbose"],
        );
        // A prompt needs a login.
        let mut prompt = agent.command("claude");
        prompt.args(["-p", "hello"]);
        let refused = run_bounded(prompt, b"", RUN_LIMIT);
        (url, listed, got, session, refused)
    })
    .await
    .unwrap();
    server.kill().await.unwrap();
    let (url, listed, got, session, refused) = out;

    let stdio = server_line(&listed.stdout, "promptd");
    assert!(stdio.ends_with(" - ✔ Connected"), "{}", listed.stdout);
    assert_eq!(
        server_line(&listed.stdout, "promptd-http"),
        format!("promptd-http: {url} (HTTP) - ✔ Connected"),
    );
    assert!(got.stdout.contains("Status: ✔ Connected"), "{}", got.stdout);
    assert!(got.stdout.contains("Type: http"), "{}", got.stdout);

    let init: Value = serde_json::from_str(session.stdout.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", session.stdout));
    assert_eq!(init["subtype"], "init", "{init:#}");
    assert_eq!(init["apiKeySource"], "none", "{init:#}");
    let strings = |key: &str| -> Vec<String> {
        init[key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key} in {init:#}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let tools = strings("tools");
    let commands = strings("slash_commands");
    for server in ["promptd", "promptd-http"] {
        let status = init["mcp_servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == server)
            .unwrap_or_else(|| panic!("{server} in {init:#}"));
        assert_eq!(status["status"], "connected", "{init:#}");
        for tool in TOOLS {
            let name = format!("mcp__{server}__{tool}");
            assert!(tools.contains(&name), "{name} not in {tools:?}");
        }
        // promptd's prompts are Claude Code's slash commands.
        for prompt in ["greet", "pick", "dialogue"] {
            let name = format!("mcp__{server}__{prompt}");
            assert!(commands.contains(&name), "{name} not in {commands:?}");
        }
    }
    let result: Value =
        serde_json::from_str(session.stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(
        result["result"],
        "2 MCP servers: 2 connected, 0 not connected, 0 disabled. Use `/mcp` in the terminal for details."
    );
    assert_eq!(result["total_cost_usd"], 0);

    assert_eq!(refused.code(), Some(1), "{refused:?}");
    assert_eq!(refused.stdout.trim(), "Not logged in · Please run /login");
}

/// Runs `codex app-server` (JSON-RPC over stdio, one message a line): `initialize`, then
/// `mcpServerStatus/list`; its answer. The server stays up until the answer came.
fn codex_mcp_status(agent: &Agent, env: &[(&str, &str)]) -> Value {
    let mut cmd = agent.command("codex");
    cmd.arg("app-server")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn codex app-server");
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "promptd-tests", "version": "1"}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "mcpServerStatus/list", "params": {}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message["id"] == 2
            {
                let _ = tx.send(message);
                break;
            }
        }
    });
    let answer = rx.recv_timeout(RUN_LIMIT);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let errors = errors.join().unwrap_or_default();
    let answer = answer.unwrap_or_else(|_| panic!("no answer from codex app-server:\n{errors}"));
    assert!(answer["error"].is_null(), "{answer:#}");
    answer["result"].clone()
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the agent CLIs (Node.js, Python) (scripts/setup installs them)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_lists_promptd_tools_over_stdio_and_http() {
    let agent = Agent::new();
    let (mut server, url) = http_server(agent.project.path()).await;
    let out = tokio::task::spawn_blocking(move || {
        let bin = utf8(process::bin()).to_owned();
        let prompts = fixture_prompts();
        let version = agent.run("codex", &["--version"]);
        assert_eq!(version.stdout.trim(), "codex-cli 0.171.0");
        agent.run(
            "codex",
            &[
                "mcp",
                "add",
                "promptd",
                "--",
                &bin,
                "serve",
                "--prompts",
                utf8(&prompts),
            ],
        );
        agent.run(
            "codex",
            &[
                "mcp",
                "add",
                "promptd-http",
                "--url",
                &url,
                "--bearer-token-env-var",
                "PROMPTD_AUTH_TOKEN",
            ],
        );
        let listed = agent.run("codex", &["mcp", "list"]);
        let status = codex_mcp_status(&agent, &[("PROMPTD_AUTH_TOKEN", TOKEN)]);
        (url, listed, status)
    })
    .await
    .unwrap();
    server.kill().await.unwrap();
    let (url, listed, status) = out;

    // `codex mcp list` shows the configuration (it connects to nothing): a table for stdio
    // servers and one for HTTP servers, a row each.
    let row = |name: &str| {
        listed
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", listed.stdout))
    };
    assert!(
        row("promptd").contains("serve --prompts"),
        "{}",
        listed.stdout
    );
    assert!(row("promptd").contains("enabled"), "{}", listed.stdout);
    assert!(row("promptd-http").contains(&url), "{}", listed.stdout);
    assert!(
        row("promptd-http").contains("PROMPTD_AUTH_TOKEN"),
        "{}",
        listed.stdout
    );

    let servers = status["data"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{status:#}");
    for name in ["promptd", "promptd-http"] {
        let s = servers
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {status:#}"));
        assert!(s["toolsError"].is_null(), "{s:#}");
        assert_eq!(s["serverInfo"]["name"], "promptd", "{s:#}");
        let mut tools: Vec<&str> = s["tools"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        tools.sort_unstable();
        let mut expected = TOOLS.to_vec();
        expected.sort_unstable();
        assert_eq!(tools, expected, "{s:#}");
        assert_eq!(
            s["tools"]["wit-get-prompts"]["name"], "wit-get-prompts",
            "{s:#}"
        );
    }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the agent CLIs (Node.js, Python) (scripts/setup installs them)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_use_lists_promptd_tools_and_prompts_over_stdio_and_http() {
    let agent = Agent::new();
    let (mut server, url) = http_server(agent.project.path()).await;
    let out = tokio::task::spawn_blocking(move || {
        let python = agent.dir.join("venv/bin/python");
        let script = process::repo().join("tests/fixtures/clients/mcp_use_list.py");
        let list = |config: Value| -> Value {
            let out = agent.run(utf8(&python), &[utf8(&script), &config.to_string()]);
            serde_json::from_str(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr))
        };
        let stdio = list(json!({
            "command": process::bin(),
            "args": ["--prompts", fixture_prompts(), "serve"],
        }));
        let http = list(json!({"url": url, "auth": TOKEN}));
        (stdio, http)
    })
    .await
    .unwrap();
    server.kill().await.unwrap();
    let (stdio, http) = out;
    for listing in [&stdio, &http] {
        assert_eq!(listing["tools"], json!(TOOLS), "{listing:#}");
        let prompts = listing["prompts"].as_array().unwrap();
        for name in ["greet", "pick", "dialogue"] {
            assert!(prompts.contains(&json!(name)), "{listing:#}");
        }
        assert_eq!(listing["greet"], "Hello Ada! (times=1, shout=false)\n");
    }
}
