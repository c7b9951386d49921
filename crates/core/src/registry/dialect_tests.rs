//! How a file of each dialect becomes a template: the registry's parse assembles the name,
//! placeholder arguments, description and directives the dialect reads from the file.

use serde_json::{Map, Value};

use super::{PromptCategory, PromptTemplate, parse_prompt_file, parse_prompt_file_in};
use crate::dialect::{Dialect, tool_metadata};

fn parse(text: &str, rel: &str, folder: Option<Dialect>) -> PromptTemplate {
    parse_prompt_file_in(text, rel, rel, PromptCategory::User, folder).unwrap()
}

fn render(tpl: &PromptTemplate, args: &[(&str, &str)]) -> String {
    let args: Map<String, Value> = args
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    let command = crate::dialect::Command {
        name: &tpl.name,
        metadata: &tpl.metadata,
    };
    tpl.dialect
        .substitute(
            &tpl.body,
            command,
            |k| args.get(k).and_then(Value::as_str).map(str::to_string),
            1 << 20,
        )
        .unwrap()
        .0
}

#[test]
fn frontmatter_engine_decides_the_dialect() {
    let t = parse("---\nengine: claude\n---\nDo $ARGUMENTS", "x.md", None);
    assert_eq!(t.dialect, Dialect::Claude);
    assert_eq!(t.arguments[0].name, "arguments");
}

#[test]
fn system_prompts_are_named_by_their_file() {
    let t = parse_prompt_file(
        "x",
        "system/enhance.md",
        "system/enhance.md",
        PromptCategory::System,
    )
    .unwrap();
    assert_eq!(t.name, "enhance");
}

#[test]
fn vscode_inputs_are_required_and_variables_optional() {
    let t = parse(
        "Write ${input:topic:the subject} for ${file} and ${input:topic} ${unknown}",
        "w.prompt.md",
        None,
    );
    let names: Vec<_> = t.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["topic", "file"]);
    assert!(t.arguments[0].required);
    assert_eq!(t.arguments[0].description.as_deref(), Some("the subject"));
    assert!(!t.arguments[1].required);
    assert_eq!(
        render(&t, &[("topic", "rust")]),
        "Write rust for ${file} and rust ${unknown}"
    );
    assert_eq!(
        t.description.as_deref(),
        Some("Write ${input:topic:the subject} for ${file} and ${input:topic} ${unknown}")
    );
}

#[test]
fn codex_arguments_positional_named_and_dollar() {
    let positional = parse(
        "---\nargument-hint: <file> <mode>\nallowed-tools: Bash(git:*)\n---\n\
         Fix $1 in $2 mode ($ARGUMENTS), cost $$5, home $home, $0 $a\n",
        "fix.md",
        Some(Dialect::Codex),
    );
    let names: Vec<_> = positional
        .arguments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["arguments"]);
    assert_eq!(
        positional.arguments[0].description.as_deref(),
        Some("<file> <mode>")
    );
    assert_eq!(
        render(&positional, &[("arguments", "'a b.rs' fast")]),
        "Fix a b.rs in fast mode (a b.rs fast), cost $$5, home $home, $0 $a\n"
    );
    assert_eq!(
        render(&positional, &[]),
        "Fix  in  mode (), cost $$5, home $home, $0 $a\n"
    );
    assert_eq!(tool_metadata(&positional.metadata).len(), 2);
    // With a named placeholder, Codex fills names only.
    let named = parse(
        "Fix $1 ($ARGUMENTS), cost $$5, ticket $TICKET, home $HOME\n",
        "fix.md",
        Some(Dialect::Codex),
    );
    let names: Vec<_> = named.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["TICKET", "HOME"]);
    assert_eq!(
        render(&named, &[("TICKET", "T-1"), ("HOME", "/h")]),
        "Fix $1 ($ARGUMENTS), cost $$5, ticket T-1, home /h\n"
    );
}

#[test]
fn gemini_toml_prompt_and_args() {
    let t = parse(
        "description = \"Review\"\nprompt = \"\"\"\nReview {{args}} with !{git diff} and @{src/x.rs}\n\"\"\"\n",
        "git/review.toml",
        Some(Dialect::Gemini),
    );
    assert_eq!(t.name, "git:review");
    assert_eq!(t.description.as_deref(), Some("Review"));
    assert_eq!(t.arguments[0].name, "args");
    assert_eq!(t.directives, ["shell", "file"]);
    assert_eq!(
        render(&t, &[("args", "{{args}} $1")]),
        "Review {{args}} $1 with !{git diff} and @{src/x.rs}\n"
    );
    let e = parse_prompt_file_in("prompt = [", "c.toml", "c.toml", PromptCategory::User, None)
        .unwrap_err();
    assert!(e.message.starts_with("invalid TOML"), "{e}");
    assert_eq!(e.line, 1);
}

#[test]
fn cursor_has_no_arguments() {
    let t = parse(
        "Run $ARGUMENTS ${file} {{x}}\n",
        "c.md",
        Some(Dialect::Cursor),
    );
    assert!(t.arguments.is_empty());
    assert_eq!(render(&t, &[("x", "y")]), "Run $ARGUMENTS ${file} {{x}}\n");
    assert_eq!(
        t.description.as_deref(),
        Some("Run $ARGUMENTS ${file} {{x}}")
    );
}

