//! Embeddings: all-MiniLM-L6-v2 through fastembed on ONNX Runtime, loaded offline from a model
//! directory (`model.onnx` + tokenizer files) with the runtime library loaded dynamically, and
//! the on-disk vector cache `.rag/vectors.bin` keyed by chunk content hash. Vectors for chunks
//! are computed in the background after indexing; at query time only the query is embedded.
//! A user-defined fastembed model defaults to CLS pooling, wrong for this model: mean pooling and
//! the token window ([`RagConfig::embed_max_tokens`]) are set explicitly.
//!
//! Throughput comes from three things: texts are embedded shortest first so a batch pads to
//! little more than its own length, a text is cut to what the window can see before it is
//! tokenized, and ONNX Runtime runs one thread per core without spinning between calls. The
//! cache is keyed by [`model_key`] (model bytes and window), which is computed without loading
//! the runtime, so a caller can tell whether cached vectors exist before paying for a model
//! load.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};

use fastembed::{
    InitOptionsUserDefined, Pooling, QuantizationMode, TextEmbedding, TokenizerFiles,
    UserDefinedEmbeddingModel,
};

use super::config::RagConfig;
use super::error::RagError;
use super::hash::ContentHash;
use super::static_model::{MODEL_FILE as STATIC_MODEL_FILE, StaticModel};
use super::store::RagDir;

/// The transformer's directory name under `$PROMPTD_DEPS_DIR/models/`, looked for first: on the
/// history benchmark it ranks as well as the lexical default, the static model below it.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// The static model's directory name under `$PROMPTD_DEPS_DIR/models/`: used when the
/// transformer is not installed, or when `modelDir` names it (far faster, with lower ranking quality).
pub const STATIC_MODEL_NAME: &str = "wordllama-l2-256";
/// The dimension of [`STATIC_MODEL_NAME`]'s vectors.
pub const STATIC_MODEL_DIM: usize = 256;
/// all-MiniLM-L6-v2 sees at most 256 word pieces.
pub const MODEL_MAX_TOKENS: usize = 256;
/// Tokens a static model pools of each text: it has no window, this bounds the work per text.
pub const STATIC_MAX_TOKENS: usize = 512;
/// Texts a static model embeds per hold in the background: a turn takes a few milliseconds.
const STATIC_BACKGROUND_TURN: usize = 64;
/// The model file of a transformer model directory.
const ONNX_FILE: &str = "model.onnx";
/// Bytes of text kept per token of the window before tokenizing: word pieces of source code
/// average about 3 bytes and indentation (not a token) rarely doubles that, so the cut does not
/// shorten what the model sees; it only spares the tokenizer the rest of a long chunk.
const BYTES_PER_TOKEN: usize = 16;
/// Texts background embedding runs per hold of the model: what a query may have to wait for.
/// Small enough that a turn takes tens of milliseconds on two cores; large enough that a turn's
/// matrix products still fill them.
pub const BACKGROUND_TURN: usize = 4;
const CACHE_MAGIC: &[u8; 8] = b"PRDVEC01";
/// Magic, model id, dimension.
const HEADER_LEN: usize = 8 + 16 + 4;

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    Dir(PathBuf),
    Hub(String),
}

/// Finds the model: configured directory, `PROMPTD_EMBED_MODEL_DIR`, the transformer
/// `$PROMPTD_DEPS_DIR/models/all-MiniLM-L6-v2`, the static model
/// `$PROMPTD_DEPS_DIR/models/wordllama-l2-256`, then a configured hub model.
pub fn locate_model(config: &RagConfig) -> Option<ModelSource> {
    let env_dir = std::env::var_os("PROMPTD_EMBED_MODEL_DIR").map(PathBuf::from);
    let installed = || {
        let models = PathBuf::from(std::env::var_os("PROMPTD_DEPS_DIR")?).join("models");
        [DEFAULT_MODEL_NAME, STATIC_MODEL_NAME]
            .into_iter()
            .map(|name| models.join(name))
            .find(|dir| ModelKind::of_dir(dir).is_some())
    };
    config
        .model_dir
        .clone()
        .or(env_dir)
        .or_else(installed)
        .map(ModelSource::Dir)
        .or_else(|| config.hub_model.clone().map(ModelSource::Hub))
}

