//! Prompts as of a git revision, in a repository the test makes with the `git` command line:
//! `promptd get NAME@REV` by tag, branch and short hash, the errors for a revision that does not
//! exist and a prompt that did not exist at one, `promptd history`, MCP `prompts/get` and
//! `wit-get-prompts` with `NAME@REV`, and `promptd run --vs` against the local recording model.

use std::process::Output;

use rmcp::model::GetPromptRequestParams;
use serde_json::{Value, json};

use crate::support::git::{V1, V2, WORKING, review, versioned};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::mcp::{self, stdio};
use crate::support::process::promptd;

fn get(dir: &std::path::Path, args: &[&str]) -> Output {
    promptd()
        .arg("get")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `line` rendered with `language=Go`, and the rest of the body.
fn rendered(line: &str) -> String {
    format!("{}\nBe kind.\n", line.replace("{{ language }}", "Go"))
}

#[test]
fn get_name_at_rev_renders_the_prompt_as_it_was_at_a_tag_a_branch_or_a_commit() {
    let p = versioned();
    let dir = p.path();
    let arg = ["--arg", "language=Go"];
    let out = get(dir, &[&["review"][..], &arg].concat());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), rendered(WORKING));
    for (spec, line) in [
        ("review@v1".to_string(), V1),
        ("review@first".to_string(), V1),
        (format!("review@{}", &p.second[..7]), V2),
        (format!("review@{}", p.first), V1),
        ("review@main".to_string(), V2),
        ("review@HEAD~1".to_string(), V1),
    ] {
        let out = get(dir, &[&[spec.as_str()][..], &arg].concat());
        assert!(out.status.success(), "{spec}: {out:?}");
        assert_eq!(stdout(&out), rendered(line), "{spec}");
    }

    // A revision that does not exist names itself and the repository.
    let out = get(dir, &[&["review@no-such-tag"][..], &arg].concat());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("`no-such-tag` is not a revision of the git repository"),
        "{err}"
    );
    // A prompt added later does not exist at the first version.
    let out = get(dir, &["later@v1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "prompt `later` does not exist at `v1` (commit {})",
            &p.first[..7]
        )),
        "{err}"
    );
    let out = get(dir, &["later@main"]);
    assert_eq!(stdout(&out), "Added later.\n");
    // An argument is checked as for the working copy.
    let out = get(dir, &["review@v1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("language"), "{out:?}");

    // The envelope: the version hash is the file's at that commit, the name as asked for.
    let out = get(dir, &["review@v1", "--arg", "language=Go", "--json"]);
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["success"], true, "{env}");
    assert_eq!(env["metadata"]["promptName"], "review@v1");
    assert_eq!(
        env["data"]["prompt"]["version_hash"],
        promptd::registry::content_hash(review(V1).as_bytes())
    );
}

