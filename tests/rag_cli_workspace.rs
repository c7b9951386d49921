//! `promptd index` and `promptd context` open the repository under the same workspace policy
//! as `promptd enhance` and `promptd compose`: a refused folder (here a home directory) is
//! refused by all of them, and admitted by all of them once the config lists it in
//! `workspace.allowedFolders`.

use crate::support;

use std::path::Path;
use std::process::Output;

use support::process::promptd;

fn run(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    promptd()
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("PROMPTD_EMBED_MODEL_DIR", "/nonexistent/model")
        .env_remove("PROMPTD_DEPS_DIR")
        .output()
        .unwrap()
}

#[test]
fn a_home_directory_is_a_repository_only_when_the_config_allows_it() {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("home");
    std::fs::create_dir_all(home.join("src")).unwrap();
    std::fs::write(
        home.join("src/notes.rs"),
        "/// Keeps the shopping list.\npub fn shopping_list() -> Vec<String> {\n    Vec::new()\n}\n",
    )
    .unwrap();
    let dir = home.to_str().unwrap();
    let commands: [&[&str]; 3] = [
        &["index", "--dir", dir, "--no-embed"],
        &["context", "shopping list", "--dir", dir],
        &["compose", "--query", "shopping list", "--dir", dir],
    ];

    for args in commands {
        let out = run(base.path(), &home, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was not refused");
        assert!(
            stderr.contains("a home directory") && stderr.contains("workspace.allowedFolders"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!home.join(".rag").exists());

    let config = base.path().join("config.json");
    std::fs::write(
        &config,
        serde_json::json!({"workspace": {"allowedFolders": [home]}}).to_string(),
    )
    .unwrap();
    for args in commands {
        let mut with_config = vec!["--config", config.to_str().unwrap()];
        with_config.extend_from_slice(args);
        let out = run(base.path(), &home, &with_config);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(
        base.path(),
        &home,
        &[
            "--config",
            config.to_str().unwrap(),
            "context",
            "shopping list",
            "--dir",
            dir,
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("shopping_list"));
}
