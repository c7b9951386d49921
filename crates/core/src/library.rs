//! The one library entry point the CLI and the MCP server share: a [`PromptLibrary`] holds the
//! current snapshot (registry + renderer + config), swaps it atomically on reload, and answers
//! the `wit-get-prompts` contract ([`GetPromptsRequest`] → [`GetPromptsResponse`]).
//!
//! A [`Snapshot`] is one consistent view: a caller that needs more than one answer (a render
//! and its limits, several renders) takes one snapshot and asks it ([`Snapshot::render`],
//! [`Snapshot::get_prompts`]), so a reload in between cannot mix versions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::dialect::Dialect;
use crate::registry::{ArgType, PromptCategory, PromptSource, PromptTemplate, Registry, Touched};
use crate::render::{Clock, RenderError, RenderedPrompt, Renderer, VariableSource};
use crate::versions::VersionError;
use promptd_base::config::{ConfigError, ProjectConfig};
use promptd_base::limits::Limits;

/// The name of the listing/getting tool, as MCP clients see it.
pub const TOOL_NAME: &str = "wit-get-prompts";

/// Everything a library needs to find prompts and config.
#[derive(Debug, Clone, Default)]
pub struct LibraryOptions {
    /// Extra prompt folders (`--prompts`), lowest precedence first.
    pub prompt_dirs: Vec<PathBuf>,
    /// Explicit config file (`--config`).
    pub config_path: Option<PathBuf>,
    /// Where to look for `.ado-mcp-config.json` when no path is given, and (without
    /// `prompt_dirs`) for prompt folders of every dialect.
    pub cwd: PathBuf,
    pub clock: Clock,
    /// Do not look for prompt folders in `cwd` (`--no-discover`).
    pub no_discover: bool,
    /// Leave the built-in user prompts out (`--no-builtin-prompts`); system prompts stay.
    pub no_builtin_prompts: bool,
}

/// The config section `prompts`: where prompts come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PromptsSection {
    /// Look for prompt folders (`prompts/`, `.github/prompts/`, `.claude/commands/`, …) in the
    /// working directory when no `--prompts` is given. Default true.
    pub discover: bool,
    /// Serve promptd's built-in user prompts. Default true.
    pub builtin_prompts: bool,
    /// Folder (relative to the config file) → dialect, for folders whose location does not say.
    pub dialects: BTreeMap<String, String>,
}

impl Default for PromptsSection {
    fn default() -> Self {
        PromptsSection {
            discover: true,
            builtin_prompts: true,
            dialects: BTreeMap::new(),
        }
    }
}

/// The root list for `options` and the config's `prompts` section.
fn configured_roots(
    options: &LibraryOptions,
    config: &ProjectConfig,
) -> Result<Vec<Arc<dyn PromptSource>>, ConfigError> {
    let path = || {
        config
            .path
            .clone()
            .unwrap_or_else(|| PathBuf::from("<config>"))
    };
    let section: PromptsSection =
        config
            .section_as("prompts")
            .map_err(|message| ConfigError::InvalidSection {
                path: path(),
                message,
            })?;
    let base = config
        .path
        .as_ref()
        .and_then(|p| p.parent())
        .map_or_else(|| options.cwd.clone(), Path::to_path_buf);
    let mut dialects = Vec::new();
    for (folder, name) in &section.dialects {
        let dialect = Dialect::parse(name).ok_or_else(|| ConfigError::InvalidSection {
            path: path(),
            message: format!(
                "{}: prompts.dialects.{folder}: unknown dialect `{name}` (expected {})",
                path().display(),
                Dialect::NAMES
            ),
        })?;
        dialects.push((base.join(folder), dialect));
    }
    let discover = section.discover && !options.no_discover;
    Ok(crate::registry::roots(&crate::registry::RootOptions {
        dirs: options.prompt_dirs.clone(),
        builtin_user_prompts: section.builtin_prompts && !options.no_builtin_prompts,
        discover_in: discover.then(|| options.cwd.clone()),
        dialects,
    }))
}

/// Where a `NAME` or `NAME@REV` is served from ([`PromptLibrary::resolve`]).
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The current snapshot, or the snapshot as of the revision.
    pub snapshot: Arc<Snapshot>,
    /// The prompt's name in `snapshot` (`NAME`, without `@REV`).
    pub name: String,
    /// `REV` of a `NAME@REV` read at a revision; `None` for the current snapshot.
    pub revision: Option<String>,
}

/// One consistent view: prompts, the renderer over them, the config and its limits.
#[derive(Debug)]
pub struct Snapshot {
    pub registry: Arc<Registry>,
    pub renderer: Renderer,
    pub config: Arc<ProjectConfig>,
    pub limits: Limits,
    /// The registry's version ([`Registry::version`]).
    pub version: String,
    /// Metadata-only listings, built once per snapshot: [user prompts, all prompts].
    listings: [OnceLock<Arc<PromptListing>>; 2],
}

impl Snapshot {
    /// The prompt `name`, when `visibility` serves it.
    pub fn visible(&self, name: &str, visibility: Visibility) -> Option<&Arc<PromptTemplate>> {
        self.registry.get(name).filter(|t| visibility.shows(t))
    }

    /// The prompts `visibility` shows whose names a caller who asked for `name` most likely
    /// meant ([`similar_names`]).
    pub fn similar_names(&self, name: &str, visibility: Visibility) -> Vec<String> {
        let shown = self
            .registry
            .prompts()
            .filter(|t| visibility.shows(t))
            .map(|t| t.name.as_str());
        similar_names(name, shown)
    }

    /// A snapshot whose limits are the config's (the defaults when its `limits` section is
    /// invalid; [`PromptLibrary`] refuses such a config before it gets here).
    pub fn new(registry: Registry, config: Arc<ProjectConfig>) -> Snapshot {
        Self::after(registry, config, None)
    }

    /// Like [`new`](Self::new), keeping the renderer's caches of `previous` for every prompt
    /// served unchanged (see [`Snapshot::warm_from`] for the listings).
    pub fn after(
        registry: Registry,
        config: Arc<ProjectConfig>,
        previous: Option<&Snapshot>,
    ) -> Snapshot {
        let registry = Arc::new(registry);
        let limits = config.limits().unwrap_or_default();
        Snapshot {
            renderer: Renderer::after(
                registry.clone(),
                limits.clone(),
                previous.map(|p| &p.renderer),
            ),
            version: registry.version(),
            registry,
            config,
            limits,
            listings: Default::default(),
        }
    }

    /// Renders the prompt named `name` with `args` over this snapshot's config.
    pub fn render(
        &self,
        name: &str,
        args: &Map<String, Value>,
        clock: &Clock,
    ) -> Result<RenderedPrompt, RenderError> {
        counted(self.renderer.render(name, args, &self.config, clock))
    }

    /// Renders `prompt`, a template of this snapshot's registry, with `args` over this
    /// snapshot's config.
    pub fn render_template(
        &self,
        prompt: &PromptTemplate,
        args: &Map<String, Value>,
        clock: &Clock,
    ) -> Result<RenderedPrompt, RenderError> {
        counted(
            self.renderer
                .render_template(prompt, args, &self.config, clock),
        )
    }

    /// Answers a `wit-get-prompts` request from this snapshot alone, within its limits (see
    /// [`get_prompts`]).
    pub fn get_prompts(
        &self,
        clock: &Clock,
        req: &GetPromptsRequest,
        visibility: Visibility,
    ) -> Result<GetPromptsResponse, GetPromptsError> {
        get_prompts(self, clock, req, visibility, &self.limits)
    }

    /// Builds the cached metadata-only listings now instead of on the first `wit-get-prompts`
    /// listing.
    pub fn warm(&self) {
        self.warm_from(None);
    }

    /// Like [`warm`](Self::warm), taking from `previous` (an earlier snapshot, warmed) the
    /// listing entry of every prompt served unchanged (the same parsed file).
    pub fn warm_from(&self, previous: Option<&Snapshot>) {
        self.all_listing(previous);
        self.metadata_listing(false);
    }

