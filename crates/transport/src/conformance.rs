//! JSON-RPC 2.0 conformance at the edge: every raw message a client sends over stdio is checked
//! here before rmcp sees it ([`crate::lines::LineTransport`]); over streamable HTTP rmcp parses
//! the body and what it cannot parse is checked here for its answer ([`conform_http`]). It
//! exists because rmcp 3.11 drops a message that is not JSON without an answer, answers a wrong
//! shape without its id, and never names the parameter at fault.
//!
//! [`check`] sorts one raw message into a [`Verdict`]:
//! - a well-formed MCP message passes to rmcp as rmcp's own parse reads it;
//! - malformed JSON is answered with -32700 (Parse error, id null);
//! - well-formed JSON that is not a JSON-RPC message (a wrong shape, nesting deeper than serde's
//!   recursion limit, a batch array: MCP 2025-06-18 removed batching) is answered with -32600
//!   (Invalid Request), carrying the message's id when it has a readable one;
//! - a request for a known MCP method whose params do not fit that method is answered with
//!   -32602 (Invalid params) naming the field at fault: here when the message does not parse
//!   at all, by the handler ([`misfit_params`]) when rmcp files it under custom requests;
//! - a notification that does not parse is dropped (JSON-RPC forbids replying to one).
//!
//! Validity of JSON is checked with serde_json's iterative skipper, so no depth of nesting can
//! exhaust the stack.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
// Deprecated methods (logging, resource subscriptions) are still served by rmcp, so their params
// are checked too.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, CancelTaskMethod,
    CancelTaskParams, CancelTaskRequest, ClientJsonRpcMessage, CompleteRequest,
    CompleteRequestMethod, CompleteRequestParams, ConstString, DiscoverRequest,
    DiscoverRequestMethod, DiscoverRequestParams, ErrorData, GetPromptRequest,
    GetPromptRequestMethod, GetPromptRequestParams, GetSkillRequest, GetSkillRequestMethod,
    GetSkillRequestParams, GetTaskMethod, GetTaskParams, GetTaskRequest, InitializeRequest,
    InitializeRequestParams, InitializeResultMethod, JsonObject, ListPromptsRequest,
    ListPromptsRequestMethod, ListResourceTemplatesRequest, ListResourceTemplatesRequestMethod,
    ListResourcesRequest, ListResourcesRequestMethod, ListSkillsRequest, ListSkillsRequestMethod,
    ListToolsRequest, ListToolsRequestMethod, PaginatedRequestParams, PingRequest,
    PingRequestMethod, ReadResourceDirectoryRequest, ReadResourceDirectoryRequestMethod,
    ReadResourceDirectoryRequestParams, ReadResourceRequest, ReadResourceRequestMethod,
    ReadResourceRequestParams, SetLevelRequest, SetLevelRequestMethod, SetLevelRequestParams,
    SubscribeRequest, SubscribeRequestMethod, SubscribeRequestParams, SubscriptionsListenRequest,
    SubscriptionsListenRequestMethod, SubscriptionsListenRequestParams, UnsubscribeRequest,
    UnsubscribeRequestMethod, UnsubscribeRequestParams, UpdateTaskMethod, UpdateTaskParams,
    UpdateTaskRequest,
};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// serde_json's recursion limit: the deepest nesting a message may have.
const SERDE_DEPTH: usize = 128;

/// The config key of the message size limit, as named in errors.
const MAX_REQUEST_BYTES_KEY: &str = "limits.maxRequestBytes";

/// What to do with one raw message.
#[derive(Debug)]
pub enum Verdict {
    /// A well-formed MCP message: rmcp handles it.
    Pass(Box<ClientJsonRpcMessage>),
    /// Not for rmcp: answer with this error.
    Refuse(Refusal),
    /// Nothing to pass on or answer (a notification that does not parse).
    Drop,
}

/// A JSON-RPC error reply to a message rmcp never sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The id of the message refused: a string or number it carried, else null.
    pub id: Value,
    pub error: ErrorData,
}

impl Refusal {
    pub fn new(id: Value, error: ErrorData) -> Refusal {
        Refusal { id, error }
    }

