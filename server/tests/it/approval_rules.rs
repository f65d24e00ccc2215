//! `approvals:` rules (POLICY.md §1) with the real agent, the real
//! `mcp-resources`, and the fake provider in each wire format: `allow`
//! runs a destructive call at once, `approve` records its rule and its
//! approvers, `deny` never runs the call and the model hears the reason;
//! `GET /tools` lists each tool's effective rules; the approvers of a rule
//! are enforced in tokens mode; config mistakes stop the agent at startup.

use crate::support;

use serde_json::{Value, json};
use server::llm::scripted::Rules;
use support::{Agent, get_json, post_json, run_to_exit, tool, waiting_uuid, write_config};
use test_support::fake_llm::{FakeState, Format};

const SECRET: &str = "sk-rules-0123456789";

const MODEL_RULES: &str = r#"
rules:
  - match: "(?i)^list"
    steps:
      - call: resources_list
      - reply: "Resources: {result}"
  - match: "(?i)^add (\\w+) (-?\\d+)"
    steps:
      - call: resources_add
        args: {name: "$1", value: "$2"}
      - reply: "Added: {result}"
  - match: "(?i)^remove (\\S+)"
    steps:
      - call: resources_remove
        args: {pattern: "$1"}
      - reply: "Removed: {result}"
  - match: "(?i)^delegate (.*)"
    steps:
      - call: a2a_billing
        args: {message: "$1"}
      - reply: "Billing: {result}"
default: "I can list, add and remove resources."
"#;

const APPROVALS: &str = r#"
a2a:
  - {name: billing, url: "http://127.0.0.1:9/never-called"}
approvals:
  rules:
    - name: small-adds
      tool: resources_add
      server: resources
      when:
        /value: {max: 10}
      action: allow
    - name: big-adds
      tool: resources_add
      action: approve
    - name: never-remove
      tool: resources_remove
      action: deny
      reason: removing is done by the DBA team
    - name: no-billing
      tool: a2a_billing
      action: deny
      reason: billing is frozen this week
"#;

fn resources_server(dir: &std::path::Path) -> String {
    format!(
        "mcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
        test_support::process::workspace_bin("mcp-resources"),
        dir.join("resources.db").display()
    )
}

/// The tool message of `name` in a `{"conversation": C}` answer.
fn tool_message(body: &Value, name: &str) -> Value {
    body["conversation"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["tool_call"]["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no call of {name}: {body}"))
}

