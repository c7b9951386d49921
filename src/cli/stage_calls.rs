//! `promptd enhance` and `promptd compose`: flags into catalog requests, the same
//! [`Stages`] calls the MCP tools `enhance_prompt` and `compose_prompt` make (as the trusted
//! local user, whose workspace defaults to the current directory), and the result printed.
//! `promptd run`: the studio's Run ([`Stages::run`]), the answer printed as it streams.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;

use super::common::{CommonArgs, command_line_file};
use crate::catalog::{ComposeInput, EnhanceRequest, compose_help};
use crate::enhance::{EnhanceStatus, result_body};
use crate::stages::{Caller, Stages};

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
pub struct RunArgs {
    /// Prompt name.
    pub name: String,
    /// Argument as key=value (repeatable); values are coerced to the declared type.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// Arguments as a JSON object; --arg values override it.
    #[arg(long = "args-json", value_name = "JSON")]
    pub args_json: Option<String>,
    /// The model (default: the prompt's frontmatter `model`, else LLM_MODEL).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Also run another variant with the same arguments and compare (repeat for more, up to
    /// 5): the prompt at a git revision (tag, branch, commit), or another prompt (a name the
    /// registry holds, or `OTHER@REV`). Every answer is printed, then the diff of each variant's
    /// rendered text against the first's.
    #[arg(long, value_name = "REV|NAME")]
    pub vs: Vec<String>,
    /// Print the recorded run as JSON (after the answer is complete); with --vs, every run
    /// and the rendered diffs.
    #[arg(long)]
    pub json: bool,
}

/// A catalog description as a flag's help (clap's style: no closing period).
fn flag_help(description: &'static str) -> &'static str {
    description.strip_suffix('.').unwrap_or(description)
}

/// The flags of `promptd compose`: the fields of [`ComposeInput`], described as the catalog
/// describes them.
#[derive(Debug, Args)]
pub struct ComposeArgs {
    #[arg(long, help = flag_help(compose_help::QUERY))]
    pub query: String,
    /// Workspace root (default: the current directory).
    #[arg(long, value_name = "D")]
    pub dir: Option<PathBuf>,
    #[arg(long, value_name = "CURRENT", help = flag_help(compose_help::FILE))]
    pub file: Option<PathBuf>,
    #[arg(long = "doc", value_name = "F", help = flag_help(compose_help::DOCS))]
    pub docs: Vec<PathBuf>,
    #[arg(long, value_name = "N", help = flag_help(compose_help::DOCS_BUDGET))]
    pub docs_budget: Option<usize>,
    #[arg(long, value_name = "NAME", help = flag_help(compose_help::SYSTEM))]
    pub system: Option<String>,
    /// Print the result (text, prefix, tokens, ledger) as JSON.
    #[arg(long)]
    pub json: bool,
}

fn stages(common: &CommonArgs) -> Result<Arc<Stages>> {
    let library = Arc::new(common.open_library()?);
    Ok(Arc::new(Stages::one_shot(library)?))
}

/// A runtime for one stage call.
fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The local user, in the current directory.
fn caller() -> Result<Caller> {
    Ok(Caller::Trusted {
        cwd: std::env::current_dir()?,
    })
}

/// `promptd enhance`: exit 0 when enhanced or the original is returned, 1 when blocked.
pub fn enhance(common: &CommonArgs, args: &EnhanceArgs, out: &mut dyn Write) -> Result<u8> {
    let stages = stages(common)?;
    let request = EnhanceRequest {
        prompt: args.prompt.clone(),
        active_file: args.active_file.as_deref().map(command_line_file),
        working_directory: args.dir.clone(),
    };
    let result = runtime()?.block_on(stages.enhance(request, caller()?))?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &result)?;
        writeln!(out)?;
    } else {
        // The prompt to hand on is all of stdout; the warnings go to stderr.
        write!(out, "{}", result_body(&result))?;
        for w in &result.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(u8::from(result.status == EnhanceStatus::Blocked))
}

