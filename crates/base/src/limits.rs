//! Resource limits: every bound promptd puts on what an input may cost it, in one place.
//!
//! Each limit protects the process from one kind of input it does not control (a file in a
//! prompt folder, an MCP request, an HTTP peer, a repository, an LLM response). They live in
//! the `limits` section of the project config (`.ado-mcp-config.json`), camelCase, with safe
//! defaults; README lists them. A limit that is hit is an error naming the file, argument or
//! request at fault and the limit's config key, never a crash.
//!
//! [`read_text_capped`] reads a text file under a size limit (prompt files, the config file,
//! compose docs). This module depends on nothing of the crate: the config reads
//! its own file through it and parses the `limits` section into [`Limits`]
//! (`ProjectConfig::limits`).

use std::io::Read;
use std::path::Path;

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
    /// Most bytes of strings and sequences one render may create in total (counted as they
    /// are created, whether kept or not), so that many values under `maxRenderBytes` cannot
    /// add up.
    pub max_render_total_bytes: usize,
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
    /// Most repositories a server keeps open for retrieval at once (each with its index, folder
    /// watcher and background work); opening another closes the least recently used.
    pub max_repositories: usize,
    /// Most server-sent event streams open at once (`GET /mcp` and `/studio/events`
    /// together). The server also keeps it at or below half its open-file limit, so that
    /// streams never take every descriptor.
    pub max_event_streams: usize,
    /// Most event streams open at once for one peer address.
    pub max_event_streams_per_peer: usize,
    /// An event stream is ended by the server after this many seconds (its client reconnects,
    /// as server-sent events do).
    pub event_stream_lifetime_secs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_prompt_file_bytes: 1024 * 1024,
            max_render_bytes: 4 * 1024 * 1024,
            max_render_total_bytes: 64 * 1024 * 1024,
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
            max_repositories: 8,
            max_event_streams: 512,
            max_event_streams_per_peer: 64,
            event_stream_lifetime_secs: 3600,
        }
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;
const DAY_SECS: u64 = 24 * 60 * 60;

impl Limits {
    /// Checks every limit against the range it may take; the error names the first key out of
    /// range and the range (a zero timeout, or one so large that a deadline overflows, never
    /// reaches the server).
    pub fn check(&self) -> Result<(), String> {
        let n = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        let ranges: [(&str, u64, u64, u64); 22] = [
            ("maxPromptFileBytes", self.max_prompt_file_bytes, 1, GIB),
            ("maxRenderBytes", n(self.max_render_bytes), 1, GIB),
            (
                "maxRenderTotalBytes",
                n(self.max_render_total_bytes),
                1,
                16 * GIB,
            ),
            ("maxRequestBytes", n(self.max_request_bytes), 1, GIB),
            ("maxBatch", n(self.max_batch), 1, 100_000),
            ("maxResponseBytes", n(self.max_response_bytes), 1, 4 * GIB),
            ("maxTextCopyBytes", n(self.max_text_copy_bytes), 0, GIB),
            ("maxSessions", n(self.max_sessions), 1, 1_000_000),
            (
                "maxSessionsPerPeer",
                n(self.max_sessions_per_peer),
                1,
                1_000_000,
            ),
            ("sessionIdleSecs", self.session_idle_secs, 1, 7 * DAY_SECS),
            (
                "sessionIdlePressureSecs",
                self.session_idle_pressure_secs,
                1,
                7 * DAY_SECS,
            ),
            (
                "headerReadTimeoutSecs",
                self.header_read_timeout_secs,
                1,
                3_600,
            ),
            ("connectionIdleSecs", self.connection_idle_secs, 1, DAY_SECS),
            ("minAuthTokenChars", n(self.min_auth_token_chars), 1, 4_096),
            ("maxDocBytes", self.max_doc_bytes, 1, GIB),
            ("maxIndexFiles", n(self.max_index_files), 1, 100_000_000),
            ("maxIndexBytes", self.max_index_bytes, 1, 1024 * GIB),
            (
                "maxLlmResponseBytes",
                n(self.max_llm_response_bytes),
                1,
                GIB,
            ),
            ("maxRepositories", n(self.max_repositories), 1, 1_024),
            ("maxEventStreams", n(self.max_event_streams), 1, 1_000_000),
            (
                "maxEventStreamsPerPeer",
                n(self.max_event_streams_per_peer),
                1,
                1_000_000,
            ),
            (
                "eventStreamLifetimeSecs",
                self.event_stream_lifetime_secs,
                1,
                DAY_SECS,
            ),
        ];
        for (key, value, min, max) in ranges {
            if !(min..=max).contains(&value) {
                return Err(format!(
                    "{SECTION}.{key}: {value} is out of range {min}..={max}"
                ));
            }
        }
        Ok(())
    }
}

