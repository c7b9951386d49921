//! OpenCode commands (`.opencode/command/**/*.md` and `.opencode/commands/**/*.md`).
//!
//! The rules follow OpenCode's source, anomalyco/opencode (formerly sst/opencode):
//!
//! - Folders and names: `packages/opencode/src/config/command.ts` (commit 01b622ed) scans
//!   `{command,commands}/**/*.md` of `.opencode/` and names a command by its path there without
//!   `.md` (`team/review.md` is `team/review`; promptd writes `team:review`). Frontmatter
//!   `description`, `agent`, `model` and `subtask` describe it; `template` exists only in JSON
//!   config (opencode.ai/docs/commands, "Configure with JSON").
//! - The template is the file's body trimmed (`template: md.content.trim()` in `command.ts`).
//! - Substitution: `packages/opencode/src/session/prompt.ts` (commit 00078e84), `command`:
//!   the arguments are split by `argsRegex` (`[Image N]`, a double- or single-quoted string, or a
//!   run of other non-space characters), one quote trimmed at each end of each (`quoteTrimRegex`);
//!   `$N` (`placeholderRegex`, `\$(\d+)`, 1-based) is argument N, empty past the last argument,
//!   and the highest-numbered `$N` of the template takes argument N and every one after it,
//!   joined by spaces; `$ARGUMENTS` is the whole argument text. A template with neither gets the
//!   argument text appended after a blank line when it is not blank.
//! - `` !`cmd` `` is replaced by the command's output and `@path` attaches a file: promptd never
//!   runs or reads them (they are listed as directives and served as written).

use std::sync::LazyLock;

use regex::Regex;

use super::PlaceholderArgument;
use super::segment::{Key, Segment, Slot, TooLarge};

/// The argument holding everything typed after the command.
pub const ARGUMENTS: &str = "arguments";
const ALL: &str = "$ARGUMENTS";

static ARGS: LazyLock<Regex> = LazyLock::new(|| {
    // `argsRegex` of prompt.ts (its `i` flag changes nothing here).
    Regex::new(r#"(?:\[Image\s+\d+\]|"[^"]*"|'[^']*'|[^\s"']+)"#).expect("opencode args regex")
});

/// The words of an argument text as OpenCode splits them.
pub fn split_arguments(text: &str) -> Vec<String> {
    ARGS.find_iter(text)
        .map(|m| {
            // `quoteTrimRegex`, `/^["']|["']$/g`: at most one quote off each end.
            let w = m.as_str();
            let w = w.strip_prefix(['"', '\'']).unwrap_or(w);
            let w = w.strip_suffix(['"', '\'']).unwrap_or(w);
            w.to_string()
        })
        .collect()
}

/// One placeholder of a body: `$ARGUMENTS`, or `$N` with its number.
enum Placeholder {
    All,
    Numbered(usize),
}

/// The placeholders of a body with their byte ranges, in order.
fn placeholders(body: &str) -> Vec<(usize, usize, Placeholder)> {
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0 {
            let end = i + 1 + digits;
            // A number too large for any argument list is past the last argument.
            let n = body[i + 1..end].parse::<usize>().unwrap_or(usize::MAX);
            out.push((i, end, Placeholder::Numbered(n)));
            i = end;
        } else if body[i..].starts_with(ALL) {
            out.push((i, i + ALL.len(), Placeholder::All));
            i += ALL.len();
        } else {
            i += 1;
        }
    }
    out
}

