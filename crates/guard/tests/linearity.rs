//! The scan, and its explanation, take time linear in the input: for each shape of text, the
//! time per byte of an input eight times larger stays within a generous factor of the smaller
//! one's (quadratic work would make it eight times more). Times are the thread's CPU seconds
//! (not wall time, which on a loaded machine counts the waits for a core), the best of several
//! runs, the two sizes taken in turn. `examples/scan_linearity.rs` measures the same shapes from 1 to 64 MB in release.

#[path = "mixed_text/mod.rs"]
mod mixed_text;

use promptd_guard::{Guard, ScanInput};

/// Bytes of the smaller input; the larger is `GROWTH` times as much.
const SMALL: usize = 64 * 1024;
const GROWTH: usize = 8;
const RUNS: usize = 5;
/// Allowed growth of the time per byte from the smaller input to the larger: linear work stays
/// near 1, quadratic work would reach `GROWTH`.
const MAX_RATIO: f64 = 3.0;

fn best_of(guard: &Guard, text: &str, explain: bool, best: &mut f64) {
    let inputs = [ScanInput::new("shape", text)];
    let start = mixed_text::thread_cpu_seconds();
    let report = guard.scan(&inputs).unwrap();
    if explain {
        let why = guard.explain_report(&inputs, &report);
        assert_eq!(why.len(), report.findings.len());
    }
    *best = best.min(mixed_text::thread_cpu_seconds() - start);
    assert!(!report.findings.is_empty(), "each shape holds credentials");
}

fn assert_linear(name: &str, make: fn(usize) -> String, explain: bool) {
    let guard = Guard::builtin().unwrap();
    let small = make(SMALL);
    let large = make(SMALL * GROWTH);
    // Untimed, so that the regex engines' caches are warm for both sizes alike.
    let mut warm = f64::INFINITY;
    best_of(&guard, &small, explain, &mut warm);
    let (mut t_small, mut t_large) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..RUNS {
        best_of(&guard, &small, explain, &mut t_small);
        best_of(&guard, &large, explain, &mut t_large);
    }
    let per_byte = |t: f64, text: &str| t / text.len() as f64;
    let ratio = per_byte(t_large, &large) / per_byte(t_small, &small);
    assert!(
        ratio < MAX_RATIO,
        "{name}: time per byte grew {ratio:.2}x from {} to {} bytes ({t_small:.4} s, {t_large:.4} s of CPU)",
        small.len(),
        large.len()
    );
}

#[test]
fn scan_of_mixed_text_is_linear() {
    assert_linear("mixed text", |b| mixed_text::mixed(b, 0), false);
}

#[test]
fn scan_and_explain_of_one_long_line_are_linear() {
    assert_linear("one long line", mixed_text::one_long_line, true);
}

#[test]
fn scan_and_explain_of_many_findings_are_linear() {
    assert_linear("many findings", mixed_text::many_findings, true);
}
