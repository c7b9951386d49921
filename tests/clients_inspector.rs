//! A real client: the MCP Inspector CLI (npm `@modelcontextprotocol/inspector-cli`, installed by
//! `scripts/setup-inspector` into `.deps/inspector`) against the real binary over stdio (and a
//! shorter run over streamable HTTP):
//! `tools/list`, `tools/call` of every tool (with `args` as the Inspector sends it),
//! `prompts/list` and `prompts/get`. The Inspector's SDK compiles every `outputSchema` with ajv
//! and validates each result against it; no ajv warning may be printed. Every tool schema is
//! also compiled by ajv itself in strict draft 2020-12 mode (tests/fixtures/clients/ajv_check.cjs),
//! and every result validated against its outputSchema.
//!
//! They need Node.js and the install: they run with the `system-tests` feature (scripts/test),
//! and fail naming the setup script when it has not run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::process::{self, run_bounded};

const INSPECTOR_ENTRY: &str = "node_modules/@modelcontextprotocol/inspector-cli/build/index.js";

/// The install directory (these tests run with the `system-tests` feature, after
/// scripts/setup).
fn inspector_dir() -> PathBuf {
    process::installed(
        "PROMPTD_INSPECTOR_DIR",
        "inspector",
        &[INSPECTOR_ENTRY],
        "the MCP Inspector CLI is",
        "setup-inspector",
    )
}

fn quoted(p: &Path) -> String {
    let s = p.to_str().expect("UTF-8 path");
    assert!(!s.contains('\''), "{s}");
    format!("'{s}'")
}

struct Inspector {
    dir: PathBuf,
    /// Where the server the Inspector starts runs; removed with the Inspector.
    _workspace: tempfile::TempDir,
    /// The server the Inspector connects to: a command it starts, or a URL and transport.
    server: Vec<String>,
}

impl Inspector {
    fn new(dir: PathBuf) -> Inspector {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(
            workspace.path().join("AGENTS.md"),
            "# Rules\n\nWrite tests.\n",
        )
        .unwrap();
        std::fs::write(workspace.path().join("main.rs"), "fn main() {}\n").unwrap();
        // The server runs in the workspace (its directory is the default workspace of
        // enhance_prompt and compose_prompt: the Inspector declares no roots).
        let server = format!(
            "cd {} && exec {} --prompts {} serve",
            quoted(workspace.path()),
            quoted(process::bin()),
            quoted(&process::repo().join("tests/fixtures/mcp/prompts")),
        );
        Inspector {
            dir,
            _workspace: workspace,
            server: vec!["sh".into(), "-c".into(), server],
        }
    }

    /// The Inspector against a server already listening for streamable HTTP at `url`.
    fn over_http(dir: PathBuf, url: &str) -> Inspector {
        Inspector {
            server: vec![url.into(), "--transport".into(), "http".into()],
            ..Inspector::new(dir)
        }
    }

