//! What a folder's file system is, as far as watching it goes: whether file events show every
//! change made to it. A network share (NFS, SMB, CephFS, 9p, …) shows only the changes made
//! through this machine's kernel, a FUSE file system only those made through its mount; the
//! prompt library's watcher polls such folders, and the retriever walks them. Also the
//! project-local folders promptd writes its own files in, which keep themselves out of git.

use std::fmt;
use std::path::Path;

/// A folder on a file system whose file events miss changes made elsewhere; its `Display` is
/// the sentence both the watcher and the retriever log, which they follow with what they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteFolder<'a> {
    pub dir: &'a Path,
    /// The file system's name: "NFS", "a FUSE file system", …
    pub file_system: &'static str,
}

impl fmt::Display for RemoteFolder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is on {}, whose file events miss changes made elsewhere",
            self.dir.display(),
            self.file_system
        )
    }
}

/// `dir`, when the file system it is on is one whose file events miss changes made elsewhere
/// (another machine's writes to a network share, a FUSE daemon's own changes, the host's
/// changes to a 9p share). `None` for local file systems and where it cannot be told.
pub fn remote_folder(dir: &Path) -> Option<RemoteFolder<'_>> {
    #[cfg(target_os = "linux")]
    {
        let kind = rustix::fs::statfs(dir).ok()?.f_type;
        // The magic numbers are 32-bit (`linux/magic.h`); `f_type` is as wide as a C long.
        let file_system = remote_magic(kind as u32)?;
        Some(RemoteFolder { dir, file_system })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// The name of a network or FUSE file system by its `statfs` magic number.
fn remote_magic(magic: u32) -> Option<&'static str> {
    Some(match magic {
        0x6969 => "NFS",
        0xFF53_4D42 => "CIFS",
        0xFE53_4D42 => "SMB2",
        0x517B => "SMB",
        0x6573_5546 => "a FUSE file system",
        0x00C3_6400 => "CephFS",
        0x0102_1997 => "9p",
        0x5346_414F | 0x6B41_4653 => "AFS",
        0x0116_1970 => "GFS2",
        0x0BD0_0BD0 => "Lustre",
        0x7461_636F => "OCFS2",
        0x4750_4653 => "GPFS",
        0x7375_7245 => "Coda",
        0x564C => "NCP",
        _ => return None,
    })
}

/// Creates `dir` (and its parents) as a folder of promptd's own inside a project: its
/// `.gitignore` holds `gitignore` (written when missing), so git never sees what is put in it.
pub fn create_ignored_dir(dir: &Path, gitignore: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, gitignore)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_and_fuse_file_systems_are_told_by_their_magic_numbers() {
        assert_eq!(remote_magic(0x6969), Some("NFS"));
        assert_eq!(remote_magic(0xFF53_4D42), Some("CIFS"));
        assert_eq!(remote_magic(0x6573_5546), Some("a FUSE file system"));
        assert_eq!(remote_magic(0x0102_1997), Some("9p"));
        // ext4, tmpfs, btrfs, xfs, overlayfs.
        for local in [0xEF53, 0x0102_1994, 0x9123_683E, 0x5846_5342, 0x794C_7630] {
            assert_eq!(remote_magic(local), None, "{local:#x}");
        }
        // On Linux, statfs is asked; a temporary folder is on a local file system.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(remote_folder(dir.path()), None);
        let nfs = RemoteFolder {
            dir: Path::new("/mnt/prompts"),
            file_system: "NFS",
        };
        assert_eq!(
            nfs.to_string(),
            "/mnt/prompts is on NFS, whose file events miss changes made elsewhere"
        );
    }
}
