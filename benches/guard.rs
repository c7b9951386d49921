//! Secret-guard speed: promptd's in-process scan of 2 KB of code (target < 50 µs) and of 1 MB
//! (target >= 100 MB/s) of repository text, clean and secret-dense, and the same inputs through
//! the real gitleaks binary, one process per call, for comparison (skipped when the binary is
//! absent; install it with scripts/setup-gitleaks). Then one timed scan each of a 5 MB and a
//! 20 MB single line dense with secrets, printed with its finding count: the scan must stay
//! linear in line length times findings.

/// The tests' guard corpus and gitleaks lookup, laid out as in the test binary.
#[path = "../tests/support"]
mod support {
    #[allow(dead_code)]
    pub mod guard;
}

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use promptd::guard::{Guard, GuardOptions, ScanInput};

/// About 2 KB of ordinary application code: keywords such as token, password, key and secret
/// occur (so the generic rules run), but no secret does.
fn code_2k() -> String {
    let unit = r#"use std::collections::HashMap;
use std::time::Duration;

/// Settings read at start-up; secrets come from the environment, never from this file.
pub struct ClientConfig {
    pub base_url: String,
    pub api_key_env: String,
    pub timeout: Duration,
    pub max_tokens: usize,
}

impl ClientConfig {
    pub fn from_env() -> Result<Self, ConfigError> {
        let api_key = std::env::var("ACME_API_KEY").map_err(|_| ConfigError::Missing("ACME_API_KEY"))?;
        let password = std::env::var("DB_PASSWORD").ok();
        tracing::debug!(has_password = password.is_some(), "loaded settings");
        Ok(ClientConfig {
            base_url: "https://api.acme.io/v2".to_string(),
            api_key_env: api_key,
            timeout: Duration::from_secs(30),
            max_tokens: 4096,
        })
    }

    pub fn headers(&self, token: &str) -> HashMap<&'static str, String> {
        let mut h = HashMap::new();
        h.insert("Authorization", format!("Bearer {token}"));
        h.insert("Accept", "application/json".to_string());
        h
    }
}

fn refresh_secret(cache: &mut HashMap<String, String>, key: &str) -> Option<String> {
    // The secret manager rotates values hourly; keep only the id here.
    let id = cache.get(key)?.clone();
    Some(format!("secret-ref:{id}"))
}
"#;
    let mut s = String::new();
    while s.len() < 2048 {
        s.push_str(unit);
    }
    s.truncate(2048);
    s
}

/// About 1 MB of text built by cycling through corpus items (only look-alikes when `clean`, all
/// items otherwise), each followed by the 2 KB code sample. The clean variant is what
/// repository context mostly is; the other has a secret every few KB, a worst case.
fn text_1m(clean: bool) -> String {
    let corpus: Vec<_> = support::guard::corpus()
        .into_iter()
        .filter(|i| !clean || i.expect.is_none())
        .collect();
    let code = code_2k();
    let mut s = String::with_capacity(1 << 20);
    'fill: loop {
        for item in &corpus {
            s.push_str(&item.text);
            s.push('\n');
            s.push_str(&code);
            if s.len() >= 1 << 20 {
                break 'fill;
            }
        }
    }
    s.truncate(s.floor_char_boundary(1 << 20));
    s
}

/// Single timed scans of one huge line (too slow for criterion's repeated samples when the
/// scanner regresses to quadratic).
fn huge_lines(_: &mut Criterion) {
    let guard = Guard::builtin().unwrap();
    for mb in [5, 20] {
        let text = support::guard::one_line(mb << 20);
        let started = std::time::Instant::now();
        let report = guard
            .scan(black_box(&[ScanInput::new("line", text.as_str())]))
            .unwrap();
        let secs = started.elapsed().as_secs_f64();
        println!(
            "guard/promptd one {mb} MB line: {secs:.2} s ({:.1} MB/s), {} findings",
            mb as f64 / secs,
            report.findings.len()
        );
    }
}

fn bench(c: &mut Criterion) {
    let inputs = [
        ("2 KB code", code_2k()),
        ("1 MB repository text", text_1m(true)),
        ("1 MB secret-dense", text_1m(false)),
    ];
    let guard = Guard::builtin().unwrap();
    let mut g = c.benchmark_group("guard/promptd");
    for (name, text) in &inputs {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                guard
                    .scan(black_box(&[ScanInput::new("bench", text.as_str())]))
                    .unwrap()
            })
        });
    }
    g.finish();

    let Some(bin) = support::guard::gitleaks_bin() else {
        eprintln!("gitleaks binary absent: skipping the comparison (run scripts/setup-gitleaks)");
        return;
    };
    // promptd + one gitleaks process per call, as `Guard::scan` runs it.
    let external = Guard::new(GuardOptions {
        gitleaks_bin: Some(bin),
        ..GuardOptions::default()
    })
    .unwrap();
    let mut g = c.benchmark_group("guard/promptd+gitleaks");
    g.sample_size(10);
    for (name, text) in &inputs {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                external
                    .scan(black_box(&[ScanInput::new("bench", text.as_str())]))
                    .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench, huge_lines);
criterion_main!(benches);
