//! Signed approval receipts (RECEIPTS.md §1), first slice: a receipt made
//! by the shared `receipts` crate is checked by `agent receipt verify`
//! (the real binary: its exit code and words are what an operator sees)
//! against a JWKS file and a JWKS URL, and by a standard JOSE library
//! outside Rust (PyJWT, from the MCP Python SDK's environment), which also
//! recomputes the arguments' digest as a third-party executor would.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const ISSUER: &str = "http://127.0.0.1:8080";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A receipt for `resources_add {"name": "apples", "value": 5}`.
fn receipt(exp: i64) -> receipts::Receipt {
    receipts::Receipt {
        iss: ISSUER.into(),
        jti: "01a2-approval".into(),
        iat: now(),
        exp,
        txn: "01a2-conversation".into(),
        act: receipts::Actor {
            sub: "ops-agent".into(),
        },
        authorization_details: vec![receipts::Detail::approved(
            "resources",
            "resources_add",
            &json!({"name": "apples", "value": 5}),
        )],
        approvers: vec![
            receipts::Approver {
                sub: "alice".into(),
                via: "ui".into(),
                at: "2026-12-07T10:00:00Z".into(),
            },
            receipts::Approver {
                sub: "bob".into(),
                via: "slack".into(),
                at: "2026-12-07T10:01:00Z".into(),
            },
        ],
        policy: receipts::Policy {
            rule: "two-for-prod".into(),
            sha256: "x".into(),
        },
        chain: Vec::new(),
    }
}

fn signer() -> receipts::Signer {
    let pem = std::fs::read_to_string(root().join("testdata/card-keys/b1.pem")).unwrap();
    receipts::Signer::from_pem(&pem, "r-1").unwrap()
}

/// `agent receipt verify JWS --jwks JWKS ARGS...`: exit code and output.
fn cli(jws: &str, jwks: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agent"))
        .args(["receipt", "verify", jws, "--jwks", jwks])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_cli_checks_a_receipt_and_says_why_it_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let s = signer();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [s.jwk()]}).to_string()).unwrap();
    let jwks = jwks.to_str().unwrap();
    let jws = s.sign(&receipt(now() + 600)).unwrap();
    let call = [
        "--issuer",
        ISSUER,
        "--server",
        "resources",
        "--tool",
        "resources_add",
    ];

    let (code, out) = cli(
        &jws,
        jwks,
        &[
            &call[..],
            &["--arguments", r#"{"value": 5, "name": "apples"}"#],
        ]
        .concat(),
    );
    assert_eq!(code, Some(0), "{out}");
    let claims: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(claims["jti"], "01a2-approval");
    assert_eq!(
        claims["approvers"].as_array().unwrap().len(),
        2,
        "a quorum's two votes"
    );

    for (args, why) in [
        (
            vec!["--arguments", r#"{"name": "apples", "value": 6}"#],
            "arguments differ",
        ),
        (vec!["--server", "files"], "other server"),
        (vec!["--tool", "resources_remove"], "other tool"),
        (vec!["--issuer", "http://elsewhere"], "issued by"),
    ] {
        let (code, out) = cli(&jws, jwks, &args);
        assert_eq!(code, Some(1), "{args:?}: {out}");
        assert!(out.contains(why), "{args:?}: {out}");
    }
    let expired = s.sign(&receipt(now() - 5)).unwrap();
    let (code, out) = cli(&expired, jwks, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("expired"), "{out}");
    // Another payload under the first signature.
    let other = s.sign(&receipt(now() + 99_999)).unwrap();
    let parts: Vec<&str> = jws.split('.').collect();
    let swapped = format!(
        "{}.{}.{}",
        parts[0],
        other.split('.').nth(1).unwrap(),
        parts[2]
    );
    let (code, out) = cli(&swapped, jwks, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("bad signature"), "{out}");
    // A JWKS that cannot be read, and arguments that are not JSON: 2.
    assert_eq!(cli(&jws, "/nonexistent/jwks.json", &[]).0, Some(2));
    assert_eq!(cli(&jws, jwks, &["--arguments", "{nope"]).0, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reads_the_jwks_from_a_url() {
    let s = signer();
    let set = json!({"keys": [s.jwk()]});
    let app = axum::Router::new().route(
        "/.well-known/jwks.json",
        axum::routing::get(move || std::future::ready(axum::Json(set.clone()))),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/.well-known/jwks.json",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let jws = s.sign(&receipt(now() + 600)).unwrap();
    let (code, out) = tokio::task::spawn_blocking(move || cli(&jws, &url, &["--issuer", ISSUER]))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "{out}");
}

/// What a third-party executor in Python does (RECEIPTS.md §1): PyJWT
/// checks the signature with the JWKS key named by `kid`, and the
/// arguments' digest is the SHA-256 of their canonical JSON.
#[test]
fn pyjwt_verifies_a_receipt_and_its_digest() {
    let py = root().join(".tools/mcp-python/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup.sh test",
        py.display()
    );
    let s = signer();
    let jws = s.sign(&receipt(now() + 600)).unwrap();
    let script = r#"
import base64, hashlib, json, sys, jwt
token, jwks, args = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
kid = jwt.get_unverified_header(token)["kid"]
key = next(jwt.PyJWK(k) for k in jwks["keys"] if k["kid"] == kid)
claims = jwt.decode(token, key, algorithms=["ES256", "EdDSA"], issuer="http://127.0.0.1:8080")
assert jwt.get_unverified_header(token)["typ"] == "stopgo-receipt+jwt"
canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
digest = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()
assert claims["authorization_details"][0]["arguments_sha256"] == digest, "digest"
print(json.dumps(claims))
"#;
    let out = Command::new(py)
        .args(["-c", script, &jws])
        .arg(json!({"keys": [s.jwk()]}).to_string())
        .arg(r#"{"value": 5, "name": "apples"}"#)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let claims: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(claims["jti"], "01a2-approval");
}
