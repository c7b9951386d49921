//! What every HTTP route of promptd shares: who may call (bearer tokens, the `Host` check),
//! which peer a connection counts as, and how many event streams stay open.
//!
//! **Invariant:** depends only on `promptd-base`.

pub mod auth;
pub mod streams;
