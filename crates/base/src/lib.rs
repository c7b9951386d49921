//! The ground floor every promptd crate stands on: the config file and its sections (`config`),
//! the limits every input is held to (`limits`), which folders a caller may use as a workspace
//! (`workspace`), token counting (`tokens`), metrics, process memory, panic messages and file
//! system probes.
//!
//! **Invariant:** depends on no other promptd crate.

pub mod config;
pub mod filesystem;
pub mod limits;
pub mod memory;
pub mod metrics;
pub mod panics;
pub mod tokens;
pub mod workspace;
