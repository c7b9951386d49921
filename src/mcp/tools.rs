//! The tools the server offers, as one table: each entry is a definition (name, schemas,
//! annotations) and a call that converts MCP arguments to a library request and the library's
//! answer back to a tool result. Adding a tool (`enhance_prompt`, `compose_prompt`, …) means
//! adding one [`ToolEntry`] to [`TOOLS`].

use std::future::Future;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::Serialize;
use serde::de::DeserializeOwned;

use rmcp::service::{Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::compose::{ComposedPrompt, ToolDefinition};
use crate::enhance::{EnhanceRequest, EnhanceResult, result_text, validate};
use crate::library::{GetPromptsRequest, GetPromptsResponse, PromptLibrary, TOOL_NAME, Visibility};
use crate::limits::Limits;
use crate::stages::{ComposeInput, Stages};
use crate::workspace::{Workspace, WorkspacePolicy};

/// What a tool call can use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub library: Arc<PromptLibrary>,
    pub stages: Arc<Stages>,
    /// The calling client (for its roots); `None` outside a session.
    pub peer: Option<Peer<RoleServer>>,
    /// Which prompts the client is served.
    pub visibility: Visibility,
}

/// The future a tool call returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<CallToolResult, ErrorData>> + Send>>;

/// One tool: its MCP definition and its call.
#[derive(Debug, Clone, Copy)]
pub struct ToolEntry {
    pub name: &'static str,
    pub definition: fn() -> Tool,
    pub call: fn(ToolContext, JsonObject) -> ToolFuture,
}

/// Every tool, in the order `tools/list` shows them.
pub static TOOLS: &[ToolEntry] = &[
    ToolEntry {
        name: TOOL_NAME,
        definition: get_prompts_definition,
        call: get_prompts_call,
    },
    ToolEntry {
        name: ENHANCE_TOOL,
        definition: enhance_definition,
        call: enhance_call,
    },
    ToolEntry {
        name: COMPOSE_TOOL,
        definition: compose_definition,
        call: compose_call,
    },
];

/// Name of the prompt-rewrite tool.
pub const ENHANCE_TOOL: &str = "enhance_prompt";
/// Name of the prompt-composer tool.
pub const COMPOSE_TOOL: &str = "compose_prompt";

/// The server's own tools as composer tool definitions (the tools catalog block).
pub fn server_tool_definitions() -> Vec<ToolDefinition> {
    definitions()
        .iter()
        .map(|t| {
            ToolDefinition::server(
                t.name.to_string(),
                t.description.as_deref().unwrap_or_default().to_string(),
                serde_json::Value::Object((*t.input_schema).clone()),
            )
        })
        .collect()
}

static DEFINITIONS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    TOOLS
        .iter()
        .map(|t| super::schema::portable_tool((t.definition)()))
        .collect()
});

/// The definitions of every tool (built once), with schemas every JSON Schema validator
/// compiles ([`super::schema::PortableFormats`]).
pub fn definitions() -> &'static [Tool] {
    &DEFINITIONS
}

/// A tool by name.
pub fn find(name: &str) -> Option<&'static ToolEntry> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Tool arguments as a typed request; a mismatch is -32602 naming the tool.
pub fn parse_arguments<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ErrorData> {
    serde_json::from_value(serde_json::Value::Object(args))
        .map_err(|e| ErrorData::invalid_params(format!("{tool}: invalid arguments: {e}"), None))
}

/// A library envelope as a tool result: the JSON as text (for clients that read only `content`)
/// and the same value as `structuredContent`. `is_error` marks envelopes that report failure.
pub fn envelope_result<T: Serialize>(
    envelope: &T,
    is_error: bool,
) -> Result<CallToolResult, ErrorData> {
    let value = to_json(envelope)?;
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result.is_error = Some(is_error);
    Ok(result)
}

