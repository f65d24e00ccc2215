//! Auth mode `oidc` against a real OpenID provider (`testdata/oidc`, the
//! certified npm `oidc-provider`) and the real agent binary (AUTH.md §1,
//! §3, §5): bearer JWTs are checked for signature, issuer, audience, expiry
//! and not-before; `alg: none` and HS256 signed with the public key are
//! refused; a key rotation is picked up on the unknown `kid`; roles come
//! from the `groups` claim through `role_map`; decisions name the user.
//! (The browser sign-in is proven by Playwright: end2end/tests/oidc.spec.ts.)

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{Agent, OidcProvider, client, resources_yaml, write_config};

const CLIENT_SECRET: &str = "oidc-client-secret-0123456789";

/// The agent's config in `dir`, trusting `idp`; its secret is [`ENV`]'s.
fn config(dir: &std::path::Path, idp: &OidcProvider) -> std::path::PathBuf {
    let yaml = format!(
        r#"{base}auth:
  mode: oidc
  oidc:
    issuer: {issuer}
    audience: stop-and-go
    client_id: stop-and-go-ui
    client_secret: "${{OIDC_SECRET}}"
    name_claim: email
    roles_claim: groups
    role_map: {{sre-oncall: approver, sre: requester, platform-admins: admin}}
"#,
        base = resources_yaml("oidc-test", dir),
        issuer = idp.issuer,
    );
    write_config(dir, &dir.join("data"), &yaml)
}

const ENV: [(&str, &str); 1] = [("OIDC_SECRET", CLIENT_SECRET)];

async fn get(a: &Agent, path: &str, token: &str) -> (StatusCode, Value) {
    let r = client()
        .get(a.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let s = r.status();
    (s, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn bearer_tokens_are_checked_the_way_the_contract_says() {
    let idp = OidcProvider::start(Some(CLIENT_SECRET));
    let dir = tempfile::tempdir().unwrap();
    // A process: the secret must not reach its log.
    let a = Agent::start_with_env(&config(dir.path(), &idp), &ENV);

    // Good: RS256 and ES256 from the provider's current keys.
    for alg in ["RS256", "ES256"] {
        let t = idp.token(json!({"sub": "alice", "alg": alg})).await;
        let (s, v) = get(&a, "/approvals", &t).await;
        assert_eq!(s, StatusCode::OK, "{alg}: {v}");
    }
    let t = idp.token(json!({"sub": "alice"})).await;
    let me = get(&a, "/auth/me", &t).await.1;
    assert_eq!(me["name"], "alice@example.test", "{me}");
    assert_eq!(me["roles"], json!(["approver"]), "{me}");
    assert_eq!(me["can_decide"], true);
    // A real provider-issued token (client_credentials): valid, but its
    // principal has no groups, hence no role.
    let cc = idp.control("client-credentials-token", json!({})).await;
    let (s, v) = get(&a, "/approvals", cc["token"].as_str().unwrap()).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{v}");

    // Bad: each is a 401 with invalid_token, and nothing else is learned.
    let bad = [
        ("expired", json!({"sub": "alice", "exp_in": -120})),
        ("not yet valid", json!({"sub": "alice", "nbf_in": 120})),
        (
            "wrong audience",
            json!({"sub": "alice", "aud": "someone-else"}),
        ),
        (
            "wrong issuer",
            json!({"sub": "alice", "iss": "http://127.0.0.1:9/"}),
        ),
        ("alg none", json!({"sub": "carol", "alg": "none"})),
        (
            "HS256 with the public key (PEM)",
            json!({"sub": "carol", "alg": "HS256"}),
        ),
        (
            "HS256 with the public key (PKCS#1)",
            json!({"sub": "carol", "alg": "HS256", "hs_secret_from": "pem_pkcs1"}),
        ),
        (
            "HS256 with the public key (JWK)",
            json!({"sub": "carol", "alg": "HS256", "hs_secret_from": "jwk"}),
        ),
        (
            "a key not in the JWKS",
            json!({"sub": "carol", "unknown_key": true}),
        ),
        (
            "a kid of another key",
            json!({"sub": "carol", "kid": "no-such-kid"}),
        ),
    ];
    // Each from its own loopback address: ten failures a minute from one
    // address are a 429, which is not what is tested here.
    for (i, (what, spec)) in bad.into_iter().enumerate() {
        let t = idp.token(spec).await;
        let r = from(&format!("127.0.1.{}", i + 1))
            .get(a.url("/approvals"))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{what}");
        assert!(
            r.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .contains("invalid_token"),
            "{what}"
        );
    }
    // Garbage is not a JWT.
    let r = from("127.0.2.1")
        .get(a.url("/approvals"))
        .bearer_auth("not.a.jwt")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // Rotation: the new key's tokens work at once (the unknown kid makes
    // the agent refetch the JWKS); with the old key dropped, old tokens fail.
    let old = idp.token(json!({"sub": "alice"})).await;
    let rotated = idp.control("rotate", json!({"keep_old": false})).await;
    assert!(rotated["kid"].is_string(), "{rotated}");
    let new = idp.token(json!({"sub": "alice"})).await;
    let (s, v) = get(&a, "/approvals", &new).await;
    assert_eq!(s, StatusCode::OK, "after rotation: {v}");
    let r = from("127.0.2.2")
        .get(a.url("/approvals"))
        .bearer_auth(&old)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::UNAUTHORIZED,
        "a token of a dropped key"
    );

    // The client secret is nowhere the agent writes.
    assert!(!a.log().contains(CLIENT_SECRET));
    for entry in walk(&dir.path().join("data")) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes
                .windows(CLIENT_SECRET.len())
                .any(|w| w == CLIENT_SECRET.as_bytes()),
            "the client secret is in {}",
            entry.display()
        );
    }
}

#[tokio::test]
async fn a_decision_names_the_user_the_provider_vouched_for() {
    let idp = OidcProvider::start(None);
    let dir = tempfile::tempdir().unwrap();
    let a = Agent::serve_with_env(&config(dir.path(), &idp), &ENV).await;
    let bob = idp.token(json!({"sub": "bob"})).await;
    let alice = idp.token(json!({"sub": "alice"})).await;
    let r = client()
        .post(a.url("/conversations"))
        .bearer_auth(&bob)
        .json(&json!({"message": "add apples 5"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.unwrap();
    let uuid = v["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        v["conversation"]["pending_approval"]["requested_by"],
        "bob@example.test"
    );
    // bob is a requester: he may not decide.
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(&bob)
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(&alice)
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    let outcome = support::approval_outcome(&v, &uuid);
    assert_eq!(outcome["decided_by"], "alice@example.test");
    assert_eq!(outcome["decided_via"], "rest");
}

/// A client whose requests come from `ip` (any 127/8 address is loopback).
fn from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