    /// The refusal of a message over `limit` bytes (its id is never read).
    pub fn too_large(limit: usize) -> Refusal {
        Refusal::new(
            Value::Null,
            ErrorData::invalid_request(
                format!(
                    "Invalid Request: message larger than {limit} bytes \
                     ({MAX_REQUEST_BYTES_KEY}); it was discarded"
                ),
                None,
            ),
        )
    }

    /// The JSON-RPC error response, as one line of JSON (no newline).
    pub fn to_json(&self) -> Vec<u8> {
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": self.error,
        });
        serde_json::to_vec(&reply).expect("a JSON value serializes")
    }
}

/// The fields of a message that are read before it is known to be well-formed. Every other
/// field is skipped without recursion.
#[derive(Deserialize)]
struct Probe {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
}

/// A field that is present, even as `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Probe {
    /// The id to answer with: the message's own when it is a valid JSON-RPC id.
    fn reply_id(&self) -> Value {
        match &self.id {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::Null,
        }
    }

    /// What makes the envelope invalid, if the probed members show it.
    fn problem(&self) -> Option<String> {
        if !matches!(&self.jsonrpc, Some(Value::String(v)) if v == "2.0") {
            return Some(r#"member "jsonrpc" must be "2.0""#.into());
        }
        if self.method.as_ref().is_some_and(|m| !m.is_string()) {
            return Some(r#"member "method" must be a string"#.into());
        }
        if self
            .id
            .as_ref()
            .is_some_and(|id| !id.is_string() && !id.is_number())
        {
            return Some(r#"member "id" must be a string or a number"#.into());
        }
        None
    }

    /// A request (version 2.0, a valid id) for a method rmcp knows: its method and params check.
    fn known_request(&self) -> Option<(&'static str, Explain)> {
        let Some(Value::String(method)) = &self.method else {
            return None;
        };
        let valid = matches!(&self.jsonrpc, Some(Value::String(v)) if v == "2.0")
            && matches!(self.id, Some(Value::String(_) | Value::Number(_)));
        if !valid {
            return None;
        }
        KNOWN_METHODS.iter().copied().find(|(m, _)| m == method)
    }

    /// A notification by shape: version 2.0, a method name, no id.
    fn is_notification(&self) -> bool {
        self.id.is_none()
            && matches!(&self.jsonrpc, Some(Value::String(v)) if v == "2.0")
            && matches!(self.method, Some(Value::String(_)))
    }
}

/// Sorts one raw message (a stdio line or an HTTP body).
pub fn check(raw: &[u8]) -> Verdict {
    let raw = without_bom(raw);
    // Every message rmcp reads is one parse: one that parses is valid JSON, an object, and
    // within the nesting limit, so the checks below would pass it as it is. A request for a
    // method rmcp types whose params do not fit that method parses too (rmcp files it under
    // custom requests): the handler answers it with [`misfit_params`].
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(raw) {
        Ok(message) => return Verdict::Pass(Box::new(message)),
        Err(e) => e,
    };
    if let Err(e) = serde_json::from_slice::<IgnoredAny>(raw) {
        return Verdict::Refuse(Refusal::new(
            Value::Null,
            ErrorData::parse_error(format!("Parse error: {e}"), None),
        ));
    }
    // The skipper does not decode strings: bytes that are not UTF-8 inside one pass it, and
    // JSON text is UTF-8.
    if let Err(e) = std::str::from_utf8(raw) {
        return Verdict::Refuse(Refusal::new(
            Value::Null,
            ErrorData::parse_error(
                format!(
                    "Parse error: invalid UTF-8 at byte {} of the message",
                    e.valid_up_to()
                ),
                None,
            ),
        ));
    }
    match raw.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[') => {
            return Verdict::Refuse(Refusal::new(
                Value::Null,
                ErrorData::invalid_request(
                    "Invalid Request: batches (JSON arrays) are not supported: MCP removed \
                     JSON-RPC batching in protocol 2025-06-18; send one message at a time",
                    None,
                ),
            ));
        }
        _ => {
            return Verdict::Refuse(Refusal::new(
                Value::Null,
                ErrorData::invalid_request(
                    "Invalid Request: a JSON-RPC message is a JSON object",
                    None,
                ),
            ));
        }
    }
    let probe = serde_json::from_slice::<Probe>(raw).ok();
    if probe.as_ref().is_some_and(Probe::is_notification) {
        tracing::debug!("dropping a notification that does not parse");
        return Verdict::Drop;
    }
    let known = probe.as_ref().and_then(Probe::known_request);
    let probe_problem = probe.as_ref().and_then(Probe::problem);
    let id = probe.map_or(Value::Null, |p| p.reply_id());
    match known.and_then(|(method, explain)| invalid_params(method, explain, raw)) {
        Some(why) => Verdict::Refuse(Refusal::new(id, ErrorData::invalid_params(why, None))),
        None => {
            let why = probe_problem.unwrap_or_else(|| {
                let e = error.to_string();
                if e.starts_with("recursion limit exceeded") {
                    format!("nested deeper than {SERDE_DEPTH} levels ({e})")
                } else {
                    e
                }
            });
            Verdict::Refuse(Refusal::new(
                id,
                ErrorData::invalid_request(format!("Invalid Request: {why}"), None),
            ))
        }
    }
}

/// A message without its UTF-8 byte order mark, if it has one.
fn without_bom(raw: &[u8]) -> &[u8] {
    raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw)
}

