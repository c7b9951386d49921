//! Prompty files (`*.prompty`, Microsoft's format): YAML frontmatter (`name`, `description`,
//! `authors`, `model`, `inputs`, `template`, …) and a Jinja2 body whose `system:`, `user:`,
//! `assistant:` and `developer:` lines start messages.
//!
//! The rules follow microsoft/prompty at commit 75e4d0e595348e129fd46aee053a2d68cc0887a9
//! (Python runtime 2.0.0b3, the newest spec):
//!
//! - `inputs` is a mapping or a list (`runtime/python/prompty/prompty/model/_Agent.py`,
//!   `load_inputs`): a mapping's value is a property (`kind`, `description`, `required`,
//!   `default`, `example`, `enumValues`; `model/contracts/core/_Property.py`) or a scalar, which
//!   is that input's `example`; a list holds properties with `name`. Prompty 1 files write
//!   `type` for `kind` and give sample values in a top-level `sample:` mapping: both are read
//!   too, as the older runtime read them.
//! - Defaults: an input not given takes its `default`; one that is `required` without a
//!   default is an error (`core/pipeline.py`, `validate_inputs`).
//! - Rendering: Jinja2's `ImmutableSandboxedEnvironment` with `keep_trailing_newline=True` and
//!   nothing else set (`renderers/jinja2.py`): no autoescape, no `trim_blocks`, undefined values
//!   print as nothing; values print as Python writes them (`True`, `None`, `['a']`).
//! - Messages: a line that is only a role and a colon (`_BOUNDARY_RE` of `parsers/prompty.py`,
//!   `system|user|assistant|developer`, optionally `#`-prefixed and with `[attr=…]`) starts a
//!   message; text before the first one is a system message; each message's text is stripped of
//!   its leading and trailing blank lines (`_build_message`).

use std::sync::LazyLock;

use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value as JinjaValue};
use regex::Regex;
use serde_json::{Map, Value};

use super::DeclaredArgument;
use super::dotprompt::BodyError;
use super::segment::Segment;

/// Instruction budget of one render (the same as promptd's own templates).
const FUEL: u64 = 2_000_000;
const RECURSION_LIMIT: usize = 64;

/// The whole body is text: arguments come from `inputs`, and the render is Jinja's.
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    if body.is_empty() {
        Vec::new()
    } else {
        vec![Segment::Text(body)]
    }
}

/// The JSON type of a Prompty `kind` (`float` is a number); other kinds (`thread`, `image`,
/// `file`, …) have none.
fn kind_type(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "string" => "string",
        "integer" => "integer",
        "float" | "number" => "number",
        "boolean" => "boolean",
        "array" => "array",
        "object" => "object",
        _ => return None,
    })
}

/// The kind `Property.load` gives a scalar written in place of a property.
fn scalar_kind(v: &Value) -> Option<&'static str> {
    match v {
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_f64() => Some("number"),
        Value::Number(_) => Some("integer"),
        Value::String(_) => Some("string"),
        _ => None,
    }
}

/// Whether a frontmatter value is a reference Prompty resolves when it loads the file
/// (`${file:schema.json}`, `${env:NAME}`), which promptd does not read.
pub fn is_reference(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|r| r.trim_start().starts_with("${"))
}

