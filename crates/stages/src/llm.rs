//! The LLM transport: one chat-completions call to any OpenAI-compatible gateway.
//!
//! Configuration comes from `LLM_BASE_URL` (the full chat-completions URL, e.g. a LiteLLM
//! gateway's `/v1/chat/completions`), `LLM_MODEL` and `LLM_API_KEY` (sent as a Bearer token).
//! The request carries the rendered template as the system message, with a prompt-cache hint
//! (`cache_control: {type: "ephemeral"}`) on its content part, and the user's text as the user
//! message. A call has an overall deadline (default 45 s) and retries once on 429 or 5xx,
//! honouring `Retry-After` within the deadline. Callers decide what a failure means; this module
//! only reports it.
//!
//! [`ChatClient::stream`] sends a prompt's own messages (a run) with `stream: true` and hands
//! each piece of the answer to the caller as it arrives (server-sent events, as OpenAI streams;
//! a gateway that answers with one JSON completion instead is read whole). A streamed call has
//! the same deadline and response cap, and is not retried: a part of the answer may already be
//! shown.

use std::time::{Duration, Instant};

use backon::{ConstantBuilder, Retryable};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Default overall deadline of one call (the MCP tool must answer within 60 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(45);
/// Sampling temperature of rewrites.
pub const TEMPERATURE: f64 = 0.2;
/// Upper bound on the answer's length.
pub const MAX_TOKENS: u32 = 1000;

/// Where and how to call the model.
#[derive(Clone)]
pub struct LlmConfig {
    /// Full chat-completions URL.
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    /// Largest response body read (`limits.maxLlmResponseBytes`); a larger one is a failure.
    pub max_response_bytes: usize,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("LlmConfig")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl LlmConfig {
    /// Reads `LLM_BASE_URL`, `LLM_MODEL`, `LLM_API_KEY` and `LLM_TIMEOUT_SECS`; `None` when the
    /// URL or the model is missing (the LLM is "not configured"). The response bound is the
    /// default of `limits.maxLlmResponseBytes`.
    pub fn from_env() -> Option<LlmConfig> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let timeout = get("LLM_TIMEOUT_SECS")
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        Some(LlmConfig {
            url: get("LLM_BASE_URL")?,
            model: get("LLM_MODEL")?,
            api_key: get("LLM_API_KEY"),
            timeout,
            max_response_bytes: promptd_base::limits::Limits::default().max_llm_response_bytes,
        })
    }
}

/// One chat message of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// What a run asks of the model; `None` leaves a setting to the client's configuration
/// (the model) or the gateway's default (the others).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// The token counts a gateway reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// A streamed answer.
#[derive(Debug, Clone)]
pub struct StreamedAnswer {
    pub text: String,
    /// The model that answered (as the gateway names it), else the one asked for.
    pub model: String,
    pub usage: Option<Usage>,
    /// From sending the request to the first byte of the answer's body.
    pub first_byte: Duration,
    /// From sending the request to the end of the answer.
    pub total: Duration,
}

/// Why a call did not produce an answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("LLM call timed out after {0:.1}s")]
    Timeout(f64),
    #[error("LLM gateway answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("cannot reach the LLM gateway: {0}")]
    Transport(String),
    #[error("malformed LLM answer: {0}")]
    Malformed(String),
    #[error("LLM answer larger than {0} bytes (limits.maxLlmResponseBytes)")]
    TooLarge(usize),
}

impl LlmError {
    fn retryable(&self) -> bool {
        matches!(self, LlmError::Http { status, .. } if *status == 429 || *status >= 500)
    }
}

/// One attempt's failure, with the server's `Retry-After` if any.
#[derive(Debug)]
struct Attempt {
    error: LlmError,
    retry_after: Option<Duration>,
}

/// Makes ring the process's TLS crypto provider: reqwest is built without a default one, and
/// every HTTPS client of the process (ours, and any other built on reqwest) needs one installed
/// before it is built. Installing again, or after another provider, changes nothing.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A chat-completions client.
#[derive(Debug, Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    config: LlmConfig,
}

