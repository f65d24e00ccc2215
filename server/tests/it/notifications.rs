//! Notifications (POLICY.md §5) with the real agent, the real
//! `mcp-resources`, a real webhook receiver that checks every signature,
//! and a real SMTP server (aiosmtpd): retries after 500s, a stalled
//! receiver (timeout, then retry), a receiver down while the agent is
//! killed and restarted, reminders, escalation and expiry notices, the
//! Slack and JSON bodies, email's two parts, and the signed links: a GET
//! changes nothing, approve and reject work once, as the signed-in
//! principal, and used, expired and tampered links say so.

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use support::{Agent, get_json, post_json, resources_yaml, waiting_uuid, write_config};
use test_support::webhook::{Answer, Received, Receiver};

const SECRET: &str = "whsec-0123456789abcdef";
/// Replicas on PostgreSQL need one link key (any replica checks a link).
const LINK_KEY: &str = "links-0123456789abcdef";

fn hook_target(name: &str, url: &str, format: &str, events: &str) -> String {
    format!(
        "    - name: {name}\n      url: {url}\n      secret: \"${{HOOK_SECRET}}\"\n      format: {format}\n      events: {events}\n"
    )
}

/// The requests of one event about one approval.
fn about<'a>(got: &'a [Received], event: &str, uuid: &str) -> Vec<&'a Received> {
    got.iter()
        .filter(|r| r.event == event && r.body["approval"]["uuid"] == uuid)
        .collect()
}

fn delivered_about(got: &[Received], event: &str, uuid: &str) -> bool {
    about(got, event, uuid).iter().any(|r| r.status == 200)
}

/// The path of a link (`/ui/link/TOKEN` → `/links/TOKEN`, the API).
fn api_path(link: &str) -> String {
    let token = link.rsplit('/').next().unwrap();
    format!("/links/{token}")
}

