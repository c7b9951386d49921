//! Issue-report cases: real bug reports and feature requests as users filed them, each with
//! the repository state it was filed against and the files its merged fix changed. They come
//! from published localisation and issue-resolution datasets committed as JSON lines in public
//! repositories, read at run time from those repositories' bare git directories; nothing of
//! them is committed here:
//! - SWE-bench Lite and Verified, Loc-Bench (Python; `instance_id`, `repo`, `base_commit`,
//!   `problem_statement`, `patch`);
//! - Multi-SWE-bench (Rust, Go, Java, JavaScript; `org`, `repo`, `number`, `base.sha`, the
//!   `resolved_issues` the pull request closed, `fix_patch`): the request is the text of the
//!   issues it resolved, title and body, never the pull request's own description.
//!
//! The request is the problem statement as written; the gold files are the source files of
//! the fix's patch (tests, docs, vendored and generated files do not count) that exist at the
//! base commit. Halves are whole repositories ([`IssueRepo::half`]), so the held-out figure
//! says how a ranking does on a repository it was never tuned on.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::cases::{Case, Split};
use crate::paths::{Lang, is_source};
use crate::repos::{Repo, git};

/// How a dump's lines are laid out.
#[derive(Clone, Copy)]
pub enum Format {
    /// SWE-bench's fields (also Loc-Bench's).
    SweBench,
    /// Multi-SWE-bench's fields.
    MultiSweBench,
}

/// A dataset of issue reports: JSON-lines files in a public repository at a pinned commit.
pub struct Dump {
    /// `owner/name` of the repository holding the files.
    pub repo: Repo,
    /// The dataset's name in tables.
    pub label: &'static str,
    pub format: Format,
    /// The JSON-lines files, one instance per line.
    pub files: &'static [&'static str],
}

const CHRONOREPO: Repo = Repo {
    slug: "ITMO-NSS-team/chronorepo_icdm26",
    pinned: "ff6efadabca2f2930ffae9001c7e42f073413c12",
    langs: &[Lang::Python],
    foreign: &[],
};

const MULTI_SWE_BENCH: Repo = Repo {
    slug: "kuppireddypravalika/MSWE-validation-dataset",
    pinned: "f3788671b1be72292be1b3dfc61063f97dd474a0",
    langs: &[Lang::Rust, Lang::Go, Lang::Java, Lang::JavaScript],
    foreign: &[],
};

/// The datasets read. An instance appearing in several (Lite is mostly inside Verified) is
/// taken once, by its `instance_id`.
pub const DUMPS: &[Dump] = &[
    Dump {
        repo: CHRONOREPO,
        label: "SWE-bench Lite + Verified",
        format: Format::SweBench,
        files: &["data/swebench_lite.jsonl", "data/swebench_verified.jsonl"],
    },
    Dump {
        repo: CHRONOREPO,
        label: "Loc-Bench",
        format: Format::SweBench,
        files: &["data/locbench.jsonl"],
    },
    Dump {
        repo: MULTI_SWE_BENCH,
        label: "Multi-SWE-bench",
        format: Format::MultiSweBench,
        files: &[
            "MSWE-agent/data/rust/sharkdp__fd_dataset.jsonl",
            "MSWE-agent/data/rust/sharkdp__bat_dataset.jsonl",
            "MSWE-agent/data/rust/tokio-rs__tracing_dataset.jsonl",
            "MSWE-agent/data/rust/BurntSushi__ripgrep_dataset.jsonl",
            "MSWE-agent/data/go/zeromicro__go-zero_dataset.jsonl",
            "MSWE-agent/data/go/grpc__grpc-go_dataset.jsonl",
            "MSWE-agent/data/java/fasterxml__jackson-core_dataset.jsonl",
            "MSWE-agent/data/js/iamkun__dayjs_dataset.jsonl",
            "MSWE-agent/data/js/anuraghazra__github-readme-stats_dataset.jsonl",
        ],
    },
];

