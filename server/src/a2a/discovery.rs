//! Where a configured sub-agent lives and which dialect it speaks.
//!
//! A sub-agent's `url` comes in two forms. Ours and the A2A spec's: the
//! agent's base (`http://b:8080`), whose card says where to POST. The
//! seed's: the JSON-RPC endpoint itself (`http://agent-b:8082/a2a`), which
//! is "used directly for POST". So the card is looked for next to the URL
//! (an agent mounted under a path), then at the URL's origin (the seed's
//! endpoint form), then at the URL itself; each place under
//! `/.well-known/agent-card.json` and then the seed's `/.well-known/agent.json`.
//!
//! The card's interface URL wins when it has one (preferring the interface
//! equal to the configured URL); the configured endpoint is kept as the
//! fallback for when that URL cannot be connected to (a card naming a
//! public host that is not reachable from inside a compose network). A card
//! without an interface URL is posted to the configured endpoint. An agent
//! that answers but has no card at all is a seed agent: it is spoken to in
//! the legacy dialect at the configured endpoint.
//!
//! Answers are cached by configured URL for the card's `Cache-Control:
//! max-age` (else 5 minutes) and forgotten when the agent cannot be reached.

use super::error::{A2aError, short};
pub(crate) use super::read_card::ReadCard;
use super::signing::Trust;
use reqwest::Url;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a card may take.
pub(crate) const CARD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a card is trusted when its answer says nothing (seconds).
const DEFAULT_CARD_TTL: u64 = 300;

/// The protocol dialect a card offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// A2A 1.0 over JSON-RPC.
    V1,
    /// A2A 1.0 over HTTP+JSON (a card offering no JSON-RPC 1.0 interface).
    Rest,
    /// A2A 1.0 over gRPC (a card offering neither JSON-RPC 1.0 nor
    /// HTTP+JSON); `endpoint` is its `host:port`.
    Grpc,
    V03,
    Legacy,
}

/// Where to POST and how to speak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) endpoint: String,
    /// The configured endpoint when it differs from `endpoint`: tried when
    /// `endpoint` cannot be connected to (nothing was sent, so a retry
    /// cannot run anything twice).
    pub(crate) fallback: Option<String>,
    pub(crate) dialect: Dialect,
}

/// What the config says of one sub-agent beyond its URL.
#[derive(Clone, Default)]
pub(crate) struct Settings {
    /// The keys its card must be signed with (`a2a[].trust`).
    pub(crate) trust: Option<Trust>,
    /// The 1.0 binding to speak when its card offers it (`a2a[].binding`:
    /// `V1`, `Rest` or `Grpc`).
    pub(crate) prefer: Option<Dialect>,
}

/// Cards read, by configured URL, with the time until which they hold.
#[derive(Default)]
pub(crate) struct Discovery {
    cards: Mutex<HashMap<String, (Target, Instant)>>,
    /// The settings per configured URL.
    settings: HashMap<String, Settings>,
    /// The last reason each pinned agent's card was not trusted (so the
    /// engine audits a reason once, not every call).
    untrusted: Mutex<HashMap<String, String>>,
    /// The content digest of the card an admin accepted, per URL: trusted
    /// without a verifying signature.
    accepted: Mutex<HashMap<String, String>>,
    /// Cards whose signature verified, not yet taken by the engine.
    verified: Mutex<HashMap<String, ReadCard>>,
}

impl Discovery {
    pub(crate) fn with_settings(settings: Vec<(String, Settings)>) -> Discovery {
        Discovery {
            settings: settings
                .into_iter()
                .map(|(u, t)| (u.trim_end_matches('/').to_string(), t))
                .collect(),
            ..Discovery::default()
        }
    }

