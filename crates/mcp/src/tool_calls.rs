//! The MCP face of the tool catalog ([`promptd_stages::catalog`]): every catalog entry as an `rmcp::Tool`,
//! and one call table whose entries convert MCP arguments into a catalog request, hand it to the
//! library (`wit-get-prompts`) or the stages (`enhance_prompt`, `compose_prompt`), and convert the
//! answer into a tool result. The client's roots and how its request came (stdio, or HTTP with
//! or without the server's token) become the [`Caller`] the stages check workspaces against.
//! Adding a tool means a catalog entry and one [`ToolEntry`] in [`CALLS`]. The workspace's tool
//! definitions ([`promptd_stages::tools`]) are listed after them ([`defined_tool`]) and called
//! through [`Stages::call_tool`] ([`call_defined`]).

use std::future::Future;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use rmcp::ErrorData;
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, InputRequest, InputRequests,
    InputRequiredResult, JsonObject, ListRootsRequest, ListRootsResult, ProtocolVersion, Tool,
    ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde::Serialize;
use serde::de::DeserializeOwned;

use promptd_base::limits::Limits;
use promptd_base::panics::panic_message;
use promptd_base::workspace::ClientOrigin;
use promptd_core::library::Visibility;
use promptd_stages::catalog::{
    COMPOSE, ComposeInput, ENHANCE, EnhanceRequest, GET_PROMPTS, GetPromptsRequest,
    GetPromptsResponse, ToolSpec,
};
use promptd_stages::enhance::result_text;
use promptd_stages::tools::{DefinedTool, ToolCallError, listed_output_schema};
use promptd_stages::{Caller, ClientRoots, StageError, Stages};

/// What a tool call can use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The stages, and through them the library.
    pub stages: Arc<Stages>,
    /// The protocol version the call came on (`None` outside MCP).
    pub protocol: Option<ProtocolVersion>,
    /// Where the client's roots come from.
    pub roots: CallRoots,
    /// How the request came: over stdio, or over HTTP with or without the server's token.
    pub origin: ClientOrigin,
    /// Which prompts the client is served.
    pub visibility: Visibility,
}

/// Where a tool call's client roots come from.
#[derive(Debug, Clone)]
pub enum CallRoots {
    /// A session opened with `initialize`: asked of the client (`roots/list`) when it declared
    /// roots, and kept until it says they changed.
    Session {
        peer: Peer<RoleServer>,
        known: Arc<ClientRoots>,
    },
    /// Sent with the request: the client's answer to the server's `roots/list` input request
    /// (MCP 2026-07-28, which has no sessions).
    Sent(Vec<PathBuf>),
    /// The client declared none, or the tool reads no workspace.
    None,
}

/// The key of the `roots/list` input request and of the client's answer to it.
pub const ROOTS_INPUT: &str = "roots";

/// The roots of a tool call, or the input request the client must answer first.
#[derive(Debug)]
pub enum RootsOrAsk {
    Roots(CallRoots),
    /// A client on a protocol without `initialize` (MCP 2026-07-28) that declared roots in the
    /// request and sent none: asked for them with a `roots/list` input request (SEP-2322); the
    /// client answers and sends the call again.
    Ask(InputRequiredResult),
}

/// Where the roots of a call to `entry` come from: tools without a workspace need none; on a
/// protocol with `initialize`, the session's client is asked; on MCP 2026-07-28 the client's
/// answer to the `roots/list` input request is read from `inputResponses`, and a client that
/// declared roots in the request's capabilities without answering is asked.
#[allow(deprecated)]
pub fn call_roots(
    (name, uses_roots): (&str, bool),
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    session: &Arc<ClientRoots>,
) -> Result<RootsOrAsk, ErrorData> {
    if !uses_roots {
        return Ok(RootsOrAsk::Roots(CallRoots::None));
    }
    let stateless = context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize());
    if !stateless {
        return Ok(RootsOrAsk::Roots(CallRoots::Session {
            peer: context.peer.clone(),
            known: session.clone(),
        }));
    }
    let answer = request
        .input_responses
        .as_ref()
        .and_then(|r| r.get(ROOTS_INPUT));
    if let Some(answer) = answer {
        let listed: ListRootsResult = serde_path_to_error::deserialize(answer).map_err(|e| {
            ErrorData::invalid_params(
                format!(
                    "{}: `inputResponses.{ROOTS_INPUT}.{}`: {}",
                    name,
                    e.path(),
                    e.inner()
                ),
                None,
            )
        })?;
        return Ok(RootsOrAsk::Roots(CallRoots::Sent(root_paths(&listed))));
    }
    let declared = context
        .client_capabilities()
        .is_some_and(|c| c.roots.is_some());
    if !declared {
        return Ok(RootsOrAsk::Roots(CallRoots::None));
    }
    let ask = InputRequests::from([(
        ROOTS_INPUT.to_string(),
        InputRequest::ListRoots(ListRootsRequest::default()),
    )]);
    Ok(RootsOrAsk::Ask(InputRequiredResult::from_input_requests(
        ask,
    )))
}

