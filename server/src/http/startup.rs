//! Startup: from a loaded config to the state every request shares. The
//! store is opened (and what a crash left half-done settled), the model
//! clients, the MCP servers, the engine and its background tasks started,
//! before a request is served.

use super::state::AppState;
use super::{assets, auth};
use crate::config::{self, Config};
use crate::engine::Engine;
use crate::engine::a2a_tasks::executor::Executor;
use crate::engine::a2a_tasks::service::A2aTasks;
use crate::store::Store;
use crate::{domain, engine, events, llm, mcp, notify};
use leptos::config::LeptosOptions;
use std::sync::Arc;

/// The site's output name (`/pkg/stopgo.js`, `.wasm`, `.css`), as in Cargo.toml.
pub const SITE_NAME: &str = "stopgo";

/// Leptos options for serving the UI from `site_root`; with hashed asset
/// names when the site was built with them ([`assets::hash_file`]).
pub fn leptos_options(site_root: &str) -> LeptosOptions {
    let hashes = assets::hash_file(site_root);
    let options = LeptosOptions::builder()
        .output_name(SITE_NAME)
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .hash_files(hashes.is_some());
    match hashes {
        Some(file) => options.hash_file(file.into()).build(),
        None => options.build(),
    }
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Tools(Box<dyn std::error::Error + Send + Sync>),
    #[error("{0}")]
    Notifications(String),
    /// A card signing key, or a sub-agent's pinned key, that cannot be used.
    #[error("{0}")]
    CardKeys(String),
    /// `receipts.signing_key` cannot be read or cannot sign.
    #[error("{0}")]
    ReceiptKey(String),
    /// `a2a_conformance` asked of a build without the `a2a-tck` feature.
    #[error("this agent was built without A2A conformance mode (cargo feature a2a-tck)")]
    NoConformance,
}

impl From<mcp::McpStartError> for StartError {
    fn from(e: mcp::McpStartError) -> Self {
        StartError::Tools(Box::new(e))
    }
}

/// Everything `build_state` needs from outside.
pub struct Startup {
    pub config: Config,
    /// The config file's folder (relative `scripted:` paths).
    pub config_dir: std::path::PathBuf,
    pub site_root: String,
    /// The tools; `None` builds them from the config's MCP servers.
    pub tools: Option<Arc<dyn domain::tools::ToolRouter>>,
    /// Serve the A2A TCK's scripted behaviours instead of the agent
    /// (`agent --a2a-conformance`, only in builds with the `a2a-tck`
    /// feature; `true` elsewhere is [`StartError::NoConformance`]).
    pub a2a_conformance: bool,
}

/// The config's store (SQLite in `data_dir`, or PostgreSQL), migrated.
async fn open_store(config: &Config) -> Result<Store, crate::store::StoreError> {
    let audit_key = config
        .audit
        .key
        .as_ref()
        .map(|k| k.expose().as_bytes().to_vec());
    Ok(match (&config.store.backend, &config.store.url) {
        (config::StoreBackend::Postgres, Some(url)) => {
            let (url, max) = (url.expose().to_string(), config.store.max_connections);
            let lease = config.store.lease_seconds.min(3600) as u32;
            // Connecting may wait (30 s of retries): off the async workers.
            tokio::task::spawn_blocking(move || {
                Store::open_postgres(&url, max, lease, audit_key.as_deref())
            })
            .await
            .map_err(|e| crate::store::StoreError::Worker(e.to_string()))??
        }
        _ => Store::open_keyed(&config.data_dir, audit_key.as_deref())?,
    })
}

/// The live grants in the config's store (`agent policy explain`).
pub async fn live_grants(config: &Config) -> Result<Vec<app::models::Grant>, StartError> {
    let store = open_store(config).await?;
    Ok(store
        .live_grants(None)
        .await?
        .into_iter()
        .map(|g| g.grant)
        .collect())
}

/// Opens the store, settles work a crash left half-done, builds the model
/// client and the engine. A model that cannot be used (missing key) is
/// logged and reported by `/health`, not fatal: existing conversations and
/// approvals stay usable.
pub async fn build_state(s: Startup) -> Result<AppState, StartError> {
    // Every task spawned from here on has this owner: `run` drains it; a
    // start that fails stops what it had started.
    let tasks = domain::tasks::Tasks::new();
    let built = assemble(s, tasks.clone()).await;
    if built.is_err() {
        tasks.shutdown();
    }
    built
}

