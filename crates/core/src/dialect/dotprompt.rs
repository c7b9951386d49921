//! Dotprompt files (`*.prompt`, Google's format that Firebase Genkit reads): YAML frontmatter
//! (`model`, `config`, `input`, `output`, …) and a Handlebars body.
//!
//! Every rule here follows the reference implementation, google/dotprompt at commit
//! aa4bf02119c3c018e6e384e59cb9038655c00580 (js package 1.1.2), and its documentation at
//! google.github.io/dotprompt (reference/frontmatter, reference/picoschema, reference/template):
//!
//! - Names: `[name](.[variant]).prompt`, the variant being the last dot-separated part, folders
//!   part of the name (`js/src/stores/dir.ts`, `parsePromptFilename`). promptd keeps the variant
//!   in the name (`greet.formal`, as Genkit names a variant's action: `${name}.${variant}`,
//!   firebase/genkit `js/genkit/src/genkit.ts`), since two prompts cannot share one name.
//! - Partials: files whose name starts with `_` are partials, not prompts (`dir.ts`,
//!   `isPartial`); `{{> name}}` loads `_name.prompt` (`dir.ts`, `loadPartial`), resolved before
//!   the template compiles (`js/src/dotprompt.ts`, `resolvePartials`).
//! - Arguments: `input.schema`, Picoschema or JSON Schema (`js/src/picoschema.ts`), and
//!   `input.default`, merged under the caller's input: the render context is
//!   `{...input.default, ...data.input}` (`dotprompt.ts`, `renderFunc`).
//! - Rendering: Handlebars with `noEscape: true` and `knownHelpersOnly: true` (`dotprompt.ts`,
//!   `compile`): nothing is HTML-escaped, and only Handlebars' built-in helpers (`if`, `unless`,
//!   `each`, `with`, `lookup`, `log`) and Dotprompt's (`js/src/helpers.ts`: `json`, `role`,
//!   `history`, `section`, `media`, `ifEquals`, `unlessEquals`) exist.
//! - Messages: `role` and `history` write markers that `toMessages` (`js/src/parse.ts`) cuts
//!   the rendered text at. promptd writes its own message markers there instead (see
//!   [`finish`]).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use handlebars::{
    Context, Handlebars, Helper, HelperResult, Output, RenderContext, RenderErrorReason,
    Renderable, no_escape,
};
use regex::Regex;
use serde_json::{Map, Value};

use super::DeclaredArgument;
use super::segment::{Key, Segment, Slot};

/// Whether a file name is a Dotprompt prompt (`x.prompt`, not the partial `_x.prompt`).
pub fn is_prompt_file(file_name: &str) -> bool {
    file_name.ends_with(".prompt") && !file_name.starts_with('_') && file_name != ".prompt"
}

/// The variant a file name declares (`greet.formal.prompt` → `formal`): the last of two or
/// more dot-separated parts before `.prompt` (`dir.ts`, `parsePromptFilename`).
pub fn variant_of(rel_path: &str) -> Option<&str> {
    let file = rel_path.rsplit('/').next()?;
    let stem = file.strip_suffix(".prompt")?;
    let (_, variant) = stem.rsplit_once('.')?;
    (!variant.is_empty()).then_some(variant)
}

/// A body-relative problem: 1-based line and column when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    /// The render stopped at its size limit.
    pub too_large: bool,
}

impl BodyError {
    fn new(message: impl Into<String>) -> BodyError {
        BodyError {
            line: None,
            column: None,
            message: message.into(),
            too_large: false,
        }
    }
}

/// Compiles a body as Handlebars; the error names the body line and column (for a block
/// that is never closed or closed by another name, the line of its opening tag).
pub fn check_syntax(body: &str) -> Result<(), BodyError> {
    let Err(e) = handlebars::Template::compile(body) else {
        return Ok(());
    };
    if let Some(unbalanced) = unbalanced_block(body) {
        return Err(unbalanced);
    }
    Err(BodyError {
        line: e.pos().map(|p| p.0),
        column: e.pos().map(|p| p.1),
        message: format!("invalid Handlebars template: {}", e.reason()),
        too_large: false,
    })
}

/// The first block a body opens and never closes (or closes with another name), for a
/// clearer message than the parser's.
fn unbalanced_block(body: &str) -> Option<BodyError> {
    static COMMENT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)\{\{!--.*?--\}\}|\{\{![^}]*\}\}").expect("comment regex")
    });
    static TAG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\{\{~?\s*(?:([#^])\s*>?\s*|/\s*)([A-Za-z_][A-Za-z0-9_.-]*)")
            .expect("block tag regex")
    });
    // Comments blanked out, every other byte where it was.
    let mut text = body.to_string();
    for m in COMMENT.find_iter(body) {
        text.replace_range(m.range(), &" ".repeat(m.len()));
    }
    let at = |offset: usize| {
        let before = &body[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count()
            + 1;
        (Some(line), Some(column))
    };
    let mut open: Vec<(String, usize)> = Vec::new();
    for c in TAG.captures_iter(&text) {
        let start = c.get(0).expect("whole match").start();
        let name = c[2].to_string();
        if c.get(1).is_some() {
            open.push((name, start));
            continue;
        }
        match open.pop() {
            Some((opened, _)) if opened == name => {}
            Some((opened, from)) => {
                let (line, column) = at(start);
                let (from_line, _) = at(from);
                return Some(BodyError {
                    line,
                    column,
                    message: format!(
                        "invalid Handlebars template: `{{{{/{name}}}}}` closes `{{{{#{opened}}}}}` of line {}",
                        from_line.unwrap_or(1)
                    ),
                    too_large: false,
                });
            }
            None => {
                let (line, column) = at(start);
                return Some(BodyError {
                    line,
                    column,
                    message: format!(
                        "invalid Handlebars template: `{{{{/{name}}}}}` closes no block"
                    ),
                    too_large: false,
                });
            }
        }
    }
    let (name, from) = open.pop()?;
    let (line, column) = at(from);
    Some(BodyError {
        line,
        column,
        message: format!("invalid Handlebars template: `{{{{#{name}}}}}` is never closed"),
        too_large: false,
    })
}

static IDENT_EXPR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{~?\s*([A-Za-z_][A-Za-z0-9_]*)\s*~?\}\}").expect("dotprompt variable regex")
});
static BLOCK_ARG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{~?#(?:if|unless|each|with)\s+([A-Za-z_][A-Za-z0-9_]*)[\s}~]")
        .expect("dotprompt block regex")
});

