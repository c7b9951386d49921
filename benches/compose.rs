//! Composer stages on fixture workspaces: rules discovery + tools validation + docs fitting, and
//! the whole compose through the built-in templates, per request; and the docs budget fitting
//! alone over a few hundred chunks, where its cost must grow linearly with the chunks kept.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use promptd::compose::{
    ComposeRequest, DEFAULT_DOCS_BUDGET, DocChunk, compose_prompt, fit_docs, gather_parts,
};

fn fixture(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compose")
        .join(case)
}

fn stages(c: &mut Criterion) {
    let root = fixture("rules_and_docs");
    let mut request = ComposeRequest::new("Add retry to the HTTP client", &root);
    request.current_file = Some("src/app/main.ts".into());
    let workspace = promptd::workspace::Workspace::open(
        &root,
        &promptd::workspace::WorkspacePolicy::trusted(&Default::default()),
    )
    .unwrap();
    let max = promptd::limits::Limits::default().max_doc_bytes;
    let guide = DocChunk::read(&workspace, "doc", "docs/http.md".as_ref(), max).unwrap();
    // 40 ranked chunks so the budget fitting does real work.
    request.docs = (0..40)
        .map(|i| DocChunk {
            score: 1.0 - i as f32 / 40.0,
            ..guide.clone()
        })
        .collect();
    c.bench_function("gather_parts rules_and_docs 40 chunks", |b| {
        b.iter(|| gather_parts(&request).unwrap())
    });
    let library = promptd::library::PromptLibrary::open_with_roots(
        Default::default(),
        vec![std::sync::Arc::new(promptd::registry::BuiltinSource)],
    )
    .unwrap();
    let snapshot = library.snapshot();
    c.bench_function("compose_prompt rules_and_docs 40 chunks", |b| {
        b.iter(|| compose_prompt(&snapshot, library.clock(), &request, None).unwrap())
    });

    let root = fixture("claude_import_chain");
    let request = ComposeRequest::new("Rename the config loader", &root);
    c.bench_function("gather_parts claude_import_chain", |b| {
        b.iter(|| gather_parts(&request).unwrap())
    });
}

/// `count` retrieved-looking chunks of 3 to 12 lines each, ranked by descending score.
fn doc_chunks(count: usize) -> Vec<DocChunk> {
    const LINES: [&str; 4] = [
        "Retries use exponential backoff with jitter; the default is 3 attempts.",
        "    pub fn fetch_with_retry(&self, url: &str) -> Result<String, HttpError> {",
        "Timeouts are per attempt, and only idempotent requests (GET, PUT, DELETE) retry.",
        "    }",
    ];
    (0..count)
        .map(|i| {
            let lines = 3 + i % 10;
            let text: String = (0..lines)
                .map(|l| format!("{} // {i}.{l}\n", LINES[(i + l) % LINES.len()]))
                .collect();
            DocChunk {
                path: format!("src/net/client_{}.rs", i % 17),
                start_line: 1 + i,
                end_line: i + lines,
                text,
                score: 1.0 - i as f32 / count as f32,
            }
        })
        .collect()
}

fn docs_fitting(c: &mut Criterion) {
    let chunks = doc_chunks(300);
    // Every chunk fits: the fitting keeps all 300, the worst case for re-counting the block.
    c.bench_function("fit_docs 300 chunks, all kept", |b| {
        b.iter(|| fit_docs(&chunks, 1_000_000))
    });
    c.bench_function("fit_docs 300 chunks, default budget", |b| {
        b.iter(|| fit_docs(&chunks, DEFAULT_DOCS_BUDGET))
    });
}

criterion_group!(benches, stages, docs_fitting);
criterion_main!(benches);
