//! The studio's tool definitions page: every definition the server serves (the same
//! [`ToolRegistry`](promptd_stages::tools::ToolRegistry) as `tools/list`), with its input and
//! output schemas, its file and how it runs, the files that did not load, and a form per tool
//! whose call goes through [`Stages::call_tool_from_studio`]: the validation and execution of
//! MCP's `tools/call`, except that an `http` tool runs only when `tools.studioCallsHttp` allows
//! it. This module converts (form fields into arguments, the outcome into a view) and prints.
//!
//! Routes: `GET /studio/tools` (the page) and `POST /studio/tools/call` (a form's call: the page
//! again, with the call's result or its error beside the field it names). Both sit behind the
//! studio's token and `Host`/`Origin` guards ([`super::router`]); a call is a POST, which a
//! browser sends with its `Origin`, so a foreign page cannot make one.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Serialize;
use serde_json::{Map, Value};

use promptd_base::workspace::ClientOrigin;
use promptd_stages::tools::{DefinedTool, Execution, ToolCallError, ToolOutcome, ToolsSettings};
use promptd_stages::{Caller, Stages};

use super::web::{StudioState, asset, fault, form_page, plain};

/// The page.
pub const TOOLS_PATH: &str = "/studio/tools";
/// A form's call.
pub const CALL_PATH: &str = "/studio/tools/call";
/// The prefix of an argument's form field: `a.NAME`.
const ARG_PREFIX: &str = "a.";
/// The form field of a tool whose input schema lists no properties: the arguments as JSON.
const ARGUMENTS_FIELD: &str = "arguments";
/// At most this many properties get a field each; a larger schema is one JSON field.
const MAX_FIELDS: usize = 100;

/// One argument's form control.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolField {
    pub name: String,
    /// The form field's name: `a.NAME`, or `arguments` for the whole input as JSON.
    pub input: String,
    /// `string`, `number`, `integer`, `boolean` or `json` (an object, an array, or a schema
    /// that does not say: the value is read as JSON, else as text).
    pub control: &'static str,
    pub required: bool,
    pub description: Option<String>,
    /// An `enum` of strings: a select.
    pub options: Vec<String>,
    /// What the form sent.
    pub value: String,
    /// The call's error for this field.
    pub error: Option<String>,
}

/// One served definition as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCard {
    pub name: String,
    pub description: String,
    /// `http` or `predefined_server_function`.
    pub execution: &'static str,
    /// What runs: the method and URL, or the function's name.
    pub target: String,
    pub file: String,
    /// The schemas, pretty-printed.
    pub input_schema: String,
    pub output_schema: Option<String>,
    /// Whether the studio may call it (`tools.studioCallsHttp` for an `http` tool).
    pub callable: bool,
    pub fields: Vec<ToolField>,
}

/// A call's result, or why it did not run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct CallView {
    pub tool: String,
    /// The call ran and answered (`is_error` says whether the execution failed).
    pub ran: bool,
    pub is_error: bool,
    pub text: String,
    /// The structured content, pretty-printed.
    pub structured: Option<String>,
    pub warnings: Vec<String>,
    /// Why the call did not run: a refused argument (also shown at its field), an unknown or
    /// refused tool, a server fault.
    pub refused: Option<String>,
}

/// The page's data.
#[derive(Debug, Serialize)]
pub struct ToolsPage {
    pub tools: Vec<ToolCard>,
    /// Files that did not load, as `file:line:col: reason`.
    pub issues: Vec<String>,
    pub studio_calls_http: bool,
    /// The `tools` section does not parse (calls are refused until it does).
    pub settings_error: Option<String>,
    pub call: Option<CallView>,
    /// Why a call of a tool the page does not list did not run.
    pub notice: Option<String>,
}

/// The type names a property schema allows (`type` as a string or a list).
fn types_of(property: &Value) -> Vec<&str> {
    match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The control of a property schema.
fn control_of(property: &Value) -> &'static str {
    let types = types_of(property);
    let all = |allowed: &[&str]| {
        !types.is_empty() && types.iter().all(|t| *t == "null" || allowed.contains(t))
    };
    if types.contains(&"string") {
        "string"
    } else if all(&["integer"]) {
        "integer"
    } else if all(&["number", "integer"]) {
        "number"
    } else if all(&["boolean"]) {
        "boolean"
    } else {
        "json"
    }
}

