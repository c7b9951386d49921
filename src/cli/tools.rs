//! `promptd tools`: the served tool definitions listed, added, removed, called and an
//! invocation reply parsed, through the same stage calls the MCP server makes
//! ([`Stages::served_tools`], [`Stages::call_tool`], [`parse_invocation`]) as the trusted
//! local user.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use super::common::CommonArgs;
use crate::compose::tools::{ExecutionType, TOOLS_DIR, ToolOrigin};
use crate::stages::tools::{definition, parse_invocation, reserved_names};
use crate::stages::{Caller, Stages};

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    pub command: ToolsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the served tool definitions: name, description, execution type, file.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a definition file and copy it into .promptd/tools (a taken name is refused).
    Add { file: PathBuf },
    /// Remove a definition by tool name (asks first unless --yes).
    Remove {
        name: String,
        #[arg(long)]
        yes: bool,
    },
    /// Call a tool as an MCP client would: arguments checked, executed, answer checked.
    Call {
        name: String,
        /// The arguments, a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args_json: String,
        /// Print the whole outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read a model's `plandex_tool_invocation` reply (a file, or standard input) and print the
    /// validated call, or what is wrong with it.
    Parse { file: Option<PathBuf> },
}

fn stages(common: &CommonArgs) -> Result<Arc<Stages>> {
    let library = Arc::new(common.open_library()?);
    Ok(Arc::new(Stages::one_shot(library)?))
}

fn execution_type(origin: &ToolOrigin) -> &'static str {
    match origin {
        ToolOrigin::Workspace {
            execution_type: ExecutionType::Http,
            ..
        } => "http",
        ToolOrigin::Workspace { .. } => "predefined_server_function",
        ToolOrigin::Server => "server",
    }
}

pub fn run(common: &CommonArgs, args: &ToolsArgs, out: &mut dyn Write) -> Result<u8> {
    let stages = stages(common)?;
    match &args.command {
        ToolsCommand::List { json } => list(&stages, *json, out),
        ToolsCommand::Add { file } => add(&stages, file, out),
        ToolsCommand::Remove { name, yes } => remove(&stages, name, *yes, out),
        ToolsCommand::Call {
            name,
            args_json,
            json,
        } => call(&stages, name, args_json, *json, out),
        ToolsCommand::Parse { file } => parse(&stages, file.as_ref(), out),
    }
}

fn list(stages: &Stages, json: bool, out: &mut dyn Write) -> Result<u8> {
    let served = stages.served_tools();
    if json {
        let tools: Vec<Value> = served
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name(),
                    "description": t.definition.description,
                    "executionType": execution_type(&t.definition.origin),
                    "file": t.path(),
                    "inputSchema": t.definition.input_schema,
                    "outputSchema": t.definition.output_schema,
                })
            })
            .collect();
        serde_json::to_writer_pretty(
            &mut *out,
            &json!({ "tools": tools, "issues": served.issues }),
        )?;
        writeln!(out)?;
    } else {
        for t in &served.tools {
            let description = t.definition.description.lines().next().unwrap_or_default();
            writeln!(
                out,
                "{}\t{}\t{}\t{}",
                t.name(),
                execution_type(&t.definition.origin),
                t.path(),
                description
            )?;
        }
        for issue in &served.issues {
            eprintln!("error: {issue}");
        }
    }
    Ok(u8::from(!served.issues.is_empty()))
}

fn add(stages: &Stages, file: &std::path::Path, out: &mut dyn Write) -> Result<u8> {
    let shown = file.display().to_string();
    let tool = definition::load_file(file, &shown, &reserved_names())?;
    let served = stages.served_tools();
    if let Some(taken) = served.find(tool.name()) {
        bail!(
            "a tool named `{}` is already defined in {}; remove it first (`promptd tools remove {}`)",
            tool.name(),
            taken.path(),
            tool.name()
        );
    }
    let dir = stages.library().cwd().join(TOOLS_DIR);
    let Some(file_name) = file.file_name() else {
        bail!("{shown}: not a file name");
    };
    let target = dir.join(file_name);
    if target.exists() {
        bail!(
            "{} exists already; rename the file to add it",
            target.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::copy(file, &target).with_context(|| format!("copying to {}", target.display()))?;
    writeln!(out, "added tool `{}` as {}", tool.name(), target.display())?;
    Ok(0)
}

fn remove(stages: &Stages, name: &str, yes: bool, out: &mut dyn Write) -> Result<u8> {
    let served = stages.served_tools();
    let Some(tool) = served.find(name) else {
        let known: Vec<&str> = served.tools.iter().map(|t| t.name()).collect();
        bail!(
            "no tool named `{name}`; the tools are: {}",
            known.join(", ")
        );
    };
    let path = stages.library().cwd().join(tool.path());
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "remove tool `{name}` ({}): pass --yes to confirm",
                path.display()
            );
        }
        eprint!("remove tool `{name}` ({})? [y/N] ", path.display());
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("not removed");
            return Ok(1);
        }
    }
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    writeln!(out, "removed tool `{name}` ({})", path.display())?;
    Ok(0)
}

fn call(
    stages: &Arc<Stages>,
    name: &str,
    args_json: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<u8> {
    let args: Map<String, Value> =
        serde_json::from_str(args_json).context("--args-json must be a JSON object")?;
    let caller = Caller::Trusted {
        cwd: std::env::current_dir()?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(stages.call_tool(name, args, caller))?;
    if json {
        serde_json::to_writer_pretty(&mut *out, &outcome)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", outcome.text)?;
    }
    Ok(u8::from(outcome.is_error))
}

fn parse(stages: &Stages, file: Option<&PathBuf>, out: &mut dyn Write) -> Result<u8> {
    let mut reply = String::new();
    match file {
        Some(f) => {
            reply =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?
        }
        None => {
            std::io::stdin().lock().read_to_string(&mut reply)?;
        }
    }
    match parse_invocation(&reply, &stages.served_tools()) {
        Ok(invocation) => {
            serde_json::to_writer_pretty(&mut *out, &invocation)?;
            writeln!(out)?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(1)
        }
    }
}
