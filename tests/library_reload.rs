//! `PromptLibrary::reload` over real files: a broken edit — bad YAML or a bad template — keeps the
//! last good version served and reports `file:line:col: reason (keeping the last good version)`.

use crate::support;

use std::path::Path;

use promptd::library::PromptLibrary;
use promptd::registry::Engine;
use serde_json::{Map, Value, json};

const NOW: &str = "2026-01-15T12:00:00Z";
const KEPT: &str = "(keeping the last good version)";

fn open(dir: &Path) -> PromptLibrary {
    support::library(&[dir.to_path_buf()], false, None, NOW)
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// The text a prompt renders to with `who=Ann`.
fn text(lib: &PromptLibrary, name: &str) -> String {
    lib.render(name, &args(json!({"who": "Ann"})))
        .unwrap_or_else(|e| panic!("render {name}: {e}"))
        .text
}

/// The display path of a served prompt's file.
fn path_of(lib: &PromptLibrary, name: &str) -> String {
    lib.snapshot().registry.get(name).unwrap().path.clone()
}

#[test]
fn broken_jinja_edit_of_an_engine_jinja_prompt_keeps_the_last_good_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("greet.md");
    std::fs::write(&file, "---\nengine: jinja\n---\nHello {{ who }}!\n").unwrap();
    let lib = open(dir.path());
    assert_eq!(text(&lib, "greet"), "Hello Ann!\n");
    let path = path_of(&lib, "greet");

    // `{% if %}` never closed, on line 5 of the file.
    std::fs::write(
        &file,
        "---\nengine: jinja\n---\nHello {{ who }}!\n{% if loud %}\nLOUD\n",
    )
    .unwrap();
    let outcome = lib.reload();
    assert!(!outcome.changed, "nothing a client sees changed");
    assert_eq!(outcome.problems.len(), 1, "{:?}", outcome.problems);
    let problem = &outcome.problems[0];
    assert!(
        problem.starts_with(&format!("{path}:")),
        "file:line first: {problem}"
    );
    let line: usize = problem[path.len() + 1..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("a line number after the path: {problem}"));
    assert!(
        (5..=6).contains(&line),
        "line of the broken block: {problem}"
    );
    assert!(
        problem.contains("error[template-syntax]: syntax error"),
        "{problem}"
    );
    assert!(problem.ends_with(KEPT), "{problem}");
    assert_eq!(
        text(&lib, "greet"),
        "Hello Ann!\n",
        "last good version served"
    );
    assert_eq!(lib.snapshot().registry.diagnostics().len(), 1);

    // Saving the same broken text again changes nothing and sends nothing.
    let outcome = lib.reload();
    assert!(!outcome.changed);
    assert_eq!(text(&lib, "greet"), "Hello Ann!\n");

    // A fixed edit is taken.
    std::fs::write(
        &file,
        "---\nengine: jinja\n---\nHello {{ who }}!\n{% if loud %}\nLOUD\n{% endif %}\n",
    )
    .unwrap();
    let outcome = lib.reload();
    assert!(outcome.changed);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    assert_eq!(text(&lib, "greet"), "Hello Ann!\n");
    let loud = lib
        .render("greet", &args(json!({"who": "Ann", "loud": true})))
        .unwrap();
    assert_eq!(loud.text, "Hello Ann!\nLOUD\n");
}

