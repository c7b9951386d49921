//! The studio in a real headless Chromium, as an author uses it: open the page with the token,
//! filter the list and reach a prompt by keyboard, fill the form and read the rendered text
//! from the DOM, see a refused value next to its field, edit the file on disk and watch the page
//! follow (a broken edit shows its error beside the last good text), and a hostile prompt shown
//! as text. Screenshots go to the artifacts folder ([`screenshot_dir`]).

use std::time::Duration;

use serde_json::json;

use crate::support::browser::{eval, launch, marks, screenshot, screenshot_dir, wait_for};
use crate::support::mcp::http_server;
use crate::support::process::promptd;
use crate::support::studio::{review, stale_snapshot, write_project};

const TOKEN: &str = "browser-test-token-0123456789abcdef";
/// Generous for a loaded CI machine; the latency itself is measured by `benches/studio_live`.
const LIVE: Duration = Duration::from_secs(10);

/// The form control of argument `field`.
fn control<'a>(tab: &'a headless_chrome::Tab, field: &str) -> headless_chrome::Element<'a> {
    tab.find_element(&format!(
        "[data-field={field}] input:not([type=hidden]), [data-field={field}] select, \
         [data-field={field}] textarea"
    ))
    .unwrap_or_else(|e| panic!("the control of `{field}`: {e}"))
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn an_author_browses_fills_edits_and_sees_hostile_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let accepted = promptd()
        .args(["--now", "2025-03-15", "test", "--accept"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(accepted.status.success(), "{accepted:?}");
    stale_snapshot(dir.path());

    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_child, url, log) = rt.block_on(http_server(
        dir.path(),
        &["--auth-token", TOKEN, "--expose-system"],
    ));
    let base = url.trim_end_matches("/mcp").to_string();

    let profile = tempfile::tempdir().unwrap();
    let browser = launch(profile.path());
    let tab = browser.new_tab().unwrap();
    tab.set_default_timeout(LIVE);

    // Opened with the token: the cookie is set, the address no longer shows the token.
    tab.navigate_to(&format!("{base}/?token={TOKEN}")).unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#prompt-list").unwrap();
    assert_eq!(eval(&tab, "return location.search"), json!(""));
    let names = eval(
        &tab,
        "return [...document.querySelectorAll('#prompt-list .name')].map(e => e.textContent)",
    );
    for n in ["review", "hostile", "fix-issue", "code_review"] {
        assert!(
            names.as_array().unwrap().contains(&json!(n)),
            "{n} not in {names}"
        );
    }
    let system = eval(
        &tab,
        "return [...document.querySelectorAll('#system-list .name')].map(e => e.textContent)",
    );
    assert!(
        system
            .as_array()
            .unwrap()
            .contains(&json!("reviewer_rules")),
        "{system}"
    );
    let dialect = eval(
        &tab,
        "return [...document.querySelectorAll('#prompt-list li')].find(li => \
         li.querySelector('.name').textContent === 'fix-issue').querySelector('.dialect').textContent",
    );
    assert_eq!(dialect, json!("claude"));
    screenshot(&tab, "01-list");

    // Filter as you type, then reach the prompt by keyboard alone.
    tab.find_element("#filter").unwrap().click().unwrap();
    tab.type_str("code rev").unwrap();
    let (visible, _) = wait_for(
        &tab,
        "the filter",
        LIVE,
        "const v = [...document.querySelectorAll('#browse li.entry')].filter(li => !li.hidden) \
         .map(li => li.querySelector('.name').textContent); return v.length <= 2 ? v : null",
    );
    assert_eq!(visible, json!(["code_review", "review"]));
    tab.press_key("Tab").unwrap();
    tab.press_key("Tab").unwrap();
    assert_eq!(
        eval(
            &tab,
            "return document.activeElement.querySelector('.name').textContent"
        ),
        json!("review")
    );
    tab.press_key("Enter").unwrap();
    tab.wait_for_element("form#args").unwrap();
    assert_eq!(
        eval(
            &tab,
            "return document.getElementById('prompt-name').textContent"
        ),
        json!("review")
    );

    // Every control is labelled and described.
    let unlabelled = eval(
        &tab,
        "return [...document.querySelectorAll('form#args input:not([type=hidden]), form#args select, \
         form#args textarea')].filter(el => !document.querySelector(`label[for=\"${el.id}\"]`) \
         || !el.getAttribute('aria-describedby')).map(el => el.name)",
    );
    assert_eq!(unlabelled, json!([]));
    let controls = eval(
        &tab,
        "return [...document.querySelectorAll('form#args .field')].map(f => \
         [f.dataset.field, f.querySelector('input:not([type=hidden]), select, textarea').type])",
    );
    assert_eq!(
        controls,
        json!([
            ["language", "select-one"],
            ["strict", "checkbox"],
            ["max_findings", "text"],
            ["focus", "text"]
        ])
    );
    // The required language is missing: its field says so.
    let (missing, _) = wait_for(
        &tab,
        "the required field's error",
        LIVE,
        "return document.querySelector('[data-field=language] .field-error').textContent",
    );
    assert_eq!(missing, json!("required"));

    // Fill the form by keyboard: the rendered text follows.
    control(&tab, "language").focus().unwrap();
    tab.press_key("ArrowDown").unwrap();
    tab.press_key("ArrowDown").unwrap();
    control(&tab, "focus").click().unwrap();
    tab.type_str("error handling").unwrap();
    control(&tab, "strict").focus().unwrap();
    tab.press_key(" ").unwrap();
    let (text, _) = wait_for(
        &tab,
        "the rendered text",
        LIVE,
        "const t = document.querySelector('#messages pre.text'); \
         return t && t.textContent.includes('error handling') && t.textContent.includes('strict') \
         ? t.textContent : null",
    );
    assert_eq!(
        text,
        json!(
            "Review this python change for team core, focusing on error handling (as of 2025-03-15).\nBe strict.\nReport at most 5 findings.\n"
        )
    );
    let marks = marks(&tab);
    assert_eq!(
        marks,
        json!([
            ["python", "user", "language: your argument"],
            ["core", "config", "team: from the config file"],
            ["error handling", "user", "focus: your argument"],
            [
                "2025-03-15",
                "computed",
                "today: computed by promptd (clock)"
            ],
            ["5", "default", "max_findings: the frontmatter default"]
        ])
    );
    let tokens = eval(
        &tab,
        "return Number(document.getElementById('token-count').textContent)",
    );
    assert_eq!(
        tokens,
        json!(promptd::tokens::count_tokens(text.as_str().unwrap()))
    );
    assert!(
        eval(&tab, "return location.search")
            .as_str()
            .unwrap()
            .contains("a.focus=error+handling"),
        "the address keeps the arguments"
    );

    // A refused value: the error sits by its field, the last good text stays.
    control(&tab, "max_findings").click().unwrap();
    tab.type_str("0").unwrap();
    let (error, _) = wait_for(
        &tab,
        "the field's error",
        LIVE,
        "return document.querySelector('[data-field=max_findings] .field-error').textContent",
    );
    assert!(error.as_str().unwrap().contains("minimum of 1"), "{error}");
    assert_eq!(
        eval(
            &tab,
            "return document.querySelector('[data-field=max_findings] input').getAttribute('aria-invalid')"
        ),
        json!("true")
    );
    assert!(
        eval(
            &tab,
            "return document.querySelector('#messages pre.text').textContent"
        )
        .as_str()
        .unwrap()
        .contains("error handling")
    );
    screenshot(&tab, "02-invalid-field");
    tab.press_key("Backspace").unwrap();
    tab.type_str("3").unwrap();
    wait_for(
        &tab,
        "the corrected render",
        LIVE,
        "return document.querySelector('#messages pre.text').textContent.includes('at most 3')",
    );

    // The checks and the test cases, one with its diff.
    let cases = eval(
        &tab,
        "return [...document.querySelectorAll('#tests li.case')].map(c => [c.dataset.case, c.classList.contains('pass')])",
    );
    assert_eq!(
        cases,
        json!([["review@rust_default", true], ["review@go_strict", false]])
    );
    let diff = eval(
        &tab,
        "return document.querySelector('#tests pre.diff').textContent",
    );
    assert!(
        diff.as_str().unwrap().contains("-Be gentle.")
            && diff.as_str().unwrap().contains("+Be strict."),
        "{diff}"
    );
    screenshot(&tab, "03-rendered");

    // Live: a save on disk reaches the page.
    let path = dir.path().join("prompts/review.md");
    std::fs::write(&path, review().replace("Report at most", "List at most")).unwrap();
    let (_, took) = wait_for(
        &tab,
        "the edit to show",
        LIVE,
        "return document.querySelector('#messages pre.text').textContent.includes('List at most 3')",
    );
    eprintln!("edit on disk -> page updated: {took:?}");
    // A broken edit: its error shows, the last good text stays.
    std::fs::write(
        &path,
        review()
            .replace("Report at most", "List at most")
            .replace("{{ focus }}", "{{ focus "),
    )
    .unwrap();
    let (banner, _) = wait_for(
        &tab,
        "the broken edit's error",
        LIVE,
        "const b = document.getElementById('file-error'); return b && b.textContent",
    );
    assert!(
        banner.as_str().unwrap().contains("prompts/review.md:20:"),
        "{banner}"
    );
    assert!(
        eval(
            &tab,
            "return document.querySelector('#messages pre.text').textContent"
        )
        .as_str()
        .unwrap()
        .contains("List at most 3")
    );
    screenshot(&tab, "04-broken-edit");
    // Mended: the error goes away.
    std::fs::write(&path, review()).unwrap();
    wait_for(
        &tab,
        "the mended file",
        LIVE,
        "return !document.getElementById('file-error') && \
         document.querySelector('#messages pre.text').textContent.includes('Report at most 3')",
    );

    // Roles are separate messages.
    tab.navigate_to(&format!("{base}/?prompt=dialogue"))
        .unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#messages").unwrap();
    let messages = eval(
        &tab,
        "return [...document.querySelectorAll('#messages article')].map(a => \
         [a.querySelector('.role').textContent, a.querySelector('pre').textContent])",
    );
    assert_eq!(
        messages,
        json!([
            ["user", "You answer briefly."],
            ["assistant", "Understood."],
            ["user", "Why?"]
        ])
    );

    // Leading blank lines, indentation and tabs reach the page byte for byte (an HTML parser
    // drops a newline right after `<pre>`: real prompt files start with one).
    let cli = promptd()
        .args([
            "--now",
            "2025-03-15",
            "get",
            "notes",
            "--arg",
            "topic=x",
            "--json",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let cli: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
    tab.navigate_to(&format!("{base}/?prompt=notes&a.topic=x"))
        .unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#messages").unwrap();
    assert_eq!(
        eval(
            &tab,
            "return document.querySelector('#messages pre.text').textContent"
        ),
        cli["data"]["prompt"]["content"]
    );
    assert!(
        cli["data"]["prompt"]["content"]
            .as_str()
            .unwrap()
            .starts_with("\n\n  # Notes")
    );

    // Hostile text stays text: no script ran, the markup is readable in the page.
    tab.navigate_to(&format!("{base}/?prompt=hostile")).unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#messages pre.text").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        eval(&tab, "return document.title"),
        json!("hostile · promptd studio")
    );
    assert_eq!(
        eval(&tab, "return document.scripts.length"),
        json!(1),
        "only app.js"
    );
    assert_eq!(
        eval(
            &tab,
            "return document.querySelectorAll('img, textarea, b').length"
        ),
        json!(0)
    );
    let body = eval(
        &tab,
        "return document.querySelector('#messages pre.text').textContent",
    );
    assert_eq!(
        body,
        json!(
            "<script>document.title='pwned-body'</script></textarea><b>bold?</b> </pre><script>document.title='pwned-value'</script>\n"
        )
    );
    assert_eq!(
        eval(
            &tab,
            "return document.getElementById('prompt-title').textContent"
        ),
        json!("</textarea><script>document.title='pwned-title'</script>")
    );
    screenshot(&tab, "05-hostile");
    eprintln!("screenshots in {}", screenshot_dir().display());
    drop(log);
}
