//! Tool definitions that run, against a loopback HTTP target the test starts
//! ([`support::tool_target`]): `promptd tools call` (the same execution as `tools/call`) for
//! path templating, query and body mapping per method, headers from the environment, timeouts,
//! the body cap, redirects, refused addresses, a secret in an answer redacted; then the MCP
//! server over stdio: the definitions listed beside promptd's own tools, called, validated,
//! reloaded, and hostile definitions and inputs answered with clear errors while it keeps
//! serving.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::guard::{Fake, fake_secret};
use crate::support::mcp::{self, within};
use crate::support::process;
use crate::support::tool_target::{self, ToolTarget};

const KEY_VAR: &str = "PROMPTD_TOOL_TEST_KEY";

/// A definition file's text: an object schema from `properties` (all strings unless given),
/// `required` names.
fn definition(name: &str, properties: Value, required: &[&str], execution: Value) -> String {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    let mut file = json!({
        "toolName": name,
        "description": format!("{name} for tests"),
        "inputSchema": schema.to_string(),
    });
    file.as_object_mut()
        .unwrap()
        .extend(execution.as_object().unwrap().clone());
    serde_json::to_string_pretty(&file).unwrap()
}

fn http(url: &str, method: &str) -> Value {
    json!({
        "executionType": "http",
        "executionDetails": {"url": url, "method": method, "headers": {"X-Key": format!("${{env:{KEY_VAR}}}")}}
    })
}