#[test]
fn broken_jinja_edit_of_a_prompt_without_engine_that_was_jinja_keeps_the_last_good_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("greet.md");
    std::fs::write(
        &file,
        "---\ntitle: Greet\n---\n{% if who %}Hello {{ who }}!{% endif %}\n",
    )
    .unwrap();
    let lib = open(dir.path());
    assert_eq!(
        text(&lib, "greet"),
        "Hello Ann!",
        "trim_blocks eats the newline after endif"
    );
    let analysis_engine = |lib: &PromptLibrary| {
        let snap = lib.snapshot();
        snap.renderer.analysis("greet").unwrap().engine
    };
    assert_eq!(analysis_engine(&lib), Engine::Jinja);
    let path = path_of(&lib, "greet");

    // The `endif` is lost: today this would silently serve raw `{% ... %}` text.
    std::fs::write(
        &file,
        "---\ntitle: Greet\n---\n{% if who %}Hello {{ who }}!\n",
    )
    .unwrap();
    let outcome = lib.reload();
    assert!(!outcome.changed);
    assert_eq!(outcome.problems.len(), 1, "{:?}", outcome.problems);
    let problem = &outcome.problems[0];
    assert!(problem.starts_with(&format!("{path}:4:")), "{problem}");
    assert!(
        problem.contains("error[template-syntax]: syntax error"),
        "{problem}"
    );
    assert!(
        problem.contains("the last good version is a Jinja template"),
        "{problem}"
    );
    assert!(problem.contains("`engine: plain`"), "{problem}");
    assert!(problem.ends_with(KEPT), "{problem}");
    assert_eq!(
        text(&lib, "greet"),
        "Hello Ann!",
        "last good version served"
    );
    assert_eq!(analysis_engine(&lib), Engine::Jinja);

    // Declaring `engine: plain` is the way to make that text plain on purpose.
    std::fs::write(
        &file,
        "---\ntitle: Greet\nengine: plain\n---\n{% if who %}Hello {{ who }}!\n",
    )
    .unwrap();
    let outcome = lib.reload();
    assert!(outcome.changed);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    assert_eq!(text(&lib, "greet"), "{% if who %}Hello Ann!\n");
    assert_eq!(analysis_engine(&lib), Engine::Plain);
}

#[test]
fn a_prompt_that_never_was_jinja_still_loads_by_plain_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("legacy.md");
    std::fs::write(
        &file,
        "---\ntitle: Legacy\n---\nUse {{#raw-ish}} with {{ who }}.\n",
    )
    .unwrap();
    let lib = open(dir.path());
    let r = lib.render("legacy", &args(json!({"who": "Ann"}))).unwrap();
    assert_eq!(r.engine, Engine::Plain);
    assert_eq!(r.text, "Use {{#raw-ish}} with Ann.\n");

    // Edited, still not Jinja: taken, served by plain fallback as before.
    std::fs::write(
        &file,
        "---\ntitle: Legacy\n---\nNow {{ still not jinja }} for {{ who }}.\n",
    )
    .unwrap();
    let outcome = lib.reload();
    assert!(outcome.changed);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    let r = lib.render("legacy", &args(json!({"who": "Ann"}))).unwrap();
    assert_eq!(r.engine, Engine::Plain);
    assert_eq!(r.text, "Now {{ still not jinja }} for Ann.\n");

    // An edit that makes it a Jinja template with a mistake (a statement, or a `{{` left
    // open) is refused: the last good version stays.
    for broken in [
        "---\ntitle: Legacy\n---\n{% if who %}Now {{ who }}\n",
        "---\ntitle: Legacy\n---\nNow {{ who }\n",
    ] {
        std::fs::write(&file, broken).unwrap();
        let outcome = lib.reload();
        assert_eq!(outcome.problems.len(), 1, "{:?}", outcome.problems);
        assert!(
            outcome.problems[0].ends_with(KEPT),
            "{:?}",
            outcome.problems
        );
        let r = lib.render("legacy", &args(json!({"who": "Ann"}))).unwrap();
        assert_eq!(r.text, "Now {{ still not jinja }} for Ann.\n");
    }
}

#[test]
fn files_without_a_last_good_version_load_as_on_first_load() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ok.md"), "---\ntitle: Ok\n---\nok\n").unwrap();
    let lib = open(dir.path());

    // New files after startup: a broken `engine: jinja` one is served and fails at get, and so
    // does a Jinja template without engine; one shown not to be Jinja falls back to plain
    // substitution.
    std::fs::write(
        dir.path().join("strict.md"),
        "---\nengine: jinja\n---\n{% if x %}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("loose.md"),
        "---\n---\n{{ 90_days }} {{ who }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("typo.md"),
        "---\n---\n{% if x %} {{ who }}\n",
    )
    .unwrap();
    let outcome = lib.reload();
    assert!(outcome.changed);
    assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
    let err = lib.render("strict", &Map::new()).unwrap_err();
    assert!(
        err.to_string().contains("strict.md:4:9: syntax error"),
        "{err}"
    );
    let err = lib.render("typo", &Map::new()).unwrap_err();
    assert!(
        err.to_string().contains("typo.md:3:21: syntax error"),
        "{err}"
    );
    assert_eq!(text(&lib, "loose"), "{{ 90_days }} Ann\n");

    // A file whose YAML never parsed has no last good version either: fixing its template
    // later is not held against it.
    let never = dir.path().join("never.md");
    std::fs::write(&never, "---\ntitle: [unclosed\n---\nx\n").unwrap();
    let outcome = lib.reload();
    assert_eq!(outcome.problems.len(), 1, "{:?}", outcome.problems);
    assert!(
        !outcome.problems[0].ends_with(KEPT),
        "{:?}",
        outcome.problems
    );
    assert!(lib.snapshot().registry.get("never").is_none());
}

