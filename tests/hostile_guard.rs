//! Hostile input against the secret guard: one huge line full of secrets scans in bounded time
//! and memory (and in time linear in its length), a scan never stalls the async runtime that
//! awaits it, and a private key split across context chunks is caught in every part.

use crate::support;
use crate::support::guard;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use promptd::enhance::{
    ContextChunk, ContextFuture, ContextRetriever, EnhanceStatus, Enhancer, RetrievedContext,
    ValidatedRequest,
};
use promptd::guard::{Guard, ScanInput};
use promptd::library::{LibraryOptions, PromptLibrary};
use promptd::registry::{BuiltinSource, PromptSource};
use promptd::workspace::{Workspace, WorkspacePolicy, WorkspaceSettings};

#[test]
fn a_20_mb_line_of_secrets_scans_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("line.txt");
    std::fs::write(&file, guard::one_line(20 << 20)).unwrap();
    let mut cmd = support::process::promptd();
    cmd.arg("scan").arg(&file);
    let run = support::process::run_bounded(cmd, b"", Duration::from_secs(180));
    eprintln!(
        "promptd scan of a 20 MB line: {:.1} s, peak RSS {:.0} MiB, {} report lines",
        run.elapsed.as_secs_f64(),
        run.peak_rss_mib,
        run.stdout.lines().count()
    );
    assert!(run.exited(), "timed out or killed: {run:?}");
    assert_eq!(run.code(), Some(1), "secrets found: {}", run.stderr);
    assert!(run.stdout.contains("github-pat"), "{}", &run.stdout[..2000]);
    assert!(
        run.elapsed < Duration::from_secs(100),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.peak_rss_mib < 512.0,
        "peak RSS {} MiB",
        run.peak_rss_mib
    );
}

/// Seconds for the fastest of three scans of `text`, and its finding count.
fn best_of_three(guard: &Guard, text: &str) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..3 {
        let started = Instant::now();
        let report = guard.scan(&[ScanInput::new("line", text)]).unwrap();
        best = best.min(started.elapsed().as_secs_f64());
        n = report.findings.len();
    }
    (best, n)
}

#[test]
fn scan_time_grows_linearly_with_line_length_and_findings() {
    let guard = Guard::builtin().unwrap();
    let small = guard::one_line(1 << 20);
    let large = guard::one_line(4 << 20);
    let (t1, n1) = best_of_three(&guard, &small);
    let (t4, n4) = best_of_three(&guard, &large);
    eprintln!("1 MB line: {t1:.3} s, {n1} findings; 4 MB line: {t4:.3} s, {n4} findings");
    assert!(
        n4 >= 3 * n1,
        "findings must grow with the line: {n1} → {n4}"
    );
    // Linear: about 4×. Quadratic (line length × findings) would be 16×.
    assert!(t4 < 9.0 * t1, "4× the input took {:.1}× the time", t4 / t1);
}

/// A retriever that returns fixed chunks.
struct Chunks(Vec<ContextChunk>);

impl ContextRetriever for Chunks {
    fn retrieve(&self, _: Workspace, _: String, _: Option<PathBuf>) -> ContextFuture {
        let formatted = self
            .0
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Box::pin(std::future::ready(Ok(RetrievedContext {
            formatted,
            chunks: self.0.clone(),
            warnings: Vec::new(),
        })))
    }
}

fn enhancer(chunks: Vec<ContextChunk>) -> Enhancer {
    let roots: Vec<Arc<dyn PromptSource>> = vec![Arc::new(BuiltinSource)];
    let options = LibraryOptions {
        cwd: std::env::temp_dir(),
        ..Default::default()
    };
    let library = PromptLibrary::open_with_roots(options, roots).unwrap();
    Enhancer {
        snapshot: library.snapshot(),
        clock: *library.clock(),
        guard: Ok(Arc::new(Guard::builtin().unwrap())),
        retriever: Arc::new(Chunks(chunks)),
        llm: None,
    }
}

