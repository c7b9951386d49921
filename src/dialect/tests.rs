//! Per-dialect rules, and the lossless property: a render with every argument supplied
//! replaces exactly the placeholders, and the rest of the body comes back byte for byte.

use std::path::Path;

use serde_json::{Map, Value};

use super::*;
use crate::registry::{PromptCategory, parse_prompt_file_in};

fn parse(text: &str, rel: &str, folder: Option<Dialect>) -> PromptTemplate {
    parse_prompt_file_in(text, rel, rel, PromptCategory::User, folder).unwrap()
}

fn render(tpl: &PromptTemplate, args: &[(&str, &str)]) -> String {
    let args: Map<String, Value> = args
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    tpl.dialect
        .substitute(
            &tpl.body,
            |k| args.get(k).and_then(Value::as_str).map(str::to_string),
            1 << 20,
        )
        .unwrap()
        .0
}

#[test]
fn folders_and_names_decide_the_dialect() {
    let of = |p: &str| Dialect::of_folder(Path::new(p));
    assert_eq!(of("/r/.claude/commands"), Some(Dialect::Claude));
    assert_eq!(of("/home/u/.codex/prompts"), Some(Dialect::Codex));
    assert_eq!(of("/r/.gemini/commands"), Some(Dialect::Gemini));
    assert_eq!(of("/r/.cursor/commands"), Some(Dialect::Cursor));
    assert_eq!(of("/r/.github/prompts"), Some(Dialect::Vscode));
    assert_eq!(of("/r/prompts"), None);
    assert_eq!(Dialect::recognise(None, "x.prompt.md"), Dialect::Vscode);
    assert_eq!(Dialect::recognise(None, "x.md"), Dialect::Jinja);
    assert_eq!(
        Dialect::recognise(Some(Dialect::Claude), "a/x.md"),
        Dialect::Claude
    );
    let t = parse("---\nengine: claude\n---\nDo $ARGUMENTS", "x.md", None);
    assert_eq!(t.dialect, Dialect::Claude);
    assert_eq!(t.arguments[0].name, "arguments");
}

#[test]
fn names_namespace_subfolders_and_drop_suffixes() {
    let u = PromptCategory::User;
    assert_eq!(
        name_from_path("tools/api-scaffold.md", u),
        "tools:api-scaffold"
    );
    assert_eq!(name_from_path("review.prompt.md", u), "review");
    assert_eq!(name_from_path("git/commit.toml", u), "git:commit");
    assert_eq!(name_from_path("My Review.md", u), "My-Review");
    assert_eq!(
        name_from_path("system/enhance.md", PromptCategory::System),
        "enhance"
    );
    assert_eq!(qualified_name("a/b.prompt.md"), "a:b.prompt.md");
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
    let t = parse(
        "---\nargument-hint: <file> <mode>\nallowed-tools: Bash(git:*)\n---\n\
         Fix $1 in $2 mode ($ARGUMENTS), cost $$5, ticket $TICKET, home $HOME, $0 $a\n",
        "fix.md",
        Some(Dialect::Codex),
    );
    let names: Vec<_> = t.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["arguments", "TICKET", "HOME"]);
    assert_eq!(t.arguments[0].description.as_deref(), Some("<file> <mode>"));
    assert_eq!(
        render(&t, &[("arguments", "'a b.rs' fast"), ("TICKET", "T-1")]),
        "Fix a b.rs in fast mode ('a b.rs' fast), cost $5, ticket T-1, home $HOME, $0 $a\n"
    );
    assert_eq!(
        render(&t, &[]),
        "Fix  in  mode (), cost $5, ticket $TICKET, home $HOME, $0 $a\n"
    );
    assert_eq!(tool_metadata(&t).len(), 2);
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
fn directives_are_detected_not_run() {
    assert_eq!(
        directives(Dialect::Codex, "run !`git status` now"),
        ["shell"]
    );
    assert_eq!(directives(Dialect::Claude, "see @src/main.rs"), ["file"]);
    assert!(directives(Dialect::Claude, "mail a@b.com, @alice").is_empty());
    assert_eq!(
        directives(Dialect::Gemini, "!{ls} @{a.md}"),
        ["shell", "file"]
    );
    // Each tool's own syntax only: git's `stash@{0}` is no Gemini file, `!`x`` no VS Code command.
    assert!(directives(Dialect::Gemini, "git stash@{0}").is_empty());
    // A decorator in a code block is code; the same `@path` in prose is a file reference.
    let fenced = "Write tests:\n\n```python\n@pytest.fixture\ndef db():\n    pass\n```\n";
    assert!(directives(Dialect::Claude, fenced).is_empty());
    assert_eq!(
        directives(Dialect::Claude, &format!("{fenced}\nSee @src/db.py\n")),
        ["file"]
    );
    assert!(directives(Dialect::Vscode, "!`ls` @src/x.rs").is_empty());
    assert!(directives(Dialect::Jinja, "!`ls` @src/x.rs").is_empty());
}

