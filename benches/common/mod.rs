//! What several bench binaries share: the release binary, the machine's load, a process's
//! resident memory, and the generated prompts of the large-registry benches. Each bench uses a
//! part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The binary under measurement: `$PROMPTD_BIN`, else `target/release/promptd` as `cargo build
/// --release` makes it. The build runs every time (a no-op when up to date): `cargo bench` writes
/// its own build of the binary (the bench profile) to the same path, and the release build puts
/// the user's binary back.
pub fn release_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PROMPTD_BIN") {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Run in the repository, where the workspace's manifest is.
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "--bin", "promptd"])
        .current_dir(root)
        .status()
        .expect("cargo build --release");
    assert!(status.success());
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("release/promptd")
}

/// Min, median and p99 of `samples` (sorted in place), formatted in milliseconds.
pub fn summary_ms(samples: &mut [f64]) -> String {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    format!(
        "min {:.2} ms  median {:.2} ms  p99 {:.2} ms  (n={})",
        at(0.0),
        at(0.5),
        at(0.99),
        samples.len()
    )
}

/// The integer in environment variable `name`, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The name of generated prompt `i` (its file is `NAME.md`).
pub fn generated_name(i: usize) -> String {
    format!("p{i:06}")
}

/// A folder of `n` generated prompts (revision 0), named by [`generated_name`].
pub fn generated_registry(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        std::fs::write(
            dir.path().join(format!("{}.md", generated_name(i))),
            generated_prompt(i, 0),
        )
        .unwrap();
    }
    dir
}

/// The machine's load averages (1, 5, 15 minutes): a timing on a shared machine means little
/// without them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A prompt of about 1 KB: frontmatter with two arguments and a Jinja body; `revision` makes
/// an edit.
pub fn generated_prompt(i: usize, revision: usize) -> String {
    let mut body = format!(
        "---\ntitle: Generated prompt {i}\ndescription: Prompt number {i} of a large registry, revision {revision}.\narguments:\n  target: {{ type: string, required: true, description: What to work on }}\n  depth: {{ type: integer, default: 2 }}\n---\nWork on {{{{ target }}}} at depth {{{{ depth }}}}.\n"
    );
    while body.len() < 1000 {
        body.push_str(
            "Explain each step, name the files you change and why, and keep the diff small.\n",
        );
    }
    body
}