/// The Invalid params message of a request for `method`, one rmcp types, whose `params` do
/// not fit it; `None` when `method` is not one of those or its params fit. rmcp files such a
/// request under custom requests, which the handler answers with this.
pub fn misfit_params(method: &str, params: Option<&Value>) -> Option<String> {
    let (method, explain) = KNOWN_METHODS.iter().copied().find(|(m, _)| *m == method)?;
    let mut request = serde_json::Map::new();
    request.insert("method".into(), Value::String(method.into()));
    if let Some(params) = params {
        request.insert("params".into(), params.clone());
    }
    explained(method, explain, &Value::Object(request))
}

/// Explains why a request's params do not fit its method, or `None` when they do.
type Explain = fn(&Value) -> Option<String>;

/// The client requests rmcp knows, each with the check of its params. A request for one of
/// these methods that rmcp cannot read as that method has params that do not fit.
#[allow(deprecated)]
const KNOWN_METHODS: &[(&str, Explain)] = &[
    (PingRequestMethod::VALUE, explain::<PingRequest, JsonObject>),
    (
        InitializeResultMethod::VALUE,
        explain::<InitializeRequest, InitializeRequestParams>,
    ),
    (
        DiscoverRequestMethod::VALUE,
        explain::<DiscoverRequest, DiscoverRequestParams>,
    ),
    (
        CompleteRequestMethod::VALUE,
        explain::<CompleteRequest, CompleteRequestParams>,
    ),
    (
        SetLevelRequestMethod::VALUE,
        explain::<SetLevelRequest, SetLevelRequestParams>,
    ),
    (
        GetPromptRequestMethod::VALUE,
        explain::<GetPromptRequest, GetPromptRequestParams>,
    ),
    (
        ListPromptsRequestMethod::VALUE,
        explain::<ListPromptsRequest, PaginatedRequestParams>,
    ),
    (
        ListResourcesRequestMethod::VALUE,
        explain::<ListResourcesRequest, PaginatedRequestParams>,
    ),
    (
        ListResourceTemplatesRequestMethod::VALUE,
        explain::<ListResourceTemplatesRequest, PaginatedRequestParams>,
    ),
    (
        ReadResourceRequestMethod::VALUE,
        explain::<ReadResourceRequest, ReadResourceRequestParams>,
    ),
    (
        SubscriptionsListenRequestMethod::VALUE,
        explain::<SubscriptionsListenRequest, SubscriptionsListenRequestParams>,
    ),
    (
        SubscribeRequestMethod::VALUE,
        explain::<SubscribeRequest, SubscribeRequestParams>,
    ),
    (
        UnsubscribeRequestMethod::VALUE,
        explain::<UnsubscribeRequest, UnsubscribeRequestParams>,
    ),
    (
        CallToolRequestMethod::VALUE,
        explain::<CallToolRequest, CallToolRequestParams>,
    ),
    (
        ListToolsRequestMethod::VALUE,
        explain::<ListToolsRequest, PaginatedRequestParams>,
    ),
    (
        GetTaskMethod::VALUE,
        explain::<GetTaskRequest, GetTaskParams>,
    ),
    (
        UpdateTaskMethod::VALUE,
        explain::<UpdateTaskRequest, UpdateTaskParams>,
    ),
    (
        CancelTaskMethod::VALUE,
        explain::<CancelTaskRequest, CancelTaskParams>,
    ),
    (
        ListSkillsRequestMethod::VALUE,
        explain::<ListSkillsRequest, PaginatedRequestParams>,
    ),
    (
        GetSkillRequestMethod::VALUE,
        explain::<GetSkillRequest, GetSkillRequestParams>,
    ),
    (
        ReadResourceDirectoryRequestMethod::VALUE,
        explain::<ReadResourceDirectoryRequest, ReadResourceDirectoryRequestParams>,
    ),
];