/// Names a Handlebars body reads at its top level, for a file without `input.schema`: `{{x}}`
/// and the subject of `{{#if x}}`, `{{#each x}}`, … (not `this` nor helpers).
pub fn top_level_names(body: &str) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    let found = IDENT_EXPR
        .captures_iter(body)
        .chain(BLOCK_ARG.captures_iter(body))
        .map(|c| (c[1].to_string(), c.get(1).expect("group").start()));
    let mut all: Vec<(String, usize)> = found
        .filter(|(n, _)| !matches!(n.as_str(), "this" | "else" | "history"))
        .collect();
    all.sort_by_key(|(_, at)| *at);
    for (n, at) in all {
        if !out.iter().any(|(o, _)| *o == n) {
            out.push((n, at));
        }
    }
    out
}

/// The body's top-level variables as slots (used only to derive arguments when the file
/// declares no `input.schema`; rendering is Handlebars').
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut last = 0;
    let mut names = top_level_names(body);
    names.sort_by_key(|(_, at)| *at);
    for (name, at) in names {
        // The slot's raw text is the name itself (its offset gives the argument's line).
        if at < last {
            continue;
        }
        if at > last {
            out.push(Segment::Text(&body[last..at]));
        }
        out.push(Segment::Slot {
            raw: &body[at..at + name.len()],
            slot: Slot {
                key: Key::Arg(name.clone()),
                keep_when_missing: false,
                required: false,
                hint: None,
            },
        });
        last = at + name.len();
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Picoschema (js/src/picoschema.ts at the commit above; google.github.io/dotprompt/reference/
// picoschema).

/// `JSON_SCHEMA_SCALAR_TYPES` of `picoschema.ts`.
const SCALAR_TYPES: &[&str] = &["any", "boolean", "integer", "null", "number", "string"];
/// `WILDCARD_PROPERTY_NAME`: the schema of additional properties, not a property.
const WILDCARD: &str = "(*)";

/// `extractDescription`: `type, description` split at the first comma, the spaces after it
/// dropped.
fn extract_description(input: &str) -> (&str, Option<&str>) {
    match input.split_once(',') {
        None => (input, None),
        Some((t, d)) => (t, Some(d.trim_start_matches(' '))),
    }
}

/// A scalar type written as a string (`string, a name`), as `parsePico` reads it.
fn pico_scalar(s: &str) -> Result<Value, String> {
    let (t, description) = extract_description(s);
    if !SCALAR_TYPES.contains(&t) {
        // Without a schema resolver (promptd has no registered schemas), `mustResolveSchema`
        // throws this.
        return Err(format!("Picoschema: unsupported scalar type '{t}'."));
    }
    let mut out = Map::new();
    if t != "any" {
        out.insert("type".into(), Value::String(t.into()));
    }
    if let Some(d) = description.filter(|d| !d.is_empty()) {
        out.insert("description".into(), Value::String(d.into()));
    }
    Ok(Value::Object(out))
}

/// `parsePico`: a Picoschema object or string to JSON Schema.
fn parse_pico(v: &Value) -> Result<Value, String> {
    let obj = match v {
        Value::String(s) => return pico_scalar(s),
        Value::Object(o) => o,
        other => {
            return Err(format!(
                "Picoschema: only consists of objects and strings. Got: {other}"
            ));
        }
    };
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut additional = Value::Bool(false);
    for (key, value) in obj {
        if key == WILDCARD {
            additional = parse_pico(value)?;
            continue;
        }
        let (name, prop) = pico_property(key, value)?;
        if !key_is_optional(key) {
            required.push(Value::String(name.clone()));
        }
        properties.insert(name, prop);
    }
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), additional);
    Ok(Value::Object(schema))
}

/// `name?` or `name?(type)`: the `?` before the parenthesis makes the property optional.
fn key_is_optional(key: &str) -> bool {
    key.split('(').next().is_some_and(|n| n.ends_with('?'))
}

