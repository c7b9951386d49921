//! promptd beside the server whose prompt part it replaces: the enhanced Azure DevOps MCP server
//! (TypeScript, github.com/AmeliaRose802/enhanced-ado-mcp), both over stdio on this machine,
//! serving the peer's own prompt files. A bench binary that prints numbers, not criterion.
//!
//! ```sh
//! scripts/bench-peer PEER_SOURCE_DIR      # npm ci + build of the peer, release promptd, this bench
//! PEER_DIR=…/enhanced-ado-mcp/mcp_server cargo bench --profile release --bench peer
//! ```
//!
//! `PEER_DIR` is the peer's `mcp_server` folder, built (`dist/index.js`); `PEER_NODE` the Node.js
//! binary (default `node`). The peer is started as
//! `node dist/index.js benchorg --area-path 'BenchProject\Team' --iteration-path 'BenchProject\Sprint 1'
//! --copilot-guid 00000000-0000-0000-0000-000000000001 --authentication azcli` with
//! `MCP_ENABLE_DEBUG_TOOLS=1` (its prompt tool is a debug tool) and `HOME` a temporary folder
//! holding its organization → tenant cache (`.ado_orgs.cache`) for `benchorg`: with the tenant
//! cached, the iteration path and the Copilot id given, it starts without any call to Azure
//! DevOps, and serving prompts makes none. promptd serves the same files (`--prompts
//! PEER_DIR/dist/prompts`, the copy the peer reads) with a config giving the same organization,
//! project, area and iteration path.
//!
//! One client per server, a raw newline-delimited JSON-RPC pipe: `initialize` once, then for each
//! request `MCP_BENCH_CALLS` sequential calls (default 2,000) after 200 of warm-up, the peer's
//! run and promptd's back to back: `prompts/get` of `PEER_PROMPT` (default `sprint_review`, with
//! `PEER_PROMPT_ARGS`, default `{"lookback_days": "14"}`), and the prompt tool for the same prompt
//! (`wit-get-prompts`; the peer's is named `get-prompts` since it renamed it, and the bench takes
//! whichever of the two its `tools/list` shows). Prints min / median / p99 / mean, each server's
//! CPU per call, the peer / promptd ratios and the machine's load before and after each run.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{StdioClient, load_average};
use serde_json::{Value, json};

#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod process;
}

/// The protocol version both servers speak (the peer's MCP SDK knows only this one).
const PROTOCOL: &str = "2024-11-05";
const ORG: &str = "benchorg";
const PROJECT: &str = "BenchProject";
const AREA: &str = r"BenchProject\Team";
const ITERATION: &str = r"BenchProject\Sprint 1";

/// Latencies of one run, and the server's CPU seconds over it.
struct Run {
    samples: Vec<Duration>,
    cpu: f64,
    load_before: String,
    load_after: String,
}

impl Run {
    fn at(&self, q: f64) -> Duration {
        let mut s = self.samples.clone();
        s.sort();
        s[((s.len() as f64 - 1.0) * q).round() as usize]
    }

    fn print(&self, label: &str) {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mean = self.samples.iter().sum::<Duration>() / self.samples.len() as u32;
        println!(
            "{label:<34} n={:<5} min={:>9.1} µs  median={:>9.1} µs  p99={:>9.1} µs  mean={:>9.1} µs  server CPU {:>8.1} µs/call  load {} -> {}",
            self.samples.len(),
            us(self.at(0.0)),
            us(self.at(0.5)),
            us(self.at(0.99)),
            us(mean),
            self.cpu * 1e6 / self.samples.len() as f64,
            self.load_before,
            self.load_after,
        );
    }
}

fn time_calls(client: &mut StdioClient, n: usize, method: &str, params: &Value) -> Run {
    for _ in 0..n.min(200) {
        client.call(method, params);
    }
    let load_before = load_average();
    let cpu_before = support::process::cpu_seconds_of(client.child.id());
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client.call(method, params);
        samples.push(t.elapsed());
    }
    Run {
        samples,
        cpu: support::process::cpu_seconds_of(client.child.id()) - cpu_before,
        load_before,
        load_after: load_average(),
    }
}

fn ratios(label: &str, peer: &Run, promptd: &Run) {
    let r = |q: f64| peer.at(q).as_secs_f64() / promptd.at(q).as_secs_f64();
    println!(
        "{label:<34} peer / promptd: min {:.1}x  median {:.1}x  p99 {:.1}x",
        r(0.0),
        r(0.5),
        r(0.99)
    );
}

/// The peer: `node dist/index.js` with fake Azure DevOps settings that need no network (see the
/// module doc), its stderr in `home/peer.stderr`.
fn peer_command(node: &str, peer_dir: &Path, home: &Path) -> Command {
    let refreshed_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    std::fs::write(
        home.join(".ado_orgs.cache"),
        json!({ORG: {"tenantId": "00000000-0000-0000-0000-000000000000",
                     "refreshedOn": refreshed_ms as u64}})
        .to_string(),
    )
    .unwrap();
    let mut cmd = Command::new(node);
    cmd.arg(peer_dir.join("dist/index.js"))
        .args([ORG, "--area-path", AREA, "--iteration-path", ITERATION])
        .args(["--copilot-guid", "00000000-0000-0000-0000-000000000001"])
        .args(["--authentication", "azcli"])
        .env("HOME", home)
        .env("MCP_ENABLE_DEBUG_TOOLS", "1")
        .env_remove("MCP_DEBUG")
        .current_dir(home)
        .stderr(std::fs::File::create(home.join("peer.stderr")).unwrap());
    cmd
}

