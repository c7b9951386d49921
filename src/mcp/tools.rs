//! The tools the server offers, as one table: each entry is a definition (name, schemas,
//! annotations) and a call that converts MCP arguments to a library request and the library's
//! answer back to a tool result. Adding a tool (`enhance_prompt`, `compose_prompt`, …) means
//! adding one [`ToolEntry`] to [`TOOLS`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::library::{GetPromptsRequest, GetPromptsResponse, PromptLibrary, TOOL_NAME};

/// What a tool call can use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub library: Arc<PromptLibrary>,
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
pub static TOOLS: &[ToolEntry] = &[ToolEntry {
    name: TOOL_NAME,
    definition: get_prompts_definition,
    call: get_prompts_call,
}];

static DEFINITIONS: LazyLock<Vec<Tool>> =
    LazyLock::new(|| TOOLS.iter().map(|t| (t.definition)()).collect());

/// The definitions of every tool (built once).
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
    let value = serde_json::to_value(envelope).map_err(|e| {
        ErrorData::internal_error(format!("cannot serialize the result: {e}"), None)
    })?;
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result.is_error = Some(is_error);
    Ok(result)
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
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

fn get_prompts_call(ctx: ToolContext, args: JsonObject) -> ToolFuture {
    Box::pin(async move {
        let req: GetPromptsRequest = parse_arguments(TOOL_NAME, args)?;
        let resp = ctx.library.get_prompts(&req);
        envelope_result(&resp, !resp.success)
    })
}
