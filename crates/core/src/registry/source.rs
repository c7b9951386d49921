//! Where prompt files come from: a small trait with a folder implementation and the built-in
//! prompts compiled into the binary; a folder at a git commit is another
//! ([`crate::versions::tree::TreeSource`]).

use std::path::{Component, Path, PathBuf};

use include_dir::{Dir, include_dir};

use super::template::PromptCategory;
use crate::dialect::Dialect;

/// The prompts shipped with promptd (`prompts/` in the repository), compiled in so the binary
/// works from any directory.
static BUILTIN: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../prompts");

/// One prompt file offered by a source.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the root, with `/` separators (`review.md`, `system/x.md`).
    pub rel_path: String,
    /// Path for messages: absolute on disk, `builtin:prompts/...` for built-ins.
    pub display_path: String,
    pub category: PromptCategory,
}

/// A file's size, modification time and inode: when none of them moved since the file was
/// read, its content is taken as unchanged (see [`FileStamp::trusted_at`] for files modified
/// just before they were read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: std::time::SystemTime,
    inode: u64,
}

/// How long before a listing a file must have last been modified for its stamp to vouch for
/// its content: file systems keep modification times in coarse ticks, so a file rewritten
/// with the same size within one tick of being read keeps its stamp.
const STAMP_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

impl FileStamp {
    /// The stamp of a file's metadata (a regular file's, symlinks followed).
    pub fn of(meta: &std::fs::Metadata) -> Option<FileStamp> {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileStamp {
            len: meta.len(),
            modified: meta.modified().ok()?,
            inode,
        })
    }

    /// The stamp of the file at `path` now, symlinks followed.
    pub fn of_path(path: &Path) -> Option<FileStamp> {
        FileStamp::of(&std::fs::metadata(path).ok()?)
    }

    /// Whether a file with this stamp, taken at `listed_at`, had stopped changing by then:
    /// its modification time is at least [`STAMP_MARGIN`] older.
    pub fn trusted_at(&self, listed_at: std::time::SystemTime) -> bool {
        self.unmodified_for(STAMP_MARGIN, listed_at)
    }

    /// Whether the file had not been modified for `quiet` when it was listed at `listed_at`.
    pub fn unmodified_for(
        &self,
        quiet: std::time::Duration,
        listed_at: std::time::SystemTime,
    ) -> bool {
        self.modified
            .checked_add(quiet)
            .is_some_and(|t| t <= listed_at)
    }
}

/// A listed folder entry that is a regular file, symlinks followed: `Some` with its stamp when
/// `stamped`, `None` for anything else. A symlink costs one `stat` through the link; another
/// entry's type is known from the listing, and its stamp is looked up relative to the open
/// folder (no walk of the whole path), only when `stamped`.
fn listed_file(
    entry: &std::fs::DirEntry,
    kind: std::fs::FileType,
    stamped: bool,
) -> Option<Option<FileStamp>> {
    if kind.is_symlink() {
        let meta = std::fs::metadata(entry.path())
            .ok()
            .filter(std::fs::Metadata::is_file)?;
        return Some(stamped.then(|| FileStamp::of(&meta)).flatten());
    }
    if !kind.is_file() {
        return None;
    }
    Some(
        stamped
            .then(|| FileStamp::of(&entry.metadata().ok()?))
            .flatten(),
    )
}

/// A folder entry a listing left out although it may hold prompts: an entry whose name is not
/// UTF-8, a folder that cannot be read (not a folder, a symbolic link loop, a path too long).
/// Its siblings are listed as usual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry's path, bytes that are not UTF-8 written as `\xNN` ([`escaped`]).
    pub path: String,
    /// Why it was left out (`name is not UTF-8`).
    pub reason: String,
}

