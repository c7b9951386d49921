//! Retrieval speed on real trees: full lexical index of a copy of `~/.cargo/registry/src`
//! (files/s), re-index after one changed file, query latency (p50) lexical-only, with an active
//! file whose used symbols are followed to their definitions (min, median, p99), and with
//! cached vectors, and background embedding throughput (chunks/s, min/median/p99 over runs,
//! with the machine's load). One-shot numbers are printed first; criterion then measures the
//! repeatable operations.
//!
//! `cargo bench --bench rag` (needs `scripts/setup-model` for the vector parts; set
//! `RAG_BENCH_QUICK=1` to skip the criterion groups; `RAG_BENCH_FULL_INDEX_RUNS=N` full builds,
//! default 3; `RAG_BENCH_FULL_INDEX_ONLY=1` to stop after them; `RAG_BENCH_EMBED_ONLY=1` to run
//! only the embedding throughput part (the static model's, then the transformer's),
//! `RAG_BENCH_EMBED_RUNS=N` runs of it, default 3;
//! `RAG_BENCH_EMBED_TOKENS=128,256` token windows to compare, default the configured one).

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;

// The tests' way of finding the embedding model (environment, else `.deps/`).
#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod guard;
    #[allow(dead_code)]
    pub mod rag;
}
use promptd::rag::{Fusion, RagConfig, RetrievalMode, RetrievalQuery, Retriever};

// The allocator the `promptd` binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const QUERIES: &[&str] = &[
    "parse command line arguments with subcommands",
    "retry an http request with exponential backoff",
    "phrase query scorer positions",
    "serialize a struct to json with serde",
    "tokenizer for BPE encoding",
    "walk a directory respecting gitignore",
    "progress bar template with elapsed time",
    "fix panic when the index writer memory budget is too small",
    "async runtime spawn blocking task",
    "compile a regex into a DFA",
    "error type with thiserror derive",
    "template rendering with filters and loops",
    "ring buffer",
    "lock file busy",
    "utf8 validation of byte slices",
    "hash map with custom hasher",
];

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"))
}

fn copy_tree(from: &Path, to: &Path) -> usize {
    let mut n = 0;
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let ty = entry.file_type().unwrap();
        if ty.is_dir() {
            n += copy_tree(&entry.path(), &target);
        } else if ty.is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
            n += 1;
        }
    }
    n
}

/// A private copy (the index lives inside the tree, and the registry must stay untouched).
fn prepared_copy(name: &str, source: &Path) -> PathBuf {
    let dest = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/rag-bench")
        .join(name);
    if !dest.join(".copied").exists() {
        let _ = std::fs::remove_dir_all(&dest);
        let n = copy_tree(source, &dest);
        std::fs::write(dest.join(".copied"), n.to_string()).unwrap();
    }
    dest
}

fn registry_tree() -> PathBuf {
    let src = cargo_home().join("registry/src");
    let index_dir = std::fs::read_dir(&src)
        .unwrap()
        .next()
        .expect("a registry index folder")
        .unwrap()
        .path();
    prepared_copy("registry", &index_dir)
}

fn registry_crate(name: &str) -> PathBuf {
    let src = cargo_home().join("registry/src");
    for index in std::fs::read_dir(&src).unwrap() {
        let candidate = index.unwrap().path().join(name);
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!("{name} not in the cargo registry");
}

/// The static model, when installed: no runtime, its own token window.
fn static_model_config() -> Option<RagConfig> {
    let dir = support::rag::find_static_model_dir().ok()?;
    Some(RagConfig {
        model_dir: Some(dir),
        ..RagConfig::default()
    })
}

fn model_config() -> Option<RagConfig> {
    let (model, runtime) = support::rag::find_model_paths().ok()?;
    Some(RagConfig {
        model_dir: Some(model),
        ort_dylib_path: Some(runtime),
        ..RagConfig::default()
    })
}

fn lexical() -> RagConfig {
    RagConfig {
        embeddings: false,
        ..RagConfig::default()
    }
}

/// CPU seconds (user + system) this process has used so far: on a shared machine files per
/// CPU-second is the comparable number, files per second depends on the load.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn percentile(mut samples: Vec<f64>, p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn query_latencies(retriever: &Retriever, rounds: usize) -> Vec<f64> {
    let mut samples = Vec::new();
    for _ in 0..rounds {
        for q in QUERIES {
            let started = Instant::now();
            let r = retriever.retrieve(&RetrievalQuery::new(*q)).unwrap();
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(!r.chunks.is_empty() || r.stats.indexed_chunks == 0);
        }
    }
    samples
}

