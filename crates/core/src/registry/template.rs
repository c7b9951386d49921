//! One prompt file: its frontmatter (split off and loaded by [`super::frontmatter`]) read into
//! a [`PromptTemplate`], assembled with what the file's dialect reads from it (name, placeholder
//! arguments, description, directives; see [`crate::dialect`]).
//!
//! Real prompt files come in two argument shapes (a map keyed by name, or a list of items with
//! `name:`), sometimes with folded descriptions, and with versions such as `2.0` that must stay
//! `2.0`. We therefore load YAML without early scalar resolution and resolve scalars ourselves,
//! keeping the source text of `version`, and we keep node positions so that every error names the
//! file line at fault.

use std::borrow::Cow;

use saphyr::{MarkedYaml, Scalar, ScalarStyle, YamlData};
use serde::Serialize;
use serde_json::{Map, Value};

use super::frontmatter::{
    key_value_yaml, load_marked, quote_problematic_values, scalar_text, split_frontmatter, to_json,
};
use crate::dialect::{self, Dialect, display_value};

/// Whether a prompt is offered to users or used internally by a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PromptCategory {
    User,
    System,
}

/// The template language a prompt declares with `engine:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// minijinja (Jinja2 syntax).
    Jinja,
    /// Plain `{{ key }}` substitution; everything else is left verbatim.
    Plain,
}

/// The JSON type an argument declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArgType {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
}

impl ArgType {
    fn parse(s: &str) -> Option<ArgType> {
        Some(match s {
            "string" => ArgType::String,
            "number" => ArgType::Number,
            "integer" => ArgType::Integer,
            "boolean" => ArgType::Boolean,
            "array" => ArgType::Array,
            "object" => ArgType::Object,
            _ => return None,
        })
    }

    /// The JSON Schema name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Number => "number",
            ArgType::Integer => "integer",
            ArgType::Boolean => "boolean",
            ArgType::Array => "array",
            ArgType::Object => "object",
        }
    }
}

/// One declared argument of a prompt.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentSpec {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    #[serde(rename = "type")]
    pub arg_type: Option<ArgType>,
    #[serde(rename = "enum")]
    pub enum_values: Option<Vec<Value>>,
    pub examples: Vec<Value>,
    pub pattern: Option<String>,
    pub minimum: Option<Box<Value>>,
    pub maximum: Option<Box<Value>>,
    /// A full JSON Schema given under `schema:`; overrides the fields above for validation.
    /// (Boxed, like the bounds: most arguments have none, and a `Value` is several words wide.)
    pub schema: Option<Box<Value>>,
    /// 1-based line of the argument in the prompt file.
    #[serde(skip)]
    pub line: usize,
}

impl ArgumentSpec {
    /// An optional argument with nothing declared but its name, at a file line.
    pub fn named(name: &str, line: usize) -> ArgumentSpec {
        ArgumentSpec {
            name: name.to_string(),
            description: None,
            required: false,
            default: None,
            arg_type: None,
            enum_values: None,
            examples: Vec::new(),
            pattern: None,
            minimum: None,
            maximum: None,
            schema: None,
            line,
        }
    }

    /// The declared type, from `type:` or from `schema.type`.
    pub fn declared_type(&self) -> Option<ArgType> {
        self.arg_type.or_else(|| {
            self.schema
                .as_ref()
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                .and_then(ArgType::parse)
        })
    }

    /// The JSON Schema that supplied values must satisfy beyond their declared type, or none
    /// when there is nothing more: values are coerced to the declared type before they are
    /// checked, so a schema of the type alone could never fail.
    pub fn json_schema(&self) -> Option<Value> {
        if let Some(schema) = self.schema.as_deref() {
            return Some(schema.clone());
        }
        let mut s = Map::new();
        if let Some(t) = self.arg_type {
            s.insert("type".into(), Value::String(t.as_str().into()));
        }
        if let Some(e) = &self.enum_values {
            s.insert("enum".into(), Value::Array(e.clone()));
        }
        if let Some(p) = &self.pattern {
            s.insert("pattern".into(), Value::String(p.clone()));
        }
        if let Some(m) = self.minimum.as_deref() {
            s.insert("minimum".into(), m.clone());
        }
        if let Some(m) = self.maximum.as_deref() {
            s.insert("maximum".into(), m.clone());
        }
        let constrains = s.keys().any(|k| k != "type");
        constrains.then_some(Value::Object(s))
    }

