//! A body cut into [`Segment`]s: text served verbatim and slots a render replaces, and the
//! substitution every dialect shares. Each dialect's module cuts its own syntax into these.

use std::collections::HashMap;

use serde_json::Value;

/// The text of a substitution would pass its size limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("substituted text would be larger than {limit} bytes")]
pub struct TooLarge {
    pub limit: usize,
}

/// A piece of a body: text served verbatim, or a placeholder a render replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Slot { raw: &'a str, slot: Slot },
}

/// What a placeholder stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub key: Key,
    /// A placeholder whose argument is not supplied stays verbatim (else it becomes empty).
    pub keep_when_missing: bool,
    /// The argument must be supplied.
    pub required: bool,
    /// The argument's description written in the placeholder (`${input:x:description}`).
    pub hint: Option<String>,
}

/// The value a slot takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// The value of an argument.
    Arg(String),
    /// Word `index` (counted from 0) of an argument split like the shell.
    Word { of: &'static str, index: usize },
    /// The words of an argument split like the shell, joined by single spaces.
    Joined { of: &'static str },
    /// A fixed text (`$$` is `$`).
    Literal(&'static str),
}

impl Key {
    /// The argument this key reads, if any.
    pub fn argument(&self) -> Option<&str> {
        match self {
            Key::Arg(a) => Some(a),
            Key::Word { of, .. } | Key::Joined { of } => Some(of),
            Key::Literal(_) => None,
        }
    }
}

/// Splits an argument string into words like the shell (quotes group, backslashes escape);
/// text the shell could not split (an open quote) is split at whitespace.
pub fn shell_words(s: &str) -> Vec<String> {
    shlex::split(s).unwrap_or_else(|| s.split_whitespace().map(str::to_string).collect())
}

/// Replaces each slot with its value; returns the text and the arguments used. The text never
/// grows past `max_len` bytes.
pub fn substitute(
    segments: &[Segment<'_>],
    lookup: impl Fn(&str) -> Option<String>,
    max_len: usize,
) -> Result<(String, Vec<String>), TooLarge> {
    substitute_wrapped(segments, lookup, |_, _, v| v, max_len)
}

/// Like [`substitute`], passing each slot's final value (a word of an argument once split),
/// the argument it comes from and the placeholder's text (a slice of the body) through `wrap`
/// before it is written.
pub fn substitute_wrapped(
    segments: &[Segment<'_>],
    lookup: impl Fn(&str) -> Option<String>,
    wrap: impl Fn(&str, &str, String) -> String,
    max_len: usize,
) -> Result<(String, Vec<String>), TooLarge> {
    let mut text = String::new();
    let mut used: Vec<String> = Vec::new();
    let mut words: HashMap<&str, Option<Vec<String>>> = HashMap::new();
    let push = |text: &mut String, s: &str| {
        if text.len() + s.len() > max_len {
            return Err(TooLarge { limit: max_len });
        }
        text.push_str(s);
        Ok(())
    };
    for seg in segments {
        let (raw, slot) = match seg {
            Segment::Text(t) => {
                push(&mut text, t)?;
                continue;
            }
            Segment::Slot { raw, slot } => (raw, slot),
        };
        // A word that was not typed is missing; when the argument was given at all, the slot
        // still counts as using it.
        let (value, uses) = match &slot.key {
            Key::Literal(s) => (Some((*s).to_string()), false),
            Key::Arg(name) => {
                let v = lookup(name);
                let given = v.is_some();
                (v, given)
            }
            Key::Word { of, index } => {
                let words = words
                    .entry(of)
                    .or_insert_with(|| lookup(of).map(|v| shell_words(&v)));
                let word = words.as_ref().and_then(|w| w.get(*index).cloned());
                let given = words.is_some() && (word.is_some() || !slot.keep_when_missing);
                (word, given)
            }
            Key::Joined { of } => {
                let words = words
                    .entry(of)
                    .or_insert_with(|| lookup(of).map(|v| shell_words(&v)));
                let given = words.is_some();
                (words.as_ref().map(|w| w.join(" ")), given)
            }
        };
        match value {
            Some(v) => {
                let v = match slot.key.argument() {
                    Some(a) => wrap(a, raw, v),
                    None => v,
                };
                push(&mut text, &v)?;
            }
            None if slot.keep_when_missing => push(&mut text, raw)?,
            None => {}
        }
        if uses
            && let Some(a) = slot.key.argument()
            && !used.iter().any(|u| u == a)
        {
            used.push(a.to_string());
        }
    }
    Ok((text, used))
}

/// How a value appears in substituted text: strings raw, null as nothing, everything else as
/// JSON.
pub fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
