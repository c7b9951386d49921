//! MCP sessions with the real server: `promptd serve` started through [`process::promptd`] and
//! driven by rmcp's own client, over stdio or streamable HTTP. Every wait is bounded.
// Roots are deprecated by SEP-2577, yet they are what IDE clients send today to say which folder
// is open, and what the server falls back on: the test client must offer them.
#![allow(deprecated)]

pub mod checks;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ErrorData, ListRootsResult, ProtocolVersion, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use super::process;

/// Upper bound for any single step of a test.
pub const STEP: Duration = Duration::from_secs(15);

/// Awaits `f`, failing the test if it takes longer than [`STEP`].
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// The checked-in MCP fixture prompts.
pub fn fixture_prompts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/prompts")
}

/// A test client that records `prompts/list_changed` notifications (and counts
/// `tools/list_changed` ones) and, when given roots,
/// offers them (the `roots` capability and `roots/list`) as an IDE with open folders does,
/// counting the server's `roots/list` requests.
#[derive(Clone)]
pub struct TestClient {
    changed: mpsc::UnboundedSender<()>,
    tools_changed: Arc<AtomicUsize>,
    roots: Arc<Mutex<Vec<Root>>>,
    roots_asked: Arc<AtomicUsize>,
}

impl TestClient {
    fn new(changed: mpsc::UnboundedSender<()>, roots: Vec<Root>) -> TestClient {
        TestClient {
            changed,
            tools_changed: Arc::default(),
            roots: Arc::new(Mutex::new(roots)),
            roots_asked: Arc::default(),
        }
    }

    /// How many `notifications/tools/list_changed` arrived.
    pub fn tools_changed(&self) -> usize {
        self.tools_changed.load(Ordering::SeqCst)
    }

    /// How many times the server asked for the roots.
    pub fn roots_asked(&self) -> usize {
        self.roots_asked.load(Ordering::SeqCst)
    }

    /// Offers `roots` from now on (the caller sends `notifications/roots/list_changed`).
    pub fn set_roots(&self, roots: Vec<Root>) {
        *self.roots.lock().unwrap() = roots;
    }
}

impl ClientHandler for TestClient {
    // The session lifecycle (`initialize`), which is what desktop clients speak today.
    fn get_info(&self) -> ClientConfig {
        let config =
            ClientConfig::default().with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        if self.roots.lock().unwrap().is_empty() {
            return config;
        }
        ClientConfig::new(
            ClientCapabilities::builder().enable_roots().build(),
            config.client_info.clone(),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.roots_asked.fetch_add(1, Ordering::SeqCst);
        Ok(ListRootsResult::new(self.roots.lock().unwrap().clone()))
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
}

/// A connected client plus what the server printed on stderr.
pub struct Session {
    pub client: RunningService<RoleClient, TestClient>,
    pub changed: mpsc::UnboundedReceiver<()>,
    pub stderr: Arc<Mutex<String>>,
    /// For HTTP: the child process (stdio children are owned by the transport).
    pub child: Option<tokio::process::Child>,
}

impl Session {
    /// Waits for one `list_changed` notification.
    pub async fn next_change(&mut self, what: &str) {
        within(what, self.changed.recv())
            .await
            .expect("client still running");
    }

    /// Asserts that no `list_changed` arrives within `quiet`.
    pub async fn assert_no_change(&mut self, quiet: Duration, what: &str) {
        if let Ok(Some(())) = tokio::time::timeout(quiet, self.changed.recv()).await {
            panic!("unexpected list_changed: {what}");
        }
    }

    /// Calls `tool` with a JSON object of arguments, bounded by [`STEP`].
    pub async fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
    ) -> Result<rmcp::model::CallToolResult, rmcp::ServiceError> {
        let args = args
            .as_object()
            .expect("tool arguments are an object")
            .clone();
        within(
            tool,
            self.client.call_tool(
                rmcp::model::CallToolRequestParams::new(tool.to_string()).with_arguments(args),
            ),
        )
        .await
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Closes the client and waits for the server to exit.
    pub async fn close(mut self) {
        within("client shutdown", self.client.cancel())
            .await
            .expect("client shutdown");
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = within("server exit", child.wait()).await;
        }
    }
}

/// [`process::promptd`] for a server: run from `cwd` with a frozen clock, logging at info
/// (the HTTP server's address is an info line), killed when dropped.
pub fn command(cwd: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::from(process::promptd());
    cmd.args(["--now", "2025-03-15"])
        .args(args)
        .env("RUST_LOG", "promptd=info,warn")
        .current_dir(cwd)
        .kill_on_drop(true);
    cmd
}

fn collect_stderr(
    stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    sink: Arc<Mutex<String>>,
    first_line: Option<tokio::sync::oneshot::Sender<String>>,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut first_line = first_line;
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(tx) = first_line.take_if(|_| line.contains("serving MCP at")) {
                let _ = tx.send(line.clone());
            }
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
}

/// `promptd serve` over a stdio pipe, connected.
pub async fn stdio(cwd: &Path, args: &[&str]) -> Session {
    stdio_with_env(cwd, args, &[]).await
}

/// `promptd serve` over a stdio pipe with extra environment variables, connected.
pub async fn stdio_with_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Session {
    stdio_with_roots(cwd, args, env, Vec::new()).await
}

/// How a test client opens its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// `initialize`, as desktop clients do today (the newest version that has it).
    Initialize,
    /// MCP 2026-07-28: no `initialize`; `server/discover`, then requests that carry the
    /// client's version and capabilities in `_meta`.
    Discover,
}

