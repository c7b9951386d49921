//! Every JSON, TOML and YAML file shipped in the repository parses, except the fixtures that
//! are malformed on purpose (listed below, and checked to stay malformed), and the example config
//! loads as a `ProjectConfig` without warnings.

use std::path::{Path, PathBuf};

use promptd::config::ProjectConfig;

/// Top-level folders that are not ours to check: build output, vendored and fuzzing crates,
/// installed dependencies.
const SKIPPED_DIRS: &[&str] = &["target", "vendor", "fuzz", ".deps", ".git"];

/// Fixtures that must not parse: each is the input of a test of an error path.
const MALFORMED_ON_PURPOSE: &[&str] = &[
    // JSON nested deeper than serde_json's recursion limit (the nesting error test).
    "tests/fixtures/fuzz/jsonrpc/deep_nesting.json",
    // A JSON-RPC frame that is not JSON (the -32700 parse error test).
    "tests/fixtures/fuzz/jsonrpc/malformed.json",
    // A guard rules file with a TOML syntax error (its error message test).
    "tests/fixtures/guard/err_syntax.toml",
    // A Gemini CLI command with a TOML syntax error (the dialect fixtures' error message).
    "tests/fixtures/dialects/gemini/.gemini/commands/broken.toml",
    // A prompt test case file with a YAML syntax error (its error message test).
    "tests/fixtures/prompt_tests/bad_cases/project/tests/prompts/a_yaml_error.yaml",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The data files of the repository, relative to its root, sorted.
fn shipped_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(&root)
        .hidden(false)
        .require_git(false)
        .filter_entry(move |e| {
            e.depth() != 1
                || !SKIPPED_DIRS
                    .iter()
                    .any(|d| e.file_name() == std::ffi::OsStr::new(d))
        })
        .build()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.path().strip_prefix(repo()).unwrap().to_path_buf())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "toml" | "yaml" | "yml")
            )
        })
        .collect();
    files.sort();
    files
}

fn parse(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(repo().join(path)).map_err(|e| e.to_string())?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str::<serde_json::Value>(&text)
            .map(drop)
            .map_err(|e| e.to_string()),
        Some("toml") => toml::from_str::<toml::Table>(&text)
            .map(drop)
            .map_err(|e| e.to_string()),
        _ => <saphyr::Yaml as saphyr::LoadableYamlNode>::load_from_str(&text)
            .map(drop)
            .map_err(|e| e.to_string()),
    }
}

#[test]
fn every_shipped_data_file_parses() {
    let files = shipped_files();
    for must in [
        ".ado-mcp-config.example.json",
        "Cargo.toml",
        "crates/guard/src/builtin.toml",
    ] {
        assert!(
            files.contains(&PathBuf::from(must)),
            "{must} not found among {files:?}"
        );
    }
    let mut problems = Vec::new();
    for f in &files {
        let on_purpose = MALFORMED_ON_PURPOSE.contains(&f.to_str().unwrap());
        match (parse(f), on_purpose) {
            (Ok(()), false) | (Err(_), true) => {}
            (Err(e), false) => problems.push(format!("{}: {e}", f.display())),
            (Ok(()), true) => problems.push(format!(
                "{}: listed as malformed on purpose, but it parses",
                f.display()
            )),
        }
    }
    for f in MALFORMED_ON_PURPOSE {
        if !files.contains(&PathBuf::from(f)) {
            problems.push(format!("{f}: listed as malformed on purpose, but missing"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_example_config_loads_without_warnings() {
    let path = repo().join(".ado-mcp-config.example.json");
    let config = ProjectConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.variables["project"], "Fabrikam Web");
    assert_eq!(config.variables["team"], "checkout");
    assert_eq!(config.variables["release_train"], "2026.12");
}

/// Every variable the setup scripts export into `.deps/env.sh` is one the binary or the tests
/// read (a variable nothing reads points a user at a setting that does not exist).
#[test]
fn every_variable_setup_exports_is_read() {
    let root = repo();
    let mut read = String::new();
    for dir in ["src", "tests"] {
        for entry in ignore::WalkBuilder::new(root.join(dir)).build().flatten() {
            if entry.path().extension().is_some_and(|e| e == "rs") {
                read.push_str(&std::fs::read_to_string(entry.path()).unwrap());
            }
        }
    }
    let mut exported = Vec::new();
    for script in [
        "scripts/setup",
        "scripts/setup-model",
        "scripts/setup-inspector",
        "scripts/setup-agents",
    ] {
        let text = std::fs::read_to_string(root.join(script)).unwrap();
        for line in text.lines() {
            // `echo "export …"`, alone or after an `if [ -n "$dir" ]; then`.
            let line = line.trim_start();
            let line = line
                .split_once("]; then echo \"")
                .map_or(line, |(_, rest)| rest)
                .trim_start_matches("echo \"");
            if let Some(rest) = line.strip_prefix("export ")
                && let Some((name, _)) = rest.split_once('=')
                && name != "PROMPTD_DEPS_DIR"
            {
                exported.push(name.to_string());
            }
        }
    }
    assert!(exported.len() >= 4, "{exported:?}");
    for name in &exported {
        assert!(
            read.contains(&format!("\"{name}\"")),
            "{name} is exported but never read"
        );
    }
}

/// Every environment variable a command-line flag reads (`env = "…"` in `src/cli/`) is one the
/// tests' process helper clears, so a developer's shell never changes what a test runs.
#[test]
fn every_variable_a_flag_reads_is_cleared_for_the_binary_under_test() {
    let root = repo();
    let mut names = Vec::new();
    for entry in ignore::WalkBuilder::new(root.join("src/cli"))
        .build()
        .flatten()
    {
        if entry.path().extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            for part in text.split("env = \"").skip(1) {
                if let Some((name, _)) = part.split_once('"') {
                    names.push(name.to_string());
                }
            }
        }
    }
    assert!(names.iter().any(|n| n == "PROMPTD_WATCH_POLL"), "{names:?}");
    for name in &names {
        assert!(
            crate::support::process::CLEARED_ENV.contains(&name.as_str()),
            "{name} is read by a flag but not cleared by support::process"
        );
    }
}
