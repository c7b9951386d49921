//! Retrieval end to end on fixture repositories written to disk: discovery and exclusions,
//! incremental re-indexing, recovery from corrupt indexes, ranking of the obviously relevant
//! function, active-file handling and the lexical fallback without a model.

use crate::support::rag;

use std::path::Path;
use std::sync::Arc;

use promptd::rag::index::Manifest;
use promptd::rag::{RagConfig, RagError, RetrievalMode, RetrievalQuery, Retriever, retrieve};
use rag::{QUERIES, fixture_repo, fixture_secret, lexical_config, write_files};

fn indexed_paths(repo: &Path) -> Vec<String> {
    read_manifest(repo).files.keys().cloned().collect()
}

fn read_manifest(repo: &Path) -> Manifest {
    Manifest::from_bytes(&std::fs::read(repo.join(".rag/manifest.bin")).unwrap()).unwrap()
}

fn query(text: &str) -> RetrievalQuery {
    RetrievalQuery::new(text)
}

#[test]
fn retriever_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Retriever>();
}

#[test]
fn exclusion_file_recreated_and_honoured() {
    let repo = fixture_repo();
    let exclude = repo.path().join(".rag/indexing-exclude.txt");
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    let text = std::fs::read_to_string(&exclude).unwrap();
    for pattern in [
        ".env",
        "*.pem",
        "id_rsa*",
        "node_modules/",
        "target/",
        "*.min.js",
        "*.lock",
    ] {
        assert!(
            text.lines().any(|l| l == pattern),
            "default excludes lack {pattern}"
        );
    }
    drop(retriever);

    std::fs::remove_file(&exclude).unwrap();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    assert_eq!(std::fs::read_to_string(&exclude).unwrap(), text);

    // A user pattern takes effect on the next refresh.
    std::fs::write(&exclude, format!("{text}lib/\n")).unwrap();
    retriever.index(&|_| {}).unwrap();
    let paths = indexed_paths(repo.path());
    assert!(!paths.contains(&"lib/slugify.rb".to_string()), "{paths:?}");
    assert!(paths.contains(&"src/auth/login.rs".to_string()));
}

#[test]
fn secrets_excluded_by_path_while_auth_code_stays_retrievable() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    retriever.index(&|_| {}).unwrap();
    let paths = indexed_paths(repo.path());
    for never in [
        ".env",
        "deploy/id_rsa",
        "deploy/prod.env",
        "node_modules/left-pad/index.js",
        "target/debug/build.rs",
        "web/dist/app.min.js",
        "ignored_dir/notes.rs",
    ] {
        assert!(!paths.contains(&never.to_string()), "{never} was indexed");
    }
    assert!(paths.contains(&"src/tokenizer.rs".to_string()));

    let all = Retriever::open(
        repo.path(),
        RagConfig {
            threshold: 0.0,
            ..lexical_config()
        },
    )
    .unwrap();
    let result = all.retrieve(&query("password token")).unwrap();
    let found: Vec<&str> = result
        .chunks
        .iter()
        .map(|c| c.chunk.path.as_str())
        .collect();
    assert!(found.contains(&"src/tokenizer.rs"), "{found:?}");
    assert!(found.contains(&"src/auth/login.rs"), "{found:?}");
    let secret = fixture_secret();
    let result = retriever.retrieve(&query(&secret)).unwrap();
    assert!(!result.formatted.contains(&secret));
}

#[test]
fn obviously_relevant_function_ranks_first() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    retriever.index(&|_| {}).unwrap();
    for (text, path, tag) in QUERIES {
        let result = retriever.retrieve(&query(text)).unwrap();
        let best = &result.chunks[0];
        assert_eq!(
            &best.chunk.path, path,
            "query {text:?}: {:#?}",
            result.chunks
        );
        assert!(
            best.chunk.tags.iter().any(|t| t == tag),
            "query {text:?}: tags {:?}",
            best.chunk.tags
        );
        assert_eq!(result.stats.mode, RetrievalMode::Lexical);
        assert!(result.formatted.contains(&format!(
            "--- {path}:{}-{}",
            best.chunk.start_line, best.chunk.end_line
        )));
    }
}

