//! A running server's stages follow its config: after `.ado-mcp-config.json` changes (hot
//! reload, no restart), `compose_prompt` and `enhance_prompt` scan with the new `guard` section
//! and retrieve with the new `rag` section.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::mcp::{self, Session};

/// A token of a made-up house format, built at run time: only a custom rule knows it.
fn house_token() -> String {
    let digits: String = (0..24u32)
        .map(|i| char::from_digit((i * 7 + 5) % 16, 16).unwrap())
        .collect();
    format!("hbt_{digits}")
}

/// Rules that extend the built-in ones with the house token.
const HOUSE_RULES: &str = r#"[extend]
useDefault = true

[[rules]]
id = "house-build-token"
description = "House build token"
regex = '''\b(hbt_[0-9a-f]{24})\b'''
keywords = ["hbt_"]
"#;

fn write_config(root: &Path, config: &Value) {
    std::fs::write(root.join(".ado-mcp-config.json"), config.to_string()).unwrap();
}

/// Five files about retries (so retrieval has several to return) and a note holding the token.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    for i in 0..5 {
        std::fs::write(
            root.join(format!("src/retry_{i}.rs")),
            format!(
                "/// Retry policy {i}: back off before the next retry.\npub fn retry_backoff_policy_{i}() -> u32 {{ {i} }}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("deploy.md"),
        format!("# Deploy\n\nThe build uses {}.\n", house_token()),
    )
    .unwrap();
    write_config(root, &json!({"rag": {"embeddings": false}}));
    dir
}

async fn compose(s: &Session, args: Value) -> Value {
    s.call("compose_prompt", args)
        .await
        .expect("compose_prompt")
        .structured_content
        .expect("structured content")
}

async fn enhance_status(s: &Session, root: &Path) -> Value {
    let prompt = format!("deploy with {}", house_token());
    let args = json!({"prompt": prompt, "workingDirectory": root});
    let out = s
        .call("enhance_prompt", args)
        .await
        .expect("enhance_prompt")
        .structured_content
        .expect("structured content");
    out["status"].clone()
}

fn docs_included(out: &Value) -> usize {
    out["ledger"]["docsIncluded"].as_array().unwrap().len()
}

#[tokio::test]
async fn guard_and_rag_sections_take_effect_without_a_restart() {
    let ws = workspace();
    let root = ws.path();
    let mut s = mcp::stdio(root, &[]).await;
    let with_token = json!({"query": "deploy", "dir": root, "docs": ["deploy.md"]});
    let retrieved = json!({"query": "retry backoff policy", "dir": root});

    // The built-in rules do not know the house token.
    let out = compose(&s, with_token.clone()).await;
    assert!(
        out["findings"].as_array().is_none_or(Vec::is_empty),
        "{out}"
    );
    assert_eq!(docs_included(&out), 1, "{out}");
    assert_eq!(enhance_status(&s, root).await, "original");
    let before = docs_included(&compose(&s, retrieved.clone()).await);
    assert!(before >= 2, "retrieval returned {before} doc(s)");

    // The config now names rules that know it, and asks retrieval for one chunk.
    let rules = tempfile::tempdir().unwrap();
    let rules_file = rules.path().join("house.toml");
    std::fs::write(&rules_file, HOUSE_RULES).unwrap();
    write_config(
        root,
        &json!({
            "rag": {"embeddings": false, "topK": 1},
            "guard": {"rulesFile": rules_file},
        }),
    );
    s.next_change("config reload").await;

    let out = compose(&s, with_token).await;
    assert_eq!(out["findings"][0]["ruleId"], "house-build-token", "{out}");
    assert_eq!(docs_included(&out), 0, "{out}");
    assert!(
        out["warnings"]
            .to_string()
            .contains("left out doc deploy.md"),
        "{out}"
    );
    assert!(
        !out.to_string().contains(&house_token()),
        "the token leaked"
    );
    assert_eq!(enhance_status(&s, root).await, "blocked");
    let after = docs_included(&compose(&s, retrieved).await);
    assert_eq!(after, 1, "retrieval under topK 1");
    s.close().await;
}
