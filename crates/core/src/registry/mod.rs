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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rayon::prelude::*;
use serde::Serialize;

pub use frontmatter::{split_frontmatter, yaml_to_json};
pub use source::{
    BuiltinSource, BuiltinSystemSource, DirSource, FileStamp, PromptSource, Skipped, SourceError,
    SourceFile,
};
use template::parse_prompt_file_hashed;
pub use template::{
    ArgType, ArgumentSpec, Engine, ParseWarning, PromptCategory, PromptFileError, PromptTemplate,
    content_hash, is_safe_segment, parse_prompt_file, parse_prompt_file_in,
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

/// A file whose last read failed ([`Registry::failed_files`]).
#[derive(Debug, Clone, Copy)]
pub struct FailedFile<'a> {
    /// The file's first error.
    pub diagnostic: &'a Diagnostic,
    /// The prompt served from the file's last good version, if any.
    pub served: Option<&'a str>,
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
pub type TemplateCheck<'a> =
    &'a (dyn Fn(&PromptTemplate) -> Result<(), TemplateSyntaxError> + Sync);

/// How long a changed file must stay unchanged before it is taken.
pub const SETTLE: Duration = Duration::from_millis(25);
/// How many times a changed file is read again before it counts as still being written.
const SETTLE_ROUNDS: usize = 4;
/// How long a file with a last good version must stay empty before it is served empty.
pub const EMPTY_GRACE: Duration = Duration::from_secs(1);
/// How long the last good version of a file that disappeared stays served (an editor that
/// saves by deleting the file and creating it again), unless a reload finds the file again
/// first: counted from when a load first found it gone, and while its folder keeps changing
/// (entries created or removed: it may have come back and gone again between two loads) from
/// the folder's last change, up to [`REMOVED_GRACE_MAX`] in all. A registry's own grace can be
/// set ([`Registry::with_removed_grace`]).
pub const REMOVED_GRACE: Duration = Duration::from_secs(1);
/// How many graces a file gone from a folder that keeps changing stays served at most.
const REMOVED_GRACE_MAX: u32 = 10;

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
    /// What loading this version found (a broken edit, a read error): reported again by every
    /// load that takes the file unchanged.
    findings: Vec<Diagnostic>,
    /// The index of the file's root.
    root: usize,
    /// When a load first found the file gone; its last good version stays served until
    /// [`Registry::removed_grace`] has passed since.
    gone_since: Option<std::time::Instant>,
}

/// An immutable snapshot of all prompts. Its maps are persistent (structure shared with the
/// snapshot it was loaded from), so a reload that changes a few files costs a few map updates,
/// whatever the number of prompts.
#[derive(Debug)]
pub struct Registry {
    roots: Vec<Arc<dyn PromptSource>>,
    prompts: imbl::OrdMap<String, Arc<PromptTemplate>>,
    diagnostics: Vec<Diagnostic>,
    shadowed: Vec<Shadowing>,
    /// Every file read, by display path.
    files: imbl::OrdMap<String, FileState>,
    /// Names that more than one file claims (shadowed by a later root, or shared within a root):
    /// who serves them is decided over the whole listing, never by an update of one file.
    contested: Arc<HashSet<String>>,
    version: VersionSum,
    max_file_bytes: u64,
    settling: bool,
    /// The names whose served prompt differs from the `previous` registry's, when this one was
    /// updated from the watcher's paths alone (see [`Registry::changes`]).
    changes: Option<Changes>,
    /// The files gone from their folders whose last good version is still served.
    gone: imbl::OrdSet<String>,
    /// The folders of the roots whose listing left entries out or failed: a change below one of
    /// them is only decided by listing it again.
    unlisted: Arc<Vec<std::path::PathBuf>>,
    /// How long a file gone from its folder stays served ([`REMOVED_GRACE`] unless set).
    removed_grace: Duration,
}

/// What an update from named paths changed: the names whose served template was added,
/// replaced or removed, relative to the registry it was updated from (its `base`).
#[derive(Debug, Clone)]
pub struct Changes {
    base: VersionSum,
    names: Vec<String>,
}

