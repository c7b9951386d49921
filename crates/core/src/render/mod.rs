//! Rendering: layered variables with provenance, argument coercion and validation, minijinja
//! with fuel, recursion and size limits, and the plain-substitution fallback.
//!
//! Every render runs under the snapshot's `limits.maxRenderBytes` (the largest text it may
//! produce and the largest string or sequence it may build, enforced while rendering through
//! the vendored minijinja's per-thread value size limit and the [`bounded`] filters) and
//! `limits.maxRenderTotalBytes` (everything it builds together).
//!
//! Variables are layered lowest first: *computed* ([`clock::computed_layer`]: dates from an
//! injectable [`Clock`]) < *config* (`.ado-mcp-config.json`) < *frontmatter defaults* (which
//! may reference the lower layers) < *user arguments* (coerced to the declared type, then
//! validated against the argument's JSON Schema). A computed variable whose value a higher layer
//! chose holds over every layer with that layer's source. Every value keeps its type, and the
//! result reports which variables the template used and where each came from.
//!
//! A [`Renderer`] is built over one immutable registry snapshot. It compiles templates lazily
//! (minijinja caches them) and caches per prompt the engine decision, the variables the template
//! reads, and each argument's compiled validator (compiled the first time a value is supplied for
//! that argument, or by `check`: a prompt renders without compiling the schemas of arguments the
//! caller left out, and a schema that does not compile fails only the calls that supply it).

pub mod bounded;
pub mod clock;
mod coerce;
pub mod marks;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use minijinja::value::Serde;
use minijinja::{Environment, ErrorKind, UndefinedBehavior, Value as JinjaValue};
use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

pub use clock::{Clock, ClockError, computed_variables};
pub use coerce::coerce;
pub use marks::{MarkedMessage, Segment, SegmentKind};

use crate::dialect::{Command, Dialect, display_value, dotprompt, jinja, plain, prompty};
use crate::registry::{
    ArgType, ArgumentSpec, Engine, PromptTemplate, Registry, TemplateSyntaxError,
};
use promptd_base::config::ProjectConfig;
use promptd_base::limits::{Limits, MAX_RENDER_BYTES, MAX_RENDER_TOTAL_BYTES};

/// Instruction budget of one render: enough for any honest prompt, finite for a hostile one.
pub const FUEL: u64 = 2_000_000;
/// Maximum include / macro / block nesting.
pub const RECURSION_LIMIT: usize = 64;

/// The layer a variable's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VariableSource {
    Computed,
    Config,
    Default,
    User,
}

/// The line a system section's message starts with: MCP has no system role, so such a
/// section is a user message that says what it is.
pub const SYSTEM_MARKER: &str = "<!-- role: system -->";

/// The text of a system section written as a user message that starts with [`SYSTEM_MARKER`]
/// (by [`split_roles`] or a dialect), without the marker; `None` for any other message. A chat
/// API with a system role gets this text as a system message.
pub fn system_section(message: &PromptMessage) -> Option<&str> {
    if message.role != "user" {
        return None;
    }
    let rest = message.text.strip_prefix(SYSTEM_MARKER)?;
    Some(
        rest.strip_prefix("\r\n")
            .or_else(|| rest.strip_prefix('\n'))
            .unwrap_or(rest),
    )
}

/// One chat message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptMessage {
    pub role: String,
    pub text: String,
}

/// The result of rendering a prompt.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderedPrompt {
    pub name: String,
    pub text: String,
    /// One user message, or one per `<!-- role: … -->` section when the prompt declares roles.
    pub messages: Vec<PromptMessage>,
    pub engine: Engine,
    /// The format of the prompt file.
    pub dialect: Dialect,
    /// Every variable the template used that had a value, sorted.
    pub template_args_used: Vec<String>,
    /// Variable → layer, for every variable used by the template or supplied by the caller.
    pub provenance: BTreeMap<String, VariableSource>,
    /// The final values of `template_args_used`.
    #[serde(skip)]
    pub values: Map<String, Value>,
    pub warnings: Vec<String>,
}

/// Why a prompt could not be rendered. Each message names the prompt, argument or file line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RenderError {
    #[error("unknown prompt `{name}`")]
    UnknownPrompt { name: String },
    #[error("prompt `{prompt}`: missing required argument(s): {}", names.join(", "))]
    MissingArguments { prompt: String, names: Vec<String> },
    #[error("prompt `{prompt}`: argument `{argument}`: {message}")]
    InvalidArgument {
        prompt: String,
        argument: String,
        message: String,
    },
    #[error("{path}:{line}: argument `{argument}` has an invalid JSON Schema: {message}")]
    InvalidSchema {
        path: String,
        line: usize,
        argument: String,
        message: String,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Template {
        prompt: String,
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("prompt `{prompt}`: include cycle: {}", chain.join(" -> "))]
    IncludeCycle { prompt: String, chain: Vec<String> },
    #[error("{path}: prompt `{prompt}` exceeds `{key}` ({limit} bytes): {message}")]
    TooLarge {
        prompt: String,
        path: String,
        key: &'static str,
        limit: usize,
        message: String,
    },
    /// A render over a size limit that fits with the caller's values left empty: the caller's
    /// arguments made it too large.
    #[error(
        "prompt `{prompt}`: {} make{} the render exceed `{key}` ({limit} bytes): {message}",
        quoted_arguments(arguments),
        if arguments.len() == 1 { "s" } else { "" }
    )]
    ArgumentsTooLarge {
        prompt: String,
        arguments: Vec<String>,
        key: &'static str,
        limit: usize,
        message: String,
    },
}

/// `argument `a``, or `arguments `a`, `b``.
fn quoted_arguments(names: &[String]) -> String {
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() == 1 {
        format!("argument {list}")
    } else {
        format!("arguments {list}")
    }
}

