//! Per-dialect rules, and the lossless property: a render with every argument supplied
//! replaces exactly the placeholders, and the rest of the body comes back byte for byte. How a
//! whole file of each dialect becomes a template is tested with the registry, which assembles it.

use std::path::Path;

use serde_json::{Map, Value};

use super::*;

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
}

#[test]
fn names_namespace_subfolders_and_drop_suffixes() {
    assert_eq!(
        name_from_path("tools/api-scaffold.md"),
        "tools:api-scaffold"
    );
    assert_eq!(name_from_path("review.prompt.md"), "review");
    assert_eq!(name_from_path("git/commit.toml"), "git:commit");
    assert_eq!(name_from_path("My Review.md"), "My-Review");
    assert_eq!(qualified_name("a/b.prompt.md"), "a:b.prompt.md");
}

#[test]
fn gemini_command_errors_name_the_line() {
    let e = gemini::parse("description = \"x\"\nprompt = [").unwrap_err();
    assert!(e.message.starts_with("invalid TOML"), "{e}");
    assert_eq!(e.line, 2);
    let e = gemini::parse("description = \"x\"\n").unwrap_err();
    assert_eq!(e.message, "a Gemini command needs a `prompt`");
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
fn names_of_public_collections() {
    // `spec:new.md`: Codex users namespace by file name; `svelte/svelte:test.md` is not
    // namespaced twice.
    assert_eq!(name_from_path("spec:new.md"), "spec:new");
    assert_eq!(
        name_from_path("svelte/svelte:test-fix.md"),
        "svelte:test-fix"
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
        for seg in dialect.segments(&body, &Map::new()) {
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
        let meta = Map::new();
        let command = Command {
            name: "cmd",
            metadata: &meta,
        };
        let (out, _) = dialect
            .substitute(
                &body,
                command,
                |k| args.get(k).and_then(Value::as_str).map(str::to_string),
                1 << 20,
            )
            .unwrap();
        // Claude Code appends the typed text when no placeholder took it.
        let took = |p: &Piece| matches!(p, Piece::Slot { raw, value } if raw != value);
        if dialect == Dialect::Claude && !pieces.iter().any(took) {
            expected.push_str("\nARGUMENTS: w1 w2 w3 w4 w5 w6 w7 w8 w9");
        }
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
            let raw = pick(
                rng,
                &[
                    "$ARGUMENTS",
                    "$0",
                    "$1",
                    "$ARGUMENTS[2]",
                    "$12",
                    "$ARGUMENTS[9]",
                ],
            );
            let value = match raw {
                "$ARGUMENTS" => "w1 w2 w3 w4 w5 w6 w7 w8 w9".to_string(),
                "$0" => "w1".into(),
                "$1" => "w2".into(),
                "$ARGUMENTS[2]" => "w3".into(),
                // Nine words were typed: word 9 and word 12 stay as written.
                other => other.into(),
            };
            Piece::Slot {
                raw: raw.into(),
                value,
            }
        },
        &|s| {
            !s.ends_with('$')
                && !s.ends_with('\\')
                && !s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '[')
                && claude::claude_segments(s, &[])
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
            let raw = pick(rng, &["$ARGUMENTS", "$1", "$9", "$$"]);
            let value = match raw {
                "$ARGUMENTS" => "w1 w2 w3 w4 w5 w6 w7 w8 w9".to_string(),
                // Codex leaves `$$` as it is.
                "$$" => "$$".to_string(),
                r => format!("w{}", &r[1..]),
            };
            Piece::Slot {
                raw: raw.into(),
                value,
            }
        },
        // Text must not hold a `$` that starts a placeholder: `$$`, `$` at its end (the
        // generator may put a placeholder right after it), or a named `$NAME`.
        &|s| {
            !s.contains("$$")
                && !s.ends_with('$')
                && claude::codex_segments(s)
                    .iter()
                    .all(|s| matches!(s, Segment::Text(_)))
        },
    );
}

/// Renders `body` of `dialect` with `args` and frontmatter `meta`.
fn render_with(
    dialect: Dialect,
    body: &str,
    meta: &Map<String, Value>,
    args: &[(&str, &str)],
) -> String {
    let command = Command {
        name: "git:commit",
        metadata: meta,
    };
    dialect
        .substitute(
            body,
            command,
            |k| {
                args.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            },
            1 << 20,
        )
        .unwrap()
        .0
}

