//! The studio as a playground, in a real headless Chromium: provenance that comes from the
//! render (values that print the same text keep their own sources), the files that failed to
//! load listed live, and a prompt run against a local OpenAI-compatible server that streams
//! (the answer shown as it arrives, the run recorded, the API key nowhere in the page). The
//! same run from the CLI (`promptd run`). "Use this case" filling the form from a test case.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::support::browser::{eval, marks, screenshot, wait_for};
use crate::support::browser_page::Page;
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::process::promptd;
use crate::support::studio::{write_playground, write_project};

const TOKEN: &str = "playground-test-token-0123456789abcdef";
const LIVE: Duration = Duration::from_secs(10);

/// The playground's page: [`Page::open`] with the test's token.
fn open(
    rt: tokio::runtime::Runtime,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    query: &str,
) -> Page {
    Page::open(rt, dir, TOKEN, args, env, query, LIVE)
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn equal_values_keep_their_own_sources() {
    let dir = tempfile::tempdir().unwrap();
    write_playground(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let page = open(
        rt,
        dir.path(),
        &["--now", "2026-01-15"],
        &[],
        "prompt=report&a.squad=Rocket",
    );
    let tab = page.tab.clone();
    tab.wait_for_element("#messages mark").unwrap();
    let marks = marks(&tab);
    assert_eq!(
        marks,
        json!([
            ["Rocket", "user", "squad: your argument"],
            ["Rocket", "config", "team: from the config file"],
            [
                "2026-01-15",
                "computed",
                "end_date: computed by promptd (clock)"
            ],
            [
                "2026-01-15",
                "computed",
                "today: computed by promptd (clock)"
            ]
        ])
    );
    screenshot(&tab, "playground-01-provenance");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn use_this_case_fills_the_form_from_a_test_case() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let page = open(rt, dir.path(), &[], &[], "prompt=review");
    let tab = page.tab.clone();
    tab.wait_for_element("li[data-case='review@go_strict'] a.use-case")
        .unwrap()
        .click()
        .unwrap();
    let (form, _) = wait_for(
        &tab,
        "the form filled from the case",
        LIVE,
        "const l = document.querySelector('[name=\"a.language\"]'); \
         const s = document.querySelector('[name=\"a.strict\"]'); \
         return l && l.value === 'go' && [l.value, s.checked, location.search]",
    );
    assert_eq!(form[0], json!("go"));
    assert_eq!(
        form[1],
        json!(true),
        "the case's strict: \"true\" checks the box"
    );
    assert!(
        form[2].as_str().unwrap().contains("a.strict=true"),
        "{form:?}"
    );
    let (text, _) = wait_for(
        &tab,
        "the case's render",
        LIVE,
        "const m = document.getElementById('messages'); \
         return m && m.textContent.includes('Be strict.') && m.textContent",
    );
    assert!(
        text.as_str().unwrap().contains("Review this go change"),
        "{text}"
    );
    screenshot(&tab, "playground-04-use-this-case");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn files_that_fail_to_load_are_listed_live() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let page = open(rt, dir.path(), &[], &[], "");
    let tab = page.tab.clone();
    tab.wait_for_element("#prompt-list").unwrap();
    wait_for(
        &tab,
        "the live stream",
        LIVE,
        "return document.getElementById('live').textContent.startsWith('live')",
    );
    assert_eq!(
        eval(
            &tab,
            "return document.getElementById('not-loaded-section').hidden"
        ),
        json!(true)
    );

    // A Claude command's header loses its closing line: listed with its position and reason,
    // its last good version served.
    let command = dir.path().join(".claude/commands/fix-issue.md");
    let good = std::fs::read_to_string(&command).unwrap();
    std::fs::write(&command, good.replacen("---\nFix", "Fix", 1)).unwrap();
    let (listed, took) = wait_for(
        &tab,
        "the broken command listed",
        LIVE,
        "const s = document.getElementById('not-loaded-section'); \
         return s && !s.hidden && [...s.querySelectorAll('li')].map(li => li.textContent)",
    );
    eprintln!("broken save -> listed under Not loaded: {took:?}");
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let entry = listed[0].as_str().unwrap();
    assert!(
        entry.starts_with(
            ".claude/commands/fix-issue.md:1:1: frontmatter opened with `---` is never closed"
        ),
        "{entry}"
    );
    assert!(
        entry.contains("the last good version of fix-issue is served"),
        "{entry}"
    );
    let served = eval(
        &tab,
        "return [...document.querySelectorAll('#prompt-list .name')].map(e => e.textContent)",
    );
    assert!(
        served.as_array().unwrap().contains(&json!("fix-issue")),
        "{served}"
    );

    // A new file that never loaded: not served.
    std::fs::write(
        dir.path().join("prompts/broken.md"),
        "---\ndescription: [unclosed\n---\nBody\n",
    )
    .unwrap();
    let (listed, _) = wait_for(
        &tab,
        "the new broken file listed",
        LIVE,
        "const l = [...document.querySelectorAll('#not-loaded li')].map(li => li.textContent); \
         return l.length === 2 && l",
    );
    assert!(
        listed[1]
            .as_str()
            .unwrap()
            .starts_with("prompts/broken.md:3:1:")
            && listed[1].as_str().unwrap().ends_with("not served"),
        "{listed}"
    );
    assert_eq!(
        eval(
            &tab,
            "return document.querySelector('#not-loaded-title .count').textContent"
        ),
        json!("2")
    );
    screenshot(&tab, "playground-02-not-loaded");

    // Mended and removed: the section goes away.
    std::fs::write(&command, &good).unwrap();
    std::fs::remove_file(dir.path().join("prompts/broken.md")).unwrap();
    wait_for(
        &tab,
        "the section to empty",
        LIVE,
        "return document.getElementById('not-loaded-section').hidden",
    );
}

/// A key made at test time: the page, the records and the logs must never hold it.
fn test_key() -> String {
    format!("sk-playground-{:016x}", fastrand::u64(..))
}

fn streamed_answer() -> Reply {
    Reply::Stream {
        pieces: vec!["The answer ".into(), "is ".into(), "42.".into()],
        gap: Duration::from_millis(300),
        model: "playground-model-2026".into(),
        usage: (12, 5),
    }
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn a_run_streams_its_answer_and_is_recorded_without_the_key() {
    let dir = tempfile::tempdir().unwrap();
    write_playground(dir.path());
    let key = test_key();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(LlmServer::start(vec![streamed_answer()]));
    let llm_url = llm.url.clone();
    let page = open(
        rt,
        dir.path(),
        &[],
        &[
            ("LLM_BASE_URL", llm_url.as_str()),
            ("LLM_MODEL", "configured-model"),
            ("LLM_API_KEY", key.as_str()),
        ],
        "prompt=ask&a.question=Why%3F",
    );
    let tab = page.tab.clone();
    tab.wait_for_element("#run-button").unwrap();
    // The frontmatter's model is preselected.
    assert_eq!(
        eval(&tab, "return document.getElementById('run-model').value"),
        json!("playground-model")
    );
    assert_eq!(
        eval(
            &tab,
            "return document.querySelectorAll('#runs li.run').length"
        ),
        json!(0)
    );

    tab.find_element("#run-button").unwrap().click().unwrap();
    // The first piece shows before the rest was sent.
    let (first, _) = wait_for(
        &tab,
        "the first piece of the answer",
        LIVE,
        "const a = document.getElementById('run-answer'); return a.dataset.firstTokenAt && \
         [a.textContent, Number(a.dataset.firstTokenAt)]",
    );
    assert_eq!(first[0], json!("The answer "), "streamed, not all at once");
    let shown_at = first[1].as_f64().unwrap();
    let (status, _) = wait_for(
        &tab,
        "the run to finish",
        LIVE,
        "const a = document.getElementById('run-answer'); \
         return a.dataset.state === 'done' && document.getElementById('run-status').textContent",
    );
    let sent_at = llm.first_bytes()[0];
    let first_token_ms = shown_at - sent_at;
    eprintln!("model's first byte -> first token shown in the page: {first_token_ms:.1} ms");
    // The figure is printed for the bench table (goal < 50 ms); the test only requires the
    // first piece on the page before the model sends its next one, which a loaded machine
    // still meets.
    assert!(
        first_token_ms < 300.0,
        "first token shown {first_token_ms:.1} ms after the model's first byte, after the next piece was sent"
    );
    assert_eq!(
        eval(
            &tab,
            "return document.getElementById('run-answer').textContent"
        ),
        json!("The answer is 42.")
    );
    let status = status.as_str().unwrap();
    assert!(
        status.contains("playground-model-2026")
            && status.contains("12 tokens in")
            && status.contains("5 out")
            && status.contains(" ms"),
        "{status}"
    );
    let (runs, _) = wait_for(
        &tab,
        "the recorded run listed",
        LIVE,
        "const l = [...document.querySelectorAll('#runs li.run')]; \
         return l.length === 1 && l.map(li => li.querySelector('.run-answer').textContent)",
    );
    assert_eq!(runs, json!(["The answer is 42."]));
    screenshot(&tab, "playground-03-run");

    // What the model got: the rendered message, the frontmatter's model, streaming, the key.
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "playground-model");
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Answer in one sentence: Why?\n"}])
    );
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some(format!("Bearer {key}").as_str())
    );

    // The record, in a folder that ignores itself for git.
    let runs_dir = dir.path().join(".promptd/runs");
    assert_eq!(
        std::fs::read_to_string(runs_dir.join(".gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );
    let files: Vec<_> = std::fs::read_dir(runs_dir.join("ask"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["prompt"], "ask");
    assert_eq!(record["arguments"], json!({"question": "Why?"}));
    assert_eq!(record["model"], "playground-model-2026");
    assert_eq!(record["settings"]["model"], "playground-model");
    assert_eq!(record["answer"], "The answer is 42.");
    assert_eq!(record["tokensIn"], 12);
    assert_eq!(record["tokensOut"], 5);
    assert_eq!(record["tokensEstimated"], false);
    assert!(record["latencyMs"].as_f64().unwrap() >= 600.0, "{record}");
    assert_eq!(record["versionHash"].as_str().unwrap().len(), 16);

    // The key is nowhere: not in the page, the record or the server's log.
    let html = eval(&tab, "return document.documentElement.outerHTML");
    assert!(!html.as_str().unwrap().contains(&key));
    assert!(!text.contains(&key));
    assert!(!page.log.lock().unwrap().contains(&key));
}

#[test]
fn promptd_run_streams_to_stdout_and_records_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write_playground(dir.path());
    let key = test_key();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(LlmServer::start(vec![streamed_answer()]));
    let run = |extra: &[&str]| {
        let mut cmd = promptd();
        cmd.args(["run", "ask", "--arg", "question=Why?"])
            .args(extra)
            .env("LLM_BASE_URL", &llm.url)
            .env("LLM_MODEL", "configured-model")
            .env("LLM_API_KEY", &key)
            .current_dir(dir.path());
        cmd.output().unwrap()
    };
    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The answer is 42.\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("playground-model-2026 · 12 tokens in · 5 out"),
        "{err}"
    );

    let out = run(&["--json", "--model", "other-model"]);
    assert!(out.status.success(), "{out:?}");
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["answer"], "The answer is 42.");
    assert_eq!(record["settings"]["model"], "other-model");
    assert_eq!(llm.requests()[1].body["model"], "other-model");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&key));
    let recorded = std::fs::read_dir(dir.path().join(".promptd/runs/ask"))
        .unwrap()
        .count();
    assert_eq!(recorded, 2);

    // An unknown prompt names itself; no model configured says how to configure one.
    let mut cmd = promptd();
    let out = cmd
        .args(["run", "nope"])
        .env("LLM_BASE_URL", &llm.url)
        .env("LLM_MODEL", "m")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nope"),
        "{out:?}"
    );
    let out = promptd()
        .args(["run", "ask", "--arg", "question=x"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("LLM_BASE_URL"),
        "{out:?}"
    );
}