    /// Values a client may offer when completing this argument.
    pub fn suggested_values(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let enums = self.enum_values.clone().or_else(|| {
            self.schema
                .as_ref()
                .and_then(|s| s.get("enum"))
                .and_then(Value::as_array)
                .cloned()
        });
        for v in enums.iter().flatten().chain(self.examples.iter()) {
            let s = display_value(v);
            if !out.contains(&s) {
                out.push(s);
            }
        }
        if out.is_empty() && self.declared_type() == Some(ArgType::Boolean) {
            out = vec!["true".into(), "false".into()];
        }
        out
    }
}

/// A parsed prompt file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptTemplate {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub version: Option<String>,
    pub arguments: Vec<ArgumentSpec>,
    /// The engine declared in frontmatter, if any.
    pub engine: Option<Engine>,
    /// The format the file is written in (names, arguments, substitution).
    pub dialect: Dialect,
    /// Directives the body contains and promptd never runs (`shell`, `file`).
    pub directives: Vec<&'static str>,
    pub category: PromptCategory,
    /// Split the rendered text into one message per `<!-- role: … -->` section.
    pub roles: bool,
    /// Every other frontmatter key.
    pub metadata: Map<String, Value>,
    /// The template text after the frontmatter.
    #[serde(skip)]
    pub body: String,
    /// 1-based line of the file where `body` starts.
    #[serde(skip)]
    pub body_line: usize,
    /// Where the file came from, for messages (`/abs/path.md` or `builtin:prompts/x.md`).
    pub path: String,
    /// Path relative to its root (`review.md`, `system/enhance_prompt.md`).
    #[serde(skip)]
    pub rel_path: String,
    /// Content hash of the whole file.
    pub version_hash: String,
    /// Non-fatal notes found while parsing (unknown argument fields, a header read leniently).
    #[serde(skip)]
    pub parse_warnings: Vec<ParseWarning>,
}

/// A non-fatal note about a prompt file, at a file position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseWarning {
    pub line: usize,
    pub column: usize,
    /// The lint code `check` reports it under.
    pub code: &'static str,
    pub message: String,
}

/// A problem with one prompt file, at a position when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct PromptFileError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// The first 16 hex digits of the BLAKE3 hash of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(&blake3::hash(bytes).as_bytes()[..8])
}

/// Parses a whole prompt file of a folder without a dialect of its own.
pub fn parse_prompt_file(
    text: &str,
    path: &str,
    rel_path: &str,
    category: PromptCategory,
) -> Result<PromptTemplate, PromptFileError> {
    parse_prompt_file_in(text, path, rel_path, category, None)
}

/// Parses a whole prompt file; `folder` is the dialect its folder decides, if any. The name
/// comes from the path (see [`dialect::name_from_path`]; a system prompt, `system/x.md`, is
/// named by its file alone) unless the frontmatter gives a valid one; the dialect from the
/// folder and file name unless the frontmatter's `engine:` says.
pub fn parse_prompt_file_in(
    text: &str,
    path: &str,
    rel_path: &str,
    category: PromptCategory,
    folder: Option<Dialect>,
) -> Result<PromptTemplate, PromptFileError> {
    let version_hash = content_hash(text.as_bytes());
    parse_prompt_file_hashed(text, version_hash, path, rel_path, category, folder)
}

