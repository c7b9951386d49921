//! One MCP session over stdin and stdout, read and written through
//! [`jsonrpc::LineTransport`] (every line checked before rmcp sees it, requests in flight
//! bounded).
//!
//! When they are pipes (what every MCP client gives its server), stdin and stdout are read and
//! written as non-blocking pipes on the runtime's one thread, whose memory is returned to the
//! system when the session goes quiet; tokio's `stdin()` / `stdout()` would copy every message
//! through a blocking-pool thread, which keeps the buffers of large answers. Any other kind of
//! file (a terminal, a regular file) keeps tokio's.

use std::os::fd::AsFd;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

use super::{PromptServer, ServeError, jsonrpc};

/// One MCP session over stdin/stdout; returns when the client closes stdin.
///
/// Before the session starts, rmcp gives up on a notification or response (which needs no
/// answer) and on a failed `initialize` (already answered): those are logged and the handshake
/// is awaited again on the same stream.
pub async fn serve(server: PromptServer) -> Result<(), ServeError> {
    use rmcp::service::ServerInitializeError;
    let limits = server.library().snapshot().limits.clone();
    let transport = jsonrpc::LineTransport::new(stdin(), stdout(), &limits);
    let server = server.over_stdio();
    let running = loop {
        match server.clone().serve(transport.clone()).await {
            Ok(r) => break r,
            Err(ServerInitializeError::ExpectedInitializeRequest(message)) => {
                tracing::debug!(?message, "ignored before initialize");
            }
            Err(ServerInitializeError::InitializeFailed(error)) => {
                tracing::debug!(%error, "initialize failed; awaiting another");
            }
            // The client went away before the handshake: nothing to serve.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Initialize(Box::new(e))),
        }
    };
    let reason = running.waiting().await;
    tracing::debug!(?reason, "stdio session ended");
    Ok(())
}

/// A duplicate of a descriptor, as a file.
fn duplicate(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<std::fs::File> {
    fd.try_clone_to_owned().map(std::fs::File::from)
}

fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    match duplicate(std::io::stdin().as_fd()).and_then(pipe::Receiver::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(e) => {
            tracing::debug!("stdin is not a pipe ({e}): reading it on the blocking pool");
            Box::new(tokio::io::stdin())
        }
    }
}

fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    match duplicate(std::io::stdout().as_fd()).and_then(pipe::Sender::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(e) => {
            tracing::debug!("stdout is not a pipe ({e}): writing it on the blocking pool");
            Box::new(tokio::io::stdout())
        }
    }
}