#[test]
fn history_lists_the_commits_that_changed_the_prompt_with_its_version_at_each() {
    let p = versioned();
    let out = promptd()
        .args(["history", "review", "--json"])
        .current_dir(p.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let h: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h["path"], "prompts/review.md");
    assert_eq!(h["truncated"], false);
    let hash = |line| promptd::registry::content_hash(review(line).as_bytes());
    assert_eq!(h["working"], hash(WORKING));
    let versions = h["versions"].as_array().unwrap();
    // The README-only commit between them is not listed.
    let listed: Vec<(&str, &str, &str)> = versions
        .iter()
        .map(|v| {
            (
                v["commit"].as_str().unwrap(),
                v["summary"].as_str().unwrap(),
                v["versionHash"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (p.second.as_str(), "Review carefully", hash(V2).as_str()),
            (p.first.as_str(), "First review prompt", hash(V1).as_str()),
        ]
    );
    assert_eq!(versions[0]["author"], "Ada Author");
    assert_eq!(versions[1]["date"], "2025-12-29 09:20");

    // Each listed hash is what `get NAME@REV` serves at that commit.
    for v in versions {
        let spec = format!("review@{}", v["short"].as_str().unwrap());
        let out = get(p.path(), &[&spec, "--arg", "language=x", "--json"]);
        let env: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(env["data"]["prompt"]["version_hash"], v["versionHash"]);
    }

    let out = promptd()
        .args(["history", "review"])
        .current_dir(p.path())
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "review (prompts/review.md), working copy {}",
            hash(WORKING)
        )),
        "{text}"
    );
    assert!(text.contains("Review carefully"), "{text}");

    // A prompt outside any repository says so.
    let lone = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(lone.path().join("prompts")).unwrap();
    std::fs::write(lone.path().join("prompts/x.md"), "x\n").unwrap();
    let out = promptd()
        .args(["history", "x"])
        .current_dir(lone.path())
        .env("GIT_CEILING_DIRECTORIES", lone.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("is not in a git repository"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_clients_ask_for_name_at_rev_in_prompts_get_and_wit_get_prompts() {
    let p = versioned();
    let s = stdio(p.path(), &["--no-builtin-prompts"]).await;
    let ask = |name: &str| {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = json!({"language": "Rust"}).as_object().cloned();
        s.client.get_prompt(params)
    };
    let got = mcp::within("prompts/get", ask("review@v1")).await.unwrap();
    let text = &got.messages[0].content.as_text().expect("text").text;
    assert_eq!(text, &V1.replace("{{ language }}", "Rust").add_line());
    let got = mcp::within("prompts/get", ask("review")).await.unwrap();
    let text = &got.messages[0].content.as_text().expect("text").text;
    assert!(text.contains("line by line"), "{text}");
    let err = mcp::within("prompts/get", ask("review@nope"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("`nope` is not a revision"), "{err}");
    let err = mcp::within("prompts/get", ask("later@v1"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("prompt `later` does not exist at `v1`"),
        "{err}"
    );

    let called = s
        .call(
            "wit-get-prompts",
            json!({"promptName": "review@first", "args": {"language": "Rust"}}),
        )
        .await
        .unwrap();
    let env = called.structured_content.clone().unwrap_or_else(|| {
        serde_json::from_str(&called.content[0].as_text().unwrap().text).unwrap()
    });
    assert_eq!(env["success"], true, "{env}");
    assert_eq!(env["metadata"]["promptName"], "review@first");
    assert_eq!(
        env["data"]["prompt"]["content"],
        V1.replace("{{ language }}", "Rust").add_line()
    );
    let called = s
        .call("wit-get-prompts", json!({"promptName": "later@v1"}))
        .await
        .unwrap();
    let env = called.structured_content.clone().unwrap_or_else(|| {
        serde_json::from_str(&called.content[0].as_text().unwrap().text).unwrap()
    });
    assert_eq!(env["success"], false, "{env}");
    assert_eq!(env["metadata"]["found"], false, "{env}");
    assert!(
        env["errors"][0]
            .as_str()
            .unwrap()
            .contains("does not exist at `v1`"),
        "{env}"
    );
    s.close().await;
}

trait AddLine {
    fn add_line(&self) -> String;
}

impl AddLine for String {
    /// The rendered body after the first line.
    fn add_line(&self) -> String {
        format!("{self}\nBe kind.\n")
    }
}

#[test]
fn run_vs_runs_both_variants_and_prints_both_answers_and_the_rendered_diff() {
    let p = versioned();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(LlmServer::start(vec![
        Reply::Answer("Answer to the working copy.".into()),
        Reply::Answer("Answer to v1.".into()),
    ]));
    let run = |extra: &[&str]| {
        promptd()
            .args(["run", "review", "--arg", "language=Go"])
            .args(extra)
            .env("LLM_BASE_URL", &llm.url)
            .env("LLM_MODEL", "compare-model")
            .current_dir(p.path())
            .output()
            .unwrap()
    };
    let out = run(&["--vs", "v1"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert_eq!(
        text,
        "=== review ===\nAnswer to the working copy.\n=== review@v1 ===\nAnswer to v1.\n\
         === rendered diff ===\n--- review\n+++ review@v1\n@@ -1,2 +1,2 @@\n\
         -Review this Go change line by line.\n+Review this Go change.\n Be kind.\n"
    );
    let sent = llm.first_message_texts();
    assert_eq!(sent, [rendered(WORKING), rendered(V1)]);

    let out = run(&["--vs", "v1", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let both: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(both["left"]["prompt"], "review");
    assert!(both["left"].get("revision").is_none(), "{both}");
    assert_eq!(both["right"]["prompt"], "review");
    assert_eq!(both["right"]["revision"], "v1");
    assert_eq!(
        both["right"]["versionHash"],
        promptd::registry::content_hash(review(V1).as_bytes())
    );
    assert!(
        both["renderedDiff"]
            .as_str()
            .unwrap()
            .contains("+Review this Go change.\n"),
        "{both}"
    );
    // Both runs are recorded with the prompt, the one at v1 saying so.
    let recorded = std::fs::read_dir(p.path().join(".promptd/runs/review"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(recorded, 4);

    // A bad revision fails before any model call, naming it.
    let before = llm.requests().len();
    let out = run(&["--vs", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("`nope` is not a revision"), "{out:?}");
    assert_eq!(llm.requests().len(), before);

    // More than one --vs: every variant runs, each is diffed against the first.
    let three = rt.block_on(LlmServer::start(vec![
        Reply::Answer("First.".into()),
        Reply::Answer("Second.".into()),
        Reply::Answer("Third.".into()),
    ]));
    let out = promptd()
        .args([
            "run",
            "review",
            "--arg",
            "language=Go",
            "--vs",
            "v1",
            "--vs",
            "main",
            "--json",
        ])
        .env("LLM_BASE_URL", &three.url)
        .env("LLM_MODEL", "compare-model")
        .current_dir(p.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answers: Vec<(&str, &str)> = all["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.get("revision").and_then(Value::as_str).unwrap_or(""),
                r["answer"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [("", "First."), ("v1", "Second."), ("main", "Third.")]
    );
    let diffs = all["renderedDiffs"].as_array().unwrap();
    assert_eq!(diffs.len(), 2, "{all}");
    assert_eq!(
        (diffs[1]["left"].as_str(), diffs[1]["right"].as_str()),
        (Some("review"), Some("review@main"))
    );
    assert!(
        diffs[1]["diff"]
            .as_str()
            .unwrap()
            .contains("+++ review@main\n"),
        "{all}"
    );
    // The first pair keeps the two-variant shape.
    assert_eq!(all["right"]["revision"], "v1");
    assert_eq!(all["renderedDiff"], diffs[0]["diff"]);
    let sent = three.first_message_texts();
    assert_eq!(
        sent,
        [rendered(WORKING), rendered(V1), rendered(V2)],
        "each variant sent its own render"
    );
    // Six variants are too many, refused before any model call.
    let many: Vec<&str> = ["--vs", "v1"].repeat(6);
    let out = run(&many);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(stderr(&out).contains("at most 5 variants"), "{out:?}");
}
