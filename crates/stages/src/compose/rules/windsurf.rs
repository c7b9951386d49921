//! Windsurf's rules: `.windsurf/rules/*.md` by their `trigger`: `always_on` is always on,
//! `glob` applies when `globs` match the current file, `model_decision` and `manual` (and a
//! missing trigger) are listed, not included. (The legacy `.windsurfrules` is a plain always-on
//! file without frontmatter.)

use std::path::Path;

use super::discovery::{Discovery, FrontedRule, RuleFormat};
use super::glob::globs;

/// Applies or logs one `.windsurf/rules/*.md` file.
pub(super) fn rule(discovery: &mut Discovery, file: &Path) {
    let format = RuleFormat::WindsurfRule;
    let Some(FrontedRule { front, body, note }) = discovery.read_fronted(file, format) else {
        return;
    };
    let path = discovery.rel(file);
    match front.text("trigger").as_str() {
        "always_on" => {
            discovery.include(file, format, true, &body, format!("trigger: always_on{note}"));
        }
        "glob" => {
            let globs = globs(&front, "globs");
            if globs.is_empty() {
                discovery.skip(&path, format, format!("trigger: glob without globs; listed, not included{note}"));
            } else {
                discovery.by_globs(file, format, &body, "globs", &globs, &note);
            }
        }
        "model_decision" => discovery.skip(&path, format, format!(
            "trigger: model_decision: Windsurf lets the model decide from the description; listed, not included{note}"
        )),
        "manual" => discovery.skip(&path, format, format!(
            "trigger: manual: applies only when @-mentioned; listed, not included{note}"
        )),
        "" => discovery.skip(&path, format, format!("no trigger: treated as manual; listed, not included{note}")),
        other => discovery.skip(&path, format, format!("unknown trigger `{other}`; listed, not included{note}")),
    }
}
