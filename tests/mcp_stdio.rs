//! `promptd serve` over stdio, driven by rmcp's client through a real pipe to the built binary.

use crate::support::stdio::StdioServer;
use crate::support::{mcp, process};

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp::{checks, fixture_prompts, stdio};

fn fixture_args() -> Vec<String> {
    vec![
        "--prompts".into(),
        fixture_prompts().display().to_string(),
        "--page-size".into(),
        "3".into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_prompts_completion_and_tool() {
    let cwd = tempfile::tempdir().unwrap();
    let args = fixture_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = stdio(cwd.path(), &args).await;
    checks::check_all(&s, cwd.path()).await;
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_expose_system_lists_system_prompts() {
    let cwd = tempfile::tempdir().unwrap();
    let prompts = fixture_prompts().display().to_string();
    let s = stdio(cwd.path(), &["--prompts", &prompts, "--expose-system"]).await;
    let (names, pages) = checks::list_all_names(&s.client).await;
    assert_eq!(pages, 1, "default page size holds everything");
    assert!(names.contains(&"hidden".to_string()), "{names:?}");
    assert!(names.contains(&"enhance_prompt".to_string()), "{names:?}");
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_hot_reload_notifies_list_changed() {
    let cwd = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().display().to_string();
    let mut s = stdio(cwd.path(), &["--prompts", &prompts]).await;
    checks::check_hot_reload(&mut s, dir.path()).await;
    s.close().await;
}

/// Kubernetes updates a ConfigMap volume by swapping one link (`..data`); every visible file is
/// a link through it, and no event names one of them.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_hot_reload_of_a_kubernetes_volume() {
    let cwd = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut volume = checks::ProjectedVolume::new(dir.path());
    volume.publish(&[("live.md", "---\ntitle: Live\n---\nversion one\n")]);
    let prompts = dir.path().display().to_string();
    let mut s = stdio(cwd.path(), &["--prompts", &prompts]).await;
    checks::check_projected_volume_reload(&mut s, &mut volume).await;
    s.close().await;
}

/// A prompt folder on a FUSE file system, written to from outside the mount (as another
/// machine writes to a share): no file event arrives, so the server polls it, by itself, and
/// `--watch-poll` sets how often.
#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs bindfs and /dev/fuse (scripts/setup installs it)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_a_prompt_folder_on_fuse_is_polled() {
    for flags in [&[][..], &["--watch-poll", "100"][..]] {
        let cwd = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (source, mount) = (dir.path().join("source"), dir.path().join("mount"));
        std::fs::create_dir_all(&source).unwrap();
        std::fs::create_dir_all(&mount).unwrap();
        let live = |v: &str| format!("---\ntitle: Live\n---\nversion {v}\n");
        std::fs::write(source.join("live.md"), live("one")).unwrap();
        let share = crate::support::fuse::BindMount::new(&source, &mount);
        let prompts = share.mount.display().to_string();
        let mut args = vec!["--prompts", &prompts];
        args.extend(flags);
        let mut s = stdio(cwd.path(), &args).await;
        assert_eq!(checks::live_text(&s).await, "version one\n");
        std::fs::write(share.source.join("live.md"), live("two, longer")).unwrap();
        std::fs::write(share.source.join("added.md"), "Added.\n").unwrap();
        s.next_change("list_changed after a write the mount sent no event for")
            .await;
        assert_eq!(checks::live_text(&s).await, "version two, longer\n");
        if flags.is_empty() {
            assert!(
                s.stderr().contains("is on a FUSE file system"),
                "the reason for polling is logged: {}",
                s.stderr()
            );
        }
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_config_change_notifies_list_changed() {
    let cwd = tempfile::tempdir().unwrap();
    let config = cwd.path().join(".ado-mcp-config.json");
    std::fs::write(&config, r#"{"project": "One"}"#).unwrap();
    let mut s = stdio(cwd.path(), &[]).await;
    std::fs::write(&config, r#"{"project": "Two"}"#).unwrap();
    s.next_change("list_changed after a config edit").await;
    s.close().await;
}

/// A raw pipe: stdout carries only JSON-RPC frames, and the server exits cleanly (status 0) as
/// soon as stdin closes.
/// Clients give their server pipes, which the server reads and writes without the blocking
/// pool; a regular file as stdin and as stdout (`promptd serve < requests > answers`) must work
/// as well.
#[test]
fn stdio_serves_regular_files_as_well_as_pipes() {
    let dir = tempfile::tempdir().unwrap();
    let requests = dir.path().join("requests.jsonl");
    std::fs::write(
        &requests,
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"file","version":"0"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"file"}}}"#,
            "\n",
        ),
    )
    .unwrap();
    let answers = dir.path().join("answers.jsonl");
    let status = process::promptd()
        .arg("--prompts")
        .arg(fixture_prompts())
        .args(["serve", "--no-watch"])
        .stdin(std::fs::File::open(&requests).unwrap())
        .stdout(std::fs::File::create(&answers).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let out = std::fs::read_to_string(&answers).unwrap();
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[1]["id"], 2);
    assert!(
        lines[1]["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("file"),
        "{out}"
    );
}

#[test]
fn stdio_exits_when_stdin_closes_and_stdout_is_only_frames() {
    let cwd = tempfile::tempdir().unwrap();
    let mut child = process::promptd()
        .args(["serve"])
        .env("RUST_LOG", "debug")
        .current_dir(cwd.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"prompts/list"}"#;
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, "{list}").unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut frames = Vec::new();
    while frames.len() < 2 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "stdout closed early");
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not a JSON-RPC frame ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0");
        frames.push(v);
    }
    assert_eq!(frames[0]["result"]["serverInfo"]["name"], "promptd");
    assert!(frames[1]["result"]["prompts"].as_array().unwrap().len() >= 7);

    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("promptd serve did not exit after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "exit status {status:?}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    for line in rest.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("stdout line is not a JSON-RPC frame ({e}): {line}"));
    }
}

