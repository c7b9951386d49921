//! One MCP session over stdin and stdout, through [`promptd_transport::lines::LineTransport`]
//! (every line checked before rmcp sees it, requests in flight bounded) on
//! [`promptd_transport::pipes`].

use rmcp::ServiceExt;

use super::{PromptServer, ServeError};
use promptd_transport::{lines::LineTransport, pipes};

/// One MCP session over stdin/stdout; returns when the client closes stdin.
///
/// Before the session starts, rmcp gives up on a notification or response (which needs no
/// answer) and on a failed `initialize` (already answered): those are logged and the handshake
/// is awaited again on the same stream.
pub async fn serve(server: PromptServer) -> Result<(), ServeError> {
    use rmcp::service::ServerInitializeError;
    let limits = server.library().snapshot().limits.clone();
    let transport = LineTransport::new(pipes::stdin(), pipes::stdout(), &limits);
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
