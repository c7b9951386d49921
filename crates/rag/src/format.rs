//! The text handed to the LLM: an `=== ACTIVE FILE (PRIMARY TARGET) ===` section (path,
//! one-line summary of the file, the excerpts most relevant to the prompt) and a
//! `=== REFERENCE CONTEXT (for patterns/conventions only) ===` section with chunks from other
//! files, each headed by `path:start-end` and its tags, so the model edits the active file and
//! only borrows conventions from the rest.

use super::index::IndexedChunk;
use super::query::{ActiveFileContext, RetrievedChunk};

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

/// First meaningful line of a file: skips blank lines, shebangs, licence headers, imports and
/// comment markers, so the summary says what the file is about.
pub fn summary_line(text: &str) -> String {
    for line in text.lines().take(200) {
        let stripped = line
            .trim()
            .trim_start_matches(['/', '*', '#', '!', '-', ';', '"', '\''])
            .trim_start_matches("<!--")
            .trim_end_matches("-->")
            .trim_end_matches(['*', '/', '"', '\''])
            .trim();
        let lower = stripped.to_ascii_lowercase();
        if stripped.len() < 3
            || line.trim_start().starts_with("#!")
            || line.trim_start().starts_with("#include")
            || [
                "copyright",
                "spdx",
                "license",
                "licence",
                "@file",
                "-*-",
                "eslint",
                "prettier",
            ]
            .iter()
            .any(|w| lower.contains(w))
            || [
                "use ",
                "import ",
                "from ",
                "package ",
                "using ",
                "require",
                "extern crate",
                "mod ",
            ]
            .iter()
            .any(|w| lower.starts_with(w))
            || !stripped.chars().any(char::is_alphabetic)
        {
            continue;
        }
        let mut s = stripped.to_string();
        if s.len() > 160 {
            s.truncate(s.floor_char_boundary(157));
            s.push_str("...");
        }
        return s;
    }
    String::new()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_skips_boilerplate() {
        let text = "#!/usr/bin/env python\n# Copyright 2024 X\nimport os\n\n\"\"\"Parses config files.\"\"\"\n";
        assert_eq!(summary_line(text), "Parses config files.");
    }

    #[test]
    fn a_long_summary_is_cut_on_a_character_boundary() {
        let line = format!("{}é and more", "a".repeat(156));
        let summary = summary_line(&line);
        assert_eq!(summary, format!("{}...", "a".repeat(156)));
    }
}
