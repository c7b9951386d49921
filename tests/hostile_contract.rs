//! Hostile string-encoded tool parameters over the real binary (stdio): an `args` string nested
//! a million levels deep, or megabytes that are not JSON, is -32602 naming `args`, in bounded
//! time and memory, and the server answers the next call.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::process::{promptd, run_bounded};

const INIT: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call(id: u64, args: Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "wit-get-prompts", "arguments": {"promptName": "greet", "args": args}}
    })
    .to_string()
}

#[test]
fn hostile_string_encoded_args_are_refused_in_bounded_time_and_memory() {
    let prompts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/prompts");
    let mut cmd = promptd();
    cmd.arg("--prompts").arg(&prompts).arg("serve");
    let input = [
        INIT.to_string(),
        INITIALIZED.to_string(),
        // 3 MB of `[`: JSON nested far past the parser's recursion limit.
        call(1, Value::String("[".repeat(3 << 20))),
        // 3 MB that are not JSON at all.
        call(2, Value::String("x".repeat(3 << 20))),
        // An object with its closing brace missing, after 1 MB of members.
        call(
            3,
            Value::String(format!("{{{}", "\"k\": 1, ".repeat(1 << 17))),
        ),
        // Then a well-formed string-encoded call.
        call(4, Value::String(r#"{"who": "Ada"}"#.into())),
    ]
    .join("\n")
        + "\n";
    let run = run_bounded(cmd, input.as_bytes(), Duration::from_secs(60));
    assert!(!run.timed_out, "{:?}", run.elapsed);
    let replies: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: u64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply to {id}: {replies:?}\n{}", run.stderr))
    };
    for (id, why) in [(1, "recursion limit"), (2, "not JSON"), (3, "not JSON")] {
        let e = &by_id(id)["error"];
        assert_eq!(e["code"], -32602, "{e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.starts_with("wit-get-prompts: `args`: expected a JSON object")
                && message.contains(why),
            "{message}"
        );
        assert!(message.len() < 400, "the message does not echo the input");
    }
    let ok = &by_id(4)["result"];
    assert_eq!(ok["isError"], false, "{ok}");
    assert_eq!(
        ok["structuredContent"]["data"]["prompt"]["content"],
        "Hello Ada! (times=1, shout=false)\n"
    );
    eprintln!(
        "hostile string-encoded args: {:?}, peak RSS {:.1} MiB",
        run.elapsed, run.peak_rss_mib
    );
    assert!(run.elapsed < Duration::from_secs(20), "{:?}", run.elapsed);
    assert!(run.peak_rss_mib < 200.0, "{:.1} MiB", run.peak_rss_mib);
}

#[test]
fn wrong_typed_tool_arguments_name_the_argument() {
    let prompts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/prompts");
    let mut cmd = promptd();
    cmd.arg("--prompts").arg(&prompts).arg("serve");
    let tool = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    let input = [
        INIT.to_string(),
        INITIALIZED.to_string(),
        tool(1, "wit-get-prompts", json!({"promptName": 42})),
        tool(2, "compose_prompt", json!({"query": 5})),
        tool(3, "wit-get-prompts", json!({"promptNames": ["greet", 7]})),
    ]
    .join("\n")
        + "\n";
    let run = run_bounded(cmd, input.as_bytes(), Duration::from_secs(60));
    assert!(!run.timed_out);
    let replies: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (id, tool, argument) in [
        (1, "wit-get-prompts", "promptName"),
        (2, "compose_prompt", "query"),
        (3, "wit-get-prompts", "promptNames[1]"),
    ] {
        let e = &replies.iter().find(|r| r["id"] == id).expect("reply")["error"];
        assert_eq!(e["code"], -32602, "{e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{tool}: `{argument}`: invalid type")),
            "{message}"
        );
        assert_eq!(e["data"]["argument"], argument, "{e}");
    }
}
