//! Signed approval receipts (RECEIPTS.md §1): a receipt made by the shared
//! `receipts` crate is checked by `agent receipt verify` (the real binary:
//! its exit code and words are what an operator sees) against a JWKS file
//! and a JWKS URL, and by a standard JOSE library outside Rust (PyJWT, from
//! the MCP Python SDK's environment), which also recomputes the arguments'
//! digest as a third-party executor would. The agent itself signs every
//! call it lets through after a decision (one approver, a quorum's two
//! votes, a grant's use naming its granter): `GET /approvals/:uuid` shows
//! the receipt, PyJWT verifies it against the agent's own
//! `/.well-known/jwks.json`, and the call's audit row holds its digest.

use crate::support;

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

/// PyJWT verifies `jws` with the key its JWKS URL serves (PyJWKClient, as
/// a third-party executor would), for issuer `iss`, and checks the digest
/// of `args`; the claims.
fn pyjwt_verify(jws: &str, jwks_url: &str, iss: &str, args: &Value) -> Value {
    let script = r#"
import base64, hashlib, json, sys, jwt
token, url, iss, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
key = jwt.PyJWKClient(url).get_signing_key_from_jwt(token)
claims = jwt.decode(token, key, algorithms=["ES256", "EdDSA"], issuer=iss)
assert jwt.get_unverified_header(token)["typ"] == "stopgo-receipt+jwt"
canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
digest = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()
assert claims["authorization_details"][0]["arguments_sha256"] == digest, "digest"
print(json.dumps(claims))
"#;
    let out = Command::new(root().join(".tools/mcp-python/bin/python"))
        .args(["-c", script, jws, jwks_url, iss, &args.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const BOB: &str = "bob-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";
const OPS: &str = "ops-token-0123456789abcdef";

/// `GET /approvals/:uuid` once its call ran: the receipt and its claims.
async fn receipt_of(a: &support::Agent, uuid: &str) -> (String, Value) {
    let r = support::get_bearer(a, BOB, &format!("/approvals/{uuid}")).await;
    assert_eq!(r["status"], "executed", "{r}");
    let jws = r["receipt"]
        .as_str()
        .unwrap_or_else(|| panic!("no receipt: {r}"));
    (jws.to_string(), r["receipt_claims"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_signs_each_decided_call_and_pyjwt_verifies_it() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [approver]}}
    - {{name: ops, token: "${{OPS_T}}", roles: [admin]}}
approvals:
  rules:
    - {{name: two-people, tool: resources_remove, action: approve, quorum: 2}}
receipts:
  signing_key: {key}
  kid: r1
  ttl: 5m
"#,
        base = support::resources_yaml("receipts-agent", dir.path()),
        key = root().join("testdata/card-keys/b1.pem").display()
    );
    let cfg = support::write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = support::Agent::serve_with_env(
        &cfg,
        &[
            ("BOB_T", BOB),
            ("ALICE_T", ALICE),
            ("CAROL_T", CAROL),
            ("OPS_T", OPS),
        ],
    )
    .await;
    let jwks_url = a.url("/.well-known/jwks.json");
    let jwks: Value = support::client()
        .get(&jwks_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"][0]["kid"], "r1", "{jwks}");

    // One approver, with a grant on /name for the next identical call.
    let (_, body) = support::post_bearer(
        &a,
        BOB,
        "/conversations",
        json!({"message": "add apples 5"}),
    )
    .await;
    let conv = body["conversation"]["id"].as_str().unwrap().to_string();
    let first = support::waiting_uuid(&body);
    let grant = json!({"approved": true, "grant": {"match": ["/name"], "for": "1h"}});
    let (status, body) =
        support::post_bearer(&a, ALICE, &format!("/approvals/{first}"), grant).await;
    assert_eq!(status, 200, "{body}");
    let (jws, shown) = receipt_of(&a, &first).await;
    let apples = json!({"name": "apples", "value": 5});
    let claims = pyjwt_verify(&jws, &jwks_url, &a.base, &apples);
    assert_eq!(
        claims, shown,
        "GET /approvals/:uuid shows the receipt's own claims"
    );
    assert_eq!(claims["jti"], first.as_str());
    assert_eq!(claims["txn"], conv.as_str());
    assert_eq!(claims["act"]["sub"], "receipts-agent");
    assert_eq!(
        claims["authorization_details"][0]["type"],
        "stopgo_tool_call"
    );
    assert_eq!(claims["authorization_details"][0]["server"], "resources");
    assert_eq!(claims["authorization_details"][0]["tool"], "resources_add");
    assert_eq!(claims["approvers"].as_array().unwrap().len(), 1, "{claims}");
    assert_eq!(
        (
            &claims["approvers"][0]["sub"],
            &claims["approvers"][0]["via"]
        ),
        (&json!("alice"), &json!("rest"))
    );
    assert_eq!(claims["policy"]["rule"], "annotation");
    let exp = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert!(
        (290..=300).contains(&exp),
        "ttl 5m from the decision: {claims}"
    );

    // The grant's use: its own approval row, its receipt names the granter.
    let (status, body) = support::post_bearer(
        &a,
        BOB,
        &format!("/conversations/{conv}/messages"),
        json!({"message": "add apples 7"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let rows = support::audit_rows(&a, OPS).await;
    let used = rows
        .iter()
        .find(|r| r["event"] == "grant.used")
        .unwrap_or_else(|| panic!("{rows:?}"));
    let by_grant = used["approval_uuid"].as_str().unwrap();
    let (jws, _) = receipt_of(&a, by_grant).await;
    let claims = pyjwt_verify(
        &jws,
        &jwks_url,
        &a.base,
        &json!({"name": "apples", "value": 7}),
    );
    assert_eq!(
        (
            &claims["approvers"][0]["sub"],
            &claims["approvers"][0]["via"]
        ),
        (&json!("alice"), &json!("grant")),
        "{claims}"
    );
    assert_eq!(claims["jti"], by_grant);

    // A quorum: both votes, in order.
    let (_, body) = support::post_bearer(
        &a,
        BOB,
        &format!("/conversations/{conv}/messages"),
        json!({"message": "remove apples"}),
    )
    .await;
    let removal = support::waiting_uuid(&body);
    for t in [ALICE, CAROL] {
        let (status, body) = support::post_bearer(
            &a,
            t,
            &format!("/approvals/{removal}"),
            json!({"approved": true}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let (jws, _) = receipt_of(&a, &removal).await;
    let claims = pyjwt_verify(&jws, &jwks_url, &a.base, &json!({"pattern": "apples"}));
    let subs: Vec<&str> = claims["approvers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["sub"].as_str().unwrap())
        .collect();
    assert_eq!(subs, ["alice", "carol"], "{claims}");
    assert_eq!(claims["policy"]["rule"], "two-people");
    assert_eq!(
        claims["policy"]["sha256"].as_str().map(str::len),
        Some(43),
        "{claims}"
    );

    // Each call's audit row holds its receipt's digest.
    let rows = support::audit_rows(&a, OPS).await;
    let executed = rows
        .iter()
        .rfind(|r| r["event"] == "tool.executed" && r["approval_uuid"] == removal.as_str())
        .unwrap();
    use base64::Engine;
    use sha2::Digest;
    let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(jws.as_bytes()));
    assert_eq!(
        executed["details"]["receipt_sha256"],
        digest.as_str(),
        "{executed}"
    );

    // An unknown approval is a 404 naming it.
    let r = support::client()
        .get(a.url("/approvals/nope"))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