/// [`parse_prompt_file_in`] of a text whose [`content_hash`] the caller has already taken.
pub(crate) fn parse_prompt_file_hashed(
    text: &str,
    version_hash: String,
    path: &str,
    rel_path: &str,
    category: PromptCategory,
    folder: Option<Dialect>,
) -> Result<PromptTemplate, PromptFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let dialect = Dialect::recognise(folder, rel_path);
    let named_by = match category {
        PromptCategory::System => rel_path.rsplit('/').next().unwrap_or(rel_path),
        PromptCategory::User => rel_path,
    };
    let mut tpl = PromptTemplate {
        name: dialect::name_from_path(named_by),
        title: None,
        description: None,
        version: None,
        arguments: Vec::new(),
        engine: None,
        dialect,
        directives: Vec::new(),
        category,
        roles: false,
        metadata: Map::new(),
        body: String::new(),
        body_line: 1,
        path: path.to_string(),
        rel_path: rel_path.to_string(),
        version_hash,
        parse_warnings: Vec::new(),
    };
    if dialect == Dialect::Gemini {
        let file = dialect::gemini::parse(text).map_err(|e| PromptFileError {
            path: path.to_string(),
            line: e.line,
            column: 1,
            message: e.message,
        })?;
        tpl.body = file.prompt;
        tpl.description = file.description;
        tpl.metadata = file.metadata;
    } else if dialect == Dialect::Dotprompt {
        // Dotprompt reads its own way (dotprompt 1.1.2, `parseDocument`): a header its YAML
        // parser refuses leaves the whole file, trimmed, as the template; see
        // `dialect::dotprompt::split_document` for the rest.
        match dialect::dotprompt::split_document(text) {
            Some(doc) => {
                let fresh = tpl.clone();
                tpl.body = doc.body.to_string();
                tpl.body_line = doc.body_line;
                let fm = Frontmatter { path, line_base: 1 };
                if let Err(e) = fm.apply(doc.yaml, &mut tpl) {
                    let trimmed = text.trim();
                    tpl = fresh;
                    tpl.body = trimmed.to_string();
                    tpl.body_line = 1 + text[..text.len() - text.trim_start().len()]
                        .matches('\n')
                        .count();
                    tpl.parse_warnings.push(ParseWarning {
                        line: e.line,
                        column: e.column,
                        code: "lenient-frontmatter",
                        message: format!(
                            "the frontmatter is not YAML ({}); as Dotprompt does, the whole file is the template",
                            e.message
                        ),
                    });
                }
            }
            None => tpl.body = text.to_string(),
        }
        read_engine_dialect(&mut tpl, text)?;
    } else {
        let (yaml, body, body_line) = split_frontmatter(text).map_err(|e| PromptFileError {
            path: path.to_string(),
            line: 1,
            column: 1,
            message: e.to_string(),
        })?;
        tpl.body = body.to_string();
        tpl.body_line = body_line;
        if let Some(yaml) = yaml {
            let fm = Frontmatter { path, line_base: 1 };
            if dialect.is_promptd() {
                fm.apply(yaml, &mut tpl)?;
            } else {
                fm.apply_leniently(yaml, &mut tpl);
            }
        }
        // A Prompty file without a header is YAML whose value is the template (prompty 2.1.0,
        // `core/utils.py` `parse`: `yaml.safe_load(contents)`): a plain scalar, so its line
        // breaks fold and its ends are trimmed as YAML reads it.
        if tpl.dialect == Dialect::Prompty
            && yaml.is_none()
            && let Ok(Value::String(template)) = super::frontmatter::yaml_to_json(text)
        {
            tpl.body = template;
        }
        // With a header, the template starts at the first non-blank character after it
        // (`_yaml_regex`'s `\s*` before the body).
        if tpl.dialect == Dialect::Prompty && yaml.is_some() {
            let kept = tpl.body.trim_start();
            let dropped = &tpl.body[..tpl.body.len() - kept.len()];
            tpl.body_line += dropped.matches('\n').count();
            tpl.body = kept.to_string();
        }
        if tpl.dialect.has_engine() {
            read_engine_dialect(&mut tpl, text)?;
        }
    }
    complete(&mut tpl);
    validate_name(&tpl.name).map_err(|message| PromptFileError {
        path: path.to_string(),
        line: 1,
        column: 1,
        message,
    })?;
    // Kept for the life of the snapshot: no spare capacity (a grown vector of two arguments
    // holds room for four).
    tpl.arguments.shrink_to_fit();
    tpl.directives.shrink_to_fit();
    tpl.parse_warnings.shrink_to_fit();
    Ok(tpl)
}