impl RenderError {
    /// Whether the caller is at fault (bad name or argument) rather than the prompt file.
    pub fn is_caller_error(&self) -> bool {
        matches!(
            self,
            RenderError::UnknownPrompt { .. }
                | RenderError::MissingArguments { .. }
                | RenderError::InvalidArgument { .. }
                | RenderError::ArgumentsTooLarge { .. }
        )
    }
}

/// What a template is, decided once per snapshot.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub engine: Engine,
    /// Why a prompt without `engine:` fell back to plain substitution (the Jinja syntax error).
    pub fallback_reason: Option<String>,
    /// A Jinja syntax error of a prompt that declares `engine: jinja`.
    pub syntax_error: Option<RenderError>,
    /// Variables the template (and what it includes) reads.
    pub variables: BTreeSet<String>,
    /// Plain placeholders that are not variable names and are always left verbatim.
    pub verbatim: Vec<String>,
    /// Static `{% include %}` targets.
    pub includes: Vec<String>,
    /// An include cycle reachable from this prompt.
    pub include_cycle: Option<Vec<String>>,
}

/// Variable name → the layer its value came from.
pub type Provenance = BTreeMap<String, VariableSource>;

/// An argument's compiled schema; `None` when it constrains nothing beyond the declared type.
type ArgValidator = Result<Option<jsonschema::Validator>, RenderError>;

/// What the renderer keeps per prompt, each built on first use: what depends on the prompt's
/// file alone, so the renderers of later snapshots share it while the prompt is served
/// unchanged.
#[derive(Default)]
struct PromptCache {
    /// The analysis of a template that includes nothing.
    analysis: OnceLock<Arc<Analysis>>,
    /// One slot per declared argument, in declaration order.
    validators: OnceLock<Box<[OnceLock<ArgValidator>]>>,
}

impl PromptCache {
    /// The validator of `prompt`'s argument at `index`, compiled on first use.
    fn validator(
        &self,
        prompt: &PromptTemplate,
        index: usize,
    ) -> Result<Option<&jsonschema::Validator>, RenderError> {
        let slots = self
            .validators
            .get_or_init(|| prompt.arguments.iter().map(|_| OnceLock::new()).collect());
        let compiled = slots[index].get_or_init(|| {
            let arg = &prompt.arguments[index];
            let Some(schema) = arg.json_schema() else {
                return Ok(None);
            };
            jsonschema::validator_for(&schema)
                .map(Some)
                .map_err(|e| RenderError::InvalidSchema {
                    path: prompt.path.clone(),
                    line: arg.line,
                    argument: arg.name.clone(),
                    message: e.to_string(),
                })
        });
        compiled.as_ref().map(Option::as_ref).map_err(Clone::clone)
    }
}

/// Renders prompts of one registry snapshot.
pub struct Renderer {
    registry: Arc<Registry>,
    env: Environment<'static>,
    /// By prompt name; a persistent map sharing its entries with the renderers of the
    /// snapshots before and after.
    caches: imbl::OrdMap<String, Arc<PromptCache>>,
    /// The analyses of templates that include others: they depend on this snapshot's other
    /// files.
    includers: Mutex<HashMap<String, Arc<Analysis>>>,
    globals: BTreeSet<String>,
    limits: Limits,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("prompts", &self.registry.len())
            .finish()
    }
}

static INCLUDE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\{%[-+]?\s*(?:include|import|extends|from)\s+["']([^"']+)["']"#)
        .expect("include regex")
});

impl Renderer {
    /// Builds a renderer over a registry snapshot with the default limits. Cheap: nothing is
    /// compiled until used.
    pub fn new(registry: Arc<Registry>) -> Renderer {
        Self::with_limits(registry, Limits::default())
    }

    /// Builds a renderer whose renders stay within `limits`.
    pub fn with_limits(registry: Arc<Registry>, limits: Limits) -> Renderer {
        Self::after(registry, limits, None)
    }

