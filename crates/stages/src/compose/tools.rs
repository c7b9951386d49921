//! The tools stage: the catalog of tools the model may call — the MCP server's own tools (filled
//! by the caller) followed by the workspace's `.promptd/tools/*.json` definitions in Plandex's
//! shape (`toolName`, `description`, `inputSchema`/`outputSchema` as JSON Schema *strings*,
//! `executionType` `http` | `predefined_server_function`, `executionDetails`), read and checked
//! by the tool registry's loader ([`crate::tools::definition`]). A file that fails is reported
//! as a [`ToolIssue`] (path, line, column, reason) and skipped; the others still load.

use std::path::Path;

use serde::Serialize;

pub use crate::tools::definition::{
    ExecutionType, TOOLS_DIR, ToolDefinition, ToolIssue, ToolOrigin,
};

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

/// Server tools (in the order given) then the valid definitions of the workspace's
/// `.promptd/tools` (sorted by file name), read by the tool registry's loader
/// ([`crate::tools::definition::load_file`]).
pub fn load_tools(workspace_root: &Path, server_tools: &[ToolDefinition]) -> ModelTools {
    let mut catalog = ModelTools::default();
    for tool in server_tools {
        if catalog.tools.iter().any(|t| t.name == tool.name) {
            catalog.issues.push(ToolIssue::new(
                format!("server:{}", tool.name),
                format!("duplicate tool name `{}`", tool.name),
            ));
        } else {
            catalog.tools.push(tool.clone());
        }
    }
    let (files, issues) = crate::tools::definition_files(&[workspace_root.join(TOOLS_DIR)]);
    catalog.issues.extend(issues.into_iter().map(|mut i| {
        i.path = TOOLS_DIR.to_string();
        i
    }));
    let reserved: Vec<&str> = server_tools.iter().map(|t| t.name.as_str()).collect();
    for file in files {
        let shown = crate::tools::shown_path(&file, workspace_root);
        match crate::tools::definition::load_file(&file, &shown, &reserved) {
            Ok(tool) if catalog.tools.iter().any(|t| t.name == tool.name()) => {
                catalog.issues.push(ToolIssue::new(
                    shown,
                    format!("duplicate tool name `{}`", tool.name()),
                ));
            }
            Ok(tool) => catalog.tools.push(tool.definition),
            Err(err) => {
                tracing::warn!("skipping tool definition {err}");
                catalog.issues.push(ToolIssue {
                    path: err.path,
                    line: Some(err.line),
                    column: Some(err.column),
                    reason: err.problem.to_string(),
                });
            }
        }
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_tool_file_is_named_with_its_place_and_reason() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(TOOLS_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("bad.json"),
            "{\"toolName\": \"bad\", \"description\": \"d\",\n  \"inputSchema\": \"true\",\n  \"executionType\": \"predefined_server_function\"}",
        )
        .unwrap();
        let catalog = load_tools(root.path(), &[]);
        assert_eq!(catalog.issues.len(), 1);
        assert_eq!(
            catalog.issues[0].to_string(),
            ".promptd/tools/bad.json:2:3: inputSchema must be a JSON object schema"
        );
    }
}
