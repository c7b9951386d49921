//! Checks that the built-in scan is linear in input size: scans 1, 2, 4, ... 64 MB of mixed text
//! (source code, configuration with credential keys, prose, base64 blobs, one long line, non-ASCII
//! text and a few fake secrets built here from pieces), prints seconds and seconds per MB for each
//! size, and exits with status 1 when the slowest size's seconds per MB exceed the fastest's by
//! more than `--max-ratio` (1.5 by default). Used by `scripts/eval-guard`; run it in release.
//!
//! Usage: `scan_linearity [--max-mb N] [--max-ratio R]`

use std::time::Instant;

use promptd_guard::{Guard, ScanInput};

/// One block of mixed text, about 24 KB, varied by `n` so that no two blocks are the same.
fn block(n: usize) -> String {
    // Fake secrets, assembled so that none is written whole in the source.
    let github = [
        "gh",
        "p_",
        "Zq3Lr2Tv8Kp4Wz",
        "Ny6Hd3JqXb5",
        &format!("{:011}", n),
    ]
    .concat();
    let password = ["Qz7", "Lr2Tv8", &format!("{n:06}")].concat();
    let mut s = String::with_capacity(24 * 1024);
    for i in 0..40 {
        s.push_str(&format!(
            "pub fn handler_{n}_{i}(req: &Request, token: &str) -> Result<Response, Error> {{\n    \
             let key = cache.get(&req.id).ok_or(Error::Missing)?;\n    \
             tracing::debug!(len = token.len(), \"authorised {i}\");\n    \
             Ok(Response::new(format!(\"{{key}}-{{}}\", req.id)))\n}}\n"
        ));
        s.push_str(&format!(
            "  - name: SERVICE_{i}_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: app-{n}\n        key: password\n"
        ));
        s.push_str("Le service répond en moins de 20 ms ; the password is rotated nightly — voir la doc.\n");
    }
    // A base64 blob (an embedded image) and one long line of key=value pairs.
    let blob: String = (0..2048u32)
        .map(|i| {
            let x = (i.wrapping_mul(2_654_435_761).wrapping_add(n as u32)) >> 26;
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[x as usize] as char
        })
        .collect();
    s.push_str(&format!("icon: data:image/png;base64,{blob}\n"));
    for i in 0..200 {
        s.push_str(&format!("opt_{i}=value_{n}_{i}&"));
    }
    s.push('\n');
    s.push_str(&format!("export GITHUB_TOKEN={github}\n"));
    s.push_str(&format!(
        "DATABASE_URL=postgres://app:{password}@db-{n}.internal:5432/app\n"
    ));
    s
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut max_mb = 64usize;
    let mut max_ratio = 1.5f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--max-mb" => max_mb = value.parse()?,
            "--max-ratio" => max_ratio = value.parse()?,
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    let guard = Guard::builtin()?;
    // One untimed scan first, so that the regex engines' caches are warm for every size alike.
    let warm = block(usize::MAX / 2);
    guard.scan(&[ScanInput::new("warm-up", warm.as_str())])?;
    let mut text = String::new();
    let mut n = 0;
    let mut rows = Vec::new();
    let mut mb = 1usize;
    println!(
        "{:>6} {:>10} {:>10} {:>10}",
        "MB", "seconds", "s / MB", "findings"
    );
    while mb <= max_mb {
        while text.len() < mb * 1_000_000 {
            text.push_str(&block(n));
            n += 1;
        }
        let input = ScanInput::new("mixed", text.as_str());
        let start = Instant::now();
        let report = guard.scan(std::slice::from_ref(&input))?;
        let secs = start.elapsed().as_secs_f64();
        let size = text.len() as f64 / 1e6;
        println!(
            "{size:>6.1} {secs:>10.3} {:>10.4} {:>10}",
            secs / size,
            report.findings.len()
        );
        rows.push(secs / size);
        mb *= 2;
    }
    let fastest = rows.iter().copied().fold(f64::INFINITY, f64::min);
    let slowest = rows.iter().copied().fold(0.0, f64::max);
    let ratio = slowest / fastest;
    println!("slowest / fastest seconds per MB: {ratio:.2} (limit {max_ratio})");
    if ratio > max_ratio {
        eprintln!("scan_linearity: time per MB is not flat ({ratio:.2} > {max_ratio})");
        std::process::exit(1);
    }
    Ok(())
}
