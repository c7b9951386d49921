//! Claude Code commands (`.claude/commands/**/*.md`) and Codex CLI prompts
//! (`.codex/prompts/*.md`): each tool's own substitution, rule for rule.
//!
//! Both read the text typed after the command as the argument `arguments`. Its words are split
//! like the shell.
//!
//! **Claude Code** (2.1.233; `utils/argumentSubstitution.ts`, documented under "Pass arguments
//! to skills" at code.claude.com/docs/en/skills):
//! - `$ARGUMENTS` is the whole text;
//! - `$ARGUMENTS[N]` and `$N` (not followed by a letter, digit or `_`) are word `N`, counted
//!   from 0; a word that was not typed leaves the placeholder as written (since 2.1.210), so
//!   `$5,000` and `awk '{print $1}'` stay text unless that many words are given, and `$10M` is
//!   never a placeholder;
//! - `$name` for each name of frontmatter `arguments:` (a list or a space-separated string)
//!   is the word at that name's position, empty when not typed;
//! - `\$` before a placeholder is a literal `$`;
//! - when nothing was substituted and text was typed, `\nARGUMENTS: <text>` is appended.
//!
//! **Codex** (`codex-rs/tui/src/bottom_pane/prompt_args.rs`, 0.171): a prompt with named
//! placeholders (`$NAME`, upper case, not after a `$`) takes `NAME=value` pairs, every one
//! required, and nothing else is substituted. Any other prompt has `$1`…`$9` (counted from 1,
//! empty when not typed) and `$ARGUMENTS` (the words joined by spaces); `$$` stays `$$`.
//! Typed text is never appended.

use serde_json::{Map, Value};

use super::segment::{Key, Segment, Slot, display_value};

/// The argument holding everything typed after the command.
pub const ARGUMENTS: &str = "arguments";

/// The most named arguments read, and their longest name: every `$` of a body is compared with
/// each name, so a hostile header cannot make a render quadratic.
const MAX_NAMES: usize = 64;
const MAX_NAME_BYTES: usize = 128;

/// Claude Code's named arguments: frontmatter `arguments:` as a list of names or one
/// space-separated string; empty and all-digit names are dropped (they would be `$0`, `$1`), and
/// so are names past [`MAX_NAMES`] or longer than [`MAX_NAME_BYTES`].
pub fn argument_names(meta: &Map<String, Value>) -> Vec<String> {
    let valid = |n: &str| {
        !n.trim().is_empty() && n.len() <= MAX_NAME_BYTES && !n.bytes().all(|b| b.is_ascii_digit())
    };
    match meta.get("arguments") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|n| valid(n))
            .take(MAX_NAMES)
            .map(str::to_string)
            .collect(),
        Some(Value::String(s)) => s
            .split_whitespace()
            .filter(|n| valid(n))
            .take(MAX_NAMES)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// JavaScript's `\w`.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A slot of `raw`.
fn slot(raw: &str, key: Key, keep_when_missing: bool, required: bool) -> Segment<'_> {
    Segment::Slot {
        raw,
        slot: Slot {
            key,
            keep_when_missing,
            required,
            hint: None,
        },
    }
}

