//! Three agents in a chain with auth on at every hop (AUTH.md §6): each
//! agent authorizes the credential it receives, which is the credential
//! configured for that sub-agent (`headers:` on the `a2a` entry), never
//! the operator's own token. The human decides at the top; the decision
//! travels down as A2A continuations that each hop authorizes again.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use server::llm::scripted::Rules;
use support::{Agent, client, write_config};
use test_support::fake_llm::FakeState;

// Operator tokens at A, and each hop's own service credential.
const BOB_AT_A: &str = "bob-requester-at-a-0123";
const ALICE_AT_A: &str = "alice-approver-at-a-012";
const A_AT_B: &str = "agent-a-credential-at-b-01";
const B_ADMIN: &str = "b-admin-token-0123456789";
const B_AT_C: &str = "agent-b-credential-at-c-01";
const C_ADMIN: &str = "c-admin-token-0123456789";

/// An agent from `yaml` in `dir`, its secrets from `env`.
fn start(dir: &std::path::Path, yaml: &str, env: &[(&str, &str)]) -> Agent {
    Agent::start_with_env(&write_config(dir, &dir.join("data"), yaml), env)
}

#[tokio::test]
async fn each_hop_authorizes_its_own_credential_and_the_decision_travels_down() {
    let fake = FakeState::new(Rules::parse(support::CHAIN_RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let env = [
        ("GEMINI_API_KEY", "gm-auth-chain-key"),
        ("GEMINI_BASE_URL", base.as_str()),
        ("BOB_AT_A", BOB_AT_A),
        ("ALICE_AT_A", ALICE_AT_A),
        ("A_AT_B", A_AT_B),
        ("B_ADMIN", B_ADMIN),
        ("B_AT_C", B_AT_C),
        ("C_ADMIN", C_ADMIN),
    ];
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let db = dirs[0].path().join("resources.db");
    // C: the resource keeper. B's credential may ask and decide (the human
    // decided upstream, so separation of duties is the top agent's).
    let c_yaml = format!(
        r#"name: agent-c
prompt: You are agent C, the resource keeper.
mcp_servers:
  - name: resources
    command: {mcp}
    args: [--db, {db}]
auth:
  mode: tokens
  separation_of_duties: false
  tokens:
    - {{name: agent-b, token: "${{B_AT_C}}", roles: [requester, approver]}}
    - {{name: c-admin, token: "${{C_ADMIN}}", roles: [admin]}}
"#,
        mcp = test_support::process::workspace_bin("mcp-resources"),
        db = db.display()
    );
    let c = start(dirs[0].path(), &c_yaml, &env);
    let b_yaml = format!(
        r#"name: agent-b
prompt: You are agent B, the relay.
a2a:
  - {{name: c, url: "{c}", description: The resource keeper, headers: {{Authorization: "Bearer ${{B_AT_C}}"}}}}
auth:
  mode: tokens
  separation_of_duties: false
  tokens:
    - {{name: agent-a, token: "${{A_AT_B}}", roles: [requester, approver]}}
    - {{name: b-admin, token: "${{B_ADMIN}}", roles: [admin]}}
"#,
        c = c.base
    );
    let b = start(dirs[1].path(), &b_yaml, &env);
    let a_yaml = format!(
        r#"name: agent-a
prompt: You are agent A, the front desk.
a2a:
  - {{name: b, url: "{b}", description: The relay, headers: {{Authorization: "Bearer ${{A_AT_B}}"}}}}
auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_AT_A}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_AT_A}}", roles: [approver]}}
"#,
        b = b.base
    );
    let a = start(dirs[2].path(), &a_yaml, &env);

    // Bob asks at A; the approval comes up from C, three agents deep.
    let r = client()
        .post(a.url("/conversations"))
        .bearer_auth(BOB_AT_A)
        .timeout(std::time::Duration::from_secs(30))
        .json(&json!({"message": "add cherries 8"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.unwrap();
    let approval = &v["result"]["approval"];
    assert_eq!(approval["chain"], json!(["b", "c"]), "{v}");
    assert_eq!(approval["requested_by"], "bob");
    let uuid = approval["uuid"].as_str().unwrap().to_string();
    // Bob may not decide at A (a requester, and it is his own request).
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(BOB_AT_A)
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // Alice decides; the continuation goes down with each hop's credential.
    let r = client()
        .post(a.url(&format!("/approvals/{uuid}")))
        .bearer_auth(ALICE_AT_A)
        .timeout(std::time::Duration::from_secs(30))
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    let response = v["result"]["response"].as_str().unwrap();
    assert!(
        response.starts_with("A relayed: B relayed: C added:"),
        "{response}"
    );

    // Who did what, hop by hop: each agent saw only its own caller.
    let at_b = support::audit_rows(&b, B_ADMIN).await;
    let at_c = support::audit_rows(&c, C_ADMIN).await;
    let actors = |rows: &[Value], event: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r["event"] == event)
            .map(|r| r["actor"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        actors(&at_b, "conversation.created"),
        ["agent-a"],
        "{at_b:?}"
    );
    assert_eq!(
        actors(&at_c, "conversation.created"),
        ["agent-b"],
        "{at_c:?}"
    );
    assert_eq!(actors(&at_c, "approval.decided"), ["agent-b"], "{at_c:?}");
    assert_eq!(actors(&at_c, "tool.executed").len(), 1, "ran exactly once");
    let decided = at_c
        .iter()
        .find(|r| r["event"] == "approval.decided")
        .unwrap();
    assert_eq!(decided["details"]["via"], "a2a", "{decided}");
    // Nobody below A was refused anything.
    assert!(actors(&at_b, "auth.denied").is_empty(), "{at_b:?}");
    assert!(actors(&at_c, "auth.denied").is_empty(), "{at_c:?}");
    // Operator tokens stay at A: not in B's or C's logs, nor in any LLM call.
    for agent in [&b, &c] {
        let log = agent.log();
        assert!(!log.contains(BOB_AT_A) && !log.contains(ALICE_AT_A));
    }
    for r in fake.requests() {
        assert!(
            !r.headers
                .iter()
                .any(|(_, v)| v.contains(ALICE_AT_A) || v.contains(A_AT_B) || v.contains(B_AT_C))
        );
    }
}

#[tokio::test]
async fn without_its_configured_credential_a_hop_is_refused() {
    let fake = FakeState::new(Rules::parse(support::CHAIN_RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let env = [
        ("GEMINI_API_KEY", "gm-auth-chain-key"),
        ("GEMINI_BASE_URL", base.as_str()),
        ("A_AT_B", A_AT_B),
        ("BOB_AT_A", BOB_AT_A),
    ];
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let b_yaml = r#"name: agent-b
prompt: You are agent B, the relay.
auth:
  mode: tokens
  tokens:
    - {name: agent-a, token: "${A_AT_B}", roles: [requester, approver]}
"#;
    let b = start(dirs[0].path(), b_yaml, &env);
    // A has no headers for b: its operator's token must not be forwarded,
    // so B sees no credential at all.
    let a_yaml = format!(
        r#"name: agent-a
prompt: You are agent A, the front desk.
a2a:
  - {{name: b, url: "{b}", description: The relay}}
auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_AT_A}}", roles: [requester, approver]}}
"#,
        b = b.base
    );
    let a = start(dirs[1].path(), &a_yaml, &env);
    let r = client()
        .post(a.url("/conversations"))
        .bearer_auth(BOB_AT_A)
        .timeout(std::time::Duration::from_secs(30))
        .json(&json!({"message": "add cherries 8"}))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    let text = v.to_string();
    assert!(
        !text.contains("B relayed"),
        "B ran without a credential: {text}"
    );
    assert!(!b.log().contains(BOB_AT_A), "the operator token reached B");
    assert!(
        text.contains("refused the request (HTTP 401)"),
        "A does not say why B refused: {text}"
    );
}
