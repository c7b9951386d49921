//! MCP round trips against the RELEASE binary over stdio and streamable HTTP (a bench binary that
//! prints numbers, not criterion: the numbers are latencies of a separate process).
//!
//! ```sh
//! cargo build --release && cargo bench --bench mcp
//! ```
//!
//! The binary is `$PROMPTD_BIN`, else `target/release/promptd` (`cargo build --release --bin
//! promptd` runs first, see `common::release_binary`). Measured over a raw pipe with newline-delimited
//! JSON-RPC, as an MCP client sees it:
//! - `prompts/get`, `tools/call wit-get-prompts` (one prompt, rendered; the listing) and
//!   `prompts/list`: min / median / p90 / p99 over `MCP_BENCH_CALLS` calls each (default 2,000)
//!   after a warm-up, as the scheduler places client and server, then both pinned to one CPU,
//!   then to two (a round trip on a small VM costs more when it wakes an idle vCPU);
//! - rmcp's parse of each of the four answers alone (one line, as the server wrote it, into
//!   rmcp's `ServerJsonRpcMessage`, in process): the part of rmcp's round trips below that is
//!   its client's;
//! - the same four calls through rmcp's own client (typed messages, its service loop on a
//!   single-threaded tokio runtime): over the stdio pipe, and over streamable HTTP on a
//!   loopback socket (with sessions and `--stateless`; rmcp's default HTTP client, which opens
//!   a connection for every request, and a pooled one), each line with the server's and the
//!   client's CPU per call;
//! - spawn → first answer: process spawn until the `initialize` response arrives;
//! - file save → `notifications/prompts/list_changed` received (watcher + 30 ms debounce +
//!   reload);
//! - idle RSS with the built-in prompts;
//! - large registries (`MCP_BENCH_SCALE`, default `10000`; e.g. `10000,100000`): that many
//!   generated 1 KB prompts; spawn → `initialize` answered, spawn → the first `prompts/get`
//!   answered (the load's end), spawn → the whole listing served,
//!   idle RSS after the load, `prompts/get` and listing latency, 20 edits (edit →
//!   `list_changed`) and the RSS after them (`0`: none). Every line ends with the machine's
//!   load.
//!
//! `MCP_BENCH_SERVE_FLAGS` adds flags to `serve` (split at whitespace; e.g. `--page-size 10`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use common::{generated_prompt, load_average};
use serde_json::{Value, json};

/// The tests' command builder and environment policy, laid out as in the test binary.
#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod process;
}