/// A Claude Code body cut into text and placeholders; `names` are the file's named arguments.
pub fn claude_segments<'a>(body: &'a str, names: &[String]) -> Vec<Segment<'a>> {
    let mut by_length: Vec<(usize, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (i, n.as_str()))
        .collect();
    by_length.sort_by_key(|(_, n)| std::cmp::Reverse(n.len()));
    let bytes = body.as_bytes();
    // `$name` not followed by `[` or a word character.
    let named_at = |at: usize| {
        by_length.iter().find(|(_, n)| {
            body[at..].starts_with(n)
                && bytes
                    .get(at + n.len())
                    .is_none_or(|&b| b != b'[' && !is_word(b))
        })
    };
    let digits_at = |at: usize| {
        bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let number = |s: &str| s.parse::<usize>().unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut last = 0;
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let found = match bytes[i] {
            b'\\'
                if bytes.get(i + 1) == Some(&b'$') && (i == 0 || bytes[i - 1] != b'\\') && {
                    let m = i + 2;
                    bytes.get(m).is_some_and(u8::is_ascii_digit)
                        || body[m..].starts_with("ARGUMENTS")
                        || named_at(m).is_some()
                } =>
            {
                Some((2, Key::Literal("$"), false))
            }
            b'$' => {
                let at = i + 1;
                if let Some((index, name)) = named_at(at) {
                    Some((
                        1 + name.len(),
                        Key::Word {
                            of: ARGUMENTS,
                            index: *index,
                        },
                        false,
                    ))
                } else if body[at..].starts_with("ARGUMENTS[")
                    && digits_at(at + 10) > 0
                    && bytes.get(at + 10 + digits_at(at + 10)) == Some(&b']')
                {
                    let n = digits_at(at + 10);
                    let index = number(&body[at + 10..at + 10 + n]);
                    Some((
                        11 + n + 1,
                        Key::Word {
                            of: ARGUMENTS,
                            index,
                        },
                        true,
                    ))
                } else if digits_at(at) > 0
                    && bytes.get(at + digits_at(at)).is_none_or(|&b| !is_word(b))
                {
                    let n = digits_at(at);
                    let index = number(&body[at..at + n]);
                    Some((
                        1 + n,
                        Key::Word {
                            of: ARGUMENTS,
                            index,
                        },
                        true,
                    ))
                } else if body[at..].starts_with("ARGUMENTS") {
                    Some((10, Key::Arg(ARGUMENTS.into()), false))
                } else {
                    None
                }
            }
            _ => None,
        };
        let Some((len, key, keep)) = found else {
            i += 1;
            continue;
        };
        if start > last {
            out.push(Segment::Text(&body[last..start]));
        }
        out.push(slot(&body[start..start + len], key, keep, false));
        last = start + len;
        i = last;
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// Codex's named placeholders in a body, in order of first appearance.
pub fn codex_names(body: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for (start, len) in codex_named(body) {
        let name = &body[start + 1..start + len];
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Every `$NAME` (start, length) that Codex reads as a named placeholder.
fn codex_named(body: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = body.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let at = i;
            i += 1;
            if bytes[at] != b'$' || !bytes.get(at + 1).is_some_and(u8::is_ascii_uppercase) {
                continue;
            }
            let n = bytes[at + 1..]
                .iter()
                .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
                .count();
            i = at + 1 + n;
            if (at > 0 && bytes[at - 1] == b'$') || &body[at + 1..at + 1 + n] == "ARGUMENTS" {
                continue;
            }
            return Some((at, 1 + n));
        }
        None
    })
}

/// A Codex body cut into text and placeholders.
pub fn codex_segments<'a>(body: &'a str) -> Vec<Segment<'a>> {
    let mut out = Vec::new();
    let mut last = 0;
    let mut push = |out: &mut Vec<Segment<'a>>, start: usize, end: usize, seg: Segment<'a>| {
        if start > last {
            out.push(Segment::Text(&body[last..start]));
        }
        out.push(seg);
        last = end;
    };
    if !codex_names(body).is_empty() {
        for (start, len) in codex_named(body) {
            let raw = &body[start..start + len];
            // Codex refuses to run a prompt whose named placeholder was not given.
            push(
                &mut out,
                start,
                start + len,
                slot(raw, Key::Arg(raw[1..].to_string()), true, true),
            );
        }
    } else {
        let bytes = body.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'$' {
                i += 1;
                continue;
            }
            match bytes.get(i + 1) {
                Some(b'$') => i += 2,
                Some(d @ b'1'..=b'9') => {
                    let index = usize::from(d - b'1');
                    let seg = slot(
                        &body[i..i + 2],
                        Key::Word {
                            of: ARGUMENTS,
                            index,
                        },
                        false,
                        false,
                    );
                    push(&mut out, i, i + 2, seg);
                    i += 2;
                }
                _ if body[i + 1..].starts_with("ARGUMENTS") => {
                    let seg = slot(
                        &body[i..i + 10],
                        Key::Joined { of: ARGUMENTS },
                        false,
                        false,
                    );
                    push(&mut out, i, i + 10, seg);
                    i += 10;
                }
                _ => i += 1,
            }
        }
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// `arguments` is described by frontmatter `argument-hint`, else by the named arguments it
/// fills (`[component] [framework]`, as Claude Code shows them); a Codex named placeholder by
/// its name.
pub fn argument_hint(name: &str, meta: &Map<String, Value>) -> Option<String> {
    if name == ARGUMENTS {
        return meta
            .get("argument-hint")
            .map(display_value)
            .filter(|h| !h.trim().is_empty())
            .or_else(|| {
                let names = argument_names(meta);
                (!names.is_empty()).then(|| {
                    names
                        .iter()
                        .map(|n| format!("[{n}]"))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
            });
    }
    Some(format!("value of `${name}` (required by Codex)"))
}
