//! An in-process OpenAI-compatible chat-completions server on 127.0.0.1 that records every
//! request, for tests of the LLM transport and enhance_prompt.

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
}

/// A running server; dropped with the test's runtime.
pub struct LlmServer {
    pub url: String,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

impl LlmServer {
    /// Starts the server on a free loopback port (call inside a tokio runtime).
    pub async fn start(replies: Vec<Reply>) -> LlmServer {
        let shared = Shared {
            replies: Arc::new(replies),
            recorded: Arc::new(Mutex::new(Vec::new())),
        };
        let recorded = shared.recorded.clone();
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        LlmServer {
            url: format!("http://{addr}/v1/chat/completions"),
            recorded,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
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
    }
}
