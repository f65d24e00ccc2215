//! One configured MCP server: its connection, its tools, its health.
//!
//! The connection is made with `rmcp` (stdio child process or Streamable
//! HTTP) and the current protocol handshake. Tools are listed with
//! pagination and re-listed when the server sends
//! `notifications/tools/list_changed`. Every call has a 30 s timeout. When a
//! call finds the server gone (a stdio child that died, an HTTP server that
//! closed), the call fails with a clear error and the connection is dropped;
//! a result over the size limit fails at once, over either transport
//! (see [`super::frames`]);
//! the next call starts the server again. A call is never retried by itself:
//! it may have taken effect.

use super::pipe::Launch;
use super::questions::{InFlight, ask_of, declined, result_of, round_of, run_pausable};
use crate::config::{McpServerConfig, OnQuestion, UnannotatedTools};
use crate::domain::tools::{CallContext, ToolError, ToolInfo, ToolOutput};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion, RequestParamsMeta, Tool,
    UrlElicitationCapability,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::Value;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::mpsc;

/// Longest a tool call may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest the handshake plus the first tool listing may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The shortest a listed tool set is kept (see `store_tools`).
const MIN_TTL_MS: u64 = 1000;

/// Rounds of `input_required` a call answers by itself (nobody to ask,
/// or nothing a human must see) before it gives up.
const AUTO_ROUNDS: usize = 10;
/// The `experimental` capability of a server that honours idempotency
/// keys (RECEIPTS.md §3).
const IDEMPOTENCY_CAPABILITY: &str = "dev.stopgo/idempotency";

/// Our side of the protocol: identifies the agent, forwards
/// `tools/list_changed` to the refresher, and hands questions asked on
/// the session to the call in flight (see [`super::questions`]).
#[derive(Clone)]
struct Handler {
    server: String,
    changed: mpsc::UnboundedSender<String>,
    flight: Arc<InFlight>,
    /// Connecting with the `initialize` handshake only (see [`Era`]).
    legacy: bool,
}

/// How a connection starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Era {
    /// `server/discover` first, falling back as rmcp knows how.
    Probe,
    /// `initialize` only: the server answered the probe with a list of
    /// versions that all use the handshake (a legacy-only server, per the
    /// 2026-07-28 backward-compatibility rules), which rmcp reports as an
    /// error instead of falling back.
    Legacy,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::default()
                .with_form(FormElicitationCapability::default())
                .with_url(UrlElicitationCapability::default()),
        );
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("stop-and-go-agent", env!("CARGO_PKG_VERSION")),
        );
        if self.legacy {
            config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        }
        config
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.server.clone());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let answer = match self.flight.oldest() {
            Some(call) => call.ask(ask_of(&request, None)).await,
            None => {
                tracing::info!(server = %self.server, "a question arrived with no call in flight; declined");
                crate::domain::tools::AskAnswer::decline()
            }
        };
        Ok(result_of(&answer))
    }
}

type Service = RunningService<RoleClient, Handler>;
type HttpHeaders =
    std::collections::HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>;

