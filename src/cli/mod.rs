//! The command-line interface: it parses flags (clap derive, here and in the command modules)
//! and prints. Every command calls the same library ([`crate::library`]) or stage
//! ([`crate::stages`]) functions the MCP server calls; `serve` and `studio` hand the
//! library to [`crate::mcp`], the only commands that start the MCP adapter.

pub mod common;
pub mod rag;
pub mod scan;
pub mod stage_calls;
pub mod tools;

pub use common::CommonArgs;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::{Map, Value};

use crate::library::GetPromptsRequest;
use crate::registry::{PromptCategory, Severity};

mod prompt_tests;

/// promptd: prompt-template registry, renderer and MCP server.
#[derive(Debug, Parser)]
#[command(name = "promptd", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List prompts: names, titles and argument summaries.
    List(ListArgs),
    /// Render a prompt with arguments.
    Get(GetArgs),
    /// Lint every prompt (exit 1 on any error, 0 with only warnings).
    Check,
    /// Scan files or standard input for secrets (exit 0 clean, 1 secrets, 2 scanner error).
    Scan(scan::ScanArgs),
    /// Build or refresh the retrieval index of a repository.
    Index(rag::IndexArgs),
    /// Print the repository context retrieved for a prompt.
    Context(rag::ContextArgs),
    /// Snapshot-test prompts: render every case and compare with its `.snap` file.
    Test(prompt_tests::TestArgs),
    /// Rewrite a request into an execution-ready prompt, grounded in the repository (LLM_* env).
    Enhance(stage_calls::EnhanceArgs),
    /// Compose the final prompt: system prompt, tools, project rules and docs under a budget.
    Compose(stage_calls::ComposeArgs),
    /// Run a prompt against the configured model (LLM_* env), streaming the answer; the run
    /// is recorded in .promptd/runs/. `--vs REV|NAME` runs a second variant and compares.
    Run(stage_calls::RunArgs),
    /// The git commits that changed a prompt's file, newest first, with its version hash at
    /// each.
    History(HistoryArgs),
    /// Serve the prompts over MCP: stdio by default, streamable HTTP with --http (and the
    /// studio page at /).
    Serve(ServeArgs),
    /// Open the studio: a live web page to browse, fill, render, check and test prompts.
    Studio(StudioArgs),
    /// Tool definitions (.promptd/tools): list, add, remove, call, parse an invocation reply.
    Tools(tools::ToolsArgs),
}