/// A burst of requests is answered one by one, and an idle server then uses no CPU.
#[test]
fn stdio_idle_server_uses_no_cpu() {
    let mut s = StdioServer::start_with_flags(&[]);
    s.initialize();
    for id in 1..=200 {
        let method = if id % 2 == 0 { "ping" } else { "prompts/list" };
        s.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#).as_bytes());
        let reply = s.reply(method);
        assert_eq!(reply["id"], id, "{reply}");
        assert!(reply.get("result").is_some(), "{reply}");
    }
    // Past the memory trim 200 ms after the last request, a quiet second.
    std::thread::sleep(Duration::from_millis(500));
    let before = process::cpu_ticks_of(s.child.id()).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let used = process::cpu_ticks_of(s.child.id()).unwrap() - before;
    assert!(
        used <= 5,
        "an idle server used {used} clock ticks of CPU in one second"
    );
    s.finish();
}

/// What large tool answers allocated goes back to the system once the session is quiet: an
/// idle server does not keep the size of its last answers resident.
#[test]
fn stdio_memory_of_large_tool_answers_is_returned_when_the_session_goes_quiet() {
    // A listing of about 8 MB of JSON (too large for the listing to keep): several times that
    // built and freed by each answer.
    let prompts = tempfile::tempdir().unwrap();
    let description = "d".repeat(8192);
    for i in 0..1000 {
        std::fs::write(
            prompts.path().join(format!("p{i:04}.md")),
            format!("---\ndescription: {description}\n---\nPrompt {i}\n"),
        )
        .unwrap();
    }
    let dir = prompts.path().display().to_string();
    let mut s = StdioServer::start_with_flags(&["--prompts", &dir, "--no-builtin-prompts"]);
    s.initialize();
    let pid = s.child.id();
    let mut list = |id: u64| {
        s.send(
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"wit-get-prompts","arguments":{{"includeContent":false}}}}}}"#
            )
            .as_bytes(),
        );
        let reply = s.reply("listing");
        assert_eq!(reply["id"], id);
        let count = &reply["result"]["structuredContent"]["data"]["totalCount"];
        assert_eq!(count, 1000, "{}", &reply.to_string()[..300]);
    };
    list(1);
    // The load's and the first answer's garbage returned first.
    std::thread::sleep(Duration::from_secs(1));
    let before = process::rss_of(pid).unwrap();
    for id in 2..=6 {
        list(id);
    }
    let peak = process::peak_rss_of(pid).unwrap();
    let waited = Instant::now();
    let mut now = process::rss_of(pid).unwrap();
    while now > before + 8.0 && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        now = process::rss_of(pid).unwrap();
    }
    assert!(
        now <= before + 8.0,
        "RSS {now:.1} MiB {:.1} s after five listings, {before:.1} MiB before them (peak \
         {peak:.1} MiB)",
        waited.elapsed().as_secs_f64()
    );
    s.finish();
}

