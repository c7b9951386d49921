//! The studio's web page: server-rendered HTML (minijinja, every value HTML-escaped) with a
//! little JavaScript, assets embedded in the binary, live updates by server-sent events from
//! the library's snapshot swaps (the same reloads that send `list_changed`).
//!
//! Routes: `/` (the page; `?prompt=NAME&a.ARG=VALUE`, `&q=WORDS` to list only the prompts
//! that match), `/studio/prompt` (the prompt's part of the page for the same query, which the
//! page swaps in when a link is followed, without loading the page again), `/studio/list`
//! (the list's part for `?q=WORDS`: a search of the whole registry), `/studio/render` (the
//! output fragment for the same query), `/studio/events` (an event `reload` after every swap),
//! `/studio/run`
//! (a POST of the same form: the prompt run against the configured model, its answer streamed
//! back as server-sent events `text`, then `done` with the recorded run, or `error`),
//! `/studio/runs?prompt=NAME` (the recorded runs' fragment), the tool definitions page
//! ([`super::tools`], merged by [`super::router`]), and the assets under `/studio/`. Every route but a run and a tool call
//! (POSTs) is a GET; only the run route writes, and only the run's record (by the stage).
//!
//! Guards: `Host` and `Origin` are checked by the rule every route of the server shares
//! ([`promptd_http::origins::require_site`], which the server puts in front of these routes);
//! with a token, a request carries it as `Authorization: Bearer`, or the
//! cookie the page sets when opened once as `/?token=TOKEN` (`HttpOnly`, `SameSite=Strict`,
//! named after the port and holding a value derived from the token and the port, never the
//! token: a browser sends a host's cookies to every port of it). Every answer forbids framing,
//! inline scripts and sniffing. The model's API key stays in the stage's client: no answer of
//! these routes holds it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use minijinja::Environment;
use serde::Serialize;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::WatchStream;

use super::{Output, PromptList, PromptView, RunPanel, RunView, StudioOptions};
use promptd_core::library::PromptLibrary;
use promptd_stages::Stages;
use promptd_stages::llm::ModelSettings;
use promptd_stages::run::RunRequest;

/// Where the page lives.
pub const PAGE_PATH: &str = "/";
/// The output fragment of one render.
pub const RENDER_PATH: &str = "/studio/render";
/// The prompt's part of the page (the same query as the page's).
pub const PROMPT_PATH: &str = "/studio/prompt";
/// The list's part of the page (`?q=WORDS`).
pub const LIST_PATH: &str = "/studio/list";
/// Server-sent events: `reload` after every snapshot swap.
pub const EVENTS_PATH: &str = "/studio/events";
/// A run (POST): the answer streamed as server-sent events.
pub const RUN_PATH: &str = "/studio/run";
/// The recorded runs of one prompt (`?prompt=NAME`).
pub const RUNS_PATH: &str = "/studio/runs";
/// The prefix of the cookie that stands for the token once the page was opened with `?token=`;
/// the port bound follows it ([`cookie_name`]).
pub const TOKEN_COOKIE_PREFIX: &str = "promptd_studio_";

/// The name of the studio's cookie on `local`: one per port, so that two studios of one host
/// (a browser sends a host's cookies to all its ports) neither overwrite nor read each other's.
pub fn cookie_name(local: SocketAddr) -> String {
    format!("{TOKEN_COOKIE_PREFIX}{}", local.port())
}

/// The value of the studio's cookie for `token` on `local`: a key derived from both. It opens
/// only this studio's routes (`/mcp` takes the bearer header alone), and a page of another port
/// of the host, which the browser sends it to as well, learns nothing of the token.
pub fn cookie_value(token: &str, local: SocketAddr) -> String {
    let mut hasher =
        blake3::Hasher::new_derive_key("promptd 2026 studio cookie from token and port");
    hasher.update(&local.port().to_be_bytes());
    hasher.update(token.as_bytes());
    hasher.finalize().to_hex().to_string()
}

