//! The compose frame as a template: a user folder's `compose_frame` shadows the shipped one, and
//! the cacheable prefix is found in whatever layout it renders — kept when system + tools +
//! always-on rules stay one run before or after the query's block, dropped with a warning when
//! they do not. And a compose renders every template from the one snapshot it is given.

use std::path::{Path, PathBuf};

use promptd::compose::{
    ComposeRequest, ComposedPrompt, DocChunk, FRAME_TEMPLATE, ToolDefinition, compose_prompt,
};
use promptd::library::PromptLibrary;

const NOW: &str = "2026-01-15T12:00:00Z";

const CONTIGUITY_WARNING: &str = "the `compose_frame` template does not keep system + tools + \
                                  always-on rules contiguous: no cacheable prefix is reported";

/// A request in the `rules_and_docs` fixture workspace: always-on and file-dependent rules, one
/// server tool and one doc.
fn request(query: &str) -> ComposeRequest {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compose/rules_and_docs");
    let mut request = ComposeRequest::new(query, root);
    request.current_file = Some(PathBuf::from("src/app/main.ts"));
    request.server_tools = vec![ToolDefinition::server(
        "get_prompt",
        "Render a prompt template from the registry.",
        serde_json::json!({"type": "object"}),
    )];
    request.docs = vec![DocChunk {
        path: "docs/http.md".into(),
        start_line: 1,
        end_line: 1,
        text: "Retries use exponential backoff.\n".into(),
        score: 1.0,
    }];
    request
}

/// The shipped frame's frontmatter (its declared arguments) over `body`.
fn frame_file(body: &str) -> String {
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts/system/compose_frame.md"),
    )
    .unwrap();
    let (header, _, _) = promptd::registry::split_frontmatter(&shipped).unwrap();
    format!("---\n{}---\n{body}", header.unwrap())
}

/// Writes `system/<name>.md` files into `dir`.
fn write_system(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir.join("system")).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join("system").join(format!("{name}.md")), text).unwrap();
    }
}

/// A library of the built-in prompts shadowed by `system/<name>.md` files holding `files`.
fn library(dir: &Path, files: &[(&str, &str)]) -> PromptLibrary {
    write_system(dir, files);
    crate::support::library(&[dir.to_path_buf()], true, None, NOW)
}

fn compose(lib: &PromptLibrary, query: &str) -> ComposedPrompt {
    compose_prompt(&lib.snapshot(), lib.clock(), &request(query), None).unwrap()
}

/// The prefix sits in the text where it says, holds every cacheable stage output and no query,
/// and stays the same for another query.
fn assert_cacheable(lib: &PromptLibrary, composed: &ComposedPrompt) {
    assert!(composed.warnings.is_empty(), "{:?}", composed.warnings);
    let at = composed.prefix_start;
    assert_eq!(
        &composed.text[at..at + composed.prefix.len()],
        composed.prefix
    );
    for part in [
        "You are promptd's coding assistant.",
        "### Tool: get_prompt",
        "### Rule: AGENTS.md",
    ] {
        assert!(
            composed.prefix.contains(part),
            "{part} is not in the prefix"
        );
    }
    assert!(!composed.prefix.contains("Add retry"));
    assert!(!composed.prefix.contains("applies to src/app/main.ts"));
    assert!(!composed.prefix.contains("Retries use exponential backoff"));
    let again = compose(lib, "Why does the build fail on CI?");
    assert_eq!(again.prefix, composed.prefix);
}

const SYSTEM: (&str, &str) = (
    "compose_system",
    "---\nengine: plain\n---\nYou are promptd's coding assistant.",
);

