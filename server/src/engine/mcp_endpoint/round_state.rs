//! The `requestState` of an MCP round (CLIENTS.md §2): what a 2026-07-28
//! client echoes back with its answer, opaque to it and sealed by us.
//!
//! A state binds the conversation, what it waits on (an approval or a
//! question, by uuid), the principal it was issued to and an expiry, with
//! a random nonce: `v1.` base64url(claims) `.` base64url(HMAC-SHA-256).
//! Key decision: integrity, not secrecy (the client may see the uuids it
//! was just shown), so an HMAC under the store's shared key is enough and
//! any replica can open what another sealed. Single use is the store's:
//! the nonce is spent in the decision's own transaction (like a signed
//! link), so a replayed state decides nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How long a client has to come back with its answer.
pub(crate) const LIFETIME_SECONDS: i64 = 3600;

/// What a round waits on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WaitsOn {
    /// An approval, by uuid.
    #[serde(rename = "a")]
    Approval(String),
    /// A question from one of the agent's tools, by uuid.
    #[serde(rename = "q")]
    Question(String),
}

impl WaitsOn {
    /// The key of its input request (`approval-<uuid>`, `question-<uuid>`):
    /// unique over the call's life, as the spec asks.
    pub(crate) fn key(&self) -> String {
        match self {
            WaitsOn::Approval(u) => format!("approval-{u}"),
            WaitsOn::Question(u) => format!("question-{u}"),
        }
    }
}

/// A round's claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RoundState {
    #[serde(rename = "c")]
    pub(crate) conversation_id: String,
    #[serde(rename = "w")]
    pub(crate) waits_on: WaitsOn,
    /// The principal's name it was issued to.
    #[serde(rename = "p")]
    pub(crate) principal: String,
    /// Unix seconds after which it is refused.
    #[serde(rename = "e")]
    pub(crate) expires: i64,
    /// Spent once, in the decision's transaction.
    #[serde(rename = "n")]
    pub(crate) nonce: String,
}

/// Why a state is refused (each a JSON-RPC error; nothing is decided).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadState {
    #[error("requestState is not one this agent issued (it may have been cut or changed)")]
    Malformed,
    #[error("requestState does not verify: it was changed, or issued by another agent")]
    Tampered,
    #[error(
        "requestState has expired: call the tool again with the conversation_id to see what waits"
    )]
    Expired,
    #[error("requestState was issued to someone else")]
    OtherPrincipal,
}

/// Seals and opens states under one key.
#[derive(Clone)]
pub(crate) struct Sealer {
    key: Vec<u8>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(***)")
    }
}

impl Sealer {
    pub(crate) fn new(key: &[u8]) -> Sealer {
        Sealer { key: key.to_vec() }
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        // Domain separation: a state is never mistaken for another token.
        m.update(b"stop-and-go mcp requestState v1\0");
        m
    }

    /// A new state for `principal` waiting on `waits_on`, valid from `now`.
    pub(crate) fn seal(
        &self,
        conversation_id: &str,
        waits_on: WaitsOn,
        principal: &str,
        now: i64,
    ) -> String {
        let claims = RoundState {
            conversation_id: conversation_id.to_string(),
            waits_on,
            principal: principal.to_string(),
            expires: now + LIFETIME_SECONDS,
            nonce: crate::domain::ids::new_id(),
        };
        let body = serde_json::to_vec(&claims).unwrap_or_default();
        let mut mac = self.mac();
        mac.update(&body);
        let tag = mac.finalize().into_bytes();
        format!(
            "v1.{}.{}",
            URL_SAFE_NO_PAD.encode(&body),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The claims of a state sealed here, for `principal`, at `now`.
    pub(crate) fn open(
        &self,
        state: &str,
        principal: &str,
        now: i64,
    ) -> Result<RoundState, BadState> {
        let rest = state.strip_prefix("v1.").ok_or(BadState::Malformed)?;
        let (body, tag) = rest.split_once('.').ok_or(BadState::Malformed)?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| BadState::Tampered)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| BadState::Tampered)?;
        let mut mac = self.mac();
        mac.update(&body);
        mac.verify_slice(&tag).map_err(|_| BadState::Tampered)?;
        let claims: RoundState = serde_json::from_slice(&body).map_err(|_| BadState::Malformed)?;
        if claims.expires <= now {
            return Err(BadState::Expired);
        }
        if claims.principal != principal {
            return Err(BadState::OtherPrincipal);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::new(b"0123456789abcdef0123456789abcdef")
    }

    #[test]
    fn a_sealed_state_opens_for_its_principal_until_it_expires() {
        let s = sealer();
        let state = s.seal("c1", WaitsOn::Approval("a1".into()), "ana", 1000);
        let claims = s.open(&state, "ana", 1001).unwrap();
        assert_eq!(claims.conversation_id, "c1");
        assert_eq!(claims.waits_on, WaitsOn::Approval("a1".into()));
        assert_eq!(
            s.open(&state, "ana", 1000 + LIFETIME_SECONDS),
            Err(BadState::Expired)
        );
        assert_eq!(s.open(&state, "bob", 1001), Err(BadState::OtherPrincipal));
    }

    #[test]
    fn any_changed_byte_or_another_key_is_refused() {
        let s = sealer();
        let state = s.seal("c1", WaitsOn::Question("q1".into()), "ana", 1000);
        for i in 0..state.len() {
            let mut bytes = state.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let Ok(changed) = String::from_utf8(bytes) else {
                continue;
            };
            if changed != state {
                assert!(
                    s.open(&changed, "ana", 1001).is_err(),
                    "byte {i}: {changed}"
                );
            }
        }
        assert_eq!(
            Sealer::new(b"another key").open(&state, "ana", 1001),
            Err(BadState::Tampered)
        );
        assert_eq!(s.open("", "ana", 1001), Err(BadState::Malformed));
        assert_eq!(s.open("v1.x", "ana", 1001), Err(BadState::Malformed));
    }

    #[test]
    fn two_states_for_the_same_wait_differ_by_their_nonce() {
        let s = sealer();
        let a = s.seal("c1", WaitsOn::Approval("a1".into()), "ana", 1000);
        let b = s.seal("c1", WaitsOn::Approval("a1".into()), "ana", 1000);
        assert_ne!(a, b);
        assert_eq!(WaitsOn::Approval("a1".into()).key(), "approval-a1");
    }
}