    /// The listing of all prompts, built (from `previous`'s entries where they can be kept)
    /// on first use.
    fn all_listing(&self, previous: Option<&Snapshot>) -> &Arc<PromptListing> {
        let earlier = previous.and_then(|p| Some((&p.registry, p.listings[1].get()?)));
        self.listings[1].get_or_init(|| {
            // Updated from named files: the earlier listing with the changed names replaced.
            if let Some((registry, listing)) = earlier
                && let Some(changes) = self.registry.changes_since(registry)
            {
                let mut prompts = listing.prompts.clone();
                for name in changes.names() {
                    let at = prompts.binary_search_by(|s| s.name().cmp(name));
                    match (at, self.registry.get(name)) {
                        (Ok(i), Some(t)) => prompts[i] = Arc::new(PromptSummary::of(t)),
                        (Err(i), Some(t)) => prompts.insert(i, Arc::new(PromptSummary::of(t))),
                        (Ok(i), None) => {
                            prompts.remove(i);
                        }
                        (Err(_), None) => {}
                    }
                }
                return Arc::new(PromptListing::new(prompts));
            }
            let summary = |t: &Arc<PromptTemplate>| {
                if let Some((registry, listing)) = earlier
                    && registry.get(&t.name).is_some_and(|old| Arc::ptr_eq(old, t))
                    && let Ok(i) = listing.prompts.binary_search_by(|s| s.name().cmp(&t.name))
                {
                    return listing.prompts[i].clone();
                }
                Arc::new(PromptSummary::of(t))
            };
            Arc::new(PromptListing::new(
                self.registry.prompts().map(summary).collect(),
            ))
        })
    }

    /// Whether [`Snapshot::warm`] has built the listings: the snapshot answers every request
    /// without building anything first.
    pub fn is_warm(&self) -> bool {
        self.listings.iter().all(|l| l.get().is_some())
    }

    /// The metadata-only listing `{prompts, totalCount}`, cached: the snapshot never changes.
    /// The user prompts' listing shares its entries with the listing of all prompts.
    fn metadata_listing(&self, include_system: bool) -> Arc<PromptListing> {
        if include_system {
            return self.all_listing(None).clone();
        }
        self.listings[0]
            .get_or_init(|| {
                let all = self.all_listing(None);
                Arc::new(PromptListing::new(
                    all.prompts
                        .iter()
                        .filter(|s| s.template().category == PromptCategory::User)
                        .cloned()
                        .collect(),
                ))
            })
            .clone()
    }
}

/// What a reload changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// The set of prompts, a prompt's content, or the config changed.
    pub changed: bool,
    /// Problems found while reloading (the last good versions stay served).
    pub problems: Vec<String>,
    /// A changed file was still being written or was just emptied and kept its last good
    /// version: reload again shortly to take it.
    pub settling: bool,
}

/// A render's result, its failure counted in the process's metrics.
fn counted(result: Result<RenderedPrompt, RenderError>) -> Result<RenderedPrompt, RenderError> {
    if result.is_err() {
        promptd_base::metrics::global().render_error();
    }
    result
}

/// The shared prompt service.
#[derive(Debug)]
pub struct PromptLibrary {
    options: LibraryOptions,
    roots: Vec<Arc<dyn PromptSource>>,
    current: ArcSwap<Snapshot>,
    /// Whether the prompt folders have been read once (false only between
    /// [`PromptLibrary::open_deferred`] and [`PromptLibrary::finish_loading`]).
    loaded: tokio::sync::watch::Sender<bool>,
    /// Held while a load or reload reads the folders and swaps the snapshot: the later one
    /// read the files last, so it stores last.
    loading: std::sync::Mutex<()>,
    /// Counts snapshot swaps (a load, a reload that changed prompts, config or diagnostics).
    swaps: tokio::sync::watch::Sender<u64>,
    /// The prompt folders' git repositories: `NAME@REV` and histories.
    versions: crate::versions::Versions,
    /// Snapshots as of a revision, by [`RootsAt::key`](crate::versions::RootsAt): the last
    /// [`SNAPSHOTS_KEPT`](crate::versions::SNAPSHOTS_KEPT).
    at_revision: std::sync::Mutex<Option<lru::LruCache<String, Arc<Snapshot>>>>,
}

impl PromptLibrary {
    /// Loads prompts and config. A broken config file is an error; broken prompt files are
    /// diagnostics on the registry.
    pub fn open(options: LibraryOptions) -> Result<PromptLibrary, ConfigError> {
        let (config, _) = load_config(&options)?;
        let roots = configured_roots(&options, &config)?;
        Self::open_with_roots(options, roots)
    }

    /// Reads the config (a broken one is an error, as for [`open`](Self::open)) but not yet the
    /// prompt folders: the library serves no prompts until [`finish_loading`]
    /// (Self::finish_loading), so a server can answer its handshake while a large registry
    /// loads. [`wait_loaded`](Self::wait_loaded) waits for it.
    pub fn open_deferred(options: LibraryOptions) -> Result<PromptLibrary, ConfigError> {
        let (config, limits) = load_config(&options)?;
        let roots = configured_roots(&options, &config)?;
        let empty = Registry::load_capped(Vec::new(), limits.max_prompt_file_bytes);
        Ok(PromptLibrary {
            current: ArcSwap::from_pointee(Snapshot::new(empty, Arc::new(config))),
            options,
            roots,
            loaded: tokio::sync::watch::Sender::new(false),
            loading: std::sync::Mutex::new(()),
            swaps: tokio::sync::watch::Sender::new(0),
            versions: crate::versions::Versions::new(),
            at_revision: Default::default(),
        })
    }

    /// Reads the prompt folders of a library opened with [`open_deferred`]
    /// (Self::open_deferred), builds its listings and marks it loaded. Does nothing on a library
    /// already loaded.
    pub fn finish_loading(&self) {
        if self.is_loaded() {
            return;
        }
        let _loading = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.snapshot();
        let registry = Registry::load_capped(self.roots.clone(), old.limits.max_prompt_file_bytes);
        for d in registry.diagnostics() {
            tracing::warn!("{d}");
        }
        let snapshot = Snapshot::new(registry, old.config.clone());
        snapshot.warm();
        promptd_base::metrics::global().serving(snapshot.registry.len(), &snapshot.version);
        self.store(snapshot);
        self.loaded.send_replace(true);
    }

