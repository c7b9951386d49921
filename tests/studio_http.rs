//! The studio over real HTTP, as a browser's requests reach it: the token (bearer header, or
//! the cookie `/?token=` sets), Host and Origin checks, read-only routes, the render fragment,
//! the event stream a file edit drives, `serve --no-studio`, and `promptd studio` itself
//! (address with a generated token, `--open` through `$BROWSER`, loopback only, the same port
//! and token on the next start so an open page reconnects).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::mcp::{answer, command, http_server, studio_client, within};
use crate::support::studio::{review, write_project};

const TOKEN: &str = "studio-test-token-0123456789abcdef";

fn base(mcp_url: &str) -> String {
    mcp_url.trim_end_matches("/mcp").to_string()
}

#[tokio::test]
async fn the_token_guards_every_route_and_the_cookie_carries_it() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let (_child, url, _log) = http_server(dir.path(), &["--auth-token", TOKEN]).await;
    let base = base(&url);
    let http = studio_client();

    // Nothing without the token, and nothing of the prompts in the refusal.
    for path in [
        "/",
        "/?prompt=review",
        "/studio/render?prompt=review",
        "/studio/events",
    ] {
        let (status, _, body) = answer(http.get(format!("{base}{path}"))).await;
        assert_eq!(status, 401, "{path}");
        assert!(!body.contains("Code review"), "{path} leaked: {body}");
    }
    let (status, _, _) = answer(http.get(format!("{base}/?token=wrong-token"))).await;
    assert_eq!(status, 401);
    // A run is a model call: behind the same token.
    let (status, _, _) = answer(
        http.post(format!("{base}/studio/run"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("prompt=review&a.language=go"),
    )
    .await;
    assert_eq!(status, 401, "POST /studio/run");
    let (status, _, _) = answer(http.get(format!("{base}/studio/runs?prompt=review"))).await;
    assert_eq!(status, 401, "/studio/runs");
    // The history and compare pages, and compare's runs.
    for path in [
        "/studio/history?prompt=review",
        "/studio/compare?left=review&right=review",
    ] {
        let (status, _, body) = answer(http.get(format!("{base}{path}"))).await;
        assert_eq!(status, 401, "{path}");
        assert!(!body.contains("Code review"), "{path} leaked: {body}");
    }
    let (status, _, _) = answer(
        http.post(format!("{base}/studio/compare"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("left=review&right=review&a.language=go"),
    )
    .await;
    assert_eq!(status, 401, "POST /studio/compare");

    // `/?token=` sets an HttpOnly, SameSite=Strict cookie and drops the token from the address.
    let (status, headers, _) =
        answer(http.get(format!("{base}/?token={TOKEN}&prompt=review&a.language=go"))).await;
    assert_eq!(status, 303);
    assert_eq!(headers["location"], "/?prompt=review&a.language=go");
    let cookie = headers["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    // The cookie is this port's, and holds no token: a browser sends it to every port of the
    // host, and a second studio must neither overwrite it nor be opened by it.
    let port = base.rsplit(':').next().unwrap();
    let (name, value) = pair.split_once('=').unwrap();
    assert_eq!(name, format!("promptd_studio_{port}"));
    assert!(!value.contains(TOKEN) && value.len() >= 32, "{pair}");
    for forged in [
        format!("promptd_token={TOKEN}"),
        format!("{name}={TOKEN}"),
        format!("promptd_studio_1{port}={value}"),
    ] {
        let (status, _, _) = answer(
            http.get(format!("{base}/"))
                .header("cookie", forged.as_str()),
        )
        .await;
        assert_eq!(status, 401, "{forged} opened the studio");
    }

    let (status, headers, page) = answer(
        http.get(format!("{base}/?prompt=review&a.language=go"))
            .header("cookie", &pair),
    )
    .await;
    assert_eq!(status, 200);
    assert!(page.contains("Code review"), "{page}");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");

    // The bearer header works as well; /mcp still takes only the header.
    let (status, _, _) = answer(
        http.get(format!("{base}/studio/render?prompt=review&a.language=go"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _, _) = answer(
        http.post(format!("{base}/mcp"))
            .header("cookie", &pair)
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await;
    assert_eq!(status, 401, "the cookie must not open /mcp");
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_and_nothing_writes() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let (_child, url, _log) = http_server(dir.path(), &[]).await;
    let base = base(&url);
    let http = studio_client();
    let port = base.rsplit(':').next().unwrap();

    let (status, _, _) = answer(http.get(format!("{base}/"))).await;
    assert_eq!(status, 200, "loopback without a token serves the page");
    // DNS rebinding: a page of evil.example resolving to 127.0.0.1.
    let (status, _, _) = answer(
        http.get(format!("{base}/"))
            .header("host", format!("evil.example:{port}")),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = answer(
        http.get(format!("{base}/studio/render?prompt=review"))
            .header("origin", "https://evil.example"),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = answer(
        http.get(format!("{base}/studio/render?prompt=review&a.language=go"))
            .header("origin", format!("http://127.0.0.1:{port}")),
    )
    .await;
    assert_eq!(status, 200, "the page's own origin");

    // A page of another site cannot start a run.
    let (status, _, _) = answer(
        http.post(format!("{base}/studio/run"))
            .header("origin", "https://evil.example")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("prompt=review&a.language=go"),
    )
    .await;
    assert_eq!(status, 403, "POST /studio/run from a foreign origin");
    let (status, _, _) = answer(
        http.post(format!("{base}/studio/compare"))
            .header("origin", "https://evil.example")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("left=review&right=review&a.language=go"),
    )
    .await;
    assert_eq!(status, 403, "POST /studio/compare from a foreign origin");
    assert!(!dir.path().join(".promptd").exists(), "a refused run wrote");

    // Every other route is read-only.
    let before = std::fs::read_to_string(dir.path().join("prompts/review.md")).unwrap();
    for path in ["/", "/studio/render?prompt=review", "/studio/events"] {
        let (status, _, _) = answer(http.post(format!("{base}{path}")).body("x")).await;
        assert_eq!(status, 405, "POST {path}");
    }
    let (status, _, page) = answer(http.get(format!("{base}/?prompt=review&a.language=go"))).await;
    assert_eq!(status, 200);
    assert!(page.contains("review@go_strict"), "cases listed: {page}");
    assert!(
        !dir.path().join("tests/prompts/snapshots").exists(),
        "running the cases wrote snapshots"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("prompts/review.md")).unwrap(),
        before
    );
}

#[tokio::test]
async fn the_render_fragment_reports_values_errors_and_tokens() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    // Windows line endings, written here: a checkout may convert them.
    std::fs::write(
        dir.path().join("prompts/windows.md"),
        "---\r\ndescription: CR LF\r\n---\r\nline one\r\nline two\r\n",
    )
    .unwrap();
    let (_child, url, _log) = http_server(dir.path(), &[]).await;
    let base = base(&url);
    let http = studio_client();

    let (status, _, body) = answer(http.get(format!(
        "{base}/studio/render?prompt=review&a.language=python&a.strict=true"
    )))
    .await;
    assert_eq!(status, 200);
    assert!(body.contains(r#"data-ok="true""#), "{body}");
    // Each value is highlighted by its layer, with its provenance.
    assert!(
        body.contains(
            r#"data-layer="user" title="language: your argument" tabindex="0">python</mark>"#
        ),
        "{body}"
    );
    assert!(
        body.contains(
            r#"data-layer="config" title="team: from the config file" tabindex="0">core</mark>"#
        ),
        "{body}"
    );
    assert!(body.contains(r#"data-layer="default" title="focus: the frontmatter default" tabindex="0">correctness</mark>"#), "{body}");
    assert!(body.contains(r#"data-layer="computed" title="today: computed by promptd (clock)" tabindex="0">2025-03-15</mark>"#), "{body}");
    // The same counter as `promptd test`.
    let text = "Review this python change for team core, focusing on correctness (as of \
                2025-03-15).\nBe strict.\nReport at most 5 findings.\n";
    let tokens = promptd::tokens::count_tokens(text);
    assert!(
        body.contains(&format!(r#"<span id="token-count">{tokens}</span>"#)),
        "{body}"
    );

    // Coercion and validation as the CLI's: errors name the field.
    let (_, _, body) = answer(http.get(format!(
        "{base}/studio/render?prompt=review&a.language=go&a.max_findings=zero"
    )))
    .await;
    assert!(body.contains(r#"data-ok="false""#));
    assert!(body.contains(r#"<li data-field="max_findings">"#), "{body}");
    let (_, _, body) = answer(http.get(format!("{base}/studio/render?prompt=review"))).await;
    assert!(
        body.contains(r#"<li data-field="language">required</li>"#),
        "{body}"
    );
    // Another tool's format: a Claude command's `$ARGUMENTS`, substituted as Claude Code does;
    // the value knows the line of its placeholder in the file.
    let (_, _, body) = answer(http.get(format!(
        "{base}/studio/render?prompt=fix-issue&a.arguments=42"
    )))
    .await;
    assert!(
        body.contains(r#"Fix issue #<mark class="layer layer-user" data-lines="5-5" data-layer="user" title="arguments: your argument" tabindex="0">42</mark> following"#),
        "{body}"
    );
    // A page never shows a CR (HTML reads CR LF as LF): the stats say the text has them.
    let (_, _, body) = answer(http.get(format!("{base}/studio/render?prompt=windows"))).await;
    assert!(body.contains(r#"<span id="crlf">"#), "{body}");
    let (_, _, body) = answer(http.get(format!("{base}/studio/render?prompt=fix-issue"))).await;
    assert!(!body.contains(r#"<span id="crlf">"#), "{body}");
    let (status, _, _) = answer(http.get(format!("{base}/studio/render?prompt=nope"))).await;
    assert_eq!(status, 404);
    let (status, _, _) = answer(http.get(format!("{base}/studio/render"))).await;
    assert_eq!(status, 400);
}

/// Reads the event stream until an event `reload` arrives.
async fn next_reload(response: &mut reqwest::Response) -> String {
    let mut seen = String::new();
    loop {
        let chunk = within("an event", response.chunk())
            .await
            .expect("event stream")
            .expect("stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(at) = seen.find("event: reload") {
            return seen[at..].to_string();
        }
    }
}

#[tokio::test]
async fn an_edit_on_disk_sends_a_reload_event_and_a_broken_edit_keeps_the_last_good_render() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let (_child, url, _log) = http_server(dir.path(), &[]).await;
    let base = base(&url);
    let http = studio_client();
    // The server answers once the folders are loaded.
    let (status, _, _) = answer(http.get(format!("{base}/?prompt=review"))).await;
    assert_eq!(status, 200);

    let mut events = within("events", http.get(format!("{base}/studio/events")).send())
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let edited = Instant::now();
    std::fs::write(
        dir.path().join("prompts/review.md"),
        review().replace("Report at most", "List at most"),
    )
    .unwrap();
    next_reload(&mut events).await;
    eprintln!("edit -> reload event: {:?}", edited.elapsed());
    let (_, _, body) =
        answer(http.get(format!("{base}/studio/render?prompt=review&a.language=go"))).await;
    assert!(body.contains("List at most"), "{body}");

    // A broken edit: the page names the file and line, and the last good text stays.
    std::fs::write(
        dir.path().join("prompts/review.md"),
        review()
            .replace("Report at most", "List at most")
            .replace("{{ focus }}", "{{ focus "),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let (_, _, page) = answer(http.get(format!("{base}/?prompt=review&a.language=go"))).await;
        if page.contains(r#"id="file-error""#) || Instant::now() > deadline {
            break page;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(page.contains(r#"id="file-error""#), "{page}");
    assert!(
        page.contains("prompts&#x2f;review.md:20:82: syntax error"),
        "{page}"
    );
    assert!(
        page.contains("List at most"),
        "the last good render is gone: {page}"
    );
}

#[tokio::test]
async fn a_large_registry_lists_its_first_thousand_and_searches_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    for i in 0..1005 {
        std::fs::write(
            prompts.join(format!("p{i:04}.md")),
            format!("---\ndescription: generated {i}\n---\nPrompt {i}.\n"),
        )
        .unwrap();
    }
    let (_child, url, _log) = http_server(
        dir.path(),
        &["--no-builtin-prompts", "--prompts", "prompts"],
    )
    .await;
    let base = base(&url);
    let http = studio_client();
    let (status, _, page) = answer(http.get(format!("{base}/"))).await;
    assert_eq!(status, 200);
    let user_list = page.split(r#"id="system-list""#).next().unwrap();
    assert_eq!(user_list.matches(r#"<li class="entry""#).count(), 1000);
    assert!(
        page.contains(r#"<p id="truncated""#),
        "the page says the list is cut"
    );
    assert!(page.contains(r#"Prompts <span class="count">1005</span>"#));
    assert!(!page.contains(">p1004<"));
    let (_, _, page) = answer(http.get(format!("{base}/?q=generated+1004"))).await;
    assert_eq!(page.matches(r#"<li class="entry""#).count(), 1, "{page}");
    assert!(
        page.contains(r#"<span class="name">p1004</span>"#),
        "{page}"
    );
    assert!(!page.contains(r#"<p id="truncated""#));
}

#[tokio::test]
async fn the_page_shows_system_prompts_only_when_mcp_serves_them() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let http = studio_client();
    let hidden = "careful reviewer";
    let (_child, url, _log) = http_server(dir.path(), &[]).await;
    let base_hidden = base(&url);
    let (status, _, page) = answer(http.get(format!("{base_hidden}/"))).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(r#"<span class="name">review</span>"#),
        "{page}"
    );
    assert!(
        !page.contains("reviewer_rules"),
        "a system prompt is listed: {page}"
    );
    let (_, _, page) = answer(http.get(format!("{base_hidden}/?prompt=reviewer_rules"))).await;
    assert!(page.contains("No prompt named"), "{page}");
    assert!(!page.contains(hidden), "{page}");
    let (status, _, body) =
        answer(http.get(format!("{base_hidden}/studio/render?prompt=reviewer_rules"))).await;
    assert_eq!(status, 404, "{body}");
    assert!(!body.contains(hidden), "{body}");
    let (_, _, page) = answer(http.get(format!("{base_hidden}/?q=reviewer"))).await;
    assert!(!page.contains("reviewer_rules"), "{page}");

    let (_child, url, _log) = http_server(dir.path(), &["--expose-system"]).await;
    let base_shown = base(&url);
    let (_, _, page) = answer(http.get(format!("{base_shown}/"))).await;
    assert!(page.contains("reviewer_rules"), "{page}");
    let (status, _, body) =
        answer(http.get(format!("{base_shown}/studio/render?prompt=reviewer_rules"))).await;
    assert_eq!(status, 200);
    assert!(body.contains(hidden), "{body}");
}

#[tokio::test]
async fn no_studio_serves_only_mcp() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let (_child, url, _log) = http_server(dir.path(), &["--no-studio"]).await;
    let (status, _, _) = answer(studio_client().get(format!("{}/", base(&url)))).await;
    assert_eq!(status, 404);
}

/// `promptd studio` with extra arguments; returns the child and the address it printed.
async fn studio(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut all = vec!["studio"];
    all.extend_from_slice(args);
    let mut cmd = command(dir, &all);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn promptd studio");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = within("the studio's address", async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.split("studio at ").nth(1) {
                return url.trim().to_string();
            }
        }
        panic!("promptd studio exited without an address");
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

#[tokio::test]
async fn promptd_studio_prints_a_tokened_address_and_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let opened = dir.path().join("opened.txt");
    let browser = dir.path().join("browser.sh");
    crate::support::process::write_script(
        &browser,
        &format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display()),
    );
    let (_child, url) = studio(
        dir.path(),
        &["--open"],
        &[("BROWSER", browser.to_str().unwrap())],
    )
    .await;
    let token = url.split("?token=").nth(1).expect("a token in the address");
    assert!(token.len() >= 32, "{url}");
    let base = url.split("/?").next().unwrap().to_string();
    let http = studio_client();
    let (status, _, _) = answer(http.get(format!("{base}/"))).await;
    assert_eq!(status, 401, "the generated token is required");
    let (status, headers, _) = answer(http.get(&url)).await;
    assert_eq!(status, 303, "{headers:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !opened.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), url);

    // Only loopback.
    let out = within(
        "studio --addr 0.0.0.0",
        command(dir.path(), &["studio", "--addr", "0.0.0.0:0"]).output(),
    )
    .await
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--addr 0.0.0.0:0: the studio is for one author on this machine; serve others with \
             `promptd serve --http ADDR --auth-token TOKEN`"
        ),
        "{err}"
    );
    assert!(!err.contains("  "), "stray spaces: {err:?}");
}

#[tokio::test]
async fn a_restarted_studio_keeps_its_port_and_token_so_an_open_page_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let http = studio_client();
    let (mut first, url) = studio(dir.path(), &[], &[]).await;
    let base = url.split("/?").next().unwrap().to_string();
    let (status, headers, _) = answer(http.get(&url)).await;
    assert_eq!(status, 303, "{headers:?}");
    let cookie = headers["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    first.kill().await.unwrap();
    first.wait().await.unwrap();
    let kept = std::fs::read_to_string(dir.path().join(".promptd/studio/.gitignore")).unwrap();
    assert_eq!(kept, "*\n", "the remembered address stays out of git");

    let (_second, again) = studio(dir.path(), &[], &[]).await;
    assert_eq!(again, url, "the same port and token on the next start");
    let (status, _, body) = answer(http.get(format!("{base}/")).header("cookie", &cookie)).await;
    assert_eq!(status, 200, "the open page's cookie still works: {body}");
    let events = within(
        "the event stream",
        http.get(format!("{base}/studio/events"))
            .header("cookie", &cookie)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(
        events.status().as_u16(),
        200,
        "the page's event stream reconnects"
    );
    drop(events);

    let mut second = _second;
    second.kill().await.unwrap();
    second.wait().await.unwrap();

    // A port another process holds: the studio starts on a free one with the same token.
    let _blocker = std::net::TcpListener::bind(base.trim_start_matches("http://")).unwrap();
    let (_third, moved) = studio(dir.path(), &[], &[]).await;
    assert_ne!(moved, url);
    assert_eq!(moved.split("?token=").nth(1), url.split("?token=").nth(1));
}

#[tokio::test]
async fn the_page_lists_the_files_that_failed_to_load_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    std::fs::write(
        dir.path().join("prompts/broken.md"),
        "---\ndescription: [unclosed\n---\nBody\n",
    )
    .unwrap();
    let (_child, url, _log) = http_server(dir.path(), &[]).await;
    let (status, _, page) = answer(studio_client().get(format!("{}/", base(&url)))).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(r#"<h2 id="not-loaded-title">Not loaded <span class="count">1</span>"#),
        "{page}"
    );
    assert!(page.contains("broken.md:3:1"), "{page}");
}

/// An MCP client refused by a token-protected server looks for OAuth (Claude Code does): every
/// discovery and registration path answers a JSON 404, and the MCP endpoint a 401 with
/// `WWW-Authenticate: Bearer`; none of them the studio's sign-in page.
#[tokio::test]
async fn oauth_discovery_gets_json_never_the_studio_page() {
    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path());
    let (_child, url, _log) = http_server(dir.path(), &["--auth-token", TOKEN]).await;
    let base = base(&url);
    let http = studio_client();
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let (status, headers, body) = answer(http.get(format!("{base}{path}"))).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(
            headers[reqwest::header::CONTENT_TYPE],
            "application/json",
            "{path}"
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert!(
            v["error_description"]
                .as_str()
                .unwrap()
                .contains("bearer token"),
            "{body}"
        );
    }
    let (status, _, body) = answer(http.post(format!("{base}/register")).body("{}")).await;
    assert_eq!(status, 404);
    assert!(!body.contains("<!doctype"), "{body}");
    let (status, _, body) = answer(http.get(format!("{base}/nowhere"))).await;
    assert_eq!(status, 404);
    assert!(!body.contains("<!doctype"), "{body}");
    let (status, headers, body) = answer(
        http.post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(headers[reqwest::header::WWW_AUTHENTICATE], "Bearer");
    assert!(!body.contains("<!doctype"), "{body}");
}