/// One property of a Picoschema object: its name and JSON Schema (the loop body of
/// `parsePico`).
fn pico_property(key: &str, value: &Value) -> Result<(String, Value), String> {
    let mut parts = key.split('(');
    let name = parts.next().unwrap_or_default();
    let type_info = parts.next();
    let optional = name.ends_with('?');
    let name = name.strip_suffix('?').unwrap_or(name).to_string();
    let Some(type_info) = type_info else {
        let mut prop = parse_pico(value)?;
        // An optional scalar also accepts null.
        if optional && let Some(Value::String(t)) = prop.get("type").cloned() {
            prop["type"] = serde_json::json!([t, "null"]);
        }
        return Ok((name, prop));
    };
    // `typeInfo.substring(0, typeInfo.length - 1)`: the closing parenthesis dropped.
    let inner = &type_info[..type_info.len().saturating_sub(1)];
    let (t, description) = extract_description(inner);
    let mut prop = match t {
        "array" => serde_json::json!({
            "type": if optional { serde_json::json!(["array", "null"]) } else { "array".into() },
            "items": parse_pico(value)?,
        }),
        "object" => {
            let mut p = parse_pico(value)?;
            if optional {
                p["type"] = serde_json::json!(["object", "null"]);
            }
            p
        }
        "enum" => {
            let Value::Array(values) = value else {
                return Err(format!("Picoschema: enum `{name}` must list its values"));
            };
            let mut values = values.clone();
            if optional && !values.contains(&Value::Null) {
                values.push(Value::Null);
            }
            serde_json::json!({ "enum": values })
        }
        other => {
            return Err(format!(
                "Picoschema: parenthetical types must be 'object' or 'array', got: {other}"
            ));
        }
    };
    if let Some(d) = description.filter(|d| !d.is_empty()) {
        prop["description"] = Value::String(d.into());
    }
    Ok((name, prop))
}

/// `PicoschemaParser.parse`: JSON Schema as it is (a `type` of JSON Schema's, or
/// `properties`), else Picoschema.
pub fn input_schema(schema: &Value) -> Result<Value, String> {
    match schema {
        Value::Null => Ok(Value::Null),
        Value::String(s) => pico_scalar(s),
        Value::Object(o) => {
            let json_schema_type = o
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| SCALAR_TYPES.contains(&t) || matches!(t, "object" | "array"));
            if json_schema_type {
                Ok(schema.clone())
            } else if o.get("properties").is_some_and(Value::is_object) {
                let mut s = o.clone();
                s.insert("type".into(), "object".into());
                Ok(Value::Object(s))
            } else {
                parse_pico(schema)
            }
        }
        other => parse_pico(other),
    }
}

/// The arguments a file's `input` declares: each property of `input.schema` (required unless
/// optional; its type, description and enum), and each key of `input.default` as that
/// argument's default. `line_of` finds the file line of a frontmatter key. An error names the
/// Checks an `output.schema` as Dotprompt reads it before every render (`renderMetadata`
/// converts `input.schema` and `output.schema` with Picoschema): a type Picoschema does not know
/// makes every render of the file fail there, so the file is refused here.
pub fn check_output_schema(output: &Value) -> Result<(), String> {
    match output.get("schema") {
        Some(schema) => input_schema(schema).map(|_| ()),
        None => Ok(()),
    }
}

/// key at fault.
pub fn input_arguments(
    input: &Value,
    line_of: impl Fn(&str) -> usize,
) -> Result<Vec<DeclaredArgument>, (usize, String)> {
    let mut out: Vec<DeclaredArgument> = Vec::new();
    let schema_line = line_of("schema");
    let schema =
        input_schema(input.get("schema").unwrap_or(&Value::Null)).map_err(|e| (schema_line, e))?;
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, prop) in props {
            out.push(declared(
                name,
                prop,
                required.contains(&name.as_str()),
                line_of(name),
            ));
        }
    }
    if let Some(defaults) = input.get("default") {
        let Some(defaults) = defaults.as_object() else {
            return Err((
                line_of("default"),
                "`input.default` must be a mapping".into(),
            ));
        };
        for (name, value) in defaults {
            match out.iter_mut().find(|a| &a.name == name) {
                Some(a) => a.default = Some(value.clone()),
                None => out.push(DeclaredArgument {
                    default: Some(value.clone()),
                    ..DeclaredArgument::named(name, line_of(name))
                }),
            }
        }
    }
    Ok(out)
}

