//! Claude Code commands (`.claude/commands/**/*.md`) and Codex CLI prompts
//! (`.codex/prompts/*.md`): `$ARGUMENTS` is the argument `arguments` (described by frontmatter
//! `argument-hint`), and `$1`…`$9` are its words split like the shell; both become empty when not
//! given, as the tools do. Codex adds named placeholders (`$NAME`, uppercase), which are
//! required arguments of their own (Codex refuses to run without them), and `$$`, a literal `$`. Claude Code
//! has neither: there `$HOME` and `$$` are text.

use serde_json::{Map, Value};

use super::segment::{Key, Segment, Slot, display_value};

/// The argument holding everything typed after the command.
pub const ARGUMENTS: &str = "arguments";

/// The body cut at `$ARGUMENTS` and `$1`…`$9`, and for Codex at `$NAME` and `$$`.
pub fn segments(body: &str, codex: bool) -> Vec<Segment<'_>> {
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut last = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let rest = &bytes[i + 1..];
        let (len, key, keep) = match rest.first() {
            Some(b'$') if codex => (1, Key::Literal("$"), false),
            Some(d @ b'1'..=b'9') => (
                1,
                Key::Word {
                    of: ARGUMENTS,
                    index: usize::from(d - b'0'),
                },
                false,
            ),
            Some(b'A'..=b'Z') => {
                let n = rest
                    .iter()
                    .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
                    .count();
                let word = &body[i + 1..i + 1 + n];
                if word == "ARGUMENTS" {
                    (n, Key::Arg(ARGUMENTS.into()), false)
                } else if codex {
                    (n, Key::Arg(word.to_string()), true)
                } else {
                    i += 1 + n;
                    continue;
                }
            }
            _ => {
                i += 1;
                continue;
            }
        };
        if i > last {
            out.push(Segment::Text(&body[last..i]));
        }
        let end = i + 1 + len;
        out.push(Segment::Slot {
            raw: &body[i..end],
            slot: Slot {
                key,
                keep_when_missing: keep,
                // Codex refuses to run a prompt whose named placeholder was not given.
                required: keep,
                hint: None,
            },
        });
        last = end;
        i = end;
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// `arguments` is described by frontmatter `argument-hint`; a named placeholder by its name.
pub fn argument_hint(name: &str, meta: &Map<String, Value>) -> Option<String> {
    if name == ARGUMENTS {
        return meta
            .get("argument-hint")
            .map(display_value)
            .filter(|h| !h.trim().is_empty());
    }
    Some(format!(
        "value of `${name}` (left as written when not given)"
    ))
}
