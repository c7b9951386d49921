//! Streamable HTTP: rmcp's `StreamableHttpService` mounted at `/mcp` on axum, one MCP session
//! per client on protocols with `initialize` (none with `--stateless`); a request served without
//! a session is answered as JSON when its answer is one message. Served by
//! [`promptd_http::serve`] (header-read and idle timeouts, accept back-off) on
//! [`ConnectionThreads`].
//!
//! Layers, outermost first: the bearer-token check (when a token is set); the request guard
//! ([`guard`]: the body read whole within `limits.maxRequestBytes`, 413 over it and 400 for
//! broken framing; new sessions admitted by [`BoundedSessions`], a least recently used session
//! giving way over a cap (503 or 429 with `Retry-After` only when none can); a GET's event
//! stream under the stream limits; DELETE of an unknown session 404, of a live one 204; the
//! message without a byte order mark to rmcp, and what rmcp cannot parse answered with its
//! JSON-RPC error ([`super::jsonrpc::conform_http`])); then rmcp, which checks `Host` (loopback
//! names and the bound address, unless bound publicly) and `Origin` (403 for any origin not in
//! `serve.allowedOrigins` or the server's own; requests without `Origin` pass). Event streams
//! (`GET /mcp`, the studio's) are bounded by [`promptd_http::streams`]. `/metrics` has the same
//! `Host` check as `/mcp`. At start the soft open-file limit is raised to the hard one.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::sessions::{BoundedSessions, Refusal, SessionLimits};
use super::{PromptServer, ServeError};
use promptd_base::limits::Limits;
use promptd_http::streams::{EventStreams, StreamLimits};
use promptd_http::threads::ConnectionThreads;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";
/// Liveness: 200 while the process serves.
pub const HEALTH_PATH: &str = "/health";
/// Readiness: 200 once the prompts are loaded and their listings built, 503 before.
pub const READY_PATH: &str = "/ready";
/// The process's metrics in the OpenMetrics text format (behind the token when one is set).
pub const METRICS_PATH: &str = "/metrics";

/// Config section of the HTTP server.
pub const SECTION: &str = "serve";

/// The `serve` config section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Browser origins allowed to call the server (`scheme://host[:port]`, `:*` for any port,
    /// or `null`). A request carrying any other `Origin` gets 403; requests without `Origin`
    /// (non-browser clients) are allowed.
    pub allowed_origins: Vec<String>,
}

impl HttpConfig {
    /// The `serve` section of a project config, each origin checked.
    pub fn from_config(config: &promptd_base::config::ProjectConfig) -> Result<HttpConfig, String> {
        let c: HttpConfig = config.section_as(SECTION)?;
        for (i, o) in c.allowed_origins.iter().enumerate() {
            if !origin_is_well_formed(o) {
                return Err(format!(
                    "{SECTION}.allowedOrigins[{i}]: `{o}` is not an origin: expected \
                     scheme://host[:port] (port `*` for any) or `null`"
                ));
            }
        }
        Ok(c)
    }
}

fn origin_is_well_formed(o: &str) -> bool {
    if o == "null" {
        return true;
    }
    let o = o.strip_suffix(":*").unwrap_or(o);
    match o.parse::<axum::http::Uri>() {
        Ok(uri) => {
            uri.scheme().is_some()
                && uri.host().is_some_and(|h| !h.is_empty())
                && uri.path_and_query().is_none_or(|p| p.as_str() == "/")
                && !o.ends_with('/')
        }
        Err(_) => false,
    }
}

/// Checks that binding `addr` is allowed: loopback always, anything else only with a token of
/// at least `min_token_chars` non-blank characters.
pub fn check_bind(
    addr: SocketAddr,
    token: Option<&str>,
    min_token_chars: usize,
) -> Result<(), ServeError> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    let Some(token) = token.map(str::trim).filter(|t| !t.is_empty()) else {
        return Err(ServeError::InsecureBind { addr });
    };
    let chars = token.chars().count();
    if chars < min_token_chars {
        return Err(ServeError::WeakToken {
            addr,
            chars,
            min: min_token_chars,
        });
    }
    Ok(())
}

/// What the router needs besides the server.
#[derive(Debug, Clone)]
pub struct RouterOptions {
    pub token: Option<String>,
    /// The address actually bound.
    pub local: SocketAddr,
    pub limits: Limits,
    pub config: HttpConfig,
    /// No MCP sessions: every request is answered on its own, so any replica can answer it.
    pub stateless: bool,
    /// Serve the studio page at `/`.
    pub studio: bool,
}

