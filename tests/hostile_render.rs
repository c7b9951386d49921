//! Hostile input against rendering, prompt files and hot reload: templates that try to build
//! gigabytes, huge, sparse and special files in a prompt folder, and saves that would make a
//! reader see a broken or partial prompt. Each asserts a clear error (the prompt or file and
//! the limit's config key), bounded time and memory, and that everything else is still served.

use crate::support;
use crate::support::mcp::{self, get_text, within};
use crate::support::process::{promptd, run_bounded};

use std::path::Path;
use std::time::{Duration, Instant};

use promptd::library::{LibraryOptions, PromptLibrary};
use promptd::render::{Clock, RenderError};
use rmcp::model::GetPromptRequestParams;
use serde_json::{Map, json};

const NOW: &str = "2026-01-15T12:00:00Z";
/// Peak RSS a command over a hostile folder may reach.
const MAX_RSS_MIB: f64 = 200.0;
const TIMEOUT: Duration = Duration::from_secs(30);

fn open(dir: &Path) -> PromptLibrary {
    support::library(&[dir.to_path_buf()], false, None, NOW)
}

fn render(lib: &PromptLibrary, name: &str) -> Result<String, RenderError> {
    lib.render(name, &Map::new()).map(|r| r.text)
}

/// Asserts that rendering `body` fails with a size-limit error naming the prompt and `key`.
fn assert_too_large(body: &str, key: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bomb.md"), body).unwrap();
    std::fs::write(dir.path().join("ok.md"), "fine {{ 1 + 1 }}").unwrap();
    let lib = open(dir.path());
    let started = Instant::now();
    let err = render(&lib, "bomb").expect_err(body);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{body}: {:?}",
        started.elapsed()
    );
    let msg = err.to_string();
    assert!(
        matches!(err, RenderError::TooLarge { .. }) && !err.is_caller_error(),
        "{body}: {err:?}"
    );
    assert!(
        msg.contains("bomb") && msg.contains(key),
        "{body}: `{msg}` names the prompt and `{key}`"
    );
    assert_eq!(render(&lib, "ok").unwrap(), "fine 2");
}