/// A workspace in a fresh folder that lives as long as the test process.
fn scratch_workspace() -> Workspace {
    let dir = tempfile::tempdir().unwrap().keep();
    Workspace::open(
        &dir,
        &WorkspacePolicy::trusted(&WorkspaceSettings::default()),
    )
    .unwrap()
}

fn request(prompt: String) -> ValidatedRequest {
    ValidatedRequest {
        prompt,
        repo: scratch_workspace(),
        active_file: None,
        active_file_rel: None,
    }
}

#[test]
fn a_long_scan_runs_off_the_runtime_that_awaits_it() {
    // A current-thread runtime, as `promptd enhance` uses: a scan run inline would starve the
    // ticker until it ends.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicUsize::new(0));
    let prompt = format!("Please review this: {}", guard::one_line(6 << 20));
    let enhancer = enhancer(Vec::new());
    let result = runtime.block_on(async {
        let t = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                t.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        tokio::task::yield_now().await;
        let started = Instant::now();
        let before = ticks.load(Ordering::Relaxed);
        let result = enhancer
            .enhance(&request(prompt), Vec::new())
            .await
            .unwrap();
        let during = ticks.load(Ordering::Relaxed) - before;
        ticker.abort();
        eprintln!(
            "enhance scanned for {:?}; the runtime ticked {during} times meanwhile",
            started.elapsed()
        );
        assert!(during >= 3, "the runtime was blocked: {during} ticks");
        result
    });
    assert_eq!(result.status, EnhanceStatus::Blocked);
    // The runtime still serves afterwards.
    let after = runtime
        .block_on(enhancer.enhance(&request("Add a retry test".into()), Vec::new()))
        .unwrap();
    assert_ne!(after.status, EnhanceStatus::Blocked, "{:?}", after.warnings);
}