/// The axum router: `/mcp` behind the request guard and `/metrics`, both behind the bearer
/// check when a token is set; `/health` and `/ready` open to load balancers' probes (they
/// reveal nothing but the status).
pub fn router(
    server: PromptServer,
    options: &RouterOptions,
    sessions: Arc<BoundedSessions>,
    streams: Arc<EventStreams>,
    ct: CancellationToken,
) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct)
        .with_max_request_body_bytes(options.limits.max_request_bytes)
        .with_allowed_origins(allowed_origins(options))
        .enforce_origin_validation()
        .with_legacy_session_mode(!options.stateless)
        // Requests served without a session (all with `--stateless`, and MCP 2026-07-28 ones
        // always) are answered as JSON when their answer is one message.
        .with_json_response(true);
    let ip = options.local.ip();
    if ip.is_loopback() {
        // Loopback names, and the address bound (127.0.0.2 is loopback too).
        let mut hosts = config.allowed_hosts.clone();
        hosts.push(ip.to_string());
        config = config.with_allowed_hosts(hosts);
    } else {
        // Clients reach a public bind under names we cannot know; the token protects it.
        config = config.disable_allowed_hosts();
    }
    let library = server.library().clone();
    // The token every protected route checks (a blank one is none).
    let token: Option<Arc<str>> = options
        .token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Arc::from);
    let studio = options.studio.then(|| {
        promptd_studio::web::router(
            promptd_studio::web::StudioState {
                library: library.clone(),
                options: promptd_studio::StudioOptions::for_project(
                    library.cwd(),
                    server.visibility(),
                ),
            },
            promptd_studio::web::WebGuard {
                token: token.clone(),
                local: options.local,
                allowed_origins: options.config.allowed_origins.clone(),
            },
            streams.clone(),
        )
    });
    let server = if options.stateless {
        server.without_sessions()
    } else {
        server
    };
    let service =
        StreamableHttpService::new(move || Ok(server.for_session()), sessions.clone(), config);
    let guard_state = Arc::new(GuardState {
        sessions: sessions.clone(),
        streams: streams.clone(),
        max_request_bytes: options.limits.max_request_bytes,
        retry_after: options.limits.session_idle_pressure_secs.max(1),
    });
    let metrics = axum::Router::new()
        .route(METRICS_PATH, get(metrics))
        .with_state((sessions, streams.clone()))
        .layer(middleware::from_fn_with_state(options.local, check_host));
    let router = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(guard_state, guard))
        .merge(metrics);
    let protected = match token {
        Some(token) => router.layer(middleware::from_fn_with_state(token, require_bearer)),
        None => router,
    };
    let probes = axum::Router::new()
        .route(HEALTH_PATH, get(health))
        .route(READY_PATH, get(ready))
        .with_state(library);
    let app = protected.merge(probes).merge(no_oauth_routes());
    match studio {
        Some(studio) => app.merge(studio),
        None => app,
    }
}

/// The `Host` check of routes rmcp does not serve (`/metrics`): [`promptd_http::auth::checked_host`].
async fn check_host(State(local): State<SocketAddr>, request: Request, next: Next) -> Response {
    let header = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok());
    match promptd_http::auth::checked_host(header, local) {
        Ok(_) => next.run(request).await,
        Err(refusal) => {
            let (status, text) = refusal.answer();
            plain(status, text.into())
        }
    }
}

/// The origins `/mcp` serves: the configured ones and the server's own (a page it serves, the
/// studio, talks to it from there): `http://ADDR` of the bound address and, on loopback, the
/// same port under `localhost` and the other loopback spellings. A page elsewhere is foreign
/// (403); the Host check keeps a rebound name out.
fn allowed_origins(options: &RouterOptions) -> Vec<String> {
    let mut out = options.config.allowed_origins.clone();
    let local = options.local;
    let port = local.port();
    let mut own = vec![format!("http://{local}")];
    if local.ip().is_loopback() {
        own.extend([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ]);
    }
    for origin in own {
        if !out.contains(&origin) {
            out.push(origin);
        }
    }
    out
}

/// The OAuth discovery and registration paths an MCP client tries when a request is refused
/// (MCP authorization: protected resource metadata, authorization server metadata, dynamic
/// client registration). promptd takes a static bearer token and is no OAuth server: each
/// answers 404 with a JSON error saying so, never the studio's page.
fn no_oauth_routes() -> axum::Router {
    let routes = [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/{*resource}",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/{*issuer}",
        "/.well-known/openid-configuration",
        "/.well-known/openid-configuration/{*issuer}",
        "/register",
    ];
    routes.iter().fold(axum::Router::new(), |router, path| {
        router.route(path, axum::routing::any(no_oauth))
    })
}