/// The form fields of `tool`'s input schema, filled with `sent` (form field name → value).
pub fn fields(tool: &DefinedTool, sent: &[(String, String)]) -> Vec<ToolField> {
    let schema = &tool.definition.input_schema;
    let value_of = |field: &str| {
        sent.iter()
            .find(|(k, _)| k == field)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty() && p.len() <= MAX_FIELDS);
    let Some(properties) = properties else {
        return vec![ToolField {
            name: ARGUMENTS_FIELD.into(),
            input: ARGUMENTS_FIELD.into(),
            control: "json",
            required: false,
            description: Some("the arguments as a JSON object".into()),
            options: Vec::new(),
            value: value_of(ARGUMENTS_FIELD),
            error: None,
        }];
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let control = control_of(property);
            let options = match (control, property.get("enum")) {
                ("string", Some(Value::Array(values))) => values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            };
            ToolField {
                name: name.clone(),
                input: format!("{ARG_PREFIX}{name}"),
                control,
                required: required.contains(&name.as_str()),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                options,
                value: value_of(&format!("{ARG_PREFIX}{name}")),
                error: None,
            }
        })
        .collect()
}

/// The arguments a form sent for `tool`: each non-empty `a.NAME` field, as text for a property
/// that may be a string, else read as JSON (a value that does not parse stays text, so the
/// schema check names the field); or the `arguments` field's JSON object.
pub fn form_arguments(
    tool: &DefinedTool,
    sent: &[(String, String)],
) -> Result<Map<String, Value>, String> {
    if let Some((_, json)) = sent.iter().find(|(k, _)| k == ARGUMENTS_FIELD) {
        if json.trim().is_empty() {
            return Ok(Map::new());
        }
        return match serde_json::from_str::<Value>(json) {
            Ok(Value::Object(args)) => Ok(args),
            Ok(_) => Err("must be a JSON object".into()),
            Err(e) => Err(format!("not JSON: {e}")),
        };
    }
    let properties = tool.definition.input_schema.get("properties");
    let mut args = Map::new();
    for (key, value) in sent {
        let Some(name) = key.strip_prefix(ARG_PREFIX) else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        let property = properties.and_then(|p| p.get(name));
        let as_text = property.is_some_and(|p| control_of(p) == "string");
        let value = if as_text {
            Value::String(value.clone())
        } else {
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.clone()))
        };
        args.insert(name.to_string(), value);
    }
    Ok(args)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// One definition as a card, its fields filled with `sent`.
pub fn card(tool: &DefinedTool, settings: &ToolsSettings, sent: &[(String, String)]) -> ToolCard {
    let (execution, target) = match &tool.execution {
        Execution::Http(request) => ("http", format!("{} {}", request.method, request.url)),
        Execution::Function(function) => ("predefined_server_function", function.name.to_string()),
    };
    ToolCard {
        name: tool.name().to_string(),
        description: tool.definition.description.clone(),
        execution,
        target,
        file: tool.path().to_string(),
        input_schema: pretty(&tool.definition.input_schema),
        output_schema: tool.definition.output_schema.as_ref().map(pretty),
        callable: settings.studio_may_call(tool),
        fields: fields(tool, sent),
    }
}

/// The page: every served definition; `call` (with the fields its form sent) on its card.
pub fn page(stages: &Stages, call: Option<(CallView, Vec<(String, String)>)>) -> ToolsPage {
    let served = stages.served_tools();
    let (settings, settings_error) = match stages.tools_settings() {
        Ok(s) => (s, None),
        Err(e) => (Arc::default(), Some(e.to_string())),
    };
    let (call, sent) = match call {
        Some((view, sent)) => (Some(view), sent),
        None => (None, Vec::new()),
    };
    let tools: Vec<ToolCard> = served
        .tools
        .iter()
        .map(|tool| {
            let called = call.as_ref().is_some_and(|c| c.tool == tool.name());
            card(tool, &settings, if called { &sent } else { &[] })
        })
        .collect();
    let notice = call
        .as_ref()
        .filter(|c| !tools.iter().any(|t| t.name == c.tool))
        .and_then(|c| c.refused.clone());
    ToolsPage {
        notice,
        tools,
        issues: served.issues.iter().map(ToString::to_string).collect(),
        studio_calls_http: settings.studio_calls_http,
        settings_error,
        call,
    }
}

