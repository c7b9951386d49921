//! The product's tool catalog, free of any transport: the three tools promptd offers
//! (`wit-get-prompts`, `enhance_prompt`, `compose_prompt`), each with its name, title,
//! description and annotations, the request types callers fill ([`GetPromptsRequest`],
//! [`EnhanceRequest`], [`ComposeInput`]) and the JSON Schemas of each request and result,
//! generated from the Rust types the stages take and return.
//!
//! The MCP server turns each [`ToolSpec`] into an `rmcp::Tool` (`mcp::tool_calls`); the composer lists
//! the same tools in its tools block ([`server_tool_definitions`]), so `promptd compose` and
//! `promptd serve` show one catalog. `promptd compose`'s flags take their help from the same
//! descriptions ([`compose_help`]).
//!
//! Schemas are JSON Schema 2020-12: a request's describes what it deserializes, a result's what
//! it serializes, without the wrapper type's own title and description. schemars names Rust
//! number types in `format` (`uint`, `int64`, `double`, …); these are not JSON Schema formats,
//! and validators that compile the schemas (ajv in the MCP TypeScript SDK, which the MCP
//! Inspector uses) warn about or refuse them. [`PortableFormats`] drops every `format` JSON
//! Schema 2020-12 does not define; the range stays expressed by `minimum` / `maximum`.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::compose::{ComposedPrompt, ToolDefinition};
use crate::enhance::EnhanceResult;
pub use promptd_core::library::{GetPromptsRequest, GetPromptsResponse};

/// A JSON object, as schemas are.
pub type JsonObject = Map<String, Value>;

/// Name of the listing/getting tool. The library's `wit-get-prompts` envelope carries it too,
/// so it is defined there, beside the contract it names.
pub const GET_PROMPTS: &str = promptd_core::library::TOOL_NAME;
/// Name of the prompt-rewrite tool.
pub const ENHANCE: &str = "enhance_prompt";
/// Name of the prompt-composer tool.
pub const COMPOSE: &str = "compose_prompt";

/// What a tool does to the world, as hints for clients (MCP's tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// It changes nothing.
    pub read_only: bool,
    /// It may destroy data.
    pub destructive: bool,
    /// The same call answers the same.
    pub idempotent: bool,
    /// It reaches beyond the local machine.
    pub open_world: bool,
}

impl Annotations {
    /// A tool that only reads local state and answers the same to the same call.
    pub const LOCAL_READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// One tool of the catalog.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub annotations: Annotations,
    /// What the tool's arguments deserialize into.
    pub input_schema: Arc<JsonObject>,
    /// What the tool's result serializes to.
    pub output_schema: Arc<JsonObject>,
}

const GET_PROMPTS_DESCRIPTION: &str = "List prompt templates, or get one or several rendered with \
arguments. Without promptName/promptNames: every prompt (includeContent=false for metadata \
only). With promptName: that prompt, filled with `args` (strings are coerced to the declared \
types) and the computed, config and default variables.";

const ENHANCE_DESCRIPTION: &str = "Rewrite a developer's vague coding request into a clear, \
execution-ready prompt for a coding agent, grounded in the repository: the active file is the \
PRIMARY TARGET, other retrieved code is reference only. The prompt and the retrieved context are \
scanned for secrets first; if any is found nothing is sent (status `blocked`). If the LLM is not \
configured or fails, the original prompt is returned (status `original`) with a warning. \
activeFile: the exact file with editor focus, absolute or relative to workingDirectory; never a \
documentation file (README, AGENTS.md...) unless the user is editing it; \"this file\" and \
\"here\" mean it; omit it only for requests with no file target. workingDirectory: absolute path \
of the repository (default: the client's first root, else the server's directory).";

