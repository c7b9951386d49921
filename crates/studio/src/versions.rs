//! The studio's versions and compare pages: a prompt's git history ([`Versions::history`]:
//! the commits that changed its file, each with the prompt's version hash), and two variants
//! side by side, each `NAME` (the working copy) or `NAME@REV` (as of a git revision) with its
//! own arguments: the rendered texts' line diff, and, when run, both answers. Rendering, diffing,
//! versions and runs are the library's and the stages' ([`promptd_core::compare`],
//! [`Stages::run`]); this module turns query fields into requests and prints the result.
//!
//! Routes: `GET /studio/history?prompt=NAME`; `GET /studio/compare?left=SPEC&right=SPEC`
//! with `l.ARG=VALUE` / `r.ARG=VALUE` for each side's arguments (`a.ARG=VALUE`, the prompt
//! page's form, fills both sides); `POST /studio/compare` (the same form, both variants run
//! against the configured model, one after the other, and recorded like any run);
//! `GET /studio/runs/diff?prompt=NAME&a=ID&b=ID` (two recorded runs: their facts, and the diffs
//! of the messages sent and of the answers). Behind the
//! studio's token and `Host`/`Origin` guards ([`super::router`]); server-rendered, every value
//! HTML-escaped, no script.
//!
//! [`Versions::history`]: promptd_core::versions::Versions::history
//! [`Stages::run`]: promptd_stages::Stages::run

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde::Serialize;
use serde_json::{Map, Value};

use promptd_core::compare::{self, RenderedVariant, SideBySide};
use promptd_core::library::PromptLibrary;
use promptd_core::versions::History;
use promptd_stages::run::RunRecord;

use super::web::{StudioState, asset, fault, form_page, plain};
use super::{encoded, prompt_href};

/// The history page.
pub const HISTORY_PATH: &str = "/studio/history";
/// The compare page (GET: rendered diff; POST: both variants run).
pub const COMPARE_PATH: &str = "/studio/compare";
/// Two recorded runs of one prompt compared (`?prompt=NAME&a=ID&b=ID`).
pub const RUN_DIFF_PATH: &str = "/studio/runs/diff";
/// The most commits the history page lists.
pub const HISTORY_LISTED: usize = 200;

const VERSIONS_CSS: &str = include_str!("assets/versions.css");

pub(crate) fn routes(state: Arc<StudioState>) -> axum::Router {
    axum::Router::new()
        .route(HISTORY_PATH, get(history_page))
        .route(COMPARE_PATH, get(compare_page).post(compare_run))
        .route(RUN_DIFF_PATH, get(run_diff_page))
        .route("/studio/versions.css", get(versions_css))
        .with_state(state)
}

type Pairs = Query<Vec<(String, String)>>;

fn field<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// One commit of the history as the page lists it.
#[derive(Debug, Serialize)]
struct Row {
    short: String,
    date: String,
    author: String,
    summary: String,
    version_hash: Option<String>,
    /// `NAME@short`.
    spec: String,
    /// This version against the working copy.
    compare_href: String,
}

#[derive(Debug, Serialize)]
struct HistoryPage {
    prompt: String,
    /// The prompt's page.
    prompt_href: String,
    path: String,
    working: String,
    rows: Vec<Row>,
    truncated: bool,
    error: Option<String>,
}

fn history_view(name: &str, history: Result<Arc<History>, String>) -> HistoryPage {
    match history {
        Ok(h) => HistoryPage {
            prompt: name.to_string(),
            prompt_href: prompt_href(name),
            path: h.path.clone(),
            working: h.working.clone(),
            rows: h
                .versions
                .iter()
                .map(|v| {
                    let spec = format!("{name}@{}", v.short);
                    Row {
                        compare_href: format!(
                            "{COMPARE_PATH}?left={}&right={}",
                            encoded(&spec),
                            encoded(name)
                        ),
                        spec,
                        short: v.short.clone(),
                        date: v.date.clone(),
                        author: v.author.clone(),
                        summary: v.summary.clone(),
                        version_hash: v.version_hash.clone(),
                    }
                })
                .collect(),
            truncated: h.truncated,
            error: None,
        },
        Err(e) => HistoryPage {
            prompt: name.to_string(),
            prompt_href: prompt_href(name),
            path: String::new(),
            working: String::new(),
            rows: Vec::new(),
            truncated: false,
            error: Some(e),
        },
    }
}

