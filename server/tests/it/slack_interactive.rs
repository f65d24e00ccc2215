//! Deciding from Slack (REACH.md §2) with the real agent and the real
//! `mcp-resources`: a local stand-in signs button clicks exactly as Slack
//! documents (`test_support::slack`) and posts them; a loopback receiver
//! stands for both Slack's incoming webhook (the message with the buttons)
//! and the click's `response_url` (the outcome). Approve, reject, a quorum
//! ("1 of 2", then done by a second mapped user), separation of duties,
//! an unmapped user, a bad signature, a stale timestamp, a body altered
//! after signing, and a replay after the decision (already decided,
//! nothing runs twice). Run on SQLite and, by `make unit`, on PostgreSQL.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Agent, audit_rows, get_bearer, post_bearer, waiting_uuid, write_config};
use test_support::slack::{Signed, Slack};
use test_support::webhook::{Received, Receiver};

const SIGNING_SECRET: &str = "slack-signing-0123456789abcdef";
const HOOK_SECRET: &str = "whsec-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";
const OPS: &str = "ops-token-0123456789abcdef";

/// The Slack message the agent sent about approval `uuid`.
async fn message_about(hook: &Receiver, uuid: &str) -> Value {
    let got = hook
        .wait_until(Duration::from_secs(20), "the Slack message", |g| {
            g.iter()
                .any(|r| r.event == "approval.requested" && r.body.to_string().contains(uuid))
        })
        .await;
    got.into_iter()
        .find(|r| r.event == "approval.requested" && r.body.to_string().contains(uuid))
        .map(|r| r.body)
        .unwrap()
}

/// The outcomes posted to the response_url so far (no event header).
fn outcomes(hook: &Receiver) -> Vec<Received> {
    hook.received()
        .into_iter()
        .filter(|r| r.event.is_empty())
        .collect()
}

/// Waits for the `n`th outcome and returns its text.
async fn nth_outcome(hook: &Receiver, n: usize) -> Value {
    let got = hook
        .wait_until(Duration::from_secs(20), "a response_url post", |g| {
            g.iter().filter(|r| r.event.is_empty()).count() >= n
        })
        .await;
    got.into_iter()
        .filter(|r| r.event.is_empty())
        .nth(n - 1)
        .map(|r| r.body)
        .unwrap()
}

async fn post(a: &Agent, s: &Signed) -> (u16, String, Duration) {
    post_raw(a, &s.body, &s.timestamp, &s.signature).await
}