#[test]
fn incremental_reindex_touches_only_changed_files() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    let first = retriever.index(&|_| {}).unwrap();
    assert_eq!(first.added, first.files);
    assert!(first.chunks >= first.files);

    let again = retriever.index(&|_| {}).unwrap();
    assert_eq!((again.added, again.changed, again.rechunked), (0, 0, 0));
    assert_eq!(again.unchanged, first.files);

    write_files(
        repo.path(),
        &[(
            "src/cache/lru.rs",
            "/// Drops every entry whose deadline passed.\npub fn purge_expired_entries() {}\n"
                .into(),
        )],
    );
    let changed = retriever.index(&|_| {}).unwrap();
    assert_eq!(
        (
            changed.changed,
            changed.rechunked,
            changed.added,
            changed.removed
        ),
        (1, 1, 0, 0)
    );
    assert_eq!(changed.unchanged, first.files - 1);
    let result = retriever.retrieve(&query("purge expired entries")).unwrap();
    assert_eq!(result.chunks[0].chunk.path, "src/cache/lru.rs");
    assert!(
        result.chunks[0]
            .chunk
            .text
            .contains("purge_expired_entries")
    );
    let old = retriever
        .retrieve(&query("least recently used evict"))
        .unwrap();
    assert!(
        old.chunks
            .iter()
            .all(|c| !c.chunk.text.contains("LruCache"))
    );

    // Same content, new mtime: fingerprint refreshed, nothing re-chunked.
    let path = repo.path().join("config/loader.py");
    let content = std::fs::read(&path).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, content).unwrap();
    let touched = retriever.index(&|_| {}).unwrap();
    assert_eq!((touched.changed, touched.rechunked), (0, 0));

    std::fs::remove_file(repo.path().join("lib/slugify.rb")).unwrap();
    let removed = retriever.index(&|_| {}).unwrap();
    assert_eq!((removed.removed, removed.files), (1, first.files - 1));
    let gone = retriever
        .retrieve(&query("slugify title URL slug"))
        .unwrap();
    assert!(gone.chunks.iter().all(|c| c.chunk.path != "lib/slugify.rb"));

    // A fresh process sees the same state: nothing to redo.
    drop(retriever);
    let reopened = Retriever::open(repo.path(), lexical_config()).unwrap();
    let summary = reopened.index(&|_| {}).unwrap();
    assert_eq!(
        (summary.added, summary.changed, summary.rechunked),
        (0, 0, 0)
    );
}

#[test]
fn corrupt_or_old_index_is_rebuilt_with_a_warning() {
    let repo = fixture_repo();
    Retriever::open(repo.path(), lexical_config())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    let manifest = repo.path().join(".rag/manifest.bin");

    std::fs::write(&manifest, b"\xff\xff not a manifest").unwrap();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    let result = retriever.retrieve(&query("multiply two matrices")).unwrap();
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.contains("corrupt manifest") && w.contains("rebuilding")),
        "{:?}",
        result.warnings
    );
    assert_eq!(result.chunks[0].chunk.path, "native/matrix.cpp");
    drop(retriever);

    // Older format version.
    let mut old = read_manifest(repo.path());
    old.format_version = 0;
    std::fs::write(&manifest, old.to_bytes()).unwrap();
    let summary = Retriever::open(repo.path(), lexical_config())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    assert!(
        summary.warnings.iter().any(|w| w.contains("has format 0")),
        "{:?}",
        summary.warnings
    );
    assert_eq!(summary.added, summary.files);

    // Tantivy's own metadata destroyed.
    std::fs::write(repo.path().join(".rag/index/meta.json"), b"garbage").unwrap();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    let result = retriever
        .retrieve(&query("send an email through SMTP"))
        .unwrap();
    assert!(
        result.warnings.iter().any(|w| w.contains("rebuilding")),
        "{:?}",
        result.warnings
    );
    assert_eq!(result.chunks[0].chunk.path, "mail/EmailSender.cs");
}

#[test]
fn lexical_fallback_without_a_model_is_a_warning() {
    let repo = fixture_repo();
    let config = RagConfig {
        embeddings: true,
        model_dir: Some(repo.path().join("no-such-model")),
        ..RagConfig::default()
    };
    let result = retrieve(
        repo.path(),
        config,
        &query("retry with exponential backoff"),
    )
    .unwrap();
    assert_eq!(result.stats.mode, RetrievalMode::Lexical);
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.contains("embedding model unavailable")),
        "{:?}",
        result.warnings
    );
    assert_eq!(result.chunks[0].chunk.path, "web/src/api/client.ts");
    assert!(result.chunks.iter().all(|c| c.vector.is_none()));
}