async fn history_page(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    state.library.wait_loaded().await;
    let built = tokio::task::spawn_blocking(move || {
        let snapshot = state.library.snapshot();
        let Some(name) = field(&pairs, "prompt") else {
            return plain(
                StatusCode::BAD_REQUEST,
                "query parameter `prompt` is required\n",
            );
        };
        let Some(prompt) = state.options.prompt(&snapshot, name) else {
            return plain(
                StatusCode::NOT_FOUND,
                &format!("{}\n", promptd_core::library::not_found_message(name)),
            );
        };
        let history = state
            .library
            .versions()
            .history(prompt, HISTORY_LISTED)
            .map_err(|e| e.to_string());
        form_page("history.html", &history_view(name, history))
    })
    .await;
    built.unwrap_or_else(|_| fault("the history could not be built"))
}

/// One argument's text field on one side.
#[derive(Debug, Serialize)]
struct ArgField {
    name: String,
    /// `l.NAME` or `r.NAME`.
    input: String,
    value: String,
    required: bool,
    description: Option<String>,
}

/// A run's outcome as the compare page shows it.
#[derive(Debug, Serialize)]
struct Answer {
    answer: String,
    error: Option<String>,
    model: String,
    tokens_in: u64,
    tokens_out: u64,
    latency_ms: String,
    id: String,
}

impl Answer {
    fn of(record: &RunRecord) -> Answer {
        Answer {
            answer: record.answer.clone(),
            error: record.error.clone(),
            model: record.model.clone(),
            tokens_in: record.tokens_in,
            tokens_out: record.tokens_out,
            latency_ms: format!("{:.0}", record.latency_ms),
            id: record.id.clone(),
        }
    }
}

/// One variant: what was asked, its form, its render, its run.
#[derive(Debug, Serialize)]
struct SideView {
    /// The form's key for its spec (`left`, `right`, `v3`, …) and the prefix of its own
    /// arguments (`l.`, `r.`, `v3.`, …).
    key: String,
    prefix: String,
    spec: String,
    fields: Vec<ArgField>,
    rendered: Option<RenderedVariant>,
    error: Option<String>,
    run: Option<Answer>,
    /// The run did not start (why).
    run_error: Option<String>,
}

/// A variant after the first two, diffed against the left one.
#[derive(Debug, Serialize)]
struct MoreView {
    side: SideView,
    diff: Option<SideBySide>,
}

#[derive(Debug, Serialize)]
struct ComparePage {
    left: SideView,
    right: SideView,
    diff: Option<SideBySide>,
    /// Variants 3 to [`MAX_VARIANTS`], each diffed against the left.
    more: Vec<MoreView>,
    /// The key of the empty field that adds one more variant (none at the limit).
    next_key: Option<String>,
    /// Whether this answer comes from a run (POST).
    ran: bool,
    model_configured: bool,
}

