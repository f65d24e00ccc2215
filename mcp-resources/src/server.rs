//! The MCP face of `mcp-resources`: three tools over [`ResourceDb`].
//!
//! `resources_add` and `resources_remove` change data and are annotated
//! `destructiveHint: true` (so the agent asks before running them);
//! `resources_list` is `readOnlyHint: true`. Results are JSON text. Bad input
//! (an invalid regex, an unknown id) is a tool-level error (`isError`), which
//! the model can read and correct, not a protocol error.

use super::db::{ResourceDb, ResourceError};
use mcp_serve::guard::{Guard, IDEMPOTENCY_CAPABILITY};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// `resources_add` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// The resource's name.
    pub name: String,
    /// Its integer value.
    pub value: i64,
}

/// `resources_remove` arguments: an id, or a regex over names.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RemoveArgs {
    /// Remove the resource with this id.
    #[serde(default)]
    pub id: Option<String>,
    /// Remove every resource whose name matches this regular expression.
    #[serde(default)]
    pub pattern: Option<String>,
}

/// `resources_list` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListArgs {
    /// Only resources whose name matches this regular expression.
    #[serde(default)]
    pub pattern: Option<String>,
}

/// The MCP server.
#[derive(Clone)]
pub struct ResourcesServer {
    db: Arc<ResourceDb>,
    /// Receipts and idempotency keys, checked before a destructive call.
    guard: Arc<Guard>,
    tool_router: ToolRouter<Self>,
}

fn ok(v: serde_json::Value) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(
        v.to_string(),
    )]))
}

fn tool_error(e: ResourceError) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(
        json!({"error": e.to_string()}).to_string(),
    )]))
}

#[tool_router]
impl ResourcesServer {
    pub fn new(db: Arc<ResourceDb>, guard: Arc<Guard>) -> Self {
        ResourcesServer {
            db,
            guard,
            tool_router: Self::tool_router(),
        }
    }

    /// Add a named resource with an integer value.
    #[tool(annotations(
        title = "Add resource",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn resources_add(
        &self,
        Parameters(a): Parameters<AddArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.db.add(&a.name, a.value) {
            Ok(r) => ok(json!({"resource": r})),
            Err(e) => tool_error(e),
        }
    }

    /// Remove a resource by id, or every resource whose name matches a regular expression.
    #[tool(annotations(
        title = "Remove resources",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn resources_remove(
        &self,
        Parameters(a): Parameters<RemoveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.db.remove(a.id.as_deref(), a.pattern.as_deref()) {
            Ok(removed) => ok(json!({"count": removed.len(), "removed": removed})),
            Err(e) => tool_error(e),
        }
    }

    /// List resources, optionally only those whose name matches a regular expression.
    #[tool(annotations(
        title = "List resources",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn resources_list(
        &self,
        Parameters(a): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.db.list(a.pattern.as_deref()) {
            Ok(list) => ok(json!({"count": list.len(), "resources": list})),
            Err(e) => tool_error(e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ResourcesServer {
    /// Every call passes the guard first: a destructive one needs what
    /// `require_receipts` asks, and a repeated idempotency key gets the
    /// first outcome back.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let destructive = self
            .tool_router
            .get(&request.name)
            .and_then(|t| t.annotations.as_ref())
            .is_some_and(|a| a.is_destructive());
        self.guard
            .call(request, context, destructive, |request, context| {
                let tcc = ToolCallContext::new(self, request, context);
                self.tool_router.call(tcc)
            })
            .await
    }

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
            "mcp-resources",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "Named integer resources. resources_add and resources_remove change data.",
        )
    }
}