/// The future a tool call returns.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<CallToolResult, ErrorData>> + Send>>;

/// The call of one catalog tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolEntry {
    pub name: &'static str,
    pub call: fn(ToolContext, JsonObject) -> ToolFuture,
    /// Whether the tool reads a workspace, which the client's roots may name.
    pub uses_roots: bool,
}

/// The call of every catalog tool.
pub static CALLS: &[ToolEntry] = &[
    ToolEntry {
        name: GET_PROMPTS,
        call: get_prompts_call,
        uses_roots: false,
    },
    ToolEntry {
        name: ENHANCE,
        call: enhance_call,
        uses_roots: true,
    },
    ToolEntry {
        name: COMPOSE,
        call: compose_call,
        uses_roots: true,
    },
];

/// A catalog entry as an MCP tool.
fn rmcp_tool(spec: &ToolSpec) -> Tool {
    let a = spec.annotations;
    let mut tool = Tool::new(spec.name, spec.description, spec.input_schema.clone())
        .with_title(spec.title)
        .with_annotations(
            ToolAnnotations::new()
                .read_only(a.read_only)
                .destructive(a.destructive)
                .idempotent(a.idempotent)
                .open_world(a.open_world),
        );
    tool.output_schema = Some(spec.output_schema.clone());
    tool
}

static DEFINITIONS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    promptd_stages::catalog::catalog()
        .iter()
        .map(rmcp_tool)
        .collect()
});

/// The definitions of every tool (built once), in the catalog's order.
pub fn definitions() -> &'static [Tool] {
    &DEFINITIONS
}

/// A tool's call by name.
pub fn find(name: &str) -> Option<&'static ToolEntry> {
    CALLS.iter().find(|t| t.name == name)
}

/// Tool arguments as a typed request; a mismatch is -32602 naming the tool and the argument at
/// fault (``wit-get-prompts: `promptName`: invalid type: integer `42`, expected a string``),
/// with the argument's path as `data.argument`.
pub fn parse_arguments<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ErrorData> {
    serde_path_to_error::deserialize(serde_json::Value::Object(args)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ErrorData::invalid_params(format!("{tool}: invalid arguments: {inner}"), None)
        } else {
            ErrorData::invalid_params(
                format!("{tool}: `{path}`: {inner}"),
                Some(serde_json::json!({ "argument": path })),
            )
        }
    })
}

/// A stage's result as a tool result: `text` as the content (for clients that read only
/// `content`) and the result as `structuredContent`, its numbers as `promptd enhance --json` /
/// `promptd compose --json` print them: serialized to text and read back, an `f32` keeps its
/// shortest form (`1.1`) instead of its widening to `f64` (`1.100000023841858`).
fn stage_result<T: Serialize>(result: &T, text: String) -> Result<CallToolResult, ErrorData> {
    let json = serde_json::to_string(result).map_err(serialize_failed)?;
    let value = serde_json::from_str(&json).map_err(serialize_failed)?;
    let mut out = CallToolResult::success(vec![ContentBlock::text(text)]);
    out.structured_content = Some(value);
    out.is_error = Some(false);
    Ok(out)
}

