//! `AGENTS.md` on the current file's path: the nearest one above the current file applies to it;
//! farther ones on the path are listed as superseded. (The root's `AGENTS.md` is a plain
//! always-on file.)

use std::path::PathBuf;

use super::discovery::{Discovery, RuleFormat};

/// Applies the nearest of the `AGENTS.md` files in `dirs` (the folders from the root, exclusive,
/// down to the current file's folder) and logs the farther ones.
pub(super) fn nearest(discovery: &mut Discovery, current: &str, dirs: &[PathBuf]) {
    let agents: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("AGENTS.md"))
        .filter(|f| f.is_file())
        .collect();
    let Some((nearest, farther)) = agents.split_last() else {
        return;
    };
    let format = RuleFormat::AgentsMd;
    let nearest_rel = discovery.rel(nearest);
    for file in farther {
        let path = discovery.rel(file);
        discovery.skip(
            &path,
            format,
            format!("on the path of {current}, but the nearer {nearest_rel} takes precedence"),
        );
    }
    if let Some(text) = discovery.read(nearest, format) {
        discovery.include(
            nearest,
            format,
            false,
            &text,
            format!("nearest AGENTS.md above {current}"),
        );
    }
}
