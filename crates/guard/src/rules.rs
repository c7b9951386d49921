//! Secret rules in gitleaks' TOML format: parsing, `[extend]` merging and compilation.
//!
//! This module owns the rule *model*: it reads a gitleaks-format file (`[[rules]]` with `id`,
//! `description`, `regex`, `secretGroup`, `entropy`, `keywords`, `path`, per-rule
//! `[[rules.allowlists]]` / legacy `[rules.allowlist]`, composite rules (`[[rules.required]]`
//! with `withinLines` / `withinColumns`, and `skipReport`), the global `[allowlist]` /
//! `[[allowlists]]`, and `[extend]` with `useDefault`, `path` and `disabledRules`), merges it over
//! promptd's built-in rules the way gitleaks merges over its default config, validates it, and
//! compiles every regex once. Errors name the file and line of the offending rule or value.
//! Matching itself lives in `scanner`.

use std::path::{Path, PathBuf};

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;
use toml::Spanned;

use super::GuardError;

/// promptd's own rule set, compiled into the binary.
pub(crate) const BUILTIN_RULES: &str = include_str!("builtin.toml");

/// Name used for the built-in rules in error messages.
const BUILTIN_NAME: &str = "<builtin rules>";

/// How deep `[extend] path` chains may go (gitleaks allows two levels as well).
const MAX_EXTEND_DEPTH: usize = 2;

