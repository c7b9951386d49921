//! The LLM transport against a local OpenAI-compatible server that records requests.

use crate::support;

use std::time::{Duration, Instant};

use promptd::llm::{ChatClient, LlmConfig, LlmError};
use support::llm_server::{LlmServer, Reply};

fn client(url: &str, timeout: Duration) -> ChatClient {
    ChatClient::new(LlmConfig {
        url: url.to_string(),
        model: "test-model".into(),
        api_key: Some("sk-test-not-a-secret".into()),
        timeout,
        max_response_bytes: promptd::limits::Limits::default().max_llm_response_bytes,
    })
}

#[tokio::test]
async fn sends_model_sampling_messages_cache_hint_and_auth() {
    let server = LlmServer::start(vec![Reply::Answer("rewritten".into())]).await;
    let answer = client(&server.url, Duration::from_secs(5))
        .complete("SYSTEM TEXT", "user words")
        .await
        .unwrap();
    assert_eq!(answer, "rewritten");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    assert_eq!(
        reqs[0].authorization.as_deref(),
        Some("Bearer sk-test-not-a-secret")
    );
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"][0]["text"], "SYSTEM TEXT");
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["messages"][1]["content"], "user words");
}

#[tokio::test]
async fn retries_once_on_429_honouring_retry_after() {
    let server = LlmServer::start(vec![
        Reply::Status(429, Some(1)),
        Reply::Answer("ok".into()),
    ])
    .await;
    let start = Instant::now();
    let answer = client(&server.url, Duration::from_secs(10))
        .complete("s", "u")
        .await
        .unwrap();
    assert_eq!(answer, "ok");
    assert_eq!(server.requests().len(), 2);
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured"
    );
}

#[tokio::test]
async fn a_persistent_500_fails_after_one_retry() {
    let server = LlmServer::start(vec![Reply::Status(500, None)]).await;
    let err = client(&server.url, Duration::from_secs(10))
        .complete("s", "u")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 500, .. }), "{err}");
    assert_eq!(server.requests().len(), 2, "exactly one retry");
}

#[tokio::test]
async fn a_400_is_not_retried() {
    let server = LlmServer::start(vec![Reply::Status(400, None)]).await;
    let err = client(&server.url, Duration::from_secs(10))
        .complete("s", "u")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 400, .. }));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn times_out_within_the_deadline() {
    let server = LlmServer::start(vec![Reply::Slow(Duration::from_secs(10), "late".into())]).await;
    let start = Instant::now();
    let err = client(&server.url, Duration::from_millis(500))
        .complete("s", "u")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_)), "{err}");
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn garbage_is_a_malformed_answer() {
    let server = LlmServer::start(vec![Reply::Garbage]).await;
    let err = client(&server.url, Duration::from_secs(5))
        .complete("s", "u")
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Malformed(_)), "{err}");
}

#[tokio::test]
async fn an_unreachable_gateway_is_a_transport_error() {
    let err = client(
        "http://127.0.0.1:9/v1/chat/completions",
        Duration::from_secs(5),
    )
    .complete("s", "u")
    .await
    .unwrap_err();
    assert!(
        matches!(err, LlmError::Transport(_) | LlmError::Timeout(_)),
        "{err}"
    );
}
