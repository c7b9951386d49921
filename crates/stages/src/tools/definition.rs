//! One `.promptd/tools/*.json` file in Plandex's shape, read and checked: it must deserialize
//! into that shape, each schema string must parse as JSON and compile with `jsonschema` (which
//! also checks it against its meta-schema; no remote `$ref` is fetched), the input schema must be
//! an object schema (MCP's requirement), the name must be non-empty without spaces, and the
//! execution must be runnable: an `http` tool needs a method reqwest knows and an absolute
//! `http(s)` URL whose `{param}` placeholders lie after the host (so the model never picks the
//! host) and whose headers are valid names with values that are text or `${env:NAME}`; a
//! `predefined_server_function` tool needs a `functionName` of the function registry. A file
//! that fails is reported with its line and column.

use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::functions::{self, PredefinedFunction};

/// Folder, under the workspace root, holding tool definitions.
pub const TOOLS_DIR: &str = ".promptd/tools";

/// Where a tool comes from.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ToolOrigin {
    /// One of the MCP server's own tools.
    Server,
    /// A `.promptd/tools/*.json` file (workspace-relative path).
    #[serde(rename_all = "camelCase")]
    Workspace {
        path: String,
        execution_type: ExecutionType,
        execution_details: Value,
    },
}

/// How a Plandex-shaped tool is executed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionType {
    Http,
    PredefinedServerFunction,
}

/// A tool as listed in the catalog. The server's own tools are made with
/// [`ToolDefinition::server`] by the caller.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub origin: ToolOrigin,
}

impl ToolDefinition {
    /// One of the MCP server's own tools.
    pub fn server(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            origin: ToolOrigin::Server,
        }
    }

    /// The tool as it appears in the tools block.
    pub fn render(&self) -> String {
        let mut section = format!("### Tool: {}\n", self.name);
        let description = self.description.trim();
        if !description.is_empty() {
            section.push_str(description);
            section.push('\n');
        }
        section.push_str(&format!("Input schema: {}\n", self.input_schema));
        if let Some(output) = &self.output_schema {
            section.push_str(&format!("Output schema: {output}\n"));
        }
        section
    }
}

/// A tool definition that was skipped.
#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolIssue {
    /// Workspace-relative path of the file (or `server:<name>` for a server tool).
    pub path: String,
    /// Where in the file, when the problem is in its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub reason: String,
}

impl ToolIssue {
    /// An issue of a whole file or folder.
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> ToolIssue {
        ToolIssue {
            path: path.into(),
            line: None,
            column: None,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for ToolIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.path, self.reason),
            _ => write!(f, "{}: {}", self.path, self.reason),
        }
    }
}

/// A tool definition file as Plandex writes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlandexToolFile {
    tool_name: String,
    description: String,
    input_schema: String,
    #[serde(default)]
    output_schema: Option<String>,
    execution_type: ExecutionType,
    #[serde(default)]
    execution_details: Value,
}

/// A definition that loaded: what the catalog lists, and how it runs.
#[derive(Clone)]
pub struct DefinedTool {
    pub definition: ToolDefinition,
    pub execution: Execution,
    pub(crate) input: Arc<jsonschema::Validator>,
    pub(crate) output: Option<Arc<jsonschema::Validator>>,
}

impl std::fmt::Debug for DefinedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefinedTool")
            .field("name", &self.definition.name)
            .field("execution", &self.execution)
            .finish_non_exhaustive()
    }
}

impl DefinedTool {
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// Whether a call reads the caller's workspace (and so its client's roots).
    pub fn uses_workspace(&self) -> bool {
        matches!(&self.execution, Execution::Function(f) if f.uses_workspace)
    }

    /// The file the definition was read from, as shown to users.
    pub fn path(&self) -> &str {
        match &self.definition.origin {
            ToolOrigin::Workspace { path, .. } => path,
            ToolOrigin::Server => "",
        }
    }
}

/// How a defined tool runs.
#[derive(Debug, Clone)]
pub enum Execution {
    Http(HttpTool),
    Function(&'static PredefinedFunction),
}

/// An `http` tool's request, as its definition gives it.
#[derive(Debug, Clone)]
pub struct HttpTool {
    pub method: reqwest::Method,
    /// The URL with its `{param}` placeholders.
    pub url: String,
    /// The placeholder names, in order of appearance.
    pub placeholders: Vec<String>,
    pub headers: Vec<(reqwest::header::HeaderName, HeaderValueTemplate)>,
}

/// A header value: text, or `${env:NAME}` read from the server's environment at call time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValueTemplate {
    Text(String),
    Env(String),
}

