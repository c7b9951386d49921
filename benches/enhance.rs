//! enhance_prompt end to end, excluding the LLM: scan the prompt, retrieve (warm index), scan
//! the context, render the rewrite template. The repository is a copy of a real crate, the
//! vendored minijinja 3.0.5 (`vendor/minijinja`, always in the checkout); retrieval is lexical
//! (no vectors are computed here).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use promptd::catalog::EnhanceRequest;
use promptd::enhance::{EnhanceStatus, Enhancer};
use promptd::guard::Guard;
use promptd::library::{LibraryOptions, PromptLibrary};
use promptd::rag::RagConfig;
use promptd::registry::{BuiltinSource, PromptSource};
use promptd::stages::{RetrieversUnder, validate_enhance};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn bench(c: &mut Criterion) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("vendor/minijinja");
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("minijinja");
    copy_dir(&src, &repo);

    let roots: Vec<Arc<dyn PromptSource>> = vec![Arc::new(BuiltinSource)];
    let library = Arc::new(
        PromptLibrary::open_with_roots(
            LibraryOptions {
                cwd: tmp.path().to_path_buf(),
                ..Default::default()
            },
            roots,
        )
        .unwrap(),
    );
    let rag = RagConfig {
        embeddings: false,
        ..RagConfig::default()
    };
    let enhancer = Enhancer {
        snapshot: library.snapshot(),
        clock: *library.clock(),
        guard: Ok(Arc::new(Guard::builtin().unwrap())),
        retriever: Arc::new(RetrieversUnder {
            retrievers: Arc::default(),
            config: rag,
        }),
        llm: None,
    };
    let req = validate_enhance(
        &EnhanceRequest {
            prompt:
                "make undefined variables in templates raise a clear error with the line number"
                    .into(),
            active_file: Some("src/environment.rs".into()),
            working_directory: Some(repo.clone()),
        },
        &promptd::workspace::WorkspacePolicy::trusted(&Default::default()),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Warm up: the first call builds the index.
    let first = rt.block_on(enhancer.enhance(&req, Vec::new())).unwrap();
    assert_eq!(first.status, EnhanceStatus::Original);
    eprintln!(
        "context: {} chunks, {} tokens",
        first.context.chunks, first.context.tokens
    );
    c.bench_function(
        "enhance without LLM (scan+retrieve+scan+render), warm",
        |b| {
            b.iter(|| {
                black_box(
                    rt.block_on(enhancer.enhance(&req, Vec::new()))
                        .unwrap()
                        .context
                        .tokens,
                )
            })
        },
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
