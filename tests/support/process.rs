//! The real `promptd` binary as a child process: one command builder with one environment
//! policy ([`promptd`], [`promptd_at`], [`clear_env`]), a run with input on stdin, and bounded
//! runs that report the child's peak resident memory (for the hostile-input tests, which assert
//! time and memory bounds).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Every environment variable that changes what promptd (or a scanner it starts) does: its
/// own settings, the embedding model's location, gitleaks', the LLM gateway's, the log filter,
/// and what `promptd test` reads (CI mode, snapshot updates, colour). Every spawned binary
/// starts without them, so a developer's shell never leaks into a test; a test that needs one
/// sets it on the command.
pub const CLEARED_ENV: &[&str] = &[
    "PROMPTD_PROMPTS",
    "PROMPTD_CONFIG",
    "PROMPTD_NOW",
    "PROMPTD_AUTH_TOKEN",
    "PROMPTD_WATCH_POLL",
    "PROMPTD_EMBED_MODEL_DIR",
    "PROMPTD_DEPS_DIR",
    "ORT_DYLIB_PATH",
    "GITLEAKS_BIN",
    "GITLEAKS_CONFIG",
    "GITLEAKS_CONFIG_TOML",
    "LLM_BASE_URL",
    "LLM_MODEL",
    "LLM_API_KEY",
    "LLM_TIMEOUT_SECS",
    "RUST_LOG",
    "CI",
    "INSTA_UPDATE",
    "CLICOLOR_FORCE",
    "NO_COLOR",
];

/// The binary under test.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_promptd"))
}

/// `promptd` with the cleared environment; the caller adds arguments and a directory.
pub fn promptd() -> Command {
    promptd_at(bin())
}

/// Like [`promptd`], for another build of the binary at `bin` (a branch's, to compare with).
pub fn promptd_at(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    clear_env(&mut cmd);
    cmd
}

/// Removes [`CLEARED_ENV`] from `cmd`: for a command that starts promptd itself (a client
/// that spawns its server).
pub fn clear_env(cmd: &mut Command) -> &mut Command {
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `cmd`, requires success (failing with its stderr), and parses its stdout as JSON.
pub fn json_stdout(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().expect("run promptd");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Runs `cmd` to completion with `input` on its stdin, collecting both streams. The input is
/// written from a thread and a write error ignored: the child may exit before it reads (a bad
/// flag, a bad rules file), and what it printed is what the test asserts.
pub fn output_with_input(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn promptd");
    let writer = feed(&mut child, input.to_vec());
    let out = child.wait_with_output().expect("wait for promptd");
    let _ = writer.join();
    out
}

/// What a bounded run ended with.
#[derive(Debug)]
pub struct Bounded {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// Peak resident set size of the child, in MiB (its `VmHWM`, sampled).
    pub peak_rss_mib: f64,
    /// The child did not finish in time and was killed.
    pub timed_out: bool,
}

impl Bounded {
    /// Exited on its own (not killed by a signal or the timeout).
    pub fn exited(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.signal().is_none())
    }

    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Runs `cmd` to completion within `timeout` (killed after it), feeding `stdin` and collecting
/// both streams; reports the child's peak RSS.
pub fn run_bounded(mut cmd: Command, stdin: &[u8], timeout: Duration) -> Bounded {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn promptd");
    let writer = feed(&mut child, stdin.to_vec());
    let out = reader(child.stdout.take().unwrap());
    let err = reader(child.stderr.take().unwrap());
    let (status, peak_rss_mib, timed_out) = wait_bounded(&mut child, timeout);
    let elapsed = started.elapsed();
    let _ = writer.join();
    Bounded {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed,
        peak_rss_mib,
        timed_out,
    }
}

/// Writes `input` to the child's stdin from a thread and closes it; a write error (the child
/// exited without reading) is ignored.
fn feed(child: &mut Child, input: Vec<u8>) -> std::thread::JoinHandle<()> {
    let mut sin = child.stdin.take().expect("stdin piped");
    std::thread::spawn(move || {
        use std::io::Write;
        let _ = sin.write_all(&input);
    })
}

fn reader<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Waits for `child` at most `timeout` (then kills it) and reaps it. Returns (status, peak RSS
/// MiB, timed out).
///
/// The peak is the child's own `VmHWM`, sampled every 2 ms while it runs. `wait4`'s
/// `ru_maxrss` cannot be used: the child is spawned with vfork semantics, and exec records the
/// high-water mark of the memory it left, the test process's own, into the child's maximum.
pub fn wait_bounded(child: &mut Child, timeout: Duration) -> (Option<ExitStatus>, f64, bool) {
    let deadline = Instant::now() + timeout;
    let mut peak: f64 = 0.0;
    loop {
        if let Some(now) = peak_rss_of(child.id()) {
            peak = peak.max(now);
        }
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), peak, false),
            Ok(None) => {}
            Err(_) => return (None, peak, false),
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            return (child.wait().ok(), peak, true);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Writes `text` to `path` as an executable script (a stand-in for a program a test hands
/// promptd or a build step).
pub fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Current peak RSS (VmHWM) of a running process, in MiB.
pub fn peak_rss_of(pid: u32) -> Option<f64> {
    status_mib(pid, "VmHWM:")
}

/// Current RSS (VmRSS) of a running process, in MiB.
pub fn rss_of(pid: u32) -> Option<f64> {
    status_mib(pid, "VmRSS:")
}

/// A size field of `/proc/PID/status` (given in kB there), in MiB.
fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU time a running process has used so far (user + system), in clock ticks (`/proc/PID/stat`).
pub fn cpu_ticks_of(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The `host:port` a `serve --http` child printed on its piped stderr ("serving MCP at
/// http://HOST:PORT/mcp"); the rest of its stderr goes on to ours from a thread, so the server
/// never blocks on a full pipe and what it logs stays in sight. For the benches, which share
/// this module.
#[allow(dead_code)]
pub fn served_address(child: &mut Child) -> String {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("the server's stderr is piped");
    let mut stderr = std::io::BufReader::new(stderr);
    let mut line = String::new();
    let addr = loop {
        line.clear();
        let read = stderr
            .read_line(&mut line)
            .expect("read the server's stderr");
        assert!(read > 0, "serve --http exited before printing its address");
        if let Some(url) = line.split("serving MCP at http://").nth(1) {
            break url.trim().trim_end_matches("/mcp").to_owned();
        }
        eprint!("{line}");
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
    addr
}

/// [`cpu_ticks_of`] in seconds (Linux counts 100 ticks a second), 0 once the process is gone.
/// For the benches, which share this module.
#[allow(dead_code)]
pub fn cpu_seconds_of(pid: u32) -> f64 {
    cpu_ticks_of(pid).unwrap_or(0) as f64 / 100.0
}

/// The checkout's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A test tool installed by a setup script: the folder `env_var` names, else `.deps/<folder>`,
/// holding every file of `required`. Panics naming `what`, the missing files and `script` when
/// it has not run.
pub fn installed(
    env_var: &str,
    folder: &str,
    required: &[&str],
    what: &str,
    script: &str,
) -> PathBuf {
    let dir = std::env::var_os(env_var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".deps").join(folder));
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|f| !dir.join(f).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "{what} not installed in {} (missing {missing:?}): run scripts/setup (or scripts/{script})",
        dir.display()
    );
    dir
}
