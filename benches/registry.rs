//! Registry and renderer benchmarks: cold load of 1,000 prompt files, render of a 10 KB prompt,
//! and a metadata-only `wit-get-prompts` listing of 1,000 prompts.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use promptd::config::ProjectConfig;
use promptd::library::{GetPromptsRequest, LibraryOptions, PromptLibrary};
use promptd::registry::{DirSource, PromptSource, Registry};
use promptd::render::{Clock, Renderer};
use serde_json::{Map, Value};

fn write_prompts(dir: &Path, n: usize) {
    for i in 0..n {
        let shape = if i % 2 == 0 {
            "arguments:\n  target: { type: string, required: true, description: What to work on }\n  depth: { type: integer, default: 3, minimum: 1 }\n"
        } else {
            "arguments:\n  - name: target\n    required: true\n    description: What to work on\n  - name: depth\n    type: integer\n    default: 3\n"
        };
        let text = format!(
            "---\ntitle: Prompt {i}\ndescription: >-\n  Benchmark prompt number {i}\n  with a folded description.\nversion: 1.{i}\n{shape}---\nWork on {{{{ target }}}} at depth {{{{ depth }}}} ({{{{ today }}}}).\n{}\n",
            "Some instructions for the agent. ".repeat(20)
        );
        std::fs::write(dir.join(format!("prompt_{i:04}.md")), text).unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    write_prompts(dir.path(), 1000);
    let roots = || -> Vec<Arc<dyn PromptSource>> { vec![Arc::new(DirSource::new(dir.path()))] };

    c.bench_function("load 1000 prompt files (cold)", |b| {
        b.iter(|| black_box(Registry::load(roots())).len())
    });

    // A 10 KB prompt with a loop, conditionals and a dozen substitutions.
    let big = tempfile::tempdir().unwrap();
    let mut body = String::from(
        "---\narguments:\n  target: { type: string, required: true }\n  items: { type: array, default: [a, b, c, d] }\n  strict: { type: boolean, default: true }\n---\n",
    );
    while body.len() < 10_000 {
        body.push_str("Review {{ target }} as of {{ today }} ({{ quarter }}).\n{% if strict %}Be strict about error handling and tests.{% endif %}\n{% for i in items %}- check {{ i }} against {{ target }}\n{% endfor %}Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.\n");
    }
    std::fs::write(big.path().join("big.md"), &body).unwrap();
    // The same size of mostly static text, as most real prompts are.
    let mut prose = String::from(
        "---\narguments:\n  target: { type: string, required: true }\n---\nReview {{ target }} as of {{ today }}.\n",
    );
    while prose.len() < 10_000 {
        prose.push_str("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.\n");
    }
    std::fs::write(big.path().join("prose.md"), &prose).unwrap();
    let registry = Arc::new(Registry::load(vec![Arc::new(DirSource::new(big.path()))]));
    let renderer = Renderer::new(registry);
    let config = ProjectConfig::default();
    let clock = Clock::parse("2026-01-15T12:00:00Z").unwrap();
    let mut args = Map::new();
    args.insert("target".into(), Value::String("src/lib.rs".into()));
    let out = renderer.render("big", &args, &config, &clock).unwrap();
    eprintln!(
        "rendered prompt: {} bytes of template, {} bytes of output",
        body.len(),
        out.text.len()
    );
    c.bench_function("render 10 KB prompt (loops, 600 substitutions)", |b| {
        b.iter(|| {
            black_box(
                renderer
                    .render("big", &args, &config, &clock)
                    .unwrap()
                    .text
                    .len(),
            )
        })
    });
    c.bench_function("render 10 KB prompt (static prose)", |b| {
        b.iter(|| {
            black_box(
                renderer
                    .render("prose", &args, &config, &clock)
                    .unwrap()
                    .text
                    .len(),
            )
        })
    });

    let lib = PromptLibrary::open_with_roots(
        LibraryOptions {
            cwd: dir.path().to_path_buf(),
            clock,
            ..Default::default()
        },
        roots(),
    )
    .unwrap();
    let req = GetPromptsRequest {
        include_content: false,
        ..Default::default()
    };
    assert_eq!(lib.get_prompts(&req).listing().unwrap().total_count(), 1000);
    c.bench_function("wit-get-prompts list 1000 metadata-only", |b| {
        b.iter(|| black_box(lib.get_prompts(&req)).success)
    });
    // Building a snapshot's cached listing: done by `reload` (and at `serve` start-up) off the
    // request path; a library opened without either pays it on the first listing.
    c.bench_function(
        "wit-get-prompts list 1000 metadata-only (building the cached listing)",
        |b| {
            b.iter_batched(
                || {
                    PromptLibrary::open_with_roots(
                        LibraryOptions {
                            cwd: dir.path().to_path_buf(),
                            clock,
                            ..Default::default()
                        },
                        roots(),
                    )
                    .unwrap()
                },
                // The library is handed back so that its drop is not timed.
                |fresh| {
                    let ok = black_box(fresh.get_prompts(&req)).success;
                    (fresh, ok)
                },
                criterion::BatchSize::PerIteration,
            )
        },
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
