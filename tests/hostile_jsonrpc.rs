//! Hostile JSON-RPC over the real binary: raw bytes over a stdio pipe and raw HTTP requests (no
//! MCP client), each answered with the exact JSON-RPC error and id, in bounded time and memory,
//! and the server still serving afterwards.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::llm_server::{LlmServer, Reply};
use crate::support::process::{peak_rss_of, promptd, wait_bounded};
use crate::support::stdio::{INIT, INITIALIZED, STEP, StdioServer};

/// `{"jsonrpc":"2.0","id":ID,"method":"tools/call",...}` with `depth` nested arrays inside.
fn deep(id: u64, depth: usize) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}{}}}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
    .into_bytes()
}

/// The malformed messages, each with the code and id its reply must carry.
fn cases() -> Vec<(&'static str, Vec<u8>, i64, Value)> {
    vec![
        (
            "malformed JSON",
            br#"{"jsonrpc":"2.0","id":10,"method":"ping""#.to_vec(),
            -32700,
            Value::Null,
        ),
        (
            "wrong shape with an id",
            br#"{"jsonrpc":"2.0","id":11,"method":5}"#.to_vec(),
            -32600,
            json!(11),
        ),
        (
            "wrong version with a string id",
            br#"{"jsonrpc":"1.0","id":"v","method":"ping"}"#.to_vec(),
            -32600,
            json!("v"),
        ),
        (
            "wrong parameter type",
            br#"{"jsonrpc":"2.0","id":12,"method":"prompts/get","params":{"name":5}}"#.to_vec(),
            -32602,
            json!(12),
        ),
        (
            "params of the wrong kind",
            br#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":[1,2]}"#.to_vec(),
            -32602,
            json!("c"),
        ),
        (
            "nesting past the recursion limit",
            deep(13, 200),
            -32600,
            json!(13),
        ),
        (
            "batch",
            br#"[{"jsonrpc":"2.0","id":14,"method":"ping"}]"#.to_vec(),
            -32600,
            Value::Null,
        ),
        ("empty batch", b"[]".to_vec(), -32600, Value::Null),
        (
            "invalid UTF-8 inside a string",
            b"{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"prompts/get\",\"params\":{\"name\":\"\xff\xfe\"}}"
                .to_vec(),
            -32700,
            Value::Null,
        ),
        ("not an object", b"42".to_vec(), -32600, Value::Null),
    ]
}

fn assert_refusal(what: &str, reply: &Value, code: i64, id: &Value) {
    assert_eq!(reply["jsonrpc"], "2.0", "{what}: {reply}");
    assert_eq!(reply["error"]["code"], code, "{what}: {reply}");
    assert_eq!(&reply["id"], id, "{what}: {reply}");
    assert!(
        reply.as_object().unwrap().contains_key("id"),
        "{what}: the id member is required, null or not: {reply}"
    );
}

/// Asserts that a hostile step took under [`STEP`] and grew the peak RSS by less than
/// `growth_mib`; prints both numbers.
fn assert_bounded(what: &str, started: Instant, baseline: f64, peak: f64, growth_mib: f64) {
    let elapsed = started.elapsed();
    eprintln!("{what}: {elapsed:?}, peak RSS {baseline:.1} -> {peak:.1} MiB");
    assert!(elapsed < STEP, "{what}: {elapsed:?}");
    assert!(
        peak < baseline + growth_mib,
        "{what}: peak RSS {baseline:.1} -> {peak:.1} MiB"
    );
}