/// One property of the compiled input schema as an argument.
fn declared(name: &str, prop: &Value, required: bool, line: usize) -> DeclaredArgument {
    let types: Vec<&str> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let arg_type = types.into_iter().find(|t| *t != "null").map(str::to_string);
    let structured = matches!(arg_type.as_deref(), Some("array" | "object"));
    DeclaredArgument {
        name: name.to_string(),
        required,
        description: prop
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        enum_values: prop
            .get("enum")
            .and_then(Value::as_array)
            .map(|e| e.iter().filter(|v| !v.is_null()).cloned().collect()),
        // Arrays and objects are checked against their whole schema (items, properties).
        schema: structured.then(|| prop.clone()),
        arg_type,
        default: None,
        examples: Vec::new(),
        line,
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering.

/// At most this many partial expansions a render may make (each `{{> x}}` counted with what
/// it expands to): a template is text, not a program that may grow without end.
const MAX_PARTIAL_EXPANSIONS: usize = 10_000;

static PARTIAL_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{~?#?>\s*([A-Za-z0-9_][A-Za-z0-9_./-]*)").expect("partial regex")
});

/// The partials a template names statically (`{{> name}}`), in order.
fn partial_names(source: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in PARTIAL_REF.captures_iter(source) {
        if !out.contains(&c[1].to_string()) {
            out.push(c[1].to_string());
        }
    }
    out
}

/// The file that holds a partial: `_name.prompt`, in the folder its name gives
/// (`dir.ts`, `loadPartial`: `a/b` is `a/_b.prompt`).
pub fn partial_path(name: &str) -> String {
    match name.rsplit_once('/') {
        Some((dir, base)) => format!("{dir}/_{base}.prompt"),
        None => format!("_{name}.prompt"),
    }
}

/// Renders a body with `data`; `partial` gives the body of a partial by name. The text is
/// Handlebars' output with Dotprompt's markers turned into promptd's (see [`finish`]).
pub fn render(
    body: &str,
    data: &Map<String, Value>,
    partial: &dyn Fn(&str) -> Option<String>,
    max_len: usize,
) -> Result<String, BodyError> {
    let mut hb = registry();
    // Partials are resolved before the render, each once, recursively (`resolvePartials`).
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let mut pending = partial_names(body);
    while let Some(name) = pending.pop() {
        if sources.contains_key(&name) {
            continue;
        }
        let Some(src) = partial(&name) else {
            // Left unregistered: Handlebars reports it if the render reaches it.
            continue;
        };
        pending.extend(partial_names(&src));
        sources.insert(name, src);
    }
    expansions(body, &sources)?;
    for (name, src) in &sources {
        hb.register_partial(name, src).map_err(|e| {
            BodyError::new(format!(
                "partial `{name}`: invalid Handlebars template: {}",
                e.reason()
            ))
        })?;
    }
    let mut out = Capped {
        text: Vec::new(),
        max_len,
        over: false,
    };
    if let Err(e) = hb.render_template_to_write(body, data, &mut out) {
        if out.over {
            return Err(BodyError {
                too_large: true,
                ..BodyError::new(format!(
                    "substituted text would be larger than {max_len} bytes"
                ))
            });
        }
        let in_body = e.template_name.is_none();
        return Err(BodyError {
            line: e.line_no.filter(|_| in_body),
            column: e.column_no.filter(|_| in_body),
            message: match e.template_name.as_deref() {
                Some(t) if !in_body => format!("partial `{t}`: {}", e.reason()),
                _ => e.reason().to_string(),
            },
            too_large: false,
        });
    }
    let text = String::from_utf8(out.text).map_err(|e| BodyError::new(e.to_string()))?;
    Ok(finish(&text))
}

/// Counts the partial expansions of a body (a partial named twice counts twice, with all it
/// expands to); a cycle or a count over [`MAX_PARTIAL_EXPANSIONS`] is an error, never a
/// render that cannot end.
fn expansions(body: &str, sources: &BTreeMap<String, String>) -> Result<(), BodyError> {
    fn count(
        source: &str,
        sources: &BTreeMap<String, String>,
        stack: &mut Vec<String>,
        memo: &mut BTreeMap<String, usize>,
    ) -> Result<usize, BodyError> {
        let mut total = 0usize;
        for c in PARTIAL_REF.captures_iter(source) {
            let name = c[1].to_string();
            let Some(src) = sources.get(&name) else {
                continue;
            };
            if stack.contains(&name) {
                stack.push(name);
                return Err(BodyError::new(format!(
                    "partial cycle: {}",
                    stack.join(" -> ")
                )));
            }
            let n = match memo.get(&name) {
                Some(n) => *n,
                None => {
                    stack.push(name.clone());
                    let n = count(src, sources, stack, memo)?;
                    stack.pop();
                    memo.insert(name, n);
                    n
                }
            };
            total = total.saturating_add(1).saturating_add(n);
            if total > MAX_PARTIAL_EXPANSIONS {
                return Err(BodyError::new(format!(
                    "partials expand more than {MAX_PARTIAL_EXPANSIONS} times"
                )));
            }
        }
        Ok(total)
    }
    count(body, sources, &mut Vec::new(), &mut BTreeMap::new()).map(|_| ())
}

/// Handlebars output that stops at `max_len` bytes.
struct Capped {
    text: Vec<u8>,
    max_len: usize,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.text.len() + buf.len() > self.max_len {
            self.over = true;
            return Err(std::io::Error::other("render size limit"));
        }
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Handlebars as Dotprompt configures it: no escaping, no strict mode, Handlebars.js's built-in
/// helpers and Dotprompt's, nothing else (the Rust crate's extra helpers `eq`, `and`, `len`, …
/// are not Handlebars.js built-ins, so `knownHelpersOnly` refuses them).
fn registry() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(false);
    hb.register_escape_fn(no_escape);
    // Handlebars.js indents a standalone partial's lines like the `{{> x}}` line.
    hb.set_prevent_indent(false);
    for extra in [
        "raw", "eq", "ne", "gt", "gte", "lt", "lte", "and", "or", "not", "len",
    ] {
        hb.unregister_helper(extra);
    }
    hb.register_helper("json", Box::new(json_helper));
    // `role(role)`, `history()` and `section(name)` write Dotprompt's markers
    // (`<<<dotprompt:role:${role}>>>`, …), read by [`finish`].
    hb.register_helper(
        "role",
        marker(|h| format!("<<<dotprompt:role:{}>>>", js_text(param(h, 0)))),
    );
    hb.register_helper("history", marker(|_| "<<<dotprompt:history>>>".into()));
    hb.register_helper(
        "section",
        marker(|h| format!("<<<dotprompt:section {}>>>", js_text(param(h, 0)))),
    );
    hb.register_helper("media", Box::new(media_helper));
    hb.register_helper("ifEquals", Box::new(if_equals_helper));
    hb.register_helper("unlessEquals", Box::new(unless_equals_helper));
    hb
}

/// A parameter as JavaScript's template literal writes it (`${x}`).
fn js_text(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".into(),
        Some(other) => other.to_string(),
    }
}

