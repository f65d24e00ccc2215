//! Who may do what (AUTH.md): operators, approvers, and their credentials.
//!
//! - [`tokens`], [`oidc`], [`proxy`]: the three ways of proving who one is;
//!   [`session`]: the browser's sign-in cookie, backed by a store row.
//! - [`access`]: the route table: what each route needs. One table, so the
//!   answer to "who may call this?" is in one place, not in handlers.
//! - [`identity`]: the caller as the request carries it (the guard,
//!   `http::guard`, puts it there); [`target`]: where a redirect may go;
//!   [`denied`]: the `auth.denied` audit row.
//! - [`origin`]: cross-site protection and security headers (every mode);
//!   [`form_token`]: the browser's form cookie.
//! - [`ratelimit`]: failed sign-ins per address.
//!
//! The middleware that checks each request (`http::guard`) and the
//! sign-in pages (`http::ui::signin`) sit above, beside the handlers:
//! they need the shared state, which holds this module's [`Auth`].
//!
//! Key decision: in mode `none` nothing is enforced and every caller is
//! `anonymous` with every role (the seed's behaviour), but the same code
//! paths run, so "who decided" is recorded in every mode. Who a caller is
//! (`Principal`, `Roles`) and the decision rule (`may_decide`) are in
//! `domain::principal`, called by the engine, so REST, UI and A2A
//! decisions are authorized by the same function.

pub(crate) mod access;
pub(crate) mod denied;
pub(crate) mod form_token;
pub(crate) mod identity;
pub(crate) mod oidc;
pub(crate) mod origin;
pub(crate) mod proxy;
pub(crate) mod ratelimit;
pub(crate) mod session;
pub(crate) mod target;
pub(crate) mod tokens;

use crate::config::{AuthConfig, AuthMode, Config};
use crate::domain::principal::{Principal, Roles, Source};
use std::sync::Arc;

/// What mode `none` on a non-loopback host says, in the log and on every page.
pub(crate) const NO_AUTH_BANNER: &str =
    "No operator authentication: anyone who can reach this address can approve actions";

/// The auth state every request shares.
pub(crate) struct Auth {
    pub(crate) mode: AuthMode,
    pub(crate) separation_of_duties: bool,
    pub(crate) session_hours: u32,
    pub(crate) tokens: tokens::Tokens,
    pub(crate) oidc: Option<oidc::Oidc>,
    pub(crate) proxy: Option<proxy::Proxy>,
    pub(crate) failures: ratelimit::FailureLimiter,
    pub(crate) origins: Arc<origin::Origins>,
    /// `Secure` on cookies: `public_url` is https.
    pub(crate) secure_cookies: bool,
    /// `public_url`, for redirect URIs.
    pub(crate) public_url: Option<String>,
    /// Limits `auth.denied` audit rows (a flood of refused requests must
    /// not flood the trail).
    pub(crate) denied_rows: ratelimit::FailureLimiter,
    /// Mode `none` on a non-loopback host: pages show [`NO_AUTH_BANNER`].
    pub(crate) open_warning: bool,
}

impl Auth {
    /// The principal `name` stands for when it acts without a credential
    /// of its own (a Slack user mapped to it, REACH.md §2), with the roles
    /// it has here: every role in mode `none`; its operator token's in mode
    /// `tokens`; in modes `oidc` and `proxy`, those the identity provider
    /// gave its latest live sign-in (`None`: nobody knows its roles now).
    pub(crate) async fn principal_named(
        &self,
        store: &crate::store::Store,
        name: &str,
    ) -> Result<Option<Principal>, crate::store::StoreError> {
        let with = |roles| Principal {
            name: name.to_string(),
            roles,
            source: Source::Slack,
            expires_at: None,
        };
        Ok(match self.mode {
            AuthMode::None => Some(with(Roles::ALL)),
            AuthMode::Tokens => self.tokens.roles_of(name).map(with),
            AuthMode::Oidc | AuthMode::Proxy => store
                .session_of(name.to_string())
                .await?
                .map(|s| with(Roles::from_names(s.roles.iter().map(String::as_str)))),
        })
    }

    pub(crate) fn new(config: &Config) -> Auth {
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
            origins: Arc::new({
                let o = origin::Origins::new(config.public_url.as_deref(), &a.allowed_origins);
                if crate::domain::net::is_loopback_host(&config.host) {
                    o.on_loopback()
                } else {
                    o
                }
            }),
            secure_cookies: config
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            public_url: config.public_url.clone(),
            denied_rows: ratelimit::FailureLimiter::default(),
            open_warning: a.mode == AuthMode::None
                && !crate::domain::net::is_loopback_host(&config.host),
        }
    }

    /// Whether anything is enforced.
    pub(crate) fn enforced(&self) -> bool {
        self.mode != AuthMode::None
    }
}