// ------------------------------------------------------------------------------------------------
// Raw TOML shape (gitleaks' key names)
// ------------------------------------------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawConfig {
    #[serde(default)]
    extend: Option<RawExtend>,
    #[serde(default)]
    rules: Vec<Spanned<RawRule>>,
    #[serde(default)]
    allowlist: Option<Spanned<RawAllowlist>>,
    #[serde(default)]
    allowlists: Vec<Spanned<RawAllowlist>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawExtend {
    #[serde(default)]
    use_default: bool,
    #[serde(default)]
    path: Option<Spanned<String>>,
    #[serde(default)]
    disabled_rules: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRule {
    id: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    regex: Option<Spanned<String>>,
    #[serde(default)]
    secret_group: Option<Spanned<i64>>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    path: Option<Spanned<String>>,
    #[serde(default)]
    allowlist: Option<Spanned<RawAllowlist>>,
    #[serde(default)]
    allowlists: Vec<Spanned<RawAllowlist>>,
    /// Composite rules (gitleaks 8.28+): this rule reports only when each required rule also
    /// matches nearby.
    #[serde(default)]
    required: Vec<Spanned<RawRequired>>,
    /// An auxiliary rule: its matches serve `required`, never reported on their own.
    #[serde(default)]
    skip_report: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRequired {
    id: Option<String>,
    #[serde(default)]
    within_lines: Option<Spanned<i64>>,
    #[serde(default)]
    within_columns: Option<Spanned<i64>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawAllowlist {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    condition: Option<Spanned<String>>,
    #[serde(default)]
    regex_target: Option<Spanned<String>>,
    #[serde(default)]
    regexes: Vec<Spanned<String>>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<Spanned<String>>,
    /// Git commits: meaningless for text that is not from a commit, accepted for compatibility.
    #[serde(default)]
    commits: Vec<String>,
    #[serde(default)]
    target_rules: Vec<String>,
}

// ------------------------------------------------------------------------------------------------
// Merged, uncompiled model
// ------------------------------------------------------------------------------------------------

/// Where a value was written, for error messages.
#[derive(Clone, Debug)]
struct Origin {
    file: String,
    line: usize,
}

#[derive(Clone, Debug)]
struct Pattern {
    text: String,
    origin: Origin,
}

#[derive(Clone, Debug)]
struct RuleSpec {
    id: String,
    description: String,
    regex: Option<Pattern>,
    /// The group and where `secretGroup` was written.
    secret_group: Option<(usize, Origin)>,
    entropy: Option<f64>,
    keywords: Vec<String>,
    path: Option<Pattern>,
    allowlists: Vec<AllowlistSpec>,
    required: Vec<RequiredSpec>,
    skip_report: bool,
    origin: Origin,
}

#[derive(Clone, Debug)]
struct RequiredSpec {
    id: String,
    within_lines: Option<usize>,
    within_columns: Option<usize>,
    origin: Origin,
}

#[derive(Clone, Debug)]
struct AllowlistSpec {
    description: String,
    condition: Condition,
    target: RegexTarget,
    regexes: Vec<Pattern>,
    stopwords: Vec<String>,
    paths: Vec<Pattern>,
    commits_only: bool,
    target_rules: Vec<String>,
}

/// Rules and global allowlists in the order gitleaks would hold them after `[extend]`.
#[derive(Clone, Debug, Default)]
struct ConfigSpec {
    rules: Vec<RuleSpec>,
    global: Vec<AllowlistSpec>,
}

// ------------------------------------------------------------------------------------------------
// Compiled model used by the scanner
// ------------------------------------------------------------------------------------------------

/// How the checks of one allowlist combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Condition {
    /// Any check that matches allows the finding (gitleaks' default).
    Or,
    /// Every check that is present must match.
    And,
}

/// What an allowlist's `regexes` are matched against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegexTarget {
    Secret,
    Match,
    Line,
}

/// One compiled allowlist.
pub(crate) struct Allowlist {
    /// As written in the rules file (may be empty); shown by explanations.
    pub(crate) description: String,
    pub(crate) condition: Condition,
    pub(crate) target: RegexTarget,
    /// All of the allowlist's `regexes` as one set (any match allows), so that a finding costs
    /// one search here, not one per pattern.
    pub(crate) regexes: Option<RegexSet>,
    /// Lower-cased; a secret containing one is allowed.
    pub(crate) stopwords: Vec<String>,
    pub(crate) paths: Vec<Regex>,
    /// An allowlist made only of `commits` never applies to promptd's inputs.
    pub(crate) commits_only: bool,
    /// Global allowlists only: the rule ids it applies to (empty: all rules).
    pub(crate) target_rules: Vec<String>,
}

impl Allowlist {
    /// Whether this global allowlist applies to the rule `rule_id` (one without targets applies
    /// to every rule).
    pub(crate) fn targets(&self, rule_id: &str) -> bool {
        self.target_rules.is_empty() || self.target_rules.iter().any(|t| t == rule_id)
    }
}

/// One compiled rule.
pub(crate) struct Rule {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) regex: Option<Regex>,
    pub(crate) secret_group: Option<usize>,
    pub(crate) entropy: Option<f64>,
    /// Lower-cased.
    pub(crate) keywords: Vec<String>,
    pub(crate) path: Option<Regex>,
    pub(crate) allowlists: Vec<Allowlist>,
    /// Composite rule: every one of these must match near a finding for it to be reported.
    pub(crate) required: Vec<Required>,
    /// Auxiliary rule: matched only on behalf of composite rules.
    pub(crate) skip_report: bool,
}

/// One `[[rules.required]]` entry, resolved to the rule it names.
pub(crate) struct Required {
    /// Index of the required rule in [`RuleSet::rules`].
    pub(crate) rule: usize,
    /// At most this many lines between the two findings' first lines.
    pub(crate) within_lines: Option<usize>,
    /// On the same line, at most this many columns between the two findings' first columns.
    pub(crate) within_columns: Option<usize>,
}

/// The complete compiled rule set.
pub(crate) struct RuleSet {
    pub(crate) rules: Vec<Rule>,
    pub(crate) global: Vec<Allowlist>,
}

impl std::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleSet")
            .field(
                "rules",
                &self.rules.iter().map(|r| &r.id).collect::<Vec<_>>(),
            )
            .field("global_allowlists", &self.global.len())
            .finish()
    }
}

