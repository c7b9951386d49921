//! The optional second scanner: the real gitleaks binary, run once per batch.
//!
//! The batch goes to `gitleaks stdin` (never to disk), the inputs one after another, each
//! followed by a separator line that no rule can use to join two inputs; findings are mapped
//! back to their input by line number. Everything that could change gitleaks' verdict from
//! outside is pinned:
//! - the config is given with `-c` (a file in a private 0700 directory, mode 0600, removed when
//!   the run ends): the user's rules file as read at start-up, or `[extend] useDefault = true`;
//! - the environment is cleared, so `GITLEAKS_CONFIG*` cannot replace it;
//! - the working directory and `--gitleaks-ignore-path` are that private directory, so no
//!   `.gitleaksignore` from anywhere applies; `--ignore-gitleaks-allow` disables inline
//!   `gitleaks:allow` comments, which the scanned text itself could contain;
//! - `--exit-code 99` tells "leaks found" apart from gitleaks' own errors (exit 1);
//! - `--redact` keeps secrets out of its report; positions come from line and column.
//!
//! Fail closed: a binary that cannot start, exits with any other status, is killed by the
//! timeout, or prints a report that does not parse, is an error, never "clean".

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Deserialize;
use wait_timeout::ChildExt;

use super::scanner::{LineIndex, Scanner, SecretAt, widen_to_chars};
use super::{FindingSource, Guard, GuardError, ScanInput, SecretFinding};

/// gitleaks' exit status when it found leaks; anything else but 0 is an error.
const LEAKS_EXIT_CODE: i32 = 99;

/// Written on its own line between inputs. `#` is in none of gitleaks' value alphabets, so an
/// assignment rule that crosses a newline (`key:\n value`) cannot reach into the next input.
const SEPARATOR: &str = "#\n";

/// Pinned config when the user gave no rules file: gitleaks' own default rules.
const DEFAULT_CONFIG: &str =
    "title = \"promptd pinned gitleaks config\"\n\n[extend]\nuseDefault = true\n";

/// Largest report we read (a report lists redacted findings, so this is generous).
const MAX_REPORT_BYTES: u64 = 64 * 1024 * 1024;

pub(crate) struct GitleaksRunner {
    bin: PathBuf,
    /// The user's rules text and its path, read once when the guard was built.
    config: Option<(String, PathBuf)>,
    timeout: Duration,
}

/// The fields of a gitleaks JSON finding that promptd uses.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GitleaksFinding {
    #[serde(rename = "RuleID")]
    rule_id: String,
    #[serde(default)]
    description: String,
    start_line: usize,
    end_line: usize,
    start_column: usize,
    end_column: usize,
    /// The match with the secret replaced by `REDACTED` (we pass `--redact`).
    #[serde(default, rename = "Match")]
    redacted_match: String,
    #[serde(default)]
    entropy: f32,
}

/// Where each input sits in the stream sent to gitleaks.
struct InputPlacement {
    /// 1-based line of the input's first line in the stream.
    first_line: usize,
    /// Number of lines the input occupies.
    lines: usize,
}