/// How a `wit-get-prompts` envelope is carried. `structuredContent` (MCP 2025-06-18) is the
/// result for clients that negotiated 2025-06-18 or later; the spec asks for the same JSON as
/// text too, for older clients, which this follows while the JSON is at most
/// `limits.maxTextCopyBytes`. Above that, the text content is a one-line summary pointing at
/// `structuredContent`, so the payload is never sent twice. A client that negotiated an older
/// version cannot read `structuredContent`: it gets the JSON as text only. A result over
/// `limits.maxResponseBytes` is an error (-32602), never a truncation. An envelope whose
/// `success` is false is a tool error (`isError`).
pub fn sized_envelope_result(
    tool: &str,
    envelope: &GetPromptsResponse,
    limits: &Limits,
    structured: bool,
) -> Result<CallToolResult, ErrorData> {
    let json = envelope.to_json().map_err(serialize_failed)?;
    // The text is the compact JSON: measured by its length.
    let bytes = json.text.get().len();
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
    let copy_text = !structured || bytes <= limits.max_text_copy_bytes;
    let summary = || {
        format!(
            "{tool}: the result ({bytes} bytes of JSON) is in structuredContent; it is not \
             repeated as text above {} bytes (limits.maxTextCopyBytes)",
            limits.max_text_copy_bytes
        )
    };
    let value = if structured {
        Some(json.value().map_err(serialize_failed)?)
    } else {
        None
    };
    let text = if copy_text {
        String::from(Box::<str>::from(json.text))
    } else {
        summary()
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = value;
    result.is_error = Some(!envelope.success);
    Ok(result)
}

/// Failing to serialize a result is a server fault.
fn serialize_failed(e: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(format!("cannot serialize the result: {e}"), None)
}

/// Whether the calling client reads `structuredContent`: it speaks MCP 2025-06-18 or later (a
/// call whose version is unknown is taken as current).
fn reads_structured_content(protocol: Option<&ProtocolVersion>) -> bool {
    protocol.is_none_or(|v| v.as_str() >= ProtocolVersion::V_2025_06_18.as_str())
}

/// Whether a `wit-get-prompts` request renders no more than one prompt: one name, or a listing
/// without content.
fn renders_at_most_one(req: &GetPromptsRequest) -> bool {
    match &req.prompt_names {
        Some(names) => names.len() <= 1 || !req.include_content,
        None => req.prompt_name.is_some() || !req.include_content,
    }
}

fn get_prompts_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let req: GetPromptsRequest = parse_arguments(GET_PROMPTS, args)?;
        let structured = reads_structured_content(ctx.protocol.as_ref());
        let inline = renders_at_most_one(&req);
        let answer = move || {
            let library = ctx.stages.library();
            let snap = library.snapshot();
            // Through the library: `promptName: "NAME@REV"` is answered as of the revision.
            let resp = library
                .get_prompts_for(&req, ctx.visibility)
                .map_err(|e| ErrorData::invalid_params(format!("{GET_PROMPTS}: {e}"), None))?;
            sized_envelope_result(GET_PROMPTS, &resp, &snap.limits, structured)
        };
        // One prompt, or the cached metadata listing, is quick: answered in place.
        // Rendering a batch can take a while: off the request loop (stdio is one thread).
        if inline {
            return answer();
        }
        tokio::task::spawn_blocking(answer)
            .await
            .map_err(|e| ErrorData::internal_error(format!("{GET_PROMPTS}: {e}"), None))?
    })
}

/// The session client's roots as directory paths, in its order; an empty list when it offers
/// none, `None` when it did not answer. Roots are deprecated by SEP-2577 but are what today's IDE
/// clients send to say which folder is open.
#[allow(deprecated)]
async fn session_roots(peer: &Peer<RoleServer>) -> Option<Vec<PathBuf>> {
    let Some(info) = peer.peer_info() else {
        return Some(Vec::new());
    };
    if info.capabilities.roots.is_none() {
        return Some(Vec::new());
    }
    let listed = tokio::time::timeout(std::time::Duration::from_secs(5), peer.list_roots()).await;
    let Ok(Ok(roots)) = listed else {
        return None;
    };
    Some(root_paths(&roots))
}