/// Why a tool definition file was skipped: the file, where in it, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}:{column}: {problem}")]
pub struct ToolFileError {
    /// The file as shown to users.
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub problem: ToolFileProblem,
}

/// What is wrong with a tool definition file.
#[derive(Debug, thiserror::Error)]
pub enum ToolFileProblem {
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    #[error("not a Plandex tool definition: {0}")]
    Shape(String),
    #[error("toolName `{0}` must be non-empty without spaces")]
    Name(String),
    #[error("toolName `{0}` is one of promptd's own tools; choose another name")]
    Shadows(String),
    #[error("{field} is not valid JSON: {message}")]
    SchemaJson {
        field: &'static str,
        message: String,
    },
    #[error("{field} is not a valid JSON Schema: {message}")]
    Schema {
        field: &'static str,
        message: String,
    },
    #[error("inputSchema must be a JSON object schema")]
    InputNotObject,
    #[error("executionDetails must be a JSON object")]
    DetailsNotObject,
    #[error("executionType `http` needs executionDetails.url (a string)")]
    HttpWithoutUrl,
    #[error("executionDetails.url: {0}")]
    Url(String),
    #[error("executionDetails.method `{0}` is not an HTTP method")]
    Method(String),
    #[error("executionDetails.headers: {0}")]
    Header(String),
    #[error(
        "executionType `predefined_server_function` needs executionDetails.functionName, one of: {}",
        functions::names().join(", ")
    )]
    FunctionMissing,
    #[error("executionDetails.functionName `{name}` is not a predefined function; known: {}", functions::names().join(", "))]
    UnknownFunction { name: String },
    #[error("the file is {size} bytes, over the limit of {max} bytes")]
    TooLarge { size: u64, max: u64 },
}

/// Tool definition files are small: a larger one is refused before it is read.
pub const MAX_TOOL_FILE_BYTES: u64 = 256 * 1024;

/// Reads and checks one definition file; `shown` is its path as reported; `reserved` are names
/// it may not take (promptd's own tools).
pub fn load_file(
    file: &Path,
    shown: &str,
    reserved: &[&str],
) -> Result<DefinedTool, ToolFileError> {
    let at = |line: usize, column: usize| {
        move |problem| ToolFileError {
            path: shown.to_string(),
            line,
            column,
            problem,
        }
    };
    let size = std::fs::metadata(file)
        .map_err(ToolFileProblem::Read)
        .map_err(at(1, 1))?
        .len();
    if size > MAX_TOOL_FILE_BYTES {
        return Err(at(1, 1)(ToolFileProblem::TooLarge {
            size,
            max: MAX_TOOL_FILE_BYTES,
        }));
    }
    let raw = std::fs::read_to_string(file)
        .map_err(ToolFileProblem::Read)
        .map_err(at(1, 1))?;
    parse(&raw, shown, reserved)
}