    /// Whether the prompt folders have been read.
    pub fn is_loaded(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Returns once the prompt folders have been read.
    pub async fn wait_loaded(&self) {
        let mut loaded = self.loaded.subscribe();
        // The sender lives as long as the library, which outlives this borrow.
        let _ = loaded.wait_for(|l| *l).await;
    }

    /// Like [`open`](Self::open) with explicit roots (tests, embedders).
    pub fn open_with_roots(
        options: LibraryOptions,
        roots: Vec<Arc<dyn PromptSource>>,
    ) -> Result<PromptLibrary, ConfigError> {
        let (config, limits) = load_config(&options)?;
        let registry = Registry::load_capped(roots.clone(), limits.max_prompt_file_bytes);
        for d in registry.diagnostics() {
            tracing::warn!("{d}");
        }
        let snapshot = Snapshot::new(registry, Arc::new(config));
        promptd_base::metrics::global().serving(snapshot.registry.len(), &snapshot.version);
        Ok(PromptLibrary {
            current: ArcSwap::from_pointee(snapshot),
            options,
            roots,
            loaded: tokio::sync::watch::Sender::new(true),
            loading: std::sync::Mutex::new(()),
            swaps: tokio::sync::watch::Sender::new(0),
            versions: crate::versions::Versions::new(),
            at_revision: Default::default(),
        })
    }

    /// Serves `snapshot` from now on and tells the swap's watchers.
    fn store(&self, snapshot: Snapshot) {
        self.current.store(Arc::new(snapshot));
        self.swaps.send_modify(|n| *n += 1);
        // What the load freed (file texts, the snapshot before) goes back once things settle.
        promptd_base::memory::note_activity();
    }

    /// Watches snapshot swaps: the value counts them and changes after every swap (a load, or a
    /// reload that changed prompts, the config or a file's diagnostics, such as a broken edit).
    pub fn subscribe_swaps(&self) -> tokio::sync::watch::Receiver<u64> {
        self.swaps.subscribe()
    }

    /// The current snapshot (cheap; hold it for a consistent view).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// The project folder (discovery, config and test cases are relative to it).
    pub fn cwd(&self) -> &std::path::Path {
        &self.options.cwd
    }

    /// The clock used for computed variables.
    pub fn clock(&self) -> &Clock {
        &self.options.clock
    }

    /// The roots in precedence order (lowest first).
    pub fn roots(&self) -> &[Arc<dyn PromptSource>] {
        &self.roots
    }

    /// The config file being used, if any, else where it would be.
    pub fn config_path(&self) -> PathBuf {
        self.options
            .config_path
            .clone()
            .or_else(|| std::env::var_os("PROMPTD_CONFIG").map(PathBuf::from))
            .unwrap_or_else(|| {
                self.options
                    .cwd
                    .join(promptd_base::config::CONFIG_FILE_NAME)
            })
    }

    /// Re-reads prompts (only changed files are re-parsed) and config, swapping atomically.
    /// Broken files and a broken config keep their last good versions: a changed file whose
    /// frontmatter does not parse, or whose template no longer compiles (it declares
    /// `engine: jinja`, or declares no engine and its last good version was Jinja), stays at its
    /// last good version and is reported in `problems` as `file:line:col: ...`.
    pub fn reload(&self) -> ReloadOutcome {
        self.reload_touched(None)
    }

    /// Like [`reload`](Self::reload), told by a file watcher which paths changed (`Some`):
    /// files it did not see change are taken unchanged without a `stat` (see
    /// [`Registry::load_touched`]).
    pub fn reload_touched(&self, touched: Option<&Touched>) -> ReloadOutcome {
        let _loading = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.snapshot();
        let mut problems = Vec::new();
        let (config, limits) = match load_config(&self.options) {
            Ok((c, limits)) => (Arc::new(c), limits),
            Err(e) => {
                problems.push(format!("{e} (keeping the last good config)"));
                (old.config.clone(), old.limits.clone())
            }
        };
        // Changed files are checked with the renderer's Jinja syntax: a broken template edit keeps
        // the last good version, like a broken YAML edit.
        let registry = Registry::load_touched(
            self.roots.clone(),
            Some(&old.registry),
            &crate::render::check_syntax,
            limits.max_prompt_file_bytes,
            touched,
        );
        problems.extend(registry.diagnostics().iter().map(ToString::to_string));
        let registry_settling = registry.settling();
        let config_changed = config.raw != old.config.raw;
        let changed = config_changed
            || match registry.changes_since(&old.registry) {
                Some(changes) => !changes.names().is_empty(),
                None => !registry.same_prompts(&old.registry),
            };
        if changed || registry.diagnostics() != old.registry.diagnostics() {
            let snapshot = Snapshot::after(registry, config, Some(&old));
            // Built here, on the reloading thread, so that no request pays for it.
            snapshot.warm_from(Some(&old));
            promptd_base::metrics::global().serving(snapshot.registry.len(), &snapshot.version);
            self.store(snapshot);
        }
        promptd_base::metrics::global().reload(problems.is_empty());
        ReloadOutcome {
            changed,
            problems,
            settling: registry_settling,
        }
    }

    /// Renders one prompt with user arguments.
    pub fn render(
        &self,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<RenderedPrompt, RenderError> {
        self.snapshot().render(name, args, &self.options.clock)
    }

    /// The git side of the library: prompts as of a revision, and their histories.
    pub fn versions(&self) -> &crate::versions::Versions {
        &self.versions
    }

    /// The snapshot that serves `name`, the prompt's name in it and the revision it was read at:
    /// the current snapshot, or, for `NAME@REV` when the current snapshot holds no prompt of
    /// that whole name, the snapshot as of `REV` ([`crate::versions`]), which holds `NAME`
    /// (else the error says it does not exist there). A name without `@` gets the current
    /// snapshot, whether or not it holds the prompt.
    pub fn resolve(&self, name: &str) -> Result<Resolved, VersionError> {
        let snap = self.snapshot();
        let current = |snapshot| Resolved {
            snapshot,
            name: name.to_string(),
            revision: None,
        };
        if snap.registry.get(name).is_some() {
            return Ok(current(snap));
        }
        match crate::versions::split_spec(name) {
            None => Ok(current(snap)),
            Some(Err(e)) => Err(e),
            Some(Ok((bare, rev))) => {
                let (at, commit) = self.snapshot_at(&snap, rev)?;
                if at.registry.get(bare).is_none() {
                    return Err(VersionError::MissingAtRevision {
                        name: bare.to_string(),
                        rev: rev.to_string(),
                        commit,
                    });
                }
                Ok(Resolved {
                    snapshot: at,
                    name: bare.to_string(),
                    revision: Some(rev.to_string()),
                })
            }
        }
    }

    /// `current` as of `rev` ([`Versions::roots_at`](crate::versions::Versions::roots_at)):
    /// the working copy's loader, dialects and renderer over the trees at that commit, and
    /// `current`'s config; with the commit, shortened.
    fn snapshot_at(
        &self,
        current: &Snapshot,
        rev: &str,
    ) -> Result<(Arc<Snapshot>, String), VersionError> {
        let at = self.versions.roots_at(current.registry.roots(), rev)?;
        let kept = |kept: &mut Option<lru::LruCache<String, Arc<Snapshot>>>| {
            kept.get_or_insert_with(|| {
                lru::LruCache::new(
                    std::num::NonZeroUsize::new(crate::versions::SNAPSHOTS_KEPT).expect("non-zero"),
                )
            })
            .get(&at.key)
            // Built with the config `current` has (the config file is the working copy's).
            .filter(|s| Arc::ptr_eq(&s.config, &current.config))
            .cloned()
        };
        let mut cache = self.at_revision.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(snap) = kept(&mut cache) {
            return Ok((snap, at.commit));
        }
        drop(cache);
        let registry = Registry::load_capped(at.roots, current.limits.max_prompt_file_bytes);
        let snap = Arc::new(Snapshot::new(registry, current.config.clone()));
        let mut cache = self.at_revision.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cache) = cache.as_mut() {
            cache.put(at.key, snap.clone());
        }
        Ok((snap, at.commit))
    }

    /// The `wit-get-prompts` contract for a trusted caller (the CLI): every prompt is visible,
    /// and a request over a limit is answered with `success: false` and the limit's message.
    pub fn get_prompts(&self, req: &GetPromptsRequest) -> GetPromptsResponse {
        self.get_prompts_for(req, Visibility::All)
            .unwrap_or_else(|e| GetPromptsResponse::refused(&e))
    }

    /// The `wit-get-prompts` contract for a caller that sees `visibility`, within the snapshot
    /// config's limits (`maxBatch`, `maxResponseBytes`).
    pub fn get_prompts_for(
        &self,
        req: &GetPromptsRequest,
        visibility: Visibility,
    ) -> Result<GetPromptsResponse, GetPromptsError> {
        let Some(name) = req.prompt_name.as_deref().filter(|n| n.contains('@')) else {
            return self
                .snapshot()
                .get_prompts(&self.options.clock, req, visibility);
        };
        // `NAME@REV`: answered from the snapshot at the revision, under the name asked for.
        match self.resolve(name) {
            Ok(Resolved {
                snapshot: snap,
                name: bare,
                ..
            }) => {
                let at = GetPromptsRequest {
                    prompt_name: Some(bare),
                    ..req.clone()
                };
                let mut resp = snap.get_prompts(&self.options.clock, &at, visibility)?;
                resp.metadata.prompt_name = Some(name.to_string());
                Ok(resp)
            }
            Err(e) => {
                let mut metadata = GetPromptsMetadata::new();
                metadata.prompt_name = Some(name.to_string());
                if e.is_caller_error() {
                    metadata.found = Some(false);
                }
                Ok(GetPromptsResponse {
                    success: false,
                    data: None,
                    errors: vec![e.to_string()],
                    warnings: Vec::new(),
                    metadata,
                })
            }
        }
    }
}

/// Which prompts a caller is served: the one visibility policy of `prompts/list`,
/// `prompts/get`, completion and `wit-get-prompts`. System prompts (the stages' internal
/// templates) are served to MCP clients only when the server runs with `--expose-system`; the
/// stages render them internally regardless, and the CLI (the prompt folders' owner) sees all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// User prompts only.
    UserOnly,
    /// User and system prompts.
    All,
}