    /// Like [`with_limits`](Self::with_limits), keeping what `previous` (the renderer of an
    /// earlier snapshot) had cached for every prompt this snapshot serves unchanged (the same
    /// parsed file), so a reload costs only what changed.
    pub fn after(registry: Arc<Registry>, limits: Limits, previous: Option<&Renderer>) -> Renderer {
        let mut env = jinja_environment();
        let loader_registry = registry.clone();
        env.set_loader(move |name| match loader_registry.resolve_include(name) {
            Ok(found) => Ok(found.map(|f| f.body)),
            Err(e) => Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                e.to_string(),
            )),
        });
        let globals = env.globals().map(|(k, _)| k.to_string()).collect();
        let caches = match previous.and_then(|p| Some((p, registry.changes_since(&p.registry)?))) {
            // Updated from named files: only the changed names get new caches.
            Some((previous, changes)) => {
                let mut caches = previous.caches.clone();
                for name in changes.names() {
                    caches.remove(name);
                    if registry.get(name).is_some() {
                        caches.insert(name.clone(), Arc::default());
                    }
                }
                caches
            }
            None => {
                let kept = |p: &Arc<PromptTemplate>| {
                    let previous = previous?;
                    let old = previous.registry.get(&p.name)?;
                    Arc::ptr_eq(old, p).then(|| previous.caches.get(&p.name).cloned())?
                };
                registry
                    .prompts()
                    .map(|p| (p.name.clone(), kept(p).unwrap_or_default()))
                    .collect()
            }
        };
        Renderer {
            registry,
            env,
            caches,
            includers: Mutex::default(),
            globals,
            limits,
        }
    }

    /// The snapshot this renderer serves.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The cached analysis of a prompt.
    pub fn analysis(&self, name: &str) -> Option<Arc<Analysis>> {
        let prompt = self.registry.get(name)?;
        Some(self.analysis_in(self.cache(prompt).ok()?, prompt))
    }

    /// The cache of a prompt of this renderer's registry; any other name is an unknown prompt.
    fn cache(&self, prompt: &PromptTemplate) -> Result<&PromptCache, RenderError> {
        self.caches
            .get(&prompt.name)
            .map(|c| &**c)
            .ok_or_else(|| RenderError::UnknownPrompt {
                name: prompt.name.clone(),
            })
    }

    /// The analysis of `prompt`: kept in its cache when the template includes nothing, else in
    /// this renderer.
    fn analysis_in(&self, cache: &PromptCache, prompt: &PromptTemplate) -> Arc<Analysis> {
        if let Some(a) = cache.analysis.get() {
            return a.clone();
        }
        let includers = || self.includers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = includers().get(&prompt.name) {
            return a.clone();
        }
        let analysis = {
            let _limit = value_size_limit(&self.limits);
            Arc::new(self.analyze(prompt))
        };
        if analysis.includes.is_empty() {
            cache.analysis.get_or_init(|| analysis).clone()
        } else {
            includers()
                .entry(prompt.name.clone())
                .or_insert(analysis)
                .clone()
        }
    }

    fn analyze(&self, prompt: &PromptTemplate) -> Analysis {
        let includes: Vec<String> = INCLUDE
            .captures_iter(&prompt.body)
            .map(|c| c[1].to_string())
            .collect();
        let mut analysis = Analysis {
            engine: Engine::Jinja,
            fallback_reason: None,
            syntax_error: None,
            variables: BTreeSet::new(),
            verbatim: Vec::new(),
            includes,
            include_cycle: None,
        };
        let plain = |analysis: &mut Analysis| {
            analysis.engine = Engine::Plain;
            analysis.includes.clear();
            for key in plain::placeholders(&prompt.body) {
                if is_variable_name(&key) {
                    analysis.variables.insert(key);
                } else {
                    analysis.verbatim.push(key);
                }
            }
        };
        if prompt.engine == Some(Engine::Plain) {
            plain(&mut analysis);
            return analysis;
        }
        if !prompt.dialect.is_promptd() {
            // Another tool's format: its own placeholders only, never Jinja.
            analysis.engine = Engine::Plain;
            analysis.includes.clear();
            analysis.variables = prompt.arguments.iter().map(|a| a.name.clone()).collect();
            analysis
                .variables
                .extend(prompt.dialect.template_variables(&prompt.body));
            return analysis;
        }
        match self.env.get_template(&prompt.name) {
            Ok(t) => {
                analysis.variables = self.template_variables(&t);
                analysis.include_cycle = self.find_cycle(&prompt.name);
                let mut seen = BTreeSet::from([prompt.name.clone()]);
                self.collect_included_variables(
                    &analysis.includes,
                    &mut seen,
                    &mut analysis.variables,
                );
            }
            Err(e) => {
                let line = body_line_in_file(prompt, &e);
                let message = jinja_message(&e);
                // Plain substitution serves only a file shown not to be Jinja (see
                // `dialect::jinja`); a Jinja template's syntax error is an error.
                if prompt.engine == Some(Engine::Jinja) || !jinja::shown_not_jinja(&prompt.body) {
                    analysis.syntax_error = Some(RenderError::Template {
                        prompt: prompt.name.clone(),
                        path: prompt.path.clone(),
                        line,
                        column: body_column(prompt, &e),
                        message,
                    });
                } else {
                    analysis.fallback_reason = Some(format!("line {line}: {message}"));
                    plain(&mut analysis);
                }
            }
        }
        analysis
    }

    fn template_variables(&self, t: &minijinja::Template<'_, '_>) -> BTreeSet<String> {
        t.undeclared_variables(false)
            .into_iter()
            .filter(|v| !self.globals.contains(v))
            .collect()
    }

    fn collect_included_variables(
        &self,
        includes: &[String],
        seen: &mut BTreeSet<String>,
        out: &mut BTreeSet<String>,
    ) {
        for inc in includes {
            if !seen.insert(inc.clone()) {
                continue;
            }
            if let Ok(t) = self.env.get_template(inc) {
                out.extend(self.template_variables(&t));
                let nested: Vec<String> = INCLUDE
                    .captures_iter(t.source())
                    .map(|c| c[1].to_string())
                    .collect();
                self.collect_included_variables(&nested, seen, out);
            }
        }
    }

    /// Depth-first search over static include targets for a path back to a visited file.
    fn find_cycle(&self, start: &str) -> Option<Vec<String>> {
        fn visit(
            r: &Registry,
            name: &str,
            stack: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(pos) = stack.iter().position(|s| s == name) {
                let mut chain = stack[pos..].to_vec();
                chain.push(name.to_string());
                return Some(chain);
            }
            if done.contains(name) {
                return None;
            }
            let body = r.resolve_include(name).ok().flatten()?.body;
            stack.push(name.to_string());
            for c in INCLUDE.captures_iter(&body) {
                if let Some(chain) = visit(r, &c[1], stack, done) {
                    return Some(chain);
                }
            }
            stack.pop();
            done.insert(name.to_string());
            None
        }
        visit(&self.registry, start, &mut Vec::new(), &mut BTreeSet::new())
    }

    /// Checks that every argument schema of a prompt compiles (used by `check`).
    pub fn check_schemas(&self, name: &str) -> Result<(), RenderError> {
        let prompt = self.prompt(name)?;
        let cache = self.cache(prompt)?;
        (0..prompt.arguments.len()).try_for_each(|i| cache.validator(prompt, i).map(|_| ()))
    }

    /// Checks every argument default of a prompt as a value the caller supplied would be
    /// checked (type, enum, bounds, schema; used by `check`): each refused default as (its
    /// argument's line, the error). A default that is a template (`{{ … }}`, rendered over
    /// the lower layers) is checked when it renders, not here.
    pub fn check_defaults(&self, name: &str) -> Result<Vec<(usize, RenderError)>, RenderError> {
        let prompt = self.prompt(name)?;
        let cache = self.cache(prompt)?;
        let mut refused = Vec::new();
        for spec in &prompt.arguments {
            let Some(default) = &spec.default else {
                continue;
            };
            if default
                .as_str()
                .is_some_and(|s| s.contains("{{") || s.contains("{%"))
            {
                continue;
            }
            let one = Map::from_iter([(spec.name.clone(), default.clone())]);
            if let Err(e) = self.coerce_arguments(prompt, cache, &one) {
                refused.push((spec.line, e));
            }
        }
        Ok(refused)
    }

    fn prompt(&self, name: &str) -> Result<&Arc<PromptTemplate>, RenderError> {
        self.registry
            .get(name)
            .ok_or_else(|| RenderError::UnknownPrompt {
                name: name.to_string(),
            })
    }

    /// Coerces user-supplied values to their declared types and validates them.
    fn coerce_arguments(
        &self,
        prompt: &PromptTemplate,
        cache: &PromptCache,
        args: &Map<String, Value>,
    ) -> Result<Map<String, Value>, RenderError> {
        let mut out = Map::new();
        for (key, raw) in args {
            let declared = prompt
                .arguments
                .iter()
                .enumerate()
                .find(|(_, a)| &a.name == key);
            let Some((index, spec)) = declared else {
                out.insert(key.clone(), raw.clone());
                continue;
            };
            // MCP clients send "" for fields the user left blank: that is "not supplied"
            // unless the argument is a string without a default.
            if raw.as_str() == Some("")
                && (spec.default.is_some()
                    || !matches!(spec.declared_type(), None | Some(ArgType::String)))
            {
                continue;
            }
            let value = match spec.declared_type() {
                Some(t) => coerce(raw, t).map_err(|message| RenderError::InvalidArgument {
                    prompt: prompt.name.clone(),
                    argument: key.clone(),
                    message,
                })?,
                None => raw.clone(),
            };
            if let Some(validator) = cache.validator(prompt, index)?
                && let Err(e) = validator.validate(&value)
            {
                return Err(RenderError::InvalidArgument {
                    prompt: prompt.name.clone(),
                    argument: key.clone(),
                    message: format!("{e} (violates `{}`)", e.kind().keyword()),
                });
            }
            out.insert(key.clone(), value);
        }
        Ok(out)
    }

    /// Renders the prompt named `name` with the four variable layers.
    pub fn render(
        &self,
        name: &str,
        args: &Map<String, Value>,
        config: &ProjectConfig,
        clock: &Clock,
    ) -> Result<RenderedPrompt, RenderError> {
        self.render_template(self.prompt(name)?, args, config, clock)
    }

    /// Renders `prompt`, a template of this renderer's registry (as [`Registry::get`] returns
    /// it), with the four variable layers. A template whose name the registry does not hold is
    /// an unknown prompt.
    pub fn render_template(
        &self,
        prompt: &PromptTemplate,
        args: &Map<String, Value>,
        config: &ProjectConfig,
        clock: &Clock,
    ) -> Result<RenderedPrompt, RenderError> {
        self.render_with(prompt, args, config, clock, false)
            .map(|(rendered, _)| rendered)
    }

    /// Like [`render_template`](Self::render_template), also cutting each message into the
    /// template's text and the values substituted into it (see [`marks`]). A body or argument
    /// holding the private-use characters marks are made of is rendered unmarked: one text
    /// segment per message.
    pub fn render_marked(
        &self,
        prompt: &PromptTemplate,
        args: &Map<String, Value>,
        config: &ProjectConfig,
        clock: &Clock,
    ) -> Result<(RenderedPrompt, Vec<MarkedMessage>), RenderError> {
        let hostile = marks::has_delimiters(&prompt.body)
            || args.values().any(|v| marks::has_delimiters(&v.to_string()));
        let (mut rendered, names) = self.render_with(prompt, args, config, clock, !hostile)?;
        let marked = messages_of(prompt, &rendered.text)
            .into_iter()
            .map(|m| MarkedMessage {
                segments: if hostile {
                    vec![Segment {
                        text: m.text,
                        kind: SegmentKind::Text,
                        lines: None,
                    }]
                } else {
                    let mut segments = marks::segments(&m.text, &names);
                    // Lines of the body as the engine compiled it, as lines of the file.
                    for s in &mut segments {
                        s.lines = s.lines.map(|(first, last)| {
                            (first + prompt.body_line - 1, last + prompt.body_line - 1)
                        });
                    }
                    segments
                },
                role: m.role,
            })
            .collect();
        if !hostile {
            rendered.text = marks::strip(&rendered.text);
            rendered.messages = messages_of(prompt, &rendered.text);
        }
        Ok((rendered, marked))
    }

    /// Renders `prompt`; with `mark`, every substituted value in the text is wrapped in marks
    /// and the names their indices refer to are returned beside it. A render over a size limit
    /// is the caller's fault ([`RenderError::ArgumentsTooLarge`]) when the prompt renders within
    /// the limit with each of the caller's values replaced by an empty value of its JSON type
    /// (or fails for another reason then); otherwise the prompt is too large on its own. Only
    /// a render that failed is tried again.
    fn render_with(
        &self,
        prompt: &PromptTemplate,
        args: &Map<String, Value>,
        config: &ProjectConfig,
        clock: &Clock,
        mark: bool,
    ) -> Result<(RenderedPrompt, Vec<String>), RenderError> {
        let e = match self.render_once(prompt, args, config, clock, mark) {
            Err(e @ RenderError::TooLarge { .. }) if !args.is_empty() => e,
            done => return done,
        };
        let emptied: Map<String, Value> = args
            .iter()
            .map(|(k, v)| (k.clone(), empty_like(v)))
            .collect();
        if let Err(RenderError::TooLarge { .. }) =
            self.render_once(prompt, &emptied, config, clock, false)
        {
            return Err(e);
        }
        let RenderError::TooLarge {
            key,
            limit,
            message,
            ..
        } = e
        else {
            return Err(e);
        };
        // The caller's arguments the prompt reads: declared ones, and those its template uses.
        let variables = self
            .cache(prompt)
            .map(|cache| self.analysis_in(cache, prompt).variables.clone())
            .unwrap_or_default();
        let mut arguments: Vec<String> = args
            .iter()
            .filter(|(k, v)| {
                empty_like(v) != **v
                    && (variables.contains(*k) || prompt.arguments.iter().any(|a| &a.name == *k))
            })
            .map(|(k, _)| k.clone())
            .collect();
        if arguments.is_empty() {
            arguments = args.keys().cloned().collect();
        }
        Err(RenderError::ArgumentsTooLarge {
            prompt: prompt.name.clone(),
            arguments,
            key,
            limit,
            message,
        })
    }

    /// One render of `prompt` (see [`render_with`](Self::render_with)).
    fn render_once(
        &self,
        prompt: &PromptTemplate,
        args: &Map<String, Value>,
        config: &ProjectConfig,
        clock: &Clock,
        mark: bool,
    ) -> Result<(RenderedPrompt, Vec<String>), RenderError> {
        let name = prompt.name.as_str();
        let cache = self.cache(prompt)?;
        let analysis = self.analysis_in(cache, prompt);
        if let Some(e) = &analysis.syntax_error {
            return Err(e.clone());
        }
        if let Some(chain) = &analysis.include_cycle {
            return Err(RenderError::IncludeCycle {
                prompt: name.to_string(),
                chain: chain.clone(),
            });
        }
        let user = self.coerce_arguments(prompt, cache, args)?;
        // Everything below (defaults that are templates, the template itself) builds values
        // under the render limits.
        let guard = value_size_limit(&self.limits);
        let mut warnings = Vec::new();
        let (mut vars, mut provenance) = self.layer(prompt, &user, config, clock, &mut warnings)?;
        // `{{90_days_ago}}` and the like, found in real prompt files: computed on demand (the
        // name is not a Jinja identifier, so only plain substitution can use it).
        for v in &analysis.variables {
            if !vars.contains_key(v)
                && let Some(date) = clock::days_ago_variable(v, clock.now())
            {
                vars.insert(v.clone(), Value::String(date));
                provenance.insert(v.clone(), VariableSource::Computed);
            }
        }

        let names: Vec<String> = if mark {
            vars.keys().cloned().collect()
        } else {
            Vec::new()
        };
        let substituted = |k: &str| vars.get(k).map(display_value);
        // Marks go around each slot's final value (a word of an argument, once split), with
        // the body lines of its placeholder.
        let wrap = |k: &str, placeholder: &str, shown: String| {
            if mark {
                let lines = marks::lines_of(&prompt.body, placeholder);
                marks::wrap_at(names.iter().position(|n| n == k), lines, &shown)
            } else {
                shown
            }
        };
        let missing: Vec<String> = prompt
            .arguments
            .iter()
            .filter(|a| a.required && !vars.contains_key(&a.name))
            .map(|a| a.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(RenderError::MissingArguments {
                prompt: name.to_string(),
                names: missing,
            });
        }

        // A file that declares no engine and has only `{{ … }}` expressions may be another
        // tool's text (`${{ matrix.os }}`): when Jinja would drop an expression nobody gives a
        // value, it is served by plain substitution, which keeps it.
        let undefined: Vec<&str> = analysis
            .variables
            .iter()
            .filter(|v| !vars.contains_key(*v))
            .map(String::as_str)
            .collect();
        let engine = if analysis.engine == Engine::Jinja
            && jinja::serve_as_plain(prompt.engine.is_some(), &prompt.body, &undefined)
        {
            warnings.push(format!(
                "rendered by plain substitution so that no text is lost: {} {} no value \
                 (declare `engine: jinja` to render it as Jinja)",
                undefined
                    .iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if undefined.len() == 1 { "has" } else { "have" }
            ));
            Engine::Plain
        } else {
            analysis.engine
        };
        // The variables a template engine read that had a value.
        let read = |vars: &Map<String, Value>| -> Vec<String> {
            analysis
                .variables
                .iter()
                .filter(|v| vars.contains_key(*v))
                .cloned()
                .collect()
        };
        let (text, used) = match engine {
            _ if prompt.dialect.has_engine() => (
                self.render_engine_dialect(prompt, &vars, &analysis.variables)?,
                read(&vars),
            ),
            _ if !prompt.dialect.is_promptd() => {
                let (text, mut used) = prompt
                    .dialect
                    .substitute_wrapped(
                        &prompt.body,
                        Command {
                            name: &prompt.name,
                            metadata: &prompt.metadata,
                        },
                        substituted,
                        wrap,
                        self.limits.max_render_bytes,
                    )
                    .map_err(|e| self.too_large(prompt, false, e.to_string()))?;
                used.sort();
                (text, used)
            }
            Engine::Jinja => {
                let t = self
                    .env
                    .get_template(name)
                    .map_err(|e| self.template_error(prompt, &e))?;
                let _marking = mark.then(|| marks::Marking::start(name));
                let context = if mark {
                    JinjaValue::from_object(marks::MarkedContext::new(&vars))
                } else {
                    JinjaValue::from(Serde(&vars))
                };
                let text = t.render(context).map_err(|e| {
                    if guard.exceeded() {
                        self.too_large(prompt, guard.total_exceeded(), jinja_message(&e))
                    } else {
                        self.template_error(prompt, &e)
                    }
                })?;
                (text, read(&vars))
            }
            Engine::Plain => {
                let (text, mut used) = plain::substitute_wrapped(
                    &prompt.body,
                    substituted,
                    wrap,
                    self.limits.max_render_bytes,
                )
                .map_err(|e| self.too_large(prompt, false, e.to_string()))?;
                used.sort();
                if !analysis.verbatim.is_empty() {
                    warnings.push(format!(
                        "left verbatim (not variables): {}",
                        analysis
                            .verbatim
                            .iter()
                            .map(|k| format!("{{{{{k}}}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                (text, used)
            }
        };

        for v in &analysis.variables {
            let declared = prompt.arguments.iter().any(|a| &a.name == v);
            if !vars.contains_key(v) && !declared {
                warnings.push(format!(
                    "variable `{v}` is used by the template but no layer defines it"
                ));
            }
        }
        for k in user.keys() {
            let declared = prompt.arguments.iter().any(|a| &a.name == k);
            if !declared
                && !analysis.variables.contains(k)
                && !clock::COMPUTED_VARIABLES.contains(&k.as_str())
            {
                warnings.push(format!(
                    "argument `{k}` is neither declared nor used by prompt `{name}`"
                ));
            }
        }
        // Report where each value that mattered came from: what the template used, and what
        // the caller supplied.
        let provenance = provenance
            .into_iter()
            .filter(|(k, _)| used.contains(k) || user.contains_key(k))
            .collect();
        let values = used
            .iter()
            .filter_map(|k| vars.get(k).map(|v| (k.clone(), v.clone())))
            .collect();
        drop(guard);
        let messages = messages_of(prompt, &text);
        let rendered = RenderedPrompt {
            name: name.to_string(),
            text,
            messages,
            engine,
            dialect: prompt.dialect,
            template_args_used: used,
            provenance,
            values,
            warnings,
        };
        Ok((rendered, names))
    }

    /// Renders a Dotprompt (Handlebars) or Prompty (Jinja2) body over the layered values, as
    /// its own tool does; a Dotprompt partial (`{{> name}}`) is the file `_name.prompt` of the
    /// prompt folders.
    /// `variables` are the prompt's analysed variables: its arguments and the names its template
    /// reads.
    fn render_engine_dialect(
        &self,
        prompt: &PromptTemplate,
        vars: &Map<String, Value>,
        variables: &BTreeSet<String>,
    ) -> Result<String, RenderError> {
        let max = self.limits.max_render_bytes;
        let result = match prompt.dialect {
            Dialect::Dotprompt => {
                let partial = |name: &str| {
                    let rel = dotprompt::partial_path(name);
                    self.registry
                        .resolve_include(&rel)
                        .ok()
                        .flatten()
                        .map(|inc| inc.body)
                };
                // Dotprompt's context is the prompt's input: its declared arguments, what the
                // caller gave, and promptd's other values only where the template names them,
                // so `{{json this}}` shows what Dotprompt would show.
                let input: Map<String, Value> = vars
                    .iter()
                    .filter(|(k, _)| variables.contains(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                dotprompt::render(&prompt.body, &input, &partial, max)
            }
            _ => prompty::render(&prompt.body, vars, max),
        };
        result.map_err(|e| {
            if e.too_large {
                self.too_large(prompt, false, e.message)
            } else {
                RenderError::Template {
                    prompt: prompt.name.clone(),
                    path: prompt.path.clone(),
                    line: e
                        .line
                        .map_or(prompt.body_line, |l| l + prompt.body_line - 1),
                    column: 1,
                    message: e.message,
                }
            }
        })
    }

    /// Builds the render context, lowest layer first, with provenance.
    fn layer(
        &self,
        prompt: &PromptTemplate,
        user: &Map<String, Value>,
        config: &ProjectConfig,
        clock: &Clock,
        warnings: &mut Vec<String>,
    ) -> Result<(Map<String, Value>, Provenance), RenderError> {
        // The computed layer may take values from the layers above it, the defaults as written.
        let declared_defaults: Map<String, Value> = prompt
            .arguments
            .iter()
            .filter_map(|a| Some((a.name.clone(), a.default.clone()?)))
            .collect();
        let computed = clock::computed_layer(
            clock.now(),
            &[
                (user, VariableSource::User),
                (&declared_defaults, VariableSource::Default),
                (&config.variables, VariableSource::Config),
            ],
            VariableSource::Computed,
        )
        .map_err(|e| RenderError::InvalidArgument {
            prompt: prompt.name.clone(),
            argument: e.name.to_string(),
            message: e.to_string(),
        })?;
        let mut vars = computed.variables;
        let mut provenance: BTreeMap<String, VariableSource> = vars
            .keys()
            .map(|k| (k.clone(), VariableSource::Computed))
            .collect();
        for (k, v) in &config.variables {
            vars.insert(k.clone(), v.clone());
            provenance.insert(k.clone(), VariableSource::Config);
        }
        // Defaults see only the lower layers; a default the caller overrides is not evaluated.
        let defaults: Vec<(String, Value)> = prompt
            .arguments
            .iter()
            .filter(|a| !user.contains_key(&a.name))
            .filter_map(|a| {
                let d = a.default.as_ref()?;
                Some((
                    a.name.clone(),
                    self.resolve_default(prompt, a, d, &vars, warnings),
                ))
            })
            .collect();
        for (name, value) in defaults {
            vars.insert(name.clone(), value);
            provenance.insert(name, VariableSource::Default);
        }
        for (k, v) in user {
            vars.insert(k.clone(), v.clone());
            provenance.insert(k.clone(), VariableSource::User);
        }
        for (name, value, source) in computed.overrides {
            vars.insert(name.clone(), value);
            provenance.insert(name, source);
        }
        Ok((vars, provenance))
    }

    /// A default may be a template over the lower layers (`"{{project}}\\Team"`).
    fn resolve_default(
        &self,
        prompt: &PromptTemplate,
        arg: &ArgumentSpec,
        default: &Value,
        lower: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Value {
        let Value::String(s) = default else {
            return default.clone();
        };
        if !s.contains("{{") && !s.contains("{%") {
            return match arg.declared_type() {
                Some(t) => coerce(default, t).unwrap_or_else(|_| default.clone()),
                None => default.clone(),
            };
        }
        let rendered = match self.env.render_str(s, JinjaValue::from(Serde(lower))) {
            Ok(r) => r,
            Err(_) => {
                plain::substitute(s, |k| lower.get(k).map(display_value), self.limits.max_render_bytes)
                    .map(|(text, _)| text)
                    .unwrap_or_else(|e| {
                        warnings.push(format!(
                            "default of argument `{}` of prompt `{}` left unresolved: {e} (`{MAX_RENDER_BYTES}`)",
                            arg.name, prompt.name
                        ));
                        s.clone()
                    })
            }
        };
        for key in plain::placeholders(s) {
            if is_variable_name(&key) && !lower.contains_key(&key) {
                warnings.push(format!(
                    "default of argument `{}` of prompt `{}` references `{key}`, which no lower layer defines",
                    arg.name, prompt.name
                ));
            }
        }
        let value = Value::String(rendered);
        match arg.declared_type() {
            Some(t) if t != ArgType::String => coerce(&value, t).unwrap_or(value),
            _ => value,
        }
    }

    /// The error of a render that hit a size limit (`total`: the total of values built).
    fn too_large(&self, prompt: &PromptTemplate, total: bool, message: String) -> RenderError {
        let (key, limit) = if total {
            (MAX_RENDER_TOTAL_BYTES, self.limits.max_render_total_bytes)
        } else {
            (MAX_RENDER_BYTES, self.limits.max_render_bytes)
        };
        RenderError::TooLarge {
            prompt: prompt.name.clone(),
            path: prompt.path.clone(),
            key,
            limit,
            message,
        }
    }

    fn template_error(&self, prompt: &PromptTemplate, e: &minijinja::Error) -> RenderError {
        // Errors inside an included file name that file and its own line.
        let (path, line, column) = match e.name() {
            Some(n) if n != prompt.name => match self.registry.resolve_include(n) {
                Ok(Some(inc)) => (
                    inc.path,
                    e.line().map_or(inc.body_line, |l| l + inc.body_line - 1),
                    1,
                ),
                _ => (prompt.path.clone(), prompt.body_line, 1),
            },
            _ => (
                prompt.path.clone(),
                body_line_in_file(prompt, e),
                body_column(prompt, e),
            ),
        };
        RenderError::Template {
            prompt: prompt.name.clone(),
            path,
            line,
            column,
            message: jinja_message(e),
        }
    }
}

/// An empty value of `v`'s JSON type (`""`, `0`, `false`, `[]`, `{}`, `null`).
fn empty_like(v: &Value) -> Value {
    match v {
        Value::String(_) => Value::String(String::new()),
        Value::Number(_) => Value::from(0),
        Value::Bool(_) => Value::Bool(false),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(_) => Value::Object(Map::new()),
        Value::Null => Value::Null,
    }
}

/// Whether a plain placeholder key names a variable (as opposed to `#if X` or `/if`): an
/// identifier, or a computed `<N>_days_ago` date.
pub fn is_variable_name(key: &str) -> bool {
    plain::is_identifier(key) || clock::days_ago_digits(key).is_some()
}

/// Sets the render limits as minijinja's value size limit of this thread until the guard is
/// dropped. Compiling under it too keeps constant folding (`{{ "x" * 100000000 }}`) from
/// building large constants: a fold over the limit is simply not done.
fn value_size_limit(limits: &Limits) -> minijinja::ValueSizeLimitGuard {
    minijinja::set_value_size_limit(minijinja::ValueSizeLimit {
        max_value: limits.max_render_bytes,
        max_total: limits.max_render_total_bytes,
    })
}

/// The minijinja environment every Jinja compile and render uses, without a loader: the
/// renderer adds its registry loader, [`check_syntax`] compiles a body with it as is. One
/// constructor, so hot reload's syntax check and rendering cannot disagree on what parses.
fn jinja_environment<'source>() -> Environment<'source> {
    let mut env = Environment::new();
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    bounded::add_bounded_filters(&mut env);
    // Values keep their JSON spelling in prompt text: `false`, not Python's `False`; a null
    // prints as nothing, like an undefined value.
    env.set_formatter(|out, state, value| {
        let marked = marks::marking() && matches!(state.auto_escape(), minijinja::AutoEscape::None);
        if value.kind() == minijinja::value::ValueKind::Bool {
            let b = if value.is_true() { "true" } else { "false" };
            let text = if marked {
                marks::jinja_mark(value, b, state.output_location())
            } else {
                b.to_string()
            };
            return out.write_str(&text).map_err(minijinja::Error::from);
        }
        let shown = if value.is_none() {
            &JinjaValue::UNDEFINED
        } else {
            value
        };
        if marked {
            let printed = shown.to_string();
            if printed.is_empty() {
                marks::nothing_printed();
                return Ok(());
            }
            return out
                .write_str(&marks::jinja_mark(value, &printed, state.output_location()))
                .map_err(minijinja::Error::from);
        }
        minijinja::escape_formatter(out, state, shown)
    });
    // Prompt text is whitespace-sensitive: keep the file's final newline, and let block tags
    // (`{% if %}` on a line of its own) vanish without leaving blank lines.
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .expect("default delimiters are valid"),
    );
    env
}

/// Compiles a prompt's body as Jinja with the renderer's environment, whatever its `engine:`
/// says: the check hot reload gives [`Registry::load_with_previous`] so that a broken template
/// edit keeps the last good version. The error's line and column are the file's.
pub fn check_syntax(prompt: &PromptTemplate) -> Result<(), TemplateSyntaxError> {
    let env = jinja_environment();
    let _limit = value_size_limit(&Limits::default());
    let Err(e) = env.template_from_str(&prompt.body) else {
        return Ok(());
    };
    Err(TemplateSyntaxError {
        line: body_line_in_file(prompt, &e),
        column: body_column(prompt, &e),
        message: jinja_message(&e),
    })
}

/// The 1-based column (in characters) of an error in a prompt's own body.
fn body_column(prompt: &PromptTemplate, e: &minijinja::Error) -> usize {
    e.range().map_or(1, |r| {
        let before = prompt.body.get(..r.start).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        before[line_start..].chars().count() + 1
    })
}

/// The file line of an error in a prompt's own body.
fn body_line_in_file(prompt: &PromptTemplate, e: &minijinja::Error) -> usize {
    e.line()
        .map_or(prompt.body_line, |l| l + prompt.body_line - 1)
}

/// A minijinja error as one line, without its own position suffix.
fn jinja_message(e: &minijinja::Error) -> String {
    match e.kind() {
        ErrorKind::OutOfFuel => format!(
            "template ran out of fuel (more than {FUEL} instructions): a loop that never ends or is far too large"
        ),
        _ => {
            let kind = e.kind().to_string();
            match e.detail() {
                Some(d) => format!("{kind}: {d}"),
                None => kind,
            }
        }
    }
}

/// The messages of a rendered prompt: Prompty's role lines for a Prompty file (a system or
/// developer message, which MCP has no role for, is a user message that keeps its role line),
/// Dotprompt's markers cut as Dotprompt cuts them, else promptd's `<!-- role: … -->` sections
/// (see [`split_roles`]).
fn messages_of(prompt: &PromptTemplate, text: &str) -> Vec<PromptMessage> {
    if prompt.dialect == Dialect::Dotprompt && prompt.roles {
        let mut out: Vec<PromptMessage> = dotprompt::messages(text)
            .into_iter()
            .map(|(role, text)| PromptMessage { role, text })
            .collect();
        if out.is_empty() {
            out.push(PromptMessage {
                role: "user".into(),
                text: String::new(),
            });
        }
        return out;
    }
    if prompt.dialect != Dialect::Prompty {
        return split_roles(text, prompt.roles);
    }
    let mut out: Vec<PromptMessage> = prompty::messages(text)
        .into_iter()
        .filter(|(_, t)| !t.trim().is_empty())
        .map(|(role, t)| match role.as_str() {
            "user" | "assistant" => PromptMessage { role, text: t },
            other => PromptMessage {
                role: "user".into(),
                text: format!("{other}:\n{t}"),
            },
        })
        .collect();
    if out.is_empty() {
        out.push(PromptMessage {
            role: "user".into(),
            text: String::new(),
        });
    }
    out
}

/// A role marker: `<!-- role: user|assistant|system -->` in any letter case and spacing,
/// wherever it stands (a line of its own, indented, or after text on a line), with the blanks
/// and line break that end its line.
static ROLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)<!--\s*role:\s*(user|assistant|system)\s*-->[ \t]*(?:\r?\n)?")
        .expect("role regex")
});

/// Splits rendered text into messages at `<!-- role: … -->` markers: each marker starts a
/// section that runs to the next one, text before the first is a user message, and a section
/// with nothing but blanks is dropped. A system section, which MCP has no role for, is a user
/// message that starts with its `<!-- role: system -->` line.
pub fn split_roles(text: &str, roles: bool) -> Vec<PromptMessage> {
    if !roles {
        return vec![PromptMessage {
            role: "user".into(),
            text: text.to_string(),
        }];
    }
    let mut out = Vec::new();
    let push = |role: &str, chunk: &str, out: &mut Vec<PromptMessage>| {
        let chunk = chunk.trim();
        if chunk.is_empty() {
            return;
        }
        out.push(match role {
            "system" => PromptMessage {
                role: "user".into(),
                text: format!("{SYSTEM_MARKER}\n{chunk}"),
            },
            role => PromptMessage {
                role: role.into(),
                text: chunk.to_string(),
            },
        });
    };
    let mut role = "user".to_string();
    let mut start = 0;
    for c in ROLE.captures_iter(text) {
        let m = c.get(0).expect("match");
        push(&role, &text[start..m.start()], &mut out);
        role = c[1].to_ascii_lowercase();
        start = m.end();
    }
    push(&role, &text[start..], &mut out);
    if out.is_empty() {
        out.push(PromptMessage {
            role: "user".into(),
            text: String::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names_are_identifiers_and_computed_dates() {
        assert!(is_variable_name("name"));
        assert!(is_variable_name("90_days_ago"));
        assert!(!is_variable_name("90_days"));
        assert!(!is_variable_name("#if x"));
    }

    #[test]
    fn roles_split() {
        let m = split_roles(
            "intro\n<!-- role: assistant -->\nok\n<!-- role: user -->\nnext",
            true,
        );
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].role, "assistant");
        assert_eq!(m[2].text, "next");
    }

    #[test]
    fn role_markers_count_inline_indented_and_in_any_case() {
        let m = split_roles(
            "<!-- role: system -->Be brief.\n  <!--role:User-->\nHi <!-- ROLE: assistant --> Hello",
            true,
        );
        let got: Vec<(&str, &str)> = m
            .iter()
            .map(|m| (m.role.as_str(), m.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("user", "<!-- role: system -->\nBe brief."),
                ("user", "Hi"),
                ("assistant", "Hello"),
            ]
        );
        let blank = split_roles("<!-- role: assistant -->\n  \n", true);
        assert_eq!((blank.len(), blank[0].role.as_str()), (1, "user"));
    }
}
