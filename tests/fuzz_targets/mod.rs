//! Fuzz targets: each takes arbitrary bytes and checks that promptd neither panics nor breaks an
//! invariant on them. The same functions run in two harnesses: `tests/fuzz.rs` (a short,
//! deterministic run under `cargo test`, replaying every regression fixture in
//! `tests/fixtures/fuzz/<target>/` first) and the cargo-fuzz crate in `fuzz/` (coverage-guided,
//! long runs, `scripts/fuzz`).
//!
//! Every target must stay fast on any input (a fuzz run calls it millions of times), so inputs
//! are what a user or a client could send, and the checks are the invariants promptd promises.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use promptd::config::ProjectConfig;
use promptd::guard::{Guard, ScanInput};
use promptd::limits::Limits;
use promptd::rag::chunk::{ChunkOptions, chunk_file};
use promptd::registry::template::{PromptCategory, parse_prompt_file};
use promptd::registry::{PromptSource, Registry, SourceError, SourceFile};
use promptd::render::{Clock, Renderer};
use serde_json::{Map, Value};

/// A fuzz target: one input, checked by panicking.
pub type Target = fn(&[u8]);

/// The targets by name, as `scripts/fuzz` and the fixture folders name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("prompt_file", prompt_file),
    ("render", render),
    ("scanner", scanner),
    ("chunker", chunker),
    ("jsonrpc", jsonrpc),
];

/// A prompt file (frontmatter + body) as the registry loads it: parsing never panics, and a
/// parsed prompt has a safe name.
pub fn prompt_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(tpl) = parse_prompt_file(&text, "fuzz.md", "fuzz.md", PromptCategory::User) {
        assert!(
            promptd::registry::template::is_safe_segment(&tpl.name),
            "unsafe name {:?}",
            tpl.name
        );
    }
}

/// A prompt file rendered with arbitrary arguments: the bytes up to the first 0xFF are the file,
/// the rest are arguments (`key=value` lines). Rendering never panics, and what it returns stays
/// within the render budget.
pub fn render(data: &[u8]) {
    let (file, args) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let source = MemorySource::new([
        ("fuzz.md", String::from_utf8_lossy(file).into_owned()),
        ("partial.md", "included {{ x }}".to_string()),
    ]);
    let registry = Arc::new(Registry::load(vec![Arc::new(source)]));
    let Some(prompt) = registry.prompts().next().map(|p| p.name.clone()) else {
        return;
    };
    let mut map = Map::new();
    for line in String::from_utf8_lossy(args).lines() {
        if let Some((k, v)) = line.split_once('=') {
            map.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
    let renderer = Renderer::new(registry);
    let clock = Clock::parse("2026-01-15T12:00:00Z").expect("fixed clock");
    if let Ok(rendered) = renderer.render(&prompt, &map, &CONFIG, &clock) {
        let bytes = rendered.text.len();
        assert!(
            bytes <= Limits::default().max_render_bytes,
            "a render returned {bytes} bytes"
        );
    }
}

/// Text scanned by the built-in secret guard: the scan completes, every finding points inside
/// the text, and redaction never panics.
pub fn scanner(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let input = ScanInput::new("fuzz", text.as_ref());
    let report = GUARD
        .scan(std::slice::from_ref(&input))
        .expect("the built-in guard scans any text");
    let lines = text.split('\n').count();
    for f in &report.findings {
        assert!(
            f.line >= 1 && f.line <= f.end_line && f.end_line <= lines,
            "finding outside the text: {f:?} ({lines} lines)"
        );
    }
    let _ = GUARD.redact_input(&input, &report);
}

/// A source file cut into retrieval chunks: the first byte picks the language, the rest is the
/// file. Chunking never panics, and every chunk is a run of the file's own lines.
pub fn chunker(data: &[u8]) {
    const EXTS: &[&str] = &[
        "rs", "ts", "tsx", "js", "py", "go", "java", "c", "cpp", "cs", "rb", "md", "txt",
    ];
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let path = format!("src/fuzz.{}", EXTS[pick as usize % EXTS.len()]);
    let text = String::from_utf8_lossy(rest);
    let lines = text.lines().count().max(1);
    for chunk in chunk_file(&path, &text, ChunkOptions::default()) {
        assert!(
            chunk.start_line >= 1 && chunk.start_line <= chunk.end_line && chunk.end_line <= lines,
            "chunk {}..{} of a {lines}-line file",
            chunk.start_line,
            chunk.end_line
        );
    }
}

/// A raw message as a client sends it (a stdio line or an HTTP body), sorted by the JSON-RPC
/// conformance layer in front of rmcp: it never panics; a refusal is a JSON-RPC 2.0 error with
/// a standard code and an id that is a string, a number or null; what passes to rmcp
/// serializes again.
pub fn jsonrpc(data: &[u8]) {
    match promptd::transport::conformance::check(data) {
        promptd::transport::conformance::Verdict::Refuse(refusal) => {
            let reply: Value = serde_json::from_slice(&refusal.to_json()).expect("reply is JSON");
            assert_eq!(reply["jsonrpc"], "2.0");
            assert!(
                reply["id"].is_null() || reply["id"].is_string() || reply["id"].is_number(),
                "id {}",
                reply["id"]
            );
            let code = reply["error"]["code"].as_i64().expect("error code");
            assert!(
                [-32700, -32600, -32601, -32602, -32603].contains(&code),
                "code {code}"
            );
        }
        promptd::transport::conformance::Verdict::Pass(message) => {
            serde_json::to_vec(&message).expect("a passed message serializes");
        }
        _ => {}
    }
}

static GUARD: LazyLock<Guard> = LazyLock::new(|| Guard::builtin().expect("built-in rules"));
static CONFIG: LazyLock<ProjectConfig> = LazyLock::new(ProjectConfig::default);

/// Prompt files held in memory.
#[derive(Debug)]
struct MemorySource {
    files: BTreeMap<String, String>,
}

impl MemorySource {
    fn new<const N: usize>(files: [(&str, String); N]) -> MemorySource {
        MemorySource {
            files: files.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }
}

impl PromptSource for MemorySource {
    fn describe(&self) -> String {
        "memory".into()
    }

    fn dir(&self) -> Option<&Path> {
        None
    }

    fn list(&self) -> Result<Vec<SourceFile>, SourceError> {
        Ok(self
            .files
            .keys()
            .map(|rel| SourceFile {
                rel_path: rel.clone(),
                display_path: self.display_path(rel),
                category: PromptCategory::User,
            })
            .collect())
    }

    fn read(&self, rel_path: &str, _max_bytes: u64) -> Result<Option<String>, SourceError> {
        Ok(self.files.get(rel_path).cloned())
    }

    fn display_path(&self, rel_path: &str) -> String {
        format!("memory:{rel_path}")
    }
}
