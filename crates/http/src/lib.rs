//! What every HTTP route of promptd shares: who may call (bearer tokens, the `Host` and
//! `Origin` rule, the OAuth paths a token-only server answers), where a server may listen, which
//! peer a connection counts as, how much of a body is read, how many event streams stay open,
//! and how connections are served within time limits.
//!
//! **Invariant:** depends only on `promptd-base`.

pub mod auth;
pub mod body;
pub mod origins;
pub mod serve;
pub mod streams;
pub mod threads;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A plain-text answer.
pub fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.into(),
    )
        .into_response()
}
