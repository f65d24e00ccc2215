//! `mcp-filesystem [--config PATH] [--http [HOST:PORT]] [--port N]`: the
//! built-in sandboxed filesystem MCP server (MCP-FILESYSTEM.md).
//!
//! stdio by default (stdout carries protocol messages only; logs go to
//! stderr); `--http` serves Streamable HTTP at `/mcp` plus `/health`, with
//! DNS-rebinding protection (`mcp_serve::http`). A bad config is one line
//! on stderr and exit code 2.

use anyhow::Context;
use clap::Parser;
use mcp_filesystem::config;
use mcp_filesystem::server::FilesystemServer;
use mcp_filesystem::tools::Fs;
use mcp_serve::guard::Guard;
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Sandboxed folders over MCP.
#[derive(Parser, Debug)]
#[command(name = "mcp-filesystem", version, about)]
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
    mcp_serve::logging::to_stderr();
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
    let ledger = checked
        .ledger
        .clone()
        .unwrap_or_else(|| PathBuf::from("mcp-filesystem.ledger.db"));
    let guard = match Guard::open(&ledger, checked.require_receipts.clone()) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            eprintln!(
                "error: the ledger {} cannot be opened: {e}",
                ledger.display()
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
            None => stdio(fs, guard).await,
            Some(addr) => {
                mcp_serve::http::http(
                    "mcp-filesystem",
                    &addr,
                    &checked.allowed_origins,
                    move || FilesystemServer::new(fs.clone(), guard.clone()),
                )
                .await
            }
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

async fn stdio(fs: Arc<Fs>, guard: Arc<Guard>) -> anyhow::Result<()> {
    let service = FilesystemServer::new(fs, guard)
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the stdio session")?;
    tokio::select! {
        r = service.waiting() => { r?; }
        _ = mcp_serve::http::stop_signal() => {}
    }
    Ok(())
}
