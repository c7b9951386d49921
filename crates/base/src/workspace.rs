//! The workspace: the one folder a request may read from, and the one check that a path lies
//! inside it.
//!
//! [`Workspace::open`] turns a requested directory into a canonical root (symlinks followed) and
//! refuses what must never be a workspace: the filesystem root, the folder of home directories,
//! a home directory itself, the hidden folders directly in a home directory (`~/.ssh`,
//! `~/.gnupg`, `~/.aws`, `~/.config`, … and everything below them), the shared temp folder, and
//! system folders (`/etc`, `/proc`, `/sys`, `/dev`, `/usr`, `/bin`, `/var`, … and everything
//! below them), unless the folder lies inside one the owner listed in the config
//! (`workspace.allowedFolders`).
//!
//! For a caller that is not trusted (an MCP client) the policy also names the folders it may use
//! at all: the server's own directory, the configured folders, and the roots the client
//! declared when they are honoured ([`ClientOrigin`]): a stdio client's always (it is the
//! process that started the server), an HTTP client's only when its request authenticated with
//! the server's token and the root lies inside a folder of `workspace.httpRoots` or
//! `workspace.allowedFolders`. A root that could not be a workspace itself admits nothing.
//!
//! A workspace is also where retrieval writes its index (`<workspace>/.rag/`), so these are the
//! only folders the server writes an index into: the CLI user's, a stdio client's roots, the
//! server's own directory and the configured folders; never a folder an HTTP client merely
//! declares.
//!
//! [`Workspace::resolve_inside`] resolves a path against the root and refuses one that leaves
//! it, through `..` or a symlink; [`Workspace::file`] also requires a file there.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// Config section key.
pub const SECTION: &str = "workspace";

/// Folders below which nothing is a workspace unless configured.
const SYSTEM_FOLDERS: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run",
    "/sbin", "/sys", "/usr", "/var",
];

/// Folders that are never a workspace themselves unless configured (their subfolders may be).
const SHARED_FOLDERS: &[&str] = &["/home", "/Users", "/tmp", "/mnt", "/media"];

/// The `workspace` config section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct WorkspaceSettings {
    /// Folders a workspace may lie in whatever the caller declares, refusals included (relative
    /// paths are relative to the config file's folder).
    pub allowed_folders: Vec<PathBuf>,
    /// Folders inside which an HTTP client's declared roots are honoured, when its request
    /// authenticated with the server's token (relative paths as for `allowed_folders`). The
    /// refusals still apply to the roots.
    pub http_roots: Vec<PathBuf>,
}

impl WorkspaceSettings {
    /// The section of a project config.
    pub fn from_config(config: &crate::config::ProjectConfig) -> Result<WorkspaceSettings, String> {
        let mut settings: WorkspaceSettings = config.section_as(SECTION)?;
        if let Some(base) = config.path.as_deref().and_then(Path::parent) {
            for folder in settings
                .allowed_folders
                .iter_mut()
                .chain(settings.http_roots.iter_mut())
            {
                if folder.is_relative() {
                    *folder = base.join(&*folder);
                }
            }
        }
        Ok(settings)
    }
}

/// How an MCP client reached the server, which decides what its declared roots are worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientOrigin {
    /// Over stdio: the client is the process that started the server; its roots are honoured.
    Stdio,
    /// Over HTTP: any process that can reach the address (on loopback, any local user), or
    /// any holder of the token. Its roots are honoured only when `authenticated` (the request
    /// carried the server's `--auth-token`) and inside `workspace.httpRoots` or
    /// `workspace.allowedFolders`.
    Http { authenticated: bool },
}

/// Who asks for a workspace, and which folders it may use.
#[derive(Debug, Clone, Default)]
pub struct WorkspacePolicy {
    /// Configured folders (canonical): inside them nothing is refused.
    allowed: Vec<PathBuf>,
    /// `None`: a trusted caller (the CLI user), any folder that is not refused. `Some`: an
    /// untrusted caller, only folders inside these (canonical, each acceptable as a workspace).
    scopes: Option<Vec<PathBuf>>,
    /// The client's declared roots this policy honours, as declared, in its order.
    roots: Vec<PathBuf>,
    /// Why some or all of the client's declared roots are not honoured.
    ignored_roots: Option<String>,
    /// The client came over HTTP (for the wording of a refusal).
    http: bool,
}

