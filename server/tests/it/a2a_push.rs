//! A2A push notifications with the real agent, the real `mcp-resources`
//! and a real webhook receiver: a send carrying a push config gets
//! `input-required` (with the approval's data part) and, after an
//! approval over REST, the completed task, each once although the
//! receiver failed twice, with the client's credentials and token; a
//! delivery survives the agent killed between the state change and the
//! send; configs are created, read, listed and deleted in both bindings
//! without their secrets showing (nor being stored in the clear); and a
//! loopback URL is refused unless the operator allows it.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::{Agent, client, post_json, resources_yaml, write_config};
use test_support::webhook::{Answer, Received, Receiver};

const SWITCH: &str = "a2a_push_allow_private: true\n";

async fn rpc(a: &Agent, method: &str, params: Value) -> Value {
    let v = if method.contains('/') { "0.3" } else { "1.0" };
    client()
        .post(a.url("/a2a"))
        .header("A2A-Version", v)
        .timeout(Duration::from_secs(30))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn send_with_push(id: &str, text: &str, url: &str) -> Value {
    json!({
        "message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"taskPushNotificationConfig": {
            "id": "cfg-1", "url": url, "token": "tok-secret-1",
            "authentication": {"scheme": "Bearer", "credentials": "cred-secret-1"}
        }}
    })
}

