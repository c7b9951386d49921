//! The persisted lexical index: a tantivy BM25 index under `<repo>/.rag/index/` holding every
//! chunk and, per file, one whole-file document (its path words and text, searched apart with
//! statistics of their own so that chunks and files each score as their own collection), plus a
//! manifest of per-file fingerprints (size, mtime, content hash) in `.rag/manifest.bin`, so a
//! refresh reads only files whose size or mtime moved and re-chunks only those whose content
//! hash changed. Tantivy commits are atomic; the manifest is tied to a commit through the commit
//! payload (its generation number) and written with write-then-rename, so a crash at any point
//! leaves a consistent pair. A corrupt, inconsistent or older-format index is rebuilt with a
//! warning, never an error; segment checksums are verified on open for files written or
//! touched since they last passed. After each refresh, [`CodeIndex::compact`] merges segments
//! so that chunks replaced by edits stop counting in BM25 statistics and the segment count
//! stays bounded.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tantivy::collector::{Count, TopDocs};
use tantivy::index::SegmentId;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{
    Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term, doc,
};

use super::chunk::{Chunk, ChunkOptions, chunk_file};
use super::discover::{DiscoveredFile, looks_binary};
use super::error::RagError;
use super::hash::{ContentHash, content_hash, tagged_hash};
use super::kind::{self, FileKind};
use super::request::QueryTerm;
use super::store::{RagDir, write_atomic};
use super::tokenize;

/// Bumped whenever the schema, chunking or manifest layout changes.
pub const INDEX_FORMAT_VERSION: u32 = 3;
/// The `kind` of a whole-file document (chunks have none).
const FILE_DOC: &str = "file";
/// Files chunked between two deadline checks.
const BATCH_FILES: usize = 256;
/// A large segment is rewritten without its deleted chunks once they are this share of its
/// chunks (a small one as soon as it holds any): BM25 counts deleted chunks in its document
/// frequencies and field lengths until then, so an index refreshed along many edits would
/// otherwise rank unlike one built fresh from the same files.
const DELETED_SHARE_BEFORE_MERGE: f32 = 0.05;
/// Segments holding fewer chunks than this are small: every refresh that changes something
/// adds one.
const SMALL_SEGMENT_CHUNKS: u32 = 20_000;
/// Small segments kept before they are merged into one (each segment costs every search a
/// term lookup per query term).
const MAX_SMALL_SEGMENTS: usize = 4;

/// Fingerprint of one indexed file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileRecord {
    pub size: u64,
    pub mtime_ns: u64,
    /// The content hash: 16 bytes, in hex in the JSON form of older builds.
    #[serde(with = "hash_bytes")]
    pub hash: ContentHash,
    pub chunks: u32,
}

/// A [`ContentHash`] as raw bytes in the binary manifest and as hex in JSON.
mod hash_bytes {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::ContentHash;

    pub fn serialize<S: Serializer>(hash: &ContentHash, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            hex::serde::serialize(hash, s)
        } else {
            hash.serialize(s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ContentHash, D::Error> {
        if d.is_human_readable() {
            hex::serde::deserialize(d)
        } else {
            ContentHash::deserialize(d)
        }
    }
}

/// Per-file fingerprints tied to one tantivy commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format_version: u32,
    pub generation: u64,
    pub chunk_lines: usize,
    pub overlap: usize,
    #[serde(deserialize_with = "sorted_map")]
    pub files: BTreeMap<String, FileRecord>,
}

/// A map stored in key order, built in one pass (`BTreeMap`'s bulk build from sorted input)
/// rather than by one insertion per entry.
fn sorted_map<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, FileRecord>, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = BTreeMap<String, FileRecord>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of file records")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1 << 20));
            while let Some(entry) = map.next_entry::<String, FileRecord>()? {
                entries.push(entry);
            }
            Ok(BTreeMap::from_iter(entries))
        }
    }
    deserializer.deserialize_map(Entries)
}

impl Manifest {
    fn empty(options: ChunkOptions) -> Self {
        Self {
            format_version: INDEX_FORMAT_VERSION * 1000 + tokenize::ANALYZER_VERSION,
            generation: 0,
            chunk_lines: options.chunk_lines,
            overlap: options.overlap,
            files: BTreeMap::new(),
        }
    }

    /// The manifest as stored (postcard).
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("a manifest always serializes")
    }

    /// A manifest stored by [`Manifest::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Manifest, postcard::Error> {
        postcard::from_bytes(bytes)
    }

    pub fn chunk_count(&self) -> usize {
        self.files.values().map(|f| f.chunks as usize).sum()
    }

    pub fn byte_count(&self) -> u64 {
        self.files.values().map(|f| f.size).sum()
    }
}