#[test]
fn real_world_constructs_of_public_collections() {
    // `spec:new.md`: Codex users namespace by file name; `svelte/svelte:test.md` is not
    // namespaced twice.
    assert_eq!(
        name_from_path("spec:new.md", PromptCategory::User),
        "spec:new"
    );
    assert_eq!(
        name_from_path("svelte/svelte:test-fix.md", PromptCategory::User),
        "svelte:test-fix"
    );
    // `arguments:` as a string is another tool's note, kept as metadata.
    let t = parse(
        "---\narguments: $TARGET\nargument-hint: <target>\n---\nCheck $ARGUMENTS\n",
        "tools/argstr.md",
        Some(Dialect::Claude),
    );
    assert_eq!(t.arguments.len(), 1);
    assert_eq!(tool_metadata(&t)["arguments"], "$TARGET");
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

// ---- the lossless property ----

/// One piece of a generated body: text that holds no placeholder of the dialect, or a
/// placeholder with the value a render must put in its place.
enum Piece {
    Text(String),
    Slot { raw: String, value: String },
}

/// Random text over characters that placeholders are made of, without forming one.
fn text(rng: &mut fastrand::Rng, alphabet: &[char], ok: impl Fn(&str) -> bool) -> String {
    loop {
        let len = rng.usize(0..12);
        let s: String = (0..len)
            .map(|_| alphabet[rng.usize(0..alphabet.len())])
            .collect();
        if ok(&s) {
            return s;
        }
    }
}

/// Builds random bodies, renders them with every argument supplied, and checks the result is
/// the body with exactly the placeholders replaced.
fn lossless(
    dialect: Dialect,
    slots: &dyn Fn(&mut fastrand::Rng) -> Piece,
    ok: &dyn Fn(&str) -> bool,
) {
    let alphabet: Vec<char> = "ab $${}{}:!@`\n\t é{{}}%#.-_0".chars().collect();
    let mut rng = fastrand::Rng::with_seed(15);
    for _ in 0..2000 {
        let mut pieces = Vec::new();
        for _ in 0..rng.usize(0..8) {
            pieces.push(Piece::Text(text(&mut rng, &alphabet, ok)));
            // A space after a placeholder ends it (`$1` then `0` would read `$10` as `$1`,`0`
            // anyway, but `$ARGUMENTS` then `X` is another name).
            pieces.push(slots(&mut rng));
            pieces.push(Piece::Text(" ".into()));
        }
        pieces.push(Piece::Text(text(&mut rng, &alphabet, ok)));
        let mut body = String::new();
        let mut expected = String::new();
        let mut args: Map<String, Value> = Map::new();
        for p in &pieces {
            match p {
                Piece::Text(t) => {
                    body.push_str(t);
                    expected.push_str(t);
                }
                Piece::Slot { raw, value } => {
                    body.push_str(raw);
                    expected.push_str(value);
                }
            }
        }
        // Arguments are the values of the slots that name one.
        for seg in dialect.segments(&body) {
            if let Segment::Slot { raw, slot } = seg
                && let Key::Arg(name) = &slot.key
            {
                args.insert(name.clone(), Value::String(value_of(dialect, raw)));
            }
        }
        args.insert(
            "arguments".into(),
            Value::String("w1 w2 w3 w4 w5 w6 w7 w8 w9".into()),
        );
        let (out, _) = dialect
            .substitute(
                &body,
                |k| args.get(k).and_then(Value::as_str).map(str::to_string),
                1 << 20,
            )
            .unwrap();
        assert_eq!(out, expected, "{dialect:?} body {body:?}");
    }
}

/// The value the generator gives each placeholder: `<raw>` with its name inside.
fn value_of(dialect: Dialect, raw: &str) -> String {
    let name = match dialect {
        Dialect::Vscode => raw
            .trim_start_matches("${")
            .trim_end_matches('}')
            .trim_start_matches("input:")
            .split(':')
            .next()
            .unwrap_or_default()
            .to_string(),
        Dialect::Claude | Dialect::Codex => raw.trim_start_matches('$').to_string(),
        _ => raw
            .trim_matches(|c| c == '{' || c == '}' || c == ' ')
            .to_string(),
    };
    format!("<{name}>")
}

fn pick<'a>(rng: &mut fastrand::Rng, items: &[&'a str]) -> &'a str {
    items[rng.usize(0..items.len())]
}