impl Visibility {
    /// The visibility of an MCP server started with or without `--expose-system`.
    pub fn for_clients(expose_system: bool) -> Visibility {
        if expose_system {
            Visibility::All
        } else {
            Visibility::UserOnly
        }
    }

    /// Whether `t` is served.
    pub fn shows(self, t: &PromptTemplate) -> bool {
        self == Visibility::All || t.category == PromptCategory::User
    }
}

/// A `wit-get-prompts` request refused by a limit: the caller asked for too much.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetPromptsError {
    #[error(
        "promptNames: {count} distinct names, over the limit of {limit} per call \
         (limits.maxBatch); ask in several calls"
    )]
    TooManyNames { count: usize, limit: usize },
    #[error(
        "the result would exceed {limit} bytes (limits.maxResponseBytes) after {prompts} \
         prompt(s); ask for fewer promptNames or use includeContent=false"
    )]
    TooLarge { prompts: usize, limit: usize },
}

/// Reads the config and its limits; an invalid `limits` section is a config error.
fn load_config(options: &LibraryOptions) -> Result<(ProjectConfig, Limits), ConfigError> {
    let config = ProjectConfig::discover(options.config_path.as_deref(), &options.cwd)?;
    let limits = config
        .limits()
        .map_err(|message| ConfigError::InvalidLimits {
            path: config
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from("<config>")),
            message,
        })?;
    Ok((config, limits))
}

/// Input of `wit-get-prompts`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetPromptsRequest {
    /// Name of one prompt to return. Omit (and omit promptNames) to list every prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_name: Option<String>,
    /// Names of several prompts to return in one call (batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_names: Option<Vec<String>>,
    /// Render and include the filled prompt text (default true). False returns metadata only.
    #[serde(default = "default_true")]
    pub include_content: bool,
    /// Template arguments (name -> value). Strings are coerced to each argument's declared type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// Also list system prompts (internal templates of promptd's stages). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_system: bool,
}

fn default_true() -> bool {
    true
}

/// The envelope every `wit-get-prompts` call returns: the published contract field by field,
/// plus `title`, `category`, each argument's `type` and `default`, `provenance` and
/// `version_hash`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GetPromptsResponse {
    /// False when a requested prompt does not exist, a required argument is missing or an
    /// argument is invalid. A prompt whose template fails to render is still a success, with
    /// the reason in `errors` (one prompt) or `warnings` (a listing).
    pub success: bool,
    /// `{prompt}` for one prompt, `{prompts, totalCount}` for a listing or batch, null if not
    /// found or refused.
    pub data: Option<GetPromptsData>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    pub metadata: GetPromptsMetadata,
}

/// The `data` of a `wit-get-prompts` envelope.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum GetPromptsData {
    /// One prompt (`promptName`).
    One { prompt: Box<PromptSummary> },
    /// Every prompt, or a batch (`promptNames`).
    Many(Arc<PromptListing>),
}

// Immutable once built: a small listing keeps its JSON the first time it is written (a
// snapshot's listings are served again and again).
/// Prompts with their count.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptListing {
    prompts: Vec<Arc<PromptSummary>>,
    total_count: usize,
    /// The kept JSON; `None` once found too large to keep.
    #[serde(skip)]
    json: OnceLock<Option<KeptJson>>,
}

/// A listing's JSON, as text and as a value (the same JSON).
#[derive(Debug)]
struct KeptJson {
    text: Box<RawValue>,
    value: Value,
}

impl Serialize for PromptListing {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(serializer)
    }
}

/// The wire form of a [`PromptListing`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListingWire<'a> {
    prompts: &'a [Arc<PromptSummary>],
    total_count: usize,
}

impl PromptListing {
    /// A listing's JSON up to this many bytes is kept with it; above, its text and value would
    /// cost more memory than writing it costs time.
    const KEEP_JSON_BYTES: usize = 1 << 20;
    /// A listing of more prompts is not kept, and not written to find out.
    const KEEP_PROMPTS: usize = 4096;

    fn new(prompts: Vec<Arc<PromptSummary>>) -> PromptListing {
        PromptListing {
            total_count: prompts.len(),
            prompts,
            json: OnceLock::new(),
        }
    }

    /// The prompts listed (by name in a listing, in the order asked in a batch).
    pub fn prompts(&self) -> &[Arc<PromptSummary>] {
        &self.prompts
    }

    /// How many prompts are listed.
    pub fn total_count(&self) -> usize {
        self.total_count
    }

    fn wire(&self) -> ListingWire<'_> {
        ListingWire {
            prompts: &self.prompts,
            total_count: self.total_count,
        }
    }

    /// This listing's kept JSON, written the first time it is asked for; `None` for a listing
    /// too large to keep.
    fn kept_json(&self) -> serde_json::Result<Option<&KeptJson>> {
        if let Some(kept) = self.json.get() {
            return Ok(kept.as_ref());
        }
        let mut kept = None;
        if self.total_count <= Self::KEEP_PROMPTS {
            let text = serde_json::value::to_raw_value(&self.wire())?;
            if text.get().len() <= Self::KEEP_JSON_BYTES {
                let value = serde_json::to_value(self.wire())?;
                kept = Some(KeptJson { text, value });
            }
        }
        Ok(self.json.get_or_init(|| kept).as_ref())
    }
}

/// The `metadata` of a `wit-get-prompts` envelope; which fields are present depends on the
/// request (one prompt, a batch, a listing, not found).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptsMetadata {
    /// Always `wit-get-prompts`.
    pub tool: String,
    /// The requested prompt (`promptName`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_name: Option<String>,
    /// The requested prompts (`promptNames`), without repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_names: Option<Vec<String>>,
    /// False when the requested prompt does not exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<bool>,
    /// Number of prompts in `data.prompts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_prompts: Option<usize>,
    /// Whether rendered content is included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_included: Option<bool>,
    /// Number of arguments the caller passed in `args`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_args_provided: Option<usize>,
    /// In a listing, the prompt files that failed to load (each also a warning), so that a
    /// missing prompt has an answer; absent when every file loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_loaded: Option<Vec<NotLoaded>>,
}

/// A prompt file that failed to load, at the position of its first error.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotLoaded {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl NotLoaded {
    /// Every file of `registry` that failed to load.
    pub fn of(registry: &Registry) -> Vec<NotLoaded> {
        registry
            .not_loaded()
            .into_iter()
            .map(|d| NotLoaded {
                path: d.path.clone(),
                line: d.line,
                column: d.column,
                message: d.message.clone(),
            })
            .collect()
    }

    /// The warning a listing carries for it.
    pub fn warning(&self) -> String {
        format!(
            "{}:{}:{}: not loaded: {}",
            self.path, self.line, self.column, self.message
        )
    }
}

impl GetPromptsMetadata {
    fn new() -> GetPromptsMetadata {
        GetPromptsMetadata {
            tool: TOOL_NAME.to_string(),
            prompt_name: None,
            prompt_names: None,
            found: None,
            total_prompts: None,
            content_included: None,
            template_args_provided: None,
            not_loaded: None,
        }
    }
}

