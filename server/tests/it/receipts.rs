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

const AGENT: &str = "http://agent.test";

/// `{"keys": [the key]}` for `signer`, as a file executors read.
fn jwks_file(dir: &Path, signer: &receipts::Signer) -> PathBuf {
    let p = dir.join("jwks.json");
    std::fs::write(&p, json!({"keys": [signer.jwk()]}).to_string()).unwrap();
    p
}

/// A receipt from [`AGENT`] for one call.
fn receipt_for(jti: &str, server: &str, tool: &str, args: &Value, exp: i64) -> receipts::Receipt {
    receipts::Receipt {
        iss: AGENT.into(),
        jti: jti.into(),
        iat: now(),
        exp,
        txn: "c1".into(),
        act: receipts::Actor { sub: "ops".into() },
        authorization_details: vec![receipts::Detail::approved(server, tool, args)],
        approvers: vec![receipts::Approver {
            sub: "alice".into(),
            via: "rest".into(),
            at: "2026-12-07T10:00:00Z".into(),
        }],
        policy: receipts::Policy {
            rule: "annotation".into(),
            sha256: "x".into(),
        },
        chain: Vec::new(),
    }
}

type McpClient = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// `mcp-resources` on stdio, requiring receipts from [`AGENT`].
async fn resources_server(db: &Path, jwks: &Path) -> McpClient {
    use rmcp::ServiceExt;
    let mut cmd =
        tokio::process::Command::new(test_support::process::workspace_bin("mcp-resources"));
    cmd.arg("--db")
        .arg(db)
        .arg("--require-receipts-jwks")
        .arg(jwks)
        .args(["--require-receipts-issuer", AGENT])
        .stderr(std::process::Stdio::null());
    ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// `mcp-filesystem` on stdio with `config`.
async fn filesystem_server(config: &Path) -> McpClient {
    use rmcp::ServiceExt;
    let mut cmd =
        tokio::process::Command::new(test_support::process::workspace_bin("mcp-filesystem"));
    cmd.arg("--config")
        .arg(config)
        .stderr(std::process::Stdio::null());
    ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// Calls `tool` with `args` and `_meta` entries; the text and whether it
/// is an error.
async fn call_with(
    c: &McpClient,
    tool: &str,
    args: &Value,
    meta: &[(&str, &str)],
) -> (String, bool) {
    use rmcp::model::RequestParamsMeta;
    let mut p = rmcp::model::CallToolRequestParams::new(tool.to_string())
        .with_arguments(args.as_object().unwrap().clone());
    for (k, v) in meta {
        p.meta_or_default().insert(k.to_string(), json!(v));
    }
    let r = c.call_tool(p).await.unwrap();
    let text: String = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    (text, r.is_error == Some(true))
}

/// How many resources the server holds (a read-only call: no receipt).
async fn count(c: &McpClient) -> i64 {
    let (text, err) = call_with(c, "resources_list", &json!({}), &[]).await;
    assert!(!err, "{text}");
    serde_json::from_str::<Value>(&text).unwrap()["count"]
        .as_i64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_resources_refuses_what_no_receipt_allows_and_runs_a_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = signer();
    let jwks = jwks_file(dir.path(), &s);
    let db = dir.path().join("r.db");
    let c = resources_server(&db, &jwks).await;
    let apples = json!({"name": "apples", "value": 5});
    let sign = |r: &receipts::Receipt| s.sign(r).unwrap();
    let later = now() + 600;
    let add = |jti: &str, args: &Value| receipt_for(jti, "resources", "resources_add", args, later);

    // Each refusal names its reason and adds nothing.
    let good = sign(&add("j1", &apples));
    let mut forged_payload: Vec<&str> = good.split('.').collect();
    let other = sign(&add("j1", &json!({"name": "apples", "value": 500})));
    forged_payload[1] = other.split('.').nth(1).unwrap();
    let forged_payload = forged_payload.join(".");
    let other_key = receipts::Signer::from_pem(
        &std::fs::read_to_string(root().join("testdata/card-keys/b2.pem")).unwrap(),
        "r-1",
    )
    .unwrap();
    for (receipt, says) in [
        (None, "no receipt"),
        (
            Some(sign(&add("j2", &json!({"name": "apples", "value": 6})))),
            "arguments differ",
        ),
        (Some(forged_payload), "bad signature"),
        (
            Some(other_key.sign(&add("j3", &apples)).unwrap()),
            "bad signature",
        ),
        (
            Some(sign(&receipt_for(
                "j4",
                "elsewhere",
                "resources_add",
                &apples,
                later,
            ))),
            "other server",
        ),
        (
            Some(sign(&receipt_for(
                "j5",
                "resources",
                "resources_remove",
                &apples,
                later,
            ))),
            "other tool",
        ),
        (
            Some(sign(&receipt_for(
                "j6",
                "resources",
                "resources_add",
                &apples,
                now() - 5,
            ))),
            "expired",
        ),
        (Some("not.a.jws".into()), "bad receipt"),
    ] {
        let meta: Vec<(&str, &str)> = receipt
            .iter()
            .map(|r| (receipts::META_RECEIPT, r.as_str()))
            .collect();
        let (text, err) = call_with(&c, "resources_add", &apples, &meta).await;
        assert!(err && text.contains(says), "{says}: {text}");
    }
    assert_eq!(count(&c).await, 0, "a refused call changes nothing");

    // The receipt that fits runs once; again it is used, even after a restart.
    let (text, err) = call_with(
        &c,
        "resources_add",
        &apples,
        &[(receipts::META_RECEIPT, &good)],
    )
    .await;
    assert!(!err, "{text}");
    let (text, err) = call_with(
        &c,
        "resources_add",
        &apples,
        &[(receipts::META_RECEIPT, &good)],
    )
    .await;
    assert!(err && text.contains("already used"), "{text}");
    c.cancel().await.unwrap();
    let c = resources_server(&db, &jwks).await;
    let (text, err) = call_with(
        &c,
        "resources_add",
        &apples,
        &[(receipts::META_RECEIPT, &good)],
    )
    .await;
    assert!(
        err && text.contains("already used"),
        "after a restart: {text}"
    );
    assert_eq!(count(&c).await, 1);

    // A key repeated with the same arguments gets the first outcome back,
    // even with a fresh receipt and after a restart; with other arguments
    // it is refused.
    let pears = json!({"name": "pears", "value": 2});
    let key = (receipts::META_IDEMPOTENCY_KEY, "conv-1/call-1");
    let r1 = sign(&add("k1", &pears));
    let (first, err) = call_with(
        &c,
        "resources_add",
        &pears,
        &[(receipts::META_RECEIPT, &r1), key],
    )
    .await;
    assert!(!err, "{first}");
    c.cancel().await.unwrap();
    let c = resources_server(&db, &jwks).await;
    let r2 = sign(&add("k2", &pears));
    let (again, err) = call_with(
        &c,
        "resources_add",
        &pears,
        &[(receipts::META_RECEIPT, &r2), key],
    )
    .await;
    assert!(!err, "{again}");
    assert_eq!(again, first, "the first outcome, not a second run");
    let (text, err) = call_with(
        &c,
        "resources_add",
        &apples,
        &[(receipts::META_RECEIPT, &sign(&add("k3", &apples))), key],
    )
    .await;
    assert!(err && text.contains("idempotency key"), "{text}");
    assert_eq!(count(&c).await, 2);

    // The server says it honours keys.
    let info = c.peer_info().unwrap();
    assert!(
        info.capabilities
            .experimental
            .as_ref()
            .is_some_and(|e| e.contains_key("dev.stopgo/idempotency")),
        "{info:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_filesystem_writes_only_with_a_receipt_and_reads_without() {
    let dir = tempfile::tempdir().unwrap();
    let s = signer();
    let jwks = jwks_file(dir.path(), &s);
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("a.txt"), "hello").unwrap();
    let config = dir.path().join("fs.yaml");
    std::fs::write(
        &config,
        format!(
            "roots:\n  - {{name: docs, path: {}, allowed_tools: [\"*\"]}}\nrequire_receipts:\n  jwks: {}\n  issuer: {AGENT}\n",
            files.display(),
            jwks.display()
        ),
    )
    .unwrap();
    let c = filesystem_server(&config).await;
    let (text, err) = call_with(
        &c,
        "read_file",
        &json!({"root": "docs", "path": "a.txt"}),
        &[],
    )
    .await;
    assert!(!err && text.contains("hello"), "{text}");
    let write = json!({"root": "docs", "path": "b.txt", "content": "new"});
    let (text, err) = call_with(&c, "write_file", &write, &[]).await;
    assert!(err && text.contains("no receipt"), "{text}");
    assert!(!files.join("b.txt").exists(), "nothing written");
    let r = s
        .sign(&receipt_for(
            "f1",
            "filesystem",
            "write_file",
            &write,
            now() + 600,
        ))
        .unwrap();
    let (text, err) = call_with(&c, "write_file", &write, &[(receipts::META_RECEIPT, &r)]).await;
    assert!(!err, "{text}");
    assert_eq!(std::fs::read_to_string(files.join("b.txt")).unwrap(), "new");
    assert!(
        dir.path().join("fs.ledger.db").exists(),
        "the ledger sits beside the config"
    );
}

/// The agent's receipt reaches a server that requires one, in `_meta`:
/// the approved call runs. An agent that signs nothing gets the server's
/// refusal as the tool's result, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_requires_receipts_runs_what_the_agent_approved() {
    let dir = tempfile::tempdir().unwrap();
    let s = signer();
    let jwks = jwks_file(dir.path(), &s);
    for signs in [true, false] {
        let here = dir.path().join(if signs { "signs" } else { "silent" });
        std::fs::create_dir(&here).unwrap();
        let receipts = if signs {
            format!(
                "public_url: {AGENT}\nreceipts:\n  signing_key: {}\n  kid: r-1\n",
                root().join("testdata/card-keys/b1.pem").display()
            )
        } else {
            String::new()
        };
        let yaml = format!(
            "name: guarded\nllm: {{model: \"scripted:{rules}\"}}\nmcp_servers:\n  - name: resources\n    command: {mcp}\n    args: [--db, {db}, --require-receipts-jwks, {jwks}, --require-receipts-issuer, \"{AGENT}\"]\n{receipts}",
            rules = root().join("testdata/e2e-rules.yaml").display(),
            mcp = test_support::process::workspace_bin("mcp-resources"),
            db = here.join("resources.db").display(),
            jwks = jwks.display(),
        );
        let cfg = support::write_config(&here, &here.join("data"), &yaml);
        let a = support::Agent::serve(&cfg).await;
        let (_, body) =
            support::post_json(&a, "/conversations", json!({"message": "add apples 5"})).await;
        let uuid = support::waiting_uuid(&body);
        let (status, body) =
            support::post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
        assert_eq!(status, 200, "{body}");
        let text = body["result"]["response"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if signs {
            assert!(text.contains("\"resource\""), "{body}");
        } else {
            assert!(text.contains("no receipt"), "{body}");
            let (_, body) = support::post_json(
                &a,
                &format!(
                    "/conversations/{}/messages",
                    body["conversation"]["id"].as_str().unwrap()
                ),
                json!({"message": "list resources"}),
            )
            .await;
            assert!(
                body["result"]["response"]
                    .as_str()
                    .unwrap()
                    .contains("\"count\":0"),
                "{body}"
            );
        }
    }
}

/// Over Streamable HTTP the key may come as the `Idempotency-Key` header
/// alone (a proxy or a client that does not write `_meta`): the second
/// call with it gets the first outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_resources_honours_the_idempotency_key_header() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(test_support::process::workspace_bin("mcp-resources"));
    cmd.args(["--http", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("r.db"));
    let server = support::Process::server(cmd, "mcp-resources --http");
    let mut headers = std::collections::HashMap::new();
    headers.insert(
        reqwest::header::HeaderName::from_static("idempotency-key"),
        reqwest::header::HeaderValue::from_static("conv-9/call-9"),
    );
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("http://{}", server.ready),
        )
        .custom_headers(headers);
    let c = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_config(
            config,
        ))
        .await
        .unwrap();
    let plums = json!({"name": "plums", "value": 3});
    let (first, err) = call_with(&c, "resources_add", &plums, &[]).await;
    assert!(!err, "{first}");
    let (again, _) = call_with(&c, "resources_add", &plums, &[]).await;
    assert_eq!(again, first);
    assert_eq!(count(&c).await, 1);
}

/// A ledger that cannot be written: without `require_receipts` the server
/// runs and does not claim to honour idempotency keys; with it, it does
/// not start, naming the ledger (a receipt's single use must outlive it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_filesystem_without_a_writable_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let base = format!(
        "roots:\n  - {{name: docs, path: {}, allowed_tools: [\"*\"]}}\nledger: /proc/no-such-dir/ledger.db\n",
        files.display()
    );
    let config = dir.path().join("fs.yaml");
    std::fs::write(&config, &base).unwrap();
    let c = filesystem_server(&config).await;
    let info = c.peer_info().unwrap();
    assert!(
        !info
            .capabilities
            .experimental
            .as_ref()
            .is_some_and(|e| e.contains_key("dev.stopgo/idempotency")),
        "{info:?}"
    );
    c.cancel().await.unwrap();
    std::fs::write(
        &config,
        format!(
            "{base}require_receipts:\n  jwks: {}\n  issuer: {AGENT}\n",
            dir.path().join("jwks.json").display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(test_support::process::workspace_bin("mcp-filesystem"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ledger"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
