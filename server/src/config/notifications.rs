//! `notifications:` (POLICY.md §5): who is told that an approval waits,
//! and how (a webhook in `json` or Slack `slack` format, or email over
//! SMTP).
//!
//! These are the types as written in agent.yaml, checked by [`validate`]
//! with the key path of each problem: a target that cannot be reached as
//! written (a bad URL, an unknown event, an email address that does not
//! parse) is a startup error, never a notification silently dropped.

use super::auth::Secret;
use super::error::Problem;
use serde::Deserialize;

/// Every event a target may subscribe to.
pub const EVENTS: &[&str] = &[
    "approval.requested",
    "approval.reminder",
    "approval.escalated",
    "approval.decided",
    "approval.expired",
    "approval.in_doubt",
    "tool.changed",
    "question.asked",
    "question.reminder",
    "question.expired",
];

/// `notifications:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationsConfig {
    /// Delays after a request (`15m`, `1h`) at which an approval still
    /// pending is announced again (`approval.reminder`).
    #[serde(default)]
    pub reminders: Vec<String>,
    #[serde(default)]
    pub targets: Vec<TargetConfig>,
    /// How long a failing delivery is retried before it becomes a dead
    /// letter (default `24h`).
    #[serde(default)]
    pub retry_for: Option<String>,
    /// The key that signs the links in notifications (from the
    /// environment). Default: derived from `audit.key`, else a random key
    /// kept in `data_dir/link.key` (one process); replicas on PostgreSQL
    /// need one of the first two so that any replica accepts a link.
    #[serde(default)]
    pub link_key: Option<Secret>,
}

/// One target: a webhook (`url`) or a mailbox (`smtp` + `to`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    pub name: String,
    #[serde(default)]
    pub url: Option<String>,
    /// Signs each webhook body (`X-StopGo-Signature`); from the environment.
    #[serde(default)]
    pub secret: Option<Secret>,
    #[serde(default)]
    pub format: Format,
    #[serde(default)]
    pub smtp: Option<SmtpConfig>,
    /// Email recipients.
    #[serde(default)]
    pub to: Vec<String>,
    /// The events it is told about; every event when absent.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// Real Approve/Reject buttons in a `slack` target's messages
    /// (REACH.md §2): Slack posts the clicks to
    /// `/integrations/slack/interactions`.
    #[serde(default)]
    pub interactive: Option<InteractiveConfig>,
}

/// `interactive:` of a Slack target (REACH.md §2).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InteractiveConfig {
    /// The Slack app's signing secret, from the environment: it proves a
    /// click came from Slack.
    pub signing_secret: Secret,
    /// Slack user id → the principal who decides as that user.
    #[serde(default)]
    pub users: std::collections::BTreeMap<String, String>,
    /// Hosts a `response_url` may point at (default `hooks.slack.com`,
    /// `https` only; `127.0.0.1` also allows `http`, for tests).
    #[serde(default = "default_response_hosts")]
    pub response_hosts: Vec<String>,
}

fn default_response_hosts() -> Vec<String> {
    vec!["hooks.slack.com".into()]
}

/// A webhook body's shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// POLICY.md §5's body.
    #[default]
    Json,
    /// A Slack incoming-webhook message (Block Kit, with link buttons).
    Slack,
}

/// `smtp:` of an email target.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    #[serde(default = "default_smtp_port")]
    pub port: u16,
    pub from: String,
    /// Upgrade the connection with STARTTLS (required when true).
    #[serde(default)]
    pub starttls: bool,
    #[serde(default)]
    pub username: Option<String>,
    /// From the environment.
    #[serde(default)]
    pub password: Option<Secret>,
}

fn default_smtp_port() -> u16 {
    25
}

