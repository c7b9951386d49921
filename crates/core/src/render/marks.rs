//! Where substituted values sit in a rendered text: a render with marks on wraps every value it
//! writes in private-use delimiters, which [`segments`] cuts into plain text and values.
//!
//! Plain substitution knows the variable it writes. Jinja's formatter sees only the value, so
//! a `{{ … }}` output is attributed to the variable whose value prints the same (the highest
//! layer first); an output no variable prints (`{{ name | upper }}`, a loop item) is an
//! expression.

use std::cell::RefCell;

use serde::Serialize;

/// Opens a mark: `OPEN`, the variable's index (or nothing for an expression), `SEP`.
const OPEN: char = '\u{E000}';
const SEP: char = '\u{E001}';
const CLOSE: char = '\u{E002}';

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
    /// While a marked Jinja render runs on this thread: each variable's printed value, by
    /// index into the names of [`Marking`].
    static PRINTED: RefCell<Option<Vec<(String, usize)>>> = const { RefCell::new(None) };
}

/// Marks on for Jinja output on this thread until dropped.
pub(crate) struct Marking;

impl Marking {
    /// `printed`: each variable's printed value and its index, highest layer first.
    pub(crate) fn start(printed: Vec<(String, usize)>) -> Marking {
        PRINTED.with(|p| *p.borrow_mut() = Some(printed));
        Marking
    }
}

impl Drop for Marking {
    fn drop(&mut self) {
        PRINTED.with(|p| *p.borrow_mut() = None);
    }
}

/// Whether a marked Jinja render runs on this thread.
pub(crate) fn marking() -> bool {
    PRINTED.with(|p| p.borrow().is_some())
}

/// The mark of one Jinja output: the variable that prints `printed`, if any.
pub(crate) fn jinja_mark(printed: &str) -> String {
    let index = PRINTED.with(|p| {
        p.borrow()
            .as_ref()
            .and_then(|all| all.iter().find(|(v, _)| v == printed).map(|(_, i)| *i))
    });
    wrap(index, printed)
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
