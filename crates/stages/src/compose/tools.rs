//! The tools stage: the catalog of tools the model may call — the MCP server's own tools (filled
//! by the caller) followed by the tool definitions the server serves (Plandex's shape:
//! `toolName`, `description`, `inputSchema`/`outputSchema` as JSON Schema *strings*,
//! `executionType` `http` | `predefined_server_function`, `executionDetails`), as the tool
//! registry ([`crate::tools::ToolRegistry`]) read and checked them from `.promptd/tools` and
//! `tools.folders`. A file that failed is reported as a [`ToolIssue`] (path, line, column,
//! reason); the others are offered.

use serde::Serialize;

use crate::tools::ServedTools;
use crate::tools::definition::ToolFileProblem;
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

/// Server tools (in the order given), then the definitions `defined` serves (in its order),
/// with its issues. A definition whose name a server tool of the list takes is an issue too.
pub fn offered_tools(server_tools: &[ToolDefinition], defined: &ServedTools) -> ModelTools {
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
    catalog.issues.extend(defined.issues.iter().cloned());
    for tool in &defined.tools {
        if catalog.tools.iter().any(|t| t.name == tool.name()) {
            catalog.issues.push(ToolIssue::new(
                tool.path(),
                ToolFileProblem::Shadows(tool.name().into()).to_string(),
            ));
        } else {
            catalog.tools.push(tool.definition.clone());
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
        let registry = crate::tools::ToolRegistry::default();
        registry.reload(&[dir], root.path());
        let catalog = offered_tools(&[], &registry.served());
        assert_eq!(catalog.issues.len(), 1);
        assert_eq!(
            catalog.issues[0].to_string(),
            ".promptd/tools/bad.json:2:3: inputSchema must be a JSON object schema"
        );
    }
}
