//! An index kept up to date along a history of edits ranks like one built fresh from the same
//! files: chunks replaced by an edit must stop counting in BM25's statistics (document
//! frequencies, average length), which tantivy keeps until their segment is merged.

use crate::support::rag::{lexical_config, write_files};

use std::path::Path;

use promptd::rag::{RagConfig, RetrievalQuery, Retriever};

/// Filler modules so that document frequencies weigh: the rarer a word, the higher its BM25
/// weight.
fn base_files() -> Vec<(String, String)> {
    let mut files = vec![
        (
            "src/accounts.rs".to_string(),
            "/// Posts to the ledger.\npub fn post(ledger: &mut Vec<i64>) {\n    // ledger ledger ledger\n    ledger.push(1);\n}\n".to_string(),
        ),
        (
            "src/totals.rs".to_string(),
            "/// Computes the balance.\npub fn compute(balance: i64) -> i64 {\n    // balance balance\n    balance + 1\n}\n".to_string(),
        ),
    ];
    for n in 0..16 {
        files.push((
            format!("src/filler_{n}.rs"),
            format!(
                "/// Helper number {n}.\npub fn helper_{n}(value: u32) -> u32 {{\n    value.wrapping_mul({n}) + {n}\n}}\n"
            ),
        ));
    }
    files
}

/// Version `round` of a module whose every version but the last talks about the ledger: the
/// replaced versions are what an in-place index would keep counting.
fn journal(round: usize, last: bool) -> String {
    if last {
        return "/// The journal is closed.\npub fn closed() -> bool {\n    true\n}\n".to_string();
    }
    format!(
        "/// Journal entry {round} of the ledger.\npub fn entry_{round}(ledger: &[i64]) -> usize {{\n    // ledger ledger {round}\n    ledger.len() + {round}\n}}\n"
    )
}

fn config() -> RagConfig {
    RagConfig {
        threshold: 0.0,
        top_k: 12,
        token_budget: 100_000,
        watch: false,
        ..lexical_config()
    }
}

fn write(root: &Path, files: &[(String, String)]) {
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    write_files(root, &files);
}

/// (path, first line, BM25) of every chunk returned for `query`, best first.
fn ranking(retriever: &Retriever, query: &str) -> Vec<(String, usize, f32)> {
    retriever
        .retrieve(&RetrievalQuery::new(query))
        .unwrap()
        .chunks
        .into_iter()
        .map(|c| (c.chunk.path, c.chunk.start_line, c.chunk.bm25))
        .collect()
}

#[test]
fn an_index_refreshed_along_edits_ranks_like_one_built_fresh() {
    let edited = tempfile::tempdir().unwrap();
    write(edited.path(), &base_files());
    let retriever = Retriever::open(edited.path(), config()).unwrap();
    retriever.index(&|_| {}).unwrap();
    const ROUNDS: usize = 12;
    for round in 0..=ROUNDS {
        write_files(
            edited.path(),
            &[("src/journal.rs", journal(round, round == ROUNDS))],
        );
        // A file that stays: the segment this refresh writes outlives the journal version in
        // it (a segment whose chunks are all replaced is dropped at once).
        write_files(
            edited.path(),
            &[(
                &format!("src/note_{round}.rs"),
                format!("pub fn note_{round}() -> u32 {{\n    {round}\n}}\n"),
            )],
        );
        // A file that comes and goes, as branches switch.
        let scratch = edited.path().join("src/scratch.rs");
        if round % 3 == 0 {
            std::fs::write(&scratch, format!("// ledger scratch {round}\n")).unwrap();
        } else if scratch.exists() {
            std::fs::remove_file(&scratch).unwrap();
        }
        let summary = retriever.index(&|_| {}).unwrap();
        assert!(summary.changed + summary.added + summary.removed > 0);
    }

    let fresh = tempfile::tempdir().unwrap();
    write(fresh.path(), &base_files());
    write_files(fresh.path(), &[("src/journal.rs", journal(ROUNDS, true))]);
    for round in 0..=ROUNDS {
        let note = format!("src/note_{round}.rs");
        std::fs::copy(edited.path().join(&note), fresh.path().join(&note)).unwrap();
    }
    if edited.path().join("src/scratch.rs").exists() {
        std::fs::copy(
            edited.path().join("src/scratch.rs"),
            fresh.path().join("src/scratch.rs"),
        )
        .unwrap();
    }
    let built = Retriever::open(fresh.path(), config()).unwrap();
    built.index(&|_| {}).unwrap();

    for query in [
        "ledger balance",
        "post to the ledger",
        "compute balance helper",
    ] {
        let (after_edits, from_scratch) = (ranking(&retriever, query), ranking(&built, query));
        assert!(!from_scratch.is_empty(), "{query}");
        let order = |r: &[(String, usize, f32)]| -> Vec<(String, usize)> {
            r.iter().map(|(p, l, _)| (p.clone(), *l)).collect()
        };
        assert_eq!(order(&after_edits), order(&from_scratch), "{query}");
        for ((_, _, a), (_, _, b)) in after_edits.iter().zip(&from_scratch) {
            assert!(
                (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                "{query}: {a} vs {b}"
            );
        }
    }
}
