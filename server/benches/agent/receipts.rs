//! Receipts (RECEIPTS.md §4), `BENCH_ONLY=receipts`:
//!
//! - the approval round trip (`POST /approvals/:uuid` until the tool's
//!   result is back) on an agent that signs receipts for an
//!   `mcp-resources` that requires them, beside the same on an agent
//!   without receipts and a server that requires none, alternating;
//! - the executor's check: `receipts::verify` (the function both built-in
//!   servers call, with the agent's keys already cached) on one receipt,
//!   and the agent's signing beside it.

use super::{Agent, pct, post_json};
use serde_json::json;
use std::time::{Duration, Instant};

/// The scripted agent on `mcp-resources`; with `signing`, it signs
/// receipts (as `http://bench.test`) and the server requires them.
fn agent(signing: Option<(&std::path::Path, &std::path::Path)>, db: &std::path::Path) -> Agent {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let rules = root.join("testdata/e2e-rules.yaml");
    let mcp = test_support::process::workspace_bin("mcp-resources");
    let extra = match signing {
        Some((key, jwks)) => format!(
            "public_url: http://bench.test\nreceipts:\n  signing_key: {}\nmcp_servers:\n  - name: resources\n    command: {mcp}\n    args: [--db, {}, --require-receipts-jwks, {}, --require-receipts-issuer, \"http://bench.test\"]\n",
            key.display(),
            db.display(),
            jwks.display()
        ),
        None => format!(
            "mcp_servers:\n  - name: resources\n    command: {mcp}\n    args: [--db, {}]\n",
            db.display()
        ),
    };
    Agent::start_model(
        &format!("scripted:{}", rules.display()),
        "http://127.0.0.1:9",
        false,
        &extra,
        &[],
    )
}

/// One approval's round trip on `base`: the decision until its answer.
async fn round_trip(http: &reqwest::Client, base: &str, i: usize) -> Duration {
    let r = post_json(
        http,
        format!("{base}/conversations"),
        json!({"message": format!("add b{i} {i}")}),
    )
    .await;
    let uuid = r["result"]["approval"]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("an approval: {r}"))
        .to_string();
    let t = Instant::now();
    let d = post_json(
        http,
        format!("{base}/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    let took = t.elapsed();
    let said = d["result"]["response"].as_str().unwrap_or_default();
    assert!(said.contains("\"resource\""), "the call ran: {d}");
    took
}

pub(crate) async fn rows(
    http: &reqwest::Client,
    rows: &mut Vec<(String, String, String)>,
    quick: bool,
) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let key = root.join("testdata/card-keys/b1.pem");
    let signer = receipts::Signer::from_pem(&std::fs::read_to_string(&key).unwrap(), "").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [signer.jwk()]}).to_string()).unwrap();
    let signing = agent(Some((&key, &jwks)), &dir.path().join("signed.db"));
    let plain = agent(None, &dir.path().join("plain.db"));
    let n = if quick { 30 } else { 200 };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..n + 10 {
        let w = round_trip(http, &signing.base, i).await;
        let wo = round_trip(http, &plain.base, i).await;
        if i >= 10 {
            with.push(w);
            without.push(wo);
        }
    }
    with.sort();
    without.sort();
    let (w, wo) = (pct(&with, 0.5), pct(&without, 0.5));
    rows.push((
        format!("approval round trip, receipts signed and required vs none, p50 ({n} each)"),
        format!("{w:.2} vs {wo:.2} ms ({:.2}x)", w / wo),
        "<= 1.1x".into(),
    ));

    // The executor's check, keys cached.
    let args = json!({"name": "apples", "value": 5});
    let receipt = receipts::Receipt {
        iss: "http://bench.test".into(),
        jti: "bench".into(),
        iat: 0,
        exp: i64::MAX / 2,
        txn: "c".into(),
        act: receipts::Actor {
            sub: "bench".into(),
        },
        authorization_details: vec![receipts::Detail::approved(
            "resources",
            "resources_add",
            &args,
        )],
        approvers: vec![receipts::Approver {
            sub: "alice".into(),
            via: "ui".into(),
            at: "2026-12-07T10:00:00Z".into(),
        }],
        policy: receipts::Policy {
            rule: "annotation".into(),
            sha256: "x".into(),
        },
        chain: Vec::new(),
    };
    let jws = signer.sign(&receipt).unwrap();
    let keys = receipts::Keys::from_jwks(&json!({"keys": [signer.jwk()]})).unwrap();
    let now = chrono::Utc::now().timestamp();
    let expect = receipts::Expect::call(
        "http://bench.test",
        "resources",
        "resources_add",
        &args,
        now,
    );
    let mut took = Vec::new();
    for i in 0..(if quick { 500 } else { 5000 }) {
        let t = Instant::now();
        let ok = receipts::verify(Some(&jws), &keys, &expect);
        let d = t.elapsed();
        assert!(ok.is_ok(), "{ok:?}");
        if i >= 100 {
            took.push(d);
        }
    }
    took.sort();
    let mut signing = Vec::new();
    for _ in 0..took.len() {
        let t = Instant::now();
        let s = signer.sign(&receipt);
        signing.push(t.elapsed());
        assert!(s.is_ok());
    }
    signing.sort();
    rows.push((
        format!(
            "agent's receipt signing (ES256), p50 / p99 ({})",
            signing.len()
        ),
        format!("{:.3} / {:.3} ms", pct(&signing, 0.5), pct(&signing, 0.99)),
        "(in the round trip)".into(),
    ));
    rows.push((
        format!(
            "executor's receipt check (receipts::verify, keys cached), p50 / p99 ({})",
            took.len()
        ),
        format!("{:.3} / {:.3} ms", pct(&took, 0.5), pct(&took, 0.99)),
        "p99 < 1 ms".into(),
    ));
}
