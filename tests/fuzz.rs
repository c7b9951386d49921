//! The fuzz targets of `tests/fuzz_targets/`, run briefly under `cargo test`: every regression
//! fixture in `tests/fixtures/fuzz/<target>/` first (each is an input that once broke promptd),
//! then seeded mutations of them. Deterministic: the same seed gives the same inputs, and a
//! failure prints the seed and iteration that reproduce it. `PROMPTD_FUZZ_ITERATIONS` sets the
//! number of mutated inputs per target (default 2000); `PROMPTD_FUZZ_SEED` the seed. Long,
//! coverage-guided runs use the cargo-fuzz crate in `fuzz/` (`scripts/fuzz`).

#[path = "fuzz_targets/mod.rs"]
mod fuzz_targets;

use std::path::{Path, PathBuf};

/// Tokens that reach the interesting branches of the parsers faster than random bytes.
const DICTIONARY: &[&str] = &[
    "---\n",
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "{% set a = ",
    " ~ ",
    " * ",
    "{% for i in range(",
    "{% include \"",
    "{% macro m() %}",
    "{% endfor %}",
    "{% endif %}",
    "|replace(",
    "|indent(",
    "name: ",
    "arguments:\n",
    "  - name: x\n    type: integer\n",
    "engine: plain\n",
    "roles: true\n",
    "<!-- role: assistant -->\n",
    "&a [*a, *a]",
    "\u{feff}",
    "\r\n",
    "\0",
    "é",
    "\u{10ffff}",
    "-----BEGIN PRIVATE KEY-----\n",
    "AKIA",
    "ghp_",
    "password=",
    "fn f() {\n",
    "def f():\n",
    "class C {\n",
    "}\n",
    "/*",
    "\"\"\"",
    "`",
    "'",
    "\\",
    "\"jsonrpc\":\"2.0\"",
    "\"method\":",
    "\"params\":{",
    "\"id\":",
    "[[[[[[[[",
    "null",
    "1e999",
    "\"prompts/get\"",
    "%",
];

fn iterations() -> usize {
    std::env::var("PROMPTD_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn seed() -> u64 {
    std::env::var("PROMPTD_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_f00d)
}

fn fixtures(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read fuzz fixture");
            (p, bytes)
        })
        .collect()
}

/// One mutation of `input`: a byte flip, an insertion of a dictionary token or of random bytes,
/// a deletion, a duplication of a span, or a splice with another seed.
fn mutate(rng: &mut fastrand::Rng, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..rng.usize(1..=4) {
        let at = rng.usize(0..=out.len());
        match rng.u8(0..6) {
            0 if !out.is_empty() => {
                let i = rng.usize(0..out.len());
                out[i] ^= 1 << rng.u8(0..8);
            }
            1 => {
                let token = DICTIONARY[rng.usize(0..DICTIONARY.len())].as_bytes();
                out.splice(at..at, token.iter().copied());
            }
            2 => {
                let n = rng.usize(1..16);
                out.splice(at..at, std::iter::repeat_with(|| rng.u8(..)).take(n));
            }
            3 if !out.is_empty() => {
                let end = (at + rng.usize(1..64)).min(out.len());
                let start = at.min(end);
                out.drain(start..end);
            }
            4 if !out.is_empty() => {
                let start = rng.usize(0..out.len());
                let end = (start + rng.usize(1..64)).min(out.len());
                let span = out[start..end].to_vec();
                out.splice(at..at, span);
            }
            _ if !seeds.is_empty() => {
                let other = &seeds[rng.usize(0..seeds.len())];
                let cut = rng.usize(0..=other.len());
                out.truncate(at);
                out.extend_from_slice(&other[cut..]);
            }
            _ => {}
        }
    }
    out.truncate(64 * 1024);
    out
}

fn run(target: &str) {
    let f = fuzz_targets::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
        .expect("known target");
    let fixtures = fixtures(target);
    assert!(
        !fixtures.is_empty(),
        "tests/fixtures/fuzz/{target}/ holds no seed input"
    );
    for (path, bytes) in &fixtures {
        let result = std::panic::catch_unwind(|| f(bytes));
        assert!(result.is_ok(), "{target}: fixture {} fails", path.display());
    }
    let seeds: Vec<Vec<u8>> = fixtures.into_iter().map(|(_, b)| b).collect();
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    for i in 0..iterations() {
        let base = &seeds[rng.usize(0..seeds.len())];
        let input = mutate(&mut rng, base, &seeds);
        if std::panic::catch_unwind(|| f(&input)).is_err() {
            let saved = std::env::temp_dir().join(format!("promptd-fuzz-{target}-{seed}-{i}"));
            let _ = std::fs::write(&saved, &input);
            panic!(
                "{target}: mutated input {i} (PROMPTD_FUZZ_SEED={seed}) fails; saved to {}; \
                 add it to tests/fixtures/fuzz/{target}/ once fixed",
                saved.display()
            );
        }
    }
}

#[test]
fn fuzz_prompt_file() {
    run("prompt_file");
}

#[test]
fn fuzz_render() {
    run("render");
}

#[test]
fn fuzz_scanner() {
    run("scanner");
}

#[test]
fn fuzz_chunker() {
    run("chunker");
}

#[test]
fn fuzz_jsonrpc() {
    run("jsonrpc");
}
