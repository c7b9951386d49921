//! Glob-driven lint snapshots: each folder under `tests/fixtures/check/` is a prompt root; the
//! snapshot is `promptd check`'s compiler-style output for it.

use crate::support;

use std::fmt::Write;

use promptd::registry::Severity;

#[test]
fn check_fixtures() {
    insta::glob!("fixtures/check/*", |dir| {
        let lib = support::library(&[dir.to_path_buf()], false, None, "2026-01-15");
        let diags = promptd::lint::check(&lib.snapshot());
        let mut out = String::new();
        for d in &diags {
            writeln!(out, "{d}").unwrap();
        }
        let errors = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        writeln!(
            out,
            "{errors} error(s), {} warning(s)",
            diags.len() - errors
        )
        .unwrap();
        insta::assert_snapshot!(support::redact(&out, dir));
    });
}

#[test]
fn builtin_prompts_pass_check_without_warnings() {
    let lib = support::library(&[], true, None, "2026-01-15");
    let snap = lib.snapshot();
    let diags = promptd::lint::check(&snap);
    assert!(
        diags.is_empty(),
        "built-in prompts must lint clean:\n{diags:#?}"
    );
    let users = snap
        .registry
        .prompts()
        .filter(|p| p.category == promptd::registry::PromptCategory::User)
        .count();
    assert!(users >= 6, "at least six user prompts ship, found {users}");
}
