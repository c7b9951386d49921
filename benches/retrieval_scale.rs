//! Retrieval speed at the scale of a large repository: a tree of more than 100,000 real source
//! files, built at bench time from the local cargo registry (`~/.cargo/registry/src`) and the
//! working trees of the bare mirrors under `$RETRIEVAL_SCALE_MIRRORS` (default `/work/.mirror`),
//! replicated under `copy-N/` prefixes (hard links) until the indexable files pass 100,000.
//! Nothing is fetched; the tree lives under `target/retrieval-scale/`.
//!
//! Measured, each as min / median / p99 with the machine's load average:
//! 1. the first full index (`promptd index --no-embed`, whole process, peak RSS);
//! 2. a long-lived retriever (the server path: folder watcher on): query latency with the index
//!    unchanged, the query right after one file was edited, and how long until the edit is
//!    searchable; the process's peak RSS;
//! 3. one-shot `promptd context QUERY --dir TREE --lexical` as whole-process wall time, on an
//!    unchanged index and with one file changed before each call; peak RSS.
//!
//! Queries are commit subjects of the mirrored repositories. `cargo bench --bench
//! retrieval_scale`; `RETRIEVAL_SCALE_KEEP_INDEX=1` reuses an existing index instead of timing
//! the first build, `RETRIEVAL_SCALE_RUNS=N` sets the one-shot runs (default 20),
//! `RETRIEVAL_SCALE_FILES=N` the file count to reach (default 100,000).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod process;
}
use promptd::rag::discover::{DiscoveredFile, IndexBounds, discover};
use promptd::rag::{RagConfig, RetrievalQuery, Retriever};
use support::process::{promptd, wait_bounded};

// The allocator the `promptd` binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Repositories whose commit subjects are the queries (those present are used).
const QUERY_REPOS: &[&str] = &[
    "psf+requests",
    "pallets+flask",
    "encode+httpx",
    "spf13+cobra",
    "gin-gonic+gin",
    "honojs+hono",
    "BurntSushi+ripgrep",
];
const SUBJECTS_PER_REPO: usize = 8;

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/retrieval-scale")
}

fn mirrors() -> PathBuf {
    std::env::var_os("RETRIEVAL_SCALE_MIRRORS")
        .map_or_else(|| "/work/.mirror".into(), PathBuf::from)
}

fn cargo_registry_src() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.is_dir())
}

/// The git directory of a mirror: `<name>/repo`, `<name>.git` or `<name>`.
fn git_dir(name: &str) -> Option<PathBuf> {
    let root = mirrors();
    [
        root.join(name).join("repo"),
        root.join(format!("{name}.git")),
        root.join(name),
    ]
    .into_iter()
    .find(|p| p.join("HEAD").is_file())
}

/// Recreates the files under `from` at `to` with `place` (a copy or a hard link), but `.rag/`.
fn recreate_tree(from: &Path, to: &Path, place: &dyn Fn(&Path, &Path) -> std::io::Result<()>) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let ty = entry.file_type().unwrap();
        if entry.file_name() == ".rag" {
            continue;
        }
        if ty.is_dir() {
            recreate_tree(&entry.path(), &target, place);
        } else if ty.is_file() {
            place(&entry.path(), &target).unwrap();
        }
    }
}

