//! Who may do what (AUTH.md): operators, approvers, and their credentials.
//!
//! - [`principal`]: a caller's name and [`Roles`].
//! - [`tokens`], [`oidc`], [`proxy`]: the three ways of proving who one is;
//!   [`session`]: the browser's sign-in cookie, backed by a store row.
//! - [`access`]: the route table: what each route needs. One table, so the
//!   answer to "who may call this?" is in one place, not in handlers.
//! - [`guard`]: the middleware that identifies the caller, checks the table
//!   and answers 401 / 403 / 303 / 429.
//! - [`origin`]: cross-site protection and security headers (every mode).
//! - [`ratelimit`]: failed sign-ins per address.
//! - [`signin`]: the sign-in, callback and sign-out routes.
//!
//! Key decision: in mode `none` nothing is enforced and every caller is
//! `anonymous` with every role (the seed's behaviour), but the same code
//! paths run, so "who decided" is recorded in every mode. The decision rule
//! itself ([`may_decide`]) lives here and is called by the engine, so REST,
//! UI and A2A decisions are authorized by the same function.

pub mod access;
pub mod forms;
pub mod guard;
pub mod oidc;
pub mod origin;
pub mod principal;
pub mod proxy;
pub mod ratelimit;
pub mod session;
pub mod signin;
pub mod tokens;

pub use principal::{ANONYMOUS, Principal, Role, Roles, Source};

use crate::config::{AuthConfig, AuthMode, Config};
use std::sync::Arc;

/// What mode `none` on a non-loopback host says, in the log and on every page.
pub const NO_AUTH_BANNER: &str =
    "No operator authentication: anyone who can reach this address can approve actions";

/// The auth state every request shares.
pub struct Auth {
    pub mode: AuthMode,
    pub separation_of_duties: bool,
    pub session_hours: u32,
    pub tokens: tokens::Tokens,
    pub oidc: Option<oidc::Oidc>,
    pub proxy: Option<proxy::Proxy>,
    pub failures: ratelimit::FailureLimiter,
    pub origins: Arc<origin::Origins>,
    /// `Secure` on cookies: `public_url` is https.
    pub secure_cookies: bool,
    /// `public_url`, for redirect URIs.
    pub public_url: Option<String>,
    /// Limits `auth.denied` audit rows (a flood of refused requests must
    /// not flood the trail).
    pub denied_rows: ratelimit::FailureLimiter,
    /// Mode `none` on a non-loopback host: pages show [`NO_AUTH_BANNER`].
    pub open_warning: bool,
}

impl Auth {
    pub fn new(config: &Config) -> Auth {
        let a: &AuthConfig = &config.auth;
        Auth {
            mode: a.mode,
            separation_of_duties: a.separation_of_duties(),
            session_hours: a.session_hours,
            tokens: tokens::Tokens::new(&a.tokens),
            oidc: a
                .oidc
                .as_ref()
                .filter(|_| a.mode == AuthMode::Oidc)
                .map(oidc::Oidc::new),
            proxy: a
                .proxy
                .as_ref()
                .filter(|_| a.mode == AuthMode::Proxy)
                .map(proxy::Proxy::new),
            failures: ratelimit::FailureLimiter::default(),
            origins: Arc::new(origin::Origins::new(
                config.public_url.as_deref(),
                &a.allowed_origins,
            )),
            secure_cookies: config
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            public_url: config.public_url.clone(),
            denied_rows: ratelimit::FailureLimiter::default(),
            open_warning: a.mode == AuthMode::None && !crate::net::is_loopback_host(&config.host),
        }
    }

    /// Whether anything is enforced.
    pub fn enforced(&self) -> bool {
        self.mode != AuthMode::None
    }
}

/// Why a principal may not decide an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecideRefusal {
    /// The role is missing.
    Role,
    /// Separation of duties: they raised it.
    OwnRequest,
}

impl DecideRefusal {
    pub fn message(&self, who: &str) -> String {
        match self {
            DecideRefusal::Role => format!(
                "{who} may not decide approvals: the role `approver` (or `admin`) is missing"
            ),
            DecideRefusal::OwnRequest => format!(
                "{who} raised this approval and may not decide it (separation of duties): another approver must"
            ),
        }
    }
}

/// Whether `p` may decide an approval raised by `requested_by`. `Ok(true)`
/// means an admin overrode separation of duties (the audit row says so).
pub fn may_decide(
    enforced: bool,
    separation_of_duties: bool,
    p: &Principal,
    requested_by: Option<&str>,
) -> Result<bool, DecideRefusal> {
    if !enforced {
        return Ok(false);
    }
    if !p.allow(Role::Approver) {
        return Err(DecideRefusal::Role);
    }
    let own = separation_of_duties && requested_by == Some(p.name.as_str());
    if own && !p.allow(Role::Admin) {
        return Err(DecideRefusal::OwnRequest);
    }
    Ok(own)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, roles: &[&str]) -> Principal {
        Principal {
            name: name.into(),
            roles: Roles::from_names(roles.iter().copied()),
            source: Source::Token,
        }
    }

    #[test]
    fn deciding_needs_the_role_and_someone_else_s_request() {
        assert_eq!(
            may_decide(true, true, &p("bob", &["requester"]), Some("x")),
            Err(DecideRefusal::Role)
        );
        assert_eq!(
            may_decide(true, true, &p("al", &["approver"]), Some("bob")),
            Ok(false)
        );
        assert_eq!(
            may_decide(true, true, &p("al", &["requester", "approver"]), Some("al")),
            Err(DecideRefusal::OwnRequest)
        );
        assert_eq!(
            may_decide(true, false, &p("al", &["approver"]), Some("al")),
            Ok(false)
        );
        assert_eq!(
            may_decide(true, true, &p("ops", &["admin"]), Some("ops")),
            Ok(true)
        );
        assert_eq!(
            may_decide(false, true, &Principal::anonymous(), Some("anonymous")),
            Ok(false)
        );
    }
}