/// Finds the ONNX Runtime library: configured path, `ORT_DYLIB_PATH`,
/// `$PROMPTD_DEPS_DIR/onnxruntime/libonnxruntime.so`.
pub fn locate_runtime(config: &RagConfig) -> Option<PathBuf> {
    config
        .ort_dylib_path
        .clone()
        .or_else(|| std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from))
        .or_else(|| {
            std::env::var_os("PROMPTD_DEPS_DIR").map(|d| {
                PathBuf::from(d)
                    .join("onnxruntime")
                    .join("libonnxruntime.so")
            })
        })
        .filter(|p| p.is_file())
}

/// The key vectors of the model `config` names are cached under: a hash of the model's bytes
/// and the token window (vectors of another window differ). Reads the model file but loads no
/// runtime; `None` when no model is found.
pub fn model_key(config: &RagConfig) -> Option<ContentHash> {
    match locate_model(config)? {
        ModelSource::Dir(dir) => {
            let kind = ModelKind::of_dir(&dir)?;
            let file = File::open(dir.join(kind.file())).ok()?;
            let mut hasher = blake3::Hasher::new();
            hasher.update_reader(file).ok()?;
            hasher.update(&RunOptions::for_kind(config, kind).max_tokens.to_le_bytes());
            Some(truncate_hash(hasher.finalize()))
        }
        ModelSource::Hub(name) => {
            let mut hasher = blake3::Hasher::new();
            hasher.update(b"hub:");
            hasher.update(name.as_bytes());
            hasher.update(&RunOptions::of(config).max_tokens.to_le_bytes());
            Some(truncate_hash(hasher.finalize()))
        }
    }
}

fn truncate_hash(hash: blake3::Hash) -> ContentHash {
    let mut out = [0u8; 16];
    out.copy_from_slice(&hash.as_bytes()[..16]);
    out
}

/// Loads ONNX Runtime once per process. ort panics when it cannot find the library on first
/// use, so the library is loaded explicitly and a failure becomes an error.
fn init_runtime(path: &Path) -> Result<(), RagError> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            ort::init_from(path)
                .map(|_| ())
                .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", path.display()))
        })
        .clone()
        .map_err(RagError::Embed)
}

/// How a model runs: its token window and the ONNX Runtime threads of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Word pieces the model sees of each text (at most [`MODEL_MAX_TOKENS`]).
    pub max_tokens: usize,
    pub threads: usize,
}

impl RunOptions {
    /// The options `config` asks for: its window (capped at [`MODEL_MAX_TOKENS`]) and threads,
    /// one per core unless set.
    pub fn of(config: &RagConfig) -> RunOptions {
        RunOptions {
            max_tokens: config.embed_max_tokens.clamp(1, MODEL_MAX_TOKENS),
            threads: config
                .embed_threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        }
    }

    /// The options for a model of `kind`: a static model pools up to [`STATIC_MAX_TOKENS`]
    /// tokens whatever the configured window (which bounds a transformer's cost).
    pub fn for_kind(config: &RagConfig, kind: ModelKind) -> RunOptions {
        let options = RunOptions::of(config);
        match kind {
            ModelKind::Onnx => options,
            ModelKind::Static => RunOptions {
                max_tokens: STATIC_MAX_TOKENS,
                ..options
            },
        }
    }
}

/// ONNX Runtime session entries: intra-op threads sleep rather than spin between the calls of a
/// batch run (a spinning thread takes a core from the queries served meanwhile).
fn session_config() -> Vec<(String, String)> {
    vec![
        ("session.intra_op.allow_spinning".into(), "0".into()),
        ("session.inter_op.allow_spinning".into(), "0".into()),
    ]
}

