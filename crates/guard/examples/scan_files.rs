//! Scans files with the built-in rules as `promptd scan --json` does (one batch, each file's
//! path as its label and its path), and prints the report as JSON: `{"findings": [...]}`.
//! Used by `scripts/eval-guard`, which rebuilds this crate alone rather than all of promptd.
//!
//! Usage: `scan_files FILE...` (paths as given are the labels).

use promptd_guard::{Guard, ScanInput};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let guard = Guard::builtin()?;
    let mut inputs = Vec::new();
    for file in std::env::args().skip(1) {
        let bytes = std::fs::read(&file)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        inputs.push(ScanInput::new(file.clone(), text).with_path(file));
    }
    let report = guard.scan(&inputs)?;
    let out = serde_json::json!({ "findings": report.findings });
    println!("{out}");
    Ok(())
}
