//! The predefined server functions a `predefined_server_function` tool names in
//! `executionDetails.functionName`: one table, [`FUNCTIONS`]; adding a function is one entry
//! there.
//!
//! `echoTool` and `simpleCalculator` follow Plandex's MCP documentation ("Predefined Server
//! Tools"): `echoTool` answers the JSON text of the input it received; `simpleCalculator` takes
//! `a`, `b` (numbers) and `operation` (`add` | `subtract`) and answers the result as a string
//! (`"25"`), an unsupported operation being an error. `render_prompt` and `search_repository`
//! wrap promptd's own stages: a registry prompt rendered with arguments, and the retrieval stage
//! over the caller's workspace (every chunk through the secret guard).
//!
//! A function runs on the blocking pool; its `Err` is a message for the model (a tool result
//! with `isError`), never a server fault.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Caller, Stages};

/// What a function may use.
pub struct FunctionContext<'a> {
    pub stages: &'a Stages,
    pub caller: &'a Caller,
}

/// One predefined function.
pub struct PredefinedFunction {
    pub name: &'static str,
    pub description: &'static str,
    /// Whether it reads the caller's workspace.
    pub uses_workspace: bool,
    pub call: fn(&FunctionContext<'_>, &Value) -> Result<Value, String>,
}

impl std::fmt::Debug for PredefinedFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every predefined function.
pub static FUNCTIONS: &[PredefinedFunction] = &[
    PredefinedFunction {
        name: "echoTool",
        description: "Returns the JSON text of its input.",
        uses_workspace: false,
        call: echo,
    },
    PredefinedFunction {
        name: "simpleCalculator",
        description: "`a` and `b` (numbers), `operation` `add` or `subtract`: the result as a string.",
        uses_workspace: false,
        call: calculate,
    },
    PredefinedFunction {
        name: "render_prompt",
        description: "`promptName` and `args` (an object): the registry prompt rendered, `{promptName, text}`.",
        uses_workspace: false,
        call: render_prompt,
    },
    PredefinedFunction {
        name: "search_repository",
        description: "`query`, optional `topK` and `workingDirectory`: retrieved chunks `{chunks: [{path, startLine, endLine, score, text}], warnings}`.",
        uses_workspace: true,
        call: search_repository,
    },
];

/// A function by name.
pub fn find(name: &str) -> Option<&'static PredefinedFunction> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// Every function's name, in table order.
pub fn names() -> Vec<&'static str> {
    FUNCTIONS.iter().map(|f| f.name).collect()
}

/// The input as `T`, or a message naming the field at fault.
fn input<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        format!("`{path}`: {}", e.into_inner())
    })
}

fn echo(_: &FunctionContext<'_>, value: &Value) -> Result<Value, String> {
    Ok(Value::String(value.to_string()))
}

#[derive(Deserialize)]
struct CalculatorInput {
    a: f64,
    b: f64,
    operation: String,
}

fn calculate(_: &FunctionContext<'_>, value: &Value) -> Result<Value, String> {
    let CalculatorInput { a, b, operation } = input(value)?;
    let result = match operation.as_str() {
        "add" => a + b,
        "subtract" => a - b,
        other => {
            return Err(format!(
                "unsupported operation `{other}`; use `add` or `subtract`"
            ));
        }
    };
    if !result.is_finite() {
        return Err(format!("{a} {operation} {b} is not a finite number"));
    }
    Ok(Value::String(number_text(result)))
}

/// A number as its shortest text: integral values without a fraction (`25`, not `25.0`).
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RenderInput {
    prompt_name: String,
    #[serde(default)]
    args: serde_json::Map<String, Value>,
}

fn render_prompt(ctx: &FunctionContext<'_>, value: &Value) -> Result<Value, String> {
    let RenderInput { prompt_name, args } = input(value)?;
    let library = ctx.stages.library();
    let snap = library.snapshot();
    let rendered = snap
        .render(&prompt_name, &args, library.clock())
        .map_err(|e| e.to_string())?;
    Ok(json!({ "promptName": rendered.name, "text": rendered.text }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SearchInput {
    query: String,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    working_directory: Option<std::path::PathBuf>,
}

fn search_repository(ctx: &FunctionContext<'_>, value: &Value) -> Result<Value, String> {
    let SearchInput {
        query,
        top_k,
        working_directory,
    } = input(value)?;
    if query.trim().is_empty() {
        return Err("`query`: must not be empty".into());
    }
    let stages = ctx.stages;
    let snap = stages.library().snapshot();
    let (dir, policy, mut warnings) = stages
        .requested_dir(&snap, ctx.caller, "workingDirectory", working_directory)
        .map_err(|e| e.to_string())?;
    let workspace = promptd_base::workspace::Workspace::open(&dir, &policy)
        .map_err(|e| format!("`workingDirectory`: {e}"))?;
    let config = stages.rag_config(&snap).map_err(|e| e.to_string())?;
    let query = promptd_rag::RetrievalQuery {
        query,
        active_file: None,
        top_k,
    };
    let retrieval = stages
        .retrievers
        .retrieve(&workspace, &config, &query)
        .map_err(|e| e.to_string())?;
    warnings.extend(retrieval.warnings);
    let docs = retrieval
        .chunks
        .iter()
        .map(crate::compose::DocChunk::retrieved)
        .collect();
    let (docs, _findings) = stages
        .guard_docs(&snap, docs, &mut warnings)
        .map_err(|e| e.to_string())?;
    let chunks: Vec<Value> = docs
        .iter()
        .map(|d| {
            json!({
                "path": d.path,
                "startLine": d.start_line,
                "endLine": d.end_line,
                "score": d.score,
                "text": d.text,
            })
        })
        .collect();
    Ok(json!({ "chunks": chunks, "warnings": warnings }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calculator_answers_as_plandex_documents() {
        let calc = |v: Value| {
            let stages = crate::tools::tests::stages();
            let caller = Caller::Trusted {
                cwd: std::env::temp_dir(),
            };
            calculate(
                &FunctionContext {
                    stages: &stages,
                    caller: &caller,
                },
                &v,
            )
        };
        assert_eq!(
            calc(json!({"a": 20, "b": 5, "operation": "add"})),
            Ok(json!("25"))
        );
        assert_eq!(
            calc(json!({"a": 1.5, "b": 2, "operation": "subtract"})),
            Ok(json!("-0.5"))
        );
        assert!(
            calc(json!({"a": 1, "b": 2, "operation": "divide"}))
                .unwrap_err()
                .contains("`divide`")
        );
        assert!(
            calc(json!({"a": "x", "b": 2, "operation": "add"}))
                .unwrap_err()
                .starts_with("`a`")
        );
    }
}
