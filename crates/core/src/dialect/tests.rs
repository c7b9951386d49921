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
