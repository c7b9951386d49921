//! The naive baseline: BM25 over whole files. One tantivy document per tracked file of the
//! repository's language (tests, docs and vendored code of that language included: no
//! filtering), its text in one field with tantivy's default tokenizer (split on
//! non-alphanumerics, lower-cased; no stemming, no identifier splitting). The query is the
//! request's distinct tokens, OR-ed. The index is built in memory for each case's tree.

use std::collections::BTreeSet;
use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term, doc};

use crate::paths::Lang;

pub struct WholeFileBm25 {
    index: Index,
    reader: IndexReader,
    path: Field,
    body: Field,
    files: usize,
}

fn tv(e: tantivy::TantivyError) -> String {
    format!("baseline index: {e}")
}

impl WholeFileBm25 {
    /// Indexes the files of `langs` among `tracked`, read from `tree`.
    pub fn build(tree: &Path, tracked: &[String], langs: &[Lang]) -> Result<WholeFileBm25, String> {
        let mut builder = Schema::builder();
        let path = builder.add_text_field("path", STRING | STORED);
        let body = builder.add_text_field("body", TEXT);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 50_000_000).map_err(tv)?;
        let mut files = 0;
        for p in tracked.iter().filter(|p| langs.iter().any(|l| l.owns(p))) {
            // Symlinks and submodules are tracked but are no readable file: skipped.
            let Ok(bytes) = std::fs::read(tree.join(p)) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            writer
                .add_document(doc!(path => p.as_str(), body => text.as_ref()))
                .map_err(tv)?;
            files += 1;
        }
        writer.commit().map_err(tv)?;
        let reader = index.reader().map_err(tv)?;
        Ok(WholeFileBm25 {
            index,
            reader,
            path,
            body,
            files,
        })
    }

    pub fn files(&self) -> usize {
        self.files
    }

    /// The `limit` best files for `request`, best first.
    pub fn search(&self, request: &str, limit: usize) -> Result<Vec<String>, String> {
        let mut analyzer = self
            .index
            .tokenizers()
            .get("default")
            .ok_or("no default tokenizer")?;
        let mut terms = BTreeSet::new();
        let mut stream = analyzer.token_stream(request);
        while let Some(token) = stream.next() {
            terms.insert(token.text.clone());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let q: Box<dyn Query> = Box::new(TermQuery::new(
                    Term::from_field_text(self.body, t),
                    IndexRecordOption::WithFreqs,
                ));
                (Occur::Should, q)
            })
            .collect();
        let searcher = self.reader.searcher();
        let hits = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(limit).order_by_score(),
            )
            .map_err(tv)?;
        hits.into_iter()
            .map(|(_, address)| {
                let doc: TantivyDocument = searcher.doc(address).map_err(tv)?;
                doc.get_first(self.path)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .ok_or_else(|| "baseline document without a path".to_string())
            })
            .collect()
    }
}
