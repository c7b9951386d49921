//! Conversions between library types and MCP types. Pure functions, no I/O: prompt templates to
//! `Prompt` listings (with cursor pages), rendered prompts to `GetPromptResult`, render errors to
//! JSON-RPC errors, argument suggestions to completions.

use rmcp::ErrorData;
use rmcp::model::{CompletionInfo, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value, json};

use promptd_core::registry::{ArgumentSpec, PromptTemplate};
use promptd_core::render::{RenderError, RenderedPrompt};

/// A prompt as `prompts/list` shows it. An argument with a default is never required.
pub fn prompt(t: &PromptTemplate) -> Prompt {
    let arguments = t
        .arguments
        .iter()
        .map(|a| {
            let mut arg =
                PromptArgument::new(&a.name).with_required(a.required && a.default.is_none());
            if let Some(d) = &a.description {
                arg = arg.with_description(d.trim());
            }
            arg
        })
        .collect();
    let mut p = Prompt::new(
        &t.name,
        t.description.as_deref().map(str::trim),
        Some(arguments),
    );
    if let Some(title) = &t.title {
        p = p.with_title(title);
    }
    let mut meta = Map::new();
    meta.insert("promptd/dialect".into(), json!(t.dialect));
    meta.insert("promptd/source".into(), json!(t.rel_path));
    let tool = promptd_core::dialect::tool_metadata(&t.metadata);
    if !tool.is_empty() {
        meta.insert("promptd/toolMetadata".into(), Value::Object(tool));
    }
    if !t.directives.is_empty() {
        meta.insert("promptd/directives".into(), json!(t.directives));
    }
    p.meta = Some(rmcp::model::MetaObject(meta));
    p
}

/// One page of `items` (already in a stable order, named by `name`): the items after the
/// cursor, at most `page_size`, and the cursor of the next page. The cursor is the last name of
/// the previous page, so pages stay consistent when prompts are added or removed in between.
pub fn page<'a, T>(
    items: impl Iterator<Item = &'a T>,
    name: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    page_size: usize,
) -> (Vec<&'a T>, Option<String>)
where
    T: 'a,
{
    let mut rest = items
        .skip_while(|t| cursor.is_some_and(|c| name(t) <= c))
        .peekable();
    let page: Vec<&T> = rest.by_ref().take(page_size.max(1)).collect();
    let next = match (rest.peek(), page.last()) {
        (Some(_), Some(last)) => Some(name(last).to_string()),
        _ => None,
    };
    (page, next)
}

/// The MCP result of a render: one message per role section (unknown roles are sent as user
/// messages, MCP has only `user` and `assistant`), provenance and version in `_meta`.
pub fn get_prompt_result(t: &PromptTemplate, rendered: RenderedPrompt) -> GetPromptResult {
    let messages = rendered
        .messages
        .into_iter()
        .map(|m| {
            let role = if m.role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            };
            PromptMessage::new_text(role, m.text)
        })
        .collect();
    let mut result = GetPromptResult::new(messages);
    if let Some(d) = t.description.as_deref().or(t.title.as_deref()) {
        result = result.with_description(d.trim());
    }
    let mut meta = Map::new();
    meta.insert("promptd/versionHash".into(), json!(t.version_hash));
    meta.insert("promptd/provenance".into(), json!(rendered.provenance));
    if !rendered.warnings.is_empty() {
        meta.insert("promptd/warnings".into(), json!(rendered.warnings));
    }
    result.meta = Some(rmcp::model::MetaObject(meta));
    result
}

/// A render failure as a JSON-RPC error: the caller's fault (unknown prompt, missing or invalid
/// argument) is -32602 naming the prompt or argument; anything else is -32603.
pub fn render_error(e: &RenderError) -> ErrorData {
    if e.is_caller_error() {
        ErrorData::invalid_params(e.to_string(), None)
    } else {
        ErrorData::internal_error(e.to_string(), None)
    }
}

/// The error for a prompt name the server does not offer (-32602), with the offered names the
/// caller most likely meant in the message and as `data.suggestions`.
pub fn unknown_prompt(name: &str, suggestions: Vec<String>) -> ErrorData {
    let mut message = RenderError::UnknownPrompt {
        name: name.to_string(),
    }
    .to_string();
    if let Some(hint) = promptd_core::library::did_you_mean(&suggestions) {
        message = format!("{message}; {hint}");
    }
    ErrorData::invalid_params(
        message,
        Some(serde_json::json!({ "suggestions": suggestions })),
    )
}

/// Completion values for an argument: its suggestions that start with the typed prefix
/// (case-insensitively), at most [`CompletionInfo::MAX_VALUES`], with the total and `hasMore`.
pub fn completion(arg: &ArgumentSpec, typed: &str) -> CompletionInfo {
    let typed = typed.to_lowercase();
    let matching: Vec<String> = arg
        .suggested_values()
        .into_iter()
        .filter(|v| v.to_lowercase().starts_with(&typed))
        .collect();
    let total = matching.len();
    let values: Vec<String> = matching
        .into_iter()
        .take(CompletionInfo::MAX_VALUES)
        .collect();
    CompletionInfo::with_pagination(
        values,
        Some(u32::try_from(total).unwrap_or(u32::MAX)),
        total > CompletionInfo::MAX_VALUES,
    )
    .expect("at most MAX_VALUES values")
}

/// Arguments of `prompts/get` as the library takes them (absent → empty).
pub fn arguments(args: Option<Map<String, Value>>) -> Map<String, Value> {
    args.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_the_cursor() {
        let names = ["a", "b", "c", "d", "e"];
        let (p, next) = page(names.iter(), |s| s, None, 2);
        assert_eq!(p, [&"a", &"b"]);
        assert_eq!(next.as_deref(), Some("b"));
        let (p, next) = page(names.iter(), |s| s, next.as_deref(), 2);
        assert_eq!(p, [&"c", &"d"]);
        let (p, next) = page(names.iter(), |s| s, next.as_deref(), 2);
        assert_eq!(p, [&"e"]);
        assert_eq!(next, None);
        let (p, next) = page(names.iter(), |s| s, None, 5);
        assert_eq!(p.len(), 5);
        assert_eq!(next, None);
    }
}
