//! Signed links (POLICY.md §5): what a notification's Open / Approve /
//! Reject buttons point at.
//!
//! A token is `base64url(claims) "." base64url(HMAC-SHA-256(key, claims))`,
//! the claims being the notification's id (the link's identity: it works
//! once), the approval and the action. Nothing is stored when a link is
//! made, so a retried notification carries the same links; using one is
//! recorded in the decision's transaction. A token whose bytes were changed
//! fails the HMAC check (compared in constant time by `hmac`), and an
//! approval that left `pending` (decided, expired) ends its links with it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// What a link does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Shows the approval with both buttons.
    Open,
    Approve,
    Reject,
}

impl Action {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::Open => "open",
            Action::Approve => "approve",
            Action::Reject => "reject",
        }
    }
}

/// A link's signed claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// The notification it came in: the link's id.
    #[serde(rename = "n")]
    pub(crate) link: String,
    /// The approval's uuid.
    #[serde(rename = "a")]
    pub(crate) approval: String,
    #[serde(rename = "x")]
    pub(crate) action: Action,
}

/// Why a token is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadLink {
    #[error("this link is not a Stop & Go approval link (it may have been cut or changed)")]
    Malformed,
    #[error("this link's signature does not match: it was changed, or signed by another agent")]
    Tampered,
}

/// The key that signs and checks links.
#[derive(Clone)]
pub(crate) struct Links {
    key: Vec<u8>,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Links(***)")
    }
}

impl Links {
    pub(crate) fn new(key: Vec<u8>) -> Links {
        Links { key }
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes keys of any length.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
    }

    /// The token for `claims`.
    pub(crate) fn sign(&self, claims: &Claims) -> String {
        let body = serde_json::to_vec(claims).unwrap_or_default();
        let mut mac = self.mac();
        mac.update(&body);
        let tag = mac.finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&body),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The claims of a token this key signed.
    pub(crate) fn verify(&self, token: &str) -> Result<Claims, BadLink> {
        let (body, tag) = token.split_once('.').ok_or(BadLink::Malformed)?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| BadLink::Tampered)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| BadLink::Tampered)?;
        let mut mac = self.mac();
        mac.update(&body);
        mac.verify_slice(&tag).map_err(|_| BadLink::Tampered)?;
        serde_json::from_slice(&body).map_err(|_| BadLink::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            link: "n1".into(),
            approval: "a1".into(),
            action: Action::Approve,
        }
    }

    #[test]
    fn a_signed_link_verifies_and_any_changed_byte_does_not() {
        let links = Links::new(b"0123456789abcdef".to_vec());
        let token = links.sign(&claims());
        assert_eq!(links.verify(&token), Ok(claims()));
        for i in 0..token.len() {
            let mut bytes = token.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let Ok(changed) = String::from_utf8(bytes) else {
                continue;
            };
            if changed != token {
                assert!(
                    links.verify(&changed).is_err(),
                    "byte {i} flipped: {changed}"
                );
            }
        }
        assert_eq!(
            Links::new(b"another key......".to_vec()).verify(&token),
            Err(BadLink::Tampered)
        );
        assert_eq!(links.verify("no-dot"), Err(BadLink::Malformed));
        assert_eq!(links.verify(""), Err(BadLink::Malformed));
    }
}
