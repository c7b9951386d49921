//! Zero-config discovery of every dialect's folder, the flags and config keys that turn it and
//! the built-in user prompts off, per-folder dialects from config, hot reload of nested
//! folders, and one `prompts/list` + `prompts/get` per dialect over MCP stdio.

use crate::support::mcp::{self, stdio};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use promptd::library::{LibraryOptions, PromptLibrary};
use rmcp::model::GetPromptRequestParams;
use serde_json::{Map, Value, json};

/// The dialect fixtures, laid out as one repository.
fn repo() -> tempfile::TempDir {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dialects");
    let repo = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("vscode/.github", ".github"),
        ("claude/.claude", ".claude"),
        ("gemini/.gemini", ".gemini"),
        ("cursor/.cursor", ".cursor"),
        ("jinja/prompts", "prompts"),
    ] {
        copy_tree(&fixtures.join(from), &repo.path().join(to));
    }
    repo
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn open(cwd: &Path, f: impl FnOnce(&mut LibraryOptions)) -> PromptLibrary {
    let mut o = LibraryOptions {
        cwd: cwd.to_path_buf(),
        ..Default::default()
    };
    f(&mut o);
    PromptLibrary::open(o).unwrap()
}

/// Name → dialect of every user prompt served.
fn dialects(lib: &PromptLibrary) -> BTreeMap<String, String> {
    lib.snapshot()
        .registry
        .prompts()
        .filter(|p| p.category == promptd::registry::PromptCategory::User)
        .map(|p| (p.name.clone(), p.dialect.as_str().to_string()))
        .collect()
}

#[test]
fn every_dialect_folder_is_discovered_in_the_working_directory() {
    let repo = repo();
    let found = dialects(&open(repo.path(), |_| {}));
    for (name, dialect) in [
        ("store-review", "vscode"),
        ("plain-notes", "vscode"),
        ("tools:api-scaffold", "claude"),
        ("git:commit", "gemini"),
        ("onboard", "cursor"),
        ("greet", "jinja"),
        ("code_review", "jinja"),
    ] {
        assert_eq!(
            found.get(name).map(String::as_str),
            Some(dialect),
            "{name}: {found:?}"
        );
    }
    // Off by flag and by config.
    let off = dialects(&open(repo.path(), |o| o.no_discover = true));
    assert!(!off.contains_key("onboard"), "{off:?}");
    std::fs::write(
        repo.path().join(".ado-mcp-config.json"),
        r#"{"prompts": {"discover": false}}"#,
    )
    .unwrap();
    let off = dialects(&open(repo.path(), |_| {}));
    assert!(!off.contains_key("onboard"), "{off:?}");
}

/// VS Code reads only `*.prompt.md` from `.github/prompts`: a README or a partial beside the
/// prompts is not one, found by discovery or given with `--prompts`.
#[test]
fn a_vscode_prompt_folder_serves_only_prompt_md_files() {
    let repo = tempfile::tempdir().unwrap();
    let folder = repo.path().join(".github/prompts");
    std::fs::create_dir_all(folder.join("_partials")).unwrap();
    std::fs::write(folder.join("fix.prompt.md"), "Fix ${input:what}\n").unwrap();
    std::fs::write(folder.join("README.md"), "# Our prompts\n").unwrap();
    std::fs::write(folder.join("_partials/tone.md"), "Be brief.\n").unwrap();
    std::fs::write(folder.join("_partials/style.prompt.md"), "Style\n").unwrap();
    let expected: BTreeMap<String, String> = [("fix", "vscode"), ("_partials:style", "vscode")]
        .into_iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    let discovered = dialects(&open(repo.path(), |o| o.no_builtin_prompts = true));
    assert_eq!(discovered, expected);
    let elsewhere = tempfile::tempdir().unwrap();
    let given = dialects(&open(elsewhere.path(), |o| {
        o.no_builtin_prompts = true;
        o.prompt_dirs = vec![folder.clone()];
    }));
    assert_eq!(given, expected);
}

#[test]
fn a_dialect_folder_given_with_prompts_reads_the_same() {
    let repo = repo();
    let elsewhere = tempfile::tempdir().unwrap();
    let lib = open(elsewhere.path(), |o| {
        o.prompt_dirs = vec![repo.path().join(".claude/commands")];
    });
    let found = dialects(&lib);
    assert_eq!(found["tools:api-scaffold"], "claude");
    assert_eq!(found["review"], "claude");
    assert_eq!(found["review.prompt.md"], "claude");
}

