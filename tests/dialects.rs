//! Glob-driven dialect snapshots: each folder under `tests/fixtures/dialects/` holds one
//! dialect's prompt folder (`.claude/commands`, …) and a `case.json`; the snapshot is the
//! listing (as `wit-get-prompts` and `list --json` show it), `check`'s findings and every
//! render of the case.

use crate::support;

use std::fmt::Write;

use promptd::library::GetPromptsRequest;

#[test]
fn dialect_fixtures() {
    insta::glob!("fixtures/dialects/*/case.json", |path| {
        let dir = path.parent().unwrap();
        let case: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let roots: Vec<_> = case["roots"]
            .as_array()
            .map(|a| a.iter().map(|r| dir.join(r.as_str().unwrap())).collect())
            .unwrap_or_else(|| vec![dir.join("prompts")]);
        let lib = support::library(&roots, false, None, "2026-01-15");
        let listing = lib.get_prompts(&GetPromptsRequest {
            include_content: false,
            ..Default::default()
        });
        let mut out = String::new();
        writeln!(
            out,
            "=== listing ===\n{}",
            serde_json::to_string_pretty(&serde_json::to_value(&listing.data).unwrap()["prompts"])
                .unwrap()
        )
        .unwrap();
        writeln!(out, "=== check ===").unwrap();
        for d in promptd::lint::check(&lib.snapshot()) {
            writeln!(out, "{d}").unwrap();
        }
        writeln!(out, "=== renders ===").unwrap();
        out.push_str(&crate::render_fixtures::run_case(path));
        insta::assert_snapshot!(support::redact(&out, dir));
    });
}
