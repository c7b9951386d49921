//! The long-lived retriever's folder watcher (a refresh re-lists only folders with changes, and
//! falls back to the full walk when it cannot know) and the cross-process locks on `.rag/`,
//! exercised with real files, real notify events and real concurrent writers.

use crate::support::rag;

use std::path::Path;
use std::sync::Barrier;

use promptd::rag::embed::VectorCache;
use promptd::rag::{RagConfig, RetrievalQuery, Retriever};
use rag::{fixture_repo, lexical_config, write_files};

fn paths_of(retriever: &Retriever, query: &str) -> Vec<String> {
    retriever
        .retrieve(&RetrievalQuery::new(query))
        .unwrap()
        .chunks
        .into_iter()
        .map(|c| c.chunk.path)
        .collect()
}

fn walking_config() -> RagConfig {
    RagConfig {
        watch: false,
        ..lexical_config()
    }
}

#[test]
fn watcher_driven_refresh_sees_created_changed_and_deleted_files() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    let first = retriever.index(&|_| {}).unwrap();
    assert!(
        first.full_walk,
        "the first refresh walks and registers folders"
    );

    let idle = retriever.index(&|_| {}).unwrap();
    assert!(!idle.full_walk);
    assert_eq!((idle.added, idle.changed, idle.removed), (0, 0, 0));

    // Created in a watched folder.
    write_files(
        repo.path(),
        &[(
            "src/cache/ttl.rs",
            "/// Expires entries after their time to live.\npub fn expire_stale_sessions() {}\n"
                .into(),
        )],
    );
    let created = retriever.index(&|_| {}).unwrap();
    assert!(!created.full_walk);
    assert_eq!((created.added, created.rechunked), (1, 1));
    assert_eq!(created.unchanged, first.files);
    assert_eq!(
        paths_of(&retriever, "expire stale sessions")
            .first()
            .map(String::as_str),
        Some("src/cache/ttl.rs")
    );

    // Changed in place.
    write_files(
        repo.path(),
        &[(
            "server/health.go",
            "package server\n\n// ReadinessGate blocks traffic until warm-up ends.\nfunc ReadinessGate() {}\n"
                .into(),
        )],
    );
    let changed = retriever.index(&|_| {}).unwrap();
    assert!(!changed.full_walk);
    assert_eq!(
        (changed.changed, changed.rechunked, changed.added),
        (1, 1, 0)
    );
    assert_eq!(
        paths_of(&retriever, "readiness gate warm-up")
            .first()
            .map(String::as_str),
        Some("server/health.go")
    );

    // Deleted.
    std::fs::remove_file(repo.path().join("lib/slugify.rb")).unwrap();
    let deleted = retriever.index(&|_| {}).unwrap();
    assert!(!deleted.full_walk);
    assert_eq!(deleted.removed, 1);
    assert!(
        !paths_of(&retriever, "turn a title into a URL slug").contains(&"lib/slugify.rb".into())
    );

    // Excluded by path even when created in a watched folder.
    write_files(repo.path(), &[("server/local.env", "TOKEN=x\n".into())]);
    let excluded = retriever.index(&|_| {}).unwrap();
    assert!(!excluded.full_walk);
    assert_eq!(excluded.added, 0);

    // A new folder: only a walk knows what it holds (and starts watching it).
    write_files(
        repo.path(),
        &[(
            "jobs/nightly/report.py",
            "def render_nightly_report():\n    \"\"\"Renders the nightly usage report.\"\"\"\n"
                .into(),
        )],
    );
    let new_dir = retriever.index(&|_| {}).unwrap();
    assert!(new_dir.full_walk);
    assert_eq!(new_dir.added, 1);
    write_files(
        repo.path(),
        &[(
            "jobs/nightly/cleanup.py",
            "def purge_old_reports():\n    pass\n".into(),
        )],
    );
    let in_new_dir = retriever.index(&|_| {}).unwrap();
    assert!(!in_new_dir.full_walk, "the new folder is watched now");
    assert_eq!(in_new_dir.added, 1);

    // A changed .gitignore changes which files count: walk.
    write_files(
        repo.path(),
        &[(".gitignore", "ignored_dir/\njobs/\n".into())],
    );
    let rules = retriever.index(&|_| {}).unwrap();
    assert!(rules.full_walk);
    assert_eq!(rules.removed, 2);

    // The watcher's view equals a full walk's: a walking retriever finds nothing to redo.
    let files = rules.files;
    drop(retriever);
    let walker = Retriever::open(repo.path(), walking_config()).unwrap();
    let walked = walker.index(&|_| {}).unwrap();
    assert!(walked.full_walk);
    assert_eq!(
        (
            walked.added,
            walked.changed,
            walked.removed,
            walked.rechunked
        ),
        (0, 0, 0, 0)
    );
    assert_eq!((walked.files, walked.unchanged), (files, files));
}

#[test]
fn queries_refresh_in_the_background_only_when_something_changed() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    retriever.index(&|_| {}).unwrap();
    write_files(
        repo.path(),
        &[(
            "src/auth/mfa.rs",
            "/// Verifies a time-based one-time password.\npub fn verify_totp_code() {}\n".into(),
        )],
    );
    // The first query answers at once and starts the refresh; the next one sees the file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let found = paths_of(&retriever, "verify totp one-time password");
        if found.first().map(String::as_str) == Some("src/auth/mfa.rs") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new file never became retrievable: {found:?}"
        );
        // The event may still be on its way; then the refresh it starts is waited for.
        std::thread::sleep(std::time::Duration::from_millis(20));
        retriever.wait_idle(std::time::Duration::from_secs(5));
    }
}

