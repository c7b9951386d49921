//! The MCP server: the prompt library over the Model Context Protocol (rmcp), for clients that
//! use MCP prompts and for clients that only call tools.
//!
//! This module converts between MCP types and the library's and stages' types and holds no
//! business logic: native prompts (`prompts/list` with cursor pages, `prompts/get`,
//! `completion/complete`) and the tool `wit-get-prompts` call [`PromptLibrary`]; the tools
//! `enhance_prompt` and `compose_prompt` call [`promptd_stages::Stages`]. The tools themselves
//! (names, descriptions, schemas) are the catalog's ([`promptd_stages::catalog`]). [`serve`] runs the server
//! over stdio (default) or streamable HTTP at `/mcp`, with hot reload: [`promptd_core::watch`] reloads
//! the library when prompt files or the config change, and every connected client
//! ([`ConnectedClients`]) gets `notifications/prompts/list_changed`; the stages poll the tool
//! definition folders ([`promptd_stages::Stages::watch_tools`]) and a change sends
//! `notifications/tools/list_changed`.
//!
//! Over stdio, stdout carries only MCP frames; logs go to stderr.

pub mod clients;
pub mod convert;
pub mod http;
pub mod schema;
pub mod server;
pub mod stdio;
pub mod tool_calls;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use clients::ConnectedClients;
pub use server::{DEFAULT_PAGE_SIZE, HandlerOptions, PromptServer};

use promptd_core::library::PromptLibrary;

/// How often the tool definition folders are checked for changes.
const TOOLS_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// How to serve.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    pub handler: HandlerOptions,
    /// Serve streamable HTTP on this address instead of stdio.
    pub http: Option<SocketAddr>,
    /// Required bearer token for HTTP (mandatory for a non-loopback address).
    pub auth_token: Option<String>,
    /// Watch prompt folders and the config file (hot reload).
    pub watch: bool,
    /// Whether the watched folders are also polled (see [`promptd_core::watch::Polling`]).
    pub polling: promptd_core::watch::Polling,
    /// Over HTTP, keep no MCP sessions: any replica behind a load balancer can answer any
    /// request (no server-to-client notifications).
    pub stateless: bool,
    /// Over HTTP, also serve the studio page at `/`.
    pub studio: Option<StudioLaunch>,
    /// Over HTTP, the threads connections are served on; `None`: one per CPU the process may
    /// use.
    pub workers: Option<std::num::NonZeroUsize>,
}

/// How the studio is announced once the server listens.
#[derive(Debug, Clone, Default)]
pub struct StudioLaunch {
    /// Print the page's address with `?token=` (a token the user did not choose).
    pub show_token: bool,
    /// Open the page in the user's browser.
    pub open: bool,
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Refused(#[from] promptd_http::auth::BindRefusal),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {threads} thread(s) for HTTP connections (--workers): {source}")]
    Threads {
        threads: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("MCP session failed to start: {0}")]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    #[error(transparent)]
    Watch(#[from] promptd_core::watch::WatchError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("config: {0}")]
    Config(String),
    /// A config section the stages need is invalid.
    #[error("config: {0}")]
    Stages(promptd_stages::StageError),
}

/// Runs the server until stdin closes (stdio) or the process is interrupted (HTTP). Builds its
/// own tokio runtime.
pub fn serve(library: PromptLibrary, options: ServeOptions) -> Result<(), ServeError> {
    // Over stdio, one client, one thread. Over HTTP, this thread accepts connections and runs
    // the watcher; the connections are served on their own threads
    // ([`promptd_http::threads::ConnectionThreads`]).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(serve_async(Arc::new(library), options));
    // Blocking reads of stdin must not keep the process alive after the session ended.
    runtime.shutdown_timeout(promptd_http::threads::SHUTDOWN);
    result
}

/// [`serve`] inside an existing runtime.
pub async fn serve_async(
    library: Arc<PromptLibrary>,
    options: ServeOptions,
) -> Result<(), ServeError> {
    let clients = Arc::new(ConnectedClients::new());
    tokio::spawn(promptd_base::memory::trim_when_quiet());
    // The folders are watched beside the handshake; a deferred load starts once they are, so
    // no edit falls between the two.
    let watcher = if options.watch {
        let clients = clients.clone();
        Some(promptd_core::watch::spawn(
            library.clone(),
            options.polling,
            move |_| {
                let clients = clients.clone();
                async move {
                    let n = clients.notify_prompts_changed().await;
                    tracing::debug!("sent prompts/list_changed to {n} client(s)");
                }
            },
        )?)
    } else {
        None
    };
    let watching = watcher
        .as_ref()
        .map(promptd_core::watch::LibraryWatcher::watching);
    if library.is_loaded() {
        // The listings clients ask for first are built beside the handshake, not in its way.
        let warming = library.snapshot();
        tokio::task::spawn_blocking(move || {
            warming.warm();
            promptd_base::memory::collect();
        });
    } else {
        // A library opened deferred reads its folders beside the handshake; requests for
        // prompts wait for it (none answers from a partial registry, so no client needs a
        // `list_changed` for it).
        let loading = library.clone();
        tokio::spawn(async move {
            if let Some(watching) = watching {
                watching.await;
            }
            let started = std::time::Instant::now();
            let lib = loading.clone();
            // The load's garbage (file texts, parse trees) is in that thread's heap: it collects.
            let load = move || {
                lib.finish_loading();
                promptd_base::memory::collect();
            };
            if tokio::task::spawn_blocking(load).await.is_err() {
                tracing::error!("loading the prompt folders failed");
                return;
            }
            tracing::debug!(
                prompts = loading.snapshot().registry.len(),
                elapsed = ?started.elapsed(),
                "prompt folders loaded"
            );
        });
    }
    let stages =
        Arc::new(promptd_stages::Stages::new(library.clone()).map_err(ServeError::Stages)?);
    let _tools_watcher = options.watch.then(|| {
        let clients = clients.clone();
        stages.watch_tools(TOOLS_POLL, move || {
            let clients = clients.clone();
            async move {
                let n = clients.notify(clients::Changed::Tools).await;
                tracing::debug!("sent tools/list_changed to {n} client(s)");
            }
        })
    });
    let server = PromptServer::new(stages, clients.clone(), options.handler);
    match options.http {
        Some(addr) => {
            if options.auth_token.is_none() {
                tracing::info!("HTTP without a token: loopback only");
            }
            let ct = CancellationToken::new();
            let stop = ct.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            let http = http::HttpServe {
                addr,
                token: options.auth_token,
                stateless: options.stateless,
                studio: options.studio,
                workers: options.workers.unwrap_or_else(|| {
                    std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN)
                }),
            };
            http::serve(server, http, ct).await
        }
        None => stdio::serve(server).await,
    }
}