impl RuleSet {
    /// promptd's built-in rules alone.
    pub(crate) fn builtin() -> Result<RuleSet, GuardError> {
        let spec = parse_config(BUILTIN_RULES, BUILTIN_NAME, None, 0)?;
        compile(spec)
    }

    /// Rules from TOML text; `name` is used in error messages and `dir` resolves `[extend] path`.
    pub(crate) fn from_toml(
        text: &str,
        name: &str,
        dir: Option<&Path>,
    ) -> Result<RuleSet, GuardError> {
        let spec = parse_config(text, name, dir, 0)?;
        compile(spec)
    }
}

pub(crate) fn read_rules_file(path: &Path) -> Result<String, GuardError> {
    std::fs::read_to_string(path).map_err(|source| GuardError::RulesRead {
        path: path.to_path_buf(),
        source,
    })
}

// ------------------------------------------------------------------------------------------------
// Parsing and merging
// ------------------------------------------------------------------------------------------------

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn parse_config(
    text: &str,
    name: &str,
    dir: Option<&Path>,
    depth: usize,
) -> Result<ConfigSpec, GuardError> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => {
                let line = line_of(text, span.start);
                let line_start = text[..span.start.min(text.len())]
                    .rfind('\n')
                    .map_or(0, |i| i + 1);
                let column = text[line_start..span.start.min(text.len())].chars().count() + 1;
                (line, column)
            }
            None => (0, 0),
        };
        GuardError::RulesSyntax {
            file: name.to_string(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;

    let reader = SpecReader { text, name };
    let mut own = ConfigSpec::default();
    for raw_rule in &raw.rules {
        let rule = reader.rule(raw_rule)?;
        if own.rules.iter().any(|o| o.id == rule.id) {
            return Err(rule_error(
                &rule.origin,
                Some(&rule.id),
                "rule id is defined twice in this file".to_string(),
            ));
        }
        own.rules.push(rule);
    }
    for a in raw.allowlist.iter().chain(&raw.allowlists) {
        own.global.push(reader.allowlist(a, None)?);
    }
    let origin = |offset: usize| reader.origin(offset);

    let Some(extend) = raw.extend else {
        return Ok(own);
    };
    // Base configuration: another file, or the built-in rules.
    let mut base = if let Some(p) = &extend.path {
        if depth >= MAX_EXTEND_DEPTH {
            return Err(rule_error(
                &origin(p.span().start),
                None,
                format!("[extend] path nests deeper than {MAX_EXTEND_DEPTH} files"),
            ));
        }
        let mut target = PathBuf::from(p.get_ref());
        if target.is_relative()
            && let Some(dir) = dir
        {
            target = dir.join(target);
        }
        let text = read_rules_file(&target)?;
        parse_config(
            &text,
            &target.display().to_string(),
            target.parent(),
            depth + 1,
        )?
    } else if extend.use_default {
        parse_config(BUILTIN_RULES, BUILTIN_NAME, None, depth + 1)?
    } else {
        ConfigSpec::default()
    };
    base.rules
        .retain(|r| !extend.disabled_rules.contains(&r.id));
    Ok(merge(base, own))
}

/// Reads the raw tables of one rules file into specs, naming `file:line` of every problem.
struct SpecReader<'a> {
    text: &'a str,
    name: &'a str,
}