/// How a large tool result is carried. `structuredContent` (MCP 2025-06-18) is the result for
/// clients that negotiated 2025-06-18 or later; the spec asks for the same JSON as text too, for
/// older clients, which this follows while the JSON is at most `limits.maxTextCopyBytes`. Above
/// that, the text content is a one-line summary pointing at `structuredContent`, so the payload
/// is never sent twice. A client that negotiated an older version cannot read
/// `structuredContent`: it gets the JSON as text only. A result over `limits.maxResponseBytes`
/// is an error (-32602), never a truncation.
pub fn sized_envelope_result<T: Serialize>(
    tool: &str,
    envelope: &T,
    is_error: bool,
    limits: &Limits,
    structured: bool,
) -> Result<CallToolResult, ErrorData> {
    let value = to_json(envelope)?;
    let bytes = json_len(&value);
    if bytes > limits.max_response_bytes {
        return Err(ErrorData::invalid_params(
            format!(
                "{tool}: the result is {bytes} bytes, over the limit of {} \
                 (limits.maxResponseBytes); ask for less",
                limits.max_response_bytes
            ),
            None,
        ));
    }
    let mut result = if !structured {
        let mut r = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
        r.structured_content = None;
        r
    } else if bytes <= limits.max_text_copy_bytes {
        let mut r = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
        r.structured_content = Some(value);
        r
    } else {
        let summary = format!(
            "{tool}: the result ({bytes} bytes of JSON) is in structuredContent; it is not \
             repeated as text above {} bytes (limits.maxTextCopyBytes)",
            limits.max_text_copy_bytes
        );
        let mut r = CallToolResult::success(vec![ContentBlock::text(summary)]);
        r.structured_content = Some(value);
        r
    };
    result.is_error = Some(is_error);
    Ok(result)
}

/// A result as JSON; failing to serialize is a server fault.
fn to_json<T: Serialize>(envelope: &T) -> Result<serde_json::Value, ErrorData> {
    serde_json::to_value(envelope)
        .map_err(|e| ErrorData::internal_error(format!("cannot serialize the result: {e}"), None))
}

/// Length of `value` as compact JSON, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to an infallible writer cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Whether the calling client reads `structuredContent`: it negotiated MCP 2025-06-18 or
/// later (a call outside a handshake, such as a stateless HTTP request, is taken as current).
fn reads_structured_content(peer: Option<&Peer<RoleServer>>) -> bool {
    peer.and_then(|p| p.peer_info()).is_none_or(|info| {
        info.protocol_version.as_str() >= rmcp::model::ProtocolVersion::V_2025_06_18.as_str()
    })
}

/// Annotations of a tool that only reads local state and answers the same to the same call.
fn local_read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

fn get_prompts_definition() -> Tool {
    Tool::new(
        TOOL_NAME,
        "List prompt templates, or get one or several rendered with arguments. Without \
         promptName/promptNames: every prompt (includeContent=false for metadata only). With \
         promptName: that prompt, filled with `args` (strings are coerced to the declared types) \
         and the computed, config and default variables.",
        Arc::new(JsonObject::new()),
    )
    .with_title("Get prompts")
    .with_input_schema::<GetPromptsRequest>()
    .with_output_schema::<GetPromptsResponse>()
    .with_annotations(local_read_only())
}

fn get_prompts_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let req: GetPromptsRequest = parse_arguments(TOOL_NAME, args)?;
        let structured = reads_structured_content(ctx.peer.as_ref());
        // Rendering a batch can take a while: off the request loop (stdio is one thread).
        tokio::task::spawn_blocking(move || {
            let snap = ctx.library.snapshot();
            let resp = snap
                .get_prompts(ctx.library.clock(), &req, ctx.visibility)
                .map_err(|e| ErrorData::invalid_params(format!("{TOOL_NAME}: {e}"), None))?;
            sized_envelope_result(TOOL_NAME, &resp, !resp.success, &snap.limits, structured)
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("{TOOL_NAME}: {e}"), None))?
    })
}

const ENHANCE_DESCRIPTION: &str = "Rewrite a developer's vague coding request into a clear, execution-ready prompt \
for a coding agent, grounded in the repository: the active file is the PRIMARY TARGET, other \
retrieved code is reference only. The prompt and the retrieved context are scanned for \
secrets first; if any is found nothing is sent (status `blocked`). If the LLM is not \
configured or fails, the original prompt is returned (status `original`) with a warning. \
activeFile: the exact file with editor focus, absolute or relative to workingDirectory; never \
a documentation file (README, AGENTS.md...) unless the user is editing it; \"this file\" and \
\"here\" mean it; omit it only for requests with no file target. workingDirectory: absolute \
path of the repository (default: the client's first root, else the server's directory).";

fn enhance_definition() -> Tool {
    Tool::new(
        ENHANCE_TOOL,
        ENHANCE_DESCRIPTION,
        Arc::new(JsonObject::new()),
    )
    .with_title("Enhance prompt")
    .with_input_schema::<EnhanceRequest>()
    .with_output_schema::<EnhanceResult>()
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(false)
            .open_world(true),
    )
}