/// Checks the text of one definition file (see [`load_file`]).
pub fn parse(raw: &str, shown: &str, reserved: &[&str]) -> Result<DefinedTool, ToolFileError> {
    let parsed: PlandexToolFile = serde_json::from_str(raw).map_err(|e| ToolFileError {
        path: shown.to_string(),
        line: e.line().max(1),
        column: e.column().max(1),
        problem: ToolFileProblem::Shape(promptd_base::config::strip_position(&e.to_string())),
    })?;
    let at_key = |key: &str| {
        let (line, column) = key_position(raw, key);
        move |problem| ToolFileError {
            path: shown.to_string(),
            line,
            column,
            problem,
        }
    };
    let name = parsed.tool_name.trim();
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(at_key("toolName")(ToolFileProblem::Name(
            parsed.tool_name.clone(),
        )));
    }
    if reserved.contains(&name) {
        return Err(at_key("toolName")(ToolFileProblem::Shadows(
            name.to_string(),
        )));
    }
    let (input_schema, input) =
        compile_schema("inputSchema", &parsed.input_schema).map_err(at_key("inputSchema"))?;
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(at_key("inputSchema")(ToolFileProblem::InputNotObject));
    }
    let output = parsed
        .output_schema
        .as_deref()
        .map(|s| compile_schema("outputSchema", s))
        .transpose()
        .map_err(at_key("outputSchema"))?;
    let details = &parsed.execution_details;
    if !(details.is_object() || details.is_null()) {
        return Err(at_key("executionDetails")(
            ToolFileProblem::DetailsNotObject,
        ));
    }
    let execution = match parsed.execution_type {
        ExecutionType::Http => {
            Execution::Http(http_tool(details).map_err(at_key("executionDetails"))?)
        }
        ExecutionType::PredefinedServerFunction => {
            let Some(function) = details.get("functionName").and_then(Value::as_str) else {
                return Err(at_key("executionDetails")(ToolFileProblem::FunctionMissing));
            };
            let found = functions::find(function).ok_or_else(|| {
                at_key("functionName")(ToolFileProblem::UnknownFunction {
                    name: function.to_string(),
                })
            })?;
            Execution::Function(found)
        }
    };
    let (output_schema, output) = match output {
        Some((schema, validator)) => (Some(schema), Some(Arc::new(validator))),
        None => (None, None),
    };
    Ok(DefinedTool {
        definition: ToolDefinition {
            name: name.to_string(),
            description: parsed.description,
            input_schema,
            output_schema,
            origin: ToolOrigin::Workspace {
                path: shown.to_string(),
                execution_type: parsed.execution_type,
                execution_details: parsed.execution_details,
            },
        },
        execution,
        input: Arc::new(input),
        output,
    })
}

/// The request an `http` tool's details describe.
fn http_tool(details: &Value) -> Result<HttpTool, ToolFileProblem> {
    let Some(url) = details.get("url").and_then(Value::as_str) else {
        return Err(ToolFileProblem::HttpWithoutUrl);
    };
    let method_text = details
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("GET");
    let method = reqwest::Method::from_bytes(method_text.to_ascii_uppercase().as_bytes())
        .map_err(|_| ToolFileProblem::Method(method_text.to_string()))?;
    let placeholders = placeholders(url).map_err(ToolFileProblem::Url)?;
    // The host must be fixed by the definition: a placeholder may only follow it.
    let after_scheme = url
        .split_once("://")
        .filter(|(scheme, _)| {
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        })
        .ok_or_else(|| ToolFileProblem::Url(format!("`{url}` is not an absolute http(s) URL")))?
        .1;
    let authority_end = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    if after_scheme[..authority_end].contains(['{', '}']) {
        return Err(ToolFileProblem::Url(format!(
            "`{url}`: a placeholder may not be part of the host"
        )));
    }
    let probe = placeholders
        .iter()
        .fold(url.to_string(), |u, p| u.replace(&format!("{{{p}}}"), "x"));
    let parsed =
        reqwest::Url::parse(&probe).map_err(|e| ToolFileProblem::Url(format!("`{url}`: {e}")))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(ToolFileProblem::Url(format!("`{url}` names no host")));
    }
    let mut headers = Vec::new();
    match details.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                let header =
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        ToolFileProblem::Header(format!("`{name}` is not a header name"))
                    })?;
                let Some(text) = value.as_str() else {
                    return Err(ToolFileProblem::Header(format!(
                        "`{name}`: the value must be a string"
                    )));
                };
                headers.push((header, header_value(name, text)?));
            }
        }
        Some(_) => {
            return Err(ToolFileProblem::Header(
                "must be an object of header names to string values".into(),
            ));
        }
    }
    Ok(HttpTool {
        method,
        url: url.to_string(),
        placeholders,
        headers,
    })
}

/// A header value as written: `${env:NAME}` alone, or text without `${`.
fn header_value(name: &str, text: &str) -> Result<HeaderValueTemplate, ToolFileProblem> {
    if let Some(var) = text
        .strip_prefix("${env:")
        .and_then(|t| t.strip_suffix('}'))
    {
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ToolFileProblem::Header(format!(
                "`{name}`: `{text}` names no environment variable"
            )));
        }
        return Ok(HeaderValueTemplate::Env(var.to_string()));
    }
    if text.contains("${") {
        return Err(ToolFileProblem::Header(format!(
            "`{name}`: a value is text or exactly `${{env:NAME}}`"
        )));
    }
    reqwest::header::HeaderValue::from_str(text)
        .map_err(|_| ToolFileProblem::Header(format!("`{name}`: not a valid header value")))?;
    Ok(HeaderValueTemplate::Text(text.to_string()))
}

