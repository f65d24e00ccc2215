//! Signed agent cards (A2A 1.0 §8.4) against the real agent binaries.
//!
//! Ours: `a2a_card_signing` signs the card (ES256 from an environment
//! variable, EdDSA from a file) and `/.well-known/jwks.json` publishes the
//! key; the official Python SDK's verifier (`a2a.utils.signing`, a2a-sdk
//! 1.3.0) accepts the card and refuses it once changed.
//!
//! Theirs: an `a2a` entry with `trust` takes a sub-agent's card only when
//! a pinned key signed it. Between A and B sits a card server the test
//! steers (`Cache-Control: no-store`, so A reads the card at every call:
//! at its first call after starting and at every refresh): B's own card,
//! the same card changed, the card unsigned, or the card of B2 (signed by
//! another key). A delegates only while the card verifies; otherwise the
//! tool answers that delegation is held, with the reason, audited once.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use support::{Agent, client, post_json, write_config};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn key(name: &str) -> PathBuf {
    root().join("testdata/card-keys").join(name)
}

/// A scripted agent that answers every message with `reply`, its card
/// signed per `signing` (a YAML fragment, may be empty).
async fn answering(
    dir: &Path,
    name: &str,
    reply: &str,
    signing: &str,
    env: &[(&str, &str)],
) -> Agent {
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        format!("rules:\n  - match: \"(?s).*\"\n    steps:\n      - reply: \"{reply}\"\n"),
    )
    .unwrap();
    let yaml = format!(
        "name: {name}\nllm: {{model: \"scripted:{}\"}}\n{signing}",
        rules.display()
    );
    Agent::serve_with_env(&write_config(dir, &dir.join("data"), &yaml), env).await
}