/// Which part of the issue-report benchmark a repository is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Half {
    /// Rankings are tuned on these.
    Tuning,
    /// Reported: never looked at while tuning.
    HeldOut,
    /// Held back for an acceptance check only (`EVAL_ACCEPTANCE=1`): never tuned on, never in
    /// the held-out figure either.
    Acceptance,
}

impl Half {
    /// The split a case of this half belongs to (acceptance cases are held out).
    pub fn split(self) -> Split {
        match self {
            Half::HeldOut | Half::Acceptance => Split::HeldOut,
            Half::Tuning => Split::Tuning,
        }
    }
}

/// A repository whose issue reports are cases.
pub struct IssueRepo {
    pub repo: Repo,
    pub half: Half,
}

const PY: &[Lang] = &[Lang::Python];
const RUST: &[Lang] = &[Lang::Rust];
const GO: &[Lang] = &[Lang::Go];
const JAVA: &[Lang] = &[Lang::Java];
const JS: &[Lang] = &[Lang::JavaScript];

const fn issue_repo(slug: &'static str, pinned: &'static str, half: Half) -> IssueRepo {
    issue_repo_with(slug, pinned, half, PY, &[])
}

const fn issue_repo_with(
    slug: &'static str,
    pinned: &'static str,
    half: Half,
    langs: &'static [Lang],
    foreign: &'static [&'static str],
) -> IssueRepo {
    IssueRepo {
        repo: Repo {
            slug,
            pinned,
            langs,
            foreign,
        },
        half,
    }
}

/// The repositories, each wholly in one half. `pinned` is a commit every case's base commit
/// precedes (the mirror's tip when the list was made): it identifies the mirror to read.
/// Repositories other than Python ones are listed after them (Multi-SWE-bench); their halves
/// were fixed before any of their results were seen.
pub const ISSUE_REPOS: &[IssueRepo] = &[
    issue_repo(
        "sympy/sympy",
        "e950d313a932bc6cccbc95376b3821cd2f8b5af4",
        Half::Tuning,
    ),
    issue_repo(
        "astropy/astropy",
        "1fdfae1fe1881234e08855ac662dae86e538ed7c",
        Half::Tuning,
    ),
    issue_repo(
        "dask/dask",
        "817e5ffc1208346630b111860571024b0c6ec9bd",
        Half::Tuning,
    ),
    issue_repo(
        "python/mypy",
        "8b3e7d8b9f63543374e53d1c389ea443dd65bc46",
        Half::Tuning,
    ),
    issue_repo(
        "pydantic/pydantic",
        "2151025aa51263f3016502b00010b78e4481eaa1",
        Half::Tuning,
    ),
    issue_repo(
        "mwaskom/seaborn",
        "f04b6cd5484267a0885d1fed068e99dff3a1b226",
        Half::Tuning,
    ),
    issue_repo(
        "aio-libs/aiohttp",
        "495e778360d1924da63e16dba0f0d76baf56a56a",
        Half::Tuning,
    ),
    issue_repo(
        "pallets/flask",
        "2ac89889f4cc330eabd50f295dcef02828522c69",
        Half::Tuning,
    ),
    issue_repo(
        "sphinx-doc/sphinx",
        "e44a40eb2f810558ccd9da1425421270ccb81351",
        Half::HeldOut,
    ),
    issue_repo(
        "yt-dlp/yt-dlp",
        "81ecd58b1394793e6da9998cc19fdb45657f1685",
        Half::HeldOut,
    ),
    issue_repo(
        "pydata/xarray",
        "b1c1dc549b62bdfc8de0bdded24f56464cf0db1a",
        Half::HeldOut,
    ),
    issue_repo(
        "UKPLab/sentence-transformers",
        "85ec64559f4414aa536eca4bf53538291e0a333f",
        Half::HeldOut,
    ),
    issue_repo(
        "sqlfluff/sqlfluff",
        "e8e8c5d24dee8371acb94177fd8a7a86a783151c",
        Half::HeldOut,
    ),
    issue_repo(
        "pytest-dev/pytest",
        "df87db7b0462fb764ef73fa00561adf8ad047572",
        Half::Acceptance,
    ),
    issue_repo(
        "pylint-dev/pylint",
        "3a99b2d728d0c8ff5267e0c38ebad4f5ba228dac",
        Half::Acceptance,
    ),
    issue_repo_with(
        "psf/requests",
        "1f6589ec3a1ee910f9a65cc3ceac60b26677bc0e",
        Half::Acceptance,
        PY,
        &["requests/packages/", "src/requests/packages/"],
    ),
    issue_repo_with(
        "sharkdp/bat",
        "2ba8db9c14e5794572f5ea338c2b90404c9769cb",
        Half::Tuning,
        RUST,
        &[],
    ),
    issue_repo_with(
        "tokio-rs/tracing",
        "f40ccdaa03cf114c7ee1ef14949207626bf6be57",
        Half::Tuning,
        RUST,
        &[],
    ),
    issue_repo_with(
        "BurntSushi/ripgrep",
        "3fce3b5bb0236da2df6d99672afb8a719642eca7",
        Half::Tuning,
        RUST,
        &[],
    ),
    issue_repo_with(
        "anuraghazra/github-readme-stats",
        "5df91f9bfa89c356a55cbb3c2bbc164fdbf94a86",
        Half::Tuning,
        JS,
        &[],
    ),
    issue_repo_with(
        "iamkun/dayjs",
        "0f6c19e3b63bcc3ff74917cb3a60125020c75648",
        Half::HeldOut,
        JS,
        &[],
    ),
    issue_repo_with(
        "sharkdp/fd",
        "ee20f426ddf338ac7ead5c5f00ea49258005caaf",
        Half::HeldOut,
        RUST,
        &[],
    ),
    issue_repo_with(
        "zeromicro/go-zero",
        "11f21098ddd95a58f801920fea4f0543d4d01586",
        Half::HeldOut,
        GO,
        &[],
    ),
    issue_repo_with(
        "grpc/grpc-go",
        "4793ad0474669eafbd5346c8a3d098fdfa542498",
        Half::HeldOut,
        GO,
        &[],
    ),
    issue_repo_with(
        "FasterXML/jackson-core",
        "b367da1c30a25e99fbf2c30876e948b578c86846",
        Half::HeldOut,
        JAVA,
        &[],
    ),
];

