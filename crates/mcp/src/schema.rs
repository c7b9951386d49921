//! Tool arguments as real clients send them. (The schemas clients read are the catalog's,
//! made portable there: [`promptd_stages::catalog::PortableFormats`].)
//!
//! Some clients send an object-typed parameter JSON-encoded as a string (the MCP Inspector does
//! for a parameter whose `type` is a list, such as an optional object's `["object", "null"]`).
//! [`decode_string_objects`] turns such a string back into the object, for every parameter the
//! input schema types as an object and not as a string.

use rmcp::model::JsonObject;
use serde_json::Value;

use promptd_base::config::json_kind;

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