fn verify_with_sdk(card_url: &str, jwks_url: &str, tamper: bool) -> Value {
    let python = root().join(".tools/a2a-sdk-1/bin/python");
    assert!(
        python.is_file(),
        "run scripts/setup.sh test (the A2A Python SDK)"
    );
    let mut cmd = std::process::Command::new(python);
    cmd.arg(root().join("testdata/a2a_interop/verify_card.py"))
        .arg(card_url)
        .arg(jwks_url);
    if tamper {
        cmd.arg("--tamper");
    }
    // Blocking: the agent it reads, served in this process, answers on
    // the runtime's other worker meanwhile.
    let out = tokio::task::block_in_place(|| cmd.output()).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_signed_card_verifies_with_the_python_sdk() {
    let pem = std::fs::read_to_string(key("b1.pem")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = answering(
        dir.path(),
        "b",
        "hi",
        "a2a_card_signing: {key: \"${CARD_KEY}\", kid: b-1}\n",
        &[("CARD_KEY", pem.as_str())],
    )
    .await;
    let card: Value = support::get_json(&b, "/.well-known/agent-card.json").await;
    let sig = &card["signatures"][0];
    assert!(
        sig["protected"].is_string() && sig["signature"].is_string(),
        "{card}"
    );
    let jwks = support::get_json(&b, "/.well-known/jwks.json").await;
    assert_eq!(jwks["keys"][0]["kid"], "b-1");
    assert_eq!(jwks["keys"][0]["kty"], "EC");
    assert!(
        jwks["keys"][0].get("d").is_none(),
        "no private part: {jwks}"
    );
    // The same card twice has the same signature (and ETag).
    let again: Value = support::get_json(&b, "/.well-known/agent-card.json").await;
    assert_eq!(again["signatures"], card["signatures"]);
    let card_url = b.url("/.well-known/agent-card.json");
    let jwks_url = b.url("/.well-known/jwks.json");
    let ok = verify_with_sdk(&card_url, &jwks_url, false);
    assert_eq!(ok["verified"], true, "{ok}");
    let bad = verify_with_sdk(&card_url, &jwks_url, true);
    assert_eq!(bad["verified"], false, "{bad}");
    // The key never shows: not in the card, the JWKS or the data dir.
    let secret_line = pem.lines().nth(1).unwrap();
    assert!(!card.to_string().contains(secret_line));
    for e in walk(&dir.path().join("data")) {
        let bytes = std::fs::read(&e).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret_line),
            "{}",
            e.display()
        );
    }

    // EdDSA from a file; the extended card is signed too.
    let dir = tempfile::tempdir().unwrap();
    let b2 = answering(
        dir.path(),
        "b2",
        "hi",
        &format!(
            "a2a_card_signing: {{key_file: \"{}\", kid: b-2}}\n",
            key("b2.pem").display()
        ),
        &[],
    )
    .await;
    let ok = verify_with_sdk(
        &b2.url("/.well-known/agent-card.json"),
        &b2.url("/.well-known/jwks.json"),
        false,
    );
    assert_eq!(ok["verified"], true, "{ok}");
    let jwks = support::get_json(&b2, "/.well-known/jwks.json").await;
    assert_eq!(jwks["keys"][0]["crv"], "Ed25519");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
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

/// What the steered card server serves.
#[derive(Clone, Copy, PartialEq)]
enum Serve {
    B,
    Changed,
    Unsigned,
    B2,
}

struct Steer {
    serve: Mutex<Serve>,
    /// Whose JWKS it publishes: B's (false) or B2's (true).
    jwks_b2: Mutex<bool>,
    /// The JWKS answers 503.
    jwks_down: Mutex<bool>,
}

/// The card server between A and B (and B2): the chosen card, never
/// cached, and a JWKS.
async fn card_server(b: &Agent, b2: &Agent, steer: Arc<Steer>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (b, b2) = (b.base.clone(), b2.base.clone());
    let cards = {
        let (b, b2, steer) = (b.clone(), b2.clone(), steer.clone());
        move || {
            let (b, b2, steer) = (b.clone(), b2.clone(), steer.clone());
            async move {
                let which = *steer.serve.lock().unwrap();
                let from = if which == Serve::B2 { &b2 } else { &b };
                let mut card: Value = client()
                    .get(format!("{from}/.well-known/agent-card.json"))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                match which {
                    Serve::Changed => card["description"] = json!("an agent that does more"),
                    Serve::Unsigned => {
                        card.as_object_mut().unwrap().remove("signatures");
                    }
                    _ => {}
                }
                (
                    [(axum::http::header::CACHE_CONTROL, "no-store")],
                    axum::Json(card),
                )
            }
        }
    };
    let jwks = move || {
        let (b, b2, steer) = (b.clone(), b2.clone(), steer.clone());
        async move {
            if *steer.jwks_down.lock().unwrap() {
                return Err(axum::http::StatusCode::SERVICE_UNAVAILABLE);
            }
            let from = if *steer.jwks_b2.lock().unwrap() {
                b2
            } else {
                b
            };
            let set: Value = client()
                .get(format!("{from}/.well-known/jwks.json"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            Ok(axum::Json(set))
        }
    };
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(cards))
        .route("/.well-known/jwks.json", axum::routing::get(jwks));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// B (its card signed with b-1) and B2 (b-2), both named `b`, behind a
/// steered card server at `url`, first serving `serve`.
struct SignedPair {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    _agents: (Agent, Agent),
    steer: Arc<Steer>,
    url: String,
}

impl SignedPair {
    async fn start(serve: Serve) -> SignedPair {
        let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let signing = |k: &str, kid: &str| {
            format!(
                "a2a_card_signing: {{key_file: \"{}\", kid: {kid}}}\n",
                key(k).display()
            )
        };
        let b = answering(dirs.0.path(), "b", "from B", &signing("b1.pem", "b-1"), &[]).await;
        let b2 = answering(
            dirs.1.path(),
            "b",
            "from B2",
            &signing("b2.pem", "b-2"),
            &[],
        )
        .await;
        let steer = Arc::new(Steer {
            serve: Mutex::new(serve),
            jwks_b2: Mutex::new(false),
            jwks_down: Mutex::new(false),
        });
        let url = card_server(&b, &b2, steer.clone()).await;
        SignedPair {
            _dirs: dirs,
            _agents: (b, b2),
            steer,
            url,
        }
    }
}

/// A with sub-agent `b` at `url`, trusting per `trust` (YAML flow map).
async fn delegating(dir: &Path, url: &str, trust: &str) -> Agent {
    Agent::serve(&delegating_config(dir, url, trust, "")).await
}

/// [`delegating`]'s config, with `more` YAML.
fn delegating_config(dir: &Path, url: &str, trust: &str, more: &str) -> PathBuf {
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"(?s)^(.*)$\"\n    steps:\n      - call: a2a_b\n        args: {message: \"$1\"}\n      - reply: \"b said: {result}\"\n",
    )
    .unwrap();
    let yaml = format!(
        "name: a\nllm: {{model: \"scripted:{}\"}}\na2a:\n  - {{name: b, url: \"{url}\", trust: {trust}}}\n{more}",
        rules.display()
    );
    write_config(dir, &dir.join("data"), &yaml)
}

async fn ask(a: &Agent) -> String {
    let (status, body) = post_json(a, "/conversations", json!({"message": "hello"})).await;
    assert_eq!(status, 201, "{body}");
    body["result"]["response"].as_str().unwrap().to_string()
}

/// [`ask`] signed in as the bearer `token`.
async fn ask_as(a: &Agent, token: &str) -> String {
    let (status, body) =
        support::post_bearer(a, token, "/conversations", json!({"message": "hello"})).await;
    assert_eq!(status, 201, "{body}");
    body["result"]["response"].as_str().unwrap().to_string()
}

/// The pin `GET /tools` shows for `a2a_b`, once `done` holds of it (the
/// card is checked in the background: at startup and every minute).
async fn card_pin(a: &Agent, token: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let tools = if token.is_empty() {
            support::get_json(a, "/tools").await
        } else {
            support::get_bearer(a, token, "/tools").await
        };
        let pin = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "a2a_b")
            .map(|t| t["pin"].clone())
            .unwrap_or(Value::Null);
        if done(&pin) {
            return pin;
        }
        assert!(std::time::Instant::now() < deadline, "not seen: {tools}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn untrusted_rows(a: &Agent) -> Vec<Value> {
    support::audit_rows(a, "")
        .await
        .into_iter()
        .filter(|r| r["event"] == "a2a.card_untrusted")
        .collect()
}

#[tokio::test]
async fn a_pinned_key_holds_delegation_to_a_card_it_did_not_sign() {
    let pair = SignedPair::start(Serve::B).await;
    let (steer, url) = (pair.steer.clone(), pair.url.clone());
    let dir = tempfile::tempdir().unwrap();
    let a = delegating(
        dir.path(),
        &url,
        &format!(
            "{{public_key_file: \"{}\", kid: b-1}}",
            key("b1.pub").display()
        ),
    )
    .await;
    // The card B signed: delegation works (the first read after start).
    assert_eq!(ask(&a).await, "b said: from B");
    // Changed under B's signature: held, with the reason, audited once.
    *steer.serve.lock().unwrap() = Serve::Changed;
    let held = ask(&a).await;
    assert!(
        held.contains("held: its agent card cannot be trusted")
            && held.contains("no signature verifies"),
        "{held}"
    );
    assert!(!held.contains("from B"), "{held}");
    let again = ask(&a).await;
    assert!(again.contains("held"), "{again}");
    let rows = untrusted_rows(&a).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["details"]["agent"], "b");
    // Unsigned while a key is pinned: held, another reason, audited.
    *steer.serve.lock().unwrap() = Serve::Unsigned;
    let held = ask(&a).await;
    assert!(held.contains("not signed"), "{held}");
    assert_eq!(untrusted_rows(&a).await.len(), 2);
    // Signed by another key (B2's, a rotation nobody pinned): held.
    *steer.serve.lock().unwrap() = Serve::B2;
    let held = ask(&a).await;
    assert!(held.contains("signed by b-2"), "{held}");
    assert!(!held.contains("from B2"), "{held}");
    // Back to the trusted card: delegation resumes at the next read.
    *steer.serve.lock().unwrap() = Serve::B;
    assert_eq!(ask(&a).await, "b said: from B");

    // Trusting the JWKS instead: a rotation the agent published is taken.
    let dir = tempfile::tempdir().unwrap();
    let a2 = delegating(
        dir.path(),
        &url,
        &format!("{{jwks_url: \"{url}/.well-known/jwks.json\"}}"),
    )
    .await;
    assert_eq!(ask(&a2).await, "b said: from B");
    *steer.serve.lock().unwrap() = Serve::B2;
    let held = ask(&a2).await;
    assert!(held.contains("signed by b-2"), "not yet published: {held}");
    *steer.jwks_b2.lock().unwrap() = true;
    assert_eq!(ask(&a2).await, "b said: from B2");
    // Its keys unavailable: held, but the card is not judged, so there is
    // nothing for an admin to accept (the pin stays the card trusted).
    *steer.jwks_down.lock().unwrap() = true;
    let held = ask(&a2).await;
    assert!(
        held.contains("its JWKS") && held.contains("503") && !held.contains("/accept"),
        "{held}"
    );
    let pin = card_pin(&a2, "", |p| !p.is_null()).await;
    assert_eq!(pin["status"], "pinned", "{pin}");
    *steer.jwks_down.lock().unwrap() = false;
    *steer.serve.lock().unwrap() = Serve::Changed;
    let held = ask(&a2).await;
    assert!(held.contains("no signature verifies"), "{held}");
}

#[test]
fn bad_signing_config_stops_the_start_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        "a2a_card_signing: {key: \"-----BEGIN PRIVATE KEY-----\", kid: k}\n",
    );
    let (status, out) = support::run_to_exit(&cfg);
    assert!(!status.success());
    assert!(out.contains("a2a_card_signing.key"), "{out}");
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &format!(
            "a2a_card_signing: {{key_file: \"{}\", kid: k}}\n",
            key("b1.pub").display()
        ),
    );
    let (status, out) = support::run_to_exit(&cfg);
    assert!(!status.success());
    assert!(out.contains("a2a_card_signing"), "{out}");
}