fn param<'a>(h: &'a Helper<'_>, i: usize) -> Option<&'a Value> {
    h.param(i)
        .filter(|p| !p.is_value_missing())
        .map(|p| p.value())
}

/// `json(serializable, {hash: {indent}})`: `JSON.stringify(x, null, indent || 0)`.
fn json_helper(
    h: &Helper<'_>,
    _: &Handlebars<'_>,
    _: &Context,
    _: &mut RenderContext<'_, '_>,
    out: &mut dyn Output,
) -> HelperResult {
    let Some(v) = param(h, 0) else {
        // `JSON.stringify(undefined)` is undefined, which Handlebars writes as nothing.
        return Ok(());
    };
    let indent = h
        .hash_get("indent")
        .and_then(|i| i.value().as_u64())
        .unwrap_or(0)
        .min(10) as usize;
    let text = if indent == 0 {
        serde_json::to_string(v)
    } else {
        let spaces = " ".repeat(indent);
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(spaces.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        serde::Serialize::serialize(v, &mut ser).map(|_| String::from_utf8(buf).unwrap_or_default())
    }
    .map_err(|e| RenderErrorReason::Other(e.to_string()))?;
    out.write(&text)?;
    Ok(())
}

/// A helper that writes the marker `text` makes of its call.
fn marker(text: fn(&Helper<'_>) -> String) -> Box<dyn handlebars::HelperDef + Send + Sync> {
    Box::new(
        move |h: &Helper<'_>,
              _: &Handlebars<'_>,
              _: &Context,
              _: &mut RenderContext<'_, '_>,
              out: &mut dyn Output|
              -> HelperResult {
            out.write(&text(h))?;
            Ok(())
        },
    )
}

/// `media({hash: {url, contentType}})`: `<<<dotprompt:media:url ${url}[ ${contentType}]>>>`.
fn media_helper(
    h: &Helper<'_>,
    _: &Handlebars<'_>,
    _: &Context,
    _: &mut RenderContext<'_, '_>,
    out: &mut dyn Output,
) -> HelperResult {
    let hash = |k: &str| {
        h.hash_get(k)
            .filter(|p| !p.is_value_missing())
            .map(|p| p.value().clone())
    };
    let url = js_text(hash("url").as_ref());
    let content_type = hash("contentType")
        .filter(|c| !matches!(c, Value::Null) && c.as_str() != Some(""))
        .map(|c| format!(" {}", js_text(Some(&c))))
        .unwrap_or_default();
    out.write(&format!("<<<dotprompt:media:url {url}{content_type}>>>"))?;
    Ok(())
}

/// JavaScript's `===` on two parameters (undefined equals only undefined; numbers by value).
fn strictly_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        // Two objects or arrays are never the same object in JavaScript unless one is the
        // other; from a template's data, equal values are the closest reading.
        (a, b) => a == b,
    }
}

fn equals_block<'reg, 'rc>(
    h: &Helper<'rc>,
    r: &'reg Handlebars<'reg>,
    ctx: &'rc Context,
    rc: &mut RenderContext<'reg, 'rc>,
    out: &mut dyn Output,
    when_equal: bool,
) -> HelperResult {
    let equal = strictly_equal(param(h, 0), param(h, 1));
    let branch = if equal == when_equal {
        h.template()
    } else {
        h.inverse()
    };
    if let Some(t) = branch {
        t.render(r, ctx, rc, out)?;
    }
    Ok(())
}

/// `ifEquals(a, b)`: the block when `a === b`, else its `{{else}}`.
fn if_equals_helper<'reg, 'rc>(
    h: &Helper<'rc>,
    r: &'reg Handlebars<'reg>,
    ctx: &'rc Context,
    rc: &mut RenderContext<'reg, 'rc>,
    out: &mut dyn Output,
) -> HelperResult {
    equals_block(h, r, ctx, rc, out, true)
}

/// `unlessEquals(a, b)`: the block when `a !== b`, else its `{{else}}`.
fn unless_equals_helper<'reg, 'rc>(
    h: &Helper<'rc>,
    r: &'reg Handlebars<'reg>,
    ctx: &'rc Context,
    rc: &mut RenderContext<'reg, 'rc>,
    out: &mut dyn Output,
) -> HelperResult {
    equals_block(h, r, ctx, rc, out, false)
}

static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    // `ROLE_AND_HISTORY_MARKER_REGEX` and `MEDIA_AND_SECTION_MARKER_REGEX` of `parse.ts`.
    Regex::new(r"<<<dotprompt:(?:role:([a-z]+)|(history)|media:url(.*?)|section(.*?))>>>")
        .expect("dotprompt marker regex")
});