/// What computes the vectors.
enum Engine {
    /// A transformer on ONNX Runtime. fastembed needs `&mut` to run, so calls serialise.
    Onnx(Mutex<TextEmbedding>),
    /// A token table ([`StaticModel`]): no runtime, calls run side by side.
    Static(StaticModel),
}

/// The kind of model a directory holds: `model.onnx` (a transformer) or `model.safetensors`
/// (a static model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    Onnx,
    Static,
}

impl ModelKind {
    /// The kind of the model in `dir`, by its model file; `None` when it has neither.
    pub fn of_dir(dir: &Path) -> Option<ModelKind> {
        if dir.join(ONNX_FILE).is_file() {
            Some(ModelKind::Onnx)
        } else if dir.join(STATIC_MODEL_FILE).is_file() {
            Some(ModelKind::Static)
        } else {
            None
        }
    }

    fn file(self) -> &'static str {
        match self {
            ModelKind::Onnx => ONNX_FILE,
            ModelKind::Static => STATIC_MODEL_FILE,
        }
    }
}

fn no_model() -> RagError {
    RagError::Embed(
        "no model found (set PROMPTD_EMBED_MODEL_DIR or run scripts/setup-model)".into(),
    )
}

/// A loaded sentence-embedding model.
pub struct Embedder {
    engine: Engine,
    /// Identifies the model and window in the vector cache so vectors from another model are
    /// never mixed ([`model_key`]).
    pub model_id: ContentHash,
    pub source: ModelSource,
    /// Longest text (bytes) handed to the tokenizer: the rest could not be seen anyway.
    max_text_bytes: usize,
    /// Queries waiting for the model: background batches hold back while any does.
    queries_waiting: AtomicUsize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("source", &self.source)
            .finish()
    }
}

/// The models this process has loaded, by source and run options: every repository that uses
/// the same model shares one copy, released when the last retriever holding it closes.
static LOADED: Mutex<Vec<(ModelSource, RunOptions, Weak<Embedder>)>> = Mutex::new(Vec::new());

impl Embedder {
    /// The model named by the configuration and environment: the copy already loaded for the
    /// same source and run options when one is still in use, else a new load.
    pub fn shared(config: &RagConfig) -> Result<Arc<Embedder>, RagError> {
        let source = locate_model(config).ok_or_else(no_model)?;
        let options = RunOptions::of(config);
        // Held while loading: two repositories asking at once load the model once.
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.retain(|(_, _, e)| e.strong_count() > 0);
        let found = loaded
            .iter()
            .find(|(s, o, _)| *s == source && *o == options)
            .and_then(|(_, _, e)| e.upgrade());
        if let Some(embedder) = found {
            return Ok(embedder);
        }
        let embedder = Arc::new(Embedder::load(config)?);
        loaded.push((source, options, Arc::downgrade(&embedder)));
        Ok(embedder)
    }

    /// Loads the model named by the configuration and environment.
    pub fn load(config: &RagConfig) -> Result<Embedder, RagError> {
        let source = locate_model(config).ok_or_else(no_model)?;
        let embedder = match &source {
            ModelSource::Dir(dir) => {
                let kind = ModelKind::of_dir(dir).ok_or_else(|| no_model_file(dir))?;
                if kind == ModelKind::Onnx {
                    let runtime = locate_runtime(config).ok_or_else(|| {
                        RagError::Embed(
                            "ONNX Runtime library not found (set ORT_DYLIB_PATH or run scripts/setup-model)"
                                .into(),
                        )
                    })?;
                    init_runtime(&runtime)?;
                }
                Self::from_dir(dir, RunOptions::for_kind(config, kind))
            }
            ModelSource::Hub(name) => Self::from_hub(name, config, RunOptions::of(config)),
        }?;
        tracing::debug!(source = ?embedder.source, "embedding model loaded");
        Ok(embedder)
    }

