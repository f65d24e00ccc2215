//! `auth:` and `audit:` in agent.yaml (AUTH.md §1, contract), and their rules.
//!
//! Secrets (operator tokens, the OIDC client secret, the audit key) must be
//! written as `${VAR}` in the file: a literal secret in agent.yaml ends up in
//! version control, so it is a startup error, checked on the raw YAML before
//! expansion ([`literal_secrets`]). After expansion they are [`Secret`]s,
//! whose `Debug` never prints the value, so a logged config leaks nothing.

use super::error::Problem;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A secret value from the environment. `Debug` prints `"***"`.
#[derive(Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(transparent)]
pub struct Secret(pub String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// Who may call the agent and how they prove it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// The seed's behaviour: nothing enforced (cross-site protection still holds).
    #[default]
    None,
    /// Static operator tokens from the environment.
    Tokens,
    /// Bearer JWTs from an OpenID provider, browser sign-in with it.
    Oidc,
    /// Identity headers set by an authenticating reverse proxy.
    Proxy,
}

impl AuthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Tokens => "tokens",
            AuthMode::Oidc => "oidc",
            AuthMode::Proxy => "proxy",
        }
    }
}

/// `auth:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    #[serde(default)]
    pub mode: AuthMode,
    /// Lifetime of a browser session, in hours.
    #[serde(default = "default_session_hours")]
    pub session_hours: u32,
    /// Extra browser origins allowed to send state-changing requests.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Nobody decides an approval raised by their own request. Default:
    /// true when `mode` is not `none`.
    #[serde(default)]
    pub separation_of_duties: Option<bool>,
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    #[serde(default)]
    pub oidc: Option<OidcConfig>,
    #[serde(default)]
    pub proxy: Option<ProxyConfig>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::None,
            session_hours: default_session_hours(),
            allowed_origins: Vec::new(),
            separation_of_duties: None,
            tokens: Vec::new(),
            oidc: None,
            proxy: None,
        }
    }
}

impl AuthConfig {
    /// Whether separation of duties is in force.
    pub fn separation_of_duties(&self) -> bool {
        self.separation_of_duties
            .unwrap_or(self.mode != AuthMode::None)
    }
}

/// One static credential (mode `tokens`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub name: String,
    pub token: Secret,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `auth.oidc`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    pub issuer: String,
    pub audience: String,
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_secret: Option<Secret>,
    #[serde(default = "default_name_claim")]
    pub name_claim: String,
    #[serde(default)]
    pub roles_claim: Option<String>,
    #[serde(default)]
    pub role_map: BTreeMap<String, String>,
}

/// `auth.proxy`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    pub user_header: String,
    #[serde(default)]
    pub groups_header: Option<String>,
    #[serde(default)]
    pub role_map: BTreeMap<String, String>,
    pub trusted_proxies: Vec<String>,
}

/// `audit:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// HMAC key for the chain's hashes.
    #[serde(default)]
    pub key: Option<Secret>,
}

fn default_session_hours() -> u32 {
    12
}
fn default_name_claim() -> String {
    "sub".into()
}

/// The four roles, as written in config.
pub const ROLE_NAMES: &[&str] = &["viewer", "requester", "approver", "admin"];

/// Minimum length of a static token.
pub const MIN_TOKEN_LEN: usize = 16;

