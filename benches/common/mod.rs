//! What several bench binaries share: the release binary, a raw stdio JSON-RPC client, the
//! machine's load, a process's resident memory, and the generated prompts of the large-registry benches. Each bench uses a
//! part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The binary under measurement: `$PROMPTD_BIN`, else `target/release/promptd` as `cargo build
/// --release` makes it. The build runs every time (a no-op when up to date): `cargo bench` writes
/// its own build of the binary (the bench profile) to the same path, and the release build puts
/// the user's binary back.
pub fn release_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PROMPTD_BIN") {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Run in the repository, where the workspace's manifest is.
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "--bin", "promptd"])
        .current_dir(root)
        .status()
        .expect("cargo build --release");
    assert!(status.success());
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("release/promptd")
}

/// Min, median and p99 of `samples` (sorted in place), formatted in milliseconds.
pub fn summary_ms(samples: &mut [f64]) -> String {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    format!(
        "min {:.2} ms  median {:.2} ms  p99 {:.2} ms  (n={})",
        at(0.0),
        at(0.5),
        at(0.99),
        samples.len()
    )
}

/// The integer in environment variable `name`, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The name of generated prompt `i` (its file is `NAME.md`).
pub fn generated_name(i: usize) -> String {
    format!("p{i:06}")
}

/// A folder of `n` generated prompts (revision 0), named by [`generated_name`].
pub fn generated_registry(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        std::fs::write(
            dir.path().join(format!("{}.md", generated_name(i))),
            generated_prompt(i, 0),
        )
        .unwrap();
    }
    dir
}

/// The machine's load averages (1, 5, 15 minutes): a timing on a shared machine means little
/// without them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A prompt of about 1 KB: frontmatter with two arguments and a Jinja body; `revision` makes
/// an edit.
pub fn generated_prompt(i: usize, revision: usize) -> String {
    let mut body = format!(
        "---\ntitle: Generated prompt {i}\ndescription: Prompt number {i} of a large registry, revision {revision}.\narguments:\n  target: {{ type: string, required: true, description: What to work on }}\n  depth: {{ type: integer, default: 2 }}\n---\nWork on {{{{ target }}}} at depth {{{{ depth }}}}.\n"
    );
    while body.len() < 1000 {
        body.push_str(
            "Explain each step, name the files you change and why, and keep the diff small.\n",
        );
    }
    body
}

/// A raw JSON-RPC client of a server over its stdin and stdout (one message a line).
pub struct StdioClient {
    pub name: &'static str,
    pub child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    /// Spawns `cmd` with piped stdin and stdout.
    pub fn spawn(name: &'static str, mut cmd: Command) -> StdioClient {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        StdioClient {
            name,
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    pub fn send(&mut self, msg: &Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits for its response, skipping notifications and other ids.
    pub fn call(&mut self, method: &str, params: &Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "{}: closed stdout", self.name);
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{} {method}: {v}", self.name);
                return v;
            }
        }
    }

    /// `initialize` on `protocol`, then `notifications/initialized`.
    pub fn initialize(&mut self, protocol: &str) -> Value {
        let r = self.call(
            "initialize",
            &json!({"protocolVersion": protocol, "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// Closes stdin and waits briefly for the exit, then kills the process (the peer keeps
    /// running after its stdin closes: its prompt watcher holds the event loop open).
    pub fn close(mut self) {
        drop(self.stdin);
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(2) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
