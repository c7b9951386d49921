//! `promptd serve` over stdio driven with raw JSON-RPC lines (no MCP client): what a test
//! needs to send exact bytes and read the exact frames back.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::process::{peak_rss_of, promptd, wait_bounded};

/// Upper bound for one reply, and for the exit after stdin closes.
pub const STEP: Duration = Duration::from_secs(20);

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// `promptd serve` over stdio with its stdout read line by line.
pub struct StdioServer {
    pub child: Child,
    /// Taken by a test that writes from a thread of its own, and put back.
    pub stdin: Option<ChildStdin>,
    /// stdout, line by line.
    pub lines: mpsc::Receiver<String>,
    /// The server's working directory.
    pub cwd: tempfile::TempDir,
}

impl StdioServer {
    pub fn start() -> StdioServer {
        StdioServer::start_with_config(None)
    }

    /// With `config` as the project config file.
    pub fn start_with_config(config: Option<&str>) -> StdioServer {
        StdioServer::start_with(config, &[])
    }

    /// With `config` as the project config file and `env` set.
    pub fn start_with(config: Option<&str>, env: &[(&str, &str)]) -> StdioServer {
        StdioServer::spawn(config, env, &[])
    }

    /// `promptd serve FLAGS...`.
    pub fn start_with_flags(flags: &[&str]) -> StdioServer {
        StdioServer::spawn(None, &[], flags)
    }

    fn spawn(config: Option<&str>, env: &[(&str, &str)], flags: &[&str]) -> StdioServer {
        let cwd = tempfile::tempdir().unwrap();
        if let Some(config) = config {
            std::fs::write(cwd.path().join(".ado-mcp-config.json"), config).unwrap();
        }
        let mut cmd = promptd();
        cmd.envs(env.iter().copied());
        cmd.arg("serve")
            .args(flags)
            .current_dir(cwd.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn promptd serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioServer {
            child,
            stdin,
            lines,
            cwd,
        }
    }

    pub fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next frame on stdout.
    pub fn reply(&self, what: &str) -> Value {
        let line = self
            .lines
            .recv_timeout(STEP)
            .unwrap_or_else(|_| panic!("{what}: no reply within {STEP:?}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {line}"))
    }

    pub fn initialize(&mut self) {
        self.send(INIT.as_bytes());
        let reply = self.reply("initialize");
        assert_eq!(reply["id"], "init", "{reply}");
        assert_eq!(reply["result"]["serverInfo"]["name"], "promptd", "{reply}");
        self.send(INITIALIZED.as_bytes());
    }

    /// A ping is answered: the server still serves.
    pub fn still_serves(&mut self, id: u64) {
        self.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes());
        let reply = self.reply("ping after hostile input");
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply.get("result").is_some(), "{reply}");
    }

    pub fn peak_rss_mib(&self) -> f64 {
        peak_rss_of(self.child.id()).unwrap_or(0.0)
    }

    /// Closes stdin; the server exits 0.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let (status, _, timed_out) = wait_bounded(&mut self.child, STEP);
        assert!(!timed_out, "promptd did not exit after stdin closed");
        assert!(
            status.is_some_and(|s| s.success()),
            "exit status {status:?}"
        );
    }
}