/// The file the re-index benches edit, relative to the tree, and its pristine registry copy.
const TOUCHED: &str = "ignore-0.4.34/src/lib.rs";

/// Puts the edited file back as the registry has it, so every run indexes the same content.
fn restore_touched(repo: &Path) {
    let file = repo.join(TOUCHED);
    if file.exists() {
        let pristine = registry_crate("ignore-0.4.34").join("src/lib.rs");
        std::fs::copy(pristine, file).unwrap();
    }
}

fn touch_one_file(repo: &Path, round: usize) -> PathBuf {
    let file = repo.join(TOUCHED);
    let file = if file.exists() {
        file
    } else {
        repo.join("src/lib.rs")
    };
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!("\n// bench edit {round}\n"));
    std::fs::write(&file, text).unwrap();
    file
}

/// Indexes `tree` from scratch through the one-shot CLI path (`promptd index`: no folder
/// watcher, every refresh walks) and prints files/s and CPU time.
fn full_index(tree: &Path) -> (Retriever, promptd::rag::IndexSummary, f64) {
    // The one-shot CLI path (`promptd index`): no folder watcher, every refresh walks.
    let walking = Retriever::open(
        tree,
        RagConfig {
            watch: false,
            ..lexical()
        },
    )
    .unwrap();
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let summary = walking.index(&|_| {}).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_started;
    println!(
        "full index: {} files, {} chunks, {:.1} MB in {:.2} s = {:.0} files/s, {:.1} MB/s; {:.1} CPU-s = {:.0} files per CPU-second",
        summary.files,
        summary.chunks,
        summary.bytes as f64 / 1e6,
        secs,
        summary.files as f64 / secs,
        summary.bytes as f64 / 1e6 / secs,
        cpu,
        summary.files as f64 / cpu
    );
    (walking, summary, secs)
}

/// Query latency with an active file (the `lib.rs` of every 50th crate of the tree), where
/// retrieval follows the symbols it uses to their definitions: min, median and p99 of the
/// whole query and of the following step, and the machine's load.
fn active_file_latencies(retriever: &Retriever, tree: &Path) {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(tree)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path().join("src/lib.rs")))
        .filter(|p| p.is_file())
        .collect();
    crates.sort();
    let active: Vec<PathBuf> = crates.into_iter().step_by(50).collect();
    let (mut total, mut follow, mut followed) = (Vec::new(), Vec::new(), 0);
    for file in &active {
        for q in QUERIES {
            let started = Instant::now();
            let r = retriever
                .retrieve(&RetrievalQuery {
                    active_file: Some(file.clone()),
                    ..RetrievalQuery::new(*q)
                })
                .unwrap();
            total.push(started.elapsed().as_secs_f64() * 1000.0);
            follow.push(r.stats.timings.follow_ms);
            followed += r
                .chunks
                .iter()
                .filter(|c| c.chunk.tags.iter().any(|t| t.starts_with("[Followed:")))
                .count();
        }
    }
    let line = |samples: &[f64]| {
        format!(
            "min {:.1}, median {:.1}, p99 {:.1} ms",
            percentile(samples.to_vec(), 0.0),
            percentile(samples.to_vec(), 0.5),
            percentile(samples.to_vec(), 0.99)
        )
    };
    println!(
        "query with an active file ({} files x {} queries, {followed} definitions followed): total {}; following {}; load {}",
        active.len(),
        QUERIES.len(),
        line(&total),
        line(&follow),
        common::load_average()
    );
}