/// The arguments a file's `inputs` (and Prompty 1's top-level `sample`) declare. `line_of`
/// finds the file line of a frontmatter key; an error names the line at fault.
pub fn input_arguments(
    inputs: Option<&Value>,
    sample: Option<&Value>,
    line_of: impl Fn(&str) -> usize,
) -> Result<Vec<DeclaredArgument>, (usize, String)> {
    let mut out: Vec<DeclaredArgument> = Vec::new();
    match inputs {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, v) in map {
                let line = line_of(name);
                let arg = match v {
                    Value::Object(fields) => property(name, fields, line)?,
                    Value::Array(_) => {
                        return Err((
                            line,
                            format!("inputs.{name}: invalid named collection entry category array"),
                        ));
                    }
                    scalar => DeclaredArgument {
                        arg_type: scalar_kind(scalar).map(str::to_string),
                        examples: if scalar.is_null() {
                            Vec::new()
                        } else {
                            vec![scalar.clone()]
                        },
                        ..DeclaredArgument::named(name, line)
                    },
                };
                out.push(arg);
            }
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let Some(fields) = item.as_object() else {
                    return Err((line_of("inputs"), format!("inputs[{i}] must be a mapping")));
                };
                let Some(name) = fields.get("name").and_then(Value::as_str) else {
                    return Err((line_of("inputs"), format!("inputs[{i}] has no `name`")));
                };
                out.push(property(name, fields, line_of(name))?);
            }
        }
        Some(_) => {
            return Err((
                line_of("inputs"),
                "`inputs` must be a mapping or a list of properties".into(),
            ));
        }
    }
    // Prompty 1: `sample:` gives each input an example value (a file reference such as
    // `${file:sample.json}` is not read).
    if let Some(Value::Object(samples)) = sample {
        for (name, v) in samples {
            match out.iter_mut().find(|a| &a.name == name) {
                Some(a) => {
                    if !a.examples.contains(v) {
                        a.examples.push(v.clone());
                    }
                }
                None => out.push(DeclaredArgument {
                    examples: vec![v.clone()],
                    ..DeclaredArgument::named(name, line_of(name))
                }),
            }
        }
    }
    Ok(out)
}

/// One property of `inputs`.
fn property(
    name: &str,
    fields: &Map<String, Value>,
    line: usize,
) -> Result<DeclaredArgument, (usize, String)> {
    let mut arg = DeclaredArgument::named(name, line);
    let kind = fields.get("kind").or_else(|| fields.get("type"));
    if let Some(kind) = kind {
        let Some(kind) = kind.as_str() else {
            return Err((line, format!("inputs.{name}: `kind` must be a string")));
        };
        arg.arg_type = kind_type(kind).map(str::to_string);
    }
    arg.description = fields
        .get("description")
        .filter(|d| !d.is_null())
        .map(super::display_value);
    arg.required = match fields.get("required") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err((
                line,
                format!("inputs.{name}: `required` must be true or false"),
            ));
        }
    };
    arg.default = fields.get("default").filter(|d| !d.is_null()).cloned();
    for key in ["example", "sample"] {
        if let Some(v) = fields.get(key).filter(|v| !v.is_null()) {
            arg.examples.push(v.clone());
        }
    }
    if let Some(e) = fields.get("enumValues").or_else(|| fields.get("enum")) {
        let Some(values) = e.as_array() else {
            return Err((line, format!("inputs.{name}: `enumValues` must be a list")));
        };
        arg.enum_values = Some(values.clone());
    }
    Ok(arg)
}

/// The template format a file declares (`template: jinja2`, or `template: {format: {kind}}`
/// in Prompty 2, or `template: {format: jinja2}`); Jinja2 when none.
pub fn template_format(template: Option<&Value>) -> String {
    let kind = match template {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Object(t)) => match t.get("format") {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(Value::Object(f)) => f.get("kind").and_then(Value::as_str),
            _ => None,
        },
        _ => None,
    };
    kind.unwrap_or("jinja2").to_ascii_lowercase()
}

/// The environment Prompty's Jinja2 renderer sets up, in minijinja.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
            .expect("default delimiters are valid"),
    );
    env.set_formatter(|out, _state, value| {
        if value.is_undefined() {
            return Ok(());
        }
        out.write_str(&python_str(value))
            .map_err(minijinja::Error::from)
    });
    env
}

/// `str(value)` as Python writes it for the values a prompt receives.
fn python_str(value: &JinjaValue) -> String {
    match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().to_string(),
        _ => python_repr(value),
    }
}