#[test]
fn claude_positionals_count_from_zero_and_keep_what_was_not_typed() {
    let none = Map::new();
    let r =
        |body: &str, args: &str| render_with(Dialect::Claude, body, &none, &[("arguments", args)]);
    assert_eq!(
        r("$0|$1|$ARGUMENTS[1]|$2|$ARGUMENTS[2]", "a 'b c'"),
        "a|b c|b c|$2|$ARGUMENTS[2]"
    );
    // Prices and shell snippets are text unless that many words are typed.
    assert_eq!(
        r(
            "costs $5,000 or $36,000, $10M, $87.40 and $500; awk '{print $1}' x $0",
            "one"
        ),
        "costs $5,000 or $36,000, $10M, $87.40 and $500; awk '{print $1}' x one"
    );
    assert_eq!(r("awk '{print $1}'", "one two"), "awk '{print two}'");
    // `\$` before a placeholder is a literal `$`; elsewhere a backslash is text.
    assert_eq!(r("\\$0 and \\$HOME and $0", "x"), "$0 and \\$HOME and x");
    // Nothing substituted: the typed text is appended; nothing typed, nothing appended.
    assert_eq!(
        r("Review the code.", "src/lib.rs"),
        "Review the code.\nARGUMENTS: src/lib.rs"
    );
    assert_eq!(r("Cost $3 each.", "one"), "Cost $3 each.\nARGUMENTS: one");
    assert_eq!(r("Review the code.", ""), "Review the code.");
    assert_eq!(r("Fix $ARGUMENTS now", "bug 1"), "Fix bug 1 now");
    // `$HOME` and `$$` are text for Claude Code.
    assert_eq!(r("$HOME $$ $ARGUMENTS", "x"), "$HOME $$ x");
}

#[test]
fn claude_named_arguments_come_from_frontmatter_positions() {
    let mut meta = Map::new();
    meta.insert(
        "arguments".into(),
        serde_json::json!(["component", "from", "to"]),
    );
    let body = "Move $component from $from to $to ($components, $to[0], $ARGUMENTS)";
    assert_eq!(
        render_with(
            Dialect::Claude,
            body,
            &meta,
            &[("arguments", "Search React")]
        ),
        "Move Search from React to  ($components, $to[0], Search React)"
    );
    meta.insert("arguments".into(), Value::String("component 2 from".into()));
    assert_eq!(claude::argument_names(&meta), ["component", "from"]);
    let args = Dialect::Claude.placeholder_arguments("Move $component", 3, &meta);
    assert_eq!(args.len(), 1);
    assert_eq!(args[0].name, "arguments");
    assert_eq!(args[0].description.as_deref(), Some("[component] [from]"));
}

#[test]
fn codex_keeps_dollar_dollar_and_named_prompts_fill_only_names() {
    let none = Map::new();
    let r = |body: &str, args: &[(&str, &str)]| render_with(Dialect::Codex, body, &none, args);
    assert_eq!(
        r(
            "$1 and $2, all: $ARGUMENTS, cost $$5, $0",
            &[("arguments", "a 'b c'")]
        ),
        "a and b c, all: a b c, cost $$5, $0"
    );
    assert_eq!(r("$3 left", &[("arguments", "a")]), " left");
    // A prompt with a named placeholder takes only names: `$1`, `$ARGUMENTS`, `$$X` stay.
    assert_eq!(
        r(
            "Ticket $TICKET_ID by $1 ($ARGUMENTS, $$USER)",
            &[("TICKET_ID", "T-7"), ("arguments", "x")]
        ),
        "Ticket T-7 by $1 ($ARGUMENTS, $$USER)"
    );
    let args = Dialect::Codex.placeholder_arguments("Ticket $TICKET_ID by $1", 1, &none);
    assert_eq!(args.len(), 1);
    assert!(args[0].required);
    // Codex drops text typed after a prompt without placeholders.
    assert_eq!(
        r("No placeholder.", &[("arguments", "x")]),
        "No placeholder."
    );
    assert!(
        Dialect::Codex
            .placeholder_arguments("No placeholder.", 1, &none)
            .is_empty()
    );
}

#[test]
fn gemini_appends_the_typed_command_when_the_prompt_has_no_args() {
    let none = Map::new();
    let r = |body: &str, args: &str| render_with(Dialect::Gemini, body, &none, &[("args", args)]);
    assert_eq!(
        r("Write a commit message.", "fix the bug"),
        "Write a commit message.\n\n/git:commit fix the bug"
    );
    assert_eq!(r("Write a commit message.", ""), "Write a commit message.");
    assert_eq!(r("Commit: {{args}}.", "fix"), "Commit: fix.");
    let args = Dialect::Gemini.placeholder_arguments("Write.", 1, &none);
    assert_eq!(args.len(), 1);
    assert_eq!(args[0].name, "args");
    assert!(!args[0].required);
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