#[test]
fn an_async_scan_finds_what_a_scan_finds_inline_or_on_the_blocking_pool() {
    let guard = Arc::new(Guard::builtin().unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Below the inline limit (scanned on the calling task) and above it (the blocking pool).
    for size in [2 << 10, promptd::guard::INLINE_SCAN_BYTES, 256 << 10] {
        let text = guard::one_line(size);
        let inline = guard.scan(&[ScanInput::new("t", text.as_str())]).unwrap();
        let awaited = runtime
            .block_on(guard.scan_async(vec![ScanInput::new("t", text)]))
            .unwrap();
        let spans = |r: &promptd::guard::ScanReport| {
            r.findings
                .iter()
                .map(|f| (f.rule_id.clone(), f.byte_start))
                .collect::<Vec<_>>()
        };
        assert!(!inline.is_clean(), "{size} bytes: nothing found");
        assert_eq!(spans(&inline), spans(&awaited), "{size} bytes");
    }
}

/// A private key cut into the pieces a line-based chunker makes of it.
fn split_key() -> Vec<String> {
    let mut g = guard::Fake::new(0x5B1_17E);
    let body = g.token(&format!("%b{}", 64 * 25 + 12));
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let kind = format!("{}{}", "RSA PRIVATE", " KEY");
    vec![
        format!("# deploy key\n-----BEGIN {kind}-----\n"),
        format!("{}\n", lines[..12].join("\n")),
        format!("{}\n-----END {kind}-----\n", lines[12..].join("\n")),
    ]
}

#[test]
fn every_chunk_of_a_split_private_key_is_a_finding() {
    let guard = Guard::builtin().unwrap();
    for (i, chunk) in split_key().iter().enumerate() {
        let report = guard
            .scan(&[ScanInput::new(format!("chunk{i}"), chunk.as_str())])
            .unwrap();
        assert!(!report.is_clean(), "chunk {i} passed the guard:\n{chunk}");
        let redacted = guard.redact(chunk, &report.findings);
        for line in chunk.lines().filter(|l| l.len() == 64) {
            assert!(
                !redacted.contains(line),
                "chunk {i}: a key line survived redaction"
            );
        }
    }
}

/// The findings' rule ids of one text.
fn rules_of(guard: &Guard, text: &str) -> Vec<String> {
    let report = guard.scan(&[ScanInput::new("t", text)]).unwrap();
    report.findings.iter().map(|f| f.rule_id.clone()).collect()
}

#[test]
fn one_or_two_bare_body_lines_of_a_key_are_a_finding() {
    let guard = Guard::builtin().unwrap();
    let mut g = guard::Fake::new(0x0F4A_93E7);
    for seed in 0..20 {
        let body = g.token(&format!("%b{}", 64 * 2 + 24));
        let (l1, rest) = body.split_at(64);
        let (l2, tail) = rest.split_at(64);
        let kind = format!("{}{}", "PRIVATE", " KEY");
        for chunk in [
            format!("{l1}\n"),
            l1.to_string(),
            format!("{l1}\n{l2}\n"),
            format!("{l1}\n{l2}\n{tail}==\n"),
            format!("    key = read()\n{l1}\n{l2}\n"),
            format!("    key = read()\n{l1}\n{tail}==\n-----END {kind}-----\n"),
            format!("{l1}\n{l2}\n# the rest of the file\n"),
            format!("{l1}\\n{l2}\\n\", "),
        ] {
            assert!(
                !rules_of(&guard, &chunk).is_empty(),
                "seed {seed}: passed the guard:\n{chunk}"
            );
            let report = guard.scan(&[ScanInput::new("t", chunk.as_str())]).unwrap();
            let redacted = guard.redact(&chunk, &report.findings);
            assert!(
                !redacted.contains(l1),
                "seed {seed}: a key line survived: {redacted}"
            );
        }
    }
}

#[test]
fn fragments_of_certificates_and_public_keys_are_not_keys() {
    let guard = Guard::builtin().unwrap();
    let mut g = guard::Fake::new(0xCE27_0001);
    for _ in 0..20 {
        let body = g.token(&format!("%b{}", 64 * 5 + 24));
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let (l1, l2, tail) = (lines[0], lines[1], lines[5]);
        for text in [
            // A chunk cut inside a certificate: its start, its middle, its end.
            format!("-----BEGIN CERTIFICATE-----\n{l1}\n{l2}\n"),
            format!("{l1}\n{l2}\n-----END CERTIFICATE-----\n"),
            format!("{l1}\n{tail}==\n-----END CERTIFICATE-----\n"),
            format!("-----BEGIN PUBLIC KEY-----\n{l1}\n{tail}==\n-----END PUBLIC KEY-----\n"),
            // A long run ending the text: a certificate's body, under its BEGIN line.
            format!("-----BEGIN CERTIFICATE-----\n{}\n", lines[..5].join("\n")),
            // One line of base64 inside code, and digests.
            format!("x = 1\n{l1}\ny = 2\n"),
            "sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n"
                .into(),
        ] {
            let found = rules_of(&guard, &text);
            assert!(found.is_empty(), "flagged {found:?}:\n{text}");
        }
    }
}

#[test]
fn a_retrieved_chunk_with_only_the_end_of_a_key_blocks_enhance() {
    let tail = split_key().pop().unwrap();
    let enhancer = enhancer(vec![ContextChunk {
        path: "deploy/id_rsa".into(),
        start_line: 14,
        text: tail,
    }]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime
        .block_on(enhancer.enhance(&request("Fix the deploy script".into()), Vec::new()))
        .unwrap();
    assert_eq!(
        result.status,
        EnhanceStatus::Blocked,
        "{:?}",
        result.warnings
    );
    assert!(
        result
            .findings
            .iter()
            .any(|f| f.label.starts_with("context:deploy/id_rsa")),
        "{:?}",
        result.findings
    );
}