/// Dotprompt's markers in rendered text written as promptd writes them:
///
/// - `role:user` and `role:model` start a user or assistant message: `<!-- role: user -->`,
///   `<!-- role: assistant -->` where the helper stood ([`messages`] cuts there); other roles
///   (`system`, `tool`) have no MCP message role, so their marker `<!-- role: system -->`
///   stays in the text, visible.
/// - `history` is where a conversation's earlier messages go; promptd has none to insert,
///   and what follows it is a model message (`toMessages`), so it starts an assistant message.
/// - `media:url URL [TYPE]` is a media part; promptd serves text, so it shows as
///   `[media: URL (TYPE)]`.
/// - `section NAME` starts a part of that purpose (`toParts`), which has no text of its own:
///   nothing is written.
/// - Within a message that has media or section markers, a piece of whitespace only between
///   them is dropped, as `toParts` drops it.
pub fn finish(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // The current message: its pieces of text and its media and section markers.
    let mut message: Vec<Piece<'_>> = Vec::new();
    let mut last = 0;
    for c in MARKER.captures_iter(text) {
        let m = c.get(0).expect("whole match");
        message.push(Piece::Text(&text[last..m.start()]));
        last = m.end();
        let role = c
            .get(1)
            .map(|r| match r.as_str() {
                "user" => "user",
                "model" => "assistant",
                other => other,
            })
            .or(c.get(2).map(|_| "assistant"));
        if let Some(role) = role {
            flush(&mut message, &mut out);
            // Written where the helper stood, nothing added around it: the messages are the
            // text between markers, as `toMessages` cuts them ([`messages`]).
            out.push_str(&format!("<!-- role: {role} -->"));
        } else if let Some(media) = c.get(3) {
            let mut parts = media.as_str().split(' ').filter(|p| !p.is_empty());
            let url = parts.next().unwrap_or_default();
            message.push(Piece::Part(match parts.next() {
                Some(t) => format!("[media: {url} ({t})]"),
                None => format!("[media: {url}]"),
            }));
        } else {
            message.push(Piece::Part(String::new()));
        }
    }
    message.push(Piece::Text(&text[last..]));
    flush(&mut message, &mut out);
    out
}

/// A piece of a message: text, or a media or section part.
enum Piece<'a> {
    Text(&'a str),
    Part(String),
}

/// Writes a message's pieces; with a part among them, whitespace-only text is left out.
fn flush(message: &mut Vec<Piece<'_>>, out: &mut String) {
    let parted = message.iter().any(|p| matches!(p, Piece::Part(_)));
    for piece in message.drain(..) {
        match piece {
            Piece::Text(t) if parted && t.trim().is_empty() => {}
            Piece::Text(t) => out.push_str(t),
            Piece::Part(p) => out.push_str(&p),
        }
    }
}

