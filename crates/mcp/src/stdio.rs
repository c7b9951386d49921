//! One MCP session over stdin and stdout.
//!
//! When they are pipes (what every MCP client gives its server), stdin and stdout are the
//! runtime's own non-blocking pipes, read and written on the runtime's thread when epoll says
//! so; tokio's `stdin()` / `stdout()` would hand every read and every write to a blocking-pool
//! thread and back (two thread switches per message each way). Any other kind of file (a
//! terminal, a regular file, a socket) keeps tokio's. A stdin pipe is busy-polled for a moment
//! after each answer ([`BusyPoll`]).

use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

use super::{PromptServer, ServeError, jsonrpc};

/// How long stdin is busy-polled after an answer unless `serve --busy-poll` says otherwise:
/// longer than a client on another CPU takes to wake, read the answer and send its next request.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(200);

type Input = Box<dyn AsyncRead + Send + Unpin>;
type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// One MCP session over stdin/stdout; returns when the client closes stdin. `busy_poll`: see
/// [`BusyPoll`] (zero: none).
///
/// Messages are read through [`jsonrpc::LineTransport`]. Before the session starts, rmcp gives
/// up on a notification or response (which needs no answer) and on a failed `initialize`
/// (already answered): those are logged and the handshake is awaited again on the same stream.
pub async fn serve(server: PromptServer, busy_poll: Duration) -> Result<(), ServeError> {
    use rmcp::service::ServerInitializeError;
    let limits = server.library().snapshot().limits.clone();
    let (stdin, stdout) = streams(busy_poll);
    let transport = jsonrpc::LineTransport::new(stdin, stdout, &limits);
    let server = server
        .with_written(transport.written().clone())
        .over_stdio();
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

/// stdin and stdout for the session.
fn streams(busy_poll: Duration) -> (Input, Output) {
    // The last answer's time, shared with stdout when stdin is busy-polled.
    let (input, answered): (Input, _) = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(pipe::Receiver::from_file)
    {
        Ok(pipe) if busy_poll.is_zero() => (Box::new(pipe), None),
        Ok(pipe) => {
            let answered = Arc::new(LastAnswer::new());
            let input = BusyPoll::new(pipe, busy_poll, answered.clone());
            (Box::new(input), Some(answered))
        }
        Err(e) => {
            tracing::debug!("stdin is not a pipe ({e}): reading it on the blocking pool");
            (Box::new(tokio::io::stdin()), None)
        }
    };
    let output: Output = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(pipe::Sender::from_file)
    {
        Ok(pipe) => Box::new(pipe),
        Err(e) => {
            tracing::debug!("stdout is not a pipe ({e}): writing it on the blocking pool");
            Box::new(tokio::io::stdout())
        }
    };
    let output = match answered {
        Some(answered) => Box::new(Answering {
            inner: output,
            answered,
        }),
        None => output,
    };
    (input, output)
}

/// When the session last wrote to stdout, and the reader to wake when it does.
struct LastAnswer {
    origin: Instant,
    /// Nanoseconds after `origin`.
    at: AtomicU64,
    /// The reader's task while it waits for epoll.
    sleeping: Mutex<Option<Waker>>,
}

impl LastAnswer {
    fn new() -> Self {
        LastAnswer {
            origin: Instant::now(),
            at: AtomicU64::new(0),
            sleeping: Mutex::new(None),
        }
    }

    fn mark(&self) {
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.at.store(nanos, Ordering::Relaxed);
        let sleeping = self.sleeping.lock().map(|mut w| w.take());
        if let Ok(Some(waker)) = sleeping {
            waker.wake();
        }
    }

    fn at(&self) -> Instant {
        self.origin + Duration::from_nanos(self.at.load(Ordering::Relaxed))
    }

    fn sleep(&self, waker: &Waker) {
        if let Ok(mut sleeping) = self.sleeping.lock() {
            match &mut *sleeping {
                Some(w) if w.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            }
        }
    }
}

/// A stdin pipe that, found empty, is read again for a moment before the task waits for epoll.
///
/// A client usually sends its next request as soon as it has read an answer. If the server's
/// thread has gone to sleep by then, that request has to wake it first, which is slow on a
/// virtual machine whose idle CPUs halt. So until `window` has passed since the last answer
/// was written, a read that finds nothing yields the CPU to any other runnable thread
/// (`sched_yield`: a client on the same CPU reads its answer at once) and the runtime to its
/// other tasks (the next request's handler, its answer's write), and is tried again; after that
/// the task waits for epoll, and the next answer written wakes it to poll again. Costs at most
/// `window` of CPU per answer.
pub struct BusyPoll {
    pipe: pipe::Receiver,
    window: Duration,
    answered: Arc<LastAnswer>,
}

impl BusyPoll {
    fn new(pipe: pipe::Receiver, window: Duration, answered: Arc<LastAnswer>) -> Self {
        BusyPoll {
            pipe,
            window,
            answered,
        }
    }
}

impl AsyncRead for BusyPoll {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(read) = Pin::new(&mut this.pipe).poll_read(cx, buf) {
            return Poll::Ready(read);
        }
        // Pending: tokio found the pipe empty and waits for epoll's next word on it.
        if Instant::now() >= this.answered.at() + this.window {
            this.answered.sleep(cx.waker());
            return Poll::Pending;
        }
        // Into the buffer's spare capacity as it is: initializing it first would zero the
        // whole line buffer on every empty read.
        // SAFETY: `unfilled_mut` hands out the unfilled part only to be written, and rustix
        // writes bytes into it, never uninitialized memory.
        let spare = unsafe { buf.unfilled_mut() };
        match rustix::io::read(this.pipe.as_fd(), spare) {
            Ok((read, _)) => {
                let n = read.len();
                // SAFETY: rustix initialized the first `n` bytes of the unfilled part.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {
                // A client on this CPU, woken by the answer, runs now rather than when the
                // window ends.
                std::thread::yield_now();
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }
}

/// stdout, marking each write in the [`LastAnswer`] the [`BusyPoll`] reads.
struct Answering {
    inner: Output,
    answered: Arc<LastAnswer>,
}

impl Answering {
    fn marked<T>(&self, written: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        if let Poll::Ready(Ok(_)) = &written {
            self.answered.mark();
        }
        written
    }
}

impl AsyncWrite for Answering {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.marked(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.marked(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