    /// The target of the agent configured at `url`, from the cache or its
    /// card (read with the caller's session id and trace context, so the
    /// reads show up with the action that caused them).
    pub(crate) async fn target(
        &self,
        http: &reqwest::Client,
        url: &str,
        sid: &str,
    ) -> Result<Target, A2aError> {
        let key = url.trim_end_matches('/').to_string();
        if let Some((t, until)) = self
            .cards
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned()
            && until > Instant::now()
        {
            return Ok(t);
        }
        let settings = self.settings.get(&key).cloned().unwrap_or_default();
        let accepted = self
            .accepted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let (target, ttl, verified) =
            match read(http, &key, sid, &settings, accepted.as_deref()).await {
                Err(A2aError::Untrusted { reason, card, .. }) => {
                    let mut seen = self.untrusted.lock().unwrap_or_else(|p| p.into_inner());
                    let new = seen.get(&key) != Some(&reason);
                    seen.insert(key.clone(), reason.clone());
                    return Err(A2aError::Untrusted { reason, new, card });
                }
                other => other?,
            };
        self.untrusted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        if let Some(v) = verified {
            self.verified
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key.clone(), v);
        }
        // Judged against accepted cards that changed meanwhile: not kept.
        let now = self
            .accepted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if now != accepted {
            return Ok(target);
        }
        self.cards
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, (target.clone(), Instant::now() + ttl));
        Ok(target)
    }

    /// See [`super::client::A2aClient::take_verified`].
    pub(crate) fn take_verified(&self, url: &str) -> Option<ReadCard> {
        self.verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(url.trim_end_matches('/'))
    }

    /// See [`super::client::A2aClient::set_accepted`].
    pub(crate) fn set_accepted(&self, accepted: HashMap<String, String>) {
        let accepted: HashMap<String, String> = accepted
            .into_iter()
            .map(|(u, d)| (u.trim_end_matches('/').to_string(), d))
            .collect();
        let mut now = self.accepted.lock().unwrap_or_else(|p| p.into_inner());
        if *now != accepted {
            let mut cards = self.cards.lock().unwrap_or_else(|p| p.into_inner());
            for url in now.keys().chain(accepted.keys()) {
                cards.remove(url);
            }
            *now = accepted;
        }
    }

    /// Forgets a card (after a failure: the agent may have moved).
    pub(crate) fn forget(&self, url: &str) {
        self.cards
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(url.trim_end_matches('/'));
    }
}

/// Reads the card of the agent configured at `url` (no trailing slash);
/// with `trust`, only a card signed by a pinned key is taken, or the card
/// whose content digest is `accepted`; a verified card is given back.
async fn read(
    http: &reqwest::Client,
    url: &str,
    sid: &str,
    settings: &Settings,
    accepted: Option<&str>,
) -> Result<(Target, Duration, Option<ReadCard>), A2aError> {
    let trust = settings.trust.as_ref();
    let parsed =
        Url::parse(url).map_err(|e| A2aError::BadCard(format!("{url} is not a URL: {e}")))?;
    let endpoint = endpoint_of(&parsed, url);
    for location in locations(&parsed, url) {
        let mut req = http
            .get(&location)
            .header(reqwest::header::ACCEPT, "application/json")
            .header("X-Session-ID", sid)
            .timeout(CARD_TIMEOUT);
        for (k, v) in crate::telemetry::inject() {
            req = req.header(k, v);
        }
        let resp = req.send().await.map_err(|e| A2aError::Unreachable {
            url: location.clone(),
            reason: short(&e),
        })?;
        if !resp.status().is_success() {
            continue;
        }
        let ttl = resp
            .headers()
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .and_then(max_age)
            .unwrap_or(DEFAULT_CARD_TTL);
        // Anything that is not a card (an HTML page, a JSON-RPC error)
        // means "no card here", not "broken agent".
        let Ok(card) = resp.json::<Value>().await else {
            continue;
        };
        if !is_card(&card) {
            continue;
        }
        let mut verified = None;
        if let Some(t) = trust {
            let read = ReadCard::of(&card);
            // The card an admin accepted is trusted as it is; any other
            // needs a signature by a pinned key.
            if accepted != Some(read.digest.as_str()) {
                let keys = trusted_keys(http, t).await?;
                match super::signing::verify(&card, &keys) {
                    Ok(_) => verified = Some(read),
                    Err(reason) => {
                        return Err(A2aError::Untrusted {
                            reason,
                            new: true,
                            card: Some(Box::new(read)),
                        });
                    }
                }
            }
        }
        return Ok((
            pick(&card, &endpoint, settings.prefer),
            Duration::from_secs(ttl),
            verified,
        ));
    }
    if trust.is_some() {
        return Err(A2aError::Untrusted {
            reason: format!("{url} serves no agent card, and a signing key is pinned for it"),
            new: true,
            card: None,
        });
    }
    let target = Target {
        endpoint,
        fallback: None,
        dialect: Dialect::Legacy,
    };
    Ok((target, Duration::from_secs(DEFAULT_CARD_TTL), None))
}

