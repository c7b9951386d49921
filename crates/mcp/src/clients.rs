//! The clients to notify when prompts or tools change: every session that completed `initialize` (the
//! stdio peer, each streamable-HTTP session) and every 2026-07-28 `subscriptions/listen` stream.
//! Closed clients are dropped when found.

use std::sync::Mutex;

use rmcp::RoleServer;
use rmcp::model::{PromptListChangedNotification, ServerNotification, ToolListChangedNotification};
use rmcp::service::{Peer, SubscriptionSink};

/// One way to reach a client.
#[derive(Debug, Clone)]
enum Client {
    /// A session that negotiated through `initialize`: notifications go straight to the peer.
    Session(Peer<RoleServer>),
    /// A `subscriptions/listen` request that accepted `promptsListChanged` or
    /// `toolsListChanged`.
    Subscription(SubscriptionSink),
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    Prompts,
    Tools,
}

/// Every connected client, for `notifications/prompts/list_changed` and
/// `notifications/tools/list_changed`.
#[derive(Debug, Default)]
pub struct ConnectedClients {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    clients: Vec<(u64, Client)>,
}

impl ConnectedClients {
    pub fn new() -> ConnectedClients {
        ConnectedClients::default()
    }

    /// Registers a session peer (called from `initialize`); returns its registration id.
    pub fn add_session(&self, peer: Peer<RoleServer>) -> u64 {
        self.add(Client::Session(peer))
    }

    /// Registers a subscription stream; returns its registration id.
    pub fn add_subscription(&self, sink: SubscriptionSink) -> u64 {
        self.add(Client::Subscription(sink))
    }

    /// Forgets a client (a subscription that ended).
    pub fn remove(&self, id: u64) {
        self.lock().clients.retain(|(i, _)| *i != id);
    }

    /// The number of clients currently registered (closed sessions are pruned first).
    pub fn len(&self) -> usize {
        let mut inner = self.lock();
        inner.clients.retain(|(_, c)| !is_closed(c));
        inner.clients.len()
    }

    /// Whether no client is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends `notifications/prompts/list_changed` to every client; drops the ones that are gone.
    /// Returns how many were notified.
    pub async fn notify_prompts_changed(&self) -> usize {
        self.notify(Changed::Prompts).await
    }

    /// Sends `notifications/{prompts,tools}/list_changed` to every client that takes it (a
    /// subscription only when it accepted that kind); drops the ones that are gone. Returns how
    /// many were notified.
    pub async fn notify(&self, changed: Changed) -> usize {
        let targets: Vec<(u64, Client)> = {
            let mut inner = self.lock();
            inner.clients.retain(|(_, c)| !is_closed(c));
            inner.clients.clone()
        };
        let mut sent = 0;
        let mut gone = Vec::new();
        for (id, client) in targets {
            let result = match (&client, changed) {
                (Client::Session(peer), Changed::Prompts) => peer
                    .notify_prompt_list_changed()
                    .await
                    .map_err(|e| e.to_string()),
                (Client::Session(peer), Changed::Tools) => peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| e.to_string()),
                (Client::Subscription(sink), _) => {
                    let accepted = sink.accepted();
                    let notification = match changed {
                        Changed::Prompts if accepted.prompts_list_changed == Some(true) => {
                            ServerNotification::PromptListChangedNotification(
                                PromptListChangedNotification::default(),
                            )
                        }
                        Changed::Tools if accepted.tools_list_changed == Some(true) => {
                            ServerNotification::ToolListChangedNotification(
                                ToolListChangedNotification::default(),
                            )
                        }
                        _ => continue,
                    };
                    sink.send(notification).await.map_err(|e| e.to_string())
                }
            };
            match result {
                Ok(()) => sent += 1,
                Err(e) => {
                    tracing::debug!("dropping client {id}: {e}");
                    gone.push(id);
                }
            }
        }
        if !gone.is_empty() {
            self.lock().clients.retain(|(id, _)| !gone.contains(id));
        }
        sent
    }

    fn add(&self, client: Client) -> u64 {
        let mut inner = self.lock();
        inner.clients.retain(|(_, c)| !is_closed(c));
        inner.next_id += 1;
        let id = inner.next_id;
        inner.clients.push((id, client));
        id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn is_closed(client: &Client) -> bool {
    match client {
        Client::Session(peer) => peer.is_transport_closed(),
        Client::Subscription(_) => false,
    }
}