#[test]
fn vscode_renders_losslessly() {
    lossless(
        Dialect::Vscode,
        &|rng| {
            let raw = pick(
                rng,
                &[
                    "${input:topic}",
                    "${input:topic:a hint}",
                    "${input:n_2:x y}",
                    "${file}",
                    "${selection}",
                    "${workspaceFolderBasename}",
                ],
            );
            Piece::Slot {
                raw: raw.into(),
                value: value_of(Dialect::Vscode, raw),
            }
        },
        &|s| {
            vscode::segments(s)
                .iter()
                .all(|s| matches!(s, Segment::Text(_)))
        },
    );
}

#[test]
fn claude_renders_losslessly() {
    lossless(
        Dialect::Claude,
        &|rng| {
            let raw = pick(rng, &["$ARGUMENTS", "$1", "$9"]);
            let value = match raw {
                "$ARGUMENTS" => "w1 w2 w3 w4 w5 w6 w7 w8 w9".to_string(),
                r => format!("w{}", &r[1..]),
            };
            Piece::Slot {
                raw: raw.into(),
                value,
            }
        },
        &|s| {
            !s.ends_with('$')
                && claude::segments(s, false)
                    .iter()
                    .all(|s| matches!(s, Segment::Text(_)))
        },
    );
}

#[test]
fn codex_renders_losslessly() {
    lossless(
        Dialect::Codex,
        &|rng| {
            let raw = pick(rng, &["$ARGUMENTS", "$1", "$9", "$$", "$TICKET_ID", "$X2"]);
            let value = match raw {
                "$ARGUMENTS" => "w1 w2 w3 w4 w5 w6 w7 w8 w9".to_string(),
                "$$" => "$".to_string(),
                r if r.len() == 2 && r.as_bytes()[1].is_ascii_digit() => format!("w{}", &r[1..]),
                r => value_of(Dialect::Claude, r),
            };
            Piece::Slot {
                raw: raw.into(),
                value,
            }
        },
        // Text must not hold a `$` that starts a placeholder: `$$`, or `$` at its end (the
        // generator may put a placeholder right after it).
        &|s| {
            !s.contains("$$")
                && !s.ends_with('$')
                && claude::segments(s, true)
                    .iter()
                    .all(|s| matches!(s, Segment::Text(_)))
        },
    );
}

#[test]
fn gemini_renders_losslessly() {
    lossless(
        Dialect::Gemini,
        &|_| Piece::Slot {
            raw: "{{args}}".into(),
            value: "<args>".into(),
        },
        &|s| !s.contains("{{args}}") && !s.ends_with("{{args") && !s.ends_with('{'),
    );
}

#[test]
fn plain_renders_losslessly() {
    lossless(
        Dialect::Plain,
        &|rng| {
            let raw = pick(rng, &["{{x}}", "{{ name }}", "{{a_1}}"]);
            Piece::Slot {
                raw: raw.into(),
                value: value_of(Dialect::Plain, raw),
            }
        },
        &|s| !s.contains('{') && !s.contains('}'),
    );
}

#[test]
fn cursor_renders_losslessly() {
    lossless(
        Dialect::Cursor,
        &|rng| {
            let raw = pick(rng, &["$ARGUMENTS", "{{args}}", "${file}"]);
            Piece::Slot {
                raw: raw.into(),
                value: raw.into(),
            }
        },
        &|_| true,
    );
}