/// The keys `trust` names (a JWKS is read now, so a key the agent rotated
/// to and published counts). When they cannot be had, the card cannot be
/// judged: `Untrusted` without a card (nothing for an admin to accept).
async fn trusted_keys(
    http: &reqwest::Client,
    trust: &Trust,
) -> Result<Vec<super::signing::TrustedKey>, A2aError> {
    let untrusted = |reason: String| A2aError::Untrusted {
        reason,
        new: true,
        card: None,
    };
    Ok(match trust {
        Trust::Keys(k) => k.clone(),
        Trust::Jwks { url, kid } => {
            let resp = http
                .get(url)
                .header(reqwest::header::ACCEPT, "application/json")
                .timeout(CARD_TIMEOUT)
                .send()
                .await
                .map_err(|e| untrusted(format!("its JWKS {url} cannot be read: {}", short(&e))))?;
            if !resp.status().is_success() {
                return Err(untrusted(format!(
                    "its JWKS {url} answered {}",
                    resp.status()
                )));
            }
            let set: Value = resp
                .json()
                .await
                .map_err(|e| untrusted(format!("its JWKS {url} is not JSON: {e}")))?;
            super::signing::keys_of_jwks(&set, kid.as_deref()).map_err(untrusted)?
        }
    })
}

/// The card URLs to try for the agent configured at `url`, in order.
pub(crate) fn locations(parsed: &Url, url: &str) -> Vec<String> {
    const NAMES: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];
    let origin = parsed.origin().ascii_serialization();
    let at_origin = NAMES.iter().map(|n| format!("{origin}{n}"));
    if parsed.path().trim_end_matches('/').is_empty() {
        return at_origin.collect();
    }
    let beside: Vec<String> = NAMES.iter().map(|n| format!("{url}{n}")).collect();
    beside
        .into_iter()
        .chain(at_origin)
        .chain(std::iter::once(url.to_string()))
        .collect()
}

/// Where to POST when no card names a URL: the configured URL when it has
/// a path (the seed's endpoint form), else our default `/a2a` under it.
pub(crate) fn endpoint_of(parsed: &Url, url: &str) -> String {
    if parsed.path().trim_end_matches('/').is_empty() {
        format!("{}/a2a", url.trim_end_matches('/'))
    } else {
        url.to_string()
    }
}

/// Whether a JSON answer is an agent card (of any version).
fn is_card(v: &Value) -> bool {
    v.is_object()
        && (v.get("name").is_some_and(Value::is_string)
            || v.get("supportedInterfaces").is_some_and(Value::is_array))
}

