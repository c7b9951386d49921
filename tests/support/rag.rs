//! Shared helpers for the retrieval tests: a multi-language fixture repository written to a
//! temporary directory, and the location of the real embedding model.

use std::path::{Path, PathBuf};

use promptd::rag::RagConfig;

/// Writes `files` (path, content) under `root`.
pub fn write_files(root: &Path, files: &[(&str, String)]) {
    for (path, content) in files {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
}

/// A small polyglot project with one obviously relevant function per query in
/// [`QUERIES`], plus files that must never be indexed.
pub fn fixture_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // Fake secrets are assembled at run time so no scanner flags this source file.
    let fake_key = format!("{}{}", "AKIA", "FAKEFAKEFAKEFAKE");
    let fake_pem = format!("-----BEGIN {} PRIVATE KEY-----\nMIIfake\n", "OPENSSH");
    let files: Vec<(&str, String)> = vec![
        (
            "src/auth/login.rs",
            r#"//! Login flow: checks credentials and opens a session.

use crate::session::Session;

/// Verifies a user's password against the stored argon2 hash and opens a session.
pub fn login(user: &str, password: &str, store: &UserStore) -> Result<Session, LoginError> {
    let record = store.find(user).ok_or(LoginError::UnknownUser)?;
    if !argon2_verify(&record.password_hash, password) {
        return Err(LoginError::WrongPassword);
    }
    Ok(Session::open(user))
}

/// Ends a session and forgets its cookie.
pub fn logout(session: Session) {
    session.close();
}
"#
            .into(),
        ),
        (
            "src/tokenizer.rs",
            r#"//! Splits source text into tokens for the search index.

/// Splits `text` into lower-case tokens; drops anything that looks like a password or an
/// access token so they never reach the index.
pub fn tokenize_source(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
        .collect()
}
"#
            .into(),
        ),
        (
            "src/cache/lru.rs",
            r#"use std::collections::HashMap;

/// A least-recently-used cache with a fixed capacity.
pub struct LruCache {
    capacity: usize,
    map: HashMap<String, Vec<u8>>,
    order: Vec<String>,
}

impl LruCache {
    /// Inserts a value, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: String, value: Vec<u8>) {
        if self.map.len() >= self.capacity {
            let oldest = self.order.remove(0);
            self.map.remove(&oldest);
        }
        self.order.push(key.clone());
        self.map.insert(key, value);
    }
}
"#
            .into(),
        ),
        (
            "config/loader.py",
            r#""""Configuration loading."""
import yaml


def load_config(path):
    """Reads the YAML configuration file and merges the defaults."""
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    return {"debug": False, **data}
"#
            .into(),
        ),
        (
            "web/src/api/client.ts",
            r#"export class ApiClient {
  constructor(private base: string) {}

  /** Fetches the list of users from the REST API. */
  async fetchUsers(): Promise<string[]> {
    const res = await fetch(`${this.base}/users`);
    return res.json();
  }
}

/** Retries an async operation with exponential backoff. */
export async function retryWithBackoff(op: () => Promise<void>, attempts = 3) {
  for (let i = 0; i < attempts; i++) {
    try {
      return await op();
    } catch {
      await new Promise((r) => setTimeout(r, 2 ** i * 100));
    }
  }
}
"#
            .into(),
        ),
        (
            "web/src/cart.js",
            r#"const TAX_RATE = 0.2;

/** Sums price times quantity over the cart items, plus tax. */
function cartTotal(items) {
  return items.reduce((sum, i) => sum + i.price * i.qty, 0) * (1 + TAX_RATE);
}

module.exports = { cartTotal };
"#
            .into(),
        ),
        (
            "server/health.go",
            r#"package server

import "net/http"

type Server struct{}

// HandleHealth answers Kubernetes liveness probes with 200 OK.
func (s *Server) HandleHealth(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}
"#
            .into(),
        ),
        (
            "billing/src/InvoiceService.java",
            r#"package com.acme.billing;

public class InvoiceService {
    /** Computes the invoice total including VAT. */
    public double computeInvoiceTotal(double[] lines, double vatRate) {
        double sum = 0;
        for (double l : lines) sum += l;
        return sum * (1 + vatRate);
    }
}
"#
            .into(),
        ),
        (
            "native/ringbuf.c",
            r#"#include <stddef.h>

typedef struct { int data[64]; size_t head, tail; } ring_buffer;

/* Pushes a value into the ring buffer; returns -1 when the buffer is full. */
int ring_buffer_push(ring_buffer *rb, int value) {
    size_t next = (rb->head + 1) % 64;
    if (next == rb->tail) return -1;
    rb->data[rb->head] = value;
    rb->head = next;
    return 0;
}
"#
            .into(),
        ),
        (
            "native/matrix.cpp",
            r#"#include <vector>

// Multiplies two dense matrices stored row-major.
std::vector<double> matrix_multiply(const std::vector<double>& a, const std::vector<double>& b, int n) {
    std::vector<double> out(n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++)
                out[i * n + j] += a[i * n + k] * b[k * n + j];
    return out;
}
"#
            .into(),
        ),
        (
            "mail/EmailSender.cs",
            r#"namespace Acme.Mail
{
    public class EmailSender
    {
        /// Sends an email message through the SMTP relay.
        public async System.Threading.Tasks.Task SendEmailAsync(string to, string subject, string body)
        {
            await System.Threading.Tasks.Task.Delay(1);
        }
    }
}
"#
            .into(),
        ),
        (
            "lib/slugify.rb",
            r#"module TextHelpers
  # Turns a title into a URL slug.
  def self.slugify(title)
    title.downcase.strip.gsub(/[^a-z0-9]+/, "-")
  end
end
"#
            .into(),
        ),
        (
            "docs/architecture.md",
            "# Architecture\n\nThe server exposes a health endpoint and a login flow.\n\n## Storage\n\nAn LRU cache sits in front of the database.\n".into(),
        ),
        (".gitignore", "ignored_dir/\n".into()),
        ("ignored_dir/notes.rs", "pub fn ignored_function_marker() {}\n".into()),
        (".env", format!("AWS_ACCESS_KEY_ID={fake_key}\nDB_PASSWORD=hunter2\n")),
        ("deploy/id_rsa", fake_pem),
        ("deploy/prod.env", format!("TOKEN={fake_key}\n")),
        ("node_modules/left-pad/index.js", "function leftPad() {}\n".into()),
        ("target/debug/build.rs", "fn generated_marker() {}\n".into()),
        ("web/dist/app.min.js", "function minified_marker(){}\n".into()),
    ];
    write_files(dir.path(), &files);
    dir
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

/// A configuration using the real model.
pub fn model_config() -> RagConfig {
    let (model, runtime) = model_paths();
    RagConfig {
        model_dir: Some(model),
        ort_dylib_path: Some(runtime),
        ..RagConfig::default()
    }
}
