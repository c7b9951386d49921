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
}

impl Server {
    fn start(cwd: &Path, prompts: &Path, bind: &str, extra: &[&str]) -> Server {
        let mut cmd = promptd();
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
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("serving MCP at http://").nth(1) {
                    let _ = tx.send(url.trim_end_matches("/mcp").to_string());
                }
            }
        });
        let addr = rx
            .recv_timeout(STEP)
            .expect("the server prints its address")
            .parse()
            .unwrap();
        Server { child, addr }
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
    // and by rmcp, each about 40 times its size in JSON values (the issue measured 9 GB).
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessions_are_capped_per_peer_and_in_all() {
    let prompts = prompt_dir();
    let cwd = workdir(&json!({"limits": {
        "maxSessions": 50, "maxSessionsPerPeer": 40, "sessionIdlePressureSecs": 300}}));
    let server = Server::start(cwd.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    let rss_before = server.peak_rss_mib();
    let peer_a: IpAddr = "127.0.0.1".parse().unwrap();
    let peer_b: IpAddr = "127.0.0.3".parse().unwrap();
    let started = Instant::now();
    let mut statuses = std::collections::BTreeMap::<(u8, u16), usize>::new();
    let mut per_peer_refusal = None;
    let mut total_refusal = None;
    let mut first_session = None;
    for i in 0..3000u64 {
        let (tag, from) = if i < 1500 { (0, peer_a) } else { (1, peer_b) };
        let reply = exchange(to, Some(from), &post(to, &[], &initialize_body(i))).await;
        *statuses.entry((tag, reply.status)).or_default() += 1;
        match reply.status {
            429 if per_peer_refusal.is_none() => per_peer_refusal = Some((i, reply)),
            503 if total_refusal.is_none() => total_refusal = Some((i, reply)),
            200 if first_session.is_none() => {
                first_session = reply.header("mcp-session-id").map(str::to_string);
            }
            _ => {}
        }
    }
    let elapsed = started.elapsed();
    let rss_after = server.peak_rss_mib();
    eprintln!(
        "3,000 initializes: {elapsed:?}, statuses {statuses:?}, peak RSS {rss_before:.0} -> \
         {rss_after:.0} MiB"
    );
    assert_eq!(statuses.get(&(0, 200)), Some(&40), "{statuses:?}");
    assert_eq!(statuses.get(&(0, 429)), Some(&1460), "{statuses:?}");
    assert_eq!(statuses.get(&(1, 200)), Some(&10), "{statuses:?}");
    assert_eq!(statuses.get(&(1, 503)), Some(&1490), "{statuses:?}");
    // A byte order mark before the message changes nothing: rmcp skips it, and so does the
    // admission, so such an initialize is refused like any other.
    let with_bom = format!("\u{feff}{}", initialize_body(3000));
    let reply = exchange(to, Some(peer_b), &post(to, &[], &with_bom)).await;
    assert_eq!(reply.status, 503, "{reply:?}");

    let (id, reply) = per_peer_refusal.unwrap();
    assert!(reply.header("retry-after").is_some(), "{reply:?}");
    let m = reply.message();
    assert_eq!(m["id"], id);
    assert_eq!(m["error"]["code"], -32000);
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.maxSessionsPerPeer"),
        "{m}"
    );
    let (id, reply) = total_refusal.unwrap();
    assert!(reply.header("retry-after").is_some(), "{reply:?}");
    let m = reply.message();
    assert_eq!(m["id"], id);
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.maxSessions)"),
        "{m}"
    );
    assert!(rss_after < 200.0, "peak RSS {rss_after:.0} MiB");

    // A new peer is refused while the server is full; a session opened before is served.
    let c: IpAddr = "127.0.0.4".parse().unwrap();
    assert_eq!(still_serves_from(to, c).await, Err(503));
    let session = first_session.unwrap();
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(
        exchange(to, None, &post(to, &headers, &note)).await.status,
        202
    );
    let tools = request(to, &session, "tools/list", json!({})).await;
    assert!(tools["result"]["tools"].is_array(), "{tools}");
}

/// A new session from `from`: its status when refused.
async fn still_serves_from(to: SocketAddr, from: IpAddr) -> Result<(), u16> {
    let reply = exchange(to, Some(from), &post(to, &[], &initialize_body(1))).await;
    if reply.status == 200 {
        Ok(())
    } else {
        Err(reply.status)
    }
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
    let from: IpAddr = "127.0.0.1".parse().unwrap();
    assert_eq!(still_serves_from(to, from).await, Err(503));
    // Full is above three quarters of the cap: sessions idle for 1 s are closed.
    let deadline = Instant::now() + STEP;
    while still_serves_from(to, from).await.is_err() {
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
    // The reaper closes the other idle sessions on its own schedule (every 250 ms), so the slot
    // of the next new client may take one more pass; that client is then served in full.
    let deadline = Instant::now() + STEP;
    let session = loop {
        match try_open_session(to, &[]).await {
            Ok(id) => break id,
            Err(reply) => {
                assert_eq!(reply.status, 503, "{reply:?}");
                assert!(Instant::now() < deadline, "no slot came free: {reply:?}");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    };
    serves_in(to, &session).await;
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

    // Without configured origins, every origin is foreign.
    let plain = workdir(&json!({}));
    let server = Server::start(plain.path(), prompts.path(), "127.0.0.1:0", &[]);
    let to = server.addr;
    for origin in ["http://good.example", "null", &format!("http://{to}")] {
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
