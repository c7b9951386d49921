//! Streamable HTTP: rmcp's `StreamableHttpService` mounted at `/mcp` on axum, one MCP session
//! per client on protocols with `initialize` (none with `--stateless`); a request served without
//! a session is answered as JSON when its answer is one message. Served by
//! [`promptd_http::serve`] (header-read and idle timeouts, accept back-off) on
//! [`ConnectionThreads`].
//!
//! Layers, outermost first: the `Host` and `Origin` rule every route shares
//! ([`promptd_http::origins::require_site`]); the bearer-token check (when a token is set); the
//! request guard ([`promptd_transport::http_guard`]: bounded bodies, session admission, event
//! streams, DELETE); then rmcp. `/health` and `/ready` are open to load balancers' probes, and
//! the OAuth discovery paths answer a JSON 404 ([`promptd_http::auth::no_oauth_routes`]). At
//! start the soft open-file limit is raised to the hard one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{PromptServer, ServeError};
use promptd_base::limits::Limits;
use promptd_http::auth::{Authenticated, check_bind, require_bearer};
use promptd_http::origins::{ServeConfig, Site, require_site};
use promptd_http::streams::{EventStreams, StreamLimits};
use promptd_http::threads::ConnectionThreads;
use promptd_transport::http_guard::{GuardState, guard};
use promptd_transport::sessions::{BoundedSessions, SessionLimits};

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";
/// Liveness: 200 while the process serves.
pub const HEALTH_PATH: &str = "/health";
/// Readiness: 200 once the prompts are loaded and their listings built, 503 before.
pub const READY_PATH: &str = "/ready";
/// The process's metrics in the OpenMetrics text format (behind the token when one is set).
pub const METRICS_PATH: &str = "/metrics";

/// What the router needs besides the server.
#[derive(Debug, Clone)]
pub struct RouterOptions {
    pub token: Option<String>,
    /// The address actually bound.
    pub local: SocketAddr,
    pub limits: Limits,
    pub config: ServeConfig,
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
    // `Host` and `Origin` are checked for every route by one rule (`require_site`), not by
    // rmcp's lists.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct)
        .with_max_request_body_bytes(options.limits.max_request_bytes)
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_legacy_session_mode(!options.stateless)
        // Requests served without a session (all with `--stateless`, and MCP 2026-07-28 ones
        // always) are answered as JSON when their answer is one message.
        .with_json_response(true);
    let site = Arc::new(Site::new(options.local, &options.config));
    let library = server.library().clone();
    // The token every protected route checks (a blank one is none).
    let token: Option<Arc<str>> = options
        .token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Arc::from);
    let studio = options.studio.then(|| {
        promptd_studio::router(
            promptd_studio::web::StudioState {
                library: library.clone(),
                options: promptd_studio::StudioOptions::for_project(
                    library.cwd(),
                    server.visibility(),
                ),
                stages: server.stages().clone(),
            },
            promptd_studio::web::WebGuard {
                token: token.clone(),
                local: options.local,
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
        .with_state((sessions, streams.clone()));
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
    let served = match studio {
        Some(studio) => protected.merge(studio),
        None => protected,
    };
    served
        .layer(middleware::from_fn_with_state(site, require_site))
        .merge(probes)
        .merge(promptd_http::auth::no_oauth_routes())
}

async fn health() -> Response {
    promptd_http::plain(StatusCode::OK, "ok\n")
}

async fn ready(State(library): State<Arc<promptd_core::library::PromptLibrary>>) -> Response {
    if library.snapshot().is_warm() {
        promptd_http::plain(StatusCode::OK, "ready\n")
    } else {
        promptd_http::plain(StatusCode::SERVICE_UNAVAILABLE, "loading\n")
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
    let config = ServeConfig::from_config(&snapshot.config).map_err(ServeError::Config)?;
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

/// Whether the HTTP request behind a handler's `extensions` carried the server's token.
pub fn authenticated(extensions: &rmcp::model::Extensions) -> bool {
    extensions
        .get::<axum::http::request::Parts>()
        .is_some_and(|parts| parts.extensions.get::<Authenticated>().is_some())
}