/// Connects `client` over `transport` with `lifecycle`.
async fn connect<T, E, A>(
    what: &str,
    client: TestClient,
    transport: T,
    lifecycle: Lifecycle,
) -> RunningService<RoleClient, TestClient>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let connected = match lifecycle {
        Lifecycle::Initialize => within(what, client.serve(transport)).await,
        Lifecycle::Discover => {
            let mode = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            within(what, client.serve_with_lifecycle(transport, mode)).await
        }
    };
    connected.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// `promptd serve` over a stdio pipe, connected by a client that offers `roots`.
pub async fn stdio_with_roots(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    roots: Vec<Root>,
) -> Session {
    stdio_connected(cwd, args, env, roots, Lifecycle::Initialize).await
}

/// `promptd serve` over a stdio pipe, connected with `lifecycle` by a client that offers
/// `roots`.
pub async fn stdio_connected(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    roots: Vec<Root>,
    lifecycle: Lifecycle,
) -> Session {
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let mut cmd = command(cwd, &all);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promptd serve");
    let log = Arc::new(Mutex::new(String::new()));
    collect_stderr(stderr.expect("stderr piped"), log.clone(), None);
    let (tx, rx) = mpsc::unbounded_channel();
    let client = connect(
        "connect over stdio",
        TestClient::new(tx, roots),
        transport,
        lifecycle,
    )
    .await;
    Session {
        client,
        changed: rx,
        stderr: log,
        child: None,
    }
}

/// `promptd serve --http 127.0.0.1:0 …` started; returns the child, its URL and stderr.
pub async fn http_server(
    cwd: &Path,
    args: &[&str],
) -> (tokio::process::Child, String, Arc<Mutex<String>>) {
    http_server_with_env(cwd, args, &[]).await
}