const APP_JS: &str = include_str!("assets/app.js");
const STUDIO_CSS: &str = include_str!("assets/studio.css");

/// What the page's routes need.
#[derive(Debug, Clone)]
pub struct StudioState {
    pub library: Arc<PromptLibrary>,
    pub options: StudioOptions,
    /// The stages over `library`: runs (the model client and the run records) and the tool
    /// definitions page's calls go through them.
    pub stages: Arc<Stages>,
}

/// What the guards need.
#[derive(Debug, Clone)]
pub struct WebGuard {
    /// The token, when one is set.
    pub token: Option<Arc<str>>,
    /// The address bound.
    pub local: SocketAddr,
}

static TEMPLATES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    // Names ending in `.html` are escaped for HTML (minijinja's default): every value printed,
    // prompt text and file names included, is text, never markup.
    env.add_template("page.html", include_str!("assets/page.html"))
        .expect("page template");
    env.add_template("output.html", include_str!("assets/output.html"))
        .expect("output template");
    env.add_template("entry.html", include_str!("assets/entry.html"))
        .expect("entry template");
    env.add_template("list.html", include_str!("assets/list.html"))
        .expect("list template");
    env.add_template("prompt.html", include_str!("assets/prompt.html"))
        .expect("prompt template");
    env.add_template("denied.html", include_str!("assets/denied.html"))
        .expect("denied template");
    env.add_template("tools.html", include_str!("assets/tools.html"))
        .expect("tools template");
    env.add_template("runs.html", include_str!("assets/runs.html"))
        .expect("runs template");
    env.add_template("history.html", include_str!("assets/history.html"))
        .expect("history template");
    env.add_template("compare.html", include_str!("assets/compare.html"))
        .expect("compare template");
    env.add_template("run-diff.html", include_str!("assets/run-diff.html"))
        .expect("run diff template");
    env.add_template("diff-rows.html", include_str!("assets/diff-rows.html"))
        .expect("diff rows template");
    env
});

/// The page's own routes; the event stream takes its place from `streams`. [`guarded`] puts
/// the token guard and the response headers around these and the other pages' routes.
pub(crate) fn routes(
    state: Arc<StudioState>,
    streams: Arc<promptd_http::streams::EventStreams>,
) -> axum::Router {
    axum::Router::new()
        .route(PAGE_PATH, get(page))
        .route(RENDER_PATH, get(render))
        .route(PROMPT_PATH, get(prompt_part))
        .route(LIST_PATH, get(list_part))
        .route(RUN_PATH, post(run))
        .route(RUNS_PATH, get(runs))
        .route(
            EVENTS_PATH,
            get(events).layer(middleware::from_fn_with_state(streams, bounded_stream)),
        )
        .route("/studio/app.js", get(app_js))
        .route("/studio/studio.css", get(studio_css))
        .with_state(state)
}

/// `routes` behind the token guard, every answer with the studio's security headers.
pub(crate) fn guarded(routes: axum::Router, guard: Arc<WebGuard>) -> axum::Router {
    routes
        // The token page guards the studio's own routes only: any other path is a plain 404,
        // never the studio's sign-in page (an MCP client probing for OAuth must not get HTML).
        .route_layer(middleware::from_fn_with_state(guard, authenticate))
        .layer(middleware::from_fn(secure_headers))
}

/// Opens `url` in the user's browser (`$BROWSER`, else `xdg-open` / `open`); a failure is only
/// logged: the address was printed.
pub fn open_in_browser(url: &str) {
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let program = opener.unwrap_or_else(|| {
        if cfg!(target_os = "macos") {
            "open".into()
        } else {
            "xdg-open".into()
        }
    });
    match std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => tracing::debug!("opened the studio with {program}"),
        Err(e) => tracing::warn!("could not open a browser with `{program}`: {e}"),
    }
}

