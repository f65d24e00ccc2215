//! Digests: lower-case hex, and the SHA-256 of a value's canonical JSON (how
//! arguments and configs are recorded, never the values themselves, which
//! may hold secrets). Used by the audit chain, tool pins, config digests,
//! sessions and signatures.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of a value's canonical JSON: how arguments are recorded
/// (a digest, never the arguments, which may hold secrets).
pub(crate) fn digest(v: &Value) -> String {
    hex(&Sha256::digest(canonical(v).as_bytes()))
}

/// JSON with object keys sorted at every level and no whitespace.
pub(crate) fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