#[test]
fn first_query_builds_the_index_within_the_budget() {
    let repo = fixture_repo();
    let result = retrieve(repo.path(), lexical_config(), &query("ring buffer push")).unwrap();
    assert_eq!(result.chunks[0].chunk.path, "native/ringbuf.c");
    assert!(result.stats.indexed_files >= 12);
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
}

#[test]
fn active_file_is_primary_target_and_excluded_from_references() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    retriever.index(&|_| {}).unwrap();
    let result = retriever
        .retrieve(&RetrievalQuery {
            query: "retry fetching users when the request fails".into(),
            active_file: Some("web/src/api/client.ts".into()),
            top_k: Some(3),
        })
        .unwrap();
    let active = result.active_file.as_ref().unwrap();
    assert_eq!(active.path, "web/src/api/client.ts");
    assert!(!active.excerpts.is_empty() && active.excerpts.len() <= 2);
    assert!(
        result
            .chunks
            .iter()
            .all(|c| c.chunk.path != "web/src/api/client.ts")
    );
    assert!(result.chunks.len() <= 3);
    let formatted = &result.formatted;
    let active_at = formatted
        .find("=== ACTIVE FILE (PRIMARY TARGET) ===")
        .unwrap();
    let reference_at = formatted
        .find("=== REFERENCE CONTEXT (for patterns/conventions only) ===")
        .unwrap();
    assert!(active_at < reference_at);
    assert!(formatted.contains("File: web/src/api/client.ts"));
    insta::assert_snapshot!("active_file_formatted", formatted);

    // Absolute paths and paths through symlinks inside the repository resolve too.
    let absolute = repo.path().join("web/src/api/client.ts");
    let result = retriever
        .retrieve(&RetrievalQuery {
            query: "users".into(),
            active_file: Some(absolute),
            top_k: None,
        })
        .unwrap();
    assert_eq!(result.active_file.unwrap().path, "web/src/api/client.ts");
}

#[test]
fn documentation_is_never_the_active_file() {
    let repo = fixture_repo();
    let result = retrieve(
        repo.path(),
        lexical_config(),
        &RetrievalQuery {
            query: "LRU cache storage".into(),
            active_file: Some("docs/architecture.md".into()),
            top_k: None,
        },
    )
    .unwrap();
    assert!(result.active_file.is_none());
    assert!(!result.formatted.contains("ACTIVE FILE"));
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.contains("docs/architecture.md is documentation"))
    );
}

#[test]
fn active_file_outside_the_repository_is_an_error_naming_it() {
    let repo = fixture_repo();
    let outside = tempfile::tempdir().unwrap();
    let stranger = outside.path().join("stranger.rs");
    std::fs::write(&stranger, "fn x() {}\n").unwrap();
    let link = repo.path().join("src/link.rs");
    std::os::unix::fs::symlink(&stranger, &link).unwrap();
    let retriever = Retriever::open(repo.path(), lexical_config()).unwrap();
    let normalise = |e: RagError| {
        e.to_string()
            .replace(
                &outside.path().canonicalize().unwrap().display().to_string(),
                "<outside>",
            )
            .replace(
                &repo.path().canonicalize().unwrap().display().to_string(),
                "<repo>",
            )
            .replace(&repo.path().display().to_string(), "<repo>")
    };
    let ask = |p: &Path| {
        retriever.retrieve(&RetrievalQuery {
            query: "x".into(),
            active_file: Some(p.to_path_buf()),
            top_k: None,
        })
    };
    let errors = [
        normalise(ask(&stranger).unwrap_err()),
        normalise(ask(Path::new("src/link.rs")).unwrap_err()),
        normalise(ask(Path::new("src/missing.rs")).unwrap_err()),
    ];
    insta::assert_yaml_snapshot!("active_file_errors", errors);
}

#[test]
fn token_budget_keeps_the_best_chunk_and_reports_counts() {
    let repo = fixture_repo();
    let config = RagConfig {
        token_budget: 10,
        threshold: 0.0,
        ..lexical_config()
    };
    let result = retrieve(repo.path(), config, &query("total tax invoice cart VAT")).unwrap();
    assert_eq!(result.chunks.len(), 1);
    let f = result.stats.filter;
    assert!(f.candidates >= 2, "{f:?}");
    assert_eq!(f.after_threshold, f.candidates);
    assert!(f.after_dedup <= f.after_threshold);
    assert_eq!(f.after_budget, 1);
    assert!(result.tokens > 10);
}

