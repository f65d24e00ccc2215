//! The agent's signing key (a PKCS#8 PEM: P-256 signs ES256, Ed25519
//! EdDSA): receipts, and the agent's signed Agent Card (`a2a/signing.rs`
//! signs through it, so the key is read one way).

use crate::claims::{Receipt, TYPE};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair,
};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The agent's receipt key.
pub struct Signer {
    key: EncodingKey,
    alg: Algorithm,
    kid: String,
    jwk: Value,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({:?}, {:?})", self.alg, self.kid)
    }
}

/// The DER inside a PEM's armour.
fn der_of(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----") && !l.is_empty())
        .collect();
    STANDARD.decode(body).ok()
}

impl Signer {
    /// From a PKCS#8 PEM private key; `kid` names it in the JWKS (empty:
    /// the key's RFC 7638 thumbprint, so a key names itself the same way
    /// on every replica and across restarts).
    pub fn from_pem(pem: &str, kid: &str) -> Result<Signer, String> {
        let mut s = Signer::read(pem, kid)?;
        if kid.trim().is_empty() {
            let jwk: jsonwebtoken::jwk::Jwk =
                serde_json::from_value(s.jwk.clone()).map_err(|e| e.to_string())?;
            s.kid = jwk.thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256);
            s.jwk["kid"] = Value::String(s.kid.clone());
        }
        Ok(s)
    }

    fn read(pem: &str, kid: &str) -> Result<Signer, String> {
        let der = der_of(pem).ok_or("the key is not a PEM")?;
        if let Ok(pair) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der) {
            let key = EncodingKey::from_ec_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
            let point = pair.public_key().as_ref();
            // An uncompressed point: 0x04, x (32 bytes), y (32 bytes).
            if point.len() != 65 {
                return Err("the P-256 public key has an unexpected form".into());
            }
            let jwk = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
                "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..])});
            return Ok(Signer {
                key,
                alg: Algorithm::ES256,
                kid: kid.into(),
                jwk,
            });
        }
        if let Ok(pair) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der) {
            let key = EncodingKey::from_ed_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
            let jwk = json!({"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid,
                "x": B64.encode(pair.public_key().as_ref())});
            return Ok(Signer {
                key,
                alg: Algorithm::EdDSA,
                kid: kid.into(),
                jwk,
            });
        }
        Err(
            "the key is neither a P-256 (ES256) nor an Ed25519 (EdDSA) private key in PKCS#8 PEM"
                .into(),
        )
    }

    /// The public key as a JWK, for `/.well-known/jwks.json`.
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// The key's id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWS `alg`: `ES256` or `EdDSA`.
    pub fn alg(&self) -> &'static str {
        if self.alg == Algorithm::ES256 {
            "ES256"
        } else {
            "EdDSA"
        }
    }

    /// The base64url signature over a JWS signing input
    /// (`protected.payload`), for JWS shapes other than a receipt (the
    /// Agent Card's detached signature).
    pub fn sign_input(&self, input: &[u8]) -> Result<String, String> {
        jsonwebtoken::crypto::sign(input, &self.key, self.alg).map_err(|e| e.to_string())
    }

    /// The receipt as a compact JWS.
    pub fn sign(&self, receipt: &Receipt) -> Result<String, String> {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = Some(TYPE.into());
        jsonwebtoken::encode(&header, receipt, &self.key).map_err(|e| e.to_string())
    }
}
