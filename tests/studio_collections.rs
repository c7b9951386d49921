//! The studio over prompt collections nobody here wrote, in a real headless Chromium.
//!
//! `studio_collections` is ignored by default: it reads the folders named by
//! `PROMPTD_STUDIO_DIRS` (a `:`-separated path list, each as for `--prompts`; e.g. public
//! collections brought with the `fetch` tool) and, per folder, serves it with `serve --http` and
//! opens every listed prompt's page in Chromium with every argument filled (a declared value, `1`
//! for numbers, `true` for booleans, else a marker). It counts pages that load, pages whose only
//! script is the studio's own, and renders whose text in the DOM (`textContent` of the message)
//! equals `promptd get --json`'s content for the same arguments byte for byte; it fails when any
//! page does not load, runs a script of the prompt's, or shows another text than the CLI. It
//! also follows each argument's highlighted value to the source lines the page links it to, and
//! fails when such a line is missing or holds no placeholder (`$…` or `{…}`).
//! `scripts/studio-collections DIR...` is the short way to run it.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::browser::{eval, launch};
use crate::support::mcp::http_server;
use crate::support::process::promptd;

/// The value each argument gets: valid for its declaration where one can tell.
fn value_for(arg: &Value, i: usize) -> String {
    match arg["type"].as_str() {
        Some("boolean") => "true".into(),
        Some("integer" | "number") => "1".into(),
        _ => format!("m{i}x"),
    }
}

fn cli_json(dir: &Path, args: &[String]) -> Value {
    let out = promptd()
        .args(["--no-builtin-prompts", "--no-discover", "--prompts"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
#[ignore = "reads the folders in PROMPTD_STUDIO_DIRS (scripts/studio-collections)"]
fn studio_collections() {
    let dirs = std::env::var("PROMPTD_STUDIO_DIRS").expect("PROMPTD_STUDIO_DIRS");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let browser = launch(profile.path());
    let tab = browser.new_tab().unwrap();
    tab.set_default_timeout(Duration::from_secs(20));
    let mut failures = Vec::new();
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        let dir = Path::new(dir);
        let listing = cli_json(dir, &["list".into(), "--json".into()]);
        let prompts = listing["data"]["prompts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let dir_arg = dir.to_str().unwrap();
        let (_child, url, _log) = rt.block_on(http_server(
            dir,
            &[
                "--no-builtin-prompts",
                "--no-discover",
                "--prompts",
                dir_arg,
            ],
        ));
        let base = url.trim_end_matches("/mcp").to_string();
        let (mut loaded, mut own_script_only, mut compared, mut same, mut multi, mut errors) =
            (0, 0, 0, 0, 0, 0);
        // Argument values shown / linked to source lines / whose lines hold a placeholder.
        let (mut values, mut linked, mut placeholders) = (0, 0, 0);
        // promptd's own system prompts (the stages') are listed by the CLI, not by the studio,
        // which shows them only with `--expose-system`.
        let prompts: Vec<Value> = prompts
            .into_iter()
            .filter(|p| p["category"] != "system")
            .collect();
        for p in &prompts {
            let name = p["name"].as_str().unwrap();
            let mut query = url_encode_pairs(&[("prompt", name.to_string())]);
            let mut get = vec!["get".to_string(), name.to_string(), "--json".to_string()];
            for (i, a) in p["arguments"].as_array().into_iter().flatten().enumerate() {
                let arg = a["name"].as_str().unwrap();
                let v = value_for(a, i);
                query.push('&');
                query.push_str(&url_encode_pairs(&[(&format!("a.{arg}"), v.clone())]));
                get.push("--arg".into());
                get.push(format!("{arg}={v}"));
            }
            tab.navigate_to(&format!("{base}/?{query}")).unwrap();
            tab.wait_until_navigated().unwrap();
            let page = eval(
                &tab,
                "const m = [...document.querySelectorAll('#messages pre.text')].map(p => p.textContent); \
                 return { name: document.getElementById('prompt-name')?.textContent, \
                          scripts: [...document.scripts].map(s => s.getAttribute('src')), \
                          messages: m, error: document.getElementById('render-error')?.textContent, \
                          links: [...document.querySelectorAll('#messages mark[data-layer=user]')].map(v => { \
                            const [a, b] = (v.dataset.lines || '').split('-').map(Number); \
                            if (!a) return null; \
                            const out = []; \
                            for (let n = a; n <= b; n++) out.push(document.getElementById('L' + n)?.querySelector('code')?.textContent ?? null); \
                            return out; }) }",
            );
            if page["name"] != name {
                failures.push(format!(
                    "{}: {name}: page did not load: {page}",
                    dir.display()
                ));
                continue;
            }
            loaded += 1;
            for link in page["links"].as_array().into_iter().flatten() {
                values += 1;
                let Some(lines) = link.as_array() else {
                    continue;
                };
                linked += 1;
                let texts: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
                if texts.len() == lines.len() && texts.iter().any(|t| t.contains(['$', '{'])) {
                    placeholders += 1;
                } else {
                    failures.push(format!(
                        "{}: {name}: a value linked to lines without a placeholder: {link}",
                        dir.display()
                    ));
                }
            }
            if page["scripts"] == serde_json::json!(["/studio/app.js"]) {
                own_script_only += 1;
            } else {
                failures.push(format!(
                    "{}: {name}: scripts {}",
                    dir.display(),
                    page["scripts"]
                ));
            }
            let cli = cli_json(dir, &get);
            let content = cli["data"]["prompt"]["content"].as_str();
            let messages = page["messages"].as_array().cloned().unwrap_or_default();
            match content {
                None => errors += 1,
                Some(_) if messages.len() > 1 => multi += 1,
                Some(text) => {
                    compared += 1;
                    let shown = messages.first().and_then(Value::as_str).unwrap_or_default();
                    if shown == text {
                        same += 1;
                    } else {
                        let at = shown
                            .char_indices()
                            .zip(text.chars())
                            .find(|((_, a), b)| a != b)
                            .map_or(shown.len().min(text.len()), |((i, _), _)| i);
                        let around = |s: &str| {
                            s.get(at.saturating_sub(20)..(at + 20).min(s.len()))
                                .unwrap_or_default()
                                .to_string()
                        };
                        failures.push(format!(
                            "{}: {name}: the page shows another text than `promptd get` at byte \
                             {at}: page {:?}, CLI {:?}",
                            dir.display(),
                            around(shown),
                            around(text)
                        ));
                    }
                }
            }
        }
        println!(
            "{}: {} prompts; pages loaded {loaded}; only the studio's script {own_script_only}; \
             DOM text = CLI text {same}/{compared}; several messages {multi}; CLI render errors {errors}; \
             argument values {values}, linked to source lines {linked}, lines with a placeholder {placeholders}",
            dir.display(),
            prompts.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn url_encode_pairs(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                percent_encoding::utf8_percent_encode(k, percent_encoding::NON_ALPHANUMERIC),
                percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}
