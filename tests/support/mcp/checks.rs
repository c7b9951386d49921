//! Protocol checks shared by the stdio and HTTP tests: the same assertions over both transports.

use std::path::Path;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CompleteRequestParams, ErrorCode, GetPromptRequestParams,
    PaginatedRequestParams, Reference,
};
use serde_json::{Value, json};

use super::{Session, within};

type Client = rmcp::service::RunningService<rmcp::RoleClient, super::TestClient>;

fn args(v: Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().expect("object")
}

fn text_of(content: &rmcp::model::ContentBlock) -> String {
    content.as_text().expect("text content").text.clone()
}

/// Every name from `prompts/list`, page by page.
pub async fn list_all_names(client: &Client) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = within(
            "prompts/list",
            client.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor))),
        )
        .await
        .expect("prompts/list");
        pages += 1;
        names.extend(page.prompts.iter().map(|p| p.name.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
        assert!(pages < 100, "pagination does not end");
    }
    (names, pages)
}

/// Every transport-independent check, in order, on a server started with the fixture prompts
/// and `--page-size 3` in `cwd`.
pub async fn check_all(s: &Session, cwd: &Path) {
    check_server_info(s);
    check_list(s).await;
    check_get(s).await;
    check_errors(s).await;
    check_tool(s, cwd).await;
    check_completion(s).await;
}

/// The server identifies itself and advertises what the issue promises.
pub fn check_server_info(s: &Session) {
    let info = s.client.peer_info().expect("server info");
    let server = info.server_info.as_ref().expect("implementation");
    assert_eq!(server.name, "promptd");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let caps = &info.capabilities;
    assert_eq!(
        caps.prompts.as_ref().and_then(|p| p.list_changed),
        Some(true)
    );
    assert!(caps.tools.is_some());
    assert!(caps.completions.is_some());
}

/// `prompts/list` with `--page-size 3`: stable order, every user prompt exactly once, system
/// prompts hidden, metadata converted.
pub async fn check_list(s: &Session) {
    let (names, pages) = list_all_names(&s.client).await;
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "stable, duplicate-free order");
    assert!(
        pages >= 3,
        "page size 3 must give several pages, got {pages}"
    );
    for expected in ["greet", "dialogue", "pick", "code_review"] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} in {names:?}"
        );
    }
    assert!(
        !names.contains(&"hidden".to_string()),
        "system prompts are hidden"
    );
    assert!(!names.contains(&"enhance_prompt".to_string()));

    let first = within("first page", s.client.list_prompts(None))
        .await
        .unwrap();
    assert_eq!(first.prompts.len(), 3);
    let all = within("all prompts", s.client.list_all_prompts())
        .await
        .unwrap();
    let greet = all.iter().find(|p| p.name == "greet").expect("greet");
    assert_eq!(greet.title.as_deref(), Some("Greeting"));
    assert_eq!(greet.description.as_deref(), Some("Greets someone."));
    let greet_args: Vec<(String, Option<bool>, Option<String>)> = greet
        .arguments
        .iter()
        .flatten()
        .map(|a| (a.name.clone(), a.required, a.description.clone()))
        .collect();
    assert_eq!(
        greet_args,
        [
            ("who".into(), Some(true), Some("Who to greet".into())),
            ("times".into(), Some(false), None),
            ("shout".into(), Some(false), None),
        ]
    );
}

/// `prompts/get` with string arguments: coercion is visible in the text; roles split messages.
pub async fn check_get(s: &Session) {
    let r = within(
        "prompts/get greet",
        s.client.get_prompt(
            GetPromptRequestParams::new("greet")
                .with_arguments(args(json!({"who": "Ada", "times": "2", "shout": "yes"}))),
        ),
    )
    .await
    .expect("prompts/get greet");
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.description.as_deref(), Some("Greets someone."));
    let text = text_of(&r.messages[0].content);
    assert_eq!(text, "HELLO ADA! HELLO ADA! (times=2, shout=true)\n");

    // A blank optional field is "not supplied": the default applies.
    let r = within(
        "prompts/get greet with blanks",
        s.client.get_prompt(
            GetPromptRequestParams::new("greet")
                .with_arguments(args(json!({"who": "Bo", "times": "", "shout": ""}))),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        text_of(&r.messages[0].content),
        "Hello Bo! (times=1, shout=false)\n"
    );

    let r = within(
        "prompts/get dialogue",
        s.client.get_prompt(
            GetPromptRequestParams::new("dialogue").with_arguments(args(json!({"topic": "MCP"}))),
        ),
    )
    .await
    .unwrap();
    let roles: Vec<String> = r
        .messages
        .iter()
        .map(|m| format!("{:?}: {}", m.role, text_of(&m.content)))
        .collect();
    assert_eq!(
        roles,
        [
            "User: Tell me about MCP.",
            "Assistant: Gladly. What about MCP?",
            "User: Everything."
        ]
    );
}

