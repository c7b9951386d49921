//! Where substituted values sit in a rendered text: a render with marks on wraps every value it
//! writes in private-use delimiters, which [`segments`] cuts into plain text and values.
//!
//! Plain substitution knows the variable it writes. A Jinja render reads its variables through
//! a [`MarkedContext`], which notes every variable the template looks up; the formatter writes
//! an output as the value of the variable the expression read, when that variable's value is
//! what it prints (`{{ end_date }}` is `end_date` even when `today` holds the same date), and
//! as an expression otherwise (`{{ name | upper }}`, an item of a list variable, a literal).
//! The text is never compared with the other variables' values.
//!
//! Each Jinja output also carries the lines of the template that printed it, as the engine
//! compiled them (the span of the `{{ … }}` expression whose output the formatter writes), when
//! that expression is the prompt's own and not an included file's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use minijinja::Value as JinjaValue;
use minijinja::value::{Enumerator, Object, ObjectRepr};
use serde::Serialize;
use serde_json::{Map, Value};

/// Opens a mark: `OPEN`, the variable's index (or nothing for an expression), optionally `@`
/// and the body lines `FIRST-LAST` that printed it, `SEP`.
const OPEN: char = '\u{E000}';
const SEP: char = '\u{E001}';
const CLOSE: char = '\u{E002}';

/// The most lookups remembered between two outputs: an expression reads few variables, and a
/// loop that reads many without printing must not grow the list.
const LOOKUPS_KEPT: usize = 16;

/// Whether `text` holds a delimiter (a body or value that does would confuse the marks).
pub(crate) fn has_delimiters(text: &str) -> bool {
    text.contains([OPEN, SEP, CLOSE])
}

/// What a piece of rendered text is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SegmentKind {
    /// The template's own text.
    Text,
    /// The value of a variable.
    Variable { name: String },
    /// Output of a template expression no single variable prints.
    Expression,
}

/// One piece of a rendered message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub text: String,
    #[serde(flatten)]
    pub kind: SegmentKind,
    /// The lines (1-based, first and last) whose expression printed this value, when the render
    /// knows them (Jinja output of the prompt's own template): of the body as [`segments`] cuts
    /// it, of the prompt's file as [`Renderer::render_marked`](super::Renderer::render_marked)
    /// returns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(usize, usize)>,
}

/// One rendered message cut into segments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkedMessage {
    pub role: String,
    pub segments: Vec<Segment>,
}