    /// One Inspector run against its server (`promptd serve` started in the workspace, or the
    /// HTTP server it was given); its JSON output.
    fn run(&self, method: &[&str]) -> Value {
        let entry = self.dir.join(INSPECTOR_ENTRY);
        let mut cmd = Command::new("node");
        cmd.arg(&entry).args(&self.server).args(method);
        // The Inspector CLI finds its own package.json as `../package.json` from its working
        // directory.
        cmd.current_dir(entry.parent().unwrap());
        process::clear_env(&mut cmd);
        let out = run_bounded(cmd, b"", Duration::from_secs(120));
        assert!(
            out.exited() && out.code() == Some(0),
            "inspector {method:?}: {:?}\nstdout: {}\nstderr: {}",
            out.status,
            out.stdout,
            out.stderr
        );
        for needle in ["unknown format", "strict mode", "ajv"] {
            assert!(
                !out.stderr.to_lowercase().contains(needle),
                "inspector {method:?} printed an ajv warning:\n{}",
                out.stderr
            );
        }
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("inspector {method:?}: {e}: {}", out.stdout))
    }

    /// `prompts/get` of `name` with `--prompt-args` pairs (`key=value`); returns the result.
    fn get_prompt(&self, name: &str, args: &[&str]) -> Value {
        let mut method = vec![
            "--method",
            "prompts/get",
            "--prompt-name",
            name,
            "--prompt-args",
        ];
        method.extend_from_slice(args);
        self.run(&method)
    }

    /// `tools/call` of `tool` with `--tool-arg` pairs (the Inspector parses each value as JSON
    /// when it can); returns the result.
    fn call(&self, tool: &str, args: &[&str]) -> Value {
        let mut method = vec!["--method", "tools/call", "--tool-name", tool];
        for a in args {
            method.extend(["--tool-arg", a]);
        }
        self.run(&method)
    }

    /// Runs tests/fixtures/clients/ajv_check.cjs over `tools` and `results`.
    fn ajv_check(&self, tools: &Value, results: &[(&str, &Value)]) -> Value {
        let scratch = tempfile::tempdir().unwrap();
        let tools_file = scratch.path().join("tools.json");
        let results_file = scratch.path().join("results.json");
        std::fs::write(&tools_file, tools.to_string()).unwrap();
        let results: Vec<Value> = results
            .iter()
            .map(|(tool, r)| json!({"tool": tool, "structuredContent": r["structuredContent"]}))
            .collect();
        std::fs::write(&results_file, Value::from(results).to_string()).unwrap();
        let mut cmd = Command::new("node");
        cmd.arg(process::repo().join("tests/fixtures/clients/ajv_check.cjs"))
            .arg(&self.dir)
            .arg(&tools_file)
            .arg(&results_file);
        let out = run_bounded(cmd, b"", Duration::from_secs(60));
        assert!(
            out.exited() && out.code() == Some(0),
            "ajv_check: {}",
            out.stderr
        );
        serde_json::from_str(&out.stdout).unwrap()
    }
}