fn expect_invalid_params(result: Result<impl std::fmt::Debug, ServiceError>, needle: &str) {
    match result {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
            assert!(
                e.message.contains(needle),
                "`{}` should name `{needle}`",
                e.message
            );
        }
        other => panic!("expected -32602 naming {needle}, got {other:?}"),
    }
}

/// Unknown prompt, missing argument, invalid argument → -32602 naming the culprit.
pub async fn check_errors(s: &Session) {
    let c = &s.client;
    expect_invalid_params(
        within(
            "unknown",
            c.get_prompt(GetPromptRequestParams::new("no_such_prompt")),
        )
        .await,
        "no_such_prompt",
    );
    expect_invalid_params(
        within(
            "missing",
            c.get_prompt(GetPromptRequestParams::new("greet")),
        )
        .await,
        "who",
    );
    expect_invalid_params(
        within(
            "not an integer",
            c.get_prompt(
                GetPromptRequestParams::new("greet")
                    .with_arguments(args(json!({"who": "x", "times": "many"}))),
            ),
        )
        .await,
        "times",
    );
    expect_invalid_params(
        within(
            "above maximum",
            c.get_prompt(
                GetPromptRequestParams::new("greet")
                    .with_arguments(args(json!({"who": "x", "times": "9"}))),
            ),
        )
        .await,
        "times",
    );
    // System prompts are not offered as native prompts without --expose-system.
    expect_invalid_params(
        within(
            "hidden",
            c.get_prompt(GetPromptRequestParams::new("hidden")),
        )
        .await,
        "hidden",
    );
    // Bad tool arguments are -32602 too.
    expect_invalid_params(
        within(
            "bad tool args",
            c.call_tool(
                CallToolRequestParams::new("wit-get-prompts")
                    .with_arguments(args(json!({"promptNmae": "greet"}))),
            ),
        )
        .await,
        "promptNmae",
    );
}

async fn tool(c: &Client, a: Value) -> (Value, Option<bool>) {
    let r = within(
        "wit-get-prompts",
        c.call_tool(CallToolRequestParams::new("wit-get-prompts").with_arguments(args(a))),
    )
    .await
    .expect("tools/call");
    let structured = r.structured_content.clone().expect("structuredContent");
    let text: Value = serde_json::from_str(&text_of(&r.content[0])).expect("JSON text content");
    assert_eq!(text, structured, "text content and structuredContent agree");
    (structured, r.is_error)
}

