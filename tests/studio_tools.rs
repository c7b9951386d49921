//! The studio's tool definitions page: over plain HTTP, the token and `Origin` guards of its
//! routes; in a real headless Chromium, as an author uses it: the list with each definition's
//! input schema, a form call of an `echoTool` definition (its answer shown as text), a
//! wrong-typed argument answered at its field, an `http` definition refused until the config
//! sets `tools.studioCallsHttp` and then called against the loopback target
//! ([`support::tool_target`]).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::browser::{eval, launch, screenshot, wait_for};
use crate::support::mcp::{answer, http_server, studio_client};
use crate::support::tool_target::{self, ToolTarget};

const TOKEN: &str = "tools-studio-token-0123456789abcdef";
const LIVE: Duration = Duration::from_secs(10);

fn definition(name: &str, properties: Value, required: &[&str], execution: Value) -> String {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    let mut file = json!({
        "toolName": name,
        "description": format!("{name} <for> the studio"),
        "inputSchema": schema.to_string(),
    });
    file.as_object_mut()
        .unwrap()
        .extend(execution.as_object().unwrap().clone());
    serde_json::to_string_pretty(&file).unwrap()
}

fn function(name: &str) -> Value {
    json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": name}})
}

/// A workspace with an `echoTool`, a `simpleCalculator` and an `http` definition for the
/// target's `/users/{id}`; loopback allowed, and the studio allowed `http` tools when
/// `studio_http`.
fn workspace(dir: &Path, target: &ToolTarget, studio_http: bool) {
    let tools = dir.join(".promptd/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let files = [
        (
            "echo",
            definition(
                "echo",
                json!({"message": {"type": "string", "description": "what comes back"}}),
                &["message"],
                function("echoTool"),
            ),
        ),
        (
            "calc",
            definition(
                "calc",
                json!({"a": {"type": "number"}, "b": {"type": "number"},
                    "operation": {"type": "string", "enum": ["add", "subtract"]}}),
                &["a", "b", "operation"],
                function("simpleCalculator"),
            ),
        ),
        (
            "user",
            definition(
                "user",
                json!({"id": {"type": "string"}}),
                &["id"],
                json!({"executionType": "http", "executionDetails": {
                    "url": format!("{}/users/{{id}}", target.base()), "method": "GET"}}),
            ),
        ),
    ];
    for (name, text) in files {
        std::fs::write(tools.join(format!("{name}.json")), text).unwrap();
    }
    let mut config = json!({"tools": {"http": {"allowedHosts": ["127.0.0.1"], "timeoutMs": 2000}}});
    if studio_http {
        config["tools"]["studioCallsHttp"] = json!(true);
    }
    std::fs::write(dir.join(".ado-mcp-config.json"), config.to_string()).unwrap();
}

