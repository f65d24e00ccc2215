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

mod support;

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
fn answering(dir: &Path, name: &str, reply: &str, signing: &str, env: &[(&str, &str)]) -> Agent {
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
    Agent::start_with_env(&write_config(dir, &dir.join("data"), &yaml), env)
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
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn our_signed_card_verifies_with_the_python_sdk() {
    let pem = std::fs::read_to_string(key("b1.pem")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = answering(
        dir.path(),
        "b",
        "hi",
        "a2a_card_signing: {key: \"${CARD_KEY}\", kid: b-1}\n",
        &[("CARD_KEY", pem.as_str())],
    );
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
    );
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
            axum::Json(set)
        }
    };
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(cards))
        .route("/.well-known/jwks.json", axum::routing::get(jwks));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A with sub-agent `b` at `url`, trusting per `trust` (YAML flow map).
fn delegating(dir: &Path, url: &str, trust: &str) -> Agent {
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"(?s)^(.*)$\"\n    steps:\n      - call: a2a_b\n        args: {message: \"$1\"}\n      - reply: \"b said: {result}\"\n",
    )
    .unwrap();
    let yaml = format!(
        "name: a\nllm: {{model: \"scripted:{}\"}}\na2a:\n  - {{name: b, url: \"{url}\", trust: {trust}}}\n",
        rules.display()
    );
    Agent::start(&write_config(dir, &dir.join("data"), &yaml))
}

async fn ask(a: &Agent) -> String {
    let (status, body) = post_json(a, "/conversations", json!({"message": "hello"})).await;
    assert_eq!(status, 201, "{body}");
    body["result"]["response"].as_str().unwrap().to_string()
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
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = answering(
        d1.path(),
        "b",
        "from B",
        &format!(
            "a2a_card_signing: {{key_file: \"{}\", kid: b-1}}\n",
            key("b1.pem").display()
        ),
        &[],
    );
    let b2 = answering(
        d2.path(),
        "b",
        "from B2",
        &format!(
            "a2a_card_signing: {{key_file: \"{}\", kid: b-2}}\n",
            key("b2.pem").display()
        ),
        &[],
    );
    let steer = Arc::new(Steer {
        serve: Mutex::new(Serve::B),
        jwks_b2: Mutex::new(false),
    });
    let url = card_server(&b, &b2, steer.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let a = delegating(
        dir.path(),
        &url,
        &format!(
            "{{public_key_file: \"{}\", kid: b-1}}",
            key("b1.pub").display()
        ),
    );
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
    );
    assert_eq!(ask(&a2).await, "b said: from B");
    *steer.serve.lock().unwrap() = Serve::B2;
    let held = ask(&a2).await;
    assert!(held.contains("signed by b-2"), "not yet published: {held}");
    *steer.jwks_b2.lock().unwrap() = true;
    assert_eq!(ask(&a2).await, "b said: from B2");
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
