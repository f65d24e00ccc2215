//! Signed Agent Cards (A2A 1.0 §8.4): a detached JWS over the card's
//! canonical JSON, in the card's `signatures`.
//!
//! The canonical form is the one the official SDKs sign and verify (a2a-sdk
//! 1.3.0 `a2a.utils.signing`): the card as the `AgentCard` message (fields
//! a2a.proto does not define, such as our dual card's 0.3 keys, are not
//! part of it), in ProtoJSON, without `signatures`, with empty strings,
//! lists and objects removed, serialized by RFC 8785 (JCS,
//! `serde_json_canonicalizer`). The signature is
//! `JWS(protected, base64url(canonical))` with the payload detached:
//! `{"protected", "signature"}` where `protected` is `{"alg", "kid", "typ":
//! "JOSE", "jku"?}`. ES256 (P-256) or EdDSA (Ed25519); signing and checking
//! are jsonwebtoken's (aws-lc), never ours; our key (and its public half
//! for `/.well-known/jwks.json`) is read by the `receipts` crate's
//! `Signer`, which signs receipts with the same kind of key.

use super::proto;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Value, json};

/// The card's canonical bytes (what a signature covers).
pub(crate) fn canonical(card: &Value) -> Result<Vec<u8>, String> {
    let parsed: proto::AgentCard = serde_json::from_value(card.clone())
        .map_err(|e| format!("the card is not an A2A 1.0 AgentCard: {e}"))?;
    let mut v = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    if let Some(o) = v.as_object_mut() {
        o.remove("signatures");
    }
    let v = strip_empty(v).unwrap_or(Value::Object(Default::default()));
    serde_json_canonicalizer::to_vec(&v).map_err(|e| e.to_string())
}

/// The value without empty strings, lists and objects (at any depth;
/// `None` when nothing is left), as the SDKs' `_clean_empty`.
fn strip_empty(v: Value) -> Option<Value> {
    match v {
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) => {
            let a: Vec<Value> = a.into_iter().filter_map(strip_empty).collect();
            (!a.is_empty()).then_some(Value::Array(a))
        }
        Value::Object(o) => {
            let o: serde_json::Map<String, Value> = o
                .into_iter()
                .filter_map(|(k, v)| strip_empty(v).map(|v| (k, v)))
                .collect();
            (!o.is_empty()).then_some(Value::Object(o))
        }
        other => Some(other),
    }
}

/// Our signing key.
pub(crate) struct CardSigner {
    /// The key, read as the receipts crate reads it (one way for both).
    key: receipts::Signer,
    /// Signatures made, by what they cover: the same card is served with
    /// the same signature (an ES256 signature is randomised, and a card's
    /// ETag must not change while the card does not).
    made: std::sync::Mutex<std::collections::HashMap<String, Value>>,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CardSigner({:?})", self.key)
    }
}

impl CardSigner {
    /// From a PKCS#8 PEM: P-256 signs ES256, Ed25519 EdDSA.
    pub(crate) fn from_pem(pem: &str, kid: &str) -> Result<CardSigner, String> {
        Ok(CardSigner {
            key: receipts::Signer::from_pem(pem, kid)?,
            made: Default::default(),
        })
    }

    /// `{"keys": [our public key]}`.
    pub(crate) fn jwks(&self) -> Value {
        json!({ "keys": [self.key.jwk()] })
    }

    /// The card with its signature (any it had replaced); `jku` names
    /// where our JWKS is.
    pub(crate) fn sign(&self, card: &mut Value, jku: Option<&str>) -> Result<(), String> {
        let payload = B64.encode(canonical(card)?);
        let mut header = json!({"alg": self.key.alg(), "kid": self.key.kid(), "typ": "JOSE"});
        if let Some(u) = jku {
            header["jku"] = json!(u);
        }
        let protected = B64.encode(header.to_string());
        let input = format!("{protected}.{payload}");
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sigs) = made.get(&input) {
            card["signatures"] = sigs.clone();
            return Ok(());
        }
        let signature = self.key.sign_input(input.as_bytes())?;
        let sigs = json!([{"protected": protected, "signature": signature}]);
        if made.len() >= 64 {
            made.clear();
        }
        made.insert(input, sigs.clone());
        card["signatures"] = sigs;
        Ok(())
    }
}

/// What a sub-agent's card must be signed with (`a2a[].trust`).
#[derive(Clone)]
pub(crate) enum Trust {
    /// A pinned public key.
    Keys(Vec<TrustedKey>),
    /// The keys its JWKS publishes (read with the card), `kid` only when
    /// given.
    Jwks { url: String, kid: Option<String> },
}

/// A key a card may be signed with.
#[derive(Clone)]
pub(crate) struct TrustedKey {
    /// Only signatures naming this kid (None: any).
    pub(crate) kid: Option<String>,
    pub(crate) alg: Algorithm,
    pub(crate) key: DecodingKey,
}

/// The keys of a public key PEM (ES256 or EdDSA, told apart by parsing).
pub(crate) fn keys_of_pem(pem: &str, kid: Option<&str>) -> Result<Vec<TrustedKey>, String> {
    let kid = kid.map(str::to_string);
    if let Ok(key) = DecodingKey::from_ec_pem(pem.as_bytes()) {
        return Ok(vec![TrustedKey {
            kid,
            alg: Algorithm::ES256,
            key,
        }]);
    }
    if let Ok(key) = DecodingKey::from_ed_pem(pem.as_bytes()) {
        return Ok(vec![TrustedKey {
            kid,
            alg: Algorithm::EdDSA,
            key,
        }]);
    }
    Err("the public key is neither a P-256 nor an Ed25519 key in PEM".into())
}