/// `req` with `pairs` as its URL-encoded form body.
fn form(req: reqwest::RequestBuilder, pairs: &[(&str, &str)]) -> reqwest::RequestBuilder {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                utf8_percent_encode(k, NON_ALPHANUMERIC),
                utf8_percent_encode(v, NON_ALPHANUMERIC)
            )
        })
        .collect();
    req.header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.join("&"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tools_routes_take_the_token_and_refuse_a_foreign_origin() {
    let target = tool_target::start().await;
    let dir = tempfile::tempdir().unwrap();
    workspace(dir.path(), &target, true);
    let (_child, url, _log) = http_server(dir.path(), &["--auth-token", TOKEN]).await;
    let base = url.trim_end_matches("/mcp").to_string();
    let http = studio_client();
    let call = [("tool", "user"), ("a.id", "7")];

    // Without the token: refused, nothing listed, nothing called.
    let (status, _, body) = answer(http.get(format!("{base}/studio/tools"))).await;
    assert_eq!(status, 401);
    assert!(!body.contains("users/"), "{body}");
    let (status, _, _) = answer(form(http.post(format!("{base}/studio/tools/call")), &call)).await;
    assert_eq!(status, 401);
    let (status, _, _) = answer(form(
        http.post(format!("{base}/studio/tools/call"))
            .bearer_auth("wrong-token"),
        &call,
    ))
    .await;
    assert_eq!(status, 401);
    assert!(target.received.lock().unwrap().is_empty(), "a call ran");

    // With it: the page, under the studio's Content-Security-Policy.
    let (status, headers, body) =
        answer(http.get(format!("{base}/studio/tools")).bearer_auth(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    // The description is text, never markup.
    assert!(body.contains("echo &lt;for&gt; the studio"), "{body}");

    // A page of another origin cannot make a call, even with the token.
    let (status, _, _) = answer(form(
        http.post(format!("{base}/studio/tools/call"))
            .bearer_auth(TOKEN)
            .header("Origin", "https://evil.example"),
        &call,
    ))
    .await;
    assert_eq!(status, 403);
    assert!(target.received.lock().unwrap().is_empty(), "a call ran");

    // The page's own origin can.
    let (status, _, body) = answer(form(
        http.post(format!("{base}/studio/tools/call"))
            .bearer_auth(TOKEN)
            .header("Origin", base.as_str()),
        &call,
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(target.last().target, "/users/7");

    // A form that names no served tool, or no tool at all.
    let (status, _, body) = answer(form(
        http.post(format!("{base}/studio/tools/call"))
            .bearer_auth(TOKEN),
        &[("tool", "<nope>")],
    ))
    .await;
    assert_eq!(status, 404);
    assert!(body.contains("unknown tool `&lt;nope&gt;`"), "{body}");
    let (status, _, _) = answer(form(
        http.post(format!("{base}/studio/tools/call"))
            .bearer_auth(TOKEN),
        &[("a.id", "1")],
    ))
    .await;
    assert_eq!(status, 400);
    // A form over the request cap is refused before it is read whole.
    let huge = "x".repeat(4 * 1024 * 1024 + 1);
    let (status, _, _) = answer(form(
        http.post(format!("{base}/studio/tools/call"))
            .bearer_auth(TOKEN),
        &[("tool", "echo"), ("a.message", &huge)],
    ))
    .await;
    assert_eq!(status, 413);
    let (status, _, _) = answer(http.get(format!("{base}/studio/tools")).bearer_auth(TOKEN)).await;
    assert_eq!(status, 200, "the server keeps serving");
}

/// The text of the result of the card of `tool`, once the page shows one.
fn result_of(tab: &headless_chrome::Tab, tool: &str) -> Value {
    wait_for(
        tab,
        &format!("the result of {tool}"),
        LIVE,
        &format!(
            "const r = document.querySelector('section.tool[data-tool=\"{tool}\"] .result'); \
             return r && r.textContent"
        ),
    )
    .0
}

/// Fills `field` of the card of `tool` with `value` (a select takes the option).
fn fill(tab: &headless_chrome::Tab, tool: &str, field: &str, value: &str) {
    let js = format!(
        "const c = document.querySelector('section.tool[data-tool=\"{tool}\"] [data-field=\"{field}\"] input, \
         section.tool[data-tool=\"{tool}\"] [data-field=\"{field}\"] select, \
         section.tool[data-tool=\"{tool}\"] [data-field=\"{field}\"] textarea'); \
         c.value = {}; return !!c",
        json!(value)
    );
    assert_eq!(eval(tab, &js), json!(true), "field {field} of {tool}");
}

/// Submits the card of `tool` with its button and waits for the page that answers.
fn submit(tab: &headless_chrome::Tab, tool: &str) {
    eval(tab, "window.beforeSubmit = true; return true");
    tab.find_element(&format!(
        "section.tool[data-tool=\"{tool}\"] form.call button[type=submit]"
    ))
    .unwrap()
    .click()
    .unwrap();
    wait_for(
        tab,
        &format!("the page answering the call of {tool}"),
        LIVE,
        "return !window.beforeSubmit && document.readyState === 'complete' && location.pathname",
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs Chromium (scripts/setup installs it)"
)]
#[tokio::test(flavor = "multi_thread")]
async fn an_author_lists_the_tools_and_calls_one_with_a_form() {
    let target = tool_target::start().await;
    let dir = tempfile::tempdir().unwrap();
    workspace(dir.path(), &target, false);
    let (child, url, _log) = http_server(dir.path(), &["--auth-token", TOKEN]).await;
    let base = url.trim_end_matches("/mcp").to_string();

    let profile = tempfile::tempdir().unwrap();
    let browser = launch(profile.path());
    let tab = browser.new_tab().unwrap();
    tab.set_default_timeout(LIVE);

    // No token: the page is the sign-in note, no tool in it.
    tab.navigate_to(&format!("{base}/studio/tools")).unwrap();
    tab.wait_until_navigated().unwrap();
    let text = eval(&tab, "return document.body.textContent");
    assert!(
        text.as_str().unwrap().contains("requires its token"),
        "{text}"
    );
    assert_eq!(
        eval(
            &tab,
            "return document.querySelectorAll('section.tool').length"
        ),
        json!(0)
    );

    // Opened with the token, then the link to the tools.
    tab.navigate_to(&format!("{base}/?token={TOKEN}")).unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#tools-link")
        .unwrap()
        .click()
        .unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#tool-list").unwrap();
    let names = eval(
        &tab,
        "return [...document.querySelectorAll('#tool-list .name')].map(e => e.textContent)",
    );
    assert_eq!(names, json!(["calc", "echo", "user"]));
    let schema = eval(
        &tab,
        "return document.querySelector('section.tool[data-tool=\"echo\"] .input-schema').textContent",
    );
    let schema: Value = serde_json::from_str(schema.as_str().unwrap()).unwrap();
    assert_eq!(schema["properties"]["message"]["type"], "string");
    assert_eq!(schema["required"], json!(["message"]));
    screenshot(&tab, "tools-list");

    // echoTool: the answer comes back as text (markup in it stays text).
    fill(&tab, "echo", "message", "<b>hi</b> there");
    submit(&tab, "echo");
    let shown = result_of(&tab, "echo");
    assert!(
        shown.as_str().unwrap().contains("<b>hi</b> there"),
        "{shown}"
    );
    assert_eq!(
        eval(
            &tab,
            "return document.querySelectorAll('section.tool[data-tool=\"echo\"] .result b').length"
        ),
        json!(0)
    );
    let structured = eval(
        &tab,
        "return document.querySelector('section.tool[data-tool=\"echo\"] .call-structured').textContent",
    );
    let structured: Value = serde_json::from_str(structured.as_str().unwrap()).unwrap();
    assert!(
        structured.to_string().contains("<b>hi</b> there"),
        "{structured}"
    );
    screenshot(&tab, "tools-echo");

    // A required argument left empty: the schema's error at that field, not in the banner only.
    fill(&tab, "calc", "a", "1");
    fill(&tab, "calc", "operation", "add");
    submit(&tab, "calc");
    let missing = wait_for(
        &tab,
        "the field error of the missing b",
        LIVE,
        "const f = document.querySelector('section.tool[data-tool=\"calc\"] [data-field=\"b\"]'); \
         return f && f.classList.contains('invalid') && f.querySelector('.field-error').textContent",
    )
    .0;
    assert!(
        missing
            .as_str()
            .unwrap()
            .contains("\"b\" is a required property"),
        "{missing}"
    );

    // A wrong-typed argument: the schema's error at its field, nothing run.
    fill(&tab, "calc", "a", "abc");
    fill(&tab, "calc", "b", "2");
    fill(&tab, "calc", "operation", "add");
    submit(&tab, "calc");
    let error = wait_for(
        &tab,
        "the field error of a",
        LIVE,
        "const f = document.querySelector('section.tool[data-tool=\"calc\"] [data-field=\"a\"]'); \
         return f && f.classList.contains('invalid') && f.querySelector('.field-error').textContent",
    )
    .0;
    let error = error.as_str().unwrap();
    assert!(
        error.contains("\"abc\" is not of type \"number\""),
        "{error}"
    );
    assert_eq!(
        eval(
            &tab,
            "return document.querySelector('section.tool[data-tool=\"calc\"] [data-field=\"b\"] .field-error').textContent"
        ),
        json!("")
    );
    // The values sent stay in the form.
    assert_eq!(
        eval(
            &tab,
            "return document.querySelector('section.tool[data-tool=\"calc\"] [data-field=\"a\"] input').value"
        ),
        json!("abc")
    );
    screenshot(&tab, "tools-field-error");
    // Fixed, the same form adds.
    fill(&tab, "calc", "a", "40");
    submit(&tab, "calc");
    let sum = result_of(&tab, "calc");
    assert!(sum.as_str().unwrap().contains("42"), "{sum}");

    // The http definition: refused without `tools.studioCallsHttp`, and the target never asked.
    assert!(
        eval(&tab, "return document.querySelector('section.tool[data-tool=\"user\"] .not-callable').textContent")
            .as_str()
            .unwrap()
            .contains("tools.studioCallsHttp")
    );
    fill(&tab, "user", "id", "42");
    submit(&tab, "user");
    let refused = wait_for(
        &tab,
        "the refusal",
        LIVE,
        "const r = document.querySelector('section.tool[data-tool=\"user\"] .refused'); \
         return r && r.textContent",
    )
    .0;
    assert!(
        refused
            .as_str()
            .unwrap()
            .contains("set `tools.studioCallsHttp` to `true`"),
        "{refused}"
    );
    assert!(
        target.received.lock().unwrap().is_empty(),
        "the http tool ran"
    );
    screenshot(&tab, "tools-http-refused");

    // With the key: the same form reaches the target.
    drop(child);
    workspace(dir.path(), &target, true);
    let (_child, url, _log) = http_server(dir.path(), &["--auth-token", TOKEN]).await;
    let base = url.trim_end_matches("/mcp").to_string();
    tab.navigate_to(&format!("{base}/?token={TOKEN}")).unwrap();
    tab.wait_until_navigated().unwrap();
    tab.navigate_to(&format!("{base}/studio/tools")).unwrap();
    tab.wait_until_navigated().unwrap();
    tab.wait_for_element("#tool-list").unwrap();
    assert_eq!(
        eval(
            &tab,
            "return document.querySelectorAll('section.tool[data-tool=\"user\"] .not-callable').length"
        ),
        json!(0)
    );
    fill(&tab, "user", "id", "../admin");
    submit(&tab, "user");
    let answer = result_of(&tab, "user");
    assert!(
        answer.as_str().unwrap().contains("%2E%2E%2Fadmin"),
        "{answer}"
    );
    assert_eq!(target.last().target, "/users/%2E%2E%2Fadmin");
    screenshot(&tab, "tools-http-called");
}
