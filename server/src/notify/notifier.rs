//! The delivery side of notifications as one value: its targets, the link
//! key, the A2A push sealer and the Slack apps, built once from the config.
//! The worker (`worker.rs`) and the Slack click handling add behaviour to it
//! from their own files; this file imports none of them.

use super::webhook::{ATTEMPT_TIMEOUT, RETRY_FOR};
use super::{email, links, push, slack};
use crate::config::{Config, Format};
use crate::domain::pages::SharedPages;
use crate::store::Store;
use crate::store::outbox::{Route, Routes};
use links::Links;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

/// How a target is reached.
pub(super) enum Kind {
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
    pub(super) store: Store,
    pub(super) targets: BTreeMap<String, Kind>,
    pub(super) links: Links,
    /// The UI's page links (under `public_url`, else the address the
    /// agent listens on), handed down by `http/` once it listens.
    pub(super) pages: OnceLock<SharedPages>,
    pub(super) retry_for: Duration,
    pub(super) http: reqwest::Client,
    /// A2A push: the secrets' sealer, the guarded client, the switch.
    pub(super) sealer: push::Sealer,
    pub(super) push_http: reqwest::Client,
    pub(super) allow_private: bool,
    /// The Slack targets with `interactive` (REACH.md §2).
    pub(super) slack: Vec<slack::SlackApp>,
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
            pages: OnceLock::new(),
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
}

impl Notifier {
    /// The Slack targets with `interactive`.
    pub(crate) fn slack_apps(&self) -> &[slack::SlackApp] {
        &self.slack
    }

    /// Posts `message` to a click's `response_url` if `app` allows its
    /// host; any other URL is logged and ignored. Never fails the caller.
    pub(crate) async fn respond_to_slack(
        &self,
        app: &slack::SlackApp,
        url: &str,
        message: &serde_json::Value,
    ) {
        if !app.may_respond_to(url) {
            tracing::warn!(target_name = %app.target, "a Slack response_url outside interactive.response_hosts was ignored");
            return;
        }
        match self.http.post(url).json(message).send().await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                tracing::warn!(target_name = %app.target, status = r.status().as_u16(), "Slack refused the response_url post")
            }
            Err(e) => {
                tracing::warn!(target_name = %app.target, error = %e.without_url(), "could not post to the Slack response_url")
            }
        }
    }
}
