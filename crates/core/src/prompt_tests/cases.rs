//! Test cases: where they are declared, how they are read, and where each one's snapshot lives.
//!
//! Two places declare cases. A prompt file on disk may list `examples: [{name, args, now?,
//! config?}]` in its frontmatter (the key lands in `PromptTemplate.metadata`); those snapshots
//! live in a `snapshots/` folder next to the prompt file. A case file `<cases>/*.yaml` (default
//! `tests/prompts/`) holds `{prompt, cases: [...]}`; those snapshots live in
//! `<cases>/snapshots/`. Either way a snapshot is named `<prompt>@<case>.snap`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use saphyr::{MarkedYaml, YamlData};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::PromptTestError;
use crate::registry::Registry;
use crate::registry::frontmatter::{load_marked, to_json};

/// The folder, next to the cases, that holds their snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// One case as written in a case file or in frontmatter `examples`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// Unique per prompt; part of the snapshot file name.
    pub name: String,
    /// Arguments, as a user would pass them (coerced to the declared types).
    #[serde(default)]
    pub args: Map<String, Value>,
    /// The frozen clock of this case (RFC 3339 or `YYYY-MM-DD`); default: [`super::DEFAULT_NOW`].
    #[serde(default)]
    pub now: Option<String>,
    /// The config this case renders with, *instead of* the project's config file.
    #[serde(default)]
    pub config: Option<Map<String, Value>>,
    /// Texts the snapshot text must contain (a string or a list).
    #[serde(default, deserialize_with = "one_or_many")]
    pub contains: Vec<String>,
    /// Texts the snapshot text must not contain (a string or a list).
    #[serde(default, deserialize_with = "one_or_many")]
    pub not_contains: Vec<String>,
    /// Upper bound on the rendered text's `cl100k_base` token count.
    #[serde(default)]
    pub max_tokens: Option<usize>,
}

fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

/// A case ready to run: which prompt, how, and where its snapshot is.
#[derive(Debug, Clone)]
pub struct TestCase {
    pub prompt: String,
    pub spec: CaseSpec,
    /// The case file or prompt file that declares the case.
    pub declared_in: PathBuf,
    /// The accepted snapshot, `<snapshots>/<prompt>@<case>.snap`.
    pub snapshot: PathBuf,
}

impl TestCase {
    /// `<prompt>@<case>`: what `--filter` matches and what the report shows.
    pub fn id(&self) -> String {
        format!("{}@{}", self.prompt, self.spec.name)
    }
}

/// Everything found: runnable cases, and declarations that could not be read.
#[derive(Debug, Default)]
pub struct Discovery {
    pub cases: Vec<TestCase>,
    /// Broken case files, examples or duplicate names; each counts as one failure.
    pub problems: Vec<PromptTestError>,
}

/// Finds every case: frontmatter `examples` of prompts served from folders on disk (built-in
/// prompts have no folder to keep snapshots in; test them from case files), then each
/// `*.yaml` / `*.yml` file of `cases_dir`, in file-name order. With `only`, the frontmatter
/// of that prompt alone is read (a page of one prompt in a registry of 100,000 need not look
/// at the others); case files are read whole either way.
pub fn discover(
    registry: &Registry,
    cases_dir: Option<&Path>,
    only: Option<&str>,
) -> Result<Discovery, PromptTestError> {
    let mut found = Discovery::default();
    let prompts: Box<dyn Iterator<Item = &std::sync::Arc<crate::registry::PromptTemplate>>> =
        match only {
            Some(name) => Box::new(registry.get(name).into_iter()),
            None => Box::new(registry.prompts()),
        };
    for prompt in prompts {
        let Some(examples) = prompt.metadata.get("examples") else {
            continue;
        };
        if prompt.path.starts_with("builtin:") {
            continue;
        }
        let file = PathBuf::from(&prompt.path);
        let snapshots = file
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(SNAPSHOTS_DIR);
        let items = match examples {
            Value::Array(items) => items.as_slice(),
            _ => {
                found.problems.push(PromptTestError::Examples {
                    path: prompt.path.clone(),
                    message: "`examples` must be a list of cases {name, args, now?, config?}"
                        .into(),
                });
                continue;
            }
        };
        for (i, item) in items.iter().enumerate() {
            match parse_case(item.clone()) {
                Ok(spec) => found.cases.push(TestCase {
                    snapshot: snapshot_path(&snapshots, &prompt.name, &spec.name),
                    prompt: prompt.name.clone(),
                    spec,
                    declared_in: file.clone(),
                }),
                Err(message) => found.problems.push(PromptTestError::Examples {
                    path: prompt.path.clone(),
                    message: format!("examples[{i}]: {message}"),
                }),
            }
        }
    }
    if let Some(dir) = cases_dir {
        for file in case_files(dir)? {
            match load_case_file(&file) {
                Ok(cases) => found.cases.extend(cases),
                Err(e) => found.problems.push(e),
            }
        }
    }
    // Two cases writing one snapshot would overwrite each other: the later one is reported.
    let mut seen: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    let mut unique = Vec::with_capacity(found.cases.len());
    for case in std::mem::take(&mut found.cases) {
        if let Some(first) = seen.get(&case.snapshot) {
            found.problems.push(PromptTestError::DuplicateCase {
                id: case.id(),
                path: case.declared_in.display().to_string(),
                first: first.display().to_string(),
            });
            continue;
        }
        seen.insert(case.snapshot.clone(), case.declared_in.clone());
        unique.push(case);
    }
    found.cases = unique;
    Ok(found)
}

