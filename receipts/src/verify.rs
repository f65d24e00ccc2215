//! The one check a receipt passes before a destructive call runs
//! (RECEIPTS.md §2): the signature under a key of the issuer's JWKS, the
//! type, the issuer, the expiry, and that it allows exactly this call
//! (this server, this tool, these arguments). What a receipt cannot prove
//! (that its `jti` was not used before) is the executor's store.

use crate::claims::{DETAIL_TYPE, Receipt, TYPE};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use std::collections::HashMap;

/// The issuer's public keys, by `kid` (ES256 and EdDSA only).
#[derive(Clone, Default)]
pub struct Keys {
    by_kid: HashMap<String, (Algorithm, DecodingKey)>,
}

impl Keys {
    /// From a JWKS document; keys of other types are skipped.
    pub fn from_jwks(set: &Value) -> Result<Keys, String> {
        let set: JwkSet =
            serde_json::from_value(set.clone()).map_err(|e| format!("not a JWKS: {e}"))?;
        let mut by_kid = HashMap::new();
        for jwk in &set.keys {
            let alg = match &jwk.algorithm {
                AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => {
                    Algorithm::ES256
                }
                AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
                    Algorithm::EdDSA
                }
                _ => continue,
            };
            let (Some(kid), Ok(key)) = (jwk.common.key_id.clone(), DecodingKey::from_jwk(jwk))
            else {
                continue;
            };
            by_kid.insert(kid, (alg, key));
        }
        Ok(Keys { by_kid })
    }

    /// Whether a key with `kid` is known (a cache fetches the JWKS again
    /// when it is not).
    pub fn has(&self, kid: &str) -> bool {
        self.by_kid.contains_key(kid)
    }
}

/// What the receipt must allow. An executor names everything; the CLI
/// (`agent receipt verify`) may leave out what it was not told, and
/// then only the signature, type and expiry are checked.
#[derive(Clone, Debug, Default)]
pub struct Expect<'a> {
    /// The agent whose receipts are accepted (`iss`).
    pub issuer: Option<&'a str>,
    /// The name the agent calls this server.
    pub server: Option<&'a str>,
    pub tool: Option<&'a str>,
    /// The exact arguments of the call about to run.
    pub arguments: Option<&'a Value>,
    /// Now, seconds since the epoch.
    pub now: i64,
}

impl<'a> Expect<'a> {
    /// An executor's expectation: everything named.
    pub fn call(
        issuer: &'a str,
        server: &'a str,
        tool: &'a str,
        arguments: &'a Value,
        now: i64,
    ) -> Self {
        Expect {
            issuer: Some(issuer),
            server: Some(server),
            tool: Some(tool),
            arguments: Some(arguments),
            now,
        }
    }
}

/// Why a receipt does not allow the call; its text is what the executor
/// tells its caller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no receipt: this destructive call needs the agent's signed approval receipt")]
    Missing,
    #[error("bad receipt: {0}")]
    Malformed(String),
    #[error("bad signature: no key of the issuer's JWKS ({0:?}) verifies this receipt")]
    UnknownKey(String),
    #[error("bad signature")]
    BadSignature,
    #[error("bad receipt: its typ is not {TYPE}")]
    WrongType,
    #[error("bad receipt: issued by {0:?}, not the agent this server trusts")]
    OtherIssuer(String),
    #[error("expired: the receipt expired {0} s ago")]
    Expired(i64),
    #[error("other server: the receipt allows a call on {0:?}, not this server")]
    OtherServer(String),
    #[error("other tool: the receipt allows {0:?}, not this tool")]
    OtherTool(String),
    #[error("arguments differ: the receipt allows other arguments than this call's")]
    ArgumentsDiffer,
    #[error("already used: this receipt's approval ran once already")]
    AlreadyUsed,
}