/// Notifications, responses and errors before `initialize` are ignored, a request is answered
/// with its id, and `initialize` then works (the server used to exit with status 1).
#[test]
fn stdio_messages_before_initialize_do_not_end_the_session() {
    let mut s = StdioServer::start();
    s.send(INITIALIZED.as_bytes());
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    s.send(br#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
    s.send(br#"{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}"#);
    s.send(br#"{"jsonrpc":"2.0","id":"early","method":"prompts/list"}"#);
    let reply = s.reply("request before initialize");
    assert_eq!(reply["id"], "early", "{reply}");
    assert!(reply["error"]["code"].is_i64(), "{reply}");
    s.initialize();
    s.send(br#"{"jsonrpc":"2.0","id":2,"method":"prompts/list"}"#);
    let reply = s.reply("prompts/list after initialize");
    assert_eq!(reply["id"], 2, "{reply}");
    assert!(reply["result"]["prompts"].is_array(), "{reply}");
    s.finish();
}

/// Each malformed message gets its JSON-RPC error with the right code and id; the replies are
/// the same over HTTP (one snapshot for both).
#[test]
fn stdio_malformed_messages_get_conforming_errors() {
    let mut s = StdioServer::start();
    s.initialize();
    let mut replies = Vec::new();
    for (what, raw, code, id) in cases() {
        s.send(&raw);
        let reply = s.reply(what);
        assert_refusal(what, &reply, code, &id);
        replies.push(json!({ "case": what, "reply": reply }));
    }
    s.still_serves(100);
    insta::assert_json_snapshot!("refusals", replies);
    s.finish();
}

/// A 100 MB line is never buffered whole: it is answered with -32600 naming the limit, in
/// bounded time and memory, and the next line is served.
#[test]
fn stdio_oversized_line_is_refused_without_buffering_it() {
    let mut s = StdioServer::start();
    s.initialize();
    let baseline = s.peak_rss_mib();
    let mut stdin = s.stdin.take().unwrap();
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'a'; 1024 * 1024];
        stdin
            .write_all(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#)
            .unwrap();
        for _ in 0..100 {
            stdin.write_all(&chunk).unwrap();
        }
        stdin.write_all(b"\"}}\n").unwrap();
        stdin.flush().unwrap();
        stdin
    });
    let reply = s.reply("100 MB line");
    assert_refusal("100 MB line", &reply, -32600, &Value::Null);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("limits.maxRequestBytes"), "{message}");
    s.stdin = Some(writer.join().unwrap());
    s.still_serves(2);
    assert_bounded("100 MB line", started, baseline, s.peak_rss_mib(), 48.0);
    s.finish();
}

/// The size limit is the config's `limits.maxRequestBytes`.
#[test]
fn stdio_message_size_limit_comes_from_the_config() {
    let mut s = StdioServer::start_with_config(Some(r#"{"limits":{"maxRequestBytes":1000}}"#));
    s.initialize();
    let pad = "a".repeat(1000);
    s.send(
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{pad}"}}}}"#)
            .as_bytes(),
    );
    let reply = s.reply("line over the configured limit");
    assert_refusal(
        "line over the configured limit",
        &reply,
        -32600,
        &Value::Null,
    );
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("larger than 1000 bytes (limits.maxRequestBytes)"),
        "{message}"
    );
    s.still_serves(2);
    s.finish();
}

/// 3 MB of nesting (under the size limit) is refused with its id, without a stack overflow,
/// in bounded time and memory.
#[test]
fn stdio_deep_nesting_is_refused_with_its_id() {
    let mut s = StdioServer::start();
    s.initialize();
    let baseline = s.peak_rss_mib();
    let started = Instant::now();
    s.send(&deep(5, 1_500_000));
    let reply = s.reply("deep nesting");
    assert_refusal("deep nesting", &reply, -32600, &json!(5));
    s.still_serves(6);
    assert_bounded("3 MB nesting", started, baseline, s.peak_rss_mib(), 48.0);
    s.finish();
}

/// `promptd serve --http 127.0.0.1:0`, its URL and a raw HTTP client.
struct HttpServer {
    child: Child,
    url: String,
    http: reqwest::Client,
    _cwd: tempfile::TempDir,
}

/// Status, session and content-type headers and body of one POST.
struct Answer {
    status: u16,
    session: Option<String>,
    content_type: String,
    body: String,
}

impl Answer {
    /// The one message of the answer: its JSON body, or the event stream carrying it (a
    /// session's answers).
    fn json(&self) -> Value {
        if !self.content_type.starts_with("text/event-stream") {
            return serde_json::from_str(&self.body)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body));
        }
        let messages: Vec<Value> = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("not JSON ({e}): {d}")))
            .collect();
        assert_eq!(messages.len(), 1, "{}", self.body);
        messages.into_iter().next().unwrap()
    }

    /// The answer to a request.
    fn answer(&self) -> Value {
        assert!(
            ["application/json", "text/event-stream"].contains(&self.content_type.as_str()),
            "{}: {}",
            self.content_type,
            self.body
        );
        self.json()
    }
}

