//! A loopback HTTP/1.1 server the tool-definition tests call: it answers each request by its
//! path and records what it received (method, raw target, headers, body). Paths:
//! `/slow` (answers after 3 s), `/drip` (a body sent one byte every 200 ms), `/big/N` (a body of
//! N bytes), `/redirect/N` (N redirects, then the record), `/to/URL` (a redirect to URL),
//! `/status/N` (that status), `/text/T` (T as `text/plain`), `/fail/T` (T with status 500);
//! anything else: the record as JSON.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The running server; it stops with the test's runtime.
pub struct ToolTarget {
    pub port: u16,
    pub received: Arc<Mutex<Vec<Received>>>,
}

impl ToolTarget {
    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn last(&self) -> Received {
        self.received
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a request")
    }
}

/// Starts the server on a free loopback port.
pub async fn start() -> ToolTarget {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let received: Arc<Mutex<Vec<Received>>> = Arc::default();
    let log = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, log.clone(), port));
        }
    });
    ToolTarget { port, received }
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Vec<Received>>>, port: u16) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let first: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    let (method, target) = (
        first[0].to_string(),
        first.get(1).unwrap_or(&"").to_string(),
    );
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let record = Received {
        method,
        target: target.clone(),
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    };
    log.lock().unwrap().push(record.clone());
    let path = target.split('?').next().unwrap_or_default().to_string();
    let json_of = |r: &Received| {
        json!({
            "method": r.method,
            "target": r.target,
            "body": serde_json::from_str::<Value>(&r.body).unwrap_or(Value::String(r.body.clone())),
        })
        .to_string()
    };
    if path == "/slow" {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let _ = respond(&mut stream, 200, "application/json", "{}", &[]).await;
    } else if path == "/drip" {
        let _ = stream
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\n",
            )
            .await;
        for _ in 0..100 {
            if stream.write_all(b"x").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    } else if let Some(n) = path.strip_prefix("/big/") {
        let body = "a".repeat(n.parse().unwrap_or(0));
        let _ = respond(&mut stream, 200, "text/plain", &body, &[]).await;
    } else if let Some(n) = path.strip_prefix("/redirect/") {
        let n: u32 = n.parse().unwrap_or(0);
        if n == 0 {
            let _ = respond(&mut stream, 200, "application/json", &json_of(&record), &[]).await;
        } else {
            let to = format!("http://127.0.0.1:{port}/redirect/{}", n - 1);
            let _ = respond(&mut stream, 302, "text/plain", "", &[("location", &to)]).await;
        }
    } else if let Some(to) = target.strip_prefix("/to/") {
        let to = percent_encoding::percent_decode_str(to)
            .decode_utf8_lossy()
            .to_string();
        let _ = respond(&mut stream, 302, "text/plain", "", &[("location", &to)]).await;
    } else if let Some(code) = path.strip_prefix("/status/") {
        let code = code.parse().unwrap_or(500);
        let _ = respond(&mut stream, code, "text/plain", "nope", &[]).await;
    } else if let Some(text) = target.strip_prefix("/fail/") {
        let text = percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .to_string();
        let _ = respond(&mut stream, 500, "text/plain", &text, &[]).await;
    } else if let Some(text) = target.strip_prefix("/text/") {
        let text = percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .to_string();
        let _ = respond(&mut stream, 200, "text/plain", &text, &[]).await;
    } else {
        let _ = respond(&mut stream, 200, "application/json", &json_of(&record), &[]).await;
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (n, v) in extra {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