/// `MCP_BENCH_SERVE_FLAGS`, split at whitespace.
fn serve_flags() -> Vec<String> {
    std::env::var("MCP_BENCH_SERVE_FLAGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// `promptd serve ARGS… $MCP_BENCH_SERVE_FLAGS` with a frozen clock, the prompts of `prompts`,
/// run in `cwd`, logging errors only.
fn serve_command(bin: &Path, cwd: &Path, prompts: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = support::process::promptd_at(bin);
    cmd.args(["--now", "2025-03-15", "--prompts"])
        .arg(prompts)
        .arg("serve")
        .args(args)
        .args(serve_flags())
        .env("RUST_LOG", "error")
        .current_dir(cwd);
    cmd
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(bin: &Path, cwd: &Path, prompts: &Path) -> Server {
        Server::spawn_on(bin, cwd, prompts, None)
    }

    /// A server whose every thread runs on CPU `cpu` (when given).
    fn spawn_on(bin: &Path, cwd: &Path, prompts: &Path, cpu: Option<usize>) -> Server {
        Server::spawn_with(bin, cwd, prompts, cpu, &[])
    }

    fn spawn_with(
        bin: &Path,
        cwd: &Path,
        prompts: &Path,
        cpu: Option<usize>,
        args: &[&str],
    ) -> Server {
        use std::os::unix::process::CommandExt;
        let mut cmd = serve_command(bin, cwd, prompts, args);
        if let Some(cpu) = cpu {
            // SAFETY: between fork and exec the closure only makes one system call.
            unsafe {
                cmd.pre_exec(move || {
                    pin_thread(Some(cpu));
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn promptd serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    fn send(&mut self, msg: &Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        self.read_timed().0
    }

    /// The next message, and when its line had been read whole (before it was parsed).
    fn read_timed(&mut self) -> (Value, Instant) {
        let (line, read) = self.read_line();
        (serde_json::from_str(&line).unwrap(), read)
    }

    /// The next message's line as the server wrote it, and when it had been read whole.
    fn read_line(&mut self) -> (String, Instant) {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        let read = Instant::now();
        assert!(n > 0, "server closed stdout");
        (line, read)
    }

    /// Sends a request and returns its response's line as the server wrote it.
    fn call_raw(&mut self, method: &str, params: Value) -> String {
        self.call_line(method, params).0
    }

    /// Sends a request and waits for its response (skipping notifications).
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.call_timed(method, params).0
    }

    /// [`Server::call`], and when the response's line had been read whole.
    fn call_timed(&mut self, method: &str, params: Value) -> (Value, Instant) {
        let (_, v, read) = self.call_line(method, params);
        (v, read)
    }

    /// Sends a request and waits for its response (skipping notifications): its line as the
    /// server wrote it, the line parsed, and when it had been read whole.
    fn call_line(&mut self, method: &str, params: Value) -> (String, Value, Instant) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let (line, read) = self.read_line();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return (line, v, read);
            }
        }
    }

    fn initialize(&mut self) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    fn close(mut self) {
        drop(self.stdin);
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                panic!("server did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Pins the calling thread to `cpu`, or lets it run on every CPU again (`None`).
fn pin_thread(cpu: Option<usize>) {
    // SAFETY: `set` is a plain bit set, initialised before use; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        match cpu {
            Some(c) => libc::CPU_SET(c, &mut set),
            None => (0..libc::CPU_SETSIZE as usize).for_each(|c| libc::CPU_SET(c, &mut set)),
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

struct Stats {
    samples: Vec<Duration>,
    /// For round trips: until the answer's line was read, before the client parsed it.
    read: Option<Vec<Duration>>,
    /// CPU per call: the server's, the client's (this process's).
    cpu: Option<(Duration, Duration)>,
}

impl From<Vec<Duration>> for Stats {
    fn from(samples: Vec<Duration>) -> Stats {
        Stats {
            samples,
            read: None,
            cpu: None,
        }
    }
}

impl Stats {
    fn print(&self, name: &str) {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mean = self.samples.iter().sum::<Duration>() / self.samples.len() as u32;
        println!(
            "{name:<40} n={:<5} min={:>9.1} µs  p50={:>9.1} µs  p90={:>9.1} µs  p99={:>9.1} µs  mean={:>9.1} µs",
            self.samples.len(),
            us(pct(&self.samples, 0.0)),
            us(pct(&self.samples, 0.5)),
            us(pct(&self.samples, 0.9)),
            us(pct(&self.samples, 0.99)),
            us(mean),
        );
        if let Some(read) = &self.read {
            println!(
                "{:<40} answer read, before the client parses it: p50={:>9.1} µs  p99={:>9.1} µs",
                "",
                us(pct(read, 0.5)),
                us(pct(read, 0.99)),
            );
        }
        if let Some((server, client)) = self.cpu {
            println!(
                "{:<40} CPU per call: server {:>7.1} µs  client {:>7.1} µs",
                "",
                us(server),
                us(client),
            );
        }
    }
}

/// The `p` quantile of `samples` (nearest rank).
fn pct(samples: &[Duration], p: f64) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s[i]
}

fn time_calls(server: &mut Server, n: usize, method: &str, params: &Value) -> Stats {
    for _ in 0..n.min(200) {
        server.call(method, params.clone());
    }
    let mut samples = Vec::with_capacity(n);
    let mut read = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let (_, line_read) = server.call_timed(method, params.clone());
        samples.push(t.elapsed());
        read.push(line_read - t);
    }
    Stats {
        read: Some(read),
        ..Stats::from(samples)
    }
}

fn main() {
    let calls: usize = std::env::var("MCP_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    // No step may hang the bench: a missing notification ends it with an error.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(600));
        eprintln!("mcp bench: timed out");
        std::process::exit(2);
    });
    let bin = common::release_binary();
    let cwd = tempfile::tempdir().unwrap();
    let prompts = tempfile::tempdir().unwrap();
    let live = prompts.path().join("live.md");
    std::fs::write(&live, "---\ntitle: Live\n---\nrevision 0\n").unwrap();
    println!("binary: {}", bin.display());

    // Spawn → first answer.
    let mut spawn = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let mut s = Server::spawn(&bin, cwd.path(), prompts.path());
        s.initialize();
        spawn.push(t.elapsed());
        s.close();
    }
    Stats::from(spawn).print("spawn -> initialize answered");

    let get =
        json!({"name": "code_review", "arguments": {"target": "src/lib.rs", "max_findings": "5"}});
    let tool = json!({"name": "wit-get-prompts",
                      "arguments": {"promptName": "code_review", "args": {"target": "src/lib.rs"}}});
    let list = json!({"name": "wit-get-prompts", "arguments": {"includeContent": false}});
    // A round trip's latency on a small VM depends mostly on where the scheduler puts the two
    // processes (waking an idle vCPU costs tens of µs): measured as scheduled, then with client
    // and server on one CPU, then on two.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut placements = vec![("", None, None)];
    if cpus >= 2 {
        placements.push((", one CPU", Some(0), Some(0)));
        placements.push((", two CPUs", Some(0), Some(1)));
    }
    for (placed, client_cpu, server_cpu) in placements {
        pin_thread(client_cpu);
        let mut s = Server::spawn_on(&bin, cwd.path(), prompts.path(), server_cpu);
        s.initialize();
        time_calls(&mut s, calls, "prompts/get", &get)
            .print(&format!("prompts/get code_review{placed}"));
        time_calls(&mut s, calls, "tools/call", &tool)
            .print(&format!("wit-get-prompts (one){placed}"));
        time_calls(&mut s, calls, "tools/call", &list)
            .print(&format!("wit-get-prompts (list){placed}"));
        time_calls(&mut s, calls, "prompts/list", &json!({}))
            .print(&format!("prompts/list{placed}"));
        s.close();
        pin_thread(None);
    }
    println!("load {}", load_average());
    // What rmcp's client spends on parsing each answer, in this process: a part of its round
    // trips below that no server can take off.
    let mut s = Server::spawn(&bin, cwd.path(), prompts.path());
    s.initialize();
    let answers = [
        (
            "prompts/get code_review",
            s.call_raw("prompts/get", get.clone()),
        ),
        (
            "wit-get-prompts (one)",
            s.call_raw("tools/call", tool.clone()),
        ),
        (
            "wit-get-prompts (list)",
            s.call_raw("tools/call", list.clone()),
        ),
        ("prompts/list", s.call_raw("prompts/list", json!({}))),
    ];
    s.close();
    for (label, answer) in &answers {
        rmcp_parse(answer, calls).print(&format!("rmcp's parse alone: {label}"));
    }
    rmcp_client(&bin, cwd.path(), prompts.path(), calls);

    let mut s = Server::spawn(&bin, cwd.path(), prompts.path());
    s.initialize();

    // File save → list_changed.
    let mut saves = Vec::new();
    for i in 1..=20 {
        std::thread::sleep(Duration::from_millis(250));
        let t = Instant::now();
        std::fs::write(&live, format!("---\ntitle: Live\n---\nrevision {i}\n")).unwrap();
        loop {
            let v = s.read();
            if v["method"] == "notifications/prompts/list_changed" {
                break;
            }
        }
        saves.push(t.elapsed());
    }
    Stats::from(saves).print("file save -> list_changed");
    s.close();

    // Idle RSS with the built-in prompts only.
    let empty = tempfile::tempdir().unwrap();
    let mut s = Server::spawn(&bin, cwd.path(), empty.path());
    s.initialize();
    s.call("prompts/list", json!({}));
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "idle RSS, built-in prompts: {:.1} MB (load {})",
        rss_mb(s.child.id()),
        load_average()
    );
    s.close();

    let scales: Vec<usize> = std::env::var("MCP_BENCH_SCALE")
        .unwrap_or_else(|_| "10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .filter(|&n| n > 0)
        .collect();
    for n in scales {
        large_registry(&bin, n, calls.min(500));
    }
}

/// `calls` parses of `answer` (one line of the server's) into rmcp's client-side message type,
/// as rmcp's client parses every line it reads, after a warm-up.
fn rmcp_parse(answer: &str, calls: usize) -> Stats {
    let parse = || {
        let message: rmcp::model::ServerJsonRpcMessage =
            serde_json::from_str(std::hint::black_box(answer)).expect("rmcp parses the answer");
        std::hint::black_box(message);
    };
    for _ in 0..calls.min(200) {
        parse();
    }
    Stats::from(
        (0..calls)
            .map(|_| {
                let t = Instant::now();
                parse();
                t.elapsed()
            })
            .collect::<Vec<_>>(),
    )
}

/// The same four round trips through rmcp's own client (its typed messages and its service
/// loop, on a single-threaded tokio runtime), as an agent built on rmcp makes them: over the
/// server's stdio pipe, then over streamable HTTP on a loopback socket, with sessions and
/// `--stateless`, each with rmcp's default HTTP client (a new connection for every request)
/// and with a pooled one (keep-alive). Each sample is one awaited call, from the request's construction to its
/// parsed result.
fn rmcp_client(bin: &Path, cwd: &Path, prompts: &Path, calls: usize) {
    use rmcp::ServiceExt;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

    promptd::llm::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let cmd = serve_command(bin, cwd, prompts, &[]);
        let transport = TokioChildProcess::new(tokio::process::Command::from(cmd))
            .expect("spawn promptd serve");
        let server = transport.id().expect("the server's pid");
        let client = ().serve(transport).await.expect("initialize over stdio");
        rmcp_round_trips(&client, server, calls, "rmcp stdio").await;
        client.cancel().await.expect("close the stdio client");

        // rmcp's default HTTP client opens a connection for every request (it turns reqwest's
        // pool off); an agent may pass its own pooled client instead.
        for (label, flags, pooled) in [
            ("rmcp HTTP", &[][..], false),
            ("rmcp HTTP keep-alive", &[][..], true),
            ("rmcp HTTP stateless", &["--stateless"][..], false),
            ("rmcp HTTP stateless keep-alive", &["--stateless"][..], true),
        ] {
            let (mut server, url) = http_server(bin, cwd, prompts, flags);
            let transport = if pooled {
                StreamableHttpClientTransport::with_client(
                    reqwest::Client::new(),
                    StreamableHttpClientTransportConfig::with_uri(url),
                )
            } else {
                StreamableHttpClientTransport::from_uri(url)
            };
            let client = ().serve(transport).await.expect("initialize over HTTP");
            rmcp_round_trips(&client, server.id(), calls, label).await;
            client.cancel().await.expect("close the HTTP client");
            let _ = server.kill();
            let _ = server.wait();
        }
    });
    println!("load {}", load_average());
}

/// `prompts/get`, `wit-get-prompts` (one prompt; the listing) and `prompts/list` through an
/// rmcp client to the server with pid `server`, `calls` of each after a warm-up.
async fn rmcp_round_trips(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    server: u32,
    calls: usize,
    label: &str,
) {
    use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
    let object = |v: Value| v.as_object().unwrap().clone();
    let get = GetPromptRequestParams::new("code_review")
        .with_arguments(object(json!({"target": "src/lib.rs", "max_findings": "5"})));
    let one = CallToolRequestParams::new("wit-get-prompts").with_arguments(object(
        json!({"promptName": "code_review", "args": {"target": "src/lib.rs"}}),
    ));
    let list = CallToolRequestParams::new("wit-get-prompts")
        .with_arguments(object(json!({"includeContent": false})));

    /// `calls` awaited calls of `f` after a warm-up, with the server's and this process's CPU.
    async fn timed<F: Future<Output = ()>>(
        calls: usize,
        server: u32,
        mut f: impl FnMut() -> F,
    ) -> Stats {
        for _ in 0..calls.min(200) {
            f().await;
        }
        let cpu = || [server, std::process::id()].map(support::process::cpu_seconds_of);
        let before = cpu();
        let mut samples = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            f().await;
            samples.push(t.elapsed());
        }
        let after = cpu();
        let per_call = |i: usize| Duration::from_secs_f64((after[i] - before[i]) / calls as f64);
        Stats {
            cpu: Some((per_call(0), per_call(1))),
            ..Stats::from(samples)
        }
    }
    let ok = |what: &str, e: rmcp::ServiceError| -> ! { panic!("{label} {what}: {e}") };
    timed(calls, server, || async {
        let r = client
            .get_prompt(get.clone())
            .await
            .unwrap_or_else(|e| ok("prompts/get", e));
        assert!(!r.messages.is_empty());
    })
    .await
    .print(&format!("{label}: prompts/get code_review"));
    timed(calls, server, || async {
        let r = client
            .call_tool(one.clone())
            .await
            .unwrap_or_else(|e| ok("one prompt", e));
        assert_eq!(r.is_error, Some(false), "{r:?}");
    })
    .await
    .print(&format!("{label}: wit-get-prompts (one)"));
    timed(calls, server, || async {
        let r = client
            .call_tool(list.clone())
            .await
            .unwrap_or_else(|e| ok("listing", e));
        assert!(r.structured_content.is_some(), "{r:?}");
    })
    .await
    .print(&format!("{label}: wit-get-prompts (list)"));
    timed(calls, server, || async {
        let r = client
            .list_prompts(None)
            .await
            .unwrap_or_else(|e| ok("prompts/list", e));
        assert!(!r.prompts.is_empty());
    })
    .await
    .print(&format!("{label}: prompts/list"));
}

