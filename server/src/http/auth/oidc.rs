//! Mode `oidc`: bearer JWTs from an OpenID provider, and the provider's
//! metadata for browser sign-in (`signin`).
//!
//! Discovery (`{issuer}/.well-known/openid-configuration`) and the JWKS are
//! fetched on first use and cached; a token whose `kid` is not in the cache
//! makes one refresh (at most [`REFRESH_BURST`] per [`REFRESH_WINDOW`], so a
//! flood of junk `kid`s cannot hammer the provider), which is how key
//! rotation is picked up. Only RS256 and ES256 are accepted, each only with a key of
//! its own family: `alg: none` cannot be decoded at all, and an `HS256`
//! token "signed" with the provider's public key (the key-confusion attack)
//! is refused before any key is looked at. `iss`, `aud`, `exp` and `nbf`
//! are checked by `jsonwebtoken`; no JWT is parsed by hand here.

use crate::config::OidcConfig;
use crate::domain::principal::{Principal, Roles, Source};
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// At most [`REFRESH_BURST`] JWKS refreshes caused by unknown `kid`s in
/// this window.
pub(crate) const REFRESH_WINDOW: Duration = Duration::from_secs(30);
pub(crate) const REFRESH_BURST: usize = 3;
/// Timeout of every call to the provider.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 5;

/// The provider's metadata (the parts we use).
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Discovery {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) jwks_uri: String,
}

/// Why a token was not accepted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OidcError {
    /// The token is not valid (the client's fault): 401.
    #[error("{0}")]
    Invalid(String),
    /// The provider could not be asked: 503.
    #[error("the OpenID provider cannot be reached: {0}")]
    Unavailable(String),
}

struct Cache {
    discovery: Option<Discovery>,
    keys: HashMap<String, (DecodingKey, Algorithm)>,
    /// Keys without a `kid` (tried when a token has none).
    unnamed: Vec<(DecodingKey, Algorithm)>,
    fetched: Option<Instant>,
    /// When the recent unforced refreshes ran.
    recent: Vec<Instant>,
}

/// The provider, its metadata and keys.
pub(crate) struct Oidc {
    config: OidcConfig,
    http: reqwest::Client,
    /// Read on every request; written on a refresh. A std lock: nothing
    /// awaits while holding it.
    cache: std::sync::RwLock<Cache>,
    /// One refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
}