    /// Loads the model in `dir`: `model.onnx` and its tokenizer files (ONNX Runtime must be
    /// loaded), or a static model's `model.safetensors` and `tokenizer.json`.
    pub fn from_dir(dir: &Path, options: RunOptions) -> Result<Embedder, RagError> {
        let kind = ModelKind::of_dir(dir).ok_or_else(|| no_model_file(dir))?;
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| RagError::Embed(format!("{}: {e}", path.display())))
        };
        if kind == ModelKind::Static {
            let mut hasher = blake3::Hasher::new();
            hasher.update(&read(STATIC_MODEL_FILE)?);
            hasher.update(&options.max_tokens.to_le_bytes());
            return Ok(Embedder {
                engine: Engine::Static(StaticModel::from_dir(dir, options.max_tokens)?),
                model_id: truncate_hash(hasher.finalize()),
                source: ModelSource::Dir(dir.to_path_buf()),
                max_text_bytes: options.max_tokens * BYTES_PER_TOKEN,
                queries_waiting: AtomicUsize::new(0),
            });
        }
        let onnx = read(ONNX_FILE)?;
        let mut hasher = blake3::Hasher::new();
        hasher.update(&onnx);
        hasher.update(&options.max_tokens.to_le_bytes());
        let model_id = truncate_hash(hasher.finalize());
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let user_model = UserDefinedEmbeddingModel::new(onnx, tokenizer_files)
            .with_pooling(Pooling::Mean)
            .with_quantization(QuantizationMode::None);
        let mut init = InitOptionsUserDefined::new()
            .with_max_length(options.max_tokens)
            .with_intra_threads(options.threads);
        init.session_config = session_config();
        let model = TextEmbedding::try_new_from_user_defined(user_model, init)
            .map_err(|e| RagError::Embed(format!("{}: {e}", dir.display())))?;
        Ok(Embedder {
            engine: Engine::Onnx(Mutex::new(model)),
            model_id,
            source: ModelSource::Dir(dir.to_path_buf()),
            max_text_bytes: options.max_tokens * BYTES_PER_TOKEN,
            queries_waiting: AtomicUsize::new(0),
        })
    }

    #[cfg(feature = "embed-hub")]
    fn from_hub(name: &str, config: &RagConfig, options: RunOptions) -> Result<Embedder, RagError> {
        use std::str::FromStr;
        let model_name = fastembed::EmbeddingModel::from_str(name)
            .map_err(|e| RagError::Config(format!("hubModel {name:?}: {e}")))?;
        let mut init = fastembed::TextInitOptions::new(model_name)
            .with_max_length(options.max_tokens)
            .with_intra_threads(options.threads)
            .with_show_download_progress(false);
        init.session_config = session_config();
        if let Some(dir) = &config.hub_cache_dir {
            init = init.with_cache_dir(dir.clone());
        }
        let model = TextEmbedding::try_new(init)
            .map_err(|e| RagError::Embed(format!("hub model {name}: {e}")))?;
        Ok(Embedder {
            engine: Engine::Onnx(Mutex::new(model)),
            model_id: model_key(config).unwrap_or_default(),
            source: ModelSource::Hub(name.to_string()),
            max_text_bytes: options.max_tokens * BYTES_PER_TOKEN,
            queries_waiting: AtomicUsize::new(0),
        })
    }

    #[cfg(not(feature = "embed-hub"))]
    fn from_hub(
        name: &str,
        _config: &RagConfig,
        _options: RunOptions,
    ) -> Result<Embedder, RagError> {
        Err(RagError::Embed(format!(
            "hub model {name} requested but promptd was built without the `embed-hub` feature"
        )))
    }

    /// Unit-length vectors for `texts`, in their order. Texts are cut to what the window can
    /// see and run shortest first, `batch` at a time, so each batch pads to nearly its own
    /// length.
    pub fn embed(&self, texts: &[&str], batch: usize) -> Result<Vec<Vec<f32>>, RagError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let cut: Vec<&str> = order
            .iter()
            .map(|&i| head(texts[i], self.max_text_bytes))
            .collect();
        let vectors = match &self.engine {
            Engine::Onnx(model) => {
                let mut model = model
                    .lock()
                    .map_err(|_| RagError::Embed("model lock poisoned".into()))?;
                model
                    .embed(&cut, Some(batch.max(1)))
                    .map_err(|e| RagError::Embed(e.to_string()))?
            }
            Engine::Static(model) => {
                use rayon::prelude::*;
                cut.par_iter()
                    .map(|t| model.embed(t))
                    .collect::<Result<Vec<_>, _>>()?
            }
        };
        let mut out = vec![Vec::new(); texts.len()];
        for (i, v) in order.into_iter().zip(vectors) {
            out[i] = normalize(v);
        }
        Ok(out)
    }

    /// The query vector. Takes the model before any background batch not yet started.
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>, RagError> {
        self.queries_waiting.fetch_add(1, Ordering::SeqCst);
        let vector = self.embed(&[query], 1);
        self.queries_waiting.fetch_sub(1, Ordering::SeqCst);
        vector?
            .pop()
            .ok_or_else(|| RagError::Embed("model returned no vector".into()))
    }

    /// [`Embedder::embed`] for background work: runs [`BACKGROUND_TURN`] texts at a time and
    /// waits before each turn while a query waits for the model, so a query waits for at most
    /// one turn, not a whole batch.
    pub fn embed_in_background(
        &self,
        texts: &[&str],
        batch: usize,
    ) -> Result<Vec<Vec<f32>>, RagError> {
        let mut out = Vec::with_capacity(texts.len());
        let turn_len = match self.engine {
            Engine::Onnx(_) => BACKGROUND_TURN,
            Engine::Static(_) => STATIC_BACKGROUND_TURN,
        };
        for turn in texts.chunks(turn_len) {
            while self.queries_waiting.load(Ordering::SeqCst) > 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            out.extend(self.embed(turn, batch)?);
        }
        Ok(out)
    }
}

