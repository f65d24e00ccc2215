//! Grants (REACH.md §3) with the real agent and the real `mcp-resources`:
//! an approval that carries a grant lets the next call of the same tool
//! with the same `match` values run without asking, and only those; a
//! `deny` rule still wins; a quorum rule is refused as a grant (400 naming
//! it); scope `agent` needs an admin; grants expire, are revoked (by their
//! creator or an admin), survive a restart, and are audited
//! (`grant.created`, `grant.used`, `grant.revoked`). Bad grant bodies are
//! 400s that decide nothing. Run on SQLite and, by `make unit`, PostgreSQL.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Agent, audit_rows, get_bearer, post_bearer, waiting_uuid, write_config};

const BOB: &str = "bob-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";
const OPS: &str = "ops-token-0123456789abcdef";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("BOB_T", BOB),
        ("ALICE_T", ALICE),
        ("CAROL_T", CAROL),
        ("OPS_T", OPS),
    ]
}

fn config(dir: &std::path::Path) -> std::path::PathBuf {
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
    - name: too-much
      tool: resources_add
      when: {{/value: {{min: 100}}}}
      action: deny
      reason: amounts of 100 or more go through finance
    - {{name: two-people, tool: resources_remove, action: approve, quorum: 2}}
"#,
        base = support::resources_yaml("grants-agent", dir)
    );
    write_config(dir, &dir.join("data"), &yaml)
}

async fn say(a: &Agent, conversation: Option<&str>, text: &str) -> Value {
    let path = match conversation {
        Some(id) => format!("/conversations/{id}/messages"),
        None => "/conversations".into(),
    };
    let (status, body) = post_bearer(a, BOB, &path, json!({"message": text})).await;
    assert!(status == 200 || status == 201, "{status} {body}");
    body
}

/// The last call of `tool` in a reply's conversation.
fn last_call(body: &Value, tool: &str) -> Value {
    body["conversation"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|m| m["tool_call"]["name"] == tool)
        .cloned()
        .unwrap_or_else(|| panic!("no call of {tool}: {body}"))
}

async fn decide(a: &Agent, token: &str, uuid: &str, body: Value) -> (u16, Value) {
    post_bearer(a, token, &format!("/approvals/{uuid}"), body).await
}

