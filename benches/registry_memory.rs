//! Where a large registry's memory goes: live heap bytes (counted by this bench's global
//! allocator, mimalloc underneath as in the binary) and RSS after each step of serving
//! `REGISTRY_MEMORY_SCALE` generated 1 KB prompts (default `10000`; a comma-separated list runs
//! several): reading and parsing the files, the snapshot's renderer, the cached listings, the
//! first render of every prompt, then `REGISTRY_MEMORY_EDITS` (default 20) edits of one file,
//! each followed by a reload told which file changed (as the file watcher does), timed; then a
//! reload that checks every file, and the phases of a reload that finds nothing changed.
//!
//! `cargo bench --bench registry_memory`

mod common;

/// The tests' reading of a process's memory, laid out as in the test binary.
#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod process;
}

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::generated_prompt;
use promptd::library::{LibraryOptions, PromptLibrary};
use promptd::registry::{DirSource, PromptSource, Registry, Touched};
use serde_json::{Map, Value, json};

/// mimalloc with a count of the bytes currently allocated.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to mimalloc unchanged; the counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// This process's resident memory (VmRSS) in bytes; 0 when unknown.
fn rss() -> usize {
    (support::process::rss_of(std::process::id()).unwrap_or(0.0) * 1024.0 * 1024.0) as usize
}

fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

struct Step {
    base_live: usize,
    n: usize,
}

impl Step {
    fn print(&mut self, what: &str) {
        let (l, r) = (live(), rss());
        println!(
            "  {what:<44} heap {:>9} (+{:>9}, {:>6.0} B/prompt)   RSS {:>9}",
            mb(l),
            mb(l.saturating_sub(self.base_live)),
            l.saturating_sub(self.base_live) as f64 / self.n as f64,
            mb(r),
        );
        self.base_live = l;
    }
}

fn measure(n: usize, edits: usize) {
    let dir = common::generated_registry(n);
    println!("{n} prompts ({} of text)", mb(n * 1000));
    let mut step = Step {
        base_live: live(),
        n,
    };
    step.print("before loading");
    let roots = || -> Vec<std::sync::Arc<dyn PromptSource>> {
        vec![std::sync::Arc::new(DirSource::new(dir.path()))]
    };
    let registry = Registry::load(roots());
    step.print("registry (files read and parsed)");
    drop(registry);
    step.print("registry dropped");

    let options = LibraryOptions {
        prompt_dirs: vec![dir.path().to_path_buf()],
        no_builtin_prompts: true,
        no_discover: true,
        cwd: dir.path().to_path_buf(),
        ..LibraryOptions::default()
    };
    let library = PromptLibrary::open(options).unwrap();
    step.print("library (registry + renderer)");
    library.snapshot().warm();
    step.print("listings built");
    let args: Map<String, Value> = json!({"target": "src/lib.rs"}).as_object().unwrap().clone();
    let snapshot = library.snapshot();
    for i in 0..n {
        snapshot.renderer.analysis(&common::generated_name(i));
    }
    step.print("every template compiled and analysed");
    drop(snapshot);
    for i in 0..n {
        library.render(&common::generated_name(i), &args).unwrap();
    }
    step.print("every prompt rendered once (validators)");
    let after_load_live = live();
    let after_load_rss = rss();

    // A registry at rest: its files were written longer ago than a stamp needs to be trusted.
    std::thread::sleep(Duration::from_millis(2500));
    let mut times: Vec<Duration> = Vec::new();
    for e in 0..edits {
        let file = dir
            .path()
            .join(format!("{}.md", common::generated_name(e % n)));
        std::fs::write(&file, generated_prompt(e % n, e + 1)).unwrap();
        let t = Instant::now();
        // As the file watcher reloads: told which file changed.
        let outcome = library.reload_touched(Some(&Touched::new([file])));
        times.push(t.elapsed());
        assert!(outcome.changed, "edit {e} not seen");
        library
            .render(&common::generated_name(e % n), &args)
            .unwrap();
    }
    step.print(&format!("after {edits} edits and reloads"));
    println!(
        "  growth over the edits: heap {:+.1} MB, RSS {:+.1} MB",
        (live() as f64 - after_load_live as f64) / 1e6,
        (rss() as f64 - after_load_rss as f64) / 1e6,
    );
    // One edit, reloaded by checking every file's stamp (a watcher that lost events).
    std::fs::write(
        dir.path().join("p000000.md"),
        generated_prompt(0, edits + 1),
    )
    .unwrap();
    let t = Instant::now();
    assert!(library.reload().changed);
    println!(
        "  reload after one edit, every file checked: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    // The phases of one reload of the unchanged folder.
    let old = library.snapshot();
    let t = Instant::now();
    let registry = Registry::load_with_previous(
        roots(),
        Some(&old.registry),
        &promptd::render::check_syntax,
        u64::MAX,
    );
    let read = t.elapsed();
    let t = Instant::now();
    let snapshot = promptd::library::Snapshot::new(registry, old.config.clone());
    let built = t.elapsed();
    let t = Instant::now();
    snapshot.warm();
    let warmed = t.elapsed();
    println!(
        "  one reload, no change: list and compare {:.1} ms, snapshot {:.1} ms, listings {:.1} ms",
        read.as_secs_f64() * 1e3,
        built.as_secs_f64() * 1e3,
        warmed.as_secs_f64() * 1e3
    );
    times.sort();
    if !times.is_empty() {
        let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
        println!(
            "  reload after one edit (told which file): min {:.1} ms, median {:.1} ms, p99 {:.1} ms",
            times[0].as_secs_f64() * 1e3,
            pct(0.5).as_secs_f64() * 1e3,
            pct(0.99).as_secs_f64() * 1e3,
        );
    }
}

fn main() {
    // As the binary runs (see `src/main.rs`).
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    let scales: Vec<usize> = std::env::var("REGISTRY_MEMORY_SCALE")
        .unwrap_or_else(|_| "10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let edits: usize = std::env::var("REGISTRY_MEMORY_EDITS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    println!("load average: {}", common::load_average());
    for n in scales {
        measure(n, edits);
    }
}