impl ChatClient {
    pub fn new(config: LlmConfig) -> ChatClient {
        install_tls_provider();
        ChatClient {
            http: reqwest::Client::new(),
            config,
        }
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The same client (sharing its connections) with another cap on the answer's size.
    pub fn with_max_response_bytes(mut self, max: usize) -> ChatClient {
        self.config.max_response_bytes = max;
        self
    }

    /// The JSON body sent for a system + user exchange.
    pub fn request_body(&self, system: &str, user: &str) -> Value {
        json!({
            "model": self.config.model,
            "temperature": TEMPERATURE,
            "max_tokens": MAX_TOKENS,
            "messages": [
                {
                    "role": "system",
                    "content": [{
                        "type": "text",
                        "text": system,
                        "cache_control": {"type": "ephemeral"}
                    }]
                },
                {"role": "user", "content": user}
            ]
        })
    }

    /// Sends the exchange and returns the assistant's text.
    pub async fn complete(&self, system: &str, user: &str) -> Result<String, LlmError> {
        let body = self.request_body(system, user);
        let deadline = Instant::now() + self.config.timeout;
        let attempt = || self.attempt(&body, deadline);
        let call = attempt
            .retry(
                ConstantBuilder::default()
                    .with_delay(Duration::from_millis(500))
                    .with_max_times(1),
            )
            .sleep(tokio::time::sleep)
            .when(|a: &Attempt| a.error.retryable())
            // Honour Retry-After, but never sleep past the deadline.
            .adjust(move |a: &Attempt, d| {
                let wait = a.retry_after.or(d)?;
                let left = deadline.saturating_duration_since(Instant::now());
                (wait < left).then_some(wait)
            })
            .notify(|a: &Attempt, d| {
                tracing::warn!("{}; retrying in {:.1}s", a.error, d.as_secs_f64())
            });
        match tokio::time::timeout(self.config.timeout, call).await {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(a)) => Err(a.error),
            Err(_) => Err(LlmError::Timeout(self.config.timeout.as_secs_f64())),
        }
    }

    /// The model a run with `settings` asks for.
    pub fn model_for<'a>(&'a self, settings: &'a ModelSettings) -> &'a str {
        settings.model.as_deref().unwrap_or(&self.config.model)
    }

    /// The JSON body of a streamed run of `messages`.
    pub fn stream_body(&self, messages: &[ChatMessage], settings: &ModelSettings) -> Value {
        let mut body = json!({
            "model": self.model_for(settings),
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": messages,
        });
        if let Some(t) = settings.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = settings.max_tokens {
            body["max_tokens"] = json!(m);
        }
        body
    }