#[test]
fn broken_yaml_edit_still_keeps_the_last_good_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("greet.md");
    std::fs::write(&file, "---\ntitle: Greet\n---\nHello {{ who }}!\n").unwrap();
    let lib = open(dir.path());
    let path = path_of(&lib, "greet");
    std::fs::write(&file, "---\ntitle: [unclosed\n---\nHello {{ who }}!\n").unwrap();
    let outcome = lib.reload();
    assert!(!outcome.changed);
    assert_eq!(outcome.problems.len(), 1, "{:?}", outcome.problems);
    assert!(
        outcome.problems[0].starts_with(&format!("{path}:")),
        "{:?}",
        outcome.problems
    );
    assert!(
        outcome.problems[0].ends_with(KEPT),
        "{:?}",
        outcome.problems
    );
    assert_eq!(text(&lib, "greet"), "Hello Ann!\n");
}

/// A folder large enough to be read and parsed on the thread pool loads as a small one does:
/// diagnostics in file order, collisions qualified the same way, the same result on every load,
/// and a reload after edits matches a fresh load of the edited folder.
#[test]
fn a_large_folder_loads_in_file_order_on_every_load() {
    let dir = tempfile::tempdir().unwrap();
    let write = |i: usize, edit: usize| {
        let body = match (i % 9, edit) {
            // Broken YAML on line 2 (fixed by the edit).
            (0, 0) => "---\ntitle: [unclosed\n---\nx\n".to_string(),
            // Claims a name another file has: a collision, qualified by path.
            (1, _) => format!("---\nname: shared{}\n---\nclaimed by {i} {edit}\n", i % 4),
            // A broken template that falls back to plain substitution.
            (2, _) => format!("---\n---\n{{% if x %}} {{{{ who }}}} {edit}\n"),
            _ => format!("---\ntitle: Prompt {i} edit {edit}\n---\nHello {{{{ who }}}} {i}\n"),
        };
        std::fs::write(dir.path().join(format!("p{i:04}.md")), body).unwrap();
    };
    for i in 0..700 {
        write(i, 0);
    }
    let summary = |lib: &PromptLibrary| {
        let snap = lib.snapshot();
        let diagnostics: Vec<String> = snap
            .registry
            .diagnostics()
            .iter()
            .map(|d| format!("{}:{}: {}", d.path, d.line, d.message))
            .collect();
        let prompts: Vec<(String, String)> = snap
            .registry
            .prompts()
            .map(|t| (t.name.clone(), t.version_hash.clone()))
            .collect();
        (diagnostics, prompts, snap.registry.version())
    };
    let first = summary(&open(dir.path()));
    // The files' own findings in file order, then the collisions found among them, in order.
    let kinds = ["invalid YAML", "is shared by"];
    for kind in kinds {
        let found: Vec<&String> = first.0.iter().filter(|d| d.contains(kind)).collect();
        assert!(found.len() >= 70, "{} diagnostics with {kind}", found.len());
        assert!(found.is_sorted(), "{kind} diagnostics in file order");
    }
    let last_yaml = first.0.iter().rposition(|d| d.contains(kinds[0]));
    let first_shared = first.0.iter().position(|d| d.contains(kinds[1]));
    assert!(last_yaml < first_shared);
    assert!(first.1.len() > 500, "{} prompts", first.1.len());
    for _ in 0..3 {
        assert!(
            summary(&open(dir.path())) == first,
            "the same on every load"
        );
    }

    // Edit a third of the files (broken ones fixed, collisions and fallbacks changed) and
    // reload.
    let lib = open(dir.path());
    for i in (0..700).step_by(3) {
        write(i, 1);
    }
    lib.reload();
    let reloaded = summary(&lib);
    assert_ne!(reloaded.2, first.2, "the version moved");
    let fresh = summary(&open(dir.path()));
    assert!(
        reloaded == fresh,
        "a reload serves what a fresh load serves"
    );
}
