//! The HTTP+JSON binding of A2A 1.0 (`/a2a/message:send` and the rest)
//! against the real agent and the real `mcp-resources`: every route, the
//! SSE framing (bare `StreamResponse` objects), AIP-193 error bodies with
//! the spec's HTTP statuses, an approval over HTTP+JSON, the card's
//! interfaces and caching headers, and strict message validation in both
//! bindings and both JSON-RPC dialects (the field named, the client's
//! `messageId` kept).

use crate::support;

use serde_json::{Value, json};
use support::{Agent, client, resources_yaml, write_config};

async fn agent(dir: &std::path::Path) -> Agent {
    let yaml = resources_yaml("rest-agent", dir);
    Agent::serve(&write_config(dir, &dir.join("data"), &yaml)).await
}

fn message(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A request on the binding: status, content type and JSON body.
async fn call(
    a: &Agent,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String, Value) {
    let mut req = client()
        .request(method, a.url(path))
        .header("A2A-Version", "1.0")
        .timeout(std::time::Duration::from_secs(30));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let text = resp.text().await.unwrap();
    (
        status,
        ct,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Asserts an AIP-193 error: status, `error.code`, `status`, the reason.
fn assert_error(got: &(u16, String, Value), status: u16, grpc: &str, reason: &str) {
    let (s, ct, body) = got;
    assert_eq!(*s, status, "{body}");
    assert!(ct.contains("application/json"), "{ct}");
    assert_eq!(body["error"]["code"], status, "{body}");
    assert_eq!(body["error"]["status"], grpc, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    let info = &body["error"]["details"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(info["reason"], reason, "{body}");
}

/// `POST /a2a/message:send` with exactly these headers and body.
async fn raw_send(a: &Agent, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let mut req = client()
        .post(a.url("/a2a/message:send"))
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The `data:` objects of an SSE body.
async fn sse(a: &Agent, path: &str, body: Option<Value>) -> Vec<Value> {
    let mut req = client()
        .post(a.url(path))
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .timeout(std::time::Duration::from_secs(30));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = resp.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_json_route_answers_with_the_spec_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path()).await;
    use reqwest::Method as M;

    // The card lists the binding at the A2A base, and can be revalidated.
    let resp = client()
        .get(a.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    let modified = resp.headers()["last-modified"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(resp.headers().contains_key("etag"));
    let card: Value = resp.json().await.unwrap();
    let rest = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "HTTP+JSON")
        .expect("an HTTP+JSON interface")
        .clone();
    assert_eq!(rest["protocolVersion"], "1.0");
    assert!(rest["url"].as_str().unwrap().ends_with("/a2a"), "{rest}");
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    let again = client()
        .get(a.url("/.well-known/agent-card.json"))
        .header("If-Modified-Since", &modified)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    // Send: the task, with the client's messageId kept in its history.
    let (s, _, done) = call(
        &a,
        M::POST,
        "/a2a/message:send",
        Some(json!({"message": message("rest-msg-1", "list resources")})),
    )
    .await;
    assert_eq!(s, 200, "{done}");
    let task = &done["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert!(task.get("kind").is_none(), "1.0 shapes: {task}");
    let id = task["id"].as_str().unwrap().to_string();
    assert_eq!(task["history"][0]["messageId"], "rest-msg-1", "{task}");

    // Get, with history cut; list with paging.
    let (s, _, got) = call(
        &a,
        M::GET,
        &format!("/a2a/tasks/{id}?historyLength=1"),
        None,
    )
    .await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    let (s, _, list) = call(
        &a,
        M::GET,
        "/a2a/tasks?pageSize=1&includeArtifacts=true",
        None,
    )
    .await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1);
    let (s, _, filtered) = call(
        &a,
        M::GET,
        "/a2a/tasks?status=TASK_STATE_COMPLETED&pageSize=10",
        None,
    )
    .await;
    assert_eq!(s, 200, "{filtered}");
    assert!(
        filtered["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == id.as_str())
    );

    // An approval over HTTP+JSON: input-required with its data part, then
    // the continuation approves it and the task completes.
    let (_, _, waiting) = call(
        &a,
        M::POST,
        "/a2a/message:send",
        Some(json!({"message": message("rest-msg-2", "add apples 5")})),
    )
    .await;
    let w = &waiting["task"];
    assert_eq!(
        w["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{waiting}"
    );
    let data = &w["status"]["message"]["parts"][1]["data"];
    assert_eq!(data["tool"], "resources_add", "{waiting}");
    let wid = w["id"].as_str().unwrap().to_string();
    let mut approve = message("rest-msg-3", "approve");
    approve["taskId"] = json!(wid);
    let (s, _, approved) = call(
        &a,
        M::POST,
        "/a2a/message:send",
        Some(json!({ "message": approve })),
    )
    .await;
    assert_eq!(s, 200, "{approved}");
    assert_eq!(
        approved["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{approved}"
    );

    // Streaming: bare StreamResponse objects, a task first, completed last.
    let events = sse(
        &a,
        "/a2a/message:stream",
        Some(json!({"message": message("rest-msg-4", "list resources")})),
    )
    .await;
    assert!(
        events.iter().all(|e| e.get("jsonrpc").is_none()),
        "{events:?}"
    );
    assert!(events[0].get("task").is_some(), "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    assert!(events.iter().any(|e| e.get("artifactUpdate").is_some()));

    // Subscribe to a waiting task: its snapshot first (GET and POST both).
    let (_, _, pending) = call(
        &a,
        M::POST,
        "/a2a/message:send",
        Some(json!({"message": message("rest-msg-5", "add pears 2")})),
    )
    .await;
    let pid = pending["task"]["id"].as_str().unwrap().to_string();
    let sub = tokio::spawn({
        let url = a.url(&format!("/a2a/tasks/{pid}:subscribe"));
        async move {
            let resp = client()
                .post(url)
                .header("A2A-Version", "1.0")
                .timeout(std::time::Duration::from_secs(20))
                .send()
                .await
                .unwrap();
            resp.text().await.unwrap()
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    // Cancel: the waiting task is canceled; again is 409.
    let (s, _, cancelled) = call(&a, M::POST, &format!("/a2a/tasks/{pid}:cancel"), None).await;
    assert_eq!(s, 200, "{cancelled}");
    assert_eq!(cancelled["status"]["state"], "TASK_STATE_CANCELED");
    let streamed = sub.await.unwrap();
    assert!(streamed.contains("TASK_STATE_INPUT_REQUIRED"), "{streamed}");
    assert!(streamed.contains("TASK_STATE_CANCELED"), "{streamed}");
    assert_error(
        &call(&a, M::POST, &format!("/a2a/tasks/{pid}:cancel"), None).await,
        409,
        "FAILED_PRECONDITION",
        "TASK_NOT_CANCELABLE",
    );
    // Subscribing to a task that ended is an error, not a stream.
    assert_error(
        &call(&a, M::GET, &format!("/a2a/tasks/{pid}:subscribe"), None).await,
        400,
        "UNIMPLEMENTED",
        "UNSUPPORTED_OPERATION",
    );

    // Errors: unknown task, wrong content type, version, bad JSON, query.
    assert_error(
        &call(&a, M::GET, "/a2a/tasks/no-such-task", None).await,
        404,
        "NOT_FOUND",
        "TASK_NOT_FOUND",
    );
    assert_error(
        &call(&a, M::POST, "/a2a/tasks/no-such-task:cancel", None).await,
        404,
        "NOT_FOUND",
        "TASK_NOT_FOUND",
    );
    let hi = json!({"message": message("x", "hi")}).to_string();
    let (s, body) = raw_send(&a, &[("Content-Type", "text/plain")], &hi).await;
    assert_eq!(s, 415);
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "CONTENT_TYPE_NOT_SUPPORTED"
    );
    let json_99 = [
        ("Content-Type", "application/json"),
        ("A2A-Version", "99.0"),
    ];
    let (s, body) = raw_send(&a, &json_99, &hi).await;
    assert_eq!(s, 400);
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    let (s, body) = raw_send(&a, &[("Content-Type", "application/json")], "{not json").await;
    assert_eq!(s, 400);
    assert_eq!(body["error"]["details"][0]["reason"], "PARSE_ERROR");
    assert_error(
        &call(&a, M::GET, "/a2a/tasks?includeArtifacts=maybe", None).await,
        400,
        "INVALID_ARGUMENT",
        "INVALID_PARAMS",
    );
    assert_error(
        &call(&a, M::POST, &format!("/a2a/tasks/{id}:frobnicate"), None).await,
        404,
        "NOT_FOUND",
        "METHOD_NOT_FOUND",
    );
    // No operator authentication: no extended card.
    assert_error(
        &call(&a, M::GET, "/a2a/extendedAgentCard", None).await,
        400,
        "FAILED_PRECONDITION",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    );
    // The server is still up and the JSON-RPC endpoint beside it works.
    let (s, _, rpc) = call(
        &a,
        M::POST,
        "/a2a",
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}})),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(rpc["result"]["id"], id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_refused_naming_the_field_in_every_binding() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path()).await;
    let ok = message("v-ok", "list resources");
    let with = |k: &str, v: Value| {
        let mut m = ok.clone();
        m[k] = v;
        m
    };
    let without = |k: &str| {
        let mut m = ok.clone();
        m.as_object_mut().unwrap().remove(k);
        m
    };
    let cases: Vec<(Value, &str)> = vec![
        (without("messageId"), "message.messageId"),
        (without("role"), "message.role"),
        (with("role", json!("ROLE_ROBOT")), "message.role"),
        (with("parts", json!([])), "message.parts"),
        (
            with("parts", json!([{"text": "a"}, {"metadata": {}}])),
            "message.parts[1]",
        ),
        (
            with("parts", json!([{"kind": "hologram", "x": 1}])),
            "message.parts[0]",
        ),
    ];
    for (m, field) in &cases {
        // HTTP+JSON: 400 naming the field.
        let (s, _, body) = call(
            &a,
            reqwest::Method::POST,
            "/a2a/message:send",
            Some(json!({ "message": m })),
        )
        .await;
        assert_eq!(s, 400, "{m}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(field),
            "{field}: {body}"
        );
        // JSON-RPC 1.0 and 0.3: -32602 naming the field.
        for (method, version) in [("SendMessage", "1.0"), ("message/send", "0.3")] {
            let mut m03 = m.clone();
            if version == "0.3" {
                m03["kind"] = json!("message");
            }
            let r: Value = client()
                .post(a.url("/a2a"))
                .header("A2A-Version", version)
                .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": m03}}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(r["error"]["code"], -32602, "{method} {m}: {r}");
            assert!(
                r["error"]["message"].as_str().unwrap().contains(field),
                "{method} {field}: {r}"
            );
            assert_eq!(r["id"], 7);
        }
        // Streaming refuses it too, before any stream starts.
        let (s, _, body) = call(
            &a,
            reqwest::Method::POST,
            "/a2a/message:stream",
            Some(json!({ "message": m })),
        )
        .await;
        assert_eq!(s, 400, "stream {m}: {body}");
    }
    // Nothing was created by the refused messages.
    let (_, _, list) = call(&a, reqwest::Method::GET, "/a2a/tasks", None).await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 0, "{list}");
    // 0.3 keeps the client's messageId too.
    let r: Value = client()
        .post(a.url("/a2a"))
        .json(&json!({"jsonrpc": "2.0", "id": 8, "method": "message/send", "params": {"message":
            {"kind": "message", "messageId": "client-03-id", "role": "user", "parts": [{"kind": "text", "text": "list resources"}]}}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        r["result"]["history"][0]["messageId"], "client-03-id",
        "{r}"
    );
}

/// With operator authentication on, the card declares an extended card,
/// which only known callers read (both bindings), with every skill and
/// the ones that stop for approval marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extended_card_is_for_known_callers_when_auth_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{}auth:\n  mode: tokens\n  tokens:\n    - {{name: vera, token: \"${{VIEWER_T}}\", roles: [viewer]}}\n",
        resources_yaml("ext-card", dir.path())
    );
    let cfg = write_config(dir.path(), &dir.path().join("data"), &yaml);
    let a = Agent::serve_with_env(&cfg, &[("VIEWER_T", "viewer-token-0123456789")]).await;
    let card: Value = client()
        .get(a.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["extendedAgentCard"], true, "{card}");
    let anonymous = client()
        .get(a.url("/a2a/extendedAgentCard"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(anonymous.headers()["www-authenticate"], "Bearer");
    // Refusals on the HTTP+JSON binding come in its error shape.
    let body: Value = anonymous.json().await.unwrap();
    assert_eq!(
        (&body["error"]["code"], &body["error"]["status"]),
        (&json!(401), &json!("UNAUTHENTICATED")),
        "{body}"
    );
    let viewer_sends = client()
        .post(a.url("/a2a/message:send"))
        .bearer_auth("viewer-token-0123456789")
        .header("A2A-Version", "1.0")
        .json(&json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "list"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(viewer_sends.status(), 403);
    let body: Value = viewer_sends.json().await.unwrap();
    assert_eq!(body["error"]["status"], "PERMISSION_DENIED", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requester"),
        "{body}"
    );
    let ext: Value = client()
        .get(a.url("/a2a/extendedAgentCard"))
        .bearer_auth("viewer-token-0123456789")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let add = ext["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "resources_add")
        .unwrap_or_else(|| panic!("{ext}"))
        .clone();
    assert!(
        add["description"].as_str().unwrap().contains("approval"),
        "{add}"
    );
    assert!(ext.get("url").is_none(), "1.0 shape: {ext}");
    let rpc: Value = client()
        .post(a.url("/a2a"))
        .bearer_auth("viewer-token-0123456789")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "agent/getAuthenticatedExtendedCard"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rpc["result"]["name"], "ext-card", "{rpc}");
    assert_eq!(
        rpc["result"]["supportsAuthenticatedExtendedCard"], true,
        "{rpc}"
    );
}

/// A client that writes a request's headers and its body separately, then
/// sends its next request on the same connection (httpx does, under load)
/// gets an answer to both, on routes whose handlers have no use for the
/// body: the body is read before the answer, so hyper keeps the
/// connection instead of closing it with the next request on the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_after_its_headers_keeps_the_connection_alive() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path()).await;
    let host = a.base.trim_start_matches("http://").to_string();
    for (method, path) in [
        ("POST", "/a2a/tasks/no-such-task:cancel"),
        (
            "DELETE",
            "/a2a/tasks/no-such-task/pushNotificationConfigs/c1",
        ),
        ("POST", "/notifications/no-such-delivery/retry"),
        ("DELETE", "/grants/no-such-grant"),
    ] {
        let mut s = tokio::net::TcpStream::connect(&host).await.unwrap();
        s.set_nodelay(true).unwrap();
        let body = r#"{"id":"no-such-task","metadata":{}}"#;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        s.write_all(body.as_bytes()).await.unwrap();
        let first = read_response(&mut s).await;
        assert!(first.starts_with("HTTP/1.1 4"), "{method} {path}: {first}");
        s.write_all(format!("GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let second = read_response(&mut s).await;
        assert!(
            second.starts_with("HTTP/1.1 200"),
            "{method} {path}: the connection was closed after the first answer: {second:?}"
        );
    }

    /// One response (headers and a Content-Length body), or what came
    /// before the connection closed.
    async fn read_response(s: &mut tokio::net::TcpStream) -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if rest.len() >= len {
                    return text;
                }
            }
            let n = tokio::time::timeout(std::time::Duration::from_secs(10), s.read(&mut buf))
                .await
                .expect("no answer within 10 s")
                .unwrap_or(0);
            if n == 0 {
                return text;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }
}
