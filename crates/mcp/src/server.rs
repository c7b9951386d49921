//! The MCP handler: one [`PromptServer`] per connection (cheap clones sharing the stages, and
//! through them the library, and the connected-client list). Native prompts and completion are
//! answered from the library and converted with [`super::convert`]; tools are listed from the
//! catalog and called through [`super::tool_calls`].

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, Reference, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::clients::ConnectedClients;
use super::convert;
use super::tool_calls::{self, RootsOrAsk, ToolContext};
use promptd_base::metrics::Method;
use promptd_base::workspace::ClientOrigin;
use promptd_core::library::{PromptLibrary, Snapshot, Visibility};
use promptd_core::registry::PromptTemplate;
use promptd_stages::{ClientRoots, Stages};

/// Default `prompts/list` page size.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// What the handler exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerOptions {
    /// Offer system prompts (promptd's internal templates) as native prompts too.
    pub expose_system: bool,
    /// `prompts/list` page size.
    pub page_size: usize,
}

impl Default for HandlerOptions {
    fn default() -> Self {
        HandlerOptions {
            expose_system: false,
            page_size: DEFAULT_PAGE_SIZE,
        }
    }
}

/// The MCP server handler over shared [`Stages`] (which hold the [`PromptLibrary`]).
#[derive(Debug, Clone)]
pub struct PromptServer {
    stages: Arc<Stages>,
    clients: Arc<ConnectedClients>,
    options: HandlerOptions,
    /// Serving the process that started it, over stdio (else over HTTP, where whether a
    /// request authenticated is read from the request).
    stdio: bool,
    /// Over HTTP without sessions (`--stateless`): a client that opens with `initialize` has
    /// no stream to get `list_changed` on.
    sessionless: bool,
    /// This session's client roots, once asked.
    roots: Arc<ClientRoots>,
}

impl PromptServer {
    pub fn new(
        stages: Arc<Stages>,
        clients: Arc<ConnectedClients>,
        options: HandlerOptions,
    ) -> PromptServer {
        PromptServer {
            stages,
            clients,
            options,
            stdio: false,
            sessionless: false,
            roots: Arc::default(),
        }
    }

    /// The handler of a new session: the same stages and clients, no roots known yet.
    pub fn for_session(&self) -> PromptServer {
        PromptServer {
            roots: Arc::default(),
            ..self.clone()
        }
    }

    /// This server answering the process that started it, over stdio: its roots are honoured.
    pub fn over_stdio(self) -> PromptServer {
        PromptServer {
            stdio: true,
            ..self
        }
    }

    /// This server answering HTTP requests without sessions.
    pub fn without_sessions(self) -> PromptServer {
        PromptServer {
            sessionless: true,
            ..self
        }
    }

    /// The stages the handler calls (the studio's runs and tool calls use them too).
    pub fn stages(&self) -> &Arc<Stages> {
        &self.stages
    }

    /// The library served.
    pub fn library(&self) -> &Arc<PromptLibrary> {
        self.stages.library()
    }

    /// The clients that get `list_changed`.
    pub fn clients(&self) -> &Arc<ConnectedClients> {
        &self.clients
    }

    /// What this server's clients are served.
    pub fn visibility(&self) -> Visibility {
        Visibility::for_clients(self.options.expose_system)
    }

    fn offered(&self, t: &PromptTemplate) -> bool {
        self.visibility().shows(t)
    }

    /// The error for `name`, which this server does not offer, with the offered names the
    /// caller most likely meant.
    fn unknown_prompt(&self, snap: &Snapshot, name: &str) -> ErrorData {
        convert::unknown_prompt(name, snap.similar_names(name, self.visibility()))
    }
}

/// Counts an answered request in the process's metrics and passes its result on.
fn counted<T>(
    method: Method,
    started: Instant,
    result: Result<T, ErrorData>,
) -> Result<T, ErrorData> {
    answered(method, result.is_ok(), started);
    result
}

/// Records an answered request: in the process's metrics, and as activity whose garbage is
/// returned to the system once the process is quiet.
fn answered(method: Method, ok: bool, started: Instant) {
    promptd_base::metrics::global().request(method, ok, started.elapsed());
    promptd_base::memory::note_activity();
}

impl PromptServer {
    /// `completion/complete` for a prompt argument (nothing for other references).
    fn completion(&self, request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        let Reference::Prompt(prompt) = &request.r#ref else {
            return Ok(CompleteResult::new(CompletionInfo::default()));
        };
        let snap = self.library().snapshot();
        let Some(t) = snap.visible(&prompt.name, self.visibility()) else {
            return Err(self.unknown_prompt(&snap, &prompt.name));
        };
        let info = t
            .arguments
            .iter()
            .find(|a| a.name == request.argument.name)
            .map(|a| convert::completion(a, &request.argument.value))
            .unwrap_or_default();
        Ok(CompleteResult::new(info))
    }
}

