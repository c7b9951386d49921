//! Checks that the built-in scan is linear in input size: scans 1, 2, 4, ... 64 MB of mixed text
//! (source code, configuration with credential keys, prose, base64 blobs, one long line, non-ASCII
//! text and a few fake secrets built here from pieces), then 1 to 16 MB of one line holding a
//! credential every 60 bytes and of short lines that are nearly all credentials, each scanned and
//! explained (`Guard::explain_report`, what `promptd scan --explain` prints). Prints CPU seconds
//! of the scanning thread (not wall time, which on a loaded machine counts the waits for a core)
//! and seconds per MB for each size (the best of `--runs`), and exits with status 1 when, for a
//! shape, the slowest size's seconds per MB exceed the fastest's by more than `--max-ratio` (1.5
//! by default). Used by `scripts/eval-guard`; run it in release. The guard's `linearity` test
//! checks the same shapes at smaller sizes in every `cargo test`.
//!
//! Usage: `scan_linearity [--max-mb N] [--max-ratio R] [--runs N]`

use promptd_guard::{Guard, ScanInput};

#[path = "../tests/mixed_text/mod.rs"]
mod mixed_text;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut max_mb = 64usize;
    let mut max_ratio = 1.5f64;
    let mut runs = 2usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--max-mb" => max_mb = value.parse()?,
            "--max-ratio" => max_ratio = value.parse()?,
            "--runs" => runs = value.parse::<usize>()?.max(1),
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    let guard = Guard::builtin()?;
    // One untimed scan first, so that the regex engines' caches are warm for every size alike.
    let warm = mixed_text::block(usize::MAX / 2);
    guard.scan(&[ScanInput::new("warm-up", warm.as_str())])?;
    type Make = fn(usize) -> String;
    let shapes: [(&str, Make, bool, usize); 3] = [
        (
            "mixed text, scan",
            |b| mixed_text::mixed(b, 0),
            false,
            max_mb,
        ),
        (
            "one long line, scan + explain",
            mixed_text::one_long_line,
            true,
            max_mb.min(16),
        ),
        (
            "many findings, scan + explain",
            mixed_text::many_findings,
            true,
            max_mb.min(16),
        ),
    ];
    let mut failed = false;
    for (name, make, explain, top) in shapes {
        println!("{name}");
        println!(
            "{:>6} {:>10} {:>10} {:>10}",
            "MB", "CPU s", "s / MB", "findings"
        );
        let mut rows = Vec::new();
        let mut mb = 1usize;
        while mb <= top {
            let text = make(mb * 1_000_000);
            let inputs = [ScanInput::new("shape", text.as_str())];
            let mut best = f64::INFINITY;
            let mut found = 0;
            for _ in 0..runs {
                let start = mixed_text::thread_cpu_seconds();
                let report = guard.scan(&inputs)?;
                if explain {
                    std::hint::black_box(guard.explain_report(&inputs, &report));
                }
                best = best.min(mixed_text::thread_cpu_seconds() - start);
                found = report.findings.len();
            }
            let size = text.len() as f64 / 1e6;
            println!("{size:>6.1} {best:>10.3} {:>10.4} {found:>10}", best / size);
            rows.push(best / size);
            mb *= 2;
        }
        let fastest = rows.iter().copied().fold(f64::INFINITY, f64::min);
        let slowest = rows.iter().copied().fold(0.0, f64::max);
        let ratio = slowest / fastest;
        println!("slowest / fastest seconds per MB: {ratio:.2} (limit {max_ratio})");
        if ratio > max_ratio {
            eprintln!("scan_linearity: {name}: time per MB is not flat ({ratio:.2} > {max_ratio})");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