impl SpecReader<'_> {
    fn origin(&self, offset: usize) -> Origin {
        Origin {
            file: self.name.to_string(),
            line: line_of(self.text, offset),
        }
    }

    fn pattern(&self, s: &Spanned<String>) -> Pattern {
        Pattern {
            text: s.get_ref().clone(),
            origin: self.origin(s.span().start),
        }
    }

    fn rule(&self, raw_rule: &Spanned<RawRule>) -> Result<RuleSpec, GuardError> {
        let at = self.origin(raw_rule.span().start);
        let r = raw_rule.get_ref();
        let id = match r.id.as_deref().map(str::trim) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => return Err(rule_error(&at, None, "rule has no `id`".to_string())),
        };
        let secret_group = match &r.secret_group {
            None => None,
            Some(g) if *g.get_ref() < 0 => {
                return Err(rule_error(
                    &self.origin(g.span().start),
                    Some(&id),
                    format!("secretGroup must not be negative (got {})", g.get_ref()),
                ));
            }
            Some(g) if *g.get_ref() == 0 => None,
            Some(g) => Some((*g.get_ref() as usize, self.origin(g.span().start))),
        };
        let allowlists = r
            .allowlist
            .iter()
            .chain(&r.allowlists)
            .map(|a| self.allowlist(a, Some(&id)))
            .collect::<Result<Vec<_>, _>>()?;
        let required = r
            .required
            .iter()
            .map(|q| self.required(q, &id))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RuleSpec {
            description: r.description.clone().unwrap_or_default(),
            regex: r.regex.as_ref().map(|p| self.pattern(p)),
            secret_group,
            entropy: r.entropy.filter(|e| *e > 0.0),
            keywords: r.keywords.iter().map(|k| k.to_lowercase()).collect(),
            path: r.path.as_ref().map(|p| self.pattern(p)),
            allowlists,
            required,
            skip_report: r.skip_report,
            origin: at,
            id,
        })
    }

    fn required(&self, q: &Spanned<RawRequired>, id: &str) -> Result<RequiredSpec, GuardError> {
        let at = self.origin(q.span().start);
        let raw = q.get_ref();
        let Some(req_id) = raw.id.as_deref().map(str::trim).filter(|i| !i.is_empty()) else {
            return Err(rule_error(
                &at,
                Some(id),
                "[[rules.required]] has no `id`".to_string(),
            ));
        };
        let distance = |v: &Option<Spanned<i64>>, key: &str| match v {
            None => Ok(None),
            Some(n) if *n.get_ref() < 0 => Err(rule_error(
                &self.origin(n.span().start),
                Some(id),
                format!("{key} must not be negative (got {})", n.get_ref()),
            )),
            Some(n) => Ok(Some(*n.get_ref() as usize)),
        };
        Ok(RequiredSpec {
            id: req_id.to_string(),
            within_lines: distance(&raw.within_lines, "withinLines")?,
            within_columns: distance(&raw.within_columns, "withinColumns")?,
            origin: at,
        })
    }

    fn allowlist(
        &self,
        a: &Spanned<RawAllowlist>,
        rule: Option<&str>,
    ) -> Result<AllowlistSpec, GuardError> {
        let at = self.origin(a.span().start);
        let raw = a.get_ref();
        let condition = match &raw.condition {
            None => Condition::Or,
            Some(c) => match c.get_ref().trim().to_ascii_uppercase().as_str() {
                "" | "OR" => Condition::Or,
                "AND" | "&&" => Condition::And,
                other => {
                    return Err(rule_error(
                        &self.origin(c.span().start),
                        rule,
                        format!("allowlist condition must be \"OR\" or \"AND\", not \"{other}\""),
                    ));
                }
            },
        };
        let target = match &raw.regex_target {
            None => RegexTarget::Secret,
            Some(t) => match t.get_ref().trim().to_ascii_lowercase().as_str() {
                "" | "secret" => RegexTarget::Secret,
                "match" => RegexTarget::Match,
                "line" => RegexTarget::Line,
                other => {
                    return Err(rule_error(
                        &self.origin(t.span().start),
                        rule,
                        format!(
                            "allowlist regexTarget must be \"secret\", \"match\" or \"line\", not \"{other}\""
                        ),
                    ));
                }
            },
        };
        let commits_only =
            raw.regexes.is_empty() && raw.stopwords.is_empty() && raw.paths.is_empty();
        if commits_only && raw.commits.is_empty() {
            return Err(rule_error(
                &at,
                rule,
                "allowlist has no regexes, stopwords, paths or commits".to_string(),
            ));
        }
        Ok(AllowlistSpec {
            description: raw.description.clone().unwrap_or_default(),
            condition,
            target,
            regexes: raw.regexes.iter().map(|p| self.pattern(p)).collect(),
            stopwords: raw.stopwords.iter().map(|s| s.to_lowercase()).collect(),
            paths: raw.paths.iter().map(|p| self.pattern(p)).collect(),
            commits_only,
            target_rules: raw.target_rules.clone(),
        })
    }
}

