//! `promptd serve --http` on 127.0.0.1 with an OS-assigned port, driven by rmcp's streamable
//! HTTP client: the same checks as over stdio, independent sessions, list_changed to every
//! session, and the bearer token.

use crate::support::{mcp, process};

use mcp::{checks, fixture_prompts, http, http_client, http_server, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_prompts_completion_and_tool() {
    let cwd = tempfile::tempdir().unwrap();
    let prompts = fixture_prompts().display().to_string();
    let s = http(cwd.path(), &["--prompts", &prompts, "--page-size", "3"]).await;
    checks::check_all(&s, cwd.path()).await;
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_hot_reload_reaches_every_session() {
    let cwd = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().display().to_string();
    let mut s = http(cwd.path(), &["--prompts", &prompts]).await;
    // A second, independent session on the same server.
    let url = {
        let log = s.stderr();
        let line = log
            .lines()
            .find(|l| l.contains("serving MCP at"))
            .unwrap()
            .to_string();
        line.split("serving MCP at ")
            .nth(1)
            .unwrap()
            .trim()
            .to_string()
    };
    let (other, mut other_changed) = http_client(&url, None).await;
    checks::check_hot_reload(&mut s, dir.path()).await;
    // The other session saw the same changes (at least one notification).
    within("second session notified", other_changed.recv())
        .await
        .unwrap();
    within("second client shutdown", other.cancel())
        .await
        .unwrap();
    s.close().await;
}

/// A raw HTTP/1.1 POST to /mcp; returns the status line.
async fn post_status(url: &str, auth: Option<&str>) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut req = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(a) = auth {
        req.push_str(&format!("Authorization: {a}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    let mut stream = within("connect", tokio::net::TcpStream::connect(host))
        .await
        .unwrap();
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 512];
    let n = within("read status", stream.read(&mut buf)).await.unwrap();
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_token_is_required_when_set() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut child, url, _log) = http_server(cwd.path(), &["--auth-token", "s3cret"]).await;
    assert!(post_status(&url, None).await.contains(" 401 "));
    assert!(
        post_status(&url, Some("Bearer wrong"))
            .await
            .contains(" 401 ")
    );
    assert!(
        post_status(&url, Some("Basic czNjcmV0"))
            .await
            .contains(" 401 ")
    );
    assert!(
        post_status(&url, Some("Bearer s3cret"))
            .await
            .contains(" 200 ")
    );
    // rmcp's client with the token works end to end.
    let (client, _changed) = http_client(&url, Some("s3cret")).await;
    let (names, _) = checks::list_all_names(&client).await;
    assert!(names.contains(&"code_review".to_string()));
    within("client shutdown", client.cancel()).await.unwrap();
    let _ = child.start_kill();
    let _ = within("server exit", child.wait()).await;
}

#[test]
fn http_refuses_a_public_address_without_a_token() {
    let out = process::promptd()
        .args(["serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("requires --auth-token or PROMPTD_AUTH_TOKEN"),
        "{err}"
    );
}

/// A client that opens with `initialize` is promised `prompts/list_changed` only where it can
/// get it: with sessions, not over `--stateless` (nothing can be sent to it later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_list_changed_is_promised_only_with_sessions() {
    let cwd = tempfile::tempdir().unwrap();
    for (args, promised) in [(&[][..], true), (&["--stateless"][..], false)] {
        let (mut child, url, _log) = http_server(cwd.path(), args).await;
        let (client, _changed) = http_client(&url, None).await;
        let info = client.peer_info().expect("initialized");
        let prompts = info.capabilities.prompts.clone().expect("prompts offered");
        assert_eq!(
            prompts.list_changed == Some(true),
            promised,
            "{args:?}: {prompts:?}"
        );
        within("client shutdown", client.cancel()).await.unwrap();
        let _ = child.kill().await;
    }
}
