//! The prompt registry: every prompt file of every root, parsed, shadowed by name and versioned.
//!
//! A [`Registry`] is an immutable snapshot. Roots are ordered lowest first (built-ins, then
//! `PROMPTD_PROMPTS`, then `--prompts` folders): a later root shadows an earlier one by prompt
//! name. Within one root two files with the same name are an error naming both paths. A file
//! that fails to parse is reported as a [`Diagnostic`] and left out, except on reload, where the
//! last good version of that file stays served. On reload a changed file whose template no longer
//! compiles is refused the same way; the syntax check is supplied by the caller
//! ([`TemplateCheck`]). Rendering lives in `render`; this module only knows files, names and
//! frontmatter.
//!
//! Files are read under `limits.maxPromptFileBytes`: a larger file, a non-regular file or text
//! that is not UTF-8 is reported by name and left out (on reload its last good version stays).
//! A reload reads only what changed: a listed file that the file watcher did not name
//! ([`Touched`]), or whose stamp (size, modification time, inode) is the one taken when the
//! previous snapshot read it, modified well before that, is not read again and keeps its
//! parsed template (and so its render caches and listing entry upstream).
//! On reload a file whose content changed is only taken once it is stable: it is read again
//! after [`SETTLE`] until two reads agree (unless its stamp already shows it unmodified for
//! that long), so a reader never sees a file half-written in place.
//! A file that stays unstable, or that a rewrite in place has just emptied, keeps its last good
//! version (a new file stays out) and the registry reports that it is
//! [`settling`](Registry::settling); an emptied file is taken as empty once it has stayed empty
//! for [`EMPTY_GRACE`].

pub mod frontmatter;
pub mod source;
pub mod template;

#[cfg(test)]
mod dialect_tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

pub use frontmatter::{split_frontmatter, yaml_to_json};
pub use source::{
    BuiltinSource, BuiltinSystemSource, DirSource, FileStamp, PromptSource, SourceError, SourceFile,
};
pub use template::{
    ArgType, ArgumentSpec, Engine, PromptCategory, PromptFileError, PromptTemplate, content_hash,
    is_safe_segment, parse_prompt_file, parse_prompt_file_in,
};

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// A compiler-style finding about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub path: String,
    pub line: usize,
    pub column: usize,
    /// A stable short code (`yaml`, `name-collision`, `undefined-variable`, ...).
    pub code: &'static str,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(
            f,
            "{}:{}:{}: {sev}[{}]: {}",
            self.path, self.line, self.column, self.code, self.message
        )
    }
}

/// A prompt hidden by a same-named prompt of a later root.
#[derive(Debug, Clone, Serialize)]
pub struct Shadowing {
    pub name: String,
    pub hidden: String,
    pub by: String,
}

/// A template syntax error, located in the prompt's file (line and column of the file, not of
/// the body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Compiles a prompt's body as a Jinja template, whatever its `engine:` says. Supplied by the
/// caller of [`Registry::load_with_previous`] (the library passes the renderer's check, with the
/// renderer's syntax configuration) so that this module never depends on `render`.
pub type TemplateCheck<'a> = &'a dyn Fn(&PromptTemplate) -> Result<(), TemplateSyntaxError>;

/// How long a changed file must stay unchanged before it is taken.
pub const SETTLE: Duration = Duration::from_millis(25);
/// How many times a changed file is read again before it counts as still being written.
const SETTLE_ROUNDS: usize = 4;
/// How long a file with a last good version must stay empty before it is served empty.
pub const EMPTY_GRACE: Duration = Duration::from_secs(1);

/// What one read of a listed file gave.
type ReadResult = Result<Option<String>, SourceError>;

/// Whether two reads of one file agree (same text, or both failed the same way).
fn same_read(a: &ReadResult, b: &ReadResult) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => a.to_string() == b.to_string(),
        _ => false,
    }
}

/// What the registry remembers of one file between reloads.
#[derive(Debug, Clone)]
struct FileState {
    hash: String,
    /// The last version that parsed, if any.
    good: Option<Arc<PromptTemplate>>,
    /// The file's stamp taken before it was read, kept only when it vouches for the content
    /// read ([`FileStamp::trusted_at`] the load); `None` otherwise and when its source has none.
    stamp: Option<FileStamp>,
}

