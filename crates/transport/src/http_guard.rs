//! The guard in front of rmcp's streamable-HTTP service at `/mcp`, for what rmcp 3.11 does not
//! bound or answer as the MCP spec and JSON-RPC say:
//! - a POST body is read whole within `limits.maxRequestBytes` (413 with the JSON-RPC error a
//!   stdio client gets for an oversized line; 400 for broken framing), once, for admission and
//!   for rmcp, without a UTF-8 byte order mark;
//! - a new session is admitted by [`BoundedSessions`] before its `initialize` reaches rmcp (503
//!   or 429 with `Retry-After` only when no session can give way);
//! - a GET's event stream is held under the stream limits ([`EventStreams`]);
//! - DELETE of an unknown session is 404, of a live one 204;
//! - what rmcp cannot parse is answered with its JSON-RPC error ([`conformance::conform_http`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use serde::Deserialize;

use crate::conformance;
use crate::sessions::{BoundedSessions, Refusal};
use promptd_http::body::{BodyError, read_bounded};
use promptd_http::streams::EventStreams;

/// JSON-RPC error code of a request refused for capacity (in the implementation-defined
/// server-error range): neither the caller's mistake (-32602) nor a fault (-32603).
pub const SERVER_BUSY: i32 = -32000;

/// What the guard needs.
#[derive(Debug)]
pub struct GuardState {
    pub sessions: Arc<BoundedSessions>,
    pub streams: Arc<EventStreams>,
    pub max_request_bytes: usize,
    /// `Retry-After` of a refused session, in seconds.
    pub retry_after: u64,
}

/// The fields of a JSON-RPC message the guard looks at.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<String>,
}

/// Middleware: the guard (see the module's docs).
pub async fn guard(State(state): State<Arc<GuardState>>, request: Request, next: Next) -> Response {
    let session = request
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if request.method() == Method::DELETE {
        return delete_session(&state, session.as_deref(), request, next).await;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if request.method() == Method::GET {
        // A session's event stream.
        return state.streams.serve(peer, next.run(request)).await;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let json = conformance::is_json(request.headers());
    let (parts, body) = request.into_parts();
    let bytes = match read_bounded(body, state.max_request_bytes).await {
        Ok(b) => conformance::http_message(b),
        Err(e) => return unread(&e),
    };
    // Only an `initialize` without a session creates one.
    let mut reservation = None;
    if session.is_none()
        && let Ok(envelope) = serde_json::from_slice::<Envelope>(&bytes)
        && envelope.method.as_deref() == Some("initialize")
    {
        let peer = peer.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        match state.sessions.admit(peer).await {
            Ok(r) => reservation = Some(r),
            Err(refusal) => return refused(&refusal, envelope.id, state.retry_after),
        }
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    let response = if json {
        conformance::conform_http(&bytes, response)
    } else {
        response
    };
    if let Some(r) = reservation
        && let Some(id) = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
    {
        r.commit(id);
    }
    response
}

/// A body that was not read: 413 (the connection closed, a client still sending reads it
/// instead of a reset) or 400.
fn unread(e: &BodyError) -> Response {
    match e {
        BodyError::TooLarge { max } => (
            StatusCode::PAYLOAD_TOO_LARGE,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONNECTION, "close"),
            ],
            conformance::Refusal::too_large(*max).to_json(),
        )
            .into_response(),
        BodyError::Broken(_) => {
            promptd_http::plain(StatusCode::BAD_REQUEST, format!("400 Bad Request: {e}\n"))
        }
    }
}

/// DELETE closes a live session (204); an unknown or closed one is 404, as for any request.
async fn delete_session(
    state: &GuardState,
    session: Option<&str>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(id) = session
        && !state.sessions.is_live(id)
    {
        return promptd_http::plain(
            StatusCode::NOT_FOUND,
            "404 Not Found: no such session (unknown, expired or already closed)\n",
        );
    }
    let mut response = next.run(request).await;
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = Body::empty();
    }
    response
}

/// A refused `initialize`: 503 when the server is full, 429 when this peer has too many
/// sessions; both with `Retry-After` and a JSON-RPC error naming the limit.
fn refused(refusal: &Refusal, id: Option<serde_json::Value>, retry_after: u64) -> Response {
    let status = match refusal {
        Refusal::Total { .. } => StatusCode::SERVICE_UNAVAILABLE,
        Refusal::PerPeer { .. } => StatusCode::TOO_MANY_REQUESTS,
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(serde_json::Value::Null),
        "error": { "code": SERVER_BUSY, "message": refusal.to_string() },
    });
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::RETRY_AFTER, HeaderValue::from(retry_after)),
        ],
        body.to_string(),
    )
        .into_response()
}