#[test]
fn a_shadowing_frame_with_its_own_headings_keeps_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let frame = frame_file(
        "Question: {{ query }}\n\n---\n\n# Instructions\n\n{{ system_prompt | trim }}\n\n\
         # Tools\n\n{{ stages.toolsBlock | trim }}\n\n# Rules\n\n{{ stages.rulesBlock | trim }}\n\n\
         ---\n\n# Docs\n\n{{ stages.docsBlock | trim }}\n",
    );
    let lib = library(dir.path(), &[SYSTEM, (FRAME_TEMPLATE, &frame)]);
    let composed = compose(&lib, "Add retry to the HTTP client");
    assert!(composed.text.starts_with("Question: Add retry"));
    assert!(
        composed.prefix.starts_with("# Instructions\n\nYou are"),
        "{composed:#?}"
    );
    assert_cacheable(&lib, &composed);
    assert!(composed.remainder().starts_with("Question: Add retry"));
}

#[test]
fn a_shadowing_frame_with_the_query_last_keeps_the_prefix_at_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let frame = frame_file(
        "{{ system_prompt | trim }}\n\n{{ stages.toolsBlock | trim }}\n\n\
         {{ stages.rulesBlock | trim }}\n\n{{ stages.docsBlock | trim }}\n\n---\n\n\
         The user asks: {{ query }}\n",
    );
    let lib = library(dir.path(), &[SYSTEM, (FRAME_TEMPLATE, &frame)]);
    let composed = compose(&lib, "Add retry to the HTTP client");
    assert_eq!(composed.prefix_start, 0);
    assert_cacheable(&lib, &composed);
}

#[test]
fn a_shadowing_frame_that_splits_the_prefix_gets_a_warning_and_no_prefix() {
    let dir = tempfile::tempdir().unwrap();
    // Docs between the system prompt and the tools: the cacheable blocks are not one run.
    let frame = frame_file(
        "USER: {{ query }}\n\n---\n\n{{ system_prompt | trim }}\n\n---\n\n\
         {{ stages.docsBlock | trim }}\n\n---\n\n{{ stages.toolsBlock | trim }}\n\n---\n\n\
         {{ stages.rulesBlock | trim }}\n",
    );
    let lib = library(dir.path(), &[SYSTEM, (FRAME_TEMPLATE, &frame)]);
    let composed = compose(&lib, "Add retry to the HTTP client");
    assert_eq!(composed.warnings, [CONTIGUITY_WARNING]);
    assert_eq!(
        (
            composed.prefix.as_str(),
            composed.prefix_start,
            composed.prefix_tokens
        ),
        ("", 0, 0)
    );
    assert!(composed.text.contains("Retries use exponential backoff"));

    // The query inside the system block: nothing around it is free of the query.
    let frame = frame_file(
        "{{ system_prompt | trim }} The user asks: {{ query }}\n\n---\n\n\
         {{ stages.toolsBlock | trim }}\n\n---\n\n{{ stages.rulesBlock | trim }}\n",
    );
    let lib = library(dir.path(), &[SYSTEM, (FRAME_TEMPLATE, &frame)]);
    let composed = compose(&lib, "Add retry to the HTTP client");
    assert_eq!(composed.warnings, [CONTIGUITY_WARNING]);
    assert_eq!(composed.prefix, "");
}

#[test]
fn compose_renders_every_template_from_the_snapshot_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let system = |version: &str| format!("---\nengine: plain\n---\nSystem prompt {version}.");
    let frame = |version: &str| {
        frame_file(&format!(
            "USER: {{{{ query }}}}\n\n---\n\nFrame {version}.\n\n{{{{ system_prompt | trim }}}}\n"
        ))
    };
    let lib = library(
        dir.path(),
        &[
            ("compose_system", &system("one")),
            (FRAME_TEMPLATE, &frame("one")),
        ],
    );
    let before = lib.snapshot();
    write_system(
        dir.path(),
        &[
            ("compose_system", &system("three")),
            (FRAME_TEMPLATE, &frame("three")),
        ],
    );
    assert!(lib.reload().changed);

    let query = "Add retry to the HTTP client";
    let old = compose_prompt(&before, lib.clock(), &request(query), None).unwrap();
    assert!(
        old.text.contains("Frame one.\n\nSystem prompt one."),
        "{}",
        old.text
    );
    let new = compose_prompt(&lib.snapshot(), lib.clock(), &request(query), None).unwrap();
    assert!(
        new.text.contains("Frame three.\n\nSystem prompt three."),
        "{}",
        new.text
    );
}