/// The ES256 and EdDSA keys of a JWKS (only `kid` when given).
pub(crate) fn keys_of_jwks(set: &Value, kid: Option<&str>) -> Result<Vec<TrustedKey>, String> {
    let set: JwkSet =
        serde_json::from_value(set.clone()).map_err(|e| format!("not a JWKS: {e}"))?;
    let mut out = Vec::new();
    for jwk in &set.keys {
        let id = jwk.common.key_id.clone();
        if kid.is_some() && id.as_deref() != kid {
            continue;
        }
        let Some(alg) = alg_of(jwk) else { continue };
        if let Ok(key) = DecodingKey::from_jwk(jwk) {
            out.push(TrustedKey { kid: id, alg, key });
        }
    }
    if out.is_empty() {
        return Err(match kid {
            Some(k) => format!("the JWKS has no ES256 or EdDSA key with kid {k:?}"),
            None => "the JWKS has no ES256 or EdDSA key".into(),
        });
    }
    Ok(out)
}

fn alg_of(jwk: &Jwk) -> Option<Algorithm> {
    use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve};
    match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => {
            Some(Algorithm::ES256)
        }
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            Some(Algorithm::EdDSA)
        }
        _ => None,
    }
}

/// Whether a card carries a signature one of `keys` made over it: the
/// kid of the key that verified, or why none did (said to the operator).
pub(crate) fn verify(card: &Value, keys: &[TrustedKey]) -> Result<Option<String>, String> {
    let sigs = card
        .get("signatures")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or("the card is not signed, and a signing key is pinned for it")?;
    let payload = B64.encode(canonical(card)?);
    let mut kids = Vec::new();
    for s in sigs {
        let (Some(protected), Some(signature)) = (
            s.get("protected").and_then(Value::as_str),
            s.get("signature").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some(header) = B64
            .decode(protected)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            continue;
        };
        let kid = header
            .get("kid")
            .and_then(Value::as_str)
            .map(str::to_string);
        let alg = match header.get("alg").and_then(Value::as_str) {
            Some("ES256") => Algorithm::ES256,
            Some("EdDSA") => Algorithm::EdDSA,
            _ => continue,
        };
        kids.push(kid.clone().unwrap_or_else(|| "(none)".into()));
        let input = format!("{protected}.{payload}");
        for k in keys {
            if k.alg != alg || (k.kid.is_some() && k.kid != kid) {
                continue;
            }
            if jsonwebtoken::crypto::verify(signature, input.as_bytes(), &k.key, alg)
                .unwrap_or(false)
            {
                return Ok(kid);
            }
        }
    }
    Err(if kids.is_empty() {
        "none of the card's signatures can be read (ES256 or EdDSA JWS expected)".into()
    } else {
        format!(
            "no signature verifies with the pinned key: the card is signed by {} (changed since it was trusted, or tampered with)",
            kids.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test keys (made for these tests with `openssl genpkey`).
    const EC: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5nb9HrIEQfVlqu/+
C/XnF5hqZOmoLOuovkqBcHwtoJahRANCAAT+kV2gZkiX5mu3ZFCEBdQ0uIViOKOd
JTWGeT0rSinpnkqMHCHrr52m8jF/jVVqhNp85RsvsqZCZDb7hu9RpcDZ
-----END PRIVATE KEY-----";
    const ED: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIICsDxltmZEAwfFLO8EzrAKaUcA9ImNVgaH0dYQHJZng
-----END PRIVATE KEY-----";

    fn card() -> Value {
        json!({"name": "b", "description": "é agent", "version": "1.0",
            "supportedInterfaces": [{"url": "http://b/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true}, "skills": [], "defaultInputModes": ["text/plain"],
            "protocolVersion": "0.3.0", "url": "http://b/a2a"})
    }

    #[test]
    fn the_canonical_form_drops_empties_signatures_and_foreign_keys() {
        let c = String::from_utf8(canonical(&card()).unwrap()).unwrap();
        assert_eq!(
            c,
            r#"{"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"description":"é agent","name":"b","supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"http://b/a2a"}],"version":"1.0"}"#
        );
    }

    #[test]
    fn a_signed_card_verifies_and_a_changed_one_does_not() {
        let s = CardSigner::from_pem(EC, "k1").unwrap();
        let mut c = card();
        s.sign(&mut c, None).unwrap();
        let jwks = s.jwks();
        let keys = keys_of_jwks(&jwks, Some("k1")).unwrap();
        assert_eq!(verify(&c, &keys).unwrap().as_deref(), Some("k1"));
        // The 0.3 keys are outside the signature; a 1.0 field is not.
        c["url"] = json!("http://elsewhere");
        assert!(verify(&c, &keys).is_ok());
        c["description"] = json!("another agent");
        assert!(
            verify(&c, &keys)
                .unwrap_err()
                .contains("no signature verifies")
        );
        let mut unsigned = card();
        unsigned.as_object_mut().unwrap().remove("signatures");
        assert!(verify(&unsigned, &keys).unwrap_err().contains("not signed"));
        assert!(keys_of_jwks(&jwks, Some("k2")).is_err());
        // Another key's signature does not verify with this one.
        let other = CardSigner::from_pem(ED, "k2").unwrap();
        let mut c = card();
        other.sign(&mut c, None).unwrap();
        assert!(verify(&c, &keys).unwrap_err().contains("signed by k2"));
        let ed_keys = keys_of_jwks(&other.jwks(), None).unwrap();
        assert_eq!(verify(&c, &ed_keys).unwrap().as_deref(), Some("k2"));
    }
}
