//! The reply shape of a model without native tool calling, as Plandex's MCP design instructs it:
//! the whole reply is one JSON object
//! `{"plandex_tool_invocation": {"tool_name": "…", "tool_input": {…}}}` (surrounding whitespace,
//! or one fenced code block around it, is tolerated). [`parse_invocation`] turns such a reply
//! into a call of a served tool whose input passed its `inputSchema`, or a precise error to feed
//! back to the model.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ServedTools, input_error};

/// A validated call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    pub tool_name: String,
    pub tool_input: Map<String, Value>,
}

/// Why a reply is not a valid call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    #[error("the reply is not JSON (line {line}, column {column}): {message}")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("the reply is JSON but holds no `plandex_tool_invocation` object")]
    NoInvocation,
    #[error("`plandex_tool_invocation.{field}`: {message}")]
    Shape { field: String, message: String },
    #[error("unknown tool `{name}`; the tools are: {}", known.join(", "))]
    UnknownTool { name: String, known: Vec<String> },
    #[error("`{tool}`: `tool_input{field}`: {message}")]
    Input {
        tool: String,
        field: String,
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapper {
    plandex_tool_invocation: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    tool_name: String,
    #[serde(default)]
    tool_input: Option<Map<String, Value>>,
}

/// The reply without surrounding whitespace and without one fenced code block around it.
fn unfenced(reply: &str) -> &str {
    let t = reply.trim();
    if let Some(inner) = t.strip_prefix("```").and_then(|r| r.strip_suffix("```")) {
        let inner = inner.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        return inner.trim();
    }
    t
}

/// The call a reply asks for, checked against the served tools.
pub fn parse_invocation(reply: &str, served: &ServedTools) -> Result<Invocation, InvocationError> {
    let text = unfenced(reply);
    let value: Value = serde_json::from_str(text).map_err(|e| InvocationError::NotJson {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if value.get("plandex_tool_invocation").is_none() {
        return Err(InvocationError::NoInvocation);
    }
    let shape = |e: serde_path_to_error::Error<serde_json::Error>| {
        let path = e.path().to_string();
        InvocationError::Shape {
            field: path,
            message: e.into_inner().to_string(),
        }
    };
    let wrapper: Wrapper = serde_path_to_error::deserialize(value).map_err(shape)?;
    let call: Call =
        serde_path_to_error::deserialize(wrapper.plandex_tool_invocation).map_err(shape)?;
    let Some(tool) = served.find(&call.tool_name) else {
        return Err(InvocationError::UnknownTool {
            name: call.tool_name,
            known: served.tools.iter().map(|t| t.name().to_string()).collect(),
        });
    };
    let tool_input = call.tool_input.unwrap_or_default();
    if let Err(e) = tool.input.validate(&Value::Object(tool_input.clone())) {
        let (field, message) = input_error(&e);
        return Err(InvocationError::Input {
            tool: call.tool_name,
            field,
            message,
        });
    }
    Ok(Invocation {
        tool_name: call.tool_name,
        tool_input,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> ServedTools {
        let raw = "{\"toolName\": \"calc\", \"description\": \"d\", \"inputSchema\": \"{\\\"type\\\":\\\"object\\\",\\\"properties\\\":{\\\"a\\\":{\\\"type\\\":\\\"number\\\"}},\\\"required\\\":[\\\"a\\\"]}\", \"executionType\": \"predefined_server_function\", \"executionDetails\": {\"functionName\": \"simpleCalculator\"}}";
        ServedTools {
            tools: vec![super::super::definition::parse(raw, "calc.json", &[]).unwrap()],
            ..Default::default()
        }
    }

    #[test]
    fn a_reply_is_a_validated_call_or_a_precise_error() {
        let served = served();
        let ok = parse_invocation(
            "  {\"plandex_tool_invocation\": {\"tool_name\": \"calc\", \"tool_input\": {\"a\": 2}}}\n",
            &served,
        )
        .unwrap();
        assert_eq!(ok.tool_name, "calc");
        assert_eq!(Value::Object(ok.tool_input), serde_json::json!({"a": 2}));
        let err = |reply: &str| parse_invocation(reply, &served).unwrap_err().to_string();
        assert_eq!(
            err("{\"plandex_tool_invocation\": {\"tool_name\": \"calc\", \"tool_input\": {}}}"),
            "`calc`: `tool_input/a`: \"a\" is a required property"
        );
        assert_eq!(
            err("{\"plandex_tool_invocation\": {\"tool_name\": 3}}"),
            "`plandex_tool_invocation.tool_name`: invalid type: integer `3`, expected a string"
        );
        assert!(
            err("Sure! Here is the call").starts_with("the reply is not JSON (line 1, column 1)")
        );
    }
}