#[derive(Debug, Args)]
pub struct StudioArgs {
    /// Address to listen on (loopback; port 0 picks a free one). Default: 127.0.0.1 on the
    /// port of the last start on this project while it is free (`.promptd/studio/`), so an
    /// open page reconnects.
    #[arg(long, value_name = "ADDR")]
    pub addr: Option<std::net::SocketAddr>,
    /// Open the page in the browser ($BROWSER, else xdg-open).
    #[arg(long)]
    pub open: bool,
    /// The token the page (and /mcp) require; default: a random one, printed in the address.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "PROMPTD_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,
    /// No token at all (loopback only: anyone on this machine can read the prompts).
    #[arg(long, conflicts_with = "auth_token")]
    pub no_token: bool,
    /// Show system prompts too (the page shows what its /mcp serves).
    #[arg(long)]
    pub expose_system: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Bearer token every HTTP request must carry; required to bind a non-loopback address.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "PROMPTD_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,
    /// Also offer system prompts (promptd's internal templates) as MCP prompts.
    #[arg(long)]
    pub expose_system: bool,
    /// prompts/list page size.
    #[arg(long, value_name = "N", default_value_t = crate::mcp::DEFAULT_PAGE_SIZE,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub page_size: usize,
    /// With --http: keep no MCP sessions, so every request can go to any replica behind a
    /// load balancer (clients get no list_changed notifications; they compare versions).
    #[arg(long, requires = "http")]
    pub stateless: bool,
    /// With --http: serve connections on N threads, 1 to 1024 (default: one per CPU this
    /// process may use).
    #[arg(long, value_name = "N", requires = "http",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub workers: Option<usize>,
    /// Do not watch prompt folders and the config file for changes.
    #[arg(long)]
    pub no_watch: bool,
    /// Also poll the prompt folders and the config file every MS milliseconds, for folders whose
    /// changes file events miss (0: never poll). Default: every 2000 ms when a watched folder
    /// is on a network or FUSE file system (NFS, SMB, CephFS, sshfs, 9p), else never.
    #[arg(long, value_name = "MS", env = "PROMPTD_WATCH_POLL",
          value_parser = clap::value_parser!(u64).range(0..=86_400_000))]
    pub watch_poll: Option<u64>,
    /// With --http: do not serve the studio page at /.
    #[arg(long, requires = "http")]
    pub no_studio: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print the wit-get-prompts listing envelope as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// Prompt name; `NAME@REV` renders it as of a git revision (tag, branch, commit).
    pub name: String,
    /// Argument as key=value (repeatable); values are coerced to the declared type.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// Arguments as a JSON object; --arg values override it.
    #[arg(long = "args-json", value_name = "JSON")]
    pub args_json: Option<String>,
    /// Metadata only: do not render.
    #[arg(long)]
    pub no_content: bool,
    /// Print the wit-get-prompts envelope as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Prompt name.
    pub name: String,
    /// At most this many commits.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub limit: usize,
    /// Print the history as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the CLI; the binary's `main` is just this.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Logs go to stderr only: stdout is reserved for command output and MCP frames.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Dispatches a parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<u8> {
    // Each command locks stdout itself: `serve` writes MCP frames from other threads.
    let out = || std::io::stdout().lock();
    match cli.command {
        Command::List(args) => list(&cli.common, &args, &mut out()),
        Command::Get(args) => get(&cli.common, &args, &mut out()),
        Command::Check => check(&cli.common, &mut out()),
        Command::Index(args) => {
            let settings = rag_settings(&cli.common)?;
            Ok(u8::try_from(rag::run_index(&args, &settings, &mut out())?).unwrap_or(1))
        }
        Command::Context(args) => {
            let settings = rag_settings(&cli.common)?;
            Ok(u8::try_from(rag::run_context(&args, &settings, &mut out())?).unwrap_or(1))
        }
        Command::Scan(args) => {
            let code = scan::run_scan(&args, &mut std::io::stdin().lock(), &mut out());
            Ok(u8::try_from(code).unwrap_or(2))
        }
        Command::Test(args) => prompt_tests::test(&cli.common, &args, &mut out()),
        Command::Enhance(args) => stage_calls::enhance(&cli.common, &args, &mut out()),
        Command::Compose(args) => stage_calls::compose(&cli.common, &args, &mut out()),
        Command::Run(args) => stage_calls::run(&cli.common, &args, &mut out()),
        Command::History(args) => history(&cli.common, &args, &mut out()),
        Command::Serve(args) => serve(&cli.common, &args),
        Command::Studio(args) => studio(&cli.common, &args),
        Command::Tools(args) => tools::run(&cli.common, &args, &mut out()),
    }
}

/// What `promptd index` and `promptd context` take from the library's config snapshot, as the
/// stages do: the retrieval settings (flags override them per command) and the trusted
/// workspace policy (`workspace.allowedFolders`).
pub fn rag_settings(common: &CommonArgs) -> Result<rag::RagSettings> {
    let library = common.open_library()?;
    let snapshot = library.snapshot();
    let config = crate::rag::RagConfig::from_config(&snapshot.config, &snapshot.limits)?;
    let workspace = crate::workspace::WorkspaceSettings::from_config(&snapshot.config)
        .map_err(anyhow::Error::msg)?;
    Ok(rag::RagSettings {
        config,
        policy: crate::workspace::WorkspacePolicy::trusted(&workspace),
    })
}

fn print_json(out: &mut dyn Write, v: &impl serde::Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    writeln!(out)?;
    Ok(())
}

fn list(common: &CommonArgs, args: &ListArgs, out: &mut dyn Write) -> Result<u8> {
    let lib = common.open_library()?;
    if args.json {
        let resp = lib.get_prompts(&GetPromptsRequest {
            include_content: false,
            include_system: true,
            ..Default::default()
        });
        print_json(out, &resp)?;
        report_not_loaded(&lib.snapshot().registry);
        return Ok(0);
    }
    let snap = lib.snapshot();
    let width = snap
        .registry
        .prompts()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(4);
    for p in snap.registry.prompts() {
        let args: Vec<String> = p
            .arguments
            .iter()
            .map(|a| {
                let mut s = a.name.clone();
                if let Some(t) = a.declared_type() {
                    s.push(':');
                    s.push_str(t.as_str());
                }
                if let Some(d) = &a.default {
                    s.push('=');
                    s.push_str(&crate::dialect::display_value(d));
                } else if !a.required {
                    s.push('?');
                }
                s
            })
            .collect();
        let tag = match p.category {
            PromptCategory::System => " [system]",
            PromptCategory::User => "",
        };
        writeln!(
            out,
            "{:width$}  {}{tag}",
            p.name,
            p.title
                .as_deref()
                .or(p.description.as_deref())
                .unwrap_or(""),
        )?;
        if !args.is_empty() {
            writeln!(out, "{:width$}  args: {}", "", args.join(", "))?;
        }
    }
    for d in snap.registry.diagnostics() {
        eprintln!("{d}");
    }
    report_not_loaded(&snap.registry);
    Ok(0)
}