/// `repr(value)` as Python writes it (strings quoted, `True`, `None`, lists and dicts).
fn python_repr(value: &JinjaValue) -> String {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => "None".into(),
        ValueKind::Bool => if value.is_true() { "True" } else { "False" }.into(),
        ValueKind::String => python_quote(value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<String> = value
                .try_iter()
                .map(|it| it.map(|v| python_repr(&v)).collect())
                .unwrap_or_default();
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let items: Vec<String> = value
                .try_iter()
                .map(|it| {
                    it.map(|k| {
                        let v = value.get_item(&k).unwrap_or_default();
                        format!("{}: {}", python_repr(&k), python_repr(&v))
                    })
                    .collect()
                })
                .unwrap_or_default();
            format!("{{{}}}", items.join(", "))
        }
        _ => value.to_string(),
    }
}

/// A string as Python's `repr` quotes it: single quotes unless the text has one and no double.
fn python_quote(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The body line and column of a minijinja error.
fn body_error(body: &str, e: &minijinja::Error) -> BodyError {
    let column = e.range().map(|r| {
        let before = body.get(..r.start).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        before[line_start..].chars().count() + 1
    });
    let kind = e.kind().to_string();
    BodyError {
        line: e.line(),
        column,
        message: match e.detail() {
            Some(d) => format!("{kind}: {d}"),
            None => kind,
        },
        too_large: false,
    }
}

/// Compiles a body as Jinja2; the error names the body line and column.
pub fn check_syntax(body: &str) -> Result<(), BodyError> {
    let env = environment();
    env.template_from_str(body)
        .map(|_| ())
        .map_err(|e| body_error(body, &e))
}

/// Renders a body with `data` as Prompty's Jinja2 renderer does.
pub fn render(body: &str, data: &Map<String, Value>, max_len: usize) -> Result<String, BodyError> {
    let env = environment();
    let t = env
        .template_from_str(body)
        .map_err(|e| body_error(body, &e))?;
    let text = t
        .render(JinjaValue::from(minijinja::value::Serde(data)))
        .map_err(|e| body_error(body, &e))?;
    if text.len() > max_len {
        return Err(BodyError {
            line: None,
            column: None,
            message: format!("substituted text would be larger than {max_len} bytes"),
            too_large: true,
        });
    }
    Ok(text)
}

/// The names a body reads that no `inputs` declare (for a file without `inputs`).
pub fn template_variables(body: &str) -> Vec<String> {
    let env = environment();
    let Ok(t) = env.template_from_str(body) else {
        return Vec::new();
    };
    let mut names: Vec<String> = t.undeclared_variables(false).into_iter().collect();
    // In order of first appearance, for a stable and readable listing.
    names.sort_by_key(|n| body.find(n.as_str()).unwrap_or(usize::MAX));
    names
}

static BOUNDARY: LazyLock<Regex> = LazyLock::new(|| {
    // `_BOUNDARY_RE` of parsers/prompty.py, matched against a stripped line (possessive
    // quantifiers written as plain ones).
    Regex::new(
        r#"(?i)^\s*#?\s*(system|user|assistant|developer)(\[(?:\w+\s*=\s*(?:"[^"]*"|[^",\]]*)\s*,?\s*)+\])?\s*:\s*$"#,
    )
    .expect("prompty role regex")
});

/// The messages of a rendered text: `(role, text)` with Prompty's role (`system`, `user`,
/// `assistant`, `developer`).
pub fn messages(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut role = "system".to_string();
    let mut lines: Vec<&str> = Vec::new();
    let flush = |role: &str, lines: &mut Vec<&str>, out: &mut Vec<(String, String)>| {
        if !lines.is_empty() {
            let content = lines.join("\n");
            out.push((role.to_string(), content.trim_matches('\n').to_string()));
            lines.clear();
        }
    };
    for line in text.lines() {
        if let Some(c) = BOUNDARY.captures(line.trim()) {
            flush(&role, &mut lines, &mut out);
            role = c[1].to_ascii_lowercase();
            continue;
        }
        lines.push(line);
    }
    flush(&role, &mut lines, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_as_a_map_with_defaults_examples_and_shorthands() {
        let inputs = json!({
            "firstName": {"kind": "string", "description": "first name", "default": "Jane", "example": "Ada"},
            "question": {"type": "string", "required": true},
            "count": 3,
            "level": {"kind": "string", "enumValues": ["low", "high"]},
        });
        let sample = json!({"question": "What is 2+2?", "context": "math"});
        let args = input_arguments(Some(&inputs), Some(&sample), |_| 2).unwrap();
        let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            ["firstName", "question", "count", "level", "context"]
        );
        assert_eq!(args[0].default, Some(json!("Jane")));
        assert_eq!(args[0].examples, vec![json!("Ada")]);
        assert_eq!(args[0].description.as_deref(), Some("first name"));
        assert!(args[1].required && !args[0].required);
        assert_eq!(args[1].examples, vec![json!("What is 2+2?")]);
        assert_eq!(args[2].arg_type.as_deref(), Some("integer"));
        assert_eq!(args[2].examples, vec![json!(3)]);
        assert_eq!(args[3].enum_values, Some(vec![json!("low"), json!("high")]));
        assert_eq!(args[4].examples, vec![json!("math")]);
    }

    #[test]
    fn inputs_as_a_list_and_errors() {
        let inputs = json!([{"name": "q", "kind": "float"}]);
        let args = input_arguments(Some(&inputs), None, |_| 1).unwrap();
        assert_eq!(args[0].arg_type.as_deref(), Some("number"));
        let bad = json!({"q": ["a"]});
        let (line, msg) = input_arguments(Some(&bad), None, |_| 6).unwrap_err();
        assert_eq!(line, 6);
        assert!(msg.contains("array"), "{msg}");
    }

    #[test]
    fn renders_like_jinja2_defaults() {
        let body = "system:\nYou help {{ name }}.\n{% if vip %}\nVIP: {{ vip }}\n{% endif %}\nuser:\n{{ question }} {{ missing }}{{ tags }} {{ none }} <b>\n";
        let data = json!({"name": "Ada & co", "vip": true, "question": "Why?", "tags": ["a", "it's"], "none": null});
        let text = render(body, data.as_object().unwrap(), 1 << 20).unwrap();
        assert_eq!(
            text,
            "system:\nYou help Ada & co.\n\nVIP: True\n\nuser:\nWhy? ['a', \"it's\"] None <b>\n"
        );
    }

    #[test]
    fn role_lines_cut_messages() {
        let m =
            messages("intro\nSystem:\nBe brief.\n\n# user:\nHi\nassistant[name=\"bot\"]:\nHello\n");
        assert_eq!(
            m,
            vec![
                ("system".to_string(), "intro".to_string()),
                ("system".to_string(), "Be brief.".to_string()),
                ("user".to_string(), "Hi".to_string()),
                ("assistant".to_string(), "Hello".to_string()),
            ]
        );
        // A role word inside a sentence is text.
        assert_eq!(messages("user: hello").len(), 1);
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let e = check_syntax("ok\n{% if x %}\nno end").unwrap_err();
        assert!(e.line.is_some(), "{e:?}");
        assert!(check_syntax("{{ x }}").is_ok());
        assert_eq!(
            template_variables("{{ b }} {{ a }} {% for x in xs %}{{ x }}{% endfor %}"),
            ["b", "a", "xs"]
        );
    }

    #[test]
    fn files_and_names() {
        use crate::dialect::{Dialect, first_text_line_description, name_from_path};
        assert_eq!(Dialect::recognise(None, "chat.prompty"), Dialect::Prompty);
        assert_eq!(name_from_path("support/chat.prompty"), "support:chat");
        assert!(Dialect::promptd_folder_accepts("chat.prompty"));
        assert_eq!(Dialect::parse("Prompty"), Some(Dialect::Prompty));
        assert_eq!(
            first_text_line_description("system:\n{% if a %}\nYou answer.\n"),
            Some("You answer.".into())
        );
    }

    #[test]
    fn template_formats() {
        assert_eq!(template_format(None), "jinja2");
        assert_eq!(template_format(Some(&json!("mustache"))), "mustache");
        assert_eq!(
            template_format(Some(&json!({"format": {"kind": "Jinja2"}}))),
            "jinja2"
        );
    }
}