/// The names of the items a `tools/list` or `prompts/list` result holds under `key`.
fn names<'a>(listing: &'a Value, key: &str) -> Vec<&'a str> {
    listing[key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` in {listing:#}"))
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the MCP Inspector CLI (Node.js) (scripts/setup installs it)"
)]
#[test]
fn the_mcp_inspector_cli_lists_and_calls_every_tool_and_prompt() {
    let dir = inspector_dir();
    let inspector = Inspector::new(dir);

    // tools/list: every tool, every schema compiled by the Inspector's ajv without a warning.
    let tools = inspector.run(&["--method", "tools/list"]);
    let names = names(&tools, "tools");
    assert_eq!(
        names,
        ["wit-get-prompts", "enhance_prompt", "compose_prompt"]
    );

    // wit-get-prompts, `args` as the Inspector sends it: parsed from `--tool-arg args=<JSON>`,
    // and JSON-encoded as a string.
    let single = inspector.call(
        "wit-get-prompts",
        &["promptName=greet", r#"args={"who":"Ada","times":"3"}"#],
    );
    let encoded = inspector.call(
        "wit-get-prompts",
        &[
            "promptName=greet",
            r#"args="{\"who\":\"Ada\",\"times\":\"3\"}""#,
        ],
    );
    for r in [&single, &encoded] {
        assert_eq!(r["isError"], false, "{r:#}");
        let v = &r["structuredContent"];
        assert_eq!(v["success"], true);
        assert_eq!(
            v["data"]["prompt"]["content"],
            "Hello Ada! Hello Ada! Hello Ada! (times=3, shout=false)\n"
        );
        assert_eq!(v["data"]["prompt"]["templateArgsUsed"]["times"], 3);
        assert_eq!(v["metadata"]["templateArgsProvided"], 2);
        let from_text: Value = serde_json::from_str(text(r)).unwrap();
        assert_eq!(&from_text, v, "text and structuredContent agree");
    }
    assert_eq!(single["structuredContent"], encoded["structuredContent"]);

    let listing = inspector.call("wit-get-prompts", &["includeContent=false"]);
    let v = &listing["structuredContent"];
    assert_eq!(v["success"], true);
    assert_eq!(v["data"]["totalCount"], v["metadata"]["totalPrompts"]);
    assert!(
        v["data"]["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "greet")
    );

    let missing = inspector.call("wit-get-prompts", &["promptName=greet"]);
    assert_eq!(missing["isError"], true, "{missing:#}");
    assert_eq!(missing["structuredContent"]["success"], false);
    assert!(
        missing["structuredContent"]["errors"][0]
            .as_str()
            .unwrap()
            .contains("missing required argument(s): who")
    );

    // enhance_prompt without an LLM: the original prompt, with a warning.
    let enhanced = inspector.call("enhance_prompt", &["prompt=add a test for main"]);
    assert_eq!(enhanced["isError"], false, "{enhanced:#}");
    assert_eq!(enhanced["structuredContent"]["status"], "original");
    assert!(
        text(&enhanced).starts_with("add a test for main\n"),
        "{}",
        text(&enhanced)
    );
    assert_eq!(
        enhanced["structuredContent"]["enhancedPrompt"],
        "add a test for main"
    );

    // compose_prompt over the workspace: its AGENTS.md is quoted.
    let composed = inspector.call("compose_prompt", &["query=add a test for main"]);
    assert_eq!(composed["isError"], false, "{composed:#}");
    assert!(
        text(&composed).contains("Write tests."),
        "{}",
        text(&composed)
    );

    // prompts/list and prompts/get.
    let prompts = inspector.run(&["--method", "prompts/list"]);
    let greet = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "greet")
        .unwrap_or_else(|| panic!("greet listed: {prompts:#}"));
    assert_eq!(greet["arguments"][0]["name"], "who");
    let got = inspector.get_prompt("greet", &["who=Ada", "times=2"]);
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "Hello Ada! Hello Ada! (times=2, shout=false)\n"
    );

    // ajv itself, strict: every schema compiles, every result matches its outputSchema.
    let report = inspector.ajv_check(
        &tools,
        &[
            ("wit-get-prompts", &single),
            ("wit-get-prompts", &encoded),
            ("wit-get-prompts", &listing),
            ("wit-get-prompts", &missing),
            ("enhance_prompt", &enhanced),
            ("compose_prompt", &composed),
        ],
    );
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(report["messages"], json!([]), "{report:#}");
    assert_eq!(report["invalid"], json!([]), "{report:#}");
    assert_eq!(
        report["compiled"].as_array().unwrap().len(),
        6,
        "{report:#}"
    );
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the MCP Inspector CLI (Node.js) (scripts/setup installs it)"
)]
#[test]
fn a_string_that_is_not_an_object_is_refused_naming_the_parameter() {
    let dir = inspector_dir();
    let inspector = Inspector::new(dir);
    let entry = inspector.dir.join(INSPECTOR_ENTRY);
    let server = format!(
        "exec {} --prompts {} serve",
        quoted(process::bin()),
        quoted(&process::repo().join("tests/fixtures/mcp/prompts")),
    );
    let mut cmd = Command::new("node");
    cmd.arg(&entry)
        .args(["sh", "-c", &server])
        .args(["--method", "tools/call", "--tool-name", "wit-get-prompts"])
        .args([
            "--tool-arg",
            "promptName=greet",
            "--tool-arg",
            r#"args="[1,2]""#,
        ])
        .current_dir(entry.parent().unwrap());
    process::clear_env(&mut cmd);
    let out = run_bounded(cmd, b"", Duration::from_secs(120));
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stderr.contains("MCP error -32602")
            && out.stderr.contains("`args`: expected a JSON object"),
        "{}",
        out.stderr
    );
}

/// Over streamable HTTP with a session: `prompts/list`, `prompts/get` and a `tools/call`, each
/// answered as one JSON body.
#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs the MCP Inspector CLI (Node.js) (scripts/setup installs it)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_cli_gets_prompts_and_calls_a_tool_over_http() {
    let dir = inspector_dir();
    let cwd = tempfile::tempdir().unwrap();
    let prompts = process::repo().join("tests/fixtures/mcp/prompts");
    let (mut child, url, _log) = crate::support::mcp::http_server(
        cwd.path(),
        &["--no-watch", "--prompts", prompts.to_str().unwrap()],
    )
    .await;
    let inspector = Inspector::over_http(dir, &url);
    let (listed, got, called) = tokio::task::spawn_blocking(move || {
        (
            inspector.run(&["--method", "prompts/list"]),
            inspector.get_prompt("greet", &["who=Ada"]),
            inspector.call(
                "wit-get-prompts",
                &["promptName=greet", r#"args={"who":"Ada"}"#],
            ),
        )
    })
    .await
    .unwrap();
    child.kill().await.unwrap();
    let names = names(&listed, "prompts");
    assert!(names.contains(&"greet"), "{names:?}");
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "Hello Ada! (times=1, shout=false)\n"
    );
    assert_eq!(called["isError"], false, "{called:#}");
    assert_eq!(
        called["structuredContent"]["data"]["prompt"]["content"],
        "Hello Ada! (times=1, shout=false)\n"
    );
}