fn snapshot_path(dir: &Path, prompt: &str, case: &str) -> PathBuf {
    dir.join(format!("{prompt}@{case}.snap"))
}

/// The case files of a folder, sorted.
fn case_files(dir: &Path) -> Result<Vec<PathBuf>, PromptTestError> {
    let io = |source| PromptTestError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if is_yaml && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Converts one case (already JSON) and checks its name.
fn parse_case(value: Value) -> Result<CaseSpec, String> {
    if !value.is_object() {
        return Err(format!(
            "expected a case {{name, args?, now?, config?, contains?, not_contains?, max_tokens?}}, found {}",
            promptd_base::config::json_kind(&value)
        ));
    }
    let spec: CaseSpec = serde_json::from_value(value).map_err(|e| e.to_string())?;
    check_case_name(&spec.name)?;
    Ok(spec)
}

/// Case names become file names: one safe path segment.
fn check_case_name(name: &str) -> Result<(), String> {
    if crate::registry::is_safe_segment(name) {
        Ok(())
    } else {
        Err(format!(
            "invalid case name `{name}`: use letters, digits, `_`, `-` and `.` only (it names the snapshot file)"
        ))
    }
}

/// Reads one case file `{prompt, cases: [...]}`; errors name the file line of the fault.
pub fn load_case_file(path: &Path) -> Result<Vec<TestCase>, PromptTestError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| PromptTestError::Io {
        path: shown.clone(),
        source,
    })?;
    let err = |node: Option<&MarkedYaml<'_>>, message: String| {
        let (line, column) = node.map_or((1, 1), |n| (n.span.start.line(), n.span.start.col() + 1));
        PromptTestError::CaseFile {
            path: shown.clone(),
            line,
            column,
            message,
        }
    };
    let docs = match load_marked(&text) {
        Ok(docs) => docs,
        Err(e) => {
            return Err(PromptTestError::CaseFile {
                path: shown,
                line: e.marker().line(),
                column: e.marker().col() + 1,
                message: format!("invalid YAML: {}", e.info()),
            });
        }
    };
    let Some(root) = docs.first() else {
        return Err(err(
            None,
            "empty case file: expected {prompt, cases}".into(),
        ));
    };
    let YamlData::Mapping(map) = &root.data else {
        return Err(err(
            Some(root),
            "a case file is a mapping {prompt, cases}".into(),
        ));
    };
    let mut prompt = None;
    let mut cases = None;
    for (k, v) in map {
        match to_json(k).as_str() {
            Some("prompt") => match to_json(v) {
                Value::String(s) => prompt = Some(s),
                _ => return Err(err(Some(v), "`prompt` must be a prompt name".into())),
            },
            Some("cases") => match &v.data {
                YamlData::Sequence(items) => cases = Some(items),
                _ => return Err(err(Some(v), "`cases` must be a list".into())),
            },
            _ => {
                return Err(err(
                    Some(k),
                    format!(
                        "unknown key `{}` (expected `prompt` and `cases`)",
                        to_json(k).as_str().unwrap_or("?")
                    ),
                ));
            }
        }
    }
    let Some(prompt) = prompt else {
        return Err(err(Some(root), "missing `prompt`".into()));
    };
    let snapshots = path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(SNAPSHOTS_DIR);
    let mut out = Vec::new();
    for (i, node) in cases.into_iter().flatten().enumerate() {
        let spec =
            parse_case(to_json(node)).map_err(|m| err(Some(node), format!("cases[{i}]: {m}")))?;
        out.push(TestCase {
            snapshot: snapshot_path(&snapshots, &prompt, &spec.name),
            prompt: prompt.clone(),
            spec,
            declared_in: path.to_path_buf(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_takes_one_or_many() {
        let spec = parse_case(serde_json::json!({
            "name": "a", "contains": "x", "not_contains": ["y", "z"], "max_tokens": 10
        }))
        .unwrap();
        assert_eq!(spec.contains, ["x"]);
        assert_eq!(spec.not_contains, ["y", "z"]);
        assert_eq!(spec.max_tokens, Some(10));
    }

    #[test]
    fn unknown_fields_and_bad_names_are_errors() {
        let e = parse_case(serde_json::json!({"name": "a", "arg": {}})).unwrap_err();
        assert!(e.contains("unknown field `arg`"), "{e}");
        let e = parse_case(serde_json::json!({"name": "../x"})).unwrap_err();
        assert!(e.contains("invalid case name"), "{e}");
    }
}