/// One prompt as listed to clients: its template's metadata, written straight from the
/// template (a listing holds no copy of it), and its render when content was asked for.
#[derive(Debug, Clone)]
pub struct PromptSummary {
    template: Arc<PromptTemplate>,
    /// The rendered text (when content was asked for and the render succeeded).
    pub content: Option<String>,
    /// Every variable the template used, with the value it used.
    pub template_args_used: Option<Map<String, Value>>,
    /// Which layer each used or supplied variable came from.
    pub provenance: Option<BTreeMap<String, VariableSource>>,
}

impl PromptSummary {
    /// Metadata only.
    pub fn of(t: &Arc<PromptTemplate>) -> PromptSummary {
        PromptSummary {
            template: t.clone(),
            content: None,
            template_args_used: None,
            provenance: None,
        }
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.template.name
    }

    /// The template listed.
    pub fn template(&self) -> &Arc<PromptTemplate> {
        &self.template
    }

    fn with_render(mut self, r: RenderedPrompt) -> PromptSummary {
        self.content = Some(r.text);
        self.template_args_used = Some(r.values);
        self.provenance = Some(r.provenance);
        self
    }

    fn wire(&self) -> SummaryWire<'_> {
        let t = &*self.template;
        SummaryWire {
            name: &t.name,
            title: t.title.as_deref(),
            description: t.description.as_deref().unwrap_or_default(),
            category: t.category,
            dialect: t.dialect,
            source: &t.rel_path,
            tool_metadata: ToolMetadata(&t.metadata),
            directives: &t.directives,
            arguments: Arguments(&t.arguments),
            content: self.content.as_deref(),
            template_args_used: self.template_args_used.as_ref(),
            provenance: self.provenance.as_ref(),
            version_hash: &t.version_hash,
        }
    }
}

impl Serialize for PromptSummary {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(serializer)
    }
}

impl JsonSchema for PromptSummary {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        SummaryWire::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        SummaryWire::json_schema(generator)
    }
}

// The wire form of a `PromptSummary`: the contract's field names and order (its doc comment is
// the schema's description).
/// One prompt as listed to clients.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PromptSummary")]
struct SummaryWire<'a> {
    name: &'a str,
    title: Option<&'a str>,
    /// The prompt's description; empty when it has none.
    description: &'a str,
    category: PromptCategory,
    /// The format of the prompt file (`jinja`, `vscode`, `claude`, …).
    dialect: Dialect,
    /// The file, relative to its prompt folder.
    source: &'a str,
    /// Tool-specific frontmatter (`model`, `allowed-tools`, `argument-hint`, …).
    #[serde(skip_serializing_if = "ToolMetadata::is_empty")]
    tool_metadata: ToolMetadata<'a>,
    /// Directives the prompt contains and promptd never runs (`shell`, `file`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    directives: &'a [&'static str],
    arguments: Arguments<'a>,
    /// The rendered text (when content was asked for and the render succeeded).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    /// Every variable the template used, with the value it used (after coercion to the
    /// declared type; config, default and computed values included).
    #[serde(skip_serializing_if = "Option::is_none")]
    template_args_used: Option<&'a Map<String, Value>>,
    /// Which layer each used or supplied variable came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    provenance: Option<&'a BTreeMap<String, VariableSource>>,
    #[serde(rename = "version_hash")]
    version_hash: &'a str,
}

/// The frontmatter keys of other tools a prompt file carries (see
/// [`crate::dialect::tool_metadata`]), written as a map without building one.
struct ToolMetadata<'a>(&'a Map<String, Value>);

impl ToolMetadata<'_> {
    fn entries(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0
            .iter()
            .filter(|(k, _)| crate::dialect::is_tool_key(k))
    }

    fn is_empty(&self) -> bool {
        self.entries().next().is_none()
    }
}

impl Serialize for ToolMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.entries())
    }
}

impl JsonSchema for ToolMetadata<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Map<String, Value>>::schema_name()
    }

    fn inline_schema() -> bool {
        <Map<String, Value>>::inline_schema()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Map<String, Value>>::json_schema(generator)
    }
}

/// A prompt's arguments as listed, written from the declarations.
struct Arguments<'a>(&'a [crate::registry::ArgumentSpec]);

impl Serialize for Arguments<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|a| ArgumentSummary {
            name: &a.name,
            description: a.description.as_deref(),
            required: a.required,
            arg_type: a.declared_type(),
            default: a.default.as_ref(),
        }))
    }
}

impl JsonSchema for Arguments<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Vec<ArgumentSummary<'static>>>::schema_name()
    }

    fn inline_schema() -> bool {
        <Vec<ArgumentSummary<'static>>>::inline_schema()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<ArgumentSummary<'static>>>::json_schema(generator)
    }
}

/// One argument as listed to clients.
#[derive(Serialize, JsonSchema)]
struct ArgumentSummary<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    required: bool,
    #[serde(rename = "type")]
    arg_type: Option<ArgType>,
    #[schemars(schema_with = "any_json_value")]
    default: Option<&'a Value>,
}

/// The schema of a value that may be any JSON (an argument's default), each kind spelled out:
/// a schema with no keyword at all says the same, but says it to no one.
fn any_json_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The argument's default: any JSON value, or null when it has none.",
        "anyOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array"},
            {"type": "object"},
            {"type": "null"}
        ]
    })
}

/// The not-found message, exactly as agents expect it.
pub fn not_found_message(name: &str) -> String {
    format!(
        "Prompt '{name}' not found. Use {TOOL_NAME} without promptName to see available prompts."
    )
}

/// The names among `candidates` a caller who typed `name` most likely meant, best first (at
/// most three): the same name in another case, the same name in another namespace
/// (`git:fix-issue` for `fix-issue`, or the reverse), then names within a small edit distance.
pub fn similar_names<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let typed = name.to_lowercase();
    let last = |n: &str| n.rsplit(':').next().unwrap_or(n).to_string();
    let typed_last = last(&typed);
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let lower = c.to_lowercase();
            if lower == typed {
                return Some((3.0, c));
            }
            if last(&lower) == typed_last {
                return Some((2.0, c));
            }
            let score = strsim::jaro_winkler(&typed, &lower);
            let close =
                strsim::damerau_levenshtein(&typed, &lower) <= (typed.chars().count() / 4).max(1);
            (close || score >= 0.9).then_some((score, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// "did you mean `a`, `b`?" for `names`, or `None` when there are none.
pub fn did_you_mean(names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    Some(format!("did you mean {}?", quoted.join(", ")))
}

/// Why a prompt's content is missing from a listing or batch, in the contract's words.
fn content_failure_warning(name: &str, e: &RenderError) -> String {
    format!("Failed to load content for prompt '{name}': {e}")
}

impl GetPromptsResponse {
    /// The envelope of a refused request.
    pub fn refused(e: &GetPromptsError) -> GetPromptsResponse {
        GetPromptsResponse {
            success: false,
            data: None,
            errors: vec![e.to_string()],
            warnings: Vec::new(),
            metadata: GetPromptsMetadata::new(),
        }
    }

    /// The prompt of a one-prompt answer.
    pub fn prompt(&self) -> Option<&PromptSummary> {
        match &self.data {
            Some(GetPromptsData::One { prompt }) => Some(prompt),
            _ => None,
        }
    }

    /// The prompts of a listing or batch answer.
    pub fn listing(&self) -> Option<&PromptListing> {
        match &self.data {
            Some(GetPromptsData::Many(listing)) => Some(listing),
            _ => None,
        }
    }

    /// This envelope as JSON: its compact text now, its value on demand. A listing's prompts
    /// are written from the JSON the listing keeps when it has some.
    pub fn to_json(&self) -> serde_json::Result<EnvelopeJson<'_>> {
        let kept = match self.listing() {
            Some(listing) => listing.kept_json()?,
            None => None,
        };
        // Written as raw JSON (serde's own output, not parsed again), for a result to carry as
        // it is.
        let text = match kept {
            Some(kept) => serde_json::value::to_raw_value(&self.with_data(&*kept.text))?,
            None => serde_json::value::to_raw_value(self)?,
        };
        Ok(EnvelopeJson {
            envelope: self,
            kept,
            text,
        })
    }

    /// This envelope with its `data` replaced, for writing.
    fn with_data<D: Serialize>(&self, data: D) -> EnvelopeWire<'_, D> {
        EnvelopeWire {
            success: self.success,
            data,
            errors: &self.errors,
            warnings: &self.warnings,
            metadata: &self.metadata,
        }
    }
}