#[test]
fn shared_retriever_answers_concurrent_queries() {
    let repo = fixture_repo();
    let retriever = Arc::new(Retriever::open(repo.path(), lexical_config()).unwrap());
    retriever.index(&|_| {}).unwrap();
    let handles: Vec<_> = QUERIES
        .iter()
        .map(|(text, path, _)| {
            let r = Arc::clone(&retriever);
            std::thread::spawn(move || {
                let result = r.retrieve(&query(text)).unwrap();
                assert_eq!(&result.chunks[0].chunk.path, path);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn retrieval_serialises_to_camel_case_json() {
    let repo = fixture_repo();
    let result = retrieve(repo.path(), lexical_config(), &query("cart total")).unwrap();
    let json = serde_json::to_value(&result).unwrap();
    assert!(json["chunks"][0]["startLine"].is_u64());
    assert!(json["stats"]["filter"]["afterThreshold"].is_u64());
    assert_eq!(json["stats"]["mode"], "lexical");
}

#[test]
fn first_build_over_budget_answers_from_what_exists_and_says_so() {
    let repo = tempfile::tempdir().unwrap();
    let files: Vec<(String, String)> = (0..900)
        .map(|i| {
            (
                format!("src/module_{i:03}.rs"),
                format!("/// Handler number {i}.\npub fn handle_request_{i}(x: u32) -> u32 {{\n    x + {i}\n}}\n"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, String)> =
        files.iter().map(|(p, c)| (p.as_str(), c.clone())).collect();
    write_files(repo.path(), &borrowed);
    let config = RagConfig {
        index_budget_secs: 0,
        ..lexical_config()
    };
    let retriever = Retriever::open(repo.path(), config).unwrap();
    let result = retriever.retrieve(&query("handler request")).unwrap();
    // What was committed within the budget answers; on a loaded machine that can be nothing yet.
    assert_eq!(
        result.chunks.is_empty(),
        result.stats.indexed_files == 0,
        "{} files indexed, {} chunks",
        result.stats.indexed_files,
        result.chunks.len()
    );
    let partial = result.stats.indexed_files < 900;
    let warned = result
        .warnings
        .iter()
        .any(|w| w.contains("index build still running after the 0 s budget"));
    // Either the budget cut the build short and the answer says so, or the build won the race.
    assert_eq!(
        partial, warned,
        "{} files, {:?}",
        result.stats.indexed_files, result.warnings
    );
    assert!(retriever.wait_idle(std::time::Duration::from_secs(120)));
    let full = retriever.retrieve(&query("handle_request_899")).unwrap();
    assert_eq!(full.stats.indexed_files, 900);
    assert_eq!(full.chunks[0].chunk.path, "src/module_899.rs");
}

/// An index whose manifest older builds wrote as JSON opens without a rebuild: the JSON is read
/// once, replaced by the binary form, and an edit made meanwhile is still seen.
#[test]
fn json_manifest_of_older_builds_is_migrated_not_rebuilt() {
    let repo = fixture_repo();
    Retriever::open(repo.path(), lexical_config())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    let binary = repo.path().join(".rag/manifest.bin");
    let legacy = repo.path().join(".rag/manifest.json");
    let before = read_manifest(repo.path());
    // The JSON form older builds wrote: camelCase fields, hashes in hex.
    std::fs::write(&legacy, serde_json::to_vec(&before).unwrap()).unwrap();
    std::fs::remove_file(&binary).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&legacy).unwrap()).unwrap();
    let first = json["files"].as_object().unwrap().values().next().unwrap();
    assert_eq!(first["hash"].as_str().unwrap().len(), 32, "{first}");

    write_files(
        repo.path(),
        &[(
            "calc/extra.py",
            "def unmistakable_zebra_total():\n    return 7\n".to_string(),
        )],
    );
    let summary = Retriever::open(repo.path(), lexical_config())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    assert_eq!(summary.added, 1, "{summary:?}");
    assert_eq!(summary.unchanged, before.files.len(), "{summary:?}");
    assert!(!legacy.exists());
    let after = read_manifest(repo.path());
    assert_eq!(after.files.len(), before.files.len() + 1);
    assert_eq!(after.files["calc/extra.py"].chunks, 1);
}
