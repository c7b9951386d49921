//! An in-process OpenAI-compatible chat-completions server on 127.0.0.1 that records every
//! request, for tests of the LLM transport, enhance_prompt and runs. It answers with one JSON
//! completion, or streams server-sent events as OpenAI does ([`Reply::Stream`]), noting when
//! each stream's first byte was sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

/// What the server answers, per request in order (the last one repeats).
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with this assistant text.
    Answer(String),
    /// This status with a small body, and an optional Retry-After (seconds).
    Status(u16, Option<u32>),
    /// Sleep this long, then answer.
    Slow(Duration, String),
    /// 200 with a body that is not a chat completion.
    Garbage,
    /// 200 with a chat completion whose answer is this many bytes long.
    Huge(usize),
    /// 200 with `text/event-stream`: one chunk per piece, `gap` apart, then a usage chunk
    /// (`usage`: prompt and completion tokens) and `[DONE]`.
    Stream {
        pieces: Vec<String>,
        gap: Duration,
        model: String,
        usage: (u64, u64),
    },
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub authorization: Option<String>,
    pub body: serde_json::Value,
}

#[derive(Clone)]
struct Shared {
    replies: Arc<Vec<Reply>>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    first_bytes: Arc<Mutex<Vec<f64>>>,
}

/// A running server; dropped with the test's runtime.
pub struct LlmServer {
    pub url: String,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    first_bytes: Arc<Mutex<Vec<f64>>>,
}

/// Now, in milliseconds since the Unix epoch (the clock a page's `performance.timeOrigin +
/// performance.now()` reads).
pub fn epoch_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

impl LlmServer {
    /// Starts the server on a free loopback port (call inside a tokio runtime).
    pub async fn start(replies: Vec<Reply>) -> LlmServer {
        let shared = Shared {
            replies: Arc::new(replies),
            recorded: Arc::new(Mutex::new(Vec::new())),
            first_bytes: Arc::new(Mutex::new(Vec::new())),
        };
        let recorded = shared.recorded.clone();
        let first_bytes = shared.first_bytes.clone();
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        LlmServer {
            url: format!("http://{addr}/v1/chat/completions"),
            recorded,
            first_bytes,
        }
    }

    /// When each streamed answer's first chunk was sent ([`epoch_ms`]), in order.
    pub fn first_bytes(&self) -> Vec<f64> {
        self.first_bytes.lock().unwrap().clone()
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }

    /// The text of the first message of each request received, in order (a run sends a
    /// prompt's render as one plain-text message).
    pub fn first_message_texts(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| {
                r.body["messages"][0]["content"]
                    .as_str()
                    .expect("a plain-text first message")
                    .to_string()
            })
            .collect()
    }
}

/// A chat-completions body with this assistant text.
pub fn completion(text: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
    })
    .to_string()
}

async fn handle(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let index = {
        let mut rec = s.recorded.lock().unwrap();
        rec.push(Recorded {
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        });
        rec.len() - 1
    };
    let reply = s.replies[index.min(s.replies.len() - 1)].clone();
    match reply {
        Reply::Answer(text) => (StatusCode::OK, completion(&text)).into_response(),
        Reply::Status(code, retry_after) => {
            let mut resp =
                (StatusCode::from_u16(code).unwrap(), "upstream says no").into_response();
            if let Some(s) = retry_after {
                resp.headers_mut()
                    .insert("retry-after", s.to_string().parse().unwrap());
            }
            resp
        }
        Reply::Slow(d, text) => {
            tokio::time::sleep(d).await;
            (StatusCode::OK, completion(&text)).into_response()
        }
        Reply::Garbage => (StatusCode::OK, "<html>proxy error page</html>").into_response(),
        Reply::Huge(n) => (StatusCode::OK, completion(&"x".repeat(n))).into_response(),
        Reply::Stream {
            pieces,
            gap,
            model,
            usage,
        } => {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
            let first_bytes = s.first_bytes.clone();
            tokio::spawn(async move {
                for (i, piece) in pieces.iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    let chunk = serde_json::json!({
                        "id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
                        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]
                    });
                    if i == 0 {
                        first_bytes.lock().unwrap().push(epoch_ms());
                    }
                    if tx.send(Ok(format!("data: {chunk}\n\n"))).await.is_err() {
                        return;
                    }
                }
                let last = serde_json::json!({
                    "id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1, "total_tokens": usage.0 + usage.1}
                });
                let _ = tx.send(Ok(format!("data: {last}\n\n"))).await;
                let _ = tx.send(Ok("data: [DONE]\n\n".to_string())).await;
            });
            let body =
                axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
            (
                StatusCode::OK,
                [("content-type", "text/event-stream")],
                body,
            )
                .into_response()
        }
    }
}
