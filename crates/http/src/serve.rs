//! Serving a router over HTTP/1 with the bounds a public port needs, which `axum::serve` does
//! not offer: each connection must send its request headers within a deadline (an idle
//! keep-alive connection is closed after it too) and is dropped when no byte moves for a while,
//! so slow or stalled clients cannot hold descriptors; an accept that fails (out of descriptors)
//! is retried after a growing pause, logged once per run of failures, instead of spinning.
//! Each connection is a task on one of the [`ConnectionThreads`]; the peer's address is in the
//! request's `ConnectInfo`.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::threads::ConnectionThreads;

/// The time limits of one connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// For the request headers, and for the next request on an idle keep-alive connection.
    pub header_read: Duration,
    /// With no byte moving either way.
    pub idle: Duration,
}

/// Serves `app` on `listener` until `ct` is cancelled, each connection on one of `threads`,
/// then lets each connection finish within a second.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    threads: &ConnectionThreads,
    ct: CancellationToken,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    let mut failures = AcceptFailures::default();
    loop {
        let (stream, remote) = tokio::select! {
            () = ct.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    let pause = failures.failed(&e);
                    tokio::select! {
                        () = ct.cancelled() => break,
                        () = tokio::time::sleep(pause) => {}
                    }
                    continue;
                }
            },
        };
        failures.recovered();
        // Event-stream frames are written in pieces: without NODELAY, Nagle's algorithm holds
        // the last piece until the client's delayed ACK.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY on a connection from {remote}: {e}");
        }
        // The socket leaves this runtime's reactor and joins its thread's, where its readiness
        // wakes the connection's task without crossing threads.
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("connection from {remote}: {e}");
                continue;
            }
        };
        let app = app.clone();
        let http = http.clone();
        let ct = ct.clone();
        threads.spawn(async move {
            let stream = match tokio::net::TcpStream::from_std(stream) {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!("connection from {remote}: {e}");
                    return;
                }
            };
            let activity = Arc::new(Activity::new());
            let io = TokioIo::new(Watched {
                inner: stream,
                activity: activity.clone(),
            });
            let service =
                hyper::service::service_fn(move |mut request: Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(ConnectInfo(remote));
                    let mut app = app.clone();
                    async move { tower_service::Service::call(&mut app, request).await }
                });
            let conn = http.serve_connection(io, service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!("connection from {remote}: {e}");
                    }
                }
                () = activity.idle_for(limits.idle) => {
                    tracing::debug!("closing connection from {remote}: no traffic for {:?}", limits.idle);
                }
                () = ct.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
                }
            }
        });
    }
    // Each connection closes gracefully within a second of `ct`.
    threads.drain(Duration::from_secs(2)).await;
}

/// A run of failed accepts: logged once as it starts, once a minute while it lasts, and once
/// with its count as it ends; retried after a pause that doubles up to a second.
#[derive(Debug, Default)]
struct AcceptFailures {
    count: u64,
    pause: Duration,
    started: Option<Instant>,
    reported: Option<Instant>,
}

impl AcceptFailures {
    const FIRST_PAUSE: Duration = Duration::from_millis(10);
    const MAX_PAUSE: Duration = Duration::from_secs(1);
    const REPORT_EVERY: Duration = Duration::from_secs(60);

    /// Counts a failure; returns how long to wait before the next accept.
    fn failed(&mut self, e: &std::io::Error) -> Duration {
        let now = Instant::now();
        self.count += 1;
        match (self.started, self.reported) {
            (Some(started), Some(reported)) => {
                self.pause = (self.pause * 2).min(Self::MAX_PAUSE);
                if now.duration_since(reported) >= Self::REPORT_EVERY {
                    tracing::warn!(
                        "accepting connections still fails: {e} ({} failed accepts in {:?})",
                        self.count,
                        now.duration_since(started)
                    );
                    self.reported = Some(now);
                }
            }
            _ => {
                tracing::warn!(
                    "accepting connections fails: {e}; retrying with a growing pause until one \
                     succeeds"
                );
                self.started = Some(now);
                self.reported = Some(now);
                self.pause = Self::FIRST_PAUSE;
            }
        }
        self.pause
    }

    /// An accept succeeded: ends a run of failures.
    fn recovered(&mut self) {
        if let Some(started) = self.started.take() {
            tracing::warn!(
                "accepting connections again after {} failed accepts in {:?}",
                self.count,
                started.elapsed()
            );
            *self = AcceptFailures::default();
        }
    }
}

/// When a connection last moved a byte.
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Returns once no byte has moved for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = last + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

/// A socket that records its traffic in an [`Activity`].
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
