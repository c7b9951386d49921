//! Retrieval with the real embedding models installed by `scripts/setup-model`: the
//! all-MiniLM-L6-v2 int8 transformer on ONNX Runtime and the static model (a token table, no
//! runtime): sane vectors, hybrid ranking, the on-disk vector cache, and background embedding
//! in a long-lived retriever.

use crate::support::rag;

use std::time::Duration;

use promptd::rag::embed::{Embedder, STATIC_MODEL_DIM, cosine};
use promptd::rag::{RagConfig, RetrievalMode, RetrievalQuery, Retriever};
use rag::{QUERIES, fixture_repo, model_config, model_paths, static_model_config};

/// Cosine similarities a sane sentence model gives: a paraphrase above unrelated text, code
/// about the subject above unrelated text, and a text alone as in a batch. Returns the
/// similarities of the paraphrase and of the unrelated text.
fn assert_sane_vectors(embedder: &Embedder, dim: usize) -> (f32, f32) {
    let texts = [
        "How do I reset my password?",
        "Steps to recover a forgotten account password",
        "The cat sat on the warm mat",
        "fn verify_password(hash: &str, password: &str) -> bool",
    ];
    let v = embedder.embed(&texts, 4).unwrap();
    assert_eq!(v.len(), 4);
    assert!(v.iter().all(|x| x.len() == dim));
    for x in &v {
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "norm {norm}");
    }
    let related = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    let code = cosine(&v[0], &v[3]);
    assert!(
        related > unrelated + 0.2,
        "related {related}, unrelated {unrelated}"
    );
    assert!(code > unrelated, "code {code} vs unrelated {unrelated}");
    let single = embedder.embed_query(texts[1]).unwrap();
    assert!(cosine(&single, &v[1]) > 0.999);
    (related, unrelated)
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding models and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn int8_model_gives_sane_vectors() {
    let (model, runtime) = model_paths();
    let config = model_config();
    let embedder = Embedder::load(&config).unwrap_or_else(|e| {
        panic!(
            "loading {} with {}: {e}",
            model.display(),
            runtime.display()
        )
    });
    // Batching must not change vectors (mean pooling over the attention mask).
    let (related, unrelated) = assert_sane_vectors(&embedder, 384);
    assert!(related > 0.5, "related {related}");
    assert!(unrelated < 0.2, "unrelated {unrelated}");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding models and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn static_model_gives_sane_vectors_without_a_runtime() {
    let embedder = Embedder::load(&static_model_config()).unwrap();
    assert_sane_vectors(&embedder, STATIC_MODEL_DIM);
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding models and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn repositories_share_one_loaded_model_while_any_uses_it() {
    // Run options no other test uses, so no other test holds this copy.
    let config = RagConfig {
        embed_threads: Some(3),
        ..static_model_config()
    };
    let first = Embedder::shared(&config).unwrap();
    let second = Embedder::shared(&config).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &second), "one copy for both");
    // Other run options are another load.
    let mut narrower = config.clone();
    narrower.embed_threads = Some(5);
    let other = Embedder::shared(&narrower).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &other));
    // Once no one holds it, the copy is gone: the next request loads the model again.
    let weak = std::sync::Arc::downgrade(&first);
    drop((first, second));
    assert!(weak.upgrade().is_none(), "released with its last user");
    let again = Embedder::shared(&config).unwrap();
    assert!(weak.upgrade().is_none(), "a new copy, not the released one");
    assert_eq!(
        again.embed_query("parse the config").unwrap().len(),
        STATIC_MODEL_DIM
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding models and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn hybrid_ranking_with_the_static_model() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), static_model_config()).unwrap();
    let summary = retriever.index(&|_| {}).unwrap();
    assert!(summary.embedded > 0);
    let mut top3 = 0;
    for (text, path, _) in QUERIES {
        let result = retriever.retrieve(&RetrievalQuery::new(*text)).unwrap();
        assert_eq!(
            result.stats.mode,
            RetrievalMode::Hybrid,
            "{:?}",
            result.warnings
        );
        top3 += usize::from(result.chunks.iter().take(3).any(|c| &c.chunk.path == path));
    }
    assert!(
        top3 >= QUERIES.len() - 1,
        "top-3 hits {top3}/{}",
        QUERIES.len()
    );
    // Reopening reuses the static model's vectors on disk.
    drop(retriever);
    let reopened = Retriever::open(repo.path(), static_model_config()).unwrap();
    assert_eq!(reopened.index(&|_| {}).unwrap().embedded, 0);
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding models and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn hybrid_ranking_uses_cached_vectors() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), model_config()).unwrap();
    let summary = retriever.index(&|_| {}).unwrap();
    assert!(summary.embedded > 0);
    assert_eq!(retriever.cached_vectors(), summary.embedded);
    let mut top1 = 0;
    for (text, path, _) in QUERIES {
        let result = retriever.retrieve(&RetrievalQuery::new(*text)).unwrap();
        assert_eq!(
            result.stats.mode,
            RetrievalMode::Hybrid,
            "{:?}",
            result.warnings
        );
        assert!(result.chunks.iter().all(|c| c.vector.is_some()));
        assert!(
            result.chunks.iter().take(3).any(|c| &c.chunk.path == path),
            "{text:?} → {:?}",
            result
                .chunks
                .iter()
                .map(|c| &c.chunk.path)
                .collect::<Vec<_>>()
        );
        top1 += usize::from(&result.chunks[0].chunk.path == path);
    }
    assert!(
        top1 >= QUERIES.len() - 1,
        "top-1 hits {top1}/{}",
        QUERIES.len()
    );

    // Reopening reuses the vectors on disk: nothing is embedded again.
    drop(retriever);
    let reopened = Retriever::open(repo.path(), model_config()).unwrap();
    let again = reopened.index(&|_| {}).unwrap();
    assert_eq!(again.embedded, 0);
    assert_eq!(reopened.cached_vectors(), summary.embedded);

    // A torn last record (crash mid-append) costs one vector, not the cache.
    drop(reopened);
    let cache = repo.path().join(".rag/vectors.bin");
    let len = std::fs::metadata(&cache).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&cache)
        .unwrap();
    f.set_len(len - 100).unwrap();
    let repaired = Retriever::open(repo.path(), model_config()).unwrap();
    let after = repaired.index(&|_| {}).unwrap();
    assert_eq!(after.embedded, 1);
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding models and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn long_lived_retriever_embeds_in_the_background() {
    let repo = fixture_repo();
    let retriever = Retriever::open(repo.path(), model_config()).unwrap();
    // First query: the index is built within the budget, vectors do not exist yet.
    let first = retriever
        .retrieve(&RetrievalQuery::new("multiply two matrices"))
        .unwrap();
    assert_eq!(first.chunks[0].chunk.path, "native/matrix.cpp");
    assert_eq!(first.stats.mode, RetrievalMode::Lexical);
    assert!(
        first
            .warnings
            .iter()
            .any(|w| w.contains("not computed yet")),
        "{:?}",
        first.warnings
    );
    assert!(retriever.wait_idle(Duration::from_secs(300)));
    let later = retriever
        .retrieve(&RetrievalQuery::new("multiply two matrices"))
        .unwrap();
    assert_eq!(
        later.stats.mode,
        RetrievalMode::Hybrid,
        "{:?}",
        later.warnings
    );
    assert_eq!(later.chunks[0].chunk.path, "native/matrix.cpp");
    assert!(later.warnings.is_empty(), "{:?}", later.warnings);
}
