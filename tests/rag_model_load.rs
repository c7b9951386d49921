//! What a process loads to answer, with embeddings turned on (`rag.embeddings`): a one-shot
//! `promptd context` on an index without cached vectors never loads the embedding model or ONNX
//! Runtime (its JSON says so, its debug log has no model-load line and its peak memory stays well
//! below a run that loads them); with vectors cached for the model it loads the model to embed
//! the query and ranks hybrid. A long-lived retriever still loads the model and embeds in the
//! background. The embedder keeps the order of its inputs while it runs them shortest first or in
//! background turns, and cached vectors of another token window are not used.

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use promptd::rag::embed::{Embedder, cosine};
use promptd::rag::{RagConfig, RetrievalMode, RetrievalQuery, Retriever};
use support::process::{promptd, wait_bounded};
use support::rag::{QUERIES, fixture_repo, model_config, model_paths};

/// What one `promptd context --json` run reported, printed and used.
struct ContextRun {
    json: serde_json::Value,
    stderr: String,
    peak_rss_mib: f64,
}

/// Runs promptd with the model installed in the environment, embeddings turned on in its
/// config file and debug logging on.
fn promptd_with_model(dir: &Path, args: &[&str]) -> (std::process::Output, f64) {
    let (model, runtime) = model_paths();
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), r#"{"rag": {"embeddings": true}}"#).unwrap();
    let mut child = promptd()
        .args(args)
        .current_dir(dir)
        .env("PROMPTD_CONFIG", config.path())
        .env("PROMPTD_EMBED_MODEL_DIR", model)
        .env("ORT_DYLIB_PATH", runtime)
        .env("RUST_LOG", "promptd=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            r.read_to_end(&mut buf).unwrap();
            buf
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let (status, peak, timed_out) = wait_bounded(&mut child, Duration::from_secs(120));
    assert!(!timed_out, "promptd {args:?} timed out");
    let output = std::process::Output {
        status: status.unwrap(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    assert!(
        output.status.success(),
        "promptd {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, peak)
}

fn context(dir: &Path) -> ContextRun {
    let dir_arg = dir.to_str().unwrap();
    let (out, peak_rss_mib) =
        promptd_with_model(dir, &["context", QUERIES[0].0, "--dir", dir_arg, "--json"]);
    ContextRun {
        json: serde_json::from_slice(&out.stdout).unwrap(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        peak_rss_mib,
    }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding model and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn one_shot_context_loads_the_model_only_when_vectors_are_cached() {
    let repo = fixture_repo();
    let dir = repo.path();
    let dir_arg = dir.to_str().unwrap();
    promptd_with_model(dir, &["index", "--dir", dir_arg, "--no-embed"]);

    let lexical = context(dir);
    assert_eq!(lexical.json["model_loaded"], false, "{}", lexical.json);
    assert_eq!(lexical.json["mode"], "lexical", "{}", lexical.json);
    assert!(
        !lexical.stderr.contains("embedding model loaded"),
        "{}",
        lexical.stderr
    );
    assert!(
        !lexical.json["chunks"].as_array().unwrap().is_empty(),
        "{}",
        lexical.json
    );

    promptd_with_model(dir, &["index", "--dir", dir_arg]);
    let hybrid = context(dir);
    assert_eq!(hybrid.json["model_loaded"], true, "{}", hybrid.json);
    assert_eq!(hybrid.json["mode"], "hybrid", "{}", hybrid.json);
    assert!(
        hybrid.stderr.contains("embedding model loaded"),
        "{}",
        hybrid.stderr
    );
    // ONNX Runtime and the model's weights are large, and the lexical run never touched them.
    assert!(
        hybrid.peak_rss_mib > lexical.peak_rss_mib + 20.0,
        "peak RSS lexical {:.1} MiB, hybrid {:.1} MiB",
        lexical.peak_rss_mib,
        hybrid.peak_rss_mib
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding model and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn long_lived_retriever_still_loads_the_model_on_a_lexical_index() {
    let repo = fixture_repo();
    let lexical = RagConfig {
        embeddings: false,
        ..model_config()
    };
    Retriever::open(repo.path(), lexical)
        .unwrap()
        .index(&|_| {})
        .unwrap();

    let one_shot = Retriever::open(repo.path(), model_config().one_shot()).unwrap();
    let result = one_shot
        .retrieve(&RetrievalQuery::new(QUERIES[0].0))
        .unwrap();
    assert!(!result.stats.model_loaded);
    assert_eq!(result.stats.mode, RetrievalMode::Lexical);
    assert_eq!(one_shot.cached_vectors(), 0);
    drop(one_shot);

    let served = Retriever::open(repo.path(), model_config()).unwrap();
    let first = served.retrieve(&RetrievalQuery::new(QUERIES[0].0)).unwrap();
    assert!(first.stats.model_loaded);
    assert!(served.wait_idle(Duration::from_secs(120)));
    assert!(served.cached_vectors() > 0);
    let later = served.retrieve(&RetrievalQuery::new(QUERIES[0].0)).unwrap();
    assert_eq!(
        later.stats.mode,
        RetrievalMode::Hybrid,
        "{:?}",
        later.warnings
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding model and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn vectors_of_another_token_window_are_not_used() {
    let repo = fixture_repo();
    let wide = model_config();
    let summary = Retriever::open(repo.path(), wide.clone())
        .unwrap()
        .index(&|_| {})
        .unwrap();
    assert!(summary.embedded > 0);
    let narrow = RagConfig {
        embed_max_tokens: wide.embed_max_tokens / 2,
        ..wide.clone()
    };
    let result = Retriever::open(repo.path(), narrow.one_shot())
        .unwrap()
        .retrieve(&RetrievalQuery::new(QUERIES[0].0))
        .unwrap();
    assert_eq!(result.stats.mode, RetrievalMode::Lexical);
    assert!(!result.stats.model_loaded);
    let same = Retriever::open(repo.path(), wide.one_shot())
        .unwrap()
        .retrieve(&RetrievalQuery::new(QUERIES[0].0))
        .unwrap();
    assert_eq!(
        same.stats.mode,
        RetrievalMode::Hybrid,
        "{:?}",
        same.warnings
    );
    assert!(same.stats.model_loaded);
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding model and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn embedding_keeps_input_order_and_cuts_long_texts() {
    let embedder = Embedder::load(&model_config()).unwrap();
    let long = format!(
        "fn parse_header(line: &str) -> Header {{\n{}}}\n",
        "    let état = line.trim(); // é\n".repeat(400)
    );
    let texts = [
        long.as_str(),
        "retry an http request",
        "fn verify_password(hash: &str, password: &str) -> bool { todo!() }",
        "x",
    ];
    let batched = embedder.embed(&texts, 2).unwrap();
    assert_eq!(batched.len(), texts.len());
    for (text, vector) in texts.iter().zip(&batched) {
        let alone = embedder.embed_query(text).unwrap();
        assert!(cosine(&alone, vector) > 0.999, "{text:.40}");
    }
    // Background turns (a few texts per hold of the model) give the same vectors in order.
    let many: Vec<&str> = texts.iter().cycle().take(11).copied().collect();
    let in_turns = embedder.embed_in_background(&many, 16).unwrap();
    assert_eq!(in_turns.len(), many.len());
    for (i, vector) in in_turns.iter().enumerate() {
        assert!(
            cosine(vector, &batched[i % texts.len()]) > 0.999,
            "text {i}"
        );
    }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the embedding model and ONNX Runtime (scripts/setup installs it)"
)]
#[test]
fn index_embeds_only_when_asked() {
    let repo = fixture_repo();
    let dir = repo.path();
    let dir_arg = dir.to_str().unwrap();
    let (model, runtime) = model_paths();
    let index = |extra: &[&str]| {
        let out = promptd()
            .args(["index", "--dir", dir_arg])
            .args(extra)
            .current_dir(dir)
            .env_remove("PROMPTD_CONFIG")
            .env("PROMPTD_EMBED_MODEL_DIR", &model)
            .env("ORT_DYLIB_PATH", &runtime)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // With the model installed and no config, the index stays lexical.
    let lexical = index(&[]);
    assert!(lexical.starts_with("indexed "), "{lexical}");
    assert!(!lexical.contains("embedded"), "{lexical}");
    let embedded = index(&["--embed"]);
    assert!(embedded.contains("\nembedded "), "{embedded}");
}
