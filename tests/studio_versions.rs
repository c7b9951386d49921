//! The studio's history panel and compare page in a real headless Chromium, over a git
//! repository the test makes: the commits that changed a prompt with its version hash at each,
//! two picked versions diffed side by side, two argument sets diffed, both variants run
//! against the local recording OpenAI-compatible server with the answers side by side, and the
//! two recorded runs diffed.

use std::sync::Arc;
use std::time::Duration;

use headless_chrome::{Browser, Tab};
use serde_json::json;

use crate::support::browser::{eval, launch, screenshot, wait_for};
use crate::support::git::{V1, V2, WORKING, review, versioned};
use crate::support::llm_server::{LlmServer, Reply};
use crate::support::mcp::http_server_with_env;

const TOKEN: &str = "versions-test-token-0123456789abcdef";
const LIVE: Duration = Duration::from_secs(10);

/// A studio over `dir` with the test's token and a tab signed in on its prompt page.
struct Studio {
    tab: Arc<Tab>,
    base: String,
    _browser: Browser,
    _profile: tempfile::TempDir,
    _server: tokio::process::Child,
}

impl Studio {
    fn open(rt: &tokio::runtime::Runtime, dir: &std::path::Path, env: &[(&str, &str)]) -> Studio {
        let (server, url, _log) = rt.block_on(http_server_with_env(
            dir,
            &["--auth-token", TOKEN, "--no-builtin-prompts"],
            env,
        ));
        let profile = tempfile::tempdir().unwrap();
        let browser = launch(profile.path());
        let tab = browser.new_tab().unwrap();
        tab.set_default_timeout(LIVE);
        let base = url.trim_end_matches("/mcp").to_string();
        tab.navigate_to(&format!(
            "{base}/?token={TOKEN}&prompt=review&a.language=Go"
        ))
        .unwrap();
        tab.wait_until_navigated().unwrap();
        Studio {
            tab,
            base,
            _browser: browser,
            _profile: profile,
            _server: server,
        }
    }

    fn go(&self, path: &str) {
        self.tab
            .navigate_to(&format!("{}{path}", self.base))
            .unwrap();
        self.tab.wait_until_navigated().unwrap();
    }
}

fn hash12(line: &str) -> String {
    promptd::registry::content_hash(review(line).as_bytes())[..12].to_string()
}

