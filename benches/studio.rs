//! The studio against the RELEASE binary (`serve --http`), measured as an author meets it:
//!
//! - the render fragment (`GET /studio/render`, what the page fetches as you type) and the whole
//!   page of a prompt (its render, checks and test cases), over one buffered keep-alive
//!   connection: min / median / p99 over `STUDIO_BENCH_CALLS` requests (default 500);
//! - file save → the new text in the page's DOM, in a real headless Chromium (the page's own
//!   event stream and fetch; a `MutationObserver` stamps the moment), over
//!   `STUDIO_BENCH_EDITS` saves (default 30).
//!
//! ```sh
//! cargo build --release && cargo bench --bench studio
//! ```
//!
//! Every line ends with the machine's load.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{env_usize, load_average, release_binary, summary_ms};

#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod browser;
    #[allow(dead_code)]
    pub mod process;
    #[allow(dead_code)]
    pub mod studio;
}

/// `serve --http 127.0.0.1:0` in `dir`; returns the child and `host:port`.
fn start(dir: &std::path::Path) -> (Child, String) {
    let mut child = support::process::promptd_at(&release_binary())
        .args(["--now", "2025-03-15", "serve", "--http", "127.0.0.1:0"])
        .env("RUST_LOG", "error")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn promptd serve --http");
    let addr = support::process::served_address(&mut child);
    (child, addr)
}

/// One keep-alive HTTP/1.1 connection, answers read whole by `Content-Length`.
struct Conn {
    addr: String,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        Conn {
            addr: addr.to_string(),
            reader: BufReader::new(stream),
        }
    }

    fn get(&mut self, path: &str) -> (u16, String) {
        let request = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr);
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut length = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        (status, String::from_utf8(body).unwrap())
    }
}

fn time_requests(conn: &mut Conn, path: &str, calls: usize) -> Vec<f64> {
    for _ in 0..20 {
        assert_eq!(conn.get(path).0, 200, "{path}");
    }
    (0..calls)
        .map(|_| {
            let t = Instant::now();
            let (status, _) = conn.get(path);
            assert_eq!(status, 200);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

fn epoch_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

fn main() {
    let calls = env_usize("STUDIO_BENCH_CALLS", 500);
    let edits = env_usize("STUDIO_BENCH_EDITS", 30);
    let dir = tempfile::tempdir().unwrap();
    support::studio::write_project(dir.path());
    let (mut child, addr) = start(dir.path());

    let mut conn = Conn::open(&addr);
    let mut fragment = time_requests(
        &mut conn,
        "/studio/render?prompt=review&a.language=go&a.focus=errors",
        calls,
    );
    println!(
        "render fragment: {}  load {}",
        summary_ms(&mut fragment),
        load_average()
    );
    let mut page = time_requests(&mut conn, "/?prompt=review&a.language=go", calls / 5);
    println!(
        "prompt page (render, checks, 2 test cases): {}  load {}",
        summary_ms(&mut page),
        load_average()
    );

    let profile = tempfile::tempdir().unwrap();
    let browser = support::browser::launch(profile.path());
    let tab = browser.new_tab().unwrap();
    tab.navigate_to(&format!("http://{addr}/?prompt=review&a.language=go"))
        .unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#messages").unwrap();
    // Wait for the event stream to be open.
    support::browser::wait_for(
        &tab,
        "the event stream",
        Duration::from_secs(10),
        "return document.getElementById('live').textContent.startsWith('live')",
    );
    let path = dir.path().join("prompts/review.md");
    let mut latencies = Vec::with_capacity(edits);
    for i in 0..edits {
        let marker = format!("edit{i}x");
        support::browser::eval(
            &tab,
            &format!(
                "window.__seen = null; const m = {marker:?}; \
                 const o = new MutationObserver(() => {{ \
                   const t = document.querySelector('#messages pre.text'); \
                   if (t && t.textContent.includes(m)) {{ window.__seen = Date.now(); o.disconnect(); }} }}); \
                 o.observe(document.getElementById('output'), {{ subtree: true, childList: true, characterData: true }}); \
                 return true"
            ),
        );
        let saved = epoch_ms();
        std::fs::write(
            &path,
            support::studio::review().replace("Report at most", &format!("{marker} at most")),
        )
        .unwrap();
        let (seen, _) = support::browser::wait_for(
            &tab,
            "the edit in the page",
            Duration::from_secs(10),
            "return window.__seen",
        );
        latencies.push(seen.as_f64().unwrap() - saved);
        // Let the watcher settle before the next save.
        std::thread::sleep(Duration::from_millis(150));
    }
    println!(
        "save -> new text in Chromium's DOM: {}  load {}",
        summary_ms(&mut latencies),
        load_average()
    );
    let _ = child.kill();
    let _ = child.wait();
}
