//! Composer stages on fixture workspaces: rules discovery + tools validation + docs fitting, and
//! the reference frame, per request.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use promptd::compose::{ComposeRequest, DocChunk, compose_stages, render_default_frame};

fn fixture(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compose")
        .join(case)
}

fn stages(c: &mut Criterion) {
    let root = fixture("rules_and_docs");
    let mut request = ComposeRequest::new("Add retry to the HTTP client", &root);
    request.current_file = Some("src/app/main.ts".into());
    let guide = DocChunk::from_file(&root, "docs/http.md".as_ref()).unwrap();
    // 40 ranked chunks so the budget fitting does real work.
    request.docs = (0..40)
        .map(|i| DocChunk {
            score: 1.0 - i as f32 / 40.0,
            ..guide.clone()
        })
        .collect();
    c.bench_function("compose_stages rules_and_docs 40 chunks", |b| {
        b.iter(|| compose_stages(&request).unwrap())
    });
    let stages = compose_stages(&request).unwrap();
    c.bench_function("render_default_frame rules_and_docs", |b| {
        b.iter(|| render_default_frame(&stages, &request.query, "You are an assistant."))
    });

    let root = fixture("claude_import_chain");
    let request = ComposeRequest::new("Rename the config loader", &root);
    c.bench_function("compose_stages claude_import_chain", |b| {
        b.iter(|| compose_stages(&request).unwrap())
    });
}

criterion_group!(benches, stages);
criterion_main!(benches);