/// Keys whose value must be a `${VAR}` reference, checked before expansion.
pub fn literal_secrets(raw: &serde_yaml::Value) -> Vec<Problem> {
    use serde_yaml::Value;
    let mut p = Vec::new();
    let get = |v: &Value, k: &str| v.as_mapping().and_then(|m| m.get(k)).cloned();
    let mut check = |value: Option<Value>, at: String| {
        if let Some(Value::String(s)) = value
            && !s.contains("${")
        {
            p.push(Problem::new(
                at,
                "a secret must come from the environment: write it as \"${VAR}\" and set VAR, never the value itself",
            ));
        }
    };
    if let Some(auth) = get(raw, "auth") {
        if let Some(Value::Sequence(tokens)) = get(&auth, "tokens") {
            for (i, t) in tokens.iter().enumerate() {
                check(get(t, "token"), format!("auth.tokens[{i}].token"));
            }
        }
        if let Some(oidc) = get(&auth, "oidc") {
            check(
                get(&oidc, "client_secret"),
                "auth.oidc.client_secret".into(),
            );
        }
    }
    if let Some(Value::Sequence(servers)) = get(raw, "mcp_servers") {
        for (i, s) in servers.iter().enumerate() {
            if let Some(auth) = get(s, "auth") {
                check(
                    get(&auth, "client_secret"),
                    format!("mcp_servers[{i}].auth.client_secret"),
                );
            }
        }
    }
    if let Some(audit) = get(raw, "audit") {
        check(get(&audit, "key"), "audit.key".into());
    }
    if let Some(signing) = get(raw, "a2a_card_signing") {
        check(get(&signing, "key"), "a2a_card_signing.key".into());
    }
    if let Some(n) = get(raw, "notifications") {
        check(get(&n, "link_key"), "notifications.link_key".into());
        if let Some(Value::Sequence(targets)) = get(&n, "targets") {
            for (i, t) in targets.iter().enumerate() {
                check(
                    get(t, "secret"),
                    format!("notifications.targets[{i}].secret"),
                );
                if let Some(smtp) = get(t, "smtp") {
                    check(
                        get(&smtp, "password"),
                        format!("notifications.targets[{i}].smtp.password"),
                    );
                }
                if let Some(interactive) = get(t, "interactive") {
                    check(
                        get(&interactive, "signing_secret"),
                        format!("notifications.targets[{i}].interactive.signing_secret"),
                    );
                }
            }
        }
    }
    p
}

