//! HTTP load against the RELEASE binary: `promptd serve --http` on loopback, driven by a Rust
//! load generator (hyper HTTP/1.1 connections with keep-alive, one per simulated client) that
//! sends `prompts/get` back to back for a fixed time. Prints requests per second, latency min /
//! median / p99, the server's CPU time per request and the machine's load; the generator runs
//! on the same cores, so the throughput is what both share.
//!
//! ```sh
//! cargo build --release && cargo bench --bench http_load
//! ```
//!
//! Modes: 64 clients each with its own MCP session (the default streamable HTTP server), and
//! 64 clients against `--stateless` (no session, JSON answers); each first saturated (every
//! client sends its next request when the last is answered: the most the two cores give), then
//! paced at `HTTP_LOAD_RATE` requests per second in all (default 10,000): each client sends on
//! its own schedule and a latency counts from the request's scheduled time, so a server that
//! falls behind is charged for the wait (no coordinated omission). `HTTP_LOAD_CLIENTS` (default
//! 64), `HTTP_LOAD_SECS` (default 5 per run), `PROMPTD_BIN` (default `target/release/promptd`).
//!
//! Beside the latencies each run prints the generator's own CPU per request, how many requests
//! took over 5 ms and in how many 100 ms windows they fell (a few windows: stalls of the
//! machine, not a slow server), and the share of CPU the hypervisor stole. `HTTP_LOAD_TRACE=P`
//! also writes each request's send time and latency (ms) to `P.<mode>.<saturated|paced>`.
//!
//! Paced clients wait for their send times on timer file descriptors (nanosecond deadlines), and
//! each paced run also prints how late the generator itself sent. `HTTP_LOAD_TIMER=tokio` waits
//! with tokio's timers instead, as this bench first did: they round every deadline up to the next
//! millisecond, so requests went out late, that wait counted as latency, and
//! the requests due within one millisecond arrived together, which the server handled for less
//! CPU each than the evenly spaced arrivals of clients that are not synchronised.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;

#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod process;
}

/// The server: started with `args` and a config whose session caps admit every client from
/// one address, its address read from stderr.
fn start(bin: &Path, prompts: &Path, clients: usize, args: &[&str]) -> (Child, String) {
    let config =
        std::env::temp_dir().join(format!("promptd-http-load-{}.json", std::process::id()));
    let caps = clients.max(1) * 8;
    std::fs::write(
        &config,
        format!(r#"{{"limits": {{"maxSessions": {caps}, "maxSessionsPerPeer": {caps}}}}}"#),
    )
    .unwrap();
    let mut child = support::process::promptd_at(bin)
        .args(["--now", "2025-03-15", "--config"])
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
        .arg("--prompts")
        .arg(prompts)
        .args(args)
        .env("RUST_LOG", "promptd=info,warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promptd serve --http");
    let addr = support::process::served_address(&mut child);
    (child, addr)
}

/// A latency counted as slow (the target's p99 bound).
const SLOW: Duration = Duration::from_millis(5);

/// All CPUs' ticks so far, and those stolen by the hypervisor (the `cpu` line of /proc/stat).
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    (ticks.iter().sum(), ticks.get(7).copied().unwrap_or(0))
}

/// The share of the machine's CPU time the hypervisor stole between two readings.
fn steal_share(before: (u64, u64), after: (u64, u64)) -> f64 {
    let total = after.0.saturating_sub(before.0);
    let stolen = after.1.saturating_sub(before.1);
    if total == 0 {
        0.0
    } else {
        stolen as f64 / total as f64
    }
}

fn post(addr: &str, session: Option<&str>, body: String) -> Request<Full<Bytes>> {
    let mut r = Request::post("/mcp")
        .header("host", addr)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.body(Full::new(Bytes::from(body))).unwrap()
}

/// A wait until an instant with a timer file descriptor in tokio's reactor: the kernel's
/// high-resolution timer keeps its deadline, where a tokio timer rounds every deadline up to its
/// next millisecond tick. Paced with tokio's timers, every
/// request went out up to a millisecond after its scheduled time, that wait counted in its
/// latency, and the requests due within one tick went out together.
struct Pacer {
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    /// An instant and the same moment on `CLOCK_MONOTONIC` (the clock `Instant` reads).
    base: (Instant, Duration),
}