/// The `{name}` placeholders of a URL template, in order; names are letters, digits and `_`.
fn placeholders(url: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("`{url}`: `{{` without `}}`"))?;
        let name = &after[..close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{url}`: `{{{name}}}` is not a placeholder name"));
        }
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("`{url}`: `}}` without `{{`"));
    }
    Ok(out)
}

/// Parses a schema string and compiles it, so a schema the validator would reject never reaches
/// the model.
pub(crate) fn compile_schema(
    field: &'static str,
    text: &str,
) -> Result<(Value, jsonschema::Validator), ToolFileProblem> {
    let schema: Value = serde_json::from_str(text).map_err(|e| ToolFileProblem::SchemaJson {
        field,
        message: e.to_string(),
    })?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| ToolFileProblem::Schema {
        field,
        message: e.to_string(),
    })?;
    Ok((schema, validator))
}

/// Line and column (1-based) of the first `"key"` in `raw`; the file's start when absent.
fn key_position(raw: &str, key: &str) -> (usize, usize) {
    let Some(at) = raw.find(&format!("\"{key}\"")) else {
        return (1, 1);
    };
    let before = &raw[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http_file(details: &str) -> String {
        format!(
            "{{\"toolName\": \"t\", \"description\": \"d\",\n\"inputSchema\": \"{{\\\"type\\\":\\\"object\\\"}}\",\n\"executionType\": \"http\",\n\"executionDetails\": {details}}}"
        )
    }

    fn problem(raw: &str) -> String {
        parse(raw, "t.json", &["compose_prompt"])
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_host_is_the_definitions_and_headers_come_only_from_it_or_the_environment() {
        assert_eq!(
            problem(&http_file(r#"{"url": "http://{host}/x"}"#)),
            "t.json:4:1: executionDetails.url: `http://{host}/x`: a placeholder may not be part of the host"
        );
        assert!(
            problem(&http_file(r#"{"url": "file:///etc/passwd"}"#))
                .contains("not an absolute http(s) URL")
        );
        assert!(problem(&http_file(r#"{"url": "http://a/{x"}"#)).contains("without"));
        assert!(
            problem(&http_file(r#"{"url": "http://a/", "method": "FETCH ME"}"#))
                .contains("not an HTTP method")
        );
        assert!(
            problem(&http_file(
                r#"{"url": "http://a/", "headers": {"X": "Bearer ${env:T}"}}"#
            ))
            .contains("exactly `${env:NAME}`")
        );
        let ok = parse(
            &http_file(r#"{"url": "http://a/u/{id}?v={id}", "method": "post", "headers": {"Authorization": "${env:TOKEN}", "Accept": "application/json"}}"#),
            "t.json",
            &[],
        )
        .unwrap();
        let Execution::Http(http) = ok.execution else {
            panic!("an http tool")
        };
        assert_eq!(http.method, reqwest::Method::POST);
        assert_eq!(http.placeholders, ["id"]);
        assert_eq!(http.headers[0].1, HeaderValueTemplate::Env("TOKEN".into()));
    }

    #[test]
    fn a_function_must_be_predefined_and_a_name_not_reserved() {
        let function = |name: &str, function: &str| {
            format!(
                "{{\"toolName\": \"{name}\", \"description\": \"d\", \"inputSchema\": \"{{\\\"type\\\":\\\"object\\\"}}\",\n \"executionType\": \"predefined_server_function\", \"executionDetails\": {{\"functionName\": \"{function}\"}}}}"
            )
        };
        assert!(problem(&function("t", "rm_rf")).starts_with("t.json:2:"));
        assert!(problem(&function("t", "rm_rf")).contains("known: echoTool, simpleCalculator"));
        assert_eq!(
            problem(&function("compose_prompt", "echoTool")),
            "t.json:1:2: toolName `compose_prompt` is one of promptd's own tools; choose another name"
        );
        assert!(parse(&function("t", "echoTool"), "t.json", &[]).is_ok());
    }
}
