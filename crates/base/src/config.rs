//! The project configuration file, `.ado-mcp-config.json`.
//!
//! This module owns finding, reading (under the default `limits.maxPromptFileBytes`), parsing and
//! validating the config file, and turning it into the *config layer* of template variables:
//! the file's own top-level keys, those of the ado-mcp config format it shares ([`KNOWN_KEYS`]),
//! are exposed to templates in snake_case (`areaPath` → `area_path`), and the free `variables`
//! map is exposed as-is. Other modules keep their settings in the same file under a key of
//! their own ([`SECTION_KEYS`]); those sections are kept as raw JSON for their modules to
//! deserialize ([`ProjectConfig::section_as`]). The `limits` section is parsed here
//! ([`ProjectConfig::limits`]): `limits` sits below the config, whose own file is read under a
//! limit.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::limits::{CappedReadError, Limits, MAX_PROMPT_FILE_BYTES, read_text_capped};

/// File name looked up in the current directory when no path is given.
pub const CONFIG_FILE_NAME: &str = ".ado-mcp-config.json";

/// The top-level keys of the ado-mcp config format, which this file shares: (key in the file,
/// variable name in templates).
pub const KNOWN_KEYS: &[(&str, &str)] = &[
    ("organization", "organization"),
    ("project", "project"),
    ("areaPath", "area_path"),
    ("iterationPath", "iteration_path"),
    ("defaultWorkItemType", "default_work_item_type"),
    ("defaultAssignedTo", "default_assigned_to"),
    ("defaultPriority", "default_priority"),
];

/// Sections owned by other modules; present keys are not "unknown".
pub const SECTION_KEYS: &[&str] = &[
    "variables",
    "rag",
    "guard",
    "compose",
    "test",
    "limits",
    "serve",
    "workspace",
    "prompts",
    "tools",
    "$schema",
];

/// Errors reading the config file. Each names the file; parse errors carry line and column.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read config file: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: malformed JSON: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: the config file must hold a JSON object, found {found}")]
    NotAnObject { path: PathBuf, found: &'static str },
    #[error("{path}: `variables` must be an object, found {found}")]
    VariablesNotAnObject { path: PathBuf, found: &'static str },
    #[error(transparent)]
    Capped(CappedReadError),
    #[error("{path}: `limits`: {message}")]
    InvalidLimits { path: PathBuf, message: String },
    /// A section that does not parse; the message names the file and the key.
    #[error("{message}")]
    InvalidSection { path: PathBuf, message: String },
}

/// The parsed config file: template variables plus raw sections for other modules.
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    /// Where the file was read from (`None` when no file exists).
    pub path: Option<PathBuf>,
    /// Variables exposed to templates (snake_case well-known keys, then `variables`).
    pub variables: Map<String, Value>,
    /// The whole file, for modules that read their own section.
    pub raw: Map<String, Value>,
    /// Non-fatal problems, such as unknown keys.
    pub warnings: Vec<String>,
}

impl ProjectConfig {
    /// Loads the config from an explicit path (must exist), else `PROMPTD_CONFIG`, else
    /// `.ado-mcp-config.json` in `cwd` if present. No file at all is an empty config.
    pub fn discover(explicit: Option<&Path>, cwd: &Path) -> Result<ProjectConfig, ConfigError> {
        if let Some(path) = explicit {
            return Self::load(path);
        }
        if let Some(env) = std::env::var_os("PROMPTD_CONFIG").filter(|v| !v.is_empty()) {
            return Self::load(Path::new(&env));
        }
        let default = cwd.join(CONFIG_FILE_NAME);
        if default.is_file() {
            return Self::load(&default);
        }
        Ok(ProjectConfig::default())
    }

    /// Reads and parses one config file. The file is read under the default
    /// `limits.maxPromptFileBytes` (a config cannot raise the cap on its own size).
    pub fn load(path: &Path) -> Result<ProjectConfig, ConfigError> {
        let cap = Limits::default().max_prompt_file_bytes;
        let text = read_text_capped(path, cap, MAX_PROMPT_FILE_BYTES).map_err(|e| match e {
            CappedReadError::Io { source, .. } => ConfigError::Read {
                path: path.to_path_buf(),
                source,
            },
            other => ConfigError::Capped(other),
        })?;
        Self::parse(&text, Some(path))
    }