#[test]
fn builtin_user_prompts_can_be_left_out_but_system_prompts_stay() {
    let empty = tempfile::tempdir().unwrap();
    let lib = open(empty.path(), |o| o.no_builtin_prompts = true);
    let snap = lib.snapshot();
    assert!(snap.registry.get("code_review").is_none());
    assert!(snap.registry.get("enhance_prompt").is_some());
    std::fs::write(
        empty.path().join(".ado-mcp-config.json"),
        r#"{"prompts": {"builtinPrompts": false}}"#,
    )
    .unwrap();
    let snap = open(empty.path(), |_| {}).snapshot();
    assert!(snap.registry.get("code_review").is_none());
    assert!(snap.registry.get("compose_frame").is_some());
}

#[test]
fn config_gives_a_folder_its_dialect() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("mine/sub")).unwrap();
    std::fs::write(dir.path().join("mine/sub/fix.md"), "Fix $ARGUMENTS now\n").unwrap();
    std::fs::write(
        dir.path().join(".ado-mcp-config.json"),
        r#"{"prompts": {"dialects": {"mine": "codex"}}}"#,
    )
    .unwrap();
    let lib = open(dir.path(), |o| {
        o.prompt_dirs = vec![dir.path().join("mine")]
    });
    let mut args = Map::new();
    args.insert("arguments".into(), json!("the bug"));
    let r = lib.render("sub:fix", &args).unwrap();
    assert_eq!(r.text, "Fix the bug now\n");

    std::fs::write(
        dir.path().join(".ado-mcp-config.json"),
        r#"{"prompts": {"dialects": {"mine": "klingon"}}}"#,
    )
    .unwrap();
    let e = PromptLibrary::open(LibraryOptions {
        cwd: dir.path().to_path_buf(),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(".ado-mcp-config.json") && e.contains("prompts.dialects.mine"),
        "{e}"
    );
}