thread_local! {
    /// While a marked Jinja render runs on this thread: the variables looked up since the last
    /// output (their index and value), latest last.
    static LOOKUPS: RefCell<Option<Vec<(usize, JinjaValue)>>> = const { RefCell::new(None) };
    /// While a marked Jinja render runs on this thread: the name of the prompt's template (the
    /// lines of its outputs are marked; an included file's are not).
    static OWN_TEMPLATE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Marks on for Jinja output on this thread until dropped.
pub(crate) struct Marking;

impl Marking {
    /// Marks on for a render of the template named `template`.
    pub(crate) fn start(template: &str) -> Marking {
        LOOKUPS.with(|l| *l.borrow_mut() = Some(Vec::new()));
        OWN_TEMPLATE.with(|t| template.clone_into(&mut t.borrow_mut()));
        Marking
    }
}

impl Drop for Marking {
    fn drop(&mut self) {
        LOOKUPS.with(|l| *l.borrow_mut() = None);
        OWN_TEMPLATE.with(|t| t.borrow_mut().clear());
    }
}

/// Whether a marked Jinja render runs on this thread.
pub(crate) fn marking() -> bool {
    LOOKUPS.with(|l| l.borrow().is_some())
}

fn looked_up(index: usize, value: &JinjaValue) {
    LOOKUPS.with(|l| {
        if let Some(all) = l.borrow_mut().as_mut() {
            if all.len() == LOOKUPS_KEPT {
                all.remove(0);
            }
            all.push((index, value.clone()));
        }
    });
}

/// The mark of one Jinja output of `value`, printed as `printed` by the expression at `at`
/// (the template's name and its first and last lines, as the engine tells the formatter): the
/// variable the expression read whose value it is (the latest such lookup since the previous
/// output), else an expression. The lookups are forgotten: the next output starts afresh.
pub(crate) fn jinja_mark(
    value: &JinjaValue,
    printed: &str,
    at: Option<(&str, usize, usize)>,
) -> String {
    let index = LOOKUPS.with(|l| {
        let mut l = l.borrow_mut();
        let all = l.as_mut()?;
        let found = all.iter().rev().find(|(_, v)| v == value).map(|(i, _)| *i);
        all.clear();
        found
    });
    let lines = at.and_then(|(name, first, last)| {
        OWN_TEMPLATE
            .with(|t| *t.borrow() == name)
            .then_some((first, last))
    });
    wrap_at(index, lines, printed)
}

/// An output that printed nothing: no mark, and the lookups are forgotten as after any output.
pub(crate) fn nothing_printed() {
    LOOKUPS.with(|l| {
        if let Some(all) = l.borrow_mut().as_mut() {
            all.clear();
        }
    });
}

/// The root context of a marked Jinja render: the layered variables, each lookup noted.
#[derive(Debug)]
pub(crate) struct MarkedContext {
    values: Vec<JinjaValue>,
    index: HashMap<String, usize>,
    names: Vec<String>,
}

impl MarkedContext {
    /// The variables of `vars`; a variable's index is its place in `vars`' key order.
    pub(crate) fn new(vars: &Map<String, Value>) -> MarkedContext {
        MarkedContext {
            values: vars
                .values()
                .map(|v| JinjaValue::from(minijinja::value::Serde(v)))
                .collect(),
            index: vars
                .keys()
                .enumerate()
                .map(|(i, k)| (k.clone(), i))
                .collect(),
            names: vars.keys().cloned().collect(),
        }
    }
}

impl Object for MarkedContext {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JinjaValue) -> Option<JinjaValue> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<JinjaValue> {
        let i = *self.index.get(key)?;
        let value = self.values.get(i)?;
        looked_up(i, value);
        Some(value.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            self.names
                .iter()
                .map(|n| JinjaValue::from(n.as_str()))
                .collect(),
        )
    }
}

/// `value` wrapped as the value of the variable at `index` (`None`: an expression), printed
/// by the body's `lines` (first, last) when known.
pub(crate) fn wrap_at(index: Option<usize>, lines: Option<(usize, usize)>, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 16);
    out.push(OPEN);
    if let Some(i) = index {
        out.push_str(&i.to_string());
    }
    if let Some((first, last)) = lines {
        out.push_str(&format!("@{first}-{last}"));
    }
    out.push(SEP);
    out.push_str(value);
    out.push(CLOSE);
    out
}

/// `text` without its marks.
pub(crate) fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_head = false;
    for c in text.chars() {
        match c {
            OPEN => in_head = true,
            SEP => in_head = false,
            CLOSE => {}
            _ if in_head => {}
            _ => out.push(c),
        }
    }
    out
}