async fn no_oauth() -> Response {
    let body = serde_json::json!({
        "error": "not_found",
        "error_description": "this promptd server takes a static bearer token (Authorization: Bearer <token>, the token given to `promptd serve --auth-token`); it offers no OAuth discovery or client registration",
    });
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(body.to_string()),
    )
        .into_response()
}

async fn health() -> Response {
    plain(StatusCode::OK, "ok\n".into())
}

async fn ready(State(library): State<Arc<promptd_core::library::PromptLibrary>>) -> Response {
    if library.snapshot().is_warm() {
        plain(StatusCode::OK, "ready\n".into())
    } else {
        plain(StatusCode::SERVICE_UNAVAILABLE, "loading\n".into())
    }
}

async fn metrics(
    State((sessions, streams)): State<(Arc<BoundedSessions>, Arc<EventStreams>)>,
) -> Response {
    let metrics = promptd_base::metrics::global();
    metrics.sessions(sessions.len());
    metrics.event_streams(streams.open());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, promptd_base::metrics::CONTENT_TYPE)],
        metrics.encode(),
    )
        .into_response()
}

/// What [`serve`] serves, and where.
#[derive(Debug, Clone)]
pub struct HttpServe {
    pub addr: SocketAddr,
    pub token: Option<String>,
    pub stateless: bool,
    /// Also serve the studio page at `/`.
    pub studio: Option<super::StudioLaunch>,
    /// Threads connections are served on ([`ConnectionThreads`]).
    pub workers: std::num::NonZeroUsize,
}

/// Serves until `ct` is cancelled. Prints the bound address to stderr (tests and users with
/// port 0 need it).
pub async fn serve(
    server: PromptServer,
    serve: HttpServe,
    ct: CancellationToken,
) -> Result<(), ServeError> {
    let HttpServe {
        addr,
        token,
        stateless,
        studio,
        workers,
    } = serve;
    let snapshot = server.library().snapshot();
    let limits = snapshot.limits.clone();
    let config = HttpConfig::from_config(&snapshot.config).map_err(ServeError::Config)?;
    check_bind(addr, token.as_deref(), limits.min_auth_token_chars)?;
    // Every connection holds a descriptor: the usual soft limit is far below a server's needs.
    let open_files = promptd_http::streams::raise_open_file_limit();
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let sessions = Arc::new(BoundedSessions::new(SessionLimits::from_limits(&limits)));
    sessions.spawn_reaper(ct.child_token());
    let streams = Arc::new(EventStreams::new(StreamLimits::from_limits(
        &limits, open_files,
    )));
    tracing::debug!(limits = ?streams.limits(), "event streams");
    let options = RouterOptions {
        token: token.clone(),
        local,
        limits: limits.clone(),
        config,
        stateless,
        studio: studio.is_some(),
    };
    let app = router(server, &options, sessions, streams, ct.child_token());
    eprintln!("promptd: serving MCP at http://{local}{MCP_PATH}");
    if let Some(launch) = studio {
        let mut url = format!("http://{local}/");
        if launch.show_token
            && let Some(t) = token.as_deref()
        {
            url.push_str("?token=");
            url.extend(percent_encoding::utf8_percent_encode(
                t,
                percent_encoding::NON_ALPHANUMERIC,
            ));
        }
        eprintln!("promptd: studio at {url}");
        if launch.open {
            promptd_studio::web::open_in_browser(&url);
        }
    }
    let connections = promptd_http::serve::ConnectionLimits {
        header_read: Duration::from_secs(limits.header_read_timeout_secs),
        idle: Duration::from_secs(limits.connection_idle_secs),
    };
    let threads = ConnectionThreads::start(workers).map_err(|source| ServeError::Threads {
        threads: workers.get(),
        source,
    })?;
    promptd_http::serve::serve(listener, app, connections, &threads, ct).await;
    Ok(())
}

/// What the request guard needs.
#[derive(Debug)]
struct GuardState {
    sessions: Arc<BoundedSessions>,
    streams: Arc<EventStreams>,
    max_request_bytes: usize,
    /// `Retry-After` of a refused session, in seconds.
    retry_after: u64,
}

/// The fields of a JSON-RPC message the guard looks at.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    method: Option<String>,
}