/// "An admin accepts the new card, as with tool pins": a card held (here
/// B2's, signed by a key nobody pinned) shows in `GET /tools` with the
/// reason and what changed; only an admin accepts it (audited); that card
/// is then trusted, across a restart, and another change is held again.
/// A card is checked at startup, so a hold shows before anyone calls.
#[tokio::test]
async fn an_admin_accepts_a_held_card_and_it_stays_accepted() {
    let pair = SignedPair::start(Serve::B).await;
    let (steer, url) = (pair.steer.clone(), pair.url.clone());
    let (carol, ops) = (
        "carol-token-0123456789abcdef",
        "ops-token-0123456789abcdef0",
    );
    let env = [("CAROL_T", carol), ("OPS_T", ops)];
    let auth = "auth:\n  mode: tokens\n  tokens:\n    - {name: carol, token: \"${CAROL_T}\", roles: [requester, approver]}\n    - {name: ops, token: \"${OPS_T}\", roles: [admin]}\n";
    let dir = tempfile::tempdir().unwrap();
    let trust = format!(
        "{{public_key_file: \"{}\", kid: b-1}}",
        key("b1.pub").display()
    );
    let cfg = delegating_config(dir.path(), &url, &trust, auth);
    // A process: the acceptance must hold across its restart.
    let a = Agent::start_with_env(&cfg, &env);
    // Checked at startup: B's card, verified, is the pin.
    let pin = card_pin(&a, carol, |p| p["status"] == "pinned").await;
    assert!(pin.get("accepted_by").is_none(), "{pin}");

    // B2's card: held, the answer says how it ends, /tools says why.
    *steer.serve.lock().unwrap() = Serve::B2;
    let held = ask_as(&a, carol).await;
    assert!(
        held.contains("signed by b-2") && held.contains("POST /tools/a2a_b/accept"),
        "{held}"
    );
    let pin = card_pin(&a, carol, |p| p["status"] == "held").await;
    assert!(
        pin["reason"].as_str().unwrap().contains("signed by b-2"),
        "{pin}"
    );
    let diff = pin["diff"].to_string();
    assert!(diff.contains("/signatures: "), "{pin}");

    // Only an admin accepts it, and only the card looked at (its digest);
    // then that card is trusted.
    let accept = "/tools/a2a_b/accept";
    let digest = pin["digest"].as_str().unwrap().to_string();
    let (status, _) = support::post_bearer(&a, carol, accept, json!({})).await;
    assert_eq!(status, 403);
    assert!(ask_as(&a, carol).await.contains("held"), "still held");
    let (status, body) =
        support::post_bearer(&a, ops, accept, json!({"digest": "0".repeat(64)})).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains(&digest),
        "names what waits: {body}"
    );
    let (status, body) = support::post_bearer(&a, ops, accept, json!({"digest": digest})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tool"]["pin"]["status"], "pinned", "{body}");
    assert_eq!(body["tool"]["pin"]["accepted_by"], "ops", "{body}");
    let (status, body) = support::post_bearer(&a, ops, accept, json!({})).await;
    assert_eq!(status, 409, "nothing left to accept: {body}");
    assert!(
        body["error"].as_str().unwrap().contains("not held"),
        "{body}"
    );
    let (status, _) = support::post_bearer(&a, ops, "/tools/a2a_nobody/accept", json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(ask_as(&a, carol).await, "b said: from B2");
    let rows = support::audit_rows(&a, ops).await;
    let accepted: Vec<&Value> = rows
        .iter()
        .filter(|r| r["event"] == "a2a.card_accepted")
        .collect();
    assert_eq!(accepted.len(), 1, "{rows:?}");
    assert_eq!(accepted[0]["actor"], "ops");
    assert_eq!(accepted[0]["details"]["agent"], "b");

    // Kept across a restart.
    drop(a);
    let a = Agent::start_with_env(&cfg, &env);
    assert_eq!(ask_as(&a, carol).await, "b said: from B2");
    // Accepting a card trusts that card only: another one is held again.
    *steer.serve.lock().unwrap() = Serve::Changed;
    assert!(ask_as(&a, carol).await.contains("held"));
    drop(a);

    // A fresh agent whose sub-agent serves an unsigned card: held and
    // audited at startup, before any call.
    *steer.serve.lock().unwrap() = Serve::Unsigned;
    let dir = tempfile::tempdir().unwrap();
    let cfg = delegating_config(dir.path(), &url, &trust, auth);
    let a = Agent::start_with_env(&cfg, &env);
    let pin = card_pin(&a, carol, |p| p["status"] == "held").await;
    assert!(
        pin["reason"].as_str().unwrap().contains("not signed"),
        "{pin}"
    );
    let rows = support::audit_rows(&a, ops).await;
    assert!(
        rows.iter().any(|r| r["event"] == "a2a.card_untrusted"),
        "{rows:?}"
    );
}

/// Replicas (REPLICAS.md): a card an admin accepted on one replica is
/// trusted by the other at its next call (the store says so), without a
/// second acceptance and with one `a2a.card_untrusted` row for the card.
#[tokio::test]
async fn a_card_accepted_on_one_replica_is_trusted_on_the_other() {
    let pair = SignedPair::start(Serve::B2).await;
    let url = pair.url.clone();
    let db = test_support::postgres::fresh_database("cards");
    let more = format!(
        "store:\n  backend: postgres\n  url: \"{db}\"\n  lease_seconds: 3\n\
         auth:\n  mode: tokens\n  tokens:\n    - {{name: ops, token: \"${{OPS_T}}\", roles: [admin, requester]}}\n"
    );
    let ops = "ops-token-0123456789abcdef0";
    let trust = format!(
        "{{public_key_file: \"{}\", kid: b-1}}",
        key("b1.pub").display()
    );
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let r1 = Agent::serve_with_env(
        &delegating_config(dirs.0.path(), &url, &trust, &more),
        &[("OPS_T", ops)],
    )
    .await;
    let r2 = Agent::serve_with_env(
        &delegating_config(dirs.1.path(), &url, &trust, &more),
        &[("OPS_T", ops)],
    )
    .await;
    assert!(ask_as(&r1, ops).await.contains("signed by b-2"));
    assert!(ask_as(&r2, ops).await.contains("signed by b-2"));
    let (status, body) = support::post_bearer(&r1, ops, "/tools/a2a_b/accept", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ask_as(&r2, ops).await, "b said: from B2");
    assert_eq!(ask_as(&r1, ops).await, "b said: from B2");
    let rows = support::audit_rows(&r2, ops).await;
    let count = |e: &str| rows.iter().filter(|r| r["event"] == e).count();
    assert_eq!(
        (count("a2a.card_untrusted"), count("a2a.card_accepted")),
        (1, 1),
        "{rows:?}"
    );
}