/// The first property of a JSON pointer (`/a/0` → `a`), unescaped.
fn pointer_head(pointer: &str) -> Option<String> {
    let head = pointer.strip_prefix('/')?.split('/').next()?;
    Some(head.replace("~1", "/").replace("~0", "~"))
}

/// A call's outcome as the page shows it.
fn call_view(tool: &str, outcome: Result<ToolOutcome, ToolCallError>) -> CallView {
    match outcome {
        Ok(outcome) => CallView {
            tool: tool.into(),
            ran: true,
            is_error: outcome.is_error,
            text: outcome.text,
            structured: outcome.structured.as_ref().map(pretty),
            warnings: outcome.warnings,
            refused: None,
        },
        Err(e) => CallView {
            tool: tool.into(),
            refused: Some(e.to_string()),
            ..CallView::default()
        },
    }
}

#[derive(Serialize)]
struct PageContext<'a> {
    page: &'a ToolsPage,
}

/// The page with `status` (its form POSTs: [`form_page`]).
fn render_page(page: &ToolsPage, status: StatusCode) -> Response {
    let mut response = form_page("tools.html", &PageContext { page });
    if response.status().is_success() {
        *response.status_mut() = status;
    }
    response
}

/// The page's routes over `state`; `authenticated`: the server has a token (every studio
/// request then carried it).
pub(crate) fn routes(state: Arc<StudioState>, authenticated: bool) -> axum::Router {
    axum::Router::new()
        .route(TOOLS_PATH, get(tools_page))
        .route(CALL_PATH, post(call))
        .route("/studio/tools.css", get(tools_css))
        .with_state((state, authenticated))
}

type ToolsState = State<(Arc<StudioState>, bool)>;

async fn tools_page(State((state, _)): ToolsState) -> Response {
    let stages = state.stages.clone();
    match tokio::task::spawn_blocking(move || page(&stages, None)).await {
        Ok(page) => render_page(&page, StatusCode::OK),
        Err(_) => fault("the tools page could not be built"),
    }
}

async fn tools_css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/tools.css"))
}

async fn call(State((state, authenticated)): ToolsState, request: Request) -> Response {
    let max = state.library.snapshot().limits.max_request_bytes;
    let body = match promptd_http::body::read_bounded(request.into_body(), max).await {
        Ok(body) => body,
        Err(e) => return plain(StatusCode::PAYLOAD_TOO_LARGE, &format!("{e}\n")),
    };
    let Ok(sent) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body) else {
        return plain(StatusCode::BAD_REQUEST, "the form is not URL-encoded\n");
    };
    let Some(name) = sent
        .iter()
        .find(|(k, _)| k == "tool")
        .map(|(_, v)| v.clone())
    else {
        return plain(StatusCode::BAD_REQUEST, "form field `tool` is required\n");
    };
    let stages = state.stages.clone();
    let tool = stages.served_tools().find(&name).cloned();
    let outcome = match tool.map(|t| form_arguments(&t, &sent)) {
        None => Err(ToolCallError::Unknown { name: name.clone() }),
        Some(Err(message)) => Err(ToolCallError::Input {
            tool: name.clone(),
            field: format!("/{ARGUMENTS_FIELD}"),
            message,
        }),
        Some(Ok(args)) => {
            let caller = Caller::Client {
                roots: Vec::new(),
                server_dir: Some(state.library.cwd().to_path_buf()),
                origin: ClientOrigin::Http { authenticated },
            };
            let called = stages.clone();
            let tool = name.clone();
            // On a task of its own: a panic in a stage is a 500 and the server goes on.
            let task =
                tokio::spawn(
                    async move { called.call_tool_from_studio(&tool, args, caller).await },
                );
            match task.await {
                Ok(outcome) => outcome,
                Err(_) => return fault("the tool call failed"),
            }
        }
    };
    let status = match &outcome {
        Ok(_) => StatusCode::OK,
        Err(ToolCallError::Refused { .. }) => StatusCode::FORBIDDEN,
        Err(ToolCallError::Unknown { .. }) => StatusCode::NOT_FOUND,
        Err(e) if e.is_caller_error() => StatusCode::UNPROCESSABLE_ENTITY,
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let field = match &outcome {
        Err(ToolCallError::Input { field, .. }) => pointer_head(field),
        _ => None,
    };
    let view = call_view(&name, outcome);
    let built = tokio::task::spawn_blocking(move || {
        let mut page = page(&stages, Some((view, sent)));
        mark_field(&mut page, field.as_deref());
        page
    })
    .await;
    match built {
        Ok(page) => render_page(&page, status),
        Err(_) => fault("the tools page could not be built"),
    }
}