fn chunk_count_of_fresh_build(repo: &Path) -> (usize, usize) {
    let copy = tempfile::tempdir().unwrap();
    for entry in walkdir(repo) {
        let rel = entry.strip_prefix(repo).unwrap();
        if rel.starts_with(".rag") {
            continue;
        }
        let target = copy.path().join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &target).unwrap();
    }
    let summary = Retriever::open(copy.path(), walking_config())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    (summary.files, summary.chunks)
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn two_concurrent_indexers_of_one_repository_never_corrupt_the_index() {
    let repo = fixture_repo();
    Retriever::open(repo.path(), walking_config())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    let many: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("gen/handler_{i}.rs"),
                format!("/// Handles request kind {i}.\npub fn handle_kind_{i}() -> u32 {{\n    {i}\n}}\n"),
            )
        })
        .collect();
    let many: Vec<(&str, String)> = many.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
    write_files(repo.path(), &many);

    // Two independent retrievers, as two processes would have (each its own tantivy writer and
    // manifest), refresh the same index at the same moment.
    let barrier = Barrier::new(2);
    let summaries: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let retriever = Retriever::open(repo.path(), walking_config()).unwrap();
                    barrier.wait();
                    retriever.index(&|_| {})
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let summaries: Vec<_> = summaries
        .into_iter()
        .map(|s| s.expect("both refreshes succeed (the second waits for the first)"))
        .collect();
    // One of them did the work; the other started from its commit and found nothing to do.
    let added: Vec<usize> = summaries.iter().map(|s| s.added).collect();
    assert!(added.contains(&300) && added.contains(&0), "{added:?}");

    let reopened = Retriever::open(repo.path(), walking_config()).unwrap();
    let state = reopened.index(&|_| {}).unwrap();
    assert_eq!((state.added, state.changed, state.removed), (0, 0, 0));
    assert_eq!(
        (state.files, state.chunks),
        chunk_count_of_fresh_build(repo.path()),
        "no chunk indexed twice, none lost"
    );
    assert_eq!(
        paths_of(&reopened, "handles request kind 217")
            .first()
            .map(String::as_str),
        Some("gen/handler_217.rs")
    );
}

#[test]
fn concurrent_vector_cache_writers_never_interleave_records() {
    let dir = tempfile::tempdir().unwrap();
    let model = [7u8; 16];
    let dim = 384;
    let writers = 2;
    let batches = 40;
    let per_batch = 32;
    let barrier = Barrier::new(writers);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let (dir, barrier) = (dir.path(), &barrier);
            scope.spawn(move || {
                // Its own handle on the file, as another process has.
                let cache = VectorCache::new(dir);
                cache.load(model, dim).unwrap();
                barrier.wait();
                for b in 0..batches {
                    let entries = (0..per_batch)
                        .map(|i| {
                            let mut hash = [0u8; 16];
                            hash[0] = w as u8;
                            hash[1] = b as u8;
                            hash[2] = i as u8;
                            // Every value of a record names its record: a torn or interleaved
                            // record cannot pass the check below.
                            let value = (w * 1_000_000 + b * 1000 + i) as f32;
                            (hash, vec![value; dim])
                        })
                        .collect();
                    cache.insert(entries).unwrap();
                }
            });
        }
    });
    let reader = VectorCache::new(dir.path());
    let warning = reader.load(model, dim).unwrap();
    assert_eq!(warning, None, "no partial record");
    assert_eq!(reader.len(), writers * batches * per_batch);
    for w in 0..writers {
        for b in 0..batches {
            for i in 0..per_batch {
                let mut hash = [0u8; 16];
                hash[0] = w as u8;
                hash[1] = b as u8;
                hash[2] = i as u8;
                let expected = (w * 1_000_000 + b * 1000 + i) as f32;
                let intact = reader
                    .with(&hash, |v| v.iter().all(|x| *x == expected))
                    .expect("record present");
                assert!(intact, "record {w}/{b}/{i} interleaved");
            }
        }
    }
    let bytes = std::fs::metadata(dir.path().join("vectors.bin"))
        .unwrap()
        .len() as usize;
    assert_eq!(bytes, 28 + writers * batches * per_batch * (16 + dim * 4));
}

/// A repository on a FUSE mount (bindfs), changed from outside the mount as another machine
/// changes a share: no file event arrives, so a long-lived retriever does not trust a watcher
/// there, and a refresh looks at the folders (their stamps, as without a watcher) and sees the
/// change.
#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs bindfs and /dev/fuse (scripts/setup installs it)"
)]
#[test]
fn a_repository_on_fuse_is_walked_instead_of_watched() {
    let repo = fixture_repo();
    let mount = tempfile::tempdir().unwrap();
    let share = crate::support::fuse::BindMount::new(repo.path(), mount.path());
    let retriever = Retriever::open(&share.mount, lexical_config()).unwrap();
    let first = retriever.index(&|_| {}).unwrap();
    assert!(first.full_walk);
    write_files(
        &share.source,
        &[(
            "src/cache/ttl.rs",
            "/// Expires entries after their time to live.\npub fn expire_stale_sessions() {}\n"
                .into(),
        )],
    );
    let refreshed = retriever.index(&|_| {}).unwrap();
    assert_eq!((refreshed.added, refreshed.rechunked), (1, 1));
    assert_eq!(
        paths_of(&retriever, "expire stale sessions")
            .first()
            .map(String::as_str),
        Some("src/cache/ttl.rs")
    );
}