/// A server's connection state and tools.
pub(crate) struct McpServer {
    pub(crate) name: String,
    config: McpServerConfig,
    unannotated: UnannotatedTools,
    changed: mpsc::UnboundedSender<String>,
    /// The live connection. An async mutex, held while connecting so that
    /// two calls do not start two children; a call only clones the peer out.
    conn: tokio::sync::Mutex<Option<Service>>,
    /// The last tool list (kept while the server is down, marked unavailable).
    tools: RwLock<Vec<ToolInfo>>,
    /// Why the server is unavailable, if it is.
    problem: RwLock<Option<String>>,
    /// The protocol revision the live connection speaks (`2026-07-28`,
    /// `2025-11-25`…), shown by `GET /tools`; kept while disconnected.
    revision: RwLock<Option<String>>,
    /// The server declared `experimental["dev.stopgo/idempotency"]` when
    /// it last connected.
    keyed: std::sync::atomic::AtomicBool,
    /// When the tool list goes stale (the server's `ttlMs`); `None`: it
    /// stays fresh until `tools/list_changed` or a reconnection.
    stale_at: RwLock<Option<std::time::Instant>>,
    /// A refresh for an expired list was asked and has not finished.
    refreshing: std::sync::atomic::AtomicBool,
    /// The calls in flight, for the questions they ask.
    flight: Arc<InFlight>,
    /// HTTP sessions that carry a caller's `Authorization: Bearer`, most
    /// recently used last, at most [`TOKEN_SESSIONS`]. The token lives only
    /// in memory, inside the session's headers; it is never logged.
    by_token: tokio::sync::Mutex<Vec<(String, Service)>>,
    /// `auth: {type: client_credentials}`: the token every connection
    /// uses (one for many calls and reconnections, renewed near expiry).
    oauth: Option<Arc<super::oauth::ClientCredentials>>,
    /// The owner of the connection's tasks (a stdio child's pipe and log):
    /// on shutdown they stop and the child is killed.
    tasks: crate::domain::tasks::Tasks,
    /// How a stdio server is started (a child process; in tests, an
    /// in-process server).
    launch: Launch,
    /// How long a call and a connection may take ([`CALL_TIMEOUT`],
    /// [`CONNECT_TIMEOUT`]; shorter in tests).
    timeouts: Timeouts,
}

/// The limits in time of one server's requests.
#[derive(Clone, Copy)]
struct Timeouts {
    call: Duration,
    connect: Duration,
}

/// HTTP sessions kept for forwarded tokens.
const TOKEN_SESSIONS: usize = 32;

impl McpServer {
    pub(crate) fn new(
        config: McpServerConfig,
        unannotated: UnannotatedTools,
        changed: mpsc::UnboundedSender<String>,
        tasks: crate::domain::tasks::Tasks,
    ) -> Arc<Self> {
        let timeouts = Timeouts {
            call: CALL_TIMEOUT,
            connect: CONNECT_TIMEOUT,
        };
        Self::build(
            config,
            unannotated,
            changed,
            tasks,
            Launch::Process,
            timeouts,
        )
    }

    fn build(
        config: McpServerConfig,
        unannotated: UnannotatedTools,
        changed: mpsc::UnboundedSender<String>,
        tasks: crate::domain::tasks::Tasks,
        launch: Launch,
        timeouts: Timeouts,
    ) -> Arc<Self> {
        let oauth = match (&config.auth, &config.url) {
            (Some(auth), Some(url)) => Some(Arc::new(super::oauth::ClientCredentials::new(
                &config.name,
                url,
                auth,
            ))),
            _ => None,
        };
        Arc::new(McpServer {
            name: config.name.clone(),
            oauth,
            tasks,
            config,
            unannotated,
            changed,
            conn: tokio::sync::Mutex::new(None),
            tools: RwLock::new(Vec::new()),
            problem: RwLock::new(Some("not connected yet".into())),
            revision: RwLock::new(None),
            keyed: std::sync::atomic::AtomicBool::new(false),
            stale_at: RwLock::new(None),
            refreshing: std::sync::atomic::AtomicBool::new(false),
            flight: Arc::default(),
            by_token: tokio::sync::Mutex::new(Vec::new()),
            launch,
            timeouts,
        })
    }

    /// A stdio server served in-process by `dial` (one fresh server per
    /// connection), with the given call and connection timeouts.
    #[cfg(test)]
    pub(crate) fn in_process(
        config: McpServerConfig,
        dial: Arc<dyn Fn() -> tokio::io::DuplexStream + Send + Sync>,
        call: Duration,
        connect: Duration,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<String>) {
        let (changed, listed) = mpsc::unbounded_channel();
        let server = Self::build(
            config,
            UnannotatedTools::Approve,
            changed,
            crate::domain::tasks::Tasks::default(),
            Launch::InProcess(dial),
            Timeouts { call, connect },
        );
        (server, listed)
    }