async fn post_raw(a: &Agent, body: &str, ts: &str, sig: &str) -> (u16, String, Duration) {
    let started = std::time::Instant::now();
    let r = support::client()
        .post(a.url("/integrations/slack/interactions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", ts)
        .header("x-slack-signature", sig)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (
        status,
        r.text().await.unwrap_or_default(),
        started.elapsed(),
    )
}

/// The approval `uuid` as its call in a conversation shows it.
async fn approval(a: &Agent, uuid: &str) -> Value {
    let list = get_bearer(a, OPS, "/conversations").await;
    for c in list["conversations"].as_array().into_iter().flatten() {
        let id = c["id"].as_str().unwrap_or_default();
        let conv = get_bearer(a, OPS, &format!("/conversations/{id}")).await;
        for m in conv["conversation"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if m["tool_call"]["approval"]["uuid"] == uuid {
                return m["tool_call"]["approval"].clone();
            }
        }
    }
    panic!("approval {uuid} not found");
}

async fn status_of(a: &Agent, uuid: &str) -> String {
    let waiting = get_bearer(a, OPS, "/approvals").await;
    if waiting["approvals"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|x| x["uuid"] == uuid)
    {
        return "pending".into();
    }
    approval(a, uuid).await["status"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_buttons_decide_once_as_the_mapped_principal() {
    let hook = Receiver::start(HOOK_SECRET).await;
    let slack = Slack::new(SIGNING_SECRET);
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"{base}auth:
  mode: tokens
  tokens:
    - {{name: bob, token: "${{BOB_T}}", roles: [requester]}}
    - {{name: alice, token: "${{ALICE_T}}", roles: [approver]}}
    - {{name: carol, token: "${{CAROL_T}}", roles: [requester, approver]}}
    - {{name: ops, token: "${{OPS_T}}", roles: [admin]}}
approvals:
  rules:
    - {{name: two-people, tool: resources_remove, action: approve, quorum: 2}}
notifications:
  link_key: "${{LINK_KEY}}"
  targets:
    - name: ops-slack
      url: {url}
      secret: "${{HOOK_SECRET}}"
      format: slack
      events: [approval.requested]
      interactive:
        signing_secret: "${{SLACK_SIGNING_SECRET}}"
        users: {{U0ALICE: alice, U0CAROL: carol, U0BOB: bob}}
        response_hosts: ["127.0.0.1"]
"#,
        base = support::resources_yaml("slack-agent", dir.path()),
        url = hook.url,
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::start_with_env(
        &cfg,
        &[
            ("BOB_T", BOB),
            ("ALICE_T", ALICE),
            ("CAROL_T", CAROL),
            ("OPS_T", OPS),
            ("HOOK_SECRET", HOOK_SECRET),
            ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
            ("LINK_KEY", "links-0123456789abcdef"),
        ],
    );
    let respond = hook.url.clone();

    // Bob asks; the Slack message carries real buttons with the uuid.
    let (status, body) = post_bearer(
        &a,
        BOB,
        "/conversations",
        json!({"message": "add apples 5"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let conversation = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = waiting_uuid(&body);
    let message = message_about(&hook, &uuid).await;
    let decide = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "stopgo_decide")
        .unwrap_or_else(|| panic!("no interactive buttons: {message}"))
        .clone();
    let ids: Vec<_> = decide["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action_id"].clone(), e["value"].clone()))
        .collect();
    assert_eq!(
        ids,
        [
            (json!("stopgo_approve"), json!(uuid)),
            (json!("stopgo_reject"), json!(uuid))
        ]
    );

    // Not Slack's: a wrong secret, a stale timestamp, a body changed after
    // signing, no signature. Each 401, nothing decided, auth.denied.
    let forged = Slack::new("not-the-secret-0123456789").click(
        "U0ALICE",
        "stopgo_approve",
        &uuid,
        &respond,
        &message,
        0,
    );
    assert_eq!(post(&a, &forged).await.0, 401);
    let stale = slack.click("U0ALICE", "stopgo_approve", &uuid, &respond, &message, 360);
    let (status, text, _) = post(&a, &stale).await;
    assert_eq!(status, 401);
    assert!(text.contains("5 minutes"), "{text}");
    let good = slack.click("U0ALICE", "stopgo_reject", &uuid, &respond, &message, 0);
    let altered = good.body.replace("stopgo_reject", "stopgo_approve");
    assert_ne!(altered, good.body);
    assert_eq!(
        post_raw(&a, &altered, &good.timestamp, &good.signature)
            .await
            .0,
        401
    );
    assert_eq!(post_raw(&a, &good.body, &good.timestamp, "").await.0, 401);
    assert_eq!(status_of(&a, &uuid).await, "pending");
    let denied = audit_rows(&a, OPS)
        .await
        .into_iter()
        .filter(|r| {
            r["event"] == "auth.denied"
                && r["details"]["route"] == "/integrations/slack/interactions"
        })
        .count();
    assert!(denied >= 3, "refused clicks are audited");
    assert!(
        outcomes(&hook).is_empty(),
        "nothing is posted for a request Slack did not sign"
    );

    // A signed body that is not a Slack payload: 400.
    let junk = slack.signed("not json", 0);
    assert_eq!(post(&a, &junk).await.0, 400);

    // An unmapped user is told so; the approval still waits.
    let (status, _, took) = post(
        &a,
        &slack.click("U0NOBODY", "stopgo_approve", &uuid, &respond, &message, 0),
    )
    .await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(3));
    let told = nth_outcome(&hook, 1).await;
    assert_eq!(told["replace_original"], true);
    assert_eq!(
        told["text"], "You (U0NOBODY) are not mapped to an approver",
        "{told}"
    );
    assert!(
        told.to_string().contains("stopgo_approve"),
        "the buttons stay while it waits: {told}"
    );
    assert_eq!(status_of(&a, &uuid).await, "pending");

    // Bob is mapped but is not an approver.
    post(
        &a,
        &slack.click("U0BOB", "stopgo_approve", &uuid, &respond, &message, 0),
    )
    .await;
    let told = nth_outcome(&hook, 2).await;
    assert!(
        told["text"].as_str().unwrap().contains("approver role"),
        "{told}"
    );
    assert_eq!(status_of(&a, &uuid).await, "pending");

    // Alice approves from Slack: 200 within 3 s, the tool runs once.
    let click = slack.click("U0ALICE", "stopgo_approve", &uuid, &respond, &message, 0);
    let (status, _, took) = post(&a, &click).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(3), "{took:?}");
    let told = nth_outcome(&hook, 3).await;
    assert_eq!(told["text"], "Approved by alice", "{told}");
    assert!(
        !told.to_string().contains("stopgo_approve"),
        "decided: no buttons left: {told}"
    );
    let ap = approval(&a, &uuid).await;
    assert_eq!(ap["decided_by"], "alice", "{ap}");
    assert_eq!(ap["decided_via"], "slack", "{ap}");
    let finished = wait_for_status(&a, &conversation, "active").await;
    assert!(
        finished.to_string().contains("resources_add answered"),
        "{finished}"
    );

    // The same request again (inside its 5 minutes): already decided, and
    // the tool does not run a second time.
    let (status, _, _) = post(&a, &click).await;
    assert_eq!(status, 200);
    let told = nth_outcome(&hook, 4).await;
    assert_eq!(
        told["text"], "Already decided by alice (approved)",
        "{told}"
    );
    let rows = audit_rows(&a, OPS).await;
    let decided: Vec<_> = rows
        .iter()
        .filter(|r| r["event"] == "approval.decided" && r["approval_uuid"] == uuid.as_str())
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["actor"], "alice");
    assert_eq!(decided[0]["details"]["via"], "slack");
    let ran = get_bearer(&a, OPS, &format!("/conversations/{conversation}")).await;
    let results = ran["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["tool_call"]["name"] == "resources_add" && !m["tool_call"]["result"].is_null()
        })
        .count();
    assert_eq!(results, 1, "{ran}");

    // Separation of duties: Carol asked, so Carol may not decide.
    let (status, body) = post_bearer(
        &a,
        CAROL,
        "/conversations",
        json!({"message": "add pears 3"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let uuid2 = waiting_uuid(&body);
    let message2 = message_about(&hook, &uuid2).await;
    post(
        &a,
        &slack.click("U0CAROL", "stopgo_approve", &uuid2, &respond, &message2, 0),
    )
    .await;
    let told = nth_outcome(&hook, 5).await;
    let text = told["text"].as_str().unwrap();
    assert!(
        text.starts_with("Refused: ") && text.contains("carol"),
        "{told}"
    );
    assert_eq!(status_of(&a, &uuid2).await, "pending");
    // Alice rejects from Slack; the reason says where.
    post(
        &a,
        &slack.click("U0ALICE", "stopgo_reject", &uuid2, &respond, &message2, 0),
    )
    .await;
    let told = nth_outcome(&hook, 6).await;
    assert_eq!(
        told["text"], "Rejected by alice: rejected from Slack",
        "{told}"
    );
    let ap = approval(&a, &uuid2).await;
    assert_eq!(ap["status"], "rejected", "{ap}");
    assert_eq!(ap["reason"], "rejected from Slack", "{ap}");
    assert_eq!(ap["decided_via"], "slack", "{ap}");

    // A quorum of two: Alice's click is a vote (buttons stay), a second
    // click of hers is refused, Carol's completes it.
    let (status, body) = post_bearer(
        &a,
        BOB,
        "/conversations",
        json!({"message": "delete apples"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let uuid3 = waiting_uuid(&body);
    let message3 = message_about(&hook, &uuid3).await;
    post(
        &a,
        &slack.click("U0ALICE", "stopgo_approve", &uuid3, &respond, &message3, 0),
    )
    .await;
    let told = nth_outcome(&hook, 7).await;
    assert_eq!(told["text"], "Needs 1 more approval (1 of 2)", "{told}");
    assert!(told.to_string().contains("stopgo_approve"), "{told}");
    post(
        &a,
        &slack.click("U0ALICE", "stopgo_approve", &uuid3, &respond, &message3, 0),
    )
    .await;
    let told = nth_outcome(&hook, 8).await;
    assert!(told["text"].as_str().unwrap().contains("voted"), "{told}");
    assert_eq!(status_of(&a, &uuid3).await, "pending");
    post(
        &a,
        &slack.click("U0CAROL", "stopgo_approve", &uuid3, &respond, &message3, 0),
    )
    .await;
    let told = nth_outcome(&hook, 9).await;
    assert_eq!(told["text"], "Approved by carol", "{told}");
    let voted: Vec<_> = audit_rows(&a, OPS)
        .await
        .into_iter()
        .filter(|r| r["event"] == "approval.voted" && r["approval_uuid"] == uuid3.as_str())
        .map(|r| (r["actor"].clone(), r["details"]["via"].clone()))
        .collect();
    assert_eq!(
        voted,
        [
            (json!("alice"), json!("slack")),
            (json!("carol"), json!("slack"))
        ]
    );
    assert_eq!(approval(&a, &uuid3).await["decided_by"], "carol");

    // The signing secret is in no log, no audit row and no stored byte.
    let log = a.log();
    assert!(
        !log.contains(SIGNING_SECRET),
        "the signing secret leaked into the log"
    );
    assert!(!rows.iter().any(|r| r.to_string().contains(SIGNING_SECRET)));
    // (On PostgreSQL the data directory holds nothing of the state.)
    let files = std::fs::read_dir(dir.path().join("data"));
    for entry in files.into_iter().flatten().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        assert!(
            !bytes
                .windows(SIGNING_SECRET.len())
                .any(|w| w == SIGNING_SECRET.as_bytes()),
            "the signing secret is stored in {}",
            entry.path().display()
        );
    }
}

/// Polls the conversation until its status is `want` and no turn runs.
async fn wait_for_status(a: &Agent, id: &str, want: &str) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let c = get_bearer(a, OPS, &format!("/conversations/{id}")).await;
        let c = c["conversation"].clone();
        if c["status"] == want && c["running"] != true {
            return c;
        }
        assert!(std::time::Instant::now() < deadline, "never {want}: {c}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