impl Oidc {
    pub(crate) fn new(config: &OidcConfig) -> Oidc {
        Oidc {
            config: config.clone(),
            http: reqwest::Client::builder()
                .timeout(TIMEOUT)
                .connect_timeout(TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            cache: std::sync::RwLock::new(Cache {
                discovery: None,
                keys: HashMap::new(),
                unnamed: Vec::new(),
                fetched: None,
                recent: Vec::new(),
            }),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) fn config(&self) -> &OidcConfig {
        &self.config
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The provider's metadata, fetched if not cached yet.
    pub(crate) async fn discovery(&self) -> Result<Discovery, OidcError> {
        if let Some(d) = self.read().discovery.clone() {
            return Ok(d);
        }
        self.refresh(true).await?;
        self.read()
            .discovery
            .clone()
            .ok_or_else(|| OidcError::Unavailable("no metadata".into()))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.cache.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Fetches metadata and keys. Unless `force`, skips when
    /// [`REFRESH_BURST`] refreshes ran in the last [`REFRESH_WINDOW`].
    pub(crate) async fn refresh(&self, force: bool) -> Result<(), OidcError> {
        let _one = self.refreshing.lock().await;
        if !force {
            let mut c = self.cache.write().unwrap_or_else(|p| p.into_inner());
            c.recent.retain(|t| t.elapsed() < REFRESH_WINDOW);
            if c.recent.len() >= REFRESH_BURST {
                return Ok(());
            }
            c.recent.push(Instant::now());
        }
        let issuer = self.config.issuer.trim_end_matches('/');
        let url = format!("{issuer}/.well-known/openid-configuration");
        let d: Discovery = self.get_json(&url).await?;
        if d.issuer.trim_end_matches('/') != issuer {
            return Err(OidcError::Unavailable(format!(
                "the provider at {issuer} calls itself {:?}; set auth.oidc.issuer to exactly that",
                d.issuer
            )));
        }
        let set: JwkSet = self.get_json(&d.jwks_uri).await?;
        let mut keys = HashMap::new();
        let mut unnamed = Vec::new();
        for jwk in &set.keys {
            let alg = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => Algorithm::RS256,
                AlgorithmParameters::EllipticCurve(ec)
                    if matches!(ec.curve, jsonwebtoken::jwk::EllipticCurve::P256) =>
                {
                    Algorithm::ES256
                }
                _ => continue,
            };
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    keys.insert(kid.clone(), (key, alg));
                }
                None => unnamed.push((key, alg)),
            }
        }
        tracing::info!(
            issuer,
            keys = keys.len() + unnamed.len(),
            "OpenID provider keys loaded"
        );
        let mut c = self.cache.write().unwrap_or_else(|p| p.into_inner());
        c.discovery = Some(d);
        c.keys = keys;
        c.unnamed = unnamed;
        c.fetched = Some(Instant::now());
        Ok(())
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, OidcError> {
        let resp = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(format!("GET {url}: {e}")))?;
        if !resp.status().is_success() {
            return Err(OidcError::Unavailable(format!(
                "GET {url}: HTTP {}",
                resp.status()
            )));
        }
        resp.json()
            .await
            .map_err(|e| OidcError::Unavailable(format!("GET {url}: {e}")))
    }

    /// The key for a token's header, refreshing once on an unknown `kid`.
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, OidcError> {
        if self.read().fetched.is_none() {
            self.refresh(true).await?;
        }
        let lookup = || {
            let c = self.read();
            match kid {
                Some(k) => c
                    .keys
                    .get(k)
                    .filter(|(_, a)| *a == alg)
                    .map(|(key, _)| key.clone()),
                None => c
                    .unnamed
                    .iter()
                    .find(|(_, a)| *a == alg)
                    .map(|(key, _)| key.clone()),
            }
        };
        if let Some(k) = lookup() {
            return Ok(k);
        }
        // Perhaps the provider rotated its keys.
        self.refresh(false).await?;
        lookup().ok_or_else(|| {
            OidcError::Invalid(match kid {
                Some(k) => format!(
                    "the token's signing key {k:?} is not one of the provider's {alg:?} keys"
                ),
                None => "the token names no signing key (kid)".into(),
            })
        })
    }

    /// Validates `token` for `audience` (the API's audience, or the client
    /// id for an ID token) and returns its claims.
    pub(crate) async fn validate(&self, token: &str, audience: &str) -> Result<Value, OidcError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| OidcError::Invalid(format!("not a signed JWT: {e}")))?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(OidcError::Invalid(format!(
                "tokens signed with {:?} are not accepted: RS256 or ES256 only",
                header.alg
            )));
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let issuer = self.discovery().await?.issuer;
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[issuer.as_str()]);
        v.set_audience(&[audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.validate_nbf = true;
        v.leeway = LEEWAY_SECS;
        jsonwebtoken::decode::<Value>(token, &key, &v)
            .map(|d| d.claims)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                OidcError::Invalid(match e.kind() {
                    K::ExpiredSignature => "the token has expired".into(),
                    K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
                    K::InvalidAudience => {
                        format!("the token is not for this agent (aud must include {audience:?})")
                    }
                    K::InvalidIssuer => format!("the token was not issued by {issuer}"),
                    K::InvalidSignature => "the token's signature does not verify".into(),
                    K::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
                    other => format!("the token is not valid: {other:?}"),
                })
            })
    }

    /// Validates an API bearer token and maps its claims to a principal.
    pub(crate) async fn authenticate(&self, token: &str) -> Result<Principal, OidcError> {
        let claims = self.validate(token, &self.config.audience).await?;
        self.principal(&claims, Source::Jwt)
    }

    /// The principal a token's claims describe.
    pub(crate) fn principal(&self, claims: &Value, source: Source) -> Result<Principal, OidcError> {
        let name = claim(claims, &self.config.name_claim)
            .and_then(|v| v.as_str().map(str::to_string))
            .or_else(|| {
                claims
                    .get("sub")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                OidcError::Invalid(format!(
                    "the token has no `{}` claim naming the user",
                    self.config.name_claim
                ))
            })?;
        let groups: Vec<String> = match self
            .config
            .roles_claim
            .as_deref()
            .and_then(|c| claim(claims, c))
        {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let roles = Roles::from_names(
            self.config
                .role_map
                .iter()
                .filter(|(g, _)| groups.contains(g))
                .map(|(_, r)| r.as_str()),
        );
        Ok(Principal {
            name: name.chars().take(200).collect(),
            roles,
            source,
            // Validated as required and unexpired above (`validate`).
            expires_at: claims
                .get("exp")
                .and_then(Value::as_f64)
                .and_then(|e| chrono::DateTime::from_timestamp(e.floor() as i64, 0)),
        })
    }
}

/// A claim by dot path (`realm_access.roles`).
fn claim<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(claims, |v, k| v.get(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_by_dot_path() {
        let c = serde_json::json!({"sub": "u1", "realm": {"roles": ["a", "b"]}});
        assert_eq!(claim(&c, "realm.roles").unwrap()[1], "b");
        assert!(claim(&c, "realm.nope").is_none());
        assert_eq!(claim(&c, "sub").unwrap(), "u1");
    }

    #[test]
    fn principals_take_their_name_and_roles_from_claims() {
        let o = Oidc::new(&OidcConfig {
            issuer: "http://127.0.0.1:1".into(),
            audience: "a".into(),
            client_id: None,
            client_secret: None,
            name_claim: "email".into(),
            roles_claim: Some("groups".into()),
            role_map: [
                ("sre-oncall".to_string(), "approver".to_string()),
                ("sre".into(), "requester".into()),
            ]
            .into(),
        });
        let p = o
            .principal(
                &serde_json::json!({"sub": "x", "email": "a@b", "groups": ["sre-oncall", "other"]}),
                Source::Jwt,
            )
            .unwrap();
        assert_eq!(p.name, "a@b");
        assert_eq!(p.roles.names(), vec!["approver"]);
        let p = o
            .principal(
                &serde_json::json!({"sub": "x", "groups": "sre"}),
                Source::Jwt,
            )
            .unwrap();
        assert_eq!((p.name.as_str(), p.roles.names()), ("x", vec!["requester"]));
    }
}