impl Pacer {
    fn new() -> Pacer {
        use std::os::fd::FromRawFd;
        // SAFETY: plain system calls; the descriptor is owned from here on.
        let fd = unsafe {
            let fd = libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            );
            assert!(
                fd >= 0,
                "timerfd_create: {}",
                std::io::Error::last_os_error()
            );
            std::os::fd::OwnedFd::from_raw_fd(fd)
        };
        // SAFETY: the `OwnedFd` moves into the `AsyncFd` and stays open, the same descriptor,
        // for its whole life.
        let fd = unsafe { tokio::io::unix::AsyncFd::register(fd) }
            .unwrap_or_else(|e| panic!("timerfd in the reactor: {e}"));
        Pacer {
            fd,
            base: (Instant::now(), monotonic_now()),
        }
    }

    async fn sleep_until(&self, due: Instant) {
        use std::os::fd::AsRawFd;
        let at = self.base.1 + due.saturating_duration_since(self.base.0);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: at.as_secs() as libc::time_t,
                tv_nsec: at.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is initialised; the descriptor is open. A deadline already past fires
        // at once.
        let set = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(
            set,
            0,
            "timerfd_settime: {}",
            std::io::Error::last_os_error()
        );
        loop {
            let mut ready = self.fd.readable().await.expect("timerfd readiness");
            let mut expirations = [0u8; 8];
            // SAFETY: reads 8 bytes into an 8-byte buffer.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    expirations.as_mut_ptr().cast(),
                    expirations.len(),
                )
            };
            if n == 8 {
                return;
            }
            ready.clear_ready();
        }
    }
}

/// `CLOCK_MONOTONIC` now.
fn monotonic_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// When a client sends: back to back, or one request every `every`, the first at `first`.
#[derive(Clone, Copy)]
enum Pace {
    Saturate,
    Every { first: Instant, every: Duration },
}