#[test]
fn templates_cannot_build_values_over_the_render_budget() {
    let max = "limits.maxRenderBytes";
    let total = "limits.maxRenderTotalBytes";
    let cases = [
        // The examples of the report.
        (
            r#"{% set a = "x" * 100000000 %}{% set b = a ~ a %}{% set c = b ~ b %}{% set d = c ~ c %}{{ d }}"#,
            max,
        ),
        (
            r#"{% for i in range(100) %}{{ "x" * 100000000 }}{% endfor %}"#,
            max,
        ),
        // `~` doubling from a string under the limit.
        (
            r#"{% set a = "x" * 1000000 %}{% set b = a ~ a %}{% set c = b ~ b %}{% set d = c ~ c %}{{ d|length }}"#,
            max,
        ),
        // `+` on strings and on sequences, sequence repetition.
        (
            r#"{% set a = "x" * 3000000 %}{% set b = a + a %}{{ b|length }}"#,
            max,
        ),
        (r#"{% set s = [1] * 1000000 %}{{ s|length }}"#, max),
        (
            r#"{% set s = [1] * 150000 %}{% set t = s + s %}{{ t|length }}"#,
            max,
        ),
        // Captured blocks.
        (
            r#"{% set a %}{% for i in range(100000) %}{{ "x" * 1000 }}{% endfor %}{% endset %}{{ a|length }}"#,
            max,
        ),
        // The rendered text itself.
        (
            r#"{% for i in range(10000) %}{{ "x" * 1000 }}{% endfor %}"#,
            max,
        ),
        // Many values each under the limit.
        (
            r#"{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = ns.l + ["x" * 3000000 ~ i] %}{% endfor %}{{ ns.l|length }}"#,
            total,
        ),
        // Amplifying filters.
        (
            r#"{{ ("x" * 1000000)|replace("", "yyyyyyyy")|length }}"#,
            max,
        ),
        (r#"{{ ("x\n" * 100000)|indent(1000)|length }}"#, max),
        (r#"{{ (["x" * 1000000] * 10)|join(",")|length }}"#, max),
        (r#"{{ ("%s" * 100)|format("x" * 1000000)|length }}"#, max),
        (
            r#"{{ (["x" * 1000] * 3000)|tojson(indent=2)|length }}"#,
            max,
        ),
        (r#"{{ (["x" * 1000] * 3000)|pprint|length }}"#, max),
        (r#"{{ (["x" * 1000] * 5000)|string|length }}"#, max),
        // Stringification of a filter argument.
        (r#"{{ (["x" * 1000] * 5000)|upper|length }}"#, max),
    ];
    for (body, key) in cases {
        assert_too_large(body, key);
    }
}

#[test]
fn honest_templates_are_unchanged_by_the_bounded_filters() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"{{ "a-b"|replace("-", "+") }}|{{ "x\ny"|indent(2) }}|{{ [1, 2]|join(",") }}|{{ "%s=%d"|format("n", 3) }}|{{ {"k": [1]}|tojson }}|{{ [1]|string }}|{{ "ab" ~ 1 }}"#;
    std::fs::write(dir.path().join("honest.md"), body).unwrap();
    let lib = open(dir.path());
    assert_eq!(
        render(&lib, "honest").unwrap(),
        "a+b|x\n  y|1,2|n=3|{\"k\": [1]}|[1]|ab1"
    );
}

#[test]
fn plain_substitution_is_bounded_too() {
    let dir = tempfile::tempdir().unwrap();
    // Not Jinja (`{{#if}}`), so served by plain substitution.
    let body = format!("{{{{#if x}}}}{}", "{{ big }}".repeat(2000));
    std::fs::write(
        dir.path().join("plain.md"),
        format!("---\narguments:\n  - name: big\n---\n{body}"),
    )
    .unwrap();
    let lib = open(dir.path());
    let mut args = Map::new();
    args.insert("big".into(), json!("y".repeat(10_000)));
    let err = lib.render("plain", &args).unwrap_err();
    assert!(err.to_string().contains("limits.maxRenderBytes"), "{err}");
    args.insert("big".into(), json!("y"));
    assert!(lib.render("plain", &args).is_ok());
}

/// A folder with the report's two bombs and an honest prompt.
fn bomb_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("doubling.md"),
        r#"{% set a = "x" * 100000000 %}{% set b = a ~ a %}{% set c = b ~ b %}{% set d = c ~ c %}{% set e = d ~ d %}{% set f = e ~ e %}{{ f }}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("repeat.md"),
        r#"{% for i in range(100) %}{{ "x" * 100000000 }}{% endfor %}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("ok.md"), "still served\n").unwrap();
    dir
}

#[test]
fn check_and_get_over_template_bombs_stay_small() {
    let dir = bomb_folder();
    let folder = dir.path().to_str().unwrap();
    let mut cmd = promptd();
    cmd.args(["--prompts", folder, "check"])
        .current_dir(dir.path());
    let run = run_bounded(cmd, b"", TIMEOUT);
    assert!(run.exited(), "{run:?}");
    assert_eq!(run.code(), Some(1), "{run:?}");
    for name in ["doubling.md", "repeat.md"] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.contains(name) && l.contains("limits.maxRenderBytes")),
            "check names {name} and the limit:\n{}",
            run.stdout
        );
    }
    assert!(run.peak_rss_mib < MAX_RSS_MIB, "check: {run:?}");
    eprintln!(
        "check over bombs: {:?}, peak RSS {:.0} MiB",
        run.elapsed, run.peak_rss_mib
    );

    for name in ["doubling", "repeat"] {
        let mut cmd = promptd();
        cmd.args(["--prompts", folder, "get", name])
            .current_dir(dir.path());
        let run = run_bounded(cmd, b"", TIMEOUT);
        assert!(run.exited(), "{run:?}");
        assert_eq!(run.code(), Some(1), "{run:?}");
        assert!(
            run.stderr.contains(name) && run.stderr.contains("limits.maxRenderBytes"),
            "{run:?}"
        );
        assert!(run.peak_rss_mib < MAX_RSS_MIB, "get {name}: {run:?}");
        eprintln!(
            "get {name}: {:?}, peak RSS {:.0} MiB",
            run.elapsed, run.peak_rss_mib
        );
    }
    let mut cmd = promptd();
    cmd.args(["--prompts", folder, "get", "ok"])
        .current_dir(dir.path());
    let run = run_bounded(cmd, b"", TIMEOUT);
    assert_eq!(run.code(), Some(0), "{run:?}");
    assert!(run.stdout.contains("still served"), "{run:?}");
}

#[tokio::test]
async fn the_server_answers_a_bomb_with_an_error_and_keeps_serving() {
    let dir = bomb_folder();
    let s = mcp::stdio(dir.path(), &["--prompts", dir.path().to_str().unwrap()]).await;
    let err = within(
        "get doubling",
        s.client.get_prompt(GetPromptRequestParams::new("doubling")),
    )
    .await
    .expect_err("a bomb is an error");
    let msg = err.to_string();
    assert!(
        msg.contains("doubling") && msg.contains("limits.maxRenderBytes"),
        "{msg}"
    );
    let ok = within(
        "get ok",
        s.client.get_prompt(GetPromptRequestParams::new("ok")),
    )
    .await
    .expect("still serving");
    assert_eq!(
        ok.messages[0].content.as_text().unwrap().text,
        "still served\n"
    );
    s.close().await;
}

#[test]
fn huge_sparse_and_special_files_are_reported_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ok.md"), "still served\n").unwrap();
    std::fs::write(d.join("big.md"), "x".repeat(50 << 20)).unwrap();
    std::fs::File::create(d.join("sparse.md"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.md")).unwrap();
    let fifo = d.join("fifo.md");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    // An include of the FIFO must fail, not wait for a writer.
    std::fs::write(d.join("inc.md"), "{% include \"fifo.md\" %}").unwrap();
    let folder = d.to_str().unwrap();

    let mut cmd = promptd();
    cmd.args(["--prompts", folder, "check"]).current_dir(d);
    let run = run_bounded(cmd, b"", TIMEOUT);
    assert!(run.exited(), "{run:?}");
    assert!(run.peak_rss_mib < MAX_RSS_MIB, "check: {run:?}");
    let out = format!("{}{}", run.stdout, run.stderr);
    for (name, size) in [("big.md", 50u64 << 20), ("sparse.md", 3 << 30)] {
        assert!(
            out.lines().any(|l| l.contains(name)
                && l.contains(&size.to_string())
                && l.contains("limits.maxPromptFileBytes")),
            "{name} reported with its size and the limit:\n{out}"
        );
    }
    assert!(
        out.contains("fifo.md"),
        "the include names the FIFO:\n{out}"
    );
    eprintln!(
        "check over huge files: {:?}, peak RSS {:.0} MiB",
        run.elapsed, run.peak_rss_mib
    );

    let mut cmd = promptd();
    cmd.args(["--prompts", folder, "get", "ok"]).current_dir(d);
    let run = run_bounded(cmd, b"", TIMEOUT);
    assert_eq!(run.code(), Some(0), "{run:?}");
    assert!(run.stdout.contains("still served"), "{run:?}");
    assert!(run.peak_rss_mib < MAX_RSS_MIB, "get: {run:?}");
}

#[test]
fn an_oversized_config_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("big.json");
    std::fs::File::create(&config)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let err = PromptLibrary::open_with_roots(
        LibraryOptions {
            config_path: Some(config),
            cwd: dir.path().to_path_buf(),
            clock: Clock::parse(NOW).unwrap(),
            ..Default::default()
        },
        Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("big.json") && err.contains("limits.maxPromptFileBytes"),
        "{err}"
    );
}

#[test]
fn a_binary_save_keeps_the_last_good_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.md");
    std::fs::write(&file, "good {{ 1 }}\n").unwrap();
    let lib = open(dir.path());
    assert_eq!(render(&lib, "p").unwrap(), "good 1\n");
    std::fs::write(&file, b"\xff\xfe\x00garbage\x89PNG").unwrap();
    let outcome = lib.reload();
    assert_eq!(render(&lib, "p").unwrap(), "good 1\n", "last good version");
    assert!(
        outcome.problems.iter().any(|p| p.contains("p.md")
            && p.contains("UTF-8")
            && p.contains("keeping the last good version")),
        "{:?}",
        outcome.problems
    );
    // A file grown past the cap keeps its last good version too.
    std::fs::write(&file, "x".repeat(2 << 20)).unwrap();
    let outcome = lib.reload();
    assert_eq!(render(&lib, "p").unwrap(), "good 1\n");
    assert!(
        outcome
            .problems
            .iter()
            .any(|p| p.contains("p.md") && p.contains("limits.maxPromptFileBytes")),
        "{:?}",
        outcome.problems
    );
}

#[test]
fn an_emptied_file_is_taken_only_once_it_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.md");
    std::fs::write(&file, "good\n").unwrap();
    let lib = open(dir.path());
    std::fs::write(&file, "").unwrap();
    let outcome = lib.reload();
    assert!(outcome.settling, "{outcome:?}");
    assert_eq!(render(&lib, "p").unwrap(), "good\n", "not replaced at once");
    std::thread::sleep(promptd::registry::EMPTY_GRACE + Duration::from_millis(100));
    let outcome = lib.reload();
    assert!(!outcome.settling, "{outcome:?}");
    assert_eq!(render(&lib, "p").unwrap(), "", "served as what it is");
}