/// The local folders of listed roots, in the client's order; a root that is not a local
/// `file://` URI is left out.
#[allow(deprecated)]
fn root_paths(listed: &ListRootsResult) -> Vec<PathBuf> {
    listed
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

/// The calling client as the stages see it: its roots (asked once per session, or sent with
/// the request), how it came,
/// and the server's directory.
async fn caller(ctx: &ToolContext) -> Caller {
    let roots = match &ctx.roots {
        CallRoots::Session { peer, known } => known.get(|| session_roots(peer)).await,
        CallRoots::Sent(roots) => roots.clone(),
        CallRoots::None => Vec::new(),
    };
    Caller::Client {
        roots,
        server_dir: std::env::current_dir().ok(),
        origin: ctx.origin,
    }
}

/// A failed stage call as a JSON-RPC error naming the tool: the caller's fault is -32602,
/// the server's -32603.
fn stage_error(tool: &str, e: &StageError) -> ErrorData {
    let message = format!("{tool}: {e}");
    if e.is_caller_error() {
        ErrorData::invalid_params(message, None)
    } else {
        ErrorData::internal_error(message, None)
    }
}

/// A task that did not finish (it panicked or was cancelled) as a server fault naming the tool.
fn task_failed(tool: &str, e: tokio::task::JoinError) -> ErrorData {
    let why = if e.is_panic() {
        panic_message(e.into_panic().as_ref())
    } else {
        e.to_string()
    };
    tracing::error!("tool {tool} failed: {why}");
    ErrorData::internal_error(format!("{tool}: internal error: {why}"), None)
}

/// Runs a tool call on a task of its own, so a panic in a stage answers -32603 (a server fault)
/// naming the tool, and the server goes on serving. An object-typed parameter sent as a
/// JSON-encoded string is decoded first ([`super::schema::decode_string_objects`]).
pub async fn call_contained(
    entry: &ToolEntry,
    ctx: ToolContext,
    mut args: JsonObject,
) -> Result<CallToolResult, ErrorData> {
    if let Some(spec) = promptd_stages::catalog::find(entry.name) {
        super::schema::decode_string_objects(&spec.input_schema, &mut args)
            .map_err(|e| ErrorData::invalid_params(format!("{}: {e}", entry.name), None))?;
    }
    tokio::spawn((entry.call)(ctx, args))
        .await
        .map_err(|e| task_failed(entry.name, e))?
}

/// A served tool definition as an MCP tool (its output schema when it is an object schema).
pub fn defined_tool(tool: &DefinedTool) -> Tool {
    let input = tool
        .definition
        .input_schema
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut out = Tool::new(
        tool.name().to_string(),
        tool.definition.description.clone(),
        Arc::new(input),
    );
    out.output_schema = listed_output_schema(tool).map(|s| Arc::new(s.clone()));
    out
}

/// Calls a served tool definition on a task of its own (a panic answers -32603): its outcome
/// as a tool result (`isError` for a failed execution), a mistake in the arguments as -32602
/// naming the field (`data.argument`), a server fault as -32603.
pub async fn call_defined(
    ctx: ToolContext,
    name: String,
    mut args: JsonObject,
) -> Result<CallToolResult, ErrorData> {
    if let Some(tool) = ctx.stages.served_tools().find(&name)
        && let Some(schema) = tool.definition.input_schema.as_object()
    {
        super::schema::decode_string_objects(schema, &mut args)
            .map_err(|e| ErrorData::invalid_params(format!("{name}: {e}"), None))?;
    }
    let shown = name.clone();
    let call = async move {
        let caller = caller(&ctx).await;
        ctx.stages.call_tool(&name, args, caller).await
    };
    let outcome = tokio::spawn(call)
        .await
        .map_err(|e| task_failed(&shown, e))?
        .map_err(|e| match &e {
            ToolCallError::Input { field, .. } => ErrorData::invalid_params(
                e.to_string(),
                Some(serde_json::json!({ "argument": field })),
            ),
            _ if e.is_caller_error() => ErrorData::invalid_params(e.to_string(), None),
            _ => ErrorData::internal_error(e.to_string(), None),
        })?;
    let text = vec![ContentBlock::text(outcome.text)];
    let mut result = if outcome.is_error {
        CallToolResult::error(text)
    } else {
        CallToolResult::success(text)
    };
    result.structured_content = outcome.structured;
    result.is_error = Some(outcome.is_error);
    Ok(result)
}

fn enhance_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let req: EnhanceRequest = parse_arguments(ENHANCE, args)?;
        let caller = caller(&ctx).await;
        let result = ctx
            .stages
            .enhance(req, caller)
            .await
            .map_err(|e| stage_error(ENHANCE, &e))?;
        // Clients that read only `content` get the prompt itself, not JSON.
        stage_result(&result, result_text(&result))
    })
}

fn compose_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let input: ComposeInput = parse_arguments(COMPOSE, args)?;
        let caller = caller(&ctx).await;
        let composed = ctx
            .stages
            .compose(input, caller)
            .await
            .map_err(|e| stage_error(COMPOSE, &e))?;
        // Clients that read only `content` get the composed prompt itself, not JSON.
        stage_result(&composed, composed.text.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn every_catalog_tool_has_one_call_and_is_listed_in_the_catalogs_order() {
        let catalog: Vec<&str> = promptd_stages::catalog::catalog()
            .iter()
            .map(|t| t.name)
            .collect();
        let calls: Vec<&str> = CALLS.iter().map(|t| t.name).collect();
        let listed: Vec<&str> = definitions().iter().map(|t| &*t.name).collect();
        assert_eq!(calls, catalog);
        assert_eq!(listed, catalog);
    }

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
        assert_eq!(
            file_uri_path("file:///tmp/%€x").unwrap(),
            PathBuf::from("/tmp/%€x")
        );
        // A percent-encoded multi-byte character decodes to it.
        assert_eq!(
            file_uri_path("file:///tmp/%E2%82%ACx").unwrap(),
            PathBuf::from("/tmp/€x")
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