/// The rules of `auth:` and `audit:` beyond their types.
pub fn validate(auth: &AuthConfig, audit: &AuditConfig, p: &mut Vec<Problem>) {
    if !(1..=24 * 30).contains(&auth.session_hours) {
        p.push(Problem::new(
            "auth.session_hours",
            format!(
                "{} is out of range: use 1 to 720 (default 12)",
                auth.session_hours
            ),
        ));
    }
    for (i, o) in auth.allowed_origins.iter().enumerate() {
        if crate::domain::net::parse_origin(o).is_none() {
            p.push(Problem::new(
                format!("auth.allowed_origins[{i}]"),
                format!("`{o}` is not an origin: write scheme://host[:port], e.g. https://ops.example.com"),
            ));
        }
    }
    let missing = |section: &str| {
        format!(
            "mode `{}` needs `auth.{section}`: see AUTH.md §1 for an example",
            auth.mode.as_str()
        )
    };
    match auth.mode {
        AuthMode::None => {}
        AuthMode::Tokens if auth.tokens.is_empty() => {
            p.push(Problem::new("auth.tokens", missing("tokens")))
        }
        AuthMode::Oidc if auth.oidc.is_none() => p.push(Problem::new("auth.oidc", missing("oidc"))),
        AuthMode::Proxy if auth.proxy.is_none() => {
            p.push(Problem::new("auth.proxy", missing("proxy")))
        }
        _ => {}
    }
    let mut names = BTreeMap::new();
    for (i, t) in auth.tokens.iter().enumerate() {
        let at = format!("auth.tokens[{i}]");
        if t.name.trim().is_empty() || t.name.len() > 100 {
            p.push(Problem::new(
                format!("{at}.name"),
                "must be 1 to 100 characters: the principal's name in approvals and the audit trail",
            ));
        }
        if let Some(first) = names.insert(t.name.as_str(), i) {
            p.push(Problem::new(
                format!("{at}.name"),
                format!(
                    "duplicate token name `{}` (also at auth.tokens[{first}])",
                    t.name
                ),
            ));
        }
        if t.token.expose().chars().count() < MIN_TOKEN_LEN {
            p.push(Problem::new(
                format!("{at}.token"),
                format!("is shorter than {MIN_TOKEN_LEN} characters: use a long random value, e.g. `openssl rand -hex 32`"),
            ));
        }
        if t.roles.is_empty() {
            p.push(Problem::new(
                format!("{at}.roles"),
                format!("is empty: give at least one of {}", ROLE_NAMES.join(", ")),
            ));
        }
        check_roles(t.roles.iter(), &format!("{at}.roles"), p);
    }
    let mut seen_secrets = BTreeMap::new();
    for (i, t) in auth.tokens.iter().enumerate() {
        if let Some(first) = seen_secrets.insert(t.token.expose(), i) {
            p.push(Problem::new(
                format!("auth.tokens[{i}].token"),
                format!("is the same value as auth.tokens[{first}].token: every principal needs its own token"),
            ));
        }
    }
    if let Some(o) = &auth.oidc {
        if let Err(e) = super::url::check_http_url(&o.issuer) {
            p.push(Problem::new("auth.oidc.issuer", e));
        }
        if o.audience.trim().is_empty() {
            p.push(Problem::new(
                "auth.oidc.audience",
                "must not be empty: the `aud` bearer tokens must carry",
            ));
        }
        if o.client_id.as_deref().is_some_and(|c| c.trim().is_empty()) {
            p.push(Problem::new("auth.oidc.client_id", "must not be empty"));
        }
        if o.client_secret.is_some() && o.client_id.is_none() {
            p.push(Problem::new(
                "auth.oidc.client_secret",
                "needs `client_id` (browser sign-in)",
            ));
        }
        if o.name_claim.trim().is_empty() {
            p.push(Problem::new(
                "auth.oidc.name_claim",
                "must not be empty (default sub)",
            ));
        }
        check_roles(o.role_map.values(), "auth.oidc.role_map", p);
    }
    if let Some(x) = &auth.proxy {
        if axum::http::HeaderName::from_bytes(x.user_header.as_bytes()).is_err() {
            p.push(Problem::new(
                "auth.proxy.user_header",
                format!("`{}` is not a header name", x.user_header),
            ));
        }
        if let Some(g) = &x.groups_header
            && axum::http::HeaderName::from_bytes(g.as_bytes()).is_err()
        {
            p.push(Problem::new(
                "auth.proxy.groups_header",
                format!("`{g}` is not a header name"),
            ));
        }
        if x.trusted_proxies.is_empty() {
            p.push(Problem::new(
                "auth.proxy.trusted_proxies",
                "is empty: list the proxy's addresses, e.g. [127.0.0.1/32]; headers from any other peer are refused",
            ));
        }
        for (i, c) in x.trusted_proxies.iter().enumerate() {
            if crate::domain::net::parse_cidr(c).is_none() {
                p.push(Problem::new(
                    format!("auth.proxy.trusted_proxies[{i}]"),
                    format!("`{c}` is not an address or CIDR range: write e.g. 127.0.0.1/32 or \"::1/128\""),
                ));
            }
        }
        check_roles(x.role_map.values(), "auth.proxy.role_map", p);
    }
    if let Some(k) = &audit.key
        && k.expose().chars().count() < MIN_TOKEN_LEN
    {
        p.push(Problem::new(
            "audit.key",
            format!("is shorter than {MIN_TOKEN_LEN} characters: use a long random value"),
        ));
    }
}

fn check_roles<'a>(roles: impl Iterator<Item = &'a String>, at: &str, p: &mut Vec<Problem>) {
    for r in roles {
        if !ROLE_NAMES.contains(&r.as_str()) {
            p.push(Problem::new(
                at,
                format!("`{r}` is not a role: use {}", ROLE_NAMES.join(", ")),
            ));
        }
    }
}
