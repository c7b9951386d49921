//! Cursor's rule files: `.cursor/rules/*.mdc` and `.cursor/rules.d/*.mdc` (the legacy
//! `.cursorrules` and single-file `.cursor/rules` are plain always-on files).
//!
//! An `.mdc` rule with `alwaysApply: true` is always on; else one with `globs` applies when they
//! match the current file; an *agent-requested* rule (description only) and a *manual* one
//! (nothing) are listed, not included.
//!
//! Cursor's own files are not strict YAML: `globs: *.ts,src/**/*.tsx` (unquoted, which YAML reads
//! as an alias), comma-separated globs, quoted globs, `alwaysApply: "true"` as a string, globs as
//! a YAML list or a bare string. The frontmatter is read leniently, as Cursor itself does
//! ([`promptd_core::registry::frontmatter::LenientFrontmatter`]), and the ledger says when it was read
//! line by line.

use std::path::Path;

use super::discovery::{Discovery, FrontedRule, RuleFormat};
use super::glob::globs;

/// Applies or logs one `.mdc` rule.
pub(super) fn mdc(discovery: &mut Discovery, file: &Path) {
    let format = RuleFormat::CursorMdc;
    let Some(FrontedRule { front, body, note }) = discovery.read_fronted(file, format) else {
        return;
    };
    let globs = globs(&front, "globs");
    if front.flag("alwaysApply") {
        discovery.include(
            file,
            format,
            true,
            &body,
            format!("alwaysApply: true{note}"),
        );
    } else if !globs.is_empty() {
        discovery.by_globs(file, format, &body, "globs", &globs, &note);
    } else if !front.text("description").is_empty() {
        let path = discovery.rel(file);
        discovery.skip(&path, format, format!(
            "agent-requested (description only): Cursor lets the model decide; listed, not included{note}"
        ));
    } else {
        let path = discovery.rel(file);
        discovery.skip(&path, format, format!(
            "manual (no alwaysApply, globs or description): applies only when @-mentioned; listed, not included{note}"
        ));
    }
}