impl GitleaksRunner {
    pub(crate) fn new(
        bin: PathBuf,
        config: Option<(String, PathBuf)>,
        timeout: Duration,
    ) -> GitleaksRunner {
        GitleaksRunner {
            bin,
            config,
            timeout,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.bin
    }

    /// Runs gitleaks once over all inputs and returns its findings mapped onto them.
    pub(crate) fn scan(
        &self,
        inputs: &[ScanInput<'_>],
        scanner: &Scanner,
    ) -> Result<Vec<SecretFinding>, GuardError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let (stream, placements) = build_stream(inputs);

        let scratch = tempfile::Builder::new()
            .prefix("promptd-gitleaks-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(GuardError::Scratch)?;
        let config_path = scratch.path().join("gitleaks.toml");
        let config_text = self
            .config
            .as_ref()
            .map_or(DEFAULT_CONFIG, |(text, _)| text.as_str());
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&config_path)
            .and_then(|mut f| f.write_all(config_text.as_bytes()))
            .map_err(GuardError::Scratch)?;

        let mut cmd = Command::new(&self.bin);
        cmd.arg("stdin")
            .arg("--config")
            .arg(&config_path)
            .arg("--ignore-gitleaks-allow")
            .arg("--gitleaks-ignore-path")
            .arg(scratch.path())
            .arg("--exit-code")
            .arg(LEAKS_EXIT_CODE.to_string())
            .args(["--report-format", "json", "--report-path", "-"])
            .args([
                "--redact",
                "--no-banner",
                "--no-color",
                "--log-level",
                "error",
            ])
            .current_dir(scratch.path())
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| GuardError::GitleaksStart {
            path: self.bin.clone(),
            source,
        })?;

        let mut stdin = child.stdin.take().expect("stdin is piped");
        let writer = std::thread::spawn(move || {
            // A gitleaks that exits early closes the pipe; its exit status tells what happened.
            let _ = stdin.write_all(stream.as_bytes());
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stdout.take(MAX_REPORT_BYTES).read_to_end(&mut buf);
            buf
        });
        let stderr = child.stderr.take().expect("stderr is piped");
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.take(1024 * 1024).read_to_end(&mut buf);
            buf
        });

        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = (writer.join(), reader.join(), err_reader.join());
                return Err(GuardError::GitleaksTimeout {
                    path: self.bin.clone(),
                    timeout: self.timeout,
                });
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GuardError::GitleaksStart {
                    path: self.bin.clone(),
                    source: e,
                });
            }
        };
        let _ = writer.join();
        let report = reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        drop(scratch);

        let failed = |status: String| GuardError::GitleaksFailed {
            path: self.bin.clone(),
            status,
            stderr: stderr_tail(&stderr, scanner),
        };
        let leaks_expected = match status.code() {
            Some(0) => false,
            Some(LEAKS_EXIT_CODE) => true,
            Some(code) => return Err(failed(format!("exit status {code}"))),
            None => return Err(failed("killed by a signal".to_string())),
        };
        let parsed: Vec<GitleaksFinding> =
            serde_json::from_slice(&report).map_err(|e| GuardError::GitleaksReport {
                path: self.bin.clone(),
                message: format!("{e} (report of {} bytes)", report.len()),
            })?;
        if parsed.is_empty() == leaks_expected {
            return Err(GuardError::GitleaksReport {
                path: self.bin.clone(),
                message: format!(
                    "exit status {} does not agree with a report of {} finding(s)",
                    status.code().unwrap_or(-1),
                    parsed.len()
                ),
            });
        }
        tracing::debug!(findings = parsed.len(), "gitleaks finished");
        Ok(map_findings(inputs, &placements, &parsed))
    }
}

