//! `mcp-filesystem [--config PATH] [--http [HOST:PORT]] [--port N]`: the
//! built-in sandboxed filesystem MCP server (MCP-FILESYSTEM.md).
//!
//! stdio by default (stdout carries protocol messages only; logs go to
//! stderr); `--http` serves Streamable HTTP at `/mcp` plus `/health`, with
//! the MCP transport's DNS-rebinding protection: a foreign `Origin` is a
//! 403, and when bound to loopback so is a `Host` that is not a loopback
//! name. A bad config is one line on stderr and exit code 2.

use anyhow::Context;
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use server::filesystem::config;
use server::filesystem::server::FilesystemServer;
use server::filesystem::tools::Fs;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Request bodies larger than this get 413.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Sandboxed folders over MCP.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The YAML config (roots and limits).
    #[arg(long, default_value = "config/mcp-filesystem.yaml")]
    config: PathBuf,
    /// Serve Streamable HTTP at /mcp on HOST:PORT (without a value: the
    /// config's host and port) instead of stdio.
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    http: Option<String>,
    /// Serve HTTP on the config's host and this port (as the Go original).
    #[arg(long)]
    port: Option<u16>,
}

fn main() -> std::process::ExitCode {
    server::logging::to_stderr();
    let args = Args::parse();
    let checked = match config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let fs = match Fs::open(&checked) {
        Ok(fs) => Arc::new(fs),
        Err(e) => {
            eprintln!(
                "error: {}: a root cannot be opened ({})",
                args.config.display(),
                e.kind()
            );
            return std::process::ExitCode::from(2);
        }
    };
    for r in fs.specs() {
        tracing::info!(root = %r.name, tools = r.tools.len(), read_only = r.read_only(), "root");
    }
    let addr = match (&args.http, args.port) {
        (Some(a), _) if !a.is_empty() => Some(a.clone()),
        (Some(_), _) => Some(format!("{}:{}", checked.host, checked.port)),
        (None, Some(p)) => Some(format!("{}:{p}", checked.host)),
        (None, None) => None,
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let out = rt.block_on(async move {
        match addr {
            None => stdio(fs).await,
            Some(addr) => http(fs, &addr, &checked.allowed_origins).await,
        }
    });
    match out {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn stop_signal() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
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
}

async fn stdio(fs: Arc<Fs>) -> anyhow::Result<()> {
    let service = FilesystemServer::new(fs)
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the stdio session")?;
    tokio::select! {
        r = service.waiting() => { r?; }
        _ = stop_signal() => {}
    }
    Ok(())
}

async fn http(fs: Arc<Fs>, addr: &str, allowed: &[String]) -> anyhow::Result<()> {
    let listener = server::net::listen(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let ct = CancellationToken::new();
    let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .flat_map(|h| {
            [
                format!("http://{h}:*"),
                format!("https://{h}:*"),
                format!("http://{h}"),
                format!("https://{h}"),
            ]
        })
        .collect();
    origins.extend(allowed.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY);
    if !local.ip().is_loopback() {
        tracing::warn!(
            "listening on a non-loopback address: mcp-filesystem has no authentication of its own; keep it on the agent's network or behind a proxy"
        );
        config = config.disable_allowed_hosts();
    }
    let mcp = StreamableHttpService::new(
        move || Ok(FilesystemServer::new(fs.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", mcp).route(
        "/health",
        axum::routing::get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
    );
    tracing::info!("mcp-filesystem listening on http://{local}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}