/// Says on stderr how many prompt files failed to load, and which.
fn report_not_loaded(registry: &crate::registry::Registry) {
    let failed = registry.not_loaded();
    if !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|d| d.path.as_str()).collect();
        eprintln!(
            "{} prompt file{} not loaded: {}",
            failed.len(),
            if failed.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
    }
}

/// Parses `--args-json` and `--arg k=v` into one map (`--arg` wins).
pub fn parse_cli_args(args: &[String], json: Option<&str>) -> Result<Map<String, Value>> {
    let mut map = match json {
        Some(j) => {
            match serde_json::from_str::<Value>(j).context("--args-json is not valid JSON")? {
                Value::Object(m) => m,
                other => bail!("--args-json must be a JSON object, got {other}"),
            }
        }
        None => Map::new(),
    };
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            bail!("--arg `{a}`: expected KEY=VALUE");
        };
        if k.trim().is_empty() {
            bail!("--arg `{a}`: empty key");
        }
        map.insert(k.trim().to_string(), Value::String(v.to_string()));
    }
    Ok(map)
}

fn get(common: &CommonArgs, args: &GetArgs, out: &mut dyn Write) -> Result<u8> {
    let lib = common.open_library()?;
    let map = parse_cli_args(&args.args, args.args_json.as_deref())?;
    let req = GetPromptsRequest {
        prompt_name: Some(args.name.clone()),
        include_content: !args.no_content,
        args: Some(map),
        ..Default::default()
    };
    let resp = lib.get_prompts(&req);
    if args.json {
        print_json(out, &resp)?;
        return Ok(if resp.success && resp.errors.is_empty() {
            0
        } else {
            1
        });
    }
    if resp.metadata.found == Some(false) && args.name.contains('@') && !resp.errors.is_empty() {
        // `NAME@REV`: the revision or the prompt at it is missing; the error says which.
        for e in &resp.errors {
            eprintln!("error: {e}");
        }
        return Ok(1);
    }
    if resp.metadata.found == Some(false) {
        // The contract's message points agents at the tool; a CLI user gets the command.
        eprintln!(
            "error: unknown prompt `{}` (`promptd list` shows every prompt)",
            args.name
        );
        for w in &resp.warnings {
            eprintln!("{w}");
        }
        return Ok(1);
    }
    for w in &resp.warnings {
        eprintln!("warning: {w}");
    }
    if !resp.success || !resp.errors.is_empty() {
        for e in &resp.errors {
            eprintln!("error: {e}");
        }
        return Ok(1);
    }
    let Some(prompt) = resp.prompt() else {
        bail!("{}: no prompt in the answer", args.name);
    };
    if args.no_content {
        print_json(out, prompt)?;
    } else {
        let text = prompt.content.as_deref().unwrap_or_default();
        write!(out, "{text}")?;
        if !text.ends_with('\n') {
            writeln!(out)?;
        }
    }
    Ok(0)
}

fn history(common: &CommonArgs, args: &HistoryArgs, out: &mut dyn Write) -> Result<u8> {
    let lib = common.open_library()?;
    let snap = lib.snapshot();
    let Some(prompt) = snap.registry.get(&args.name) else {
        eprintln!(
            "error: unknown prompt `{}` (`promptd list` shows every prompt)",
            args.name
        );
        return Ok(1);
    };
    let history = match lib.versions().history(prompt, args.limit) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(1);
        }
    };
    if args.json {
        print_json(out, &*history)?;
        return Ok(0);
    }
    writeln!(
        out,
        "{} ({}), working copy {}",
        history.prompt, history.path, history.working
    )?;
    for v in history.versions.iter() {
        writeln!(
            out,
            "{}  {}  {}  {}",
            v.short,
            v.date,
            v.version_hash.as_deref().unwrap_or("(deleted)"),
            v.summary
        )?;
    }
    if history.truncated {
        writeln!(out, "(older commits not listed)")?;
    }
    Ok(0)
}