#[derive(Clone, Copy)]
struct Fields {
    path: Field,
    path_terms: Field,
    symbols: Field,
    tags: Field,
    body: Field,
    /// What a chunk's content says its kind is when its path does not
    /// ([`kind::content_kind`], [`kind::is_test_chunk`]).
    content_kind: Field,
    start_line: Field,
    end_line: Field,
    language: Field,
    hash: Field,
    /// [`FILE_DOC`] on whole-file documents.
    kind: Field,
    /// A whole-file document's path words and text.
    file_body: Field,
    /// A whole-file document's number of chunks.
    file_chunks: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(tokenize::ANALYZER)
        .set_index_option(IndexRecordOption::WithFreqs);
    let searchable = TextOptions::default().set_indexing_options(indexing);
    let fields = Fields {
        path: builder.add_text_field("path", STRING | STORED),
        path_terms: builder.add_text_field("path_terms", searchable.clone()),
        symbols: builder.add_text_field("symbols", searchable.clone().set_stored()),
        tags: builder.add_text_field("tags", STORED),
        body: builder.add_text_field("body", searchable.clone().set_stored()),
        content_kind: builder.add_text_field("content_kind", STORED),
        start_line: builder.add_u64_field("start_line", STORED),
        end_line: builder.add_u64_field("end_line", STORED),
        language: builder.add_text_field("language", STRING | STORED),
        hash: builder.add_bytes_field("hash", STORED),
        kind: builder.add_text_field("kind", STRING | STORED),
        file_body: builder.add_text_field("file_body", searchable),
        file_chunks: builder.add_u64_field("file_chunks", STORED),
    };
    (builder.build(), fields)
}

/// A chunk as the index returns it; a retrieval result ([`super::query::RetrievedChunk`]) is one of
/// these with its scores. Serialized without `hash` and `bm25`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexedChunk {
    /// Path relative to the repository, `/`-separated.
    pub path: String,
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, inclusive.
    pub end_line: usize,
    pub language: String,
    /// Metadata tags such as `[Function: parse]`, `[Method: Parser.next]`.
    pub tags: Vec<String>,
    pub symbols: Vec<String>,
    /// The source lines (tags are not repeated here).
    pub text: String,
    /// [`tagged_hash`] of the chunk: the key of its cached vector.
    #[serde(skip)]
    pub hash: ContentHash,
    /// Raw BM25 score (0 when not from a search).
    #[serde(skip)]
    pub bm25: f32,
    /// The kind its content says it is, when its path does not say so: generated (the
    /// file's header, a lock file, minified code) or test code in a source file.
    #[serde(skip)]
    pub content_kind: Option<FileKind>,
}

impl IndexedChunk {
    /// `chunk` of the file at `path` (relative, `/`-separated) as the index stores it, with no
    /// BM25 score.
    pub fn from_chunk(path: &str, chunk: Chunk) -> IndexedChunk {
        IndexedChunk {
            path: path.to_string(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            language: chunk.language.name().to_string(),
            hash: tagged_hash(&chunk.tags, &chunk.text),
            tags: chunk.tags,
            symbols: chunk.symbols,
            text: chunk.text,
            bm25: 0.0,
            content_kind: None,
        }
    }
}

/// A whole file matching a search.
#[derive(Debug, Clone, PartialEq)]
pub struct FileHit {
    /// Path relative to the repository, `/`-separated.
    pub path: String,
    /// Raw BM25 score of the whole file.
    pub bm25: f32,
    /// Chunks the file was cut into.
    pub chunks: usize,
}

/// What one refresh changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefreshCounts {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    pub unchanged: usize,
    pub skipped_binary: usize,
    /// Files re-chunked (added + changed).
    pub chunked: usize,
    pub new_chunks: usize,
    pub bytes_read: u64,
    pub commits: usize,
}

