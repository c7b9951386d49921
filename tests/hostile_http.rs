//! Hostile input against the MCP server, over raw HTTP and a stdio pipe, with the real binary:
//! response amplification through `wit-get-prompts`, session floods, foreign origins, stalled
//! and broken requests, weak tokens, and system prompts asked for through the tool. Each case
//! asserts the status and body, a bound on time and on the server's peak RSS, and that a normal
//! client is still served afterwards.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::process::{peak_rss_of, promptd, wait_bounded};

const STEP: Duration = Duration::from_secs(20);

/// A prompt folder: `greet` (user), `big` (renders 4,000 bytes) and `internal` (system).
fn prompt_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("greet.md"),
        "---\narguments:\n  who: { type: string, default: you }\n---\nHello {{ who }}!\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("big.md"), "{{ \"x\" * 4000 }}\n").unwrap();
    std::fs::create_dir(dir.path().join("system")).unwrap();
    std::fs::write(dir.path().join("system/internal.md"), "Internal only.\n").unwrap();
    dir
}

/// A working directory holding `config` as `.ado-mcp-config.json`.
fn workdir(config: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".ado-mcp-config.json"), config.to_string()).unwrap();
    dir
}

/// `promptd serve --http <bind>` running; killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// Every line it wrote to stderr so far.
    stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    fn start(cwd: &Path, prompts: &Path, bind: &str, extra: &[&str]) -> Server {
        Self::start_with_open_files(cwd, prompts, bind, extra, None)
    }

    /// Like [`start`](Self::start), the process's open-file limit set to `(soft, hard)` before
    /// it runs (`hard` unchanged when `None`).
    fn start_with_open_files(
        cwd: &Path,
        prompts: &Path,
        bind: &str,
        extra: &[&str],
        open_files: Option<(u64, Option<u64>)>,
    ) -> Server {
        let mut cmd = promptd();
        if let Some((soft, hard)) = open_files {
            use std::os::unix::process::CommandExt;
            let mut current = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            assert_eq!(
                unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut current) },
                0
            );
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard.unwrap_or(current.rlim_max),
            };
            // Only a system call between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        cmd.args(["serve", "--no-watch", "--http", bind, "--prompts"])
            .arg(prompts)
            .args(extra)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn promptd serve --http");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("serving MCP at http://").nth(1) {
                    let _ = tx.send(url.trim_end_matches("/mcp").to_string());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(STEP)
            .expect("the server prints its address")
            .parse()
            .unwrap();
        Server {
            child,
            addr,
            stderr: lines,
        }
    }

    /// The lines of stderr so far that contain `what`.
    fn stderr_lines(&self, what: &str) -> Vec<String> {
        let lines = self.stderr.lock().unwrap();
        lines.iter().filter(|l| l.contains(what)).cloned().collect()
    }

    fn peak_rss_mib(&self) -> f64 {
        peak_rss_of(self.child.id()).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response, its body de-chunked.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body (plain JSON, or the last SSE `data:` event).
    fn message(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
            .unwrap_or_else(|| panic!("no JSON-RPC message in {:?}", self.body))
    }
}

/// Sends `raw` on a new connection (from the local address `from` when given) and reads the
/// reply until the server closes.
async fn exchange(to: SocketAddr, from: Option<IpAddr>, raw: &[u8]) -> Reply {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    if let Some(ip) = from {
        socket.bind(SocketAddr::new(ip, 0)).unwrap();
    }
    let mut stream = tokio::time::timeout(STEP, socket.connect(to))
        .await
        .expect("connect in time")
        .expect("connect");
    stream.write_all(raw).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(STEP, stream.read_to_end(&mut buf))
        .await
        .expect("reply in time")
        .unwrap();
    parse_reply(&buf)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A POST to /mcp with `Connection: close`.
fn post(to: SocketAddr, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {to}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

fn initialize_body(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}})
    .to_string()
}

/// A session: initialize and the initialized notification. Returns the session id.
async fn open_session(to: SocketAddr, extra: &[(&str, &str)]) -> String {
    try_open_session(to, extra)
        .await
        .unwrap_or_else(|reply| panic!("initialize: {reply:?}"))
}