fn state_of(r: &Received) -> String {
    r.body["statusUpdate"]["status"]["state"]
        .as_str()
        .or_else(|| r.body["task"]["status"]["state"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn delivered(got: &[Received], task: &str, state: &str) -> usize {
    got.iter()
        .filter(|r| r.status == 200 && state_of(r) == state)
        .filter(|r| r.body["statusUpdate"]["taskId"] == task || r.body["task"]["id"] == task)
        .count()
}

/// How many push attempts the agent has logged as failed for want of a
/// connection (`notify/worker.rs` logs each failed attempt with its error).
fn refused_pushes(a: &Agent) -> usize {
    a.log()
        .lines()
        .filter(|l| l.contains("notification attempt failed"))
        .filter(|l| l.contains("a2a-push:") && l.contains("could not connect"))
        .count()
}

/// Everything the agent at `cfg` stored, as text: each file under `data`
/// and, when `cfg` names a PostgreSQL store, every row of its database.
fn stored_text(cfg: &Path, data: &Path) -> String {
    let mut text = String::new();
    let mut dirs = vec![data.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for f in std::fs::read_dir(&d).unwrap() {
            let path = f.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
        }
    }
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(cfg).unwrap()).unwrap();
    if yaml["store"]["backend"].as_str() == Some("postgres") {
        let url = yaml["store"]["url"].as_str().unwrap();
        let rows = test_support::postgres::dump(url);
        assert!(!rows.is_empty(), "the PostgreSQL store at {url} holds rows");
        text.push_str(&rows);
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_deliver_each_state_once_with_credentials_and_survive_a_restart() {
    let hook = Receiver::start("unused").await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!("{}{SWITCH}", resources_yaml("push-agent", dir.path()));
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::start(&cfg);

    // input-required, delivered after two failures, with the approval data.
    hook.script([Answer::Status(500, None), Answer::Status(503, Some(1))]);
    let r = rpc(
        &a,
        "SendMessage",
        send_with_push("p-1", "add apples 5", &hook.url),
    )
    .await;
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let tid = task["id"].as_str().unwrap().to_string();
    let got = hook
        .wait_until(Duration::from_secs(20), "input-required delivered", |g| {
            delivered(g, &tid, "TASK_STATE_INPUT_REQUIRED") == 1
        })
        .await;
    let first = got
        .iter()
        .find(|r| r.status == 200 && state_of(r) == "TASK_STATE_INPUT_REQUIRED")
        .unwrap();
    assert_eq!(first.authorization, "Bearer cred-secret-1");
    assert_eq!(first.token, "tok-secret-1");
    let data = &first.body["statusUpdate"]["status"]["message"]["parts"][1]["data"];
    assert_eq!(data["tool"], "resources_add", "{}", first.body);
    let uuid = data["approval_uuid"].as_str().unwrap().to_string();
    assert_eq!(
        got.iter().filter(|r| r.status != 200).count(),
        2,
        "two failed attempts"
    );

    // Approved over REST: the completed task, with its answer.
    let (s, body) = post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(s, 200, "{body}");
    assert!(body["result"]["response"].is_string(), "{body}");
    let got = hook
        .wait_until(Duration::from_secs(20), "completed delivered", |g| {
            delivered(g, &tid, "TASK_STATE_COMPLETED") == 1
        })
        .await;
    let done = got
        .iter()
        .find(|r| r.status == 200 && state_of(r) == "TASK_STATE_COMPLETED")
        .unwrap();
    assert!(
        done.body["task"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("apples")
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = hook.received();
    assert_eq!(
        delivered(&got, &tid, "TASK_STATE_INPUT_REQUIRED"),
        1,
        "once"
    );
    assert_eq!(delivered(&got, &tid, "TASK_STATE_COMPLETED"), 1, "once");

    // The config in both bindings, never with its secrets.
    let got1 = rpc(
        &a,
        "GetTaskPushNotificationConfig",
        json!({"taskId": tid, "id": "cfg-1"}),
    )
    .await;
    assert_eq!(got1["result"]["url"], hook.url.as_str(), "{got1}");
    assert_eq!(got1["result"]["authentication"]["scheme"], "Bearer");
    assert!(!got1.to_string().contains("secret-1"), "{got1}");
    let listed: Value = client()
        .get(a.url(&format!("/a2a/tasks/{tid}/pushNotificationConfigs")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["configs"][0]["id"], "cfg-1", "{listed}");
    assert!(!listed.to_string().contains("secret-1"));
    let old = rpc(
        &a,
        "tasks/pushNotificationConfig/get",
        json!({"id": tid, "pushNotificationConfigId": "cfg-1"}),
    )
    .await;
    assert_eq!(
        old["result"]["pushNotificationConfig"]["url"],
        hook.url.as_str(),
        "{old}"
    );
    let missing = rpc(
        &a,
        "GetTaskPushNotificationConfig",
        json!({"taskId": tid, "id": "nope"}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");

    // A second task: its config made after it waits gets the current state;
    // then the receiver is down while it is approved and the agent is
    // killed; restarted, the agent still delivers the completed task.
    let r = rpc(
        &a,
        "SendMessage",
        json!({"message": {"messageId": "p-2", "role": "ROLE_USER", "parts": [{"text": "add pears 3"}]}}),
    )
    .await;
    let t2 = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let made = client()
        .post(a.url(&format!("/a2a/tasks/{t2}/pushNotificationConfigs")))
        .header("A2A-Version", "1.0")
        .json(&json!({"id": "cfg-2", "url": hook.url, "token": "tok-2"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    let made: Value = made.json().await.unwrap();
    assert_eq!(made["id"], "cfg-2", "{made}");
    hook.wait_until(Duration::from_secs(20), "t2 waiting delivered", |g| {
        delivered(g, &t2, "TASK_STATE_INPUT_REQUIRED") == 1
    })
    .await;
    let got = hook.received();
    let uuid2 = got
        .iter()
        .find(|r| r.body["statusUpdate"]["taskId"] == t2.as_str())
        .and_then(|r| {
            r.body["statusUpdate"]["status"]["message"]["parts"][1]["data"]["approval_uuid"]
                .as_str()
        })
        .unwrap()
        .to_string();
    let (port, url) = (hook.port, hook.url.clone());
    let (_, seen) = hook.stop();
    let refused = refused_pushes(&a);
    let (s, _) = post_json(
        &a,
        &format!("/approvals/{uuid2}"),
        json!({"approved": true}),
    )
    .await;
    assert_eq!(s, 200);
    // The receiver was down: the agent tried t2's push and could not
    // connect (cfg-1's task is final, so the attempt is cfg-2's). Killed
    // then, with the completed task not delivered.
    support::until(
        Duration::from_secs(20),
        "a push attempt refused by the stopped receiver",
        || refused_pushes(&a) > refused,
    )
    .await;
    a.kill9();
    // Nothing in the store holds the secrets in the clear: its files, and
    // on PostgreSQL its database's rows, which hold the configs' URL.
    let stored = stored_text(&cfg, &dir.path().join("data"));
    assert!(
        stored.contains(&url),
        "the scan read the push configs ({} bytes)",
        stored.len()
    );
    for secret in ["cred-secret-1", "tok-secret-1", "tok-2"] {
        assert!(!stored.contains(secret), "{secret} stored in the clear");
    }
    let hook = Receiver::on_port("unused", port, seen).await;
    let a = Agent::start(&cfg);
    hook.wait_until(
        Duration::from_secs(30),
        "t2 completed after the restart",
        |g| delivered(g, &t2, "TASK_STATE_COMPLETED") >= 1,
    )
    .await;

    // Deleted: no more pushes, and deleting again still succeeds.
    for _ in 0..2 {
        let del = client()
            .delete(a.url(&format!("/a2a/tasks/{t2}/pushNotificationConfigs/cfg-2")))
            .send()
            .await
            .unwrap();
        assert_eq!(del.status(), 200);
    }
    let gone = rpc(
        &a,
        "GetTaskPushNotificationConfig",
        json!({"taskId": t2, "id": "cfg-2"}),
    )
    .await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
}

/// Issue 40 (7): a task's state never leaves a final state. The push
/// scenario (input-required, approved over REST, completed) 50 times, ten
/// tasks at a time, with a receiver that fails now and then, so the event
/// watcher, the sweep, retries and the outbox's parallel deliveries all
/// race. For each task the receiver gets its states in the order they
/// happened: nothing after `completed`, `completed` once, and
/// `input-required` once, before it (the receiver records arrivals in
/// order).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_never_leaves_a_final_state_over_fifty_runs() {
    let hook = std::sync::Arc::new(Receiver::start("unused").await);
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!("{}{SWITCH}", resources_yaml("push-order", dir.path()));
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = std::sync::Arc::new(Agent::serve(&cfg).await);
    let mut tasks = Vec::new();
    for round in 0..5 {
        // A few failures each round: retries interleave with new states.
        hook.script([
            Answer::Status(500, None),
            Answer::Status(503, Some(1)),
            Answer::Status(500, None),
        ]);
        let mut runs = Vec::new();
        for i in 0..10 {
            let (a, url, hook) = (a.clone(), hook.url.clone(), hook.clone());
            runs.push(tokio::spawn(async move {
                let id = format!("order-{round}-{i}");
                let r = rpc(&a, "SendMessage", send_with_push(&id, "add apples 1", &url)).await;
                let task = &r["result"]["task"];
                assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
                let tid = task["id"].as_str().unwrap().to_string();
                // Decided only once `input-required` was delivered: the
                // watcher announces the state it reads, so a decision
                // faster than it (a loaded machine) would skip that state,
                // which this test does not measure.
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                while delivered(&hook.received(), &tid, "TASK_STATE_INPUT_REQUIRED") == 0 {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "{tid}: input-required never delivered"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let c: Value = client()
                    .get(a.url(&format!("/conversations/{tid}")))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let uuid = c["conversation"]["pending_approval"]["uuid"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no pending approval: {c}"))
                    .to_string();
                let (s, body) =
                    post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
                assert_eq!(s, 200, "{body}");
                tid
            }));
        }
        for r in runs {
            tasks.push(r.await.unwrap());
        }
    }
    assert_eq!(tasks.len(), 50);
    let all = tasks.clone();
    hook.wait_until(Duration::from_secs(60), "every completed delivered", |g| {
        all.iter()
            .all(|t| delivered(g, t, "TASK_STATE_COMPLETED") >= 1)
    })
    .await;
    // Longer than a sweep (5 s): a stale state would be queued by now.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let got = hook.received();
    for t in &tasks {
        let states: Vec<String> = got
            .iter()
            .filter(|r| r.status == 200)
            .filter(|r| {
                r.body["statusUpdate"]["taskId"] == t.as_str() || r.body["task"]["id"] == t.as_str()
            })
            .map(state_of)
            .collect();
        let done = states
            .iter()
            .position(|s| s == "TASK_STATE_COMPLETED")
            .unwrap_or_else(|| panic!("{t}: no completed in {states:?}"));
        assert_eq!(
            done,
            states.len() - 1,
            "{t}: a state after completed: {states:?}"
        );
        assert_eq!(
            states
                .iter()
                .filter(|s| *s == "TASK_STATE_INPUT_REQUIRED")
                .count(),
            1,
            "{t}: {states:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_urls_to_internal_addresses_are_refused_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = resources_yaml("push-guard", dir.path());
    let a = Agent::serve(&write_config(dir.path(), &dir.path().join("data"), &yaml)).await;
    let card: Value = client()
        .get(a.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/",
        "http://10.0.0.1/",
        "ftp://example.com/x",
    ] {
        // On the send: refused before any task is made.
        let r = rpc(
            &a,
            "SendMessage",
            send_with_push("g-1", "list resources", url),
        )
        .await;
        assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
        assert!(
            r["error"]["message"].as_str().unwrap().contains("url"),
            "{r}"
        );
    }
    let list = rpc(&a, "ListTasks", json!({})).await;
    assert_eq!(
        list["result"]["tasks"].as_array().unwrap().len(),
        0,
        "{list}"
    );
    // On a config of an existing task too, in both bindings.
    let r = rpc(
        &a,
        "SendMessage",
        json!({"message": {"messageId": "g-2", "role": "ROLE_USER", "parts": [{"text": "list resources"}]}}),
    )
    .await;
    let tid = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let refused = client()
        .post(a.url(&format!("/a2a/tasks/{tid}/pushNotificationConfigs")))
        .json(&json!({"url": "http://127.0.0.1:1/x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a2a_push_allow_private"),
        "{body}"
    );
    let old = rpc(
        &a,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": tid, "pushNotificationConfig": {"url": "http://192.168.0.10/x"}}),
    )
    .await;
    assert_eq!(old["error"]["code"], -32602, "{old}");
    let ok = rpc(
        &a,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": tid, "pushNotificationConfig": {"url": "https://example.com/hook"}}),
    )
    .await;
    assert_eq!(
        ok["result"]["pushNotificationConfig"]["url"], "https://example.com/hook",
        "{ok}"
    );
    assert!(ok["result"]["pushNotificationConfig"]["id"].is_string());
    let unknown = rpc(
        &a,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "nope", "url": "https://example.com/"}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32001, "{unknown}");
}