#[test]
fn cli_list_json_shows_dialect_source_and_flags_turn_discovery_off() {
    let repo = repo();
    let run = |extra: &[&str]| {
        let v = crate::support::process::json_stdout(
            crate::support::process::promptd()
                .args(["list", "--json"])
                .args(extra)
                .current_dir(repo.path()),
        );
        v["data"]["prompts"].as_array().unwrap().clone()
    };
    let listed = run(&[]);
    let scaffold = listed
        .iter()
        .find(|p| p["name"] == "tools:api-scaffold")
        .expect("discovered");
    assert_eq!(scaffold["dialect"], "claude");
    assert_eq!(scaffold["source"], "tools/api-scaffold.md");
    assert_eq!(scaffold["directives"], json!(["shell", "file"]));
    assert_eq!(
        scaffold["toolMetadata"]["argument-hint"],
        "<resource> [version]"
    );
    let users = |l: &[Value]| l.iter().filter(|p| p["category"] == "user").count();
    let none = run(&["--no-discover", "--no-builtin-prompts"]);
    assert_eq!(users(&none), 0, "{none:?}");
    assert!(none.iter().any(|p| p["name"] == "enhance_prompt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_lists_and_gets_one_prompt_per_dialect() {
    let repo = repo();
    let s = stdio(repo.path(), &["--no-builtin-prompts"]).await;
    lists_and_gets_one_prompt_per_dialect(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_http_lists_and_gets_one_prompt_per_dialect() {
    let repo = repo();
    let s = mcp::http(repo.path(), &["--no-builtin-prompts"]).await;
    lists_and_gets_one_prompt_per_dialect(s).await;
}

/// Every dialect's prompt is listed with its dialect and source, and renders, over one session.
async fn lists_and_gets_one_prompt_per_dialect(s: mcp::Session) {
    let listed = mcp::within("prompts/list", s.client.list_all_prompts())
        .await
        .unwrap();
    let cases: [(&str, &str, Value, &str); 5] = [
        (
            "store-review",
            "vscode",
            json!({"app": "Pages", "market": "EU"}),
            "Review the listing of Pages for EU.\nSelected: ${selection}\n",
        ),
        (
            "tools:api-scaffold",
            "claude",
            json!({"arguments": "users v2"}),
            "Create the `users` resource (version v2, then $2)",
        ),
        (
            "git:commit",
            "gemini",
            json!({"args": "fix it"}),
            "Write a commit message for: fix it\nDiff: !{git diff --staged}\n",
        ),
        (
            "onboard",
            "cursor",
            json!({}),
            "explain $ARGUMENTS, ${file}",
        ),
        ("greet", "jinja", json!({"who": "Ada"}), "Hello Ada"),
    ];
    for (name, dialect, args, expected) in cases {
        let p = listed
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{name} listed"));
        let meta = p.meta.as_ref().expect("_meta");
        assert_eq!(meta.0["promptd/dialect"], dialect, "{name}");
        assert!(meta.0["promptd/source"].is_string(), "{name}");
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = args.as_object().cloned();
        let got = mcp::within("prompts/get", s.client.get_prompt(params))
            .await
            .unwrap();
        let text = &got.messages[0].content.as_text().expect("text").text;
        assert!(text.contains(expected), "{name}: {text:?}");
    }
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_reload_sees_a_new_file_in_a_new_nested_folder() {
    let repo = repo();
    let mut s = stdio(repo.path(), &["--no-builtin-prompts"]).await;
    let nested = repo.path().join(".claude/commands/deep/er");
    std::fs::create_dir_all(&nested).unwrap();
    // The folder appears first; the file written into it is picked up by the reload that
    // follows the new watch.
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::write(nested.join("x.md"), "Deep $ARGUMENTS\n").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let names: Vec<String> = s
            .client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        if names.iter().any(|n| n == "deep:er:x") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not served: {names:?}"
        );
        s.next_change("list_changed for the nested file").await;
    }
    s.close().await;
}

/// Each dialect folder as a symbolic link to a shared folder elsewhere (a dotfiles setup),
/// found by discovery and given with `--prompts`: the link's location decides the dialect.
#[test]
fn a_symlinked_dialect_folder_keeps_the_dialect_of_its_location() {
    let repo = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let folders = [
        (
            ".claude/commands",
            "run.md",
            "Run $ARGUMENTS now\n",
            "claude",
        ),
        (
            ".github/prompts",
            "fix.prompt.md",
            "Fix ${input:what}\n",
            "vscode",
        ),
        (
            ".gemini/commands",
            "plan.toml",
            "prompt = \"Plan {{args}}\"\n",
            "gemini",
        ),
        (".cursor/commands", "tidy.md", "Tidy up\n", "cursor"),
        (".codex/prompts", "ship.md", "Ship $ARGUMENTS\n", "codex"),
    ];
    for (folder, file, text, _) in folders {
        let target = shared.path().join(folder.replace(['.', '/'], "_"));
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join(file), text).unwrap();
        let link = repo.path().join(folder);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
    }
    let discovered = dialects(&open(repo.path(), |o| o.no_builtin_prompts = true));
    for (name, dialect) in [
        ("run", "claude"),
        ("fix", "vscode"),
        ("plan", "gemini"),
        ("tidy", "cursor"),
    ] {
        assert_eq!(
            discovered.get(name).map(String::as_str),
            Some(dialect),
            "{name}: {discovered:?}"
        );
    }
    let elsewhere = tempfile::tempdir().unwrap();
    for (folder, file, _, dialect) in folders {
        let lib = open(elsewhere.path(), |o| {
            o.prompt_dirs = vec![repo.path().join(folder)];
            o.no_builtin_prompts = true;
        });
        let name = file.split('.').next().unwrap();
        assert_eq!(
            dialects(&lib).get(name).map(String::as_str),
            Some(dialect),
            "--prompts {folder}"
        );
    }

    // `$ARGUMENTS` is an argument, and a render substitutes it, through the CLI too.
    let lib = open(repo.path(), |o| o.no_builtin_prompts = true);
    let run = lib.snapshot().registry.get("run").unwrap().clone();
    let names: Vec<&str> = run.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["arguments"], "{run:?}");
    let mut args = Map::new();
    args.insert("arguments".into(), json!("the tests"));
    assert_eq!(
        lib.render("run", &args).unwrap().text,
        "Run the tests now\n"
    );
    let link = repo.path().join(".claude/commands");
    let mut cmd = crate::support::process::promptd();
    cmd.args(["--no-builtin-prompts", "--prompts"])
        .arg(&link)
        .args(["get", "run", "--arg", "arguments=the tests"])
        .current_dir(elsewhere.path());
    let out = cmd.output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Run the tests now\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Files are still read only from inside the folder the link resolves to.
    let outside = elsewhere.path().join("outside.md");
    std::fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, link.join("escape.md")).unwrap();
    let lib = open(repo.path(), |o| o.no_builtin_prompts = true);
    assert!(
        lib.snapshot().registry.get("escape").is_none(),
        "a link out of the folder is not served"
    );
}

