//! GitHub Copilot's scoped instructions: `.github/instructions/*.instructions.md` apply when
//! their `applyTo` globs match the current file; without `applyTo` a file is attached manually
//! only, so it is listed, not included. (The repository-wide
//! `.github/copilot-instructions.md` is a plain always-on file.)

use std::path::Path;

use super::discovery::{Discovery, FrontedRule, RuleFormat};
use super::glob::globs;

/// Applies or logs one `*.instructions.md` file.
pub(super) fn scoped(discovery: &mut Discovery, file: &Path) {
    let format = RuleFormat::CopilotScoped;
    let Some(FrontedRule { front, body, note }) = discovery.read_fronted(file, format) else {
        return;
    };
    let globs = globs(&front, "applyTo");
    if globs.is_empty() {
        let path = discovery.rel(file);
        discovery.skip(
            &path,
            format,
            format!("no applyTo: attached manually only; listed, not included{note}"),
        );
    } else {
        discovery.by_globs(file, format, &body, "applyTo", &globs, &note);
    }
}
