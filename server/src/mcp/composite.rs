//! All MCP servers behind one [`ToolRouter`].
//!
//! Servers connect concurrently at startup. Two servers offering the same
//! tool name is a startup error (the model could not tell them apart). A
//! server that cannot be reached is retried a few times, then reported; the
//! agent starts without its tools and keeps retrying in the background, so
//! one broken server does not take the agent down. `tools/list_changed`
//! notifications re-list that server's tools.

use super::server::McpServer;
use crate::config::{McpServerConfig, UnannotatedTools};
use crate::domain::BoxFuture;
use crate::domain::tasks::Tasks;
use crate::domain::tools::{
    CallContext, ServerStatus, ToolError, ToolInfo, ToolOutput, ToolRouter,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Connection attempts at startup before a server is reported unavailable.
const STARTUP_ATTEMPTS: u32 = 3;
/// How often an unavailable server is retried in the background.
const RETRY_EVERY: Duration = Duration::from_secs(15);

/// Why the MCP servers could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpStartError {
    #[error(
        "tool `{tool}` is offered by both MCP servers `{first}` and `{second}`: remove one, or rename the tool in one server"
    )]
    DuplicateTool {
        tool: String,
        first: String,
        second: String,
    },
}

/// The MCP servers of an agent.
pub(crate) struct CompositeClient {
    servers: Vec<Arc<McpServer>>,
}

impl CompositeClient {
    /// Starts every server, their connections and the background work
    /// below as tasks of `owner`; see the module docs for failure handling.
    pub(crate) async fn start(
        configs: Vec<McpServerConfig>,
        unannotated: UnannotatedTools,
        owner: &Tasks,
    ) -> Result<Arc<Self>, McpStartError> {
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let servers: Vec<Arc<McpServer>> = configs
            .into_iter()
            .map(|c| McpServer::new(c, unannotated, tx.clone(), owner.clone()))
            .collect();
        let mut tasks = Vec::new();
        for s in &servers {
            let s = s.clone();
            tasks.push(owner.spawn("mcp connect", async move {
                for attempt in 1..=STARTUP_ATTEMPTS {
                    match s.connect().await {
                        Ok(()) => return true,
                        Err(e) if attempt < STARTUP_ATTEMPTS => {
                            tracing::warn!(server = %s.name, attempt, "MCP server not ready: {e}; retrying");
                            tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
                        }
                        Err(e) => {
                            tracing::error!(server = %s.name, "MCP server unavailable: {e}; the agent starts without its tools and keeps retrying");
                        }
                    }
                }
                false
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        let client = Arc::new(CompositeClient { servers });
        client.check_duplicates()?;

        // Background: re-list on tools/list_changed, retry unavailable servers.
        let weak = Arc::downgrade(&client);
        owner.spawn_background("mcp tools changed", async move {
            while let Some(name) = rx.recv().await {
                let Some(c) = weak.upgrade() else { break };
                if let Some(s) = c.servers.iter().find(|s| s.name == name) {
                    if let Err(e) = s.refresh().await {
                        tracing::warn!(server = %name, "re-listing tools failed: {e}");
                    }
                    if let Err(e) = c.check_duplicates() {
                        tracing::error!("{e}; calls to that tool go to the first server");
                    }
                }
            }
        });
        let weak = Arc::downgrade(&client);
        owner.spawn_background("mcp retry", async move {
            loop {
                tokio::time::sleep(RETRY_EVERY).await;
                let Some(c) = weak.upgrade() else { break };
                for s in &c.servers {
                    if s.problem().is_some() {
                        match s.connect().await {
                            Ok(()) => {
                                tracing::info!(server = %s.name, "MCP server is available again")
                            }
                            Err(e) => tracing::debug!(server = %s.name, "still unavailable: {e}"),
                        }
                    }
                }
            }
        });
        Ok(client)
    }

    fn check_duplicates(&self) -> Result<(), McpStartError> {
        let mut owner: HashMap<String, String> = HashMap::new();
        for s in &self.servers {
            for t in s.tools() {
                if let Some(first) = owner.insert(t.name.clone(), s.name.clone()) {
                    return Err(McpStartError::DuplicateTool {
                        tool: t.name,
                        first,
                        second: s.name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    fn owner(&self, tool: &str) -> Option<&Arc<McpServer>> {
        self.servers
            .iter()
            .find(|s| s.tools().iter().any(|t| t.name == tool))
    }
}

impl ToolRouter for CompositeClient {
    fn tools(&self) -> Vec<ToolInfo> {
        let mut seen = std::collections::HashSet::new();
        self.servers
            .iter()
            .flat_map(|s| s.tools())
            .filter(|t| seen.insert(t.name.clone()))
            .collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            match self.owner(name) {
                Some(s) => s.call(name, args, ctx).await,
                None => Err(ToolError::Unknown(name.to_string())),
            }
        })
    }

    fn keyed_servers(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|s| s.honours_keys())
            .map(|s| s.name.clone())
            .collect()
    }

    fn servers(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|s| ServerStatus {
                name: s.name.clone(),
                available: s.problem().is_none(),
                problem: s.problem(),
                tools: s.tools().len(),
                revision: s.revision(),
            })
            .collect()
    }
}
