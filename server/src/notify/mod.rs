//! Notifications (POLICY.md §5): telling people that an approval waits.
//!
//! The store writes outbox rows in the transaction of each event
//! ([`crate::store::outbox`]); this module delivers them. Each process runs
//! one worker ([`worker`]) that claims due rows (`FOR UPDATE SKIP LOCKED`
//! on PostgreSQL, so replicas share the work and each row goes out from one
//! of them at a time), sends them (webhooks in `json` or `slack` format,
//! email over SMTP), and records the outcome: delivered, retried later
//! with exponential backoff and jitter (or the receiver's `Retry-After`),
//! or, after `retry_for` (24 h), a dead letter that `/ui/notifications`
//! can send again. Sending happens off every request path: a turn that
//! raises an approval only pays for the rows it writes.
//!
//! - [`body`]: what a notification says in each format.
//! - [`links`]: the signed single-use links in it.
//! - [`webhook`], [`email`]: one attempt of each kind.
//! - [`slack`]: the clicks of interactive Slack buttons, verified, and the
//!   outcome posted back.

pub(crate) mod body;
pub(crate) mod email;
pub(crate) mod links;
pub(crate) mod push;
pub(crate) mod slack;
pub(crate) mod webhook;
mod worker;

use crate::config::{Config, Format};
use crate::store::Store;
use crate::store::outbox::{Route, Routes};
use links::Links;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Each attempt's limit (POLICY.md §5 / the issue: 10 s).
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a failing row is retried by default.
pub(crate) const RETRY_FOR: Duration = Duration::from_secs(24 * 3600);

/// How a target is reached.
enum Kind {
    Webhook {
        url: String,
        secret: Option<String>,
        format: Format,
        /// Slack messages carry real Approve/Reject buttons.
        interactive: bool,
    },
    Email(Box<email::Mailer>),
}

/// The delivery side of notifications: targets, the link key, the worker.
pub(crate) struct Notifier {
    store: Store,
    targets: BTreeMap<String, Kind>,
    links: Links,
    /// Where links point: `public_url`, else the address the agent
    /// listens on (known once it listens).
    base: OnceLock<String>,
    retry_for: Duration,
    http: reqwest::Client,
    /// A2A push: the secrets' sealer, the guarded client, the switch.
    sealer: push::Sealer,
    push_http: reqwest::Client,
    allow_private: bool,
    /// The Slack targets with `interactive` (REACH.md §2).
    slack: Vec<slack::SlackApp>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("targets", &self.targets.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The store's routes for `config` (which target wants which event).
pub(crate) fn routes(config: &Config) -> Routes {
    let n = &config.notifications;
    Routes {
        agent: config.name.clone(),
        targets: n
            .targets
            .iter()
            .map(|t| Route {
                name: t.name.clone(),
                events: t.events.clone(),
            })
            .collect(),
        reminders: n
            .reminders
            .iter()
            .filter_map(|r| crate::policy::parse_duration(r).ok())
            .collect(),
        wake: tokio::sync::Notify::new(),
    }
}

/// The key links are signed with: `notifications.link_key`, else derived
/// from `audit.key`, else (one process on SQLite) a random key kept in
/// `data_dir/link.key`. Replicas share no directory, so on PostgreSQL
/// with notification targets one of the first two is required.
pub(crate) fn link_key(config: &Config, shared: bool) -> Result<Vec<u8>, String> {
    if let Some(k) = &config.notifications.link_key {
        return Ok(k.expose().as_bytes().to_vec());
    }
    if let Some(k) = &config.audit.key {
        use hmac::Mac;
        let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(k.expose().as_bytes())
            .map_err(|_| "audit.key cannot be used as an HMAC key".to_string())?;
        mac.update(b"stop-and-go notification links");
        return Ok(mac.finalize().into_bytes().to_vec());
    }
    if shared && !config.notifications.targets.is_empty() {
        return Err("notifications.link_key: set it (the same on every replica, e.g. \"${LINK_KEY}\") or audit.key, so that a link works on any replica".into());
    }
    if shared {
        // A2A push configs are made at run time, so their secrets cannot
        // be checked for here; say once what goes wrong without a key.
        tracing::warn!(
            "notifications.link_key (or audit.key) is not set on a shared store: A2A push secrets sealed here cannot be opened by another replica, which then cannot deliver them; set the same key on every replica"
        );
    }
    let path = config.data_dir.join("link.key");
    if let Ok(hex) = std::fs::read_to_string(&path) {
        let hex = hex.trim();
        if hex.len() >= 32 {
            return Ok(hex.as_bytes().to_vec());
        }
    }
    let key: [u8; 32] = rand::random();
    let hex = crate::domain::digest::hex(&key);
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| format!("cannot create {}: {e}", config.data_dir.display()))?;
    write_private(&path, &hex).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(hex.into_bytes())
}

/// Writes a file only its owner can read.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

impl Notifier {
    /// The targets of `config`, ready to send (nothing is contacted yet).
    pub(crate) fn new(config: &Config, store: Store, key: Vec<u8>) -> Result<Notifier, String> {
        let n = &config.notifications;
        let mut targets = BTreeMap::new();
        let mut slack = Vec::new();
        for t in &n.targets {
            if let Some(i) = &t.interactive {
                slack.push(slack::SlackApp::new(&t.name, i));
            }
            let kind = match (&t.url, &t.smtp) {
                (Some(url), _) => Kind::Webhook {
                    url: url.clone(),
                    secret: t.secret.as_ref().map(|s| s.expose().to_string()),
                    format: t.format,
                    interactive: t.interactive.is_some(),
                },
                (None, Some(smtp)) => {
                    Kind::Email(Box::new(email::Mailer::new(smtp, &t.to, ATTEMPT_TIMEOUT)?))
                }
                (None, None) => continue,
            };
            targets.insert(t.name.clone(), kind);
        }
        let http = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .connect_timeout(ATTEMPT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("stop-and-go/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let allow_private = config.a2a_push_allow_private;
        Ok(Notifier {
            store,
            targets,
            sealer: push::Sealer::new(&key),
            push_http: push::client(allow_private)?,
            allow_private,
            links: Links::new(key),
            slack,
            base: OnceLock::new(),
            retry_for: n
                .retry_for
                .as_deref()
                .and_then(|r| crate::policy::parse_duration(r).ok())
                .unwrap_or(RETRY_FOR),
            http,
        })
    }

    /// The link key.
    pub(crate) fn links(&self) -> &Links {
        &self.links
    }

    /// Seals and opens A2A push secrets.
    pub(crate) fn sealer(&self) -> &push::Sealer {
        &self.sealer
    }

    /// Whether A2A pushes may go to internal addresses.
    pub(crate) fn allow_private(&self) -> bool {
        self.allow_private
    }

    /// Whether any target is configured.
    pub(crate) fn is_on(&self) -> bool {
        !self.targets.is_empty()
    }

    /// Starts the worker, as a task of `tasks`; links point at `base`
    /// (`public_url`, else the address the agent listens on). A delivery
    /// cut by shutdown is sent again once its claim expires.
    pub(crate) fn start(self: &Arc<Self>, base: String, tasks: &crate::domain::tasks::Tasks) {
        let _ = self.base.set(base.trim_end_matches('/').to_string());
        // Always: A2A push deliveries go through the outbox too.
        let me = self.clone();
        tasks.spawn_background("notifications", async move { me.run().await });
        // Beside it, so a long prune never holds a delivery back.
        tasks.spawn_background("outbox prune", worker::prune(self.store.clone()));
    }

    fn base(&self) -> &str {
        self.base.get().map(String::as_str).unwrap_or("")
    }
}
