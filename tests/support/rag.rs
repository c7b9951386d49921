//! The retrieval tests' support: the multi-language fixture repository in a temporary
//! directory, the queries it answers, and the location of the real embedding model.

use std::path::{Path, PathBuf};

use promptd::rag::RagConfig;

use super::guard::{Fake, fake_secret};

/// Writes `files` (path, content) under `root`.
pub fn write_files(root: &Path, files: &[(&str, String)]) {
    for (path, content) in files {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
}

/// A small polyglot project with one obviously relevant function per query in [`QUERIES`]:
/// the sources in `tests/fixtures/rag/repo/`, copied to a temporary directory, plus the files
/// that must never be indexed, written there at run time (secrets, an ignored folder,
/// dependency and build folders).
pub fn fixture_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rag/repo"),
        dir.path(),
    );
    let key = fixture_secret();
    let mut g = Fake::new(SECRET_SEED);
    let files: Vec<(&str, String)> = vec![
        (".gitignore", "ignored_dir/\n".into()),
        (
            "ignored_dir/notes.rs",
            "pub fn ignored_function_marker() {}\n".into(),
        ),
        (
            ".env",
            format!("AWS_ACCESS_KEY_ID={key}\nDB_PASSWORD={}\n", g.token("%a12")),
        ),
        (
            "deploy/id_rsa",
            g.token("-----BEGIN OPENSSH PRIVATE| KEY-----|\nMIIfake\n"),
        ),
        ("deploy/prod.env", format!("TOKEN={key}\n")),
        (
            "node_modules/left-pad/index.js",
            "function leftPad() {}\n".into(),
        ),
        ("target/debug/build.rs", "fn generated_marker() {}\n".into()),
        (
            "web/dist/app.min.js",
            "function minified_marker(){}\n".into(),
        ),
    ];
    write_files(dir.path(), &files);
    dir
}

const SECRET_SEED: u64 = 0x4A6_5EC2;

/// The fake AWS access key the fixture repository's secret files hold.
pub fn fixture_secret() -> String {
    fake_secret("aws-access-key-id", &mut Fake::new(SECRET_SEED)).unwrap()
}

/// Copies the files under `from` to `to`, keeping their relative paths.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// (query, expected path, expected tag) — the obviously relevant function for each prompt.
pub const QUERIES: &[(&str, &str, &str)] = &[
    (
        "why does login fail with the wrong password",
        "src/auth/login.rs",
        "[Function: login]",
    ),
    (
        "evict least recently used entries when the cache is full",
        "src/cache/lru.rs",
        "[Method: LruCache.insert]",
    ),
    (
        "load the YAML config file and merge defaults",
        "config/loader.py",
        "[Function: load_config]",
    ),
    (
        "fetch users from the REST API",
        "web/src/api/client.ts",
        "[Method: ApiClient.fetchUsers]",
    ),
    (
        "retry with exponential backoff",
        "web/src/api/client.ts",
        "[Function: retryWithBackoff]",
    ),
    (
        "cart total with tax",
        "web/src/cart.js",
        "[Function: cartTotal]",
    ),
    (
        "kubernetes liveness probe health endpoint",
        "server/health.go",
        "[Method: Server.HandleHealth]",
    ),
    (
        "invoice total including VAT",
        "billing/src/InvoiceService.java",
        "[Method: InvoiceService.computeInvoiceTotal]",
    ),
    (
        "push into ring buffer when full",
        "native/ringbuf.c",
        "[Function: ring_buffer_push]",
    ),
    (
        "multiply two matrices",
        "native/matrix.cpp",
        "[Function: matrix_multiply]",
    ),
    (
        "send an email through SMTP",
        "mail/EmailSender.cs",
        "[Method: EmailSender.SendEmailAsync]",
    ),
    (
        "turn a title into a URL slug",
        "lib/slugify.rb",
        "[Function: slugify]",
    ),
    (
        "tokenize source text for the search index",
        "src/tokenizer.rs",
        "[Function: tokenize_source]",
    ),
];

/// A configuration that never loads a model (lexical-only tests stay fast and deterministic).
pub fn lexical_config() -> RagConfig {
    RagConfig {
        embeddings: false,
        ..RagConfig::default()
    }
}

/// The embedding model and ONNX Runtime: `PROMPTD_EMBED_MODEL_DIR` / `ORT_DYLIB_PATH`, else
/// `<crate>/.deps/…` as installed by `scripts/setup-model`; `Err` names what was looked for.
pub fn find_model_paths() -> Result<(PathBuf, PathBuf), (PathBuf, PathBuf)> {
    let deps = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".deps");
    let model = std::env::var_os("PROMPTD_EMBED_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| deps.join("models/all-MiniLM-L6-v2"));
    let runtime = std::env::var_os("ORT_DYLIB_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| deps.join("onnxruntime/libonnxruntime.so"));
    if model.join("model.onnx").is_file() && runtime.is_file() {
        Ok((model, runtime))
    } else {
        Err((model, runtime))
    }
}

/// [`find_model_paths`], which the tests require.
pub fn model_paths() -> (PathBuf, PathBuf) {
    find_model_paths().unwrap_or_else(|(model, runtime)| {
        panic!(
            "embedding model or ONNX Runtime missing ({} / {}): run scripts/setup-model",
            model.display(),
            runtime.display()
        )
    })
}

/// The static embedding model installed by `scripts/setup-model`
/// (`$PROMPTD_DEPS_DIR/models/…`, else `<crate>/.deps/models/…`); `Err` names where it was
/// looked for.
pub fn find_static_model_dir() -> Result<PathBuf, PathBuf> {
    let deps = std::env::var_os("PROMPTD_DEPS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".deps"));
    let dir = deps
        .join("models")
        .join(promptd::rag::embed::STATIC_MODEL_NAME);
    if dir.join(promptd::rag::static_model::MODEL_FILE).is_file() {
        Ok(dir)
    } else {
        Err(dir)
    }
}

/// [`find_static_model_dir`], which the tests require.
pub fn static_model_dir() -> PathBuf {
    find_static_model_dir().unwrap_or_else(|dir| {
        panic!(
            "static embedding model missing in {}: run scripts/setup-model",
            dir.display()
        )
    })
}

/// A configuration using the real static model, and no ONNX Runtime.
pub fn static_model_config() -> RagConfig {
    RagConfig {
        embeddings: true,
        model_dir: Some(static_model_dir()),
        ort_dylib_path: Some(PathBuf::from("/nonexistent/libonnxruntime.so")),
        ..RagConfig::default()
    }
}

/// A configuration using the real model.
pub fn model_config() -> RagConfig {
    let (model, runtime) = model_paths();
    RagConfig {
        embeddings: true,
        model_dir: Some(model),
        ort_dylib_path: Some(runtime),
        ..RagConfig::default()
    }
}