/// `tools/list` and every `wit-get-prompts` mode, compared with what the CLI prints for the same
/// request (one library call behind both).
pub async fn check_tool(s: &Session, cwd: &Path) {
    let c = &s.client;
    let tools = within("tools/list", c.list_all_tools()).await.unwrap();
    let t = tools
        .iter()
        .find(|t| t.name == "wit-get-prompts")
        .expect("tool listed");
    let props = t.input_schema.get("properties").expect("properties");
    for field in [
        "promptName",
        "promptNames",
        "includeContent",
        "args",
        "includeSystem",
    ] {
        let desc = props[field]["description"].as_str().unwrap_or("");
        assert!(!desc.is_empty(), "{field} has a description");
    }
    let out = t.output_schema.as_ref().expect("outputSchema");
    assert!(out["properties"].get("success").is_some(), "{out:?}");

    // Single, with string arguments coerced.
    let (v, err) = tool(
        c,
        json!({"promptName": "greet", "args": {"who": "Ada", "times": "3"}}),
    )
    .await;
    assert_eq!(err, Some(false));
    assert_eq!(v["success"], true);
    assert_eq!(
        v["data"]["prompt"]["content"],
        "Hello Ada! Hello Ada! Hello Ada! (times=3, shout=false)\n"
    );
    assert_eq!(v["data"]["prompt"]["provenance"]["times"], "user");
    let cli = cli_json(
        cwd,
        &[
            "get", "greet", "--arg", "who=Ada", "--arg", "times=3", "--json",
        ],
    );
    assert_eq!(v, cli, "same envelope as `promptd get --json`");

    // `args` JSON-encoded as a string, as the MCP Inspector sends it: the same answer.
    let (encoded, _) = tool(
        c,
        json!({"promptName": "greet", "args": "{\"who\": \"Ada\", \"times\": \"3\"}"}),
    )
    .await;
    assert_eq!(encoded, v, "string-encoded args are decoded");
    // A string that does not encode an object is still invalid params, naming the parameter.
    expect_invalid_params(
        within(
            "args not an object",
            c.call_tool(
                CallToolRequestParams::new("wit-get-prompts")
                    .with_arguments(args(json!({"promptName": "greet", "args": "[1]"}))),
            ),
        )
        .await,
        "`args`: expected a JSON object",
    );

    // Metadata only.
    let (v, _) = tool(c, json!({"promptName": "greet", "includeContent": false})).await;
    assert!(v["data"]["prompt"].get("content").is_none());
    assert_eq!(v["metadata"]["contentIncluded"], false);

    // Listing, metadata only: same as `promptd list --json` minus system prompts.
    let (v, _) = tool(c, json!({"includeContent": false})).await;
    let names: Vec<&str> = v["data"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"greet") && !names.contains(&"hidden"));
    assert_eq!(v["data"]["totalCount"], names.len());
    // System prompts are not served without --expose-system, whatever the tool is asked.
    let (v, _) = tool(c, json!({"includeContent": false, "includeSystem": true})).await;
    assert_eq!(v["data"]["totalCount"], names.len(), "{v}");
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("--expose-system")
    );
    let (v, err) = tool(c, json!({"promptName": "hidden"})).await;
    assert_eq!((v["success"].as_bool(), err), (Some(false), Some(true)));

    // Listing with content.
    let (v, _) = tool(c, json!({"args": {"who": "Z", "topic": "T"}})).await;
    let greet = v["data"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "greet")
        .unwrap()
        .clone();
    assert_eq!(greet["content"], "Hello Z! (times=1, shout=false)\n");

    // Batch, with one unknown name.
    let (v, err) = tool(
        c,
        json!({"promptNames": ["greet", "nope"], "args": {"who": "B"}}),
    )
    .await;
    assert_eq!(v["data"]["totalCount"], 1);
    assert_eq!(v["success"], false);
    assert_eq!(err, Some(true));
    assert!(
        v["errors"][0]
            .as_str()
            .unwrap()
            .contains("'nope' not found")
    );

    // Not found.
    let (v, err) = tool(c, json!({"promptName": "nope"})).await;
    assert_eq!(err, Some(true));
    assert_eq!(v["success"], false);
    assert_eq!(v["data"], Value::Null);
    assert_eq!(
        v["errors"][0],
        "Prompt 'nope' not found. Use wit-get-prompts without promptName to see available prompts."
    );
}

fn cli_json(cwd: &Path, a: &[&str]) -> Value {
    let out = crate::support::process::promptd()
        .args(["--now", "2025-03-15", "--prompts"])
        .arg(super::fixture_prompts())
        .args(a)
        .current_dir(cwd)
        .output()
        .expect("run promptd");
    serde_json::from_slice(&out.stdout).expect("CLI prints JSON")
}

/// `completion/complete`: enum and example values filtered by prefix, booleans, unknown prompt.
pub async fn check_completion(s: &Session) {
    let c = &s.client;
    let complete = |arg: &str, typed: &str| {
        let params = CompleteRequestParams::new(
            Reference::for_prompt("pick"),
            ArgumentInfo::new(arg, typed),
        );
        c.complete(params)
    };
    let r = within("complete language", complete("language", "r"))
        .await
        .unwrap();
    assert_eq!(r.completion.values, ["rust", "ruby"]);
    assert_eq!(r.completion.total, Some(2));
    assert_eq!(r.completion.has_more, Some(false));
    let r = within("complete language, empty", complete("language", ""))
        .await
        .unwrap();
    assert_eq!(r.completion.values.len(), 5);
    let r = within("complete framework", complete("framework", "A"))
        .await
        .unwrap();
    assert_eq!(r.completion.values, ["axum", "actix-web"]);
    let r = within("complete verbose", complete("verbose", ""))
        .await
        .unwrap();
    assert_eq!(r.completion.values, ["true", "false"]);
    let r = within("complete unknown argument", complete("nothing", ""))
        .await
        .unwrap();
    assert!(r.completion.values.is_empty());
    let params =
        CompleteRequestParams::new(Reference::for_prompt("nope"), ArgumentInfo::new("a", ""));
    expect_invalid_params(
        within("complete unknown prompt", c.complete(params)).await,
        "nope",
    );
}