/// The client's roots as directory paths, in its order; an empty list when it offers none.
/// Roots are deprecated by SEP-2577 but are what today's IDE clients send to say which folder
/// is open. A root that is not a local `file://` URI is left out.
#[allow(deprecated)]
async fn client_roots(peer: &Peer<RoleServer>) -> Vec<PathBuf> {
    let Some(info) = peer.peer_info() else {
        return Vec::new();
    };
    if info.capabilities.roots.is_none() {
        return Vec::new();
    }
    let listed = tokio::time::timeout(std::time::Duration::from_secs(5), peer.list_roots()).await;
    let Ok(Ok(roots)) = listed else {
        return Vec::new();
    };
    roots
        .roots
        .iter()
        .filter_map(|r| {
            let path = file_uri_path(&r.uri);
            if path.is_none() {
                tracing::warn!("client root {} is not a local file:// URI; ignored", r.uri);
            }
            path
        })
        .collect()
}

/// The local path of a `file://` URI (host empty or `localhost`), percent-decoded byte-wise;
/// `None` for any other URI.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let (scheme, rest) = uri.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("file") {
        return None;
    }
    let slash = rest.find('/')?;
    let (host, path) = rest.split_at(slash);
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return None;
    }
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

/// The workspace of a call: `given`, else the client's first root, else the server's directory
/// (with a warning); over MCP it must lie inside a root the client declared, the server's
/// directory or a configured folder. A refusal is -32602 naming `field`.
async fn call_workspace(
    ctx: &ToolContext,
    tool: &str,
    field: &str,
    given: Option<PathBuf>,
) -> Result<(PathBuf, WorkspacePolicy, Option<String>), ErrorData> {
    let settings = ctx
        .stages
        .workspace_settings()
        .map_err(|e| ErrorData::internal_error(format!("{tool}: {e}"), None))?;
    let roots = match &ctx.peer {
        Some(peer) => client_roots(peer).await,
        None => Vec::new(),
    };
    let server_dir = std::env::current_dir().ok();
    let policy = WorkspacePolicy::client(&settings, &roots, server_dir.as_deref());
    let (dir, warning) = match (given, roots.first(), &server_dir) {
        (Some(dir), _, _) => (dir, None),
        (None, Some(root), _) => (root.clone(), None),
        (None, None, Some(cwd)) => {
            let warning = format!(
                "no {field} given and the client offers no roots: using the server's directory {}",
                cwd.display()
            );
            (cwd.clone(), Some(warning))
        }
        (None, None, None) => {
            return Err(ErrorData::invalid_params(
                format!("{tool}: `{field}`: missing, and the client offers no roots"),
                None,
            ));
        }
    };
    Ok((dir, policy, warning))
}

/// Runs a tool call on a task of its own, so a panic in a stage answers -32603 (a server fault)
/// naming the tool, and the server goes on serving. An object-typed parameter sent as a
/// JSON-encoded string is decoded first ([`super::schema::decode_string_objects`]).
pub async fn call_contained(
    entry: &ToolEntry,
    ctx: ToolContext,
    mut args: JsonObject,
) -> Result<CallToolResult, ErrorData> {
    if let Some(definition) = definitions().iter().find(|t| t.name == entry.name) {
        super::schema::decode_string_objects(&definition.input_schema, &mut args)
            .map_err(|e| ErrorData::invalid_params(format!("{}: {e}", entry.name), None))?;
    }
    match tokio::spawn((entry.call)(ctx, args)).await {
        Ok(result) => result,
        Err(e) => {
            let why = if e.is_panic() {
                crate::stages::panic_message(e.into_panic().as_ref())
            } else {
                e.to_string()
            };
            tracing::error!("tool {} failed: {why}", entry.name);
            Err(ErrorData::internal_error(
                format!("{}: internal error: {why}", entry.name),
                None,
            ))
        }
    }
}

fn enhance_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let mut req: EnhanceRequest = parse_arguments(ENHANCE_TOOL, args)?;
        let given = req.working_directory.take();
        let (dir, policy, warning) =
            call_workspace(&ctx, ENHANCE_TOOL, "workingDirectory", given).await?;
        req.working_directory = Some(dir);
        let validated = validate(&req, &policy)
            .map_err(|e| ErrorData::invalid_params(format!("{ENHANCE_TOOL}: {e}"), None))?;
        let enhancer = ctx.stages.enhancer();
        let result = enhancer
            .enhance(&validated, warning.into_iter().collect())
            .await;
        let mut out = envelope_result(&result, false)?;
        // Clients that read only `content` get the prompt itself, not JSON.
        out.content = vec![ContentBlock::text(result_text(&result))];
        Ok(out)
    })
}