/// One simulated client: its own connection (and session unless `stateless`), then
/// `prompts/get` until `until` at `pace`. Returns the latencies (from the scheduled send time
/// when paced), and how late each paced request the client waited for went out.
async fn client(
    addr: String,
    stateless: bool,
    until: Instant,
    pace: Pace,
) -> (Vec<(Instant, Duration)>, Vec<Duration>) {
    let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"load","version":"0"}}}"#;
    let response = sender
        .send_request(post(&addr, None, init.into()))
        .await
        .unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    assert_eq!(response.status(), 200, "initialize refused");
    assert_eq!(
        session.is_none(),
        stateless,
        "session id with --stateless: {session:?}"
    );
    response.into_body().collect().await.unwrap();
    if let Some(s) = &session {
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let r = sender
            .send_request(post(&addr, Some(s), note.into()))
            .await
            .unwrap();
        r.into_body().collect().await.unwrap();
    }
    let mut samples = Vec::new();
    let mut late = Vec::new();
    let pacer = (matches!(pace, Pace::Every { .. })
        && std::env::var("HTTP_LOAD_TIMER").as_deref() != Ok("tokio"))
    .then(Pacer::new);
    let mut id = 1u64;
    let mut due = match pace {
        Pace::Saturate => Instant::now(),
        Pace::Every { first, .. } => first,
    };
    while due < until {
        if let Pace::Every { every, .. } = pace {
            // How late the generator itself sends: counted only where it had to wait (a
            // request due while the previous one was still out is the server's delay).
            let waits = due > Instant::now();
            match &pacer {
                Some(pacer) => pacer.sleep_until(due).await,
                None => tokio::time::sleep_until(due.into()).await,
            }
            if waits {
                late.push(due.elapsed());
            }
            due += every;
        }
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/get","params":{{"name":"greet","arguments":{{"who":"Ada"}}}}}}"#
        );
        id += 1;
        let t = match pace {
            Pace::Saturate => Instant::now(),
            Pace::Every { every, .. } => due - every,
        };
        let response = sender
            .send_request(post(&addr, session.as_deref(), body))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        samples.push((t, t.elapsed()));
        assert!(
            bytes.windows(9).any(|w| w == b"Hello Ada"),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        if let Pace::Saturate = pace {
            due = Instant::now();
        }
    }
    (samples, late)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn main() {
    let clients = common::env_usize("HTTP_LOAD_CLIENTS", 64);
    let secs = common::env_usize("HTTP_LOAD_SECS", 5) as u64;
    let rate = common::env_usize("HTTP_LOAD_RATE", 10_000);
    let bin = common::release_binary();
    assert!(
        bin.is_file(),
        "{} missing: cargo build --release",
        bin.display()
    );
    let prompts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/prompts");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "http load: {clients} clients, {secs} s per mode, {} cores, binary {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        bin.display()
    );
    for (label, stateless) in [("sessions", false), ("stateless", true)] {
        let args: &[&str] = if stateless { &["--stateless"] } else { &[] };
        let (mut child, addr) = start(&bin, &prompts, clients, args);
        let load_before = common::load_average();
        // A short warm-up, then the measured runs: saturated, and paced at `rate`.
        let every = Duration::from_secs_f64(clients as f64 / rate as f64);
        for (measured, duration, paced) in [
            (false, Duration::from_millis(500), false),
            (true, Duration::from_secs(secs), false),
            (true, Duration::from_secs(secs), true),
        ] {
            let cpu_before = support::process::cpu_seconds_of(child.id());
            let stat_before = machine_ticks();
            let own_before = support::process::cpu_seconds_of(std::process::id());
            let started = Instant::now();
            let until = started + duration;
            // Paced clients start 100 ms in (after their handshakes), spread over one interval.
            let pace = |i: usize| {
                if paced {
                    Pace::Every {
                        first: started
                            + Duration::from_millis(100)
                            + every.mul_f64(i as f64 / clients as f64),
                        every,
                    }
                } else {
                    Pace::Saturate
                }
            };
            let (timed, mut late) = runtime.block_on(async {
                let tasks: Vec<_> = (0..clients)
                    .map(|i| tokio::spawn(client(addr.clone(), stateless, until, pace(i))))
                    .collect();
                let (mut all, mut late) = (Vec::new(), Vec::new());
                for t in tasks {
                    let (samples, sent_late) = t.await.unwrap();
                    all.extend(samples);
                    late.extend(sent_late);
                }
                (all, late)
            });
            late.sort();
            let wall = started.elapsed().as_secs_f64();
            let cpu = support::process::cpu_seconds_of(child.id()) - cpu_before;
            let own = support::process::cpu_seconds_of(std::process::id()) - own_before;
            let steal = steal_share(stat_before, machine_ticks());
            if !measured {
                continue;
            }
            let mode = if paced { "paced" } else { "saturated" };
            if let Ok(path) = std::env::var("HTTP_LOAD_TRACE") {
                let mut out = String::new();
                for (t, l) in &timed {
                    out += &format!(
                        "{:.3} {:.3}\n",
                        (*t - started).as_secs_f64() * 1e3,
                        l.as_secs_f64() * 1e3
                    );
                }
                std::fs::write(format!("{path}.{label}.{mode}"), out).unwrap();
            }
            // Where the slow requests were: spread out, or bunched in a few stalls.
            let slow: Vec<Duration> = timed
                .iter()
                .filter(|(_, l)| *l > SLOW)
                .map(|(t, _)| *t - started)
                .collect();
            let mut windows: Vec<u128> = slow.iter().map(|t| t.as_millis() / 100).collect();
            windows.sort_unstable();
            windows.dedup();
            let mut all: Vec<Duration> = timed.iter().map(|(_, l)| *l).collect();
            all.sort();
            let how = if paced {
                format!("{label}, paced at {rate} req/s")
            } else {
                format!("{label}, saturated")
            };
            println!(
                "prompts/get over HTTP ({how}): {:.0} req/s ({} requests in {wall:.1} s); latency min {:.2} / median {:.2} / p99 {:.2} ms; server CPU {:.3} ms per request (generator {:.3}); {} requests over {} ms, in {} of the run's 100 ms windows; CPU stolen by the host {:.1} %; load before {load_before}, after {}",
                all.len() as f64 / wall,
                all.len(),
                pct(&all, 0.0),
                pct(&all, 0.5),
                pct(&all, 0.99),
                cpu * 1e3 / all.len() as f64,
                own * 1e3 / all.len() as f64,
                slow.len(),
                SLOW.as_millis(),
                windows.len(),
                steal * 100.0,
                common::load_average()
            );
            if paced && !late.is_empty() {
                println!(
                    "  the generator's own lateness (requests it waited to send): median {:.3} / p99 {:.3} / max {:.3} ms",
                    pct(&late, 0.5),
                    pct(&late, 0.99),
                    pct(&late, 1.0)
                );
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
