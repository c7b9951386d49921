//! VS Code / Copilot prompt files (`*.prompt.md`): `${input:name}`,
//! `${input:name:placeholder}` and `${input:name|choice}` are required arguments (the placeholder,
//! else the choice, describes them); the
//! editor variables (`${file}`, `${selection}`, …) are optional arguments, left verbatim for the
//! client when not supplied.

use std::sync::LazyLock;

use regex::Regex;

use super::segment::{Key, Segment, Slot};

/// The editor variables VS Code fills in, with what each holds.
pub const VARIABLES: &[(&str, &str)] = &[
    ("selection", "the text selected in the editor"),
    ("selectedText", "the text selected in the editor"),
    ("file", "the path of the active file"),
    ("fileBasename", "the file name of the active file"),
    ("fileDirname", "the folder of the active file"),
    (
        "fileBasenameNoExtension",
        "the file name of the active file without its extension",
    ),
    ("workspaceFolder", "the path of the workspace folder"),
    (
        "workspaceFolderBasename",
        "the name of the workspace folder",
    ),
];

static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\$\{(?:input:([A-Za-z_][A-Za-z0-9_-]*)(?:\|([^}:\n]*))?(?::([^}\n]*))?|([A-Za-z]+))\}",
    )
    .expect("vscode placeholder regex")
});

/// The body cut at `${input:…}` and the editor variables.
pub fn segments(body: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut last = 0;
    for c in PLACEHOLDER.captures_iter(body) {
        let m = c.get(0).expect("whole match");
        let slot = if let Some(name) = c.get(1) {
            Slot {
                key: Key::Arg(name.as_str().to_string()),
                keep_when_missing: true,
                required: true,
                hint: c
                    .get(3)
                    .or_else(|| c.get(2))
                    .map(|p| p.as_str().trim().to_string())
                    .filter(|p| !p.is_empty()),
            }
        } else {
            let var = &c[4];
            if !VARIABLES.iter().any(|(v, _)| *v == var) {
                continue;
            }
            Slot {
                key: Key::Arg(var.to_string()),
                keep_when_missing: true,
                required: false,
                hint: None,
            }
        };
        if m.start() > last {
            out.push(Segment::Text(&body[last..m.start()]));
        }
        out.push(Segment::Slot {
            raw: m.as_str(),
            slot,
        });
        last = m.end();
    }
    if last < body.len() {
        out.push(Segment::Text(&body[last..]));
    }
    out
}

/// The description of an editor variable.
pub fn variable_description(name: &str) -> Option<String> {
    VARIABLES
        .iter()
        .find(|(v, _)| *v == name)
        .map(|(_, d)| format!("VS Code variable: {d} (left as `${{{name}}}` when not given)"))
}