/// The order-independent sum of every served prompt's digest (its name and content hash): the
/// registry's version, kept up to date one prompt at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct VersionSum([u64; 4]);

impl VersionSum {
    fn digest(t: &PromptTemplate) -> [u64; 4] {
        let mut h = blake3::Hasher::new();
        h.update(t.name.as_bytes());
        h.update(&[0]);
        h.update(t.version_hash.as_bytes());
        let bytes = h.finalize();
        let mut lanes = [0u64; 4];
        for (lane, chunk) in lanes.iter_mut().zip(bytes.as_bytes().chunks_exact(8)) {
            *lane = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        lanes
    }

    fn add(&mut self, t: &PromptTemplate) {
        for (a, d) in self.0.iter_mut().zip(Self::digest(t)) {
            *a = a.wrapping_add(d);
        }
    }

    fn remove(&mut self, t: &PromptTemplate) {
        for (a, d) in self.0.iter_mut().zip(Self::digest(t)) {
            *a = a.wrapping_sub(d);
        }
    }

    fn of<'a>(prompts: impl Iterator<Item = &'a Arc<PromptTemplate>>) -> VersionSum {
        let mut sum = VersionSum::default();
        for t in prompts {
            sum.add(t);
        }
        sum
    }
}

impl Changes {
    /// The names added, replaced or removed, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

impl Registry {
    /// Loads every root (lowest precedence first) with the default file size cap.
    pub fn load(roots: Vec<Arc<dyn PromptSource>>) -> Registry {
        Self::load_capped(
            roots,
            promptd_base::limits::Limits::default().max_prompt_file_bytes,
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
        if let (Some(previous), Some(touched)) = (previous, touched)
            && previous.roots.len() == roots.len()
            && previous
                .roots
                .iter()
                .zip(&roots)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && let Some(updated) = previous.updated(touched, check, max_file_bytes)
        {
            return updated;
        }
        let mut diagnostics = Vec::new();
        let mut files = imbl::OrdMap::new();
        let mut prompts: imbl::OrdMap<String, Arc<PromptTemplate>> = imbl::OrdMap::new();
        let mut shadowed = Vec::new();
        let mut contested = HashSet::new();
        let mut settling = false;
        let mut gone = imbl::OrdSet::new();
        let mut unlisted = Vec::new();
        let listed_at = std::time::SystemTime::now();
        let now = std::time::Instant::now();
        let removed_grace = previous.map_or(REMOVED_GRACE, |p| p.removed_grace);
        let reads = read_settled(&roots, previous, touched, max_file_bytes, listed_at);
        let mut missing = previous.map_or_else(Vec::new, |p| p.missing(&roots, &reads));
        for (r, (root, listed)) in roots.iter().zip(reads).enumerate() {
            let listed = match listed {
                Ok((listed, skipped)) => {
                    if !skipped.is_empty() {
                        unlisted.extend(root.dir().map(std::path::Path::to_path_buf));
                    }
                    diagnostics.extend(skipped.into_iter().map(|s| Diagnostic {
                        severity: Severity::Warning,
                        path: s.path,
                        line: 1,
                        column: 1,
                        code: "skipped",
                        message: format!("skipped: {}", s.reason),
                    }));
                    listed
                }
                Err(e) => {
                    unlisted.extend(root.dir().map(std::path::Path::to_path_buf));
                    diagnostics.push(Diagnostic {
                        severity: Severity::Error,
                        path: root.describe(),
                        line: 1,
                        column: 1,
                        code: "root",
                        message: format!("cannot read prompt root: {e}"),
                    });
                    Vec::new()
                }
            };
            // Files parse in parallel; their outcomes are taken in listing order.
            let outcomes = map_in_order(listed, |(file, read)| {
                let loaded = load_file(root.as_ref(), &file, read, previous, check, listed_at);
                (file, loaded)
            });
            let mut loaded: Vec<Arc<PromptTemplate>> = Vec::with_capacity(outcomes.len());
            for (file, outcome) in outcomes {
                if let Some(tpl) = outcome.apply(
                    &file.display_path,
                    r,
                    &mut files,
                    &mut diagnostics,
                    &mut settling,
                    &mut gone,
                ) {
                    loaded.push(tpl);
                }
            }
            // Files of this root gone since `previous`: their last good versions, through the
            // grace, unless a listed file now serves their name.
            let gone_here = missing
                .iter_mut()
                .filter(|(root, _, _)| *root == r)
                .map(|(_, path, state)| (std::mem::take(path), state.take()));
            let mut claimed: Option<HashSet<String>> = None;
            for (path, state) in gone_here {
                let outcome = removed(state.as_ref(), &path, now, removed_grace);
                let Some(tpl) = &outcome.served else {
                    continue;
                };
                let claimed =
                    claimed.get_or_insert_with(|| loaded.iter().map(|t| t.name.clone()).collect());
                if !claimed.insert(tpl.name.clone()) {
                    continue;
                }
                if let Some(tpl) = outcome.apply(
                    &path,
                    r,
                    &mut files,
                    &mut diagnostics,
                    &mut settling,
                    &mut gone,
                ) {
                    loaded.push(tpl);
                }
            }
            let in_root = qualify_collisions(loaded, &mut diagnostics, &mut contested);
            for (name, tpl) in in_root {
                if let Some(hidden) = prompts.insert(name.clone(), tpl.clone()) {
                    contested.insert(name.clone());
                    shadowed.push(Shadowing {
                        name,
                        hidden: hidden.path.clone(),
                        by: tpl.path.clone(),
                    });
                }
            }
        }
        Registry {
            version: VersionSum::of(prompts.values()),
            roots,
            prompts,
            diagnostics,
            shadowed,
            files,
            contested: Arc::new(contested),
            max_file_bytes,
            settling,
            changes: None,
            gone,
            unlisted: Arc::new(unlisted),
            removed_grace,
        }
    }

    /// This registry with files gone from their folders served for `grace` (instead of
    /// [`REMOVED_GRACE`]); registries loaded from it keep the setting.
    pub fn with_removed_grace(mut self, grace: Duration) -> Registry {
        self.removed_grace = grace;
        self
    }

    /// How long a file gone from its folder stays served (see [`REMOVED_GRACE`]).
    pub fn removed_grace(&self) -> Duration {
        self.removed_grace
    }

    /// The files this registry served (a last good version) from `roots` (the same roots, in
    /// the same order) that `reads` no longer lists: root index, path, state.
    #[allow(clippy::type_complexity)]
    fn missing(
        &self,
        roots: &[Arc<dyn PromptSource>],
        reads: &[Result<(Vec<(SourceFile, FileRead)>, Vec<Skipped>), SourceError>],
    ) -> Vec<(usize, String, Option<FileState>)> {
        let listed: HashSet<&str> = reads
            .iter()
            .flat_map(|r| r.iter().flat_map(|(files, _)| files))
            .map(|(file, _)| file.display_path.as_str())
            .collect();
        self.files
            .iter()
            .filter(|(path, state)| {
                state.good.is_some()
                    && !listed.contains(path.as_str())
                    && self
                        .roots
                        .get(state.root)
                        .zip(roots.get(state.root))
                        .is_some_and(|(a, b)| Arc::ptr_eq(a, b))
            })
            .map(|(path, state)| (state.root, path.clone(), Some(state.clone())))
            .collect()
    }

    /// This registry updated from the paths a watcher named, reading and parsing only the files
    /// at those paths; `None` when the paths may change more than those files' own prompts (a
    /// folder, a path that is neither a known file nor a file a root would list, a name that
    /// another file claims or would claim), which only a full load decides.
    fn updated(
        &self,
        touched: &Touched,
        check: TemplateCheck<'_>,
        max_file_bytes: u64,
    ) -> Option<Registry> {
        let listed_at = std::time::SystemTime::now();
        if touched.paths().iter().any(|p| {
            self.unlisted
                .iter()
                .any(|dir| std::path::Path::new(p).starts_with(dir))
        }) {
            return None;
        }
        let mut targets: Vec<(usize, SourceFile, FileRead)> = Vec::new();
        // Files gone from their folders are looked at again: back, or still gone (served
        // until their grace ends).
        let paths: BTreeSet<&String> = touched.paths().iter().chain(self.gone.iter()).collect();
        for path in paths {
            let known = self.files.contains_key(path);
            if !known && self.holds_files_below(path) {
                return None;
            }
            let mut claims = self
                .roots
                .iter()
                .enumerate()
                .filter_map(|(r, root)| Some((r, root.file_at(path)?)));
            let claim = claims.next();
            if claims.next().is_some() {
                return None;
            }
            let meta = std::fs::metadata(path);
            let exists = match &meta {
                Ok(m) if m.is_file() => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                // A folder, a device or a file that cannot be looked at: only a listing decides.
                _ if known || claim.is_some() => return None,
                _ => continue,
            };
            let Some((r, file)) = claim else {
                if known {
                    return None;
                }
                // Not a file any root lists (the config file, an editor's temporary file).
                continue;
            };
            if !known && !exists {
                continue;
            }
            let root = &self.roots[r];
            // The stamp of the metadata just read (what `root.stamp` would look up again).
            let stamp = meta.ok().as_ref().and_then(FileStamp::of);
            let result = if exists {
                root.read(&file.rel_path, max_file_bytes)
            } else {
                Ok(None)
            };
            targets.push((r, file, FileRead::read(result, stamp)));
        }
        settle(
            self,
            listed_at,
            max_file_bytes,
            targets
                .iter_mut()
                .map(|(r, file, read)| (self.roots[*r].as_ref(), &*file, read)),
        );

        let mut files = self.files.clone();
        let mut prompts = self.prompts.clone();
        let mut version = self.version;
        let mut found = Vec::new();
        let mut settling = false;
        let mut gone = self.gone.clone();
        let mut names = Vec::new();
        let paths: HashSet<String> = targets
            .iter()
            .map(|(_, f, _)| f.display_path.clone())
            .collect();
        for (r, file, read) in targets {
            let old = self
                .files
                .get(&file.display_path)
                .and_then(|s| s.good.clone());
            if let Some(old) = &old
                && (self.contested.contains(&old.name)
                    || !prompts.get(&old.name).is_some_and(|p| Arc::ptr_eq(p, old)))
            {
                return None;
            }
            files.remove(&file.display_path);
            gone.remove(&file.display_path);
            let served = load_file(
                self.roots[r].as_ref(),
                &file,
                read,
                Some(self),
                check,
                listed_at,
            )
            .apply(
                &file.display_path,
                r,
                &mut files,
                &mut found,
                &mut settling,
                &mut gone,
            );
            if let Some(new) = &served
                && (self.contested.contains(&new.name)
                    || (old.as_ref().map(|o| &o.name) != Some(&new.name)
                        && prompts.contains_key(&new.name)))
            {
                return None;
            }
            if old
                .as_ref()
                .zip(served.as_ref())
                .is_some_and(|(o, n)| Arc::ptr_eq(o, n))
            {
                continue;
            }
            if let Some(old) = &old {
                prompts.remove(&old.name);
                version.remove(old);
                names.push(old.name.clone());
            }
            if let Some(new) = served {
                version.add(&new);
                names.push(new.name.clone());
                prompts.insert(new.name.clone(), new);
            }
        }
        // The touched files' findings replace their earlier ones, in their place.
        let mut diagnostics = Vec::with_capacity(self.diagnostics.len() + found.len());
        let mut placed = false;
        for d in &self.diagnostics {
            if paths.contains(&d.path) {
                if !placed {
                    diagnostics.append(&mut found);
                    placed = true;
                }
            } else {
                diagnostics.push(d.clone());
            }
        }
        diagnostics.append(&mut found);
        names.sort();
        names.dedup();
        Some(Registry {
            roots: self.roots.clone(),
            prompts,
            diagnostics,
            shadowed: self.shadowed.clone(),
            files,
            contested: self.contested.clone(),
            version,
            max_file_bytes,
            settling,
            changes: Some(Changes {
                base: self.version,
                names,
            }),
            gone,
            unlisted: self.unlisted.clone(),
            removed_grace: self.removed_grace,
        })
    }

    /// Whether some file of this registry lies below `path` (a folder).
    fn holds_files_below(&self, path: &str) -> bool {
        let below = format!("{path}{}", std::path::MAIN_SEPARATOR);
        self.files
            .range(below.clone()..)
            .next()
            .is_some_and(|(p, _)| p.starts_with(&below))
    }

    /// What changed since `base` when this registry was updated from `base` by named paths
    /// alone; `None` after a full load (compare the registries instead).
    pub fn changes_since(&self, base: &Registry) -> Option<&Changes> {
        self.changes.as_ref().filter(|c| c.base == base.version)
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

    /// The version of the whole set: a hash of the set of every served prompt's name and
    /// version hash (the sum of their digests, kept up to date by reloads). Two processes
    /// serving the same files report the same version.
    pub fn version(&self) -> String {
        let bytes: Vec<u8> = self
            .version
            .0
            .iter()
            .flat_map(|l| l.to_le_bytes())
            .collect();
        content_hash(&bytes)
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

    /// The files that failed to load and are served in no version: the first error of each
    /// file that no served prompt comes from, in path order.
    pub fn not_loaded(&self) -> Vec<&Diagnostic> {
        self.failed_files()
            .into_iter()
            .filter(|f| f.served.is_none())
            .map(|f| f.diagnostic)
            .collect()
    }

    /// Every file whose last read failed, in path order: its first error, and the prompt still
    /// served from its last good version (none when it is served in no version).
    pub fn failed_files(&self) -> Vec<FailedFile<'_>> {
        let mut out: Vec<FailedFile<'_>> = Vec::new();
        for d in &self.diagnostics {
            if d.severity == Severity::Error && !out.iter().any(|o| o.diagnostic.path == d.path) {
                out.push(FailedFile {
                    diagnostic: d,
                    served: None,
                });
            }
        }
        // The prompts still served from those files: one pass over the prompts, and none when
        // every file loads (the studio asks on every list of a registry of 100,000).
        if !out.is_empty() {
            let failed: HashMap<&str, usize> = out
                .iter()
                .enumerate()
                .map(|(i, f)| (f.diagnostic.path.as_str(), i))
                .collect();
            for p in self.prompts.values() {
                if let Some(&i) = failed.get(p.path.as_str()) {
                    out[i].served = Some(p.name.as_str());
                }
            }
        }
        out.sort_by(|a, b| a.diagnostic.path.cmp(&b.diagnostic.path));
        out
    }

    /// Prompts hidden by later roots.
    pub fn shadowed(&self) -> &[Shadowing] {
        &self.shadowed
    }

    /// The whole text of the file `prompt` was read from, when it still holds what was read
    /// (its content hash is the prompt's version hash): `None` when the file is gone, changed
    /// since (a newer version that did not load, say), over the size limit or unreadable.
    pub fn source_text(&self, prompt: &PromptTemplate) -> Option<String> {
        // The load's own record of the file: its root, and the hash of what it read last (a
        // newer version that did not load has another: no read needed).
        let state = self.files.get(&prompt.path)?;
        if state.hash != prompt.version_hash {
            return None;
        }
        let text = self
            .roots
            .get(state.root)?
            .read(&prompt.rel_path, self.max_file_bytes)
            .ok()
            .flatten()?;
        (content_hash(text.as_bytes()) == prompt.version_hash).then_some(text)
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
            .filter(|prev| prev.good.is_some() && prev.gone_since.is_none());
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
    contested: &mut HashSet<String>,
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
                contested.insert(tpl.name.clone());
                contested.insert(t.name.clone());
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
            contested.insert(tpl.name.clone());
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
/// not name or whose stamp has not moved is not read (see [`Registry::unchanged`]), and the
/// files whose content changed are [settled](settle).
#[allow(clippy::type_complexity)]
fn read_settled(
    roots: &[Arc<dyn PromptSource>],
    previous: Option<&Registry>,
    touched: Option<&Touched>,
    max_file_bytes: u64,
    listed_at: std::time::SystemTime,
) -> Vec<Result<(Vec<(SourceFile, FileRead)>, Vec<Skipped>), SourceError>> {
    let mut reads: Vec<Result<(Vec<(SourceFile, FileRead)>, Vec<Skipped>), SourceError>> = roots
        .iter()
        .map(|root| {
            let (files, skipped) = root.list_reported()?;
            // A large folder's files are stat'ed and read in parallel.
            let files = map_in_order(files, |file| {
                let stamp = match previous {
                    Some(p) => match p.unchanged(root.as_ref(), &file, touched) {
                        Ok(()) => return (file, FileRead::UNCHANGED),
                        Err(stamp) => stamp,
                    },
                    None => root.stamp(&file.rel_path),
                };
                let result = root.read(&file.rel_path, max_file_bytes);
                (file, FileRead::read(result, stamp))
            });
            Ok((files, skipped))
        })
        .collect();
    let Some(previous) = previous else {
        return reads;
    };
    settle(
        previous,
        listed_at,
        max_file_bytes,
        reads
            .iter_mut()
            .zip(roots)
            .filter_map(|(listed, root)| Some((root, &mut listed.as_mut().ok()?.0)))
            .flat_map(|(root, listed)| {
                listed
                    .iter_mut()
                    .map(move |(file, read)| (root.as_ref(), &*file, read))
            }),
    );
    reads
}

/// Waits for the files read whose content changed since `previous` to be stable: each is read
/// again after [`SETTLE`] until two reads agree, unless its stamp shows it unmodified for
/// [`SETTLE`] already, before and after the read; a file still changing after
/// [`SETTLE_ROUNDS`] reads is marked unsettled.
fn settle<'a>(
    previous: &Registry,
    listed_at: std::time::SystemTime,
    max_file_bytes: u64,
    reads: impl Iterator<Item = (&'a dyn PromptSource, &'a SourceFile, &'a mut FileRead)>,
) {
    let changed =
        |file: &SourceFile, read: &ReadResult| match (previous.files.get(&file.display_path), read)
        {
            (Some(prev), Ok(Some(text))) => prev.hash != content_hash(text.as_bytes()),
            // Still gone, as the previous load found it.
            (Some(prev), Ok(None)) => prev.gone_since.is_none(),
            _ => true,
        };
    let mut unsettled: Vec<_> = reads
        .filter(|(root, file, read)| {
            if read.unchanged || !changed(file, &read.result) {
                return false;
            }
            let quiet = read.stamp.is_some_and(|s| {
                s.unmodified_for(SETTLE, listed_at) && root.stamp(&file.rel_path) == Some(s)
            });
            !quiet
        })
        .collect();
    for _ in 0..SETTLE_ROUNDS {
        if unsettled.is_empty() {
            break;
        }
        std::thread::sleep(SETTLE);
        unsettled.retain_mut(|(root, file, read)| {
            let again = root.read(&file.rel_path, max_file_bytes);
            let same = same_read(&read.result, &again);
            read.result = again;
            !same
        });
    }
    for (_, _, read) in unsettled {
        read.settled = false;
    }
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
    /// What a read gave, with the stamp taken before it; settled until [`settle`] says not.
    fn read(result: ReadResult, stamp: Option<FileStamp>) -> FileRead {
        FileRead {
            result,
            settled: true,
            unchanged: false,
            stamp,
        }
    }

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
    /// The changed paths, sorted.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    fn covers(&self, path: &str) -> bool {
        self.paths.iter().any(|t| {
            path.strip_prefix(t.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(std::path::MAIN_SEPARATOR))
        })
    }
}

/// Fewest files of one root read and parsed on the thread pool: a small folder (the built-ins)
/// loads on the calling thread and starts no pool.
const PARALLEL_FROM: usize = 256;

/// `f` over `items`, results in their order; on the thread pool from [`PARALLEL_FROM`] items.
fn map_in_order<T: Send, U: Send>(items: Vec<T>, f: impl Fn(T) -> U + Sync + Send) -> Vec<U> {
    if items.len() < PARALLEL_FROM {
        items.into_iter().map(f).collect()
    } else {
        items.into_par_iter().map(f).collect()
    }
}

/// What loading one listed file decides: the prompt it serves (its new version, or the last
/// good one), the state the registry keeps for it (`None`: no entry), what it reports, and
/// whether it is still being written. Computed from the file alone, so files load in parallel.
struct Loaded {
    served: Option<Arc<PromptTemplate>>,
    state: Option<FileState>,
    reported: Vec<Diagnostic>,
    settling: bool,
}

/// What a load serves for a file gone from its folder, given its `previous` state: its last
/// good version, reported and settling (to be looked at again) until `grace` has passed since
/// a load first found it gone; then nothing.
fn removed(
    previous: Option<&FileState>,
    path: &str,
    now: std::time::Instant,
    grace: Duration,
) -> Loaded {
    let Some((prev, good)) = previous.and_then(|p| Some((p, p.good.clone()?))) else {
        return Loaded::nothing(false);
    };
    let since = prev.gone_since.unwrap_or(now);
    let gone_for = now.saturating_duration_since(since);
    if gone_for >= grace && (gone_for >= grace * REMOVED_GRACE_MAX || folder_quiet_for(path, grace))
    {
        return Loaded::nothing(false);
    }
    let finding = Diagnostic {
        severity: Severity::Warning,
        path: path.to_string(),
        line: 1,
        column: 1,
        code: "settling",
        message: format!(
            "file is gone; its last version stays served for up to {} ms in case it is being \
             saved again",
            grace.as_millis()
        ),
    };
    Loaded {
        served: Some(good),
        state: Some(FileState {
            findings: vec![finding.clone()],
            gone_since: Some(since),
            ..prev.clone()
        }),
        reported: vec![finding],
        settling: true,
    }
}

/// Whether the folder of `path` has had no entry created or removed for `grace` (its
/// modification time); a folder that cannot be looked at counts as quiet.
fn folder_quiet_for(path: &str, grace: Duration) -> bool {
    let changed = std::path::Path::new(path)
        .parent()
        .and_then(|dir| std::fs::metadata(dir).ok())
        .and_then(|m| m.modified().ok());
    changed.is_none_or(|t| t.elapsed().is_ok_and(|age| age >= grace))
}

impl Loaded {
    /// Nothing served, kept or reported; `settling` when the file is still being written.
    fn nothing(settling: bool) -> Loaded {
        Loaded {
            served: None,
            state: None,
            reported: Vec::new(),
            settling,
        }
    }

    /// Adds this file's state (a file of the root at index `root`), reports and settling to a
    /// registry being built; a file gone from its folder joins `gone`.
    fn apply(
        self,
        path: &str,
        root: usize,
        files: &mut imbl::OrdMap<String, FileState>,
        diagnostics: &mut Vec<Diagnostic>,
        settling: &mut bool,
        gone: &mut imbl::OrdSet<String>,
    ) -> Option<Arc<PromptTemplate>> {
        if let Some(mut state) = self.state {
            state.root = root;
            if state.gone_since.is_some() {
                gone.insert(path.to_string());
            }
            files.insert(path.to_string(), state);
        }
        diagnostics.extend(self.reported);
        *settling |= self.settling;
        self.served
    }
}

fn load_file(
    root: &dyn PromptSource,
    file: &SourceFile,
    read: FileRead,
    previous: Option<&Registry>,
    check: TemplateCheck<'_>,
    listed_at: std::time::SystemTime,
) -> Loaded {
    let stamp = read.stamp.filter(|s| s.trusted_at(listed_at));
    let prev = previous.and_then(|p| p.files.get(&file.display_path));
    let good = prev.and_then(|p| p.good.clone());
    if read.unchanged
        && let Some(prev) = prev
    {
        return Loaded {
            served: good,
            state: Some(prev.clone()),
            reported: prev.findings.clone(),
            settling: false,
        };
    }
    // Keeps the last good version (if any) of a file whose new content is not taken.
    let keep = |diagnostic: Option<Diagnostic>, settling: bool| {
        let mut findings = Vec::new();
        if let Some(mut d) = diagnostic {
            if good.is_some() {
                d.message.push_str(" (keeping the last good version)");
            }
            findings.push(d);
        }
        Loaded {
            served: good.clone(),
            state: prev.map(|prev| FileState {
                findings: findings.clone(),
                gone_since: None,
                ..prev.clone()
            }),
            reported: findings,
            settling,
        }
    };
    let text = match read.result {
        Ok(Some(t)) => t,
        Ok(None) => {
            let grace = previous.map_or(REMOVED_GRACE, |p| p.removed_grace);
            return removed(prev, &file.display_path, std::time::Instant::now(), grace);
        }
        Err(e) => {
            return keep(
                Some(Diagnostic {
                    severity: Severity::Error,
                    path: file.display_path.clone(),
                    line: 1,
                    column: 1,
                    code: "read",
                    message: e.to_string(),
                }),
                false,
            );
        }
    };
    if !read.settled && good.is_none() {
        // A new file still being written appears once it is complete.
        return Loaded::nothing(true);
    }
    if good.is_some() {
        let just_emptied = text.is_empty()
            && root
                .age(&file.rel_path)
                .is_some_and(|age| age < EMPTY_GRACE);
        if !read.settled || just_emptied {
            return keep(
                Some(Diagnostic {
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
                }),
                true,
            );
        }
    }
    let hash = content_hash(text.as_bytes());
    if let Some(prev) = prev
        && prev.hash == hash
        && let Some(good) = &prev.good
    {
        return Loaded {
            served: Some(good.clone()),
            state: Some(FileState {
                stamp,
                gone_since: None,
                ..prev.clone()
            }),
            reported: prev.findings.clone(),
            settling: false,
        };
    }
    // What is served from this file, and what is wrong with its new text. A new text that does
    // not load keeps the last good version served (the diagnostic says so).
    let (served, problem) = match parse_prompt_file_hashed(
        &text,
        hash.clone(),
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
    let mut findings = Vec::new();
    if let Some(mut diagnostic) = problem {
        if served.is_some() {
            diagnostic
                .message
                .push_str(" (keeping the last good version)");
        }
        findings.push(diagnostic);
    }
    Loaded {
        served: served.clone(),
        state: Some(FileState {
            hash,
            good: served,
            stamp,
            findings: findings.clone(),
            root: 0,
            gone_since: None,
        }),
        reported: findings,
        settling: false,
    }
}

/// Why a changed file's new version must not replace its last good version `good`, if it must
/// not: see [`Registry::load_with_previous`].
fn broken_template(
    new: &PromptTemplate,
    good: &PromptTemplate,
    check: TemplateCheck<'_>,
) -> Option<TemplateSyntaxError> {
    // Another tool's file is never promptd's Jinja: Dotprompt (Handlebars) and Prompty
    // (Jinja2) bodies are compiled by their own engine when the file is parsed.
    if !new.dialect.is_promptd() {
        return None;
    }
    match new.engine {
        Some(Engine::Plain) => None,
        Some(Engine::Jinja) => check(new).err(),
        None => {
            let mut e = check(new).err()?;
            let good_was_jinja = good.engine != Some(Engine::Plain) && check(good).is_ok();
            if good_was_jinja {
                e.message.push_str(
                    "; the last good version is a Jinja template (declare `engine: plain` to serve this file as plain text)",
                );
                return Some(e);
            }
            // A Jinja template with a mistake; a file shown not to be Jinja is plain text.
            (!crate::dialect::jinja::shown_not_jinja(&new.body)).then_some(e)
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
    ".opencode/command",
    ".opencode/commands",
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

#[cfg(test)]
mod removed_grace_tests {
    use super::*;

    #[test]
    fn a_folder_is_quiet_once_no_entry_changed_for_the_grace() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gone.md");
        std::fs::write(&file, "x").unwrap();
        std::fs::remove_file(&file).unwrap();
        let path = file.to_str().unwrap();
        assert!(!folder_quiet_for(path, Duration::from_secs(3600)));
        assert!(folder_quiet_for(path, Duration::ZERO));
        assert!(folder_quiet_for(
            "/nonexistent/promptd/folder/gone.md",
            Duration::from_secs(3600)
        ));
    }
}