/// The fields of a [`GetPromptsResponse`], in its order, with any `data`.
#[derive(Serialize)]
struct EnvelopeWire<'a, D> {
    success: bool,
    data: D,
    errors: &'a [String],
    warnings: &'a [String],
    metadata: &'a GetPromptsMetadata,
}

/// A `wit-get-prompts` envelope as JSON (see [`GetPromptsResponse::to_json`]).
pub struct EnvelopeJson<'a> {
    envelope: &'a GetPromptsResponse,
    /// The listing's kept JSON, when the envelope is a listing that keeps it.
    kept: Option<&'a KeptJson>,
    /// The compact JSON text.
    pub text: Box<RawValue>,
}

impl EnvelopeJson<'_> {
    /// The envelope as a JSON value (the JSON of [`text`](Self::text)).
    pub fn value(&self) -> serde_json::Result<Value> {
        let Some(kept) = self.kept else {
            return serde_json::to_value(self.envelope);
        };
        let mut value = serde_json::to_value(self.envelope.with_data(()))?;
        value["data"] = kept.value.clone();
        Ok(value)
    }
}

/// `names` without repeats, in the order of their first occurrence.
fn distinct(names: &[String]) -> Vec<&str> {
    let mut seen = std::collections::HashSet::with_capacity(names.len().min(1024));
    names
        .iter()
        .map(String::as_str)
        .filter(|n| seen.insert(*n))
        .collect()
}

/// Answers a `wit-get-prompts` request against one snapshot, showing only what `visibility`
/// allows (a hidden prompt is "not found", like a missing one). A batch is deduplicated (first
/// occurrence wins) and capped at `limits.max_batch`; rendering stops with an error once the
/// rendered text passes `limits.max_response_bytes`.
///
/// A caller error in a render (a missing required or an invalid argument) fails a single
/// prompt or a batch (`success: false`, the error names the argument); in a listing of every
/// prompt it is a warning, like any render failure. A template that fails to render is a
/// partial success: the prompt without content and the reason in `errors` (single) or
/// `warnings` (batch, listing).
fn get_prompts(
    snap: &Snapshot,
    clock: &Clock,
    req: &GetPromptsRequest,
    visibility: Visibility,
    limits: &Limits,
) -> Result<GetPromptsResponse, GetPromptsError> {
    let names = req.prompt_names.as_deref().map(distinct);
    if let Some(names) = &names
        && names.len() > limits.max_batch
    {
        return Err(GetPromptsError::TooManyNames {
            count: names.len(),
            limit: limits.max_batch,
        });
    }
    let lookup = |name: &str| snap.visible(name, visibility);
    let include_system = req.include_system && visibility == Visibility::All;
    let args = req.args.clone().unwrap_or_default();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut metadata = GetPromptsMetadata::new();

    let render = |t: &PromptTemplate| snap.render_template(t, &args, clock);

    if req.include_system && !include_system {
        warnings.push(
            "includeSystem ignored: this server does not serve system prompts (--expose-system)"
                .to_string(),
        );
    }

    if let Some(name) = &req.prompt_name {
        metadata.prompt_name = Some(name.clone());
        let Some(t) = lookup(name) else {
            metadata.found = Some(false);
            warnings.extend(did_you_mean(&snap.similar_names(name, visibility)));
            return Ok(GetPromptsResponse {
                success: false,
                data: None,
                errors: vec![not_found_message(name)],
                warnings,
                metadata,
            });
        };
        let mut summary = PromptSummary::of(t);
        let mut caller_error = false;
        if req.include_content {
            match render(t) {
                Ok(r) => {
                    warnings.extend(r.warnings.iter().cloned());
                    summary = summary.with_render(r);
                }
                Err(e) if e.is_caller_error() => {
                    caller_error = true;
                    errors.push(e.to_string());
                }
                Err(e) => errors.push(format!("Failed to load prompt content: {e}")),
            }
        }
        if summary
            .content
            .as_ref()
            .is_some_and(|c| c.len() > limits.max_response_bytes)
        {
            return Err(GetPromptsError::TooLarge {
                prompts: 1,
                limit: limits.max_response_bytes,
            });
        }
        metadata.content_included = Some(summary.content.is_some());
        metadata.template_args_provided = Some(args.len());
        return Ok(GetPromptsResponse {
            success: !caller_error,
            data: Some(GetPromptsData::One {
                prompt: Box::new(summary),
            }),
            errors,
            warnings,
            metadata,
        });
    }

    metadata.content_included = Some(req.include_content);
    metadata.template_args_provided = Some(args.len());
    if names.is_none() {
        let failed = NotLoaded::of(&snap.registry);
        if !failed.is_empty() {
            warnings.extend(failed.iter().map(NotLoaded::warning));
            metadata.not_loaded = Some(failed);
        }
    }
    if names.is_none() && !req.include_content {
        let listing = snap.metadata_listing(include_system);
        metadata.total_prompts = Some(listing.total_count());
        return Ok(GetPromptsResponse {
            success: true,
            data: Some(GetPromptsData::Many(listing)),
            errors,
            warnings,
            metadata,
        });
    }
    let selected: Vec<&Arc<PromptTemplate>> = match &names {
        Some(names) => {
            let mut found = Vec::new();
            for n in names {
                match lookup(n) {
                    Some(t) => found.push(t),
                    None => errors.push(not_found_message(n)),
                }
            }
            found
        }
        None => snap
            .registry
            .prompts()
            .filter(|t| include_system || t.category == PromptCategory::User)
            .collect(),
    };
    let mut prompts = Vec::with_capacity(selected.len());
    let mut content_bytes = 0usize;
    for t in selected {
        let mut summary = PromptSummary::of(t);
        if req.include_content {
            match render(t) {
                Ok(r) => summary = summary.with_render(r),
                Err(e) if names.is_some() && e.is_caller_error() => errors.push(e.to_string()),
                Err(e) => warnings.push(content_failure_warning(&t.name, &e)),
            }
        }
        content_bytes += summary.content.as_ref().map_or(0, String::len);
        if content_bytes > limits.max_response_bytes {
            return Err(GetPromptsError::TooLarge {
                prompts: prompts.len() + 1,
                limit: limits.max_response_bytes,
            });
        }
        prompts.push(Arc::new(summary));
    }
    let listing = PromptListing::new(prompts);
    metadata.prompt_names = names.map(|n| n.into_iter().map(str::to_string).collect());
    metadata.total_prompts = Some(listing.total_count());
    Ok(GetPromptsResponse {
        success: errors.is_empty(),
        data: Some(GetPromptsData::Many(Arc::new(listing))),
        errors,
        warnings,
        metadata,
    })
}