/// Whether a body cuts its text into messages (`{{role …}}` or `{{history}}`).
pub fn has_roles(body: &str) -> bool {
    static ROLE_HELPER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\{\{~?\s*(?:role\s|history\s*~?\}\})").expect("role helper regex")
    });
    ROLE_HELPER.is_match(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render_with(body: &str, data: Value) -> String {
        let data = data.as_object().cloned().unwrap_or_default();
        render(body, &data, &|_| None, 1 << 20).unwrap()
    }

    #[test]
    fn picoschema_fields_become_arguments() {
        let input = json!({
            "schema": {
                "name": "string, the user's name",
                "count?": "integer",
                "tags(array, labels to apply)": "string",
                "tone?(enum)": ["formal", "casual"],
                "address?(object)": {"city": "string"},
                "anything": "any, whatever you like",
            },
            "default": {"count": 3, "extra": "x"},
        });
        let args = input_arguments(&input, |_| 7).unwrap();
        let summary: Vec<_> = args
            .iter()
            .map(|a| {
                (
                    a.name.as_str(),
                    a.required,
                    a.arg_type.as_deref(),
                    a.description.as_deref(),
                    a.default.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("name", true, Some("string"), Some("the user's name"), None),
                ("count", false, Some("integer"), None, Some(json!(3))),
                ("tags", true, Some("array"), Some("labels to apply"), None),
                ("tone", false, None, None, None),
                ("address", false, Some("object"), None, None),
                ("anything", true, None, Some("whatever you like"), None),
                ("extra", false, None, None, Some(json!("x"))),
            ]
        );
        assert_eq!(
            args[3].enum_values,
            Some(vec![json!("formal"), json!("casual")])
        );
        assert_eq!(
            args[2].schema,
            Some(
                json!({"type": "array", "items": {"type": "string"}, "description": "labels to apply"})
            )
        );
    }

    #[test]
    fn json_schema_input_is_read_as_json_schema() {
        let input = json!({"schema": {
            "type": "object",
            "properties": {"q": {"type": "string", "description": "query"}, "n": {"type": "number"}},
            "required": ["q"],
        }});
        let args = input_arguments(&input, |_| 1).unwrap();
        assert_eq!(args.len(), 2);
        assert!(args[0].required && !args[1].required);
        assert_eq!(args[0].description.as_deref(), Some("query"));
        assert_eq!(args[1].arg_type.as_deref(), Some("number"));
    }

    #[test]
    fn bad_picoschema_is_an_error_at_its_key() {
        let input = json!({"schema": {"when(date)": "string"}});
        let (line, msg) =
            input_arguments(&input, |k| if k == "schema" { 4 } else { 9 }).unwrap_err();
        assert_eq!(line, 4);
        assert_eq!(
            msg,
            "Picoschema: parenthetical types must be 'object' or 'array', got: date"
        );
        let input = json!({"schema": {"when": "date"}});
        assert_eq!(
            input_arguments(&input, |_| 1).unwrap_err().1,
            "Picoschema: unsupported scalar type 'date'."
        );
    }

    #[test]
    fn files_names_and_descriptions() {
        use crate::dialect::{Dialect, first_text_line_description, name_from_path};
        assert_eq!(
            Dialect::recognise(None, "mail/greet.formal.prompt"),
            Dialect::Dotprompt
        );
        assert_eq!(
            name_from_path("mail/greet.formal.prompt"),
            "mail:greet.formal"
        );
        assert!(Dialect::promptd_folder_accepts("greet.prompt"));
        assert!(!Dialect::promptd_folder_accepts("_footer.prompt"));
        assert!(Dialect::Dotprompt.accepts("x.prompt") && !Dialect::Dotprompt.accepts("x.md"));
        assert_eq!(Dialect::parse("genkit"), Some(Dialect::Dotprompt));
        assert_eq!(Dialect::Dotprompt.as_str(), "dotprompt");
        assert_eq!(
            first_text_line_description("{{role \"system\"}}\n\n{{#if x}}\nBe brief, {{name}}.\n"),
            Some("Be brief, {{name}}.".into())
        );
    }

    #[test]
    fn names_variants_and_partials() {
        assert!(is_prompt_file("greet.prompt"));
        assert!(!is_prompt_file("_header.prompt"));
        assert!(!is_prompt_file("greet.prompt.md"));
        assert_eq!(variant_of("team/greet.formal.prompt"), Some("formal"));
        assert_eq!(variant_of("greet.prompt"), None);
        assert_eq!(partial_path("header"), "_header.prompt");
        assert_eq!(partial_path("team/header"), "team/_header.prompt");
    }

    #[test]
    fn renders_without_escaping_and_with_blocks() {
        let body = "Hi {{name}} & <b>{{#if vip}}VIP{{else}}guest{{/if}}</b>\n{{#each tags}}- {{this}} ({{@index}})\n{{/each}}{{#each scores}}{{@key}}={{this}};{{/each}}";
        let text = render_with(
            body,
            json!({"name": "A<&>", "vip": false, "tags": ["x", "y"], "scores": {"a": 1, "b": 2}}),
        );
        assert_eq!(text, "Hi A<&> & <b>guest</b>\n- x (0)\n- y (1)\na=1;b=2;");
    }

    #[test]
    fn missing_values_render_empty() {
        assert_eq!(render_with("[{{nobody}}]", json!({})), "[]");
    }

    #[test]
    fn dotprompt_helpers() {
        let body = "{{json obj}}|{{json obj indent=2}}|{{#ifEquals a 1}}one{{else}}other{{/ifEquals}}|{{#unlessEquals a 1}}not{{else}}is{{/unlessEquals}}|{{media url=img contentType=\"image/png\"}}|{{media url=img}}";
        let text = render_with(
            body,
            json!({"obj": {"k": [1]}, "a": 1, "img": "http://x/y.png"}),
        );
        assert_eq!(
            text,
            "{\"k\":[1]}|{\n  \"k\": [\n    1\n  ]\n}|one|is|[media: http://x/y.png (image/png)]|[media: http://x/y.png]"
        );
    }

    #[test]
    fn roles_become_promptd_message_markers() {
        let body = "{{role \"system\"}}Be kind.\n{{role \"user\"}}Hi {{name}}{{role \"model\"}}Hello\n{{history}}\nMore";
        let text = render_with(body, json!({"name": "Ada"}));
        assert_eq!(
            text,
            "<!-- role: system -->Be kind.\n<!-- role: user -->Hi Ada<!-- role: assistant -->Hello\n<!-- role: assistant -->\nMore"
        );
        // The messages are the text between markers, as Dotprompt cuts them.
        assert_eq!(
            messages(&text),
            [
                (
                    "user".to_string(),
                    "<!-- role: system -->Be kind.\n".to_string()
                ),
                ("user".to_string(), "Hi Ada".to_string()),
                ("assistant".to_string(), "Hello\n".to_string()),
                ("assistant".to_string(), "\nMore".to_string()),
            ]
        );
        assert!(has_roles(body));
        assert!(!has_roles("{{name}}"));
    }

    #[test]
    fn unknown_helpers_are_refused_like_known_helpers_only() {
        let data = Map::new();
        let e = render("{{#if (eq a b)}}x{{/if}}", &data, &|_| None, 1000).unwrap_err();
        assert!(e.message.contains("eq"), "{e:?}");
    }

    #[test]
    fn partials_resolve_and_cycles_are_refused() {
        let data = json!({"name": "Ada"}).as_object().cloned().unwrap();
        let partials = |n: &str| match n {
            "header" => Some("Header for {{name}}".to_string()),
            "loop" => Some("{{> loop}}".to_string()),
            _ => None,
        };
        // A partial alone on its line is standalone: its line break goes with the tag, as in
        // Handlebars.js (the partial's own text ends without one).
        assert_eq!(
            render("{{> header}}\nBody", &data, &partials, 1000).unwrap(),
            "Header for AdaBody"
        );
        assert_eq!(
            render("Top: {{> header}}\nBody", &data, &partials, 1000).unwrap(),
            "Top: Header for Ada\nBody"
        );
        let e = render("{{> loop}}", &data, &partials, 1000).unwrap_err();
        assert!(e.message.contains("partial cycle"), "{e:?}");
        let e = render("{{> missing}}", &data, &partials, 1000).unwrap_err();
        assert!(e.message.contains("missing"), "{e:?}");
    }

    #[test]
    fn size_limit_and_syntax_errors() {
        let data = json!({"xs": vec!["0123456789"; 100]})
            .as_object()
            .cloned()
            .unwrap();
        let e = render("{{#each xs}}{{this}}{{/each}}", &data, &|_| None, 100).unwrap_err();
        assert!(e.too_large);
        let e = check_syntax("line one\n  {{#if x}}\nno end").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(3)));
        assert_eq!(
            e.message,
            "invalid Handlebars template: `{{#if}}` is never closed"
        );
        let e = check_syntax("{{!-- {{/each}} --}}{{#each xs}}\n{{/if}}").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert_eq!(
            e.message,
            "invalid Handlebars template: `{{/if}}` closes `{{#each}}` of line 1"
        );
        let e = check_syntax("{{name").unwrap_err();
        assert!(
            e.message.starts_with("invalid Handlebars template"),
            "{e:?}"
        );
        assert!(check_syntax("{{#each xs}}{{this}}{{/each}}").is_ok());
    }

    #[test]
    fn standalone_blocks_leave_no_blank_lines() {
        let body = "A\n{{#if x}}\nB\n{{/if}}\nC\n";
        assert_eq!(render_with(body, json!({"x": true})), "A\nB\nC\n");
        assert_eq!(render_with(body, json!({})), "A\nC\n");
    }
}