/// [`build_state`] with the owner of its tasks.
async fn assemble(s: Startup, tasks: domain::tasks::Tasks) -> Result<AppState, StartError> {
    if s.a2a_conformance && !cfg!(feature = "a2a-tck") {
        return Err(StartError::NoConformance);
    }
    let store = open_store(&s.config).await?;
    // Notification rows are written by the store's intents, in the
    // transaction of the event they announce (POLICY.md §5).
    let mut store = store;
    store.set_notify_routes(notify::routes(&s.config));
    store.set_tasks(tasks.clone());
    store.warm_pool();
    let notify = Arc::new(
        notify::link_key(&s.config, store.shared())
            .and_then(|key| notify::Notifier::new(&s.config, store.clone(), key))
            .map_err(StartError::Notifications)?,
    );
    let auth = Arc::new(auth::Auth::new(&s.config));
    if s.config.auth.mode == config::AuthMode::None
        && !domain::net::is_loopback_host(&s.config.host)
    {
        tracing::warn!(host = %s.config.host, "{}", auth::NO_AUTH_BANNER);
    }
    store
        .audit(
            "agent".into(),
            "config.loaded",
            serde_json::json!({"config_digest": s.config.source_digest, "auth_mode": s.config.auth.mode.as_str(), "name": s.config.name}),
        )
        .await?;
    let (rows, head) = store.audit_head().await?;
    tracing::info!(rows, head = %head, "audit chain head");
    let config = Arc::new(s.config);
    let (llm, models) = models(&config, &s.config_dir);
    let tools: Arc<dyn domain::tools::ToolRouter> = match s.tools {
        Some(t) => t,
        None => {
            let servers = config.effective_mcp_servers();
            if servers.is_empty() {
                Arc::new(domain::tools::NoTools)
            } else {
                mcp::CompositeClient::start(servers, config.unannotated_tools, &tasks).await?
            }
        }
    };
    // Several replicas share PostgreSQL: events go through its rows, and
    // half-done work is settled by the sweeper once its owner's lease
    // expires (another replica may be running it right now).
    let events = if store.shared() {
        events::Events::shared(store.clone(), &tasks).await?
    } else {
        events::Events::new()
    };
    let engine = engine::Engine::with_parts(
        store.clone(),
        config.clone(),
        llm,
        tools,
        models,
        Arc::new(crate::a2a::A2aClient::with_settings(sub_agents(
            &s.config_dir,
            &config,
        )?)),
        events,
        tasks.clone(),
    );
    // The gate's grants, before the first call (a resumed one included)
    // meets it.
    engine.load_grants().await?;
    if store.shared() {
        engine.start_replica_tasks(config.store.lease_seconds);
    } else {
        let resume = engine.recover().await?;
        if !resume.is_empty() {
            tracing::info!(
                count = resume.len(),
                "resuming approved actions found after a restart"
            );
            engine.resume_in_background(resume);
        }
    }
    // Before requests are served: what expired while the agent was down
    // is expired, never decided late.
    engine.start_expiry().await;
    // Every MCP tool compared with its pin before requests are served.
    engine.start_pins().await;
    engine.start_cards().await;

    let a2a = A2aTasks::new(engine.clone(), executor(s.a2a_conformance));
    let card_signer = card_signer(&s.config_dir, &config)?;
    let receipt_signer = receipt_signer(&s.config_dir, &config)?;
    let mcp = mcp_service(&engine, &store, &config, auth.enforced()).await?;
    Ok(AppState {
        card_signer,
        receipt_signer,
        card_served: Arc::default(),
        store,
        notify,
        engine,
        a2a,
        mcp,
        auth,
        config,
        leptos: leptos_options(&s.site_root),
        tasks,
    })
}

/// `/mcp`'s service, when `mcp_endpoint` is on: the engine's MCP endpoint
/// with the round-state key every replica shares (from the store).
async fn mcp_service(
    engine: &Engine,
    store: &Store,
    config: &Config,
    enforced: bool,
) -> Result<Option<axum::Router>, StartError> {
    if !config.mcp_endpoint.enabled {
        return Ok(None);
    }
    let key = store.shared_key("mcp-request-state").await?;
    let server = crate::http::mcp::handler::AgentMcp {
        endpoint: crate::engine::mcp_endpoint::service::McpEndpoint::new(engine.clone(), &key),
        tool: engine.agent_tool(),
        public_url: config.public_url.clone(),
        port: config.port,
        enforced,
        version: env!("CARGO_PKG_VERSION"),
    };
    Ok(Some(crate::http::mcp::router(
        server,
        config.max_body_bytes,
    )))
}

/// The configured model and those that `llm` nodes name for themselves,
/// loaded once each; a model that cannot be used is logged, not fatal.
fn models(
    config: &Config,
    config_dir: &std::path::Path,
) -> (
    Result<Arc<dyn llm::LlmClient>, llm::LlmError>,
    engine::NodeModels,
) {
    let load = |model: &str| {
        config::parse_model(model)
            .map_err(llm::LlmError::Config)
            .and_then(|m| {
                let env = |k: &str| std::env::var(k).ok();
                let http = llm::http::HttpClient::with_timeout(std::time::Duration::from_secs(
                    config.llm.timeout_seconds,
                ));
                llm::client_for(&m, config_dir, http, &env)
            })
    };
    let llm = load(&config.llm.model);
    // Models that `llm` nodes name for themselves, loaded once each.
    let mut models = engine::NodeModels::new();
    let mut pending: Vec<&config::NodeConfig> = config.agent.iter().collect();
    while let Some(n) = pending.pop() {
        pending.extend(n.agents.iter());
        if let Some(m) = &n.model
            && *m != config.llm.model
            && !models.contains_key(m)
        {
            let c = load(m);
            if let Err(e) = &c {
                tracing::error!(node = %n.name, "the model `{m}` cannot be used: {e}");
            }
            models.insert(m.clone(), c);
        }
    }
    match &llm {
        Ok(c) => tracing::info!(model = %c.describe(), "model ready"),
        Err(e) => tracing::error!(
            "the model cannot be used: {e}; new messages will fail until this is fixed"
        ),
    }
    (llm, models)
}