/// Builds library options from the common CLI/server flags.
pub fn options_from_flags(
    prompt_dirs: &[PathBuf],
    config: Option<&Path>,
    clock: Clock,
) -> LibraryOptions {
    LibraryOptions {
        prompt_dirs: prompt_dirs.to_vec(),
        config_path: config.map(Path::to_path_buf),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        clock,
        ..LibraryOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_names_prefer_another_namespace_then_small_edits() {
        let names = [
            "git:fix-issue",
            "code_review",
            "write_tests",
            "fix-it",
            "review",
        ];
        assert_eq!(similar_names("fix-issue", names)[0], "git:fix-issue");
        assert_eq!(similar_names("git:fix-issue", ["fix-issue"]), ["fix-issue"]);
        assert_eq!(similar_names("code_reveiw", names), ["code_review"]);
        assert_eq!(similar_names("Code_Review", names)[0], "code_review");
        assert!(similar_names("zzzzzzzz", names).is_empty());
        assert!(similar_names("x", names).len() <= 3);
        assert_eq!(did_you_mean(&[]), None);
        assert_eq!(
            did_you_mean(&["a".into(), "b".into()]).unwrap(),
            "did you mean `a`, `b`?"
        );
    }
    use crate::registry::DirSource;

    #[test]
    fn a_snapshot_renders_its_own_prompts_over_its_own_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "A {{ project }} {{ x }}\n").unwrap();
        std::fs::write(dir.path().join("cfg.json"), r#"{"project":"P"}"#).unwrap();
        let lib = PromptLibrary::open_with_roots(
            LibraryOptions {
                cwd: dir.path().to_path_buf(),
                config_path: Some(dir.path().join("cfg.json")),
                ..Default::default()
            },
            vec![Arc::new(DirSource::new(dir.path()))],
        )
        .unwrap();
        let snap = lib.snapshot();
        let args: Map<String, Value> = serde_json::from_str(r#"{"x":"1"}"#).unwrap();
        assert_eq!(
            snap.render("a", &args, lib.clock()).unwrap().text,
            "A P 1\n"
        );
        let t = snap.registry.get("a").unwrap();
        assert_eq!(
            snap.render_template(t, &args, lib.clock()).unwrap().text,
            "A P 1\n"
        );
        let missing = snap.render("b", &args, lib.clock()).unwrap_err();
        assert!(
            matches!(missing, RenderError::UnknownPrompt { .. }),
            "{missing}"
        );
        // A template of another snapshot that this one does not hold is unknown here.
        let mut foreign = (**t).clone();
        foreign.name = "b".into();
        let foreign = snap
            .render_template(&foreign, &args, lib.clock())
            .unwrap_err();
        assert!(
            matches!(foreign, RenderError::UnknownPrompt { .. }),
            "{foreign}"
        );
    }

    #[test]
    fn reload_builds_the_listings_before_the_swap() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "A {{ x }}\n").unwrap();
        let lib = library_over(dir.path());
        assert!(lib.snapshot().listings[0].get().is_none(), "built lazily");
        std::fs::write(dir.path().join("b.md"), "B\n").unwrap();
        assert!(lib.reload().changed);
        let snap = lib.snapshot();
        let user = snap.listings[0]
            .get()
            .expect("user listing built by reload");
        assert_eq!(user.total_count, 2);
        assert!(
            snap.listings[1].get().is_some(),
            "full listing built by reload"
        );
    }

    /// The envelope's JSON text and value, checked against serde's own writing of it.
    fn assert_writes_as_serde(resp: &GetPromptsResponse) {
        let json = resp.to_json().unwrap();
        assert_eq!(json.text.get(), serde_json::to_string(resp).unwrap());
        let value = json.value().unwrap();
        assert_eq!(value, serde_json::to_value(resp).unwrap());
        // The same keys in the same order.
        assert_eq!(value.to_string(), json.text.get());
    }

    fn request(json: &str) -> GetPromptsRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_envelope_writes_as_serde_and_a_small_listing_keeps_its_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.md"),
            "---\ndescription: \"A \\\"quoted\\\" é\\n\"\narguments:\n  \
             n: {type: number, default: 1.5}\n  x: {required: true}\n---\n\
             A {{ x }} {{ n }}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.md"), "B\n").unwrap();
        let lib = library_over(dir.path());
        for req in [
            r#"{"includeContent": false}"#,
            r#"{"includeContent": false, "args": {"x": 1}, "includeSystem": true}"#,
            r#"{"args": {"x": "1"}}"#,
            r#"{"promptName": "a", "args": {"x": "1", "n": "2.25"}}"#,
            r#"{"promptName": "a"}"#,
            r#"{"promptName": "missing"}"#,
            r#"{"promptNames": ["b", "missing", "a"], "args": {"x": "y"}}"#,
        ] {
            let resp = lib.get_prompts(&request(req));
            assert_writes_as_serde(&resp);
            // Twice: the second time from the listing's kept JSON, where it has some.
            assert_writes_as_serde(&resp);
        }
        let resp = lib.get_prompts(&request(r#"{"includeContent": false}"#));
        let listing = resp.listing().unwrap();
        let kept = listing.json.get().unwrap().as_ref();
        let kept = kept.expect("the snapshot's listing keeps its JSON");
        assert_eq!(kept.value, serde_json::to_value(listing).unwrap());
        assert_eq!(kept.text.get(), serde_json::to_string(listing).unwrap());
        assert!(std::ptr::eq(listing.kept_json().unwrap().unwrap(), kept));
        let snap = lib.snapshot();
        assert!(std::ptr::eq(listing, &**snap.listings[0].get().unwrap()));
        let refused =
            GetPromptsResponse::refused(&GetPromptsError::TooManyNames { count: 3, limit: 2 });
        assert_writes_as_serde(&refused);
    }

    #[test]
    fn a_listing_over_the_kept_size_is_written_for_each_answer() {
        let dir = tempfile::tempdir().unwrap();
        let description = "d".repeat(4096);
        let count = PromptListing::KEEP_JSON_BYTES / description.len() + 1;
        for i in 0..count {
            std::fs::write(
                dir.path().join(format!("p{i:04}.md")),
                format!("---\ndescription: {description}\n---\nP\n"),
            )
            .unwrap();
        }
        let lib = library_over(dir.path());
        let resp = lib.get_prompts(&request(r#"{"includeContent": false}"#));
        assert_eq!(resp.listing().unwrap().total_count(), count);
        assert_writes_as_serde(&resp);
        assert!(resp.to_json().unwrap().text.get().len() > PromptListing::KEEP_JSON_BYTES);
        assert!(
            resp.listing().unwrap().json.get().unwrap().is_none(),
            "found too large, not kept"
        );
    }

    /// A library over `dir` whose files were all last modified long enough ago for their
    /// stamps to be trusted.
    fn settled_library(dir: &std::path::Path, names: &[&str]) -> PromptLibrary {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for name in names {
            let path = dir.join(name);
            std::fs::write(&path, format!("{name} {{{{ x }}}}\n")).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        library_over(dir)
    }

    /// A library over the prompt folder `dir` alone.
    fn library_over(dir: &std::path::Path) -> PromptLibrary {
        PromptLibrary::open_with_roots(
            LibraryOptions {
                cwd: dir.to_path_buf(),
                ..Default::default()
            },
            vec![Arc::new(DirSource::new(dir))],
        )
        .unwrap()
    }

    fn body(lib: &PromptLibrary, name: &str) -> String {
        lib.snapshot().registry.get(name).unwrap().body.clone()
    }

    #[test]
    fn a_reload_told_which_files_changed_reads_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let lib = settled_library(dir.path(), &["a.md", "b.md"]);
        std::fs::write(dir.path().join("a.md"), "A2\n").unwrap();
        std::fs::write(dir.path().join("b.md"), "B2\n").unwrap();
        // Told only of b.md: a.md is not even looked at, and only b's entries are rebuilt.
        let before = lib.snapshot();
        let b = crate::registry::Touched::new([dir.path().join("b.md")]);
        assert!(lib.reload_touched(Some(&b)).changed);
        assert_eq!(body(&lib, "b"), "B2\n");
        assert_eq!(body(&lib, "a"), "a.md {{ x }}\n");
        let changes = lib
            .snapshot()
            .registry
            .changes_since(&before.registry)
            .cloned();
        assert_eq!(changes.unwrap().names(), ["b"]);
        // A changed folder covers every file below it.
        let root = crate::registry::Touched::new([dir.path().to_path_buf()]);
        assert!(lib.reload_touched(Some(&root)).changed);
        assert_eq!(body(&lib, "a"), "A2\n");
        // A new file the watcher names is read and served.
        std::fs::write(dir.path().join("c.md"), "C\n").unwrap();
        let c = crate::registry::Touched::new([dir.path().join("c.md")]);
        assert!(lib.reload_touched(Some(&c)).changed);
        assert_eq!(body(&lib, "c"), "C\n");
        // A reload that checks every file finds one the watcher did not name.
        std::fs::write(dir.path().join("d.md"), "D\n").unwrap();
        assert!(lib.reload().changed);
        assert_eq!(body(&lib, "d"), "D\n");
    }

    /// What a snapshot serves, compared between an update from named files and a full reload:
    /// prompts (name, file, content hash, body), findings, shadowing, version, listing entries
    /// and every prompt's render.
    fn served(snap: &Snapshot) -> Vec<String> {
        let clock = Clock::parse("2025-03-15").unwrap();
        let args: Map<String, Value> = serde_json::from_str(r#"{"x":"1"}"#).unwrap();
        let mut out = vec![format!("version {}", snap.version)];
        for t in snap.registry.prompts() {
            let render = match snap.render(&t.name, &args, &clock) {
                Ok(r) => r.text,
                Err(e) => format!("error: {e}"),
            };
            out.push(format!(
                "{} {} {} {:?} -> {render:?}",
                t.name, t.path, t.version_hash, t.body
            ));
        }
        let mut findings: Vec<String> = snap
            .registry
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect();
        findings.sort();
        out.extend(findings);
        let mut shadowed: Vec<String> = snap
            .registry
            .shadowed()
            .iter()
            .map(|s| format!("{} {} by {}", s.name, s.hidden, s.by))
            .collect();
        shadowed.sort();
        out.extend(shadowed);
        out.push(format!("settling {}", snap.registry.settling()));
        for listing in [snap.metadata_listing(false), snap.metadata_listing(true)] {
            out.push(serde_json::to_string(&*listing).unwrap());
        }
        out
    }

    #[test]
    fn an_update_from_named_files_serves_what_a_full_reload_serves() {
        let lower = tempfile::tempdir().unwrap();
        let upper = tempfile::tempdir().unwrap();
        let dirs = [lower.path(), upper.path()].map(|d| {
            std::fs::create_dir(d.join("system")).unwrap();
            std::fs::canonicalize(d).unwrap()
        });
        let roots: Vec<Arc<dyn PromptSource>> = dirs
            .iter()
            .map(|d| Arc::new(DirSource::new(d)) as Arc<dyn PromptSource>)
            .collect();
        let config = Arc::new(ProjectConfig::default());
        let load = |previous: Option<&Snapshot>, touched: Option<&Touched>| {
            let registry = Registry::load_touched(
                roots.clone(),
                previous.map(|p| &*p.registry),
                &crate::render::check_syntax,
                Limits::default().max_prompt_file_bytes,
                touched,
            );
            // A deleted file stays served for the whole run (its grace never ends), so that the
            // two loads of a step, a moment apart, decide alike.
            let registry = if previous.is_none() {
                registry.with_removed_grace(std::time::Duration::from_secs(3600))
            } else {
                registry
            };
            let snap = Snapshot::after(registry, config.clone(), previous);
            snap.warm_from(previous);
            snap
        };
        let mut current = load(None, None);
        // Every write gets its own modification time, long enough ago that no read waits for
        // the file to settle, and distinct so that stamps tell the versions apart.
        let base = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        let mut rng = fastrand::Rng::with_seed(18);
        let mut updates = 0;
        for step in 0..200u64 {
            let dir = &dirs[rng.usize(..2)];
            let file = [
                "a.md",
                "b.md",
                "c.md",
                "system/s.md",
                "notes.txt",
                ".hidden.md",
            ][rng.usize(..6)];
            let path = dir.join(file);
            let text = match rng.usize(..9) {
                0 => None,
                1 => Some("---\ntitle: [\n---\nbroken frontmatter\n".to_string()),
                2 => Some("---\nengine: jinja\n---\n{{ broken\n".to_string()),
                3 => Some(format!(
                    "---\nname: {}\n---\nnamed in step {step}\n",
                    ["a", "b", "x"][rng.usize(..3)]
                )),
                4 => Some(format!("{step}: {{% include 'b' %}} {{{{ x }}}}\n")),
                5 => Some(String::new()),
                _ => Some(format!("{file} in step {step}: {{{{ x }}}}\n")),
            };
            let op = format!("step {step}: {} <- {text:?}", path.display());
            match &text {
                Some(text) => {
                    std::fs::write(&path, text).unwrap();
                    std::fs::File::options()
                        .write(true)
                        .open(&path)
                        .unwrap()
                        .set_modified(base + std::time::Duration::from_millis(step))
                        .unwrap();
                }
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
            let touched = Touched::new([path.clone()]);
            let updated = load(Some(&current), Some(&touched));
            let full = load(Some(&current), None);
            assert_eq!(served(&updated), served(&full), "{op}");
            if updated.registry.changes_since(&current.registry).is_some() {
                updates += 1;
            }
            current = updated;
        }
        // About half the steps are updates; the others touch a name that more than one file
        // claims (a collision, a shadowed name) and reload fully.
        assert!(updates > 60, "{updates} of 200 steps were updates");
    }

    #[test]
    fn a_reload_keeps_what_it_built_for_unchanged_prompts() {
        let dir = tempfile::tempdir().unwrap();
        let lib = settled_library(dir.path(), &["a.md", "b.md"]);
        let before = lib.snapshot();
        before.warm();
        let entry = |snap: &Snapshot, name: &str| {
            let all = snap.all_listing(None);
            let i = all.prompts.iter().position(|s| s.name() == name).unwrap();
            all.prompts[i].clone()
        };
        std::fs::write(dir.path().join("b.md"), "B2\n").unwrap();
        assert!(lib.reload().changed);
        let after = lib.snapshot();
        assert!(
            Arc::ptr_eq(
                before.registry.get("a").unwrap(),
                after.registry.get("a").unwrap()
            ),
            "an unchanged file is not parsed again"
        );
        assert!(Arc::ptr_eq(&entry(&before, "a"), &entry(&after, "a")));
        assert!(!Arc::ptr_eq(&entry(&before, "b"), &entry(&after, "b")));
        assert_eq!(
            entry(&after, "b").template().version_hash,
            after.registry.get("b").unwrap().version_hash
        );
        // The user listing shares the entries of the full one.
        let user = after.metadata_listing(false);
        assert!(Arc::ptr_eq(
            &user.prompts[0],
            &entry(&after, user.prompts[0].name())
        ));
    }

    #[tokio::test]
    async fn a_deferred_library_serves_nothing_until_it_has_read_its_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "A {{ x }}\n").unwrap();
        let lib = Arc::new(
            PromptLibrary::open_deferred(LibraryOptions {
                cwd: dir.path().to_path_buf(),
                prompt_dirs: vec![dir.path().to_path_buf()],
                ..Default::default()
            })
            .unwrap(),
        );
        assert!(!lib.is_loaded());
        assert!(lib.snapshot().registry.is_empty());
        assert!(!lib.snapshot().is_warm());
        let waiting = tokio::spawn({
            let lib = lib.clone();
            async move {
                lib.wait_loaded().await;
                lib.snapshot().registry.get("a").is_some()
            }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "waits for the load");
        lib.finish_loading();
        assert!(waiting.await.unwrap(), "the waiter sees the loaded prompts");
        assert!(lib.is_loaded() && lib.snapshot().is_warm());
        let version = lib.snapshot().version.clone();
        // A second call reads nothing again; a reload keeps the version of unchanged files.
        lib.finish_loading();
        lib.reload();
        assert_eq!(lib.snapshot().version, version);
    }
}
