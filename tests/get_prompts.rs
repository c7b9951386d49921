//! The `wit-get-prompts` contract: every mode of the envelope, snapshotted as JSON, and every
//! field of the published contract's response shapes (tests/fixtures/contract/wit-get-prompts).

use std::path::{Path, PathBuf};

use crate::support;

use promptd::config::json_kind;
use promptd::library::{GetPromptsRequest, GetPromptsResponse};
use serde_json::{Value, json};

fn call(req: serde_json::Value) -> GetPromptsResponse {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/library/prompts");
    let lib = support::library(&[dir], false, None, "2026-01-15T12:00:00Z");
    let req: GetPromptsRequest = serde_json::from_value(req).unwrap();
    lib.get_prompts(&req)
}

/// The envelope as JSON, checked against the tool's published `outputSchema`.
fn json_of(resp: &GetPromptsResponse) -> Value {
    let v = serde_json::to_value(resp).unwrap();
    let tool = promptd::mcp::tool_calls::definitions()
        .iter()
        .find(|t| t.name == promptd::library::TOOL_NAME)
        .unwrap();
    let schema = Value::Object((**tool.output_schema.as_ref().unwrap()).clone());
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "outputSchema: {problems:?}\n{v:#}");
    v
}

fn snapshot_json(resp: &GetPromptsResponse) -> serde_json::Value {
    json_of(resp);
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/library/prompts");
    let text = serde_json::to_string(resp).unwrap();
    serde_json::from_str(&support::redact(&text, &dir)).unwrap()
}