const COMPOSE_DESCRIPTION: &str = "Compose the final prompt for the user's request: the system \
prompt, this server's tools catalog and the workspace's tool definitions, the project rules that \
apply to the current file (Cursor, AGENTS.md, CLAUDE.md, Copilot, Windsurf; included whole), and \
retrieved docs under a token budget. Returns the text, the cacheable prefix, tokens per block and \
a ledger of every rule file found and why it was or was not included.";

/// Every tool, in the order clients see them.
static CATALOG: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
    vec![
        ToolSpec {
            name: GET_PROMPTS,
            title: "Get prompts",
            description: GET_PROMPTS_DESCRIPTION,
            annotations: Annotations::LOCAL_READ_ONLY,
            input_schema: input_schema::<GetPromptsRequest>(),
            output_schema: output_schema::<GetPromptsResponse>(),
        },
        ToolSpec {
            name: ENHANCE,
            title: "Enhance prompt",
            description: ENHANCE_DESCRIPTION,
            annotations: Annotations {
                read_only: true,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
            input_schema: input_schema::<EnhanceRequest>(),
            output_schema: output_schema::<EnhanceResult>(),
        },
        ToolSpec {
            name: COMPOSE,
            title: "Compose prompt",
            description: COMPOSE_DESCRIPTION,
            annotations: Annotations::LOCAL_READ_ONLY,
            input_schema: input_schema::<ComposeInput>(),
            output_schema: output_schema::<ComposedPrompt>(),
        },
    ]
});

/// Every tool (built once), in the order clients see them.
pub fn catalog() -> &'static [ToolSpec] {
    &CATALOG
}

/// A tool by name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    catalog().iter().find(|t| t.name == name)
}

/// The catalog as the composer lists it in its tools block (the server's own tools).
pub fn server_tool_definitions() -> Vec<ToolDefinition> {
    catalog()
        .iter()
        .map(|t| {
            ToolDefinition::server(
                t.name,
                t.description,
                Value::Object((*t.input_schema).clone()),
            )
        })
        .collect()
}

/// Input of `enhance_prompt` (and of `promptd enhance`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnhanceRequest {
    /// The developer's request, verbatim.
    pub prompt: String,
    /// The exact file with editor focus (absolute, or relative to workingDirectory): the primary
    /// target. "this file" / "here" mean it. Never a documentation file (README, AGENTS.md…)
    /// unless the user is editing it. Omit only for requests with no file target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_file: Option<PathBuf>,
    /// Absolute path of the target repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<PathBuf>,
}

/// The descriptions of [`ComposeInput`]'s fields, which `promptd compose` shows as its flags'
/// help too.
pub mod compose_help {
    /// `query` / `--query`.
    pub const QUERY: &str = "The user's current request.";
    /// `file` / `--file`.
    pub const FILE: &str = "The file the user is in (selects glob-scoped rules, the nearest \
                            AGENTS.md and the CLAUDE.md files on its path).";
    /// `docs` / `--doc`.
    pub const DOCS: &str = "Files inside the workspace to use as the docs instead of retrieving \
                            from the repository (regular files, each at most \
                            `limits.maxDocBytes`, scanned for secrets).";
    /// `docsBudget` / `--docs-budget`.
    pub const DOCS_BUDGET: &str = "Token budget of the docs block (default: the config's \
                                   `compose.docsBudget`, else 2048).";
    /// `system` / `--system`.
    pub const SYSTEM: &str = "System prompt name (default compose_system).";
}

/// Input of `compose_prompt` (and of `promptd compose`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComposeInput {
    #[schemars(description = compose_help::QUERY)]
    pub query: String,
    /// Absolute path of the workspace root, inside a root the client declared (default: the
    /// client's first root).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    #[serde(default)]
    #[schemars(description = compose_help::FILE)]
    pub file: Option<PathBuf>,
    #[serde(default)]
    #[schemars(description = compose_help::DOCS)]
    pub docs: Vec<PathBuf>,
    #[serde(default)]
    #[schemars(description = compose_help::DOCS_BUDGET)]
    pub docs_budget: Option<usize>,
    #[serde(default)]
    #[schemars(description = compose_help::SYSTEM)]
    pub system: Option<String>,
}

