//! `promptd enhance` and `promptd compose`: thin adapters over the stage pipelines, the same
//! calls the MCP tools `enhance_prompt` and `compose_prompt` make.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use super::CommonArgs;
use crate::enhance::{EnhanceRequest, EnhanceStatus, result_text, validate};
use crate::stages::{ComposeInput, Stages};
use crate::workspace::Workspace;

#[derive(Debug, Args)]
pub struct EnhanceArgs {
    /// The request to rewrite.
    pub prompt: String,
    /// The file with editor focus (the primary target).
    #[arg(long, value_name = "F")]
    pub active_file: Option<PathBuf>,
    /// The target repository (default: the current directory).
    #[arg(long, value_name = "D")]
    pub dir: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ComposeArgs {
    /// The user's current request.
    #[arg(long)]
    pub query: String,
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "D")]
    pub dir: Option<PathBuf>,
    /// The file the user is in (selects glob-scoped rules, nearest AGENTS.md).
    #[arg(long, value_name = "CURRENT")]
    pub file: Option<PathBuf>,
    /// Use these files as the docs (repeatable) instead of retrieving from the repository:
    /// regular files inside the workspace, each at most `limits.maxDocBytes`.
    #[arg(long = "doc", value_name = "F")]
    pub docs: Vec<PathBuf>,
    /// Token budget of the docs block (default: config `compose.docsBudget`, else 2048).
    #[arg(long, value_name = "N")]
    pub docs_budget: Option<usize>,
    /// System prompt to use (a registry prompt name; default compose_system).
    #[arg(long, value_name = "NAME")]
    pub system: Option<String>,
    /// Print the result (text, prefix, tokens, ledger) as JSON.
    #[arg(long)]
    pub json: bool,
}

fn stages(common: &CommonArgs) -> Result<Stages> {
    let library = Arc::new(common.open_library()?);
    Stages::one_shot(library).map_err(anyhow::Error::msg)
}

/// `promptd enhance`: exit 0 when enhanced or the original is returned, 1 when blocked.
pub fn enhance(common: &CommonArgs, args: &EnhanceArgs, out: &mut dyn Write) -> Result<u8> {
    let stages = stages(common)?;
    let request = EnhanceRequest {
        prompt: args.prompt.clone(),
        active_file: args.active_file.clone(),
        working_directory: Some(match &args.dir {
            Some(d) => d.clone(),
            None => std::env::current_dir()?,
        }),
    };
    let policy = stages.trusted_policy().map_err(anyhow::Error::msg)?;
    let validated = validate(&request, &policy)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(stages.enhancer().enhance(&validated, Vec::new()));
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &result)?;
        writeln!(out)?;
    } else {
        let text = result_text(&result);
        // Warnings go to stderr so stdout is exactly the prompt to hand on.
        for line in text.lines() {
            if line.starts_with("warning: ") {
                eprintln!("{line}");
            } else {
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(u8::from(result.status == EnhanceStatus::Blocked))
}

/// `promptd compose`.
pub fn compose(common: &CommonArgs, args: &ComposeArgs, out: &mut dyn Write) -> Result<u8> {
    let stages = stages(common)?;
    let root = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let policy = stages.trusted_policy().map_err(anyhow::Error::msg)?;
    let workspace = Workspace::open(&root, &policy).context("--dir")?;
    let input = ComposeInput {
        query: args.query.clone(),
        file: args.file.clone(),
        docs: args.docs.clone(),
        docs_budget: args.docs_budget,
        system: args.system.clone(),
    };
    let composed = stages.compose(
        &workspace,
        &input,
        crate::mcp::tools::server_tool_definitions(),
    )?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &composed)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", composed.text)?;
        for w in &composed.warnings {
            eprintln!("warning: {w}");
        }
        eprintln!(
            "tokens: total {} (user {}, system {}, tools {}, rules {}, docs {}); cacheable prefix {} tokens",
            composed.tokens_per_block.total,
            composed.tokens_per_block.user,
            composed.tokens_per_block.system,
            composed.tokens_per_block.tools,
            composed.tokens_per_block.rules,
            composed.tokens_per_block.docs,
            composed.prefix_tokens
        );
    }
    Ok(0)
}