/// A workspace with one definition per target path and a config (`allowed`: loopback listed
/// in `tools.http.allowedHosts`).
fn workspace(target: &ToolTarget, allowed: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join(".promptd/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let base = target.base();
    let s = json!({"type": "string"});
    let n = json!({"type": "integer"});
    let files = [
        (
            "get_user",
            json!({"id": s, "q": s, "tags": {"type": "array"}}),
            vec!["id"],
            http(&format!("{base}/users/{{id}}"), "GET"),
        ),
        (
            "post_user",
            json!({"id": s, "name": s, "age": n}),
            vec!["id"],
            http(&format!("{base}/users/{{id}}"), "POST"),
        ),
        (
            "delete_user",
            json!({"id": s, "reason": s}),
            vec!["id"],
            http(&format!("{base}/users/{{id}}"), "DELETE"),
        ),
        (
            "slow",
            json!({}),
            vec![],
            http(&format!("{base}/slow"), "GET"),
        ),
        (
            "drip",
            json!({}),
            vec![],
            http(&format!("{base}/drip"), "GET"),
        ),
        (
            "big",
            json!({"n": n}),
            vec!["n"],
            http(&format!("{base}/big/{{n}}"), "GET"),
        ),
        (
            "redirects",
            json!({"n": n}),
            vec!["n"],
            http(&format!("{base}/redirect/{{n}}"), "GET"),
        ),
        (
            "redirect_to",
            json!({"to": s}),
            vec!["to"],
            http(&format!("{base}/to/{{to}}"), "GET"),
        ),
        (
            "status",
            json!({"code": n}),
            vec!["code"],
            http(&format!("{base}/status/{{code}}"), "GET"),
        ),
        (
            "text",
            json!({"t": s}),
            vec!["t"],
            http(&format!("{base}/text/{{t}}"), "GET"),
        ),
        (
            "private",
            json!({}),
            vec![],
            http("http://10.255.255.1/x", "GET"),
        ),
    ];
    for (name, props, required, execution) in files {
        std::fs::write(
            tools.join(format!("{name}.json")),
            definition(name, props, &required, execution),
        )
        .unwrap();
    }
    let hosts: Vec<&str> = if allowed { vec!["127.0.0.1"] } else { vec![] };
    let config = json!({"tools": {"http": {"allowedHosts": hosts, "timeoutMs": 1000}}});
    std::fs::write(dir.path().join(".ado-mcp-config.json"), config.to_string()).unwrap();
    dir
}

struct Called {
    code: i32,
    outcome: Value,
    stderr: String,
    seconds: f64,
}

async fn call(dir: &Path, name: &str, args: Value, key: &str) -> Called {
    let mut cmd = process::promptd();
    cmd.args([
        "tools",
        "call",
        name,
        "--json",
        "--args-json",
        &args.to_string(),
    ])
    .env(KEY_VAR, key)
    .current_dir(dir);
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    Called {
        code: out.status.code().unwrap_or(-1),
        outcome: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn failed_with(c: &Called, needle: &str) {
    assert_eq!(c.outcome["isError"], true, "{:?} {}", c.outcome, c.stderr);
    let text = c.outcome["text"].as_str().unwrap();
    assert!(text.contains(needle), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_tools_fill_the_url_map_fields_per_method_and_take_headers_from_the_environment() {
    let target = tool_target::start().await;
    let dir = workspace(&target, true);
    let key = format!("k-{}", std::process::id());

    // A hostile id stays one encoded path segment; the other fields become the query.
    let hostile = "a b/../@evil\r\nX-Injected: 1";
    let c = call(
        dir.path(),
        "get_user",
        json!({"id": hostile, "q": "x&y=z", "tags": ["a", "b"]}),
        &key,
    )
    .await;
    assert_eq!(c.outcome["isError"], false, "{:?} {}", c.outcome, c.stderr);
    let got = target.last();
    assert_eq!(got.method, "GET");
    assert_eq!(
        got.target,
        "/users/a%20b%2F%2E%2E%2F%40evil%0D%0AX-Injected%3A%201?q=x%26y%3Dz&tags=a&tags=b"
    );
    assert_eq!(got.header("x-key"), Some(key.as_str()));
    assert_eq!(got.header("x-injected"), None);
    // The answer is the target's JSON, as structured content.
    assert_eq!(c.outcome["structured"]["target"], got.target);

    // POST: the other fields are the JSON body.
    let c = call(
        dir.path(),
        "post_user",
        json!({"id": "7", "name": "Ada", "age": 36}),
        &key,
    )
    .await;
    assert_eq!(c.outcome["isError"], false, "{:?}", c.outcome);
    let got = target.last();
    assert_eq!(
        (got.method.as_str(), got.target.as_str()),
        ("POST", "/users/7")
    );
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&got.body).unwrap(),
        json!({"name": "Ada", "age": 36})
    );

    // DELETE: the query again.
    call(
        dir.path(),
        "delete_user",
        json!({"id": "7", "reason": "gone"}),
        &key,
    )
    .await;
    let got = target.last();
    assert_eq!(
        (got.method.as_str(), got.target.as_str()),
        ("DELETE", "/users/7?reason=gone")
    );

    // A path step, or a missing id, is the caller's mistake naming the field; nothing is sent.
    let before = target.received.lock().unwrap().len();
    for (args, needle) in [
        (json!({"id": ".."}), "path segment"),
        (json!({"q": "x"}), "\"id\" is a required property"),
    ] {
        let c = call(dir.path(), "get_user", args, &key).await;
        assert_ne!(c.code, 0);
        assert!(c.stderr.contains(needle), "{}", c.stderr);
    }
    assert_eq!(target.received.lock().unwrap().len(), before);

    // No environment variable: a failed call that names it.
    let mut cmd = process::promptd();
    cmd.args([
        "tools",
        "call",
        "get_user",
        "--json",
        "--args-json",
        r#"{"id":"1"}"#,
    ])
    .current_dir(dir.path());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["isError"], true);
    assert!(
        outcome["text"].as_str().unwrap().contains(KEY_VAR),
        "{outcome}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_failures_are_tool_errors_bounded_in_time_and_size() {
    let target = tool_target::start().await;
    let dir = workspace(&target, true);
    let p = dir.path();

    let c = call(p, "slow", json!({}), "k").await;
    failed_with(&c, "tools.http.timeoutMs");
    assert!(c.seconds < 2.9, "{}", c.seconds);
    // A body that drips one byte every 200 ms is cut by the same timeout.
    let c = call(p, "drip", json!({}), "k").await;
    failed_with(&c, "tools.http.timeoutMs");
    assert!(c.seconds < 2.9, "{}", c.seconds);

    failed_with(
        &call(p, "big", json!({"n": 2_000_000}), "k").await,
        "tools.http.maxResponseBytes",
    );
    let c = call(p, "big", json!({"n": 1000}), "k").await;
    assert_eq!(
        c.outcome["structured"]["result"].as_str().unwrap().len(),
        1000
    );

    let c = call(p, "redirects", json!({"n": 3}), "k").await;
    assert_eq!(
        c.outcome["structured"]["target"], "/redirect/0",
        "{:?}",
        c.outcome
    );
    failed_with(
        &call(p, "redirects", json!({"n": 5}), "k").await,
        "tools.http.maxRedirects",
    );
    // A redirect to a host not allowed is refused before any connection.
    failed_with(
        &call(
            p,
            "redirect_to",
            json!({"to": "http://10.255.255.1/admin"}),
            "k",
        )
        .await,
        "not in tools.http.allowedHosts",
    );
    failed_with(
        &call(p, "private", json!({}), "k").await,
        "not in tools.http.allowedHosts",
    );

    let c = call(p, "status", json!({"code": 404}), "k").await;
    failed_with(&c, "HTTP 404");
    assert_eq!(c.code, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn loopback_is_refused_unless_allowed_and_a_secret_in_an_answer_is_redacted() {
    let target = tool_target::start().await;
    let refused = workspace(&target, false);
    let c = call(refused.path(), "get_user", json!({"id": "1"}), "k").await;
    failed_with(&c, "127.0.0.1 is a loopback, private or reserved address");
    assert!(target.received.lock().unwrap().is_empty());

    let allowed = workspace(&target, true);
    let secret = fake_secret("github-pat", &mut Fake::new(50)).unwrap();
    let c = call(
        allowed.path(),
        "text",
        json!({"t": format!("token={secret} ok")}),
        "k",
    )
    .await;
    assert_eq!(c.outcome["isError"], false, "{:?}", c.outcome);
    let text = c.outcome["text"].as_str().unwrap();
    assert!(
        !text.contains(&secret) && text.contains("[REDACTED:"),
        "{text}"
    );
    assert!(!c.outcome.to_string().contains(&secret));
    assert!(
        c.outcome["warnings"][0]
            .as_str()
            .unwrap()
            .contains("redacted")
    );
    // An error status quotes the body in its message: guarded as well.
    let fail = definition(
        "fail",
        json!({"t": {"type": "string"}}),
        &["t"],
        http(&format!("{}/fail/{{t}}", target.base()), "GET"),
    );
    std::fs::write(allowed.path().join(".promptd/tools/fail.json"), fail).unwrap();
    let c = call(
        allowed.path(),
        "fail",
        json!({"t": format!("denied for {secret}")}),
        "k",
    )
    .await;
    failed_with(&c, "HTTP 500");
    assert!(!c.outcome.to_string().contains(&secret), "{:?}", c.outcome);
    assert!(c.outcome["text"].as_str().unwrap().contains("[REDACTED:"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_server_lists_calls_reloads_and_survives_hostile_definitions() {
    let target = tool_target::start().await;
    let dir = workspace(&target, true);
    let tools = dir.path().join(".promptd/tools");
    let calc = definition(
        "calc",
        json!({"a": {"type": "number"}, "b": {"type": "number"}, "operation": {"type": "string", "enum": ["add", "subtract"]}}),
        &["a", "b", "operation"],
        json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": "simpleCalculator"}}),
    );
    std::fs::write(tools.join("calc.json"), &calc).unwrap();
    // Hostile definitions: nested past the parser's depth, a `$ref` loop, a shadowing name.
    let deep = format!(
        "{}{}",
        "{\"type\":\"object\",\"properties\":{\"a\":".repeat(5000),
        "}}".repeat(5000)
    );
    let bomb = json!({"toolName": "bomb", "description": "d", "inputSchema": deep,
        "executionType": "predefined_server_function", "executionDetails": {"functionName": "echoTool"}});
    std::fs::write(tools.join("bomb.json"), bomb.to_string()).unwrap();
    let looped = json!({"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}});
    let looping = json!({"toolName": "looping", "description": "d", "inputSchema": looped.to_string(),
        "executionType": "predefined_server_function", "executionDetails": {"functionName": "echoTool"}});
    std::fs::write(tools.join("looping.json"), looping.to_string()).unwrap();
    let shadow = definition(
        "compose_prompt",
        json!({}),
        &[],
        json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": "echoTool"}}),
    );
    std::fs::write(tools.join("shadow.json"), shadow).unwrap();

    let key = "mcp-key";
    let s = mcp::stdio_with_env(dir.path(), &[], &[(KEY_VAR, key)]).await;
    let listed = within("tools/list", s.client.list_all_tools())
        .await
        .unwrap();
    let names: Vec<&str> = listed.iter().map(|t| &*t.name).collect();
    assert_eq!(
        &names[..3],
        ["wit-get-prompts", "enhance_prompt", "compose_prompt"]
    );
    assert!(
        names.contains(&"calc") && names.contains(&"get_user"),
        "{names:?}"
    );
    assert!(!names.contains(&"bomb"), "{names:?}");
    assert_eq!(names.iter().filter(|n| **n == "compose_prompt").count(), 1);

    let r = s
        .call("calc", json!({"a": 20, "b": 5, "operation": "add"}))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"result": "25"})));
    assert_eq!(r.is_error, Some(false));
    let e = s
        .call("calc", json!({"a": "x", "b": 5, "operation": "add"}))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(e) = e else {
        panic!("{e}")
    };
    assert_eq!(e.code.0, -32602);
    assert!(e.message.contains("`/a`"), "{}", e.message);
    assert_eq!(e.data, Some(json!({"argument": "/a"})));

    let r = s.call("get_user", json!({"id": "42"})).await.unwrap();
    assert_eq!(
        r.structured_content.as_ref().unwrap()["target"],
        "/users/42"
    );
    assert_eq!(target.last().header("x-key"), Some(key));
    let r = s.call("slow", json!({})).await.unwrap();
    assert_eq!(r.is_error, Some(true));

    // A `$ref` loop compiles; validating against it ends (with an answer or an error).
    let _ = s.call("looping", json!({"x": 1})).await;
    // A huge input is refused by its size, naming the limit.
    let huge = "x".repeat(300 * 1024);
    let e = s.call("get_user", json!({"id": huge})).await.unwrap_err();
    assert!(e.to_string().contains("tools.maxInputBytes"), "{e}");

    // A new definition is announced; a broken edit keeps the last good one served.
    let before = s.client.service().tools_changed();
    let echo = definition(
        "echo",
        json!({"m": {"type": "string"}}),
        &[],
        json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": "echoTool"}}),
    );
    std::fs::write(tools.join("echo.json"), echo).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.client.service().tools_changed() == before {
        assert!(Instant::now() < deadline, "no tools/list_changed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = s.call("echo", json!({"m": "hi"})).await.unwrap();
    assert_eq!(
        r.structured_content,
        Some(json!({"result": "{\"m\":\"hi\"}"}))
    );
    std::fs::write(tools.join("calc.json"), "{ broken").unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = s
        .call("calc", json!({"a": 1, "b": 2, "operation": "subtract"}))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"result": "-1"})));
    let log = s.stderr();
    assert!(log.contains(".promptd/tools/calc.json:1:3:"), "{log}");
    assert!(log.contains("last good version"), "{log}");
    assert!(
        log.contains(".promptd/tools/shadow.json:") && log.contains("one of promptd's own tools"),
        "{log}"
    );
    s.close().await;
}

#[test]
fn tools_add_list_remove_and_parse() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calc.json");
    std::fs::write(&file, definition("calc", json!({"a": {"type": "number"}}), &["a"], json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": "simpleCalculator"}}))).unwrap();
    let run = |args: &[&str], cwd: &Path| {
        let mut cmd = process::promptd();
        cmd.args(args).current_dir(cwd);
        cmd.output().unwrap()
    };
    let ws = tempfile::tempdir().unwrap();
    let added = run(&["tools", "add", file.to_str().unwrap()], ws.path());
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(ws.path().join(".promptd/tools/calc.json").is_file());
    let again = run(&["tools", "add", file.to_str().unwrap()], ws.path());
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already defined"));
    let listed: Value =
        serde_json::from_slice(&run(&["tools", "list", "--json"], ws.path()).stdout).unwrap();
    assert_eq!(listed["tools"][0]["name"], "calc");
    assert_eq!(
        listed["tools"][0]["executionType"],
        "predefined_server_function"
    );

    let parse = |reply: &str| {
        let out = process::output_with_input(
            {
                let mut c = process::promptd();
                c.args(["tools", "parse"]).current_dir(ws.path());
                c
            },
            reply.as_bytes(),
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, out, _) = parse(
        "```json\n{\"plandex_tool_invocation\": {\"tool_name\": \"calc\", \"tool_input\": {\"a\": 1}}}\n```",
    );
    assert_eq!(code, Some(0));
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"toolName": "calc", "toolInput": {"a": 1}})
    );
    for (reply, needle) in [
        ("not json", "not JSON (line 1, column 2)"),
        ("{\"answer\": 1}", "no `plandex_tool_invocation`"),
        (
            "{\"plandex_tool_invocation\": {\"tool_name\": \"nope\"}}",
            "unknown tool `nope`; the tools are: calc",
        ),
        (
            "{\"plandex_tool_invocation\": {\"tool_name\": \"calc\", \"tool_input\": {\"a\": \"x\"}}}",
            "`tool_input/a`",
        ),
        (
            "{\"plandex_tool_invocation\": {\"tool\": \"calc\"}}",
            "unknown field `tool`",
        ),
    ] {
        let (code, _, err) = parse(reply);
        assert_eq!(code, Some(1), "{reply}");
        assert!(err.contains(needle), "{reply}: {err}");
    }

    let refused = run(&["tools", "remove", "calc"], ws.path());
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--yes"));
    assert!(
        run(&["tools", "remove", "calc", "--yes"], ws.path())
            .status
            .success()
    );
    assert!(!ws.path().join(".promptd/tools/calc.json").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn predefined_functions_wrap_the_stages_and_an_answer_must_match_its_output_schema() {
    let target = tool_target::start().await;
    let dir = workspace(&target, true);
    let p = dir.path();
    std::fs::write(
        p.join("retry.rs"),
        "pub fn fetch_with_retry() -> u32 { 3 }\n",
    )
    .unwrap();
    let config =
        json!({"rag": {"embeddings": false}, "tools": {"http": {"allowedHosts": ["127.0.0.1"]}}});
    std::fs::write(p.join(".ado-mcp-config.json"), config.to_string()).unwrap();
    let tools = p.join(".promptd/tools");
    let function = |name: &str| json!({"executionType": "predefined_server_function", "executionDetails": {"functionName": name}});
    std::fs::write(
        tools.join("search.json"),
        definition(
            "search",
            json!({"query": {"type": "string"}, "topK": {"type": "integer"}}),
            &["query"],
            function("search_repository"),
        ),
    )
    .unwrap();
    std::fs::write(
        tools.join("render.json"),
        definition(
            "render",
            json!({"promptName": {"type": "string"}, "args": {"type": "object"}}),
            &["promptName"],
            function("render_prompt"),
        ),
    )
    .unwrap();
    // An http answer that misses its output schema.
    let mut strict: Value = serde_json::from_str(&definition(
        "strict",
        json!({"t": {"type": "string"}}),
        &["t"],
        http(&format!("{}/text/{{t}}", target.base()), "GET"),
    ))
    .unwrap();
    strict["outputSchema"] = json!(json!({"type": "object", "required": ["id"]}).to_string());
    std::fs::write(tools.join("strict.json"), strict.to_string()).unwrap();

    let c = call(
        p,
        "search",
        json!({"query": "fetch with retry", "topK": 3}),
        "k",
    )
    .await;
    assert_eq!(c.outcome["isError"], false, "{:?} {}", c.outcome, c.stderr);
    let chunks = c.outcome["structured"]["chunks"].as_array().unwrap();
    assert!(
        chunks.iter().any(|ch| ch["path"] == "retry.rs"),
        "{chunks:?}"
    );

    let c = call(
        p,
        "render",
        json!({"promptName": "bug_triage", "args": {"report": "the cache drops writes"}}),
        "k",
    )
    .await;
    assert_eq!(
        c.outcome["structured"]["promptName"], "bug_triage",
        "{:?}",
        c.outcome
    );
    assert!(
        c.outcome["structured"]["text"]
            .as_str()
            .unwrap()
            .contains("the cache drops writes"),
        "{:?}",
        c.outcome
    );
    failed_with(
        &call(p, "render", json!({"promptName": "no_such_prompt"}), "k").await,
        "unknown prompt",
    );

    failed_with(
        &call(p, "strict", json!({"t": "plain"}), "k").await,
        "does not match the tool's outputSchema",
    );
}