impl WorkspacePolicy {
    /// For a trusted caller: every folder but the refused ones (and those only when configured).
    pub fn trusted(settings: &WorkspaceSettings) -> WorkspacePolicy {
        WorkspacePolicy {
            allowed: canonical_folders("allowedFolders", &settings.allowed_folders),
            ..WorkspacePolicy::default()
        }
    }

    /// For an untrusted caller (an MCP client that declared `roots` and came from `origin`):
    /// only folders inside the roots it honours, the server's own directory or a configured
    /// folder. A root that is itself refused admits nothing.
    pub fn client(
        settings: &WorkspaceSettings,
        roots: &[PathBuf],
        server_dir: Option<&Path>,
        origin: ClientOrigin,
    ) -> WorkspacePolicy {
        let allowed = canonical_folders("allowedFolders", &settings.allowed_folders);
        let (roots, ignored_roots) = honoured_roots(settings, &allowed, roots, origin);
        let scopes = roots
            .iter()
            .map(PathBuf::as_path)
            .chain(server_dir)
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .filter(|p| refusal(p).is_none())
            .collect();
        WorkspacePolicy {
            allowed,
            scopes: Some(scopes),
            roots,
            ignored_roots,
            http: matches!(origin, ClientOrigin::Http { .. }),
        }
    }

    /// The client's declared roots this policy honours, in the client's order (the first is
    /// where a request without a folder works).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Why some or all of the client's declared roots are not honoured: a warning for the
    /// client.
    pub fn ignored_roots(&self) -> Option<&str> {
        self.ignored_roots.as_deref()
    }

    fn configured(&self, path: &Path) -> bool {
        self.allowed.iter().any(|a| path.starts_with(a))
    }
}

/// The roots of a client from `origin` that are honoured, and why the others are not.
fn honoured_roots(
    settings: &WorkspaceSettings,
    allowed: &[PathBuf],
    roots: &[PathBuf],
    origin: ClientOrigin,
) -> (Vec<PathBuf>, Option<String>) {
    let list = |roots: &[&PathBuf]| {
        roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match origin {
        ClientOrigin::Stdio => (roots.to_vec(), None),
        _ if roots.is_empty() => (Vec::new(), None),
        ClientOrigin::Http {
            authenticated: false,
        } => {
            let all: Vec<&PathBuf> = roots.iter().collect();
            let why = format!(
                "the client's roots ({}) are ignored: over HTTP a client's roots are honoured only \
                 when the request authenticates with the server's --auth-token and the root lies \
                 inside a folder of the config's `workspace.httpRoots`; this client may use the \
                 server's directory and the folders of `workspace.allowedFolders`",
                list(&all)
            );
            (Vec::new(), Some(why))
        }
        ClientOrigin::Http {
            authenticated: true,
        } => {
            let mut permitted = canonical_folders("httpRoots", &settings.http_roots);
            permitted.extend_from_slice(allowed);
            let (kept, ignored): (Vec<&PathBuf>, Vec<&PathBuf>) = roots.iter().partition(|r| {
                std::fs::canonicalize(r).is_ok_and(|c| permitted.iter().any(|p| c.starts_with(p)))
            });
            let why = (!ignored.is_empty()).then(|| {
                format!(
                    "the client's roots {} are ignored: over HTTP a root is honoured only inside \
                     a folder of the config's `workspace.httpRoots` or `workspace.allowedFolders`",
                    list(&ignored)
                )
            });
            (kept.into_iter().cloned().collect(), why)
        }
    }
}

/// The canonical forms of the folders of the `workspace.{key}` setting; one that does not
/// exist is left out with a warning in the log.
fn canonical_folders(key: &str, folders: &[PathBuf]) -> Vec<PathBuf> {
    folders
        .iter()
        .filter_map(|f| match std::fs::canonicalize(f) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!("workspace.{key}: {}: {e}; ignored", f.display());
                None
            }
        })
        .collect()
}

