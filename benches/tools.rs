//! The cost of a tool definition's call over its HTTP target's own latency, against the RELEASE
//! binary over stdio (a bench binary that prints numbers, not criterion).
//!
//! ```sh
//! cargo build --release && cargo bench --bench tools
//! PROMPTD_BIN=/path/to/promptd cargo bench --bench tools   # that binary, nothing built
//! ```
//!
//! A loopback HTTP/1.1 target in this process answers `GET /item/{id}` with a small JSON body
//! (keep-alive, a thread per connection). Measured, `TOOLS_BENCH_CALLS` each (default 2,000)
//! after a warm-up, min / median / p99 in µs:
//! - the target alone: this process's own keep-alive request and answer;
//! - `tools/call` of an `http` definition for that URL (raw newline-delimited JSON-RPC over the
//!   server's stdin and stdout): input checked, URL filled, request, answer guarded, result;
//! - `tools/call` of an `echoTool` definition: the same round trip without HTTP;
//! - the overhead: the `http` call's median minus the target's, and minus the echo call's
//!   (what executing the request adds to an MCP tool call). The line ends with the load.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use common::{StdioClient, env_usize, load_average};
use serde_json::{Value, json};

#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod process;
}

/// Starts the target; returns its port.
fn start_target() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer_all(stream));
        }
    });
    port
}

/// Answers every request of one keep-alive connection.
fn answer_all(stream: TcpStream) {
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut first = String::new();
        if reader.read_line(&mut first).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((n, v)) = line.split_once(':')
                && n.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let target = first.split(' ').nth(1).unwrap_or("/");
        let id = target.rsplit('/').next().unwrap_or("");
        let body = json!({"id": id, "ok": true}).to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// One keep-alive request to the target from this process.
fn direct(reader: &mut BufReader<TcpStream>, writer: &mut TcpStream, id: usize) {
    let request = format!("GET /item/{id} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    writer.write_all(request.as_bytes()).unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some((n, v)) = line.split_once(':')
            && n.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
}

fn summary(samples: &mut [f64]) -> (f64, String) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (
        at(0.5),
        format!(
            "min {:.1}  median {:.1}  p99 {:.1} µs (n={})",
            at(0.0),
            at(0.5),
            at(0.99),
            samples.len()
        ),
    )
}

fn definition(name: &str, execution: Value) -> String {
    let schema =
        json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]});
    let mut file =
        json!({"toolName": name, "description": "bench", "inputSchema": schema.to_string()});
    file.as_object_mut()
        .unwrap()
        .extend(execution.as_object().unwrap().clone());
    file.to_string()
}

fn main() {
    let calls = env_usize("TOOLS_BENCH_CALLS", 2000);
    let bin = common::release_binary();
    let port = start_target();

    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    for i in 0..200 {
        direct(&mut reader, &mut writer, i);
    }
    let mut target: Vec<f64> = (0..calls)
        .map(|i| {
            let t = Instant::now();
            direct(&mut reader, &mut writer, i);
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join(".promptd/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let url = format!("http://127.0.0.1:{port}/item/{{id}}");
    std::fs::write(
        tools.join("item.json"),
        definition(
            "item",
            json!({"executionType": "http", "executionDetails": {"url": url, "method": "GET"}}),
        ),
    )
    .unwrap();
    std::fs::write(
        tools.join("echo.json"),
        definition("echo", json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": "echoTool"}})),
    )
    .unwrap();
    let config = json!({"tools": {"http": {"allowedHosts": ["127.0.0.1"]}}});
    std::fs::write(dir.path().join(".ado-mcp-config.json"), config.to_string()).unwrap();

    let mut cmd = support::process::promptd_at(&bin);
    cmd.args(["serve", "--no-watch"])
        .env("RUST_LOG", "error")
        .current_dir(dir.path());
    let mut server = StdioClient::spawn("promptd", cmd);
    server.initialize("2025-06-18");
    let mut timed = |name: &str| -> Vec<f64> {
        let call = |s: &mut StdioClient, i: usize| {
            let answer = s.call(
                "tools/call",
                &json!({"name": name, "arguments": {"id": i.to_string()}}),
            );
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        };
        for i in 0..200 {
            call(&mut server, i);
        }
        (0..calls)
            .map(|i| {
                let t = Instant::now();
                call(&mut server, i);
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect()
    };
    let mut http = timed("item");
    let mut echo = timed("echo");
    let (t, target_line) = summary(&mut target);
    let (h, http_line) = summary(&mut http);
    let (e, echo_line) = summary(&mut echo);
    println!("target alone (keep-alive GET)      {target_line}");
    println!("tools/call http definition         {http_line}");
    println!("tools/call echoTool definition     {echo_line}");
    println!(
        "overhead over the target's median: {:.1} µs; over the echo call's: {:.1} µs; load {}",
        h - t,
        h - e,
        load_average()
    );
    server.close();
}