async fn grants(a: &Agent) -> Vec<Value> {
    get_bearer(a, BOB, "/grants").await["grants"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn delete(a: &Agent, token: &str, path: &str) -> (u16, Value) {
    let r = support::client()
        .delete(a.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_spares_the_same_call_and_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    // A process: the grant must survive its restart.
    let a = Agent::start_with_env(&cfg, &env());

    // Bob asks; Alice approves with a grant on /name.
    let body = say(&a, None, "add apples 5").await;
    let conv = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = waiting_uuid(&body);
    // Bad grants decide nothing.
    for (bad, says) in [
        (json!({"approved": true, "grant": {"for": "48h"}}), "24h"),
        (
            json!({"approved": true, "grant": {"for": "soon"}}),
            "grant.for",
        ),
        (
            json!({"approved": true, "grant": {"match": ["name"]}}),
            "JSON pointer",
        ),
        (
            json!({"approved": true, "grant": {"match": ["/nope"]}}),
            "/nope",
        ),
        (json!({"approved": true, "grant": {"match": []}}), "empty"),
        (
            json!({"approved": true, "grant": {"scope": "world"}}),
            "scope",
        ),
        (
            json!({"approved": true, "grant": {"forever": true}}),
            "grant",
        ),
        (json!({"approved": true, "grant": "yes"}), "grant"),
        (json!({"approved": false, "grant": {}}), "rejection"),
    ] {
        let (status, b) = decide(&a, ALICE, &uuid, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {b}");
        assert!(
            b["error"].as_str().unwrap_or("").contains(says),
            "{bad} → {b}"
        );
    }
    // (No Slack target is interactive here: Slack's route says so.)
    let r = support::client()
        .post(a.url("/integrations/slack/interactions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    // Scope `agent` needs an admin.
    let (status, b) = decide(
        &a,
        ALICE,
        &uuid,
        json!({"approved": true, "grant": {"scope": "agent"}}),
    )
    .await;
    assert_eq!(status, 403, "{b}");
    assert!(grants(&a).await.is_empty());
    let (status, b) = decide(
        &a,
        ALICE,
        &uuid,
        json!({"approved": true, "grant": {"scope": "conversation", "for": "1h", "match": ["/name"]}}),
    )
    .await;
    assert_eq!(status, 200, "{b}");
    assert!(
        b["result"]["response"]
            .as_str()
            .unwrap()
            .contains("resources_add answered"),
        "{b}"
    );
    let list = grants(&a).await;
    assert_eq!(list.len(), 1, "{list:?}");
    let g = &list[0];
    let id = g["id"].as_str().unwrap().to_string();
    assert_eq!(g["tool"], "resources_add");
    assert_eq!(g["server"], "resources");
    assert_eq!(g["scope"], "conversation");
    assert_eq!(g["conversation_id"], conv.as_str());
    assert_eq!(g["match"], json!(["/name"]));
    assert_eq!(g["values"], json!({"/name": "apples"}));
    assert_eq!(g["created_by"], "alice");
    assert_eq!(g["uses"], 0);
    assert_eq!(g["approval_uuid"], uuid.as_str());

    // The same name runs without asking, recorded as allowed by the grant.
    let body = say(&a, Some(&conv), "add apples 7").await;
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    let call = last_call(&body, "resources_add");
    assert_eq!(call["tool_call"]["is_error"], false, "{call}");
    assert_eq!(
        call["tool_call"]["approval"]["decided_by"],
        format!("grant:{id}"),
        "{call}"
    );
    assert_eq!(
        call["tool_call"]["approval"]["decided_via"], "grant",
        "{call}"
    );
    assert_eq!(grants(&a).await[0]["uses"], 1);
    // Another name asks.
    let body = say(&a, Some(&conv), "add pears 3").await;
    let pears = waiting_uuid(&body);
    let (status, _) = decide(&a, ALICE, &pears, json!({"approved": false})).await;
    assert_eq!(status, 200);
    // A deny rule still wins over the grant.
    let body = say(&a, Some(&conv), "add apples 500").await;
    let call = last_call(&body, "resources_add");
    assert!(
        call["tool_call"]["result"]
            .as_str()
            .unwrap_or("")
            .contains("finance"),
        "{call}"
    );
    // Another conversation asks (scope conversation).
    let body = say(&a, None, "add apples 9").await;
    let other = waiting_uuid(&body);
    decide(&a, ALICE, &other, json!({"approved": false})).await;

    // A quorum rule is never granted: 400 naming it, still pending.
    let body = say(&a, None, "delete apples").await;
    let two = waiting_uuid(&body);
    let (status, b) = decide(&a, ALICE, &two, json!({"approved": true, "grant": {}})).await;
    assert_eq!(status, 400, "{b}");
    assert!(b["error"].as_str().unwrap().contains("two-people"), "{b}");
    let waiting = get_bearer(&a, OPS, "/approvals").await;
    assert!(waiting.to_string().contains(&two), "{waiting}");

    // Revoke: not Carol (neither creator nor admin), then Alice.
    let (status, _) = delete(&a, CAROL, &format!("/grants/{id}")).await;
    assert_eq!(status, 403);
    let (status, b) = delete(&a, ALICE, &format!("/grants/{id}")).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["grant"]["revoked_by"], "alice", "{b}");
    let (status, _) = delete(&a, ALICE, &format!("/grants/{id}")).await;
    assert_eq!(status, 404);
    assert!(grants(&a).await.is_empty());
    let body = say(&a, Some(&conv), "add apples 11").await;
    assert_eq!(
        body["result"]["waiting_approval"], true,
        "revoked: it asks again: {body}"
    );
    let again = waiting_uuid(&body);

    // An admin's grant for every conversation, for 2 s: it spares a call
    // in another conversation, then expires.
    let (status, b) = decide(
        &a,
        OPS,
        &again,
        json!({"approved": true, "grant": {"scope": "agent", "for": "2s"}}),
    )
    .await;
    assert_eq!(status, 200, "{b}");
    let body = say(&a, None, "add apples 11").await;
    assert_eq!(
        body["result"]["waiting_approval"], false,
        "agent-wide: {body}"
    );
    let body = say(&a, None, "add apples 12").await;
    assert_eq!(
        body["result"]["waiting_approval"], true,
        "all arguments must match: {body}"
    );
    decide(&a, ALICE, &waiting_uuid(&body), json!({"approved": false})).await;
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let body = say(&a, None, "add apples 11").await;
    assert_eq!(body["result"]["waiting_approval"], true, "expired: {body}");
    let last = waiting_uuid(&body);

    // The audit trail.
    let rows = audit_rows(&a, OPS).await;
    let count = |e: &str| rows.iter().filter(|r| r["event"] == e).count();
    assert_eq!(count("grant.created"), 2);
    assert_eq!(count("grant.used"), 2);
    assert_eq!(count("grant.revoked"), 1);
    let used = rows.iter().find(|r| r["event"] == "grant.used").unwrap();
    assert_eq!(used["actor"], format!("grant:{id}"));
    assert_eq!(used["details"]["grant"], id.as_str());

    // A grant survives a restart.
    let (status, b) = decide(
        &a,
        ALICE,
        &last,
        json!({"approved": true, "grant": {"match": ["/name"]}}),
    )
    .await;
    assert_eq!(status, 200, "{b}");
    let conv2 = b["conversation"]["id"].as_str().unwrap().to_string();
    a.terminate();
    let a = Agent::start_with_env(&cfg, &env());
    let body = say(&a, Some(&conv2), "add apples 13").await;
    assert_eq!(
        body["result"]["waiting_approval"], false,
        "after a restart: {body}"
    );
    assert_eq!(grants(&a).await.len(), 1);
}

/// A grant made in a browser sign-in never outlives it: its expiry is
/// capped at the session's, and signing out revokes it (audited).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_ends_with_the_sign_in_it_was_made_in() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let a = Agent::serve_with_env(&cfg, &env()).await;
    let body = say(&a, None, "add apples 5").await;
    let conv = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = waiting_uuid(&body);
    let jar = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = jar
        .post(a.url("/ui/sign-in"))
        .json(&json!({"token": ALICE, "next": "/ui/approvals"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let me: Value = jar
        .get(a.url("/auth/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = jar
        .post(a.url(&format!("/approvals/{uuid}")))
        .json(&json!({"approved": true, "grant": {"for": "24h", "match": ["/name"]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let g = grants(&a).await[0].clone();
    // The session lasts 12 h (auth.session_hours): so does the grant.
    let expires = chrono::DateTime::parse_from_rfc3339(g["expires_at"].as_str().unwrap()).unwrap();
    let left = expires.signed_duration_since(chrono::Utc::now());
    assert!(
        left <= chrono::Duration::hours(12) && left > chrono::Duration::hours(11),
        "{g}"
    );
    let body = say(&a, Some(&conv), "add apples 6").await;
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    // Signing out ends it.
    let r = jar
        .post(a.url("/ui/sign-out"))
        .json(&json!({"form_token": me["form_token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(grants(&a).await.is_empty());
    let body = say(&a, Some(&conv), "add apples 7").await;
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    let revoked: Vec<Value> = audit_rows(&a, OPS)
        .await
        .into_iter()
        .filter(|r| r["event"] == "grant.revoked")
        .collect();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0]["details"]["reason"], "the granter signed out");
}

/// A request to the agent with `headers` (a bearer, or a proxy's): the
/// status and the JSON answer (null when there is none).
async fn send(
    a: &Agent,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = support::client()
        .request(method, a.url(path))
        .timeout(Duration::from_secs(30));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn at(v: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{v}: {e}"))
        .with_timezone(&chrono::Utc)
}

/// Issue 53 item 6, mode `oidc`: a grant made with a short-lived bearer
/// ends with it. Asked for 24 h, it expires no later than the token's
/// `exp`; it spares the next call while the token lives, and once the
/// token has expired the same call asks again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_made_with_a_short_lived_bearer_ends_with_it() {
    let idp = support::OidcProvider::start(None);
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: oidc
  oidc:
    issuer: {issuer}
    audience: stop-and-go
    client_id: stop-and-go-ui
    name_claim: email
    roles_claim: groups
    role_map: {{sre-oncall: approver, sre: requester}}
"#,
        base = support::resources_yaml("grants-oidc", dir.path()),
        issuer = idp.issuer,
    );
    let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    let bob = idp.token(json!({"sub": "bob", "exp_in": 600})).await;
    let bob = format!("Bearer {bob}");
    let as_bob = [("authorization", bob.as_str())];
    let minted = chrono::Utc::now();
    let alice = idp.token(json!({"sub": "alice", "exp_in": 10})).await;
    let alice = format!("Bearer {alice}");
    let as_alice = [("authorization", alice.as_str())];
    let post = reqwest::Method::POST;

    let (s, body) = send(
        &a,
        post.clone(),
        "/conversations",
        &as_bob,
        Some(json!({"message": "add apples 5"})),
    )
    .await;
    assert_eq!(s, 201, "{body}");
    let conv = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = waiting_uuid(&body);
    let grant = json!({"approved": true, "grant": {"for": "24h", "match": ["/name"]}});
    let (s, b) = send(
        &a,
        post.clone(),
        &format!("/approvals/{uuid}"),
        &as_alice,
        Some(grant),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (_, list) = send(&a, reqwest::Method::GET, "/grants", &as_bob, None).await;
    let g = &list["grants"][0];
    let expires = at(&g["expires_at"]);
    // The token's `exp` is at most 10 s (and a second's rounding) after
    // it was minted: the grant ends then, not in 24 h.
    assert!(
        expires <= minted + chrono::Duration::seconds(11) && expires > chrono::Utc::now(),
        "{g}"
    );
    assert_eq!(g["created_by"], "alice@example.test", "{g}");

    let messages = format!("/conversations/{conv}/messages");
    let (s, body) = send(
        &a,
        post.clone(),
        &messages,
        &as_bob,
        Some(json!({"message": "add apples 6"})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");

    // Past the token's life the grant is over: the same call asks.
    let wait = (expires - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(200)).await;
    let (_, list) = send(&a, reqwest::Method::GET, "/grants", &as_bob, None).await;
    assert_eq!(list["grants"], json!([]), "{list}");
    let (s, body) = send(
        &a,
        post,
        &messages,
        &as_bob,
        Some(json!({"message": "add apples 7"})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
}

/// Issue 53 item 6, mode `proxy`: the proxy says nothing about how long
/// its word holds, so a grant lasts at most an hour; and its granter,
/// demoted since (same user, groups without the role), can still revoke
/// it, while another approver who did not grant it cannot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_granter_still_revokes_their_own_grant() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: proxy
  proxy:
    user_header: X-Forwarded-Email
    groups_header: X-Forwarded-Groups
    role_map: {{readers: viewer, sre: requester, sre-oncall: approver}}
    trusted_proxies: [127.0.0.1/32, "::1/128"]
"#,
        base = support::resources_yaml("grants-proxy", dir.path())
    );
    let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    let who = |user: &'static str, groups: &'static str| {
        [("x-forwarded-email", user), ("x-forwarded-groups", groups)]
    };
    let (bob, alice, carol) = (
        who("bob", "sre"),
        who("alice", "sre-oncall"),
        who("carol", "sre-oncall"),
    );
    let post = reqwest::Method::POST;
    let (s, body) = send(
        &a,
        post.clone(),
        "/conversations",
        &bob,
        Some(json!({"message": "add apples 5"})),
    )
    .await;
    assert_eq!(s, 201, "{body}");
    let uuid = waiting_uuid(&body);
    let grant = json!({"approved": true, "grant": {"for": "24h", "match": ["/name"]}});
    let (s, b) = send(&a, post, &format!("/approvals/{uuid}"), &alice, Some(grant)).await;
    assert_eq!(s, 200, "{b}");
    let (_, list) = send(&a, reqwest::Method::GET, "/grants", &bob, None).await;
    let g = &list["grants"][0];
    let left = at(&g["expires_at"]) - chrono::Utc::now();
    assert!(
        left <= chrono::Duration::hours(1) && left > chrono::Duration::minutes(59),
        "{g}"
    );
    let id = g["id"].as_str().unwrap().to_string();
    let path = format!("/grants/{id}");

    // Another approver, who did not grant it: refused, as before.
    let (s, b) = send(&a, reqwest::Method::DELETE, &path, &carol, None).await;
    assert_eq!(s, 403, "{b}");
    // Alice, demoted to no mapped group at all (no role): she may.
    let (s, b) = send(
        &a,
        reqwest::Method::DELETE,
        &path,
        &who("alice", "former-oncall"),
        None,
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["grant"]["revoked_by"], "alice", "{b}");
    let (_, list) = send(&a, reqwest::Method::GET, "/grants", &bob, None).await;
    assert_eq!(list["grants"], json!([]), "{list}");
}
