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
        "src/guard/builtin.toml",
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
