//! Streamable HTTP: rmcp's `StreamableHttpService` mounted at `/mcp` on axum, one MCP session
//! per client, behind an optional bearer-token check.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{PromptServer, ServeError};

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// Checks that binding `addr` is allowed: loopback always, anything else only with a token.
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        Ok(())
    } else {
        Err(ServeError::InsecureBind { addr })
    }
}

/// The axum router: `/mcp`, with the bearer check when a token is set.
pub fn router(
    server: PromptServer,
    token: Option<String>,
    public: bool,
    ct: CancellationToken,
) -> axum::Router {
    let conformance = super::jsonrpc::HttpConformance::of(server.library());
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(ct);
    config = config.with_max_request_body_bytes(conformance.max_request_bytes());
    if public {
        // Clients reach a public bind under names we cannot know; the token protects it.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router =
        axum::Router::new()
            .nest_service(MCP_PATH, service)
            .layer(middleware::from_fn_with_state(
                conformance,
                super::jsonrpc::conform_http,
            ));
    match token.filter(|t| !t.is_empty()) {
        Some(token) => router.layer(middleware::from_fn_with_state(
            Arc::<str>::from(token),
            require_bearer,
        )),
        None => router,
    }
}

/// Serves until `ct` is cancelled. Prints the bound address to stderr (tests and users with
/// port 0 need it).
pub async fn serve(
    server: PromptServer,
    addr: SocketAddr,
    token: Option<String>,
    ct: CancellationToken,
) -> Result<(), ServeError> {
    check_bind(addr, token.as_deref())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let public = !addr.ip().is_loopback();
    let app = router(server, token, public, ct.child_token());
    eprintln!("promptd: serving MCP at http://{local}{MCP_PATH}");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled_owned().await })
        .await
        .map_err(ServeError::Io)
}

async fn require_bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let supplied = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match supplied {
        Some(s) if constant_time_eq(s.as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            Body::from("401 Unauthorized: missing or wrong bearer token\n"),
        )
            .into_response(),
    }
}

/// Compares without an early exit, so timing does not reveal how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_rules() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_bind(lo, None).is_ok());
        assert!(check_bind(any, None).is_err());
        assert!(check_bind(any, Some("")).is_err());
        assert!(check_bind(any, Some("t")).is_ok());
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