    /// Sends `messages` and streams the answer: `on_text` gets each piece as it arrives.
    pub async fn stream(
        &self,
        messages: &[ChatMessage],
        settings: &ModelSettings,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamedAnswer, LlmError> {
        let body = self.stream_body(messages, settings);
        let timeout = self.config.timeout;
        match tokio::time::timeout(timeout, self.stream_attempt(&body, settings, on_text)).await {
            Ok(done) => done,
            Err(_) => Err(LlmError::Timeout(timeout.as_secs_f64())),
        }
    }

    async fn stream_attempt(
        &self,
        body: &Value,
        settings: &ModelSettings,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamedAnswer, LlmError> {
        let started = Instant::now();
        let mut resp = self.post(body, None).await?;
        let limit = self.config.max_response_bytes;
        let status = resp.status();
        if !status.is_success() {
            return Err(http_failure(status, read_bounded(resp, limit).await));
        }
        let events = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut answer = StreamedAnswer {
            text: String::new(),
            model: self.model_for(settings).to_string(),
            usage: None,
            first_byte: Duration::ZERO,
            total: Duration::ZERO,
        };
        if !events {
            let bytes = read_bounded(resp, limit).await?;
            answer.first_byte = started.elapsed();
            let body = String::from_utf8_lossy(&bytes);
            answer.text = parse_answer(&body)?;
            let v: Value = serde_json::from_str(&body).unwrap_or_default();
            answer.usage = usage_of(&v);
            if let Some(m) = v["model"].as_str().filter(|m| !m.is_empty()) {
                answer.model = m.to_string();
            }
            on_text(&answer.text);
            answer.total = started.elapsed();
            return Ok(answer);
        }
        let mut read = 0usize;
        let mut pending: Vec<u8> = Vec::new();
        let mut first = true;
        'body: while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| LlmError::Transport(e.to_string()))?
        {
            if first {
                answer.first_byte = started.elapsed();
                first = false;
            }
            read += chunk.len();
            if read > limit {
                return Err(LlmError::TooLarge(limit));
            }
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                match stream_line(line.trim_end_matches(['\n', '\r']))? {
                    StreamLine::Done => break 'body,
                    StreamLine::Nothing => {}
                    StreamLine::Chunk(v) => {
                        if let Some(m) = v["model"].as_str().filter(|m| !m.is_empty()) {
                            answer.model = m.to_string();
                        }
                        if let Some(u) = usage_of(&v) {
                            answer.usage = Some(u);
                        }
                        if let Some(text) = v["choices"][0]["delta"]["content"].as_str()
                            && !text.is_empty()
                        {
                            answer.text.push_str(text);
                            on_text(text);
                        }
                    }
                }
            }
        }
        if answer.text.trim().is_empty() {
            return Err(LlmError::Malformed("empty answer".into()));
        }
        answer.total = started.elapsed();
        Ok(answer)
    }

    async fn attempt(&self, body: &Value, deadline: Instant) -> Result<String, Attempt> {
        let fail = |error| Attempt {
            error,
            retry_after: None,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let resp = self.post(body, Some(left)).await.map_err(fail)?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let body = read_bounded(resp, self.config.max_response_bytes).await;
        if !status.is_success() {
            return Err(Attempt {
                error: http_failure(status, body),
                retry_after,
            });
        }
        let body = body.map_err(fail)?;
        parse_answer(&String::from_utf8_lossy(&body)).map_err(fail)
    }

    /// Posts `body` to the endpoint with the API key (within `timeout` when given); a request
    /// that cannot be sent is a timeout or a transport error.
    async fn post(
        &self,
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, LlmError> {
        let mut req = self.http.post(&self.config.url).json(body);
        if let Some(t) = timeout {
            req = req.timeout(t);
        }
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key);
        }
        req.send().await.map_err(|e| {
            if e.is_timeout() {
                LlmError::Timeout(self.config.timeout.as_secs_f64())
            } else {
                LlmError::Transport(e.without_url().to_string())
            }
        })
    }
}

/// The error of an answer with a failure `status`, quoting an excerpt of its `body` (or why the
/// body could not be read).
fn http_failure(status: reqwest::StatusCode, body: Result<Vec<u8>, LlmError>) -> LlmError {
    let body = match body {
        Ok(bytes) => excerpt(&String::from_utf8_lossy(&bytes)),
        Err(e) => e.to_string(),
    };
    LlmError::Http {
        status: status.as_u16(),
        body,
    }
}

/// The response body, read chunk by chunk with a running total: never more than `limit` bytes
/// are held.
async fn read_bounded(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, LlmError> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(LlmError::TooLarge(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| LlmError::Transport(e.to_string()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(LlmError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The assistant text of a chat-completions response (string or content-part array).
pub fn parse_answer(body: &str) -> Result<String, LlmError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| LlmError::Malformed(format!("not JSON ({e}): {}", excerpt(body))))?;
    let content = &v["choices"][0]["message"]["content"];
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => {
            return Err(LlmError::Malformed(format!(
                "no choices[0].message.content: {}",
                excerpt(body)
            )));
        }
    };
    if text.trim().is_empty() {
        return Err(LlmError::Malformed("empty answer".into()));
    }
    Ok(text)
}

/// One line of a server-sent event stream of chat-completion chunks.
enum StreamLine {
    /// A comment, an event name, a blank line.
    Nothing,
    /// `data: [DONE]`.
    Done,
    /// `data: {…}`.
    Chunk(Value),
}

fn stream_line(line: &str) -> Result<StreamLine, LlmError> {
    let Some(data) = line.strip_prefix("data:") else {
        return Ok(StreamLine::Nothing);
    };
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(StreamLine::Done);
    }
    if data.is_empty() {
        return Ok(StreamLine::Nothing);
    }
    let v: Value = serde_json::from_str(data).map_err(|e| {
        LlmError::Malformed(format!("stream chunk not JSON ({e}): {}", excerpt(data)))
    })?;
    if let Some(message) = v["error"]["message"].as_str() {
        return Err(LlmError::Malformed(format!(
            "the gateway stopped the stream: {message}"
        )));
    }
    Ok(StreamLine::Chunk(v))
}

/// The `usage` of a completion or of a stream's last chunk.
fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    Some(Usage {
        prompt_tokens: u["prompt_tokens"].as_u64()?,
        completion_tokens: u["completion_tokens"].as_u64()?,
    })
}

fn excerpt(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_lines_are_chunks_comments_or_the_end() {
        assert!(matches!(
            stream_line(": keep-alive"),
            Ok(StreamLine::Nothing)
        ));
        assert!(matches!(stream_line("event: x"), Ok(StreamLine::Nothing)));
        assert!(matches!(stream_line("data: [DONE]"), Ok(StreamLine::Done)));
        let Ok(StreamLine::Chunk(v)) =
            stream_line(r#"data: {"choices":[{"delta":{"content":"Hi"}}]}"#)
        else {
            panic!("a chunk")
        };
        assert_eq!(v["choices"][0]["delta"]["content"], "Hi");
        assert!(stream_line("data: {oops").is_err());
        assert!(stream_line(r#"data: {"error":{"message":"overloaded"}}"#).is_err());
        let u =
            usage_of(&serde_json::json!({"usage": {"prompt_tokens": 3, "completion_tokens": 5}}));
        assert_eq!(
            u,
            Some(Usage {
                prompt_tokens: 3,
                completion_tokens: 5
            })
        );
    }

    #[test]
    fn answers_as_string_or_parts() {
        let s = r#"{"choices":[{"message":{"role":"assistant","content":"hi"}}]}"#;
        assert_eq!(parse_answer(s).unwrap(), "hi");
        let p = r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#;
        assert_eq!(parse_answer(p).unwrap(), "ab");
        assert!(matches!(
            parse_answer("<html>"),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            parse_answer(r#"{"choices":[]}"#),
            Err(LlmError::Malformed(_))
        ));
    }
}