/// The problems of `notifications:`, each with its key path.
pub fn validate(n: &NotificationsConfig, p: &mut Vec<Problem>) {
    for (i, r) in n.reminders.iter().enumerate() {
        if let Err(e) = crate::domain::duration::parse(r) {
            p.push(Problem::new(format!("notifications.reminders[{i}]"), e));
        }
    }
    if let Some(r) = &n.retry_for
        && let Err(e) = crate::domain::duration::parse(r)
    {
        p.push(Problem::new("notifications.retry_for", e));
    }
    if let Some(k) = &n.link_key
        && k.expose().len() < 16
    {
        p.push(Problem::new(
            "notifications.link_key",
            "the link key is shorter than 16 characters: use a long random value",
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, t) in n.targets.iter().enumerate() {
        let at = format!("notifications.targets[{i}]");
        if t.name.trim().is_empty() {
            p.push(Problem::new(format!("{at}.name"), "a target needs a name"));
        } else if !names.insert(t.name.as_str()) {
            p.push(Problem::new(
                format!("{at}.name"),
                format!("{:?} is used by another target: names must differ", t.name),
            ));
        }
        check_target(t, &at, p);
    }
}

/// One target's problems beyond its name: a webhook or an email, the
/// Slack `interactive` part, the events it is sent.
fn check_target(t: &TargetConfig, at: &str, p: &mut Vec<Problem>) {
    match (&t.url, &t.smtp) {
        (Some(_), Some(_)) => p.push(Problem::new(
            at,
            "a target has either `url` (a webhook) or `smtp` (email), not both",
        )),
        (None, None) => p.push(Problem::new(
            at,
            "a target needs `url` (a webhook) or `smtp` with `to` (email)",
        )),
        (Some(url), None) => check_webhook(t, url, at, p),
        (None, Some(smtp)) => check_email(t, smtp, at, p),
    }
    if let Some(i) = &t.interactive {
        check_interactive(t, i, at, p);
    }
    for (j, e) in t.events.iter().flatten().enumerate() {
        if !EVENTS.contains(&e.as_str()) {
            p.push(Problem::new(
                format!("{at}.events[{j}]"),
                format!("unknown event {e:?}: use one of {}", EVENTS.join(", ")),
            ));
        }
    }
}

/// A webhook target: an http(s) URL, no email recipients.
fn check_webhook(t: &TargetConfig, url: &str, at: &str, p: &mut Vec<Problem>) {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => p.push(Problem::new(
            format!("{at}.url"),
            format!("{url:?} is not an http(s) URL"),
        )),
    }
    if !t.to.is_empty() {
        p.push(Problem::new(
            format!("{at}.to"),
            "`to` is for email targets (with `smtp`)",
        ));
    }
}

/// An email target: a host, a sender and recipients that parse, the
/// login whole, nothing that only a webhook has.
fn check_email(t: &TargetConfig, smtp: &SmtpConfig, at: &str, p: &mut Vec<Problem>) {
    if smtp.host.trim().is_empty() {
        p.push(Problem::new(
            format!("{at}.smtp.host"),
            "the SMTP host is empty",
        ));
    }
    if smtp.from.parse::<lettre::message::Mailbox>().is_err() {
        p.push(Problem::new(
            format!("{at}.smtp.from"),
            format!("{:?} is not an email address", smtp.from),
        ));
    }
    if smtp.password.is_some() != smtp.username.is_some() {
        p.push(Problem::new(
            format!("{at}.smtp"),
            "`username` and `password` go together",
        ));
    }
    if t.to.is_empty() {
        p.push(Problem::new(
            format!("{at}.to"),
            "an email target needs at least one recipient in `to`",
        ));
    }
    for (j, to) in t.to.iter().enumerate() {
        if to.parse::<lettre::message::Mailbox>().is_err() {
            p.push(Problem::new(
                format!("{at}.to[{j}]"),
                format!("{to:?} is not an email address"),
            ));
        }
    }
    if t.secret.is_some() {
        p.push(Problem::new(
            format!("{at}.secret"),
            "`secret` signs webhook bodies: an email target has none",
        ));
    }
    if t.format != Format::Json {
        p.push(Problem::new(
            format!("{at}.format"),
            "`format` is for webhooks: an email target has none",
        ));
    }
}

/// The `interactive` part of a Slack target.
fn check_interactive(t: &TargetConfig, i: &InteractiveConfig, at: &str, p: &mut Vec<Problem>) {
    if t.format != Format::Slack || t.url.is_none() {
        p.push(Problem::new(
            format!("{at}.interactive"),
            "`interactive` is for Slack targets: set `format: slack` and `url`",
        ));
    }
    if i.signing_secret.expose().trim().is_empty() {
        p.push(Problem::new(
            format!("{at}.interactive.signing_secret"),
            "the signing secret is empty: set it from the Slack app's Basic Information page",
        ));
    }
    for (id, who) in &i.users {
        if id.trim().is_empty() || who.trim().is_empty() {
            p.push(Problem::new(
                format!("{at}.interactive.users"),
                "each entry maps a Slack user id (U…) to a principal's name; neither may be empty",
            ));
        }
    }
    if i.response_hosts.is_empty() {
        p.push(Problem::new(
            format!("{at}.interactive.response_hosts"),
            "list at least one host (Slack's is hooks.slack.com)",
        ));
    }
    for (j, h) in i.response_hosts.iter().enumerate() {
        if h.trim().is_empty() || h.contains('/') || h.contains(':') && !h.starts_with('[') {
            p.push(Problem::new(
                format!("{at}.interactive.response_hosts[{j}]"),
                format!("{h:?} is not a host name (write `hooks.slack.com`, no scheme or path)"),
            ));
        }
    }
}