fn check(common: &CommonArgs, out: &mut dyn Write) -> Result<u8> {
    let lib = common.open_library()?;
    let snap = lib.snapshot();
    for w in &snap.config.warnings {
        writeln!(out, "{w}")?;
    }
    let diags = crate::lint::check(&snap);
    for d in &diags {
        writeln!(out, "{d}")?;
    }
    let stages = crate::stages::Stages::one_shot(std::sync::Arc::new(lib))?;
    let tools = stages.served_tools();
    for issue in &tools.issues {
        writeln!(out, "error: {issue}")?;
    }
    let errors = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count()
        + tools.issues.len();
    let warnings = diags.len() + tools.issues.len() - errors + snap.config.warnings.len();
    let definitions = tools.tools.len() + tools.issues.len();
    let checked_tools = if definitions == 0 {
        String::new()
    } else {
        format!(" and {definitions} tool definition(s)")
    };
    writeln!(
        out,
        "checked {} prompts{checked_tools}: {errors} error(s), {warnings} warning(s)",
        snap.registry.len()
    )?;
    Ok(u8::from(errors > 0))
}

fn serve(common: &CommonArgs, args: &ServeArgs) -> Result<u8> {
    // The prompt folders are read while the server already answers the handshake.
    let lib = crate::library::PromptLibrary::open_deferred(common.library_options()?)?;
    if args.http.is_none() && args.auth_token.is_some() {
        tracing::debug!("--auth-token only applies to --http");
    }
    let options = crate::mcp::ServeOptions {
        handler: crate::mcp::HandlerOptions {
            expose_system: args.expose_system,
            page_size: args.page_size,
        },
        http: args.http,
        auth_token: args.auth_token.clone(),
        watch: !args.no_watch,
        polling: crate::watch::Polling::from_millis(args.watch_poll),
        stateless: args.stateless,
        studio: (!args.no_studio).then(crate::mcp::StudioLaunch::default),
        workers: args.workers.and_then(std::num::NonZeroUsize::new),
    };
    crate::mcp::serve(lib, options)?;
    Ok(0)
}

fn studio(common: &CommonArgs, args: &StudioArgs) -> Result<u8> {
    if let Some(addr) = args.addr
        && !addr.ip().is_loopback()
    {
        bail!(
            "--addr {addr}: the studio is for one author on this machine; serve others with \
             `promptd serve --http ADDR --auth-token TOKEN`"
        );
    }
    let lib = crate::library::PromptLibrary::open_deferred(common.library_options()?)?;
    let store = crate::studio::address::AddressStore::for_project(lib.cwd());
    let remembered = if args.addr.is_none() {
        store.load()
    } else {
        None
    };
    let (token, show_token) = match (&args.auth_token, args.no_token) {
        (Some(t), _) => (Some(t.clone()), false),
        (None, true) => (None, false),
        (None, false) => match remembered.as_ref().and_then(|r| r.token.clone()) {
            Some(t) => (Some(t), true),
            None => (Some(random_token()?), true),
        },
    };
    let addr = match args.addr {
        Some(addr) => addr,
        None => {
            let addr = crate::studio::address::choose(
                std::net::Ipv4Addr::LOCALHOST.into(),
                remembered.map(|r| r.port),
            )
            .context("finding a free port for the studio")?;
            let kept = crate::studio::address::Remembered {
                port: addr.port(),
                token: token.clone().filter(|_| show_token),
            };
            if let Err(e) = store.save(&kept) {
                tracing::warn!(
                    "{}: {e}; the next start picks a new port",
                    store.file().display()
                );
            }
            addr
        }
    };
    let options = crate::mcp::ServeOptions {
        handler: crate::mcp::HandlerOptions {
            expose_system: args.expose_system,
            ..crate::mcp::HandlerOptions::default()
        },
        http: Some(addr),
        auth_token: token,
        watch: true,
        polling: crate::watch::Polling::Auto,
        stateless: false,
        studio: Some(crate::mcp::StudioLaunch {
            show_token,
            open: args.open,
        }),
        // One author's page: one thread.
        workers: Some(std::num::NonZeroUsize::MIN),
    };
    crate::mcp::serve(lib, options)?;
    Ok(0)
}

/// 32 random bytes from the system, as hex.
fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for the studio's token")?;
    Ok(hex::encode(bytes))
}