/// `promptd serve --http 127.0.0.1:0 FLAGS…` started, and the URL it printed.
fn http_server(bin: &Path, cwd: &Path, prompts: &Path, flags: &[&str]) -> (Child, String) {
    let mut args = vec!["--http", "127.0.0.1:0", "--no-studio"];
    args.extend_from_slice(flags);
    let mut server = serve_command(bin, cwd, prompts, &args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promptd serve --http");
    let url = format!(
        "http://{}/mcp",
        support::process::served_address(&mut server)
    );
    (server, url)
}

/// `n` generated prompts: load, serve, edit, memory.
fn large_registry(bin: &Path, n: usize, calls: usize) {
    // A listing of every prompt is about 390 bytes a prompt: the response cap is raised to fit.
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        cwd.path().join(".ado-mcp-config.json"),
        format!(
            r#"{{"limits": {{"maxResponseBytes": {}}}}}"#,
            (n * 1024).max(16 << 20)
        ),
    )
    .unwrap();
    let cwd = cwd.path();
    let dir = common::generated_registry(n);
    let listing = json!({"name": "wit-get-prompts", "arguments": {"includeContent": false}});
    // Large listings are only in structuredContent (the text copy is capped).
    let listed = |v: &Value| -> usize {
        v["result"]["structuredContent"]["data"]["totalCount"]
            .as_u64()
            .unwrap_or_else(|| panic!("no listing in {v}")) as usize
    };
    let get = json!({"name": "p000042", "arguments": {"target": "src/lib.rs"}});
    let mut init = Vec::new();
    let mut loaded = Vec::new();
    let mut full = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut s = Server::spawn(bin, cwd, dir.path());
        s.initialize();
        init.push(t.elapsed());
        // Requests for prompts wait for the load: the first answer is the load's end.
        s.call("prompts/get", get.clone());
        loaded.push(t.elapsed());
        while listed(&s.call("tools/call", listing.clone())) < n {
            std::thread::sleep(Duration::from_millis(5));
        }
        full.push(t.elapsed());
        s.close();
        // The listings parsed above are freed; glibc's allocator consolidates their chunks at a
        // later allocation, which would otherwise fall inside the next spawn's timed window
        // (a delay before its first system call, after a listing of 100,000 prompts).
        // SAFETY: malloc_trim only tidies the allocator's own free lists.
        unsafe {
            libc::malloc_trim(0);
        }
    }
    println!(
        "{n} prompts: spawn -> initialize, each run in order (the first right after the files \
         were written): {} ms",
        init.iter()
            .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Stats::from(init).print(&format!("{n} prompts: spawn -> initialize"));
    Stats::from(loaded).print(&format!("{n} prompts: spawn -> first prompts/get (loaded)"));
    Stats::from(full).print(&format!("{n} prompts: spawn -> full listing"));

    let mut s = Server::spawn(bin, cwd, dir.path());
    s.initialize();
    while listed(&s.call("tools/call", listing.clone())) < n {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(500));
    let first = rss_mb(s.child.id());
    time_calls(&mut s, calls, "prompts/get", &get).print(&format!("{n} prompts: prompts/get"));
    time_calls(&mut s, calls.min(50), "tools/call", &listing)
        .print(&format!("{n} prompts: wit-get-prompts list"));
    let mut edits = Vec::new();
    for e in 1..=20 {
        std::thread::sleep(Duration::from_millis(150));
        let file = dir
            .path()
            .join(format!("{}.md", common::generated_name((e * 7919) % n)));
        let t = Instant::now();
        std::fs::write(&file, generated_prompt(e, e)).unwrap();
        loop {
            let v = s.read();
            if v["method"] == "notifications/prompts/list_changed" {
                break;
            }
        }
        edits.push(t.elapsed());
    }
    Stats::from(edits).print(&format!("{n} prompts: edit -> list_changed"));
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_mb(s.child.id());
    println!(
        "{n} prompts: idle RSS {first:.1} MB after the load, {after:.1} MB after 20 edits ({:+.1} MB); load {}",
        after - first,
        load_average()
    );
    s.close();

    // Polling (what a folder on a network file system gets): the CPU an idle server spends per
    // poll, and the memory its stamps take.
    let every = 500;
    let mut s = Server::spawn_with(
        bin,
        cwd,
        dir.path(),
        None,
        &["--watch-poll", &every.to_string()],
    );
    s.initialize();
    while listed(&s.call("tools/call", listing.clone())) < n {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(2 * every));
    let rss = rss_mb(s.child.id());
    let idle = Duration::from_secs(10);
    let before = support::process::cpu_seconds_of(s.child.id());
    std::thread::sleep(idle);
    let spent = support::process::cpu_seconds_of(s.child.id()) - before;
    let polls = idle.as_millis() as f64 / every as f64;
    println!(
        "{n} prompts, --watch-poll {every}: {:.1} ms CPU a poll ({:.1} % of a core), idle RSS {rss:.1} MB ({:+.1} MB); load {}",
        spent * 1000.0 / polls,
        spent * 100.0 / idle.as_secs_f64(),
        rss - first,
        load_average()
    );
    s.close();
}

/// Resident memory of `pid` in MiB (VmRSS).
fn rss_mb(pid: u32) -> f64 {
    support::process::rss_of(pid).unwrap_or(0.0)
}