#[test]
fn single_prompt_with_content() {
    let r = call(json!({"promptName": "greet", "args": {"who": "Ada", "times": "2"}}));
    assert!(r.success);
    let v = json_of(&r);
    assert_eq!(v["data"]["prompt"]["content"], "Hello Ada! Hello Ada! ");
    assert_eq!(
        v["data"]["prompt"]["templateArgsUsed"],
        json!({"times": 2, "who": "Ada"}),
        "the values used, coerced to the declared types"
    );
    assert_eq!(v["metadata"]["templateArgsProvided"], 2);
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn single_prompt_metadata_only_renders_nothing() {
    // `who` is required, yet metadata-only succeeds: nothing is rendered.
    let r = call(json!({"promptName": "greet", "includeContent": false}));
    assert!(r.success);
    assert!(r.prompt().unwrap().content.is_none());
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn listing_metadata_only() {
    let r = call(json!({"includeContent": false}));
    assert_eq!(
        r.listing().unwrap().total_count(),
        2,
        "system prompts are not listed by default"
    );
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn listing_with_content_reports_failures_as_warnings() {
    let r = call(json!({"args": {"who": "Bob"}}));
    assert!(r.success);
    assert_eq!(r.listing().unwrap().total_count(), 2);
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn batch() {
    let r = call(json!({"promptNames": ["greet", "missing", "internal"], "args": {"who": "Cy"}}));
    assert!(!r.success);
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn not_found() {
    let r = call(json!({"promptName": "nope"}));
    assert!(!r.success);
    assert!(r.data.is_none());
    assert_eq!(
        r.errors,
        vec![
            "Prompt 'nope' not found. Use wit-get-prompts without promptName to see available prompts."
        ]
    );
    assert_eq!(r.metadata.found, Some(false));
}

#[test]
fn single_prompt_missing_a_required_argument_fails() {
    let r = call(json!({"promptName": "greet"}));
    assert!(
        !r.success,
        "a missing required argument is the caller's error, not a success"
    );
    assert!(r.prompt().unwrap().content.is_none());
    assert_eq!(
        r.errors,
        vec!["prompt `greet`: missing required argument(s): who"]
    );
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn single_prompt_whose_template_fails_is_a_partial_success() {
    let r = call(json!({"promptName": "broken_render"}));
    assert!(r.success, "the contract's partial success");
    assert!(r.prompt().unwrap().content.is_none());
    assert_eq!(r.errors.len(), 1);
    assert!(
        r.errors[0].starts_with("Failed to load prompt content: ")
            && r.errors[0]
                .ends_with("broken_render.md:4:4: invalid operation: unable to calculate 1 / 0"),
        "{:?}",
        r.errors
    );
    assert_eq!(r.metadata.content_included, Some(false));
}

#[test]
fn batch_missing_a_required_argument_fails_and_keeps_the_others() {
    let r = call(json!({"promptNames": ["greet", "broken_render"], "args": {"times": 2}}));
    assert!(!r.success);
    assert_eq!(
        r.errors,
        vec!["prompt `greet`: missing required argument(s): who"]
    );
    let listing = r.listing().unwrap();
    assert_eq!(listing.total_count(), 2, "every named prompt is listed");
    assert!(listing.prompts().iter().all(|p| p.content.is_none()));
    assert_eq!(
        r.warnings.len(),
        1,
        "the template failure stays a warning: {:?}",
        r.warnings
    );
    assert!(r.warnings[0].starts_with("Failed to load content for prompt 'broken_render': "));
}

#[test]
fn listing_reports_a_missing_required_argument_as_a_warning() {
    let r = call(json!({}));
    assert!(r.success, "a listing succeeds, per the contract");
    assert!(r.errors.is_empty());
    assert!(
        r.warnings
            .contains(&"Failed to load content for prompt 'greet': prompt `greet`: missing required argument(s): who".to_string()),
        "{:?}",
        r.warnings
    );
}

fn contract_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/contract/wit-get-prompts")
}

fn contract_call(req: &Value) -> Value {
    let dir = contract_dir();
    let lib = support::library(
        &[dir.join("prompts")],
        false,
        Some(&dir.join("config.json")),
        "2026-01-15T12:00:00Z",
    );
    let req: GetPromptsRequest = serde_json::from_value(req.clone()).unwrap();
    json_of(&lib.get_prompts(&req))
}

/// A message up to and including its first `: ` (all of it when it has none).
fn message_head(m: &str) -> &str {
    m.find(": ").map_or(m, |i| &m[..i + 2])
}

/// Checks that `ours` has every field of the contract shape `want` with the same JSON type;
/// an object's `$absent` lists keys `ours` must not have. An array element that has a `name`
/// is compared with our element of that name, others with the element at the same index.
fn conforms(want: &Value, ours: &Value, path: &str, problems: &mut Vec<String>) {
    if json_kind(want) != json_kind(ours) {
        problems.push(format!("{path}: contract {}, ours {ours}", json_kind(want)));
        return;
    }
    match (want, ours) {
        (Value::Object(w), Value::Object(o)) => {
            for (k, wv) in w {
                if k == "$absent" {
                    for absent in wv.as_array().unwrap() {
                        let absent = absent.as_str().unwrap();
                        if o.contains_key(absent) {
                            problems.push(format!("{path}.{absent}: present, must be absent"));
                        }
                    }
                    continue;
                }
                match o.get(k) {
                    Some(ov) => conforms(wv, ov, &format!("{path}.{k}"), problems),
                    None => problems.push(format!("{path}.{k}: missing")),
                }
            }
        }
        (Value::Array(w), Value::Array(o)) => {
            for (i, wv) in w.iter().enumerate() {
                let found = match wv.get("name") {
                    Some(name) => o.iter().find(|ov| ov.get("name") == Some(name)),
                    None => o.get(i),
                };
                match found {
                    Some(ov) => conforms(wv, ov, &format!("{path}[{i}]"), problems),
                    None => problems.push(format!("{path}[{i}]: missing")),
                }
            }
        }
        _ => {}
    }
}

#[test]
fn every_field_of_the_published_contract() {
    let mut shapes: Vec<PathBuf> = std::fs::read_dir(contract_dir().join("shapes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    shapes.sort();
    assert_eq!(
        shapes.len(),
        5,
        "one fixture per response shape of the contract"
    );
    for shape in shapes {
        let name = shape.file_name().unwrap().to_string_lossy().into_owned();
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&shape).unwrap()).unwrap();
        let want = &fixture["response"];
        let ours = contract_call(&fixture["request"]);
        let mut problems = Vec::new();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        if keys(want) != keys(&ours) {
            problems.push(format!(
                "top-level keys: contract {:?}, ours {:?}",
                keys(want),
                keys(&ours)
            ));
        }
        if want["success"] != ours["success"] {
            problems.push(format!(
                "success: contract {}, ours {}",
                want["success"], ours["success"]
            ));
        }
        if want["metadata"] != ours["metadata"] {
            problems.push(format!(
                "metadata: contract {}, ours {}",
                want["metadata"], ours["metadata"]
            ));
        }
        conforms(&want["data"], &ours["data"], "data", &mut problems);
        for list in ["errors", "warnings"] {
            let heads = |v: &Value| -> Vec<String> {
                v[list]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| message_head(m.as_str().unwrap()).to_string())
                    .collect()
            };
            if heads(want) != heads(&ours) {
                problems.push(format!(
                    "{list}: contract {:?}, ours {:?}",
                    want[list], ours[list]
                ));
            }
        }
        assert!(
            problems.is_empty(),
            "{name}:\n{}\nours: {ours:#}",
            problems.join("\n")
        );
    }
}

#[test]
fn template_args_used_holds_the_values_used_config_included() {
    // The contract's own test: `args: {analysis_period_days: 30}` → templateArgsUsed.
    let v = contract_call(&json!({
        "promptName": "backlog_cleanup",
        "args": {"analysis_period_days": "30"}
    }));
    assert_eq!(v["success"], true, "{v:#}");
    let used = &v["data"]["prompt"]["templateArgsUsed"];
    assert_eq!(
        used["analysis_period_days"], 30,
        "coerced from \"30\": {used}"
    );
    assert_eq!(used["project"], "MyProject", "from the config: {used}");
    assert_eq!(
        used["area_path"], "MyProject\\Team\\Component",
        "from the config: {used}"
    );
    assert_eq!(v["metadata"]["templateArgsProvided"], 1);
    assert_eq!(v["data"]["prompt"]["provenance"]["project"], "config");
    assert_eq!(
        v["data"]["prompt"]["provenance"]["analysis_period_days"],
        "user"
    );
    assert_eq!(
        v["data"]["prompt"]["content"],
        "Review MyProject\\Team\\Component in MyProject for items untouched in the last 30 days.\n"
    );
}

#[test]
fn missing_required_argument_in_the_contract_prompts() {
    let v = contract_call(&json!({"promptName": "query_generator"}));
    assert_eq!(v["success"], false, "{v:#}");
    assert!(
        v["errors"][0].as_str().unwrap().contains("user_intent"),
        "the error names the argument: {v:#}"
    );
    assert_eq!(v["metadata"]["contentIncluded"], false);
    assert_eq!(v["metadata"]["templateArgsProvided"], 0);
}
