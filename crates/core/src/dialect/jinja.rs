//! promptd's own dialect: Jinja templates (rendered by `render` with minijinja), with plain
//! `{{ key }}` substitution for files that are not Jinja. This module holds the rules that decide
//! which files those are and keep that fallback lossless.
//!
//! A file without `engine:` whose body does not compile as Jinja is served by plain
//! substitution only when it is shown not to be Jinja ([`shown_not_jinja`]): its `{{ … }}` are
//! another tool's (`{{90_days_ago}}`, Handlebars' `{{#if x}}`, Go's `{{ .Values.image }}`,
//! `{{ your name here }}`). A body that uses a Jinja statement (`{% … %}`) or leaves a `{{`
//! unclosed on its line (`{{ name }`) is a Jinja template with a mistake: an error, never
//! served as raw template text.

/// Whether a body uses Jinja statements (`{% … %}`): such a file is a Jinja template. A body
/// with only `{{ … }}` expressions may as well be another tool's placeholders (GitHub Actions
/// `${{ matrix.os }}`, Go templates, Handlebars).
pub fn has_statements(body: &str) -> bool {
    body.contains("{%")
}

/// Whether a file that declares no engine is rendered by plain substitution because Jinja would
/// drop the text of expressions nobody gives a value (`undefined`): only for bodies without
/// statements, where plain substitution means the same thing for the variables that do have
/// values.
pub fn serve_as_plain(declared_engine: bool, body: &str, undefined: &[&str]) -> bool {
    !declared_engine && !undefined.is_empty() && !has_statements(body)
}

/// Whether a body that does not compile as Jinja is shown not to be Jinja: outside Markdown code
/// (fenced blocks and inline code spans, where `{{` and `{%` are quoted text), it uses no
/// statement (`{%`) and every `{{` is closed by a `}}` later on its line. Anything else is a
/// Jinja template with a syntax error.
pub fn shown_not_jinja(body: &str) -> bool {
    let mut fence: Option<&str> = None;
    body.lines().all(|line| {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            return true;
        }
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                fence = Some(marker);
                return true;
            }
        }
        let prose = without_code_spans(line);
        if prose.contains("{%") {
            return false;
        }
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("{{") {
            let after = &rest[at + 2..];
            let Some(close) = after.find("}}") else {
                return false;
            };
            rest = &after[close + 2..];
        }
        true
    })
}

/// A line without its inline code spans (`` `…` ``, closed on the line).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let ticks = rest[open..].bytes().take_while(|b| *b == b'`').count();
        let delimiter = &rest[open..open + ticks];
        let after = &rest[open + ticks..];
        match after.find(delimiter) {
            Some(close) => {
                out.push_str(&rest[..open]);
                rest = &after[close + ticks..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_tools_placeholders_are_not_jinja_and_jinja_typos_are() {
        for foreign in [
            "Report for {{90_days_ago}}",
            "{{#if ready}}Ship{{/if}} and {{{raw}}}",
            "image {{ .Values.image }}",
            "Fill in {{ your product name }} and {{ a }} {{ b }}",
            "Extra `}}` without a matching `{{` | and `{% raw %}` quoted",
            "```jinja\n{% if x %}\n```\nthen {{ .Values.x }}",
        ] {
            assert!(shown_not_jinja(foreign), "{foreign}");
        }
        for typo in [
            "Hello {{ name }\nmore",
            "{% if name %}yes{% endiff %}",
            "{% for x in xs %}{{ x }}",
            "a {{ b }} and {{ c",
            "`{{ quoted }}` then {{ name }",
        ] {
            assert!(!shown_not_jinja(typo), "{typo}");
        }
    }
}