/// Why the params of a request for a known `method` do not fit it, or `None` when the
/// request is wrong in some other way (then it is an Invalid Request).
fn invalid_params(method: &str, explain: Explain, raw: &[u8]) -> Option<String> {
    // Beyond the recursion limit this fails: an Invalid Request, not a params problem.
    let mut value: Value = serde_json::from_slice(raw).ok()?;
    let object = value.as_object_mut()?;
    object.remove("jsonrpc");
    object.remove("id");
    explained(method, explain, &value)
}

/// The Invalid params message for `request` (its method and params), if `explain` finds fault.
fn explained(method: &str, explain: Explain, request: &Value) -> Option<String> {
    let why = explain(request)?;
    Some(format!("Invalid params for `{method}`: {why}"))
}

/// Why `request` (method and params) is not a `T`: first the params alone as a `P` (to name
/// the field at fault), then the whole request.
fn explain<T: DeserializeOwned, P: DeserializeOwned>(request: &Value) -> Option<String> {
    if let Some(params) = request.get("params").filter(|p| !p.is_null()) {
        if !params.is_object() {
            return Some("params: expected an object".into());
        }
        let mut params = params.clone();
        if let Some(object) = params.as_object_mut() {
            // Request metadata is not part of the method's params.
            object.remove("_meta");
        }
        if let Err(e) = serde_path_to_error::deserialize::<_, P>(params) {
            let path = e.path().to_string();
            let field = if path == "." {
                "params".to_string()
            } else {
                format!("params.{path}")
            };
            return Some(format!("{field}: {}", e.into_inner()));
        }
    }
    serde_json::from_value::<T>(request.clone())
        .err()
        .map(|e| e.to_string())
}

/// A streamable-HTTP POST body as rmcp reads it: without a UTF-8 byte order mark, as over stdio.
pub fn http_message(body: Bytes) -> Bytes {
    let bom = body.len() - without_bom(&body).len();
    body.slice(bom..)
}

/// Whether a request's `Content-Type` is JSON, the only body rmcp reads.
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// rmcp's `response` to the JSON POST body `message`, conformed. rmcp parses every message
/// once and answers 415 to a JSON body only when it cannot parse it; such a message gets the
/// answer [`check`] sorts it to instead: its JSON-RPC error (400 for -32700 and -32600, 200
/// for -32602), or 202 for a notification that is dropped. Any other response is rmcp's.
pub fn conform_http(message: &[u8], response: Response) -> Response {
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    match check(message) {
        Verdict::Pass(_) => response,
        Verdict::Drop => StatusCode::ACCEPTED.into_response(),
        Verdict::Refuse(refusal) => {
            let status = if refusal.error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                StatusCode::OK
            } else {
                StatusCode::BAD_REQUEST
            };
            refusal_response(status, &refusal)
        }
    }
}