/// The tantivy index and its manifest.
pub struct CodeIndex {
    rag_dir: RagDir,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl CodeIndex {
    /// Opens the index in `rag_dir`, rebuilding it (with a warning pushed to `warnings`) when
    /// it is missing, corrupt, inconsistent with its manifest, or of another format.
    pub fn open(
        rag_dir: &RagDir,
        options: ChunkOptions,
        warnings: &mut Vec<String>,
    ) -> Result<(CodeIndex, Manifest), RagError> {
        rag_dir.create()?;
        if let Ok(Some(pair)) = Self::try_open(rag_dir, options) {
            return Ok(pair);
        }
        // Missing or unusable: decide again under the index lock, since another process may be
        // half-way through a commit (or a build) of this very index.
        let _lock = rag_dir.lock_index()?;
        match Self::try_open(rag_dir, options) {
            Ok(Some(pair)) => return Ok(pair),
            Ok(None) => {}
            Err(reason) => rebuilding(rag_dir, &reason, warnings),
        }
        Self::create(rag_dir, options)
    }

    /// Drops the index in `rag_dir` and builds an empty one (the next refresh fills it), with a
    /// warning saying why: for an index that failed while in use (a search error, a panic),
    /// which its checksums may not show.
    pub fn rebuild(
        rag_dir: &RagDir,
        options: ChunkOptions,
        reason: &str,
        warnings: &mut Vec<String>,
    ) -> Result<(CodeIndex, Manifest), RagError> {
        rag_dir.create()?;
        let _lock = rag_dir.lock_index()?;
        rebuilding(rag_dir, &format!("failed ({reason})"), warnings);
        Self::create(rag_dir, options)
    }

    /// `Ok(None)`: no index yet. `Err(reason)`: an index exists but cannot be used, a panic
    /// of tantivy on damaged files included.
    fn try_open(
        rag_dir: &RagDir,
        options: ChunkOptions,
    ) -> Result<Option<(CodeIndex, Manifest)>, String> {
        std::panic::catch_unwind(|| Self::try_open_unguarded(rag_dir, options)).unwrap_or_else(
            |panic| {
                Err(format!(
                    "is damaged (opening it panicked: {})",
                    promptd_base::panics::panic_message(panic.as_ref())
                ))
            },
        )
    }

    fn try_open_unguarded(
        rag_dir: &RagDir,
        options: ChunkOptions,
    ) -> Result<Option<(CodeIndex, Manifest)>, String> {
        let dir = rag_dir.index_dir();
        let manifest_path = rag_dir.manifest();
        let legacy_path = rag_dir.legacy_manifest();
        let legacy = !manifest_path.exists() && legacy_path.exists();
        if !dir.join("meta.json").exists() && !manifest_path.exists() && !legacy {
            return Ok(None);
        }
        let index = Index::open_in_dir(&dir).map_err(|e| format!("cannot be opened ({e})"))?;
        let payload = index
            .load_metas()
            .map_err(|e| format!("has unreadable metadata ({e})"))?
            .payload
            .unwrap_or_default();
        let read = |p: &Path| -> Result<Manifest, String> {
            let bytes = std::fs::read(p).map_err(|e| format!("has no readable manifest ({e})"))?;
            Manifest::from_bytes(&bytes).map_err(|e| format!("has a corrupt manifest ({e})"))
        };
        let mut manifest = if legacy {
            let bytes = std::fs::read(&legacy_path)
                .map_err(|e| format!("has no readable manifest ({e})"))?;
            serde_json::from_slice(&bytes).map_err(|e| format!("has a corrupt manifest ({e})"))?
        } else {
            read(&manifest_path)?
        };
        if manifest.generation.to_string() != payload {
            // A crash between the commit and the manifest rename leaves the next manifest.
            let next = rag_dir.manifest_next();
            let candidate = read(&next)
                .ok()
                .filter(|m| m.generation.to_string() == payload);
            match candidate {
                Some(m) => {
                    let _ = std::fs::rename(&next, &manifest_path);
                    manifest = m;
                }
                None => return Err("does not match its manifest (interrupted write)".into()),
            }
        }
        let expected = Manifest::empty(options);
        if manifest.format_version != expected.format_version {
            return Err(format!(
                "has format {} (this build writes {})",
                manifest.format_version, expected.format_version
            ));
        }
        if manifest.chunk_lines != options.chunk_lines || manifest.overlap != options.overlap {
            return Err(format!(
                "was chunked with {}/{} lines (configured {}/{})",
                manifest.chunk_lines, manifest.overlap, options.chunk_lines, options.overlap
            ));
        }
        let (schema, fields) = schema();
        if index.schema() != schema {
            return Err("has another schema".into());
        }
        let damaged = damaged_files(rag_dir, &index)
            .map_err(|e| format!("is damaged (cannot verify its files: {e})"))?;
        if !damaged.is_empty() {
            return Err(format!("has damaged files ({})", damaged.join(", ")));
        }
        let code_index = Self::wrap(rag_dir, index, fields).map_err(|e| e.to_string())?;
        if legacy {
            // Kept in the binary form from now on; should the write fail, the JSON form is
            // read again next time.
            if write_atomic(&manifest_path, &manifest.to_bytes()).is_ok() {
                let _ = std::fs::remove_file(&legacy_path);
            }
        }
        Ok(Some((code_index, manifest)))
    }

    fn create(rag_dir: &RagDir, options: ChunkOptions) -> Result<(CodeIndex, Manifest), RagError> {
        let dir = rag_dir.index_dir();
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| RagError::io(&dir, e))?;
        }
        for stale in [
            rag_dir.manifest(),
            rag_dir.manifest_next(),
            rag_dir.legacy_manifest(),
        ] {
            let _ = std::fs::remove_file(stale);
        }
        std::fs::create_dir_all(&dir).map_err(|e| RagError::io(&dir, e))?;
        let (schema, fields) = schema();
        let index = Index::create_in_dir(&dir, schema).map_err(|e| index_error(&dir, e))?;
        let code_index = Self::wrap(rag_dir, index, fields)?;
        let mut manifest = Manifest::empty(options);
        // An empty first commit ties generation 1 to an empty manifest.
        let mut writer = code_index.writer(0)?;
        code_index.commit(&mut writer, &mut manifest)?;
        Ok((code_index, manifest))
    }

    fn wrap(rag_dir: &RagDir, index: Index, fields: Fields) -> Result<CodeIndex, RagError> {
        let dir = rag_dir.index_dir();
        index
            .tokenizers()
            .register(tokenize::ANALYZER, tokenize::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| index_error(&dir, e))?;
        Ok(CodeIndex {
            rag_dir: rag_dir.clone(),
            index,
            reader,
            fields,
        })
    }

    /// A writer sized for `files` pending files: a few changed files do not need several
    /// indexing threads and their memory arenas.
    fn writer(&self, files: usize) -> Result<IndexWriter, RagError> {
        let threads = if files < 64 {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
        };
        // A large arena per thread means fewer, larger segments: every segment serialises its
        // own term dictionary, and the merge policy merges small segments again later.
        let per_thread = if files < 64 { 16_000_000 } else { 160_000_000 };
        let writer = self
            .index
            .writer_with_num_threads(threads, per_thread * threads)
            .map_err(|e| index_error(&self.rag_dir.index_dir(), e))?;
        // Merges run in [`CodeIndex::compact`], to their end: tantivy's own start after a
        // commit and are abandoned when the writer is dropped.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        Ok(writer)
    }

    /// Merges segments so that deleted chunks stop counting in BM25 statistics and the segment
    /// count stays bounded: every small segment holding deleted chunks, every large one whose
    /// deleted chunks reach [`DELETED_SHARE_BEFORE_MERGE`] of it, and all small segments once
    /// there are [`MAX_SMALL_SEGMENTS`] of them, become one. Returns the number of segments merged (0:
    /// nothing to do). Call with the index lock held, after a refresh; the commit (and the
    /// manifest tied to it) stays the same, only its segments change.
    pub fn compact(&self) -> Result<usize, RagError> {
        let dir = self.rag_dir.index_dir();
        let metas = self
            .index
            .searchable_segment_metas()
            .map_err(|e| index_error(&dir, e))?;
        let mut merged: Vec<SegmentId> = metas
            .iter()
            .filter(|m| {
                m.num_deleted_docs() > 0
                    && (m.max_doc() < SMALL_SEGMENT_CHUNKS
                        || m.num_deleted_docs() as f32
                            >= DELETED_SHARE_BEFORE_MERGE * m.max_doc() as f32)
            })
            .map(|m| m.id())
            .collect();
        let small: Vec<SegmentId> = metas
            .iter()
            .filter(|m| m.max_doc() < SMALL_SEGMENT_CHUNKS)
            .map(|m| m.id())
            .collect();
        if small.len() >= MAX_SMALL_SEGMENTS {
            for id in small {
                if !merged.contains(&id) {
                    merged.push(id);
                }
            }
        }
        if merged.is_empty() {
            return Ok(0);
        }
        let mut writer = self.writer(0)?;
        writer
            .merge(&merged)
            .wait()
            .map_err(|e| index_error(&dir, e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| index_error(&dir, e))?;
        self.reader.reload().map_err(|e| index_error(&dir, e))?;
        Ok(merged.len())
    }

    /// Commits `writer` as the next generation of `manifest` and persists the manifest
    /// alongside; `manifest.generation` is that of the commit afterwards (unchanged on error).
    fn commit(&self, writer: &mut IndexWriter, manifest: &mut Manifest) -> Result<(), RagError> {
        manifest.generation += 1;
        let committed = self.commit_generation(writer, manifest);
        if committed.is_err() {
            manifest.generation -= 1;
        }
        committed
    }

    fn commit_generation(&self, writer: &mut IndexWriter, next: &Manifest) -> Result<(), RagError> {
        let dir = self.rag_dir.index_dir();
        let next_path = self.rag_dir.manifest_next();
        write_atomic(&next_path, &next.to_bytes())?;
        let mut prepared = writer.prepare_commit().map_err(|e| index_error(&dir, e))?;
        prepared.set_payload(&next.generation.to_string());
        prepared.commit().map_err(|e| index_error(&dir, e))?;
        let manifest_path = self.rag_dir.manifest();
        std::fs::rename(&next_path, &manifest_path).map_err(|e| RagError::io(&manifest_path, e))?;
        self.reader.reload().map_err(|e| index_error(&dir, e))?;
        Ok(())
    }

    /// Brings the index up to date with `files`. When `checkpoint` passes, what is done so far
    /// is committed and `on_commit` runs, so a waiting query can answer from partial results;
    /// the refresh then carries on to the end. `manifest` is copied (from the readers sharing
    /// it) only when something changed; `files` are found under `repo`.
    // The repository, the committed manifest and the files found in it, then how to chunk,
    // when to commit part-way and whom to tell: each is a separate input of one refresh.
    #[allow(clippy::too_many_arguments)]
    pub fn refresh(
        &self,
        repo: &Path,
        manifest: &mut Arc<Manifest>,
        files: &[DiscoveredFile],
        options: ChunkOptions,
        mut checkpoint: Option<Instant>,
        mut on_commit: impl FnMut(&Manifest, bool),
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<RefreshCounts, RagError> {
        let mut counts = RefreshCounts::default();
        let (removed, pending) = changes(&manifest.files, files);
        counts.unchanged = files.len() - pending.len();
        counts.removed = removed.len();
        if pending.is_empty() && removed.is_empty() {
            on_commit(manifest, true);
            return Ok(counts);
        }
        // Copied only now, when something changes and a reader still holds the committed one.
        let manifest = Arc::make_mut(manifest);
        let mut writer: Option<IndexWriter> = None;
        let mut dirty = false;
        for path in &removed {
            let w = match writer.as_mut() {
                Some(w) => w,
                None => writer.insert(self.writer(pending.len())?),
            };
            w.delete_term(Term::from_field_text(self.fields.path, path));
            manifest.files.remove(path);
            dirty = true;
        }
        let total = pending.len();
        progress(0, total);
        for (batch_no, batch) in pending.chunks(BATCH_FILES).enumerate() {
            let processed: Vec<Processed> = batch
                .par_iter()
                .map(|f| {
                    let previous = manifest.files.get(&f.rel_path);
                    process_file(repo, f, previous, options, self.fields)
                })
                .collect();
            for p in processed {
                counts.bytes_read += p.record.size;
                match p.outcome {
                    Outcome::SameContent => {}
                    Outcome::Binary | Outcome::Chunked(_) => {
                        let w = match writer.as_mut() {
                            Some(w) => w,
                            None => writer.insert(self.writer(pending.len())?),
                        };
                        if p.existed {
                            w.delete_term(Term::from_field_text(self.fields.path, &p.path));
                            counts.changed += 1;
                        } else {
                            counts.added += 1;
                        }
                        if let Outcome::Chunked(docs) = p.outcome {
                            counts.chunked += 1;
                            counts.new_chunks += docs.len().saturating_sub(1);
                            for d in docs {
                                w.add_document(d)
                                    .map_err(|e| index_error(&self.rag_dir.index_dir(), e))?;
                            }
                        } else {
                            counts.skipped_binary += 1;
                        }
                        dirty = true;
                    }
                }
                manifest.files.insert(p.path, p.record);
            }
            progress(((batch_no + 1) * BATCH_FILES).min(total), total);
            if let (Some(at), Some(w)) = (checkpoint, writer.as_mut())
                && Instant::now() >= at
                && dirty
            {
                self.commit(w, manifest)?;
                counts.commits += 1;
                dirty = false;
                checkpoint = None;
                on_commit(manifest, false);
            }
        }
        match writer.as_mut() {
            Some(w) if dirty || counts.commits == 0 => {
                self.commit(w, manifest)?;
                counts.commits += 1;
            }
            _ => {
                // Only mtimes moved: record them against the current commit.
                self.save_manifest(manifest)?;
            }
        }
        on_commit(manifest, true);
        Ok(counts)
    }

    /// The manifest on disk when another process committed since `manifest` was read (the
    /// reader then moves to that commit too). Call with the index lock held.
    pub fn newer_manifest(&self, manifest: &Manifest) -> Result<Option<Manifest>, RagError> {
        // The committed generation is the payload of tantivy's small meta.json: the manifest (a
        // few MB on a large tree) is read and parsed only when another process committed.
        let committed = self
            .index
            .load_metas()
            .ok()
            .and_then(|metas| metas.payload)
            .and_then(|payload| payload.parse::<u64>().ok());
        if committed == Some(manifest.generation) {
            return Ok(None);
        }
        let path = self.rag_dir.manifest();
        let Ok(bytes) = std::fs::read(&path) else {
            return Ok(None);
        };
        let Ok(disk) = Manifest::from_bytes(&bytes) else {
            return Ok(None);
        };
        if disk.generation == manifest.generation {
            return Ok(None);
        }
        self.reader
            .reload()
            .map_err(|e| index_error(&self.rag_dir.index_dir(), e))?;
        Ok(Some(disk))
    }

    fn save_manifest(&self, manifest: &Manifest) -> Result<(), RagError> {
        write_atomic(&self.rag_dir.manifest(), &manifest.to_bytes())
    }

    /// Number of chunks searchable now.
    pub fn num_chunks(&self) -> usize {
        let searcher = self.reader.searcher();
        let files = searcher.search(&self.file_docs(), &Count).unwrap_or(0);
        (searcher.num_docs() as usize).saturating_sub(files)
    }

    fn file_docs(&self) -> TermQuery {
        TermQuery::new(
            Term::from_field_text(self.fields.kind, FILE_DOC),
            IndexRecordOption::Basic,
        )
    }

    /// BM25 statistics of one collection of the index: chunks or whole files.
    fn statistics<'a>(&self, searcher: &'a Searcher, files: bool) -> Collection<'a> {
        let all: u64 = searcher
            .segment_readers()
            .iter()
            .map(|s| u64::from(s.max_doc()))
            .sum();
        let file_docs = searcher
            .doc_freq(&Term::from_field_text(self.fields.kind, FILE_DOC))
            .unwrap_or(0);
        Collection {
            searcher,
            docs: if files { file_docs } else { all - file_docs }.max(1),
        }
    }

    /// BM25 search: every query term, boosted by its weight, against chunk bodies, symbol names
    /// (boosted by `symbol_boost`) and path components (`path_boost`). A non-empty `only_paths`
    /// restricts it to those files.
    pub fn search(
        &self,
        terms: &[QueryTerm],
        symbol_boost: f32,
        path_boost: f32,
        limit: usize,
        only_paths: &[&str],
    ) -> Result<Vec<IndexedChunk>, RagError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in terms {
            let mut per_field = |field: Field, boost: f32| {
                let boost = boost * term.weight;
                if boost <= 0.0 {
                    return;
                }
                let q = term_query(field, &term.text, IndexRecordOption::WithFreqs);
                let q: Box<dyn Query> = if (boost - 1.0).abs() < f32::EPSILON {
                    q
                } else {
                    Box::new(BoostQuery::new(q, boost))
                };
                clauses.push((Occur::Should, q));
            };
            per_field(self.fields.body, 1.0);
            per_field(self.fields.symbols, symbol_boost);
            per_field(self.fields.path_terms, path_boost);
        }
        let terms_query: Box<dyn Query> = Box::new(BooleanQuery::new(clauses));
        let query: Box<dyn Query> = if only_paths.is_empty() {
            terms_query
        } else {
            let paths: Vec<(Occur, Box<dyn Query>)> = only_paths
                .iter()
                .map(|p| {
                    let q = term_query(self.fields.path, p, IndexRecordOption::Basic);
                    (Occur::Should, q)
                })
                .collect();
            Box::new(BooleanQuery::new(vec![
                (
                    Occur::Must,
                    Box::new(BooleanQuery::new(paths)) as Box<dyn Query>,
                ),
                (Occur::Must, terms_query),
            ]))
        };
        Ok(self
            .best_docs(query.as_ref(), limit, false)?
            .into_iter()
            .map(|(score, doc)| self.to_chunk(&doc, score))
            .collect())
    }

    /// The `limit` best documents for `query` with their scores, scored with the statistics of
    /// whole files (`files`) or of chunks.
    fn best_docs(
        &self,
        query: &dyn Query,
        limit: usize,
        files: bool,
    ) -> Result<Vec<(f32, TantivyDocument)>, RagError> {
        let searcher = self.reader.searcher();
        let dir = self.rag_dir.index_dir();
        let hits = searcher
            .search_with_statistics_provider(
                query,
                &TopDocs::with_limit(limit).order_by_score(),
                &self.statistics(&searcher, files),
            )
            .map_err(|e| index_error(&dir, e))?;
        hits.into_iter()
            .map(|(score, address)| {
                let doc = searcher.doc(address).map_err(|e| index_error(&dir, e))?;
                Ok((score, doc))
            })
            .collect()
    }

    /// BM25 search over whole files: every query term, boosted by its weight, against each
    /// file's path words and text. The `limit` best files, best first.
    pub fn search_files(
        &self,
        terms: &[QueryTerm],
        limit: usize,
    ) -> Result<Vec<FileHit>, RagError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .filter(|t| t.weight > 0.0)
            .map(|t| {
                let q = term_query(self.fields.file_body, &t.text, IndexRecordOption::WithFreqs);
                (
                    Occur::Should,
                    Box::new(BoostQuery::new(q, t.weight)) as Box<dyn Query>,
                )
            })
            .collect();
        Ok(self
            .best_docs(&BooleanQuery::new(clauses), limit, true)?
            .into_iter()
            .map(|(score, doc)| {
                let path = doc
                    .get_first(self.fields.path)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                let chunks = doc
                    .get_first(self.fields.file_chunks)
                    .and_then(|v| v.as_u64())
                    .unwrap_or(1) as usize;
                FileHit {
                    path,
                    bm25: score,
                    chunks,
                }
            })
            .collect())
    }

    /// Every chunk of one file, in line order.
    pub fn chunks_of(&self, path: &str) -> Result<Vec<IndexedChunk>, RagError> {
        let searcher = self.reader.searcher();
        let dir = self.rag_dir.index_dir();
        let query = TermQuery::new(
            Term::from_field_text(self.fields.path, path),
            IndexRecordOption::Basic,
        );
        let hits = searcher
            .search(&query, &TopDocs::with_limit(10_000).order_by_score())
            .map_err(|e| index_error(&dir, e))?;
        let mut out = self.stored(&searcher, hits)?;
        out.sort_by_key(|c| c.start_line);
        Ok(out)
    }

    /// The chunks whose symbols hold every word of `name` (`get` finds the chunks defining
    /// `get` and those defining `get_user`), or `None`, reading nothing, when there are more
    /// than `limit`.
    pub fn chunks_with_symbol_words(
        &self,
        name: &str,
        limit: usize,
    ) -> Result<Option<Vec<IndexedChunk>>, RagError> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = tokenize::query_terms(name)
            .iter()
            .map(|t| {
                let q = term_query(self.fields.symbols, t, IndexRecordOption::Basic);
                (Occur::Must, q)
            })
            .collect();
        if clauses.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let searcher = self.reader.searcher();
        let dir = self.rag_dir.index_dir();
        let (count, hits) = searcher
            .search(
                &BooleanQuery::new(clauses),
                &(Count, TopDocs::with_limit(limit.max(1)).order_by_score()),
            )
            .map_err(|e| index_error(&dir, e))?;
        if count > limit {
            return Ok(None);
        }
        let mut out = self.stored(&searcher, hits)?;
        out.sort_by(|a, b| (&a.path, a.start_line).cmp(&(&b.path, b.start_line)));
        Ok(Some(out))
    }

    /// The stored chunks of search `hits` (whole-file documents left out), unscored.
    fn stored(
        &self,
        searcher: &tantivy::Searcher,
        hits: Vec<(tantivy::Score, tantivy::DocAddress)>,
    ) -> Result<Vec<IndexedChunk>, RagError> {
        let dir = self.rag_dir.index_dir();
        let mut out = Vec::with_capacity(hits.len());
        for (_, address) in hits {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| index_error(&dir, e))?;
            if !self.is_file_doc(&doc) {
                out.push(self.to_chunk(&doc, 0.0));
            }
        }
        Ok(out)
    }

    /// Calls `visit` for every chunk in the index (background embedding finds missing vectors
    /// this way).
    pub fn for_each_chunk(
        &self,
        mut visit: impl FnMut(IndexedChunk) -> bool,
    ) -> Result<(), RagError> {
        let searcher = self.reader.searcher();
        let dir = self.rag_dir.index_dir();
        for segment in searcher.segment_readers() {
            let store = segment
                .get_store_reader(64)
                .map_err(|e| index_error(&dir, e))?;
            let alive = segment.alive_bitset();
            for doc_id in 0..segment.max_doc() {
                if alive.is_some_and(|a| !a.is_alive(doc_id)) {
                    continue;
                }
                let doc: TantivyDocument = store.get(doc_id).map_err(|e| index_error(&dir, e))?;
                if self.is_file_doc(&doc) {
                    continue;
                }
                if !visit(self.to_chunk(&doc, 0.0)) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn is_file_doc(&self, doc: &TantivyDocument) -> bool {
        doc.get_first(self.fields.kind).and_then(|v| v.as_str()) == Some(FILE_DOC)
    }

    fn to_chunk(&self, doc: &TantivyDocument, bm25: f32) -> IndexedChunk {
        let f = self.fields;
        let text = |field: Field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let number =
            |field: Field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
        let lines = |s: String| -> Vec<String> {
            s.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut hash = [0u8; 16];
        if let Some(bytes) = doc.get_first(f.hash).and_then(|v| v.as_bytes())
            && bytes.len() == 16
        {
            hash.copy_from_slice(bytes);
        }
        IndexedChunk {
            path: text(f.path),
            start_line: number(f.start_line),
            end_line: number(f.end_line),
            language: text(f.language),
            tags: lines(text(f.tags)),
            symbols: lines(text(f.symbols)),
            text: text(f.body),
            hash,
            bm25,
            content_kind: match doc.get_first(f.content_kind).and_then(|v| v.as_str()) {
                Some("generated") => Some(FileKind::Generated),
                Some("test") => Some(FileKind::Test),
                _ => None,
            },
        }
    }
}

/// Size and mtime (ns) of a file, as recorded when its checksum passed.
type FileStamp = (u64, u64);

/// The files of `index`'s committed segments that are missing or whose CRC32 footer does not
/// match their content, sorted. Every segment file carries one: damage from outside (a disk
/// error, a stray write, a deleted file) shows here, before a search or a commit trips over it.
/// Segment files are written once and never modified, so a file is checked only when its size
/// or mtime differs from when it last passed (recorded in [`RagDir::index_verified`]): opening
/// an unchanged index of a large repository reads none of its segment data.
fn damaged_files(rag_dir: &RagDir, index: &Index) -> Result<Vec<String>, String> {
    let metas = index.load_metas().map_err(|e| e.to_string())?;
    let segments: HashSet<String> = metas
        .segments
        .iter()
        .map(|m| m.id().uuid_string())
        .collect();
    let dir = rag_dir.index_dir();
    let mut damaged: Vec<String> = metas
        .segments
        .iter()
        .flat_map(segment_files)
        .filter(|file| !dir.join(file).exists())
        .map(|file| format!("{} (missing)", file.display()))
        .collect();
    let record = rag_dir.index_verified();
    let passed: BTreeMap<String, FileStamp> = std::fs::read(&record)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut now = BTreeMap::new();
    for path in index.directory().list_managed_files() {
        let Some(name) = path.to_str() else { continue };
        if !name
            .split('.')
            .next()
            .is_some_and(|segment| segments.contains(segment))
        {
            continue;
        }
        // A managed file that is gone belongs to no committed segment any more.
        let Ok(meta) = std::fs::metadata(dir.join(&path)) else {
            continue;
        };
        let stamp: FileStamp = (meta.len(), mtime_ns(&meta));
        if passed.get(name) != Some(&stamp) {
            let intact = index
                .directory()
                .validate_checksum(&path)
                .map_err(|e| e.to_string())?;
            if !intact {
                damaged.push(name.to_string());
                continue;
            }
        }
        now.insert(name.to_string(), stamp);
    }
    if now != passed
        && let Ok(bytes) = serde_json::to_vec(&now)
    {
        // Only a cache: without it the next open checks every file again.
        let _ = write_atomic(&record, &bytes);
    }
    damaged.sort();
    Ok(damaged)
}

/// The files a committed segment cannot be read without: every component tantivy writes for
/// this schema, and its deletes when it has some.
fn segment_files(segment: &tantivy::index::SegmentMeta) -> Vec<std::path::PathBuf> {
    use tantivy::index::SegmentComponent;
    let mut components = vec![
        SegmentComponent::Postings,
        SegmentComponent::Positions,
        SegmentComponent::Terms,
        SegmentComponent::Store,
        SegmentComponent::FastFields,
        SegmentComponent::FieldNorms,
    ];
    if segment.delete_opstamp().is_some() {
        components.push(SegmentComponent::Delete);
    }
    components
        .into_iter()
        .map(|c| segment.relative_path(c))
        .collect()
}

fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Logs and records why the index in `rag_dir` is rebuilt.
fn rebuilding(rag_dir: &RagDir, reason: &str, warnings: &mut Vec<String>) {
    let warning = format!(
        "retrieval index in {} {reason}; rebuilding it",
        rag_dir.path().display()
    );
    tracing::warn!("{warning}");
    warnings.push(warning);
}

fn index_error(path: &Path, e: impl std::fmt::Display) -> RagError {
    RagError::Index {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

enum Outcome {
    SameContent,
    Binary,
    Chunked(Vec<TantivyDocument>),
}

struct Processed {
    path: String,
    existed: bool,
    record: FileRecord,
    outcome: Outcome,
}

/// What differs between the manifest and the files found now: the manifest's paths no longer
/// found, and the files that are new or whose size or mtime moved. Both sides are walked once
/// in path order (a merge, no lookups).
fn changes<'f>(
    known: &BTreeMap<String, FileRecord>,
    files: &'f [DiscoveredFile],
) -> (Vec<String>, Vec<&'f DiscoveredFile>) {
    let mut sorted: Vec<&DiscoveredFile> = files.iter().collect();
    if !sorted.is_sorted_by(|a, b| a.rel_path <= b.rel_path) {
        sorted.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    }
    let mut removed = Vec::new();
    let mut pending = Vec::new();
    let mut known = known.iter().peekable();
    for file in sorted {
        while let Some((path, _)) = known.next_if(|(path, _)| **path < file.rel_path) {
            removed.push(path.clone());
        }
        match known.next_if(|(path, _)| **path == file.rel_path) {
            Some((_, r)) if r.size == file.size && r.mtime_ns == file.mtime_ns => {}
            _ => pending.push(file),
        }
    }
    removed.extend(known.map(|(path, _)| path.clone()));
    (removed, pending)
}

fn process_file(
    repo: &Path,
    file: &DiscoveredFile,
    previous: Option<&FileRecord>,
    options: ChunkOptions,
    fields: Fields,
) -> Processed {
    // A file that vanished or cannot be read indexes as empty; the next refresh retries it.
    let bytes = std::fs::read(repo.join(&file.rel_path)).unwrap_or_default();
    let hash = content_hash(&bytes);
    let mut record = FileRecord {
        size: file.size,
        mtime_ns: file.mtime_ns,
        hash,
        chunks: 0,
    };
    let existed = previous.is_some();
    if let Some(prev) = previous
        && prev.hash == record.hash
    {
        record.chunks = prev.chunks;
        return Processed {
            path: file.rel_path.clone(),
            existed,
            record,
            outcome: Outcome::SameContent,
        };
    }
    if looks_binary(&bytes) {
        return Processed {
            path: file.rel_path.clone(),
            existed,
            record,
            outcome: Outcome::Binary,
        };
    }
    let text = String::from_utf8_lossy(&bytes);
    let chunks = chunk_file(&file.rel_path, &text, options);
    record.chunks = chunks.len() as u32;
    let path_terms = file.rel_path.replace(['/', '.', '-'], " ");
    let generated = kind::content_kind(&file.rel_path, &text) == Some(FileKind::Generated);
    let mut docs: Vec<TantivyDocument> = Vec::with_capacity(chunks.len() + 1);
    if !chunks.is_empty() {
        docs.push(doc!(
            fields.path => file.rel_path.as_str(),
            fields.kind => FILE_DOC,
            fields.file_body => format!("{path_terms}\n{text}"),
            fields.file_chunks => chunks.len() as u64,
        ));
    }
    docs.extend(chunks.into_iter().map(|c| {
        let hash = tagged_hash(&c.tags, &c.text);
        let content_kind = if generated {
            "generated"
        } else if kind::is_test_chunk(&c) {
            "test"
        } else {
            ""
        };
        doc!(
            fields.content_kind => content_kind,
            fields.path => file.rel_path.as_str(),
            fields.path_terms => path_terms.as_str(),
            fields.symbols => c.symbols.join("\n"),
            fields.tags => c.tags.join("\n"),
            fields.body => c.text,
            fields.start_line => c.start_line as u64,
            fields.end_line => c.end_line as u64,
            fields.language => c.language.name(),
            fields.hash => hash.to_vec(),
        )
    }));
    Processed {
        path: file.rel_path.clone(),
        existed,
        record,
        outcome: Outcome::Chunked(docs),
    }
}

/// BM25 statistics over one collection of the index (chunks, or whole files): its own document
/// count, so that neither collection's lengths and frequencies skew the other's scores.
struct Collection<'a> {
    searcher: &'a Searcher,
    docs: u64,
}

impl Bm25StatisticsProvider for Collection<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.searcher.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searcher.doc_freq(term)
    }
}

/// A query for one term of one field.
fn term_query(field: Field, text: &str, record: IndexRecordOption) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(field, text), record))
}