/// `promptd compose`.
pub fn compose(common: &CommonArgs, args: &ComposeArgs, out: &mut dyn Write) -> Result<u8> {
    let stages = stages(common)?;
    let input = ComposeInput {
        query: args.query.clone(),
        dir: args.dir.clone(),
        file: args.file.as_deref().map(command_line_file),
        docs: args.docs.clone(),
        docs_budget: args.docs_budget,
        system: args.system.clone(),
    };
    let composed = runtime()?.block_on(stages.compose(input, caller()?))?;
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

/// `promptd run`: the answer on stdout as it streams (or the recorded run as JSON), the model,
/// token counts and timings on stderr; exit 1 when the call failed (the run is recorded).
pub fn run(common: &CommonArgs, args: &RunArgs, out: &mut dyn Write) -> Result<u8> {
    let stages = stages(common)?;
    let request = crate::stages::run::RunRequest {
        prompt: args.name.clone(),
        arguments: super::parse_cli_args(&args.args, args.args_json.as_deref())?,
        settings: crate::stages::llm::ModelSettings {
            model: args.model.clone(),
            ..Default::default()
        },
    };
    if !args.vs.is_empty() {
        return run_versus(&stages, request, &args.vs, args.json, out);
    }
    let json = args.json;
    let mut on_text = move |t: &str| {
        if !json {
            let mut stdout = std::io::stdout();
            let _ = stdout.write_all(t.as_bytes());
            let _ = stdout.flush();
        }
    };
    let record =
        runtime()?.block_on(stages.run(request, crate::library::Visibility::All, &mut on_text))?;
    if json {
        serde_json::to_writer_pretty(&mut *out, &record)?;
        writeln!(out)?;
    } else if !record.answer.ends_with('\n') && !record.answer.is_empty() {
        writeln!(out)?;
    }
    if let Some(e) = &record.error {
        eprintln!("error: {e}");
    }
    print_run_facts(&record);
    Ok(u8::from(record.error.is_some()))
}

/// The model, token counts, timings and record id of a run, on stderr.
fn print_run_facts(record: &crate::stages::run::RunRecord) {
    eprintln!(
        "{} · {} tokens in · {} out{} · first byte {:.0} ms · {:.0} ms · recorded as {}",
        record.model,
        record.tokens_in,
        record.tokens_out,
        if record.tokens_estimated {
            " (counted by promptd)"
        } else {
            ""
        },
        record.first_byte_ms,
        record.latency_ms,
        record.id
    );
}

/// The most variants `--vs` adds to the first.
const MAX_VS: usize = 5;

/// `promptd run NAME --vs REV|OTHER [--vs …]`: every variant rendered first (a bad revision or
/// argument fails before any model call), then run one after the other; every answer, then the
/// unified diff of each variant's rendered text against the first's.
fn run_versus(
    stages: &Arc<Stages>,
    first: crate::stages::run::RunRequest,
    vs: &[String],
    json: bool,
    out: &mut dyn Write,
) -> Result<u8> {
    if vs.len() > MAX_VS {
        anyhow::bail!(
            "--vs was given {} times; at most {MAX_VS} variants are compared with the first",
            vs.len()
        );
    }
    let library = stages.library();
    let spec_of = |vs: &str| {
        if vs.contains('@') || library.snapshot().registry.get(vs).is_some() {
            vs.to_string()
        } else {
            format!("{}@{vs}", first.prompt)
        }
    };
    let rendered = std::iter::once(first.prompt.clone())
        .chain(vs.iter().map(|v| spec_of(v)))
        .map(|spec| {
            crate::compare::render_variant(
                library,
                &spec,
                &first.arguments,
                crate::library::Visibility::All,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let base = &rendered[0];
    let diffs: Vec<String> = rendered[1..]
        .iter()
        .map(|other| crate::compare::unified(&base.text, &other.text, &base.spec, &other.spec))
        .collect();
    let rt = runtime()?;
    let mut quiet = |_: &str| {};
    // Each variant runs as it was rendered for the diffs (the first's arguments and settings).
    let mut records = Vec::with_capacity(rendered.len());
    for variant in &rendered {
        records.push(rt.block_on(stages.run_rendered(variant, &first.settings, &mut quiet))?);
    }
    if json {
        let against: Vec<_> = rendered[1..]
            .iter()
            .zip(&diffs)
            .map(|(other, diff)| {
                serde_json::json!({ "left": base.spec, "right": other.spec, "diff": diff })
            })
            .collect();
        serde_json::to_writer_pretty(
            &mut *out,
            &serde_json::json!({
                "left": records[0],
                "right": records[1],
                "renderedDiff": diffs[0],
                "variants": records,
                "renderedDiffs": against,
            }),
        )?;
        writeln!(out)?;
    } else {
        for (variant, record) in rendered.iter().zip(&records) {
            writeln!(out, "=== {} ===", variant.spec)?;
            write!(out, "{}", record.answer)?;
            if !record.answer.ends_with('\n') {
                writeln!(out)?;
            }
        }
        for diff in &diffs {
            writeln!(out, "=== rendered diff ===")?;
            if diff.is_empty() {
                writeln!(out, "(the rendered texts are identical)")?;
            } else {
                write!(out, "{diff}")?;
            }
        }
    }
    for (variant, record) in rendered.iter().zip(&records) {
        if let Some(e) = &record.error {
            eprintln!("error: {}: {e}", variant.spec);
        }
        print_run_facts(record);
    }
    Ok(u8::from(records.iter().any(|r| r.error.is_some())))
}
