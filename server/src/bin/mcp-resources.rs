//! `mcp-resources --db PATH [--http HOST:PORT]`: the built-in MCP server.
//!
//! stdio by default (stdout is the protocol channel, so logs go to stderr);
//! with `--http`, Streamable HTTP at `/mcp` plus `/health`.

use anyhow::Context;
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use server::resources::db::ResourceDb;
use server::resources::server::ResourcesServer;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Named integer resources over MCP.
#[derive(Parser, Debug)]
#[command(version, about)]
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
    server::logging::to_stderr();
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
            let ct = CancellationToken::new();
            let config = StreamableHttpServerConfig::default()
                .with_cancellation_token(ct.child_token())
                .disable_allowed_hosts();
            let mcp = StreamableHttpService::new(
                move || Ok(ResourcesServer::new(db.clone())),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            let app = axum::Router::new().nest_service("/mcp", mcp).route(
                "/health",
                axum::routing::get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
            );
            let listener = server::net::listen(&addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let local = listener.local_addr()?;
            tracing::info!("mcp-resources listening on http://{local}/mcp");
            let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    match term {
                        Ok(mut t) => {
                            tokio::select! {
                                _ = t.recv() => {},
                                _ = tokio::signal::ctrl_c() => {},
                            }
                        }
                        Err(_) => {
                            let _ = tokio::signal::ctrl_c().await;
                        }
                    }
                    ct.cancel();
                })
                .await?;
        }
    }
    Ok(())
}