/// The diff table's rows that are not equal: [tag, left, right].
fn changed_rows(tab: &Tab) -> serde_json::Value {
    eval(
        tab,
        "return [...document.querySelectorAll('#diff tbody tr')].filter(r => r.className !== 'same' && r.className !== 'fold').map(r => [r.className, r.querySelector('.left').textContent, r.querySelector('.right').textContent])",
    )
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn the_history_panel_lists_the_commits_and_diffs_two_picked_versions() {
    let p = versioned();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let studio = Studio::open(&rt, p.path(), &[]);
    let tab = studio.tab.clone();
    tab.wait_for_element("#history-link")
        .unwrap()
        .click()
        .unwrap();
    let (rows, took) = wait_for(
        &tab,
        "the history",
        LIVE,
        "const rows = [...document.querySelectorAll('#history tr.commit')]; \
         return rows.length > 0 && rows.map(r => [r.dataset.commit, r.querySelector('.version').textContent, r.querySelector('.summary').textContent])",
    );
    eprintln!("history link -> rows shown: {took:?}");
    let rows = rows.as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        p.second.starts_with(rows[0][0].as_str().unwrap()),
        "{rows:?}"
    );
    assert!(
        p.first.starts_with(rows[1][0].as_str().unwrap()),
        "{rows:?}"
    );
    assert_eq!(rows[0][1], json!(hash12(V2)));
    assert_eq!(rows[0][2], json!("Review carefully"));
    assert_eq!(rows[1][1], json!(hash12(V1)));
    assert_eq!(
        eval(
            &tab,
            "return document.querySelector('#history tr.working .version').textContent"
        ),
        json!(hash12(WORKING))
    );
    assert_eq!(
        eval(
            &tab,
            "return document.getElementById('history-path').textContent"
        ),
        json!("prompts/review.md")
    );
    screenshot(&tab, "versions-01-history");

    // Pick the first version on the left, the second on the right, and compare.
    let (first, second) = (rows[1][0].as_str().unwrap(), rows[0][0].as_str().unwrap());
    eval(
        &tab,
        &format!(
            "document.querySelector('tr[data-commit=\"{first}\"] input[name=left]').click(); \
             document.querySelector('tr[data-commit=\"{second}\"] input[name=right]').click(); return true"
        ),
    );
    tab.wait_for_element("#compare-picked")
        .unwrap()
        .click()
        .unwrap();
    let (specs, _) = wait_for(
        &tab,
        "the compare page",
        LIVE,
        "const l = document.getElementById('left-spec'); \
         return l && [l.value, document.getElementById('right-spec').value, [...document.querySelectorAll('.side-error')].map(e => e.textContent.trim())]",
    );
    assert_eq!(specs[0], json!(format!("review@{first}")));
    assert_eq!(specs[1], json!(format!("review@{second}")));
    // Without the required argument neither side renders, and each says why.
    for e in specs[2].as_array().unwrap() {
        assert!(e.as_str().unwrap().contains("language"), "{specs}");
    }
    eval(
        &tab,
        "document.querySelector('[name=\"l.language\"]').value = 'Go'; \
         document.querySelector('[name=\"r.language\"]').value = 'Go'; return true",
    );
    tab.wait_for_element("#show-diff").unwrap().click().unwrap();
    wait_for(
        &tab,
        "the rendered diff",
        LIVE,
        "return !!document.getElementById('diff')",
    );
    assert_eq!(
        changed_rows(&tab),
        json!([[
            "changed",
            "Review this Go change.",
            "Review this Go change carefully."
        ]])
    );
    assert_eq!(
        eval(
            &tab,
            "return document.getElementById('diff-counts').textContent"
        ),
        json!("−1 +1")
    );
    screenshot(&tab, "versions-02-diff-of-two-versions");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn compare_diffs_argument_sets_and_runs_both_variants_side_by_side() {
    let p = versioned();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(LlmServer::start(vec![
        Reply::Answer("Answer to the working copy.".into()),
        Reply::Answer("Answer to <b>v1</b>.".into()),
    ]));
    let studio = Studio::open(
        &rt,
        p.path(),
        &[("LLM_BASE_URL", &llm.url), ("LLM_MODEL", "compare-model")],
    );
    let tab = studio.tab.clone();
    tab.wait_for_element("#prompt-name").unwrap();

    // Two argument sets of one prompt.
    studio.go("/studio/compare?left=review&right=review&l.language=Go&r.language=Rust");
    wait_for(
        &tab,
        "the rendered diff",
        LIVE,
        "return !!document.getElementById('diff')",
    );
    assert_eq!(
        changed_rows(&tab),
        json!([[
            "changed",
            "Review this Go change line by line.",
            "Review this Rust change line by line."
        ]])
    );

    // The working copy against a tag, one argument set for both (the prompt page's `a.`).
    studio.go("/studio/compare?left=review&right=review@v1&a.language=Go");
    wait_for(
        &tab,
        "the rendered diff",
        LIVE,
        "return !!document.getElementById('diff')",
    );
    assert_eq!(
        changed_rows(&tab),
        json!([[
            "changed",
            "Review this Go change line by line.",
            "Review this Go change."
        ]])
    );
    tab.wait_for_element("#run-both").unwrap().click().unwrap();
    let (answers, _) = wait_for(
        &tab,
        "both answers",
        LIVE,
        "const l = document.querySelector('#left-answer pre.text'); \
         const r = document.querySelector('#right-answer pre.text'); \
         return l && r && [l.textContent, r.textContent, document.querySelectorAll('#right-answer b').length, \
                           document.querySelector('#left-answer h4').textContent, document.querySelector('#right-answer h4').textContent]",
    );
    assert_eq!(
        answers,
        json!([
            "Answer to the working copy.",
            "Answer to <b>v1</b>.",
            0,
            "review",
            "review@v1"
        ]),
        "answers side by side, markup shown as text"
    );
    // The diff is still there beside the answers, and each side's run sent its own render.
    assert!(
        eval(&tab, "return !!document.getElementById('diff')")
            .as_bool()
            .unwrap()
    );
    let sent = llm.first_message_texts();
    assert_eq!(
        sent,
        [
            format!("{}\nBe kind.\n", WORKING.replace("{{ language }}", "Go")),
            format!("{}\nBe kind.\n", V1.replace("{{ language }}", "Go")),
        ]
    );
    screenshot(&tab, "versions-03-answers-side-by-side");

    // Both runs are recorded; the newer one links to a diff with the one before it.
    studio.go("/studio/runs?prompt=review");
    tab.wait_for_element("a.run-diff").unwrap().click().unwrap();
    let (diff, _) = wait_for(
        &tab,
        "the diff of two runs",
        LIVE,
        "const a = document.getElementById('answers-diff');          return a && [[...a.querySelectorAll('tr.changed')].map(r => [r.querySelector('.left').textContent, r.querySelector('.right').textContent]),                       [...document.querySelectorAll('#sent-diff tr.changed')].map(r => [r.querySelector('.left').textContent, r.querySelector('.right').textContent]),                       document.querySelector('#right-run').textContent.includes('at v1')]",
    );
    assert_eq!(
        diff,
        json!([
            [["Answer to the working copy.", "Answer to <b>v1</b>."]],
            [[
                "Review this Go change line by line.",
                "Review this Go change."
            ]],
            true
        ])
    );
    screenshot(&tab, "versions-04-two-runs");
}

/// The diff table `id`'s rows that are not equal: [tag, left, right].
fn changed_rows_of(tab: &Tab, id: &str) -> serde_json::Value {
    eval(
        tab,
        &format!(
            "return [...document.querySelectorAll('#{id} tbody tr')].filter(r => r.className !== 'same' && r.className !== 'fold').map(r => [r.className, r.querySelector('.left').textContent, r.querySelector('.right').textContent])"
        ),
    )
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn compare_takes_more_than_two_variants_and_runs_them_all() {
    let p = versioned();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(LlmServer::start(vec![
        Reply::Answer("one".into()),
        Reply::Answer("two".into()),
        Reply::Answer("three".into()),
        Reply::Answer("four".into()),
    ]));
    let studio = Studio::open(
        &rt,
        p.path(),
        &[("LLM_BASE_URL", &llm.url), ("LLM_MODEL", "compare-model")],
    );
    let tab = studio.tab.clone();
    tab.wait_for_element("#prompt-name").unwrap();

    // A third variant from the address: its own argument set, diffed against the left.
    studio
        .go("/studio/compare?left=review&right=review@v1&v3=review&a.language=Go&v3.language=Rust");
    wait_for(
        &tab,
        "the third variant's diff",
        LIVE,
        "return !!document.getElementById('diff-v3')",
    );
    assert_eq!(
        changed_rows(&tab),
        json!([[
            "changed",
            "Review this Go change line by line.",
            "Review this Go change."
        ]])
    );
    assert_eq!(
        changed_rows_of(&tab, "diff-v3"),
        json!([[
            "changed",
            "Review this Go change line by line.",
            "Review this Rust change line by line."
        ]])
    );
    // Each side names the version it rendered (the file's content hash).
    assert_eq!(
        eval(
            &tab,
            "return [...document.querySelectorAll('fieldset.side code.version')].map(c => c.textContent.length === 12 && c.title.startsWith(c.textContent))"
        ),
        json!([true, true, true])
    );
    // A fourth one added through the form's empty field.
    assert_eq!(
        eval(&tab, "return document.getElementById('add-variant').name"),
        json!("v4")
    );
    eval(
        &tab,
        "document.getElementById('add-variant').value = 'review@v1'; document.getElementById('show-diff').click(); return true",
    );
    wait_for(
        &tab,
        "the fourth variant's diff",
        LIVE,
        "return !!document.getElementById('diff-v4')",
    );
    assert_eq!(
        eval(&tab, "return document.getElementById('v3-spec').value"),
        json!("review")
    );
    // Run all four: every answer in its own column, in order.
    tab.wait_for_element("#run-both").unwrap().click().unwrap();
    let (answers, _) = wait_for(
        &tab,
        "four answers",
        LIVE,
        "const a = [...document.querySelectorAll('#answers article.answer')]; \
         return a.length === 4 && a.every(x => x.querySelector('pre.text')) && \
                a.map(x => [x.id, x.querySelector('h4').textContent, x.querySelector('pre.text').textContent])",
    );
    assert_eq!(
        answers,
        json!([
            ["left-answer", "review", "one"],
            ["right-answer", "review@v1", "two"],
            ["v3-answer", "review", "three"],
            ["v4-answer", "review@v1", "four"]
        ])
    );
    let sent = llm.first_message_texts();
    assert_eq!(
        sent,
        [
            format!("{}\nBe kind.\n", WORKING.replace("{{ language }}", "Go")),
            format!("{}\nBe kind.\n", V1.replace("{{ language }}", "Go")),
            format!("{}\nBe kind.\n", WORKING.replace("{{ language }}", "Rust")),
            format!("{}\nBe kind.\n", V1.replace("{{ language }}", "Go")),
        ]
    );
    screenshot(&tab, "versions-05-four-variants");
}