/// A session, or the reply that refused its `initialize`.
async fn try_open_session(to: SocketAddr, extra: &[(&str, &str)]) -> Result<String, Reply> {
    let reply = exchange(to, None, &post(to, extra, &initialize_body(1))).await;
    if reply.status != 200 {
        return Err(reply);
    }
    let id = reply
        .header("mcp-session-id")
        .expect("session id")
        .to_string();
    let mut headers = vec![
        ("Mcp-Session-Id", id.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    headers.extend_from_slice(extra);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let reply = exchange(to, None, &post(to, &headers, &note)).await;
    assert_eq!(reply.status, 202, "{reply:?}");
    Ok(id)
}

/// A request in a session; the JSON-RPC reply.
async fn request(to: SocketAddr, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let headers = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let reply = exchange(to, None, &post(to, &headers, &body)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.message()
}

/// A `wit-get-prompts` call in a session; the JSON-RPC reply.
async fn tool(to: SocketAddr, session: &str, args: Value) -> Value {
    let params = json!({"name": "wit-get-prompts", "arguments": args});
    request(to, session, "tools/call", params).await
}

/// A normal client is served: a new session lists the tools.
async fn still_serves(to: SocketAddr) {
    let session = open_session(to, &[]).await;
    serves_in(to, &session).await;
}

/// `tools/list` in `session` answers with the tools.
async fn serves_in(to: SocketAddr, session: &str) {
    let tools = request(to, session, "tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{tools}"
    );
}

fn names(name: &str, n: usize) -> Vec<String> {
    vec![name.to_string(); n]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_batch_is_deduplicated_capped_and_not_sent_twice() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {
        "maxBatch": 5, "maxTextCopyBytes": 1000, "maxResponseBytes": 20000,
        "maxRequestBytes": 16_000_000}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let session = open_session(to, &[]).await;
    let rss_before = server.peak_rss_mib();

    // 400,000 copies of one name: one prompt, rendered once.
    let started = Instant::now();
    let reply = tool(
        to,
        &session,
        json!({"promptNames": names("greet", 400_000)}),
    )
    .await;
    let result = &reply["result"];
    assert_eq!(
        result["structuredContent"]["data"]["totalCount"], 1,
        "{reply}"
    );
    assert_eq!(
        result["structuredContent"]["metadata"]["promptNames"],
        json!(["greet"])
    );
    assert!(reply.to_string().len() < 4000, "small answer");

    // 400,000 distinct names: refused, naming the argument, its count and the limit.
    let distinct: Vec<String> = (0..400_000).map(|i| format!("p{i}")).collect();
    let reply = tool(to, &session, json!({"promptNames": distinct})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("promptNames")
            && message.contains("400000")
            && message.contains("limits.maxBatch"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );

    // A large result: structuredContent carries it, the text is a summary, not a copy.
    let reply = tool(to, &session, json!({"promptName": "big"})).await;
    let result = &reply["result"];
    let content = result["structuredContent"]["data"]["prompt"]["content"]
        .as_str()
        .unwrap();
    assert_eq!(content.trim_end().len(), 4000);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.len() < 300 && text.contains("structuredContent"),
        "{text}"
    );
    // A small one keeps the JSON text for older clients.
    let reply = tool(to, &session, json!({"promptName": "greet"})).await;
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    let copy: Value = serde_json::from_str(text).unwrap();
    assert_eq!(copy, reply["result"]["structuredContent"]);

    // Repeats do not count against the batch cap (5).
    let reply = tool(
        to,
        &session,
        json!({
        "promptNames": ["big", "big", "big", "big", "big", "greet"],
        "args": {"who": "x".repeat(3000)}}),
    )
    .await;
    assert_eq!(
        reply["result"]["structuredContent"]["data"]["totalCount"], 2,
        "{reply}"
    );
    // Over the response cap: an error naming the limit, not a truncation.
    let reply = tool(to, &session, json!({"args": {"who": "z".repeat(19_000)}})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.maxResponseBytes"),
        "{reply}"
    );

    // System prompts are not served through the tool either.
    let reply = tool(to, &session, json!({"promptName": "internal"})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(reply.to_string().contains("not found"), "{reply}");

    let rss_after = server.peak_rss_mib();
    eprintln!("amplification over HTTP: peak RSS {rss_before:.0} -> {rss_after:.0} MiB");
    // Bounded by `maxRequestBytes`: the body is parsed twice, by the JSON-RPC conformance check
    // and by rmcp, each many times its size in JSON values.
    assert!(rss_after < 320.0, "peak RSS {rss_after:.0} MiB");
    still_serves(to).await;
}

/// Reads stdout lines of an MCP stdio server until the reply with `id`.
fn reply_with_id(lines: &mpsc::Receiver<String>, id: u64) -> Value {
    loop {
        let line = lines.recv_timeout(STEP).expect("a reply in time");
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v["id"] == id
        {
            return v;
        }
    }
}

#[test]
fn stdio_batch_of_repeated_names_is_fast_and_small() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {"maxRequestBytes": 16_000_000}}));
    let mut cmd = promptd();
    cmd.args(["serve", "--no-watch", "--prompts"])
        .arg(prompts.path())
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let started = Instant::now();
    let mut send = |v: Value| {
        let mut line = v.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}}),
    );
    reply_with_id(&lines, 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "wit-get-prompts", "arguments": {"promptNames": names("greet", 400_000)}}}),
    );
    let reply = reply_with_id(&lines, 2);
    assert_eq!(
        reply["result"]["structuredContent"]["data"]["totalCount"], 1,
        "{reply}"
    );
    let distinct: Vec<String> = (0..400_000).map(|i| format!("p{i}")).collect();
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "wit-get-prompts", "arguments": {"promptNames": distinct}}}),
    );
    let reply = reply_with_id(&lines, 3);
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.maxBatch"),
        "{reply}"
    );
    // Still serving.
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    assert!(reply_with_id(&lines, 4)["result"]["tools"].is_array());
    let elapsed = started.elapsed();
    drop(stdin);
    let (_, peak, timed_out) = wait_bounded(&mut child, STEP);
    eprintln!("amplification over stdio: {elapsed:?}, peak RSS {peak:.0} MiB");
    assert!(!timed_out, "the server exits when stdin closes");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    assert!(peak < 250.0, "peak RSS {peak:.0} MiB");
}

