//! `promptd check`: compiler-style lints over every prompt of a snapshot.
//!
//! Errors: YAML/frontmatter errors, name collisions that cannot be qualified, Jinja syntax errors of prompts that declare
//! `engine: jinja`, include cycles, missing includes, invalid argument schemas, and templates
//! that fail a trial render (e.g. out of fuel). Warnings: the plain-substitution fallback,
//! undefined variables, renders that would drop text (`lossy-render`), name collisions served
//! under qualified names, declared but unused arguments, defaults that reference a variable no
//! layer defines, and unknown argument fields.

use serde_json::{Map, Value};

use crate::dialect::plain;
use crate::library::Snapshot;
use crate::registry::{ArgType, Diagnostic, Engine, PromptTemplate, Severity};
use crate::render::clock::{COMPUTED_VARIABLES, FROZEN_NOW};
use crate::render::{Clock, RenderError, is_variable_name};
use promptd_base::config::{KNOWN_KEYS, ProjectConfig};

/// Lints every prompt; diagnostics sorted by path and line.
pub fn check(snap: &Snapshot) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = snap.registry.diagnostics().to_vec();
    for prompt in snap.registry.prompts() {
        check_prompt(snap, prompt, &mut out);
    }
    out.sort_by(|a, b| (&a.path, a.line, a.column).cmp(&(&b.path, b.line, b.column)));
    out.dedup();
    out
}

/// The lints of one prompt: its file's load diagnostics and its own checks, sorted by line.
pub fn check_prompt_file(snap: &Snapshot, prompt: &PromptTemplate) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = snap
        .registry
        .diagnostics()
        .iter()
        .filter(|d| d.path == prompt.path)
        .cloned()
        .collect();
    check_prompt(snap, prompt, &mut out);
    out.sort_by_key(|d| (d.line, d.column));
    out.dedup();
    out
}

fn diag(
    prompt: &PromptTemplate,
    severity: Severity,
    line: usize,
    code: &'static str,
    message: String,
) -> Diagnostic {
    Diagnostic {
        severity,
        path: prompt.path.clone(),
        line,
        column: 1,
        code,
        message,
    }
}

/// The file line where `needle` first appears in the body (the body start if nowhere).
fn line_of(prompt: &PromptTemplate, needle: &str) -> usize {
    prompt
        .body
        .lines()
        .position(|l| l.contains(needle))
        .map_or(prompt.body_line, |i| prompt.body_line + i)
}

fn known_elsewhere(name: &str, config: &ProjectConfig) -> bool {
    COMPUTED_VARIABLES.contains(&name)
        || crate::render::clock::days_ago_count(name).is_some()
        || KNOWN_KEYS.iter().any(|(_, v)| *v == name)
        || config.variables.contains_key(name)
}