/// The 2026-07-28 lifecycle (no `initialize`): a client discovers the server, opens a
/// `subscriptions/listen` stream for list changes and gets `prompts/list_changed` on it when a
/// prompt file is created; both categories asked for are acknowledged (tool definitions change
/// too), and the server forgets the stream once it is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_subscription_stream_carries_prompt_list_changes() {
    use rmcp::model::{GetMeta, ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::transport::TokioChildProcess;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};

    let cwd = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().display().to_string();
    let cmd = mcp::command(cwd.path(), &["serve", "--prompts", &prompts]);
    let transport = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn promptd serve")
        .0;
    let client = mcp::within(
        "discover over stdio",
        ().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("discover over stdio");
    let mut subscription = mcp::within(
        "subscriptions/listen",
        client.listen(
            SubscriptionFilter::builder()
                .prompts_list_changed()
                .tools_list_changed()
                .build(),
        ),
    )
    .await
    .expect("listen");
    assert_eq!(
        subscription.acknowledged(),
        &SubscriptionFilter::builder()
            .prompts_list_changed()
            .tools_list_changed()
            .build()
    );
    // The folders are read beside the handshake; a listing waits for that first load. A file
    // written before the load ends is simply in it, with no change to announce.
    let before = mcp::within("prompts/list before the change", client.list_all_prompts())
        .await
        .expect("prompts/list");
    assert!(!before.iter().any(|p| p.name == "live"), "{before:?}");

    std::fs::write(
        dir.path().join("live.md"),
        "---\ntitle: Live\n---\nversion one\n",
    )
    .unwrap();
    let notification = mcp::within("list_changed on the stream", subscription.next())
        .await
        .expect("stream open")
        .expect("a notification");
    assert!(
        matches!(
            notification,
            ServerNotification::PromptListChangedNotification(_)
        ),
        "{notification:?}"
    );
    assert_eq!(
        notification.get_meta().subscription_id(),
        Some(subscription.id().clone())
    );
    let listed = mcp::within("prompts/list", client.list_all_prompts())
        .await
        .expect("prompts/list");
    assert!(listed.iter().any(|p| p.name == "live"), "{listed:?}");

    // Cancelled: the stream ends, and a later change reaches nobody without failing the server.
    mcp::within("cancel the subscription", subscription.cancel())
        .await
        .expect("cancel");
    std::fs::write(
        dir.path().join("second.md"),
        "---\ntitle: Second\n---\ntext\n",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed = mcp::within("prompts/list", client.list_all_prompts())
            .await
            .expect("server still answers after the stream ended");
        if listed.iter().any(|p| p.name == "second") {
            break;
        }
        assert!(Instant::now() < deadline, "second prompt never listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    mcp::within("client shutdown", client.cancel())
        .await
        .expect("client shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_made_during_the_first_load_wait_for_it() {
    // Enough prompts that reading them takes a while; the handshake does not wait for them,
    // and a prompt asked for meanwhile is found, not "unknown".
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3000 {
        std::fs::write(
            dir.path().join(format!("p{i:04}.md")),
            format!("---\ntitle: P{i}\n---\nprompt {i} for {{{{ who }}}}\n"),
        )
        .unwrap();
    }
    let cwd = tempfile::tempdir().unwrap();
    let prompts = dir.path().display().to_string();
    let s = stdio(cwd.path(), &["--prompts", &prompts]).await;
    let mut args = serde_json::Map::new();
    args.insert("who".into(), serde_json::json!("Ada"));
    let got = mcp::within(
        "prompts/get during the load",
        s.client
            .get_prompt(rmcp::model::GetPromptRequestParams::new("p2999").with_arguments(args)),
    )
    .await
    .unwrap();
    let text = serde_json::to_value(&got.messages[0].content).unwrap();
    assert_eq!(text["text"], "prompt 2999 for Ada\n");
    let (names, _) = checks::list_all_names(&s.client).await;
    assert_eq!(names.iter().filter(|n| n.starts_with('p')).count(), 3000);
    s.close().await;
}
