//! The MCP face of `mcp-filesystem` (MCP-FILESYSTEM.md §1, §3): `tools/list`
//! shows `list_roots` and the tools some root allows, with their
//! annotations; `tools/call` runs a handler from [`super::tools`] on the
//! blocking pool (a slow call never holds up the others), catches a panic,
//! and answers `structuredContent` plus the same JSON as text, or
//! `isError` with the message. One log line per call, with no contents and
//! no host paths.

use super::tools::{Args, Fs, Kind, SPECS, spec};
use mcp_serve::guard::{Guard, IDEMPOTENCY_CAPABILITY};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;
use std::time::Instant;

/// The server: the opened roots, shared by every session.
#[derive(Clone)]
pub struct FilesystemServer {
    fs: Arc<Fs>,
    /// Receipts and idempotency keys, checked before a destructive call.
    guard: Arc<Guard>,
}

impl FilesystemServer {
    pub fn new(fs: Arc<Fs>, guard: Arc<Guard>) -> Self {
        FilesystemServer { fs, guard }
    }

    /// The tools this server's roots allow, as `tools/list` shows them.
    pub fn tools(&self) -> Vec<Tool> {
        SPECS
            .iter()
            .filter(|s| self.fs.offers(s.name))
            .map(|s| {
                let (ro, destructive, idempotent) = match s.kind {
                    Kind::ReadOnly => (true, false, true),
                    Kind::Destructive => (false, true, false),
                    Kind::Additive => (false, false, true),
                };
                Tool::new(s.name, s.description, s.input_schema())
                    .with_title(s.title)
                    .with_annotations(
                        ToolAnnotations::with_title(s.title)
                            .read_only(ro)
                            .destructive(destructive)
                            .idempotent(idempotent)
                            .open_world(false),
                    )
            })
            .collect()
    }

    /// Runs one call to the end: the result, never a protocol error.
    pub async fn call(
        &self,
        name: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> CallToolResult {
        let started = Instant::now();
        let Some(s) = spec(name).filter(|s| self.fs.offers(s.name)) else {
            tracing::warn!(tool = %name, "refused: not allowed on any root");
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "tool {name} is not allowed on any root (call list_roots to see what is)"
            ))]);
        };
        let root = args
            .get("root")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        let path = args
            .get("path")
            .or_else(|| args.get("source_path"))
            .and_then(|v| v.as_str())
            .map(|p| p.chars().take(200).collect::<String>())
            .unwrap_or_default();
        let fs = self.fs.clone();
        let run = s.run;
        let tool = s.name;
        let joined = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run(&fs, &Args::new(tool, &args))
            }))
        })
        .await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        match joined {
            Ok(Ok(Ok(v))) => {
                let bytes = v
                    .get("content")
                    .and_then(|c| c.as_str())
                    .map_or(0, str::len);
                tracing::info!(tool, root = %root, path = ?path, outcome = "ok", ms = format!("{ms:.1}"), bytes, "call");
                success(v)
            }
            Ok(Ok(Err(e))) => {
                tracing::warn!(tool, root = %root, path = ?path, outcome = "refused", ms = format!("{ms:.1}"), reason = %e.0, "call");
                CallToolResult::error(vec![ContentBlock::text(e.0)])
            }
            _ => {
                tracing::error!(tool, root = %root, path = ?path, outcome = "panic", "call");
                CallToolResult::error(vec![ContentBlock::text(format!(
                    "{tool} failed unexpectedly; nothing more is known (see the server's log)"
                ))])
            }
        }
    }
}

/// Answers whose JSON is longer than this carry it once, as the text block
/// the contract requires, without the `structuredContent` copy (which MCP
/// makes optional): for a full read at the cap, the copy and its encoding
/// in the message would double what one call holds in memory.
const STRUCTURED_UP_TO: usize = 256 * 1024;

fn success(v: serde_json::Value) -> CallToolResult {
    let text = v.to_string();
    if text.len() > STRUCTURED_UP_TO {
        drop(v);
        return CallToolResult::success(vec![ContentBlock::text(text)]);
    }
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(v);
    r
}

impl ServerHandler for FilesystemServer {
    fn get_info(&self) -> ServerConfig {
        let mut experimental = rmcp::model::ExperimentalCapabilities::new();
        if self.guard.honours_keys() {
            experimental.insert(IDEMPOTENCY_CAPABILITY.into(), Default::default());
        }
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_experimental_with(experimental)
                .build(),
        )
        .with_server_info(Implementation::new(
            "mcp-filesystem",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "Sandboxed folders (roots). Call list_roots first: every other tool takes a root \
                 name from it and a path relative to that root ('.' is the root).",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    /// Every call passes the guard first: a destructive one (the tools
    /// marked `destructiveHint`) needs what `require_receipts` asks, and a
    /// repeated idempotency key gets the first outcome back.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let destructive = spec(&request.name).is_some_and(|s| matches!(s.kind, Kind::Destructive));
        self.guard
            .call(request, context, destructive, |request, _| async move {
                let args = request.arguments.unwrap_or_default();
                Ok(self.call(&request.name, args).await.into())
            })
            .await
    }
}