    pub(crate) fn is_http(&self) -> bool {
        self.config.url.is_some()
    }

    /// Tools as the engine sees them. A list past its `ttlMs` is still
    /// served while a refresh is asked for in the background (the
    /// refresher re-lists, and the pins check what it brings).
    pub(crate) fn tools(&self) -> Vec<ToolInfo> {
        let stale = self
            .stale_at
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| std::time::Instant::now() >= at);
        if stale
            && !self
                .refreshing
                .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            let _ = self.changed.send(self.name.clone());
        }
        let available = self.problem().is_none() || !self.is_http();
        self.tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .map(|mut t| {
                t.available = available;
                t
            })
            .collect()
    }

    /// Why the server cannot be used now.
    pub(crate) fn problem(&self) -> Option<String> {
        self.problem
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn handler(&self, era: Era) -> Handler {
        Handler {
            server: self.name.clone(),
            changed: self.changed.clone(),
            flight: self.flight.clone(),
            legacy: era == Era::Legacy,
        }
    }

    /// The protocol revision of the last connection.
    pub(crate) fn revision(&self) -> Option<String> {
        self.revision
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_problem(&self, p: Option<String>) {
        *self.problem.write().unwrap_or_else(|e| e.into_inner()) = p;
    }

    /// Connects (if not connected) and refreshes the tool list.
    pub(crate) async fn connect(&self) -> Result<(), String> {
        let mut conn = self.conn.lock().await;
        if conn.as_ref().is_some_and(|s| !s.is_transport_closed()) {
            return Ok(());
        }
        *conn = None;
        let service = tokio::time::timeout(self.timeouts.connect, self.open())
            .await
            .map_err(|_| {
                format!(
                    "no answer to the MCP handshake within {} s",
                    self.timeouts.connect.as_secs()
                )
            })
            .and_then(|r| r)
            .inspect_err(|e| self.set_problem(Some(e.clone())))?;
        let listed = tokio::time::timeout(
            self.timeouts.connect,
            service.peer().list_all_tools_with_cache_hint(),
        )
        .await
        .map_err(|_| "tools/list did not answer in time".to_string())
        .and_then(|r| r.map_err(|e| format!("tools/list failed: {e}")))
        .inspect_err(|e| self.set_problem(Some(e.clone())))?;
        let tools = self.with_top_level_hints(listed.items).await;
        self.store_tools(&tools, listed.ttl_ms);
        if let Some(info) = service.peer_info() {
            let keyed = info
                .capabilities
                .experimental
                .as_ref()
                .is_some_and(|e| e.contains_key(IDEMPOTENCY_CAPABILITY));
            self.keyed
                .store(keyed, std::sync::atomic::Ordering::Relaxed);
            let revision = info.protocol_version.to_string();
            tracing::info!(server = %self.name, revision = %revision, tools = tools.len(), "MCP server connected");
            *self.revision.write().unwrap_or_else(|p| p.into_inner()) = Some(revision);
        }
        *conn = Some(service);
        self.set_problem(None);
        Ok(())
    }

    /// Re-lists tools on the live connection (after `list_changed`, or when
    /// the list's `ttlMs` ran out). A failed refresh is tried again 5 s later.
    pub(crate) async fn refresh(&self) -> Result<(), String> {
        let done = self.relist().await;
        if done.is_err() {
            *self.stale_at.write().unwrap_or_else(|p| p.into_inner()) =
                Some(std::time::Instant::now() + Duration::from_secs(5));
            self.refreshing
                .store(false, std::sync::atomic::Ordering::Release);
        }
        done
    }

    async fn relist(&self) -> Result<(), String> {
        let peer = {
            let conn = self.conn.lock().await;
            conn.as_ref().map(|s| s.peer().clone())
        };
        let Some(peer) = peer else {
            return self.connect().await;
        };
        let listed =
            tokio::time::timeout(self.timeouts.connect, peer.list_all_tools_with_cache_hint())
                .await
                .map_err(|_| "tools/list did not answer in time".to_string())?
                .map_err(|e| format!("tools/list failed: {e}"))?;
        let tools = self.with_top_level_hints(listed.items).await;
        self.store_tools(&tools, listed.ttl_ms);
        tracing::info!(server = %self.name, tools = tools.len(), "MCP tool list refreshed");
        Ok(())
    }

    /// Keeps the list, fresh for `ttl_ms` when the server gave one.
    fn store_tools(&self, tools: &[Tool], ttl_ms: Option<u64>) {
        let infos = tools.iter().map(|t| self.tool_info(t)).collect();
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = infos;
        // At most one re-listing a second: a server that says `ttlMs: 0`
        // (the Python SDK's default) would otherwise be listed on every
        // look at the tools.
        *self.stale_at.write().unwrap_or_else(|p| p.into_inner()) = ttl_ms.and_then(|ms| {
            std::time::Instant::now().checked_add(Duration::from_millis(ms.max(MIN_TTL_MS)))
        });
        self.refreshing
            .store(false, std::sync::atomic::Ordering::Release);
    }

    fn tool_info(&self, t: &Tool) -> ToolInfo {
        ToolInfo {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or("").to_string(),
            input_schema: Value::Object((*t.input_schema).clone()),
            destructive: is_destructive(t, self.unannotated),
            hinted: t
                .annotations
                .as_ref()
                .is_some_and(|a| a.read_only_hint == Some(true) || a.destructive_hint.is_some()),
            annotations: t
                .annotations
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok()),
            digest: String::new(),
            server: self.name.clone(),
            available: true,
        }
        .with_digest()
    }

    /// The configured headers of an HTTP server, checked.
    fn http_headers(&self) -> Result<HttpHeaders, String> {
        let mut headers = HttpHeaders::new();
        for (k, v) in &self.config.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("header {k:?}: {e}"))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| format!("header {k:?} has an invalid value"))?;
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// For an HTTP server, adds the top-level hints `rmcp` could not keep
    /// (see [`super::http_hints`]). Stdio servers had theirs lifted on the pipe.
    async fn with_top_level_hints(&self, mut tools: Vec<Tool>) -> Vec<Tool> {
        let Some(url) = &self.config.url else {
            return tools;
        };
        let Ok(mut headers) = self.http_headers() else {
            return tools;
        };
        if let Some(credentials) = &self.oauth
            && let Ok(Some(token)) = credentials.current().await
            && let Ok(value) = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        {
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        match super::http_hints::probe(url, &headers).await {
            Ok(hints) if !hints.is_empty() => {
                for t in &mut tools {
                    super::http_hints::apply(t, hints.get(t.name.as_ref()));
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(server = %self.name, "could not read top-level tool hints: {e}")
            }
        }
        tools
    }

    /// Connects at the newest revision the server offers; a server that
    /// only knows the handshake revisions is connected to again with it.
    async fn open(&self) -> Result<Service, String> {
        match self.open_in(Era::Probe).await {
            Err(Opened::LegacyOnly(why)) => {
                tracing::debug!(server = %self.name, "{why}; connecting with the initialize handshake");
                self.open_in(Era::Legacy).await.map_err(Opened::text)
            }
            other => other.map_err(Opened::text),
        }
    }

    async fn open_in(&self, era: Era) -> Result<Service, Opened> {
        let handler = self.handler(era);
        if let Some(url) = &self.config.url {
            let headers = self.http_headers().map_err(Opened::Failed)?;
            self.open_http(url, headers, handler).await
        } else {
            let command = self.config.command.clone().unwrap_or_default();
            let streams = self
                .launch
                .start(&self.config, &self.tasks)
                .map_err(Opened::Failed)?;
            handler
                .serve_with_lifecycle((streams.answers, streams.input), lifecycle(era))
                .await
                .map_err(|e| {
                    Opened::of(e, |e| {
                        format!("`{command}` did not complete the MCP handshake: {e}")
                    })
                })
        }
    }

    /// Opens a Streamable HTTP session with `headers`.
    async fn open_http(
        &self,
        url: &str,
        headers: HttpHeaders,
        handler: Handler,
    ) -> Result<Service, Opened> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Opened::Failed(e.to_string()))?;
        let era = if handler.legacy {
            Era::Legacy
        } else {
            Era::Probe
        };
        let config = StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(headers)
            .max_sse_event_size(super::frames::MAX_FRAME_BYTES);
        let served = match &self.oauth {
            Some(credentials) => {
                let client = super::oauth::OAuthHttp {
                    http,
                    credentials: credentials.clone(),
                };
                let transport = StreamableHttpClientTransport::with_client(
                    super::sse_limit::Sized(client),
                    config,
                );
                handler
                    .serve_with_lifecycle(transport, lifecycle(era))
                    .await
            }
            None => {
                let transport = StreamableHttpClientTransport::with_client(
                    super::sse_limit::Sized(http),
                    config,
                );
                handler
                    .serve_with_lifecycle(transport, lifecycle(era))
                    .await
            }
        };
        served.map_err(|e| Opened::of(e, |e| format!("cannot connect to {url}: {e}")))
    }

    /// The caller's token to forward to this server, if any: HTTP servers
    /// with `forward_auth` (the default) whose config does not set its own
    /// `Authorization` header.
    fn forwarded_token<'a>(&self, ctx: &'a CallContext) -> Option<&'a str> {
        let own = self
            .config
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"));
        (self.is_http() && self.config.forward_auth && !own)
            .then_some(ctx.bearer.as_deref())
            .flatten()
    }

    /// A session carrying `token` (opened on first use, then reused).
    async fn token_peer(&self, token: &str) -> Result<rmcp::Peer<RoleClient>, ToolError> {
        let unavailable = |reason: String| ToolError::Unavailable {
            server: self.name.clone(),
            reason,
        };
        let mut sessions = self.by_token.lock().await;
        sessions.retain(|(_, s)| !s.is_transport_closed());
        if let Some(i) = sessions.iter().position(|(t, _)| t == token) {
            let entry = sessions.remove(i);
            let peer = entry.1.peer().clone();
            sessions.push(entry);
            return Ok(peer);
        }
        let url = self.config.url.clone().unwrap_or_default();
        let mut headers = self.http_headers().map_err(unavailable)?;
        let value =
            reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                unavailable("the caller's bearer token is not a valid header value".into())
            })?;
        headers.insert(reqwest::header::AUTHORIZATION, value);
        let open = async {
            match self
                .open_http(&url, headers.clone(), self.handler(Era::Probe))
                .await
            {
                Err(Opened::LegacyOnly(_)) => {
                    self.open_http(&url, headers, self.handler(Era::Legacy))
                        .await
                }
                other => other,
            }
        };
        let service = tokio::time::timeout(self.timeouts.connect, open)
            .await
            .map_err(|_| unavailable("no answer to the MCP handshake in time".into()))?
            .map_err(|e| unavailable(e.text()))?;
        let peer = service.peer().clone();
        if sessions.len() >= TOKEN_SESSIONS {
            sessions.remove(0);
        }
        sessions.push((token.to_string(), service));
        Ok(peer)
    }

    /// Whether a call cut by a crash may be retried with its key: the
    /// operator says so (`idempotent: true`) or the server declared it.
    pub(crate) fn honours_keys(&self) -> bool {
        self.config.idempotent || self.keyed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls a tool; connects (or restarts a stdio server) first if needed.
    /// Over HTTP the caller's bearer token goes along (see `forwarded_token`).
    pub(crate) async fn call(
        &self,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let token = self.forwarded_token(ctx);
        let peer = if let Some(t) = token {
            self.token_peer(t).await?
        } else {
            let needs_connect = {
                let conn = self.conn.lock().await;
                conn.as_ref().is_none_or(|s| s.is_transport_closed())
            };
            if needs_connect {
                self.connect()
                    .await
                    .map_err(|reason| ToolError::Unavailable {
                        server: self.name.clone(),
                        reason,
                    })?;
            }
            let conn = self.conn.lock().await;
            conn.as_ref()
                .map(|s| s.peer().clone())
                .ok_or_else(|| ToolError::Unavailable {
                    server: self.name.clone(),
                    reason: "not connected".into(),
                })?
        };
        let arguments = match args {
            Value::Object(m) => m,
            Value::Null => Default::default(),
            other => {
                return Ok(ToolOutput::text(
                    format!("the arguments must be a JSON object, got {other}"),
                    true,
                ));
            }
        };
        let mut params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        // The call's trace context, as MCP carries it (SEP-414: `_meta`
        // `traceparent`/`tracestate`), over stdio and HTTP alike.
        for (k, v) in crate::telemetry::inject() {
            match k.as_str() {
                "traceparent" => params.set_traceparent(&v),
                "tracestate" => params.set_tracestate(&v),
                _ => {}
            }
        }
        for (key, value) in [
            (receipts::META_RECEIPT, &ctx.receipt),
            (receipts::META_IDEMPOTENCY_KEY, &ctx.idempotency_key),
        ] {
            if let Some(v) = value {
                params
                    .meta_or_default()
                    .insert(key.to_string(), Value::String(v.clone()));
            }
        }
        if let Some(r) = &ctx.resume {
            params.input_responses = Some(r.responses.clone().into_iter().collect());
            params.request_state = r.state.clone();
        }
        let asker = match self.config.on_question {
            OnQuestion::Ask => ctx.asker.clone(),
            OnQuestion::Decline => None,
        };
        let can_ask = asker.is_some();
        let entered = self.flight.enter(asker);
        for _ in 0..AUTO_ROUNDS {
            let sent = run_pausable(
                peer.call_tool_once(params.clone()),
                self.timeouts.call,
                &entered.live,
            )
            .await;
            let response = match sent {
                None => {
                    return Err(ToolError::Timeout {
                        tool: name.to_string(),
                        timeout: self.timeouts.call,
                    });
                }
                Some(Ok(r)) => r,
                Some(Err(e)) => return self.failed(name, e).await,
            };
            match response {
                CallToolResponse::Complete(result) => return complete(name, result),
                CallToolResponse::InputRequired(r) => {
                    let round = round_of(r.input_requests, r.request_state);
                    if can_ask && !round.asks.is_empty() {
                        return Ok(ToolOutput {
                            text: String::new(),
                            is_error: false,
                            input_required: Some(round),
                        });
                    }
                    // Nothing for a human (or nobody to ask): answered here.
                    params.input_responses = Some(declined(&round).into_iter().collect());
                    params.request_state = round.state;
                }
                _ => {
                    return Err(ToolError::Failed {
                        tool: name.to_string(),
                        message:
                            "the server answered with a task, which this agent does not follow"
                                .into(),
                    });
                }
            }
        }
        Err(ToolError::Failed {
            tool: name.to_string(),
            message: format!("the server asked for input {AUTO_ROUNDS} times without finishing"),
        })
    }

    /// What a failed request means for the call and the connection.
    async fn failed(&self, name: &str, e: ServiceError) -> Result<ToolOutput, ToolError> {
        match e {
            ServiceError::McpError(e) if super::frames::replaced(&e).is_some() => {
                Err(ToolError::ResultTooLarge {
                    tool: name.to_string(),
                    message: e.message.to_string(),
                })
            }
            ServiceError::McpError(e) => Ok(ToolOutput::text(
                format!(
                    "the tool answered with an error ({}): {}",
                    e.code.0, e.message
                ),
                true,
            )),
            e if super::frames::http_limit_hit(&e).is_some() => {
                // The server answered, too much: the session is closed by
                // the transport, but the server is fine (no problem set);
                // the next call opens a new session.
                *self.conn.lock().await = None;
                let read = super::frames::http_limit_hit(&e).unwrap_or(0);
                Err(ToolError::ResultTooLarge {
                    tool: name.to_string(),
                    message: super::frames::more_than(read),
                })
            }
            e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                let reason = format!(
                    "the MCP server stopped during the call ({e}); it will be started again for the next call"
                );
                tracing::warn!(server = %self.name, tool = %name, "{reason}");
                *self.conn.lock().await = None;
                if self.is_http() {
                    self.set_problem(Some(reason.clone()));
                }
                Err(ToolError::Unavailable {
                    server: self.name.clone(),
                    reason,
                })
            }
            e => Err(ToolError::Failed {
                tool: name.to_string(),
                message: e.to_string(),
            }),
        }
    }
}