/// Cuts a marked text into segments; `names[i]` is the variable of index `i`. Values nested in
/// a value (an include printing a variable inside a macro's output) belong to the outer one.
pub(crate) fn segments(text: &str, names: &[String]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut push = |text: &str, kind: SegmentKind, lines: Option<(usize, usize)>| {
        if text.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(last) if last.kind == kind && kind == SegmentKind::Text => {
                last.text.push_str(text);
            }
            _ => out.push(Segment {
                text: text.to_string(),
                kind,
                lines,
            }),
        }
    };
    let mut rest = text;
    while let Some(open) = rest.find(OPEN) {
        push(&rest[..open], SegmentKind::Text, None);
        let after = &rest[open + OPEN.len_utf8()..];
        let Some(sep) = after.find(SEP) else {
            push(&strip(after), SegmentKind::Text, None);
            return out;
        };
        let (index, lines) = match after[..sep].split_once('@') {
            Some((index, lines)) => (index, parse_lines(lines)),
            None => (&after[..sep], None),
        };
        let kind = match index.parse::<usize>().ok().and_then(|i| names.get(i)) {
            Some(name) => SegmentKind::Variable { name: name.clone() },
            None => SegmentKind::Expression,
        };
        // The value runs to the CLOSE that balances this OPEN.
        let value = &after[sep + SEP.len_utf8()..];
        let mut depth = 1usize;
        let mut end = value.len();
        for (i, c) in value.char_indices() {
            match c {
                OPEN => depth += 1,
                CLOSE => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        push(&strip(&value[..end]), kind, lines);
        rest = value.get(end + CLOSE.len_utf8()..).unwrap_or_default();
    }
    push(rest, SegmentKind::Text, None);
    out
}

/// The body lines (1-based, first and last) of `part`, a slice of `body` (a placeholder of a
/// plain substitution); `None` for text that is not part of `body` (or empty).
pub(crate) fn lines_of(body: &str, part: &str) -> Option<(usize, usize)> {
    let start = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start + part.len();
    if part.is_empty() || end > body.len() {
        return None;
    }
    let first = body.as_bytes()[..start]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1;
    let last = first + part.matches('\n').count();
    Some((first, last))
}

/// `FIRST-LAST` of a mark's head.
fn parse_lines(text: &str) -> Option<(usize, usize)> {
    let (first, last) = text.split_once('-')?;
    Some((first.parse().ok()?, last.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cut_values_and_expressions() {
        let names = vec!["topic".to_string()];
        let text = format!(
            "Write about {} in {}.",
            wrap_at(Some(0), None, "Rust"),
            wrap_at(None, None, "RUST")
        );
        assert_eq!(strip(&text), "Write about Rust in RUST.");
        let s = segments(&text, &names);
        assert_eq!(
            s,
            vec![
                Segment {
                    text: "Write about ".into(),
                    kind: SegmentKind::Text,
                    lines: None,
                },
                Segment {
                    text: "Rust".into(),
                    kind: SegmentKind::Variable {
                        name: "topic".into()
                    },
                    lines: None,
                },
                Segment {
                    text: " in ".into(),
                    kind: SegmentKind::Text,
                    lines: None,
                },
                Segment {
                    text: "RUST".into(),
                    kind: SegmentKind::Expression,
                    lines: None,
                },
                Segment {
                    text: ".".into(),
                    kind: SegmentKind::Text,
                    lines: None,
                },
            ]
        );
    }

    #[test]
    fn an_output_is_the_variable_it_read_not_one_that_prints_the_same() {
        let _m = Marking::start("t");
        let date = JinjaValue::from("2026-01-15");
        looked_up(3, &date);
        assert_eq!(
            jinja_mark(&date, "2026-01-15", None),
            wrap_at(Some(3), None, "2026-01-15")
        );
        // Nothing read since: a literal of the same text is an expression.
        assert_eq!(
            jinja_mark(&date, "2026-01-15", None),
            wrap_at(None, None, "2026-01-15")
        );
        // Read, then transformed: an expression.
        looked_up(1, &JinjaValue::from("rust"));
        assert_eq!(
            jinja_mark(&JinjaValue::from("RUST"), "RUST", None),
            wrap_at(None, None, "RUST")
        );
    }

    #[test]
    fn an_output_of_the_own_template_keeps_its_lines() {
        let _m = Marking::start("own");
        let v = JinjaValue::from("x");
        looked_up(0, &v);
        let own = jinja_mark(&v, "x", Some(("own", 3, 4)));
        looked_up(0, &v);
        let included = jinja_mark(&v, "x", Some(("partial", 1, 1)));
        let names = vec!["v".to_string()];
        let s = segments(&format!("{own}{included}"), &names);
        assert_eq!(s[0].lines, Some((3, 4)));
        assert_eq!(s[0].kind, SegmentKind::Variable { name: "v".into() });
        assert_eq!(
            s[1].lines, None,
            "an included file's lines are not the prompt's"
        );
        assert_eq!(s[1].kind, SegmentKind::Variable { name: "v".into() });
    }

    #[test]
    fn nested_values_belong_to_the_outer_one() {
        let names = vec!["a".to_string(), "b".to_string()];
        let text = format!(
            "x{}y",
            wrap_at(None, None, &format!("<{}>", wrap_at(Some(1), None, "B")))
        );
        let s = segments(&text, &names);
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].text, "<B>");
        assert_eq!(s[1].kind, SegmentKind::Expression);
        assert_eq!(s[2].text, "y");
    }

    #[test]
    fn an_unclosed_mark_keeps_its_text() {
        let text = format!("a{OPEN}0{SEP}b");
        let s = segments(&text, &["v".to_string()]);
        let all: String = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(all, "ab");
        let text = format!("a{OPEN}0b");
        let all: String = segments(&text, &[])
            .iter()
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(all, "a0b");
    }
}