/// gitleaks' `extend`: rules of the extending file override fields of a base rule with the same
/// id (keywords, tags and allowlists are appended); base rules it does not name are kept;
/// global allowlists add up.
fn merge(base: ConfigSpec, own: ConfigSpec) -> ConfigSpec {
    let mut rules = base.rules;
    for rule in own.rules {
        match rules.iter_mut().find(|b| b.id == rule.id) {
            Some(b) => {
                if !rule.description.is_empty() {
                    b.description = rule.description;
                }
                if rule.regex.is_some() {
                    b.regex = rule.regex;
                }
                if rule.secret_group.is_some() {
                    b.secret_group = rule.secret_group;
                }
                if rule.entropy.is_some() {
                    b.entropy = rule.entropy;
                }
                if rule.path.is_some() {
                    b.path = rule.path;
                }
                for k in rule.keywords {
                    if !b.keywords.contains(&k) {
                        b.keywords.push(k);
                    }
                }
                b.allowlists.extend(rule.allowlists);
                if !rule.required.is_empty() {
                    b.required = rule.required;
                }
                b.skip_report |= rule.skip_report;
                b.origin = rule.origin;
            }
            None => rules.push(rule),
        }
    }
    let mut global = base.global;
    global.extend(own.global);
    ConfigSpec { rules, global }
}

// ------------------------------------------------------------------------------------------------
// Compilation
// ------------------------------------------------------------------------------------------------

fn rule_error(origin: &Origin, rule: Option<&str>, message: String) -> GuardError {
    GuardError::RuleInvalid {
        file: origin.file.clone(),
        line: origin.line,
        rule: rule.map(str::to_string),
        message,
    }
}

/// Compiles a pattern the way gitleaks' Go regexes behave: `\w`, `\d`, `\s`, `\b` and `(?i)` are
/// ASCII, and a match may run over bytes that are not valid UTF-8.
fn compile_regex(p: &Pattern, rule: Option<&str>, what: &str) -> Result<Regex, GuardError> {
    RegexBuilder::new(&p.text)
        .unicode(false)
        .size_limit(64 * 1024 * 1024)
        .dfa_size_limit(64 * 1024 * 1024)
        .build()
        .map_err(|e| rule_error(&p.origin, rule, format!("invalid {what}: {e}")))
}

/// Checks each pattern alone (so an error names its line), then builds one set of them.
fn combine(patterns: &[Pattern], rule: Option<&str>) -> Result<Option<RegexSet>, GuardError> {
    for p in patterns {
        compile_regex(p, rule, "allowlist regex")?;
    }
    let Some(first) = patterns.first() else {
        return Ok(None);
    };
    RegexSetBuilder::new(patterns.iter().map(|p| p.text.as_str()))
        .unicode(false)
        .size_limit(64 * 1024 * 1024)
        .dfa_size_limit(64 * 1024 * 1024)
        .build()
        .map(Some)
        .map_err(|e| {
            rule_error(
                &first.origin,
                rule,
                format!("invalid allowlist regexes: {e}"),
            )
        })
}

fn compile_allowlist(a: AllowlistSpec, rule: Option<&str>) -> Result<Allowlist, GuardError> {
    Ok(Allowlist {
        description: a.description,
        condition: a.condition,
        target: a.target,
        regexes: combine(&a.regexes, rule)?,
        stopwords: a.stopwords,
        paths: a
            .paths
            .iter()
            .map(|p| compile_regex(p, rule, "allowlist path"))
            .collect::<Result<_, _>>()?,
        commits_only: a.commits_only,
        target_rules: a.target_rules,
    })
}