/// An immutable snapshot of all prompts.
#[derive(Debug)]
pub struct Registry {
    roots: Vec<Arc<dyn PromptSource>>,
    prompts: BTreeMap<String, Arc<PromptTemplate>>,
    diagnostics: Vec<Diagnostic>,
    shadowed: Vec<Shadowing>,
    files: HashMap<String, FileState>,
    max_file_bytes: u64,
    settling: bool,
}

impl Registry {
    /// Loads every root (lowest precedence first) with the default file size cap.
    pub fn load(roots: Vec<Arc<dyn PromptSource>>) -> Registry {
        Self::load_capped(
            roots,
            crate::limits::Limits::default().max_prompt_file_bytes,
        )
    }

    /// Loads every root, leaving out files larger than `max_file_bytes`.
    pub fn load_capped(roots: Vec<Arc<dyn PromptSource>>, max_file_bytes: u64) -> Registry {
        // Without a previous snapshot no file has a last good version: nothing is checked.
        Self::load_with_previous(roots, None, &|_| Ok(()), max_file_bytes)
    }

    /// Loads every root, re-parsing only files whose content changed since `previous`. A changed
    /// file that has a last good version in `previous` keeps that version (with a diagnostic
    /// ending in `(keeping the last good version)`) when the new version
    /// - does not parse (YAML, frontmatter), or
    /// - declares `engine: jinja` and fails `check`, or
    /// - declares no engine, fails `check`, and the last good version was served as Jinja (it
    ///   declared no engine or `engine: jinja` and passed `check`): a Jinja prompt broken by an
    ///   edit must not silently turn into plain text.
    ///
    /// `check` runs only on changed files that have a last good version. A file without one
    /// loads as on a first load (an uncompilable template is the renderer's business: an error
    /// for `engine: jinja`, plain substitution otherwise).
    pub fn load_with_previous(
        roots: Vec<Arc<dyn PromptSource>>,
        previous: Option<&Registry>,
        check: TemplateCheck<'_>,
        max_file_bytes: u64,
    ) -> Registry {
        Self::load_touched(roots, previous, check, max_file_bytes, None)
    }

    /// Like [`load_with_previous`](Self::load_with_previous), told by a file watcher which
    /// paths changed since `previous` was loaded (`touched`): a file of `previous` that is not
    /// covered by `touched` is taken unchanged without even a `stat`. Files that are new to the
    /// listing are read whatever `touched` says.
    pub fn load_touched(
        roots: Vec<Arc<dyn PromptSource>>,
        previous: Option<&Registry>,
        check: TemplateCheck<'_>,
        max_file_bytes: u64,
        touched: Option<&Touched>,
    ) -> Registry {
        let mut diagnostics = Vec::new();
        let mut files = HashMap::new();
        let mut prompts: BTreeMap<String, Arc<PromptTemplate>> = BTreeMap::new();
        let mut shadowed = Vec::new();
        let mut settling = false;
        let listed_at = std::time::SystemTime::now();
        let reads = read_settled(&roots, previous, touched, max_file_bytes, listed_at);
        for (root, listed) in roots.iter().zip(reads) {
            let listed = match listed {
                Ok(l) => l,
                Err(e) => {
                    diagnostics.push(Diagnostic {
                        severity: Severity::Error,
                        path: root.describe(),
                        line: 1,
                        column: 1,
                        code: "root",
                        message: format!("cannot read prompt root: {e}"),
                    });
                    continue;
                }
            };
            let mut loaded: Vec<Arc<PromptTemplate>> = Vec::new();
            for (file, read) in listed {
                let Some(tpl) = load_file(
                    root.as_ref(),
                    &file,
                    read,
                    previous,
                    check,
                    listed_at,
                    &mut files,
                    &mut diagnostics,
                    &mut settling,
                ) else {
                    continue;
                };
                loaded.push(tpl);
            }
            let in_root = qualify_collisions(loaded, &mut diagnostics);
            for (name, tpl) in in_root {
                if let Some(hidden) = prompts.insert(name.clone(), tpl.clone()) {
                    shadowed.push(Shadowing {
                        name,
                        hidden: hidden.path.clone(),
                        by: tpl.path.clone(),
                    });
                }
            }
        }
        Registry {
            roots,
            prompts,
            diagnostics,
            shadowed,
            files,
            max_file_bytes,
            settling,
        }
    }

    /// Whether a changed file was still being written (or was just emptied) and kept its last
    /// good version: load again after [`SETTLE`] to take it.
    pub fn settling(&self) -> bool {
        self.settling
    }