/// One line of a SWE-bench dump (other fields are ignored).
#[derive(Deserialize)]
struct Instance {
    instance_id: String,
    repo: String,
    base_commit: String,
    problem_statement: String,
    patch: String,
}

/// One line of a Multi-SWE-bench dump (other fields are ignored).
#[derive(Deserialize)]
struct MultiInstance {
    org: String,
    repo: String,
    number: u64,
    base: MultiBase,
    resolved_issues: Vec<ResolvedIssue>,
    fix_patch: String,
}

#[derive(Deserialize)]
struct MultiBase {
    sha: String,
}

#[derive(Deserialize)]
struct ResolvedIssue {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    body: Option<String>,
}

impl From<MultiInstance> for Instance {
    /// The request is what the resolved issues say, title then body, one after another.
    fn from(m: MultiInstance) -> Instance {
        let problem_statement = m
            .resolved_issues
            .iter()
            .map(|i| {
                let title = i.title.as_deref().unwrap_or("").trim();
                let body = i.body.as_deref().unwrap_or("").trim();
                format!("{title}\n\n{body}").trim().to_string()
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        Instance {
            instance_id: format!("{}__{}-{}", m.org, m.repo, m.number),
            repo: format!("{}/{}", m.org, m.repo),
            base_commit: m.base.sha,
            problem_statement,
            patch: m.fix_patch,
        }
    }
}

/// An instance read from a dump, before it is matched to a repository's tree.
pub struct Report {
    pub id: String,
    pub dataset: &'static str,
    pub base: String,
    pub request: String,
    /// Every path the fix's patch touches (old side), in patch order.
    pub patched: Vec<String>,
}

/// How many instances each rule let through or dropped, per repository.
#[derive(Default, Debug, Serialize)]
pub struct IssueSelection {
    pub instances: usize,
    pub no_source_gold: usize,
    pub empty_report: usize,
    pub eligible: usize,
    pub kept: usize,
}

static DIFF_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^diff --git a/(\S+) b/(\S+)$").expect("diff header regex"));

/// The old-side paths of a unified git patch, in order, each once.
pub fn patched_paths(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in DIFF_HEADER.captures_iter(patch) {
        let path = c[1].to_string();
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// Every instance of the dumps, grouped by repository slug in lower case (datasets and GitHub
/// differ in case: `fasterxml/jackson-core`), each `instance_id` once, first dump first, dump
/// order within.
pub fn read_dumps(work_root: &Path) -> Result<BTreeMap<String, Vec<Report>>, String> {
    let mut seen = HashSet::new();
    let mut by_repo: BTreeMap<String, Vec<Report>> = BTreeMap::new();
    for dump in DUMPS {
        let git_dir = crate::repos::git_dir(&dump.repo, work_root)?;
        let dir = git_dir.to_str().ok_or("git dir is not UTF-8")?;
        for file in dump.files {
            let text = git(
                None,
                &[
                    "--git-dir",
                    dir,
                    "show",
                    &format!("{}:{file}", dump.repo.pinned),
                ],
            )?;
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let at = |e: serde_json::Error| format!("{}:{file}:{}: {e}", dump.repo.slug, n + 1);
                let i: Instance = match dump.format {
                    Format::SweBench => serde_json::from_str(line).map_err(at)?,
                    Format::MultiSweBench => serde_json::from_str::<MultiInstance>(line)
                        .map_err(at)?
                        .into(),
                };
                if !seen.insert(i.instance_id.clone()) {
                    continue;
                }
                by_repo
                    .entry(i.repo.to_ascii_lowercase())
                    .or_default()
                    .push(Report {
                        id: i.instance_id,
                        dataset: dump.label,
                        base: i.base_commit,
                        request: i.problem_statement,
                        patched: patched_paths(&i.patch),
                    });
            }
        }
    }
    Ok(by_repo)
}

/// The cases of `repo` from its reports: at most `max`, in instance-id order (the dataset's
/// own numbering follows the issue numbers), grouped by base commit so cases on one tree run
/// one after another. `tracked` lists the files at a commit.
pub fn build(
    repo: &IssueRepo,
    reports: &[Report],
    max: usize,
    tracked: &mut dyn FnMut(&str) -> Result<HashSet<String>, String>,
) -> Result<(Vec<Case>, IssueSelection), String> {
    let mut selection = IssueSelection {
        instances: reports.len(),
        ..IssueSelection::default()
    };
    let mut ordered: Vec<&Report> = reports.iter().collect();
    ordered.sort_by_key(|r| issue_number(&r.id));
    let mut cases = Vec::new();
    for report in ordered {
        if report.request.trim().is_empty() {
            selection.empty_report += 1;
            continue;
        }
        let files = tracked(&report.base)?;
        let gold: Vec<String> = report
            .patched
            .iter()
            .filter(|p| is_source(p, repo.repo.langs, repo.repo.foreign) && files.contains(*p))
            .cloned()
            .collect();
        if gold.is_empty() {
            selection.no_source_gold += 1;
            continue;
        }
        selection.eligible += 1;
        if cases.len() < max {
            cases.push(Case {
                sha: report.id.clone(),
                parent: report.base.clone(),
                request: report.request.clone(),
                gold,
                split: repo.half.split(),
            });
        }
    }
    selection.kept = cases.len();
    // Same tree, one after another: the index is built once for them.
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        first_seen.entry(c.parent.clone()).or_insert(i);
    }
    cases.sort_by_key(|c| first_seen[&c.parent]);
    Ok((cases, selection))
}

/// The number at the end of an instance id (`sympy__sympy-20590` → 20590).
fn issue_number(id: &str) -> (u64, String) {
    let digits: String = id
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (digits.parse().unwrap_or(0), id.to_string())
}
