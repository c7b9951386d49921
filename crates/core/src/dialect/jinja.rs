//! promptd's own dialect: Jinja templates (rendered by `render` with minijinja), with plain
//! `{{ key }}` substitution for files that are not Jinja. This module holds the rules that keep
//! that fallback lossless.

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
