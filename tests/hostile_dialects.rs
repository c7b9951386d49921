//! Hostile input against the dialects: deeply nested and self-linked command folders, TOML
//! nested past any sane depth, and a command whose `$1`…`$9` and `$ARGUMENTS` would multiply a
//! huge argument. Each asserts a clear error (the file, or the limit's config key), bounded time
//! and memory, and that the other prompts are still served.

use crate::support::process::{promptd, run_bounded};

use std::path::Path;
use std::time::Duration;

use promptd::library::{LibraryOptions, PromptLibrary};
use serde_json::{Map, json};

const MAX_RSS_MIB: f64 = 200.0;
const TIMEOUT: Duration = Duration::from_secs(30);

/// `promptd list --json` in `repo`: the names listed, the stderr, and the peak RSS.
fn list(repo: &Path) -> (Vec<String>, String, f64) {
    let mut cmd = promptd();
    cmd.args(["list", "--json", "--no-builtin-prompts"])
        .current_dir(repo);
    let run = run_bounded(cmd, b"", TIMEOUT);
    assert!(!run.timed_out, "list hung: {}", run.stderr);
    assert!(
        run.peak_rss_mib < MAX_RSS_MIB,
        "peak RSS {} MiB",
        run.peak_rss_mib
    );
    let v: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", run.stdout, run.stderr));
    let names = v["data"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["category"] == "user")
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    (names, run.stderr, run.peak_rss_mib)
}

#[test]
fn deep_and_self_linked_command_folders_end() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().join(".claude/commands");
    let mut deep = root.clone();
    for _ in 0..200 {
        deep = deep.join("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom.md"), "Bottom $ARGUMENTS\n").unwrap();
    std::fs::write(root.join("ok.md"), "Fine\n").unwrap();
    // A folder linked to its own parent: a walk that followed it would never end.
    std::os::unix::fs::symlink(&root, root.join("loop")).unwrap();
    let (names, stderr, rss) = list(repo.path());
    assert!(names.contains(&"ok".to_string()), "{names:?} {stderr}");
    let bottom = format!("{}bottom", "d:".repeat(200));
    assert!(names.contains(&bottom), "{names:?}");
    assert_eq!(names.len(), 2, "the link is not followed: {names:?}");
    eprintln!("deep folders: peak RSS {rss:.1} MiB");
}

#[test]
fn toml_nested_past_any_depth_is_a_clear_error() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().join(".gemini/commands");
    std::fs::create_dir_all(&root).unwrap();
    let bomb = format!("prompt = \"x\"\na = {}\n", "[".repeat(200_000));
    std::fs::write(root.join("bomb.toml"), bomb).unwrap();
    std::fs::write(root.join("ok.toml"), "prompt = \"fine {{args}}\"\n").unwrap();
    let (names, stderr, rss) = list(repo.path());
    assert_eq!(names, ["ok"], "{stderr}");
    assert!(
        stderr.contains("bomb.toml") && stderr.contains("invalid TOML"),
        "{stderr}"
    );
    eprintln!("toml bomb: peak RSS {rss:.1} MiB");
}

#[test]
fn positional_placeholders_cannot_multiply_an_argument_past_the_render_limit() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().join(".claude/commands");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("bomb.md"), "$ARGUMENTS $1 ".repeat(20_000)).unwrap();
    std::fs::write(root.join("ok.md"), "Fine $0\n").unwrap();
    let lib = PromptLibrary::open(LibraryOptions {
        cwd: repo.path().to_path_buf(),
        no_builtin_prompts: true,
        ..Default::default()
    })
    .unwrap();
    let mut args = Map::new();
    args.insert("arguments".into(), json!("x".repeat(100_000)));
    let started = std::time::Instant::now();
    let e = lib.render("bomb", &args).unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(e.contains("maxRenderBytes") && e.contains("bomb"), "{e}");
    let mut ok = Map::new();
    ok.insert("arguments".into(), json!("a b"));
    assert_eq!(lib.render("ok", &ok).unwrap().text, "Fine a\n");
}

#[test]
fn thousands_of_named_arguments_cannot_make_a_render_quadratic() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().join(".claude/commands");
    std::fs::create_dir_all(&root).unwrap();
    let names: Vec<String> = (0..4_000)
        .map(|i| format!("a{}", "a".repeat(i % 120)))
        .collect();
    let header = format!("---\narguments: [{}]\n---\n", names.join(", "));
    std::fs::write(
        root.join("many.md"),
        format!("{header}{}", "$aaaaaaaaaaaaaaaa ".repeat(25_000)),
    )
    .unwrap();
    let lib = PromptLibrary::open(LibraryOptions {
        cwd: repo.path().to_path_buf(),
        no_builtin_prompts: true,
        ..Default::default()
    })
    .unwrap();
    let mut args = Map::new();
    args.insert("arguments".into(), json!("x y"));
    let started = std::time::Instant::now();
    let r = lib.render("many", &args);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Only the first 64 names are read: `$aaaaaaaaaaaaaaaa` is the 17th name (empty, no word).
    assert!(r.unwrap().text.starts_with("  "));
}