/// Config section key.
pub const SECTION: &str = "limits";

/// Config key of [`Limits::max_prompt_file_bytes`], for messages.
pub const MAX_PROMPT_FILE_BYTES: &str = "limits.maxPromptFileBytes";
/// Config key of [`Limits::max_render_bytes`], for messages.
pub const MAX_RENDER_BYTES: &str = "limits.maxRenderBytes";
/// Config key of [`Limits::max_render_total_bytes`], for messages.
pub const MAX_RENDER_TOTAL_BYTES: &str = "limits.maxRenderTotalBytes";

/// Why a file could not be read under a size cap. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CappedReadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a regular file")]
    NotRegular { path: String },
    #[error("{path}: {size} bytes is larger than the limit of {limit} bytes (`{key}`)")]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        key: &'static str,
    },
    #[error("{path}: not valid UTF-8 (at byte {offset})")]
    NotUtf8 { path: String, offset: usize },
}

impl CappedReadError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, CappedReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Reads a regular UTF-8 text file of at most `limit` bytes (`key` names the limit in the
/// error). The size is checked before reading, and the read itself stops one byte past the
/// limit, so a file that grows meanwhile, a sparse file, or a device never costs more than
/// `limit + 1` bytes; FIFOs and devices are refused without being opened for reading.
pub fn read_text_capped(
    path: &Path,
    limit: u64,
    key: &'static str,
) -> Result<String, CappedReadError> {
    let shown = || path.display().to_string();
    let io = |source| CappedReadError::Io {
        path: shown(),
        source,
    };
    let check = |meta: &std::fs::Metadata| {
        if !meta.is_file() {
            Err(CappedReadError::NotRegular { path: shown() })
        } else if meta.len() > limit {
            Err(CappedReadError::TooLarge {
                path: shown(),
                size: meta.len(),
                limit,
                key,
            })
        } else {
            Ok(meta.len())
        }
    };
    check(&std::fs::metadata(path).map_err(io)?)?;
    let file = std::fs::File::open(path).map_err(io)?;
    let size = check(&file.metadata().map_err(io)?)?;
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > limit {
        return Err(CappedReadError::TooLarge {
            path: shown(),
            size: buf.len() as u64,
            limit,
            key,
        });
    }
    String::from_utf8(buf).map_err(|e| CappedReadError::NotUtf8 {
        path: shown(),
        offset: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_read_refuses_large_sparse_and_special_files() {
        let dir = tempfile::tempdir().unwrap();
        let sparse = dir.path().join("sparse.md");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        let err = read_text_capped(&sparse, 1024, MAX_PROMPT_FILE_BYTES).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("sparse.md") && msg.contains("3221225472"),
            "{msg}"
        );
        assert!(msg.contains(MAX_PROMPT_FILE_BYTES), "{msg}");
        let err = read_text_capped(Path::new("/dev/zero"), 1024, MAX_PROMPT_FILE_BYTES);
        assert!(
            matches!(err, Err(CappedReadError::NotRegular { .. })),
            "{err:?}"
        );
        let bad = dir.path().join("bad.md");
        std::fs::write(&bad, b"ok\n\xff\xfe").unwrap();
        let err = read_text_capped(&bad, 1024, MAX_PROMPT_FILE_BYTES).unwrap_err();
        assert!(err.to_string().contains("UTF-8 (at byte 3)"), "{err}");
        std::fs::write(&bad, "fine").unwrap();
        assert_eq!(
            read_text_capped(&bad, 4, MAX_PROMPT_FILE_BYTES).unwrap(),
            "fine"
        );
        assert!(read_text_capped(&bad, 3, MAX_PROMPT_FILE_BYTES).is_err());
    }

    #[test]
    fn every_limit_is_range_checked_by_its_key() {
        assert_eq!(Limits::default().check(), Ok(()));
        let zero = Limits {
            connection_idle_secs: 0,
            ..Limits::default()
        };
        assert_eq!(
            zero.check().unwrap_err(),
            "limits.connectionIdleSecs: 0 is out of range 1..=86400"
        );
        let huge = Limits {
            header_read_timeout_secs: u64::MAX - 1,
            ..Limits::default()
        };
        let err = huge.check().unwrap_err();
        assert!(
            err.starts_with("limits.headerReadTimeoutSecs: 18446744073709551614 is out of range"),
            "{err}"
        );
        let no_streams = Limits {
            max_event_streams: 0,
            ..Limits::default()
        };
        assert!(
            no_streams
                .check()
                .unwrap_err()
                .contains("limits.maxEventStreams:")
        );
    }
}