/// A path for messages: as it is where it is UTF-8, each byte that is not written as `\xNN`.
pub fn escaped(path: &Path) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// The entries of `dir`. A root that cannot be read is an error; any other folder holds nothing
/// (`None`) when it is missing and `missing_is_empty`, and otherwise, when it cannot be read, is
/// reported in `skipped` and holds nothing.
fn read_folder(
    dir: &Path,
    is_root: bool,
    missing_is_empty: bool,
    skipped: &mut Vec<Skipped>,
) -> Result<Option<std::fs::ReadDir>, SourceError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries)),
        Err(e) if missing_is_empty && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) if is_root => Err(SourceError::Io {
            path: dir.display().to_string(),
            source,
        }),
        Err(e) => {
            skipped.push(Skipped {
                path: escaped(dir),
                reason: unreadable_folder(&e),
            });
            Ok(None)
        }
    }
}

/// Why a folder cannot be listed, for a [`Skipped`] entry.
fn unreadable_folder(e: &std::io::Error) -> String {
    #[cfg(unix)]
    {
        let errno = e.raw_os_error().map(rustix::io::Errno::from_raw_os_error);
        if errno == Some(rustix::io::Errno::LOOP) {
            return "symbolic link loop".into();
        }
        if errno == Some(rustix::io::Errno::NAMETOOLONG) {
            return "path too long".into();
        }
    }
    if e.kind() == std::io::ErrorKind::NotADirectory {
        return "not a folder".into();
    }
    format!("cannot read folder: {e}")
}

/// Errors reading a source.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{name}` escapes its prompt root {root}")]
    Escapes { name: String, root: String },
    #[error(transparent)]
    Read(#[from] promptd_base::limits::CappedReadError),
}

/// A root of prompt files: `*.md` are user prompts, `system/*.md` system prompts.
pub trait PromptSource: Send + Sync + std::fmt::Debug {
    /// A short description for messages (the folder path, or `builtin`).
    fn describe(&self) -> String;
    /// The folder on disk, if any (watched for hot reload).
    fn dir(&self) -> Option<&Path>;
    /// Every prompt file of the root, sorted by path.
    fn list(&self) -> Result<Vec<SourceFile>, SourceError>;
    /// [`list`](Self::list), with the entries the listing left out ([`Skipped`]). An error is a
    /// root that cannot be listed at all.
    fn list_reported(&self) -> Result<(Vec<SourceFile>, Vec<Skipped>), SourceError> {
        Ok((self.list()?, Vec::new()))
    }
    /// Reads a file by root-relative path; `Ok(None)` when it does not exist. Paths that escape
    /// the root are rejected, and so are files larger than `max_bytes`, non-regular files and
    /// text that is not UTF-8.
    fn read(&self, rel_path: &str, max_bytes: u64) -> Result<Option<String>, SourceError>;
    /// A file's stamp now, when the source has stamps (files on disk).
    fn stamp(&self, _rel_path: &str) -> Option<FileStamp> {
        None
    }
    /// [`list`](Self::list) with each file's [`stamp`](Self::stamp), taken as it is listed.
    fn list_stamped(&self) -> Result<Vec<(SourceFile, Option<FileStamp>)>, SourceError> {
        Ok(self
            .list()?
            .into_iter()
            .map(|file| {
                let stamp = self.stamp(&file.rel_path);
                (file, stamp)
            })
            .collect())
    }
    /// How long ago a file was last modified, when the source knows (from its stamp).
    fn age(&self, rel_path: &str) -> Option<std::time::Duration> {
        Some(self.stamp(rel_path)?.modified.elapsed().unwrap_or_default())
    }
    /// The message path of a root-relative file.
    fn display_path(&self, rel_path: &str) -> String;
    /// The file [`list`](Self::list) would offer at message path `path` if a regular file were
    /// there (whether or not one is), judged by the path alone; `None` for a path outside the
    /// root or one its listing leaves out (hidden, another extension, another subfolder).
    fn file_at(&self, _path: &str) -> Option<SourceFile> {
        None
    }
    /// The dialect of the root's files, when the root decides it (a `.claude/commands` folder).
    fn dialect(&self) -> Option<Dialect> {
        None
    }
}

