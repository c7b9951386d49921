//! Chunk boundaries and tags for every supported language, snapshotted per fixture file.

use promptd::rag::chunk::{ChunkOptions, chunk_file};
use serde::Serialize;

#[derive(Serialize)]
struct ChunkView {
    lines: String,
    language: &'static str,
    tags: Vec<String>,
    symbols: Vec<String>,
    first_line: String,
}

#[test]
fn chunk_fixtures() {
    insta::glob!("fixtures/rag/chunk/*", |path| {
        let name = path.file_name().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        // Small windows make the boundaries visible on small fixtures; `*_long` files use the
        // shipped 48/8 defaults.
        let options = if name.contains("long") {
            ChunkOptions::default()
        } else {
            ChunkOptions {
                chunk_lines: 12,
                overlap: 3,
            }
        };
        let chunks: Vec<ChunkView> = chunk_file(name, &text, options)
            .into_iter()
            .map(|c| ChunkView {
                lines: format!("{}-{}", c.start_line, c.end_line),
                language: c.language.name(),
                tags: c.tags,
                symbols: c.symbols,
                first_line: c.text.lines().next().unwrap_or_default().to_string(),
            })
            .collect();
        assert!(!chunks.is_empty(), "{name} produced no chunks");
        insta::assert_yaml_snapshot!(chunks);
    });
}

#[test]
fn chunks_cover_every_code_line() {
    // Whatever the language, no non-blank line is lost between chunks.
    for entry in std::fs::read_dir("tests/fixtures/rag/chunk").unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let chunks = chunk_file(
            &name,
            &text,
            ChunkOptions {
                chunk_lines: 12,
                overlap: 3,
            },
        );
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if line.trim().is_empty() {
                continue;
            }
            assert!(
                chunks.iter().any(|c| c.start_line <= n && n <= c.end_line),
                "{name}:{n} ({line:?}) is in no chunk"
            );
        }
    }
}
