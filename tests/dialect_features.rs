//! Shadowing, `promptd test` and completion for prompts of every dialect: the features that work
//! on promptd's own prompts work the same on the files of other tools.

use std::path::PathBuf;

use crate::support;
use crate::support::mcp::{self, stdio};
use promptd::library::GetPromptsRequest;
use rmcp::model::{ArgumentInfo, CompleteRequestParams, Reference};
use serde_json::{Map, json};

/// One prompt per dialect: (folder inside a root's repository, file, name, arguments, text
/// rendered with those arguments by the file of the `which` copy).
fn files(which: &str) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            ".github/prompts",
            "review.prompt.md",
            format!("Review ${{input:target:what to review}} ({which})\n"),
        ),
        (
            ".claude/commands",
            "review.md",
            format!("Review $ARGUMENTS ({which})\n"),
        ),
        (
            ".gemini/commands",
            "review.toml",
            format!("description = \"Review\"\nprompt = \"Review {{{{args}}}} ({which})\"\n"),
        ),
        (
            ".cursor/commands",
            "review.md",
            format!("Review the open file ({which})\n"),
        ),
    ]
}

/// The dialect folder of each kind, as roots, in a fresh repository with copy `which`.
fn repository(which: &str) -> (tempfile::TempDir, Vec<PathBuf>) {
    let repo = tempfile::tempdir().unwrap();
    let mut roots = Vec::new();
    for (folder, file, text) in files(which) {
        let dir = repo.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
        roots.push(dir);
    }
    (repo, roots)
}

/// The argument each dialect's `review` prompt takes, if any.
fn argument(folder: &str) -> Option<(&'static str, &'static str)> {
    match folder {
        ".github/prompts" => Some(("target", "src/lib.rs")),
        ".claude/commands" => Some(("arguments", "src/lib.rs")),
        ".gemini/commands" => Some(("args", "src/lib.rs")),
        _ => None,
    }
}

#[test]
fn a_later_folder_shadows_an_earlier_one_in_every_dialect() {
    let (_a, first) = repository("first");
    let (_b, second) = repository("second");
    for (i, (folder, _, _)) in files("x").into_iter().enumerate() {
        let roots = [first[i].clone(), second[i].clone()];
        let lib = support::library(&roots, false, None, "2026-01-15");
        let mut args = Map::new();
        if let Some((k, v)) = argument(folder) {
            args.insert(k.into(), json!(v));
        }
        let resp = lib.get_prompts(&GetPromptsRequest {
            prompt_name: Some("review".into()),
            args: Some(args),
            include_content: true,
            ..Default::default()
        });
        let v = serde_json::to_value(&resp).unwrap();
        let content = v["data"]["prompt"]["content"].as_str().unwrap_or_default();
        assert!(content.contains("(second)"), "{folder}: {v}");
        let snap = lib.snapshot();
        assert!(
            snap.registry
                .shadowed()
                .iter()
                .any(|s| format!("{s:?}").contains("review")),
            "{folder}: the shadowed file is reported"
        );
    }
}

#[test]
fn promptd_test_snapshots_prompts_of_every_dialect() {
    let (repo, _) = repository("only");
    let cases = repo.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for (folder, _, _) in files("only") {
        let args = argument(folder)
            .map(|(k, v)| format!("{{ {k}: {v} }}"))
            .unwrap_or_else(|| "{}".into());
        let prompt = "review";
        let file = cases.join(format!(
            "{}.yaml",
            folder.trim_start_matches('.').replace('/', "_")
        ));
        std::fs::write(
            &file,
            format!("prompt: {prompt}\ncases:\n  - name: all\n    args: {args}\n    contains: [\"(only)\"]\n"),
        )
        .unwrap();
        let root = repo.path().join(folder);
        let run = |accept: bool| {
            let mut cmd = support::process::promptd();
            cmd.args(["--no-discover", "--no-builtin-prompts", "--prompts"])
                .arg(&root)
                .args(["test", "--cases"])
                .arg(&cases)
                .current_dir(repo.path());
            if accept {
                cmd.arg("--accept");
            }
            cmd.output().unwrap()
        };
        let first = run(true);
        let text = String::from_utf8_lossy(&first.stdout);
        assert!(first.status.success(), "{folder}: {text}");
        let again = run(false);
        let text = String::from_utf8_lossy(&again.stdout);
        assert!(again.status.success(), "{folder}: {text}");
        assert!(text.contains("1 passed, 0 failed"), "{folder}: {text}");
        let snapshot = cases.join("snapshots/review@all.snap");
        let snap = std::fs::read_to_string(&snapshot).unwrap();
        assert!(snap.contains("Review") && snap.contains("(only)"), "{snap}");
        if let Some((_, v)) = argument(folder) {
            assert!(snap.contains(v), "{folder}: {snap}");
        }
        std::fs::remove_file(&file).unwrap();
        std::fs::remove_dir_all(cases.join("snapshots")).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_answers_for_the_arguments_of_every_dialect() {
    // One repository, each dialect's file under its own name (the same name in two discovered
    // folders would shadow).
    let repo = tempfile::tempdir().unwrap();
    for (folder, file, text) in files("only") {
        let dir = repo.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(file.replacen("review", &format!("review-{}", &folder[1..4]), 1)),
            text,
        )
        .unwrap();
    }
    let s = stdio(repo.path(), &["--no-builtin-prompts"]).await;
    for (folder, _, _) in files("only") {
        let Some((arg, _)) = argument(folder) else {
            continue;
        };
        // Each dialect's review prompt is listed under its own (qualified) name.
        let listed = mcp::within("prompts/list", s.client.list_all_prompts())
            .await
            .unwrap();
        let names: Vec<&str> = listed
            .iter()
            .filter(|p| {
                p.arguments
                    .as_ref()
                    .is_some_and(|a| a.iter().any(|x| x.name == arg))
            })
            .map(|p| p.name.as_str())
            .collect();
        assert!(!names.is_empty(), "{folder}: a prompt takes `{arg}`");
        for name in names {
            let params = CompleteRequestParams::new(
                Reference::for_prompt(name),
                ArgumentInfo::new(arg, "s"),
            );
            let r = mcp::within("completion/complete", s.client.complete(params))
                .await
                .unwrap_or_else(|e| panic!("{folder}: {name}.{arg}: {e}"));
            // Free-text arguments have nothing to suggest, and say so.
            assert!(r.completion.values.is_empty(), "{folder}: {r:?}");
            assert_eq!(r.completion.has_more, Some(false), "{folder}: {r:?}");
        }
    }
    s.close().await;
}
