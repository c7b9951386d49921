//! The `wit-get-prompts` contract: every mode of the envelope, snapshotted as JSON.

use crate::common;

use promptd::library::{GetPromptsRequest, GetPromptsResponse};
use serde_json::json;

fn call(req: serde_json::Value) -> GetPromptsResponse {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/library/prompts");
    let lib = common::library(&[dir], false, None, "2026-01-15T12:00:00Z");
    let req: GetPromptsRequest = serde_json::from_value(req).unwrap();
    lib.get_prompts(&req)
}

fn snapshot_json(resp: &GetPromptsResponse) -> serde_json::Value {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/library/prompts");
    let text = serde_json::to_string(resp).unwrap();
    serde_json::from_str(&common::redact(&text, &dir)).unwrap()
}

#[test]
fn single_prompt_with_content() {
    let r = call(json!({"promptName": "greet", "args": {"who": "Ada", "times": "2"}}));
    assert!(r.success);
    assert_eq!(r.data["prompt"]["content"], "Hello Ada! Hello Ada! ");
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn single_prompt_metadata_only_renders_nothing() {
    // `who` is required, yet metadata-only succeeds: nothing is rendered.
    let r = call(json!({"promptName": "greet", "includeContent": false}));
    assert!(r.success);
    assert!(r.data["prompt"].get("content").is_none());
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn listing_metadata_only() {
    let r = call(json!({"includeContent": false}));
    assert_eq!(
        r.data["totalCount"], 2,
        "system prompts are not listed by default"
    );
    insta::assert_json_snapshot!(snapshot_json(&r));
}

#[test]
fn listing_with_content_reports_failures_as_warnings() {
    let r = call(json!({"args": {"who": "Bob"}}));
    assert!(r.success);
    assert_eq!(r.data["totalCount"], 2);
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
    assert!(r.data.is_null());
    assert_eq!(
        r.errors,
        vec![
            "Prompt 'nope' not found. Use wit-get-prompts without promptName to see available prompts."
        ]
    );
    assert_eq!(r.metadata["found"], false);
}

#[test]
fn single_prompt_whose_content_fails() {
    let r = call(json!({"promptName": "greet"}));
    assert!(
        r.success,
        "the prompt exists: success with the reason in errors"
    );
    assert!(r.data["prompt"].get("content").is_none());
    assert_eq!(
        r.errors,
        vec!["prompt `greet`: missing required argument(s): who"]
    );
    insta::assert_json_snapshot!(snapshot_json(&r));
}
