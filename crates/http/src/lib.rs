//! What every HTTP route of promptd shares: who may call (bearer tokens, the `Host` check),
//! which peer a connection counts as, how many event streams stay open, and how connections
//! are served within time limits.
//!
//! **Invariant:** depends only on `promptd-base`.

pub mod auth;
pub mod serve;
pub mod streams;
pub mod threads;