/// Why a folder or a path inside it cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path}: {source}")]
    Missing {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error(
        "{path} is {reason}: refused as a workspace (list it in the config's \
         `workspace.allowedFolders` to allow it)"
    )]
    Refused { path: PathBuf, reason: String },
    #[error(
        "{path} is not inside a root the client declared, the server's directory or a folder \
         of the config's `workspace.allowedFolders`"
    )]
    NotAllowed { path: PathBuf },
    #[error(
        "{path} is not inside the server's directory or a folder of the config's \
         `workspace.allowedFolders` (an HTTP client's roots count only when its request \
         authenticates with the server's --auth-token and the root lies inside a folder of \
         `workspace.httpRoots`)"
    )]
    NotAllowedOverHttp { path: PathBuf },
    #[error("{path} resolves to {resolved}, outside the workspace {root}")]
    Outside {
        path: PathBuf,
        resolved: PathBuf,
        root: PathBuf,
    },
    #[error("{0} is not a file")]
    NotAFile(PathBuf),
}

/// Why `path` (canonical) may never be a workspace unless configured.
fn refusal(path: &Path) -> Option<String> {
    if path.parent().is_none() {
        return Some("the filesystem root".into());
    }
    if let Some(system) = SYSTEM_FOLDERS.iter().find(|s| path.starts_with(s)) {
        return Some(format!("a system folder ({system})"));
    }
    let home = std::env::home_dir().and_then(|h| std::fs::canonicalize(h).ok());
    let is_home = |p: &Path| {
        home.as_deref() == Some(p)
            || p == Path::new("/root")
            || p.parent()
                .is_some_and(|p| p == Path::new("/home") || p == Path::new("/Users"))
    };
    if is_home(path) {
        return Some("a home directory".into());
    }
    // `path` or a folder above it is a hidden folder directly in a home directory.
    if let Some(hidden) = path.ancestors().find(|a| {
        a.file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
            && a.parent().is_some_and(is_home)
    }) {
        return Some(if hidden == path {
            "a hidden folder of a home directory".into()
        } else {
            format!(
                "inside {}, a hidden folder of a home directory",
                hidden.display()
            )
        });
    }
    SHARED_FOLDERS
        .iter()
        .any(|s| path == Path::new(s))
        .then(|| "a shared folder".into())
}