impl HttpServer {
    fn start() -> HttpServer {
        let cwd = tempfile::tempdir().unwrap();
        let mut cmd = promptd();
        cmd.args(["serve", "--http", "127.0.0.1:0"])
            .current_dir(cwd.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn promptd serve --http");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split("serving MCP at ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx.recv_timeout(STEP).expect("server prints its address");
        HttpServer {
            child,
            url,
            http: {
                promptd::llm::install_tls_provider();
                reqwest::Client::new()
            },
            _cwd: cwd,
        }
    }

    async fn post(&self, body: Vec<u8>, session: Option<&str>) -> Answer {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        let response = tokio::time::timeout(STEP, request.send())
            .await
            .expect("answer in time")
            .expect("HTTP answer");
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_string());
        let content_type = response
            .headers()
            .get("content-type")
            .map_or(String::new(), |v| v.to_str().unwrap().to_string());
        let body = tokio::time::timeout(STEP, response.text())
            .await
            .expect("body in time")
            .unwrap_or_default();
        Answer {
            status,
            session,
            content_type,
            body,
        }
    }

    /// A session, after a notification and a response sent without one were refused.
    async fn initialize(&self) -> String {
        let answer = self.post(INIT.as_bytes().to_vec(), None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let session = answer.session.clone().expect("a session id");
        assert_eq!(answer.answer()["id"], "init");
        let answer = self
            .post(INITIALIZED.as_bytes().to_vec(), Some(&session))
            .await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        session
    }

    async fn still_serves(&self, session: &str, id: u64) {
        let ping = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let answer = self.post(ping.into_bytes(), Some(session)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let reply = answer.answer();
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply.get("result").is_some(), "{reply}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Over HTTP: messages before `initialize` get a clear 4xx, each malformed body its JSON-RPC
/// error (400, or 200 for invalid params) with the same bodies as over stdio, an oversized
/// body 413 in bounded memory, and the session still serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_malformed_messages_get_conforming_errors() {
    let s = HttpServer::start();
    for early in [INITIALIZED, r#"{"jsonrpc":"2.0","id":99,"result":{}}"#] {
        let answer = s.post(early.as_bytes().to_vec(), None).await;
        assert!(
            (400..500).contains(&answer.status),
            "{early}: {} {}",
            answer.status,
            answer.body
        );
    }
    let session = s.initialize().await;
    let mut replies = Vec::new();
    for (what, raw, code, id) in cases() {
        let answer = s.post(raw, Some(&session)).await;
        let status = if code == -32602 { 200 } else { 400 };
        assert_eq!(answer.status, status, "{what}: {}", answer.body);
        let reply = answer.json();
        assert_refusal(what, &reply, code, &id);
        replies.push(json!({ "case": what, "reply": reply }));
    }
    s.still_serves(&session, 100).await;
    insta::assert_json_snapshot!("refusals", replies);
    // A byte order mark before the message is skipped, as over stdio.
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(br#"{"jsonrpc":"2.0","id":"bom","method":"ping"}"#);
    let answer = s.post(bom, Some(&session)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.json()["id"], "bom", "{}", answer.body);

    let baseline = peak_rss_of(s.child.id()).unwrap_or(0.0);
    let started = Instant::now();
    let mut big = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
    big.resize(big.len() + 8 * 1024 * 1024, b'a');
    big.extend_from_slice(b"\"}}");
    let answer = s.post(big, Some(&session)).await;
    assert_eq!(answer.status, 413, "{}", answer.body);
    let reply = answer.json();
    assert_refusal("8 MB body", &reply, -32600, &Value::Null);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.maxRequestBytes"),
        "{reply}"
    );
    let answer = s.post(deep(7, 1_500_000), Some(&session)).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_refusal("3 MB nesting", &answer.json(), -32600, &json!(7));
    s.still_serves(&session, 101).await;
    let peak = peak_rss_of(s.child.id()).unwrap_or(0.0);
    assert_bounded(
        "HTTP 8 MB body + 3 MB nesting",
        started,
        baseline,
        peak,
        64.0,
    );
}

/// A client that sends thousands of requests without reading the answers: once
/// `MAX_IN_FLIGHT` answers wait to be written the server reads no more input (the client's
/// writes block on the full pipe), its memory stays bounded, and every request is answered
/// once the client reads.
#[test]
fn stdio_unread_answers_hold_back_input_not_memory() {
    const REQUESTS: u64 = 3000;
    let cwd = tempfile::tempdir().unwrap();
    let mut child = promptd()
        .arg("serve")
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn promptd serve");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{INIT}").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains(r#""id":"init""#), "{line}");
    writeln!(stdin, "{INITIALIZED}").unwrap();
    let baseline = peak_rss_of(child.id()).unwrap();
    let started = Instant::now();
    // Each answer is the listing of the built-in prompts.
    let writer = std::thread::spawn(move || {
        for id in 0..REQUESTS {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "wit-get-prompts", "arguments": {"includeContent": false}}});
            if writeln!(stdin, "{request}").is_err() {
                break;
            }
        }
        stdin
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !writer.is_finished(),
        "the server read {REQUESTS} requests while none of their answers was read"
    );
    let held = peak_rss_of(child.id()).unwrap();
    let mut answered = std::collections::BTreeSet::new();
    while (answered.len() as u64) < REQUESTS {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed");
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reply["result"]["isError"], false, "{line:.300}");
        answered.insert(reply["id"].as_u64().unwrap());
    }
    assert_eq!(answered.len() as u64, REQUESTS);
    // Read while stdin is still open: at end of input the server exits, and a zombie has no
    // memory figures.
    let peak = held.max(peak_rss_of(child.id()).unwrap());
    drop(writer.join().unwrap());
    assert_bounded("3,000 unread answers", started, baseline, peak, 48.0);
    let (status, _, timed_out) = wait_bounded(&mut child, STEP);
    assert!(
        !timed_out && status.is_some_and(|s| s.success()),
        "{status:?}"
    );
}