/// Rejects absolute paths and `..` so that a name or include never leaves its root.
pub fn check_relative(name: &str, root: &str) -> Result<(), SourceError> {
    let p = Path::new(name);
    let escapes = p.is_absolute()
        || name.starts_with('/')
        || name.starts_with('\\')
        // A drive (`c:`) on Windows; on Unix `:` is an ordinary file name character (Codex
        // users namespace prompts as `spec:new.md`).
        || (cfg!(windows) && name.contains(':'))
        || p.components().any(|c| {
            matches!(
                c,
                Component::ParentDir | Component::RootDir | Component::Prefix(_)
            )
        });
    if escapes {
        Err(SourceError::Escapes {
            name: name.to_string(),
            root: root.to_string(),
        })
    } else {
        Ok(())
    }
}

/// Whether a file or folder of a promptd folder holds include files rather than prompts: its
/// name starts with `_`, or it is a folder named `partials`.
pub fn is_include_name(name: &str) -> bool {
    name.starts_with('_') || name == "partials"
}

/// A folder on disk, read with its subfolders, which namespace the names (`area/review.md` is
/// `area:review`). A folder of another tool's dialect (`.claude/commands`, …) holds that tool's
/// files; a promptd folder holds `*.md` user prompts, `system/*.md` system prompts, and include
/// files that are not prompts in folders named `partials` or starting with `_` (and files
/// starting with `_`).
#[derive(Debug, Clone)]
pub struct DirSource {
    root: PathBuf,
    dialect: Option<Dialect>,
}

impl DirSource {
    /// A folder whose dialect its location decides ([`Dialect::of_folder`]): the location as
    /// given (a `.claude/commands` that is a symbolic link to a shared folder is a Claude
    /// folder), else the folder it resolves to. The root itself is the resolved folder, so
    /// that no file read through it leaves it.
    pub fn new(root: impl Into<PathBuf>) -> DirSource {
        let given = root.into();
        let root = std::fs::canonicalize(&given).unwrap_or_else(|_| given.clone());
        let dialect = std::path::absolute(&given)
            .ok()
            .and_then(|p| Dialect::of_folder(&p))
            .or_else(|| Dialect::of_folder(&root));
        DirSource { root, dialect }
    }

    /// A folder of a given dialect, whatever its location.
    pub fn with_dialect(root: impl Into<PathBuf>, dialect: Dialect) -> DirSource {
        DirSource {
            dialect: Some(dialect),
            ..DirSource::new(root)
        }
    }

    /// Every prompt file, sorted by path, each with its stamp when `stamped`, and the entries
    /// left out.
    #[allow(clippy::type_complexity)]
    fn listing(
        &self,
        stamped: bool,
    ) -> Result<(Vec<(SourceFile, Option<FileStamp>)>, Vec<Skipped>), SourceError> {
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        match self.dialect {
            Some(d) if d.nested() => self.scan_nested(d, stamped, &mut out, &mut skipped)?,
            _ => {
                self.scan_nested(Dialect::Jinja, stamped, &mut out, &mut skipped)?;
                self.scan(
                    "system",
                    PromptCategory::System,
                    stamped,
                    &mut out,
                    &mut skipped,
                )?;
            }
        }
        out.sort_by(|a, b| a.0.rel_path.cmp(&b.0.rel_path));
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((out, skipped))
    }