fn compile(spec: ConfigSpec) -> Result<RuleSet, GuardError> {
    let mut rules = Vec::with_capacity(spec.rules.len());
    let ids: Vec<String> = spec.rules.iter().map(|r| r.id.clone()).collect();
    for r in spec.rules {
        let id = r.id.as_str();
        if r.regex.is_none() && r.path.is_none() {
            return Err(rule_error(
                &r.origin,
                Some(id),
                "rule has neither `regex` nor `path`".to_string(),
            ));
        }
        let regex = r
            .regex
            .as_ref()
            .map(|p| compile_regex(p, Some(id), "regex"))
            .transpose()?;
        if let (Some((group, at)), Some(re)) = (&r.secret_group, &regex)
            && *group >= re.captures_len()
        {
            return Err(rule_error(
                at,
                Some(id),
                format!(
                    "secretGroup {group} is out of range: the regex has {} capture group(s)",
                    re.captures_len() - 1
                ),
            ));
        }
        let path = r
            .path
            .as_ref()
            .map(|p| compile_regex(p, Some(id), "path regex"))
            .transpose()?;
        let allowlists = r
            .allowlists
            .into_iter()
            .map(|a| compile_allowlist(a, Some(id)))
            .collect::<Result<_, _>>()?;
        let mut required = Vec::with_capacity(r.required.len());
        for q in &r.required {
            let Some(index) = ids.iter().position(|i| *i == q.id) else {
                return Err(rule_error(
                    &q.origin,
                    Some(id),
                    format!("required rule \"{}\" is not defined", q.id),
                ));
            };
            if q.id == r.id {
                return Err(rule_error(
                    &q.origin,
                    Some(id),
                    "a rule cannot require itself".to_string(),
                ));
            }
            required.push(Required {
                rule: index,
                within_lines: q.within_lines,
                within_columns: q.within_columns,
            });
        }
        rules.push(Rule {
            id: r.id.clone(),
            description: r.description,
            regex,
            secret_group: r.secret_group.map(|(g, _)| g),
            entropy: r.entropy,
            keywords: r.keywords.into_iter().filter(|k| !k.is_empty()).collect(),
            path,
            allowlists,
            required,
            skip_report: r.skip_report,
        });
    }
    let global = spec
        .global
        .into_iter()
        .map(|a| compile_allowlist(a, None))
        .collect::<Result<_, _>>()?;
    Ok(RuleSet { rules, global })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_compile() {
        let set = RuleSet::builtin().expect("built-in rules compile");
        assert!(set.rules.len() >= 30, "{} rules", set.rules.len());
        // The placeholder allowlist, then the reviewer allowlists of the shapeless rules.
        assert_eq!(set.global.len(), 5);
        for a in &set.global {
            for t in &a.target_rules {
                assert!(
                    set.rules.iter().any(|r| &r.id == t),
                    "a global allowlist targets `{t}`, which is no built-in rule"
                );
            }
        }
    }

    #[test]
    fn extend_overrides_fields_and_appends_allowlists() {
        let text = r#"
[extend]
useDefault = true
disabledRules = ["jwt"]

[[rules]]
id = "github-pat"
description = "overridden"
  [[rules.allowlists]]
  stopwords = ["abc"]
"#;
        let set = RuleSet::from_toml(text, "t.toml", None).unwrap();
        assert!(set.rules.iter().all(|r| r.id != "jwt"));
        let gh = set.rules.iter().find(|r| r.id == "github-pat").unwrap();
        assert_eq!(gh.description, "overridden");
        assert!(gh.regex.is_some());
        assert_eq!(gh.allowlists.len(), 1);
    }
}
