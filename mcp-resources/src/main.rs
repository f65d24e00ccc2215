//! `mcp-resources --db PATH [--http HOST:PORT] [--require-receipts-jwks
//! URL|FILE --require-receipts-issuer URL [--require-receipts-server-name
//! NAME]]`: the built-in MCP server.
//!
//! With `--require-receipts-*` (RECEIPTS.md §2's `require_receipts`),
//! `resources_add` and `resources_remove` run only with the agent's signed
//! receipt for exactly that call. Idempotency keys are always honoured.
//! Both are kept in the database file (`mcp_serve::guard`).
//!
//! stdio by default (stdout is the protocol channel, so logs go to stderr);
//! with `--http`, Streamable HTTP at `/mcp` plus `/health`, with DNS-rebinding
//! protection (`mcp_serve::http`).

use anyhow::Context;
use clap::Parser;
use mcp_resources::db::ResourceDb;
use mcp_resources::server::ResourcesServer;
use mcp_serve::guard::{Guard, RequireReceipts};
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
    /// Destructive calls need a receipt verified with this JWKS (a URL or
    /// a file): `require_receipts.jwks`.
    #[arg(long, requires = "require_receipts_issuer")]
    require_receipts_jwks: Option<String>,
    /// The agent whose receipts count (its `iss`): `require_receipts.issuer`.
    #[arg(long, requires = "require_receipts_jwks")]
    require_receipts_issuer: Option<String>,
    /// The name the agent calls this server: `require_receipts.server_name`.
    #[arg(long, default_value = "resources")]
    require_receipts_server_name: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp_serve::logging::to_stderr();
    let args = Args::parse();
    let db = Arc::new(
        ResourceDb::open(&args.db).with_context(|| format!("opening {}", args.db.display()))?,
    );
    let require = match (args.require_receipts_jwks, args.require_receipts_issuer) {
        (Some(jwks), Some(issuer)) => Some(RequireReceipts {
            jwks,
            issuer,
            server_name: args.require_receipts_server_name,
        }),
        _ => None,
    };
    let guard = Arc::new(
        Guard::open(&args.db, require)
            .with_context(|| format!("opening the ledger in {}", args.db.display()))?,
    );
    match args.http {
        None => {
            let service = ResourcesServer::new(db, guard)
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        Some(addr) => {
            mcp_serve::http::http("mcp-resources", &addr, &[], move || {
                ResourcesServer::new(db.clone(), guard.clone())
            })
            .await?;
        }
    }
    Ok(())
}