/// Background embedding throughput on a fresh copy of a mid-size crate: model load plus
/// embedding every chunk, the vector cache emptied before each run. A transformer runs with one
/// ONNX thread and with the default (one per core), for each token window in
/// `RAG_BENCH_EMBED_TOKENS` (default: the configured window); a static model once. Prints each run, then min, median and p99 of chunks/s over the runs
/// (`RAG_BENCH_EMBED_RUNS`, default 3), chunks per CPU-second (comparable on a loaded machine)
/// and the load before and after.
fn embedding_throughput(model: &RagConfig, cores: usize) {
    let runs: usize = std::env::var("RAG_BENCH_EMBED_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
        .max(1);
    let is_static = model.model_dir.as_deref().is_some_and(|d| {
        promptd::rag::embed::ModelKind::of_dir(d) == Some(promptd::rag::embed::ModelKind::Static)
    });
    // A static model has no window to compare (it pools up to STATIC_MAX_TOKENS).
    let windows: Vec<usize> = match std::env::var("RAG_BENCH_EMBED_TOKENS") {
        Ok(w) if !is_static => w.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        _ => vec![model.embed_max_tokens],
    };
    let repo = prepared_copy("embed", &registry_crate("ignore-0.4.34"));
    let indexer = Retriever::open(&repo, lexical()).unwrap();
    indexer.index(&|_| {}).unwrap();
    drop(indexer);
    let vectors = repo.join(".rag/vectors.bin");
    let mut threads_tried = vec![Some(1), None];
    if cores == 1 || is_static {
        threads_tried.remove(0);
    }
    for window in windows {
        for &threads in &threads_tried {
            let config = RagConfig {
                embed_threads: threads,
                embed_max_tokens: window,
                ..model.clone()
            };
            let label = if is_static {
                format!(
                    "static model, {} token(s) pooled, {cores} thread(s)",
                    promptd::rag::embed::STATIC_MAX_TOKENS
                )
            } else {
                format!(
                    "{} ONNX thread(s), {window}-token window, turns of {}",
                    threads.unwrap_or(cores),
                    promptd::rag::embed::BACKGROUND_TURN
                )
            };
            let load_before = common::load_average();
            let mut rates = Vec::new();
            let mut per_cpu = Vec::new();
            for run in 0..runs {
                let _ = std::fs::remove_file(&vectors);
                // Timed: model load plus embedding every chunk on the background thread.
                let retriever = Retriever::open(&repo, config.clone()).unwrap();
                let started = Instant::now();
                let cpu_started = cpu_seconds();
                retriever.embed_in_background();
                retriever.wait_idle(Duration::from_secs(1800));
                let secs = started.elapsed().as_secs_f64();
                let cpu = cpu_seconds() - cpu_started;
                let n = retriever.cached_vectors();
                let rate = n as f64 / secs;
                println!(
                    "background embedding run {run} ({label}): {n} chunks in {secs:.1} s = {rate:.1} chunks/s; {cpu:.1} CPU-s = {:.1} chunks per CPU-second",
                    n as f64 / cpu
                );
                rates.push(rate);
                per_cpu.push(n as f64 / cpu);
            }
            println!(
                "background embedding ({label}, {runs} run(s)): min {:.1}, median {:.1}, p99 {:.1} chunks/s; median {:.1} chunks per CPU-second; load before {load_before}, after {}",
                percentile(rates.clone(), 0.0),
                percentile(rates.clone(), 0.5),
                percentile(rates, 0.99),
                percentile(per_cpu, 0.5),
                common::load_average()
            );
        }
    }
}

/// How long a query waits for the model while background batches run: one thread embeds
/// batches of the crate's 48-line windows back to back (as background embedding does) while
/// queries are embedded one after another; prints query p50/p99 idle and under that load, and
/// the time of one background turn (the most a query should wait).
fn query_wait_under_background_embedding(model: &RagConfig) {
    use promptd::rag::embed::Embedder;
    use std::sync::atomic::{AtomicBool, Ordering};

    let embedder = Embedder::load(model).unwrap();
    let src = registry_crate("ignore-0.4.34").join("src");
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        texts.extend(lines.chunks(48).map(|w| w.join("\n")));
    }
    let batch = model.embed_batch.max(1);
    let texts: Vec<&str> = texts.iter().map(String::as_str).take(batch * 8).collect();
    let time_queries = |n: usize| {
        let mut samples = Vec::new();
        for i in 0..n {
            let started = Instant::now();
            embedder.embed_query(QUERIES[i % QUERIES.len()]).unwrap();
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        samples
    };
    let idle = time_queries(20);
    let turn = promptd::rag::embed::BACKGROUND_TURN;
    let started = Instant::now();
    embedder.embed(&texts[..turn], batch).unwrap();
    let turn_ms = started.elapsed().as_secs_f64() * 1000.0;
    let stop = AtomicBool::new(false);
    let busy = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                for group in texts.chunks(batch) {
                    embedder.embed_in_background(group, batch).unwrap();
                }
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        let samples = time_queries(20);
        stop.store(true, Ordering::SeqCst);
        samples
    });
    println!(
        "query embedding: idle p50 {:.1} ms, p99 {:.1} ms; while background batches run p50 {:.1} ms, p99 {:.1} ms; one turn of {turn} windows {turn_ms:.0} ms; load {}",
        percentile(idle.clone(), 0.5),
        percentile(idle, 0.99),
        percentile(busy.clone(), 0.5),
        percentile(busy, 0.99),
        common::load_average()
    );
}