/// A checked workspace: a canonical directory the caller may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Checks `dir` against `policy`: it must exist and be a directory (symlinks followed), not
    /// be refused, and for an untrusted caller lie inside one of its scopes.
    pub fn open(dir: &Path, policy: &WorkspacePolicy) -> Result<Workspace, WorkspaceError> {
        let root = std::fs::canonicalize(dir).map_err(|source| WorkspaceError::Missing {
            path: dir.to_path_buf(),
            source,
        })?;
        if !root.is_dir() {
            return Err(WorkspaceError::NotADirectory(dir.to_path_buf()));
        }
        if !policy.configured(&root) {
            if let Some(reason) = refusal(&root) {
                return Err(WorkspaceError::Refused { path: root, reason });
            }
            if let Some(scopes) = &policy.scopes
                && !scopes.iter().any(|s| root.starts_with(s))
            {
                return Err(if policy.http {
                    WorkspaceError::NotAllowedOverHttp { path: root }
                } else {
                    WorkspaceError::NotAllowed { path: root }
                });
            }
        }
        Ok(Workspace { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (absolute, or relative to the root) with symlinks followed; it must exist
    /// and stay inside the root. Returns the canonical path and the root-relative one,
    /// `/`-separated (empty for the root itself).
    pub fn resolve_inside(&self, path: &Path) -> Result<(PathBuf, String), WorkspaceError> {
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let resolved =
            std::fs::canonicalize(&joined).map_err(|source| WorkspaceError::Missing {
                path: path.to_path_buf(),
                source,
            })?;
        let Ok(rel) = resolved.strip_prefix(&self.root) else {
            return Err(WorkspaceError::Outside {
                path: path.to_path_buf(),
                resolved,
                root: self.root.clone(),
            });
        };
        let rel = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part.to_string_lossy()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/");
        Ok((resolved, rel))
    }

    /// Like [`resolve_inside`](Self::resolve_inside), for a path that must name a file (a
    /// regular file, symlinks followed): the one check of a request's file inside its workspace.
    pub fn file(&self, path: &Path) -> Result<(PathBuf, String), WorkspaceError> {
        let (resolved, rel) = self.resolve_inside(path)?;
        if !resolved.is_file() {
            return Err(WorkspaceError::NotAFile(path.to_path_buf()));
        }
        Ok((resolved, rel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted() -> WorkspacePolicy {
        WorkspacePolicy::trusted(&WorkspaceSettings::default())
    }

    #[test]
    fn refuses_root_home_and_system_folders_unless_configured() {
        for dir in ["/", "/etc", "/proc", "/usr/lib", "/var", "/dev", "/tmp"] {
            let e = Workspace::open(Path::new(dir), &trusted()).unwrap_err();
            assert!(matches!(e, WorkspaceError::Refused { .. }), "{dir}: {e}");
            assert!(e.to_string().contains("workspace.allowedFolders"), "{e}");
        }
        if let Some(home) = std::env::home_dir().filter(|h| h.is_dir()) {
            let e = Workspace::open(&home, &trusted()).unwrap_err();
            assert!(e.to_string().contains("home directory"), "{e}");
        }
        let settings = WorkspaceSettings {
            allowed_folders: vec!["/etc".into()],
            ..WorkspaceSettings::default()
        };
        let ws = Workspace::open(Path::new("/etc"), &WorkspacePolicy::trusted(&settings)).unwrap();
        assert_eq!(ws.root(), Path::new("/etc"));
    }

    #[test]
    fn an_untrusted_caller_stays_inside_its_scopes() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        let other = base.path().join("other");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let settings = WorkspaceSettings::default();
        let policy = WorkspacePolicy::client(
            &settings,
            std::slice::from_ref(&root),
            None,
            ClientOrigin::Stdio,
        );
        Workspace::open(&root.join("sub"), &policy).unwrap();
        let e = Workspace::open(&other, &policy).unwrap_err();
        assert!(matches!(e, WorkspaceError::NotAllowed { .. }), "{e}");
        // A root that is refused itself admits nothing below it.
        let policy = WorkspacePolicy::client(&settings, &["/".into()], None, ClientOrigin::Stdio);
        let e = Workspace::open(&root, &policy).unwrap_err();
        assert!(matches!(e, WorkspaceError::NotAllowed { .. }), "{e}");
        // The server's directory counts as a scope.
        let policy = WorkspacePolicy::client(&settings, &[], Some(&other), ClientOrigin::Stdio);
        Workspace::open(&other, &policy).unwrap();
    }

    #[test]
    fn an_http_clients_roots_count_only_authenticated_and_configured() {
        let base = tempfile::tempdir().unwrap();
        let (server, root, permitted) = (
            base.path().join("server"),
            base.path().join("root"),
            base.path().join("permitted"),
        );
        for d in [&server, &root, &permitted.join("proj")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let roots = [root.clone(), permitted.join("proj")];
        let unauthenticated = ClientOrigin::Http {
            authenticated: false,
        };
        let authenticated = ClientOrigin::Http {
            authenticated: true,
        };
        let settings = WorkspaceSettings {
            http_roots: vec![permitted.clone()],
            ..WorkspaceSettings::default()
        };
        // Without the token no root counts, configured or not: the server's directory does.
        let policy = WorkspacePolicy::client(&settings, &roots, Some(&server), unauthenticated);
        assert!(policy.roots().is_empty());
        assert!(policy.ignored_roots().unwrap().contains("--auth-token"));
        for dir in [&root, &permitted.join("proj")] {
            let e = Workspace::open(dir, &policy).unwrap_err();
            assert!(
                matches!(e, WorkspaceError::NotAllowedOverHttp { .. }),
                "{e}"
            );
            assert!(e.to_string().contains("workspace.httpRoots"), "{e}");
        }
        Workspace::open(&server, &policy).unwrap();
        // With the token, the roots inside `httpRoots` count; the others are named as ignored.
        let policy = WorkspacePolicy::client(&settings, &roots, Some(&server), authenticated);
        assert_eq!(policy.roots(), &[permitted.join("proj")]);
        let why = policy.ignored_roots().unwrap();
        assert!(why.contains(&root.display().to_string()), "{why}");
        Workspace::open(&permitted.join("proj"), &policy).unwrap();
        assert!(Workspace::open(&root, &policy).is_err());
        // With the token but nothing configured, no root counts.
        let policy =
            WorkspacePolicy::client(&WorkspaceSettings::default(), &roots, None, authenticated);
        assert!(policy.roots().is_empty() && policy.ignored_roots().is_some());
        // Over stdio every root counts, as declared.
        let policy = WorkspacePolicy::client(&settings, &roots, None, ClientOrigin::Stdio);
        assert_eq!(policy.roots(), &roots);
        assert!(policy.ignored_roots().is_none());
        Workspace::open(&root, &policy).unwrap();
    }

    #[test]
    fn hidden_folders_of_home_directories_are_refused_unless_configured() {
        for dir in [
            "/root/.ssh",
            "/root/.config/promptd",
            "/home/alice/.gnupg/x",
        ] {
            let reason = refusal(Path::new(dir)).unwrap_or_default();
            assert!(
                reason.contains("hidden folder of a home directory"),
                "{dir}: {reason}"
            );
        }
        for dir in ["/home/alice/proj/.github", "/root/proj", "/srv/.hidden"] {
            assert_eq!(refusal(Path::new(dir)), None, "{dir}");
        }
        if let Some(home) = std::env::home_dir().and_then(|h| std::fs::canonicalize(h).ok()) {
            let reason = refusal(&home.join(".aws/creds")).unwrap_or_default();
            assert!(reason.contains(".aws, a hidden folder"), "{reason}");
        }
    }

    #[test]
    fn resolve_inside_follows_symlinks_and_refuses_escapes() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}").unwrap();
        std::fs::write(base.path().join("secret.md"), "outside").unwrap();
        std::os::unix::fs::symlink(base.path().join("secret.md"), root.join("link.md")).unwrap();
        let ws = Workspace::open(&root, &trusted()).unwrap();
        let (abs, rel) = ws.resolve_inside(Path::new("src/../src/a.rs")).unwrap();
        assert_eq!(rel, "src/a.rs");
        assert!(abs.is_absolute());
        for escape in ["../secret.md", "link.md", "/etc/hostname"] {
            let e = ws.resolve_inside(Path::new(escape)).unwrap_err();
            assert!(
                matches!(
                    e,
                    WorkspaceError::Outside { .. } | WorkspaceError::Missing { .. }
                ),
                "{escape}: {e}"
            );
        }
        assert!(matches!(
            ws.resolve_inside(Path::new("link.md")).unwrap_err(),
            WorkspaceError::Outside { .. }
        ));
        let (abs, rel) = ws.file(Path::new("src/a.rs")).unwrap();
        assert_eq!((abs.is_absolute(), rel.as_str()), (true, "src/a.rs"));
        for not_a_file in ["src", "."] {
            let e = ws.file(Path::new(not_a_file)).unwrap_err();
            assert_eq!(e.to_string(), format!("{not_a_file} is not a file"));
        }
        assert!(matches!(
            ws.file(Path::new("link.md")).unwrap_err(),
            WorkspaceError::Outside { .. }
        ));
    }
}