/// The arguments of one side: its own `l.`/`r.` fields, else the shared `a.` ones.
fn side_args(pairs: &[(String, String)], prefix: &str) -> Map<String, Value> {
    let own: Vec<(&str, &str)> = pairs
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?, v.as_str())))
        .collect();
    let shared = super::form_args(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut args = shared;
    for (k, v) in own {
        if v.is_empty() {
            args.remove(k);
        } else if !k.is_empty() {
            args.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
    args
}

/// The most variants one comparison shows side by side.
pub const MAX_VARIANTS: usize = 6;

/// The form keys of the variants after the first two that `pairs` fills (`v3`, `v4`, … in
/// order, up to [`MAX_VARIANTS`]), with their specs.
fn more_specs(pairs: &[(String, String)]) -> Vec<(String, String)> {
    (3..=MAX_VARIANTS)
        .filter_map(|n| {
            let key = format!("v{n}");
            field(pairs, &key).map(|spec| (key, spec.to_string()))
        })
        .collect()
}

/// The arguments of the variant whose fields start with `prefix`: [`side_args`]; a variant
/// after the first two that has no fields of its own yet (just added) takes the left's.
fn variant_args(pairs: &[(String, String)], prefix: &str) -> Map<String, Value> {
    let own = pairs.iter().any(|(k, _)| k.starts_with(prefix));
    if own || prefix == "l." || prefix == "r." {
        side_args(pairs, prefix)
    } else {
        side_args(pairs, "l.")
    }
}

/// Renders one side of the form.
fn side(
    library: &PromptLibrary,
    state: &StudioState,
    key: &str,
    spec: &str,
    prefix: &str,
    args: &Map<String, Value>,
) -> SideView {
    let resolved = library.resolve(spec);
    let fields = match &resolved {
        Ok(found) => state
            .options
            .prompt(&found.snapshot, &found.name)
            .map(|t| {
                t.arguments
                    .iter()
                    .map(|a| ArgField {
                        name: a.name.clone(),
                        input: format!("{prefix}{}", a.name),
                        value: args
                            .get(&a.name)
                            .map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            })
                            .unwrap_or_default(),
                        required: a.required,
                        description: a.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let (rendered, error) =
        match compare::render_variant(library, spec, args, state.options.visibility) {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e.to_string())),
        };
    SideView {
        key: key.to_string(),
        prefix: prefix.to_string(),
        spec: spec.to_string(),
        fields,
        rendered,
        error,
        run: None,
        run_error: None,
    }
}

/// The page for the form's fields; the error when `left` is missing.
fn compare_view(
    state: &StudioState,
    pairs: &[(String, String)],
) -> Result<ComparePage, &'static str> {
    let Some(left) = field(pairs, "left") else {
        return Err("query parameter `left` is required (NAME or NAME@REV)\n");
    };
    let right = field(pairs, "right").unwrap_or(left);
    let library = &state.library;
    let left = side(library, state, "left", left, "l.", &side_args(pairs, "l."));
    let right = side(
        library,
        state,
        "right",
        right,
        "r.",
        &side_args(pairs, "r."),
    );
    let against_left = |other: &SideView| match (&left.rendered, &other.rendered) {
        (Some(a), Some(b)) => Some(compare::side_by_side(&a.text, &b.text)),
        _ => None,
    };
    let diff = against_left(&right);
    let more: Vec<MoreView> = more_specs(pairs)
        .into_iter()
        .map(|(key, spec)| {
            let prefix = format!("{key}.");
            let side = side(
                library,
                state,
                &key,
                &spec,
                &prefix,
                &variant_args(pairs, &prefix),
            );
            MoreView {
                diff: against_left(&side),
                side,
            }
        })
        .collect();
    let next_key = (more.len() + 2 < MAX_VARIANTS).then(|| {
        let taken: Vec<&str> = more.iter().map(|m| m.side.key.as_str()).collect();
        (3..=MAX_VARIANTS)
            .map(|n| format!("v{n}"))
            .find(|k| !taken.contains(&k.as_str()))
            .unwrap_or_default()
    });
    Ok(ComparePage {
        left,
        right,
        diff,
        more,
        next_key,
        ran: false,
        model_configured: state.stages.default_model().is_some(),
    })
}

async fn compare_page(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    state.library.wait_loaded().await;
    let built = tokio::task::spawn_blocking(move || match compare_view(&state, &pairs) {
        Ok(view) => form_page("compare.html", &view),
        Err(refused) => plain(StatusCode::BAD_REQUEST, refused),
    })
    .await;
    built.unwrap_or_else(|_| fault("the comparison could not be built"))
}

/// Every variant of the form run against the model, left to right; the page with all the
/// answers. A side that does not render is not run (its error is shown).
async fn compare_run(State(state): State<Arc<StudioState>>, body: String) -> Response {
    state.library.wait_loaded().await;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&body).unwrap_or_default();
    let viewed = {
        let state = state.clone();
        let pairs = pairs.clone();
        tokio::task::spawn_blocking(move || compare_view(&state, &pairs)).await
    };
    let mut view = match viewed {
        Ok(Ok(view)) => view,
        Ok(Err(refused)) => return plain(StatusCode::BAD_REQUEST, refused),
        Err(_) => return fault("the comparison could not be built"),
    };
    view.ran = true;
    let model = field(&pairs, "model").map(str::to_string);
    let sides = [&mut view.left, &mut view.right]
        .into_iter()
        .chain(view.more.iter_mut().map(|m| &mut m.side));
    let settings = promptd_stages::llm::ModelSettings {
        model,
        ..Default::default()
    };
    for side in sides {
        // The variant as the page rendered it (with the side's arguments) is what runs.
        let Some(rendered) = &side.rendered else {
            continue;
        };
        let mut quiet = |_: &str| {};
        match state
            .stages
            .run_rendered(rendered, &settings, &mut quiet)
            .await
        {
            Ok(record) => side.run = Some(Answer::of(&record)),
            Err(e) => side.run_error = Some(e.to_string()),
        }
    }
    form_page("compare.html", &view)
}

/// The history page of `prompt`.
pub fn history_href(prompt: &str) -> String {
    format!("{HISTORY_PATH}?prompt={}", encoded(prompt))
}

/// The compare page with `prompt` on the left.
pub fn compare_href(prompt: &str) -> String {
    format!("{COMPARE_PATH}?left={}", encoded(prompt))
}

/// The page comparing the runs `a` and `b` of `prompt`.
pub fn run_diff_href(prompt: &str, a: &str, b: &str) -> String {
    format!(
        "{RUN_DIFF_PATH}?prompt={}&a={}&b={}",
        encoded(prompt),
        encoded(a),
        encoded(b)
    )
}

/// One recorded run's facts.
#[derive(Debug, Serialize)]
struct RunFacts {
    id: String,
    started_at: String,
    revision: Option<String>,
    version_hash: String,
    model: String,
    arguments: String,
    error: Option<String>,
}

impl RunFacts {
    fn of(r: &RunRecord) -> RunFacts {
        RunFacts {
            id: r.id.clone(),
            started_at: r.started_at.clone(),
            revision: r.revision.clone(),
            version_hash: r.version_hash.clone(),
            model: r.model.clone(),
            arguments: serde_json::to_string(&r.arguments).unwrap_or_default(),
            error: r.error.clone(),
        }
    }
}

#[derive(Debug, Serialize)]
struct RunDiffPage {
    prompt: String,
    left: RunFacts,
    right: RunFacts,
    /// The messages sent, then the answers.
    sent: SideBySide,
    answers: SideBySide,
}

async fn run_diff_page(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    state.library.wait_loaded().await;
    let built = tokio::task::spawn_blocking(move || {
        let snapshot = state.library.snapshot();
        let (Some(name), Some(a), Some(b)) = (
            field(&pairs, "prompt"),
            field(&pairs, "a"),
            field(&pairs, "b"),
        ) else {
            return plain(
                StatusCode::BAD_REQUEST,
                "query parameters `prompt`, `a` and `b` are required\n",
            );
        };
        if state.options.prompt(&snapshot, name).is_none() {
            return plain(StatusCode::NOT_FOUND, "no such prompt\n");
        }
        let store = state.stages.runs();
        let (Some(left), Some(right)) = (store.get(name, a), store.get(name, b)) else {
            return plain(StatusCode::NOT_FOUND, "no such run of this prompt\n");
        };
        let sent = |r: &RunRecord| promptd_stages::run::sent_text(&r.messages);
        form_page(
            "run-diff.html",
            &RunDiffPage {
                prompt: name.to_string(),
                sent: compare::side_by_side(&sent(&left), &sent(&right)),
                answers: compare::side_by_side(&left.answer, &right.answer),
                left: RunFacts::of(&left),
                right: RunFacts::of(&right),
            },
        )
    })
    .await;
    built.unwrap_or_else(|_| fault("the runs could not be compared"))
}

async fn versions_css() -> Response {
    asset("text/css; charset=utf-8", VERSIONS_CSS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sides_own_fields_win_over_the_shared_ones_and_an_empty_one_clears() {
        let pairs: Vec<(String, String)> = [
            ("a.language", "Go"),
            ("a.tone", "kind"),
            ("l.language", "Rust"),
            ("r.tone", ""),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let left = side_args(&pairs, "l.");
        assert_eq!(left["language"], "Rust");
        assert_eq!(left["tone"], "kind");
        let right = side_args(&pairs, "r.");
        assert_eq!(right["language"], "Go");
        assert!(!right.contains_key("tone"));
    }
}