/// Every mirror's `HEAD` checked out under `to/<name>`.
fn check_out_mirrors(to: &Path) {
    let Ok(entries) = std::fs::read_dir(mirrors()) else {
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let Some(git) = git_dir(&name) else { continue };
        let dest = to.join(name.trim_end_matches(".git"));
        std::fs::create_dir_all(&dest).unwrap();
        let archive = Command::new("git")
            .arg("--git-dir")
            .arg(&git)
            .args(["archive", "--format=tar", "HEAD"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut archive = archive;
        let extracted = Command::new("tar")
            .arg("-x")
            .arg("-C")
            .arg(&dest)
            .stdin(archive.stdout.take().unwrap())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        let archived = archive.wait().unwrap();
        if !(extracted.success() && archived.success()) {
            // A partial mirror (blobs fetched on demand) cannot be checked out offline.
            println!("skipped mirror {name}: its HEAD cannot be checked out");
            std::fs::remove_dir_all(&dest).unwrap();
        }
    }
}

fn indexable(dir: &Path) -> Vec<DiscoveredFile> {
    let bounds = IndexBounds {
        max_files: usize::MAX,
        max_bytes: u64::MAX,
    };
    discover(dir, bounds).unwrap()
}

/// The bench tree: `copy-0/` holds the registry and the mirrors' trees, `copy-1/`… hard links
/// to it, until at least `wanted` files are indexable.
fn scale_tree(wanted: usize) -> PathBuf {
    let tree = bench_dir().join("tree");
    let done = tree.join(".built");
    if std::fs::read_to_string(&done).is_ok_and(|n| n.trim() == wanted.to_string()) {
        return tree;
    }
    let _ = std::fs::remove_dir_all(&tree);
    let base = tree.join("copy-0");
    if let Some(registry) = cargo_registry_src() {
        recreate_tree(&registry, &base.join("registry"), &|a, b| {
            std::fs::copy(a, b).map(drop)
        });
    }
    check_out_mirrors(&base.join("mirrors"));
    let per_copy = indexable(&base).len();
    let _ = std::fs::remove_dir_all(base.join(".rag"));
    assert!(per_copy > 0, "no source files found for the bench tree");
    let copies = wanted.div_ceil(per_copy);
    for n in 1..copies {
        recreate_tree(&base, &tree.join(format!("copy-{n}")), &|a, b| {
            std::fs::hard_link(a, b)
        });
    }
    std::fs::write(&done, wanted.to_string()).unwrap();
    tree
}

fn subjects() -> Vec<String> {
    let mut out = Vec::new();
    for name in QUERY_REPOS {
        let Some(git) = git_dir(name) else { continue };
        let log = Command::new("git")
            .arg("--git-dir")
            .arg(&git)
            .args(["log", "--no-merges", "--format=%s", "-n"])
            .arg(SUBJECTS_PER_REPO.to_string())
            .arg("HEAD")
            .output()
            .unwrap();
        out.extend(
            String::from_utf8_lossy(&log.stdout)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        );
    }
    if out.is_empty() {
        out = [
            "fix panic when the walker meets a broken symlink",
            "handle redirects without a location header",
            "add timeout to the connection pool",
        ]
        .map(str::to_string)
        .to_vec();
    }
    out
}

fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(label: &str, samples: &[f64]) {
    println!(
        "{label}: n={} min {:.1} ms, median {:.1} ms, p99 {:.1} ms (load {})",
        samples.len(),
        percentile(samples, 0.0),
        percentile(samples, 0.5),
        percentile(samples, 0.99),
        common::load_average()
    );
}

/// This process's peak RSS in MiB since the last [`reset_peak_rss`].
fn own_peak_rss() -> f64 {
    support::process::peak_rss_of(std::process::id()).unwrap_or(0.0)
}

fn reset_peak_rss() {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Runs `promptd ARGS` in `tree`; returns wall milliseconds and peak RSS (MiB).
fn run_binary(tree: &Path, args: &[&str]) -> (f64, f64) {
    let mut cmd = promptd();
    cmd.args(args)
        .current_dir(tree)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let (status, peak, timed_out) = wait_bounded(&mut child, Duration::from_secs(3600));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(!timed_out, "promptd {args:?} timed out");
    if !status.is_some_and(|s| s.success()) {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        panic!("promptd {args:?} failed: {err}");
    }
    (ms, peak)
}

/// The file the edits go to: the first indexable Rust file of `copy-0/`.
fn edited_file(tree: &Path) -> PathBuf {
    let files = indexable(&tree.join("copy-0"));
    let rel = files
        .iter()
        .find(|f| f.rel_path.ends_with(".rs") && f.size > 2000)
        .or(files.first())
        .expect("an indexable file")
        .rel_path
        .clone();
    tree.join("copy-0").join(rel)
}

/// Appends a line to `file` through a new file and a rename, so the hard-linked copies of it
/// keep their content.
fn edit(file: &Path, round: usize) {
    let mut text = std::fs::read(file).unwrap();
    text.extend_from_slice(format!("\n// scale bench edit {round}\n").as_bytes());
    let tmp = file.with_extension("scale-bench-tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

fn lexical() -> RagConfig {
    RagConfig {
        embeddings: false,
        ..RagConfig::default()
    }
}

fn main() {
    let wanted: usize = std::env::var("RETRIEVAL_SCALE_FILES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let runs: usize = std::env::var("RETRIEVAL_SCALE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20)
        .max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "retrieval scale bench on {cores} cores (load {})",
        common::load_average()
    );
    let started = Instant::now();
    let tree = scale_tree(wanted);
    let queries = subjects();
    let edited = edited_file(&tree);
    println!(
        "tree {} ready in {:.1} s; {} queries (commit subjects); edits go to {}",
        tree.display(),
        started.elapsed().as_secs_f64(),
        queries.len(),
        edited.strip_prefix(&tree).unwrap().display()
    );
    let dir = tree.to_str().unwrap().to_string();

    // 1. First full index, whole process.
    if std::env::var_os("RETRIEVAL_SCALE_KEEP_INDEX").is_none() || !tree.join(".rag").exists() {
        let _ = std::fs::remove_dir_all(tree.join(".rag"));
        let (ms, peak) = run_binary(&tree, &["index", "--no-embed", "--dir", &dir]);
        println!(
            "first full index (promptd index --no-embed): {:.1} s, peak RSS {peak:.0} MiB (load {})",
            ms / 1000.0,
            common::load_average()
        );
    }
    let files = indexable(&tree);
    println!("indexable files: {}", files.len());

    // 2. Long-lived retriever (server path).
    reset_peak_rss();
    let retriever = Retriever::open(&tree, lexical()).unwrap();
    let opened = Instant::now();
    let first = retriever.index(&|_| {}).unwrap();
    println!(
        "server: open + first refresh (walk, registering folder watches) {:.0} ms, {} files, {} chunks",
        opened.elapsed().as_secs_f64() * 1000.0,
        first.files,
        first.chunks
    );
    let mut warm = Vec::new();
    for _ in 0..3 {
        for q in &queries {
            let t = Instant::now();
            let r = retriever
                .retrieve(&RetrievalQuery::new(q.as_str()))
                .unwrap();
            warm.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(r.stats.indexed_files > 0);
        }
    }
    report("server warm query, index unchanged", &warm);
    let mut after_edit = Vec::new();
    let mut visible = Vec::new();
    for (round, q) in queries.iter().enumerate().take(runs) {
        edit(&edited, round);
        // Let the watcher see the event, as it would between a save and the next request.
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        retriever
            .retrieve(&RetrievalQuery::new(q.as_str()))
            .unwrap();
        after_edit.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(retriever.wait_idle(Duration::from_secs(120)));
        visible.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    report("server query right after one edited file", &after_edit);
    report(
        "server: edit searchable after (background refresh)",
        &visible,
    );
    println!("server process peak RSS {:.0} MiB", own_peak_rss());
    drop(retriever);

    // 3. One-shot CLI calls, whole process.
    let one_shot = |q: &str| -> (f64, f64) {
        run_binary(&tree, &["context", q, "--dir", &dir, "--lexical", "--json"])
    };
    one_shot(&queries[0]);
    let (mut unchanged, mut unchanged_rss) = (Vec::new(), 0f64);
    for q in queries.iter().cycle().take(runs) {
        let (ms, peak) = one_shot(q);
        unchanged.push(ms);
        unchanged_rss = unchanged_rss.max(peak);
    }
    report("one-shot `promptd context`, index unchanged", &unchanged);
    let (mut changed, mut changed_rss) = (Vec::new(), 0f64);
    for (round, q) in queries.iter().cycle().take(runs).enumerate() {
        edit(&edited, 1000 + round);
        let (ms, peak) = one_shot(q);
        changed.push(ms);
        changed_rss = changed_rss.max(peak);
    }
    report("one-shot `promptd context`, one file changed", &changed);
    println!(
        "one-shot peak RSS: {unchanged_rss:.0} MiB unchanged, {changed_rss:.0} MiB with a change"
    );
}
