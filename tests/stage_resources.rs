//! The stages' long-lived resources stay bounded: open repositories (each with an index, a
//! folder watcher and background threads) under `limits.maxRepositories`, and a client's roots
//! asked once per session.
// Roots are deprecated by SEP-2577 but are what IDE clients send today.
#![allow(deprecated)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::mcp;

/// A folder of `n` small repositories, `repo0` … `repo{n-1}`, and a config keeping at most
/// `max` open, retrieval lexical.
fn repositories(n: usize, max: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".ado-mcp-config.json"),
        json!({"rag": {"embeddings": false}, "limits": {"maxRepositories": max}}).to_string(),
    )
    .unwrap();
    for i in 0..n {
        let repo = dir.path().join(format!("repo{i}"));
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(
            repo.join("src/lib.rs"),
            format!("/// Parses ledger entry {i}.\npub fn parse_entry_{i}(line: &str) -> usize {{\n    line.len()\n}}\n"),
        )
        .unwrap();
    }
    dir
}

/// The composed prompt of a `compose_prompt` result.
fn text(result: &rmcp::model::CallToolResult) -> String {
    let out = result
        .structured_content
        .as_ref()
        .expect("structuredContent");
    out["text"].as_str().expect("text").to_string()
}

/// The inotify instances a process holds (each a folder watcher).
fn inotify_instances(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target == Path::new("anon_inode:inotify"))
        .count()
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// Waits up to 15 s for `pid`'s threads to drop to `at_most`; returns the last count. Idle
/// threads of tokio's blocking pool end after 10 s: a burst of blocking work under load leaves
/// some for that long, a leak leaves them for good.
async fn settle_threads(pid: u32, at_most: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let n = threads(pid);
        if n <= at_most || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits up to 10 s for `pid`'s inotify instances to drop to `at_most`; returns the last count.
async fn settle_inotify(pid: u32, at_most: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = inotify_instances(pid);
        if n <= at_most || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn open_repositories_stay_under_the_limit_and_release_their_watchers() {
    let (n, max) = (12, 3);
    let dir = repositories(n, max);
    let s = mcp::http(dir.path(), &[]).await;
    let pid = s.child.as_ref().unwrap().id().unwrap();
    let before = inotify_instances(pid);
    let mut after_max = 0;
    for i in 0..n {
        let repo = dir.path().join(format!("repo{i}"));
        let result = s
            .call(
                "compose_prompt",
                json!({"query": format!("where is entry {i} parsed"), "dir": repo}),
            )
            .await
            .unwrap();
        let text = text(&result);
        assert!(
            text.contains(&format!("parse_entry_{i}")),
            "repo{i}: {text}"
        );
        if i + 1 == max {
            settle_inotify(pid, before + max).await;
            after_max = threads(pid);
        }
    }
    // One watcher per open repository at most, beside the server's own.
    let watching = settle_inotify(pid, before + max).await;
    assert!(
        watching <= before + max,
        "{watching} inotify instances after {n} repositories (server's own: {before}, limit {max})"
    );
    // Threads do not grow with the number of repositories seen.
    let grown = settle_threads(pid, after_max + 2).await;
    assert!(
        grown <= after_max + 2,
        "threads: {after_max} with {max} repositories open, {grown} after {n}"
    );
    // A repository closed to make room opens again when asked for.
    let result = s
        .call(
            "compose_prompt",
            json!({"query": "where is entry 0 parsed", "dir": dir.path().join("repo0")}),
        )
        .await
        .unwrap();
    assert!(text(&result).contains("parse_entry_0"));
    s.close().await;
}

#[tokio::test]
async fn a_clients_roots_are_asked_once_per_session_until_they_change() {
    let dir = repositories(2, 8);
    let root = |i: usize| {
        rmcp::model::Root::new(format!(
            "file://{}",
            dir.path().join(format!("repo{i}")).display()
        ))
    };
    let s = mcp::stdio_with_roots(dir.path(), &[], &[], vec![root(0)]).await;
    let compose = || {
        s.call(
            "compose_prompt",
            json!({"query": "where is the entry parsed"}),
        )
    };
    let first = text(&compose().await.unwrap());
    assert!(first.contains("parse_entry_0"), "{first}");
    compose().await.unwrap();
    compose().await.unwrap();
    let client = s.client.service();
    assert_eq!(client.roots_asked(), 1, "three calls, one roots/list");

    // The client opens another folder and says so: the next call asks again, and works there.
    client.set_roots(vec![root(1)]);
    s.client.notify_roots_list_changed().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = text(&compose().await.unwrap());
        if text.contains("parse_entry_1") || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(text.contains("parse_entry_1"), "{text}");
    assert_eq!(client.roots_asked(), 2, "asked again after the change only");
    s.close().await;
}
