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

use crate::config::{McpServerConfig, UnannotatedTools};
use crate::domain::tools::{CallContext, ToolError, ToolInfo, ToolOutput};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    RequestParamsMeta, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use std::process::Stdio;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// Longest a tool call may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest the handshake plus the first tool listing may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Our side of the protocol: identifies the agent and forwards
/// `tools/list_changed` to the refresher.
#[derive(Clone)]
struct Handler {
    server: String,
    changed: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("stop-and-go-agent", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(self.server.clone());
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
    /// HTTP sessions that carry a caller's `Authorization: Bearer`, most
    /// recently used last, at most [`TOKEN_SESSIONS`]. The token lives only
    /// in memory, inside the session's headers; it is never logged.
    by_token: tokio::sync::Mutex<Vec<(String, Service)>>,
}

/// HTTP sessions kept for forwarded tokens.
const TOKEN_SESSIONS: usize = 32;

impl McpServer {
    pub(crate) fn new(
        config: McpServerConfig,
        unannotated: UnannotatedTools,
        changed: mpsc::UnboundedSender<String>,
    ) -> Arc<Self> {
        Arc::new(McpServer {
            name: config.name.clone(),
            config,
            unannotated,
            changed,
            conn: tokio::sync::Mutex::new(None),
            tools: RwLock::new(Vec::new()),
            problem: RwLock::new(Some("not connected yet".into())),
            by_token: tokio::sync::Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn is_http(&self) -> bool {
        self.config.url.is_some()
    }

    /// Tools as the engine sees them.
    pub(crate) fn tools(&self) -> Vec<ToolInfo> {
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
        let service = tokio::time::timeout(CONNECT_TIMEOUT, self.open())
            .await
            .map_err(|_| {
                format!(
                    "no answer to the MCP handshake within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )
            })
            .and_then(|r| r)
            .inspect_err(|e| self.set_problem(Some(e.clone())))?;
        let tools = tokio::time::timeout(CONNECT_TIMEOUT, service.list_all_tools())
            .await
            .map_err(|_| "tools/list did not answer in time".to_string())
            .and_then(|r| r.map_err(|e| format!("tools/list failed: {e}")))
            .inspect_err(|e| self.set_problem(Some(e.clone())))?;
        let tools = self.with_top_level_hints(tools).await;
        self.store_tools(&tools);
        if let Some(info) = service.peer_info() {
            tracing::info!(server = %self.name, protocol = %info.protocol_version, tools = tools.len(), "MCP server connected");
        }
        *conn = Some(service);
        self.set_problem(None);
        Ok(())
    }

    /// Re-lists tools on the live connection (after `list_changed`).
    pub(crate) async fn refresh(&self) -> Result<(), String> {
        let peer = {
            let conn = self.conn.lock().await;
            conn.as_ref().map(|s| s.peer().clone())
        };
        let Some(peer) = peer else {
            return self.connect().await;
        };
        let tools = tokio::time::timeout(CONNECT_TIMEOUT, peer.list_all_tools())
            .await
            .map_err(|_| "tools/list did not answer in time".to_string())?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let tools = self.with_top_level_hints(tools).await;
        self.store_tools(&tools);
        tracing::info!(server = %self.name, tools = tools.len(), "MCP tool list refreshed");
        Ok(())
    }

    fn store_tools(&self, tools: &[Tool]) {
        let infos = tools.iter().map(|t| self.tool_info(t)).collect();
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = infos;
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
        let Ok(headers) = self.http_headers() else {
            return tools;
        };
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

    async fn open(&self) -> Result<Service, String> {
        let handler = Handler {
            server: self.name.clone(),
            changed: self.changed.clone(),
        };
        if let Some(url) = &self.config.url {
            let headers = self.http_headers()?;
            self.open_http(url, headers, handler).await
        } else {
            let command = self.config.command.clone().unwrap_or_default();
            let mut cmd = tokio::process::Command::new(&command);
            cmd.args(&self.config.args)
                .envs(&self.config.env)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let (Some(stdin), Some(stdout), Some(stderr)) =
                (child.stdin.take(), child.stdout.take(), child.stderr.take())
            else {
                return Err(format!("`{command}` started without its standard streams"));
            };
            let server = self.name.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(target: "mcp_server", server = %server, "{line}");
                }
            });
            // The child's answers reach rmcp through a pipe that rewrites
            // seed-style top-level tool hints (see `hints`). This task owns
            // the child: when the pipe or the child's stdout closes, the task
            // ends and the child is killed if it still runs.
            // Each line is also fitted to the result limit (see `frames`):
            // a result over it reaches rmcp as an error for its request.
            let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
            let server = self.name.clone();
            tokio::spawn(async move {
                let _child = child;
                let mut out = tokio::io::BufReader::with_capacity(256 * 1024, stdout);
                loop {
                    let line = match super::frames::read_line(&mut out).await {
                        Ok(Some(l)) => l,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!(server = %server, "closing the MCP server's connection: {e}");
                            break;
                        }
                    };
                    let Some(line) = super::frames::fit(line) else {
                        tracing::warn!(server = %server, "dropped a message too large to read that answers no call");
                        continue;
                    };
                    let fixed = match std::str::from_utf8(&line) {
                        Ok(text) => super::hints::lift_top_level_hints(text)
                            .into_owned()
                            .into_bytes(),
                        Err(_) => line,
                    };
                    if theirs.write_all(&fixed).await.is_err()
                        || theirs.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                }
            });
            handler
                .serve((ours, stdin))
                .await
                .map_err(|e| format!("`{command}` did not complete the MCP handshake: {e}"))
        }
    }

    /// Opens a Streamable HTTP session with `headers`.
    async fn open_http(
        &self,
        url: &str,
        headers: HttpHeaders,
        handler: Handler,
    ) -> Result<Service, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(url)
                .custom_headers(headers)
                .max_sse_event_size(super::frames::MAX_FRAME_BYTES),
        );
        handler
            .serve(transport)
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))
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
        let handler = Handler {
            server: self.name.clone(),
            changed: self.changed.clone(),
        };
        let service = tokio::time::timeout(CONNECT_TIMEOUT, self.open_http(&url, headers, handler))
            .await
            .map_err(|_| unavailable("no answer to the MCP handshake in time".into()))?
            .map_err(unavailable)?;
        let peer = service.peer().clone();
        if sessions.len() >= TOKEN_SESSIONS {
            sessions.remove(0);
        }
        sessions.push((token.to_string(), service));
        Ok(peer)
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
                return Ok(ToolOutput {
                    text: format!("the arguments must be a JSON object, got {other}"),
                    is_error: true,
                });
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
        match tokio::time::timeout(CALL_TIMEOUT, peer.call_tool(params)).await {
            Err(_) => Err(ToolError::Timeout {
                tool: name.to_string(),
                timeout: CALL_TIMEOUT,
            }),
            Ok(Ok(result)) => {
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
                let kept =
                    parts.iter().map(String::len).sum::<usize>() + parts.len().saturating_sub(1);
                if let Err(too) = super::frames::check(kept) {
                    return Err(ToolError::ResultTooLarge {
                        tool: name.to_string(),
                        message: too.to_string(),
                    });
                }
                Ok(ToolOutput {
                    text: parts.join("\n"),
                    is_error: result.is_error.unwrap_or(false),
                })
            }
            Ok(Err(ServiceError::McpError(e))) if super::frames::replaced(&e).is_some() => {
                Err(ToolError::ResultTooLarge {
                    tool: name.to_string(),
                    message: e.message.to_string(),
                })
            }
            Ok(Err(ServiceError::McpError(e))) => Ok(ToolOutput {
                text: format!(
                    "the tool answered with an error ({}): {}",
                    e.code.0, e.message
                ),
                is_error: true,
            }),
            Ok(Err(e)) if super::frames::http_limit_hit(&e).is_some() => {
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
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
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
            Ok(Err(e)) => Err(ToolError::Failed {
                tool: name.to_string(),
                message: e.to_string(),
            }),
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