/// The schema of what `T` deserializes: a tool's input (its root is an object).
fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    Arc::new(portable(schema))
}

/// The schema of what `T` serializes: a tool's result.
fn output_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    Arc::new(portable(schema))
}

/// A root schema, its keywords in schemars' reading order (`$schema`, `description`, `type`, …),
/// without its own title and description (the wrapper type's name and doc, noise to a model),
/// with [`PortableFormats`] applied.
fn portable(schema: Schema) -> JsonObject {
    // Serializing orders the keywords; `Schema::to_value` would keep insertion order.
    let mut object = match serde_json::to_value(&schema) {
        Ok(Value::Object(object)) => object,
        other => panic!("a root schema serializes to an object, got {other:?}"),
    };
    object.remove("title");
    object.remove("description");
    portable_schema(&object)
}

/// The formats JSON Schema 2020-12 defines (Validation, section 7.3).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every `format` that is not a JSON Schema 2020-12 format, in a schema and all its
/// subschemas. An unsigned integer keeps (or gets) `minimum: 0`. A property or definition
/// whose schema is a boolean is written as the object that means the same (`true` is `{}`,
/// `false` is `{"not": {}}`): valid JSON Schema either way, but the MCP Inspector's `--strict`
/// lint wants an object there. `additionalProperties: false` stays as it is (what strict
/// structured-output modes look for).
#[derive(Debug, Clone, Copy, Default)]
pub struct PortableFormats;

/// The object schema a boolean schema means.
fn boolean_as_object(any: bool) -> Value {
    let mut object = JsonObject::new();
    if !any {
        object.insert("not".into(), Value::Object(JsonObject::new()));
    }
    Value::Object(object)
}

/// Keywords that describe a schema rather than constrain it: they stay beside an `anyOf`.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// A nullable type written `type: [T, "null"]` as `anyOf: [{type: T, …}, {type: "null"}]`, its
/// constraints in the first branch: the same schema, which clients that map tool schemas onto a
/// single-`type` dialect (Gemini's function declarations) read, and which the MCP Inspector's
/// `--strict` lint asks for.
fn nullable_as_any_of(object: &mut JsonObject) {
    let Some(Value::Array(types)) = object.get("type") else {
        return;
    };
    let [a, b] = types.as_slice() else {
        return;
    };
    let other = match (a.as_str(), b.as_str()) {
        (Some("null"), Some(t)) | (Some(t), Some("null")) if t != "null" => t.to_string(),
        _ => return,
    };
    if object.contains_key("anyOf") {
        return;
    }
    let mut branch = JsonObject::new();
    branch.insert("type".into(), Value::String(other));
    let keys: Vec<String> = object
        .keys()
        .filter(|k| *k != "type" && !ANNOTATIONS.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in keys {
        if let Some(v) = object.remove(&k) {
            branch.insert(k, v);
        }
    }
    object.remove("type");
    let mut null = JsonObject::new();
    null.insert("type".into(), Value::String("null".into()));
    object.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(branch), Value::Object(null)]),
    );
}

impl Transform for PortableFormats {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut() {
            nullable_as_any_of(object);
            for key in ["properties", "$defs"] {
                if let Some(Value::Object(members)) = object.get_mut(key) {
                    for member in members.values_mut() {
                        if let Value::Bool(any) = member {
                            *member = boolean_as_object(*any);
                        }
                    }
                }
            }
        }
        if let Some(object) = schema.as_object_mut()
            && let Some(Value::String(format)) = object.get("format")
            && !STANDARD_FORMATS.contains(&format.as_str())
        {
            let unsigned = format.starts_with("uint");
            object.remove("format");
            if unsigned {
                object.entry("minimum").or_insert(Value::from(0));
            }
        }
        transform_subschemas(self, schema);
    }
}