fn check_prompt(snap: &Snapshot, prompt: &PromptTemplate, out: &mut Vec<Diagnostic>) {
    let first = out.len();
    for w in &prompt.parse_warnings {
        out.push(Diagnostic {
            column: w.column.max(1),
            ..diag(prompt, Severity::Warning, w.line, w.code, w.message.clone())
        });
    }
    if let Err(RenderError::InvalidSchema {
        line,
        message,
        argument,
        ..
    }) = snap.renderer.check_schemas(&prompt.name)
    {
        out.push(diag(
            prompt,
            Severity::Error,
            line,
            "argument-schema",
            format!("argument `{argument}` has an invalid JSON Schema: {message}"),
        ));
    }
    for (line, e) in snap
        .renderer
        .check_defaults(&prompt.name)
        .unwrap_or_default()
    {
        let message = match e {
            RenderError::InvalidArgument {
                argument, message, ..
            } => format!("the default of argument `{argument}` is refused: {message}"),
            other => other.to_string(),
        };
        out.push(diag(
            prompt,
            Severity::Error,
            line.max(1),
            "argument-default",
            message,
        ));
    }
    let Some(analysis) = snap.renderer.analysis(&prompt.name) else {
        return;
    };
    if let Some(RenderError::Template {
        line,
        column,
        message,
        ..
    }) = &analysis.syntax_error
    {
        out.push(Diagnostic {
            column: *column,
            ..diag(
                prompt,
                Severity::Error,
                *line,
                "template-syntax",
                message.clone(),
            )
        });
        return;
    }
    if let Some(reason) = &analysis.fallback_reason {
        out.push(diag(
            prompt,
            Severity::Warning,
            prompt.body_line,
            "plain-fallback",
            format!(
                "not valid Jinja ({reason}); rendered by plain {{{{ key }}}} substitution. \
                 Declare `engine: plain` to make this explicit, or fix the syntax"
            ),
        ));
    }
    if let Some(chain) = &analysis.include_cycle {
        out.push(diag(
            prompt,
            Severity::Error,
            line_of(prompt, "include"),
            "include-cycle",
            format!("include cycle: {}", chain.join(" -> ")),
        ));
    }
    for inc in &analysis.includes {
        match snap.registry.resolve_include(inc) {
            Ok(Some(_)) => {}
            Ok(None) => out.push(diag(
                prompt,
                Severity::Error,
                line_of(prompt, inc),
                "include-missing",
                format!("included template `{inc}` is not a prompt name nor a file of any root"),
            )),
            Err(e) => out.push(diag(
                prompt,
                Severity::Error,
                line_of(prompt, inc),
                "include-escape",
                e.to_string(),
            )),
        }
    }
    for v in &analysis.variables {
        let declared = prompt.arguments.iter().any(|a| &a.name == v);
        if !declared && !known_elsewhere(v, &snap.config) {
            // Jinja prints nothing for it: the render would lose the expression's text.
            let lossy = analysis.engine == crate::registry::Engine::Jinja
                && !crate::dialect::jinja::serve_as_plain(
                    prompt.engine.is_some(),
                    &prompt.body,
                    &[v.as_str()],
                );
            if lossy {
                out.push(diag(
                    prompt,
                    Severity::Warning,
                    line_of(prompt, v),
                    "lossy-render",
                    format!(
                        "a render drops the text of every expression that reads `{v}` unless a caller supplies it; \
                         declare it as an argument, or `engine: plain` (or another dialect) to keep such text verbatim"
                    ),
                ));
            }
            out.push(diag(
                prompt,
                Severity::Warning,
                line_of(prompt, v),
                "undefined-variable",
                format!(
                    "variable `{v}` is not a declared argument, a computed variable or a config value"
                ),
            ));
        }
    }
    for arg in &prompt.arguments {
        if !analysis.variables.contains(&arg.name) {
            out.push(diag(
                prompt,
                Severity::Warning,
                arg.line,
                "unused-argument",
                format!(
                    "argument `{}` is declared but the template never uses it",
                    arg.name
                ),
            ));
        }
        if let Some(Value::String(d)) = &arg.default {
            for key in plain::placeholders(d) {
                let has_source = known_elsewhere(&key, &snap.config);
                if is_variable_name(&key) && !has_source {
                    out.push(diag(
                        prompt,
                        Severity::Warning,
                        arg.line,
                        "no-source",
                        format!(
                            "default of `{}` references `{key}`, which no lower layer (computed, config) defines",
                            arg.name
                        ),
                    ));
                }
            }
        }
    }
    // A trial render only adds news when nothing else is wrong with the prompt.
    let clean = !out[first..].iter().any(|d| d.severity == Severity::Error);
    if analysis.engine == Engine::Jinja && clean {
        trial_render(snap, prompt, out);
    }
}

/// Renders with a frozen clock and a sample value for each required argument, to catch
/// runtime failures (fuel, bad filters, errors inside includes).
fn trial_render(snap: &Snapshot, prompt: &PromptTemplate, out: &mut Vec<Diagnostic>) {
    let mut args = Map::new();
    for a in prompt.arguments.iter().filter(|a| a.required) {
        let sample = a
            .suggested_values()
            .into_iter()
            .next()
            .map(Value::String)
            .unwrap_or_else(|| match a.declared_type() {
                Some(ArgType::Integer | ArgType::Number) => {
                    Value::from(a.minimum.as_deref().and_then(Value::as_i64).unwrap_or(1))
                }
                Some(ArgType::Boolean) => Value::Bool(true),
                Some(ArgType::Array) => Value::Array(vec![]),
                Some(ArgType::Object) => Value::Object(Map::new()),
                _ => Value::String("sample".into()),
            });
        args.insert(a.name.clone(), sample);
    }
    let clock = Clock::parse(FROZEN_NOW).expect("FROZEN_NOW is RFC 3339");
    if let Err(e) = snap.render_template(prompt, &args, &clock) {
        let (line, message) = match &e {
            RenderError::Template {
                line,
                message,
                path,
                ..
            } if *path == prompt.path => (*line, message.clone()),
            other => (prompt.body_line, other.to_string()),
        };
        if !e.is_caller_error() {
            out.push(diag(prompt, Severity::Error, line, "render", message));
        }
    }
}