/// A `prompts/` folder loads its subfolders as command folders do (`area/review.md` is
/// `area:review`); `system/` holds system prompts and `partials/` or `_…` hold include files.
#[test]
fn a_prompts_folder_loads_its_subfolders_namespaced() {
    let repo = tempfile::tempdir().unwrap();
    let prompts = repo.path().join("prompts");
    for (rel, text) in [
        ("top.md", "Top {{ who }}\n"),
        (
            "billing/refund.md",
            "---\ndescription: Refund\n---\nRefund {{ order }}\n",
        ),
        (
            "billing/eu/vat.md",
            "{% include \"partials/footer.md\" %}VAT\n",
        ),
        ("partials/footer.md", "Footer. "),
        ("_shared/tone.md", "Be kind.\n"),
        ("billing/_draft.md", "Not yet.\n"),
        ("system/helper.md", "System helper\n"),
    ] {
        let path = prompts.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let lib = open(repo.path(), |o| o.no_builtin_prompts = true);
    let names: Vec<String> = dialects(&lib).into_keys().collect();
    assert_eq!(names, ["billing:eu:vat", "billing:refund", "top"]);
    let snap = lib.snapshot();
    let system = snap.registry.get("helper").expect("system prompt");
    assert_eq!(system.category, promptd::registry::PromptCategory::System);
    let mut args = Map::new();
    args.insert("order".into(), json!("A-1"));
    assert_eq!(
        lib.render("billing:refund", &args).unwrap().text,
        "Refund A-1\n"
    );
    assert_eq!(
        lib.render("billing:eu:vat", &Map::new()).unwrap().text,
        "Footer. VAT\n"
    );

    // A new file in a new nested folder is taken on reload.
    let deep = prompts.join("billing/us/tax");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("sales.md"), "Sales tax\n").unwrap();
    let outcome = lib.reload();
    assert!(outcome.changed, "{:?}", outcome.problems);
    assert_eq!(
        lib.render("billing:us:tax:sales", &Map::new())
            .unwrap()
            .text,
        "Sales tax\n"
    );
    // The watcher watches the nested folders of a prompts folder too.
    let targets = promptd::watch::watch_targets(&lib);
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap();
    assert!(targets.contains(&canon(&deep)), "{targets:?}");
}