/// A finished call's result as the model reads it.
fn complete(name: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = Vec::new();
    for c in &result.content {
        match c {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => parts.push(format!("[image {}]", i.mime_type)),
            ContentBlock::Resource(_) => parts.push("[embedded resource]".into()),
            _ => parts.push("[content]".into()),
        }
    }
    if parts.is_empty()
        && let Some(s) = &result.structured_content
    {
        parts.push(s.to_string());
    }
    let kept = parts.iter().map(String::len).sum::<usize>() + parts.len().saturating_sub(1);
    if let Err(too) = super::frames::check(kept) {
        return Err(ToolError::ResultTooLarge {
            tool: name.to_string(),
            message: too.to_string(),
        });
    }
    Ok(ToolOutput::text(
        parts.join("\n"),
        result.is_error.unwrap_or(false),
    ))
}

/// The newest revision first (`server/discover`), falling back to the
/// `initialize` handshake of 2025-11-25 (and what the server offers below
/// it) for servers that answer the probe as legacy servers do
/// (QUESTIONS.md §1).
fn lifecycle(era: Era) -> ClientLifecycleMode {
    match era {
        Era::Probe => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
        Era::Legacy => ClientLifecycleMode::Initialize,
    }
}

/// Why a connection did not open.
enum Opened {
    /// The server speaks only the handshake revisions (it said so, or did
    /// not answer the probe as a 2026-07-28 server would): connect again so.
    LegacyOnly(String),
    Failed(String),
}