    /// Every file of a dialect folder and its subfolders (for a promptd folder, without
    /// `system/` and include folders: [`is_include_name`]). Symlinked folders are not followed,
    /// so the walk ends. A subfolder that cannot be read, and an entry whose name is not UTF-8,
    /// are left out and reported in `skipped`.
    fn scan_nested(
        &self,
        dialect: Dialect,
        stamped: bool,
        out: &mut Vec<(SourceFile, Option<FileStamp>)>,
        skipped: &mut Vec<Skipped>,
    ) -> Result<(), SourceError> {
        let mut pending = vec![String::new()];
        while let Some(sub) = pending.pop() {
            let dir = self.root.join(&sub);
            let Some(entries) = read_folder(&dir, sub.is_empty(), false, skipped)? else {
                continue;
            };
            for entry in entries.flatten() {
                let raw = entry.file_name();
                if raw.as_encoded_bytes().starts_with(b".") {
                    continue;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let Some(name) = raw.to_str() else {
                    if kind.is_dir() || dialect.accepts(&raw.to_string_lossy()) {
                        skipped.push(Skipped {
                            path: escaped(&entry.path()),
                            reason: "name is not UTF-8".into(),
                        });
                    }
                    continue;
                };
                let rel = if sub.is_empty() {
                    name.to_string()
                } else {
                    format!("{sub}/{name}")
                };
                if dialect.is_promptd()
                    && (is_include_name(name) || (kind.is_dir() && rel == "system"))
                {
                    continue;
                }
                if kind.is_dir() {
                    pending.push(rel);
                } else if (if dialect.is_promptd() {
                    Dialect::promptd_folder_accepts(name)
                } else {
                    dialect.accepts(name)
                }) && let Some(stamp) = listed_file(&entry, kind, stamped)
                {
                    out.push((
                        SourceFile {
                            display_path: entry.path().display().to_string(),
                            rel_path: rel,
                            category: PromptCategory::User,
                        },
                        stamp,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `*.md` files of the root (`sub` empty) or of its folder `sub`. A folder `sub` that
    /// is missing holds nothing; one that cannot be read, and a file whose name is not UTF-8,
    /// are left out and reported in `skipped`.
    fn scan(
        &self,
        sub: &str,
        category: PromptCategory,
        stamped: bool,
        out: &mut Vec<(SourceFile, Option<FileStamp>)>,
        skipped: &mut Vec<Skipped>,
    ) -> Result<(), SourceError> {
        let dir = if sub.is_empty() {
            self.root.clone()
        } else {
            self.root.join(sub)
        };
        let Some(entries) = read_folder(&dir, sub.is_empty(), !sub.is_empty(), skipped)? else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_prompt = Dialect::promptd_folder_accepts(&entry.file_name().to_string_lossy());
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !is_prompt || hidden {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let Some(stamp) = listed_file(&entry, kind, stamped) else {
                continue;
            };
            let Some(file) = entry.file_name().to_str().map(str::to_string) else {
                skipped.push(Skipped {
                    path: escaped(&path),
                    reason: "name is not UTF-8".into(),
                });
                continue;
            };
            let rel_path = if sub.is_empty() {
                file
            } else {
                format!("{sub}/{file}")
            };
            out.push((
                SourceFile {
                    display_path: path.display().to_string(),
                    rel_path,
                    category,
                },
                stamp,
            ));
        }
        Ok(())
    }
}

impl PromptSource for DirSource {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn dir(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn list(&self) -> Result<Vec<SourceFile>, SourceError> {
        Ok(self.list_reported()?.0)
    }

    fn list_reported(&self) -> Result<(Vec<SourceFile>, Vec<Skipped>), SourceError> {
        let (files, skipped) = self.listing(false)?;
        Ok((files.into_iter().map(|(file, _)| file).collect(), skipped))
    }

    fn list_stamped(&self) -> Result<Vec<(SourceFile, Option<FileStamp>)>, SourceError> {
        Ok(self.listing(true)?.0)
    }

    fn read(&self, rel_path: &str, max_bytes: u64) -> Result<Option<String>, SourceError> {
        check_relative(rel_path, &self.describe())?;
        let path = self.root.join(rel_path);
        // Symlinks inside the root could still point outside it.
        if let Ok(real) = std::fs::canonicalize(&path)
            && !real.starts_with(&self.root)
        {
            return Err(SourceError::Escapes {
                name: rel_path.to_string(),
                root: self.describe(),
            });
        }
        match promptd_base::limits::read_text_capped(
            &path,
            max_bytes,
            promptd_base::limits::MAX_PROMPT_FILE_BYTES,
        ) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn stamp(&self, rel_path: &str) -> Option<FileStamp> {
        FileStamp::of_path(&self.root.join(rel_path))
    }

    fn display_path(&self, rel_path: &str) -> String {
        self.root.join(rel_path).display().to_string()
    }

    fn file_at(&self, path: &str) -> Option<SourceFile> {
        let rel = Path::new(path).strip_prefix(&self.root).ok()?;
        let mut parts = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(part) => parts.push(part.to_str()?),
                _ => return None,
            }
        }
        let category = listed_category(self.dialect, &parts)?;
        Some(SourceFile {
            rel_path: parts.join("/"),
            display_path: self.display_path(&parts.join("/")),
            category,
        })
    }

    fn dialect(&self) -> Option<Dialect> {
        self.dialect
    }
}

/// Whether a folder of `dialect` (`None`: a promptd folder) lists the file at the root-relative
/// path `parts` (its folders, then its name), and as which category; `None` for a file its
/// listing leaves out (hidden, another extension, an include file, below `system/`). The one
/// rule of what a folder lists, whatever holds the folder (a disk, a git tree).
pub fn listed_category(dialect: Option<Dialect>, parts: &[&str]) -> Option<PromptCategory> {
    let (&name, folders) = parts.split_last()?;
    if parts.iter().any(|p| p.starts_with('.')) {
        return None;
    }
    match dialect {
        Some(d) if d.nested() => d.accepts(name).then_some(PromptCategory::User),
        _ => {
            if !Dialect::promptd_folder_accepts(name) {
                return None;
            }
            match folders {
                ["system"] => Some(PromptCategory::System),
                [first, ..] if *first == "system" => None,
                _ if parts.iter().any(|p| is_include_name(p)) => None,
                _ => Some(PromptCategory::User),
            }
        }
    }
}

/// The built-in system prompts only (the stages' templates), for a server that leaves the
/// built-in user prompts out.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinSystemSource;

impl PromptSource for BuiltinSystemSource {
    fn describe(&self) -> String {
        BuiltinSource.describe()
    }

    fn dir(&self) -> Option<&Path> {
        None
    }

    fn list(&self) -> Result<Vec<SourceFile>, SourceError> {
        let mut all = BuiltinSource.list()?;
        all.retain(|f| f.category == PromptCategory::System);
        Ok(all)
    }

    fn read(&self, rel_path: &str, max_bytes: u64) -> Result<Option<String>, SourceError> {
        BuiltinSource.read(rel_path, max_bytes)
    }

    fn display_path(&self, rel_path: &str) -> String {
        BuiltinSource.display_path(rel_path)
    }
}

/// The built-in prompts compiled into the binary.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinSource;

impl PromptSource for BuiltinSource {
    fn describe(&self) -> String {
        "builtin".into()
    }

    fn dir(&self) -> Option<&Path> {
        None
    }

    fn list(&self) -> Result<Vec<SourceFile>, SourceError> {
        let mut out = Vec::new();
        for (dir, category) in [
            (Some(&BUILTIN), PromptCategory::User),
            (BUILTIN.get_dir("system"), PromptCategory::System),
        ] {
            for f in dir.into_iter().flat_map(|d| d.files()) {
                let rel = f.path().to_string_lossy().replace('\\', "/");
                if rel.ends_with(".md") {
                    out.push(SourceFile {
                        display_path: self.display_path(&rel),
                        rel_path: rel,
                        category,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        Ok(out)
    }

    fn read(&self, rel_path: &str, _max_bytes: u64) -> Result<Option<String>, SourceError> {
        check_relative(rel_path, "builtin")?;
        Ok(BUILTIN
            .get_file(rel_path)
            .and_then(|f| f.contents_utf8())
            .map(str::to_string))
    }

    fn display_path(&self, rel_path: &str) -> String {
        format!("builtin:prompts/{rel_path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_file_whose_name_is_not_utf8_is_skipped_and_named_with_its_bytes_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ok.md"), "ok\n").unwrap();
        let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9.md"));
        std::fs::write(&odd, "odd\n").unwrap();
        let (files, skipped) = DirSource::new(dir.path()).list_reported().unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(names, ["ok.md"]);
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert!(skipped[0].path.ends_with("/caf\\xe9.md"), "{skipped:?}");
        assert_eq!(skipped[0].reason, "name is not UTF-8");
    }

    #[test]
    fn relative_checks() {
        assert!(check_relative("a/b.md", "r").is_ok());
        assert!(check_relative("../b.md", "r").is_err());
        assert!(check_relative("/etc/passwd", "r").is_err());
        assert!(check_relative("a/../../b", "r").is_err());
    }
}