fn main() {
    let quick = std::env::var_os("RAG_BENCH_QUICK").is_some();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("rag bench on {cores} cores");
    if std::env::var_os("RAG_BENCH_EMBED_ONLY").is_some() {
        let models: Vec<RagConfig> = [static_model_config(), model_config()]
            .into_iter()
            .flatten()
            .collect();
        if models.is_empty() {
            println!("no model (run scripts/setup-model): embedding bench skipped");
        }
        for model in &models {
            embedding_throughput(model, cores);
            query_wait_under_background_embedding(model);
        }
        return;
    }

    // 1. Full lexical index of a large real tree.
    let tree = registry_tree();
    restore_touched(&tree);
    // Several builds: on a shared VM the CPU time of identical work moves a lot with the host's
    // load, so one run says little. Each run and the best and median are printed.
    let runs: usize = std::env::var("RAG_BENCH_FULL_INDEX_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut rates = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        drop(last.take());
        let _ = std::fs::remove_dir_all(tree.join(".rag"));
        let (retriever, summary, secs) = full_index(&tree);
        rates.push(summary.files as f64 / secs);
        last = Some((retriever, summary));
    }
    println!(
        "full index over {runs} run(s): best {:.0} files/s, median {:.0} files/s",
        percentile(rates.clone(), 1.0),
        percentile(rates, 0.5)
    );
    let (walking, summary) = last.expect("at least one run");
    if std::env::var_os("RAG_BENCH_FULL_INDEX_ONLY").is_some() {
        return;
    }

    // 2. Re-index: nothing changed, then one changed file; first walking (CLI), then with the
    // folder watcher of a long-lived retriever (`promptd serve`).
    let reindex = |retriever: &Retriever, label: &str, first_round: usize| {
        let started = Instant::now();
        let s = retriever.index(&|_| {}).unwrap();
        assert_eq!(s.rechunked, 0);
        let idle = started.elapsed().as_secs_f64() * 1000.0;
        let mut samples = Vec::new();
        for round in first_round..first_round + 10 {
            touch_one_file(&tree, round);
            let started = Instant::now();
            let s = retriever.index(&|_| {}).unwrap();
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(s.rechunked, 1);
        }
        println!(
            "re-index ({label}): nothing changed {idle:.1} ms; one changed file p50 {:.1} ms, max {:.1} ms",
            percentile(samples.clone(), 0.5),
            percentile(samples, 1.0)
        );
    };
    reindex(&walking, "walk, one-shot CLI", 0);
    drop(walking);
    let retriever = Retriever::open(&tree, lexical()).unwrap();
    let started = Instant::now();
    let first = retriever.index(&|_| {}).unwrap();
    assert!(first.full_walk);
    println!(
        "long-lived retriever: first refresh (walk, registering folder watches) {:.1} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    reindex(&retriever, "folder watcher, long-lived", 10);

    // 3. Query latency, lexical only, on the large tree.
    let samples = query_latencies(&retriever, 5);
    println!(
        "query lexical-only ({} chunks): p50 {:.1} ms, p90 {:.1} ms",
        summary.chunks,
        percentile(samples.clone(), 0.5),
        percentile(samples, 0.9)
    );
    active_file_latencies(&retriever, &tree);
    drop(retriever);

    let Some(model) = model_config() else {
        println!("no model (run scripts/setup-model): vector benches skipped");
        return;
    };

    // 4. Background embedding throughput, of the static model and of the transformer.
    if let Some(static_model) = static_model_config() {
        embedding_throughput(&static_model, cores);
        query_wait_under_background_embedding(&static_model);
    }
    embedding_throughput(&model, cores);
    query_wait_under_background_embedding(&model);

    // 5. Query latency with cached vectors (tantivy's sources, fully embedded once).
    // Reuses the copy scripts/eval-retrieval embedded, when present.
    let eval_copy =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/rag-eval/tantivy-0.27.0");
    let repo = if eval_copy.join(".rag/vectors.bin").exists() {
        eval_copy
    } else {
        prepared_copy("tantivy", &registry_crate("tantivy-0.27.0"))
    };
    let retriever = Retriever::open(&repo, model.clone()).unwrap();
    let started = Instant::now();
    let s = retriever.index(&|_| {}).unwrap();
    if s.embedded > 0 {
        println!(
            "embedded tantivy: {} chunks in {:.1} s (one-time; cached afterwards)",
            s.embedded,
            started.elapsed().as_secs_f64()
        );
    }
    let probe = retriever
        .retrieve(&RetrievalQuery::new(QUERIES[2]))
        .unwrap();
    assert_eq!(
        probe.stats.mode,
        RetrievalMode::Hybrid,
        "{:?}",
        probe.warnings
    );
    let samples = query_latencies(&retriever, 5);
    println!(
        "query with cached vectors ({} chunks): p50 {:.1} ms, p90 {:.1} ms",
        s.chunks,
        percentile(samples.clone(), 0.5),
        percentile(samples, 0.9)
    );
    let lexical_tantivy = Retriever::open(
        &repo,
        RagConfig {
            fusion: Fusion::Lexical,
            ..model.clone()
        },
    )
    .unwrap();
    let samples = query_latencies(&lexical_tantivy, 5);
    println!(
        "query lexical-only on the same tree: p50 {:.1} ms",
        percentile(samples, 0.5)
    );

    if quick {
        return;
    }
    let mut c = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    c.bench_function("query_hybrid_cached_vectors", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            retriever
                .retrieve(&RetrievalQuery::new(QUERIES[i % QUERIES.len()]))
                .unwrap()
        })
    });
    drop(retriever);
    let big = Retriever::open(&tree, lexical()).unwrap();
    big.index(&|_| {}).unwrap();
    c.bench_function("query_lexical_registry", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            big.retrieve(&RetrievalQuery::new(QUERIES[i % QUERIES.len()]))
                .unwrap()
        })
    });
    c.bench_function("reindex_one_changed_file_registry", |b| {
        let mut round = 100;
        b.iter(|| {
            round += 1;
            touch_one_file(&tree, round);
            big.index(&|_| {}).unwrap()
        })
    });
    c.final_summary();
}
