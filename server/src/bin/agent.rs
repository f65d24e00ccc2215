//! `agent --config PATH`: load the config, open the store, serve REST and
//! the web UI on `host:port` until SIGINT or SIGTERM.

use anyhow::Context;

/// mimalloc instead of glibc's malloc: serving pages and lists, glibc's
/// `malloc`/`free` and their consolidation were about a quarter of the
/// agent's CPU (many threads freeing what others allocated); with mimalloc
/// the home page serves about a quarter more per core. Its arenas are
/// committed on use, not whole (`.cargo/config.toml`), so a replica stays
/// near its glibc footprint.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::Parser;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Stop & Go agent server.
#[derive(Parser, Debug)]
#[command(name = "agent", version, about)]
struct Args {
    /// The agent.yaml to run.
    #[arg(long, short, global = true, default_value = server::config::DEFAULT_CONFIG_PATH, env = "AGENT_CONFIG")]
    config: PathBuf,
    #[command(subcommand)]
    command: Option<Command>,
    /// Serve the A2A TCK's scripted behaviours at /a2a (messageId
    /// prefixes such as tck-complete-task) instead of the agent: for
    /// running the official conformance kit, never in production (only
    /// in builds with the cargo feature a2a-tck).
    #[cfg(feature = "a2a-tck")]
    #[arg(long)]
    a2a_conformance: bool,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// The audit trail.
    Audit {
        #[command(subcommand)]
        action: AuditAction,
    },
    /// The approval rules of `approvals:`.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
    /// Signed approval receipts (RECEIPTS.md).
    Receipt {
        #[command(subcommand)]
        action: ReceiptAction,
    },
}

#[derive(clap::Subcommand, Debug)]
enum ReceiptAction {
    /// Checks a receipt's signature, type and expiry against the issuer's
    /// JWKS, and whatever else it is told (issuer, server, tool, the exact
    /// arguments); prints its claims. Exit 0 when it holds, 1 naming why
    /// not, 2 when the JWKS cannot be read or --arguments is not JSON.
    Verify {
        /// The receipt (a compact JWS).
        jws: String,
        /// The issuer's JWKS: a URL (its /.well-known/jwks.json) or a file.
        #[arg(long)]
        jwks: String,
        /// The agent that must have issued it (`iss`).
        #[arg(long)]
        issuer: Option<String>,
        /// The MCP server it must allow a call on.
        #[arg(long)]
        server: Option<String>,
        /// The tool it must allow.
        #[arg(long)]
        tool: Option<String>,
        /// The exact arguments (JSON) it must allow.
        #[arg(long)]
        arguments: Option<String>,
    },
}

#[derive(clap::Subcommand, Debug)]
enum PolicyAction {
    /// Prints which rule decides a call and why each rule before it does
    /// not match; exit 0 (1 when the config does not load, 2 for bad --args).
    Explain {
        /// The tool's name as the model calls it (`resources_add`, `a2a_billing`).
        #[arg(long)]
        tool: String,
        /// The MCP server or sub-agent serving it.
        #[arg(long)]
        server: Option<String>,
        /// The call's arguments, as JSON.
        #[arg(long, default_value = "{}")]
        args: String,
    },
}

