//! Auth mode `tokens` and cross-site protection, against the real agent
//! binary (AUTH.md §2–§5, §7): the route × role matrix, separation of
//! duties over REST and A2A, who decided, and the audit trail's verify.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::matrix::{self, Caller, bearer};
use support::{Agent, client, resources_yaml, write_config};

const VIEWER: &str = "viewer-token-0123456789";
const BOB: &str = "bob-requester-token-0123";
const ALICE: &str = "alice-approver-token-012";
const CAROL: &str = "carol-both-roles-token-0";
const OPS: &str = "ops-admin-token-012345678";

/// The operator tokens, as the agent reads them from the environment.
const ENV: [(&str, &str); 5] = [
    ("VIEWER_T", VIEWER),
    ("BOB_T", BOB),
    ("ALICE_T", ALICE),
    ("CAROL_T", CAROL),
    ("OPS_T", OPS),
];

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: vera, token: "${{VIEWER_T}}", roles: [viewer]}}
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [requester, approver]}}
    - {{name: ops, token: "${{OPS_T}}", roles: [admin]}}
"#,
        base = resources_yaml("auth-test", dir)
    );
    write_config(dir, &dir.join("data"), &yaml)
}

/// The agent as a process: for a test of its log.
fn start(dir: &std::path::Path) -> Agent {
    Agent::start_with_env(&config(dir), &ENV)
}

async fn serve(dir: &std::path::Path) -> Agent {
    Agent::serve_with_env(&config(dir), &ENV).await
}

