//! The public repositories the benchmark's cases come from (clone URL, pinned history tip,
//! languages, repository-specific vendored or generated trees), where their bare git
//! directories are found on this machine, and the scratch work tree each one is checked out
//! into (`target/eval-history/<owner>+<name>/tree`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::paths::Lang;

/// One repository of the benchmark.
pub struct Repo {
    /// `owner/name` on GitHub.
    pub slug: &'static str,
    /// The newest commit whose history is used: results do not move when the mirror does.
    pub pinned: &'static str,
    /// The languages whose files count as source (gold files and the whole-file baseline).
    pub langs: &'static [Lang],
    /// Path prefixes holding vendored or generated code in some part of the history.
    pub foreign: &'static [&'static str],
}

impl Repo {
    /// `owner+name`, the folder name used by mirrors and scratch trees.
    pub fn key(&self) -> String {
        self.slug.replace('/', "+")
    }

    /// The short name used in tables (`requests`, `cobra`, ...).
    pub fn short(&self) -> &'static str {
        self.slug.rsplit('/').next().unwrap_or(self.slug)
    }

    pub fn url(&self) -> String {
        format!("https://github.com/{}.git", self.slug)
    }

    pub fn lang_label(&self) -> &'static str {
        self.langs[0].label()
    }
}

/// The benchmark's repositories: well-kept projects with descriptive fix commits, in four
/// languages, small enough to index quickly.
pub const REPOS: &[Repo] = &[
    Repo {
        slug: "psf/requests",
        pinned: "1f6589ec3a1ee910f9a65cc3ceac60b26677bc0e",
        langs: &[Lang::Python],
        foreign: &["requests/packages/", "src/requests/packages/"],
    },
    Repo {
        slug: "pallets/flask",
        pinned: "2ac89889f4cc330eabd50f295dcef02828522c69",
        langs: &[Lang::Python],
        foreign: &[],
    },
    Repo {
        slug: "encode/httpx",
        pinned: "ae1b9f66238f75ced3ced5e4485408435de10768",
        langs: &[Lang::Python],
        foreign: &[],
    },
    Repo {
        slug: "spf13/cobra",
        pinned: "adbc8813901bba65827259daa8e22ff94ec1f30e",
        langs: &[Lang::Go],
        foreign: &[],
    },
    Repo {
        slug: "gin-gonic/gin",
        pinned: "dcaa4296d111981ffb31ac3eba90bb63e1eb5ab9",
        langs: &[Lang::Go],
        foreign: &[],
    },
    Repo {
        slug: "honojs/hono",
        pinned: "28a9c128912de19f3fb28b00ae289c9b93f6f392",
        langs: &[Lang::TypeScript],
        foreign: &["deno_dist/"],
    },
    Repo {
        slug: "BurntSushi/ripgrep",
        pinned: "3fce3b5bb0236da2df6d99672afb8a719642eca7",
        langs: &[Lang::Rust],
        foreign: &[],
    },
];

/// Where bare git directories are looked for: `EVAL_HISTORY_MIRRORS`, else `/work/.mirror`
/// when it exists (the mirror of the machine this benchmark was built on), else
/// `target/eval-history/mirrors`.
pub fn mirrors_dir(work_root: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("EVAL_HISTORY_MIRRORS") {
        return PathBuf::from(dir);
    }
    let shared = PathBuf::from("/work/.mirror");
    if shared.is_dir() {
        shared
    } else {
        work_root.join("mirrors")
    }
}

/// The repository's bare git directory: `<mirrors>/<owner>+<name>/repo` (the layout of this
/// machine's mirror), `<mirrors>/<owner>+<name>.git` (`git clone --bare`) or
/// `<mirrors>/<owner>+<name>`. With `EVAL_HISTORY_CLONE=1` a missing one is cloned from
/// GitHub into `<mirrors>/<owner>+<name>.git`.
pub fn git_dir(repo: &Repo, work_root: &Path) -> Result<PathBuf, String> {
    let root = mirrors_dir(work_root);
    let key = repo.key();
    let candidates = [
        root.join(&key).join("repo"),
        root.join(format!("{key}.git")),
        root.join(&key),
    ];
    if let Some(found) = candidates.iter().find(|c| has_commit(c, repo.pinned)) {
        return Ok(found.clone());
    }
    let target = root.join(format!("{key}.git"));
    if std::env::var_os("EVAL_HISTORY_CLONE").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
        git(
            None,
            &[
                "clone",
                "--quiet",
                "--bare",
                &repo.url(),
                path_str(&target)?,
            ],
        )?;
        if has_commit(&target, repo.pinned) {
            return Ok(target);
        }
    }
    Err(format!(
        "{}: no bare repository holding {} under {} (get one with `git clone --bare {} {}`, \
         or run with EVAL_HISTORY_CLONE=1)",
        repo.slug,
        repo.pinned,
        root.display(),
        repo.url(),
        target.display()
    ))
}

fn has_commit(git_dir: &Path, sha: &str) -> bool {
    git_dir.is_dir()
        && Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .args(["cat-file", "-e", &format!("{sha}^{{commit}}")])
            .output()
            .is_ok_and(|o| o.status.success())
}

fn path_str(p: &Path) -> Result<&str, String> {
    p.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", p.display()))
}

/// Runs git (in `dir` when given) and returns its standard output.
pub fn git(dir: Option<&Path>, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A scratch clone sharing the bare repository's objects, whose work tree is moved from case
/// to case: a checkout rewrites only the files that differ, and promptd's index lives inside it
/// (`.rag/`, untracked).
pub struct WorkTree {
    pub dir: PathBuf,
}

impl WorkTree {
    /// `target/eval-history/<owner>+<name>/tree`, cloned with `--shared` when missing.
    pub fn prepare(repo: &Repo, git_dir: &Path, work_root: &Path) -> Result<WorkTree, String> {
        let dir = work_root.join(repo.key()).join("tree");
        if !dir.join(".git").is_dir() {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.parent().expect("tree has a parent"))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            git(
                None,
                &[
                    "clone",
                    "--quiet",
                    "--shared",
                    "--no-checkout",
                    path_str(git_dir)?,
                    path_str(&dir)?,
                ],
            )?;
        }
        Ok(WorkTree { dir })
    }

    /// Puts the work tree at `sha` (tracked files only; the untracked `.rag/` index stays).
    pub fn checkout(&self, sha: &str) -> Result<(), String> {
        git(
            Some(&self.dir),
            &["checkout", "--quiet", "--force", "--detach", sha],
        )
        .map(drop)
    }

    /// The tracked files at `sha` (`/`-separated paths).
    pub fn files_at(&self, sha: &str) -> Result<Vec<String>, String> {
        Ok(git(
            Some(&self.dir),
            &["ls-tree", "-r", "-z", "--name-only", "--full-tree", sha],
        )?
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
    }
}
