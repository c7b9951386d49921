//! Glob-driven render snapshots: each folder under `tests/fixtures/render/` holds prompt
//! folders and a `case.json` listing renders; the snapshot is every render's text, variables and
//! provenance, or its error message, and the values a marked render (the studio's) found in the
//! text, whose text must equal the plain render's.

use crate::support;

use std::fmt::Write;
use std::path::Path;

use promptd::render::SegmentKind;
use serde_json::{Map, Value};

pub(crate) fn run_case(case_file: &Path) -> String {
    let dir = case_file.parent().unwrap();
    let case: Value = serde_json::from_str(&std::fs::read_to_string(case_file).unwrap()).unwrap();
    let roots: Vec<_> = case["roots"]
        .as_array()
        .map(|a| a.iter().map(|r| dir.join(r.as_str().unwrap())).collect())
        .unwrap_or_else(|| vec![dir.join("prompts")]);
    // A folder of its own per run: concurrent test processes never share the file.
    let config_dir = tempfile::tempdir().unwrap();
    let config = case.get("config").map(|c| {
        let path = config_dir.path().join(".ado-mcp-config.json");
        std::fs::write(&path, serde_json::to_string_pretty(c).unwrap()).unwrap();
        path
    });
    let builtins = case["builtins"].as_bool().unwrap_or(false);
    let mut out = String::new();
    for render in case["renders"].as_array().expect("renders") {
        let now = render["now"].as_str().unwrap_or("2026-01-15T12:00:00Z");
        let lib = support::library(&roots, builtins, config.as_deref(), now);
        let name = render["prompt"].as_str().unwrap();
        let args: Map<String, Value> = render["args"].as_object().cloned().unwrap_or_default();
        writeln!(out, "### {name} {}", Value::Object(args.clone())).unwrap();
        match lib.render(name, &args) {
            Ok(r) => {
                writeln!(out, "engine: {:?}", r.engine).unwrap();
                writeln!(out, "templateArgsUsed: {}", r.template_args_used.join(", ")).unwrap();
                let prov: Vec<String> = r
                    .provenance
                    .iter()
                    .filter(|(k, _)| r.template_args_used.contains(k))
                    .map(|(k, v)| format!("{k}={v:?}"))
                    .collect();
                writeln!(out, "provenance: {}", prov.join(", ")).unwrap();
                for w in &r.warnings {
                    writeln!(out, "warning: {w}").unwrap();
                }
                let snapshot = lib.snapshot();
                let prompt = snapshot.registry.get(name).unwrap();
                let (marked, messages) = snapshot
                    .renderer
                    .render_marked(prompt, &args, &snapshot.config, lib.clock())
                    .expect("a marked render succeeds where the render did");
                assert_eq!(marked.text, r.text, "{name}: marks changed the text");
                assert_eq!(
                    marked.messages, r.messages,
                    "{name}: marks changed the messages"
                );
                let values: Vec<String> = messages
                    .iter()
                    .flat_map(|m| &m.segments)
                    .filter_map(|s| match &s.kind {
                        SegmentKind::Text => None,
                        SegmentKind::Variable { name } => Some(format!("{name}={:?}", s.text)),
                        SegmentKind::Expression => Some(format!("(expr)={:?}", s.text)),
                    })
                    .collect();
                let joined: String = messages
                    .iter()
                    .map(|m| {
                        m.segments
                            .iter()
                            .map(|s| s.text.as_str())
                            .collect::<String>()
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let expected: String = r
                    .messages
                    .iter()
                    .map(|m| m.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                assert_eq!(joined, expected, "{name}: segments lost text");
                writeln!(out, "marks: {}", values.join(", ")).unwrap();
                if r.messages.len() > 1 {
                    for m in &r.messages {
                        writeln!(out, "--- message ({}) ---\n{}", m.role, m.text).unwrap();
                    }
                } else {
                    writeln!(out, "--- text ---\n{}", r.text).unwrap();
                }
            }
            Err(e) => writeln!(out, "error: {e}").unwrap(),
        }
        for sh in lib.snapshot().registry.shadowed() {
            writeln!(out, "shadowed: {} at {} by {}", sh.name, sh.hidden, sh.by).unwrap();
        }
        for d in lib.snapshot().registry.diagnostics() {
            writeln!(out, "diagnostic: {d}").unwrap();
        }
    }
    support::redact(&out, dir)
}

#[test]
fn render_fixtures() {
    insta::glob!("fixtures/render/*/case.json", |path| {
        insta::assert_snapshot!(run_case(path));
    });
}

/// A value of a marked render: its variable (or `(expr)`), its text, the file lines that printed it.
type Located = (String, String, Option<(usize, usize)>);

/// The values of a marked render of `name`.
fn marked_lines(
    lib: &promptd::library::PromptLibrary,
    name: &str,
    args: &Map<String, Value>,
) -> Vec<Located> {
    let snapshot = lib.snapshot();
    let prompt = snapshot.registry.get(name).unwrap();
    let (_, messages) = snapshot
        .renderer
        .render_marked(prompt, args, &snapshot.config, lib.clock())
        .unwrap();
    messages
        .iter()
        .flat_map(|m| &m.segments)
        .filter_map(|s| match &s.kind {
            SegmentKind::Text => None,
            SegmentKind::Variable { name } => Some((name.clone(), s.text.clone(), s.lines)),
            SegmentKind::Expression => Some(("(expr)".into(), s.text.clone(), s.lines)),
        })
        .collect()
}

#[test]
fn marked_values_carry_the_file_lines_that_printed_them() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    // The body starts at line 8 of the file; `{{ a | upper }}` spans lines 13 and 14.
    std::fs::write(
        prompts.join("lines.md"),
        "---\nengine: jinja\narguments:\n  - name: a\n    default: Rocket\n  - name: b\n---\n\
         First {{ a }}.\n{% if true %}\nSecond {{ b }}\n{% endif %}\n{% include \"part\" %}\n\
         {{ a\n   | upper }}\n",
    )
    .unwrap();
    std::fs::write(prompts.join("part.md"), "Part {{ a }}.\n").unwrap();
    std::fs::write(
        prompts.join("plain.md"),
        "---\nengine: plain\n---\nOne {{b}}\n\nTwo {{b}}\n",
    )
    .unwrap();
    let lib = support::library(&[prompts], false, None, "2026-01-15T12:00:00Z");
    let mut args = Map::new();
    args.insert("b".into(), Value::String("Rocket".into()));
    assert_eq!(
        marked_lines(&lib, "lines", &args),
        vec![
            ("a".to_string(), "Rocket".to_string(), Some((8, 8))),
            ("b".into(), "Rocket".into(), Some((10, 10))),
            // Printed by the included file: not a line of this one.
            ("a".into(), "Rocket".into(), None),
            ("(expr)".into(), "ROCKET".into(), Some((13, 14))),
        ]
    );
    assert_eq!(
        marked_lines(&lib, "plain", &args),
        vec![
            ("b".to_string(), "Rocket".to_string(), Some((4, 4))),
            ("b".into(), "Rocket".into(), Some((6, 6))),
        ]
    );
}