    /// The roots, lowest precedence first.
    pub fn roots(&self) -> &[Arc<dyn PromptSource>] {
        &self.roots
    }

    /// All prompts in name order.
    pub fn prompts(&self) -> impl Iterator<Item = &Arc<PromptTemplate>> {
        self.prompts.values()
    }

    /// The version of the whole set: the content hash of every prompt's name and version
    /// hash in name order. Two processes serving the same files report the same version.
    pub fn version(&self) -> String {
        let mut all = String::with_capacity(self.prompts.len() * 40);
        for t in self.prompts.values() {
            all.push_str(&t.name);
            all.push('\0');
            all.push_str(&t.version_hash);
            all.push('\n');
        }
        content_hash(all.as_bytes())
    }

    /// The number of prompts served.
    pub fn len(&self) -> usize {
        self.prompts.len()
    }

    /// Whether no prompt is served.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// A prompt by name.
    pub fn get(&self, name: &str) -> Option<&Arc<PromptTemplate>> {
        self.prompts.get(name)
    }

    /// Load problems (parse errors, collisions, unreadable roots).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Prompts hidden by later roots.
    pub fn shadowed(&self) -> &[Shadowing] {
        &self.shadowed
    }

    /// Resolves an include target: a prompt name, else a root-relative file (highest root
    /// first, `.md` optional). Returns the prompt's message path, body and body start line.
    pub fn resolve_include(&self, name: &str) -> Result<Option<IncludedFile>, SourceError> {
        if let Some(p) = self.prompts.get(name) {
            return Ok(Some(IncludedFile {
                path: p.path.clone(),
                body: p.body.clone(),
                body_line: p.body_line,
            }));
        }
        for root in self.roots.iter().rev() {
            source::check_relative(name, &root.describe())?;
            let candidates = if name.ends_with(".md") {
                vec![name.to_string()]
            } else {
                vec![name.to_string(), format!("{name}.md")]
            };
            for rel in candidates {
                if let Some(text) = root.read(&rel, self.max_file_bytes)? {
                    let display = root.display_path(&rel);
                    let (_, body, body_line) =
                        split_frontmatter(&text).map_err(|e| SourceError::Io {
                            path: display.clone(),
                            source: std::io::Error::other(e.to_string()),
                        })?;
                    return Ok(Some(IncludedFile {
                        path: display,
                        body: body.to_string(),
                        body_line,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Whether `file` of `root` is the file this snapshot read and parsed, served from a
    /// version that parsed: a watcher saw no change to it (`touched` does not cover it), or its
    /// stamp now is the trusted stamp taken when it was read. When it is not, the stamp taken
    /// (to be kept with what is read now).
    fn unchanged(
        &self,
        root: &dyn PromptSource,
        file: &SourceFile,
        touched: Option<&Touched>,
    ) -> Result<(), Option<FileStamp>> {
        let prev = self
            .files
            .get(&file.display_path)
            .filter(|prev| prev.good.is_some());
        if prev.is_some() && touched.is_some_and(|t| !t.covers(&file.display_path)) {
            return Ok(());
        }
        let stamp = root.stamp(&file.rel_path);
        match prev {
            Some(prev) if stamp.is_some() && prev.stamp == stamp => Ok(()),
            _ => Err(stamp),
        }
    }

    /// Whether `other` serves exactly the same prompts (names, metadata and content hashes):
    /// hot reload uses this to skip `list_changed` on a no-op save.
    pub fn same_prompts(&self, other: &Registry) -> bool {
        self.prompts.len() == other.prompts.len()
            && self
                .prompts
                .iter()
                .zip(other.prompts.iter())
                .all(|((a, pa), (b, pb))| {
                    a == b && pa.version_hash == pb.version_hash && pa.path == pb.path
                })
    }
}

/// Names the prompts of one root uniquely: files that would share a name are all served; the
/// first (in path order) keeps the name, each other one is served under its qualified name (its
/// root-relative path, see [`crate::dialect::qualified_name`]) with a warning.
fn qualify_collisions(
    loaded: Vec<Arc<PromptTemplate>>,
    diagnostics: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Arc<PromptTemplate>> {
    let mut users: HashMap<&str, Vec<&str>> = HashMap::new();
    for t in &loaded {
        users.entry(&t.name).or_default().push(&t.path);
    }
    let shared: HashMap<String, Vec<String>> = users
        .into_iter()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|(n, paths)| (n.to_string(), paths.into_iter().map(String::from).collect()))
        .collect();
    let mut in_root: BTreeMap<String, Arc<PromptTemplate>> = BTreeMap::new();
    for tpl in loaded {
        let tpl = match shared.get(&tpl.name) {
            Some(paths) if paths.first() != Some(&tpl.path) => {
                let mut t = (*tpl).clone();
                t.name = crate::dialect::qualified_name(&tpl.rel_path);
                diagnostics.push(Diagnostic {
                    severity: Severity::Warning,
                    path: tpl.path.clone(),
                    line: 1,
                    column: 1,
                    code: "name-collision",
                    message: format!(
                        "prompt name `{}` is shared by {}; this file is served as `{}`",
                        tpl.name,
                        paths.join(" and "),
                        t.name
                    ),
                });
                Arc::new(t)
            }
            _ => tpl,
        };
        if let Some(first) = in_root.get(&tpl.name) {
            diagnostics.push(Diagnostic {
                severity: Severity::Error,
                path: tpl.path.clone(),
                line: 1,
                column: 1,
                code: "name-collision",
                message: format!(
                    "prompt name `{}` is used by both {} and {} in the same root; {} is ignored",
                    tpl.name, first.path, tpl.path, tpl.path
                ),
            });
            continue;
        }
        in_root.insert(tpl.name.clone(), tpl);
    }
    in_root
}

/// A file pulled in by `{% include %}`.
#[derive(Debug, Clone)]
pub struct IncludedFile {
    pub path: String,
    pub body: String,
    pub body_line: usize,
}

/// Lists every root and reads its files. On reload (`previous` given), a file the watcher did
/// not name or whose stamp has not moved is not read (see [`Registry::unchanged`]); files whose content changed are read
/// again after [`SETTLE`] until two reads agree, unless their stamp shows them unmodified for
/// [`SETTLE`] already, before and after the read; a file still changing after [`SETTLE_ROUNDS`]
/// reads is marked unsettled.
#[allow(clippy::type_complexity)]
fn read_settled(
    roots: &[Arc<dyn PromptSource>],
    previous: Option<&Registry>,
    touched: Option<&Touched>,
    max_file_bytes: u64,
    listed_at: std::time::SystemTime,
) -> Vec<Result<Vec<(SourceFile, FileRead)>, SourceError>> {
    let mut reads: Vec<Result<Vec<(SourceFile, FileRead)>, SourceError>> = roots
        .iter()
        .map(|root| {
            Ok(root
                .list()?
                .into_iter()
                .map(|file| {
                    let stamp = match previous {
                        Some(p) => match p.unchanged(root.as_ref(), &file, touched) {
                            Ok(()) => return (file, FileRead::UNCHANGED),
                            Err(stamp) => stamp,
                        },
                        None => root.stamp(&file.rel_path),
                    };
                    let result = root.read(&file.rel_path, max_file_bytes);
                    (
                        file,
                        FileRead {
                            result,
                            settled: true,
                            unchanged: false,
                            stamp,
                        },
                    )
                })
                .collect())
        })
        .collect();
    let Some(previous) = previous else {
        return reads;
    };
    let changed =
        |file: &SourceFile, read: &ReadResult| match (previous.files.get(&file.display_path), read)
        {
            (Some(prev), Ok(Some(text))) => prev.hash != content_hash(text.as_bytes()),
            _ => true,
        };
    let mut unsettled: Vec<(usize, usize)> = Vec::new();
    for (r, listed) in reads.iter().enumerate() {
        if let Ok(listed) = listed {
            for (f, (file, read)) in listed.iter().enumerate() {
                if read.unchanged || !changed(file, &read.result) {
                    continue;
                }
                let quiet = read.stamp.is_some_and(|s| {
                    s.unmodified_for(SETTLE, listed_at) && roots[r].stamp(&file.rel_path) == Some(s)
                });
                if !quiet {
                    unsettled.push((r, f));
                }
            }
        }
    }
    for _ in 0..SETTLE_ROUNDS {
        if unsettled.is_empty() {
            break;
        }
        std::thread::sleep(SETTLE);
        unsettled.retain(|&(r, f)| {
            let Ok(listed) = &mut reads[r] else {
                return false;
            };
            let (file, read) = &mut listed[f];
            let again = roots[r].read(&file.rel_path, max_file_bytes);
            let same = same_read(&read.result, &again);
            read.result = again;
            !same
        });
    }
    for (r, f) in unsettled {
        if let Ok(listed) = &mut reads[r] {
            listed[f].1.settled = false;
        }
    }
    reads
}

/// One listed file's content, and whether it was stable.
#[derive(Debug)]
struct FileRead {
    result: ReadResult,
    settled: bool,
    /// Not read: it is the file the previous snapshot read and parsed.
    unchanged: bool,
    /// Its stamp, taken before it was read.
    stamp: Option<FileStamp>,
}

impl FileRead {
    const UNCHANGED: FileRead = FileRead {
        result: Ok(None),
        settled: true,
        unchanged: true,
        stamp: None,
    };
}

/// Paths a file watcher saw change since the previous load: files, and folders (everything
/// below them counts as changed).
#[derive(Debug, Clone, Default)]
pub struct Touched {
    paths: Vec<String>,
}

impl Touched {
    /// The changed paths, spelled as the watched folders were (as [`SourceFile::display_path`]).
    pub fn new<I: IntoIterator<Item = std::path::PathBuf>>(paths: I) -> Touched {
        let mut paths: Vec<String> = paths.into_iter().map(|p| p.display().to_string()).collect();
        paths.sort();
        paths.dedup();
        Touched { paths }
    }

    /// Whether `path` or a folder above it changed.
    fn covers(&self, path: &str) -> bool {
        self.paths.iter().any(|t| {
            path.strip_prefix(t.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(std::path::MAIN_SEPARATOR))
        })
    }
}

#[allow(clippy::too_many_arguments)]
fn load_file(
    root: &dyn PromptSource,
    file: &SourceFile,
    read: FileRead,
    previous: Option<&Registry>,
    check: TemplateCheck<'_>,
    listed_at: std::time::SystemTime,
    files: &mut HashMap<String, FileState>,
    diagnostics: &mut Vec<Diagnostic>,
    settling: &mut bool,
) -> Option<Arc<PromptTemplate>> {
    let stamp = read.stamp.filter(|s| s.trusted_at(listed_at));
    let prev = previous.and_then(|p| p.files.get(&file.display_path));
    let good = prev.and_then(|p| p.good.clone());
    if read.unchanged
        && let Some(prev) = prev
    {
        files.insert(file.display_path.clone(), prev.clone());
        return good;
    }
    // Keeps the last good version (if any) of a file whose new content is not taken.
    let mut keep = |diagnostic: Option<Diagnostic>| {
        if let Some(mut d) = diagnostic {
            if good.is_some() {
                d.message.push_str(" (keeping the last good version)");
            }
            diagnostics.push(d);
        }
        if let Some(prev) = prev {
            files.insert(file.display_path.clone(), prev.clone());
        }
        good.clone()
    };
    let text = match read.result {
        Ok(Some(t)) => t,
        Ok(None) => return None,
        Err(e) => {
            return keep(Some(Diagnostic {
                severity: Severity::Error,
                path: file.display_path.clone(),
                line: 1,
                column: 1,
                code: "read",
                message: e.to_string(),
            }));
        }
    };
    if !read.settled && good.is_none() {
        // A new file still being written appears once it is complete.
        *settling = true;
        return None;
    }
    if good.is_some() {
        let just_emptied = text.is_empty()
            && root
                .age(&file.rel_path)
                .is_some_and(|age| age < EMPTY_GRACE);
        if !read.settled || just_emptied {
            *settling = true;
            return keep(Some(Diagnostic {
                severity: Severity::Warning,
                path: file.display_path.clone(),
                line: 1,
                column: 1,
                code: "settling",
                message: if just_emptied {
                    "file was just emptied; taken as empty if it stays empty".into()
                } else {
                    "file is still being written".into()
                },
            }));
        }
    }
    let hash = content_hash(text.as_bytes());
    if let Some(prev) = prev
        && prev.hash == hash
        && let Some(good) = &prev.good
    {
        files.insert(
            file.display_path.clone(),
            FileState {
                stamp,
                ..prev.clone()
            },
        );
        return Some(good.clone());
    }
    // What is served from this file, and what is wrong with its new text. A new text that does
    // not load keeps the last good version served (the diagnostic says so).
    let (served, problem) = match parse_prompt_file_in(
        &text,
        &file.display_path,
        &file.rel_path,
        file.category,
        root.dialect(),
    ) {
        Ok(tpl) => {
            let good = prev.and_then(|p| p.good.as_ref());
            match good.and_then(|g| broken_template(&tpl, g, check).map(|e| (g, e))) {
                Some((good, e)) => (
                    Some(good.clone()),
                    Some(Diagnostic {
                        severity: Severity::Error,
                        path: tpl.path.clone(),
                        line: e.line,
                        column: e.column,
                        code: "template-syntax",
                        message: e.message,
                    }),
                ),
                None => (Some(Arc::new(tpl)), None),
            }
        }
        Err(e) => (
            prev.and_then(|p| p.good.clone()),
            Some(Diagnostic {
                severity: Severity::Error,
                path: e.path,
                line: e.line,
                column: e.column,
                code: "frontmatter",
                message: e.message,
            }),
        ),
    };
    if let Some(mut diagnostic) = problem {
        if served.is_some() {
            diagnostic
                .message
                .push_str(" (keeping the last good version)");
        }
        diagnostics.push(diagnostic);
    }
    files.insert(
        file.display_path.clone(),
        FileState {
            hash,
            good: served.clone(),
            stamp,
        },
    );
    served
}

/// Why a changed file's new version must not replace its last good version `good`, if it must
/// not: see [`Registry::load_with_previous`].
fn broken_template(
    new: &PromptTemplate,
    good: &PromptTemplate,
    check: TemplateCheck<'_>,
) -> Option<TemplateSyntaxError> {
    match new.engine {
        Some(Engine::Plain) => None,
        Some(Engine::Jinja) => check(new).err(),
        None => {
            let mut e = check(new).err()?;
            let good_was_jinja = good.engine != Some(Engine::Plain) && check(good).is_ok();
            good_was_jinja.then(|| {
                e.message.push_str(
                    "; the last good version is a Jinja template (declare `engine: plain` to serve this file as plain text)",
                );
                e
            })
        }
    }
}

/// The standard root list: built-ins, then each `PROMPTD_PROMPTS` entry, then each `--prompts`.
pub fn standard_roots(extra: &[std::path::PathBuf]) -> Vec<Arc<dyn PromptSource>> {
    roots(&RootOptions {
        dirs: extra.to_vec(),
        builtin_user_prompts: true,
        ..RootOptions::default()
    })
}

/// What [`roots`] builds the root list from.
#[derive(Debug, Clone, Default)]
pub struct RootOptions {
    /// `--prompts` folders, lowest precedence first.
    pub dirs: Vec<std::path::PathBuf>,
    /// Serve the built-in user prompts (the built-in system prompts are always loaded).
    pub builtin_user_prompts: bool,
    /// Without `dirs`, look here for the prompt folders of every dialect
    /// ([`DISCOVERED_FOLDERS`]).
    pub discover_in: Option<std::path::PathBuf>,
    /// Folders whose dialect is configured rather than decided by their location.
    pub dialects: Vec<(std::path::PathBuf, crate::dialect::Dialect)>,
}

/// The folders found without `--prompts`, lowest precedence first.
pub const DISCOVERED_FOLDERS: &[&str] = &[
    "prompts",
    ".github/prompts",
    ".claude/commands",
    ".gemini/commands",
    ".cursor/commands",
];

/// The root list: built-ins (system prompts only unless `builtin_user_prompts`), then each
/// `PROMPTD_PROMPTS` entry, then each `--prompts` folder, or without any, the folders
/// discovered in `discover_in`. A folder's dialect is the configured one, else its location's.
pub fn roots(options: &RootOptions) -> Vec<Arc<dyn PromptSource>> {
    let mut roots: Vec<Arc<dyn PromptSource>> = if options.builtin_user_prompts {
        vec![Arc::new(BuiltinSource)]
    } else {
        vec![Arc::new(source::BuiltinSystemSource)]
    };
    let dir_source = |p: std::path::PathBuf| -> Arc<dyn PromptSource> {
        let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        let configured = options
            .dialects
            .iter()
            .find(|(d, _)| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()) == real);
        match configured {
            Some((_, dialect)) => Arc::new(DirSource::with_dialect(p, *dialect)),
            None => Arc::new(DirSource::new(p)),
        }
    };
    if let Some(env) = std::env::var_os("PROMPTD_PROMPTS") {
        for p in std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty()) {
            roots.push(dir_source(p));
        }
    }
    for p in &options.dirs {
        roots.push(dir_source(p.clone()));
    }
    if options.dirs.is_empty()
        && let Some(base) = &options.discover_in
    {
        for folder in DISCOVERED_FOLDERS {
            let p = base.join(folder);
            if p.is_dir() {
                roots.push(dir_source(p));
            }
        }
    }
    roots
}