type Pairs = Query<Vec<(String, String)>>;

fn prompt_name(pairs: &[(String, String)]) -> Option<&str> {
    pairs
        .iter()
        .find(|(k, _)| k == "prompt")
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn args(pairs: &[(String, String)]) -> serde_json::Map<String, serde_json::Value> {
    super::form_args(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

#[derive(Serialize)]
struct PageContext<'a> {
    /// The list (the whole page), else none (the prompt's part alone).
    list: Option<&'a PromptList>,
    /// How many prompts the page lists, for the view without a prompt ("Pick a prompt").
    counts: Option<super::ListCounts>,
    view: Option<&'a PromptView>,
    /// A `?prompt=` the registry does not hold.
    missing: Option<&'a str>,
    output: Option<&'a Output>,
    run: Option<&'a RunPanel>,
}

/// The server-side list query of a request (`q`).
fn list_query(pairs: &[(String, String)]) -> Option<&str> {
    pairs
        .iter()
        .find(|(k, _)| k == "q")
        .map(|(_, v)| v.as_str())
}

/// The page (`whole`), or only its prompt part, for a request's query.
async fn prompt_page(
    state: Arc<StudioState>,
    pairs: Vec<(String, String)>,
    whole: bool,
) -> Response {
    // A server still reading its folders answers once they are read, never from a partial
    // registry.
    state.library.wait_loaded().await;
    // Test cases and token counting are CPU work: off the async workers.
    let built = tokio::task::spawn_blocking(move || {
        let library = &state.library;
        let options = &state.options;
        let snapshot = library.snapshot();
        let list = whole.then(|| super::prompt_list(&snapshot, options, list_query(&pairs)));
        let name = prompt_name(&pairs);
        let view = name.and_then(|n| {
            super::prompt_view(&snapshot, n, &args(&pairs), library.clock(), options)
        });
        let missing = name.filter(|_| view.is_none());
        let run = name
            .and_then(|n| options.prompt(&snapshot, n))
            .map(|p| super::run_panel(&state.stages, p));
        html_page(
            if whole { "page.html" } else { "prompt.html" },
            &PageContext {
                list: list.as_ref(),
                counts: name
                    .is_none()
                    .then(|| super::list_counts(&snapshot, options)),
                view: view.as_ref(),
                missing,
                output: view.as_ref().map(|v| &v.output),
                run: run.as_ref(),
            },
        )
    })
    .await;
    built.unwrap_or_else(|_| fault("the page could not be built"))
}

async fn page(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    prompt_page(state, pairs, true).await
}

async fn prompt_part(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    prompt_page(state, pairs, false).await
}

#[derive(Serialize)]
struct ListContext<'a> {
    list: &'a PromptList,
}

/// The list's part of the page for `?q=WORDS` (every prompt without).
async fn list_part(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    state.library.wait_loaded().await;
    let built = tokio::task::spawn_blocking(move || {
        let snapshot = state.library.snapshot();
        let list = super::prompt_list(&snapshot, &state.options, list_query(&pairs));
        html_page("list.html", &ListContext { list: &list })
    })
    .await;
    built.unwrap_or_else(|_| fault("the list could not be built"))
}

#[derive(Serialize)]
struct OutputContext<'a> {
    output: &'a Output,
}

async fn render(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    state.library.wait_loaded().await;
    let library = state.library.clone();
    let built = tokio::task::spawn_blocking(move || {
        let snapshot = library.snapshot();
        let Some(name) = prompt_name(&pairs) else {
            return plain(
                StatusCode::BAD_REQUEST,
                "query parameter `prompt` is required\n",
            );
        };
        let Some(prompt) = state.options.prompt(&snapshot, name) else {
            let mut text = promptd_core::library::not_found_message(name);
            let similar = snapshot.similar_names(name, state.options.visibility);
            if let Some(hint) = promptd_core::library::did_you_mean(&similar) {
                text = format!("{text} {}", upper_first(&hint));
            }
            return plain(StatusCode::NOT_FOUND, &format!("{text}\n"));
        };
        let output = super::render(&snapshot, prompt, &args(&pairs), library.clock());
        html_page("output.html", &OutputContext { output: &output })
    })
    .await;
    built.unwrap_or_else(|_| fault("the render could not be built"))
}