/// The target a card offers; `configured` is the endpoint the config
/// implies; the `prefer`red 1.0 binding is tried first.
pub(crate) fn pick(card: &Value, configured: &str, prefer: Option<Dialect>) -> Target {
    let same = |u: &str| u.trim_end_matches('/') == configured.trim_end_matches('/');
    let target = |endpoint: String, dialect| Target {
        fallback: (!same(&endpoint)).then(|| configured.to_string()),
        endpoint,
        dialect,
    };
    if let Some(list) = card.get("supportedInterfaces").and_then(Value::as_array) {
        // JSON-RPC 1.0, then HTTP+JSON 1.0, then gRPC 1.0, then a 1.0
        // card listing only a 0.3 JSON-RPC interface; within each, the
        // configured URL first.
        let mut offers = vec![
            ("JSONRPC", "1.", Dialect::V1),
            ("HTTP+JSON", "1.", Dialect::Rest),
            ("GRPC", "1.", Dialect::Grpc),
            ("JSONRPC", "0.3", Dialect::V03),
        ];
        if let Some(i) = offers.iter().position(|o| Some(o.2) == prefer) {
            let first = offers.remove(i);
            offers.insert(0, first);
        }
        for (binding, version, dialect) in offers {
            let urls: Vec<&str> = list
                .iter()
                .filter(|i| offers_binding(i, binding, version))
                .filter_map(|i| i.get("url").and_then(Value::as_str))
                .collect();
            if dialect == Dialect::Grpc
                && let Some(url) = urls.first()
            {
                // The configured agent's own host:port is where this agent
                // reaches it (ours serve gRPC on the same port).
                let configured = super::grpc::address_of(configured);
                let here = |u: &str| super::grpc::address_of(u) == configured;
                let url = urls.iter().find(|u| here(u)).unwrap_or(url);
                return Target {
                    fallback: (!here(url)).then_some(configured),
                    endpoint: url.to_string(),
                    dialect,
                };
            }
            if let Some(url) = urls.iter().find(|u| same(u)).or(urls.first()) {
                return target(url.to_string(), dialect);
            }
        }
    }
    let dialect = if card.get("protocolVersion").is_some() {
        Dialect::V03
    } else {
        Dialect::Legacy
    };
    match card.get("url").and_then(Value::as_str) {
        Some(url) if !url.is_empty() => target(url.to_string(), dialect),
        _ => target(configured.to_string(), dialect),
    }
}

