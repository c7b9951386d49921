//! The studio's fixture project, `tests/fixtures/studio/project/`: a prompt with every kind of
//! argument, a config value and a computed date (`review`), roles (`dialogue`), markup
//! everywhere a page could print it (`hostile`), a Claude command, a system prompt, and test
//! cases of `review`. Tests edit it, so each gets its own copy.
//!
//! The playground project, `tests/fixtures/studio/playground/`: a config value and an argument
//! that print the same word, two computed dates that print the same day (`report`), and a prompt
//! whose frontmatter names its model (`ask`).

use std::path::{Path, PathBuf};

/// The fixture project.
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/studio/project")
}

/// The fixture's `prompts/review.md`.
pub fn review() -> String {
    std::fs::read_to_string(fixture().join("prompts/review.md")).expect("review fixture")
}

/// Copies the playground project into `dir`.
pub fn write_playground(dir: &Path) {
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/studio/playground"),
        dir,
    );
}

/// Copies the fixture project into `dir`.
pub fn write_project(dir: &Path) {
    copy_tree(&fixture(), dir);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Changes the accepted snapshot of `review@go_strict` so that its case fails with a diff.
pub fn stale_snapshot(dir: &Path) {
    let p = dir.join("tests/prompts/snapshots/review@go_strict.snap");
    let text = std::fs::read_to_string(&p).expect("accepted snapshot");
    std::fs::write(&p, text.replace("Be strict.", "Be gentle.")).unwrap();
}