fn no_model_file(dir: &Path) -> RagError {
    RagError::Embed(format!(
        "{}: no model file: expected {ONNX_FILE} (a transformer) or {STATIC_MODEL_FILE} (a static model)",
        dir.display()
    ))
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Chunk vectors on disk: a header (magic, model id, dimension) then append-only records of
/// `hash ‖ dim × f32`. A torn last record (crash mid-append) is dropped on load; a header for
/// another model discards the file.
pub struct VectorCache {
    path: PathBuf,
    vectors: RwLock<HashMap<ContentHash, Vec<f32>>>,
    /// Read-write handle, locked (see [`super::store`]) while appending.
    file: Mutex<Option<File>>,
    header: OnceLock<(ContentHash, usize)>,
}

impl VectorCache {
    /// Opens the cache in the `.rag/` folder at `rag_dir` (loaded lazily when a model id is
    /// known).
    pub fn new(rag_dir: &Path) -> VectorCache {
        VectorCache {
            path: RagDir::at(rag_dir).vectors(),
            vectors: RwLock::new(HashMap::new()),
            file: Mutex::new(None),
            header: OnceLock::new(),
        }
    }

    /// Loads vectors written by `model_id`; returns a warning when the file had to be reset.
    pub fn load(&self, model_id: ContentHash, dim: usize) -> Result<Option<String>, RagError> {
        if self.header.get().is_some() {
            return Ok(None);
        }
        let mut warning = None;
        let mut map = HashMap::new();
        let io = |e| RagError::io(&self.path, e);
        // One handle for reading, repairing and appending, locked while in use: another process
        // may be appending to the same file.
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(io)?;
        f.lock().map_err(io)?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(io)?;
        let header_len = HEADER_LEN;
        let ok_header = bytes.len() >= header_len
            && &bytes[..8] == CACHE_MAGIC
            && bytes[8..24] == model_id
            && u32::from_le_bytes(bytes[24..28].try_into().unwrap_or_default()) as usize == dim;
        if ok_header {
            let record = 16 + dim * 4;
            let mut offset = header_len;
            while offset + record <= bytes.len() {
                let mut hash = [0u8; 16];
                hash.copy_from_slice(&bytes[offset..offset + 16]);
                let v: Vec<f32> = bytes[offset + 16..offset + record]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                map.insert(hash, v);
                offset += record;
            }
            if offset != bytes.len() {
                warning = Some(format!(
                    "vector cache {} ended in a partial record; dropped it",
                    self.path.display()
                ));
                f.set_len(offset as u64).map_err(io)?;
            }
        } else {
            if !bytes.is_empty() {
                warning = Some(format!(
                    "vector cache {} was written by another model or format; starting afresh",
                    self.path.display()
                ));
            }
            f.set_len(0).map_err(io)?;
            f.seek(SeekFrom::Start(0)).map_err(io)?;
            let mut header = Vec::with_capacity(header_len);
            header.extend_from_slice(CACHE_MAGIC);
            header.extend_from_slice(&model_id);
            header.extend_from_slice(&(dim as u32).to_le_bytes());
            f.write_all(&header).map_err(io)?;
        }
        f.unlock().map_err(io)?;
        let file = f;
        *self.vectors.write().expect("vector cache lock") = map;
        *self.file.lock().expect("vector file lock") = Some(file);
        let _ = self.header.set((model_id, dim));
        Ok(warning)
    }

    /// Loads the cached vectors when the file holds vectors written by `model_id`; touches
    /// nothing otherwise. Returns whether any are loaded. Needs no model: the dimension comes
    /// from the file's header.
    pub fn load_existing(&self, model_id: ContentHash) -> Result<bool, RagError> {
        if let Some((loaded, _)) = self.header.get() {
            return Ok(*loaded == model_id && !self.is_empty());
        }
        let mut header = [0u8; HEADER_LEN];
        let read = File::open(&self.path).and_then(|mut f| {
            let len = f.metadata()?.len();
            f.read_exact(&mut header).map(|_| len)
        });
        let Ok(file_len) = read else {
            return Ok(false);
        };
        let dim = u32::from_le_bytes([header[24], header[25], header[26], header[27]]) as usize;
        let ours = &header[..8] == CACHE_MAGIC && header[8..24] == model_id && dim > 0;
        if !ours || file_len < (HEADER_LEN + 16 + dim * 4) as u64 {
            return Ok(false);
        }
        if let Some(w) = self.load(model_id, dim)? {
            tracing::warn!("{w}");
        }
        Ok(!self.is_empty())
    }

    pub fn len(&self) -> usize {
        self.vectors.read().expect("vector cache lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, hash: &ContentHash) -> bool {
        self.vectors
            .read()
            .expect("vector cache lock")
            .contains_key(hash)
    }

    /// Runs `f` with the vector of `hash`, if cached.
    pub fn with<R>(&self, hash: &ContentHash, f: impl FnOnce(&[f32]) -> R) -> Option<R> {
        self.vectors
            .read()
            .expect("vector cache lock")
            .get(hash)
            .map(|v| f(v))
    }

    /// Adds vectors and appends them to disk.
    pub fn insert(&self, entries: Vec<(ContentHash, Vec<f32>)>) -> Result<(), RagError> {
        {
            let mut file = self.file.lock().expect("vector file lock");
            if let Some(f) = file.as_mut() {
                let io = |e| RagError::io(&self.path, e);
                let mut batch = Vec::new();
                for (hash, v) in &entries {
                    batch.extend_from_slice(hash);
                    for x in v {
                        batch.extend_from_slice(&x.to_le_bytes());
                    }
                }
                // Whole records only, at the end as it is now (another process may have
                // appended since): under the lock, seek and write are one step for the file.
                f.lock().map_err(io)?;
                let written = f
                    .seek(SeekFrom::End(0))
                    .and_then(|_| f.write_all(&batch))
                    .and_then(|_| f.flush());
                let unlocked = f.unlock();
                written.and(unlocked).map_err(io)?;
            }
        }
        let mut map = self.vectors.write().expect("vector cache lock");
        map.extend(entries);
        Ok(())
    }
}
