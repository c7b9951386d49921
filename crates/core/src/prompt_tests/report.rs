//! The report of a test run, as people read it: one line per case, the reasons a case failed,
//! a unified diff for every new or changed snapshot (coloured only when asked, i.e. on a
//! terminal), and the closing summary line `N passed, N failed`.

use std::io::{self, Write};
use std::path::Path;

use anstyle::{AnsiColor, Style};
use similar::{ChangeTag, TextDiff};

use super::{CaseOutcome, SnapshotOutcome, TestSummary, Written, normalize, shown_path};

/// How to print.
#[derive(Debug, Clone, Copy)]
pub struct ReportStyle<'a> {
    /// ANSI colours (a terminal that did not opt out with `NO_COLOR`).
    pub colour: bool,
    /// Paths are shown relative to this folder.
    pub base_dir: &'a Path,
}

impl ReportStyle<'_> {
    fn paint(&self, style: Style, text: &str) -> String {
        if self.colour {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }
}

const RED: Style = AnsiColor::Red.on_default();
const GREEN: Style = AnsiColor::Green.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const CYAN: Style = AnsiColor::Cyan.on_default();
const BOLD: Style = Style::new().bold();

/// Writes one case: its status line, then what went wrong and the snapshot diff.
pub fn write_case(out: &mut dyn Write, case: &CaseOutcome, style: &ReportStyle) -> io::Result<()> {
    let status = if !case.passed() {
        style.paint(RED.bold(), "FAILED")
    } else if matches!(
        case.snapshot,
        SnapshotOutcome::New { .. } | SnapshotOutcome::Changed { .. }
    ) {
        style.paint(YELLOW, "ok (accepted)")
    } else {
        style.paint(GREEN, "ok")
    };
    writeln!(out, "{} ... {status}", case.id)?;
    for f in &case.failures {
        writeln!(out, "  {f}")?;
    }
    let shown = |p: &Path| shown_path(p, style.base_dir);
    let new_text = case.text.as_deref().unwrap_or_default();
    match &case.snapshot {
        SnapshotOutcome::Matched | SnapshotOutcome::NotCompared => {}
        SnapshotOutcome::New { snapshot, written } => {
            writeln!(out, "  new snapshot: {}", shown(snapshot))?;
            write_written(out, written, style)?;
            if !matches!(written, Written::Accepted(_)) {
                let diff = unified_diff("", new_text, "/dev/null", &new_label(written, style));
                write_diff(out, &diff, style)?;
            }
        }
        SnapshotOutcome::Changed {
            snapshot,
            old,
            written,
        } => {
            writeln!(out, "  snapshot changed: {}", shown(snapshot))?;
            write_written(out, written, style)?;
            let diff = unified_diff(old, new_text, &shown(snapshot), &new_label(written, style));
            write_diff(out, &diff, style)?;
        }
    }
    Ok(())
}

fn new_label(written: &Written, style: &ReportStyle) -> String {
    match written {
        Written::Accepted(p) | Written::Pending(p) => shown_path(p, style.base_dir),
        Written::Nothing => "rendered".into(),
    }
}

fn write_written(out: &mut dyn Write, written: &Written, style: &ReportStyle) -> io::Result<()> {
    match written {
        Written::Accepted(p) => writeln!(out, "  accepted: {}", shown_path(p, style.base_dir)),
        Written::Pending(p) => writeln!(
            out,
            "  written to {} (review with `cargo insta review`, or rerun with --accept)",
            shown_path(p, style.base_dir)
        ),
        Written::Nothing => writeln!(
            out,
            "  not written (CI: nothing is accepted implicitly; run `promptd test --accept` and commit the snapshot)"
        ),
    }
}

/// One line of a unified diff, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffLine {
    Header(String),
    Hunk(String),
    Removed(String),
    Added(String),
    Context(String),
}

/// A unified diff (3 lines of context) of two snapshot texts, compared as insta compares them.
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> Vec<DiffLine> {
    let old = with_final_newline(&normalize(old));
    let new = with_final_newline(&normalize(new));
    let diff = TextDiff::from_lines(&old, &new);
    let mut lines = vec![
        DiffLine::Header(format!("--- {old_label}")),
        DiffLine::Header(format!("+++ {new_label}")),
    ];
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        lines.push(DiffLine::Hunk(hunk.header().to_string()));
        for change in hunk.iter_changes() {
            let text = change.value().trim_end_matches('\n').to_string();
            lines.push(match change.tag() {
                ChangeTag::Delete => DiffLine::Removed(text),
                ChangeTag::Insert => DiffLine::Added(text),
                ChangeTag::Equal => DiffLine::Context(text),
            });
        }
    }
    lines
}

fn with_final_newline(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("{s}\n")
    }
}

fn write_diff(out: &mut dyn Write, diff: &[DiffLine], style: &ReportStyle) -> io::Result<()> {
    for line in diff {
        let text = match line {
            DiffLine::Header(t) => style.paint(BOLD, t),
            DiffLine::Hunk(t) => style.paint(CYAN, t),
            DiffLine::Removed(t) => style.paint(RED, &format!("-{t}")),
            DiffLine::Added(t) => style.paint(GREEN, &format!("+{t}")),
            DiffLine::Context(t) => format!(" {t}"),
        };
        writeln!(out, "{text}")?;
    }
    Ok(())
}

/// Writes the names of failed cases, then the summary line `N passed, N failed`.
pub fn write_summary(
    out: &mut dyn Write,
    failed: &[String],
    summary: &TestSummary,
    style: &ReportStyle,
) -> io::Result<()> {
    writeln!(out)?;
    if !failed.is_empty() {
        writeln!(out, "failures:")?;
        for id in failed {
            writeln!(out, "    {id}")?;
        }
        writeln!(out)?;
    }
    let line = summary.to_string();
    let line = if summary.failed > 0 {
        style.paint(RED, &line)
    } else {
        style.paint(GREEN, &line)
    };
    writeln!(out, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_marks_changed_lines_only() {
        let d = unified_diff("a\nb\nc\n", "a\nB\nc", "old", "new");
        assert_eq!(
            d,
            vec![
                DiffLine::Header("--- old".into()),
                DiffLine::Header("+++ new".into()),
                DiffLine::Hunk("@@ -1,3 +1,3 @@".into()),
                DiffLine::Context("a".into()),
                DiffLine::Removed("b".into()),
                DiffLine::Added("B".into()),
                DiffLine::Context("c".into()),
            ]
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let base = Path::new("/");
        let mut plain = Vec::new();
        let d = unified_diff("x", "y", "a", "b");
        write_diff(
            &mut plain,
            &d,
            &ReportStyle {
                colour: false,
                base_dir: base,
            },
        )
        .unwrap();
        assert!(!String::from_utf8(plain).unwrap().contains('\x1b'));
        let mut coloured = Vec::new();
        write_diff(
            &mut coloured,
            &d,
            &ReportStyle {
                colour: true,
                base_dir: base,
            },
        )
        .unwrap();
        let coloured = String::from_utf8(coloured).unwrap();
        assert!(coloured.contains("\x1b[31m-x"), "{coloured:?}");
        assert!(coloured.contains("\x1b[32m+y"), "{coloured:?}");
    }
}