    /// Parses config text; `path` is used in messages.
    pub fn parse(text: &str, path: Option<&Path>) -> Result<ProjectConfig, ConfigError> {
        let shown = path.map_or_else(|| PathBuf::from("<config>"), Path::to_path_buf);
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Malformed {
            path: shown.clone(),
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })?;
        let Value::Object(raw) = value else {
            return Err(ConfigError::NotAnObject {
                path: shown,
                found: json_kind(&value),
            });
        };
        let mut variables = Map::new();
        let mut warnings = Vec::new();
        for (key, value) in &raw {
            if let Some((_, var)) = KNOWN_KEYS.iter().find(|(k, _)| k == key) {
                variables.insert((*var).to_string(), value.clone());
            } else if !SECTION_KEYS.contains(&key.as_str()) {
                warnings.push(format!(
                    "{}: unknown config key `{key}` (known: {}, variables)",
                    shown.display(),
                    KNOWN_KEYS
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        match raw.get("variables") {
            None | Some(Value::Null) => {}
            Some(Value::Object(free)) => {
                for (k, v) in free {
                    variables.insert(k.clone(), v.clone());
                }
            }
            Some(other) => {
                return Err(ConfigError::VariablesNotAnObject {
                    path: shown,
                    found: json_kind(other),
                });
            }
        }
        for w in &warnings {
            tracing::warn!("{w}");
        }
        Ok(ProjectConfig {
            path: path.map(Path::to_path_buf),
            variables,
            raw,
            warnings,
        })
    }

    /// The raw section a module owns (`"rag"`, `"guard"`, ...), if present.
    pub fn section(&self, key: &str) -> Option<&Value> {
        self.raw.get(key)
    }

    /// The resource limits: the `limits` section over the defaults.
    /// Each limit is range-checked ([`Limits::check`]).
    pub fn limits(&self) -> Result<Limits, String> {
        let limits: Limits = self.section_as(crate::limits::SECTION)?;
        limits.check()?;
        Ok(limits)
    }

    /// Deserializes a module's section, falling back to its defaults when absent.
    pub fn section_as<T: serde::de::DeserializeOwned + Default>(
        &self,
        key: &str,
    ) -> Result<T, String> {
        match self.raw.get(key) {
            None | Some(Value::Null) => Ok(T::default()),
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                let file = self
                    .path
                    .as_ref()
                    .map_or_else(|| "<config>".to_string(), |p| p.display().to_string());
                format!("{file}: section `{key}`: {e}")
            }),
        }
    }
}

/// A JSON value's kind, for messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A serde_json error message without the " at line X column Y" it appends, for callers that
/// report the position separately.
pub fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_known_keys_in_snake_case_and_free_variables() {
        let cfg = ProjectConfig::parse(
            r#"{"organization":"acme","areaPath":"Acme\\Web","variables":{"team":"web"}}"#,
            None,
        )
        .unwrap();
        assert_eq!(cfg.variables["organization"], "acme");
        assert_eq!(cfg.variables["area_path"], "Acme\\Web");
        assert_eq!(cfg.variables["team"], "web");
        assert!(cfg.warnings.is_empty());
    }

    #[test]
    fn unknown_keys_warn() {
        let cfg = ProjectConfig::parse(r#"{"projekt":"x"}"#, None).unwrap();
        assert_eq!(cfg.warnings.len(), 1);
        assert!(cfg.warnings[0].contains("`projekt`"), "{}", cfg.warnings[0]);
    }

    #[test]
    fn limits_section_overrides_defaults_and_rejects_unknown_keys() {
        let cfg = ProjectConfig::parse(r#"{"limits":{"maxBatch":5}}"#, None).unwrap();
        let limits = cfg.limits().unwrap();
        assert_eq!(limits.max_batch, 5);
        assert_eq!(limits.max_render_bytes, Limits::default().max_render_bytes);
        let bad = ProjectConfig::parse(r#"{"limits":{"maxBatsh":5}}"#, None).unwrap();
        let err = bad.limits().unwrap_err();
        assert!(err.contains("maxBatsh"), "{err}");
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let err = ProjectConfig::parse("{\n  \"project\": \"x\",\n}", Some(Path::new("c.json")))
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("c.json:3:1: malformed JSON"), "{msg}");
    }
}