/// Every place of the stdio window taken by a request that waits on a slow LLM: the client can
/// still cancel. A request sent next is read ahead and held; the cancellations behind it are read,
/// free their places, and the held request is answered at once, not when the LLM answers.
#[test]
fn stdio_cancellations_get_through_a_full_window() {
    const SLOTS: u64 = promptd::transport::lines::MAX_IN_FLIGHT as u64;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let llm = runtime.block_on(LlmServer::start(vec![Reply::Slow(
        Duration::from_secs(120),
        "## Task\nToo late.".into(),
    )]));
    let env = [
        ("LLM_BASE_URL", llm.url.as_str()),
        ("LLM_MODEL", "slow"),
        ("LLM_TIMEOUT_SECS", "300"),
    ];
    let config = r#"{"rag": {"embeddings": false}}"#;
    let mut s = StdioServer::start_with(Some(config), &env);
    s.initialize();
    let cwd = s.cwd.path().display().to_string();
    for id in 0..SLOTS {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "enhance_prompt",
                       "arguments": {"prompt": "add retries to the client", "workingDirectory": cwd}}});
        s.send(call.to_string().as_bytes());
    }
    let started = Instant::now();
    while (llm.requests().len() as u64) < SLOTS {
        assert!(
            started.elapsed() < STEP,
            "{} of {SLOTS} calls reached the LLM",
            llm.requests().len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send(br#"{"jsonrpc":"2.0","id":"ping","method":"ping"}"#);
    assert!(
        s.lines.recv_timeout(Duration::from_millis(500)).is_err(),
        "answered while every place of the window is taken"
    );
    for id in 0..SLOTS {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "no longer needed"}});
        s.send(cancel.to_string().as_bytes());
    }
    let started = Instant::now();
    let reply = s.reply("ping behind a full window, after the cancellations");
    assert_eq!(reply["id"], "ping", "{reply}");
    assert!(started.elapsed() < Duration::from_secs(10));
    s.still_serves(SLOTS + 1);
    s.finish();
}