async fn names(c: &Client) -> Vec<String> {
    list_all_names(c).await.0
}

/// Waits (bounded) for stderr to log `<file>:<line>:...[<code>]...(keeping the last good
/// version)` and checks that a line number follows the file name.
async fn wait_kept_logged(s: &Session, file: &Path, code: &str) {
    let at = format!("{}:", file.canonicalize().unwrap().display());
    let tag = format!("[{code}]");
    let logged = |log: &str| {
        log.lines()
            .find(|l| {
                l.contains(&at) && l.contains(&tag) && l.contains("keeping the last good version")
            })
            .map(str::to_string)
    };
    let started = std::time::Instant::now();
    let line = loop {
        if let Some(line) = logged(&s.stderr()) {
            break line;
        }
        assert!(
            started.elapsed() < super::STEP,
            "stderr names {at}line: {tag} reason: {}",
            s.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let after = &line[line.find(&at).unwrap() + at.len()..];
    assert!(
        after.starts_with(|c: char| c.is_ascii_digit()),
        "file:line in {line}"
    );
}

/// The text of the prompt `live`.
pub async fn live_text(s: &Session) -> String {
    get_live(&s.client).await
}

async fn get_live(c: &Client) -> String {
    let r = within(
        "get live",
        c.get_prompt(GetPromptRequestParams::new("live")),
    )
    .await
    .expect("get live");
    text_of(&r.messages[0].content)
}

/// Hot reload in a temporary prompts folder: create, edit, no-op save, broken YAML edit and
/// broken template edit (last good version still served, no `list_changed`, `file:line: reason`
/// logged), temp+rename, delete + create, delete.
pub async fn check_hot_reload(s: &mut Session, dir: &Path) {
    let quiet = Duration::from_millis(600);
    let file = dir.join("live.md");
    // The server answers the handshake while it reads its folders; a file created before that
    // first read is simply in it (no client saw a list without it, so none is told). List once,
    // which waits for the first read, so the file is new to this client.
    assert!(!names(&s.client).await.contains(&"live".to_string()));
    // Create.
    std::fs::write(&file, "---\ntitle: Live\n---\nversion one\n").unwrap();
    s.next_change("list_changed after create").await;
    assert!(names(&s.client).await.contains(&"live".to_string()));
    assert_eq!(get_live(&s.client).await, "version one\n");

    // Edit in place (truncate + write).
    std::fs::write(&file, "---\ntitle: Live\n---\nversion two\n").unwrap();
    s.next_change("list_changed after edit").await;
    assert_eq!(get_live(&s.client).await, "version two\n");

    // A save that changes nothing sends nothing.
    std::fs::write(&file, "---\ntitle: Live\n---\nversion two\n").unwrap();
    s.assert_no_change(quiet, "no-op save").await;

    // Broken YAML edit: the last good version is still served, the reason is logged.
    std::fs::write(&file, "---\ntitle: [unclosed\n---\nversion three\n").unwrap();
    // Wait (bounded) for the reload to log the problem, then check what is served.
    wait_kept_logged(s, &file, "frontmatter").await;
    s.assert_no_change(quiet, "a broken YAML edit changes nothing served")
        .await;
    assert_eq!(
        get_live(&s.client).await,
        "version two\n",
        "last good version still served"
    );

    // Broken template edit (`{% if %}` never closed) of a prompt that was Jinja: kept too, rather
    // than silently served as plain text.
    std::fs::write(&file, "---\ntitle: Live\n---\n{% if x %}\nversion three\n").unwrap();
    wait_kept_logged(s, &file, "template-syntax").await;
    s.assert_no_change(quiet, "a broken template edit changes nothing served")
        .await;
    assert_eq!(
        get_live(&s.client).await,
        "version two\n",
        "last good version still served after a broken template edit"
    );

    // Write a temporary file, then rename it over the original (what many editors do).
    let tmp = dir.join(".live.md.tmp");
    std::fs::write(&tmp, "---\ntitle: Live\n---\nversion four\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    s.next_change("list_changed after rename").await;
    assert_eq!(get_live(&s.client).await, "version four\n");

    // Delete + create under the same name. On a loaded machine the two can fall into two
    // bursts: a reload without the prompt, then one with it.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, "---\ntitle: Live\n---\nversion five\n").unwrap();
    s.next_change("list_changed after delete + create").await;
    if !names(&s.client).await.contains(&"live".to_string()) {
        s.next_change("list_changed after the create, reloaded on its own")
            .await;
    }
    assert_eq!(get_live(&s.client).await, "version five\n");

    // Delete.
    std::fs::remove_file(&file).unwrap();
    s.next_change("list_changed after delete").await;
    assert!(!names(&s.client).await.contains(&"live".to_string()));
}

/// A folder laid out as Kubernetes lays out a ConfigMap or Secret volume, written the way the
/// kubelet updates one: each version's files in a new hidden folder, the link `..data` pointed
/// at it by renaming a new link over it, each visible file a link through `..data`, the previous
/// version's folder deleted. No event names a visible file when its content changes.
#[cfg(unix)]
pub struct ProjectedVolume {
    dir: std::path::PathBuf,
    versions: usize,
}

#[cfg(unix)]
impl ProjectedVolume {
    pub fn new(dir: &Path) -> ProjectedVolume {
        ProjectedVolume {
            dir: dir.to_path_buf(),
            versions: 0,
        }
    }

    /// Publishes `files` (name, content) as the volume's whole content.
    pub fn publish(&mut self, files: &[(&str, &str)]) {
        use std::os::unix::fs::symlink;
        self.versions += 1;
        let version = format!(
            "..2026_11_27_16_00_{:02}.{:09}",
            self.versions, self.versions
        );
        std::fs::create_dir(self.dir.join(&version)).unwrap();
        for (name, text) in files {
            std::fs::write(self.dir.join(&version).join(name), text).unwrap();
        }
        let data = self.dir.join("..data");
        let previous = std::fs::read_link(&data).ok();
        let tmp = self.dir.join("..data_tmp");
        symlink(&version, &tmp).unwrap();
        std::fs::rename(&tmp, &data).unwrap();
        // Visible names: links for new keys, links of removed keys deleted.
        for entry in std::fs::read_dir(&self.dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("..") && !files.iter().any(|(n, _)| *n == name) {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        for (name, _) in files {
            let visible = self.dir.join(name);
            if std::fs::symlink_metadata(&visible).is_err() {
                symlink(Path::new("..data").join(name), &visible).unwrap();
            }
        }
        if let Some(previous) = previous {
            std::fs::remove_dir_all(self.dir.join(previous)).unwrap();
        }
    }
}

/// Hot reload of a prompt folder that is a Kubernetes volume ([`ProjectedVolume`]): a changed
/// prompt, an added one and a removed one, each reported by `list_changed` and served.
#[cfg(unix)]
pub async fn check_projected_volume_reload(s: &mut Session, volume: &mut ProjectedVolume) {
    let live = |v: &str| format!("---\ntitle: Live\n---\nversion {v}\n");
    assert_eq!(get_live(&s.client).await, "version one\n");
    volume.publish(&[("live.md", &live("two"))]);
    s.next_change("list_changed after the volume's update")
        .await;
    assert_eq!(get_live(&s.client).await, "version two\n");
    volume.publish(&[("live.md", &live("three")), ("extra.md", "Extra.\n")]);
    s.next_change("list_changed after a key was added").await;
    assert_eq!(get_live(&s.client).await, "version three\n");
    assert!(names(&s.client).await.contains(&"extra".to_string()));
    volume.publish(&[("live.md", &live("three"))]);
    s.next_change("list_changed after a key was removed").await;
    assert!(!names(&s.client).await.contains(&"extra".to_string()));
    assert_eq!(get_live(&s.client).await, "version three\n");
}
