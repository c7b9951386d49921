//! Several stateless replicas (`serve --http --stateless`) over one prompt folder, as behind a
//! load balancer: one client alternating its requests between two replicas (list, get, tool
//! call), before and after an edit of the shared folder; the same through real nginx with the
//! shipped example config, driven by rmcp's client; and the operator endpoints `/health`,
//! `/ready` and `/metrics` (OpenMetrics text, parsed).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::mcp::{http_client, http_server, within};

const GREET_V1: &str = "---\ntitle: Greet\narguments:\n  who: { type: string, required: true }\n---\nHello {{ who }}, version one.\n";
const GREET_V2: &str = "---\ntitle: Greet\narguments:\n  who: { type: string, required: true }\n---\nHello {{ who }}, version two.\n";

/// A replica's base URL (`http://127.0.0.1:PORT`) from its MCP URL.
fn base(mcp_url: &str) -> String {
    mcp_url.trim_end_matches("/mcp").to_string()
}

/// A client that keeps no session: each JSON-RPC request is one POST, to whichever replica it
/// is sent to.
struct Client {
    http: reqwest::Client,
    next_id: u64,
}

impl Client {
    fn new() -> Client {
        Client {
            http: http(),
            next_id: 1,
        }
    }

    /// Sends one request to `url`; returns its JSON-RPC response (JSON or a one-event SSE
    /// stream). Never carries a session id.
    async fn call(&mut self, url: &str, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = within(
            method,
            self.http
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .json(&body)
                .send(),
        )
        .await
        .unwrap_or_else(|e| panic!("{method} to {url}: {e}"));
        assert_eq!(response.status(), 200, "{method} to {url}");
        assert!(
            response.headers().get("mcp-session-id").is_none(),
            "a stateless replica handed out a session"
        );
        let text = within("response body", response.text()).await.unwrap();
        let json_text = if text.trim_start().starts_with('{') {
            text.trim().to_string()
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .find(|d| d.starts_with('{'))
                .unwrap_or_else(|| panic!("no JSON-RPC message in {text:?}"))
                .to_string()
        };
        let message: Value = serde_json::from_str(&json_text).unwrap();
        assert_eq!(message["id"], id, "{message}");
        message
    }