/// Puts the call's error at the field it names.
fn mark_field(page: &mut ToolsPage, field: Option<&str>) {
    let (Some(call), Some(field)) = (&page.call, field) else {
        return;
    };
    let message = call.refused.clone();
    if let Some(f) = page
        .tools
        .iter_mut()
        .filter(|c| c.name == call.tool)
        .flat_map(|c| c.fields.iter_mut())
        .find(|f| f.name == field)
    {
        f.error = message;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> DefinedTool {
        let file = json!({"toolName": "t", "description": "d", "inputSchema": schema.to_string(),
            "executionType": "predefined_server_function",
            "executionDetails": {"functionName": "echoTool"}});
        promptd_stages::tools::definition::parse(&file.to_string(), "t.json", &[]).unwrap()
    }

    fn sent(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn form_fields_become_arguments_typed_by_the_schema() {
        let t = tool(json!({"type": "object", "properties": {
            "s": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
            "b": {"type": "boolean"}, "o": {"type": "object"}, "either": {"type": ["string", "number"]},
            "any": {}}}));
        let args = form_arguments(
            &t,
            &sent(&[
                ("tool", "t"),
                ("a.s", "12"),
                ("a.n", "1.5"),
                ("a.i", "abc"),
                ("a.b", "true"),
                ("a.o", "{\"k\": [1]}"),
                ("a.either", "7"),
                ("a.any", "null"),
                ("a.unlisted", ""),
            ]),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"s": "12", "n": 1.5, "i": "abc", "b": true, "o": {"k": [1]}, "either": "7",
                "any": null})
        );
        let listed = fields(&t, &[]);
        let control = |n: &str| listed.iter().find(|f| f.name == n).unwrap().control;
        assert_eq!(
            ["s", "n", "i", "b", "o", "either", "any"].map(control),
            [
                "string", "number", "integer", "boolean", "json", "string", "json"
            ]
        );
    }

    #[test]
    fn a_schema_without_properties_takes_the_arguments_as_json() {
        let t = tool(json!({"type": "object"}));
        let f = fields(&t, &sent(&[("arguments", "{\"x\": 1}")]));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].input.as_str(), f[0].value.as_str()),
            ("arguments", "{\"x\": 1}")
        );
        let args = form_arguments(&t, &sent(&[("arguments", "{\"x\": 1}")])).unwrap();
        assert_eq!(Value::Object(args), json!({"x": 1}));
        assert_eq!(
            form_arguments(&t, &sent(&[("arguments", "[1]")])).unwrap_err(),
            "must be a JSON object"
        );
        assert!(
            form_arguments(&t, &sent(&[("arguments", "{")]))
                .unwrap_err()
                .starts_with("not JSON")
        );
        assert!(
            form_arguments(&t, &sent(&[("arguments", " ")]))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_pointer_names_its_first_property() {
        assert_eq!(pointer_head("/a/0").as_deref(), Some("a"));
        assert_eq!(pointer_head("/a~1b~0c").as_deref(), Some("a/b~c"));
        assert_eq!(pointer_head(""), None);
    }
}