#[derive(clap::Subcommand, Debug)]
enum AuditAction {
    /// Checks the hash chain: exit 0 with the row count and head hash when
    /// intact, exit 1 naming the first bad row.
    Verify,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Some(Command::Audit {
        action: AuditAction::Verify,
    }) = &args.command
    {
        return verify(&args.config);
    }
    if let Some(Command::Policy {
        action:
            PolicyAction::Explain {
                tool,
                server,
                args: call,
            },
    }) = &args.command
    {
        return explain(&args.config, tool, server.as_deref(), call).await;
    }
    if let Some(Command::Receipt {
        action:
            ReceiptAction::Verify {
                jws,
                jwks,
                issuer,
                server,
                tool,
                arguments,
            },
    }) = &args.command
    {
        let told = Told {
            issuer: issuer.as_deref(),
            server: server.as_deref(),
            tool: tool.as_deref(),
            arguments: arguments.as_deref(),
        };
        return receipt_verify(jws, jwks, told).await;
    }
    // The config first: its `name` names the agent in traces.
    let config = match server::config::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            // Startup errors go to stderr once, as one readable message.
            eprintln!("error: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let telemetry = server::telemetry::init(&config.name, std::io::stdout().is_terminal());
    let out = serve(args, config).await;
    telemetry.shutdown();
    match out {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args, config: server::config::Config) -> anyhow::Result<()> {
    let site_root = std::env::var("LEPTOS_SITE_ROOT").unwrap_or_else(|_| "target/site".into());
    if !std::path::Path::new(&site_root).join("pkg").is_dir() {
        tracing::warn!(
            site_root,
            "the web UI's assets are missing (build them with `make build`, or set LEPTOS_SITE_ROOT); pages will not hydrate"
        );
    }
    let addr = format!("{}:{}", config.host, config.port);
    let name = config.name.clone();
    let config_dir = args
        .config
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let state = server::build_state(server::Startup {
        config,
        config_dir,
        site_root,
        tools: None,
        #[cfg(feature = "a2a-tck")]
        a2a_conformance: args.a2a_conformance,
        #[cfg(not(feature = "a2a-tck"))]
        a2a_conformance: false,
    })
    .await
    .context("starting the agent")?;
    let db = state.store.describe();
    let listener = mcp_serve::listen(&addr).await.with_context(|| {
        format!(
            "cannot listen on {addr} (host and port in {})",
            args.config.display()
        )
    })?;
    let local = listener.local_addr()?;
    let shutdown = shutdown_signal();
    tracing::info!(agent = %name, db = %db, "listening on http://{local}");
    server::run(listener, state, shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// `agent policy explain`: what the rules (and the live grants) would do
/// with one call.
async fn explain(
    config: &std::path::Path,
    tool: &str,
    server: Option<&str>,
    call: &str,
) -> std::process::ExitCode {
    let config = match server::config::load(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let call: serde_json::Value = match serde_json::from_str(call) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: --args is not JSON: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(s) = server
        && !config.tool_servers().iter().any(|k| k == s)
    {
        println!("note: `{s}` names no MCP server or sub-agent of this config");
    }
    print!(
        "{}",
        server::policy::explain(
            &config.policy(),
            tool,
            server,
            &call,
            config.unannotated_tools
        )
    );
    // What the live grants (REACH.md §3) would do, read from the store.
    let policy = config.policy();
    if server::policy::grants_note(&policy, &[], tool, server, &call).is_some() {
        match server::live_grants(&config).await {
            Ok(grants) => {
                if let Some(note) =
                    server::policy::grants_note(&policy, &grants, tool, server, &call)
                {
                    print!("{note}");
                }
            }
            Err(e) => println!("note: the live grants could not be read ({e})"),
        }
    }
    std::process::ExitCode::SUCCESS
}

/// `agent audit verify`: walks the chain of the config's database.
/// What `agent receipt verify` was told the receipt must allow.
struct Told<'a> {
    issuer: Option<&'a str>,
    server: Option<&'a str>,
    tool: Option<&'a str>,
    arguments: Option<&'a str>,
}

/// `agent receipt verify`.
async fn receipt_verify(jws: &str, jwks: &str, told: Told<'_>) -> std::process::ExitCode {
    let text = if jwks.starts_with("http://") || jwks.starts_with("https://") {
        let got = async {
            reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(10))
                .build()?
                .get(jwks)
                .send()
                .await?
                .error_for_status()?
                .text()
                .await
        };
        got.await
            .map_err(|e| format!("cannot fetch the JWKS at {jwks}: {e}"))
    } else {
        std::fs::read_to_string(jwks).map_err(|e| format!("cannot read the JWKS {jwks}: {e}"))
    };
    let keys = text.and_then(|t| {
        let v: serde_json::Value =
            serde_json::from_str(&t).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
        receipts::Keys::from_jwks(&v)
    });
    let keys = match keys {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let arguments = match told
        .arguments
        .map(serde_json::from_str::<serde_json::Value>)
    {
        Some(Err(e)) => {
            eprintln!("error: --arguments is not JSON: {e}");
            return std::process::ExitCode::from(2);
        }
        other => other.and_then(Result::ok),
    };
    let expect = receipts::Expect {
        issuer: told.issuer,
        server: told.server,
        tool: told.tool,
        arguments: arguments.as_ref(),
        now: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    match receipts::verify(Some(jws.trim()), &keys, &expect) {
        Ok(claims) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&claims).unwrap_or_default()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(why) => {
            println!("receipt refused: {why}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn verify(config: &std::path::Path) -> std::process::ExitCode {
    let out = server::config::load(config)
        .context("loading the config")
        .and_then(|c| {
            let key = c.audit.key.as_ref().map(|k| k.expose().as_bytes().to_vec());
            match (&c.store.backend, &c.store.url) {
                (server::config::StoreBackend::Postgres, Some(url)) => {
                    let url = url.expose().to_string();
                    // The synchronous client cannot run on an async worker.
                    std::thread::spawn(move || {
                        server::store::audit_verify_postgres(&url, key.as_deref())
                    })
                    .join()
                    .map_err(|_| anyhow::anyhow!("the verifier stopped"))?
                }
                _ => server::store::audit_verify(&c.db_path(), key.as_deref()),
            }
            .context("reading the audit trail")
        });
    match out {
        Ok(server::store::audit::Verdict::Intact { rows, head }) => {
            println!("audit trail intact: {rows} rows, head {head}");
            std::process::ExitCode::SUCCESS
        }
        Ok(server::store::audit::Verdict::Broken { seq, problem }) => {
            println!("audit trail BROKEN at seq {seq}: {problem}");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Installs the SIGINT and SIGTERM handlers now (so a signal that arrives
/// right after startup is not fatal) and returns a future that resolves on
/// the first of them.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    #[cfg(unix)]
    let int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
    async move {
        #[cfg(unix)]
        match (term, int) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(
                    "cannot listen for SIGTERM/SIGINT ({e}); stop the agent with SIGKILL"
                );
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        tracing::info!("shutting down: finishing in-flight requests");
    }
}
