//! The tools stage: the catalog of tools the model may call — the MCP server's own tools (filled
//! by the caller) followed by the workspace's `.promptd/tools/*.json` definitions in Plandex's
//! shape (`toolName`, `description`, `inputSchema`/`outputSchema` as JSON Schema *strings*,
//! `executionType` `http` | `predefined_server_function`, `executionDetails`).
//!
//! Every workspace file is validated: it must deserialize into that shape, each schema string must
//! parse as JSON and compile with `jsonschema` (which also checks it against its meta-schema; no
//! remote `$ref` is fetched), the input schema must be an object schema (MCP's requirement), an
//! `http` tool needs `executionDetails.url`, and a tool name may appear once. A file that fails is
//! reported as a [`ToolIssue`] (path + reason) and skipped; the others still load.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Folder, under the workspace root, holding tool definitions.
pub const TOOLS_DIR: &str = ".promptd/tools";

/// Where a tool comes from.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ToolOrigin {
    /// One of the MCP server's own tools.
    Server,
    /// A `.promptd/tools/*.json` file (workspace-relative path).
    #[serde(rename_all = "camelCase")]
    Workspace {
        path: String,
        execution_type: ExecutionType,
        execution_details: Value,
    },
}

/// How a Plandex-shaped tool is executed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionType {
    Http,
    PredefinedServerFunction,
}

/// A tool as listed in the catalog. The server's own tools are made with
/// [`ToolDefinition::server`] by the caller.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub origin: ToolOrigin,
}

impl ToolDefinition {
    /// One of the MCP server's own tools.
    pub fn server(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            origin: ToolOrigin::Server,
        }
    }

    /// The tool as it appears in the tools block.
    pub fn render(&self) -> String {
        let mut section = format!("### Tool: {}\n", self.name);
        let description = self.description.trim();
        if !description.is_empty() {
            section.push_str(description);
            section.push('\n');
        }
        section.push_str(&format!("Input schema: {}\n", self.input_schema));
        if let Some(output) = &self.output_schema {
            section.push_str(&format!("Output schema: {output}\n"));
        }
        section
    }
}

/// A tool definition that was skipped.
#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolIssue {
    /// Workspace-relative path of the file (or `server:<name>` for a server tool).
    pub path: String,
    pub reason: String,
}

/// The tools stage's output.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelTools {
    pub tools: Vec<ToolDefinition>,
    pub issues: Vec<ToolIssue>,
}

impl ModelTools {
    /// One section per tool, separated by a blank line; empty when there are no tools.
    pub fn render_block(&self) -> String {
        self.tools
            .iter()
            .map(ToolDefinition::render)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A `.promptd/tools/*.json` file as Plandex writes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlandexToolFile {
    tool_name: String,
    description: String,
    input_schema: String,
    #[serde(default)]
    output_schema: Option<String>,
    execution_type: ExecutionType,
    #[serde(default)]
    execution_details: Value,
}

/// Server tools (in the order given) then valid workspace tools (sorted by file name).
pub fn load_tools(workspace_root: &Path, server_tools: &[ToolDefinition]) -> ModelTools {
    let mut catalog = ModelTools::default();
    for tool in server_tools {
        if catalog.tools.iter().any(|t| t.name == tool.name) {
            catalog.issues.push(ToolIssue {
                path: format!("server:{}", tool.name),
                reason: format!("duplicate tool name `{}`", tool.name),
            });
        } else {
            catalog.tools.push(tool.clone());
        }
    }

    let dir = workspace_root.join(TOOLS_DIR);
    let mut files: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
            .collect(),
        Err(err) => {
            if err.kind() != std::io::ErrorKind::NotFound {
                catalog.issues.push(ToolIssue {
                    path: TOOLS_DIR.to_string(),
                    reason: format!("cannot list folder: {err}"),
                });
            }
            Vec::new()
        }
    };
    files.sort();
    for file in files {
        let shown = format!(
            "{TOOLS_DIR}/{}",
            file.file_name().unwrap_or_default().to_string_lossy()
        );
        match load_tool_file(&file, &shown) {
            Ok(tool) if catalog.tools.iter().any(|t| t.name == tool.name) => {
                catalog.issues.push(ToolIssue {
                    path: shown,
                    reason: format!("duplicate tool name `{}`", tool.name),
                });
            }
            Ok(tool) => catalog.tools.push(tool),
            Err(err) => {
                tracing::warn!(path = %err.path, reason = %err.problem, "skipping tool definition");
                catalog.issues.push(ToolIssue {
                    path: err.path,
                    reason: err.problem.to_string(),
                });
            }
        }
    }
    catalog
}

/// Why a `.promptd/tools/*.json` file was skipped.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ToolFileError {
    /// Workspace-relative path of the file.
    pub path: String,
    pub problem: ToolFileProblem,
}

