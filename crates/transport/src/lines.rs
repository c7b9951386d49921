//! The stdio transport: newline-delimited JSON-RPC over a byte stream (stdin/stdout), every
//! line checked by [`crate::conformance::check`] before rmcp sees it, no line buffered past
//! `limits.maxRequestBytes`, and the requests a client has in flight bounded.
//!
//! It exists because rmcp's own line transport (3.11) buffers a line of any length, drops a
//! line that is not JSON without an answer, and reads requests without bound while their
//! answers wait: a client that sends without reading would make the server hold answers
//! without limit.

use std::sync::Arc;

use axum::body::Bytes;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, OwnedSemaphorePermit};
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder};

use crate::conformance::{Refusal, Verdict, check};
use promptd_base::limits::Limits;

/// Writes one message and its newline (appended to the message's own buffer: one write, no
/// copy), and flushes.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    writer.write_all(&line).await?;
    writer.flush().await
}

/// Newline-delimited JSON-RPC over a byte stream (stdin/stdout), with every message checked by
/// [`check`] and no line buffered past `limits.maxRequestBytes`.
///
/// Clones share the stream: when rmcp gives up on a session before `initialize` (a
/// notification or response arrived first) and drops its transport, a clone serves the next
/// attempt without losing buffered input.
pub struct LineTransport<R, W> {
    reader: Arc<Mutex<LineReader<R>>>,
    writer: Arc<Mutex<W>>,
    max_bytes: usize,
    in_flight: Arc<InFlight>,
}

impl<R, W> Clone for LineTransport<R, W> {
    fn clone(&self) -> Self {
        LineTransport {
            reader: self.reader.clone(),
            writer: self.writer.clone(),
            max_bytes: self.max_bytes,
            in_flight: self.in_flight.clone(),
        }
    }
}

/// How many requests of one stdio session may be read and not yet answered. With that many
/// waiting for their answers no more requests are taken (the client's writes block on the full
/// pipe), so a client that sends without reading cannot make the server hold answers without
/// bound.
pub const MAX_IN_FLIGHT: usize = 64;

/// How many requests are read ahead, held without being taken, while [`MAX_IN_FLIGHT`] requests
/// are unanswered: reading on past a request lets the notifications behind it through (a
/// cancellation frees its request's place). With that many held, nothing more is read.
pub const MAX_READ_AHEAD: usize = 8;

/// Each request taken and not yet answered, with its permit; the requests read ahead.
#[derive(Debug, Default)]
struct Window {
    held: std::collections::HashMap<rmcp::model::RequestId, OwnedSemaphorePermit>,
    ahead: std::collections::VecDeque<(rmcp::model::RequestId, ClientJsonRpcMessage)>,
}

/// The requests taken and not yet answered, each holding one of [`MAX_IN_FLIGHT`] permits until
/// its answer is written or the client cancels it (rmcp then drops the answer), and the
/// requests read ahead while no permit was free.
#[derive(Debug)]
struct InFlight {
    permits: Arc<tokio::sync::Semaphore>,
    window: std::sync::Mutex<Window>,
}

impl InFlight {
    fn new() -> InFlight {
        InFlight {
            permits: Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT)),
            window: Default::default(),
        }
    }

    fn window(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A permit for one more request; waits while [`MAX_IN_FLIGHT`] requests are unanswered.
    async fn permit(&self) -> OwnedSemaphorePermit {
        self.permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }

    /// How many requests are read ahead.
    fn ahead(&self) -> usize {
        self.window().ahead.len()
    }

    /// Takes the request `id` just read: with a free permit and none read ahead before it, it
    /// is returned to be handled; otherwise it waits in line.
    fn take(
        &self,
        id: rmcp::model::RequestId,
        request: ClientJsonRpcMessage,
    ) -> Option<ClientJsonRpcMessage> {
        let mut window = self.window();
        if window.ahead.is_empty()
            && let Ok(permit) = self.permits.clone().try_acquire_owned()
        {
            window.held.insert(id, permit);
            return Some(request);
        }
        window.ahead.push_back((id, request));
        None
    }

    /// The first request read ahead, taken with `permit` (`None` when there is none).
    fn next_ahead(&self, permit: OwnedSemaphorePermit) -> Option<ClientJsonRpcMessage> {
        let mut window = self.window();
        let (id, request) = window.ahead.pop_front()?;
        window.held.insert(id, permit);
        Some(request)
    }

    /// A notification read: a cancellation frees its request's permit, or drops the request
    /// from the read-ahead line if it was not taken yet.
    fn notified(&self, message: &ClientJsonRpcMessage) {
        if let ClientJsonRpcMessage::Notification(n) = message
            && let rmcp::model::ClientNotification::CancelledNotification(c) = &n.notification
            && let Some(id) = &c.params.request_id
        {
            let mut window = self.window();
            if window.held.remove(id).is_none() {
                window.ahead.retain(|(ahead, _)| ahead != id);
            }
        }
    }

    /// Releases the permit of the request `id` answers.
    fn answered(&self, id: &rmcp::model::RequestId) {
        self.window().held.remove(id);
    }
}

