//! The studio at scale and beside its source, in a real headless Chromium: following a link
//! swaps the prompt's part of the page without loading the page again (a marker set on the
//! window survives), keeping the list's filter and scroll; back and forward; a search of the
//! whole registry past the list's cap, whose results keep the query; "use this case" without a
//! reload; and the source view, where a value links to the line that printed it (two equal
//! values from different lines each to their own) and back.
//!
//! `studio_navigation_bench_100k` (ignored: run with `--ignored`) times the list page's load and
//! each click's navigation over a registry of 100,000 generated prompts.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::browser::{eval, screenshot, wait_for};
use crate::support::browser_page::Page;
use crate::support::studio::write_project;

const TOKEN: &str = "navigation-test-token-0123456789abcdef";
const LIVE: Duration = Duration::from_secs(20);

fn open(dir: &Path, query: &str) -> Page {
    let rt = tokio::runtime::Runtime::new().unwrap();
    Page::open(rt, dir, TOKEN, &[], &[], query, LIVE)
}

/// Writes `count` prompts `p00000`… into `dir/prompts`, each with one argument.
fn write_many(dir: &Path, count: usize) {
    let prompts = dir.join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    for i in 0..count {
        std::fs::write(
            prompts.join(format!("p{i:05}.md")),
            format!(
                "---\ndescription: generated prompt number {i}\narguments:\n  - name: topic\n    \
                 default: t{i}\n---\nWrite about {{{{topic}}}} ({i}).\n"
            ),
        )
        .unwrap();
    }
}

/// Marks the window: a page loaded again loses the mark.
fn mark_window(tab: &headless_chrome::Tab) {
    eval(tab, "window.__studioMarker = 'kept'; return true");
}

fn window_kept(tab: &headless_chrome::Tab) -> bool {
    eval(tab, "return window.__studioMarker === 'kept'") == json!(true)
}

/// Clicks the list's entry of `name` as a user does (a left click on its link).
fn click_entry(tab: &headless_chrome::Tab, name: &str) {
    let clicked = eval(
        tab,
        &format!(
            "const a = document.querySelector('#browse li.entry[data-name=\"{name}\"] > a'); \
             if (!a) return false; a.click(); return true"
        ),
    );
    assert_eq!(clicked, json!(true), "the list has an entry {name}");
}