/// Concatenates the inputs, each ending with a newline and followed by [`SEPARATOR`].
fn build_stream(inputs: &[ScanInput<'_>]) -> (String, Vec<InputPlacement>) {
    let total: usize = inputs.iter().map(|i| i.text.len() + 4).sum();
    let mut stream = String::with_capacity(total);
    let mut placements = Vec::with_capacity(inputs.len());
    let mut line = 1;
    for input in inputs {
        let text: &str = &input.text;
        let lines = text.matches('\n').count() + usize::from(!text.ends_with('\n'));
        let lines = lines.max(1);
        placements.push(InputPlacement {
            first_line: line,
            lines,
        });
        stream.push_str(text);
        if !text.ends_with('\n') {
            stream.push('\n');
        }
        stream.push_str(SEPARATOR);
        line += lines + 1;
    }
    (stream, placements)
}

/// Maps gitleaks' stream positions back onto the inputs. A finding that cannot be placed
/// precisely still counts: it is widened to whole lines, never dropped.
fn map_findings(
    inputs: &[ScanInput<'_>],
    placements: &[InputPlacement],
    parsed: &[GitleaksFinding],
) -> Vec<SecretFinding> {
    let mut out = Vec::with_capacity(parsed.len());
    let mut indexes: Vec<Option<LineIndex>> = inputs.iter().map(|_| None).collect();
    for g in parsed {
        // The input whose lines contain the start line; a separator line belongs to the input
        // before it.
        let idx = placements
            .iter()
            .rposition(|p| p.first_line <= g.start_line.max(1))
            .unwrap_or(0);
        let input = &inputs[idx];
        let text: &str = &input.text;
        let place = &placements[idx];
        let li = indexes[idx].get_or_insert_with(|| LineIndex::new(text));
        let span = locate(text, li, place, g);
        let at = SecretAt {
            label: &input.label,
            text,
            lines: li,
            span,
        };
        out.push(at.finding(
            &g.rule_id,
            &g.description,
            f64::from(g.entropy),
            FindingSource::Gitleaks,
        ));
    }
    out
}

/// Byte span of a gitleaks finding within its input. gitleaks reports 1-based byte columns of
/// the whole match, one higher than the true column on every stream line after the first; the
/// secret is located inside the match by the text around `REDACTED` in the redacted match.
/// The result is widened over adjacent token characters so that an off-by-one can only
/// redact more, never leave part of a secret.
fn locate(
    text: &str,
    li: &LineIndex,
    place: &InputPlacement,
    g: &GitleaksFinding,
) -> std::ops::Range<usize> {
    let local = |stream_line: usize| {
        stream_line
            .saturating_sub(place.first_line)
            .min(place.lines.saturating_sub(1))
            + 1
    };
    let (start_line, end_line) = (local(g.start_line), local(g.end_line.max(g.start_line)));
    let shift = |stream_line: usize| usize::from(stream_line > 1);
    let line_start = |l: usize| li.line_start(l).unwrap_or(text.len());
    let line_end = |l: usize| {
        li.line_start(l + 1)
            .map_or(text.len(), |s| s.saturating_sub(1))
    };

    let in_range = g.start_line >= place.first_line
        && g.end_line < place.first_line + place.lines
        && start_line <= li.line_count();
    if !in_range {
        return line_start(start_line)..line_end(end_line);
    }
    let start = line_start(start_line) + g.start_column.saturating_sub(1 + shift(g.start_line));
    let end = line_start(end_line) + g.end_column.saturating_sub(shift(g.end_line));
    if start >= end || end > line_end(end_line).max(start) + 1 || end > text.len() {
        return line_start(start_line)..line_end(end_line);
    }
    let mut span = widen_to_chars(text, start..end);

    // Narrow to the secret when the redacted match shows where it sits.
    if let (Some(first), Some(last)) = (
        g.redacted_match.find("REDACTED"),
        g.redacted_match.rfind("REDACTED"),
    ) {
        let prefix = &g.redacted_match[..first];
        let suffix = &g.redacted_match[last + "REDACTED".len()..];
        let matched = &text[span.clone()];
        if (!prefix.is_empty() || !suffix.is_empty())
            && matched.len() > prefix.len() + suffix.len()
            && matched.starts_with(prefix)
            && matched.ends_with(suffix)
        {
            span = span.start + prefix.len()..span.end - suffix.len();
        }
    }
    widen_over_token(text, span)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+/=_-.~%".contains(&b)
}

fn widen_over_token(text: &str, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let bytes = text.as_bytes();
    let (mut start, mut end) = (r.start, r.end);
    while start > 0 && is_token_byte(bytes[start - 1]) && is_token_byte(bytes[start]) {
        start -= 1;
    }
    while end < bytes.len() && end > 0 && is_token_byte(bytes[end]) && is_token_byte(bytes[end - 1])
    {
        end += 1;
    }
    widen_to_chars(text, start..end)
}

/// The last part of gitleaks' stderr, without colour codes, with anything our own rules flag
/// redacted, so that an error message cannot carry a secret.
fn stderr_tail(stderr: &[u8], scanner: &Scanner) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip an ANSI escape sequence: ESC [ ... final byte.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    // A Go panic ends in a stack trace: the lines that say what went wrong come first.
    let telling: Vec<&str> = plain
        .lines()
        .map(str::trim)
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            ["panic:", "error", " err ", " ftl ", "fatal"]
                .iter()
                .any(|w| lower.contains(w))
        })
        .take(3)
        .collect();
    let summary = if telling.is_empty() {
        plain.trim().to_string()
    } else {
        telling.join(" | ")
    };
    let chars: Vec<char> = summary.chars().collect();
    let from = chars.len().saturating_sub(600);
    let tail: String = chars[from..].iter().collect();
    Guard::scrub(scanner, &tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_places_inputs_on_their_lines() {
        let inputs = [
            ScanInput::new("a", "one\ntwo"),
            ScanInput::new("b", "three\n"),
            ScanInput::new("c", ""),
        ];
        let (stream, places) = build_stream(&inputs);
        assert_eq!(stream, "one\ntwo\n#\nthree\n#\n\n#\n");
        let firsts: Vec<_> = places.iter().map(|p| (p.first_line, p.lines)).collect();
        assert_eq!(firsts, vec![(1, 2), (4, 1), (6, 1)]);
    }

    #[test]
    fn locate_narrows_to_the_secret_and_corrects_columns() {
        let text = "x\n  api_key = \"abcdefghijklmnop\"\n";
        let li = LineIndex::new(text);
        let place = InputPlacement {
            first_line: 3,
            lines: 2,
        };
        // As gitleaks reports it: stream line 4, columns shifted by one.
        let g = GitleaksFinding {
            rule_id: "generic-api-key".into(),
            description: String::new(),
            start_line: 4,
            end_line: 4,
            start_column: 4,
            end_column: 31,
            redacted_match: "api_key = \"REDACTED\"".into(),
            entropy: 4.0,
        };
        let span = locate(text, &li, &place, &g);
        assert_eq!(&text[span], "abcdefghijklmnop");
    }
}