/// Completes a parsed file the way its dialect defines: the arguments its placeholders declare
/// (those the frontmatter declares keep their declaration), the first-line description, and the
/// directives found.
fn complete(tpl: &mut PromptTemplate) {
    // A Dotprompt `input.schema` or Prompty `inputs` is the whole list of arguments.
    let declared_inputs = match tpl.dialect {
        Dialect::Dotprompt => tpl
            .metadata
            .get("input")
            .is_some_and(|i| i.get("schema").is_some()),
        // A `${file:…}` reference is not read: the template's variables are the arguments.
        Dialect::Prompty => tpl
            .metadata
            .get("inputs")
            .is_some_and(|i| !dialect::prompty::is_reference(i)),
        _ => false,
    };
    if tpl.dialect.has_engine() && tpl.description.is_none() {
        tpl.description = dialect::first_text_line_description(&tpl.body);
    }
    if !tpl.dialect.is_promptd() && !declared_inputs {
        let derived: Vec<ArgumentSpec> = tpl
            .dialect
            .placeholder_arguments(&tpl.body, tpl.body_line, &tpl.metadata)
            .into_iter()
            .filter(|p| !tpl.arguments.iter().any(|a| a.name == p.name))
            .map(|p| ArgumentSpec {
                required: p.required,
                description: p.description,
                ..ArgumentSpec::named(&p.name, p.line)
            })
            .collect();
        tpl.arguments.extend(derived);
        if tpl.description.is_none() {
            tpl.description = dialect::first_line_description(&tpl.body);
        }
    }
    tpl.directives = dialect::directives(tpl.dialect, &tpl.body);
}

/// Reads what a Dotprompt or Prompty file declares beyond promptd's frontmatter: its arguments
/// (Dotprompt `input.schema` and `input.default`, Prompty `inputs` and `sample`), Dotprompt's
/// variant and message roles; and checks that its body compiles, so that a file that does not
/// parse is an error at its file line and column.
fn read_engine_dialect(tpl: &mut PromptTemplate, text: &str) -> Result<(), PromptFileError> {
    // The file line of a frontmatter key (its first line there written `key:`, `key?…`, or
    // `key(…`), else the frontmatter's first line.
    let frontmatter_lines: Vec<&str> = text.lines().take(tpl.body_line.saturating_sub(1)).collect();
    let line_of = |key: &str| {
        frontmatter_lines
            .iter()
            .position(|l| {
                let l = l.trim_start().trim_start_matches("- ");
                let l = l.trim_start_matches(['"', '\'']);
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with([':', '?', '(', '"', '\'', ' ']))
            })
            .map_or(1, |i| i + 1)
    };
    let err = |line: usize, column: usize, message: String| PromptFileError {
        path: tpl.path.clone(),
        line,
        column: column.max(1),
        message,
    };
    let declared = match tpl.dialect {
        Dialect::Dotprompt => {
            if let Some(variant) = dialect::dotprompt::variant_of(&tpl.rel_path)
                && !tpl.metadata.contains_key("variant")
            {
                tpl.metadata
                    .insert("variant".into(), Value::String(variant.into()));
            }
            tpl.roles |= dialect::dotprompt::has_roles(&tpl.body);
            let checked = dialect::dotprompt::check_syntax(&tpl.body);
            checked.map_err(|e| {
                err(
                    tpl.body_line + e.line.unwrap_or(1) - 1,
                    e.column.unwrap_or(1),
                    e.message,
                )
            })?;
            if let Some(output) = tpl.metadata.get("output") {
                dialect::dotprompt::check_output_schema(output)
                    .map_err(|e| err(line_of("output"), 1, e))?;
            }
            match tpl.metadata.get("input") {
                Some(input) => dialect::dotprompt::input_arguments(input, line_of),
                None => Ok(Vec::new()),
            }
        }
        Dialect::Prompty => {
            let format = dialect::prompty::template_format(tpl.metadata.get("template"));
            if format != "jinja2" {
                return Err(err(
                    line_of("template"),
                    1,
                    format!("Prompty template format `{format}` is not supported (jinja2 is)"),
                ));
            }
            dialect::prompty::check_syntax(&tpl.body).map_err(|e| {
                err(
                    tpl.body_line + e.line.unwrap_or(1) - 1,
                    e.column.unwrap_or(1),
                    e.message,
                )
            })?;
            // `inputs: ${file:schema.json}` is a reference Prompty resolves when it loads the
            // file (`${file:…}`, `${env:…}`); promptd does not read it, and the template's
            // variables are the arguments instead.
            let inputs = tpl.metadata.get("inputs");
            let inputs = match inputs {
                Some(r) if dialect::prompty::is_reference(r) => {
                    tpl.parse_warnings.push(ParseWarning {
                        line: line_of("inputs"),
                        column: 1,
                        code: "unread-reference",
                        message: format!(
                            "`inputs: {}` is a reference promptd does not read; the template's variables are the arguments",
                            display_value(r)
                        ),
                    });
                    None
                }
                other => other,
            };
            dialect::prompty::input_arguments(inputs, tpl.metadata.get("sample"), line_of)
        }
        _ => Ok(Vec::new()),
    };
    let declared = declared.map_err(|(line, message)| err(line, 1, message))?;
    tpl.arguments = declared
        .into_iter()
        .map(|d| ArgumentSpec {
            required: d.required,
            description: d.description,
            default: d.default,
            arg_type: d.arg_type.as_deref().and_then(ArgType::parse),
            enum_values: d.enum_values,
            examples: d.examples,
            schema: d.schema.map(Box::new),
            ..ArgumentSpec::named(&d.name, d.line)
        })
        .collect();
    Ok(())
}