#[tokio::test]
async fn a_recreated_prompt_folder_is_watched_again() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("prompts");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.md"), "A\n").unwrap();
    let s = mcp::stdio(parent.path(), &["--prompts", dir.to_str().unwrap()]).await;
    assert_eq!(get_text(&s, "a").await.unwrap(), "A\n");

    std::fs::remove_dir_all(&dir).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while get_text(&s, "a").await.is_ok() {
        assert!(Instant::now() < deadline, "deleted prompts go away");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("b.md"), "B\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = get_text(&s, "b").await {
            assert_eq!(text, "B\n");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a file in the recreated folder is served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And later edits in it are seen too.
    std::fs::write(dir.join("c.md"), "C\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while get_text(&s, "c").await.is_err() {
        assert!(Instant::now() < deadline, "the recreated folder is watched");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_see_a_partial_file_during_continuous_writes() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.md");
    // Each version is long enough that a rewrite in place takes two writes.
    let version = |n: usize| format!("version {n}\n{}\nend {n}\n", "body line\n".repeat(400));
    std::fs::write(&file, version(0)).unwrap();
    let s = mcp::stdio(dir.path(), &["--prompts", dir.path().to_str().unwrap()]).await;
    assert_eq!(get_text(&s, "live").await.unwrap(), version(0));

    const WRITES: usize = 300;
    let writer_file = file.clone();
    let writer = std::thread::spawn(move || {
        // The longest time the file stood empty: a writer starved for longer than the grace
        // period has emptied the file as far as anyone can tell, and then serving it empty is
        // the documented rule, not a torn read.
        let mut longest_empty = Duration::ZERO;
        for n in 1..=WRITES {
            let text = version(n);
            let (a, b) = text.split_at(text.len() / 2);
            // Truncate + write in place, in two writes, as a slow editor does.
            let emptied = Instant::now();
            let mut f = std::fs::File::create(&writer_file).unwrap();
            f.write_all(a.as_bytes()).unwrap();
            longest_empty = longest_empty.max(emptied.elapsed());
            f.flush().unwrap();
            std::thread::sleep(Duration::from_millis(1));
            f.write_all(b.as_bytes()).unwrap();
            drop(f);
            std::thread::sleep(Duration::from_millis(4));
        }
        longest_empty
    });
    let versions: std::collections::HashSet<String> = (0..=WRITES).map(version).collect();
    let (mut answers, mut empty, mut unknown, mut partial) = (0, 0, 0, 0);
    while !writer.is_finished() {
        match get_text(&s, "live").await {
            Ok(t) if t.is_empty() => empty += 1,
            Ok(t) if !versions.contains(&t) => partial += 1,
            Ok(_) => {}
            Err(_) => unknown += 1,
        }
        answers += 1;
    }
    let longest_empty = writer.join().unwrap();
    eprintln!(
        "{answers} answers during {WRITES} rewrites: {empty} empty, {unknown} unknown, \
         {partial} partial; the file stood empty for at most {longest_empty:?}"
    );
    assert!(answers >= 100, "enough answers: {answers}");
    assert_eq!((unknown, partial), (0, 0), "of {answers} answers");
    if longest_empty < promptd::registry::EMPTY_GRACE / 2 {
        assert_eq!(empty, 0, "of {answers} answers");
    }
    // Once the writes stop, the last version is served.
    let deadline = Instant::now() + Duration::from_secs(10);
    while get_text(&s, "live").await.ok() != Some(version(WRITES)) {
        assert!(Instant::now() < deadline, "the last version is taken");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.close().await;
}

#[test]
fn render_limits_come_from_the_config_and_follow_its_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"limits": {"maxRenderBytes": 1000}}"#).unwrap();
    std::fs::write(dir.path().join("p.md"), r#"{{ "x" * 2000 }}"#).unwrap();
    let lib = support::library(&[dir.path().to_path_buf()], false, Some(&config), NOW);
    let err = render(&lib, "p").unwrap_err().to_string();
    assert!(err.contains("limits.maxRenderBytes` (1000 bytes)"), "{err}");

    std::fs::write(&config, r#"{"limits": {"maxRenderBytes": 4000}}"#).unwrap();
    lib.reload();
    assert_eq!(render(&lib, "p").unwrap().len(), 2000);

    // A broken limits section keeps the last good config, and names the key at fault.
    std::fs::write(&config, r#"{"limits": {"maxRenderBytes": "big"}}"#).unwrap();
    let outcome = lib.reload();
    assert!(
        outcome
            .problems
            .iter()
            .any(|p| p.contains("config.json") && p.contains("limits")),
        "{:?}",
        outcome.problems
    );
    assert_eq!(render(&lib, "p").unwrap().len(), 2000);
}

/// `prompts/get` of `name` with `args`: the text, or the JSON-RPC error's code and message.
async fn get_with(
    s: &mcp::Session,
    name: &str,
    args: serde_json::Value,
) -> Result<String, (i32, String)> {
    let params =
        GetPromptRequestParams::new(name).with_arguments(args.as_object().unwrap().clone());
    match within("prompts/get", s.client.get_prompt(params)).await {
        Ok(r) => Ok(r.messages[0].content.as_text().unwrap().text.clone()),
        Err(rmcp::ServiceError::McpError(e)) => Err((e.code.0, e.message.to_string())),
        Err(e) => panic!("{name}: {e}"),
    }
}

/// A `wit-get-prompts` result's envelope: its structured content, else its JSON text.
fn envelope_of(out: &rmcp::model::CallToolResult) -> serde_json::Value {
    out.structured_content.clone().unwrap_or_else(|| {
        let text = &out.content[0].as_text().expect("text content").text;
        serde_json::from_str(text).unwrap()
    })
}

#[tokio::test]
async fn a_render_made_too_large_by_the_callers_arguments_is_the_callers_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join(".ado-mcp-config.json"),
        r#"{"limits": {"maxRenderBytes": 1000}}"#,
    )
    .unwrap();
    let declared = "---\narguments:\n  - name: text\n";
    std::fs::write(
        root.join("echo.md"),
        format!("{declared}---\nYou said: {{{{ text }}}}\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("plain.md"),
        format!("{declared}engine: plain\n---\nYou said: {{{{text}}}}\n"),
    )
    .unwrap();
    // Too large on its own, whatever the caller gives.
    std::fs::write(
        root.join("big.md"),
        format!("{declared}---\n{{{{ text }}}}{{{{ \"x\" * 2000 }}}}\n"),
    )
    .unwrap();
    let s = mcp::stdio(
        root,
        &["--prompts", root.to_str().unwrap(), "--no-builtin-prompts"],
    )
    .await;
    let large = json!({"text": "y".repeat(5000)});
    for name in ["echo", "plain"] {
        let (code, message) = get_with(&s, name, large.clone()).await.unwrap_err();
        assert_eq!(code, -32602, "{name}: {message}");
        assert!(
            message.contains("argument `text`")
                && message.contains("limits.maxRenderBytes` (1000 bytes)"),
            "{name}: {message}"
        );
        let out = s
            .call(
                "wit-get-prompts",
                json!({"promptName": name, "args": large.clone()}),
            )
            .await
            .expect("a tool result");
        assert_eq!(out.is_error, Some(true), "{name}: {out:?}");
        let envelope = envelope_of(&out);
        assert_eq!(envelope["success"], false, "{envelope}");
        let error = envelope["errors"][0].as_str().unwrap();
        assert!(
            error.contains("argument `text`")
                && error.contains("limits.maxRenderBytes")
                && !error.contains("Failed to load"),
            "{name}: {error}"
        );
        assert_eq!(
            get_with(&s, name, json!({"text": "hi"})).await.unwrap(),
            "You said: hi\n"
        );
    }
    // The prompt is too large with any argument: the server's fault.
    let (code, message) = get_with(&s, "big", json!({"text": "a"})).await.unwrap_err();
    assert_eq!(code, -32603, "{message}");
    assert!(
        message.contains("big") && message.contains("limits.maxRenderBytes"),
        "{message}"
    );
    let out = s
        .call(
            "wit-get-prompts",
            json!({"promptName": "big", "args": {"text": "a"}}),
        )
        .await
        .expect("a tool result");
    let envelope = envelope_of(&out);
    let error = envelope["errors"][0].as_str().unwrap();
    assert!(
        error.starts_with("Failed to load prompt content"),
        "{error}"
    );
    s.close().await;
}
