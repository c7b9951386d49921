//! Retrieval quality on labelled queries (`tests/fixtures/rag/eval/*.yaml`) over real crates
//! from the local cargo registry: file-level Acc@1, Acc@3, Acc@k and MRR for several ranking
//! configurations. Run through `scripts/eval-retrieval` (release build, real model); ignored in
//! the default test run because embedding a few thousand chunks is slow the first time
//! (vectors are cached under `target/rag-eval/`).

use crate::support::rag;

use std::path::PathBuf;

use promptd::rag::{Fusion, RagConfig, RetrievalQuery, Retriever};
use serde::Deserialize;

#[derive(Deserialize)]
struct QuerySet {
    #[serde(rename = "crate")]
    crate_dir: String,
    queries: Vec<LabelledQuery>,
}

#[derive(Deserialize)]
struct LabelledQuery {
    query: String,
    expected: Vec<String>,
}

fn registry_crate(name: &str) -> PathBuf {
    let home = PathBuf::from(std::env::var_os("CARGO_HOME").unwrap_or_else(|| {
        let mut h = std::env::var_os("HOME").unwrap();
        h.push("/.cargo");
        h
    }));
    let src = home.join("registry/src");
    for index in std::fs::read_dir(&src).unwrap() {
        let candidate = index.unwrap().path().join(name);
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!("{name} not found under {}", src.display());
}

/// The ranking configurations compared; the first is the shipped default.
fn variants(model: &RagConfig) -> Vec<(&'static str, RagConfig)> {
    let base = RagConfig {
        embeddings: true,
        model_dir: model.model_dir.clone(),
        ort_dylib_path: model.ort_dylib_path.clone(),
        ..RagConfig::default()
    };
    let lexical = RagConfig {
        fusion: Fusion::Lexical,
        ..base.clone()
    };
    vec![
        ("default", base.clone()),
        (
            "bm25 body only",
            RagConfig {
                symbol_boost: 0.0,
                path_boost: 0.0,
                action_boost: 1.0,
                ..lexical.clone()
            },
        ),
        (
            "bm25 + symbols",
            RagConfig {
                path_boost: 0.0,
                action_boost: 1.0,
                ..lexical.clone()
            },
        ),
        (
            "bm25 + symbols + paths",
            RagConfig {
                action_boost: 1.0,
                ..lexical.clone()
            },
        ),
        ("bm25 + sym + path + action", lexical.clone()),
        (
            "bm25 + sym + path + file agg 0.3",
            RagConfig {
                file_aggregation: 0.3,
                ..lexical.clone()
            },
        ),
        (
            "blend 0.2/0.8 (reference)",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.2,
                vector_weight: 0.8,
                symbol_boost: 0.0,
                path_boost: 0.0,
                action_boost: 1.0,
                ..base.clone()
            },
        ),
        (
            "blend 0.2/0.8 + sym + path",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.2,
                vector_weight: 0.8,
                ..base.clone()
            },
        ),
        (
            "blend 0.5/0.5 + sym + path",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.5,
                vector_weight: 0.5,
                ..base.clone()
            },
        ),
        (
            "blend 0.7/0.3 + sym + path",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.7,
                vector_weight: 0.3,
                ..base.clone()
            },
        ),
        (
            "rrf + sym + path",
            RagConfig {
                fusion: Fusion::Rrf,
                ..base.clone()
            },
        ),
        (
            "blend 0.5/0.5 + file agg 0.3",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.5,
                vector_weight: 0.5,
                file_aggregation: 0.3,
                ..base.clone()
            },
        ),
        (
            "rrf + sym + path, no action boost",
            RagConfig {
                fusion: Fusion::Rrf,
                action_boost: 1.0,
                ..base.clone()
            },
        ),
        (
            "rrf + sym 3 + path 2",
            RagConfig {
                fusion: Fusion::Rrf,
                symbol_boost: 3.0,
                path_boost: 2.0,
                ..base.clone()
            },
        ),
        (
            "rrf + sym 1 + path 0.5",
            RagConfig {
                fusion: Fusion::Rrf,
                symbol_boost: 1.0,
                path_boost: 0.5,
                ..base.clone()
            },
        ),
        (
            "blend 0.5/0.5, no action boost",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.5,
                vector_weight: 0.5,
                action_boost: 1.0,
                ..base.clone()
            },
        ),
        (
            "bm25 + sym 3 + path 2",
            RagConfig {
                symbol_boost: 3.0,
                path_boost: 2.0,
                ..lexical.clone()
            },
        ),
        (
            "vector rerank only (0/1)",
            RagConfig {
                fusion: Fusion::Blend,
                lexical_weight: 0.0,
                vector_weight: 1.0,
                ..base
            },
        ),
    ]
}