struct LineReader<R> {
    io: R,
    buf: BytesMut,
    codec: AnyDelimiterCodec,
    eof: bool,
}

/// One step of the line reader.
enum Line {
    Message(Bytes),
    TooLarge,
    Closed,
}

/// Bytes read from the stream at once.
const READ_CHUNK: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// The next line. Cancel-safe: bytes read stay in `buf`.
    async fn next(&mut self) -> Line {
        loop {
            let decoded = if self.eof {
                self.codec.decode_eof(&mut self.buf)
            } else {
                self.codec.decode(&mut self.buf)
            };
            match decoded {
                Ok(Some(line)) => return Line::Message(line),
                Ok(None) if self.eof => return Line::Closed,
                Ok(None) => {}
                Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => return Line::TooLarge,
                Err(AnyDelimiterCodecError::Io(e)) => {
                    tracing::error!("reading stdin: {e}");
                    return Line::Closed;
                }
            }
            self.buf.reserve(READ_CHUNK);
            match self.io.read_buf(&mut self.buf).await {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) => {
                    tracing::error!("reading stdin: {e}");
                    return Line::Closed;
                }
            }
        }
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(read: R, write: W, limits: &Limits) -> Self {
        let max_bytes = limits.max_request_bytes;
        LineTransport {
            reader: Arc::new(Mutex::new(LineReader {
                io: read,
                buf: BytesMut::new(),
                codec: AnyDelimiterCodec::new_with_max_length(
                    b"\n".to_vec(),
                    Vec::new(),
                    max_bytes,
                ),
                eof: false,
            })),
            writer: Arc::new(Mutex::new(write)),
            max_bytes,
            in_flight: Arc::new(InFlight::new()),
        }
    }

    /// Writes a refusal in a task of its own, so a cancelled `receive` never leaves half a
    /// line on the stream.
    async fn refuse(&self, refusal: &Refusal) -> std::io::Result<()> {
        tracing::debug!(id = %refusal.id, code = refusal.error.code.0, "{}", refusal.error.message);
        let writer = self.writer.clone();
        let line = refusal.to_json();
        tokio::spawn(async move { write_line(&mut *writer.lock().await, line).await })
            .await
            .map_err(std::io::Error::other)?
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let answers = match &item {
            ServerJsonRpcMessage::Response(r) => Some(r.id.clone()),
            ServerJsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let in_flight = self.in_flight.clone();
        async move {
            let line = serde_json::to_vec(&item)?;
            drop(item);
            let written = write_line(&mut *writer.lock().await, line).await;
            if let Some(id) = answers {
                in_flight.answered(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Requests read ahead go first, each as soon as a permit frees. Every await below is
            // cancel-safe: a permit not yet granted takes nothing, a line not yet complete stays
            // in the reader's buffer, a request read ahead stays in line.
            // With MAX_READ_AHEAD requests in line, only a freed permit is awaited.
            let in_flight = self.in_flight.clone();
            let ahead = in_flight.ahead();
            let line = if ahead == 0 {
                self.reader.lock().await.next().await
            } else {
                let mut reader = self.reader.lock().await;
                tokio::select! {
                    permit = in_flight.permit() => match in_flight.next_ahead(permit) {
                        Some(request) => return Some(request),
                        None => continue,
                    },
                    line = reader.next(), if ahead < MAX_READ_AHEAD => line,
                }
            };
            let verdict = match line {
                Line::Closed => return None,
                Line::TooLarge => Verdict::Refuse(Refusal::too_large(self.max_bytes)),
                Line::Message(line) => {
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    check(line)
                }
            };
            match verdict {
                Verdict::Pass(message) => {
                    if let ClientJsonRpcMessage::Request(r) = &*message {
                        match in_flight.take(r.id.clone(), *message) {
                            Some(request) => return Some(request),
                            None => continue,
                        }
                    }
                    in_flight.notified(&message);
                    return Some(*message);
                }
                Verdict::Drop => {}
                Verdict::Refuse(refusal) => {
                    if let Err(e) = self.refuse(&refusal).await {
                        tracing::error!("writing stdout: {e}");
                        return None;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}