impl ServerHandler for PromptServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_completions()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("promptd", env!("CARGO_PKG_VERSION"))
                .with_description("Prompt-template registry and renderer"),
        )
        .with_instructions(format!(
            "Prompt templates are available as MCP prompts and through the `{}` tool.",
            promptd_stages::catalog::GET_PROMPTS
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let started = Instant::now();
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request);
        if self.sessionless
            && let Ok(r) = &mut result
            && let Some(prompts) = &mut r.capabilities.prompts
        {
            // Without a session nothing can be sent later; MCP 2026-07-28 clients, which never
            // send `initialize`, get changes on `subscriptions/listen` instead.
            prompts.list_changed = None;
        }
        if result.is_ok() && !self.sessionless {
            self.clients.add_session(context.peer.clone());
        }
        counted(Method::initialize, started, result)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let started = Instant::now();
        self.library().wait_loaded().await;
        let snap = self.library().snapshot();
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let (page, next) = convert::page(
            snap.registry.prompts().filter(|t| self.offered(t)),
            |t| t.name.as_str(),
            cursor,
            self.options.page_size,
        );
        let mut result = ListPromptsResult::with_all_items(
            page.into_iter().map(|t| convert::prompt(t)).collect(),
        );
        result.next_cursor = next;
        counted(Method::prompts_list, started, Ok(result))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let started = Instant::now();
        self.library().wait_loaded().await;
        // `NAME@REV`: the prompt as of a git revision, from the snapshot at it.
        let (snap, name) = match self.library().resolve(&request.name) {
            Ok(found) => (found.snapshot, found.name),
            Err(e) => {
                let error = if e.is_caller_error() {
                    ErrorData::invalid_params(e.to_string(), None)
                } else {
                    ErrorData::internal_error(e.to_string(), None)
                };
                return counted(Method::prompts_get, started, Err(error));
            }
        };
        let result = match snap.visible(&name, self.visibility()) {
            None => Err(self.unknown_prompt(&snap, &request.name)),
            Some(t) => snap
                .render_template(
                    t,
                    &convert::arguments(request.arguments),
                    self.library().clock(),
                )
                .map(|rendered| convert::get_prompt_result(t, rendered).into())
                .map_err(|e| convert::render_error(&e)),
        };
        counted(Method::prompts_get, started, result)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let started = Instant::now();
        self.library().wait_loaded().await;
        let result = self.completion(&request);
        counted(Method::completion_complete, started, result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let started = Instant::now();
        let mut tools = tool_calls::definitions().to_vec();
        let served = self.stages.served_tools();
        tools.extend(served.tools.iter().map(tool_calls::defined_tool));
        counted(
            Method::tools_list,
            started,
            Ok(ListToolsResult::with_all_items(tools)),
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_calls::definitions()
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .or_else(|| {
                let served = self.stages.served_tools();
                served.find(name).map(tool_calls::defined_tool)
            })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        self.library().wait_loaded().await;
        let entry = tool_calls::find(&request.name);
        let uses_roots = match entry {
            Some(entry) => Some(entry.uses_roots),
            None => self
                .stages
                .served_tools()
                .find(&request.name)
                .map(|t| t.uses_workspace()),
        };
        let uses_roots = match uses_roots {
            Some(uses) => uses,
            None => {
                let unknown = Err(ErrorData::invalid_params(
                    format!("unknown tool `{}`", request.name),
                    None,
                ));
                return counted(Method::tools_call, started, unknown);
            }
        };
        let origin = if self.stdio {
            ClientOrigin::Stdio
        } else {
            ClientOrigin::Http {
                authenticated: super::http::authenticated(&context.extensions),
            }
        };
        let asked = (&*request.name, uses_roots);
        let roots = match tool_calls::call_roots(asked, &request, &context, &self.roots) {
            Ok(RootsOrAsk::Roots(roots)) => roots,
            Ok(RootsOrAsk::Ask(ask)) => {
                answered(Method::tools_call, true, started);
                return Ok(ask.into());
            }
            Err(e) => return counted(Method::tools_call, started, Err(e)),
        };
        let ctx = ToolContext {
            stages: self.stages.clone(),
            protocol: context.protocol_version(),
            roots,
            origin,
            visibility: self.visibility(),
        };
        let args = request.arguments.unwrap_or_default();
        let result = match entry {
            Some(entry) => tool_calls::call_contained(entry, ctx, args).await,
            None => tool_calls::call_defined(ctx, request.name.to_string(), args).await,
        };
        // A tool's own failure (`isError`) counts as an error too.
        let ok = matches!(&result, Ok(r) if r.is_error != Some(true));
        answered(Method::tools_call, ok, started);
        result.map(Into::into)
    }

    /// rmcp files a request for a method it types, whose params do not fit that method, under
    /// custom requests: that one is answered Invalid params naming the field at fault, any
    /// other Method not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(
            match promptd_transport::conformance::misfit_params(
                &request.method,
                request.params.as_ref(),
            ) {
                Some(why) => ErrorData::invalid_params(why, None),
                None => ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None),
            },
        )
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.roots.changed();
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(
            SubscriptionFilter::builder()
                .prompts_list_changed()
                .tools_list_changed()
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let accepted = context.accepted();
        let id = if accepted.prompts_list_changed == Some(true)
            || accepted.tools_list_changed == Some(true)
        {
            Some(self.clients.add_subscription(context.sink().clone()))
        } else {
            None
        };
        context.cancelled().await;
        if let Some(id) = id {
            self.clients.remove(id);
        }
        Ok(())
    }
}