/// Input of `compose_prompt` (the same as `promptd compose`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComposeToolRequest {
    /// The user's current request.
    pub query: String,
    /// Absolute path of the workspace root, inside a root the client declared (default: the
    /// client's first root).
    #[serde(default)]
    pub dir: Option<std::path::PathBuf>,
    /// The file the user is in (selects glob-scoped rules, the nearest AGENTS.md and the
    /// CLAUDE.md files on its path).
    #[serde(default)]
    pub file: Option<std::path::PathBuf>,
    /// Files inside the workspace to use as the docs instead of retrieving from the
    /// repository (regular files, size-capped, scanned for secrets).
    #[serde(default)]
    pub docs: Vec<std::path::PathBuf>,
    /// Token budget of the docs block (default 2048).
    #[serde(default)]
    pub docs_budget: Option<usize>,
    /// System prompt name (default compose_system).
    #[serde(default)]
    pub system: Option<String>,
}

fn compose_definition() -> Tool {
    Tool::new(
        COMPOSE_TOOL,
        "Compose the final prompt for the user's request: the system prompt, this server's \
         tools catalog and the workspace's tool definitions, the project rules that apply to \
         the current file (Cursor, AGENTS.md, CLAUDE.md, Copilot, Windsurf; included whole), and \
         retrieved docs under a token budget. Returns the text, the cacheable prefix, tokens \
         per block and a ledger of every rule file found and why it was or was not included.",
        Arc::new(JsonObject::new()),
    )
    .with_title("Compose prompt")
    .with_input_schema::<ComposeToolRequest>()
    .with_output_schema::<ComposedPrompt>()
    .with_annotations(local_read_only())
}

fn compose_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let req: ComposeToolRequest = parse_arguments(COMPOSE_TOOL, args)?;
        let (dir, policy, warning) = call_workspace(&ctx, COMPOSE_TOOL, "dir", req.dir).await?;
        let workspace = Workspace::open(&dir, &policy)
            .map_err(|e| ErrorData::invalid_params(format!("{COMPOSE_TOOL}: `dir`: {e}"), None))?;
        let input = ComposeInput {
            query: req.query,
            file: req.file,
            docs: req.docs,
            docs_budget: req.docs_budget,
            system: req.system,
        };
        let stages = ctx.stages.clone();
        let composed = tokio::task::spawn_blocking(move || {
            stages.compose(&workspace, &input, server_tool_definitions())
        })
        .await
        .map_err(|e| {
            let why = if e.is_panic() {
                crate::stages::panic_message(e.into_panic().as_ref())
            } else {
                e.to_string()
            };
            ErrorData::internal_error(format!("{COMPOSE_TOOL}: internal error: {why}"), None)
        })?;
        let mut composed = composed.map_err(|e| {
            let message = format!("{COMPOSE_TOOL}: {e}");
            if e.is_caller_error() {
                ErrorData::invalid_params(message, None)
            } else {
                ErrorData::internal_error(message, None)
            }
        })?;
        composed.warnings.splice(0..0, warning);
        let mut out = envelope_result(&composed, false)?;
        out.content = vec![ContentBlock::text(composed.text.clone())];
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn file_uris_decode_byte_wise_and_other_schemes_are_refused() {
        assert_eq!(
            file_uri_path("file:///home/me/my%20repo").unwrap(),
            PathBuf::from("/home/me/my repo")
        );
        assert_eq!(
            file_uri_path("FILE://localhost/srv/x").unwrap(),
            PathBuf::from("/srv/x")
        );
        // `%` before a multi-byte character: kept as is, no panic.
        assert_eq!(
            file_uri_path("file:///tmp/a%é%2").unwrap(),
            PathBuf::from("/tmp/a%é%2")
        );
        // Bytes that are not UTF-8 stay bytes.
        let raw = file_uri_path("file:///tmp/%FF").unwrap();
        assert_eq!(raw.as_os_str().as_bytes(), b"/tmp/\xff");
        for uri in [
            "https://example.com/x",
            "file://server/share",
            "file:relative",
            "/tmp",
        ] {
            assert_eq!(file_uri_path(uri), None, "{uri}");
        }
    }
}
