//! Tool schemas as real clients read them, and tool arguments as real clients send them.
//!
//! schemars names Rust number types in `format` (`uint`, `int64`, `double`, …). These are not
//! JSON Schema formats: validators that compile `outputSchema` (ajv in the MCP TypeScript SDK,
//! which the MCP Inspector uses) warn about, or in strict mode refuse, unknown formats.
//! [`PortableFormats`] drops every `format` that JSON Schema 2020-12 does not define; the range
//! stays expressed by `minimum` / `maximum`, which schemars writes beside it.
//!
//! Some clients send an object-typed parameter JSON-encoded as a string (the MCP Inspector does
//! for a parameter whose `type` is a list, such as an optional object's `["object", "null"]`).
//! [`decode_string_objects`] turns such a string back into the object, for every parameter the
//! input schema types as an object and not as a string.

use rmcp::model::{JsonObject, Tool};
use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::Value;

use crate::config::json_kind;

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
/// subschemas. An unsigned integer keeps (or gets) `minimum: 0`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PortableFormats;

impl Transform for PortableFormats {
    fn transform(&mut self, schema: &mut Schema) {
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

/// `tool` with portable input and output schemas.
pub fn portable_tool(mut tool: Tool) -> Tool {
    tool.input_schema = std::sync::Arc::new(portable_schema(&tool.input_schema));
    if let Some(output) = &tool.output_schema {
        tool.output_schema = Some(std::sync::Arc::new(portable_schema(output)));
    }
    tool
}

/// Why a string-encoded object parameter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{parameter}`: expected a JSON object (or a JSON object encoded as a string): {message}")]
pub struct StringObjectError {
    pub parameter: String,
    pub message: String,
}

/// Replaces each argument that `input_schema` types as an object (and not as a string) but that
/// arrived as a string by the JSON object the string encodes. A string that does not encode a
/// JSON object is an error naming the parameter.
pub fn decode_string_objects(
    input_schema: &JsonObject,
    args: &mut JsonObject,
) -> Result<(), StringObjectError> {
    let Some(Value::Object(properties)) = input_schema.get("properties") else {
        return Ok(());
    };
    for (name, value) in args.iter_mut() {
        let Value::String(text) = value else {
            continue;
        };
        let Some(property) = properties.get(name) else {
            continue;
        };
        if !accepts(input_schema, property, "object") || accepts(input_schema, property, "string") {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(decoded @ Value::Object(_)) => *value = decoded,
            Ok(other) => {
                return Err(StringObjectError {
                    parameter: name.clone(),
                    message: format!("the string encodes a JSON {}", json_kind(&other)),
                });
            }
            Err(e) => {
                return Err(StringObjectError {
                    parameter: name.clone(),
                    message: format!("the string is not JSON ({e})"),
                });
            }
        }
    }
    Ok(())
}

/// Whether `schema` (a subschema of `root`) admits values of JSON type `kind`: by its `type`
/// (a name or a list), a local `$ref`, or any branch of `anyOf` / `oneOf`.
fn accepts(root: &JsonObject, schema: &Value, kind: &str) -> bool {
    fn go(root: &JsonObject, schema: &Value, kind: &str, depth: usize) -> bool {
        if depth > 16 {
            return false;
        }
        let Value::Object(schema) = schema else {
            return false;
        };
        let by_type = match schema.get("type") {
            Some(Value::String(t)) => t == kind,
            Some(Value::Array(types)) => types.iter().any(|t| t == kind),
            _ => false,
        };
        let by_ref = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/"))
            .and_then(|path| {
                path.split('/')
                    .try_fold(&Value::Object(root.clone()), |v, key| v.get(key))
                    .cloned()
            })
            .is_some_and(|target| go(root, &target, kind, depth + 1));
        let by_branch = ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|branches| branches.iter().any(|b| go(root, b, kind, depth + 1)))
        });
        by_type || by_ref || by_branch
    }
    go(root, schema, kind, 0)
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
            json!({"type": ["integer", "null"], "minimum": 0})
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

    fn schema() -> JsonObject {
        object(json!({
            "type": "object",
            "properties": {
                "args": {"type": ["object", "null"], "additionalProperties": true},
                "byRef": {"$ref": "#/$defs/Opts"},
                "either": {"anyOf": [{"type": "string"}, {"type": "object"}]},
                "name": {"type": "string"}
            },
            "$defs": {"Opts": {"type": "object"}}
        }))
    }

    #[test]
    fn string_encoded_objects_are_decoded() {
        let mut args = object(json!({
            "args": "{\"a\": 1}",
            "byRef": "{}",
            "either": "{\"kept\": true}",
            "name": "{\"not\": \"decoded\"}"
        }));
        decode_string_objects(&schema(), &mut args).unwrap();
        assert_eq!(args["args"], json!({"a": 1}));
        assert_eq!(args["byRef"], json!({}));
        assert_eq!(
            args["either"], "{\"kept\": true}",
            "a string is valid there"
        );
        assert_eq!(args["name"], "{\"not\": \"decoded\"}");
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
        for tool in crate::mcp::tools::definitions() {
            formats(
                &Value::Object((*tool.input_schema).clone()),
                &format!("{}/input", tool.name),
                &mut found,
            );
            let output = tool
                .output_schema
                .as_ref()
                .expect("every tool has an outputSchema");
            formats(
                &Value::Object((**output).clone()),
                &format!("{}/output", tool.name),
                &mut found,
            );
        }
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_deeply_nested_string_is_an_error_not_a_crash() {
        let nested = "[".repeat(100_000);
        let mut args = object(json!({ "args": nested }));
        let e = decode_string_objects(&schema(), &mut args).unwrap_err();
        assert_eq!(e.parameter, "args");
        assert!(e.message.contains("recursion limit"), "{e}");
    }

    #[test]
    fn a_string_that_is_not_an_object_names_the_parameter() {
        for (bad, why) in [
            ("[1, 2]", "encodes a JSON array"),
            ("not json", "is not JSON"),
            ("\"{}\"", "encodes a JSON string"),
        ] {
            let mut args = object(json!({ "args": bad }));
            let e = decode_string_objects(&schema(), &mut args).unwrap_err();
            assert_eq!(e.parameter, "args");
            assert!(
                e.to_string().starts_with("`args`: expected a JSON object"),
                "{e}"
            );
            assert!(e.message.contains(why), "{bad}: {e}");
        }
    }
}
