//! Server-sent event streams under limits: a session's `GET /mcp` stream and the studio's
//! `/studio/events` both take a [`StreamPermit`] from one [`EventStreams`] before they open.
//!
//! A stream holds its connection (and so a file descriptor) for as long as it runs, and its
//! keep-alive comments keep that connection from ever being idle. So at most
//! `limits.maxEventStreams` are open at once (and never more than half the process's open-file
//! limit, so streams cannot take every descriptor), at most `limits.maxEventStreamsPerPeer`
//! per peer (peers counted as sessions count them: `auth::peer_key`); beyond
//! either the request is refused (503 or 429, with `Retry-After`, closing the connection). A
//! stream is ended by the server after `limits.eventStreamLifetimeSecs`; its client reconnects,
//! as server-sent events do.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::auth::peer_key;

/// The media type of server-sent events.
const EVENT_STREAM: &str = "text/event-stream";
use promptd_base::limits::Limits;

/// The stream bounds, from [`Limits`] and the open-file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    pub max_streams: usize,
    pub max_per_peer: usize,
    pub lifetime: Duration,
}

impl StreamLimits {
    /// `limits`' bounds, the total kept at or below half of `open_files` (the process's
    /// open-file limit, when known).
    pub fn from_limits(limits: &Limits, open_files: Option<u64>) -> StreamLimits {
        let max_streams = match open_files {
            Some(n) => limits
                .max_event_streams
                .min(usize::try_from(n / 2).unwrap_or(usize::MAX))
                .max(1),
            None => limits.max_event_streams,
        };
        StreamLimits {
            max_streams,
            max_per_peer: limits.max_event_streams_per_peer,
            lifetime: Duration::from_secs(limits.event_stream_lifetime_secs),
        }
    }
}

/// Why a new event stream was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamRefusal {
    #[error(
        "too many event streams: {limit} are open (limits.maxEventStreams, at most half the \
         open-file limit); retry later"
    )]
    Total { limit: usize },
    #[error(
        "too many event streams from {peer}: {limit} are open (limits.maxEventStreamsPerPeer); \
         close some or retry later"
    )]
    PerPeer { peer: IpAddr, limit: usize },
}

#[derive(Debug, Default)]
struct Counts {
    open: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// The event streams open, in all and per peer.
#[derive(Debug)]
pub struct EventStreams {
    limits: StreamLimits,
    counts: Mutex<Counts>,
}

impl EventStreams {
    pub fn new(limits: StreamLimits) -> EventStreams {
        EventStreams {
            limits,
            counts: Mutex::new(Counts::default()),
        }
    }

    pub fn limits(&self) -> StreamLimits {
        self.limits
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.counts().open
    }

    /// A place for one stream of `peer`, or why not.
    pub fn acquire(self: &Arc<Self>, peer: IpAddr) -> Result<StreamPermit, StreamRefusal> {
        let peer = peer_key(peer);
        let mut c = self.counts();
        if c.open >= self.limits.max_streams {
            return Err(StreamRefusal::Total {
                limit: self.limits.max_streams,
            });
        }
        let n = c.per_peer.entry(peer).or_default();
        if *n >= self.limits.max_per_peer {
            return Err(StreamRefusal::PerPeer {
                peer,
                limit: self.limits.max_per_peer,
            });
        }
        *n += 1;
        c.open += 1;
        Ok(StreamPermit {
            streams: self.clone(),
            peer,
        })
    }

    /// The answer of `respond` to a request of `peer` that may open a stream: refused over the
    /// caps; an event stream holds its permit until it ends, and ends after the lifetime; any
    /// other answer gives the permit back at once.
    pub async fn serve(
        self: &Arc<Self>,
        peer: Option<IpAddr>,
        respond: impl Future<Output = Response>,
    ) -> Response {
        let peer = peer.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let permit = match self.acquire(peer) {
            Ok(p) => p,
            Err(refusal) => return refused(&refusal),
        };
        let response = respond.await;
        let is_stream = response.status() == StatusCode::OK
            && response
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(EVENT_STREAM.as_bytes()));
        if !is_stream {
            return response;
        }
        let (parts, body) = response.into_parts();
        let bounded = Bounded {
            body,
            _permit: permit,
            ends: Box::pin(tokio::time::sleep(self.limits.lifetime)),
        };
        Response::from_parts(parts, Body::new(bounded))
    }
}

/// One open stream's place; given back on drop.
#[derive(Debug)]
pub struct StreamPermit {
    streams: Arc<EventStreams>,
    peer: IpAddr,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut c = self.streams.counts();
        c.open -= 1;
        if let Some(n) = c.per_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                c.per_peer.remove(&self.peer);
            }
        }
    }
}

/// An event stream's body holding its permit, ended when its lifetime is over.
struct Bounded {
    body: Body,
    _permit: StreamPermit,
    ends: Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for Bounded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.ends.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.body).poll_frame(cx)
    }
}