impl Opened {
    fn of(
        e: rmcp::service::ClientInitializeError,
        say: impl FnOnce(&rmcp::service::ClientInitializeError) -> String,
    ) -> Opened {
        match &e {
            rmcp::service::ClientInitializeError::NoCompatibleProtocolVersion {
                server_supported,
                ..
            } if !server_supported.is_empty()
                && server_supported.iter().all(ProtocolVersion::has_initialize) =>
            {
                Opened::LegacyOnly(say(&e))
            }
            // The probe was answered, but not with a discover result (an
            // older server that answers any method it does not know with
            // an empty result): it knows only the handshake.
            rmcp::service::ClientInitializeError::ExpectedInitResult(_) => {
                Opened::LegacyOnly(say(&e))
            }
            _ => Opened::Failed(say(&e)),
        }
    }

    fn text(self) -> String {
        match self {
            Opened::LegacyOnly(t) | Opened::Failed(t) => t,
        }
    }
}

/// `readOnlyHint: true` → not destructive; else `destructiveHint` if given;
/// else the config's default for unannotated tools.
pub(crate) fn is_destructive(t: &Tool, unannotated: UnannotatedTools) -> bool {
    let default = unannotated == UnannotatedTools::Approve;
    match &t.annotations {
        Some(a) if a.read_only_hint == Some(true) => false,
        Some(a) => a.destructive_hint.unwrap_or(default),
        None => default,
    }
}