/// Waits until the prompt part shows `name`.
fn wait_shown(tab: &headless_chrome::Tab, name: &str) -> Duration {
    wait_for(
        tab,
        &format!("the prompt {name} shown"),
        LIVE,
        &format!(
            "const p = document.getElementById('prompt-part'); \
             return p && p.dataset.prompt === '{name}' && document.getElementById('args') !== null"
        ),
    )
    .1
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn following_links_keeps_the_filter_and_the_scroll_and_history_works() {
    let dir = tempfile::tempdir().unwrap();
    write_many(dir.path(), 400);
    let page = open(dir.path(), "prompt=p00000");
    let tab = page.tab.clone();
    wait_shown(&tab, "p00000");
    mark_window(&tab);
    // Filter as a user types: the entries with `p001` in their text stay.
    eval(
        &tab,
        "const f = document.getElementById('filter'); f.value = 'p001'; \
         f.dispatchEvent(new Event('input', { bubbles: true })); return true",
    );
    let shown = eval(
        &tab,
        "return [...document.querySelectorAll('#browse li.entry')].filter(li => !li.hidden).length",
    );
    assert_eq!(shown, json!(100), "p00100…p00199 match `p001`");
    // Scroll the list, then follow an entry far down.
    let scrolled = eval(
        &tab,
        "const n = document.getElementById('browse'); n.scrollTop = 1200; return n.scrollTop",
    );
    let scrolled = scrolled.as_f64().unwrap();
    assert!(scrolled > 1000.0, "the list scrolls on its own: {scrolled}");
    for name in ["p00150", "p00160", "p00170"] {
        click_entry(&tab, name);
        wait_shown(&tab, name);
        let state = eval(
            &tab,
            "return [document.getElementById('filter').value, \
             document.getElementById('browse').scrollTop, location.search, \
             document.querySelector('#browse a[aria-current=page]')?.parentElement.dataset.name, \
             document.title]",
        );
        assert_eq!(state[0], json!("p001"), "the filter is kept");
        assert_eq!(
            state[1].as_f64().unwrap(),
            scrolled,
            "the list's scroll is kept"
        );
        assert_eq!(state[2], json!(format!("?prompt={name}")));
        assert_eq!(state[3], json!(name), "the entry shown is current");
        assert_eq!(state[4], json!(format!("{name} · promptd studio")));
        assert!(window_kept(&tab), "no page load");
    }
    // The form works on the swapped-in part: typing re-renders.
    eval(
        &tab,
        "const i = document.querySelector('[name=\"a.topic\"]'); i.value = 'owls'; \
         i.dispatchEvent(new Event('input', { bubbles: true })); return true",
    );
    wait_for(
        &tab,
        "the render of the typed value",
        LIVE,
        "return document.querySelector('#messages')?.textContent.includes('Write about owls (170).')",
    );
    // Back and forward go through the prompts shown, without a page load.
    tab.evaluate("history.back()", false).unwrap();
    wait_shown(&tab, "p00160");
    tab.evaluate("history.back()", false).unwrap();
    wait_shown(&tab, "p00150");
    tab.evaluate("history.forward()", false).unwrap();
    wait_shown(&tab, "p00160");
    let state = eval(
        &tab,
        "return [document.getElementById('filter').value, document.getElementById('browse').scrollTop, location.search]",
    );
    assert_eq!(state[0], json!("p001"));
    assert_eq!(state[1].as_f64().unwrap(), scrolled);
    assert_eq!(state[2], json!("?prompt=p00160"));
    assert!(window_kept(&tab), "back and forward loaded no page");
    screenshot(&tab, "navigation-01-kept-filter");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn a_search_finds_prompts_past_the_list_cap_and_keeps_its_query() {
    let dir = tempfile::tempdir().unwrap();
    write_many(dir.path(), 1_200);
    let page = open(dir.path(), "");
    let tab = page.tab.clone();
    tab.wait_for_element("#truncated").unwrap();
    mark_window(&tab);
    let before = eval(
        &tab,
        "return [document.getElementById('list').dataset.capped, \
         document.querySelectorAll('#prompt-list li.entry').length, \
         !!document.querySelector('li.entry[data-name=\"p01150\"]')]",
    );
    assert_eq!(before, json!(["true", 1000, false]), "capped at 1,000");
    // Typing searches the whole registry once the list is capped.
    eval(
        &tab,
        "const f = document.getElementById('filter'); f.value = 'number 1150'; \
         f.dispatchEvent(new Event('input', { bubbles: true })); return true",
    );
    wait_for(
        &tab,
        "the search's result past the cap",
        LIVE,
        "const li = document.querySelector('li.entry[data-name=\"p01150\"]'); return li && !li.hidden",
    );
    let result = eval(
        &tab,
        "return [document.querySelectorAll('#prompt-list li.entry').length, \
         document.querySelector('#prompts-title .count').textContent, \
         new URLSearchParams(location.search).get('q'), document.getElementById('list').dataset.query]",
    );
    assert_eq!(result, json!([1, "1", "number 1150", "number 1150"]));
    click_entry(&tab, "p01150");
    wait_shown(&tab, "p01150");
    let after = eval(
        &tab,
        "return [new URLSearchParams(location.search).get('q'), \
         new URLSearchParams(location.search).get('prompt'), document.getElementById('filter').value, \
         document.querySelectorAll('#prompt-list li.entry').length]",
    );
    assert_eq!(
        after,
        json!(["number 1150", "p01150", "number 1150", 1]),
        "the results and the address keep the query"
    );
    assert!(window_kept(&tab));
    // The entry's own address keeps the query too (a new tab, or no script).
    let href = eval(
        &tab,
        "return document.querySelector('li.entry[data-name=\"p01150\"] > a').getAttribute('href')",
    );
    assert_eq!(href, json!("/?prompt=p01150&q=number%201150"));
    // Loading that address shows the same search.
    tab.navigate_to(&format!("{}/?prompt=p01150&q=number+1150", page.base))
        .unwrap();
    tab.wait_until_navigated().unwrap();
    wait_shown(&tab, "p01150");
    let reloaded = eval(
        &tab,
        "return [document.getElementById('filter').value, document.querySelectorAll('#prompt-list li.entry').length]",
    );
    assert_eq!(reloaded, json!(["number 1150", 1]));
    screenshot(&tab, "navigation-02-search-past-cap");
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn use_this_case_fills_the_form_without_a_page_load() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let page = open(dir.path(), "prompt=review");
    let tab = page.tab.clone();
    tab.wait_for_element("li[data-case='review@go_strict'] a.use-case")
        .unwrap();
    mark_window(&tab);
    eval(
        &tab,
        "document.querySelector(\"li[data-case='review@go_strict'] a.use-case\").click(); return true",
    );
    wait_for(
        &tab,
        "the form filled from the case",
        LIVE,
        "const l = document.querySelector('[name=\"a.language\"]'); return l && l.value === 'go'",
    );
    assert!(window_kept(&tab), "no page load");
    let search = eval(&tab, "return location.search");
    assert!(
        search.as_str().unwrap().contains("a.language=go"),
        "{search}"
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[test]
fn a_value_links_to_the_line_that_printed_it_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    // Lines: 1 `---` … 4 `- name: home` (its default on 5) … 7 `---`, body from line 8.
    std::fs::write(
        prompts.join("squads.md"),
        "---\nengine: jinja\narguments:\n  - name: home\n    default: Rocket\n  - name: away\n---\n\
         Home: {{ home }}.\n\nAway: {{ away }} <b>&amp;</b>.\n",
    )
    .unwrap();
    let page = open(dir.path(), "prompt=squads&a.away=Rocket");
    let tab = page.tab.clone();
    tab.wait_for_element("#messages mark").unwrap();
    let marks = eval(
        &tab,
        "return [...document.querySelectorAll('#messages mark')].map(m => [m.textContent, m.dataset.lines, m.dataset.defaultLine ?? null])",
    );
    assert_eq!(
        marks,
        json!([["Rocket", "8-8", "4"], ["Rocket", "10-10", null]]),
        "two equal values, each with its own line; the default with its frontmatter line"
    );
    let linked = |tab: &headless_chrome::Tab| {
        eval(
            tab,
            "return [...document.querySelectorAll('#source-lines li.linked')].map(li => Number(li.dataset.line))",
        )
    };
    eval(
        &tab,
        "document.querySelectorAll('#messages mark')[1].click(); return true",
    );
    assert_eq!(linked(&tab), json!([10]), "the argument's value: line 10");
    eval(
        &tab,
        "document.querySelectorAll('#messages mark')[0].click(); return true",
    );
    assert_eq!(
        linked(&tab),
        json!([4, 8]),
        "the default: its expression's line and its argument's frontmatter line"
    );
    // And back: a line's number marks the values it printed.
    eval(
        &tab,
        "document.querySelector('#source-lines button.ln[data-line=\"10\"]').click(); return true",
    );
    let back = eval(
        &tab,
        "return [...document.querySelectorAll('#messages mark')].map(m => m.classList.contains('linked'))",
    );
    assert_eq!(back, json!([false, true]));
    // The source is the file, as text (its markup is not markup), lines numbered as the file.
    let source = eval(
        &tab,
        "return [document.querySelectorAll('#source-lines li').length, \
         document.getElementById('L10').querySelector('code').textContent, \
         document.querySelectorAll('#source-lines b').length, \
         [...document.querySelectorAll('#source-lines li.has-values')].map(li => Number(li.dataset.line)), \
         document.getElementById('L5').classList.contains('frontmatter')]",
    );
    assert_eq!(
        source,
        json!([10, "Away: {{ away }} <b>&amp;</b>.", 0, [4, 8, 10], true])
    );
    // A render as the form changes keeps the links.
    eval(
        &tab,
        "const i = document.querySelector('[name=\"a.away\"]'); i.value = 'Comet'; \
         i.dispatchEvent(new Event('input', { bubbles: true })); return true",
    );
    wait_for(
        &tab,
        "the new render",
        LIVE,
        "return [...document.querySelectorAll('#messages mark')].some(m => m.textContent === 'Comet')",
    );
    eval(
        &tab,
        "[...document.querySelectorAll('#messages mark')].find(m => m.textContent === 'Comet').click(); return true",
    );
    assert_eq!(linked(&tab), json!([10]));
    screenshot(&tab, "navigation-03-source-links");
    // A save that does not load: the last good version is served, and the source shows its
    // body as served (numbered as in that version), never the broken file's lines.
    std::fs::write(
        prompts.join("squads.md"),
        "---\nengine: jinja\narguments: [unclosed\n---\nBroken {{ home }}\n",
    )
    .unwrap();
    let (note, _) = wait_for(
        &tab,
        "the source of the version served",
        LIVE,
        "const n = document.getElementById('source-note'); return n && n.textContent",
    );
    assert!(note.as_str().unwrap().contains("version served"), "{note}");
    let served = eval(
        &tab,
        "return [...document.querySelectorAll('#source-lines li')].map(li => [Number(li.dataset.line), li.querySelector('code').textContent])",
    );
    assert_eq!(
        served[0],
        json!([8, "Home: {{ home }}."]),
        "the served body, from its line in the file"
    );
    assert_eq!(served[2], json!([10, "Away: {{ away }} <b>&amp;</b>."]));
}

/// min / median / p99 of `times`, in milliseconds.
fn summary(times: &mut [f64]) -> String {
    times.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    format!(
        "min {:.1} / median {:.1} / p99 {:.1} ms (n = {})",
        times[0],
        at(0.5),
        at(0.99),
        times.len()
    )
}

#[test]
#[ignore = "bench: writes and serves 100,000 generated prompts (run with --ignored)"]
fn studio_navigation_bench_100k() {
    let count: usize = std::env::var("STUDIO_NAV_PROMPTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let clicks: usize = std::env::var("STUDIO_NAV_CLICKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let written = Instant::now();
    write_many(dir.path(), count);
    eprintln!("bench: {count} prompts written in {:?}", written.elapsed());
    let page = open(dir.path(), "prompt=p00000");
    let tab = page.tab.clone();
    tab.set_default_timeout(Duration::from_secs(600));
    wait_shown(&tab, "p00000");
    // The list page, loaded whole: navigation timing of the document.
    let mut loads = Vec::new();
    for i in 0..10 {
        tab.navigate_to(&format!("{}/?prompt=p{:05}", page.base, i * 7))
            .unwrap();
        tab.wait_until_navigated().unwrap();
        wait_shown(&tab, &format!("p{:05}", i * 7));
        let ms = eval(
            &tab,
            "const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime",
        );
        loads.push(ms.as_f64().unwrap());
    }
    let bytes = eval(
        &tab,
        "return performance.getEntriesByType('navigation')[0].decodedBodySize",
    );
    // Clicks down the list: from the click to the new prompt's part in the page (the page's own
    // stamp, `data-navigated-ms`), and as the test sees it.
    let mut page_ms = Vec::new();
    let mut seen_ms = Vec::new();
    mark_window(&tab);
    for i in 0..clicks {
        let name = format!("p{:05}", (i * 9 + 1) % 1000);
        let before = eval(
            &tab,
            "return Number(document.body.dataset.navigations || 0)",
        )
        .as_f64()
        .unwrap();
        let start = Instant::now();
        click_entry(&tab, &name);
        wait_for(
            &tab,
            "the navigation",
            LIVE,
            &format!("return Number(document.body.dataset.navigations || 0) > {before}"),
        );
        seen_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        wait_shown(&tab, &name);
        page_ms.push(
            eval(&tab, "return Number(document.body.dataset.navigatedMs)")
                .as_f64()
                .unwrap(),
        );
    }
    assert!(
        window_kept(&tab),
        "every click navigated without a page load"
    );
    // A search of the whole registry for one prompt past the cap.
    let mut search_ms = Vec::new();
    let mut search_page_ms = Vec::new();
    for i in 0..20 {
        let target = count - 1 - i * 13;
        let q = format!("number {target}");
        let start = Instant::now();
        eval(
            &tab,
            &format!(
                "const f = document.getElementById('filter'); f.value = '{q}'; \
                 document.getElementById('search').requestSubmit(); return true"
            ),
        );
        wait_for(
            &tab,
            "the search result",
            LIVE,
            &format!(
                "return document.getElementById('list').dataset.query === '{q}' && \
                 !!document.querySelector('li.entry[data-name=\"p{target:05}\"]')"
            ),
        );
        search_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        search_page_ms.push(
            eval(&tab, "return Number(document.body.dataset.searchedMs)")
                .as_f64()
                .unwrap(),
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "bench: {count} prompts, debug build, load {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    eprintln!(
        "bench: list page load (whole page, {} bytes): {}",
        bytes,
        summary(&mut loads)
    );
    eprintln!(
        "bench: click → prompt part swapped in (page's stamp): {}",
        summary(&mut page_ms)
    );
    eprintln!(
        "bench: click → prompt part swapped in (seen by the test, with DevTools round trips): {}",
        summary(&mut seen_ms)
    );
    eprintln!(
        "bench: search of the whole registry → result listed (page's stamp): {}",
        summary(&mut search_page_ms)
    );
    eprintln!(
        "bench: search of the whole registry → result listed (seen by the test): {}",
        summary(&mut search_ms)
    );
}
