//! The text handed to the LLM: an `=== ACTIVE FILE (PRIMARY TARGET) ===` section (path,
//! one-line summary, the excerpts most relevant to the prompt) and a
//! `=== REFERENCE CONTEXT (for patterns/conventions only) ===` section with chunks from other
//! files, each headed by `path:start-end` and its tags, so the model edits the active file and
//! only borrows conventions from the rest.

use super::{ActiveFileContext, IndexedChunk, RetrievedChunk};

pub const ACTIVE_HEADER: &str = "=== ACTIVE FILE (PRIMARY TARGET) ===";
pub const REFERENCE_HEADER: &str = "=== REFERENCE CONTEXT (for patterns/conventions only) ===";

/// One chunk block: `--- path:start-end [Tag: x] ---` then its lines in a fenced block.
pub fn chunk_block(c: &IndexedChunk) -> String {
    let mut header = format!("--- {}:{}-{}", c.path, c.start_line, c.end_line);
    for t in &c.tags {
        header.push(' ');
        header.push_str(t);
    }
    header.push_str(" ---");
    let text = &c.text;
    let fence = if text.contains("```") { "````" } else { "```" };
    let lang = if c.language == "text" {
        ""
    } else {
        &c.language
    };
    format!("{header}\n{fence}{lang}\n{text}\n{fence}\n")
}

/// The active-file section alone (counted against the token budget first).
pub fn active_section(active: &ActiveFileContext) -> String {
    let mut out = format!("{ACTIVE_HEADER}\nFile: {}\n", active.path);
    if !active.summary.is_empty() {
        out.push_str(&format!("Summary: {}\n", active.summary));
    }
    for excerpt in &active.excerpts {
        out.push('\n');
        out.push_str(&chunk_block(&excerpt.chunk));
    }
    out
}

/// Both sections; the reference section is omitted when there is nothing to reference.
pub fn format_context(active: Option<&ActiveFileContext>, chunks: &[RetrievedChunk]) -> String {
    let mut out = String::new();
    if let Some(active) = active {
        out.push_str(&active_section(active));
    }
    if !chunks.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(REFERENCE_HEADER);
        out.push('\n');
        for (i, c) in chunks.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&chunk_block(&c.chunk));
        }
    }
    out
}
