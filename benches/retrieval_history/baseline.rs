//! The naive baseline: BM25 over whole files. One tantivy document per tracked file of the
//! repository's language (tests, docs and vendored code of that language included: no
//! filtering), its text in one field with tantivy's default tokenizer (split on
//! non-alphanumerics, lower-cased; no stemming, no identifier splitting). The query is the
//! request's distinct tokens, OR-ed. The index lives in memory and follows the work tree from
//! case to case: only files whose content changed are replaced.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term, doc};

use crate::paths::Lang;

pub struct WholeFileBm25 {
    index: Index,
    writer: IndexWriter,
    reader: IndexReader,
    path: Field,
    body: Field,
    /// Content hash of every indexed file.
    indexed: HashMap<String, blake3::Hash>,
}

fn tv(e: tantivy::TantivyError) -> String {
    format!("baseline index: {e}")
}

impl WholeFileBm25 {
    pub fn new() -> Result<WholeFileBm25, String> {
        let mut builder = Schema::builder();
        let path = builder.add_text_field("path", STRING | STORED);
        let body = builder.add_text_field("body", TEXT);
        let index = Index::create_in_ram(builder.build());
        let writer = index.writer_with_num_threads(1, 50_000_000).map_err(tv)?;
        let reader = index.reader().map_err(tv)?;
        Ok(WholeFileBm25 {
            index,
            writer,
            reader,
            path,
            body,
            indexed: HashMap::new(),
        })
    }

    /// Makes the index hold exactly the files of `langs` among `tracked`, read from `tree`.
    /// Returns how many documents were added or replaced.
    pub fn sync(
        &mut self,
        tree: &Path,
        tracked: &[String],
        langs: &[Lang],
    ) -> Result<usize, String> {
        let wanted: BTreeSet<&str> = tracked
            .iter()
            .map(String::as_str)
            .filter(|p| langs.iter().any(|l| l.owns(p)))
            .collect();
        let mut changed = 0;
        let gone: Vec<String> = self
            .indexed
            .keys()
            .filter(|p| !wanted.contains(String::as_str(p)))
            .cloned()
            .collect();
        for p in gone {
            self.writer
                .delete_term(Term::from_field_text(self.path, &p));
            self.indexed.remove(&p);
            changed += 1;
        }
        for p in wanted {
            // Symlinks and submodules are tracked but are no readable file: skipped.
            let Ok(bytes) = std::fs::read(tree.join(p)) else {
                continue;
            };
            let hash = blake3::hash(&bytes);
            if self.indexed.get(p) == Some(&hash) {
                continue;
            }
            if self.indexed.insert(p.to_string(), hash).is_some() {
                self.writer.delete_term(Term::from_field_text(self.path, p));
            }
            let text = String::from_utf8_lossy(&bytes);
            self.writer
                .add_document(doc!(self.path => p, self.body => text.as_ref()))
                .map_err(tv)?;
            changed += 1;
        }
        if changed > 0 {
            self.writer.commit().map_err(tv)?;
            self.reader.reload().map_err(tv)?;
        }
        Ok(changed)
    }

    pub fn files(&self) -> usize {
        self.indexed.len()
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