/// Whether a card interface is `binding` (JSON-RPC when it names none) of
/// a version starting with `version`.
fn offers_binding(interface: &Value, binding: &str, version: &str) -> bool {
    interface
        .get("protocolBinding")
        .and_then(Value::as_str)
        .unwrap_or("JSONRPC")
        .eq_ignore_ascii_case(binding)
        && interface
            .get("protocolVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with(version))
}

/// `max-age=N` of a Cache-Control value (`no-store`/`no-cache` → 0).
pub(crate) fn max_age(v: &str) -> Option<u64> {
    let v = v.to_ascii_lowercase();
    if v.contains("no-store") || v.contains("no-cache") {
        return Some(0);
    }
    v.split(',')
        .find_map(|d| d.trim().strip_prefix("max-age=")?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn card_lifetimes_follow_cache_control() {
        assert_eq!(max_age("public, max-age=300"), Some(300));
        assert_eq!(max_age("no-store"), Some(0));
        assert_eq!(max_age("private"), None);
    }

    #[test]
    fn a_base_url_is_looked_up_at_its_origin_and_posted_to_under_a2a() {
        let url = "http://b:8080";
        let parsed = Url::parse(url).unwrap();
        assert_eq!(
            locations(&parsed, url),
            [
                "http://b:8080/.well-known/agent-card.json",
                "http://b:8080/.well-known/agent.json"
            ]
        );
        assert_eq!(endpoint_of(&parsed, url), "http://b:8080/a2a");
    }

    #[test]
    fn an_endpoint_url_is_looked_up_beside_it_then_at_its_origin_then_itself() {
        let url = "http://agent-b:8082/a2a";
        let parsed = Url::parse(url).unwrap();
        assert_eq!(
            locations(&parsed, url),
            [
                "http://agent-b:8082/a2a/.well-known/agent-card.json",
                "http://agent-b:8082/a2a/.well-known/agent.json",
                "http://agent-b:8082/.well-known/agent-card.json",
                "http://agent-b:8082/.well-known/agent.json",
                "http://agent-b:8082/a2a",
            ]
        );
        assert_eq!(endpoint_of(&parsed, url), url);
    }

    #[test]
    fn cards_pick_1_0_then_0_3_then_legacy() {
        let dual = json!({"url": "http://b/a2a", "protocolVersion": "0.3.0",
            "supportedInterfaces": [{"url": "http://b/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
        assert_eq!(
            pick(&dual, "http://b/a2a", None),
            Target {
                endpoint: "http://b/a2a".into(),
                fallback: None,
                dialect: Dialect::V1
            }
        );
        let v03 = json!({"url": "http://c/rpc", "protocolVersion": "0.3.0"});
        let t = pick(&v03, "http://c/a2a", None);
        assert_eq!(
            (t.endpoint.as_str(), t.dialect),
            ("http://c/rpc", Dialect::V03)
        );
        assert_eq!(t.fallback.as_deref(), Some("http://c/a2a"));
        let seed = pick(&json!({"name": "x"}), "http://d:8082/a2a", None);
        assert_eq!(
            (seed.endpoint.as_str(), seed.dialect, seed.fallback),
            ("http://d:8082/a2a", Dialect::Legacy, None)
        );
    }

    #[test]
    fn the_interface_equal_to_the_configured_url_is_preferred() {
        let card = json!({"name": "b", "supportedInterfaces": [
            {"url": "https://public.example/b", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://b:8080/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://b:8080/a2a", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]});
        let t = pick(&card, "http://b:8080/a2a", None);
        assert_eq!(
            (t.endpoint.as_str(), t.fallback),
            ("http://b:8080/a2a/", None)
        );
        let t = pick(&card, "http://elsewhere/a2a", None);
        assert_eq!(t.endpoint, "https://public.example/b");
        assert_eq!(t.fallback.as_deref(), Some("http://elsewhere/a2a"));
    }

    #[test]
    fn http_json_is_spoken_only_when_no_json_rpc_1_0_is_offered() {
        let rest = json!({"url": "http://e:9/rpc03", "protocolVersion": "0.3.0", "supportedInterfaces": [
            {"url": "http://e:9/rpc03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://e:9", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://e:9/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]});
        let t = pick(&rest, "http://e:9/a2a", None);
        assert_eq!(
            (t.endpoint.as_str(), t.dialect),
            ("http://e:9", Dialect::Rest)
        );
        let both = json!({"name": "f", "supportedInterfaces": [
            {"url": "http://f/a2a", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://f/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
        assert_eq!(pick(&both, "http://f/a2a", None).dialect, Dialect::V1);
    }

    #[test]
    fn grpc_is_spoken_when_it_is_all_a_1_0_card_offers() {
        let grpc = json!({"name": "g", "supportedInterfaces": [
            {"url": "public.example:443", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://g:7/rpc03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]});
        let t = pick(&grpc, "http://g:7/a2a", None);
        assert_eq!(
            (t.endpoint.as_str(), t.dialect, t.fallback.as_deref()),
            ("public.example:443", Dialect::Grpc, Some("g:7"))
        );
        let own = json!({"name": "g", "supportedInterfaces": [
            {"url": "g:7", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]});
        let t = pick(&own, "http://g:7", None);
        assert_eq!((t.endpoint.as_str(), t.fallback), ("g:7", None));
        let all = json!({"name": "h", "supportedInterfaces": [
            {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://h:1", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]});
        assert_eq!(pick(&all, "http://h:1", None).dialect, Dialect::Rest);
        let t = pick(&all, "http://h:1", Some(Dialect::Grpc));
        assert_eq!((t.endpoint.as_str(), t.dialect), ("h:1", Dialect::Grpc));
        // A preference the card does not offer falls back to the order.
        let rest = json!({"name": "h", "supportedInterfaces": [
            {"url": "http://h:1", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]});
        assert_eq!(
            pick(&rest, "http://h:1", Some(Dialect::Grpc)).dialect,
            Dialect::Rest
        );
    }

    #[test]
    fn only_card_shaped_answers_are_cards() {
        assert!(is_card(&json!({"name": "b"})));
        assert!(is_card(&json!({"supportedInterfaces": []})));
        assert!(!is_card(
            &json!({"jsonrpc": "2.0", "error": {"code": -32600}})
        ));
        assert!(!is_card(&json!("name")));
    }
}