/// 503 when the server has its streams, 429 when this peer has; with `Retry-After`, and the
/// connection closed (a refused client holds no descriptor).
fn refused(refusal: &StreamRefusal) -> Response {
    let status = match refusal {
        StreamRefusal::Total { .. } => StatusCode::SERVICE_UNAVAILABLE,
        StreamRefusal::PerPeer { .. } => StatusCode::TOO_MANY_REQUESTS,
    };
    let reason = status.canonical_reason().unwrap_or_default();
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER)),
            (header::CONNECTION, HeaderValue::from_static("close")),
        ],
        format!("{} {reason}: {refusal}\n", status.as_u16()),
    )
        .into_response()
}

/// `Retry-After` of a refused stream, in seconds.
const RETRY_AFTER: &str = "5";

/// Raises the soft limit on open files to the hard limit (the usual soft default is far below
/// what a server with many connections needs); returns the soft limit then in force, when
/// known.
pub fn raise_open_file_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let (Some(current), Some(maximum)) = (limit.current, limit.maximum) else {
        return limit.current;
    };
    if current >= maximum {
        return Some(current);
    }
    let raised = rustix::process::Rlimit {
        current: Some(maximum),
        maximum: Some(maximum),
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => {
            tracing::debug!("open-file limit raised from {current} to {maximum}");
            Some(maximum)
        }
        Err(e) => {
            tracing::debug!("open-file limit stays {current}: raising it to {maximum}: {e}");
            Some(current)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(max: usize, per_peer: usize) -> Arc<EventStreams> {
        Arc::new(EventStreams::new(StreamLimits {
            max_streams: max,
            max_per_peer: per_peer,
            lifetime: Duration::from_secs(60),
        }))
    }

    #[test]
    fn permits_count_against_both_caps_and_are_given_back() {
        let s = streams(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let p1 = s.acquire(a).unwrap();
        let _p2 = s.acquire(a).unwrap();
        assert_eq!(
            s.acquire(a).unwrap_err(),
            StreamRefusal::PerPeer { peer: a, limit: 2 }
        );
        let _p3 = s.acquire(b).unwrap();
        assert_eq!(s.acquire(b).unwrap_err(), StreamRefusal::Total { limit: 3 });
        drop(p1);
        assert_eq!(s.open(), 2);
        assert!(s.acquire(a).is_ok(), "a dropped permit is given back");
        assert_eq!(s.open(), 2, "and the new one dropped at once");
    }

    #[test]
    fn every_loopback_address_is_one_peer() {
        let s = streams(10, 2);
        let _p1 = s.acquire("127.0.0.1".parse().unwrap()).unwrap();
        let _p2 = s.acquire("127.9.8.7".parse().unwrap()).unwrap();
        for other in ["127.0.0.2", "::1", "::ffff:127.1.2.3"] {
            assert!(
                matches!(
                    s.acquire(other.parse().unwrap()),
                    Err(StreamRefusal::PerPeer { .. })
                ),
                "{other}"
            );
        }
    }

    #[test]
    fn the_total_is_at_most_half_the_open_file_limit() {
        let limits = Limits::default();
        assert_eq!(
            StreamLimits::from_limits(&limits, Some(256)).max_streams,
            128
        );
        assert_eq!(
            StreamLimits::from_limits(&limits, Some(1 << 20)).max_streams,
            limits.max_event_streams
        );
        assert_eq!(
            StreamLimits::from_limits(&limits, None).max_streams,
            limits.max_event_streams
        );
    }

    #[tokio::test]
    async fn a_stream_ends_after_its_lifetime_and_gives_its_place_back() {
        use http_body_util::BodyExt;
        let s = Arc::new(EventStreams::new(StreamLimits {
            max_streams: 1,
            max_per_peer: 1,
            lifetime: Duration::from_millis(200),
        }));
        let peer = Some(IpAddr::from([10, 0, 0, 1]));
        let endless = || async {
            use tokio_stream::StreamExt;
            let frames = tokio_stream::iter([Ok::<_, std::convert::Infallible>(
                Bytes::from_static(b": hi\n\n"),
            )]);
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(frames.chain(tokio_stream::pending())))
                .unwrap()
        };
        let started = std::time::Instant::now();
        let response = s.serve(peer, endless()).await;
        assert_eq!(s.open(), 1);
        let refused = s.serve(peer, endless()).await;
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        let mut body = response.into_body();
        assert!(body.frame().await.is_some());
        assert!(body.frame().await.is_none(), "the stream ends");
        assert!(started.elapsed() >= Duration::from_millis(200));
        drop(body);
        assert_eq!(s.open(), 0);
        // An answer that is no stream holds no place.
        let plain = s.serve(peer, async { StatusCode::NOT_FOUND.into_response() });
        assert_eq!(plain.await.status(), StatusCode::NOT_FOUND);
        assert_eq!(s.open(), 0);
    }
}