#[test]
fn real_world_constructs_of_public_collections() {
    // `arguments:` as a string is another tool's note, kept as metadata.
    let t = parse(
        "---\narguments: $TARGET\nargument-hint: <target>\n---\nCheck $ARGUMENTS\n",
        "tools/argstr.md",
        Some(Dialect::Claude),
    );
    assert_eq!(t.arguments.len(), 1);
    assert_eq!(tool_metadata(&t.metadata)["arguments"], "$TARGET");
    // A `name` YAML reads as a mapping is ignored, never an error.
    let t = parse(
        "---\nname: {{TITLE}}\n---\nHi\n",
        "tpl.md",
        Some(Dialect::Claude),
    );
    assert_eq!(t.name, "tpl");
    // So is a `description` YAML reads as a mapping: the first body line describes the prompt.
    let t = parse(
        "---\ndescription: {{DESCRIPTION}}\n---\n\nExplain the change\n",
        "desc.md",
        Some(Dialect::Claude),
    );
    assert_eq!(t.description.as_deref(), Some("Explain the change"));
    assert!(t.metadata.contains_key("description"));
    // `${input:Priority|High}` is an argument.
    let t = parse("Priority: ${input:Priority|High}\n", "p.prompt.md", None);
    assert_eq!(t.arguments[0].name, "Priority");
    assert_eq!(t.arguments[0].description.as_deref(), Some("High"));
    assert_eq!(render(&t, &[("Priority", "Low")]), "Priority: Low\n");
    // Claude Code leaves shell variables and `$$` alone.
    let t = parse(
        "Run: echo \"$WORK_DIR\" for $ARGUMENTS; AS $$ BEGIN END; $$\n",
        "x.md",
        Some(Dialect::Claude),
    );
    assert_eq!(t.arguments.len(), 1);
    assert_eq!(
        render(&t, &[("arguments", "me")]),
        "Run: echo \"$WORK_DIR\" for me; AS $$ BEGIN END; $$\n"
    );
}

#[test]
fn a_header_claude_code_loads_is_read_as_claude_code_reads_it() {
    // Claude Code's own documentation example is not YAML (`[a] [b]` is a list, then text).
    let t = parse(
        "---\nargument-hint: [pr-number] [priority]\ndescription: Review: the PR\nallowed-tools: Bash(gh pr view:*)\n---\nReview $0 at $1\n",
        "review.md",
        Some(Dialect::Claude),
    );
    assert_eq!(t.description.as_deref(), Some("Review: the PR"));
    assert_eq!(
        t.metadata["argument-hint"],
        Value::String("[pr-number] [priority]".into())
    );
    let w = &t.parse_warnings[0];
    assert_eq!((w.line, w.code), (2, "lenient-frontmatter"));
    assert!(w.column > 1, "{w:?}");
    assert!(
        w.message.contains("as Claude Code reads it"),
        "{}",
        w.message
    );
    // A hint YAML reads as a list is kept as written.
    let t = parse(
        "---\nargument-hint: [workflow-name]\n---\nRun $ARGUMENTS\n",
        "run.md",
        Some(Dialect::Claude),
    );
    assert_eq!(
        t.metadata["argument-hint"],
        Value::String("[workflow-name]".into())
    );
    assert_eq!(
        t.arguments[0].description.as_deref(),
        Some("[workflow-name]")
    );
    assert!(t.parse_warnings.is_empty());
}

#[test]
fn a_header_no_yaml_reading_accepts_is_read_as_lines_and_the_file_kept() {
    let t = parse(
        "---\ndescription: a: b: {c\n  - stray\nmodel: opus\n---\nBody\n",
        "x.md",
        Some(Dialect::Vscode),
    );
    assert_eq!(t.description.as_deref(), Some("a: b: {c"));
    assert_eq!(t.metadata["model"], Value::String("opus".into()));
    assert_eq!(t.body, "Body\n");
    assert_eq!(t.parse_warnings.len(), 1);
    // promptd's own files stay strict: the error names the line.
    let e = parse_prompt_file_in(
        "---\ndescription: a: b\n---\nBody\n",
        "p.md",
        "p.md",
        PromptCategory::User,
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 2);
}

#[test]
fn a_prompty_inputs_reference_is_not_read_and_the_file_still_loads() {
    let t = parse(
        "---\nname: ref\ninputs: ${file:schema.json}\n---\nuser:\n{{question}}\n",
        "ref.prompty",
        None,
    );
    assert_eq!(t.dialect, Dialect::Prompty);
    let names: Vec<_> = t.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["question"]);
    assert_eq!(t.parse_warnings[0].code, "unread-reference");
    assert_eq!(t.parse_warnings[0].line, 3);
}

#[test]
fn a_prompty_template_starts_where_prompty_reads_it() {
    // Without a header the file is YAML whose value is the template: a plain scalar, trimmed.
    let t = parse("You answer\nconcisely.\n", "plain.prompty", None);
    assert_eq!(t.body, "You answer concisely.");
    // With one, blank lines after it are not part of the template.
    let t = parse("---\nname: x\n---\n\n\nuser:\n{{q}}\n", "x.prompty", None);
    assert_eq!(t.body, "user:\n{{q}}\n");
    assert_eq!(t.body_line, 6);
}

#[test]
fn a_dotprompt_output_schema_picoschema_refuses_is_refused() {
    let e = parse_prompt_file_in(
        "---\ninput:\n  schema:\n    topic: string\noutput:\n  schema:\n    outline: string[]\n---\nWrite {{topic}}\n",
        "blog.prompt",
        "blog.prompt",
        PromptCategory::User,
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 5);
    assert!(e.message.contains("string[]"), "{e}");
}
