//! Streamable-HTTP sessions under limits: rmcp's [`LocalSessionManager`] wrapped with a table
//! of live sessions, who opened each and when it was last used (rmcp's manager caps neither
//! the sessions in all nor those of one peer).
//!
//! A new session is admitted only through a [`Reservation`] taken before the `initialize`
//! request reaches rmcp: at most `limits.maxSessions` live (or reserved) sessions in all, and
//! `limits.maxSessionsPerPeer` per peer (`auth::peer_key`: an IPv4 address, an IPv6 /64 network,
//! which one host usually holds whole, and every loopback address as one peer, since any local
//! user can send from any of them). A newcomer is not refused while a live session can give
//! way: a peer at its cap loses its own least recently used session, and when the table is full
//! the peer holding the most sessions loses its least recently used one, so that no peer can
//! hold the table against the others. A session unused for `limits.sessionIdleSecs` is closed,
//! after `limits.sessionIdlePressureSecs` once more than three quarters of the cap is in use.
//! The client of a closed session gets 404 and starts a new session, as the MCP spec says it
//! must.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionManager};
use tokio_util::sync::CancellationToken;

use promptd_base::limits::Limits;
use promptd_http::auth::peer_key;

/// The session bounds, from [`Limits`].
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub max_sessions: usize,
    pub max_per_peer: usize,
    pub idle: Duration,
    pub idle_under_pressure: Duration,
}

impl SessionLimits {
    pub fn from_limits(limits: &Limits) -> SessionLimits {
        SessionLimits {
            max_sessions: limits.max_sessions,
            max_per_peer: limits.max_sessions_per_peer,
            idle: Duration::from_secs(limits.session_idle_secs),
            idle_under_pressure: Duration::from_secs(limits.session_idle_pressure_secs),
        }
    }

    /// More than three quarters of the cap in use.
    fn under_pressure(&self, in_use: usize) -> bool {
        in_use.saturating_mul(4) > self.max_sessions.saturating_mul(3)
    }
}

/// Why a new session was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("too many sessions: {limit} are open (limits.maxSessions); retry later")]
    Total { limit: usize },
    #[error(
        "too many sessions from {peer}: {limit} are open (limits.maxSessionsPerPeer); close \
         some (HTTP DELETE) or retry later"
    )]
    PerPeer { peer: IpAddr, limit: usize },
}

#[derive(Debug)]
struct Live {
    peer: Option<IpAddr>,
    last_used: Instant,
}

#[derive(Debug, Default)]
struct Table {
    live: HashMap<SessionId, Live>,
    /// Sessions per peer key: live ones with that owner plus reservations.
    per_peer: HashMap<IpAddr, usize>,
    reserved: usize,
}

impl Table {
    fn in_use(&self) -> usize {
        self.live.len() + self.reserved
    }

    /// The least recently used live session of `peer`.
    fn lru_of(&self, peer: IpAddr) -> Option<SessionId> {
        self.live
            .iter()
            .filter(|(_, s)| s.peer == Some(peer))
            .min_by_key(|(_, s)| s.last_used)
            .map(|(id, _)| id.clone())
    }

    /// The least recently used live session of the peer holding the most live sessions (of
    /// two peers holding as many, the one whose session is older).
    fn lru_of_largest(&self) -> Option<SessionId> {
        let mut peers: HashMap<IpAddr, (usize, Instant, &SessionId)> = HashMap::new();
        for (id, s) in &self.live {
            let Some(peer) = s.peer else { continue };
            let e = peers.entry(peer).or_insert((0, s.last_used, id));
            e.0 += 1;
            if s.last_used < e.1 {
                (e.1, e.2) = (s.last_used, id);
            }
        }
        peers
            .into_values()
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, _, id)| id.clone())
    }

    /// Takes `id` out of the table (its peer's count with it).
    fn remove(&mut self, id: &SessionId) {
        if let Some(Live {
            peer: Some(peer), ..
        }) = self.live.remove(id)
        {
            self.release_peer(peer);
        }
    }

    fn release_peer(&mut self, peer: IpAddr) {
        if let Some(n) = self.per_peer.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }
}

/// The session manager promptd serves with.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    table: Mutex<Table>,
    limits: SessionLimits,
}