/// Whether `name` is one path segment of letters, digits, `_`, `-` and `.` (not `.` or `..`):
/// safe to use as a file name or a name that must stay inside its folder.
pub fn is_safe_segment(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Prompt names are safe path segments joined by `:` (a subfolder's namespace): they become MCP
/// names and include targets, so a name must never be able to point outside its root.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.split(':').all(is_safe_segment) {
        Ok(())
    } else {
        Err(format!(
            "invalid prompt name `{name}`: use letters, digits, `_`, `-` and `.` only (no path separators)"
        ))
    }
}

struct Frontmatter<'p> {
    path: &'p str,
    /// File line of the opening `---`.
    line_base: usize,
}

impl Frontmatter<'_> {
    fn err(&self, node: Option<&MarkedYaml>, message: impl Into<String>) -> PromptFileError {
        let (line, column) = node
            .map(|n| (n.span.start.line(), n.span.start.col() + 1))
            .unwrap_or((1, 0));
        PromptFileError {
            path: self.path.to_string(),
            line: self.line_base + line,
            column: column.max(1),
            message: message.into(),
        }
    }

    fn line_of(&self, node: &MarkedYaml) -> usize {
        self.line_base + node.span.start.line()
    }

    /// Reads another tool's header as that tool does: strict YAML first; then Claude Code's
    /// quoting of values YAML refuses ([`quote_problematic_values`]); then `key: value` lines
    /// ([`key_value_yaml`]). A file its tool loads is never refused over its header: what no
    /// reading accepts is left out, and the first reading's error becomes a warning at its
    /// line and column.
    fn apply_leniently(&self, yaml: &str, tpl: &mut PromptTemplate) {
        let fresh = tpl.clone();
        let Err(strict) = self.apply(yaml, tpl) else {
            return;
        };
        let readings = [
            (
                "as Claude Code reads it (values with YAML indicators quoted)",
                quote_problematic_values(yaml),
            ),
            ("as `key: value` lines", key_value_yaml(yaml)),
        ];
        let mut how = None;
        for (label, text) in readings {
            *tpl = fresh.clone();
            if self.apply(&text, tpl).is_ok() {
                how = Some(label);
                break;
            }
        }
        let how = how.unwrap_or_else(|| {
            *tpl = fresh;
            "without it (no reading accepts it)"
        });
        tpl.parse_warnings.push(ParseWarning {
            line: strict.line,
            column: strict.column,
            code: "lenient-frontmatter",
            message: format!(
                "the frontmatter is not strict YAML ({}); read {how}",
                strict.message
            ),
        });
    }

    /// A header value as written on its key's line (`[pr-number]`, which YAML would read as a
    /// list), for values a tool reads as text.
    fn written(&self, yaml: &str, key: &MarkedYaml) -> Option<String> {
        let line = yaml.lines().nth(key.span.start.line().checked_sub(1)?)?;
        let (_, value) = line.split_once(':')?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_string())
    }

    fn apply(&self, yaml: &str, tpl: &mut PromptTemplate) -> Result<(), PromptFileError> {
        let docs = load_marked(yaml).map_err(|e| {
            let m = e.marker();
            PromptFileError {
                path: self.path.to_string(),
                line: self.line_base + m.line(),
                column: m.col() + 1,
                message: format!("invalid YAML frontmatter: {}", e.info()),
            }
        })?;
        let Some(root) = docs.into_iter().next() else {
            return Ok(());
        };
        let map = match &root.data {
            YamlData::Mapping(m) => m,
            YamlData::Representation(s, ..) if s.is_empty() => return Ok(()),
            YamlData::Value(Scalar::Null) => return Ok(()),
            _ => return Err(self.err(Some(&root), "frontmatter must be a YAML mapping")),
        };
        for (k, v) in map {
            let key = scalar_text(k).ok_or_else(|| self.err(Some(k), "keys must be strings"))?;
            match key.as_ref() {
                // A display name ("App Store Reviewer") is a title; a name YAML reads as
                // something else (`{{TITLE}}`, a template placeholder) is ignored.
                "name" => {
                    if let Ok(name) = self.string_field(v, "name") {
                        if is_safe_segment(&name) {
                            tpl.name = name;
                        } else if tpl.title.is_none() {
                            tpl.title = Some(name);
                        }
                    }
                }
                "title" => tpl.title = Some(self.string_field(v, "title")?),
                // Another tool's file may hold a template placeholder there (`{{DESCRIPTION}}`,
                // which YAML reads as a mapping): metadata, and the first body line describes it.
                "description" if !tpl.dialect.is_promptd() => {
                    match self.string_field(v, "description") {
                        Ok(d) => tpl.description = Some(d),
                        Err(_) => {
                            tpl.metadata.insert("description".into(), to_json(v));
                        }
                    }
                }
                "description" => tpl.description = Some(self.string_field(v, "description")?),
                "version" => {
                    tpl.version = match &v.data {
                        YamlData::Representation(s, ..) => Some(s.to_string()),
                        _ => Some(display_value(&to_json(v))),
                    }
                }
                "engine" => {
                    let name = self.string_field(v, "engine")?;
                    let Some(d) = Dialect::parse(&name) else {
                        return Err(self.err(
                            Some(v),
                            format!("unknown engine `{name}` (expected {})", Dialect::NAMES),
                        ));
                    };
                    tpl.dialect = d;
                    tpl.engine = match d {
                        Dialect::Jinja => Some(Engine::Jinja),
                        Dialect::Plain => Some(Engine::Plain),
                        _ => None,
                    };
                }
                "roles" => {
                    tpl.roles = match to_json(v) {
                        Value::Bool(b) => b,
                        Value::String(s) if s == "true" => true,
                        Value::String(s) if s == "false" => false,
                        _ => return Err(self.err(Some(v), "`roles` must be true or false")),
                    }
                }
                // Other tools use `arguments:` for their own notes (`arguments: $TARGET`):
                // there it is metadata, and the arguments come from the placeholders.
                "arguments" if !tpl.dialect.is_promptd() => match self.arguments(v, tpl) {
                    Ok(args) => tpl.arguments = args,
                    Err(_) => {
                        tpl.metadata.insert("arguments".into(), to_json(v));
                    }
                },
                "arguments" => tpl.arguments = self.arguments(v, tpl)?,
                // Claude Code and Codex show `argument-hint` as text: `[pr-number]` as written,
                // not the list YAML makes of it.
                "argument-hint" if !tpl.dialect.is_promptd() => {
                    let value = match to_json(v) {
                        Value::Array(_) | Value::Object(_) => self
                            .written(yaml, k)
                            .map_or_else(|| to_json(v), Value::String),
                        other => other,
                    };
                    tpl.metadata.insert("argument-hint".into(), value);
                }
                other => {
                    tpl.metadata.insert(other.to_string(), to_json(v));
                }
            }
        }
        Ok(())
    }

    fn string_field(&self, v: &MarkedYaml, field: &str) -> Result<String, PromptFileError> {
        match to_json(v) {
            Value::String(s) => Ok(s),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            _ => Err(self.err(Some(v), format!("`{field}` must be a string"))),
        }
    }

    fn arguments(
        &self,
        v: &MarkedYaml,
        tpl: &mut PromptTemplate,
    ) -> Result<Vec<ArgumentSpec>, PromptFileError> {
        let mut out: Vec<ArgumentSpec> = Vec::new();
        match &v.data {
            YamlData::Mapping(map) => {
                for (k, spec) in map {
                    let name = scalar_text(k)
                        .ok_or_else(|| self.err(Some(k), "argument names must be strings"))?
                        .into_owned();
                    let fields = match &spec.data {
                        YamlData::Mapping(m) => Some(m),
                        YamlData::Value(Scalar::Null) => None,
                        YamlData::Representation(s, ScalarStyle::Plain, _)
                            if s.is_empty() || s == "~" || s == "null" =>
                        {
                            None
                        }
                        _ => {
                            return Err(self.err(
                                Some(spec),
                                format!("argument `{name}` must be a mapping of fields"),
                            ));
                        }
                    };
                    out.push(self.argument(name, fields, self.line_of(k), tpl)?);
                }
            }
            YamlData::Sequence(items) => {
                for item in items {
                    let YamlData::Mapping(m) = &item.data else {
                        return Err(self.err(
                            Some(item),
                            "each item of `arguments` must be a mapping with a `name`",
                        ));
                    };
                    let name = m
                        .iter()
                        .find(|(k, _)| scalar_text(k).as_deref() == Some("name"))
                        .map(|(_, n)| to_json(n))
                        .and_then(|n| n.as_str().map(str::to_string))
                        .ok_or_else(|| self.err(Some(item), "argument item has no `name`"))?;
                    out.push(self.argument(name, Some(m), self.line_of(item), tpl)?);
                }
            }
            YamlData::Value(Scalar::Null) => {}
            YamlData::Representation(s, ScalarStyle::Plain, _) if s.is_empty() || s == "~" => {}
            _ => {
                return Err(self.err(
                    Some(v),
                    "`arguments` must be a mapping (name: {type, ...}) or a list of items with `name`",
                ));
            }
        }
        for (i, a) in out.iter().enumerate() {
            if let Some(prev) = out[..i].iter().find(|p| p.name == a.name) {
                return Err(PromptFileError {
                    path: self.path.to_string(),
                    line: a.line,
                    column: 1,
                    message: format!(
                        "argument `{}` is declared twice (first at line {})",
                        a.name, prev.line
                    ),
                });
            }
        }
        Ok(out)
    }

    fn argument(
        &self,
        name: String,
        fields: Option<&saphyr::AnnotatedMapping<'_, MarkedYaml<'_>>>,
        line: usize,
        tpl: &mut PromptTemplate,
    ) -> Result<ArgumentSpec, PromptFileError> {
        let mut spec = ArgumentSpec::named(&name, line);
        for (k, v) in fields.into_iter().flatten() {
            let key = scalar_text(k).unwrap_or(Cow::Borrowed(""));
            let value = to_json(v);
            let bad = |what: &str| {
                self.err(
                    Some(v),
                    format!("argument `{}`: `{key}` must be {what}", spec.name),
                )
            };
            match key.as_ref() {
                "name" => {}
                "description" => spec.description = Some(display_value(&value)),
                "type" => {
                    let t = value.as_str().ok_or_else(|| bad("a string"))?;
                    spec.arg_type = Some(ArgType::parse(t).ok_or_else(|| {
                        self.err(
                            Some(v),
                            format!(
                                "argument `{}`: unknown type `{t}` (expected string, number, integer, boolean, array or object)",
                                spec.name
                            ),
                        )
                    })?);
                }
                "required" => {
                    spec.required = match value {
                        Value::Bool(b) => b,
                        Value::String(s) if s == "true" => true,
                        Value::String(s) if s == "false" => false,
                        _ => return Err(bad("true or false")),
                    }
                }
                "default" => spec.default = Some(value),
                "enum" => match value {
                    Value::Array(a) => spec.enum_values = Some(a),
                    _ => return Err(bad("a list")),
                },
                "examples" | "example" => match value {
                    Value::Array(a) => spec.examples = a,
                    Value::Null => {}
                    other => spec.examples = vec![other],
                },
                "pattern" => {
                    let p = value.as_str().ok_or_else(|| bad("a string"))?;
                    spec.pattern = Some(p.to_string());
                }
                "minimum" | "min" => {
                    if !value.is_number() {
                        return Err(bad("a number"));
                    }
                    spec.minimum = Some(Box::new(value));
                }
                "maximum" | "max" => {
                    if !value.is_number() {
                        return Err(bad("a number"));
                    }
                    spec.maximum = Some(Box::new(value));
                }
                "schema" => {
                    if !value.is_object() && !value.is_boolean() {
                        return Err(bad("a JSON Schema object"));
                    }
                    spec.schema = Some(Box::new(value));
                }
                other => tpl.parse_warnings.push(ParseWarning {
                    line: self.line_of(k),
                    column: k.span.start.col() + 1,
                    code: "argument-field",
                    message: format!("argument `{}`: unknown field `{other}` ignored", spec.name),
                }),
            }
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PromptTemplate, PromptFileError> {
        parse_prompt_file(text, "p.md", "p.md", PromptCategory::User)
    }

    #[test]
    fn version_keeps_its_source_text() {
        let t = parse("---\nversion: 2.0\n---\nbody").unwrap();
        assert_eq!(t.version.as_deref(), Some("2.0"));
        assert_eq!(t.body, "body");
        assert_eq!(t.body_line, 4);
    }

    #[test]
    fn folded_description() {
        let t = parse("---\ndescription: >-\n  one\n  two\n---\n").unwrap();
        assert_eq!(t.description.as_deref(), Some("one two"));
    }

    #[test]
    fn yaml_error_has_file_line() {
        let e = parse("---\nname: x\nargs: [unclosed\n---\n").unwrap_err();
        assert_eq!(e.path, "p.md");
        assert!(e.line >= 3, "{e}");
        assert!(e.message.starts_with("invalid YAML"), "{e}");
    }

    #[test]
    fn quoted_numbers_stay_strings() {
        let t =
            parse("---\narguments:\n  a: {default: \"30\"}\n  b: {default: 30}\n---\n").unwrap();
        assert_eq!(t.arguments[0].default, Some(Value::String("30".into())));
        assert_eq!(t.arguments[1].default, Some(Value::from(30)));
    }

    #[test]
    fn names_cannot_escape() {
        let t = parse("---\nname: ../etc/passwd\n---\n").unwrap();
        assert_eq!(t.name, "p");
        assert_eq!(t.title.as_deref(), Some("../etc/passwd"));
        assert!(validate_name("code-review_2.v1").is_ok());
        assert!(validate_name("tools:api-scaffold").is_ok());
        assert!(validate_name("tools:..").is_err());
    }

    #[test]
    fn a_schema_is_only_what_the_type_does_not_already_check() {
        let t = parse(concat!(
            "---\narguments:\n",
            "  plain: {type: integer}\n",
            "  untyped: {description: any}\n",
            "  bounded: {type: integer, minimum: 1}\n",
            "  listed: {enum: [a, b]}\n",
            "  shaped: {type: string, pattern: '^x'}\n",
            "  given: {schema: {type: string}}\n",
            "---\n"
        ))
        .unwrap();
        let schemas: Vec<(&str, Option<Value>)> = t
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), a.json_schema()))
            .collect();
        assert_eq!(
            schemas,
            vec![
                ("plain", None),
                ("untyped", None),
                (
                    "bounded",
                    Some(serde_json::json!({"type": "integer", "minimum": 1}))
                ),
                ("listed", Some(serde_json::json!({"enum": ["a", "b"]}))),
                (
                    "shaped",
                    Some(serde_json::json!({"type": "string", "pattern": "^x"}))
                ),
                ("given", Some(serde_json::json!({"type": "string"}))),
            ]
        );
    }

    #[test]
    fn a_display_name_becomes_the_title() {
        let t = parse("---\nname: Apple App Store Reviewer\n---\nbody").unwrap();
        assert_eq!(t.name, "p");
        assert_eq!(t.title.as_deref(), Some("Apple App Store Reviewer"));
        let t = parse("---\nname: Shown\ntitle: Given\n---\n").unwrap();
        assert_eq!(t.title.as_deref(), Some("Given"));
    }
}