/// Every local user can send from any loopback address: 17 of them opening 64 sessions each
/// are one peer, which fills the table; each newcomer is admitted in the place of the least
/// recently used session, and a session kept in use stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_one_local_peer_cannot_hold_every_session() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {
        "maxSessions": 30, "maxSessionsPerPeer": 64, "sessionIdlePressureSecs": 300}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let rss_before = server.peak_rss_mib();
    let kept = open_session(to, &[]).await;
    let started = Instant::now();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let mut opened = Vec::new();
    for i in 0..17 * 64u64 {
        let from = IpAddr::from([127, 0, 0, 2 + (i % 17) as u8]);
        let reply = exchange(to, Some(from), &post(to, &[], &initialize_body(i))).await;
        *statuses.entry(reply.status).or_default() += 1;
        if let Some(id) = reply.header("mcp-session-id") {
            opened.push(id.to_string());
        }
        if i % 10 == 0 {
            serves_in(to, &kept).await;
        }
    }
    let elapsed = started.elapsed();
    let rss_after = server.peak_rss_mib();
    eprintln!(
        "1,088 initializes from 17 loopback addresses: {elapsed:?}, statuses {statuses:?}, \
         peak RSS {rss_before:.0} -> {rss_after:.0} MiB"
    );
    assert_eq!(statuses.get(&200), Some(&1088), "{statuses:?}");
    assert_eq!(open_sessions(to).await, 30);
    // The oldest gave way (404: the client starts anew), the newest and the one in use stay.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let headers = [
        ("Mcp-Session-Id", opened[0].as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    assert_eq!(
        exchange(to, None, &post(to, &headers, &body)).await.status,
        404
    );
    serves_in(to, opened.last().unwrap()).await;
    serves_in(to, &kept).await;
    // A byte order mark before the message changes nothing: rmcp skips it, and so does the
    // admission, so the table stays within its cap.
    let with_bom = format!("\u{feff}{}", initialize_body(3000));
    let reply = exchange(to, None, &post(to, &[], &with_bom)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(open_sessions(to).await, 30);
    // A newcomer from anywhere is served.
    still_serves(to).await;
    assert!(rss_after < 200.0, "peak RSS {rss_after:.0} MiB");
}

/// The open sessions `/metrics` counts.
async fn open_sessions(to: SocketAddr) -> u64 {
    metric(to, "promptd_http_sessions").await
}

/// The value of the gauge `name` in `/metrics`.
async fn metric(to: SocketAddr, name: &str) -> u64 {
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n\r\n");
    let reply = exchange(to, None, request.as_bytes()).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
        .body
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {name} in {}", reply.body)) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_idle_sessions_expire_sooner_under_pressure() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {
        "maxSessions": 4, "sessionIdleSecs": 300, "sessionIdlePressureSecs": 1}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(open_session(to, &[]).await);
    }
    assert_eq!(open_sessions(to).await, 4);
    // Full is above three quarters of the cap: sessions idle for 1 s are closed (those the
    // reaper finds idle in one pass; then the pressure is gone), the oldest first.
    let deadline = Instant::now() + STEP;
    while open_sessions(to).await == 4 {
        assert!(Instant::now() < deadline, "idle sessions never expired");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The expired session is gone: 404, and the client starts a new one.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let headers = [
        ("Mcp-Session-Id", sessions[0].as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let reply = exchange(to, None, &post(to, &headers, &body)).await;
    assert_eq!(reply.status, 404, "{reply:?}");
    still_serves(to).await;
}

/// `/metrics` checks `Host` as `/mcp` does: a name that is not the server's (DNS rebinding) is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_metrics_refuse_a_foreign_host() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let port = to.port();
    for (host, status) in [
        (format!("evil.example:{port}"), 403),
        ("evil.example".to_string(), 403),
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
    ] {
        let request = format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        let reply = exchange(to, None, request.as_bytes()).await;
        assert_eq!(reply.status, status, "{host}: {reply:?}");
        if status == 403 {
            assert!(!reply.body.contains("promptd_"), "{reply:?}");
            assert!(reply.body.contains("Host"), "{reply:?}");
        }
    }
    // The same host is refused by `/mcp`.
    let request = post(to, &[], &initialize_body(1));
    let foreign = String::from_utf8(request).unwrap().replace(
        &format!("Host: {to}"),
        &format!("Host: evil.example:{port}"),
    );
    assert_eq!(exchange(to, None, foreign.as_bytes()).await.status, 403);
}

/// A GET of the studio's event stream (`close`: the connection ends with the stream).
fn studio_events(to: SocketAddr, close: bool) -> String {
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!(
        "GET /studio/events HTTP/1.1\r\nHost: {to}\r\nAccept: text/event-stream\r\n{connection}\r\n"
    )
}

/// A GET of `session`'s event stream on `/mcp`.
fn mcp_events(to: SocketAddr, session: &str, close: bool) -> String {
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!(
        "GET /mcp HTTP/1.1\r\nHost: {to}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n{connection}\r\n"
    )
}

/// Sends `request` from `from`: the status and head, and the connection while its stream is
/// open (a refused one is read to its end).
async fn open_stream(
    to: SocketAddr,
    from: IpAddr,
    request: &str,
) -> (u16, String, Option<tokio::net::TcpStream>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let mut stream = tokio::time::timeout(STEP, socket.connect(to))
        .await
        .expect("connect in time")
        .expect("connect");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(STEP, stream.read(&mut buf))
            .await
            .expect("answer headers in time")
            .unwrap();
        assert!(
            n > 0,
            "closed before the headers: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.extend_from_slice(&buf[..n]);
    }
    let reply = parse_reply(&head);
    if reply.status == 200 {
        return (
            200,
            String::from_utf8_lossy(&head).into_owned(),
            Some(stream),
        );
    }
    tokio::time::timeout(STEP, stream.read_to_end(&mut head))
        .await
        .expect("a refusal ends in time")
        .unwrap();
    (
        reply.status,
        String::from_utf8_lossy(&head).into_owned(),
        None,
    )
}

/// Opens `n` event streams, every other one the studio's and one of a session's (a new session
/// for every 16: rmcp ends the oldest of a session's streams past 33), from as many loopback
/// addresses: the streams held open, the statuses by kind, and the first refusal.
async fn open_streams(
    to: SocketAddr,
    n: usize,
) -> (
    Vec<tokio::net::TcpStream>,
    std::collections::BTreeMap<(&'static str, u16), usize>,
    Option<String>,
) {
    let mut held = Vec::new();
    let mut statuses = std::collections::BTreeMap::new();
    let mut refusal = None;
    let mut sessions = Vec::new();
    for i in 0..n {
        let from = IpAddr::from([127, 0, 1 + (i / 250) as u8, 1 + (i % 250) as u8]);
        let (kind, request) = if i % 2 == 0 {
            ("studio", studio_events(to, false))
        } else {
            if (i / 2) % 16 == 0 {
                sessions.push(open_session(to, &[]).await);
            }
            ("mcp", mcp_events(to, sessions.last().unwrap(), false))
        };
        let (status, text, stream) = open_stream(to, from, &request).await;
        *statuses.entry((kind, status)).or_default() += 1;
        match stream {
            Some(s) => held.push(s),
            None => {
                refusal.get_or_insert(text);
            }
        }
    }
    (held, statuses, refusal)
}

/// `GET /health`'s status.
async fn health(to: SocketAddr) -> u16 {
    let request = format!("GET /health HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n\r\n");
    exchange(to, None, request.as_bytes()).await.status
}

/// 300 event streams of both kinds against a server started with 256 open files (the usual
/// soft limit is 1,024): every loopback address is one peer, which gets
/// `maxEventStreamsPerPeer` of them and 429 beyond; `/health` and a new session are still
/// served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_event_streams_are_capped_per_peer_under_a_low_soft_fd_limit() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({}));
    let server = Server::start_with_open_files(
        cwd.path(),
        prompts.path(),
        "127.0.0.1:0",
        &[],
        Some((256, None)),
    );
    let to = server.addr;
    let started = Instant::now();
    let (held, statuses, refusal) = open_streams(to, 300).await;
    eprintln!("300 event streams: {:?}, {statuses:?}", started.elapsed());
    let expected = [
        (("mcp", 200), 32),
        (("mcp", 429), 118),
        (("studio", 200), 32),
        (("studio", 429), 118),
    ];
    assert_eq!(statuses, expected.into_iter().collect(), "{refusal:?}");
    let refusal = refusal.unwrap();
    assert!(
        refusal.contains("limits.maxEventStreamsPerPeer")
            && refusal.to_ascii_lowercase().contains("retry-after"),
        "{refusal}"
    );
    assert_eq!(health(to).await, 200);
    still_serves(to).await;
    assert_eq!(metric(to, "promptd_http_event_streams").await, 64);
    // A stream's place comes back when its client goes.
    drop(held);
    let deadline = Instant::now() + 2 * STEP;
    loop {
        let from = IpAddr::from([127, 0, 0, 1]);
        match open_stream(to, from, &studio_events(to, false)).await {
            (200, _, _) => break,
            (status, text, _) => {
                assert_eq!(status, 429, "{text}");
                assert!(Instant::now() < deadline, "no place came back");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

/// With a hard limit of 256 open files, streams take at most half of them (503 beyond), so the
/// server goes on answering; a flood of idle connections that exhausts the rest makes accepts
/// fail, which the server logs once for the whole run of failures, and it serves again once the
/// flood ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_event_streams_leave_descriptors_under_a_low_hard_fd_limit() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {"maxEventStreamsPerPeer": 1000}}));
    let server = Server::start_with_open_files(
        cwd.path(),
        prompts.path(),
        "127.0.0.1:0",
        &[],
        Some((256, Some(256))),
    );
    let to = server.addr;
    let (held, statuses, refusal) = open_streams(to, 300).await;
    let expected = [
        (("mcp", 200), 64),
        (("mcp", 503), 86),
        (("studio", 200), 64),
        (("studio", 503), 86),
    ];
    assert_eq!(statuses, expected.into_iter().collect(), "{refusal:?}");
    assert!(
        refusal
            .as_ref()
            .unwrap()
            .contains("limits.maxEventStreams,"),
        "{refusal:?}"
    );
    assert_eq!(health(to).await, 200);
    still_serves(to).await;
    assert!(server.stderr_lines("accept").is_empty());

    // Idle connections past the descriptors left: accepts fail for a while.
    let mut idle = Vec::new();
    for _ in 0..300 {
        let connect = tokio::net::TcpStream::connect(to);
        idle.push(tokio::time::timeout(STEP, connect).await.unwrap().unwrap());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(idle);
    let deadline = Instant::now() + STEP;
    loop {
        let request = format!("GET /health HTTP/1.1\r\nHost: {to}\r\nConnection: close\r\n\r\n");
        let connect = tokio::net::TcpStream::connect(to);
        let mut stream = tokio::time::timeout(STEP, connect).await.unwrap().unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut buf)).await;
        if matches!(read, Ok(Ok(_))) && parse_reply(&buf).status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "/health never answered again");
    }
    still_serves(to).await;
    // Each run of failed accepts (the flood may make more than one as the server frees and
    // retakes descriptors) is logged as it starts and as it ends with its count: a few lines,
    // where a line per retry every 50 ms made dozens.
    let lines = server.stderr_lines("accept");
    eprintln!("accept failures logged: {lines:#?}");
    let starts = lines
        .iter()
        .filter(|l| l.contains("accepting connections fails"))
        .count();
    let ends = lines
        .iter()
        .filter(|l| l.contains("failed accepts in"))
        .count();
    assert!(
        (1..=3).contains(&starts) && ends == starts && lines.len() == starts + ends,
        "{lines:#?}"
    );
    drop(held);
}

/// An event stream is ended by the server after `limits.eventStreamLifetimeSecs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_event_streams_end_after_their_lifetime() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {"eventStreamLifetimeSecs": 1}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let session = open_session(to, &[]).await;
    let from = IpAddr::from([127, 0, 0, 1]);
    for request in [studio_events(to, true), mcp_events(to, &session, true)] {
        let started = Instant::now();
        let (status, head, stream) = open_stream(to, from, &request).await;
        assert_eq!(status, 200, "{head}");
        let mut rest = Vec::new();
        tokio::time::timeout(STEP, stream.unwrap().read_to_end(&mut rest))
            .await
            .expect("the stream ends")
            .unwrap();
        let lived = started.elapsed();
        assert!(
            lived >= Duration::from_millis(900) && lived < Duration::from_secs(10),
            "{request}: {lived:?}"
        );
        // It ended as a stream ends: the closing chunk.
        assert!(
            rest.ends_with(b"0\r\n\r\n"),
            "{:?}",
            String::from_utf8_lossy(&rest)
        );
    }
    serves_in(to, &session).await;
}

/// A limit out of its range stops `serve` and `check` with the key and the range; a reload
/// that brings one keeps the last good limits.
#[test]
fn limits_out_of_range_are_refused_with_their_key() {
    let prompts = prompt_dir();
    for (limits, message) in [
        (
            json!({"connectionIdleSecs": 0}),
            "limits.connectionIdleSecs: 0 is out of range 1..=86400",
        ),
        (
            json!({"headerReadTimeoutSecs": u64::MAX}),
            "limits.headerReadTimeoutSecs: 18446744073709551615 is out of range 1..=3600",
        ),
    ] {
        let cwd = workdir(&json!({ "limits": limits }));
        let mut serve = promptd();
        serve
            .args(["serve", "--no-watch", "--http", "127.0.0.1:0", "--prompts"])
            .arg(prompts.path())
            .current_dir(cwd.path());
        let run = crate::support::process::run_bounded(serve, b"", STEP);
        assert!(run.exited() && run.code() != Some(0), "{run:?}");
        assert!(run.stderr.contains(message), "{}", run.stderr);
        let mut check = promptd();
        check
            .args(["check", "--prompts"])
            .arg(prompts.path())
            .current_dir(cwd.path());
        let run = crate::support::process::run_bounded(check, b"", STEP);
        assert!(run.exited() && run.code() != Some(0), "{run:?}");
        assert!(run.stderr.contains(message), "{}", run.stderr);
    }

    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("config.json");
    std::fs::write(&config, r#"{"limits": {"connectionIdleSecs": 30}}"#).unwrap();
    let lib = crate::support::library(
        &[prompts.path().to_path_buf()],
        false,
        Some(&config),
        "2026-01-15T12:00:00Z",
    );
    std::fs::write(&config, r#"{"limits": {"connectionIdleSecs": 0}}"#).unwrap();
    let outcome = lib.reload();
    assert!(
        outcome.problems.iter().any(|p| p.contains("config.json")
            && p.contains("limits.connectionIdleSecs: 0 is out of range 1..=86400")),
        "{:?}",
        outcome.problems
    );
    assert_eq!(lib.snapshot().limits.connection_idle_secs, 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_refuses_foreign_origins() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"serve": {"allowedOrigins": ["http://good.example"]}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let evil = exchange(
        to,
        None,
        &post(
            to,
            &[("Origin", "http://evil.example")],
            &initialize_body(1),
        ),
    )
    .await;
    assert_eq!(evil.status, 403, "{evil:?}");
    let good = exchange(
        to,
        None,
        &post(
            to,
            &[("Origin", "http://good.example")],
            &initialize_body(1),
        ),
    )
    .await;
    assert_eq!(good.status, 200, "{good:?}");
    still_serves(to).await;

    // Without configured origins, every origin but the server's own is foreign: a page the
    // server itself serves (`http://127.0.0.1:PORT`, `http://localhost:PORT`) may use `/mcp`.
    let plain = workdir(&json!({}));
    let server = Server::start(plain.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    for origin in [
        format!("http://{to}"),
        format!("http://localhost:{}", to.port()),
    ] {
        let reply = exchange(
            to,
            None,
            &post(to, &[("Origin", &origin)], &initialize_body(1)),
        )
        .await;
        assert_eq!(reply.status, 200, "{origin}: {reply:?}");
    }
    for origin in [
        "http://good.example",
        "null",
        &format!("http://127.0.0.1:{}", to.port() + 1),
    ] {
        let reply = exchange(
            to,
            None,
            &post(to, &[("Origin", origin)], &initialize_body(1)),
        )
        .await;
        assert_eq!(reply.status, 403, "{origin}: {reply:?}");
    }
    still_serves(to).await;

    // A malformed allowed origin is a startup error naming the key.
    let bad = workdir(&json!({"serve": {"allowedOrigins": ["good.example"]}}));
    let mut cmd = promptd();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .current_dir(bad.path());
    let run = crate::support::process::run_bounded(cmd, b"", STEP);
    assert_eq!(run.code(), Some(1), "{run:?}");
    assert!(
        run.stderr.contains("serve.allowedOrigins[0]"),
        "{}",
        run.stderr
    );
}

/// `/mcp`, `/metrics` and the studio's page answer a `Host` and `Origin` by one rule: the same
/// pairs pass or fail on every route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_takes_the_same_host_and_origin_rule() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"serve": {"allowedOrigins": ["http://localhost:*"]}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let port = to.port();
    let cases = [
        (
            format!("127.0.0.1:{port}"),
            Some(format!("http://127.0.0.1:{port}")),
            200,
        ),
        (
            format!("localhost:{port}"),
            Some(format!("http://localhost:{port}")),
            200,
        ),
        (
            format!("[::1]:{port}"),
            Some(format!("http://[::1]:{port}")),
            200,
        ),
        (
            format!("127.0.0.1:{port}"),
            Some("http://localhost:5173".into()),
            200,
        ),
        (format!("127.0.0.1:{port}"), None, 200),
        (
            format!("127.0.0.1:{port}"),
            Some(format!("http://127.0.0.1:{}", port + 1)),
            403,
        ),
        (
            format!("127.0.0.1:{port}"),
            Some("https://evil.example".into()),
            403,
        ),
        (format!("127.0.0.1:{port}"), Some("null".into()), 403),
        (
            format!("evil.example:{port}"),
            Some(format!("http://evil.example:{port}")),
            403,
        ),
    ];
    for (host, origin, want) in cases {
        let origin_line = origin
            .as_ref()
            .map(|o| format!("Origin: {o}\r\n"))
            .unwrap_or_default();
        let get = |path: &str| {
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin_line}Connection: close\r\n\r\n")
        };
        let body = initialize_body(1);
        let mcp = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin_line}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        for (route, raw) in [
            ("/mcp", mcp),
            ("/metrics", get("/metrics")),
            ("/", get("/")),
            ("/studio/tools", get("/studio/tools")),
            ("/studio/compare", get("/studio/compare?left=x")),
        ] {
            let reply = exchange(to, None, raw.as_bytes()).await;
            assert_eq!(
                reply.status, want,
                "{route} Host {host} Origin {origin:?}: {reply:?}"
            );
        }
    }
    still_serves(to).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_stalled_connections_are_closed() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {"headerReadTimeoutSecs": 1, "connectionIdleSecs": 2}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    // Half a header, then nothing; a whole header and a tenth of the body, then nothing;
    // nothing at all.
    let stalls: [&[u8]; 3] = [
        format!("POST /mcp HTTP/1.1\r\nHost: {to}\r\nContent-Ty").leak().as_bytes(),
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {to}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
        )
        .leak()
        .as_bytes(),
        b"",
    ];
    for stall in stalls {
        let started = Instant::now();
        let mut stream = tokio::net::TcpStream::connect(to).await.unwrap();
        stream.write_all(stall).await.unwrap();
        let mut buf = Vec::new();
        let closed = tokio::time::timeout(STEP, stream.read_to_end(&mut buf)).await;
        assert!(
            closed.is_ok(),
            "connection still open after {:?}",
            started.elapsed()
        );
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
    }
    still_serves(to).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_broken_chunked_body_is_400() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: {to}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n5\r\n{{\"jso\r\nzz\r\nnonsense\r\n0\r\n\r\n"
    );
    let reply = exchange(to, None, raw.as_bytes()).await;
    assert_eq!(reply.status, 400, "{reply:?}");
    // Over the request limit: 413 naming the key.
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(4 * 1024 * 1024 + 10));
    let reply = exchange(to, None, &post(to, &[], &big)).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(reply.body.contains("limits.maxRequestBytes"), "{reply:?}");
    still_serves(to).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_delete_answers_204_then_404() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let delete = |id: &str| {
        format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {to}\r\nMcp-Session-Id: {id}\r\n\
             MCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n"
        )
    };
    let reply = exchange(to, None, delete("no-such-session").as_bytes()).await;
    assert_eq!(reply.status, 404, "{reply:?}");
    let session = open_session(to, &[]).await;
    let reply = exchange(to, None, delete(&session).as_bytes()).await;
    assert_eq!(reply.status, 204, "{reply:?}");
    let reply = exchange(to, None, delete(&session).as_bytes()).await;
    assert_eq!(reply.status, 404, "{reply:?}");
    still_serves(to).await;
}

