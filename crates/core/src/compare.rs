//! Two variants of a prompt side by side: the same prompt at two versions (the working copy,
//! `NAME@REV`), with two argument sets, or two prompts, each rendered as `get` renders it
//! ([`render_variant`]), and the rendered texts' line diff ([`side_by_side`], [`unified`]; the
//! `similar` crate's Myers diff).

use serde::Serialize;
use serde_json::{Map, Value};
use similar::{DiffOp, TextDiff};

use std::sync::Arc;

use crate::library::{PromptLibrary, Resolved, Snapshot, Visibility};
use crate::registry::PromptTemplate;
use crate::render::{PromptMessage, RenderError};
use crate::versions::VersionError;

/// Equal lines kept around a change; longer equal stretches fold into one row.
pub const CONTEXT: usize = 3;

/// Why a variant could not be rendered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error(transparent)]
    Render(#[from] RenderError),
}

impl CompareError {
    /// Whether the caller is at fault (an unknown prompt or revision, a bad argument).
    pub fn is_caller_error(&self) -> bool {
        match self {
            CompareError::Version(e) => e.is_caller_error(),
            CompareError::Render(e) => e.is_caller_error(),
        }
    }
}

/// One variant rendered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderedVariant {
    /// As asked for: `NAME` or `NAME@REV`.
    pub spec: String,
    pub version_hash: String,
    /// The file it was read from (`path@commit` for a revision).
    pub path: String,
    pub arguments: Map<String, Value>,
    pub text: String,
    /// What a run of the variant sends (not serialised).
    #[serde(skip)]
    pub render: VariantRender,
}

/// A variant's render as a run takes it: the snapshot and prompt it was rendered from, the
/// revision it was read at, and its messages.
#[derive(Debug, Clone)]
pub struct VariantRender {
    pub snapshot: Arc<Snapshot>,
    pub prompt: Arc<PromptTemplate>,
    /// `REV` of a `NAME@REV`; `None` for the working copy.
    pub revision: Option<String>,
    pub messages: Vec<PromptMessage>,
}

/// Renders `spec` (`NAME` or `NAME@REV`) with `args`, as `get` renders it, showing only what
/// `visibility` serves.
pub fn render_variant(
    library: &PromptLibrary,
    spec: &str,
    args: &Map<String, Value>,
    visibility: Visibility,
) -> Result<RenderedVariant, CompareError> {
    let Resolved {
        snapshot,
        name,
        revision,
    } = library.resolve(spec)?;
    let prompt = snapshot
        .visible(&name, visibility)
        .ok_or_else(|| RenderError::UnknownPrompt {
            name: spec.to_string(),
        })?
        .clone();
    let rendered = snapshot.render_template(&prompt, args, library.clock())?;
    Ok(RenderedVariant {
        spec: spec.to_string(),
        version_hash: prompt.version_hash.clone(),
        path: prompt.path.clone(),
        arguments: args.clone(),
        text: rendered.text,
        render: VariantRender {
            snapshot,
            prompt,
            revision,
            messages: rendered.messages,
        },
    })
}

/// One row of a side-by-side diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// `same`, `changed` (both sides, different), `removed` (left only), `added` (right only)
    /// or `fold` (`folded` equal lines not shown).
    pub tag: &'static str,
    /// 1-based line numbers.
    pub left_line: Option<usize>,
    pub left: Option<String>,
    pub right_line: Option<usize>,
    pub right: Option<String>,
    pub folded: usize,
}

/// A side-by-side line diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideBySide {
    pub rows: Vec<Row>,
    /// Lines only on the left, only on the right (a changed line counts on both).
    pub removed: usize,
    pub added: usize,
    pub identical: bool,
}

fn line(text: &str) -> String {
    text.trim_end_matches(['\n', '\r']).to_string()
}

