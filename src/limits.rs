//! Resource limits: every bound promptd puts on what an input may cost it, in one place.
//!
//! Each limit protects the process from one kind of input it does not control (a file in a
//! prompt folder, an MCP request, an HTTP peer, a repository, an LLM response). They live in
//! the `limits` section of the project config (`.ado-mcp-config.json`), camelCase, with safe
//! defaults; README lists them. A limit that is hit is an error naming the file, argument or
//! request at fault and the limit's config key, never a crash.

use serde::Deserialize;

/// The `limits` config section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Limits {
    /// Largest prompt file (or config file) read, in bytes; a larger one is reported by name
    /// and left out (its last good version stays served).
    pub max_prompt_file_bytes: u64,
    /// Largest text one render may produce, and the largest string or sequence a template may
    /// build while rendering, in bytes.
    pub max_render_bytes: usize,
    /// Largest JSON-RPC message accepted (a stdio line or an HTTP body), in bytes.
    pub max_request_bytes: usize,
    /// Most prompt names in one `wit-get-prompts` batch (after removing duplicates).
    pub max_batch: usize,
    /// Largest tool result, in bytes of JSON; a larger one is an error, not a truncation.
    pub max_response_bytes: usize,
    /// Largest tool result also sent as JSON text beside `structuredContent`; a larger result's
    /// text content is a one-line summary pointing at `structuredContent`, so the payload is
    /// never sent twice.
    pub max_text_copy_bytes: usize,
    /// Most streamable-HTTP sessions alive at once.
    pub max_sessions: usize,
    /// Most streamable-HTTP sessions alive at once for one peer address.
    pub max_sessions_per_peer: usize,
    /// An HTTP session unused this long is closed (seconds).
    pub session_idle_secs: u64,
    /// Under pressure (sessions above three quarters of the cap) idle sessions are closed
    /// after this many seconds instead.
    pub session_idle_pressure_secs: u64,
    /// Time an HTTP peer has to send a request's headers (seconds).
    pub header_read_timeout_secs: u64,
    /// An HTTP connection that moves no byte in either direction for this many seconds is
    /// closed (a stalled body, a peer that stopped reading); an idle keep-alive connection is
    /// closed after `headerReadTimeoutSecs`.
    pub connection_idle_secs: u64,
    /// Shortest bearer token accepted for a non-loopback HTTP bind, in characters (not
    /// counting surrounding whitespace).
    pub min_auth_token_chars: usize,
    /// Largest document file `compose_prompt` reads as docs, in bytes.
    pub max_doc_bytes: u64,
    /// Most files one repository index takes.
    pub max_index_files: usize,
    /// Most bytes of file content one repository index takes.
    pub max_index_bytes: u64,
    /// Largest LLM response body read, in bytes.
    pub max_llm_response_bytes: usize,
    /// Largest text the secret guard scans in one request (a prompt, a document), in bytes.
    pub max_scan_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_prompt_file_bytes: 1024 * 1024,
            max_render_bytes: 4 * 1024 * 1024,
            max_request_bytes: 4 * 1024 * 1024,
            max_batch: 100,
            max_response_bytes: 16 * 1024 * 1024,
            max_text_copy_bytes: 64 * 1024,
            max_sessions: 1024,
            max_sessions_per_peer: 64,
            session_idle_secs: 300,
            session_idle_pressure_secs: 30,
            header_read_timeout_secs: 10,
            connection_idle_secs: 120,
            min_auth_token_chars: 16,
            max_doc_bytes: 1024 * 1024,
            max_index_files: 200_000,
            max_index_bytes: 2 * 1024 * 1024 * 1024,
            max_llm_response_bytes: 4 * 1024 * 1024,
            max_scan_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Config section key.
pub const SECTION: &str = "limits";

impl Limits {
    /// The limits of a project config: its `limits` section over the defaults.
    pub fn from_config(config: &crate::config::ProjectConfig) -> Result<Limits, String> {
        config.section_as(SECTION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProjectConfig;

    #[test]
    fn section_overrides_defaults_and_rejects_unknown_keys() {
        let cfg = ProjectConfig::parse(r#"{"limits":{"maxBatch":5}}"#, None).unwrap();
        let limits = Limits::from_config(&cfg).unwrap();
        assert_eq!(limits.max_batch, 5);
        assert_eq!(limits.max_render_bytes, Limits::default().max_render_bytes);
        let bad = ProjectConfig::parse(r#"{"limits":{"maxBatsh":5}}"#, None).unwrap();
        let err = Limits::from_config(&bad).unwrap_err();
        assert!(err.contains("maxBatsh"), "{err}");
    }
}