fn refusal_response(status: StatusCode, refusal: &Refusal) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        refusal.to_json(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut for common requests gives what rmcp's own parse gives, and leaves every
    /// message it does not read plainly to that parse.
    fn refused(raw: &str) -> Refusal {
        match check(raw.as_bytes()) {
            Verdict::Refuse(r) => r,
            other => panic!("{raw}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn malformed_json_is_a_parse_error_with_a_null_id() {
        for raw in [
            "{",
            "{\"jsonrpc\":\"2.0\",\"id\":1,",
            "nope",
            "{\"a\":1}}",
            "\u{7f}",
        ] {
            let r = refused(raw);
            assert_eq!(r.error.code.0, -32700, "{raw}");
            assert_eq!(r.id, Value::Null, "{raw}");
        }
    }

    #[test]
    fn invalid_utf8_inside_a_string_is_a_parse_error() {
        let raw = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\xfe\"}";
        let Verdict::Refuse(r) = check(raw) else {
            panic!("not refused");
        };
        assert_eq!((r.error.code.0, r.id), (-32700, Value::Null));
        assert!(
            r.error.message.contains("UTF-8 at byte 45"),
            "{}",
            r.error.message
        );
    }

    #[test]
    fn wrong_shape_carries_its_id() {
        let r = refused(r#"{"jsonrpc":"2.0","id":7,"method":5}"#);
        assert_eq!((r.error.code.0, r.id), (-32600, Value::from(7)));
        let r = refused(r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#);
        assert_eq!((r.error.code.0, r.id), (-32600, Value::from("a")));
        let r = refused(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
        assert_eq!((r.error.code.0, r.id), (-32600, Value::Null));
        let r = refused("5");
        assert_eq!((r.error.code.0, r.id), (-32600, Value::Null));
    }

    #[test]
    fn batches_are_invalid_requests() {
        for raw in ["[]", r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#] {
            let r = refused(raw);
            assert_eq!((r.error.code.0, r.id), (-32600, Value::Null), "{raw}");
            assert!(r.error.message.contains("batch"), "{}", r.error.message);
        }
    }

    #[test]
    fn nesting_past_the_recursion_limit_is_refused_with_its_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}{}}}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let r = refused(&deep);
        assert_eq!((r.error.code.0, r.id), (-32600, Value::from(3)));
        assert!(r.error.message.contains("recursion"), "{}", r.error.message);
    }

    /// The error a request gets: its refusal here, or, when it passes as a custom request, the
    /// handler's answer from [`misfit_params`].
    fn invalid(raw: &str) -> Refusal {
        match check(raw.as_bytes()) {
            Verdict::Refuse(r) => r,
            Verdict::Pass(message) => match *message {
                ClientJsonRpcMessage::Request(request) => {
                    let rmcp::model::ClientRequest::CustomRequest(custom) = request.request else {
                        panic!("{raw}: passed as a typed request")
                    };
                    let why = misfit_params(&custom.method, custom.params.as_ref())
                        .unwrap_or_else(|| panic!("{raw}: the handler finds no fault"));
                    Refusal::new(
                        request.id.into_json_value(),
                        ErrorData::invalid_params(why, None),
                    )
                }
                other => panic!("{raw}: passed as {other:?}"),
            },
            Verdict::Drop => panic!("{raw}: dropped"),
        }
    }

    #[test]
    fn wrong_param_types_of_a_known_method_are_invalid_params() {
        let r = invalid(r#"{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":5}}"#);
        assert_eq!((r.error.code.0, r.id.clone()), (-32602, Value::from(4)));
        assert!(
            r.error.message.contains("params.name"),
            "{}",
            r.error.message
        );
        let r = invalid(r#"{"jsonrpc":"2.0","id":"t","method":"tools/call","params":[]}"#);
        assert_eq!((r.error.code.0, r.id), (-32602, Value::from("t")));
        let r = invalid(r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get"}"#);
        assert_eq!(r.error.code.0, -32602);
        assert_eq!(misfit_params("vendor/thing", None), None);
        assert_eq!(
            misfit_params("prompts/get", Some(&serde_json::json!({"name": "x"}))),
            None
        );
    }

    #[test]
    fn well_formed_messages_pass_and_broken_notifications_drop() {
        for raw in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"vendor/thing","params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        ] {
            assert!(matches!(check(raw.as_bytes()), Verdict::Pass(_)), "{raw}");
        }
        let raw = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#;
        assert!(matches!(check(raw.as_bytes()), Verdict::Drop));
    }

    #[test]
    fn every_known_method_refuses_params_that_are_not_an_object() {
        for (method, _) in KNOWN_METHODS {
            let raw = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":5}}"#);
            let r = invalid(&raw);
            assert_eq!(r.error.code.0, -32602, "{method}: {}", r.error.message);
        }
    }
}