/// The line diff of `left` and `right` as rows of a two-column table; equal stretches longer
/// than twice [`CONTEXT`] fold into a `fold` row.
pub fn side_by_side(left: &str, right: &str) -> SideBySide {
    let diff = TextDiff::from_lines(left, right);
    let old = diff.old_slices();
    let new = diff.new_slices();
    let mut rows = Vec::new();
    let (mut removed, mut added) = (0, 0);
    let ops = diff.ops();
    let pair = |tag, i: Option<usize>, j: Option<usize>| Row {
        tag,
        left_line: i.map(|i| i + 1),
        left: i.map(|i| line(old[i])),
        right_line: j.map(|j| j + 1),
        right: j.map(|j| line(new[j])),
        folded: 0,
    };
    for (k, op) in ops.iter().enumerate() {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                let keep_head = if k == 0 { 0 } else { CONTEXT };
                let keep_tail = if k + 1 == ops.len() { 0 } else { CONTEXT };
                if len > keep_head + keep_tail + 1 {
                    for n in 0..keep_head {
                        rows.push(pair("same", Some(old_index + n), Some(new_index + n)));
                    }
                    rows.push(Row {
                        tag: "fold",
                        left_line: None,
                        left: None,
                        right_line: None,
                        right: None,
                        folded: len - keep_head - keep_tail,
                    });
                    for n in len - keep_tail..len {
                        rows.push(pair("same", Some(old_index + n), Some(new_index + n)));
                    }
                } else {
                    for n in 0..len {
                        rows.push(pair("same", Some(old_index + n), Some(new_index + n)));
                    }
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                removed += old_len;
                for n in 0..old_len {
                    rows.push(pair("removed", Some(old_index + n), None));
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                added += new_len;
                for n in 0..new_len {
                    rows.push(pair("added", None, Some(new_index + n)));
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                removed += old_len;
                added += new_len;
                for n in 0..old_len.max(new_len) {
                    let i = (n < old_len).then_some(old_index + n);
                    let j = (n < new_len).then_some(new_index + n);
                    let tag = match (i, j) {
                        (Some(_), Some(_)) => "changed",
                        (Some(_), None) => "removed",
                        _ => "added",
                    };
                    rows.push(pair(tag, i, j));
                }
            }
        }
    }
    SideBySide {
        identical: removed == 0 && added == 0,
        rows,
        removed,
        added,
    }
}

/// A unified diff (`--- left`, `+++ right`, hunks with [`CONTEXT`] lines), empty when the texts
/// are equal.
pub fn unified(left: &str, right: &str, left_label: &str, right_label: &str) -> String {
    if left == right {
        return String::new();
    }
    TextDiff::from_lines(left, right)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(left_label, right_label)
        .missing_newline_hint(false)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_pair_up_and_long_equal_runs_fold() {
        let a: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        let b = a.replace("line 10\n", "line ten\n") + "line 21\n";
        let d = side_by_side(&a, &b);
        assert_eq!((d.removed, d.added, d.identical), (1, 2, false));
        let changed: Vec<&Row> = d.rows.iter().filter(|r| r.tag == "changed").collect();
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].left.as_deref(), Some("line 10"));
        assert_eq!(changed[0].right.as_deref(), Some("line ten"));
        assert_eq!(
            (changed[0].left_line, changed[0].right_line),
            (Some(10), Some(10))
        );
        let folds: Vec<usize> = d
            .rows
            .iter()
            .filter(|r| r.tag == "fold")
            .map(|r| r.folded)
            .collect();
        // Lines 1–6 fold before the change (3 kept), 14–17 between it and the end's addition.
        assert_eq!(folds, [6, 4]);
        let last = d.rows.last().unwrap();
        assert_eq!(
            (last.tag, last.right.as_deref()),
            ("added", Some("line 21"))
        );
        assert!(side_by_side("x\n", "x\n").identical);
    }

    #[test]
    fn a_unified_diff_names_both_sides() {
        let u = unified("a\nb\n", "a\nc\n", "review", "review@v1");
        assert!(u.starts_with("--- review\n+++ review@v1\n"), "{u}");
        assert!(u.contains("-b\n+c\n"), "{u}");
        assert_eq!(unified("a\n", "a\n", "x", "y"), "");
    }
}