/// `schema` with [`PortableFormats`] applied.
pub fn portable_schema(schema: &JsonObject) -> JsonObject {
    let mut schema = Schema::from(schema.clone());
    PortableFormats.transform(&mut schema);
    match schema.to_value() {
        Value::Object(object) => object,
        // An object schema stays an object under a transform that only removes keys.
        _ => unreachable!("a transformed object schema is an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> JsonObject {
        match v {
            Value::Object(o) => o,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn nullable_types_become_any_of() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "dir": {"description": "a folder", "type": ["string", "null"]},
                "n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0}
            }
        }));
        let out = Value::Object(portable_schema(&schema));
        assert_eq!(
            out["properties"]["dir"],
            json!({"description": "a folder", "anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(
            out["properties"]["n"],
            json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]})
        );
    }

    #[test]
    fn boolean_property_schemas_become_objects() {
        let schema = object(json!({
            "type": "object",
            "properties": {"default": true, "never": false, "open": {"type": "object", "additionalProperties": false}},
            "$defs": {"Any": true}
        }));
        let out = Value::Object(portable_schema(&schema));
        assert_eq!(out["properties"]["default"], json!({}));
        assert_eq!(out["properties"]["never"], json!({"not": {}}));
        assert_eq!(out["$defs"]["Any"], json!({}));
        assert_eq!(
            out["properties"]["open"]["additionalProperties"],
            json!(false)
        );
    }

    #[test]
    fn number_formats_are_dropped_and_unsigned_keep_their_minimum() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint", "minimum": 0},
                "m": {"type": ["integer", "null"], "format": "uint32"},
                "f": {"type": "number", "format": "double"},
                "when": {"type": "string", "format": "date-time"},
                "list": {"type": "array", "items": {"type": "integer", "format": "int64"}}
            },
            "$defs": {"D": {"type": "object", "properties": {"k": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}}}}
        }));
        let out = Value::Object(portable_schema(&schema));
        assert_eq!(
            out["properties"]["n"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(
            out["properties"]["m"],
            json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]})
        );
        assert_eq!(out["properties"]["f"], json!({"type": "number"}));
        assert_eq!(out["properties"]["when"]["format"], "date-time");
        assert_eq!(
            out["properties"]["list"]["items"],
            json!({"type": "integer"})
        );
        assert_eq!(
            out["$defs"]["D"]["properties"]["k"],
            json!({"type": "integer", "minimum": 0, "maximum": 255})
        );
    }

    #[test]
    fn no_tool_schema_has_a_non_standard_format() {
        fn formats(v: &Value, path: &str, out: &mut Vec<String>) {
            match v {
                Value::Object(o) => {
                    if let Some(Value::String(f)) = o.get("format")
                        && !STANDARD_FORMATS.contains(&f.as_str())
                    {
                        out.push(format!("{path}: {f}"));
                    }
                    for (k, v) in o {
                        formats(v, &format!("{path}/{k}"), out);
                    }
                }
                Value::Array(a) => {
                    for (i, v) in a.iter().enumerate() {
                        formats(v, &format!("{path}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        for tool in catalog() {
            formats(
                &Value::Object((*tool.input_schema).clone()),
                &format!("{}/input", tool.name),
                &mut found,
            );
            formats(
                &Value::Object((*tool.output_schema).clone()),
                &format!("{}/output", tool.name),
                &mut found,
            );
        }
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn every_input_schema_is_an_object_schema_without_a_title() {
        for tool in catalog() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(tool.input_schema.get("title").is_none(), "{}", tool.name);
            assert!(tool.output_schema.get("title").is_none(), "{}", tool.name);
        }
    }

    #[test]
    fn the_docs_budget_help_names_the_default_budget() {
        let default = crate::compose::DEFAULT_DOCS_BUDGET.to_string();
        assert!(compose_help::DOCS_BUDGET.contains(&default));
        assert!(compose_help::DOCS_BUDGET.contains("compose.docsBudget"));
    }
}
