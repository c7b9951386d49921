//! MCP transports under promptd's bounds, for what rmcp 3.11 lacks. Each module is one such
//! gap and says which; each is a candidate to propose upstream, and goes when rmcp has it:
//! - [`conformance`]: JSON-RPC errors for malformed messages, wrong shapes and misfit params;
//! - [`lines`]: the stdio line transport (line size cap, requests in flight bounded);
//! - [`pipes`]: stdin and stdout as non-blocking pipes;
//! - [`sessions`]: streamable-HTTP sessions capped in all and per peer, idle ones closed;
//! - [`http_guard`]: the guard in front of rmcp's HTTP service (bounded bodies, admission,
//!   event-stream caps, DELETE semantics).
//!
//! **Invariant:** knows nothing of prompts, stages or handlers: it moves MCP messages between
//! bytes and rmcp. Depends only on `promptd-base` and `promptd-http`.

pub mod conformance;
pub mod http_guard;
pub mod lines;
pub mod pipes;
pub mod sessions;