/// [`http_server`] with extra environment variables.
pub async fn http_server_with_env(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String, Arc<Mutex<String>>) {
    let mut all = vec!["serve", "--http", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut cmd = command(cwd, &all);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promptd serve --http");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = tokio::sync::oneshot::channel();
    collect_stderr(child.stderr.take().unwrap(), log.clone(), Some(tx));
    let line = within("server prints its address", rx)
        .await
        .unwrap_or_else(|_| panic!("server exited early: {}", log.lock().unwrap()));
    let url = line
        .split("serving MCP at ")
        .nth(1)
        .expect("address in the line")
        .trim()
        .to_string();
    (child, url, log)
}

/// An rmcp client session against a running HTTP server.
pub async fn http_client(
    url: &str,
    token: Option<&str>,
) -> (
    RunningService<RoleClient, TestClient>,
    mpsc::UnboundedReceiver<()>,
) {
    http_client_with_roots(url, token, Vec::new()).await
}

/// [`http_client`] for a client that offers `roots`.
pub async fn http_client_with_roots(
    url: &str,
    token: Option<&str>,
    roots: Vec<Root>,
) -> (
    RunningService<RoleClient, TestClient>,
    mpsc::UnboundedReceiver<()>,
) {
    http_client_connected(url, token, roots, Lifecycle::Initialize).await
}

/// An rmcp client that offers `roots`, connected with `lifecycle` to a running HTTP server.
pub async fn http_client_connected(
    url: &str,
    token: Option<&str>,
    roots: Vec<Root>,
    lifecycle: Lifecycle,
) -> (
    RunningService<RoleClient, TestClient>,
    mpsc::UnboundedReceiver<()>,
) {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(t) = token {
        config = config.auth_header(t);
    }
    promptd::llm::install_tls_provider();
    let transport = StreamableHttpClientTransport::from_config(config);
    let (tx, rx) = mpsc::unbounded_channel();
    let client = connect(
        "connect over HTTP",
        TestClient::new(tx, roots),
        transport,
        lifecycle,
    )
    .await;
    (client, rx)
}

/// `promptd serve --http` plus one connected client.
pub async fn http(cwd: &Path, args: &[&str]) -> Session {
    let (child, url, log) = http_server(cwd, args).await;
    let (client, changed) = http_client(&url, None).await;
    Session {
        client,
        changed,
        stderr: log,
        child: Some(child),
    }
}

/// The first message's text of `prompts/get` for `name` without arguments, or the error's text.
pub async fn get_text(s: &Session, name: &str) -> Result<String, String> {
    match within(
        "prompts/get",
        s.client
            .get_prompt(rmcp::model::GetPromptRequestParams::new(name)),
    )
    .await
    {
        Ok(r) => Ok(r
            .messages
            .first()
            .and_then(|m| m.content.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default()),
        Err(e) => Err(e.to_string()),
    }
}

/// A listed tool by name, from `tools/list`.
pub async fn listed_tool(s: &Session, name: &str) -> rmcp::model::Tool {
    let tools = within("tools/list", s.client.list_all_tools())
        .await
        .expect("tools/list");
    tools
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

/// The tool's `outputSchema`, compiled with `jsonschema` (which checks it against the JSON Schema
/// meta-schema first).
pub fn output_validator(tool: &rmcp::model::Tool) -> jsonschema::Validator {
    let schema = serde_json::Value::Object(
        tool.output_schema
            .as_deref()
            .unwrap_or_else(|| panic!("{} has no outputSchema", tool.name))
            .clone(),
    );
    jsonschema::validator_for(&schema).unwrap_or_else(|e| {
        panic!(
            "{}: outputSchema is not a valid JSON Schema: {e}",
            tool.name
        )
    })
}

/// Fails listing every violation when `value` does not match the schema.
pub fn assert_matches_schema(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
    what: &str,
) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match the outputSchema:\n{}\n{value:#}",
        errors.join("\n")
    );
}

/// An HTTP request's status, headers and body (each step bounded in time).
pub async fn answer(req: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, String) {
    let response = within("request", req.send()).await.expect("request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (
        status,
        headers,
        within("body", response.text()).await.unwrap(),
    )
}

/// An HTTP client that shows redirects instead of following them (the studio's sign-in page
/// and refusals are checked as they are sent).
pub fn studio_client() -> reqwest::Client {
    promptd::llm::install_tls_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}
