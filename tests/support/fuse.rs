//! A real FUSE file system: a folder mounted elsewhere with `bindfs` (Debian's package). Files
//! written to the source folder appear under the mount, and the kernel sends no file event for
//! them there: what a share looks like to a machine when another machine writes to it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `source` mounted at `mount` until dropped.
pub struct BindMount {
    pub source: PathBuf,
    pub mount: PathBuf,
}

impl BindMount {
    /// Mounts `source` at `mount` (an empty folder).
    pub fn new(source: &Path, mount: &Path) -> BindMount {
        let bindfs = which_bindfs();
        let status = Command::new(&bindfs)
            .arg(source)
            .arg(mount)
            .status()
            .unwrap_or_else(|e| panic!("{}: {e}", bindfs.display()));
        assert!(
            status.success(),
            "bindfs {} {}: {status} (FUSE needs /dev/fuse and the right to mount)",
            source.display(),
            mount.display()
        );
        BindMount {
            source: source.to_path_buf(),
            mount: mount.to_path_buf(),
        }
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        for unmount in ["fusermount3", "fusermount"] {
            let done = Command::new(unmount)
                .arg("-u")
                .arg(&self.mount)
                .status()
                .is_ok_and(|s| s.success());
            if done {
                return;
            }
        }
    }
}

fn which_bindfs() -> PathBuf {
    if let Some(p) = std::env::var_os("PROMPTD_BINDFS") {
        return p.into();
    }
    ["/usr/bin/bindfs", "/usr/local/bin/bindfs"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect(
            "bindfs missing: run scripts/setup (installs Debian's bindfs) or set PROMPTD_BINDFS",
        )
}
