//! Following the code: with a file being edited, the definitions of the symbols it uses come
//! back as reference chunks tagged `[Followed: name from path:line]`, in Python, Go, TypeScript
//! and Rust fixture repositories (`tests/fixtures/rag/follow/<language>/`) where the defining
//! module shares no word with the request; a name defined in twenty files is not followed;
//! with `followHits` the best hits' uses are followed too; with `followDefinitions: 0` nothing
//! is.

use crate::support::rag;

use std::path::Path;

use promptd::rag::{RagConfig, Retrieval, RetrievalQuery, RetrievedChunk, Retriever};
use rag::{copy_tree, lexical_config, write_files};

/// The fixture repository `name`, copied to a temporary directory.
fn fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/rag/follow")
            .join(name),
        dir.path(),
    );
    dir
}

fn ask(repo: &Path, config: RagConfig, request: &str, active: Option<&str>) -> Retrieval {
    let retriever = Retriever::open(repo, config).unwrap();
    retriever
        .retrieve(&RetrievalQuery {
            active_file: active.map(Into::into),
            ..RetrievalQuery::new(request)
        })
        .unwrap()
}

fn followed(retrieval: &Retrieval) -> Vec<&RetrievedChunk> {
    retrieval
        .chunks
        .iter()
        .filter(|c| c.chunk.tags.iter().any(|t| t.starts_with("[Followed: ")))
        .collect()
}

/// The chunk of `path` defining `symbol`, which must be there, tagged as followed: `followed`
/// lists the names it defines that were followed, `used_at` (`path:line`) where the first is
/// first used.
fn assert_followed(retrieval: &Retrieval, path: &str, symbol: &str, followed: &str, used_at: &str) {
    let chunk = retrieval
        .chunks
        .iter()
        .find(|c| c.chunk.path == path && c.chunk.symbols.iter().any(|s| s == symbol))
        .unwrap_or_else(|| {
            panic!(
                "no chunk of {path} defining {symbol}:\n{}",
                retrieval.formatted
            )
        });
    let tag = format!("[Followed: {followed} from {used_at}]");
    assert!(chunk.chunk.tags.contains(&tag), "{:?}", chunk.chunk.tags);
    assert!(
        retrieval.formatted.contains(&tag),
        "{}",
        retrieval.formatted
    );
    assert!(retrieval.stats.timings.follow_ms > 0.0);
}

fn without_following() -> RagConfig {
    RagConfig {
        follow_definitions: 0,
        ..lexical_config()
    }
}

#[test]
fn python_login_gets_the_find_user_it_calls() {
    let repo = fixture("python");
    let request = "add error handling to login";
    let active = Some("src/auth.py");
    let before = ask(repo.path(), without_following(), request, active);
    assert!(
        before
            .chunks
            .iter()
            .all(|c| c.chunk.path != "src/users/store.py"),
        "{}",
        before.formatted
    );
    let after = ask(repo.path(), lexical_config(), request, active);
    // `from .users.store import find_user` on line 2 is its first use.
    assert_followed(
        &after,
        "src/users/store.py",
        "find_user",
        "find_user",
        "src/auth.py:2",
    );
    // What the active file defines is never followed back into it, nor is the active file
    // a reference chunk.
    assert!(after.chunks.iter().all(|c| c.chunk.path != "src/auth.py"));
    // The lexical hits stay.
    assert!(
        after
            .chunks
            .iter()
            .any(|c| c.chunk.path == "src/web/views.py")
    );
}

#[test]
fn go_typescript_and_rust_logins_get_what_they_call() {
    // (fixture, active file, defining file, symbol, followed names, first use)
    let cases = [
        // The Go file is one chunk: the function and the two types the signature uses.
        (
            "go",
            "auth/login.go",
            "users/store.go",
            "FindAccount",
            "Account, Database, FindAccount",
            "auth/login.go:6",
        ),
        (
            "typescript",
            "src/auth.ts",
            "src/users/store.ts",
            "findUser",
            "findUser",
            "src/auth.ts:1",
        ),
        (
            "rust",
            "src/auth.rs",
            "src/users.rs",
            "find_user",
            "find_user",
            "src/auth.rs:3",
        ),
    ];
    for (name, active, path, symbol, names, used_at) in cases {
        let repo = fixture(name);
        let retrieval = ask(
            repo.path(),
            lexical_config(),
            "add error handling to login",
            Some(active),
        );
        assert_followed(&retrieval, path, symbol, names, used_at);
    }
}

#[test]
fn a_name_defined_in_twenty_files_is_not_followed() {
    let repo = fixture("common");
    let plugins: Vec<(String, String)> = (0..20)
        .map(|i| {
            (
                format!("src/plugins/store_{i}.py"),
                format!(
                    "class Store{i}:\n    def get(self, key):\n        return self.rows{i}[key]\n"
                ),
            )
        })
        .collect();
    let plugins: Vec<(&str, String)> = plugins
        .iter()
        .map(|(p, t)| (p.as_str(), t.clone()))
        .collect();
    write_files(repo.path(), &plugins);
    let retrieval = ask(
        repo.path(),
        lexical_config(),
        "add error handling to login",
        Some("src/session.py"),
    );
    assert_followed(
        &retrieval,
        "src/accounts.py",
        "lookup_account",
        "lookup_account",
        "src/session.py:2",
    );
    let followed = followed(&retrieval);
    assert_eq!(followed.len(), 1, "{}", retrieval.formatted);
    assert!(
        retrieval
            .chunks
            .iter()
            .all(|c| !c.chunk.path.starts_with("src/plugins/")),
        "{}",
        retrieval.formatted
    );
}

#[test]
fn the_best_hits_are_followed_without_an_active_file() {
    let repo = fixture("python");
    // The request meets `logout` in src/auth.py; `find_user` is only reached through it.
    let request = "logout clears the session";
    let hits = RagConfig {
        follow_hits: 3,
        ..lexical_config()
    };
    let retrieval = ask(repo.path(), hits, request, None);
    assert_eq!(retrieval.chunks[0].chunk.path, "src/auth.py");
    let from_hit = followed(&retrieval);
    assert!(
        from_hit.iter().any(|c| c.chunk.path == "src/users/store.py"
            && c.chunk
                .tags
                .iter()
                .any(|t| t.contains("find_user from src/auth.py:"))),
        "{}",
        retrieval.formatted
    );
    let retrieval = ask(repo.path(), lexical_config(), request, None);
    assert!(followed(&retrieval).is_empty(), "{}", retrieval.formatted);
}

#[test]
fn follow_definitions_caps_what_is_added() {
    let repo = fixture("python");
    let one = RagConfig {
        follow_definitions: 1,
        ..lexical_config()
    };
    let retrieval = ask(
        repo.path(),
        one,
        "add error handling to login",
        Some("src/auth.py"),
    );
    assert_eq!(followed(&retrieval).len(), 1, "{}", retrieval.formatted);
    let three = ask(
        repo.path(),
        lexical_config(),
        "add error handling to login",
        Some("src/auth.py"),
    );
    // `find_user` and `record_event`: the two functions login calls from other modules.
    let mut paths: Vec<&str> = followed(&three)
        .iter()
        .map(|c| c.chunk.path.as_str())
        .collect();
    paths.sort();
    assert_eq!(paths, ["src/audit.py", "src/users/store.py"]);
}
