//! What the operator UI is built on (scripted model, real `mcp-resources`):
//! the SSE event streams with catch-up, the approvals inbox API, approval
//! outcomes and durations on tool calls, text search, and the generated API
//! documentation. The agent is served in the test's process
//! (`server::run` on 127.0.0.1:0), except where the process itself is
//! tested (SIGTERM).

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Agent, client, get_json, post_json, write_config};

const RULES: &str = r#"
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
default: "I can list and add resources."
"#;

fn config() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, RULES).unwrap();
    let yaml = format!(
        "llm: {{model: \"scripted:{}\"}}\nmcp_servers:\n  - name: resources\n    command: {}\n    args: [--db, {}]\n",
        rules.display(),
        test_support::process::workspace_bin("mcp-resources"),
        dir.path().join("resources.db").display()
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    (dir, cfg)
}

/// The agent as a process (the SIGTERM test).
fn start() -> (tempfile::TempDir, Agent) {
    let (dir, cfg) = config();
    (dir, Agent::start(&cfg))
}

/// The same agent served in this process (the other tests).
async fn serve() -> (tempfile::TempDir, Agent) {
    let (dir, cfg) = config();
    (dir, Agent::serve(&cfg).await)
}

/// One parsed SSE event.
#[derive(Debug, Clone)]
struct Sse {
    id: Option<String>,
    event: String,
    data: Value,
}

/// A minimal SSE reader over a streaming response.
struct Stream {
    resp: reqwest::Response,
    buf: String,
}

impl Stream {
    async fn open(a: &Agent, path: &str, last_event_id: Option<&str>) -> Stream {
        let mut req = client()
            .get(a.url(path))
            .header("accept", "text/event-stream")
            .timeout(Duration::from_secs(60));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        Stream {
            resp,
            buf: String::new(),
        }
    }

    /// The next event (comments and keep-alives skipped), within 10 s.
    async fn next(&mut self) -> Sse {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(end) = self.buf.find("\n\n") {
                    let block: String = self.buf.drain(..end + 2).collect();
                    let mut ev = Sse {
                        id: None,
                        event: "message".into(),
                        data: Value::Null,
                    };
                    let mut any = false;
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("id:") {
                            ev.id = Some(v.trim().to_string());
                        } else if let Some(v) = line.strip_prefix("event:") {
                            ev.event = v.trim().to_string();
                            any = true;
                        } else if let Some(v) = line.strip_prefix("data:") {
                            ev.data = serde_json::from_str(v.trim()).unwrap_or(Value::Null);
                            any = true;
                        }
                    }
                    if any {
                        return ev;
                    }
                    continue;
                }
                let chunk = self.resp.chunk().await.unwrap().expect("stream ended");
                self.buf.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .expect("no event within 10 s")
    }

    /// Events until one named `kind` (inclusive).
    async fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut out = Vec::new();
        loop {
            let e = self.next().await;
            let done = e.event == kind;
            out.push(e);
            if done {
                return out;
            }
        }
    }
}