/// promptd serving `prompts` with a config that gives the peer's organization, project, area
/// and iteration path; errors only on stderr.
fn promptd_command(bin: &Path, prompts: &Path, dir: &Path) -> Command {
    let config = dir.join(".ado-mcp-config.json");
    std::fs::write(
        &config,
        json!({"organization": ORG, "project": PROJECT, "areaPath": AREA,
               "iterationPath": ITERATION})
        .to_string(),
    )
    .unwrap();
    let mut cmd = support::process::promptd_at(bin);
    cmd.arg("--config")
        .arg(&config)
        .arg("--prompts")
        .arg(prompts)
        .arg("serve")
        .env("RUST_LOG", "error")
        .current_dir(dir)
        .stderr(Stdio::inherit());
    cmd
}

/// The text of a `prompts/get` answer (its messages joined), or of a tool answer.
fn answer_text(v: &Value) -> String {
    let r = &v["result"];
    if let Some(messages) = r["messages"].as_array() {
        return messages
            .iter()
            .filter_map(|m| m["content"]["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
    }
    r["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// One call, and the size of the text it answered.
fn show_answer(client: &mut StdioClient, method: &str, params: &Value, prompt: &str) {
    let v = client.call(method, params);
    let text = answer_text(&v);
    assert!(
        !text.is_empty(),
        "{} {method}: empty answer {v}",
        client.name
    );
    println!(
        "{:<8} {method} {prompt}: answer text {} bytes",
        client.name,
        text.len()
    );
}

fn main() {
    let Some(peer_dir) = std::env::var_os("PEER_DIR").map(PathBuf::from) else {
        eprintln!(
            "peer bench: set PEER_DIR to the peer's built mcp_server folder (scripts/bench-peer does)"
        );
        std::process::exit(2);
    };
    assert!(
        peer_dir.join("dist/index.js").is_file(),
        "{}: no dist/index.js (npm ci && npm run build there)",
        peer_dir.display()
    );
    let node = std::env::var("PEER_NODE").unwrap_or_else(|_| "node".into());
    let calls = common::env_usize("MCP_BENCH_CALLS", 2000);
    let prompt = std::env::var("PEER_PROMPT").unwrap_or_else(|_| "sprint_review".into());
    let prompt_args: Value = std::env::var("PEER_PROMPT_ARGS")
        .map(|s| serde_json::from_str(&s).expect("PEER_PROMPT_ARGS is a JSON object"))
        .unwrap_or_else(|_| json!({"lookback_days": "14"}));
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(1200));
        eprintln!("peer bench: timed out");
        std::process::exit(2);
    });
    let bin = common::release_binary();
    let prompts = peer_dir.join("dist/prompts");
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let node_version = Command::new(&node)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|e| format!("unknown ({e})"));
    println!(
        "peer: {} (node {node_version}); promptd: {}; prompts: {}; {} cores; load {}",
        peer_dir.display(),
        bin.display(),
        prompts.display(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average()
    );

    let t = Instant::now();
    let mut peer = StdioClient::spawn("peer", peer_command(&node, &peer_dir, home.path()));
    let init = peer.initialize(PROTOCOL);
    println!(
        "peer: spawn -> initialize answered {:.0} ms ({} {})",
        t.elapsed().as_secs_f64() * 1e3,
        init["result"]["serverInfo"]["name"],
        init["result"]["serverInfo"]["version"]
    );
    let t = Instant::now();
    let mut promptd = StdioClient::spawn("promptd", promptd_command(&bin, &prompts, work.path()));
    promptd.initialize(PROTOCOL);
    println!(
        "promptd: spawn -> initialize answered {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );

    let tools = peer.call("tools/list", &json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let peer_tool = ["wit-get-prompts", "get-prompts"]
        .into_iter()
        .find(|n| names.contains(n))
        .expect("the peer lists no prompt tool (MCP_ENABLE_DEBUG_TOOLS=1 is set)");

    let get = json!({"name": prompt, "arguments": prompt_args});
    let tool = |name: &str| json!({"name": name, "arguments": {"promptName": prompt, "args": prompt_args}});
    let (peer_tool_params, promptd_tool_params) = (tool(peer_tool), tool("wit-get-prompts"));

    // Both answer the same prompt: the sizes of what each sends back.
    show_answer(&mut peer, "prompts/get", &get, &prompt);
    show_answer(&mut promptd, "prompts/get", &get, &prompt);
    show_answer(&mut peer, "tools/call", &peer_tool_params, &prompt);
    show_answer(&mut promptd, "tools/call", &promptd_tool_params, &prompt);

    let peer_get = time_calls(&mut peer, calls, "prompts/get", &get);
    let promptd_get = time_calls(&mut promptd, calls, "prompts/get", &get);
    let peer_tool_run = time_calls(&mut peer, calls, "tools/call", &peer_tool_params);
    let promptd_tool_run = time_calls(&mut promptd, calls, "tools/call", &promptd_tool_params);
    peer_get.print(&format!("peer prompts/get {prompt}"));
    promptd_get.print(&format!("promptd prompts/get {prompt}"));
    ratios("prompts/get", &peer_get, &promptd_get);
    peer_tool_run.print(&format!("peer {peer_tool} (one)"));
    promptd_tool_run.print("promptd wit-get-prompts (one)");
    ratios("wit-get-prompts", &peer_tool_run, &promptd_tool_run);
    peer.close();
    promptd.close();
}