    async fn initialize(&mut self, url: &str) -> Value {
        self.call(
            url,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "replica-test", "version": "0"}}),
        )
        .await
    }

    async fn greet(&mut self, url: &str) -> String {
        let r = self
            .call(
                url,
                "prompts/get",
                json!({"name": "greet", "arguments": {"who": "Ada"}}),
            )
            .await;
        r["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_string()
    }

    /// The `version_hash` of `greet` in the `wit-get-prompts` listing.
    async fn listed_version(&mut self, url: &str) -> String {
        let r = self
            .call(
                url,
                "tools/call",
                json!({"name": "wit-get-prompts", "arguments": {"includeContent": false}}),
            )
            .await;
        let body: Value =
            serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        body["data"]["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "greet")
            .unwrap_or_else(|| panic!("{body}"))["version_hash"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// A plain HTTP client (the TLS provider installed first, as for every client of the crate).
fn http() -> reqwest::Client {
    promptd::llm::install_tls_provider();
    reqwest::Client::new()
}

/// `GET base+path`: status and body.
async fn get(base: &str, path: &str) -> (u16, String) {
    let response = within(path, http().get(format!("{base}{path}")).send())
        .await
        .unwrap_or_else(|e| panic!("GET {base}{path}: {e}"));
    let status = response.status().as_u16();
    (status, within("body", response.text()).await.unwrap())
}

/// The value of the sample `name` (with its labels, exactly as written) in OpenMetrics text;
/// 0 when absent.
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// The `version` label of `promptd_registry_version`.
fn registry_version(metrics: &str) -> String {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("promptd_registry_version{version=\""))
        .and_then(|l| l.split('"').next())
        .unwrap_or_else(|| panic!("no registry version in\n{metrics}"))
        .to_string()
}

/// Polls `f` until it returns true, within 10 s.
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn prompts_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greet.md"), GREET_V1).unwrap();
    dir
}

async fn two_replicas(cwd: &Path, prompts: &Path) -> [(tokio::process::Child, String); 2] {
    let prompts = prompts.display().to_string();
    let args = ["--stateless", "--prompts", prompts.as_str()];
    let (a, url_a, _) = http_server(cwd, &args).await;
    let (b, url_b, _) = http_server(cwd, &args).await;
    [(a, url_a), (b, url_b)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_alternates_between_two_stateless_replicas() {
    let cwd = tempfile::tempdir().unwrap();
    let prompts = prompts_dir();
    let [(_a, url_a), (_b, url_b)] = two_replicas(cwd.path(), prompts.path()).await;
    let urls = [url_a.as_str(), url_b.as_str()];
    for url in urls {
        let base = base(url);
        assert_eq!(get(&base, "/health").await, (200, "ok\n".into()));
        eventually("replica ready", || {
            let base = base.clone();
            async move { get(&base, "/ready").await.0 == 200 }
        })
        .await;
    }

    let mut c = Client::new();
    let init = c.initialize(urls[0]).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "promptd", "{init}");
    // Every later request goes to the other replica than the one before.
    let listed = c.call(urls[1], "prompts/list", json!({})).await;
    let listed = listed["result"]["prompts"].as_array().unwrap().clone();
    assert!(listed.iter().any(|p| p["name"] == "greet"), "{listed:?}");
    assert_eq!(c.greet(urls[0]).await, "Hello Ada, version one.\n");
    let version_b = c.listed_version(urls[1]).await;
    let version_a = c.listed_version(urls[0]).await;
    assert_eq!(version_a, version_b, "both replicas serve the same version");
    assert_eq!(c.greet(urls[1]).await, "Hello Ada, version one.\n");

    // A failed render is an error answer and a counted render error.
    let bad = c
        .call(
            urls[0],
            "prompts/get",
            json!({"name": "greet", "arguments": {}}),
        )
        .await;
    assert!(
        bad["error"]["message"].as_str().unwrap().contains("who"),
        "{bad}"
    );

    let before: Vec<String> = {
        let mut v = Vec::new();
        for url in urls {
            v.push(get(&base(url), "/metrics").await.1);
        }
        v
    };

    // An edit of the shared folder reaches both replicas.
    std::fs::write(prompts.path().join("greet.md"), GREET_V2).unwrap();
    for url in urls {
        let url = url.to_string();
        eventually("the edit served by every replica", || {
            let url = url.clone();
            let mut c = Client::new();
            async move { c.greet(&url).await == "Hello Ada, version two.\n" }
        })
        .await;
    }
    let new_a = c.listed_version(urls[0]).await;
    let new_b = c.listed_version(urls[1]).await;
    assert_eq!(new_a, new_b);
    assert_ne!(new_a, version_a, "the listing's hash changed with the edit");
    assert_eq!(c.greet(urls[1]).await, "Hello Ada, version two.\n");
    assert_eq!(c.greet(urls[0]).await, "Hello Ada, version two.\n");

    // /metrics of each replica: its own requests, the render error, the reload, the same
    // registry version on both.
    let mut versions = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let (status, text) = get(&base(url), "/metrics").await;
        assert_eq!(status, 200);
        assert!(text.ends_with("# EOF\n"), "{text}");
        let gets = "promptd_mcp_requests_total{method=\"prompts_get\",outcome=\"ok\"}";
        assert!(sample(&text, gets) > sample(&before[i], gets), "{text}");
        assert!(
            sample(
                &text,
                "promptd_mcp_request_duration_seconds_count{method=\"prompts_get\"}"
            ) >= 2.0,
            "{text}"
        );
        assert!(
            sample(&text, "promptd_reloads_total{outcome=\"ok\"}") >= 1.0,
            "{text}"
        );
        // System prompts count too; `prompts/list` leaves them out.
        assert!(
            sample(&text, "promptd_prompts") > listed.len() as f64,
            "{text}"
        );
        versions.push(registry_version(&text));
        assert_ne!(registry_version(&before[i]), versions[i]);
    }
    assert_eq!(versions[0], versions[1]);
    let errors = |t: &str| sample(t, "promptd_render_errors_total");
    assert_eq!(errors(&before[0]), 1.0, "{}", before[0]);
    assert_eq!(errors(&before[1]), 0.0, "{}", before[1]);
    let failed_get = "promptd_mcp_requests_total{method=\"prompts_get\",outcome=\"error\"}";
    assert_eq!(sample(&before[0], failed_get), 1.0);
}

#[cfg_attr(
    not(feature = "system-tests"),
    ignore = "needs nginx (scripts/setup installs it)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_replicas_behind_real_nginx_serve_an_rmcp_client() {
    let nginx = which_nginx();
    let cwd = tempfile::tempdir().unwrap();
    let prompts = prompts_dir();
    let [(_a, url_a), (_b, url_b)] = two_replicas(cwd.path(), prompts.path()).await;
    let port = |url: &str| {
        url.rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("/mcp")
            .to_string()
    };

    // The shipped example, with this test's ports.
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/nginx/promptd.conf"),
    )
    .unwrap();
    let front = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let front_port = front.local_addr().unwrap().port();
    drop(front);
    let conf_dir = tempfile::tempdir().unwrap();
    let site = example
        .replace("127.0.0.1:8801", &format!("127.0.0.1:{}", port(&url_a)))
        .replace("127.0.0.1:8802", &format!("127.0.0.1:{}", port(&url_b)))
        .replace("127.0.0.1:8800", &format!("127.0.0.1:{front_port}"));
    assert_ne!(site, example, "the example's ports were not found");
    let tmp = conf_dir.path().display();
    let conf = format!(
        "worker_processes 1;\nerror_log stderr warn;\npid {tmp}/nginx.pid;\nevents {{}}\n\
         http {{\n access_log off;\n client_body_temp_path {tmp}/body;\n \
         proxy_temp_path {tmp}/proxy;\n{site}\n}}\n"
    );
    let conf_path = conf_dir.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let mut proxy = tokio::process::Command::new(nginx)
        .args(["-e", "stderr", "-p"])
        .arg(conf_dir.path())
        .arg("-c")
        .arg(&conf_path)
        .args(["-g", "daemon off; master_process off;"])
        .kill_on_drop(true)
        .spawn()
        .expect("start nginx");
    let front = format!("http://127.0.0.1:{front_port}");
    eventually("nginx answers /ready", || {
        let front = front.clone();
        async move {
            match http().get(format!("{front}/ready")).send().await {
                Ok(r) => r.status() == 200,
                Err(_) => false,
            }
        }
    })
    .await;
    assert_eq!(get(&front, "/health").await.0, 200);
    assert_eq!(
        get(&front, "/metrics").await.0,
        404,
        "metrics stay per replica"
    );

    // rmcp's streamable HTTP client through nginx, its requests spread over both replicas.
    let (client, _changed) = http_client(&format!("{front}/mcp"), None).await;
    for round in 0..6 {
        let listed = within("prompts/list", client.list_prompts(None))
            .await
            .unwrap();
        assert!(listed.prompts.iter().any(|p| p.name == "greet"));
        let mut args = serde_json::Map::new();
        args.insert("who".into(), json!("Ada"));
        let got = within(
            "prompts/get",
            client
                .get_prompt(rmcp::model::GetPromptRequestParams::new("greet").with_arguments(args)),
        )
        .await
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let text = serde_json::to_value(&got.messages[0].content).unwrap();
        assert_eq!(text["text"], "Hello Ada, version one.\n");
        let tool = within(
            "tools/call",
            client.call_tool(
                rmcp::model::CallToolRequestParams::new("wit-get-prompts").with_arguments(
                    json!({"promptName": "greet", "args": {"who": "Ada"}})
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            ),
        )
        .await
        .unwrap();
        assert_ne!(tool.is_error, Some(true), "{tool:?}");
    }
    // Both replicas answered some of them.
    for url in [&url_a, &url_b] {
        let text = get(&base(url), "/metrics").await.1;
        let gets = "promptd_mcp_requests_total{method=\"prompts_get\",outcome=\"ok\"}";
        assert!(
            sample(&text, gets) >= 1.0,
            "{url} answered no prompts/get:\n{text}"
        );
    }
    within("client shutdown", client.cancel()).await.unwrap();
    let _ = proxy.start_kill();
    let _ = within("nginx exit", proxy.wait()).await;
}

/// nginx, installed by `scripts/setup` (Debian's `nginx-light`); `PROMPTD_NGINX` overrides.
fn which_nginx() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("PROMPTD_NGINX") {
        return p.into();
    }
    ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
        .expect(
            "nginx missing: run scripts/setup (installs Debian's nginx-light) or set PROMPTD_NGINX",
        )
}