#[derive(Serialize)]
struct RunsContext<'a> {
    run: &'a RunPanel,
}

async fn runs(State(state): State<Arc<StudioState>>, Query(pairs): Pairs) -> Response {
    state.library.wait_loaded().await;
    let built = tokio::task::spawn_blocking(move || {
        let snapshot = state.library.snapshot();
        let Some(prompt) = prompt_name(&pairs).and_then(|n| state.options.prompt(&snapshot, n))
        else {
            return plain(StatusCode::NOT_FOUND, "no such prompt\n");
        };
        let panel = super::run_panel(&state.stages, prompt);
        html_page("runs.html", &RunsContext { run: &panel })
    })
    .await;
    built.unwrap_or_else(|_| fault("the runs could not be listed"))
}

/// A run of the form's prompt with its arguments (`prompt=NAME&a.ARG=VALUE&model=M`, form
/// encoded): events `text` (a JSON string: the next piece of the answer), then `done` (the
/// recorded run as JSON) or `error` (a JSON string). The run goes on, and is recorded, when the
/// page goes away.
async fn run(State(state): State<Arc<StudioState>>, body: String) -> Response {
    state.library.wait_loaded().await;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&body).unwrap_or_default();
    let Some(name) = prompt_name(&pairs) else {
        return plain(StatusCode::BAD_REQUEST, "form field `prompt` is required\n");
    };
    let model = pairs
        .iter()
        .find(|(k, _)| k == "model")
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let request = RunRequest {
        prompt: name.to_string(),
        arguments: args(&pairs),
        settings: ModelSettings {
            model,
            ..ModelSettings::default()
        },
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let stages = state.stages.clone();
    let visibility = state.options.visibility;
    tokio::spawn(async move {
        let text_tx = tx.clone();
        let mut on_text = move |t: &str| {
            let data = serde_json::to_string(t).unwrap_or_default();
            let _ = text_tx.send(Event::default().event("text").data(data));
        };
        let event = match stages.run(request, visibility, &mut on_text).await {
            Ok(record) => Event::default()
                .event("done")
                .data(serde_json::to_string(&RunView::of(&record)).unwrap_or_default()),
            Err(e) => Event::default()
                .event("error")
                .data(serde_json::to_string(&e.to_string()).unwrap_or_default()),
        };
        let _ = tx.send(event);
    });
    let stream = tokio_stream::wrappers::UnboundedReceiverStream::new(rx).map(Ok::<_, Infallible>);
    Sse::new(stream).into_response()
}

/// `text` with its first letter in upper case.
fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// How often an idle event stream sends a comment (below any idle-connection timeout).
const EVENTS_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An event stream within the server's stream limits ([`promptd_http::streams`]).
async fn bounded_stream(
    State(streams): State<Arc<promptd_http::streams::EventStreams>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    streams.serve(peer, next.run(request)).await
}

async fn events(State(state): State<Arc<StudioState>>) -> Response {
    let mut swaps = state.library.subscribe_swaps();
    // Only swaps after the page was built count.
    swaps.borrow_and_update();
    let stream = WatchStream::from_changes(swaps)
        .map(|n| Ok::<_, Infallible>(Event::default().event("reload").data(n.to_string())));
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(EVENTS_KEEP_ALIVE))
        .into_response()
}

async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

async fn studio_css() -> Response {
    asset("text/css; charset=utf-8", STUDIO_CSS)
}

pub(crate) fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

