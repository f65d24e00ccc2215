//! `mcp-resources --db PATH [--http HOST:PORT]`: the built-in MCP server.
//!
//! stdio by default (stdout is the protocol channel, so logs go to stderr);
//! with `--http`, Streamable HTTP at `/mcp` plus `/health`, with DNS-rebinding
//! protection (`mcp_serve::http`).

use anyhow::Context;
use clap::Parser;
use mcp_resources::db::ResourceDb;
use mcp_resources::server::ResourcesServer;
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Named integer resources over MCP.
#[derive(Parser, Debug)]
#[command(name = "mcp-resources", version, about)]
struct Args {
    /// The SQLite database file (created if missing).
    #[arg(long, default_value = "resources.db")]
    db: PathBuf,
    /// Serve Streamable HTTP on HOST:PORT (at /mcp) instead of stdio.
    #[arg(long)]
    http: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp_serve::logging::to_stderr();
    let args = Args::parse();
    let db = Arc::new(
        ResourceDb::open(&args.db).with_context(|| format!("opening {}", args.db.display()))?,
    );
    match args.http {
        None => {
            let service = ResourcesServer::new(db)
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        Some(addr) => {
            mcp_serve::http::http("mcp-resources", &addr, &[], move || {
                ResourcesServer::new(db.clone())
            })
            .await?;
        }
    }
    Ok(())
}