/// Dotprompt and Prompty files in a repository's `prompts/` (Genkit's default prompt folder),
/// OpenCode commands in `.opencode/command/` and `.opencode/commands/` (OpenCode reads both),
/// found without `--prompts` and the same when the folder is given; a Dotprompt partial
/// (`_x.prompt`) is not a prompt but renders where `{{> x}}` names it.
#[test]
fn dotprompt_prompty_and_opencode_files_are_discovered() {
    let repo = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = repo.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("prompts/hello.prompt", "Hello {{name}}!\n{{> footer}}\n");
    write("prompts/hello.brief.prompt", "Hi {{name}}.\n");
    write("prompts/_footer.prompt", "-- sent by {{name}}'s assistant");
    write(
        "prompts/ask.prompty",
        "---\ninputs:\n  q: {kind: string}\n---\nuser:\n{{ q }}\n",
    );
    write("prompts/notes.md", "Notes on {{ topic }}\n");
    write(".opencode/command/fix.md", "Fix $1 then $2\n");
    write(".opencode/commands/ops/deploy.md", "Deploy $ARGUMENTS\n");
    let expected: BTreeMap<String, String> = [
        ("hello", "dotprompt"),
        ("hello.brief", "dotprompt"),
        ("ask", "prompty"),
        ("notes", "jinja"),
        ("fix", "opencode"),
        ("ops:deploy", "opencode"),
    ]
    .into_iter()
    .map(|(n, d)| (n.to_string(), d.to_string()))
    .collect();
    let lib = open(repo.path(), |o| o.no_builtin_prompts = true);
    assert_eq!(dialects(&lib), expected);

    let mut args = Map::new();
    args.insert("name".into(), json!("Ada"));
    let r = lib.render("hello", &args).unwrap();
    assert_eq!(r.text, "Hello Ada!\n-- sent by Ada's assistant");
    let mut args = Map::new();
    args.insert("arguments".into(), json!("the build \"and tests\" today"));
    assert_eq!(
        lib.render("fix", &args).unwrap().text,
        "Fix the then build and tests today"
    );
    assert_eq!(
        lib.render("ops:deploy", &args).unwrap().text,
        "Deploy the build \"and tests\" today"
    );
    let mut args = Map::new();
    args.insert("q".into(), json!("Why?"));
    let r = lib.render("ask", &args).unwrap();
    assert_eq!(r.text, "user:\nWhy?\n");
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.messages[0].role, "user");
    assert_eq!(r.messages[0].text, "Why?");

    // The same folders given with `--prompts`.
    let elsewhere = tempfile::tempdir().unwrap();
    let given = open(elsewhere.path(), |o| {
        o.no_builtin_prompts = true;
        o.prompt_dirs = vec![
            repo.path().join("prompts"),
            repo.path().join(".opencode/command"),
            repo.path().join(".opencode/commands"),
        ];
    });
    assert_eq!(dialects(&given), expected);
}

/// A Dotprompt or Prompty file whose body does not compile is reported at its file line and
/// column, and the others are served.
#[test]
fn a_template_that_does_not_compile_names_its_file_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.prompt"),
        "---\nmodel: x\n---\nfine\n{{#if ok}}\nnever closed\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.prompty"),
        "---\nname: bad\n---\nsystem:\n{% for x in xs %}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("pico.prompt"),
        "---\ninput:\n  schema:\n    when(date): string\n---\n{{when}}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("good.prompt"), "ok {{x}}\n").unwrap();
    let lib = open(dir.path(), |o| {
        o.no_builtin_prompts = true;
        o.prompt_dirs = vec![dir.path().to_path_buf()];
    });
    assert_eq!(dialects(&lib).keys().collect::<Vec<_>>(), ["good"]);
    let errors: Vec<String> = promptd::lint::check(&lib.snapshot())
        .iter()
        .map(|d| d.to_string())
        .collect();
    let joined = errors.join("\n");
    assert!(
        joined.contains("bad.prompt:5:1:") && joined.contains("`{{#if}}` is never closed"),
        "{joined}"
    );
    assert!(
        joined.contains("bad.prompty:5:18:") && joined.contains("unexpected end of input"),
        "{joined}"
    );
    assert!(
        joined.contains("pico.prompt:3:")
            && joined.contains("parenthetical types must be 'object' or 'array', got: date"),
        "{joined}"
    );
}

/// A folder configured as `dotprompt` is read recursively, as Genkit reads its prompt folder:
/// subfolders namespace the names, and a partial in a subfolder is `{{> sub/name}}`.
#[test]
fn a_folder_configured_as_dotprompt_is_read_recursively() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("genkit/mail")).unwrap();
    std::fs::write(
        dir.path().join("genkit/mail/welcome.prompt"),
        "Welcome {{who}}!\n{{> mail/sig}}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("genkit/mail/_sig.prompt"), "Regards").unwrap();
    std::fs::write(
        dir.path().join(".ado-mcp-config.json"),
        r#"{"prompts": {"dialects": {"genkit": "dotprompt"}}}"#,
    )
    .unwrap();
    let lib = open(dir.path(), |o| {
        o.no_builtin_prompts = true;
        o.prompt_dirs = vec![dir.path().join("genkit")];
    });
    let found = dialects(&lib);
    assert_eq!(found.keys().collect::<Vec<_>>(), ["mail:welcome"]);
    let mut args = Map::new();
    args.insert("who".into(), json!("Ada"));
    let r = lib.render("mail:welcome", &args).unwrap();
    assert_eq!(r.text, "Welcome Ada!\nRegards");
}
