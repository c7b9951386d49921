//! The flags every command shares (prompt folders, config file, clock, discovery), and the
//! prompt library they open.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use crate::library::{LibraryOptions, PromptLibrary, options_from_flags};
use crate::render::Clock;

/// Flags shared by every command (and by `serve`).
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Extra prompt folder; repeatable. A later folder shadows an earlier one by prompt name
    /// (after PROMPTD_PROMPTS; built-ins lowest).
    #[arg(long = "prompts", value_name = "DIR", global = true)]
    pub prompts: Vec<PathBuf>,
    /// Config file (default: PROMPTD_CONFIG, else ./.ado-mcp-config.json if present).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Freeze the clock for computed dates: RFC 3339 or YYYY-MM-DD (default: PROMPTD_NOW, else now).
    #[arg(long, value_name = "TIME", global = true)]
    pub now: Option<String>,
    /// Without --prompts, do not look for prompts/, .github/prompts/, .claude/commands/,
    /// .gemini/commands/, .cursor/commands/ and .opencode/command(s)/ in the current directory
    /// (config: prompts.discover).
    #[arg(long, global = true)]
    pub no_discover: bool,
    /// Leave promptd's built-in user prompts out; its system prompts stay available to the
    /// stages (config: prompts.builtinPrompts).
    #[arg(long, global = true)]
    pub no_builtin_prompts: bool,
}

impl CommonArgs {
    /// Library options for these flags.
    pub fn library_options(&self) -> Result<LibraryOptions> {
        let clock = Clock::from_option(self.now.as_deref()).context("--now / PROMPTD_NOW")?;
        Ok(LibraryOptions {
            no_discover: self.no_discover,
            no_builtin_prompts: self.no_builtin_prompts,
            ..options_from_flags(&self.prompts, self.config.as_deref(), clock)
        })
    }

    /// Opens the prompt library for these flags.
    pub fn open_library(&self) -> Result<PromptLibrary> {
        Ok(PromptLibrary::open(self.library_options()?)?)
    }
}

/// A file named on the command line (`--active-file`, `--file`): a relative path is relative to
/// the current directory when a file is there (as the shell completed it), else to the
/// repository (as MCP clients give it). `context`, `enhance` and `compose` all resolve it here.
pub fn command_line_file(path: &Path) -> PathBuf {
    if path.is_relative() && path.exists() {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    } else {
        path.to_path_buf()
    }
}
