//! `promptd test`: runs the prompt snapshot tests ([`crate::prompt_tests`]) and prints the
//! report. Only flags, environment and formatting live here.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::common::CommonArgs;
use crate::prompt_tests::report::{self, ReportStyle};
use crate::prompt_tests::{self, DEFAULT_CASES_DIR, DEFAULT_NOW, SnapshotUpdate, TestOptions};
use crate::render::Clock;

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Folder of case files (`*.yaml`); their snapshots live in its `snapshots/` subfolder
    /// [default: tests/prompts, when it exists].
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,
    /// Write new and changed snapshots as accepted `.snap` files (also in CI).
    #[arg(long)]
    pub accept: bool,
    /// Run only the cases whose `<prompt>@<case>` contains NAME.
    #[arg(long, value_name = "NAME")]
    pub filter: Option<String>,
    /// What to do with snapshot files no case produces any more (a renamed or deleted case),
    /// as `cargo insta test --unreferenced`. Not checked with --filter.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = Unreferenced::Warn)]
    pub unreferenced: Unreferenced,
}

/// `--unreferenced`: how stale snapshot files are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unreferenced {
    /// Say nothing.
    Ignore,
    /// List them (the run still passes).
    Warn,
    /// List them and fail the run.
    Reject,
    /// Delete them.
    Delete,
}

/// Runs the cases; exit code 1 on any failure (mismatch, missing snapshot, failed assertion,
/// render error, unreadable case).
pub fn test(common: &CommonArgs, args: &TestArgs, out: &mut dyn Write) -> Result<u8> {
    let lib = common.open_library()?;
    let snapshot = lib.snapshot();
    let base_dir = std::env::current_dir().context("current directory")?;
    let cases_dir = match &args.cases {
        Some(dir) if !dir.is_dir() => bail!("--cases {}: no such folder", dir.display()),
        Some(dir) => Some(dir.clone()),
        None => Some(PathBuf::from(DEFAULT_CASES_DIR)).filter(|d| d.is_dir()),
    };
    // Snapshots must not depend on the environment: PROMPTD_NOW is ignored, only an explicit
    // --now changes the default frozen clock.
    let default_now =
        Clock::parse(common.now.as_deref().unwrap_or(DEFAULT_NOW)).context("--now")?;
    let env = |k: &str| std::env::var(k).ok();
    let options = TestOptions {
        cases_dir,
        filter: args.filter.clone(),
        prompt: None,
        update: SnapshotUpdate::decide(
            args.accept,
            prompt_tests::is_ci(env("CI").as_deref()),
            env("INSTA_UPDATE").as_deref(),
        ),
        default_now,
        base_dir: base_dir.clone(),
    };
    let style = ReportStyle {
        colour: colour_wanted(),
        base_dir: &base_dir,
    };
    let mut failed = Vec::new();
    let mut io_error = None;
    let summary = prompt_tests::run(&snapshot, &options, &mut |case| {
        if !case.passed() {
            failed.push(case.id.clone());
        }
        if let Err(e) = report::write_case(out, case, &style) {
            io_error.get_or_insert(e);
        }
    })?;
    if let Some(e) = io_error {
        return Err(e.into());
    }
    if summary.passed + summary.failed == 0 {
        match &args.filter {
            Some(f) => eprintln!("error: no case matches --filter {f}"),
            None => eprintln!(
                "note: no test cases found (frontmatter `examples` of prompts in --prompts folders, or case files in {})",
                options
                    .cases_dir
                    .as_deref()
                    .unwrap_or(DEFAULT_CASES_DIR.as_ref())
                    .display()
            ),
        }
    }
    let mut stale_rejected = false;
    if args.filter.is_none() && args.unreferenced != Unreferenced::Ignore {
        let stale = prompt_tests::unreferenced_snapshots(&snapshot, &options)?;
        for path in stale.unwrap_or_default() {
            let shown = prompt_tests::shown_path(&path, &base_dir);
            match args.unreferenced {
                Unreferenced::Ignore => {}
                Unreferenced::Warn => writeln!(
                    out,
                    "warning: unreferenced snapshot {shown}: no case produces it (--unreferenced delete removes it)"
                )?,
                Unreferenced::Reject => {
                    writeln!(
                        out,
                        "error: unreferenced snapshot {shown}: no case produces it"
                    )?;
                    failed.push(format!("unreferenced snapshot {shown}"));
                    stale_rejected = true;
                }
                Unreferenced::Delete => {
                    std::fs::remove_file(&path).with_context(|| format!("deleting {shown}"))?;
                    writeln!(out, "deleted unreferenced snapshot {shown}")?;
                }
            }
        }
    }
    report::write_summary(out, &failed, &summary, &style)?;
    let no_match = args.filter.is_some() && summary.passed + summary.failed == 0;
    Ok(u8::from(summary.failed > 0 || no_match || stale_rejected))
}

/// Colour on a terminal unless `NO_COLOR` is set; `CLICOLOR_FORCE` forces it.
fn colour_wanted() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty() && v != "0");
    if set("CLICOLOR_FORCE") {
        return true;
    }
    !set("NO_COLOR") && std::io::stdout().is_terminal()
}