#[tokio::test]
async fn events_follow_an_approval_from_request_to_result_and_catch_up_after_a_drop() {
    let (_d, a) = serve().await;
    let mut all = Stream::open(&a, "/events", None).await;

    let (status, body) = post_json(&a, "/conversations", json!({"message": "add apples 3"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["conversation"]["id"].as_str().unwrap().to_string();
    let uuid = body["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();

    let first = all.until("approval_requested").await;
    let kinds: Vec<&str> = first.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message_added",
            "model_called",
            "message_added",
            "approval_requested"
        ],
        "{first:#?}"
    );
    let asked = first.last().unwrap();
    assert_eq!(asked.data["conversation_id"], id.as_str());
    assert_eq!(asked.data["tool"], "resources_add");
    assert_eq!(asked.data["approval"], uuid.as_str());
    assert_eq!(asked.data["status"], "waiting_approval");
    assert_eq!(asked.data["kind"], "approval_requested");
    let resume_from = first[0].id.clone().expect("events carry ids");

    // The per-conversation stream of the same conversation.
    let mut one = Stream::open(&a, &format!("/conversations/{id}/events"), None).await;

    let (status, body) =
        post_json(&a, &format!("/approvals/{uuid}"), json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
    let rest = all.until("status_changed").await;
    let kinds: Vec<&str> = rest.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "approval_decided",
            "tool_call_started",
            "tool_call_finished",
            "model_called",
            "message_added",
            "status_changed"
        ],
        "{rest:#?}"
    );
    assert_eq!(rest[0].data["detail"], "approved");
    assert_eq!(rest[2].data["detail"], "ok");
    assert_eq!(rest.last().unwrap().data["running"], false);
    let mine = one.until("status_changed").await;
    assert_eq!(
        mine.len(),
        rest.len(),
        "the conversation stream has the same events"
    );

    // A client that dropped after the first event catches up from its id:
    // everything after it, in order, with no gap and no repeat.
    let mut again = Stream::open(&a, "/events", Some(&resume_from)).await;
    let mut replayed = Vec::new();
    for _ in 0..(first.len() - 1 + rest.len()) {
        replayed.push(again.next().await.event);
    }
    let expected: Vec<String> = first[1..]
        .iter()
        .chain(rest.iter())
        .map(|e| e.event.clone())
        .collect();
    assert_eq!(replayed, expected);

    // An id from another run cannot be replayed: the client is told to reload.
    let mut stale = Stream::open(&a, "/events", Some("0-5")).await;
    assert_eq!(stale.next().await.event, "resync");
}

/// The `resources_add` tool call of the conversation a POST answered with.
async fn add_call(a: &Agent, created: &Value) -> Value {
    let id = created["conversation"]["id"].as_str().unwrap();
    let c = get_json(a, &format!("/conversations/{id}")).await;
    c["conversation"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m.get("tool_call").filter(|t| t["name"] == "resources_add"))
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn the_inbox_lists_pending_approvals_oldest_first_and_tool_calls_show_the_outcome() {
    let (_d, a) = serve().await;
    let (_, b1) = post_json(&a, "/conversations", json!({"message": "add apples 3"})).await;
    let (_, b2) = post_json(&a, "/conversations", json!({"message": "add pears 4"})).await;
    let u1 = b1["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let u2 = b2["result"]["approval"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();

    let inbox = get_json(&a, "/approvals").await;
    let uuids: Vec<&str> = inbox["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(uuids, [u1.as_str(), u2.as_str()], "oldest first: {inbox}");
    assert_eq!(
        inbox["approvals"][0]["tool_args"],
        json!({"name": "apples", "value": 3})
    );
    assert_eq!(inbox["approvals"][0]["server"], "resources");
    assert_eq!(inbox["total"], 2);
    assert!(inbox.get("next_cursor").is_none(), "{inbox}");

    // A page at a time: the cursor is the last one shown.
    let first = get_json(&a, "/approvals?limit=1").await;
    assert_eq!(first["approvals"][0]["uuid"], u1.as_str(), "{first}");
    assert_eq!(first["total"], 2);
    assert_eq!(first["next_cursor"], u1.as_str());
    let second = get_json(&a, &format!("/approvals?limit=1&cursor={u1}")).await;
    assert_eq!(second["approvals"][0]["uuid"], u2.as_str(), "{second}");
    assert_eq!(second["approvals"].as_array().unwrap().len(), 1);
    assert!(second.get("next_cursor").is_none(), "{second}");
    // The count alone (the navigation's badge).
    assert_eq!(
        get_json(&a, "/approvals?limit=0").await,
        json!({"approvals": [], "total": 2})
    );
    for (bad, names) in [
        ("/approvals?limit=501", "limit"),
        ("/approvals?limit=lots", "limit"),
        ("/approvals?cursor=no-such-approval", "cursor"),
        ("/approvals?limt=1", "limt"),
    ] {
        let r = client().get(a.url(bad)).send().await.unwrap();
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.unwrap();
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains(names), "{bad}: {body}");
    }

    let resp = client()
        .post(a.url(&format!("/approvals/{u1}")))
        .header("x-session-id", "op-alice")
        .json(&json!({"approved": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (s, _) = post_json(
        &a,
        &format!("/approvals/{u2}"),
        json!({"approved": false, "reason": "no pears"}),
    )
    .await;
    assert_eq!(s, 200);
    let inbox = get_json(&a, "/approvals").await;
    assert_eq!(inbox["approvals"], json!([]));

    let call = add_call(&a, &b1).await;
    assert_eq!(call["approval"]["uuid"], u1.as_str());
    assert_eq!(call["approval"]["status"], "executed");
    // Mode none: the principal is `anonymous`; the session id is kept too.
    assert_eq!(call["approval"]["decided_by"], "anonymous");
    assert_eq!(call["approval"]["decided_via"], "rest");
    assert!(call["approval"]["decided_at"].is_string());
    // ...and the trail keeps the session that decided (AUTH.md §5).
    let trail = client()
        .get(a.url("/audit?format=jsonl"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let decided: Value = trail
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["event"] == "approval.decided" && r["approval_uuid"] == u1.as_str())
        .unwrap();
    assert_eq!(decided["details"]["session_id"], "op-alice", "{decided}");
    assert_eq!(decided["actor"], "anonymous");
    assert!(call["duration_ms"].is_u64(), "{call}");

    let call = add_call(&a, &b2).await;
    assert_eq!(call["approval"]["status"], "rejected");
    assert_eq!(call["approval"]["reason"], "no pears");
    assert!(call.get("duration_ms").is_none(), "it never ran: {call}");
}

#[tokio::test]
async fn search_finds_conversations_by_message_text_and_takes_wildcards_literally() {
    let (_d, a) = serve().await;
    post_json(
        &a,
        "/conversations",
        json!({"message": "hello about Zebras"}),
    )
    .await;
    post_json(
        &a,
        "/conversations",
        json!({"message": "something else 100%"}),
    )
    .await;
    let found = get_json(&a, "/conversations?q=zebra").await;
    assert_eq!(
        found["conversations"].as_array().unwrap().len(),
        1,
        "{found}"
    );
    let pct = get_json(&a, "/conversations?q=0%25").await;
    assert_eq!(pct["conversations"].as_array().unwrap().len(), 1, "{pct}");
    let none = get_json(&a, "/conversations?q=_%25_nothing").await;
    assert_eq!(none["conversations"], json!([]));
    let both = get_json(&a, "/conversations?q=e&status=active").await;
    assert_eq!(both["conversations"].as_array().unwrap().len(), 2);
    let long = "x".repeat(201);
    let resp = client()
        .get(a.url(&format!("/conversations?q={long}")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

/// DESIGN.md: a list item is a summary, never a history; `view=full`
/// gives whole conversations with the same paging.
#[tokio::test]
async fn list_items_summarise_and_view_full_gives_whole_conversations() {
    let (_d, a) = serve().await;
    let long = format!("ünïcode {} end", "y".repeat(300));
    let (_, first) = post_json(&a, "/conversations", json!({"message": long})).await;
    let first_id = first["conversation"]["id"].as_str().unwrap().to_string();
    let (_, waiting) = post_json(&a, "/conversations", json!({"message": "add pears 2"})).await;
    let waiting_id = waiting["conversation"]["id"].as_str().unwrap().to_string();
    let (_, empty) = post_json(&a, "/conversations", json!({})).await;
    let empty_id = empty["conversation"]["id"].as_str().unwrap().to_string();

    let list = get_json(&a, "/conversations").await;
    let items = list["conversations"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{list}");
    let item = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    for i in items {
        assert!(i.get("messages").is_none(), "no history in an item: {i}");
        for key in ["id", "session_id", "status", "created_at", "updated_at"] {
            assert!(i[key].is_string(), "{key} in {i}");
        }
    }
    let f = item(&first_id);
    let full = get_json(&a, &format!("/conversations/{first_id}")).await;
    let messages = full["conversation"]["messages"].as_array().unwrap();
    assert_eq!(f["message_count"], messages.len() as u64, "{f}");
    let last = messages.iter().rev().find(|m| m["content"] != "").unwrap();
    assert_eq!(f["last_message"]["role"], last["role"]);
    let expected: String = last["content"]
        .as_str()
        .unwrap()
        .chars()
        .take(200)
        .collect();
    assert_eq!(f["last_message"]["content"], expected.as_str());
    let title = f["title"].as_str().unwrap();
    assert_eq!(
        title.chars().count(),
        200,
        "a title is cut at 200 characters"
    );
    assert!(title.starts_with("ünïcode y"));
    assert_eq!(f["status"], "active");

    let w = item(&waiting_id);
    assert_eq!(w["status"], "waiting_approval");
    assert!(w["pending_approval"]["uuid"].is_string(), "{w}");
    assert_eq!(w["title"], "add pears 2");
    let e = item(&empty_id);
    assert_eq!(e["message_count"], 0);
    assert!(
        e.get("last_message").is_none() && e.get("title").is_none(),
        "{e}"
    );

    assert_eq!(list["summary"]["total"], 3);
    assert_eq!(list["summary"]["waiting_approval"], 1);
    assert_eq!(list["summary"]["active"], 2);

    let whole = get_json(&a, "/conversations?view=full&limit=2").await;
    let convs = whole["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert_eq!(convs[0]["id"], empty_id.as_str());
    assert_eq!(
        convs[1],
        get_json(&a, &format!("/conversations/{waiting_id}")).await["conversation"]
    );
    assert!(whole["next_cursor"].is_string());
    assert_eq!(whole["summary"], list["summary"]);
    let resp = client()
        .get(a.url("/conversations?view=everything"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("view"), "{body}");
}

#[tokio::test]
async fn unknown_conversation_events_are_a_json_404() {
    let (_d, a) = serve().await;
    let resp = client()
        .get(a.url("/conversations/nope/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");
}

#[tokio::test]
async fn openapi_and_docs_describe_every_route_from_the_shared_types() {
    let (_d, a) = serve().await;
    let doc = get_json(&a, "/openapi.json").await;
    assert_eq!(doc["openapi"], "3.1.0");
    for (path, method) in [
        ("/health", "get"),
        ("/tools", "get"),
        ("/conversations", "post"),
        ("/conversations", "get"),
        ("/conversations/{id}", "get"),
        ("/conversations/{id}/messages", "post"),
        ("/approvals/{uuid}", "post"),
        ("/approvals", "get"),
        ("/events", "get"),
        ("/conversations/{id}/events", "get"),
        ("/pipeline", "get"),
        ("/.well-known/agent-card.json", "get"),
        ("/a2a", "post"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing"
        );
    }
    let schemas = &doc["components"]["schemas"];
    for name in [
        "Conversation",
        "ConversationResponse",
        "PendingApproval",
        "ToolCall",
        "ErrorBody",
        "Event",
    ] {
        assert!(schemas[name].is_object(), "schema {name} missing");
    }
    // Generated from the real type: the contract's field names are there.
    let conv = schemas["Conversation"].to_string();
    for field in [
        "session_id",
        "pending_approval",
        "pipeline_state",
        "messages",
    ] {
        assert!(conv.contains(field), "{field} not in {conv}");
    }
    // Every $ref resolves.
    let text = doc.to_string();
    for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = part.split('"').next().unwrap();
        assert!(schemas[name].is_object(), "dangling $ref {name}");
    }

    let resp = client().get(a.url("/docs")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = resp.text().await.unwrap();
    for path in [
        "/conversations/{id}/messages",
        "/approvals/{uuid}",
        "/events",
        "/pipeline",
        "/a2a",
    ] {
        assert!(html.contains(path), "{path} not on /docs");
    }
    assert!(html.contains("Try it"));
}

#[tokio::test]
async fn sigterm_ends_open_event_streams_instead_of_waiting_for_them() {
    let (_d, a) = start();
    let _open = Stream::open(&a, "/events", None).await;
    let started = std::time::Instant::now();
    let status = a.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown waited {:?} for the SSE client",
        started.elapsed()
    );
}
