//! Auth mode `proxy`, against the real agent binary (AUTH.md §1–§3): an
//! authenticating proxy (oauth2-proxy and the like) vouches for the user in
//! headers, which count only from `trusted_proxies`. The route × role
//! matrix as the headers' groups map to roles; the same headers from any
//! other address are a 401.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::matrix::{self, Caller, Creds};
use support::{Agent, resources_yaml, write_config};

fn proxied(email: &str, groups: &str) -> Creds {
    vec![
        ("x-forwarded-email".into(), email.into()),
        ("x-forwarded-groups".into(), groups.into()),
    ]
}

async fn serve(dir: &std::path::Path) -> Agent {
    let yaml = format!(
        r#"{base}auth:
  mode: proxy
  proxy:
    user_header: X-Forwarded-Email
    groups_header: X-Forwarded-Groups
    role_map: {{readers: viewer, sre: requester, sre-oncall: approver, platform-admins: admin}}
    trusted_proxies: [127.0.0.1/32, "::1/128"]
"#,
        base = resources_yaml("proxy-test", dir)
    );
    Agent::serve(&write_config(dir, &dir.join("data"), &yaml)).await
}

async fn post(a: &Agent, creds: &Creds, path: &str, body: Value) -> (StatusCode, Value) {
    let mut r = support::client().post(a.url(path)).json(&body);
    for (k, v) in creds {
        r = r.header(k.as_str(), v.as_str());
    }
    let resp = r.send().await.unwrap();
    let s = resp.status();
    (s, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_proxy_headers_map_to_roles_route_by_route() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    let bob = proxied("bob@example.test", "sre");
    let (s, v) = post(
        &a,
        &bob,
        "/conversations",
        json!({"message": "add apples 5"}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let cid = v["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = v["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let callers = [
        Caller {
            name: "vera",
            creds: proxied("vera@example.test", "readers"),
            roles: &["viewer"],
        },
        Caller {
            name: "bob",
            creds: bob.clone(),
            roles: &["requester"],
        },
        Caller {
            name: "alice",
            creds: proxied("alice@example.test", "sre-oncall, unrelated"),
            roles: &["approver"],
        },
        Caller {
            name: "carol",
            creds: proxied("carol@example.test", "platform-admins"),
            roles: &["admin"],
        },
        // Known to the proxy, but in no mapped group: no role at all.
        Caller {
            name: "mallory",
            creds: proxied("mallory@example.test", "contractors"),
            roles: &[],
        },
    ];
    matrix::check(&a, &cid, &callers).await;

    // The proxy's user decides; the record names them.
    let alice = proxied("alice@example.test", "sre-oncall");
    let (s, v) = post(
        &a,
        &alice,
        &format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let outcome = support::approval_outcome(&v, &uuid);
    assert_eq!(outcome["decided_by"], "alice@example.test");
    assert_eq!(outcome["requested_by"], "bob@example.test");
    assert_eq!(outcome["decided_via"], "rest");
}

#[tokio::test]
async fn identity_headers_from_an_untrusted_address_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    // 127.0.0.2 is loopback but not in trusted_proxies.
    let outsider = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let r = outsider
        .get(a.url("/approvals"))
        .header("X-Forwarded-Email", "carol@example.test")
        .header("X-Forwarded-Groups", "platform-admins")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("trusted_proxies"),
        "{v}"
    );
    // A forged groups header alone is refused the same way.
    let r = outsider
        .get(a.url("/approvals"))
        .header("X-Forwarded-Groups", "platform-admins")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // From the proxy's own address the same headers work.
    let r = support::client()
        .get(a.url("/approvals"))
        .header("X-Forwarded-Email", "carol@example.test")
        .header("X-Forwarded-Groups", "platform-admins")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A bearer token means nothing in proxy mode.
    let r = support::client()
        .get(a.url("/approvals"))
        .bearer_auth("some-token-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}