/// What is wrong with a tool definition file.
#[derive(Debug, thiserror::Error)]
pub enum ToolFileProblem {
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    #[error("not a Plandex tool definition: {0}")]
    Shape(serde_json::Error),
    #[error("toolName `{0}` must be non-empty without spaces")]
    Name(String),
    #[error("{field} is not valid JSON: {source}")]
    SchemaJson {
        field: &'static str,
        source: serde_json::Error,
    },
    #[error("{field} is not a valid JSON Schema: {message}")]
    Schema {
        field: &'static str,
        message: String,
    },
    #[error("inputSchema must be a JSON object schema")]
    InputNotObject,
    #[error("executionType `http` needs executionDetails.url (a string)")]
    HttpWithoutUrl,
    #[error("executionDetails must be a JSON object")]
    DetailsNotObject,
}

fn load_tool_file(file: &Path, shown: &str) -> Result<ToolDefinition, ToolFileError> {
    parse_tool_file(file, shown).map_err(|problem| ToolFileError {
        path: shown.to_string(),
        problem,
    })
}

fn parse_tool_file(file: &Path, shown: &str) -> Result<ToolDefinition, ToolFileProblem> {
    let raw = std::fs::read_to_string(file).map_err(ToolFileProblem::Read)?;
    let parsed: PlandexToolFile = serde_json::from_str(&raw).map_err(ToolFileProblem::Shape)?;
    let name = parsed.tool_name.trim();
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(ToolFileProblem::Name(parsed.tool_name));
    }
    let input_schema = compile_schema("inputSchema", &parsed.input_schema)?;
    if !input_schema.is_object() {
        return Err(ToolFileProblem::InputNotObject);
    }
    let output_schema = parsed
        .output_schema
        .as_deref()
        .map(|s| compile_schema("outputSchema", s))
        .transpose()?;
    match (&parsed.execution_type, &parsed.execution_details) {
        (ExecutionType::Http, details) if !details["url"].is_string() => {
            return Err(ToolFileProblem::HttpWithoutUrl);
        }
        (_, details) if !(details.is_object() || details.is_null()) => {
            return Err(ToolFileProblem::DetailsNotObject);
        }
        _ => {}
    }
    Ok(ToolDefinition {
        name: name.to_string(),
        description: parsed.description,
        input_schema,
        output_schema,
        origin: ToolOrigin::Workspace {
            path: shown.to_string(),
            execution_type: parsed.execution_type,
            execution_details: parsed.execution_details,
        },
    })
}

/// Parses a schema string and compiles it, so a schema the validator would reject never reaches
/// the model.
fn compile_schema(field: &'static str, text: &str) -> Result<Value, ToolFileProblem> {
    let schema: Value = serde_json::from_str(text)
        .map_err(|source| ToolFileProblem::SchemaJson { field, source })?;
    jsonschema::validator_for(&schema).map_err(|e| ToolFileProblem::Schema {
        field,
        message: e.to_string(),
    })?;
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_tool_file_is_named_with_its_reason() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(TOOLS_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("bad.json"),
            r#"{"toolName": "bad", "description": "d", "inputSchema": "true",
                "executionType": "predefined_server_function"}"#,
        )
        .unwrap();
        let err = load_tool_file(&dir.join("bad.json"), ".promptd/tools/bad.json").unwrap_err();
        assert!(matches!(err.problem, ToolFileProblem::InputNotObject));
        assert_eq!(
            err.to_string(),
            ".promptd/tools/bad.json: inputSchema must be a JSON object schema"
        );
        let catalog = load_tools(root.path(), &[]);
        assert_eq!(
            catalog.issues,
            [ToolIssue {
                path: ".promptd/tools/bad.json".into(),
                reason: "inputSchema must be a JSON object schema".into(),
            }]
        );
    }
}