#[test]
fn http_refuses_weak_tokens_for_a_public_bind() {
    for token in ["x", "   ", "short-token"] {
        let mut cmd = promptd();
        cmd.args(["serve", "--http", "0.0.0.0:0", "--auth-token", token]);
        let run = crate::support::process::run_bounded(cmd, b"", STEP);
        assert_eq!(run.code(), Some(1), "{token:?}: {run:?}");
        assert!(
            run.stderr.contains("--auth-token") || run.stderr.contains("limits.minAuthTokenChars"),
            "{token:?}: {}",
            run.stderr
        );
    }
    let mut cmd = promptd();
    cmd.args(["serve", "--http", "0.0.0.0:0", "--auth-token", "x"]);
    let run = crate::support::process::run_bounded(cmd, b"", STEP);
    assert!(
        run.stderr.contains("limits.minAuthTokenChars"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_other_loopback_addresses_and_any_bearer_case() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({}));
    let token = "a-long-enough-test-token";
    let server = Server::start(
        cwd.path(),
        prompts.path(),
        "127.0.0.2:0",
        &["--auth-token", token],
    );
    let to = server.addr;
    assert_eq!(to.ip().to_string(), "127.0.0.2");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let auth = format!("{scheme} {token}");
        let reply = exchange(
            to,
            None,
            &post(to, &[("Authorization", &auth)], &initialize_body(1)),
        )
        .await;
        assert_eq!(reply.status, 200, "{scheme}: {reply:?}");
    }
    let reply = exchange(
        to,
        None,
        &post(to, &[("Authorization", "Basic abc")], &initialize_body(1)),
    )
    .await;
    assert_eq!(reply.status, 401, "{reply:?}");
    let auth = format!("Bearer {token}");
    let session = open_session(to, &[("Authorization", &auth)]).await;
    assert!(!session.is_empty());
}

/// Connections are dealt to the server's threads in turn: a session opened over one
/// connection is served over the next ones, whichever thread each lands on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessions_are_served_from_every_connection_thread() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({}));
    let server = Server::start(
        cwd.path(),
        prompts.path(),
        "127.0.0.1:0",
        &["--workers", "3"],
    );
    let to = server.addr;
    // Two connections opened the session; six more: each thread serves two of them.
    let session = open_session(to, &[]).await;
    for _ in 0..3 {
        let listed = request(to, &session, "prompts/list", json!({})).await;
        let names: Vec<&str> = listed["result"]["prompts"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(names.contains(&"greet"), "{listed}");
        let called = tool(to, &session, json!({"promptName": "greet"})).await;
        assert_eq!(called["result"]["isError"], json!(false), "{called}");
    }
}

#[test]
fn http_workers_are_one_to_1024() {
    for n in ["0", "1025", "many"] {
        let out = promptd()
            .args(["serve", "--http", "127.0.0.1:0", "--workers", n])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--workers {n}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--workers"), "{stderr}");
    }
}
