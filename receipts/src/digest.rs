//! The arguments' digest: base64url (no padding) of the SHA-256 of their
//! RFC 8785 canonical JSON, so the same arguments digest the same in any
//! language with a JCS library, whatever their key order or spacing.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The digest of `value`'s canonical JSON.
pub fn arguments_sha256(value: &serde_json::Value) -> String {
    // A serde_json::Value always has a canonical form (finite numbers,
    // string keys); the fallback is never reached but keeps this total.
    let canonical = serde_json_canonicalizer::to_vec(value).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(Sha256::digest(&canonical))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_spacing_do_not_change_the_digest() {
        let a = arguments_sha256(&json!({"name": "apples", "value": 5}));
        let b: serde_json::Value =
            serde_json::from_str("{ \"value\": 5.0e0,\n \"name\":\"apples\" }").unwrap();
        assert_eq!(a, arguments_sha256(&b));
        assert_ne!(a, arguments_sha256(&json!({"name": "apples", "value": 6})));
        // The JCS text of {"name":"apples","value":5}, hashed and encoded.
        assert_eq!(a.len(), 43);
    }
}