/// A receipt's claims as they are written, without checking anything: for
/// showing one to a person, never for trusting it (that is [`verify`]).
pub fn unverified_claims(jws: &str) -> Option<Value> {
    use base64::Engine;
    let payload = jws.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Checks `jws` against `keys` and `expect`; the claims when it allows
/// exactly this call.
pub fn verify(jws: Option<&str>, keys: &Keys, expect: &Expect<'_>) -> Result<Receipt, Refusal> {
    let jws = jws
        .filter(|j| !j.trim().is_empty())
        .ok_or(Refusal::Missing)?;
    let header = jsonwebtoken::decode_header(jws).map_err(|e| Refusal::Malformed(e.to_string()))?;
    if header.typ.as_deref() != Some(TYPE) {
        return Err(Refusal::WrongType);
    }
    let kid = header.kid.unwrap_or_default();
    let (alg, key) = keys
        .by_kid
        .get(&kid)
        .ok_or_else(|| Refusal::UnknownKey(kid.clone()))?;
    if header.alg != *alg {
        return Err(Refusal::BadSignature);
    }
    let mut validation = Validation::new(*alg);
    // Expiry and issuer are checked below, with their own words.
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    let data =
        jsonwebtoken::decode::<Receipt>(jws, key, &validation).map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => Refusal::BadSignature,
            _ => Refusal::Malformed(e.to_string()),
        })?;
    let r = data.claims;
    if expect.issuer.is_some_and(|i| i != r.iss) {
        return Err(Refusal::OtherIssuer(r.iss));
    }
    if r.exp <= expect.now {
        return Err(Refusal::Expired(expect.now - r.exp));
    }
    let [detail] = r.authorization_details.as_slice() else {
        return Err(Refusal::Malformed("it must allow exactly one call".into()));
    };
    if detail.kind != DETAIL_TYPE || detail.decision != "approved" {
        return Err(Refusal::Malformed("it does not approve a tool call".into()));
    }
    if expect.server.is_some_and(|s| s != detail.server) {
        return Err(Refusal::OtherServer(detail.server.clone()));
    }
    if expect.tool.is_some_and(|t| t != detail.tool) {
        return Err(Refusal::OtherTool(detail.tool.clone()));
    }
    let digest = expect.arguments.map(crate::digest::arguments_sha256);
    if digest.is_some_and(|d| d != detail.arguments_sha256) {
        return Err(Refusal::ArgumentsDiffer);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{Actor, Approver, Detail, Policy};
    use crate::signer::Signer;
    use serde_json::json;

    const P256: &str = include_str!("../../testdata/card-keys/b1.pem");

    fn receipt(now: i64) -> Receipt {
        Receipt {
            iss: "http://127.0.0.1:8080".into(),
            jti: "0191-approval".into(),
            iat: now,
            exp: now + 600,
            txn: "0191-conversation".into(),
            act: Actor {
                sub: "ops-agent".into(),
            },
            authorization_details: vec![Detail::approved(
                "resources",
                "resources_add",
                &json!({"name": "apples", "value": 5}),
            )],
            approvers: vec![Approver {
                sub: "alice".into(),
                via: "ui".into(),
                at: "2026-12-07T10:00:00Z".into(),
            }],
            policy: Policy {
                rule: "annotation".into(),
                sha256: "x".into(),
            },
            chain: Vec::new(),
        }
    }

    fn setup() -> (Signer, Keys) {
        let s = Signer::from_pem(P256, "r-1").unwrap();
        let keys = Keys::from_jwks(&json!({"keys": [s.jwk()]})).unwrap();
        (s, keys)
    }

    fn expect<'a>(args: &'a Value, now: i64) -> Expect<'a> {
        Expect::call(
            "http://127.0.0.1:8080",
            "resources",
            "resources_add",
            args,
            now,
        )
    }

    #[test]
    fn a_signed_receipt_allows_exactly_its_call() {
        let (s, keys) = setup();
        let now = 1_800_000_000;
        let jws = s.sign(&receipt(now)).unwrap();
        let args = json!({"value": 5, "name": "apples"});
        assert_eq!(
            verify(Some(&jws), &keys, &expect(&args, now)).unwrap(),
            receipt(now)
        );

        assert_eq!(
            verify(None, &keys, &expect(&args, now)),
            Err(Refusal::Missing)
        );
        let other = json!({"name": "apples", "value": 6});
        assert_eq!(
            verify(Some(&jws), &keys, &expect(&other, now)),
            Err(Refusal::ArgumentsDiffer)
        );
        assert!(matches!(
            verify(Some(&jws), &keys, &expect(&args, now + 601)),
            Err(Refusal::Expired(1))
        ));
        let mut e = expect(&args, now);
        e.server = Some("files");
        assert_eq!(
            verify(Some(&jws), &keys, &e),
            Err(Refusal::OtherServer("resources".into()))
        );
        let mut e = expect(&args, now);
        e.tool = Some("resources_remove");
        assert!(matches!(
            verify(Some(&jws), &keys, &e),
            Err(Refusal::OtherTool(_))
        ));
        let mut e = expect(&args, now);
        e.issuer = Some("http://elsewhere");
        assert!(matches!(
            verify(Some(&jws), &keys, &e),
            Err(Refusal::OtherIssuer(_))
        ));
        // Told nothing about the call: signature, type and expiry only.
        let bare = Expect {
            now,
            ..Expect::default()
        };
        assert!(verify(Some(&jws), &keys, &bare).is_ok());
    }

    #[test]
    fn a_changed_payload_or_another_key_does_not_verify() {
        let (s, keys) = setup();
        let now = 1_800_000_000;
        let jws = s.sign(&receipt(now)).unwrap();
        let args = json!({"name": "apples", "value": 5});
        // Another payload under the same signature.
        let mut r = receipt(now);
        r.exp = now + 999_999;
        let forged = s.sign(&r).unwrap();
        let parts: Vec<&str> = jws.split('.').collect();
        let forged_parts: Vec<&str> = forged.split('.').collect();
        let swapped = format!("{}.{}.{}", parts[0], forged_parts[1], parts[2]);
        assert_eq!(
            verify(Some(&swapped), &keys, &expect(&args, now)),
            Err(Refusal::BadSignature)
        );
        // A key the JWKS does not hold.
        let ed = Signer::from_pem(include_str!("../../testdata/card-keys/b2.pem"), "r-2").unwrap();
        let other = ed.sign(&receipt(now)).unwrap();
        assert_eq!(
            verify(Some(&other), &keys, &expect(&args, now)),
            Err(Refusal::UnknownKey("r-2".into()))
        );
        // Its own JWKS verifies it (EdDSA or ES256, whichever b2 is).
        let ed_keys = Keys::from_jwks(&json!({"keys": [ed.jwk()]})).unwrap();
        assert!(verify(Some(&other), &ed_keys, &expect(&args, now)).is_ok());
        assert!(matches!(
            verify(Some("junk"), &keys, &expect(&args, now)),
            Err(Refusal::Malformed(_))
        ));
    }
}