async fn call(
    a: &Agent,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut r = client().request(method.parse().unwrap(), a.url(path));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `GET /conversations/:id` as `token`.
async fn conversation(a: &Agent, cid: &str, token: &str) -> Value {
    call(
        a,
        "GET",
        &format!("/conversations/{cid}"),
        Some(token),
        None,
    )
    .await
    .1
}

/// Starts a conversation as `token` that waits for approval; its uuid.
async fn pending_by(a: &Agent, token: &str) -> (String, String) {
    let (s, v) = call(
        a,
        "POST",
        "/conversations",
        Some(token),
        Some(json!({"message": "add apples 5"})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let uuid = v["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    (v["conversation"]["id"].as_str().unwrap().to_string(), uuid)
}

#[tokio::test]
async fn every_route_answers_401_403_or_200_as_the_role_table_says() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    let (cid, _uuid) = pending_by(&a, BOB).await;
    let callers = [
        ("vera", VIEWER, &["viewer"][..]),
        ("bob", BOB, &["requester"]),
        ("alice", ALICE, &["approver"]),
        ("carol", CAROL, &["requester", "approver"]),
        ("ops", OPS, &["admin"]),
    ]
    .map(|(name, token, roles)| Caller {
        name,
        creds: bearer(token),
        roles,
    });
    matrix::check(&a, &cid, &callers).await;
    // A token that is none of ours: 401, like no token.
    let (s, v) = call(&a, "GET", "/approvals", Some("not-a-token-at-all-xx"), None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
    // Open routes.
    for p in [
        "/health",
        "/.well-known/agent-card.json",
        "/.well-known/agent.json",
        "/ui/sign-in",
    ] {
        let (s, _) = call(&a, "GET", p, None, None).await;
        assert_eq!(s, StatusCode::OK, "{p}");
    }
    let (_, h) = call(&a, "GET", "/health", None, None).await;
    assert_eq!(h, json!({"status": "ok"}));
    let card: Value = call(&a, "GET", "/.well-known/agent-card.json", None, None)
        .await
        .1;
    assert!(card.get("securitySchemes").is_some(), "{card}");
    // Pages redirect to sign-in.
    let noredirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = noredirect.get(a.url("/ui/approvals")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/ui/sign-in?next=/ui/approvals");
    let r = noredirect
        .get(a.url("/ui/audit"))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn decisions_record_who_and_respect_separation_of_duties() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    // A requester cannot decide at all.
    let (_, uuid) = pending_by(&a, BOB).await;
    let (s, v) = call(
        &a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(BOB),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{v}");
    // Carol raised hers: she may not decide it, alice may.
    let (cid, uuid) = pending_by(&a, CAROL).await;
    let (s, v) = call(
        &a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(CAROL),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("separation of duties"),
        "{v}"
    );
    let c = conversation(&a, &cid, CAROL).await;
    assert_eq!(
        c["conversation"]["pending_approval"]["requested_by"], "carol",
        "{c}"
    );
    let (s, v) = call(
        &a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(ALICE),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let outcome = support::approval_outcome(&v, &uuid);
    assert_eq!(outcome["decided_by"], "alice", "{outcome}");
    assert_eq!(outcome["decided_via"], "rest");
    assert_eq!(outcome["requested_by"], "carol");
    assert!(outcome["decided_at"].is_string());
    // Over A2A: the requester's continuation is refused and stays pending.
    let (cid, uuid) = pending_by(&a, CAROL).await;
    let msg = |token: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"role": "user", "messageId": format!("m-{token}"), "taskId": cid, "parts": [{"kind": "text", "text": "approve"}]}}});
        client()
            .post(a.url("/a2a"))
            .bearer_auth(token.to_string())
            .json(&body)
            .send()
    };
    let r = msg(CAROL).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("separation of duties"),
        "{v}"
    );
    let c = conversation(&a, &cid, CAROL).await;
    assert_eq!(c["conversation"]["pending_approval"]["uuid"], uuid.as_str());
    let r = msg(ALICE).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let c = conversation(&a, &cid, CAROL).await;
    assert!(c["conversation"].get("pending_approval").is_none(), "{c}");
    // An admin may override, and the trail says so.
    let (_, uuid) = pending_by(&a, OPS).await;
    let (s, _) = call(
        &a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(OPS),
        Some(json!({"approved": false})),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let text = client()
        .get(a.url("/audit?format=jsonl"))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decided: Vec<&Value> = rows
        .iter()
        .filter(|r| r["event"] == "approval.decided")
        .collect();
    assert!(
        decided
            .iter()
            .any(|r| r["actor"] == "alice" && r["details"]["via"] == "a2a"),
        "{decided:?}"
    );
    assert!(
        decided
            .iter()
            .any(|r| r["actor"] == "ops" && r["details"]["override"] == "separation_of_duties")
    );
    for e in [
        "config.loaded",
        "conversation.created",
        "message.sent",
        "approval.requested",
        "approval.decided",
        "tool.executed",
        "auth.denied",
    ] {
        assert!(rows.iter().any(|r| r["event"] == e), "no {e} row");
    }
    // Operator tokens never reach the log or the database.
    drop(a);
    let db = std::fs::read(dir.path().join("data/agent.db")).unwrap();
    let wal = std::fs::read(dir.path().join("data/agent.db-wal")).unwrap_or_default();
    for t in [VIEWER, BOB, ALICE, CAROL, OPS] {
        assert!(
            !db.windows(t.len()).any(|w| w == t.as_bytes()),
            "token in the db"
        );
        assert!(
            !wal.windows(t.len()).any(|w| w == t.as_bytes()),
            "token in the wal"
        );
    }
}

#[tokio::test]
async fn sign_in_sessions_rate_limits_and_cross_site_requests() {
    let dir = tempfile::tempdir().unwrap();
    let a = start(dir.path());
    // Cross-site: text/plain and forms → 415, foreign Origin → 403, curl-like → fine.
    let (_, uuid) = pending_by(&a, BOB).await;
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(ALICE)
        .header("content-type", "text/plain")
        .body(r#"{"approved":true}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(ALICE)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("approved=true")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(ALICE)
        .header("origin", "http://evil.example")
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let page = client().get(a.url("/ui/sign-in")).send().await.unwrap();
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    // Sign in with a token: a session cookie, then pages work with it.
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
    assert_eq!(r.status(), StatusCode::OK);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("stopgo_session=")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let me: Value = jar
        .get(a.url("/auth/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["name"], "alice");
    let r = jar.get(a.url("/ui/approvals")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (s, _) = {
        let r = jar
            .post(a.url(&format!("/approvals/{uuid}")))
            .json(&json!({"approved": false}))
            .send()
            .await
            .unwrap();
        (r.status(), ())
    };
    assert_eq!(s, StatusCode::OK);
    // Signing out needs this browser's form token (REACH.md §1), which
    // `/auth/me` gives the page.
    let r = jar.post(a.url("/ui/sign-out")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let token = me["form_token"].as_str().unwrap().to_string();
    let r = jar
        .post(a.url("/ui/sign-out"))
        .json(&json!({"form_token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        jar.get(a.url("/ui/approvals"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::SEE_OTHER
    );
    // Ten failures a minute, then 429 for that address.
    let mut last = StatusCode::OK;
    for _ in 0..12 {
        last = client()
            .post(a.url("/ui/sign-in"))
            .json(&json!({"token": "wrong-token-wrong-token"}))
            .send()
            .await
            .unwrap()
            .status();
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
    let r = client()
        .get(a.url("/conversations"))
        .bearer_auth("wrong-token-wrong-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key("retry-after"));
    // Another address is not locked out.
    let elsewhere = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let r = elsewhere
        .post(a.url("/ui/sign-in"))
        .json(&json!({"token": ALICE}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "another address was locked out");
    // The log holds no token or cookie value.
    let log = a.log();
    let session_value = cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("stopgo_session=");
    for t in [ALICE, BOB, session_value] {
        assert!(!log.contains(t), "a secret reached the log");
    }
    // Nor does the database: sessions are stored as digests. (The session
    // value is 32 random bytes, so it cannot be there by chance.)
    let data = dir.path().join("data");
    for f in ["agent.db", "agent.db-wal"] {
        let bytes = std::fs::read(data.join(f)).unwrap_or_default();
        for t in [ALICE, session_value] {
            assert!(
                !bytes.windows(t.len()).any(|w| w == t.as_bytes()),
                "a secret is in {f}"
            );
        }
    }
}

/// Starts the agent of `cfg`, has bob ask and alice approve, and stops it:
/// a trail with every decision event in it.
async fn one_decision(cfg: &std::path::Path, env: &[(&str, &str)]) {
    let a = Agent::start_with_env(cfg, env);
    let (_, uuid) = pending_by(&a, BOB).await;
    let (s, v) = call(
        &a,
        "POST",
        &format!("/approvals/{uuid}"),
        Some(ALICE),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    a.terminate();
}

/// `agent audit verify --config cfg`: the exit code and what it printed.
fn audit_verify(cfg: &std::path::Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.args(["audit", "verify", "--config"]).arg(cfg);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[tokio::test]
async fn audit_verify_passes_then_names_an_edited_deleted_or_reordered_row() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    one_decision(&cfg, &ENV).await;
    let verify = || audit_verify(&cfg, &ENV);
    let (code, out) = verify();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("intact"), "{out}");
    let db = dir.path().join("data/agent.db");
    let edit = |sql: &str| {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(sql).unwrap();
    };
    // Flush the WAL into the file so a copy of it holds every row.
    edit("PRAGMA wal_checkpoint(TRUNCATE);");
    let snapshot = std::fs::read(&db).unwrap();
    let restore = || {
        let _ = std::fs::remove_file(dir.path().join("data/agent.db-wal"));
        let _ = std::fs::remove_file(dir.path().join("data/agent.db-shm"));
        std::fs::write(&db, &snapshot).unwrap();
    };
    for (sql, bad) in [
        ("UPDATE audit SET actor = 'mallory' WHERE seq = 3", "seq 3"),
        ("DELETE FROM audit WHERE seq = 2", "seq 2"),
        (
            "UPDATE audit SET seq = 100 WHERE seq = 2; UPDATE audit SET seq = 2 WHERE seq = 3; UPDATE audit SET seq = 3 WHERE seq = 100",
            "seq 2",
        ),
        (
            "INSERT INTO audit (seq, at, actor, event, details, prev_hash, hash) SELECT 1000, at, 'x', 'approval.decided', '{}', hash, hash FROM audit ORDER BY seq DESC LIMIT 1",
            "seq",
        ),
    ] {
        restore();
        edit(sql);
        let (code, out) = verify();
        assert_eq!(code, Some(1), "{sql}: {out}");
        assert!(out.contains(bad), "{sql}: {out}");
    }
}

#[tokio::test]
async fn with_an_audit_key_a_chain_recomputed_without_it_is_still_detected() {
    let dir = tempfile::tempdir().unwrap();
    let plain = config(dir.path());
    let text = std::fs::read_to_string(&plain).unwrap();
    let keyed = dir.path().join("keyed.yaml");
    std::fs::write(&keyed, format!("{text}audit:\n  key: \"${{AUDIT_KEY}}\"\n")).unwrap();
    let mut env = ENV.to_vec();
    env.push(("AUDIT_KEY", "audit-key-kept-in-a-vault-0123"));
    one_decision(&keyed, &env).await;
    let verify = |cfg: &std::path::Path| audit_verify(cfg, &env);
    assert_eq!(verify(&keyed).0, Some(0));
    // Without the key the keyed chain does not verify: the hashes are HMACs.
    assert_eq!(verify(&plain).0, Some(1));

    // The attack: rewrite who decided, then recompute every hash the way
    // the (public) unkeyed algorithm does.
    let db = dir.path().join("data/agent.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE audit SET actor = 'mallory' WHERE event = 'approval.decided'",
        [],
    )
    .unwrap();
    type Cols = (
        i64,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        String,
    );
    let rows: Vec<Cols> = c
        .prepare("SELECT seq, at, actor, event, conversation_id, approval_uuid, details FROM audit ORDER BY seq")
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut prev = server::store::audit::GENESIS.to_string();
    for (seq, at, actor, event, cid, auuid, details) in rows {
        let details: Value = serde_json::from_str(&details).unwrap();
        let canonical = server::store::audit::canonical_row(
            seq,
            &at,
            &actor,
            &event,
            cid.as_deref(),
            auuid.as_deref(),
            &details,
        );
        let hash = server::store::audit::chain_hash(None, &prev, &canonical);
        c.execute(
            "UPDATE audit SET prev_hash = ?1, hash = ?2 WHERE seq = ?3",
            rusqlite::params![prev, hash, seq],
        )
        .unwrap();
        prev = hash;
    }
    drop(c);
    // The forgery is consistent: a verifier without the key accepts it...
    let (code, out) = verify(&plain);
    assert_eq!(
        code,
        Some(0),
        "the recomputation is not what an attacker would do: {out}"
    );
    // ...and the keyed verify names the first row.
    let (code, out) = verify(&keyed);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("seq 1"), "{out}");
}

/// `next` and `back` with TAB, CR or LF (which browsers drop, turning
/// `/<TAB>/evil.example` into `//evil.example`) stay on this site: the
/// sign-in page's hidden field, the JSON sign-in's answer, and the "Back"
/// link of the refused page.
#[tokio::test]
async fn sign_in_and_back_targets_with_control_characters_stay_local() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path()).await;
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // The refused page is for a signed-in browser.
    let signed_in = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = signed_in
        .post(a.url("/ui/sign-in"))
        .json(&json!({"token": VIEWER}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    for raw in [
        "/%09/evil.example",
        "/%0D/evil.example",
        "/%0A/evil.example",
        "%09//evil.example",
        "/%09%5Cevil.example",
    ] {
        let page = page_text(&no_redirect, &a.url(&format!("/ui/sign-in?next={raw}"))).await;
        assert!(
            !page.contains("evil.example"),
            "sign-in page with next={raw}: {page}"
        );
        let page = page_text(&signed_in, &a.url(&format!("/ui/refused?back={raw}"))).await;
        assert!(
            page.contains(r#"id="refused-back" href="/""#),
            "refused page with back={raw}: {page}"
        );
        assert!(
            !page.contains("evil.example"),
            "refused page with back={raw}: {page}"
        );
    }
    for next in [
        "/\t/evil.example",
        "/\r/evil.example",
        "/\n/evil.example",
        "\t//evil.example",
    ] {
        let r = no_redirect
            .post(a.url("/ui/sign-in"))
            .json(&json!({"token": ALICE, "next": next}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["next"], "/", "{next:?}");
    }
}

/// The body of the page at `url`, as `c` sees it.
async fn page_text(c: &reqwest::Client, url: &str) -> String {
    c.get(url).send().await.unwrap().text().await.unwrap()
}