async fn audit_events(a: &Agent) -> Vec<Value> {
    let text = support::client()
        .get(a.url("/audit?format=jsonl"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

async fn scenario(format: Format) {
    let fake = FakeState::new(Rules::parse(MODEL_RULES).unwrap());
    let base = test_support::fake_llm::spawn(fake.clone()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (model, env) = support::model_and_env(format, &base, SECRET);
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &format!(
            "llm: {{model: {model}}}\n{}{APPROVALS}",
            resources_server(dir.path())
        ),
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let a = Agent::start_with_env(&cfg, &env);
    let label = format!("{format:?}");

    // GET /tools: each tool's effective rules, then the fallback.
    let tools = get_json(&a, "/tools").await;
    let rules_of = |n: &str| -> Vec<(String, String, bool)> {
        tool(&tools, n).unwrap()["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap().to_string(),
                    r["action"].as_str().unwrap().to_string(),
                    r["conditional"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let own = |v: &[(&str, &str, bool)]| -> Vec<(String, String, bool)> {
        v.iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), *c))
            .collect()
    };
    assert_eq!(
        rules_of("resources_add"),
        own(&[
            ("small-adds", "allow", true),
            ("big-adds", "approve", false)
        ]),
        "{label}"
    );
    assert_eq!(
        rules_of("resources_remove"),
        own(&[("never-remove", "deny", false)])
    );
    assert_eq!(
        rules_of("resources_list"),
        own(&[("annotation", "allow", false)])
    );
    assert_eq!(
        rules_of("a2a_billing"),
        own(&[("no-billing", "deny", false)])
    );

    // allow: a destructive call under the limit runs at once.
    let (status, body) = post_json(&a, "/conversations", json!({"message": "add apples 5"})).await;
    assert_eq!(status, 201, "{label}: {body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{label}: {body}");
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .starts_with("Added:"),
        "{body}"
    );
    assert_eq!(
        tool_message(&body, "resources_add")["tool_call"]["is_error"],
        false
    );

    // approve: over the limit it waits, and says which rule asked.
    let (status, body) = post_json(&a, "/conversations", json!({"message": "add pears 50"})).await;
    assert_eq!(status, 201, "{body}");
    let uuid = waiting_uuid(&body);
    let approval = &body["result"]["approval"];
    assert_eq!(approval["rule"], "big-adds", "{label}: {body}");
    assert_eq!(approval["approvers"], json!(["role:approver"]));
    let inbox = get_json(&a, "/approvals").await;
    assert_eq!(inbox["approvals"][0]["rule"], "big-adds", "{inbox}");
    let (status, body) =
        post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        tool_message(&body, "resources_add")["tool_call"]["is_error"],
        false
    );

    // deny: never runs; the model gets the reason and the turn goes on.
    let (status, body) = post_json(&a, "/conversations", json!({"message": "remove apples"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    let denied = tool_message(&body, "resources_remove");
    assert_eq!(denied["tool_call"]["is_error"], true);
    assert_eq!(
        denied["tool_call"]["result"], "not allowed: removing is done by the DBA team",
        "{denied}"
    );
    assert_eq!(
        body["result"]["response"], "Removed: not allowed: removing is done by the DBA team",
        "the model heard the reason: {body}"
    );
    // The sub-agent is denied the same way (its URL is never called).
    let (status, body) =
        post_json(&a, "/conversations", json!({"message": "delegate pay it"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        tool_message(&body, "a2a_billing")["tool_call"]["result"],
        "not allowed: billing is frozen this week"
    );

    // apples (5) and pears (50) exist: nothing was removed.
    let (_, body) = post_json(&a, "/conversations", json!({"message": "list"})).await;
    let listed = body["result"]["response"].as_str().unwrap().to_string();
    assert!(
        listed.contains("apples") && listed.contains("pears"),
        "{listed}"
    );

    // The audit trail records the denials with their rules, and the rule
    // that asked for the approval.
    let rows = audit_events(&a).await;
    let denied: Vec<&Value> = rows
        .iter()
        .filter(|r| r["event"] == "policy.denied")
        .collect();
    assert_eq!(denied.len(), 2, "{rows:?}");
    assert_eq!(denied[0]["details"]["rule"], "never-remove");
    assert_eq!(denied[1]["details"]["rule"], "no-billing");
    let requested = rows
        .iter()
        .find(|r| r["event"] == "approval.requested")
        .unwrap();
    assert_eq!(requested["details"]["rule"], "big-adds");
}

#[tokio::test]
async fn rules_decide_before_annotations_in_every_wire_format() {
    for format in [Format::Gemini, Format::Anthropic, Format::OpenAi] {
        scenario(format).await;
    }
}

/// A rule's `approvers` are recorded on the approval and enforced: another
/// approver is refused with the rule's name; a named one decides.
#[tokio::test]
async fn only_the_rules_approvers_may_decide() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [approver]}}
approvals:
  rules:
    - {{name: alice-only, tool: resources_add, action: approve, approvers: [alice]}}
"#,
        base = support::resources_yaml("rules-auth", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let (bob, alice, carol) = (
        "bob-token-0123456789abcdef",
        "alice-token-0123456789abcdef",
        "carol-token-0123456789abcdef",
    );
    let a = Agent::serve_with_env(
        &cfg,
        &[("BOB_T", bob), ("ALICE_T", alice), ("CAROL_T", carol)],
    )
    .await;
    let http = support::client();
    let send = |token: &'static str, path: String, body: Value| {
        let (http, a) = (&http, &a);
        async move { as_(http, a, token, &path, Some(body)).await }
    };
    let (status, body) = send(
        bob,
        "/conversations".into(),
        json!({"message": "add apples 5"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let uuid = waiting_uuid(&body);
    assert_eq!(body["result"]["approval"]["approvers"], json!(["alice"]));
    let (status, body) = send(
        carol,
        format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let text = body.to_string();
    assert!(
        text.contains("alice-only") && text.contains("alice"),
        "the refusal names the rule and who may: {text}"
    );
    let (status, body) = send(
        alice,
        format!("/approvals/{uuid}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["conversation"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["tool_call"]["name"] == "resources_add")
            .unwrap()["tool_call"]["is_error"],
        false
    );
}

/// Shadowed rules, unknown servers and bad predicates stop the agent at
/// startup, naming the rule.
#[test]
fn rule_mistakes_are_startup_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = support::resources_yaml("rules-bad", dir.path());
    for (rules, want) in [
        (
            "    - {name: everything, tool: '*', action: approve}\n    - {name: late, tool: resources_add, action: allow}\n",
            "approvals.rules[1]: rule `late` can never match: rule `everything` before it matches every call it would",
        ),
        (
            "    - {name: r, tool: x, server: github, action: deny}\n",
            "approvals.rules[0].server: `github` names no MCP server or sub-agent of this agent (known are resources)",
        ),
        (
            "    - {name: r, tool: x, when: {/amount: {regex: '(('}}, action: deny}\n",
            "approvals.rules[0].when./amount: `regex`",
        ),
        (
            "    - {name: r, tool: x, when: {/amount: {maxx: 3}}, action: deny}\n",
            "approvals.rules[0].when./amount.maxx: unknown key `maxx`: did you mean `max`?",
        ),
    ] {
        let cfg = write_config(
            dir.path(),
            &dir.path().join("data"),
            &format!("{base}approvals:\n  rules:\n{rules}"),
        );
        let (status, out) = run_to_exit(&cfg);
        assert!(!status.success(), "{rules}: started");
        assert!(out.contains(want), "{rules}\n wanted: {want}\n got: {out}");
    }
}

/// `agent policy explain` says which rule matches and why, exit 0; bad
/// `--args` exit 2.
#[test]
fn policy_explain_names_the_deciding_rule() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(
        dir.path(),
        &dir.path().join("data"),
        &format!(
            "{}approvals:\n  rules:\n    - {{name: small-adds, tool: resources_add, when: {{/value: {{max: 10}}}}, action: allow}}\n    - {{name: big-adds, tool: resources_add, action: approve}}\n",
            support::resources_yaml("explain", dir.path())
        ),
    );
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agent"))
            .arg("--config")
            .arg(&cfg)
            .args(["policy", "explain"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (code, out) = run(&["--tool", "resources_add", "--args", r#"{"value": 50}"#]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("rule 1 `small-adds` (allow): no: /value is 50, which fails `max 10`"),
        "{out}"
    );
    assert!(out.contains("=> approve: rule `big-adds`"), "{out}");
    let (code, out) = run(&["--tool", "resources_add", "--args", r#"{"value": 3}"#]);
    assert_eq!(code, Some(0));
    assert!(out.contains("=> allow: rule `small-adds`"), "{out}");
    let (code, out) = run(&["--tool", "resources_list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("=> no rule matches"), "{out}");
    let (code, _) = run(&["--tool", "x", "--args", "{nope"]);
    assert_eq!(code, Some(2));
}

/// POLICY.md §2: a quorum of 2 needs two distinct principals (tokens
/// mode); the same principal voting twice gets 409; one rejection rejects.
#[tokio::test]
async fn a_quorum_of_two_needs_two_principals() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [approver]}}
    - {{name: dave, token: "${{DAVE_T}}", roles: [approver]}}
approvals:
  rules:
    - {{name: two-people, tool: resources_add, action: approve, quorum: 2}}
"#,
        base = support::resources_yaml("rules-quorum", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let (bob, alice, carol, dave) = (
        "bob-token-0123456789abcdef",
        "alice-token-0123456789abcdef",
        "carol-token-0123456789abcdef",
        "dave-token-0123456789abcdef",
    );
    let a = Agent::serve_with_env(
        &cfg,
        &[
            ("BOB_T", bob),
            ("ALICE_T", alice),
            ("CAROL_T", carol),
            ("DAVE_T", dave),
        ],
    )
    .await;
    let http = support::client();
    let send = |token: &'static str, path: String, body: Value| {
        let (http, a) = (&http, &a);
        async move { as_(http, a, token, &path, Some(body)).await }
    };
    let (status, body) = send(
        bob,
        "/conversations".into(),
        json!({"message": "add apples 5"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let uuid = waiting_uuid(&body);
    assert_eq!(body["result"]["approval"]["quorum"], 2, "{body}");

    // The first approval is a vote: still waiting, nothing ran.
    let decide = format!("/approvals/{uuid}");
    let (status, body) = send(alice, decide.clone(), json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["waiting_approval"], true, "{body}");
    assert_eq!(body["conversation"]["status"], "waiting_approval");
    let votes = &body["result"]["approval"]["votes"];
    assert_eq!(votes.as_array().map(Vec::len), Some(1), "{body}");
    assert_eq!(votes[0]["by"], "alice");
    assert_eq!(
        tool_message(&body, "resources_add")["tool_call"]["result"],
        Value::Null
    );
    // The same principal again: 409, and the vote is not counted twice.
    let (status, body) = send(alice, decide.clone(), json!({"approved": true})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("already voted"), "{body}");
    // A second principal completes the quorum: the tool runs once.
    let (status, body) = send(carol, decide.clone(), json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["waiting_approval"], false, "{body}");
    let call = tool_message(&body, "resources_add");
    assert_eq!(call["tool_call"]["is_error"], false, "{call}");
    assert_eq!(call["tool_call"]["approval"]["decided_by"], "carol");

    // One rejection rejects, whatever the approvals before it.
    let (_, body) = send(
        bob,
        "/conversations".into(),
        json!({"message": "add pears 7"}),
    )
    .await;
    let uuid = waiting_uuid(&body);
    let decide = format!("/approvals/{uuid}");
    let (status, _) = send(alice, decide.clone(), json!({"approved": true})).await;
    assert_eq!(status, 200);
    let (status, body) = send(
        dave,
        decide.clone(),
        json!({"approved": false, "reason": "no pears"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let call = tool_message(&body, "resources_add");
    assert_eq!(
        call["tool_call"]["approval"]["status"], "rejected",
        "{call}"
    );
    assert!(
        call["tool_call"]["result"]
            .as_str()
            .unwrap()
            .contains("no pears"),
        "{call}"
    );
    let (status, _) = send(carol, decide, json!({"approved": true})).await;
    assert_eq!(status, 409, "decided already");
}

/// Issue 40 (6): in auth mode none nobody is told apart (one person in two
/// browsers would count twice), so a rule with `quorum > 1` is a startup
/// error naming the rule and the modes a quorum needs.
#[test]
fn without_sign_in_a_quorum_is_a_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}approvals:\n  rules:\n    - {{name: two, tool: resources_add, action: approve, quorum: 2}}\n",
        support::resources_yaml("rules-quorum-none", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let (status, out) = support::run_to_exit(&cfg);
    assert!(!status.success(), "{out}");
    assert!(out.contains("approvals.rules[0].quorum"), "{out}");
    assert!(out.contains("rule `two`"), "{out}");
    assert!(out.contains("auth.mode tokens, oidc or proxy"), "{out}");
    // A quorum of one is no quorum: still fine without sign-in.
    let yaml = format!(
        "{}approvals:\n  rules:\n    - {{name: one, tool: resources_add, action: approve, quorum: 1}}\n",
        support::resources_yaml("rules-quorum-one", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::start(&cfg);
    drop(a);
}

/// The conversation `id` as `GET /conversations/:id` answers it.
async fn conversation(a: &Agent, id: &str) -> Value {
    get_json(a, &format!("/conversations/{id}")).await["conversation"].clone()
}

/// Polls until the approval `uuid` of conversation `id` has left
/// `pending` (at most `secs`), and returns the conversation.
async fn until_settled(a: &Agent, id: &str, secs: u64) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let c = conversation(a, id).await;
        let running = c["running"].as_bool().unwrap_or(false);
        if c["pending_approval"].is_null() && !running && c["status"] != "waiting_approval" {
            return c;
        }
        assert!(std::time::Instant::now() < deadline, "still waiting: {c}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn call_in(c: &Value, name: &str) -> Value {
    tool_message(&json!({ "conversation": c }), name)
}

/// POLICY.md §2: an approval nobody decides expires (its own state, not a
/// rejection), the tool never runs, the model is told and the
/// conversation goes on; a decision after the deadline is refused.
#[tokio::test]
async fn an_approval_expires_and_the_model_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}approvals:\n  rules:\n    - {{name: quick, tool: resources_add, action: approve, expires_in: 2s}}\n",
        support::resources_yaml("rules-expiry", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    let (_, body) = post_json(&a, "/conversations", json!({"message": "add apples 5"})).await;
    let uuid = waiting_uuid(&body);
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    assert!(
        body["result"]["approval"]["expires_at"].is_string(),
        "{body}"
    );
    // Settled, and the resumed turn has answered (expiry and the turn's
    // resumption are two steps: between them nothing runs or waits).
    let mut c = until_settled(&a, &id, 10).await;
    for _ in 0..50 {
        if c["messages"].as_array().unwrap().last().unwrap()["role"] == "assistant" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        c = until_settled(&a, &id, 10).await;
    }
    let call = call_in(&c, "resources_add");
    assert_eq!(call["tool_call"]["approval"]["status"], "expired", "{call}");
    let result = call["tool_call"]["result"].as_str().unwrap();
    assert!(result.contains("the approval expired after 2s"), "{result}");
    // The model heard it and answered (the scripted reply quotes the result).
    let last = c["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant", "{c}");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("expired after 2s"),
        "{last}"
    );
    let (status, body) =
        post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 409, "{body}");
    let rows = audit_events(&a).await;
    assert!(
        rows.iter()
            .any(|r| r["event"] == "approval.expired" && r["details"]["rule"] == "quick"),
        "{rows:?}"
    );
    assert!(
        !rows.iter().any(|r| r["event"] == "tool.executed"),
        "never ran"
    );
}

/// An approval that expires while the agent is stopped is expired at the
/// next start, before any decision can reach it, and never runs.
#[tokio::test]
async fn an_approval_that_expired_while_stopped_is_expired_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}approvals:\n  expires_in: 2s\n",
        support::resources_yaml("rules-expiry-restart", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::start(&cfg);
    let (_, body) = post_json(&a, "/conversations", json!({"message": "add apples 5"})).await;
    let uuid = waiting_uuid(&body);
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    // The default applies to approvals no rule asked for.
    assert_eq!(body["result"]["approval"]["rule"], "annotation");
    a.kill9();
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let a = Agent::start(&cfg);
    // The first request after the restart finds it expired already.
    let (status, body) =
        post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("expired"), "{body}");
    let c = until_settled(&a, &id, 10).await;
    let call = call_in(&c, "resources_add");
    assert_eq!(call["tool_call"]["approval"]["status"], "expired", "{call}");
    let (_, listed) = post_json(&a, "/conversations", json!({"message": "list"})).await;
    assert!(
        !listed["result"]["response"]
            .as_str()
            .unwrap()
            .contains("apples"),
        "never ran: {listed}"
    );
}

/// `on_expiry: escalate`: the first expiry adds `escalate_to` to who may
/// decide and restarts the clock once; the second expiry expires it.
#[tokio::test]
async fn an_escalation_adds_approvers_once_then_expires() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: ops, token: "${{OPS_T}}", roles: [admin]}}
approvals:
  expires_in: 2s
  on_expiry: escalate
  escalate_to: [role:admin]
  rules:
    - {{name: alice-only, tool: resources_add, action: approve, approvers: [alice]}}
"#,
        base = support::resources_yaml("rules-escalate", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let (bob, alice, ops) = (
        "bob-token-0123456789abcdef",
        "alice-token-0123456789abcdef",
        "ops-token-0123456789abcdef0",
    );
    let a =
        Agent::serve_with_env(&cfg, &[("BOB_T", bob), ("ALICE_T", alice), ("OPS_T", ops)]).await;
    let http = support::client();
    let send = |token: &'static str, path: String, body: Value| {
        let (http, a) = (&http, &a);
        async move { as_(http, a, token, &path, Some(body)).await }
    };
    let get = |path: String| {
        let req = http.get(a.url(&path)).bearer_auth(alice);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    // Two requests: one an admin decides after the escalation, one nobody does.
    let (_, first) = send(
        bob,
        "/conversations".into(),
        json!({"message": "add apples 5"}),
    )
    .await;
    let (_, second) = send(
        bob,
        "/conversations".into(),
        json!({"message": "add pears 6"}),
    )
    .await;
    let (u1, u2) = (waiting_uuid(&first), waiting_uuid(&second));
    let id2 = second["conversation"]["id"].as_str().unwrap().to_string();
    // Before the escalation only alice may decide.
    let (status, _) = send(ops, format!("/approvals/{u1}"), json!({"approved": true})).await;
    assert_eq!(status, 403);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let inbox = get("/approvals".into()).await;
        let a1 = inbox["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["uuid"] == u1.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{inbox}"));
        if a1["escalated"] == true {
            assert_eq!(a1["approvers"], json!(["alice", "role:admin"]), "{a1}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not escalated: {a1}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (status, body) = send(ops, format!("/approvals/{u1}"), json!({"approved": true})).await;
    assert_eq!(status, 200, "the escalation lets admins decide: {body}");
    // The other one expires for good after its second period.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let c = get(format!("/conversations/{id2}")).await["conversation"].clone();
        let call = call_in(&c, "resources_add");
        if call["tool_call"]["approval"]["status"] == "expired" {
            assert!(
                call["tool_call"]["result"]
                    .as_str()
                    .unwrap()
                    .contains("expired after 4s"),
                "{call}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not expired: {c}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (status, _) = send(alice, format!("/approvals/{u2}"), json!({"approved": true})).await;
    assert_eq!(status, 409);
}

/// POLICY.md §3: approve with edited arguments. Checked against the
/// tool's input schema (400 naming the field) and the rules (a deny → 403,
/// still pending); a valid edit runs once with the new arguments, the
/// conversation shows them and the model hears of the edit.
#[tokio::test]
async fn an_edit_before_approving_is_checked_then_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{}approvals:
  rules:
    - {{name: no-huge, tool: resources_add, when: {{/value: {{min: 1000}}}}, action: deny, reason: too big}}
    - {{name: adds, tool: resources_add, action: approve}}
"#,
        support::resources_yaml("rules-edit", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve(&cfg).await;
    let (_, body) = post_json(&a, "/conversations", json!({"message": "add pears 50"})).await;
    let uuid = waiting_uuid(&body);
    let decide = format!("/approvals/{uuid}");
    for (edit, status, says) in [
        (
            json!({"name": "pears", "value": "lots"}),
            400,
            "arguments/value",
        ),
        (json!({"name": "pears"}), 400, "value"),
        (json!({"name": "pears", "value": 5000}), 403, "no-huge"),
    ] {
        let (got, body) =
            post_json(&a, &decide, json!({"approved": true, "arguments": edit})).await;
        assert_eq!(got, status, "{edit}: {body}");
        assert!(body.to_string().contains(says), "{edit}: {body}");
    }
    for bad in [
        json!({"approved": true, "arguments": [1]}),
        json!({"approved": false, "arguments": {"name": "pears", "value": 1}}),
    ] {
        let (got, body) = post_json(&a, &decide, bad.clone()).await;
        assert_eq!(got, 400, "{bad}: {body}");
    }
    let inbox = get_json(&a, "/approvals").await;
    assert_eq!(
        inbox["approvals"][0]["uuid"],
        uuid.as_str(),
        "still pending: {inbox}"
    );

    let (status, body) = post_json(
        &a,
        &decide,
        json!({"approved": true, "arguments": {"name": "pears", "value": 7}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let call = tool_message(&body, "resources_add");
    assert_eq!(
        call["tool_call"]["arguments"],
        json!({"name": "pears", "value": 50}),
        "the model's call stays"
    );
    assert_eq!(
        call["tool_call"]["approval"]["edited_arguments"],
        json!({"name": "pears", "value": 7})
    );
    let result = call["tool_call"]["result"].as_str().unwrap();
    assert!(
        result.contains("edited the arguments") && result.contains("/value: 50 → 7"),
        "{result}"
    );
    assert!(
        result.contains("\"value\":7"),
        "ran with the edit: {result}"
    );
    let (_, listed) = post_json(&a, "/conversations", json!({"message": "list"})).await;
    let listed = listed["result"]["response"].as_str().unwrap().to_string();
    assert!(
        listed.contains("\"value\":7") && !listed.contains("\"value\":50"),
        "{listed}"
    );
    let rows = audit_events(&a).await;
    let decided = rows
        .iter()
        .find(|r| r["event"] == "approval.decided")
        .unwrap();
    assert_eq!(decided["details"]["edited"], true, "{decided}");
    assert_eq!(decided["details"]["changes"], json!(["/value: 50 → 7"]));
    assert_eq!(
        rows.iter()
            .filter(|r| r["event"] == "tool.executed")
            .count(),
        2,
        "the add once, the list once"
    );
}

/// POLICY.md §4: a tool whose definition changes (its description between
/// restarts, then its destructiveHint through `tools/list_changed`) is
/// held: calls are refused with a clear result until an admin accepts the
/// change; a destructiveHint true → false change is held too.
#[tokio::test]
async fn a_changed_tool_is_held_until_an_admin_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = seed_agent_config(
        dir.path(),
        r#"auth:
  mode: tokens
  tokens:
    - {name: carol, token: "${CAROL_T}", roles: [requester, approver]}
    - {name: ops, token: "${OPS_T}", roles: [admin]}
"#,
    );
    let (carol, ops) = (
        "carol-token-0123456789abcdef",
        "ops-token-0123456789abcdef0",
    );
    let env = [("CAROL_T", carol), ("OPS_T", ops)];
    let mut a = Agent::start_with_env(&cfg, &env);
    let http = support::client();
    let pin_of = |tools: &Value| tool(tools, "seed_delete").unwrap()["pin"].clone();
    let (_, tools) = as_(&http, &a, carol, "/tools", None).await;
    assert_eq!(pin_of(&tools)["status"], "pinned", "{tools}");

    // Trusted: asks (destructive), runs when approved.
    let (_, body) = as_(
        &http,
        &a,
        carol,
        "/conversations",
        Some(json!({"message": "delete x1"})),
    )
    .await;
    let uuid = waiting_uuid(&body);
    let (status, _) = as_(
        &http,
        &a,
        ops,
        &format!("/approvals/{uuid}"),
        Some(json!({"approved": true})),
    )
    .await;
    assert_eq!(status, 200);

    // A new description after a restart: held.
    drop(a);
    redescribe(&cfg, "Deletes a thing, and mails a copy to someone.");
    a = Agent::start_with_env(&cfg, &env);
    let (_, tools) = as_(&http, &a, carol, "/tools", None).await;
    let pin = pin_of(&tools);
    assert_eq!(pin["status"], "changed", "{tools}");
    assert!(
        pin["diff"][0]
            .as_str()
            .unwrap()
            .starts_with("/description: \"Deletes a thing.\" → "),
        "{pin}"
    );
    let (status, body) = as_(
        &http,
        &a,
        carol,
        "/conversations",
        Some(json!({"message": "delete x2"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["result"]["waiting_approval"], false,
        "no approval: refused: {body}"
    );
    let held = tool_message(&body, "seed_delete");
    let text = held["tool_call"]["result"].as_str().unwrap();
    assert!(
        text.starts_with(
            "not allowed: the definition of `seed_delete` on `seed` changed since it was trusted"
        ),
        "{text}"
    );
    // Only an admin accepts it.
    let (status, _) = as_(
        &http,
        &a,
        carol,
        "/tools/seed_delete/accept",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = as_(&http, &a, ops, "/tools/seed_delete/accept", Some(json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tool"]["pin"]["status"], "pinned", "{body}");
    let (status, _) = as_(&http, &a, ops, "/tools/seed_delete/accept", Some(json!({}))).await;
    assert_eq!(status, 409, "nothing left to accept");
    let (_, body) = as_(
        &http,
        &a,
        carol,
        "/conversations",
        Some(json!({"message": "delete x3"})),
    )
    .await;
    waiting_uuid(&body);

    // destructiveHint true → false through list_changed: held as well,
    // although the tool would now run without asking.
    let (_, body) = as_(
        &http,
        &a,
        carol,
        "/conversations",
        Some(json!({"message": "rugpull"})),
    )
    .await;
    assert_eq!(body["result"]["response"], "seed_rugpull ok", "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let (_, tools) = as_(&http, &a, carol, "/tools", None).await;
        let pin = pin_of(&tools);
        if pin["status"] == "changed" {
            assert_eq!(pin["downgrade"], true, "{pin}");
            assert_eq!(
                tool(&tools, "seed_delete").unwrap()["destructiveHint"],
                false
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not seen: {tools}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let (_, body) = as_(
        &http,
        &a,
        carol,
        "/conversations",
        Some(json!({"message": "delete x4"})),
    )
    .await;
    let text = tool_message(&body, "seed_delete")["tool_call"]["result"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("no longer says it is destructive"), "{text}");
    let (status, _) = as_(&http, &a, ops, "/tools/seed_delete/accept", Some(json!({}))).await;
    assert_eq!(status, 200);
    let (_, body) = as_(
        &http,
        &a,
        carol,
        "/conversations",
        Some(json!({"message": "delete x5"})),
    )
    .await;
    assert_eq!(
        body["result"]["response"], "seed_delete ok",
        "accepted as harmless: runs: {body}"
    );

    let text = support::client()
        .get(a.url("/audit?format=jsonl"))
        .bearer_auth(ops)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        text.matches("\"event\":\"tool.changed\"").count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.matches("\"event\":\"tool.accepted\"").count(),
        2,
        "{text}"
    );
}

/// `on_tool_change: allow` accepts a changed definition at once (audited
/// as changed, then accepted by the agent), except a destructiveHint
/// true → false change, which stays held.
#[tokio::test]
async fn on_tool_change_allow_accepts_changes_but_not_a_downgrade() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = seed_agent_config(dir.path(), "approvals:\n  on_tool_change: allow\n");
    let a = Agent::start(&cfg);
    drop(a);
    redescribe(&cfg, "Deletes two things.");
    let a = Agent::start(&cfg);
    let tools = get_json(&a, "/tools").await;
    assert_eq!(
        tool(&tools, "seed_delete").unwrap()["pin"]["status"],
        "pinned",
        "{tools}"
    );
    let (_, body) = post_json(&a, "/conversations", json!({"message": "delete x1"})).await;
    waiting_uuid(&body);
    let rows = audit_events(&a).await;
    let accepted = rows.iter().find(|r| r["event"] == "tool.accepted").unwrap();
    assert_eq!(accepted["actor"], "agent", "{accepted}");
    // The downgrade is held even so.
    post_json(&a, "/conversations", json!({"message": "rugpull"})).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let tools = get_json(&a, "/tools").await;
        if tool(&tools, "seed_delete").unwrap()["pin"]["downgrade"] == true {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{tools}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let (_, body) = post_json(&a, "/conversations", json!({"message": "delete x2"})).await;
    let text = tool_message(&body, "seed_delete")["tool_call"]["result"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("no longer says it is destructive"), "{text}");
}

/// An agent config in `dir` on the seed-style MCP server
/// (testdata/seed_mcp_server.py, `seed_delete` described as "Deletes a
/// thing.") and scripted rules that call `seed_delete` ("delete ID") and
/// `seed_rugpull` ("rugpull"), with `extra` YAML after them.
fn seed_agent_config(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/seed_mcp_server.py");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "rules:\n  - match: \"^delete (\\\\S+)\"\n    steps:\n      - call: seed_delete\n        args: {id: \"$1\"}\n      - reply: \"{result}\"\n  - match: \"^rugpull\"\n    steps:\n      - call: seed_rugpull\n      - reply: \"{result}\"\n",
    )
    .unwrap();
    write_config(
        dir,
        &dir.join("data"),
        &format!(
            "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: seed\n    command: python3\n    args: [\"{}\"]\n    env: {{SEED_DELETE_DESCRIPTION: \"Deletes a thing.\"}}\n{extra}",
            rules.display(),
            script.display()
        ),
    )
}

/// Gives `seed_delete` another description in `cfg` for the next start
/// (the same file, so on PostgreSQL the same database).
fn redescribe(cfg: &std::path::Path, description: &str) {
    let text = std::fs::read_to_string(cfg).unwrap();
    std::fs::write(
        cfg,
        text.replace(
            "SEED_DELETE_DESCRIPTION: \"Deletes a thing.\"",
            &format!("SEED_DELETE_DESCRIPTION: \"{description}\""),
        ),
    )
    .unwrap();
}

/// `POST path` with `body` (`GET` without one) as the holder of `token`:
/// the status and the JSON answer.
async fn as_(
    http: &reqwest::Client,
    a: &Agent,
    token: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let req = match body {
        Some(b) => http.post(a.url(path)).json(&b),
        None => http.get(a.url(path)),
    };
    let resp = req.bearer_auth(token).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}