impl BoundedSessions {
    pub fn new(limits: SessionLimits) -> BoundedSessions {
        let mut inner = LocalSessionManager::default();
        // rmcp's own idle timer is the same bound, counted on the session worker.
        inner.session_config.keep_alive = Some(limits.idle);
        BoundedSessions {
            inner,
            table: Mutex::new(Table::default()),
            limits,
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds a place for one new session of `peer`, making room when a cap is reached (see the
    /// module's docs): the session that gives way is out of the table, and
    /// [`admit`](Self::admit) closes it. Refused only when no live session can give way (every
    /// place is a reservation in flight).
    pub fn reserve(self: &Arc<Self>, peer: IpAddr) -> Result<Reservation, Refusal> {
        let peer = peer_key(peer);
        let mut t = self.table();
        let at_peer_cap = t.per_peer.get(&peer).copied().unwrap_or(0) >= self.limits.max_per_peer;
        let full = t.in_use() >= self.limits.max_sessions;
        let mut evicted = None;
        if at_peer_cap || full {
            let victim = if at_peer_cap {
                t.lru_of(peer)
            } else {
                t.lru_of_largest()
            };
            let Some(victim) = victim else {
                return Err(if at_peer_cap {
                    Refusal::PerPeer {
                        peer,
                        limit: self.limits.max_per_peer,
                    }
                } else {
                    Refusal::Total {
                        limit: self.limits.max_sessions,
                    }
                });
            };
            t.remove(&victim);
            evicted = Some(victim);
        }
        *t.per_peer.entry(peer).or_default() += 1;
        t.reserved += 1;
        Ok(Reservation {
            sessions: self.clone(),
            peer,
            evicted,
            done: false,
        })
    }

    /// [`reserve`](Self::reserve), then closes the session that gave way, if any.
    pub async fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Reservation, Refusal> {
        let mut reservation = self.reserve(peer)?;
        if let Some(id) = reservation.evicted.take() {
            tracing::debug!(session = %id, "closing the least recently used HTTP session to admit a new one");
            let _ = self.inner.close_session(&id).await;
        }
        Ok(reservation)
    }

    /// Whether `id` is a live session.
    pub fn is_live(&self, id: &str) -> bool {
        self.table().live.contains_key(id)
    }

    /// Live sessions.
    pub fn len(&self) -> usize {
        self.table().live.len()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn touch(&self, id: &SessionId) {
        if let Some(s) = self.table().live.get_mut(id) {
            s.last_used = Instant::now();
        }
    }

    fn forget(&self, id: &SessionId) {
        self.table().remove(id);
    }

    /// Sessions unused longer than the idle bound that applies now.
    fn expired(&self) -> Vec<SessionId> {
        let t = self.table();
        let idle = if self.limits.under_pressure(t.in_use()) {
            self.limits.idle_under_pressure
        } else {
            self.limits.idle
        };
        t.live
            .iter()
            .filter(|(_, s)| s.last_used.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Closes idle sessions until `ct` is cancelled, checking a few times per idle period.
    pub fn spawn_reaper(self: &Arc<Self>, ct: CancellationToken) {
        let sessions = Arc::downgrade(self);
        let every = (self.limits.idle_under_pressure.min(self.limits.idle) / 4)
            .clamp(Duration::from_millis(250), Duration::from_secs(5));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = ct.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                for id in sessions.expired() {
                    tracing::debug!(session = %id, "closing idle HTTP session");
                    let _ = sessions.close_session(&id).await;
                }
            }
        });
    }
}

/// A place held for one session being created; dropped unused, it is given back.
#[derive(Debug)]
pub struct Reservation {
    sessions: Arc<BoundedSessions>,
    peer: IpAddr,
    /// The session that gave way for this one, still to be closed.
    evicted: Option<SessionId>,
    done: bool,
}

impl Reservation {
    /// The session `id` was created for this reservation: it now counts as the peer's.
    pub fn commit(mut self, id: &str) {
        let mut t = self.sessions.table();
        t.reserved -= 1;
        match t.live.get_mut(id) {
            Some(s) => s.peer = Some(self.peer),
            // Already closed again: nothing to own.
            None => t.release_peer(self.peer),
        }
        self.done = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.done {
            let mut t = self.sessions.table();
            t.reserved -= 1;
            t.release_peer(self.peer);
        }
    }
}

impl SessionManager for BoundedSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.table().live.insert(
            id.clone(),
            Live {
                peer: None,
                last_used: Instant::now(),
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.touch(id);
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No external store: a session that is gone stays gone (the client gets 404).
        Ok(RestoreOutcome::NotSupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per_peer: usize) -> SessionLimits {
        SessionLimits {
            max_sessions: max,
            max_per_peer: per_peer,
            idle: Duration::from_secs(300),
            idle_under_pressure: Duration::from_secs(30),
        }
    }

    #[test]
    fn reservations_count_against_both_caps_and_are_given_back() {
        let s = Arc::new(BoundedSessions::new(limits(3, 2)));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let r1 = s.reserve(a).unwrap();
        let _r2 = s.reserve(a).unwrap();
        assert_eq!(
            s.reserve(a).unwrap_err(),
            Refusal::PerPeer { peer: a, limit: 2 }
        );
        let _r3 = s.reserve(b).unwrap();
        assert_eq!(s.reserve(b).unwrap_err(), Refusal::Total { limit: 3 });
        drop(r1);
        assert!(s.reserve(a).is_ok(), "a dropped reservation is given back");
    }

    #[test]
    fn ipv6_peers_count_per_network() {
        let s = Arc::new(BoundedSessions::new(limits(10, 1)));
        let _r = s.reserve("2001:db8::1".parse().unwrap()).unwrap();
        assert!(matches!(
            s.reserve("2001:db8::ffff:2".parse().unwrap()),
            Err(Refusal::PerPeer { .. })
        ));
        assert!(s.reserve("2001:db8:0:1::1".parse().unwrap()).is_ok());
        assert_eq!(
            peer_key("::ffff:10.0.0.1".parse().unwrap()),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
    }

    /// A live session `id` of `peer`, last used `age_secs` ago.
    fn live(s: &BoundedSessions, id: &str, peer: &str, age_secs: u64) {
        let peer = peer_key(peer.parse().unwrap());
        let mut t = s.table();
        t.live.insert(
            id.into(),
            Live {
                peer: Some(peer),
                last_used: Instant::now() - Duration::from_secs(age_secs),
            },
        );
        *t.per_peer.entry(peer).or_default() += 1;
    }

    fn evicted(r: &Reservation) -> Option<&str> {
        r.evicted.as_deref()
    }

    #[test]
    fn every_loopback_address_is_one_peer() {
        let lo = peer_key("127.0.0.1".parse().unwrap());
        for other in ["127.0.0.2", "127.255.1.9", "::1", "::ffff:127.3.4.5"] {
            assert_eq!(peer_key(other.parse().unwrap()), lo, "{other}");
        }
        assert_ne!(peer_key("10.0.0.1".parse().unwrap()), lo);
        let s = Arc::new(BoundedSessions::new(limits(100, 2)));
        let _r1 = s.reserve("127.0.0.2".parse().unwrap()).unwrap();
        let _r2 = s.reserve("127.0.0.3".parse().unwrap()).unwrap();
        assert!(matches!(
            s.reserve("127.0.0.4".parse().unwrap()),
            Err(Refusal::PerPeer { .. })
        ));
    }

    #[test]
    fn a_full_table_gives_way_with_the_largest_peers_oldest_session() {
        let s = Arc::new(BoundedSessions::new(limits(5, 4)));
        live(&s, "a1", "127.0.0.2", 50);
        live(&s, "a2", "127.0.0.3", 90);
        live(&s, "a3", "127.0.0.4", 10);
        live(&s, "b1", "10.0.0.2", 500);
        live(&s, "b2", "10.0.0.2", 400);
        // Full: a newcomer evicts the least recently used session of the loopback peer, which
        // holds three (not b1, older but of a peer holding two).
        let r = s.reserve("10.0.0.9".parse().unwrap()).unwrap();
        assert_eq!(evicted(&r), Some("a2"));
        assert!(!s.is_live("a2"));
        assert_eq!(s.len(), 4);
        // Held places are not evicted: committed, the newcomer's session counts as its own.
        drop(r);
        live(&s, "c1", "10.0.0.9", 0);
        let r = s.reserve("10.0.0.3".parse().unwrap()).unwrap();
        assert_eq!(
            evicted(&r),
            Some("b1"),
            "two peers hold two: the older session goes"
        );
    }

    #[test]
    fn a_peer_at_its_cap_gives_way_with_its_own_oldest_session() {
        let s = Arc::new(BoundedSessions::new(limits(100, 2)));
        live(&s, "old", "127.0.0.2", 100);
        live(&s, "new", "127.0.0.3", 1);
        live(&s, "other", "10.0.0.1", 1000);
        let r = s.reserve("127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(evicted(&r), Some("old"));
        assert!(s.is_live("other") && s.is_live("new"));
    }

    #[tokio::test]
    async fn admitting_closes_the_session_that_gave_way() {
        let s = Arc::new(BoundedSessions::new(limits(1, 1)));
        let r = s.admit("10.0.0.1".parse().unwrap()).await.unwrap();
        let (id, _transport) = s.create_session().await.unwrap();
        r.commit(&id);
        let r = s.admit("10.0.0.2".parse().unwrap()).await.unwrap();
        assert!(evicted(&r).is_none(), "taken and closed");
        assert!(!s.is_live(&id));
        assert!(!s.inner.has_session(&id).await.unwrap());
    }

    #[test]
    fn pressure_is_above_three_quarters() {
        let l = limits(8, 8);
        assert!(!l.under_pressure(6));
        assert!(l.under_pressure(7));
    }
}