/// A Dotprompt file split as `parseDocument` splits it (dotprompt 1.1.2,
/// `FRONTMATTER_AND_BODY_REGEX`): a `---` line, the YAML, a `---` line, and the template, which
/// is the rest trimmed. A file that does not match has no header and is all template, as
/// written.
pub struct Document<'a> {
    pub yaml: &'a str,
    pub body: &'a str,
    /// 1-based file line where `body` starts.
    pub body_line: usize,
}

static FRONTMATTER_AND_BODY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"^---\s*(?:\r\n|\r|\n)([\s\S]*?)(?:\r\n|\r|\n)---\s*(?:\r\n|\r|\n)([\s\S]*)$",
    )
    .expect("Dotprompt frontmatter regex")
});

/// See [`Document`].
pub fn split_document(text: &str) -> Option<Document<'_>> {
    let c = FRONTMATTER_AND_BODY.captures(text)?;
    let yaml = c.get(1)?.as_str();
    let rest = c.get(2)?;
    let body = rest.as_str().trim();
    let start = rest.start() + (rest.as_str().len() - rest.as_str().trim_start().len());
    Some(Document {
        yaml,
        body,
        body_line: 1 + text[..start].matches('\n').count(),
    })
}

#[cfg(test)]
mod document_tests {
    use super::*;

    #[test]
    fn a_document_splits_as_parse_document_does() {
        let d = split_document("---\nmodel: x\n---\n\n  Hello {{name}}!\n\n").unwrap();
        assert_eq!(
            (d.yaml, d.body, d.body_line),
            ("model: x", "Hello {{name}}!", 5)
        );
        // No line break after the closing `---`: no header, the whole file is the template.
        assert!(split_document("---\nmodel: x\n---").is_none());
        assert!(split_document("Hello").is_none());
    }
}

static MESSAGE_MARKER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"<!-- role: ([a-z]+) -->").expect("Dotprompt message marker regex")
});

/// A rendered Dotprompt text cut into messages as `toMessages` cuts it (dotprompt 1.1.2): at
/// each role marker, each message's text kept as rendered (its line breaks too), a message of
/// whitespace only dropped. The first message is a user message. A role MCP has none for
/// (`system`) is a user message that starts with its marker, visible.
pub fn messages(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut role = "user".to_string();
    let mut start = 0;
    let push = |role: &str, chunk: &str, out: &mut Vec<(String, String)>| {
        if chunk.trim().is_empty() {
            return;
        }
        match role {
            "user" | "assistant" => out.push((role.to_string(), chunk.to_string())),
            other => out.push(("user".into(), format!("<!-- role: {other} -->{chunk}"))),
        }
    };
    for c in MESSAGE_MARKER.captures_iter(text) {
        let m = c.get(0).expect("whole match");
        push(&role, &text[start..m.start()], &mut out);
        role = c[1].to_string();
        start = m.end();
    }
    push(&role, &text[start..], &mut out);
    out
}

#[cfg(test)]
mod message_tests {
    use super::*;

    #[test]
    fn messages_are_cut_as_to_messages_cuts_them() {
        let text = "\n<!-- role: system -->\nRules.\n<!-- role: assistant -->\n<!-- role: user -->\nHi {{x}}.\n";
        assert_eq!(
            messages(text),
            [
                (
                    "user".to_string(),
                    "<!-- role: system -->\nRules.\n".to_string()
                ),
                ("user".to_string(), "\nHi {{x}}.\n".to_string()),
            ]
        );
        assert_eq!(
            messages("Say<!-- role: assistant -->Hi"),
            [
                ("user".to_string(), "Say".to_string()),
                ("assistant".to_string(), "Hi".to_string()),
            ]
        );
    }
}