async fn pending_uuids(a: &Agent) -> Vec<String> {
    get_json(a, "/approvals").await["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["uuid"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_retry_sign_remind_and_survive_a_restart_and_links_decide_once() {
    let hook = Receiver::start(SECRET).await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}notifications:\n  link_key: \"${{LINK_KEY}}\"\n  reminders: [2s]\n  targets:\n{}",
        resources_yaml("notify-agent", dir.path()),
        hook_target(
            "oncall",
            &hook.url,
            "json",
            "[approval.requested, approval.reminder, approval.decided]"
        )
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let env = [("HOOK_SECRET", SECRET), ("LINK_KEY", LINK_KEY)];
    // A process: killed with deliveries due, then started again.
    let a = Agent::start_with_env(&cfg, &env);

    // 500 twice, then 200: three attempts of one delivery, all signed.
    hook.script([Answer::Status(500, None), Answer::Status(500, None)]);
    let (status, body) = post_json(&a, "/conversations", json!({"message": "add apples 50"})).await;
    assert_eq!(status, 201, "{body}");
    let uuid = waiting_uuid(&body);
    let got = hook
        .wait_until(Duration::from_secs(20), "the request delivered", |g| {
            delivered_about(g, "approval.requested", &uuid)
        })
        .await;
    let tries = about(&got, "approval.requested", &uuid);
    assert_eq!(
        tries.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![500, 500, 200]
    );
    assert!(tries.iter().all(|r| r.signed), "every attempt is signed");
    let id = &tries[0].delivery;
    assert!(
        tries
            .iter()
            .all(|r| &r.delivery == id && r.body["id"] == *id),
        "retries keep the id"
    );
    assert!(tries[1].at.duration_since(tries[0].at) >= Duration::from_millis(400));
    let b = &tries[2].body;
    assert_eq!(b["event"], "approval.requested");
    assert_eq!(b["agent"], "notify-agent");
    assert!(b["at"].as_str().unwrap().ends_with('Z'), "{b}");
    let ap = &b["approval"];
    assert_eq!(ap["tool"], "resources_add");
    assert_eq!(ap["server"], "resources");
    assert_eq!(
        ap["arguments"],
        json!({"name": "apples", "value": 50}),
        "{b}"
    );
    assert_eq!(ap["rule"], "annotation");
    assert_eq!(ap["requested_by"], "anonymous");
    assert_eq!(ap["quorum"], 1);
    assert!(ap["chain"].is_array() && ap["expires_at"].is_null(), "{b}");
    assert!(ap["description"].is_string(), "{b}");
    let links = b["links"].clone();
    for k in ["open", "approve", "reject"] {
        assert!(
            links[k]
                .as_str()
                .unwrap()
                .starts_with(&format!("{}/ui/link/", a.url(""))),
            "{links}"
        );
    }

    // The outbox as operators see it.
    let list = get_json(&a, "/notifications").await;
    let row = list["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == *id)
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(row["status"], "delivered", "{row}");
    assert_eq!(row["attempts"], 3, "{row}");
    assert_eq!(row["last_error"], "HTTP 500", "{row}");
    assert_eq!(
        support::client()
            .get(a.url("/notifications?status=nope"))
            .send()
            .await
            .unwrap()
            .status(),
        400
    );

    // A reminder 2 s later, while it is still pending.
    hook.wait_until(Duration::from_secs(10), "a reminder", |g| {
        delivered_about(g, "approval.reminder", &uuid)
    })
    .await;

    // GET shows the link and changes nothing.
    let approve = api_path(links["approve"].as_str().unwrap());
    let view = get_json(&a, &approve).await;
    assert_eq!(view["action"], "approve", "{view}");
    assert_eq!(view["state"], "valid", "{view}");
    assert_eq!(view["approval"]["uuid"], uuid.as_str());
    assert!(pending_uuids(&a).await.contains(&uuid));

    // A changed byte is refused, on GET and POST.
    let mut bad = approve.clone().into_bytes();
    let i = bad.len() - 3;
    bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
    let bad = String::from_utf8(bad).unwrap();
    let r = support::client().get(a.url(&bad)).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let (status, body) = post_json(&a, &bad, json!({})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("signature"),
        "{body}"
    );
    assert!(pending_uuids(&a).await.contains(&uuid));

    // POST decides, once.
    let (status, body) = post_json(&a, &approve, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"]["response"]
            .as_str()
            .unwrap()
            .starts_with("resources_add answered"),
        "{body}"
    );
    let (status, body) = post_json(&a, &approve, json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("used"), "{body}");
    assert_eq!(get_json(&a, &approve).await["state"], "used");
    let reject = api_path(links["reject"].as_str().unwrap());
    let (status, _) = post_json(&a, &reject, json!({})).await;
    assert_eq!(status, 409, "a notification's links work once together");
    let got = hook
        .wait_until(Duration::from_secs(10), "the decision", |g| {
            delivered_about(g, "approval.decided", &uuid)
        })
        .await;
    let decided = about(&got, "approval.decided", &uuid)
        .into_iter()
        .find(|r| r.status == 200)
        .unwrap()
        .body
        .clone();
    assert_eq!(decided["decision"], "approved", "{decided}");
    assert_eq!(decided["decided_via"], "link", "{decided}");
    assert!(decided["links"]["approve"].is_null(), "{decided}");

    // The receiver is down while the agent is killed and restarted: the
    // notification waits in the outbox and goes out after the restart.
    let (port, earlier) = hook.stop();
    let (status, body) = post_json(&a, "/conversations", json!({"message": "add pears 60"})).await;
    assert_eq!(status, 201, "{body}");
    let second = waiting_uuid(&body);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let list = get_json(&a, "/notifications?status=pending").await;
        let failed = list["deliveries"].as_array().unwrap().iter().any(|d| {
            d["approval_uuid"] == second.as_str()
                && d["event"] == "approval.requested"
                && d["attempts"].as_u64().unwrap_or(0) >= 1
        });
        if failed {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no failed attempt: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    a.kill9();
    let hook = Receiver::on_port(SECRET, port, earlier).await;
    let a = Agent::start_with_env(&cfg, &env);
    let got = hook
        .wait_until(Duration::from_secs(20), "delivery after the restart", |g| {
            delivered_about(g, "approval.requested", &second)
        })
        .await;
    // No id was delivered twice.
    let mut ok: BTreeMap<&str, usize> = BTreeMap::new();
    for r in got.iter().filter(|r| r.status == 200) {
        *ok.entry(r.delivery.as_str()).or_default() += 1;
    }
    assert!(ok.values().all(|n| *n == 1), "{ok:?}");
    let metrics = support::client()
        .get(a.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("stopgo_notifications{status=\"delivered\"}"),
        "{metrics}"
    );
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_receiver_times_out_and_slack_gets_block_kit() {
    let hook = Receiver::start(SECRET).await;
    hook.script([Answer::Stall(Duration::from_secs(13))]);
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}notifications:\n  link_key: \"${{LINK_KEY}}\"\n  targets:\n{}",
        resources_yaml("slack-agent", dir.path()),
        hook_target("chat", &hook.url, "slack", "[approval.requested]")
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve_with_env(&cfg, &[("HOOK_SECRET", SECRET), ("LINK_KEY", LINK_KEY)]).await;
    let (status, body) = post_json(&a, "/conversations", json!({"message": "remove apples"})).await;
    assert_eq!(status, 201, "{body}");
    waiting_uuid(&body);
    let got = hook
        .wait_until(Duration::from_secs(30), "a retry after the timeout", |g| {
            g.iter().any(|r| r.status == 200)
        })
        .await;
    assert_eq!(got.len(), 2, "one stalled attempt, one delivered");
    assert_eq!(got[0].delivery, got[1].delivery);
    let waited = got[1].at.duration_since(got[0].at);
    assert!(waited >= Duration::from_secs(10), "{waited:?}");
    let list = get_json(&a, "/notifications").await;
    assert_eq!(list["deliveries"][0]["attempts"], 2, "{list}");
    assert!(
        list["deliveries"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{list}"
    );

    // Block Kit's shape: a text fallback, blocks of known types, the
    // arguments as a code block, link buttons with URLs.
    let m = &got[1].body;
    assert!(got[1].signed);
    assert!(
        m["text"]
            .as_str()
            .unwrap()
            .contains("approval needed for resources_remove"),
        "{m}"
    );
    let blocks = m["blocks"].as_array().unwrap();
    assert!(blocks.len() <= 50);
    for b in blocks {
        let t = b["type"].as_str().unwrap();
        assert!(
            ["header", "section", "actions", "context"].contains(&t),
            "{b}"
        );
        if t == "header" {
            assert_eq!(b["text"]["type"], "plain_text");
            assert!(b["text"]["text"].as_str().unwrap().chars().count() <= 150);
        }
        if t == "section" {
            let text_ok = b["text"]["type"] == "mrkdwn" && b["text"]["text"].is_string();
            let fields_ok = b["fields"].as_array().is_some_and(|f| {
                f.len() <= 10
                    && f.iter()
                        .all(|x| x["type"] == "mrkdwn" && x["text"].is_string())
            });
            assert!(text_ok || fields_ok, "{b}");
        }
    }
    let code = blocks
        .iter()
        .filter_map(|b| b["text"]["text"].as_str())
        .find(|t| t.starts_with("```"))
        .unwrap_or_else(|| panic!("no code block: {m}"));
    assert!(code.contains("\"pattern\": \"apples\""), "{code}");
    let fields: Vec<String> = blocks
        .iter()
        .flat_map(|b| b["fields"].as_array().cloned().unwrap_or_default())
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect();
    for label in ["*Tool:*", "*Rule:*", "*Requested by:*", "*Expires:*"] {
        assert!(
            fields.iter().any(|f| f.starts_with(label)),
            "{label}: {fields:?}"
        );
    }
    let actions = blocks.iter().find(|b| b["type"] == "actions").unwrap();
    let buttons: Vec<(&str, &str)> = actions["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["type"], "button");
            assert_eq!(e["text"]["type"], "plain_text");
            (
                e["text"]["text"].as_str().unwrap(),
                e["url"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        buttons.iter().map(|b| b.0).collect::<Vec<_>>(),
        ["Open", "Approve", "Reject"]
    );
    assert!(buttons.iter().all(|b| b.1.starts_with("http://127.0.0.1:")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_has_text_and_html_with_the_same_links() {
    let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../.tools/aiosmtpd/bin/python");
    assert!(
        std::path::Path::new(python).exists(),
        "aiosmtpd is missing: run `make setup-test` (scripts/setup.sh test)"
    );
    let mut cmd = std::process::Command::new(python);
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/smtp_sink.py"
    ));
    let smtp = test_support::process::Process::start(
        cmd,
        "listening on smtp://",
        "aiosmtpd",
        Duration::from_secs(20),
    );
    let (host, port) = smtp.ready.rsplit_once(':').unwrap();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}notifications:\n  link_key: \"${{LINK_KEY}}\"\n  targets:\n    - name: mail\n      smtp: {{host: {host}, port: {port}, from: stopgo@example.com}}\n      to: [oncall@example.com, second@example.com]\n      events: [approval.requested]\n",
        resources_yaml("mail-agent", dir.path()),
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve_with_env(&cfg, &[("LINK_KEY", LINK_KEY)]).await;
    let (status, body) = post_json(&a, "/conversations", json!({"message": "add plums 70"})).await;
    assert_eq!(status, 201, "{body}");
    let uuid = waiting_uuid(&body);
    // The sink's log is read blocking: the agent serving in this
    // process goes on on the other worker meanwhile.
    let line = tokio::task::block_in_place(|| smtp.wait_for_log("MESSAGE "));
    let m: Value = serde_json::from_str(
        line.lines()
            .find_map(|l| l.strip_prefix("MESSAGE "))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(m["mail_from"], "stopgo@example.com", "{m}");
    assert_eq!(
        m["rcpt_tos"],
        json!(["oncall@example.com", "second@example.com"])
    );
    assert!(
        m["subject"]
            .as_str()
            .unwrap()
            .contains("mail-agent: approval needed for resources_add"),
        "{m}"
    );
    assert_eq!(m["content_type"], "multipart/alternative");
    let list = get_json(&a, "/notifications").await;
    let id = list["deliveries"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(list["deliveries"][0]["status"], "delivered", "{list}");
    assert!(m["message_id"].as_str().unwrap().contains(&id), "{m}");
    let parts = m["parts"].as_array().unwrap();
    let part = |t: &str| {
        parts
            .iter()
            .find(|p| p["type"] == t)
            .unwrap_or_else(|| panic!("no {t}: {m}"))["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (text, html) = (part("text/plain"), part("text/html"));
    let link_of = |s: &str, label: &str| -> String {
        let at = s.find(&format!("{label}: ")).unwrap() + label.len() + 2;
        s[at..].split_whitespace().next().unwrap().to_string()
    };
    let approve = link_of(&text, "Approve");
    assert!(approve.contains("/ui/link/"), "{text}");
    assert!(html.contains(&format!("href=\"{approve}\"")), "{html}");
    assert!(html.contains(&format!("href=\"{}\"", link_of(&text, "Reject"))));
    for fact in ["resources_add", "plums", "annotation", "anonymous"] {
        assert!(text.contains(fact) && html.contains(fact), "{fact}");
    }
    // The emailed link decides.
    let (status, body) = post_json(&a, &api_path(&approve), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(!pending_uuids(&a).await.contains(&uuid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_decide_as_the_signed_in_principal_and_expire_with_their_approval() {
    let hook = Receiver::start(SECRET).await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}auth:\n  mode: tokens\n  tokens:\n    - {{name: alice, token: \"${{ALICE_TOKEN}}\", roles: [approver]}}\n    - {{name: bob, token: \"${{BOB_TOKEN}}\", roles: [requester]}}\n    - {{name: ops, token: \"${{OPS_TOKEN}}\", roles: [admin]}}\napprovals:\n  expires_in: 3s\n  on_expiry: escalate\n  escalate_to: [role:admin]\nnotifications:\n  link_key: \"${{LINK_KEY}}\"\n  targets:\n{}",
        resources_yaml("auth-agent", dir.path()),
        hook_target(
            "oncall",
            &hook.url,
            "json",
            "[approval.requested, approval.escalated, approval.expired, approval.decided]"
        )
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let (alice, bob, ops) = (
        "alice-token-0123456789",
        "bob-token-0123456789ab",
        "ops-token-0123456789ab",
    );
    let a = Agent::serve_with_env(
        &cfg,
        &[
            ("HOOK_SECRET", SECRET),
            ("LINK_KEY", LINK_KEY),
            ("ALICE_TOKEN", alice),
            ("BOB_TOKEN", bob),
            ("OPS_TOKEN", ops),
        ],
    )
    .await;
    let c = support::client();
    let call = |method: reqwest::Method, path: &str, token: Option<&str>| {
        let mut r = c
            .request(method, a.url(path))
            .timeout(Duration::from_secs(30));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r
    };
    let send = |path: &str, token: Option<&str>, body: Value| {
        let r = call(reqwest::Method::POST, path, token).json(&body);
        async move {
            let resp = r.send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, body) = send(
        "/conversations",
        Some(bob),
        json!({"message": "add figs 80"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let first = waiting_uuid(&body);
    let got = hook
        .wait_until(Duration::from_secs(10), "the request", |g| {
            delivered_about(g, "approval.requested", &first)
        })
        .await;
    let links = about(&got, "approval.requested", &first)[0].body["links"].clone();
    assert_eq!(
        about(&got, "approval.requested", &first)[0].body["approval"]["requested_by"],
        "bob"
    );
    let reject = api_path(links["reject"].as_str().unwrap());

    // Opening needs credentials, and a requester may look but not decide.
    let r = call(reqwest::Method::GET, &reject, None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = call(reqwest::Method::GET, &reject, Some(bob))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (status, body) = send(&reject, Some(bob), json!({})).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = send(&reject, None, json!({})).await;
    assert_eq!(status, 401, "{body}");
    // The approver rejects through it, with a reason.
    let (status, body) = send(&reject, Some(alice), json!({"reason": "not today"})).await;
    assert_eq!(status, 200, "{body}");
    let got = hook
        .wait_until(Duration::from_secs(10), "the rejection", |g| {
            delivered_about(g, "approval.decided", &first)
        })
        .await;
    let d = &about(&got, "approval.decided", &first)
        .into_iter()
        .find(|r| r.status == 200)
        .unwrap()
        .body;
    assert_eq!(d["decision"], "rejected", "{d}");
    assert_eq!(d["decided_by"], "alice", "{d}");
    assert_eq!(d["decided_via"], "link", "{d}");
    assert_eq!(d["reason"], "not today", "{d}");

    // Escalated after 3 s, expired 3 s later: both announced; its links
    // then say it expired.
    let (status, body) = send(
        "/conversations",
        Some(bob),
        json!({"message": "add kiwis 90"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let second = waiting_uuid(&body);
    let got = hook
        .wait_until(Duration::from_secs(20), "escalation and expiry", |g| {
            delivered_about(g, "approval.escalated", &second)
                && delivered_about(g, "approval.expired", &second)
        })
        .await;
    let esc = &about(&got, "approval.escalated", &second)[0].body;
    assert_eq!(
        esc["approval"]["approvers"],
        json!(["role:approver", "role:admin"]),
        "{esc}"
    );
    assert!(esc["links"]["approve"].is_string(), "{esc}");
    let expired = &about(&got, "approval.expired", &second)[0].body;
    assert!(
        expired["reason"].as_str().unwrap().contains("expired"),
        "{expired}"
    );
    let links = about(&got, "approval.requested", &second)[0].body["links"].clone();
    let approve = api_path(links["approve"].as_str().unwrap());
    let (status, body) = send(&approve, Some(alice), json!({})).await;
    assert_eq!(status, 409, "{body}");
    let r = call(reqwest::Method::GET, &approve, Some(alice))
        .send()
        .await
        .unwrap();
    let view: Value = r.json().await.unwrap();
    assert_eq!(view["state"], "expired", "{view}");
    assert!(view["message"].as_str().unwrap().contains("expired"));

    // Dead letters: none here, and retrying a delivered row is refused
    // (admin only).
    let list: Value = call(reqwest::Method::GET, "/notifications", Some(alice))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = list["deliveries"][0]["id"].as_str().unwrap().to_string();
    let (status, _) = send(
        &format!("/notifications/{id}/retry"),
        Some(alice),
        json!({}),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = send(&format!("/notifications/{id}/retry"), Some(ops), json!({})).await;
    assert_eq!(status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_past_the_retry_window_are_dead_letters_an_admin_can_send_again() {
    let hook = Receiver::start(SECRET).await;
    hook.script((0..5).map(|_| Answer::Status(503, Some(1))));
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}notifications:\n  link_key: \"${{LINK_KEY}}\"\n  retry_for: 2s\n  targets:\n{}",
        resources_yaml("dead-agent", dir.path()),
        hook_target("oncall", &hook.url, "json", "[approval.requested]")
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve_with_env(&cfg, &[("HOOK_SECRET", SECRET), ("LINK_KEY", LINK_KEY)]).await;
    let (status, body) = post_json(&a, "/conversations", json!({"message": "add limes 3"})).await;
    assert_eq!(status, 201, "{body}");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let dead = loop {
        let list = get_json(&a, "/notifications?status=dead").await;
        if let Some(d) = list["deliveries"].as_array().unwrap().first() {
            break d.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no dead letter");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        dead["last_error"].as_str().unwrap().contains("HTTP 503"),
        "{dead}"
    );
    let tries = hook.received();
    assert!(
        tries.len() >= 2 && tries.iter().all(|r| r.status == 503),
        "{}",
        tries.len()
    );
    // Retry-After: 1 was honoured between attempts.
    assert!(tries[1].at.duration_since(tries[0].at) >= Duration::from_millis(900));
    // The receiver recovers; the dead letter is sent again on request.
    hook.clear_script();
    let id = dead["id"].as_str().unwrap();
    let (status, body) = post_json(&a, &format!("/notifications/{id}/retry"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    hook.wait_until(Duration::from_secs(10), "the retried dead letter", |g| {
        g.iter().any(|r| r.status == 200 && r.delivery == id)
    })
    .await;
    let (status, _) = post_json(&a, &format!("/notifications/{id}/retry"), json!({})).await;
    assert_eq!(status, 409);
}

#[test]
fn bad_notification_config_stops_the_agent_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "notifications:\n  targets:\n    - {name: x, url: \"ftp://h/\"}\n",
            "notifications.targets[0].url",
        ),
        (
            "notifications:\n  targets:\n    - {name: x, url: \"http://h/\", secret: literal-secret}\n",
            "notifications.targets[0].secret",
        ),
        (
            "notifications:\n  targets:\n    - {name: x, url: \"http://h/\", events: [approval.done]}\n",
            "notifications.targets[0].events[0]",
        ),
        (
            "notifications:\n  targets:\n    - {name: m, smtp: {host: h, from: not-an-address}, to: [a@b.c]}\n",
            "notifications.targets[0].smtp.from",
        ),
        (
            "notifications:\n  targets:\n    - {name: m, smtp: {host: h, from: a@b.c}}\n",
            "notifications.targets[0].to",
        ),
        (
            "notifications:\n  reminders: [soon]\n",
            "notifications.reminders[0]",
        ),
        (
            "notifications:\n  targets:\n    - {name: x, url: \"http://h/\"}\n    - {name: x, url: \"http://h/\"}\n",
            "notifications.targets[1].name",
        ),
    ];
    for (yaml, key) in cases {
        let cfg = write_config(dir.path(), &dir.path().join("data"), yaml);
        let (status, log) = support::run_to_exit(&cfg);
        assert!(!status.success(), "{yaml}");
        assert!(log.contains(key), "{key} not named for {yaml}:\n{log}");
    }
}