/// `a2a_card_signing`'s key, read once: a key that cannot sign stops the
/// start, naming it.
fn card_signer(
    dir: &std::path::Path,
    c: &Config,
) -> Result<Option<Arc<crate::a2a::signing::CardSigner>>, StartError> {
    let Some(s) = &c.a2a_card_signing else {
        return Ok(None);
    };
    let pem = match (&s.key, &s.key_file) {
        (Some(k), _) => k.expose().to_string(),
        (None, Some(f)) => std::fs::read_to_string(dir.join(f)).map_err(|e| {
            StartError::CardKeys(format!("a2a_card_signing.key_file {}: {e}", f.display()))
        })?,
        (None, None) => return Ok(None),
    };
    crate::a2a::signing::CardSigner::from_pem(&pem, &s.kid)
        .map(|k| Some(Arc::new(k)))
        .map_err(|e| StartError::CardKeys(format!("a2a_card_signing: {e}")))
}

/// `receipts.signing_key`, read once: a key that cannot sign stops the
/// start, naming it.
fn receipt_signer(
    dir: &std::path::Path,
    c: &Config,
) -> Result<Option<Arc<receipts::Signer>>, StartError> {
    let Some(r) = &c.receipts else {
        return Ok(None);
    };
    let file = dir.join(&r.signing_key);
    let pem = std::fs::read_to_string(&file).map_err(|e| {
        StartError::ReceiptKey(format!("receipts.signing_key {}: {e}", file.display()))
    })?;
    receipts::Signer::from_pem(&pem, r.kid.as_deref().unwrap_or(""))
        .map(|k| Some(Arc::new(k)))
        .map_err(|e| {
            StartError::ReceiptKey(format!("receipts.signing_key {}: {e}", file.display()))
        })
}

/// What the config says of each sub-agent (top-level `a2a` and every
/// node's), by configured URL: the keys its card must be signed with
/// (read now), the binding to prefer.
fn sub_agents(
    dir: &std::path::Path,
    c: &Config,
) -> Result<Vec<(String, crate::a2a::discovery::Settings)>, StartError> {
    use crate::a2a::discovery::{Dialect, Settings};
    use crate::a2a::signing::{Trust, keys_of_pem};
    let entries = c.sub_agent_entries();
    let mut out = Vec::new();
    for a in entries {
        let prefer = a.binding.map(|b| match b {
            config::A2aBinding::Jsonrpc => Dialect::V1,
            config::A2aBinding::HttpJson => Dialect::Rest,
            config::A2aBinding::Grpc => Dialect::Grpc,
        });
        let Some(t) = &a.trust else {
            if prefer.is_some() {
                out.push((
                    a.url.clone(),
                    Settings {
                        trust: None,
                        prefer,
                    },
                ));
            }
            continue;
        };
        let at = format!("the trust of sub-agent {}", a.name);
        let trust = if let Some(u) = &t.jwks_url {
            Trust::Jwks {
                url: u.clone(),
                kid: t.kid.clone(),
            }
        } else {
            let pem = match (&t.public_key, &t.public_key_file) {
                (Some(p), _) => p.clone(),
                (None, Some(f)) => std::fs::read_to_string(dir.join(f))
                    .map_err(|e| StartError::CardKeys(format!("{at}: {}: {e}", f.display())))?,
                (None, None) => continue,
            };
            Trust::Keys(
                keys_of_pem(&pem, t.kid.as_deref())
                    .map_err(|e| StartError::CardKeys(format!("{at}: {e}")))?,
            )
        };
        out.push((
            a.url.clone(),
            Settings {
                trust: Some(trust),
                prefer,
            },
        ));
    }
    Ok(out)
}

/// What serves `/a2a`: the engine, or (only in `a2a-tck` builds, checked
/// by `build_state`) the TCK's scripted behaviours.
fn executor(conformance: bool) -> Arc<dyn Executor> {
    #[cfg(feature = "a2a-tck")]
    if conformance {
        tracing::warn!(
            "A2A conformance mode: /a2a serves the TCK's scripted behaviours, not the agent"
        );
        return Arc::new(crate::engine::a2a_tasks::conformance::Conformance::default());
    }
    let _ = conformance;
    Arc::new(crate::engine::a2a_tasks::executor::EngineExecutor)
}
