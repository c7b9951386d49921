//! Where substituted values sit in a rendered text: a render with marks on wraps every value it
//! writes in private-use delimiters, which [`segments`] cuts into plain text and values.
//!
//! Plain substitution knows the variable it writes. A Jinja render reads its variables through
//! a [`MarkedContext`], which notes every variable the template looks up; the formatter writes
//! an output as the value of the variable the expression read, when that variable's value is
//! what it prints (`{{ end_date }}` is `end_date` even when `today` holds the same date), and
//! as an expression otherwise (`{{ name | upper }}`, an item of a list variable, a literal).
//! The text is never compared with the other variables' values.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use minijinja::Value as JinjaValue;
use minijinja::value::{Enumerator, Object, ObjectRepr};
use serde::Serialize;
use serde_json::{Map, Value};

/// Opens a mark: `OPEN`, the variable's index (or nothing for an expression), `SEP`.
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
}

/// Marks on for Jinja output on this thread until dropped.
pub(crate) struct Marking;

impl Marking {
    pub(crate) fn start() -> Marking {
        LOOKUPS.with(|l| *l.borrow_mut() = Some(Vec::new()));
        Marking
    }
}

impl Drop for Marking {
    fn drop(&mut self) {
        LOOKUPS.with(|l| *l.borrow_mut() = None);
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

/// The mark of one Jinja output of `value`, printed as `printed`: the variable the expression
/// read whose value it is (the latest such lookup since the previous output), else an
/// expression. The lookups are forgotten: the next output starts afresh.
pub(crate) fn jinja_mark(value: &JinjaValue, printed: &str) -> String {
    let index = LOOKUPS.with(|l| {
        let mut l = l.borrow_mut();
        let all = l.as_mut()?;
        let found = all.iter().rev().find(|(_, v)| v == value).map(|(i, _)| *i);
        all.clear();
        found
    });
    wrap(index, printed)
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

/// `value` wrapped as the value of the variable at `index` (`None`: an expression).
pub(crate) fn wrap(index: Option<usize>, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    out.push(OPEN);
    if let Some(i) = index {
        out.push_str(&i.to_string());
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
    let mut push = |text: &str, kind: SegmentKind| {
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
            }),
        }
    };
    let mut rest = text;
    while let Some(open) = rest.find(OPEN) {
        push(&rest[..open], SegmentKind::Text);
        let after = &rest[open + OPEN.len_utf8()..];
        let Some(sep) = after.find(SEP) else {
            push(&strip(after), SegmentKind::Text);
            return out;
        };
        let kind = match after[..sep]
            .parse::<usize>()
            .ok()
            .and_then(|i| names.get(i))
        {
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
        push(&strip(&value[..end]), kind);
        rest = value.get(end + CLOSE.len_utf8()..).unwrap_or_default();
    }
    push(rest, SegmentKind::Text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cut_values_and_expressions() {
        let names = vec!["topic".to_string()];
        let text = format!(
            "Write about {} in {}.",
            wrap(Some(0), "Rust"),
            wrap(None, "RUST")
        );
        assert_eq!(strip(&text), "Write about Rust in RUST.");
        let s = segments(&text, &names);
        assert_eq!(
            s,
            vec![
                Segment {
                    text: "Write about ".into(),
                    kind: SegmentKind::Text
                },
                Segment {
                    text: "Rust".into(),
                    kind: SegmentKind::Variable {
                        name: "topic".into()
                    }
                },
                Segment {
                    text: " in ".into(),
                    kind: SegmentKind::Text
                },
                Segment {
                    text: "RUST".into(),
                    kind: SegmentKind::Expression
                },
                Segment {
                    text: ".".into(),
                    kind: SegmentKind::Text
                },
            ]
        );
    }

    #[test]
    fn an_output_is_the_variable_it_read_not_one_that_prints_the_same() {
        let _m = Marking::start();
        let date = JinjaValue::from("2026-01-15");
        looked_up(3, &date);
        assert_eq!(jinja_mark(&date, "2026-01-15"), wrap(Some(3), "2026-01-15"));
        // Nothing read since: a literal of the same text is an expression.
        assert_eq!(jinja_mark(&date, "2026-01-15"), wrap(None, "2026-01-15"));
        // Read, then transformed: an expression.
        looked_up(1, &JinjaValue::from("rust"));
        assert_eq!(
            jinja_mark(&JinjaValue::from("RUST"), "RUST"),
            wrap(None, "RUST")
        );
    }

    #[test]
    fn nested_values_belong_to_the_outer_one() {
        let names = vec!["a".to_string(), "b".to_string()];
        let text = format!("x{}y", wrap(None, &format!("<{}>", wrap(Some(1), "B"))));
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