#[derive(Default, Clone, Copy)]
struct Score {
    queries: usize,
    at1: usize,
    at3: usize,
    atk: usize,
    rr: f64,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.queries += 1;
        if let Some(r) = rank {
            self.at1 += usize::from(r == 0);
            self.at3 += usize::from(r < 3);
            self.atk += 1;
            self.rr += 1.0 / (r as f64 + 1.0);
        }
    }

    fn row(&self) -> String {
        let n = self.queries.max(1) as f64;
        format!(
            "{:>6.3} {:>6.3} {:>6.3} {:>6.3}",
            self.at1 as f64 / n,
            self.at3 as f64 / n,
            self.atk as f64 / n,
            self.rr / n
        )
    }
}

#[test]
#[ignore = "minutes of embedding on first run; use scripts/eval-retrieval"]
fn eval_retrieval() {
    let model = rag::model_config();
    let work = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/rag-eval");
    let mut sets = Vec::new();
    for entry in std::fs::read_dir("tests/fixtures/rag/eval").unwrap() {
        let path = entry.unwrap().path();
        let set: QuerySet = serde_json::from_value(
            promptd::registry::yaml_to_json(&std::fs::read_to_string(&path).unwrap()).unwrap(),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let repo = work.join(&set.crate_dir);
        if !repo.exists() {
            std::fs::create_dir_all(&repo).unwrap();
            rag::copy_tree(&registry_crate(&set.crate_dir), &repo);
        }
        let retriever = Retriever::open(&repo, model.clone()).unwrap();
        let summary = retriever.index(&|_| {}).unwrap();
        eprintln!(
            "{}: {} files, {} chunks, {} embedded now ({:.1} s)",
            set.crate_dir, summary.files, summary.chunks, summary.embedded, summary.embed_seconds
        );
        sets.push((repo, set));
    }
    sets.sort_by(|a, b| a.1.crate_dir.cmp(&b.1.crate_dir));
    let k = RagConfig::default().top_k;
    println!(
        "{:<36} {:>6} {:>6} {:>6} {:>6}   per set (Acc@1/Acc@3)",
        "configuration",
        "Acc@1",
        "Acc@3",
        format!("Acc@{k}"),
        "MRR"
    );
    let mut default_total = Score::default();
    for (name, config) in variants(&model) {
        let mut total = Score::default();
        let mut per_set = Vec::new();
        for (repo, set) in &sets {
            let retriever = Retriever::open(repo, config.clone()).unwrap();
            let mut score = Score::default();
            for q in &set.queries {
                let result = retriever.retrieve(&RetrievalQuery::new(&q.query)).unwrap();
                assert!(
                    config.fusion == Fusion::Lexical
                        || result.stats.mode == promptd::rag::RetrievalMode::Hybrid,
                    "{name}: {:?}",
                    result.warnings
                );
                let mut files: Vec<&str> = Vec::new();
                for c in &result.chunks {
                    if !files.contains(&c.chunk.path.as_str()) {
                        files.push(&c.chunk.path);
                    }
                }
                let rank = files.iter().position(|f| q.expected.iter().any(|e| e == f));
                if std::env::var_os("EVAL_VERBOSE").is_some() && name == "default" {
                    eprintln!(
                        "{:?} {:?} → {:?}",
                        rank,
                        q.query,
                        &files[..files.len().min(3)]
                    );
                }
                score.add(rank);
                total.add(rank);
            }
            per_set.push(format!(
                "{} {}/{}",
                set.crate_dir.split('-').next().unwrap_or_default(),
                score.at1,
                score.at3
            ));
        }
        println!("{:<36} {}   {}", name, total.row(), per_set.join("  "));
        if name == "default" {
            default_total = total;
        }
    }
    println!(
        "({} queries; file-level: a query hits when an expected file is among the returned chunks' files)",
        default_total.queries
    );
    // Guards the shipped defaults against regressions.
    assert!(
        default_total.at3 * 10 >= default_total.queries * 6,
        "default Acc@3 fell below 0.6"
    );
}
