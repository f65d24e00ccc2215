//! `agent --a2a-conformance`: the behaviours the official TCK drives by
//! messageId prefix, checked here so CI guards them (the TCK itself runs
//! from its own checkout: scripts/a2a-tck.sh). Also the protocol edges the
//! TCK insists on: exact error codes, plain-JSON errors before a 1.0 stream,
//! a client's contextId kept.

use crate::support;

use serde_json::{Value, json};
use std::process::Command;
use support::client;

struct Conf {
    _process: support::Process,
    base: String,
    _dir: tempfile::TempDir,
}

fn start() -> Conf {
    let dir = tempfile::tempdir().unwrap();
    let cfg = support::write_config(dir.path(), &dir.path().join("data"), "a2a_card: v1\n");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.arg("--config")
        .arg(&cfg)
        .arg("--a2a-conformance")
        .env("RUST_LOG", "info");
    let process = support::Process::server(cmd, "agent --a2a-conformance");
    Conf {
        base: format!("http://{}", process.ready),
        _process: process,
        _dir: dir,
    }
}

async fn rpc(c: &Conf, method: &str, params: Value) -> Value {
    client()
        .post(format!("{}/a2a", c.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn send(id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]}})
}

#[tokio::test]
async fn the_tck_behaviours_are_served_by_prefix() {
    let c = start();
    let card: Value = client()
        .get(format!("{}/.well-known/agent-card.json", c.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(card.get("url").is_none(), "a2a_card: v1 has no 0.3 keys");

    let done = rpc(&c, "SendMessage", send("tck-complete-task-1a2b-jsonrpc")).await;
    let t = &done["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(t["status"]["message"]["parts"][0]["text"], "Hello from TCK");

    let data = rpc(&c, "SendMessage", send("tck-artifact-data-1")).await;
    assert_eq!(
        data["result"]["task"]["artifacts"][0]["parts"][0]["data"],
        json!({"key": "value", "count": 42})
    );
    let file = rpc(&c, "SendMessage", send("tck-artifact-file-url-1")).await;
    let part = &file["result"]["task"]["artifacts"][0]["parts"][0];
    assert_eq!(
        (part["url"].as_str(), part["filename"].as_str()),
        (Some("https://example.com/output.txt"), Some("output.txt"))
    );

    let msg = rpc(&c, "SendMessage", send("tck-message-response-1")).await;
    assert_eq!(
        msg["result"]["message"]["parts"][0]["text"], "Direct message response",
        "{msg}"
    );
    assert!(msg["result"].get("task").is_none());

    // input-required, a follow-up on it, then cancel of another.
    let w = rpc(&c, "SendMessage", send("tck-input-required-1")).await;
    let tid = w["result"]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        w["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let follow = rpc(&c, "SendMessage", json!({"message": {"messageId": "tck-complete-task-2", "role": "ROLE_USER", "taskId": tid, "parts": [{"text": "TCK history message 1"}]}})).await;
    assert_eq!(
        follow["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{follow}"
    );
    let w = rpc(&c, "SendMessage", send("tck-input-required-2")).await;
    let tid = w["result"]["task"]["id"].as_str().unwrap().to_string();
    let cancelled = rpc(&c, "CancelTask", json!({"id": tid})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    assert_eq!(
        rpc(&c, "CancelTask", json!({"id": tid})).await["error"]["code"],
        -32002
    );

    // A client's contextId is kept and finds its task.
    let mut m = send("tck-complete-task-3");
    m["message"]["contextId"] = json!("tck-client-context-9");
    let r = rpc(&c, "SendMessage", m).await;
    assert_eq!(
        r["result"]["task"]["contextId"], "tck-client-context-9",
        "{r}"
    );
    let listed = rpc(
        &c,
        "ListTasks",
        json!({"context_id": "tck-client-context-9", "page_size": 5}),
    )
    .await;
    assert_eq!(
        listed["result"]["tasks"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
    assert_eq!(listed["result"]["nextPageToken"], "");

    // Streams: a terminal task cannot be subscribed to, as plain JSON.
    let resp = client()
        .post(format!("{}/a2a", c.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": r["result"]["task"]["id"]}}))
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32004);
    let resp = client()
        .post(format!("{}/a2a", c.base))
        .header("Content-Type", "text/plain")
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], -32005);
    let push = rpc(
        &c,
        "CreateTaskPushNotificationConfig",
        json!({"task_id": "t", "url": "https://example.com"}),
    )
    .await;
    // Push notifications are supported: an unknown task is not found.
    assert_eq!(push["error"]["code"], -32001);
}

/// `ListTasks` with a status filter pages through the matching tasks only,
/// newest first, and `totalSize` counts them (an index and a kept count
/// serve it, whatever else is stored).
#[tokio::test]
async fn list_tasks_filters_by_state_and_pages() {
    let c = start();
    let mut ids = Vec::new();
    for i in 0..3 {
        let done = rpc(&c, "SendMessage", send(&format!("list-filter-{i}"))).await;
        assert_eq!(
            done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{done}"
        );
        ids.push(done["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    ids.reverse();
    let first = rpc(
        &c,
        "ListTasks",
        json!({"status": "TASK_STATE_COMPLETED", "pageSize": 2}),
    )
    .await;
    let r = &first["result"];
    let page: Vec<&str> = r["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(page, [ids[0].as_str(), ids[1].as_str()], "{first}");
    assert_eq!(r["totalSize"], 3, "{first}");
    let token = r["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty(), "{first}");
    let rest = rpc(
        &c,
        "ListTasks",
        json!({"status": "TASK_STATE_COMPLETED", "pageSize": 2, "pageToken": token}),
    )
    .await;
    assert_eq!(rest["result"]["tasks"][0]["id"], ids[2].as_str(), "{rest}");
    assert_eq!(
        rest["result"]["tasks"].as_array().unwrap().len(),
        1,
        "{rest}"
    );
    assert_eq!(rest["result"]["nextPageToken"], "", "{rest}");
    let none = rpc(
        &c,
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    )
    .await;
    assert_eq!(none["result"]["tasks"], json!([]), "{none}");
    assert_eq!(none["result"]["totalSize"], 0, "{none}");
    let w = rpc(&c, "SendMessage", send("tck-input-required-list")).await;
    let waiting = rpc(
        &c,
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    )
    .await;
    assert_eq!(waiting["result"]["totalSize"], 1, "{waiting}");
    assert_eq!(
        waiting["result"]["tasks"][0]["id"], w["result"]["task"]["id"],
        "{waiting}"
    );
    // A token this server never issued is refused, naming it.
    let bad = rpc(
        &c,
        "ListTasks",
        json!({"status": "TASK_STATE_COMPLETED", "pageToken": "nope"}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}
