//! The studio's address kept across restarts, so a page left open reconnects to the next start
//! on the same project: `<project>/.promptd/studio/address.json` holds the port and the token
//! promptd made (never a token the author passed). The folder ignores itself for git (its
//! `.gitignore` holds `*`) and the file is readable by its owner only.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The folder, relative to the project, that holds the remembered address.
pub const ADDRESS_DIR: &str = ".promptd/studio";

/// What one start of the studio leaves for the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    pub port: u16,
    /// The token promptd generated; `None` when the author passed one or chose none.
    pub token: Option<String>,
}

/// The remembered address of one project.
#[derive(Debug, Clone)]
pub struct AddressStore {
    dir: PathBuf,
}

impl AddressStore {
    pub fn for_project(root: &Path) -> Self {
        Self {
            dir: root.join(ADDRESS_DIR),
        }
    }

    pub fn file(&self) -> PathBuf {
        self.dir.join("address.json")
    }

    /// The last start's address; a missing file is `None`, an unreadable or invalid one too
    /// (with a warning naming it), so the studio starts on a new address.
    pub fn load(&self) -> Option<Remembered> {
        let file = self.file();
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!("{}: {e}; the studio picks a new port", file.display());
                return None;
            }
        };
        match serde_json::from_str(&text) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("{}: {e}; the studio picks a new port", file.display());
                None
            }
        }
    }

    /// Writes `remembered`; the first write also writes the folder's `.gitignore`.
    pub fn save(&self, remembered: &Remembered) -> io::Result<()> {
        promptd_base::filesystem::create_ignored_dir(&self.dir, "*\n")?;
        let file = self.file();
        let tmp = self.dir.join("address.json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(&tmp)?;
        io::Write::write_all(
            &mut f,
            serde_json::to_string_pretty(remembered)
                .map_err(io::Error::other)?
                .as_bytes(),
        )?;
        drop(f);
        std::fs::rename(&tmp, &file)
    }
}

/// The address to listen on at `ip`: the remembered port while it is free, else a free port
/// the system picks.
pub fn choose(ip: IpAddr, remembered: Option<u16>) -> io::Result<SocketAddr> {
    if let Some(port) = remembered.filter(|p| *p != 0)
        && TcpListener::bind((ip, port)).is_ok()
    {
        return Ok(SocketAddr::new(ip, port));
    }
    let free = TcpListener::bind((ip, 0))?.local_addr()?;
    Ok(free)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_address_loads_back_and_a_busy_port_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = AddressStore::for_project(dir.path());
        assert_eq!(store.load(), None);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let first = choose(ip, None).unwrap();
        let r = Remembered {
            port: first.port(),
            token: Some("t".into()),
        };
        store.save(&r).unwrap();
        assert_eq!(store.load(), Some(r));
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".promptd/studio/.gitignore")).unwrap(),
            "*\n"
        );
        assert_eq!(choose(ip, Some(first.port())).unwrap(), first);
        let busy = TcpListener::bind((ip, 0)).unwrap();
        let taken = busy.local_addr().unwrap().port();
        assert_ne!(choose(ip, Some(taken)).unwrap().port(), taken);
        std::fs::write(store.file(), "{").unwrap();
        assert_eq!(store.load(), None);
    }
}