async fn guard(State(state): State<Arc<GuardState>>, request: Request, next: Next) -> Response {
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
    let json = super::jsonrpc::is_json(request.headers());
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, state.max_request_bytes).await {
        Ok(b) => super::jsonrpc::http_message(b),
        Err(response) => return response,
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
        super::jsonrpc::conform_http(&bytes, response)
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

/// Reads a request body whole: 413 over `max` bytes (naming the limit), 400 when its framing
/// is broken (bad chunked encoding, a connection cut mid-body).
///
/// An oversized body is read on and thrown away up to [`DRAIN_FACTOR`] times the limit, so a
/// client still sending it reads the 413 instead of a reset connection; past that the
/// connection is closed.
async fn read_body(mut body: Body, max: usize) -> Result<Bytes, Response> {
    use http_body_util::BodyExt;
    let mut kept: Vec<u8> = Vec::new();
    let mut seen: usize = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            plain(
                StatusCode::BAD_REQUEST,
                format!("400 Bad Request: cannot read the request body: {e}\n"),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen <= max {
            kept.extend_from_slice(&data);
        } else if seen > max.saturating_mul(DRAIN_FACTOR) {
            break;
        }
    }
    if seen > max {
        // The same JSON-RPC error a stdio client gets for an oversized line.
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONNECTION, "close"),
            ],
            super::jsonrpc::Refusal::too_large(max).to_json(),
        )
            .into_response());
    }
    Ok(Bytes::from(kept))
}

/// How much of an oversized body is read and discarded before answering 413, in multiples of
/// the limit.
const DRAIN_FACTOR: usize = 4;

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
        return plain(
            StatusCode::NOT_FOUND,
            "404 Not Found: no such session (unknown, expired or already closed)\n".into(),
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

/// JSON-RPC error code of a request refused for capacity (in the implementation-defined
/// server-error range): neither the caller's mistake (-32602) nor a fault (-32603).
pub const SERVER_BUSY: i32 = -32000;

fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Marks a request that carried the server's bearer token (in its extensions, which rmcp hands
/// the handler with the request's HTTP parts): the stages honour an HTTP client's roots only
/// then.
#[derive(Debug, Clone, Copy)]
pub struct Authenticated;

/// Whether the HTTP request behind a handler's `extensions` carried the server's token.
pub fn authenticated(extensions: &rmcp::model::Extensions) -> bool {
    extensions
        .get::<axum::http::request::Parts>()
        .is_some_and(|parts| parts.extensions.get::<Authenticated>().is_some())
}

async fn require_bearer(
    State(token): State<Arc<str>>,
    mut request: Request,
    next: Next,
) -> Response {
    let supplied = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(promptd_http::auth::bearer_token);
    match supplied {
        Some(s) if promptd_http::auth::same_token(s, &token) => {
            request.extensions_mut().insert(Authenticated);
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            Body::from("401 Unauthorized: missing or wrong bearer token\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_rules() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let lo2: SocketAddr = "127.0.0.2:0".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let strong = "0123456789abcdef";
        assert!(check_bind(lo, None, 16).is_ok());
        assert!(check_bind(lo2, None, 16).is_ok());
        assert!(check_bind(any, None, 16).is_err());
        assert!(check_bind(any, Some(""), 16).is_err());
        assert!(check_bind(any, Some("   \t"), 16).is_err());
        let weak = check_bind(any, Some("t"), 16).unwrap_err().to_string();
        assert!(weak.contains("limits.minAuthTokenChars"), "{weak}");
        assert!(check_bind(any, Some(&format!(" {} ", &strong[1..])), 16).is_err());
        assert!(check_bind(any, Some(strong), 16).is_ok());
    }

    #[test]
    fn allowed_origins_are_checked() {
        for good in [
            "https://app.example.com",
            "http://localhost:3000",
            "http://localhost:*",
            "null",
        ] {
            assert!(origin_is_well_formed(good), "{good}");
        }
        for bad in ["example.com", "https://", "https://a.com/path", "*", ""] {
            assert!(!origin_is_well_formed(bad), "{bad}");
        }
        let cfg = promptd_base::config::ProjectConfig::parse(
            r#"{"serve":{"allowedOrigins":["https://ok.example","nope"]}}"#,
            None,
        )
        .unwrap();
        let err = HttpConfig::from_config(&cfg).unwrap_err();
        assert!(err.contains("serve.allowedOrigins[1]"), "{err}");
    }
}