pub(crate) fn html_page<S: Serialize>(template: &str, context: &S) -> Response {
    match TEMPLATES
        .get_template(template)
        .and_then(|t| t.render(minijinja::value::Serde(context)))
    {
        Ok(html) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response(),
        Err(e) => {
            tracing::error!("studio template {template}: {e:#}");
            fault("the page template failed")
        }
    }
}

/// [`html_page`] for a page whose form POSTs: its referrer policy is `same-origin`, since under
/// the studio's `no-referrer` Chromium sends such a form with `Origin: null`, which the `Origin`
/// rule refuses.
pub(crate) fn form_page<S: Serialize>(template: &str, context: &S) -> Response {
    let mut response = html_page(template, context);
    if response.status().is_success() {
        response.headers_mut().insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
    }
    response
}

pub(crate) fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_string(),
    )
        .into_response()
}

pub(crate) fn fault(what: &str) -> Response {
    plain(StatusCode::INTERNAL_SERVER_ERROR, &format!("500: {what}\n"))
}

/// The bearer token of a request.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(promptd_http::auth::bearer_token)
}

/// The value of the cookie `name` of a request.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether a request carries the token: in its bearer header, or as this studio's cookie.
fn carries_token(headers: &HeaderMap, token: &str, local: SocketAddr) -> bool {
    if let Some(given) = bearer(headers) {
        return promptd_http::auth::same_token(given, token);
    }
    cookie(headers, &cookie_name(local))
        .is_some_and(|v| promptd_http::auth::same_token(v, &cookie_value(token, local)))
}

/// With a token: the request must carry it; `/?token=TOKEN` sets the cookie and sends the
/// browser to the same page without the token in its address.
async fn authenticate(
    State(guard): State<Arc<WebGuard>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &guard.token else {
        return next.run(request).await;
    };
    let ok = |t: &str| promptd_http::auth::same_token(t, token);
    if carries_token(request.headers(), token, guard.local) {
        return next.run(request).await;
    }
    let query = request.uri().query().unwrap_or_default();
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    let given = pairs.iter().find(|(k, _)| k == "token").map(|(_, v)| v);
    if request.uri().path() == PAGE_PATH
        && let Some(given) = given
        && ok(given)
    {
        let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != "token").collect();
        let rest = serde_urlencoded::to_string(rest).unwrap_or_default();
        let location = if rest.is_empty() {
            PAGE_PATH.to_string()
        } else {
            format!("{PAGE_PATH}?{rest}")
        };
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            cookie_name(guard.local),
            cookie_value(token, guard.local)
        );
        let mut response = StatusCode::SEE_OTHER.into_response();
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&location) {
            headers.insert(header::LOCATION, v);
        }
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            headers.insert(header::SET_COOKIE, v);
        }
        return response;
    }
    let mut response = html_page("denied.html", &serde_json::json!({}));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// No framing, no inline or foreign scripts, no sniffing, no caching, no referrer (unless the
/// page says `same-origin`).
async fn secure_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // A page whose form POSTs keeps its `same-origin`: under `no-referrer` Chromium sends such a
    // form with `Origin: null`, which the `Origin` rule refuses.
    h.entry(header::REFERRER_POLICY)
        .or_insert(HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_comes_from_the_header_or_this_ports_cookie() {
        let here: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let other: SocketAddr = "127.0.0.1:8081".parse().unwrap();
        let value = cookie_value("s/x", here);
        assert_ne!(value, cookie_value("s/x", other), "one value per port");
        assert!(!value.contains("s/x"));
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("a=1; {}={value}", cookie_name(here))).unwrap(),
        );
        assert!(carries_token(&h, "s/x", here));
        assert!(!carries_token(&h, "s/x", other), "another port's cookie");
        assert!(!carries_token(&h, "other", here));
        // The token itself in the cookie is not accepted: only the derived value is.
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("{}=s%2Fx", cookie_name(here))).unwrap(),
        );
        assert!(!carries_token(&h, "s/x", here));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert!(carries_token(&h, "abc", here));
    }
}