/// The body cut at `$ARGUMENTS` and `$N`, each a slot of the argument `arguments`.
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut last = 0;
    for (start, end, _) in placeholders(body) {
        if start > last {
            out.push(Segment::Text(&body[last..start]));
        }
        out.push(Segment::Slot {
            raw: &body[start..end],
            slot: Slot {
                key: Key::Arg(ARGUMENTS.into()),
                keep_when_missing: false,
                required: false,
                hint: None,
            },
        });
        last = end;
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// Every OpenCode command takes the text typed after it: in its placeholders, else appended.
pub fn arguments(body: &str, body_line: usize) -> Vec<PlaceholderArgument> {
    let first = placeholders(body).first().map(|(start, _, _)| *start);
    vec![PlaceholderArgument {
        name: ARGUMENTS.into(),
        required: false,
        description: Some(if first.is_some() {
            "the text typed after the command".into()
        } else {
            "the text typed after the command (appended after a blank line)".into()
        }),
        line: first.map_or(body_line, |at| super::line_at(body, at, body_line)),
    }]
}

/// Substitutes a body as OpenCode does; `wrap` sees each inserted value. Returns the text and
/// the arguments used. Text outside the placeholders is kept byte for byte (OpenCode also trims
/// the template; promptd serves the file as written).
pub fn substitute_wrapped(
    body: &str,
    lookup: impl Fn(&str) -> Option<String>,
    wrap: impl Fn(&str, &str, String) -> String,
    max_len: usize,
) -> Result<(String, Vec<String>), TooLarge> {
    let body = body.trim();
    let given = lookup(ARGUMENTS);
    let text_args = given.clone().unwrap_or_default();
    let words = split_arguments(&text_args);
    let found = placeholders(body);
    // `last`: the highest `$N` of the template (0 when there is none).
    let last = found
        .iter()
        .filter_map(|(_, _, p)| match p {
            Placeholder::Numbered(n) => Some(*n),
            Placeholder::All => None,
        })
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let push = |out: &mut String, s: &str| {
        if out.len() + s.len() > max_len {
            return Err(TooLarge { limit: max_len });
        }
        out.push_str(s);
        Ok(())
    };
    let mut at = 0;
    for (start, end, p) in &found {
        push(&mut out, &body[at..*start])?;
        at = *end;
        let value = match p {
            Placeholder::All => text_args.clone(),
            Placeholder::Numbered(n) => numbered(*n, last, &words),
        };
        if given.is_some() {
            push(&mut out, &wrap(ARGUMENTS, &body[*start..*end], value))?;
        } else {
            push(&mut out, &value)?;
        }
    }
    push(&mut out, &body[at..])?;
    let appended = found.is_empty() && !text_args.trim().is_empty();
    if appended {
        // After the body's text, before its trailing whitespace (which OpenCode trims).
        let cut = out.trim_end().len();
        let tail = out.split_off(cut);
        push(&mut out, "\n\n")?;
        push(&mut out, &wrap(ARGUMENTS, "", text_args.clone()))?;
        push(&mut out, &tail)?;
    }
    let used = if given.is_some() && (appended || !found.is_empty()) {
        vec![ARGUMENTS.to_string()]
    } else {
        Vec::new()
    };
    Ok((out, used))
}

/// `$n` as prompt.ts replaces it: `argIndex = n - 1`; past the last argument it is empty; the
/// highest placeholder takes the rest (`args.slice(argIndex).join(" ")`). `$0` reads
/// `args[-1]`, which JavaScript writes as `undefined`, unless `$0` is the highest, when
/// `args.slice(-1)` is the last argument.
fn numbered(n: usize, last: usize, words: &[String]) -> String {
    if n == 0 {
        return if last == 0 {
            words.last().cloned().unwrap_or_default()
        } else {
            "undefined".into()
        };
    }
    let index = n - 1;
    if index >= words.len() {
        String::new()
    } else if n == last {
        words[index..].join(" ")
    } else {
        words[index].clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str, args: Option<&str>) -> String {
        substitute_wrapped(
            body,
            |k| (k == ARGUMENTS).then(|| args.map(str::to_string)).flatten(),
            |_, _, v| v,
            1 << 20,
        )
        .unwrap()
        .0
    }

    #[test]
    fn splits_like_opencode() {
        assert_eq!(
            split_arguments(r#"one "two words" 'three x' [Image 1] it's"#),
            vec!["one", "two words", "three x", "[Image 1]", "it", "s"]
        );
    }

    #[test]
    fn the_highest_placeholder_takes_the_rest() {
        assert_eq!(
            run("a=$1 b=$2 all=$ARGUMENTS", Some("x y z")),
            "a=x b=y z all=x y z"
        );
        assert_eq!(run("$1|$3", Some("x y z w")), "x|z w");
        assert_eq!(run("$1|$2|$3", Some("x")), "x||");
        assert_eq!(run("$0 $2", Some("x y")), "undefined y");
        assert_eq!(run("$0", Some("x y")), "y");
    }

    #[test]
    fn without_placeholders_the_arguments_are_appended() {
        assert_eq!(
            run("Review this.\n", Some("src/a.rs")),
            "Review this.\n\nsrc/a.rs"
        );
        // The template is the body trimmed (`command.ts`).
        assert_eq!(run("\nReview this.\n", Some("  ")), "Review this.");
        assert_eq!(run("Review this.\n", None), "Review this.");
    }

    #[test]
    fn not_given_is_empty_and_other_dollars_are_text() {
        assert_eq!(
            run("[$ARGUMENTS] [$1] $HOME $$ $", None),
            "[] [] $HOME $$ $"
        );
    }

    #[test]
    fn folders_names_and_directives() {
        use crate::dialect::{Dialect, directives, name_from_path};
        use std::path::Path;
        for folder in ["/r/.opencode/command", "/r/.opencode/commands"] {
            assert_eq!(
                Dialect::of_folder(Path::new(folder)),
                Some(Dialect::Opencode)
            );
        }
        assert_eq!(
            Dialect::recognise(Some(Dialect::Opencode), "team/review.md"),
            Dialect::Opencode
        );
        assert_eq!(name_from_path("team/review.md"), "team:review");
        assert!(Dialect::Opencode.accepts("a.md") && !Dialect::Opencode.accepts("a.mdx"));
        assert_eq!(
            directives(Dialect::Opencode, "Diff: !`git diff`\nSee @src/lib.rs\n"),
            vec!["shell", "file"]
        );
    }

    #[test]
    fn one_argument_with_its_line() {
        let args = arguments("intro\n\nDo $1 now", 5);
        assert_eq!(args.len(), 1);
        assert_eq!(args[0].name, "arguments");
        assert_eq!(args[0].line, 7);
        assert_eq!(arguments("no placeholders", 3)[0].line, 3);
    }
}
